//! Open a database, write, read, iterate, delete.
//!
//! `cargo run -p strata --example basics`

use strata::Db;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    // Creates the directory and database if they do not exist.
    let db = Db::open_default(dir.path().join("db"))?;

    // Keys and values are any byte strings: &str, String, &[u8], Vec<u8>...
    db.put("fruit:apple", "red")?;
    db.put("fruit:banana", "yellow")?;
    db.put("veg:carrot", "orange")?;

    assert_eq!(db.get("fruit:apple")?, Some(b"red".to_vec()));
    assert_eq!(db.get("fruit:cherry")?, None);

    // Everything, in key order. Each item is a Result: a damaged file is an
    // error, never a silently skipped key.
    for kv in db.iter() {
        let (k, v) = kv?;
        println!(
            "{} = {}",
            String::from_utf8_lossy(&k),
            String::from_utf8_lossy(&v)
        );
    }

    // Keys with a prefix, last first.
    let fruit: Vec<Vec<u8>> = db
        .prefix("fruit:")
        .rev()
        .map(|kv| kv.map(|(k, _)| k))
        .collect::<Result<_, _>>()?;
    assert_eq!(fruit, [b"fruit:banana".to_vec(), b"fruit:apple".to_vec()]);

    db.delete("veg:carrot")?;
    assert_eq!(
        db.range("veg:".."veg;")
            .collect::<strata::Result<Vec<_>>>()?
            .len(),
        0
    );

    // Dropping the Db closes it too; close() reports errors.
    db.close()?;
    Ok(())
}
