//! `TableEncoder`: one table's rows to the key-value entries of every index,
//! exactly as `import_csv` and `strata import` encode them, for programs
//! that build a table's SSTs themselves (the Spark path, `strata.spark`).
//!
//! The schema is parsed once, when the encoder is made, so encoding a row
//! costs no more than the encoding itself; `entries(row)` gives one entry
//! per index (primary first), each `(index number, key, value)`.

use crate::errors::InvalidArgumentError;
use crate::table::{parse_schema, pick_table, row_values};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use strata_import::codec::TableCodec;

/// Encodes rows of one table into the entries of all its indexes.
#[pyclass(name = "TableEncoder", module = "strata._strata", frozen)]
pub struct TableEncoder {
    codec: TableCodec,
}

#[pymethods]
impl TableEncoder {
    /// `TableEncoder(schema, table, table_id)`: table `table` of `schema`
    /// (DDL text or a path) stored under `table_id`.
    #[new]
    #[pyo3(signature = (schema, table, table_id))]
    fn new(schema: &Bound<'_, PyAny>, table: Option<&str>, table_id: u32) -> PyResult<Self> {
        if table_id == 0 {
            return Err(InvalidArgumentError::new_err("table ids start at 1"));
        }
        let schema = parse_schema(schema)?;
        Ok(TableEncoder {
            codec: TableCodec::new(pick_table(&schema, table)?, table_id),
        })
    }

    /// The columns a row gives, in order (the hidden row id not included).
    #[getter]
    fn input_columns(&self) -> Vec<String> {
        crate::table::column_names(&self.codec.table)
    }

    /// The index names, primary (`"primary"`) first; an entry's index
    /// number is a position in this list.
    #[getter]
    fn index_names(&self) -> Vec<String> {
        crate::table::index_names(&self.codec.table)
    }

    /// The entries of `row` (one value per input column, or a dict by
    /// name; text is parsed with the column's type as `import_csv` parses
    /// it): a list of `(index number, key, value)`, one per index.
    #[pyo3(signature = (row, *, rowid=None))]
    fn entries<'py>(
        &self,
        py: Python<'py>,
        row: &Bound<'py, PyAny>,
        rowid: Option<i64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let vals = row_values(&self.codec.table, row, rowid)?;
        let pk = self.codec.pk_bytes(&vals);
        let (mut k, mut v) = (Vec::new(), Vec::new());
        let out = PyList::empty(py);
        for ix in 0..self.codec.table.indexes.len() {
            self.codec.entry(ix, &vals, &pk, &mut k, &mut v);
            out.append(PyTuple::new(
                py,
                [
                    ix.into_pyobject(py)?.into_any(),
                    PyBytes::new(py, &k).into_any(),
                    PyBytes::new(py, &v).into_any(),
                ],
            )?)?;
        }
        Ok(out)
    }

    /// The values of index `index`'s columns in `key`, as text (for
    /// messages, e.g. naming a duplicate key).
    fn describe_key(&self, index: usize, key: &[u8]) -> PyResult<String> {
        if index >= self.codec.table.indexes.len() {
            return Err(InvalidArgumentError::new_err(format!(
                "no index number {index}"
            )));
        }
        Ok(self.codec.describe_key(index, key))
    }
}
