//! Watching the engine: `Db::metrics` after writes, a flush and a compaction.
//!
//! `cargo run -p strata --example metrics`

use strata::{Db, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let opts = Options {
        memtable_size: 256 << 10, // small, so this example flushes
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts)?;
    for i in 0..20_000u32 {
        db.put(format!("key{:06}", (i * 7919) % 20_000), [0u8; 64])?;
    }
    db.flush()?;
    db.wait_for_compactions()?;

    let m = db.metrics();
    for (level, l) in m.levels.iter().enumerate() {
        if l.files > 0 {
            println!("L{level}: {} files, {} bytes", l.files, l.bytes);
        }
    }
    println!(
        "{} flushes, {} compactions, write amplification {:.2}, read amplification {}",
        m.flushes, m.compactions, m.write_amplification, m.read_amplification
    );
    println!("stalls: {:?}", m.stalls);
    // The engine also appends every flush and compaction to the EVENTS
    // file in the database directory.
    assert!(dir.path().join("EVENTS").exists());
    Ok(())
}
