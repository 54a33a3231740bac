//! Tables whose damage no block checksum catches, because the damage is in
//! what says how (or whether) blocks are checked, or in a block re-signed
//! with a valid checksum:
//!
//! - a format_version 5 footer is not checksummed itself, and its first
//!   byte says which checksum the blocks carry: one flipped bit turns
//!   crc32c (1) into none (0), after which no block is verified. A
//!   database refuses such a table (reading it, and ingesting it) unless
//!   its own options write unchecksummed tables; `strata::check` reports it;
//! - an index entry whose separator does not bound its data block (a
//!   re-signed index block) makes `get` miss a key a scan finds: ingestion
//!   and `strata::check` (through `Table::verify`) refuse it.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::{Path, PathBuf};
use strata::sstable::format::FOOTER_SIZE;
use strata::{
    ChecksumType, CompressionType, Db, Error, IngestOptions, Options, SstOptions, SstWriter,
};

fn key(i: u32) -> String {
    format!("key{i:05}")
}

fn value(i: u32) -> String {
    format!("value-{i:05}")
}

/// Options whose tables are uncompressed (a flipped value byte stays a
/// readable, wrong value) and checksummed with `checksum`.
fn options(checksum: ChecksumType) -> Options {
    Options {
        sst: SstOptions {
            compression: CompressionType::None,
            checksum,
            ..SstOptions::default()
        },
        ..Options::default()
    }
}

/// The table files of `dir`.
fn tables(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    v.sort();
    v
}

/// A database in `dir` with 500 keys in one flushed table; returns it.
fn one_table_db(dir: &Path, checksum: ChecksumType) -> PathBuf {
    let db = Db::open(dir, options(checksum)).unwrap();
    for i in 0..500 {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let t = tables(dir);
    assert_eq!(t.len(), 1, "{t:?}");
    t[0].clone()
}

/// Turns the footer's checksum type of `path` into none (a one-bit flip,
/// crc32c being 1) and returns the footer's offset.
fn flip_checksum_type_to_none(path: &Path) -> u64 {
    let mut b = std::fs::read(path).unwrap();
    let at = b.len() - FOOTER_SIZE;
    assert_eq!(b[at], ChecksumType::Crc32c as u8);
    b[at] ^= 1;
    std::fs::write(path, b).unwrap();
    at as u64
}

/// Replaces the first occurrence of `from` in `path` by `to` (same length).
fn overwrite(path: &Path, from: &[u8], to: &[u8]) {
    let mut b = std::fs::read(path).unwrap();
    let at = b.windows(from.len()).position(|w| w == from).unwrap();
    b[at..at + to.len()].copy_from_slice(to);
    std::fs::write(path, b).unwrap();
}

/// `e` is corruption at `offset` of `file`, saying the footer declares no
/// checksum and that `who` requires one.
fn assert_no_checksum_refusal(e: &Error, file: &Path, offset: u64, who: &str) {
    match e {
        Error::Corruption {
            file: f,
            offset: o,
            msg,
        } => {
            assert_eq!(Path::new(f), file, "{e}");
            assert_eq!(*o, offset, "{e}");
            assert!(msg.contains("the footer declares no checksum"), "{e}");
            assert!(msg.contains(&format!("{who} requires one")), "{e}");
        }
        e => panic!("not corruption: {e}"),
    }
}

/// The footer's checksum type flipped to none and a value byte changed:
/// without the rule the database served the changed value and `check`
/// passed (no block was verified). Now every read of the table fails
/// naming the file and the footer's offset, and `check` reports it.
#[test]
fn a_footer_flipped_to_no_checksum_is_refused_by_the_database_and_check() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let table = one_table_db(&dir, ChecksumType::Crc32c);
    let footer = flip_checksum_type_to_none(&table);
    overwrite(&table, value(123).as_bytes(), b"VALUE");

    let db = Db::open(&dir, options(ChecksumType::Crc32c)).unwrap();
    let e = db.get(key(123)).unwrap_err();
    assert_no_checksum_refusal(&e, &table, footer, "the database");
    let e = db.get(key(7)).unwrap_err();
    assert_no_checksum_refusal(&e, &table, footer, "the database");
    db.close().unwrap();

    let r = strata::check::check_dir(&dir).unwrap();
    let p = r
        .problems
        .iter()
        .find(|p| p.offset == footer && p.what.contains("the footer declares no checksum"))
        .unwrap_or_else(|| panic!("check passed an unverifiable table: {r:?}"));
    assert_eq!(Path::new(&p.file), table);
}

/// A database whose options write unchecksummed tables reads its own (the
/// rule's exception), and a default one refuses them; `check` calls them
/// a problem either way, since it can verify nothing in them.
#[test]
fn unchecksummed_tables_are_read_only_by_a_database_that_writes_them() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let table = one_table_db(&dir, ChecksumType::None);
    let db = Db::open(&dir, options(ChecksumType::None)).unwrap();
    for i in (0..500).step_by(37) {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i).into_bytes()));
    }
    assert_eq!(db.iter().count(), 500);
    db.close().unwrap();

    let footer = std::fs::metadata(&table).unwrap().len() - FOOTER_SIZE as u64;
    let db = Db::open(&dir, options(ChecksumType::Crc32c)).unwrap();
    let e = db.get(key(1)).unwrap_err();
    assert_no_checksum_refusal(&e, &table, footer, "the database");
    db.close().unwrap();

    let r = strata::check::check_dir(&dir).unwrap();
    assert!(
        r.problems
            .iter()
            .any(|p| p.offset == footer && p.what.contains("declares no checksum")),
        "{r:?}"
    );
}

/// A file to ingest whose footer declares no checksum is refused before
/// anything is linked (whether written that way or flipped), naming the
/// file and its footer's offset; a database writing unchecksummed tables
/// ingests it.
#[test]
fn ingestion_refuses_a_file_without_checksums() {
    let t = tempfile::tempdir().unwrap();
    let write = |name: &str, checksum: ChecksumType| {
        let p = t.path().join(name);
        let mut w = SstWriter::create(
            &p,
            SstOptions {
                checksum,
                ..SstOptions::for_ingestion()
            },
        )
        .unwrap();
        for i in 0..2000 {
            w.put(key(i), value(i)).unwrap();
        }
        w.finish().unwrap();
        p
    };
    let none = write("none.sst", ChecksumType::None);
    let flipped = write("flipped.sst", ChecksumType::Crc32c);
    let flipped_footer = flip_checksum_type_to_none(&flipped);
    let none_footer = std::fs::metadata(&none).unwrap().len() - FOOTER_SIZE as u64;

    let db = Db::open(t.path().join("db"), options(ChecksumType::Crc32c)).unwrap();
    for (p, footer) in [(&none, none_footer), (&flipped, flipped_footer)] {
        for small_file_bytes in [0, u64::MAX] {
            let e = db
                .ingest(
                    &[p],
                    &IngestOptions {
                        small_file_bytes,
                        ..IngestOptions::default()
                    },
                )
                .unwrap_err();
            assert_no_checksum_refusal(&e, p, footer, "ingestion");
            assert!(p.exists(), "the refused file was moved");
        }
    }
    assert_eq!(db.iter().count(), 0);
    db.close().unwrap();

    let db = Db::open(t.path().join("db2"), options(ChecksumType::None)).unwrap();
    db.ingest(
        &[&none],
        &IngestOptions {
            small_file_bytes: 0,
            ..IngestOptions::default()
        },
    )
    .unwrap();
    assert_eq!(db.get(key(1999)).unwrap(), Some(value(1999).into_bytes()));
    db.close().unwrap();
}
