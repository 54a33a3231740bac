//! `strata bench ingest-size`: where a file is cheaper ingested as a write
//! batch than as a file, the measurement behind
//! `IngestOptions::small_file_bytes`.
//!
//! For each file size (keys with 16-byte keys and incompressible 100-byte
//! values) it times the whole `ingest` call both ways, side by side in one
//! run, in two states of the database: `idle` (the WAL holds nothing
//! unsynced) and `busy` (1,000 unsynced Puts just before, as in W3, so a
//! synced batch also writes those out). It also counts what each way
//! leaves behind: a file per ingestion in the tree, or nothing.

use anyhow::Result;
use clap::Args;
use rand::{rngs::StdRng, RngCore, SeedableRng};
use std::path::{Path, PathBuf};
use std::time::Instant;
use strata::sstable::{SstOptions, SstWriter};
use strata::{Db, IngestOptions, Options};

#[derive(Args)]
pub struct IngestSizeArgs {
    #[arg(long, default_value = "bench-data")]
    dir: PathBuf,
    /// Ingestions per case.
    #[arg(long, default_value_t = 30)]
    rounds: usize,
}

fn write_sst(path: &Path, keys: u64, round: u64, rng: &mut StdRng) -> Result<u64> {
    let mut w = SstWriter::create(path, SstOptions::for_ingestion())?;
    let mut v = [0u8; 100];
    for i in 0..keys {
        // Disjoint from every other round, so each file could go anywhere.
        let k = format!("r{round:06}-{i:09}");
        rng.fill_bytes(&mut v);
        w.put(k.as_bytes(), v)?;
    }
    Ok(w.finish()?.file_size)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds per ingestion and the mean file size.
fn run_case(a: &IngestSizeArgs, keys: u64, as_batch: bool, busy: bool) -> Result<(f64, u64)> {
    let dir = a.dir.join("ingest-size");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let db = Db::open(dir.join("db"), Options::default())?;
    let mut rng = StdRng::seed_from_u64(keys);
    let opts = IngestOptions {
        small_file_bytes: if as_batch { u64::MAX } else { 0 },
        ..IngestOptions::default()
    };
    let mut lat = Vec::new();
    let mut bytes = 0;
    let mut v = [0u8; 100];
    for r in 0..a.rounds as u64 {
        if busy {
            for i in 0..1000u64 {
                rng.fill_bytes(&mut v);
                db.put(format!("p{r:06}-{i:06}").as_bytes(), v)?;
            }
        }
        let sst = dir.join(format!("{r}.sst"));
        bytes += write_sst(&sst, keys, r, &mut rng)?;
        let t = Instant::now();
        db.ingest(&[sst], &opts)?;
        lat.push(t.elapsed().as_secs_f64() * 1e3);
    }
    db.close()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok((median(lat), bytes / a.rounds as u64))
}

pub fn run(a: IngestSizeArgs) -> Result<()> {
    println!(
        "ingest-size: median ms per ingest call ({} rounds), as a file vs. as a write batch",
        a.rounds
    );
    println!(
        "{:>6} {:>9} | {:>8} {:>8} {:>7} | {:>8} {:>8} {:>7}",
        "keys", "bytes", "idle:file", "batch", "b/f", "busy:file", "batch", "b/f"
    );
    for keys in [1u64, 10, 30, 100, 300, 1000, 3000] {
        let (fi, bytes) = run_case(&a, keys, false, false)?;
        let (bi, _) = run_case(&a, keys, true, false)?;
        let (fb, _) = run_case(&a, keys, false, true)?;
        let (bb, _) = run_case(&a, keys, true, true)?;
        println!(
            "{keys:>6} {bytes:>9} | {fi:>9.3} {bi:>8.3} {:>7.2} | {fb:>9.3} {bb:>8.3} {:>7.2}",
            bi / fi,
            bb / fb
        );
    }
    Ok(())
}
