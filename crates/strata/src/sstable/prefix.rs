//! Prefix extractors for prefix bloom filters.
//!
//! A table built with a prefix extractor adds each key's prefix to its filter
//! and records the extractor's name in its properties; a reader uses the
//! prefix part of the filter only when its own extractor has the same name,
//! since a different extractor would ask about prefixes that were never
//! added.

use std::fmt::Debug;

/// Maps a key to the prefix the bloom filter also records, so prefix
/// seeks can skip files (RocksDB's `SliceTransform`).
pub trait PrefixExtractor: Send + Sync + Debug {
    /// The name stored in `rocksdb.prefix.extractor.name`.
    fn name(&self) -> String;
    /// The prefix of `key`, or `None` if the key is outside the extractor's
    /// domain (such keys are not added to the filter as prefixes).
    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]>;
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
    }
}
