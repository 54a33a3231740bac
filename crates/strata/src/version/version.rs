//! `Version`: the set of table files at one moment, by level.
//!
//! Invariants:
//! - L0 files may overlap each other; they are kept newest first (by largest
//!   sequence number), so a reader that takes the first hit is right.
//! - In L1..L6 files do not overlap and are sorted by smallest key.
//! - For any user key, a version found at a higher position of the read order
//!   (L0 before L1 before L2 ...) is never older than one found lower.
//!
//! A `Version` is immutable; changes make a new one ([`Version::apply`]).
//! Readers hold an `Arc<Version>`, which keeps its files from being deleted.

use super::edit::{FileMeta, VersionEdit};
use crate::error::{Error, Result};
use crate::key::compare_internal;
use std::cmp::Ordering;
use std::sync::Arc;

pub const NUM_LEVELS: usize = 7;

#[derive(Clone, Debug, Default)]
pub struct Version {
    levels: [Vec<Arc<FileMeta>>; NUM_LEVELS],
}

impl Version {
    pub fn new() -> Version {
        Version::default()
    }

    pub fn files(&self, level: usize) -> &[Arc<FileMeta>] {
        &self.levels[level]
    }

    pub fn all_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(l, fs)| fs.iter().map(move |f| (l, f)))
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn num_files(&self) -> usize {
        self.levels.iter().map(Vec::len).sum()
    }

    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|f| f.size).sum()
    }

    /// A new version: this one with `edit` applied. Fails (as corruption of
    /// `source`) if the edit deletes a file that is not there, adds one whose
    /// bounds are inverted, or would make a level below L0 overlap.
    pub fn apply(&self, edit: &VersionEdit, source: &str) -> Result<Version> {
        let mut v = self.clone();
        for &(level, n) in &edit.deleted_files {
            let files = v
                .levels
                .get_mut(level)
                .ok_or_else(|| bad_level(source, level))?;
            let before = files.len();
            files.retain(|f| f.number != n);
            if files.len() == before {
                return Err(Error::corruption(
                    source,
                    0,
                    format!("version edit deletes file {n} that level {level} does not hold"),
                ));
            }
        }
        for (level, f) in &edit.new_files {
            // A file's bounds come from its own first and last keys: a
            // smallest above the largest is a damaged or forged record,
            // and reads would skip keys (a level's order rests on them).
            if f.smallest_user_key() > f.largest_user_key() {
                return Err(Error::corruption(
                    source,
                    0,
                    format!(
                        "version edit adds file {} whose smallest key is above its largest",
                        f.number
                    ),
                ));
            }
            v.levels
                .get_mut(*level)
                .ok_or_else(|| bad_level(source, *level))?
                .push(Arc::new(f.clone()));
        }
        v.levels[0].sort_by(|a, b| {
            b.largest_seq
                .cmp(&a.largest_seq)
                .then(b.number.cmp(&a.number))
        });
        for level in 1..NUM_LEVELS {
            let files = &mut v.levels[level];
            files.sort_by(|a, b| compare_internal(&a.smallest, &b.smallest));
            for w in files.windows(2) {
                if compare_internal(&w[0].largest, &w[1].smallest) != Ordering::Less {
                    return Err(Error::corruption(
                        source,
                        0,
                        format!(
                            "files {} and {} overlap in level {level}",
                            w[0].number, w[1].number
                        ),
                    ));
                }
            }
        }
        Ok(v)
    }

    /// Files that may hold `user_key`, in read order (newest first): every
    /// L0 file whose range covers it, then at most one file per level.
    pub fn files_for_key<'a>(
        &'a self,
        user_key: &'a [u8],
    ) -> impl Iterator<Item = (usize, &'a Arc<FileMeta>)> + 'a {
        let l0 = self.levels[0]
            .iter()
            .filter(move |f| f.contains_user_key(user_key))
            .map(|f| (0, f));
        let rest = (1..NUM_LEVELS).filter_map(move |level| {
            let files = &self.levels[level];
            // First file that does not end before user_key (an exclusive
            // end equal to user_key ends before it).
            let i = files.partition_point(|f| f.ends_before(user_key));
            files
                .get(i)
                .filter(|f| f.contains_user_key(user_key))
                .map(|f| (level, f))
        });
        l0.chain(rest)
    }

    /// Files of `level` whose user-key range intersects `[lo, hi]`.
    pub fn overlapping(&self, level: usize, lo: &[u8], hi: &[u8]) -> Vec<Arc<FileMeta>> {
        self.levels[level]
            .iter()
            .filter(|f| f.overlaps_user_range(lo, hi))
            .cloned()
            .collect()
    }

    /// The edit that recreates this version from nothing (a new MANIFEST's
    /// first record).
    pub fn snapshot_edit(&self) -> VersionEdit {
        let mut e = VersionEdit::default();
        for (level, f) in self.all_files() {
            e.add_file(level, (**f).clone());
        }
        e
    }
}

fn bad_level(source: &str, level: usize) -> Error {
    Error::corruption(source, 0, format!("version edit names level {level}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    fn f(n: u64, lo: &str, hi: &str, seq: u64) -> FileMeta {
        FileMeta {
            number: n,
            size: 100,
            smallest: make_internal_key(lo.as_bytes(), seq, ValueKind::Value),
            largest: make_internal_key(hi.as_bytes(), seq, ValueKind::Value),
            smallest_seq: seq,
            largest_seq: seq,
            global_seqno: None,
            num_entries: 1,
            num_deletions: 0,
            num_range_deletions: 0,
            backing: None,
        }
    }

    #[test]
    fn apply_orders_levels_and_finds_files() {
        let mut e = VersionEdit::default();
        e.add_file(0, f(1, "a", "m", 10));
        e.add_file(0, f(2, "c", "z", 20));
        e.add_file(1, f(3, "n", "p", 5));
        e.add_file(1, f(4, "a", "f", 5));
        let v = Version::new().apply(&e, "M").unwrap();
        assert_eq!(v.files(0)[0].number, 2, "newest L0 file first");
        assert_eq!(v.files(1)[0].number, 4, "L1 sorted by key");
        let hits: Vec<u64> = v.files_for_key(b"d").map(|(_, f)| f.number).collect();
        assert_eq!(hits, vec![2, 1, 4]);
        let hits: Vec<u64> = v.files_for_key(b"o").map(|(_, f)| f.number).collect();
        assert_eq!(hits, vec![2, 3]);
        assert!(v.files_for_key(b"g").all(|(l, _)| l == 0));

        let mut del = VersionEdit::default();
        del.delete_file(0, 1);
        let v2 = v.apply(&del, "M").unwrap();
        assert_eq!(v2.num_files(), 3);
        assert_eq!(v.num_files(), 4, "old version unchanged");
        assert!(v2.apply(&del, "M").is_err(), "deleting twice is corruption");

        let mut overlap = VersionEdit::default();
        overlap.add_file(1, f(5, "e", "g", 6));
        assert!(v.apply(&overlap, "M").is_err());
    }

    /// A file whose smallest key is above its largest (a forged or damaged
    /// record with a valid checksum) is refused at every level, L0 too,
    /// where no overlap check would notice it; one key on both ends is fine.
    #[test]
    fn a_file_with_inverted_bounds_is_corruption() {
        for level in [0, 1, 6] {
            let mut e = VersionEdit::default();
            e.add_file(level, f(7, "q", "b", 3));
            match Version::new().apply(&e, "MANIFEST-000002") {
                Err(Error::Corruption { file, msg, .. }) => {
                    assert_eq!(file, "MANIFEST-000002");
                    assert!(msg.contains("file 7") && msg.contains("above"), "{msg}");
                }
                other => panic!("level {level}: {other:?}"),
            }
            let mut one = VersionEdit::default();
            one.add_file(level, f(8, "k", "k", 3));
            assert!(Version::new().apply(&one, "M").is_ok());
        }
    }
}
