//! The compaction iterator: decides which input entries a compaction writes
//! out. It preserves exactly what every reader can see: the latest view and
//! the view of every live snapshot.
//!
//! Rules, for the entries of one user key from newest to oldest, where an
//! entry's *stripe* is the index of the oldest snapshot that can see it (or
//! "no snapshot" when it is newer than all of them):
//! - an entry in the same stripe as a newer entry of its key is shadowed
//!   for every reader that sees it, and is dropped;
//! - an entry covered by a range tombstone of a newer sequence number in the
//!   same stripe is dropped;
//! - at the bottom of the tree (nothing in lower levels overlaps), a
//!   deletion that every snapshot sees (stripe 0) is dropped: everything it
//!   shadows is in this compaction and is dropped with it. Range tombstones
//!   that every snapshot sees are dropped at the bottom for the same reason.

use crate::iter::range_del::RangeDelAggregator;
use crate::iter::InternalIterator;
use crate::key::{ParsedKey, ValueKind, MAX_SEQUENCE};
use crate::sstable::RangeTombstone;

/// Counts of what a compaction dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropStats {
    pub shadowed: u64,
    pub range_deleted: u64,
    pub tombstones: u64,
}

pub struct CompactionIter {
    input: Box<dyn InternalIterator + Send>,
    /// Live snapshot sequence numbers, ascending.
    snapshots: Vec<u64>,
    bottommost: bool,
    /// One aggregator per stripe, holding that stripe's tombstones.
    stripes: Vec<RangeDelAggregator>,
    current_user_key: Vec<u8>,
    has_current: bool,
    last_stripe: usize,
    pub stats: DropStats,
}

impl CompactionIter {
    pub fn new(
        input: Box<dyn InternalIterator + Send>,
        mut snapshots: Vec<u64>,
        tombstones: &[RangeTombstone],
        bottommost: bool,
    ) -> CompactionIter {
        snapshots.sort_unstable();
        snapshots.dedup();
        let n = snapshots.len() + 1;
        let mut by_stripe: Vec<Vec<RangeTombstone>> = vec![Vec::new(); n];
        for t in tombstones {
            by_stripe[stripe(&snapshots, t.seq)].push(t.clone());
        }
        let stripes = by_stripe
            .into_iter()
            .map(|ts| RangeDelAggregator::new(MAX_SEQUENCE, ts))
            .collect();
        let mut it = CompactionIter {
            input,
            snapshots,
            bottommost,
            stripes,
            current_user_key: Vec::new(),
            has_current: false,
            last_stripe: 0,
            stats: DropStats::default(),
        };
        it.input.seek_to_first();
        it.skip_dropped();
        it
    }

    /// The range tombstones the output must keep.
    pub fn output_tombstones(
        snapshots: &[u64],
        tombstones: &[RangeTombstone],
        bottommost: bool,
    ) -> Vec<RangeTombstone> {
        let mut snaps = snapshots.to_vec();
        snaps.sort_unstable();
        let mut out: Vec<RangeTombstone> = tombstones
            .iter()
            .filter(|t| t.start < t.end && !(bottommost && stripe(&snaps, t.seq) == 0))
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            a.start
                .cmp(&b.start)
                .then(b.seq.cmp(&a.seq))
                .then(a.end.cmp(&b.end))
        });
        out.dedup();
        out
    }

    pub fn valid(&self) -> bool {
        self.input.valid()
    }

    pub fn key(&self) -> &[u8] {
        self.input.key()
    }

    pub fn value(&self) -> &[u8] {
        self.input.value()
    }

    pub fn status(&self) -> crate::error::Result<()> {
        self.input.status()
    }

    pub fn next(&mut self) {
        self.input.next();
        self.skip_dropped();
    }

    /// Advances past entries the rules drop; stops at one to keep.
    fn skip_dropped(&mut self) {
        while self.input.valid() {
            if self.keep_current() {
                return;
            }
            self.input.next();
        }
    }

    fn keep_current(&mut self) -> bool {
        let Some(p) = ParsedKey::parse(self.input.key()) else {
            // Malformed keys are passed through; the table writer rejects
            // them with an error rather than this code guessing.
            return true;
        };
        let st = stripe(&self.snapshots, p.seq);
        let new_key = !self.has_current || self.current_user_key.as_slice() != p.user_key;
        if new_key {
            self.current_user_key.clear();
            self.current_user_key.extend_from_slice(p.user_key);
            self.has_current = true;
        } else if st == self.last_stripe {
            self.stats.shadowed += 1;
            return false;
        }
        self.last_stripe = st;
        if self.stripes[st].max_covering_seq(p.user_key) > p.seq {
            self.stats.range_deleted += 1;
            return false;
        }
        let is_deletion = matches!(
            p.value_kind(),
            Some(ValueKind::Deletion) | Some(ValueKind::SingleDeletion)
        );
        if is_deletion && self.bottommost && st == 0 {
            self.stats.tombstones += 1;
            return false;
        }
        true
    }
}

/// Index of the oldest snapshot that sees `seq`; `snapshots.len()` if none.
fn stripe(snapshots: &[u64], seq: u64) -> usize {
    snapshots.partition_point(|&s| s < seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::db_iter::DbIter;
    use crate::iter::vec_iter::VecIter;
    use crate::key::{make_internal_key, ValueKind};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn view(
        entries: &Entries,
        tombstones: &[RangeTombstone],
        snapshot: u64,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let rd = RangeDelAggregator::new(snapshot, tombstones.to_vec());
        let mut it = DbIter::new(
            Box::new(VecIter::new(entries.clone())),
            snapshot,
            rd,
            None,
            None,
        );
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status().unwrap();
        out
    }

    #[test]
    fn every_snapshot_sees_the_same_data_after_compaction() {
        for seed in 0..300u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut entries: Entries = Vec::new();
            let mut seq = 1u64;
            let mut tombstones = Vec::new();
            for _ in 0..rng.gen_range(1..80) {
                seq += 1;
                if rng.gen_bool(0.1) {
                    let a = rng.gen_range(0..20u8);
                    let b = rng.gen_range(0..20u8);
                    tombstones.push(RangeTombstone {
                        start: vec![b'k', a],
                        end: vec![b'k', b],
                        seq,
                    });
                    continue;
                }
                let k = vec![b'k', rng.gen_range(0..20u8)];
                let kind = if rng.gen_bool(0.25) {
                    ValueKind::Deletion
                } else {
                    ValueKind::Value
                };
                let v = if kind == ValueKind::Value {
                    seq.to_le_bytes().to_vec()
                } else {
                    Vec::new()
                };
                entries.push((make_internal_key(&k, seq, kind), v));
            }
            let snapshots: Vec<u64> = (0..rng.gen_range(0..4))
                .map(|_| rng.gen_range(1..=seq))
                .collect();
            let bottommost = rng.gen_bool(0.5);
            let mut sorted = entries.clone();
            sorted.sort_by(|a, b| crate::key::compare_internal(&a.0, &b.0));
            let mut ci = CompactionIter::new(
                Box::new(VecIter::new(sorted)),
                snapshots.clone(),
                &tombstones,
                bottommost,
            );
            let mut out: Entries = Vec::new();
            while ci.valid() {
                out.push((ci.key().to_vec(), ci.value().to_vec()));
                ci.next();
            }
            let kept = CompactionIter::output_tombstones(&snapshots, &tombstones, bottommost);
            let mut views: Vec<u64> = snapshots.clone();
            views.push(MAX_SEQUENCE);
            for s in views {
                assert_eq!(
                    view(&out, &kept, s),
                    view(&entries, &tombstones, s),
                    "seed {seed} snapshot {s}"
                );
            }
            assert!(out.len() <= entries.len());
            if snapshots.is_empty() && bottommost {
                // With nothing to preserve, only live values remain.
                assert_eq!(
                    out.len(),
                    view(&entries, &tombstones, MAX_SEQUENCE).len(),
                    "seed {seed}"
                );
                assert!(kept.is_empty());
            }
        }
    }
}
