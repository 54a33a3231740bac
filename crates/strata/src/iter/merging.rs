//! `MergingIterator`: one sorted view over several internal iterators
//! (LevelDB's / RocksDB's `MergingIterator`).
//!
//! Children are given newest source first. The merged order is by internal
//! key and, for the identical internal key in two children (which a correct
//! engine never produces), by child index, so forward iteration yields the
//! earlier (newer) child's entry first and backward iteration yields exactly
//! the reverse sequence.
//!
//! Invariants while the iterator is valid:
//! - `heap` holds the index of every valid child and nothing else, arranged as
//!   a binary heap on `(key, child index)`: a min-heap when moving forward, a
//!   max-heap when moving backward. Its top is the current entry.
//! - Forward: every child stands at its first entry after the current one in
//!   merged order. Backward: at its last entry before it. Changing direction
//!   re-seeks every other child to restore this.
//!
//! Errors: a child that becomes invalid is asked for its status; the first
//! error seen is kept, the merged iterator becomes invalid, and only a seek
//! clears it (children clear their own errors on seeks).

use super::InternalIterator;
use crate::error::{Error, Result};
use crate::key::compare_internal;
use std::cmp::Ordering;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    Forward,
    Backward,
}

pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator + Send>>,
    heap: Vec<usize>,
    direction: Direction,
    err: Option<Error>,
}

impl MergingIterator {
    /// `children` newest source first.
    pub fn new(children: Vec<Box<dyn InternalIterator + Send>>) -> MergingIterator {
        let heap = Vec::with_capacity(children.len());
        MergingIterator {
            children,
            heap,
            direction: Direction::Forward,
            err: None,
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn num_children(&self) -> usize {
        self.children.len()
    }

    /// Whether child `a` belongs above child `b` in the heap.
    fn above(&self, a: usize, b: usize) -> bool {
        let o = compare_internal(self.children[a].key(), self.children[b].key()).then(a.cmp(&b));
        match self.direction {
            Direction::Forward => o == Ordering::Less,
            Direction::Backward => o == Ordering::Greater,
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if l < n && self.above(self.heap[l], self.heap[best]) {
                best = l;
            }
            if r < n && self.above(self.heap[r], self.heap[best]) {
                best = r;
            }
            if best == i {
                return;
            }
            self.heap.swap(i, best);
            i = best;
        }
    }

    /// Keeps the first error; later ones are usually consequences of it.
    fn record(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// Records child `i`'s error if it has one (children that fail become
    /// invalid, so only invalid children need asking).
    fn check_child(&mut self, i: usize) {
        if let Err(e) = self.children[i].status() {
            self.record(e);
        }
    }

    /// Rebuilds the heap from scratch after children were repositioned.
    fn rebuild(&mut self, direction: Direction) {
        self.direction = direction;
        self.heap.clear();
        for i in 0..self.children.len() {
            if self.children[i].valid() {
                self.heap.push(i);
            } else {
                self.check_child(i);
            }
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// The top child has moved: restore the heap.
    fn fix_top(&mut self) {
        let top = self.heap[0];
        if self.children[top].valid() {
            self.sift_down(0);
        } else {
            self.check_child(top);
            let last = self.heap.pop();
            if let (Some(last), false) = (last, self.heap.is_empty()) {
                self.heap[0] = last;
                self.sift_down(0);
            }
        }
    }

    /// Positions every child other than `cur` just after the current entry
    /// (key `k`, child `cur`) in merged order, for a switch to forward.
    fn switch_to_forward(&mut self, cur: usize, k: &[u8]) {
        for i in 0..self.children.len() {
            if i == cur {
                continue;
            }
            let c = &mut self.children[i];
            c.seek(k);
            // A later child's copy of `k` sorts after (k, cur) and stays; an
            // earlier child's copy was already yielded.
            if i < cur && c.valid() && c.key() == k {
                c.next();
            }
        }
        self.rebuild(Direction::Forward);
    }

    /// Positions every child other than `cur` just before the current entry,
    /// for a switch to backward.
    fn switch_to_backward(&mut self, cur: usize, k: &[u8]) {
        for i in 0..self.children.len() {
            if i == cur {
                continue;
            }
            let c = &mut self.children[i];
            if i < cur {
                // (k, i) sorts before (k, cur), so an earlier child's copy of
                // `k` is still ahead of us going backward.
                c.seek_for_prev(k);
            } else {
                c.seek(k);
                if c.valid() {
                    c.prev();
                } else if c.status().is_ok() {
                    c.seek_to_last();
                }
            }
        }
        self.rebuild(Direction::Backward);
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.rebuild(Direction::Forward);
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.rebuild(Direction::Backward);
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        for c in &mut self.children {
            c.seek(target);
        }
        self.rebuild(Direction::Forward);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = None;
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.rebuild(Direction::Backward);
    }

    fn next(&mut self) {
        if !self.valid() {
            return;
        }
        let cur = self.heap[0];
        if self.direction == Direction::Backward {
            // Copy the key: re-seeking the other children must not alias the
            // current child's buffer (and it is one allocation per switch).
            let k = self.children[cur].key().to_vec();
            self.switch_to_forward(cur, &k);
            if self.err.is_some() {
                return;
            }
            // (k, cur) is now the unique minimum, so `cur` is on top again.
            debug_assert_eq!(self.heap.first(), Some(&cur));
        }
        self.children[cur].next();
        self.fix_top();
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let cur = self.heap[0];
        if self.direction == Direction::Forward {
            let k = self.children[cur].key().to_vec();
            self.switch_to_backward(cur, &k);
            if self.err.is_some() {
                return;
            }
            debug_assert_eq!(self.heap.first(), Some(&cur));
        }
        self.children[cur].prev();
        self.fix_top();
    }

    fn key(&self) -> &[u8] {
        match self.heap.first() {
            Some(&i) if self.err.is_none() => self.children[i].key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.heap.first() {
            Some(&i) if self.err.is_none() => self.children[i].value(),
            _ => &[],
        }
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::iter::VecIter;
    use crate::key::{make_internal_key, ValueKind};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Wraps an iterator and fails (becomes invalid with an error) once it
    /// has been moved `budget` times.
    pub(crate) struct FailingIter {
        pub inner: VecIter,
        pub budget: usize,
        pub failed: bool,
    }

    impl FailingIter {
        fn step(&mut self) -> bool {
            if self.failed {
                return false;
            }
            if self.budget == 0 {
                self.failed = true;
                return false;
            }
            self.budget -= 1;
            true
        }
    }

    impl InternalIterator for FailingIter {
        fn valid(&self) -> bool {
            !self.failed && self.inner.valid()
        }
        fn seek_to_first(&mut self) {
            if self.step() {
                self.inner.seek_to_first()
            }
        }
        fn seek_to_last(&mut self) {
            if self.step() {
                self.inner.seek_to_last()
            }
        }
        fn seek(&mut self, t: &[u8]) {
            if self.step() {
                self.inner.seek(t)
            }
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            if self.step() {
                self.inner.seek_for_prev(t)
            }
        }
        fn next(&mut self) {
            if self.step() {
                self.inner.next()
            }
        }
        fn prev(&mut self) {
            if self.step() {
                self.inner.prev()
            }
        }
        fn key(&self) -> &[u8] {
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
        fn status(&self) -> Result<()> {
            if self.failed {
                Err(Error::corruption("failing-child", 7, "injected"))
            } else {
                Ok(())
            }
        }
    }

    fn ik(k: &[u8], seq: u64) -> Vec<u8> {
        make_internal_key(k, seq, ValueKind::Value)
    }

    fn merged(children: Vec<Vec<(Vec<u8>, Vec<u8>)>>) -> MergingIterator {
        MergingIterator::new(
            children
                .into_iter()
                .map(|c| Box::new(VecIter::new(c)) as Box<dyn InternalIterator + Send>)
                .collect(),
        )
    }

    fn collect_forward(it: &mut MergingIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    fn collect_backward(it: &mut MergingIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        it.seek_to_last();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        out.reverse();
        out
    }

    #[test]
    fn direction_switches_in_the_middle() {
        let mut it = merged(vec![
            vec![(ik(b"a", 1), b"0".into()), (ik(b"d", 1), b"0".into())],
            vec![(ik(b"b", 1), b"1".into()), (ik(b"e", 1), b"1".into())],
            vec![(ik(b"c", 1), b"2".into()), (ik(b"f", 1), b"2".into())],
        ]);
        it.seek(&ik(b"c", 1));
        assert_eq!(it.key(), ik(b"c", 1));
        it.prev();
        assert_eq!(it.key(), ik(b"b", 1));
        it.prev();
        assert_eq!(it.key(), ik(b"a", 1));
        it.next();
        assert_eq!(it.key(), ik(b"b", 1));
        it.next();
        assert_eq!(it.key(), ik(b"c", 1));
        it.next();
        assert_eq!(it.key(), ik(b"d", 1));
        it.prev();
        assert_eq!(it.key(), ik(b"c", 1));
        it.seek_for_prev(&ik(b"e", 0));
        assert_eq!(it.key(), ik(b"e", 1));
        it.next();
        assert_eq!(it.key(), ik(b"f", 1));
        it.next();
        assert!(!it.valid());
        assert!(it.status().is_ok());
        it.seek_to_last();
        it.prev();
        it.prev();
        assert_eq!(it.key(), ik(b"d", 1));
    }

    #[test]
    fn identical_keys_prefer_the_earlier_child() {
        // Both children hold (k, 5); forward yields child 0's first, backward
        // the exact reverse, and switching direction on either copy works.
        let mut it = merged(vec![
            vec![(ik(b"j", 1), b"0j".into()), (ik(b"k", 5), b"0".into())],
            vec![(ik(b"k", 5), b"1".into()), (ik(b"l", 1), b"1l".into())],
        ]);
        let fwd = collect_forward(&mut it);
        let vals: Vec<&[u8]> = fwd.iter().map(|e| e.1.as_slice()).collect();
        assert_eq!(vals, [&b"0j"[..], b"0", b"1", b"1l"]);
        assert_eq!(collect_backward(&mut it), fwd);

        it.seek(&ik(b"k", 5));
        assert_eq!(it.value(), b"0");
        it.next();
        assert_eq!(it.value(), b"1");
        it.prev();
        assert_eq!(it.value(), b"0");
        it.prev();
        assert_eq!(it.value(), b"0j");
        it.next();
        assert_eq!(it.value(), b"0");
        it.next();
        assert_eq!(it.value(), b"1");
        it.next();
        assert_eq!(it.value(), b"1l");
        it.prev();
        assert_eq!(it.value(), b"1");
        it.prev();
        assert_eq!(it.value(), b"0");
        it.seek_for_prev(&ik(b"k", 5));
        assert_eq!(it.value(), b"1");
        it.prev();
        assert_eq!(it.value(), b"0");
        // Forward again from child 0's copy: child 1's copy is still ahead.
        it.next();
        assert_eq!(it.value(), b"1");
        it.next();
        assert_eq!(it.value(), b"1l");
    }

    #[test]
    fn model_random_walks() {
        let mut rng = StdRng::seed_from_u64(0x6d65_7267);
        for round in 0..300 {
            let n_children = rng.gen_range(0..=6);
            let mut all = Vec::new();
            let mut children = vec![Vec::new(); n_children];
            if n_children > 0 {
                for seq in 0..rng.gen_range(0..60u64) {
                    let len = rng.gen_range(0..3);
                    let uk: Vec<u8> = (0..len)
                        .map(|_| [0u8, b'a', 0xff][rng.gen_range(0..3)])
                        .collect();
                    let e = (ik(&uk, seq), seq.to_le_bytes().to_vec());
                    children[rng.gen_range(0..n_children)].push(e.clone());
                    all.push(e);
                }
            }
            all.sort_by(|a, b| compare_internal(&a.0, &b.0));
            let mut it = merged(children);
            assert_eq!(collect_forward(&mut it), all, "round {round}");
            assert_eq!(collect_backward(&mut it), all, "round {round}");

            for _ in 0..20 {
                // Position with a random seek, then walk both ways.
                let uk: Vec<u8> = (0..rng.gen_range(0..3))
                    .map(|_| [0u8, b'a', 0xff][rng.gen_range(0..3)])
                    .collect();
                let target = ik(&uk, rng.gen_range(0..62));
                let mut pos: Option<usize> = if rng.gen_bool(0.5) {
                    it.seek(&target);
                    let p = all.partition_point(|e| compare_internal(&e.0, &target).is_lt());
                    (p < all.len()).then_some(p)
                } else {
                    it.seek_for_prev(&target);
                    let p = all.partition_point(|e| compare_internal(&e.0, &target).is_le());
                    p.checked_sub(1)
                };
                for _ in 0..15 {
                    match pos {
                        Some(p) => {
                            assert!(it.valid(), "round {round}");
                            assert_eq!(it.key(), all[p].0, "round {round}");
                            assert_eq!(it.value(), all[p].1, "round {round}");
                        }
                        None => {
                            assert!(!it.valid(), "round {round}");
                            break;
                        }
                    }
                    let p = pos.unwrap_or(0);
                    if rng.gen_bool(0.5) {
                        it.next();
                        pos = (p + 1 < all.len()).then_some(p + 1);
                    } else {
                        it.prev();
                        pos = p.checked_sub(1);
                    }
                }
            }
        }
    }

    fn failing_pair(budget: usize) -> (MergingIterator, Vec<Vec<u8>>) {
        let entries = |tag: u8| -> Vec<(Vec<u8>, Vec<u8>)> {
            (0..6u8)
                .map(|i| (ik(&[b'a' + i, tag], 1), vec![tag]))
                .collect()
        };
        let mut all: Vec<Vec<u8>> = entries(0)
            .into_iter()
            .chain(entries(1))
            .map(|e| e.0)
            .collect();
        all.sort_by(|a, b| compare_internal(a, b));
        let children: Vec<Box<dyn InternalIterator + Send>> = vec![
            Box::new(VecIter::new(entries(0))),
            Box::new(FailingIter {
                inner: VecIter::new(entries(1)),
                budget,
                failed: false,
            }),
        ];
        (MergingIterator::new(children), all)
    }

    /// One-way scans: the child fails the moment it runs out of budget, and
    /// the merged iterator must stop right there with the error instead of
    /// carrying on without that child's entries.
    #[test]
    fn child_errors_stop_scans() {
        for budget in 0..10 {
            for backward in [false, true] {
                let (mut it, mut all) = failing_pair(budget);
                if backward {
                    all.reverse();
                    it.seek_to_last();
                } else {
                    it.seek_to_first();
                }
                let mut got = Vec::new();
                while it.valid() {
                    got.push(it.key().to_vec());
                    if backward {
                        it.prev();
                    } else {
                        it.next();
                    }
                }
                // The child needs 1 seek + 6 steps to run off its end.
                if budget < 7 {
                    assert!(it.status().is_err(), "budget {budget}");
                } else {
                    assert!(it.status().is_ok(), "budget {budget}");
                }
                assert_eq!(got[..], all[..got.len()], "budget {budget}");
            }
        }
    }

    #[test]
    fn child_errors_propagate() {
        for budget in 0..12 {
            let (mut it, _) = failing_pair(budget);
            it.seek_to_first();
            let mut seen = 0;
            while it.valid() {
                seen += 1;
                // Two steps forward, one back: every third step switches
                // direction twice, re-seeking (and so spending the budget of)
                // the failing child, and the walk cannot reach the end
                // before the budget runs out.
                if seen % 3 == 0 {
                    it.prev();
                } else {
                    it.next();
                }
                assert!(seen < 100, "walk does not end");
            }
            let err = it.status().expect_err("the failing child must surface");
            assert!(err.is_corruption(), "{err}");
            assert!(!it.valid());
            assert!(it.key().is_empty());
            // Still invalid after more steps; the error stays.
            it.next();
            it.prev();
            assert!(!it.valid() && it.status().is_err());
        }
    }
}
