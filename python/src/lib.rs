//! `strata._strata`: the Python extension module behind the `strata`
//! package (`python/strata/__init__.py` re-exports it).
//!
//! One concept per file: [`db`] (the `DB` class), [`iter`] (iterators),
//! [`reader`] (the reads `DB` and `Snapshot` share), [`snapshot`], [`batch`] (`WriteBatch`), [`sst`] (`SstWriter`),
//! [`table`] (the table layer and encoders), [`table_scan`] (`Table.scan`'s
//! lazy iterator), [`encoder`] (`TableEncoder`,
//! every index's entries of a row, for `strata.spark`), [`metrics`], [`options`]
//! (keyword arguments), [`convert`] (bytes), [`errors`] (exception classes)
//! and [`handle`] (the state a database shares with its iterators and
//! snapshots, and how `close()` releases it). The type stubs are in
//! `python/strata/_strata.pyi`.

use pyo3::prelude::*;

mod batch;
mod convert;
mod db;
mod encoder;
mod errors;
mod handle;
mod iter;
mod metrics;
mod options;
mod reader;
mod snapshot;
mod sst;
mod table;
mod table_scan;

/// The extension module.
#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<db::Db>()?;
    m.add_class::<batch::Batch>()?;
    m.add_class::<iter::DbIter>()?;
    m.add_class::<snapshot::Snapshot>()?;
    m.add_class::<sst::SstWriter>()?;
    m.add_class::<table::PyTable>()?;
    m.add_class::<table_scan::TableScan>()?;
    m.add_class::<encoder::TableEncoder>()?;
    m.add_function(wrap_pyfunction!(table::encode_key, m)?)?;
    m.add_function(wrap_pyfunction!(table::encode_row, m)?)?;
    m.add_function(wrap_pyfunction!(table::decode_row, m)?)?;
    errors::register(m)?;
    Ok(())
}
