//! Crash test: a child process (`strata stress --sync`) writes and prints
//! each acknowledged key; the parent kills it with SIGKILL at a random
//! moment, reopens the database, and checks that it opens cleanly and holds
//! every acknowledged key with the right value. Repeated many times on one
//! database, so recovery also runs over the leftovers of earlier crashes.

use rand::{Rng, SeedableRng};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use strata::{Db, Options};

fn stress_key(i: u64) -> Vec<u8> {
    format!("stress-{i:012}").into_bytes()
}

fn stress_value(i: u64) -> Vec<u8> {
    format!("value-{i}-")
        .repeat(1 + (i % 13) as usize)
        .into_bytes()
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let rounds: usize = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("db");
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut acked: Vec<u64> = Vec::new();
    let mut next = 0u64;
    for round in 0..rounds {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["stress", "--sync", "--memtable-kib", "64", "--start"])
            .arg(next.to_string())
            .arg(&db_path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(n) = line.trim().parse::<u64>() {
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
                db.get(&stress_key(i)).unwrap(),
                Some(stress_value(i)),
                "round {round}: acknowledged key {i} lost"
            );
        }
        db.close().unwrap();
    }
    assert!(
        acked.len() > rounds,
        "the children should have acknowledged writes"
    );
    eprintln!(
        "{rounds} kills, {} acknowledged keys all present",
        acked.len()
    );
}
