//! `strata bench l0`: load random 16-byte keys with 100-byte values by puts,
//! then wait for compactions to settle; once with L0 sublevel picking and
//! flush splitting, once with both off (classic L0 picking), side by side.
//! Reports load and settle time, write amplification (bytes the process
//! wrote / key+value bytes), peak L0 sublevels and files (sampled every
//! 100 ms), and write-stall time by cause.

use anyhow::Result;
use clap::Args;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::{CompactionOptions, Db, Options, WriteOptions};

#[derive(Args)]
pub struct L0Args {
    #[arg(long, default_value_t = 2_000_000)]
    keys: u64,
    /// Also Put a statistics key at the bottom of the key space every
    /// 10,000 keys (what makes an unsplit flush wide).
    #[arg(long)]
    stats_key: bool,
    #[arg(long, default_value = "bench-data")]
    dir: PathBuf,
    /// Memtable size in MiB (smaller makes more flushes).
    #[arg(long, default_value_t = 16)]
    memtable_mib: usize,
}

struct Outcome {
    load: f64,
    settle: f64,
    written: u64,
    peak_sublevels: u64,
    peak_files: u64,
    stall_micros: u64,
    stalls: Vec<(String, u64, u64)>,
    compactions: u64,
    peak_running: u64,
}

/// Bytes this process has written to storage (`write_bytes` of
/// /proc/self/io); 0 where unavailable.
pub fn process_write_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("write_bytes: ")
                    .and_then(|v| v.trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

fn run_one(a: &L0Args, sublevels: bool) -> Result<Outcome> {
    let dir = a.dir.join(if sublevels {
        "l0-sublevels"
    } else {
        "l0-classic"
    });
    let _ = std::fs::remove_dir_all(&dir);
    let opts = Options {
        memtable_size: a.memtable_mib << 20,
        compaction: CompactionOptions {
            l0_sublevels: sublevels,
            // Pebble's ratio: 4 MiB of split bytes for a 64 MiB memtable.
            flush_split_bytes: ((a.memtable_mib as u64) << 20) / 16,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let db = Arc::new(Db::open(&dir, opts)?);
    let stop = Arc::new(AtomicBool::new(false));
    let peak_sub = Arc::new(AtomicU64::new(0));
    let peak_files = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (db, stop, ps, pf) = (
            Arc::clone(&db),
            Arc::clone(&stop),
            Arc::clone(&peak_sub),
            Arc::clone(&peak_files),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let m = db.metrics();
                ps.fetch_max(m.l0_sublevels as u64, Ordering::Relaxed);
                pf.fetch_max(m.l0_files as u64, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let before = process_write_bytes();
    let start = Instant::now();
    let mut rng = StdRng::seed_from_u64(7);
    let value = [b'v'; 100];
    for i in 0..a.keys {
        let k: [u8; 16] = rng.gen();
        db.put(k, value)?;
        if a.stats_key && (i + 1) % 10_000 == 0 {
            db.put(b"\x00stats", (i + 1).to_string().as_bytes())?;
        }
    }
    let load = start.elapsed().as_secs_f64();
    db.write(strata::WriteBatch::new(), &WriteOptions::default())?;
    db.flush()?;
    db.wait_for_compactions()?;
    let settle = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let m = db.metrics();
    let written = process_write_bytes().saturating_sub(before);
    let db = Arc::try_unwrap(db).map_err(|_| anyhow::anyhow!("database still shared"))?;
    db.close()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Outcome {
        load,
        settle,
        written,
        peak_sublevels: peak_sub.load(Ordering::Relaxed).max(m.peak_l0_sublevels),
        peak_files: peak_files.load(Ordering::Relaxed).max(m.peak_l0_files),
        stall_micros: m.stalls.iter().map(|s| s.micros).sum(),
        stalls: m
            .stalls
            .iter()
            .map(|s| (s.cause.clone(), s.count, s.micros))
            .collect(),
        compactions: m.compactions,
        peak_running: m.peak_running_compactions,
    })
}

pub fn run(a: L0Args) -> Result<()> {
    let logical = a.keys * 116;
    println!(
        "L0 benchmark: {} random 16-byte keys, 100-byte values, puts{}",
        a.keys,
        if a.stats_key {
            ", plus a stats key every 10,000 keys"
        } else {
            ""
        }
    );
    let s = run_one(&a, true)?;
    let c = run_one(&a, false)?;
    println!("{:<28} {:>14} {:>14}", "", "sublevels+split", "classic");
    let row = |name: &str, x: String, y: String| println!("{name:<28} {x:>14} {y:>14}");
    row(
        "load seconds",
        format!("{:.2}", s.load),
        format!("{:.2}", c.load),
    );
    row(
        "load+settle seconds",
        format!("{:.2}", s.settle),
        format!("{:.2}", c.settle),
    );
    row(
        "write amplification",
        format!("{:.2}", s.written as f64 / logical as f64),
        format!("{:.2}", c.written as f64 / logical as f64),
    );
    row(
        "peak L0 sublevels",
        s.peak_sublevels.to_string(),
        c.peak_sublevels.to_string(),
    );
    row(
        "peak L0 files",
        s.peak_files.to_string(),
        c.peak_files.to_string(),
    );
    row(
        "compactions",
        s.compactions.to_string(),
        c.compactions.to_string(),
    );
    row(
        "most compactions at once",
        s.peak_running.to_string(),
        c.peak_running.to_string(),
    );
    row(
        "write-stall seconds",
        format!("{:.2}", s.stall_micros as f64 / 1e6),
        format!("{:.2}", c.stall_micros as f64 / 1e6),
    );
    for (label, o) in [("sublevels+split", &s), ("classic", &c)] {
        for (cause, n, us) in &o.stalls {
            println!("  {label}: {cause}: {n} times, {:.2}s", *us as f64 / 1e6);
        }
    }
    Ok(())
}
