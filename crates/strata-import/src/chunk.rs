//! Splitting an input stream into chunks of whole records, so that chunks
//! can be parsed on all cores.
//!
//! The split is quote-aware: [`Scanner`] follows the same state machine as
//! the `csv` crate's parser (a quote opens a quoted field only at the start
//! of a field; inside, a doubled quote or the escape byte keeps it open;
//! records end at CR or LF outside quotes), one cheap pass over the bytes,
//! and a chunk is cut only just after a line end that ends a record: an
//! LF, or a lone CR whose next byte is in the same read and is not an LF.
//! So a quoted field holding newlines is never cut, a CRLF is never split,
//! and every chunk parses exactly as the same bytes would in one
//! sequential read (tested against one).
//!
//! Lines end where records end: at a CR, an LF or a CRLF, each one line
//! end ([`line_ends`]; a quoted line break advances the count too, as
//! editors do). So every record starts on a line of its own, and a
//! record's (file, line) names it uniquely: duplicate resolution relies on
//! that (`parse` refuses a chunk where it would not hold).
//!
//! Each chunk carries its file, the physical line its first record starts
//! on,
//! and its byte offset in the whole input (the hidden row id's source). A
//! file's UTF-8 byte-order mark is dropped; its header record, if the
//! dialect has one, is taken out and returned by [`Splitter::header`].
//! A file that ends inside a quoted field is an error naming the line the
//! field opened on.

use crate::csv::dialect::{Dialect, Header};
use crate::error::{Error, Result, RowSource};
use std::io::Read;

/// A run of whole records.
#[derive(Debug)]
pub struct Chunk {
    /// Position of the chunk in the whole input (0, 1, ...).
    pub seq: u64,
    /// Index of the input file.
    pub file: usize,
    /// The physical line (1-based) the first record starts on.
    pub first_line: u64,
    /// Byte offset of `data` in the concatenation of all inputs.
    pub offset: u64,
    /// The records' bytes.
    pub data: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    StartField,
    InField,
    InQuoted,
    InEscaped,
    InDoubleEscaped,
}

/// The csv parser's view of where a byte stream is: inside a quoted field
/// or not.
#[derive(Clone, Debug)]
pub struct Scanner {
    delimiter: u8,
    quote: Option<u8>,
    escape: Option<u8>,
    double_quote: bool,
    state: State,
    /// Physical line of the next byte.
    pub line: u64,
    /// Line the open quoted field started on.
    quote_line: u64,
    /// The last byte fed was a CR (an LF next ends no further line).
    after_cr: bool,
}

/// The line ends in `data`: every CR, and every LF not just after a CR
/// (a CRLF is one line end), `after_cr` saying whether the byte before
/// `data` was a CR. CR, LF and CRLF each end a record too, so a file's
/// lines are its records (plus the line breaks inside quoted fields).
pub fn line_ends(data: &[u8], after_cr: bool) -> u64 {
    let lf = memchr::memchr_iter(b'\n', data).count();
    let mut cr = 0;
    let mut crlf = usize::from(after_cr && data.first() == Some(&b'\n'));
    for i in memchr::memchr_iter(b'\r', data) {
        cr += 1;
        crlf += usize::from(data.get(i + 1) == Some(&b'\n'));
    }
    (lf + cr - crlf) as u64
}

/// The offset just after the last record-ending line end of `data` that is
/// a safe cut: an LF, or a CR whose next byte is in `data` and is not an
/// LF (a CR at the end may be the first half of a CRLF). Every CR and LF
/// of `data` must be outside quoted fields.
fn last_cut(data: &[u8]) -> Option<usize> {
    let mut end = data.len();
    while let Some(i) = memchr::memrchr2(b'\n', b'\r', &data[..end]) {
        if data[i] == b'\n' || (i + 1 < data.len() && data[i + 1] != b'\n') {
            return Some(i + 1);
        }
        end = i;
    }
    None
}

impl Scanner {
    /// A scanner at the start of a file in dialect `d`.
    pub fn new(d: &Dialect) -> Scanner {
        Scanner {
            delimiter: d.delimiter,
            quote: d.quote,
            escape: d.escape_byte(),
            double_quote: d.escape_byte().is_none(),
            state: State::StartField,
            line: 1,
            quote_line: 0,
            after_cr: false,
        }
    }

    /// Feeds `data`; returns the offset just after the last line end in it
    /// that ends a record and is a safe cut (see [`last_cut`]), if any.
    pub fn feed(&mut self, data: &[u8]) -> Option<usize> {
        if let Some(cut) = self.feed_unquoted(data) {
            return cut;
        }
        self.feed_bytes(data)
    }

    /// The fast path of [`Self::feed`]: outside a quoted field, bytes
    /// without a quote byte cannot open one (and the escape byte only
    /// matters inside one), so the state machine reduces to "every CR or
    /// LF ends a record": the last one is the cut (found with SIMD
    /// `memchr`, not a byte at a time), and the state after the bytes depends on the last
    /// byte alone. `None` when the bytes hold a quote byte (or the scanner
    /// is inside a quoted field): the caller runs the full state machine.
    fn feed_unquoted(&mut self, data: &[u8]) -> Option<Option<usize>> {
        let outside = matches!(
            self.state,
            State::StartField | State::InField | State::InDoubleEscaped
        );
        let has_quote = self
            .quote
            .is_some_and(|q| memchr::memchr(q, data).is_some());
        if !outside || has_quote {
            return None;
        }
        let &last = data.last()?;
        self.line += line_ends(data, self.after_cr);
        self.after_cr = last == b'\r';
        self.state = if last == self.delimiter || last == b'\n' || last == b'\r' {
            State::StartField
        } else {
            State::InField
        };
        Some(last_cut(data))
    }

    /// The byte-at-a-time state machine of [`Self::feed`].
    fn feed_bytes(&mut self, data: &[u8]) -> Option<usize> {
        let mut cut = None;
        for (i, &c) in data.iter().enumerate() {
            let is_quote = self.quote == Some(c);
            let term = c == b'\n' || c == b'\r';
            self.state = match self.state {
                State::StartField | State::InField | State::InDoubleEscaped => {
                    if self.state == State::InDoubleEscaped && is_quote && self.double_quote {
                        State::InQuoted
                    } else if self.state == State::StartField && is_quote {
                        self.quote_line = self.line;
                        State::InQuoted
                    } else if c == self.delimiter {
                        State::StartField
                    } else if term {
                        if c == b'\n' || data.get(i + 1).is_some_and(|&n| n != b'\n') {
                            cut = Some(i + 1);
                        }
                        State::StartField
                    } else {
                        State::InField
                    }
                }
                State::InQuoted => {
                    if is_quote {
                        State::InDoubleEscaped
                    } else if self.escape == Some(c) {
                        State::InEscaped
                    } else {
                        State::InQuoted
                    }
                }
                State::InEscaped => State::InQuoted,
            };
            if c == b'\r' || (c == b'\n' && !self.after_cr) {
                self.line += 1;
            }
            self.after_cr = c == b'\r';
        }
        cut
    }

    /// Whether the bytes so far end inside a quoted field, and the line it
    /// opened on.
    pub fn open_quote(&self) -> Option<u64> {
        matches!(self.state, State::InQuoted | State::InEscaped).then_some(self.quote_line)
    }
}

/// Cuts one input file's bytes into chunks of about `target` bytes.
pub struct Splitter {
    reader: Box<dyn Read + Send>,
    dialect: Dialect,
    scanner: Scanner,
    file: usize,
    name: String,
    target: usize,
    /// Bytes read but not yet handed out (a partial record).
    pending: Vec<u8>,
    /// How much of `pending` the scanner has seen.
    scanned: usize,
    /// The last safe cut in the scanned part of `pending`.
    cut: Option<usize>,
    /// Line of the first byte of `pending`.
    pending_line: u64,
    /// Offset of the first byte of `pending` in the whole input.
    offset: u64,
    started: bool,
    eof: bool,
    header: Option<::csv::StringRecord>,
    /// Bytes read from the reader (decompressed).
    pub bytes_read: u64,
    /// A parsed chunk's buffer given back ([`Splitter::recycle`]), for
    /// the next chunk.
    spare: Option<Vec<u8>>,
}

impl Splitter {
    /// Splits `reader` (input file number `file`, called `name` in messages, starting at byte `offset` of the whole input) into chunks of about `target` bytes.
    pub fn new(
        reader: Box<dyn Read + Send>,
        dialect: &Dialect,
        file: usize,
        name: String,
        offset: u64,
        target: usize,
    ) -> Splitter {
        Splitter {
            reader,
            dialect: dialect.clone(),
            scanner: Scanner::new(dialect),
            file,
            name,
            target: target.max(1),
            pending: Vec::new(),
            scanned: 0,
            cut: None,
            pending_line: 1,
            offset,
            started: false,
            eof: false,
            header: None,
            bytes_read: 0,
            spare: None,
        }
    }

    /// Takes back the buffer of a chunk that was parsed: the next chunk
    /// is read into it instead of a new allocation (a new chunk-sized
    /// buffer is a fresh `mmap`, and touching its pages cost about 4% of
    /// W1's CPU in page faults). Holds at most one; its contents do not
    /// matter.
    pub fn recycle(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        if self.spare.is_none() && buf.capacity() >= self.target {
            self.spare = Some(buf);
        }
    }

    /// The header record (after the first chunk was asked for).
    pub fn header(&self) -> Option<&::csv::StringRecord> {
        self.header.as_ref()
    }

    /// The offset after the last byte handed out.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn fill(&mut self, want: usize) -> Result<()> {
        // Read at most 1 MiB per call: the caller loops until the chunk is
        // big enough, and a huge target must not mean a huge allocation.
        // Reads stop about 64 KiB past the target, so one allocation of
        // that size holds the whole chunk (no doubling and copying of
        // everything read so far), unless a record is longer than that.
        let room = self.target.saturating_sub(self.pending.len());
        let want = want.min(1 << 20).min(room.max(64 << 10));
        let start = self.pending.len();
        if self.pending.capacity() < self.target {
            self.pending
                .reserve(self.target + (64 << 10) - self.pending.len());
            // A new buffer (no parsed chunk's came back to reuse): its
            // pages mapped in at once, not a fault per page as the read
            // fills it (`pool::map_in`).
            crate::pool::map_in(&mut self.pending);
        }
        // Read into the vector's spare capacity: `read_to_end` does not
        // zero it first (a file reads straight into it), where resizing
        // before `read` wrote every byte twice (the `memset` was about 2%
        // of a W1 import's instructions). It retries interrupted reads.
        let got = (&mut self.reader)
            .take(want as u64)
            .read_to_end(&mut self.pending)
            .map_err(|e| Error::io(&self.name, e))?;
        if got < want {
            self.eof = true;
        }
        debug_assert_eq!(self.pending.len(), start + got);
        self.bytes_read += got as u64;
        Ok(())
    }

    /// The next chunk, `None` at the end of the file. `seq` is filled in by
    /// the caller.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>> {
        if !self.started {
            self.started = true;
            // At least the byte-order mark's 3 bytes, whatever the target.
            self.fill(self.target.max(3))?;
            if self.pending.starts_with(b"\xEF\xBB\xBF") {
                self.pending.drain(..3);
                self.offset += 3;
            }
            if self.dialect.header != Header::None {
                self.take_header()?;
            }
        }
        loop {
            if self.scanned < self.pending.len() {
                if let Some(c) = self.scanner.feed(&self.pending[self.scanned..]) {
                    self.cut = Some(self.scanned + c);
                }
                self.scanned = self.pending.len();
            }
            if self.eof {
                if let Some(line) = self.scanner.open_quote() {
                    return Err(Error::BadRow {
                        at: RowSource {
                            file: self.name.clone(),
                            line,
                        },
                        column: None,
                        reason: "unterminated quoted field (the file ends inside it)".into(),
                    });
                }
                self.cut = Some(self.pending.len());
                break;
            }
            if self.cut.is_some() && self.pending.len() >= self.target {
                break;
            }
            // No safe cut yet (a long record) or the chunk is still small.
            self.fill(self.target)?;
        }
        let cut = self.cut.take().unwrap_or(self.pending.len());
        if cut == 0 {
            return Ok(None);
        }
        // The bytes after the cut were scanned already (and hold no cut:
        // `cut` was the last one).
        self.scanned -= cut;
        let mut rest = self.spare.take().unwrap_or_default();
        rest.extend_from_slice(&self.pending[cut..]);
        self.pending.truncate(cut);
        let data = std::mem::replace(&mut self.pending, rest);
        // The scanner has counted the lines of every byte read so far
        // (it stands just after the rest, the bytes after the cut), so
        // the rest's line is its line less the rest's line ends: the rest
        // is at most a record, where counting the chunk's lines again was a
        // second pass over the whole input (3% of a W1 import's time). A
        // cut is never inside a CRLF, so the two counts add up.
        let rest_lines = line_ends(&self.pending, false);
        let next_line = self.scanner.line.saturating_sub(rest_lines);
        debug_assert_eq!(next_line, self.pending_line + line_ends(&data, false));
        let chunk = Chunk {
            seq: 0,
            file: self.file,
            first_line: self.pending_line,
            offset: self.offset,
            data,
        };
        self.pending_line = next_line;
        self.offset += cut as u64;
        Ok(Some(chunk))
    }

    /// Removes the first record of the file and keeps it as the header.
    fn take_header(&mut self) -> Result<()> {
        // One byte at a time: a header is short.
        let mut sc = Scanner::new(&self.dialect);
        let mut pos = 0;
        let end = loop {
            if pos == self.pending.len() {
                if self.eof {
                    break pos;
                }
                self.fill(self.target)?;
                continue;
            }
            pos += 1;
            let c = self.pending[pos - 1];
            sc.feed(&self.pending[pos - 1..pos]);
            // A CR or LF outside quotes ends the header (a CR with the LF
            // of its CRLF, if one follows).
            if matches!(c, b'\n' | b'\r') && sc.state == State::StartField {
                if c == b'\r' {
                    if pos == self.pending.len() && !self.eof {
                        self.fill(self.target)?;
                    }
                    if self.pending.get(pos) == Some(&b'\n') {
                        pos += 1;
                    }
                }
                break pos;
            }
        };
        let head: Vec<u8> = self.pending.drain(..end).collect();
        let lines = line_ends(&head, false);
        self.scanner.line += lines;
        self.pending_line += lines;
        self.offset += end as u64;
        let mut r = self.dialect.reader(head.as_slice());
        let mut rec = ::csv::StringRecord::new();
        match r.read_record(&mut rec) {
            Ok(true) => self.header = Some(rec),
            Ok(false) => self.header = None,
            Err(e) => {
                return Err(Error::BadRow {
                    at: RowSource {
                        file: self.name.clone(),
                        line: 1,
                    },
                    column: None,
                    reason: format!("header: {e}"),
                })
            }
        }
        Ok(())
    }
}

/// Physical line numbers of the records of one chunk.
///
/// The `csv` crate's own line numbers lag by one after a CRLF (it consumes
/// the LF when it starts the next record) and count no lone CR, so lines
/// are counted here, from the line ends ([`line_ends`]: CR, LF, CRLF)
/// before each record's start (the reader reports where a record's first
/// byte is: a blank line is a record too).
pub struct LineCounter<'a> {
    data: &'a [u8],
    pos: usize,
    line: u64,
}

impl<'a> LineCounter<'a> {
    /// Counts lines in `data`, whose first byte is on line `first_line`.
    pub fn new(data: &'a [u8], first_line: u64) -> LineCounter<'a> {
        LineCounter {
            data,
            pos: 0,
            line: first_line,
        }
    }

    /// The line and the true start offset of a record the parser reports
    /// at byte `start` (records must be asked for in order).
    pub fn record(&mut self, start: usize) -> (u64, usize) {
        let s = start.min(self.data.len());
        if s > self.pos {
            // SIMD search: a record is usually one line, so this finds its
            // one LF and stops (a byte-by-byte count was ~4% of W1's CPU).
            let after_cr = self.pos > 0 && self.data[self.pos - 1] == b'\r';
            self.line += line_ends(&self.data[self.pos..s], after_cr);
            self.pos = s;
        }
        (self.line, s)
    }

    /// Counts the line of the record just asked for ([`Self::record`])
    /// as ended at `end`, just past its line end, when the reader knows
    /// that is its only one (a plain record): the next record's count then
    /// starts there instead of scanning this record's bytes again (that
    /// scan was about 3% of a W1 import's instructions).
    pub fn line_ended(&mut self, end: usize) {
        if end > self.pos && end <= self.data.len() && matches!(self.data[end - 1], b'\n' | b'\r') {
            self.line += 1;
            self.pos = end;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Each chunk's first line is one more than the line ends (CR, LF,
        /// CRLF) before it in the file, whatever the chunk size (many chunks, records cut
        /// across reads), quoted fields holding LFs, CRLFs, a header and
        /// a byte-order mark: the count comes from the scanner's, less
        /// the LFs of the bytes after the cut.
        #[test]
        fn chunks_start_on_the_line_of_their_first_byte(
            data in proptest::collection::vec(prop_oneof![
                Just(b'a'), Just(b','), Just(b'"'), Just(b'\n'), Just(b'\n'), Just(b'\r')], 0..300),
            target in 1usize..40,
            header in any::<bool>(),
            bom in any::<bool>(),
        ) {
            let mut d = Dialect::csv();
            if header {
                d.header = Header::Skip;
            }
            let file = if bom { [b"\xEF\xBB\xBF".as_slice(), &data].concat() } else { data };
            let mut sp = Splitter::new(
                Box::new(std::io::Cursor::new(file.clone())),
                &d,
                0,
                "in".into(),
                0,
                target,
            );
            let mut chunks = 0;
            while let Ok(Some(c)) = sp.next_chunk() {
                let at = c.offset as usize;
                let want = 1 + line_ends(&file[..at], false);
                prop_assert_eq!(c.first_line, want, "chunk at {}", at);
                prop_assert_eq!(&file[at..at + c.data.len()], c.data.as_slice());
                chunks += 1;
            }
            prop_assert!(chunks <= file.len());
        }

        /// `feed` (with its quote-free fast path) over arbitrary pieces
        /// gives the same cuts, lines and open quote as the byte-at-a-time
        /// state machine over the same bytes.
        #[test]
        fn fast_path_agrees_with_the_state_machine(
            data in proptest::collection::vec(prop_oneof![
                Just(b'a'), Just(b','), Just(b'"'), Just(b'\n'), Just(b'\r'), Just(b'\\')], 0..60),
            cuts in proptest::collection::vec(0usize..60, 0..6),
            escape in any::<bool>(),
        ) {
            let mut d = Dialect::csv();
            if escape {
                d.escape = Some(b'\\');
            }
            let mut bounds: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            bounds.push(0);
            bounds.push(data.len());
            bounds.sort_unstable();
            let (mut fast, mut slow) = (Scanner::new(&d), Scanner::new(&d));
            for w in bounds.windows(2) {
                let piece = &data[w[0]..w[1]];
                prop_assert_eq!(fast.feed(piece), slow.feed_bytes(piece));
                prop_assert_eq!(fast.line, slow.line);
                prop_assert_eq!(fast.open_quote(), slow.open_quote());
                prop_assert_eq!(fast.state, slow.state);
            }
        }
    }
}
