//! RocksDB's own log reader accepts Strata's log framing: a WAL written by
//! `LogWriter` (records padded to block ends, an empty First fragment,
//! records spanning many blocks) is dumped by RocksDB 7.8's
//! `ldb dump_wal` with every record at the offset Strata's reader reports
//! and no corruption. The payloads are minimal RocksDB WriteBatches (one
//! Put each) only because `dump_wal` decodes them; Strata's WAL payload
//! format is not what this test checks.
//!
//! Skips (with a message) when `ldb` is not installed.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::process::Command;

use strata::util::coding::{put_fixed32, put_fixed64, put_varint32};
use strata::vfs::{OsVfs, Vfs};
use strata::wal::format::{block_remaining, BLOCK_SIZE, HEADER_SIZE};
use strata::wal::{LogReader, LogWriter, TailPolicy};

/// A WriteBatch with one Put: sequence (fixed64), count (fixed32), then
/// kTypeValue (1), key and value as varint32-length-prefixed strings.
fn put_batch(seq: u64, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    put_fixed64(&mut b, seq);
    put_fixed32(&mut b, 1);
    b.push(1);
    put_varint32(&mut b, key.len() as u32);
    b.extend_from_slice(key);
    put_varint32(&mut b, value.len() as u32);
    b.extend_from_slice(value);
    b
}

/// The value length that makes `put_batch(_, key, value)` exactly `total`
/// bytes long.
fn value_len_for(key: &[u8], total: usize) -> usize {
    (0..total)
        .find(|&v| put_batch(0, key, &vec![0; v]).len() == total)
        .expect("a value length that hits the total")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// Runs `ldb dump_wal --print_value`; returns its status, stdout, stderr.
fn dump_wal(path: &Path) -> (std::process::ExitStatus, String, String) {
    let out = Command::new("ldb")
        .arg("dump_wal")
        .arg(format!("--walfile={}", path.display()))
        .arg("--print_value")
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ldb_available() -> bool {
    Command::new("ldb").arg("--help").output().is_ok()
}

#[test]
fn ldb_dump_wal_reads_strata_framing() {
    if !ldb_available() {
        eprintln!("skipping: `ldb` (RocksDB tools) is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000007.log");
    let vfs = OsVfs;
    let mut w = LogWriter::new(vfs.create(&path).unwrap(), "000007.log");

    // (key, value) of each batch, chosen so the log has every layout case.
    let mut puts: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let add = |w: &mut LogWriter, puts: &mut Vec<(Vec<u8>, Vec<u8>)>, k: &[u8], v: Vec<u8>| {
        let seq = puts.len() as u64 + 1;
        puts.push((k.to_vec(), v));
        let (k, v) = puts.last().unwrap();
        w.add_record(&put_batch(seq, k, v)).unwrap();
    };
    add(&mut w, &mut puts, b"a", b"first".to_vec());
    // Fill block 0 so 6 bytes remain: they become padding.
    let fill = block_remaining(w.len()) - HEADER_SIZE - 6;
    add(
        &mut w,
        &mut puts,
        b"pad",
        vec![b'p'; value_len_for(b"pad", fill)],
    );
    assert_eq!(block_remaining(w.len()), 6);
    add(&mut w, &mut puts, b"b", b"second".to_vec());
    // Leave exactly a header's worth, so the next record starts with an
    // empty First fragment.
    let fill = block_remaining(w.len()) - 2 * HEADER_SIZE;
    add(
        &mut w,
        &mut puts,
        b"seven",
        vec![b's'; value_len_for(b"seven", fill)],
    );
    assert_eq!(block_remaining(w.len()), HEADER_SIZE);
    add(&mut w, &mut puts, b"c", b"after empty first".to_vec());
    // One value spanning several blocks.
    let big: Vec<u8> = (0..5 * BLOCK_SIZE + 123).map(|i| (i % 251) as u8).collect();
    add(&mut w, &mut puts, b"big", big);
    add(&mut w, &mut puts, b"z", b"last".to_vec());
    w.sync().unwrap();
    drop(w);

    // Strata's reader gives the offsets ldb must report. RocksDB 7.8 counts
    // a record that follows block padding from the start of the padding
    // (the end of the previous record), so expect that there.
    let mut r = LogReader::new(
        vfs.open_sequential(&path).unwrap(),
        "000007.log",
        TailPolicy::Strict,
    );
    let mut offsets = Vec::new();
    let mut prev_end = 0;
    while let Some(rec) = r.read_record().unwrap() {
        let (k, v) = &puts[offsets.len()];
        assert_eq!(rec, put_batch(offsets.len() as u64 + 1, k, v));
        let start = r.last_record_offset();
        let after_padding = start > prev_end && start.is_multiple_of(BLOCK_SIZE as u64);
        offsets.push(if after_padding { prev_end } else { start });
        prev_end = r.last_record_end();
    }
    assert_eq!(offsets.len(), puts.len());
    // The padding case is present and is the only place the two differ.
    assert_eq!(offsets[2], BLOCK_SIZE as u64 - 6);

    let (out, stdout, stderr) = dump_wal(&path);
    assert!(out.success(), "ldb failed: {stderr}\n{stdout}");
    assert!(
        !stdout.to_lowercase().contains("corrupt") && !stderr.to_lowercase().contains("corrupt"),
        "ldb reported corruption:\n{stdout}\n{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), puts.len(), "ldb output:\n{stdout}");
    for (i, line) in lines.iter().enumerate() {
        // "sequence,count,byte size,offset,PUT(0) : 0xKEY : 0xVALUE"
        let f: Vec<&str> = line.splitn(5, ',').collect();
        let (k, v) = &puts[i];
        let size = put_batch(0, k, v).len();
        assert_eq!(f[0], (i + 1).to_string(), "sequence of line {i}: {line}");
        assert_eq!(f[1], "1", "count of line {i}");
        assert_eq!(f[2], size.to_string(), "byte size of line {i}");
        assert_eq!(f[3], offsets[i].to_string(), "offset of line {i}");
        let body = f[4].trim();
        assert!(
            body.starts_with(&format!("PUT(0) : 0x{} : 0x{}", hex(k), hex(v))),
            "line {i}: {}",
            &body[..body.len().min(200)]
        );
    }

    // The check above can fail: ldb does notice a damaged record.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offsets[3] as usize + 20] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let (_, stdout, stderr) = dump_wal(&path);
    assert!(
        format!("{stdout}{stderr}")
            .to_lowercase()
            .contains("corrupt"),
        "ldb missed a flipped byte:\n{stdout}\n{stderr}"
    );
}
