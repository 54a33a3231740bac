//! The table layer from Python: `db.import_csv(...)`, `db.table(name)`
//! (`get`, `scan`, `count`) and the encoders `strata.encode_key` and
//! `strata.encode_row`.
//!
//! Values cross the boundary typed: rows come back as tuples (or dicts) of
//! `int`, `float`, `decimal.Decimal`, `str`, `bool`, `datetime.date`,
//! `datetime.datetime`, `bytes` and `None`. Values given to `get`, `scan`
//! bounds and the encoders may be those types or their text forms (as in a
//! CSV file); each is parsed with its column's type, so `get(42)` and
//! `get("42")` find the same row.

use crate::errors::{import_err, InvalidArgumentError};
use crate::handle::Handle;
use crate::table_scan::{Cursor, TableScan};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyInt, PyList, PyMemoryView, PyString, PyTuple,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::ReadOptions;
use strata_import::codec::TableCodec;
use strata_import::csv::dialect::{Dialect, Header};
use strata_import::encode::key::prefix_end;
use strata_import::pipeline::OnDuplicate;
use strata_import::schema::{ColumnType, Table};
use strata_import::table::TableReader;
use strata_import::value::{self, Value};
use strata_import::{ImportOptions, Schema};

/// The text form of a Python value for a column of type `ty`, as a CSV
/// field would hold it. `bytes` are a BYTEA column's value (written in
/// hex); for any other column they are the field's text, in UTF-8.
///
/// The types taken are those rows come back as, `bytearray` and
/// `memoryview` as `bytes`, and integers of other kinds (any object with
/// `__index__`, e.g. numpy's); any other object is a `TypeError` naming
/// the column and the type (its `str()` was stored: a list `[1, 2]` became
/// the text `'[1, 2]'`).
fn text_of(o: &Bound<'_, PyAny>, ty: &ColumnType, column: &str) -> PyResult<String> {
    if o.is_instance_of::<PyByteArray>() || o.is_instance_of::<PyMemoryView>() {
        let b = crate::convert::bytes_of(o, "a value")?;
        return text_of(PyBytes::new(o.py(), &b).as_any(), ty, column);
    }
    if let Ok(b) = o.cast::<PyBytes>() {
        if *ty != ColumnType::Bytea {
            return match std::str::from_utf8(b.as_bytes()) {
                Ok(t) => Ok(t.to_string()),
                Err(e) => Err(InvalidArgumentError::new_err(format!(
                    "column {column}: bytes for a {} column must be UTF-8 text: {e}",
                    ty.sql()
                ))),
            };
        }
        let mut s = String::from("\\x");
        for x in b.as_bytes() {
            s.push_str(&format!("{x:02x}"));
        }
        return Ok(s);
    }
    if let Ok(b) = o.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.into());
    }
    if let Ok(s) = o.cast::<PyString>() {
        return Ok(s.to_str()?.to_string());
    }
    let py = o.py();
    let datetime = py.import("datetime")?;
    if o.is_instance(&datetime.getattr("datetime")?)? {
        return o.call_method1("isoformat", (" ",))?.extract();
    }
    if o.is_instance(&datetime.getattr("date")?)? {
        return o.call_method0("isoformat")?.extract();
    }
    if o.is_instance_of::<pyo3::types::PyFloat>() {
        return o.repr()?.extract();
    }
    if o.is_instance_of::<PyInt>() || o.is_instance(&py.import("decimal")?.getattr("Decimal")?)? {
        return o.str()?.extract();
    }
    if o.hasattr("__index__")? {
        return o.call_method0("__index__")?.str()?.extract();
    }
    Err(PyTypeError::new_err(format!(
        "column {column}: a value of type {} is not supported for a {} column (use int, \
         float, decimal.Decimal, str, bool, bytes, bytearray, memoryview, datetime.date, \
         datetime.datetime or None)",
        o.get_type().name()?,
        ty.sql()
    )))
}

/// A Python value as a value of a column of type `ty` (`None`: NULL).
fn value_of(o: &Bound<'_, PyAny>, ty: &ColumnType, column: &str) -> PyResult<Value> {
    if o.is_none() {
        return Ok(Value::Null);
    }
    let t = text_of(o, ty, column)?;
    value::parse(ty, &t).map_err(|r| InvalidArgumentError::new_err(format!("column {column}: {r}")))
}

/// The years `datetime.date` and `datetime.datetime` can hold.
const PY_YEARS: std::ops::RangeInclusive<i64> = 1..=9999;

/// A stored value as a Python object.
fn py_value<'py>(py: Python<'py>, ty: &ColumnType, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Text(s) => PyString::new(py, s).into_any(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        Value::Decimal(_) => py
            .import("decimal")?
            .getattr("Decimal")?
            .call1((value::format(ty, v),))?,
        // Python's dates hold years 1 to 9999; a value outside them (a
        // DATE the import accepted, e.g. MySQL's zero date 0000-01-01)
        // comes back as its text, so the row stays readable.
        Value::Date(days) => {
            let (y, m, d) = value::civil_from_days(i64::from(*days));
            if PY_YEARS.contains(&y) {
                py.import("datetime")?.getattr("date")?.call1((y, m, d))?
            } else {
                PyString::new(py, &value::format(ty, v)).into_any()
            }
        }
        Value::Timestamp(micros) => {
            const DAY: i64 = 86_400_000_000;
            let (y, m, d) = value::civil_from_days(micros.div_euclid(DAY));
            let rem = micros.rem_euclid(DAY);
            let secs = rem / 1_000_000;
            if PY_YEARS.contains(&y) {
                let parts = (
                    y,
                    m,
                    d,
                    secs / 3600,
                    secs / 60 % 60,
                    secs % 60,
                    rem % 1_000_000,
                );
                py.import("datetime")?.getattr("datetime")?.call1(parts)?
            } else {
                PyString::new(py, &value::format(ty, v)).into_any()
            }
        }
    })
}

/// A row (in table column order) as a tuple or a dict of the input columns.
pub(crate) fn py_row<'py>(
    py: Python<'py>,
    t: &Table,
    row: &[Value],
    as_dict: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let cols = t.input_columns();
    if as_dict {
        let d = PyDict::new(py);
        for (c, v) in cols.iter().zip(row) {
            d.set_item(&c.name, py_value(py, &c.ty, v)?)?;
        }
        Ok(d.into_any())
    } else {
        let vals = cols
            .iter()
            .zip(row)
            .map(|(c, v)| py_value(py, &c.ty, v))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyTuple::new(py, vals)?.into_any())
    }
}

/// `schema=`, parsed. A path object (`pathlib.Path`, any `os.PathLike`)
/// is a file to read. A `str` is a file to read when it names an existing
/// file, and a file name too when it holds neither white space nor a
/// parenthesis (no DDL lacks both: `"schema.sql"`, a file that is missing,
/// is an `IoError`, not a parse error); any other `str` is the DDL itself,
/// so text that is not DDL gets the parser's error with its line and
/// column, and `""` "the schema is empty". An error in a file's DDL names
/// the file.
pub(crate) fn parse_schema(o: &Bound<'_, PyAny>) -> PyResult<Schema> {
    let path: PathBuf = match o.cast::<PyString>() {
        Ok(s) => {
            let s = s.to_str()?;
            let p = Path::new(s);
            let name_like = !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || c == '(');
            if !p.is_file() && !name_like {
                return Schema::parse(s).map_err(import_err);
            }
            p.to_path_buf()
        }
        Err(_) => o.extract()?,
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| import_err(strata_import::Error::io(&path, e)))?;
    Schema::parse(&text).map_err(|e| {
        import_err(match e {
            strata_import::Error::Schema(m) => {
                strata_import::Error::schema(format!("{}: {m}", path.display()))
            }
            e => e,
        })
    })
}

/// The table named `table` (or the only one) of the schema.
pub(crate) fn pick_table(schema: &Schema, table: Option<&str>) -> PyResult<Table> {
    let names = || {
        schema
            .tables
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match table {
        Some(n) => schema.table(n).cloned().ok_or_else(|| {
            InvalidArgumentError::new_err(format!(
                "the schema defines no table {n} (it defines: {})",
                names()
            ))
        }),
        None if schema.tables.len() == 1 => Ok(schema.tables[0].clone()),
        None => Err(InvalidArgumentError::new_err(format!(
            "name the table: the schema defines {}",
            names()
        ))),
    }
}

fn one_byte(what: &str, s: &str) -> PyResult<u8> {
    match s {
        "\\t" | "tab" | "\t" => Ok(b'\t'),
        _ if s.len() == 1 => Ok(s.as_bytes()[0]),
        _ => Err(InvalidArgumentError::new_err(format!(
            "{what} must be one byte, not {s:?}"
        ))),
    }
}

/// The dialect from `import_csv`'s keywords (the CLI's options).
#[allow(clippy::too_many_arguments)]
fn dialect(
    format: &str,
    delimiter: Option<&str>,
    quote: Option<&str>,
    escape: Option<&str>,
    header: Option<&Bound<'_, PyAny>>,
    null: Option<String>,
) -> PyResult<Dialect> {
    let mut d = match format {
        "csv" => Dialect::csv(),
        "tsv" => Dialect::tsv(),
        _ => {
            return Err(InvalidArgumentError::new_err(format!(
                "format {format:?}: use csv or tsv"
            )))
        }
    };
    if let Some(x) = delimiter {
        d.delimiter = one_byte("delimiter", x)?;
    }
    if let Some(x) = quote {
        d.quote = Some(one_byte("quote", x)?);
    }
    if let Some(x) = escape {
        d.escape = Some(one_byte("escape", x)?);
    }
    if let Some(x) = null {
        d.null = x;
    }
    d.header = match header {
        None => Header::None,
        Some(h) if h.is_none() => Header::None,
        Some(h) => match h.extract::<bool>() {
            Ok(true) => Header::Skip,
            Ok(false) => Header::None,
            Err(_) => match h.extract::<String>()?.as_str() {
                "skip" => Header::Skip,
                "match" => Header::Match,
                "none" => Header::None,
                s => {
                    return Err(InvalidArgumentError::new_err(format!(
                        "header {s:?}: use True, False, \"skip\" or \"match\""
                    )))
                }
            },
        },
    };
    Ok(d)
}

fn summary_dict<'py>(py: Python<'py>, s: &strata_import::Summary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("table", &s.table)?;
    d.set_item("created", s.created)?;
    d.set_item("rows", s.rows)?;
    d.set_item("duplicates_ignored", s.duplicates_ignored)?;
    d.set_item("replaced", s.replaced)?;
    d.set_item("bad_rows", s.bad_rows)?;
    d.set_item("input_bytes", s.input_bytes)?;
    d.set_item("spilled_bytes", s.spilled_bytes)?;
    d.set_item("peak_buffer_bytes", s.peak_buffer_bytes)?;
    d.set_item("read_parse_seconds", s.read_parse.as_secs_f64())?;
    d.set_item("merge_write_seconds", s.merge_write.as_secs_f64())?;
    d.set_item("ingest_seconds", s.ingest.as_secs_f64())?;
    d.set_item("levels", s.levels.clone())?;
    // Units whose rows went in as a write batch (a small import's files are
    // applied that way): their files are not in `indexes[].files`.
    d.set_item("units", s.units)?;
    d.set_item("batch_units", s.batch_units)?;
    // None when no file was ingested (nothing to amplify), as `strata
    // import --json` gives null.
    d.set_item("write_amplification", s.write_amplification())?;
    let ix = PyList::empty(py);
    for i in &s.indexes {
        let e = PyDict::new(py);
        e.set_item("name", &i.name)?;
        e.set_item("kvs", i.kvs)?;
        e.set_item("files", i.files)?;
        e.set_item("file_bytes", i.file_bytes)?;
        e.set_item("in_order", i.in_order)?;
        e.set_item("spilled_bytes", i.spilled_bytes)?;
        ix.append(e)?;
    }
    d.set_item("indexes", ix)?;
    Ok(d)
}

/// The import's memory budget when `memory=` is not given: a quarter of
/// the machine's memory (256 MiB if /proc/meminfo does not say), as `strata
/// import` defaults `--memory` (`import_cmd.rs`), so a load from Python
/// sorts in memory wherever the command line would.
fn default_memory() -> usize {
    let kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        line.split_whitespace().nth(1)?.parse::<usize>().ok()
    });
    kib.map_or(256 << 20, |k| k.saturating_mul(1024) / 4)
}

/// `db.import_csv(...)` (see the method's documentation in `db.rs`'s
/// Python stub).
#[allow(clippy::too_many_arguments)]
pub fn import_csv<'py>(
    py: Python<'py>,
    handle: &Arc<Handle>,
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
    rejects: Option<PathBuf>,
    on_duplicate: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let names: Vec<String> = match files.extract::<PathBuf>() {
        Ok(p) => vec![p.display().to_string()],
        Err(_) => files
            .extract::<Vec<PathBuf>>()?
            .into_iter()
            .map(|p| p.display().to_string())
            .collect(),
    };
    let schema = parse_schema(schema)?;
    let def = pick_table(&schema, table)?;
    let opts = ImportOptions {
        dialect: dialect(format, delimiter, quote, escape, header, null)?,
        memory: memory.unwrap_or_else(default_memory),
        threads,
        max_bad_rows,
        rejects,
        on_duplicate: match on_duplicate {
            "error" => OnDuplicate::Error,
            "ignore" => OnDuplicate::Ignore,
            "replace" => OnDuplicate::Replace,
            s => {
                return Err(InvalidArgumentError::new_err(format!(
                    "on_duplicate {s:?}: use \"error\", \"ignore\" or \"replace\""
                )))
            }
        },
        ..ImportOptions::default()
    };
    let h = Arc::clone(handle);
    let summary = py.detach(move || {
        h.with(|db| {
            let inputs = strata_import::csv::input::expand(&names)?;
            Ok(strata_import::import(db, &def, &inputs, &opts)?)
        })
    })?;
    summary_dict(py, &summary)
}

/// `db.ingest_table(bundle, move=)`: a table bundle (SSTs built elsewhere,
/// e.g. by `strata.spark`, with `strata-bundle.json`) checked whole and
/// ingested as a new table in one step; returns a summary dict.
pub fn ingest_table<'py>(
    py: Python<'py>,
    handle: &Arc<Handle>,
    bundle: PathBuf,
    move_files: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let h = Arc::clone(handle);
    let opts = strata_import::bundle::BundleOptions { move_files };
    let s = py.detach(move || {
        h.with(|db| Ok(strata_import::bundle::ingest_table(db, &bundle, &opts)?))
    })?;
    let d = PyDict::new(py);
    d.set_item("table", &s.table)?;
    d.set_item("table_id", s.table_id)?;
    d.set_item("rows", s.rows)?;
    // Files that entered the tree as files, and 1 in `batch_units` (0
    // files, `levels` empty) when the database applied a small bundle as a
    // write batch instead, as `import_csv`'s summary counts units.
    d.set_item("files", s.files)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("batch_units", s.batch_units)?;
    let entries = PyDict::new(py);
    for (index, n) in &s.entries {
        entries.set_item(index, n)?;
    }
    d.set_item("entries", entries)?;
    d.set_item("levels", &s.levels)?;
    d.set_item("verify_seconds", s.verify.as_secs_f64())?;
    d.set_item("ingest_seconds", s.ingest.as_secs_f64())?;
    Ok(d)
}

/// A table of the database, from `db.table(name)`.
#[pyclass(module = "strata", name = "Table")]
pub struct PyTable {
    handle: Arc<Handle>,
    codec: Arc<TableCodec>,
}

impl PyTable {
    /// Opens table `name` (its catalog entry is read once).
    pub fn open(py: Python<'_>, handle: &Arc<Handle>, name: &str) -> PyResult<PyTable> {
        let h = Arc::clone(handle);
        let codec = py.detach(|| {
            h.with(|db| {
                let r = TableReader::open(db, name)?;
                Ok(r.codec)
            })
        })?;
        Ok(PyTable {
            handle: Arc::clone(handle),
            codec: Arc::new(codec),
        })
    }

    /// Text forms of `values` for the leading columns of `index`.
    fn texts(&self, index: usize, values: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let vals: Vec<Bound<'_, PyAny>> = if values.is_none() {
            Vec::new()
        } else if values.is_instance_of::<PyTuple>() || values.is_instance_of::<PyList>() {
            values.extract()?
        } else {
            vec![values.clone()]
        };
        let ncols = self.codec.table.indexes[index].columns.len();
        if vals.len() > ncols {
            return Err(InvalidArgumentError::new_err(format!(
                "index {} has {ncols} columns, {} values given",
                self.codec.table.indexes[index].name,
                vals.len()
            )));
        }
        let table = &self.codec.table;
        vals.iter()
            .zip(&table.indexes[index].columns)
            .map(|(v, &c)| {
                if v.is_none() {
                    Err(InvalidArgumentError::new_err("key values cannot be None"))
                } else {
                    let col = &table.columns[c];
                    text_of(v, &col.ty, &col.name)
                }
            })
            .collect()
    }

    /// The key prefix of index `index`'s entries whose leading columns are
    /// `values` (a value or a tuple of leading values; None: all entries).
    fn key_prefix(&self, index: usize, values: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<u8>> {
        let texts = match values {
            Some(v) => self.texts(index, v)?,
            None => Vec::new(),
        };
        let t = &self.codec.table;
        let vals = texts
            .iter()
            .zip(&t.indexes[index].columns)
            .map(|(s, &c)| {
                let col = &t.columns[c];
                value::parse(&col.ty, s)
                    .map_err(|r| InvalidArgumentError::new_err(format!("column {}: {r}", col.name)))
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(self.codec.index_key_prefix(index, &vals))
    }

    fn index(&self, index: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
        let Some(ix) = index.filter(|i| !i.is_none()) else {
            return Ok(0);
        };
        if let Ok(n) = ix.extract::<usize>() {
            if n < self.codec.table.indexes.len() {
                return Ok(n);
            }
            return Err(InvalidArgumentError::new_err(format!(
                "no index number {n}"
            )));
        }
        let name: String = ix.extract()?;
        self.codec.table.index_by_name(&name).ok_or_else(|| {
            InvalidArgumentError::new_err(format!(
                "table {} has no index {name}",
                self.codec.table.name
            ))
        })
    }
}

#[pymethods]
impl PyTable {
    /// The table's name.
    #[getter]
    fn name(&self) -> String {
        self.codec.table.name.clone()
    }

    /// The id in every key of the table (for `strata.encode_key`).
    #[getter]
    fn table_id(&self) -> u32 {
        self.codec.table_id
    }

    /// Column names, in order (the hidden row id left out).
    #[getter]
    fn columns(&self) -> Vec<String> {
        column_names(&self.codec.table)
    }

    /// Index names, the primary key first.
    #[getter]
    fn indexes(&self) -> Vec<String> {
        index_names(&self.codec.table)
    }

    /// The row whose primary key is `pk` (one value per key column), as a
    /// tuple (or a dict), or None.
    #[pyo3(signature = (*pk, as_dict=false))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        pk: &Bound<'py, PyTuple>,
        as_dict: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let texts = self.texts(0, pk.as_any())?;
        let (h, name) = (Arc::clone(&self.handle), self.codec.table.name.clone());
        let row = py.detach(move || h.with(|db| Ok(TableReader::open(db, &name)?.get(&texts)?)))?;
        row.map(|r| py_row(py, &self.codec.table, &r, as_dict))
            .transpose()
    }

    /// Rows in the order of `index` (a name or number; None: the primary
    /// key), or backward with `reverse=True`, whose leading index columns
    /// are `>= start` and `<= end` (each a value or a tuple of leading
    /// values; None: unbounded), at most `limit`, as tuples (or dicts).
    /// Returns a lazy iterator (`TableScan`) over the table as it is now:
    /// it reads rows in chunks with the GIL released, and raises
    /// `DatabaseClosedError` once the database is closed.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (index=None, start=None, end=None, limit=None, as_dict=false, reverse=false))]
    fn scan(
        &self,
        py: Python<'_>,
        index: Option<&Bound<'_, PyAny>>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        limit: Option<usize>,
        as_dict: bool,
        reverse: bool,
    ) -> PyResult<TableScan> {
        let ix = self.index(index)?;
        let lower = self.key_prefix(ix, start)?;
        // `end` is inclusive of every key it is a prefix of.
        let upper = prefix_end(&self.key_prefix(ix, end)?);
        let h = Arc::clone(&self.handle);
        let cursor = py.detach(move || {
            h.with(|db| {
                let rows_at = (ix > 0).then(|| db.snapshot());
                let opts = ReadOptions {
                    snapshot: rows_at.as_ref(),
                    lower: Some(lower),
                    upper,
                };
                let raw = db.raw_iter(&opts)?;
                Ok(Cursor { raw, rows_at })
            })
        })?;
        Ok(TableScan::new(
            &self.handle,
            cursor,
            &self.codec,
            ix,
            reverse,
            limit,
            as_dict,
        ))
    }

    /// Number of rows (`index`: entries of that index).
    #[pyo3(signature = (index=None))]
    fn count(&self, py: Python<'_>, index: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        let ix = self.index(index)?;
        let (h, name) = (Arc::clone(&self.handle), self.codec.table.name.clone());
        let n = py.detach(move || {
            h.with(|db| {
                let r = TableReader::open(db, &name)?;
                Ok(if ix == 0 {
                    r.count()?
                } else {
                    r.count_index(ix)?
                })
            })
        })?;
        Ok(n)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.count(py, None)? as usize)
    }

    fn __repr__(&self) -> String {
        format!("strata.Table({:?})", self.codec.table.name)
    }
}

/// A full row (one value per input column) in table column order.
pub(crate) fn row_values(
    t: &Table,
    row: &Bound<'_, PyAny>,
    rowid: Option<i64>,
) -> PyResult<Vec<Value>> {
    let vals: Vec<Bound<'_, PyAny>> = if let Ok(d) = row.cast::<PyDict>() {
        t.input_columns()
            .iter()
            .map(|c| {
                Ok(d.get_item(&c.name)?
                    .unwrap_or_else(|| row.py().None().into_bound(row.py())))
            })
            .collect::<PyResult<_>>()?
    } else {
        row.extract()?
    };
    let cols = t.input_columns();
    if vals.len() != cols.len() {
        return Err(InvalidArgumentError::new_err(format!(
            "table {} has {} columns, {} values given",
            t.name,
            cols.len(),
            vals.len()
        )));
    }
    let mut out = cols
        .iter()
        .zip(&vals)
        .map(|(c, v)| {
            let val = value_of(v, &c.ty, &c.name)?;
            if val == Value::Null && c.not_null {
                return Err(InvalidArgumentError::new_err(format!(
                    "column {} is NOT NULL",
                    c.name
                )));
            }
            Ok(val)
        })
        .collect::<PyResult<Vec<_>>>()?;
    if t.hidden_rowid {
        let id = rowid.ok_or_else(|| {
            InvalidArgumentError::new_err(format!(
                "table {} has no primary key: give the row's rowid=",
                t.name
            ))
        })?;
        out.push(Value::Int(id));
    }
    Ok(out)
}

fn codec_for(
    schema: &Bound<'_, PyAny>,
    table: Option<&str>,
    table_id: u32,
) -> PyResult<TableCodec> {
    let schema = parse_schema(schema)?;
    Ok(TableCodec::new(pick_table(&schema, table)?, table_id))
}

/// The key of `row`'s entry in `index` (None: the primary key) of table
/// `table` of `schema` (DDL text or a path), stored under `table_id` (a
/// table's `table_id`). `row`: one value per column, or a dict by name.
#[pyfunction]
#[pyo3(signature = (schema, table, row, *, table_id, index=None, rowid=None))]
pub fn encode_key<'py>(
    py: Python<'py>,
    schema: &Bound<'py, PyAny>,
    table: Option<&str>,
    row: &Bound<'py, PyAny>,
    table_id: u32,
    index: Option<&Bound<'py, PyAny>>,
    rowid: Option<i64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let codec = codec_for(schema, table, table_id)?;
    let ix = match index.filter(|i| !i.is_none()) {
        None => 0,
        Some(i) => match i.extract::<usize>() {
            Ok(n) if n < codec.table.indexes.len() => n,
            Ok(n) => {
                return Err(InvalidArgumentError::new_err(format!(
                    "no index number {n}"
                )))
            }
            Err(_) => {
                let name: String = i.extract()?;
                codec.table.index_by_name(&name).ok_or_else(|| {
                    InvalidArgumentError::new_err(format!(
                        "table {} has no index {name}",
                        codec.table.name
                    ))
                })?
            }
        },
    };
    let vals = row_values(&codec.table, row, rowid)?;
    let pk = codec.pk_bytes(&vals);
    let (mut k, mut v) = (Vec::new(), Vec::new());
    codec.entry(ix, &vals, &pk, &mut k, &mut v);
    Ok(PyBytes::new(py, &k))
}

/// The value of `row`'s primary entry (every column not in the primary
/// key), as `import_csv` stores it.
#[pyfunction]
#[pyo3(signature = (schema, table, row, *, rowid=None))]
pub fn encode_row<'py>(
    py: Python<'py>,
    schema: &Bound<'py, PyAny>,
    table: Option<&str>,
    row: &Bound<'py, PyAny>,
    rowid: Option<i64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let codec = codec_for(schema, table, 0)?;
    let vals = row_values(&codec.table, row, rowid)?;
    let pk = codec.pk_bytes(&vals);
    let (mut k, mut v) = (Vec::new(), Vec::new());
    codec.entry(0, &vals, &pk, &mut k, &mut v);
    Ok(PyBytes::new(py, &v))
}

/// Decodes a primary entry (key and value from `db.items()`) of table
/// `table` of `schema` back into a row tuple.
#[pyfunction]
#[pyo3(signature = (schema, table, key, value))]
pub fn decode_row<'py>(
    py: Python<'py>,
    schema: &Bound<'py, PyAny>,
    table: Option<&str>,
    key: &[u8],
    value: &[u8],
) -> PyResult<Bound<'py, PyAny>> {
    let table_id = match key.get(1..5) {
        Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        None => {
            return Err(InvalidArgumentError::new_err(
                "key is too short to be a table key",
            ))
        }
    };
    let codec = codec_for(schema, table, table_id)?;
    let row = codec
        .decode_primary(key, value)
        .map_err(|m| InvalidArgumentError::new_err(format!("row does not decode: {m}")))?;
    py_row(py, &codec.table, &row, false)
}

/// The names of the columns a row gives, in order (a hidden row id left
/// out): `Table.columns` and `TableEncoder.input_columns`.
pub fn column_names(t: &strata_import::schema::Table) -> Vec<String> {
    t.input_columns().iter().map(|c| c.name.clone()).collect()
}

/// The index names, the primary index first (an entry's index number is a
/// position in this list): `Table.indexes` and `TableEncoder.index_names`.
pub fn index_names(t: &strata_import::schema::Table) -> Vec<String> {
    t.indexes.iter().map(|i| i.name.clone()).collect()
}
