//! Printing and parsing binary keys and values for people and tools: the
//! `hex` crate's encoding in the forms the CLI speaks (RocksDB's tools'
//! `0x` and uppercase, an optional `0x` on input, `\xNN` escapes).

/// Lowercase hex, no prefix.
pub fn encode(b: &[u8]) -> String {
    hex::encode(b)
}

/// RocksDB tools' hex form: `0x` then uppercase hex.
pub fn encode_rocksdb(b: &[u8]) -> String {
    format!("0x{}", hex::encode_upper(b))
}

/// Parses hex with an optional `0x` prefix, either case.
pub fn decode(s: &str) -> Option<Vec<u8>> {
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    hex::decode(s).ok()
}

/// Printable ASCII as is, everything else as `\xNN`.
pub fn escape(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for &x in b {
        if (0x20..0x7f).contains(&x) && x != b'\\' {
            s.push(x as char);
        } else {
            s.push_str(&format!("\\x{x:02x}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let b = [0u8, 1, 0xab, 0xff];
        assert_eq!(decode(&encode(&b)).unwrap(), b);
        assert_eq!(decode(&encode_rocksdb(&b)).unwrap(), b);
        assert_eq!(encode_rocksdb(&b), "0x0001ABFF");
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("zz"), None);
        assert_eq!(escape(b"a\x00\\"), "a\\x00\\x5c");
    }
}
