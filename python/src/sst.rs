//! `strata.SstWriter`: builds a table file for `db.ingest` (or RocksDB's
//! `IngestExternalFile`) from keys given in strictly increasing order.
//!
//! A context manager: leaving the `with` block normally finishes the file;
//! leaving it with an exception abandons it and removes the partial file.

use crate::convert::bytes_of;
use crate::errors::{db_err, InvalidArgumentError};
use crate::options::sst_options;
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// Writes one SST file for ingestion.
#[pyclass(module = "strata", name = "SstWriter")]
pub struct SstWriter {
    path: PathBuf,
    w: Mutex<Option<strata::SstWriter>>,
}

impl SstWriter {
    fn with<T>(&self, f: impl FnOnce(&mut strata::SstWriter) -> strata::Result<T>) -> PyResult<T> {
        let mut g = self.w.lock();
        match g.as_mut() {
            Some(w) => f(w).map_err(db_err),
            None => Err(InvalidArgumentError::new_err(format!(
                "SstWriter for {} is finished",
                self.path.display()
            ))),
        }
    }
}

fn info_dict<'py>(py: Python<'py>, i: &strata::SstInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("file_size", i.file_size)?;
    d.set_item("num_entries", i.num_entries)?;
    d.set_item("num_range_deletions", i.num_range_deletions)?;
    // The info holds internal keys: the user key is all but the 8-byte
    // sequence-and-kind trailer.
    let user = |k: &Option<Vec<u8>>| {
        k.as_deref()
            .map(|b| pyo3::types::PyBytes::new(py, &b[..b.len().saturating_sub(8)]))
    };
    d.set_item("smallest", user(&i.smallest))?;
    d.set_item("largest", user(&i.largest))?;
    Ok(d)
}

#[pymethods]
impl SstWriter {
    #[new]
    #[pyo3(signature = (path, **options))]
    fn py_new(path: PathBuf, options: Option<&Bound<'_, PyDict>>) -> PyResult<SstWriter> {
        let opts = sst_options(options)?;
        let w = strata::SstWriter::create(&path, opts).map_err(db_err)?;
        Ok(SstWriter {
            path,
            w: Mutex::new(Some(w)),
        })
    }

    /// Adds `key` = `value` (keys strictly increasing).
    fn put(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (k, v) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        self.with(|w| w.put(k, v))
    }

    /// Adds a deletion of `key`.
    fn delete(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_of(key, "key")?;
        self.with(|w| w.delete(k))
    }

    /// Adds a deletion of every key in `[start, end)`.
    fn delete_range(&self, start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>) -> PyResult<()> {
        let (s, e) = (bytes_of(start, "start")?, bytes_of(end, "end")?);
        self.with(|w| w.delete_range(s, e))
    }

    /// Entries added so far.
    fn __len__(&self) -> PyResult<usize> {
        self.with(|w| Ok(w.num_entries() as usize))
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Writes the index, filter, properties and footer and syncs the file;
    /// returns a dict (file_size, num_entries, smallest, largest, ...).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let Some(w) = self.w.lock().take() else {
            return Err(InvalidArgumentError::new_err(
                "SstWriter is already finished",
            ));
        };
        let info = py.detach(move || w.finish()).map_err(db_err)?;
        info_dict(py, &info)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let failed = exc_type.is_some_and(|t| !t.is_none());
        if failed {
            if self.w.lock().take().is_some() {
                let _ = std::fs::remove_file(&self.path);
            }
        } else if self.w.lock().is_some() {
            self.finish(py)?;
        }
        Ok(false)
    }
}
