//! Sorted string tables in RocksDB's block-based table format
//! (format_version 5).
//!
//! The readers `Table`, `format` and `properties` are `#[doc(hidden)]`:
//! `strata sst dump` and `strata sst verify` read a table through them,
//! and they are not API. The block, block-builder and filter modules and
//! the meta-block names are internals (public only with the `internals`
//! feature; see the crate's documentation).

#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod block;
#[cfg(not(feature = "internals"))]
pub(crate) mod block;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod block_builder;
#[cfg(not(feature = "internals"))]
pub(crate) mod block_builder;
mod compression;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod filter;
#[cfg(not(feature = "internals"))]
pub(crate) mod filter;
#[doc(hidden)]
pub mod format;
mod prefix;
#[doc(hidden)]
pub mod properties;
mod read_window;
mod sst_reader;
mod writer;

pub use compression::{CompressionType, PROBE_EVERY, SKIP_AFTER};
pub use prefix::{CappedPrefix, FixedPrefix, PrefixExtractor};
pub use properties::TableProperties;
pub use sst_reader::{SstReader, TableEntries, TableEntry};
#[cfg(not(feature = "internals"))]
pub(crate) use writer::PROPERTIES_BLOCK_NAME;
pub use writer::{SstInfo, SstOptions, SstWriter};
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use writer::{PROPERTIES_BLOCK_NAME, RANGE_DEL_BLOCK_NAME};
#[doc(hidden)]
pub mod reader;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use reader::{Found, IndexEntries};
#[cfg(not(feature = "internals"))]
pub(crate) use reader::{Found, IndexEntries};
#[doc(hidden)]
pub use reader::{RangeTombstone, Table, TableIter, TableOptions};
