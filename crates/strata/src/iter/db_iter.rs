//! `DbIter`: the user-facing iterator (LevelDB's `DBIter`). It turns an
//! internal iterator over every version of every key into a view of user
//! keys as they were at one snapshot.
//!
//! A user key is visible when it lies in `[lower, upper)` and its newest entry
//! with sequence `<= snapshot` is a value that no visible range tombstone with
//! a larger sequence covers. Deletions and single deletions hide the key;
//! a merge operand is `Error::NotSupported` (Strata has no merge operator)
//! unless something newer or a range tombstone makes it irrelevant.
//!
//! Positioning invariants (LevelDB's):
//! - Forward: `inner` stands at the entry being shown, which is the newest
//!   visible version of `key()`; `key()` and `value()` borrow from `inner`.
//! - Reverse: `inner` stands just before every entry of `key()` (at the
//!   previous user key's last entry, or invalid); the shown key and value are
//!   copies in `saved_key` / `saved_value`.
//!
//! Backward iteration must show exactly the reverse of forward iteration, so
//! going backward reads every version of a user key (oldest first) and keeps
//! the newest visible one, instead of stopping at the first entry it meets.

use super::range_del::RangeDelAggregator;
use super::InternalIterator;
use crate::error::{Error, Result};
use crate::key::{append_internal_key, ParsedKey, ValueKind, KIND_FOR_SEEK, MAX_SEQUENCE};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    Forward,
    Reverse,
}

/// What the newest visible version seen so far says, while scanning one user
/// key backward.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Found {
    /// Nothing visible yet, or a deletion.
    Deleted,
    Value,
    Merge,
    /// A kind the format does not define.
    Unknown(u8),
}

pub struct DbIter {
    inner: Box<dyn InternalIterator + Send>,
    snapshot: u64,
    range_dels: RangeDelAggregator,
    /// Where the last range-deletion lookup landed (keys come in order).
    rd_hint: usize,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    direction: Direction,
    valid: bool,
    /// Forward: the user key being skipped. Reverse: the shown key.
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    /// Sequence of the entry behind `saved_key` while scanning backward.
    saved_seq: u64,
    /// Reused buffer for building seek targets.
    scratch: Vec<u8>,
    /// An error met while interpreting entries; cleared by seeks.
    err: Option<Error>,
    /// A misuse found at construction; makes the iterator permanently empty.
    fatal: Option<Error>,
}

impl DbIter {
    /// `range_dels` must have been built for the same `snapshot` (or be
    /// [`RangeDelAggregator::empty`]); otherwise every operation leaves the
    /// iterator invalid with `Error::Internal`, since tombstones from
    /// the wrong snapshot would silently give wrong answers. `lower` and
    /// `upper` bound user keys to `[lower, upper)`.
    pub fn new(
        inner: Box<dyn InternalIterator + Send>,
        snapshot: u64,
        range_dels: RangeDelAggregator,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> DbIter {
        let snapshot = snapshot.min(MAX_SEQUENCE);
        let fatal = match range_dels.snapshot() {
            Some(s) if s != snapshot => Some(Error::internal(format!(
                "range deletions aggregated at snapshot {s}, iterator reads at {snapshot}"
            ))),
            _ => None,
        };
        DbIter {
            inner,
            snapshot,
            range_dels,
            rd_hint: 0,
            lower,
            upper,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            saved_seq: 0,
            scratch: Vec::new(),
            err: None,
            fatal,
        }
    }

    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key; only while `valid()`.
    pub fn key(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match self.direction {
            Direction::Forward => user_key_of(self.inner.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    pub fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match self.direction {
            Direction::Forward => self.inner.value(),
            Direction::Reverse => &self.saved_value,
        }
    }

    pub fn status(&self) -> Result<()> {
        match (&self.fatal, &self.err) {
            (Some(e), _) | (None, Some(e)) => Err(e.clone()),
            (None, None) => self.inner.status(),
        }
    }

    /// Resets per-positioning state; false if the iterator is unusable.
    fn start_positioning(&mut self, direction: Direction) -> bool {
        self.err = None;
        self.valid = false;
        self.direction = direction;
        self.fatal.is_none()
    }

    pub fn seek_to_first(&mut self) {
        if let Some(l) = self.lower.take() {
            self.seek(&l);
            self.lower = Some(l);
            return;
        }
        if !self.start_positioning(Direction::Forward) {
            return;
        }
        self.inner.seek_to_first();
        self.find_next_user_entry(false);
    }

    /// The first visible user key `>= user_key`.
    pub fn seek(&mut self, user_key: &[u8]) {
        if !self.start_positioning(Direction::Forward) {
            return;
        }
        let target = match &self.lower {
            Some(l) if user_key < l.as_slice() => l.as_slice(),
            _ => user_key,
        };
        // Versions newer than the snapshot sort before this target, so the
        // first entry found is already the newest visible version.
        self.scratch.clear();
        append_internal_key(&mut self.scratch, target, self.snapshot, KIND_FOR_SEEK);
        self.inner.seek(&self.scratch);
        self.find_next_user_entry(false);
    }

    pub fn seek_to_last(&mut self) {
        if !self.start_positioning(Direction::Reverse) {
            return;
        }
        match &self.upper {
            Some(u) => {
                seek_before_user_key(self.inner.as_mut(), &mut self.scratch, u);
            }
            None => self.inner.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    /// The last visible user key `<= user_key`.
    pub fn seek_for_prev(&mut self, user_key: &[u8]) {
        if !self.start_positioning(Direction::Reverse) {
            return;
        }
        match &self.upper {
            Some(u) if user_key >= u.as_slice() => {
                seek_before_user_key(self.inner.as_mut(), &mut self.scratch, u);
            }
            _ => {
                // Sequence 0 and kind 0 give the smallest trailer, which
                // sorts after every other entry of `user_key`.
                self.scratch.clear();
                append_internal_key(&mut self.scratch, user_key, 0, 0);
                self.inner.seek_for_prev(&self.scratch);
            }
        }
        self.find_prev_user_entry();
    }

    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Reverse {
            // `inner` is just before the entries of the shown key (which is in
            // `saved_key`): step into them and let the skipping code pass
            // them.
            self.direction = Direction::Forward;
            if self.inner.valid() {
                self.inner.next();
            } else {
                self.inner.seek_to_first();
            }
        } else {
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(user_key_of(self.inner.key()));
            self.inner.next();
        }
        self.find_next_user_entry(true);
    }

    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            // Step back over every entry of the shown key (newer invisible
            // versions included), to stand just before them.
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(user_key_of(self.inner.key()));
            loop {
                self.inner.prev();
                if !self.inner.valid() {
                    self.valid = false;
                    return;
                }
                if user_key_of(self.inner.key()) < self.saved_key.as_slice() {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    fn corrupt_key(&mut self) {
        self.err = Some(Error::corruption(
            "db iterator",
            0,
            "internal key shorter than its 8-byte trailer",
        ));
        self.valid = false;
    }

    /// Moves forward from the current `inner` position to the newest visible
    /// version of the next visible user key. With `skipping`, entries whose
    /// user key is `<= saved_key` are passed over.
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        while self.inner.valid() {
            let Some(p) = ParsedKey::parse(self.inner.key()) else {
                return self.corrupt_key();
            };
            if self.upper.as_deref().is_some_and(|u| p.user_key >= u) {
                break;
            }
            let hidden = p.seq > self.snapshot
                || self.lower.as_deref().is_some_and(|l| p.user_key < l)
                || (skipping && p.user_key <= self.saved_key.as_slice());
            if !hidden {
                let live = match ValueKind::from_u8(p.kind) {
                    Some(ValueKind::Deletion | ValueKind::SingleDeletion) => false,
                    Some(ValueKind::Value | ValueKind::Merge) => {
                        self.range_dels
                            .max_covering_seq_hinted(p.user_key, &mut self.rd_hint)
                            <= p.seq
                    }
                    _ => {
                        self.err = Some(unknown_kind(p.kind));
                        self.valid = false;
                        return;
                    }
                };
                if !live {
                    // Every older version of this key is hidden too.
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(p.user_key);
                    skipping = true;
                } else if p.kind == ValueKind::Merge as u8 {
                    self.err = Some(merge_not_supported());
                    self.valid = false;
                    return;
                } else {
                    self.valid = true;
                    return;
                }
            }
            self.inner.next();
        }
        self.valid = false;
    }

    /// Moves backward from the current `inner` position over every version
    /// of the previous visible user key, leaving its newest visible version
    /// in `saved_key` / `saved_value` and `inner` just before its entries.
    fn find_prev_user_entry(&mut self) {
        let mut found = Found::Deleted;
        while self.inner.valid() {
            let Some(p) = ParsedKey::parse(self.inner.key()) else {
                return self.corrupt_key();
            };
            if self.lower.as_deref().is_some_and(|l| p.user_key < l) {
                break;
            }
            let visible =
                p.seq <= self.snapshot && self.upper.as_deref().is_none_or(|u| p.user_key < u);
            if visible {
                if found != Found::Deleted && p.user_key < self.saved_key.as_slice() {
                    // Every version of `saved_key` has been read; stop unless
                    // the newest one turns out to be range-deleted. (Checking
                    // only here costs one lookup per user key, not per
                    // version.)
                    let covering = self
                        .range_dels
                        .max_covering_seq_hinted(&self.saved_key, &mut self.rd_hint);
                    if !range_deletes(found, covering, self.saved_seq) {
                        return self.finish_prev(found);
                    }
                    // Hidden: carry on into this older key; `found` is
                    // overwritten just below.
                }
                found = match ValueKind::from_u8(p.kind) {
                    Some(ValueKind::Deletion | ValueKind::SingleDeletion) => Found::Deleted,
                    Some(ValueKind::Value) => {
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(self.inner.value());
                        Found::Value
                    }
                    Some(ValueKind::Merge) => Found::Merge,
                    _ => Found::Unknown(p.kind),
                };
                if found != Found::Deleted {
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(p.user_key);
                    self.saved_seq = p.seq;
                }
            }
            self.inner.prev();
        }
        if !self.inner.valid() && self.inner.status().is_err() {
            // Ran into an error, not the beginning: what was found may not
            // be the newest version. `status` reports the error.
            self.valid = false;
            return;
        }
        if found != Found::Deleted {
            let covering = self
                .range_dels
                .max_covering_seq_hinted(&self.saved_key, &mut self.rd_hint);
            if range_deletes(found, covering, self.saved_seq) {
                found = Found::Deleted;
            }
        }
        self.finish_prev(found);
    }

    fn finish_prev(&mut self, found: Found) {
        self.valid = false;
        match found {
            Found::Deleted => {
                // Nothing visible before this point: leave the iterator as
                // LevelDB does, invalid and facing forward.
                self.direction = Direction::Forward;
            }
            Found::Value => self.valid = true,
            Found::Merge => self.err = Some(merge_not_supported()),
            Found::Unknown(k) => self.err = Some(unknown_kind(k)),
        }
    }
}

/// Whether a tombstone at `covering` hides the newest version `found` (at
/// `seq`). Entries of unknown kinds stay errors whatever covers them, as they
/// do going forward.
fn range_deletes(found: Found, covering: u64, seq: u64) -> bool {
    matches!(found, Found::Value | Found::Merge) && covering > seq
}

fn user_key_of(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(8)]
}

/// Positions `it` at the last entry whose user key is `< user_key`: the
/// all-ones trailer sorts before every real entry of `user_key`.
fn seek_before_user_key(it: &mut dyn InternalIterator, scratch: &mut Vec<u8>, user_key: &[u8]) {
    scratch.clear();
    scratch.extend_from_slice(user_key);
    scratch.extend_from_slice(&u64::MAX.to_le_bytes());
    it.seek_for_prev(scratch);
}

fn merge_not_supported() -> Error {
    Error::NotSupported("merge operand in the read path (Strata has no merge operator)".into())
}

fn unknown_kind(kind: u8) -> Error {
    Error::corruption(
        "db iterator",
        0,
        format!("entry of kind {kind:#x} in the point-key stream"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::merging::tests::FailingIter;
    use crate::iter::{MergingIterator, VecIter};
    use crate::key::append_internal_key;
    use crate::sstable::RangeTombstone;

    type Scan = (Vec<(String, String)>, Result<()>);

    fn entries(list: &[(&str, u64, u8, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        list.iter()
            .map(|&(k, seq, kind, v)| {
                let mut ik = Vec::new();
                append_internal_key(&mut ik, k.as_bytes(), seq, kind);
                (ik, v.as_bytes().to_vec())
            })
            .collect()
    }

    fn tomb(start: &str, end: &str, seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: start.as_bytes().to_vec(),
            end: end.as_bytes().to_vec(),
            seq,
        }
    }

    fn db(list: &[(&str, u64, u8, &str)], tombs: &[RangeTombstone], snap: u64) -> DbIter {
        DbIter::new(
            Box::new(VecIter::new(entries(list))),
            snap,
            RangeDelAggregator::new(snap, tombs),
            None,
            None,
        )
    }

    fn forward(it: &mut DbIter) -> Scan {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push(pair(it));
            it.next();
        }
        (out, it.status())
    }

    fn backward(it: &mut DbIter) -> Scan {
        let mut out = Vec::new();
        it.seek_to_last();
        while it.valid() {
            out.push(pair(it));
            it.prev();
        }
        out.reverse();
        (out, it.status())
    }

    /// The entries of a scan that must succeed.
    fn ok(scan: Scan) -> Vec<(String, String)> {
        if let Err(e) = scan.1 {
            panic!("scan failed: {e}");
        }
        scan.0
    }

    fn pair(it: &DbIter) -> (String, String) {
        (
            String::from_utf8_lossy(it.key()).into_owned(),
            String::from_utf8_lossy(it.value()).into_owned(),
        )
    }

    fn kv(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const VAL: u8 = ValueKind::Value as u8;
    const DEL: u8 = ValueKind::Deletion as u8;
    const SDEL: u8 = ValueKind::SingleDeletion as u8;
    const MERGE: u8 = ValueKind::Merge as u8;

    #[test]
    fn iterators_are_send() {
        fn send<T: Send>() {}
        send::<DbIter>();
        send::<MergingIterator>();
        send::<RangeDelAggregator>();
    }

    #[test]
    fn snapshots_deletions_and_tombstones() {
        let list = [
            ("a", 3, VAL, "a3"),
            ("a", 5, DEL, ""),
            ("a", 7, VAL, "a7"),
            ("b", 2, VAL, "b2"),
            ("b", 4, SDEL, ""),
            ("c", 6, VAL, "c6"),
            ("d", 1, VAL, "d1"),
            ("e", 9, VAL, "e9"),
        ];
        // [c, d) at 6 does not delete c@6 (equal sequence); [d, e) at 2
        // deletes d@1; [e, f) at 12 is above every snapshot tried but one.
        let tombs = [tomb("c", "d", 6), tomb("d", "e", 2), tomb("e", "f", 12)];
        let cases: &[(u64, &[(&str, &str)])] = &[
            (20, &[("a", "a7"), ("c", "c6")]),
            (10, &[("a", "a7"), ("c", "c6"), ("e", "e9")]),
            (6, &[("c", "c6")]),
            (4, &[("a", "a3")]),
            (2, &[("b", "b2")]),
            (1, &[("d", "d1")]),
            (0, &[]),
        ];
        for &(snap, want) in cases {
            let mut it = db(&list, &tombs, snap);
            let want = kv(want);
            let f = forward(&mut it);
            assert_eq!(f.0, want, "snapshot {snap}");
            assert!(f.1.is_ok());
            let b = backward(&mut it);
            assert_eq!(b.0, want, "snapshot {snap}");
            assert!(b.1.is_ok());
        }

        let mut it = db(&list, &tombs, 10);
        it.seek(b"b");
        assert_eq!(it.key(), b"c");
        it.seek_for_prev(b"b");
        assert_eq!(it.key(), b"a");
        assert_eq!(it.value(), b"a7");
        it.next();
        assert_eq!(it.key(), b"c");
        it.prev();
        assert_eq!(it.key(), b"a");
        it.prev();
        assert!(!it.valid());
        it.seek_for_prev(b"zz");
        assert_eq!(it.key(), b"e");
    }

    #[test]
    fn bounds_limit_user_keys() {
        let list = [
            ("a", 1, VAL, "a"),
            ("b", 1, VAL, "b"),
            ("c", 1, VAL, "c"),
            ("d", 1, VAL, "d"),
        ];
        let mut it = DbIter::new(
            Box::new(VecIter::new(entries(&list))),
            5,
            RangeDelAggregator::empty(),
            Some(b"b".to_vec()),
            Some(b"d".to_vec()),
        );
        assert_eq!(forward(&mut it).0, kv(&[("b", "b"), ("c", "c")]));
        assert_eq!(backward(&mut it).0, kv(&[("b", "b"), ("c", "c")]));
        it.seek(b"a");
        assert_eq!(it.key(), b"b");
        it.seek(b"d");
        assert!(!it.valid());
        it.seek_for_prev(b"z");
        assert_eq!(it.key(), b"c");
        it.seek_for_prev(b"a");
        assert!(!it.valid());
        it.seek_for_prev(b"b");
        assert_eq!(it.key(), b"b");
        it.prev();
        assert!(!it.valid());
    }

    #[test]
    fn merge_operands_are_not_supported() {
        // x's newest visible version is a merge: an error both ways.
        let list = [("w", 1, VAL, "w"), ("x", 5, MERGE, "m"), ("y", 1, VAL, "y")];
        let mut it = db(&list, &[], 10);
        let (got, st) = forward(&mut it);
        assert_eq!(got, kv(&[("w", "w")]));
        assert!(matches!(st, Err(Error::NotSupported(_))), "{st:?}");
        let (got, st) = backward(&mut it);
        assert_eq!(got, kv(&[("y", "y")]));
        assert!(matches!(st, Err(Error::NotSupported(_))), "{st:?}");
        // Invisible at the snapshot: no error.
        let mut it = db(&list, &[], 4);
        assert_eq!(forward(&mut it).0.len(), 2);
        assert!(it.status().is_ok());

        // Shadowed by a newer value, or range-deleted: irrelevant, no error.
        let list = [
            ("x", 3, MERGE, "m"),
            ("x", 6, VAL, "x6"),
            ("z", 3, MERGE, "m"),
        ];
        let tombs = [tomb("z", "zz", 4)];
        let mut it = db(&list, &tombs, 10);
        assert_eq!(ok(forward(&mut it)), kv(&[("x", "x6")]));
        assert_eq!(ok(backward(&mut it)), kv(&[("x", "x6")]));
    }

    #[test]
    fn damaged_entries_are_errors() {
        // A key shorter than its trailer.
        let mut it = DbIter::new(
            Box::new(VecIter::new(vec![(b"abc".to_vec(), b"v".to_vec())])),
            10,
            RangeDelAggregator::empty(),
            None,
            None,
        );
        assert!(forward(&mut it).1.is_err_and(|e| e.is_corruption()));
        assert!(backward(&mut it).1.is_err_and(|e| e.is_corruption()));
        // An unknown kind as the newest version, even under a tombstone;
        // shadowed by a newer version it is never interpreted.
        for (list, bad) in [
            (vec![("k", 5, 0x5, "?"), ("k", 2, VAL, "k2")], true),
            (vec![("k", 2, 0x5, "?"), ("k", 5, VAL, "k5")], false),
        ] {
            let mut it = db(&list, &[tomb("a", "z", 6)], 6);
            assert_eq!(forward(&mut it).1.is_err(), bad);
            assert_eq!(backward(&mut it).1.is_err(), bad);
            let mut it = db(&list, &[], 6);
            assert_eq!(forward(&mut it).1.is_err(), bad);
            assert_eq!(backward(&mut it).1.is_err(), bad);
        }
    }

    #[test]
    fn aggregator_from_another_snapshot_is_refused() {
        let list = [("a", 1, VAL, "a")];
        let mut it = DbIter::new(
            Box::new(VecIter::new(entries(&list))),
            6,
            RangeDelAggregator::new(5, &[tomb("a", "b", 6)]),
            None,
            None,
        );
        let (got, st) = forward(&mut it);
        assert!(got.is_empty());
        assert!(matches!(st, Err(Error::Internal(_))), "{st:?}");
        it.seek(b"a");
        assert!(!it.valid());
        // Clamping makes u64::MAX and MAX_SEQUENCE the same snapshot.
        let mut it = DbIter::new(
            Box::new(VecIter::new(entries(&list))),
            MAX_SEQUENCE,
            RangeDelAggregator::new(u64::MAX, &[]),
            None,
            None,
        );
        assert_eq!(ok(forward(&mut it)), kv(&[("a", "a")]));
    }

    /// The inner iterator fails part-way through the versions of a key:
    /// `DbIter` must not show what it had gathered so far (an older version)
    /// as if it were the answer.
    #[test]
    fn inner_errors_stop_iteration() {
        let mut list: Vec<(String, u64, u8, String)> = Vec::new();
        for k in ["a", "b", "c"] {
            for seq in 1..=4 {
                list.push((k.to_string(), seq, VAL, format!("{k}{seq}")));
            }
        }
        let list: Vec<(&str, u64, u8, &str)> = list
            .iter()
            .map(|(k, s, kind, v)| (k.as_str(), *s, *kind, v.as_str()))
            .collect();
        let full = kv(&[("a", "a4"), ("b", "b4"), ("c", "c4")]);
        for budget in 0..16 {
            for two_children in [false, true] {
                let failing = Box::new(FailingIter {
                    inner: VecIter::new(entries(&list)),
                    budget,
                    failed: false,
                });
                let inner: Box<dyn InternalIterator + Send> = if two_children {
                    Box::new(MergingIterator::new(vec![
                        Box::new(VecIter::new(Vec::new())),
                        failing,
                    ]))
                } else {
                    failing
                };
                let mut it = DbIter::new(inner, 10, RangeDelAggregator::empty(), None, None);
                let (got, st) = if budget % 2 == 0 {
                    forward(&mut it)
                } else {
                    let (mut got, st) = backward(&mut it);
                    // What a failed backward scan showed is a suffix.
                    got.reverse();
                    let mut want = full.clone();
                    want.reverse();
                    assert_eq!(got[..], want[..got.len()], "budget {budget}");
                    (Vec::new(), st)
                };
                assert_eq!(got[..], full[..got.len()], "budget {budget}");
                // 12 entries: a full scan needs 1 seek + 12 steps.
                assert_eq!(st.is_err(), budget < 13, "budget {budget}");
                assert!(!it.valid());
            }
        }
    }
}
