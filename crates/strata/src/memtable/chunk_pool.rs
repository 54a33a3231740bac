//! `ChunkPool`: arena chunks kept after their memtable is gone, for the
//! next memtable's arena. A fresh chunk from the system is untouched
//! memory: its first write to each 4 KiB page takes a page fault and the
//! kernel zeroes the page, which cost about a tenth of a bulk load's time
//! (W2). A chunk that a flushed memtable used is already faulted in, so
//! the next memtable's writes go straight to memory. Pebble recycles a
//! flushed memtable's arena for the same reason (`DB.memTableRecycle`).
//!
//! Invariants: the pool holds only chunks of exactly its `chunk_size`
//! bytes (allocated with `Layout(chunk_size, arena::ALIGN)`), each owned
//! by the pool alone: an arena gives its chunks back only when it is
//! dropped, which happens only after the last reader of its memtable let
//! go (every reader holds an `Arc` of the memtable or of the arena), so no
//! one can still see a pooled chunk's old bytes. A chunk is in at most one
//! place at a time: the pool or one arena. The pool keeps at most
//! `max_bytes` (one memtable's worth; at least one chunk), so it adds at
//! most that to the process's memory (`Metrics::memtable_pool_bytes`);
//! what it holds is freed when the pool is dropped (with the database and
//! its last memtable).

use super::arena::ALIGN;
use parking_lot::Mutex;
use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub struct ChunkPool {
    chunk_size: usize,
    max_chunks: usize,
    free: Mutex<Vec<NonNull<u8>>>,
    /// Chunks handed out again, for tests and metrics.
    reused: AtomicU64,
}

// SAFETY: the pooled pointers address chunks owned by the pool alone (see
// the module invariants); the `Mutex` guards the list. Moving or sharing
// the pool moves or shares that ownership, never an alias.
unsafe impl Send for ChunkPool {}
// SAFETY: as for `Send`: every access to the list goes through the lock.
unsafe impl Sync for ChunkPool {}

impl ChunkPool {
    /// A pool for chunks of `chunk_size` bytes (the arena's rounding:
    /// a multiple of 8, at least 256) keeping at most `max_bytes` of them
    /// (but at least one chunk).
    pub fn new(chunk_size: usize, max_bytes: usize) -> ChunkPool {
        let chunk_size = super::arena::round_chunk_size(chunk_size);
        ChunkPool {
            chunk_size,
            // At least one: a database with memtables smaller than a chunk
            // still reuses the chunk each memtable takes.
            max_chunks: (max_bytes / chunk_size).max(1),
            free: Mutex::new(Vec::new()),
            reused: AtomicU64::new(0),
        }
    }

    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    fn layout(&self) -> Layout {
        Layout::from_size_align(self.chunk_size, ALIGN).expect("arena chunk too large")
    }

    /// A chunk of `chunk_size` bytes that some dropped arena used, if the
    /// pool has one. Its bytes are whatever that arena left: the caller
    /// treats it as uninitialised.
    pub(super) fn take(&self) -> Option<NonNull<u8>> {
        let p = self.free.lock().pop()?;
        self.reused.fetch_add(1, Relaxed);
        Some(p)
    }

    /// Takes ownership of `chunk` (of `chunk_size` bytes, allocated with
    /// this pool's layout, owned by the caller alone); frees it if the
    /// pool is full.
    ///
    /// # Safety
    /// `chunk` must satisfy the above, and the caller must not use it
    /// again.
    pub(super) unsafe fn put(&self, chunk: NonNull<u8>) {
        let mut free = self.free.lock();
        if free.len() < self.max_chunks {
            free.push(chunk);
            return;
        }
        drop(free);
        // SAFETY: the caller hands over a chunk allocated with this layout
        // and never uses it again.
        unsafe { alloc::dealloc(chunk.as_ptr(), self.layout()) };
    }

    /// Bytes held idle, waiting for an arena.
    pub fn idle_bytes(&self) -> usize {
        self.free.lock().len() * self.chunk_size
    }

    /// Chunks handed out again so far.
    pub fn reused_chunks(&self) -> u64 {
        self.reused.load(Relaxed)
    }
}

impl Drop for ChunkPool {
    fn drop(&mut self) {
        let layout = self.layout();
        for p in self.free.get_mut().drain(..) {
            // SAFETY: every pooled chunk was allocated with `layout` and is
            // owned by the pool alone; each is freed once, here.
            unsafe { alloc::dealloc(p.as_ptr(), layout) };
        }
    }
}
