//! The physical layout of a log file (RocksDB's legacy log format, which is
//! LevelDB's): constants, record types, and the record header.
//!
//! A file is a sequence of 32 KiB blocks; only the last may be partial. A
//! block holds physical records back to back:
//! ```text
//! checksum: u32 LE  masked CRC32C of the type byte followed by the payload
//! length:   u16 LE  payload bytes
//! type:     u8      Full | First | Middle | Last
//! payload:  [u8; length]
//! ```
//! A record never straddles a block boundary: when fewer than
//! [`HEADER_SIZE`] bytes are left in a block, the writer zero-fills them and
//! starts the next record at the next block. A logical record that does not
//! fit in the rest of its block is split into First, Middle*, Last
//! fragments, so every block boundary inside a log is a header position.

use crate::util::checksum::mask_crc;
use crate::util::coding::decode_fixed32;

/// Size of a block. Records are laid out so that none crosses a multiple of
/// this offset.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// checksum (4) + length (2) + type (1).
pub const HEADER_SIZE: usize = 7;

/// Offset of the type byte in a header; the checksum covers the header
/// from here on (type, and the log number of recyclable records) plus the
/// payload.
pub const TYPE_OFFSET: usize = 6;

/// The most payload one physical record can carry (a whole block). It fits
/// the 16-bit length field.
pub const MAX_FRAGMENT: usize = BLOCK_SIZE - HEADER_SIZE;

/// Header size of RocksDB's recyclable records (types 5..=8), which add a
/// 4-byte log number after the type. Strata never writes them; the reader
/// only recognises them to refuse such a file instead of misreading it.
pub const RECYCLABLE_HEADER_SIZE: usize = HEADER_SIZE + 4;
pub const RECYCLABLE_FULL: u8 = 5;
pub const RECYCLABLE_LAST: u8 = 8;

/// Physical record types of the legacy format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordType {
    /// Reserved for preallocated (zero-filled) space; never written.
    Zero = 0,
    /// A whole logical record.
    Full = 1,
    /// The first fragment of a logical record.
    First = 2,
    /// An inner fragment.
    Middle = 3,
    /// The final fragment.
    Last = 4,
}

impl RecordType {
    pub fn from_u8(b: u8) -> Option<RecordType> {
        Some(match b {
            0 => RecordType::Zero,
            1 => RecordType::Full,
            2 => RecordType::First,
            3 => RecordType::Middle,
            4 => RecordType::Last,
            _ => return None,
        })
    }
}

/// The checksum stored in a record header: masked CRC32C of the type byte
/// followed by the payload. Covering the type means a flipped type byte is
/// caught like a flipped payload byte.
pub fn record_checksum(kind: u8, payload: &[u8]) -> u32 {
    mask_crc(crc32c::crc32c_append(crc32c::crc32c(&[kind]), payload))
}

/// Encodes the header of a physical record carrying `payload`.
///
/// `payload` must be at most [`MAX_FRAGMENT`] bytes (the writer's
/// fragmenting guarantees it).
pub fn encode_header(kind: RecordType, payload: &[u8]) -> [u8; HEADER_SIZE] {
    debug_assert!(payload.len() <= MAX_FRAGMENT);
    let mut h = [0u8; HEADER_SIZE];
    h[..4].copy_from_slice(&record_checksum(kind as u8, payload).to_le_bytes());
    h[4..6].copy_from_slice(&(payload.len() as u16).to_le_bytes());
    h[TYPE_OFFSET] = kind as u8;
    h
}

/// A decoded (not yet verified) record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub checksum: u32,
    pub length: usize,
    /// The raw type byte; it may be one Strata does not know.
    pub kind: u8,
}

impl Header {
    pub fn decode(b: &[u8; HEADER_SIZE]) -> Header {
        Header {
            checksum: decode_fixed32(&b[..4]),
            length: u16::from_le_bytes([b[4], b[5]]) as usize,
            kind: b[TYPE_OFFSET],
        }
    }
}

/// Bytes left in the block that `offset` falls in.
pub fn block_remaining(offset: u64) -> usize {
    BLOCK_SIZE - (offset % BLOCK_SIZE as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let payload = b"some payload";
        let h = encode_header(RecordType::Middle, payload);
        let d = Header::decode(&h);
        assert_eq!(d.length, payload.len());
        assert_eq!(d.kind, RecordType::Middle as u8);
        assert_eq!(d.checksum, record_checksum(3, payload));
        assert_ne!(d.checksum, record_checksum(2, payload), "type is covered");
    }

    #[test]
    fn checksum_is_masked_crc_of_type_then_payload() {
        // Independent of the incremental form used above.
        let mut cat = vec![1u8];
        cat.extend_from_slice(b"abc");
        assert_eq!(record_checksum(1, b"abc"), mask_crc(crc32c::crc32c(&cat)));
    }

    #[test]
    fn record_types_decode() {
        for b in 0..=4u8 {
            assert_eq!(RecordType::from_u8(b).map(|t| t as u8), Some(b));
        }
        assert_eq!(RecordType::from_u8(5), None);
    }

    #[test]
    fn max_fragment_fits_length_field() {
        assert!(MAX_FRAGMENT <= u16::MAX as usize);
        assert_eq!(block_remaining(0), BLOCK_SIZE);
        assert_eq!(block_remaining(BLOCK_SIZE as u64 - 1), 1);
        assert_eq!(block_remaining(3 * BLOCK_SIZE as u64 + 5), BLOCK_SIZE - 5);
    }
}
