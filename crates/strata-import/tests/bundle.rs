//! Table bundles: a bundle built from the same rows as a CSV import gives a
//! byte-identical database, and every way a bundle can be wrong is refused
//! with the file and the problem named and the database left unchanged.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::path::{Path, PathBuf};
use strata::{Db, SstOptions, SstWriter};
use strata_import::bundle::{
    describe_file, ingest_table, BundleManifest, BundleOptions, MANIFEST_NAME,
};
use strata_import::codec::TableCodec;
use strata_import::csv::dialect::{Dialect, Header};
use strata_import::csv::input::Input;
use strata_import::schema::Schema;
use strata_import::value::{self, Value};
use strata_import::{import, ImportOptions};
use support::no_temp_dirs;

mod support;

const SCHEMA: &str = "CREATE TABLE items (
    id BIGINT PRIMARY KEY,
    name TEXT,
    price DECIMAL(10,2),
    born DATE,
    code VARCHAR(12) UNIQUE);
  CREATE INDEX items_name ON items (name, price);
  CREATE TABLE other (k TEXT PRIMARY KEY, v INT);";

fn all_pairs(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter().collect::<Result<_, _>>().unwrap()
}

/// `n` random rows as CSV text (header, `\N` for NULL, unicode names).
fn csv_rows(seed: u64, n: usize) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let names = ["ámbar", "Zoë", "李", "plain", "with,comma", "quote\"d", ""];
    let mut ids: Vec<i64> = (0..n as i64).map(|i| i * 7 - 300).collect();
    // Input order is not key order: the sort has to happen somewhere.
    for i in (1..ids.len()).rev() {
        let j = rng.gen_range(0..=i);
        ids.swap(i, j);
    }
    let mut s = String::from("id,name,price,born,code\n");
    for (i, id) in ids.iter().enumerate() {
        let name = if rng.gen_bool(0.1) {
            "\\N".to_string()
        } else {
            let nm = names[rng.gen_range(0..names.len())];
            format!("\"{}{}\"", nm.replace('"', "\"\""), rng.gen_range(0..20))
        };
        let price = if rng.gen_bool(0.1) {
            "\\N".to_string()
        } else {
            format!("{}.{:02}", rng.gen_range(-500..5000), rng.gen_range(0..100))
        };
        let born = if rng.gen_bool(0.1) {
            "\\N".to_string()
        } else {
            format!(
                "{:04}-{:02}-{:02}",
                rng.gen_range(1900..2030),
                rng.gen_range(1..13),
                rng.gen_range(1..29)
            )
        };
        let code = if rng.gen_bool(0.2) {
            "\\N".to_string()
        } else {
            format!("C{i:06}")
        };
        s.push_str(&format!("{id},{name},{price},{born},{code}\n"));
    }
    s
}

fn dialect() -> Dialect {
    let mut d = Dialect::csv();
    d.null = "\\N".into();
    d.header = Header::Skip;
    d
}

/// The rows of `csv` parsed as the table's values (what a Spark job's
/// encoder sees).
fn parse_rows(codec: &TableCodec, csv: &str) -> Vec<Vec<Value>> {
    let mut r = csv::ReaderBuilder::new().from_reader(csv.as_bytes());
    let cols = codec.table.input_columns();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            cols.iter()
                .zip(rec.iter())
                .map(|(c, f)| {
                    if f == "\\N" {
                        Value::Null
                    } else {
                        value::parse(&c.ty, f).unwrap()
                    }
                })
                .collect()
        })
        .collect()
}

/// Writes a bundle of `rows` into `dir`: every index's entries sorted and
/// cut into `parts` files at random points, as range partitions would be.
fn build_bundle(dir: &Path, codec: &TableCodec, rows: &[Vec<Value>], parts: usize, seed: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut m = BundleManifest::new(&codec.table.name, codec.table_id, SCHEMA);
    m.rows = rows.len() as u64;
    for (ix, index) in codec.table.indexes.iter().enumerate() {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = rows
            .iter()
            .map(|row| {
                let pk = codec.pk_bytes(row);
                let (mut k, mut v) = (Vec::new(), Vec::new());
                codec.entry(ix, row, &pk, &mut k, &mut v);
                (k, v)
            })
            .collect();
        entries.sort();
        let mut cuts: Vec<usize> = (0..parts.saturating_sub(1))
            .map(|_| rng.gen_range(1..entries.len().max(2)))
            .collect();
        cuts.push(0);
        cuts.push(entries.len());
        cuts.sort();
        cuts.dedup();
        for (p, w) in cuts.windows(2).enumerate() {
            let name = format!("{}-part-{p:05}.sst", index.name);
            let mut wr = SstWriter::create(dir.join(&name), SstOptions::for_ingestion()).unwrap();
            for (k, v) in &entries[w[0]..w[1]] {
                wr.put(k, v).unwrap();
            }
            wr.finish().unwrap();
            m.files
                .push(describe_file(dir, &name, &index.name).unwrap());
        }
    }
    m.write(dir).unwrap();
}

fn items_codec(id: u32) -> TableCodec {
    let schema = Schema::parse(SCHEMA).unwrap();
    TableCodec::new(schema.table("items").unwrap().clone(), id)
}

fn csv_import(db: &Db, csv_path: &Path) {
    let schema = Schema::parse(SCHEMA).unwrap();
    let opts = ImportOptions {
        dialect: dialect(),
        ..ImportOptions::default()
    };
    import(
        db,
        schema.table("items").unwrap(),
        &[Input::File(csv_path.to_path_buf())],
        &opts,
    )
    .unwrap();
}

/// The same rows through `strata import` and through a bundle give
/// identical databases (every key and value, catalog entry included), for
/// several partitionings, and the bundle's files land in the bottom level.
#[test]
fn bundle_equals_csv_import() {
    for (seed, n, parts) in [
        (1u64, 3000usize, 1usize),
        (2, 2500, 4),
        (3, 1, 3),
        (4, 400, 9),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let csv_path = tmp.path().join("items.csv");
        let text = csv_rows(seed, n);
        std::fs::write(&csv_path, &text).unwrap();

        let a_dir = tmp.path().join("imported");
        let a = Db::open_default(&a_dir).unwrap();
        csv_import(&a, &csv_path);

        let codec = items_codec(1);
        let rows = parse_rows(&codec, &text);
        let bundle = tmp.path().join("bundle");
        build_bundle(&bundle, &codec, &rows, parts, seed);
        let before = listing(&bundle);
        let b_dir = tmp.path().join("bundled");
        let b = Db::open_default(&b_dir).unwrap();
        let s = ingest_table(&b, &bundle, &BundleOptions::default()).unwrap();
        assert_eq!(s.rows, n as u64);
        assert_eq!(s.entries.len(), 3);
        assert!(
            s.entries.iter().all(|(_, e)| *e == n as u64),
            "{:?}",
            s.entries
        );
        if n > 1000 {
            // Large enough to enter the tree as files: all at the bottom.
            assert!(
                s.levels.iter().all(|l| *l == Some(6)),
                "levels {:?}",
                s.levels
            );
        }
        assert_eq!(all_pairs(&a), all_pairs(&b), "seed {seed}");
        // Copy mode leaves the bundle exactly as it was.
        assert_eq!(before, listing(&bundle));
        no_temp_dirs(&b_dir);
    }
}

/// Rows a killed `--mode direct` import left under the table id (written,
/// but never given a catalog entry) do not surface as the bundle's rows.
#[test]
fn leftover_rows_of_a_killed_import_do_not_surface() {
    let tmp = tempfile::tempdir().unwrap();
    let text = csv_rows(21, 1500);
    let csv_path = tmp.path().join("items.csv");
    std::fs::write(&csv_path, &text).unwrap();
    let a_dir = tmp.path().join("imported");
    let a = Db::open_default(&a_dir).unwrap();
    csv_import(&a, &csv_path);

    let codec = items_codec(1);
    let rows = parse_rows(&codec, &text);
    let bundle = tmp.path().join("bundle");
    build_bundle(&bundle, &codec, &rows, 2, 21);
    let b_dir = tmp.path().join("bundled");
    let b = Db::open_default(&b_dir).unwrap();
    // The leftovers: entries of rows the bundle does not hold, in every
    // index of table id 1.
    let stray = parse_rows(&codec, &csv_rows(22, 50).replace(",C", ",X"));
    for row in &stray {
        let mut row = row.clone();
        if let Value::Int(id) = &mut row[0] {
            *id += 1_000_000;
        }
        let pk = codec.pk_bytes(&row);
        for ix in 0..codec.table.indexes.len() {
            let (mut k, mut v) = (Vec::new(), Vec::new());
            codec.entry(ix, &row, &pk, &mut k, &mut v);
            b.put(&k, &v).unwrap();
        }
    }
    b.flush().unwrap();
    ingest_table(&b, &bundle, &BundleOptions::default()).unwrap();
    assert_eq!(all_pairs(&a), all_pairs(&b));
}

/// `move_files` takes the files into the database; the data is the same.
#[test]
fn move_files_takes_the_files() {
    let tmp = tempfile::tempdir().unwrap();
    let codec = items_codec(1);
    let rows = parse_rows(&codec, &csv_rows(9, 2000));
    let bundle = tmp.path().join("bundle");
    build_bundle(&bundle, &codec, &rows, 2, 9);
    let db_dir = tmp.path().join("db");
    let db = Db::open_default(&db_dir).unwrap();
    let opts = BundleOptions { move_files: true };
    ingest_table(&db, &bundle, &opts).unwrap();
    let left: Vec<String> = listing(&bundle).into_iter().map(|(n, _)| n).collect();
    assert_eq!(left, vec![MANIFEST_NAME.to_string()]);
    drop(db);
    let db = Db::open_default(&db_dir).unwrap();
    let t = strata_import::table::TableReader::open(&db, "items").unwrap();
    assert_eq!(t.count().unwrap(), 2000);
}

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn edit_manifest(dir: &Path, f: impl FnOnce(&mut BundleManifest)) {
    let mut m = BundleManifest::read(dir).unwrap();
    f(&mut m);
    m.write(dir).unwrap();
}

fn primary_file(dir: &Path) -> PathBuf {
    let m = BundleManifest::read(dir).unwrap();
    dir.join(&m.files.iter().find(|f| f.index == "primary").unwrap().name)
}

type Breakage = fn(&Path);

/// Every broken bundle is refused naming what is wrong, and the database
/// keeps exactly what it held (here: one other table).
#[test]
fn broken_bundles_are_refused_and_change_nothing() {
    let cases: &[(&str, Breakage, &str)] = &[
        (
            "flipped byte",
            |d| {
                let p = primary_file(d);
                let mut b = std::fs::read(&p).unwrap();
                b[10] ^= 0x40;
                std::fs::write(&p, b).unwrap();
            },
            "SHA-256",
        ),
        (
            "cut file",
            |d| {
                let p = primary_file(d);
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..b.len() - 9]).unwrap();
            },
            "the manifest says",
        ),
        (
            "missing file",
            |d| std::fs::remove_file(primary_file(d)).unwrap(),
            "primary-part-00000.sst",
        ),
        (
            "entry count",
            |d| edit_manifest(d, |m| m.files[0].entries += 1),
            "entries, the manifest says",
        ),
        (
            "first key",
            |d| edit_manifest(d, |m| m.files[0].smallest = "00".into()),
            "the manifest says",
        ),
        (
            "rows",
            |d| edit_manifest(d, |m| m.rows += 1),
            "the manifest says 301 rows",
        ),
        (
            "index of another file",
            |d| {
                edit_manifest(d, |m| {
                    let f = m
                        .files
                        .iter_mut()
                        .find(|f| f.index == "items_name")
                        .unwrap();
                    f.index = "primary".into();
                })
            },
            "not a key of index primary",
        ),
        (
            "unknown index",
            |d| edit_manifest(d, |m| m.files[0].index = "nope".into()),
            "has no index nope",
        ),
        (
            "path outside the bundle",
            |d| edit_manifest(d, |m| m.files[0].name = "../x.sst".into()),
            "not a plain file name",
        ),
        (
            "listed twice",
            |d| {
                edit_manifest(d, |m| {
                    let f = m.files[0].clone();
                    m.files.push(f);
                })
            },
            "listed twice",
        ),
        (
            "duplicate primary key across partitions",
            |d| {
                // A retried task's leftover: another file with one of the
                // rows again.
                let m = BundleManifest::read(d).unwrap();
                let f = m.files.iter().find(|f| f.index == "primary").unwrap();
                let first = strata::sstable::SstReader::open(d.join(&f.name))
                    .unwrap()
                    .next()
                    .unwrap()
                    .unwrap();
                let mut w =
                    SstWriter::create(d.join("retry.sst"), SstOptions::for_ingestion()).unwrap();
                w.put(&first.0, &first.1).unwrap();
                w.finish().unwrap();
                let extra = describe_file(d, "retry.sst", "primary").unwrap();
                edit_manifest(d, |m| m.files.push(extra));
            },
            "overlap",
        ),
        (
            "row that does not decode",
            |d| {
                let p = primary_file(d);
                let rows: Vec<(Vec<u8>, Vec<u8>)> = strata::sstable::SstReader::open(&p)
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                let mut w = SstWriter::create(&p, SstOptions::for_ingestion()).unwrap();
                for (i, (k, v)) in rows.iter().enumerate() {
                    let v = if i == 5 { vec![0xFF; 3] } else { v.clone() };
                    w.put(k, &v).unwrap();
                }
                w.finish().unwrap();
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                let fresh = describe_file(d, &name, "primary").unwrap();
                edit_manifest(d, |m| {
                    let f = m.files.iter_mut().find(|f| f.name == name).unwrap();
                    *f = fresh;
                });
            },
            "entry 5",
        ),
        (
            "not JSON",
            |d| {
                std::fs::write(
                    d.join(MANIFEST_NAME),
                    "{\"format\": \"strata-table-bundle\",\n  oops",
                )
                .unwrap()
            },
            "line 2",
        ),
        (
            "newer version",
            |d| edit_manifest(d, |m| m.version = 2),
            "version 2",
        ),
        (
            "table id taken",
            |d| edit_manifest(d, |m| m.table_id = 1),
            "table id 1",
        ),
        (
            "table exists",
            |d| edit_manifest(d, |m| m.table = "OTHER".into()),
            "already exists",
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let csv_path = tmp.path().join("other.csv");
    std::fs::write(&csv_path, "k,v\na,1\nb,2\n").unwrap();
    let codec = items_codec(2);
    let rows = parse_rows(&codec, &csv_rows(5, 300));
    for (i, (what, breakage, expect)) in cases.iter().enumerate() {
        let db_dir = tmp.path().join(format!("db{i}"));
        let db = Db::open_default(&db_dir).unwrap();
        // Table `other` takes id 1.
        let schema = Schema::parse(SCHEMA).unwrap();
        let opts = ImportOptions {
            dialect: dialect(),
            ..ImportOptions::default()
        };
        import(
            &db,
            schema.table("other").unwrap(),
            &[Input::File(csv_path.clone())],
            &opts,
        )
        .unwrap();
        let before = all_pairs(&db);
        let bundle = tmp.path().join(format!("bundle{i}"));
        build_bundle(&bundle, &codec, &rows, 3, i as u64);
        breakage(&bundle);
        let err = ingest_table(&db, &bundle, &BundleOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{what}: a broken bundle was ingested"))
            .to_string();
        assert!(err.contains(expect), "{what}: {err:?} lacks {expect:?}");
        assert_eq!(before, all_pairs(&db), "{what}: the database changed");
        no_temp_dirs(&db_dir);
        // The unbroken bundle goes in afterwards (the failure left nothing
        // that stands in its way).
        let good = tmp.path().join(format!("good{i}"));
        build_bundle(&good, &codec, &rows, 3, i as u64);
        ingest_table(&db, &good, &BundleOptions::default()).unwrap();
        assert_eq!(
            strata_import::table::TableReader::open(&db, "items")
                .unwrap()
                .count()
                .unwrap(),
            300
        );
    }
}
