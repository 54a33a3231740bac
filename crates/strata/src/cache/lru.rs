//! A sharded LRU cache with a byte budget: the block cache shared by every
//! table reader (RocksDB's `LRUCache`).
//!
//! Keys are `(cache id, block offset)`. Each table reader takes a fresh id
//! from [`LruCache::new_id`], so two files never share keys, and a reader
//! being dropped (its file compacted away, say) drops its blocks with
//! [`LruCache::erase_id`].
//!
//! Erasing an id costs that id's cached entries plus one lock and one
//! lookup per shard, not a walk of the whole cache: each shard chains the
//! entries of each id together (`SlotList::ids`; Pebble's cache keeps the
//! same per-shard map from file to its entries). It used to walk every
//! entry of every shard under that shard's lock, so with 100,000 blocks
//! cached each dropped table held every shard's lock for a few
//! microseconds (0.23-0.36 ms in all) while foreground reads waited, even
//! for a table none of whose blocks were cached (a compaction's input:
//! those are read without filling the cache); now 1.3-2.5 µs for such a
//! table and 6-10 µs for one with 16 blocks cached (`benches/cache.rs`,
//! docs/bench-history/engine-micro.md). The chains cost a hash lookup per
//! insert, another per removal of an id's only or newest entry in the
//! shard (an eviction, often: a table's blocks spread over the shards),
//! and two words per entry: an insert that evicts runs about 24% more
//! instructions, on a miss that has just read, checked and decompressed
//! a block; `get` runs the same code as before. RocksDB instead never erases: its
//! keys embed file numbers that are never reused, so a deleted file's
//! blocks age out. Strata's ids are never reused either, but a dropped
//! table's blocks are often among the most recently used (foreground reads
//! of the table a compaction just replaced), so left to age out they would
//! stay charged against the budget, pushing live blocks out and counted in
//! `usage`, for a whole pass of the LRU; erased, the budget holds only
//! blocks someone can still hit.
//!
//! The cache is split into `2^k` shards, each behind its own mutex, so readers
//! of different blocks rarely contend. A key always lives in the shard its hash
//! picks, and the byte budget is split between the shards (the shares add up
//! to exactly the total), so each shard evicts on its own.
//!
//! Invariants, per shard, after every call returns:
//! - `usage` is the sum of the charges of the entries it holds, and is at most
//!   the shard's capacity (an entry charged more than that is never cached);
//! - every key in the map names exactly one live slot, and that slot is on the
//!   recency list exactly once; the list is ordered from most to least
//!   recently used (inserted or hit by `get`);
//! - every live slot is also on exactly one id chain, its key's id's, and
//!   `ids` maps exactly the ids with a live slot in the shard to the first
//!   slot of their chain.
//!
//! Pinning: `get` hands out a clone of the value, and values are normally
//! `Arc<Block>`, so a block a reader is using stays alive after the cache
//! evicts or erases it; it is freed when the last reader drops it. The budget
//! therefore bounds what the cache holds, not what readers hold: blocks that
//! are evicted while still referenced no longer count against it.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// Cache key: (cache id of the file reader, block offset in the file).
pub type CacheKey = (u64, u64);

/// Counters since the cache was created. Each shard's counters are exact;
/// [`LruCache::stats`] sums the shards one after another, so under concurrent
/// use the sum is not a single instant's snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// `get` calls that found the key.
    pub hits: u64,
    /// `get` calls that did not.
    pub misses: u64,
    /// Values actually cached by `insert` (an oversized value is not counted).
    pub inserts: u64,
    /// Entries dropped to make room. Replacing a key or erasing one is not an
    /// eviction.
    pub evictions: u64,
}

impl CacheStats {
    fn add(&mut self, other: &CacheStats) {
        self.hits += other.hits;
        self.misses += other.misses;
        self.inserts += other.inserts;
        self.evictions += other.evictions;
    }
}

/// `new` keeps each shard at least this big: a shard smaller than a few large
/// blocks would evict erratically and reject blocks a bigger one would keep.
const MIN_SHARD_BYTES: usize = 512 * 1024;
/// `new` uses at most `2^6 = 64` shards; beyond that, lock contention is no
/// longer what limits a block cache.
const MAX_AUTO_SHARD_BITS: u32 = 6;
/// `with_shards` refuses more than `2^20` shards: that many is a bug.
const MAX_SHARD_BITS: u32 = 20;

/// Seeds for the two hashes of a key. The shard is chosen with one and the
/// shard's map uses the other, so the keys sharing a shard still differ in
/// every bit of the map's hash (the map uses both the high and the low bits).
const SHARD_SEED: u64 = 0x243f_6a88_85a3_08d3;
const MAP_SEED: u64 = 0x1319_8a2e_0370_7344;
/// Seed of the per-shard map from cache id to its chain (`SlotList::ids`).
const ID_SEED: u64 = 0xa409_3822_299f_31d0;

/// A sharded LRU cache charging each entry a caller-given number of bytes.
/// See the module documentation for its invariants.
pub struct LruCache<V: Clone + Send + Sync> {
    shards: Box<[CachePadded<Mutex<Shard<V>>>]>,
    /// `shards.len() - 1`; the shard count is a power of two.
    shard_mask: u64,
    capacity: usize,
    next_id: AtomicU64,
}

impl<V: Clone + Send + Sync> LruCache<V> {
    /// A cache holding at most `capacity_bytes` of charge, with `2^k` shards
    /// for the largest `k <= 6` that leaves each shard at least 512 KiB (one
    /// shard if the cache is smaller than 1 MiB).
    pub fn new(capacity_bytes: usize) -> Self {
        let mut bits = 0;
        while bits < MAX_AUTO_SHARD_BITS && capacity_bytes >> (bits + 1) >= MIN_SHARD_BYTES {
            bits += 1;
        }
        Self::with_shards(capacity_bytes, bits)
    }

    /// A cache holding at most `capacity_bytes` of charge in `2^shard_bits`
    /// shards. An entry charged more than one shard's share is never cached.
    ///
    /// # Panics
    /// If `shard_bits > 20`.
    pub fn with_shards(capacity_bytes: usize, shard_bits: u32) -> Self {
        assert!(
            shard_bits <= MAX_SHARD_BITS,
            "at most 2^{MAX_SHARD_BITS} cache shards, asked for 2^{shard_bits}"
        );
        let n = 1usize << shard_bits;
        // Spread the remainder over the first shards so the shares add up to
        // exactly `capacity_bytes`: total usage can then never exceed it.
        let base = capacity_bytes >> shard_bits;
        let extra = capacity_bytes - (base << shard_bits);
        let shards = (0..n)
            .map(|i| CachePadded(Mutex::new(Shard::new(base + usize::from(i < extra)))))
            .collect();
        LruCache {
            shards,
            shard_mask: (n - 1) as u64,
            capacity: capacity_bytes,
            next_id: AtomicU64::new(1),
        }
    }

    /// A cache id no other caller of this cache has been given; a table
    /// reader uses it as the first half of all its keys.
    pub fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The value cached under `key`, which becomes the most recently used.
    pub fn get(&self, key: CacheKey) -> Option<V> {
        self.shard(key).lock().get(key)
    }

    /// Caches `value` under `key`, charged `charge` bytes, as the most recently
    /// used entry. It replaces any value already there, then evicts least
    /// recently used entries of that shard until the shard is within budget.
    /// A value charged more than the shard's whole budget is not cached (and
    /// any older value under `key` is still removed, so `get` never returns a
    /// value older than the last insert).
    pub fn insert(&self, key: CacheKey, value: V, charge: usize) {
        let mut garbage = Vec::new();
        self.shard(key)
            .lock()
            .insert(key, value, charge, &mut garbage);
        // The lock is released here; freeing the evicted values (possibly
        // large blocks) happens outside it.
        drop(garbage);
    }

    /// Removes `key` if it is cached.
    pub fn erase(&self, key: CacheKey) {
        let old = self.shard(key).lock().erase(key);
        drop(old);
    }

    /// Removes every entry whose key has cache id `id` (a table reader being
    /// dropped). Visits only that id's entries (through each shard's chain
    /// for the id), taking each shard's lock once.
    pub fn erase_id(&self, id: u64) {
        let mut garbage = Vec::new();
        for shard in self.shards.iter() {
            shard.lock().erase_id(id, &mut garbage);
            // The values are freed outside the lock.
            garbage.clear();
        }
    }

    /// Sum of the charges of the cached entries.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().usage).sum()
    }

    /// The byte budget given at construction.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of cached entries.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hit, miss, insert and eviction counts, summed over the shards.
    pub fn stats(&self) -> CacheStats {
        let mut total = CacheStats::default();
        for shard in self.shards.iter() {
            total.add(&shard.lock().stats);
        }
        total
    }

    fn shard(&self, key: CacheKey) -> &Mutex<Shard<V>> {
        let i = hash_key(key, SHARD_SEED) & self.shard_mask;
        &self.shards[i as usize]
    }
}

impl<V: Clone + Send + Sync> fmt::Debug for LruCache<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LruCache")
            .field("capacity", &self.capacity)
            .field("usage", &self.usage())
            .field("len", &self.len())
            .field("shards", &self.shards.len())
            .finish()
    }
}

/// Aligns each shard's lock to its own cache lines, so threads working on
/// neighbouring shards do not invalidate each other's lines. 128 bytes because
/// common x86-64 and ARM cores fetch lines in adjacent pairs.
#[repr(align(128))]
struct CachePadded<T>(T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// One shard: a map from key to slot plus the recency list. All fields are
/// protected by the shard's mutex, so the counters need no atomics.
struct Shard<V> {
    map: HashMap<CacheKey, usize, KeyHashBuilder>,
    list: SlotList<V>,
    usage: usize,
    capacity: usize,
    stats: CacheStats,
}

impl<V: Clone> Shard<V> {
    fn new(capacity: usize) -> Self {
        Shard {
            map: HashMap::with_hasher(KeyHashBuilder { seed: MAP_SEED }),
            list: SlotList::new(),
            usage: 0,
            capacity,
            stats: CacheStats::default(),
        }
    }

    fn get(&mut self, key: CacheKey) -> Option<V> {
        match self.map.get(&key) {
            Some(&idx) => {
                self.stats.hits += 1;
                self.list.move_to_front(idx);
                Some(self.list.value(idx).clone())
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    fn insert(&mut self, key: CacheKey, value: V, charge: usize, garbage: &mut Vec<V>) {
        garbage.extend(self.erase(key));
        if charge > self.capacity {
            return;
        }
        // Written as a subtraction so a budget near usize::MAX cannot
        // overflow. The loop ends: while usage > capacity - charge >= 0 some
        // entry has a positive charge, so the list is not empty.
        while self.usage > self.capacity - charge {
            let idx = self.list.tail;
            let (old_key, old_value, old_charge) = self.list.remove(idx);
            self.map.remove(&old_key);
            self.usage -= old_charge;
            self.stats.evictions += 1;
            garbage.push(old_value);
        }
        let idx = self.list.push_front(key, value, charge);
        self.map.insert(key, idx);
        self.usage += charge;
        self.stats.inserts += 1;
    }

    /// Removes `key`, returning its value so the caller can drop it after
    /// releasing the lock.
    fn erase(&mut self, key: CacheKey) -> Option<V> {
        let idx = self.map.remove(&key)?;
        let (_, value, charge) = self.list.remove(idx);
        self.usage -= charge;
        Some(value)
    }

    /// Removes every entry of `id`, walking only its chain. Returns how
    /// many slots it visited (the entries removed), which the tests check.
    fn erase_id(&mut self, id: u64, garbage: &mut Vec<V>) -> usize {
        let Some(mut idx) = self.list.ids.remove(&id) else {
            return 0;
        };
        let mut visited = 0;
        while idx != NIL {
            let next = self.list.slots[idx].id_next;
            // The whole chain goes, so its links need no repair.
            let (key, value, charge) = self.list.remove_unchained(idx);
            self.map.remove(&key);
            self.usage -= charge;
            garbage.push(value);
            visited += 1;
            idx = next;
        }
        visited
    }
}

/// "No slot": the end of a list.
const NIL: usize = usize::MAX;

struct Slot<V> {
    key: CacheKey,
    /// `None` exactly while the slot is on the free list.
    value: Option<V>,
    charge: usize,
    /// Neighbour towards the most recently used end.
    prev: usize,
    /// Neighbour towards the least recently used end; the next free slot while
    /// on the free list.
    next: usize,
    /// Neighbours on the chain of the entries with this key's id (newer,
    /// older); meaningless while free.
    id_prev: usize,
    id_next: usize,
}

/// An intrusive doubly-linked recency list whose nodes live in a `Vec`, linked
/// by index, and beside it one doubly-linked chain per cache id of that id's
/// live slots (newest first), so an id's entries are found without a walk of
/// the shard. Freed slots are chained through `next` and reused, so the
/// `Vec` never grows past the shard's largest entry count.
struct SlotList<V> {
    slots: Vec<Slot<V>>,
    /// Most recently used.
    head: usize,
    /// Least recently used: the next to evict.
    tail: usize,
    free: usize,
    /// The first slot of each id's chain, for every id with a live slot.
    ids: HashMap<u64, usize, KeyHashBuilder>,
}

impl<V> SlotList<V> {
    fn new() -> Self {
        SlotList {
            slots: Vec::new(),
            head: NIL,
            tail: NIL,
            free: NIL,
            ids: HashMap::with_hasher(KeyHashBuilder { seed: ID_SEED }),
        }
    }

    fn value(&self, idx: usize) -> &V {
        self.slots[idx]
            .value
            .as_ref()
            .expect("the map names only live slots")
    }

    /// Stores an entry in a free slot (or a new one) at the front, and at
    /// the front of its id's chain.
    fn push_front(&mut self, key: CacheKey, value: V, charge: usize) -> usize {
        let slot = Slot {
            key,
            value: Some(value),
            charge,
            prev: NIL,
            next: NIL,
            id_prev: NIL,
            id_next: NIL,
        };
        let idx = if self.free == NIL {
            self.slots.push(slot);
            self.slots.len() - 1
        } else {
            let idx = self.free;
            self.free = self.slots[idx].next;
            self.slots[idx] = slot;
            idx
        };
        self.link_front(idx);
        if let Some(first) = self.ids.insert(key.0, idx) {
            self.slots[idx].id_next = first;
            self.slots[first].id_prev = idx;
        }
        idx
    }

    /// Unlinks a live slot from the recency list and its id's chain, frees
    /// it, and returns its contents.
    fn remove(&mut self, idx: usize) -> (CacheKey, V, usize) {
        let Slot {
            key,
            id_prev,
            id_next,
            ..
        } = self.slots[idx];
        if id_prev == NIL {
            // The chain's first slot: the map names the next one, if any.
            if id_next == NIL {
                self.ids.remove(&key.0);
            } else {
                self.ids.insert(key.0, id_next);
            }
        } else {
            self.slots[id_prev].id_next = id_next;
        }
        if id_next != NIL {
            self.slots[id_next].id_prev = id_prev;
        }
        self.remove_unchained(idx)
    }

    /// `remove`, leaving the id chain's links alone: for a caller that
    /// removes the whole chain (and has taken it out of `ids`).
    fn remove_unchained(&mut self, idx: usize) -> (CacheKey, V, usize) {
        self.unlink(idx);
        let slot = &mut self.slots[idx];
        let value = slot.value.take().expect("removing a live slot");
        slot.next = self.free;
        self.free = idx;
        (slot.key, value, slot.charge)
    }

    fn move_to_front(&mut self, idx: usize) {
        if self.head != idx {
            self.unlink(idx);
            self.link_front(idx);
        }
    }

    fn unlink(&mut self, idx: usize) {
        let (prev, next) = (self.slots[idx].prev, self.slots[idx].next);
        if prev == NIL {
            self.head = next;
        } else {
            self.slots[prev].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.slots[next].prev = prev;
        }
    }

    fn link_front(&mut self, idx: usize) {
        self.slots[idx].prev = NIL;
        self.slots[idx].next = self.head;
        if self.head == NIL {
            self.tail = idx;
        } else {
            self.slots[self.head].prev = idx;
        }
        self.head = idx;
    }
}

/// 64-bit murmur3 finalizer: a bijection that spreads every input bit over
/// every output bit.
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Multiplier folding each word into the state (odd, so the fold is a
/// bijection of the word for a fixed state).
const FOLD: u64 = 0x9e37_79b9_7f4a_7c15;

/// Hash of a key. For a fixed cache id it is a bijection of the offset, so the
/// blocks of one file never collide. Keys are made by the engine, not by an
/// adversary, so a keyed hash (SipHash) would only cost time.
fn hash_key(key: CacheKey, seed: u64) -> u64 {
    let mut h = KeyHasher { state: seed };
    key.hash(&mut h);
    h.finish()
}

#[derive(Clone, Copy)]
struct KeyHashBuilder {
    seed: u64,
}

impl BuildHasher for KeyHashBuilder {
    type Hasher = KeyHasher;

    fn build_hasher(&self) -> KeyHasher {
        KeyHasher { state: self.seed }
    }
}

/// A `(u64, u64)` hashes as two `write_u64` calls (tuples add no length
/// prefix); each is folded in with a multiply and `finish` mixes the result.
struct KeyHasher {
    state: u64,
}

impl Hasher for KeyHasher {
    fn write_u64(&mut self, x: u64) {
        self.state = (self.state ^ x).wrapping_mul(FOLD);
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not reached for `CacheKey`; here so any key type hashes correctly.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn finish(&self) -> u64 {
        fmix64(self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    impl<V: Clone + Send + Sync> LruCache<V> {
        /// Checks every shard's invariants (see the module documentation).
        fn check_invariants(&self) {
            let mut total_capacity = 0;
            for (i, shard) in self.shards.iter().enumerate() {
                let s = shard.lock();
                total_capacity += s.capacity;
                assert!(s.usage <= s.capacity, "shard {i} over budget");
                let mut seen = 0;
                let mut sum = 0;
                let mut prev = NIL;
                let mut idx = s.list.head;
                while idx != NIL {
                    let slot = &s.list.slots[idx];
                    assert_eq!(slot.prev, prev, "shard {i}: broken back link");
                    assert!(slot.value.is_some(), "shard {i}: free slot on list");
                    assert_eq!(s.map.get(&slot.key), Some(&idx), "shard {i}: map");
                    let home = hash_key(slot.key, SHARD_SEED) & self.shard_mask;
                    assert_eq!(home as usize, i, "key in the wrong shard");
                    sum += slot.charge;
                    seen += 1;
                    prev = idx;
                    idx = slot.next;
                }
                assert_eq!(s.list.tail, prev, "shard {i}: tail");
                assert_eq!(seen, s.map.len(), "shard {i}: list vs map length");
                assert_eq!(sum, s.usage, "shard {i}: usage vs charges");
                let mut free = 0;
                let mut idx = s.list.free;
                while idx != NIL {
                    assert!(s.list.slots[idx].value.is_none());
                    free += 1;
                    idx = s.list.slots[idx].next;
                }
                assert_eq!(seen + free, s.list.slots.len(), "shard {i}: lost slots");
                // The id chains: each starts where `ids` says and links back,
                // holds live slots of its own id only, and together they hold
                // as many slots as the recency list (so each live slot once).
                let mut chained = 0;
                for (&id, &first) in &s.list.ids {
                    let (mut prev, mut idx) = (NIL, first);
                    assert_ne!(idx, NIL, "shard {i}: id {id} has an empty chain");
                    while idx != NIL {
                        let slot = &s.list.slots[idx];
                        assert!(slot.value.is_some(), "shard {i}: free slot chained");
                        assert_eq!(slot.key.0, id, "shard {i}: on another id's chain");
                        assert_eq!(slot.id_prev, prev, "shard {i}: broken id back link");
                        chained += 1;
                        assert!(chained <= seen, "shard {i}: an id chain loops");
                        prev = idx;
                        idx = slot.id_next;
                    }
                }
                assert_eq!(chained, seen, "shard {i}: chained vs live slots");
            }
            assert_eq!(total_capacity, self.capacity);
        }

        /// Every entry, by key: (value, charge). Reads the shards without
        /// touching recency or the counters.
        fn entries(&self) -> BTreeMap<CacheKey, (V, usize)> {
            let mut all = BTreeMap::new();
            for shard in self.shards.iter() {
                let s = shard.lock();
                for (&key, &idx) in &s.map {
                    all.insert(key, (s.list.value(idx).clone(), s.list.slots[idx].charge));
                }
            }
            all
        }

        /// `erase_id`, returning how many slots the shards visited.
        fn erase_id_visits(&self, id: u64) -> usize {
            let mut garbage = Vec::new();
            self.shards
                .iter()
                .map(|s| s.lock().erase_id(id, &mut garbage))
                .sum()
        }

        /// Keys of a one-shard cache, most recently used first.
        fn keys_mru_first(&self) -> Vec<CacheKey> {
            assert_eq!(self.shards.len(), 1);
            let s = self.shards[0].lock();
            let mut keys = Vec::new();
            let mut idx = s.list.head;
            while idx != NIL {
                keys.push(s.list.slots[idx].key);
                idx = s.list.slots[idx].next;
            }
            keys
        }
    }

    /// The obvious LRU: a `Vec` ordered from least to most recently used.
    struct Model {
        capacity: usize,
        entries: Vec<(CacheKey, u64, usize)>,
        stats: CacheStats,
    }

    impl Model {
        fn usage(&self) -> usize {
            self.entries.iter().map(|e| e.2).sum()
        }

        fn position(&self, key: CacheKey) -> Option<usize> {
            self.entries.iter().position(|e| e.0 == key)
        }

        fn get(&mut self, key: CacheKey) -> Option<u64> {
            match self.position(key) {
                Some(i) => {
                    self.stats.hits += 1;
                    let e = self.entries.remove(i);
                    self.entries.push(e);
                    Some(e.1)
                }
                None => {
                    self.stats.misses += 1;
                    None
                }
            }
        }

        fn insert(&mut self, key: CacheKey, value: u64, charge: usize) {
            self.erase(key);
            if charge > self.capacity {
                return;
            }
            self.entries.push((key, value, charge));
            self.stats.inserts += 1;
            while self.usage() > self.capacity {
                self.entries.remove(0);
                self.stats.evictions += 1;
            }
        }

        fn erase(&mut self, key: CacheKey) {
            if let Some(i) = self.position(key) {
                self.entries.remove(i);
            }
        }

        fn erase_id(&mut self, id: u64) {
            self.entries.retain(|e| e.0 .0 != id);
        }

        fn keys_mru_first(&self) -> Vec<CacheKey> {
            self.entries.iter().rev().map(|e| e.0).collect()
        }
    }

    #[test]
    fn matches_a_reference_model_under_random_operations() {
        for seed in 0..300u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let capacity = [0, 1, 7, 100, 1000][seed as usize % 5];
            let cache = LruCache::with_shards(capacity, 0);
            let mut model = Model {
                capacity,
                entries: Vec::new(),
                stats: CacheStats::default(),
            };
            for step in 0..1500 {
                // A small key space, so keys are hit, replaced and evicted.
                let key = (rng.gen_range(0..3u64), rng.gen_range(0..8u64) * 4096);
                let what = rng.gen_range(0..100);
                let ctx = format!("seed {seed} step {step} op {what} key {key:?}");
                if what < 45 {
                    assert_eq!(cache.get(key), model.get(key), "{ctx}");
                } else if what < 85 {
                    let value = rng.gen::<u64>();
                    let charge = if rng.gen_ratio(1, 20) {
                        capacity + rng.gen_range(1..100)
                    } else {
                        rng.gen_range(0..=capacity / 3 + 1)
                    };
                    cache.insert(key, value, charge);
                    model.insert(key, value, charge);
                } else if what < 95 {
                    cache.erase(key);
                    model.erase(key);
                } else {
                    cache.erase_id(key.0);
                    model.erase_id(key.0);
                }
                assert_eq!(cache.usage(), model.usage(), "{ctx}");
                assert_eq!(cache.len(), model.entries.len(), "{ctx}");
                assert_eq!(cache.keys_mru_first(), model.keys_mru_first(), "{ctx}");
                assert_eq!(cache.stats(), model.stats, "{ctx}");
                cache.check_invariants();
            }
        }
    }

    #[test]
    fn usage_never_exceeds_capacity_after_an_insert() {
        let mut rng = StdRng::seed_from_u64(7);
        for bits in [0, 1, 3, 6] {
            for capacity in [0, 5, 1000, 100_003] {
                let cache = LruCache::with_shards(capacity, bits);
                for _ in 0..3000 {
                    let key = (rng.gen_range(0..4), rng.gen_range(0..500));
                    let charge = rng.gen_range(0..=capacity / 4 + 2);
                    cache.insert(key, key.1, charge);
                    assert!(cache.usage() <= capacity, "{} > {capacity}", cache.usage());
                }
                cache.check_invariants();
                assert_eq!(cache.capacity(), capacity);
            }
        }
    }

    #[test]
    fn evicts_the_least_recently_used_entry() {
        let cache = LruCache::with_shards(3, 0);
        let (a, b, c, d) = ((1, 0), (1, 1), (1, 2), (2, 0));
        cache.insert(a, "a", 1);
        cache.insert(b, "b", 1);
        cache.insert(c, "c", 1);
        // A hit makes `a` the most recent, so `b` is now the oldest.
        assert_eq!(cache.get(a), Some("a"));
        cache.insert(d, "d", 1);
        assert_eq!(cache.get(b), None);
        assert_eq!(cache.get(c), Some("c"));
        assert_eq!(cache.get(a), Some("a"));
        assert_eq!(cache.get(d), Some("d"));
        // Order is now c, a, d (oldest first). A charge-2 entry evicts two.
        cache.insert(b, "b", 2);
        assert_eq!(cache.get(c), None);
        assert_eq!(cache.get(a), None);
        assert_eq!(cache.get(d), Some("d"));
        assert_eq!(cache.get(b), Some("b"));
        assert_eq!(cache.usage(), 3);
        assert_eq!(cache.stats().evictions, 3);
    }

    #[test]
    fn replacing_a_key_updates_value_charge_and_recency() {
        let cache = LruCache::with_shards(10, 0);
        cache.insert((1, 0), 1, 4);
        cache.insert((1, 1), 2, 4);
        cache.insert((1, 0), 3, 2);
        assert_eq!(cache.usage(), 6);
        assert_eq!(cache.len(), 2);
        // (1, 0) is the most recent now, so (1, 1) goes first.
        cache.insert((1, 2), 4, 5);
        assert_eq!(cache.get((1, 1)), None);
        assert_eq!(cache.get((1, 0)), Some(3));
        assert_eq!(cache.stats().evictions, 1);
    }

    #[test]
    fn oversized_entries_are_not_cached() {
        let cache = LruCache::with_shards(10, 0);
        cache.insert((1, 0), 1, 5);
        cache.insert((1, 1), 2, 11);
        assert_eq!(cache.get((1, 1)), None);
        assert_eq!(
            cache.get((1, 0)),
            Some(1),
            "a rejected insert evicts nothing"
        );
        assert_eq!(cache.usage(), 5);
        // An entry exactly the size of the budget fits.
        cache.insert((1, 1), 2, 10);
        assert_eq!(cache.get((1, 1)), Some(2));
        assert_eq!(cache.get((1, 0)), None);
        // An oversized replacement removes the stale value.
        cache.insert((1, 1), 3, 11);
        assert_eq!(cache.get((1, 1)), None);
        assert!(cache.is_empty());
        assert_eq!(cache.usage(), 0);
        assert_eq!(cache.stats().inserts, 2);

        // The limit is one shard's share, not the whole budget.
        let sharded = LruCache::with_shards(64, 2);
        for offset in 0..100 {
            sharded.insert((1, offset), offset, 17);
        }
        assert!(sharded.is_empty());
        sharded.insert((1, 0), 0, 16);
        assert_eq!(sharded.get((1, 0)), Some(0));
    }

    #[test]
    fn erase_id_removes_exactly_that_ids_entries() {
        let cache = LruCache::with_shards(1 << 20, 3);
        let ids: Vec<u64> = (0..4).map(|_| cache.new_id()).collect();
        for &id in &ids {
            for offset in 0..200 {
                cache.insert((id, offset * 4096), id * 1000 + offset, 10 + id as usize);
            }
        }
        let before = cache.usage();
        cache.erase_id(ids[2]);
        cache.check_invariants();
        assert_eq!(cache.usage(), before - 200 * (10 + ids[2] as usize));
        assert_eq!(cache.len(), 600);
        for &id in &ids {
            for offset in 0..200 {
                let got = cache.get((id, offset * 4096));
                if id == ids[2] {
                    assert_eq!(got, None);
                } else {
                    assert_eq!(got, Some(id * 1000 + offset));
                }
            }
        }
        cache.erase_id(12345);
        assert_eq!(cache.len(), 600);
    }

    /// Erasing one id visits that id's entries and nothing else (each
    /// shard walks the id's chain; it used to walk every entry of every
    /// shard), and leaves every other id's entries and the usage exactly as
    /// they were; an id with nothing cached costs no visit. The cache has
    /// seen replacements and evictions first, which the chains must follow.
    #[test]
    fn erase_id_visits_only_that_ids_entries_and_leaves_the_rest_exact() {
        use rand::seq::SliceRandom;
        let mut rng = StdRng::seed_from_u64(11);
        let cache = LruCache::with_shards(40_000, 3);
        let mut ids: Vec<u64> = (0..30).map(|_| cache.new_id()).collect();
        for _ in 0..20_000 {
            let id = ids[rng.gen_range(0..ids.len())];
            let offset = rng.gen_range(0..200u64) * 4096;
            cache.insert((id, offset), id << 32 | offset, rng.gen_range(1..20));
        }
        let s = cache.stats();
        assert!(s.evictions > 0 && s.inserts > 0, "{s:?}");
        cache.check_invariants();
        let absent = cache.new_id();
        ids.push(absent);
        ids.shuffle(&mut rng);
        assert!(cache.len() > 1000, "{}", cache.len());
        for (n, &id) in ids.iter().enumerate() {
            let before = cache.entries();
            let (gone, kept): (BTreeMap<_, _>, BTreeMap<_, _>) =
                before.into_iter().partition(|(k, _)| k.0 == id);
            if id == absent {
                assert!(gone.is_empty());
            }
            assert_eq!(cache.erase_id_visits(id), gone.len(), "id {id}");
            cache.check_invariants();
            assert_eq!(cache.entries(), kept, "id {id}: the others untouched");
            let usage: usize = kept.values().map(|v| v.1).sum();
            assert_eq!(cache.usage(), usage, "id {id}");
            assert_eq!(cache.len(), kept.len());
            // New entries for the erased id chain up again.
            if n % 7 == 0 {
                cache.insert((id, 0), 1, 1);
                cache.check_invariants();
                cache.erase_id(id);
            }
        }
        assert!(cache.is_empty());
        assert_eq!(cache.usage(), 0);
    }

    #[test]
    fn erase_removes_one_entry() {
        let cache = LruCache::with_shards(100, 1);
        cache.insert((1, 0), 'a', 3);
        cache.insert((1, 1), 'b', 4);
        cache.erase((1, 0));
        cache.erase((9, 9));
        assert_eq!(cache.get((1, 0)), None);
        assert_eq!(cache.get((1, 1)), Some('b'));
        assert_eq!(cache.usage(), 4);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn new_ids_are_unique() {
        let cache = Arc::new(LruCache::<u8>::new(1 << 20));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || (0..1000).map(|_| cache.new_id()).collect::<Vec<_>>())
            })
            .collect();
        let mut all: Vec<u64> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 4000);
    }

    #[test]
    fn stats_add_up() {
        let mut rng = StdRng::seed_from_u64(3);
        let cache = LruCache::with_shards(500, 2);
        let (mut gets, mut hits, mut inserts) = (0, 0, 0);
        for _ in 0..10_000 {
            let key = (1, rng.gen_range(0..100));
            if rng.gen_bool(0.5) {
                gets += 1;
                hits += u64::from(cache.get(key).is_some());
            } else {
                cache.insert(key, 0u32, rng.gen_range(1..20));
                inserts += 1;
            }
        }
        let s = cache.stats();
        assert_eq!(s.hits + s.misses, gets);
        assert_eq!(s.hits, hits);
        assert_eq!(s.inserts, inserts, "every charge fits a 125-byte shard");
        // Every insert is either still cached, evicted, or replaced the same
        // key (replacements are neither evictions nor new entries).
        assert!(s.evictions > 0);
        assert!(s.evictions + cache.len() as u64 <= s.inserts);
    }

    #[test]
    fn handed_out_values_outlive_eviction() {
        let cache = LruCache::with_shards(100, 0);
        cache.insert((1, 0), Arc::new(vec![7u8; 100]), 100);
        let pinned = cache.get((1, 0)).unwrap();
        assert_eq!(Arc::strong_count(&pinned), 2);
        cache.insert((1, 1), Arc::new(vec![8u8; 100]), 100);
        assert_eq!(cache.get((1, 0)), None);
        // The cache let go of it; the reader's copy is still whole.
        assert_eq!(Arc::strong_count(&pinned), 1);
        assert_eq!(*pinned, vec![7u8; 100]);
    }

    #[test]
    fn new_picks_shard_count_from_capacity() {
        let shards = |cap: usize| LruCache::<u8>::new(cap).shards.len();
        assert_eq!(shards(0), 1);
        assert_eq!(shards(512 * 1024), 1);
        assert_eq!(shards(1024 * 1024 - 1), 1);
        assert_eq!(shards(1024 * 1024), 2);
        assert_eq!(shards(8 << 20), 16);
        assert_eq!(shards(32 << 20), 64);
        assert_eq!(shards(1 << 40), 64);
        LruCache::<u8>::with_shards(1001, 3).check_invariants();
    }

    #[test]
    fn sequential_blocks_spread_over_shards() {
        let cache = LruCache::<u8>::with_shards(1 << 30, 6);
        let mut counts = [0usize; 64];
        for id in 1..5u64 {
            for block in 0..16_000u64 {
                let i = hash_key((id, block * 4096), SHARD_SEED) & cache.shard_mask;
                counts[i as usize] += 1;
            }
        }
        let mean = 64_000 / 64;
        for (i, &c) in counts.iter().enumerate() {
            assert!(c > mean * 8 / 10 && c < mean * 12 / 10, "shard {i}: {c}");
        }
    }

    #[test]
    fn concurrent_gets_and_inserts_stay_within_budget() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<LruCache<Arc<Vec<u8>>>>();

        let capacity = 64 * 1024;
        let cache = Arc::new(LruCache::<Arc<Vec<u8>>>::with_shards(capacity, 2));
        let per_thread_gets = 50_000;
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || {
                    let mut rng = StdRng::seed_from_u64(t);
                    for _ in 0..per_thread_gets {
                        let key = (rng.gen_range(0..4), rng.gen_range(0..256));
                        match cache.get(key) {
                            // Every value is derived from its key, so a hit
                            // returning another key's value shows up here.
                            Some(v) => assert_eq!(v[0], (key.0 * 31 + key.1) as u8),
                            None => {
                                let len = rng.gen_range(1..2048);
                                let v = Arc::new(vec![(key.0 * 31 + key.1) as u8; len]);
                                cache.insert(key, v, len);
                            }
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(cache.usage() <= capacity);
        let s = cache.stats();
        assert_eq!(s.hits + s.misses, 4 * per_thread_gets);
        cache.check_invariants();
    }
}
