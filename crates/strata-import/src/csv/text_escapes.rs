//! The backslash escapes of PostgreSQL's text format (`COPY ... TO` without
//! `CSV`, which `--format tsv` reads).
//!
//! Owns [`unescape`] (reading) and [`escape_into`] (writing). In that
//! format a field is never quoted; instead a backslash introduces:
//! `\b` `\f` `\n` `\r` `\t` `\v` (those control bytes), `\` and one to
//! three octal digits (that byte), `\x` and one or two hex digits (that
//! byte), and `\` before any other byte (that byte itself: `\\` is one
//! backslash). The NULL marker (`\N`) is compared with the field's bytes
//! before any of this, so `\N` is NULL and `\\N` the text `\N`.
//!
//! Invariants: a field without a backslash is its own text (callers skip
//! the copy); `escape_into` writes only sequences `unescape` reads back to
//! the same text, and never a raw delimiter, CR or LF (PostgreSQL writes
//! a delimiter in data as `\` before it, which splits a field here, so the
//! writer uses the octal form instead); a backslash ending a field is an
//! error (PostgreSQL's `\` before the delimiter or a line break, which
//! this reader does not join back).

/// Decodes `field`'s escapes into `out` (cleared first). The result may
/// be any bytes (`\377`); the caller checks it is UTF-8 where it must be.
pub fn unescape(field: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    let mut i = 0;
    while i < field.len() {
        let b = field[i];
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some(&c) = field.get(i) else {
            return Err(
                "a backslash ends the field (a backslash before the delimiter \
                 or a line break is not read; write them as \\t, \\n or \\r)"
                    .into(),
            );
        };
        i += 1;
        match c {
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    match field.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                // Three octal digits reach 0o777; PostgreSQL keeps the
                // low byte.
                out.push((v & 0xff) as u8);
            }
            b'x' if field.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let mut v = 0u32;
                for _ in 0..2 {
                    match field.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
    Ok(())
}

/// Appends `s` to `out` escaped so that [`unescape`] reads it back as `s`
/// with fields split at `delimiter` (and `null`'s text stays text: a
/// backslash is always doubled, so `\N` is written `\\N`).
pub fn escape_into(s: &str, delimiter: u8, out: &mut String) {
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' if delimiter == b'\t' => out.push_str("\\t"),
            c if c.is_ascii() && c as u8 == delimiter => {
                out.push_str(&format!("\\{:03o}", c as u8));
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use proptest::prelude::*;

    fn un(s: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        unescape(s, &mut out).map(|()| out)
    }

    /// Each sequence PostgreSQL's text format defines, and its edges.
    #[test]
    fn every_sequence_decodes_as_postgresql_reads_it() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"plain", b"plain"),
            (b"a\\tb", b"a\tb"),
            (b"\\b\\f\\n\\r\\t\\v", b"\x08\x0c\n\r\t\x0b"),
            (b"\\\\", b"\\"),
            (b"\\\\N", b"\\N"),
            (b"\\N", b"N"),
            (b"\\101\\60\\0", b"A0\0"),
            (b"\\1012", b"A2"),
            (b"\\777", b"\xff"),
            (b"\\x41\\x4", b"A\x04"),
            (b"\\x414", b"A4"),
            (b"\\xg", b"xg"),
            (b"\\q\\,", b"q,"),
            (b"\\303\\251", "é".as_bytes()),
        ];
        for (input, want) in cases {
            assert_eq!(
                un(input).unwrap(),
                *want,
                "{}",
                String::from_utf8_lossy(input)
            );
        }
        assert!(un(b"ends\\")
            .unwrap_err()
            .contains("backslash ends the field"));
    }

    proptest! {
        /// Whatever the text and delimiter, the escaped form holds no raw
        /// delimiter, CR or LF, is never the NULL marker `\N` (a backslash
        /// is always doubled), and reads back as the text.
        #[test]
        fn escape_then_unescape_is_the_text(
            s in proptest::collection::vec(prop_oneof![
                Just('a'), Just('\\'), Just('\t'), Just('\n'), Just('\r'),
                Just(','), Just('N'), Just('é'), Just('\u{0}'), Just('7'),
            ], 0..20).prop_map(|v| v.into_iter().collect::<String>()),
            delimiter in prop_oneof![Just(b'\t'), Just(b','), Just(b'|')],
        ) {
            let mut e = String::new();
            escape_into(&s, delimiter, &mut e);
            prop_assert!(!e.bytes().any(|b| b == delimiter || b == b'\n' || b == b'\r'), "{:?}", e);
            prop_assert_ne!(e.as_str(), "\\N");
            prop_assert_eq!(un(e.as_bytes()).unwrap(), s.as_bytes().to_vec());
        }
    }
}
