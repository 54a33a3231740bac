//! End-to-end import tests: round trips of random schemas and rows through
//! CSV, the in-order and spill paths, and every bad-input case (file, line,
//! column reported, database unchanged, temporary files gone).

#![allow(clippy::unwrap_used)] // tests may unwrap

use proptest::prelude::*;
use std::path::Path;
use strata::Db;
use strata_import::csv::dialect::{Dialect, Header};
use strata_import::csv::input::Input;
use strata_import::schema::{ColumnType, Schema};
use strata_import::table::TableReader;
use strata_import::value::{self, Value};
use strata_import::{import, Error, ImportOptions};
use support::no_temp_dirs;

mod support;

fn all_pairs(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter().collect::<Result<_, _>>().unwrap()
}

fn write(dir: &Path, name: &str, data: &[u8]) -> Input {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    Input::File(p)
}

const BAD_SCHEMA: &str =
    "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(5) NOT NULL, amount DECIMAL(6,2));
     CREATE TABLE other (k TEXT PRIMARY KEY, v BIGINT);";

fn bad_opts() -> ImportOptions {
    let mut d = Dialect::csv();
    d.null = "\\N".into();
    d.header = Header::Skip;
    ImportOptions {
        dialect: d,
        chunk_size: 16,
        memory: 200,
        ..ImportOptions::default()
    }
}

/// Each bad row: the file's text, then the expected line and column.
#[test]
fn bad_rows_name_file_line_column_and_leave_the_db_unchanged() {
    type Case<'a> = (&'a str, &'a [u8], u64, Option<&'a str>, &'a str);
    let cases: &[Case] = &[
        (
            "count",
            b"id,name,amount\n1,a,1\n2,\"b\nc\",2\n3,x\n",
            5,
            None,
            "expected 3 fields",
        ),
        (
            "blank line",
            b"id,name,amount\n1,a,1\n\n2,b,2\n",
            3,
            None,
            "a blank line: expected 3 fields",
        ),
        (
            "blank line at the end",
            b"id,name,amount\r\n1,a,1\r\n2,b,2\r\n\r\n",
            4,
            None,
            "a blank line",
        ),
        (
            "parse",
            b"id,name,amount\n1,a,1\n2,b,2\nx3,c,3\n",
            4,
            Some("id"),
            "not an integer",
        ),
        (
            "decimal",
            b"id,name,amount\n1,a,1\n2,b,2.345\n",
            3,
            Some("amount"),
            "fractional",
        ),
        (
            "notnull",
            b"id,name,amount\r\n1,a,1\r\n2,\\N,2\r\n",
            3,
            Some("name"),
            "NOT NULL",
        ),
        (
            "toolong",
            b"id,name,amount\n1,a,1\n2,abcdef,2\n",
            3,
            Some("name"),
            "longer than VARCHAR(5)",
        ),
        (
            "quote",
            b"id,name,amount\n1,a,1\n2,\"b,2\n3,c,3\n",
            3,
            None,
            "unterminated",
        ),
        (
            "utf8",
            b"id,name,amount\n1,a,1\n2,\xff\xfe,2\n",
            3,
            Some("name"),
            "UTF-8",
        ),
        (
            // A character split by a delimiter: the record's field bytes
            // (quotes resolved, delimiters dropped) are valid UTF-8 as a
            // whole, each field alone is not.
            "utf8split",
            b"id,name,amount\n1,a,1\n2,\"\xc3\",\xa9\n",
            3,
            Some("name"),
            "UTF-8",
        ),
        (
            "utf8plain",
            b"id,name,amount\n1,a,1\n2,\xc3,\xa9\n",
            3,
            Some("name"),
            "UTF-8",
        ),
        (
            "range",
            b"id,name,amount\n1,a,1\n99999999999,b,2\n",
            3,
            Some("id"),
            "out of range",
        ),
        // TSV (names starting `tsv`): escapes decode before the checks.
        (
            "tsvutf8",
            b"id\tname\tamount\n1\ta\t1\n2\tb\\377\t2\n",
            3,
            Some("name"),
            "invalid UTF-8 (after its escapes)",
        ),
        (
            "tsvlength",
            b"id\tname\tamount\n1\t\\x41\\102CD\\t\\\\\t1\n",
            2,
            Some("name"),
            "longer than VARCHAR(5)",
        ),
        (
            "tsvend",
            b"id\tname\tamount\n1\ta\\\t1\n",
            2,
            Some("name"),
            "a backslash ends the field",
        ),
        (
            "tsvmarker",
            b"id\tname\tamount\n1\ta\t1\n\\.\n",
            3,
            None,
            "end-of-data marker",
        ),
    ];
    let schema = Schema::parse(BAD_SCHEMA).unwrap();
    for (name, data, line, column, reason) in cases {
        let dir = tempfile::tempdir().unwrap();
        let dbdir = dir.path().join("db");
        let db = Db::open_default(&dbdir).unwrap();
        // Something in the database to keep: another table and raw keys.
        let pre = write(dir.path(), "pre.csv", b"a,1\nb,2\n");
        let mut o = bad_opts();
        o.dialect.header = Header::None;
        import(&db, schema.table("other").unwrap(), &[pre], &o).unwrap();
        db.put("raw", "kept").unwrap();
        let before = all_pairs(&db);
        let input = write(dir.path(), &format!("{name}.csv"), data);
        let mut o = bad_opts();
        if name.starts_with("tsv") {
            o.dialect = Dialect {
                header: Header::Skip,
                ..Dialect::tsv()
            };
        }
        let err = import(&db, schema.table("t").unwrap(), &[input], &o).expect_err(name);
        match &err {
            Error::BadRow {
                at,
                column: c,
                reason: r,
            } => {
                assert!(at.file.ends_with(&format!("{name}.csv")), "{name}: {err}");
                assert_eq!(at.line, *line, "{name}: {err}");
                assert_eq!(c.as_deref(), *column, "{name}: {err}");
                assert!(r.contains(reason), "{name}: {err}");
            }
            other => panic!("{name}: unexpected {other}"),
        }
        assert_eq!(all_pairs(&db), before, "{name}: database changed");
        assert!(
            TableReader::open(&db, "t").is_err(),
            "{name}: table appeared"
        );
        no_temp_dirs(&dbdir);
    }
}

#[test]
fn bad_rows_within_the_limit_go_to_the_rejects_file() {
    let dir = tempfile::tempdir().unwrap();
    let dbdir = dir.path().join("db");
    let db = Db::open_default(&dbdir).unwrap();
    let schema = Schema::parse(BAD_SCHEMA).unwrap();
    let data = b"id,name,amount\n1,a,1\n2,toolong,2\n3,c,x\n4,d,4\n";
    let input = write(dir.path(), "in.csv", data);
    let rejects = dir.path().join("rejects.csv");
    let mut o = bad_opts();
    o.max_bad_rows = 2;
    o.rejects = Some(rejects.clone());
    let s = import(
        &db,
        schema.table("t").unwrap(),
        std::slice::from_ref(&input),
        &o,
    )
    .unwrap();
    assert_eq!((s.rows, s.bad_rows), (2, 2));
    assert_eq!(std::fs::read(&rejects).unwrap(), b"2,toolong,2\n3,c,x\n");
    let reasons = std::fs::read_to_string(strata_import::pipeline::reasons_path(&rejects)).unwrap();
    let lines: Vec<&str> = reasons.lines().collect();
    assert!(lines[0].contains("in.csv:3: column name:"), "{reasons}");
    assert!(lines[1].contains("in.csv:4: column amount:"), "{reasons}");
    let t = TableReader::open(&db, "t").unwrap();
    assert_eq!(t.count().unwrap(), 2);
    // One more bad row than allowed fails the whole import.
    let dir2 = tempfile::tempdir().unwrap();
    let db2 = Db::open_default(dir2.path()).unwrap();
    o.max_bad_rows = 1;
    // A new rejects file: the first one exists now, and is never overwritten.
    o.rejects = Some(dir.path().join("rejects2.csv"));
    let e = import(&db2, schema.table("t").unwrap(), &[input], &o).unwrap_err();
    assert!(e.to_string().contains("in.csv:4: column amount"), "{e}");
    assert!(all_pairs(&db2).is_empty());
}

/// A one-column table's NULL (CSV) or empty string (the text format) is
/// written as a blank line, and read back as that row: a blank line is a
/// record of one empty field, as in PostgreSQL's COPY, never skipped.
#[test]
fn a_one_column_table_round_trips_rows_written_as_blank_lines() {
    let schema = Schema::parse("CREATE TABLE one (v TEXT)").unwrap();
    let rows = [
        Some("a".to_string()),
        None,
        Some(String::new()),
        Some("\\N".to_string()),
        None,
    ];
    for (name, dialect) in [("csv", Dialect::csv()), ("tsv", Dialect::tsv())] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open_default(dir.path().join("db")).unwrap();
        let mut text = String::new();
        for r in &rows {
            text.push_str(&dialect.write_record(std::slice::from_ref(r)));
            text.push('\n');
        }
        assert!(text.contains("\n\n"), "{name}: no blank line in {text:?}");
        let input = write(dir.path(), &format!("in.{name}"), text.as_bytes());
        let o = ImportOptions {
            dialect: dialect.clone(),
            ..ImportOptions::default()
        };
        let s = import(&db, schema.table("one").unwrap(), &[input], &o).unwrap();
        assert_eq!(s.rows, rows.len() as u64, "{name}: {text:?}");
        let mut got = Vec::new();
        TableReader::open(&db, "one")
            .unwrap()
            .scan(0, &[], &[], None, |row| {
                got.push(row[0].clone());
                Ok(())
            })
            .unwrap();
        let want: Vec<Value> = rows
            .iter()
            .map(|r| r.clone().map_or(Value::Null, Value::Text))
            .collect();
        assert_eq!(got, want, "{name}: {text:?}");
    }
}

#[test]
fn duplicates_name_both_rows_or_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let dbdir = dir.path().join("db");
    let db = Db::open_default(&dbdir).unwrap();
    let schema = Schema::parse(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(5) NOT NULL UNIQUE, amount DECIMAL(6,2))",
    )
    .unwrap();
    let t = schema.table("t").unwrap();
    // Out of order, so the duplicate is found in the merge across spills.
    let dup = write(
        dir.path(),
        "a.csv",
        b"id,name,amount\n5,e,1\n1,a,1\n3,c,1\n1,z,2\n",
    );
    let e = import(&db, t, &[dup], &bad_opts()).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("(1)") && m.contains("a.csv:3") && m.contains("a.csv:5"),
        "{m}"
    );
    // In order (straight through): found at the join of two chunks.
    let dup = write(
        dir.path(),
        "b.csv",
        b"id,name,amount\n1,a,1\n2,b,1\n2,c,2\n",
    );
    let m = import(&db, t, &[dup], &bad_opts()).unwrap_err().to_string();
    assert!(m.contains("b.csv:3") && m.contains("b.csv:4"), "{m}");
    // A unique secondary index, across two files.
    let f1 = write(dir.path(), "c1.csv", b"id,name,amount\n1,a,1\n");
    let f2 = write(dir.path(), "c2.csv", b"id,name,amount\n2,a,1\n");
    let m = import(&db, t, &[f1, f2], &bad_opts())
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("t_name_key") && m.contains("c1.csv:2") && m.contains("c2.csv:2"),
        "{m}"
    );
    assert!(all_pairs(&db).is_empty());
    // A key already in the table.
    let ok = write(dir.path(), "ok.csv", b"id,name,amount\n1,a,1\n");
    import(&db, t, &[ok], &bad_opts()).unwrap();
    let before = all_pairs(&db);
    let again = write(dir.path(), "again.csv", b"id,name,amount\n7,g,1\n1,b,1\n");
    let m = import(&db, t, &[again], &bad_opts())
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("already in the table") && m.contains("again.csv:3"),
        "{m}"
    );
    assert_eq!(all_pairs(&db), before);
    no_temp_dirs(&dbdir);
}

/// Sorted input is written straight through; shuffled input spills; an
/// input sorted at first and then not merges the streamed files back.
#[test]
fn in_order_input_streams_and_other_input_spills() {
    let schema =
        Schema::parse("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t (v);")
            .unwrap();
    let t = schema.table("t").unwrap();
    let n = 3000u64;
    let sorted: Vec<u64> = (0..n).collect();
    let mut shuffled = sorted.clone();
    let mut x = 7u64;
    for i in (1..shuffled.len()).rev() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        shuffled.swap(i, (x >> 33) as usize % (i + 1));
    }
    let mut broken = sorted.clone();
    broken[2000..].reverse();
    for (name, order) in [
        ("sorted", &sorted),
        ("shuffled", &shuffled),
        ("broken", &broken),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut csv = String::new();
        for id in order.iter() {
            csv.push_str(&format!("{id},v{:05}\n", (id * 7919) % n));
        }
        let input = write(dir.path(), "in.csv", csv.as_bytes());
        let db = Db::open_default(dir.path().join("db")).unwrap();
        let o = ImportOptions {
            memory: 64 << 10,
            chunk_size: 4 << 10,
            target_file_size: 32 << 10,
            ..ImportOptions::default()
        };
        let s = import(&db, t, &[input], &o).unwrap();
        assert_eq!(s.rows, n, "{name}");
        match name {
            "sorted" => {
                assert!(s.indexes[0].in_order, "{name}");
                assert!(!s.indexes[1].in_order, "{name}");
                assert_eq!(s.indexes[0].spilled_bytes, 0, "{name}: {s:?}");
                assert!(s.indexes[1].spilled_bytes > 0, "{name}: {s:?}");
            }
            _ => {
                assert!(!s.indexes[0].in_order, "{name}");
                assert!(s.indexes[0].spilled_bytes > 0, "{name}");
            }
        }
        assert!(s.indexes[0].files > 1, "{name}: files not cut");
        let r = TableReader::open(&db, "t").unwrap();
        assert_eq!(r.count().unwrap(), n);
        let mut ids = Vec::new();
        r.scan(0, &[], &[], None, |row| {
            ids.push(row[0].clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(
            ids,
            sorted
                .iter()
                .map(|&i| Value::Int(i as i64))
                .collect::<Vec<_>>(),
            "{name}"
        );
        let mut vs = Vec::new();
        r.scan(1, &[], &[], None, |row| {
            vs.push(row[1].clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(vs.len() as u64, n);
        assert!(
            vs.windows(2)
                .all(|w| format!("{:?}", w[0]) < format!("{:?}", w[1])),
            "{name}"
        );
        no_temp_dirs(&dir.path().join("db"));
    }
}

// ---------------------------------------------------------------- round trip

const TYPES: &[&str] = &[
    "SMALLINT",
    "INT",
    "BIGINT",
    "DOUBLE",
    "DECIMAL(12,3)",
    "CHAR(4)",
    "VARCHAR(20)",
    "TEXT",
    "BOOL",
    "DATE",
    "TIMESTAMP",
    "BYTEA",
];

fn gen_text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('a'),
            Just('Z'),
            Just(','),
            Just('"'),
            Just('\n'),
            Just('\r'),
            Just(' '),
            Just('\t'),
            Just('é'),
            Just('日'),
            Just('\u{0}'),
            Just('\\'),
        ],
        0..=max,
    )
    .prop_map(|v| v.into_iter().collect::<String>())
}

fn gen_value(ty: &'static str, nullable: bool) -> BoxedStrategy<Value> {
    let v: BoxedStrategy<Value> = match ty {
        "SMALLINT" => (i16::MIN..=i16::MAX)
            .prop_map(|i| Value::Int(i as i64))
            .boxed(),
        "INT" => any::<i32>().prop_map(|i| Value::Int(i as i64)).boxed(),
        "BIGINT" => any::<i64>().prop_map(Value::Int).boxed(),
        "DOUBLE" => prop_oneof![
            any::<f64>(),
            Just(f64::INFINITY),
            Just(-0.0),
            Just(f64::NAN)
        ]
        .prop_map(|f| Value::Float(value::canonical_float(f)))
        .boxed(),
        "DECIMAL(12,3)" => (-999_999_999_999i64..=999_999_999_999)
            .prop_map(|d| Value::Decimal(d as i128))
            .boxed(),
        "CHAR(4)" => gen_text(4).prop_map(Value::Text).boxed(),
        "VARCHAR(20)" => gen_text(20).prop_map(Value::Text).boxed(),
        "TEXT" => gen_text(40).prop_map(Value::Text).boxed(),
        "BOOL" => any::<bool>().prop_map(Value::Bool).boxed(),
        "DATE" => (-700_000i32..=2_900_000).prop_map(Value::Date).boxed(),
        "TIMESTAMP" => (-60_000_000_000_000_000i64..=200_000_000_000_000_000)
            .prop_map(Value::Timestamp)
            .boxed(),
        _ => proptest::collection::vec(any::<u8>(), 0..8)
            .prop_map(Value::Bytes)
            .boxed(),
    };
    if nullable {
        prop_oneof![1 => Just(Value::Null), 5 => v].boxed()
    } else {
        v
    }
}

#[derive(Debug, Clone)]
struct Case {
    ddl: String,
    rows: Vec<Vec<Value>>,
    crlf: bool,
    chunk: usize,
    memory: usize,
    /// The NULL marker is the empty field (CSV's default) rather than
    /// `\N`: either way a text equal to the marker is written quoted and
    /// must come back as text.
    empty_null: bool,
    /// TSV (PostgreSQL's text format: backslash escapes for tabs, line
    /// breaks and backslashes in the text) instead of CSV.
    tsv: bool,
}

fn gen_case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec((0..TYPES.len(), any::<bool>()), 1..6),
        0usize..3,
        any::<bool>(),
    )
        .prop_flat_map(|(cols, pk_kind, unique_ix)| {
            let n = cols.len();
            let pk: Vec<usize> = match pk_kind {
                0 => vec![],
                1 => vec![0],
                _ => (0..n.min(2)).collect(),
            };
            let mut decl: Vec<String> = cols
                .iter()
                .enumerate()
                .map(|(i, (t, nn))| {
                    let not_null = *nn || pk.contains(&i);
                    format!(
                        "c{i} {}{}",
                        TYPES[*t],
                        if not_null { " NOT NULL" } else { "" }
                    )
                })
                .collect();
            if !pk.is_empty() {
                let names: Vec<String> = pk.iter().map(|i| format!("c{i}")).collect();
                decl.push(format!("PRIMARY KEY ({})", names.join(", ")));
            }
            let ix = n - 1;
            let ddl = format!(
                "CREATE TABLE r ({}); CREATE {}INDEX r_ix ON r (c{ix});",
                decl.join(", "),
                if unique_ix { "UNIQUE " } else { "" }
            );
            let row = cols
                .iter()
                .enumerate()
                .map(|(i, (t, nn))| gen_value(TYPES[*t], !(*nn || pk.contains(&i))))
                .collect::<Vec<_>>();
            (
                Just(ddl),
                proptest::collection::vec(row, 0..60),
                any::<bool>(),
                prop_oneof![Just(64usize), Just(1 << 20)],
                prop_oneof![Just(2048usize), Just(64 << 20)],
                any::<bool>(),
                any::<bool>(),
            )
        })
        .prop_map(|(ddl, rows, crlf, chunk, memory, empty_null, tsv)| Case {
            ddl,
            rows,
            crlf,
            chunk,
            memory,
            empty_null,
            tsv,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Random schemas and rows written as CSV (quoted fields with
    /// delimiters, quotes and newlines, CRLF or LF, texts equal to the
    /// NULL marker quoted) or as TSV (tabs, line breaks and backslashes
    /// escaped), imported, and read back equal through get, scan of every
    /// index, and count.
    #[test]
    fn import_round_trips(case in gen_case()) {
        let schema = Schema::parse(&case.ddl).unwrap();
        let t = schema.table("r").unwrap().clone();
        // Keep the first row of each primary and unique key, as a loader
        // given unique input would see.
        let mut rows: Vec<Vec<Value>> = Vec::new();
        let key_of = |r: &Vec<Value>, cols: &[usize]| -> String {
            cols.iter().map(|&c| format!("{:?}|", value::format(&t.columns[c].ty, &r[c]))).collect()
        };
        let mut seen = std::collections::HashSet::new();
        for r in case.rows {
            let mut keys = Vec::new();
            if !t.hidden_rowid {
                keys.push(format!("pk{}", key_of(&r, &t.primary().columns)));
            }
            let ix = &t.indexes[1];
            if ix.unique && ix.columns.iter().all(|&c| r[c] != Value::Null) {
                keys.push(format!("ix{}", key_of(&r, &ix.columns)));
            }
            if keys.iter().any(|k| seen.contains(k)) {
                continue;
            }
            seen.extend(keys);
            rows.push(r);
        }
        // One column's NULL under the empty marker, or its empty text in
        // TSV, is a blank line, which the readers skip: that table gets
        // CSV with `\N`.
        let one = t.input_columns().len() == 1;
        let dialect = if case.tsv && !one {
            Dialect::tsv()
        } else {
            let mut d = Dialect::csv();
            if !case.empty_null || one {
                d.null = "\\N".into();
            }
            d
        };
        let eol = if case.crlf { "\r\n" } else { "\n" };
        let fmt = |r: &[Value]| -> Vec<Option<String>> {
            t.input_columns().iter().zip(r).map(|(c, v)| match v {
                Value::Null => None,
                v => Some(value::format(&c.ty, v)),
            }).collect()
        };
        let mut csv = String::new();
        for r in &rows {
            csv.push_str(&dialect.write_record(&fmt(r)));
            csv.push_str(eol);
        }
        let dir = tempfile::tempdir().unwrap();
        let input = write(dir.path(), "in.csv", csv.as_bytes());
        let dbdir = dir.path().join("db");
        let db = Db::open_default(&dbdir).unwrap();
        let o = ImportOptions {
            dialect: dialect.clone(),
            chunk_size: case.chunk,
            memory: case.memory,
            target_file_size: 4096,
            ..ImportOptions::default()
        };
        let s = import(&db, &t, &[input], &o).unwrap();
        prop_assert_eq!(s.rows, rows.len() as u64);
        let reader = TableReader::open(&db, "r").unwrap();
        prop_assert_eq!(reader.count().unwrap(), rows.len() as u64);
        let line = |r: &[Value]| dialect.write_record(&fmt(r));
        let mut expected: Vec<String> = rows.iter().map(|r| line(r)).collect();
        if !t.hidden_rowid {
            for r in &rows {
                let pk: Vec<String> = t.primary().columns.iter()
                    .map(|&c| value::format(&t.columns[c].ty, &r[c])).collect();
                let got = reader.get(&pk).unwrap().expect("row by key");
                prop_assert_eq!(line(&got), line(r));
            }
        }
        expected.sort();
        for index in 0..t.indexes.len() {
            let mut got = Vec::new();
            let n = reader.scan(index, &[], &[], None, |row| { got.push(line(&row)); Ok(()) }).unwrap();
            prop_assert_eq!(n, rows.len() as u64);
            got.sort();
            prop_assert_eq!(&got, &expected, "index {}", index);
        }
        // A hidden row id keeps input order.
        if t.hidden_rowid {
            let mut got = Vec::new();
            reader.scan(0, &[], &[], None, |row| { got.push(line(&row)); Ok(()) }).unwrap();
            let in_order: Vec<String> = rows.iter().map(|r| line(r)).collect();
            prop_assert_eq!(got, in_order);
        }
        no_temp_dirs(&dbdir);
        let _ = ColumnType::Text;
    }
}

/// gzip and zstd by extension, several files through a glob, a BOM, and
/// rows numbered per file.
#[test]
fn compressed_inputs_and_globs() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let schema = Schema::parse("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)").unwrap();
    let t = schema.table("t").unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"\xEF\xBB\xBF1,one\n2,\"t,wo\"\n").unwrap();
    std::fs::write(data.join("a.csv.gz"), gz.finish().unwrap()).unwrap();
    let zst = zstd::encode_all(&b"3,three\r\n4,four\r\n"[..], 3).unwrap();
    std::fs::write(data.join("b.csv.zst"), zst).unwrap();
    std::fs::write(data.join("c.csv"), b"5,five\n6,x\n").unwrap();
    let pattern = format!("{}/*.csv*", data.display());
    let inputs = strata_import::csv::input::expand(&[pattern]).unwrap();
    assert_eq!(inputs.len(), 3);
    let dbdir = dir.path().join("db");
    let db = Db::open_default(&dbdir).unwrap();
    let s = import(&db, t, &inputs, &ImportOptions::default()).unwrap();
    assert_eq!(s.rows, 6);
    let r = TableReader::open(&db, "t").unwrap();
    let d = Dialect::csv();
    let get = |k: &str| r.format_row(&r.get(&[k.to_string()]).unwrap().unwrap(), &d);
    assert_eq!(get("1"), "1,one");
    assert_eq!(get("2"), "2,\"t,wo\"");
    assert_eq!(get("4"), "4,four");
    assert_eq!(get("6"), "6,x");
    // A bad row in the zstd file is reported with that file and its line.
    let db2dir = dir.path().join("db2");
    let db2 = Db::open_default(&db2dir).unwrap();
    let zst = zstd::encode_all(&b"7,seven\nx,eight\n"[..], 3).unwrap();
    std::fs::write(dir.path().join("bad.csv.zst"), zst).unwrap();
    let bad = Input::File(dir.path().join("bad.csv.zst"));
    let e = import(
        &db2,
        t,
        &[inputs[0].clone(), bad],
        &ImportOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("bad.csv.zst:2: column id"), "{e}");
    assert!(all_pairs(&db2).is_empty());
    // A file named for a compression it does not hold says so (it said
    // "unexpected end of file").
    for (name, what) in [("fake.csv.gz", "gzip"), ("fake.csv.zst", "zstd")] {
        std::fs::write(
            dir.path().join(name),
            b"1,plain
",
        )
        .unwrap();
        let fake = Input::File(dir.path().join(name));
        let e = import(&db2, t, &[fake], &ImportOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{name}: not {what} data")),
            "{name}: {e}"
        );
    }
    assert!(all_pairs(&db2).is_empty());
    // A pattern matching nothing is an error, not an empty import.
    let none = format!("{}/*.tsv", data.display());
    assert!(strata_import::csv::input::expand(&[none]).is_err());
}

/// `--on-duplicate ignore`: the first row with a primary key wins (the
/// table's, else the earliest in the input), and the skipped rows leave no
/// index entries; a unique index shared by two rows is still an error.
#[test]
fn on_duplicate_ignore_keeps_the_first_row_and_its_index_entries() {
    use strata_import::pipeline::OnDuplicate;
    let dir = tempfile::tempdir().unwrap();
    let dbdir = dir.path().join("db");
    let db = Db::open_default(&dbdir).unwrap();
    let schema = Schema::parse(
        "CREATE TABLE t (id INT PRIMARY KEY, v TEXT NOT NULL, u INT UNIQUE);
         CREATE INDEX t_v ON t (v);",
    )
    .unwrap();
    let t = schema.table("t").unwrap();
    let o = ImportOptions {
        on_duplicate: OnDuplicate::Ignore,
        memory: 300,
        chunk_size: 8,
        ..ImportOptions::default()
    };
    let a = write(
        dir.path(),
        "a.csv",
        b"3,c,30\n1,a,10\n3,c2,31\n2,b,20\n1,a2,11\n",
    );
    let s = import(&db, t, &[a], &o).unwrap();
    assert_eq!((s.rows, s.duplicates_ignored), (3, 2));
    let r = TableReader::open(&db, "t").unwrap();
    let d = Dialect::csv();
    let rows = |index: usize| {
        let mut out = Vec::new();
        r.scan(index, &[], &[], None, |row| {
            out.push(r.format_row(&row, &d));
            Ok(())
        })
        .unwrap();
        out
    };
    assert_eq!(rows(0), ["1,a,10", "2,b,20", "3,c,30"]);
    assert_eq!(rows(1), ["1,a,10", "2,b,20", "3,c,30"]);
    assert_eq!(rows(2), ["1,a,10", "2,b,20", "3,c,30"]);
    assert_eq!(r.count_index(1).unwrap(), 3);
    assert_eq!(r.count_index(2).unwrap(), 3);
    // Into the table with rows: existing keys keep their rows.
    let b = write(dir.path(), "b.csv", b"2,zz,99\n4,d,40\n");
    let s = import(&db, t, &[b], &o).unwrap();
    assert_eq!((s.rows, s.duplicates_ignored), (1, 1));
    assert_eq!(rows(0), ["1,a,10", "2,b,20", "3,c,30", "4,d,40"]);
    assert_eq!(rows(1), rows(0));
    assert_eq!(rows(2), rows(0));
    // A unique value shared by two different keys is an error either way.
    let before = all_pairs(&db);
    let c = write(dir.path(), "c.csv", b"5,e,50\n6,f,50\n");
    let m = import(&db, t, &[c], &o).unwrap_err().to_string();
    assert!(
        m.contains("t_u_key") && m.contains("c.csv:1") && m.contains("c.csv:2"),
        "{m}"
    );
    let c = write(dir.path(), "c2.csv", b"7,g,10\n");
    let m = import(&db, t, &[c], &o).unwrap_err().to_string();
    assert!(
        m.contains("already in the table") && m.contains("c2.csv:1"),
        "{m}"
    );
    assert_eq!(all_pairs(&db), before);
    no_temp_dirs(&dbdir);
}

/// The budget's writer share reaches the SST writers: with a small budget
/// an index of many small entries is cut into files whose writers each
/// stayed under `Budget::writer_cap` (filter hashes and index counted by
/// `sink::writer_memory`), where the target file size alone would have
/// made one file; and the table still reads back whole.
#[test]
fn writer_share_of_the_budget_cuts_files() {
    let schema =
        Schema::parse("CREATE TABLE t (id BIGINT PRIMARY KEY, v INT); CREATE INDEX t_v ON t (v);")
            .unwrap();
    let t = schema.table("t").unwrap();
    let n = 60_000u64;
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::new();
    for id in 0..n {
        csv.push_str(&format!("{id},{}\n", (id * 7919) % 1000));
    }
    let input = write(dir.path(), "in.csv", csv.as_bytes());
    let db = Db::open_default(dir.path().join("db")).unwrap();
    let o = ImportOptions {
        memory: 2 << 20,
        ..ImportOptions::default()
    };
    let s = import(&db, t, &[input], &o).unwrap();
    let cap = s.budget.unwrap().writer_cap as u64;
    assert_eq!(s.rows, n);
    for ix in &s.indexes {
        // 16 bytes of filter hashes an entry alone: at least this many
        // files, each under the cap.
        let need = (ix.kvs * 16).div_ceil(cap);
        assert!(
            ix.files as u64 >= need && need > 1,
            "{}: {} files for {} entries under a {cap}-byte writer cap",
            ix.name,
            ix.files,
            ix.kvs
        );
    }
    let r = TableReader::open(&db, "t").unwrap();
    assert_eq!(r.count().unwrap(), n);
}

/// A table's stored definition agrees with a schema that spells its names
/// in another case (names match ignoring case everywhere): importing into
/// `T (ID ...)` with `t (id ...)` said "column 1 is ID ... id".
#[test]
fn a_stored_definition_matches_names_ignoring_case() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open_default(d.path().join("db")).unwrap();
    let upper =
        Schema::parse("CREATE TABLE T (ID INT PRIMARY KEY, V TEXT); CREATE INDEX IV ON T (V);")
            .unwrap();
    let lower =
        Schema::parse("create table t (id int primary key, v text); create index iv on t (v);")
            .unwrap();
    let other =
        Schema::parse("CREATE TABLE t (id INT PRIMARY KEY, w TEXT); CREATE INDEX iv ON t (w);")
            .unwrap();
    let o = ImportOptions::default();
    import(
        &db,
        upper.table("T").unwrap(),
        &[write(d.path(), "a.csv", b"1,a\n")],
        &o,
    )
    .unwrap();
    import(
        &db,
        lower.table("t").unwrap(),
        &[write(d.path(), "b.csv", b"2,b\n")],
        &o,
    )
    .unwrap();
    assert_eq!(TableReader::open(&db, "t").unwrap().count().unwrap(), 2);
    // A real difference is still one, shown as each spells it.
    let e = import(
        &db,
        other.table("t").unwrap(),
        &[write(d.path(), "c.csv", b"3,c\n")],
        &o,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("column 2 is V TEXT in the table, w TEXT in the schema"),
        "{e}"
    );
}

/// -0 in a non-key DOUBLE column keeps its sign (a row value is the
/// float's 8 bytes; only keys make it 0, so a key -0 finds the row 0).
#[test]
fn minus_zero_keeps_its_sign_in_a_row_and_is_zero_in_a_key() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open_default(d.path().join("db")).unwrap();
    let s =
        Schema::parse("CREATE TABLE f (id INT PRIMARY KEY, x DOUBLE PRECISION, k REAL UNIQUE);")
            .unwrap();
    let t = s.table("f").unwrap();
    let o = ImportOptions::default();
    import(
        &db,
        t,
        &[write(d.path(), "f.csv", b"1,-0.0,-0\n2,0,1\n")],
        &o,
    )
    .unwrap();
    let r = TableReader::open(&db, "f").unwrap();
    let row = r.get(&["1".into()]).unwrap().unwrap();
    let Value::Float(x) = row[1] else {
        panic!("{row:?}")
    };
    assert!(x == 0.0 && x.is_sign_negative(), "{x}");
    assert_eq!(r.format_row(&row, &Dialect::csv()), "1,-0,-0");
    // The unique key -0 is the key 0: one row under it.
    let mut found = Vec::new();
    r.scan(1, &["0".into()], &["0".into()], None, |row| {
        found.push(row);
        Ok(())
    })
    .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let e = import(&db, t, &[write(d.path(), "g.csv", b"3,1,0\n")], &o).unwrap_err();
    assert!(e.to_string().contains("duplicate key"), "{e}");
}
