//! Options for opening a database, writing and reading.
//!
//! Durability, in one place (the commit pipeline in `db::commit` is the
//! authority): a write returns once it is in the WAL's buffer and the
//! memtable. With [`WriteOptions::sync`] the WAL is fsynced first, so the
//! write survives a power cut. Without it, when the write reaches the
//! operating system depends on [`Options::wal_flush_interval`]: zero hands
//! it over before `write` returns (it then survives the process crashing,
//! not the machine); the default 1 ms leaves it in Strata's buffer for up to
//! that long, so a process crash may lose the last millisecond of unsynced
//! writes. A synced write also makes every earlier write durable (the WAL is
//! one file, synced up to its end). `Db::close` and dropping the `Db` sync
//! the WAL; `Db::flush` writes the memtables to table files.
//!
//! Validation: `Options::check` is the one gate every open passes (read-write
//! and read-only) before it touches the directory. Each option's doc comment
//! states its allowed range, and `check` refuses a value outside it with
//! `Error::InvalidArgument` naming the field and the range. It refuses
//! exactly the values and combinations that would panic, abort or leave
//! writes waiting for ever; values that are merely slow (a 1-byte memtable
//! flushes on every write) are the caller's choice.

use super::Snapshot;
pub use crate::compaction::picker::CompactionOptions;
use crate::events::EventListener;
use crate::sstable::SstOptions;
use crate::vfs::Vfs;
use std::sync::Arc;
use std::time::Duration;

/// How a database is opened and run. `Options::default()` suits most uses;
/// change fields with struct-update syntax.
///
/// ```
/// use strata::{Db, Options};
/// use std::time::Duration;
///
/// # let dir = tempfile::tempdir()?;
/// let opts = Options {
///     memtable_size: 16 << 20,
///     wal_flush_interval: Duration::ZERO, // a process crash loses nothing
///     ..Options::default()
/// };
/// let db = Db::open(dir.path(), opts)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Options {
    /// Create the database if the directory holds none (default: true).
    /// When false, opening a path that is not a database fails with
    /// [`Error::NotFound`](crate::Error::NotFound) or
    /// [`Error::NotADatabase`](crate::Error::NotADatabase) and creates
    /// nothing.
    pub create_if_missing: bool,
    /// Fail if a database already exists there (default: false).
    pub error_if_exists: bool,
    /// A memtable is rotated onto the immutable queue when it reaches this
    /// many bytes. At least 1. Not clamped upward (RocksDB raises small
    /// values to 64 KiB): a memtable of a few bytes is flushed after every
    /// write, which is slow but correct, and tests use tiny memtables to
    /// make flushes and compactions happen.
    pub memtable_size: usize,
    /// Immutable memtables waiting for flush; writers stop when the queue is
    /// full (the memtable is then full too). At least 1.
    pub max_immutable_memtables: usize,
    /// Byte budget of the block cache shared by all tables.
    pub block_cache_bytes: usize,
    /// Table readers kept open.
    pub max_open_files: usize,
    /// How flushes build table files (the `external` flag is ignored).
    /// `sst.compression` must be one Strata writes (`None`, `Snappy`,
    /// `Lz4`, `Zstd`): the others are read from existing tables only, and
    /// the first flush would fail.
    pub sst: SstOptions,
    /// File system; `None` for the operating system's. Tests use
    /// [`MemVfs`](crate::vfs::MemVfs).
    pub vfs: Option<Arc<dyn Vfs>>,
    /// How levels are sized and compactions picked.
    pub compaction: CompactionOptions,
    /// Compactions that may run at once, each on a thread of its own
    /// started at open: 1 to [`Options::MAX_BACKGROUND_COMPACTIONS`] (256).
    /// Default: the number of cores, at most 256. 0 is taken as 1: it does
    /// not turn compactions off (without them L0 would deepen until writes
    /// stopped for good). Values past the cap are refused: a million asked
    /// for a million threads and the process aborted.
    pub max_background_compactions: usize,
    /// L0 depth (sublevels) at which writes are slowed down: 1 to
    /// `l0_stop_sublevels`.
    pub l0_slowdown_sublevels: usize,
    /// L0 depth at which writes stop until compactions catch up. At least
    /// 1, and at least `compaction.l0_compaction_threshold` unless it is
    /// at least a nonzero `compaction.l0_compaction_file_threshold`: the
    /// stop must be a depth at which L0 is compacted. Below both, L0 is
    /// not compacted at the depth that stops writes (once the memtables
    /// already queued are flushed, nothing adds to it while they are
    /// stopped), and they stay stopped; `open` refuses it.
    /// (L0 scores on its depth, or on its file count, which is never
    /// smaller than its depth: see `compaction::picker`.)
    pub l0_stop_sublevels: usize,
    /// Compaction debt (bytes) at which writes are slowed down.
    pub slowdown_debt_bytes: u64,
    /// Write rate (bytes/s) allowed when a slowdown starts; it halves for
    /// every further sublevel of depth.
    pub slowdown_rate: u64,
    /// How long a write made without `sync` may wait in Strata's WAL buffer
    /// before it is handed to the operating system. Zero hands every write
    /// over before it returns (a process crash then loses nothing; this is
    /// RocksDB's behaviour); the default 1 ms saves a system call per
    /// write, and a process crash may lose the last millisecond of unsynced
    /// writes (Pebble's behaviour). Either way a machine crash or power cut
    /// may lose unsynced writes; writes with [`WriteOptions::sync`] are
    /// durable when they return. With a nonzero interval the WAL thread
    /// also prepares the next WAL and memtable and, after a memtable
    /// rotation, syncs the old WAL and starts its flush, all within one
    /// interval, so keep it short. At most
    /// [`Options::MAX_WAL_FLUSH_INTERVAL`] (60 s): the interval is how much
    /// unsynced data a process crash may lose, and a longer one is far
    /// more likely a unit mistake (seconds for milliseconds) than a
    /// choice. `close` does not wait for the interval to end.
    pub wal_flush_interval: Duration,
    /// A foreground write that waits this long or longer on one cause (a
    /// memtable rotation, the WAL, a stop, the commit queue) is logged as a
    /// [`Event::WriteWait`](crate::events::Event::WriteWait); every wait is
    /// counted in [`Metrics::write_waits`](crate::Metrics::write_waits).
    pub slow_write_event: Duration,
    /// Whether the writers of one commit group insert their own batches
    /// into the memtable at once, each on its own thread (RocksDB's
    /// `allow_concurrent_memtable_write`, also on by default). Off, the
    /// group's leader inserts every batch itself. Either way a group is
    /// published whole, after its last insert, and groups in sequence
    /// order.
    pub concurrent_memtable_writes: bool,
    /// Whether write groups overlap (Pebble's commit pipeline; needs
    /// `concurrent_memtable_writes`): a group leaves the commit queue as
    /// soon as its sequence numbers are assigned and its WAL record is
    /// framed, so the next group forms and frames while this one inserts
    /// into the memtable. Groups still publish in sequence order: a read
    /// never sees a write whose group before it is not fully inserted. A
    /// lone writer (nobody queued, nothing still inserting) keeps the queue
    /// and inserts as before. Off (the default), a group leaves the queue
    /// only once published. Off by default because on the 2-core machine
    /// the benchmarks run on it did not pay: 4 writers gave 0.29-0.40x
    /// the puts/s of the unpipelined path on the quiet machine (about the
    /// same under load; docs/benchmarks.md, "Where Strata loses", and
    /// docs/bench-history/w4-foreground-latency.md, pipelined write groups); each write then
    /// waits for the groups before it to be scheduled, which on two cores
    /// they often are not.
    pub pipelined_commit: bool,
    /// How much lower than the thread that opens the database the flush
    /// and compaction threads run: their nice value is the opener's plus
    /// this (at most 19; Linux only, elsewhere ignored), as RocksDB's
    /// `Env::LowerThreadPoolCPUPriority` does. Zero leaves them at the
    /// opener's priority. Default 10 (about a tenth of the CPU share of a
    /// normal thread when both want the same core).
    ///
    /// Why: on a busy machine a compaction that wakes up takes the core
    /// from a foreground Put in the middle of its memtable insert, and the
    /// Put waits until the next scheduler tick (4 ms on a 250 Hz kernel);
    /// at a lower priority the background thread rarely preempts a normal
    /// one. The WAL thread, the memtable prefault thread and the ingest
    /// call's helper keep the application's priority: foreground writes
    /// wait for their work.
    ///
    /// Trade-off: when the application's threads (or other processes at
    /// normal priority) keep every core busy, flushes and compactions get
    /// a small share and fall behind. The tree is still protected: writes
    /// are slowed down as L0 deepens or compaction debt grows
    /// (`l0_slowdown_sublevels`, `slowdown_debt_bytes`) and stop when the
    /// immutable memtable queue is full or L0 reaches
    /// `l0_stop_sublevels`; a stopped writer sleeps, leaving its core to
    /// the background threads, so the backlog is bounded as before and
    /// only the write rate at which stalls begin is lower. A thread
    /// whose priority cannot be lowered (not permitted) keeps the
    /// opener's: opening never fails for it.
    pub background_nice: u8,
    /// Receives every engine event, on a thread of its own, in the order
    /// of the `EVENTS` log (see [`EventListener`] for what it may call);
    /// the log gets them either way.
    pub event_listener: Option<Arc<dyn EventListener>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            memtable_size: 64 << 20,
            max_immutable_memtables: 4,
            block_cache_bytes: 256 << 20,
            max_open_files: 1000,
            sst: SstOptions::default(),
            vfs: None,
            compaction: CompactionOptions::default(),
            max_background_compactions: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .min(Options::MAX_BACKGROUND_COMPACTIONS),
            l0_slowdown_sublevels: 12,
            l0_stop_sublevels: 24,
            slowdown_debt_bytes: 4 << 30,
            slowdown_rate: 64 << 20,
            wal_flush_interval: Duration::from_millis(1),
            slow_write_event: Duration::from_millis(10),
            concurrent_memtable_writes: true,
            pipelined_commit: false,
            background_nice: 10,
            event_listener: None,
        }
    }
}

impl Options {
    /// The most compaction threads an open starts
    /// ([`Options::max_background_compactions`]). Compactions run on
    /// disjoint key ranges of the tree, so far fewer than this ever find
    /// work at once; the cap keeps a mistyped value from asking the
    /// operating system for a thread per slot (a million aborted the
    /// process after about 16,000).
    pub const MAX_BACKGROUND_COMPACTIONS: usize = 256;

    /// The longest [`Options::wal_flush_interval`]: a minute of unsynced
    /// writes that a process crash may lose.
    pub const MAX_WAL_FLUSH_INTERVAL: Duration = Duration::from_secs(60);

    /// Refuses values with which `open` or the database would fail later
    /// (a panic, an abort, a write that never returns, a flush that always
    /// fails), before `open` creates or reads anything. Each message names
    /// the option, its value and the allowed range.
    ///
    /// - A memtable of no bytes or a queue of no immutable memtables: every
    ///   write would wait for room that never comes.
    /// - An L0 stop at depth 0 (every write would stop), a slowdown at
    ///   depth 0 (its depth arithmetic starts at 1) or deeper than the stop
    ///   (RocksDB sanitises the same).
    /// - An L0 stop at a depth that triggers no L0 compaction: below
    ///   `compaction.l0_compaction_threshold` and below (or without) a
    ///   `compaction.l0_compaction_file_threshold`. At the stop L0 is at
    ///   least `l0_stop_sublevels` deep and holds at least that many files
    ///   (the depth counts files stacked on one key), so one of the two terms
    ///   of L0's score is 1 or more exactly when the stop reaches a
    ///   threshold; else the writers wait for a compaction the picker
    ///   never picks (once the queued memtables are flushed, nothing
    ///   deepens L0 while they wait).
    /// - `compaction.level_multiplier` 0 (level targets divide by it).
    /// - `max_background_compactions` above
    ///   [`Options::MAX_BACKGROUND_COMPACTIONS`] (0 is taken as 1).
    /// - An `sst.compression` Strata reads but cannot write.
    /// - A `wal_flush_interval` above [`Options::MAX_WAL_FLUSH_INTERVAL`].
    pub(crate) fn check(&self) -> crate::Result<()> {
        let bad = |what: String| Err(crate::Error::invalid(format!("Options: {what}")));
        if self.memtable_size == 0 {
            return bad("memtable_size must be at least 1 byte".into());
        }
        if self.max_immutable_memtables == 0 {
            return bad(
                "max_immutable_memtables must be at least 1 (a full memtable waits \
                        there for its flush)"
                    .into(),
            );
        }
        if self.l0_stop_sublevels == 0 {
            return bad("l0_stop_sublevels must be at least 1 (0 stops every write)".into());
        }
        if self.l0_slowdown_sublevels == 0 {
            return bad(format!(
                "l0_slowdown_sublevels is 0; allowed: 1 to l0_stop_sublevels ({})",
                self.l0_stop_sublevels
            ));
        }
        if self.l0_slowdown_sublevels > self.l0_stop_sublevels {
            return bad(format!(
                "l0_slowdown_sublevels ({}) is above l0_stop_sublevels ({}): writes would stop \
                 before they slow down",
                self.l0_slowdown_sublevels, self.l0_stop_sublevels
            ));
        }
        let c = &self.compaction;
        let stop = self.l0_stop_sublevels;
        // The picker takes a threshold of 0 as 1 (`picker::l0_terms`).
        let by_depth = stop >= c.l0_compaction_threshold.max(1);
        let by_count = c.l0_compaction_file_threshold > 0 && stop >= c.l0_compaction_file_threshold;
        if !by_depth && !by_count {
            let files = match c.l0_compaction_file_threshold {
                0 => "0, off".to_string(),
                n => n.to_string(),
            };
            return bad(format!(
                "l0_stop_sublevels ({stop}) is below compaction.l0_compaction_threshold ({}) \
                 and compaction.l0_compaction_file_threshold ({files}): writes would stop at an \
                 L0 depth that triggers no L0 compaction, and wait for ever for a compaction \
                 that never starts; allowed: l0_stop_sublevels at least \
                 compaction.l0_compaction_threshold, or at least a nonzero \
                 compaction.l0_compaction_file_threshold",
                c.l0_compaction_threshold
            ));
        }
        if c.level_multiplier == 0 {
            return bad(
                "compaction.level_multiplier is 0; allowed: 1 or more (the size ratio between \
                 levels, which level targets are divided by)"
                    .into(),
            );
        }
        let max = Options::MAX_BACKGROUND_COMPACTIONS;
        if self.max_background_compactions > max {
            return bad(format!(
                "max_background_compactions is {}; allowed: 1 to {max}, or 0 for 1 (each is a \
                 thread started at open)",
                self.max_background_compactions
            ));
        }
        if !self.sst.compression.can_write() {
            return bad(format!(
                "sst.compression is {:?}, which Strata reads but cannot write (the first flush \
                 would fail); allowed: None, Snappy, Lz4, Zstd",
                self.sst.compression
            ));
        }
        if self.wal_flush_interval > Options::MAX_WAL_FLUSH_INTERVAL {
            return bad(format!(
                "wal_flush_interval is {:?}; allowed: 0 to {:?} (the window of unsynced \
                 writes a process crash may lose)",
                self.wal_flush_interval,
                Options::MAX_WAL_FLUSH_INTERVAL
            ));
        }
        Ok(())
    }

    /// Whether this database reads (and ingests) tables whose footer
    /// declares no block checksum. Only when it writes such tables itself
    /// (`sst.checksum` is `ChecksumType::None`): otherwise a table saying
    /// "none" is far likelier a flipped footer bit (format_version 5
    /// footers carry no checksum of their own) than a table made that way
    /// on purpose, and trusting it would serve unverified blocks. The
    /// table cache and ingestion both ask here.
    pub(crate) fn requires_table_checksums(&self) -> bool {
        self.sst.checksum != crate::util::checksum::ChecksumType::None
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("memtable_size", &self.memtable_size)
            .field("max_immutable_memtables", &self.max_immutable_memtables)
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field("max_open_files", &self.max_open_files)
            .field("sst", &self.sst)
            .field("vfs", &self.vfs.as_ref().map_or("os", |_| "custom"))
            .field("compaction", &self.compaction)
            .field(
                "max_background_compactions",
                &self.max_background_compactions,
            )
            .field("l0_slowdown_sublevels", &self.l0_slowdown_sublevels)
            .field("l0_stop_sublevels", &self.l0_stop_sublevels)
            .field("slowdown_debt_bytes", &self.slowdown_debt_bytes)
            .field("slowdown_rate", &self.slowdown_rate)
            .field("wal_flush_interval", &self.wal_flush_interval)
            .field("slow_write_event", &self.slow_write_event)
            .field(
                "concurrent_memtable_writes",
                &self.concurrent_memtable_writes,
            )
            .field("pipelined_commit", &self.pipelined_commit)
            .field("background_nice", &self.background_nice)
            .finish()
    }
}

/// Options of one write ([`Db::write`](crate::Db::write)).
///
/// ```
/// # use strata::{Db, WriteBatch, WriteOptions};
/// # let dir = tempfile::tempdir()?;
/// # let db = Db::open_default(dir.path())?;
/// let mut batch = WriteBatch::new();
/// batch.put("invoice-17", "paid");
/// db.write(batch, &WriteOptions { sync: true })?; // on disk when this returns
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// Sync the WAL before the write returns: the write (and every write
    /// before it) survives a machine crash or power cut. Without it, the
    /// write survives a process crash once it has reached the operating
    /// system, which [`Options::wal_flush_interval`] decides: at once when
    /// the interval is zero, within it otherwise (default 1 ms).
    pub sync: bool,
}

/// Options of a read: the snapshot to read at and, for iterators, key
/// bounds.
///
/// ```
/// # use strata::{Db, ReadOptions};
/// # let dir = tempfile::tempdir()?;
/// # let db = Db::open_default(dir.path())?;
/// db.put("a", "1")?;
/// let snap = db.snapshot();
/// db.delete("a")?;
/// let at_snap = ReadOptions { snapshot: Some(&snap), ..ReadOptions::default() };
/// assert_eq!(db.get_opt("a", &at_snap)?, Some(b"1".to_vec()));
/// assert_eq!(db.get("a")?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ReadOptions<'a> {
    /// Read as of this snapshot; `None` reads the latest data. The options
    /// borrow the snapshot, so it outlives every read made with them.
    pub snapshot: Option<&'a Snapshot>,
    /// Iterators only: keys `>= lower`.
    pub lower: Option<Vec<u8>>,
    /// Iterators only: keys `< upper`.
    pub upper: Option<Vec<u8>>,
}
