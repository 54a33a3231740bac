//! Reading one block: validation of its restart array and a bidirectional
//! iterator over its prefix-compressed entries (see `block_builder` for the
//! entry layout).
//!
//! The iterator never panics on a damaged block: a bad entry makes it invalid
//! with an error message, which the table reader turns into a corruption
//! error naming the file and the block's offset.

use super::format::BlockHandle;
use crate::key::compare_internal;
use crate::util::coding::{decode_fixed32, Reader};
use std::cmp::Ordering;
use std::sync::Arc;

/// An uncompressed block with its restart array located.
pub struct Block {
    data: Vec<u8>,
    restarts_off: usize,
    num_restarts: usize,
}

/// Bit 31 of a data block's restart count marks RocksDB's optional in-block
/// hash index; Strata never writes it but reads blocks that have it.
const HASH_INDEX_BIT: u32 = 1 << 31;

impl Block {
    pub fn new(data: Vec<u8>) -> Result<Block, String> {
        let len = data.len();
        if len < 4 {
            return Err(format!("block of {len} bytes is too short"));
        }
        let raw = decode_fixed32(&data[len - 4..]);
        let (end, num_restarts) = if raw & HASH_INDEX_BIT != 0 {
            // [entries][restarts][hash buckets (1 byte each)][num buckets: u16][packed count]
            if len < 6 {
                return Err("block too short for its hash index".into());
            }
            let buckets = u16::from_le_bytes([data[len - 6], data[len - 5]]) as usize;
            let map = (len - 6)
                .checked_sub(buckets)
                .ok_or("hash index larger than block")?;
            (map, (raw & !HASH_INDEX_BIT) as usize)
        } else {
            (len - 4, raw as usize)
        };
        let restarts_off = num_restarts
            .checked_mul(4)
            .and_then(|n| end.checked_sub(n))
            .ok_or_else(|| format!("{num_restarts} restarts do not fit in a {len}-byte block"))?;
        if num_restarts == 0 {
            return Err("block has no restart points".into());
        }
        Ok(Block {
            data,
            restarts_off,
            num_restarts,
        })
    }

    /// The block's bytes, given back (a walk reuses the buffer for its
    /// next block).
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// The block's bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Bytes held in memory (the block cache's charge).
    pub fn size(&self) -> usize {
        self.data.len()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    fn restart_point(&self, i: usize) -> usize {
        decode_fixed32(&self.data[self.restarts_off + 4 * i..]) as usize
    }
}

/// How keys in a block compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOrder {
    /// Internal keys (user key ascending, then sequence descending).
    Internal,
    /// Plain bytes (metaindex, properties, user-key index blocks).
    Bytewise,
}

/// How to interpret a block's entries.
#[derive(Clone, Copy, Debug)]
pub struct BlockIterMode {
    pub order: KeyOrder,
    /// Index block values are delta-encoded block handles.
    pub value_delta: bool,
    /// Replace every key's sequence number (ingested files).
    pub global_seqno: Option<u64>,
}

impl BlockIterMode {
    pub const DATA: BlockIterMode = BlockIterMode {
        order: KeyOrder::Internal,
        value_delta: false,
        global_seqno: None,
    };
    pub const BYTEWISE: BlockIterMode = BlockIterMode {
        order: KeyOrder::Bytewise,
        value_delta: false,
        global_seqno: None,
    };
}

pub struct BlockIter {
    block: Arc<Block>,
    mode: BlockIterMode,
    /// Offset of the current entry; `restarts_off` when not positioned.
    current: usize,
    next_off: usize,
    restart_index: usize,
    /// The key as stored (prefix decoding needs the raw bytes).
    key: Vec<u8>,
    /// The key with the global sequence number applied, if any.
    patched: Vec<u8>,
    value: (usize, usize),
    handle: BlockHandle,
    handle_buf: Vec<u8>,
    err: Option<String>,
}

impl BlockIter {
    pub fn new(block: Arc<Block>, mode: BlockIterMode) -> BlockIter {
        let end = block.restarts_off;
        let n = block.num_restarts;
        BlockIter {
            block,
            mode,
            current: end,
            next_off: end,
            restart_index: n,
            key: Vec::new(),
            patched: Vec::new(),
            value: (0, 0),
            handle: BlockHandle::default(),
            handle_buf: Vec::new(),
            err: None,
        }
    }

    /// The block this iterator reads, given back.
    pub fn into_block(self) -> Arc<Block> {
        self.block
    }

    pub fn valid(&self) -> bool {
        self.err.is_none() && self.current < self.block.restarts_off
    }

    /// True if the iterator is at the block's last entry (nothing but the
    /// restart array follows it).
    pub fn at_last_entry(&self) -> bool {
        self.valid() && self.next_off >= self.block.restarts_off
    }

    /// The error that made the iterator invalid, if any.
    pub fn error(&self) -> Option<&str> {
        self.err.as_deref()
    }

    pub fn key(&self) -> &[u8] {
        if self.mode.global_seqno.is_some() {
            &self.patched
        } else {
            &self.key
        }
    }

    pub fn value(&self) -> &[u8] {
        if self.mode.value_delta {
            &self.handle_buf
        } else {
            &self.block.data[self.value.0..self.value.1]
        }
    }

    /// The current value as a block handle (index blocks).
    pub fn handle(&self) -> Option<BlockHandle> {
        if self.mode.value_delta {
            Some(self.handle)
        } else {
            BlockHandle::decode_from(self.value())
        }
    }

    fn invalidate(&mut self) {
        self.current = self.block.restarts_off;
        self.next_off = self.current;
        self.restart_index = self.block.num_restarts;
    }

    fn corrupt(&mut self, msg: impl Into<String>) -> bool {
        if self.err.is_none() {
            self.err = Some(format!(
                "{} (entry at block offset {})",
                msg.into(),
                self.current
            ));
        }
        self.invalidate();
        false
    }

    fn seek_to_restart(&mut self, i: usize) -> bool {
        self.key.clear();
        self.restart_index = i;
        let off = self.block.restart_point(i);
        if off > self.block.restarts_off {
            return self.corrupt(format!("restart point {i} at {off} is past the entries"));
        }
        self.next_off = off;
        true
    }

    /// Decodes the entry at `next_off`. Returns false at the end or on
    /// corruption.
    fn parse_next(&mut self) -> bool {
        self.current = self.next_off;
        if self.current >= self.block.restarts_off {
            self.invalidate();
            return false;
        }
        match self.decode_current() {
            Ok(()) => true,
            Err(msg) => self.corrupt(msg),
        }
    }

    /// Decodes the entry at `current` (inside the entries). Borrows the
    /// block through its field rather than cloning the `Arc` per entry: a
    /// point lookup parses a few dozen entries, and the reference count's
    /// atomic updates showed up in its profile.
    fn decode_current(&mut self) -> Result<(), String> {
        let block: &Block = &self.block;
        let end = block.restarts_off;
        let mut r = Reader::new(&block.data[self.current..end]);
        let (shared, unshared) = match (r.varint32(), r.varint32()) {
            (Some(s), Some(u)) => (s as usize, u as usize),
            _ => return Err("entry header does not decode".into()),
        };
        let value_len = if self.mode.value_delta {
            0
        } else {
            match r.varint32() {
                Some(v) => v as usize,
                None => return Err("entry value length does not decode".into()),
            }
        };
        if shared > self.key.len() {
            return Err(format!(
                "entry shares {shared} bytes with a {}-byte previous key",
                self.key.len()
            ));
        }
        let Some(delta) = r.bytes(unshared) else {
            return Err("entry key runs past the entries".into());
        };
        self.key.truncate(shared);
        self.key.extend_from_slice(delta);
        if self.mode.value_delta {
            let prev = self.handle;
            let h = if shared == 0 {
                BlockHandle::decode(&mut r)
            } else {
                r.varsigned64().and_then(|d| {
                    let size = (prev.size as i64).checked_add(d)?;
                    // A damaged previous handle can put the next block's
                    // offset past u64::MAX (found by fuzz_replay: an
                    // overflow panic in debug builds).
                    let offset = prev.checked_end()?;
                    (size >= 0).then(|| BlockHandle::new(offset, size as u64))
                })
            };
            let Some(h) = h else {
                return Err("index entry block handle does not decode".into());
            };
            self.handle = h;
            self.handle_buf.clear();
            h.encode_to(&mut self.handle_buf);
        } else {
            let start = self.current + r.pos();
            if r.bytes(value_len).is_none() {
                return Err("entry value runs past the entries".into());
            }
            self.value = (start, start + value_len);
        }
        self.next_off = self.current + r.pos();
        while self.restart_index + 1 < block.num_restarts
            && block.restart_point(self.restart_index + 1) <= self.current
        {
            self.restart_index += 1;
        }
        if let Some(seq) = self.mode.global_seqno {
            if self.key.len() < 8 {
                return Err("internal key shorter than its trailer".into());
            }
            self.patched.clear();
            self.patched.extend_from_slice(&self.key);
            let n = self.patched.len();
            let kind = self.patched[n - 8];
            let trailer = (seq << 8) | kind as u64;
            self.patched[n - 8..].copy_from_slice(&trailer.to_le_bytes());
        }
        Ok(())
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self.mode.order {
            KeyOrder::Internal => compare_internal(a, b),
            KeyOrder::Bytewise => a.cmp(b),
        }
    }

    pub fn seek_to_first(&mut self) {
        self.err = None;
        if self.seek_to_restart(0) {
            self.parse_next();
        }
    }

    pub fn seek_to_last(&mut self) {
        self.err = None;
        if self.seek_to_restart(self.block.num_restarts - 1) {
            while self.parse_next() && self.next_off < self.block.restarts_off {}
        }
    }

    /// Positions at the first entry whose key is >= `target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.err = None;
        // Binary search for the last restart point whose key is < target.
        let (mut left, mut right) = (0usize, self.block.num_restarts - 1);
        while left < right {
            let mid = (left + right).div_ceil(2);
            if !self.seek_to_restart(mid) || !self.parse_next() {
                if self.err.is_none() {
                    self.corrupt("restart point has no entry");
                }
                return;
            }
            if self.compare(self.key(), target) == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        if !self.seek_to_restart(left) {
            return;
        }
        while self.parse_next() {
            if self.compare(self.key(), target) != Ordering::Less {
                return;
            }
        }
    }

    /// Positions at the last entry whose key is <= `target`.
    #[cfg(any(test, feature = "internals"))]
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.err.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
        }
        while self.valid() && self.compare(self.key(), target) == Ordering::Greater {
            self.prev();
        }
    }

    pub fn next(&mut self) {
        if self.valid() {
            self.parse_next();
        }
    }

    pub fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        // Back up to the restart point before the current entry, then scan
        // forward to the entry just before it.
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.invalidate();
                return;
            }
            self.restart_index -= 1;
        }
        if !self.seek_to_restart(self.restart_index) {
            return;
        }
        while self.parse_next() && self.next_off < original {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::block_builder::BlockBuilder;
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    fn build(keys: &[Vec<u8>], interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for (i, k) in keys.iter().enumerate() {
            b.add(k, format!("v{i}").as_bytes());
        }
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    fn keys(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| make_internal_key(format!("key{:05}", i * 2).as_bytes(), 9, ValueKind::Value))
            .collect()
    }

    #[test]
    fn forward_backward_and_seek() {
        for interval in [1, 2, 16] {
            for n in [1, 2, 15, 16, 17, 100] {
                let ks = keys(n);
                let blk = build(&ks, interval);
                let mut it = BlockIter::new(blk, BlockIterMode::DATA);
                it.seek_to_first();
                let mut got = Vec::new();
                while it.valid() {
                    got.push(it.key().to_vec());
                    it.next();
                }
                assert_eq!(got, ks);
                it.seek_to_last();
                let mut back = Vec::new();
                while it.valid() {
                    back.push(it.key().to_vec());
                    it.prev();
                }
                back.reverse();
                assert_eq!(back, ks);
                for i in 0..n * 2 + 1 {
                    let t = crate::key::seek_key(format!("key{i:05}").as_bytes(), 100);
                    it.seek(&t);
                    let want = ks
                        .iter()
                        .position(|k| compare_internal(k, &t) != Ordering::Less);
                    match want {
                        Some(p) => {
                            assert!(it.valid());
                            assert_eq!(it.key(), &ks[p][..]);
                            assert_eq!(it.value(), format!("v{p}").as_bytes());
                        }
                        None => assert!(!it.valid()),
                    }
                    it.seek_for_prev(&t);
                    let want = ks
                        .iter()
                        .rposition(|k| compare_internal(k, &t) != Ordering::Greater);
                    match want {
                        Some(p) => assert_eq!(it.key(), &ks[p][..]),
                        None => assert!(!it.valid()),
                    }
                }
            }
        }
    }

    #[test]
    fn global_seqno_rewrites_keys_but_not_prefix_decoding() {
        // Keys whose shared prefixes reach into the previous key's trailer.
        let ks: Vec<Vec<u8>> = [&b"a"[..], b"a\x00", b"a\x00\x00", b"b"]
            .iter()
            .map(|k| make_internal_key(k, 0, ValueKind::Value))
            .collect();
        let blk = build(&ks, 16);
        let mode = BlockIterMode {
            global_seqno: Some(42),
            ..BlockIterMode::DATA
        };
        let mut it = BlockIter::new(blk, mode);
        it.seek_to_first();
        for k in &ks {
            let p = crate::key::ParsedKey::parse(it.key()).unwrap();
            assert_eq!(p.user_key, crate::key::user_key(k));
            assert_eq!(p.seq, 42);
            it.next();
        }
        assert!(!it.valid());
    }

    #[test]
    fn damaged_blocks_give_errors_not_panics() {
        let ks = keys(50);
        let mut b = BlockBuilder::new(4);
        for k in &ks {
            b.add(k, b"value");
        }
        let good = b.finish().to_vec();
        assert!(Block::new(vec![1, 2]).is_err());
        assert!(Block::new(vec![0xff, 0xff, 0xff, 0x0f]).is_err());
        let mut rng = 12345u64;
        for _ in 0..2000 {
            let mut bad = good.clone();
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pos = (rng >> 33) as usize % bad.len();
            bad[pos] ^= 1 << ((rng >> 20) % 8);
            let Ok(blk) = Block::new(bad) else { continue };
            let mut it = BlockIter::new(Arc::new(blk), BlockIterMode::DATA);
            it.seek_to_first();
            let mut steps = 0;
            while it.valid() && steps < 1000 {
                it.next();
                steps += 1;
            }
            it.seek_to_last();
            while it.valid() && steps < 2000 {
                it.prev();
                steps += 1;
            }
            it.seek(&ks[25]);
        }
    }

    #[test]
    fn value_delta_index_entries() {
        let mut b = BlockBuilder::new_value_delta(4);
        let mut handles = Vec::new();
        let mut off = 0u64;
        let mut prev: Option<BlockHandle> = None;
        for i in 0..40u64 {
            let h = BlockHandle::new(off, 1000 + (i * 37) % 300);
            off = h.end();
            let mut delta = Vec::new();
            if let Some(p) = prev {
                crate::util::coding::put_varsigned64(&mut delta, h.size as i64 - p.size as i64);
            }
            b.add_handle(format!("sep{i:04}").as_bytes(), &h.encode(), &delta);
            handles.push(h);
            prev = Some(h);
        }
        let blk = Arc::new(Block::new(b.finish().to_vec()).unwrap());
        let mode = BlockIterMode {
            value_delta: true,
            ..BlockIterMode::BYTEWISE
        };
        let mut it = BlockIter::new(blk, mode);
        it.seek_to_first();
        for h in &handles {
            assert_eq!(it.handle(), Some(*h));
            it.next();
        }
        it.seek(b"sep0030");
        assert_eq!(it.handle(), Some(handles[30]));
        it.prev();
        assert_eq!(it.handle(), Some(handles[29]));
    }
}
