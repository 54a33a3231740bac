//! `strata.Snapshot`: a consistent read-only view, from `db.snapshot()`.
//!
//! A context manager: leaving the `with` block (or `close()`) releases the
//! view so compactions may drop the versions it kept. `db.close()` releases
//! it too; reading it afterwards raises `DatabaseClosedError`. Its reads
//! are the database's (`reader.rs`), made at the snapshot.

use crate::handle::{closed_err, Failure, Handle, Release, Slot};
use crate::reader::{first_error, read_methods, Reader};
use pyo3::prelude::*;
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
}

impl Reader for Snapshot {
    fn handle(&self) -> &Arc<Handle> {
        &self.handle
    }

    fn snapshot(&self) -> Option<&Arc<Slot<strata::Snapshot>>> {
        Some(&self.slot)
    }

    fn get_bytes(&self, py: Python<'_>, key: &[u8]) -> PyResult<Option<Vec<u8>>> {
        let slot = &self.slot;
        let r: Result<_, Failure> = py.detach(|| match slot.0.lock().as_ref() {
            Some(s) => Ok(s.get(key)?),
            None => Err(Failure::Closed("the snapshot")),
        });
        Ok(r?)
    }

    fn multi_get_bytes(&self, py: Python<'_>, keys: &[&[u8]]) -> PyResult<Vec<Option<Vec<u8>>>> {
        let slot = &self.slot;
        let r: Result<_, Failure> = py.detach(|| match slot.0.lock().as_ref() {
            Some(s) => first_error(s.multi_get(keys)),
            None => Err(Failure::Closed("the snapshot")),
        });
        Ok(r?)
    }
}

read_methods! {
    Snapshot;
    /// The value of `key` at the snapshot, or `default`.
    get;
    /// The values of the keys in `keys` at the snapshot, a list of `bytes`
    /// or `None` in their order (`Snapshot::multi_get`).
    multi_get;
    /// `(key, value)` pairs at the snapshot, in `[start, end)`.
    items;
    /// Keys at the snapshot, in `[start, end)`.
    keys;
    /// Values at the snapshot, in `[start, end)`.
    values;
}

#[pymethods]
impl Snapshot {
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
