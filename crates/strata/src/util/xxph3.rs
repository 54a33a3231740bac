//! RocksDB's 64-bit "XXPH3" hash: the *preview* XXH3 from xxHash 0.7.2 that
//! RocksDB vendors as `util/xxph3.h` and exposes as `rocksdb::Hash64` /
//! `GetSliceHash64`.
//!
//! It is persisted inside SST files (format_version 5 Bloom filter bits), so
//! it must be reproduced bit for bit. It is *not* the XXH3 of xxHash 0.8 (what
//! `xxhash-rust` implements): among other things the preview has different
//! 1-16 byte mixers, a different avalanche constant and a long-input
//! accumulator without the later lane swap, so results differ for almost every
//! input. On top of that RocksDB changed the empty-input result: instead of 0
//! it is a hash of the seed, because a zero hash is a bad input to
//! multiplicative schemes downstream.
//!
//! Invariants: the result depends only on the bytes and the seed (all reads
//! are little-endian, so it is the same on every platform), and seed 0 gives
//! exactly `rocksdb::Hash64(data, n)`.

const PRIME32_1: u64 = 0x9E37_79B1;
const PRIME32_2: u64 = 0x85EB_CA77;
const PRIME32_3: u64 = 0xC2B2_AE3D;
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;

/// Size of the default secret (xxHash's `kSecret`).
const SECRET_LEN: usize = 192;

/// The default secret: 192 pseudo-random bytes shipped with xxHash 0.7.2.
const DEFAULT_SECRET: [u8; SECRET_LEN] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

/// Smallest secret the long-input path may use (`XXPH3_SECRET_SIZE_MIN`); the
/// 129-240 path takes its last key from just below it.
const SECRET_SIZE_MIN: usize = 136;
const STRIPE_LEN: usize = 64;
/// Secret bytes advanced per stripe within a block.
const SECRET_CONSUME_RATE: usize = 8;
/// Number of 64-bit accumulator lanes.
const ACC_LANES: usize = STRIPE_LEN / 8;
/// Secret offsets deliberately not multiples of 8, so the secret bytes used
/// for the last stripe / the merge differ from those used elsewhere.
const SECRET_LASTACC_START: usize = 7;
const SECRET_MERGEACCS_START: usize = 11;
const MIDSIZE_MAX: usize = 240;
const MIDSIZE_STARTOFFSET: usize = 3;
const MIDSIZE_LASTOFFSET: usize = 17;

/// `rocksdb::Hash64(data, n)`: XXPH3 64-bit with the default secret, seed 0.
pub fn hash64(data: &[u8]) -> u64 {
    hash64_with_seed(data, 0)
}

/// `rocksdb::Hash64(data, n, seed)` (`XXPH3_64bits_withSeed`). Seed 0 gives the
/// same result as [`hash64`].
pub fn hash64_with_seed(data: &[u8], seed: u64) -> u64 {
    let secret = &DEFAULT_SECRET;
    let len = data.len();
    if len <= 16 {
        len_0to16(data, secret, seed)
    } else if len <= 32 {
        len_17to32(data, secret, seed)
    } else if len <= 128 {
        len_17to128(data, secret, seed)
    } else if len <= MIDSIZE_MAX {
        len_129to240(data, secret, seed)
    } else if seed == 0 {
        hash_long(data, secret)
    } else {
        // Long inputs fold the seed into a derived secret rather than into
        // each mix step.
        hash_long(data, &custom_secret(seed))
    }
}

#[inline(always)]
fn read32(b: &[u8], at: usize) -> u64 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as u64
}

#[inline(always)]
fn read64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// 64x64->128 multiply, folded by XOR of the halves.
#[inline(always)]
fn mul128_fold64(a: u64, b: u64) -> u64 {
    let p = (a as u128).wrapping_mul(b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}

#[inline(always)]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(PRIME64_3);
    h ^ (h >> 32)
}

fn len_0to16(input: &[u8], secret: &[u8], seed: u64) -> u64 {
    let len = input.len();
    if len > 8 {
        len_9to16(input, secret, seed)
    } else if len >= 4 {
        len_4to8(input, secret, seed)
    } else if len > 0 {
        len_1to3(input, secret, seed)
    } else {
        // RocksDB's change to the preview: hash the seed rather than
        // returning 0 for empty input.
        mul128_fold64(seed.wrapping_add(read64(secret, 0)), PRIME64_2)
    }
}

fn len_1to3(input: &[u8], secret: &[u8], seed: u64) -> u64 {
    let len = input.len();
    let c1 = input[0] as u32;
    let c2 = input[len >> 1] as u32;
    let c3 = input[len - 1] as u32;
    let combined = c1 | (c2 << 8) | (c3 << 16) | ((len as u32) << 24);
    let keyed = (combined as u64) ^ read32(secret, 0).wrapping_add(seed);
    avalanche(keyed.wrapping_mul(PRIME64_1))
}

fn len_4to8(input: &[u8], secret: &[u8], seed: u64) -> u64 {
    let len = input.len();
    let lo = read32(input, 0);
    let hi = read32(input, len - 4);
    let keyed = (lo | (hi << 32)) ^ read64(secret, 0).wrapping_add(seed);
    let mix = (len as u64).wrapping_add((keyed ^ (keyed >> 51)).wrapping_mul(PRIME32_1));
    avalanche((mix ^ (mix >> 47)).wrapping_mul(PRIME64_2))
}

fn len_9to16(input: &[u8], secret: &[u8], seed: u64) -> u64 {
    let len = input.len();
    let lo = read64(input, 0) ^ read64(secret, 0).wrapping_add(seed);
    let hi = read64(input, len - 8) ^ read64(secret, 8).wrapping_sub(seed);
    let acc = (len as u64)
        .wrapping_add(lo.wrapping_add(hi))
        .wrapping_add(mul128_fold64(lo, hi));
    avalanche(acc)
}

/// Mixes 16 input bytes at `at` with 16 secret bytes at `s`.
#[inline(always)]
fn mix16(input: &[u8], at: usize, secret: &[u8], s: usize, seed: u64) -> u64 {
    mul128_fold64(
        read64(input, at) ^ read64(secret, s).wrapping_add(seed),
        read64(input, at + 8) ^ read64(secret, s + 8).wrapping_sub(seed),
    )
}

/// [`len_17to128`]'s one pair, without its loop and length match: the
/// filter of every table hashes each user key, and keys of 17-32 bytes are
/// common (W1's primary keys are 25); the general path cost about 80
/// instructions a key.
#[inline(always)]
fn len_17to32(input: &[u8], secret: &[u8], seed: u64) -> u64 {
    let len = input.len();
    let acc = (len as u64)
        .wrapping_mul(PRIME64_1)
        .wrapping_add(mix16(input, 0, secret, 0, seed))
        .wrapping_add(mix16(input, len - 16, secret, 16, seed));
    avalanche(acc)
}

fn len_17to128(input: &[u8], secret: &[u8], seed: u64) -> u64 {
    let len = input.len();
    let mut acc = (len as u64).wrapping_mul(PRIME64_1);
    // Pairs of 16-byte chunks taken symmetrically from both ends, the k-th
    // pair keyed with secret[32k..32k+32]; longer inputs use more pairs.
    let pairs = match len {
        17..=32 => 1,
        33..=64 => 2,
        65..=96 => 3,
        _ => 4,
    };
    // The preview adds the innermost pair first; order does not matter for a
    // wrapping sum, but keep it for readability against the reference.
    for k in (0..pairs).rev() {
        acc = acc.wrapping_add(mix16(input, 16 * k, secret, 32 * k, seed));
        acc = acc.wrapping_add(mix16(input, len - 16 * (k + 1), secret, 32 * k + 16, seed));
    }
    avalanche(acc)
}

fn len_129to240(input: &[u8], secret: &[u8], seed: u64) -> u64 {
    let len = input.len();
    let mut acc = (len as u64).wrapping_mul(PRIME64_1);
    for i in 0..8 {
        acc = acc.wrapping_add(mix16(input, 16 * i, secret, 16 * i, seed));
    }
    acc = avalanche(acc);
    // Chunks past the first 128 bytes reuse the secret from a shifted start.
    for i in 8..len / 16 {
        acc = acc.wrapping_add(mix16(
            input,
            16 * i,
            secret,
            16 * (i - 8) + MIDSIZE_STARTOFFSET,
            seed,
        ));
    }
    acc = acc.wrapping_add(mix16(
        input,
        len - 16,
        secret,
        SECRET_SIZE_MIN - MIDSIZE_LASTOFFSET,
        seed,
    ));
    avalanche(acc)
}

/// The default secret with the seed added to the first and subtracted from
/// the second 8-byte word of every 16-byte pair.
fn custom_secret(seed: u64) -> [u8; SECRET_LEN] {
    let mut out = [0u8; SECRET_LEN];
    for i in 0..SECRET_LEN / 16 {
        let a = read64(&DEFAULT_SECRET, 16 * i).wrapping_add(seed);
        let b = read64(&DEFAULT_SECRET, 16 * i + 8).wrapping_sub(seed);
        out[16 * i..16 * i + 8].copy_from_slice(&a.to_le_bytes());
        out[16 * i + 8..16 * i + 16].copy_from_slice(&b.to_le_bytes());
    }
    out
}

/// One 64-byte stripe into the eight lanes. (The 0.7.2 preview adds the data
/// word to its own lane; the later XXH3 swaps adjacent lanes.)
#[inline(always)]
fn accumulate_512(acc: &mut [u64; ACC_LANES], stripe: &[u8], secret: &[u8]) {
    for (i, lane) in acc.iter_mut().enumerate() {
        let data = read64(stripe, 8 * i);
        let key = data ^ read64(secret, 8 * i);
        *lane = lane
            .wrapping_add(data)
            .wrapping_add((key & 0xFFFF_FFFF).wrapping_mul(key >> 32));
    }
}

fn scramble(acc: &mut [u64; ACC_LANES], secret: &[u8]) {
    for (i, lane) in acc.iter_mut().enumerate() {
        let mut a = *lane;
        a ^= a >> 47;
        a ^= read64(secret, 8 * i);
        *lane = a.wrapping_mul(PRIME32_1);
    }
}

fn hash_long(input: &[u8], secret: &[u8; SECRET_LEN]) -> u64 {
    let len = input.len();
    let mut acc: [u64; ACC_LANES] = [
        PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1,
    ];

    // A block is as many stripes as the secret can key at 8 bytes apart
    // (16 for the 192-byte secret); the accumulator is scrambled after each
    // full block.
    let stripes_per_block = (SECRET_LEN - STRIPE_LEN) / SECRET_CONSUME_RATE;
    let block_len = STRIPE_LEN * stripes_per_block;
    let full_blocks = len / block_len;

    let accumulate = |acc: &mut [u64; ACC_LANES], block: &[u8], stripes: usize| {
        for n in 0..stripes {
            accumulate_512(
                acc,
                &block[n * STRIPE_LEN..],
                &secret[n * SECRET_CONSUME_RATE..],
            );
        }
    };

    for b in 0..full_blocks {
        accumulate(&mut acc, &input[b * block_len..], stripes_per_block);
        scramble(&mut acc, &secret[SECRET_LEN - STRIPE_LEN..]);
    }

    // The last partial block: whole stripes, then (if the length is not a
    // multiple of 64) one more stripe ending exactly at the end of the input,
    // overlapping the previous one.
    let tail = &input[full_blocks * block_len..];
    accumulate(&mut acc, tail, tail.len() / STRIPE_LEN);
    if len & (STRIPE_LEN - 1) != 0 {
        accumulate_512(
            &mut acc,
            &input[len - STRIPE_LEN..],
            &secret[SECRET_LEN - STRIPE_LEN - SECRET_LASTACC_START..],
        );
    }

    // Merge the lanes pairwise.
    let s = SECRET_MERGEACCS_START;
    let mut result = (len as u64).wrapping_mul(PRIME64_1);
    for k in 0..ACC_LANES / 2 {
        result = result.wrapping_add(mul128_fold64(
            acc[2 * k] ^ read64(secret, s + 16 * k),
            acc[2 * k + 1] ^ read64(secret, s + 16 * k + 8),
        ));
    }
    avalanche(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_zero_matches_unseeded() {
        for len in [
            0usize, 1, 3, 4, 8, 9, 16, 17, 100, 128, 129, 240, 241, 1024, 3000,
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            assert_eq!(hash64(&data), hash64_with_seed(&data, 0), "len {len}");
        }
    }

    #[test]
    fn differs_from_stable_xxh3() {
        // Guards against "simplifying" this module into the xxhash-rust
        // crate: the preview and the final XXH3 disagree on most lengths.
        let data: Vec<u8> = (0..300u32).map(|i| (i * 31 + 1) as u8).collect();
        for len in [5usize, 12, 300] {
            assert_ne!(
                hash64(&data[..len]),
                xxhash_rust::xxh3::xxh3_64(&data[..len]),
                "len {len}"
            );
        }
    }

    /// The 17-32 byte path is the general 17-128 one's first case.
    #[test]
    fn short_mid_path_equals_the_general_one() {
        let data: Vec<u8> = (0..32u32).map(|i| (i * 97 + 11) as u8).collect();
        for len in 17..=32 {
            for seed in [0, 1, 0x9e37_79b9_7f4a_7c15] {
                let d = &data[..len];
                assert_eq!(
                    len_17to32(d, &DEFAULT_SECRET, seed),
                    len_17to128(d, &DEFAULT_SECRET, seed),
                    "len {len} seed {seed:#x}"
                );
            }
        }
    }

    #[test]
    fn custom_secret_is_identity_at_seed_zero() {
        assert_eq!(custom_secret(0), DEFAULT_SECRET);
    }
}
