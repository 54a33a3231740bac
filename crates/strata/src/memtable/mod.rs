//! `MemTable`: the in-memory write buffer. Point entries live in an arena
//! skiplist keyed by internal key; range tombstones live in a second
//! skiplist (start key + seq as the internal key, end key as the value, as
//! in an SST's range-deletion block) drawing on the same arena. All of a
//! memtable's memory is therefore the arena's: known exactly
//! (`approximate_memory_usage`) and freed at once when the last
//! `Arc<MemTable>` goes.
//!
//! Concurrency: readers (`get`, iterators, the accessors) take no locks and
//! may run at any time. `add` expects one writer at a time (a commit group
//! inserted by its leader alone), and so does `add_hinted`, which starts
//! from a position `insert_hint` found earlier (a writer's search done
//! before it queued, beside other writers); `add_concurrent` may be called
//! from many threads at once (the members of a parallel commit group). The arena
//! serialises allocations under its own lock and its figures are atomics,
//! so `approximate_memory_usage` and the entry counts stay exact under
//! concurrent adds (`add_concurrent` counts with atomic adds; `add`, alone
//! by contract, with a plain load and store); the sequence bounds move
//! with `fetch_min`/`fetch_max`. Calling `add` from two threads at once is
//! memory-safe but may lose or misplace entries and miscount them (debug
//! builds assert against it).
//!
//! Internal keys are unique: adding an entry whose (user key, seq, kind)
//! is already present keeps the first and returns false.

pub mod arena;
pub mod skiplist;

use self::arena::Arena;
use self::skiplist::{InsertHint, SkipList};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{self, pack_trailer, ParsedKey, ValueKind, KIND_FOR_SEEK, MAX_SEQUENCE};
use crate::sstable::{Found, RangeTombstone};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// How `add_inner` inserts: as the only writer, the only writer with a
/// hint, or beside other writers.
#[derive(Clone, Copy)]
enum Insert<'a> {
    Alone,
    Hinted(&'a InsertHint),
    Concurrent,
}

pub struct MemTable {
    id: u64,
    arena: Arc<Arena>,
    points: SkipList,
    range_dels: SkipList,
    num_entries: AtomicU64,
    num_deletes: AtomicU64,
    num_range_deletes: AtomicU64,
    /// Smallest and largest sequence numbers added; `u64::MAX` and 0 while
    /// empty.
    first_seq: AtomicU64,
    last_seq: AtomicU64,
    /// Set while an `add` runs, to catch unserialised writers in tests.
    #[cfg(debug_assertions)]
    writing: std::sync::atomic::AtomicBool,
}

impl MemTable {
    pub fn new(id: u64) -> MemTable {
        MemTable::with_arena_chunk_size(id, arena::DEFAULT_CHUNK_SIZE)
    }

    /// A memtable whose arena takes memory `chunk_size` bytes at a time.
    pub fn with_arena_chunk_size(id: u64, chunk_size: usize) -> MemTable {
        let arena = Arc::new(Arena::with_chunk_size(chunk_size));
        MemTable {
            id,
            points: SkipList::new(Arc::clone(&arena)),
            range_dels: SkipList::new(Arc::clone(&arena)),
            arena,
            num_entries: AtomicU64::new(0),
            num_deletes: AtomicU64::new(0),
            num_range_deletes: AtomicU64::new(0),
            first_seq: AtomicU64::new(u64::MAX),
            last_seq: AtomicU64::new(0),
            #[cfg(debug_assertions)]
            writing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Adds an entry; `kind == RangeDeletion` adds the range tombstone
    /// `[user_key, value)` (as RocksDB's `MemTable::Add` does, so WAL replay
    /// can add every record the same way). Returns false, changing nothing,
    /// if the same internal key is already present.
    ///
    /// One writer at a time: the caller serialises calls to `add`, and
    /// does not mix them with concurrent `add_concurrent` calls.
    pub fn add(&self, seq: u64, kind: ValueKind, user_key: &[u8], value: &[u8]) -> bool {
        #[cfg(debug_assertions)]
        let _guard = WriterGuard::enter(&self.writing);
        self.add_inner(seq, kind, user_key, value, Insert::Alone)
    }

    /// As `add`, but safe to call from many threads at once (each link is
    /// made with a CAS). Slightly slower than `add` for a single writer.
    pub fn add_concurrent(&self, seq: u64, kind: ValueKind, user_key: &[u8], value: &[u8]) -> bool {
        self.add_inner(seq, kind, user_key, value, Insert::Concurrent)
    }

    /// Where a point entry for `user_key` will go, found now so that a
    /// later [`MemTable::add_hinted`] of it starts there (see
    /// [`SkipList::hint`]). Read-only: any thread, at any time.
    pub fn insert_hint(&self, user_key: &[u8]) -> InsertHint {
        // The first internal key of `user_key`: every entry for it sorts
        // at or after this one, whatever its sequence number.
        let trailer = pack_trailer(MAX_SEQUENCE, KIND_FOR_SEEK);
        with_internal_key(user_key, trailer, |k| self.points.hint(k))
    }

    /// As `add` (one writer at a time), starting from `hint`, which must
    /// come from `insert_hint` for the same user key (a hint from another
    /// memtable, or for another list, is ignored).
    pub fn add_hinted(
        &self,
        seq: u64,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
        hint: &InsertHint,
    ) -> bool {
        #[cfg(debug_assertions)]
        let _guard = WriterGuard::enter(&self.writing);
        self.add_inner(seq, kind, user_key, value, Insert::Hinted(hint))
    }

    /// Adds a tombstone deleting user keys in `[start, end)` at `seq`.
    pub fn add_range_tombstone(&self, seq: u64, start: &[u8], end: &[u8]) -> bool {
        self.add(seq, ValueKind::RangeDeletion, start, end)
    }

    fn add_inner(
        &self,
        seq: u64,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
        how: Insert<'_>,
    ) -> bool {
        assert!(seq <= MAX_SEQUENCE, "sequence number {seq} out of range");
        let list = match kind {
            ValueKind::RangeDeletion => &self.range_dels,
            _ => &self.points,
        };
        let added = with_internal_key(user_key, pack_trailer(seq, kind as u8), |ikey| match how {
            Insert::Alone => list.insert(ikey, value),
            Insert::Hinted(h) => list.insert_hinted(ikey, value, h),
            Insert::Concurrent => list.insert_concurrently(ikey, value),
        });
        let concurrent = matches!(how, Insert::Concurrent);
        if !added {
            return false;
        }
        // Checked first: the read-modify-writes are only needed when a bound
        // moves, which for in-order sequence numbers is once per add at most.
        if seq < self.first_seq.load(Relaxed) {
            self.first_seq.fetch_min(seq, Relaxed);
        }
        if seq > self.last_seq.load(Relaxed) {
            self.last_seq.fetch_max(seq, Relaxed);
        }
        let count = match kind {
            ValueKind::Deletion | ValueKind::SingleDeletion => Some(&self.num_deletes),
            ValueKind::RangeDeletion => Some(&self.num_range_deletes),
            ValueKind::Value | ValueKind::Merge => None,
        };
        for c in count.into_iter().chain([&self.num_entries]) {
            bump(c, concurrent);
        }
        true
    }

    /// The newest point entry for `user_key` with sequence <= `snapshot`,
    /// whatever its kind. Range tombstones are not applied here (see
    /// `range_tombstones`).
    pub fn get(&self, user_key: &[u8], snapshot: u64) -> Option<Found> {
        let trailer = pack_trailer(snapshot.min(MAX_SEQUENCE), KIND_FOR_SEEK);
        with_internal_key(user_key, trailer, |target| {
            let mut it = self.points.iter();
            it.seek(target);
            if !it.valid() {
                return None;
            }
            let p = ParsedKey::parse(it.key()).expect("memtable keys carry a trailer");
            if p.user_key != user_key {
                return None;
            }
            Some(Found {
                seq: p.seq,
                kind: p.value_kind().expect("memtable holds only valid kinds"),
                value: it.value().to_vec(),
            })
        })
    }

    /// An iterator over the point entries. It sees entries added after it
    /// was created, if it reaches their position.
    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        let mem = Arc::clone(self);
        // SAFETY: the reference is only stored in the `MemTableIter` next to
        // the `Arc` that keeps the memtable alive and at a fixed address for
        // the iterator's whole life; `MemTableIter` never hands the
        // `'static` lifetime out (keys and values borrow from `&self`).
        let list: &'static SkipList = unsafe { &(*Arc::as_ptr(&mem)).points };
        MemTableIter {
            it: list.iter(),
            _mem: mem,
        }
    }

    /// Every range tombstone, ordered by start key, then newest first.
    pub fn range_tombstones(&self) -> Vec<RangeTombstone> {
        let mut out = Vec::with_capacity(self.range_dels.len());
        let mut it = self.range_dels.iter();
        it.seek_to_first();
        while it.valid() {
            let p = ParsedKey::parse(it.key()).expect("memtable keys carry a trailer");
            out.push(RangeTombstone {
                start: p.user_key.to_vec(),
                end: it.value().to_vec(),
                seq: p.seq,
            });
            it.next();
        }
        out
    }

    /// The newest sequence number (at most `snapshot`) of a range tombstone
    /// covering `user_key`, or 0. Walks the tombstones in start order and
    /// stops past `user_key`, copying nothing: point reads call it on every
    /// lookup.
    pub fn max_covering_tombstone(&self, user_key: &[u8], snapshot: u64) -> u64 {
        let mut best = 0;
        let mut it = self.range_dels.iter();
        it.seek_to_first();
        while it.valid() {
            let Some(p) = ParsedKey::parse(it.key()) else {
                break;
            };
            if p.user_key > user_key {
                break;
            }
            if p.seq <= snapshot && user_key < it.value() {
                best = best.max(p.seq);
            }
            it.next();
        }
        best
    }

    /// Arena bytes in use (RocksDB's `ApproximateMemoryUsage`): every node
    /// plus the abandoned tails of full chunks.
    pub fn approximate_memory_usage(&self) -> usize {
        self.arena.memory_usage()
    }

    /// Bytes the arena holds from the system (whole chunks).
    #[cfg(any(test, feature = "internals"))]
    pub fn allocated_bytes(&self) -> usize {
        self.arena.allocated_bytes()
    }

    /// Entries added, range tombstones included (as RocksDB counts them).
    pub fn num_entries(&self) -> u64 {
        self.num_entries.load(Relaxed)
    }

    /// Point deletions (`Deletion` and `SingleDeletion`) added.
    #[cfg(any(test, feature = "internals"))]
    pub fn num_deletes(&self) -> u64 {
        self.num_deletes.load(Relaxed)
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn num_range_deletes(&self) -> u64 {
        self.num_range_deletes.load(Relaxed)
    }

    /// True until the first entry or tombstone is added.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty() && self.range_dels.is_empty()
    }

    /// The smallest sequence number added, if any.
    pub fn first_seq(&self) -> Option<u64> {
        let s = self.first_seq.load(Relaxed);
        (s != u64::MAX).then_some(s)
    }

    /// The largest sequence number added, if any.
    #[cfg(any(test, feature = "internals"))]
    pub fn last_seq(&self) -> Option<u64> {
        self.first_seq()?;
        Some(self.last_seq.load(Relaxed))
    }

    /// Non-empty range tombstones, in start order.
    fn live_tombstones(&self) -> impl Iterator<Item = RangeTombstone> {
        self.range_tombstones()
            .into_iter()
            .filter(|t| t.start < t.end)
    }

    /// The smallest user key of any point entry or range tombstone start.
    /// (Empty tombstones, with `start >= end`, cover nothing and are
    /// ignored.)
    #[cfg(any(test, feature = "internals"))]
    pub fn smallest_user_key(&self) -> Option<Vec<u8>> {
        let mut it = self.points.iter();
        it.seek_to_first();
        let point = it.valid().then(|| key::user_key(it.key()));
        let tomb = self.live_tombstones().next().map(|t| t.start);
        match (point, tomb) {
            (Some(p), Some(t)) => Some(p.min(&t[..]).to_vec()),
            (Some(p), None) => Some(p.to_vec()),
            (None, t) => t,
        }
    }

    /// The largest user key of any point entry, or the largest range
    /// tombstone end if that is larger. A tombstone's end is exclusive, so
    /// this is an upper bound on the keys covered, as in RocksDB's file
    /// boundaries.
    #[cfg(any(test, feature = "internals"))]
    pub fn largest_user_key(&self) -> Option<Vec<u8>> {
        let mut it = self.points.iter();
        it.seek_to_last();
        let point = it.valid().then(|| key::user_key(it.key()));
        let tomb = self.live_tombstones().map(|t| t.end).max();
        match (point, tomb) {
            (Some(p), Some(t)) => Some(p.max(&t[..]).to_vec()),
            (Some(p), None) => Some(p.to_vec()),
            (None, t) => t,
        }
    }

    /// Whether any point entry has a user key in `[smallest, largest]`
    /// (both inclusive) or any range tombstone covers a key in it: the test
    /// for whether an ingested file overlaps this memtable.
    pub fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        if smallest > largest {
            return false;
        }
        let mut it = self.points.iter();
        with_internal_key(smallest, pack_trailer(MAX_SEQUENCE, KIND_FOR_SEEK), |t| {
            it.seek(t)
        });
        if it.valid() && key::user_key(it.key()) <= largest {
            return true;
        }
        self.live_tombstones()
            .any(|t| t.start.as_slice() <= largest && smallest < t.end.as_slice())
    }
}

impl fmt::Debug for MemTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemTable")
            .field("id", &self.id)
            .field("num_entries", &self.num_entries())
            .field("memory_usage", &self.approximate_memory_usage())
            .finish()
    }
}

/// Calls `f` with `user_key ++ trailer`, built on the stack when short so
/// that adds and gets do not allocate.
/// Adds one to a counter: a read-modify-write for concurrent adds, a plain
/// load and store (no locked instruction) for the single writer, whose
/// adds the caller serialises.
fn bump(c: &AtomicU64, concurrent: bool) {
    if concurrent {
        c.fetch_add(1, Relaxed);
    } else {
        c.store(c.load(Relaxed) + 1, Relaxed);
    }
}

fn with_internal_key<R>(user_key: &[u8], trailer: u64, f: impl FnOnce(&[u8]) -> R) -> R {
    const STACK: usize = 128;
    let n = user_key.len() + 8;
    let t = trailer.to_le_bytes();
    if n <= STACK {
        let mut buf = [0u8; STACK];
        buf[..user_key.len()].copy_from_slice(user_key);
        buf[user_key.len()..n].copy_from_slice(&t);
        f(&buf[..n])
    } else {
        let mut v = Vec::with_capacity(n);
        v.extend_from_slice(user_key);
        v.extend_from_slice(&t);
        f(&v)
    }
}

#[cfg(debug_assertions)]
struct WriterGuard<'a>(&'a std::sync::atomic::AtomicBool);

#[cfg(debug_assertions)]
impl<'a> WriterGuard<'a> {
    fn enter(flag: &'a std::sync::atomic::AtomicBool) -> WriterGuard<'a> {
        assert!(
            !flag.swap(true, std::sync::atomic::Ordering::Acquire),
            "MemTable::add called by two writers at once (use add_concurrent)"
        );
        WriterGuard(flag)
    }
}

#[cfg(debug_assertions)]
impl Drop for WriterGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// Iterator over a memtable's point entries (internal keys, newest version
/// of a user key first). Never fails.
pub struct MemTableIter {
    it: skiplist::Iter<'static>,
    /// Keeps the list `it` borrows alive. Declared after `it`, so dropped
    /// after it.
    _mem: Arc<MemTable>,
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.it.valid()
    }

    fn seek_to_first(&mut self) {
        self.it.seek_to_first();
    }

    fn seek_to_last(&mut self) {
        self.it.seek_to_last();
    }

    fn seek(&mut self, target: &[u8]) {
        self.it.seek(target);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.it.seek_for_prev(target);
    }

    fn next(&mut self) {
        self.it.next();
    }

    fn prev(&mut self) {
        self.it.prev();
    }

    fn key(&self) -> &[u8] {
        self.it.key()
    }

    fn value(&self) -> &[u8] {
        self.it.value()
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
