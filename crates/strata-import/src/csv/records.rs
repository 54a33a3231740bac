//! The records of one chunk already in memory, read with `csv_core`.
//!
//! Owns [`Records`]: the parse workers' record reader. It drives the same
//! `csv_core` state machine the `csv` crate's reader drives (configured by
//! [`Dialect::core_reader`] exactly as [`Dialect::reader`] configures the
//! `csv` crate), straight over the chunk's bytes: the `csv` crate's reader
//! first copies its input through a `BufReader` and then into a
//! `ByteRecord`, which on W1 was about a tenth of the import's CPU. A line
//! with no quote byte and no CR (most lines of most dumps) does not need
//! the state machine at all: its fields are the pieces between delimiters
//! (found with SIMD `memchr`), read in place without a copy; every other
//! line goes through `csv_core`. The records, fields and byte positions
//! are the `csv` crate's either way (a property test checks them against
//! it on arbitrary input, mixing both paths).
//!
//! Whether a field was quoted matters for one thing: a quoted field is
//! never NULL, even when its text is the NULL marker (`""` is the empty
//! string, as in PostgreSQL's CSV format), and `csv_core` does not say.
//! A line on the plain path has no quote byte, so none of its fields is
//! quoted; a `csv_core` record with a field equal to the NULL marker is
//! read a second time, field by field, by a second reader that notes the
//! byte each field starts with ([`Records`]'s `probe`). Records without
//! such a field (nearly all) pay nothing.
//!
//! A blank line is a record of one empty unquoted field, as PostgreSQL's
//! COPY reads it (the `csv` crate and `csv_core` skip blank lines): a
//! one-column table writes its NULL (CSV) or its empty string (the text
//! format) as a blank line, and in any other table a blank line is a row
//! with too few fields, reported with its line.
//!
//! Invariants: a record's `start` is where its first byte is and its
//! `end` is just past its line break (the LF of a CRLF included); records
//! come in input order; the field bytes of the current record are valid
//! until the next call; `quoted` is exact for every field whose text is
//! the NULL marker (and false for every field of a plain line).

use super::dialect::Dialect;
use csv_core::ReadRecordResult;

/// Reads the records of `data` one at a time (see the module
/// documentation).
pub struct Records<'a> {
    rdr: csv_core::Reader,
    data: &'a [u8],
    pos: usize,
    /// Bytes that send a line to `csv_core` (see [`Records::plain_line`]).
    special: (u8, u8),
    delimiter: u8,
    /// csv_core's output: the current record's field bytes, back to back.
    out: Vec<u8>,
    /// `ends[i]`: where field `i` ends in `out`.
    ends: Vec<usize>,
    /// The current record's fields, as ranges of [`Record::bytes`].
    fields: Vec<std::ops::Range<usize>>,
    /// `quoted[i]`: field `i` of the current record was quoted. Filled
    /// only for a `csv_core` record with a field equal to `null`; empty
    /// (no field quoted) otherwise.
    quoted: Vec<bool>,
    /// The NULL marker, and the dialect's quote byte (`None`: no field is
    /// ever quoted, so nothing needs probing).
    null: Vec<u8>,
    quote: Option<u8>,
    /// A second `csv_core` reader, configured as `rdr`, that re-reads a
    /// record field by field to find which fields were quoted.
    probe: csv_core::Reader,
    done: bool,
}

/// One record: where it lies in the input and its fields.
pub struct Record<'r> {
    /// Offset where the reader stood before the record.
    pub start: usize,
    /// Offset just past the record.
    pub end: usize,
    /// Bytes holding every field (quotes and escapes resolved), maybe
    /// with delimiters between them.
    pub bytes: &'r [u8],
    /// Each field's range in `bytes`.
    pub fields: &'r [std::ops::Range<usize>],
    /// The record is one line read in place, the line break being its
    /// only LF (the byte before `end`, unless the data ends there).
    pub plain: bool,
    /// Every byte of `bytes` is ASCII (so every field is valid UTF-8),
    /// found by the plain path's pass; false when not known (csv_core's
    /// records).
    pub ascii: bool,
    /// Which fields were quoted in the input, for the fields whose text
    /// is the NULL marker (see the module documentation); read it with
    /// [`Record::quoted`].
    quoted: &'r [bool],
}

impl Record<'_> {
    /// Fields in the record.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the record has no fields (never, for a record read).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Field `i`'s range in `bytes`.
    pub fn range(&self, i: usize) -> std::ops::Range<usize> {
        self.fields[i].clone()
    }
    /// Whether field `i` was quoted in the input. Exact for a field whose
    /// text is the dialect's NULL marker; may be false for other quoted
    /// fields (nobody asks about them).
    pub fn quoted(&self, i: usize) -> bool {
        self.quoted.get(i).copied().unwrap_or(false)
    }
}

impl<'a> Records<'a> {
    /// A reader over `data` in `dialect`.
    pub fn new(dialect: &Dialect, data: &'a [u8]) -> Records<'a> {
        // Without quoting, only CR is special (an escape byte acts only
        // inside quotes); the pair repeats CR then.
        let special = (b'\r', dialect.quote.unwrap_or(b'\r'));
        Records {
            rdr: dialect.core_reader(),
            data,
            pos: 0,
            special,
            delimiter: dialect.delimiter,
            out: vec![0; 1024],
            ends: vec![0; 64],
            fields: Vec::with_capacity(64),
            quoted: Vec::new(),
            null: dialect.null.as_bytes().to_vec(),
            quote: dialect.quote,
            probe: dialect.core_reader(),
            done: false,
        }
    }

    /// The next record, or `None` at the end of the data.
    pub fn next_record(&mut self) -> Option<Record<'_>> {
        if self.done {
            return None;
        }
        let start = self.pos;
        let data = self.data;
        let Some(rest) = data.get(start..).filter(|r| !r.is_empty()) else {
            // csv_core is told the data ended (a last record without a
            // line break may be pending in it).
            return self.read_core(start);
        };
        // A blank line is a record of one empty field, as PostgreSQL's
        // COPY reads it (csv_core would skip it): a one-column table's
        // NULL in CSV or empty string in the text format, which is how
        // such a row is written out; any other table's row with too few
        // fields, reported with its line rather than dropped unseen.
        if matches!(rest[0], b'\n' | b'\r') {
            let len = if rest.starts_with(b"\r\n") { 2 } else { 1 };
            self.pos = start + len;
            self.fields.clear();
            self.fields.push(0..0);
            return Some(Record {
                start,
                end: self.pos,
                bytes: &[],
                fields: &self.fields,
                plain: true,
                ascii: true,
                quoted: &[],
            });
        }
        // The fast path: a line that holds neither a quote nor a CR,
        // whose fields are simply the pieces between delimiters (what
        // csv_core makes of it too), read in place.
        if let Some((len, ascii)) =
            split_plain(rest, self.delimiter, self.special, &mut self.fields)
        {
            self.pos = (start + len + 1).min(self.data.len());
            return Some(Record {
                start,
                end: self.pos,
                bytes: &rest[..len],
                fields: &self.fields,
                plain: true,
                ascii,
                quoted: &[],
            });
        }
        self.read_core(start)
    }

    /// One record read by csv_core from `self.pos` (the reader stood at
    /// `start` before it).
    fn read_core(&mut self, start: usize) -> Option<Record<'_>> {
        let record_from = self.pos;
        let (mut nout, mut nend) = (0, 0);
        loop {
            // An empty input tells csv_core the data ended (it then ends a
            // last record that has no terminator).
            let input = self.data.get(self.pos..).unwrap_or_default();
            let (res, i, o, e) =
                self.rdr
                    .read_record(input, &mut self.out[nout..], &mut self.ends[nend..]);
            self.pos += i;
            nout += o;
            nend += e;
            match res {
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => {
                    let n = self.out.len() * 2;
                    self.out.resize(n, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    let n = self.ends.len() * 2;
                    self.ends.resize(n, 0);
                }
                ReadRecordResult::Record => break,
                ReadRecordResult::End => {
                    self.done = true;
                    return None;
                }
            }
        }
        self.fields.clear();
        let mut from = 0;
        for &e in &self.ends[..nend] {
            self.fields.push(from..e);
            from = e;
        }
        self.quoted.clear();
        if self.quote.is_some()
            && self
                .fields
                .iter()
                .any(|f| self.out[f.clone()] == self.null[..])
        {
            self.probe_quoted(record_from);
        }
        // csv_core ends a record at the CR of a CRLF and skips the LF as
        // the next record starts; the LF is this record's, and the next
        // record starts after it (else it would read as a blank line).
        if self.pos > record_from
            && self.data[self.pos - 1] == b'\r'
            && self.data.get(self.pos) == Some(&b'\n')
        {
            self.pos += 1;
        }
        Some(Record {
            start,
            end: self.pos,
            bytes: &self.out[..nout],
            fields: &self.fields,
            plain: false,
            ascii: false,
            quoted: &self.quoted,
        })
    }

    /// Fills `quoted` for the record `rdr` just read from `from` to
    /// `self.pos`: the probe reads the same bytes field by field from
    /// the state every record starts in (`rdr` stands there after each
    /// record, and the plain path never moves it), so it finds the same
    /// fields, and notes whether each one's first byte is the quote. The
    /// first field's blank lines before it (skipped by the reader) are
    /// skipped here too. A field's output is not needed, so one small
    /// buffer is overwritten as often as it fills.
    fn probe_quoted(&mut self, from: usize) {
        let Some(quote) = self.quote else {
            return;
        };
        let raw = &self.data[from..self.pos];
        self.probe.reset();
        let mut sink = [0u8; 256];
        let (mut at, mut field_start) = (0, 0);
        loop {
            // Past the record's bytes, an empty input tells the probe the
            // data ended (a last record without a line break ends there).
            let (res, n, _) = self.probe.read_field(&raw[at..], &mut sink);
            at += n;
            match res {
                csv_core::ReadFieldResult::Field { record_end } => {
                    let head = &raw[field_start..];
                    let first = if self.quoted.is_empty() {
                        head.iter().find(|&&b| b != b'\r' && b != b'\n')
                    } else {
                        head.first()
                    };
                    self.quoted.push(first == Some(&quote));
                    field_start = at;
                    if record_end || self.quoted.len() == self.fields.len() {
                        return;
                    }
                }
                csv_core::ReadFieldResult::InputEmpty | csv_core::ReadFieldResult::OutputFull => {}
                csv_core::ReadFieldResult::End => return,
            }
        }
    }
}

/// Reads the line at the start of `rest` (up to its LF, or the end) if
/// it holds neither of the `special` bytes (a quote, a CR): its length
/// and whether it is all ASCII, with `fields` set to the ranges of its
/// pieces between `delimiter`s (what csv_core makes of such a line).
/// `None` for any other line.
///
/// One pass finds the line's end, its special bytes and its delimiters
/// together, 16 bytes at a time (SSE2, which every x86_64 has): the
/// three `memchr` passes it replaces (the LF, the special bytes, then one
/// call per delimiter) were about a tenth of a W1 import's instructions.
/// The same pass sees whether any byte has its high bit set: an ASCII
/// line needs no UTF-8 check of its fields (that check, one per record,
/// was about 3% of a W1 import's time).
fn split_plain(
    rest: &[u8],
    delimiter: u8,
    special: (u8, u8),
    fields: &mut Vec<std::ops::Range<usize>>,
) -> Option<(usize, bool)> {
    fields.clear();
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 CPU has
    // it, so a function that enables it can run anywhere here.
    let (at, mut from, mut ascii) = match unsafe { split_blocks(rest, delimiter, special, fields) }
    {
        Blocks::Special => return None,
        Blocks::End { end, ascii } => return Some((end, ascii)),
        Blocks::Tail { at, from, ascii } => (at, from, ascii),
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (at, mut from, mut ascii) = (0, 0, true);
    for (i, &b) in rest.iter().enumerate().skip(at) {
        if b == b'\n' {
            fields.push(from..i);
            return Some((i, ascii));
        }
        if b == special.0 || b == special.1 {
            return None;
        }
        if b == delimiter {
            fields.push(from..i);
            from = i + 1;
        }
        ascii &= b.is_ascii();
    }
    fields.push(from..rest.len());
    Some((rest.len(), ascii))
}

/// Where [`split_blocks`] stopped.
#[cfg(target_arch = "x86_64")]
enum Blocks {
    /// The line holds a special byte.
    Special,
    /// The line ends (its LF) at `end`; `fields` is complete; `ascii`:
    /// no byte before `end` has its high bit set.
    End { end: usize, ascii: bool },
    /// Fewer than 16 bytes are left from `at`, the current field
    /// starting at `from`; `ascii`: no byte before `at` has its high bit
    /// set.
    Tail { at: usize, from: usize, ascii: bool },
}

/// [`split_plain`]'s pass over whole 16-byte blocks of `rest`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn split_blocks(
    rest: &[u8],
    delimiter: u8,
    special: (u8, u8),
    fields: &mut Vec<std::ops::Range<usize>>,
) -> Blocks {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let vd = _mm_set1_epi8(delimiter as i8);
    let vn = _mm_set1_epi8(b'\n' as i8);
    let v0 = _mm_set1_epi8(special.0 as i8);
    let v1 = _mm_set1_epi8(special.1 as i8);
    let (mut at, mut from) = (0, 0);
    // The high bits of the line's bytes so far.
    let mut high = 0u32;
    while let Some(block) = rest.get(at..at + 16) {
        // SAFETY: `block` is 16 readable bytes, and an unaligned load may
        // read from any address.
        let v = unsafe { _mm_loadu_si128(block.as_ptr().cast()) };
        let lf = _mm_movemask_epi8(_mm_cmpeq_epi8(v, vn)) as u32;
        let sp =
            _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, v0), _mm_cmpeq_epi8(v, v1))) as u32;
        // The bytes of this block before the line's LF.
        let mine = if lf == 0 {
            0xFFFF
        } else {
            (lf & lf.wrapping_neg()) - 1
        };
        if sp & mine != 0 {
            return Blocks::Special;
        }
        high |= _mm_movemask_epi8(v) as u32 & mine;
        let mut d = _mm_movemask_epi8(_mm_cmpeq_epi8(v, vd)) as u32 & mine;
        while d != 0 {
            let i = at + d.trailing_zeros() as usize;
            fields.push(from..i);
            from = i + 1;
            d &= d - 1;
        }
        if lf != 0 {
            let end = at + lf.trailing_zeros() as usize;
            fields.push(from..end);
            return Blocks::End {
                end,
                ascii: high == 0,
            };
        }
        at += 16;
    }
    Blocks::Tail {
        at,
        from,
        ascii: high == 0,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use proptest::prelude::*;

    /// Every record, field and position as [`Records`] must report them,
    /// modelled on the `csv` crate's reader: its records, with each blank
    /// line it skipped (LF, CRLF or a lone CR) as a record of one empty
    /// field, and each record's end past the LF of a CRLF it ended with
    /// (the crate consumes that LF as the next record starts).
    fn by_csv_crate(d: &Dialect, data: &[u8]) -> Vec<(u64, u64, Vec<Vec<u8>>)> {
        let mut r = d.reader(data);
        let mut rec = ::csv::ByteRecord::new();
        let mut out = Vec::new();
        // Splits `data[from..to]` (line breaks only) into blank lines.
        let blanks = |out: &mut Vec<(u64, u64, Vec<Vec<u8>>)>, mut from: usize, to: usize| {
            while from < to {
                let len = if data[from..to].starts_with(b"\r\n") {
                    2
                } else {
                    1
                };
                out.push((from as u64, (from + len) as u64, vec![Vec::new()]));
                from += len;
            }
        };
        // Where the last record ended (past its whole line break).
        let mut at = 0usize;
        loop {
            let start = r.position().byte() as usize;
            if !r.read_byte_record(&mut rec).unwrap() {
                blanks(&mut out, at, data.len());
                return out;
            }
            assert_eq!(
                rec.position().map_or(start as u64, |p| p.byte()),
                start as u64,
                "the csv crate's record position"
            );
            // The crate stood before the blank lines it skipped.
            let first = start.max(at)
                + data[start.max(at)..]
                    .iter()
                    .take_while(|&&b| b == b'\r' || b == b'\n')
                    .count();
            blanks(&mut out, at.max(start), first);
            let mut end = r.position().byte() as usize;
            if end > 0 && data[end - 1] == b'\r' && data.get(end) == Some(&b'\n') {
                end += 1;
            }
            out.push((
                first as u64,
                end as u64,
                rec.iter().map(<[u8]>::to_vec).collect(),
            ));
            at = end;
        }
    }

    fn by_records(d: &Dialect, data: &[u8]) -> Vec<(u64, u64, Vec<Vec<u8>>)> {
        let mut r = Records::new(d, data);
        let mut out = Vec::new();
        while let Some(rec) = r.next_record() {
            // The plain path knows exactly whether its line is ASCII;
            // csv_core's records never claim it.
            assert_eq!(
                rec.ascii,
                rec.plain && rec.bytes.is_ascii(),
                "{:?}",
                rec.bytes
            );
            let fields = (0..rec.len())
                .map(|i| rec.bytes[rec.range(i)].to_vec())
                .collect();
            out.push((rec.start as u64, rec.end as u64, fields));
        }
        out
    }

    fn dialects() -> Vec<Dialect> {
        let mut esc = Dialect::csv();
        esc.escape = Some(b'\\');
        let mut semi = Dialect::csv();
        semi.delimiter = b';';
        semi.quote = Some(b'\'');
        vec![Dialect::csv(), Dialect::tsv(), esc, semi]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// The same records, fields and positions as the `csv` crate's
        /// reader, for every dialect, on input made of the bytes that
        /// matter (delimiters, quotes, escapes, CR, LF) and a few others,
        /// with fields longer than the initial buffers.
        #[test]
        fn records_match_the_csv_crate(
            data in proptest::collection::vec(prop_oneof![
                Just(b','), Just(b'"'), Just(b'\r'), Just(b'\n'), Just(b'\t'),
                Just(b'\\'), Just(b';'), Just(b'\''), Just(b'a'), Just(0xc3u8),
            ], 0..300),
            long in 0usize..3000,
        ) {
            let mut data = data;
            // A long field somewhere (past the 1 KiB output buffer).
            let at = data.len() / 2;
            data.splice(at..at, std::iter::repeat_n(b'x', long));
            for d in dialects() {
                prop_assert_eq!(by_records(&d, &data), by_csv_crate(&d, &data), "{:?}", d);
            }
        }
    }

    /// A field written `(text, quoted)` in dialect `d`: quoted ones
    /// between quotes (an inner quote escaped or doubled), others as is.
    fn write_field(d: &Dialect, text: &str, quoted: bool, out: &mut Vec<u8>) {
        let Some(q) = d.quote.filter(|_| quoted) else {
            out.extend_from_slice(text.as_bytes());
            return;
        };
        out.push(q);
        for &b in text.as_bytes() {
            if b == q || Some(b) == d.escape {
                out.push(d.escape.unwrap_or(q));
            }
            out.push(b);
        }
        out.push(q);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        /// Every field whose text is the NULL marker is reported quoted
        /// exactly when it was written quoted, on both reader paths (a
        /// line with no quoted field and no CR takes the plain path), for
        /// records with blank lines before them (records of one empty
        /// field), CRLF or LF, and a last record without a line break.
        #[test]
        fn quoted_is_exact_for_fields_equal_to_the_null_marker(
            records in proptest::collection::vec(
                proptest::collection::vec(
                    (prop_oneof![
                        Just(""), Just("\\N"), Just("a"), Just("a,b"), Just("\""),
                        Just("x\ny"), Just("\r"), Just("\\"), Just("'"),
                    ], any::<bool>()),
                    1..6,
                ),
                1..8,
            ),
            blank in proptest::collection::vec(any::<bool>(), 8),
            crlf in any::<bool>(),
            last_break in any::<bool>(),
        ) {
            let mut esc = Dialect::csv();
            esc.escape = Some(b'\\');
            esc.null = "\\N".into();
            let mut semi = Dialect::csv();
            semi.delimiter = b';';
            semi.quote = Some(b'\'');
            for d in [Dialect::csv(), esc, semi] {
                // What each field must read as: its text, and (if that is
                // the NULL marker) whether it was quoted. A field holding
                // a special byte is always quoted.
                let mut data = Vec::new();
                let mut want = Vec::new();
                for (r, fields) in records.iter().enumerate() {
                    if blank[r] {
                        // A blank line: a record of one empty, unquoted field.
                        data.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
                        want.push(vec![(Vec::new(), false)]);
                    }
                    let mut row = Vec::new();
                    for (i, (text, quoted)) in fields.iter().enumerate() {
                        if i > 0 {
                            data.push(d.delimiter);
                        }
                        let special = text.bytes().any(|b| {
                            b == d.delimiter || Some(b) == d.quote || b == b'\r' || b == b'\n'
                        });
                        let quoted = *quoted || special;
                        write_field(&d, text, quoted, &mut data);
                        row.push((text.as_bytes().to_vec(), quoted));
                    }
                    // A last line of one empty unquoted field and no line
                    // break is no line at all: not a case here.
                    let last = r + 1 == records.len() && !last_break;
                    if last && row.len() == 1 && row[0].0.is_empty() && !row[0].1 {
                        data.push(d.delimiter);
                        row.push((Vec::new(), false));
                    }
                    if r + 1 < records.len() || last_break {
                        data.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
                    }
                    want.push(row);
                }
                let mut reader = Records::new(&d, &data);
                let mut got = Vec::new();
                while let Some(rec) = reader.next_record() {
                    let row: Vec<(Vec<u8>, Option<bool>)> = (0..rec.len())
                        .map(|i| {
                            let text = rec.bytes[rec.range(i)].to_vec();
                            let q = (text == d.null.as_bytes()).then(|| rec.quoted(i));
                            (text, q)
                        })
                        .collect();
                    got.push(row);
                }
                let want: Vec<Vec<(Vec<u8>, Option<bool>)>> = want
                    .into_iter()
                    .map(|row| {
                        row.into_iter()
                            .map(|(t, q)| {
                                let is_null = t == d.null.as_bytes();
                                (t, is_null.then_some(q))
                            })
                            .collect()
                    })
                    .collect();
                prop_assert_eq!(got, want, "{:?} {:?}", d, String::from_utf8_lossy(&data));
            }
        }
    }

    /// Plain lines (no quote, no CR) with fields of every length from 0
    /// to 40, so delimiters and line ends fall at every offset of the
    /// 16-byte blocks, with a quoted line now and then (the csv_core
    /// path) and blank lines.
    #[test]
    fn plain_lines_split_at_every_offset() {
        let mut data = Vec::new();
        for n in 0..41usize {
            for k in 1..5usize {
                let fields: Vec<String> = (0..k).map(|j| "y".repeat((n + j) % 41)).collect();
                data.extend_from_slice(fields.join(",").as_bytes());
                data.push(b'\n');
            }
            if n % 7 == 0 {
                data.extend_from_slice(b"\"q,\"\"\",z\n\n");
            }
        }
        for d in dialects() {
            assert_eq!(by_records(&d, &data), by_csv_crate(&d, &data), "{d:?}");
        }
    }

    /// A byte with its high bit set at any offset of a plain line (in
    /// the 16-byte blocks, in the tail, in the block holding the LF)
    /// makes the record not ASCII; one just after the LF (in the next
    /// line) does not.
    #[test]
    fn a_high_byte_anywhere_in_the_line_is_seen() {
        for len in 1..50usize {
            for at in 0..=len {
                let mut line: Vec<u8> = (0..len)
                    .map(|i| if i % 5 == 4 { b',' } else { b'a' })
                    .collect();
                line.push(b'\n');
                let mut next = b"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n".to_vec();
                if at < len {
                    line[at] = 0xc3;
                } else {
                    next[0] = 0xc3;
                }
                let data = [line, next].concat();
                let mut r = Records::new(&Dialect::csv(), &data);
                let first = r.next_record().unwrap();
                assert!(first.plain);
                assert_eq!(first.ascii, at == len, "len {len}, high byte at {at}");
                let second = r.next_record().unwrap();
                assert_eq!(second.ascii, at < len, "len {len}, high byte at {at}");
            }
        }
    }

    /// Many fields (past the initial 64 ends), a blank line and a record
    /// without a final line break.
    #[test]
    fn wide_records_and_no_final_newline() {
        let row: Vec<String> = (0..200).map(|i| i.to_string()).collect();
        let data = format!("{}\n\n{}", row.join(","), row.join(","));
        let d = Dialect::csv();
        let got = by_records(&d, data.as_bytes());
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].2, vec![Vec::<u8>::new()], "the blank line");
        assert_eq!(got[2].2.len(), 200);
        assert_eq!(got, by_csv_crate(&d, data.as_bytes()));
    }
}
