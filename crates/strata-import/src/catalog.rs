//! The catalog: table definitions stored in the database itself.
//!
//! Each table is one key in the system key space: `0x00 "catalog/"` and the
//! table's name in lower case, whose value is the definition in a small
//! line-based text form (`docs/formats.md`): its id, columns, indexes and
//! whether it has a hidden row id. The catalog key of a new table is
//! written in the same ingestion as its data, so a table is visible exactly
//! when all its rows are. Table ids are allocated as one more than the
//! largest in the catalog; one import at a time per database: the `Db`'s
//! directory lock ensures that across processes, and [`exclusive`] within
//! one (threads sharing a `Db`, as Python's may).

use crate::encode::key::SYSTEM_SPACE;
use crate::error::{Error, Result};
use crate::schema::{Column, ColumnType, Index, Table};
use std::path::PathBuf;
use std::sync::{Condvar, Mutex};
use strata::Db;

/// The databases (by scratch directory: one per open database) with an
/// import or bundle ingestion running in this process.
static RUNNING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Signalled when an import ends.
static ENDED: Condvar = Condvar::new();

/// Held by an import (or bundle ingestion) for its whole run: the next one
/// on the same database waits for it. Two at once raced: each checked its
/// keys against the table before the other's rows were there, so both
/// "succeeded" with overlapping primary keys (a row lost, its unique
/// index's entries left pointing at the other row), and two new tables
/// could be given one id (a user audit, with two Python threads).
pub struct Exclusive {
    key: PathBuf,
}

/// Waits until no other import runs on `db` in this process, then holds
/// it off until the returned guard is dropped.
pub fn exclusive(db: &Db) -> Exclusive {
    let key = db.scratch_dir();
    let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    while running.contains(&key) {
        running = ENDED.wait(running).unwrap_or_else(|p| p.into_inner());
    }
    running.push(key.clone());
    Exclusive { key }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        running.retain(|k| *k != self.key);
        ENDED.notify_all();
    }
}

const CATALOG_PREFIX: &[u8] = b"\x00catalog/";
const HEADER: &str = "strata-table 1";

/// A table as the catalog holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The table id in every key of the table.
    pub id: u32,
    /// The definition.
    pub table: Table,
}

/// The catalog key of table `name`.
pub fn key(name: &str) -> Vec<u8> {
    debug_assert_eq!(CATALOG_PREFIX[0], SYSTEM_SPACE);
    let mut k = CATALOG_PREFIX.to_vec();
    k.extend_from_slice(name.to_lowercase().as_bytes());
    k
}

/// Every table in the database, by name.
pub fn list(db: &Db) -> Result<Vec<CatalogEntry>> {
    let mut out = Vec::new();
    for kv in db.prefix(CATALOG_PREFIX) {
        let (k, v) = kv?;
        out.push(decode(&v).map_err(|m| {
            Error::Catalog(format!("entry {}: {m}", String::from_utf8_lossy(&k[1..])))
        })?);
    }
    Ok(out)
}

/// Table `name`, if the catalog has it.
pub fn get(db: &Db, name: &str) -> Result<Option<CatalogEntry>> {
    match db.get(key(name))? {
        None => Ok(None),
        Some(v) => decode(&v)
            .map(Some)
            .map_err(|m| Error::Catalog(format!("table {name}: {m}"))),
    }
}

/// The id for a new table.
pub fn next_id(db: &Db) -> Result<u32> {
    let max = list(db)?.iter().map(|e| e.id).max().unwrap_or(0);
    max.checked_add(1)
        .ok_or_else(|| Error::Catalog("table ids exhausted".into()))
}

/// Deletes every key of table id `id`, which the catalog does not list:
/// rows a killed direct or batch import wrote into a new table that never
/// got its catalog entry. Called before a new table takes the id (an
/// import, or a bundle's ingestion), so they cannot surface as its rows.
pub(crate) fn clear_unlisted_rows(db: &Db, id: u32) -> Result<()> {
    let (lo, hi) = crate::pipeline::table_range(id);
    if db.range(lo.clone()..hi.clone()).next().is_some() {
        remove_rows(db, &lo, &hi)?;
    }
    Ok(())
}

/// Deletes every key in `[lo, hi)` (one table's key space) by an excise
/// (`IngestOptions::excise` with no files) rather than a range tombstone.
///
/// Why: the keys are a whole table's, written by this import or a killed
/// one, so nothing else lies in the range, and an excise takes the files
/// inside it out of the version in one MANIFEST edit: their space is free
/// as soon as no reader holds them, instead of staying until a compaction
/// reaches a tombstone (a failed 10 GB direct import kept its 10 GB). A
/// file reaching past the range (a compaction merged it with a neighbour)
/// is cut to virtual files, no data rewritten; and the next import's files
/// can go below the range rather than over a tombstone. The engine falls
/// back to a range-tombstone file by itself when the memtable or an older
/// snapshot still sees the range, so the result is the same deletion,
/// atomic and durable like any ingestion, either way.
pub(crate) fn remove_rows(db: &Db, lo: &[u8], hi: &[u8]) -> strata::Result<()> {
    let none: [&std::path::Path; 0] = [];
    db.ingest(
        &none,
        &strata::IngestOptions {
            excise: Some((lo.to_vec(), hi.to_vec())),
            ..strata::IngestOptions::default()
        },
    )?;
    Ok(())
}

/// The catalog value of `e` (text; see `docs/formats.md`).
pub fn encode(e: &CatalogEntry) -> Vec<u8> {
    let t = &e.table;
    let mut s = format!(
        "{HEADER}\nid {}\nname {}\nrowid {}\n",
        e.id, t.name, t.hidden_rowid as u8
    );
    for c in &t.columns {
        s.push_str(&format!(
            "column {}\t{}\t{}\n",
            c.name,
            c.ty.sql(),
            if c.not_null { "notnull" } else { "null" }
        ));
    }
    for ix in &t.indexes {
        let cols: Vec<String> = ix.columns.iter().map(|c| c.to_string()).collect();
        s.push_str(&format!(
            "index {}\t{}\t{}\n",
            ix.name,
            if ix.unique { "unique" } else { "plain" },
            cols.join(",")
        ));
    }
    s.into_bytes()
}

/// Decodes a catalog value; the error says what is wrong.
pub fn decode(v: &[u8]) -> std::result::Result<CatalogEntry, String> {
    let s = std::str::from_utf8(v).map_err(|_| "not UTF-8")?;
    let mut lines = s.lines();
    if lines.next() != Some(HEADER) {
        return Err(format!("does not start with {HEADER:?}"));
    }
    let mut id = None;
    let mut name = None;
    let mut rowid = None;
    let mut columns = Vec::new();
    let mut indexes = Vec::new();
    for line in lines {
        let (tag, rest) = line.split_once(' ').ok_or(format!("bad line {line:?}"))?;
        let f: Vec<&str> = rest.split('\t').collect();
        match (tag, f.as_slice()) {
            ("id", [n]) => id = Some(n.parse::<u32>().map_err(|_| "bad id")?),
            ("name", [n]) => name = Some(n.to_string()),
            ("rowid", [r]) => rowid = Some(*r == "1"),
            ("column", [n, ty, nn]) => columns.push(Column {
                name: n.to_string(),
                ty: parse_type(ty)?,
                not_null: *nn == "notnull",
            }),
            ("index", [n, u, cols]) => indexes.push(Index {
                name: n.to_string(),
                unique: *u == "unique",
                columns: cols
                    .split(',')
                    .map(|c| {
                        c.parse::<usize>()
                            .map_err(|_| format!("bad index column {c:?}"))
                    })
                    .collect::<std::result::Result<_, _>>()?,
            }),
            _ => return Err(format!("bad line {line:?}")),
        }
    }
    let table = Table {
        name: name.ok_or("no name")?,
        columns,
        indexes,
        hidden_rowid: rowid.ok_or("no rowid line")?,
    };
    table.validate().map_err(|e| e.to_string())?;
    Ok(CatalogEntry {
        id: id.ok_or("no id")?,
        table,
    })
}

fn parse_type(s: &str) -> std::result::Result<ColumnType, String> {
    let arg = |s: &str| -> std::result::Result<Vec<u32>, String> {
        let inner = s
            .split_once('(')
            .and_then(|(_, r)| r.strip_suffix(')'))
            .ok_or(format!("bad type {s:?}"))?;
        inner
            .split(',')
            .map(|x| x.parse().map_err(|_| format!("bad type {s:?}")))
            .collect()
    };
    Ok(match s {
        "SMALLINT" => ColumnType::SmallInt,
        "INT" => ColumnType::Int,
        "BIGINT" => ColumnType::BigInt,
        "DOUBLE" => ColumnType::Double,
        "TEXT" => ColumnType::Text,
        "BOOL" => ColumnType::Bool,
        "DATE" => ColumnType::Date,
        "TIMESTAMP" => ColumnType::Timestamp,
        "BYTEA" => ColumnType::Bytea,
        _ if s.starts_with("DECIMAL(") => match arg(s)?.as_slice() {
            [p, sc] => ColumnType::Decimal {
                precision: *p,
                scale: *sc,
            },
            _ => return Err(format!("bad type {s:?}")),
        },
        _ if s.starts_with("CHAR(") => ColumnType::Char(arg(s)?[0]),
        _ if s.starts_with("VARCHAR(") => ColumnType::Varchar(arg(s)?[0]),
        _ => return Err(format!("unknown type {s:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;

    #[test]
    fn entries_round_trip() {
        let s = Schema::parse(
            "CREATE TABLE t (a INT, b VARCHAR(3) UNIQUE, c DECIMAL(9,3), d CHAR(2), e DOUBLE,
               f BOOL, g DATE, h TIMESTAMP, i BYTEA, j TEXT, k SMALLINT, l BIGINT NOT NULL);
             CREATE INDEX t_k ON t (k, a);",
        )
        .unwrap();
        let e = CatalogEntry {
            id: 7,
            table: s.tables[0].clone(),
        };
        assert_eq!(decode(&encode(&e)).unwrap(), e);
        assert!(decode(b"strata-table 1\nid x\n").is_err());
    }
}
