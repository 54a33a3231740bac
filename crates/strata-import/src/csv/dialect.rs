//! The CSV dialect of an import.
//!
//! Owns [`Dialect`]: delimiter, quote and escape bytes, the NULL marker,
//! and the header mode. Parsing itself is the `csv` crate's; this module
//! configures it ([`Dialect::reader`]) and says what the dialect means:
//! - records end at LF, CRLF or a lone CR; a UTF-8 byte-order mark at the
//!   start of a file is dropped;
//! - a field that starts with the quote byte is quoted: it may hold the
//!   delimiter and line breaks, and a doubled quote is one quote (or, with
//!   an escape byte, the escape byte followed by any byte is that byte);
//!   an escape byte equal to the quote byte is the default doubling, as in
//!   PostgreSQL, whose `ESCAPE` defaults to the `QUOTE` value
//!   ([`Dialect::escape_byte`]);
//!   a quote inside an unquoted field is an ordinary byte;
//! - an unquoted field equal to the NULL marker is NULL (default: the
//!   empty field for CSV, `\N` for TSV); a quoted field never is, as in
//!   PostgreSQL (`""` is the empty string; see `records.rs` for how the
//!   reader tells);
//! - TSV (`--format tsv`): PostgreSQL's text format: tab-delimited, no
//!   quoting, NULL is `\N`, and backslash escapes (`\t`, `\n`, `\\`, octal,
//!   hex: [`super::text_escapes`]) decoded in every other field. A quote
//!   byte cannot be set with it (quoted tab-separated input is CSV with a
//!   tab delimiter).

/// What to do with the first record of every input file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// The first record is data.
    None,
    /// The first record is a header and is skipped.
    Skip,
    /// The first record names the columns; the file's columns are mapped to
    /// the table's by name (case-insensitive), in any order.
    Match,
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// How the input's records and fields are written.
pub struct Dialect {
    /// Field separator.
    pub delimiter: u8,
    /// `None`: no quoting at all (TSV).
    pub quote: Option<u8>,
    /// `None`: a quote inside a quoted field is written doubled.
    pub escape: Option<u8>,
    /// The field text that means NULL.
    pub null: String,
    /// What the first record of each file is.
    pub header: Header,
    /// Fields carry PostgreSQL text-format backslash escapes (TSV): a
    /// field that is not the NULL marker is decoded by
    /// [`super::text_escapes::unescape`], and written by `escape_into`.
    /// Only without a quote byte ([`Dialect::check`]).
    pub backslash_escapes: bool,
}

impl Default for Dialect {
    fn default() -> Self {
        Dialect::csv()
    }
}

impl Dialect {
    /// Refuses bytes that collide: a quote or escape byte equal to the
    /// delimiter (a field's end could not be told from its text: fields
    /// would be split, or the delimiter silently dropped from them), or a
    /// line break as any of them (records end there).
    pub fn check(&self) -> std::result::Result<(), String> {
        let show = |b: u8| format!("{:?}", b as char);
        for (what, b) in [("quote", self.quote), ("escape", self.escape)] {
            if b == Some(self.delimiter) {
                return Err(format!(
                    "the {what} byte {} is also the delimiter",
                    show(self.delimiter)
                ));
            }
        }
        for (what, b) in [
            ("delimiter", Some(self.delimiter)),
            ("quote", self.quote),
            ("escape", self.escape),
        ] {
            if let Some(b @ (b'\n' | b'\r')) = b {
                return Err(format!("the {what} byte {} is a line break", show(b)));
            }
        }
        if self.backslash_escapes {
            if let Some(q) = self.quote {
                return Err(format!(
                    "the quote byte {}: the TSV (text) format has no quoting; quoted \
                     tab-separated input is CSV with a tab delimiter",
                    show(q)
                ));
            }
            if self.delimiter == b'\\' {
                return Err(
                    "the delimiter is a backslash, which starts an escape in the \
                     TSV (text) format"
                        .into(),
                );
            }
        }
        Ok(())
    }

    /// Comma-separated, `"` quotes doubled inside quotes, the empty field is NULL.
    pub fn csv() -> Dialect {
        Dialect {
            delimiter: b',',
            quote: Some(b'"'),
            escape: None,
            null: String::new(),
            header: Header::None,
            backslash_escapes: false,
        }
    }

    /// PostgreSQL's text format: tab-separated, no quoting, `\N` is NULL,
    /// backslash escapes decoded.
    pub fn tsv() -> Dialect {
        Dialect {
            delimiter: b'\t',
            quote: None,
            escape: None,
            null: "\\N".into(),
            header: Header::None,
            backslash_escapes: true,
        }
    }

    /// A `csv` reader over `data` for this dialect. Headers are handled by
    /// the importer, so the reader treats every record as data; record
    /// lengths may vary (a wrong column count is the importer's error, with
    /// the line).
    pub fn reader<R: std::io::Read>(&self, data: R) -> ::csv::Reader<R> {
        let mut b = ::csv::ReaderBuilder::new();
        b.has_headers(false)
            .flexible(true)
            .delimiter(self.delimiter)
            .terminator(::csv::Terminator::CRLF);
        b.quoting(self.quote.is_some())
            .escape(self.escape_byte())
            .double_quote(self.doubled_quotes());
        if let Some(q) = self.quote {
            b.quote(q);
        }
        b.from_reader(data)
    }

    /// Whether a doubled quote inside a quoted field stands for one quote:
    /// when no escape byte is set (an escape byte replaces the doubling,
    /// as in PostgreSQL's `ESCAPE`). Both readers take the same settings.
    fn doubled_quotes(&self) -> bool {
        self.escape_byte().is_none()
    }

    /// The escape byte that escapes: `escape`, unless it is the quote byte.
    /// An escape equal to the quote is a doubled quote, which is the
    /// default (PostgreSQL's `ESCAPE` defaults to the `QUOTE` value), so it
    /// must read exactly as no escape does: set as the `csv` crate's escape
    /// it turned `"a""b"` into `a"b"` and split `"x"", y"` at its comma.
    pub fn escape_byte(&self) -> Option<u8> {
        self.escape.filter(|&e| Some(e) != self.quote)
    }

    /// The `csv_core` reader under [`Self::reader`], configured the same
    /// way (the parse workers read chunks already in memory with it, see
    /// `records`).
    pub fn core_reader(&self) -> csv_core::Reader {
        let mut b = csv_core::ReaderBuilder::new();
        b.delimiter(self.delimiter)
            .terminator(csv_core::Terminator::CRLF);
        b.quoting(self.quote.is_some())
            .escape(self.escape_byte())
            .double_quote(self.doubled_quotes());
        if let Some(q) = self.quote {
            b.quote(q);
        }
        b.build()
    }

    /// Writes `fields` as one record of this dialect (rejects, `get` and
    /// `scan` output); `None` is NULL.
    pub fn write_record(&self, fields: &[Option<String>]) -> String {
        let mut out = String::new();
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                out.push(self.delimiter as char);
            }
            // A record's first field starting with U+FEFF would be read
            // back (at a file's start) as a byte-order mark and dropped:
            // quoted it is not one (the text format writes its bytes as
            // `\x` escapes).
            let bom = i == 0 && f.as_deref().is_some_and(|s| s.starts_with('\u{FEFF}'));
            match f {
                None => out.push_str(&self.null),
                Some(s) if self.backslash_escapes && self.quote.is_none() => {
                    let s = match s.strip_prefix('\u{FEFF}') {
                        Some(rest) if bom => {
                            out.push_str("\\xef\\xbb\\xbf");
                            rest
                        }
                        _ => s,
                    };
                    super::text_escapes::escape_into(s, self.delimiter, &mut out)
                }
                Some(s) if bom && self.quote.is_some() => out.push_str(&self.quote_field_always(s)),
                Some(s) => out.push_str(&self.quote_field(s)),
            }
        }
        out
    }

    fn quote_field(&self, s: &str) -> String {
        let Some(q) = self.quote else {
            return s.to_string();
        };
        let q = q as char;
        let needs = s == self.null
            || s.is_empty()
            || s.contains([self.delimiter as char, q, '\n', '\r'])
            || self.escape_byte().is_some_and(|e| s.contains(e as char));
        if !needs {
            return s.to_string();
        }
        self.quote_field_always(s)
    }

    /// `s` quoted (with its quote and escape bytes escaped), whatever it
    /// holds; as it is when the dialect has no quote byte.
    fn quote_field_always(&self, s: &str) -> String {
        let Some(q) = self.quote else {
            return s.to_string();
        };
        let q = q as char;
        let mut out = String::with_capacity(s.len() + 2);
        out.push(q);
        for ch in s.chars() {
            if ch == q {
                match self.escape_byte() {
                    Some(e) => out.push(e as char),
                    None => out.push(q),
                }
            } else if self.escape_byte().is_some_and(|e| ch == e as char) {
                out.push(ch);
            }
            out.push(ch);
        }
        out.push(q);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text format has no quoting and its escapes start with a
    /// backslash: a quote byte or a backslash delimiter is refused with
    /// it, and allowed in CSV.
    #[test]
    fn tsv_refuses_a_quote_byte_and_a_backslash_delimiter() {
        let quoted = Dialect {
            quote: Some(b'"'),
            ..Dialect::tsv()
        };
        assert!(quoted.check().is_err_and(|e| e.contains("no quoting")));
        let backslash = Dialect {
            delimiter: b'\\',
            ..Dialect::tsv()
        };
        assert!(backslash.check().is_err_and(|e| e.contains("backslash")));
        assert!(Dialect::tsv().check().is_ok());
        let csv_tab = Dialect {
            delimiter: b'\t',
            ..Dialect::csv()
        };
        assert!(csv_tab.check().is_ok());
        let csv_backslash = Dialect {
            delimiter: b'\\',
            ..Dialect::csv()
        };
        assert!(csv_backslash.check().is_ok());
    }
}
