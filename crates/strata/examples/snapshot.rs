//! Consistent reads with a `Snapshot` while writes go on.
//!
//! `cargo run -p strata --example snapshot`

use strata::{Db, ReadOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open_default(dir.path())?;
    for i in 0..5 {
        db.put(format!("item:{i}"), "v1")?;
    }

    let snap = db.snapshot();
    // Later writes, and compactions, do not change what the snapshot sees.
    db.put("item:0", "v2")?;
    db.delete("item:1")?;
    db.compact_range(None, None)?;

    assert_eq!(snap.get("item:0")?, Some(b"v1".to_vec()));
    assert_eq!(snap.iter().collect::<strata::Result<Vec<_>>>()?.len(), 5);
    assert_eq!(db.iter().collect::<strata::Result<Vec<_>>>()?.len(), 4);

    // The same view through ReadOptions (it borrows the snapshot, so the
    // snapshot cannot be dropped while the options are in use).
    let at = ReadOptions {
        snapshot: Some(&snap),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt("item:1", &at)?, Some(b"v1".to_vec()));
    println!(
        "snapshot at sequence {} still sees 5 items",
        snap.sequence()
    );

    // Dropping the snapshot lets compactions discard the old versions.
    drop(snap);
    Ok(())
}
