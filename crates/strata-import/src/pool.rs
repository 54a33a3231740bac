//! Entry batches handed back for reuse, so their pages stay mapped.
//!
//! Owns [`BatchPool`]: per index, a few [`EntryBatch`]es whose entries
//! are done with (streamed to an SST, turned into a sorted run, spilled),
//! kept for the parse workers to fill again. A big buffer is `mmap`ed by
//! the allocator and unmapped when freed, so every batch made fresh
//! faulted in every one of its pages (4 KiB each) and unmapped them
//! again: on W1 in key order about half of the import's page faults, and
//! its system time. A reused batch keeps its capacity, already faulted in.
//!
//! Invariants: the pool holds at most [`RECYCLED_BATCHES`] batches per
//! index, each empty (the budget counts them, `budget`); a batch taken
//! is empty and has at least the capacity asked for.

use crate::batch::EntryBatch;
use std::sync::Mutex;

/// Batches kept per index.
pub const RECYCLED_BATCHES: usize = 2;

/// Empty batches for reuse, per index (see the module documentation).
#[derive(Debug)]
pub struct BatchPool {
    per_index: Vec<Mutex<Vec<EntryBatch>>>,
}

impl BatchPool {
    /// An empty pool for `indexes` indexes.
    pub fn new(indexes: usize) -> BatchPool {
        BatchPool {
            per_index: (0..indexes).map(|_| Mutex::new(Vec::new())).collect(),
        }
    }

    /// An empty batch for index `index` with room for `bytes` of keys and
    /// values and `entries` entries: a reused one when there is one.
    pub fn take(&self, index: usize, bytes: usize, entries: usize) -> EntryBatch {
        let reused = self.per_index.get(index).and_then(|p| p.lock().ok()?.pop());
        match reused {
            Some(mut b) => {
                b.reserve(bytes, entries);
                b
            }
            None => EntryBatch::with_capacity(bytes, entries),
        }
    }

    /// Hands `batch` (of index `index`) back, emptied; dropped when the
    /// pool already holds enough.
    pub fn give(&self, index: usize, mut batch: EntryBatch) {
        let Some(Ok(mut p)) = self.per_index.get(index).map(Mutex::lock) else {
            return;
        };
        if p.len() < RECYCLED_BATCHES {
            batch.clear();
            p.push(batch);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use crate::parse::Src;

    /// A batch given back comes out empty, with its capacity, for its own
    /// index only; the pool keeps at most its limit.
    #[test]
    fn batches_come_back_empty_and_keep_their_pages() {
        let pool = BatchPool::new(2);
        let mut b = pool.take(0, 1000, 10);
        b.push(b"key", b"value", Src { file: 0, line: 1 }, false);
        let charge = b.charge();
        pool.give(0, b);
        // Index 1 has nothing to reuse.
        assert_eq!(
            pool.take(1, 10, 1).charge(),
            EntryBatch::with_capacity(10, 1).charge()
        );
        let again = pool.take(0, 10, 1);
        assert!(again.is_empty());
        assert_eq!(again.charge(), charge - crate::batch::SORT_PAIR);
        for _ in 0..RECYCLED_BATCHES + 3 {
            pool.give(1, EntryBatch::with_capacity(8, 1));
        }
        assert_eq!(pool.per_index[1].lock().unwrap().len(), RECYCLED_BATCHES);
    }
}
