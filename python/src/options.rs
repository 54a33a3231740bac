//! Keyword arguments to engine options.
//!
//! `DB(path, **options)`, `SstWriter(path, **options)` and `db.ingest(...)`
//! take their options as keywords named after the Rust fields. An unknown
//! keyword is a `TypeError` (as for any Python function), a bad value an
//! `InvalidArgumentError`.

use crate::errors::InvalidArgumentError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;
use std::time::Duration;
use strata::sstable::{CappedPrefix, FixedPrefix, PrefixExtractor};
use strata::{ChecksumType, CompressionType, Options, SstOptions};

/// A compression name as RocksDB and the CLI spell it.
pub fn compression(s: &str) -> PyResult<CompressionType> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "none" | "no" => CompressionType::None,
        "snappy" => CompressionType::Snappy,
        "lz4" => CompressionType::Lz4,
        "zstd" => CompressionType::Zstd,
        _ => {
            return Err(InvalidArgumentError::new_err(format!(
                "compression {s:?}: use none, snappy, lz4 or zstd"
            )))
        }
    })
}

/// A checksum name.
pub fn checksum(s: &str) -> PyResult<ChecksumType> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "none" => ChecksumType::None,
        "crc32c" => ChecksumType::Crc32c,
        "xxhash" => ChecksumType::XxHash,
        "xxhash64" => ChecksumType::XxHash64,
        "xxh3" => ChecksumType::Xxh3,
        _ => {
            return Err(InvalidArgumentError::new_err(format!(
                "checksum {s:?}: use none, crc32c, xxhash, xxhash64 or xxh3"
            )))
        }
    })
}

/// A prefix extractor: `"fixed:N"` (the first N bytes; shorter keys have
/// no prefix) or `"capped:N"` (at most the first N bytes), or the name a
/// table records for one (`"rocksdb.FixedPrefix.N"`,
/// `"rocksdb.CappedPrefix.N"`); `None` for none.
pub fn prefix_extractor(v: &Bound<'_, PyAny>) -> PyResult<Option<Arc<dyn PrefixExtractor>>> {
    let Some(s) = v.extract::<Option<String>>()? else {
        return Ok(None);
    };
    let bad = || {
        InvalidArgumentError::new_err(format!(
            "prefix_extractor {s:?}: use \"fixed:N\" or \"capped:N\" (N bytes), or None"
        ))
    };
    let (kind, n) = s
        .split_once(':')
        .or_else(|| s.strip_prefix("rocksdb.").and_then(|r| r.rsplit_once('.')))
        .ok_or_else(bad)?;
    let n: usize = n.parse().map_err(|_| bad())?;
    Ok(Some(match kind {
        "fixed" | "FixedPrefix" => Arc::new(FixedPrefix(n)),
        "capped" | "CappedPrefix" => Arc::new(CappedPrefix(n)),
        _ => return Err(bad()),
    }))
}

/// Applies one table-file option; false if `key` is not one.
fn sst_option(o: &mut SstOptions, key: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    match key {
        "compression" => o.compression = compression(&v.extract::<String>()?)?,
        "checksum" => o.checksum = checksum(&v.extract::<String>()?)?,
        "block_size" => o.block_size = positive(v, key)?,
        "block_restart_interval" => o.block_restart_interval = positive(v, key)?,
        "bloom_bits_per_key" => o.bloom_bits_per_key = v.extract::<Option<f64>>()?,
        "whole_key_filtering" => o.whole_key_filtering = v.extract()?,
        "prefix_extractor" => o.prefix_extractor = prefix_extractor(v)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn positive(v: &Bound<'_, PyAny>, key: &str) -> PyResult<usize> {
    // Extracted signed, so a negative value is the same `InvalidArgumentError`
    // as 0 (as `usize` it would be an `OverflowError`).
    let n: i64 = v.extract()?;
    match usize::try_from(n) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(InvalidArgumentError::new_err(format!(
            "{key} must be positive, not {n}"
        ))),
    }
}

fn unknown(key: &str, what: &str) -> PyErr {
    PyTypeError::new_err(format!("{what} got an unexpected keyword argument {key:?}"))
}

/// `DB(path, **options)`: the engine options and whether to open read-only.
pub fn db_options(kw: Option<&Bound<'_, PyDict>>) -> PyResult<(Options, bool)> {
    let mut o = Options::default();
    let mut read_only = false;
    let Some(kw) = kw else {
        return Ok((o, read_only));
    };
    for (k, v) in kw.iter() {
        let key: String = k.extract()?;
        match key.as_str() {
            "create_if_missing" => o.create_if_missing = v.extract()?,
            "error_if_exists" => o.error_if_exists = v.extract()?,
            "read_only" => read_only = v.extract()?,
            "memtable_size" => o.memtable_size = positive(&v, &key)?,
            "max_immutable_memtables" => o.max_immutable_memtables = positive(&v, &key)?,
            "block_cache_bytes" => o.block_cache_bytes = v.extract()?,
            "max_open_files" => o.max_open_files = positive(&v, &key)?,
            "max_background_compactions" => o.max_background_compactions = positive(&v, &key)?,
            "wal_flush_interval" => {
                let s: f64 = v.extract()?;
                // The engine's cap (`Options::MAX_WAL_FLUSH_INTERVAL`),
                // checked here too: `from_secs_f64` panics on a negative,
                // NaN or huge value.
                let max = Options::MAX_WAL_FLUSH_INTERVAL.as_secs_f64();
                if !(0.0..=max).contains(&s) {
                    return Err(InvalidArgumentError::new_err(format!(
                        "wal_flush_interval is in seconds, 0 to {max}, not {s}"
                    )));
                }
                o.wal_flush_interval = Duration::from_secs_f64(s);
            }
            _ => {
                if !sst_option(&mut o.sst, &key, &v)? {
                    return Err(unknown(&key, "DB()"));
                }
            }
        }
    }
    Ok((o, read_only))
}

/// `SstWriter(path, **options)`: options of a file for ingestion.
pub fn sst_options(kw: Option<&Bound<'_, PyDict>>) -> PyResult<SstOptions> {
    let mut o = SstOptions::for_ingestion();
    if let Some(kw) = kw {
        for (k, v) in kw.iter() {
            let key: String = k.extract()?;
            if !sst_option(&mut o, &key, &v)? {
                return Err(unknown(&key, "SstWriter()"));
            }
        }
    }
    Ok(o)
}
