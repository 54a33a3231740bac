//! W2 · COPY batch-size sweep: load the 3-column TSV with write batches of
//! 1 .. 4,194,304 rows (WAL on, no sync), a fresh database per batch size,
//! and report rows/s. A batch size projected to take over `--max-seconds`
//! stops after its first 1,000,000 rows and reports the rate over those.
//! This is Strata alone; `bench/run --workloads w2` runs the same sweep on
//! Strata, RocksDB and Pebble side by side.

use super::{enc, ensure_input};
use anyhow::{Context, Result};
use clap::Args;
use std::io::BufRead;
use std::path::PathBuf;
use std::time::Instant;
use strata::{Db, Options, WriteBatch, WriteOptions};

#[derive(Args)]
pub struct W2Args {
    /// Rows in the input (the workload says 10,000,000).
    #[arg(long, default_value_t = 10_000_000)]
    rows: u64,
    /// Batch sizes to run (default: the workload's twelve).
    #[arg(long, value_delimiter = ',')]
    batch_sizes: Vec<usize>,
    /// Where to keep the input and the databases.
    #[arg(long, default_value = "bench-data")]
    dir: PathBuf,
    /// Cap per batch size (the workload says 120 s).
    #[arg(long, default_value_t = 120.0)]
    max_seconds: f64,
}

const SIZES: [usize; 12] = [
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
];

/// What one engine did with one batch size.
struct Run {
    rows: u64,
    secs: f64,
    capped: bool,
}

pub fn run(a: W2Args) -> Result<()> {
    let input = a.dir.join(format!("copy-{}.tsv", a.rows));
    ensure_input("copy_tsv.py", &["-n", &a.rows.to_string()], &input)?;
    let lines = read_lines(&input)?;
    let sizes: Vec<usize> = if a.batch_sizes.is_empty() {
        SIZES.to_vec()
    } else {
        a.batch_sizes.clone()
    };
    println!(
        "W2 COPY batch-size sweep: {} rows from {}",
        lines.len(),
        input.display()
    );
    println!("{:>10} {:>14}", "batch", "strata rows/s");
    for &bs in &sizes {
        let dir = a.dir.join(format!("w2-strata-{bs}"));
        let _ = std::fs::remove_dir_all(&dir);
        let s = strata_load(&dir, &lines, bs, a.max_seconds)?;
        let _ = std::fs::remove_dir_all(&dir);
        let mark = if s.capped { "*" } else { " " };
        println!("{bs:>10} {:>13.0}{mark}", s.rows as f64 / s.secs);
    }
    println!(
        "(* = stopped after the first 1,000,000 rows: projected over {} s)",
        a.max_seconds
    );
    Ok(())
}

fn read_lines(path: &PathBuf) -> Result<Vec<Vec<u8>>> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut out = Vec::new();
    for l in std::io::BufReader::with_capacity(1 << 20, f).split(b'\n') {
        out.push(l?);
    }
    Ok(out)
}

/// Key of a COPY row: `0x82 0x01 enc(i)` with `i` the first column.
fn row_key(line: &[u8]) -> Result<[u8; 10]> {
    let end = line.iter().position(|&b| b == b'\t').unwrap_or(line.len());
    let i: i64 = std::str::from_utf8(&line[..end])?
        .parse()
        .context("first column is not an integer")?;
    let mut k = [0u8; 10];
    k[0] = 0x82;
    k[1] = 0x01;
    k[2..].copy_from_slice(&enc(i));
    Ok(k)
}

fn strata_load(dir: &PathBuf, lines: &[Vec<u8>], batch: usize, max_secs: f64) -> Result<Run> {
    let opts = Options {
        memtable_size: 64 << 20,
        block_cache_bytes: 256 << 20,
        ..Options::default()
    };
    let db = Db::open(dir, opts)?;
    let start = Instant::now();
    let mut b = WriteBatch::new();
    let mut in_batch = 0;
    let mut done = 0u64;
    let mut capped = false;
    for (n, line) in lines.iter().enumerate() {
        b.put(row_key(line)?, line);
        in_batch += 1;
        if in_batch == batch {
            db.write(std::mem::take(&mut b), &WriteOptions::default())?;
            in_batch = 0;
        }
        if (n + 1) % 10_000 == 0 {
            db.put(b"\x00stats", (n + 1).to_string().as_bytes())?;
        }
        done = n as u64 + 1;
        if done == 1_000_000 && lines.len() as u64 > done {
            let projected = start.elapsed().as_secs_f64() * lines.len() as f64 / done as f64;
            if projected > max_secs {
                capped = true;
                break;
            }
        }
    }
    if in_batch > 0 {
        db.write(b, &WriteOptions::default())?;
    }
    let secs = start.elapsed().as_secs_f64();
    db.close()?;
    Ok(Run {
        rows: done,
        secs,
        capped,
    })
}
