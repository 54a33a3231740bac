//! `strata repair DB`: the explicit way past corruption that opening
//! refuses. Runs `Db::repair` (see `strata::db::repair` for what it keeps
//! and drops) and prints what was salvaged and, line by line, what was
//! lost. Exits 0 when the repaired database opens; the report says whether
//! anything was lost.

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
    if r.lost_nothing() {
        outln!("lost: nothing")?;
    } else {
        for line in &r.lost {
            outln!("LOST: {line}")?;
        }
    }
    Ok(())
}
