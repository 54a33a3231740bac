//! `strata.TableScan`: the lazy iterator `Table.scan(...)` returns.
//!
//! A scan reads one consistent view, fixed when `scan` was called: the
//! cursor over the index's key range, and, for a secondary index, a snapshot
//! at the same sequence from which each entry's row is fetched (so a row is
//! never missing or newer than the index entry naming it). Rows come in the
//! index's order, or backward with `reverse=True`, at most `limit` of them.
//!
//! Like [`crate::iter::DbIter`], the cursor moves in chunks with the GIL
//! released (decoding each chunk's rows there too), chunks grow from a few
//! rows to [`MAX_CHUNK`] so `next(t.scan())` reads little, and the cursor
//! lives in a [`Slot`] registered with the database's handle: `db.close()`
//! (or the scan's `close()`) empties it, and the next `__next__` raises
//! `DatabaseClosedError` instead of reading a closed database.

use crate::handle::{closed_err, Failure, Handle, Release, Slot};
use crate::iter::read_chunk;
use crate::table::py_row;
use pyo3::prelude::*;
use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use strata::RawIterator;
use strata_import::codec::TableCodec;
use strata_import::value::Value;

/// Most rows decoded per GIL release.
const MAX_CHUNK: usize = 512;
const FIRST_CHUNK: usize = 16;

/// The engine state a scan holds until it ends or is closed.
pub struct Cursor {
    /// Over the index's entries in the scan's bounds.
    pub raw: RawIterator,
    /// For a secondary index: the view its rows are fetched from (the
    /// cursor reads at the same sequence).
    pub rows_at: Option<strata::Snapshot>,
}

/// A lazy scan of a table's rows, from `Table.scan(...)`.
#[pyclass(module = "strata", name = "TableScan")]
pub struct TableScan {
    handle: Arc<Handle>,
    slot: Arc<Slot<Cursor>>,
    codec: Arc<TableCodec>,
    index: usize,
    as_dict: bool,
    reverse: bool,
    /// Rows still allowed by `limit` (None: no limit).
    remaining: Option<usize>,
    started: bool,
    done: bool,
    rows: VecDeque<Vec<Value>>,
    chunk_size: usize,
}

impl TableScan {
    /// A scan over `cursor`, registered with `handle` so close releases it.
    pub fn new(
        handle: &Arc<Handle>,
        cursor: Cursor,
        codec: &Arc<TableCodec>,
        index: usize,
        reverse: bool,
        limit: Option<usize>,
        as_dict: bool,
    ) -> TableScan {
        let slot = Slot::new(cursor);
        handle.register(Arc::downgrade(&slot) as Weak<dyn Release>);
        TableScan {
            handle: Arc::clone(handle),
            slot,
            codec: Arc::clone(codec),
            index,
            as_dict,
            reverse,
            remaining: limit,
            started: false,
            done: limit == Some(0),
            rows: VecDeque::new(),
            chunk_size: FIRST_CHUNK,
        }
    }
}

/// The row an entry of index `index` stands for (for a secondary index,
/// fetched at `rows_at`).
fn row_of(
    codec: &TableCodec,
    index: usize,
    rows_at: Option<&strata::Snapshot>,
    k: &[u8],
    v: &[u8],
) -> Result<Vec<Value>, Failure> {
    let t = &codec.table;
    let bad_row = |m: String| {
        strata_import::Error::Catalog(format!("table {}: row does not decode: {m}", t.name))
    };
    let (Some(snap), true) = (rows_at, index > 0) else {
        return Ok(codec.decode_primary(k, v).map_err(bad_row)?);
    };
    let pk = codec.primary_of_entry(index, k, v).map_err(|m| {
        strata_import::Error::Catalog(format!(
            "table {}: index {} entry does not decode: {m}",
            t.name, t.indexes[index].name
        ))
    })?;
    let Some(row) = snap.get(&pk)? else {
        return Err(strata_import::Error::Catalog(format!(
            "table {}: index {} names a row that does not exist",
            t.name, t.indexes[index].name
        ))
        .into());
    };
    Ok(codec.decode_primary(&pk, &row).map_err(bad_row)?)
}

#[pymethods]
impl TableScan {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(mut slf: PyRefMut<'_, Self>, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if slf.handle.is_closed() {
            return Err(closed_err("the database of this scan"));
        }
        if slf.rows.is_empty() {
            if slf.done {
                return Ok(None);
            }
            let this = &mut *slf;
            let n = this
                .remaining
                .map_or(this.chunk_size, |r| r.min(this.chunk_size));
            let (slot, codec) = (Arc::clone(&this.slot), Arc::clone(&this.codec));
            let (index, started, reverse) = (this.index, this.started, this.reverse);
            let mut rows = std::mem::take(&mut this.rows);
            let r = py.detach(move || {
                let mut g = slot.0.lock();
                let r = match g.as_mut() {
                    None => Err(Failure::Closed("the database of this scan")),
                    Some(c) => read_chunk(&mut c.raw, n, started, reverse, |k, v| {
                        rows.push_back(row_of(&codec, index, c.rows_at.as_ref(), k, v)?);
                        Ok(())
                    }),
                };
                (r, rows)
            });
            let (r, rows) = r;
            this.rows = rows;
            this.started = true;
            this.chunk_size = (this.chunk_size * 2).min(MAX_CHUNK);
            if let Some(left) = &mut this.remaining {
                *left -= this.rows.len();
                if *left == 0 {
                    this.done = true;
                }
            }
            match r {
                Err(e) => {
                    this.done = true;
                    this.rows.clear();
                    return Err(e.into());
                }
                Ok(end) => this.done |= end,
            }
            if this.done {
                // Nothing more to read: let compactions drop what the
                // cursor pinned now, not when Python collects the scan.
                this.slot.release();
            }
        }
        let Some(row) = slf.rows.pop_front() else {
            return Ok(None);
        };
        Ok(Some(
            py_row(py, &slf.codec.table, &row, slf.as_dict)?.unbind(),
        ))
    }

    /// Releases the cursor now (the scan then yields nothing more).
    fn close(&mut self) {
        self.slot.release();
        self.done = true;
        self.rows.clear();
    }
}
