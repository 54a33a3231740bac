//! `Options::background_nice`: the flush and compaction threads run at the
//! opener's nice value plus the option (at most 19); the WAL thread and the
//! application's own threads keep theirs. Read from the kernel
//! (`/proc/self/task/*/stat`), per thread, by the threads' names. Its own
//! test binary, so no other database's threads share the names.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use strata::{Db, Options};

/// Each live thread of this process: name -> nice values (several
/// threads may share a name).
fn threads() -> BTreeMap<String, Vec<i32>> {
    let mut out: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for e in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = e.unwrap().path();
        // A thread that ended between the listing and the read is skipped.
        let (Ok(comm), Ok(stat)) = (
            std::fs::read_to_string(dir.join("comm")),
            std::fs::read_to_string(dir.join("stat")),
        ) else {
            continue;
        };
        // Fields after "pid (comm)": state is field 3, nice field 19.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let nice: i32 = rest.split(' ').nth(19 - 3).unwrap().parse().unwrap();
        out.entry(comm.trim().to_string()).or_default().push(nice);
    }
    out
}

fn nice_of_this_thread() -> i32 {
    rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
}

/// Opens a database with `background_nice = delta` (the default if
/// `None`) and checks every thread's nice value once the background
/// threads have started (they lower themselves first thing, so the check
/// waits for that, up to a minute).
fn check(delta: Option<u8>, compactions: usize) {
    let base = nice_of_this_thread();
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options {
        max_background_compactions: compactions,
        ..Options::default()
    };
    if let Some(d) = delta {
        opts.background_nice = d;
    }
    let want = (base + i32::from(opts.background_nice)).min(19);
    let db = Db::open(dir.path(), opts).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // The kernel keeps 15 bytes of a name: "strata-compact-0" and "-1"
    // both read "strata-compact-".
    let lowered = |t: &BTreeMap<String, Vec<i32>>| {
        let mut v = t.get("strata-flush").cloned().unwrap_or_default();
        v.extend(t.get("strata-compact-").cloned().unwrap_or_default());
        v
    };
    let t = loop {
        let t = threads();
        let v = lowered(&t);
        // A new thread reads its parent's name until it sets its own, so
        // the WAL thread is waited for too (a fresh-clone run read the
        // threads before "strata-wal" had named itself).
        let lowered_all = v.len() == compactions + 1 && v.iter().all(|&n| n == want);
        if (lowered_all && t.contains_key("strata-wal")) || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(
        lowered(&t),
        vec![want; compactions + 1],
        "flush and compaction threads at the opener's nice + {delta:?}: {t:?}"
    );
    assert_eq!(
        t.get("strata-wal"),
        Some(&vec![base]),
        "WAL thread unchanged: {t:?}"
    );
    for (name, nices) in &t {
        if !name.starts_with("strata-flush") && !name.starts_with("strata-compact") {
            assert!(
                nices.iter().all(|&n| n == base),
                "{name} is not a background thread and keeps nice {base}: {t:?}"
            );
        }
    }
    // Writes still work, and the caller's thread was never touched.
    db.put("k", "v").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(nice_of_this_thread(), base);
    db.close().unwrap();
    // Closed: its threads have ended.
    let t = threads();
    assert!(
        !t.keys()
            .any(|n| n.starts_with("strata-flush") || n.starts_with("strata-compact")),
        "{t:?}"
    );
}

#[test]
fn flush_and_compaction_threads_run_at_the_configured_nice_value() {
    // The default (10), an explicit value, a value past 19 (clamped), and
    // zero (unchanged), one after another.
    check(None, 2);
    check(Some(3), 1);
    check(Some(40), 2);
    check(Some(0), 2);
}
