//! Ingestion with writers running beside it, checked against a model.
//!
//! Two writer threads Put into the same 100 keys that the ingestions (some
//! with an excise range) write, so ingestions overlap the memtable and take
//! the queued path as often as the direct one. The test cannot know the
//! exact sequence number of a Put, but it can bound it: the visible
//! sequence number read just before the call is below it and the one read
//! just after is at or above it. An ingestion's number is exact. From those
//! bounds the model computes, for any read point, the set of values a key
//! may have: an operation may be the newest at `P` if it may be at or below
//! `P` and no other operation is certainly between it and `P`. Every read
//! (the latest state, and snapshots taken while writers run, read both at
//! once and later) must give a value from that set, so a lost write, an
//! ingestion ordered on the wrong side of a write, or an ingestion seen in
//! part all fail the test. Each seed runs three phases with a reopen
//! between them (writers stopped, database closed without flushing).
//! `STRATA_CONC_SEEDS=n` runs seeds `0..n` (default 12) for long runs.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use strata::sstable::{SstOptions, SstWriter};
use strata::vfs::{MemVfs, Vfs};
use strata::{Db, IngestOptions, Options, ReadOptions};

const KEYS: u32 = 100;

/// Keys `KEYS..KEYS + APART` are only ever ingested, never written by the
/// writers or through the batch path, so no memtable holds them and an
/// ingestion of them takes the placed path whatever the timing (the
/// writers keep every memtable spanning nearly all of `0..KEYS`, so
/// without them the placed path depended on an ingestion landing just
/// after a rotation, and one run in several took it never).
const APART: u32 = 20;

/// One operation on one key: `value` None is a deletion (an excise).
/// Its sequence number lies in `[min, max]`.
#[derive(Clone, Debug)]
struct Op {
    min: u64,
    max: u64,
    value: Option<Vec<u8>>,
}

type History = Arc<Mutex<BTreeMap<Vec<u8>, Vec<Op>>>>;

fn key(k: u32) -> Vec<u8> {
    format!("k{k:03}").into_bytes()
}

/// The values `ops` allow for a key read at sequence number `p`
/// (`None` = absent).
fn possible(ops: &[Op], p: u64) -> Vec<Option<Vec<u8>>> {
    let certainly_between = |lo: u64| ops.iter().any(|y| y.min > lo && y.max <= p);
    let mut out = Vec::new();
    // Absent before any operation.
    if !ops.iter().any(|y| y.max <= p) {
        out.push(None);
    }
    for x in ops {
        if x.min <= p && !certainly_between(x.max) {
            out.push(x.value.clone());
        }
    }
    out
}

fn check(db: &Db, hist: &History, snapshot: Option<&strata::Snapshot>, what: &str) {
    let p = snapshot.map_or(u64::MAX, |s| s.sequence());
    let mut it = db
        .raw_iter(&ReadOptions {
            snapshot,
            ..ReadOptions::default()
        })
        .unwrap();
    it.seek_to_first();
    let mut got = BTreeMap::new();
    while it.valid() {
        got.insert(it.key().unwrap().to_vec(), it.value().unwrap().to_vec());
        it.next();
    }
    it.status().unwrap();
    let h = hist.lock().unwrap();
    for k in 0..KEYS + APART {
        let k = key(k);
        let ops = h.get(&k).cloned().unwrap_or_default();
        let allowed = possible(&ops, p);
        let have = got.get(&k).cloned();
        assert!(
            allowed.contains(&have),
            "{what}: key {} reads {:?} at {p}; allowed {:?}",
            String::from_utf8_lossy(&k),
            have.as_ref()
                .map(|v| String::from_utf8_lossy(v).into_owned()),
            allowed
                .iter()
                .map(|v| v.as_ref().map(|v| String::from_utf8_lossy(v).into_owned()))
                .collect::<Vec<_>>()
        );
        // The point lookup agrees with the iterator.
        let g = db
            .get_opt(
                &k,
                &ReadOptions {
                    snapshot,
                    ..ReadOptions::default()
                },
            )
            .unwrap();
        assert!(
            allowed.contains(&g),
            "{what}: get of {} gives {:?} at {p}, the iterator {:?}; ops {:?}",
            String::from_utf8_lossy(&k),
            g.as_ref().map(|v| String::from_utf8_lossy(v).into_owned()),
            have.as_ref()
                .map(|v| String::from_utf8_lossy(v).into_owned()),
            ops.iter()
                .map(|o| (
                    o.min,
                    o.max,
                    o.value
                        .as_ref()
                        .map(|v| String::from_utf8_lossy(v).into_owned())
                ))
                .collect::<Vec<_>>()
        );
    }
}

fn writer(db: Arc<Db>, hist: History, t: u32, seed: u64, stop: Arc<AtomicBool>) {
    let mut rng = StdRng::seed_from_u64(seed ^ (0x9e37 * (t as u64 + 1)));
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let k = key(rng.gen_range(0..KEYS));
        let v = format!("w{t}-{seed}-{n}").into_bytes();
        n += 1;
        // Recorded before the call with no upper bound (a reader may see
        // the Put before the call returns), then bounded once it returns.
        let lo = db.latest_sequence();
        let at = {
            let mut h = hist.lock().unwrap();
            let ops = h.entry(k.clone()).or_default();
            ops.push(Op {
                min: lo + 1,
                max: u64::MAX,
                value: Some(v.clone()),
            });
            ops.len() - 1
        };
        db.put(&k, &v).unwrap();
        let hi = db.latest_sequence();
        hist.lock().unwrap().get_mut(&k).unwrap()[at].max = hi;
        if n.is_multiple_of(16) {
            std::thread::yield_now();
        }
    }
}

#[test]
fn ingestion_beside_concurrent_writers_matches_the_model() {
    let seeds: u64 = std::env::var("STRATA_CONC_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    let mut paths = [0u32; 3];
    for seed in 0..seeds {
        let mut rng = StdRng::seed_from_u64(seed);
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let files = tempfile::tempdir().unwrap();
        let o = || Options {
            vfs: Some(vfs.clone()),
            memtable_size: 8 << 10,
            max_immutable_memtables: 2,
            ..Options::default()
        };
        let hist: History = Arc::new(Mutex::new(BTreeMap::new()));
        let mut file_no = 0;
        for phase in 0..3 {
            let db = Arc::new(Db::open("/db", o()).unwrap());
            check(
                &db,
                &hist,
                None,
                &format!("seed {seed} after reopen {phase}"),
            );
            let stop = Arc::new(AtomicBool::new(false));
            let threads: Vec<_> = (0..2)
                .map(|t| {
                    let (db, hist, stop) = (db.clone(), hist.clone(), stop.clone());
                    let s = seed * 10 + phase;
                    std::thread::spawn(move || writer(db, hist, t, s, stop))
                })
                .collect();
            let mut snaps = Vec::new();
            for step in 0..12 {
                std::thread::sleep(std::time::Duration::from_micros(rng.gen_range(0..2000)));
                match rng.gen_range(0..10) {
                    0..=5 => {
                        // An ingestion: a few keys, sometimes an excise range;
                        // one in four of keys apart from the writers' (see
                        // `APART`), as a file, without an excise.
                        let apart = rng.gen_bool(0.25);
                        let (base, span) = if apart { (KEYS, APART) } else { (0, KEYS) };
                        let mut ks: Vec<u32> = (0..rng.gen_range(1..25))
                            .map(|_| base + rng.gen_range(0..span))
                            .collect();
                        ks.sort_unstable();
                        ks.dedup();
                        let p = files.path().join(format!("{file_no}.sst"));
                        file_no += 1;
                        let mut w =
                            SstWriter::create_in(vfs.as_ref(), &p, SstOptions::for_ingestion())
                                .unwrap();
                        let val = |k: u32| format!("i{seed}-{phase}-{step}-{k}").into_bytes();
                        for &k in &ks {
                            w.put(key(k), val(k)).unwrap();
                        }
                        w.finish().unwrap();
                        let excise = (!apart && rng.gen_bool(0.25)).then(|| {
                            let a = rng.gen_range(0..KEYS);
                            let b = rng.gen_range(a + 1..=KEYS);
                            (a, b)
                        });
                        let opts = IngestOptions {
                            small_file_bytes: if !apart && rng.gen_bool(0.2) {
                                1 << 20
                            } else {
                                0
                            },
                            excise: excise.map(|(a, b)| (key(a), key(b))),
                            ..IngestOptions::default()
                        };
                        let lo = db.latest_sequence();
                        let r = db.ingest(&[p], &opts).unwrap();
                        paths[if r.as_batch {
                            0
                        } else if r.flushable {
                            1
                        } else {
                            2
                        }] += 1;
                        let mut h = hist.lock().unwrap();
                        let (min, max) = if r.as_batch {
                            // A batch takes several sequence numbers (its
                            // excise first), all after `lo`; the result
                            // names the visible number after the call.
                            (lo + 1, r.sequence)
                        } else {
                            (r.sequence, r.sequence)
                        };
                        if let Some((a, b)) = excise {
                            for k in a..b {
                                if ks.binary_search(&k).is_err() {
                                    h.entry(key(k)).or_default().push(Op {
                                        min,
                                        max,
                                        value: None,
                                    });
                                }
                            }
                        }
                        for &k in &ks {
                            h.entry(key(k)).or_default().push(Op {
                                min,
                                max,
                                value: Some(val(k)),
                            });
                        }
                    }
                    6 => {
                        let s = db.snapshot();
                        check(&db, &hist, Some(&s), &format!("seed {seed} snapshot"));
                        snaps.push(s);
                    }
                    7 => db.flush().unwrap(),
                    _ => {
                        if let Some(s) = snaps.first() {
                            check(&db, &hist, Some(s), "old snapshot");
                        }
                        // Reads at a sequence number need a registered
                        // snapshot: without one, a flush or compaction may
                        // drop the versions that number would see.
                        let s = db.snapshot();
                        check(&db, &hist, Some(&s), "latest");
                    }
                }
            }
            stop.store(true, Ordering::Relaxed);
            for t in threads {
                t.join().unwrap();
            }
            for s in &snaps {
                check(&db, &hist, Some(s), "snapshot after writers stopped");
            }
            check(&db, &hist, None, &format!("seed {seed} phase {phase} end"));
            drop(snaps);
            let db = Arc::try_unwrap(db).unwrap_or_else(|_| panic!("db still shared"));
            db.close().unwrap();
        }
    }
    // Both placement paths and the batch path must have been exercised.
    assert!(paths.iter().all(|&n| n > 0), "paths taken: {paths:?}");
}
