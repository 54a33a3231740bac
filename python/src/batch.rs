//! `strata.WriteBatch`: puts and deletes applied atomically by
//! `db.write(batch)`. The batch is not consumed: `write` applies a copy, so
//! one batch can be written, cleared (`clear()`) and refilled.

use crate::convert::bytes_of;
use pyo3::prelude::*;

/// A set of writes applied atomically by `DB.write`.
#[pyclass(module = "strata", name = "WriteBatch")]
#[derive(Default)]
pub struct Batch {
    /// The engine's batch.
    pub inner: strata::WriteBatch,
}

#[pymethods]
impl Batch {
    #[new]
    fn py_new() -> Batch {
        Batch::default()
    }

    /// Sets `key` to `value`.
    fn put(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner
            .put(bytes_of(key, "key")?, bytes_of(value, "value")?);
        Ok(())
    }

    /// Removes `key`.
    fn delete(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.delete(bytes_of(key, "key")?);
        Ok(())
    }

    /// Removes every key in `[start, end)`.
    fn delete_range(&mut self, start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner
            .delete_range(bytes_of(start, "start")?, bytes_of(end, "end")?);
        Ok(())
    }

    /// Empties the batch.
    fn clear(&mut self) {
        self.inner.clear();
    }

    /// Number of operations in the batch.
    fn __len__(&self) -> usize {
        self.inner.count() as usize
    }

    /// Bytes of the batch's encoding.
    fn size_bytes(&self) -> usize {
        self.inner.size_bytes()
    }

    fn __setitem__(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(key, value)
    }

    fn __delitem__(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(key)
    }
}
