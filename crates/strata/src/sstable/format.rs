//! The fixed parts of the block-based table: block handles, block trailers,
//! and the footer.
//!
//! Layout of a file (format_version 5):
//! ```text
//! [data block]* [filter block] [index block] [range-del block]
//! [properties block] [metaindex block] [footer: 53 bytes]
//! ```
//! Every block is followed by a 5-byte trailer: the compression type byte and
//! a 32-bit checksum over the block bytes plus that type byte. The footer is
//! `checksum type (1) | metaindex handle | index handle | zero padding to 41
//! bytes | format_version (fixed32) | magic (fixed64)`.

use super::compression::{decompress, CompressionType};
use crate::error::{Error, Result};
use crate::util::checksum::{block_checksum, ChecksumType};
use crate::util::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64, Reader};
use crate::vfs::RandomAccessFile;

pub const BLOCK_TRAILER_SIZE: usize = 5;
/// Footer size for format_version >= 1.
pub const FOOTER_SIZE: usize = 53;
/// Footer size of format_version 0 (LevelDB-compatible layout).
pub const LEGACY_FOOTER_SIZE: usize = 48;
pub const BLOCK_BASED_MAGIC: u64 = 0x88e2_41b7_85f4_cff7;
pub const LEGACY_BLOCK_BASED_MAGIC: u64 = 0xdb47_7524_8b80_fb57;
/// The format version Strata writes. RocksDB 7.8 reads up to 5; newer
/// versions change checksums and the footer, so Strata never writes them.
pub const FORMAT_VERSION: u32 = 5;
/// Two varint64 handles take at most 20 bytes each.
const HANDLES_SPACE: usize = 40;

/// Where a block lives: its offset and its size without the trailer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    pub fn new(offset: u64, size: u64) -> BlockHandle {
        BlockHandle { offset, size }
    }

    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        crate::util::coding::put_varint64(dst, self.offset);
        crate::util::coding::put_varint64(dst, self.size);
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(20);
        self.encode_to(&mut v);
        v
    }

    pub fn decode(r: &mut Reader<'_>) -> Option<BlockHandle> {
        Some(BlockHandle {
            offset: r.varint64()?,
            size: r.varint64()?,
        })
    }

    pub fn decode_from(src: &[u8]) -> Option<BlockHandle> {
        BlockHandle::decode(&mut Reader::new(src))
    }

    /// Offset just past this block's trailer, or `None` if a damaged
    /// handle puts it past `u64::MAX`.
    pub fn checked_end(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_SIZE as u64)
    }

    /// Offset just past this block's trailer (saturating: a damaged handle
    /// gives an offset past any file, which reading then reports).
    pub fn end(&self) -> u64 {
        self.checked_end().unwrap_or(u64::MAX)
    }
}

/// The decoded footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    pub checksum: ChecksumType,
    pub metaindex: BlockHandle,
    pub index: BlockHandle,
    pub format_version: u32,
}

impl Footer {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(FOOTER_SIZE);
        v.push(self.checksum as u8);
        self.metaindex.encode_to(&mut v);
        self.index.encode_to(&mut v);
        v.resize(1 + HANDLES_SPACE, 0);
        put_fixed32(&mut v, self.format_version);
        put_fixed64(&mut v, BLOCK_BASED_MAGIC);
        debug_assert_eq!(v.len(), FOOTER_SIZE);
        v
    }

    /// Reads and decodes the footer at the end of `file`.
    pub fn read(file: &dyn RandomAccessFile) -> Result<Footer> {
        let name = file.name();
        let size = file.len();
        if size < LEGACY_FOOTER_SIZE as u64 {
            return Err(Error::corruption(
                name,
                0,
                format!("file is too short ({size} bytes) to be an SST"),
            ));
        }
        let n = (FOOTER_SIZE as u64).min(size) as usize;
        let start = size - n as u64;
        let mut buf = vec![0u8; n];
        file.read_exact_at(&mut buf, start)?;
        Footer::decode(&buf, name, start)
    }

    /// Decodes a footer from the last bytes of a file; `start` is the file
    /// offset of `buf[0]`, used in error messages.
    pub fn decode(buf: &[u8], name: &str, start: u64) -> Result<Footer> {
        let magic = decode_fixed64(&buf[buf.len() - 8..]);
        let magic_off = start + buf.len() as u64 - 8;
        let (body, format_version, checksum) = match magic {
            BLOCK_BASED_MAGIC => {
                if buf.len() < FOOTER_SIZE {
                    return Err(Error::corruption(name, start, "footer is truncated"));
                }
                let b = &buf[buf.len() - FOOTER_SIZE..];
                let version = decode_fixed32(&b[FOOTER_SIZE - 12..]);
                if version > FORMAT_VERSION {
                    return Err(Error::NotSupported(format!(
                        "{name}: table format_version {version} (Strata reads up to {FORMAT_VERSION})"
                    )));
                }
                let checksum = ChecksumType::from_u8(b[0]).ok_or_else(|| {
                    Error::corruption(
                        name,
                        start + (buf.len() - FOOTER_SIZE) as u64,
                        format!("unknown checksum type {} in footer", b[0]),
                    )
                })?;
                (&b[1..1 + HANDLES_SPACE], version, checksum)
            }
            LEGACY_BLOCK_BASED_MAGIC => {
                let b = &buf[buf.len() - LEGACY_FOOTER_SIZE..];
                (&b[..HANDLES_SPACE], 0, ChecksumType::Crc32c)
            }
            _ => {
                return Err(Error::corruption(
                    name,
                    magic_off,
                    format!("bad magic number {magic:#018x}: not a block-based table"),
                ))
            }
        };
        let mut r = Reader::new(body);
        let bad = || Error::corruption(name, start, "footer block handles do not decode");
        let metaindex = BlockHandle::decode(&mut r).ok_or_else(bad)?;
        let index = BlockHandle::decode(&mut r).ok_or_else(bad)?;
        Ok(Footer {
            checksum,
            metaindex,
            index,
            format_version,
        })
    }
}

/// What `read_block` returns: the uncompressed contents and the type the
/// block was stored with.
pub struct BlockContents {
    pub data: Vec<u8>,
    pub compression: CompressionType,
    /// Size on disk without the trailer.
    pub stored_size: usize,
}

/// Reads one block, verifies its checksum (if asked) and decompresses it.
/// Every failure is a corruption error naming the file and block offset.
pub fn read_block(
    file: &dyn RandomAccessFile,
    handle: BlockHandle,
    checksum: ChecksumType,
    verify: bool,
    limit: u64,
) -> Result<BlockContents> {
    let name = file.name();
    let end = handle
        .offset
        .checked_add(handle.size)
        .and_then(|e| e.checked_add(BLOCK_TRAILER_SIZE as u64));
    match end {
        Some(e) if e <= limit => {}
        _ => {
            return Err(Error::corruption(
                name,
                handle.offset,
                format!(
                "block handle (offset {}, size {}) points past the end of the table data ({limit})",
                handle.offset, handle.size
            ),
            ))
        }
    }
    let n = handle.size as usize;
    let mut buf = vec![0u8; n + BLOCK_TRAILER_SIZE];
    file.read_exact_at(&mut buf, handle.offset)?;
    let kind_byte = buf[n];
    if verify && checksum != ChecksumType::None {
        let stored = decode_fixed32(&buf[n + 1..]);
        let actual = block_checksum(checksum, &buf[..n], kind_byte);
        if stored != actual {
            return Err(Error::corruption(
                name,
                handle.offset,
                format!(
                    "block checksum mismatch ({}: stored {stored:#010x}, computed {actual:#010x}, block size {n})",
                    checksum.name()
                ),
            ));
        }
    }
    let compression = CompressionType::from_u8(kind_byte).ok_or_else(|| {
        Error::corruption(
            name,
            handle.offset + n as u64,
            format!("unknown compression type {kind_byte} in block trailer"),
        )
    })?;
    let data = if compression == CompressionType::None {
        buf.truncate(n);
        buf
    } else {
        decompress(compression, &buf[..n]).map_err(|m| Error::corruption(name, handle.offset, m))?
    };
    Ok(BlockContents {
        data,
        compression,
        stored_size: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_round_trip() {
        let f = Footer {
            checksum: ChecksumType::Crc32c,
            metaindex: BlockHandle::new(123456789, 4321),
            index: BlockHandle::new(1 << 40, 77),
            format_version: 5,
        };
        let enc = f.encode();
        assert_eq!(enc.len(), FOOTER_SIZE);
        assert_eq!(Footer::decode(&enc, "t", 0).unwrap(), f);
        let mut bad = enc.clone();
        bad[FOOTER_SIZE - 1] ^= 1;
        assert!(Footer::decode(&bad, "t", 0).unwrap_err().is_corruption());
        let mut newer = enc.clone();
        newer[FOOTER_SIZE - 12] = 6;
        assert!(matches!(
            Footer::decode(&newer, "t", 0),
            Err(Error::NotSupported(_))
        ));
    }
}
