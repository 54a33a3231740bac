//! A batch of one index's entries from one chunk, held in one arena.
//!
//! Owns [`EntryBatch`]: the keys and values of every entry lie back to
//! back in ONE byte buffer, and each entry is a fixed-size record of
//! offsets ([`Slot`]). Parsing a chunk then costs two allocations per
//! index (the buffer and the slots, both growing geometrically) instead
//! of two per entry, freeing it is two `free`s, and its memory is known
//! exactly ([`EntryBatch::charge`]): what the `--memory` budget counts is
//! what the batch holds. Invariants: slot `i`'s key and value lie inside
//! `bytes`, entries keep the order they were pushed in (input order).

use crate::parse::{Entry, EntryRef, Src};

/// Where one entry lies in its batch's buffer, and its source row.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Offset of the key; the value follows it.
    off: usize,
    klen: u32,
    vlen: u32,
    /// The row it came from.
    pub src: Src,
    /// A deletion (see [`Entry::delete`]).
    pub delete: bool,
}

/// Bytes the sort needs per entry (its `(key head, batch, entry)` pair),
/// charged with the entry so sorting never goes over the budget.
pub const SORT_PAIR: usize = std::mem::size_of::<(u128, u32, u32)>();

/// Entries of one index in input order, in one arena (see the module
/// documentation).
#[derive(Debug, Default)]
pub struct EntryBatch {
    bytes: Vec<u8>,
    slots: Vec<Slot>,
    /// Length of the prefix every key of the batch shares (kept as keys
    /// are pushed, while each is in the cache; the sort skips it).
    shared: usize,
    /// At least the longest key and the longest value pushed (kept as
    /// they are pushed, so a sorted run's size is bounded without a pass
    /// over the slots, `sort`).
    longest: (u32, u32),
}

impl EntryBatch {
    /// An empty batch with room for about `bytes` of keys and values and
    /// `entries` entries.
    pub fn with_capacity(bytes: usize, entries: usize) -> EntryBatch {
        EntryBatch {
            bytes: Vec::with_capacity(bytes),
            slots: Vec::with_capacity(entries),
            shared: 0,
            longest: (0, 0),
        }
    }

    /// Appends one entry.
    pub fn push(&mut self, key: &[u8], value: &[u8], src: Src, delete: bool) {
        let off = self.bytes.len();
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
        self.note_key(off, key.len());
        self.note_lengths(key.len() as u32, value.len() as u32);
        self.slots.push(Slot {
            off,
            klen: key.len() as u32,
            vlen: value.len() as u32,
            src,
            delete,
        });
    }

    /// Appends one entry that `encode` writes in place: it appends the key
    /// and then the value to the buffer it is given and returns the key's
    /// length (no staging copy of either).
    pub fn push_encoded(
        &mut self,
        src: Src,
        delete: bool,
        encode: impl FnOnce(&mut Vec<u8>) -> usize,
    ) {
        let off = self.bytes.len();
        let klen = encode(&mut self.bytes);
        let len = self.bytes.len() - off;
        let klen = klen.min(len);
        self.note_key(off, klen);
        self.note_lengths(klen as u32, (len - klen) as u32);
        self.slots.push(Slot {
            off,
            klen: klen as u32,
            vlen: (len - klen) as u32,
            src,
            delete,
        });
    }

    /// Updates the shared prefix for a key about to get a slot (at `off`,
    /// `klen` bytes).
    fn note_key(&mut self, off: usize, klen: usize) {
        let key = &self.bytes[off..off + klen];
        self.shared = match self.slots.first() {
            None => klen,
            Some(f) => {
                let first = &self.bytes[f.off..f.off + (f.klen as usize).min(self.shared)];
                common_len(first, key)
            }
        };
    }

    /// Keeps the longest key and value lengths.
    fn note_lengths(&mut self, klen: u32, vlen: u32) {
        self.longest = (self.longest.0.max(klen), self.longest.1.max(vlen));
    }

    /// At least the longest key's and the longest value's lengths (what
    /// was pushed since the batch was made or cleared; a split may leave
    /// it larger than what the batch still holds).
    pub fn longest(&self) -> (u32, u32) {
        self.longest
    }

    /// The length of the prefix every key of the batch shares (0 for an
    /// empty batch).
    pub fn shared_prefix(&self) -> usize {
        if self.slots.is_empty() {
            0
        } else {
            self.shared
        }
    }

    /// Empties the batch, keeping its buffers (see `pool`).
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.slots.clear();
        self.shared = 0;
        self.longest = (0, 0);
    }

    /// Makes room for at least `bytes` more key and value bytes and
    /// `entries` more entries.
    pub fn reserve(&mut self, bytes: usize, entries: usize) {
        self.bytes.reserve(bytes);
        self.slots.reserve(entries);
    }

    /// Maps in the pages of both buffers' spare capacity at once
    /// (`pool::map_in`).
    pub fn map_in(&mut self) {
        crate::pool::map_in(&mut self.bytes);
        crate::pool::map_in(&mut self.slots);
    }

    /// Gives back unused capacity (after the last push).
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.slots.shrink_to_fit();
    }

    /// Bytes of keys and values the batch holds.
    pub fn used(&self) -> usize {
        self.bytes.len()
    }

    /// Entries in the batch.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the batch has no entries.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The slots, in input order.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Entry `i`'s key.
    pub fn key(&self, i: usize) -> &[u8] {
        self.key_of(&self.slots[i])
    }

    /// Entry `i`'s value.
    pub fn value(&self, i: usize) -> &[u8] {
        self.value_of(&self.slots[i])
    }

    /// The key of a slot of this batch.
    pub fn key_of(&self, s: &Slot) -> &[u8] {
        &self.bytes[s.off..s.off + s.klen as usize]
    }

    /// The value of a slot of this batch.
    pub fn value_of(&self, s: &Slot) -> &[u8] {
        let at = s.off + s.klen as usize;
        &self.bytes[at..at + s.vlen as usize]
    }

    /// Entry `i`'s key and value, back to back.
    pub fn entry_bytes(&self, i: usize) -> &[u8] {
        let s = &self.slots[i];
        &self.bytes[s.off..s.off + s.klen as usize + s.vlen as usize]
    }

    /// Entry `i` as an owned [`Entry`] (for the merge's groups).
    pub fn entry(&self, i: usize) -> Entry {
        let s = &self.slots[i];
        Entry {
            key: self.key_of(s).to_vec(),
            value: self.value_of(s).to_vec(),
            src: s.src,
            delete: s.delete,
        }
    }

    /// Entry `i`, borrowed from the batch.
    pub fn entry_ref(&self, i: usize) -> EntryRef<'_> {
        let s = &self.slots[i];
        EntryRef {
            key: self.key_of(s),
            value: self.value_of(s),
            src: s.src,
            delete: s.delete,
        }
    }

    /// Splits off the entries from `at` on into a new batch (a write
    /// batch of `--mode batch` ends inside a chunk).
    pub fn split_off(&mut self, at: usize) -> EntryBatch {
        let mut rest = EntryBatch::default();
        for s in self.slots.get(at..).unwrap_or_default() {
            rest.push(self.key_of(s), self.value_of(s), s.src, s.delete);
        }
        if let Some(s) = self.slots.get(at) {
            self.bytes.truncate(s.off);
        }
        self.slots.truncate(at);
        rest
    }

    /// Bytes charged to the memory budget: what the batch holds (its
    /// buffers' capacities) plus the sort's pair for each entry.
    pub fn charge(&self) -> usize {
        self.bytes.capacity()
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.slots.len() * SORT_PAIR
    }
}

/// The length of the longest common prefix of `a` and `b`.
pub fn common_len(a: &[u8], b: &[u8]) -> usize {
    // Eight bytes at a time (the first differing byte is the lowest set
    // byte of the little-endian XOR): this runs for every key pushed into
    // a batch, and a byte loop over keys that share 15-20 bytes was a
    // visible part of encoding and of the merge's hand-off.
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut at = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let (mut u, mut v) = ([0u8; 8], [0u8; 8]);
        u.copy_from_slice(x);
        v.copy_from_slice(y);
        let d = u64::from_le_bytes(u) ^ u64::from_le_bytes(v);
        if d != 0 {
            return at + (d.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + a[at..]
        .iter()
        .zip(&b[at..])
        .take_while(|(x, y)| x == y)
        .count()
}

impl<'a> IntoIterator for &'a EntryBatch {
    type Item = Entry;
    type IntoIter = Box<dyn Iterator<Item = Entry> + 'a>;

    /// Every entry as an owned [`Entry`], in input order (for checks and
    /// tests; the import itself reads the slices).
    fn into_iter(self) -> Self::IntoIter {
        Box::new((0..self.len()).map(|i| self.entry(i)))
    }
}

impl FromIterator<Entry> for EntryBatch {
    fn from_iter<I: IntoIterator<Item = Entry>>(it: I) -> EntryBatch {
        let mut b = EntryBatch::default();
        for e in it {
            b.push(&e.key, &e.value, e.src, e.delete);
        }
        b
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    fn src(line: u64) -> Src {
        Src { file: 0, line }
    }

    /// The charge is what the batch holds: both buffers' capacities, plus
    /// a sort pair per entry; it grows with every entry.
    #[test]
    fn charge_counts_buffers_and_sort_pairs() {
        let mut b = EntryBatch::with_capacity(100, 4);
        let slot = std::mem::size_of::<Slot>();
        assert_eq!(b.charge(), 100 + 4 * slot);
        b.push(b"key1", b"value1", src(1), false);
        b.push(b"k2", b"", src(2), true);
        assert_eq!(b.charge(), 100 + 4 * slot + 2 * SORT_PAIR);
        // Past the reserved room the real capacities count.
        for i in 0..10u64 {
            b.push(&[7u8; 30], &i.to_be_bytes(), src(3 + i), false);
        }
        assert!(b.charge() >= 12 * (slot + SORT_PAIR) + 4 + 6 + 2 + 10 * 38);
        assert_eq!(
            b.charge(),
            b.bytes.capacity() + b.slots.capacity() * slot + 12 * SORT_PAIR
        );
    }

    /// The shared prefix kept while pushing is the keys' longest common
    /// prefix, through pushes, splits and clears.
    #[test]
    fn shared_prefix_is_the_keys_common_prefix() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for _ in 0..300 {
            let mut b = EntryBatch::default();
            let n = rng.gen_range(0..40);
            let keys: Vec<Vec<u8>> = (0..n)
                .map(|_| {
                    let len = rng.gen_range(0..12);
                    (0..len).map(|_| rng.gen_range(0..3u8)).collect()
                })
                .collect();
            for (i, k) in keys.iter().enumerate() {
                if i % 2 == 0 {
                    b.push(k, b"v", src(i as u64), false);
                } else {
                    b.push_encoded(src(i as u64), false, |out| {
                        out.extend_from_slice(k);
                        out.extend_from_slice(b"val");
                        k.len()
                    });
                }
            }
            let brute = |ks: &[Vec<u8>]| match ks.first() {
                None => 0,
                Some(f) => ks.iter().map(|k| common_len(f, k)).min().unwrap_or(0),
            };
            assert_eq!(b.shared_prefix(), brute(&keys), "{keys:?}");
            let at = rng.gen_range(0..=n);
            let rest = b.split_off(at);
            assert_eq!(rest.shared_prefix(), brute(&keys[at..]), "{keys:?} at {at}");
            // What stays keeps a prefix its keys share (maybe shorter).
            assert!(b.shared_prefix() <= brute(&keys[..at]), "{keys:?} at {at}");
            b.clear();
            assert_eq!(b.shared_prefix(), 0);
        }
    }

    /// Keys and values read back as pushed, and a split keeps both halves
    /// whole.
    #[test]
    fn entries_read_back_and_split() {
        let mut b = EntryBatch::default();
        let want: Vec<(Vec<u8>, Vec<u8>)> = (0..50u8)
            .map(|i| {
                (
                    vec![i; (i % 7) as usize + 1],
                    vec![i ^ 0x55; (i % 5) as usize],
                )
            })
            .collect();
        for (i, (k, v)) in want.iter().enumerate() {
            b.push(k, v, src(i as u64), i % 3 == 0);
        }
        let rest = b.split_off(20);
        assert_eq!((b.len(), rest.len()), (20, 30));
        for (i, (k, v)) in want.iter().enumerate() {
            let (batch, j) = if i < 20 { (&b, i) } else { (&rest, i - 20) };
            assert_eq!((batch.key(j), batch.value(j)), (&k[..], &v[..]));
            let e = batch.entry(j);
            assert_eq!((e.src.line, e.delete), (i as u64, i % 3 == 0));
        }
    }
}
