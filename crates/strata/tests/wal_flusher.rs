//! The WAL thread (`Options::wal_flush_interval`) parks when it has had
//! nothing to write for a while, and a write wakes it: an idle database
//! does not wake it every interval, and an unsynced write after a pause
//! still reaches the WAL file within a few intervals. The thread's wake-ups
//! are read from the kernel (`/proc/self/task/*/status`, voluntary context
//! switches of the thread named `strata-wal`); its own test binary, so no
//! other database's WAL thread shares the name.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::time::{Duration, Instant};
use strata::{Db, Options};

/// Voluntary context switches of the `strata-wal` thread (each sleep or
/// park that ended is one).
fn wal_thread_switches() -> u64 {
    for e in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = e.unwrap().path();
        let (Ok(comm), Ok(status)) = (
            std::fs::read_to_string(dir.join("comm")),
            std::fs::read_to_string(dir.join("status")),
        ) else {
            continue;
        };
        if comm.trim() != "strata-wal" {
            continue;
        }
        let line = status
            .lines()
            .find(|l| l.starts_with("voluntary_ctxt_switches:"))
            .unwrap();
        return line.split_whitespace().nth(1).unwrap().parse().unwrap();
    }
    panic!("no strata-wal thread");
}

/// Bytes of every WAL file (`*.log`) in `dir`.
fn wal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[test]
fn the_wal_thread_parks_when_idle_and_a_write_wakes_it() {
    let dir = tempfile::tempdir().unwrap();
    let interval = Duration::from_millis(1);
    let db = Db::open(
        dir.path(),
        Options {
            wal_flush_interval: interval,
            ..Options::default()
        },
    )
    .unwrap();
    for round in 0..3 {
        // Idle: after its idle rounds the thread parks, so over 300
        // intervals it wakes far fewer than 300 times (a thread that
        // never parks wakes about once per interval).
        std::thread::sleep(Duration::from_millis(100));
        let before = wal_thread_switches();
        std::thread::sleep(Duration::from_millis(300));
        let woke = wal_thread_switches() - before;
        assert!(
            woke < 30,
            "round {round}: the idle WAL thread woke {woke} times in 300 intervals"
        );
        // An unsynced write after the pause reaches the file: the write
        // wakes the parked thread (without that, the bytes would stay in
        // memory until close). The wait bounds a liveness check, not a
        // speed: the thread writes within a few intervals.
        let bytes = wal_bytes(dir.path());
        db.put(format!("key{round}"), vec![b'v'; 4096]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while wal_bytes(dir.path()) < bytes + 4096 {
            assert!(
                Instant::now() < deadline,
                "round {round}: an unsynced write never reached the WAL file"
            );
            std::thread::sleep(interval);
        }
    }
    // Closing wakes the parked thread rather than waiting on it.
    std::thread::sleep(Duration::from_millis(100));
    db.close().unwrap();
}
