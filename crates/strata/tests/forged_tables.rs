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

/// `e` is corruption at `offset` of `file` whose message holds each of
/// `needles`.
fn assert_corruption(e: &Error, file: &Path, offset: u64, needles: &[&str]) {
    match e {
        Error::Corruption {
            file: f,
            offset: o,
            msg,
        } => {
            assert_eq!(Path::new(f), file, "{e}");
            assert_eq!(*o, offset, "{e}");
            for n in needles {
                assert!(msg.contains(n), "{n:?} not in {e}");
            }
        }
        e => panic!("not corruption: {e}"),
    }
}

/// `e` is corruption at `offset` of `file`, saying the footer declares no
/// checksum and that `who` requires one.
fn assert_no_checksum_refusal(e: &Error, file: &Path, offset: u64, who: &str) {
    let who = format!("{who} requires one");
    assert_corruption(e, file, offset, &["the footer declares no checksum", &who]);
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

/// A file for ingestion of keys `key00000..key03999`, in uncompressed
/// blocks of about 1 KiB (its index block holds the separators as user
/// keys, in full: restart interval 1).
fn file_to_ingest(path: &Path) {
    let mut w = SstWriter::create(
        path,
        SstOptions {
            block_size: 1024,
            compression: CompressionType::None,
            ..SstOptions::for_ingestion()
        },
    )
    .unwrap();
    for i in 0..4000 {
        w.put(key(i), value(i)).unwrap();
    }
    w.finish().unwrap();
}

/// Rewrites index entry `entry`'s separator of the table at `path` with
/// `forge` (same length), re-signing the index block as a forger (or a
/// bug that wrote a wrong separator) would: its checksum is valid.
/// Returns the separator as it was and the index block's offset.
fn forge_separator(path: &Path, entry: usize, forge: impl Fn(&mut [u8])) -> (Vec<u8>, u64) {
    use strata::sstable::{Table, TableOptions};
    use strata::util::checksum::block_checksum;
    let t = Table::open_path(path, TableOptions::default()).unwrap();
    let sep = t.index_entries().unwrap().separator(entry).to_vec();
    let h = t.footer().index;
    drop(t);
    let mut b = std::fs::read(path).unwrap();
    let (start, end) = (h.offset as usize, (h.offset + h.size) as usize);
    let hits: Vec<usize> = b[start..end]
        .windows(sep.len())
        .enumerate()
        .filter(|(_, w)| *w == sep.as_slice())
        .map(|(i, _)| start + i)
        .collect();
    assert_eq!(hits.len(), 1, "separator {sep:?} is not once in the index");
    forge(&mut b[hits[0]..hits[0] + sep.len()]);
    let sum = block_checksum(ChecksumType::Crc32c, &b[start..end], b[end]);
    b[end + 1..end + 5].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(path, b).unwrap();
    (sep, h.offset)
}

/// The last byte of a separator one lower (the key before it, for these
/// keys) or one higher.
fn lower(k: &mut [u8]) {
    k[k.len() - 1] -= 1;
}
fn higher(k: &mut [u8]) {
    k[k.len() - 1] += 1;
}

/// `e` is corruption at `offset` of `file`, naming index entry `entry`,
/// the key `key` and what is wrong.
fn assert_index_refusal(e: &Error, file: &Path, offset: u64, entry: usize, key: &str, what: &str) {
    let entry = format!("index entry {entry} ");
    let key = format!("\"{key}\" @ 0");
    assert_corruption(e, file, offset, &[&entry, &key, what]);
}

/// A separator re-signed below its block's last key makes a lookup of that
/// key go to the next block: `get` misses a key a scan finds. Ingestion's
/// walk now refuses it (whether or not it compares block checksums, as
/// files or as a write batch), naming the file, the index block's offset,
/// the entry and the key; so it does a separator raised to the next
/// block's first key.
#[test]
fn ingestion_refuses_an_index_that_does_not_bound_its_blocks() {
    use strata::iter::InternalIterator;
    use strata::sstable::{Table, TableOptions};
    let t = tempfile::tempdir().unwrap();
    let low = t.path().join("low.sst");
    file_to_ingest(&low);
    let entry = 20;
    let (sep, index_at) = forge_separator(&low, entry, lower);
    let missed = String::from_utf8(sep).unwrap();
    // The harm: a scan finds the key, `get` does not.
    let table = Table::open_path(&low, TableOptions::default()).unwrap();
    assert_eq!(table.get(missed.as_bytes(), u64::MAX).unwrap(), None);
    let mut it = table.iter();
    it.seek_to_first();
    let mut found = false;
    while it.valid() {
        found |= strata::key::user_key(it.key()) == missed.as_bytes();
        it.next();
    }
    it.status().unwrap();
    assert!(found, "a scan does not find {missed}");
    drop(table);

    let high = t.path().join("high.sst");
    file_to_ingest(&high);
    let (sep, high_index_at) = forge_separator(&high, entry, higher);
    // The next block's first key: the key after the separator's.
    let mut next = sep;
    higher(&mut next);
    let next = String::from_utf8(next).unwrap();

    let db = Db::open(t.path().join("db"), options(ChecksumType::Crc32c)).unwrap();
    for verify_checksums in [true, false] {
        for small_file_bytes in [0, u64::MAX] {
            let opts = IngestOptions {
                verify_checksums,
                small_file_bytes,
                ..IngestOptions::default()
            };
            let e = db.ingest(&[&low], &opts).unwrap_err();
            assert_index_refusal(&e, &low, index_at, entry, &missed, "is below the last key");
            let e = db.ingest(&[&high], &opts).unwrap_err();
            assert_index_refusal(
                &e,
                &high,
                high_index_at,
                entry,
                &next,
                "is not below the first key",
            );
        }
    }
    assert_eq!(db.iter().count(), 0);
    db.close().unwrap();
}

/// `Table::verify` (what `strata check` and `strata sst verify` run on
/// every table) checks the same rule: a table of the database whose index
/// was re-signed with a separator below its block's last key is a problem
/// naming the table, the index block and the key.
#[test]
fn check_reports_an_index_that_does_not_bound_its_blocks() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("f.sst");
    file_to_ingest(&src);
    let dir = t.path().join("db");
    let db = Db::open(&dir, options(ChecksumType::Crc32c)).unwrap();
    let opts = IngestOptions {
        small_file_bytes: 0,
        ..IngestOptions::default()
    };
    db.ingest(&[&src], &opts).unwrap();
    db.close().unwrap();
    let r = strata::check::check_dir(&dir).unwrap();
    assert!(r.is_ok(), "{r:?}");
    let table = tables(&dir).pop().unwrap();
    let (sep, index_at) = forge_separator(&table, 7, lower);
    let key = String::from_utf8(sep).unwrap();
    let r = strata::check::check_dir(&dir).unwrap();
    let p = r
        .problems
        .iter()
        .find(|p| p.what.contains("index entry 7 "))
        .unwrap_or_else(|| panic!("check passed a forged index: {r:?}"));
    assert_eq!(Path::new(&p.file), table);
    assert_eq!(p.offset, index_at);
    assert!(
        p.what.contains(&format!("\"{key}\" @ ")) && p.what.contains("is below the last key"),
        "{p}"
    );
}
