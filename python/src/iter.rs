//! `strata.Iterator`: what `db.items()`, `db.keys()` and `db.values()`
//! (and a snapshot's) return.
//!
//! The iterator reads one consistent view, fixed when it was made, in key
//! order or (with `reverse=True`) backward, within `[start, end)`. It moves
//! the engine's cursor in chunks with the GIL released and copies each
//! chunk's keys and values into one buffer, so a large scan lets other
//! Python threads run and pays the GIL hand-over once per chunk, not per
//! key. Chunks start small (a caller that wants one key does not read a
//! thousand) and double up to [`MAX_CHUNK`].
//!
//! The cursor lives in a [`Slot`] registered with the database's handle:
//! `db.close()` empties it, and the next `__next__` raises
//! `DatabaseClosedError` (a live iterator never keeps a closed database's
//! files or lock).

use crate::errors::db_err;
use crate::handle::{closed_err, Handle, Slot};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::sync::Arc;
use strata::RawIterator;

/// Most entries read per GIL release.
const MAX_CHUNK: usize = 1024;
const FIRST_CHUNK: usize = 16;

/// What the iterator yields.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `(key, value)` tuples.
    Items,
    /// Keys.
    Keys,
    /// Values.
    Values,
}

/// Entries read ahead: `data` holds keys and values back to back, `ends`
/// the end offset of each key and of each value.
#[derive(Default)]
struct Chunk {
    data: Vec<u8>,
    ends: Vec<(usize, usize)>,
    pos: usize,
}

/// An iterator over a database's (or a snapshot's) entries.
#[pyclass(module = "strata", name = "Iterator")]
pub struct DbIter {
    handle: Arc<Handle>,
    slot: Arc<Slot<RawIterator>>,
    mode: Mode,
    reverse: bool,
    started: bool,
    done: bool,
    chunk: Chunk,
    chunk_size: usize,
}

impl DbIter {
    /// An iterator over `raw`, registered with `handle` so close releases it.
    pub fn new(handle: &Arc<Handle>, raw: RawIterator, mode: Mode, reverse: bool) -> DbIter {
        let slot = Slot::new(raw);
        let weak: std::sync::Weak<dyn crate::handle::Release> =
            Arc::downgrade(&slot) as std::sync::Weak<dyn crate::handle::Release>;
        handle.register(weak);
        DbIter {
            handle: Arc::clone(handle),
            slot,
            mode,
            reverse,
            started: false,
            done: false,
            chunk: Chunk::default(),
            chunk_size: FIRST_CHUNK,
        }
    }
}

/// Moves `raw` to its first entry (`started`: to the one after the last
/// read) and passes up to `n` entries to `each`, in key order or
/// (`reverse`) backward. Returns whether the cursor ran off the data. Shared
/// by this iterator and `Table.scan`'s (`table_scan.rs`), which decode what
/// they read differently; call with the GIL released.
pub fn read_chunk<E: From<strata::Error>>(
    raw: &mut RawIterator,
    n: usize,
    started: bool,
    reverse: bool,
    mut each: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
) -> Result<bool, E> {
    match (started, reverse) {
        (false, false) => raw.seek_to_first(),
        (false, true) => raw.seek_to_last(),
        (true, false) => raw.next(),
        (true, true) => raw.prev(),
    }
    let mut read = 0;
    loop {
        let Some((k, v)) = raw.item() else {
            raw.status()?;
            return Ok(true);
        };
        each(k, v)?;
        read += 1;
        if read >= n {
            return Ok(false);
        }
        if reverse {
            raw.prev()
        } else {
            raw.next()
        }
    }
}

/// Reads up to `n` entries into `c` (GIL released). Returns whether the
/// cursor ran off the data.
fn fill(
    raw: &mut RawIterator,
    c: &mut Chunk,
    n: usize,
    started: bool,
    reverse: bool,
    mode: Mode,
) -> strata::Result<bool> {
    c.data.clear();
    c.ends.clear();
    c.pos = 0;
    read_chunk(raw, n, started, reverse, |k, v| {
        if mode != Mode::Values {
            c.data.extend_from_slice(k);
        }
        let ke = c.data.len();
        if mode != Mode::Keys {
            c.data.extend_from_slice(v);
        }
        c.ends.push((ke, c.data.len()));
        Ok::<(), strata::Error>(())
    })
}

#[pymethods]
impl DbIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(mut slf: PyRefMut<'_, Self>, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if slf.handle.is_closed() {
            return Err(closed_err("the database of this iterator"));
        }
        if slf.chunk.pos >= slf.chunk.ends.len() {
            if slf.done {
                return Ok(None);
            }
            let this = &mut *slf;
            let mut chunk = std::mem::take(&mut this.chunk);
            let slot = Arc::clone(&this.slot);
            let (n, started, reverse, mode) =
                (this.chunk_size, this.started, this.reverse, this.mode);
            let r = py.detach(move || {
                let mut g = slot.0.lock();
                let r = g
                    .as_mut()
                    .map(|raw| fill(raw, &mut chunk, n, started, reverse, mode));
                (r, chunk)
            });
            let (r, chunk) = r;
            this.chunk = chunk;
            this.started = true;
            this.chunk_size = (n * 2).min(MAX_CHUNK);
            match r {
                None => return Err(closed_err("the database of this iterator")),
                Some(Err(e)) => {
                    this.done = true;
                    return Err(db_err(e));
                }
                Some(Ok(end)) => this.done = end,
            }
            if this.chunk.ends.is_empty() {
                return Ok(None);
            }
        }
        let c = &mut slf.chunk;
        let start = if c.pos == 0 { 0 } else { c.ends[c.pos - 1].1 };
        let (ke, ve) = c.ends[c.pos];
        c.pos += 1;
        let out = match slf.mode {
            Mode::Keys => PyBytes::new(py, &slf.chunk.data[start..ke]).into_any(),
            Mode::Values => PyBytes::new(py, &slf.chunk.data[ke..ve]).into_any(),
            Mode::Items => {
                let k = PyBytes::new(py, &slf.chunk.data[start..ke]);
                let v = PyBytes::new(py, &slf.chunk.data[ke..ve]);
                PyTuple::new(py, [k, v])?.into_any()
            }
        };
        Ok(Some(out.unbind()))
    }

    /// Releases the cursor now (the iterator then yields nothing more).
    fn close(&mut self) {
        crate::handle::Release::release(&*self.slot);
        self.done = true;
        self.chunk = Chunk::default();
    }
}
