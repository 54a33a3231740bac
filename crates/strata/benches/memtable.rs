//! Memtable insert and point-lookup cost: Strata's arena skiplist (through
//! `MemTable`) against `crossbeam-skiplist`'s `SkipMap` keyed by internal
//! key, for 1M random 16-byte keys with 100-byte values.
//!
//! Run: `cargo bench -p strata --bench memtable`. Each reported time is for
//! the whole batch (1M inserts, 200k gets); divide by the batch size (or read
//! the elements/s figure) for the per-operation cost.

#![allow(clippy::unwrap_used, missing_docs)] // benchmarks may unwrap; criterion generates undocumented fns

use criterion::{black_box, criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use crossbeam_skiplist::SkipMap;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::iter::InternalIterator;
use strata::key::{self, compare_internal, make_internal_key, ValueKind, MAX_SEQUENCE};
use strata::memtable::MemTable;

const N: usize = 1_000_000;
const GETS: usize = 200_000;
const VALUE: [u8; 100] = [b'v'; 100];

/// An internal key ordered as the memtable orders it, for `SkipMap`.
#[derive(PartialEq, Eq)]
struct IKey(Vec<u8>);

impl Ord for IKey {
    fn cmp(&self, o: &Self) -> Ordering {
        compare_internal(&self.0, &o.0)
    }
}

impl PartialOrd for IKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

fn keys() -> Vec<[u8; 16]> {
    let mut rng = StdRng::seed_from_u64(42);
    (0..N).map(|_| rng.gen()).collect()
}

fn fill_strata(keys: &[[u8; 16]], concurrent: bool) -> MemTable {
    let mem = MemTable::new(1);
    for (i, k) in keys.iter().enumerate() {
        if concurrent {
            mem.add_concurrent(i as u64 + 1, ValueKind::Value, k, &VALUE);
        } else {
            mem.add(i as u64 + 1, ValueKind::Value, k, &VALUE);
        }
    }
    mem
}

fn fill_crossbeam(keys: &[[u8; 16]]) -> SkipMap<IKey, Vec<u8>> {
    let map = SkipMap::new();
    for (i, k) in keys.iter().enumerate() {
        map.insert(
            IKey(make_internal_key(k, i as u64 + 1, ValueKind::Value)),
            VALUE.to_vec(),
        );
    }
    map
}

/// Times `fill` only (not building the inputs or dropping the result).
fn time_fills<T>(iters: u64, fill: impl Fn() -> T) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let t = Instant::now();
        let filled = black_box(fill());
        total += t.elapsed();
        drop(filled);
    }
    total
}

fn bench_insert(c: &mut Criterion) {
    let keys = keys();
    let mut g = c.benchmark_group("memtable_insert_1M");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("strata_add", |b| {
        b.iter_custom(|iters| time_fills(iters, || fill_strata(&keys, false)))
    });
    g.bench_function("strata_add_concurrent", |b| {
        b.iter_custom(|iters| time_fills(iters, || fill_strata(&keys, true)))
    });
    g.bench_function("crossbeam_skipmap", |b| {
        b.iter_custom(|iters| time_fills(iters, || fill_crossbeam(&keys)))
    });
    g.finish();
}

fn bench_get(c: &mut Criterion) {
    let keys = keys();
    let mut rng = StdRng::seed_from_u64(7);
    let lookups: Vec<usize> = (0..GETS).map(|_| rng.gen_range(0..N)).collect();
    let mem = Arc::new(fill_strata(&keys, false));
    let map = fill_crossbeam(&keys);

    let mut g = c.benchmark_group("memtable_get_200k_of_1M");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(GETS as u64));
    // `MemTable::get`: the newest visible entry, value copied out.
    g.bench_function("strata_get", |b| {
        b.iter(|| {
            for &i in &lookups {
                let f = mem.get(&keys[i], MAX_SEQUENCE).unwrap();
                black_box(f);
            }
        })
    });
    // The skiplist search alone: seek an iterator, no copy.
    g.bench_function("strata_iter_seek", |b| {
        let mut it = mem.iter();
        let mut target = Vec::with_capacity(24);
        b.iter(|| {
            for &i in &lookups {
                target.clear();
                key::append_internal_key(&mut target, &keys[i], MAX_SEQUENCE, key::KIND_FOR_SEEK);
                it.seek(&target);
                assert_eq!(key::user_key(it.key()), keys[i]);
                black_box(it.value());
            }
        })
    });
    // The same lookup as `strata_get` on the `SkipMap`: lower bound of the
    // seek key, check the user key, copy the value.
    g.bench_function("crossbeam_get", |b| {
        let mut probe = IKey(Vec::with_capacity(24));
        b.iter(|| {
            for &i in &lookups {
                probe.0.clear();
                key::append_internal_key(&mut probe.0, &keys[i], MAX_SEQUENCE, key::KIND_FOR_SEEK);
                let e = map.lower_bound(Bound::Included(&probe)).unwrap();
                assert_eq!(key::user_key(&e.key().0), keys[i]);
                black_box(e.value().to_vec());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench_insert, bench_get);
criterion_main!(benches);
