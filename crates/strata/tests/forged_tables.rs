//! Tables whose damage no block checksum catches, because the damage is in
//! what says how (or whether) blocks are checked, or in a block re-signed
//! with a valid checksum:
//!
//! - a format_version 5 footer is not checksummed itself, and its first
//!   byte says which checksum the blocks carry: one flipped bit turns
//!   crc32c (1) into none (0), after which no block is verified. A
//!   database refuses such a table (reading it, and ingesting it) unless
//!   its own options write unchecksummed tables; `strata::check` reports it.
//!   So does every other reader of the database's tables: the open's redo
//!   of an ingestion from its WAL marker, its audit of tables no MANIFEST
//!   record names, and repair's salvage of such tables;
//! - an index entry whose separator does not bound its data block (a
//!   re-signed index block) makes `get` miss a key a scan finds: ingestion
//!   and `strata::check` (through `Table::verify`) refuse it;
//! - a flipped byte in a format_version 5 footer's zero padding, which no
//!   field reads: every reader refuses it (the footer's bytes must be what
//!   its fields encode to).

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
    // The database's refusal names the option a user would change.
    let who = if who == "the database" {
        "the database (opened with Options::sst.checksum other than none; tables written \
         with ChecksumType::None are read with it set to none) requires one"
            .to_string()
    } else {
        format!("{who} requires one")
    };
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

/// Flips bit 4 of byte `i` of the footer of `path` (format_version 5:
/// checksum byte, two handles, zero padding to byte 41, version, magic)
/// and returns that byte's file offset.
fn flip_footer_byte(path: &Path, i: usize) -> u64 {
    let mut b = std::fs::read(path).unwrap();
    let at = b.len() - FOOTER_SIZE + i;
    b[at] ^= 0x10;
    std::fs::write(path, b).unwrap();
    at as u64
}

/// A format_version 5 footer carries no checksum of its own, and the
/// zero padding after its block handles is read by nobody: a flipped
/// byte there was ingested (`strata ingest` printed success) while
/// `check` then reported the database's copy as damaged. The footer's
/// decoder now requires its bytes to be exactly what its fields encode
/// to, so every reader refuses the same file: ingestion (before anything
/// is linked), the database's reads of a live table, and `check`.
#[test]
fn a_flipped_footer_padding_byte_is_refused_by_every_reader() {
    let t = tempfile::tempdir().unwrap();
    // Ingestion, for the padding's first, a middle and its last byte.
    let db = Db::open(t.path().join("db"), options(ChecksumType::Crc32c)).unwrap();
    for i in [30, 35, 40] {
        let p = t.path().join(format!("pad{i}.sst"));
        let mut w = SstWriter::create(&p, SstOptions::for_ingestion()).unwrap();
        for k in 0..100 {
            w.put(key(k), value(k)).unwrap();
        }
        w.finish().unwrap();
        let at = flip_footer_byte(&p, i);
        let e = db.ingest(&[&p], &IngestOptions::default()).unwrap_err();
        assert_corruption(&e, &p, at, &["footer byte differs"]);
        assert!(p.exists(), "the refused file was moved");
    }
    // A flipped version byte (5 becomes 21) cannot be told from a newer
    // format: refused as not supported, naming the file and the offset.
    let p = t.path().join("version.sst");
    let mut w = SstWriter::create(&p, SstOptions::for_ingestion()).unwrap();
    w.put(key(1), value(1)).unwrap();
    w.finish().unwrap();
    let at = flip_footer_byte(&p, 41);
    let e = db.ingest(&[&p], &IngestOptions::default()).unwrap_err();
    assert!(
        matches!(e, Error::NotSupported(_))
            && e.to_string().contains("format_version 21")
            && e.to_string().contains(&format!("at offset {at}")),
        "{e}"
    );
    assert_eq!(db.iter().count(), 0);
    db.close().unwrap();

    // A live table: reads fail naming it, and check reports it.
    let dir = t.path().join("db2");
    let table = one_table_db(&dir, ChecksumType::Crc32c);
    let at = flip_footer_byte(&table, 35);
    match Db::open(&dir, options(ChecksumType::Crc32c)) {
        Ok(db) => {
            let e = db.get(key(3)).unwrap_err();
            assert_corruption(&e, &table, at, &["footer byte differs"]);
            db.close().unwrap();
        }
        Err(e) => assert_corruption(&e, &table, at, &["footer byte differs"]),
    }
    let r = strata::check::check_dir(&dir).unwrap();
    assert!(
        r.problems
            .iter()
            .any(|p| p.offset == at && p.what.contains("footer byte differs")),
        "{r:?}"
    );
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

/// The MANIFEST `CURRENT` names in `dir`.
fn manifest(dir: &Path) -> PathBuf {
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    dir.join(current.trim())
}

/// Cuts the last record off the MANIFEST of `dir` (as a power cut before
/// its sync leaves it).
fn cut_last_manifest_record(dir: &Path) {
    use strata::vfs::{OsVfs, Vfs};
    use strata::wal::{LogReader, TailPolicy};
    let path = manifest(dir);
    let file = OsVfs.open_sequential(&path).unwrap();
    let mut r = LogReader::new(file, "manifest", TailPolicy::Strict);
    let mut last = None;
    while r.read_record().unwrap().is_some() {
        last = Some(r.last_record_offset());
    }
    let b = std::fs::read(&path).unwrap();
    std::fs::write(&path, &b[..last.unwrap() as usize]).unwrap();
}

/// An ingestion whose MANIFEST record is lost is redone from its WAL
/// marker only if its file opens under the database's checksum rule. With
/// the file's footer flipped to "none" the open (read-write and read-only)
/// used to redo it, and then every read of the file failed in the table
/// cache; now the open refuses naming the marker's WAL, and repair reports
/// the ingestion lost instead of redoing it. A database that writes
/// unchecksummed tables still redoes it (the rule's exception).
#[test]
fn an_ingestion_redone_from_its_marker_is_refused_without_checksums() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let db = Db::open(&dir, options(ChecksumType::Crc32c)).unwrap();
    for i in 0..100 {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    let before = tables(&dir);
    let src = t.path().join("src.sst");
    let mut w = SstWriter::create(&src, SstOptions::for_ingestion()).unwrap();
    for i in 0..100 {
        w.put(format!("zz{i:03}"), "ingested").unwrap();
    }
    w.finish().unwrap();
    let io = IngestOptions {
        small_file_bytes: 0,
        ..IngestOptions::default()
    };
    db.ingest(&[&src], &io).unwrap();
    db.close().unwrap();
    let ingested: Vec<PathBuf> = tables(&dir)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert_eq!(ingested.len(), 1, "{ingested:?}");
    cut_last_manifest_record(&dir);
    flip_checksum_type_to_none(&ingested[0]);

    // The rule's exception first (read-only: it changes nothing).
    let db = Db::open_read_only(&dir, options(ChecksumType::None)).unwrap();
    assert_eq!(db.get("zz042").unwrap(), Some(b"ingested".to_vec()));
    db.close().unwrap();

    let ro = Db::open_read_only(&dir, options(ChecksumType::Crc32c));
    let rw = Db::open(&dir, options(ChecksumType::Crc32c));
    for (how, r) in [("read-only", ro), ("read-write", rw)] {
        let e = r
            .err()
            .unwrap_or_else(|| panic!("{how}: redid an ingestion from an unverifiable file"));
        match &e {
            Error::Corruption { file, msg, .. } => {
                assert!(file.ends_with(".log"), "{how}: {e}");
                assert!(
                    msg.contains("cannot be redone")
                        && msg.contains("the footer declares no checksum")
                        && msg.contains("the database (opened with Options::sst.checksum"),
                    "{how}: {e}"
                );
            }
            e => panic!("{how}: not corruption: {e}"),
        }
    }

    let r = Db::repair(&dir, options(ChecksumType::Crc32c)).unwrap();
    assert!(
        !r.recovered.iter().any(|l| l.contains("redone")),
        "repair redid it: {r:?}"
    );
    assert!(
        r.lost
            .iter()
            .any(|l| l.contains("cannot be redone") && l.contains("declares no checksum")),
        "{r:?}"
    );
    let db = Db::open(&dir, options(ChecksumType::Crc32c)).unwrap();
    assert_eq!(db.get(key(7)).unwrap(), Some(value(7).into_bytes()));
    assert_eq!(db.get("zz042").unwrap(), None);
    db.close().unwrap();
}

/// A table no MANIFEST record names whose entries are all accounted for is
/// redundant and deleted, but only if it opens under the database's
/// checksum rule. A copy of the live table under a free number, its footer
/// flipped to "none", used to be judged redundant on unverified bytes and
/// unlinked; now the open cannot prove it redundant and moves it to
/// `lost/`, saying why.
#[test]
fn the_audit_of_unreferenced_tables_sets_aside_a_table_without_checksums() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let live = one_table_db(&dir, ChecksumType::Crc32c);
    let number = |p: &Path| -> Option<u64> { p.file_stem()?.to_str()?.parse().ok() };
    let used: Vec<u64> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| number(&e.unwrap().path()))
        .collect();
    let n = number(&live).unwrap();
    // A number below the live table's (so below the MANIFEST's next file
    // number) that no file holds: a WAL's, deleted after the flush.
    let free = (2..n)
        .find(|m| !used.contains(m))
        .unwrap_or_else(|| panic!("no free number below {n}: {used:?}"));
    let copy = dir.join(format!("{free:06}.sst"));
    std::fs::copy(&live, &copy).unwrap();
    flip_checksum_type_to_none(&copy);

    let db = Db::open(&dir, options(ChecksumType::Crc32c)).unwrap();
    assert_eq!(db.get(key(7)).unwrap(), Some(value(7).into_bytes()));
    db.close().unwrap();
    let aside = dir.join("lost").join(copy.file_name().unwrap());
    assert!(
        aside.exists(),
        "an unverifiable unreferenced table was judged redundant and deleted"
    );
    assert!(!copy.exists());
    let log = std::fs::read_to_string(dir.join("lost").join("LOG")).unwrap();
    assert!(
        log.contains(&format!("{free:06}.sst")) && log.contains("the footer declares no checksum"),
        "{log}"
    );
}

/// Repair puts a table no MANIFEST record names back in L0 when it holds
/// data nothing else accounts for (a flush whose edit was lost), but only
/// if it opens under the database's checksum rule. With its footer
/// flipped to "none" it used to be put back, and every read of its keys
/// then failed in the table cache; now the open that ends the repair moves
/// it to `lost/` (the report names the table and why, and counts what it
/// held as lost), leaving a database that reads.
#[test]
fn repair_does_not_put_back_a_table_without_checksums() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("db");
    let table = one_table_db(&dir, ChecksumType::Crc32c);
    // The flush's edit (the MANIFEST's last record) is lost: the table is
    // named by nothing, and its WAL was deleted after the flush.
    cut_last_manifest_record(&dir);
    assert!(Db::open_read_only(&dir, options(ChecksumType::Crc32c)).is_err());
    flip_checksum_type_to_none(&table);

    let r = Db::repair(&dir, options(ChecksumType::Crc32c)).unwrap();
    let name = table.file_name().unwrap().to_str().unwrap();
    assert!(
        !r.recovered.iter().any(|l| l.contains("put back in L0")),
        "repair put back an unverifiable table: {r:?}"
    );
    assert!(
        r.recovered.iter().any(|l| l.starts_with("moved to lost/")
            && l.contains(name)
            && l.contains("the footer declares no checksum")),
        "{r:?}"
    );
    assert!(dir.join("lost").join(name).exists(), "{r:?}");
    // Its keys are gone from the database, so the report must not say
    // that nothing was lost (it used to: the table was only "moved").
    assert!(!r.lost_nothing(), "{r:?}");
    assert!(
        r.lost
            .iter()
            .any(|l| l.starts_with(name) && l.contains("cannot be read")),
        "{r:?}"
    );
    let db = Db::open(&dir, options(ChecksumType::Crc32c)).unwrap();
    assert_eq!(db.get(key(7)).unwrap(), None);
    assert_eq!(db.iter().count(), 0);
    db.close().unwrap();
}
