//! SIGKILL during `strata import`, at random moments: after each kill the
//! table is absent or complete (never partial), and the next import removes
//! the killed one's temporary directory. 20 kills (`STRATA_LONG=1`: 100).
//!
//! The same for `--mode direct` and `--mode batch`, against what those
//! modes promise (`docs/import.md`, "Other modes"): into a new table, the
//! table is absent or complete after a kill (the catalog entry comes last)
//! and the units the killed import wrote never surface, not even when the
//! table is imported again; into a table that has rows, every unit is
//! whole (each row with its index entry; in batch mode, whole batches). 10
//! kills per mode and case (`STRATA_LONG=1`: 50).

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{Rng, SeedableRng};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::strata;

/// Entries in the database's scratch directory, where imports keep their
/// temporary files.
fn temp_dirs(db: &Path) -> usize {
    std::fs::read_dir(db.join("scratch")).map_or(0, |rd| rd.count())
}

/// A read-write open of the database that is not an import (the issue's
/// promise: a killed import's temporary files are gone at the latest at
/// the next open).
fn open_and_close(db: &Path) {
    drop(strata::Db::open_default(db).unwrap());
    assert_eq!(temp_dirs(db), 0, "temporary files left after the next open");
}

/// Writes the tests' schema (table `t` with an index on `v`, and a
/// one-column table `marker`) and a one-row CSV for `marker` into `dir`.
fn fixture(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let schema = dir.join("schema.sql");
    std::fs::write(
        &schema,
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT NOT NULL); CREATE INDEX t_v ON t (v);
         CREATE TABLE marker (x INT PRIMARY KEY);",
    )
    .unwrap();
    let marker = dir.join("marker.csv");
    std::fs::write(&marker, "1\n").unwrap();
    (schema, marker)
}

#[test]
fn killed_imports_leave_the_table_absent_or_complete() {
    let d = tempfile::tempdir().unwrap();
    let (schema, marker) = fixture(d.path());
    // Out of key order, so the import sorts and spills under 4 MiB.
    let rows = 150_000u64;
    let mut csv = String::new();
    for i in 0..rows {
        let id = (i * 7919) % rows;
        csv.push_str(&format!(
            "{id},value-{:08}-{}\n",
            (id * 31) % rows,
            "x".repeat(20)
        ));
    }
    let input = d.path().join("in.csv");
    std::fs::write(&input, csv).unwrap();
    let import = |db: &Path| {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .args([
                "import",
                db.to_str().unwrap(),
                input.to_str().unwrap(),
                "--schema",
                schema.to_str().unwrap(),
                "--table",
                "t",
                "--memory",
                "4MiB",
                "--quiet",
            ])
            .spawn()
            .unwrap()
    };
    // How long a whole import takes here, to spread the kills over it.
    let start = Instant::now();
    let full = d.path().join("full");
    assert!(import(&full).wait().unwrap().success());
    let took = start.elapsed();
    let kills = if std::env::var_os("STRATA_LONG").is_some() {
        100
    } else {
        20
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let (mut absent, mut complete) = (0, 0);
    for k in 0..kills {
        let db = d.path().join(format!("db{k}"));
        let mut child = import(&db);
        let at = took.mul_f64(rng.gen_range(0.0..1.2));
        std::thread::sleep(at.min(Duration::from_secs(30)));
        let _ = child.kill(); // SIGKILL; the import may have finished
        child.wait().unwrap();
        if !db.exists() {
            absent += 1;
            continue;
        }
        let (ok, out, err) = strata(&["count", db.to_str().unwrap(), "t"]);
        if ok {
            assert_eq!(
                out,
                format!("{rows}\n"),
                "kill {k} at {at:?}: partial table"
            );
            let (_, tables, _) = strata(&["tables", db.to_str().unwrap()]);
            assert!(
                tables.contains(&format!("index t_v (v): {rows} entries")),
                "{tables}"
            );
            complete += 1;
        } else {
            // A kill while the database itself was being created leaves a
            // directory without CURRENT, which read commands refuse as
            // not (yet) a database: no table either.
            assert!(
                err.contains("no table t") || err.contains("has no CURRENT file"),
                "kill {k}: {err}"
            );
            absent += 1;
        }
        // The next import (of another table) removes what the killed one left.
        open_and_close(&db);
        let (ok, _, err) = strata(&[
            "import",
            db.to_str().unwrap(),
            marker.to_str().unwrap(),
            "--schema",
            schema.to_str().unwrap(),
            "--table",
            "marker",
            "--quiet",
        ]);
        assert!(ok, "{err}");
        assert_eq!(
            temp_dirs(&db),
            0,
            "kill {k}: temporary files left after the import"
        );
    }
    eprintln!("{kills} kills: {absent} left no table, {complete} a complete one");
    assert!(absent > 0, "no kill landed during an import");
}

/// Rows of `n` ids in scrambled key order, starting at `base`.
fn scrambled_rows(n: u64, base: u64) -> String {
    let mut csv = String::new();
    for i in 0..n {
        let id = (i * 7919) % n + base;
        csv.push_str(&format!(
            "{id},value-{:08}-{}\n",
            (id * 31) % n,
            "x".repeat(20)
        ));
    }
    csv
}

/// `index t_v (v): N entries` of `strata tables`.
fn index_entries(db: &Path) -> u64 {
    let (ok, tables, err) = strata(&["tables", db.to_str().unwrap()]);
    assert!(ok, "{err}");
    let line = tables
        .lines()
        .find(|l| l.contains("index t_v (v): "))
        .unwrap_or_else(|| panic!("no index line in {tables}"));
    let n = line.split("index t_v (v): ").nth(1).unwrap();
    n.split_whitespace().next().unwrap().parse().unwrap()
}

/// Kills `strata import --mode MODE` at random moments, into a new table
/// (`seed` 0) or into one already holding `seed` rows, and checks each
/// outcome against the mode's promise (see the module documentation).
fn kill_mode(mode: &str, seed: u64) {
    let d = tempfile::tempdir().unwrap();
    let (schema, marker) = fixture(d.path());
    let rows = 60_000u64;
    let batch = 1000u64;
    let input = d.path().join("in.csv");
    std::fs::write(&input, scrambled_rows(rows, 0)).unwrap();
    // The seed rows' ids follow the input's, so nothing collides.
    let seed_csv = d.path().join("seed.csv");
    std::fs::write(&seed_csv, scrambled_rows(seed, rows)).unwrap();
    let args = |db: &Path, file: &Path, table: &str| -> Vec<String> {
        let mut a: Vec<String> = [
            "import",
            db.to_str().unwrap(),
            file.to_str().unwrap(),
            "--schema",
            schema.to_str().unwrap(),
            "--table",
            table,
            "--quiet",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if table == "t" {
            a.extend(["--mode".to_string(), mode.to_string()]);
            // Direct: a unit per 2 MiB buffer; batch: exact 1,000-row units.
            match mode {
                "direct" => a.extend(["--memory".to_string(), "2MiB".to_string()]),
                _ => a.extend(["--rows-per-batch".to_string(), batch.to_string()]),
            }
        }
        a
    };
    let prepare = |db: &Path| {
        if seed > 0 {
            let (ok, _, err) = strata(
                &args(db, &seed_csv, "t")
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
            );
            assert!(ok, "{err}");
        }
    };
    let import = |db: &Path| {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(args(db, &input, "t"))
            .spawn()
            .unwrap()
    };
    let start = Instant::now();
    let full = d.path().join("full");
    prepare(&full);
    let t0 = Instant::now();
    assert!(import(&full).wait().unwrap().success());
    let took = t0.elapsed();
    let kills = if std::env::var_os("STRATA_LONG").is_some() {
        50
    } else {
        10
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let (mut none, mut partial, mut complete) = (0, 0, 0);
    for k in 0..kills {
        let db = d.path().join(format!("db{k}"));
        prepare(&db);
        let mut child = import(&db);
        let at = took.mul_f64(rng.gen_range(0.0..1.2));
        std::thread::sleep(at.min(Duration::from_secs(30)));
        let _ = child.kill(); // SIGKILL; the import may have finished
        child.wait().unwrap();
        let (ok, out, err) = strata(&["count", db.to_str().unwrap(), "t"]);
        if seed == 0 {
            // A new table: absent or complete.
            if ok {
                assert_eq!(
                    out,
                    format!("{rows}\n"),
                    "kill {k} at {at:?}: partial table"
                );
                assert_eq!(index_entries(&db), rows);
                complete += 1;
            } else {
                // Killed before it created the directory (a slow start),
                // before it wrote CURRENT, or after, without the table.
                assert!(
                    err.contains("no table t")
                        || err.contains("has no CURRENT file")
                        || (!db.exists() && err.contains("nothing exists there")),
                    "kill {k}: {err}"
                );
                none += 1;
                // What the killed import wrote never surfaces: the table
                // imported again holds exactly the input's rows.
                let (ok, _, err) = strata(
                    &args(&db, &input, "t")
                        .iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>(),
                );
                assert!(ok, "kill {k}: re-import: {err}");
                let (_, out, _) = strata(&["count", db.to_str().unwrap(), "t"]);
                assert_eq!(out, format!("{rows}\n"), "kill {k}: re-import count");
                assert_eq!(index_entries(&db), rows, "kill {k}: re-import index");
            }
        } else {
            // A table with rows: whole units only.
            assert!(ok, "kill {k}: {err}");
            let n: u64 = out.trim().parse().unwrap();
            assert!((seed..=seed + rows).contains(&n), "kill {k}: {n} rows");
            assert_eq!(
                index_entries(&db),
                n,
                "kill {k}: rows and index entries differ"
            );
            if mode == "batch" {
                assert!(
                    (n - seed).is_multiple_of(batch) || n == seed + rows,
                    "kill {k}: {} rows imported, not whole batches of {batch}",
                    n - seed
                );
            }
            match n - seed {
                0 => none += 1,
                x if x == rows => complete += 1,
                _ => partial += 1,
            }
        }
        // The next open removes what the killed import left.
        open_and_close(&db);
        let (ok, _, err) = strata(
            &args(&db, &marker, "marker")
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        assert!(ok, "{err}");
        assert_eq!(
            temp_dirs(&db),
            0,
            "kill {k}: temporary files left after the import"
        );
    }
    eprintln!(
        "--mode {mode}, seed {seed}: {kills} kills in {:?}: {none} wrote nothing, {partial} whole units, {complete} complete",
        start.elapsed()
    );
    assert!(none + partial > 0, "no kill landed during an import");
}

#[test]
fn killed_direct_imports_into_a_new_table() {
    kill_mode("direct", 0);
}

#[test]
fn killed_batch_imports_into_a_new_table() {
    kill_mode("batch", 0);
}

#[test]
fn killed_direct_imports_into_a_table_with_rows_keep_whole_units() {
    kill_mode("direct", 100);
}

#[test]
fn killed_batch_imports_into_a_table_with_rows_keep_whole_batches() {
    kill_mode("batch", 100);
}
