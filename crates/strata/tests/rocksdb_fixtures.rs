//! SSTs written by RocksDB 7.8's SstFileWriter (committed fixtures, see
//! fixtures/rocksdb/README.md) read by Strata: every key, value, deletion and
//! range tombstone as the generator's input says, with every compression and
//! both checksum types; and Strata's bloom filter, built by its own writer
//! from the same keys, is byte-identical to RocksDB's.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::sync::Arc;
use strata::iter::InternalIterator;
use strata::key::{ParsedKey, ValueKind};
use strata::sstable::filter::BUILTIN_BLOOM_META_NAME;
use strata::sstable::format::{read_block, Footer};
use strata::sstable::{FixedPrefix, SstOptions, SstWriter, Table, TableOptions};
use strata::vfs::{OsVfs, Vfs};

#[path = "support/fixtures.rs"]
mod fixtures;
use fixtures::{dir, input, meta_handle, Line};

const NAMES: &[&str] = &[
    "none",
    "none-bloom",
    "snappy",
    "snappy-bloom",
    "lz4",
    "lz4-bloom",
    "zstd",
    "zstd-bloom",
    "checksum-xxh3",
    "checksum-crc32c",
    "tombstones",
    "prefix",
];

#[test]
fn strata_reads_every_rocksdb_fixture() {
    for name in NAMES {
        let lines = input(name);
        let opts = TableOptions {
            prefix_extractor: (*name == "prefix").then(|| Arc::new(FixedPrefix(4)) as _),
            ..TableOptions::default()
        };
        let t = Table::open_path(&dir().join(format!("{name}.sst")), opts).unwrap();
        t.verify().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            t.has_filter(),
            name.contains("bloom") || *name == "prefix",
            "{name}"
        );
        // Point entries in order, then range tombstones.
        let mut it = t.iter();
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            let p = ParsedKey::parse(it.key()).unwrap();
            assert_eq!(p.seq, 0, "{name}");
            got.push(match p.value_kind() {
                Some(ValueKind::Value) => Line::Put(p.user_key.to_vec(), it.value().to_vec()),
                Some(ValueKind::Deletion) => Line::Del(p.user_key.to_vec()),
                k => panic!("{name}: unexpected kind {k:?}"),
            });
            it.next();
        }
        it.status().unwrap();
        for r in t.range_tombstones() {
            got.push(Line::Range(r.start.clone(), r.end.clone()));
        }
        assert_eq!(got, lines, "{name}");
        // Point lookups (through the filter, when there is one).
        for l in &lines {
            match l {
                Line::Put(k, v) => {
                    assert!(t.may_contain(k), "{name}: filter rejects a present key");
                    let f = t.get(k, u64::MAX).unwrap().unwrap();
                    assert_eq!((&f.value, f.kind), (v, ValueKind::Value), "{name}");
                }
                Line::Del(k) => {
                    assert_eq!(
                        t.get(k, u64::MAX).unwrap().unwrap().kind,
                        ValueKind::Deletion
                    )
                }
                Line::Range(..) => {}
            }
        }
        if *name == "prefix" {
            for l in &lines {
                if let Line::Put(k, _) = l {
                    if k.len() >= 4 {
                        assert!(
                            t.may_contain_prefix(&k[..4]),
                            "prefix filter rejects a present prefix"
                        );
                    }
                }
            }
            let absent = (0..2000u32)
                .filter(|i| t.may_contain_prefix(&(0xA000_0000u32 + i * 7919).to_be_bytes()))
                .count();
            assert!(
                absent < 200,
                "prefix filter passes {absent} of 2000 absent prefixes"
            );
        }
    }
}

fn filter_block(path: &Path) -> Vec<u8> {
    let f = OsVfs.open_random(path).unwrap();
    let footer = Footer::read(f.as_ref()).unwrap();
    let h = meta_handle(f.as_ref(), BUILTIN_BLOOM_META_NAME);
    read_block(f.as_ref(), h, footer.block_checksum(), true, u64::MAX)
        .unwrap()
        .data
}

#[test]
fn strata_writes_the_same_filter_and_entries_as_rocksdb() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, prefix) in [("snappy-bloom", None), ("prefix", Some(4))] {
        let out = tmp.path().join(format!("{name}.sst"));
        let opts = SstOptions {
            prefix_extractor: prefix.map(|n| Arc::new(FixedPrefix(n)) as _),
            ..SstOptions::for_ingestion()
        };
        let mut w = SstWriter::create(&out, opts).unwrap();
        for l in input(name) {
            match l {
                Line::Put(k, v) => w.put(&k, &v).unwrap(),
                Line::Del(k) => w.delete(&k).unwrap(),
                Line::Range(a, b) => w.delete_range(&a, &b).unwrap(),
            }
        }
        w.finish().unwrap();
        let theirs = filter_block(&dir().join(format!("{name}.sst")));
        let ours = filter_block(&out);
        assert_eq!(ours.len(), theirs.len(), "{name}: filter size");
        assert!(ours == theirs, "{name}: filter bytes differ from RocksDB's");
    }
}

/// `SstReader` (the public reader of pairs) reads every put-only fixture
/// as its input says, and refuses a well-formed file that holds
/// deletions or range tombstones as `NotSupported`, at open, before
/// yielding anything: RocksDB's `tombstones` fixture and Strata-written
/// files with a delete, with a range tombstone only, and with both. A
/// delete used to be reported as `Corruption` after the puts before it,
/// and a range tombstone was skipped silently.
#[test]
fn sst_reader_refuses_well_formed_deletions_as_not_supported() {
    use strata::sstable::SstReader;
    for name in NAMES {
        let lines = input(name);
        let path = dir().join(format!("{name}.sst"));
        if lines.iter().all(|l| matches!(l, Line::Put(..))) {
            let got: Vec<(Vec<u8>, Vec<u8>)> = SstReader::open(&path)
                .unwrap()
                .collect::<strata::Result<_>>()
                .unwrap();
            let mut want: Vec<(Vec<u8>, Vec<u8>)> = lines
                .into_iter()
                .map(|l| match l {
                    Line::Put(k, v) => (k, v),
                    _ => unreachable!(),
                })
                .collect();
            want.sort();
            assert_eq!(got, want, "{name}");
        } else {
            let e = SstReader::open(&path).unwrap_err();
            assert!(e.is_not_supported(), "{name}: {e}");
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, f: &dyn Fn(&mut SstWriter)| {
        let p = tmp.path().join(name);
        let mut w = SstWriter::create(&p, SstOptions::for_ingestion()).unwrap();
        f(&mut w);
        w.finish().unwrap();
        p
    };
    let cases = [
        write("delete.sst", &|w| {
            w.put("a", "1").unwrap();
            w.delete("b").unwrap();
            w.put("c", "3").unwrap();
        }),
        write("range.sst", &|w| {
            w.delete_range("m", "p").unwrap();
            w.put("a", "1").unwrap();
        }),
        write("both.sst", &|w| {
            w.delete_range("m", "p").unwrap();
            w.delete("b").unwrap();
        }),
    ];
    for p in &cases {
        let e = SstReader::open(p).unwrap_err();
        assert!(
            e.is_not_supported() && !e.is_corruption(),
            "{}: {e}",
            p.display()
        );
        assert!(e.to_string().contains("TableFile::entries"), "{e}");
    }
}
