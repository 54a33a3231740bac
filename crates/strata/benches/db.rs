//! Database write and read paths: random puts (16-byte keys, 100-byte values,
//! WAL on, no sync) from one, two and four threads (and four with
//! `concurrent_memtable_writes` off), and point gets served by
//! the memtable and by table files. The same cases run against RocksDB
//! through `bench/rocksdb` (`micro` workload; see docs/benchmarks.md).
//! Then `multi_get`: 1,000 random keys read from table files by 1,000
//! `get`s and by one `multi_get`, spread over all the keys and clustered
//! (Strata only).
//!
//! Run: `cargo bench -p strata --bench db` (`-- multi_get` for the last).

#![allow(clippy::unwrap_used, missing_docs)] // benchmarks may unwrap; criterion generates undocumented fns

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::{Db, Options};

fn key(rng: &mut StdRng) -> [u8; 16] {
    rng.gen()
}

fn open(dir: &std::path::Path) -> Db {
    Db::open(dir, Options::default()).unwrap()
}

fn bench_puts(c: &mut Criterion) {
    let mut g = c.benchmark_group("put");
    g.sample_size(10);
    g.throughput(Throughput::Elements(1));
    let value = [b'v'; 100];
    g.bench_function("1-thread", |b| {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let mut rng = StdRng::seed_from_u64(1);
        b.iter(|| db.put(key(&mut rng), value).unwrap());
    });
    for threads in [2u64, 4] {
        g.bench_function(format!("{threads}-threads"), |b| {
            let dir = tempfile::tempdir().unwrap();
            let db = Arc::new(open(dir.path()));
            b.iter_custom(|iters| puts_from(&db, threads, iters));
        });
    }
    // The same with `concurrent_memtable_writes` off (each group's leader
    // inserts every batch), for A/B runs in one build.
    g.bench_function("4-threads-serial", |b| {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            concurrent_memtable_writes: false,
            ..Options::default()
        };
        let db = Arc::new(Db::open(dir.path(), opts).unwrap());
        b.iter_custom(|iters| puts_from(&db, 4, iters));
    });
    g.finish();
}

/// `iters` puts in all, split over `threads` threads; the time is the wall
/// time of the whole, so criterion reports per-put throughput.
fn puts_from(db: &Arc<Db>, threads: u64, iters: u64) -> Duration {
    let value = [b'v'; 100];
    let per = iters.div_ceil(threads);
    let start = Instant::now();
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let db = Arc::clone(db);
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(t + 10);
                for _ in 0..per {
                    db.put(key(&mut rng), value).unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    start.elapsed()
}

fn bench_gets(c: &mut Criterion) {
    let mut g = c.benchmark_group("get");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(1));
    let value = [b'v'; 100];
    let n = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut rng = StdRng::seed_from_u64(3);
    let keys: Vec<[u8; 16]> = (0..n).map(|_| key(&mut rng)).collect();
    for k in &keys {
        db.put(k, value).unwrap();
    }
    g.bench_function("memtable", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i = (i + 7919) % n;
            assert!(db.get(keys[i]).unwrap().is_some());
        });
    });
    db.flush().unwrap();
    g.bench_function("files", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i = (i + 7919) % n;
            assert!(db.get(keys[i]).unwrap().is_some());
        });
    });
    g.finish();
}

/// 1,000 random keys of 200,000, all present, read from table files (the
/// database flushed and compacted): a loop of 1,000 `get`s against one
/// `multi_get` of the same keys, its sorting included; then the same with
/// the 1,000 keys drawn from 20,000 adjacent keys (a tenth of the data),
/// where more of them share data blocks. Each iteration reads the next of
/// 64 key sets, the same sequence for both calls, so both meet the block
/// cache alike (the whole database fits in it: the figures are the CPU
/// cost of the read paths, not I/O).
fn bench_multi_get(c: &mut Criterion) {
    let mut g = c.benchmark_group("multi_get");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(1000));
    let value = [b'v'; 100];
    let n = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut rng = StdRng::seed_from_u64(4);
    let keys: Vec<[u8; 16]> = (0..n).map(|_| key(&mut rng)).collect();
    for k in &keys {
        db.put(k, value).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    let random: Vec<Vec<[u8; 16]>> = (0..64)
        .map(|_| (0..1000).map(|_| keys[rng.gen_range(0..n)]).collect())
        .collect();
    let window = 20_000;
    let clustered: Vec<Vec<[u8; 16]>> = (0..64)
        .map(|_| {
            let start = rng.gen_range(0..n - window);
            (0..1000)
                .map(|_| sorted[start + rng.gen_range(0..window)])
                .collect()
        })
        .collect();
    for (name, sets) in [("", &random), ("-clustered", &clustered)] {
        g.bench_function(format!("1000-gets{name}"), |b| {
            let mut i = 0usize;
            b.iter(|| {
                i = (i + 1) % sets.len();
                for k in &sets[i] {
                    assert!(db.get(k).unwrap().is_some());
                }
            });
        });
        g.bench_function(format!("1-multi_get-of-1000{name}"), |b| {
            let mut i = 0usize;
            b.iter(|| {
                i = (i + 1) % sets.len();
                let got = db.multi_get(&sets[i]);
                assert!(got.iter().all(|r| matches!(r, Ok(Some(_)))));
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench_puts, bench_gets, bench_multi_get);
criterion_main!(benches);
