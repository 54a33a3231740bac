//! The database's LOCK file between processes: while a `Db` is open here,
//! a `strata` process that would write is told the database is busy; once
//! it is closed, the next process gets in at once, even while other
//! threads of this process are spawning children. (With a `flock`, a child
//! forked in that moment shared the lock's open file description until its
//! `exec`, and the next process was refused; the import kill tests hit it
//! when run in parallel. POSIX record locks are not inherited.)

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn put(db: &Path, key: &str) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["kv", "put", db.to_str().unwrap(), key, "v"])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn another_process_is_busy_while_open_and_gets_in_after_close() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let open = strata::Db::open_default(&db).unwrap();
    let (ok, err) = put(&db, "a");
    assert!(!ok, "a second process wrote while the database was open");
    assert!(err.contains("another process holds its lock file"), "{err}");
    drop(open);
    let (ok, err) = put(&db, "a");
    assert!(ok, "{err}");
}

#[test]
fn a_closed_database_is_free_while_other_threads_spawn_processes() {
    let d = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // Threads forking children all the time, as the test harness does when
    // tests run in parallel.
    let spawners: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = Command::new("true").status();
                }
            })
        })
        .collect();
    for i in 0..100 {
        let db = d.path().join(format!("db{i}"));
        drop(strata::Db::open_default(&db).unwrap());
        let (ok, err) = put(&db, "k");
        assert!(ok, "round {i}: {err}");
    }
    stop.store(true, Ordering::Relaxed);
    for t in spawners {
        t.join().unwrap();
    }
}
