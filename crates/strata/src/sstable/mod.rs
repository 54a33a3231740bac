//! Sorted string tables in RocksDB's block-based table format
//! (format_version 5).

pub mod block;
pub mod block_builder;
pub mod compression;
pub mod filter;
pub mod format;
pub mod prefix;
pub mod properties;
pub mod writer;

pub use compression::CompressionType;
pub use prefix::{CappedPrefix, FixedPrefix, PrefixExtractor};
pub use properties::TableProperties;
pub use writer::{SstInfo, SstOptions, SstWriter};
pub mod reader;
pub use reader::{Found, RangeTombstone, Table, TableIter, TableOptions};
