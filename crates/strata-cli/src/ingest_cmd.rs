//! `ingest`: SST files (written for ingestion, by Strata or RocksDB) into a
//! database.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct IngestArgs {
    /// Database directory (created if missing).
    pub db: PathBuf,
    /// SST files written for ingestion (every sequence number 0).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Move the files into the database (hard-link them in, then remove
    /// the given paths) instead of copying them. A file on another file
    /// system than the database cannot be linked: it is copied and left
    /// where it is (the command says so).
    #[arg(long = "move")]
    pub move_files: bool,
    /// Files holding less than this in all (uncompressed key and value
    /// bytes, not file size) are applied as a write batch instead of
    /// entering the tree as files.
    #[arg(long, default_value_t = 32 << 10)]
    pub small_file_bytes: u64,
}

pub fn ingest(a: IngestArgs) -> Result<()> {
    // Refused before the database is opened or created.
    for f in &a.files {
        if f.is_dir() {
            anyhow::bail!("{} is a directory, not an SST file", f.display());
        }
    }
    let (db, created) = crate::open::or_create_undoable(&a.db, strata::Options::default())?;
    let opts = strata::IngestOptions {
        move_files: a.move_files,
        small_file_bytes: a.small_file_bytes,
        ..strata::IngestOptions::default()
    };
    let start = Instant::now();
    let r = match db.ingest(&a.files, &opts) {
        Ok(r) => r,
        Err(e) => return Err(created.undo(db, e.into())),
    };
    let how = if r.as_batch {
        "applied as a write batch".to_string()
    } else if r.flushable {
        "queued behind the overlapping memtable".to_string()
    } else {
        let levels: Vec<String> = r
            .levels
            .iter()
            .map(|l| l.map(|l| format!("L{l}")).unwrap_or_default())
            .collect();
        format!("placed at {}", levels.join(", "))
    };
    outln!(
        "ingested {} file(s) at sequence {}: {how} ({:.3} ms)",
        a.files.len(),
        r.sequence,
        start.elapsed().as_secs_f64() * 1e3
    )?;
    if a.move_files {
        // A set applied as a write batch is moved too (the engine removes
        // its files once the batch is durable): only a copy stays.
        for f in a.files.iter().filter(|f| f.exists()) {
            outln!(
                "note: {} was copied, not moved (it is on another file system than the \
                 database), and is left where it is",
                f.display()
            )?;
        }
    }
    db.close()?;
    Ok(())
}
