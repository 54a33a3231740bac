//! Integer encodings used by RocksDB's formats: little-endian fixed-width
//! integers and LEB128 varints (plus zigzag signed varints for delta-encoded
//! index values).
//!
//! Decoders never panic on short input: they return `None` and let the caller
//! report corruption with the file and offset it knows.

pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

pub fn decode_fixed32(src: &[u8]) -> u32 {
    u32::from_le_bytes([src[0], src[1], src[2], src[3]])
}

pub fn decode_fixed64(src: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&src[..8]);
    u64::from_le_bytes(b)
}

pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, v as u64)
}

pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

pub fn put_varsigned64(dst: &mut Vec<u8>, v: i64) {
    put_varint64(dst, ((v << 1) ^ (v >> 63)) as u64)
}

#[cfg(any(test, feature = "internals"))]
pub fn varint_length(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decodes a varint64 from the front of `src`; returns the value and the
/// number of bytes it used.
pub fn get_varint64(src: &[u8]) -> Option<(u64, usize)> {
    let mut result = 0u64;
    for (i, &b) in src.iter().enumerate().take(10) {
        let shift = 7 * i as u32;
        if shift == 63 && b > 1 {
            return None;
        }
        result |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some((result, i + 1));
        }
    }
    None
}

pub fn get_varint32(src: &[u8]) -> Option<(u32, usize)> {
    let mut result = 0u32;
    for (i, &b) in src.iter().enumerate().take(5) {
        let shift = 7 * i as u32;
        if shift == 28 && b > 0x0f {
            return None;
        }
        result |= ((b & 0x7f) as u32) << shift;
        if b & 0x80 == 0 {
            return Some((result, i + 1));
        }
    }
    None
}

pub fn get_varsigned64(src: &[u8]) -> Option<(i64, usize)> {
    let (u, n) = get_varint64(src)?;
    Some((((u >> 1) as i64) ^ -((u & 1) as i64), n))
}

/// Appends a varint32 length then the bytes.
pub fn put_length_prefixed(dst: &mut Vec<u8>, s: &[u8]) {
    put_varint32(dst, s.len() as u32);
    dst.extend_from_slice(s);
}

/// A cursor over a byte slice for decoders that read many fields in a row.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub fn pos(&self) -> usize {
        self.pos
    }
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
    pub fn varint32(&mut self) -> Option<u32> {
        let (v, n) = get_varint32(&self.buf[self.pos..])?;
        self.pos += n;
        Some(v)
    }
    pub fn varint64(&mut self) -> Option<u64> {
        let (v, n) = get_varint64(&self.buf[self.pos..])?;
        self.pos += n;
        Some(v)
    }
    pub fn varsigned64(&mut self) -> Option<i64> {
        let (v, n) = get_varsigned64(&self.buf[self.pos..])?;
        self.pos += n;
        Some(v)
    }
    #[cfg(any(test, feature = "internals"))]
    pub fn fixed32(&mut self) -> Option<u32> {
        let b = self.bytes(4)?;
        Some(decode_fixed32(b))
    }
    #[cfg(any(test, feature = "internals"))]
    pub fn fixed64(&mut self) -> Option<u64> {
        let b = self.bytes(8)?;
        Some(decode_fixed64(b))
    }
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        if end > self.buf.len() {
            return None;
        }
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Some(s)
    }
    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = self.varint32()? as usize;
        self.bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_at_every_width() {
        let mut vals = vec![0u64, 1, 127, 128, 255, 300, 16383, 16384];
        for s in 0..64 {
            vals.push(1u64 << s);
            vals.push((1u64 << s).wrapping_sub(1));
        }
        vals.push(u64::MAX);
        for &v in &vals {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            assert_eq!(b.len(), varint_length(v));
            assert_eq!(get_varint64(&b), Some((v, b.len())));
            // Every strict prefix is an incomplete varint.
            for cut in 0..b.len() {
                assert_eq!(get_varint64(&b[..cut]), None, "value {v} cut at {cut}");
            }
            if v <= u32::MAX as u64 {
                assert_eq!(get_varint32(&b), Some((v as u32, b.len())));
            } else {
                assert_eq!(get_varint32(&b), None);
            }
        }
    }

    #[test]
    fn zigzag_round_trip() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            1 << 40,
            -(1 << 40),
            i64::MAX,
            i64::MIN,
        ] {
            let mut b = Vec::new();
            put_varsigned64(&mut b, v);
            assert_eq!(get_varsigned64(&b), Some((v, b.len())));
        }
    }

    #[test]
    fn overlong_varint_is_rejected() {
        assert_eq!(get_varint64(&[0xff; 11]), None);
        assert_eq!(get_varint32(&[0xff, 0xff, 0xff, 0xff, 0x1f]), None);
    }
}
