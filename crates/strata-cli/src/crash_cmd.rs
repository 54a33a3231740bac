//! `strata crash-test --duration SECS DIR`: a randomized crash-test driver
//! for long runs. Rounds alternate between two kinds of crash:
//!
//! - **SIGKILL**: a child `strata stress --sync --ingest-every 100` writes
//!   and ingests into `DIR/db` and prints what was acknowledged; it is
//!   killed at a random moment (the page cache survives, as after a process
//!   crash).
//! - **Power cut**: the same kind of workload runs in this process on
//!   `vfs::FaultVfs`, with the power cut at a random file-system call;
//!   everything not fsynced (bytes and directory entries) is lost.
//!
//! After each crash the database is reopened and must hold every
//! acknowledged synced write and every acknowledged ingestion, each
//! ingestion wholly present or wholly absent, and `strata::check` must find
//! no problem. Any failure stops the run with a non-zero exit, a refused
//! open included.

use crate::stress_keys::{ingest_round, stress_key, stress_value};
use anyhow::{bail, Context, Result};
use clap::Args;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use strata::sstable::{SstOptions, SstWriter};
use strata::vfs::{FaultVfs, Vfs};
use strata::{Db, IngestOptions, Options, WriteBatch, WriteOptions};

#[derive(Args)]
pub struct CrashTestArgs {
    /// A directory to work in (created; the database is `DIR/db`).
    pub dir: PathBuf,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 60)]
    pub duration: u64,
    /// Seed of the random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// What the verified crashes covered.
#[derive(Default)]
struct Tally {
    kills: u64,
    power_cuts: u64,
    /// Acknowledged in the SIGKILL rounds' shared database (all checked
    /// after every kill).
    kill_writes: u64,
    kill_ingests: u64,
    /// Summed over the power-cut rounds (one fresh database each).
    cut_writes: u64,
    cut_ingests: u64,
}

pub fn run(a: CrashTestArgs) -> Result<()> {
    std::fs::create_dir_all(&a.dir)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed);
    let end = Instant::now() + Duration::from_secs(a.duration);
    let mut t = Tally::default();
    let mut killed = KillState::default();
    let mut round = 0u64;
    while Instant::now() < end || round < 2 {
        if round.is_multiple_of(2) {
            kill_round(&a.dir, &mut rng, &mut killed, &mut t)
                .with_context(|| format!("SIGKILL round {round}"))?;
        } else {
            power_cut_round(rng.gen(), &mut t)
                .with_context(|| format!("power-cut round {round}"))?;
        }
        round += 1;
    }
    outln!(
        "crash test: {} SIGKILLs and {} power cuts survived; {} acknowledged synced writes and \
         {} acknowledged ingestions verified; 0 lost; 0 opens refused",
        t.kills,
        t.power_cuts,
        t.kill_writes + t.cut_writes,
        t.kill_ingests + t.cut_ingests,
    )?;
    Ok(())
}

/// What earlier SIGKILL rounds had acknowledged (they share one database).
#[derive(Default)]
struct KillState {
    acked: Vec<u64>,
    ingests: Vec<(u64, u64)>,
    next: u64,
    n: u64,
}

fn kill_round(dir: &Path, rng: &mut impl Rng, k: &mut KillState, t: &mut Tally) -> Result<()> {
    let db_path = dir.join("db");
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .args([
            "stress",
            "--sync",
            "--memtable-kib",
            "64",
            "--ingest-every",
            "100",
        ])
        .arg("--start")
        .arg(k.next.to_string())
        .arg("--ingest-dir")
        .arg(dir.join(format!("ingest-{}", k.n)))
        .arg(&db_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    k.n += 1;
    let stdout = child.stdout.take().context("child stdout")?;
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(rng.gen_range(20..300)));
    child.kill()?; // SIGKILL
    child.wait()?;
    let _ = reader.join();
    for line in rx.try_iter() {
        if let Some(rest) = line.strip_prefix("I ") {
            let mut p = rest.split(' ').filter_map(|x| x.parse::<u64>().ok());
            if let (Some(r), Some(near)) = (p.next(), p.next()) {
                k.ingests.push((r, near));
            }
        } else if let Ok(n) = line.trim().parse::<u64>() {
            k.acked.push(n);
            k.next = k.next.max(n + 1);
        }
    }
    let db = Db::open(&db_path, Options::default()).context("reopen after SIGKILL")?;
    for &i in &k.acked {
        if db.get(stress_key(i))? != Some(stress_value(i)) {
            bail!("acknowledged key {i} lost");
        }
    }
    for &(r, near) in &k.ingests {
        for (key, v) in ingest_round(r, near) {
            if db.get(&key)? != Some(v) {
                bail!("acknowledged ingestion {r} lost a key");
            }
        }
    }
    whole_ingestions(&db)?;
    db.close()?;
    let report = strata::check::check_dir(&db_path)?;
    if let Some(p) = report.problems.first() {
        bail!("check after SIGKILL: {p}");
    }
    t.kills += 1;
    t.kill_writes = k.acked.len() as u64;
    t.kill_ingests = k.ingests.len() as u64;
    Ok(())
}

/// Every ingestion present is present whole (50 keys).
fn whole_ingestions(db: &Db) -> Result<()> {
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    for kv in db.iter() {
        let (k, _) = kv?;
        let key = String::from_utf8_lossy(&k).into_owned();
        if let Some(pos) = key.find("ingest-") {
            let r = key[pos + 7..].split('-').next().unwrap_or("").to_string();
            *per.entry(r).or_default() += 1;
        }
    }
    if let Some((r, n)) = per.iter().find(|(_, &n)| n != 50) {
        bail!("ingestion {r} is partly present ({n} of 50 keys)");
    }
    Ok(())
}

/// A fresh database on a `FaultVfs`: synced and unsynced writes,
/// ingestions and flushes until the power is cut at a random call.
fn power_cut_round(seed: u64, t: &mut Tally) -> Result<()> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let vfs = FaultVfs::new();
    vfs.cut_power_after_keeping(rng.gen_range(0..600), seed);
    let opts = |v: &FaultVfs| Options {
        vfs: Some(Arc::new(v.clone()) as Arc<dyn Vfs>),
        memtable_size: 8 << 10,
        ..Options::default()
    };
    // The files to ingest live on the simulated disk too (no directories
    // there: a path prefix is enough).
    let ingest_dir = std::path::Path::new("/power-cut-ingest");
    let mut acked: Vec<u64> = Vec::new();
    let mut ingests: Vec<(u64, u64)> = Vec::new();
    if let Ok(db) = Db::open("/db", opts(&vfs)) {
        let mut i = 0u64;
        loop {
            let r = if i % 97 == 96 {
                let round = i / 97;
                let path = ingest_dir.join(format!("{seed}-{round}.sst"));
                // Through the simulated disk: ingestion reads through it,
                // so the power can go out while the file is written too
                // (that ends the round like any failed operation).
                let written = SstWriter::create_in(&vfs, &path, SstOptions::for_ingestion())
                    .and_then(|mut w| {
                        for (key, v) in ingest_round(round, i) {
                            w.put(&key, &v)?;
                        }
                        w.finish()
                    });
                let o = IngestOptions {
                    small_file_bytes: 0,
                    ..IngestOptions::default()
                };
                written.and_then(|_| db.ingest(&[path], &o).map(|_| ingests.push((round, i))))
            } else if i % 50 == 49 {
                db.flush()
            } else {
                let sync = rng.gen_bool(0.5);
                let mut b = WriteBatch::new();
                b.put(stress_key(i), stress_value(i));
                db.write(b, &WriteOptions { sync }).map(|_| {
                    if sync {
                        acked.push(i);
                    }
                })
            };
            if r.is_err() || i > 5000 {
                break;
            }
            i += 1;
        }
    }
    let image = vfs
        .crash_image()
        .unwrap_or_else(|| vfs.crash_clone_keeping(seed));
    // Every open must succeed: a refusal is a failure of the crash test.
    let db = Db::open("/db", opts(&image)).context("open after the power cut")?;
    for &i in &acked {
        if db.get(stress_key(i))? != Some(stress_value(i)) {
            bail!("seed {seed}: acknowledged synced key {i} lost");
        }
    }
    for &(r, near) in &ingests {
        for (key, v) in ingest_round(r, near) {
            if db.get(&key)? != Some(v) {
                bail!("seed {seed}: acknowledged ingestion {r} lost a key");
            }
        }
    }
    whole_ingestions(&db)?;
    db.close()?;
    let report = strata::check::check(&image, Path::new("/db"))?;
    if let Some(p) = report.problems.first() {
        bail!("seed {seed}: check after the power cut: {p}");
    }
    t.power_cuts += 1;
    t.cut_writes += acked.len() as u64;
    t.cut_ingests += ingests.len() as u64;
    Ok(())
}
