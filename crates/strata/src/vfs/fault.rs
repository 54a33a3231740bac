//! A fault-injecting, power-loss-simulating in-memory file system for tests.
//!
//! It models what a disk keeps across a power cut, after LevelDB's
//! `fault_injection_test` and Pebble's `MemFS` crash clone:
//! - **File contents**: every file is an inode whose bytes are appended by
//!   `append` (they reach the "page cache" at once, so other handles read
//!   them) and made durable up to the current length by `sync`. A crash keeps
//!   only the synced prefix (or, with [`FaultVfs::crash_clone_keeping`], the
//!   synced prefix plus a random prefix of the unsynced tail: pages written
//!   back before the cut). Space a writer reserved
//!   (`WritableFile::preallocate`) and an fsync made durable reads as zeros
//!   after the kept bytes, as on a real disk; the live file does not show
//!   it.
//! - **Directory entries**: `create`, `rename`, `remove` and `link` change
//!   the live namespace only; `sync_dir(dir)` makes the entries of `dir`
//!   durable. A crash rebuilds the namespace from the durable entries, so an
//!   un-fsynced creation or rename is lost, and a file removed without a
//!   directory sync comes back.
//! - **Faults**: [`FaultVfs::inject`] fails the Nth call of one operation
//!   kind (counted since the fault was armed) with EIO or ENOSPC, once or
//!   for every later call too; a failed write can first let a prefix of its
//!   bytes through (a torn write). A failed fsync loses the file's unsynced
//!   bytes for good, as on Linux (the pages whose write-back failed are
//!   marked clean, and the error is reported once): they stay readable
//!   until the crash, a later fsync succeeds, and a crash image still cuts
//!   the file where they begin.
//! - **Power cut at a chosen point**: [`FaultVfs::cut_power_after`] takes the
//!   crash image at the instant the Nth mutating call starts (atomically with
//!   respect to every other call) and fails every call after it, as a dead
//!   machine would; [`FaultVfs::crash_image`] returns that image.
//!
//! Invariants: one lock (`State`) orders every operation, so the crash image
//! is a consistent cut; inodes only grow by appending (a `create` makes a
//! new inode), so "synced" is a length; a crash image shares nothing with
//! the file system it was taken from, so a database still running on the
//! old one cannot change it.

use super::{FileSync, RandomAccessFile, SequentialFile, Vfs, WritableFile};
use crate::error::{Error, Result};
use parking_lot::{Mutex, MutexGuard};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The operations a fault can be attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `Vfs::create` (a new or truncated file).
    Create,
    /// `WritableFile::append`.
    Write,
    /// `WritableFile::sync` (fsync of a file).
    Sync,
    /// `Vfs::sync_dir` (making creates, renames and removes durable).
    SyncDir,
    /// `Vfs::rename`.
    Rename,
    /// `Vfs::remove`.
    Remove,
    /// `Vfs::link`.
    Link,
    /// `read_exact_at` and sequential `read`.
    Read,
}

impl Op {
    /// Every operation, in declaration order.
    pub const ALL: [Op; 8] = [
        Op::Create,
        Op::Write,
        Op::Sync,
        Op::SyncDir,
        Op::Rename,
        Op::Remove,
        Op::Link,
        Op::Read,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// Whether the operation changes what is (or will be) on disk; a power
    /// cut is placed before one of these.
    pub fn is_mutating(self) -> bool {
        self != Op::Read
    }
}

/// The error a fault returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// EIO: the device failed.
    Eio,
    /// ENOSPC: the device is full.
    NoSpace,
}

/// One armed fault.
#[derive(Clone, Debug)]
pub struct Fault {
    /// The operation that fails.
    pub op: Op,
    /// The 1-based count of `op` calls (since arming) that fails.
    pub nth: u64,
    /// The error it fails with.
    pub kind: FaultKind,
    /// Fail every later call of `op` too, until `clear_fault`.
    pub sticky: bool,
    /// For `Op::Write`: half of the bytes are appended before the error.
    pub torn: bool,
    /// Only calls on paths whose file name contains this string count.
    pub path_filter: Option<String>,
}

impl Fault {
    /// Fails the `nth` call of `op` once with EIO.
    pub fn eio(op: Op, nth: u64) -> Fault {
        Fault {
            op,
            nth,
            kind: FaultKind::Eio,
            sticky: false,
            torn: false,
            path_filter: None,
        }
    }
}

/// What happened when a fault fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fired {
    /// The operation that failed.
    pub op: Op,
    /// The file (or directory) it was called on.
    pub path: PathBuf,
}

#[derive(Default)]
struct Inode {
    data: Vec<u8>,
    synced: usize,
    /// A failed fsync lost the bytes from here on: they never reach the
    /// disk, even after a later fsync succeeds (see the module docs).
    lost_from: Option<usize>,
    /// The file's size as `WritableFile::preallocate` set it (0: never),
    /// and what of it a crash keeps (raised by each fsync, as the file's
    /// size is; never lowered, since the truncation of a dropped writer is
    /// not synced). Past the bytes it keeps, a crash image reads zeros up
    /// to `reserved_durable`, as reserved space on a real disk does.
    reserved: usize,
    reserved_durable: usize,
}

impl Inode {
    /// How many bytes a crash now keeps at least (`synced`, cut at lost
    /// write-back).
    fn durable(&self) -> usize {
        self.synced.min(self.lost_from.unwrap_or(usize::MAX))
    }
}

type Ino = Arc<Mutex<Inode>>;

#[derive(Default)]
struct State {
    live: BTreeMap<PathBuf, Ino>,
    durable: BTreeMap<PathBuf, Ino>,
    /// Calls per `Op` since the vfs was made (never reset).
    counts: [u64; 8],
    fault: Option<Fault>,
    /// Calls of the fault's op (matching its filter) since it was armed.
    fault_count: u64,
    fired: Vec<Fired>,
    /// Mutating calls left before the power cut.
    cut_after: Option<u64>,
    /// Seed choosing how much of each unsynced tail the cut's image keeps
    /// (`None`: none).
    cut_keep: Option<u64>,
    image: Option<FaultVfs>,
    dead: bool,
    locks: BTreeSet<PathBuf>,
    /// How long a file or directory sync takes (so concurrent writers
    /// queue up behind it and group commits form, as on a real disk).
    sync_latency: std::time::Duration,
}

/// The fault-injecting file system. Clones share the same files.
#[derive(Clone, Default)]
pub struct FaultVfs {
    st: Arc<Mutex<State>>,
}

/// An injected fault's error: the operating system's own (raw OS error 5 or
/// 28), as a real disk returns it, so what keeps or loses the errno on the
/// way to the caller is tested too.
fn io_err(path: &Path, kind: FaultKind, what: &str) -> Error {
    let e = match kind {
        FaultKind::Eio => io::Error::from_raw_os_error(5),
        FaultKind::NoSpace => io::Error::from_raw_os_error(28),
    };
    Error::io(format!("{} ({what}, injected)", path.display()), e)
}

fn not_found(path: &Path) -> Error {
    Error::io(
        path.display().to_string(),
        io::Error::new(io::ErrorKind::NotFound, "no such file"),
    )
}

/// What `State::check` decides for one call.
enum Verdict {
    Go,
    Fail(FaultKind, bool),
}

impl State {
    /// Counts a call of `op` on `path`, takes the crash image if the power
    /// cut is due, and says whether the call fails.
    fn check(&mut self, op: Op, path: &Path) -> Verdict {
        self.counts[op.index()] += 1;
        if op.is_mutating() {
            if let Some(left) = self.cut_after.as_mut() {
                if *left == 0 && !self.dead {
                    let mut keep = self.cut_keep;
                    self.image = Some(self.clone_durable(keep.as_mut()));
                    self.dead = true;
                } else {
                    *left = left.saturating_sub(1);
                }
            }
        }
        if self.dead {
            return Verdict::Fail(FaultKind::Eio, false);
        }
        let Some(f) = &self.fault else {
            return Verdict::Go;
        };
        if f.op != op {
            return Verdict::Go;
        }
        if let Some(s) = &f.path_filter {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if !name.is_some_and(|n| n.contains(s.as_str())) {
                return Verdict::Go;
            }
        }
        self.fault_count += 1;
        let hit = self.fault_count == f.nth || (f.sticky && self.fault_count > f.nth);
        if !hit {
            return Verdict::Go;
        }
        let v = Verdict::Fail(f.kind, f.torn);
        self.fired.push(Fired {
            op,
            path: path.to_path_buf(),
        });
        v
    }

    /// A new state holding what survives a power cut: the durable entries,
    /// each with its synced bytes (plus, with `keep`, a random prefix of the
    /// unsynced tail). Hard links stay shared.
    fn clone_durable(&self, mut keep: Option<&mut u64>) -> FaultVfs {
        let mut copies: HashMap<*const Mutex<Inode>, Ino> = HashMap::new();
        let mut live = BTreeMap::new();
        for (p, ino) in &self.durable {
            let c = copies
                .entry(Arc::as_ptr(ino))
                .or_insert_with(|| {
                    let i = ino.lock();
                    let mut n = i.durable();
                    if let Some(rng) = keep.as_deref_mut() {
                        // Pages written back before the cut: a prefix of
                        // the unsynced tail, never past lost bytes.
                        let end = i.lost_from.unwrap_or(i.data.len()).max(n);
                        let tail = (end - n) as u64;
                        if tail > 0 {
                            let durable = n;
                            n += (next_rand(rng) % (tail + 1)) as usize;
                            if i.reserved_durable > durable {
                                // Written back into reserved space: whole
                                // sectors, as a disk writes them (what
                                // `wal::tail` relies on there).
                                let sector = crate::wal::tail::SECTOR as usize;
                                n = durable.max(n - n % sector);
                            }
                        }
                    }
                    let mut data = i.data[..n].to_vec();
                    if i.reserved_durable > n {
                        data.resize(i.reserved_durable, 0);
                    }
                    Arc::new(Mutex::new(Inode {
                        synced: data.len(),
                        data,
                        lost_from: None,
                        reserved: 0,
                        reserved_durable: 0,
                    }))
                })
                .clone();
            live.insert(p.clone(), c);
        }
        FaultVfs {
            st: Arc::new(Mutex::new(State {
                durable: live.clone(),
                live,
                ..State::default()
            })),
        }
    }
}

/// splitmix64: enough randomness for choosing torn tails, with no
/// dependency.
fn next_rand(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl FaultVfs {
    /// An empty file system with no fault armed.
    pub fn new() -> FaultVfs {
        FaultVfs::default()
    }

    /// Arms `f` (replacing any armed fault); its count starts now.
    pub fn inject(&self, f: Fault) {
        let mut st = self.st.lock();
        st.fault = Some(f);
        st.fault_count = 0;
    }

    /// Lifts the armed fault.
    pub fn clear_fault(&self) {
        self.st.lock().fault = None;
    }

    /// Every fault that fired so far, in order.
    pub fn fired(&self) -> Vec<Fired> {
        self.st.lock().fired.clone()
    }

    /// Calls of `op` so far.
    pub fn count(&self, op: Op) -> u64 {
        self.st.lock().counts[op.index()]
    }

    /// Cuts the power when the mutating call after the next `n` ones starts:
    /// the crash image is taken then, and every call from then on fails
    /// with EIO.
    pub fn cut_power_after(&self, n: u64) {
        self.st.lock().cut_after = Some(n);
    }

    /// Like `cut_power_after`, but the image keeps a random prefix (chosen
    /// by `seed`) of each file's unsynced bytes.
    pub fn cut_power_after_keeping(&self, n: u64, seed: u64) {
        let mut st = self.st.lock();
        st.cut_after = Some(n);
        st.cut_keep = Some(seed);
    }

    /// Makes every file and directory sync take `d` (default zero).
    pub fn set_sync_latency(&self, d: std::time::Duration) {
        self.st.lock().sync_latency = d;
    }

    /// Whether the power has been cut.
    pub fn is_dead(&self) -> bool {
        self.st.lock().dead
    }

    /// The image taken at the power cut (`cut_power_after`), if it happened.
    pub fn crash_image(&self) -> Option<FaultVfs> {
        self.st.lock().image.clone()
    }

    /// What the disk holds if the power is cut now: only synced bytes of
    /// files whose directory entries were synced. The result is independent
    /// of `self`.
    pub fn crash_clone(&self) -> FaultVfs {
        self.st.lock().clone_durable(None)
    }

    /// Like `crash_clone`, but each file also keeps a random prefix
    /// (chosen by `seed`) of its unsynced bytes, as if some pages had been
    /// written back before the cut.
    pub fn crash_clone_keeping(&self, seed: u64) -> FaultVfs {
        let mut s = seed;
        self.st.lock().clone_durable(Some(&mut s))
    }

    /// Whether a file's directory entry and all its bytes are durable.
    pub fn is_durable(&self, path: &Path) -> bool {
        let st = self.st.lock();
        match (st.live.get(path), st.durable.get(path)) {
            (Some(a), Some(b)) if Arc::ptr_eq(a, b) => {
                let i = a.lock();
                i.durable() == i.data.len()
            }
            _ => false,
        }
    }

    /// Overwrites `len` bytes of a file at `offset` with `f(byte)` in place,
    /// durably (a test corrupting a file).
    pub fn corrupt(&self, path: &Path, offset: usize, f: impl Fn(u8) -> u8) -> Result<()> {
        let st = self.st.lock();
        let ino = st.live.get(path).ok_or_else(|| not_found(path))?;
        let mut i = ino.lock();
        let b = i
            .data
            .get_mut(offset)
            .ok_or_else(|| Error::invalid("corrupt past the end of the file"))?;
        *b = f(*b);
        Ok(())
    }

    fn get(&self, path: &Path) -> Result<Ino> {
        self.st
            .lock()
            .live
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(path))
    }
}

struct FaultWritable {
    st: Arc<Mutex<State>>,
    ino: Ino,
    path: PathBuf,
    len: u64,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, d: &[u8]) -> Result<()> {
        let mut st = self.st.lock();
        match st.check(Op::Write, &self.path) {
            Verdict::Go => {}
            Verdict::Fail(kind, torn) => {
                if torn {
                    let half = &d[..d.len() / 2];
                    self.ino.lock().data.extend_from_slice(half);
                    self.len += half.len() as u64;
                }
                return Err(io_err(&self.path, kind, "write"));
            }
        }
        self.ino.lock().data.extend_from_slice(d);
        self.len += d.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        sync_inode(&self.st, &self.ino, &self.path)
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn preallocate(&mut self, upto: u64) -> Result<()> {
        // Not a counted operation: faults and power cuts keep their
        // places whether or not a writer reserves space.
        let mut i = self.ino.lock();
        i.reserved = i.reserved.max(upto as usize);
        Ok(())
    }
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        Some(Arc::new(FaultSync {
            st: Arc::clone(&self.st),
            ino: Arc::clone(&self.ino),
            path: self.path.clone(),
        }))
    }
}

/// [`FileSync`] of a [`FaultWritable`]: the same fsync (counted, faulted
/// and cut as `Op::Sync`), run without the writer's borrow, so the
/// MANIFEST's fsync happens outside its write lock here as on the OS file
/// system and injected faults and power cuts hit that path.
struct FaultSync {
    st: Arc<Mutex<State>>,
    ino: Ino,
    path: PathBuf,
}

impl FileSync for FaultSync {
    fn sync(&self) -> Result<()> {
        sync_inode(&self.st, &self.ino, &self.path)
    }
}

/// One fsync of `ino`: counts an `Op::Sync` (which may fail it or cut the
/// power), then makes durable the bytes appended before it started (with a
/// sync latency, bytes appended while it runs are not covered).
fn sync_inode(state: &Mutex<State>, ino: &Ino, path: &Path) -> Result<()> {
    let mut st = state.lock();
    if let Verdict::Fail(kind, _) = st.check(Op::Sync, path) {
        if !st.dead {
            // Linux marks the pages whose write-back failed clean: their
            // bytes never reach the disk, and the next fsync succeeds.
            let mut i = ino.lock();
            let from = i.synced;
            i.lost_from = Some(i.lost_from.map_or(from, |l| l.min(from)));
        }
        return Err(io_err(path, kind, "fsync"));
    }
    let (len, reserved) = {
        let i = ino.lock();
        (i.data.len(), i.reserved)
    };
    let st = sync_latency(state, st, path, "fsync")?;
    let mut i = ino.lock();
    i.synced = i.synced.max(len);
    i.reserved_durable = i.reserved_durable.max(reserved);
    drop(i);
    drop(st);
    Ok(())
}

/// The modelled disk time of a sync (`FaultVfs::set_sync_latency`), with
/// the state unlocked meanwhile: fails if the power was cut before it
/// completed, else hands the state back locked.
fn sync_latency<'a>(
    state: &'a Mutex<State>,
    st: MutexGuard<'a, State>,
    path: &Path,
    what: &str,
) -> Result<MutexGuard<'a, State>> {
    let latency = st.sync_latency;
    if latency.is_zero() {
        return Ok(st);
    }
    drop(st);
    std::thread::sleep(latency);
    let st = state.lock();
    if st.dead {
        return Err(io_err(path, FaultKind::Eio, what));
    }
    Ok(st)
}

struct FaultRandom {
    st: Arc<Mutex<State>>,
    name: String,
    path: PathBuf,
    ino: Ino,
}

impl RandomAccessFile for FaultRandom {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        if let Verdict::Fail(kind, _) = self.st.lock().check(Op::Read, &self.path) {
            return Err(io_err(&self.path, kind, "read"));
        }
        let d = self.ino.lock();
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start.checked_add(buf.len()) {
            Some(end) if end <= d.data.len() => {
                buf.copy_from_slice(&d.data[start..end]);
                Ok(())
            }
            _ => Err(Error::io(
                format!("{} (offset {offset})", self.name),
                io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file"),
            )),
        }
    }
    fn len(&self) -> u64 {
        self.ino.lock().data.len() as u64
    }
    fn name(&self) -> &str {
        &self.name
    }
}

struct FaultSequential {
    st: Arc<Mutex<State>>,
    path: PathBuf,
    ino: Ino,
    pos: usize,
}

impl SequentialFile for FaultSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        if let Verdict::Fail(kind, _) = self.st.lock().check(Op::Read, &self.path) {
            return Err(io_err(&self.path, kind, "read"));
        }
        let d = self.ino.lock();
        let n = buf.len().min(d.data.len().saturating_sub(self.pos));
        buf[..n].copy_from_slice(&d.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

struct FaultLock {
    path: PathBuf,
    st: Arc<Mutex<State>>,
}

impl Drop for FaultLock {
    fn drop(&mut self) {
        self.st.lock().locks.remove(&self.path);
    }
}

impl Vfs for FaultVfs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut st = self.st.lock();
        if let Verdict::Fail(kind, _) = st.check(Op::Create, path) {
            return Err(io_err(path, kind, "create"));
        }
        let ino: Ino = Arc::default();
        st.live.insert(path.to_path_buf(), Arc::clone(&ino));
        Ok(Box::new(FaultWritable {
            st: Arc::clone(&self.st),
            ino,
            path: path.to_path_buf(),
            len: 0,
        }))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(FaultRandom {
            st: Arc::clone(&self.st),
            name: path.display().to_string(),
            path: path.to_path_buf(),
            ino: self.get(path)?,
        }))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        Ok(Box::new(FaultSequential {
            st: Arc::clone(&self.st),
            path: path.to_path_buf(),
            ino: self.get(path)?,
            pos: 0,
        }))
    }
    fn exists(&self, path: &Path) -> bool {
        self.st.lock().live.contains_key(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(self.get(path)?.lock().data.len() as u64)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        let mut st = self.st.lock();
        if let Verdict::Fail(kind, _) = st.check(Op::Remove, path) {
            return Err(io_err(path, kind, "remove"));
        }
        st.live
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.st.lock();
        if let Verdict::Fail(kind, _) = st.check(Op::Rename, to) {
            return Err(io_err(to, kind, "rename"));
        }
        let d = st.live.remove(from).ok_or_else(|| not_found(from))?;
        st.live.insert(to.to_path_buf(), d);
        Ok(())
    }
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.st.lock();
        if let Verdict::Fail(kind, _) = st.check(Op::Link, to) {
            return Err(io_err(to, kind, "link"));
        }
        let d = st.live.get(from).cloned().ok_or_else(|| not_found(from))?;
        if st.live.contains_key(to) {
            return Err(Error::io(
                to.display().to_string(),
                io::Error::new(io::ErrorKind::AlreadyExists, "file exists"),
            ));
        }
        st.live.insert(to.to_path_buf(), d);
        Ok(())
    }
    fn create_dir_all(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        Ok(self
            .st
            .lock()
            .live
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.st.lock();
        if let Verdict::Fail(kind, _) = st.check(Op::SyncDir, dir) {
            return Err(io_err(dir, kind, "fsync of directory"));
        }
        let mut st = sync_latency(&self.st, st, dir, "fsync of directory")?;
        let st = &mut *st;
        st.durable.retain(|p, _| p.parent() != Some(dir));
        for (p, ino) in &st.live {
            if p.parent() == Some(dir) {
                st.durable.insert(p.clone(), Arc::clone(ino));
            }
        }
        Ok(())
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn std::any::Any + Send + Sync>> {
        if !self.st.lock().locks.insert(path.to_path_buf()) {
            return Err(Error::io(
                path.display().to_string(),
                io::Error::new(io::ErrorKind::WouldBlock, "the database is already open"),
            ));
        }
        Ok(Box::new(FaultLock {
            path: path.to_path_buf(),
            st: Arc::clone(&self.st),
        }))
    }
    fn lock_state(&self, path: &Path) -> Result<super::LockState> {
        Ok(if self.st.lock().locks.contains(path) {
            super::LockState::HeldHere
        } else {
            super::LockState::Free
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::read_all;

    fn write(vfs: &FaultVfs, p: &str, data: &[u8], sync: bool) -> Box<dyn WritableFile> {
        let mut f = vfs.create(Path::new(p)).unwrap();
        f.append(data).unwrap();
        if sync {
            f.sync().unwrap();
        }
        f
    }

    #[test]
    fn behaves_like_a_file_system() {
        let vfs = FaultVfs::new();
        let d = Path::new("/db");
        write(&vfs, "/db/a", b"hello world", true);
        assert_eq!(read_all(&vfs, Path::new("/db/a")).unwrap(), b"hello world");
        vfs.rename(Path::new("/db/a"), Path::new("/db/b")).unwrap();
        assert!(!vfs.exists(Path::new("/db/a")));
        assert_eq!(vfs.list(d).unwrap(), vec!["b".to_string()]);
        vfs.link(Path::new("/db/b"), Path::new("/db/c")).unwrap();
        vfs.remove(Path::new("/db/b")).unwrap();
        assert_eq!(read_all(&vfs, Path::new("/db/c")).unwrap(), b"hello world");
        let g = vfs.lock(Path::new("/db/LOCK")).unwrap();
        assert!(vfs.lock(Path::new("/db/LOCK")).is_err());
        drop(g);
        assert!(vfs.lock(Path::new("/db/LOCK")).is_ok());
    }

    #[test]
    fn crash_keeps_only_synced_bytes_of_synced_entries() {
        let vfs = FaultVfs::new();
        let d = Path::new("/db");
        let mut f = write(&vfs, "/db/a", b"durable", true);
        f.append(b" lost").unwrap();
        vfs.sync_dir(d).unwrap();
        // Synced data, but the directory entry is never synced.
        write(&vfs, "/db/b", b"entry lost", true);
        let c = vfs.crash_clone();
        assert_eq!(read_all(&c, Path::new("/db/a")).unwrap(), b"durable");
        assert!(
            !c.exists(Path::new("/db/b")),
            "un-fsynced creation survived"
        );
        // The crash image is independent of the running file system.
        f.append(b" more").unwrap();
        f.sync().unwrap();
        assert_eq!(read_all(&c, Path::new("/db/a")).unwrap(), b"durable");
        assert!(vfs.is_durable(Path::new("/db/a")));
        assert!(!vfs.is_durable(Path::new("/db/b")));
    }

    #[test]
    fn unsynced_rename_and_remove_are_undone_by_a_crash() {
        let vfs = FaultVfs::new();
        let d = Path::new("/db");
        write(&vfs, "/db/CURRENT", b"old\n", true);
        write(&vfs, "/db/tmp", b"new\n", true);
        vfs.sync_dir(d).unwrap();
        vfs.rename(Path::new("/db/tmp"), Path::new("/db/CURRENT"))
            .unwrap();
        write(&vfs, "/db/x", b"x", true);
        vfs.sync_dir(d).unwrap();
        vfs.remove(Path::new("/db/x")).unwrap();
        let before = vfs.crash_clone();
        assert_eq!(
            read_all(&before, Path::new("/db/CURRENT")).unwrap(),
            b"new\n"
        );
        assert!(
            before.exists(Path::new("/db/x")),
            "unsynced remove is undone"
        );
        vfs.sync_dir(d).unwrap();
        assert!(!vfs.crash_clone().exists(Path::new("/db/x")));

        let vfs = FaultVfs::new();
        write(&vfs, "/db/CURRENT", b"old\n", true);
        write(&vfs, "/db/tmp", b"new\n", true);
        vfs.sync_dir(d).unwrap();
        vfs.rename(Path::new("/db/tmp"), Path::new("/db/CURRENT"))
            .unwrap();
        let c = vfs.crash_clone();
        assert_eq!(read_all(&c, Path::new("/db/CURRENT")).unwrap(), b"old\n");
        assert!(c.exists(Path::new("/db/tmp")));
    }

    #[test]
    fn create_over_an_existing_file_is_undone_by_a_crash() {
        let vfs = FaultVfs::new();
        write(&vfs, "/db/f", b"first", true);
        vfs.sync_dir(Path::new("/db")).unwrap();
        write(&vfs, "/db/f", b"second", true);
        let c = vfs.crash_clone();
        assert_eq!(read_all(&c, Path::new("/db/f")).unwrap(), b"first");
    }

    #[test]
    fn hard_links_stay_shared_in_the_image() {
        let vfs = FaultVfs::new();
        write(&vfs, "/db/a", b"abc", true);
        vfs.link(Path::new("/db/a"), Path::new("/db/b")).unwrap();
        vfs.sync_dir(Path::new("/db")).unwrap();
        let c = vfs.crash_clone();
        assert_eq!(read_all(&c, Path::new("/db/b")).unwrap(), b"abc");
        assert_eq!(read_all(&c, Path::new("/db/a")).unwrap(), b"abc");
    }

    #[test]
    fn crash_keeping_keeps_a_prefix_of_the_unsynced_tail() {
        let vfs = FaultVfs::new();
        let mut f = write(&vfs, "/db/a", b"0123", true);
        f.append(b"456789").unwrap();
        vfs.sync_dir(Path::new("/db")).unwrap();
        let mut seen = BTreeSet::new();
        for seed in 0..64 {
            let c = vfs.crash_clone_keeping(seed);
            let d = read_all(&c, Path::new("/db/a")).unwrap();
            assert!(d.len() >= 4 && b"0123456789".starts_with(&d), "{d:?}");
            seen.insert(d.len());
        }
        assert!(seen.len() > 3, "tails kept: {seen:?}");
    }

    #[test]
    fn a_crash_shows_synced_reserved_space_as_zeros() {
        let vfs = FaultVfs::new();
        let mut f = vfs.create(Path::new("/db/a")).unwrap();
        f.preallocate(16).unwrap();
        f.append(b"0123").unwrap();
        vfs.sync_dir(Path::new("/db")).unwrap();
        // The reservation is not durable before an fsync.
        assert_eq!(
            read_all(&vfs.crash_clone(), Path::new("/db/a")).unwrap(),
            b""
        );
        f.sync().unwrap();
        f.append(b"4567").unwrap();
        assert_eq!(
            read_all(&vfs, Path::new("/db/a")).unwrap(),
            b"01234567",
            "live: no zeros"
        );
        let mut want = b"0123".to_vec();
        want.resize(16, 0);
        assert_eq!(
            read_all(&vfs.crash_clone(), Path::new("/db/a")).unwrap(),
            want
        );
        for seed in 0..16 {
            let d = read_all(&vfs.crash_clone_keeping(seed), Path::new("/db/a")).unwrap();
            assert_eq!(d.len(), 16, "{d:?}");
            let kept = d.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
            assert!(kept >= 4 && b"01234567".starts_with(&d[..kept]), "{d:?}");
        }
        drop(f);
        assert_eq!(
            read_all(&vfs.crash_clone(), Path::new("/db/a")).unwrap(),
            want,
            "a dropped writer's unsynced truncation does not undo it"
        );
    }

    #[test]
    fn nth_call_fails_once_or_sticky() {
        let vfs = FaultVfs::new();
        vfs.inject(Fault::eio(Op::Write, 2));
        let mut f = vfs.create(Path::new("/db/a")).unwrap();
        f.append(b"1").unwrap();
        let e = f.append(b"2").unwrap_err();
        assert!(e.to_string().contains("injected"), "{e}");
        f.append(b"3").unwrap();
        assert_eq!(read_all(&vfs, Path::new("/db/a")).unwrap(), b"13");
        assert_eq!(vfs.fired().len(), 1);
        assert_eq!(vfs.fired()[0].op, Op::Write);

        vfs.inject(Fault {
            sticky: true,
            kind: FaultKind::NoSpace,
            ..Fault::eio(Op::Sync, 1)
        });
        for _ in 0..3 {
            let e = f.sync().unwrap_err();
            match e {
                Error::Io { source, .. } => {
                    assert!(source.to_string().contains("space"));
                    assert_eq!(source.raw_os_error(), Some(28), "ENOSPC itself");
                }
                e => panic!("{e}"),
            }
        }
        vfs.clear_fault();
        f.sync().unwrap();

        for op in [Op::Create, Op::Rename, Op::Remove, Op::Link, Op::SyncDir] {
            vfs.inject(Fault::eio(op, 1));
            let p = Path::new("/db/a");
            let q = Path::new("/db/q");
            let r = match op {
                Op::Create => vfs.create(q).map(|_| ()),
                Op::Rename => vfs.rename(p, q),
                Op::Remove => vfs.remove(p),
                Op::Link => vfs.link(p, q),
                _ => vfs.sync_dir(Path::new("/db")),
            };
            assert!(r.is_err(), "{op:?} did not fail");
            assert!(vfs.exists(p), "a failed {op:?} changed the namespace");
        }
    }

    #[test]
    fn torn_write_lets_a_prefix_through() {
        let vfs = FaultVfs::new();
        vfs.inject(Fault {
            torn: true,
            ..Fault::eio(Op::Write, 1)
        });
        let mut f = vfs.create(Path::new("/db/a")).unwrap();
        assert!(f.append(b"abcdefgh").is_err());
        assert_eq!(read_all(&vfs, Path::new("/db/a")).unwrap(), b"abcd");
    }

    #[test]
    fn reads_fail_and_filters_pick_files() {
        let vfs = FaultVfs::new();
        write(&vfs, "/db/000001.log", b"log", true);
        write(&vfs, "/db/000002.sst", b"sst", true);
        vfs.inject(Fault {
            path_filter: Some(".sst".into()),
            ..Fault::eio(Op::Read, 1)
        });
        assert!(read_all(&vfs, Path::new("/db/000001.log")).is_ok());
        assert!(read_all(&vfs, Path::new("/db/000002.sst")).is_err());
        assert!(read_all(&vfs, Path::new("/db/000002.sst")).is_ok());
        let mut s = vfs.open_sequential(Path::new("/db/000001.log")).unwrap();
        vfs.inject(Fault::eio(Op::Read, 1));
        assert!(s.read(&mut [0u8; 3]).is_err());
    }

    #[test]
    fn power_cut_takes_the_image_and_kills_the_machine() {
        let vfs = FaultVfs::new();
        let mut f = write(&vfs, "/db/a", b"one", true);
        vfs.sync_dir(Path::new("/db")).unwrap();
        vfs.cut_power_after(1);
        f.append(b" two").unwrap(); // the one call allowed
        assert!(f.sync().is_err(), "the machine is dead");
        assert!(vfs.is_dead());
        assert!(vfs.create(Path::new("/db/b")).is_err());
        let img = vfs.crash_image().expect("image");
        assert_eq!(read_all(&img, Path::new("/db/a")).unwrap(), b"one");
        // The image is a working file system of its own.
        write(&img, "/db/c", b"c", true);
        assert!(img.exists(Path::new("/db/c")));
    }

    #[test]
    fn sync_handle_is_an_fsync_faulted_and_cut_like_one() {
        let vfs = FaultVfs::new();
        let mut f = write(&vfs, "/db/m", b"one", false);
        vfs.sync_dir(Path::new("/db")).unwrap();
        let h = f
            .sync_handle()
            .expect("the fault vfs hands out sync handles");
        f.append(b" two").unwrap();
        let before = vfs.count(Op::Sync);
        h.sync().unwrap();
        assert_eq!(vfs.count(Op::Sync), before + 1, "counted as a sync");
        f.append(b" three").unwrap();
        assert_eq!(
            read_all(&vfs.crash_clone(), Path::new("/db/m")).unwrap(),
            b"one two"
        );

        vfs.inject(Fault::eio(Op::Sync, 1));
        assert!(h.sync().is_err(), "an injected fsync fault hits the handle");
        assert_eq!(vfs.fired()[0].path, Path::new("/db/m"));
        vfs.clear_fault();
        // The failed fsync lost " three": a later one succeeds, and the
        // bytes stay readable, but they never become durable.
        h.sync().unwrap();
        assert_eq!(
            read_all(&vfs, Path::new("/db/m")).unwrap(),
            b"one two three"
        );
        assert_eq!(
            read_all(&vfs.crash_clone(), Path::new("/db/m")).unwrap(),
            b"one two"
        );
        assert!(!vfs.is_durable(Path::new("/db/m")));
        for seed in 0..16 {
            let c = vfs.crash_clone_keeping(seed);
            assert_eq!(read_all(&c, Path::new("/db/m")).unwrap(), b"one two");
        }

        vfs.cut_power_after(0);
        assert!(h.sync().is_err(), "the power is cut as the handle syncs");
        let img = vfs.crash_image().expect("image");
        assert_eq!(read_all(&img, Path::new("/db/m")).unwrap(), b"one two");
    }
}
