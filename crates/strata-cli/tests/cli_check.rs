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
    assert_eq!(before, listing(&dir), "check changed the directory");

    let (ok, _, err) = strata(&["check", "/nonexistent/strata-db"]);
    assert!(!ok && err.contains("not a directory"), "{err}");
}
