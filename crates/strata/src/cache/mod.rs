//! Caches shared by every table reader.

mod lru;

pub use lru::{CacheKey, CacheStats, LruCache};

/// The block cache: uncompressed blocks keyed by (table reader id, offset).
pub type BlockCache = LruCache<std::sync::Arc<crate::sstable::block::Block>>;
