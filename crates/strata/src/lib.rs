//! Strata: an embedded LSM key-value storage engine built for bulk loading.
//!
//! Keys and values are byte strings; a [`Db`] keeps them sorted by key, so
//! besides point reads it serves ordered scans, ranges and prefixes. Data
//! can be written one key at a time, in atomic [`WriteBatch`]es, or built
//! offline into sorted files with an [`SstWriter`] and ingested whole with
//! [`Db::ingest`] (the fast path for bulk loads). Table files use RocksDB's
//! block-based format, so RocksDB's `sst_dump` reads them and RocksDB's
//! `SstFileWriter` output can be ingested.
//!
//! # Quick start
//!
//! ```
//! use strata::{Db, IngestOptions, SstOptions, SstWriter, WriteBatch, WriteOptions};
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("my-db");
//! let db = Db::open_default(&path)?; // creates the database if missing
//! db.put("user:1", "ada")?; // keys and values: anything AsRef<[u8]>
//! assert_eq!(db.get("user:1")?, Some(b"ada".to_vec()));
//!
//! let mut batch = WriteBatch::new(); // applied atomically
//! batch.put("user:2", "grace").delete("user:1");
//! db.write(batch, &WriteOptions { sync: true })?; // durable when it returns
//!
//! let snap = db.snapshot(); // a consistent view that later writes do not change
//! db.put("user:2", "hopper")?;
//! assert_eq!(snap.get("user:2")?, Some(b"grace".to_vec()));
//!
//! // Bulk load: write sorted keys into a table file, then ingest it whole.
//! let sst = dir.path().join("bulk.sst");
//! let mut w = SstWriter::create(&sst, SstOptions::for_ingestion())?;
//! w.put("user:3", "linus")?;
//! w.put("user:4", "barbara")?;
//! w.finish()?;
//! db.ingest(&[&sst], &IngestOptions::default())?;
//!
//! // Iterators are std iterators, in both directions.
//! let keys: Vec<Vec<u8>> = db
//!     .prefix("user:")
//!     .rev()
//!     .map(|kv| kv.map(|(k, _)| k))
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(keys, [b"user:4".to_vec(), b"user:3".to_vec(), b"user:2".to_vec()]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Runnable programs for the common tasks are in `crates/strata/examples/`.
//!
//! # The public API
//!
//! Everything a program needs is re-exported at the crate root: [`Db`] and
//! its [`Options`], [`WriteOptions`], [`ReadOptions`], [`WriteBatch`],
//! [`Snapshot`], the iterators, [`SstWriter`] with [`SstOptions`], ingestion
//! ([`IngestOptions`], [`IngestResult`]), [`Metrics`] and [`Error`]. The
//! [`sstable`] module holds the table-file types, [`vfs`] the file-system
//! boundary (an in-memory [`vfs::MemVfs`] makes tests fast, and
//! [`vfs::FaultVfs`] simulates power cuts and injects I/O errors), and
//! [`check`] verifies a database directory without changing it (what
//! `strata check` runs). [`events`] holds the typed engine events (the
//! listener in [`Options`] and the `EVENTS` log format), and [`inspect`]
//! reads a database directory's history (its MANIFEST as version edits, its
//! `EVENTS` log) without opening it, for tools like the visualiser.
//!
//! The modules `cache`, `iter`, `key`, `memtable`, `util`, `version` and
//! `wal`, and the items marked hidden in `sstable`, are the engine's
//! internals. They are `pub` only because the `strata` command line tool,
//! the integration tests and the benchmarks exercise them directly; they
//! are `#[doc(hidden)]`, are not part of the API and change without notice.
//! `docs/architecture.md` describes them.

mod compaction;
mod db;
mod error;

#[doc(hidden)]
pub mod cache;
pub mod check;
pub mod events;
pub mod inspect;
#[doc(hidden)]
pub mod iter;
#[doc(hidden)]
pub mod key;
#[doc(hidden)]
pub mod memtable;
pub mod sstable;
#[doc(hidden)]
pub mod util;
#[doc(hidden)]
pub mod version;
pub mod vfs;
#[doc(hidden)]
pub mod wal;

pub use db::{
    ingest::{IngestOptions, IngestResult},
    repair::RepairReport,
    thread_write_waits,
    write_batch::{BatchIter, BatchOp},
    CompactionOptions, Db, DbIterator, KvPair, LevelMetrics, Metrics, Options, RawIterator,
    ReadOptions, Snapshot, StallMetrics, WriteBatch, WriteOptions, WriteWaitMetrics,
};
pub use error::{Error, Result};
pub use sstable::{CompressionType, SstInfo, SstOptions, SstWriter};
pub use util::checksum::ChecksumType;
