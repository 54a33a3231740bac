//! WAL records whose checksums are valid but whose sequence numbers break
//! the log's own rules, as a bug, a bad disk that rewrote a whole sector
//! with its checksum, or a forger would leave them. The checksum cannot
//! catch these, so recovery checks the numbers themselves:
//!
//! - a batch numbered at or below a batch before it would put an older
//!   value over a newer one (a synced delete undone, silently);
//! - a batch whose numbers run past `2^56 - 1` cannot be keyed at all (it
//!   used to panic inside `strata repair`).
//!
//! Each is refused by `Db::open` as corruption naming the WAL and the
//! record's offset, reported as a problem by `strata::check`, and
//! `Db::repair` ends without a panic. A batch whose record inside does not
//! decode (an unknown tag, re-signed) is refused and reported at the file
//! offset of that record, through the log's fragment headers. The record is rewritten in place with
//! its checksum recomputed (the LevelDB log layout: masked CRC-32C of the
//! type byte and the payload; a batch starts with its 8-byte sequence).

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::{Path, PathBuf};
use strata::{Db, Error, Options, WriteBatch, WriteOptions};

const MASK_DELTA: u32 = 0xa282_ead8;

fn record_checksum(kind: u8, payload: &[u8]) -> u32 {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&[kind]), payload);
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// A database whose only WAL holds 20 synced batches (all in its first
/// block, one record each); returns the WAL's path.
fn build(dir: &Path) -> PathBuf {
    let db = Db::open(dir, Options::default()).unwrap();
    for i in 0..20u32 {
        let mut b = WriteBatch::new();
        b.put(format!("k{i:03}"), format!("v{i}"));
        if i == 19 {
            b.delete("k005");
        }
        db.write(b, &WriteOptions { sync: true }).unwrap();
    }
    db.close().unwrap();
    let mut wals: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let len = std::fs::metadata(p).unwrap().len();
            p.extension().is_some_and(|x| x == "log") && len > 0
        })
        .collect();
    assert_eq!(wals.len(), 1, "{wals:?}");
    wals.pop().unwrap()
}

/// Start offsets of the log's records (each one a Full record here).
fn records(log: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 7 <= log.len() {
        let len = u16::from_le_bytes([log[pos + 4], log[pos + 5]]) as usize;
        let kind = log[pos + 6];
        if kind == 0 {
            break;
        }
        assert_eq!(kind, 1, "a Full record");
        out.push(pos);
        pos += 7 + len;
    }
    out
}

/// Sets the sequence number of the batch in the record at `at` and
/// recomputes the record's checksum.
fn set_sequence(wal: &Path, at: usize, seq: u64) {
    let mut log = std::fs::read(wal).unwrap();
    let len = u16::from_le_bytes([log[at + 4], log[at + 5]]) as usize;
    log[at + 7..at + 15].copy_from_slice(&seq.to_le_bytes());
    let crc = record_checksum(log[at + 6], &log[at + 7..at + 7 + len]);
    log[at..at + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(wal, log).unwrap();
}

fn forged(case: &str, pick: impl Fn(&[usize]) -> (usize, u64), expect: &str) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let wal = build(&dir);
    let recs = records(&std::fs::read(&wal).unwrap());
    assert_eq!(recs.len(), 20, "{case}");
    let (at, seq) = pick(&recs);
    set_sequence(&wal, at, seq);

    match Db::open(&dir, Options::default()) {
        Err(Error::Corruption { file, offset, msg }) => {
            assert_eq!(Path::new(&file), wal, "{case}: {msg}");
            assert_eq!(offset, at as u64, "{case}: {msg}");
            assert!(msg.contains(expect), "{case}: {msg}");
        }
        Err(e) => panic!("{case}: expected corruption, got {e}"),
        Ok(db) => {
            let got = db.get("k005").unwrap();
            panic!("{case}: the forged record was accepted (k005 = {got:?})");
        }
    }
    let report = strata::check::check(&strata::vfs::OsVfs, &dir).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| Path::new(&p.file) == wal && p.offset == at as u64),
        "{case}: check found no problem at the record: {:?}",
        report.problems
    );
    // Repair may salvage or refuse; it must not panic (the test would).
    let _ = Db::repair(&dir, Options::default());
}

#[test]
fn a_batch_numbered_below_one_before_it_is_refused() {
    // The last batch (the synced delete of k005) renumbered to 3: replayed,
    // it would sit below the put it deleted, and k005 would come back.
    forged("backwards", |r| (r[19], 3), "must ascend");
}

#[test]
fn a_batch_numbered_past_the_largest_sequence_is_refused() {
    forged(
        "too large",
        |r| (r[10], u64::MAX - 26),
        "run past the largest",
    );
}

/// Physical records of a log: (offset, payload length, type), skipping the
/// zero padding at a block's end.
fn physical(log: &[u8]) -> Vec<(usize, usize, u8)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 7 <= log.len() {
        let rem = 32768 - pos % 32768;
        if rem < 7 {
            pos += rem;
            continue;
        }
        let len = u16::from_le_bytes([log[pos + 4], log[pos + 5]]) as usize;
        let kind = log[pos + 6];
        if kind == 0 {
            break;
        }
        out.push((pos, len, kind));
        pos += 7 + len;
    }
    out
}

/// Sets byte `i` of the last logical record's payload (a batch) of `wal`
/// to `to`, re-signing the fragment that holds it; returns the byte's file
/// offset and the record's.
fn set_last_record_byte(wal: &Path, i: usize, to: u8) -> (u64, u64) {
    let mut log = std::fs::read(wal).unwrap();
    let phys = physical(&log);
    // The last record: from its Full (1) or First (2) fragment on.
    let first = phys
        .iter()
        .rposition(|&(_, _, k)| k == 1 || k == 2)
        .unwrap();
    let mut i = i;
    for &(pos, len, kind) in &phys[first..] {
        if i < len {
            log[pos + 7 + i] = to;
            let crc = record_checksum(kind, &log[pos + 7..pos + 7 + len]);
            log[pos..pos + 4].copy_from_slice(&crc.to_le_bytes());
            std::fs::write(wal, log).unwrap();
            return ((pos + 7 + i) as u64, phys[first].0 as u64);
        }
        i -= len;
    }
    panic!("byte {i} is past the last record");
}

/// A record inside a batch with an unknown tag (re-signed, so the log's
/// checksum passes) is refused by the open and reported by `check` at the
/// file offset of that record of the batch, not at the batch's start or
/// offset 0: in a batch in one fragment, and in one split across blocks
/// (the offset then skips the fragment headers between). The open used to
/// report the log record's offset, and `WriteBatch::decode` offset 0.
#[test]
fn a_bad_record_inside_a_batch_is_reported_where_it_is_in_the_wal() {
    for (case, value_len) in [("one fragment", 10usize), ("three fragments", 70_000)] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("db");
        let wal = build(&dir);
        let db = Db::open(&dir, Options::default()).unwrap();
        let mut b = WriteBatch::new();
        b.put("big", vec![b'x'; value_len]).delete("k007");
        let batch_len = b.size_bytes();
        db.write(b, &WriteOptions { sync: true }).unwrap();
        db.close().unwrap();
        // The open wrote a fresh WAL for the batch (its predecessor was
        // flushed): find the newest non-empty one.
        let mut wals: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "log") && std::fs::metadata(p).unwrap().len() > 0
            })
            .collect();
        wals.sort();
        let wal = wals.pop().unwrap_or(wal);
        // The delete: tag, key length, 4 key bytes, at the batch's end.
        let delete_at = batch_len - 6;
        let (at, record) = set_last_record_byte(&wal, delete_at, 0x55);
        if value_len > 32_768 {
            assert!(at > record + 32_768, "{case}: the delete is past a block");
        }
        match Db::open(&dir, Options::default()) {
            Err(Error::Corruption { file, offset, msg }) => {
                assert_eq!(Path::new(&file), wal, "{case}: {msg}");
                assert_eq!(offset, at, "{case}: {msg}");
                assert!(msg.contains("unknown record tag 0x55"), "{case}: {msg}");
                assert!(
                    msg.contains(&format!("log record at offset {record}")),
                    "{case}: {msg}"
                );
            }
            Err(e) => panic!("{case}: expected corruption, got {e}"),
            Ok(_) => panic!("{case}: a batch with an unknown tag was accepted"),
        }
        let report = strata::check::check(&strata::vfs::OsVfs, &dir).unwrap();
        assert!(
            report.problems.iter().any(|p| Path::new(&p.file) == wal
                && p.offset == at
                && p.what.contains("unknown record tag 0x55")),
            "{case}: check found no problem at {at}: {:?}",
            report.problems
        );
    }
}

/// A gap in the WAL's numbers past the MANIFEST (the last batch renumbered
/// from 20 to 25): the open refuses it, naming the record; `Db::repair`,
/// whose policy differs but which finds the gap by the same rule
/// (`wal_sequence`), keeps the record after it and reports exactly the
/// numbers missing as lost.
#[test]
fn repair_keeps_the_records_after_a_gap_and_reports_its_numbers_lost() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let wal = build(&dir);
    let recs = records(&std::fs::read(&wal).unwrap());
    // Batches 0..=18 take 1..=19; the last (a put and a delete) 20..=21.
    set_sequence(&wal, recs[19], 25);
    match Db::open(&dir, Options::default()) {
        Err(Error::Corruption { offset, msg, .. }) => {
            assert_eq!(offset, recs[19] as u64, "{msg}");
            assert!(msg.contains("20..=24 appear in no WAL record"), "{msg}");
        }
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("a gap was accepted"),
    }
    let r = Db::repair(&dir, Options::default()).unwrap();
    let gaps: Vec<&String> = r
        .lost
        .iter()
        .filter(|l| l.contains("in no WAL record"))
        .collect();
    assert_eq!(gaps.len(), 1, "{r:?}");
    assert!(gaps[0].starts_with("sequence numbers 20..=24:"), "{r:?}");
    let db = Db::open(&dir, Options::default()).unwrap();
    assert_eq!(db.get("k019").unwrap(), Some(b"v19".to_vec()));
    assert_eq!(
        db.get("k005").unwrap(),
        None,
        "the record after the gap is kept"
    );
    assert_eq!(db.get("k018").unwrap(), Some(b"v18".to_vec()));
    db.close().unwrap();
}
