//! Block compression, with RocksDB's framing: Snappy carries its own length;
//! LZ4 and Zstd blocks start with a varint32 of the uncompressed size
//! (RocksDB's `compress_format_version` 2, used by every format_version >= 2).
//!
//! A block is stored compressed only if that saves at least 1/8 of its size;
//! otherwise the writer stores it raw and the trailer says so.
//!
//! A table writer stops trying to compress data that does not shrink
//! ([`AdaptiveSkip`]): after [`SKIP_AFTER`] data blocks in a row that were
//! stored raw it tries only one data block in [`PROBE_EVERY`], and goes
//! back to trying every block as soon as one of those shrinks. Which
//! blocks are compressed is a writer's choice the format leaves open (each
//! block's trailer names its own type), so readers are unaffected.

use crate::util::coding::{get_varint32, put_varint32};

/// The compression type byte in a block trailer (RocksDB's numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompressionType {
    /// Stored as is.
    None = 0,
    /// Snappy (the default).
    Snappy = 1,
    /// zlib (read and write not supported).
    Zlib = 2,
    /// bzip2 (not supported).
    Bzip2 = 3,
    /// LZ4.
    Lz4 = 4,
    /// LZ4 high compression (read as LZ4).
    Lz4hc = 5,
    /// Xpress (not supported).
    Xpress = 6,
    /// Zstandard.
    Zstd = 7,
}

impl CompressionType {
    /// The type with RocksDB's number `b`.
    pub fn from_u8(b: u8) -> Option<CompressionType> {
        Some(match b {
            0 => CompressionType::None,
            1 => CompressionType::Snappy,
            2 => CompressionType::Zlib,
            3 => CompressionType::Bzip2,
            4 => CompressionType::Lz4,
            5 => CompressionType::Lz4hc,
            6 => CompressionType::Xpress,
            7 => CompressionType::Zstd,
            _ => return None,
        })
    }

    /// The name RocksDB stores in the `rocksdb.compression` property.
    pub fn rocksdb_name(self) -> &'static str {
        match self {
            CompressionType::None => "NoCompression",
            CompressionType::Snappy => "Snappy",
            CompressionType::Zlib => "Zlib",
            CompressionType::Bzip2 => "BZip2",
            CompressionType::Lz4 => "LZ4",
            CompressionType::Lz4hc => "LZ4HC",
            CompressionType::Xpress => "Xpress",
            CompressionType::Zstd => "ZSTD",
        }
    }

    /// Parses a user-facing name (`none`, `snappy`, `lz4`, `zstd`).
    pub fn parse(s: &str) -> Option<CompressionType> {
        Some(match s.to_ascii_lowercase().as_str() {
            "none" | "no" | "nocompression" => CompressionType::None,
            "snappy" => CompressionType::Snappy,
            "lz4" => CompressionType::Lz4,
            "zstd" => CompressionType::Zstd,
            _ => return None,
        })
    }

    /// Whether Strata can write blocks of this type.
    pub fn can_write(self) -> bool {
        matches!(
            self,
            CompressionType::None
                | CompressionType::Snappy
                | CompressionType::Lz4
                | CompressionType::Zstd
        )
    }
}

/// Zstd level used when RocksDB's options leave it at the default.
const ZSTD_LEVEL: i32 = 3;

/// Compresses blocks one after another, keeping what a block's compression
/// needs between blocks: the output buffer (grown once to the largest
/// bound seen, never zero-filled again) and each codec's state (Snappy's
/// hash table, a zstd context). A table writer compresses thousands of
/// blocks; a fresh zero-filled buffer and a fresh encoder for each one cost
/// about 2.4% of an import's CPU in `memset` alone.
pub struct Compressor {
    snappy: snap::raw::Encoder,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    /// The varint32 size prefix of an LZ4 or Zstd block.
    header: Vec<u8>,
    buf: Vec<u8>,
}

impl Default for Compressor {
    fn default() -> Self {
        Compressor {
            snappy: snap::raw::Encoder::new(),
            zstd: None,
            header: Vec::new(),
            buf: Vec::new(),
        }
    }
}

impl Compressor {
    /// `raw` compressed as `kind` with RocksDB's framing, borrowed until
    /// the next call. `None` if the type is not one Strata writes or
    /// compression failed; the caller then stores the block raw.
    pub fn compress(&mut self, kind: CompressionType, raw: &[u8]) -> Option<&[u8]> {
        match kind {
            CompressionType::Snappy => {
                let max = snap::raw::max_compress_len(raw.len());
                let out = room(&mut self.buf, max);
                let n = self.snappy.compress(raw, out).ok()?;
                Some(&self.buf[..n])
            }
            CompressionType::Lz4 | CompressionType::Lz4hc => {
                let h = self.size_prefix(raw.len())?;
                let max = lz4_flex::block::get_maximum_output_size(raw.len());
                let out = room(&mut self.buf, h + max);
                out[..h].copy_from_slice(&self.header);
                let n = lz4_flex::block::compress_into(raw, &mut out[h..]).ok()?;
                Some(&self.buf[..h + n])
            }
            CompressionType::Zstd => {
                let h = self.size_prefix(raw.len())?;
                if self.zstd.is_none() {
                    self.zstd = Some(zstd::bulk::Compressor::new(ZSTD_LEVEL).ok()?);
                }
                let z = self.zstd.as_mut()?;
                let max = zstd::zstd_safe::compress_bound(raw.len());
                let out = room(&mut self.buf, h + max);
                out[..h].copy_from_slice(&self.header);
                let n = z.compress_to_buffer(raw, &mut out[h..]).ok()?;
                Some(&self.buf[..h + n])
            }
            _ => None,
        }
    }

    /// Frames the uncompressed size in `header`; its length.
    fn size_prefix(&mut self, len: usize) -> Option<usize> {
        self.header.clear();
        put_varint32(&mut self.header, u32::try_from(len).ok()?);
        Some(self.header.len())
    }
}

/// Data blocks in a row stored raw (compression tried and not worth it)
/// after which a writer stops trying every block. TPC-C's text (W1) never
/// shrinks by 1/8 under Snappy, and trying it cost 3-5% of an import's CPU.
pub const SKIP_AFTER: u32 = 8;

/// While skipping, one data block in this many is still tried, so data
/// that becomes compressible is noticed within this many blocks; at most
/// `PROBE_EVERY - 1` compressible blocks in a row are stored raw, and
/// the probes cost 1/`PROBE_EVERY` of trying every block.
pub const PROBE_EVERY: u32 = 16;

/// Whether a table writer tries to compress its next data block: every
/// block until [`SKIP_AFTER`] in a row were not worth compressing, then
/// one in [`PROBE_EVERY`] until one is. A table's data is usually alike
/// from block to block (one index's keys and rows), so a long run of
/// blocks that did not shrink predicts the next ones; the probes keep a
/// change (a compressible stretch after an incompressible one) from
/// being missed for more than `PROBE_EVERY - 1` blocks.
#[derive(Clone, Debug, Default)]
pub struct AdaptiveSkip {
    /// Tried blocks in a row that were stored raw.
    misses: u32,
    /// Blocks not tried since the last probe (only while skipping).
    skipped: u32,
}

impl AdaptiveSkip {
    /// True if the next data block should be compressed (and its outcome
    /// then given to [`record`](Self::record)); false stores it raw
    /// untried.
    pub fn should_try(&mut self) -> bool {
        if self.misses < SKIP_AFTER {
            return true;
        }
        self.skipped += 1;
        if self.skipped >= PROBE_EVERY {
            self.skipped = 0;
            return true;
        }
        false
    }

    /// The outcome of a tried block: `kept` if it was stored compressed.
    pub fn record(&mut self, kept: bool) {
        if kept {
            self.misses = 0;
            self.skipped = 0;
        } else {
            self.misses = self.misses.saturating_add(1);
        }
    }
}

/// The first `n` bytes of `buf`, growing it (zero-filled once) only if it
/// is shorter: the bytes are overwritten by the codec, so the old contents
/// need no clearing.
fn room(buf: &mut Vec<u8>, n: usize) -> &mut [u8] {
    if buf.len() < n {
        buf.resize(n, 0);
    }
    &mut buf[..n]
}

/// True if a compressed block is worth keeping: it saves at least 1/8.
pub fn good_ratio(raw_len: usize, compressed_len: usize) -> bool {
    compressed_len < raw_len - raw_len / 8
}

/// No block is larger than this; a size prefix beyond it is corruption, and
/// refusing it keeps a damaged file from asking for gigabytes.
const MAX_BLOCK_SIZE: usize = 1 << 28;

fn check_size(what: &str, n: usize) -> Result<usize, String> {
    if n > MAX_BLOCK_SIZE {
        return Err(format!("{what}: uncompressed size {n} is implausible"));
    }
    Ok(n)
}

/// Decompresses one block. Errors are plain messages; the caller adds the
/// file and offset.
pub fn decompress(kind: CompressionType, data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    decompress_into(kind, data, &mut out)?;
    Ok(out)
}

/// [`decompress`] into `out` (cleared first), so that a walk over many
/// blocks (the ingestion check) reuses one buffer instead of allocating
/// one per block. A stored (`None`) block is copied.
pub fn decompress_into(
    kind: CompressionType,
    data: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    out.clear();
    match kind {
        CompressionType::None => out.extend_from_slice(data),
        CompressionType::Snappy => {
            let n = snap::raw::decompress_len(data).map_err(|e| format!("snappy: {e}"))?;
            let n = check_size("snappy", n)?;
            out.resize(n, 0);
            snap::raw::Decoder::new()
                .decompress(data, out)
                .map_err(|e| format!("snappy: {e}"))?;
        }
        CompressionType::Lz4 | CompressionType::Lz4hc => {
            let (n, used) = get_varint32(data).ok_or_else(|| "lz4: bad size prefix".to_string())?;
            let n = check_size("lz4", n as usize)?;
            out.resize(n, 0);
            let got = lz4_flex::block::decompress_into(&data[used..], out)
                .map_err(|e| format!("lz4: {e}"))?;
            if got != n {
                return Err(format!("lz4: expected {n} bytes, got {got}"));
            }
        }
        CompressionType::Zstd => {
            let (n, used) =
                get_varint32(data).ok_or_else(|| "zstd: bad size prefix".to_string())?;
            let n = check_size("zstd", n as usize)?;
            *out = zstd::bulk::decompress(&data[used..], n).map_err(|e| format!("zstd: {e}"))?;
            if out.len() != n {
                return Err(format!("zstd: expected {n} bytes, got {}", out.len()));
            }
        }
        other => {
            return Err(format!(
                "compression type {} is not supported",
                other.rocksdb_name()
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_writable_type() {
        let raw: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 97).to_le_bytes())
            .collect();
        for kind in [
            CompressionType::Snappy,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ] {
            let mut c = Compressor::default();
            // A large block first, so the buffer holds stale bytes past
            // the small block's output.
            let big = c.compress(kind, &raw).unwrap().to_vec();
            assert_eq!(decompress(kind, &big).unwrap(), raw, "{kind:?}");
            let small = &raw[..500];
            let out = c.compress(kind, small).unwrap().to_vec();
            assert_eq!(
                decompress(kind, &out).unwrap(),
                small,
                "{kind:?} after a larger block"
            );
            let out = c.compress(kind, &raw).unwrap().to_vec();
            assert_eq!(
                out, big,
                "{kind:?}: the same block compresses the same on reuse"
            );
            assert!(good_ratio(raw.len(), out.len()), "{kind:?} should shrink");
            assert_eq!(decompress(kind, &out).unwrap(), raw, "{kind:?}");
            // Truncated input is an error, not a panic.
            assert!(decompress(kind, &out[..out.len() / 2]).is_err(), "{kind:?}");
        }
    }

    /// The tries an [`AdaptiveSkip`] makes for a run of blocks whose
    /// outcomes (compressed well or not) are `shrinks`.
    fn tries(shrinks: impl IntoIterator<Item = bool>) -> Vec<bool> {
        let mut a = AdaptiveSkip::default();
        shrinks
            .into_iter()
            .map(|shrink| {
                let t = a.should_try();
                if t {
                    a.record(shrink);
                }
                t
            })
            .collect()
    }

    #[test]
    fn adaptive_skip_tries_every_block_that_compresses() {
        assert!(tries(std::iter::repeat_n(true, 1000)).iter().all(|&t| t));
        // Misses fewer than SKIP_AFTER in a row never start skipping.
        let pattern = (0..1000).map(|i| i % SKIP_AFTER as usize != 0);
        assert!(tries(pattern).iter().all(|&t| t));
    }

    #[test]
    fn adaptive_skip_probes_incompressible_data() {
        let t = tries(std::iter::repeat_n(false, 8 + 16 * 10));
        let n = SKIP_AFTER as usize;
        assert!(t[..n].iter().all(|&t| t), "the first blocks are all tried");
        // Then exactly one block in PROBE_EVERY.
        for (i, &tried) in t[n..].iter().enumerate() {
            assert_eq!(
                tried,
                (i + 1) % PROBE_EVERY as usize == 0,
                "block {}",
                n + i
            );
        }
    }

    #[test]
    fn adaptive_skip_resumes_when_data_turns_compressible() {
        // 100 incompressible blocks, then compressible ones: within
        // PROBE_EVERY blocks a probe succeeds and every block is tried.
        let outcome: Vec<bool> = (0..400).map(|i| i >= 100).collect();
        let t = tries(outcome.iter().copied());
        let resumed = (100..400).find(|&i| t[i]).unwrap();
        assert!(
            resumed < 100 + PROBE_EVERY as usize,
            "first try at {resumed}"
        );
        assert!(
            t[resumed..].iter().all(|&t| t),
            "every block tried after it"
        );
    }

    #[test]
    fn garbage_never_panics() {
        let junk = [0xffu8, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3];
        for kind in [
            CompressionType::Snappy,
            CompressionType::Lz4,
            CompressionType::Zstd,
            CompressionType::Zlib,
        ] {
            let _ = decompress(kind, &junk);
            let _ = decompress(kind, &[]);
        }
    }
}
