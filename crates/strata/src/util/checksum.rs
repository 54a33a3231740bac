//! Block checksums as RocksDB's block-based table defines them.
//!
//! A block trailer's checksum covers the block's bytes *and* the one-byte
//! compression type that follows them. CRC32C is stored masked (LevelDB's
//! rotate-and-add, so that a CRC of data that itself holds CRCs stays strong);
//! XXH3 folds the type byte in with a multiply instead of hashing it.

/// Which checksum a table's blocks carry (footer byte 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumType {
    /// No checksum.
    None = 0,
    /// CRC32C, masked (the default; RocksDB's `kCRC32c`).
    Crc32c = 1,
    /// xxHash32.
    XxHash = 2,
    /// xxHash64 (low 32 bits).
    XxHash64 = 3,
    /// XXH3 (RocksDB's newest default).
    Xxh3 = 4,
}

impl ChecksumType {
    /// The type a table footer or WAL header names by this byte (RocksDB's
    /// `ChecksumType` values); `None` for a byte no type has.
    pub fn from_u8(b: u8) -> Option<ChecksumType> {
        Some(match b {
            0 => ChecksumType::None,
            1 => ChecksumType::Crc32c,
            2 => ChecksumType::XxHash,
            3 => ChecksumType::XxHash64,
            4 => ChecksumType::Xxh3,
            _ => return None,
        })
    }

    /// The lowercase name RocksDB's tools print (`crc32c`, `xxh3`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ChecksumType::None => "none",
            ChecksumType::Crc32c => "crc32c",
            ChecksumType::XxHash => "xxhash",
            ChecksumType::XxHash64 => "xxhash64",
            ChecksumType::Xxh3 => "xxh3",
        }
    }
}

const MASK_DELTA: u32 = 0xa282_ead8;
const LAST_BYTE_PRIME: u32 = 0x6b90_83d9;

/// LevelDB/RocksDB CRC mask.
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

#[cfg(any(test, feature = "internals"))]
pub fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// Checksum of `data` followed by the single byte `last` (the block trailer's
/// compression type), computed without concatenating them.
pub fn block_checksum(kind: ChecksumType, data: &[u8], last: u8) -> u32 {
    match kind {
        ChecksumType::None => 0,
        ChecksumType::Crc32c => {
            let c = crc32c::crc32c(data);
            mask_crc(crc32c::crc32c_append(c, &[last]))
        }
        ChecksumType::XxHash => {
            let mut h = xxhash_rust::xxh32::Xxh32::new(0);
            h.update(data);
            h.update(&[last]);
            h.digest()
        }
        ChecksumType::XxHash64 => {
            let mut h = xxhash_rust::xxh64::Xxh64::new(0);
            h.update(data);
            h.update(&[last]);
            h.digest() as u32
        }
        ChecksumType::Xxh3 => {
            let v = xxhash_rust::xxh3::xxh3_64(data) as u32;
            v ^ (last as u32).wrapping_mul(LAST_BYTE_PRIME)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_round_trips_and_changes_value() {
        for c in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(unmask_crc(mask_crc(c)), c);
            assert_ne!(mask_crc(c), c);
        }
    }

    #[test]
    fn with_last_byte_equals_concatenation() {
        let data = b"hello block contents";
        let mut cat = data.to_vec();
        cat.push(7);
        assert_eq!(
            block_checksum(ChecksumType::Crc32c, data, 7),
            mask_crc(crc32c::crc32c(&cat))
        );
        assert_eq!(
            block_checksum(ChecksumType::XxHash, data, 7),
            xxhash_rust::xxh32::xxh32(&cat, 0)
        );
        assert_eq!(
            block_checksum(ChecksumType::XxHash64, data, 7),
            xxhash_rust::xxh64::xxh64(&cat, 0) as u32
        );
        // XXH3's variant hashes all of `data`, then folds the byte in.
        let h = xxhash_rust::xxh3::xxh3_64(data) as u32;
        assert_eq!(
            block_checksum(ChecksumType::Xxh3, data, 7),
            h ^ 7u32.wrapping_mul(0x6b90_83d9)
        );
    }

    #[test]
    fn every_type_detects_a_flipped_bit() {
        let data = vec![0x5au8; 4096];
        for kind in [
            ChecksumType::Crc32c,
            ChecksumType::XxHash,
            ChecksumType::XxHash64,
            ChecksumType::Xxh3,
        ] {
            let good = block_checksum(kind, &data, 1);
            let mut bad = data.clone();
            bad[1234] ^= 0x10;
            assert_ne!(block_checksum(kind, &bad, 1), good, "{kind:?}");
            assert_ne!(block_checksum(kind, &data, 0), good, "{kind:?} type byte");
        }
    }
}
