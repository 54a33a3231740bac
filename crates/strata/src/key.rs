//! Internal keys: the user key followed by an 8-byte little-endian trailer
//! `(sequence << 8) | kind`, exactly as RocksDB lays them out.
//!
//! Ordering: user key ascending (bytewise), then trailer *descending*, so that
//! for one user key the newest version comes first. A lookup for "the newest
//! version visible at sequence `s`" therefore seeks to `(key, s, KIND_MAX)`.

use std::cmp::Ordering;

/// Sequence numbers have 56 bits; the top of the range is reserved for seeks.
pub const MAX_SEQUENCE: u64 = (1u64 << 56) - 1;

/// Record kinds, numbered as RocksDB numbers its `ValueType`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ValueKind {
    Deletion = 0x0,
    Value = 0x1,
    Merge = 0x2,
    SingleDeletion = 0x7,
    RangeDeletion = 0xF,
}

/// The kind used in seek targets: the largest kind RocksDB defines
/// (`kValueTypeForSeek`), so that a seek target sorts before every real entry
/// with the same user key and sequence number.
pub const KIND_FOR_SEEK: u8 = 0x16;

impl ValueKind {
    pub fn from_u8(b: u8) -> Option<ValueKind> {
        Some(match b {
            0x0 => ValueKind::Deletion,
            0x1 => ValueKind::Value,
            0x2 => ValueKind::Merge,
            0x7 => ValueKind::SingleDeletion,
            0xF => ValueKind::RangeDeletion,
            _ => return None,
        })
    }
}

pub fn pack_trailer(seq: u64, kind: u8) -> u64 {
    debug_assert!(seq <= MAX_SEQUENCE);
    (seq << 8) | kind as u64
}

/// Appends `user_key ++ trailer` to `dst`.
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seq: u64, kind: u8) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

pub fn make_internal_key(user_key: &[u8], seq: u64, kind: ValueKind) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + 8);
    append_internal_key(&mut v, user_key, seq, kind as u8);
    v
}

/// A seek target that finds the newest entry for `user_key` visible at `seq`.
pub fn seek_key(user_key: &[u8], seq: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + 8);
    append_internal_key(&mut v, user_key, seq, KIND_FOR_SEEK);
    v
}

/// A decoded view of an internal key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    pub user_key: &'a [u8],
    pub seq: u64,
    pub kind: u8,
}

impl<'a> ParsedKey<'a> {
    /// Splits an internal key; `None` if it is shorter than its trailer.
    pub fn parse(ikey: &'a [u8]) -> Option<ParsedKey<'a>> {
        if ikey.len() < 8 {
            return None;
        }
        let (user_key, t) = ikey.split_at(ikey.len() - 8);
        let trailer = crate::util::coding::decode_fixed64(t);
        Some(ParsedKey {
            user_key,
            seq: trailer >> 8,
            kind: trailer as u8,
        })
    }

    pub fn value_kind(&self) -> Option<ValueKind> {
        ValueKind::from_u8(self.kind)
    }
}

/// The user-key part of an internal key (the caller guarantees length >= 8).
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(8)]
}

/// The 8-byte trailer of an internal key (sequence number << 8 | kind); 0
/// for a key too short to have one.
pub fn trailer(ikey: &[u8]) -> u64 {
    if ikey.len() < 8 {
        return 0;
    }
    crate::util::coding::decode_fixed64(&ikey[ikey.len() - 8..])
}

/// Total order on internal keys.
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    match user_key(a).cmp(user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// The shortest user key `k` with `start <= k < limit`, used for index
/// separators (RocksDB's `BytewiseComparator::FindShortestSeparator`).
/// Returns `start` itself when no shorter key exists.
#[cfg(any(test, feature = "internals"))]
pub fn shortest_separator(start: &[u8], limit: &[u8]) -> Vec<u8> {
    let min_len = start.len().min(limit.len());
    let mut diff = 0;
    while diff < min_len && start[diff] == limit[diff] {
        diff += 1;
    }
    if diff >= min_len {
        // One is a prefix of the other: nothing shorter lies between them.
        return start.to_vec();
    }
    let (sb, lb) = (start[diff], limit[diff]);
    if sb >= lb {
        return start.to_vec();
    }
    if diff + 1 < limit.len() || sb + 1 < lb {
        // Bumping the differing byte keeps the result below `limit`.
        let mut out = start[..=diff].to_vec();
        out[diff] += 1;
        return out;
    }
    // Bumping it would reach `limit`; bump the first later byte of `start`
    // that can be bumped instead.
    for i in diff + 1..start.len() {
        if start[i] < 0xff {
            let mut out = start[..=i].to_vec();
            out[i] += 1;
            return out;
        }
    }
    start.to_vec()
}

/// Internal-key separator between `start` and `limit` for an index block: a
/// shortened user key stamped with the maximal trailer, or `start` unchanged.
#[cfg(any(test, feature = "internals"))]
pub fn internal_separator(start: &[u8], limit: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    internal_separator_into(start, limit, &mut out);
    out
}

/// [`internal_separator`] appended to `out`, without a vector of its own
/// and with the common prefix found eight bytes at a time: a table writer
/// takes one per data block, and the two allocations and the byte loop
/// were about 700 instructions a block on W1's keys.
///
/// The result is [`shortest_separator`]'s key, kept only when it is
/// shorter than `start`'s user key (it then ends one byte above `start`
/// at its last position, so it is greater than `start` and below `limit`).
pub fn internal_separator_into(start: &[u8], limit: &[u8], out: &mut Vec<u8>) {
    let su = user_key(start);
    let lu = user_key(limit);
    let min_len = su.len().min(lu.len());
    let diff = crate::sstable::block_builder::shared_len(su, lu);
    // The last byte of the separator (`start[..=cut]`, that byte bumped).
    let cut = if diff >= min_len || su[diff] >= lu[diff] {
        // One is a prefix of the other, or they are out of order: nothing
        // shorter lies between them.
        None
    } else if diff + 1 < lu.len() || su[diff] + 1 < lu[diff] {
        // Bumping the differing byte keeps the result below `limit` (and
        // cannot overflow: it is below `limit`'s byte).
        Some(diff)
    } else {
        // Bumping it would reach `limit`; bump the first later byte of
        // `start` that can be bumped instead.
        (diff + 1..su.len()).find(|&i| su[i] < 0xff)
    };
    match cut {
        Some(i) if i + 1 < su.len() => {
            out.extend_from_slice(&su[..=i]);
            if let Some(b) = out.last_mut() {
                *b += 1;
            }
            out.extend_from_slice(&pack_trailer(MAX_SEQUENCE, KIND_FOR_SEEK).to_le_bytes());
        }
        _ => out.extend_from_slice(start),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_versions_sort_first() {
        let a = make_internal_key(b"k", 10, ValueKind::Value);
        let b = make_internal_key(b"k", 5, ValueKind::Value);
        let c = make_internal_key(b"l", 100, ValueKind::Value);
        assert_eq!(compare_internal(&a, &b), Ordering::Less);
        assert_eq!(compare_internal(&b, &c), Ordering::Less);
        // A seek target at seq 7 lands between the two versions.
        let t = seek_key(b"k", 7);
        assert_eq!(compare_internal(&a, &t), Ordering::Less);
        assert_eq!(compare_internal(&t, &b), Ordering::Less);
        let t = seek_key(b"k", 10);
        assert_eq!(compare_internal(&t, &a), Ordering::Less);
    }

    #[test]
    fn parse_round_trip() {
        let k = make_internal_key(b"user", 123456, ValueKind::Deletion);
        let p = ParsedKey::parse(&k).unwrap();
        assert_eq!(p.user_key, b"user");
        assert_eq!(p.seq, 123456);
        assert_eq!(p.value_kind(), Some(ValueKind::Deletion));
        assert!(ParsedKey::parse(b"short").is_none());
    }

    #[test]
    fn separators_lie_between_their_bounds() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"abcdef", b"abzzzz"),
            (b"abc", b"abcd"),
            (b"a\xff\xff", b"b"),
            (b"hello", b"help"),
            (b"x", b"y"),
            (b"", b"a"),
            (b"a\xffz", b"b"),
        ];
        for &(s, l) in cases {
            let sep = shortest_separator(s, l);
            assert!(s <= sep.as_slice(), "{s:?} {l:?} -> {sep:?}");
            assert!(sep.as_slice() < l, "{s:?} {l:?} -> {sep:?}");
            assert!(sep.len() <= s.len().max(1));
        }
        assert_eq!(shortest_separator(b"abcdef", b"abzzzz"), b"abd");
    }

    /// The appending separator equals the one built from
    /// `shortest_separator` (the definition), for keys that share
    /// prefixes of every length around the eight-byte steps, differ by one
    /// or by 0xff bytes, are prefixes of each other, or are out of order;
    /// and it appends, leaving what `out` held.
    #[test]
    fn internal_separator_into_matches_the_definition() {
        let reference = |start: &[u8], limit: &[u8]| -> Vec<u8> {
            let su = user_key(start);
            let sep = shortest_separator(su, user_key(limit));
            if sep.len() < su.len() && su < sep.as_slice() {
                let mut out = sep;
                out.extend_from_slice(&pack_trailer(MAX_SEQUENCE, KIND_FOR_SEEK).to_le_bytes());
                out
            } else {
                start.to_vec()
            }
        };
        let mut users: Vec<Vec<u8>> = vec![vec![], b"a".to_vec(), b"b".to_vec()];
        for len in [1usize, 7, 8, 9, 16, 17, 25] {
            for tail in [
                &[][..],
                b"\x00",
                b"\x01",
                b"\xff",
                b"\xff\xff",
                b"\x02\xff\x05",
            ] {
                for fill in [b'a', b'b', 0xfe, 0xff] {
                    let mut k = vec![fill; len];
                    k.extend_from_slice(tail);
                    users.push(k.clone());
                    k[len - 1] = k[len - 1].wrapping_add(1);
                    users.push(k);
                }
            }
        }
        let keys: Vec<Vec<u8>> = users
            .iter()
            .map(|u| make_internal_key(u, 7, ValueKind::Value))
            .collect();
        for s in &keys {
            for l in &keys {
                let mut got = b"held".to_vec();
                internal_separator_into(s, l, &mut got);
                assert_eq!(&got[..4], b"held");
                assert_eq!(got[4..], reference(s, l), "{s:?} {l:?}");
                assert_eq!(internal_separator(s, l), reference(s, l));
            }
        }
    }
}
