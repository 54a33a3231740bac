//! Caches shared by every table reader.

mod lru;

pub use lru::{CacheStats, LruCache};
// Only tests name this (the engine reaches it through `LruCache`).
#[cfg(any(test, feature = "internals"))]
pub use lru::CacheKey;

/// The block cache: uncompressed blocks keyed by (table reader id, offset).
pub type BlockCache = LruCache<std::sync::Arc<crate::sstable::block::Block>>;
