//! Round-trip tests of the SST writer and reader: random entry sets written
//! with every compression and a range of block sizes, then read back by
//! point lookups and by iterators in both directions, compared with a model.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;
use strata::iter::InternalIterator;
use strata::key::{self, compare_internal, make_internal_key, seek_key, ParsedKey, ValueKind};
use strata::sstable::reader::PointCursor;
use strata::sstable::{CompressionType, SstOptions, SstWriter, Table, TableOptions};
use strata::vfs::{MemVfs, Vfs};

type Entry = (Vec<u8>, Vec<u8>); // (internal key, value)

fn random_user_key(rng: &mut StdRng) -> Vec<u8> {
    let len = match rng.gen_range(0..100) {
        0 => 0,
        1..=70 => rng.gen_range(1..12),
        71..=95 => rng.gen_range(12..64),
        _ => rng.gen_range(64..600),
    };
    // A small alphabet makes shared prefixes (and prefix compression) common.
    (0..len)
        .map(|_| b"abcd\x00\xff"[rng.gen_range(0..6)])
        .collect()
}

fn random_value(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..10) {
        0 => Vec::new(),
        1..=6 => (0..rng.gen_range(1..120))
            .map(|i| b'a' + (i % 7) as u8)
            .collect(),
        7 | 8 => (0..rng.gen_range(1..300)).map(|_| rng.gen()).collect(),
        _ => vec![b'z'; rng.gen_range(1000..9000)],
    }
}

/// Entries sorted by internal key, with several versions of some user keys.
fn random_entries(rng: &mut StdRng, n: usize) -> Vec<Entry> {
    let mut user_keys: Vec<Vec<u8>> = (0..n).map(|_| random_user_key(rng)).collect();
    user_keys.sort();
    user_keys.dedup();
    let mut out = Vec::new();
    for uk in user_keys {
        let versions = if rng.gen_bool(0.2) {
            rng.gen_range(2..40)
        } else {
            1
        };
        let mut seqs: Vec<u64> = (0..versions).map(|_| rng.gen_range(1..1_000_000)).collect();
        seqs.sort_unstable();
        seqs.dedup();
        for &s in seqs.iter().rev() {
            let kind = if rng.gen_bool(0.15) {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let v = if kind == ValueKind::Value {
                random_value(rng)
            } else {
                Vec::new()
            };
            out.push((make_internal_key(&uk, s, kind), v));
        }
    }
    out.sort_by(|a, b| compare_internal(&a.0, &b.0));
    out
}

fn write_table(
    vfs: &MemVfs,
    path: &Path,
    entries: &[Entry],
    opts: SstOptions,
) -> strata::sstable::SstInfo {
    let mut w = SstWriter::create_in(vfs, path, opts).unwrap();
    for (k, v) in entries {
        w.add(k, v).unwrap();
    }
    w.finish().unwrap()
}

fn collect_forward(t: &Arc<Table>) -> Vec<Entry> {
    let mut it = t.iter();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn collect_backward(t: &Arc<Table>) -> Vec<Entry> {
    let mut it = t.iter();
    it.seek_to_last();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    out.reverse();
    out
}

/// Model answer for get(user_key, snapshot).
fn model_get<'a>(entries: &'a [Entry], uk: &[u8], snap: u64) -> Option<&'a Entry> {
    entries.iter().find(|(k, _)| {
        let p = ParsedKey::parse(k).unwrap();
        p.user_key == uk && p.seq <= snap
    })
}

fn check_table(rng: &mut StdRng, entries: &[Entry], t: &Arc<Table>) {
    assert_eq!(collect_forward(t), entries, "forward scan");
    assert_eq!(collect_backward(t), entries, "backward scan");
    // Point lookups: present keys at random snapshots, and absent keys.
    for _ in 0..200 {
        let (uk, snap) = if !entries.is_empty() && rng.gen_bool(0.7) {
            let (k, _) = &entries[rng.gen_range(0..entries.len())];
            let p = ParsedKey::parse(k).unwrap();
            let snap = match rng.gen_range(0..3) {
                0 => p.seq,
                1 => p.seq.saturating_sub(1),
                _ => rng.gen_range(0..2_000_000),
            };
            (p.user_key.to_vec(), snap)
        } else {
            (random_user_key(rng), rng.gen_range(0..2_000_000))
        };
        let got = t.get(&uk, snap).unwrap();
        let want = model_get(entries, &uk, snap);
        match (got, want) {
            (None, None) => {}
            (Some(g), Some((k, v))) => {
                let p = ParsedKey::parse(k).unwrap();
                assert_eq!((g.seq, g.kind as u8, &g.value), (p.seq, p.kind, v));
            }
            (g, w) => panic!("get({uk:?}, {snap}): got {g:?}, want {w:?}"),
        }
    }
    // Many keys through one `PointCursor` (a `multi_get`'s run in one
    // file) at one snapshot: ascending with repeats, where the cursor
    // reuses its index entry and block, and in any order, where a key
    // below the one before must seek afresh.
    for round in 0..20 {
        let snap = rng.gen_range(0..2_000_000);
        let mut keys: Vec<Vec<u8>> = (0..rng.gen_range(1..60))
            .map(|_| {
                if !entries.is_empty() && rng.gen_bool(0.7) {
                    let (k, _) = &entries[rng.gen_range(0..entries.len())];
                    key::user_key(k).to_vec()
                } else {
                    random_user_key(rng)
                }
            })
            .collect();
        if round % 4 != 3 {
            keys.sort();
        }
        let mut cursor = PointCursor::new(t);
        for uk in &keys {
            let got = cursor.get(uk, snap).unwrap();
            let want = model_get(entries, uk, snap);
            match (got, want) {
                (None, None) => {}
                (Some(g), Some((k, v))) => {
                    let p = ParsedKey::parse(k).unwrap();
                    assert_eq!((g.seq, g.kind as u8, &g.value), (p.seq, p.kind, v));
                }
                (g, w) => panic!("cursor get({uk:?}, {snap}): got {g:?}, want {w:?}"),
            }
        }
    }
    // Seeks in both directions.
    let mut it = t.iter();
    for _ in 0..100 {
        let target = seek_key(&random_user_key(rng), rng.gen_range(0..2_000_000));
        it.seek(&target);
        let want = entries
            .iter()
            .position(|(k, _)| compare_internal(k, &target) != Ordering::Less);
        match want {
            Some(i) => assert!(it.valid() && it.key() == entries[i].0.as_slice(), "seek"),
            None => assert!(!it.valid(), "seek past end"),
        }
        it.seek_for_prev(&target);
        let want = entries
            .iter()
            .rposition(|(k, _)| compare_internal(k, &target) != Ordering::Greater);
        match want {
            Some(i) => {
                assert!(
                    it.valid() && it.key() == entries[i].0.as_slice(),
                    "seek_for_prev"
                );
                // And stepping both ways from there agrees with the model.
                it.next();
                match entries.get(i + 1) {
                    Some(e) => assert_eq!(it.key(), e.0.as_slice()),
                    None => assert!(!it.valid()),
                }
            }
            None => assert!(!it.valid(), "seek_for_prev before start"),
        }
    }
    // Bounded iteration.
    for _ in 0..20 {
        let mut a = random_user_key(rng);
        let mut b = random_user_key(rng);
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        let want: Vec<&Entry> = entries
            .iter()
            .filter(|(k, _)| {
                let uk = key::user_key(k);
                uk >= a.as_slice() && uk < b.as_slice()
            })
            .collect();
        let mut it = t.iter_bounded(Some(&a), Some(&b));
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        assert_eq!(
            got.iter().collect::<Vec<_>>(),
            want,
            "bounded forward [{a:?}, {b:?})"
        );
        it.seek_to_last();
        let mut back = Vec::new();
        while it.valid() {
            back.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        back.reverse();
        assert_eq!(back, got, "bounded backward");
    }
}

#[test]
fn random_tables_round_trip_with_every_compression() {
    let vfs = MemVfs::new();
    let mut saw_seq_index = false;
    let mut saw_user_key_index = false;
    for seed in 0..24u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = [0, 1, 5, 50, 400, 3000][seed as usize % 6];
        let entries = random_entries(&mut rng, n);
        for compression in [
            CompressionType::None,
            CompressionType::Snappy,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ] {
            let opts = SstOptions {
                block_size: [64, 256, 1024, 4096][rng.gen_range(0..4)],
                block_restart_interval: [1, 2, 16][rng.gen_range(0..3)],
                compression,
                bloom_bits_per_key: if rng.gen_bool(0.8) { Some(10.0) } else { None },
                ..SstOptions::default()
            };
            let path = Path::new("/t").join(format!("{seed}-{compression:?}.sst"));
            let info = write_table(&vfs, &path, &entries, opts);
            assert_eq!(info.num_entries, entries.len() as u64);
            assert_eq!(info.file_size, vfs.file_size(&path).unwrap());
            if let (Some(f), Some(l)) = (entries.first(), entries.last()) {
                assert_eq!(info.smallest.as_deref(), Some(f.0.as_slice()));
                assert_eq!(info.largest.as_deref(), Some(l.0.as_slice()));
            }
            let t = Table::open_in(&vfs, &path, TableOptions::default()).unwrap();
            if t.properties().num_data_blocks > 1 {
                if t.properties().index_key_is_user_key {
                    saw_user_key_index = true;
                } else {
                    saw_seq_index = true;
                }
            }
            assert_eq!(t.properties().num_entries, entries.len() as u64);
            assert_eq!(t.properties().compression, compression.rocksdb_name());
            check_table(&mut rng, &entries, &t);
            t.verify().unwrap();
        }
    }
    assert!(
        saw_seq_index,
        "some table should need sequence numbers in its index"
    );
    assert!(
        saw_user_key_index,
        "some table should have a user-key index"
    );
}

#[test]
fn block_cache_serves_repeated_reads() {
    let vfs = MemVfs::new();
    let mut rng = StdRng::seed_from_u64(7);
    let entries = random_entries(&mut rng, 2000);
    let path = Path::new("/c.sst");
    write_table(
        &vfs,
        path,
        &entries,
        SstOptions {
            block_size: 512,
            ..SstOptions::default()
        },
    );
    let cache = Arc::new(strata::cache::BlockCache::new(64 << 20));
    let opts = TableOptions {
        cache: Some(cache.clone()),
        ..TableOptions::default()
    };
    let t = Table::open_in(&vfs, path, opts).unwrap();
    assert_eq!(collect_forward(&t), entries);
    let s1 = cache.stats();
    assert!(s1.inserts > 0 && cache.usage() > 0);
    assert_eq!(collect_forward(&t), entries);
    let s2 = cache.stats();
    assert!(s2.hits > s1.hits, "second scan should hit the cache");
    drop(t);
    assert_eq!(cache.len(), 0, "closing a table drops its blocks");
}

#[test]
fn range_tombstones_and_external_files() {
    let vfs = MemVfs::new();
    let path = Path::new("/ext.sst");
    let mut w = SstWriter::create_in(&vfs, path, SstOptions::for_ingestion()).unwrap();
    w.delete_range(b"m", b"p").unwrap();
    w.put(b"a", b"1").unwrap();
    w.delete(b"b").unwrap();
    w.put(b"c", b"3").unwrap();
    w.delete_range(b"d", b"f").unwrap();
    // External files hold each user key once, in order, at sequence 0.
    assert!(w.put(b"c", b"again").is_err());
    assert!(w.put(b"b", b"back").is_err());
    assert!(w.add_entry(b"x", 5, ValueKind::Value, b"").is_err());
    let info = w.finish().unwrap();
    assert_eq!(info.num_entries, 3);
    assert_eq!(info.num_range_deletions, 2);
    assert_eq!(key::user_key(info.smallest.as_ref().unwrap()), b"a");
    assert_eq!(key::user_key(info.largest.as_ref().unwrap()), b"p");
    let p = &info.properties;
    assert_eq!(p.external_version, Some(2));
    assert_eq!(p.global_seqno, Some(0));
    assert_eq!(p.num_entries, 5, "RocksDB counts tombstones as entries");
    assert_eq!(p.num_range_deletions, 2);

    let t = Table::open_in(&vfs, path, TableOptions::default()).unwrap();
    let rt = t.range_tombstones();
    assert_eq!(rt.len(), 2);
    assert_eq!(
        (rt[0].start.as_slice(), rt[0].end.as_slice(), rt[0].seq),
        (&b"d"[..], &b"f"[..], 0)
    );
    assert_eq!(t.get(b"b", 100).unwrap().unwrap().kind, ValueKind::Deletion);

    // Opened as an ingested file, every key carries the global sequence number.
    let opts = TableOptions {
        global_seqno: Some(77),
        ..TableOptions::default()
    };
    let t = Table::open_in(&vfs, path, opts).unwrap();
    assert_eq!(t.get(b"a", 100).unwrap().unwrap().seq, 77);
    assert_eq!(
        t.get(b"a", 76).unwrap(),
        None,
        "invisible below its sequence number"
    );
    assert!(t.range_tombstones().iter().all(|r| r.seq == 77));
    for (k, _) in collect_forward(&t) {
        assert_eq!(ParsedKey::parse(&k).unwrap().seq, 77);
    }
}

#[test]
fn out_of_order_keys_are_rejected_with_the_key() {
    let vfs = MemVfs::new();
    let mut w = SstWriter::create_in(&vfs, Path::new("/o.sst"), SstOptions::default()).unwrap();
    w.add(&make_internal_key(b"b", 5, ValueKind::Value), b"")
        .unwrap();
    let e = w
        .add(&make_internal_key(b"a", 5, ValueKind::Value), b"")
        .unwrap_err();
    assert!(e.to_string().contains("key a added after b"), "{e}");
    // Same user key, newer sequence after older: also out of order.
    let e = w
        .add(&make_internal_key(b"b", 6, ValueKind::Value), b"")
        .unwrap_err();
    assert!(matches!(e, strata::Error::InvalidArgument(_)));
}

#[test]
fn empty_table_is_valid() {
    let vfs = MemVfs::new();
    let path = Path::new("/e.sst");
    let info = SstWriter::create_in(&vfs, path, SstOptions::default())
        .unwrap()
        .finish()
        .unwrap();
    assert!(info.smallest.is_none());
    let t = Table::open_in(&vfs, path, TableOptions::default()).unwrap();
    assert!(collect_forward(&t).is_empty());
    assert_eq!(t.get(b"x", 10).unwrap(), None);
    t.verify().unwrap();
}

/// A table of `n` 100-byte values, random bytes (which never shrink) where
/// `random(i)` holds and otherwise one repeated letter (which shrinks 10x
/// and more), 1 KiB blocks; returns the entries and the table's count of
/// raw data blocks and of compressed ones.
fn mixed_table(
    vfs: &MemVfs,
    name: &str,
    compression: CompressionType,
    n: usize,
    random: impl Fn(usize) -> bool,
) -> (Vec<Entry>, u64, u64) {
    let mut rng = StdRng::seed_from_u64(7);
    let entries: Vec<Entry> = (0..n)
        .map(|i| {
            let v: Vec<u8> = if random(i) {
                (0..100).map(|_| rng.gen()).collect()
            } else {
                vec![b'a' + (i % 26) as u8; 100]
            };
            let k = make_internal_key(format!("k{i:08}").as_bytes(), 0, ValueKind::Value);
            (k, v)
        })
        .collect();
    let path = Path::new("/mixed").join(name);
    let opts = SstOptions {
        block_size: 1024,
        compression,
        ..SstOptions::for_ingestion()
    };
    write_table(vfs, &path, &entries, opts);
    let t = Table::open_in(vfs, &path, TableOptions::default()).unwrap();
    assert_eq!(collect_forward(&t), entries, "{name}");
    let stats = t.verify().unwrap();
    let count = |kind| {
        stats
            .blocks_by_compression
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, n)| *n)
    };
    (entries, count(CompressionType::None), count(compression))
}

/// The writer stops trying to compress data that does not shrink
/// (`compression::AdaptiveSkip`), but compressible data is still stored
/// compressed: every block of it, or after an incompressible stretch all
/// but the few blocks before the next probe.
#[test]
fn adaptive_compression_still_compresses_compressible_data() {
    let vfs = MemVfs::new();
    for compression in [
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ] {
        // About 9 entries a block.
        let (_, raw, compressed) = mixed_table(&vfs, "all", compression, 4000, |_| false);
        assert_eq!(raw, 0, "{compression:?}: compressible blocks stored raw");
        assert!(compressed > 20, "{compression:?}");
        let (_, raw, compressed) = mixed_table(&vfs, "none", compression, 2000, |_| true);
        assert_eq!(compressed, 0, "{compression:?}: random bytes compressed");
        assert!(raw > 100, "{compression:?}: {raw} blocks");
        // 1,800 random entries, then 1,800 compressible ones (about 200
        // blocks each): after the next probe, every block of them is
        // compressed again.
        let (_, raw, compressed) = mixed_table(&vfs, "then", compression, 3600, |i| i < 1800);
        let (_, raw_random, _) = mixed_table(&vfs, "head", compression, 1800, |_| true);
        assert!(
            raw <= raw_random + u64::from(strata::sstable::PROBE_EVERY),
            "{compression:?}: {raw} raw blocks, {raw_random} for the random part alone"
        );
        assert!(
            compressed >= 150,
            "{compression:?}: {compressed} compressed"
        );
        // Random stretches of about 5 blocks (fewer than SKIP_AFTER)
        // between compressible ones of about 4: every block is still
        // tried, so at least the 3 wholly compressible blocks of each of
        // the 50 compressible stretches are stored compressed.
        const { assert!(strata::sstable::SKIP_AFTER > 6) };
        let (_, raw, compressed) = mixed_table(&vfs, "alternating", compression, 4000, |i| {
            (i / 40) % 2 == 0
        });
        assert!(raw >= 150, "{compression:?}: {raw} raw blocks");
        assert!(
            compressed >= 150,
            "{compression:?}: {compressed} compressed"
        );
    }
}
