//! `checkpoint`: a copy of a database in a new directory, openable on its
//! own (`Db::checkpoint`: tables hard-linked where the file system allows,
//! the memtable flushed first).
//!
//! The database must not be open in another process (its directory lock is
//! taken as for any read-write command); a library user checkpoints a live
//! database with `Db::checkpoint` from the process that has it open.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct CheckpointArgs {
    /// Database directory (must exist).
    pub db: PathBuf,
    /// The checkpoint's directory: must not exist, and must lie outside
    /// the database's.
    pub dir: PathBuf,
}

pub fn run(a: CheckpointArgs) -> Result<()> {
    let db = crate::open::existing(&a.db)?;
    let start = Instant::now();
    let info = db.checkpoint(&a.dir)?;
    let shared = info.tables - info.copied;
    outln!(
        "checkpoint {} of {}: {} table(s), {} bytes ({shared} hard-linked, {} copied), \
         every operation up to sequence {} ({:.1} ms)",
        a.dir.display(),
        a.db.display(),
        info.tables,
        info.bytes,
        info.copied,
        info.sequence,
        start.elapsed().as_secs_f64() * 1e3
    )?;
    db.close()?;
    Ok(())
}
