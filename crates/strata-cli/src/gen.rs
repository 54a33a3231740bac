//! Deterministic test data: 16-byte keys and fixed-size values, the shape the
//! benchmarks use.

use rand::{rngs::StdRng, Rng, SeedableRng};

/// Key `i` of a generated set: `key` + 13 zero-padded digits (16 bytes), so
/// keys sort in `i` order.
pub fn key(i: u64) -> Vec<u8> {
    format!("key{i:013}").into_bytes()
}

/// A value of `len` bytes: half random, half repeated, so it compresses
/// roughly 2:1 like typical row data.
pub fn value(rng: &mut StdRng, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    for _ in 0..len / 2 {
        v.push(b'a' + rng.gen_range(0..26u8));
    }
    v.resize(len, b'x');
    v
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}
