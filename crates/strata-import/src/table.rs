//! Reading tables back: one row by primary key, ordered scans of the
//! primary key or a secondary index (with bounds on leading columns), and
//! row counts. Values given as text are parsed with the column's type, so
//! `get t 42` finds the row whose key is the integer 42.

use crate::catalog::{self, CatalogEntry};
use crate::codec::TableCodec;
use crate::csv::dialect::Dialect;
use crate::encode::key::prefix_end;
use crate::error::{Error, Result};
use crate::value::{self, Value};
use strata::Db;

/// A table opened for reading.
pub struct TableReader<'a> {
    db: &'a Db,
    /// The table's encoder.
    pub codec: TableCodec,
}

impl<'a> TableReader<'a> {
    /// Opens table `name` from the catalog.
    pub fn open(db: &'a Db, name: &str) -> Result<TableReader<'a>> {
        let Some(CatalogEntry { id, table }) = catalog::get(db, name)? else {
            let names: Vec<String> = catalog::list(db)?
                .into_iter()
                .map(|e| e.table.name)
                .collect();
            return Err(Error::invalid(if names.is_empty() {
                format!("no table {name} (this database holds no imported table)")
            } else {
                format!("no table {name} (the tables are: {})", names.join(", "))
            }));
        };
        Ok(TableReader {
            db,
            codec: TableCodec::new(table, id),
        })
    }

    /// Parses text values for the leading columns of `index`.
    fn values(&self, index: usize, texts: &[String]) -> Result<Vec<Value>> {
        let t = &self.codec.table;
        let cols = &t.indexes[index].columns;
        if texts.len() > cols.len() {
            return Err(Error::invalid(format!(
                "index {} has {} columns, {} values given",
                t.indexes[index].name,
                cols.len(),
                texts.len()
            )));
        }
        texts
            .iter()
            .zip(cols)
            .map(|(s, &c)| {
                let col = &t.columns[c];
                value::parse(&col.ty, s)
                    .map_err(|r| Error::invalid(format!("column {}: {r}", col.name)))
            })
            .collect()
    }

    /// The row with primary key `pk` (one text value per key column).
    pub fn get(&self, pk: &[String]) -> Result<Option<Vec<Value>>> {
        let n = self.codec.table.primary().columns.len();
        if pk.len() != n {
            return Err(Error::invalid(format!(
                "table {} has a primary key of {n} columns, {} values given",
                self.codec.table.name,
                pk.len()
            )));
        }
        let key = self.codec.primary_key(&self.values(0, pk)?);
        match self.db.get(&key)? {
            None => Ok(None),
            Some(v) => self.decode(&key, &v).map(Some),
        }
    }

    fn decode(&self, k: &[u8], v: &[u8]) -> Result<Vec<Value>> {
        self.codec.decode_primary(k, v).map_err(|m| {
            Error::Catalog(format!(
                "table {}: the row with primary key {} does not decode: {m}",
                self.codec.table.name,
                self.codec.describe_key(0, k)
            ))
        })
    }

    /// Rows in the order of `index` (0: primary key) whose leading index
    /// columns are `>= from` and `<= to` (each a prefix of the index's
    /// columns; empty: unbounded), at most `limit`.
    pub fn scan(
        &self,
        index: usize,
        from: &[String],
        to: &[String],
        limit: Option<usize>,
        mut each: impl FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<u64> {
        let lo = self
            .codec
            .index_key_prefix(index, &self.values(index, from)?);
        let hi_prefix = self.codec.index_key_prefix(index, &self.values(index, to)?);
        let hi = prefix_end(&hi_prefix).ok_or_else(|| Error::invalid("no upper bound"))?;
        let mut n = 0u64;
        for kv in self.db.range(lo..hi) {
            if limit.is_some_and(|l| n >= l as u64) {
                break;
            }
            let (k, v) = kv?;
            let row = if index == 0 {
                self.decode(&k, &v)?
            } else {
                let pk = self.codec.primary_of_entry(index, &k, &v).map_err(|m| {
                    Error::Catalog(format!(
                        "table {}: the entry {} of index {} does not decode: {m}",
                        self.codec.table.name,
                        self.codec.describe_key(index, &k),
                        self.codec.table.indexes[index].name
                    ))
                })?;
                let Some(rv) = self.db.get(&pk)? else {
                    return Err(Error::Catalog(format!(
                        "table {}: the entry {} of index {} names a row that does not exist (primary key {})",
                        self.codec.table.name,
                        self.codec.describe_key(index, &k),
                        self.codec.table.indexes[index].name,
                        self.codec.describe_key(0, &pk)
                    )));
                };
                self.decode(&pk, &rv)?
            };
            each(row)?;
            n += 1;
        }
        Ok(n)
    }

    /// Number of rows (entries of the primary index).
    pub fn count(&self) -> Result<u64> {
        let mut n = 0;
        for kv in self.db.prefix(self.codec.prefix(0)) {
            kv?;
            n += 1;
        }
        Ok(n)
    }

    /// Number of entries of one index.
    pub fn count_index(&self, index: usize) -> Result<u64> {
        let mut n = 0;
        for kv in self.db.prefix(self.codec.prefix(index)) {
            kv?;
            n += 1;
        }
        Ok(n)
    }

    /// `row` as a CSV line in `dialect` (the hidden row id left out).
    pub fn format_row(&self, row: &[Value], dialect: &Dialect) -> String {
        let t = &self.codec.table;
        let fields: Vec<Option<String>> = t
            .input_columns()
            .iter()
            .zip(row)
            .map(|(c, v)| match v {
                Value::Null => None,
                v => Some(value::format(&c.ty, v)),
            })
            .collect();
        dialect.write_record(&fields)
    }
}
