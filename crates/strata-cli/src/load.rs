//! `load`: `key ==> value` lines (the format `dump` prints, escaped text or
//! `--hex`) into a database, in write batches.
//!
//! Memory stays bounded whatever the input size: lines are read one at a
//! time into a reused buffer and written a batch at a time, so what the
//! process holds is the memtables (`--memtable-mib` × (1 + the immutable
//! queue, 4)), one batch and the block cache, not the input. A regular file
//! is read twice: a first pass checks every line, so a bad line fails the
//! load before anything is written; standard input, a pipe or a FIFO is
//! read once and a bad line stops the load after the rows before it, which
//! are kept (the error says how many). A write that fails (a full disk)
//! stops the load, and the error says which rows are known to be in the
//! database and the line to load again from (`Loaded`: the WAL is synced
//! once a second, so that is never unknown for long). At
//! the end the memtable is flushed to a table file (unless `--no-flush`),
//! so the next command does not replay the WAL. On a terminal, a progress
//! bar shows bytes read.
//!
//! Measured: a 1.03 GB input of 7,000,000 rows out of key order loaded
//! with a peak RSS of 133 MiB at the default memtable size
//! (`/usr/bin/time -v strata kv load --report-peak-rss db big.txt`); the
//! test `cli_safety::load_streams_in_bounded_memory_and_flushes` holds a
//! 120 MB input to the bound above with 2 MiB memtables.

use crate::codec::{self, Format};
use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::time::Instant;
use strata::{Options, WriteBatch, WriteOptions};

/// The block cache of a load (see `load`).
const LOAD_BLOCK_CACHE_BYTES: usize = 8 << 20;

/// How far a load got, for its error: the rows the database acknowledged
/// and the rows a synced write made durable, each with its input line.
///
/// After an error, an acknowledged write is known to be in the database
/// only if the close that follows succeeds (it syncs the WAL); if the
/// close fails too (a full disk, an I/O error), writes the WAL had not
/// yet handed to the operating system may be gone, and only the synced
/// ones are known to be there. Loading the same rows again is harmless
/// (the same keys get the same values), so the error names the line to
/// load again from.
#[derive(Default)]
struct Loaded {
    acked: u64,
    acked_line: u64,
    synced: u64,
    synced_line: u64,
}

impl Loaded {
    /// A batch of `n` rows ending at `line` was acknowledged (and synced).
    fn written(&mut self, n: u64, line: u64, synced: bool) {
        self.acked += n;
        self.acked_line = line;
        if synced {
            self.synced = self.acked;
            self.synced_line = line;
        }
    }

    /// The load's error `e`, saying what is in the database given how the
    /// close after it went.
    fn failed(&self, e: anyhow::Error, closed: strata::Result<()>) -> anyhow::Error {
        match closed {
            Ok(()) => e.context(format!(
                "the {} rows before the error (to line {}) were loaded",
                self.acked, self.acked_line
            )),
            Err(c) if self.synced == self.acked => e.context(format!(
                "closing the database failed too ({c}); the {} rows before the error (to \
                 line {}) were synced, so they are in it: load again from line {}",
                self.acked,
                self.acked_line,
                self.acked_line + 1
            )),
            Err(c) => e.context(format!(
                "closing the database failed too ({c}), so of the {} rows the database \
                 acknowledged (to line {}) only the first {} (to line {}) are known to be \
                 in it, synced; load again from line {} (rows loaded twice end the same)",
                self.acked,
                self.acked_line,
                self.synced,
                self.synced_line,
                self.synced_line + 1
            )),
        }
    }
}

#[derive(Args)]
pub struct LoadArgs {
    /// Database directory (created if missing).
    pub db: PathBuf,
    /// Input file (`key ==> value` lines); standard input if absent or `-`.
    pub file: Option<PathBuf>,
    /// Keys and values are hex (`0xKEY ==> 0xVALUE`).
    #[arg(long)]
    pub hex: bool,
    /// Rows per write batch.
    #[arg(long, default_value_t = 1000)]
    pub batch_rows: usize,
    /// Leave the loaded rows in the WAL and memtable instead of flushing
    /// them to a table file at the end.
    #[arg(long)]
    pub no_flush: bool,
    /// Memtable size in MiB. Peak memory is at most about 5 memtables (the
    /// one filling and up to 4 waiting for their flush) plus up to about
    /// 72 MiB for the rest: the 8 MiB block cache, compactions and the
    /// program itself (measured: 78 MB at 8 MiB on 120 MB of input, 89 MB
    /// on 590 MB).
    #[arg(long, default_value_t = 64)]
    pub memtable_mib: usize,
    /// Print the process's peak resident memory (VmHWM) to stderr at the
    /// end (tests check the memory bound with it).
    #[arg(long, hide = true)]
    pub report_peak_rss: bool,
    /// How often the WAL is synced during the load, in milliseconds (see
    /// [`Loaded`]; tests set 0, a sync with every batch).
    #[arg(long, hide = true, default_value_t = 1000)]
    pub sync_interval_ms: u64,
}

/// Calls `row` with each row of `input` and its line, streaming; `name` is
/// for errors.
fn for_each_row(
    input: impl Read,
    name: &str,
    format: Format,
    progress: &ProgressBar,
    mut row: impl FnMut(u64, Vec<u8>, Vec<u8>) -> Result<()>,
) -> Result<u64> {
    let mut r = BufReader::with_capacity(1 << 16, input);
    let mut buf = Vec::new();
    let (mut lineno, mut rows) = (0u64, 0u64);
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("reading {name}"))?;
        if n == 0 {
            return Ok(rows);
        }
        lineno += 1;
        progress.inc(n as u64);
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        if buf.is_empty() {
            continue;
        }
        let line = std::str::from_utf8(&buf)
            .map_err(|e| anyhow::anyhow!("{name}:{lineno}: not UTF-8 text ({e})"))?;
        let (k, v) = codec::split_line(line, format).with_context(|| format!("{name}:{lineno}"))?;
        row(lineno, k, v).with_context(|| format!("{name}:{lineno}"))?;
        rows += 1;
    }
}

fn open_input(a: &LoadArgs) -> Result<(String, Box<dyn Read>, Option<u64>)> {
    Ok(match &a.file {
        Some(p) => {
            let f = std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?;
            let md = f.metadata().ok();
            if md.as_ref().is_some_and(|m| m.is_dir()) {
                bail!(
                    "{} is a directory, not a file of `key ==> value` lines",
                    p.display()
                );
            }
            let len = md.map(|m| m.len());
            (p.display().to_string(), Box::new(f), len)
        }
        None => (
            "<stdin>".to_string(),
            Box::new(std::io::stdin().lock()),
            None,
        ),
    })
}

fn progress_bar(len: Option<u64>, what: &str) -> ProgressBar {
    let pb = match len {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::no_length(),
    };
    // Drawn on stderr only when it is a terminal.
    pb.set_style(
        ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(what.to_string());
    pb
}

/// Keeps glibc returning freed memtable arenas to the system. glibc serves
/// large blocks with `mmap` but raises that threshold (up to 32 MiB) each
/// time such a block is freed; after the first flushed memtable, arenas come
/// from the heap, where they fragment and stay resident. Fixing the
/// threshold at glibc's default (128 KiB) keeps every arena an `mmap` that
/// `free` unmaps: a 1 GB load peaked at 65 MiB instead of 108 MiB.
pub(crate) fn keep_large_allocations_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before the
    // database threads start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

/// The largest `--memtable-mib`: a memtable is one arena in memory, and
/// a load may hold up to 5 (the active one and 4 immutable ones).
const MAX_MEMTABLE_MIB: usize = 4096;

pub fn load(mut a: LoadArgs) -> Result<()> {
    if !(1..=MAX_MEMTABLE_MIB).contains(&a.memtable_mib) {
        bail!(
            "--memtable-mib {}: must be from 1 to {MAX_MEMTABLE_MIB}",
            a.memtable_mib
        );
    }
    // `-` is standard input, as for `strata import`.
    if a.file.as_deref() == Some(std::path::Path::new("-")) {
        a.file = None;
    }
    keep_large_allocations_mapped();
    if a.batch_rows == 0 {
        bail!("--batch-rows must be at least 1");
    }
    let format = if a.hex { Format::Hex } else { Format::Text };
    // A regular file is read twice; a pipe, a FIFO or `/dev/stdin` can be
    // read only once (a first pass would consume it, and the load would
    // then find nothing), so it is streamed like standard input.
    let rereadable = a
        .file
        .as_ref()
        .is_some_and(|f| std::fs::metadata(f).is_ok_and(|m| m.is_file()));
    if rereadable {
        // First pass: every line must parse before anything is written.
        let (name, input, len) = open_input(&a)?;
        let pb = progress_bar(len, "checking");
        for_each_row(input, &name, format, &pb, |_, _, _| Ok(()))?;
        pb.finish_and_clear();
    }
    let opts = Options {
        memtable_size: a.memtable_mib << 20,
        // A load reads nothing; only compactions fill the cache (they read
        // through it), and a big cache would grow with the data loaded.
        block_cache_bytes: LOAD_BLOCK_CACHE_BYTES,
        ..Options::default()
    };
    // The input is opened first: a missing or unreadable file must fail the
    // load before the database is created.
    let (name, input, len) = open_input(&a)?;
    let db = crate::open::or_create(&a.db, opts)?;
    let pb = progress_bar(len, "loading");
    let start = Instant::now();
    let mut batch = WriteBatch::new();
    let mut batch_line = 0u64;
    let mut done = Loaded::default();
    let mut last_sync = Instant::now();
    let sync_interval = std::time::Duration::from_millis(a.sync_interval_ms);
    // A batch the database refused: nothing more is written after it.
    let mut write_failed = false;
    let rows = for_each_row(input, &name, format, &pb, |lineno, k, v| {
        batch.put(k, v);
        batch_line = lineno;
        if batch.len() >= a.batch_rows {
            // A batch written with `sync` once a second (by default): an
            // fsync a second costs nothing a load would notice, and it
            // bounds what an error can leave unknown (see `Loaded`).
            let sync = last_sync.elapsed() >= sync_interval;
            let n = batch.len() as u64;
            if let Err(e) = db.write(std::mem::take(&mut batch), &WriteOptions { sync }) {
                write_failed = true;
                return Err(e.into());
            }
            done.written(n, lineno, sync);
            if sync {
                last_sync = Instant::now();
            }
        }
        Ok(())
    });
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => {
            // Streamed input's bad line (a checked file cannot fail here
            // but on writing): the rows before it are written too.
            pb.finish_and_clear();
            if !write_failed && !batch.is_empty() {
                let n = batch.len() as u64;
                if db.write(batch, &WriteOptions::default()).is_ok() {
                    done.written(n, batch_line, false);
                }
            }
            return Err(done.failed(e, db.close()));
        }
    };
    let n = batch.len() as u64;
    let end = db.write(batch, &WriteOptions::default()).and_then(|()| {
        done.written(n, batch_line, false);
        if a.no_flush {
            Ok(())
        } else {
            db.flush()
        }
    });
    pb.finish_and_clear();
    match end {
        Ok(()) => {
            if let Err(c) = db.close() {
                return Err(done.failed(anyhow::anyhow!("the load's last step"), Err(c)));
            }
        }
        Err(e) => return Err(done.failed(e.into(), db.close())),
    }
    let secs = start.elapsed().as_secs_f64();
    outln!(
        "loaded {rows} rows in {secs:.3}s ({:.0} rows/s, {} rows per batch){}",
        rows as f64 / secs.max(1e-9),
        a.batch_rows,
        if a.no_flush { "; not flushed" } else { "" }
    )?;
    if a.report_peak_rss {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let hwm = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .unwrap_or("VmHWM: unknown");
        eprintln!("peak RSS {}", hwm.trim_start_matches("VmHWM:").trim());
    }
    Ok(())
}
