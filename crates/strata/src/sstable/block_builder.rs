//! Builds one block: prefix-compressed entries with a restart array.
//!
//! Entry: `shared (varint32) | unshared (varint32) | value_len (varint32) |
//! key[shared..] | value`. Every `restart_interval` entries the key is stored
//! whole (shared = 0) and its offset is recorded in the restart array, so a
//! reader can binary-search restarts and then scan at most one interval.
//!
//! Index blocks use RocksDB's value-delta encoding instead: no value length,
//! and a value is a full block handle at a restart point or only the signed
//! size delta from the previous handle elsewhere (the offset follows from
//! the previous block's end).

use crate::util::coding::{put_fixed32, put_varint32};

pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    entries: usize,
    value_delta: bool,
}

impl BlockBuilder {
    pub fn new(restart_interval: usize) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            entries: 0,
            value_delta: false,
        }
    }

    /// A builder that holds no memory (and allocates none), to stand in
    /// for a builder taken out for a moment; `reset` makes it usable.
    pub fn placeholder() -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            counter: 0,
            restart_interval: 1,
            last_key: Vec::new(),
            entries: 0,
            value_delta: false,
        }
    }

    /// A builder for index blocks with delta-encoded block-handle values.
    pub fn new_value_delta(restart_interval: usize) -> BlockBuilder {
        let mut b = BlockBuilder::new(restart_interval);
        b.value_delta = true;
        b
    }

    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.entries = 0;
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn entries(&self) -> usize {
        self.entries
    }

    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Size of the finished block if it were finished now.
    pub fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Size after adding an entry of these lengths (an estimate: assumes no
    /// shared prefix).
    pub fn estimated_size_after(&self, key_len: usize, value_len: usize) -> usize {
        let restart = if self.counter >= self.restart_interval {
            4
        } else {
            0
        };
        self.estimated_size() + key_len + value_len + 3 + restart
    }

    /// Adds an entry; keys must arrive in the block's order.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = shared_len(&self.last_key, key);
        self.add_impl(key, value, None, shared);
    }

    /// [`add`](Self::add) for a caller that has already measured the
    /// prefix `key` shares with the key added before it (a table writer
    /// does, to check the order): `shared` must be
    /// `shared_len(previous key, key)` whenever this block holds an entry
    /// (it is not used for a block's first entry or at a restart).
    pub fn add_with_shared(&mut self, key: &[u8], value: &[u8], shared: usize) {
        debug_assert!(
            self.entries == 0 || shared == shared_len(&self.last_key, key),
            "shared prefix {shared} given for the wrong key"
        );
        self.add_impl(key, value, None, shared);
    }

    /// Moves the last key added into `dst` (whose old contents this
    /// builder takes and drops at `reset`): for a table writer that needs
    /// the key after the block is finished, without copying it.
    pub fn swap_last_key(&mut self, dst: &mut Vec<u8>) {
        std::mem::swap(&mut self.last_key, dst);
    }

    /// Adds an index entry: `full` is the encoded handle, `delta` the encoded
    /// size delta used when this entry is not a restart point.
    pub fn add_handle(&mut self, key: &[u8], full: &[u8], delta: &[u8]) {
        let shared = shared_len(&self.last_key, key);
        self.add_impl(key, full, Some(delta), shared);
    }

    /// `shared`: the prefix `key` shares with the last key (whatever it
    /// is, 0 is stored for a block's first entry and at a restart).
    fn add_impl(&mut self, key: &[u8], value: &[u8], delta: Option<&[u8]>, shared: usize) {
        let mut shared = shared.min(key.len());
        if self.entries == 0 {
            shared = 0;
        } else if self.counter >= self.restart_interval {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            shared = 0;
        }
        let unshared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, unshared as u32);
        if !self.value_delta {
            put_varint32(&mut self.buf, value.len() as u32);
        }
        self.buf.extend_from_slice(&key[shared..]);
        // The reader tells the two value forms apart by `shared`, so the delta
        // form is used only when the entry shares key bytes.
        match delta {
            Some(d) if self.value_delta && shared != 0 => self.buf.extend_from_slice(d),
            _ => self.buf.extend_from_slice(value),
        }
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.entries += 1;
    }

    /// Appends the restart array and returns the block's bytes. The builder
    /// must be `reset` before reuse.
    pub fn finish(&mut self) -> &[u8] {
        for &r in &self.restarts {
            put_fixed32(&mut self.buf, r);
        }
        put_fixed32(&mut self.buf, self.restarts.len() as u32);
        &self.buf
    }
}

/// The length of the longest common prefix of `a` and `b`, compared
/// eight bytes at a time (the first differing byte is the lowest set
/// byte of the little-endian XOR). Every entry of every block is
/// compared with the one before: a byte loop over keys sharing 20-odd
/// bytes was about a tenth of an import's SST writing.
pub(crate) fn shared_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut at = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let (mut u, mut v) = ([0u8; 8], [0u8; 8]);
        u.copy_from_slice(x);
        v.copy_from_slice(y);
        let d = u64::from_le_bytes(u) ^ u64::from_le_bytes(v);
        if d != 0 {
            return at + (d.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + a[at..]
        .iter()
        .zip(&b[at..])
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::shared_len;

    /// The word-at-a-time prefix length equals the byte loop's, for
    /// differences at every position of keys up to 40 bytes.
    #[test]
    fn shared_len_matches_a_byte_loop() {
        for len in 0..40usize {
            let a: Vec<u8> = (0..len as u8).collect();
            for at in 0..=len {
                for extra in 0..3usize {
                    let mut b = a.clone();
                    if at < len {
                        b[at] ^= 0x80;
                    }
                    b.extend(std::iter::repeat_n(7u8, extra));
                    let want = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
                    assert_eq!(shared_len(&a, &b), want, "len {len} at {at}");
                    assert_eq!(shared_len(&b, &a), want, "len {len} at {at}");
                }
            }
        }
    }
}
