//! W3 · Ingest over an overlapping memtable: 50 rounds of Put 10,000 keys
//! `0x83 enc(k)` (k in [0, 10,000), 100-byte values), then ingest one SST of
//! 1,000 keys spread over [1,000, 7,500) (overlapping the memtable); only
//! the ingest call is timed. Control: the SST's keys in [20,000, 26,500).
//! Reports median, p99 and max ingest latency for both, with Strata's
//! default options (small files become a write batch) and with every file
//! ingested as a file.

use super::enc;
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;
use strata::sstable::{SstOptions, SstWriter};
use strata::{Db, IngestOptions, Options};

#[derive(Args)]
pub struct W3Args {
    #[arg(long, default_value = "bench-data")]
    dir: PathBuf,
    #[arg(long, default_value_t = 50)]
    rounds: usize,
}

fn key(k: u64) -> Vec<u8> {
    let mut v = vec![0x83];
    v.extend_from_slice(&enc(k as i64));
    v
}

fn write_sst(path: &Path, base: u64) -> Result<()> {
    let mut w = SstWriter::create(path, SstOptions::for_ingestion())?;
    for i in 0..1000u64 {
        // 1,000 keys spread evenly over [base, base + 6,500).
        w.put(key(base + i * 13 / 2), [b'i'; 100])?;
    }
    w.finish()?;
    Ok(())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn run_case(
    a: &W3Args,
    overlap: bool,
    opts: &IngestOptions,
    label: &str,
) -> Result<(f64, f64, f64, String)> {
    let dir = a.dir.join(format!("w3-{label}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let db = Db::open(dir.join("db"), Options::default())?;
    let mut lat = Vec::new();
    let mut paths = (0, 0, 0);
    for r in 0..a.rounds {
        for k in 0..10_000u64 {
            db.put(key(k), [b'v'; 100])?;
        }
        let sst = dir.join(format!("{r}.sst"));
        write_sst(&sst, if overlap { 1_000 } else { 20_000 })?;
        let t = Instant::now();
        let res = db.ingest(&[sst], opts)?;
        lat.push(t.elapsed().as_secs_f64() * 1e3);
        if res.as_batch {
            paths.0 += 1;
        } else if res.flushable {
            paths.1 += 1;
        } else {
            paths.2 += 1;
        }
    }
    db.close()?;
    let _ = std::fs::remove_dir_all(&dir);
    lat.sort_by(f64::total_cmp);
    let how = format!(
        "{} batch, {} flushable, {} placed",
        paths.0, paths.1, paths.2
    );
    Ok((
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        *lat.last().unwrap_or(&0.0),
        how,
    ))
}

pub fn run(a: W3Args) -> Result<()> {
    println!(
        "W3: ingest latency over an overlapping memtable ({} rounds), milliseconds",
        a.rounds
    );
    println!(
        "{:<34} {:>8} {:>8} {:>8}  paths",
        "case", "median", "p99", "max"
    );
    let default = IngestOptions::default();
    let as_files = IngestOptions {
        small_file_bytes: 0,
        ..IngestOptions::default()
    };
    let mut medians = Vec::new();
    for (label, opts) in [("defaults", &default), ("files", &as_files)] {
        for overlap in [true, false] {
            let name = format!("{label}-{}", if overlap { "overlap" } else { "control" });
            let (m, p99, max, how) = run_case(&a, overlap, opts, &name)?;
            println!("{name:<34} {m:>8.3} {p99:>8.3} {max:>8.3}  {how}");
            medians.push(m);
        }
    }
    println!(
        "overlap / control median: {:.2}x with defaults, {:.2}x ingesting files",
        medians[0] / medians[1],
        medians[2] / medians[3]
    );
    Ok(())
}
