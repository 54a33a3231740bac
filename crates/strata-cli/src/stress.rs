//! `stress` (hidden; a test tool, not for users): writes keys until
//! killed, printing each acknowledged key with `--sync`. The crash test
//! (`tests/crash.rs`) runs it as the child it kills.

use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use strata::{Db, Options, WriteBatch, WriteOptions};

use crate::stress_keys::{ingest_round, stress_key, stress_value};

#[derive(Args)]
pub struct StressArgs {
    pub db: PathBuf,
    /// Keys to write (0 = until killed).
    #[arg(long, default_value_t = 0)]
    pub keys: u64,
    /// Sync every write and print the number of each acknowledged key.
    #[arg(long)]
    pub sync: bool,
    /// First key number (to continue a previous run).
    #[arg(long, default_value_t = 0)]
    pub start: u64,
    /// Memtable size in KiB (small values make flushes frequent).
    #[arg(long, default_value_t = 256)]
    pub memtable_kib: usize,
    /// Every this many keys, also ingest an SST of 50 keys (alternately
    /// overlapping the memtable and not) and print `I <round>` once the
    /// ingestion returned. 0 disables.
    #[arg(long, default_value_t = 0)]
    pub ingest_every: u64,
    /// Where the SSTs to ingest are written (default: beside the database).
    #[arg(long)]
    pub ingest_dir: Option<PathBuf>,
}

/// Writes keys `stress-NNNNNNNNNNNN` => `value-N` (plus every 10th in a
/// batch of three); with `--sync` prints each acknowledged key number.
pub fn stress(a: StressArgs) -> Result<()> {
    let opts = Options {
        memtable_size: a.memtable_kib << 10,
        ..Options::default()
    };
    let db = Db::open(&a.db, opts)?;
    let out = std::io::stdout();
    let mut out = out.lock();
    let mut i = a.start;
    while a.keys == 0 || i < a.start + a.keys {
        let mut b = WriteBatch::new();
        let n = if i.is_multiple_of(10) { 3 } else { 1 };
        for j in i..i + n {
            b.put(stress_key(j), stress_value(j));
        }
        db.write(b, &WriteOptions { sync: a.sync })?;
        if a.sync {
            for j in i..i + n {
                writeln!(out, "{j}")?;
            }
            out.flush()?;
        }
        if a.ingest_every > 0 && i / a.ingest_every != (i + n) / a.ingest_every {
            let round = (i + n) / a.ingest_every;
            let dir = a
                .ingest_dir
                .clone()
                .unwrap_or_else(|| a.db.with_extension("ingest"));
            std::fs::create_dir_all(&dir)?;
            let path = dir.join(format!("round-{round}.sst"));
            let mut w = strata::sstable::SstWriter::create(
                &path,
                strata::sstable::SstOptions::for_ingestion(),
            )?;
            for (k, v) in ingest_round(round, i) {
                w.put(&k, &v)?;
            }
            w.finish()?;
            let opts = strata::IngestOptions {
                small_file_bytes: 0,
                ..strata::IngestOptions::default()
            };
            db.ingest(&[path], &opts)?;
            if a.sync {
                writeln!(out, "I {round} {i}")?;
                out.flush()?;
            }
        }
        i += n;
    }
    db.close()?;
    Ok(())
}
