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
//! - **a cut into reserved space**: a file whose space was reserved ahead
//!   of its records (the MANIFEST: `version::manifest_log`) ends in zeros
//!   up to the reservation, so an interrupted append there leaves no short
//!   read, only records cut off where the zeros begin. When the file ends
//!   in a run of zeros, the tail is judged as if the file ended where the
//!   run begins: a fragment cut off there is torn; a fragment complete
//!   before it with a bad checksum, type or length is damage, as in a file
//!   without reserved space. A fragment whose end lies in the same
//!   [`SECTOR`] as the last non-zero byte counts as complete: a disk
//!   writes a sector whole, so zeros there are the fragment's own bytes.
//!
//! Everything else (a checksum mismatch without zero fill, a length running
//! past its block, an unknown type, an orphan fragment) is corruption of
//! bytes that were complete once and may have been acknowledged.

use super::format::{block_remaining, record_checksum, Header, RecordType, HEADER_SIZE};
use super::reader::{Damage, DroppedTail};
use crate::error::Result;
use crate::vfs::RandomAccessFile;

/// Zero bytes a checksum-failing last record must end with to count as
/// never written. A record's own encoding practically never ends in four
/// zero bytes (varint fields end in a byte below 0x80, rarely 0), while
/// space the disk never wrote is zero for a whole sector.
const MIN_ZERO_FILL: usize = 4;

/// The unit a disk writes whole or not at all (a 512-byte sector, the
/// smallest any disk uses; its power-fail atomicity is what file-system
/// journals rely on too). `FaultVfs` keeps reserved files' unsynced bytes
/// in whole sectors to match.
pub const SECTOR: u64 = 512;

/// `Ok(None)` if the tail `t` of `file` is what an interrupted write leaves
/// (a torn tail, safe to drop); `Ok(Some(reason))` if it is damage.
pub fn judge(file: &dyn RandomAccessFile, t: &DroppedTail) -> Result<Option<String>> {
    let end = file.len();
    let start = t.offset.min(end);
    let mut tail = vec![0u8; (end - start) as usize];
    file.read_exact_at(&mut tail, start)?;
    let zeros = tail.iter().rev().take_while(|&&b| b == 0).count();
    let cut = tail.len() - zeros;
    // Where the sector holding the last non-zero byte ends, in `tail`.
    let sector_end = ((start + cut as u64).next_multiple_of(SECTOR) - start) as usize;
    if zeros >= MIN_ZERO_FILL && tail.len() > sector_end {
        // Zeros past the sector of the last non-zero byte: reserved space
        // (no unfinished append of an unreserved file leaves more zeros
        // than the rest of its last sector).
        return Ok(judge_cut(&tail, start, cut, sector_end));
    }
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
            "{} at the end of the log is not what an unfinished write leaves",
            t.damage
        )),
    })
}

/// [`judge`] for a tail (`tail`, starting at file offset `start`, a
/// record boundary) whose bytes from `cut` on are all zero: walks its
/// fragments as the reader does and decides as if the file ended at `cut`.
/// A disk writes a sector whole or not at all, so a fragment ending by
/// `sector_end` (the end of the sector holding the last non-zero byte) was
/// written whole: zeros at its end are its own bytes (a varint 0), not
/// space the crash left unwritten.
fn judge_cut(tail: &[u8], start: u64, cut: usize, sector_end: usize) -> Option<String> {
    let mut pos = 0usize;
    loop {
        let left = block_remaining(start + pos as u64);
        if left < HEADER_SIZE {
            // The writer's zero padding at a block's end.
            pos += left;
            continue;
        }
        if pos + HEADER_SIZE > cut {
            // Nothing, or a header cut off, before the zeros begin.
            return None;
        }
        let mut hb = [0u8; HEADER_SIZE];
        hb.copy_from_slice(&tail[pos..pos + HEADER_SIZE]);
        let h = Header::decode(&hb);
        let body = pos + HEADER_SIZE;
        let end = body + h.length;
        let known = (RecordType::Full as u8..=RecordType::Last as u8).contains(&h.kind);
        if known
            && HEADER_SIZE + h.length <= left
            && end <= tail.len()
            && record_checksum(h.kind, &tail[body..end]) == h.checksum
        {
            // A whole fragment (the damage is further on).
            pos = end;
            continue;
        }
        if end > sector_end {
            // Its end lies in the zeros, never written, unless the bytes
            // up to the zeros verify as a whole record: then the length
            // field is what changed (as for a short read in `judge`).
            let whole = h.kind == RecordType::Full as u8
                && body <= cut
                && record_checksum(h.kind, &tail[body..cut]) == h.checksum;
            return whole.then(|| {
                "the last record's length runs into the log's zero-filled end, but the bytes \
                 before the zeros verify against its checksum: a damaged length field, not an \
                 unfinished write"
                    .to_string()
            });
        }
        return Some(format!(
            "a record at offset {} complete before the log's zero-filled end has a bad \
             checksum, type or length: the record was complete and is now damaged",
            start + pos as u64
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{MemVfs, Vfs};
    use crate::wal::{LogReader, LogWriter, TailPolicy};
    use std::path::Path;

    /// Writes records, damages the file with `f`, reads it back and judges.
    fn verdict(f: impl Fn(&mut Vec<u8>)) -> Option<Option<String>> {
        verdict_sized(40, f)
    }

    /// `verdict` with three records of `size` payload bytes.
    fn verdict_sized(size: usize, f: impl Fn(&mut Vec<u8>)) -> Option<Option<String>> {
        let vfs = MemVfs::new();
        let p = Path::new("/log");
        let mut w = LogWriter::new(vfs.create(p).unwrap(), "log");
        for i in 0..3u8 {
            w.add_record(&vec![i + 1; size]).unwrap();
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

    /// Space reserved past the records (as the MANIFEST's writer does)
    /// reads as zeros after a crash.
    const RESERVED: usize = 70_000;

    #[test]
    fn a_cut_into_reserved_space_is_torn() {
        // Records of 207 bytes at 0, 207 and 414; the last one crosses the
        // sector boundary at 512. Zeros from any point of it up to 512 on
        // (the sector after 512 unwritten, the one before written, its
        // end in zeros) are an unfinished append. (A cut past 512 would
        // leave a sector half written, which a disk does not.)
        for keep in (2 * 207..=512).step_by(7).chain([512]) {
            let v = verdict_sized(200, |d| {
                d.truncate(keep);
                d.resize(RESERVED, 0)
            });
            assert_eq!(v, Some(None), "cut at {keep}");
        }
        // Whole records, then only reserved zeros: nothing dropped is
        // damage.
        assert_eq!(verdict(|d| d.resize(RESERVED, 0)), Some(None));
    }

    #[test]
    fn zeros_ending_a_record_inside_its_last_sector_are_its_own() {
        // The second record (207..414) ends inside the sector that holds
        // the last non-zero byte: a disk writes a sector whole, so it was
        // written whole, and zeros before its end are damage, not a cut.
        for keep in (207 + 7..414).step_by(5) {
            let v = verdict_sized(200, |d| {
                d.truncate(keep);
                d.resize(RESERVED, 0)
            });
            assert!(matches!(v, Some(Some(_))), "cut at {keep}: {v:?}");
        }
    }

    #[test]
    fn flipped_bytes_in_the_last_record_are_damage() {
        let n = 3 * 47;
        // At the end of the file, and before reserved space.
        for reserved in [0, RESERVED] {
            for i in n - 47..n {
                let v = verdict(|d| {
                    d[i] ^= 0x5a;
                    if reserved > 0 {
                        d.resize(reserved, 0)
                    }
                });
                assert!(matches!(v, Some(Some(_))), "byte {i}, {reserved}: {v:?}");
            }
        }
    }
}
