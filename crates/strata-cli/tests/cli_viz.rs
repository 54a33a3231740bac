//! `strata viz` and the text chart of `strata lsm`: the page is written
//! outside the database, the database directory is left exactly as it was,
//! and bad input gets a clear error without creating anything.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;

mod common;
use common::strata;

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn viz_writes_a_page_and_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let dbs = db.to_str().unwrap();
    // Two ingestions of the same generated keys: files on two levels.
    assert!(strata(&["kv", "put", dbs, "a", "b"]).0);
    for i in 0..2 {
        let sst = d.path().join(format!("t{i}.sst"));
        let sst = sst.to_str().unwrap();
        let (ok, _, err) = strata(&["sst", "write", sst, "--keys", "3000"]);
        assert!(ok, "{err}");
        let (ok, _, err) = strata(&["ingest", dbs, sst, "--small-file-bytes", "0"]);
        assert!(ok, "{err}");
    }
    let before = listing(&db);
    let page = d.path().join("lsm.html");
    let (ok, out, err) = strata(&["viz", dbs, "-o", page.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("wrote"), "{out}");
    assert_eq!(listing(&db), before, "viz changed the database directory");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<canvas id=\"lsm\""));
    assert!(
        html.contains("\"keys\":[") && html.contains("key0"),
        "keys embedded"
    );
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));

    // Not inside the database.
    let inside = db.join("lsm.html");
    let (ok, _, err) = strata(&["viz", dbs, "-o", inside.to_str().unwrap()]);
    assert!(
        !ok && err.contains("inside the database directory"),
        "{err}"
    );
    assert!(!inside.exists());

    // Not a database: a clear error, nothing created.
    let missing = d.path().join("nope");
    let (ok, _, err) = strata(&[
        "viz",
        missing.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(
        !ok && err.contains(&format!(
            "no database at {}: nothing exists there",
            missing.display()
        )),
        "{err}"
    );
    assert!(!missing.exists());
    // A file, and a directory that is not a database.
    let file = d.path().join("file.txt");
    std::fs::write(&file, "x").unwrap();
    let other = d.path().join("photos");
    std::fs::create_dir(&other).unwrap();
    for (path, says) in [
        (&file, "is not a Strata database: it is a file"),
        (&other, "not a Strata database"),
    ] {
        let (ok, _, err) = strata(&["viz", path.to_str().unwrap(), "-o", page.to_str().unwrap()]);
        assert!(!ok && err.contains(says), "{err}");
    }
    assert!(std::fs::read_dir(&other).unwrap().next().is_none());

    // The text chart leads `strata lsm`.
    let (ok, out, err) = strata(&["lsm", dbs]);
    assert!(ok, "{err}");
    assert!(out.contains("L0: ") && out.contains("sublevels"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains('[') && l.contains(" files ")),
        "{out}"
    );
}

/// `strata lsm` labels the key axis of an imported table's tree with the
/// table's keys decoded (index and column values), as the page does, not
/// raw hex; the catalog's own key reads as a system key.
#[test]
fn lsm_labels_table_keys_by_their_columns() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let schema = d.path().join("s.sql");
    std::fs::write(
        &schema,
        "CREATE TABLE fruit (id INT PRIMARY KEY, name TEXT);\nCREATE INDEX fruit_name ON fruit (name);\n",
    )
    .unwrap();
    let csv = d.path().join("f.csv");
    let rows: String = (1..=500)
        .map(|i| format!("{i},name{:03}\n", i % 300))
        .collect();
    std::fs::write(&csv, rows).unwrap();
    let (ok, _, err) = strata(&[
        "import",
        db.to_str().unwrap(),
        "--schema",
        schema.to_str().unwrap(),
        "--table",
        "fruit",
        "--quiet",
        csv.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let (ok, out, err) = strata(&["lsm", db.to_str().unwrap()]);
    assert!(ok, "{err}");
    let axis = out
        .lines()
        .find(|l| l.contains("catalog"))
        .unwrap_or_else(|| panic!("no axis line with the catalog's key:\n{out}"));
    assert!(axis.contains("(system) catalog/fruit"), "{axis}");
    // The last key is the secondary index's largest name.
    assert!(axis.contains("fruit.fruit_name (name299)"), "{axis}");
    assert!(!axis.contains("0x"), "{axis}");
}

/// `-o -` is standard output, as users expect: the page alone goes there
/// (no "wrote" line after it) and no file named `-` is created; `./-` is
/// still a file of that name for whoever wants one.
#[test]
fn viz_dash_writes_the_page_to_stdout() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    assert!(strata(&["kv", "put", db.to_str().unwrap(), "a", "b"]).0);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(d.path())
        .args(["viz", "db", "-o", "-"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.starts_with("<!DOCTYPE html>"),
        "{}",
        &out[..out.len().min(200)]
    );
    assert!(
        out.trim_end().ends_with("</html>"),
        "the page alone on stdout, no \"wrote\" line after it"
    );
    assert!(!d.path().join("-").exists(), "a file named - was written");

    let o = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(d.path())
        .args(["viz", "db", "-o", "./-"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.path().join("-").is_file());
}
