//! SIGKILL during `strata import`, at random moments: after each kill the
//! table is absent or complete (never partial), and the next import removes
//! the killed one's temporary directory. 20 kills (`STRATA_LONG=1`: 100).

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{Rng, SeedableRng};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::strata;

fn temp_dirs(db: &Path) -> usize {
    std::fs::read_dir(db).map_or(0, |rd| {
        rd.filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("import-tmp-")
        })
        .count()
    })
}

#[test]
fn killed_imports_leave_the_table_absent_or_complete() {
    let d = tempfile::tempdir().unwrap();
    let schema = d.path().join("schema.sql");
    std::fs::write(
        &schema,
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT NOT NULL); CREATE INDEX t_v ON t (v);
         CREATE TABLE marker (x INT PRIMARY KEY);",
    )
    .unwrap();
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
    let marker = d.path().join("marker.csv");
    std::fs::write(&marker, "1\n").unwrap();
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
            assert!(err.contains("no table t"), "kill {k}: {err}");
            absent += 1;
        }
        // The next import (of another table) removes what the killed one left.
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
            "kill {k}: temporary files left after the next import"
        );
    }
    eprintln!("{kills} kills: {absent} left no table, {complete} a complete one");
    assert!(absent > 0, "no kill landed during an import");
}
