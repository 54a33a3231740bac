//! `strata.DB`: an open database with Python's mapping idioms.
//!
//! Every call that can wait (on the disk, a write stall, a flush, a
//! compaction, an ingestion, an import) runs with the GIL released. The
//! table layer's methods (`import_csv`, `table`) are in `table.rs`; the
//! reads a snapshot has too (`get`, `items`, ...) in `reader.rs`.

use crate::batch::Batch;
use crate::convert::{bytes_of, opt_bytes};
use crate::errors::db_err;
use crate::handle::{Handle, Slot};
use crate::metrics;
use crate::options::db_options;
use crate::reader::{first_error, read_methods, Reader};
use crate::snapshot::Snapshot;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::path::PathBuf;
use std::sync::Arc;
use strata::{IngestOptions, WriteOptions};

/// An open Strata database.
#[pyclass(module = "strata", name = "DB")]
pub struct Db {
    /// Shared with iterators, snapshots, tables and table scans: each
    /// keeps the database open, so `strata.DB(p).table("t").count()`
    /// works. A database dropped without `close()` is closed when the last
    /// of them is gone (`Handle`'s `Drop`).
    pub handle: Arc<Handle>,
}

impl Db {
    fn write_batch(&self, py: Python<'_>, b: strata::WriteBatch, sync: bool) -> PyResult<()> {
        let h = &self.handle;
        Ok(py.detach(move || h.with(|db| Ok(db.write(b, &WriteOptions { sync })?)))?)
    }
}

impl Reader for Db {
    fn handle(&self) -> &Arc<Handle> {
        &self.handle
    }

    fn snapshot(&self) -> Option<&Arc<Slot<strata::Snapshot>>> {
        None
    }

    fn get_bytes(&self, py: Python<'_>, key: &[u8]) -> PyResult<Option<Vec<u8>>> {
        let h = &self.handle;
        Ok(py.detach(|| h.with(|db| Ok(db.get(key)?)))?)
    }

    fn multi_get_bytes(&self, py: Python<'_>, keys: &[&[u8]]) -> PyResult<Vec<Option<Vec<u8>>>> {
        let h = &self.handle;
        Ok(py.detach(|| h.with(|db| first_error(db.multi_get(keys))))?)
    }
}

read_methods! {
    Db;
    /// The value of `key`, or `default` if it is absent.
    get;
    /// The values of the keys in the iterable `keys`, read at one instant
    /// (`Db::multi_get`): a list of `bytes` or `None`, in their order
    /// (repeats allowed). A key whose read fails raises that error, as
    /// `get` would.
    multi_get;
    /// `(key, value)` pairs in key order (`reverse=True`: descending), of
    /// the keys in `[start, end)`.
    items;
    /// Keys in `[start, end)`, in key order (or reversed).
    keys;
    /// Values of the keys in `[start, end)`, in key order (or reversed).
    values;
}

#[pymethods]
impl Db {
    /// Opens (or creates) the database in directory `path`. Options are
    /// keywords: `create_if_missing`, `error_if_exists`, `read_only`,
    /// `memtable_size`, `max_immutable_memtables`, `block_cache_bytes`,
    /// `max_open_files`, `max_background_compactions`, `wal_flush_interval`
    /// (seconds), and the table-file options `compression`, `checksum`,
    /// `block_size`, `block_restart_interval`, `bloom_bits_per_key`,
    /// `whole_key_filtering`, `prefix_extractor` (`"fixed:N"`,
    /// `"capped:N"` or `None`: scans within one prefix skip the table
    /// files whose prefix filter lacks it).
    #[new]
    #[pyo3(signature = (path, **options))]
    fn py_new(py: Python<'_>, path: PathBuf, options: Option<&Bound<'_, PyDict>>) -> PyResult<Db> {
        let (opts, read_only) = db_options(options)?;
        let p = path.clone();
        let db = py
            .detach(move || {
                if read_only {
                    strata::Db::open_read_only(&p, opts)
                } else {
                    strata::Db::open(&p, opts)
                }
            })
            .map_err(db_err)?;
        Ok(Db {
            handle: Handle::new(db, path),
        })
    }

    /// The database directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.handle.path.clone()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Sets `key` to `value` (`sync=True`: durable when this returns).
    #[pyo3(signature = (key, value, sync=false))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        let mut b = strata::WriteBatch::new();
        b.put(bytes_of(key, "key")?, bytes_of(value, "value")?);
        self.write_batch(py, b, sync)
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, false)
    }

    /// Removes `key` (no error if it is absent).
    #[pyo3(signature = (key, sync=false))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: bool) -> PyResult<()> {
        let mut b = strata::WriteBatch::new();
        b.delete(bytes_of(key, "key")?);
        self.write_batch(py, b, sync)
    }

    /// `del db[key]`: like `delete`, but a missing key raises `KeyError`
    /// (as for a dict).
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_of(key, "key")?;
        if self.get_bytes(py, &k)?.is_none() {
            return Err(PyKeyError::new_err(key.clone().unbind()));
        }
        let mut b = strata::WriteBatch::new();
        b.delete(k);
        self.write_batch(py, b, false)
    }

    /// Removes every key in `[start, end)` with one range tombstone
    /// (`start` above `end`: `InvalidArgumentError`, as `Db::delete_range`).
    #[pyo3(signature = (start, end, sync=false))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        let (start, end) = (bytes_of(start, "start")?, bytes_of(end, "end")?);
        if start > end {
            return Err(crate::errors::InvalidArgumentError::new_err(format!(
                "delete_range: start {:?} is above end {:?}",
                String::from_utf8_lossy(&start),
                String::from_utf8_lossy(&end)
            )));
        }
        let mut b = strata::WriteBatch::new();
        b.delete_range(start, end);
        self.write_batch(py, b, sync)
    }

    /// Applies `batch` atomically (the batch is left as it was).
    #[pyo3(signature = (batch, sync=false))]
    fn write(&self, py: Python<'_>, batch: PyRef<'_, Batch>, sync: bool) -> PyResult<()> {
        let b = batch.inner.clone();
        drop(batch);
        self.write_batch(py, b, sync)
    }

    /// A consistent view of the database as it is now.
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        let h = &self.handle;
        let s = py.detach(|| h.with(|db| Ok(db.snapshot())))?;
        Ok(Snapshot::new(&self.handle, s))
    }

    /// Ingests SST files (from `SstWriter` or RocksDB's `SstFileWriter`):
    /// their keys appear atomically. `move=True` moves the files into the
    /// database (the caller's paths are removed); the default copies them.
    /// Returns a dict: sequence, levels, as_batch, flushable.
    #[pyo3(signature = (paths, r#move=false, verify_checksums=true, allow_overlap=true))]
    fn ingest<'py>(
        &self,
        py: Python<'py>,
        paths: &Bound<'py, PyAny>,
        r#move: bool,
        verify_checksums: bool,
        allow_overlap: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let paths: Vec<PathBuf> = match paths.extract::<PathBuf>() {
            Ok(p) => vec![p],
            Err(_) => paths.extract()?,
        };
        let opts = IngestOptions {
            move_files: r#move,
            verify_checksums,
            allow_overlap_with_memtable: allow_overlap,
            ..IngestOptions::default()
        };
        let h = &self.handle;
        // `move=True` removes the caller's paths whichever way the set
        // went in: the engine removes a small set applied as a write batch
        // too, once the batch is durable.
        let r = py.detach(|| h.with(|db| Ok(db.ingest(&paths, &opts)?)))?;
        let d = PyDict::new(py);
        d.set_item("sequence", r.sequence)?;
        d.set_item("levels", r.levels)?;
        d.set_item("as_batch", r.as_batch)?;
        d.set_item("flushable", r.flushable)?;
        Ok(d)
    }

    /// The engine's figures now, as a dict (see `strata.Metrics` in the
    /// Rust documentation for each field).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let h = &self.handle;
        let m = py.detach(|| h.with(|db| Ok(db.metrics())))?;
        metrics::to_dict(py, &m)
    }

    /// Writes the memtable to a table file and waits for it.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let h = &self.handle;
        Ok(py.detach(|| h.with(|db| Ok(db.flush()?)))?)
    }

    /// Makes every write made so far durable (`Db::sync_wal`): writes made
    /// without `sync=True` survive a power cut once it returns.
    fn sync_wal(&self, py: Python<'_>) -> PyResult<()> {
        let h = &self.handle;
        Ok(py.detach(|| h.with(|db| Ok(db.sync_wal()?)))?)
    }

    /// Makes a checkpoint in `path`, a new directory outside the
    /// database's: a database of its own (open it with `strata.DB`)
    /// holding every write and ingestion made before the call. Tables are
    /// hard-linked where the file system allows, else copied; the memtable
    /// is flushed first. Returns a dict: sequence (every operation up to it
    /// is in the checkpoint), tables, bytes, copied.
    fn checkpoint<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
        let h = &self.handle;
        let info = py.detach(|| h.with(|db| Ok(db.checkpoint(&path)?)))?;
        let d = PyDict::new(py);
        d.set_item("sequence", info.sequence)?;
        d.set_item("tables", info.tables)?;
        d.set_item("bytes", info.bytes)?;
        d.set_item("copied", info.copied)?;
        Ok(d)
    }

    /// Compacts every file overlapping `[start, end]` (None: unbounded)
    /// down the tree.
    #[pyo3(signature = (start=None, end=None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let (lo, hi) = (opt_bytes(start, "start")?, opt_bytes(end, "end")?);
        let h = &self.handle;
        Ok(py.detach(|| h.with(|db| Ok(db.compact_range(lo.as_deref(), hi.as_deref())?)))?)
    }

    /// Waits until no flush or compaction is running or needed.
    fn wait_for_compactions(&self, py: Python<'_>) -> PyResult<()> {
        let h = &self.handle;
        Ok(py.detach(|| h.with(|db| Ok(db.wait_for_compactions()?)))?)
    }

    /// The newest visible sequence number.
    #[getter]
    fn latest_sequence(&self, py: Python<'_>) -> PyResult<u64> {
        let h = &self.handle;
        Ok(py.detach(|| h.with(|db| Ok(db.latest_sequence())))?)
    }

    /// Stops background work, syncs the WAL and releases the directory.
    /// Iterators and snapshots still alive raise `DatabaseClosedError`
    /// afterwards. A second call does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let h = &self.handle;
        py.detach(|| h.close()).map_err(db_err)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "strata.DB({:?}{})",
            self.handle.path.display().to_string(),
            if self.handle.is_closed() {
                ", closed"
            } else {
                ""
            }
        )
    }

    /// Names of the tables in the catalog.
    fn tables<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let h = &self.handle;
        let names = py.detach(|| {
            h.with(|db| {
                Ok(strata_import::catalog::list(db)?
                    .into_iter()
                    .map(|e| e.table.name)
                    .collect::<Vec<_>>())
            })
        })?;
        PyList::new(py, names)
    }
    /// Imports CSV/TSV `files` into table `table` of `schema` (DDL text or
    /// a path), all or nothing; returns the import's summary as a dict.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (files, schema, table=None, *, format="csv", delimiter=None, quote=None,
        escape=None, header=None, null=None, memory=None, threads=0, max_bad_rows=0,
        rejects=None, on_duplicate="error"))]
    fn import_csv<'py>(
        &self,
        py: Python<'py>,
        files: &Bound<'py, PyAny>,
        schema: &Bound<'py, PyAny>,
        table: Option<&str>,
        format: &str,
        delimiter: Option<&str>,
        quote: Option<&str>,
        escape: Option<&str>,
        header: Option<&Bound<'py, PyAny>>,
        null: Option<String>,
        memory: Option<usize>,
        threads: usize,
        max_bad_rows: u64,
        rejects: Option<std::path::PathBuf>,
        on_duplicate: &str,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        crate::table::import_csv(
            py,
            &self.handle,
            files,
            schema,
            table,
            format,
            delimiter,
            quote,
            escape,
            header,
            null,
            memory,
            threads,
            max_bad_rows,
            rejects,
            on_duplicate,
        )
    }

    /// Ingests a table bundle (a directory of SSTs and
    /// `strata-bundle.json`, as `strata.spark.build_table` writes it) as a
    /// new table: every file is checked against the manifest and the
    /// schema first, then all of them and the catalog entry go in as one
    /// atomic ingestion. `move=True` moves the files in instead of copying.
    /// Returns a dict: table, table_id, rows, files, bytes, entries (per
    /// index), levels, verify_seconds, ingest_seconds.
    #[pyo3(signature = (bundle, *, r#move=false))]
    fn ingest_table<'py>(
        &self,
        py: Python<'py>,
        bundle: std::path::PathBuf,
        r#move: bool,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        crate::table::ingest_table(py, &self.handle, bundle, r#move)
    }

    /// The table `name` of the catalog.
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<crate::table::PyTable> {
        crate::table::PyTable::open(py, &self.handle, name)
    }
}
