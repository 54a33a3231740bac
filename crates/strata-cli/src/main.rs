//! The `strata` command: the demo, database commands (one file per group:
//! `kv`, `scan`, `load`, `ingest_cmd`, `lsm`), SST tools (`sst_cmd`) and
//! benchmarks (`bench`). `stress`, the crash test's writer, is hidden.
//!
//! Commands that only read (`get`, `scan`, `dump`, `lsm`) never create a
//! database: a missing path, a file or a directory that is not a Strata
//! database is an error and the file system is left as it was.

mod bench;
mod codec;
mod demo;
mod gen;
mod ingest_cmd;
mod kv;
mod load;
mod lsm;
mod open;
mod scan;
mod sst_cmd;
mod stress;

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
    /// Generate data, write it as an SST, read it back and print what happened.
    Demo(demo::DemoArgs),
    /// Inspect, verify and write SST files.
    #[command(subcommand)]
    Sst(sst_cmd::SstCmd),
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
    /// Ingest SST files (written for ingestion, by Strata or RocksDB).
    Ingest(ingest_cmd::IngestArgs),
    /// Print the shape of the tree and its history (from MANIFEST and EVENTS).
    Lsm {
        /// Database directory (must exist).
        db: PathBuf,
    },
    /// Run a comparison workload (shared/workloads/README.md).
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// Test tool: write keys until killed (the crash test's child).
    #[command(hide = true)]
    Stress(stress::StressArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Demo(a) => demo::run(a),
        Cmd::Sst(c) => sst_cmd::run(c),
        Cmd::Get(a) => kv::get(a),
        Cmd::Put(a) => kv::put(a),
        Cmd::Delete(a) => kv::delete(a),
        Cmd::Scan(a) => scan::scan(a),
        Cmd::Dump(a) => scan::dump(a),
        Cmd::Load(a) => load::load(a),
        Cmd::Ingest(a) => ingest_cmd::ingest(a),
        Cmd::Lsm { db } => lsm::lsm(&db),
        Cmd::Bench(c) => bench::run(c),
        Cmd::Stress(a) => stress::stress(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata: {e:#}");
            ExitCode::FAILURE
        }
    }
}
