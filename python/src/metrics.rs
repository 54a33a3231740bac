//! `db.metrics()`: the engine's [`strata::Metrics`] as a Python dict, one
//! key per field (levels as a list of dicts, L0 first; stalls as a list of
//! dicts).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The metrics as a dict.
pub fn to_dict<'py>(py: Python<'py>, m: &strata::Metrics) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let levels = PyList::empty(py);
    for l in &m.levels {
        let ld = PyDict::new(py);
        ld.set_item("files", l.files)?;
        ld.set_item("bytes", l.bytes)?;
        ld.set_item("target_bytes", l.target_bytes)?;
        ld.set_item("score", l.score)?;
        levels.append(ld)?;
    }
    d.set_item("levels", levels)?;
    let stalls = PyList::empty(py);
    for s in &m.stalls {
        let sd = PyDict::new(py);
        sd.set_item("cause", &s.cause)?;
        sd.set_item("count", s.count)?;
        sd.set_item("micros", s.micros)?;
        stalls.append(sd)?;
    }
    d.set_item("stalls", stalls)?;
    d.set_item("ingested_per_level", m.ingested_per_level.clone())?;
    let u = [
        ("peak_l0_files", m.peak_l0_files),
        ("peak_l0_sublevels", m.peak_l0_sublevels),
        ("compaction_debt", m.compaction_debt),
        ("flushes", m.flushes),
        ("compactions", m.compactions),
        ("moves", m.moves),
        ("peak_running_compactions", m.peak_running_compactions),
        ("bytes_flushed", m.bytes_flushed),
        ("bytes_compacted_read", m.bytes_compacted_read),
        ("bytes_compacted_written", m.bytes_compacted_written),
        ("bytes_ingested", m.bytes_ingested),
        ("ingests", m.ingests),
        ("ingests_flushable", m.ingests_flushable),
        ("ingests_as_batch", m.ingests_as_batch),
        ("ingest_micros", m.ingest_micros),
        ("ingest_prepare_micros", m.ingest_prepare_micros),
        ("ingest_dir_sync_micros", m.ingest_dir_sync_micros),
        ("ingest_commit_micros", m.ingest_commit_micros),
        ("ingest_manifest_sync_micros", m.ingest_manifest_sync_micros),
        ("excises", m.excises),
        ("excise_fallbacks", m.excise_fallbacks),
        ("excise_retries", m.excise_retries),
        ("compactions_cancelled", m.compactions_cancelled),
        ("user_bytes", m.user_bytes),
        ("wal_bytes", m.wal_bytes),
        ("last_sequence", m.last_sequence),
    ];
    for (k, v) in u {
        d.set_item(k, v)?;
    }
    let z = [
        ("base_level", m.base_level),
        ("l0_files", m.l0_files),
        ("l0_sublevels", m.l0_sublevels),
        ("memtable_bytes", m.memtable_bytes),
        ("immutable_memtables", m.immutable_memtables),
        ("running_compactions", m.running_compactions),
        ("virtual_files", m.virtual_files),
        ("backing_tables", m.backing_tables),
        ("read_amplification", m.read_amplification),
    ];
    for (k, v) in z {
        d.set_item(k, v)?;
    }
    d.set_item("write_amplification", m.write_amplification)?;
    Ok(d)
}
