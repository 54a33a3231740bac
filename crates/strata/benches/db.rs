//! Database write and read paths: random puts (16-byte keys, 100-byte values,
//! WAL on, no sync) from one, two and four threads (and four with
//! `concurrent_memtable_writes` off), and point gets served by
//! the memtable and by table files. The same cases run against RocksDB
//! through `bench/rocksdb` (`micro` workload; see docs/benchmarks.md).
//!
//! Run: `cargo bench -p strata --bench db`.

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

criterion_group!(benches, bench_puts, bench_gets);
criterion_main!(benches);
