//! Sorted string tables in RocksDB's block-based table format
//! (format_version 5).

#[doc(hidden)]
pub mod block;
#[doc(hidden)]
pub mod block_builder;
mod compression;
#[doc(hidden)]
pub mod filter;
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
pub use sst_reader::SstReader;
pub use writer::{SstInfo, SstOptions, SstWriter};
#[doc(hidden)]
pub use writer::{PROPERTIES_BLOCK_NAME, RANGE_DEL_BLOCK_NAME};
#[doc(hidden)]
pub mod reader;
#[doc(hidden)]
pub use reader::{Found, IndexEntries, RangeTombstone, Table, TableIter, TableOptions};
