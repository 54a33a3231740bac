//! Options for opening a database, writing and reading.

pub use crate::compaction::picker::CompactionOptions;
use crate::events::EventListener;
use crate::sstable::SstOptions;
use crate::vfs::Vfs;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone)]
pub struct Options {
    pub create_if_missing: bool,
    pub error_if_exists: bool,
    /// A memtable is rotated onto the immutable queue when it reaches this
    /// many bytes.
    pub memtable_size: usize,
    /// Immutable memtables waiting for flush; writers stop when the queue is
    /// full (the memtable is then full too).
    pub max_immutable_memtables: usize,
    /// Byte budget of the block cache shared by all tables.
    pub block_cache_bytes: usize,
    /// Table readers kept open.
    pub max_open_files: usize,
    /// How flushes build table files (the `external` flag is ignored).
    pub sst: SstOptions,
    /// File system; `None` for the operating system's.
    pub vfs: Option<Arc<dyn Vfs>>,
    pub compaction: CompactionOptions,
    /// Compactions that may run at once (default: the number of cores).
    pub max_background_compactions: usize,
    /// L0 depth (sublevels) at which writes are slowed down.
    pub l0_slowdown_sublevels: usize,
    /// L0 depth at which writes stop until compactions catch up.
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
    /// writes (Pebble's behaviour). Synced writes are durable either way.
    pub wal_flush_interval: Duration,
    /// Receives every engine event as it happens (see [`crate::events`]);
    /// the `EVENTS` log gets them either way.
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
                .unwrap_or(2),
            l0_slowdown_sublevels: 12,
            l0_stop_sublevels: 24,
            slowdown_debt_bytes: 4 << 30,
            slowdown_rate: 64 << 20,
            wal_flush_interval: Duration::from_millis(1),
            event_listener: None,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// Sync the WAL before the write returns: the write survives a machine
    /// crash. Without it a write survives a process crash only.
    pub sync: bool,
}

#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Read as of this snapshot (from `Db::snapshot`); `None` reads the
    /// latest data.
    pub snapshot: Option<u64>,
    /// Iterators only: user keys >= `lower`.
    pub lower: Option<Vec<u8>>,
    /// Iterators only: user keys < `upper`.
    pub upper: Option<Vec<u8>>,
}
