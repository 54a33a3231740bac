//! Atomic multi-key writes with `WriteBatch`, synced and unsynced.
//!
//! `cargo run -p strata --example batch`

use strata::{Db, WriteBatch, WriteOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open_default(dir.path())?;
    db.put("account:alice", "100")?;
    db.put("account:bob", "0")?;

    // Move 30 from alice to bob: both writes land together or not at all.
    let mut transfer = WriteBatch::new();
    transfer
        .put("account:alice", "70")
        .put("account:bob", "30")
        .put("log:0001", "alice->bob 30");
    // sync: the batch is on disk (survives a power cut) when write returns.
    db.write(transfer, &WriteOptions { sync: true })?;

    // Clear a whole key range with one tombstone.
    let mut cleanup = WriteBatch::new();
    cleanup.delete_range("log:", "log;");
    db.write(cleanup, &WriteOptions::default())?;

    assert_eq!(db.get("account:bob")?, Some(b"30".to_vec()));
    assert_eq!(
        db.prefix("log:").collect::<strata::Result<Vec<_>>>()?.len(),
        0
    );
    println!("transfer applied atomically; log cleared");
    Ok(())
}
