//! Python objects to byte strings and back.
//!
//! Keys and values are `bytes`; `str` is accepted too and stored as its
//! UTF-8 encoding, and `bytearray`/`memoryview` are copied. Reads always
//! return `bytes`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};
use std::borrow::Cow;

/// The bytes of a key or value argument.
pub fn bytes_of<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Cow::Owned(s.to_str()?.as_bytes().to_vec()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    if obj.is_instance_of::<PyMemoryView>() {
        // Only a memoryview: other sequences of ints (a tuple, a range)
        // would be taken as bytes too, which no caller means.
        let b = obj.call_method0("tobytes")?;
        return Ok(Cow::Owned(b.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes, bytearray, memoryview or str, not {}",
        obj.get_type().name()?
    )))
}

/// An optional bound (`None`: unbounded).
pub fn opt_bytes(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<u8>>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => Ok(Some(bytes_of(o, what)?.into_owned())),
    }
}
