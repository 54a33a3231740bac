//! `LogReader`: reads logical records back from a log file, and when the
//! bytes stop making sense decides whether they are a torn tail (dropped,
//! reported) or corruption (an error naming the file and offset).
//!
//! The rule is stated in the [module documentation](super). The reader
//! holds at most a window of the file in memory: the block being read, plus,
//! while it looks past damage for a valid record, the fragments of the
//! candidate it is checking.

use super::format::{
    block_remaining, record_checksum, Header, RecordType, BLOCK_SIZE, HEADER_SIZE, RECYCLABLE_FULL,
    RECYCLABLE_HEADER_SIZE, RECYCLABLE_LAST, TYPE_OFFSET,
};
use crate::error::{Error, Result};
use crate::util::checksum::mask_crc;
use crate::vfs::SequentialFile;

/// What to do with bytes at the end of a log that do not form complete,
/// valid records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TailPolicy {
    /// Damage with no complete valid record after it is a torn tail: reading
    /// ends with `Ok(None)` and [`LogReader::dropped_tail`] reports it.
    /// Damage followed by a valid record is corruption. The policy for WAL
    /// and MANIFEST recovery.
    #[default]
    TolerateTornTail,
    /// Any damage is corruption, including an incomplete last record. For
    /// logs known to have been closed cleanly.
    Strict,
}

/// Why the reader stopped trusting the bytes at some offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// End of file inside a record header.
    TruncatedHeader,
    /// End of file inside a record payload.
    TruncatedPayload,
    /// A length that runs past the end of the record's block.
    BadLength,
    /// The header's checksum does not match the type and payload.
    BadChecksum,
    /// An all-zero header: preallocated or never-written space.
    ZeroFilled,
    /// A type byte the format does not define (or the reserved zero type
    /// with a non-zero header).
    UnknownType(u8),
    /// A First (and maybe Middles) not closed by a Last, either at end of
    /// file or interrupted by a new record.
    IncompleteRecord,
    /// A Middle or Last fragment with no First before it.
    OrphanFragment,
}

impl Damage {
    fn describe(self) -> String {
        match self {
            Damage::TruncatedHeader => "log record header cut off by end of file".into(),
            Damage::TruncatedPayload => "log record payload cut off by end of file".into(),
            Damage::BadLength => "log record length runs past the end of its block".into(),
            Damage::BadChecksum => "log record checksum mismatch".into(),
            Damage::ZeroFilled => "zero-filled bytes where a log record should start".into(),
            Damage::UnknownType(t) => format!("unknown log record type {t}"),
            Damage::IncompleteRecord => "fragmented log record has no Last fragment".into(),
            Damage::OrphanFragment => "Middle or Last log fragment without a First".into(),
        }
    }
}

/// What people read (the check, the open's refusals): the description, not
/// the variant's name.
impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The torn tail a [`TailPolicy::TolerateTornTail`] reader dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DroppedTail {
    /// Offset of the first dropped byte: the start of the logical record
    /// the damage belongs to.
    pub offset: u64,
    /// Bytes from `offset` to end of file.
    pub bytes: u64,
    /// What was found at the damage point.
    pub damage: Damage,
}

/// Reads logical records from a log file, one at a time.
pub struct LogReader {
    win: Window,
    name: String,
    policy: TailPolicy,
    /// Offset of the next physical record to read.
    pos: u64,
    last_record_offset: u64,
    last_record_end: u64,
    /// File offset and length of each fragment's payload of the record
    /// being read, then of the last record returned (one for a Full
    /// record): what maps a byte of the record to its place in the file.
    fragments: Vec<(u64, usize)>,
    dropped: Option<DroppedTail>,
    done: bool,
    /// Once an error is returned it is returned again, so a caller that
    /// retries cannot read past it.
    failed: Option<Error>,
}

impl LogReader {
    /// Reads `file` from its start; `name` is used in error messages.
    pub fn new(
        file: Box<dyn SequentialFile>,
        name: impl Into<String>,
        policy: TailPolicy,
    ) -> LogReader {
        LogReader {
            win: Window {
                file,
                buf: Vec::new(),
                base: 0,
                eof: false,
            },
            name: name.into(),
            policy,
            pos: 0,
            last_record_offset: 0,
            last_record_end: 0,
            fragments: Vec::new(),
            dropped: None,
            done: false,
            failed: None,
        }
    }

    /// The next logical record, or `None` at the end of the log (a clean end,
    /// or a dropped torn tail: see [`dropped_tail`](Self::dropped_tail)).
    pub fn read_record(&mut self) -> Result<Option<Vec<u8>>> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.done {
            return Ok(None);
        }
        match self.next_record() {
            Ok(r) => {
                self.done = r.is_none();
                Ok(r)
            }
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    /// File offset of the first header of the last record returned.
    pub fn last_record_offset(&self) -> u64 {
        self.last_record_offset
    }

    /// File offset just past the last record returned.
    pub fn last_record_end(&self) -> u64 {
        self.last_record_end
    }

    /// File offset of byte `i` of the last record returned, so that damage
    /// a caller finds inside a record (a write batch that does not decode)
    /// is reported where it is in the file: a record split across blocks
    /// has a fragment header before each piece. An `i` at or past the
    /// record's length maps to the end of its last fragment.
    pub fn last_record_byte_offset(&self, i: u64) -> u64 {
        let mut i = i;
        for &(at, len) in &self.fragments {
            let len = len as u64;
            if i < len {
                return at + i;
            }
            i -= len;
        }
        match self.fragments.last() {
            Some(&(at, len)) => at + len as u64,
            None => self.last_record_offset,
        }
    }

    /// The torn tail dropped at the end of the log, if any.
    pub fn dropped_tail(&self) -> Option<DroppedTail> {
        self.dropped
    }

    /// Bytes of torn tail dropped (0 if none).
    #[cfg(any(test, feature = "internals"))]
    pub fn dropped_tail_bytes(&self) -> u64 {
        self.dropped.map_or(0, |d| d.bytes)
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn name(&self) -> &str {
        &self.name
    }

    fn next_record(&mut self) -> Result<Option<Vec<u8>>> {
        // Start offset and payload so far of a fragmented record.
        let mut pending: Option<(u64, Vec<u8>)> = None;
        loop {
            let pos = self.pos;
            self.win.discard_before(pos);
            let (frag, len) = match read_physical(&mut self.win, pos, true)? {
                Physical::Record { frag, len } => (frag, len),
                Physical::Padding(n) => {
                    self.pos += n as u64;
                    continue;
                }
                Physical::Eof => {
                    return match pending {
                        None => Ok(None),
                        Some((start, _)) => self.damaged(
                            start,
                            start,
                            Damage::IncompleteRecord,
                            pos,
                            "end of file before the Last fragment",
                        ),
                    };
                }
                Physical::Foreign(t) => {
                    return Err(Error::NotSupported(format!(
                        "{}: log record of type {t} at offset {pos} (a RocksDB recyclable or \
                         compressed WAL record, which Strata does not read)",
                        self.name
                    )));
                }
                Physical::Damaged(d) => {
                    let start = pending.as_ref().map_or(pos, |p| p.0);
                    return self.damaged(start, pos, d, pos + 1, "");
                }
            };
            let payload = self.win.slice(pos + HEADER_SIZE as u64, len);
            self.pos = pos + (HEADER_SIZE + len) as u64;
            if pending.is_none() {
                // A new record (or damage, after which nothing is read).
                self.fragments.clear();
            }
            self.fragments.push((pos + HEADER_SIZE as u64, len));
            match (frag, pending.as_mut()) {
                (Frag::Full, None) => {
                    let rec = payload.to_vec();
                    return Ok(Some(self.returned(pos, rec)));
                }
                (Frag::First, None) => pending = Some((pos, payload.to_vec())),
                (Frag::Middle, Some((_, buf))) => buf.extend_from_slice(payload),
                (Frag::Last, Some((start, buf))) => {
                    buf.extend_from_slice(payload);
                    let (start, rec) = (*start, std::mem::take(buf));
                    return Ok(Some(self.returned(start, rec)));
                }
                (Frag::Full | Frag::First, Some((start, _))) => {
                    // The interrupting record may itself be the valid
                    // record that makes this corruption, so look from it.
                    let start = *start;
                    return self.damaged(
                        start,
                        start,
                        Damage::IncompleteRecord,
                        pos,
                        &format!("interrupted by a new record at offset {pos}"),
                    );
                }
                (Frag::Middle | Frag::Last, None) => {
                    return self.damaged(pos, pos, Damage::OrphanFragment, pos + 1, "");
                }
            }
        }
    }

    fn returned(&mut self, start: u64, rec: Vec<u8>) -> Vec<u8> {
        self.last_record_offset = start;
        self.last_record_end = self.pos;
        rec
    }

    /// Applies the tail policy to damage found at `at`, inside the logical
    /// record starting at `start`. Complete records are searched for from
    /// `scan_from` on.
    fn damaged(
        &mut self,
        start: u64,
        at: u64,
        damage: Damage,
        scan_from: u64,
        detail: &str,
    ) -> Result<Option<Vec<u8>>> {
        let mut what = damage.describe();
        if !detail.is_empty() {
            what = format!("{what} ({detail})");
        }
        if self.policy == TailPolicy::Strict {
            return Err(Error::corruption(&self.name, at, what));
        }
        match find_complete_record(&mut self.win, scan_from)? {
            Some(valid) => Err(Error::corruption(
                &self.name,
                at,
                format!(
                    "{what}; a valid record follows at offset {valid}, so this is not a torn tail"
                ),
            )),
            None => {
                // The search read to end of file, so the window's end is the
                // file length.
                self.dropped = Some(DroppedTail {
                    offset: start,
                    bytes: self.win.end().saturating_sub(start),
                    damage,
                });
                Ok(None)
            }
        }
    }
}

/// The fragment role of a valid physical record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frag {
    Full,
    First,
    Middle,
    Last,
}

/// What is at a header position.
enum Physical {
    /// A record whose checksum verifies; its payload is in the window.
    Record {
        frag: Frag,
        len: usize,
    },
    /// A block tail too short for a header, to be skipped.
    Padding(usize),
    /// End of file exactly at a header position.
    Eof,
    /// A record with a good checksum but a type from a format Strata does
    /// not read.
    Foreign(u8),
    Damaged(Damage),
}

/// Parses the physical record at `pos`. `check_foreign` verifies unknown
/// types against RocksDB's other record layouts; the damage search skips it
/// because it would checksum a block's worth of bytes at most offsets of
/// garbage.
fn read_physical(win: &mut Window, pos: u64, check_foreign: bool) -> Result<Physical> {
    let rem = block_remaining(pos);
    if rem < HEADER_SIZE {
        return Ok(Physical::Padding(rem));
    }
    win.fill_to(pos + HEADER_SIZE as u64)?;
    match win.available(pos) {
        0 => return Ok(Physical::Eof),
        n if n < HEADER_SIZE as u64 => return Ok(Physical::Damaged(Damage::TruncatedHeader)),
        _ => {}
    }
    let raw = win.header(pos);
    let h = Header::decode(&raw);
    let frag = match RecordType::from_u8(h.kind) {
        Some(RecordType::Full) => Frag::Full,
        Some(RecordType::First) => Frag::First,
        Some(RecordType::Middle) => Frag::Middle,
        Some(RecordType::Last) => Frag::Last,
        Some(RecordType::Zero) if raw == [0; HEADER_SIZE] => {
            return Ok(Physical::Damaged(Damage::ZeroFilled))
        }
        _ => {
            if check_foreign && foreign_record_at(win, pos, &h)? {
                return Ok(Physical::Foreign(h.kind));
            }
            return Ok(Physical::Damaged(Damage::UnknownType(h.kind)));
        }
    };
    if h.length > rem - HEADER_SIZE {
        return Ok(Physical::Damaged(Damage::BadLength));
    }
    let end = pos + (HEADER_SIZE + h.length) as u64;
    win.fill_to(end)?;
    if win.end() < end {
        return Ok(Physical::Damaged(Damage::TruncatedPayload));
    }
    let payload = win.slice(pos + HEADER_SIZE as u64, h.length);
    if record_checksum(h.kind, payload) != h.checksum {
        return Ok(Physical::Damaged(Damage::BadChecksum));
    }
    Ok(Physical::Record {
        frag,
        len: h.length,
    })
}

/// Whether an unknown-type header at `pos` is a well-formed record of a
/// layout RocksDB also writes: the recyclable types (a 4-byte log number
/// after the type, covered by the checksum) or a later legacy-header type.
/// Treating such a file as damage would silently drop all of it.
fn foreign_record_at(win: &mut Window, pos: u64, h: &Header) -> Result<bool> {
    let header_size = if (RECYCLABLE_FULL..=RECYCLABLE_LAST).contains(&h.kind) {
        RECYCLABLE_HEADER_SIZE
    } else {
        HEADER_SIZE
    };
    if h.kind == 0 || header_size + h.length > block_remaining(pos) {
        return Ok(false);
    }
    let end = pos + (header_size + h.length) as u64;
    win.fill_to(end)?;
    if win.end() < end {
        return Ok(false);
    }
    let from = pos + TYPE_OFFSET as u64;
    let covered = win.slice(from, header_size - TYPE_OFFSET + h.length);
    Ok(mask_crc(crc32c::crc32c(covered)) == h.checksum)
}

/// Looks for a complete, valid logical record (a Full record, or a
/// block-filling First followed by Middles and a Last, every checksum good)
/// starting at any header position at or after `from`. Returns its offset, or `None` after
/// reaching end of file.
fn find_complete_record(win: &mut Window, from: u64) -> Result<Option<u64>> {
    let mut p = from;
    loop {
        let rem = block_remaining(p);
        if rem < HEADER_SIZE {
            p += rem as u64;
            continue;
        }
        win.discard_before(p);
        win.fill_to(p + HEADER_SIZE as u64)?;
        if win.available(p) < HEADER_SIZE as u64 {
            return Ok(None);
        }
        // Every header position of this block whose header is in the
        // window, tested with a one-byte look at the type first: this loop
        // runs once per byte of a torn tail.
        let stop = (p + (rem - HEADER_SIZE) as u64).min(win.end() - HEADER_SIZE as u64);
        let mut q = p;
        while q <= stop {
            let types = win.slice(q + TYPE_OFFSET as u64, (stop - q + 1) as usize);
            let Some(i) = types
                .iter()
                .position(|&t| t == RecordType::Full as u8 || t == RecordType::First as u8)
            else {
                break;
            };
            q += i as u64;
            if complete_record_at(win, q)? {
                return Ok(Some(q));
            }
            q += 1;
        }
        p = stop + 1;
    }
}

/// Whether a complete logical record starts at `p`, a header position whose
/// header is in the window.
fn complete_record_at(win: &mut Window, p: u64) -> Result<bool> {
    // Cheap filters before any checksum, so scanning garbage costs little:
    // a logical record starts with a Full or a First, and a writer emits a
    // First only for a record that does not fit its block, so a First
    // always runs exactly to the end of the block.
    let h = Header::decode(&win.header(p));
    let fills_block = h.length == block_remaining(p) - HEADER_SIZE;
    match RecordType::from_u8(h.kind) {
        Some(RecordType::Full) => {}
        Some(RecordType::First) if fills_block => {}
        _ => return Ok(false),
    }
    let mut q = match read_physical(win, p, false)? {
        Physical::Record {
            frag: Frag::Full, ..
        } => return Ok(true),
        Physical::Record {
            frag: Frag::First,
            len,
        } => p + (HEADER_SIZE + len) as u64,
        _ => return Ok(false),
    };
    loop {
        match read_physical(win, q, false)? {
            Physical::Padding(n) => q += n as u64,
            Physical::Record {
                frag: Frag::Middle,
                len,
            } => q += (HEADER_SIZE + len) as u64,
            Physical::Record {
                frag: Frag::Last, ..
            } => return Ok(true),
            _ => return Ok(false),
        }
    }
}

/// A sliding window over a sequential file: `buf` holds the bytes at file
/// offsets `base..base + buf.len()`.
struct Window {
    file: Box<dyn SequentialFile>,
    buf: Vec<u8>,
    base: u64,
    eof: bool,
}

impl Window {
    fn end(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// Bytes in the window from `off` on.
    fn available(&self, off: u64) -> u64 {
        self.end().saturating_sub(off)
    }

    /// Reads until the window reaches `upto` or the file ends.
    fn fill_to(&mut self, upto: u64) -> Result<()> {
        while !self.eof && self.end() < upto {
            let old = self.buf.len();
            self.buf.resize(old + BLOCK_SIZE, 0);
            let r = self.file.read(&mut self.buf[old..]);
            let n = match r {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(e);
                }
            };
            self.buf.truncate(old + n);
            self.eof = n == 0;
        }
        Ok(())
    }

    /// The `len` bytes at `off`; the caller has checked they are in the
    /// window.
    fn slice(&self, off: u64, len: usize) -> &[u8] {
        let i = (off - self.base) as usize;
        &self.buf[i..i + len]
    }

    fn header(&self, off: u64) -> [u8; HEADER_SIZE] {
        let mut h = [0u8; HEADER_SIZE];
        h.copy_from_slice(self.slice(off, HEADER_SIZE));
        h
    }

    /// Forgets bytes before `off`, in steps of several blocks so the copy
    /// is amortised.
    fn discard_before(&mut self, off: u64) {
        let cut = off.min(self.end()).saturating_sub(self.base) as usize;
        if cut >= 4 * BLOCK_SIZE {
            self.buf.drain(..cut);
            self.base += cut as u64;
        }
    }
}
