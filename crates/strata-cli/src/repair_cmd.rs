//! `strata repair DB`: the explicit way past corruption that opening
//! refuses. Runs `Db::repair` (see `strata::db::repair` for what it keeps
//! and drops) and prints what was salvaged and, line by line, what was
//! lost. Exits 0 when the repaired database opens; the report says whether
//! anything was lost. Losing a file can leave a SQL table whose indexes no
//! longer match its rows (a secondary index's SST gone, every row kept), so
//! the repaired database's tables are then checked as `strata check` checks
//! them, and each inconsistent table and index is listed as lost too.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use strata::{Db, Options};

#[derive(Args)]
pub struct RepairArgs {
    /// Database directory (must exist).
    pub db: PathBuf,
}

pub fn run(a: RepairArgs) -> Result<()> {
    let r = Db::repair(&a.db, Options::default())
        .with_context(|| format!("repairing {}", a.db.display()))?;
    outln!("repaired {} from {}", a.db.display(), r.manifest)?;
    for line in &r.recovered {
        outln!("salvaged: {line}")?;
    }
    // The engine's repair knows files and keys, not tables: whether what
    // it dropped broke a table is only seen by reading the tables back.
    let t = crate::check_cmd::check_tables(&a.db, false);
    if r.lost_nothing() && t.problems.is_empty() {
        outln!("lost: nothing")?;
    } else {
        for line in &r.lost {
            outln!("LOST: {line}")?;
        }
        for p in &t.problems {
            outln!("LOST: {p} (found checking the repaired database's SQL tables)")?;
        }
    }
    Ok(())
}
