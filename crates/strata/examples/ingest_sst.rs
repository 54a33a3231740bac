//! Bulk loading: write sorted data into an SST file, then ingest it.
//!
//! `cargo run -p strata --example ingest_sst`

use strata::{Db, IngestOptions, SstOptions, SstWriter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open_default(dir.path().join("db"))?;

    // Keys must be added in strictly increasing order.
    let path = dir.path().join("batch-0001.sst");
    let mut w = SstWriter::create(&path, SstOptions::for_ingestion())?;
    for i in 0..100_000u32 {
        w.put(format!("user:{i:08}"), format!("payload-{i}"))?;
    }
    let info = w.finish()?;
    println!(
        "wrote {} entries, {} bytes",
        info.num_entries, info.file_size
    );

    // The file is moved into the database: hard-linked (copied across
    // file systems), then removed from `path` (`move_files: false` copies
    // and leaves it); all its keys appear at once.
    let r = db.ingest(&[&path], &IngestOptions::default())?;
    println!(
        "ingested at sequence {} (levels {:?})",
        r.sequence, r.levels
    );
    assert_eq!(db.get("user:00004242")?, Some(b"payload-4242".to_vec()));
    assert_eq!(
        db.prefix("user:")
            .collect::<strata::Result<Vec<_>>>()?
            .len(),
        100_000
    );
    Ok(())
}
