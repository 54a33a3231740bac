//! Python exception classes and the mapping from Strata's errors to them.
//!
//! Every exception raised by the package derives from `strata.StrataError`.
//! The engine's [`strata::Error`] variants map one to one onto subclasses
//! (`CorruptionError` carries `file` and `offset`, `IoError` carries `path`
//! and `errno`), the table layer's errors onto `SchemaError`, `BadRowError`
//! (with `file`, `line`, `column`) and `DuplicateKeyError`; using a database,
//! iterator or snapshot after `close()` raises `DatabaseClosedError`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::BoundObject;

create_exception!(
    strata,
    StrataError,
    PyException,
    "Base class of every Strata error."
);
create_exception!(
    strata,
    CorruptionError,
    StrataError,
    "Stored bytes are not what the format says: `file` and `offset` say where."
);
create_exception!(
    strata,
    InvalidArgumentError,
    StrataError,
    "The request cannot be done (a bad option, keys out of order, ...)."
);
create_exception!(
    strata,
    NotSupportedError,
    StrataError,
    "The file or request uses a feature Strata does not implement."
);
create_exception!(
    strata,
    BusyError,
    StrataError,
    "The database is open elsewhere (in this process or another)."
);
create_exception!(
    strata,
    NotFoundError,
    StrataError,
    "There is no Strata database at the path (and none may be created)."
);
create_exception!(
    strata,
    IoError,
    StrataError,
    "An operating-system I/O error: `path` and `errno` say which."
);
create_exception!(
    strata,
    InternalError,
    StrataError,
    "A bug in Strata: an internal invariant did not hold."
);
create_exception!(
    strata,
    DatabaseClosedError,
    StrataError,
    "The database (or snapshot) was closed: its iterators and snapshots are gone."
);
create_exception!(
    strata,
    SchemaError,
    StrataError,
    "The table definition (DDL) is unusable."
);
create_exception!(
    strata,
    BadRowError,
    StrataError,
    "A row of an import's input is malformed: `file`, `line` and `column` say where."
);
create_exception!(
    strata,
    DuplicateKeyError,
    StrataError,
    "Two rows (or a row and the table) share a primary or unique key."
);

/// Sets attributes on a freshly made exception.
fn with_attrs(err: PyErr, attrs: &[(&str, Py<PyAny>)]) -> PyErr {
    Python::attach(|py| {
        let v = err.value(py);
        for (k, a) in attrs {
            // An attribute that cannot be set leaves the message intact.
            let _ = v.setattr(*k, a.bind(py));
        }
    });
    err
}

fn obj<T>(v: T) -> Py<PyAny>
where
    T: for<'py> IntoPyObject<'py>,
{
    Python::attach(|py| match v.into_pyobject(py) {
        Ok(o) => o.into_any().unbind(),
        Err(_) => py.None(),
    })
}

/// The Python exception for an engine error.
pub fn db_err(e: strata::Error) -> PyErr {
    let msg = e.to_string();
    match e {
        strata::Error::Corruption { file, offset, .. } => with_attrs(
            CorruptionError::new_err(msg),
            &[("file", obj(file)), ("offset", obj(offset))],
        ),
        // `source` is the operating system's error as it came (a note the
        // engine added is in the message, not in it), so its errno is
        // there after `Error::context` and a clone of a background error.
        strata::Error::Io { path, source, .. } => with_attrs(
            IoError::new_err(msg),
            &[("path", obj(path)), ("errno", obj(source.raw_os_error()))],
        ),
        strata::Error::InvalidArgument(_) => InvalidArgumentError::new_err(msg),
        strata::Error::NotSupported(_) => NotSupportedError::new_err(msg),
        strata::Error::Busy { .. } => BusyError::new_err(msg),
        strata::Error::NotFound { .. } | strata::Error::NotADatabase { .. } => {
            NotFoundError::new_err(msg)
        }
        _ => InternalError::new_err(msg),
    }
}

/// The Python exception for a table-layer error.
pub fn import_err(e: strata_import::Error) -> PyErr {
    use strata_import::Error as E;
    let msg = e.to_string();
    match e {
        E::Db(e) => db_err(e),
        E::Schema(_) => SchemaError::new_err(msg),
        E::BadRow { at, column, .. } => with_attrs(
            BadRowError::new_err(msg),
            &[
                ("file", obj(at.file)),
                ("line", obj(at.line)),
                ("column", obj(column)),
            ],
        ),
        E::Duplicate { index, .. } => {
            with_attrs(DuplicateKeyError::new_err(msg), &[("index", obj(index))])
        }
        E::Invalid(_) => InvalidArgumentError::new_err(msg),
        E::Io { path, err } => with_attrs(
            IoError::new_err(msg),
            &[
                ("path", obj(path.display().to_string())),
                ("errno", obj(err.raw_os_error())),
            ],
        ),
        E::Catalog(_) => with_attrs(
            CorruptionError::new_err(msg),
            &[("file", obj("<catalog>")), ("offset", obj(0u64))],
        ),
    }
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("StrataError", py.get_type::<StrataError>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    // The class's earlier name, kept so `except strata.InvalidArgument`
    // written against an earlier release still catches it.
    m.add("InvalidArgument", py.get_type::<InvalidArgumentError>())?;
    m.add("NotSupportedError", py.get_type::<NotSupportedError>())?;
    m.add("BusyError", py.get_type::<BusyError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("IoError", py.get_type::<IoError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("DatabaseClosedError", py.get_type::<DatabaseClosedError>())?;
    m.add("SchemaError", py.get_type::<SchemaError>())?;
    m.add("BadRowError", py.get_type::<BadRowError>())?;
    m.add("DuplicateKeyError", py.get_type::<DuplicateKeyError>())?;
    Ok(())
}
