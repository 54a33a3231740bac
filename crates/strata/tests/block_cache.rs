//! The block cache beside compactions: a compaction reads every block of
//! its inputs once and then deletes them, so it must not add those blocks
//! to the cache, where they would push out the blocks foreground reads
//! use (RocksDB's compactions read with `fill_cache = false`).
//!
//! The test keeps a small set of hot keys in a table no compaction
//! touches, warms the cache with them, then has compactions read several
//! times the cache's budget of other keys. The hot reads must still all
//! be hits, and the compactions must have added nothing to the cache. It
//! counts through `Db::metrics`, so no timing is involved.

#![allow(clippy::unwrap_used)] // tests may unwrap

use strata::{Db, Metrics, Options};

const CACHE: usize = 1 << 20;
const HOT: usize = 200;

fn hot_key(i: usize) -> String {
    format!("hot-{i:05}")
}

/// A value that Snappy cannot shrink, so the cold tables are as large as
/// their key and value bytes.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn read_hot(db: &Db) {
    for i in 0..HOT {
        assert_eq!(
            db.get(hot_key(i)).unwrap(),
            Some(noise(i as u64, 1000)),
            "{}",
            hot_key(i)
        );
    }
}

fn figures(m: &Metrics) -> (u64, u64, u64) {
    (
        m.block_cache_hits,
        m.block_cache_misses,
        m.block_cache_inserts,
    )
}

#[test]
fn compactions_leave_the_block_cache_to_foreground_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path().join("db"),
        Options {
            block_cache_bytes: CACHE,
            ..Options::default()
        },
    )
    .unwrap();
    // The hot keys (about 200 KB) in one bottom table, sorted after every
    // cold key so no cold compaction takes their table.
    for i in 0..HOT {
        db.put(hot_key(i), noise(i as u64, 1000)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    read_hot(&db); // warms the cache
    read_hot(&db);
    let warm = db.metrics();
    let (hits0, misses0, inserts0) = figures(&warm);
    assert!(inserts0 > 0, "the hot reads cached their blocks");
    assert_eq!(warm.block_cache_capacity, CACHE as u64);
    assert!(warm.block_cache_usage > 0 && warm.block_cache_usage <= CACHE as u64);

    // Cold keys, overwritten in eight flushes, then compacted together:
    // the compactions read several times the cache's budget.
    for round in 0..8u64 {
        for i in 0..600u64 {
            db.put(format!("cold-{i:05}"), noise(round * 1_000_000 + i, 1000))
                .unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(Some(b"cold-"), Some(b"cold-~")).unwrap();
    db.wait_for_compactions().unwrap();
    let after = db.metrics();
    assert!(
        after.bytes_compacted_read > 3 * CACHE as u64,
        "the compactions read {} bytes, not several times the cache",
        after.bytes_compacted_read
    );
    let (_, _, inserts1) = figures(&after);
    assert_eq!(
        inserts1,
        inserts0,
        "compactions added {} blocks to the block cache",
        inserts1 - inserts0
    );

    // The hot blocks are all still there.
    read_hot(&db);
    let (hits2, misses2, _) = figures(&db.metrics());
    assert_eq!(
        misses2, after.block_cache_misses,
        "hot reads missed after the compactions (hits {} -> {hits2})",
        hits0
    );
    assert!(misses0 > 0 && hits2 > hits0);

    // The cold data reads back, and those reads do fill the cache.
    for i in (0..600u64).step_by(7) {
        assert_eq!(
            db.get(format!("cold-{i:05}")).unwrap(),
            Some(noise(7_000_000 + i, 1000))
        );
    }
    assert!(db.metrics().block_cache_inserts > inserts1);
}
