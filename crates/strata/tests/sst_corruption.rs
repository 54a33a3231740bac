//! Damaged tables: every flipped byte or truncation gives a clear error
//! naming the file and offset, or (for bytes no reader depends on, and for
//! the filter) the right answer. Never a panic, never a wrong answer.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use strata::iter::InternalIterator;
use strata::key::ParsedKey;
use strata::sstable::filter::BUILTIN_BLOOM_META_NAME;
use strata::sstable::format::{BlockHandle, Footer, FOOTER_SIZE};
use strata::sstable::{SstOptions, SstWriter, Table, TableOptions};
use strata::vfs::{self, MemVfs, Vfs};
use strata::Error;

#[path = "support/fixtures.rs"]
mod fixtures;

const N: usize = 3000;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn key(i: usize) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    format!("value-{i}-").repeat(1 + i % 5).into_bytes()
}

fn build() -> (MemVfs, Vec<u8>) {
    let vfs = MemVfs::new();
    let opts = SstOptions {
        block_size: 1024,
        ..SstOptions::for_ingestion()
    };
    let mut w = SstWriter::create_in(&vfs, Path::new("/good.sst"), opts).unwrap();
    for i in 0..N {
        w.put(key(i), value(i)).unwrap();
    }
    w.finish().unwrap();
    let bytes = vfs::read_all(&vfs, Path::new("/good.sst")).unwrap();
    (vfs, bytes)
}

/// The metaindex handle of `name`.
fn meta_handle(bytes: &[u8], name: &str) -> BlockHandle {
    let vfs = MemVfs::new();
    vfs::write_all(&vfs, Path::new("/m"), bytes).unwrap();
    let f = vfs.open_random(Path::new("/m")).unwrap();
    fixtures::meta_handle(f.as_ref(), name)
}

fn footer_of(bytes: &[u8]) -> Footer {
    Footer::decode(&bytes[bytes.len() - FOOTER_SIZE..], "x", 0).unwrap()
}

/// Opens `bytes` as a table and reads it all: Ok(entries) or the first error.
fn read_everything(bytes: &[u8]) -> Result<Entries, Error> {
    let vfs = MemVfs::new();
    let path = Path::new("/bad.sst");
    vfs::write_all(&vfs, path, bytes).unwrap();
    let t = Table::open_in(&vfs, path, TableOptions::default())?;
    let mut it = t.iter();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        let p = ParsedKey::parse(it.key()).unwrap();
        out.push((p.user_key.to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    for i in (0..N).step_by(97) {
        match t.get(&key(i), u64::MAX)? {
            Some(f) if f.value == value(i) => {}
            other => panic!("wrong answer for key {i} from a table that opened: {other:?}"),
        }
    }
    Ok(out)
}

fn expected() -> Entries {
    (0..N).map(|i| (key(i), value(i))).collect()
}

fn assert_corruption_at(e: &Error, offset: u64) {
    match e {
        Error::Corruption {
            file,
            offset: o,
            msg,
        } => {
            assert_eq!(file, "/bad.sst");
            assert_eq!(*o, offset, "offset of {msg}");
        }
        other => panic!("expected corruption, got {other}"),
    }
}

#[test]
fn flipped_byte_in_a_data_block() {
    let (_vfs, good) = build();
    let mut bad = good.clone();
    bad[100] ^= 0x40; // inside the first data block (offset 0)
    let e = read_everything(&bad).unwrap_err();
    assert_corruption_at(&e, 0);
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
    assert!(e.to_string().contains("/bad.sst"), "{e}");
}

#[test]
fn flipped_byte_in_the_index_block() {
    let (_vfs, good) = build();
    let idx = footer_of(&good).index;
    let mut bad = good.clone();
    bad[idx.offset as usize + 10] ^= 1;
    let e = read_everything(&bad).unwrap_err();
    assert_corruption_at(&e, idx.offset);
}

#[test]
fn damaged_footer() {
    let (_vfs, good) = build();
    let n = good.len();
    let mut bad = good.clone();
    bad[n - 1] ^= 0xff; // magic
    let e = read_everything(&bad).unwrap_err();
    assert!(e.to_string().contains("bad magic"), "{e}");
    let mut bad = good.clone();
    bad[n - FOOTER_SIZE] = 9; // checksum type
    let e = read_everything(&bad).unwrap_err();
    assert!(e.to_string().contains("checksum type"), "{e}");
    let mut bad = good.clone();
    bad[n - FOOTER_SIZE + 1] ^= 0x7f; // metaindex offset
    assert!(read_everything(&bad).unwrap_err().is_corruption());
}

#[test]
fn damaged_filter_is_ignored_and_answers_stay_right() {
    let (_vfs, good) = build();
    let h = meta_handle(&good, BUILTIN_BLOOM_META_NAME);
    let mut bad = good.clone();
    bad[h.offset as usize + 3] ^= 0x10;
    assert_eq!(read_everything(&bad).unwrap(), expected());
    let vfs = MemVfs::new();
    vfs::write_all(&vfs, Path::new("/bad.sst"), &bad).unwrap();
    let t = Table::open_in(&vfs, Path::new("/bad.sst"), TableOptions::default()).unwrap();
    assert!(!t.has_filter());
    let (at, why) = t.filter_error().unwrap();
    assert_eq!(at, h.offset, "the damaged block's own offset");
    assert!(why.contains("checksum mismatch"), "{why}");
    assert!(
        t.verify().unwrap_err().is_corruption(),
        "verify reports the damaged filter"
    );
}

#[test]
fn truncated_files_are_corrupt() {
    let (_vfs, good) = build();
    for cut in (0..good.len()).step_by(good.len() / 200) {
        match read_everything(&good[..cut]) {
            Err(e) => assert!(e.is_corruption(), "cut at {cut}: {e}"),
            Ok(_) => panic!("table truncated to {cut} bytes opened"),
        }
    }
}

#[test]
fn every_single_byte_flip_is_an_error_or_harmless() {
    let (_vfs, good) = build();
    let want = expected();
    let mut errors = 0;
    // Every byte of the tail (meta blocks, footer) and a sample of the rest.
    let tail = footer_of(&good).index.offset as usize;
    let positions: Vec<usize> = (0..tail).step_by(37).chain(tail..good.len()).collect();
    for pos in positions {
        let mut bad = good.clone();
        bad[pos] ^= 0x01;
        match read_everything(&bad) {
            Ok(got) => assert_eq!(got, want, "flip at {pos} changed the contents"),
            Err(e) => {
                assert!(
                    e.is_corruption() || matches!(e, Error::NotSupported(_)),
                    "flip at {pos}: {e}"
                );
                errors += 1;
            }
        }
    }
    assert!(errors > 0);
}
