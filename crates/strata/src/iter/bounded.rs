//! `BoundedIter`: an [`InternalIterator`] clamped to a user-key range. It is
//! the view through which every reader sees a *virtual* file (a key range of
//! a physical table, made by an excise: see `db::excise`), and
//! [`KeyBounds::clip`] does the same for that file's range tombstones.
//!
//! Owns the inner iterator and the bounds `[lower, upper]`, or
//! `[lower, upper)` when the file's largest bound is a range tombstone's
//! exclusive end. Invariants:
//! - while `valid()`, the current entry's user key lies within the bounds;
//! - every positioning call lands on the first (or last) entry inside the
//!   bounds at or after (before) its target, or leaves the iterator
//!   invalid: no entry outside is ever exposed and none inside is skipped;
//! - `next`/`prev` on an invalid iterator do nothing (the inner iterator may
//!   stand just outside the bounds and must not be walked back in without a
//!   seek, as merging iterators only step valid children).
//!
//! The bounds are on user keys only: a virtual file's bounds are cut between
//! user keys (every version of a boundary key is inside), so internal-key
//! comparisons are never needed. With no bounds the wrapper passes every
//! call through, so physical files pay nothing for it.

use super::InternalIterator;
use crate::error::Result;
use crate::key::{self, make_internal_key, seek_key, ValueKind, MAX_SEQUENCE};
use crate::sstable::RangeTombstone;

/// A user-key range: `[lower, upper]`, or `[lower, upper)` if
/// `upper_exclusive`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyBounds {
    pub lower: Vec<u8>,
    pub upper: Vec<u8>,
    pub upper_exclusive: bool,
}

impl KeyBounds {
    /// Whether `user_key` is at or below the upper bound.
    pub fn below_upper(&self, user_key: &[u8]) -> bool {
        if self.upper_exclusive {
            user_key < self.upper.as_slice()
        } else {
            user_key <= self.upper.as_slice()
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn contains(&self, user_key: &[u8]) -> bool {
        self.lower.as_slice() <= user_key && self.below_upper(user_key)
    }

    /// The part of `t` within the bounds, or `None` if nothing of it is.
    /// An inclusive upper bound `u` is the exclusive end `u ++ 0x00` (the
    /// next user key in bytewise order).
    pub fn clip(&self, t: &RangeTombstone) -> Option<RangeTombstone> {
        let start = t.start.as_slice().max(self.lower.as_slice());
        let end: Vec<u8> = if self.upper_exclusive {
            t.end.as_slice().min(self.upper.as_slice()).to_vec()
        } else {
            let mut succ = self.upper.clone();
            succ.push(0);
            if t.end < succ {
                t.end.clone()
            } else {
                succ
            }
        };
        (start < end.as_slice()).then(|| RangeTombstone {
            start: start.to_vec(),
            end,
            seq: t.seq,
        })
    }

    /// The internal key that `seek_for_prev` uses to reach the last entry
    /// within the upper bound: the largest internal key of `upper` itself
    /// (sequence 0, kind 0) when inclusive, the smallest (a seek key at
    /// `MAX_SEQUENCE`, which sorts before every real entry of `upper`,
    /// an exclusive-end sentinel included) when exclusive.
    fn upper_target(&self) -> Vec<u8> {
        if self.upper_exclusive {
            seek_key(&self.upper, MAX_SEQUENCE)
        } else {
            make_internal_key(&self.upper, 0, ValueKind::Deletion)
        }
    }
}

pub struct BoundedIter<I> {
    inner: I,
    bounds: Option<KeyBounds>,
    /// The inner iterator stands outside the bounds.
    out: bool,
}

impl<I: InternalIterator> BoundedIter<I> {
    /// `bounds: None` passes everything through.
    pub fn new(inner: I, bounds: Option<KeyBounds>) -> BoundedIter<I> {
        BoundedIter {
            inner,
            bounds,
            out: false,
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn inner(&self) -> &I {
        &self.inner
    }

    fn check_upper(&mut self) {
        if let Some(b) = &self.bounds {
            if self.inner.valid() && !b.below_upper(key::user_key(self.inner.key())) {
                self.out = true;
            }
        }
    }

    fn check_lower(&mut self) {
        if let Some(b) = &self.bounds {
            if self.inner.valid() && key::user_key(self.inner.key()) < b.lower.as_slice() {
                self.out = true;
            }
        }
    }
}

impl<I: InternalIterator> InternalIterator for BoundedIter<I> {
    fn valid(&self) -> bool {
        !self.out && self.inner.valid()
    }

    fn seek_to_first(&mut self) {
        self.out = false;
        match &self.bounds {
            None => self.inner.seek_to_first(),
            Some(b) => self.inner.seek(&seek_key(&b.lower, MAX_SEQUENCE)),
        }
        self.check_upper();
    }

    fn seek_to_last(&mut self) {
        self.out = false;
        match &self.bounds {
            None => self.inner.seek_to_last(),
            Some(b) => self.inner.seek_for_prev(&b.upper_target()),
        }
        self.check_lower();
    }

    fn seek(&mut self, target: &[u8]) {
        self.out = false;
        match &self.bounds {
            Some(b) if key::user_key(target) < b.lower.as_slice() => {
                self.inner.seek(&seek_key(&b.lower, MAX_SEQUENCE))
            }
            _ => self.inner.seek(target),
        }
        self.check_upper();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.out = false;
        match &self.bounds {
            Some(b) if !b.below_upper(key::user_key(target)) => {
                self.inner.seek_for_prev(&b.upper_target())
            }
            _ => self.inner.seek_for_prev(target),
        }
        self.check_lower();
    }

    fn next(&mut self) {
        if !self.valid() {
            return;
        }
        self.inner.next();
        self.check_upper();
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        self.inner.prev();
        self.check_lower();
    }

    fn key(&self) -> &[u8] {
        if self.out {
            return &[];
        }
        self.inner.key()
    }

    fn value(&self) -> &[u8] {
        if self.out {
            return &[];
        }
        self.inner.value()
    }

    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::VecIter;
    use crate::key::{make_internal_key, seek_key};

    fn ik(k: &str, seq: u64) -> Vec<u8> {
        make_internal_key(k.as_bytes(), seq, ValueKind::Value)
    }

    /// a@1 b@3 b@2 c@1 d@5 d@4 e@1 f@1: two versions of b and d.
    fn source() -> VecIter {
        let e = |k: &str, s: u64| (ik(k, s), format!("{k}{s}").into_bytes());
        VecIter::new(vec![
            e("a", 1),
            e("b", 3),
            e("b", 2),
            e("c", 1),
            e("d", 5),
            e("d", 4),
            e("e", 1),
            e("f", 1),
        ])
    }

    fn bounded(lo: &str, hi: &str, excl: bool) -> BoundedIter<VecIter> {
        BoundedIter::new(
            source(),
            Some(KeyBounds {
                lower: lo.into(),
                upper: hi.into(),
                upper_exclusive: excl,
            }),
        )
    }

    fn at(it: &BoundedIter<VecIter>) -> Option<String> {
        it.valid()
            .then(|| String::from_utf8(it.value().to_vec()).unwrap())
    }

    fn forward(it: &mut BoundedIter<VecIter>) -> Vec<String> {
        let mut out = Vec::new();
        it.seek_to_first();
        while let Some(v) = at(it) {
            out.push(v);
            it.next();
        }
        out
    }

    fn backward(it: &mut BoundedIter<VecIter>) -> Vec<String> {
        let mut out = Vec::new();
        it.seek_to_last();
        while let Some(v) = at(it) {
            out.push(v);
            it.prev();
        }
        out
    }

    #[test]
    fn forward_and_backward_stay_inside() {
        let mut it = bounded("b", "d", false);
        assert_eq!(forward(&mut it), ["b3", "b2", "c1", "d5", "d4"]);
        assert_eq!(backward(&mut it), ["d4", "d5", "c1", "b2", "b3"]);
        // Exclusive: no version of d.
        let mut it = bounded("b", "d", true);
        assert_eq!(forward(&mut it), ["b3", "b2", "c1"]);
        assert_eq!(backward(&mut it), ["c1", "b2", "b3"]);
        // Bounds between keys.
        let mut it = bounded("bb", "dd", false);
        assert_eq!(forward(&mut it), ["c1", "d5", "d4"]);
        assert_eq!(backward(&mut it), ["d4", "d5", "c1"]);
        // Nothing inside.
        let mut it = bounded("bb", "bz", false);
        assert!(forward(&mut it).is_empty());
        assert!(backward(&mut it).is_empty());
        // Unbounded passes everything.
        let mut it = BoundedIter::new(source(), None);
        assert_eq!(forward(&mut it).len(), 8);
        assert_eq!(backward(&mut it).len(), 8);
    }

    #[test]
    fn seeks_at_inside_and_outside_the_bounds() {
        let mut it = bounded("b", "d", false);
        // Below the lower bound: the first entry inside.
        it.seek(&seek_key(b"a", 9));
        assert_eq!(at(&it).as_deref(), Some("b3"));
        // At the lower bound, between versions.
        it.seek(&seek_key(b"b", 2));
        assert_eq!(at(&it).as_deref(), Some("b2"));
        // Inside.
        it.seek(&seek_key(b"bz", 9));
        assert_eq!(at(&it).as_deref(), Some("c1"));
        // At the inclusive upper bound: every version of it.
        it.seek(&seek_key(b"d", 4));
        assert_eq!(at(&it).as_deref(), Some("d4"));
        it.next();
        assert_eq!(at(&it), None, "e is outside");
        it.next();
        assert_eq!(at(&it), None, "next on an invalid iterator stays invalid");
        // Past the upper bound.
        it.seek(&seek_key(b"e", 9));
        assert_eq!(at(&it), None);

        // seek_for_prev above the upper bound: the last entry inside.
        it.seek_for_prev(&ik("z", 1));
        assert_eq!(at(&it).as_deref(), Some("d4"));
        it.seek_for_prev(&seek_key(b"d", 9));
        assert_eq!(at(&it).as_deref(), Some("c1"));
        it.seek_for_prev(&ik("b", 3));
        assert_eq!(at(&it).as_deref(), Some("b3"));
        it.prev();
        assert_eq!(at(&it), None, "a is outside");
        it.prev();
        assert_eq!(at(&it), None);
        // Below the lower bound.
        it.seek_for_prev(&ik("a", 0));
        assert_eq!(at(&it), None);

        // Exclusive upper bound: seeking at it finds nothing, seeking
        // backward from it or beyond finds the last key before it.
        let mut it = bounded("b", "d", true);
        it.seek(&seek_key(b"d", 9));
        assert_eq!(at(&it), None);
        it.seek(&ik("c", 1));
        assert_eq!(at(&it).as_deref(), Some("c1"));
        it.next();
        assert_eq!(at(&it), None, "d is excluded");
        it.seek_for_prev(&ik("d", 4));
        assert_eq!(at(&it).as_deref(), Some("c1"));
        it.seek_for_prev(&ik("f", 1));
        assert_eq!(at(&it).as_deref(), Some("c1"));
        // A seek after falling off the end re-enters the range.
        it.seek_to_first();
        assert_eq!(at(&it).as_deref(), Some("b3"));
    }

    #[test]
    fn clips_tombstones() {
        let t = |a: &str, b: &str| RangeTombstone {
            start: a.into(),
            end: b.into(),
            seq: 7,
        };
        let incl = KeyBounds {
            lower: b"c".to_vec(),
            upper: b"f".to_vec(),
            upper_exclusive: false,
        };
        assert_eq!(incl.clip(&t("a", "d")), Some(t("c", "d")));
        assert_eq!(incl.clip(&t("d", "z")), Some(t("d", "f\0")));
        assert_eq!(incl.clip(&t("a", "c")), None, "ends where the bounds start");
        assert_eq!(incl.clip(&t("f", "g")), Some(t("f", "f\0")));
        assert_eq!(incl.clip(&t("f\0", "g")), None);
        let excl = KeyBounds {
            upper_exclusive: true,
            ..incl.clone()
        };
        assert_eq!(excl.clip(&t("d", "z")), Some(t("d", "f")));
        assert_eq!(excl.clip(&t("f", "g")), None);
        assert!(excl.contains(b"e") && !excl.contains(b"f") && incl.contains(b"f"));
        assert!(!incl.contains(b"b"));
    }
}
