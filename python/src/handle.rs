//! The state one Python `DB` shares with its iterators and snapshots.
//!
//! A [`Handle`] owns the open [`strata::Db`] (behind a read-write lock:
//! operations take it shared, `close()` exclusively, so close waits for
//! running calls) and a registry of the resources that hold parts of the
//! engine alive (iterator cursors, snapshots). `close()` empties every
//! registered slot before dropping the `Db`, so the directory's lock is
//! released even while Python still holds iterator objects; those then raise
//! `DatabaseClosedError` instead of reading freed state.
//!
//! Lock discipline (no deadlock with the GIL): a Rust lock is only ever
//! waited for with the GIL released (`py.detach`), and no lock is held while
//! the GIL is reacquired. Order: the `Db` lock before any slot lock.

use crate::errors::{db_err, import_err, DatabaseClosedError};
use parking_lot::{Mutex, RwLock, RwLockReadGuard};
use pyo3::{PyErr, Python};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// Something `close()` must release.
pub trait Release: Send + Sync {
    /// Drops the engine state held (idempotent).
    fn release(&self);
}

/// A slot holding one engine object until released.
pub struct Slot<T>(pub Mutex<Option<T>>);

impl<T: Send> Release for Slot<T> {
    fn release(&self) {
        // Dropped outside the lock: an iterator's drop may be large.
        let old = self.0.lock().take();
        drop(old);
    }
}

impl<T> Slot<T> {
    /// A slot holding `v`.
    pub fn new(v: T) -> Arc<Slot<T>> {
        Arc::new(Slot(Mutex::new(Some(v))))
    }
}

/// The shared state of one open database.
pub struct Handle {
    db: RwLock<Option<strata::Db>>,
    /// The database directory.
    pub path: PathBuf,
    closed: AtomicBool,
    resources: Mutex<Vec<Weak<dyn Release>>>,
}

/// The error for using a closed database.
pub fn closed_err(what: &str) -> PyErr {
    DatabaseClosedError::new_err(format!("{what} is closed"))
}

/// A failure inside a call made with the GIL released. It becomes a Python
/// exception only once the GIL is held again (building one with attributes
/// needs the GIL, which must not be waited for while holding a Rust lock).
pub enum Failure {
    /// The database or snapshot named was closed.
    Closed(&'static str),
    /// The engine failed.
    Db(strata::Error),
    /// The table layer failed.
    Import(strata_import::Error),
    /// An exception made without the GIL (lazily).
    Py(PyErr),
}

impl From<strata::Error> for Failure {
    fn from(e: strata::Error) -> Failure {
        Failure::Db(e)
    }
}

impl From<strata_import::Error> for Failure {
    fn from(e: strata_import::Error) -> Failure {
        Failure::Import(e)
    }
}

impl From<PyErr> for Failure {
    fn from(e: PyErr) -> Failure {
        Failure::Py(e)
    }
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::Closed(what) => closed_err(what),
            Failure::Db(e) => db_err(e),
            Failure::Import(e) => import_err(e),
            Failure::Py(e) => e,
        }
    }
}

impl Drop for Handle {
    /// A database nobody closed is closed (as a file is) once the `DB` and
    /// every iterator, snapshot, table and scan made from it are gone. The
    /// close waits for the database's lock (a call running in another
    /// thread), its background jobs and a WAL sync, so it runs with the
    /// GIL released, as `close()` does: other threads run meanwhile.
    fn drop(&mut self) {
        if !self.is_closed() {
            let _ = Python::attach(|py| py.detach(|| self.close()));
        }
    }
}

impl Handle {
    /// Wraps an open database.
    pub fn new(db: strata::Db, path: PathBuf) -> Arc<Handle> {
        Arc::new(Handle {
            db: RwLock::new(Some(db)),
            path,
            closed: AtomicBool::new(false),
            resources: Mutex::new(Vec::new()),
        })
    }

    /// Whether `close()` was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Runs `f` on the open database (call with the GIL released).
    pub fn with<T>(&self, f: impl FnOnce(&strata::Db) -> Result<T, Failure>) -> Result<T, Failure> {
        let g: RwLockReadGuard<'_, Option<strata::Db>> = self.db.read();
        match g.as_ref() {
            Some(db) => f(db),
            None => Err(Failure::Closed("the database")),
        }
    }

    /// Registers a resource for `close()` to release.
    pub fn register(&self, r: Weak<dyn Release>) {
        let mut v = self.resources.lock();
        // Amortised pruning of resources Python has already dropped.
        if v.len() >= 64 && v.len().is_power_of_two() {
            v.retain(|w| w.strong_count() > 0);
        }
        v.push(r);
    }

    /// Releases every resource, then closes the database (call with the
    /// GIL released). A second call does nothing.
    pub fn close(&self) -> Result<(), strata::Error> {
        let mut g = self.db.write();
        self.closed.store(true, Ordering::Release);
        let resources = std::mem::take(&mut *self.resources.lock());
        for r in resources.iter().filter_map(Weak::upgrade) {
            r.release();
        }
        match g.take() {
            Some(db) => db.close(),
            None => Ok(()),
        }
    }
}
