//! Shared by the tests that read SSTs byte by byte (`rocksdb_fixtures.rs`,
//! `rocksdb_new_formats.rs`, `sst_corruption.rs`): the committed RocksDB
//! fixtures' folder, their `.input` files (what each fixture's generator
//! wrote, one `put KEY VALUE`, `del KEY` or `range START END` line each, in
//! hex), and finding a meta block by name through a table's metaindex.
//!
//! The fixtures are inputs of record (fixtures/rocksdb/README.md says how
//! they were made), so a malformed line is a test failure, not skipped.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::sstable::block::{Block, BlockIter, BlockIterMode};
use strata::sstable::format::{read_block, BlockHandle, Footer};
use strata::util::hex;
use strata::vfs::RandomAccessFile;

/// `tests/fixtures/rocksdb`.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rocksdb")
}

/// One line of a fixture's `.input`.
#[derive(Debug, PartialEq)]
pub enum Line {
    Put(Vec<u8>, Vec<u8>),
    Del(Vec<u8>),
    Range(Vec<u8>, Vec<u8>),
}

/// The lines of `<name>.input`.
pub fn input(name: &str) -> Vec<Line> {
    let path = dir().join(format!("{name}.input"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .enumerate()
        .map(|(n, l)| {
            let f: Vec<&str> = l.split(' ').collect();
            let h = |i: usize| {
                f.get(i)
                    .map(|s| hex::decode(s).unwrap())
                    .unwrap_or_default()
            };
            match f[0] {
                "put" => Line::Put(h(1), h(2)),
                "del" => Line::Del(h(1)),
                "range" => Line::Range(h(1), h(2)),
                other => panic!("{}:{}: bad input line {other}", path.display(), n + 1),
            }
        })
        .collect()
}

/// The handle of meta block `name` in the table `f`, through its footer's
/// metaindex; fails the test if there is none.
pub fn meta_handle(f: &dyn RandomAccessFile, name: &str) -> BlockHandle {
    let footer = Footer::read(f).unwrap();
    let m = read_block(f, footer.metaindex, footer.block_checksum(), true, u64::MAX).unwrap();
    let mut it = BlockIter::new(
        Arc::new(Block::new(m.data).unwrap()),
        BlockIterMode::BYTEWISE,
    );
    it.seek(name.as_bytes());
    assert!(
        it.valid() && it.key() == name.as_bytes(),
        "no meta block {name}"
    );
    it.handle().unwrap()
}
