//! The program a new user writes first, as the API is meant to be used:
//! open, put/get/delete, a batch, bounded iteration both ways, a snapshot
//! read, an SST written and ingested, metrics, and a reopen.
//!
//! `cargo run -p strata --example newcomer`

use strata::{Db, IngestOptions, Options, SstOptions, SstWriter, WriteBatch, WriteOptions};

fn main() -> strata::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| strata::Error::io("temp dir", e))?;
    let path = dir.path().join("db");

    // Open (creating it), then point writes and reads.
    let db = Db::open_default(&path)?;
    db.put("city:paris", "2.1M")?;
    db.put("city:rome", "2.8M")?;
    db.put("city:oslo", "0.7M")?;
    assert_eq!(db.get("city:rome")?.as_deref(), Some(&b"2.8M"[..]));
    db.delete("city:oslo")?;
    assert_eq!(db.get("city:oslo")?, None);

    // A batch: atomic, and synced to disk before `write` returns.
    let mut batch = WriteBatch::new();
    batch
        .put("city:lima", "10.0M")
        .put("city:kyiv", "2.9M")
        .delete("city:paris");
    db.write(batch, &WriteOptions { sync: true })?;

    // Bounded iteration, forward and backward.
    let forward: Vec<String> = db
        .range("city:k".."city:r")
        .map(|kv| kv.map(|(k, _)| String::from_utf8_lossy(&k).into_owned()))
        .collect::<strata::Result<_>>()?;
    assert_eq!(forward, ["city:kyiv", "city:lima"]);
    let backward: Vec<String> = db
        .prefix("city:")
        .rev()
        .map(|kv| kv.map(|(k, _)| String::from_utf8_lossy(&k).into_owned()))
        .collect::<strata::Result<_>>()?;
    assert_eq!(backward, ["city:rome", "city:lima", "city:kyiv"]);

    // A snapshot read: later writes are invisible to it.
    let snap = db.snapshot();
    db.put("city:rome", "2.9M")?;
    assert_eq!(snap.get("city:rome")?.as_deref(), Some(&b"2.8M"[..]));
    drop(snap);

    // Bulk load: write an SST (increasing keys) and ingest it.
    let sst = dir.path().join("towns.sst");
    let mut w = SstWriter::create(&sst, SstOptions::for_ingestion())?;
    for i in 0..1_000 {
        w.put(format!("town:{i:04}"), format!("{i} people"))?;
    }
    w.finish()?;
    let r = db.ingest(&[&sst], &IngestOptions::default())?;
    println!("ingested 1000 towns at sequence {}", r.sequence);
    assert_eq!(
        db.prefix("town:")
            .collect::<strata::Result<Vec<_>>>()?
            .len(),
        1_000
    );

    // Metrics.
    db.flush()?;
    let m = db.metrics();
    println!(
        "{} flushes, {} ingestions, {} files in L0, last sequence {}",
        m.flushes, m.ingests, m.l0_files, m.last_sequence
    );

    // Close and reopen: everything is still there.
    db.close()?;
    let opts = Options {
        create_if_missing: false, // it must exist now
        ..Options::default()
    };
    let db = Db::open(&path, opts)?;
    assert_eq!(db.get("city:rome")?.as_deref(), Some(&b"2.9M"[..]));
    assert_eq!(db.get("town:0999")?.as_deref(), Some(&b"999 people"[..]));
    assert_eq!(
        db.iter().collect::<strata::Result<Vec<_>>>()?.len(),
        3 + 1_000
    );
    println!(
        "reopened: {} keys",
        db.iter().collect::<strata::Result<Vec<_>>>()?.len()
    );
    Ok(())
}
