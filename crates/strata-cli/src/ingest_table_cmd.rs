//! `ingest-table`: a table bundle (SSTs built elsewhere, e.g. by Apache
//! Spark, with their `strata-bundle.json` manifest) into a database as a new
//! table, checked whole and ingested in one step (`strata_import::bundle`).

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct IngestTableArgs {
    /// Database directory (created if missing).
    pub db: PathBuf,
    /// The bundle directory (holding strata-bundle.json and the SSTs).
    pub bundle: PathBuf,
    /// Move the bundle's files into the database instead of copying them.
    #[arg(long = "move")]
    pub move_files: bool,
}

pub fn run(a: IngestTableArgs) -> Result<()> {
    let (db, created) = crate::open::or_create_undoable(&a.db, strata::Options::default())?;
    let opts = strata_import::bundle::BundleOptions {
        move_files: a.move_files,
    };
    let s = match strata_import::bundle::ingest_table(&db, &a.bundle, &opts) {
        Ok(s) => s,
        Err(e) => return Err(created.undo(db, e.into())),
    };
    let entries: Vec<String> = s
        .entries
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    let levels: Vec<String> = s
        .levels
        .iter()
        .map(|l| l.map(|l| format!("L{l}")).unwrap_or_else(|| "-".into()))
        .collect();
    // A small bundle is applied by the database as a write batch
    // (`IngestOptions::small_file_bytes`): no file of it entered the tree,
    // and the summary says so, as `strata import`'s does.
    let (what, how) = if s.batch_units > 0 {
        (
            "applied as a write batch (no files ingested)".to_string(),
            "applied",
        )
    } else {
        (
            format!("{} files ingested, {} bytes", s.files, s.bytes),
            "ingested",
        )
    };
    outln!(
        "table {} (id {}): {} rows, {what}; entries: {}",
        s.table,
        s.table_id,
        s.rows,
        entries.join(", ")
    )?;
    outln!(
        "checked in {:.3} s, {how} in {:.3} ms{}",
        s.verify.as_secs_f64(),
        s.ingest.as_secs_f64() * 1e3,
        if levels.is_empty() {
            String::new()
        } else {
            format!(", levels: {}", levels.join(" "))
        }
    )?;
    db.close()?;
    Ok(())
}
