//! `strata import`: CSV or TSV files into a table, through the
//! `strata-import` pipeline (one atomic ingestion), with a progress bar on a
//! terminal, plain progress lines otherwise, and a summary (or `--json`).

use crate::open;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::Options;
use strata_import::csv::dialect::{Dialect, Header};
use strata_import::csv::input;
use strata_import::pipeline::{OnDuplicate, Phase, Progress};
use strata_import::{ImportOptions, Mode, Schema, Summary};

/// Input formats.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// Comma-separated, `"` quotes, an unquoted empty field is NULL
    /// (unless --null; `""` is the empty string).
    Csv,
    /// PostgreSQL's text format (COPY TO without CSV): tab-separated, no
    /// quoting, `\N` is NULL, backslash escapes (`\t`, `\n`, `\\`, octal,
    /// hex) decoded.
    Tsv,
}

/// What `--header` does.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum HeaderArg {
    /// Skip the first record of every file.
    Skip,
    /// Map the file's columns to the table's by the names in the first record.
    Match,
}

/// What `--on-duplicate` does.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OnDuplicateArg {
    /// Fail the import, naming both rows (nothing is written).
    Error,
    /// Keep the first row with a primary key (the table's, else the
    /// earliest in the input) and skip the rest.
    Ignore,
    /// Keep the last row of the input with a primary key, over the table's
    /// row (whose index entries go with it).
    Replace,
}

/// What `--mode` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Sort every index externally, then one atomic ingestion.
    Pipeline,
    /// Ingest each memory buffer as it fills (overlapping files).
    Direct,
    /// Write batches of --rows-per-batch rows through the WAL and memtable.
    Batch,
}

/// Arguments of `strata import`.
#[derive(Args)]
#[command(
    after_help = "Atomicity: in the default mode (pipeline) the import is all or nothing: the \
table and every row appear in one atomic ingestion, or (on any error, Ctrl-C or kill) the \
database is left exactly as it was.\n\n\
--mode direct and --mode batch are NOT all or nothing: each unit (one ingestion of a full \
memory buffer, or one write batch) is atomic, and the units before a failure stay. On an \
error, the rows written into a table the import created are deleted again (the table stays \
absent); rows written into a table that already existed stay, and re-running with \
--on-duplicate ignore or replace completes them. After Ctrl-C or a kill, a new table's \
written rows stay without a catalog entry (invisible to table commands) until the next \
import that creates a table deletes them; an existing table keeps the units written.\n\n\
--header takes a value, skip or match (--header skip, or --header=skip); a bare --header \
is an error."
)]
pub struct ImportArgs {
    /// Database directory (created if missing).
    pub db: PathBuf,
    /// Input files: `-` is standard input, patterns are expanded, `.gz` and
    /// `.zst` are decompressed.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// SQL file with CREATE TABLE / CREATE INDEX statements.
    #[arg(long)]
    pub schema: PathBuf,
    /// The table of the schema to import into.
    #[arg(long)]
    pub table: String,
    /// Input format (sets the dialect's defaults).
    #[arg(long, value_enum, default_value = "csv")]
    pub format: Format,
    /// Field delimiter (one byte; `\t` or `tab` for a tab).
    #[arg(long)]
    pub delimiter: Option<String>,
    /// Quote byte.
    #[arg(long)]
    pub quote: Option<String>,
    /// Escape byte inside quotes: it and the byte after it read as that
    /// byte (`\"` a quote). Default, and the same when it is the quote
    /// byte: a doubled quote is one quote.
    #[arg(long)]
    pub escape: Option<String>,
    /// The first record of each file is a header: `skip` it, or `match`
    /// it to map columns by name. The value is required (a bare
    /// `--header` used to take the next file name as its value).
    #[arg(long, value_enum)]
    pub header: Option<HeaderArg>,
    /// The field text that means NULL (e.g. `\N`); a quoted field is
    /// never NULL, whatever its text.
    #[arg(long)]
    pub null: Option<String>,
    /// Memory budget of the whole import (reader chunks, parsers, sort
    /// buffers, merge and SST writers), e.g. 64MiB or 2GiB (default: a
    /// quarter of RAM).
    #[arg(long)]
    pub memory: Option<String>,
    /// Bad rows to tolerate before failing (written to --rejects if given;
    /// without it they are only counted).
    #[arg(long, default_value_t = 0)]
    pub max_bad_rows: u64,
    /// File for rejected records (reasons go to FILE.reasons). Neither may
    /// exist: an import never overwrites a file, and refuses an existing
    /// one before anything is read.
    #[arg(long)]
    pub rejects: Option<PathBuf>,
    /// A primary key already in the table or elsewhere in the input: fail,
    /// keep the first row (`ignore`), or keep the last row of the input
    /// (`replace`, by input order; the replaced row's index entries are
    /// deleted). A unique secondary key shared by two rows is always an
    /// error.
    #[arg(long, value_enum, default_value = "error")]
    pub on_duplicate: OnDuplicateArg,
    /// How rows reach the database (see Atomicity below): `pipeline`
    /// (external sort, one atomic ingestion), `direct` (an ingestion per
    /// full buffer) or `batch` (write batches through the WAL).
    #[arg(long, value_enum, default_value = "pipeline")]
    pub mode: ModeArg,
    /// Rows per write batch in --mode batch.
    #[arg(long, default_value_t = strata_import::Mode::DEFAULT_ROWS_PER_BATCH)]
    pub rows_per_batch: usize,
    /// Parser threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// No progress and no summary.
    #[arg(long)]
    pub quiet: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

fn one_byte(what: &str, s: &str) -> Result<u8> {
    match s {
        "\\t" | "tab" => Ok(b'\t'),
        _ if s.len() == 1 => Ok(s.as_bytes()[0]),
        _ => bail!("--{what} must be one byte, not {s:?}"),
    }
}

/// Parses `64MiB`, `2GiB`, `512M`, `1000` (bytes).
pub fn parse_size(s: &str) -> Result<usize> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    if n.is_empty() {
        bail!("{s:?} is not a size: it must start with a number, e.g. 64MiB, 2GiB or 1000000");
    }
    let n: usize = n.parse().with_context(|| format!("{s:?} is not a size"))?;
    let mul: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => bail!("{s:?}: unknown unit (use KiB, MiB or GiB)"),
    };
    n.checked_mul(mul).context("size too large")
}

/// The smallest `--memory` accepted.
const MIN_MEMORY: usize = 1 << 20;

/// Parses an import's `--memory` (`strata import`, `strata demo`).
pub fn parse_memory(m: &str) -> Result<usize> {
    let n = parse_size(m)?;
    // Below this the budget means nothing: a chunk in flight alone is
    // larger, and the summary would report a budget it broke.
    if n < MIN_MEMORY {
        bail!("--memory {m}: an import needs at least 1 MiB");
    }
    Ok(n)
}

/// Peak resident memory of this process (VmHWM), in bytes.
pub fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(l.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// Builds the dialect from the options.
fn dialect(a: &ImportArgs) -> Result<Dialect> {
    let mut d = match a.format {
        Format::Csv => Dialect::csv(),
        Format::Tsv => Dialect::tsv(),
    };
    if let Some(x) = &a.delimiter {
        d.delimiter = one_byte("delimiter", x)?;
    }
    if let Some(x) = &a.quote {
        d.quote = Some(one_byte("quote", x)?);
    }
    if let Some(x) = &a.escape {
        d.escape = Some(one_byte("escape", x)?);
    }
    if let Some(x) = &a.null {
        d.null = x.clone();
    }
    d.header = match a.header {
        None => Header::None,
        Some(HeaderArg::Skip) => Header::Skip,
        Some(HeaderArg::Match) => Header::Match,
    };
    d.check().map_err(anyhow::Error::msg)?;
    Ok(d)
}

/// Runs `strata import`.
pub fn run(a: ImportArgs) -> Result<()> {
    let sql = std::fs::read_to_string(&a.schema)
        .with_context(|| format!("reading schema {}", a.schema.display()))?;
    let schema = Schema::parse(&sql).with_context(|| a.schema.display().to_string())?;
    let Some(table) = schema.table(&a.table) else {
        // Never empty: `Schema::parse` refuses a schema without a table.
        let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
        bail!(
            "{} defines no table {} (it defines: {})",
            a.schema.display(),
            a.table,
            names.join(", ")
        );
    };
    // The rejects file is written when the first bad row arrives: it must
    // not be the schema file (the import checks it is not an input and not
    // inside the database).
    if let (Some(r), Ok(schema_file)) = (&a.rejects, a.schema.canonicalize()) {
        for target in [r.clone(), strata_import::pipeline::reasons_path(r)] {
            if target.canonicalize().is_ok_and(|t| t == schema_file) {
                bail!(
                    "the rejects file {} is the schema file {}",
                    target.display(),
                    a.schema.display()
                );
            }
        }
    }
    let inputs = input::expand(&a.files)?;
    let total: Option<u64> = inputs.iter().map(|i| i.size()).sum();
    let memory = match &a.memory {
        Some(m) => parse_memory(m)?,
        None => strata_import::budget::default_memory(),
    };
    if a.rows_per_batch == 0 {
        bail!("--rows-per-batch must be at least 1");
    }
    let progress = Arc::new(Progress::default());
    let opts = ImportOptions {
        dialect: dialect(&a)?,
        memory,
        threads: a.threads.unwrap_or(0),
        max_bad_rows: a.max_bad_rows,
        rejects: a.rejects.clone(),
        progress: Some(Arc::clone(&progress)),
        on_duplicate: match a.on_duplicate {
            OnDuplicateArg::Error => OnDuplicate::Error,
            OnDuplicateArg::Ignore => OnDuplicate::Ignore,
            OnDuplicateArg::Replace => OnDuplicate::Replace,
        },
        mode: match a.mode {
            ModeArg::Pipeline => Mode::Pipeline,
            ModeArg::Direct => Mode::Direct,
            ModeArg::Batch => Mode::Batch {
                rows_per_batch: a.rows_per_batch,
            },
        },
        ..ImportOptions::default()
    };
    crate::load::keep_large_allocations_mapped();
    // The block cache only fills when the table has rows (duplicate
    // lookups); keep it within the budget too.
    let db_opts = Options {
        block_cache_bytes: Options::default().block_cache_bytes.min(memory / 8),
        ..Options::default()
    };
    // A failed import leaves the file system as it found it.
    let (db, created) = open::or_create_undoable(&a.db, db_opts)?;
    let start = Instant::now();
    let show = !a.quiet && !a.json;
    let summary = std::thread::scope(|s| {
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        if show {
            let done = Arc::clone(&done);
            let progress = Arc::clone(&progress);
            s.spawn(move || report_progress(&progress, total, &done));
        }
        let r = strata_import::import(&db, table, &inputs, &opts);
        done.store(true, Ordering::Relaxed);
        r
    });
    let summary = match summary {
        Ok(s) => s,
        Err(e) => return Err(created.undo(db, e.into())),
    };
    let elapsed = start.elapsed();
    let metrics = db.metrics();
    let levels: Vec<usize> = metrics.levels.iter().map(|l| l.files).collect();
    db.close()?;
    let printed = if a.json {
        outln!("{}", json_summary(&summary, elapsed, &levels))
    } else if !a.quiet {
        print_summary(&summary, elapsed, &levels, a.rejects.as_deref())
    } else {
        Ok(())
    };
    printed.context("the import committed, but its summary could not be printed")
}

/// Progress: a bar on a terminal, a plain line every 2 s otherwise.
fn report_progress(p: &Progress, total: Option<u64>, done: &std::sync::atomic::AtomicBool) {
    let start = Instant::now();
    let line = |p: &Progress| {
        let bytes = p.bytes.load(Ordering::Relaxed);
        let rows = p.rows.load(Ordering::Relaxed);
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        format!(
            "{}: {} rows, {:.1} MB read, {:.0} rows/s, {:.1} MB/s",
            Phase::from_u8(p.phase.load(Ordering::Relaxed)).name(),
            rows,
            bytes as f64 / 1e6,
            rows as f64 / secs,
            bytes as f64 / 1e6 / secs
        )
    };
    if std::io::stderr().is_terminal() {
        let bar = match total {
            Some(n) => ProgressBar::new(n),
            None => ProgressBar::no_length(),
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {bytes}/{total_bytes} ({eta}) {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        while !done.load(Ordering::Relaxed) {
            bar.set_position(p.bytes.load(Ordering::Relaxed));
            bar.set_message(line(p));
            std::thread::sleep(Duration::from_millis(100));
        }
        bar.finish_and_clear();
    } else {
        let mut last = Instant::now();
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            if last.elapsed() >= Duration::from_secs(2) {
                eprintln!("{}", line(p));
                last = Instant::now();
            }
        }
    }
}

/// Prints the summary of an import for people.
/// `rejects`: the `--rejects` file, named in the bad-row line.
pub fn print_summary(
    s: &Summary,
    elapsed: Duration,
    levels: &[usize],
    rejects: Option<&std::path::Path>,
) -> Result<()> {
    outln!(
        "imported {} rows into {} ({}) from {:.1} MB in {:.2} s ({:.0} rows/s)",
        s.rows,
        s.table,
        if s.created {
            "new table"
        } else {
            "existing table"
        },
        s.input_bytes as f64 / 1e6,
        elapsed.as_secs_f64(),
        s.rows as f64 / elapsed.as_secs_f64().max(1e-6)
    )?;
    if s.bad_rows > 0 {
        match rejects {
            Some(f) => outln!(
                "rejected {} bad rows: the records are in {}, the reasons in {}.reasons",
                s.bad_rows,
                f.display(),
                f.display()
            )?,
            None => outln!(
                "rejected {} bad rows (not kept: --rejects FILE keeps them and their reasons)",
                s.bad_rows
            )?,
        }
    }
    if s.duplicates_ignored > 0 {
        outln!(
            "skipped {} input rows whose primary key another row won",
            s.duplicates_ignored
        )?;
    }
    if s.replaced > 0 {
        outln!("replaced {} rows of the table", s.replaced)?;
    }
    if s.units > 1 {
        outln!("wrote {} units (ingestions or write batches)", s.units)?;
    }
    outln!(
        "{:<24} {:>12} {:>6} {:>12} {:>12} {:>9}",
        "index",
        "kvs",
        "files",
        "sst bytes",
        "spilled",
        "in order"
    )?;
    for ix in &s.indexes {
        outln!(
            "{:<24} {:>12} {:>6} {:>12} {:>12} {:>9}",
            ix.name,
            ix.kvs,
            ix.files,
            ix.file_bytes,
            ix.spilled_bytes,
            if ix.in_order { "yes" } else { "no" }
        )?;
    }
    outln!(
        "phases: read+parse+sort {:.2} s, merge+write {:.2} s, ingest {:.2} s",
        s.read_parse.as_secs_f64(),
        s.merge_write.as_secs_f64(),
        s.ingest.as_secs_f64()
    )?;
    if let Some(b) = &s.budget {
        // The default budget is a quarter of the machine's memory, which
        // read beside a tiny import looks like what it took: say it is a
        // ceiling (the next line has what was used).
        let origin = if b.total == strata_import::budget::default_memory() {
            " (the default ceiling, a quarter of this machine's memory; --memory sets it)"
        } else {
            ""
        };
        outln!(
            "memory budget {:.1} MB{origin}: chunks in flight {:.1} MB ({} KiB chunks), writers {:.1} MB, sort buffers {:.1} MB{}",
            b.total as f64 / 1e6,
            b.chunks as f64 / 1e6,
            b.chunk_size >> 10,
            b.writers as f64 / 1e6,
            b.sort as f64 / 1e6,
            if b.written > 0 {
                format!(", filter of written keys {:.1} MB", b.written as f64 / 1e6)
            } else {
                String::new()
            }
        )?;
    }
    outln!(
        "memory: peak sort buffers {:.1} MB, peak RSS {}; spilled {:.1} MB; write amplification {}",
        s.peak_buffer_bytes as f64 / 1e6,
        peak_rss().map_or("?".to_string(), |b| format!("{:.1} MB", b as f64 / 1e6)),
        s.spilled_bytes as f64 / 1e6,
        match s.write_amplification() {
            None => "- (no table files ingested)".to_string(),
            Some(w) => format!("{w:.2}"),
        }
    )?;
    let mut landed = std::collections::BTreeMap::new();
    for l in s.levels.iter().flatten() {
        *landed.entry(*l).or_insert(0usize) += 1;
    }
    let landed: Vec<String> = landed.iter().map(|(l, n)| format!("L{l}: {n}")).collect();
    let tree: Vec<String> = levels
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(l, n)| format!("L{l}: {n}"))
        .collect();
    // A small import's files are applied as a write batch by the database
    // (`IngestOptions::small_file_bytes`), `--mode batch` writes batches:
    // either way no file is counted for them in the table above.
    let batches = match (s.batch_units, s.units) {
        (0, _) => None,
        (1, 0 | 1) => Some("applied as a write batch".to_string()),
        (n, u) => Some(format!("{n} of {u} units applied as write batches")),
    };
    let ingested =
        (!landed.is_empty()).then(|| format!("ingested files landed on {}", landed.join(", ")));
    outln!(
        "{}; the tree now holds {}",
        match (ingested, batches) {
            (Some(i), Some(b)) => format!("{i}; {b}"),
            (Some(i), None) => i,
            (None, Some(b)) => b,
            (None, None) => "nothing written".to_string(),
        },
        if tree.is_empty() {
            "no table files (the rows are in the write-ahead log and memtable)".to_string()
        } else {
            tree.join(", ")
        }
    )
}

fn json_summary(s: &Summary, elapsed: Duration, levels: &[usize]) -> serde_json::Value {
    serde_json::json!({
        "table": s.table,
        "created": s.created,
        "rows": s.rows,
        "bad_rows": s.bad_rows,
        "duplicates_ignored": s.duplicates_ignored,
        "replaced": s.replaced,
        "units": s.units,
        "batch_units": s.batch_units,
        "input_bytes": s.input_bytes,
        "seconds": elapsed.as_secs_f64(),
        "phases": {
            "read_parse_sort": s.read_parse.as_secs_f64(),
            "merge_write": s.merge_write.as_secs_f64(),
            "ingest": s.ingest.as_secs_f64(),
        },
        "indexes": s.indexes.iter().map(|i| serde_json::json!({
            "name": i.name,
            "kvs": i.kvs,
            "files": i.files,
            "sst_bytes": i.file_bytes,
            "spilled_bytes": i.spilled_bytes,
            "in_order": i.in_order,
        })).collect::<Vec<_>>(),
        "peak_sort_buffer_bytes": s.peak_buffer_bytes,
        "memory_budget_bytes": s.budget.map(|b| b.total),
        "sort_budget_bytes": s.budget.map(|b| b.sort),
        "written_filter_budget_bytes": s.budget.map(|b| b.written),
        "peak_rss_bytes": peak_rss(),
        "spilled_bytes": s.spilled_bytes,
        // None (null) when no file was ingested: nothing to amplify.
        "write_amplification": s.write_amplification(),
        "ingested_levels": s.levels,
        "files_per_level": levels,
    })
}
