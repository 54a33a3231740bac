//! Ingestion checked against a model across flushes and reopens: small
//! memtables and a one-entry immutable queue make ingested files take both
//! paths (straight into the tree, or queued behind an overlapping memtable)
//! and be recovered from the WAL. This is the test that found file numbers
//! being reused after a reopen (an ingested file linked under a number the
//! MANIFEST had not recorded yet was overwritten by a recovery flush).
//!
//! A third of the ingestions also excise a range, which cuts the tree into
//! virtual files (or, over memory or an older snapshot, falls back to a
//! range tombstone); the second test adds snapshots checked against copies
//! of the model, full compactions, and point reads.
//!
//! `STRATA_MODEL_SEEDS=n` runs n seeds instead of the default.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use strata::sstable::{SstOptions, SstWriter};
use strata::vfs::{MemVfs, Vfs};
use strata::{Db, IngestOptions, Options, ReadOptions};

fn seeds(default: u64) -> u64 {
    std::env::var("STRATA_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Writes an ingestible SST at `path` of 1 to `max_keys - 1` random keys
/// `k000`..`k099` (sorted, no duplicates) with values of up to
/// `max_value` bytes, and returns its entries.
fn random_sst(
    rng: &mut StdRng,
    path: &std::path::Path,
    max_keys: usize,
    max_value: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut kvs: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.gen_range(1..max_keys))
        .map(|_| {
            let k = format!("k{:03}", rng.gen_range(0..100)).into_bytes();
            (k, vec![b'i'; rng.gen_range(0..max_value)])
        })
        .collect();
    kvs.sort();
    kvs.dedup_by(|a, b| a.0 == b.0);
    let mut w = SstWriter::create(path, SstOptions::for_ingestion()).unwrap();
    for (a, b) in &kvs {
        w.put(a, b).unwrap();
    }
    w.finish().unwrap();
    kvs
}

#[test]
fn ingestion_matches_a_model_across_reopens() {
    let mut paths_taken = [0u32; 2];
    let mut cuts = 0;
    for seed in 0..seeds(200) {
        let mut rng = StdRng::seed_from_u64(seed);
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let files = tempfile::tempdir().unwrap();
        let o = || Options {
            vfs: Some(vfs.clone()),
            memtable_size: 4 << 10,
            max_immutable_memtables: 1,
            ..Options::default()
        };
        let mut db = Db::open("/db", o()).unwrap();
        let mut model = BTreeMap::new();
        for step in 0..60 {
            let k = |rng: &mut StdRng| format!("k{:03}", rng.gen_range(0..100)).into_bytes();
            match rng.gen_range(0..10) {
                0..=5 => {
                    let (key, v) = (k(&mut rng), vec![b'p'; rng.gen_range(0..200)]);
                    db.put(&key, &v).unwrap();
                    model.insert(key, v);
                }
                6 | 7 => {
                    let p = files.path().join(format!("{step}.sst"));
                    let kvs = random_sst(&mut rng, &p, 30, 50);
                    // Sometimes excise a range as well (ingest and excise).
                    let excise = if rng.gen_bool(0.3) {
                        let a = format!("k{:03}", rng.gen_range(0..100)).into_bytes();
                        let b = format!("k{:03}", rng.gen_range(0..=100)).into_bytes();
                        Some((a.clone().min(b.clone()), a.max(b))).filter(|(a, b)| a < b)
                    } else {
                        None
                    };
                    let small_file_bytes = if rng.gen_bool(0.2) { 1 << 20 } else { 0 };
                    let r = db
                        .ingest(
                            &[p],
                            &IngestOptions {
                                small_file_bytes,
                                excise: excise.clone(),
                                ..IngestOptions::default()
                            },
                        )
                        .unwrap();
                    if std::env::var_os("STRATA_TRACE").is_some() {
                        eprintln!(
                            "seed {seed} step {step} {r:?} excise {:?}",
                            excise.as_ref().map(|(a, b)| (
                                String::from_utf8_lossy(a).into_owned(),
                                String::from_utf8_lossy(b).into_owned()
                            ))
                        );
                    }
                    if !r.as_batch {
                        paths_taken[usize::from(r.flushable)] += 1;
                    }
                    if let Some((a, b)) = excise {
                        let doomed: Vec<_> = model.range(a..b).map(|(k, _)| k.clone()).collect();
                        for k in doomed {
                            model.remove(&k);
                        }
                    }
                    for (a, b) in kvs {
                        model.insert(a, b);
                    }
                }
                8 => {
                    if std::env::var_os("STRATA_TRACE").is_some() {
                        eprintln!("seed {seed} step {step} flush");
                    }
                    db.flush().unwrap()
                }
                _ => {
                    if std::env::var_os("STRATA_TRACE").is_some() {
                        eprintln!("seed {seed} step {step} reopen");
                    }
                    cuts += db.metrics().excises;
                    db.close().unwrap();
                    db = Db::open("/db", o()).unwrap();
                }
            }
            let mut it = db.raw_iter(&ReadOptions::default()).unwrap();
            it.seek_to_first();
            let mut got = BTreeMap::new();
            while it.valid() {
                got.insert(it.key().unwrap().to_vec(), it.value().unwrap().to_vec());
                it.next();
            }
            if got != model {
                let extra: Vec<_> = got
                    .keys()
                    .filter(|k| !model.contains_key(*k))
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .take(5)
                    .collect();
                eprintln!("extra keys in the database: {extra:?}");
                let bad: Vec<_> = model
                    .iter()
                    .filter(|(k, v)| got.get(*k) != Some(v))
                    .map(|(k, v)| {
                        (
                            String::from_utf8_lossy(k).into_owned(),
                            v.len(),
                            got.get(k).map(|g| g.len()),
                        )
                    })
                    .take(5)
                    .collect();
                let m = db.metrics();
                let lv: Vec<usize> = m.levels.iter().map(|l| l.files).collect();
                let ev = String::from_utf8(
                    strata::vfs::read_all(vfs.as_ref(), std::path::Path::new("/db/EVENTS"))
                        .unwrap(),
                )
                .unwrap();
                for l in ev.lines().rev().take(8) {
                    eprintln!("EV {}", &l[..l.len().min(400)]);
                }
                panic!("seed {seed} step {step}: mismatch {bad:?} levels {lv:?}");
            }
        }
        cuts += db.metrics().excises;
    }
    assert!(
        paths_taken[0] > 50 && paths_taken[1] > 50,
        "both ingestion paths exercised: {paths_taken:?}"
    );
    assert!(cuts > 100, "excises cut the tree: {cuts}");
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Everything `opts` selects, through the std `Iterator`.
fn dump(db: &Db, opts: &ReadOptions) -> Model {
    db.iter_opt(opts)
        .collect::<strata::Result<Model>>()
        .unwrap()
}

/// Excises against a model with snapshots (each checked against the model
/// as it was when taken, so a cut that removed data an older snapshot still
/// needed shows up), full compactions that rewrite virtual files, deletes
/// and range deletes, backward scans and point reads, across reopens.
#[test]
fn excise_with_snapshots_and_compactions_matches_a_model() {
    let mut totals = [0u64; 3];
    for seed in 0..seeds(120) {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let files = tempfile::tempdir().unwrap();
        let o = || Options {
            vfs: Some(vfs.clone()),
            memtable_size: 4 << 10,
            max_immutable_memtables: 2,
            compaction: strata::CompactionOptions {
                target_file_size: 2 << 10,
                l0_compaction_threshold: 2,
                base_level_bytes: 8 << 10,
                ..strata::CompactionOptions::default()
            },
            ..Options::default()
        };
        let mut db = Db::open("/db", o()).unwrap();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut snaps: Vec<(strata::Snapshot, Model)> = Vec::new();
        let k = |rng: &mut StdRng| format!("k{:03}", rng.gen_range(0..200)).into_bytes();
        for step in 0..80 {
            let what = rng.gen_range(0..20);
            match what {
                0..=7 => {
                    let (key, v) = (k(&mut rng), vec![b'p'; rng.gen_range(0..100)]);
                    db.put(&key, &v).unwrap();
                    model.insert(key, v);
                }
                8 => {
                    let key = k(&mut rng);
                    db.delete(&key).unwrap();
                    model.remove(&key);
                }
                9 => {
                    let (a, b) = (k(&mut rng), k(&mut rng));
                    let (a, b) = (a.clone().min(b.clone()), a.max(b));
                    db.delete_range(&a, &b).unwrap();
                    let doomed: Vec<_> = model.range(a..b).map(|(k, _)| k.clone()).collect();
                    for d in doomed {
                        model.remove(&d);
                    }
                }
                10..=14 => {
                    let p = files.path().join(format!("{step}.sst"));
                    let kvs = random_sst(&mut rng, &p, 40, 60);
                    // Mostly an excise around the file, sometimes anywhere.
                    let excise = if rng.gen_bool(0.8) {
                        let (lo, hi) = (kvs[0].0.clone(), kvs[kvs.len() - 1].0.clone());
                        let mut end = hi;
                        end.push(rng.gen_range(0..3u8) * 100);
                        let start = if rng.gen_bool(0.5) {
                            lo
                        } else {
                            k(&mut rng).min(lo)
                        };
                        Some((start, end))
                    } else {
                        let (a, b) = (k(&mut rng), k(&mut rng));
                        Some((a.clone().min(b.clone()), a.max(b))).filter(|(a, b)| a < b)
                    };
                    let r = db
                        .ingest(
                            &[p],
                            &IngestOptions {
                                small_file_bytes: 0,
                                excise: excise.clone(),
                                ..IngestOptions::default()
                            },
                        )
                        .unwrap();
                    if let Some((a, b)) = excise {
                        let doomed: Vec<_> = model.range(a..b).map(|(k, _)| k.clone()).collect();
                        for d in doomed {
                            model.remove(&d);
                        }
                    }
                    for (a, b) in kvs {
                        model.insert(a, b);
                    }
                    let _ = r;
                }
                15 | 16 => {
                    if snaps.len() < 3 {
                        snaps.push((db.snapshot(), model.clone()));
                    } else {
                        snaps.remove(rng.gen_range(0..snaps.len()));
                    }
                }
                17 => db.flush().unwrap(),
                18 => db.compact_range(None, None).unwrap(),
                _ => {
                    let m = db.metrics();
                    totals[0] += m.excises;
                    totals[1] += m.excise_fallbacks;
                    totals[2] += m.compactions_cancelled;
                    snaps.clear();
                    db.close().unwrap();
                    db = Db::open("/db", o()).unwrap();
                }
            }
            let ctx = || format!("seed {seed} step {step} op {what}");
            assert_eq!(dump(&db, &ReadOptions::default()), model, "{}", ctx());
            for _ in 0..5 {
                let key = k(&mut rng);
                assert_eq!(
                    db.get(&key).unwrap().as_ref(),
                    model.get(&key),
                    "{} get",
                    ctx()
                );
            }
            // A bounded backward scan.
            let (a, b) = (k(&mut rng), k(&mut rng));
            let (a, b) = (a.clone().min(b.clone()), a.max(b));
            let mut it = db
                .raw_iter(&ReadOptions {
                    lower: Some(a.clone()),
                    upper: Some(b.clone()),
                    ..ReadOptions::default()
                })
                .unwrap();
            it.seek_to_last();
            let mut back = Vec::new();
            while it.valid() {
                back.push(it.key().unwrap().to_vec());
                it.prev();
            }
            let want: Vec<Vec<u8>> = model.range(a..b).rev().map(|(k, _)| k.clone()).collect();
            assert_eq!(back, want, "{} backward", ctx());
            for (s, m) in &snaps {
                let at = ReadOptions {
                    snapshot: Some(s),
                    ..ReadOptions::default()
                };
                assert_eq!(&dump(&db, &at), m, "{} snapshot {}", ctx(), s.sequence());
            }
        }
        let m = db.metrics();
        totals[0] += m.excises;
        totals[1] += m.excise_fallbacks;
        totals[2] += m.compactions_cancelled;
        snaps.clear();
    }
    eprintln!("excises cut / fell back / compactions cancelled: {totals:?}");
    assert!(
        totals[0] > 100 && totals[1] > 20,
        "both excise paths: {totals:?}"
    );
}
