//! `strata.Snapshot`: a consistent read-only view, from `db.snapshot()`.
//!
//! A context manager: leaving the `with` block (or `close()`) releases the
//! view so compactions may drop the versions it kept. `db.close()` releases
//! it too; reading it afterwards raises `DatabaseClosedError`.

use crate::convert::{bytes_of, opt_bytes};
use crate::db::make_iter;
use crate::handle::{closed_err, Failure, Handle, Release, Slot};
use crate::iter::{DbIter, Mode};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Arc;

/// A consistent view of the database at one instant.
#[pyclass(module = "strata", name = "Snapshot")]
pub struct Snapshot {
    handle: Arc<Handle>,
    slot: Arc<Slot<strata::Snapshot>>,
}

impl Snapshot {
    /// Wraps an engine snapshot, registered for `db.close()`.
    pub fn new(handle: &Arc<Handle>, s: strata::Snapshot) -> Snapshot {
        let slot = Slot::new(s);
        handle.register(Arc::downgrade(&slot) as std::sync::Weak<dyn Release>);
        Snapshot {
            handle: Arc::clone(handle),
            slot,
        }
    }

    fn get_bytes(&self, py: Python<'_>, key: &[u8]) -> PyResult<Option<Vec<u8>>> {
        let slot = &self.slot;
        let r: Result<_, Failure> = py.detach(|| match slot.0.lock().as_ref() {
            Some(s) => Ok(s.get(key)?),
            None => Err(Failure::Closed("the snapshot")),
        });
        Ok(r?)
    }

    fn iter(
        &self,
        py: Python<'_>,
        mode: Mode,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<DbIter> {
        let (lower, upper) = (opt_bytes(start, "start")?, opt_bytes(end, "end")?);
        make_iter(
            py,
            &self.handle,
            Some(&self.slot),
            lower,
            upper,
            mode,
            reverse,
        )
    }
}

#[pymethods]
impl Snapshot {
    /// The value of `key` at the snapshot, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        match self.get_bytes(py, &bytes_of(key, "key")?)? {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        match self.get_bytes(py, &bytes_of(key, "key")?)? {
            Some(v) => Ok(PyBytes::new(py, &v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get_bytes(py, &bytes_of(key, "key")?)?.is_some())
    }

    /// `(key, value)` pairs at the snapshot, in `[start, end)`.
    #[pyo3(signature = (start=None, end=None, reverse=false))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<DbIter> {
        self.iter(py, Mode::Items, start, end, reverse)
    }

    /// Keys at the snapshot, in `[start, end)`.
    #[pyo3(signature = (start=None, end=None, reverse=false))]
    fn keys(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<DbIter> {
        self.iter(py, Mode::Keys, start, end, reverse)
    }

    /// Values at the snapshot, in `[start, end)`.
    #[pyo3(signature = (start=None, end=None, reverse=false))]
    fn values(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<DbIter> {
        self.iter(py, Mode::Values, start, end, reverse)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<DbIter> {
        self.iter(py, Mode::Keys, None, None, false)
    }

    /// The sequence number the snapshot reads at.
    #[getter]
    fn sequence(&self) -> PyResult<u64> {
        match self.slot.0.lock().as_ref() {
            Some(s) => Ok(s.sequence()),
            None => Err(closed_err("the snapshot")),
        }
    }

    /// Releases the snapshot (idempotent).
    fn close(&self, py: Python<'_>) {
        let slot = &self.slot;
        py.detach(|| slot.release());
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }
}
