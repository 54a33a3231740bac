//! `consistency::check_tables`: a healthy import (non-unique and unique
//! indexes, NULLs in a unique column, a table keyed by a hidden row id) has
//! no problem; an index entry changed to name another row (same counts), a
//! row whose entry is gone and an entry whose row is gone are each reported
//! with the table, the index, the counts and a sample.

#![allow(clippy::unwrap_used)] // tests may unwrap

use strata::Db;
use strata_import::codec::TableCodec;
use strata_import::consistency::check_tables;
use strata_import::csv::input::Input;
use strata_import::table::TableReader;
use strata_import::value::Value;
use strata_import::{import, ImportOptions, Schema};

const SCHEMA: &str = "CREATE TABLE t (a INT PRIMARY KEY, b INT, u INT UNIQUE);
     CREATE INDEX t_b ON t (b);
     CREATE TABLE h (x INT, y TEXT);
     CREATE INDEX h_y ON h (y);";

fn setup(dir: &std::path::Path) -> Db {
    let db = Db::open(dir.join("db"), strata::Options::default()).unwrap();
    let schema = Schema::parse(SCHEMA).unwrap();
    let t: String = (0..1000)
        .map(|i| {
            // Every third u is NULL: a unique entry with a NULL carries
            // the primary key in its key too.
            let u = if i % 3 == 0 {
                String::new()
            } else {
                i.to_string()
            };
            format!("{i},{},{u}\n", i % 10)
        })
        .collect();
    std::fs::write(dir.join("t.csv"), t).unwrap();
    std::fs::write(dir.join("h.csv"), "1,a\n1,a\n2,b\n").unwrap();
    let o = ImportOptions::default();
    for (name, file) in [("t", "t.csv"), ("h", "h.csv")] {
        let input = Input::File(dir.join(file));
        import(&db, schema.table(name).unwrap(), &[input], &o).unwrap();
    }
    db
}

fn codec(db: &Db, name: &str) -> TableCodec {
    let c = TableReader::open(db, name).unwrap().codec;
    TableCodec::new(c.table, c.table_id)
}

/// Row `a` of table t and its entry in index `i`.
fn entry(c: &TableCodec, a: i64, i: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let u = if a % 3 == 0 {
        Value::Null
    } else {
        Value::Int(a)
    };
    let row = vec![Value::Int(a), Value::Int(a % 10), u];
    let pk = c.pk_bytes(&row);
    let (mut k, mut v) = (Vec::new(), Vec::new());
    c.entry(i, &row, &pk, &mut k, &mut v);
    (c.primary_key(&[Value::Int(a)]), k, v)
}

#[test]
fn a_healthy_import_has_no_problem() {
    let d = tempfile::tempdir().unwrap();
    let db = setup(d.path());
    let r = check_tables(&db).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!((r.tables, r.rows, r.index_entries), (2, 1003, 2003));
}

#[test]
fn an_entry_naming_another_row_is_found_with_equal_counts() {
    let d = tempfile::tempdir().unwrap();
    let db = setup(d.path());
    let c = codec(&db, "t");
    // Row 5's t_b entry replaced by one that says b = 6 (row 5 has b = 5).
    let t_b = c.table.index_by_name("t_b").unwrap();
    let (_, k, _) = entry(&c, 5, t_b);
    db.delete(&k).unwrap();
    let mut wrong = k.clone();
    let (_, k6, _) = entry(&c, 6, t_b);
    wrong[..k6.len() - 9].copy_from_slice(&k6[..k6.len() - 9]);
    assert_ne!(wrong, k);
    db.put(&wrong, b"").unwrap();
    let r = check_tables(&db).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    let p = r.problems[0].to_string();
    assert!(
        p.starts_with("table t, index t_b (b): 1000 entries for 1000 rows, but they are not")
            && p.contains("the row with primary key (5) has no entry in t_b"),
        "{p}"
    );
}

#[test]
fn missing_and_dangling_entries_are_found() {
    let d = tempfile::tempdir().unwrap();
    let db = setup(d.path());
    let c = codec(&db, "t");
    // Row 7 loses its unique entry; row 9 loses its row (its entries stay):
    // t_u_key then has as many entries as rows, and only the fingerprint
    // tells.
    let u = c.table.index_by_name("t_u_key").unwrap();
    let (_, k, _) = entry(&c, 7, u);
    db.delete(&k).unwrap();
    let (pk9, _, _) = entry(&c, 9, 0);
    db.delete(&pk9).unwrap();
    let r = check_tables(&db).unwrap();
    let p: Vec<String> = r.problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(p.len(), 2, "{p:?}");
    let b = p.iter().find(|p| p.contains("t_b (b)")).unwrap();
    assert!(
        b.starts_with("table t, index t_b (b): 1000 entries for 999 rows")
            && b.contains("the entry (9) names the row with primary key (9), which does not exist"),
        "{b}"
    );
    let u = p.iter().find(|p| p.contains(" (u): ")).unwrap();
    assert!(
        u.contains(" (u): 999 entries for 999 rows, but they are not the rows' entries")
            && u.contains("primary key (7) has no entry"),
        "{u}"
    );
}
