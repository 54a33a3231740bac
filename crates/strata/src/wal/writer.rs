//! `LogWriter`: appends logical records to a log file, fragmenting them
//! across 32 KiB blocks.
//!
//! Invariant: `offset` is the log's length and every byte before it was
//! produced by this format (records and zero block tails), so the writer
//! always knows where the current block ends. A failed append leaves an
//! unknown partial record behind; the writer then refuses further records
//! (returning the first error again) rather than write valid records after
//! it, which a reader would rightly report as mid-log corruption.

use super::format::{block_remaining, encode_header, RecordType, HEADER_SIZE};
use crate::error::{Error, Result};
use crate::vfs::WritableFile;

/// Zeros for block tails too short to hold a header.
const ZEROS: [u8; HEADER_SIZE - 1] = [0; HEADER_SIZE - 1];

/// Writes records in the log format to a [`WritableFile`].
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
    name: String,
    offset: u64,
    failed: Option<Error>,
}

impl LogWriter {
    /// Starts a new log at the beginning of an empty `file`; `name` is used
    /// in error messages.
    pub fn new(file: Box<dyn WritableFile>, name: impl Into<String>) -> LogWriter {
        LogWriter::with_offset(file, name, 0)
    }

    /// Continues a log whose first `offset` bytes already exist; `file`
    /// must append right after them.
    ///
    /// `offset` must be the end of a log that a [`super::LogReader`] read to
    /// the end without dropping a tail (its file length). Appending after a
    /// torn tail would put valid records behind damaged bytes, which reads
    /// back as mid-log corruption.
    pub fn with_offset(
        file: Box<dyn WritableFile>,
        name: impl Into<String>,
        offset: u64,
    ) -> LogWriter {
        LogWriter {
            file,
            name: name.into(),
            offset,
            failed: None,
        }
    }

    /// Appends one logical record. It is not durable until [`sync`](Self::sync).
    pub fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.emit_record(payload);
        if let Err(e) = &r {
            self.failed = Some(e.clone());
        }
        r
    }

    fn emit_record(&mut self, payload: &[u8]) -> Result<()> {
        let mut left = payload;
        let mut begin = true;
        // At least one fragment, so an empty payload is a Full record of
        // length zero rather than nothing.
        loop {
            let leftover = block_remaining(self.offset);
            if leftover < HEADER_SIZE {
                self.append(&ZEROS[..leftover])?;
            }
            // After any padding the offset is at a header position.
            let avail = block_remaining(self.offset) - HEADER_SIZE;
            let n = left.len().min(avail);
            let end = n == left.len();
            let kind = match (begin, end) {
                (true, true) => RecordType::Full,
                (true, false) => RecordType::First,
                (false, false) => RecordType::Middle,
                (false, true) => RecordType::Last,
            };
            let (frag, rest) = left.split_at(n);
            self.append(&encode_header(kind, frag))?;
            self.append(frag)?;
            left = rest;
            begin = false;
            if end {
                return Ok(());
            }
        }
    }

    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file.append(data)?;
        self.offset += data.len() as u64;
        Ok(())
    }

    /// Hands buffered bytes to the operating system (not durable yet).
    #[cfg(any(test, feature = "internals"))]
    pub fn flush(&mut self) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.file.flush()
    }

    /// Makes every record added so far durable.
    #[cfg(any(test, feature = "internals"))]
    pub fn sync(&mut self) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.file.sync()
    }

    /// Bytes in the log so far (including any bytes it was opened with).
    pub fn len(&self) -> u64 {
        self.offset
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.offset == 0
    }

    /// The name used in error messages.
    #[cfg(any(test, feature = "internals"))]
    pub fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::{Header, BLOCK_SIZE, MAX_FRAGMENT};
    use super::*;
    use crate::vfs::{read_all, MemVfs, Vfs};
    use std::io;
    use std::path::Path;

    fn write(records: &[Vec<u8>]) -> Vec<u8> {
        let vfs = MemVfs::new();
        let path = Path::new("/log");
        let mut w = LogWriter::new(vfs.create(path).unwrap(), "log");
        for r in records {
            w.add_record(r).unwrap();
        }
        w.sync().unwrap();
        let data = read_all(&vfs, path).unwrap();
        assert_eq!(w.len(), data.len() as u64);
        data
    }

    fn header_at(data: &[u8], off: usize) -> Header {
        Header::decode(data[off..off + HEADER_SIZE].try_into().unwrap())
    }

    #[test]
    fn empty_record_is_a_full_header() {
        let data = write(&[vec![]]);
        assert_eq!(data.len(), HEADER_SIZE);
        let h = header_at(&data, 0);
        assert_eq!((h.kind, h.length), (RecordType::Full as u8, 0));
    }

    #[test]
    fn block_filling_record_leaves_no_padding() {
        let data = write(&[vec![7; MAX_FRAGMENT], vec![8; 3]]);
        assert_eq!(data.len(), BLOCK_SIZE + HEADER_SIZE + 3);
        assert_eq!(header_at(&data, 0).kind, RecordType::Full as u8);
        assert_eq!(header_at(&data, BLOCK_SIZE).kind, RecordType::Full as u8);
    }

    #[test]
    fn short_block_tail_is_zero_filled() {
        // Leaves 6 bytes in the first block: too few for a header.
        let data = write(&[vec![1; MAX_FRAGMENT - 6], vec![2; 10]]);
        assert_eq!(&data[BLOCK_SIZE - 6..BLOCK_SIZE], &[0u8; 6]);
        assert_eq!(header_at(&data, BLOCK_SIZE).kind, RecordType::Full as u8);
        assert_eq!(data.len(), BLOCK_SIZE + HEADER_SIZE + 10);
    }

    #[test]
    fn exactly_a_header_left_gives_an_empty_first_fragment() {
        let data = write(&[vec![1; MAX_FRAGMENT - 7], vec![2; 10]]);
        let h = header_at(&data, BLOCK_SIZE - 7);
        assert_eq!((h.kind, h.length), (RecordType::First as u8, 0));
        let h = header_at(&data, BLOCK_SIZE);
        assert_eq!((h.kind, h.length), (RecordType::Last as u8, 10));
    }

    #[test]
    fn large_record_is_fragmented_per_block() {
        let n = 3 * MAX_FRAGMENT + 100;
        let data = write(&[vec![9; n]]);
        let kinds: Vec<u8> = (0..4)
            .map(|b| header_at(&data, b * BLOCK_SIZE).kind)
            .collect();
        assert_eq!(kinds, vec![2, 3, 3, 4]);
        assert_eq!(header_at(&data, 3 * BLOCK_SIZE).length, 100);
        assert_eq!(data.len(), 3 * BLOCK_SIZE + HEADER_SIZE + 100);
    }

    #[test]
    fn with_offset_continues_the_block_layout() {
        let first = write(&[vec![1; MAX_FRAGMENT - 20]]);
        let both = write(&[vec![1; MAX_FRAGMENT - 20], vec![2; 100]]);
        let vfs = MemVfs::new();
        let mut f = vfs.create(Path::new("/log")).unwrap();
        f.append(&first).unwrap();
        let mut w = LogWriter::with_offset(f, "log", first.len() as u64);
        w.add_record(&[2; 100]).unwrap();
        assert_eq!(read_all(&vfs, Path::new("/log")).unwrap(), both);
        assert_eq!(w.len(), both.len() as u64);
    }

    /// Accepts `budget` bytes, then fails every append.
    struct FailingFile {
        budget: usize,
        len: u64,
    }

    impl WritableFile for FailingFile {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            if data.len() > self.budget {
                return Err(Error::io("failing", io::Error::other("disk full")));
            }
            self.budget -= data.len();
            self.len += data.len() as u64;
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            self.len
        }
    }

    #[test]
    fn failed_append_poisons_the_writer() {
        let f = FailingFile {
            budget: 100,
            len: 0,
        };
        let mut w = LogWriter::new(Box::new(f), "failing");
        w.add_record(b"fits").unwrap();
        assert!(w.add_record(&[0; 200]).is_err());
        // Even a record that would fit is refused: the tail is unknown.
        assert!(w.add_record(b"x").is_err());
        assert!(w.sync().is_err());
    }
}
