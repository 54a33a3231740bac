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
//!
//! Format versions 6 and 7 (RocksDB 8.6+ and 10.4+; what current RocksDB,
//! RocksJava and rocksdict write) are read too; Strata writes 5. From
//! RocksDB's `table/format.cc` (`FooterBuilder::Build`, `Footer::DecodeFrom`)
//! and `table/format.h` (`ChecksumModifierForContext`), version 6 changes:
//! - the footer's 40 bytes between the checksum type and the version are
//!   `extended magic 3e 00 7a 00 | footer checksum (fixed32) | base context
//!   checksum (fixed32) | metaindex size (fixed32) | 16 reserved bytes
//!   (ignored) | 8 reserved bytes (must be zero: a future feature)`;
//! - the footer checksum is the file's checksum type over all 53 footer
//!   bytes with its own 4 bytes zeroed, plus the context modifier of the
//!   footer's offset;
//! - the metaindex block ends right before the footer (its handle is
//!   implied by its size), and the index block's handle moves into the
//!   metaindex under `rocksdb.index`;
//! - every block checksum (footer included) has the *context modifier*
//!   `base ^ (low32(offset) + high32(offset))` added (wrapping), where
//!   `base` is the nonzero per-file base context checksum and `offset` the
//!   block's file offset, so a block copied to another place or file fails
//!   its check.
//!
//! Version 7 changes only the `rocksdb.compression` property (the
//! compression manager's name, `;`, the hex compression types used, `;`);
//! `reader.rs` checks that name.

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
/// The newest format version Strata reads (RocksDB's
/// `kLatestBbtFormatVersion` as of RocksDB 10.x).
pub const MAX_READ_FORMAT_VERSION: u32 = 7;
/// First format version with the checksummed footer and context checksums.
pub const CONTEXT_CHECKSUM_VERSION: u32 = 6;
/// Bytes 1..5 of a format_version >= 6 footer.
pub const EXTENDED_MAGIC: [u8; 4] = [0x3e, 0x00, 0x7a, 0x00];
/// The metaindex entry holding the index block's handle (version >= 6).
pub const INDEX_BLOCK_NAME: &str = "rocksdb.index";
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

/// What RocksDB adds to the checksum of a block at `offset` in a file
/// whose base context checksum is `base` (format_version >= 6; zero when
/// `base` is zero, as in older versions). RocksDB's
/// `ChecksumModifierForContext`.
pub fn context_modifier(base: u32, offset: u64) -> u32 {
    if base == 0 {
        return 0;
    }
    base ^ (offset as u32).wrapping_add((offset >> 32) as u32)
}

/// How a file's block checksums are computed: the type, and the base
/// context checksum (0 before format_version 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockChecksum {
    pub kind: ChecksumType,
    pub base_context: u32,
}

/// The decoded footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    pub checksum: ChecksumType,
    pub metaindex: BlockHandle,
    /// The index block. From format_version 6 the footer does not hold it:
    /// `Footer::decode` leaves it zero and `Table::open` fills it in from
    /// the metaindex's `rocksdb.index` entry.
    pub index: BlockHandle,
    pub format_version: u32,
    /// The per-file base of the context checksum modifiers (format_version
    /// >= 6; zero before).
    pub base_context_checksum: u32,
}

impl Footer {
    /// How the file's blocks are checksummed.
    pub fn block_checksum(&self) -> BlockChecksum {
        BlockChecksum {
            kind: self.checksum,
            base_context: self.base_context_checksum,
        }
    }

    /// The footer's bytes (format_version < 6: they do not depend on
    /// where the footer is).
    pub fn encode(&self) -> Vec<u8> {
        self.encode_at(0)
    }

    /// The footer's bytes when it starts at file offset `footer_offset`
    /// (format_version >= 6 checksums the footer with its offset as the
    /// context), as RocksDB's `FooterBuilder` writes them.
    pub fn encode_at(&self, footer_offset: u64) -> Vec<u8> {
        let mut v = Vec::with_capacity(FOOTER_SIZE);
        v.push(self.checksum as u8);
        if self.format_version >= CONTEXT_CHECKSUM_VERSION {
            v.extend_from_slice(&EXTENDED_MAGIC);
            put_fixed32(&mut v, 0); // the footer checksum, filled in below
            put_fixed32(&mut v, self.base_context_checksum);
            put_fixed32(&mut v, self.metaindex.size as u32);
        } else {
            self.metaindex.encode_to(&mut v);
            self.index.encode_to(&mut v);
        }
        v.resize(1 + HANDLES_SPACE, 0);
        put_fixed32(&mut v, self.format_version);
        put_fixed64(&mut v, BLOCK_BASED_MAGIC);
        debug_assert_eq!(v.len(), FOOTER_SIZE);
        if self.format_version >= CONTEXT_CHECKSUM_VERSION {
            let c = footer_checksum(self.checksum, &v)
                .wrapping_add(context_modifier(self.base_context_checksum, footer_offset));
            v[5..9].copy_from_slice(&c.to_le_bytes());
        }
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
    /// offset of `buf[0]` (format_version >= 6 footers are checksummed with
    /// their offset, and errors name it).
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
                if version > MAX_READ_FORMAT_VERSION {
                    return Err(Error::NotSupported(format!(
                        "{name}: table format_version {version} at offset {} (Strata reads up \
                         to {MAX_READ_FORMAT_VERSION}; a damaged footer reads this way too)",
                        start + (buf.len() - 12) as u64
                    )));
                }
                let checksum = ChecksumType::from_u8(b[0]).ok_or_else(|| {
                    Error::corruption(
                        name,
                        start + (buf.len() - FOOTER_SIZE) as u64,
                        format!("unknown checksum type {} in footer", b[0]),
                    )
                })?;
                if version >= CONTEXT_CHECKSUM_VERSION {
                    let footer_offset = start + (buf.len() - FOOTER_SIZE) as u64;
                    return Footer::decode_v6(b, name, footer_offset, version, checksum);
                }
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
        let footer = Footer {
            checksum,
            metaindex,
            index,
            format_version,
            base_context_checksum: 0,
        };
        // A format_version 1-5 footer has no checksum of its own: its
        // bytes must be exactly what its fields encode to (zero padding
        // after the handles, each handle in its shortest varint form, as
        // every RocksDB and Strata writer makes it). RocksDB's reader
        // ignores the padding; Strata refuses a flipped byte there in
        // every reader (the table cache, ingestion, `check`, `sst
        // verify`), so that no reader accepts a file another reports as
        // damaged. The legacy footer (version 0) is left as it is read.
        if format_version > 0 {
            let at = buf.len() - FOOTER_SIZE;
            let want = footer.encode();
            if let Some(i) = buf[at..].iter().zip(&want).position(|(a, b)| a != b) {
                return Err(Error::corruption(
                    name,
                    start + (at + i) as u64,
                    "footer byte differs from what its fields encode to (damaged padding or \
                     block handle)",
                ));
            }
        }
        Ok(footer)
    }

    /// Decodes a format_version >= 6 footer (`b`: its 53 bytes, at file
    /// offset `at`), checking everything RocksDB's `Footer::DecodeFrom`
    /// checks.
    fn decode_v6(
        b: &[u8],
        name: &str,
        at: u64,
        format_version: u32,
        checksum: ChecksumType,
    ) -> Result<Footer> {
        if b[1..5] != EXTENDED_MAGIC {
            return Err(Error::corruption(
                name,
                at + 1,
                format!(
                    "bad extended magic {:02x?} in a format_version {format_version} footer",
                    &b[1..5]
                ),
            ));
        }
        let stored = decode_fixed32(&b[5..9]);
        let base = decode_fixed32(&b[9..13]);
        if base == 0 {
            return Err(Error::corruption(
                name,
                at + 9,
                "base context checksum is zero (format_version >= 6 needs one)",
            ));
        }
        let computed = footer_checksum(checksum, b).wrapping_add(context_modifier(base, at));
        if stored != computed {
            return Err(Error::corruption(
                name,
                at,
                format!(
                    "footer checksum mismatch ({}: stored {stored:#010x}, computed {computed:#010x})",
                    checksum.name()
                ),
            ));
        }
        if decode_fixed64(&b[33..41]) != 0 {
            return Err(Error::NotSupported(format!(
                "{name}: the footer uses a RocksDB feature newer than format_version {format_version} \
                 (reserved bytes at offset {} are set)",
                at + 33
            )));
        }
        let size = decode_fixed32(&b[13..17]) as u64;
        // The metaindex block (and its trailer) ends where the footer starts.
        let offset = at
            .checked_sub(BLOCK_TRAILER_SIZE as u64 + size)
            .ok_or_else(|| {
                Error::corruption(
                    name,
                    at + 13,
                    format!("metaindex size {size} is larger than the file before the footer ({at} bytes)"),
                )
            })?;
        Ok(Footer {
            checksum,
            metaindex: BlockHandle::new(offset, size),
            index: BlockHandle::default(),
            format_version,
            base_context_checksum: base,
        })
    }
}

/// The checksum of a format_version >= 6 footer: the file's checksum type
/// over the 53 bytes with the checksum field (bytes 5..9) zeroed (RocksDB's
/// `ComputeBuiltinChecksum`, which for every type equals the block checksum
/// of all bytes but the last with the last as the "type byte"). Zero for
/// `ChecksumType::None`, as RocksDB skips it.
fn footer_checksum(kind: ChecksumType, footer: &[u8]) -> u32 {
    let mut copy = [0u8; FOOTER_SIZE];
    copy.copy_from_slice(&footer[..FOOTER_SIZE]);
    copy[5..9].fill(0);
    block_checksum(kind, &copy[..FOOTER_SIZE - 1], copy[FOOTER_SIZE - 1])
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
    checksum: BlockChecksum,
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
    let compression = check_trailer(name, handle, &buf, checksum, verify)?;
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

/// [`read_block`]'s checks and decompression of a block already in memory
/// (`raw`: the block and its trailer, as read at `handle`), into `out`
/// (cleared first; reused across blocks by a walk, `read_window`). The
/// same errors as `read_block`; the caller has checked the bounds.
pub fn decode_block_into(
    name: &str,
    handle: BlockHandle,
    raw: &[u8],
    checksum: BlockChecksum,
    verify: bool,
    out: &mut Vec<u8>,
) -> Result<CompressionType> {
    let compression = check_trailer(name, handle, raw, checksum, verify)?;
    let n = handle.size as usize;
    super::compression::decompress_into(compression, &raw[..n], out)
        .map_err(|m| Error::corruption(name, handle.offset, m))?;
    Ok(compression)
}

/// A block's trailer checked: the checksum (if `verify`) over the block
/// and its type byte, and the compression type, which it returns. `raw`
/// holds `handle.size` bytes and the trailer.
fn check_trailer(
    name: &str,
    handle: BlockHandle,
    raw: &[u8],
    checksum: BlockChecksum,
    verify: bool,
) -> Result<CompressionType> {
    let n = handle.size as usize;
    let kind_byte = raw[n];
    if verify && checksum.kind != ChecksumType::None {
        // Format_version >= 6: the stored value has the block's context
        // modifier added; it is taken off before comparing (as RocksDB
        // does, so the message shows the plain checksum).
        let stored = decode_fixed32(&raw[n + 1..])
            .wrapping_sub(context_modifier(checksum.base_context, handle.offset));
        let actual = block_checksum(checksum.kind, &raw[..n], kind_byte);
        if stored != actual {
            return Err(Error::corruption(
                name,
                handle.offset,
                format!(
                "block checksum mismatch ({}: stored {stored:#010x}{}, computed {actual:#010x}, block size {n})",
                checksum.kind.name(),
                if checksum.base_context != 0 { " with its context removed" } else { "" },
            ),
            ));
        }
    }
    CompressionType::from_u8(kind_byte).ok_or_else(|| {
        Error::corruption(
            name,
            handle.offset + n as u64,
            format!("unknown compression type {kind_byte} in block trailer"),
        )
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
            base_context_checksum: 0,
        };
        let enc = f.encode();
        assert_eq!(enc.len(), FOOTER_SIZE);
        assert_eq!(Footer::decode(&enc, "t", 0).unwrap(), f);
        let mut bad = enc.clone();
        bad[FOOTER_SIZE - 1] ^= 1;
        assert!(Footer::decode(&bad, "t", 0).unwrap_err().is_corruption());
        let mut newer = enc.clone();
        newer[FOOTER_SIZE - 12] = 8;
        assert!(matches!(
            Footer::decode(&newer, "t", 0),
            Err(Error::NotSupported(_))
        ));
        // A version-5 footer claiming version 6 lacks the extended magic.
        let mut six = enc.clone();
        six[FOOTER_SIZE - 12] = 6;
        let e = Footer::decode(&six, "t", 0).unwrap_err();
        assert!(
            e.is_corruption() && e.to_string().contains("extended magic"),
            "{e}"
        );
    }

    #[test]
    fn version_6_footer_round_trip() {
        for checksum in [ChecksumType::Crc32c, ChecksumType::Xxh3, ChecksumType::None] {
            let at = 10_000u64;
            let f = Footer {
                checksum,
                metaindex: BlockHandle::new(at - 5 - 321, 321),
                index: BlockHandle::default(),
                format_version: 6,
                base_context_checksum: 0xdead_beef,
            };
            let enc = f.encode_at(at);
            assert_eq!(enc.len(), FOOTER_SIZE);
            assert_eq!(&enc[1..5], &EXTENDED_MAGIC);
            assert_eq!(Footer::decode(&enc, "t", at).unwrap(), f);
            // Decoded at another offset, the checksum's context differs.
            assert!(Footer::decode(&enc, "t", at + 1)
                .unwrap_err()
                .is_corruption());
        }
    }

    #[test]
    fn context_modifier_follows_rocksdb() {
        assert_eq!(context_modifier(0, 12345), 0);
        assert_eq!(context_modifier(0x1234_5678, 0), 0x1234_5678);
        // base ^ (low32 + high32), wrapping.
        let off = (3u64 << 32) | 0xffff_fffe;
        assert_eq!(context_modifier(1, off), 1 ^ 0xffff_fffeu32.wrapping_add(3));
    }
}
