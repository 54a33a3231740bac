//! Telling an interrupted write from damage at the end of a log.
//!
//! [`LogReader`](super::LogReader) under `TolerateTornTail` drops damage
//! that no complete record follows. That alone does not prove the damage
//! was a write that never finished: a flipped byte in the last record, or a
//! damaged length field, look the same to it. [`judge`] looks at the dropped
//! bytes and accepts only what an interrupted append leaves behind:
//!
//! - a **short read at end of file**: a header or payload cut off by the end
//!   of the file, or a fragmented record whose Last fragment never came
//!   (unless the cut-off record's checksum verifies over the bytes that are
//!   there: then the record is whole and its length field is damaged);
//! - **zero fill**: an all-zero header followed only by zeros, or a
//!   checksum mismatch in a record that ends in a run of zero bytes (file
//!   space allocated but never written).
//!
//! Everything else (a checksum mismatch without zero fill, a length running
//! past its block, an unknown type, an orphan fragment) is corruption of
//! bytes that were complete once and may have been acknowledged.

use super::format::{record_checksum, Header, RecordType, HEADER_SIZE};
use super::reader::{Damage, DroppedTail};
use crate::error::Result;
use crate::vfs::RandomAccessFile;

/// Zero bytes a checksum-failing last record must end with to count as
/// never written. A record's own encoding practically never ends in four
/// zero bytes (varint fields end in a byte below 0x80, rarely 0), while
/// space the disk never wrote is zero for a whole sector.
const MIN_ZERO_FILL: usize = 4;

/// `Ok(None)` if the tail `t` of `file` is what an interrupted write leaves
/// (a torn tail, safe to drop); `Ok(Some(reason))` if it is damage.
pub fn judge(file: &dyn RandomAccessFile, t: &DroppedTail) -> Result<Option<String>> {
    let end = file.len();
    let start = t.offset.min(end);
    let mut tail = vec![0u8; (end - start) as usize];
    file.read_exact_at(&mut tail, start)?;
    let zeros = tail.iter().rev().take_while(|&&b| b == 0).count();
    Ok(match t.damage {
        Damage::TruncatedHeader | Damage::IncompleteRecord => None,
        Damage::TruncatedPayload => {
            // A record whose bytes are all there (its checksum verifies over
            // what is left) was written whole: its length field is what
            // changed.
            let whole = tail.len() >= HEADER_SIZE && {
                let mut h = [0u8; HEADER_SIZE];
                h.copy_from_slice(&tail[..HEADER_SIZE]);
                let h = Header::decode(&h);
                h.kind == RecordType::Full as u8
                    && record_checksum(h.kind, &tail[HEADER_SIZE..]) == h.checksum
            };
            whole.then(|| {
                "the last record's length runs past end of file, but the bytes present \
                 verify against its checksum: a damaged length field, not an unfinished write"
                    .to_string()
            })
        }
        Damage::ZeroFilled if zeros >= HEADER_SIZE => None,
        Damage::ZeroFilled => Some(
            "an all-zero record header followed by non-zero bytes (not space left unwritten)"
                .to_string(),
        ),
        Damage::BadChecksum if zeros >= MIN_ZERO_FILL => None,
        Damage::BadChecksum => Some(
            "checksum mismatch in the last record, with no sign of an unfinished write \
             (no short read, no zero fill): the record was complete and is now damaged"
                .to_string(),
        ),
        Damage::BadLength | Damage::UnknownType(_) | Damage::OrphanFragment => Some(format!(
            "{:?} at the end of the log is not what an unfinished write leaves",
            t.damage
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{MemVfs, Vfs};
    use crate::wal::{LogReader, LogWriter, TailPolicy};
    use std::path::Path;

    /// Writes records, damages the file with `f`, reads it back and judges.
    fn verdict(f: impl Fn(&mut Vec<u8>)) -> Option<Option<String>> {
        let vfs = MemVfs::new();
        let p = Path::new("/log");
        let mut w = LogWriter::new(vfs.create(p).unwrap(), "log");
        for i in 0..3u8 {
            w.add_record(&[i + 1; 40]).unwrap();
        }
        w.sync().unwrap();
        drop(w);
        let mut data = crate::vfs::read_all(&vfs, p).unwrap();
        f(&mut data);
        crate::vfs::write_all(&vfs, p, &data).unwrap();
        let mut r = LogReader::new(
            vfs.open_sequential(p).unwrap(),
            "log",
            TailPolicy::TolerateTornTail,
        );
        while r.read_record().ok()?.is_some() {}
        let t = r.dropped_tail()?;
        Some(judge(vfs.open_random(p).unwrap().as_ref(), &t).unwrap())
    }

    #[test]
    fn short_reads_and_zero_fill_are_torn() {
        assert_eq!(verdict(|d| d.truncate(d.len() - 5)), Some(None));
        assert_eq!(verdict(|d| d.truncate(d.len() - 45)), Some(None));
        assert_eq!(verdict(|d| d.extend_from_slice(&[0; 100])), Some(None));
        // The last record's end never written.
        assert_eq!(
            verdict(|d| {
                let n = d.len();
                d[n - 10..].fill(0)
            }),
            Some(None)
        );
    }

    #[test]
    fn flipped_bytes_in_the_last_record_are_damage() {
        let n = 3 * 47;
        for i in n - 47..n {
            let v = verdict(|d| d[i] ^= 0x5a);
            assert!(matches!(v, Some(Some(_))), "byte {i}: {v:?}");
        }
    }
}
