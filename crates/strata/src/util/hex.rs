//! Printing and parsing binary keys and values for people and tools.

/// Lowercase hex, no prefix.
pub fn encode(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// RocksDB tools' hex form: `0x` then uppercase hex.
#[cfg(any(test, feature = "internals"))]
pub fn encode_rocksdb(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 + b.len() * 2);
    s.push_str("0x");
    for x in b {
        s.push_str(&format!("{x:02X}"));
    }
    s
}

/// Parses hex with an optional `0x` prefix, either case.
pub fn decode(s: &str) -> Option<Vec<u8>> {
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
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
