//! `Db::close(&self)`: a database shared in an `Arc` can be closed through
//! any clone and its error seen (`close(self)` could not be called on a
//! shared `Db`, and dropping one discards the error). Once closed, every
//! call of every family fails with an error saying so; iterators and
//! snapshots made before go on reading; writes racing the close either
//! commit before it, durably, or fail; a second close reports the
//! database closed.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use strata::sstable::{SstOptions, SstWriter};
use strata::{Db, IngestOptions, Options, ReadOptions, WriteBatch, WriteOptions};

fn closed<T: std::fmt::Debug>(what: &str, r: strata::Result<T>) {
    match r {
        Err(e) => {
            assert!(e.is_invalid_argument(), "{what}: {e}");
            assert!(e.to_string().contains("is closed"), "{what}: {e}");
        }
        Ok(v) => panic!("{what} on a closed database: Ok({v:?})"),
    }
}

#[test]
fn every_call_after_close_says_the_database_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Arc::new(Db::open_default(&path).unwrap());
    for i in 0..100 {
        db.put(format!("k{i:03}"), "v").unwrap();
    }
    let sst = dir.path().join("f.sst");
    let mut w = SstWriter::create(&sst, SstOptions::for_ingestion()).unwrap();
    w.put("z", "1").unwrap();
    w.finish().unwrap();
    // Made before the close: they go on reading.
    let snap = db.snapshot();
    let it = db.iter();
    let mut raw = db.raw_iter(&ReadOptions::default()).unwrap();
    let other = Arc::clone(&db);

    other.close().unwrap(); // through a clone, while `db` lives
    let sync = WriteOptions { sync: true };
    // Writes.
    closed("put", db.put("a", "1"));
    closed("put_opt", db.put_opt("a", "1", &sync));
    closed("delete", db.delete("a"));
    closed("delete_opt", db.delete_opt("a", &sync));
    closed("delete_range", db.delete_range("a", "b"));
    closed("delete_range_opt", db.delete_range_opt("a", "b", &sync));
    let mut b = WriteBatch::new();
    b.put("a", "1");
    closed("write", db.write(b, &WriteOptions::default()));
    closed(
        "write (empty)",
        db.write(WriteBatch::new(), &WriteOptions::default()),
    );
    closed("write (empty, sync)", db.write(WriteBatch::new(), &sync));
    closed("sync_wal", db.sync_wal());
    // Reads.
    closed("get", db.get("k000"));
    closed("get_opt", db.get_opt("k000", &ReadOptions::default()));
    for r in db.multi_get(["k000", "k001"]) {
        closed("multi_get", r);
    }
    for r in db.multi_get_opt(["k000"], &ReadOptions::default()) {
        closed("multi_get_opt", r);
    }
    for (what, mut i) in [
        ("iter", db.iter()),
        ("iter_opt", db.iter_opt(&ReadOptions::default())),
        ("range", db.range("a".."z")),
        ("prefix", db.prefix("k")),
    ] {
        closed(what, i.next().unwrap());
        assert!(i.next().is_none(), "{what}: one error, then the end");
    }
    closed("raw_iter", db.raw_iter(&ReadOptions::default()));
    let late = db.snapshot();
    closed("a snapshot made after the close: get", late.get("k000"));
    closed("... iter", late.iter().next().unwrap());
    for r in late.multi_get(["k000"]) {
        closed("... multi_get", r);
    }
    // Maintenance.
    closed("flush", db.flush());
    closed("compact_range", db.compact_range(None, None));
    closed("wait_for_compactions", db.wait_for_compactions());
    closed("ingest", db.ingest(&[&sst], &IngestOptions::default()));
    assert!(sst.exists(), "a refused ingestion leaves the file");
    closed("checkpoint", db.checkpoint(dir.path().join("cp")));
    assert!(!dir.path().join("cp").exists());
    closed("close (again)", db.close());
    // The infallible calls still answer, with the figures at the close.
    assert_eq!(db.latest_sequence(), 100);
    assert_eq!(db.metrics().last_sequence, 100);
    db.log_import_phase("t", "read", 1, 1, std::time::Duration::ZERO);
    let _ = db.ingest_split_keys();

    // What was made before the close still reads.
    assert_eq!(snap.get("k042").unwrap(), Some(b"v".to_vec()));
    assert_eq!(it.count(), 100);
    raw.seek("k050");
    assert_eq!(raw.key(), Some(&b"k050"[..]));
    // The directory is free, and every write acknowledged before is there.
    let again = Db::open_default(&path).unwrap();
    assert_eq!(again.iter().count(), 100);
    drop((db, other)); // dropping a closed Db does nothing more
}

/// Writers racing a close through another clone: each write either
/// commits before the close, and is then in the database after a reopen
/// (close syncs the WAL), or fails saying the database is closed; none
/// fails otherwise, and none hangs. Two closes at once: one closes, the
/// other waits for it and reports the database closed; after either
/// returns, the directory opens at once.
#[test]
fn writes_racing_a_close_commit_before_it_or_fail() {
    for round in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let db = Arc::new(
            Db::open(
                &path,
                Options {
                    memtable_size: 64 << 10,
                    ..Options::default()
                },
            )
            .unwrap(),
        );
        let go = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..3)
            .map(|t| {
                let (db, go) = (Arc::clone(&db), Arc::clone(&go));
                std::thread::spawn(move || {
                    while !go.load(Ordering::SeqCst) {
                        std::hint::spin_loop();
                    }
                    let mut acked = Vec::new();
                    for i in 0.. {
                        let k = format!("t{t}-{i:06}");
                        match db.put(&k, [b'v'; 50]) {
                            Ok(()) => acked.push(k),
                            Err(e) => {
                                assert!(e.to_string().contains("is closed"), "{e}");
                                return acked;
                            }
                        }
                    }
                    unreachable!()
                })
            })
            .collect();
        go.store(true, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(20 + 10 * round));
        let closers: Vec<_> = (0..2)
            .map(|_| {
                let (db, path) = (Arc::clone(&db), path.clone());
                std::thread::spawn(move || {
                    let r = db.close();
                    // Whichever returns, the close is done.
                    drop(Db::open_read_only(&path, Options::default()).unwrap());
                    r.map_err(|e| e.to_string())
                })
            })
            .collect();
        let results: Vec<_> = closers.into_iter().map(|c| c.join().unwrap()).collect();
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "one close closes: {results:?}"
        );
        assert!(
            results
                .iter()
                .any(|r| r.as_ref().is_err_and(|e| e.contains("is closed"))),
            "{results:?}"
        );
        let acked: Vec<String> = writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        assert!(!acked.is_empty());
        drop(db);
        let again = Db::open_default(&path).unwrap();
        for k in &acked {
            assert!(
                again.get(k).unwrap().is_some(),
                "round {round}: {k} acknowledged, then lost"
            );
        }
    }
}

/// A read-only database closes the same way.
#[test]
fn a_read_only_database_closes_too() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_default(dir.path()).unwrap();
    db.put("k", "v").unwrap();
    db.close().unwrap();
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(ro.get("k").unwrap(), Some(b"v".to_vec()));
    ro.close().unwrap();
    closed("get", ro.get("k"));
    closed("close", ro.close());
    closed("wait_for_compactions", ro.wait_for_compactions());
}
