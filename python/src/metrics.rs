//! `db.metrics()`: the engine's [`strata::Metrics`] as a Python dict, one
//! key per field (levels, stalls and write waits as lists of dicts, L0
//! first; a histogram as a list of `(below_micros, count)` tuples).
//!
//! Every struct is destructured field by field, so each field read is
//! named here. The engine's metrics structs are `#[non_exhaustive]` (they
//! grow), so the patterns end in `..`: a field added to the engine no
//! longer fails to compile here, and needs its key added by hand.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The metrics as a dict.
pub fn to_dict<'py>(py: Python<'py>, m: &strata::Metrics) -> PyResult<Bound<'py, PyDict>> {
    let strata::Metrics {
        levels,
        base_level,
        l0_files,
        l0_sublevels,
        peak_l0_files,
        peak_l0_sublevels,
        compaction_debt,
        memtable_bytes,
        immutable_memtables,
        flushes,
        compactions,
        moves,
        running_compactions,
        peak_running_compactions,
        bytes_flushed,
        bytes_compacted_read,
        bytes_compacted_written,
        bytes_ingested,
        ingests,
        ingests_flushable,
        ingests_as_batch,
        ingest_micros,
        ingest_prepare_micros,
        ingest_dir_sync_micros,
        ingest_commit_micros,
        ingest_manifest_sync_micros,
        excises,
        excise_fallbacks,
        excise_retries,
        compactions_cancelled,
        virtual_files,
        backing_tables,
        ingested_per_level,
        user_bytes,
        wal_bytes,
        write_amplification,
        read_amplification,
        stalls,
        longest_write_wait_micros,
        longest_write_wait_cause,
        write_waits,
        last_sequence,
        block_cache_hits,
        block_cache_misses,
        block_cache_inserts,
        block_cache_evictions,
        block_cache_usage,
        block_cache_capacity,
        prefix_filter_checks,
        prefix_filter_skips,
        ..
    } = m;
    let d = PyDict::new(py);
    let list = PyList::empty(py);
    for l in levels {
        let strata::LevelMetrics {
            files,
            bytes,
            target_bytes,
            score,
            ..
        } = l;
        let ld = PyDict::new(py);
        ld.set_item("files", files)?;
        ld.set_item("bytes", bytes)?;
        ld.set_item("target_bytes", target_bytes)?;
        ld.set_item("score", score)?;
        list.append(ld)?;
    }
    d.set_item("levels", list)?;
    let list = PyList::empty(py);
    for s in stalls {
        let strata::StallMetrics {
            cause,
            count,
            micros,
            ..
        } = s;
        let sd = PyDict::new(py);
        sd.set_item("cause", cause)?;
        sd.set_item("count", count)?;
        sd.set_item("micros", micros)?;
        list.append(sd)?;
    }
    d.set_item("stalls", list)?;
    let list = PyList::empty(py);
    for w in write_waits {
        let strata::WriteWaitMetrics {
            cause,
            count,
            total_micros,
            max_micros,
            histogram,
            ..
        } = w;
        let wd = PyDict::new(py);
        wd.set_item("cause", cause)?;
        wd.set_item("count", count)?;
        wd.set_item("total_micros", total_micros)?;
        wd.set_item("max_micros", max_micros)?;
        wd.set_item("histogram", histogram.clone())?;
        list.append(wd)?;
    }
    d.set_item("write_waits", list)?;
    d.set_item("ingested_per_level", ingested_per_level.clone())?;
    d.set_item("longest_write_wait_cause", longest_write_wait_cause)?;
    let u = [
        ("peak_l0_files", peak_l0_files),
        ("peak_l0_sublevels", peak_l0_sublevels),
        ("compaction_debt", compaction_debt),
        ("flushes", flushes),
        ("compactions", compactions),
        ("moves", moves),
        ("peak_running_compactions", peak_running_compactions),
        ("bytes_flushed", bytes_flushed),
        ("bytes_compacted_read", bytes_compacted_read),
        ("bytes_compacted_written", bytes_compacted_written),
        ("bytes_ingested", bytes_ingested),
        ("ingests", ingests),
        ("ingests_flushable", ingests_flushable),
        ("ingests_as_batch", ingests_as_batch),
        ("ingest_micros", ingest_micros),
        ("ingest_prepare_micros", ingest_prepare_micros),
        ("ingest_dir_sync_micros", ingest_dir_sync_micros),
        ("ingest_commit_micros", ingest_commit_micros),
        ("ingest_manifest_sync_micros", ingest_manifest_sync_micros),
        ("excises", excises),
        ("excise_fallbacks", excise_fallbacks),
        ("excise_retries", excise_retries),
        ("compactions_cancelled", compactions_cancelled),
        ("user_bytes", user_bytes),
        ("wal_bytes", wal_bytes),
        ("longest_write_wait_micros", longest_write_wait_micros),
        ("last_sequence", last_sequence),
        ("block_cache_hits", block_cache_hits),
        ("block_cache_misses", block_cache_misses),
        ("block_cache_inserts", block_cache_inserts),
        ("block_cache_evictions", block_cache_evictions),
        ("block_cache_usage", block_cache_usage),
        ("block_cache_capacity", block_cache_capacity),
        ("prefix_filter_checks", prefix_filter_checks),
        ("prefix_filter_skips", prefix_filter_skips),
    ];
    for (k, v) in u {
        d.set_item(k, v)?;
    }
    let z = [
        ("base_level", base_level),
        ("l0_files", l0_files),
        ("l0_sublevels", l0_sublevels),
        ("memtable_bytes", memtable_bytes),
        ("immutable_memtables", immutable_memtables),
        ("running_compactions", running_compactions),
        ("virtual_files", virtual_files),
        ("backing_tables", backing_tables),
        ("read_amplification", read_amplification),
    ];
    for (k, v) in z {
        d.set_item(k, v)?;
    }
    d.set_item("write_amplification", write_amplification)?;
    Ok(d)
}
