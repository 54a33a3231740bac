//! The raw key-value commands of the `strata` binary (`strata kv ...`): put/get/delete/scan,
//! load/dump round trips in `ldb`'s line format, and clear errors for bad
//! input with nothing written.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::process::Command;

fn strata(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

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
    assert!(!ok && err.contains("not found"), "{err}");
    let (_, out, _) = strata(&["kv", "scan", db, "--from", "b"]);
    assert_eq!(out, "banana ==> yellow\n");
    let (_, out, _) = strata(&["lsm", db]);
    assert!(out.contains("L0"), "{out}");
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
