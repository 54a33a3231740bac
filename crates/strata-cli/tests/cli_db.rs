//! The raw key-value commands of the `strata` binary (`strata kv ...`): put/get/delete/scan,
//! load/dump round trips in `ldb`'s line format, and clear errors for bad
//! input with nothing written.

#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;
use common::strata;

#[test]
fn put_get_delete_scan() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let db = db.to_str().unwrap();
    assert!(strata(&["kv", "put", db, "apple", "red"]).0);
    assert!(strata(&["kv", "put", db, "banana", "yellow"]).0);
    assert!(strata(&["kv", "put", "--hex", db, "0x00ff", "0x0102"]).0);
    assert_eq!(strata(&["kv", "get", db, "apple"]).1, "red\n");
    assert_eq!(strata(&["kv", "get", "--hex", db, "00ff"]).1, "0x0102\n");
    assert!(strata(&["kv", "delete", db, "apple"]).0);
    let (ok, _, err) = strata(&["kv", "get", db, "apple"]);
    assert!(!ok && err.contains("key apple not found"), "{err}");
    // Under --hex the key is shown as keys are shown there.
    let (ok, _, err) = strata(&["kv", "get", "--hex", db, "ab"]);
    assert!(!ok && err.contains("key 0xAB not found"), "{err}");
    let (_, out, _) = strata(&["kv", "scan", db, "--from", "b"]);
    assert_eq!(out, "banana ==> yellow\n");
    let (_, out, _) = strata(&["lsm", db]);
    assert!(out.contains("L0"), "{out}");
}

/// `strata lsm`'s history counts the flushes an open does: each `kv put`
/// session leaves its write in the WAL, and the next open writes it to an
/// L0 table, which the EVENTS log records only in that open's tree (a
/// `reopen` line). Four sessions made three L0 tables and the history said
/// "0 flushes".
#[test]
fn lsm_counts_the_flushes_done_at_open() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let db = db.to_str().unwrap();
    for i in 0..4 {
        let (ok, _, err) = strata(&["kv", "put", db, &format!("k{i}"), "v"]);
        assert!(ok, "{err}");
    }
    let (ok, out, err) = strata(&["lsm", db]);
    assert!(ok, "{err}");
    assert!(out.contains("L0: 3 files"), "{out}");
    let history = out
        .lines()
        .find(|l| l.starts_with("history (EVENTS): "))
        .unwrap_or_else(|| panic!("no history line: {out}"));
    assert!(
        history.contains("4 opens; 3 flushes (3 at open, from the WAL; "),
        "{history}"
    );
    // The bytes are the three tables' sizes.
    let bytes: u64 = history
        .split("from the WAL; ")
        .nth(1)
        .and_then(|s| s.split(" B)").next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no flush bytes in {history}"));
    let on_disk: u64 = std::fs::read_dir(db)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert_eq!(bytes, on_disk, "{history}");
}

/// `strata lsm`'s history counts the checkpoints the EVENTS log records
/// (each completed one, from `strata checkpoint` here; a refused one logs
/// nothing). It used to leave them out.
#[test]
fn lsm_counts_checkpoints() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let db = db.to_str().unwrap();
    let history = || {
        let (ok, out, err) = strata(&["lsm", db]);
        assert!(ok, "{err}");
        out.lines()
            .find(|l| l.starts_with("history (EVENTS): "))
            .unwrap_or_else(|| panic!("no history line: {out}"))
            .to_string()
    };
    assert!(strata(&["kv", "put", db, "k", "v"]).0);
    assert!(history().contains("; 0 checkpoints; "), "{}", history());
    for (i, name) in ["cp1", "cp2", "cp2"].iter().enumerate() {
        let cp = d.path().join(name);
        let (ok, _, err) = strata(&["checkpoint", db, cp.to_str().unwrap()]);
        assert_eq!(ok, i < 2, "{err}");
        assert!(strata(&["kv", "put", db, &format!("k{i}"), "v"]).0);
    }
    let h = history();
    assert!(h.contains("; 2 checkpoints; "), "{h}");
    // A checkpoint is a database of its own: its log starts anew.
    let (ok, out, err) = strata(&["lsm", d.path().join("cp1").to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("; 0 checkpoints; "), "{out}");
}

#[test]
fn load_then_dump_round_trips() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let input = d.path().join("in.txt");
    let mut text = String::new();
    for i in (0..5000).rev() {
        text.push_str(&format!("0x{:08X} ==> 0x{:X}{:04X}\n", i * 3, 0xAB, i));
    }
    std::fs::write(&input, &text).unwrap();
    let (ok, out, err) = strata(&[
        "kv",
        "load",
        "--hex",
        "--batch-rows",
        "64",
        db.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("loaded 5000 rows"), "{out}");
    let (ok, dump, _) = strata(&["kv", "dump", "--hex", db.to_str().unwrap()]);
    assert!(ok);
    let mut want: Vec<&str> = text.lines().collect();
    want.sort();
    assert_eq!(dump.lines().collect::<Vec<_>>(), want);
}

#[test]
fn bad_load_line_names_file_and_line_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let input = d.path().join("bad.txt");
    std::fs::write(
        &input,
        "a ==> 1\nb ==> 2\nthis line has no arrow\nd ==> 4\n",
    )
    .unwrap();
    let (ok, _, err) = strata(&["kv", "load", db.to_str().unwrap(), input.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("bad.txt:3"), "{err}");
    assert!(
        !db.exists() || strata(&["kv", "dump", db.to_str().unwrap()]).1.is_empty(),
        "nothing loaded"
    );
    std::fs::write(&input, "0xZZ ==> 0x01\n").unwrap();
    let (ok, _, err) = strata(&[
        "kv",
        "load",
        "--hex",
        db.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(
        !ok && err.contains("bad.txt:1") && err.contains("key"),
        "{err}"
    );
}

/// Names, sizes and contents of the files in `dir` (and `lost/`).
fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for d in [dir.to_path_buf(), dir.join("lost")] {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_file() {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn load(db: &str, dir: &std::path::Path, prefix: &str) {
    let f = dir.join(format!("{prefix}.txt"));
    let lines: String = (0..100)
        .map(|i| format!("{prefix}{i:03} ==> value-{prefix}{i}\n"))
        .collect();
    std::fs::write(&f, lines).unwrap();
    let (ok, _, err) = strata(&["kv", "load", db, f.to_str().unwrap()]);
    assert!(ok, "{err}");
}

#[test]
fn read_commands_create_and_change_nothing() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("missing");
    let m = missing.to_str().unwrap();
    for args in [
        vec!["kv", "get", m, "k"],
        vec!["kv", "scan", m],
        vec!["kv", "dump", m],
        vec!["lsm", m],
        vec!["tables", m],
        vec!["count", m, "t"],
        vec!["get", m, "t", "1"],
        vec!["scan", m, "t"],
    ] {
        let (ok, _, err) = strata(&args);
        assert!(
            !ok && err.contains("nothing exists there"),
            "{args:?}: {err}"
        );
        assert!(!missing.exists(), "{args:?} created the path");
    }
    // A directory of unrelated files named like a database's.
    let other = d.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("000123.log"), b"log-like").unwrap();
    std::fs::write(other.join("000007.sst"), b"sst-like").unwrap();
    let before = snapshot(&other);
    let (ok, _, err) = strata(&["repair", other.to_str().unwrap()]);
    assert!(
        !ok && err.contains("not a Strata database"),
        "repair: {err}"
    );
    assert_eq!(snapshot(&other), before, "repair changed the directory");
    for cmd in [&["kv", "dump"][..], &["lsm"], &["tables"], &["kv", "put"]] {
        let mut args = cmd.to_vec();
        args.push(other.to_str().unwrap());
        if cmd == ["kv", "put"] {
            args.extend(["k", "v"]);
        }
        let (ok, _, err) = strata(&args);
        assert!(
            !ok && err.contains("not a Strata database"),
            "{cmd:?}: {err}"
        );
        assert_eq!(snapshot(&other), before, "{cmd:?} changed the directory");
    }
    // A database: reading changes no byte of it.
    let db = d.path().join("db");
    let dbs = db.to_str().unwrap();
    load(dbs, d.path(), "a");
    load(dbs, d.path(), "b");
    let before = snapshot(&db);
    assert_eq!(strata(&["kv", "get", dbs, "b005"]).1, "value-b5\n");
    assert_eq!(strata(&["kv", "dump", dbs]).1.lines().count(), 200);
    assert!(strata(&["kv", "scan", dbs]).0);
    assert!(strata(&["tables", dbs]).0);
    assert!(strata(&["lsm", dbs]).0);
    assert_eq!(snapshot(&db), before);
}

/// `strata repair` on a database whose MANIFEST's last record is damaged
/// (and one of whose tables was deleted): `dump` refuses it, `repair`
/// puts back the table the lost record named, reports the deleted table's
/// keys as lost, and `dump` then returns exactly the rest.
#[test]
fn repair_reports_what_was_lost() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let dbs = db.to_str().unwrap();
    // Each load flushes its keys to an L0 table at its end.
    load(dbs, d.path(), "a");
    load(dbs, d.path(), "b");
    load(dbs, d.path(), "c");
    let current = std::fs::read_to_string(db.join("CURRENT")).unwrap();
    let mpath = db.join(current.trim_end());
    let mut m = std::fs::read(&mpath).unwrap();
    let n = m.len();
    m[n - 3] ^= 0x40;
    std::fs::write(&mpath, &m).unwrap();
    let (ok, _, err) = strata(&["kv", "dump", dbs]);
    assert!(
        !ok && err.contains("corruption") && err.contains("MANIFEST"),
        "{err}"
    );

    // The table holding the `a` keys (the oldest) goes too; the damaged
    // record is the flush of the `c` keys.
    let mut tables: Vec<_> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect();
    tables.sort();
    assert_eq!(tables.len(), 3, "{tables:?}");
    std::fs::remove_file(db.join(&tables[0])).unwrap();

    let (ok, out, err) = strata(&["repair", dbs]);
    assert!(ok, "{err}");
    assert!(out.contains("LOST: MANIFEST-"), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("LOST: table")
            && l.contains("a000..a099")
            && l.contains("100 entries")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("salvaged:")
            && l.contains(&tables[2])
            && l.contains("put back")),
        "{out}"
    );
    let (ok, out, err) = strata(&["kv", "dump", dbs]);
    assert!(ok, "{err}");
    let keys: Vec<&str> = out
        .lines()
        .map(|l| l.split(" ==> ").next().unwrap())
        .collect();
    assert_eq!(keys.len(), 200, "{out}");
    assert!(keys
        .iter()
        .all(|k| k.starts_with('b') || k.starts_with('c')));
}

/// `strata ingest` of one file named twice, by one name or two that resolve
/// to it, says so (it said "p and p overlap") and leaves no database.
#[test]
fn ingest_of_a_file_named_twice_says_so() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    let (ok, _, err) = common::strata(&["sst", "write", &p("a.sst"), "--keys", "10"]);
    assert!(ok, "{err}");
    std::fs::create_dir(d.path().join("sub")).unwrap();
    for other in [p("a.sst"), p("sub/../a.sst")] {
        let (ok, _, err) = common::strata(&["ingest", &p("db"), &p("a.sst"), &other]);
        assert!(!ok);
        assert!(
            err.contains(&format!("{other}: is named twice in one ingestion")),
            "{err}"
        );
        assert!(!err.contains("overlap"), "{err}");
        assert!(!d.path().join("db").exists());
    }
}

/// `strata ingest --move`: a file on the database's file system is moved
/// (gone from where it was, no note), and so is a small file applied as a
/// write batch; one on another file system (when /dev/shm is one) is
/// copied and left, and the command says so; a directory is refused
/// before anything is created.
#[test]
fn ingest_move_says_when_a_file_stays() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    let (ok, _, err) = common::strata(&["ingest", &p("db"), &p("")]);
    assert!(
        !ok && err.contains("is a directory, not an SST file"),
        "{err}"
    );
    assert!(!d.path().join("db").exists());

    let write = |path: &str, keys: &str| {
        let (ok, _, err) = common::strata(&["sst", "write", path, "--keys", keys]);
        assert!(ok, "{err}");
    };
    write(&p("big.sst"), "3000");
    let (ok, out, err) = common::strata(&["ingest", &p("db"), &p("big.sst"), "--move"]);
    assert!(ok, "{err}");
    assert!(!out.contains("note:"), "{out}");
    assert!(!d.path().join("big.sst").exists(), "moved, yet still there");

    write(&p("small.sst"), "10");
    let (ok, out, err) = common::strata(&["ingest", &p("db"), &p("small.sst"), "--move"]);
    assert!(ok, "{err}");
    assert!(out.contains("applied as a write batch"), "{out}");
    assert!(!out.contains("note:"), "{out}");
    assert!(
        !d.path().join("small.sst").exists(),
        "moved, yet still there"
    );

    let shm = std::path::Path::new("/dev/shm");
    let same_fs = {
        use std::os::unix::fs::MetadataExt;
        shm.metadata().map(|m| m.dev()).ok() == Some(d.path().metadata().unwrap().dev())
    };
    if shm.is_dir() && !same_fs {
        let other = shm.join(format!("strata-move-{}.sst", std::process::id()));
        let other_s = other.to_str().unwrap().to_string();
        write(&other_s, "3000");
        let (ok, out, err) = common::strata(&["ingest", &p("db"), &other_s, "--move"]);
        let _ = std::fs::remove_file(&other);
        assert!(ok, "{err}");
        assert!(out.contains("was copied, not moved"), "{out}");
    }
}

/// `strata checkpoint`: a copy that opens on its own with the database's
/// data (unflushed writes included), independent of the database after;
/// an existing target or a missing database is refused, creating nothing.
#[test]
fn checkpoint_copies_a_database_that_opens_on_its_own() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let input = d.path().join("in.txt");
    let text: String = (0..3000).map(|i| format!("k{i:05} ==> v{i}\n")).collect();
    std::fs::write(&input, text).unwrap();
    let db = db.to_str().unwrap();
    assert!(strata(&["kv", "load", db, input.to_str().unwrap()]).0);
    assert!(strata(&["kv", "put", db, "late", "1"]).0);
    let cp = d.path().join("cp");
    let cp = cp.to_str().unwrap();
    let (ok, out, err) = strata(&["checkpoint", db, cp]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with(&format!("checkpoint {cp} of {db}: ")),
        "{out}"
    );
    assert!(out.contains("hard-linked"), "{out}");
    assert!(strata(&["kv", "put", db, "after", "1"]).0);
    let dump = |p: &str| strata(&["kv", "dump", p]).1;
    let (a, b) = (dump(db), dump(cp));
    assert_eq!(b.lines().count(), 3001, "{}", &b[..200.min(b.len())]);
    assert!(
        b.contains("late ==> 1") && !b.contains("after"),
        "checkpoint"
    );
    assert!(a.contains("after ==> 1"), "database");
    assert!(strata(&["check", cp]).0, "check of the checkpoint");
    // Refusals change nothing.
    let (ok, _, err) = strata(&["checkpoint", db, cp]);
    assert!(!ok && err.contains("already exists"), "{err}");
    assert_eq!(dump(cp), b);
    let missing = d.path().join("missing");
    let other = d.path().join("cp2");
    let (ok, _, err) = strata(&[
        "checkpoint",
        missing.to_str().unwrap(),
        other.to_str().unwrap(),
    ]);
    assert!(!ok, "{err}");
    assert!(!missing.exists() && !other.exists());
}
