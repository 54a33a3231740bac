//! SSTs in RocksDB's newer table formats (format_version 6 and 7, what
//! current RocksDB, RocksJava and rocksdict write), from rocksdict 0.3.29's
//! SstFileWriter (committed fixtures `rocksdict-*.sst`, made by
//! `tools/rocksdict/make_fixtures.py`; see fixtures/rocksdb/README.md):
//! every entry reads back as the `.input` says, a database ingests them,
//! and every damaged byte of the new footer (checksummed, with the extended
//! magic and the implied metaindex handle) is an error, never a panic or a
//! wrong answer. Re-signing the footer with another base context checksum
//! makes every block fail: block checksums depend on it.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use strata::iter::InternalIterator;
use strata::key::{ParsedKey, ValueKind};
use strata::sstable::format::{Footer, FOOTER_SIZE};
use strata::sstable::{Table, TableOptions};
use strata::vfs::{self, MemVfs};
use strata::{Db, Error, IngestOptions, Options};

#[path = "support/fixtures.rs"]
mod fixtures;
use fixtures::{dir, Line};

const NAMES: &[(&str, u32)] = &[
    ("rocksdict-fv6", 6),
    ("rocksdict-fv7", 7),
    ("rocksdict-fv6-crc32c-zstd", 6),
    ("rocksdict-fv7-lz4", 7),
];

/// `(key, Some(value))` for a put, `(key, None)` for a deletion.
type Entry = (Vec<u8>, Option<Vec<u8>>);

/// The fixture's input as entries (these fixtures hold no range deletions).
fn input(name: &str) -> Vec<Entry> {
    fixtures::input(name)
        .into_iter()
        .map(|l| match l {
            Line::Put(k, v) => (k, Some(v)),
            Line::Del(k) => (k, None),
            Line::Range(..) => panic!("{name}.input: unexpected range line"),
        })
        .collect()
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(format!("{name}.sst"))).unwrap()
}

/// Opens `data` as a table and reads every entry.
fn read_all(data: &[u8]) -> Result<Vec<Entry>, Error> {
    let fs = MemVfs::new();
    let p = Path::new("/t.sst");
    vfs::write_all(&fs, p, data).unwrap();
    let t = Table::open_in(&fs, p, TableOptions::default())?;
    t.verify()?;
    let mut it = t.iter();
    it.seek_to_first();
    let mut got = Vec::new();
    while it.valid() {
        let k = ParsedKey::parse(it.key()).unwrap();
        got.push(match k.value_kind() {
            Some(ValueKind::Value) => (k.user_key.to_vec(), Some(it.value().to_vec())),
            Some(ValueKind::Deletion) => (k.user_key.to_vec(), None),
            other => panic!("unexpected kind {other:?}"),
        });
        it.next();
    }
    it.status()?;
    Ok(got)
}

#[test]
fn reads_every_entry_of_format_6_and_7() {
    for &(name, version) in NAMES {
        let data = bytes(name);
        let footer = Footer::decode(
            &data[data.len() - FOOTER_SIZE..],
            name,
            (data.len() - FOOTER_SIZE) as u64,
        )
        .unwrap();
        assert_eq!(footer.format_version, version, "{name}");
        assert_ne!(footer.base_context_checksum, 0, "{name}");
        assert_eq!(read_all(&data).unwrap(), input(name), "{name}");
        // Point reads find every put and deletion.
        let t =
            Table::open_path(&dir().join(format!("{name}.sst")), TableOptions::default()).unwrap();
        assert!(
            t.footer().index.size > 0,
            "{name}: index handle from the metaindex"
        );
        for (k, v) in input(name) {
            let f = t.get(&k, u64::MAX).unwrap().unwrap();
            match v {
                Some(v) => assert_eq!((f.kind, f.value), (ValueKind::Value, v), "{name}"),
                None => assert_eq!(f.kind, ValueKind::Deletion, "{name}"),
            }
        }
    }
}

#[test]
fn a_database_ingests_format_6_and_7_files() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path().join("db"), Options::default()).unwrap();
    let opts = IngestOptions {
        move_files: false,
        small_file_bytes: 0,
        ..IngestOptions::default()
    };
    for &(name, _) in NAMES {
        // Each file on its own (they share keys); the last one wins.
        db.ingest(&[dir().join(format!("{name}.sst"))], &opts)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for (k, v) in input(name) {
            assert_eq!(db.get(&k).unwrap(), v, "{name}");
        }
    }
}

/// Every single-bit flip in the 53-byte footer is refused: as corruption
/// (at an offset inside the footer) or, for a version number above 7, as
/// not supported. Never a panic, never a successful open.
#[test]
fn every_damaged_footer_byte_is_an_error() {
    for &(name, _) in NAMES {
        let good = bytes(name);
        let at = good.len() - FOOTER_SIZE;
        for i in at..good.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = good.clone();
                bad[i] ^= bit;
                match read_all(&bad) {
                    Ok(_) => panic!("{name}: flipping bit {bit:#x} of byte {i} went unnoticed"),
                    Err(Error::Corruption { offset, .. }) => assert!(
                        offset as usize >= at || offset == 0,
                        "{name}: byte {i}: corruption reported at {offset}, before the footer"
                    ),
                    Err(Error::NotSupported(m)) => assert!(
                        (good.len() - 12..good.len() - 8).contains(&i)
                            || (at + 33..at + 41).contains(&i)
                            || i == at,
                        "{name}: byte {i}: unexpected NotSupported: {m}"
                    ),
                    Err(e) => panic!("{name}: byte {i}: unexpected error {e}"),
                }
            }
        }
    }
}

/// A footer re-signed (valid checksum) with another base context checksum:
/// the footer decodes, but every block's checksum fails, because block
/// checksums carry the context modifier of the file's base.
#[test]
fn block_checksums_depend_on_the_base_context() {
    let good = bytes("rocksdict-fv6");
    let at = good.len() - FOOTER_SIZE;
    let mut f = Footer::decode(&good[at..], "x", at as u64).unwrap();
    // The same footer re-encodes to the same bytes.
    assert_eq!(f.encode_at(at as u64), &good[at..]);
    f.base_context_checksum ^= 0x5a5a_0001;
    let mut bad = good.clone();
    bad[at..].copy_from_slice(&f.encode_at(at as u64));
    let e = read_all(&bad).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
    // A footer signed for another offset (a file truncated or padded in
    // front) fails its own check.
    let f = Footer::decode(&good[at..], "x", at as u64).unwrap();
    let moved = f.encode_at(at as u64 + 8);
    let e = Footer::decode(&moved, "x", at as u64).unwrap_err();
    assert!(
        e.is_corruption() && e.to_string().contains("footer checksum"),
        "{e}"
    );
}

/// The implied metaindex handle: a size reaching before the file start is
/// corruption at the size field, and a wrong but in-range size is caught by
/// the metaindex block's checksum.
#[test]
fn metaindex_size_is_checked() {
    let good = bytes("rocksdict-fv7");
    let at = good.len() - FOOTER_SIZE;
    let f = Footer::decode(&good[at..], "x", at as u64).unwrap();
    for size in [
        u32::MAX as u64,
        at as u64,
        f.metaindex.size + 1,
        f.metaindex.size - 1,
    ] {
        let mut g = f;
        g.metaindex.size = size;
        let mut bad = good.clone();
        bad[at..].copy_from_slice(&g.encode_at(at as u64));
        let e = read_all(&bad).unwrap_err();
        assert!(e.is_corruption(), "size {size}: {e}");
    }
}
