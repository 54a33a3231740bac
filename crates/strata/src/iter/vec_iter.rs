//! `VecIter`: an [`InternalIterator`] over an owned vector of
//! `(internal key, value)` pairs.
//!
//! It owns its entries and keeps them sorted by [`compare_internal`] (the
//! constructor sorts, stably, so equal keys keep their input order). The
//! position is an index; `entries.len()` means "not valid". It never fails,
//! so `status` is always `Ok`. Used by tests and by callers that already hold
//! a small sorted batch in memory.

use super::InternalIterator;
use crate::error::Result;
use crate::key::compare_internal;
use std::cmp::Ordering;

pub struct VecIter {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
}

impl VecIter {
    /// Takes `entries` in any order and sorts them by internal key.
    pub fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecIter {
        // Stable, and linear on input that is already sorted.
        entries.sort_by(|a, b| compare_internal(&a.0, &b.0));
        let pos = entries.len();
        VecIter { entries, pos }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The number of entries whose key is `< target` (`strict`) or `<= target`.
    fn count_before(&self, target: &[u8], strict: bool) -> usize {
        self.entries
            .partition_point(|(k, _)| match compare_internal(k, target) {
                Ordering::Less => true,
                Ordering::Equal => !strict,
                Ordering::Greater => false,
            })
    }
}

impl InternalIterator for VecIter {
    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }

    fn seek_to_first(&mut self) {
        self.pos = 0;
    }

    fn seek_to_last(&mut self) {
        // An empty vector leaves `pos == len == 0`: not valid.
        self.pos = self.entries.len().saturating_sub(1);
    }

    fn seek(&mut self, target: &[u8]) {
        self.pos = self.count_before(target, true);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.pos = match self.count_before(target, false) {
            0 => self.entries.len(),
            n => n - 1,
        };
    }

    fn next(&mut self) {
        if self.valid() {
            self.pos += 1;
        }
    }

    fn prev(&mut self) {
        if self.valid() {
            self.pos = if self.pos == 0 {
                self.entries.len()
            } else {
                self.pos - 1
            };
        }
    }

    fn key(&self) -> &[u8] {
        self.entries.get(self.pos).map_or(&[], |e| e.0.as_slice())
    }

    fn value(&self) -> &[u8] {
        self.entries.get(self.pos).map_or(&[], |e| e.1.as_slice())
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, seek_key, ValueKind};

    fn ik(k: &str, seq: u64) -> Vec<u8> {
        make_internal_key(k.as_bytes(), seq, ValueKind::Value)
    }

    #[test]
    fn seeks_and_steps() {
        let mut it = VecIter::new(vec![
            (ik("b", 1), b"b1".to_vec()),
            (ik("a", 5), b"a5".to_vec()),
            (ik("b", 9), b"b9".to_vec()),
        ]);
        assert!(!it.valid());
        it.seek_to_first();
        assert_eq!(it.value(), b"a5");
        it.next();
        assert_eq!(it.value(), b"b9");
        it.next();
        assert_eq!(it.value(), b"b1");
        it.next();
        assert!(!it.valid());

        it.seek(&seek_key(b"b", 5));
        assert_eq!(it.value(), b"b1");
        it.seek_for_prev(&seek_key(b"b", 5));
        assert_eq!(it.value(), b"b9");
        it.seek_for_prev(&ik("b", 9));
        assert_eq!(it.value(), b"b9");
        it.seek(&ik("b", 9));
        assert_eq!(it.value(), b"b9");
        it.prev();
        assert_eq!(it.value(), b"a5");
        it.prev();
        assert!(!it.valid());
        it.seek_for_prev(&ik("a", 6));
        assert!(!it.valid());
        it.seek(&ik("c", 6));
        assert!(!it.valid());
        it.seek_to_last();
        assert_eq!(it.value(), b"b1");

        let mut empty = VecIter::new(Vec::new());
        empty.seek_to_last();
        assert!(!empty.valid());
        empty.seek_to_first();
        assert!(!empty.valid());
    }
}
