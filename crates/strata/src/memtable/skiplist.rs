//! `SkipList`: a concurrent skiplist of (key, value) byte strings ordered by
//! internal key (`key::compare_internal`), in the style of RocksDB's
//! `InlineSkipList`. Each entry is one arena allocation holding its tower of
//! links, its lengths, its key and its value, so the list's memory is exactly
//! the arena's and is freed with it.
//!
//! Concurrency: readers never lock. A writer fills a node completely, then
//! publishes it with a `Release` store (or CAS) of the link that makes it
//! reachable; readers follow links with `Acquire` loads, so every node a
//! reader reaches is fully written. Nodes are never changed after publication
//! (only their links, which are atomic) and never removed, so a reader can
//! hold a position indefinitely.
//!
//! Writers: [`SkipList::insert`] assumes one writer at a time (LevelDB's
//! scheme: plain stores of each link). It keeps the splice of its last
//! insert (the nodes before and after that key at every level, RocksDB's
//! `seq_splice_`) and starts the next search from the lowest level whose
//! splice still brackets the new key: keys arriving in order (a bulk load,
//! a batch of sorted rows) then cost one comparison each instead of a
//! search from the head. [`SkipList::insert_concurrently`] may
//! run on any number of threads at once (RocksDB's `InsertConcurrently`: each
//! level is linked with a CAS, and a failed CAS re-searches that level from
//! the node found before). Calling `insert` concurrently with another insert
//! is memory-safe but may lose or misplace entries.
//! [`SkipList::insert_hinted`] is `insert` starting each level from an
//! [`InsertHint`], a search for the key (or an earlier one) made earlier,
//! possibly on another thread while other inserts ran: its nodes are
//! still in the list and still before the key, so each level walks on
//! from them. A hint holds the list's arena and address; one from another
//! list, or made for a later key, is ignored.
//!
//! Invariants: every level is sorted; a node linked at level `i` is already
//! linked at every level below `i` (links are made bottom-up), and has a
//! tower taller than `i`, so following level-`i` links only ever touches
//! towers that exist. Keys are unique under `compare_internal`. The cached
//! splice only ever holds, at level `i`, the head, null or nodes with a
//! tower taller than `i`, so even a stale or torn splice never leads a link
//! access out of a tower; before a level of it is trusted, the insert checks
//! that its two nodes are still adjacent at that level and bracket the key.

use super::arena::Arena;
use crate::key::compare_internal;
use std::cmp::Ordering;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Arc;

/// The tallest tower. With branching factor 4, 12 levels index 4^12 = 16M
/// entries efficiently, well beyond a memtable's size.
pub const MAX_HEIGHT: usize = 12;

const LINK: usize = std::mem::size_of::<AtomicPtr<u8>>();

/// Key and value lengths, as two `u32`s.
const HEADER: usize = 8;

/// Bytes of arena a node with the given tower height and lengths takes,
/// before the arena rounds it up to a multiple of 8.
pub fn node_size(height: usize, key_len: usize, value_len: usize) -> usize {
    LINK * height + HEADER + key_len + value_len
}

/// A published node. The pointer addresses the header; the tower lies below
/// it, the key and value above:
///
/// ```text
/// [link h-1] .. [link 1] [link 0] | key_len u32, value_len u32 | key | value
///                                  ^ node pointer
/// ```
///
/// Placing the tower below the header (as `InlineSkipList` does) lets the key
/// be found without knowing the height, and puts link 0, which every search
/// ends on, next to the key it is compared with.
///
/// Module invariant: a `Node` is only ever made by `alloc_node` (or read from
/// a link, which only ever holds such pointers), so it addresses a fully
/// initialised node in an arena that outlives it; `Node`s never leave this
/// module except inside an `Iter` borrowing the list (and thus the arena).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Node(NonNull<u8>);

impl Node {
    /// The link at `level`; the caller guarantees `level < height`, which
    /// holds for the head (height `MAX_HEIGHT`) and for any node reached by
    /// a link at `level` or above.
    fn link(&self, level: usize) -> &AtomicPtr<u8> {
        debug_assert!(level < MAX_HEIGHT);
        // SAFETY: by the module invariant the node has an initialised tower
        // of more than `level` links directly below its header, aligned for
        // `AtomicPtr` (the arena aligns to 8 and the tower is a whole number
        // of links). The arena outlives `self`.
        unsafe {
            &*self
                .0
                .as_ptr()
                .sub(LINK * (level + 1))
                .cast::<AtomicPtr<u8>>()
        }
    }

    fn next(self, level: usize) -> Option<Node> {
        NonNull::new(self.link(level).load(Acquire)).map(Node)
    }

    /// Starts loading into the cache where a search at `level` may go if
    /// it moves on to this node: the node after it on `level`, and the
    /// node after it on the level below (where the search goes down if
    /// that next node is past the key). Called while this node's key is
    /// compared: a search spends almost all its time waiting for each next
    /// node's header (one cache miss per node visited), and this overlaps
    /// the next wait with the comparison (RocksDB's `FindSpliceForLevel`
    /// does the same). Either fetch may be wasted; neither delays anything.
    /// Only reads links; the caller guarantees the node has a tower taller
    /// than `level`.
    fn prefetch_onward(self, level: usize) {
        prefetch(self.link(level).load(Relaxed));
        if level > 0 {
            prefetch(self.link(level - 1).load(Relaxed));
        }
    }

    fn as_ptr(self) -> *mut u8 {
        self.0.as_ptr()
    }

    fn lens(self) -> (usize, usize) {
        // SAFETY: the header is two initialised, 4-aligned `u32`s, written
        // before the node was published and never written again.
        unsafe {
            let h = self.0.as_ptr().cast::<u32>();
            (h.read() as usize, h.add(1).read() as usize)
        }
    }

    /// The key; `'a` must not outlive the arena (callers tie it to a borrow
    /// of the list).
    fn key<'a>(self) -> &'a [u8] {
        let (klen, _) = self.lens();
        // SAFETY: `klen` initialised bytes follow the header and are never
        // written after publication; the arena keeps them alive for `'a`.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(HEADER), klen) }
    }

    fn value<'a>(self) -> &'a [u8] {
        let (klen, vlen) = self.lens();
        // SAFETY: as for `key`; the value follows the key.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(HEADER + klen), vlen) }
    }
}

/// A hint to the CPU to start loading the cache line at `p`. A prefetch
/// never faults, so any address (null included) is allowed; on targets
/// without a stable prefetch it does nothing.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` only hints the cache; it reads nothing
    // architecturally and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Builds an unpublished node with all links null.
fn alloc_node(arena: &Arena, key: &[u8], value: &[u8], height: usize) -> Node {
    assert!((1..=MAX_HEIGHT).contains(&height));
    let klen = u32::try_from(key.len()).expect("skiplist key longer than 4 GiB");
    let vlen = u32::try_from(value.len()).expect("skiplist value longer than 4 GiB");
    let base = arena.allocate(node_size(height, key.len(), value.len()));
    // SAFETY: `base` addresses `node_size(..)` fresh, writable, 8-aligned
    // bytes owned by no one else. The tower occupies the first `LINK *
    // height` of them (aligned for `AtomicPtr`), the header the next 8
    // (4-aligned), then the key and the value, so every write below is in
    // bounds and suitably aligned, and the source slices cannot overlap the
    // fresh allocation.
    unsafe {
        let node = base.as_ptr().add(LINK * height);
        for i in 0..height {
            node.sub(LINK * (i + 1))
                .cast::<AtomicPtr<u8>>()
                .write(AtomicPtr::new(ptr::null_mut()));
        }
        node.cast::<u32>().write(klen);
        node.cast::<u32>().add(1).write(vlen);
        ptr::copy_nonoverlapping(key.as_ptr(), node.add(HEADER), key.len());
        ptr::copy_nonoverlapping(value.as_ptr(), node.add(HEADER + key.len()), value.len());
        Node(NonNull::new_unchecked(node))
    }
}

pub struct SkipList {
    arena: Arc<Arena>,
    /// A node of height `MAX_HEIGHT` with an empty key, before every entry.
    head: Node,
    /// Height of the tallest tower inserted so far (at least 1). Relaxed:
    /// a reader that sees a raised height before the head's new links just
    /// finds null links at the top and descends.
    max_height: AtomicUsize,
    /// xorshift64 state for tower heights.
    rng: AtomicU64,
    len: AtomicUsize,
    /// Where the last single-writer `insert` linked its node.
    splice: Splice,
}

/// The splice of the last [`SkipList::insert`]: for each level `i` below
/// `height`, `prev[i]` (the head or a node whose tower is taller than `i`)
/// and `next[i]` (null or such a node) were adjacent at level `i` with the
/// inserted key between them, and `prev[i]` is the inserted node itself
/// for the levels it was linked at. Atomics (all `Relaxed`) rather than
/// plain fields so that a misused `insert` from two threads at once stays
/// memory-safe: every stored pointer is valid for its level whatever the
/// interleaving, and each level is re-checked before it is trusted.
/// `insert_concurrently` resets `height` to 0, since it links nodes the
/// splice does not know about.
struct Splice {
    height: AtomicUsize,
    prev: [AtomicPtr<u8>; MAX_HEIGHT],
    next: [AtomicPtr<u8>; MAX_HEIGHT],
}

impl Splice {
    fn empty() -> Splice {
        Splice {
            height: AtomicUsize::new(0),
            prev: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            next: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        }
    }
}

/// A position found ahead of an insert ([`SkipList::hint`]): the list's
/// height then and, for each level below it, the node (or the head) the
/// search passed last before the key. It holds the list's arena, so its
/// pointers stay valid however long it is kept, and the list's address,
/// checked (with the arena) before it is used. Holding the arena also
/// keeps a flushed memtable's memory until the hint is dropped: the
/// commit pipeline keeps a hint only while its writer is in `commit`.
pub struct InsertHint {
    arena: Arc<Arena>,
    list: *const SkipList,
    height: usize,
    prev: [*mut u8; MAX_HEIGHT],
}

// SAFETY: the pointers are only compared, or followed by `insert_hinted`
// on the list they came from after checking it is that list; the nodes
// they address are in the arena the hint keeps alive and are only read
// (their links through atomics), so the hint may move between threads.
unsafe impl Send for InsertHint {}
// SAFETY: a shared hint is only read.
unsafe impl Sync for InsertHint {}

// SAFETY: the raw pointers inside (`head` and the links) address arena
// memory owned, through the `Arc<Arena>`, by the list. Shared mutation goes
// only through atomics (links, counters); node bytes are written once before
// publication (Release) and read only after an Acquire load of a link, so
// sharing the list or moving it between threads cannot race.
unsafe impl Send for SkipList {}
// SAFETY: as for `Send`.
unsafe impl Sync for SkipList {}

impl SkipList {
    pub fn new(arena: Arc<Arena>) -> SkipList {
        let head = alloc_node(&arena, &[], &[], MAX_HEIGHT);
        SkipList {
            arena,
            head,
            max_height: AtomicUsize::new(1),
            rng: AtomicU64::new(0x2545_f491_4f6c_dd1d),
            len: AtomicUsize::new(0),
            splice: Splice::empty(),
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn arena(&self) -> &Arc<Arena> {
        &self.arena
    }

    /// Entries inserted so far (may lag a concurrent insert).
    pub fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.head.next(0).is_none()
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter {
            list: self,
            node: None,
        }
    }

    /// Whether an entry with a key equal to `key` exists.
    #[cfg(any(test, feature = "internals"))]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.find_greater_or_equal(key, None)
            .is_some_and(|n| compare_internal(n.key(), key) == Ordering::Equal)
    }

    /// A tower height: 1, then each further level with probability 1/4.
    fn random_height(&self) -> usize {
        // Relaxed load and store rather than a CAS loop: concurrent writers
        // may draw the same number, which only repeats a height.
        let mut x = self.rng.load(Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Relaxed);
        // The multiply (xorshift64*) mixes the weak low bits into the high
        // ones; each pair of leading zero bits is a 1-in-4 event.
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (1 + r.leading_zeros() as usize / 2).min(MAX_HEIGHT)
    }

    fn raise_max_height(&self, height: usize) -> usize {
        let max = self.max_height.load(Relaxed);
        if height > max {
            self.max_height.fetch_max(height, Relaxed).max(height)
        } else {
            max
        }
    }

    /// The first node with key >= `target`, recording in `prev[i]` the last
    /// node before `target` at each level searched.
    fn find_greater_or_equal(
        &self,
        target: &[u8],
        mut prev: Option<&mut [Node; MAX_HEIGHT]>,
    ) -> Option<Node> {
        let mut x = self.head;
        let mut level = self.max_height.load(Relaxed) - 1;
        // The node that stopped the search one level up: when the same node
        // follows `x` on the next level down it is known to be >= target,
        // which saves a comparison per level (as LevelDB does).
        let mut known_ge = None;
        loop {
            let next = x.next(level);
            let ahead = match next {
                Some(n) if next != known_ge => {
                    n.prefetch_onward(level);
                    compare_internal(n.key(), target).is_lt()
                }
                _ => false,
            };
            if let (true, Some(n)) = (ahead, next) {
                x = n;
                continue;
            }
            if let Some(p) = prev.as_deref_mut() {
                p[level] = x;
            }
            if level == 0 {
                return next;
            }
            known_ge = next;
            level -= 1;
        }
    }

    /// The last node with key < `target` (or <= it, if `or_equal`); `None`
    /// when there is none.
    fn find_less_than(&self, target: &[u8], or_equal: bool) -> Option<Node> {
        let mut x = self.head;
        let mut level = self.max_height.load(Relaxed) - 1;
        loop {
            let next = x.next(level);
            let ahead = next.is_some_and(|n| match compare_internal(n.key(), target) {
                Ordering::Less => true,
                Ordering::Equal => or_equal,
                Ordering::Greater => false,
            });
            match next {
                Some(n) if ahead => x = n,
                _ if level == 0 => return (x != self.head).then_some(x),
                _ => level -= 1,
            }
        }
    }

    fn find_last(&self) -> Option<Node> {
        let mut x = self.head;
        let mut level = self.max_height.load(Relaxed) - 1;
        loop {
            match x.next(level) {
                Some(n) => x = n,
                None if level == 0 => return (x != self.head).then_some(x),
                None => level -= 1,
            }
        }
    }

    /// Starting from `before` (which is < `key` and has a tower above
    /// `level`), the nodes between which `key` belongs at `level`.
    fn find_splice_for_level(
        &self,
        key: &[u8],
        before: Node,
        level: usize,
    ) -> (Node, Option<Node>) {
        let mut x = before;
        loop {
            let next = x.next(level);
            if let Some(n) = next {
                n.prefetch_onward(level);
            }
            match next {
                Some(n) if compare_internal(n.key(), key).is_lt() => x = n,
                _ => return (x, next),
            }
        }
    }

    /// Inserts `(key, value)` unless an equal key exists (then returns false
    /// and uses no memory). `key` must be an internal key (at least 8 bytes).
    ///
    /// One writer at a time: the caller serialises calls to `insert` and
    /// `insert_concurrently`. Readers may run alongside.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> bool {
        assert!(key.len() >= 8, "skiplist keys are internal keys");
        let max = self.max_height.load(Relaxed);
        // prev[i] < key <= next[i] at each level below `max`; prev[max] is
        // the head, so a search from the top starts there.
        let mut prev = [self.head; MAX_HEIGHT + 1];
        let mut next = [None; MAX_HEIGHT + 1];
        // Levels at and above `valid_from` come from the cached splice.
        let valid_from = self.load_splice(key, max, &mut prev, &mut next);
        for i in (0..valid_from).rev() {
            (prev[i], next[i]) = self.find_splice_for_level(key, prev[i + 1], i);
        }
        self.link_alone(key, value, max, Some(valid_from), &mut prev, &next)
    }

    /// Where an entry with key `key` (or any key after it and before the
    /// next key in the list) belongs: the node before it at every level.
    /// Read-only, so it may run alongside any insert; a writer waiting for
    /// its turn makes its hint then, so that its own insert
    /// ([`SkipList::insert_hinted`]) walks from there instead of searching
    /// from the head, and the search's cache misses are paid before the
    /// writer holds the commit slot rather than inside it.
    pub fn hint(&self, key: &[u8]) -> InsertHint {
        let mut prev = [self.head; MAX_HEIGHT];
        let height = self.max_height.load(Relaxed);
        self.find_greater_or_equal(key, Some(&mut prev));
        InsertHint {
            arena: Arc::clone(&self.arena),
            list: self,
            height,
            prev: prev.map(Node::as_ptr),
        }
    }

    /// As [`SkipList::insert`] (one writer at a time), starting each
    /// level's search at the hint's node for that level; the hint must
    /// have been made for a key <= `key` (one made for a later key, or by
    /// another list, is ignored and the insert searches as `insert` does).
    /// A stale hint is still a good start: its nodes are still in the list
    /// (nothing is removed) and still before `key`, so each level walks on
    /// past whatever was linked since, usually nothing.
    pub fn insert_hinted(&self, key: &[u8], value: &[u8], hint: &InsertHint) -> bool {
        if !ptr::eq(hint.list, self) || !Arc::ptr_eq(&hint.arena, &self.arena) {
            return self.insert(key, value);
        }
        assert!(key.len() >= 8, "skiplist keys are internal keys");
        // SAFETY (of the `Node`s made here): the hint was made by this list
        // (same address and same arena, which the hint keeps alive, so the
        // address cannot have been reused by another list), and each
        // pointer is the head or a node reached at its level, so it
        // addresses a published node whose tower is taller than the level.
        let start = |i: usize| Node(NonNull::new(hint.prev[i]).unwrap_or(self.head.0));
        // The search descends, so each level's node is at or before the
        // one below it: checking level 0's is checking them all.
        let p0 = start(0);
        if p0 != self.head && !compare_internal(p0.key(), key).is_lt() {
            return self.insert(key, value);
        }
        let max = self.max_height.load(Relaxed);
        let mut prev = [self.head; MAX_HEIGHT + 1];
        let mut next = [None; MAX_HEIGHT + 1];
        for i in (0..max).rev() {
            let from = if i < hint.height {
                start(i)
            } else {
                prev[i + 1]
            };
            (prev[i], next[i]) = self.find_splice_for_level(key, from, i);
        }
        // The splice is not kept: hinted inserts come from writers side by
        // side, in no order a splice could follow (storing it was 1% of 4
        // writers' samples).
        self.link_alone(key, value, max, None, &mut prev, &next)
    }

    /// The end of a single-writer insert, once `prev` and `next` bracket
    /// `key` at every level below `max`: links a new node unless `key` is
    /// there already, and caches the splice (levels at and above
    /// `valid_from` are in the cache already), or with `valid_from` `None`
    /// clears it.
    fn link_alone(
        &self,
        key: &[u8],
        value: &[u8],
        max: usize,
        valid_from: Option<usize>,
        prev: &mut [Node; MAX_HEIGHT + 1],
        next: &[Option<Node>; MAX_HEIGHT + 1],
    ) -> bool {
        if valid_from.is_none() && self.splice.height.load(Relaxed) != 0 {
            self.splice.height.store(0, Relaxed);
        }
        if next[0].is_some_and(|n| compare_internal(n.key(), key).is_eq()) {
            if let Some(from) = valid_from {
                self.store_splice(prev, next, max, from);
            }
            return false;
        }
        let height = self.random_height();
        // Levels above the old maximum start from the head, as `prev` does.
        self.raise_max_height(height);
        let node = alloc_node(&self.arena, key, value, height);
        for (i, p) in prev.iter().enumerate().take(height) {
            // Acquire, though no other writer runs: should one (wrongly) run,
            // this keeps the successor's bytes ordered before the Release
            // below, so misuse can lose entries but never expose unwritten
            // memory to readers. The successor is re-read rather than taken
            // from `next`, for the same reason.
            let succ = p.link(i).load(Acquire);
            // Relaxed: `node` is unreachable until the Release store below,
            // which publishes this link together with the node's bytes.
            node.link(i).store(succ, Relaxed);
            p.link(i).store(node.as_ptr(), Release);
        }
        // The new node is now the predecessor of whatever follows it.
        for p in prev.iter_mut().take(height) {
            *p = node;
        }
        if let Some(from) = valid_from {
            self.store_splice(prev, next, max.max(height), from.max(height));
        }
        // A load and a store, not a locked add: only this writer runs.
        self.len.store(self.len.load(Relaxed) + 1, Relaxed);
        true
    }

    /// Loads the cached splice into `prev` and `next` and returns the
    /// lowest level at which it brackets `key` (its two nodes still
    /// adjacent, `prev < key <= next`); the levels below it must be
    /// searched afresh. Bottom up, as RocksDB does: for keys arriving in
    /// order level 0 already brackets, at the cost of one comparison. The
    /// levels above the one checked are trusted without a check: each
    /// splice is a search result for the last key, so its levels nest
    /// (`prev[i+1] <= prev[i]`, `next[i] <= next[i+1]`), and only `insert`
    /// changes the list while a splice is set. Returns `max` (search from
    /// the head) when the splice is unset or from another height.
    fn load_splice(
        &self,
        key: &[u8],
        max: usize,
        prev: &mut [Node; MAX_HEIGHT + 1],
        next: &mut [Option<Node>; MAX_HEIGHT + 1],
    ) -> usize {
        let s = &self.splice;
        if s.height.load(Relaxed) != max {
            return max;
        }
        let load = |i: usize| {
            let p = NonNull::new(s.prev[i].load(Relaxed)).map(Node);
            let n = NonNull::new(s.next[i].load(Relaxed)).map(Node);
            (p, n)
        };
        let Some(from) = (0..max).find(|&i| match load(i) {
            (Some(p), n) => {
                p.next(i) == n
                    && (p == self.head || compare_internal(p.key(), key).is_lt())
                    && n.is_none_or(|n| !compare_internal(n.key(), key).is_lt())
            }
            (None, _) => false,
        }) else {
            return max;
        };
        for i in from..max {
            if let (Some(p), n) = load(i) {
                (prev[i], next[i]) = (p, n);
            } else {
                // Only a misused (concurrent) `insert` leaves a hole.
                return max;
            }
        }
        from
    }

    /// Saves `prev` and `next` for levels below `height` as the splice;
    /// levels at and above `changed_from` are already in it.
    fn store_splice(
        &self,
        prev: &[Node; MAX_HEIGHT + 1],
        next: &[Option<Node>; MAX_HEIGHT + 1],
        height: usize,
        changed_from: usize,
    ) {
        let s = &self.splice;
        let as_ptr = |n: Option<Node>| n.map_or(ptr::null_mut(), Node::as_ptr);
        for i in 0..changed_from.min(height) {
            s.prev[i].store(prev[i].as_ptr(), Relaxed);
            s.next[i].store(as_ptr(next[i]), Relaxed);
        }
        s.height.store(height, Relaxed);
    }

    /// Inserts `(key, value)` unless an equal key exists (then returns
    /// false). Any number of threads may call this at once, alongside
    /// readers. When an equal key is inserted concurrently, exactly one
    /// insert succeeds; the loser's node stays allocated (a few wasted bytes)
    /// but unreachable.
    pub fn insert_concurrently(&self, key: &[u8], value: &[u8]) -> bool {
        assert!(key.len() >= 8, "skiplist keys are internal keys");
        // This insert may split a level of `insert`'s cached splice. Load
        // first: the writers of a group then share the line read-only.
        if self.splice.height.load(Relaxed) != 0 {
            self.splice.height.store(0, Relaxed);
        }
        let height = self.random_height();
        let max = self.raise_max_height(height);
        // The splice: at each level `i`, prev[i] < key <= next[i], found top
        // down from the head; prev[max] is the head.
        let mut prev = [self.head; MAX_HEIGHT + 1];
        let mut next = [None; MAX_HEIGHT + 1];
        for i in (0..max).rev() {
            (prev[i], next[i]) = self.find_splice_for_level(key, prev[i + 1], i);
        }
        let is_dup = |n: Option<Node>| n.is_some_and(|n| compare_internal(n.key(), key).is_eq());
        if is_dup(next[0]) {
            return false;
        }
        let node = alloc_node(&self.arena, key, value, height);
        let as_ptr = |n: Option<Node>| n.map_or(ptr::null_mut(), Node::as_ptr);
        // Bottom-up, so a node is reachable at a level only once it is
        // reachable at every level below (readers descend through it).
        for i in 0..height {
            loop {
                // Relaxed: the CAS below (Release) publishes this link.
                node.link(i).store(as_ptr(next[i]), Relaxed);
                if prev[i]
                    .link(i)
                    .compare_exchange(as_ptr(next[i]), node.as_ptr(), Release, Relaxed)
                    .is_ok()
                {
                    break;
                }
                // Someone linked a node between prev[i] and next[i]. prev[i]
                // is still < key and still in the list (nothing is removed),
                // so the search for this level can restart from it.
                (prev[i], next[i]) = self.find_splice_for_level(key, prev[i], i);
                // Duplicates are settled at level 0: whoever links there
                // first wins; the other stops before linking anything.
                if i == 0 && is_dup(next[0]) {
                    return false;
                }
            }
        }
        self.len.fetch_add(1, Relaxed);
        true
    }

    /// Checks the structural invariants (for tests): every level sorted and
    /// a subsequence of the level below, level 0 holding `len` entries.
    /// Returns a description of the first violation.
    #[cfg(any(test, feature = "internals"))]
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut count = 0;
        let mut x = self.head;
        while let Some(n) = x.next(0) {
            if x != self.head && !compare_internal(x.key(), n.key()).is_lt() {
                return Err(format!("level 0 out of order after {} nodes", count));
            }
            count += 1;
            x = n;
        }
        if count != self.len() {
            return Err(format!(
                "level 0 holds {count} nodes, len is {}",
                self.len()
            ));
        }
        for level in 1..MAX_HEIGHT {
            // Walk level `level` and level `level - 1` together.
            let mut below = self.head.next(level - 1);
            let mut x = self.head;
            while let Some(n) = x.next(level) {
                if x != self.head && !compare_internal(x.key(), n.key()).is_lt() {
                    return Err(format!("level {level} out of order"));
                }
                while below.is_some_and(|b| b != n) {
                    below = below.and_then(|b| b.next(level - 1));
                }
                if below.is_none() {
                    return Err(format!(
                        "level {level} node missing from level {}",
                        level - 1
                    ));
                }
                x = n;
            }
        }
        Ok(())
    }
}

/// A position in a [`SkipList`]: either on an entry or invalid. Positions
/// stay usable while other threads insert; `next` sees entries inserted
/// after the iterator was created.
pub struct Iter<'a> {
    list: &'a SkipList,
    node: Option<Node>,
}

// SAFETY: an `Iter` is a shared borrow of a `Sync` list plus a position in
// it, which only reads published, immutable node bytes and atomic links.
unsafe impl Send for Iter<'_> {}
// SAFETY: as for `Send`; `&Iter` allows only reads.
unsafe impl Sync for Iter<'_> {}

impl<'a> Iter<'a> {
    pub fn valid(&self) -> bool {
        self.node.is_some()
    }

    /// The current key. Panics unless `valid()`.
    pub fn key(&self) -> &'a [u8] {
        self.node.expect("skiplist iterator not valid").key()
    }

    /// The current value. Panics unless `valid()`.
    pub fn value(&self) -> &'a [u8] {
        self.node.expect("skiplist iterator not valid").value()
    }

    pub fn next(&mut self) {
        debug_assert!(self.valid());
        self.node = self.node.and_then(|n| n.next(0));
    }

    /// O(log n): searches for the last node before the current key, since
    /// nodes have no backward links.
    pub fn prev(&mut self) {
        debug_assert!(self.valid());
        if let Some(n) = self.node {
            self.node = self.list.find_less_than(n.key(), false);
        }
    }

    /// First entry with key >= `target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.node = self.list.find_greater_or_equal(target, None);
    }

    /// Last entry with key <= `target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.node = self.list.find_less_than(target, true);
    }

    pub fn seek_to_first(&mut self) {
        self.node = self.list.head.next(0);
    }

    pub fn seek_to_last(&mut self) {
        self.node = self.list.find_last();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};
    use rand::{rngs::StdRng, Rng, SeedableRng};
    use std::collections::BTreeSet;

    fn ikey(i: u64, seq: u64) -> Vec<u8> {
        make_internal_key(format!("key{i:08}").as_bytes(), seq, ValueKind::Value)
    }

    /// Wraps an internal key so a `BTreeSet` orders it as the list does.
    #[derive(Clone, PartialEq, Eq, Debug)]
    struct IKey(Vec<u8>);
    impl Ord for IKey {
        fn cmp(&self, o: &Self) -> Ordering {
            compare_internal(&self.0, &o.0)
        }
    }
    impl PartialOrd for IKey {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }

    fn collect(list: &SkipList) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut it = list.iter();
        it.seek_to_first();
        while it.valid() {
            out.push(it.key().to_vec());
            it.next();
        }
        out
    }

    #[test]
    fn empty_list() {
        let list = SkipList::new(Arc::new(Arena::with_chunk_size(4096)));
        assert!(list.is_empty());
        let mut it = list.iter();
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(&ikey(1, 1));
        assert!(!it.valid());
        it.seek_for_prev(&ikey(1, 1));
        assert!(!it.valid());
        list.check_invariants().unwrap();
    }

    #[test]
    fn heights_follow_a_quarter_branching() {
        let list = SkipList::new(Arc::new(Arena::with_chunk_size(4096)));
        let n = if cfg!(miri) { 2_000 } else { 400_000 };
        let mut counts = [0usize; MAX_HEIGHT + 1];
        for _ in 0..n {
            counts[list.random_height()] += 1;
        }
        assert_eq!(counts[0], 0);
        // P(height >= k+1) = 4^-k.
        let at_least = |k: usize| counts[k..].iter().sum::<usize>() as f64 / n as f64;
        let levels = if cfg!(miri) { 2 } else { 5 };
        for k in 1..=levels {
            let want = 0.25f64.powi(k as i32 - 1);
            let got = at_least(k);
            assert!(
                (got - want).abs() < want * 0.1 + 0.002,
                "height >= {k}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn inserts_iterate_in_order_and_reject_duplicates() {
        let mut rng = StdRng::seed_from_u64(7);
        let list = SkipList::new(Arc::new(Arena::with_chunk_size(4096)));
        let mut model = BTreeSet::new();
        let n = if cfg!(miri) { 200 } else { 5_000 };
        for _ in 0..n {
            let k = ikey(rng.gen_range(0..n / 4), rng.gen_range(0..4));
            let fresh = model.insert(IKey(k.clone()));
            assert_eq!(list.insert(&k, &k[..3]), fresh);
            assert!(list.contains(&k));
        }
        assert_eq!(list.len(), model.len());
        list.check_invariants().unwrap();
        let want: Vec<Vec<u8>> = model.iter().map(|k| k.0.clone()).collect();
        assert_eq!(collect(&list), want);
        // Backwards.
        let mut it = list.iter();
        it.seek_to_last();
        let mut back = Vec::new();
        while it.valid() {
            back.push(it.key().to_vec());
            it.prev();
        }
        back.reverse();
        assert_eq!(back, want);
    }

    /// The cached splice against a model: runs of ascending keys (where it
    /// pays), descending runs, jumps back and forth, duplicates (in order
    /// and not) and `insert_concurrently` calls in between, which link
    /// nodes the splice does not know about. After every run the list must
    /// hold exactly the model's keys, in order, with intact levels.
    #[test]
    fn splice_follows_runs_jumps_and_foreign_inserts() {
        let mut rng = StdRng::seed_from_u64(11);
        let list = SkipList::new(Arc::new(Arena::with_chunk_size(4096)));
        let mut model = BTreeSet::new();
        let (runs, space) = if cfg!(miri) { (20, 400) } else { (400, 20_000) };
        for _ in 0..runs {
            let start: u64 = rng.gen_range(0..space);
            let len = rng.gen_range(1..60);
            let seq = rng.gen_range(0..3);
            let mode = rng.gen_range(0..4);
            for j in 0..len {
                let i = match mode {
                    0 | 1 => start + j,
                    2 => start.saturating_sub(j),
                    _ => rng.gen_range(0..space),
                };
                let k = ikey(i, seq);
                let fresh = model.insert(IKey(k.clone()));
                let added = if mode == 1 && rng.gen_bool(0.3) {
                    list.insert_concurrently(&k, &k[..3])
                } else {
                    list.insert(&k, &k[..3])
                };
                assert_eq!(added, fresh, "key {i} seq {seq} mode {mode}");
            }
            list.check_invariants().unwrap();
            assert_eq!(list.len(), model.len());
        }
        let want: Vec<Vec<u8>> = model.iter().map(|k| k.0.clone()).collect();
        assert_eq!(collect(&list), want);
    }

    /// Hinted inserts against a model. Hints are made for a user key's
    /// first internal key and kept for a while (up to 200 other inserts,
    /// plain, hinted or concurrent, land meanwhile, some right next to the
    /// hinted key), so most are stale when used. Some hints come from
    /// another list, or were made for a later key than the one inserted:
    /// those must be ignored. After every round both lists hold exactly
    /// their models' keys, in order, with intact levels.
    #[test]
    fn hinted_inserts_follow_the_model_with_stale_and_wrong_hints() {
        let mut rng = StdRng::seed_from_u64(13);
        let arena = Arc::new(Arena::with_chunk_size(4096));
        let list = SkipList::new(Arc::clone(&arena));
        // Another list on the same arena, as a memtable's range tombstones.
        let other = SkipList::new(Arc::clone(&arena));
        let (mut model, mut other_model) = (BTreeSet::new(), BTreeSet::new());
        let (rounds, space) = if cfg!(miri) { (4, 300) } else { (60, 20_000) };
        // (user key number, hint, how the hint was made)
        let mut pending: Vec<(u64, InsertHint, u8)> = Vec::new();
        for _ in 0..rounds {
            for _ in 0..rng.gen_range(1..200) {
                let i = rng.gen_range(0..space);
                let seq = rng.gen_range(0..4);
                let k = ikey(i, seq);
                match rng.gen_range(0..10) {
                    // Make a hint, kept for later: 0 for this list, 1 from
                    // the other list, 2 for a later key than `i`.
                    0..=2 => {
                        let how = rng.gen_range(0..3);
                        let hint = match how {
                            0 => list.hint(&ikey(i, 1000)),
                            1 => other.hint(&ikey(i, 1000)),
                            _ => list.hint(&ikey(i + rng.gen_range(1..50), 1000)),
                        };
                        pending.push((i, hint, how));
                    }
                    // Use a kept hint.
                    3..=5 if !pending.is_empty() => {
                        let (i, hint, how) = pending.swap_remove(rng.gen_range(0..pending.len()));
                        let k = ikey(i, seq);
                        let fresh = model.insert(IKey(k.clone()));
                        assert_eq!(list.insert_hinted(&k, &k[..3], &hint), fresh, "hint {how}");
                    }
                    // A neighbour of the hinted keys, so hints go stale at
                    // their own levels.
                    6 if !pending.is_empty() => {
                        let j = pending[rng.gen_range(0..pending.len())].0;
                        let k = ikey(j, seq);
                        let fresh = model.insert(IKey(k.clone()));
                        assert_eq!(list.insert(&k, &k[..3]), fresh);
                    }
                    7 => {
                        let fresh = model.insert(IKey(k.clone()));
                        assert_eq!(list.insert_concurrently(&k, &k[..3]), fresh);
                    }
                    8 => {
                        let fresh = other_model.insert(IKey(k.clone()));
                        assert_eq!(other.insert(&k, &k[..3]), fresh);
                    }
                    _ => {
                        let fresh = model.insert(IKey(k.clone()));
                        assert_eq!(list.insert(&k, &k[..3]), fresh);
                    }
                }
            }
            list.check_invariants().unwrap();
            other.check_invariants().unwrap();
            assert_eq!(list.len(), model.len());
        }
        let want: Vec<Vec<u8>> = model.iter().map(|k| k.0.clone()).collect();
        assert_eq!(collect(&list), want);
        let want: Vec<Vec<u8>> = other_model.iter().map(|k| k.0.clone()).collect();
        assert_eq!(collect(&other), want);
    }

    /// Several writers insert at once (overlapping key sets, so duplicates
    /// race) while readers scan; afterwards the list must hold exactly the
    /// union, in order, with every level a sorted subsequence of the one
    /// below.
    #[test]
    fn concurrent_inserts() {
        let (writers, per_writer, rounds) = if cfg!(miri) {
            (3, 40, 1)
        } else {
            (4, 30_000, 3)
        };
        for round in 0..rounds {
            let list = SkipList::new(Arc::new(Arena::with_chunk_size(1 << 16)));
            let finished = AtomicUsize::new(0);
            let wins = AtomicUsize::new(0);
            std::thread::scope(|s| {
                for w in 0..writers {
                    let (list, wins, finished) = (&list, &wins, &finished);
                    s.spawn(move || {
                        let mut rng = StdRng::seed_from_u64(round * 100 + w);
                        for j in 0..per_writer {
                            // Each writer owns the keys with j % writers == w
                            // and also races the others on a shared space.
                            let k = if rng.gen_bool(0.5) {
                                ikey(j * writers + w, 1)
                            } else {
                                ikey(rng.gen_range(0..per_writer), 2)
                            };
                            if list.insert_concurrently(&k, &k) {
                                wins.fetch_add(1, Relaxed);
                            }
                        }
                        finished.fetch_add(1, Release);
                    });
                }
                for _ in 0..2 {
                    let (list, finished) = (&list, &finished);
                    s.spawn(move || loop {
                        let last_scan = finished.load(Acquire) == writers as usize;
                        let mut it = list.iter();
                        it.seek_to_first();
                        let mut last: Option<&[u8]> = None;
                        while it.valid() {
                            assert_eq!(it.key(), it.value());
                            if let Some(l) = last {
                                assert!(compare_internal(l, it.key()).is_lt());
                            }
                            last = Some(it.key());
                            it.next();
                        }
                        if last_scan {
                            break;
                        }
                    });
                }
            });
            list.check_invariants().unwrap();
            let mut model = BTreeSet::new();
            for w in 0..writers {
                let mut rng = StdRng::seed_from_u64(round * 100 + w);
                for j in 0..per_writer {
                    let k = if rng.gen_bool(0.5) {
                        ikey(j * writers + w, 1)
                    } else {
                        ikey(rng.gen_range(0..per_writer), 2)
                    };
                    model.insert(IKey(k));
                }
            }
            assert_eq!(wins.load(Relaxed), model.len());
            assert_eq!(list.len(), model.len());
            let want: Vec<Vec<u8>> = model.into_iter().map(|k| k.0).collect();
            assert_eq!(collect(&list), want);
        }
    }
}
