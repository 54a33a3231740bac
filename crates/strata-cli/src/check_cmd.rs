//! `strata check DB`: verifies a database directory without changing it
//! (`strata::check`): every checksum of every table, WAL and MANIFEST
//! record, and the tree's invariants. Prints each problem with its file and
//! offset, and fails (exit status 1) if there is any; warnings (what a
//! crash leaves and recovery repairs) are printed but do not fail.

use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct CheckArgs {
    /// The database directory.
    pub db: PathBuf,
}

pub fn run(a: CheckArgs) -> Result<()> {
    if !a.db.is_dir() {
        bail!("{} is not a directory", a.db.display());
    }
    let r = strata::check::check_dir(&a.db)?;
    for w in &r.warnings {
        outln!("warning: {w}")?;
    }
    for p in &r.problems {
        outln!("problem: {p}")?;
    }
    outln!(
        "checked {} MANIFEST records, {} tables ({} entries), {} WALs ({} records): \
         {} problems, {} warnings",
        r.manifest_records,
        r.tables,
        r.table_entries,
        r.wals,
        r.wal_records,
        r.problems.len(),
        r.warnings.len()
    )?;
    if !r.is_ok() {
        bail!("{}: {} problems found", a.db.display(), r.problems.len());
    }
    Ok(())
}
