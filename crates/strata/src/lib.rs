//! Strata: an embedded LSM key-value storage engine built for bulk loading.
//!
//! The crate is organised the way data moves through it:
//! - [`db`]: the database ([`Db`]): the commit pipeline (write path), the
//!   read path, flushes, recovery;
//! - [`memtable`]: the concurrent arena skiplist that takes writes first;
//! - [`wal`]: the log-file record format of the write-ahead log and the
//!   MANIFEST, with its torn-tail rule;
//! - [`version`]: which table files make up the database, by level, and the
//!   MANIFEST that records it;
//! - [`sstable`]: the immutable sorted files (RocksDB block-based table
//!   format), their writer ([`sstable::SstWriter`]) and reader
//!   ([`sstable::Table`]);
//! - [`iter`]: merging, range-deletion and user-facing iterators;
//! - [`cache`]: the block cache shared by all table readers;
//! - [`vfs`]: the file-system boundary (OS and in-memory);
//! - [`key`]: internal keys (user key + sequence number + kind);
//! - [`util`]: integer coding, checksums and hashes;
//! - [`events`]: typed engine events, the listener in [`Options`] and the
//!   `EVENTS` log format;
//! - [`inspect`]: read-only access to a database directory's history (its
//!   MANIFEST as version edits, its `EVENTS` log) for tools like the
//!   visualiser, without opening the database.

pub mod cache;
pub mod compaction;
pub mod db;
pub mod error;
pub mod events;
pub mod inspect;
pub mod iter;
pub mod key;
pub mod memtable;
pub mod sstable;
pub mod util;
pub mod version;
pub mod vfs;
pub mod wal;

pub use db::{
    ingest::{IngestOptions, IngestResult},
    CompactionOptions, Db, LevelMetrics, Metrics, Options, ReadOptions, Snapshot, StallMetrics,
    WriteBatch, WriteOptions,
};
pub use error::{Error, Result};
