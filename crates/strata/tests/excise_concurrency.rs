//! Ingest-and-excise under concurrent writes, compactions and reads.
//!
//! Ten key windows `r00-*` .. `r09-*` are each replaced over and over by an
//! ingestion that excises the whole window and brings a new generation of
//! it; a writer fills an unrelated key range meanwhile, so memtables rotate
//! and compactions run (and cut files get compacted, or a compaction loses
//! an input to an excise and is cancelled). Readers check that every window
//! they see holds exactly one generation and is never empty: an excise is
//! atomic with its ingestion, and a reader never sees the cut tree at a
//! sequence number below the ingestion (where both the old and the new
//! generation would be missing). Snapshots taken along the way must read
//! the same way, before and after later excises.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use strata::sstable::{SstOptions, SstWriter};
use strata::{CompactionOptions, Db, IngestOptions, Options, ReadOptions};

const WINDOWS: usize = 10;

fn window_range(w: usize) -> (Vec<u8>, Vec<u8>) {
    // '.' sorts right after '-'.
    (
        format!("r{w:02}-").into_bytes(),
        format!("r{w:02}.").into_bytes(),
    )
}

/// The generation of every window seen by a scan of `r*`, checking each
/// window holds one generation.
fn windows(db: &Db, snapshot: Option<&strata::Snapshot>) -> Result<BTreeMap<usize, u64>, String> {
    let mut it = db
        .raw_iter(&ReadOptions {
            lower: Some(b"r".to_vec()),
            upper: Some(b"s".to_vec()),
            snapshot,
        })
        .unwrap();
    it.seek_to_first();
    let mut seen: BTreeMap<usize, u64> = BTreeMap::new();
    while it.valid() {
        let k = String::from_utf8(it.key().unwrap().to_vec()).unwrap();
        let v = String::from_utf8(it.value().unwrap().to_vec()).unwrap();
        let w: usize = k[1..3].parse().unwrap();
        let g: u64 = v.parse().unwrap();
        if let Some(&prev) = seen.get(&w) {
            if prev != g {
                return Err(format!(
                    "window {w} mixes generations {prev} and {g} at {k}"
                ));
            }
        }
        seen.insert(w, g);
        it.next();
    }
    it.status().unwrap();
    if seen.len() != WINDOWS {
        return Err(format!(
            "windows missing: saw {:?}",
            seen.keys().collect::<Vec<_>>()
        ));
    }
    Ok(seen)
}

#[test]
fn excises_are_atomic_under_concurrent_work() {
    let d = tempfile::tempdir().unwrap();
    let opts = Options {
        memtable_size: 16 << 10,
        compaction: CompactionOptions {
            target_file_size: 4 << 10,
            l0_compaction_threshold: 2,
            base_level_bytes: 32 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let db = Arc::new(Db::open(d.path().join("db"), opts).unwrap());
    let files = d.path().join("in");
    std::fs::create_dir_all(&files).unwrap();
    // `STRATA_CONC_SEED=n` picks another schedule of excises (default 7).
    let seed = std::env::var("STRATA_CONC_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut n = 0;
    let mut ingest = |db: &Db, rng: &mut StdRng, w: usize, g: u64| {
        n += 1;
        let p = files.join(format!("{n}.sst"));
        let mut wr = SstWriter::create(&p, SstOptions::for_ingestion()).unwrap();
        let mut ks: Vec<u32> = (0..rng.gen_range(1..40))
            .map(|_| rng.gen_range(0..500))
            .collect();
        ks.sort_unstable();
        ks.dedup();
        for k in ks {
            wr.put(
                format!("r{w:02}-{k:03}").as_bytes(),
                g.to_string().as_bytes(),
            )
            .unwrap();
        }
        wr.finish().unwrap();
        db.ingest(
            &[p],
            &IngestOptions {
                small_file_bytes: 0,
                excise: Some(window_range(w)),
                ..IngestOptions::default()
            },
        )
        .unwrap()
    };
    for w in 0..WINDOWS {
        ingest(&db, &mut rng, w, 0);
    }
    windows(&db, None).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Keys on both sides of the windows, so compacted files span
                // them and get cut.
                let k = if i.is_multiple_of(2) {
                    format!("a{:06}", i % 50_000)
                } else {
                    format!("z{:06}", i % 50_000)
                };
                db.put(k.as_bytes(), [b'v'; 100]).unwrap();
                i += 1;
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut snaps = Vec::new();
                let mut scans = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if let Err(e) = windows(&db, None) {
                        panic!("reader {r}: {e}");
                    }
                    scans += 1;
                    // Hold a snapshot now and then, for a few scans: the
                    // excises meanwhile fall back to tombstones.
                    if scans.is_multiple_of(50) {
                        let s = db.snapshot();
                        let at = windows(&db, Some(&s)).unwrap();
                        snaps.push((s, at));
                    } else if scans % 50 == 5 {
                        snaps.clear();
                    }
                    for (s, at) in &snaps {
                        let again = windows(&db, Some(s))
                            .unwrap_or_else(|e| panic!("reader {r} snapshot: {e}"));
                        assert_eq!(&again, at, "reader {r}: snapshot view changed");
                    }
                }
                scans
            })
        })
        .collect();

    let mut gens = [0u64; WINDOWS];
    let mut cut = 0;
    for round in 1..=200u64 {
        let w = rng.gen_range(0..WINDOWS);
        gens[w] = round;
        let r = ingest(&db, &mut rng, w, round);
        cut += u64::from(r.excised);
        let seen = windows(&db, None).unwrap();
        assert_eq!(seen[&w], round);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let scans: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    db.wait_for_compactions().unwrap();
    let seen = windows(&db, None).unwrap();
    for (w, g) in gens.iter().enumerate() {
        assert_eq!(seen[&w], *g);
    }
    let m = db.metrics();
    eprintln!(
        "scans {scans}, excises cut {cut} (metrics {} / fallbacks {} / retries {}), compactions {} cancelled {}, virtual files {}",
        m.excises, m.excise_fallbacks, m.excise_retries, m.compactions, m.compactions_cancelled, m.virtual_files
    );
    assert!(cut > 60, "most excises cut the tree: {cut}");
    assert!(m.excise_fallbacks > 0, "some fell back under a snapshot");
    assert!(m.compactions > 0);
}
