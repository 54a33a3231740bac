//! Prefix extractors for prefix bloom filters.
//!
//! A table built with a prefix extractor adds each point key's prefix to its
//! filter and records the extractor's name in its properties
//! (`rocksdb.prefix.extractor.name`); a reader uses the prefix part of the
//! filter only when its own extractor has the same name, since a different
//! extractor would ask about prefixes that were never added. Two extractors
//! with one name must therefore be the same function.
//!
//! A database (`Options::sst.prefix_extractor`) uses the filter two ways:
//!
//! - A point lookup in a table written without whole keys in its filter
//!   (`SstOptions::whole_key_filtering` off) asks for the key's prefix.
//! - An iterator whose bounds keep it inside one prefix skips the point
//!   entries of every table file whose filter says that prefix is absent
//!   (RocksDB's `auto_prefix_mode`: the answer is always the one a scan
//!   without the filter gives). The bounds keep it inside one prefix when
//!   some byte string `p` that
//!   [`same_result_when_appended`](PrefixExtractor::same_result_when_appended)
//!   accepts starts the lower bound and the upper bound is at most the
//!   first byte string after every one starting with `p`
//!   (`bounds_prefix`): `Db::prefix(p)`, and `Db::range(lo..hi)` with
//!   `lo` and `hi` inside `p`'s keys. An extractor that keeps the default
//!   `false` is never used for iterators.
//!
//! Only point entries are in the filter: a table's range tombstones are
//! not, and its filter says nothing about them. A skipped table's
//! tombstones still apply (the iterator gathers every overlapping table's
//! tombstones before it reads a point entry; see `db::read::iter`).

use std::fmt::Debug;

/// Maps a key to the prefix the bloom filter also records, so prefix
/// scans can skip files (RocksDB's `SliceTransform`).
///
/// ```
/// use std::sync::Arc;
/// use strata::sstable::FixedPrefix;
/// use strata::{Db, Options, SstOptions};
/// # let dir = tempfile::tempdir()?;
/// let opts = Options {
///     sst: SstOptions {
///         prefix_extractor: Some(Arc::new(FixedPrefix(5))),
///         ..SstOptions::default()
///     },
///     ..Options::default()
/// };
/// let db = Db::open(dir.path(), opts)?;
/// db.put("user:1", "ada")?;
/// db.flush()?;
/// // Table files whose filter has no key starting "vid:0" are not read.
/// assert_eq!(db.prefix("vid:0").count(), 0);
/// assert_eq!(db.prefix("user:").count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait PrefixExtractor: Send + Sync + Debug {
    /// The name stored in `rocksdb.prefix.extractor.name`. Tables are read
    /// with an extractor only if they were written with one of this name.
    fn name(&self) -> String;
    /// The prefix of `key`, or `None` if the key is outside the extractor's
    /// domain (such keys are not added to the filter as prefixes).
    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]>;
    /// Whether every key that starts with the byte string `prefix` has the
    /// same prefix as `prefix` itself: `self.prefix(k) == self.prefix(prefix)`,
    /// and that is `Some`, for every `k` starting with `prefix` (RocksDB's
    /// `SameResultWhenAppended`). Then a scan of the keys starting with
    /// `prefix` may skip a table whose filter lacks `self.prefix(prefix)`.
    ///
    /// The default, `false`, is always safe: iterators then never skip a
    /// table. A `true` that is wrong makes scans miss keys.
    fn same_result_when_appended(&self, prefix: &[u8]) -> bool {
        let _ = prefix;
        false
    }
}

/// The first `n` bytes; shorter keys are out of domain (RocksDB's
/// `NewFixedPrefixTransform`).
#[derive(Clone, Debug)]
pub struct FixedPrefix(pub usize);

impl PrefixExtractor for FixedPrefix {
    fn name(&self) -> String {
        format!("rocksdb.FixedPrefix.{}", self.0)
    }
    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        (key.len() >= self.0).then(|| &key[..self.0])
    }
    /// Keys starting with `n` or more given bytes share their first `n`.
    fn same_result_when_appended(&self, prefix: &[u8]) -> bool {
        prefix.len() >= self.0
    }
}

/// At most the first `n` bytes; every key is in domain (RocksDB's
/// `NewCappedPrefixTransform`).
#[derive(Clone, Debug)]
pub struct CappedPrefix(pub usize);

impl PrefixExtractor for CappedPrefix {
    fn name(&self) -> String {
        format!("rocksdb.CappedPrefix.{}", self.0)
    }
    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        Some(&key[..self.0.min(key.len())])
    }
    /// Below `n` bytes, a longer key has a longer prefix.
    fn same_result_when_appended(&self, prefix: &[u8]) -> bool {
        prefix.len() >= self.0
    }
}

/// The prefix every key in `[lower, upper)` has under `px`, if `px`
/// promises one (see the module comment): found from the shortest start
/// `p` of `lower` that `px.same_result_when_appended` accepts, provided
/// `upper` does not reach past the keys starting with `p`. `None` when the
/// bounds may hold keys of several prefixes, or keys outside `px`'s
/// domain: then no table may be skipped by its prefix filter.
///
/// Why it holds: every key `k` with `p <= lower <= k < upper <= end(p)`,
/// where `end(p)` is the first byte string after all those starting with
/// `p`, starts with `p`, so its prefix is `px.prefix(p)`.
pub(crate) fn bounds_prefix<'a>(
    px: &dyn PrefixExtractor,
    lower: Option<&'a [u8]>,
    upper: Option<&[u8]>,
) -> Option<&'a [u8]> {
    let lower = lower?;
    // The shortest accepted start is the weakest demand on `upper`: a
    // longer start ends sooner.
    let p = (0..=lower.len())
        .map(|n| &lower[..n])
        .find(|p| px.same_result_when_appended(p))?;
    let prefix = px.prefix(p)?;
    match (prefix_end(p), upper) {
        // Every key at or past `p` starts with it (`p` is empty or all 0xff).
        (None, _) => Some(prefix),
        (Some(end), Some(u)) if u <= end.as_slice() => Some(prefix),
        _ => None,
    }
}

/// The first byte string after every one starting with `p`: `p` with its
/// last non-`0xff` byte incremented and the bytes after it dropped; `None`
/// if there is none (`p` empty or all `0xff`).
pub(crate) fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut end = p.to_vec();
    while let Some(last) = end.pop() {
        if last != 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_capped() {
        assert_eq!(FixedPrefix(3).prefix(b"abcd"), Some(&b"abc"[..]));
        assert_eq!(FixedPrefix(3).prefix(b"ab"), None);
        assert_eq!(CappedPrefix(3).prefix(b"ab"), Some(&b"ab"[..]));
        assert_eq!(FixedPrefix(4).name(), "rocksdb.FixedPrefix.4");
        assert!(FixedPrefix(3).same_result_when_appended(b"abc"));
        assert!(!FixedPrefix(3).same_result_when_appended(b"ab"));
        assert!(!CappedPrefix(3).same_result_when_appended(b"ab"));
    }

    /// An extractor that never promises anything (the trait's default).
    #[derive(Debug)]
    struct Opaque;
    impl PrefixExtractor for Opaque {
        fn name(&self) -> String {
            "opaque".into()
        }
        fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
            key.get(..2)
        }
    }

    #[test]
    fn bounds_inside_one_prefix() {
        let f = FixedPrefix(3);
        let b = |lo: &'static [u8], hi: Option<&'static [u8]>| bounds_prefix(&f, Some(lo), hi);
        // `Db::prefix` bounds.
        assert_eq!(b(b"abc", Some(b"abd")), Some(&b"abc"[..]));
        assert_eq!(b(b"abcx", Some(b"abcy")), Some(&b"abc"[..]));
        // A range inside one prefix.
        assert_eq!(b(b"abc1", Some(b"abc9")), Some(&b"abc"[..]));
        assert_eq!(b(b"ab\xff", Some(b"ac")), Some(&b"ab\xff"[..]));
        // Reaching into the next prefix, or unbounded above.
        assert_eq!(b(b"abc", Some(b"abd\0")), None);
        assert_eq!(b(b"abc", None), None);
        // A lower bound shorter than the prefix: keys of many prefixes,
        // and keys outside the domain.
        assert_eq!(b(b"ab", Some(b"ac")), None);
        assert_eq!(bounds_prefix(&f, None, Some(b"abd")), None);
        // All-0xff starts have no end: any upper bound is inside.
        assert_eq!(b(b"\xff\xff\xff", None), Some(&b"\xff\xff\xff"[..]));
        assert_eq!(b(b"\xff\xff\xffz", None), Some(&b"\xff\xff\xff"[..]));
        // Capped: a short lower bound is its own prefix only if nothing
        // longer can follow, which it can.
        let c = CappedPrefix(2);
        assert_eq!(bounds_prefix(&c, Some(b"a"), Some(b"b")), None);
        assert_eq!(
            bounds_prefix(&c, Some(b"ab"), Some(b"ac")),
            Some(&b"ab"[..])
        );
        assert_eq!(bounds_prefix(&Opaque, Some(b"abc"), Some(b"abd")), None);
        // Zero-length prefixes: every key has the empty prefix.
        assert_eq!(
            bounds_prefix(&FixedPrefix(0), Some(b""), None),
            Some(&b""[..])
        );
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
