//! Strata: an embedded LSM key-value storage engine built for bulk loading.
//!
//! The crate is organised the way data moves through it:
//! - [`sstable`]: the immutable sorted files (RocksDB block-based table
//!   format), their writer ([`SstWriter`]) and reader ([`Table`]);
//! - [`cache`]: the block cache shared by all table readers;
//! - [`vfs`]: the file-system boundary (OS and in-memory);
//! - [`key`]: internal keys (user key + sequence number + kind);
//! - [`util`]: integer coding, checksums and hashes.

pub mod cache;
pub mod error;
pub mod iter;
pub mod key;
pub mod sstable;
pub mod util;
pub mod vfs;

pub use error::{Error, Result};
