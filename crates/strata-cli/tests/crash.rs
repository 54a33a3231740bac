//! Crash test: a child process (`strata stress --sync`) writes and prints
//! each acknowledged key; the parent kills it with SIGKILL at a random
//! moment, reopens the database, and checks that it opens cleanly and holds
//! every acknowledged key with the right value. Repeated many times on one
//! database, so recovery also runs over the leftovers of earlier crashes.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{Rng, SeedableRng};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use strata::{Db, Options};

#[path = "../src/stress_keys.rs"]
mod stress_keys;
use stress_keys::{ingest_round, stress_key, stress_value};

#[test]
fn acknowledged_writes_survive_sigkill() {
    crash_rounds(false);
}

/// The same with an ingestion every 100 keys: after every kill, each
/// acknowledged ingestion is wholly present, and the one in flight is
/// wholly present or wholly absent.
#[test]
fn ingestions_are_all_or_nothing_under_sigkill() {
    crash_rounds(true);
}

/// The two tests run one at a time: a child spawned by one test inherits,
/// until it calls exec, the other test's open `LOCK` descriptor (an `flock`
/// lock is shared through inherited descriptors), and on a loaded machine
/// that window was long enough for the other test's next child to find the
/// database locked.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn crash_rounds(ingest: bool) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let rounds: usize = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if ingest { 30 } else { 60 });
    let mut acked_ingests: Vec<(u64, u64)> = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut acked: Vec<u64> = Vec::new();
    let mut next = 0u64;
    // The planned rounds, then (with ingestions) more, up to three times
    // as many, until the children have acknowledged enough ingestions to
    // check: the kill times are fixed by the seed, and on a slow disk 30
    // of them (3.8 s in all) may end before six ingestions are through.
    let mut round = 0;
    while round < rounds || (ingest && acked_ingests.len() <= 5 && round < 3 * rounds) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.args(["stress", "--sync", "--memtable-kib", "64", "--start"])
            .arg(next.to_string());
        if ingest {
            cmd.args(["--ingest-every", "100", "--ingest-dir"])
                .arg(dir.path().join(format!("ingest-{round}")));
        }
        let mut child = cmd
            .arg(&db_path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let (itx, irx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("I ") {
                    let mut p = rest.split(' ').filter_map(|x| x.parse::<u64>().ok());
                    if let (Some(r), Some(near)) = (p.next(), p.next()) {
                        let _ = itx.send((r, near));
                    }
                } else if let Ok(n) = line.trim().parse::<u64>() {
                    if tx.send(n).is_err() {
                        break;
                    }
                }
            }
        });
        std::thread::sleep(Duration::from_millis(rng.gen_range(20..250)));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        reader.join().unwrap();
        let got: Vec<u64> = rx.try_iter().collect();
        acked_ingests.extend(irx.try_iter());
        if got.is_empty() && !status.success() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            assert!(err.is_empty(), "round {round}: child failed: {err}");
        }
        if let Some(&last) = got.last() {
            next = last + 1;
        }
        acked.extend(got);
        let db = Db::open(&db_path, Options::default())
            .unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
        for &i in &acked {
            assert_eq!(
                db.get(stress_key(i)).unwrap(),
                Some(stress_value(i)),
                "round {round}: acknowledged key {i} lost"
            );
        }
        for &(r, near) in &acked_ingests {
            for (k, v) in ingest_round(r, near) {
                assert_eq!(
                    db.get(&k).unwrap(),
                    Some(v),
                    "round {round}: acknowledged ingestion {r} lost a key"
                );
            }
        }
        if ingest {
            // Any ingestion present at all is present whole.
            let mut it = db.raw_iter(&strata::ReadOptions::default()).unwrap();
            it.seek_to_first();
            let mut per_round: std::collections::BTreeMap<u64, usize> = Default::default();
            while it.valid() {
                let k = String::from_utf8_lossy(it.key().unwrap()).into_owned();
                if let Some(pos) = k.find("ingest-") {
                    let r: u64 = k[pos + 7..].split('-').next().unwrap().parse().unwrap();
                    *per_round.entry(r).or_default() += 1;
                }
                it.next();
            }
            for (r, n) in per_round {
                assert_eq!(
                    n, 50,
                    "round {round}: ingestion {r} is partly present ({n} of 50 keys)"
                );
            }
        }
        db.close().unwrap();
        round += 1;
    }
    assert!(
        acked.len() > rounds,
        "the children should have acknowledged writes"
    );
    if ingest {
        assert!(
            acked_ingests.len() > 5,
            "the children should have acknowledged ingestions"
        );
    }
    eprintln!(
        "{round} kills, {} acknowledged keys and {} acknowledged ingestions all present",
        acked.len(),
        acked_ingests.len()
    );
}
