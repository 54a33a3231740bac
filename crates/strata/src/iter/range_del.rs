//! `RangeDelAggregator`: the range tombstones visible at one snapshot,
//! flattened so that "is this key range-deleted?" is a binary search.
//!
//! It owns a list of fragments built from any number of possibly overlapping
//! tombstones (from any number of sources). Invariants of that list:
//! - fragments are sorted by `start`, non-empty (`start < end`) and pairwise
//!   disjoint; touching fragments with the same sequence are merged;
//! - a fragment's `seq` is the largest sequence of the input tombstones that
//!   cover all of it, counting only tombstones with `0 < seq <= snapshot`;
//!   every key no fragment covers is covered by no such tombstone.
//!
//! Deletion follows RocksDB: a tombstone at sequence `s` deletes entries with
//! sequence `< s`; an entry at `s` itself survives. A tombstone at sequence 0
//! therefore deletes nothing and is dropped.

use crate::key::MAX_SEQUENCE;
use crate::sstable::reader::RangeTombstone;
use std::borrow::Borrow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Debug, Default)]
pub struct RangeDelAggregator {
    /// `None` for [`RangeDelAggregator::empty`], which suits any snapshot.
    snapshot: Option<u64>,
    fragments: Vec<RangeTombstone>,
}

impl RangeDelAggregator {
    /// Aggregates the tombstones visible at `snapshot` (clamped to
    /// `MAX_SEQUENCE`); tombstones with a larger sequence and empty ranges
    /// are ignored.
    pub fn new<I, T>(snapshot: u64, tombstones: I) -> RangeDelAggregator
    where
        I: IntoIterator<Item = T>,
        T: Borrow<RangeTombstone>,
    {
        let snapshot = snapshot.min(MAX_SEQUENCE);
        let mut live: Vec<T> = tombstones
            .into_iter()
            .filter(|t| {
                let t = t.borrow();
                t.seq > 0 && t.seq <= snapshot && t.start < t.end
            })
            .collect();
        live.sort_by(|a, b| a.borrow().start.cmp(&b.borrow().start));
        RangeDelAggregator {
            snapshot: Some(snapshot),
            fragments: fragment(&live),
        }
    }

    /// No tombstones; usable with an iterator at any snapshot.
    #[cfg(any(test, feature = "internals"))]
    pub fn empty() -> RangeDelAggregator {
        RangeDelAggregator::default()
    }

    /// The snapshot this was built for (`None` for [`Self::empty`]).
    pub fn snapshot(&self) -> Option<u64> {
        self.snapshot
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.fragments.is_empty()
    }

    /// The fragments: sorted, disjoint, each with the largest sequence
    /// covering it.
    #[cfg(any(test, feature = "internals"))]
    pub fn fragments(&self) -> &[RangeTombstone] {
        &self.fragments
    }

    /// The largest sequence of a visible tombstone covering `user_key`, or 0.
    pub fn max_covering_seq(&self, user_key: &[u8]) -> u64 {
        let slot = self
            .fragments
            .partition_point(|f| f.start.as_slice() <= user_key);
        self.seq_in_slot(slot, user_key)
    }

    /// [`Self::max_covering_seq`] for callers that look up keys in order
    /// (either direction): `hint` remembers where the last key landed, and a
    /// key in the same or a neighbouring fragment costs O(1) instead of a
    /// binary search. Start with `0`; any value is correct, just slower.
    pub fn max_covering_seq_hinted(&self, user_key: &[u8], hint: &mut usize) -> u64 {
        let f = &self.fragments;
        if f.is_empty() {
            return 0;
        }
        // `slot` = the number of fragments starting at or before the key;
        // the only fragment that can cover it is `slot - 1`.
        let fits = |s: usize| {
            s <= f.len()
                && (s == 0 || f[s - 1].start.as_slice() <= user_key)
                && (s == f.len() || user_key < f[s].start.as_slice())
        };
        let h = *hint;
        let slot = if fits(h) {
            h
        } else if fits(h.saturating_add(1)) {
            h + 1
        } else if h > 0 && fits(h - 1) {
            h - 1
        } else {
            f.partition_point(|x| x.start.as_slice() <= user_key)
        };
        *hint = slot;
        self.seq_in_slot(slot, user_key)
    }

    fn seq_in_slot(&self, slot: usize, user_key: &[u8]) -> u64 {
        match slot.checked_sub(1).map(|i| &self.fragments[i]) {
            Some(f) if user_key < f.end.as_slice() => f.seq,
            _ => 0,
        }
    }

    /// Whether an entry for `user_key` at `seq` is deleted by a visible
    /// tombstone (one with a larger sequence covers it).
    #[cfg(any(test, feature = "internals"))]
    pub fn is_deleted(&self, user_key: &[u8], seq: u64) -> bool {
        self.max_covering_seq(user_key) > seq
    }
}

/// Sweeps the boundaries of `live` (sorted by start) left to right, keeping
/// the tombstones that have started in a max-heap by sequence. Ended ones are
/// removed lazily, when they reach the top: only the top is ever read, so a
/// stale entry below it does no harm.
fn fragment<T: Borrow<RangeTombstone>>(live: &[T]) -> Vec<RangeTombstone> {
    let mut bounds: Vec<&[u8]> = Vec::with_capacity(live.len() * 2);
    for t in live {
        let t = t.borrow();
        bounds.push(&t.start);
        bounds.push(&t.end);
    }
    bounds.sort_unstable();
    bounds.dedup();

    let mut out: Vec<RangeTombstone> = Vec::new();
    // (seq, end); ties between equal seqs do not matter.
    let mut active: BinaryHeap<(u64, Reverse<&[u8]>)> = BinaryHeap::new();
    let mut next = 0;
    for (i, &b) in bounds.iter().enumerate() {
        while next < live.len() && live[next].borrow().start.as_slice() == b {
            let t = live[next].borrow();
            active.push((t.seq, Reverse(t.end.as_slice())));
            next += 1;
        }
        while active.peek().is_some_and(|(_, Reverse(end))| *end <= b) {
            active.pop();
        }
        let (Some(&(seq, _)), Some(&upto)) = (active.peek(), bounds.get(i + 1)) else {
            continue;
        };
        match out.last_mut() {
            Some(last) if last.seq == seq && last.end.as_slice() == b => {
                last.end = upto.to_vec();
            }
            _ => out.push(RangeTombstone {
                start: b.to_vec(),
                end: upto.to_vec(),
                seq,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn t(start: &str, end: &str, seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: start.as_bytes().to_vec(),
            end: end.as_bytes().to_vec(),
            seq,
        }
    }

    fn frags(a: &RangeDelAggregator) -> Vec<(String, String, u64)> {
        a.fragments()
            .iter()
            .map(|f| {
                (
                    String::from_utf8_lossy(&f.start).into_owned(),
                    String::from_utf8_lossy(&f.end).into_owned(),
                    f.seq,
                )
            })
            .collect()
    }

    fn s(a: &str, b: &str, seq: u64) -> (String, String, u64) {
        (a.to_string(), b.to_string(), seq)
    }

    #[test]
    fn overlapping_tombstones_fragment_by_max_seq() {
        let a = RangeDelAggregator::new(100, [t("b", "f", 5), t("d", "h", 9), t("c", "e", 3)]);
        assert_eq!(frags(&a), [s("b", "d", 5), s("d", "h", 9)]);
        assert_eq!(a.max_covering_seq(b"a"), 0);
        assert_eq!(a.max_covering_seq(b"b"), 5);
        assert_eq!(a.max_covering_seq(b"c"), 5);
        assert_eq!(a.max_covering_seq(b"d"), 9);
        assert_eq!(a.max_covering_seq(b"gzz"), 9);
        assert_eq!(a.max_covering_seq(b"h"), 0);
        // Equal sequence does not delete.
        assert!(a.is_deleted(b"c", 4));
        assert!(!a.is_deleted(b"c", 5));
        assert!(!a.is_deleted(b"c", 6));
        assert!(a.is_deleted(b"e", 8));
        assert!(!a.is_deleted(b"h", 1));

        // A newer tombstone inside an older one splits it in three.
        let a = RangeDelAggregator::new(100, [t("a", "z", 2), t("m", "n", 7)]);
        assert_eq!(frags(&a), [s("a", "m", 2), s("m", "n", 7), s("n", "z", 2)]);
        // An older one inside a newer one disappears.
        let a = RangeDelAggregator::new(100, [t("a", "z", 7), t("m", "n", 2)]);
        assert_eq!(frags(&a), [s("a", "z", 7)]);
    }

    #[test]
    fn touching_ranges_and_gaps() {
        let a = RangeDelAggregator::new(
            100,
            [
                t("a", "c", 4),
                t("c", "e", 4),
                t("e", "g", 6),
                t("k", "m", 6),
            ],
        );
        // Same-seq neighbours merge; a change of seq or a gap does not.
        assert_eq!(frags(&a), [s("a", "e", 4), s("e", "g", 6), s("k", "m", 6)]);
        assert_eq!(a.max_covering_seq(b"g"), 0);
        assert_eq!(a.max_covering_seq(b"j"), 0);
        assert_eq!(a.max_covering_seq(b"k"), 6);
        assert_eq!(a.max_covering_seq(b"e"), 6);
        assert_eq!(a.max_covering_seq(b"d\xff"), 4);
    }

    #[test]
    fn snapshot_and_empty_ranges_filter() {
        let ts = [
            t("a", "m", 10),
            t("c", "f", 20),
            t("x", "x", 5),
            t("z", "y", 5),
            t("p", "q", 0),
        ];
        let a = RangeDelAggregator::new(15, &ts);
        assert_eq!(frags(&a), [s("a", "m", 10)]);
        assert_eq!(a.snapshot(), Some(15));
        let a = RangeDelAggregator::new(20, ts.iter());
        assert_eq!(
            frags(&a),
            [s("a", "c", 10), s("c", "f", 20), s("f", "m", 10)]
        );
        let a = RangeDelAggregator::new(9, ts.clone());
        assert!(a.is_empty());
        assert_eq!(a.max_covering_seq(b"b"), 0);
        let a = RangeDelAggregator::new(u64::MAX, ts);
        assert_eq!(a.snapshot(), Some(MAX_SEQUENCE));
        assert_eq!(a.fragments().len(), 3);
        assert_eq!(RangeDelAggregator::empty().max_covering_seq(b""), 0);
    }

    /// Against brute force on random tombstones over a tiny alphabet, where
    /// touching, nested and equal ranges are common; also checks the hinted
    /// lookup along sequential and random key orders.
    #[test]
    fn model_random() {
        let mut rng = StdRng::seed_from_u64(0x7261_6e67);
        let key = |rng: &mut StdRng| -> Vec<u8> {
            (0..rng.gen_range(0..3))
                .map(|_| [0u8, b'b', b'c', 0xff][rng.gen_range(0..4)])
                .collect()
        };
        for round in 0..500 {
            let ts: Vec<RangeTombstone> = (0..rng.gen_range(0..12))
                .map(|_| RangeTombstone {
                    start: key(&mut rng),
                    end: key(&mut rng),
                    seq: rng.gen_range(0..20),
                })
                .collect();
            let snap = rng.gen_range(0..22);
            let a = RangeDelAggregator::new(snap, &ts);
            let f = a.fragments();
            for w in f.windows(2) {
                assert!(w[0].end <= w[1].start, "round {round}: {f:?}");
                assert!(w[0].end < w[1].start || w[0].seq != w[1].seq, "{f:?}");
            }
            assert!(f.iter().all(|x| x.start < x.end && x.seq > 0));

            let mut keys: Vec<Vec<u8>> = (0..40).map(|_| key(&mut rng)).collect();
            keys.extend(ts.iter().flat_map(|t| [t.start.clone(), t.end.clone()]));
            let brute = |k: &[u8]| {
                ts.iter()
                    .filter(|t| t.seq <= snap && t.start.as_slice() <= k && k < t.end.as_slice())
                    .map(|t| t.seq)
                    .max()
                    .unwrap_or(0)
            };
            let mut hint = 0;
            for k in &keys {
                let want = brute(k);
                assert_eq!(a.max_covering_seq(k), want, "round {round} key {k:?}");
                assert_eq!(a.max_covering_seq_hinted(k, &mut hint), want);
            }
            keys.sort();
            for k in keys.iter().chain(keys.iter().rev()) {
                assert_eq!(a.max_covering_seq_hinted(k, &mut hint), brute(k));
            }
        }
    }
}
