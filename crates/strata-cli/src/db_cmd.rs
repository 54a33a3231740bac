//! Database commands: `get`, `put`, `delete`, `scan`, `lsm`, `load`, `dump`,
//! and `stress` (the writer the crash test kills).
//!
//! Commands that only read (`get`, `scan`, `dump`, `lsm`) open the database
//! read-only: they never create, rename or delete anything, so they work on
//! a full disk or a read-only directory and fail on a path that is not a
//! database instead of creating one.
//!
//! `load` and `dump` use the line format of RocksDB's `ldb load` / `ldb dump`
//! (`key ==> value`, or `0xKEY ==> 0xVALUE` with `--hex`), so data moves
//! between RocksDB and Strata with the tools people already have.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;
use strata::util::hex;
use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

pub fn open(path: &Path) -> Result<Db> {
    Db::open(path, Options::default())
        .with_context(|| format!("opening database {}", path.display()))
}

/// Opens for a command that only reads: nothing in the directory is
/// created, renamed or deleted, and a missing path or a directory that is
/// not a database is an error.
pub fn open_read_only(path: &Path) -> Result<Db> {
    Db::open_read_only(path, Options::default())
        .with_context(|| format!("opening database {} (read-only)", path.display()))
}

/// Parses a key or value given on the command line or in a load file.
fn parse(s: &str, as_hex: bool) -> Result<Vec<u8>> {
    if as_hex {
        hex::decode(s).with_context(|| format!("{s:?} is not hex"))
    } else {
        Ok(s.as_bytes().to_vec())
    }
}

fn show(b: &[u8], as_hex: bool) -> String {
    if as_hex {
        hex::encode_rocksdb(b)
    } else {
        String::from_utf8_lossy(b).into_owned()
    }
}

#[derive(Args)]
pub struct KeyArgs {
    pub db: PathBuf,
    pub key: String,
    /// Keys and values are hex (`0x...` optional).
    #[arg(long)]
    pub hex: bool,
}

#[derive(Args)]
pub struct PutArgs {
    pub db: PathBuf,
    pub key: String,
    pub value: String,
    #[arg(long)]
    pub hex: bool,
}

#[derive(Args)]
pub struct ScanArgs {
    pub db: PathBuf,
    /// First key (inclusive).
    #[arg(long)]
    pub from: Option<String>,
    /// Last key (exclusive).
    #[arg(long)]
    pub to: Option<String>,
    #[arg(long)]
    pub limit: Option<u64>,
    #[arg(long)]
    pub hex: bool,
}

#[derive(Args)]
pub struct LoadArgs {
    pub db: PathBuf,
    /// Input file (`key ==> value` lines); standard input if absent.
    pub file: Option<PathBuf>,
    #[arg(long)]
    pub hex: bool,
    /// Rows per write batch.
    #[arg(long, default_value_t = 1000)]
    pub batch_rows: usize,
}

#[derive(Args)]
pub struct DumpArgs {
    pub db: PathBuf,
    #[arg(long)]
    pub hex: bool,
}

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

#[derive(Args)]
pub struct IngestArgs {
    pub db: PathBuf,
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Move the files into the database (hard-link them in, then remove
    /// the given paths) instead of copying them.
    #[arg(long = "move")]
    pub move_files: bool,
    /// Files smaller than this (total bytes) are applied as a write batch.
    #[arg(long, default_value_t = 32 << 10)]
    pub small_file_bytes: u64,
}

pub fn ingest(a: IngestArgs) -> Result<()> {
    let db = open(&a.db)?;
    let opts = strata::IngestOptions {
        move_files: a.move_files,
        small_file_bytes: a.small_file_bytes,
        ..strata::IngestOptions::default()
    };
    let start = Instant::now();
    let r = db.ingest(&a.files, &opts)?;
    let how = if r.as_batch {
        "applied as a write batch".to_string()
    } else if r.flushable {
        "queued behind the overlapping memtable".to_string()
    } else {
        let levels: Vec<String> = r
            .levels
            .iter()
            .map(|l| l.map(|l| format!("L{l}")).unwrap_or_default())
            .collect();
        format!("placed at {}", levels.join(", "))
    };
    println!(
        "ingested {} file(s) at sequence {}: {how} ({:.3} ms)",
        a.files.len(),
        r.sequence,
        start.elapsed().as_secs_f64() * 1e3
    );
    db.close()?;
    Ok(())
}

pub fn get(a: KeyArgs) -> Result<()> {
    let db = open_read_only(&a.db)?;
    match db.get(&parse(&a.key, a.hex)?)? {
        Some(v) => println!("{}", show(&v, a.hex)),
        None => bail!("key {} not found", a.key),
    }
    Ok(())
}

pub fn put(a: PutArgs) -> Result<()> {
    let db = open(&a.db)?;
    let mut b = WriteBatch::new();
    b.put(&parse(&a.key, a.hex)?, &parse(&a.value, a.hex)?);
    db.write(b, &WriteOptions { sync: true })?;
    db.close()?;
    Ok(())
}

pub fn delete(a: KeyArgs) -> Result<()> {
    let db = open(&a.db)?;
    let mut b = WriteBatch::new();
    b.delete(&parse(&a.key, a.hex)?);
    db.write(b, &WriteOptions { sync: true })?;
    db.close()?;
    Ok(())
}

pub fn scan(a: ScanArgs) -> Result<()> {
    let db = open_read_only(&a.db)?;
    let opts = ReadOptions {
        lower: a.from.as_deref().map(|s| parse(s, a.hex)).transpose()?,
        upper: a.to.as_deref().map(|s| parse(s, a.hex)).transpose()?,
        ..ReadOptions::default()
    };
    let mut it = db.iter(&opts)?;
    it.seek_to_first();
    let out = std::io::stdout();
    let mut out = BufWriter::new(out.lock());
    let mut n = 0;
    while it.valid() && a.limit.is_none_or(|l| n < l) {
        writeln!(
            out,
            "{} : {}",
            show(it.key(), a.hex),
            show(it.value(), a.hex)
        )?;
        n += 1;
        it.next();
    }
    it.status()?;
    out.flush()?;
    Ok(())
}

pub fn dump(a: DumpArgs) -> Result<()> {
    let db = open_read_only(&a.db)?;
    let mut it = db.iter(&ReadOptions::default())?;
    it.seek_to_first();
    let out = std::io::stdout();
    let mut out = BufWriter::new(out.lock());
    while it.valid() {
        writeln!(
            out,
            "{} ==> {}",
            show(it.key(), a.hex),
            show(it.value(), a.hex)
        )?;
        it.next();
    }
    it.status()?;
    out.flush()?;
    Ok(())
}

pub fn load(a: LoadArgs) -> Result<()> {
    let (name, input): (String, Box<dyn BufRead>) = match &a.file {
        Some(p) => (
            p.display().to_string(),
            Box::new(std::io::BufReader::new(
                std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?,
            )),
        ),
        None => ("<stdin>".to_string(), Box::new(std::io::stdin().lock())),
    };
    if a.batch_rows == 0 {
        bail!("--batch-rows must be at least 1");
    }
    // Parse everything first: a bad line fails the load before anything is
    // written.
    let mut rows = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let line = line.with_context(|| format!("reading {name}"))?;
        if line.is_empty() {
            continue;
        }
        let Some((k, v)) = line.split_once(" ==> ") else {
            bail!("{name}:{}: expected `key ==> value`, found {line:?}", i + 1);
        };
        let k = parse(k, a.hex).with_context(|| format!("{name}:{}: key", i + 1))?;
        let v = parse(v, a.hex).with_context(|| format!("{name}:{}: value", i + 1))?;
        rows.push((k, v));
    }
    let db = open(&a.db)?;
    let start = Instant::now();
    for chunk in rows.chunks(a.batch_rows) {
        let mut b = WriteBatch::new();
        for (k, v) in chunk {
            b.put(k, v);
        }
        db.write(b, &WriteOptions::default())?;
    }
    let secs = start.elapsed().as_secs_f64();
    db.close()?;
    println!(
        "loaded {} rows in {:.3}s ({:.0} rows/s, {} rows per batch)",
        rows.len(),
        secs,
        rows.len() as f64 / secs.max(1e-9),
        a.batch_rows
    );
    Ok(())
}

pub fn lsm(db_path: &Path) -> Result<()> {
    // The open comes first: its checks give the errors for what is not a
    // database. Neither it nor the chart (read from the MANIFEST) writes.
    let db = open_read_only(db_path)?;
    print!("{}", crate::viz_cmd::text_chart(db_path)?);
    print_lsm(&db);
    Ok(())
}

pub fn print_lsm(db: &Db) {
    let m = db.metrics();
    println!("level  files         bytes        target   score");
    for (l, lv) in m.levels.iter().enumerate() {
        let base = if l == m.base_level { " (Lbase)" } else { "" };
        let target = if l == 0 {
            "-".to_string()
        } else {
            lv.target_bytes.to_string()
        };
        println!(
            "L{l}     {:>5} {:>13} {:>13} {:>7.2}{base}",
            lv.files, lv.bytes, target, lv.score
        );
    }
    println!(
        "L0: {} files in {} sublevels (peak {} files, {} sublevels); read amplification {}",
        m.l0_files, m.l0_sublevels, m.peak_l0_files, m.peak_l0_sublevels, m.read_amplification
    );
    println!(
        "memtable {} bytes, {} immutable; compaction debt {} bytes; {} compactions running",
        m.memtable_bytes, m.immutable_memtables, m.compaction_debt, m.running_compactions
    );
    println!(
        "written: user {} B, WAL {} B, flushed {} B, compacted {} B (write amplification {:.2}); {} flushes, {} compactions, {} moves",
        m.user_bytes,
        m.wal_bytes,
        m.bytes_flushed,
        m.bytes_compacted_written,
        m.write_amplification,
        m.flushes,
        m.compactions,
        m.moves
    );
    for s in &m.stalls {
        println!(
            "stall {}: {} times, {:.3}s",
            s.cause,
            s.count,
            s.micros as f64 / 1e6
        );
    }
    println!("last sequence {}", m.last_sequence);
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
            b.put(&stress_key(j), &stress_value(j));
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

/// The 50 keys ingested in `round` (at stress key `near`): odd rounds sit
/// among the stress keys just written (overlapping the memtable), even
/// rounds in their own key range.
pub fn ingest_round(round: u64, near: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..50u64)
        .map(|j| {
            let k = if round % 2 == 1 {
                format!(
                    "stress-{:012}-ingest-{round}-{j:02}",
                    near.saturating_sub(40) + j % 40
                )
            } else {
                format!("zz-ingest-{round:08}-{j:02}")
            };
            (k.into_bytes(), format!("ingested-{round}-{j}").into_bytes())
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

pub fn stress_key(i: u64) -> Vec<u8> {
    format!("stress-{i:012}").into_bytes()
}

pub fn stress_value(i: u64) -> Vec<u8> {
    format!("value-{i}-")
        .repeat(1 + (i % 13) as usize)
        .into_bytes()
}
