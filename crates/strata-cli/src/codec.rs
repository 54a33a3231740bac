//! The line formats `scan`, `dump`, `get` print and `load` reads: every one
//! round-trips any key and value, binary bytes, newlines and ` ==> `
//! included.
//!
//! - **text** (default): `key ==> value`, each side escaped: bytes of valid
//!   UTF-8 printable characters stand for themselves; `\` is `\\`; tab,
//!   newline and carriage return are `\t`, `\n`, `\r`; every other control
//!   byte or byte of invalid UTF-8 is `\xHH`; and the `>` of any `==>` is
//!   `\x3e`, so the separator ` ==> ` never appears inside an escaped key
//!   and the first one on a line is the separator. Plain ASCII lines are
//!   `ldb dump`'s format unchanged.
//! - **hex** (`--hex`): `0xKEY ==> 0xVALUE`, uppercase, as `ldb --hex`.
//! - **JSON lines** (`--json`, output only): `{"key":…,"value":…}` with
//!   JSON strings when the bytes are UTF-8, else `key_hex` / `value_hex`.

use crate::hex;
use anyhow::{bail, Context, Result};

/// How keys and values are written and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Hex,
    Json,
}

impl Format {
    pub fn from_flags(hex: bool, json: bool) -> Result<Format> {
        match (hex, json) {
            (true, true) => bail!("--hex and --json cannot be combined"),
            (true, false) => Ok(Format::Hex),
            (false, true) => Ok(Format::Json),
            (false, false) => Ok(Format::Text),
        }
    }
}

/// Escapes bytes into the text form (see the module documentation).
pub fn escape(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    let mut rest = b;
    while !rest.is_empty() {
        let (valid, bad) = match std::str::from_utf8(rest) {
            Ok(s) => (s, &[][..]),
            Err(e) => {
                let (ok, bad) = rest.split_at(e.valid_up_to());
                // Safe by construction: `valid_up_to` bytes are UTF-8.
                (std::str::from_utf8(ok).unwrap_or_default(), bad)
            }
        };
        for c in valid.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '>' if out.ends_with("==") => out.push_str("\\x3e"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for x in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{x:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        if bad.is_empty() {
            break;
        }
        // One invalid byte, then carry on after it.
        out.push_str(&format!("\\x{:02x}", bad[0]));
        rest = &bad[1..];
    }
    out
}

/// Reverses [`escape`].
pub fn unescape(s: &str) -> Result<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'\\') => out.push(b'\\'),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b't') => out.push(b'\t'),
            Some(b'x') => {
                let h = s
                    .get(i + 2..i + 4)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .with_context(|| format!("bad \\x escape at byte {i}"))?;
                out.push(h);
                i += 4;
                continue;
            }
            Some(c) => bail!("unknown escape \\{} at byte {i}", *c as char),
            None => bail!("lone backslash at the end"),
        }
        i += 2;
    }
    Ok(out)
}

/// Parses a key or value given on the command line or in a load file.
pub fn parse(s: &str, format: Format) -> Result<Vec<u8>> {
    match format {
        Format::Hex => hex::decode(s).with_context(|| format!("{s:?} is not hex")),
        _ => unescape(s),
    }
}

/// One key or value as printed on its own (`get`).
pub fn show(b: &[u8], format: Format) -> String {
    match format {
        Format::Hex => hex::encode_rocksdb(b),
        Format::Json => json_field("value", b)[1..].to_string(),
        Format::Text => escape(b),
    }
}

/// One entry as a line (without the newline).
pub fn line(k: &[u8], v: &[u8], format: Format) -> String {
    match format {
        Format::Hex => format!("{} ==> {}", hex::encode_rocksdb(k), hex::encode_rocksdb(v)),
        Format::Text => format!("{} ==> {}", escape(k), escape(v)),
        Format::Json => format!("{{{},{}}}", json_field("key", k), json_field("value", v)),
    }
}

/// `"name":"string"` for UTF-8 bytes, `"name_hex":"hex"` otherwise.
fn json_field(name: &str, b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => format!("\"{name}\":{}", serde_json::Value::from(s)),
        Err(_) => format!("\"{name}_hex\":\"{}\"", hex::encode(b)),
    }
}

/// Splits a load line into key and value.
pub fn split_line(line: &str, format: Format) -> Result<(Vec<u8>, Vec<u8>)> {
    let Some((k, v)) = line.split_once(" ==> ") else {
        bail!("expected `key ==> value`, found {line:?}");
    };
    let k = parse(k, format).context("key")?;
    let v = parse(v, format).context("value")?;
    Ok((k, v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn escapes() {
        assert_eq!(escape(b"plain text"), "plain text");
        assert_eq!(escape("café".as_bytes()), "café");
        assert_eq!(escape(b"a\nb\\c\t\x00\xff"), "a\\nb\\\\c\\t\\x00\\xff");
        assert_eq!(escape(b"k ==> v"), "k ==\\x3e v");
        assert_eq!(unescape("k ==\\x3e v").unwrap(), b"k ==> v");
        assert!(unescape("\\q").is_err());
        assert!(unescape("\\x4").is_err());
        assert!(unescape("a\\").is_err());
    }

    /// Random keys and values from an alphabet rich in the awkward bytes
    /// round-trip through a line in both formats.
    #[test]
    fn lines_round_trip() {
        let alphabet: &[&[u8]] = &[
            b"a",
            b" ",
            b"=",
            b">",
            b"==>",
            b" ==> ",
            b"\\",
            b"\n",
            b"\r",
            b"\t",
            b"\x00",
            b"\xff",
            b"\xc3",
            "é".as_bytes(),
            b"x",
        ];
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..20_000 {
            let mut gen = || -> Vec<u8> {
                (0..rng.gen_range(0..8))
                    .flat_map(|_| alphabet[rng.gen_range(0..alphabet.len())].to_vec())
                    .collect()
            };
            let (k, v) = (gen(), gen());
            for f in [Format::Text, Format::Hex] {
                let l = line(&k, &v, f);
                assert!(!l.contains('\n'), "{l:?}");
                let (k2, v2) = split_line(&l, f).unwrap();
                assert_eq!((&k2, &v2), (&k, &v), "{l:?}");
            }
        }
    }
}
