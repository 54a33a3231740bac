//! Fuzz targets for the import tool's parsers of untrusted text
//! (`crates/strata-import`), shared by the cargo-fuzz binaries
//! (`fuzz/fuzz_targets/import_*.rs`, nightly) and the corpus replay run by
//! an ordinary `cargo test` (`crates/strata-import/tests/fuzz_replay.rs`).
//!
//! The contract checked: no panic and no hang on any input; errors are
//! `Err` values; whatever a parser accepts round-trips: a schema prints
//! (`Table::sql`) to SQL that parses to the same table, a value formats to
//! text that parses to the same value, and a key decodes to the value it
//! encodes, in the value's SQL order; every row a CSV chunk yields decodes
//! from its primary entry to values whose key is that entry's key.

use std::cmp::Ordering;
use strata_import::catalog::{self, CatalogEntry};
use strata_import::chunk::Chunk;
use strata_import::codec::TableCodec;
use strata_import::csv::dialect::Dialect;
use strata_import::encode::key::{decode_value, encode_value};
use strata_import::parse::{parse_chunk, Layout};
use strata_import::schema::ColumnType;
use strata_import::value::{self, Value};
use strata_import::Schema;

/// A target: its name (the cargo-fuzz binary and the corpus directory) and
/// its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every import target.
pub const IMPORT_TARGETS: [Target; 4] = [
    ("import_schema", import_schema),
    ("import_catalog", import_catalog),
    ("import_value", import_value),
    ("import_csv", import_csv),
];

/// SQL DDL: `CREATE TABLE` / `CREATE INDEX` statements parsed into a
/// schema; every accepted table stored as a catalog entry must decode to
/// itself.
pub fn import_schema(data: &[u8]) {
    let sql = String::from_utf8_lossy(data);
    let Ok(schema) = Schema::parse(&sql) else {
        return;
    };
    for (i, t) in schema.tables.iter().enumerate() {
        let e = CatalogEntry {
            id: i as u32 + 1,
            table: t.clone(),
        };
        let stored = catalog::encode(&e);
        let back = catalog::decode(&stored).unwrap_or_else(|m| {
            panic!(
                "the catalog entry of a parsed table does not decode: {m}\n{}",
                String::from_utf8_lossy(&stored)
            )
        });
        assert_eq!(back, e, "table changed through the catalog");
    }
}

/// A catalog value (stored in the database, so possibly damaged): decoding
/// never panics, and an accepted entry encodes to a value that decodes to
/// it again.
pub fn import_catalog(data: &[u8]) {
    let Ok(e) = catalog::decode(data) else {
        return;
    };
    let again = catalog::decode(&catalog::encode(&e))
        .unwrap_or_else(|m| panic!("a decoded catalog entry does not round-trip: {m}: {e:?}"));
    assert_eq!(again, e);
}

/// The column types a value input chooses among (first byte).
fn column_type(b: u8, extra: u8) -> ColumnType {
    match b % 13 {
        0 => ColumnType::SmallInt,
        1 => ColumnType::Int,
        2 => ColumnType::BigInt,
        3 => ColumnType::Double,
        4 => {
            let precision = u32::from(extra % 38) + 1;
            ColumnType::Decimal {
                precision,
                scale: u32::from(extra / 38) % (precision + 1),
            }
        }
        5 => ColumnType::Char(u32::from(extra % 8)),
        6 => ColumnType::Varchar(u32::from(extra)),
        7 => ColumnType::Text,
        8 => ColumnType::Bool,
        9 => ColumnType::Date,
        10 => ColumnType::Timestamp,
        11 => ColumnType::Bytea,
        _ => ColumnType::Text,
    }
}

/// SQL order of two non-NULL values of one type (`None`: not comparable,
/// a NaN).
fn sql_cmp(a: &Value, b: &Value) -> Option<Ordering> {
    Some(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y)?,
        (Value::Decimal(x), Value::Decimal(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Date(x), Value::Date(y)) => x.cmp(y),
        (Value::Timestamp(x), Value::Timestamp(y)) => x.cmp(y),
        (Value::Bytes(x), Value::Bytes(y)) => x.cmp(y),
        _ => return None,
    })
}

/// One column value: byte 0 picks the type, byte 1 its parameters, the
/// rest is up to two texts separated by a newline. Each accepted text must
/// format and parse back to the same value, and encode to a key that
/// decodes to it (consuming the key exactly); two accepted values' keys
/// must compare as the values do in SQL.
pub fn import_value(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let ty = column_type(data[0], data[1]);
    let text = String::from_utf8_lossy(&data[2..]);
    let mut keys = Vec::new();
    for s in text.splitn(2, '\n') {
        let Ok(v) = value::parse(&ty, s) else {
            continue;
        };
        let shown = value::format(&ty, &v);
        let back = value::parse(&ty, &shown)
            .unwrap_or_else(|e| panic!("{ty:?}: {s:?} formats as {shown:?}, which fails: {e}"));
        assert!(
            same(&back, &v),
            "{ty:?}: {s:?} -> {v:?} -> {shown:?} -> {back:?}"
        );
        let mut k = Vec::new();
        encode_value(&mut k, &v);
        let mut rest = k.as_slice();
        let d = decode_value(&mut rest, &ty)
            .unwrap_or_else(|e| panic!("{ty:?}: key of {v:?} does not decode: {e}"));
        assert!(rest.is_empty(), "{ty:?}: key of {v:?} has bytes left");
        assert!(same(&d, &v), "{ty:?}: key of {v:?} decodes to {d:?}");
        keys.push((v, k));
    }
    if let [(a, ka), (b, kb)] = keys.as_slice() {
        if let Some(o) = sql_cmp(a, b) {
            assert_eq!(
                ka.cmp(kb),
                o,
                "{ty:?}: keys of {a:?} and {b:?} out of order"
            );
        }
    }
}

/// Values equal as SQL stores them (one NaN).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) if x.is_nan() && y.is_nan() => true,
        _ => a == b,
    }
}

/// The table the CSV target decodes rows into: a composite primary key
/// over text and integer, typed value columns, a unique and a plain index.
const CSV_SCHEMA: &str = "CREATE TABLE t (
    name VARCHAR(20) NOT NULL, n INT NOT NULL, price DECIMAL(10,2),
    day DATE, at TIMESTAMP, ok BOOL, x DOUBLE, blob BYTEA,
    PRIMARY KEY (name, n));
CREATE UNIQUE INDEX t_at ON t (at);
CREATE INDEX t_day ON t (day, ok);";

/// A CSV chunk (byte 0 picks CSV or TSV, the rest is the chunk) parsed
/// into the table's entries: bad rows are reported, never a panic; every
/// primary entry decodes to a row whose primary key is the entry's key,
/// and every secondary entry points at a primary key of the chunk.
pub fn import_csv(data: &[u8]) {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let Ok(schema) = Schema::parse(CSV_SCHEMA) else {
        panic!("the CSV target's schema does not parse");
    };
    let table = schema.tables[0].clone();
    let columns: Vec<usize> = (0..table.input_columns().len()).collect();
    let codec = TableCodec::new(table, 7);
    let dialect = if first % 2 == 0 {
        Dialect::csv()
    } else {
        Dialect::tsv()
    };
    let layout = Layout {
        codec: &codec,
        dialect: &dialect,
        columns: &columns,
        rowid_base: 0,
        pool: None,
    };
    let chunk = Chunk {
        seq: 0,
        file: 0,
        first_line: 1,
        offset: 0,
        data: body.to_vec(),
    };
    let parsed = parse_chunk(&chunk, &layout);
    let Some(primary) = parsed.entries.first() else {
        return;
    };
    let mut pks = std::collections::HashSet::new();
    for e in primary {
        let row = codec
            .decode_primary(&e.key, &e.value)
            .unwrap_or_else(|m| panic!("a primary entry does not decode: {m}"));
        let mut k = codec.prefix(0).to_vec();
        k.extend_from_slice(&codec.pk_bytes(&row));
        assert_eq!(k, e.key, "row {row:?}");
        pks.insert(e.key.clone());
    }
    for (i, entries) in parsed.entries.iter().enumerate().skip(1) {
        for e in entries {
            let pk = codec
                .primary_of_entry(i, &e.key, &e.value)
                .unwrap_or_else(|m| panic!("index {i} entry does not decode: {m}"));
            assert!(pks.contains(&pk), "index {i} entry points at no row");
        }
    }
}
