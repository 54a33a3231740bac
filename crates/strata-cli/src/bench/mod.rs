//! `strata bench ...`: the comparison workloads of
//! `shared/workloads/README.md` on Strata alone, with Strata-only variants
//! (sublevels on/off, ingest paths). The side-by-side comparison with
//! RocksDB and Pebble is `bench/run` (drivers under `bench/`); `w1` runs
//! those drivers for W1's `strata import` cases and RocksDB's ingest
//! method in one go.

pub mod ingest_size;
pub mod l0;
pub mod w1;
pub mod w2;
pub mod w3;
pub mod w4;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Subcommand)]
pub enum BenchCmd {
    /// W1: `strata import` in every mode beside RocksDB's ingest method
    /// (runs `bench/`'s drivers).
    W1(w1::W1Args),
    /// W2: COPY batch-size sweep (rows/s per rows-per-batch).
    W2(w2::W2Args),
    /// Random-key load with and without L0 sublevels and flush splits.
    L0(l0::L0Args),
    /// W3: ingest latency over an overlapping memtable vs. a control.
    W3(w3::W3Args),
    /// W4: foreground Put latency while ingesting.
    W4(w4::W4Args),
    /// Ingest latency as a file vs. as a write batch, per file size.
    IngestSize(ingest_size::IngestSizeArgs),
}

pub fn run(c: BenchCmd) -> Result<()> {
    match c {
        BenchCmd::W1(a) => w1::run(a),
        BenchCmd::W2(a) => w2::run(a),
        BenchCmd::L0(a) => l0::run(a),
        BenchCmd::W3(a) => w3::run(a),
        BenchCmd::W4(a) => w4::run(a),
        BenchCmd::IngestSize(a) => ingest_size::run(a),
    }
}

/// `enc(int)` of kv-spec v1: order-preserving 8-byte big-endian.
pub fn enc(v: i64) -> [u8; 8] {
    ((v as u64) ^ 0x8000_0000_0000_0000).to_be_bytes()
}

/// The repository root (where `shared/` sits beside it).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Makes sure `out` holds the datagen output for `args`, generating it with
/// `../shared/datagen/SCRIPT` if it is missing.
pub fn ensure_input(script: &str, args: &[&str], out: &Path) -> Result<()> {
    if out.exists() {
        return Ok(());
    }
    let gen = repo_root().join("../shared/datagen").join(script);
    if !gen.exists() {
        bail!(
            "{} not found (the shared/ folder beside the repository)",
            gen.display()
        );
    }
    if let Some(d) = out.parent() {
        std::fs::create_dir_all(d)?;
    }
    eprintln!(
        "generating {} with {} {}",
        out.display(),
        script,
        args.join(" ")
    );
    let tmp = out.with_extension("tmp");
    let st = Command::new("python3")
        .arg(&gen)
        .args(args)
        .arg("--out")
        .arg(&tmp)
        .status()
        .context("running python3")?;
    if !st.success() {
        bail!("{script} failed");
    }
    std::fs::rename(&tmp, out)?;
    Ok(())
}
