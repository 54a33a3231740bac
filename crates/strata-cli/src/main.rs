//! The `strata` command: the demo, and tools for SST files (and, as the
//! engine grows, for databases).

mod demo;
mod gen;
mod sst_cmd;

use clap::{Parser, Subcommand};
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Demo(a) => demo::run(a),
        Cmd::Sst(c) => sst_cmd::run(c),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata: {e:#}");
            ExitCode::FAILURE
        }
    }
}
