//! Table commands: `get` (one row by primary key, as a CSV line), `scan`
//! (rows in primary-key or index order, with bounds and a limit), `count`
//! and `tables`. They only read: the database must exist, and it is opened
//! read-only (nothing in its directory is created or changed).

use crate::open;
use anyhow::{bail, Result};
use clap::Args;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use strata_import::catalog;
use strata_import::csv::dialect::Dialect;
use strata_import::table::TableReader;

/// Arguments of `strata get`.
#[derive(Args)]
pub struct GetArgs {
    /// Database directory.
    pub db: PathBuf,
    /// Table name.
    pub table: String,
    /// Primary-key values, one per key column.
    #[arg(required = true, allow_negative_numbers = true)]
    pub pk: Vec<String>,
}

/// Arguments of `strata scan`.
#[derive(Args)]
pub struct ScanArgs {
    /// Database directory.
    pub db: PathBuf,
    /// Table name.
    pub table: String,
    /// Scan this secondary index instead of the primary key.
    #[arg(long)]
    pub index: Option<String>,
    /// Lowest values of the leading index columns (inclusive).
    #[arg(long, num_args = 1.., allow_negative_numbers = true)]
    pub from: Vec<String>,
    /// Highest values of the leading index columns (inclusive). NULLs
    /// sort first in every index, so `--to` alone also gives the rows
    /// whose leading column is NULL; add `--from` to leave them out.
    #[arg(long, num_args = 1.., allow_negative_numbers = true)]
    pub to: Vec<String>,
    /// At most this many rows.
    #[arg(long)]
    pub limit: Option<usize>,
}

/// Arguments of `strata count`.
#[derive(Args)]
pub struct CountArgs {
    /// Database directory.
    pub db: PathBuf,
    /// Table name.
    pub table: String,
}

/// Output rows use this dialect: CSV with `\N` for NULL, so an empty
/// string and NULL differ and the output imports again with `--null '\N'`.
fn out_dialect() -> Dialect {
    Dialect {
        null: "\\N".into(),
        ..Dialect::csv()
    }
}

/// Runs `strata get`.
pub fn get(a: GetArgs) -> Result<()> {
    let db = open::read_only(&a.db)?;
    let t = TableReader::open(&db, &a.table)?;
    match t.get(&a.pk)? {
        Some(row) => outln!("{}", t.format_row(&row, &out_dialect()))?,
        None => bail!("table {}: no row with key {}", a.table, a.pk.join(", ")),
    }
    Ok(())
}

/// Runs `strata scan`.
pub fn scan(a: ScanArgs) -> Result<()> {
    let db = open::read_only(&a.db)?;
    let t = TableReader::open(&db, &a.table)?;
    let index = match &a.index {
        None => 0,
        Some(n) => match t.codec.table.index_by_name(n) {
            Some(i) => i,
            None => bail!("table {} has no index {n}", a.table),
        },
    };
    let d = out_dialect();
    let mut out = BufWriter::new(std::io::stdout().lock());
    t.scan(index, &a.from, &a.to, a.limit, |row| {
        writeln!(out, "{}", t.format_row(&row, &d))
            .map_err(|e| strata_import::Error::io("<stdout>", e))
    })?;
    out.flush()?;
    Ok(())
}

/// Runs `strata count`.
pub fn count(a: CountArgs) -> Result<()> {
    let db = open::read_only(&a.db)?;
    outln!("{}", TableReader::open(&db, &a.table)?.count()?)?;
    Ok(())
}

/// Runs `strata tables`: each table, its columns, indexes and row count.
/// A database without tables prints nothing on standard output and says
/// so on standard error (as `count` does in its error), exiting 0.
pub fn tables(db: &std::path::Path) -> Result<()> {
    let db = open::read_only(db)?;
    let entries = catalog::list(&db)?;
    if entries.is_empty() {
        writeln!(
            std::io::stderr().lock(),
            "this database holds no imported table"
        )?;
    }
    for e in entries {
        let t = TableReader::open(&db, &e.table.name)?;
        outln!("{} (id {}): {} rows", e.table.name, e.id, t.count()?)?;
        for c in e.table.input_columns() {
            outln!(
                "  {} {}{}",
                c.name,
                c.ty.sql(),
                if c.not_null { " NOT NULL" } else { "" }
            )?;
        }
        if e.table.hidden_rowid {
            outln!("  (no primary key: rows keyed by a hidden row id)")?;
        }
        for (i, ix) in e.table.indexes.iter().enumerate() {
            let cols: Vec<&str> = ix
                .columns
                .iter()
                .map(|&c| e.table.columns[c].name.as_str())
                .collect();
            outln!(
                "  index {}{} ({}): {} entries",
                ix.name,
                if i == 0 {
                    " PRIMARY KEY".to_string()
                } else if ix.unique {
                    " UNIQUE".to_string()
                } else {
                    String::new()
                },
                cols.join(", "),
                t.count_index(i)?
            )?;
        }
    }
    Ok(())
}
