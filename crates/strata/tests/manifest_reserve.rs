//! The MANIFEST's reserved space on the operating system's file system
//! (`version::manifest_log::MANIFEST_RESERVE`): reserved while the database
//! is open, given back on close, and read correctly from a copy taken
//! while it was open (a crash image: the MANIFEST ends in zeros). The
//! power-cut cases with records cut off where the zeros begin are covered
//! by every crash test on `FaultVfs`, which models reserved space, and by
//! `wal::tail`'s own tests.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::fs;
use std::path::{Path, PathBuf};
use strata::{Db, Error, Options};

fn manifest(dir: &Path) -> PathBuf {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .collect();
    assert_eq!(found.len(), 1, "one MANIFEST: {found:?}");
    found.pop().unwrap()
}

/// Copies every file of `from` into a new directory `to`, as the disk
/// would hold them if the power went out now (bytes the OS has).
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// Offset of the last non-zero byte.
fn last_nonzero(d: &[u8]) -> usize {
    d.iter().rposition(|&b| b != 0).unwrap()
}

/// An open database in `tmp/db` with a few flushed edits in its MANIFEST,
/// and a copy of it taken while open (`tmp/copy`).
fn open_and_copy(tmp: &Path) -> (Db, PathBuf) {
    let db = open_with_edits(&tmp.join("db"));
    let copy = tmp.join("copy");
    copy_dir(&tmp.join("db"), &copy);
    (db, copy)
}

/// An open database with a few flushed edits in its MANIFEST.
fn open_with_edits(dir: &Path) -> Db {
    let db = Db::open(dir, Options::default()).unwrap();
    for i in 0..3u32 {
        db.put(format!("k{i}"), format!("v{i}")).unwrap();
        db.flush().unwrap();
    }
    db
}

#[test]
fn reserved_while_open_given_back_on_close() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = open_with_edits(&dir);
    let m = manifest(&dir);
    let open_len = fs::metadata(&m).unwrap().len();
    assert!(open_len >= 1 << 20, "reserved ahead: {open_len} bytes");
    let d = fs::read(&m).unwrap();
    let content = last_nonzero(&d) + 1;
    assert!(content < 1 << 16, "the records are small: {content}");
    db.close().unwrap();
    let closed = fs::read(&m).unwrap();
    assert!(
        closed.len() < 1 << 16 && closed.len() >= content,
        "cut back to its records on close: {} bytes",
        closed.len()
    );
    let r = strata::check::check_dir(&dir).unwrap();
    assert!(r.is_ok() && r.warnings.is_empty(), "{r:?}");
    let db = Db::open(&dir, Options::default()).unwrap();
    assert_eq!(db.get("k2").unwrap(), Some(b"v2".to_vec()));
}

#[test]
fn a_copy_taken_while_open_recovers_and_checks_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, copy) = open_and_copy(tmp.path());
    let d = fs::read(manifest(&copy)).unwrap();
    assert!(d.len() >= 1 << 20 && d[last_nonzero(&d) + 1..].iter().all(|&b| b == 0));
    let r = strata::check::check_dir(&copy).unwrap();
    assert!(r.is_ok(), "{r:?}");
    assert!(
        !r.warnings.iter().any(|w| w.file.contains("MANIFEST")),
        "reserved zeros are no finding: {r:?}"
    );
    let c = Db::open(&copy, Options::default()).unwrap();
    for i in 0..3u32 {
        assert_eq!(
            c.get(format!("k{i}")).unwrap(),
            Some(format!("v{i}").into_bytes())
        );
    }
    drop(c);
    drop(db);
}

#[test]
fn a_damaged_last_record_before_the_zeros_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, copy) = open_and_copy(tmp.path());
    drop(db);
    let m = manifest(&copy);
    let mut d = fs::read(&m).unwrap();
    // The last record's last byte, changed to another non-zero byte: the
    // record is still whole before the zeros, so this is damage, not an
    // unfinished append.
    let p = last_nonzero(&d);
    d[p] = if d[p] == 0xff { 0xfe } else { 0xff };
    fs::write(&m, &d).unwrap();
    let r = strata::check::check_dir(&copy).unwrap();
    assert!(
        r.problems.iter().any(|f| f.file.contains("MANIFEST")),
        "check names the MANIFEST: {r:?}"
    );
    match Db::open(&copy, Options::default()) {
        Err(Error::Corruption { .. }) => {}
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("a damaged last record before the zeros was accepted"),
    }
}

#[test]
fn fault_vfs_crash_images_end_the_manifest_in_reserved_zeros() {
    // What makes every FaultVfs crash test exercise the reserved space.
    use std::sync::Arc;
    use strata::vfs::{FaultVfs, Vfs};
    let vfs = Arc::new(FaultVfs::new());
    let dir = Path::new("/db");
    let opts = || Options {
        vfs: Some(vfs.clone() as Arc<dyn Vfs>),
        ..Options::default()
    };
    let db = Db::open(dir, opts()).unwrap();
    db.put("k", "v").unwrap();
    db.flush().unwrap();
    let img = vfs.crash_clone();
    let name = img
        .list(dir)
        .unwrap()
        .into_iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .unwrap();
    let d = strata::vfs::read_all(&img, &dir.join(&name)).unwrap();
    assert!(d.len() >= 1 << 20, "{} bytes", d.len());
    assert!(d[last_nonzero(&d) + 1..].len() > 1 << 19, "mostly zeros");
    drop(db);
    let img = Arc::new(img);
    let db = Db::open(
        dir,
        Options {
            vfs: Some(img as Arc<dyn Vfs>),
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
}
