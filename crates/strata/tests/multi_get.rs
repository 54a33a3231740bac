//! `Db::multi_get`, `Db::multi_get_opt` and `Snapshot::multi_get`.
//!
//! - A model-based test: random puts, deletes, range deletes, batches,
//!   ingested files (some excising a range, which leaves virtual files),
//!   flushes, compactions, snapshots and reopens; every `multi_get` of a
//!   random key list (repeats, absent keys, keys at and under range
//!   tombstones, sometimes every key in random order) must equal the
//!   per-key `get`s at the same snapshot and the model. Some checks run
//!   while the flush thread is held at a gate, so the immutable queue holds
//!   a memtable and an ingestion waiting behind it (`IngestedFlushable`).
//! - One view: a writer sets two keys to the same counter in every batch,
//!   through memtables, flushes and compactions; every `multi_get` of both
//!   must return equal values.
//! - A damaged data block fails exactly the keys that need it; the other
//!   keys, in the same file and in others, still get their values.
//!
//! `STRATA_SEED=n` runs the model test with that one seed.

#![allow(clippy::unwrap_used)] // tests may unwrap

#[path = "support/gated_vfs.rs"]
mod gated_vfs;

use gated_vfs::{CreateGate, GatedVfs};
use rand::seq::SliceRandom;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use strata::sstable::{SstOptions, SstWriter};
use strata::vfs::{MemVfs, Vfs};
use strata::{Db, Error, IngestOptions, Options, ReadOptions, Snapshot, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Holds the flush thread's table creations while shut, so what it would
/// flush stays in the immutable queue.
#[derive(Default)]
struct FlushGate {
    shut: Mutex<bool>,
    cv: Condvar,
}

impl FlushGate {
    fn set_shut(&self, shut: bool) {
        *self.shut.lock().unwrap() = shut;
        self.cv.notify_all();
    }
}

impl CreateGate for FlushGate {
    fn before_create(&self, path: &Path) {
        let flush = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("strata-flush"));
        if !flush || path.extension().is_none_or(|e| e != "sst") {
            return;
        }
        let mut shut = self.shut.lock().unwrap();
        while *shut {
            shut = self.cv.wait(shut).unwrap();
        }
    }
}

const KEYS: u32 = 300;

fn key(rng: &mut StdRng) -> Vec<u8> {
    format!("k{:03}", rng.gen_range(0..KEYS)).into_bytes()
}

fn value(rng: &mut StdRng) -> Vec<u8> {
    let n = [0, 1, 10, 100, 700][rng.gen_range(0..5)];
    (0..n).map(|_| rng.gen_range(b'a'..=b'z')).collect()
}

fn options(vfs: Arc<dyn Vfs>, rng: &mut StdRng) -> Options {
    Options {
        // Small memtables and files: flushes, L0 files and several levels
        // all the time.
        memtable_size: [4 << 10, 16 << 10, 64 << 10][rng.gen_range(0..3)],
        compaction: strata::CompactionOptions {
            target_file_size: [2 << 10, 16 << 10][rng.gen_range(0..2)],
            base_level_bytes: 8 << 10,
            level_multiplier: 3,
            l0_compaction_threshold: rng.gen_range(2..6),
            l0_sublevels: rng.gen_bool(0.7),
            flush_split_bytes: 8 << 10,
            ..strata::CompactionOptions::default()
        },
        max_immutable_memtables: rng.gen_range(2..5),
        sst: SstOptions {
            block_size: [256, 1024][rng.gen_range(0..2)],
            bloom_bits_per_key: if rng.gen_bool(0.7) { Some(10.0) } else { None },
            ..SstOptions::default()
        },
        vfs: Some(vfs),
        ..Options::default()
    }
}

/// What the checks covered, over every seed: the test fails if a case it
/// is meant to reach never came up.
#[derive(Default, Debug)]
struct Seen {
    checks: u64,
    keys: u64,
    found: u64,
    l0_overlapping: u64,
    deep_levels: u64,
    virtual_files: u64,
    queued_ingestions: u64,
}

/// A key list for one `multi_get`: keys of the model, random keys of the
/// key space, keys outside it (the empty key among them), keys at and just
/// inside the bounds of recent range deletions, and repeats.
fn pick_keys(rng: &mut StdRng, model: &Model, bounds: &[Vec<u8>]) -> Vec<Vec<u8>> {
    if rng.gen_bool(0.1) {
        let mut all: Vec<Vec<u8>> = (0..KEYS).map(|i| format!("k{i:03}").into_bytes()).collect();
        all.shuffle(rng);
        return all;
    }
    let n = rng.gen_range(0..80);
    let mut keys: Vec<Vec<u8>> = Vec::with_capacity(n);
    for _ in 0..n {
        let k = match rng.gen_range(0..100) {
            0..=29 if !model.is_empty() => {
                let i = rng.gen_range(0..model.len());
                model.keys().nth(i).unwrap().clone()
            }
            30..=39 => match rng.gen_range(0..4) {
                0 => Vec::new(),
                1 => b"a".to_vec(),
                2 => b"z".to_vec(),
                _ => format!("k{:03}x", rng.gen_range(0..KEYS)).into_bytes(),
            },
            40..=54 if !bounds.is_empty() => {
                let b = bounds[rng.gen_range(0..bounds.len())].clone();
                if rng.gen_bool(0.5) {
                    b
                } else {
                    // The key just below a bound (inside a range that ends there).
                    let mut k = b;
                    match k.last_mut() {
                        Some(last) if *last > b'0' => *last -= 1,
                        _ => {}
                    }
                    k
                }
            }
            55..=69 if !keys.is_empty() => keys[rng.gen_range(0..keys.len())].clone(),
            _ => key(rng),
        };
        keys.push(k);
    }
    keys
}

/// One `multi_get` of random keys, at the latest data or at a snapshot,
/// through one of the three calls, against `get` per key and the model.
fn check(
    d: &Db,
    model: &Model,
    snap: Option<(&Snapshot, &Model)>,
    rng: &mut StdRng,
    bounds: &[Vec<u8>],
    seen: &mut Seen,
    what: &str,
) {
    let want_model = snap.map_or(model, |(_, m)| m);
    let keys = pick_keys(rng, want_model, bounds);
    let opts = ReadOptions {
        snapshot: snap.map(|(s, _)| s),
        ..ReadOptions::default()
    };
    let got = match snap {
        None if rng.gen_bool(0.5) => d.multi_get(&keys),
        Some((s, _)) if rng.gen_bool(0.5) => s.multi_get(keys.iter()),
        _ => d.multi_get_opt(keys.clone(), &opts),
    };
    assert_eq!(got.len(), keys.len(), "{what}: one result per key");
    for (i, (k, g)) in keys.iter().zip(&got).enumerate() {
        let show = || String::from_utf8_lossy(k).into_owned();
        let g = match g {
            Ok(v) => v,
            Err(e) => panic!("{what}: key {i} {:?}: {e}", show()),
        };
        let one = d.get_opt(k, &opts).unwrap();
        assert_eq!(
            g.as_ref().map(Vec::len),
            one.as_ref().map(Vec::len),
            "{what}: key {i} {:?}: multi_get against get",
            show()
        );
        assert_eq!(
            g,
            &one,
            "{what}: key {i} {:?}: multi_get against get",
            show()
        );
        assert_eq!(
            g.as_ref(),
            want_model.get(k),
            "{what}: key {i} {:?}: multi_get against the model",
            show()
        );
        seen.found += u64::from(g.is_some());
    }
    seen.checks += 1;
    seen.keys += keys.len() as u64;
    // The shape of the tree the check read.
    let files = d.files();
    let l0: Vec<_> = files
        .iter()
        .filter(|(l, _)| *l == 0)
        .map(|(_, f)| f)
        .collect();
    let overlapping = l0.iter().enumerate().any(|(i, a)| {
        l0[i + 1..].iter().any(|b| {
            a.smallest_user_key() <= b.largest_user_key()
                && b.smallest_user_key() <= a.largest_user_key()
        })
    });
    seen.l0_overlapping += u64::from(overlapping);
    let levels: std::collections::BTreeSet<usize> =
        files.iter().map(|(l, _)| *l).filter(|&l| l > 0).collect();
    seen.deep_levels += u64::from(levels.len() >= 2);
    seen.virtual_files += u64::from(files.iter().any(|(_, f)| f.backing.is_some()));
}

/// An ingestible file at `path` of random sorted keys (and sometimes a
/// range tombstone, which deletes what the database held in its range but
/// none of the file's own keys); returns its puts and tombstone.
#[allow(clippy::type_complexity)]
fn random_sst(
    vfs: &dyn Vfs,
    rng: &mut StdRng,
    path: &Path,
    must_have: Option<&[u8]>,
) -> (Vec<(Vec<u8>, Vec<u8>)>, Option<(Vec<u8>, Vec<u8>)>) {
    let mut kvs: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.gen_range(1..40))
        .map(|_| (key(rng), value(rng)))
        .collect();
    if let Some(k) = must_have {
        kvs.push((k.to_vec(), b"ingested".to_vec()));
    }
    kvs.sort();
    kvs.dedup_by(|a, b| a.0 == b.0);
    let tombstone = rng
        .gen_bool(0.3)
        .then(|| {
            let (a, b) = (key(rng), key(rng));
            (a.clone().min(b.clone()), a.max(b))
        })
        .filter(|(a, b)| a < b); // a writer refuses an empty range
    let mut w = SstWriter::create_in(vfs, path, SstOptions::for_ingestion()).unwrap();
    if let Some((a, b)) = &tombstone {
        w.delete_range(a, b).unwrap();
    }
    for (k, v) in &kvs {
        w.put(k, v).unwrap();
    }
    w.finish().unwrap();
    (kvs, tombstone)
}

fn remove_range(model: &mut Model, a: &[u8], b: &[u8]) {
    if a >= b {
        return;
    }
    let doomed: Vec<_> = model
        .range(a.to_vec()..b.to_vec())
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        model.remove(&k);
    }
}

fn run(seed: u64, steps: usize, seen: &mut Seen) {
    let mut rng = StdRng::seed_from_u64(seed);
    let gate = Arc::new(GatedVfs::with_gate(FlushGate::default()));
    let vfs: Arc<dyn Vfs> = gate.clone();
    let dir = Path::new("/db");
    let mut db = Some(Db::open(dir, options(vfs.clone(), &mut rng)).unwrap());
    let mut model = Model::new();
    let mut snaps: BTreeMap<u32, (Snapshot, Model)> = BTreeMap::new();
    let mut next_snap = 0u32;
    // Bounds of recent range deletions (the keys most likely to be read
    // wrong at a tombstone's edge).
    let mut bounds: Vec<Vec<u8>> = Vec::new();
    let files = Path::new("/in");
    vfs.create_dir_all(files).unwrap();
    for step in 0..steps {
        let d = db.as_ref().unwrap();
        let what = format!("seed {seed} step {step}");
        let pick_snap = |rng: &mut StdRng, snaps: &BTreeMap<u32, (Snapshot, Model)>| {
            if snaps.is_empty() || rng.gen_bool(0.5) {
                return None;
            }
            let id = *snaps.keys().nth(rng.gen_range(0..snaps.len())).unwrap();
            Some(id)
        };
        match rng.gen_range(0..100) {
            0..=29 => {
                let (k, v) = (key(&mut rng), value(&mut rng));
                d.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            30..=37 => {
                let k = key(&mut rng);
                d.delete(&k).unwrap();
                model.remove(&k);
            }
            38..=42 => {
                let (a, b) = (key(&mut rng), key(&mut rng));
                let (a, b) = (a.clone().min(b.clone()), a.max(b));
                d.delete_range(&a, &b).unwrap();
                remove_range(&mut model, &a, &b);
                bounds.push(a);
                bounds.push(b);
                if bounds.len() > 20 {
                    bounds.drain(..2);
                }
            }
            43..=48 => {
                let mut b = WriteBatch::new();
                for _ in 0..rng.gen_range(1..20) {
                    let k = key(&mut rng);
                    if rng.gen_bool(0.8) {
                        let v = value(&mut rng);
                        b.put(&k, &v);
                        model.insert(k, v);
                    } else {
                        b.delete(&k);
                        model.remove(&k);
                    }
                }
                d.write(b, &strata::WriteOptions::default()).unwrap();
            }
            49..=54 => {
                // An ingestion, straight into the tree or queued behind an
                // overlapping memtable, sometimes excising a range.
                let path = files.join(format!("{seed}-{step}.sst"));
                let (kvs, tombstone) = random_sst(vfs.as_ref(), &mut rng, &path, None);
                let excise = rng.gen_bool(0.25).then(|| {
                    let (a, b) = (key(&mut rng), key(&mut rng));
                    (a.clone().min(b.clone()), a.max(b))
                });
                let excise = excise.filter(|(a, b)| a < b);
                let io = IngestOptions {
                    small_file_bytes: if rng.gen_bool(0.2) { 1 << 20 } else { 0 },
                    excise: excise.clone(),
                    ..IngestOptions::default()
                };
                d.ingest(&[&path], &io).unwrap();
                for (a, b) in excise.iter().chain(&tombstone) {
                    remove_range(&mut model, a, b);
                    bounds.push(a.clone());
                    bounds.push(b.clone());
                }
                for (k, v) in kvs {
                    model.insert(k, v);
                }
            }
            55..=56 => d.flush().unwrap(),
            57..=58 => {
                if rng.gen_bool(0.5) {
                    d.compact_range(None, None).unwrap();
                } else {
                    let (a, b) = (key(&mut rng), key(&mut rng));
                    d.compact_range(Some(&a.clone().min(b.clone())), Some(&a.max(b)))
                        .unwrap();
                }
            }
            59..=62 => {
                if snaps.len() < 4 {
                    snaps.insert(next_snap, (d.snapshot(), model.clone()));
                    next_snap += 1;
                }
            }
            63..=64 => {
                if let Some(&id) = snaps.keys().next() {
                    snaps.remove(&id);
                }
            }
            65..=66 => {
                // The flush held: a write, then an ingestion overlapping it
                // queued behind its memtable, then more writes; the reads
                // see the queue as it is.
                d.flush().unwrap();
                gate.set_shut(true);
                let k = key(&mut rng);
                d.put(&k, b"queued").unwrap();
                model.insert(k.clone(), b"queued".to_vec());
                let before = (d.snapshot(), model.clone());
                let path = files.join(format!("{seed}-{step}-q.sst"));
                let (kvs, tombstone) = random_sst(vfs.as_ref(), &mut rng, &path, Some(&k));
                let io = IngestOptions {
                    small_file_bytes: 0,
                    ..IngestOptions::default()
                };
                let r = d.ingest(&[&path], &io).unwrap();
                assert!(r.flushable, "{what}: the file overlaps the memtable: {r:?}");
                seen.queued_ingestions += 1;
                if let Some((a, b)) = &tombstone {
                    remove_range(&mut model, a, b);
                    bounds.push(a.clone());
                    bounds.push(b.clone());
                }
                for (k, v) in kvs {
                    model.insert(k, v);
                }
                for _ in 0..rng.gen_range(0..3) {
                    let k = key(&mut rng);
                    d.put(&k, b"after").unwrap();
                    model.insert(k, b"after".to_vec());
                }
                for _ in 0..3 {
                    check(d, &model, None, &mut rng, &bounds, seen, &what);
                }
                check(
                    d,
                    &model,
                    Some((&before.0, &before.1)),
                    &mut rng,
                    &bounds,
                    seen,
                    &what,
                );
                if let Some(id) = pick_snap(&mut rng, &snaps) {
                    let (s, m) = &snaps[&id];
                    check(d, &model, Some((s, m)), &mut rng, &bounds, seen, &what);
                }
                gate.set_shut(false);
            }
            67..=69 => {
                // Reopen: snapshots do not survive it.
                snaps.clear();
                let old = db.take().unwrap();
                old.close().unwrap();
                db = Some(Db::open(dir, options(vfs.clone(), &mut rng)).unwrap());
            }
            _ => {
                let snap = pick_snap(&mut rng, &snaps).map(|id| {
                    let (s, m) = &snaps[&id];
                    (s, m)
                });
                check(d, &model, snap, &mut rng, &bounds, seen, &what);
            }
        }
    }
    snaps.clear();
    db.take().unwrap().close().unwrap();
}

#[test]
fn multi_get_matches_get_and_the_model() {
    let seeds: Vec<u64> = match std::env::var("STRATA_SEED") {
        Ok(s) => vec![s.parse().unwrap()],
        Err(_) => (0..10).collect(),
    };
    let mut seen = Seen::default();
    for &seed in &seeds {
        run(seed, 1500, &mut seen);
    }
    eprintln!("{seen:?}");
    if seeds.len() > 1 {
        assert!(
            seen.found > seen.keys / 4,
            "most checks found keys: {seen:?}"
        );
        assert!(seen.l0_overlapping > 0, "L0 files overlapped: {seen:?}");
        assert!(
            seen.deep_levels > 0,
            "two or more levels below L0: {seen:?}"
        );
        assert!(
            seen.virtual_files > 0,
            "an excise left virtual files: {seen:?}"
        );
        assert!(seen.queued_ingestions > 0, "{seen:?}");
    }
}

/// A writer sets `a` and `z` to the same counter in every batch (with
/// filler keys between them, so that flushes and compactions put them in
/// different files); every `multi_get` of both, in either order, at the
/// latest data or at a snapshot, must return equal values.
#[test]
fn multi_get_reads_one_view_under_a_concurrent_writer() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        memtable_size: 16 << 10,
        compaction: strata::CompactionOptions {
            target_file_size: 8 << 10,
            base_level_bytes: 64 << 10,
            l0_compaction_threshold: 2,
            ..strata::CompactionOptions::default()
        },
        sst: SstOptions {
            block_size: 512,
            ..SstOptions::default()
        },
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    // The writer writes a fixed number of batches; the reader reads until
    // it is done (no clock: the counts bound both).
    const BATCHES: u64 = 20_000;
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (db, written) = (db.clone(), written.clone());
        std::thread::spawn(move || {
            let filler = [b'f'; 100];
            for c in 1..=BATCHES {
                let mut b = WriteBatch::new();
                b.put("a", c.to_be_bytes());
                b.put(format!("m{:04}", c % 1000), filler);
                b.put("z", c.to_be_bytes());
                db.write(b, &strata::WriteOptions::default()).unwrap();
                written.store(c, Ordering::Relaxed);
            }
        })
    };
    while written.load(Ordering::Relaxed) == 0 {
        std::thread::yield_now();
    }
    let mut values = std::collections::BTreeSet::new();
    let mut rng = StdRng::seed_from_u64(7);
    let mut reads = 0u64;
    while written.load(Ordering::Relaxed) < BATCHES {
        let mut keys: Vec<&[u8]> = vec![b"a", b"z", b"m0001", b"a"];
        keys.shuffle(&mut rng);
        let snap = reads.is_multiple_of(10).then(|| db.snapshot());
        let got = match &snap {
            Some(s) => s.multi_get(&keys),
            None => db.multi_get(&keys),
        };
        let of = |k: &[u8]| -> Vec<u8> {
            let i = keys.iter().position(|x| *x == k).unwrap();
            got[i].as_ref().unwrap().clone().unwrap()
        };
        let (a, z) = (of(b"a"), of(b"z"));
        assert_eq!(a, z, "read {reads}: a and z from different writes");
        values.insert(a);
        reads += 1;
    }
    writer.join().unwrap();
    db.flush().unwrap();
    let files = db.files();
    eprintln!(
        "{reads} reads, {} distinct values read, {} files",
        values.len(),
        files.len()
    );
    // The reads overlapped the writes (else the test proves nothing).
    assert!(
        values.len() > 100,
        "only {} distinct values read",
        values.len()
    );
    db.compact_range(None, None).unwrap();
    let files = db.files();
    let holding = |k: &[u8]| {
        files
            .iter()
            .find(|(_, f)| f.smallest_user_key() <= k && k <= f.largest_user_key())
            .map(|(_, f)| f.number)
    };
    assert_ne!(holding(b"a"), holding(b"z"), "a and z in different files");
}

/// Every key of the database for the corruption test, with its value.
fn corruption_kv(i: usize) -> (Vec<u8>, Vec<u8>) {
    (
        format!("key{i:05}").into_bytes(),
        format!("value-{i}-").repeat(1 + i % 4).into_bytes(),
    )
}

/// A damaged data block fails, with corruption naming its file and
/// offset, exactly the keys whose lookup reads it (as `get` does); the
/// other keys of that file and every key of the other file keep their
/// values.
#[test]
fn a_damaged_block_fails_only_the_keys_that_need_it() {
    use strata::iter::InternalIterator;
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options {
        sst: SstOptions {
            block_size: 512,
            ..SstOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts()).unwrap();
    // Two files: keys 0..1000 and 1000..2000.
    for half in [0..1000, 1000..2000] {
        for i in half {
            let (k, v) = corruption_kv(i);
            db.put(k, v).unwrap();
        }
        db.flush().unwrap();
    }
    let files = db.files();
    assert_eq!(files.len(), 2, "{files:?}");
    db.close().unwrap();
    let first = files
        .iter()
        .map(|(_, f)| f)
        .find(|f| f.smallest_user_key() == b"key00000")
        .unwrap();
    let path = dir.path().join(format!("{:06}.sst", first.number));
    assert!(path.exists(), "{}", path.display());
    // Which data block each key of the file is in.
    let block_of: BTreeMap<Vec<u8>, u64> = {
        let t = strata::sstable::Table::open_in(
            &strata::vfs::OsVfs,
            &path,
            strata::sstable::TableOptions::default(),
        )
        .unwrap();
        let mut it = t.iter();
        it.seek_to_first();
        let mut m = BTreeMap::new();
        while it.valid() {
            m.insert(strata::key::user_key(it.key()).to_vec(), it.block_offset());
            it.next();
        }
        it.status().unwrap();
        m
    };
    let mut blocks: Vec<u64> = block_of.values().copied().collect();
    blocks.dedup();
    assert!(blocks.len() > 10, "{} blocks", blocks.len());
    let damaged = blocks[blocks.len() / 2];
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[damaged as usize + 20] ^= 0x55;
    std::fs::write(&path, bytes).unwrap();

    let db = Db::open(dir.path(), opts()).unwrap();
    let mut keys: Vec<Vec<u8>> = (0..2000).map(|i| corruption_kv(i).0).collect();
    keys.push(b"key00500x".to_vec()); // absent
    keys.shuffle(&mut StdRng::seed_from_u64(1));
    let got = db.multi_get(&keys);
    let (mut failed, mut read) = (0, 0);
    for (k, g) in keys.iter().zip(&got) {
        let one = db.get(k);
        match block_of.get(k) {
            Some(&b) if b == damaged => {
                match g {
                    Err(Error::Corruption { file, offset, .. }) => {
                        assert!(file.ends_with(path.file_name().unwrap().to_str().unwrap()));
                        assert_eq!(*offset, damaged);
                    }
                    other => panic!("{:?}: {other:?}", String::from_utf8_lossy(k)),
                }
                assert_eq!(
                    one.unwrap_err().to_string(),
                    g.as_ref().unwrap_err().to_string(),
                    "get fails the same way"
                );
                failed += 1;
            }
            _ => {
                let i: Option<usize> = std::str::from_utf8(&k[3..]).unwrap().parse().ok();
                let want = i.map(|i| corruption_kv(i).1);
                assert_eq!(
                    g.as_ref().unwrap(),
                    &want,
                    "{:?}",
                    String::from_utf8_lossy(k)
                );
                assert_eq!(one.unwrap(), want);
                read += 1;
            }
        }
    }
    assert!(failed > 0 && read > 1900, "failed {failed}, read {read}");
}

#[test]
fn empty_lists_and_foreign_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let a = Db::open(dir.path().join("a"), Options::default()).unwrap();
    let b = Db::open(dir.path().join("b"), Options::default()).unwrap();
    a.put("k", "v").unwrap();
    assert!(a.multi_get(Vec::<Vec<u8>>::new()).is_empty());
    let other = b.snapshot();
    let opts = ReadOptions {
        snapshot: Some(&other),
        ..ReadOptions::default()
    };
    let got = a.multi_get_opt(["k", "x"], &opts);
    assert_eq!(got.len(), 2);
    for g in got {
        assert!(matches!(g, Err(Error::InvalidArgument(_))), "{g:?}");
    }
    // The database's own snapshot reads.
    let own = a.snapshot();
    let opts = ReadOptions {
        snapshot: Some(&own),
        ..ReadOptions::default()
    };
    let got: Vec<_> = a
        .multi_get_opt(["k", "x"], &opts)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, [Some(b"v".to_vec()), None]);
    // A MemVfs-backed database, for the in-memory path too.
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let m = Db::open(
        "/m",
        Options {
            vfs: Some(vfs),
            ..Options::default()
        },
    )
    .unwrap();
    m.put("k", "v").unwrap();
    let got: Vec<_> = m.multi_get(["k"]).into_iter().map(Result::unwrap).collect();
    assert_eq!(got, [Some(b"v".to_vec())]);
}
