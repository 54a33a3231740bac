//! The reads `strata.DB` and `strata.Snapshot` share: `get`, `multi_get`,
//! `db[key]`, `key in db`, `items`, `keys`, `values` and `iter(db)`.
//!
//! One implementation serves both classes: each implements [`Reader`]
//! (how it reads one key, and at which snapshot its iterators read), and
//! [`read_methods!`] writes the Python methods over it into the class, with
//! the docstrings the class gives. (PyO3 needs the methods in a
//! `#[pymethods]` block of each class; the crate enables PyO3's
//! `multiple-pymethods` so that block can come from the macro.)

use crate::convert::{bytes_of, opt_bytes};
use crate::handle::{Failure, Handle, Slot};
use crate::iter::{DbIter, Mode};
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use std::sync::Arc;
use strata::ReadOptions;

/// A class that reads keys: a database, or a snapshot of one.
pub trait Reader {
    /// The database read.
    fn handle(&self) -> &Arc<Handle>;

    /// The snapshot reads are made at (None: the latest data).
    fn snapshot(&self) -> Option<&Arc<Slot<strata::Snapshot>>>;

    /// The value of `key` (call with the GIL held; it is released inside).
    fn get_bytes(&self, py: Python<'_>, key: &[u8]) -> PyResult<Option<Vec<u8>>>;

    /// The values of `keys`, read at one instant, in their order; the first
    /// key (in that order) whose read failed raises its error (call with
    /// the GIL held; it is released inside).
    fn multi_get_bytes(&self, py: Python<'_>, keys: &[&[u8]]) -> PyResult<Vec<Option<Vec<u8>>>>;
}

/// The engine's per-key results as one: the values, or the first error.
pub fn first_error(
    results: Vec<strata::Result<Option<Vec<u8>>>>,
) -> Result<Vec<Option<Vec<u8>>>, Failure> {
    Ok(results.into_iter().collect::<strata::Result<Vec<_>>>()?)
}

/// `get(key, default=None)`.
pub fn get<R: Reader>(
    r: &R,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    default: Option<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    match r.get_bytes(py, &bytes_of(key, "key")?)? {
        Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
        None => Ok(default.unwrap_or_else(|| py.None())),
    }
}

/// `multi_get(keys)`: a list of `bytes` or `None`, one per key of the
/// iterable `keys`, in its order. A single key (`bytes` or `str`, which
/// would otherwise be taken as an iterable of ints or characters) is a
/// `TypeError`.
pub fn multi_get<'py, R: Reader>(
    r: &R,
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    if keys.is_instance_of::<PyBytes>() || keys.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "multi_get takes an iterable of keys, not a single key",
        ));
    }
    let objs: Vec<Bound<'py, PyAny>> = keys.try_iter()?.collect::<PyResult<_>>()?;
    let owned = objs
        .iter()
        .map(|k| bytes_of(k, "key"))
        .collect::<PyResult<Vec<_>>>()?;
    let refs: Vec<&[u8]> = owned.iter().map(|k| k.as_ref()).collect();
    let values = r.multi_get_bytes(py, &refs)?;
    PyList::new(
        py,
        values.iter().map(|v| match v {
            Some(b) => PyBytes::new(py, b).into_any(),
            None => py.None().into_bound(py),
        }),
    )
}

/// `reader[key]`: a missing key raises `KeyError`.
pub fn get_item<'py, R: Reader>(
    r: &R,
    py: Python<'py>,
    key: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    match r.get_bytes(py, &bytes_of(key, "key")?)? {
        Some(v) => Ok(PyBytes::new(py, &v)),
        None => Err(PyKeyError::new_err(key.clone().unbind())),
    }
}

/// `key in reader`.
pub fn contains<R: Reader>(r: &R, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(r.get_bytes(py, &bytes_of(key, "key")?)?.is_some())
}

/// An iterator yielding `mode` over the keys in `[start, end)` (None:
/// unbounded), ascending or (`reverse`) descending, at the reader's
/// snapshot if it has one.
pub fn iter<R: Reader>(
    r: &R,
    py: Python<'_>,
    mode: Mode,
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    reverse: bool,
) -> PyResult<DbIter> {
    let (lower, upper) = (opt_bytes(start, "start")?, opt_bytes(end, "end")?);
    let (h, snap) = (r.handle(), r.snapshot());
    let raw = py.detach(move || {
        h.with(|db| {
            let guard = snap.map(|s| s.0.lock());
            let snapshot = match &guard {
                None => None,
                Some(g) => Some(g.as_ref().ok_or(Failure::Closed("the snapshot"))?),
            };
            let opts = ReadOptions {
                snapshot,
                lower,
                upper,
            };
            Ok(db.raw_iter(&opts)?)
        })
    })?;
    Ok(DbIter::new(h, raw, mode, reverse))
}

/// Writes the read methods (`get`, `multi_get`, `__getitem__`,
/// `__contains__`, `items`, `keys`, `values`, `__iter__`) into `$class`, a
/// [`Reader`], each with the doc comments written before its name in the
/// invocation.
macro_rules! read_methods {
    (
        $class:ty;
        $(#[$get:meta])* get;
        $(#[$multi_get:meta])* multi_get;
        $(#[$items:meta])* items;
        $(#[$keys:meta])* keys;
        $(#[$values:meta])* values;
    ) => {
        #[pyo3::pymethods]
        impl $class {
            $(#[$get])*
            #[pyo3(signature = (key, default=None))]
            fn get(
                &self,
                py: pyo3::Python<'_>,
                key: &pyo3::Bound<'_, pyo3::PyAny>,
                default: Option<pyo3::Py<pyo3::PyAny>>,
            ) -> pyo3::PyResult<pyo3::Py<pyo3::PyAny>> {
                $crate::reader::get(self, py, key, default)
            }

            $(#[$multi_get])*
            fn multi_get<'py>(
                &self,
                py: pyo3::Python<'py>,
                keys: &pyo3::Bound<'py, pyo3::PyAny>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::types::PyList>> {
                $crate::reader::multi_get(self, py, keys)
            }

            fn __getitem__<'py>(
                &self,
                py: pyo3::Python<'py>,
                key: &pyo3::Bound<'py, pyo3::PyAny>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::types::PyBytes>> {
                $crate::reader::get_item(self, py, key)
            }

            fn __contains__(
                &self,
                py: pyo3::Python<'_>,
                key: &pyo3::Bound<'_, pyo3::PyAny>,
            ) -> pyo3::PyResult<bool> {
                $crate::reader::contains(self, py, key)
            }

            fn __iter__(&self, py: pyo3::Python<'_>) -> pyo3::PyResult<$crate::iter::DbIter> {
                $crate::reader::iter(self, py, $crate::iter::Mode::Keys, None, None, false)
            }
        }
        $crate::reader::read_methods!(@iter $class, items, Items, $(#[$items])*);
        $crate::reader::read_methods!(@iter $class, keys, Keys, $(#[$keys])*);
        $crate::reader::read_methods!(@iter $class, values, Values, $(#[$values])*);
    };
    // One iterator method (each in its own `#[pymethods]` block).
    (@iter $class:ty, $name:ident, $mode:ident, $(#[$doc:meta])*) => {
        #[pyo3::pymethods]
        impl $class {
            $(#[$doc])*
            #[pyo3(signature = (start=None, end=None, reverse=false))]
            fn $name(
                &self,
                py: pyo3::Python<'_>,
                start: Option<&pyo3::Bound<'_, pyo3::PyAny>>,
                end: Option<&pyo3::Bound<'_, pyo3::PyAny>>,
                reverse: bool,
            ) -> pyo3::PyResult<$crate::iter::DbIter> {
                $crate::reader::iter(self, py, $crate::iter::Mode::$mode, start, end, reverse)
            }
        }
    };
}
pub(crate) use read_methods;
