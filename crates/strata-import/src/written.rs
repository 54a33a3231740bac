//! The keys an import has written in its earlier units: a filter that lets
//! a unit skip the table lookups its duplicate checks would make.
//!
//! A direct or batch import writes its rows unit by unit, and each unit
//! after the first must check its primary keys (and unique secondary keys)
//! against the table, because an earlier unit may have written them. Those
//! checks were one `Db::get` per key; with the table's earlier units spread
//! over dozens of overlapping L0 files (an out-of-order import: W5), each
//! get probes a table filter per file, and the gets took about a quarter
//! of the import's time. When the table held no rows before the import,
//! only this import's own earlier units can hold a key, and those keys all
//! passed through the import: a filter of them says, for most keys, that
//! no lookup is needed.
//!
//! **Invariant:** every key added is reported by [`WrittenKeys::may_contain`]
//! (no false negatives); a key never added is reported with a small
//! probability (about 1% while a filter holds no more keys than it was
//! sized for). So a key the filter rules out is in no earlier unit, and,
//! the table being empty before the import (the assumption the pipeline
//! mode makes when it does no lookups at all), not in the table.
//!
//! **Memory:** a scalable filter, a list of blocked Bloom filters (one
//! 64-byte line per key, 10 bits per key), the first sized for 65,536
//! keys (fewer under a small cap), each next one for twice as many as the
//! one before. The list stops growing at `cap` bytes; past that, the last
//! filter takes every further key, and its false positives (lookups made,
//! never answers changed) rise with them.

use std::sync::Mutex;

/// Bits per key a filter is sized for.
const BITS_PER_KEY: usize = 10;
/// Bits set per key, all within one 512-bit line.
const PROBES: u32 = 6;
/// Keys the first filter is sized for.
const FIRST_CAPACITY: usize = 1 << 16;

/// One blocked Bloom filter.
struct Blocked {
    /// 512-bit lines, 8 words each.
    words: Vec<u64>,
    /// Keys it was sized for.
    capacity: usize,
    /// Keys added.
    len: usize,
}

impl Blocked {
    fn new(capacity: usize) -> Blocked {
        Blocked {
            words: vec![0; Blocked::bytes(capacity) / 8],
            capacity,
            len: 0,
        }
    }

    fn bytes(capacity: usize) -> usize {
        (capacity * BITS_PER_KEY).div_ceil(512).max(1) * 64
    }

    /// The line for `h`, and the bit positions within it.
    fn positions(&self, h: u64) -> (usize, impl Iterator<Item = u32>) {
        let lines = self.words.len() / 8;
        // The high half picks the line (multiply-shift, no modulo bias
        // worth caring about); the low half, remixed by a multiplication
        // by an odd constant per probe (as RocksDB's FastLocalBloom does),
        // gives each probe's bit from its top 9 bits.
        let line = (((h >> 32) * lines as u64) >> 32) as usize;
        let mut a = h as u32;
        let bits = (0..PROBES).map(move |_| {
            a = a.wrapping_mul(0x9e37_79b9);
            a >> 23 // 9 bits: 0..512
        });
        (line * 8, bits)
    }

    fn insert(&mut self, h: u64) {
        let (base, bits) = self.positions(h);
        for bit in bits {
            self.words[base + (bit / 64) as usize] |= 1 << (bit % 64);
        }
        self.len += 1;
    }

    fn may_contain(&self, h: u64) -> bool {
        let (base, mut bits) = self.positions(h);
        bits.all(|bit| self.words[base + (bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }
}

/// The keys an import's earlier units wrote (see the module documentation).
pub struct WrittenKeys {
    filters: Vec<Blocked>,
    /// Bytes the filters may take together.
    cap: usize,
    /// Hashes of keys the current unit wrote, added between units (the
    /// filter is read, never changed, while a unit is merged on several
    /// threads).
    pending: Mutex<Vec<u64>>,
}

/// The hash of `key` the filter works on.
pub fn hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

impl WrittenKeys {
    /// An empty filter whose lines together take at most `cap` bytes (at
    /// least one small line is always kept).
    pub fn new(cap: usize) -> WrittenKeys {
        WrittenKeys {
            filters: Vec::new(),
            cap,
            pending: Mutex::new(Vec::new()),
        }
    }

    /// Whether a key with hash `h` may have been added (never false for a
    /// key that was).
    pub fn may_contain(&self, h: u64) -> bool {
        self.filters.iter().any(|f| f.may_contain(h))
    }

    /// Hands over hashes of keys the current unit wrote; they are added by
    /// the next [`WrittenKeys::absorb`].
    pub fn note(&self, hashes: &mut Vec<u64>) {
        if hashes.is_empty() {
            return;
        }
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.append(hashes);
    }

    /// Adds every key handed over since the last call. Called between
    /// units, when no unit reads the filter.
    pub fn absorb(&mut self) {
        let pending =
            std::mem::take(&mut *self.pending.get_mut().unwrap_or_else(|e| e.into_inner()));
        for h in pending {
            self.insert(h);
        }
    }

    fn insert(&mut self, h: u64) {
        let full = self.filters.last().is_none_or(|f| f.len >= f.capacity);
        if full {
            // The first filter is sized for 65,536 keys, or fewer if the
            // cap is smaller, so a tiny budget gets a tiny filter.
            let first = (self.cap * 8 / BITS_PER_KEY).clamp(64, FIRST_CAPACITY);
            let next = self.filters.last().map_or(first, |f| f.capacity * 2);
            if self.filters.is_empty() || self.bytes() + Blocked::bytes(next) <= self.cap {
                self.filters.push(Blocked::new(next));
            }
        }
        if let Some(f) = self.filters.last_mut() {
            f.insert(h);
        }
    }

    /// Bytes the filters take.
    pub fn bytes(&self) -> usize {
        self.filters.iter().map(|f| f.words.len() * 8).sum()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use rand::{Rng, SeedableRng};

    fn keys(rng: &mut rand::rngs::StdRng, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|_| {
                // At least 8 random bytes, so an "absent" key is absent.
                let len = rng.gen_range(8..24);
                (0..len).map(|_| rng.gen()).collect()
            })
            .collect()
    }

    /// No key added is ever ruled out, across units, growth and the cap;
    /// keys never added are mostly ruled out.
    #[test]
    fn no_false_negatives_and_few_false_positives() {
        for (seed, cap, units) in [(1u64, 1 << 30, 5usize), (2, 40_000, 7), (3, 0, 3)] {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut w = WrittenKeys::new(cap);
            let mut added = Vec::new();
            for u in 0..units {
                let unit = keys(&mut rng, 20_000 + u * 15_000);
                // Before absorb, the unit's keys need not be found; after,
                // they must be.
                let mut hashes: Vec<u64> = unit.iter().map(|k| hash(k)).collect();
                w.note(&mut hashes);
                assert!(hashes.is_empty());
                w.absorb();
                added.extend(unit);
                for k in &added {
                    assert!(w.may_contain(hash(k)), "seed {seed}: added key ruled out");
                }
            }
            let absent = keys(&mut rng, 50_000);
            let fp = absent.iter().filter(|k| w.may_contain(hash(k))).count();
            let rate = fp as f64 / absent.len() as f64;
            eprintln!(
                "seed {seed} cap {cap}: {} keys, {} bytes, {} filters, false positives {rate:.4}",
                added.len(),
                w.bytes(),
                w.filters.len()
            );
            if cap >= 1 << 30 {
                assert!(rate < 0.03, "false positive rate {rate}");
                assert!(w.filters.len() >= 3, "the filter grew");
            } else {
                // Over the cap: the memory stays put (one line at least),
                // the answers stay right.
                assert!(
                    w.bytes() <= cap.max(Blocked::bytes(64)),
                    "{} bytes",
                    w.bytes()
                );
            }
        }
    }

    /// An empty filter rules everything out.
    #[test]
    fn an_empty_filter_holds_nothing() {
        let w = WrittenKeys::new(1 << 20);
        assert!(!w.may_contain(hash(b"k")));
        assert_eq!(w.bytes(), 0);
    }
}
