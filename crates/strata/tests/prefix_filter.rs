//! Prefix bloom filters on the database's read path
//! (`Options::sst.prefix_extractor`).
//!
//! - `prefix_scans_match_a_model`: random keys sharing a few prefixes
//!   (and keys shorter than them, outside a fixed extractor's domain),
//!   written by puts, deletes, range deletions and ingested files (written
//!   with the database's extractor, another one, none, with and without
//!   whole keys in the filter, with range tombstones and point deletions,
//!   some excising a range into virtual files), flushed and compacted into
//!   many small files, reopened with the extractor changed or removed.
//!   After every step, prefix scans, ranges inside one prefix (both ways,
//!   and a raw cursor seeking inside them), point reads, and the same at
//!   held snapshots, are compared with a model and with a scan whose
//!   bounds allow no filtering. It also checks that files were skipped.
//! - `files_are_skipped_*`: a prefix scan over many files reads the data
//!   blocks of only the files holding the prefix (the counters, and block
//!   reads), in L0 and in a lower level.
//! - `a_skipped_files_range_tombstone_still_deletes`: a file whose filter
//!   rules the prefix out but whose range tombstone covers keys of it in
//!   older files; the keys stay deleted.
//! - `point_reads_use_a_prefix_only_filter`: with whole keys left out of the
//!   filter, a get of an absent prefix reads no data block.
//!
//! `STRATA_MODEL_SEEDS=n` runs n seeds of the model test (default 100).

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use strata::sstable::{CappedPrefix, FixedPrefix, PrefixExtractor};
use strata::vfs::{MemVfs, Vfs};
use strata::{
    CompactionOptions, Db, IngestOptions, Options, ReadOptions, Snapshot, SstOptions, SstWriter,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn seeds(default: u64) -> u64 {
    std::env::var("STRATA_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The extractors a database or an ingested file may use (`None`: none).
fn extractor(i: usize) -> Option<Arc<dyn PrefixExtractor>> {
    match i {
        0 => Some(Arc::new(FixedPrefix(3))),
        1 => Some(Arc::new(FixedPrefix(2))),
        2 => Some(Arc::new(CappedPrefix(3))),
        3 => Some(Arc::new(FixedPrefix(4))),
        _ => None,
    }
}

/// The first byte string after every one starting with `p` (`None`: none).
fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut e = p.to_vec();
    while let Some(b) = e.pop() {
        if b != 0xff {
            e.push(b + 1);
            return Some(e);
        }
    }
    None
}

const ALPHABET: [u8; 4] = [0, b'a', b'b', 0xff];
/// Three-byte key starts: with `FixedPrefix(2)` some share a prefix.
const STARTS: [&[u8]; 8] = [
    b"aaa",
    b"aab",
    b"aba",
    b"ab\xff",
    b"\xff\xff\xff",
    b"\0\0a",
    b"ba\0",
    b"bbb",
];

fn tail(rng: &mut StdRng, max: usize) -> Vec<u8> {
    (0..rng.gen_range(0..=max))
        .map(|_| ALPHABET[rng.gen_range(0..4)])
        .collect()
}

/// A key: mostly one of `STARTS` and up to 3 more bytes; one in ten is 0
/// to 2 bytes long (outside `FixedPrefix(3)`'s domain, its own prefix
/// under `CappedPrefix(3)`).
fn key(rng: &mut StdRng) -> Vec<u8> {
    if rng.gen_bool(0.1) {
        return tail(rng, 2);
    }
    let mut k = STARTS[rng.gen_range(0..STARTS.len())].to_vec();
    k.extend(tail(rng, 3));
    k
}

/// A scanned prefix: a start cut to 0-3 bytes or extended by up to 2, so
/// some are shorter than the extractor's prefix (no filtering possible)
/// and some hold no key at all.
fn query(rng: &mut StdRng) -> Vec<u8> {
    let mut q = STARTS[rng.gen_range(0..STARTS.len())].to_vec();
    if rng.gen_bool(0.3) {
        q.truncate(rng.gen_range(0..=3));
    } else {
        q.extend(tail(rng, 2));
    }
    if rng.gen_bool(0.1) {
        q[..].reverse();
    }
    q
}

fn model_range(m: &Model, lo: &[u8], hi: Option<&[u8]>) -> Pairs {
    m.range(lo.to_vec()..)
        .take_while(|(k, _)| hi.is_none_or(|h| k.as_slice() < h))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn remove_range(m: &mut Model, a: &[u8], b: &[u8]) {
    let doomed: Vec<Vec<u8>> = m
        .range(a.to_vec()..)
        .take_while(|(k, _)| k.as_slice() < b)
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        m.remove(&k);
    }
}

fn show(k: &[u8]) -> String {
    k.escape_ascii().to_string()
}

/// Where the reads of one check come from: the database now, or a held
/// snapshot.
enum View<'a> {
    Now(&'a Db),
    At(&'a Db, &'a Snapshot),
}

impl View<'_> {
    fn db(&self) -> &Db {
        match self {
            View::Now(d) | View::At(d, _) => d,
        }
    }
    fn opts(&self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> ReadOptions<'_> {
        ReadOptions {
            snapshot: match self {
                View::Now(_) => None,
                View::At(_, s) => Some(s),
            },
            lower,
            upper,
        }
    }
    fn prefix(&self, q: &[u8], rev: bool) -> Pairs {
        let it = match self {
            View::Now(d) => d.prefix(q),
            View::At(_, s) => s.prefix(q),
        };
        let mut v: Pairs = if rev {
            it.rev().collect::<strata::Result<_>>().unwrap()
        } else {
            it.collect::<strata::Result<_>>().unwrap()
        };
        if rev {
            v.reverse();
        }
        v
    }
    fn bounded(&self, lo: &[u8], hi: Option<&[u8]>) -> Pairs {
        self.db()
            .iter_opt(&self.opts(Some(lo.to_vec()), hi.map(<[u8]>::to_vec)))
            .collect::<strata::Result<_>>()
            .unwrap()
    }
    /// The keys starting with `q`, through bounds that allow no filtering
    /// (no lower bound).
    fn unfiltered(&self, q: &[u8]) -> Pairs {
        self.db()
            .iter_opt(&self.opts(None, prefix_end(q)))
            .filter(|kv| kv.as_ref().map_or(true, |(k, _)| k.starts_with(q)))
            .collect::<strata::Result<_>>()
            .unwrap()
    }
    fn get(&self, k: &[u8]) -> Option<Vec<u8>> {
        match self {
            View::Now(d) => d.get(k).unwrap(),
            View::At(_, s) => s.get(k).unwrap(),
        }
    }
}

/// Compares `view` with `m` on random prefixes, ranges inside one prefix,
/// a raw cursor within such a range, and point reads.
fn check(view: &View<'_>, m: &Model, rng: &mut StdRng, at: &str) {
    for _ in 0..4 {
        let q = query(rng);
        let want = model_range(m, &q, prefix_end(&q).as_deref());
        let rev = rng.gen_bool(0.3);
        let got = view.prefix(&q, rev);
        assert_eq!(got, want, "{at}: prefix {} (rev {rev})", show(&q));
        assert_eq!(view.unfiltered(&q), want, "{at}: unfiltered {}", show(&q));
    }
    // A range inside one prefix: both bounds start with `q`.
    let q = query(rng);
    let mut lo = q.clone();
    lo.extend(tail(rng, 2));
    let hi = if rng.gen_bool(0.3) {
        prefix_end(&q)
    } else {
        let mut h = q.clone();
        h.extend(tail(rng, 2));
        Some(h)
    };
    let want = model_range(m, &lo, hi.as_deref());
    assert_eq!(
        view.bounded(&lo, hi.as_deref()),
        want,
        "{at}: range {}..{:?}",
        show(&lo),
        hi.as_deref().map(show)
    );
    // A raw cursor inside those bounds, seeking anywhere (inside, before,
    // after) and stepping both ways.
    let mut it = view
        .db()
        .raw_iter(&view.opts(Some(lo.clone()), hi.clone()))
        .unwrap();
    for _ in 0..3 {
        let t = key(rng);
        let fwd = rng.gen_bool(0.5);
        let mut expect: Vec<Vec<u8>> = if fwd {
            it.seek(&t);
            want.iter()
                .map(|(k, _)| k.clone())
                .filter(|k| *k >= t)
                .take(3)
                .collect()
        } else {
            it.seek_for_prev(&t);
            want.iter()
                .rev()
                .map(|(k, _)| k.clone())
                .filter(|k| *k <= t)
                .take(3)
                .collect()
        };
        let mut got = Vec::new();
        while it.valid() && got.len() < 3 {
            got.push(it.key().unwrap().to_vec());
            if fwd {
                it.next()
            } else {
                it.prev()
            }
        }
        it.status().unwrap();
        expect.truncate(3);
        assert_eq!(got, expect, "{at}: cursor at {} (fwd {fwd})", show(&t));
    }
    for _ in 0..4 {
        let k = if rng.gen_bool(0.5) && !m.is_empty() {
            let i = rng.gen_range(0..m.len());
            m.keys().nth(i).unwrap().clone()
        } else {
            key(rng)
        };
        assert_eq!(view.get(&k), m.get(&k).cloned(), "{at}: get {}", show(&k));
    }
}

/// Writes an ingestible file of random keys (some deleted), maybe with a
/// range tombstone, with extractor `px` and whole keys in its filter or
/// not, and applies it to the model: its tombstone deletes what was there,
/// its own points stay (they are as new as the tombstone).
fn ingest_file(vfs: &dyn Vfs, rng: &mut StdRng, path: &std::path::Path, m: &mut Model) {
    let mut keys: Vec<Vec<u8>> = (0..rng.gen_range(1..12)).map(|_| key(rng)).collect();
    keys.sort();
    keys.dedup();
    let opts = SstOptions {
        prefix_extractor: extractor(rng.gen_range(0..6)),
        whole_key_filtering: rng.gen_bool(0.6),
        bloom_bits_per_key: if rng.gen_bool(0.9) { Some(10.0) } else { None },
        block_size: 64,
        ..SstOptions::for_ingestion()
    };
    let tomb = rng.gen_bool(0.3).then(|| {
        let (a, b) = (key(rng), key(rng));
        (a.clone().min(b.clone()), a.max(b))
    });
    let mut w = SstWriter::create_in(vfs, path, opts).unwrap();
    let mut points = Vec::new();
    for k in keys {
        if rng.gen_bool(0.2) {
            w.delete(&k).unwrap();
            points.push((k, None));
        } else {
            let v = format!("ingested {}", rng.gen::<u16>()).into_bytes();
            w.put(&k, &v).unwrap();
            points.push((k, Some(v)));
        }
    }
    if let Some((a, b)) = &tomb {
        if a < b {
            w.delete_range(a, b).unwrap();
            remove_range(m, a, b);
        }
    }
    w.finish().unwrap();
    for (k, v) in points {
        match v {
            Some(v) => m.insert(k, v),
            None => m.remove(&k),
        };
    }
}

#[test]
fn prefix_scans_match_a_model() {
    let (mut checks, mut skips) = (0, 0);
    // Steps that read a tree holding virtual files, and one with files
    // below L0 in two levels or more.
    let (mut with_virtual, mut multi_level) = (0, 0);
    let n = seeds(100);
    for seed in 0..n {
        let mut rng = StdRng::seed_from_u64(seed);
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let scratch = tempfile::tempdir().unwrap();
        let o = |px: usize, whole: bool| Options {
            vfs: Some(vfs.clone()),
            memtable_size: 2 << 10,
            max_immutable_memtables: 1,
            sst: SstOptions {
                prefix_extractor: extractor(px),
                whole_key_filtering: whole,
                block_size: 128,
                ..SstOptions::default()
            },
            // Small files and levels, so data spreads over several levels
            // and a level's tombstones cover keys in the levels below.
            compaction: CompactionOptions {
                target_file_size: 1 << 10,
                base_level_bytes: 1 << 10,
                level_multiplier: 2,
                ..CompactionOptions::default()
            },
            ..Options::default()
        };
        let mut db = Db::open("/db", o(0, true)).unwrap();
        let mut m = Model::new();
        let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
        for step in 0..100 {
            let at = format!("seed {seed} step {step}");
            match rng.gen_range(0..100) {
                0..=44 => {
                    let (k, v) = (key(&mut rng), format!("v{step}").into_bytes());
                    db.put(&k, &v).unwrap();
                    m.insert(k, v);
                }
                45..=52 => {
                    let k = match m.keys().nth(rng.gen_range(0..m.len().max(1))) {
                        Some(k) if rng.gen_bool(0.8) => k.clone(),
                        _ => key(&mut rng),
                    };
                    db.delete(&k).unwrap();
                    m.remove(&k);
                }
                53..=57 => {
                    let (a, b) = (key(&mut rng), key(&mut rng));
                    let (a, b) = (a.clone().min(b.clone()), a.max(b));
                    db.delete_range(&a, &b).unwrap();
                    remove_range(&mut m, &a, &b);
                }
                58..=66 => db.flush().unwrap(),
                67..=70 => {
                    if rng.gen_bool(0.5) {
                        db.compact_range(None, None).unwrap();
                    } else {
                        let (a, b) = (key(&mut rng), key(&mut rng));
                        let (a, b) = (a.clone().min(b.clone()), a.max(b));
                        db.compact_range(Some(&a), Some(&b)).unwrap();
                    }
                }
                71..=80 => {
                    let p = scratch.path().join(format!("{seed}-{step}.sst"));
                    let excise = rng.gen_bool(0.3).then(|| {
                        let (a, b) = (key(&mut rng), key(&mut rng));
                        (a.clone().min(b.clone()), a.max(b))
                    });
                    let excise = excise.filter(|(a, b)| a < b);
                    if let Some((a, b)) = &excise {
                        remove_range(&mut m, a, b);
                    }
                    ingest_file(vfs.as_ref(), &mut rng, &p, &mut m);
                    let small_file_bytes = if rng.gen_bool(0.2) { 1 << 20 } else { 0 };
                    db.ingest(
                        &[p],
                        &IngestOptions {
                            small_file_bytes,
                            excise,
                            ..IngestOptions::default()
                        },
                    )
                    .unwrap();
                }
                81..=85 => {
                    if snaps.len() < 3 {
                        snaps.push((db.snapshot(), m.clone()));
                    }
                }
                86..=89 => {
                    if !snaps.is_empty() {
                        snaps.remove(rng.gen_range(0..snaps.len()));
                    }
                }
                _ => {
                    let mt = db.metrics();
                    checks += mt.prefix_filter_checks;
                    skips += mt.prefix_filter_skips;
                    snaps.clear();
                    db.close().unwrap();
                    let (px, whole) = (rng.gen_range(0..5), rng.gen_bool(0.6));
                    db = Db::open("/db", o(px, whole)).unwrap();
                }
            }
            let mt = db.metrics();
            with_virtual += u32::from(mt.virtual_files > 0);
            multi_level += u32::from(mt.levels[1..].iter().filter(|l| l.files > 0).count() > 1);
            check(&View::Now(&db), &m, &mut rng, &at);
            for (i, (s, sm)) in snaps.iter().enumerate() {
                check(
                    &View::At(&db, s),
                    sm,
                    &mut rng,
                    &format!("{at} snapshot {i}"),
                );
            }
        }
        let mt = db.metrics();
        checks += mt.prefix_filter_checks;
        skips += mt.prefix_filter_skips;
    }
    eprintln!(
        "prefix filters consulted {checks} times, {skips} files skipped; steps over \
         virtual files {with_virtual}, over several levels {multi_level}"
    );
    // (Thresholds for 40 seeds or more.)
    if n >= 40 {
        assert!(
            skips > 1000 && checks > skips,
            "{checks} checks, {skips} skips"
        );
        assert!(
            with_virtual > 100 && multi_level > 100,
            "{with_virtual} {multi_level}"
        );
    }
}

/// A database with the extractor `px` and no automatic compactions (L0
/// keeps every flushed file).
fn opts_with(px: Option<Arc<dyn PrefixExtractor>>) -> Options {
    Options {
        sst: SstOptions {
            prefix_extractor: px,
            ..SstOptions::default()
        },
        compaction: CompactionOptions {
            l0_compaction_threshold: 1000,
            l0_compaction_file_threshold: 0,
            ..CompactionOptions::default()
        },
        l0_slowdown_sublevels: 1000,
        l0_stop_sublevels: 1000,
        ..Options::default()
    }
}

/// `prefix NN`: 50 keys of prefix `pNN:` with 100-byte values (two data
/// blocks or so).
fn prefix_keys(n: usize) -> Pairs {
    (0..50)
        .map(|i| {
            (
                format!("p{n:02}:{i:03}").into_bytes(),
                vec![b'0' + (n % 10) as u8; 100],
            )
        })
        .collect()
}

/// Data-block reads so far (from the cache or the file).
fn block_reads(db: &Db) -> u64 {
    let m = db.metrics();
    m.block_cache_hits + m.block_cache_misses
}

/// 20 flushed L0 files, file `n` holding the keys of prefix `pNN:` and
/// the keys `a` and `z`, so every file's key range overlaps every prefix
/// scan and only the filters can rule files out.
fn twenty_l0_files(dir: &std::path::Path, px: Option<Arc<dyn PrefixExtractor>>) -> Db {
    let db = Db::open(dir, opts_with(px)).unwrap();
    for n in 0..20 {
        for (k, v) in prefix_keys(n) {
            db.put(k, v).unwrap();
        }
        db.put("a", "").unwrap();
        db.put("z", "").unwrap();
        db.flush().unwrap();
    }
    assert_eq!(db.metrics().l0_files, 20);
    db
}

fn scan(db: &Db, q: &str) -> Pairs {
    db.prefix(q).collect::<strata::Result<_>>().unwrap()
}

#[test]
fn files_are_skipped_in_l0() {
    let dir = tempfile::tempdir().unwrap();
    let db = twenty_l0_files(dir.path(), Some(Arc::new(FixedPrefix(4))));
    let before = db.metrics();
    let reads = block_reads(&db);
    assert_eq!(scan(&db, "p07:"), prefix_keys(7));
    let after = db.metrics();
    let checks = after.prefix_filter_checks - before.prefix_filter_checks;
    let skips = after.prefix_filter_skips - before.prefix_filter_skips;
    assert_eq!(checks, 20);
    // One file holds the prefix; a 10-bit filter's false positives might
    // let one or two more through.
    assert!(skips >= 17, "{skips} of 20 files skipped");
    // The data blocks read are the ones holding `p07:` (a few), plus at
    // most one or two per false positive, not a block or more per file.
    let read = block_reads(&db) - reads;
    assert!(read <= 4 + 2 * (19 - skips), "{read} data blocks read");
    // Longer prefixes and ranges inside one prefix are filtered the same
    // way; shorter ones cannot be.
    assert_eq!(scan(&db, "p07:01").len(), 10);
    assert_eq!(
        db.range("p07:010".."p07:020").count(),
        10,
        "a range inside one prefix"
    );
    let m = db.metrics();
    assert_eq!(m.prefix_filter_checks - after.prefix_filter_checks, 40);
    assert_eq!(scan(&db, "p0").len(), 500);
    assert_eq!(db.metrics().prefix_filter_checks, m.prefix_filter_checks);

    // The same database reopened without the extractor reads every file.
    drop(db);
    let db = Db::open(dir.path(), opts_with(None)).unwrap();
    let reads = block_reads(&db);
    assert_eq!(scan(&db, "p07:"), prefix_keys(7));
    assert_eq!(db.metrics().prefix_filter_checks, 0);
    assert!(block_reads(&db) - reads >= 20, "every file's block read");
    // And with another extractor (the files' name does not match): no
    // filter used, and new files are filtered by the new one only.
    drop(db);
    let db = Db::open(dir.path(), opts_with(Some(Arc::new(FixedPrefix(3))))).unwrap();
    assert_eq!(scan(&db, "p07:"), prefix_keys(7));
    assert_eq!(db.metrics().prefix_filter_checks, 0);
    db.put("a", "").unwrap();
    db.put("p99:", "").unwrap();
    db.put("z", "").unwrap();
    db.flush().unwrap();
    assert_eq!(scan(&db, "p07:"), prefix_keys(7));
    assert_eq!(db.metrics().prefix_filter_checks, 1);
}

#[test]
fn files_are_skipped_in_a_level() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let px: Arc<dyn PrefixExtractor> = Arc::new(FixedPrefix(4));
    let db = Db::open(dir.path(), opts_with(Some(Arc::clone(&px)))).unwrap();
    // Ten files side by side in the bottom level, file `j` holding the
    // prefixes `pj0:` and `pj9:`: a scan of `pj5:` overlaps its key range.
    for j in 0..10 {
        let p = scratch.path().join(format!("{j}.sst"));
        let mut w = SstWriter::create(
            &p,
            SstOptions {
                prefix_extractor: Some(Arc::clone(&px)),
                ..SstOptions::for_ingestion()
            },
        )
        .unwrap();
        for (k, v) in prefix_keys(j * 10)
            .into_iter()
            .chain(prefix_keys(j * 10 + 9))
        {
            w.put(k, v).unwrap();
        }
        w.finish().unwrap();
        let opts = IngestOptions {
            small_file_bytes: 0,
            ..IngestOptions::default()
        };
        db.ingest(&[p], &opts).unwrap();
    }
    let levels: Vec<usize> = db.metrics().levels.iter().map(|l| l.files).collect();
    assert_eq!(levels[6], 10, "{levels:?}");
    let reads = block_reads(&db);
    for j in 0..10 {
        assert!(scan(&db, &format!("p{j}5:")).is_empty());
        assert!(db.prefix(format!("p{j}5:")).next_back().is_none());
    }
    let m = db.metrics();
    assert_eq!(m.prefix_filter_checks, 20);
    assert!(m.prefix_filter_skips >= 18, "{}", m.prefix_filter_skips);
    assert!(
        block_reads(&db) - reads <= 4,
        "no data block of a skipped file"
    );
    for j in 0..10 {
        assert_eq!(scan(&db, &format!("p{j}9:")), prefix_keys(j * 10 + 9));
    }
    // Without the extractor, each of those scans reads a block.
    drop(db);
    let db = Db::open(dir.path(), opts_with(None)).unwrap();
    let reads = block_reads(&db);
    for j in 0..10 {
        assert!(scan(&db, &format!("p{j}5:")).is_empty());
    }
    assert!(block_reads(&db) - reads >= 10);
}

/// A range tombstone in a file whose prefix filter rules the scanned
/// prefix out still deletes that prefix's keys in older files: the filter
/// skips the file's point entries only. The tombstone lies beside a point
/// key of another prefix in L0 (a flush) or in a level (an ingested file,
/// placed above the data). A file holding only tombstones has no filter
/// (no key was added) and is never skipped; checked too.
#[test]
fn a_skipped_files_range_tombstone_still_deletes() {
    let scratch = tempfile::tempdir().unwrap();
    let px: Arc<dyn PrefixExtractor> = Arc::new(FixedPrefix(4));
    let ingest = |db: &Db, name: &str, fill: &dyn Fn(&mut SstWriter)| {
        let p = scratch.path().join(name);
        let mut w = SstWriter::create(
            &p,
            SstOptions {
                prefix_extractor: Some(Arc::clone(&px)),
                ..SstOptions::for_ingestion()
            },
        )
        .unwrap();
        fill(&mut w);
        w.finish().unwrap();
        let opts = IngestOptions {
            small_file_bytes: 0,
            ..IngestOptions::default()
        };
        db.ingest(&[p], &opts).unwrap();
    };
    let data = |w: &mut SstWriter| {
        for (k, v) in prefix_keys(5) {
            w.put(k, v).unwrap();
        }
    };
    for case in [
        "beside a point in L0",
        "beside a point in a level",
        "alone in L0",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts_with(Some(Arc::clone(&px)));
        // Every level from L1 down is a base level with the bottom's target
        // (so an ingested file overlapping the bottom goes to L5, not L0),
        // and the bottom is made large (below), so no level asks for a
        // compaction that would merge the tombstone with the data.
        o.compaction.base_level_bytes = 1;
        o.compaction.level_multiplier = 1;
        let db = Db::open(dir.path(), o).unwrap();
        ingest(&db, &format!("{case}-filler.sst"), &|w| {
            let mut rng = StdRng::seed_from_u64(7);
            for i in 0..5000 {
                let v: Vec<u8> = (0..100).map(|_| rng.gen()).collect();
                w.put(format!("z{i:05}"), v).unwrap();
            }
        });
        ingest(&db, &format!("{case}-data.sst"), &data);
        assert_eq!(scan(&db, "p05:").len(), 50, "{case}");
        match case {
            "beside a point in L0" => {
                db.put("q", "").unwrap();
                db.delete_range("p00:", "p99:").unwrap();
                db.flush().unwrap();
            }
            "beside a point in a level" => {
                ingest(&db, &format!("{case}-tomb.sst"), &|w| {
                    w.put("q", "").unwrap();
                    w.delete_range("p00:", "p99:").unwrap();
                });
                let m = db.metrics();
                assert_eq!((m.l0_files, m.levels[5].files), (0, 1), "{case}");
            }
            _ => {
                db.delete_range("p00:", "p99:").unwrap();
                db.flush().unwrap();
            }
        }
        let before = db.metrics();
        assert_eq!(scan(&db, "p05:"), Vec::new(), "{case}");
        assert_eq!(db.prefix("p05:").next_back().transpose().unwrap(), None);
        assert_eq!(db.range("p05:010".."p05:020").count(), 0, "{case}");
        assert_eq!(db.get("p05:007").unwrap(), None, "{case}");
        let after = db.metrics();
        let skipped = after.prefix_filter_skips - before.prefix_filter_skips;
        if case.starts_with("beside") {
            assert_eq!(skipped, 3, "{case}: the tombstone's file was skipped");
        } else {
            assert_eq!(skipped, 0, "{case}: a file of tombstones has no filter");
        }
    }
}

/// Files written without whole keys in their filter: a get uses the
/// prefix filter, so a key of an absent prefix reads no data block.
#[test]
fn point_reads_use_a_prefix_only_filter() {
    let dir = tempfile::tempdir().unwrap();
    let prefix_only = |px: Option<Arc<dyn PrefixExtractor>>| Options {
        sst: SstOptions {
            whole_key_filtering: false,
            ..opts_with(px.clone()).sst
        },
        ..opts_with(px)
    };
    let px: Arc<dyn PrefixExtractor> = Arc::new(FixedPrefix(4));
    let db = Db::open(dir.path(), prefix_only(Some(Arc::clone(&px)))).unwrap();
    for n in 0..20 {
        for (k, v) in prefix_keys(n) {
            db.put(k, v).unwrap();
        }
        db.put("a", "").unwrap();
        db.put("z", "").unwrap();
        db.flush().unwrap();
    }
    assert_eq!(
        db.get("p07:010").unwrap(),
        Some(prefix_keys(7)[10].1.clone())
    );
    let reads = block_reads(&db);
    assert_eq!(db.get("p55:000").unwrap(), None);
    assert_eq!(db.multi_get(["p56:000", "p57:000"]).len(), 2);
    assert!(block_reads(&db) - reads <= 2, "the prefix filter answered");
    // Reopened without the extractor the files' filters hold nothing it
    // can ask: every file is read, and the answers are the same.
    drop(db);
    let db = Db::open(dir.path(), prefix_only(None)).unwrap();
    let reads = block_reads(&db);
    assert_eq!(db.get("p55:000").unwrap(), None);
    assert!(block_reads(&db) - reads >= 20);
    assert_eq!(
        db.get("p07:010").unwrap(),
        Some(prefix_keys(7)[10].1.clone())
    );
}
