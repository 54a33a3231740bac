//! An open that fails part-way gives back what it took. Its last step
//! starts the background threads (flush, compactions, WAL flusher), and
//! each holds the database and with it the LOCK file; if a later one
//! cannot be spawned, those already running must be stopped and joined,
//! or they would run, and keep the database locked ("already open in
//! this process"), until the process exits.
//!
//! A spawn is made to fail by capping the process's address space just
//! above what it uses: each thread's stack takes 2 MiB of it, so asking
//! for the most compaction threads allowed (256) runs out after a few
//! dozen. The cap
//! applies to the whole process, so the test runs in a child process of
//! its own (this test binary, run again on this one test).

#![allow(clippy::unwrap_used)] // tests may unwrap

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use std::process::Command;
use strata::{Db, Error, Options};

const CHILD: &str = "STRATA_OPEN_FAILURE_CHILD";
const TEST: &str = "a_failed_open_stops_the_threads_it_started_and_unlocks";

#[test]
fn a_failed_open_stops_the_threads_it_started_and_unlocks() {
    if let Some(dir) = std::env::var_os(CHILD) {
        child(std::path::Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD, dir.path().join("db"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the child failed: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("child checked"),
        "the child ran no check: {stdout}"
    );
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// Virtual memory the process maps now, from `/proc/self/status`.
fn mapped_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

fn child(dir: &std::path::Path) {
    // The database exists, with data, before the open that fails.
    {
        let db = Db::open_default(dir).unwrap();
        db.put("k", "v").unwrap();
        db.close().unwrap();
    }
    let before = threads();
    let old = getrlimit(Resource::As);
    let cap = mapped_bytes() + (96 << 20);
    setrlimit(
        Resource::As,
        Rlimit {
            current: Some(cap),
            maximum: old.maximum,
        },
    )
    .unwrap();
    // The most `open` accepts: 256 stacks of 2 MiB are well past the cap.
    let opts = Options {
        max_background_compactions: Options::MAX_BACKGROUND_COMPACTIONS,
        ..Options::default()
    };
    let failed = Db::open(dir, opts);
    setrlimit(Resource::As, old).unwrap();
    match failed {
        Err(Error::Io { .. }) => {}
        Err(e) => panic!("expected an I/O error from a failed spawn, got {e}"),
        Ok(_) => panic!("256 compaction threads started under a {cap}-byte cap"),
    }
    assert_eq!(
        threads(),
        before,
        "threads started by the failed open are still running"
    );
    let db = Db::open_default(dir).unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
    db.close().unwrap();
    println!("child checked");
}
