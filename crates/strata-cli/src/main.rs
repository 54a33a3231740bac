//! The `strata` command: the demo, and tools for SST files (and, as the
//! engine grows, for databases).

mod bench;
mod db_cmd;
mod demo;
mod gen;
mod repair_cmd;
mod sst_cmd;
mod viz_cmd;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "Strata: an LSM key-value engine built for bulk loading"
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
    Get(db_cmd::KeyArgs),
    /// Write one key (synced).
    Put(db_cmd::PutArgs),
    /// Delete one key (synced).
    Delete(db_cmd::KeyArgs),
    /// Print `key : value` lines in key order.
    Scan(db_cmd::ScanArgs),
    /// Print the shape of the tree: files and bytes per level, memtables.
    Lsm { db: PathBuf },
    /// Load `key ==> value` lines (the format of `ldb load`) in batches.
    Load(db_cmd::LoadArgs),
    /// Print every entry as `key ==> value` (the format of `ldb dump`).
    Dump(db_cmd::DumpArgs),
    /// Ingest SST files (written for ingestion, by Strata or RocksDB).
    Ingest(db_cmd::IngestArgs),
    /// Write keys until killed (with --sync, print each acknowledged key).
    Stress(db_cmd::StressArgs),
    /// Salvage a database that will not open (damaged MANIFEST or CURRENT,
    /// missing tables) and report exactly what was lost.
    Repair(repair_cmd::RepairArgs),
    /// Write the LSM visualiser's page: the tree's history as one HTML file.
    Viz(viz_cmd::VizArgs),
    /// Run a comparison workload (shared/workloads/README.md).
    #[command(subcommand)]
    Bench(bench::BenchCmd),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Demo(a) => demo::run(a),
        Cmd::Sst(c) => sst_cmd::run(c),
        Cmd::Get(a) => db_cmd::get(a),
        Cmd::Put(a) => db_cmd::put(a),
        Cmd::Delete(a) => db_cmd::delete(a),
        Cmd::Scan(a) => db_cmd::scan(a),
        Cmd::Lsm { db } => db_cmd::lsm(&db),
        Cmd::Load(a) => db_cmd::load(a),
        Cmd::Dump(a) => db_cmd::dump(a),
        Cmd::Stress(a) => db_cmd::stress(a),
        Cmd::Ingest(a) => db_cmd::ingest(a),
        Cmd::Repair(a) => repair_cmd::run(a),
        Cmd::Bench(c) => bench::run(c),
        Cmd::Viz(a) => viz_cmd::run(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata: {e:#}");
            ExitCode::FAILURE
        }
    }
}
