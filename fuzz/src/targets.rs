//! The fuzz targets' bodies, shared by the cargo-fuzz binaries
//! (`fuzz/fuzz_targets/*.rs`, nightly) and the corpus replay run by an
//! ordinary `cargo test` (`crates/strata/tests/fuzz_replay.rs`), so CI checks
//! every committed input without a nightly toolchain.
//!
//! Each target feeds arbitrary bytes to one decoder of untrusted input.
//! The contract checked: no panic, no hang, no allocation driven by a
//! length field beyond the input's size; errors are `Err` values; and where
//! a decoder accepts its input, the result re-encodes to something that
//! decodes to the same value.

use std::path::Path;
use std::sync::Arc;
use strata::sstable::block::{Block, BlockIter, BlockIterMode};
use strata::sstable::{Table, TableOptions};
use strata::vfs::{MemVfs, Vfs};
use strata::wal::{LogReader, TailPolicy};
use strata::WriteBatch;

/// A target: its name (the cargo-fuzz binary and the corpus directory) and
/// its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target.
pub const TARGETS: [Target; 5] = [
    ("sst_reader", sst_reader),
    ("block", block),
    ("log_reader", log_reader),
    ("version_edit", version_edit),
    ("write_batch", write_batch),
];

/// A whole table file: open (footer, metaindex, properties, index, filter,
/// range tombstones), verify every block, iterate both ways, point lookups.
pub fn sst_reader(data: &[u8]) {
    let vfs = MemVfs::new();
    let path = Path::new("/fuzz.sst");
    if strata::vfs::write_all(&vfs, path, data).is_err() {
        return;
    }
    let Ok(t) = Table::open_in(&vfs, path, TableOptions::default()) else {
        return;
    };
    let _ = t.verify();
    let mut it = t.iter();
    use strata::iter::InternalIterator;
    it.seek_to_first();
    let mut keys = Vec::new();
    while it.valid() && keys.len() < 10_000 {
        keys.push(it.key().to_vec());
        let _ = it.value();
        it.next();
    }
    let _ = it.status();
    it.seek_to_last();
    let mut n = 0;
    while it.valid() && n < 10_000 {
        n += 1;
        it.prev();
    }
    for k in keys.iter().take(50) {
        let uk = strata::key::user_key(k);
        let _ = t.get(uk, u64::MAX >> 8);
        it.seek_ge(uk);
    }
    let _ = t.get(b"", 0);
    let _ = t.range_tombstones();
}

/// One block in each iteration mode: forward, backward, seeks.
pub fn block(data: &[u8]) {
    let Ok(b) = Block::new(data.to_vec()) else {
        return;
    };
    let b = Arc::new(b);
    let index_mode = BlockIterMode {
        value_delta: true,
        ..BlockIterMode::BYTEWISE
    };
    for mode in [BlockIterMode::DATA, BlockIterMode::BYTEWISE, index_mode] {
        let mut it = BlockIter::new(Arc::clone(&b), mode);
        it.seek_to_first();
        let mut keys = Vec::new();
        while it.valid() && keys.len() < 10_000 {
            keys.push(it.key().to_vec());
            let _ = it.value();
            let _ = it.handle();
            it.next();
        }
        let _ = it.error();
        it.seek_to_last();
        let mut n = 0;
        while it.valid() && n < 10_000 {
            n += 1;
            it.prev();
        }
        for k in keys.iter().take(20) {
            it.seek(k);
            it.seek_for_prev(k);
        }
        it.seek(b"");
        it.seek(&[0xff; 16]);
    }
}

/// A log file (WAL or MANIFEST) under both tail policies.
pub fn log_reader(data: &[u8]) {
    let vfs = MemVfs::new();
    let path = Path::new("/fuzz.log");
    if strata::vfs::write_all(&vfs, path, data).is_err() {
        return;
    }
    for policy in [TailPolicy::TolerateTornTail, TailPolicy::Strict] {
        let Ok(f) = vfs.open_sequential(path) else {
            return;
        };
        let mut r = LogReader::new(f, "fuzz.log", policy);
        let mut total = 0usize;
        while let Ok(Some(rec)) = r.read_record() {
            total += rec.len();
            assert!(total <= data.len(), "records hold more bytes than the file");
            let _ = WriteBatch::from_bytes(rec.clone());
            let _ = strata::version::VersionEdit::decode(&rec);
        }
        let _ = r.dropped_tail();
    }
}

/// A MANIFEST record; an accepted one round-trips through `encode`.
pub fn version_edit(data: &[u8]) {
    if let Ok(e) = strata::version::VersionEdit::decode(data) {
        let again =
            strata::version::VersionEdit::decode(&e.encode()).expect("an encoded edit decodes");
        assert_eq!(e, again, "edit changed through encode/decode");
        let _ = strata::version::Version::new().apply(&e, "fuzz");
    }
}

/// A write batch (a WAL record's payload); an accepted one iterates and
/// its operations rebuild the same batch.
pub fn write_batch(data: &[u8]) {
    let Ok(b) = WriteBatch::from_bytes(data.to_vec()) else {
        return;
    };
    let mut rebuilt = WriteBatch::new();
    let mut ok = true;
    let mut n = 0u32;
    for op in b.iter() {
        match op {
            Ok(strata::BatchOp::Put(k, v)) => {
                rebuilt.put(k, v);
            }
            Ok(strata::BatchOp::Delete(k)) => {
                rebuilt.delete(k);
            }
            Ok(strata::BatchOp::DeleteRange(a, e)) => {
                rebuilt.delete_range(a, e);
            }
            Err(_) => {
                ok = false;
                break;
            }
        }
        n += 1;
    }
    // A decoded batch may hold a range whose begin is above its end (the
    // log format allows it, and replay applies it as deleting nothing); the
    // builder refuses one, so such a batch is not rebuilt alike.
    let reversed = b
        .iter()
        .any(|o| matches!(o, Ok(strata::BatchOp::DeleteRange(a, e)) if a > e));
    if ok && n == b.count() && !reversed {
        let ops: Vec<_> = rebuilt.iter().map(|o| format!("{o:?}")).collect();
        let orig: Vec<_> = b.iter().map(|o| format!("{o:?}")).collect();
        assert_eq!(ops, orig, "batch changed when rebuilt from its operations");
    }
}
