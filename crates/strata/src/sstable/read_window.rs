//! `ReadWindow`: reads a table's blocks in file order through one buffer,
//! one `pread` per window instead of one per block.
//!
//! A whole-table walk (`Table::verify_with`, the ingestion check) reads
//! every data block once, in order. Read one at a time, a 5,000-key W4 file
//! (about 160 blocks of 4 KiB before compression) cost 160 system calls,
//! about a sixth of the check's time. The window reads up to
//! [`WINDOW_BYTES`] from the first block it has not got, then hands out
//! the blocks inside it.
//!
//! `block_into` decodes a block straight from the window into the
//! caller's reused buffer (`format::decode_block_into`: the same checks),
//! without copying the stored block out first; a window made
//! `with_fill_end` (one piece of a walk split between threads) reads no
//! further than its last block.
//!
//! Invariants: every block still goes through `format::read_block`'s checks (bounds
//! against the table's data limit, checksum, compression type,
//! decompression), reading from the window as if from the file, so errors
//! name the same file and offsets as a direct read would; the window never
//! reads past `limit`; a block larger than the window gets a window of its
//! own size.

use super::compression::CompressionType;
use super::format::{
    decode_block_into, read_block, BlockChecksum, BlockContents, BlockHandle, BLOCK_TRAILER_SIZE,
};
use crate::error::{Error, Result};
use crate::vfs::RandomAccessFile;

/// How much a window reads at once: large enough that a typical ingested
/// file takes a few reads, small enough to stay out of the way of memory.
pub const WINDOW_BYTES: usize = 1 << 20;

/// Blocks of one file, read through a buffer (see the module docs).
pub struct ReadWindow<'a> {
    file: &'a dyn RandomAccessFile,
    /// Readable bytes end here (the table's data limit).
    limit: u64,
    /// Bytes read at once (at least a whole block).
    size: usize,
    /// A refill reads no further than this (the end of the last block the
    /// caller will ask for, when it walks part of a file), unless the
    /// block asked for reaches past it.
    fill_end: u64,
    /// File offset of `buf[0]`.
    start: u64,
    buf: Vec<u8>,
}

impl<'a> ReadWindow<'a> {
    pub fn new(file: &'a dyn RandomAccessFile, limit: u64) -> ReadWindow<'a> {
        ReadWindow::with_size(file, limit, WINDOW_BYTES)
    }

    /// A window reading `size` bytes at a time (tests use small ones).
    pub fn with_size(file: &'a dyn RandomAccessFile, limit: u64, size: usize) -> ReadWindow<'a> {
        ReadWindow {
            file,
            limit,
            size,
            fill_end: limit,
            start: 0,
            buf: Vec::new(),
        }
    }

    /// A window over the blocks before `fill_end` only (a piece of a
    /// walk): refills stop there instead of reading a whole window past
    /// the blocks the caller will ask for. Bounds are still checked
    /// against `limit`.
    pub fn with_fill_end(
        file: &'a dyn RandomAccessFile,
        limit: u64,
        fill_end: u64,
    ) -> ReadWindow<'a> {
        ReadWindow {
            fill_end: fill_end.min(limit),
            ..ReadWindow::new(file, limit)
        }
    }

    /// Where the block at `handle` ends with its trailer, if that is
    /// within `limit` (else `read_block` reports the block out of bounds).
    fn end_of(&self, handle: BlockHandle) -> Option<u64> {
        handle
            .offset
            .checked_add(handle.size)
            .and_then(|e| e.checked_add(BLOCK_TRAILER_SIZE as u64))
            .filter(|&e| e <= self.limit)
    }

    /// Makes `[handle.offset, end)` (inside `limit`) part of the window.
    fn fill(&mut self, handle: BlockHandle, end: u64) -> Result<()> {
        let have = self.start + self.buf.len() as u64;
        if handle.offset < self.start || end > have {
            let to = (handle.offset + self.size as u64)
                .min(self.fill_end)
                .max(end)
                .min(self.limit);
            let len = (to - handle.offset) as usize;
            self.buf.resize(len, 0);
            self.start = handle.offset;
            if let Err(e) = self.file.read_exact_at(&mut self.buf, handle.offset) {
                self.buf.clear();
                return Err(e);
            }
        }
        Ok(())
    }

    /// [`block`](Self::block) decoded into `out` (cleared first, and
    /// reused by the caller across blocks) straight from the window: no
    /// copy of the stored block, no allocation per block once `out` is
    /// large enough. Returns the block's compression type and stored size;
    /// the same checks and errors as `read_block`.
    pub fn block_into(
        &mut self,
        handle: BlockHandle,
        checksum: BlockChecksum,
        verify: bool,
        out: &mut Vec<u8>,
    ) -> Result<(CompressionType, usize)> {
        let Some(end) = self.end_of(handle) else {
            // Out of bounds: `read_block` reports it (from the file itself).
            let c = read_block(self.file, handle, checksum, verify, self.limit)?;
            *out = c.data;
            return Ok((c.compression, c.stored_size));
        };
        self.fill(handle, end)?;
        let from = (handle.offset - self.start) as usize;
        let raw = &self.buf[from..from + (end - handle.offset) as usize];
        let kind = decode_block_into(self.file.name(), handle, raw, checksum, verify, out)?;
        Ok((kind, handle.size as usize))
    }

    /// `read_block` of `handle`, from the window (refilled if the block is
    /// not wholly inside it).
    pub fn block(
        &mut self,
        handle: BlockHandle,
        checksum: BlockChecksum,
        verify: bool,
    ) -> Result<BlockContents> {
        let Some(end) = self.end_of(handle) else {
            // Out of bounds: `read_block` reports it (from the file itself).
            return read_block(self.file, handle, checksum, verify, self.limit);
        };
        self.fill(handle, end)?;
        read_block(self, handle, checksum, verify, self.limit)
    }
}

impl RandomAccessFile for ReadWindow<'_> {
    /// Reads from the window; the caller (`block`) made sure the range is
    /// inside it.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let from = offset
            .checked_sub(self.start)
            .map(|f| f as usize)
            .filter(|&f| f + buf.len() <= self.buf.len())
            .ok_or_else(|| {
                Error::internal(format!(
                    "{}: read of {} bytes at {offset} outside the read window",
                    self.file.name(),
                    buf.len()
                ))
            })?;
        buf.copy_from_slice(&self.buf[from..from + buf.len()]);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.file.len()
    }

    fn name(&self) -> &str {
        self.file.name()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use crate::sstable::format::BlockChecksum;
    use crate::util::checksum::{block_checksum, ChecksumType};

    /// The error of a read that must fail.
    fn err(r: Result<BlockContents>) -> String {
        match r {
            Ok(_) => panic!("the read succeeded"),
            Err(e) => e.to_string(),
        }
    }

    /// An in-memory file that counts its reads.
    struct Mem(Vec<u8>, std::sync::atomic::AtomicUsize);

    impl RandomAccessFile for Mem {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let o = offset as usize;
            let src = self
                .0
                .get(o..o + buf.len())
                .ok_or_else(|| Error::internal("read past the end"))?;
            buf.copy_from_slice(src);
            Ok(())
        }
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn name(&self) -> &str {
            "mem.sst"
        }
    }

    /// Uncompressed blocks of sizes 1..=`n` * 37 bytes, each with its
    /// trailer (type 0, CRC32C), back to back; returns the file and the
    /// handles.
    fn blocks(n: usize) -> (Mem, Vec<BlockHandle>) {
        let mut file = Vec::new();
        let mut handles = Vec::new();
        for i in 1..=n {
            let data: Vec<u8> = (0..i * 37).map(|j| (i * 7 + j) as u8).collect();
            handles.push(BlockHandle {
                offset: file.len() as u64,
                size: data.len() as u64,
            });
            let crc = block_checksum(ChecksumType::Crc32c, &data, 0);
            file.extend_from_slice(&data);
            file.push(0);
            file.extend_from_slice(&crc.to_le_bytes());
        }
        (Mem(file, Default::default()), handles)
    }

    const CRC: BlockChecksum = BlockChecksum {
        kind: ChecksumType::Crc32c,
        base_context: 0,
    };

    /// Every block read through windows of any size (smaller than one
    /// block, a few blocks, the whole file) is the block `read_block`
    /// reads from the file, and a large window takes one read.
    #[test]
    fn windows_hand_out_the_blocks_a_direct_read_does() {
        let (file, handles) = blocks(40);
        let limit = file.len();
        for size in [1, 100, 1000, 5000, WINDOW_BYTES] {
            let before = file.1.load(std::sync::atomic::Ordering::Relaxed);
            let mut w = ReadWindow::with_size(&file, limit, size);
            for &h in &handles {
                let got = w.block(h, CRC, true).unwrap();
                let want = read_block(&file, h, CRC, true, limit).unwrap();
                assert_eq!(got.data, want.data, "window {size}, block at {}", h.offset);
                assert_eq!(got.stored_size, want.stored_size);
            }
            let reads = file.1.load(std::sync::atomic::Ordering::Relaxed) - before;
            // One direct read per block above, plus the window's own.
            let own = reads - handles.len();
            if size == WINDOW_BYTES {
                assert_eq!(own, 1, "one read for the whole file");
            } else {
                assert!(own <= handles.len(), "window {size}: {own} reads");
            }
        }
    }

    /// `block_into` (decoded straight from the window into a reused
    /// buffer), over windows that stop at a piece's end or not, hands out
    /// what `read_block` reads, with the same errors; a window stopping at
    /// `fill_end` reads no further than that (unless a block asked for
    /// reaches past it).
    #[test]
    fn block_into_decodes_what_read_block_reads() {
        let (mut file, handles) = blocks(30);
        let limit = file.len();
        let end_of = |h: &BlockHandle| h.offset + h.size + BLOCK_TRAILER_SIZE as u64;
        for (from, to) in [(0, 30), (0, 10), (10, 20), (29, 30)] {
            let run = &handles[from..to];
            let fill_end = end_of(&run[run.len() - 1]);
            let mut w = ReadWindow::with_fill_end(&file, limit, fill_end);
            let mut out = Vec::new();
            for &h in run {
                let (kind, stored) = w.block_into(h, CRC, true, &mut out).unwrap();
                let want = read_block(&file, h, CRC, true, limit).unwrap();
                assert_eq!(out, want.data, "run {from}..{to}, block at {}", h.offset);
                assert_eq!((kind, stored), (want.compression, want.stored_size));
                assert!(w.start + w.buf.len() as u64 <= fill_end.max(end_of(&h)));
            }
        }
        let h = handles[7];
        file.0[h.offset as usize + 1] ^= 1;
        let mut w = ReadWindow::new(&file, limit);
        let mut out = Vec::new();
        let got = w
            .block_into(h, CRC, true, &mut out)
            .map(|_| ())
            .unwrap_err();
        let want = err(read_block(&file, h, CRC, true, limit));
        assert_eq!(got.to_string(), want);
        let past = BlockHandle {
            offset: limit - 3,
            size: 10,
        };
        let got = w
            .block_into(past, CRC, true, &mut out)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            got.to_string(),
            err(read_block(&file, past, CRC, true, limit))
        );
    }

    /// A damaged block, or a handle past the data limit, is the same error
    /// through the window as read directly (file name and offset).
    #[test]
    fn errors_are_the_direct_reads() {
        let (mut file, handles) = blocks(20);
        let h = handles[11];
        file.0[h.offset as usize + 3] ^= 1;
        let limit = file.len();
        let mut w = ReadWindow::new(&file, limit);
        let got = err(w.block(h, CRC, true));
        let want = err(read_block(&file, h, CRC, true, limit));
        assert_eq!(got, want);
        assert!(
            got.contains("mem.sst") && got.contains("checksum mismatch"),
            "{got}"
        );
        let past = BlockHandle {
            offset: limit - 3,
            size: 10,
        };
        let got = err(w.block(past, CRC, true));
        let want = err(read_block(&file, past, CRC, true, limit));
        assert_eq!(got, want);
        // The blocks around it still read.
        assert!(w.block(handles[10], CRC, true).is_ok());
        assert!(w.block(handles[12], CRC, true).is_ok());
    }
}
