//! Seeded mutations of fuzz inputs (bit flips, byte overwrites,
//! truncations, insertions, splices, huge length fields): the stable-Rust
//! stand-in for libFuzzer used by the corpus replay loop (`replay.rs`) of the tests
//! (`crates/strata/tests/fuzz_replay.rs`,
//! `crates/strata-import/tests/fuzz_replay.rs`), which include this file.

use rand::{rngs::StdRng, Rng};

/// `input` changed one to three ways (`other` is spliced from).
pub fn mutate(rng: &mut StdRng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut d = input.to_vec();
    for _ in 0..rng.gen_range(1..4) {
        match rng.gen_range(0..6) {
            0 if !d.is_empty() => {
                let i = rng.gen_range(0..d.len());
                d[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if !d.is_empty() => {
                let i = rng.gen_range(0..d.len());
                d[i] = [0, 0xff, 0x7f, 0x80, rng.gen()][rng.gen_range(0..5)];
            }
            2 if !d.is_empty() => {
                let n = rng.gen_range(0..d.len());
                d.truncate(n);
            }
            3 => {
                let i = rng.gen_range(0..=d.len());
                let n = rng.gen_range(1..16);
                for _ in 0..n {
                    d.insert(i, rng.gen());
                }
            }
            4 if !other.is_empty() && !d.is_empty() => {
                let i = rng.gen_range(0..d.len());
                let j = rng.gen_range(0..other.len());
                let n = rng.gen_range(1..=(other.len() - j).min(64));
                d.splice(i..(i + n).min(d.len()), other[j..j + n].iter().copied());
            }
            _ if d.len() >= 4 => {
                // A varint-looking length field set huge.
                let i = rng.gen_range(0..d.len() - 3);
                d[i..i + 4].copy_from_slice(&[0xff, 0xff, 0xff, 0x0f]);
            }
            _ => d.push(rng.gen()),
        }
    }
    d
}
