//! SST write and read throughput for 16-byte keys and 100-byte values, in MB/s
//! of key+value bytes, and the block-size sweep the default was chosen from.
//!
//! Run: `cargo bench -p strata --bench sst` (add `-- block_size` for the sweep).

#![allow(clippy::unwrap_used, missing_docs)] // benchmarks may unwrap; criterion generates undocumented fns

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::path::Path;
use std::sync::Arc;
use strata::cache::BlockCache;
use strata::iter::InternalIterator;
use strata::sstable::{CompressionType, SstOptions, SstWriter, Table, TableOptions};
use strata::vfs::MemVfs;

const N: usize = 200_000;
const VALUE: usize = 100;

fn data() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rng = StdRng::seed_from_u64(1);
    (0..N)
        .map(|i| {
            let k = format!("key{i:013}").into_bytes();
            // Half random letters, half repeated: compresses about 2:1.
            let mut v: Vec<u8> = (0..VALUE / 2)
                .map(|_| b'a' + rng.gen_range(0..26u8))
                .collect();
            v.resize(VALUE, b'x');
            (k, v)
        })
        .collect()
}

fn write(vfs: &MemVfs, path: &Path, data: &[(Vec<u8>, Vec<u8>)], opts: SstOptions) {
    let mut w = SstWriter::create_in(vfs, path, opts).unwrap();
    for (k, v) in data {
        w.put(k, v).unwrap();
    }
    w.finish().unwrap();
}

fn opts(compression: CompressionType, block_size: usize) -> SstOptions {
    SstOptions {
        compression,
        block_size,
        ..SstOptions::for_ingestion()
    }
}

fn bench_write_read(c: &mut Criterion) {
    let data = data();
    let bytes = (N * (16 + VALUE)) as u64;
    let mut g = c.benchmark_group("sst");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes));
    for comp in [
        CompressionType::None,
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ] {
        let name = comp.rocksdb_name();
        g.bench_function(BenchmarkId::new("write", name), |b| {
            let vfs = MemVfs::new();
            b.iter(|| write(&vfs, Path::new("/w.sst"), &data, opts(comp, 4096)))
        });
        let vfs = MemVfs::new();
        write(&vfs, Path::new("/r.sst"), &data, opts(comp, 4096));
        let t = Table::open_in(&vfs, Path::new("/r.sst"), TableOptions::default()).unwrap();
        g.bench_function(BenchmarkId::new("scan", name), |b| {
            b.iter(|| {
                let mut it = t.iter();
                it.seek_to_first();
                let mut n = 0;
                while it.valid() {
                    n += it.value().len();
                    it.next();
                }
                assert_eq!(n, N * VALUE);
            })
        });
    }
    g.finish();
}

/// Random point lookups through a warm block cache: what the block size
/// trades against scan speed and file size.
fn bench_block_size(c: &mut Criterion) {
    let data = data();
    let mut g = c.benchmark_group("block_size");
    g.sample_size(10);
    for bs in [1024usize, 2048, 4096, 8192, 16384, 32768] {
        let vfs = MemVfs::new();
        write(
            &vfs,
            Path::new("/b.sst"),
            &data,
            opts(CompressionType::Snappy, bs),
        );
        let cache = Arc::new(BlockCache::new(256 << 20));
        let topts = TableOptions {
            cache: Some(cache),
            ..TableOptions::default()
        };
        let t = Table::open_in(&vfs, Path::new("/b.sst"), topts).unwrap();
        let mut rng = StdRng::seed_from_u64(2);
        let lookups: Vec<usize> = (0..10_000).map(|_| rng.gen_range(0..N)).collect();
        g.throughput(Throughput::Elements(lookups.len() as u64));
        g.bench_function(BenchmarkId::new("get", bs), |b| {
            b.iter(|| {
                for &i in &lookups {
                    assert!(t.get(&data[i].0, u64::MAX).unwrap().is_some());
                }
            })
        });
        g.throughput(Throughput::Bytes((N * (16 + VALUE)) as u64));
        g.bench_function(BenchmarkId::new("write", bs), |b| {
            let vfs = MemVfs::new();
            b.iter(|| {
                write(
                    &vfs,
                    Path::new("/w.sst"),
                    &data,
                    opts(CompressionType::Snappy, bs),
                )
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_write_read, bench_block_size);
criterion_main!(benches);
