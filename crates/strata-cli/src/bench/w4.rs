//! W4 · Foreground write latency during ingestion: a writer Puts random
//! 16-byte keys under 0x84 with 100-byte values, paced at 20,000 Puts/s,
//! timing every call, while an ingester writes and ingests an SST of 5,000
//! sorted keys every 200 ms (variant `disjoint`: keys under 0x85; `overlap`:
//! under 0x84, overlapping the memtable). A `none` run without the ingester
//! is the baseline.

use anyhow::Result;
use clap::Args;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::sstable::{SstOptions, SstWriter};
use strata::{Db, IngestOptions, Options};

#[derive(Args)]
pub struct W4Args {
    #[arg(long, default_value = "bench-data")]
    dir: PathBuf,
    #[arg(long, default_value_t = 30)]
    seconds: u64,
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize] as f64 / 1000.0
}

fn run_variant(a: &W4Args, variant: &str) -> Result<(Vec<u64>, Vec<u64>)> {
    let dir = a.dir.join(format!("w4-{variant}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let db = Arc::new(Db::open(dir.join("db"), Options::default())?);
    let stop = Arc::new(AtomicBool::new(false));
    let ingester = (variant != "none").then(|| {
        let (db, stop, dir) = (Arc::clone(&db), Arc::clone(&stop), dir.clone());
        let prefix = if variant == "overlap" { 0x84u8 } else { 0x85u8 };
        std::thread::spawn(move || -> Result<Vec<u64>> {
            let mut rng = StdRng::seed_from_u64(9);
            let mut lat = Vec::new();
            let mut round = 0;
            while !stop.load(Ordering::Relaxed) {
                let t0 = Instant::now();
                let mut keys: Vec<[u8; 17]> = (0..5000)
                    .map(|_| {
                        let mut k = [0u8; 17];
                        k[0] = prefix;
                        rng.fill(&mut k[1..]);
                        k
                    })
                    .collect();
                keys.sort();
                keys.dedup();
                let path = dir.join(format!("ingest-{round}.sst"));
                let mut w = SstWriter::create(&path, SstOptions::for_ingestion())?;
                for k in &keys {
                    w.put(k, [b'i'; 100])?;
                }
                w.finish()?;
                let t = Instant::now();
                db.ingest(&[path], &IngestOptions::default())?;
                lat.push(t.elapsed().as_nanos() as u64);
                round += 1;
                std::thread::sleep(Duration::from_millis(200).saturating_sub(t0.elapsed()));
            }
            Ok(lat)
        })
    });
    let mut rng = StdRng::seed_from_u64(4);
    let mut lat = Vec::new();
    let start = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / 20_000.0);
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs(a.seconds) {
        let mut k = [0u8; 17];
        k[0] = 0x84;
        rng.fill(&mut k[1..]);
        let t = Instant::now();
        db.put(k, [b'v'; 100])?;
        lat.push(t.elapsed().as_nanos() as u64);
        n += 1;
        // Pace to 20,000 Puts/s against the schedule, not the last call.
        let due = interval * n as u32;
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let ing = match ingester {
        Some(h) => h
            .join()
            .map_err(|_| anyhow::anyhow!("ingester panicked"))??,
        None => Vec::new(),
    };
    let db = Arc::try_unwrap(db).map_err(|_| anyhow::anyhow!("database still shared"))?;
    db.close()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok((lat, ing))
}

pub fn run(a: W4Args) -> Result<()> {
    println!(
        "W4: Put latency (microseconds) at 20,000 Puts/s for {} s while ingesting every 200 ms",
        a.seconds
    );
    println!(
        "{:<10} {:>8} {:>8} {:>8} {:>8} {:>9} {:>12} {:>12}",
        "variant", "p50", "p99", "p99.9", "p99.99", "max", "ingest p50", "ingest p99"
    );
    let mut p9999 = Vec::new();
    for v in ["none", "disjoint", "overlap"] {
        let (mut lat, mut ing) = run_variant(&a, v)?;
        lat.sort_unstable();
        ing.sort_unstable();
        p9999.push(pct(&lat, 0.9999));
        println!(
            "{v:<10} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>12} {:>12}",
            pct(&lat, 0.5),
            pct(&lat, 0.99),
            pct(&lat, 0.999),
            pct(&lat, 0.9999),
            lat.last().map(|&x| x as f64 / 1000.0).unwrap_or(0.0),
            if ing.is_empty() {
                "-".to_string()
            } else {
                format!("{:.0}", pct(&ing, 0.5))
            },
            if ing.is_empty() {
                "-".to_string()
            } else {
                format!("{:.0}", pct(&ing, 0.99))
            },
        );
    }
    println!(
        "Put p99.99 relative to no ingestion: disjoint {:.2}x, overlap {:.2}x",
        p9999[1] / p9999[0],
        p9999[2] / p9999[0]
    );
    Ok(())
}
