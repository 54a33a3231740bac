//! Recovery never discards data (issue 9): byte sweeps over the MANIFEST and
//! CURRENT, and regression tests for the three silent-loss bugs.
//!
//! The sweeps build one database holding flushed tables, a compaction, an
//! ingestion, several MANIFEST edits and acknowledged writes still in the
//! WAL, then damage a copy of it once per case: every byte of the MANIFEST
//! and of CURRENT flipped, each truncated at every record boundary and at
//! a sample of other points. Each case must either fail to open with an
//! error naming a file of the database, or open and return exactly the
//! acknowledged data: a case that opens and returns anything else is a
//! silent loss, and there must be none. Both the read-only and the
//! read-write open run on every case and must agree. The full sweep runs on
//! the in-memory file system (the open code is the same for every `Vfs`);
//! a sampled sweep runs on the operating system's.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::sstable::{SstOptions, SstWriter};
use strata::vfs::{self, MemVfs, OsVfs, Vfs};
use strata::wal::{LogReader, TailPolicy};
use strata::{Db, Error, IngestOptions, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(vfs: Arc<dyn Vfs>) -> Options {
    Options {
        vfs: Some(vfs),
        max_background_compactions: 1,
        wal_flush_interval: std::time::Duration::ZERO,
        block_cache_bytes: 1 << 20,
        ..Options::default()
    }
}

fn scan(db: &Db) -> strata::Result<Model> {
    db.iter().collect()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn put(db: &Db, model: &mut Model, i: u32, v: &str) {
    let value = format!("{v}-{i}").into_bytes();
    db.put(key(i), &value).unwrap();
    model.insert(key(i), value);
}

/// Builds the database the sweeps damage, in `dir` on `vfs`, with the SST
/// to ingest written beside it. Returns the acknowledged data.
fn build(vfs: &Arc<dyn Vfs>, dir: &Path, ingest_src: &Path) -> Model {
    let mut model = Model::new();
    let db = Db::open(dir, options(Arc::clone(vfs))).unwrap();
    for i in 0..300 {
        put(&db, &mut model, i, "a");
    }
    db.flush().unwrap();
    for i in (0..300).step_by(3) {
        put(&db, &mut model, i, "b");
    }
    db.delete(key(7)).unwrap();
    model.remove(&key(7));
    db.flush().unwrap();
    db.close().unwrap();

    // A second session: its MANIFEST starts with a snapshot and then holds
    // the open's edit, flushes, an ingestion and a compaction.
    let db = Db::open(dir, options(Arc::clone(vfs))).unwrap();
    for i in 300..400 {
        put(&db, &mut model, i, "c");
    }
    db.flush().unwrap();
    let mut w =
        SstWriter::create_in(vfs.as_ref(), ingest_src, SstOptions::for_ingestion()).unwrap();
    for i in 0..200u32 {
        let k = format!("zz-ingested{i:04}").into_bytes();
        let v = format!("ingested-{i}").into_bytes();
        w.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    w.finish().unwrap();
    let r = db
        .ingest(
            &[ingest_src.to_path_buf()],
            &IngestOptions {
                small_file_bytes: 0,
                ..IngestOptions::default()
            },
        )
        .unwrap();
    assert!(!r.as_batch && !r.flushable, "{r:?}");
    for i in 400..450 {
        put(&db, &mut model, i, "d");
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 450..480 {
        put(&db, &mut model, i, "e");
    }
    db.flush().unwrap();
    // A second ingestion, recorded only in the MANIFEST: the writes after
    // it are what shows its record is missing if it is cut away.
    let second = ingest_src.with_file_name("second.sst");
    let mut w = SstWriter::create_in(vfs.as_ref(), &second, SstOptions::for_ingestion()).unwrap();
    for i in 0..100u32 {
        let k = format!("zz2-second{i:04}").into_bytes();
        w.put(&k, b"second").unwrap();
        model.insert(k, b"second".to_vec());
    }
    w.finish().unwrap();
    let r = db
        .ingest(
            &[second],
            &IngestOptions {
                small_file_bytes: 0,
                ..IngestOptions::default()
            },
        )
        .unwrap();
    assert!(!r.as_batch && !r.flushable, "{r:?}");
    for i in 480..500 {
        put(&db, &mut model, i, "f");
    }
    // Acknowledged and only in the WAL.
    let mut b = WriteBatch::new();
    b.delete_range(key(10), key(20));
    b.put(key(15), b"after-range");
    db.write(b, &WriteOptions { sync: true }).unwrap();
    for i in 10..20 {
        model.remove(&key(i));
    }
    model.insert(key(15), b"after-range".to_vec());
    db.close().unwrap();
    model
}

/// A deep copy of the database directory `dir` (and its `lost/`).
fn copy_db(from: &dyn Vfs, dir: &Path) -> Arc<dyn Vfs> {
    let to: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    for d in [dir.to_path_buf(), dir.join("lost")] {
        for name in from.list(&d).unwrap_or_default() {
            let p = d.join(&name);
            if let Ok(data) = vfs::read_all(from, &p) {
                vfs::write_all(to.as_ref(), &p, &data).unwrap();
            }
        }
    }
    to
}

/// File names, sizes and hashes of `dir` (recursively one level, for
/// `lost/`), to show a directory did not change.
fn listing(vfs: &dyn Vfs, dir: &Path) -> BTreeMap<String, (u64, u64)> {
    use std::hash::{Hash, Hasher};
    let mut out = BTreeMap::new();
    for d in [dir.to_path_buf(), dir.join("lost")] {
        for name in vfs.list(&d).unwrap_or_default() {
            let p = d.join(&name);
            let Ok(data) = vfs::read_all(vfs, &p) else {
                out.insert(p.display().to_string(), (u64::MAX, 0));
                continue;
            };
            let mut h = std::collections::hash_map::DefaultHasher::new();
            data.hash(&mut h);
            out.insert(p.display().to_string(), (data.len() as u64, h.finish()));
        }
    }
    out
}

/// The name of the live MANIFEST.
fn manifest_path(vfs: &dyn Vfs, dir: &Path) -> PathBuf {
    let cur = vfs::read_all(vfs, &dir.join("CURRENT")).unwrap();
    dir.join(String::from_utf8(cur).unwrap().trim_end())
}

/// Offsets where the MANIFEST's records start, plus its end.
fn record_boundaries(vfs: &dyn Vfs, path: &Path) -> Vec<u64> {
    let mut r = LogReader::new(vfs.open_sequential(path).unwrap(), "m", TailPolicy::Strict);
    let mut out = vec![0];
    while r.read_record().unwrap().is_some() {
        out.push(r.last_record_offset());
        out.push(r.last_record_end());
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Kind {
    Exact,
    Refused,
}

/// Whether `e` names a file (or the directory) of the database at `dir`.
fn names_db_file(e: &Error, dir: &Path) -> bool {
    let d = dir.display().to_string();
    match e {
        Error::Corruption { file, .. } => file.starts_with(&d),
        Error::Io { path, .. } => path.contains(&d),
        other => other.to_string().contains(&d),
    }
}

/// Opens a damaged copy read-only and read-write; returns what happened,
/// or panics on a silent loss.
fn judge(vfs: Arc<dyn Vfs>, dir: &Path, model: &Model, case: &str) -> Kind {
    let mut kinds = Vec::new();
    for read_only in [true, false] {
        let opts = options(Arc::clone(&vfs));
        let r = if read_only {
            Db::open_read_only(dir, opts)
        } else {
            Db::open(dir, opts)
        };
        let kind = match r {
            Ok(db) => {
                let got = scan(&db);
                match got {
                    Ok(got) if &got == model => Kind::Exact,
                    Ok(got) => panic!(
                        "{case} (read_only {read_only}): silent loss: opened with {} keys, \
                         {} acknowledged",
                        got.len(),
                        model.len()
                    ),
                    Err(e) => {
                        assert!(names_db_file(&e, dir), "{case}: {e}");
                        Kind::Refused
                    }
                }
            }
            Err(e) => {
                assert!(
                    names_db_file(&e, dir),
                    "{case} (read_only {read_only}): error names no file: {e}"
                );
                if read_only {
                    count_named(&e);
                }
                Kind::Refused
            }
        };
        kinds.push(kind);
    }
    assert_eq!(
        kinds[0], kinds[1],
        "{case}: read-only and read-write disagree"
    );
    kinds[0]
}

#[derive(Default, Debug)]
struct Tally {
    exact: u32,
    refused: u32,
}

thread_local! {
    /// Refusals by the kind of file the error named.
    static NAMED: std::cell::RefCell<BTreeMap<&'static str, u32>> = Default::default();
}

fn count_named(e: &Error) {
    let s = e.to_string();
    let kind = if s.contains("CURRENT") {
        "CURRENT"
    } else if s.contains(".sst") {
        "table"
    } else if s.contains(".log") {
        "WAL"
    } else if s.contains("MANIFEST") {
        "MANIFEST"
    } else {
        "other"
    };
    NAMED.with(|n| *n.borrow_mut().entry(kind).or_default() += 1);
}

impl Tally {
    fn add(&mut self, k: Kind) {
        match k {
            Kind::Exact => self.exact += 1,
            Kind::Refused => self.refused += 1,
        }
    }
    fn total(&self) -> u32 {
        self.exact + self.refused
    }
}

/// Runs every damage case on copies of the database in `base`; `step`
/// samples the flipped bytes and extra truncation points (1: all).
fn sweep(base: &dyn Vfs, dir: &Path, model: &Model, step: usize) -> (Tally, Tally) {
    let mpath = manifest_path(base, dir);
    let manifest = vfs::read_all(base, &mpath).unwrap();
    let cpath = dir.join("CURRENT");
    let current = vfs::read_all(base, &cpath).unwrap();
    let mut m = Tally::default();
    let mut c = Tally::default();
    let with = |path: &Path, data: &[u8]| {
        let v = copy_db(base, dir);
        vfs::write_all(v.as_ref(), path, data).unwrap();
        v
    };
    for i in (0..manifest.len()).step_by(step) {
        let mut d = manifest.clone();
        d[i] ^= 0xff;
        m.add(judge(
            with(&mpath, &d),
            dir,
            model,
            &format!("MANIFEST byte {i} flipped"),
        ));
    }
    let mut cuts = record_boundaries(base, &mpath);
    cuts.extend((0..manifest.len() as u64).step_by(7 * step));
    cuts.sort_unstable();
    cuts.dedup();
    for &cut in &cuts {
        let d = &manifest[..cut as usize];
        m.add(judge(
            with(&mpath, d),
            dir,
            model,
            &format!("MANIFEST cut at {cut}"),
        ));
    }
    for i in 0..current.len() {
        for mask in [0xff, 0x01] {
            let mut d = current.clone();
            d[i] ^= mask;
            c.add(judge(
                with(&cpath, &d),
                dir,
                model,
                &format!("CURRENT byte {i} ^ {mask:#x}"),
            ));
        }
    }
    for cut in 0..current.len() {
        c.add(judge(
            with(&cpath, &current[..cut]),
            dir,
            model,
            &format!("CURRENT cut at {cut}"),
        ));
    }
    (m, c)
}

#[test]
fn manifest_and_current_byte_sweep_loses_nothing_silently() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let model = build(&vfs, dir, Path::new("/src/ingest.sst"));
    // The undamaged database opens with exactly the acknowledged data.
    assert_eq!(
        judge(copy_db(vfs.as_ref(), dir), dir, &model, "undamaged"),
        Kind::Exact
    );
    let (m, c) = sweep(vfs.as_ref(), dir, &model, 1);
    let named = NAMED.with(|n| n.borrow().clone());
    eprintln!("MANIFEST cases: {m:?}; CURRENT cases: {c:?}; refusals by file named: {named:?}");
    // Cutting edits away must be caught by each cross-check: a referenced
    // table missing, a table no record names. (A cut losing the last
    // ingestion's record is no longer refused: its WAL marker redoes it,
    // and `flipped_bytes_in_the_last_record_are_refused_where_no_cross_check_helps`
    // shows the WAL record named when the marker's files are gone.)
    for kind in ["MANIFEST", "CURRENT", "table"] {
        assert!(named.get(kind).is_some_and(|&n| n > 0), "{kind}: {named:?}");
    }
    // Every case was judged (a panic above is a silent loss); the sweep
    // must have exercised both outcomes.
    assert!(m.refused > 0 && m.exact > 0, "{m:?}");
    assert!(c.refused > 0, "{c:?}");
    assert!(m.total() > 500, "{m:?}");
}

/// The same sweep, sampled, on real files: every 5th byte.
#[test]
fn sampled_byte_sweep_on_the_os_file_system() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let os: Arc<dyn Vfs> = Arc::new(OsVfs);
    let model = build(&os, &dir, &t.path().join("ingest.sst"));
    let (m, c) = sweep_os(&dir, &model, 5);
    eprintln!("OS sweep: MANIFEST {m:?}; CURRENT {c:?}");
    assert!(m.refused > 0 && m.exact > 0, "{m:?}");
}

/// `sweep` on the operating system's file system: each case is a fresh
/// copy of the directory.
fn sweep_os(dir: &Path, model: &Model, step: usize) -> (Tally, Tally) {
    let base = copy_db(&OsVfs, dir);
    let mpath = manifest_path(base.as_ref(), dir);
    let manifest = vfs::read_all(base.as_ref(), &mpath).unwrap();
    let mut m = Tally::default();
    let c = Tally::default();
    let work = tempfile::tempdir().unwrap();
    let mut case = 0;
    let mut run = |name: &str, data: &[u8], m: &mut Tally| {
        case += 1;
        let d = work.path().join(format!("case{case}"));
        std::fs::create_dir_all(&d).unwrap();
        for n in base.list(dir).unwrap() {
            let p = dir.join(&n);
            let bytes = if p == mpath {
                data.to_vec()
            } else {
                vfs::read_all(base.as_ref(), &p).unwrap()
            };
            std::fs::write(d.join(&n), bytes).unwrap();
        }
        m.add(judge(Arc::new(OsVfs), &d, model, name));
        std::fs::remove_dir_all(&d).unwrap();
    };
    for i in (0..manifest.len()).step_by(step) {
        let mut d = manifest.clone();
        d[i] ^= 0xff;
        run(&format!("MANIFEST byte {i} flipped"), &d, &mut m);
    }
    for cut in record_boundaries(base.as_ref(), &mpath) {
        run(
            &format!("MANIFEST cut at {cut}"),
            &manifest[..cut as usize],
            &mut m,
        );
    }
    (m, c)
}

/// Bug 1: the MANIFEST's tail damaged (cut by 30 bytes, or one byte of the
/// last record flipped) silently lost the last flush's tables: recovery
/// took the damage for a torn tail, dropped the edit and deleted the
/// tables it named. Now the open fails, names the file, and the
/// directory is untouched.
#[test]
fn damaged_manifest_tail_fails_instead_of_losing_flushed_data() {
    for damage in ["cut 30 bytes", "flip a byte of the last record"] {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("db");
        let os: Arc<dyn Vfs> = Arc::new(OsVfs);
        let mut model = Model::new();
        let db = Db::open(&dir, options(Arc::clone(&os))).unwrap();
        for round in 0..3 {
            for i in 0..500 {
                put(&db, &mut model, round * 500 + i, "v");
            }
            db.flush().unwrap();
        }
        db.close().unwrap();
        let mpath = manifest_path(&OsVfs, &dir);
        let mut m = std::fs::read(&mpath).unwrap();
        if damage.starts_with("cut") {
            m.truncate(m.len() - 30);
        } else {
            let n = m.len();
            m[n - 12] ^= 0x20;
        }
        std::fs::write(&mpath, &m).unwrap();
        let before = listing(&OsVfs, &dir);
        match Db::open(&dir, options(Arc::clone(&os))) {
            Ok(db) => panic!(
                "{damage}: opened with {} of {} keys",
                scan(&db).unwrap().len(),
                model.len()
            ),
            Err(e) => {
                assert!(e.is_corruption(), "{damage}: {e}");
                assert!(names_db_file(&e, &dir), "{damage}: {e}");
            }
        }
        assert_eq!(
            listing(&OsVfs, &dir),
            before,
            "{damage}: the directory changed"
        );
        assert!(Db::open_read_only(&dir, options(os)).is_err());
        assert_eq!(listing(&OsVfs, &dir), before);
    }
}

/// Bug 2: with CURRENT removed, opening replayed the WAL into a new,
/// empty database and deleted the tables. Now it refuses and changes
/// nothing.
#[test]
fn missing_current_refuses_and_deletes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let os: Arc<dyn Vfs> = Arc::new(OsVfs);
    let mut model = Model::new();
    let db = Db::open(&dir, options(Arc::clone(&os))).unwrap();
    for i in 0..1000 {
        put(&db, &mut model, i, "v");
    }
    db.flush().unwrap();
    for i in 1000..1100 {
        put(&db, &mut model, i, "w");
    }
    db.close().unwrap();
    std::fs::remove_file(dir.join("CURRENT")).unwrap();
    let before = listing(&OsVfs, &dir);
    for read_only in [false, true] {
        let opts = options(Arc::clone(&os));
        let r = if read_only {
            Db::open_read_only(&dir, opts)
        } else {
            Db::open(&dir, opts)
        };
        let e = r.expect_err("opened a database without CURRENT");
        assert!(e.to_string().contains("no CURRENT"), "{e}");
        assert_eq!(listing(&OsVfs, &dir), before, "read_only {read_only}");
    }
}

/// Bug 2, second half: a directory of unrelated files named like a
/// database's (and a RocksDB database) is refused and left as it was.
#[test]
fn unrelated_directories_are_left_alone() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("files");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("000123.log"), b"not a log, just a file").unwrap();
    std::fs::write(dir.join("000007.sst"), vec![7u8; 4096]).unwrap();
    std::fs::write(dir.join("notes.txt"), b"hello").unwrap();
    let before = listing(&OsVfs, &dir);
    for read_only in [false, true] {
        let opts = options(Arc::new(OsVfs));
        let r = if read_only {
            Db::open_read_only(&dir, opts)
        } else {
            Db::open(&dir, opts)
        };
        let e = r.expect_err("opened a directory of unrelated files");
        assert!(e.to_string().contains("not a Strata database"), "{e}");
        assert_eq!(listing(&OsVfs, &dir), before);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            3,
            "no LOCK created"
        );
    }

    let rocks = t.path().join("rocks");
    std::fs::create_dir_all(&rocks).unwrap();
    for (n, body) in [
        ("CURRENT", &b"MANIFEST-000005\n"[..]),
        ("MANIFEST-000005", b"\x01\x02\x03"),
        ("IDENTITY", b"6d2b0c2e"),
        ("OPTIONS-000007", b"[Version]"),
        ("000004.log", b""),
    ] {
        std::fs::write(rocks.join(n), body).unwrap();
    }
    let before = listing(&OsVfs, &rocks);
    let e = Db::open(&rocks, options(Arc::new(OsVfs))).err().unwrap();
    assert!(matches!(e, Error::NotADatabase { .. }), "{e}");
    assert!(e.to_string().contains("RocksDB"), "{e}");
    assert_eq!(listing(&OsVfs, &rocks), before);

    let missing = t.path().join("missing");
    assert!(Db::open_read_only(&missing, options(Arc::new(OsVfs))).is_err());
    assert!(!missing.exists(), "a read-only open created the directory");
}

/// Bug 3: an ingested file stayed hard-linked to the caller's path, so
/// rewriting that path in place changed what the database served. Now,
/// moved or copied, nothing the caller does to its path changes the
/// database, and every table has exactly one link.
#[test]
fn callers_path_cannot_change_an_ingested_table() {
    use std::os::unix::fs::MetadataExt;
    for move_files in [true, false] {
        for action in ["rewrite in place", "truncate", "delete"] {
            let t = tempfile::tempdir().unwrap();
            let dir = t.path().join("db");
            let os: Arc<dyn Vfs> = Arc::new(OsVfs);
            let db = Db::open(&dir, options(Arc::clone(&os))).unwrap();
            db.put(b"a", b"1").unwrap();
            let src = t.path().join("export.sst");
            let write = |path: &Path, tag: &str| {
                let mut w = SstWriter::create(path, SstOptions::for_ingestion()).unwrap();
                for i in 0..500u32 {
                    w.put(
                        format!("x{i:04}").as_bytes(),
                        format!("{tag}{i}").as_bytes(),
                    )
                    .unwrap();
                }
                w.finish().unwrap();
            };
            write(&src, "ingested-");
            let mut want = scan(&db).unwrap();
            for i in 0..500u32 {
                want.insert(
                    format!("x{i:04}").into_bytes(),
                    format!("ingested-{i}").into_bytes(),
                );
            }
            let r = db
                .ingest(
                    std::slice::from_ref(&src),
                    &IngestOptions {
                        move_files,
                        small_file_bytes: 0,
                        ..IngestOptions::default()
                    },
                )
                .unwrap();
            assert_eq!(r.levels, vec![Some(6)]);
            for e in std::fs::read_dir(&dir).unwrap() {
                let e = e.unwrap();
                if e.file_name().to_string_lossy().ends_with(".sst") {
                    assert_eq!(e.metadata().unwrap().nlink(), 1, "{e:?} shares its inode");
                }
            }
            assert_eq!(src.exists(), !move_files, "move removes the caller's path");
            let case = format!("move_files {move_files}, {action}");
            match action {
                "rewrite in place" => {
                    // std::fs::write truncates and rewrites the same inode.
                    let other = t.path().join("other.sst");
                    write(&other, "REWRITTEN-");
                    std::fs::write(&src, std::fs::read(&other).unwrap()).unwrap();
                }
                "truncate" => {
                    if src.exists() {
                        std::fs::OpenOptions::new()
                            .write(true)
                            .open(&src)
                            .unwrap()
                            .set_len(100)
                            .unwrap();
                    }
                }
                _ => {
                    let _ = std::fs::remove_file(&src);
                }
            }
            assert_eq!(scan(&db).unwrap(), want, "{case}");
            db.close().unwrap();
            let db = Db::open(&dir, options(Arc::clone(&os))).unwrap();
            assert_eq!(scan(&db).unwrap(), want, "{case}: after reopen");
            db.close().unwrap();
        }
    }
}

/// A table changed behind the database's back (its size no longer the
/// MANIFEST's) fails the open, naming the table.
#[test]
fn a_table_of_the_wrong_size_fails_the_open() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let db = Db::open(dir, options(Arc::clone(&vfs))).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    let (_, f) = db.files().remove(0);
    db.close().unwrap();
    let p = dir.join(format!("{:06}.sst", f.number));
    let mut data = vfs::read_all(vfs.as_ref(), &p).unwrap();
    data.extend_from_slice(b"more");
    vfs::write_all(vfs.as_ref(), &p, &data).unwrap();
    let e = Db::open(dir, options(Arc::clone(&vfs))).err().unwrap();
    match &e {
        Error::Corruption { file, msg, .. } => {
            assert_eq!(file, &p.display().to_string());
            assert!(msg.contains("records"), "{msg}");
        }
        other => panic!("{other}"),
    }
    vfs.remove(&p).unwrap();
    let e = Db::open(dir, options(vfs)).err().unwrap();
    assert!(e.to_string().contains("missing"), "{e}");
}

/// A read-only open changes no byte of the directory (names, sizes and
/// hashes compared), reads what only the WAL holds, and does not contend
/// with other read-only opens or with a writer.
#[test]
fn read_only_open_changes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let os: Arc<dyn Vfs> = Arc::new(OsVfs);
    let mut model = Model::new();
    let db = Db::open(&dir, options(Arc::clone(&os))).unwrap();
    for i in 0..400 {
        put(&db, &mut model, i, "flushed");
    }
    db.flush().unwrap();
    for i in 200..300 {
        put(&db, &mut model, i, "in-the-wal");
    }
    db.close().unwrap();
    let before = listing(&OsVfs, &dir);
    let files_before: HashMap<String, std::time::SystemTime> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().modified().unwrap(),
            )
        })
        .collect();
    let a = Db::open_read_only(&dir, options(Arc::clone(&os))).unwrap();
    let b = Db::open_read_only(&dir, options(Arc::clone(&os))).unwrap();
    assert_eq!(scan(&a).unwrap(), model);
    assert_eq!(b.get(key(250)).unwrap(), Some(b"in-the-wal-250".to_vec()));
    assert!(matches!(a.put(b"x", b"y"), Err(Error::NotSupported(_))));
    assert!(matches!(a.flush(), Err(Error::NotSupported(_))));
    a.wait_for_compactions().unwrap();
    drop(a);
    b.close().unwrap();
    assert_eq!(listing(&OsVfs, &dir), before);
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        assert_eq!(
            files_before.get(&name),
            Some(&e.metadata().unwrap().modified().unwrap()),
            "{name}"
        );
    }
    // Beside a writer: the read-only open takes no lock.
    let w = Db::open(&dir, options(Arc::clone(&os))).unwrap();
    let r = Db::open_read_only(&dir, options(Arc::clone(&os))).unwrap();
    assert_eq!(scan(&r).unwrap(), model);
    drop(r);
    w.close().unwrap();
}

/// The acknowledged data, and what it would be without the ingestion.
type Models = (Model, Model);

/// A database whose MANIFEST ends with the record of an ingestion (100
/// keys `zz000`.. over 100 flushed writes), its WAL marker in the WAL.
fn last_ingestion_db(vfs: &Arc<dyn Vfs>, dir: &Path) -> Models {
    let mut model = Model::new();
    let db = Db::open(dir, options(Arc::clone(vfs))).unwrap();
    for i in 0..100 {
        put(&db, &mut model, i, "v");
    }
    db.flush().unwrap();
    let without = model.clone();
    let src = Path::new("/src/last.sst");
    let mut w = SstWriter::create_in(vfs.as_ref(), src, SstOptions::for_ingestion()).unwrap();
    for i in 0..100u32 {
        let k = format!("zz{i:03}").into_bytes();
        w.put(&k, b"last").unwrap();
        model.insert(k, b"last".to_vec());
    }
    w.finish().unwrap();
    let io = IngestOptions {
        small_file_bytes: 0,
        ..IngestOptions::default()
    };
    db.ingest(&[src.to_path_buf()], &io).unwrap();
    db.close().unwrap();
    (model, without)
}

/// A database whose MANIFEST ends with the record of an ingestion that
/// excised `key(100)..key(200)` (cutting the fully compacted tree) and
/// ingested every other key of it; a write after it (`key(150)`) is only
/// in the WAL, behind the ingestion's marker.
fn excising_ingestion_db(vfs: &Arc<dyn Vfs>, dir: &Path) -> Models {
    let mut model = Model::new();
    let db = Db::open(dir, options(Arc::clone(vfs))).unwrap();
    for i in 0..300 {
        put(&db, &mut model, i, "old");
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let mut without = model.clone();
    let src = Path::new("/src/excise.sst");
    let mut w = SstWriter::create_in(vfs.as_ref(), src, SstOptions::for_ingestion()).unwrap();
    for i in (100..200).step_by(2) {
        w.put(key(i), b"new").unwrap();
    }
    w.finish().unwrap();
    let r = db
        .ingest(
            &[src.to_path_buf()],
            &IngestOptions {
                small_file_bytes: 0,
                excise: Some((key(100), key(200))),
                ..IngestOptions::default()
            },
        )
        .unwrap();
    assert!(r.excised && !r.flushable, "{r:?}");
    for i in 100..200 {
        model.remove(&key(i));
    }
    for i in (100..200).step_by(2) {
        model.insert(key(i), b"new".to_vec());
    }
    put(&db, &mut model, 150, "after");
    put(&db, &mut without, 150, "after");
    db.close().unwrap();
    (model, without)
}

/// Damage to the last MANIFEST record when the last operation was an
/// ingestion, with no write after it: no table or WAL record shows the
/// edit is missing. Dropping the record would lose the ingestion with
/// nothing to show for it but a file in `lost/`. The tail rule refuses
/// every flipped byte of the record. A record cut away (a short read at end
/// of file, which the tail rule must accept as an unfinished write) is
/// redone from the ingestion's WAL marker, which names its files; if one
/// of them is gone or changed, the open refuses naming the marker.
#[test]
fn flipped_bytes_in_the_last_record_are_refused_where_no_cross_check_helps() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let (model, _) = last_ingestion_db(&vfs, dir);
    let mpath = manifest_path(vfs.as_ref(), dir);
    let manifest = vfs::read_all(vfs.as_ref(), &mpath).unwrap();
    let bounds = record_boundaries(vfs.as_ref(), &mpath);
    let last = bounds[bounds.len() - 2];
    let mut cases = 0;
    for i in last as usize..manifest.len() {
        let mut d = manifest.clone();
        d[i] ^= 0xff;
        let v = copy_db(vfs.as_ref(), dir);
        vfs::write_all(v.as_ref(), &mpath, &d).unwrap();
        let case = format!("last record byte {i} flipped");
        assert_eq!(
            judge(Arc::clone(&v), dir, &model, &case),
            Kind::Refused,
            "{case}"
        );
        match Db::open_read_only(dir, options(v)).err().unwrap() {
            Error::Corruption { file, offset, .. } => {
                assert_eq!(file, mpath.display().to_string(), "{case}");
                assert_eq!(offset, last, "{case}");
            }
            e => panic!("{case}: {e}"),
        }
        cases += 1;
    }
    assert!(cases > 20, "{cases}");
    // Cut away whole, or cut inside (which looks like an unfinished
    // write), the record is lost, but the ingestion's marker in the WAL
    // names its files, which are present: the open redoes the ingestion
    // (read-only and read-write alike) and the data is exact, then and
    // after a reopen. With one of the files gone or changed it cannot be
    // redone, and the open refuses naming the WAL record.
    let ingested = unreferenced_tables_after_cut(vfs.as_ref(), dir, &manifest, last as usize);
    assert_eq!(ingested.len(), 1, "{ingested:?}");
    for cut in [last as usize, last as usize + 10, manifest.len() - 1] {
        let v = copy_db(vfs.as_ref(), dir);
        vfs::write_all(v.as_ref(), &mpath, &manifest[..cut]).unwrap();
        let case = format!("MANIFEST cut at {cut}");
        assert_eq!(
            judge(Arc::clone(&v), dir, &model, &case),
            Kind::Exact,
            "{case}"
        );
        let db = Db::open(dir, options(Arc::clone(&v))).unwrap();
        assert_eq!(scan(&db).unwrap(), model, "{case}: after reopen");
        db.close().unwrap();
        for (how, damage) in [
            ("removed", None),
            ("cut short", Some(1usize)),
            ("grown", Some(usize::MAX)),
        ] {
            let v = copy_db(vfs.as_ref(), dir);
            vfs::write_all(v.as_ref(), &mpath, &manifest[..cut]).unwrap();
            let f = &ingested[0];
            match damage {
                None => v.remove(f).unwrap(),
                Some(n) => {
                    let mut d = vfs::read_all(v.as_ref(), f).unwrap();
                    if n == usize::MAX {
                        d.extend_from_slice(b"junk");
                    } else {
                        d.truncate(d.len() - n);
                    }
                    vfs::write_all(v.as_ref(), f, &d).unwrap();
                }
            }
            let case = format!("MANIFEST cut at {cut}, the ingested file {how}");
            assert_eq!(
                judge(Arc::clone(&v), dir, &model, &case),
                Kind::Refused,
                "{case}"
            );
            let e = Db::open_read_only(dir, options(v)).err().unwrap();
            let msg = e.to_string();
            assert!(
                msg.contains(".log")
                    && msg.contains("ingestion")
                    && msg.contains("cannot be redone"),
                "{case}: {e}"
            );
        }
    }
}

/// An ingestion that excised a range, whose MANIFEST record is lost (cut
/// away, as a power cut before the caller's sync leaves it) while its WAL
/// marker and a synced write after it survive: the open redoes it from the
/// marker, the excise included (everything older in the range stays
/// deleted, the ingested keys and the later write are there), read-only
/// and read-write alike, and again after a reopen.
#[test]
fn lost_excising_ingestion_is_redone_from_its_marker() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let (model, _) = excising_ingestion_db(&vfs, dir);
    let mpath = manifest_path(vfs.as_ref(), dir);
    let manifest = vfs::read_all(vfs.as_ref(), &mpath).unwrap();
    let bounds = record_boundaries(vfs.as_ref(), &mpath);
    let last = bounds[bounds.len() - 2] as usize;
    let v = copy_db(vfs.as_ref(), dir);
    vfs::write_all(v.as_ref(), &mpath, &manifest[..last]).unwrap();
    assert_eq!(
        judge(Arc::clone(&v), dir, &model, "excise record cut"),
        Kind::Exact
    );
    let db = Db::open(dir, options(Arc::clone(&v))).unwrap();
    assert_eq!(scan(&db).unwrap(), model, "after reopen");
    db.compact_range(None, None).unwrap();
    assert_eq!(scan(&db).unwrap(), model, "after a full compaction");
    db.close().unwrap();
}

/// `strata::check` counts the files of an ingestion that recovery redoes
/// from its WAL marker (its MANIFEST record lost) as live: it verifies
/// them, and a missing or damaged one is a problem, as it is for the open.
/// It used to call such a file "named by no version (the next open deletes
/// it)" and pass the database, which the open then refused or redid.
#[test]
fn check_verifies_the_files_of_an_ingestion_redone_from_its_marker() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    last_ingestion_db(&vfs, dir);
    let mpath = manifest_path(vfs.as_ref(), dir);
    let manifest = vfs::read_all(vfs.as_ref(), &mpath).unwrap();
    let bounds = record_boundaries(vfs.as_ref(), &mpath);
    let last = bounds[bounds.len() - 2] as usize;
    vfs::write_all(vfs.as_ref(), &mpath, &manifest[..last]).unwrap();
    let newest_table = vfs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .max()
        .unwrap();
    let table = dir.join(&newest_table);
    let r = strata::check::check(vfs.as_ref(), dir).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert!(
        !r.warnings.iter().any(|w| w.file.contains(&newest_table)),
        "the redone ingestion's file was called unreferenced: {:?}",
        r.warnings
    );
    let bytes = vfs::read_all(vfs.as_ref(), &table).unwrap();
    let mut flipped = bytes.clone();
    flipped[10] ^= 0x40;
    vfs::write_all(vfs.as_ref(), &table, &flipped).unwrap();
    let r = strata::check::check(vfs.as_ref(), dir).unwrap();
    assert!(
        r.problems.iter().any(|p| p.file.contains(&newest_table)),
        "a damaged redone file passed: {:?}",
        r.problems
    );
    vfs.remove(&table).unwrap();
    let r = strata::check::check(vfs.as_ref(), dir).unwrap();
    assert!(
        r.problems.iter().any(|p| p.file.contains(&newest_table)),
        "a missing redone file passed: {:?}",
        r.problems
    );
    assert!(Db::open(dir, options(Arc::clone(&vfs))).is_err());
}

/// `Db::repair` redoes an ingestion whose MANIFEST record was lost from its
/// WAL marker, as the open does. With the last record (the ingestion's)
/// cut away, or with a byte of it flipped (which the open refuses), the
/// repair reports the ingestion as redone (naming its files, and the
/// range-tombstone file it wrote for an excise), loses nothing else, and
/// the database holds exactly the acknowledged data, after a full
/// compaction and after a reopen. With the ingested file gone it cannot be
/// redone: the repair says so and why, and keeps everything else.
#[test]
fn repair_redoes_an_ingestion_from_its_marker() {
    type Setup = fn(&Arc<dyn Vfs>, &Path) -> Models;
    let setups: [(&str, Setup); 2] = [
        ("plain", last_ingestion_db),
        ("excise", excising_ingestion_db),
    ];
    for (name, setup) in setups {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let dir = Path::new("/db");
        let (model, without) = setup(&vfs, dir);
        let mpath = manifest_path(vfs.as_ref(), dir);
        let manifest = vfs::read_all(vfs.as_ref(), &mpath).unwrap();
        let bounds = record_boundaries(vfs.as_ref(), &mpath);
        let last = bounds[bounds.len() - 2] as usize;
        // The record's files that exist (an excise's virtual files do not).
        let mut ingested = unreferenced_tables_after_cut(vfs.as_ref(), dir, &manifest, last);
        ingested.retain(|p| vfs.exists(p));
        assert_eq!(ingested.len(), 1, "{name}: {ingested:?}");
        let file = ingested[0].file_name().unwrap().to_str().unwrap();
        let mut flipped = manifest.clone();
        flipped[last + 10] ^= 0xff;
        for (how, damaged) in [
            ("cut away", manifest[..last].to_vec()),
            ("flipped", flipped),
        ] {
            let case = format!("{name}: the ingestion's record {how}");
            let v = copy_db(vfs.as_ref(), dir);
            vfs::write_all(v.as_ref(), &mpath, &damaged).unwrap();
            if how == "flipped" {
                assert!(Db::open(dir, options(Arc::clone(&v))).is_err(), "{case}");
            }
            let r = Db::repair(dir, options(Arc::clone(&v))).unwrap();
            let redone: Vec<&String> = r
                .recovered
                .iter()
                .filter(|l| l.contains("redone from its WAL marker"))
                .collect();
            assert_eq!(redone.len(), 1, "{case}: {r:?}");
            assert!(redone[0].contains(file), "{case}: {r:?}");
            assert_eq!(
                redone[0].contains("range-tombstone file"),
                name == "excise",
                "{case}: {r:?}"
            );
            assert!(
                !r.recovered.iter().any(|l| l.contains("lost/")),
                "{case}: nothing set aside: {r:?}"
            );
            // Cut at a record boundary nothing else is lost; a flipped
            // byte loses the edits from the damage on, which the marker
            // makes good (reported all the same).
            match how {
                "cut away" => assert!(r.lost_nothing(), "{case}: {r:?}"),
                _ => assert!(
                    r.lost.len() == 1 && r.lost[0].contains("the edits from offset"),
                    "{case}: {r:?}"
                ),
            }
            let db = Db::open(dir, options(Arc::clone(&v))).unwrap();
            assert_eq!(scan(&db).unwrap(), model, "{case}");
            db.compact_range(None, None).unwrap();
            assert_eq!(scan(&db).unwrap(), model, "{case}: after a full compaction");
            db.close().unwrap();
            let db = Db::open(dir, options(v)).unwrap();
            assert_eq!(scan(&db).unwrap(), model, "{case}: after a reopen");
            db.close().unwrap();
        }
        let case = format!("{name}: the record cut away and the ingested file removed");
        let v = copy_db(vfs.as_ref(), dir);
        vfs::write_all(v.as_ref(), &mpath, &manifest[..last]).unwrap();
        v.remove(&ingested[0]).unwrap();
        let r = Db::repair(dir, options(Arc::clone(&v))).unwrap();
        assert!(
            r.lost
                .iter()
                .any(|l| l.contains("cannot be redone") && l.contains(file)),
            "{case}: {r:?}"
        );
        assert!(
            !r.recovered.iter().any(|l| l.contains("redone")),
            "{case}: {r:?}"
        );
        let db = Db::open(dir, options(v)).unwrap();
        assert_eq!(scan(&db).unwrap(), without, "{case}");
        db.close().unwrap();
    }
}

/// The tables in `dir` that the MANIFEST `manifest` cut at `cut` no longer
/// names (read through a copy).
fn unreferenced_tables_after_cut(
    vfs: &dyn Vfs,
    dir: &Path,
    manifest: &[u8],
    cut: usize,
) -> Vec<PathBuf> {
    let named = |m: &[u8]| -> std::collections::HashSet<u64> {
        let v = copy_db(vfs, dir);
        vfs::write_all(v.as_ref(), &manifest_path(vfs, dir), m).unwrap();
        let h = strata::inspect::read_manifest_in(v.as_ref(), dir).unwrap();
        let mut live = std::collections::HashSet::new();
        for e in &h.edits {
            for (_, n) in &e.removed {
                live.remove(n);
            }
            live.extend(e.added.iter().map(|t| t.number));
        }
        live
    };
    let all = named(manifest);
    let kept = named(&manifest[..cut]);
    let mut out: Vec<PathBuf> = all
        .difference(&kept)
        .map(|n| dir.join(format!("{n:06}.sst")))
        .collect();
    out.sort();
    out
}

/// `Db::repair` over every damaged MANIFEST of the sweep: when it reports
/// that nothing was lost, the repaired database holds exactly the
/// acknowledged data; whatever it reports, every value it returns is the
/// latest acknowledged one for its key (in this database a lost table can
/// only make keys disappear: the full compaction left no older copy of any
/// key on disk, and repair must not invent one).
#[test]
fn repair_never_claims_less_loss_than_it_caused() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let model = build(&vfs, dir, Path::new("/src/ingest.sst"));
    let mpath = manifest_path(vfs.as_ref(), dir);
    let manifest = vfs::read_all(vfs.as_ref(), &mpath).unwrap();
    let mut damaged: Vec<Vec<u8>> = (0..manifest.len())
        .map(|i| {
            let mut d = manifest.clone();
            d[i] ^= 0xff;
            d
        })
        .collect();
    for cut in record_boundaries(vfs.as_ref(), &mpath) {
        damaged.push(manifest[..cut as usize].to_vec());
    }
    let (mut exact, mut reported, mut refused) = (0, 0, 0);
    for (i, d) in damaged.iter().enumerate() {
        let v = copy_db(vfs.as_ref(), dir);
        vfs::write_all(v.as_ref(), &mpath, d).unwrap();
        let r = match Db::repair(dir, options(Arc::clone(&v))) {
            Ok(r) => r,
            Err(e) => {
                assert!(names_db_file(&e, dir), "case {i}: {e}");
                refused += 1;
                continue;
            }
        };
        let db = Db::open(dir, options(v)).unwrap();
        let got = scan(&db).unwrap();
        for (k, val) in &got {
            assert_eq!(model.get(k), Some(val), "case {i}: a value never written");
        }
        if r.lost_nothing() {
            assert_eq!(got, model, "case {i}: repair reported no loss: {r:?}");
            exact += 1;
        } else {
            reported += 1;
        }
    }
    eprintln!("repair: {exact} exact, {reported} with losses reported, {refused} refused");
    assert!(reported > 0 && refused < damaged.len());
}

/// The newest WAL's tail follows the same rule: a flipped byte anywhere in
/// it (its last record included, which used to be dropped as a torn tail
/// although that write was synced and acknowledged) is refused, naming the
/// WAL; every case either opens with exactly the acknowledged data or
/// fails.
#[test]
fn wal_byte_sweep_loses_nothing_silently() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let mut model = Model::new();
    let db = Db::open(dir, options(Arc::clone(&vfs))).unwrap();
    for i in 0..50 {
        put(&db, &mut model, i, "flushed");
    }
    db.flush().unwrap();
    for i in 25..60 {
        let mut b = WriteBatch::new();
        let v = format!("wal-{i}").into_bytes();
        b.put(key(i), &v);
        db.write(b, &WriteOptions { sync: true }).unwrap();
        model.insert(key(i), v);
    }
    db.close().unwrap();
    let wal = vfs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .max()
        .unwrap();
    let wpath = dir.join(&wal);
    let data = vfs::read_all(vfs.as_ref(), &wpath).unwrap();
    let mut t = Tally::default();
    for i in 0..data.len() {
        let mut d = data.clone();
        d[i] ^= 0xff;
        let v = copy_db(vfs.as_ref(), dir);
        vfs::write_all(v.as_ref(), &wpath, &d).unwrap();
        let case = format!("WAL byte {i} flipped");
        let k = judge(Arc::clone(&v), dir, &model, &case);
        if k == Kind::Refused {
            let e = Db::open_read_only(dir, options(v)).err().unwrap();
            assert!(e.to_string().contains(&wal), "{case}: {e}");
        }
        t.add(k);
    }
    eprintln!("WAL cases: {t:?}");
    assert_eq!(
        t.exact, 0,
        "every byte of this WAL is an acknowledged write's"
    );
    assert_eq!(t.total() as usize, data.len());
}

/// A database at `dir` holding keys 0..100 flushed to a table ("flushed")
/// and 100..`end` as synced writes in one WAL ("synced"), closed; returns
/// every key it holds.
fn flushed_then_synced(vfs: &Arc<dyn Vfs>, dir: &Path, end: u32) -> Model {
    let mut model = Model::new();
    let db = Db::open(dir, options(Arc::clone(vfs))).unwrap();
    for i in 0..100 {
        put(&db, &mut model, i, "flushed");
    }
    db.flush().unwrap();
    let sync = WriteOptions { sync: true };
    for i in 100..end {
        let mut b = WriteBatch::new();
        b.put(key(i), b"synced");
        db.write(b, &sync).unwrap();
        model.insert(key(i), b"synced".to_vec());
    }
    db.close().unwrap();
    model
}

/// The WAL the MANIFEST names as the oldest still needed is required: once
/// it is gone, so are the synced writes since the last flush, and the open
/// used to pass without a word. Now the open (read-write and read-only)
/// refuses, naming the WAL; `strata check` reports it; `Db::repair` reports
/// the loss and opens without it. (A power cut cannot cause this: the WAL's
/// directory entry is durable before an edit names it, which
/// `fault_injection::power_cuts_at_random_points` exercises, every open
/// there having to succeed.)
#[test]
fn a_missing_live_wal_is_refused_and_repair_reports_the_loss() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let model = flushed_then_synced(&vfs, dir, 150);
    let wals: Vec<String> = vfs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .collect();
    assert_eq!(wals.len(), 1, "{wals:?}");
    let wal = dir.join(&wals[0]);
    // Before: everything is there and check is clean.
    {
        let db = Db::open_read_only(dir, options(Arc::clone(&vfs))).unwrap();
        assert_eq!(scan(&db).unwrap().len(), 150);
    }
    assert!(strata::check::check(vfs.as_ref(), dir)
        .unwrap()
        .problems
        .is_empty());

    vfs.remove(&wal).unwrap();
    let shown = wal.display().to_string();
    for read_only in [false, true] {
        let r = if read_only {
            Db::open_read_only(dir, options(Arc::clone(&vfs)))
        } else {
            Db::open(dir, options(Arc::clone(&vfs)))
        };
        match r {
            Err(Error::Corruption { file, msg, .. }) => {
                assert_eq!(file, shown, "read_only {read_only}");
                assert!(
                    msg.contains("missing") && msg.contains("after sequence number 100"),
                    "{msg}"
                );
            }
            Err(e) => panic!("read_only {read_only}: expected corruption, got {e}"),
            Ok(_) => {
                panic!("read_only {read_only}: opened without the WAL holding 50 synced writes")
            }
        }
    }
    let r = strata::check::check(vfs.as_ref(), dir).unwrap();
    assert!(
        r.problems
            .iter()
            .any(|p| p.file == shown && p.what.contains("missing")),
        "{:?}",
        r.problems
    );

    let report = Db::repair(dir, options(Arc::clone(&vfs))).unwrap();
    assert!(
        report
            .lost
            .iter()
            .any(|l| l.contains(&wals[0]) && l.contains("missing")),
        "{:?}",
        report.lost
    );
    let db = Db::open(dir, options(Arc::clone(&vfs))).unwrap();
    let got = scan(&db).unwrap();
    let flushed: Model = model.into_iter().filter(|(k, _)| k < &key(100)).collect();
    assert_eq!(got, flushed, "repair keeps what the tables hold");
    assert!(strata::check::check(vfs.as_ref(), dir)
        .unwrap()
        .problems
        .is_empty());
}

/// `Db::repair` reads what it keeps: a table block that fails its checksum
/// is reported under `lost` (naming the table), where the repair used to
/// say that nothing was lost. A sound database repairs with nothing lost.
#[test]
fn repair_reports_a_damaged_table_block_it_cannot_mend() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let mut model = Model::new();
    {
        let db = Db::open(dir, options(Arc::clone(&vfs))).unwrap();
        for i in 0..500 {
            put(&db, &mut model, i, "flushed");
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let r = Db::repair(dir, options(Arc::clone(&vfs))).unwrap();
    assert!(r.lost_nothing(), "a sound database: {r:?}");

    let table = vfs
        .list(dir)
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".sst"))
        .unwrap();
    let path = dir.join(&table);
    let mut bytes = vfs::read_all(vfs.as_ref(), &path).unwrap();
    bytes[100] ^= 0x01; // inside the first data block
    vfs::write_all(vfs.as_ref(), &path, &bytes).unwrap();
    let r = Db::repair(dir, options(Arc::clone(&vfs))).unwrap();
    assert!(
        r.lost
            .iter()
            .any(|l| l.contains(&table) && l.contains("damage left in place")),
        "{r:?}"
    );
}

/// `strata::check` judges the WALs' sequence numbers by the open's rules
/// (`db::wal_sequence`). On every record boundary the MANIFEST is cut at,
/// a cut the open refuses because WAL records follow a gap no surviving
/// record accounts for ("a MANIFEST record is missing": the last records
/// torn off while the WAL after them survived) is a problem for `check`,
/// with the open's file, offset and words; where the open refuses with
/// any "a MANIFEST record is missing", `check` finds a problem; where the
/// open succeeds, `check` reports no missing record. `check` used to pass
/// those databases with warnings only (tables named by no version).
#[test]
fn check_refuses_what_the_open_refuses_on_every_manifest_cut() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    // Three flushes (each deletes the WAL it emptied), then writes left in
    // the live WAL.
    let db = Db::open(dir, options(Arc::clone(&vfs))).unwrap();
    let mut model = Model::new();
    for round in 0..3 {
        for i in 0..100 {
            put(&db, &mut model, round * 100 + i, "v");
        }
        db.flush().unwrap();
    }
    for i in 300..320 {
        put(&db, &mut model, i, "w");
    }
    db.close().unwrap();
    let mpath = manifest_path(vfs.as_ref(), dir);
    let manifest = vfs::read_all(vfs.as_ref(), &mpath).unwrap();
    let mut gaps = 0;
    for cut in record_boundaries(vfs.as_ref(), &mpath) {
        let v = copy_db(vfs.as_ref(), dir);
        vfs::write_all(v.as_ref(), &mpath, &manifest[..cut as usize]).unwrap();
        let r = strata::check::check(v.as_ref(), dir).unwrap();
        let missing = |p: &&strata::check::Finding| p.what.contains("a MANIFEST record is missing");
        match Db::open_read_only(dir, options(Arc::clone(&v))) {
            Ok(db) => {
                drop(db);
                assert!(
                    !r.problems.iter().any(|p| missing(&p)),
                    "cut at {cut}: the open succeeded, check says {:?}",
                    r.problems
                );
            }
            Err(Error::Corruption { file, offset, msg })
                if msg.contains("appear in no WAL record") =>
            {
                gaps += 1;
                assert!(
                    r.problems
                        .iter()
                        .any(|p| p.file == file && p.offset == offset && p.what == msg),
                    "cut at {cut}: the open refused ({file} at {offset}: {msg}), check found \
                     {:?} (warnings {:?})",
                    r.problems,
                    r.warnings
                );
            }
            Err(e) if e.to_string().contains("a MANIFEST record is missing") => {
                assert!(
                    !r.is_ok(),
                    "cut at {cut}: the open refused ({e}), check passed"
                );
            }
            Err(_) => {}
        }
    }
    assert!(gaps > 0, "no cut left a gap in the WAL's sequence numbers");
}

/// `strata check` is not weaker than the open on the sweep database: for
/// every record-boundary cut of its MANIFEST and every flipped bit 0 of a
/// MANIFEST byte, where the open refuses, `check` reports a problem. One
/// cut used to pass `check` with warnings only (a flush's edit lost, its
/// table left named by no record, and the WAL that held its writes deleted
/// after the edit): the open refuses it by its audit of unreferenced
/// tables, which `check` does not run, and now `check` finds the WAL the
/// cut MANIFEST names missing, as the open would next.
#[test]
fn check_reports_every_manifest_cut_and_flip_the_open_refuses() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    build(&vfs, dir, Path::new("/src/ingest.sst"));
    let mpath = manifest_path(vfs.as_ref(), dir);
    let manifest = vfs::read_all(vfs.as_ref(), &mpath).unwrap();
    let mut cases: Vec<(String, Vec<u8>)> = record_boundaries(vfs.as_ref(), &mpath)
        .into_iter()
        .map(|c| (format!("cut at {c}"), manifest[..c as usize].to_vec()))
        .collect();
    for i in 0..manifest.len() {
        let mut d = manifest.clone();
        d[i] ^= 0x01;
        cases.push((format!("bit 0 of byte {i} flipped"), d));
    }
    let mut refused = 0;
    for (case, bytes) in &cases {
        let v = copy_db(vfs.as_ref(), dir);
        vfs::write_all(v.as_ref(), &mpath, bytes).unwrap();
        let r = strata::check::check(v.as_ref(), dir).unwrap();
        if let Err(e) = Db::open_read_only(dir, options(Arc::clone(&v))) {
            refused += 1;
            assert!(
                !r.is_ok(),
                "{case}: the open refused ({e}), check passed with warnings {:?}",
                r.warnings
            );
        }
    }
    assert!(refused > 0);
}

/// A WAL damaged in the middle (a flipped byte, with valid records after
/// it) is refused by the open; `Db::repair` used to report the records
/// from the damage on as lost and then fail in the open it ends with,
/// writing a new MANIFEST on every attempt. Now it rewrites the WAL with
/// the records before the damage (the damaged file kept in `lost/`), so
/// the database opens with the flushed writes and exactly a prefix of the
/// synced ones, `check` is clean, and a second repair loses nothing.
#[test]
fn repair_keeps_the_records_before_a_damaged_wal_record() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let model = flushed_then_synced(&vfs, dir, 200);
    let wal = vfs
        .list(dir)
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".log"))
        .unwrap();
    let path = dir.join(&wal);
    let mut bytes = vfs::read_all(vfs.as_ref(), &path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    vfs::write_all(vfs.as_ref(), &path, &bytes).unwrap();
    match Db::open(dir, options(Arc::clone(&vfs))) {
        Err(e) => assert!(e.is_corruption(), "{e}"),
        Ok(_) => panic!("opened over a damaged WAL record"),
    }

    let r = Db::repair(dir, options(Arc::clone(&vfs))).unwrap();
    assert!(
        r.lost
            .iter()
            .any(|l| l.contains(&wal) && l.contains("records before it were kept")),
        "{r:?}"
    );
    // The damaged original is kept whole.
    let kept = vfs::read_all(vfs.as_ref(), &dir.join("lost").join(&wal)).unwrap();
    assert_eq!(kept, bytes);
    let db = Db::open(dir, options(Arc::clone(&vfs))).unwrap();
    let got = scan(&db).unwrap();
    // Every flushed write, and the synced ones up to the damage: a prefix.
    let n = got.len() - 100;
    assert!((1..100).contains(&n), "{n} synced writes kept");
    let want: Model = model
        .into_iter()
        .filter(|(k, _)| k < &key(100 + n as u32))
        .collect();
    assert_eq!(got, want, "the records before the damage, nothing else");
    db.close().unwrap();
    assert!(strata::check::check(vfs.as_ref(), dir)
        .unwrap()
        .problems
        .is_empty());
    let r = Db::repair(dir, options(Arc::clone(&vfs))).unwrap();
    assert!(r.lost_nothing(), "a second repair: {r:?}");
}

/// A MANIFEST whose first record (the snapshot every later edit builds on)
/// is damaged leaves repair nothing to rebuild from: it says that, with the
/// offset, instead of "MANIFEST has no records".
#[test]
fn repair_names_a_damaged_first_manifest_record() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let mut model = Model::new();
    {
        let db = Db::open(dir, options(Arc::clone(&vfs))).unwrap();
        for i in 0..50 {
            put(&db, &mut model, i, "v");
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let manifest = vfs
        .list(dir)
        .unwrap()
        .into_iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .unwrap();
    let path = dir.join(&manifest);
    let mut bytes = vfs::read_all(vfs.as_ref(), &path).unwrap();
    bytes[9] ^= 0x40; // inside the first record's payload
    vfs::write_all(vfs.as_ref(), &path, &bytes).unwrap();
    match Db::repair(dir, options(Arc::clone(&vfs))) {
        Err(Error::Corruption { file, offset, msg }) => {
            assert_eq!(file, path.display().to_string());
            assert_eq!(offset, 0, "{msg}");
            assert!(
                msg.contains(
                    "its first record, the snapshot every later edit builds on, is damaged"
                ),
                "{msg}"
            );
        }
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(r) => panic!("repaired from a damaged snapshot: {r:?}"),
    }
}

/// A repair that cannot read a file for an operating system's reason (a
/// permission, an I/O error) fails before it changes anything: it used to
/// write a new MANIFEST, point CURRENT at it and drop the old one, then
/// fail (an audit, with a table unreadable by the user running it). A
/// repair that does replace the MANIFEST keeps the old one in `lost/`.
#[test]
fn a_repair_the_os_refuses_changes_nothing_and_a_repair_keeps_the_old_manifest() {
    use strata::vfs::fault::{Fault, FaultKind, Op};
    use strata::vfs::FaultVfs;
    let fv = FaultVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(fv.clone());
    let dir = Path::new("/db");
    let model = flushed_then_synced(&vfs, dir, 150);
    let table = vfs
        .list(dir)
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".sst"))
        .unwrap();
    let before = listing(vfs.as_ref(), dir);
    fv.inject(Fault {
        op: Op::Read,
        nth: 1,
        kind: FaultKind::Eio,
        sticky: true,
        torn: false,
        path_filter: Some(table.clone()),
    });
    let e = Db::repair(dir, options(Arc::clone(&vfs))).unwrap_err();
    fv.clear_fault();
    assert!(
        e.is_io() && e.to_string().contains("nothing was changed"),
        "{e}"
    );
    assert_eq!(
        listing(vfs.as_ref(), dir),
        before,
        "the failed repair changed the directory ({table} unreadable)"
    );
    // Readable again, the repair runs, and keeps the MANIFEST it replaced.
    let old = manifest_path(vfs.as_ref(), dir);
    let old_bytes = vfs::read_all(vfs.as_ref(), &old).unwrap();
    let r = Db::repair(dir, options(Arc::clone(&vfs))).unwrap();
    assert!(r.lost_nothing(), "{r:?}");
    assert_ne!(manifest_path(vfs.as_ref(), dir), old);
    let kept = dir.join("lost").join(old.file_name().unwrap());
    assert_eq!(vfs::read_all(vfs.as_ref(), &kept).unwrap(), old_bytes);
    let db = Db::open(dir, options(vfs)).unwrap();
    assert_eq!(scan(&db).unwrap(), model);
}
