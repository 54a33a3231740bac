//! The database: `Db::open`, writes through the commit pipeline, reads over
//! memtables and levels, background flushes, recovery.
//!
//! Module map: `open` (recovery), `commit` (write path), `read` (point
//! lookups and iterators), `flush` (immutable queue to L0), `flushable` (what
//! the immutable queue holds), `table_cache`, `filenames`, `options`,
//! `write_batch`.
//!
//! Concurrency: the `SuperVersion` (memtable, immutable queue, `Version`) is
//! an immutable snapshot swapped under a `RwLock`; a reader clones the `Arc`
//! and works without locks. `state` guards the parts that change (the
//! version set, the immutable queue) and is held only briefly. Lock order:
//! commit queue, then `state`.

pub mod filenames;
pub mod options;
pub mod write_batch;

mod commit;
mod flush;
mod flushable;
mod level_iter;
mod open;
mod read;
mod table_cache;

pub use flushable::Flushable;
pub use options::{Options, ReadOptions, WriteOptions};
pub use read::DbIterator;
pub use write_batch::WriteBatch;

use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::version::{Version, VersionSet, NUM_LEVELS};
use crate::vfs::Vfs;
use commit::{CommitPipeline, Job};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use table_cache::TableCache;

/// What a reader needs, captured at one instant.
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Oldest first.
    pub imm: Vec<Arc<dyn Flushable>>,
    pub version: Arc<Version>,
}

pub(crate) struct DbState {
    pub versions: VersionSet,
    pub mem: Arc<MemTable>,
    pub mem_wal: u64,
    /// Oldest first.
    pub imm: VecDeque<Arc<dyn Flushable>>,
    /// File numbers being written that no version holds yet.
    pub pending_outputs: BTreeSet<u64>,
}

/// Counters kept as the database runs.
#[derive(Default)]
pub(crate) struct Stats {
    pub flushes: AtomicU64,
    pub bytes_flushed: AtomicU64,
    pub stalls: AtomicU64,
    pub stall_micros: AtomicU64,
}

impl Stats {
    pub fn record_stall(&self, d: Duration) {
        self.stalls.fetch_add(1, Ordering::Relaxed);
        self.stall_micros
            .fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }
}

pub(crate) struct DbInner {
    pub dir: PathBuf,
    pub vfs: Arc<dyn Vfs>,
    pub opts: Options,
    sv: RwLock<Arc<SuperVersion>>,
    pub state: Mutex<DbState>,
    /// Wakes the flush thread (with `state`).
    pub bg_cv: Condvar,
    /// Signalled (with `state`) after every flush.
    pub flush_done_cv: Condvar,
    pub commit: CommitPipeline,
    /// Every sequence number up to this one is readable.
    pub visible_seq: AtomicU64,
    next_file: Arc<AtomicU64>,
    pub table_cache: Arc<TableCache>,
    pub shutting_down: AtomicBool,
    bg_error: Mutex<Option<Error>>,
    snapshots: Mutex<BTreeMap<u64, usize>>,
    pub stats: Stats,
    _lock: Box<dyn std::any::Any + Send + Sync>,
}

impl DbInner {
    pub fn super_version(&self) -> Arc<SuperVersion> {
        Arc::clone(&self.sv.read())
    }

    /// Publishes a new super version built from `st`.
    pub fn install_super_version(&self, st: &DbState) {
        let sv = SuperVersion {
            mem: Arc::clone(&st.mem),
            imm: st.imm.iter().cloned().collect(),
            version: st.versions.current(),
        };
        *self.sv.write() = Arc::new(sv);
    }

    pub fn new_file_number(&self) -> u64 {
        self.next_file.fetch_add(1, Ordering::SeqCst)
    }

    pub fn bg_error(&self) -> Option<Error> {
        self.bg_error.lock().clone()
    }

    pub fn set_bg_error(&self, e: Error) {
        let mut g = self.bg_error.lock();
        if g.is_none() {
            *g = Some(e);
        }
    }
}

/// A consistent view of the database as of one sequence number, kept until
/// dropped.
pub struct Snapshot {
    seq: u64,
    db: Arc<DbInner>,
}

impl Snapshot {
    pub fn sequence(&self) -> u64 {
        self.seq
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut s = self.db.snapshots.lock();
        if let Some(n) = s.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                s.remove(&self.seq);
            }
        }
    }
}

/// Files and bytes of one level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelShape {
    pub files: usize,
    pub bytes: u64,
}

/// The shape of the tree, for `strata lsm` and tests.
#[derive(Clone, Debug, Default)]
pub struct LsmShape {
    pub levels: Vec<LevelShape>,
    pub memtable_bytes: usize,
    pub immutable_memtables: usize,
    pub immutable_bytes: usize,
    pub last_sequence: u64,
    pub flushes: u64,
    pub bytes_flushed: u64,
    pub stalls: u64,
    pub stall_micros: u64,
}

/// An open database.
pub struct Db {
    inner: Arc<DbInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Db {
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        open::open(path.as_ref(), opts)
    }

    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b, &WriteOptions::default())
    }

    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b, &WriteOptions::default())
    }

    /// Deletes every key in `[begin, end)`.
    pub fn delete_range(&self, begin: &[u8], end: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(begin, end);
        self.write(b, &WriteOptions::default())
    }

    /// Applies a batch atomically.
    pub fn write(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.inner
            .commit
            .commit(&self.inner, Job::Batch(batch), opts.sync)
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    pub fn get_opt(&self, key: &[u8], opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        read::get(&self.inner, key, opts)
    }

    /// An iterator over user keys (bounded and at a snapshot if `opts` says).
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        read::iter(&self.inner, opts)
    }

    pub fn snapshot(&self) -> Snapshot {
        let mut s = self.inner.snapshots.lock();
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        *s.entry(seq).or_insert(0) += 1;
        Snapshot {
            seq,
            db: Arc::clone(&self.inner),
        }
    }

    /// The newest visible sequence number.
    pub fn latest_sequence(&self) -> u64 {
        self.inner.visible_seq.load(Ordering::Acquire)
    }

    /// Moves the memtable onto the immutable queue and waits until every
    /// queued memtable is in L0.
    pub fn flush(&self) -> Result<()> {
        self.inner.commit.commit(&self.inner, Job::Rotate, false)?;
        flush::wait_for_flushes(&self.inner)
    }

    pub fn lsm(&self) -> LsmShape {
        let sv = self.inner.super_version();
        let st = &self.inner.stats;
        LsmShape {
            levels: (0..NUM_LEVELS)
                .map(|l| LevelShape {
                    files: sv.version.files(l).len(),
                    bytes: sv.version.level_bytes(l),
                })
                .collect(),
            memtable_bytes: sv.mem.approximate_memory_usage(),
            immutable_memtables: sv.imm.len(),
            immutable_bytes: sv.imm.iter().map(|f| f.memory_bytes()).sum(),
            last_sequence: self.latest_sequence(),
            flushes: st.flushes.load(Ordering::Relaxed),
            bytes_flushed: st.bytes_flushed.load(Ordering::Relaxed),
            stalls: st.stalls.load(Ordering::Relaxed),
            stall_micros: st.stall_micros.load(Ordering::Relaxed),
        }
    }

    /// Stops background work and syncs the WAL. Dropping a `Db` does the
    /// same; `close` reports errors.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        if self.inner.shutting_down.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        {
            let _st = self.inner.state.lock();
            self.inner.bg_cv.notify_all();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        self.inner.commit.sync_wal()?;
        match self.inner.bg_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
