//! `strata-bench`: Strata's driver for the comparison workloads of
//! `shared/workloads/README.md` (W2, W3, W4), written only against the
//! engine's public API. It shares its command line and its output with the
//! RocksDB and Pebble drivers beside it under `bench/`:
//!
//! ```text
//! strata-bench WORKLOAD INPUT DBDIR [--variant V] [--batch-rows N]
//!     [--rounds N] [--seconds S] [--max-seconds S]
//! ```
//!
//! WORKLOAD is `w1`, `w2`, `w3`, `w4`, `w5` or `micro`; INPUT is the datagen file (w1, w2, w5) or `-`
//! (w3 and w4 make their own keys); DBDIR must not exist, so every run
//! starts from a fresh database. One JSON line per run goes to stdout:
//! engine, version, workload, variant, figures, options and durability.
//!
//! W5 (`w5 stock.csv DBDIR --variant sublevels|classic`) is the seeds'
//! scenario: `strata import --mode direct` of the random-order CSV with a
//! progress key Put every 10,000 rows, with L0 sublevels and flush
//! splitting on or off; it adds the largest compactions to W1's figures.
//! Every import run also carries a `timeline` of rows and resident memory
//! sampled each second (the scale run's plots).
//!
//! W1 has Strata-only variants `import-MODE-ORDER` (MODE `pipeline`,
//! `direct`, `batch`; `import-spill64-ORDER` is the pipeline with a 64 MiB
//! budget): `strata import` of the CSV into the TPC-C stock table (primary
//! key and the `s_i_id` index, the same two KVs a row as the kv-spec
//! methods, in the table encoding) through `strata_import::import`.
//!
//! Options are the workloads' common ones: 64 MiB memtable, 256 MiB block
//! cache, Snappy, background compactions = cores, WAL on without per-write
//! sync (Strata's default 1 ms WAL buffer, which the durability field
//! states).

mod put_trace;
mod slow_sync;

use anyhow::{bail, Context, Result};
use rand::{rngs::StdRng, Rng, SeedableRng};
use serde_json::{json, Value};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::events::{Event, EventListener, EventRecord};
use strata::{
    CompressionType, Db, IngestOptions, Options, SstOptions, SstWriter, WriteBatch, WriteOptions,
};

/// The parsed command line.
struct Args {
    workload: String,
    input: PathBuf,
    dir: PathBuf,
    variant: Option<String>,
    batch_rows: usize,
    rounds: usize,
    seconds: f64,
    max_seconds: f64,
    ingest_check: IngestCheck,
}

/// How much of each file Strata's ingestion checks (`--ingest-check`).
#[derive(Clone, Copy, PartialEq)]
enum IngestCheck {
    /// The properties and the first and last key (checksummed blocks), as
    /// RocksDB's and Pebble's ingestion check by default: the driver's
    /// files were written by Strata's `SstWriter` for ingestion in this
    /// process, which is what `IngestOptions::trust_own_files` is for.
    Bounds,
    /// Strata's default: every block's checksum and every key.
    Full,
}

impl IngestCheck {
    fn name(self) -> &'static str {
        match self {
            IngestCheck::Bounds => "bounds",
            IngestCheck::Full => "full",
        }
    }
}

const USAGE: &str =
    "usage: strata-bench w1|w2|w3|w4|w5|micro INPUT DBDIR [--variant V] [--batch-rows N] \
                     [--rounds N] [--seconds S] [--max-seconds S] [--ingest-check bounds|full]";

fn parse() -> Result<Args> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.len() < 3 {
        bail!("{USAGE}");
    }
    let mut a = Args {
        workload: argv[0].clone(),
        input: PathBuf::from(&argv[1]),
        dir: PathBuf::from(&argv[2]),
        variant: None,
        batch_rows: 1000,
        rounds: 50,
        seconds: 30.0,
        max_seconds: 120.0,
        ingest_check: IngestCheck::Bounds,
    };
    let mut rest = argv[3..].iter();
    while let Some(opt) = rest.next() {
        let v = rest
            .next()
            .with_context(|| format!("option {opt} needs a value"))?;
        let num = |what: &str| format!("option {what}: {v:?} is not a number");
        match opt.as_str() {
            "--variant" => a.variant = Some(v.clone()),
            "--batch-rows" => a.batch_rows = v.parse().with_context(|| num(opt))?,
            "--rounds" => a.rounds = v.parse().with_context(|| num(opt))?,
            "--seconds" => a.seconds = v.parse().with_context(|| num(opt))?,
            "--max-seconds" => a.max_seconds = v.parse().with_context(|| num(opt))?,
            "--ingest-check" => {
                a.ingest_check = match v.as_str() {
                    "bounds" => IngestCheck::Bounds,
                    "full" => IngestCheck::Full,
                    _ => bail!("option --ingest-check: {v:?} is neither bounds nor full"),
                }
            }
            _ => bail!("unknown option {opt}\n{USAGE}"),
        }
    }
    Ok(a)
}

/// The options of every ingestion the driver makes (`--ingest-check`).
fn ingest_options(a: &Args) -> IngestOptions {
    match a.ingest_check {
        IngestCheck::Bounds => IngestOptions {
            trust_own_files: true,
            verify_checksums: false,
            ..IngestOptions::default()
        },
        IngestCheck::Full => IngestOptions::default(),
    }
}

/// Where the database's file ingestions spent their time on average
/// (`Metrics::ingest_*_micros`), on stderr: the runner keeps only the JSON
/// line on stdout.
fn print_ingest_phases(db: &Db) {
    let m = db.metrics();
    let files = m.ingests.saturating_sub(m.ingests_as_batch);
    if files == 0 {
        return;
    }
    let mean = |us: u64| us as f64 / files as f64;
    let phases = m.ingest_prepare_micros + m.ingest_commit_micros + m.ingest_manifest_sync_micros;
    eprintln!(
        "ingest phases, mean µs over {files} file ingestions: prepare {:.0} (of which the directory fsync {:.0}), commit {:.0}, MANIFEST fsync {:.0}, rest {:.0}",
        mean(m.ingest_prepare_micros),
        mean(m.ingest_dir_sync_micros),
        mean(m.ingest_commit_micros),
        mean(m.ingest_manifest_sync_micros),
        mean(m.ingest_micros.saturating_sub(phases)),
    );
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

/// Opens a fresh database with the workloads' common options.
fn open(dir: &Path) -> Result<Db> {
    open_with(dir, |_| {})
}

/// [`open`], with `tweak` applied to the options last.
fn open_with(dir: &Path, tweak: impl FnOnce(&mut Options)) -> Result<Db> {
    if dir.exists() {
        bail!(
            "{} already exists (each run needs a fresh database)",
            dir.display()
        );
    }
    let mut opts = Options {
        memtable_size: 64 << 20,
        block_cache_bytes: 256 << 20,
        max_background_compactions: cores().min(Options::MAX_BACKGROUND_COMPACTIONS),
        ..Options::default()
    };
    opts.sst.compression = CompressionType::Snappy;
    if let Some(latency) = slow_sync::latency() {
        opts.vfs = Some(Arc::new(slow_sync::SlowSync { latency }));
    }
    if let Some(n) = background_nice() {
        opts.background_nice = n;
    }
    tweak(&mut opts);
    Ok(Db::open(dir, opts)?)
}

/// `enc(int)` of kv-spec v1: order-preserving 8-byte big-endian.
fn enc(v: i64) -> [u8; 8] {
    ((v as u64) ^ 0x8000_0000_0000_0000).to_be_bytes()
}

/// `write_bytes` of /proc/self/io (`None` where the kernel has no such file).
/// The end of a W1 load: flush, wait for compactions, then the settle
/// time, the bytes the process wrote since `wb0`, the metrics and the
/// number of keys a full scan finds.
fn settle(
    db: &Db,
    start: Instant,
    load_s: f64,
    wb0: Option<u64>,
) -> Result<(f64, u64, strata::Metrics, u64)> {
    db.flush()?;
    db.wait_for_compactions()?;
    let settle_s = start.elapsed().as_secs_f64() - load_s;
    let wb = match (wb0, write_bytes()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    };
    let mut keys = 0u64;
    for kv in db.iter() {
        kv?;
        keys += 1;
    }
    Ok((settle_s, wb, db.metrics(), keys))
}

fn write_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/io").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("write_bytes: "))
        .and_then(|v| v.trim().parse().ok())
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// `STRATA_BENCH_BACKGROUND_NICE=N`: `Options::background_nice` for A/B
/// runs of one binary (unset: the engine's default).
fn background_nice() -> Option<u8> {
    std::env::var("STRATA_BENCH_BACKGROUND_NICE")
        .ok()?
        .parse()
        .ok()
}

fn emit(a: &Args, variant: &str, figures: Value) {
    let line = json!({
        "engine": "strata",
        "version": env!("CARGO_PKG_VERSION"),
        "workload": a.workload,
        "variant": variant,
        "figures": figures,
        "options": {"memtable_mib": 64, "cache_mib": 256, "compression": "snappy",
                    "background_jobs": cores(), "ingest_check": a.ingest_check.name()},
        "durability": {"wal": true, "sync_per_write": false,
            "note": "WriteOptions::default (no sync); unsynced writes wait up to 1 ms \
                     (wal_flush_interval) in Strata's WAL buffer before the write system call"},
    });
    let mut line = line;
    if let Some(l) = slow_sync::latency() {
        // Not a real disk's figure: say so in the results.
        line["modelled_fsync_us"] = json!(l.as_micros() as u64);
    }
    if let Some(n) = background_nice() {
        line["options"]["background_nice"] = json!(n);
    }
    println!("{line}");
}

/// W2: load the COPY TSV with write batches of `batch_rows` rows.
fn w2(a: &Args) -> Result<()> {
    let f =
        std::fs::File::open(&a.input).with_context(|| format!("opening {}", a.input.display()))?;
    let mut lines = Vec::new();
    for l in std::io::BufReader::with_capacity(1 << 20, f).split(b'\n') {
        lines.push(l.with_context(|| format!("reading {}", a.input.display()))?);
    }
    let db = open(&a.dir)?;
    let wb0 = write_bytes();
    let start = Instant::now();
    let mut b = WriteBatch::new();
    let (mut in_batch, mut done, mut capped) = (0, 0usize, false);
    for (n, line) in lines.iter().enumerate() {
        let end = line.iter().position(|&c| c == b'\t').unwrap_or(line.len());
        let i: i64 = std::str::from_utf8(&line[..end])
            .ok()
            .and_then(|s| s.parse().ok())
            .with_context(|| {
                format!(
                    "{} line {}: first column is not an integer",
                    a.input.display(),
                    n + 1
                )
            })?;
        // On the stack (the batch copies it), as the Pebble driver does.
        let mut key = [0u8; 10];
        key[..2].copy_from_slice(&[0x82, 0x01]);
        key[2..].copy_from_slice(&enc(i));
        b.put(key, line);
        in_batch += 1;
        if in_batch == a.batch_rows {
            db.write(std::mem::take(&mut b), &WriteOptions::default())?;
            in_batch = 0;
        }
        if (n + 1) % 10_000 == 0 {
            db.put(b"\x00stats", (n + 1).to_string())?;
        }
        done = n + 1;
        if done == 1_000_000
            && lines.len() > done
            && start.elapsed().as_secs_f64() * lines.len() as f64 / done as f64 > a.max_seconds
        {
            capped = true;
            break;
        }
    }
    if in_batch > 0 {
        db.write(b, &WriteOptions::default())?;
    }
    let secs = start.elapsed().as_secs_f64();
    let wb = match (wb0, write_bytes()) {
        (Some(a), Some(b)) => json!(b.saturating_sub(a)),
        _ => Value::Null,
    };
    db.close()?;
    emit(
        a,
        &format!("batch={}", a.batch_rows),
        json!({"rows": done, "seconds": secs, "rows_per_s": done as f64 / secs,
               "capped": capped, "write_bytes": wb}),
    );
    Ok(())
}

fn write_sst(path: &Path, keys: &[Vec<u8>]) -> Result<()> {
    let mut w = SstWriter::create(path, SstOptions::for_ingestion())?;
    for k in keys {
        w.put(k, [b'i'; 100])?;
    }
    w.finish()?;
    Ok(())
}

fn scratch_dir(a: &Args) -> Result<PathBuf> {
    let mut s = a.dir.clone().into_os_string();
    s.push(".ssts");
    let s = PathBuf::from(s);
    std::fs::create_dir_all(&s).with_context(|| format!("creating {}", s.display()))?;
    Ok(s)
}

fn w3key(k: i64) -> Vec<u8> {
    let mut v = vec![0x83];
    v.extend_from_slice(&enc(k));
    v
}

/// The primary and index KVs of one TPC-C stock CSV row (kv-spec v1).
fn stock_kvs(line: &[u8], path: &Path, n: usize) -> Result<([u8; 18], [u8; 18])> {
    let mut cols = line.split(|&c| c == b',');
    let mut num = || -> Option<i64> { std::str::from_utf8(cols.next()?).ok()?.parse().ok() };
    let (i, w) = match (num(), num()) {
        (Some(i), Some(w)) => (i, w),
        _ => bail!(
            "{} line {n}: s_i_id and s_w_id must be integers",
            path.display()
        ),
    };
    let (mut p, mut x) = ([0u8; 18], [0u8; 18]);
    p[..2].copy_from_slice(&[0x81, 0x01]);
    p[2..10].copy_from_slice(&enc(w));
    p[10..].copy_from_slice(&enc(i));
    x[..2].copy_from_slice(&[0x81, 0x02]);
    x[2..10].copy_from_slice(&enc(i));
    x[10..].copy_from_slice(&enc(w));
    Ok((p, x))
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The TPC-C stock table of W1 (the schema of `strata demo`,
/// `crates/strata-cli/src/tpcc.rs`).
const STOCK_SCHEMA: &str = include_str!("../../../crates/strata-cli/src/tpcc_stock.sql");

/// Peak resident memory of this process (VmHWM), in bytes.
fn peak_rss() -> u64 {
    status_kb("VmHWM:") * 1024
}

/// A `kB` field of /proc/self/status (0 where there is none).
fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with(field))?;
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .unwrap_or(0)
}

/// W1 by `strata import` (variants `import-MODE-ORDER`): the CSV into the
/// stock table, then flush and settle (see [`import_run`]).
fn w1_import(a: &Args, variant: &str) -> Result<()> {
    use strata_import::Mode;
    let (mode, memory) = match variant.split('-').nth(1) {
        // The CLI's default budget (a quarter of RAM): with it the
        // random-order input sorts in memory, with no spill.
        Some("pipeline") => (Mode::Pipeline, strata_import::budget::default_memory()),
        Some("spill64") => (Mode::Pipeline, 64 << 20),
        Some("direct") => (Mode::Direct, 256 << 20),
        Some("batch") => (
            Mode::Batch {
                rows_per_batch: a.batch_rows,
            },
            256 << 20,
        ),
        _ => bail!(
            "w1 import variant must be import-pipeline|spill64|direct|batch-ORDER, not {variant:?}"
        ),
    };
    let figures = import_run(a, mode, memory, &|_| {}, false)?;
    emit(a, variant, figures);
    Ok(())
}

/// Strata's `--memory` for W5. Direct mode's unit holds about 45% of the
/// budget in key+value bytes (measured: 15 units of the 341 MB of 10
/// warehouses at 48 MiB), so 36 MiB gives units of about the 16 MiB of
/// key+value bytes the RocksDB and Pebble drivers buffer before each
/// ingestion (about 20 ingestions at 10 warehouses).
const W5_MEMORY: usize = 36 << 20;

/// W5 (the seeds' scenario): `strata import --mode direct` of the CSV in
/// random order, so every unit is one ingestion of files spanning the
/// whole table and its index, with the progress key `0x00 "stats"` Put
/// every 10,000 rows beside it. Variant `sublevels`: L0 sublevels and
/// flush splitting on (the default); `classic`: both off
/// (`CompactionOptions::l0_sublevels = false`: whole-overlap L0 picking,
/// unsplit flushes); `sliced`: sublevels with Lbase sliced every 2 MiB
/// (`CompactionOptions::lbase_split_bytes`: cut points inside Lbase files
/// and L0 -> Lbase picks bounded with their Lbase bytes; the default
/// `sublevels` slices at a size scaled to the data,
/// `CompactionOptions::lbase_slices`); `unsliced`: sublevels with Lbase cut
/// at its file boundaries only (`lbase_slices` 0, the default before
/// 2026-11-23, for A/B runs); `floor`:
/// sublevels with no automatic compaction and
/// no L0 slowdown or stop, so load+settle is the import's own time, a
/// lower bound on any variant's (the W5 time target compares sublevels
/// with classic; this says how much of classic's time compaction can
/// save at most).
fn w5(a: &Args) -> Result<()> {
    let variant = a.variant.as_deref().unwrap_or("sublevels");
    let tweak: &dyn Fn(&mut Options) = match variant {
        "sublevels" => &|_| {},
        "classic" => &|o| o.compaction.l0_sublevels = false,
        "sliced" => &|o| o.compaction.lbase_split_bytes = 2 << 20,
        "unsliced" => &|o| o.compaction.lbase_slices = 0,
        "floor" => &|o| {
            o.compaction.l0_compaction_threshold = usize::MAX / 2;
            o.l0_slowdown_sublevels = usize::MAX / 2;
            o.l0_stop_sublevels = usize::MAX / 2;
            o.slowdown_debt_bytes = u64::MAX;
        },
        v => bail!("w5 variant must be sublevels, sliced, unsliced, classic or floor, not {v:?}"),
    };
    let figures = import_run(a, strata_import::Mode::Direct, W5_MEMORY, tweak, true)?;
    emit(a, variant, figures);
    Ok(())
}

/// Keeps the largest compactions an [`EventListener`] sees.
#[derive(Default)]
struct CompactionWatch {
    /// (bytes read, seconds) of the largest compaction, and of the largest
    /// L0→Lbase one.
    largest: std::sync::Mutex<((u64, f64), (u64, f64))>,
}

impl EventListener for CompactionWatch {
    fn on_event(&self, r: &EventRecord) {
        if let Event::CompactionEnd {
            start_level,
            output_level,
            moved: false,
            cancelled: false,
            bytes_read,
            micros,
            ..
        } = &r.event
        {
            let mut g = self.largest.lock().unwrap_or_else(|e| e.into_inner());
            let this = (*bytes_read, *micros as f64 / 1e6);
            if this.0 > g.0 .0 {
                g.0 = this;
            }
            if *start_level == 0 && *output_level > 0 && this.0 > g.1 .0 {
                g.1 = this;
            }
        }
    }
}

/// Samples, every second, the rows loaded so far and the process's
/// resident memory: `[[seconds, rows, rss_bytes], ...]` (rows/s over time
/// and memory over time for the scale run).
struct Timeline {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Vec<[f64; 3]>>,
}

impl Timeline {
    fn start(rows: Arc<std::sync::atomic::AtomicU64>, start: Instant) -> Timeline {
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut next = Duration::from_secs(1);
            while !s.load(Ordering::Relaxed) {
                if start.elapsed() >= next {
                    out.push([
                        start.elapsed().as_secs_f64(),
                        rows.load(Ordering::Relaxed) as f64,
                        rss() as f64,
                    ]);
                    next += Duration::from_secs(1);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            out
        });
        Timeline { stop, handle }
    }

    fn finish(self) -> Vec<[f64; 3]> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// Resident memory of this process now (VmRSS), in bytes.
fn rss() -> u64 {
    status_kb("VmRSS:") * 1024
}

/// `strata import` of the W1 CSV into the TPC-C stock table with `mode`
/// under `memory` (the database's options changed by `tweak`), then flush
/// and settle. With `progress_key`, a side
/// thread Puts `0x00 "stats"` = rows so far each time the import's row
/// counter passes a multiple of 10,000 (the import encodes rows in
/// chunks, so the Puts come in bursts as the chunks land). Checks the
/// table's row count, a full scan's key count (two a row plus the catalog
/// entry, plus the progress key) and 1,000 sampled rows read back through
/// the table. Returns W1's figures plus the import's own, the largest
/// compactions and a timeline.
fn import_run(
    a: &Args,
    mode: strata_import::Mode,
    memory: usize,
    tweak: &dyn Fn(&mut Options),
    progress_key: bool,
) -> Result<Value> {
    use strata_import::{csv::dialect::Dialect, csv::input::Input, ImportOptions};
    // Before the clock: the logical bytes (as the kv-spec methods count
    // them) and a sample of rows to read back.
    let f =
        std::fs::File::open(&a.input).with_context(|| format!("opening {}", a.input.display()))?;
    let mut rng = StdRng::seed_from_u64(7);
    let mut sample: Vec<Vec<u8>> = Vec::new();
    let (mut rows, mut logical) = (0usize, 0u64);
    for line in std::io::BufReader::with_capacity(1 << 20, f).split(b'\n') {
        let line = line.with_context(|| format!("reading {}", a.input.display()))?;
        rows += 1;
        logical += (18 + line.len() + 18) as u64;
        if sample.len() < 1000 {
            sample.push(line);
        } else {
            let j = rng.gen_range(0..rows);
            if j < 1000 {
                sample[j] = line;
            }
        }
    }
    // As `strata import` does: large buffers stay `mmap`ed, so freed sort
    // buffers leave the process instead of fragmenting the heap.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before the
    // database and import threads start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
    let schema = strata_import::Schema::parse(STOCK_SCHEMA)?;
    let table = schema.table("stock").context("no stock table")?;
    let watch = Arc::new(CompactionWatch::default());
    let db = open_with(&a.dir, |o| {
        tweak(o);
        o.event_listener = Some(Arc::clone(&watch) as Arc<dyn EventListener>);
    })?;
    let progress = Arc::new(strata_import::pipeline::Progress::default());
    let opts = ImportOptions {
        memory,
        mode,
        progress: Some(Arc::clone(&progress)),
        ..ImportOptions::default()
    };
    let wb0 = write_bytes();
    let start = Instant::now();
    let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let timeline = Timeline::start(Arc::clone(&counter), start);
    let done = AtomicBool::new(false);
    let (s, keys_put) = std::thread::scope(|sc| -> Result<_> {
        // Mirrors the import's row counter for the timeline and, with
        // `progress_key`, writes the progress key beside the data.
        let side = sc.spawn(|| -> Result<u64> {
            let (mut written, mut puts) = (0u64, 0u64);
            loop {
                let finished = done.load(Ordering::Acquire);
                let now = progress.rows.load(Ordering::Relaxed);
                counter.store(now, Ordering::Relaxed);
                while progress_key && written + 10_000 <= now {
                    written += 10_000;
                    db.put(b"\x00stats", written.to_string())?;
                    puts += 1;
                }
                if finished {
                    return Ok(puts);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let r = strata_import::import(&db, table, &[Input::File(a.input.clone())], &opts);
        done.store(true, Ordering::Release);
        let puts = side
            .join()
            .map_err(|_| anyhow::anyhow!("progress thread panicked"))??;
        Ok((r?, puts))
    })?;
    let load_s = start.elapsed().as_secs_f64();
    // The import's peak (the checks below fill the block cache).
    let peak = peak_rss();
    // The load only: the checks' full scan fills the block cache.
    let timeline = timeline.finish();
    let (settle_s, wb, m, keys) = settle(&db, start, load_s, wb0)?;
    let expected = 2 * rows as u64 + 1 + u64::from(keys_put > 0);
    if s.rows != rows as u64 || keys != expected {
        bail!(
            "check: imported {} rows and a full scan found {keys} keys, expected {rows} and {expected}",
            s.rows
        );
    }
    let reader = strata_import::table::TableReader::open(&db, "stock")?;
    let d = Dialect::csv();
    for line in &sample {
        let text = String::from_utf8_lossy(line);
        let f: Vec<&str> = text.split(',').collect();
        let pk = [f[1].to_string(), f[0].to_string()];
        let row = reader
            .get(&pk)?
            .context("check: a sampled row is missing")?;
        if reader.format_row(&row, &d) != text {
            bail!(
                "check: row {pk:?} read back as {}",
                reader.format_row(&row, &d)
            );
        }
    }
    db.close()?;
    let size = dir_bytes(&a.dir);
    let ((big, big_s), (big_l0, big_l0_s)) =
        *watch.largest.lock().unwrap_or_else(|e| e.into_inner());
    Ok(json!({"rows": rows, "load_s": load_s, "settle_s": settle_s,
           "load_settle_s": load_s + settle_s, "write_bytes": wb,
           "logical_bytes": logical, "write_amp": wb as f64 / logical as f64,
           "peak_l0_files": m.peak_l0_files, "peak_l0_sublevels": m.peak_l0_sublevels,
           "stall_s": m.stalls.iter().map(|s| s.micros).sum::<u64>() as f64 / 1e6,
           "size_bytes": size, "keys": keys, "ssts": s.indexes.iter().map(|i| i.files).sum::<usize>(),
           "peak_rss_bytes": peak, "memory_budget_bytes": memory,
           "spilled_bytes": s.spilled_bytes, "units": s.units,
           "progress_puts": keys_put, "compactions": m.compactions,
           "largest_compaction_bytes": big, "largest_compaction_s": big_s,
           "largest_l0_compaction_bytes": big_l0, "largest_l0_compaction_s": big_l0_s,
           "largest_l0_compaction_frac": big_l0 as f64 / size.max(1) as f64,
           "csv_mb_per_core_s": s.input_bytes as f64 / 1e6 / load_s / cores() as f64,
           "timeline": timeline}))
}

/// W1: the TPC-C stock import by write batches of 1,000 rows (`batch-*`)
/// or by 64 MiB sorted SSTs (`ingest-*`), then flush and settle; checks a
/// full scan's count and 1,000 primary rows read back.
fn w1(a: &Args) -> Result<()> {
    let variant = a.variant.as_deref().unwrap_or("batch");
    let ingest = match variant.split('-').next() {
        Some("batch") => false,
        Some("ingest") => true,
        Some("import") => return w1_import(a, variant),
        _ => bail!("w1 variant must start with batch or ingest, not {variant:?}"),
    };
    let f =
        std::fs::File::open(&a.input).with_context(|| format!("opening {}", a.input.display()))?;
    let db = open(&a.dir)?;
    let scratch = scratch_dir(a)?;
    let mut rng = StdRng::seed_from_u64(7);
    let mut sample: Vec<([u8; 18], Vec<u8>)> = Vec::new();
    let (mut rows, mut logical) = (0usize, 0u64);
    let mut b = WriteBatch::new();
    let mut buf: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let (mut buf_bytes, mut ssts) = (0usize, 0usize);
    let flush_buf = |buf: &mut Vec<(Vec<u8>, Vec<u8>)>, ssts: &mut usize| -> Result<()> {
        buf.sort_unstable_by(|x, y| x.0.cmp(&y.0));
        let path = scratch.join(format!("{ssts}.sst"));
        let mut w = SstWriter::create(&path, SstOptions::for_ingestion())?;
        for (k, v) in buf.iter() {
            w.put(k, v)?;
        }
        w.finish()?;
        db.ingest(&[&path], &ingest_options(a))?;
        buf.clear();
        *ssts += 1;
        Ok(())
    };
    let wb0 = write_bytes();
    let start = Instant::now();
    for line in std::io::BufReader::with_capacity(1 << 20, f).split(b'\n') {
        let line = line.with_context(|| format!("reading {}", a.input.display()))?;
        rows += 1;
        let (p, x) = stock_kvs(&line, &a.input, rows)?;
        logical += (p.len() + line.len() + x.len()) as u64;
        // Reservoir sample of 1,000 rows to read back.
        if sample.len() < 1000 {
            sample.push((p, line.clone()));
        } else {
            let j = rng.gen_range(0..rows);
            if j < 1000 {
                sample[j] = (p, line.clone());
            }
        }
        if ingest {
            buf_bytes += p.len() + line.len() + x.len();
            buf.push((p.to_vec(), line));
            buf.push((x.to_vec(), Vec::new()));
            if buf_bytes >= 64 << 20 {
                flush_buf(&mut buf, &mut ssts)?;
                buf_bytes = 0;
            }
        } else {
            b.put(p, &line);
            b.put(x, b"");
            if rows % 1000 == 0 {
                db.write(std::mem::take(&mut b), &WriteOptions::default())?;
            }
        }
        if rows % 10_000 == 0 {
            db.put(b"\x00stats", rows.to_string())?;
        }
    }
    if ingest && !buf.is_empty() {
        flush_buf(&mut buf, &mut ssts)?;
    } else if !b.is_empty() {
        db.write(b, &WriteOptions::default())?;
    }
    let load_s = start.elapsed().as_secs_f64();
    let (settle_s, wb, m, keys) = settle(&db, start, load_s, wb0)?;
    if keys != 2 * rows as u64 + 1 {
        bail!(
            "check: a full scan found {keys} keys, expected {}",
            2 * rows + 1
        );
    }
    for (k, line) in &sample {
        if db.get(k)?.as_deref() != Some(line.as_slice()) {
            bail!("check: a primary row read back wrong");
        }
    }
    db.close()?;
    let _ = std::fs::remove_dir_all(&scratch);
    emit(
        a,
        variant,
        json!({"rows": rows, "load_s": load_s, "settle_s": settle_s,
               "load_settle_s": load_s + settle_s, "write_bytes": wb,
               "logical_bytes": logical, "write_amp": wb as f64 / logical as f64,
               "peak_l0_files": m.peak_l0_files, "peak_l0_sublevels": m.peak_l0_sublevels,
               "stall_s": m.stalls.iter().map(|s| s.micros).sum::<u64>() as f64 / 1e6,
               "size_bytes": dir_bytes(&a.dir), "keys": keys, "ssts": ssts}),
    );
    Ok(())
}

/// W3: ingest latency over an overlapping memtable (or the control).
fn w3(a: &Args) -> Result<()> {
    let variant = a.variant.as_deref().unwrap_or("overlap");
    let base = match variant {
        "overlap" => 1_000,
        "control" => 20_000,
        v => bail!("w3 variant must be overlap or control, not {v:?}"),
    };
    let db = open(&a.dir)?;
    let scratch = scratch_dir(a)?;
    let mut lat = Vec::new();
    // `STRATA_BENCH_INGEST_TRACE=1`: each call's time and phases on
    // stderr, to see which round a p99 or maximum comes from and what it
    // waited for.
    let trace = std::env::var_os("STRATA_BENCH_INGEST_TRACE").is_some();
    for r in 0..a.rounds {
        for k in 0..10_000 {
            db.put(w3key(k), [b'v'; 100])?;
        }
        // 1,000 keys spread evenly over [base, base + 6,500).
        let keys: Vec<Vec<u8>> = (0..1000).map(|i| w3key(base + i * 13 / 2)).collect();
        let path = scratch.join(format!("{r}.sst"));
        write_sst(&path, &keys)?;
        let before = trace.then(|| (db.metrics(), put_trace::thread_switches()));
        let t = Instant::now();
        db.ingest(&[&path], &ingest_options(a))?;
        lat.push(t.elapsed().as_secs_f64() * 1e3);
        if let Some((b, (iv0, v0))) = before {
            // This call's phases: the cumulative figures' difference; and
            // how often the calling thread was preempted (involuntary
            // switches) or blocked (voluntary ones).
            let m = db.metrics();
            let (iv1, v1) = put_trace::thread_switches();
            let d = |after: u64, before: u64| after.saturating_sub(before);
            eprintln!(
                "w3 round {r}: ingest {:.3} ms (preempted {}, blocked {}; µs: prepare {}, of which the directory fsync {}; commit {}; MANIFEST fsync {})",
                lat[lat.len() - 1],
                iv1 - iv0,
                v1 - v0,
                d(m.ingest_prepare_micros, b.ingest_prepare_micros),
                d(m.ingest_dir_sync_micros, b.ingest_dir_sync_micros),
                d(m.ingest_commit_micros, b.ingest_commit_micros),
                d(m.ingest_manifest_sync_micros, b.ingest_manifest_sync_micros),
            );
        }
    }
    print_ingest_phases(&db);
    db.close()?;
    let _ = std::fs::remove_dir_all(&scratch);
    lat.sort_by(f64::total_cmp);
    emit(
        a,
        variant,
        json!({"rounds": a.rounds, "ingest_ms_p50": pct(&lat, 0.5),
               "ingest_ms_p99": pct(&lat, 0.99), "ingest_ms_max": lat.last().copied().unwrap_or(0.0)}),
    );
    Ok(())
}

/// W4: foreground Put latency while another thread ingests every 200 ms.
fn w4(a: &Args) -> Result<()> {
    let variant = a.variant.as_deref().unwrap_or("overlap").to_string();
    let prefix = match variant.as_str() {
        "overlap" => 0x84u8,
        "disjoint" => 0x85u8,
        "none" => 0, // the baseline: no ingester
        v => bail!("w4 variant must be none, disjoint or overlap, not {v:?}"),
    };
    let db = Arc::new(open(&a.dir)?);
    let scratch = scratch_dir(a)?;
    let stop = Arc::new(AtomicBool::new(false));
    let ingester = {
        let (db, stop, scratch) = (Arc::clone(&db), Arc::clone(&stop), scratch.clone());
        let opts = ingest_options(a);
        std::thread::spawn(move || -> Result<Vec<f64>> {
            let mut rng = StdRng::seed_from_u64(9);
            let mut lat = Vec::new();
            let mut round = 0;
            while prefix != 0 && !stop.load(Ordering::Relaxed) {
                let t0 = Instant::now();
                let mut keys: Vec<Vec<u8>> = (0..5000)
                    .map(|_| {
                        let mut k = vec![0u8; 17];
                        k[0] = prefix;
                        rng.fill(&mut k[1..]);
                        k
                    })
                    .collect();
                keys.sort();
                keys.dedup();
                let path = scratch.join(format!("ingest-{round}.sst"));
                write_sst(&path, &keys)?;
                let t = Instant::now();
                db.ingest(&[&path], &opts)?;
                lat.push(t.elapsed().as_nanos() as f64 / 1e3);
                round += 1;
                std::thread::sleep(Duration::from_millis(200).saturating_sub(t0.elapsed()));
            }
            Ok(lat)
        })
    };
    let mut rng = StdRng::seed_from_u64(4);
    let mut lat = Vec::new();
    let start = Instant::now();
    let total = Duration::from_secs_f64(a.seconds);
    let interval = Duration::from_secs_f64(1.0 / 20_000.0);
    let mut n = 0u32;
    // `STRATA_BENCH_PUT_TRACE=1`: what each Put did beside its latency
    // (stderr; see `put_trace`).
    let mut trace = std::env::var_os("STRATA_BENCH_PUT_TRACE").map(|_| Vec::new());
    let result = (|| -> Result<()> {
        while start.elapsed() < total {
            let mut k = [0u8; 17];
            k[0] = 0x84;
            rng.fill(&mut k[1..]);
            let before = trace.as_ref().map(|_| put_trace::Sample::now());
            let t = Instant::now();
            db.put(k, [b'v'; 100])?;
            let took = t.elapsed();
            lat.push(took.as_nanos() as f64 / 1e3);
            if let (Some(tr), Some(b)) = (trace.as_mut(), before) {
                tr.push(put_trace::Sample::now().since(&b, took));
            }
            n += 1;
            // Pace to 20,000 Puts/s against the schedule, not the last call.
            if let Some(wait) = (interval * n).checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        Ok(())
    })();
    stop.store(true, Ordering::Relaxed);
    let ing = ingester
        .join()
        .map_err(|_| anyhow::anyhow!("ingester thread panicked"))?;
    result?;
    let mut ing = ing?;
    // What the Puts waited on, for whoever reads stderr (the runner keeps
    // only the JSON line on stdout).
    let m = db.metrics();
    eprintln!(
        "longest write wait {} µs ({})",
        m.longest_write_wait_micros, m.longest_write_wait_cause
    );
    for w in &m.write_waits {
        eprintln!(
            "  {}: {} waits, max {} µs, histogram {:?}",
            w.cause, w.count, w.max_micros, w.histogram
        );
    }
    print_ingest_phases(&db);
    if let Some(tr) = trace {
        put_trace::report(tr);
    }
    let db = Arc::try_unwrap(db).map_err(|_| anyhow::anyhow!("database still shared"))?;
    db.close()?;
    let _ = std::fs::remove_dir_all(&scratch);
    lat.sort_by(f64::total_cmp);
    ing.sort_by(f64::total_cmp);
    emit(
        a,
        &variant,
        json!({"seconds": a.seconds, "puts": lat.len(),
               "put_us_p50": pct(&lat, 0.5), "put_us_p99": pct(&lat, 0.99),
               "put_us_p999": pct(&lat, 0.999), "put_us_p9999": pct(&lat, 0.9999),
               "put_us_max": lat.last().copied().unwrap_or(0.0),
               "ingests": ing.len(), "ingest_us_p50": pct(&ing, 0.5),
               "ingest_us_p99": pct(&ing, 0.99)}),
    );
    Ok(())
}

/// micro: the criterion cases of `crates/strata/benches/db.rs`, as one
/// driver run each (see bench/rocksdb/driver.cc `Micro` for the same).
fn micro(a: &Args) -> Result<()> {
    let v = a.variant.as_deref().unwrap_or("puts-1").to_string();
    // `puts-N-serial`: the same with `concurrent_memtable_writes` off (the
    // group's leader inserts every batch); `puts-N-pipelined`: with
    // `pipelined_commit` on (a group leaves the queue once its WAL record
    // is framed); for A/B runs in one binary.
    let (name, serial, pipelined) = if let Some(base) = v.strip_suffix("-serial") {
        (base.to_string(), true, false)
    } else if let Some(base) = v.strip_suffix("-pipelined") {
        (base.to_string(), false, true)
    } else {
        (v.clone(), false, false)
    };
    let db = Arc::new(open_with(&a.dir, |o| {
        o.concurrent_memtable_writes = !serial;
        o.pipelined_commit = pipelined;
    })?);
    let val = [b'v'; 100];
    let secs = a.seconds;
    let (ops, took) = if let Some(n) = name.strip_prefix("puts-") {
        let threads: u64 = n
            .parse()
            .ok()
            .filter(|&t| t >= 1)
            .with_context(|| format!("micro variant puts-N needs N >= 1, not {v}"))?;
        let start = Instant::now();
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let db = Arc::clone(&db);
                std::thread::spawn(move || -> Result<u64> {
                    let mut rng = StdRng::seed_from_u64(10 + t);
                    let mut n = 0;
                    while start.elapsed().as_secs_f64() < secs {
                        for _ in 0..100 {
                            let k: [u8; 16] = rng.gen();
                            db.put(k, val)?;
                            n += 1;
                        }
                    }
                    Ok(n)
                })
            })
            .collect();
        let mut total = 0;
        for h in hs {
            total += h.join().map_err(|_| anyhow::anyhow!("writer panicked"))??;
        }
        (total as f64, start.elapsed().as_secs_f64())
    } else if v == "get-memtable" || v == "get-files" {
        let n = 200_000usize;
        let mut rng = StdRng::seed_from_u64(3);
        let keys: Vec<[u8; 16]> = (0..n).map(|_| rng.gen()).collect();
        for k in &keys {
            db.put(k, val)?;
        }
        if v == "get-files" {
            db.compact_range(None, None)?;
            db.wait_for_compactions()?;
            for k in &keys {
                db.get(k)?;
            }
        }
        let (mut i, mut done) = (0usize, 0u64);
        let start = Instant::now();
        while start.elapsed().as_secs_f64() < secs {
            for _ in 0..1000 {
                i = (i + 7919) % n;
                if db.get(keys[i])?.is_none() {
                    bail!("key {i} is missing");
                }
                done += 1;
            }
        }
        (done as f64, start.elapsed().as_secs_f64())
    } else {
        bail!("micro variant must be puts-N[-serial], get-memtable or get-files, not {v:?}");
    };
    let db = Arc::try_unwrap(db).map_err(|_| anyhow::anyhow!("database still shared"))?;
    db.close()?;
    emit(
        a,
        &v,
        json!({"seconds": took, "ops": ops, "ops_per_s": ops / took, "ns_per_op": took * 1e9 / ops}),
    );
    Ok(())
}

fn main() {
    let r = parse().and_then(|a| match a.workload.as_str() {
        "w1" => w1(&a),
        "w2" => w2(&a),
        "w3" => w3(&a),
        "w4" => w4(&a),
        "w5" => w5(&a),
        "micro" => micro(&a),
        w => bail!("unknown workload {w:?} (w1, w2, w3, w4, w5, micro)"),
    });
    if let Err(e) = r {
        eprintln!("strata-bench: {e:#}");
        std::process::exit(1);
    }
}
