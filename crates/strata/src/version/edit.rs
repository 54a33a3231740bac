//! `VersionEdit`: one change to the set of live files, as a MANIFEST record.
//!
//! Encoding (Strata's own, LevelDB-like): a sequence of fields, each a
//! varint32 tag followed by its value.
//!
//! | tag | field | value |
//! |---|---|---|
//! | 1 | comparator | length-prefixed name |
//! | 2 | log number | varint64: WALs below it are fully flushed |
//! | 3 | next file number | varint64 |
//! | 4 | last sequence | varint64 |
//! | 6 | deleted file | varint32 level, varint64 number |
//! | 7 | new file | varint32 level, varint64 number, varint64 size, length-prefixed smallest and largest internal keys, varint64 smallest and largest sequence, then optional fields (varint32 tag, length-prefixed value) ended by tag 0 |
//! | 8 | placed ingestion | varint64: the highest sequence number of an ingestion that went through the immutable queue and is now in the tree; every queued ingestion at or below it is placed |
//! | 9 | queued ingested file | as tag 7 (level written as 0): a file of an ingestion waiting in the immutable queue, identified by its global sequence number; recovery puts it back in sequence order among the replayed WAL records |
//! | 10 | flushed sequence | varint64: every WAL record at or below it is in a table (WALs may be shared by memtables, so this, not the log number alone, says what to replay) |
//!
//! New-file optional fields:
//!
//! | field | value |
//! |---|---|
//! | 1 | global sequence number (varint64, ingested files) |
//! | 2 | entries (varint64) |
//! | 3 | deletions (varint64) |
//! | 4 | range tombstones (varint64, omitted when 0) |
//! | 5 | backing table number (varint64, virtual files only): the file is a key range of that physical table, which it reads through; its own number names no file on disk |
//!
//! An unknown tag or field is corruption: a MANIFEST written by a newer
//! Strata is refused, not misread. A virtual file's entries, deletions and
//! size are estimates (see `db::excise`); its bounds are exact.

use crate::util::coding::{put_length_prefixed, put_varint32, put_varint64, Reader};

const TAG_COMPARATOR: u32 = 1;
const TAG_LOG_NUMBER: u32 = 2;
const TAG_NEXT_FILE: u32 = 3;
const TAG_LAST_SEQUENCE: u32 = 4;
const TAG_DELETED_FILE: u32 = 6;
const TAG_NEW_FILE: u32 = 7;
const TAG_INGESTED_SEQ: u32 = 8;
const TAG_QUEUED_FILE: u32 = 9;
const TAG_FLUSHED_SEQ: u32 = 10;

const FIELD_END: u32 = 0;
const FIELD_GLOBAL_SEQNO: u32 = 1;
const FIELD_ENTRIES: u32 = 2;
const FIELD_DELETIONS: u32 = 3;
const FIELD_RANGE_DELETIONS: u32 = 4;
const FIELD_BACKING: u32 = 5;

pub const COMPARATOR: &str = "leveldb.BytewiseComparator";

/// What the MANIFEST records of one table file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMeta {
    pub number: u64,
    pub size: u64,
    /// Smallest and largest internal keys (range tombstones included).
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub smallest_seq: u64,
    pub largest_seq: u64,
    /// Sequence number stamped on every key of an ingested file.
    pub global_seqno: Option<u64>,
    pub num_entries: u64,
    pub num_deletions: u64,
    /// Range tombstones in the file: readers open only files that have some
    /// to collect tombstones.
    pub num_range_deletions: u64,
    /// For a *virtual* file (a key range of a physical table, made by an
    /// excise), the number of the physical table it reads; `None` when the
    /// file is its own table. Every reader of a virtual file sees only keys
    /// (and tombstone fragments) within `[smallest, largest]`.
    pub backing: Option<u64>,
}

impl FileMeta {
    /// The number of the table file on disk that holds this file's data.
    pub fn backing_number(&self) -> u64 {
        self.backing.unwrap_or(self.number)
    }

    /// Whether this file is a key range of another physical table.
    pub fn is_virtual(&self) -> bool {
        self.backing.is_some()
    }

    pub fn smallest_user_key(&self) -> &[u8] {
        crate::key::user_key(&self.smallest)
    }
    pub fn largest_user_key(&self) -> &[u8] {
        crate::key::user_key(&self.largest)
    }

    /// True if the largest bound is a range tombstone's exclusive end (the
    /// sentinel `(end, MAX_SEQUENCE, RangeDeletion)`): the file then holds no
    /// entry for `largest_user_key` itself.
    pub fn largest_is_exclusive(&self) -> bool {
        crate::key::ParsedKey::parse(&self.largest).is_some_and(|p| {
            p.seq == crate::key::MAX_SEQUENCE
                && p.kind == crate::key::ValueKind::RangeDeletion as u8
        })
    }

    /// Whether the file's user-key range contains `user_key`.
    pub fn contains_user_key(&self, user_key: &[u8]) -> bool {
        self.smallest_user_key() <= user_key
            && if self.largest_is_exclusive() {
                user_key < self.largest_user_key()
            } else {
                user_key <= self.largest_user_key()
            }
    }

    /// Whether the file's range ends before `user_key`: its largest user
    /// key is below it, or equal to it and an exclusive end. In a sorted
    /// level, the file that may hold a key is the first that does not end
    /// before it (`Version::files_for_key`, and `multi_get`'s walk).
    pub fn ends_before(&self, user_key: &[u8]) -> bool {
        self.largest_user_key() < user_key
            || (self.largest_is_exclusive() && self.largest_user_key() == user_key)
    }

    /// Whether the file's user-key range intersects `[lo, hi]` (inclusive).
    pub fn overlaps_user_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.smallest_user_key() <= hi
            && if self.largest_is_exclusive() {
                lo < self.largest_user_key()
            } else {
                lo <= self.largest_user_key()
            }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    pub comparator: Option<String>,
    pub log_number: Option<u64>,
    pub next_file_number: Option<u64>,
    pub last_sequence: Option<u64>,
    pub ingested_seq: Option<u64>,
    pub flushed_seq: Option<u64>,
    pub deleted_files: Vec<(usize, u64)>,
    pub new_files: Vec<(usize, FileMeta)>,
    /// Files of ingestions waiting in the immutable queue (each carries its
    /// ingestion's sequence number as `global_seqno`).
    pub queued_files: Vec<FileMeta>,
}

impl VersionEdit {
    pub fn add_file(&mut self, level: usize, f: FileMeta) {
        self.new_files.push((level, f));
    }

    pub fn delete_file(&mut self, level: usize, number: u64) {
        self.deleted_files.push((level, number));
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        if let Some(c) = &self.comparator {
            put_varint32(&mut b, TAG_COMPARATOR);
            put_length_prefixed(&mut b, c.as_bytes());
        }
        for (tag, v) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE, self.next_file_number),
            (TAG_LAST_SEQUENCE, self.last_sequence),
            (TAG_INGESTED_SEQ, self.ingested_seq),
            (TAG_FLUSHED_SEQ, self.flushed_seq),
        ] {
            if let Some(v) = v {
                put_varint32(&mut b, tag);
                put_varint64(&mut b, v);
            }
        }
        for &(level, n) in &self.deleted_files {
            put_varint32(&mut b, TAG_DELETED_FILE);
            put_varint32(&mut b, level as u32);
            put_varint64(&mut b, n);
        }
        for (level, f) in &self.new_files {
            put_varint32(&mut b, TAG_NEW_FILE);
            encode_file(&mut b, *level, f);
        }
        for f in &self.queued_files {
            put_varint32(&mut b, TAG_QUEUED_FILE);
            encode_file(&mut b, 0, f);
        }
        b
    }

    /// Decodes one record; errors are messages, the caller adds the file
    /// and offset.
    pub fn decode(src: &[u8]) -> Result<VersionEdit, String> {
        let mut e = VersionEdit::default();
        let mut r = Reader::new(src);
        let short = |what: &str| format!("version edit: truncated {what}");
        while !r.is_empty() {
            let tag = r.varint32().ok_or_else(|| short("tag"))?;
            match tag {
                TAG_COMPARATOR => {
                    let c = r.length_prefixed().ok_or_else(|| short("comparator"))?;
                    e.comparator = Some(String::from_utf8_lossy(c).into_owned());
                }
                TAG_LOG_NUMBER => {
                    e.log_number = Some(r.varint64().ok_or_else(|| short("log number"))?)
                }
                TAG_NEXT_FILE => {
                    e.next_file_number = Some(r.varint64().ok_or_else(|| short("next file"))?)
                }
                TAG_LAST_SEQUENCE => {
                    e.last_sequence = Some(r.varint64().ok_or_else(|| short("last sequence"))?)
                }
                TAG_INGESTED_SEQ => {
                    e.ingested_seq = Some(r.varint64().ok_or_else(|| short("ingested sequence"))?)
                }
                TAG_DELETED_FILE => {
                    let level = r.varint32().ok_or_else(|| short("deleted file"))? as usize;
                    let n = r.varint64().ok_or_else(|| short("deleted file"))?;
                    e.deleted_files.push((level, n));
                }
                TAG_NEW_FILE => {
                    let (level, f) = decode_file(&mut r)?;
                    e.new_files.push((level, f));
                }
                TAG_QUEUED_FILE => {
                    let (_, f) = decode_file(&mut r)?;
                    if f.global_seqno.is_none() {
                        return Err("version edit: queued file without a sequence number".into());
                    }
                    e.queued_files.push(f);
                }
                TAG_FLUSHED_SEQ => {
                    e.flushed_seq = Some(r.varint64().ok_or_else(|| short("flushed sequence"))?)
                }
                other => return Err(format!("version edit: unknown tag {other}")),
            }
        }
        Ok(e)
    }
}

fn encode_file(b: &mut Vec<u8>, level: usize, f: &FileMeta) {
    put_varint32(b, level as u32);
    put_varint64(b, f.number);
    put_varint64(b, f.size);
    put_length_prefixed(b, &f.smallest);
    put_length_prefixed(b, &f.largest);
    put_varint64(b, f.smallest_seq);
    put_varint64(b, f.largest_seq);
    let mut field = |tag: u32, v: u64| {
        put_varint32(b, tag);
        let mut x = Vec::new();
        put_varint64(&mut x, v);
        put_length_prefixed(b, &x);
    };
    if let Some(g) = f.global_seqno {
        field(FIELD_GLOBAL_SEQNO, g);
    }
    field(FIELD_ENTRIES, f.num_entries);
    field(FIELD_DELETIONS, f.num_deletions);
    if f.num_range_deletions > 0 {
        field(FIELD_RANGE_DELETIONS, f.num_range_deletions);
    }
    if let Some(n) = f.backing {
        field(FIELD_BACKING, n);
    }
    put_varint32(b, FIELD_END);
}

fn decode_file(r: &mut Reader<'_>) -> Result<(usize, FileMeta), String> {
    let short = |what: &str| format!("version edit: truncated {what}");
    let bad = || short("new file");
    let level = r.varint32().ok_or_else(bad)? as usize;
    let mut f = FileMeta {
        number: r.varint64().ok_or_else(bad)?,
        size: r.varint64().ok_or_else(bad)?,
        smallest: r.length_prefixed().ok_or_else(bad)?.to_vec(),
        largest: r.length_prefixed().ok_or_else(bad)?.to_vec(),
        smallest_seq: r.varint64().ok_or_else(bad)?,
        largest_seq: r.varint64().ok_or_else(bad)?,
        global_seqno: None,
        num_entries: 0,
        num_deletions: 0,
        num_range_deletions: 0,
        backing: None,
    };
    if f.smallest.len() < 8 || f.largest.len() < 8 {
        return Err("version edit: file bound shorter than an internal key".into());
    }
    loop {
        let t = r.varint32().ok_or_else(bad)?;
        if t == FIELD_END {
            break;
        }
        let v = r.length_prefixed().ok_or_else(bad)?;
        let n = crate::util::coding::get_varint64(v)
            .map(|(n, _)| n)
            .ok_or_else(bad)?;
        match t {
            FIELD_GLOBAL_SEQNO => f.global_seqno = Some(n),
            FIELD_ENTRIES => f.num_entries = n,
            FIELD_DELETIONS => f.num_deletions = n,
            FIELD_RANGE_DELETIONS => f.num_range_deletions = n,
            FIELD_BACKING => {
                if n == f.number {
                    return Err(format!(
                        "version edit: file {n} names itself as its backing table"
                    ));
                }
                f.backing = Some(n)
            }
            other => return Err(format!("version edit: unknown file field {other}")),
        }
    }
    Ok((level, f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    fn file(n: u64) -> FileMeta {
        FileMeta {
            number: n,
            size: n * 1000,
            smallest: make_internal_key(b"a", n, ValueKind::Value),
            largest: make_internal_key(b"z", n + 5, ValueKind::Deletion),
            smallest_seq: n,
            largest_seq: n + 5,
            global_seqno: n.is_multiple_of(2).then_some(n + 100),
            num_entries: 17,
            num_deletions: 2,
            num_range_deletions: n % 3,
            backing: n.is_multiple_of(3).then_some(n / 3),
        }
    }

    #[test]
    fn round_trip() {
        let mut e = VersionEdit {
            comparator: Some(COMPARATOR.into()),
            log_number: Some(12),
            next_file_number: Some(40),
            last_sequence: Some(1 << 50),
            ingested_seq: Some(77),
            flushed_seq: Some(70),
            ..Default::default()
        };
        e.queued_files.push(file(30));
        e.queued_files.push(file(32));
        e.delete_file(0, 7);
        e.delete_file(3, 9);
        e.add_file(0, file(20));
        e.add_file(6, file(21));
        let enc = e.encode();
        assert_eq!(VersionEdit::decode(&enc).unwrap(), e);
        for cut in 0..enc.len() {
            // Cutting at a field boundary yields a shorter edit; anywhere
            // else it must be an error, never a panic.
            if let Ok(d) = VersionEdit::decode(&enc[..cut]) {
                assert_ne!(d, e);
            }
        }
        assert!(VersionEdit::decode(&[99]).is_err());
    }

    /// The backing field survives a round trip, is written only for virtual
    /// files, and a file naming itself as its backing, an unknown field or a
    /// truncated backing value is refused.
    #[test]
    fn backing_field() {
        let mut virt = file(21);
        virt.backing = Some(7);
        let mut phys = file(21);
        phys.number = 22;
        phys.backing = None;
        let mut e = VersionEdit::default();
        e.add_file(3, virt.clone());
        e.add_file(3, phys.clone());
        e.queued_files.push(FileMeta {
            global_seqno: Some(5),
            ..virt.clone()
        });
        let enc = e.encode();
        let d = VersionEdit::decode(&enc).unwrap();
        assert_eq!(d, e);
        assert_eq!(d.new_files[0].1.backing_number(), 7);
        assert!(d.new_files[0].1.is_virtual());
        assert_eq!(d.new_files[1].1.backing_number(), 22);
        assert!(!d.new_files[1].1.is_virtual());

        // Field 5 appears only in the virtual file's record.
        let one = |f: &FileMeta| {
            let mut e = VersionEdit::default();
            e.add_file(1, f.clone());
            e.encode()
        };
        let (ev, ep) = (one(&virt), one(&phys));
        assert_eq!(ev.len(), ep.len() + 3, "tag, length, one-byte value");

        // Self-backed: corruption, not a silently physical file.
        let mut selfish = virt.clone();
        selfish.backing = Some(selfish.number);
        let err = VersionEdit::decode(&one(&selfish)).unwrap_err();
        assert!(err.contains("itself"), "{err}");

        // An unknown field (6) where field 5 would be.
        let mut bad = ev.clone();
        let at = bad.len() - 4; // tag 5, len 1, value 7, end 0
        assert_eq!(&bad[at..], &[5, 1, 7, 0]);
        bad[at] = 6;
        assert!(VersionEdit::decode(&bad)
            .unwrap_err()
            .contains("unknown file field"));
        // A backing value whose varint is cut short.
        let mut cut = ev[..at].to_vec();
        cut.extend_from_slice(&[5, 1, 0x80, 0]);
        assert!(VersionEdit::decode(&cut).is_err());
    }
}
