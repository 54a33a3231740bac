//! Model-based test of the database: thousands of random operations (puts,
//! deletes, range deletes, batches, snapshot reads, iterators in both
//! directions, flushes, reopens) checked against a `BTreeMap`, on the
//! in-memory file system and on disk.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use strata::sstable::SstOptions;
use strata::vfs::{MemVfs, Vfs};
use strata::{Db, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(rng: &mut StdRng) -> Vec<u8> {
    format!("k{:04}", rng.gen_range(0..400)).into_bytes()
}

fn value(rng: &mut StdRng) -> Vec<u8> {
    let n = [0, 1, 10, 100, 1000][rng.gen_range(0..5)];
    (0..n).map(|_| rng.gen_range(b'a'..=b'z')).collect()
}

fn options(vfs: Option<Arc<dyn Vfs>>, rng: &mut StdRng) -> Options {
    Options {
        // Small memtables so rotations and flushes happen all the time.
        memtable_size: [4 << 10, 32 << 10, 256 << 10][rng.gen_range(0..3)],
        compaction: strata::CompactionOptions {
            target_file_size: [4 << 10, 64 << 10][rng.gen_range(0..2)],
            base_level_bytes: 64 << 10,
            l0_compaction_threshold: rng.gen_range(2..5),
            l0_sublevels: rng.gen_bool(0.7),
            flush_split_bytes: 16 << 10,
            ..strata::CompactionOptions::default()
        },
        max_immutable_memtables: rng.gen_range(1..4),
        sst: SstOptions {
            block_size: 512,
            ..SstOptions::default()
        },
        vfs,
        ..Options::default()
    }
}

fn range(m: &Model, lo: Option<&Vec<u8>>, hi: Option<&Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter()
        .filter(|(k, _)| lo.is_none_or(|l| *k >= l) && hi.is_none_or(|h| *k < h))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Compares scans, reporting the first difference rather than every value.
fn same(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)], what: &str) {
    if got == want {
        return;
    }
    let i = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let show = |e: Option<&(Vec<u8>, Vec<u8>)>| {
        e.map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), v.len()))
    };
    panic!(
        "{what}: {} entries, expected {}; first difference at {i}: got {:?}, expected {:?}",
        got.len(),
        want.len(),
        show(got.get(i)),
        show(want.get(i))
    );
}

fn check_iter(db: &Db, m: &Model, snap: Option<&Snapshot>, rng: &mut StdRng) {
    let (mut lo, mut hi) = (None, None);
    if rng.gen_bool(0.3) {
        let (a, b) = (key(rng), key(rng));
        lo = Some(a.clone().min(b.clone()));
        hi = Some(a.max(b));
    }
    let opts = ReadOptions {
        snapshot: snap,
        lower: lo.clone(),
        upper: hi.clone(),
    };
    let want = range(m, lo.as_ref(), hi.as_ref());
    let mut it = db.raw_iter(&opts).unwrap();
    if rng.gen_bool(0.5) {
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
            it.next();
        }
        it.status().unwrap();
        same(&got, &want, "forward scan");
    } else {
        it.seek_to_last();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
            it.prev();
        }
        it.status().unwrap();
        got.reverse();
        same(&got, &want, "backward scan");
    }
    // A seek, then a random walk mixing directions.
    let target = key(rng);
    let mut pos: Option<usize> = want.iter().position(|(k, _)| *k >= target);
    it.seek(&target);
    for _ in 0..20 {
        match pos {
            Some(p) => {
                assert!(it.valid(), "iterator should be at {:?}", want[p].0);
                assert_eq!(it.key().unwrap(), want[p].0.as_slice());
                assert_eq!(it.value().unwrap(), want[p].1.as_slice());
            }
            None => {
                assert!(!it.valid(), "iterator should be exhausted");
                break;
            }
        }
        if rng.gen_bool(0.5) {
            it.next();
            pos = pos.and_then(|p| (p + 1 < want.len()).then_some(p + 1));
        } else {
            it.prev();
            pos = pos.and_then(|p| p.checked_sub(1));
        }
    }
}

fn run(seed: u64, vfs: Option<Arc<dyn Vfs>>, dir: &Path, steps: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut db = Some(Db::open(dir, options(vfs.clone(), &mut rng)).unwrap());
    let mut model = Model::new();
    let mut snaps: HashMap<u32, (Snapshot, Model)> = HashMap::new();
    let mut next_snap = 0u32;
    let mut compactions = 0u64;
    let files = tempfile::tempdir().unwrap();
    for step in 0..steps {
        let d = db.as_ref().unwrap();
        let op = rng.gen_range(0..100);
        if std::env::var_os("STRATA_MODEL_TRACE").is_some() {
            eprintln!("seed {seed} step {step} op {op}");
        }
        match op {
            0..=34 => {
                let (k, v) = (key(&mut rng), value(&mut rng));
                d.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            35..=44 => {
                let k = key(&mut rng);
                d.delete(&k).unwrap();
                model.remove(&k);
            }
            45..=47 => {
                let (a, b) = (key(&mut rng), key(&mut rng));
                let r = d.delete_range(&a, &b);
                if a <= b {
                    r.unwrap();
                    let doomed: Vec<_> = model.range(a..b).map(|(k, _)| k.clone()).collect();
                    for k in doomed {
                        model.remove(&k);
                    }
                } else {
                    assert!(matches!(r, Err(strata::Error::InvalidArgument(_))), "{r:?}");
                }
            }
            48..=57 => {
                let mut b = WriteBatch::new();
                let mut next = model.clone();
                for _ in 0..rng.gen_range(1..20) {
                    let k = key(&mut rng);
                    if rng.gen_bool(0.8) {
                        let v = value(&mut rng);
                        b.put(&k, &v);
                        next.insert(k, v);
                    } else {
                        b.delete(&k);
                        next.remove(&k);
                    }
                }
                let sync = rng.gen_bool(0.1);
                d.write(b, &WriteOptions { sync }).unwrap();
                model = next;
            }
            58..=71 => {
                let k = key(&mut rng);
                if !snaps.is_empty() && rng.gen_bool(0.4) {
                    let id = *snaps.keys().nth(rng.gen_range(0..snaps.len())).unwrap();
                    let (s, m) = &snaps[&id];
                    let opts = ReadOptions {
                        snapshot: Some(s),
                        ..ReadOptions::default()
                    };
                    assert_eq!(
                        d.get_opt(&k, &opts).unwrap().as_ref(),
                        m.get(&k),
                        "snapshot get, step {step}"
                    );
                } else {
                    assert_eq!(
                        d.get(&k).unwrap().as_ref(),
                        model.get(&k),
                        "get {k:?}, step {step}"
                    );
                }
            }
            72..=76 => {
                if !snaps.is_empty() && rng.gen_bool(0.4) {
                    let id = *snaps.keys().nth(rng.gen_range(0..snaps.len())).unwrap();
                    let (s, m) = &snaps[&id];
                    check_iter(d, m, Some(s), &mut rng);
                } else {
                    check_iter(d, &model, None, &mut rng);
                }
            }
            77..=82 => {
                if snaps.len() < 5 {
                    snaps.insert(next_snap, (d.snapshot(), model.clone()));
                    next_snap += 1;
                }
            }
            83..=86 => {
                if let Some(&id) = snaps.keys().next() {
                    snaps.remove(&id);
                }
            }
            87..=88 => d.flush().unwrap(),
            89 => {
                // Ingest a file of sorted keys (overlapping the memtable or
                // not, as chance has it), or a small one as a batch.
                let mut kvs: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.gen_range(1..60))
                    .map(|_| (key(&mut rng), value(&mut rng)))
                    .collect();
                kvs.sort();
                kvs.dedup_by(|a, b| a.0 == b.0);
                let path = files.path().join(format!("ingest-{step}.sst"));
                let mut w = match &vfs {
                    Some(v) => strata::sstable::SstWriter::create_in(
                        v.as_ref(),
                        &path,
                        SstOptions::for_ingestion(),
                    ),
                    None => strata::sstable::SstWriter::create(&path, SstOptions::for_ingestion()),
                }
                .unwrap();
                for (k, v) in &kvs {
                    w.put(k, v).unwrap();
                }
                w.finish().unwrap();
                let io = strata::IngestOptions {
                    small_file_bytes: if rng.gen_bool(0.2) { 1 << 20 } else { 0 },
                    move_files: rng.gen_bool(0.5),
                    ..strata::IngestOptions::default()
                };
                let r = d.ingest(&[path], &io).unwrap();
                if std::env::var_os("STRATA_MODEL_TRACE").is_some() {
                    eprintln!(
                        "ingest {r:?} keys {}..{}",
                        String::from_utf8_lossy(&kvs[0].0),
                        String::from_utf8_lossy(&kvs[kvs.len() - 1].0)
                    );
                }
                for (k, v) in kvs {
                    model.insert(k, v);
                }
            }
            90..=92 => {
                if rng.gen_bool(0.5) {
                    d.compact_range(None, None).unwrap();
                } else {
                    let (a, b) = (key(&mut rng), key(&mut rng));
                    d.compact_range(Some(&a.clone().min(b.clone())), Some(&a.max(b)))
                        .unwrap();
                }
                check_iter(d, &model, None, &mut rng);
            }
            _ => {
                // Reopen: snapshots do not survive it.
                snaps.clear();
                let old = db.take().unwrap();
                let m = old.metrics();
                compactions += m.compactions + m.moves;
                old.close().unwrap();
                db = Some(Db::open(dir, options(vfs.clone(), &mut rng)).unwrap());
                let d = db.as_ref().unwrap();
                check_iter(d, &model, None, &mut rng);
            }
        }
    }
    snaps.clear();
    let d = db.take().unwrap();
    let mut it = d.raw_iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut got = Model::new();
    while it.valid() {
        got.insert(it.key().unwrap().to_vec(), it.value().unwrap().to_vec());
        it.next();
    }
    assert_eq!(got, model, "final contents");
    let m = d.metrics();
    compactions += m.compactions + m.moves;
    assert!(compactions > 0, "seed {seed}: no compaction ran");
    d.close().unwrap();
}

#[test]
fn model_in_memory() {
    for seed in 0..6 {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        run(seed, Some(vfs), Path::new("/db"), 3000);
    }
}

#[test]
fn model_on_disk() {
    for seed in 100..103 {
        let dir = tempfile::tempdir().unwrap();
        run(seed, None, dir.path(), 2000);
    }
}
