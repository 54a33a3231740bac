//! `strata demo`: the whole story so far, on generated data: write an SST of
//! generated keys, read it back, verify it; then load the same keys through
//! the database, flush, reopen, read them back and show the tree. Each
//! capability Strata gains adds a chapter here.

use crate::gen;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;
use strata::iter::InternalIterator;
use strata::key::ParsedKey;
use strata::sstable::{SstOptions, SstWriter, Table, TableOptions};
use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

#[derive(Args)]
pub struct DemoArgs {
    /// Where to write the demo's files.
    #[arg(long, default_value = "demo-output")]
    dir: PathBuf,
    /// How many keys to generate.
    #[arg(long, default_value_t = 200_000)]
    keys: u64,
}

pub fn run(a: DemoArgs) -> Result<()> {
    std::fs::create_dir_all(&a.dir).with_context(|| format!("creating {}", a.dir.display()))?;
    let path = a.dir.join("demo.sst");
    println!("== 1. Write an SST file");
    println!(
        "   {} keys of 16 bytes with 100-byte values, Snappy, 10 bits/key bloom filter",
        a.keys
    );
    let start = Instant::now();
    let mut w = SstWriter::create(&path, SstOptions::for_ingestion())?;
    let mut rng = gen::rng(1);
    let mut logical = 0u64;
    for i in 0..a.keys {
        let k = gen::key(i);
        let v = gen::value(&mut rng, 100);
        logical += (k.len() + v.len()) as u64;
        w.put(&k, &v)?;
    }
    let info = w.finish()?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "   wrote {} ({} bytes, {:.1} MB/s of key+value bytes, {:.2}x smaller than the input)",
        path.display(),
        info.file_size,
        logical as f64 / secs / 1e6,
        logical as f64 / info.file_size as f64
    );

    println!("== 2. Read it back");
    let t = Table::open_path(&path, TableOptions::default())?;
    let start = Instant::now();
    let mut it = t.iter();
    it.seek_to_first();
    let mut n = 0u64;
    let mut rng = gen::rng(1);
    while it.valid() {
        let p = ParsedKey::parse(it.key()).context("bad key")?;
        if p.user_key != gen::key(n).as_slice()
            || it.value() != gen::value(&mut rng, 100).as_slice()
        {
            bail!("entry {n} read back wrong");
        }
        n += 1;
        it.next();
    }
    it.status()?;
    if n != a.keys {
        bail!("read {n} entries, wrote {}", a.keys);
    }
    let scan = start.elapsed().as_secs_f64();
    println!(
        "   scanned {n} entries, every key and value as written ({:.1} MB/s)",
        logical as f64 / scan / 1e6
    );
    let start = Instant::now();
    let lookups = 20_000.min(a.keys);
    let mut found = 0;
    for i in 0..lookups {
        if t.get(&gen::key(i * 7919 % a.keys), u64::MAX)?.is_some() {
            found += 1;
        }
    }
    let absent = (0..lookups)
        .filter(|i| t.may_contain(&gen::key(a.keys + i)))
        .count();
    println!(
        "   {found}/{lookups} point lookups found ({:.1} us each); bloom filter passed {absent} of {lookups} absent keys ({:.2}%)",
        start.elapsed().as_secs_f64() * 1e6 / lookups as f64,
        absent as f64 * 100.0 / lookups as f64
    );

    println!("== 3. Verify and describe it");
    let s = t.verify()?;
    let p = t.properties();
    println!(
        "   checksums OK in {} data blocks ({} entries)",
        s.data_blocks, s.entries
    );
    println!(
        "   data: {} raw bytes stored in {} ({:.2} ratio); index {} bytes; filter {} bytes",
        s.data_raw_bytes,
        s.data_stored_bytes,
        s.data_stored_bytes as f64 / s.data_raw_bytes.max(1) as f64,
        s.index_bytes,
        s.filter_bytes
    );
    println!(
        "   format_version 5, compression {}, external file version {:?}: RocksDB can ingest it",
        p.compression, p.external_version
    );
    println!(
        "   inspect it with: strata sst dump {} --stats --limit 5",
        path.display()
    );

    database(&a)
}

fn database(a: &DemoArgs) -> Result<()> {
    let dir = a.dir.join("db");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    println!("== 4. Load the same keys through the database");
    let opts = Options {
        memtable_size: 8 << 20,
        ..Options::default()
    };
    let db = Db::open(&dir, opts.clone())?;
    // A permutation of the keys, so the load arrives out of order.
    let order: Vec<u64> = (0..a.keys).map(|i| (i * 7_919) % a.keys).collect();
    let start = Instant::now();
    for chunk in order.chunks(1000) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(gen::key(i), value_for(i));
        }
        db.write(b, &WriteOptions::default())?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "   {} keys in batches of 1,000 rows, out of order: {:.2}s ({:.0} rows/s)",
        a.keys,
        secs,
        a.keys as f64 / secs
    );
    db.flush()?;
    db.wait_for_compactions()?;
    println!("   flushed and compacted; the tree:");
    crate::lsm::print_tree(&db);
    db.close()?;

    println!("== 5. Reopen and read everything back");
    let db = Db::open(&dir, opts)?;
    let mut it = db.raw_iter(&ReadOptions::default())?;
    it.seek_to_first();
    let mut n = 0u64;
    while it.valid() {
        if it.key().unwrap_or_default() != gen::key(n).as_slice()
            || it.value().unwrap_or_default() != value_for(n).as_slice()
        {
            bail!("database entry {n} read back wrong");
        }
        n += 1;
        it.next();
    }
    it.status()?;
    if n != a.keys {
        bail!("database holds {n} keys, loaded {}", a.keys);
    }
    println!(
        "   {n} keys, in order, every value as written; sequence number {}",
        db.latest_sequence()
    );
    println!(
        "   look inside with: strata lsm {0}; strata scan {0} --limit 5",
        dir.display()
    );
    db.close()?;
    Ok(())
}

/// The database chapter's value for key `i` (deterministic, 100 bytes).
fn value_for(i: u64) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    v.resize(100, b'.');
    v
}
