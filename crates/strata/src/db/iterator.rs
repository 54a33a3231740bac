//! The two public iterators over a database's keys.
//!
//! - [`DbIterator`] is a Rust iterator: `for` loops, adapters, `.rev()`.
//!   It yields `Result<(key, value)>` in key order, from either end.
//! - [`RawIterator`] is the positional cursor underneath (LevelDB's and
//!   RocksDB's `Iterator`): `seek`, `seek_for_prev`, `next`, `prev`, and
//!   `key`/`value` of the entry it stands on.
//!
//! Both read one consistent view: the memtables and files current when the
//! iterator was created (or a [`Snapshot`](super::Snapshot)'s view), kept
//! alive by the iterator however long it lives.
//!
//! `DbIterator`'s two ends share one cursor. Each end remembers the last key
//! it yielded; the cursor only moves in the direction of the end being
//! advanced, and switching ends re-seeks from the other end's last key. The
//! ends meet, never cross: a key is yielded once.

use super::read::DbCursor;
use crate::error::{Error, Result};
use std::ops::{Bound, RangeBounds};

/// One key and its value, as a [`DbIterator`] yields them.
pub type KvPair = (Vec<u8>, Vec<u8>);

/// A positional cursor over the keys of a database (RocksDB's raw
/// iterator).
///
/// A new cursor is *unpositioned*: [`valid`](Self::valid) is false and
/// [`key`](Self::key) is `None` until one of the `seek` methods is called.
/// After every move, check `valid()`; when it turns false, call
/// [`status`](Self::status) to tell the end of the data from an error.
///
/// ```
/// # use strata::{Db, Options, ReadOptions};
/// # let dir = tempfile::tempdir()?;
/// let db = Db::open_default(dir.path())?;
/// for k in ["a", "b", "c"] {
///     db.put(k, k.to_uppercase())?;
/// }
/// let mut it = db.raw_iter(&ReadOptions::default())?;
/// assert_eq!(it.key(), None); // unpositioned
/// it.seek("b");
/// assert_eq!(it.key(), Some(&b"b"[..]));
/// it.prev();
/// assert_eq!(it.item(), Some((&b"a"[..], &b"A"[..])));
/// it.prev();
/// assert!(!it.valid());
/// it.status()?; // the start of the data, not an error
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RawIterator {
    pub(crate) cursor: DbCursor,
}

impl std::fmt::Debug for RawIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawIterator")
            .field("valid", &self.valid())
            .finish_non_exhaustive()
    }
}

impl RawIterator {
    /// Whether the cursor stands on an entry.
    pub fn valid(&self) -> bool {
        self.cursor.inner.valid()
    }

    /// Moves to the first key (within the lower bound, if any).
    pub fn seek_to_first(&mut self) {
        self.cursor.inner.seek_to_first()
    }

    /// Moves to the last key (below the upper bound, if any).
    ///
    /// ```
    /// # use strata::{Db, ReadOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// for k in ["a", "b", "c"] {
    ///     db.put(k, "")?;
    /// }
    /// let mut it = db.raw_iter(&ReadOptions::default())?;
    /// it.seek_to_last();
    /// let mut keys = Vec::new();
    /// while let Some(k) = it.key() {
    ///     keys.push(k.to_vec());
    ///     it.prev(); // backward, to the first key
    /// }
    /// it.status()?;
    /// assert_eq!(keys, [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seek_to_last(&mut self) {
        self.cursor.inner.seek_to_last()
    }

    /// Moves to the first key `>= key`.
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        self.cursor.inner.seek(key.as_ref())
    }

    /// Moves to the last key `<= key` (where [`seek`](Self::seek) finds
    /// the first key `>= key`).
    ///
    /// ```
    /// # use strata::{Db, ReadOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// for k in ["day:01", "day:05", "day:09"] {
    ///     db.put(k, "")?;
    /// }
    /// let mut it = db.raw_iter(&ReadOptions::default())?;
    /// it.seek_for_prev("day:07"); // the latest day up to the 7th
    /// assert_eq!(it.key(), Some(&b"day:05"[..]));
    /// it.seek("day:07"); // the first day from the 7th on
    /// assert_eq!(it.key(), Some(&b"day:09"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seek_for_prev(&mut self, key: impl AsRef<[u8]>) {
        self.cursor.inner.seek_for_prev(key.as_ref())
    }

    /// Moves to the next key; does nothing unless [`valid`](Self::valid).
    pub fn next(&mut self) {
        self.cursor.inner.next()
    }

    /// Moves to the previous key; does nothing unless
    /// [`valid`](Self::valid).
    pub fn prev(&mut self) {
        self.cursor.inner.prev()
    }

    /// The current key, or `None` when the cursor is not on an entry.
    pub fn key(&self) -> Option<&[u8]> {
        self.valid().then(|| self.cursor.inner.key())
    }

    /// The current value, or `None` when the cursor is not on an entry.
    pub fn value(&self) -> Option<&[u8]> {
        self.valid().then(|| self.cursor.inner.value())
    }

    /// The current key and value, or `None` when the cursor is not on an
    /// entry.
    pub fn item(&self) -> Option<(&[u8], &[u8])> {
        self.valid()
            .then(|| (self.cursor.inner.key(), self.cursor.inner.value()))
    }

    /// The error that stopped the cursor, if any. A cursor that is not
    /// [`valid`](Self::valid) with an `Ok` status has run off the data.
    pub fn status(&self) -> Result<()> {
        self.cursor.inner.status()
    }
}

/// Which end of a [`DbIterator`] the cursor last served.
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    Nowhere,
    Front,
    Back,
}

/// An iterator over the keys and values of a database in key order, from
/// [`Db::iter`](super::Db::iter), [`Db::range`](super::Db::range),
/// [`Db::prefix`](super::Db::prefix) or the same methods of a
/// [`Snapshot`](super::Snapshot).
///
/// It yields `Result<(key, value)>`: a read error (a corrupt file, say) is
/// yielded once, then the iterator ends. It is double-ended, so `.rev()`
/// walks backward; the view it reads is fixed when it is created.
///
/// ```
/// # use strata::Db;
/// # let dir = tempfile::tempdir()?;
/// let db = Db::open_default(dir.path())?;
/// for (k, v) in [("apple", "1"), ("banana", "2"), ("cherry", "3")] {
///     db.put(k, v)?;
/// }
/// let keys: Vec<Vec<u8>> = db
///     .iter()
///     .rev()
///     .map(|kv| kv.map(|(k, _)| k))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(keys, [b"cherry".to_vec(), b"banana".to_vec(), b"apple".to_vec()]);
///
/// for kv in db.range("b".."c") {
///     let (k, v) = kv?;
///     assert_eq!((k.as_slice(), v.as_slice()), (&b"banana"[..], &b"2"[..]));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DbIterator {
    raw: Result<RawIterator>,
    at: At,
    /// The last key yielded by `next` / by `next_back`.
    front: Option<Vec<u8>>,
    back: Option<Vec<u8>>,
    done: bool,
}

impl std::fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIterator")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl DbIterator {
    pub(crate) fn new(raw: Result<RawIterator>) -> DbIterator {
        DbIterator {
            raw,
            at: At::Nowhere,
            front: None,
            back: None,
            done: false,
        }
    }

    /// Reads the entry the cursor stands on (moved for `end`), checking it
    /// against the other end.
    fn take(&mut self, end: At) -> Option<Result<KvPair>> {
        let raw = match &mut self.raw {
            Ok(r) => r,
            Err(e) => {
                self.done = true;
                return Some(Err(e.clone()));
            }
        };
        let Some((k, v)) = raw.item() else {
            self.done = true;
            return raw.status().err().map(Err);
        };
        let crossed = match end {
            At::Front => self.back.as_deref().is_some_and(|b| k >= b),
            _ => self.front.as_deref().is_some_and(|f| k <= f),
        };
        if crossed {
            self.done = true;
            return None;
        }
        let (k, v) = (k.to_vec(), v.to_vec());
        let last = if end == At::Front {
            &mut self.front
        } else {
            &mut self.back
        };
        *last = Some(k.clone());
        Some(Ok((k, v)))
    }
}

impl Iterator for DbIterator {
    type Item = Result<KvPair>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Ok(raw) = &mut self.raw {
            if self.at == At::Front {
                raw.next();
            } else {
                match &self.front {
                    None => raw.seek_to_first(),
                    Some(k) => {
                        // Step past the key this end yielded last.
                        raw.seek(k);
                        if raw.key() == Some(k.as_slice()) {
                            raw.next();
                        }
                    }
                }
                self.at = At::Front;
            }
        }
        self.take(At::Front)
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Ok(raw) = &mut self.raw {
            if self.at == At::Back {
                raw.prev();
            } else {
                match &self.back {
                    None => raw.seek_to_last(),
                    Some(k) => {
                        raw.seek_for_prev(k);
                        if raw.key() == Some(k.as_slice()) {
                            raw.prev();
                        }
                    }
                }
                self.at = At::Back;
            }
        }
        self.take(At::Back)
    }
}

impl std::iter::FusedIterator for DbIterator {}

/// The `[lower, upper)` bounds of a key range: an excluded start becomes
/// its immediate successor (`key` + `0x00`), an included end likewise.
pub(crate) fn range_to_bounds<K: AsRef<[u8]>>(
    range: &impl RangeBounds<K>,
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let successor = |k: &K| {
        let mut v = k.as_ref().to_vec();
        v.push(0);
        v
    };
    let lower = match range.start_bound() {
        Bound::Included(k) => Some(k.as_ref().to_vec()),
        Bound::Excluded(k) => Some(successor(k)),
        Bound::Unbounded => None,
    };
    let upper = match range.end_bound() {
        Bound::Included(k) => Some(successor(k)),
        Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => None,
    };
    (lower, upper)
}

/// The bounds of every key starting with `prefix`: `[prefix, next)`, where
/// `next` is the prefix with its last non-`0xff` byte incremented and the
/// bytes after it dropped (no upper bound if there is none).
pub(crate) fn prefix_to_bounds(prefix: &[u8]) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    (Some(prefix.to_vec()), crate::sstable::prefix_end(prefix))
}

/// A snapshot handed to a database it does not belong to.
pub(crate) fn foreign_snapshot() -> Error {
    Error::invalid("the snapshot belongs to another database")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_bounds() {
        assert_eq!(
            prefix_to_bounds(b"ab"),
            (Some(b"ab".to_vec()), Some(b"ac".to_vec()))
        );
        assert_eq!(
            prefix_to_bounds(b"a\xff\xff"),
            (Some(b"a\xff\xff".to_vec()), Some(b"b".to_vec()))
        );
        assert_eq!(prefix_to_bounds(b"\xff"), (Some(b"\xff".to_vec()), None));
        assert_eq!(prefix_to_bounds(b""), (Some(Vec::new()), None));
    }

    #[test]
    fn range_bounds() {
        assert_eq!(
            range_to_bounds(&("a".."c")),
            (Some(b"a".to_vec()), Some(b"c".to_vec()))
        );
        assert_eq!(
            range_to_bounds(&("a"..="c")),
            (Some(b"a".to_vec()), Some(b"c\0".to_vec()))
        );
        assert_eq!(
            range_to_bounds::<&str>(&(Bound::Excluded("a"), Bound::Unbounded)),
            (Some(b"a\0".to_vec()), None)
        );
    }
}
