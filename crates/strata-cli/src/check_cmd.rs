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
    // What is not a database at all gets the words the other commands use
    // (a directory with a MANIFEST but no CURRENT is a damaged database,
    // and its missing CURRENT is reported as a problem below).
    if !a.db.exists() {
        bail!("no database at {}: nothing exists there", a.db.display());
    }
    if !a.db.is_dir() {
        bail!(
            "{} is not a Strata database: it is a file, not a directory",
            a.db.display()
        );
    }
    let has_manifest = std::fs::read_dir(&a.db)?
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with("MANIFEST-"));
    if !has_manifest && !a.db.join("CURRENT").exists() {
        bail!(
            "{} is not a Strata database: the directory has no CURRENT and no MANIFEST",
            a.db.display()
        );
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
