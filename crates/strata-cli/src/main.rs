//! The `strata` command: the demo, table commands (`import_cmd`: import;
//! `table_cmd`: get, scan, count, tables), the raw key-value commands under
//! `strata kv` (one file per group: `kv`, `scan`, `load`), `ingest_cmd`,
//! `ingest_table_cmd` (table bundles),
//! `lsm`, SST tools (`sst_cmd`) and benchmarks (`bench`). `stress`, the
//! crash test's writer, is hidden.
//!
//! Commands that only read (`get`, `scan`, `count`, `tables`, `kv get`,
//! `kv scan`, `kv dump`, `lsm`) never create a
//! database: a missing path, a file or a directory that is not a Strata
//! database is an error and the file system is left as it was.

/// `println!` that gives an error instead of a panic when standard output
/// is closed or full (`strata tables db | head -1`, `> /dev/full`): a
/// command that already committed (an import) must not end in a panic, and
/// a closed pipe ends the command quietly (`main`'s `is_broken_pipe`).
/// Evaluates to `anyhow::Result<()>`.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!($crate::stdout::lock(), $($arg)*).map_err(anyhow::Error::new)
    }};
}

/// `print!` as [`outln!`] is `println!`.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!($crate::stdout::lock(), $($arg)*).map_err(anyhow::Error::new)
    }};
}

mod bench;
mod check_cmd;
mod checkpoint_cmd;
mod codec;
mod crash_cmd;
mod demo;
mod gen;
mod hex;
mod import_cmd;
mod ingest_cmd;
mod ingest_table_cmd;
mod kv;
mod load;
mod lsm;
mod open;
mod repair_cmd;
mod scan;
mod sst_cmd;
mod stdout;
mod stress;
mod stress_keys;
mod table_cmd;
mod tpcc;
mod viz_cmd;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "Strata: an LSM key-value engine built for bulk loading",
    after_help = "Keys and values on the command line and in load/dump files are escaped \
text (\\n, \\t, \\\\, \\xHH; the > of ==> as \\x3e) or hex with --hex."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The main job end to end: generate TPC-C stock, import it, read it back, show the tree.
    Demo(demo::DemoArgs),
    /// Inspect, verify and write SST files.
    #[command(subcommand)]
    Sst(sst_cmd::SstCmd),
    /// Import CSV or TSV files into a table, all or nothing.
    Import(import_cmd::ImportArgs),
    /// Print one row of a table by primary key, as a CSV line.
    Get(table_cmd::GetArgs),
    /// Print rows of a table in primary-key or index order, as CSV lines.
    Scan(table_cmd::ScanArgs),
    /// Print the number of rows of a table.
    Count(table_cmd::CountArgs),
    /// List the tables: columns, indexes and row counts.
    Tables {
        /// Database directory (must exist).
        db: PathBuf,
    },
    /// Raw key-value commands: get, put, delete, scan, dump, load.
    #[command(subcommand)]
    Kv(KvCmd),
    /// Ingest SST files (written for ingestion, by Strata or RocksDB).
    Ingest(ingest_cmd::IngestArgs),
    /// Ingest a table bundle (SSTs and strata-bundle.json, e.g. from Spark) as a new table, in one step.
    IngestTable(ingest_table_cmd::IngestTableArgs),
    /// Print the shape of the tree and its history (from MANIFEST and EVENTS).
    Lsm {
        /// Database directory (must exist).
        db: PathBuf,
    },
    /// Copy a database into a new directory, openable on its own (tables hard-linked where possible).
    Checkpoint(checkpoint_cmd::CheckpointArgs),
    /// Salvage a database that will not open (damaged MANIFEST or CURRENT,
    /// missing tables) and report exactly what was lost, including any SQL
    /// table whose indexes no longer match its rows.
    Repair(repair_cmd::RepairArgs),
    /// Verify every checksum and invariant of a database, and that each SQL
    /// table's indexes hold one entry per row; exit 1 on a problem.
    Check(check_cmd::CheckArgs),
    /// Crash-test driver: SIGKILL and simulated power cuts for --duration seconds.
    CrashTest(crash_cmd::CrashTestArgs),
    /// Write the LSM visualiser's page: the tree's history as one HTML file.
    Viz(viz_cmd::VizArgs),
    /// Run a comparison workload (shared/workloads/README.md).
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// Test tool: write keys until killed (the crash test's child).
    #[command(hide = true)]
    Stress(stress::StressArgs),
}

/// The raw key-value commands (keys and values as bytes, no tables).
#[derive(Subcommand)]
enum KvCmd {
    /// Print the value of a key.
    Get(kv::KeyArgs),
    /// Write one key (synced; creates the database if missing).
    Put(kv::PutArgs),
    /// Delete one key (synced).
    Delete(kv::KeyArgs),
    /// Print `key ==> value` lines in key order (bounds, prefix, reverse).
    Scan(scan::ScanArgs),
    /// Print every entry as `key ==> value` (the lines `load` reads).
    Dump(scan::DumpArgs),
    /// Load `key ==> value` lines (the format of `dump` and `ldb dump`).
    Load(load::LoadArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Demo(a) => demo::run(a),
        Cmd::Sst(c) => sst_cmd::run(c),
        Cmd::Import(a) => import_cmd::run(a),
        Cmd::Get(a) => table_cmd::get(a),
        Cmd::Scan(a) => table_cmd::scan(a),
        Cmd::Count(a) => table_cmd::count(a),
        Cmd::Tables { db } => table_cmd::tables(&db),
        Cmd::Kv(KvCmd::Get(a)) => kv::get(a),
        Cmd::Kv(KvCmd::Put(a)) => kv::put(a),
        Cmd::Kv(KvCmd::Delete(a)) => kv::delete(a),
        Cmd::Kv(KvCmd::Scan(a)) => scan::scan(a),
        Cmd::Kv(KvCmd::Dump(a)) => scan::dump(a),
        Cmd::Kv(KvCmd::Load(a)) => load::load(a),
        Cmd::Ingest(a) => ingest_cmd::ingest(a),
        Cmd::IngestTable(a) => ingest_table_cmd::run(a),
        Cmd::Lsm { db } => lsm::lsm(&db),
        Cmd::Checkpoint(a) => checkpoint_cmd::run(a),
        Cmd::Repair(a) => repair_cmd::run(a),
        Cmd::Bench(c) => bench::run(c),
        Cmd::Stress(a) => stress::stress(a),
        Cmd::Check(a) => check_cmd::run(a),
        Cmd::CrashTest(a) => crash_cmd::run(a),
        Cmd::Viz(a) => viz_cmd::run(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our output went away (`strata kv dump db | head`):
        // it chose to stop reading, so stop quietly as `cat` or `rg` do,
        // instead of printing an I/O error about a pipe the user closed.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `e` is, somewhere in its chain, a write to a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let kind = if let Some(io) = c.downcast_ref::<std::io::Error>() {
            Some(io.kind())
        } else {
            c.downcast_ref::<strata::Error>()
                .and_then(|se| se.io_error())
                .map(|io| io.kind())
        };
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}
