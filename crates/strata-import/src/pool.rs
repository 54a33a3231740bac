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
//! Invariants: the pool holds per index at most [`RECYCLED_BATCHES`]
//! batches (the budget's chunk share counts them, `budget`) or, beyond
//! that, batches holding at most its `room` bytes together (set by
//! [`BatchPool::with_room`]; the caller keeps that room out of the sort
//! share), each empty; a batch taken is empty and has at least the
//! capacity asked for.
//!
//! The room is for in-memory sorted runs (`sort`): making one gives back
//! a whole run's batches at once (W1's secondary index: about 15 of
//! them), and with only [`RECYCLED_BATCHES`] kept the workers made the
//! rest fresh again, a quarter of the import's page faults.

use crate::batch::EntryBatch;
use std::sync::Mutex;

/// Maps in the pages of `v`'s spare capacity (the whole pages between its
/// length and its capacity) in one system call, as writes to them would
/// (`MADV_POPULATE_WRITE`), before they are filled. For a buffer the
/// allocator has just mapped (the import sets glibc's mmap threshold at
/// 128 KiB, so every big buffer is a fresh mapping): the kernel still
/// zeroes each page, but the trap in and out of the kernel per 4 KiB page
/// goes (as the engine's memtable arena does, `strata::memtable`). W1 in
/// random order: the in-memory runs' copy took about 90k faults of the
/// import's 160k, with the kernel's fault path as much of the calling
/// thread's time as the copy itself. Pages already mapped (a reused
/// buffer) are left as they are; an older kernel or a range of less than
/// a page does nothing.
pub fn map_in<T>(v: &mut Vec<T>) {
    // Not under Miri, which cannot run the system call.
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        const PAGE: usize = 4096;
        let size = std::mem::size_of::<T>();
        let from = v.as_mut_ptr() as usize + v.len() * size;
        let to = v.as_mut_ptr() as usize + v.capacity() * size;
        let (start, end) = (from.next_multiple_of(PAGE), to & !(PAGE - 1));
        if end > start {
            // SAFETY: `[start, end)` lies inside `v`'s allocation, past its
            // initialised elements; MADV_POPULATE_WRITE only maps the pages
            // in (as a write of their present bytes would), changing no
            // byte and no mapping's protection.
            let _ = unsafe {
                rustix::mm::madvise(
                    start as *mut std::ffi::c_void,
                    end - start,
                    rustix::mm::Advice::LinuxPopulateWrite,
                )
            };
        }
    }
    #[cfg(any(not(target_os = "linux"), miri))]
    let _ = v;
}

/// Batches kept per index.
pub const RECYCLED_BATCHES: usize = 2;

/// Empty batches for reuse, per index (see the module documentation).
#[derive(Debug)]
pub struct BatchPool {
    /// Per index: the batches, and the bytes they hold.
    per_index: Vec<Mutex<(Vec<EntryBatch>, usize)>>,
    /// Bytes of batches an index may keep beyond [`RECYCLED_BATCHES`].
    room: usize,
}

impl BatchPool {
    /// An empty pool for `indexes` indexes.
    pub fn new(indexes: usize) -> BatchPool {
        BatchPool {
            per_index: (0..indexes).map(|_| Mutex::new((Vec::new(), 0))).collect(),
            room: 0,
        }
    }

    /// Lets each index keep more than [`RECYCLED_BATCHES`] batches, while
    /// they hold at most `bytes` together (see the module documentation).
    pub fn with_room(mut self, bytes: usize) -> BatchPool {
        self.room = bytes;
        self
    }

    /// An empty batch for index `index` with room for `bytes` of keys and
    /// values and `entries` entries: a reused one when there is one.
    pub fn take(&self, index: usize, bytes: usize, entries: usize) -> EntryBatch {
        let reused = self.per_index.get(index).and_then(|p| {
            let mut p = p.lock().ok()?;
            let b = p.0.pop()?;
            p.1 -= b.charge();
            Some(b)
        });
        match reused {
            Some(mut b) => {
                b.reserve(bytes, entries);
                b
            }
            None => {
                // A new batch: its pages mapped in at once (`map_in`).
                let mut b = EntryBatch::with_capacity(bytes, entries);
                b.map_in();
                b
            }
        }
    }

    /// Hands `batch` (of index `index`) back, emptied; dropped when the
    /// pool already holds enough.
    pub fn give(&self, index: usize, mut batch: EntryBatch) {
        let Some(Ok(mut p)) = self.per_index.get(index).map(Mutex::lock) else {
            return;
        };
        batch.clear();
        let bytes = batch.charge();
        if p.0.len() < RECYCLED_BATCHES || p.1 + bytes <= self.room {
            p.0.push(batch);
            p.1 += bytes;
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
        assert_eq!(pool.per_index[1].lock().unwrap().0.len(), RECYCLED_BATCHES);
    }

    /// Mapping in a buffer's spare pages changes none of its bytes, its
    /// length or its capacity, whatever its element size and fill.
    #[test]
    fn map_in_keeps_the_contents() {
        for (len, cap) in [
            (0, 0),
            (0, 1),
            (3, 5000),
            (10_000, 3 << 20),
            (1 << 20, 1 << 20),
        ] {
            let mut v: Vec<u64> = Vec::with_capacity(cap);
            v.extend((0..len as u64).map(|i| i * 0x9E37_79B9));
            let (ptr, cap) = (v.as_ptr(), v.capacity());
            map_in(&mut v);
            assert_eq!((v.as_ptr(), v.len(), v.capacity()), (ptr, len, cap));
            assert!(v
                .iter()
                .enumerate()
                .all(|(i, &x)| x == i as u64 * 0x9E37_79B9));
            v.resize(cap, 7);
            assert!(v[len..].iter().all(|&x| x == 7));
        }
    }

    /// With room, an index keeps batches past the count while their bytes
    /// fit, never more, and the bytes held follow takes and gives.
    #[test]
    fn room_keeps_batches_up_to_its_bytes() {
        let one = EntryBatch::with_capacity(1000, 10).charge();
        let pool = BatchPool::new(1).with_room(5 * one);
        for _ in 0..9 {
            pool.give(0, EntryBatch::with_capacity(1000, 10));
        }
        let held = |pool: &BatchPool| {
            let p = pool.per_index[0].lock().unwrap();
            (p.0.len(), p.1)
        };
        assert_eq!(held(&pool), (5, 5 * one));
        let b = pool.take(0, 10, 1);
        assert_eq!(held(&pool), (4, 4 * one));
        pool.give(0, b);
        pool.give(0, EntryBatch::with_capacity(1000, 10));
        assert_eq!(held(&pool), (5, 5 * one));
        // Without room, the count alone.
        let pool = BatchPool::new(1);
        for _ in 0..9 {
            pool.give(0, EntryBatch::with_capacity(1000, 10));
        }
        assert_eq!(held(&pool).0, RECYCLED_BATCHES);
    }
}
