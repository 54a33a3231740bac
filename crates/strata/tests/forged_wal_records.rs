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
//! `Db::repair` ends without a panic. The record is rewritten in place with
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
