//! Caches shared by every table reader.

mod lru;

pub use lru::LruCache;
// Only tests name these (the engine reaches them through `LruCache`).
#[cfg(any(test, feature = "internals"))]
pub use lru::{CacheKey, CacheStats};

/// The block cache: uncompressed blocks keyed by (table reader id, offset).
pub type BlockCache = LruCache<std::sync::Arc<crate::sstable::block::Block>>;
