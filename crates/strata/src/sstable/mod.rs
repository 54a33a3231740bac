//! Sorted string tables in RocksDB's block-based table format
//! (format_version 5).
