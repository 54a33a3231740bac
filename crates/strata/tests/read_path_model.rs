//! Model-based tests of the read path: random versions, point deletions and
//! range tombstones spread over 1-6 sources (in-memory `VecIter`s and SST
//! files), read through `MergingIterator` + `DbIter` at random snapshots and
//! bounds, and compared with a model computed directly from the entries.
//!
//! Set `STRATA_SEED` to replay one seed.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::PathBuf;
use strata::iter::{DbIter, InternalIterator, MergingIterator, RangeDelAggregator, VecIter};
use strata::key::{make_internal_key, ValueKind, MAX_SEQUENCE};
use strata::sstable::{
    CompressionType, RangeTombstone, SstOptions, SstWriter, Table, TableOptions,
};
use strata::vfs::MemVfs;

#[derive(Clone, Debug)]
struct Entry {
    user_key: Vec<u8>,
    seq: u64,
    kind: ValueKind,
    value: Vec<u8>,
}

#[derive(Debug)]
struct Case {
    entries: Vec<Entry>,
    tombstones: Vec<RangeTombstone>,
    max_seq: u64,
}

/// Keys of length 0-3 over a 4-letter alphabet including 0x00 and 0xff:
/// collisions, prefixes of other keys and the empty key are all common.
fn user_key(rng: &mut StdRng) -> Vec<u8> {
    (0..rng.gen_range(0..=3))
        .map(|_| [0u8, b'a', b'b', 0xff][rng.gen_range(0..4)])
        .collect()
}

fn gen_case(rng: &mut StdRng) -> Case {
    let n = rng.gen_range(0..80);
    let nt = if rng.gen_bool(0.3) {
        0
    } else {
        rng.gen_range(1..8)
    };
    // Unique sequence numbers for point entries, so "newest" is well defined.
    let mut seqs: Vec<u64> = (1..=n as u64 + 2).collect();
    seqs.shuffle(rng);
    let max_seq = n as u64 + 2;
    let entries = (0..n)
        .map(|i| {
            let user_key = user_key(rng);
            let seq = seqs[i];
            let kind = match rng.gen_range(0..20) {
                0..=12 => ValueKind::Value,
                13..=16 => ValueKind::Deletion,
                _ => ValueKind::SingleDeletion,
            };
            let value = format!("{user_key:?}@{seq}").into_bytes();
            Entry {
                user_key,
                seq,
                kind,
                value,
            }
        })
        .collect();
    // Tombstone sequences may equal a point entry's (equal does not delete),
    // and some ranges are empty or reversed (ignored).
    let tombstones = (0..nt)
        .map(|_| RangeTombstone {
            start: user_key(rng),
            end: user_key(rng),
            seq: rng.gen_range(0..=max_seq),
        })
        .collect();
    Case {
        entries,
        tombstones,
        max_seq,
    }
}

/// What a reader at `snap` sees in `[lower, upper)`, computed from scratch.
fn model(
    case: &Case,
    snap: u64,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut newest: BTreeMap<&[u8], &Entry> = BTreeMap::new();
    for e in case.entries.iter().filter(|e| e.seq <= snap) {
        let slot = newest.entry(&e.user_key).or_insert(e);
        if slot.seq < e.seq {
            *slot = e;
        }
    }
    newest
        .into_iter()
        .filter(|(uk, e)| {
            let uk: &[u8] = uk;
            e.kind == ValueKind::Value
                && lower.is_none_or(|l| uk >= l)
                && upper.is_none_or(|u| uk < u)
                && !case.tombstones.iter().any(|t| {
                    t.seq <= snap
                        && t.seq > e.seq
                        && t.start.as_slice() <= uk
                        && uk < t.end.as_slice()
                })
        })
        .map(|(uk, e)| (uk.to_vec(), e.value.clone()))
        .collect()
}

/// Spreads the case over 1-6 sources, some of them SST files, and returns
/// the merged iterator's children plus every tombstone as the sources hold
/// it (tables keep theirs in their range-deletion blocks).
fn build_sources(
    case: &Case,
    rng: &mut StdRng,
    vfs: &MemVfs,
    tag: &str,
) -> (Vec<Box<dyn InternalIterator + Send>>, Vec<RangeTombstone>) {
    let n = rng.gen_range(1..=6);
    let mut points: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); n];
    for e in &case.entries {
        points[rng.gen_range(0..n)].push((
            make_internal_key(&e.user_key, e.seq, e.kind),
            e.value.clone(),
        ));
    }
    let mut ranges: Vec<Vec<RangeTombstone>> = vec![Vec::new(); n];
    for t in &case.tombstones {
        ranges[rng.gen_range(0..n)].push(t.clone());
    }
    let mut children: Vec<Box<dyn InternalIterator + Send>> = Vec::new();
    let mut side = Vec::new();
    for (i, (mut pts, rds)) in points.into_iter().zip(ranges).enumerate() {
        if !rng.gen_bool(0.4) {
            children.push(Box::new(VecIter::new(pts)));
            side.extend(rds);
            continue;
        }
        pts.sort_by(|a, b| strata::key::compare_internal(&a.0, &b.0));
        let path = PathBuf::from(format!("/{tag}-{i}.sst"));
        let opts = SstOptions {
            block_size: rng.gen_range(16..256),
            block_restart_interval: rng.gen_range(1..4),
            compression: CompressionType::None,
            ..SstOptions::default()
        };
        let mut w = SstWriter::create_in(vfs, &path, opts).unwrap();
        for (k, v) in &pts {
            w.add(k, v).unwrap();
        }
        for t in rds {
            if t.start < t.end {
                w.add_range_tombstone(&t.start, &t.end, t.seq).unwrap();
            } else {
                // The writer refuses empty ranges; keep them in memory so
                // the aggregator still has to ignore them.
                side.push(t);
            }
        }
        w.finish().unwrap();
        let table = Table::open_in(vfs, &path, TableOptions::default()).unwrap();
        side.extend_from_slice(table.range_tombstones());
        children.push(Box::new(table.iter()));
    }
    (children, side)
}

struct Checker<'a> {
    it: DbIter,
    want: Vec<(Vec<u8>, Vec<u8>)>,
    ctx: &'a str,
}

impl Checker<'_> {
    fn at(&self, pos: Option<usize>, step: &str) {
        let ctx = self.ctx;
        match pos {
            Some(p) => {
                assert!(self.it.valid(), "{ctx}: {step}: want {:?}", self.want[p].0);
                assert_eq!(self.it.key(), self.want[p].0, "{ctx}: {step}");
                assert_eq!(self.it.value(), self.want[p].1, "{ctx}: {step}");
            }
            None => assert!(
                !self.it.valid(),
                "{ctx}: {step}: want invalid, at {:?}",
                self.it.key()
            ),
        }
        assert!(
            self.it.status().is_ok(),
            "{ctx}: {step}: {:?}",
            self.it.status()
        );
    }

    fn full_scans(&mut self) {
        let mut got = Vec::new();
        self.it.seek_to_first();
        while self.it.valid() {
            got.push((self.it.key().to_vec(), self.it.value().to_vec()));
            self.it.next();
        }
        assert!(self.it.status().is_ok(), "{}", self.ctx);
        assert_eq!(got, self.want, "{}: forward scan", self.ctx);

        got.clear();
        self.it.seek_to_last();
        while self.it.valid() {
            got.push((self.it.key().to_vec(), self.it.value().to_vec()));
            self.it.prev();
        }
        got.reverse();
        assert!(self.it.status().is_ok(), "{}", self.ctx);
        assert_eq!(got, self.want, "{}: backward scan", self.ctx);
    }

    /// A random positioning followed by a random mix of next and prev.
    fn walk(&mut self, rng: &mut StdRng) {
        let len = self.want.len();
        let target = user_key(rng);
        let (mut pos, step) = match rng.gen_range(0..6) {
            0 => {
                self.it.seek_to_first();
                ((len > 0).then_some(0), "seek_to_first".to_string())
            }
            1 => {
                self.it.seek_to_last();
                (len.checked_sub(1), "seek_to_last".to_string())
            }
            2 | 3 => {
                self.it.seek(&target);
                let p = self.want.partition_point(|(k, _)| k < &target);
                ((p < len).then_some(p), format!("seek({target:?})"))
            }
            _ => {
                self.it.seek_for_prev(&target);
                let p = self.want.partition_point(|(k, _)| k <= &target);
                (p.checked_sub(1), format!("seek_for_prev({target:?})"))
            }
        };
        let mut trail = step;
        self.at(pos, &trail);
        for _ in 0..rng.gen_range(0..25) {
            let Some(p) = pos else { break };
            if rng.gen_bool(0.5) {
                self.it.next();
                pos = (p + 1 < len).then_some(p + 1);
                trail.push_str(" next");
            } else {
                self.it.prev();
                pos = p.checked_sub(1);
                trail.push_str(" prev");
            }
            self.at(pos, &trail);
        }
    }
}

fn run_seed(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let case = gen_case(&mut rng);
    let vfs = MemVfs::new();
    for view in 0..4 {
        let snap = match rng.gen_range(0..10) {
            0 => MAX_SEQUENCE,
            1 => u64::MAX,
            2 => 0,
            _ => rng.gen_range(0..=case.max_seq + 1),
        };
        let bound = |rng: &mut StdRng| rng.gen_bool(0.3).then(|| user_key(rng));
        let (lower, upper) = (bound(&mut rng), bound(&mut rng));
        let (children, tombstones) = build_sources(&case, &mut rng, &vfs, &format!("v{view}"));
        let ctx = format!(
            "seed {seed} view {view}: snap {snap} bounds {lower:?}..{upper:?}, {} children\n{case:?}",
            children.len()
        );
        let want = model(
            &case,
            snap.min(MAX_SEQUENCE),
            lower.as_deref(),
            upper.as_deref(),
        );
        let it = DbIter::new(
            Box::new(MergingIterator::new(children)),
            snap,
            RangeDelAggregator::new(snap, &tombstones),
            lower,
            upper,
        );
        let mut c = Checker {
            it,
            want,
            ctx: &ctx,
        };
        c.full_scans();
        for _ in 0..25 {
            c.walk(&mut rng);
        }
    }
}

#[test]
fn db_iter_matches_model() {
    if let Some(seed) = std::env::var("STRATA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        run_seed(seed);
        return;
    }
    for seed in 0..1500 {
        run_seed(seed);
    }
}

/// Many versions of few keys, so that skipping over hidden versions (in
/// both directions, across sources and block boundaries) dominates.
#[test]
fn deep_version_chains() {
    let mut rng = StdRng::seed_from_u64(0xdeef);
    for round in 0..40 {
        let keys: Vec<Vec<u8>> = vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
        let mut entries = Vec::new();
        for seq in 1..=400u64 {
            let user_key = keys[rng.gen_range(0..keys.len())].clone();
            let kind = if rng.gen_bool(0.3) {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            entries.push(Entry {
                value: format!("{seq}").into_bytes(),
                user_key,
                seq,
                kind,
            });
        }
        let tombstones = vec![RangeTombstone {
            start: b"b".to_vec(),
            end: b"c".to_vec(),
            seq: rng.gen_range(1..400),
        }];
        let case = Case {
            entries,
            tombstones,
            max_seq: 400,
        };
        let vfs = MemVfs::new();
        for view in 0..5 {
            let snap = rng.gen_range(0..=401);
            let (children, tombstones) = build_sources(&case, &mut rng, &vfs, &format!("v{view}"));
            let ctx = format!("round {round} snap {snap}");
            let mut c = Checker {
                it: DbIter::new(
                    Box::new(MergingIterator::new(children)),
                    snap,
                    RangeDelAggregator::new(snap, &tombstones),
                    None,
                    None,
                ),
                want: model(&case, snap, None, None),
                ctx: &ctx,
            };
            c.full_scans();
            for _ in 0..10 {
                c.walk(&mut rng);
            }
        }
    }
}
