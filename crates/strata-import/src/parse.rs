//! Parsing one chunk of records into index entries (runs on a worker).
//!
//! Owns the per-record checks: the field count, NULL markers, NOT NULL,
//! UTF-8, and each value's type (`value::parse_ref` for integer and text
//! columns, borrowing the record; `value::parse` for the others), and the
//! encoding of each index's entry straight into its batch. A malformed record
//! becomes a [`BadRow`] with its file, line, column and reason and its
//! original bytes (for the rejects file); the records around it go on.

use crate::batch::EntryBatch;
use crate::chunk::{Chunk, LineCounter};
use crate::codec::TableCodec;
use crate::csv::dialect::Dialect;
use crate::csv::records::Records;
use crate::csv::text_escapes;
use crate::pool::BatchPool;
use crate::value::{self, Value, ValueRef};

/// Where an entry came from: input file index and line (the line a record
/// starts on; no two records share one, see `chunk`): a row's identity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Src {
    /// Index of the input file.
    pub file: u32,
    /// Line the record starts on.
    pub line: u64,
}

/// One key-value pair of one index, with its source row.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Encoded key (with the table and index prefix).
    pub key: Vec<u8>,
    /// Encoded value.
    pub value: Vec<u8>,
    /// The row it came from.
    pub src: Src,
    /// A deletion (of a stale secondary-index entry of a row this import
    /// replaces) rather than a put; `value` is empty.
    pub delete: bool,
}

impl Entry {
    /// The entry as an [`EntryRef`] borrowing it.
    pub fn as_ref(&self) -> EntryRef<'_> {
        EntryRef {
            key: &self.key,
            value: &self.value,
            src: self.src,
            delete: self.delete,
        }
    }
}

/// An [`Entry`] borrowed from where it lies (a batch's arena, a sorted
/// run in memory): what the merge hands to its callback and its output,
/// with no copy of the key or the value.
#[derive(Clone, Copy, Debug)]
pub struct EntryRef<'a> {
    /// Encoded key (with the table and index prefix).
    pub key: &'a [u8],
    /// Encoded value.
    pub value: &'a [u8],
    /// The row it came from.
    pub src: Src,
    /// A deletion rather than a put (see [`Entry::delete`]).
    pub delete: bool,
}

impl EntryRef<'_> {
    /// An empty put (a placeholder).
    pub const EMPTY: EntryRef<'static> = EntryRef {
        key: b"",
        value: b"",
        src: Src { file: 0, line: 0 },
        delete: false,
    };

    /// An owned copy, filling `into`'s buffers (kept at their capacity).
    pub fn copy_into(&self, into: &mut Entry) {
        into.key.clear();
        into.key.extend_from_slice(self.key);
        into.value.clear();
        into.value.extend_from_slice(self.value);
        into.src = self.src;
        into.delete = self.delete;
    }
}

#[derive(Clone, Debug)]
/// A record that could not be imported.
pub struct BadRow {
    /// Where it is.
    pub src: Src,
    /// The column at fault, when one is.
    pub column: Option<String>,
    /// What is wrong.
    pub reason: String,
    /// The record as it was in the input.
    pub raw: Vec<u8>,
}

/// What a chunk parsed into.
#[derive(Debug, Default)]
pub struct Parsed {
    /// One batch per index, in input order.
    pub entries: Vec<EntryBatch>,
    /// Malformed records, in input order.
    pub bad: Vec<BadRow>,
    /// Rows encoded.
    pub rows: u64,
    /// Bytes of the chunk.
    pub bytes: u64,
}

/// How the fields of a record map to the table's columns.
pub struct Layout<'a> {
    /// The table's encoder.
    pub codec: &'a TableCodec,
    /// The input's dialect.
    pub dialect: &'a Dialect,
    /// `columns[i]`: the table column of field `i`.
    pub columns: &'a [usize],
    /// Added to the byte offset of a record to make the hidden row id.
    pub rowid_base: i64,
    /// Where the chunk's entry batches come from: reused ones (kept at
    /// their capacity) or, without a pool, new ones trimmed to what they
    /// hold.
    pub pool: Option<&'a BatchPool>,
}

/// Parses every record of `chunk` (see the module documentation).
pub fn parse_chunk(chunk: &Chunk, layout: &Layout<'_>) -> Parsed {
    let codec = layout.codec;
    let table = &codec.table;
    let nidx = table.indexes.len();
    // Entries are made in place, into one arena per index (a chunk's
    // sizes are known roughly from its length: reserving avoids most
    // regrowing while parsing). New buffers are trimmed at the end so the
    // budget's charge is what they hold; pooled ones keep their capacity
    // (charged as it is) for the next chunk.
    let len = chunk.data.len();
    let room = |i: usize| (if i == 0 { len + len / 4 } else { len / 8 }, len / 256);
    let mut out = Parsed {
        entries: (0..nidx)
            .map(|i| {
                let (bytes, entries) = room(i);
                match layout.pool {
                    Some(p) => p.take(i, bytes, entries),
                    None => EntryBatch::with_capacity(bytes, entries),
                }
            })
            .collect(),
        bytes: len as u64,
        ..Parsed::default()
    };
    let mut records = Records::new(layout.dialect, chunk.data.as_slice());
    // Integer and text columns are parsed to `ValueRef`s borrowing the
    // record (no copy of the text, no typed value in between) and encoded
    // from there straight into the batches; the other types go through
    // `value::parse_into` into `row`. `by_ref[c]` says which holds
    // column `c`.
    let by_ref: Vec<bool> = table
        .columns
        .iter()
        .map(|c| value::parses_to_ref(&c.ty))
        .collect();
    // Each column's common case, decided once per chunk rather than by a
    // match on its type per field (see `value::Fast`).
    let fast: Vec<value::Fast> = table
        .columns
        .iter()
        .map(|c| value::Fast::of(&c.ty))
        .collect();
    let mut row = vec![Value::Null; table.columns.len()];
    // The cells' allocation, kept across records (`relabel`).
    let mut spare: Vec<ValueRef<'static>> = Vec::with_capacity(table.columns.len());
    let null = layout.dialect.null.as_bytes();
    // TSV (PostgreSQL's text format): a field holding a backslash is
    // decoded into `unescaped` and parsed from there into `row` (an owned
    // value: the decoded text is not in the record), `owned[c]` saying so
    // for this record. A record without a backslash (one `memchr` over it)
    // takes the usual path untouched.
    let escapes = layout.dialect.backslash_escapes && layout.dialect.quote.is_none();
    let mut unescaped = Vec::new();
    let mut owned = vec![false; table.columns.len()];
    let mut pk = Vec::new();
    let mut lines = LineCounter::new(&chunk.data, chunk.first_line);
    // The line of the chunk's previous record: a record's (file, line) is
    // its identity in duplicate resolution (`resolve` drops rows by it),
    // so two records must never share one. Lines end where records do
    // (`chunk`), so they never do; were they to, the later record is
    // refused rather than confused with the earlier one.
    let mut prev_line = None;
    while let Some(rec) = records.next_record() {
        let (line, rstart) = lines.record(rec.start);
        if rec.plain {
            lines.line_ended(rec.end);
        }
        let src = Src {
            file: chunk.file as u32,
            line,
        };
        let end = rec.end;
        let bad = |column: Option<usize>, reason: String| BadRow {
            src,
            column: column.map(|c| table.columns[c].name.clone()),
            reason,
            raw: chunk.data[rstart..end.min(chunk.data.len())].to_vec(),
        };
        if prev_line.is_some_and(|p| line <= p) {
            out.bad.push(bad(
                None,
                "internal: a second record on this line (rows are told apart by line)".into(),
            ));
            continue;
        }
        prev_line = Some(line);
        // psql's end-of-data marker: data for PostgreSQL, text for nobody
        // (in a one-column table it would read as "."), so a bad row.
        if escapes && rec.len() == 1 && rec.bytes == b"\\." {
            out.bad.push(bad(
                None,
                "a line `\\.`: PostgreSQL's end-of-data marker (a psql script's); \
                 remove it and what follows"
                    .into(),
            ));
            continue;
        }
        if rec.len() != layout.columns.len() {
            let reason = if rec.bytes.is_empty() && rec.len() == 1 {
                // A blank line is a record of one empty field (`Records`).
                format!(
                    "a blank line: expected {} fields (PostgreSQL's COPY reads a blank \
                     line as one empty field too)",
                    layout.columns.len()
                )
            } else {
                format!(
                    "expected {} fields, found {}",
                    layout.columns.len(),
                    rec.len()
                )
            };
            out.bad.push(bad(None, reason));
            continue;
        }
        // One UTF-8 check for the whole record (one call instead of one
        // per field); a field is then valid exactly when both its ends
        // are character boundaries (`str::get`). A record that is not
        // valid as a whole is checked field by field, so the column
        // reported is the same either way. A record the reader saw to be
        // all ASCII needs no check at all.
        let whole = if rec.ascii {
            debug_assert!(rec.bytes.is_ascii());
            // SAFETY: `ascii` says every byte is below 0x80 (the reader's
            // pass over the line looked at each one), and ASCII is UTF-8.
            Some(unsafe { std::str::from_utf8_unchecked(rec.bytes) })
        } else {
            std::str::from_utf8(rec.bytes).ok()
        };
        let mut cells = relabel(std::mem::take(&mut spare));
        cells.resize(table.columns.len(), ValueRef::Null);
        let mut failed = None;
        let escaped = escapes && memchr::memchr(b'\\', rec.bytes).is_some();
        if escaped {
            owned.fill(false);
        }
        for (i, &c) in layout.columns.iter().enumerate() {
            let col = &table.columns[c];
            let range = rec.range(i);
            let field = &rec.bytes[range.clone()];
            // A quoted field is text even when it reads as the NULL
            // marker (`""` is the empty string), as in PostgreSQL.
            if field == null && !rec.quoted(i) {
                if col.not_null {
                    failed = Some(bad(Some(c), "NULL in a NOT NULL column".into()));
                    break;
                }
                cells[c] = ValueRef::Null;
                row[c] = Value::Null;
                continue;
            }
            if escaped && memchr::memchr(b'\\', field).is_some() {
                let decoded = text_escapes::unescape(field, &mut unescaped)
                    .and_then(|()| {
                        std::str::from_utf8(&unescaped)
                            .map_err(|_| "invalid UTF-8 (after its escapes)".to_string())
                    })
                    .and_then(|text| value::parse_into(&col.ty, text, &mut row[c]));
                if let Err(reason) = decoded {
                    failed = Some(bad(Some(c), reason));
                    break;
                }
                owned[c] = true;
                continue;
            }
            let text = match whole {
                Some(w) => w.get(range),
                None => std::str::from_utf8(field).ok(),
            };
            let Some(text) = text else {
                failed = Some(bad(Some(c), "invalid UTF-8".into()));
                break;
            };
            if let Some(v) = fast[c].parse(text) {
                cells[c] = v;
                continue;
            }
            let parsed = if by_ref[c] {
                value::parse_ref(&col.ty, text).map(|r| r.map(|v| cells[c] = v))
            } else {
                None
            };
            match parsed.unwrap_or_else(|| value::parse_into(&col.ty, text, &mut row[c])) {
                Ok(()) => {}
                Err(reason) => {
                    failed = Some(bad(Some(c), reason));
                    break;
                }
            }
        }
        if let Some(b) = failed {
            spare = relabel(cells);
            out.bad.push(b);
            continue;
        }
        if table.hidden_rowid {
            let last = table.columns.len() - 1;
            let id = layout.rowid_base + (chunk.offset as i64) + rstart as i64;
            cells[last] = ValueRef::Int(id);
            row[last] = Value::Int(id);
        }
        let cell = |c: usize| {
            if by_ref[c] && !(escaped && owned[c]) {
                cells[c]
            } else {
                row[c].view()
            }
        };
        codec.pk_bytes_with(cell, &mut pk);
        for (i, list) in out.entries.iter_mut().enumerate() {
            list.push_encoded(src, false, |buf| codec.entry_to(i, cell, &pk, buf));
        }
        spare = relabel(cells);
        out.rows += 1;
    }
    if layout.pool.is_none() {
        for b in &mut out.entries {
            b.shrink_to_fit();
        }
    }
    out
}

/// An empty vector of cells with `cells`' allocation, free of its
/// borrow (the cells of one record borrow that record; the allocation
/// serves every record of the chunk). Collecting a vector's own
/// `into_iter` reuses its buffer, so this allocates nothing.
fn relabel<'b>(mut cells: Vec<ValueRef<'_>>) -> Vec<ValueRef<'b>> {
    cells.clear();
    cells.into_iter().map(|_| ValueRef::Null).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use crate::chunk::Chunk;
    use crate::schema::Schema;

    /// Every record's line is the physical line it starts on, whichever
    /// reader path read it (plain lines, quoted fields holding line
    /// breaks, CRLF, blank lines between records): the plain path counts
    /// its one LF without scanning the record again.
    #[test]
    fn records_report_the_line_they_start_on() {
        let schema = Schema::parse("CREATE TABLE t (a INT PRIMARY KEY, b TEXT)").unwrap();
        let codec = TableCodec::new(schema.tables[0].clone(), 1);
        let dialect = Dialect::csv();
        // (record, lines it takes); three fields each (a blank line one),
        // so every record is a bad row that names its line.
        let pieces: [(&str, u64); 7] = [
            ("1,x,y\n", 1),
            ("\n\n", 2),
            ("2,\"p\nq\",y\n", 2),
            ("3,x,y\r\n", 1),
            ("4,x,y\n", 1),
            ("\r\n", 1),
            ("5,\"a\r\nb\nc\",y\n", 3),
        ];
        for first_line in [1, 7] {
            let mut data = Vec::new();
            let mut want = Vec::new();
            let mut line = first_line;
            for round in 0..3 {
                for (text, lines) in pieces {
                    if !text.trim().is_empty() {
                        want.push(line);
                    } else {
                        // Each blank line is a record (too few fields).
                        want.extend(line..line + lines);
                    }
                    data.extend_from_slice(text.as_bytes());
                    line += lines;
                }
                if round == 2 {
                    // A last record with no line break.
                    data.extend_from_slice(b"6,x,y");
                    want.push(line);
                }
            }
            let chunk = Chunk {
                seq: 0,
                file: 0,
                first_line,
                offset: 0,
                data,
            };
            let layout = Layout {
                codec: &codec,
                dialect: &dialect,
                columns: &[0, 1],
                rowid_base: 0,
                pool: None,
            };
            let parsed = parse_chunk(&chunk, &layout);
            let got: Vec<u64> = parsed.bad.iter().map(|b| b.src.line).collect();
            assert_eq!(got, want, "first line {first_line}");
        }
    }
}
