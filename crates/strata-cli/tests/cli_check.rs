//! `strata check DB`: exit 0 on a sound database, 1 with the damaged file
//! and offset printed when a table is damaged, and the directory unchanged
//! either way.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;

mod common;
use common::strata;

/// Every file's name, size and modification time.
fn listing(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.len(),
                m.modified().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn check_passes_then_reports_a_damaged_table() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    {
        let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
        for i in 0..2000u32 {
            db.put(format!("key{i:05}").as_bytes(), [b'v'; 50]).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let db = dir.to_str().unwrap();
    let before = listing(&dir);
    let (ok, out, err) = strata(&["check", db]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("0 problems"), "{out}");
    assert_eq!(before, listing(&dir), "check changed the directory");

    let sst = before
        .iter()
        .find(|(n, _, _)| n.ends_with(".sst"))
        .map(|(n, _, _)| dir.join(n))
        .unwrap();
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&sst, &bytes).unwrap();
    let before = listing(&dir);
    let (ok, out, err) = strata(&["check", db]);
    assert!(!ok, "a damaged table must fail the check: {out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("problem:"))
        .unwrap_or_else(|| panic!("no problem line: {out}{err}"));
    assert!(
        line.contains(&sst.display().to_string()) && line.contains("offset"),
        "{line}"
    );
    assert!(err.contains("1 problems found"), "{err}");
    // The summary does not pass a partial entry count off as the whole.
    assert!(
        out.contains("entries; 1 could not be read through, so the count is partial)"),
        "{out}"
    );
    assert_eq!(before, listing(&dir), "check changed the directory");

    let (ok, _, err) = strata(&["check", "/nonexistent/strata-db"]);
    assert!(
        !ok && err.contains("no database at /nonexistent/strata-db: nothing exists there"),
        "{err}"
    );
}

/// A damaged EVENTS log (a garbage line in the middle, a flipped byte, a
/// torn last line): `strata check` warns naming EVENTS and exits 0 (it is
/// not data); `strata lsm` and `strata viz` work, skipping the damaged or
/// torn line with a note (a damaged line names its line and offset), never
/// a panic; the directory is unchanged by all three.
#[test]
fn damaged_events_are_reported_by_every_reader() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    {
        let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
        for i in 0..500u32 {
            db.put(format!("key{i:05}").as_bytes(), [b'v'; 50]).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let events = dir.join("EVENTS");
    let good = std::fs::read(&events).unwrap();
    let first = good.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut garbage = good[..first].to_vec();
    garbage.extend_from_slice(b"\x00\xff{not json\n");
    garbage.extend_from_slice(&good[first..]);
    let mut flipped = good.clone();
    flipped[first + 3] ^= 0x5a;
    let torn = good[..good.len() - 5].to_vec();
    let html = d.path().join("lsm.html");
    let db = dir.to_str().unwrap();
    for (case, bytes, damaged) in [
        ("garbage line", garbage, true),
        ("flipped byte", flipped, true),
        ("torn last line", torn, false),
    ] {
        std::fs::write(&events, &bytes).unwrap();
        let before = listing(&dir);
        let (ok, out, err) = strata(&["check", db]);
        assert!(ok, "{case}: {out}{err}");
        assert!(
            out.lines()
                .any(|l| l.starts_with("warning:") && l.contains("EVENTS")),
            "{case}: {out}"
        );
        for args in [
            vec!["lsm", db],
            vec!["viz", db, "-o", html.to_str().unwrap()],
        ] {
            let (ok, out, err) = strata(&args);
            assert!(!err.contains("panicked"), "{case} {args:?}: {err}");
            // Every reader goes on past the damaged line and says so: a
            // damaged line used to make `lsm` and `viz` fail until the
            // segment aged out.
            assert!(ok, "{case} {args:?}: {out}{err}");
            if damaged && args[0] == "lsm" {
                assert!(
                    out.contains("damaged EVENTS line skipped")
                        && out.contains("EVENTS line 2 (offset "),
                    "{case}: {out}"
                );
            }
            if damaged && args[0] == "viz" {
                let page = std::fs::read_to_string(&html).unwrap();
                assert!(
                    page.contains("line 2 (offset "),
                    "{case}: no note on the page"
                );
            }
        }
        if !damaged {
            // Given as a relative path, the warning names the file once,
            // at the start of the cut line.
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
                .args(["check", "db"])
                .current_dir(d.path())
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            let at = bytes.iter().rposition(|&b| b == b'\n').unwrap() + 1;
            assert!(
                out.contains(&format!("warning: db/EVENTS at offset {at}:")),
                "{case}, relative path: {out}"
            );
        }
        assert_eq!(
            before,
            listing(&dir),
            "{case}: a reader changed the directory"
        );
    }
}

/// `check` of what is not a database says so in the words the other
/// commands use (a missing path, a file, a directory with neither CURRENT
/// nor a MANIFEST) and creates nothing; a directory with a MANIFEST but no
/// CURRENT is a damaged database, reported as a problem in CURRENT.
#[test]
fn check_of_what_is_not_a_database_says_so() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("file"), "x").unwrap();
    std::fs::create_dir(p("photos")).unwrap();
    std::fs::write(p("photos/cat.jpg"), "jpeg").unwrap();
    // A RocksDB database (its marker files; check used to report its
    // MANIFEST as a Strata MANIFEST that does not decode).
    std::fs::create_dir(p("rocks")).unwrap();
    for f in [
        "CURRENT",
        "IDENTITY",
        "LOG",
        "MANIFEST-000005",
        "OPTIONS-000007",
    ] {
        std::fs::write(p(&format!("rocks/{f}")), "x").unwrap();
    }
    std::fs::create_dir(p("damaged")).unwrap();
    std::fs::create_dir(p("empty")).unwrap();
    std::fs::write(p("damaged/MANIFEST-000002"), "").unwrap();
    let before = listing(d.path());
    for (path, says) in [
        (p("missing"), "no database at"),
        (p("file"), "is not a Strata database: it is a file"),
        (
            p("photos"),
            "is not a Strata database: the directory has no CURRENT but is not empty (cat.jpg)",
        ),
        (
            p("rocks"),
            "is not a Strata database: it is a RocksDB or LevelDB database",
        ),
    ] {
        let (ok, out, err) = strata(&["check", &path]);
        assert!(!ok, "check {path} passed: {out}");
        assert!(
            err.contains(says) && err.contains(&path),
            "check {path}: {err}"
        );
    }
    // An empty directory: every command that reads refuses it in one
    // sentence (check, lsm, viz and the read-only opens used to word it
    // three ways), and it stays empty.
    let empty = p("empty");
    let page = p("page.html");
    let says = format!(
        "{empty} is not a Strata database: the directory has no CURRENT file: it is \
         empty, or holds only what an interrupted creation leaves"
    );
    for args in [
        vec!["check", &empty],
        vec!["lsm", &empty],
        vec!["viz", &empty, "-o", &page],
        vec!["tables", &empty],
        vec!["kv", "get", &empty, "k"],
        vec!["kv", "scan", &empty],
    ] {
        let (ok, out, err) = strata(&args);
        assert!(!ok, "{args:?} passed: {out}");
        assert!(err.contains(&says), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    assert!(!d.path().join("page.html").exists());
    let (ok, out, _) = strata(&["check", &p("damaged")]);
    assert!(
        !ok && out.contains("problem:") && out.contains("CURRENT"),
        "{out}"
    );
    assert_eq!(listing(d.path()), before);
}

/// The SST files of `dir` whose first entry's key starts with `prefix` (as
/// `strata sst dump` prints it), e.g. every file of one index of a table.
fn ssts_starting_with(dir: &Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .filter(|p| {
            let (ok, out, err) = strata(&["sst", "dump", p.to_str().unwrap()]);
            assert!(ok, "{err}");
            let first = out.lines().skip_while(|l| *l != "Entries:").nth(1);
            first.is_some_and(|l| l.starts_with(prefix))
        })
        .collect();
    v.sort();
    v
}

/// A table whose secondary index lost its SST (or whose rows lost theirs)
/// is inconsistent though every remaining file is sound: `strata repair`
/// lists the table and index under what was lost, and `strata check` (which
/// said 0 problems) reports the index with both counts and a sample key
/// and exits 1, changing nothing. A healthy imported table is no problem.
#[test]
fn check_and_repair_report_a_table_whose_index_lost_its_file() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n);
    std::fs::write(
        p("t.sql"),
        "CREATE TABLE t (a INT PRIMARY KEY, b INT, c VARCHAR(10));\n\
         CREATE INDEX t_b ON t (b);\n",
    )
    .unwrap();
    let rows: String = (0..5000)
        .map(|i| format!("{i},{},x{i}\n", i * 7 % 100))
        .collect();
    std::fs::write(p("t.csv"), rows).unwrap();
    let db = p("db");
    let dbs = db.to_str().unwrap();
    let (ok, _, err) = strata(&[
        "import",
        dbs,
        "--schema",
        p("t.sql").to_str().unwrap(),
        "--table",
        "t",
        p("t.csv").to_str().unwrap(),
    ]);
    assert!(ok, "{err}");

    let before = listing(&db);
    let (ok, out, err) = strata(&["check", dbs]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("1 SQL tables (5000 rows, 5000 index entries): 0 problems"),
        "{out}"
    );
    assert_eq!(before, listing(&db), "check changed the directory");

    // Table 1's index 1 (t_b), then its primary index: key prefix 0x01,
    // table id, index id.
    let index_files = ssts_starting_with(&db, r"'\x01\x00\x00\x00\x01\x00\x01");
    assert_eq!(index_files.len(), 1, "{:?}", listing(&db));
    for case in ["index", "rows"] {
        let dir = p(case);
        let dirs = dir.to_str().unwrap();
        std::fs::create_dir(&dir).unwrap();
        for (n, _, _) in listing(&db) {
            if std::fs::metadata(db.join(&n)).unwrap().is_file() {
                std::fs::copy(db.join(&n), dir.join(&n)).unwrap();
            }
        }
        let gone = if case == "index" {
            index_files[0].file_name().unwrap().to_owned()
        } else {
            let f = ssts_starting_with(&db, r"'\x01\x00\x00\x00\x01\x00\x00");
            assert_eq!(f.len(), 1);
            f[0].file_name().unwrap().to_owned()
        };
        std::fs::remove_file(dir.join(gone)).unwrap();
        let (ok, out, err) = strata(&["repair", dirs]);
        assert!(ok, "{out}{err}");
        let (want, sample) = if case == "index" {
            (
                "table t, index t_b (b): 0 entries for 5000 rows",
                "the row with primary key (0) has no entry in t_b",
            )
        } else {
            (
                "table t, index t_b (b): 5000 entries for 0 rows",
                "which does not exist",
            )
        };
        let lost = out
            .lines()
            .find(|l| l.starts_with("LOST: table t,"))
            .unwrap_or_else(|| panic!("repair did not report the table: {out}"));
        assert!(lost.contains(want) && lost.contains(sample), "{lost}");
        assert!(!out.contains("lost: nothing"), "{out}");

        let before = listing(&dir);
        let (ok, out, err) = strata(&["check", dirs]);
        assert!(!ok, "an inconsistent table must fail the check: {out}");
        let line = out
            .lines()
            .find(|l| l.starts_with("problem: table t,"))
            .unwrap_or_else(|| panic!("no table problem: {out}{err}"));
        assert!(line.contains(want) && line.contains(sample), "{line}");
        assert!(err.contains("1 problems found"), "{err}");
        assert_eq!(before, listing(&dir), "check changed the directory");
    }

    // A damaged block of the index: the engine's problem names the file,
    // and the table that cannot be read to the end is a problem of its own
    // (the other checks go on).
    let dir = p("damaged");
    std::fs::create_dir(&dir).unwrap();
    for (n, _, _) in listing(&db) {
        if std::fs::metadata(db.join(&n)).unwrap().is_file() {
            std::fs::copy(db.join(&n), dir.join(&n)).unwrap();
        }
    }
    let sst = dir.join(index_files[0].file_name().unwrap());
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&sst, &bytes).unwrap();
    let (ok, out, _) = strata(&["check", dir.to_str().unwrap()]);
    assert!(!ok, "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("problem: table t: reading it failed")),
        "{out}"
    );
    assert!(out.contains(&sst.display().to_string()), "{out}");
}

/// `strata check` on a database another process has open says so first,
/// and words a table no version names as work in progress (a flush or
/// compaction's output), not a crash's leftover (it said "left by a crash"
/// beside a compacting writer); the probe changes nothing and keeps the
/// writer's lock (a check from the writer's own process too). Closed, the
/// same table is a crash's leftover again; a missing LOCK is not created.
#[test]
fn check_beside_a_live_writer_says_the_database_is_in_use() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let db = strata::Db::open(&dir, strata::Options::default()).unwrap();
    for i in 0..2000u32 {
        db.put(format!("key{i:05}").as_bytes(), [b'v'; 50]).unwrap();
    }
    db.flush().unwrap();
    // A table no version names yet, as a running compaction's output is.
    let live = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    let stray = dir.join("999999.sst");
    std::fs::copy(&live, &stray).unwrap();
    let dbs = dir.to_str().unwrap();
    let before = listing(&dir);

    // From this process, the writer's: in use, and the lock stays held.
    let r = strata::check::check_dir(&dir).unwrap();
    assert_eq!(r.in_use, strata::vfs::LockState::HeldHere);
    for _ in 0..2 {
        let (ok, out, err) = strata(&["check", dbs]);
        assert!(ok, "{out}{err}");
        let first = out.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!(
                "note: {dbs} is open by another process (pid {})",
                std::process::id()
            )) && first.contains("snapshot"),
            "{out}"
        );
        let w = out
            .lines()
            .find(|l| l.contains("999999.sst"))
            .unwrap_or_else(|| panic!("no warning for the stray table: {out}"));
        assert!(
            w.contains("while the database is in use")
                && w.contains("compaction")
                && !w.contains("left by a crash"),
            "{w}"
        );
        assert_eq!(before, listing(&dir), "check changed the directory");
    }
    // The writer still holds its lock: another process cannot open it.
    let (ok, _, err) = strata(&["kv", "put", dbs, "x", "y"]);
    assert!(!ok && err.contains("another process"), "{err}");
    db.close().unwrap();

    // Closed: a crash's leftover, no note; no LOCK is created.
    let _ = std::fs::remove_file(dir.join("LOCK"));
    let before = listing(&dir);
    let (ok, out, err) = strata(&["check", dbs]);
    assert!(ok, "{out}{err}");
    assert!(!out.contains("is open by"), "{out}");
    let w = out.lines().find(|l| l.contains("999999.sst")).unwrap();
    assert!(w.contains("left by a crash"), "{w}");
    assert!(!dir.join("LOCK").exists(), "check created LOCK");
    assert_eq!(before, listing(&dir), "check changed the directory");
}
