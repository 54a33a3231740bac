//! The block cache's own costs with 100,000 blocks of other tables cached:
//! dropping one table's blocks (`erase_id`, what every table reader that is
//! dropped does, under each shard's lock in turn), for a table with 16
//! cached blocks and for one with none (a compaction's input, read
//! without filling the cache); and the hot paths that keep the per-table
//! bookkeeping (an insert that evicts, a hit).
//!
//! Run: `cargo bench -p strata --bench cache`.

#![allow(clippy::unwrap_used, missing_docs)] // benchmarks may unwrap; criterion generates undocumented fns

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use rand::{rngs::StdRng, Rng, SeedableRng};
use strata::cache::LruCache;

/// Blocks of other tables in the cache.
const OTHERS: u64 = 100_000;
/// Cached blocks per other table.
const PER_TABLE: u64 = 64;
/// Cached blocks of the table being dropped.
const DROPPED: u64 = 16;
const BLOCK: usize = 4096;

/// A cache of 64 shards, with room for `room` times `OTHERS` blocks,
/// holding `OTHERS` blocks of `OTHERS / PER_TABLE` tables (with `room` 1,
/// more or less: the shards fill unevenly, and the fuller ones evicted),
/// and those tables' ids.
fn filled(room: usize) -> (LruCache<u64>, Vec<u64>) {
    let cache = LruCache::with_shards(room * OTHERS as usize * BLOCK, 6);
    let ids: Vec<u64> = (0..OTHERS / PER_TABLE).map(|_| cache.new_id()).collect();
    for &id in &ids {
        for b in 0..PER_TABLE {
            cache.insert((id, b * BLOCK as u64), b, BLOCK);
        }
    }
    (cache, ids)
}

fn bench_cache(c: &mut Criterion) {
    let mut g = c.benchmark_group("block_cache_100k");
    let (cache, _) = filled(2);
    // The setup inserts the table's blocks; only the erase is timed.
    g.bench_function("erase_id_16_blocks", |b| {
        b.iter_batched(
            || {
                let id = cache.new_id();
                for o in 0..DROPPED {
                    cache.insert((id, o * BLOCK as u64), o, BLOCK);
                }
                id
            },
            |id| cache.erase_id(id),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("erase_id_uncached", |b| {
        b.iter_batched(
            || cache.new_id(),
            |id| cache.erase_id(id),
            BatchSize::SmallInput,
        )
    });
    // Full: every insert evicts the least recently used block.
    let (cache, _) = filled(1);
    let mut n = 0u64;
    let id = cache.new_id();
    g.bench_function("insert_evicting", |b| {
        b.iter(|| {
            n += 1;
            cache.insert(
                (id + n / PER_TABLE, (n % PER_TABLE) * BLOCK as u64),
                n,
                BLOCK,
            )
        })
    });
    let (cache, ids) = filled(2);
    let mut rng = StdRng::seed_from_u64(1);
    let keys: Vec<(u64, u64)> = (0..10_000)
        .map(|_| {
            let id = ids[rng.gen_range(0..ids.len())];
            (id, rng.gen_range(0..PER_TABLE) * BLOCK as u64)
        })
        .collect();
    let mut i = 0;
    g.bench_function("get_hit", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            cache.get(keys[i]).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench_cache);
criterion_main!(benches);
