//! `Arena`: the memtable's allocator. Memory is taken from the system in
//! large chunks and handed out by bumping a pointer; nothing is freed until
//! the arena is dropped, which frees every chunk at once.
//!
//! Invariants: every allocation is 8-byte aligned and lies wholly inside one
//! chunk; chunks never move or shrink while the arena lives, so a pointer it
//! hands out stays valid until the arena is dropped. The figures it reports
//! are exact: `allocated_bytes` is the sum of the chunk sizes (what the
//! process really holds) and `memory_usage` is that minus the unused tail of
//! the current chunk (RocksDB's `Arena::ApproximateMemoryUsage`), so it grows
//! with every allocation, including the tails wasted when a chunk fills.
//!
//! The next chunk is prepared off the foreground path: when the arena
//! takes a chunk, it asks a process-wide thread (`prefault_thread`) to
//! allocate the following one and map its pages in with one system call
//! (`prefault`), so a memtable does not take a page fault per 4 KiB as it
//! fills. The writer never waits for that thread: if the spare is not
//! ready (or is being stored), the chunk is allocated inline and its pages
//! fault in one by one as before. Mapping a 1 MiB chunk in at once costs
//! 100-400 µs; done inline by the Put that needs the chunk, it made one
//! Put in ten thousand that slow (W4 `none`, p99.99 0.42 ms against
//! 0.06 ms), which is why it lives on its own thread. The spare is not
//! counted in `allocated_bytes` until it is taken (at most one chunk per
//! arena, 1 MiB by default, resident ahead of use).
//!
//! The writer keeps the thread it wakes off its own CPU
//! (`keep_off_this_cpu`): it sets the thread's CPU affinity to every CPU
//! the thread may use but the writer's, then wakes it. Woken on the
//! writer's CPU, the thread preempted the writer and ran its whole
//! populate first (0.4-1.9 ms in W4, 4-26 times in 15 seconds) while the
//! other CPU sat idle; docs/bench-history/w4-foreground-latency.md, session 32. A yield
//! between smaller populates gave the writer its CPU back too, but then
//! the thread fell behind a bulk writer (W2 0.93x); kept off the
//! writer's CPU it does not (W2 unchanged).

use parking_lot::Mutex;
use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, OnceLock};

/// Alignment of every allocation: enough for the `u32` lengths and the
/// pointer-sized atomic links a skiplist node holds.
pub const ALIGN: usize = 8;

/// Default chunk size. RocksDB uses a tenth to an eighth of the write buffer
/// size; 1 MiB keeps the tail waste of a 64 MiB memtable under 0.1%.
pub const DEFAULT_CHUNK_SIZE: usize = 1 << 20;

/// Requests larger than a quarter of a chunk get a chunk of their own (as in
/// LevelDB), so a large value never throws away most of the current chunk.
const OWN_CHUNK_FRACTION: usize = 4;

/// The smallest chunk size accepted; smaller requests are rounded up.
const MIN_CHUNK_SIZE: usize = 256;

pub struct Arena {
    state: Mutex<State>,
    chunk_size: usize,
    /// The next standard-size chunk, prepared by the prefault thread.
    spare: Arc<Spare>,
    /// Copies of the figures in `state`, readable without the lock.
    allocated: AtomicUsize,
    usage: AtomicUsize,
}

struct State {
    /// Every chunk, freed on drop.
    chunks: Vec<(NonNull<u8>, Layout)>,
    /// The next free byte of the current chunk, `None` before the first.
    cur: Option<NonNull<u8>>,
    /// Bytes left after `cur` in the current chunk.
    remaining: usize,
    allocated: usize,
}

// SAFETY: `State` owns its chunks exclusively (the raw pointers are not
// aliased by any other owner); moving it to another thread moves that
// ownership. The memory handed out is shared, but its users synchronise
// their own accesses; the arena only ever touches the bookkeeping here,
// which the `Mutex` guards.
unsafe impl Send for State {}

/// A chunk allocated (and its pages mapped in) ahead of use.
struct Chunk {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: a `Chunk` owns its allocation exclusively until an arena takes
// it; nothing else points into it, so it may move between threads.
unsafe impl Send for Chunk {}

impl Chunk {
    fn alloc(size: usize) -> Chunk {
        let layout = Layout::from_size_align(size, ALIGN).expect("arena chunk too large");
        // SAFETY: `layout` has a non-zero size (chunks are at least
        // `MIN_CHUNK_SIZE`, allocations at least 8 bytes).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        Chunk { ptr, layout }
    }

    fn free(self) {
        // SAFETY: allocated by `alloc::alloc` with this layout, never
        // handed to an arena (which would own it), freed once.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// An arena's next chunk, filled by the prefault thread.
struct Spare {
    slot: Mutex<Option<Chunk>>,
    /// A request is queued or being served: at most one at a time.
    requested: AtomicBool,
}

impl Drop for Spare {
    fn drop(&mut self) {
        if let Some(c) = self.slot.get_mut().take() {
            c.free();
        }
    }
}

/// Asks the prefault thread for a spare chunk of `size` bytes, unless one
/// is already asked for. Never blocks.
fn request_spare(spare: &Arc<Spare>, size: usize) {
    // Under Miri there is no system call to save and no thread wanted.
    if cfg!(miri) || spare.requested.swap(true, Ordering::AcqRel) {
        return;
    }
    if let Some(tx) = prefault_thread() {
        keep_off_this_cpu();
        if tx.send((Arc::clone(spare), size)).is_ok() {
            return;
        }
    }
    spare.requested.store(false, Ordering::Release);
}

type SpareRequest = (Arc<Spare>, usize);

/// The prefault thread's id and the CPUs it was started with (its
/// affinity then), set by the thread as it starts.
#[cfg(all(target_os = "linux", not(miri)))]
static PREFAULT_HOME: OnceLock<(rustix::process::Pid, rustix::thread::CpuSet)> = OnceLock::new();

/// Before the prefault thread is woken: limits it to the CPUs it started
/// with except the caller's, so the scheduler places it elsewhere rather
/// than have it preempt the caller (module doc). A hint: does nothing
/// before the thread has started, on a single CPU, or where the kernel
/// refuses; the thread then runs wherever the scheduler puts it.
fn keep_off_this_cpu() {
    #[cfg(all(target_os = "linux", not(miri)))]
    if let Some((tid, home)) = PREFAULT_HOME.get() {
        if let Some(mask) = without_cpu(home, rustix::thread::sched_getcpu()) {
            let _ = rustix::thread::sched_setaffinity(Some(*tid), &mask);
        }
    }
}

/// `home` without `cpu`, if that leaves a CPU and `cpu` was in it.
#[cfg(all(target_os = "linux", not(miri)))]
fn without_cpu(home: &rustix::thread::CpuSet, cpu: usize) -> Option<rustix::thread::CpuSet> {
    if cpu >= rustix::thread::CpuSet::MAX_CPU || !home.is_set(cpu) || home.count() < 2 {
        return None;
    }
    let mut mask = *home;
    mask.unset(cpu);
    Some(mask)
}

/// The process-wide thread that prepares spare chunks, started on first
/// use; `None` if it could not be started (chunks are then allocated
/// inline, as without it).
fn prefault_thread() -> Option<&'static mpsc::Sender<SpareRequest>> {
    static TX: OnceLock<Option<mpsc::Sender<SpareRequest>>> = OnceLock::new();
    TX.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpareRequest>();
        std::thread::Builder::new()
            .name("strata-prefault".into())
            .spawn(move || {
                #[cfg(all(target_os = "linux", not(miri)))]
                if let Ok(home) = rustix::thread::sched_getaffinity(None) {
                    let _ = PREFAULT_HOME.set((rustix::thread::gettid(), home));
                }
                for (spare, size) in rx {
                    // The arena still lives (it holds the other reference)
                    // and has no spare yet.
                    if Arc::strong_count(&spare) > 1 && spare.slot.lock().is_none() {
                        let c = Chunk::alloc(size);
                        prefault(c.ptr, size);
                        let mut slot = spare.slot.lock();
                        match slot.as_ref() {
                            None => *slot = Some(c),
                            Some(_) => c.free(),
                        }
                    }
                    spare.requested.store(false, Ordering::Release);
                }
            })
            .ok()
            .map(|_| tx)
    })
    .as_ref()
}

impl Arena {
    pub fn new() -> Arena {
        Arena::with_chunk_size(DEFAULT_CHUNK_SIZE)
    }

    /// An arena taking memory `chunk_size` bytes at a time (rounded up to a
    /// multiple of 8, at least 256). No memory is taken until the first
    /// allocation.
    pub fn with_chunk_size(chunk_size: usize) -> Arena {
        let chunk_size = chunk_size.max(MIN_CHUNK_SIZE).next_multiple_of(ALIGN);
        Arena {
            state: Mutex::new(State {
                chunks: Vec::new(),
                cur: None,
                remaining: 0,
                allocated: 0,
            }),
            chunk_size,
            spare: Arc::new(Spare {
                slot: Mutex::new(None),
                requested: AtomicBool::new(false),
            }),
            allocated: AtomicUsize::new(0),
            usage: AtomicUsize::new(0),
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// `size` bytes (rounded up to a multiple of 8), 8-byte aligned and
    /// uninitialised, valid until the arena is dropped. Never returns the
    /// same bytes twice. Panics if `size` is 0 or absurdly large.
    pub fn allocate(&self, size: usize) -> NonNull<u8> {
        assert!(size > 0, "zero-sized arena allocation");
        let size = size
            .checked_next_multiple_of(ALIGN)
            .expect("arena allocation size overflows");
        let mut s = self.state.lock();
        let mut ask_spare = false;
        let p = if size <= s.remaining {
            let p = s.cur.expect("remaining > 0 implies a current chunk");
            s.remaining -= size;
            // SAFETY: `size <= remaining`, so `p + size` is at most one past
            // the end of the current chunk, within the same allocation.
            s.cur = Some(unsafe { p.add(size) });
            p
        } else if size > self.chunk_size / OWN_CHUNK_FRACTION {
            // Leaves the current chunk (and its tail) in use.
            s.add_chunk(Chunk::alloc(size))
        } else {
            // The tail of the current chunk is abandoned: it stays counted
            // in `memory_usage`, since the process still holds it.
            // The spare if it is ready (`try_lock`: never wait for the
            // prefault thread storing it), else a fresh chunk; either way
            // the next one is asked for (below, once the lock is let go:
            // the request may wake a thread and set its CPU affinity, two
            // system calls no other inserting writer need wait behind).
            let spare = self.spare.slot.try_lock().and_then(|mut g| g.take());
            let p = s.add_chunk(spare.unwrap_or_else(|| Chunk::alloc(self.chunk_size)));
            ask_spare = true;
            // SAFETY: `size <= chunk_size`, so `p + size` is at most one past
            // the end of the new chunk.
            s.cur = Some(unsafe { p.add(size) });
            s.remaining = self.chunk_size - size;
            p
        };
        self.allocated.store(s.allocated, Ordering::Relaxed);
        self.usage
            .store(s.allocated - s.remaining, Ordering::Relaxed);
        drop(s);
        if ask_spare {
            request_spare(&self.spare, self.chunk_size);
        }
        p
    }

    /// Bytes taken from the system: the sum of all chunk sizes.
    #[cfg(any(test, feature = "internals"))]
    pub fn allocated_bytes(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Bytes in use: `allocated_bytes` minus the unused tail of the current
    /// chunk. Every allocation raises it by at least its rounded size.
    pub fn memory_usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn num_chunks(&self) -> usize {
        self.state.lock().chunks.len()
    }
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

impl State {
    /// Takes ownership of `c` (freed with the arena); its start.
    fn add_chunk(&mut self, c: Chunk) -> NonNull<u8> {
        self.chunks.push((c.ptr, c.layout));
        self.allocated += c.layout.size();
        c.ptr
    }
}

/// Faults a fresh chunk's pages in with one system call
/// (`MADV_POPULATE_WRITE`, Linux 5.14+) instead of one page fault per
/// 4 KiB page as the skiplist first writes to each: the kernel still
/// zeroes new pages, but the trap in and out of the kernel per page,
/// which cost about as much again in a bulk load (W2), is gone. Pages
/// already present (memory the allocator reused) are left as they are.
/// Best effort: an older kernel, or a range not aligned to the system's
/// page size, just leaves the pages to fault in one by one.
fn prefault(p: NonNull<u8>, size: usize) {
    // Not under Miri, which cannot run the system call (and needs no
    // speed).
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        const PAGE: usize = 4096;
        let start = (p.as_ptr() as usize).next_multiple_of(PAGE);
        let end = (p.as_ptr() as usize + size) & !(PAGE - 1);
        if end > start {
            // SAFETY: `[start, end)` lies inside the chunk just allocated,
            // which this arena owns and no one else uses yet;
            // MADV_POPULATE_WRITE only maps the pages in (as a write to
            // each would), changing no byte and no mapping's protection.
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
    let _ = (p, size);
}

impl Drop for Arena {
    fn drop(&mut self) {
        for &(p, layout) in &self.state.get_mut().chunks {
            // SAFETY: each chunk was allocated by `alloc::alloc` with exactly
            // this layout and is freed once, here; `&mut self` proves no one
            // can still use memory handed out (its users borrow the arena or
            // hold an `Arc` to it).
            unsafe { alloc::dealloc(p.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn the_prefault_thread_is_kept_off_only_the_callers_cpu() {
        use rustix::thread::CpuSet;
        let set = |cpus: &[usize]| {
            let mut s = CpuSet::new();
            for &c in cpus {
                s.set(c);
            }
            s
        };
        let m = without_cpu(&set(&[0, 1, 3]), 1).unwrap();
        assert!(m.is_set(0) && !m.is_set(1) && m.is_set(3) && !m.is_set(2));
        assert_eq!(m.count(), 2);
        // Not in the set, the only CPU, or out of range: left alone.
        assert!(without_cpu(&set(&[0, 3]), 1).is_none());
        assert!(without_cpu(&set(&[2]), 2).is_none());
        assert!(without_cpu(&set(&[0, 1]), CpuSet::MAX_CPU).is_none());
        // And end to end: once the thread has started, a request from a
        // thread on one CPU leaves the prefault thread allowed elsewhere
        // only (other tests may ask from other CPUs meanwhile, so this
        // checks what holds for any caller: never all of its home CPUs
        // while there are two or more).
        // The first arena starts the thread; the second's request comes
        // once it has said where it may run. Allocations of at most a
        // quarter chunk: larger ones get a chunk of their own and ask for
        // no spare (with 4000-byte ones the test passed only when another
        // test happened to ask for a spare at the right moment, and failed
        // 3 times in 40 runs of `strata arena`).
        let first = Arena::with_chunk_size(4096);
        first.allocate(1000);
        first.allocate(1000);
        let t0 = std::time::Instant::now();
        while PREFAULT_HOME.get().is_none() && t0.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let arena = Arena::with_chunk_size(4096);
        for _ in 0..8 {
            arena.allocate(1000);
        }
        if let Some((tid, home)) = PREFAULT_HOME.get() {
            if home.count() >= 2 {
                let now = rustix::thread::sched_getaffinity(Some(*tid)).unwrap();
                assert!(
                    now.count() < home.count(),
                    "the prefault thread may still run on every CPU"
                );
            }
        }
    }

    #[test]
    fn allocations_are_aligned_disjoint_and_counted() {
        let a = Arena::with_chunk_size(1024);
        assert_eq!(a.memory_usage(), 0);
        assert_eq!(a.allocated_bytes(), 0);
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut requested = 0;
        for size in [1usize, 7, 8, 9, 100, 255, 256, 16, 3] {
            let p = a.allocate(size);
            assert_eq!(p.as_ptr() as usize % ALIGN, 0);
            // SAFETY: the allocation holds at least `size` writable bytes.
            unsafe { std::ptr::write_bytes(p.as_ptr(), 0xAB, size) };
            spans.push((p.as_ptr() as usize, size));
            requested += size.next_multiple_of(ALIGN);
        }
        // Rounded up these come to 680 bytes, all from the first chunk.
        assert_eq!(a.num_chunks(), 1);
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlapping allocations");
        }
        assert_eq!(a.memory_usage(), requested);
        assert!(a.allocated_bytes() >= requested);
    }

    /// Prefaulting maps pages in and changes nothing: bytes already
    /// written stay (the advice must not be one that drops pages), and an
    /// arena's chunks read back what was written to them.
    /// The spare chunk the prefault thread prepares is taken once, counted
    /// only when taken, and never overlaps another chunk; an arena whose
    /// spare is not ready yet allocates inline. Every byte written reads
    /// back (no chunk is handed out twice).
    #[test]
    fn spare_chunks_are_taken_once_and_counted_when_taken() {
        const CHUNK: usize = 64 << 10;
        let a = Arena::with_chunk_size(CHUNK);
        let mut spans: Vec<(usize, usize, u8)> = Vec::new();
        let mut from_spare = 0;
        for i in 0..40u8 {
            // Every other chunk, wait for the spare (synchronisation, not
            // a timing assertion), so both paths are taken.
            // Up to 2 s: the prefault thread is shared by every test of
            // this binary and may have others' chunks queued first. (The
            // first chunk has asked for no spare yet.)
            if i % 2 == 0 && i > 0 {
                let t0 = std::time::Instant::now();
                while a.spare.slot.lock().is_none() && t0.elapsed().as_secs() < 2 {
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
            }
            let spare = a
                .spare
                .slot
                .lock()
                .as_ref()
                .map(|c| c.ptr.as_ptr() as usize);
            // Two allocations fill a chunk; the third starts a new one.
            let size = CHUNK / 4;
            for k in 0..4 {
                let p = a.allocate(size);
                if k == 0 && spare == Some(p.as_ptr() as usize) {
                    from_spare += 1;
                }
                // SAFETY: the allocation holds `size` writable bytes.
                unsafe { std::ptr::write_bytes(p.as_ptr(), i, size) };
                spans.push((p.as_ptr() as usize, size, i));
            }
            assert_eq!(a.allocated_bytes(), (i as usize + 1) * CHUNK, "chunk {i}");
        }
        assert!(from_spare > 0, "no chunk came from the spare");
        for &(p, size, b) in &spans {
            // SAFETY: allocations stay valid while the arena lives.
            let got = unsafe { std::slice::from_raw_parts(p as *const u8, size) };
            assert!(got.iter().all(|&x| x == b), "a chunk was handed out twice");
        }
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlapping allocations");
        }
    }

    #[test]
    fn prefault_keeps_every_byte() {
        let mut v: Vec<u8> = (0..3 * 4096 + 123).map(|i| (i % 251) as u8).collect();
        let want = v.clone();
        let p = NonNull::new(v.as_mut_ptr()).unwrap();
        prefault(p, v.len());
        assert_eq!(v, want);
        let a = Arena::with_chunk_size(64 << 10);
        let q = a.allocate(40_000);
        // SAFETY: the allocation holds 40,000 writable bytes.
        let got = unsafe {
            std::ptr::write_bytes(q.as_ptr(), 0x5A, 40_000);
            std::slice::from_raw_parts(q.as_ptr(), 40_000)
        };
        assert!(got.iter().all(|&b| b == 0x5A));
    }

    #[test]
    fn large_requests_get_their_own_chunk() {
        let a = Arena::with_chunk_size(1024);
        a.allocate(16);
        assert_eq!(a.allocated_bytes(), 1024);
        // Larger than a quarter chunk, but it fits: served from the chunk.
        a.allocate(800);
        assert_eq!(a.num_chunks(), 1);
        // 208 bytes left. Larger than a quarter chunk and does not fit: a
        // chunk of exactly its size, leaving the current chunk serving
        // small requests.
        a.allocate(300);
        assert_eq!(a.num_chunks(), 2);
        assert_eq!(a.allocated_bytes(), 1024 + 304);
        assert_eq!(a.memory_usage(), 16 + 800 + 304);
        a.allocate(200);
        assert_eq!(a.num_chunks(), 2);
        assert_eq!(a.memory_usage(), 16 + 800 + 304 + 200);
    }

    #[test]
    fn a_full_chunk_wastes_its_tail_and_counts_it() {
        let a = Arena::with_chunk_size(1024);
        for _ in 0..5 {
            a.allocate(200);
        }
        // 5 * 200 = 1000 in the first chunk, 24 bytes left: the next 200
        // opens a new chunk, and the 24-byte tail stays counted.
        a.allocate(200);
        assert_eq!(a.num_chunks(), 2);
        assert_eq!(a.allocated_bytes(), 2048);
        assert_eq!(a.memory_usage(), 1024 + 200);
    }
}
