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
//! version set, the immutable queue) and is held only briefly. Lock order:
//! commit queue, then `state`.

pub mod filenames;
pub mod options;
pub mod write_batch;

mod commit;
mod compact;
pub(crate) mod events;
mod excise;
mod flush;
mod flushable;
pub mod ingest;
mod level_iter;
mod open;
mod output;
mod read;
mod recovery_checks;
pub mod repair;
mod table_cache;

pub use flushable::Flushable;
pub use options::{CompactionOptions, Options, ReadOptions, WriteOptions};
pub use read::DbIterator;
pub use write_batch::WriteBatch;

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
pub struct StallMetrics {
    pub cause: String,
    pub count: u64,
    pub micros: u64,
}

/// Per-level figures.
#[derive(Clone, Debug, Default)]
pub struct LevelMetrics {
    pub files: usize,
    pub bytes: u64,
    pub target_bytes: u64,
    pub score: f64,
}

/// Everything `Db::metrics` reports.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub levels: Vec<LevelMetrics>,
    pub base_level: usize,
    pub l0_files: usize,
    pub l0_sublevels: usize,
    pub peak_l0_files: u64,
    pub peak_l0_sublevels: u64,
    /// Bytes still to be compacted to bring every level to its target.
    pub compaction_debt: u64,
    pub memtable_bytes: usize,
    pub immutable_memtables: usize,
    pub flushes: u64,
    pub compactions: u64,
    pub moves: u64,
    pub running_compactions: usize,
    pub peak_running_compactions: u64,
    pub bytes_flushed: u64,
    pub bytes_compacted_read: u64,
    pub bytes_compacted_written: u64,
    pub bytes_ingested: u64,
    /// Ingestion calls, those that took the flushable path, those applied as
    /// write batches, and their total time.
    pub ingests: u64,
    pub ingests_flushable: u64,
    pub ingests_as_batch: u64,
    pub ingest_micros: u64,
    /// Ingest-and-excise calls whose range was cut out of the tree with
    /// virtual files, and those left to a range-tombstone file (an older
    /// snapshot needed the data).
    pub excises: u64,
    pub excise_fallbacks: u64,
    /// Excising ingestions committed a second time, with a range-tombstone
    /// file that memory or a snapshot came to need after `prepare`.
    pub excise_retries: u64,
    /// Compactions dropped at install because an excise took an input.
    pub compactions_cancelled: u64,
    /// Virtual files in the current version, and the physical tables
    /// backing them.
    pub virtual_files: usize,
    pub backing_tables: usize,
    /// (files, bytes) ingested, by the level they landed on.
    pub ingested_per_level: Vec<(u64, u64)>,
    pub user_bytes: u64,
    pub wal_bytes: u64,
    /// (WAL + flush + compaction bytes written) / user bytes.
    pub write_amplification: f64,
    /// Sources a point read may consult: memtables + L0 sublevels + non-empty
    /// lower levels.
    pub read_amplification: usize,
    pub stalls: Vec<StallMetrics>,
    pub last_sequence: u64,
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
    /// `VersionSet::has_unsynced`, readable without the state lock (a synced
    /// write checks it on every commit).
    pub manifest_unsynced: Arc<std::sync::atomic::AtomicBool>,
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
    _lock: Box<dyn std::any::Any + Send + Sync>,
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
        self.events.record(crate::events::Event::Ingest {
            sequence: seq,
            flushable: Some(flushable),
            excise: excise.map(|(a, b)| crate::events::KeyRange {
                start: a.clone(),
                end: b.clone(),
            }),
            added: events::tables(added.iter().map(|(l, f)| (*l, f))),
            removed,
        });
    }

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

    /// Logs a memtable joining the immutable queue.
    pub fn memtable_rotated(&self, memtable: u64, wal: u64, reason: &str) {
        self.events.record(crate::events::Event::MemtableRotated {
            memtable,
            wal,
            reason: reason.to_string(),
        });
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

/// An open database.
pub struct Db {
    inner: Arc<DbInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Db {
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        open::open(path.as_ref(), opts, false)
    }

    /// Opens an existing database for reading only: nothing in its
    /// directory is created, renamed or deleted (no LOCK, no new MANIFEST,
    /// no WAL), so any number of read-only opens may run at once, on a full
    /// disk or a read-only directory. The live WALs are replayed into
    /// memory, so every acknowledged write is readable. The same recovery
    /// checks as `open` run, and fail the same way. Writes, ingestions,
    /// flushes and compactions return `Error::NotSupported`. A missing path
    /// or a directory that is not a Strata database is an error; nothing is
    /// created.
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        open::open(path.as_ref(), opts, true)
    }

    /// Salvages a database that `open` refuses (a damaged or missing
    /// MANIFEST or CURRENT, missing tables): keeps every edit before the
    /// damage, drops what is gone, puts back tables whose MANIFEST record
    /// was lost, and reports exactly what was lost (see `db::repair`).
    /// Then opens and closes the database once.
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
        self.check_writable()?;
        if batch.is_empty() {
            return Ok(());
        }
        self.inner
            .commit
            .commit(&self.inner, Job::Batch(batch), opts.sync)
    }

    /// Ingests SST files (written with `SstOptions::for_ingestion` or by
    /// RocksDB's SstFileWriter): see `db::ingest` for how they are placed.
    /// The files are hard-linked (or copied) and never modified.
    pub fn ingest(
        &self,
        paths: &[PathBuf],
        opts: &ingest::IngestOptions,
    ) -> Result<ingest::IngestResult> {
        self.check_writable()?;
        let start = std::time::Instant::now();
        // Files linked by `prepare` are in no version until the commit
        // places them; the floor keeps the obsolete-file pass off them.
        let floor = self.inner.new_file_number();
        self.inner.state.lock().pending_outputs.insert(floor);
        let mut linked = Vec::new();
        let r = self.ingest_prepared(paths, opts, start, &mut linked);
        // The database owns what it ingested: with `move_files` the
        // caller's links go once the ingestion is durable, so no outside
        // path shares a live table's inode.
        let r = r.and_then(|res| {
            for p in &linked {
                self.inner.vfs.remove(p).map_err(|e| {
                    Error::invalid(format!(
                        "ingested, but the caller's link {} could not be removed ({e}); \
                         it shares its inode with a table of the database: remove it, \
                         do not modify it",
                        p.display()
                    ))
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
        match ingest::prepare(&self.inner, paths, opts)? {
            ingest::Prepare::Batch(b) => {
                self.write(b, &WriteOptions { sync: true })?;
                let st = &self.inner.stats;
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
                let slot = Arc::new(Mutex::new(None));
                let job = commit::IngestJob {
                    files,
                    excise: opts.excise.clone(),
                    allow_overlap: opts.allow_overlap_with_memtable,
                    result: Arc::clone(&slot),
                };
                self.inner
                    .commit
                    .commit(&self.inner, Job::Ingest(job), false)?;
                let outcome = slot.lock().take();
                let r = match outcome {
                    Some(commit::IngestOutcome::Done(r)) => r,
                    Some(commit::IngestOutcome::NeedTombstone(back)) => {
                        // Memory or a snapshot came to see the range after
                        // `prepare` looked: add the tombstone file, retry.
                        // The second commit never asks again.
                        let Some((a, b)) = &opts.excise else {
                            return Err(Error::invalid("tombstone asked for without an excise"));
                        };
                        files = back;
                        files.insert(0, ingest::write_excise_tombstone(&self.inner, a, b)?);
                        self.inner.vfs.sync_dir(&self.inner.dir)?;
                        self.inner
                            .stats
                            .excise_retries
                            .fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    None => return Err(Error::invalid("ingestion produced no result")),
                };
                // A queued ingestion needs the flush thread; woken only now
                // that the commit queue has moved on.
                self.inner.bg_cv.notify_all();
                // The commit wrote the MANIFEST record without waiting for
                // the disk, so the writes queued behind it could go on; the
                // ingestion is durable, and may be reported, once it is
                // synced.
                let synced = self.inner.state.lock().versions.sync_manifest();
                if let Err(e) = synced {
                    self.inner.set_bg_error(e.clone());
                    return Err(e);
                }
                self.inner
                    .stats
                    .ingest_micros
                    .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
                return Ok(r);
            },
        }
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

    /// Every file of the current version with its level, L0 first (newest
    /// first within L0), then each level in key order. Virtual files carry
    /// `backing: Some(physical table number)`.
    pub fn files(&self) -> Vec<(usize, crate::version::FileMeta)> {
        self.inner
            .super_version()
            .version
            .all_files()
            .map(|(l, f)| (l, (**f).clone()))
            .collect()
    }

    /// The newest visible sequence number.
    pub fn latest_sequence(&self) -> u64 {
        self.inner.visible_seq.load(Ordering::Acquire)
    }

    /// Moves the memtable onto the immutable queue and waits until every
    /// queued memtable is in L0.
    pub fn flush(&self) -> Result<()> {
        self.check_writable()?;
        self.inner.commit.commit(&self.inner, Job::Rotate, false)?;
        flush::wait_for_flushes(&self.inner)
    }

    /// Compacts every file overlapping `[lo, hi]` (`None`: unbounded) down
    /// the tree, after flushing the memtable.
    pub fn compact_range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
        self.check_writable()?;
        self.flush()?;
        compact::compact_range(&self.inner, lo, hi)
    }

    /// Waits until no flush or compaction is running or needed.
    pub fn wait_for_compactions(&self) -> Result<()> {
        if self.inner.read_only {
            // Nothing runs: the replayed memtables stay in memory.
            return Ok(());
        }
        flush::wait_for_flushes(&self.inner)?;
        compact::wait_for_compactions(&self.inner)
    }

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
            last_sequence: self.latest_sequence(),
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
