//! Model-based tests of the import modes and `--on-duplicate`: random
//! inputs (duplicate primary keys across chunks, rows already in the
//! table, NULLs, quoted fields) are imported in every mode (pipeline with
//! spills, direct with many ingestions, batch with many write batches)
//! and every duplicate rule, and the whole database must equal the one a
//! model gives: the rows the rule keeps, imported without duplicates into
//! a fresh database. Every key of every index is compared, so a stale
//! secondary entry of a replaced row, a lost row or a wrong winner fails.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::collections::BTreeMap;
use std::path::Path;
use strata::Db;
use strata_import::consistency::check_tables;
use strata_import::csv::input::Input;
use strata_import::{import, ImportOptions, Mode, OnDuplicate, Schema, Summary};

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, grp INT, code TEXT UNIQUE, note TEXT);
     CREATE INDEX t_grp ON t (grp);";

/// One row: id, grp, code, note (`None`: NULL).
type Row = (i64, Option<i64>, Option<String>, String);

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn csv(rows: &[Row]) -> Vec<u8> {
    csv_ending(rows, |_| "\n")
}

/// The rows as CSV, row `i` ended by `end(i)` (LF, CRLF or a lone CR).
fn csv_ending(rows: &[Row], end: impl Fn(usize) -> &'static str) -> Vec<u8> {
    let mut out = String::new();
    for (i, (id, grp, code, note)) in rows.iter().enumerate() {
        let grp = grp.map(|g| g.to_string()).unwrap_or_default();
        let code = code.clone().unwrap_or_default();
        let note = format!("\"{}\"", note.replace('"', "\"\""));
        out.push_str(&format!("{id},{grp},{code},{note}{}", end(i)));
    }
    out.into_bytes()
}

/// A row of id `id`, version `ver` (codes never collide across ids).
fn row(rng: &mut Rng, id: i64, ver: usize) -> Row {
    let grp = (rng.below(5) > 0).then(|| rng.below(4) as i64);
    let code = (rng.below(4) > 0).then(|| format!("c{id}v{}", rng.below(3) + ver as u64));
    let notes = ["plain", "with, comma", "with \"quote\"", "two\nlines", "ü"];
    let note = format!("{}-{ver}", notes[rng.below(5) as usize]);
    (id, grp, code, note)
}

/// Every key-value pair of a database, in key order.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn all_pairs(db: &Db) -> Pairs {
    db.iter().collect::<Result<_, _>>().unwrap()
}

fn write(dir: &Path, name: &str, data: &[u8]) -> Input {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    Input::File(p)
}

/// Imports `base` (pipeline), then `input` with `opts`, into a fresh
/// database under `dir`; returns every key-value pair and the summary.
fn run(dir: &Path, base: &[Row], input: &[Row], opts: &ImportOptions) -> (Pairs, Summary) {
    let schema = Schema::parse(SCHEMA).unwrap();
    let t = schema.table("t").unwrap();
    let dbdir = dir.join("db");
    let db = Db::open_default(&dbdir).unwrap();
    if !base.is_empty() {
        let b = write(dir, "base.csv", &csv(base));
        import(&db, t, &[b], &ImportOptions::default()).unwrap();
    }
    let i = write(dir, "input.csv", &csv(input));
    let s = import(&db, t, &[i], opts).unwrap();
    (all_pairs(&db), s)
}

/// The rows `rule` keeps, by primary key.
fn model(base: &[Row], input: &[Row], rule: OnDuplicate) -> Vec<Row> {
    let mut m: BTreeMap<i64, Row> = base.iter().map(|r| (r.0, r.clone())).collect();
    for r in input {
        match rule {
            OnDuplicate::Replace => {
                m.insert(r.0, r.clone());
            }
            _ => {
                m.entry(r.0).or_insert_with(|| r.clone());
            }
        }
    }
    m.into_values().collect()
}

fn modes() -> Vec<(Mode, usize)> {
    vec![
        (Mode::Pipeline, 6000),
        (Mode::Direct, 6000),
        (Mode::Batch { rows_per_batch: 7 }, 1 << 20),
    ]
}

#[test]
fn every_mode_and_duplicate_rule_gives_the_models_table() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..6 {
        let mut base: Vec<Row> = Vec::new();
        // Every third case imports into a new table.
        for id in 0..40 {
            if case % 3 != 0 && rng.below(2) == 0 {
                base.push(row(&mut rng, id, 0));
            }
        }
        let input: Vec<Row> = (0..120)
            .map(|v| {
                let id = rng.below(60) as i64;
                row(&mut rng, id, v + 1)
            })
            .collect();
        for rule in [OnDuplicate::Ignore, OnDuplicate::Replace] {
            let want = {
                let d = tempfile::tempdir().unwrap();
                run(
                    d.path(),
                    &model(&base, &input, rule),
                    &[],
                    &ImportOptions::default(),
                )
                .0
            };
            // The expected table holds the rows of every index.
            assert!(want.len() > 3 * 30, "case {case}: {}", want.len());
            for (mode, memory) in modes() {
                let d = tempfile::tempdir().unwrap();
                let opts = ImportOptions {
                    mode,
                    memory,
                    chunk_size: 64,
                    threads: 2,
                    on_duplicate: rule,
                    ..ImportOptions::default()
                };
                let (got, s) = run(d.path(), &base, &input, &opts);
                let what = format!("case {case}, {rule:?}, {}", mode.name());
                assert!(got == want, "{what}: the table differs from the model's");
                if mode == Mode::Pipeline {
                    assert!(s.spilled_bytes > 0, "{what}: no spill");
                } else {
                    assert!(s.units > 3, "{what}: only {} units", s.units);
                }
                let kept = model(&base, &input, rule).len() - base.len();
                let added = s.rows as usize - s.replaced as usize;
                assert_eq!(
                    added, kept,
                    "{what}: rows {} replaced {}",
                    s.rows, s.replaced
                );
            }
        }
        // Without duplicates, `error` gives the same table in every mode.
        let fresh: Vec<Row> = (100..220).map(|id| row(&mut rng, id, 1)).collect();
        let want = {
            let d = tempfile::tempdir().unwrap();
            run(
                d.path(),
                &model(&base, &fresh, OnDuplicate::Error),
                &[],
                &ImportOptions::default(),
            )
            .0
        };
        for (mode, memory) in modes() {
            let d = tempfile::tempdir().unwrap();
            let opts = ImportOptions {
                mode,
                memory,
                chunk_size: 64,
                ..ImportOptions::default()
            };
            let (got, _) = run(d.path(), &base, &fresh, &opts);
            assert!(got == want, "case {case}, error, {}: differs", mode.name());
        }
    }
}

/// Line ends: LF, CRLF, lone CR (a CR-only file) and a mix each end one
/// record and one line, so every record has a line of its own, the line a
/// row is identified by in duplicate resolution. A CR-only file was all
/// "line 1": dropping one duplicate dropped every row, and left a
/// secondary index pointing at rows that were never written. Every mode
/// and duplicate rule must give the model's table (every key of every
/// index, the consistency check clean), and a bad row's error names its
/// line counted the same way.
#[test]
fn every_line_end_gives_the_models_table_and_lines() {
    type End = fn(usize) -> &'static str;
    let ends: [(&str, End); 4] = [
        ("LF", |_| "\n"),
        ("CRLF", |_| "\r\n"),
        ("CR", |_| "\r"),
        ("mixed", |i| ["\n", "\r", "\r\n", "\r", "\r"][i % 5]),
    ];
    let mut rng = Rng(0x05ee_d1e5);
    let schema = Schema::parse(SCHEMA).unwrap();
    let t = schema.table("t").unwrap();
    for case in 0..2 {
        let mut base: Vec<Row> = Vec::new();
        for id in 0..30 {
            if case == 1 && rng.below(2) == 0 {
                base.push(row(&mut rng, id, 0));
            }
        }
        let input: Vec<Row> = (0..150)
            .map(|v| {
                let id = rng.below(50) as i64;
                row(&mut rng, id, v + 1)
            })
            .collect();
        let fresh: Vec<Row> = (100..200).map(|id| row(&mut rng, id, 1)).collect();
        for (name, end) in ends {
            for (rule, rows) in [
                (OnDuplicate::Ignore, &input),
                (OnDuplicate::Replace, &input),
                (OnDuplicate::Error, &fresh),
            ] {
                let want = {
                    let d = tempfile::tempdir().unwrap();
                    run(
                        d.path(),
                        &model(&base, rows, rule),
                        &[],
                        &ImportOptions::default(),
                    )
                    .0
                };
                for (mode, memory) in modes() {
                    let what = format!("case {case}, {name}, {rule:?}, {}", mode.name());
                    let d = tempfile::tempdir().unwrap();
                    let db = Db::open_default(d.path().join("db")).unwrap();
                    if !base.is_empty() {
                        let b = write(d.path(), "base.csv", &csv_ending(&base, end));
                        import(&db, t, &[b], &ImportOptions::default()).unwrap();
                    }
                    let i = write(d.path(), "input.csv", &csv_ending(rows, end));
                    let opts = ImportOptions {
                        mode,
                        memory,
                        chunk_size: 64,
                        threads: 2,
                        on_duplicate: rule,
                        ..ImportOptions::default()
                    };
                    import(&db, t, &[i], &opts).unwrap();
                    assert!(
                        all_pairs(&db) == want,
                        "{what}: the table differs from the model's"
                    );
                    let r = check_tables(&db).unwrap();
                    assert!(r.problems.is_empty(), "{what}: {:?}", r.problems);
                }
            }
            // A bad row's line: the rows' notes hold quoted LFs, each one
            // line more.
            let rows = fresh[..20].to_vec();
            let mut data = csv_ending(&rows, end);
            let bad_line = 1 + rows
                .iter()
                .map(|r| 1 + r.3.matches('\n').count())
                .sum::<usize>();
            data.extend_from_slice(b"x,1,c,n");
            let d = tempfile::tempdir().unwrap();
            let db = Db::open_default(d.path().join("db")).unwrap();
            let i = write(d.path(), "bad.csv", &data);
            let e = import(&db, t, &[i], &ImportOptions::default()).unwrap_err();
            let e = e.to_string();
            assert!(
                e.contains(&format!("bad.csv:{bad_line}: column id:")),
                "{name}: {e}"
            );
        }
    }
}

/// Direct and batch imports are not all or nothing: a failure in a new
/// table takes back what was written (the table stays absent); in a table
/// that existed, the units written before the bad row stay. The pipeline
/// leaves the database as it was.
#[test]
fn a_failed_unit_import_takes_back_a_new_table_and_keeps_an_old_ones_units() {
    let mut rng = Rng(7);
    let good: Vec<Row> = (0..60).map(|id| row(&mut rng, id, 1)).collect();
    let mut data = csv(&good);
    let bad_line = data.iter().filter(|b| **b == b'\n').count() + 1;
    data.extend_from_slice(b"x61,1,c,\"bad id\"\n");
    let schema = Schema::parse(SCHEMA).unwrap();
    let t = schema.table("t").unwrap();
    for mode in [
        Mode::Pipeline,
        Mode::Direct,
        Mode::Batch { rows_per_batch: 5 },
    ] {
        let d = tempfile::tempdir().unwrap();
        let dbdir = d.path().join("db");
        let db = Db::open_default(&dbdir).unwrap();
        let opts = ImportOptions {
            mode,
            memory: 1500,
            chunk_size: 64,
            ..ImportOptions::default()
        };
        let input = write(d.path(), "in.csv", &data);
        let e = import(&db, t, std::slice::from_ref(&input), &opts)
            .unwrap_err()
            .to_string();
        let at = format!("in.csv:{bad_line}: column id");
        assert!(e.contains(&at), "{}: {e}", mode.name());
        assert!(all_pairs(&db).is_empty(), "{}: rows left", mode.name());
        // Into a table with one row.
        let one = write(d.path(), "one.csv", b"1000,1,c1000,\"one\"\n");
        import(&db, t, &[one], &ImportOptions::default()).unwrap();
        let before = all_pairs(&db);
        import(&db, t, &[input], &opts).unwrap_err();
        let after = all_pairs(&db);
        if mode == Mode::Pipeline {
            assert_eq!(after, before);
        } else {
            // Committed units stay (three KVs a row), the bad row's do not.
            assert!(after.len() > before.len(), "{}", mode.name());
            assert!(after.len() < before.len() + 3 * 61, "{}", mode.name());
        }
        db.close().unwrap();
    }
}

/// A failed direct import into a new table takes its committed units back
/// by cutting the table's key range out of the tree (an excise), so their
/// files leave at once: no table bytes and no tombstone stay behind to wait
/// for a compaction. The catalog key of an older table, outside the range,
/// stays.
#[test]
fn a_failed_direct_import_leaves_no_table_files_behind() {
    let mut rng = Rng(23);
    let good: Vec<Row> = (0..6000).map(|id| row(&mut rng, id, 1)).collect();
    let mut data = csv(&good);
    data.extend_from_slice(b"x6001,1,c,\"bad id\"\n");
    let schema = Schema::parse(SCHEMA).unwrap();
    let t = schema.table("t").unwrap();
    let d = tempfile::tempdir().unwrap();
    let db = Db::open_default(d.path().join("db")).unwrap();
    let opts = ImportOptions {
        mode: Mode::Direct,
        memory: 256 << 10,
        chunk_size: 16 << 10,
        ..ImportOptions::default()
    };
    let input = write(d.path(), "in.csv", &data);
    let e = import(&db, t, &[input], &opts).unwrap_err().to_string();
    assert!(e.contains("column id"), "{e}");
    assert!(all_pairs(&db).is_empty(), "rows left");
    let m = db.metrics();
    assert!(m.ingests >= 3, "the import committed {} units", m.ingests);
    let bytes: u64 = m.levels.iter().map(|l| l.bytes).sum();
    let files: usize = m.levels.iter().map(|l| l.files).sum();
    assert_eq!(
        (files, bytes),
        (0, 0),
        "the failed import's units stay in the tree (excises {}, fell back to a tombstone {})",
        m.excises,
        m.excise_fallbacks
    );
    db.close().unwrap();
}

/// A killed direct or batch import into a new table leaves rows under the
/// table's id without a catalog entry; the next import that creates a
/// table gets the same id and must delete them first.
#[test]
fn rows_of_a_killed_unit_import_are_deleted_by_the_next_new_table() {
    let d = tempfile::tempdir().unwrap();
    let dbdir = d.path().join("db");
    let db = Db::open_default(&dbdir).unwrap();
    // What a killed direct import of table id 1 could leave: index keys.
    let orphan_pk = strata_import::encode::key::index_prefix(1, 0).to_vec();
    let orphan_ix = strata_import::encode::key::index_prefix(1, 2).to_vec();
    db.put([orphan_pk.as_slice(), b"\x01zz"].concat(), b"stale")
        .unwrap();
    db.put([orphan_ix.as_slice(), b"\x01zz"].concat(), b"")
        .unwrap();
    let schema = Schema::parse(SCHEMA).unwrap();
    let t = schema.table("t").unwrap();
    let mut rng = Rng(11);
    let rows: Vec<Row> = (0..20).map(|id| row(&mut rng, id, 1)).collect();
    let input = write(d.path(), "in.csv", &csv(&rows));
    import(&db, t, &[input], &ImportOptions::default()).unwrap();
    let got = all_pairs(&db);
    let want = {
        let d2 = tempfile::tempdir().unwrap();
        run(d2.path(), &rows, &[], &ImportOptions::default()).0
    };
    assert!(got == want, "the orphaned keys survived the new table");
}

/// Into a new table, a direct or batch import looks a unit's keys up only
/// where the filter of earlier units' keys (`written.rs`) may hold them: a
/// primary key or a unique secondary key that an earlier unit wrote must
/// still be found, however many units and filter lines lie between, and
/// under `ignore` the first row must still win.
#[test]
fn a_key_an_earlier_unit_wrote_is_found_in_every_later_unit() {
    let mut rng = Rng(11);
    let schema = Schema::parse(SCHEMA).unwrap();
    let t = schema.table("t").unwrap();
    let rows: Vec<Row> = (0..3000).map(|id| row(&mut rng, id, 1)).collect();
    // The last row repeats row 0's id; in the second input, its code
    // (unique) under a new id.
    let mut pk_dup = rows.clone();
    pk_dup.push((0, Some(1), Some("fresh".into()), "again".into()));
    let mut code_dup = rows.clone();
    let code = rows.iter().find_map(|r| r.2.clone()).unwrap();
    code_dup.push((5000, Some(1), Some(code.clone()), "same code".into()));
    for mode in [Mode::Direct, Mode::Batch { rows_per_batch: 97 }] {
        for (input, says) in [
            (&pk_dup, "duplicate key (0) in index primary"),
            (&code_dup, "has the key of a row already in the table"),
        ] {
            let d = tempfile::tempdir().unwrap();
            let db = Db::open_default(d.path().join("db")).unwrap();
            let opts = ImportOptions {
                mode,
                memory: 20_000,
                chunk_size: 256,
                ..ImportOptions::default()
            };
            let i = write(d.path(), "in.csv", &csv(input));
            let e = import(&db, t, &[i], &opts).unwrap_err().to_string();
            // The last row's line (notes may hold newlines).
            let line = csv(&input[..input.len() - 1])
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            assert!(
                e.contains(says)
                    && e.contains(&format!(
                        "in.csv:{line} has the key of a row already in the table"
                    )),
                "{}: {e}",
                mode.name()
            );
            // `ignore` keeps the first row: the table equals the model's.
            // (A unique secondary key taken by another row is an error
            // under every rule.)
            if input.last().map(|r| r.0) != Some(0) {
                continue;
            }
            let d2 = tempfile::tempdir().unwrap();
            let opts = ImportOptions {
                on_duplicate: OnDuplicate::Ignore,
                ..opts
            };
            let (got, s) = run(d2.path(), &[], input, &opts);
            assert!(s.units > 20, "{}: only {} units", mode.name(), s.units);
            let want = {
                let d = tempfile::tempdir().unwrap();
                let kept: Vec<Row> = model(&[], &rows, OnDuplicate::Ignore);
                run(d.path(), &kept, &[], &ImportOptions::default()).0
            };
            assert!(got == want, "{}: the first row 0 must win", mode.name());
            assert_eq!(s.duplicates_ignored, 1, "{}", mode.name());
        }
    }
}

/// Imports from threads sharing one `Db` run one at a time: two at once
/// each checked its keys against the table before the other's rows were
/// there, so both succeeded with overlapping primary keys under `error`,
/// a row was lost and its unique index's entries pointed at the other row
/// (a user audit, from two Python threads). Now exactly one of two
/// overlapping imports fails with a duplicate, whatever the mode, and two
/// imports creating different tables at once get different ids.
#[test]
fn imports_from_threads_sharing_a_db_run_one_at_a_time() {
    let schema = Schema::parse(
        "CREATE TABLE t (id INT PRIMARY KEY, v TEXT); CREATE UNIQUE INDEX t_v ON t (v);
         CREATE TABLE u (id INT PRIMARY KEY, v TEXT);",
    )
    .unwrap();
    for (mode, _) in modes() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open_default(dir.path().join("db")).unwrap();
        let text = |tag: &str| -> Vec<u8> {
            (0..2000)
                .map(|i| format!("{i},{tag}{i}\n"))
                .collect::<String>()
                .into_bytes()
        };
        let a = write(dir.path(), "a.csv", &text("a"));
        let b = write(dir.path(), "b.csv", &text("b"));
        let opts = ImportOptions {
            mode,
            threads: 1,
            memory: 4 << 20,
            ..ImportOptions::default()
        };
        let t = schema.table("t").unwrap();
        let (ra, rb) = std::thread::scope(|s| {
            let x = s.spawn(|| import(&db, t, std::slice::from_ref(&a), &opts));
            let y = s.spawn(|| import(&db, t, std::slice::from_ref(&b), &opts));
            (x.join().unwrap(), y.join().unwrap())
        });
        assert!(
            ra.is_ok() != rb.is_ok(),
            "{mode:?}: exactly one import may succeed: {:?} / {:?}",
            ra.as_ref().map(|s| s.rows),
            rb.as_ref().map(|s| s.rows)
        );
        let e = ra.err().or(rb.err()).unwrap();
        assert!(
            matches!(e, strata_import::Error::Duplicate { .. }),
            "{mode:?}: {e}"
        );
        let tr = strata_import::table::TableReader::open(&db, "t").unwrap();
        assert_eq!(tr.count().unwrap(), 2000, "{mode:?}");
        assert_eq!(tr.count_index(1).unwrap(), 2000, "{mode:?}: index entries");
        // New tables created at once get their own ids.
        let c = write(dir.path(), "c.csv", &text("c"));
        let u = schema.table("u").unwrap();
        let mut t2 = t.clone();
        t2.name = "t2".into();
        std::thread::scope(|s| {
            let x = s.spawn(|| import(&db, u, std::slice::from_ref(&c), &opts));
            let y = s.spawn(|| import(&db, &t2, std::slice::from_ref(&c), &opts));
            x.join().unwrap().unwrap();
            y.join().unwrap().unwrap();
        });
        for name in ["t", "u", "t2"] {
            let tr = strata_import::table::TableReader::open(&db, name).unwrap();
            assert_eq!(tr.count().unwrap(), 2000, "{mode:?}: table {name}");
        }
    }
}

/// The summary says what happened to a small import: the database applies
/// files under `small_file_bytes` as a write batch, so in every mode a
/// 1-row import counts a batch unit and no files (it reported "files 1,
/// sst bytes 1824" for a row that never was in a file of the tree: a user
/// audit); an import large enough to ingest counts its files and no batch.
#[test]
fn the_summary_counts_a_unit_applied_as_a_batch_and_no_files() {
    let one = vec![(1, Some(1), Some("c1".to_string()), "n".to_string())];
    for (mode, memory) in modes() {
        let d = tempfile::tempdir().unwrap();
        let opts = ImportOptions {
            mode,
            memory,
            threads: 2,
            ..ImportOptions::default()
        };
        let (got, s) = run(d.path(), &[], &one, &opts);
        let what = mode.name();
        assert!(!got.is_empty(), "{what}: the row is in the database");
        assert_eq!((s.units, s.batch_units), (1, 1), "{what}");
        for ix in &s.indexes {
            assert_eq!(
                (ix.kvs, ix.files, ix.file_bytes),
                (1, 0, 0),
                "{what}: {ix:?}"
            );
        }
        assert!(s.levels.is_empty(), "{what}: {:?}", s.levels);
        assert_eq!(s.write_amplification(), None, "{what}");
    }
    // Large enough for files (well past 32 KiB of keys and values).
    let mut rng = Rng(7);
    let many: Vec<Row> = (0..3000).map(|id| row(&mut rng, id, 0)).collect();
    let d = tempfile::tempdir().unwrap();
    let (_, s) = run(d.path(), &[], &many, &ImportOptions::default());
    assert_eq!((s.units, s.batch_units), (1, 0));
    assert!(
        s.indexes.iter().all(|ix| ix.files > 0 && ix.file_bytes > 0),
        "{:?}",
        s.indexes
    );
    assert!(!s.levels.is_empty());
}
