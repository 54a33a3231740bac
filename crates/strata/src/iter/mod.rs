//! Iterators over internal keys, and the read path built from them.
//!
//! Every source of sorted data (a block, a table, later a memtable or a whole
//! level) exposes the same positional interface so that merging and
//! user-facing iterators can combine them. An iterator that hits an error
//! becomes invalid and reports the error through `status`.
//!
//! The read path stacks them: sources are merged by [`MergingIterator`], and
//! [`DbIter`] turns the merged stream of versions into the user keys visible
//! at a snapshot, hiding deleted keys, including those covered by range
//! tombstones (flattened by [`RangeDelAggregator`]). [`VecIter`] is an
//! in-memory source; [`BoundedIter`] clamps a source to a user-key range
//! (how virtual files are read).

use crate::error::Result;

pub mod bounded;
pub mod db_iter;
pub mod merging;
pub mod range_del;
#[cfg(any(test, feature = "internals"))]
pub mod vec_iter;

pub use bounded::{BoundedIter, KeyBounds};
// Short paths for tests and benchmarks (the engine names the submodules).
#[cfg(any(test, feature = "internals"))]
pub use db_iter::DbIter;
#[cfg(any(test, feature = "internals"))]
pub use merging::MergingIterator;
#[cfg(any(test, feature = "internals"))]
pub use range_del::RangeDelAggregator;
#[cfg(any(test, feature = "internals"))]
pub use vec_iter::VecIter;

pub trait InternalIterator {
    fn valid(&self) -> bool;
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    /// First entry whose internal key is >= `target`.
    fn seek(&mut self, target: &[u8]);
    /// Last entry whose internal key is <= `target`.
    fn seek_for_prev(&mut self, target: &[u8]);
    fn next(&mut self);
    fn prev(&mut self);
    /// The current internal key; only while `valid()`.
    fn key(&self) -> &[u8];
    fn value(&self) -> &[u8];
    /// The first error this iterator met, if any.
    fn status(&self) -> Result<()>;
}

/// Every (internal key, value) of `it` from the first on, for tests that
/// compare an iterator's contents; panics on the iterator's error.
#[cfg(test)]
pub(crate) fn collect_all(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    #[allow(clippy::unwrap_used)] // tests may unwrap
    it.status().unwrap();
    out
}
