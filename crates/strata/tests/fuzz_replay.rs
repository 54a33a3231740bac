//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) through the
//! fuzz targets' bodies (`fuzz/src/targets.rs`) in an ordinary `cargo test`,
//! then runs each target on seeded mutations of every corpus input (bit
//! flips, byte overwrites, truncations, insertions, splices): a stable-Rust
//! stand-in for cargo-fuzz, so CI needs no nightly toolchain.
//!
//! `STRATA_FUZZ_ITERS=n` sets the mutations per input (default 1000).
//! `STRATA_FUZZ_WRITE_SEEDS=1` rewrites the seed inputs (`seed-*` files)
//! from the current writers. A panicking input is saved under
//! `target/fuzz-failures/` and named in the failure.
#![allow(clippy::unwrap_used)] // tests may unwrap

#[path = "../../../fuzz/src/targets.rs"]
mod targets;

#[path = "../../../fuzz/src/mutate.rs"]
mod mutate;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;
use replay::{corpus_dir, iters_from_env, replay, Replay};
use std::path::Path;

use strata::key::{make_internal_key, ValueKind};
use strata::sstable::block_builder::BlockBuilder;
use strata::sstable::{CompressionType, SstOptions, SstWriter};
use strata::util::checksum::ChecksumType;
use strata::version::{FileMeta, VersionEdit};
use strata::vfs::{MemVfs, Vfs};
use strata::wal::LogWriter;
use strata::WriteBatch;

#[test]
fn corpora_and_mutations_never_panic() {
    if std::env::var_os("STRATA_FUZZ_WRITE_SEEDS").is_some() {
        write_seeds();
    }
    let cfg = Replay {
        iters: iters_from_env(1000),
        seed: 0x5eed,
        max_random_len: 512,
        min_seeds: 1,
    };
    let summary: Vec<String> = targets::TARGETS
        .iter()
        .map(|(name, f)| replay(name, *f, &cfg))
        .collect();
    eprintln!("fuzz replay: {}", summary.join("; "));
}

/// Writes the seed inputs of every target (run with
/// `STRATA_FUZZ_WRITE_SEEDS=1`; the files are committed).
fn write_seeds() {
    let put = |target: &str, name: &str, data: &[u8]| {
        let d = corpus_dir(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("seed-{name}")), data).unwrap();
    };
    // Tables: default (Snappy, bloom), uncompressed, XXH3, range
    // tombstones, an ingestion file (global sequence number property).
    let vfs = MemVfs::new();
    let variants: Vec<(&str, SstOptions)> = vec![
        ("default", SstOptions::default()),
        (
            "plain",
            SstOptions {
                compression: CompressionType::None,
                bloom_bits_per_key: None,
                block_size: 256,
                ..SstOptions::default()
            },
        ),
        (
            "xxh3",
            SstOptions {
                checksum: ChecksumType::Xxh3,
                block_size: 512,
                ..SstOptions::default()
            },
        ),
    ];
    for (name, o) in variants {
        let p = Path::new("/t.sst");
        let mut w = SstWriter::create_in(&vfs, p, o).unwrap();
        for i in 0..40u32 {
            let k = make_internal_key(
                format!("key{i:03}").as_bytes(),
                100 - u64::from(i),
                ValueKind::Value,
            );
            w.add(&k, format!("value-{i}").as_bytes()).unwrap();
        }
        if name == "plain" {
            w.add_range_tombstone(b"key010", b"key020", 200).unwrap();
        }
        w.finish().unwrap();
        put("sst_reader", name, &strata::vfs::read_all(&vfs, p).unwrap());
    }
    let p = Path::new("/i.sst");
    let mut w = SstWriter::create_in(&vfs, p, SstOptions::for_ingestion()).unwrap();
    for i in 0..20u32 {
        w.put(format!("ing{i:03}").as_bytes(), b"v").unwrap();
    }
    w.delete_range(b"ing100", b"ing200").unwrap();
    w.finish().unwrap();
    put(
        "sst_reader",
        "ingest",
        &strata::vfs::read_all(&vfs, p).unwrap(),
    );

    // Blocks: a data block with internal keys, a bytewise block, an index
    // block with delta-encoded handles.
    let mut b = BlockBuilder::new(4);
    for i in 0..30u32 {
        let k = make_internal_key(format!("k{i:03}").as_bytes(), 7, ValueKind::Value);
        b.add(&k, b"some value");
    }
    put("block", "data", b.finish());
    let mut b = BlockBuilder::new(1);
    for n in ["a", "ab", "abc", "b", "rocksdb.properties"] {
        b.add(n.as_bytes(), &[1, 2, 3]);
    }
    put("block", "bytewise", b.finish());
    let mut b = BlockBuilder::new_value_delta(2);
    let mut off = 0u64;
    for i in 0..10u32 {
        let k = make_internal_key(format!("k{i:03}").as_bytes(), 7, ValueKind::Value);
        let h = strata::sstable::format::BlockHandle {
            offset: off,
            size: 100,
        };
        let mut delta = Vec::new();
        strata::util::coding::put_varint64(&mut delta, 100);
        b.add_handle(&k, &h.encode(), &delta);
        off += 105;
    }
    put("block", "index", b.finish());

    // Logs: a WAL of write batches, a MANIFEST of edits, one record spanning
    // a block boundary.
    let edits = sample_edits();
    let batches = sample_batches();
    let p = Path::new("/w.log");
    let mut w = LogWriter::new(vfs.create(p).unwrap(), "w");
    for b in &batches {
        w.add_record(b.data()).unwrap();
    }
    w.sync().unwrap();
    put(
        "log_reader",
        "wal",
        &strata::vfs::read_all(&vfs, p).unwrap(),
    );
    let p = Path::new("/m.log");
    let mut w = LogWriter::new(vfs.create(p).unwrap(), "m");
    for e in &edits {
        w.add_record(&e.encode()).unwrap();
    }
    w.add_record(&vec![b'x'; 33_000]).unwrap();
    w.sync().unwrap();
    put(
        "log_reader",
        "manifest",
        &strata::vfs::read_all(&vfs, p).unwrap(),
    );

    for (i, e) in edits.iter().enumerate() {
        put("version_edit", &i.to_string(), &e.encode());
    }
    for (i, b) in batches.iter().enumerate() {
        put("write_batch", &i.to_string(), b.data());
    }
}

fn sample_edits() -> Vec<VersionEdit> {
    let f = |n: u64, a: &str, b: &str| FileMeta {
        number: n,
        size: 1000 + n,
        smallest: make_internal_key(a.as_bytes(), 5, ValueKind::Value),
        largest: make_internal_key(b.as_bytes(), 9, ValueKind::Value),
        smallest_seq: 5,
        largest_seq: 9,
        global_seqno: None,
        num_entries: 10,
        num_deletions: 1,
        num_range_deletions: 0,
        backing: None,
    };
    let mut first = VersionEdit {
        comparator: Some("leveldb.BytewiseComparator".into()),
        log_number: Some(3),
        next_file_number: Some(20),
        last_sequence: Some(9),
        ..VersionEdit::default()
    };
    first.add_file(0, f(4, "a", "m"));
    first.add_file(1, f(5, "a", "z"));
    let mut second = VersionEdit {
        flushed_seq: Some(9),
        ingested_seq: Some(12),
        ..VersionEdit::default()
    };
    second.delete_file(1, 5);
    second.add_file(
        1,
        FileMeta {
            backing: Some(5),
            ..f(21, "a", "c")
        },
    );
    second.queued_files.push(FileMeta {
        global_seqno: Some(12),
        ..f(22, "q", "r")
    });
    vec![first, second, VersionEdit::default()]
}

/// `b` with sequence number `seq` in its header (the first 8 bytes, little
/// endian), as the commit pipeline would have stamped it.
fn with_sequence(b: &WriteBatch, seq: u64) -> WriteBatch {
    let mut rep = b.data().to_vec();
    rep[..8].copy_from_slice(&seq.to_le_bytes());
    WriteBatch::from_bytes(rep).unwrap()
}

fn sample_batches() -> Vec<WriteBatch> {
    let mut a = WriteBatch::new();
    a.put(b"apple", b"red").delete(b"banana");
    a.delete_range(b"c", b"d");
    let a = with_sequence(&a, 100);
    let mut b = WriteBatch::new();
    b.put(b"", b"");
    b.put([0xff; 40], [7; 300]);
    let b = with_sequence(&b, 1);
    vec![a, b, WriteBatch::new()]
}
