//! The database: `Db::open`, writes through the commit pipeline, reads over
//! memtables and levels, background flushes, recovery.
//!
//! Module map: `open` (recovery, read-write and read-only),
//! `recovery_checks` (what recovery verifies and may delete), `repair`
//! (salvage with a report), `commit` (write path), `read` (point
//! lookups and iterators), `flush` (immutable queue to L0), `flushable` (what
//! the immutable queue holds), `ingest` (external files), `excise` (cutting
//! a key range out of a version with virtual files), `compact`,
//! `level_iter`, `table_cache`, `filenames`, `options`, `write_batch`.
//!
//! Concurrency: the `SuperVersion` (memtable, immutable queue, `Version`) is
//! an immutable snapshot swapped under a `RwLock`; a reader clones the `Arc`
//! and works without locks. `state` guards the parts that change (the
//! version set, the immutable queue) and is held only briefly: never across
//! disk I/O of the MANIFEST, which has its own locks (`manifest`, see
//! `version::manifest_log`; flushes and compactions frame their record
//! under `state` and sync it after releasing it). Lock order: commit queue,
//! then `state`, then the MANIFEST's.

pub mod filenames;
pub mod options;
pub mod write_batch;

mod bg_priority;
pub mod checkpoint;
mod commit;
mod compact;
pub(crate) mod events;
mod excise;
mod flush;
mod flushable;
pub mod ingest;
mod iterator;
mod level_iter;
pub(crate) mod marker;
mod open;
mod output;
#[cfg(test)]
mod placement_data;
mod read;
pub(crate) mod recovery_checks;
pub(crate) use recovery_checks::missing_wal;
pub mod repair;
mod snapshot;
mod table_cache;
mod wal_buffer;
pub(crate) mod wal_sequence;
mod write_wait;

pub use flushable::Flushable;
pub use iterator::{DbIterator, KvPair, RawIterator};
pub use options::{CompactionOptions, Options, ReadOptions, WriteOptions};
pub use snapshot::Snapshot;
pub use write_batch::WriteBatch;
pub use write_wait::{thread_write_waits, WriteWaitMetrics};

use crate::compaction::picker::{self, Running};
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::version::sublevels::L0Sublevels;
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
    /// Sequence number of the latest ingestion that excised a range from
    /// the tree (virtual files): reads without a snapshot read this version
    /// at this sequence number or above (see `read::read_seq`).
    pub excised_seq: u64,
}

pub(crate) struct DbState {
    pub versions: VersionSet,
    pub mem: Arc<MemTable>,
    pub mem_wal: u64,
    /// Oldest first.
    pub imm: VecDeque<Arc<dyn Flushable>>,
    /// Floors of the file numbers that running jobs allocate: every table
    /// numbered at or above the smallest floor may be an output in progress.
    pub pending_outputs: BTreeSet<u64>,
    /// Compactions in progress (their files and output ranges).
    pub running: Running,
    /// Manual compactions in progress; automatic picking pauses meanwhile.
    pub manual_compactions: usize,
    /// Sequence number of the latest excise that cut the tree before its
    /// sequence number was visible (copied into every super version).
    pub excised_seq: u64,
}

impl DbState {
    /// Moves the active memtable (with the WAL it writes to) onto the
    /// immutable queue and makes `next`, writing to WAL `next_wal`, active.
    /// `last_seq` is the highest sequence number assigned so far: nothing in
    /// the sealed memtable is above it.
    pub fn seal_memtable(&mut self, next: Arc<MemTable>, next_wal: u64, last_seq: u64) {
        let mem = std::mem::replace(&mut self.mem, next);
        let wal_number = std::mem::replace(&mut self.mem_wal, next_wal);
        self.imm.push_back(Arc::new(flushable::ImmutableMemTable {
            mem,
            wal_number,
            last_seq,
        }));
    }
}

/// Counters kept as the database runs.
#[derive(Default)]
pub(crate) struct Stats {
    pub flushes: AtomicU64,
    pub bytes_flushed: AtomicU64,
    pub compactions: AtomicU64,
    pub moves: AtomicU64,
    pub bytes_compacted_read: AtomicU64,
    pub bytes_compacted_written: AtomicU64,
    /// Key and value bytes of user writes.
    pub user_bytes: AtomicU64,
    /// Bytes appended to WALs.
    pub wal_bytes: AtomicU64,
    /// (count, microseconds) per stall cause.
    stalls: Mutex<BTreeMap<&'static str, (u64, u64)>>,
    /// Deepest L0 seen (sublevels) and most L0 files.
    pub peak_l0_sublevels: AtomicU64,
    pub peak_l0_files: AtomicU64,
    /// Most compactions seen running at once.
    pub peak_running_compactions: AtomicU64,
    pub ingests: AtomicU64,
    pub ingests_flushable: AtomicU64,
    pub ingests_as_batch: AtomicU64,
    pub bytes_ingested: AtomicU64,
    pub ingest_micros: AtomicU64,
    /// The phases of ingestions that entered the tree as files
    /// (`Metrics::ingest_prepare_micros` and the three after it).
    pub ingest_prepare_micros: AtomicU64,
    pub ingest_dir_sync_micros: AtomicU64,
    pub ingest_commit_micros: AtomicU64,
    pub ingest_manifest_sync_micros: AtomicU64,
    /// Excises that cut the tree, and those left to a range-tombstone file.
    pub excises: AtomicU64,
    pub excise_fallbacks: AtomicU64,
    /// Excising ingestions committed twice: memory or a snapshot came to
    /// see the range after `prepare` decided no tombstone file was needed.
    pub excise_retries: AtomicU64,
    /// Compactions dropped at install because an excise took an input.
    pub compactions_cancelled: AtomicU64,
    /// (files, bytes) ingested per level they landed on.
    ingested_per_level: Mutex<[(u64, u64); NUM_LEVELS]>,
    /// Foreground write waits by cause.
    pub write_waits: write_wait::WriteWaits,
}

impl Stats {
    pub fn record_stall(&self, cause: &'static str, d: Duration) {
        let mut s = self.stalls.lock();
        let e = s.entry(cause).or_insert((0, 0));
        e.0 += 1;
        e.1 += d.as_micros() as u64;
    }

    pub fn record_ingested_file(&self, level: usize, bytes: u64) {
        let mut g = self.ingested_per_level.lock();
        g[level].0 += 1;
        g[level].1 += bytes;
    }

    pub fn stalls(&self) -> Vec<StallMetrics> {
        self.stalls
            .lock()
            .iter()
            .map(|(c, (n, us))| StallMetrics {
                cause: c.to_string(),
                count: *n,
                micros: *us,
            })
            .collect()
    }
}

/// Stalls of one cause.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StallMetrics {
    /// What stalled writes (`slowdown-...` or `stop-...`).
    pub cause: String,
    /// Stalls of this cause.
    pub count: u64,
    /// Total time writers waited, in microseconds.
    pub micros: u64,
}

/// Per-level figures.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct LevelMetrics {
    /// Table files on the level.
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// The size the level is compacted toward (0 for L0).
    pub target_bytes: u64,
    /// Compaction score: 1 or more means the level needs compacting.
    pub score: f64,
}

/// Everything [`Db::metrics`] reports (its example reads some fields).
/// Counters are since this `Db` was opened; the shape of the tree is now.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Metrics {
    /// Figures per level, L0 first.
    pub levels: Vec<LevelMetrics>,
    /// The level L0 compacts into (Lbase).
    pub base_level: usize,
    /// Files in L0.
    pub l0_files: usize,
    /// L0 depth in sublevels (its read amplification).
    pub l0_sublevels: usize,
    /// Most L0 files seen since open.
    pub peak_l0_files: u64,
    /// Deepest L0 seen since open, in sublevels.
    pub peak_l0_sublevels: u64,
    /// Bytes still to be compacted to bring every level to its target.
    pub compaction_debt: u64,
    /// Memory used by the active memtable.
    pub memtable_bytes: usize,
    /// Immutable memtables (and queued ingestions) waiting for flush.
    pub immutable_memtables: usize,
    /// Flushes since open (this process).
    pub flushes: u64,
    /// Compactions that rewrote data, since open.
    pub compactions: u64,
    /// Compactions that moved a file down without rewriting it, since open.
    pub moves: u64,
    /// Compactions running now.
    pub running_compactions: usize,
    /// Most compactions seen running at once.
    pub peak_running_compactions: u64,
    /// Bytes of table files written by flushes, since open.
    pub bytes_flushed: u64,
    /// Bytes compactions read, since open.
    pub bytes_compacted_read: u64,
    /// Bytes compactions wrote, since open.
    pub bytes_compacted_written: u64,
    /// Bytes of files ingested, since open.
    pub bytes_ingested: u64,
    /// Ingestion calls, those that took the flushable path, those applied as
    /// write batches, and their total time.
    pub ingests: u64,
    /// Ingestions that waited behind an overlapping memtable.
    pub ingests_flushable: u64,
    /// Ingestions applied as write batches (small files).
    pub ingests_as_batch: u64,
    /// Total time spent in `ingest` calls, in microseconds.
    pub ingest_micros: u64,
    /// Of the ingestions that entered the tree as files, the time spent
    /// preparing them, in microseconds: opening, linking (or copying) and
    /// checking the files, with the directory fsync running beside the
    /// check (the call pays the longer of the two).
    pub ingest_prepare_micros: u64,
    /// The directory fsyncs alone (within the preparation), microseconds.
    pub ingest_dir_sync_micros: u64,
    /// The commit, in microseconds: waiting for the commit slot behind
    /// the writes queued before it, placing the files, writing the MANIFEST
    /// record (unsynced) and the WAL marker.
    pub ingest_commit_micros: u64,
    /// The MANIFEST fsync after the commit, in microseconds. What remains
    /// of `ingest_micros` besides these phases is the small-file batches'
    /// time and the removal of the callers' links.
    pub ingest_manifest_sync_micros: u64,
    /// Ingest-and-excise calls whose range was cut out of the tree with
    /// virtual files, and those left to a range-tombstone file (an older
    /// snapshot needed the data).
    pub excises: u64,
    /// Excises left to a range-tombstone file.
    pub excise_fallbacks: u64,
    /// Excising ingestions committed a second time, with a range-tombstone
    /// file that memory or a snapshot came to need after `prepare`.
    pub excise_retries: u64,
    /// Compactions dropped at install because an excise took an input.
    pub compactions_cancelled: u64,
    /// Virtual files in the current version, and the physical tables
    /// backing them.
    pub virtual_files: usize,
    /// Physical tables backing the virtual files.
    pub backing_tables: usize,
    /// (files, bytes) ingested, by the level they landed on.
    pub ingested_per_level: Vec<(u64, u64)>,
    /// Key and value bytes of user writes, since open.
    pub user_bytes: u64,
    /// Bytes appended to write-ahead logs, since open.
    pub wal_bytes: u64,
    /// (WAL + flush + compaction bytes written) / user bytes.
    pub write_amplification: f64,
    /// Sources a point read may consult: memtables + L0 sublevels + non-empty
    /// lower levels.
    pub read_amplification: usize,
    /// Write stalls by cause, since open.
    pub stalls: Vec<StallMetrics>,
    /// The longest a foreground write waited on one cause since open, in
    /// microseconds (0: none waited), and that cause.
    pub longest_write_wait_micros: u64,
    /// The cause of the longest write wait (empty if none).
    pub longest_write_wait_cause: String,
    /// Foreground write waits by cause since open: counts, totals, the
    /// longest and a log2 histogram (see [`WriteWaitMetrics`]).
    pub write_waits: Vec<WriteWaitMetrics>,
    /// The newest sequence number visible to reads.
    pub last_sequence: u64,
    /// Data-block reads served from the block cache, since open.
    pub block_cache_hits: u64,
    /// Data-block reads that went to the file, since open. Compactions'
    /// reads count here too, but the blocks they read are not added to the
    /// cache (they would evict what foreground reads use).
    pub block_cache_misses: u64,
    /// Blocks added to the block cache, since open.
    pub block_cache_inserts: u64,
    /// Blocks evicted to make room, since open (the blocks of a deleted
    /// table are dropped with it, which is not an eviction).
    pub block_cache_evictions: u64,
    /// Bytes held by the block cache now.
    pub block_cache_usage: u64,
    /// The block cache's budget (`Options::block_cache_bytes`).
    pub block_cache_capacity: u64,
    /// Table files whose prefix filter an iterator consulted, since open:
    /// files an iterator bounded to one prefix of
    /// `Options::sst.prefix_extractor` reached (as [`Db::prefix`] is),
    /// that were written with that extractor and a filter.
    pub prefix_filter_checks: u64,
    /// Of those, the files whose filter ruled the prefix out, so the
    /// iterator read none of their data blocks (RocksDB's
    /// `BLOOM_FILTER_PREFIX_USEFUL`).
    pub prefix_filter_skips: u64,
}

pub(crate) struct DbInner {
    pub dir: PathBuf,
    /// The names `dir` resolves to, found once at open: every ingestion
    /// refuses paths under them (`ingest::outside_the_directory`), and two
    /// `realpath`s per call were about 5% of W3's ingest call.
    pub dir_names: Vec<PathBuf>,
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
    /// The MANIFEST file (the version set's), synced without the state lock:
    /// see `version::manifest_log`. A synced write checks it on every
    /// commit.
    pub manifest: Arc<crate::version::ManifestLog>,
    pub table_cache: Arc<TableCache>,
    pub shutting_down: AtomicBool,
    bg_error: Mutex<Option<Error>>,
    snapshots: Mutex<BTreeMap<u64, usize>>,
    pub stats: Stats,
    pub events: events::EventLog,
    /// L0 depth (sublevels, ignoring files being compacted) and compaction
    /// debt of the current version, for backpressure.
    pub l0_depth: AtomicU64,
    pub debt: AtomicU64,
    /// Opened with `Db::open_read_only`: every write is refused.
    pub read_only: bool,
    /// The LOCK file's hold, released at `close` (a `Snapshot` or an
    /// iterator may keep this struct alive past it, and must not keep the
    /// next open out).
    pub lock: Mutex<Option<Box<dyn std::any::Any + Send + Sync>>>,
    /// Held for reading by every ingestion and for writing by a checkpoint
    /// while it flushes and takes its version (`checkpoint`: an ingestion
    /// then would put an operation in the tree ahead of writes numbered
    /// before it that are still in the memtable).
    pub checkpoint_gate: RwLock<()>,
    /// Set as `Db::close` starts: every later call is refused with
    /// [`DbInner::closed_error`]. A write checks it inside `commit`, after
    /// counting itself in (`CommitPipeline::writers_in`), and close waits
    /// for that count to drain, so no write commits past the close.
    pub closed: AtomicBool,
    /// Held for reading by every call that works on the directory other
    /// than a write (flush, compact_range, ingest, checkpoint, sync_wal,
    /// wait_for_compactions: `Db::enter`), for writing by close, which so
    /// waits for those in progress and lets none start.
    pub ops: RwLock<()>,
}

impl DbInner {
    pub fn super_version(&self) -> Arc<SuperVersion> {
        Arc::clone(&self.sv.read())
    }

    /// Publishes a new super version built from `st`, and refreshes the
    /// figures backpressure reads. The caller wakes the background threads
    /// (`bg_cv`) once it has released its locks, if the change may give them
    /// work.
    pub fn install_super_version(&self, st: &DbState) {
        let version = st.versions.current();
        let sub = L0Sublevels::new(version.files(0), self.opts.compaction.flush_split_bytes);
        let depth = sub.read_amplification() as u64;
        let targets = picker::level_targets(&version, &self.opts.compaction);
        self.l0_depth.store(depth, Ordering::Relaxed);
        self.debt.store(
            picker::compaction_debt(&version, &targets),
            Ordering::Relaxed,
        );
        self.stats
            .peak_l0_sublevels
            .fetch_max(depth, Ordering::Relaxed);
        self.stats
            .peak_l0_files
            .fetch_max(version.files(0).len() as u64, Ordering::Relaxed);
        let sv = SuperVersion {
            mem: Arc::clone(&st.mem),
            imm: st.imm.iter().cloned().collect(),
            version,
            excised_seq: st.excised_seq,
        };
        *self.sv.write() = Arc::new(sv);
        // No wake-up of the background threads here: callers hold the state
        // lock, and threads woken now would queue on it and take the CPU the
        // moment it is released, while the caller may still hold the commit
        // slot (an ingestion: ~2-3 ms of Put latency in W4). Each caller
        // wakes them after letting go instead.
    }

    pub fn new_file_number(&self) -> u64 {
        self.next_file.fetch_add(1, Ordering::SeqCst)
    }

    /// Counts an ingestion's excise (cut or left to a tombstone) once it is
    /// in the tree, and logs the files it added and removed.
    pub(crate) fn record_ingestion(
        &self,
        seq: u64,
        excise: Option<&(Vec<u8>, Vec<u8>)>,
        excised: Option<&excise::Excised>,
        added: &[(usize, crate::version::FileMeta)],
        flushable: bool,
        in_slot: bool,
    ) {
        if excise.is_some() {
            let c = if excised.is_some() {
                &self.stats.excises
            } else {
                &self.stats.excise_fallbacks
            };
            c.fetch_add(1, Ordering::Relaxed);
        }
        let removed = excised
            .map(|x| events::tables(x.removed.iter().map(|(l, f)| (*l, f.as_ref()))))
            .unwrap_or_default();
        let event = crate::events::Event::Ingest {
            sequence: seq,
            flushable: Some(flushable),
            excise: excise.map(|(a, b)| crate::events::KeyRange {
                start: a.clone(),
                end: b.clone(),
            }),
            added: events::tables(added.iter().map(|(l, f)| (*l, f))),
            removed,
        };
        // In the commit slot only staged: the caller writes it once it has
        // left the slot (`events::EventLog::stage`).
        if in_slot {
            self.events.stage(event);
        } else {
            self.events.record(event);
        }
    }

    /// The error of every call on a closed database.
    pub fn closed_error(&self) -> Error {
        Error::invalid(format!(
            "the database {} is closed (Db::close was called): it can no longer be used; \
             open it again",
            self.dir.display()
        ))
    }

    /// The error that stopped the database, as `set_bg_error` stored it
    /// (saying that it stopped), if one did.
    pub fn bg_error(&self) -> Option<Error> {
        self.bg_error.lock().clone()
    }

    /// Logs the start of a write stop (slowdowns happen per write group and
    /// are only counted).
    pub fn stall_begun(&self, cause: &'static str) {
        self.events.record(crate::events::Event::WriteStallBegin {
            cause: cause.to_string(),
        });
    }

    /// Counts a stall; a stop is also logged as ended.
    pub fn record_stall(&self, cause: &'static str, d: Duration) {
        self.stats.record_stall(cause, d);
        if cause.starts_with("stop") {
            self.events.record(crate::events::Event::WriteStallEnd {
                cause: cause.to_string(),
                micros: events::micros(d),
            });
        }
    }

    /// Counts a foreground write's wait on `cause`, and logs it if it was
    /// long (`Options::slow_write_event`).
    pub fn record_wait(&self, cause: write_wait::WaitCause, d: Duration) {
        self.stats.write_waits.record(cause, d);
        if d >= self.opts.slow_write_event {
            self.events.record(crate::events::Event::WriteWait {
                cause: cause.name().to_string(),
                micros: events::micros(d),
            });
        }
    }

    /// Logs a memtable joining the immutable queue. Called in the commit
    /// slot, so the line is only staged: whoever holds the slot writes it
    /// once it has left (`events::EventLog::write_staged`).
    pub fn memtable_rotated(&self, memtable: u64, wal: u64, reason: &str) {
        self.events.stage(crate::events::Event::MemtableRotated {
            memtable,
            wal,
            reason: reason.to_string(),
        });
    }

    /// Stops the database after `during` (what failed: "a background
    /// flush", ...) failed with `e`: every later write, flush, ingestion
    /// and close returns the stored error (`bg_error`). The first failure
    /// is kept. The stored error says what failed, that the database
    /// stopped and what to do, after the failure's own message, which
    /// keeps its kind, path and raw OS error (`Error::context`): a later
    /// caller could not otherwise tell a write of its own that failed from
    /// a database that refuses writes since an earlier failure.
    ///
    /// Returns the stored error, for a caller whose own operation failed
    /// with `e` to return in its place: the caller that hit the failure
    /// first then gets the same error, note included, as every caller
    /// after it (it used to get `e` bare, and only later calls the note).
    /// If an earlier failure had already stopped the database, that one
    /// is returned: it is why the database refuses writes, and what
    /// `close` will report.
    pub fn set_bg_error(&self, during: &str, e: Error) -> Error {
        self.bg_error
            .lock()
            .get_or_insert_with(|| e.context(stopped_note(during)))
            .clone()
    }
}

/// The note a stored background error carries (`DbInner::set_bg_error`).
fn stopped_note(during: &str) -> String {
    format!(
        "{during} failed with this error, so the database stopped accepting writes: \
         close it and reopen it once the cause is fixed"
    )
}

/// An open database.
///
/// **Sharing.** A `Db` is `Send + Sync` and every method takes `&self`:
/// share one between threads by reference (scoped threads) or in an
/// [`Arc`], and call anything from any thread at once; writes from several
/// threads are grouped into one WAL record and fsync (group commit).
/// [`close`](Self::close) also takes `&self`, so a shared database can be
/// closed, and its error seen, while other clones of the `Arc` live: their
/// later calls fail with an error saying the database is closed.
///
/// ```
/// use std::sync::Arc;
/// use strata::Db;
/// # let dir = tempfile::tempdir()?;
/// let db = Arc::new(Db::open_default(dir.path())?);
/// let writers: Vec<_> = (0..4)
///     .map(|t| {
///         let db = Arc::clone(&db);
///         std::thread::spawn(move || -> strata::Result<()> {
///             for i in 0..100 {
///                 db.put(format!("t{t}:{i:03}"), "v")?;
///             }
///             Ok(())
///         })
///     })
///     .collect();
/// for w in writers {
///     w.join().expect("writer panicked")?;
/// }
/// assert_eq!(db.prefix("t2:").count(), 100);
/// db.close()?; // through the Arc: syncs the WAL, releases the directory
/// assert!(db.get("t0:000").is_err(), "closed");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// **Errors that stop it.** After a WAL write, flush, compaction or
/// MANIFEST write fails (a full disk, an I/O error), the database refuses
/// every later write, flush and close with that error: it cannot know what
/// of the failed work reached the disk. The error keeps the failure's kind,
/// path and raw OS error, and its message goes on to say what failed, that
/// the database stopped accepting writes, and to close and reopen it once
/// the cause is fixed. The call whose own work failed (a put whose WAL
/// write failed, a flush, compaction or ingestion whose MANIFEST write
/// failed) gets that same error. Reopening it goes on from what recovery
/// finds (every synced write is there).
pub struct Db {
    inner: Arc<DbInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Held by the close that runs (`shutdown`): a second close waits for
    /// it, then reports the database closed.
    closing: Mutex<()>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.inner.dir)
            .field("read_only", &self.inner.read_only)
            .finish_non_exhaustive()
    }
}

impl Db {
    /// Opens the database in directory `path`, creating it if
    /// `opts.create_if_missing` (the default) allows. Recovery replays the
    /// WAL, so every acknowledged write is there (see [`WriteOptions`] for
    /// what a crash can lose).
    ///
    /// One `Db` per directory: a second open, in this process or another,
    /// fails with [`Error::Busy`].
    ///
    /// ```
    /// use strata::{Db, Options};
    /// # let dir = tempfile::tempdir()?;
    /// let db = Db::open(dir.path().join("db"), Options::default())?;
    /// db.put("k", "v")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        open::open(path.as_ref(), opts, false)
    }

    /// Opens an existing database for reading only: nothing in its
    /// directory is created, renamed or deleted (no LOCK, no new MANIFEST,
    /// no WAL), so any number of read-only opens may run at once, on a full
    /// disk or a read-only directory. The live WALs are replayed into
    /// memory, so every acknowledged write is readable. The same recovery
    /// checks as `open` run, and fail the same way; beside a live writer,
    /// an open that a compaction or a new MANIFEST changed the files under
    /// starts again rather than report the mixed view as damage, and the
    /// tables it opened on stay readable after the writer deletes them (it
    /// keeps them open, if there are at most `max_open_files`; it sees the
    /// database as it was when it opened).
    /// Writes, ingestions, flushes and compactions return
    /// `Error::NotSupported`. A missing path or a directory that is not a
    /// Strata database is an error; nothing is created.
    ///
    /// ```
    /// use strata::{Db, Options};
    /// # let dir = tempfile::tempdir()?;
    /// let db = Db::open_default(dir.path())?;
    /// db.put_opt("k", "v", &strata::WriteOptions { sync: true })?; // in the WAL file
    /// // Beside the writer (no LOCK taken), as many as wanted:
    /// let reader = Db::open_read_only(dir.path(), Options::default())?;
    /// assert_eq!(reader.get("k")?, Some(b"v".to_vec())); // replayed from the WAL
    /// assert!(reader.put("k", "x").unwrap_err().is_not_supported());
    /// db.put("k2", "v")?;
    /// assert_eq!(reader.get("k2")?, None, "it sees the database as it was at its open");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        open::open(path.as_ref(), opts, true)
    }

    /// Salvages a database that `open` refuses (a damaged or missing
    /// MANIFEST or CURRENT, missing tables): keeps every edit before the
    /// damage, drops what is gone, puts back tables whose MANIFEST record
    /// was lost, and reports exactly what was lost (see `db::repair`).
    /// Then opens and closes the database once.
    ///
    /// ```
    /// use strata::{Db, Options};
    /// # let dir = tempfile::tempdir()?;
    /// let db = Db::open_default(dir.path())?;
    /// db.put("k", "v")?;
    /// db.flush()?;
    /// db.close()?;
    /// std::fs::remove_file(dir.path().join("CURRENT"))?; // damage: open now refuses
    /// assert!(Db::open_default(dir.path()).is_err());
    /// let report = Db::repair(dir.path(), Options::default())?;
    /// println!("{report:?}"); // what was kept, salvaged and lost
    /// let db = Db::open_default(dir.path())?;
    /// assert_eq!(db.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn repair(path: impl AsRef<Path>, opts: Options) -> Result<repair::RepairReport> {
        repair::repair(path.as_ref(), opts)
    }

    fn check_writable(&self) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::NotSupported(format!(
                "{} is open read-only",
                self.inner.dir.display()
            )));
        }
        Ok(())
    }

    /// The closed error, if `close` has begun (reads and writes check it
    /// first; a write checks again in the commit pipeline).
    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(self.inner.closed_error());
        }
        Ok(())
    }

    /// Enters a call that works on the directory and is not a write (see
    /// `DbInner::ops`): the guard keeps `close` waiting until it drops. A
    /// close that has begun refuses it (`try_read` fails only then: close
    /// is the lock's only writer, and a nested call must not queue behind
    /// it).
    fn enter(&self) -> Result<parking_lot::RwLockReadGuard<'_, ()>> {
        self.check_open()?;
        match self.inner.ops.try_read() {
            Some(g) if !self.inner.closed.load(Ordering::Acquire) => Ok(g),
            _ => Err(self.inner.closed_error()),
        }
    }

    /// Runs `f` entered (see [`enter`](Self::enter)), then, with the guard
    /// dropped and no lock held, waits until the listener has heard the
    /// events `f` logged (`events::EventLog::wait_heard`), so a call
    /// returns after its events were heard.
    fn run_entered<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let r = {
            let _op = self.enter()?;
            f()
        };
        self.inner.events.wait_heard();
        r
    }

    /// Opens (or creates) the database in `path` with default options.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open_default(dir.path())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_default(path: impl AsRef<Path>) -> Result<Db> {
        Db::open(path, Options::default())
    }

    /// Sets `key` to `value` (not synced: see [`WriteOptions::sync`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("user:1", "ada")?;
    /// db.put(b"\x00binary", vec![1, 2, 3])?;
    /// assert_eq!(db.get("user:1")?, Some(b"ada".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// Sets `key` to `value` as `opts` says (`sync: true`: durable when it
    /// returns, with every write before it).
    ///
    /// ```
    /// # use strata::{Db, WriteOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// db.put_opt("config:version", "7", &WriteOptions { sync: true })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_opt(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b, opts)
    }

    /// Removes `key` (a no-op if it is absent).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("k", "v")?;
    /// db.delete("k")?;
    /// assert_eq!(db.get("k")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// Removes `key` as `opts` says (see [`put_opt`](Self::put_opt)).
    ///
    /// ```
    /// # use strata::{Db, WriteOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// db.put("session:9", "x")?;
    /// db.delete_opt("session:9", &WriteOptions { sync: true })?;
    /// assert_eq!(db.get("session:9")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, opts: &WriteOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b, opts)
    }

    /// Deletes every key in `[begin, end)` with one range tombstone. A
    /// `begin` above `end` is `InvalidArgument` (as in RocksDB: swapped
    /// arguments would otherwise delete nothing, silently); `begin == end`
    /// deletes nothing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// for k in ["a", "b", "c"] {
    ///     db.put(k, "v")?;
    /// }
    /// db.delete_range("a", "c")?;
    /// assert_eq!(db.iter().collect::<strata::Result<Vec<_>>>()?.len(), 1); // only "c" is left
    /// assert!(db.delete_range("c", "a").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range(&self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.delete_range_opt(begin, end, &WriteOptions::default())
    }

    /// Deletes every key in `[begin, end)` as `opts` says (see
    /// [`delete_range`](Self::delete_range) and [`put_opt`](Self::put_opt)).
    ///
    /// ```
    /// # use strata::{Db, WriteOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// db.put("log:1", "a")?;
    /// db.put("log:2", "b")?;
    /// db.delete_range_opt("log:", "log;", &WriteOptions { sync: true })?;
    /// assert_eq!(db.prefix("log:").count(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range_opt(
        &self,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(begin, end);
        self.write(b, opts)
    }

    /// Applies a batch atomically: after a crash either all of it is there
    /// or none, and readers never see part of it. A batch with an update
    /// refused as it was built (a key or value too long, a reversed range:
    /// see [`WriteBatch::status`]) is refused whole, `InvalidArgument`, and
    /// nothing of it is written. With [`WriteOptions::sync`] the call
    /// returns once the batch, and every write before it, is durable; an
    /// *empty* batch with `sync` does just that: it makes every earlier
    /// write durable, as [`sync_wal`](Self::sync_wal) does.
    ///
    /// ```
    /// use strata::{Db, WriteBatch, WriteOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// let mut batch = WriteBatch::new();
    /// batch.put("order:17", "paid").delete("cart:17");
    /// db.write(batch, &WriteOptions { sync: true })?; // durable on return
    /// assert_eq!(db.get("order:17")?, Some(b"paid".to_vec()));
    ///
    /// db.put("a", "1")?; // not synced
    /// db.write(WriteBatch::new(), &WriteOptions { sync: true })?; // now it is
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        batch.status()?;
        self.check_writable()?;
        self.check_open()?;
        if batch.is_empty() {
            // Nothing to commit; a synced empty batch is how RocksDB's
            // callers make their earlier writes durable, so it syncs.
            return if opts.sync { self.sync_wal() } else { Ok(()) };
        }
        self.inner
            .commit
            .commit(&self.inner, Job::Batch(batch), opts.sync)
    }

    /// Makes every write acknowledged so far durable: hands what Strata's
    /// WAL buffer holds to the operating system and fsyncs the WAL (and a
    /// WAL a memtable rotation left unsynced), as RocksDB's
    /// `FlushWAL(true)` / `SyncWAL` and fjall's `persist` do. For writers
    /// that write without [`WriteOptions::sync`] and choose their own
    /// moment of durability: after it returns, a power cut loses none of
    /// the writes that returned before the call. It runs beside writes (no
    /// write waits for it), and an empty batch written with `sync` does the
    /// same. A failed sync stops the database (see [`Db`]): what the WAL
    /// holds on disk is then unknown.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// for i in 0..1000 {
    ///     db.put(format!("k{i:04}"), "v")?; // unsynced: fast
    /// }
    /// db.sync_wal()?; // all 1,000 are durable now
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sync_wal(&self) -> Result<()> {
        self.check_writable()?;
        let _op = self.enter()?;
        let t = std::time::Instant::now();
        // The WAL's bytes may or may not be on disk after a failure: a
        // later sync must not claim they are (nor may writes go on after
        // them), so it stops the database, and this caller gets the same
        // error as every later one.
        if let Err(e) = self.inner.commit.sync_wal(&self.inner) {
            return Err(self.inner.set_bg_error("a WAL sync (Db::sync_wal)", e));
        }
        // As for a synced write: an ingestion committed before this call
        // may not have synced its MANIFEST record yet, and no write made
        // durable here may outlive it in a crash.
        if self.inner.manifest.owes() {
            if let Err(e) = self.inner.manifest.sync() {
                return Err(self.inner.set_bg_error("a MANIFEST sync (Db::sync_wal)", e));
            }
        }
        self.inner
            .record_wait(write_wait::WaitCause::WalSync, t.elapsed());
        Ok(())
    }

    /// Ingests SST files written with
    /// [`SstOptions::for_ingestion`](crate::SstOptions::for_ingestion) or by
    /// RocksDB's `SstFileWriter`: their keys become visible at once,
    /// atomically. Each file is placed at the lowest level it fits, without
    /// passing through the WAL and memtable; files overlapping the memtable
    /// wait behind it. By default the files are moved in (hard-linked, then
    /// the caller's paths removed; `move_files: false` copies them and
    /// leaves them). A set holding less than `small_file_bytes` (32 KiB) is
    /// applied as one synced write batch instead, through the WAL and
    /// memtable (`IngestResult::as_batch`); `move_files` still decides
    /// whether the caller's files are removed once it is durable (see
    /// [`IngestOptions`](crate::IngestOptions)). A table, once in the
    /// database, is never modified.
    ///
    /// A path inside the database directory (however spelt: through `..`
    /// or a symbolic link) is refused before anything is changed: it may
    /// be a live table. The scratch directory (`Db::scratch_dir`) is the
    /// tools', not the database's, and is allowed.
    ///
    /// Every file is checked before the commit: a file whose
    /// footer declares no block checksum (unless this database's own
    /// `Options::sst.checksum` is none), keys out of order, at a sequence
    /// number other than 0 or repeated, an entry of a kind Strata cannot
    /// read (a RocksDB Merge operand: Strata has no merge operator), or an
    /// index entry that does not bound its data block refuses the whole
    /// call, and leaves the database as it was. Any call that fails
    /// before its MANIFEST record is written removes whatever it had
    /// linked, copied or written into the directory (a copy cut short by a
    /// full disk too), and nothing else.
    ///
    /// ```
    /// use strata::{Db, IngestOptions, SstOptions, SstWriter};
    /// # let dir = tempfile::tempdir()?;
    /// let sst = dir.path().join("bulk.sst");
    /// let mut w = SstWriter::create(&sst, SstOptions::for_ingestion())?;
    /// for i in 0..1000u32 {
    ///     w.put(format!("key{i:05}"), i.to_le_bytes())?; // increasing keys
    /// }
    /// w.finish()?;
    ///
    /// let db = Db::open_default(dir.path().join("db"))?;
    /// let r = db.ingest(&[&sst], &IngestOptions::default())?;
    /// assert!(r.sequence > 0);
    /// assert_eq!(db.get("key00042")?, Some(42u32.to_le_bytes().to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ingest<P: AsRef<Path>>(
        &self,
        paths: &[P],
        opts: &ingest::IngestOptions,
    ) -> Result<ingest::IngestResult> {
        self.check_writable()?;
        let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        self.run_entered(|| {
            let _checkpoint = self.inner.checkpoint_gate.read();
            self.ingest_paths(&paths, opts)
        })
    }

    /// [`Db::ingest`] with the call entered and ingestions' checkpoint
    /// gate held.
    fn ingest_paths(
        &self,
        paths: &[PathBuf],
        opts: &ingest::IngestOptions,
    ) -> Result<ingest::IngestResult> {
        let start = std::time::Instant::now();
        // Files linked by `prepare` are in no version until the commit
        // places them; the floor keeps the obsolete-file pass off them.
        let floor = self.inner.new_file_number();
        self.inner.state.lock().pending_outputs.insert(floor);
        let mut linked = Vec::new();
        let r = self.ingest_prepared(paths, opts, start, &mut linked);
        // The database owns what it ingested: with `move_files` the
        // caller's links go once the ingestion is durable, so no outside
        // path shares a live table's inode. A set applied as a batch is
        // moved too (its files go once the batch is synced): `move_files`
        // means the same whichever path the set took, so a caller need not
        // look at `as_batch` to know what is left.
        let r = r.and_then(|res| {
            for p in &linked {
                self.inner.vfs.remove(p).map_err(|e| {
                    Error::invalid(if res.as_batch {
                        format!(
                            "ingested (as a write batch), but the caller's file {} could not \
                             be removed ({e}); the database does not use it",
                            p.display()
                        )
                    } else {
                        format!(
                            "ingested, but the caller's link {} could not be removed ({e}); \
                             it shares its inode with a table of the database: remove it, \
                             do not modify it",
                            p.display()
                        )
                    })
                })?;
            }
            Ok(res)
        });
        let mut st = self.inner.state.lock();
        st.pending_outputs.remove(&floor);
        if r.as_ref().is_ok_and(|r| r.excised) {
            // Files the excise took out of the tree (its record is synced
            // by now) are deleted at once rather than at the next flush.
            flush::delete_obsolete_files(&self.inner, &mut st);
        }
        r
    }

    fn ingest_prepared(
        &self,
        paths: &[PathBuf],
        opts: &ingest::IngestOptions,
        start: std::time::Instant,
        linked: &mut Vec<PathBuf>,
    ) -> Result<ingest::IngestResult> {
        let prepared = ingest::prepare(&self.inner, paths, opts)?;
        let st = &self.inner.stats;
        if matches!(prepared, ingest::Prepare::Files(..)) {
            st.ingest_prepare_micros
                .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
        }
        match prepared {
            ingest::Prepare::Batch(b) => {
                self.write(b, &WriteOptions { sync: true })?;
                if opts.move_files {
                    // Durable now: the caller's files go (`Db::ingest`).
                    linked.extend(paths.iter().cloned());
                }
                st.ingests.fetch_add(1, Ordering::Relaxed);
                st.ingests_as_batch.fetch_add(1, Ordering::Relaxed);
                st.ingest_micros
                    .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
                Ok(ingest::IngestResult {
                    sequence: self.latest_sequence(),
                    levels: Vec::new(),
                    as_batch: true,
                    flushable: false,
                    excised: false,
                })
            }
            ingest::Prepare::Files(mut files, _tables, links) => loop {
                linked.clone_from(&links);
                // The tables this call made in the directory: removed if
                // the commit fails before a MANIFEST record names them
                // (`IngestJob::named`), rather than left for the next open
                // to move aside.
                let made: Vec<u64> = files.iter().map(|f| f.number).collect();
                let slot = Arc::new(Mutex::new(None));
                let named = Arc::new(AtomicBool::new(false));
                let job = commit::IngestJob {
                    files,
                    excise: opts.excise.clone(),
                    allow_overlap: opts.allow_overlap_with_memtable,
                    result: Arc::clone(&slot),
                    named: Arc::clone(&named),
                };
                let committing = std::time::Instant::now();
                let committed = self
                    .inner
                    .commit
                    .commit(&self.inner, Job::Ingest(job), false);
                if let Err(e) = committed {
                    if !named.load(Ordering::Acquire) {
                        ingest::remove_made(&self.inner, &made);
                    }
                    return Err(e);
                }
                st.ingest_commit_micros
                    .fetch_add(committing.elapsed().as_micros() as u64, Ordering::Relaxed);
                // The ingestion's event line, staged in the commit slot: the
                // slot holder wrote it on leaving, unless a stalled leader
                // ran this ingestion ahead of itself (and is still in the
                // slot).
                self.inner.events.write_staged();
                let outcome = slot.lock().take();
                let r = match outcome {
                    Some(commit::IngestOutcome::Done(r)) => r,
                    Some(commit::IngestOutcome::NeedTombstone(back)) => {
                        // Memory or a snapshot came to see the range after
                        // `prepare` looked: add the tombstone file, retry.
                        // The second commit never asks again.
                        let Some((a, b)) = &opts.excise else {
                            return Err(Error::internal("tombstone asked for without an excise"));
                        };
                        let again = std::time::Instant::now();
                        files = back;
                        // Nothing names the files yet: a failure here
                        // removes them (the tombstone file's own write
                        // removes what it left).
                        let written =
                            ingest::write_excise_tombstone(&self.inner, a, b).and_then(|t| {
                                files.insert(0, t);
                                ingest::sync_dir_timed(&self.inner)
                            });
                        if let Err(e) = written {
                            let made: Vec<u64> = files.iter().map(|f| f.number).collect();
                            ingest::remove_made(&self.inner, &made);
                            return Err(e);
                        }
                        st.ingest_prepare_micros
                            .fetch_add(again.elapsed().as_micros() as u64, Ordering::Relaxed);
                        st.excise_retries.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    None => return Err(Error::internal("ingestion produced no result")),
                };
                // A queued ingestion needs the flush thread: woken now that
                // the commit queue has moved on, so its work overlaps this
                // caller's MANIFEST fsync (woken after it, the thread took
                // the CPU from the call's last steps: W4 overlap ingest p50
                // 4.3-5.6 ms against 2.2-2.3 ms woken here).
                if r.flushable {
                    self.inner.bg_cv.notify_all();
                }
                // The commit wrote the MANIFEST record without waiting for
                // the disk, so the writes queued behind it could go on; the
                // ingestion is durable, and may be reported, once it is
                // synced.
                let syncing = std::time::Instant::now();
                let synced = self.inner.manifest.sync();
                st.ingest_manifest_sync_micros
                    .fetch_add(syncing.elapsed().as_micros() as u64, Ordering::Relaxed);
                if let Err(e) = synced {
                    return Err(self.inner.set_bg_error("an ingestion's MANIFEST sync", e));
                }
                // Files placed in L0 may make a compaction due: the
                // compaction threads are woken only then, and only now that
                // the call's own work is done. A woken thread takes the CPU
                // from its waker on two cores (3.7-11.8 ms of the call in 3
                // of 60 traced W4 disjoint ingestions, when every ingestion
                // woke them before its MANIFEST sync); files placed below
                // L0 leave the size-driven compactions to the threads' next
                // look (every 200 ms).
                if !r.flushable && r.levels.contains(&Some(0)) {
                    self.inner.bg_cv.notify_all();
                }
                st.ingest_micros
                    .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
                return Ok(r);
            },
        }
    }

    /// The value of `key`, or `None` if it is absent.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("k", "v")?;
    /// assert_eq!(db.get("k")?.as_deref(), Some(&b"v"[..]));
    /// assert_eq!(db.get("missing")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        read::get(&self.inner, key.as_ref(), None)
    }

    /// The value of `key` as `opts` says (at its snapshot, if any; bounds
    /// do not apply to point reads). A snapshot of another database is
    /// [`Error::InvalidArgument`].
    ///
    /// ```
    /// use strata::{Db, ReadOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// db.put("k", "old")?;
    /// let snap = db.snapshot();
    /// db.put("k", "new")?;
    /// let at_snap = ReadOptions { snapshot: Some(&snap), ..ReadOptions::default() };
    /// assert_eq!(db.get_opt("k", &at_snap)?, Some(b"old".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_opt(
        &self,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions<'_>,
    ) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        let seq = self.snapshot_seq(opts)?;
        read::get(&self.inner, key.as_ref(), seq)
    }

    /// The values of many keys, read at one instant: one result per key, in
    /// the order given (a key may appear more than once). Every key is read
    /// at the same sequence number in the same version of the tree, so a
    /// write made meanwhile is seen for all of the keys or for none (a
    /// batch that sets two keys never shows one changed and not the
    /// other); each result is what [`get`](Self::get) at that instant
    /// would return for its key.
    ///
    /// Each key has its own `Result`, as in RocksDB's `MultiGet`: a table
    /// block that cannot be read fails the keys that needed it, and the
    /// others still get their values. A single `Result` would fail the
    /// whole call on one damaged block, or hide which keys were answered.
    ///
    /// Faster than a loop of `get`s: the keys are sorted and looked up
    /// together, each table file is found in the table cache once for all
    /// the keys that fall into it, and keys in one data block share its
    /// index lookup and block read.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("a", "1")?;
    /// db.put("c", "3")?;
    /// let got = db.multi_get(["c", "b", "a", "c"]);
    /// let values: Vec<Option<Vec<u8>>> = got.into_iter().collect::<strata::Result<_>>()?;
    /// assert_eq!(
    ///     values,
    ///     [Some(b"3".to_vec()), None, Some(b"1".to_vec()), Some(b"3".to_vec())]
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        self.multi_get_opt(keys, &ReadOptions::default())
    }

    /// [`multi_get`](Self::multi_get) as `opts` says: at its snapshot, if
    /// any (bounds do not apply to point reads). A snapshot of another
    /// database fails every key with [`Error::InvalidArgument`].
    ///
    /// ```
    /// # use strata::{Db, ReadOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// db.put("a", "old")?;
    /// let snap = db.snapshot();
    /// db.put("a", "new")?;
    /// db.put("b", "new")?;
    /// let opts = ReadOptions { snapshot: Some(&snap), ..ReadOptions::default() };
    /// let got: Vec<_> = db.multi_get_opt(["a", "b"], &opts).into_iter().collect::<strata::Result<_>>()?;
    /// assert_eq!(got, [Some(b"old".to_vec()), None]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        opts: &ReadOptions<'_>,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        match self.check_open().and_then(|()| self.snapshot_seq(opts)) {
            Ok(seq) => read::multi_get(&self.inner, keys, seq),
            Err(e) => keys.into_iter().map(|_| Err(e.clone())).collect(),
        }
    }

    fn snapshot_seq(&self, opts: &ReadOptions<'_>) -> Result<Option<u64>> {
        opts.snapshot
            .map(|s| s.sequence_for(&self.inner))
            .transpose()
    }

    /// Every key and value, in key order (`.rev()` for descending). The
    /// iterator reads the data as it was when it was created.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("b", "2")?;
    /// db.put("a", "1")?;
    /// for kv in db.iter() {
    ///     let (key, value) = kv?;
    ///     println!("{key:?} = {value:?}");
    /// }
    /// let last = db.iter().next_back().transpose()?;
    /// assert_eq!(last, Some((b"b".to_vec(), b"2".to_vec())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter(&self) -> DbIterator {
        self.iter_opt(&ReadOptions::default())
    }

    /// The keys and values `opts` selects (its snapshot and bounds), in key
    /// order. An error choosing the view (a snapshot of another database,
    /// a closed database) is the iterator's first and only item.
    ///
    /// ```
    /// use strata::{Db, ReadOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// db.put("a", "1")?;
    /// let snap = db.snapshot();
    /// db.put("b", "2")?;
    /// let opts = ReadOptions {
    ///     snapshot: Some(&snap),
    ///     lower: Some(b"a".to_vec()),
    ///     ..ReadOptions::default()
    /// };
    /// let seen: Vec<_> = db.iter_opt(&opts).collect::<strata::Result<_>>()?;
    /// assert_eq!(seen, [(b"a".to_vec(), b"1".to_vec())]); // "b" came after the snapshot
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter_opt(&self, opts: &ReadOptions<'_>) -> DbIterator {
        DbIterator::new(self.raw_iter(opts))
    }

    /// The keys in `range`, in key order; any `RangeBounds` over byte
    /// strings works (`"a".."m"`, `k1..=k2`, `"x"..`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// for k in ["a", "b", "c", "d"] {
    ///     db.put(k, "")?;
    /// }
    /// let keys: Vec<_> = db.range("b"..="c").map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
    /// assert_eq!(db.range("b"..).rev().collect::<strata::Result<Vec<_>>>()?.len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(&self, range: R) -> DbIterator {
        let (lower, upper) = iterator::range_to_bounds(&range);
        self.iter_opt(&ReadOptions {
            lower,
            upper,
            ..ReadOptions::default()
        })
    }

    /// The keys starting with `prefix`, in key order.
    ///
    /// With a prefix extractor (`Options::sst.prefix_extractor`) that
    /// gives every key starting with `prefix` one prefix (`prefix` at
    /// least as long as a [`FixedPrefix`](crate::sstable::FixedPrefix)'s
    /// length), table files whose prefix bloom filter lacks it are not
    /// read; the keys returned are the same either way.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("user:1", "ada")?;
    /// db.put("user:2", "grace")?;
    /// db.put("video:1", "...")?;
    /// assert_eq!(db.prefix("user:").collect::<strata::Result<Vec<_>>>()?.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        let (lower, upper) = iterator::prefix_to_bounds(prefix.as_ref());
        self.iter_opt(&ReadOptions {
            lower,
            upper,
            ..ReadOptions::default()
        })
    }

    /// A positional cursor (seek, next, prev) over what `opts` selects;
    /// see [`RawIterator`]. Cheaper than a [`DbIterator`] per entry: it
    /// lends the key and value instead of copying them.
    ///
    /// ```
    /// # use strata::{Db, ReadOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// for k in ["apple", "banana", "cherry"] {
    ///     db.put(k, "")?;
    /// }
    /// let mut it = db.raw_iter(&ReadOptions::default())?;
    /// it.seek("b");
    /// let mut keys = Vec::new();
    /// while let Some(k) = it.key() {
    ///     keys.push(k.to_vec());
    ///     it.next();
    /// }
    /// it.status()?; // ran off the end, no error
    /// assert_eq!(keys, [b"banana".to_vec(), b"cherry".to_vec()]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn raw_iter(&self, opts: &ReadOptions<'_>) -> Result<RawIterator> {
        self.check_open()?;
        let snapshot = self.snapshot_seq(opts)?;
        read::iter(
            &self.inner,
            read::IterSpec {
                snapshot,
                lower: opts.lower.clone(),
                upper: opts.upper.clone(),
            },
        )
    }

    /// A consistent view of the database as it is now; see [`Snapshot`].
    /// On a closed database, a snapshot whose every read fails with the
    /// closed error.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("balance", "100")?;
    /// let snap = db.snapshot();
    /// db.put("balance", "70")?;
    /// assert_eq!(snap.get("balance")?, Some(b"100".to_vec())); // as of the snapshot
    /// assert_eq!(db.get("balance")?, Some(b"70".to_vec()));
    /// drop(snap); // lets compactions drop the old version
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        if self.inner.closed.load(Ordering::Acquire) {
            return Snapshot {
                seq: self.inner.visible_seq.load(Ordering::Acquire),
                db: Arc::clone(&self.inner),
                closed: true,
            };
        }
        let mut s = self.inner.snapshots.lock();
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        *s.entry(seq).or_insert(0) += 1;
        Snapshot {
            seq,
            db: Arc::clone(&self.inner),
            closed: false,
        }
    }

    /// Every file of the current version with its level, L0 first (newest
    /// first within L0), then each level in key order. Virtual files carry
    /// `backing: Some(physical table number)`.
    ///
    /// Internal (tests use it; only with the `internals` feature):
    /// `FileMeta` is not part of the public API.
    #[cfg(any(test, feature = "internals"))]
    #[doc(hidden)]
    pub fn files(&self) -> Vec<(usize, crate::version::FileMeta)> {
        self.inner
            .super_version()
            .version
            .all_files()
            .map(|(l, f)| (l, (**f).clone()))
            .collect()
    }

    /// Records that one phase of an import finished, as an
    /// [`Event::ImportPhase`](crate::events::Event::ImportPhase): delivered
    /// to the listener and written to the `EVENTS` log, so the visualiser's
    /// timeline shows the import's phases beside the ingestion that ends
    /// it. `import` names the import (e.g. its tables), `phase` the phase
    /// (`read`, `sort`, `write`, `ingest`), `rows` and `bytes` its volume.
    /// Only a log entry: it changes nothing in the database, and a
    /// read-only database hands it to the listener only.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// let t = std::time::Instant::now();
    /// // ... parse and encode 1,000 rows of 64 KiB of input ...
    /// db.log_import_phase("stock", "read", 1_000, 64 << 10, t.elapsed());
    /// let log = strata::inspect::read_events(dir.path())?;
    /// assert!(log.records.iter().any(|r| r.event.kind() == "import_phase"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// For Strata's own import (`strata-import`), hence hidden from the
    /// documentation: not part of the supported API.
    #[doc(hidden)]
    pub fn log_import_phase(
        &self,
        import: &str,
        phase: &str,
        rows: u64,
        bytes: u64,
        elapsed: Duration,
    ) {
        self.inner.events.record(crate::events::Event::ImportPhase {
            import: import.to_string(),
            phase: phase.to_string(),
            rows,
            bytes,
            micros: events::micros(elapsed),
        });
        self.inner.events.wait_heard();
    }

    /// The newest visible sequence number: each update of a write takes
    /// one (a batch takes one per update), an ingestion one. It still
    /// answers after [`close`](Self::close), with the last.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// let before = db.latest_sequence();
    /// db.put("a", "1")?;
    /// db.put("b", "2")?;
    /// assert_eq!(db.latest_sequence(), before + 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn latest_sequence(&self) -> u64 {
        self.inner.visible_seq.load(Ordering::Acquire)
    }

    /// Moves the memtable onto the immutable queue and waits until every
    /// queued memtable is in L0, recorded in a synced MANIFEST. The event
    /// listener has heard the flush when it returns.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("k", "v")?;
    /// db.flush()?;
    /// assert_eq!(db.metrics().l0_files, 1); // the memtable is now a table
    /// assert_eq!(db.get("k")?, Some(b"v".to_vec())); // read from it
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flush(&self) -> Result<()> {
        self.check_writable()?;
        self.run_entered(|| self.flush_entered())
    }

    /// [`Db::flush`] once entered.
    fn flush_entered(&self) -> Result<()> {
        self.inner.commit.commit(&self.inner, Job::Rotate, false)?;
        flush::wait_for_flushes(&self.inner)?;
        // The flush thread leaves its records unsynced (`db::flush`). A
        // failed sync poisons the MANIFEST, so no later flush could record
        // its table: the database stops, and this caller already gets the
        // error saying so.
        self.inner
            .manifest
            .sync()
            .map_err(|e| self.inner.set_bg_error("a flush's MANIFEST sync", e))
    }

    /// Makes a checkpoint of the database in `dir`, a new directory: a
    /// database of its own, openable with [`Db::open`], holding every write
    /// and ingestion acknowledged before the call (and possibly some made
    /// while it runs, but always a prefix of the operations: the state the
    /// database was in at one moment). Its tables are hard links to this
    /// database's, or copies where `dir` is on another file system, so a
    /// checkpoint on the same file system costs little space until the
    /// database compacts its tables away.
    ///
    /// The memtable is flushed first. Writes go on meanwhile; ingestions
    /// wait until the flush is done. `dir` must not exist and must lie
    /// outside the database's directory. A checkpoint cut short by a crash
    /// leaves a directory without `CURRENT`, which no open takes for a
    /// database; one that fails with an error removes what it made.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open_default(dir.path().join("db"))?;
    /// db.put("k", "v1")?;
    /// let info = db.checkpoint(dir.path().join("backup"))?;
    /// db.put("k", "v2")?;
    /// assert!(info.sequence > 0);
    ///
    /// let backup = strata::Db::open_default(dir.path().join("backup"))?;
    /// assert_eq!(backup.get("k")?, Some(b"v1".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<checkpoint::CheckpointInfo> {
        self.check_writable()?;
        self.run_entered(|| checkpoint::create(&self.inner, dir.as_ref()))
    }

    /// Compacts every file overlapping `[lo, hi]` (`None`: unbounded) down
    /// the tree, after flushing the memtable, in the calling thread
    /// (automatic compactions pause meanwhile). Reclaims the space of
    /// deleted and overwritten keys in the range, and leaves it in as few
    /// levels as it can.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// for i in 0..100 {
    ///     db.put(format!("k{i:03}"), "v")?;
    ///     if i % 10 == 9 {
    ///         db.flush()?; // ten L0 tables in the end
    ///     }
    /// }
    /// db.delete_range("k000", "k050")?;
    /// db.compact_range(None, None)?; // everything, to the bottom level
    /// let m = db.metrics();
    /// assert_eq!(m.l0_files, 0);
    /// assert_eq!(db.iter().count(), 50);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact_range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
        self.check_writable()?;
        self.run_entered(|| {
            self.flush_entered()
                .and_then(|()| compact::compact_range(&self.inner, lo, hi))
        })
    }

    /// Waits until no flush or compaction is running or needed: the tree
    /// has settled (a benchmark's or a test's "quiet" point). The event
    /// listener has heard every flush and compaction when it returns. On a
    /// read-only database nothing runs, and it returns at once.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let opts = strata::Options { memtable_size: 64 << 10, ..strata::Options::default() };
    /// # let db = strata::Db::open(dir.path(), opts)?;
    /// for i in 0..20_000 {
    ///     db.put(format!("k{i:06}"), [0u8; 32])?; // rotates memtables as it goes
    /// }
    /// db.wait_for_compactions()?;
    /// let m = db.metrics();
    /// assert_eq!((m.immutable_memtables, m.running_compactions), (0, 0));
    /// assert!(m.levels.iter().all(|l| l.score < 1.0), "nothing left to compact");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_compactions(&self) -> Result<()> {
        if self.inner.read_only {
            // Nothing runs: the replayed memtables stay in memory.
            return self.check_open();
        }
        self.run_entered(|| {
            flush::wait_for_flushes(&self.inner)
                .and_then(|()| compact::wait_for_compactions(&self.inner))
        })
    }

    /// Keys at which a bulk loader should cut the SST files it is about to
    /// ingest, in increasing order: where the level that L0 compacts into
    /// (Lbase) is cut into files, and points inside Lbase files of at least
    /// twice the slice size that slice them about that fine (the slice size
    /// is `CompactionOptions::lbase_split_bytes` when set, else a 32nd of
    /// the data by default, `CompactionOptions::lbase_slices`). A file cut at these keys overlaps at most one such
    /// slice of Lbase, so when it overlaps existing data and lands in L0,
    /// the compaction that moves it down rewrites one slice rather than
    /// the whole level (CockroachDB's imports got the same effect from
    /// writing one SST per range); L0 -> Lbase compactions cut their
    /// outputs at the same keys. Cutting is optional; the keys are a hint
    /// that ages as the tree changes, so ask again before each ingestion.
    /// Empty with `CompactionOptions::l0_sublevels` off, and while Lbase
    /// has fewer than two files and none large enough to slice.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open_default(dir.path().join("db"))?;
    /// let splits = db.ingest_split_keys();
    /// assert!(splits.is_empty(), "an empty tree has nothing to align with");
    /// // A writer of sorted keys starts a new file at the first key at or
    /// // past the next split key.
    /// let mut next = splits.iter().peekable();
    /// let mut file_of_key = Vec::new();
    /// let mut file = 0;
    /// for key in [&b"a"[..], b"b", b"c"] {
    ///     if next.next_if(|s| key >= s.as_slice()).is_some() {
    ///         while next.next_if(|s| key >= s.as_slice()).is_some() {}
    ///         file += 1;
    ///     }
    ///     file_of_key.push(file);
    /// }
    /// assert_eq!(file_of_key, [0, 0, 0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// For Strata's own import (`strata-import`), hence hidden from the
    /// documentation: not part of the supported API.
    #[doc(hidden)]
    pub fn ingest_split_keys(&self) -> Vec<Vec<u8>> {
        let v = self.inner.super_version().version.clone();
        ingest::split_keys(&self.inner, &v)
    }

    /// A directory inside the database's directory for a tool's temporary
    /// files while it works on this database (the import keeps its sort
    /// runs there). The database never reads it, and every read-write open
    /// removes it with everything in it, so whatever a killed tool left
    /// behind is gone at the latest at the next open. It is not created
    /// here: a tool makes its own subdirectory with `create_dir_all`.
    /// Only meaningful on the operating system's file system.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open_default(dir.path().join("db"))?;
    /// let work = db.scratch_dir().join("my-tool-1");
    /// std::fs::create_dir_all(&work)?;
    /// std::fs::write(work.join("run-0"), b"sorted run")?;
    /// drop(db);
    /// let db = strata::Db::open_default(dir.path().join("db"))?;
    /// assert!(!work.exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// For Strata's own tools (`strata-import`), hence hidden from the
    /// documentation: not part of the supported API.
    #[doc(hidden)]
    pub fn scratch_dir(&self) -> std::path::PathBuf {
        filenames::scratch(&self.inner.dir)
    }

    /// The engine's figures now: the shape of the tree (per level), memory,
    /// and counters since this `Db` was opened.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("k", "v")?;
    /// db.flush()?;
    /// let m = db.metrics();
    /// assert_eq!(m.flushes, 1);
    /// assert_eq!(m.l0_files, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn metrics(&self) -> Metrics {
        let inner = &self.inner;
        let sv = inner.super_version();
        let v = &sv.version;
        let o = &inner.opts.compaction;
        let targets = picker::level_targets(v, o);
        // Read amplification does not depend on which files are compacting,
        // so one structure serves both figures.
        let mut sub = L0Sublevels::new(v.files(0), o.flush_split_bytes);
        let (running, sub_scores) = {
            let st = inner.state.lock();
            sub.set_compacting(&st.running.files);
            (
                st.running.outputs.len(),
                picker::scores(v, &sub, &targets, &st.running, o),
            )
        };
        let st = &inner.stats;
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let user = ld(&st.user_bytes);
        let written = ld(&st.wal_bytes) + ld(&st.bytes_flushed) + ld(&st.bytes_compacted_written);
        let nonempty = (1..NUM_LEVELS).filter(|&l| !v.files(l).is_empty()).count();
        let waits = st.write_waits.metrics();
        let longest = waits.iter().max_by_key(|w| w.max_micros);
        let (cache, cache_usage, cache_capacity) = inner.table_cache.block_cache_figures();
        let (prefix_checks, prefix_skips) = inner.table_cache.prefix_filter_figures();
        Metrics {
            levels: (0..NUM_LEVELS)
                .map(|l| LevelMetrics {
                    files: v.files(l).len(),
                    bytes: v.level_bytes(l),
                    target_bytes: targets.target[l],
                    score: sub_scores[l],
                })
                .collect(),
            base_level: targets.base_level,
            l0_files: v.files(0).len(),
            l0_sublevels: sub.read_amplification(),
            peak_l0_files: ld(&st.peak_l0_files),
            peak_l0_sublevels: ld(&st.peak_l0_sublevels),
            compaction_debt: picker::compaction_debt(v, &targets),
            memtable_bytes: sv.mem.approximate_memory_usage(),
            immutable_memtables: sv.imm.len(),
            flushes: ld(&st.flushes),
            compactions: ld(&st.compactions),
            moves: ld(&st.moves),
            running_compactions: running,
            peak_running_compactions: ld(&st.peak_running_compactions),
            bytes_flushed: ld(&st.bytes_flushed),
            bytes_compacted_read: ld(&st.bytes_compacted_read),
            bytes_compacted_written: ld(&st.bytes_compacted_written),
            bytes_ingested: ld(&st.bytes_ingested),
            ingests: ld(&st.ingests),
            ingests_flushable: ld(&st.ingests_flushable),
            ingests_as_batch: ld(&st.ingests_as_batch),
            ingest_micros: ld(&st.ingest_micros),
            ingest_prepare_micros: ld(&st.ingest_prepare_micros),
            ingest_dir_sync_micros: ld(&st.ingest_dir_sync_micros),
            ingest_commit_micros: ld(&st.ingest_commit_micros),
            ingest_manifest_sync_micros: ld(&st.ingest_manifest_sync_micros),
            excises: ld(&st.excises),
            excise_fallbacks: ld(&st.excise_fallbacks),
            excise_retries: ld(&st.excise_retries),
            compactions_cancelled: ld(&st.compactions_cancelled),
            virtual_files: v.all_files().filter(|(_, f)| f.is_virtual()).count(),
            backing_tables: v
                .all_files()
                .filter_map(|(_, f)| f.backing)
                .collect::<std::collections::HashSet<_>>()
                .len(),
            ingested_per_level: st.ingested_per_level.lock().to_vec(),
            user_bytes: user,
            wal_bytes: ld(&st.wal_bytes),
            write_amplification: if user == 0 {
                0.0
            } else {
                written as f64 / user as f64
            },
            read_amplification: 1 + sv.imm.len() + sub.read_amplification() + nonempty,
            stalls: st.stalls(),
            longest_write_wait_micros: longest.map_or(0, |w| w.max_micros),
            longest_write_wait_cause: longest.map(|w| w.cause.clone()).unwrap_or_default(),
            write_waits: waits.clone(),
            last_sequence: self.latest_sequence(),
            block_cache_hits: cache.hits,
            block_cache_misses: cache.misses,
            block_cache_inserts: cache.inserts,
            block_cache_evictions: cache.evictions,
            block_cache_usage: cache_usage as u64,
            block_cache_capacity: cache_capacity as u64,
            prefix_filter_checks: prefix_checks,
            prefix_filter_skips: prefix_skips,
        }
    }

    /// Stops background work, syncs the WAL and releases the directory's
    /// LOCK, so the database can be opened again at once, and reports any
    /// error (a failed sync, or the background error that stopped the
    /// database). Dropping a `Db` closes it too, but can only discard the
    /// error: call `close` to see it.
    ///
    /// It takes `&self`, so a `Db` shared in an [`Arc`] can be closed
    /// through any clone (see [`Db`]). Calls running in other threads
    /// finish first (a write either commits before the close or fails);
    /// every later call fails with [`Error::InvalidArgument`] saying the
    /// database is closed, a second `close` too, and a call made while the
    /// close runs waits for it and then fails so. The infallible
    /// [`metrics`](Self::metrics) and
    /// [`latest_sequence`](Self::latest_sequence) go on answering with the
    /// figures at the close; [`snapshot`](Self::snapshot) gives a snapshot
    /// whose reads fail. The event listener has heard every event when it
    /// returns (unless the listener itself calls it: then it hears the
    /// rest once it returns), and its thread is gone.
    ///
    /// A [`Snapshot`] or iterator made before the close goes on working
    /// and does not keep the next open out: it writes nothing, and goes on
    /// reading what it saw from memory and from the tables it has open; a
    /// table it had not opened yet that the next open's compactions delete
    /// is an I/O error (table numbers are never reused, so never a wrong
    /// answer).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = strata::Db::open_default(dir.path())?;
    /// db.put("k", "v")?;
    /// let it = db.iter();
    /// db.close()?; // the WAL is synced: "k" survives a power cut
    /// assert!(db.put("k2", "v").unwrap_err().to_string().contains("is closed"));
    /// assert!(db.close().is_err(), "closed already");
    /// assert_eq!(it.count(), 1, "an iterator made before goes on");
    /// let again = strata::Db::open_default(dir.path())?; // the LOCK is free
    /// assert_eq!(again.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<()> {
        match self.shutdown() {
            Some(r) => r,
            None => Err(self.inner.closed_error()),
        }
    }

    /// Closes the database unless a close already has (`None`; a close
    /// running in another thread is waited for).
    fn shutdown(&self) -> Option<Result<()>> {
        let _one = self.closing.lock();
        if self.inner.closed.load(Ordering::Acquire) {
            return None;
        }
        // Calls on the directory in progress (an ingestion, a flush) end
        // first; none starts after this (`Db::enter`)...
        let ops = self.inner.ops.write();
        // ...then reads and writes are refused, and the writes already in
        // the commit pipeline (counted in `writers_in` before they looked
        // at `closed`) are waited for: none commits after the WAL's last
        // sync below, or after the LOCK is released.
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.commit.wait_writers_out();
        let r = self.stop_and_sync();
        drop(ops);
        Some(r)
    }

    /// Stops the background threads, syncs the WAL and the MANIFEST, lets
    /// the listener hear the last events and releases the LOCK.
    fn stop_and_sync(&self) -> Result<()> {
        if self.inner.shutting_down.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        {
            let _st = self.inner.state.lock();
            self.inner.bg_cv.notify_all();
        }
        self.inner.commit.unpark_flusher();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        // The background jobs' last records (a flush leaves its own
        // unsynced, `db::flush`), so the next open need not replay what
        // is already in tables. An error here leaves the WAL to recover
        // from: the WAL is still synced below.
        let manifest = self.inner.manifest.sync();
        let r = match self.inner.commit.sync_wal(&self.inner) {
            Err(e) => {
                self.inner.commit.write_out_on_error();
                Err(e)
            }
            Ok(()) => {
                self.inner.commit.discard_spare(&self.inner);
                match self.inner.bg_error() {
                    Some(e) => Err(e),
                    None => manifest,
                }
            }
        };
        // Nothing writes to the directory any more: what outlives the
        // handle (a snapshot, an iterator) only reads, from memory and from
        // tables, whose numbers the next open never reuses. So the LOCK
        // goes now, and the next open need not wait for those to drop.
        self.inner.events.close();
        // The MANIFEST's file goes now, not when the last handle on the
        // database's state does (`ManifestLog::close`).
        self.inner.manifest.close();
        drop(self.inner.lock.lock().take());
        r
    }
}

impl Drop for Db {
    /// Closes the database if `close` did not; its error, if any, is lost
    /// (hence `close`).
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
