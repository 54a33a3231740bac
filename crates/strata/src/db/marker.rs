//! An ingestion's WAL marker: what recovery needs to roll an ingestion
//! forward when its MANIFEST record did not survive.
//!
//! An ingestion commits by writing its MANIFEST record *unsynced* in the
//! commit slot; the writes queued behind it go on, and the ingesting caller
//! syncs the MANIFEST afterwards. Right after the record, the commit
//! appends this marker to the WAL: a write batch with `count` 0 at the
//! ingestion's sequence number, whose one log-data record (RocksDB's
//! `kTypeLogData`, which takes no sequence number and is never applied)
//! names the ingestion's files exactly as the MANIFEST record names them.
//! A power cut or a failed MANIFEST write can keep the marker (or a later
//! synced write behind it) and lose the record. The files themselves are
//! durable before the commit (`ingest::prepare` syncs them and the
//! directory), so recovery can redo the ingestion (`open::replay_wals`):
//! it checks every file the marker names is present with its recorded size
//! and opens as a table, then queues the files at the marker's sequence
//! number, with the excise (if any) as a range tombstone at that sequence
//! number, exactly as an ingestion that waited behind a memtable is
//! recovered. If a file is missing or changed, the ingestion cannot be
//! redone and the open refuses, naming the file.
//!
//! Invariants:
//! - A marker is written only after its ingestion's MANIFEST record was
//!   handed to the operating system, and only if that write succeeded.
//! - The files it names are those the record adds (the ingestion's own
//!   files, its range-tombstone file only if the record places it), with
//!   the record's metadata, global sequence number included.
//! - A marker without log data (written before markers named their files)
//!   still reads; recovery cannot roll it forward and refuses as before.
//!
//! Log-data layout (after the batch header):
//!
//! ```text
//! 'I' | version 1 | flags (bit 0: excise) | [varstring start, varstring end]
//!     | a version edit (the MANIFEST record encoding) with one queued file
//!       record per file
//! ```

use super::write_batch::WriteBatch;
use crate::util::coding::{put_length_prefixed, Reader};
use crate::version::{FileMeta, VersionEdit};

const KIND_INGEST: u8 = b'I';
const VERSION: u8 = 1;
const FLAG_EXCISE: u8 = 1;

/// An ingestion as its WAL marker records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IngestMarker {
    /// The ingestion's sequence number.
    pub seq: u64,
    /// The files its MANIFEST record adds (global sequence number `seq`).
    pub files: Vec<FileMeta>,
    /// The excise range `[start, end)`, if the ingestion had one.
    pub excise: Option<(Vec<u8>, Vec<u8>)>,
}

impl IngestMarker {
    /// The marker as a WAL record (a batch with no update).
    pub fn to_batch(&self) -> WriteBatch {
        let mut blob = vec![KIND_INGEST, VERSION];
        match &self.excise {
            Some((a, b)) => {
                blob.push(FLAG_EXCISE);
                put_length_prefixed(&mut blob, a);
                put_length_prefixed(&mut blob, b);
            }
            None => blob.push(0),
        }
        let edit = VersionEdit {
            queued_files: self.files.clone(),
            ..Default::default()
        };
        blob.extend_from_slice(&edit.encode());
        let mut b = WriteBatch::new();
        b.set_sequence(self.seq);
        b.put_log_data(&blob);
        b
    }

    /// Reads a marker from a batch with no update. `Ok(None)`: a bare
    /// marker (no log data), which names no files. An error says what does
    /// not decode.
    pub fn from_batch(b: &WriteBatch) -> Result<Option<IngestMarker>, String> {
        if !b.is_empty() {
            return Err("an ingestion marker holds no update".into());
        }
        let data = b
            .log_data()
            .ok_or_else(|| "ingestion marker: log data does not decode".to_string())?;
        let blob = match data.as_slice() {
            [] => return Ok(None),
            [one] => *one,
            _ => return Err("ingestion marker: more than one log-data record".into()),
        };
        let mut r = Reader::new(blob);
        let head = r
            .bytes(3)
            .ok_or_else(|| "ingestion marker: truncated header".to_string())?;
        if head[0] != KIND_INGEST || head[1] != VERSION {
            return Err(format!(
                "ingestion marker: unknown kind or version ({:#04x}, {})",
                head[0], head[1]
            ));
        }
        let excise = match head[2] {
            0 => None,
            FLAG_EXCISE => {
                let a = r.length_prefixed();
                let e = r.length_prefixed();
                match (a, e) {
                    (Some(a), Some(e)) => Some((a.to_vec(), e.to_vec())),
                    _ => return Err("ingestion marker: truncated excise range".into()),
                }
            }
            f => return Err(format!("ingestion marker: unknown flags {f:#04x}")),
        };
        let rest = &blob[r.pos()..];
        let edit = VersionEdit::decode(rest).map_err(|m| format!("ingestion marker: {m}"))?;
        let only_files = VersionEdit {
            queued_files: edit.queued_files.clone(),
            ..Default::default()
        };
        if edit != only_files {
            return Err("ingestion marker: holds more than the ingestion's files".into());
        }
        let seq = b.sequence();
        if let Some(f) = edit
            .queued_files
            .iter()
            .find(|f| f.global_seqno != Some(seq))
        {
            return Err(format!(
                "ingestion marker at sequence number {seq}: file {} has sequence number {:?}",
                f.number, f.global_seqno
            ));
        }
        if edit.queued_files.is_empty() && excise.is_none() {
            return Err("ingestion marker: names no file and no excise".into());
        }
        Ok(Some(IngestMarker {
            seq,
            files: edit.queued_files,
            excise,
        }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    fn file(number: u64, seq: u64) -> FileMeta {
        FileMeta {
            number,
            size: 1000 + number,
            smallest: make_internal_key(b"a", seq, ValueKind::RangeDeletion),
            largest: make_internal_key(b"m", seq, ValueKind::Deletion),
            smallest_seq: seq,
            largest_seq: seq,
            global_seqno: Some(seq),
            num_entries: 7,
            num_deletions: 1,
            num_range_deletions: 0,
            backing: None,
        }
    }

    #[test]
    fn round_trip() {
        for excise in [None, Some((b"a".to_vec(), b"z".to_vec()))] {
            let m = IngestMarker {
                seq: 42,
                files: vec![file(7, 42), file(9, 42)],
                excise,
            };
            let b = WriteBatch::from_bytes(m.to_batch().data().to_vec()).unwrap();
            assert!(b.is_empty());
            assert_eq!(b.sequence(), 42);
            assert_eq!(IngestMarker::from_batch(&b).unwrap(), Some(m));
        }
    }

    #[test]
    fn bare_marker_names_nothing() {
        let mut b = WriteBatch::new();
        b.set_sequence(5);
        assert_eq!(IngestMarker::from_batch(&b).unwrap(), None);
    }

    #[test]
    fn damaged_markers_are_errors_not_panics() {
        // Every byte after the batch header flipped three ways.
        let m = IngestMarker {
            seq: 3,
            files: vec![file(4, 3)],
            excise: Some((b"b".to_vec(), b"c".to_vec())),
        };
        let good = m.to_batch().data().to_vec();
        let mut errors = 0;
        for i in super::super::write_batch::HEADER..good.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= x;
                match WriteBatch::from_bytes(bad) {
                    // A flip may still decode (a key byte, or the level
                    // byte a queued file record ignores): the WAL record's
                    // checksum is what catches damage. Here: no panic.
                    Ok(b) => match IngestMarker::from_batch(&b) {
                        Ok(_) => {}
                        Err(_) => errors += 1,
                    },
                    Err(_) => errors += 1,
                }
            }
        }
        assert!(errors > 0);
        // A file at another sequence number is refused.
        let wrong = IngestMarker {
            seq: 3,
            files: vec![file(4, 2)],
            excise: None,
        };
        assert!(IngestMarker::from_batch(&wrong.to_batch()).is_err());
    }
}
