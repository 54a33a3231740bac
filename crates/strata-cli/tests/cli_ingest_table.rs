//! `strata ingest-table`: a bundle built with the import library's encoder
//! (as a Spark job would build one) becomes a table the table commands
//! read; a second or a damaged bundle is refused with the reason.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;
use common::strata;
use strata::{SstOptions, SstWriter};
use strata_import::bundle::{describe_file, BundleManifest};
use strata_import::codec::TableCodec;
use strata_import::schema::Schema;
use strata_import::value::Value;

const SCHEMA: &str = "CREATE TABLE kv (k INT PRIMARY KEY, v TEXT);
                      CREATE INDEX kv_v ON kv (v);";

fn build(dir: &std::path::Path, n: i64) {
    std::fs::create_dir_all(dir).unwrap();
    let schema = Schema::parse(SCHEMA).unwrap();
    let codec = TableCodec::new(schema.table("kv").unwrap().clone(), 1);
    let mut m = BundleManifest::new("kv", 1, SCHEMA);
    m.rows = n as u64;
    for (ix, index) in codec.table.indexes.iter().enumerate() {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
            .map(|i| {
                let row = vec![Value::Int(i), Value::Text(format!("v{:04}", n - i))];
                let pk = codec.pk_bytes(&row);
                let (mut k, mut v) = (Vec::new(), Vec::new());
                codec.entry(ix, &row, &pk, &mut k, &mut v);
                (k, v)
            })
            .collect();
        entries.sort();
        let name = format!("{}.sst", index.name);
        let mut w = SstWriter::create(dir.join(&name), SstOptions::for_ingestion()).unwrap();
        for (k, v) in &entries {
            w.put(k, v).unwrap();
        }
        w.finish().unwrap();
        m.files
            .push(describe_file(dir, &name, &index.name).unwrap());
    }
    m.write(dir).unwrap();
}

#[test]
fn ingest_table_then_read_back_and_refuse_twice() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    build(&d.path().join("bundle"), 5000);
    let db = p("db");
    let (ok, out, err) = strata(&["ingest-table", &db, &p("bundle")]);
    assert!(ok, "{err}");
    assert!(
        out.contains("table kv (id 1): 5000 rows, 2 files ingested"),
        "{out}"
    );
    assert!(
        out.contains("levels: L6 L6 L6") || out.contains("levels: - L6 L6"),
        "{out}"
    );
    assert_eq!(strata(&["count", &db, "kv"]).1.trim(), "5000");
    assert_eq!(strata(&["get", &db, "kv", "42"]).1, "42,v4958\n");
    // Its index holds one entry per row, as `strata check` verifies.
    let (ok, out, err) = strata(&["check", &db]);
    assert!(
        ok && out.contains("1 SQL tables (5000 rows, 5000 index entries)"),
        "{out}{err}"
    );

    // Again: the table exists; nothing changes.
    let (ok, _, err) = strata(&["ingest-table", &db, &p("bundle")]);
    assert!(!ok && err.contains("already exists"), "{err}");

    // A damaged bundle into a new path: refused, and no database is left.
    let bundle = d.path().join("bundle");
    let f = bundle.join("primary.sst");
    let mut b = std::fs::read(&f).unwrap();
    let at = b.len() / 2;
    b[at] ^= 1;
    std::fs::write(&f, b).unwrap();
    let (ok, _, err) = strata(&["ingest-table", &p("db2"), &p("bundle")]);
    assert!(
        !ok && err.contains("primary.sst") && err.contains("SHA-256"),
        "{err}"
    );
    // The database the refused command created is removed again.
    assert!(
        !d.path().join("db2").exists(),
        "the refused ingest-table left a database"
    );
}

/// A small bundle is applied by the database as a write batch (its files
/// are under the ingestion's `small_file_bytes`): the summary says so and
/// counts no file ingested, as `strata import`'s does. It used to say "2
/// files" for files that never entered the tree.
#[test]
fn a_small_bundle_is_reported_as_applied_as_a_write_batch() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    build(&d.path().join("bundle"), 5);
    let db = p("db");
    let (ok, out, err) = strata(&["ingest-table", &db, &p("bundle")]);
    assert!(ok, "{err}");
    assert!(
        out.contains(
            "table kv (id 1): 5 rows, applied as a write batch (no files ingested); \
             entries: primary 5, kv_v 5"
        ),
        "{out}"
    );
    assert!(out.contains(", applied in "), "{out}");
    assert!(
        !out.contains("files ingested,") && !out.contains("levels:"),
        "{out}"
    );
    // The rows are there all the same, and their index entries.
    assert_eq!(strata(&["count", &db, "kv"]).1.trim(), "5");
    let (ok, out, err) = strata(&["check", &db]);
    assert!(
        ok && out.contains("1 SQL tables (5 rows, 5 index entries)"),
        "{out}{err}"
    );
    assert_eq!(strata(&["get", &db, "kv", "3"]).1, "3,v0002\n");
}
