//! The operating system's file system.

use super::{FileSync, LockState, RandomAccessFile, SequentialFile, Vfs, WritableFile};
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Lock files held by this process (canonical paths).
fn held_locks() -> &'static Mutex<HashSet<PathBuf>> {
    static HELD: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// A lock file's entry in [`held_locks`], removed when dropped.
struct Registered(PathBuf);

impl Drop for Registered {
    fn drop(&mut self) {
        held_locks().lock().remove(&self.0);
    }
}

/// The database directory a lock file belongs to, for messages.
fn db_dir(lock: &Path) -> String {
    lock.parent().map(p).unwrap_or_else(|| p(lock))
}

/// [`Vfs`] over `std::fs`.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsVfs;

fn p(path: &Path) -> String {
    path.display().to_string()
}

struct OsWritable {
    name: String,
    w: BufWriter<File>,
    len: u64,
    /// The file's size as `preallocate` set it (0: never called), so the
    /// reserved zero bytes past `len` can be cut off when it is dropped.
    reserved: u64,
}

impl Drop for OsWritable {
    fn drop(&mut self) {
        if self.reserved > self.len {
            // Give back the reserved space a clean close did not fill, so
            // the file ends where its content does. Best effort: a file
            // left longer only ends in zero bytes, which its readers
            // accept as reserved space (`wal::tail`).
            if self.w.flush().is_ok() {
                let _ = self.w.get_ref().set_len(self.len);
            }
        }
    }
}

impl WritableFile for OsWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.w
            .write_all(data)
            .map_err(|e| Error::io(&self.name, e))?;
        self.len += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        self.w.flush().map_err(|e| Error::io(&self.name, e))
    }
    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.w
            .get_ref()
            .sync_data()
            .map_err(|e| Error::io(&self.name, e))
    }
    fn len(&self) -> u64 {
        self.len
    }
    #[cfg(target_os = "linux")]
    fn preallocate(&mut self, upto: u64) -> Result<()> {
        if upto <= self.reserved.max(self.len) {
            return Ok(());
        }
        let from = self.reserved.max(self.len);
        // Mode 0 (the file's size grows to `upto`), not KEEP_SIZE: with
        // KEEP_SIZE every append still changes the size, and an fdatasync
        // must then commit that to the journal.
        match rustix::fs::fallocate(
            self.w.get_ref(),
            rustix::fs::FallocateFlags::empty(),
            from,
            upto - from,
        ) {
            Ok(()) => {
                self.reserved = upto;
                Ok(())
            }
            // A file system without fallocate: appends allocate as usual.
            Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => Ok(()),
            Err(e) => Err(Error::io(&self.name, e.into())),
        }
    }
    #[cfg(target_os = "linux")]
    fn start_write_back(&mut self) -> Result<()> {
        use std::os::fd::AsRawFd;
        self.flush()?;
        // From offset 0 with length 0: the whole file as it is now (the
        // range already written back costs nothing to name again).
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE;
        // SAFETY: the descriptor is this file's, open for as long as
        // `self.w` lives; the call reads no memory of ours.
        let r = unsafe { libc::sync_file_range(self.w.get_ref().as_raw_fd(), 0, 0, flags) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            // A file system or file that cannot do it: the final sync
            // writes everything, as it would have anyway.
            Some(libc::ENOSYS | libc::EINVAL | libc::ESPIPE | libc::EOPNOTSUPP) => Ok(()),
            _ => Err(Error::io(&self.name, e)),
        }
    }
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        // A second descriptor of the same open file: fsync on it covers
        // every byte written through either.
        let f = self.w.get_ref().try_clone().ok()?;
        Some(Arc::new(OsSync {
            name: self.name.clone(),
            f,
        }))
    }
}

/// [`FileSync`] of an [`OsWritable`].
struct OsSync {
    name: String,
    f: File,
}

impl FileSync for OsSync {
    fn sync(&self) -> Result<()> {
        self.f.sync_data().map_err(|e| Error::io(&self.name, e))
    }
}

struct OsRandom {
    name: String,
    f: File,
    len: u64,
}

impl RandomAccessFile for OsRandom {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.f
            .read_exact_at(buf, offset)
            .map_err(|e| Error::io(format!("{} (offset {offset})", self.name), e))
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn name(&self) -> &str {
        &self.name
    }
}

struct OsSequential {
    name: String,
    f: File,
}

impl SequentialFile for OsSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.f.read(buf).map_err(|e| Error::io(&self.name, e))
    }
}

impl Vfs for OsVfs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(p(path), e))?;
        Ok(Box::new(OsWritable {
            name: p(path),
            w: BufWriter::with_capacity(256 << 10, f),
            len: 0,
            reserved: 0,
        }))
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let f = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(p(path), e))?;
        let len = f.metadata().map_err(|e| Error::io(p(path), e))?.len();
        Ok(Box::new(OsWritable {
            name: p(path),
            w: BufWriter::with_capacity(256 << 10, f),
            len,
            reserved: 0,
        }))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let f = File::open(path).map_err(|e| Error::io(p(path), e))?;
        let meta = f.metadata().map_err(|e| Error::io(p(path), e))?;
        if meta.is_dir() {
            // A directory opens on Unix; refused here, or its first read
            // fails at an offset as if a file were damaged there.
            return Err(Error::io(
                p(path),
                std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "is a directory, not a file",
                ),
            ));
        }
        let len = meta.len();
        Ok(Arc::new(OsRandom {
            name: p(path),
            f,
            len,
        }))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let f = File::open(path).map_err(|e| Error::io(p(path), e))?;
        Ok(Box::new(OsSequential { name: p(path), f }))
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(fs::metadata(path).map_err(|e| Error::io(p(path), e))?.len())
    }
    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io(p(path), e))
    }
    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        match fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(p(dir), e)),
            _ => Ok(()),
        }
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| Error::io(format!("{} -> {}", p(from), p(to)), e))
    }
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        fs::hard_link(from, to).map_err(|e| Error::io(format!("{} -> {}", p(from), p(to)), e))
    }
    fn canonicalize(&self, path: &Path) -> Result<PathBuf> {
        fs::canonicalize(path).map_err(|e| Error::io(p(path), e))
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io(p(dir), e))
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).map_err(|e| Error::io(p(dir), e))? {
            let e = e.map_err(|e| Error::io(p(dir), e))?;
            out.push(e.file_name().to_string_lossy().into_owned());
        }
        Ok(out)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn std::any::Any + Send + Sync>> {
        // The OS lock cannot tell this process from another (a second
        // `flock` from the same process fails the same way), so locks held
        // here are registered first: a second open in this process is told
        // so instead of blaming another process.
        let key = lock_key(path);
        if !held_locks().lock().insert(key.clone()) {
            return Err(Error::Busy {
                path: db_dir(path),
                msg: "it is already open in this process (close the other Db first)".into(),
            });
        }
        let registered = Registered(key);
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(p(path), e))?;
        match try_lock(&f) {
            // The file is dropped (unlocked) before the registration.
            Ok(true) => Ok(Box::new((f, registered))),
            Ok(false) => Err(Error::Busy {
                path: db_dir(path),
                msg: format!("another process holds its lock file {}", p(path)),
            }),
            Err(e) => Err(Error::io(p(path), e)),
        }
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(p(dir), e))
    }
    fn lock_state(&self, path: &Path) -> Result<LockState> {
        let key = lock_key(path);
        // The registry stays locked while the file is open: closing any
        // descriptor of a file releases every POSIX lock this process holds
        // on it, so the probe opens the file only when no `Db` of this
        // process holds (or, meanwhile, takes) its lock.
        let held = held_locks().lock();
        if held.contains(&key) {
            return Ok(LockState::HeldHere);
        }
        let f = match File::open(path) {
            Ok(f) => f,
            // No lock file, no lock; and none is created.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockState::Free),
            Err(e) => return Err(Error::io(p(path), e)),
        };
        let r = lock_holder(&f).map_err(|e| Error::io(p(path), e));
        drop(f);
        drop(held);
        r
    }
}

/// The name a lock file is registered under in `held_locks`: its
/// directory resolved, so two spellings of one database are one key.
fn lock_key(path: &Path) -> PathBuf {
    fs::canonicalize(path.parent().unwrap_or(Path::new(".")))
        .map(|d| d.join(path.file_name().unwrap_or_default()))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Asks who holds a lock [`try_lock`] would conflict with, without taking
/// it: `fcntl(F_GETLK)`, which changes nothing and needs no write access.
#[cfg(unix)]
fn lock_holder(f: &File) -> std::io::Result<LockState> {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` is plain data, all zeroes a valid value; F_GETLK
    // only writes into the struct it is given, which lives across the call.
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = libc::F_WRLCK as _;
    l.l_whence = libc::SEEK_SET as _;
    l.l_start = 0;
    l.l_len = 0;
    // SAFETY: a valid open descriptor and a pointer to a live `flock`.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut l) };
    if rc == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(if i32::from(l.l_type) == libc::F_UNLCK {
        LockState::Free
    } else {
        LockState::HeldElsewhere {
            pid: u32::try_from(l.l_pid).ok().filter(|&p| p > 0),
        }
    })
}

#[cfg(not(unix))]
fn lock_holder(_f: &File) -> std::io::Result<LockState> {
    Ok(LockState::Unknown)
}

/// Takes an exclusive lock on the whole of `f` without waiting: `Ok(false)`
/// if another process holds it.
///
/// On Unix this is a POSIX record lock (`fcntl(F_SETLK)`), as LevelDB and
/// RocksDB take, not a `flock`: a `flock` belongs to the open file
/// description, which a child process shares from `fork` until its `exec`
/// closes it, so a database closed while another thread spawns a process
/// stayed locked for that moment ("another process holds its lock file",
/// seen in the import kill tests). A POSIX lock belongs to the process and
/// is never inherited. Its catch, that closing any descriptor of the file
/// releases it, cannot bite: the registration above lets one `Db` per
/// process open the file.
#[cfg(unix)]
fn try_lock(f: &File) -> std::io::Result<bool> {
    use rustix::fs::{fcntl_lock, FlockOperation};
    match fcntl_lock(f, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(e) if e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::ACCESS => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(unix))]
fn try_lock(f: &File) -> std::io::Result<bool> {
    match f.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}
