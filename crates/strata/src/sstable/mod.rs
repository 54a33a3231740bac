//! Sorted string tables in RocksDB's block-based table format
//! (format_version 5).
//!
//! Public: [`SstWriter`] (with [`SstOptions`]) writes a table,
//! [`SstReader`] reads a table of puts back, and [`TableFile`] inspects one
//! (footer, properties, entries, range tombstones, a full verification:
//! what `strata sst dump` and `strata sst verify` show). The engine's
//! reader (`Table`, `TableIter`, `TableOptions`), the
//! block, block-builder, filter, format and properties modules and the
//! meta-block names are internals: public only with the `internals`
//! feature (see the crate's documentation).

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
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod format;
#[cfg(not(feature = "internals"))]
pub(crate) mod format;
mod prefix;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod properties;
#[cfg(not(feature = "internals"))]
pub(crate) mod properties;
mod read_window;
mod sst_reader;
mod table_file;
mod writer;

pub use compression::CompressionType;
// The writer's adaptive-compression tuning: tests only.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use compression::{PROBE_EVERY, SKIP_AFTER};
pub(crate) use prefix::{bounds_prefix, prefix_end};
pub use prefix::{CappedPrefix, FixedPrefix, PrefixExtractor};
pub use properties::TableProperties;
pub use reader::{RangeTombstone, TableStats};
pub use sst_reader::{SstReader, TableEntries, TableEntry};
pub use table_file::TableFile;
#[cfg(not(feature = "internals"))]
pub(crate) use writer::PROPERTIES_BLOCK_NAME;
pub use writer::{SstInfo, SstOptions, SstWriter};
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use writer::{PROPERTIES_BLOCK_NAME, RANGE_DEL_BLOCK_NAME};
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod reader;
#[cfg(not(feature = "internals"))]
pub(crate) mod reader;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use reader::{Found, IndexEntries};
#[cfg(not(feature = "internals"))]
pub(crate) use reader::{Found, IndexEntries};
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use reader::{Table, TableIter, TableOptions};
#[cfg(not(feature = "internals"))]
pub(crate) use reader::{Table, TableIter, TableOptions};
