//! Prefix scans with and without a prefix bloom filter
//! (`Options::sst.prefix_extractor`): `Db::prefix` over a tree of many
//! table files where each prefix lives in a few of them, and over the same
//! files reopened without the extractor (no file skipped). Both read the
//! same files, whose filters hold the prefixes either way, so the
//! difference is what skipping the files whose filter rules the prefix out
//! saves.
//!
//! Two trees, 4,000 prefixes (`FixedPrefix(6)`: `u0000:` ... `u3999:`) of
//! 16 keys with 100-byte values each:
//!
//! - `l0`: 32 L0 files (compactions held off), each holding the keys of
//!   1/16 of the prefixes chosen at random, so a prefix is in about two of
//!   them and every file's key range spans nearly all prefixes.
//! - `levels`: the same writes (each round a memtable's worth) left to the
//!   compactions, with small files and levels, so data lies in several
//!   levels, a prefix in a few files of them.
//!
//! Scans of a prefix that is present (all its keys read) and of one that
//! is not (`u9999:`-like, absent from every file). Everything fits in the
//! block cache: the figures are the CPU cost of seeking into files and
//! reading their blocks from the cache, not I/O, which a skipped file also
//! saves.
//!
//! Run: `cargo bench -p strata --bench prefix`.

#![allow(clippy::unwrap_used, missing_docs)] // benchmarks may unwrap; criterion generates undocumented fns

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::seq::SliceRandom;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use strata::sstable::{FixedPrefix, PrefixExtractor};
use strata::{CompactionOptions, Db, Options, SstOptions, WriteBatch, WriteOptions};

const PREFIXES: usize = 4000;
const KEYS_PER_PREFIX: usize = 16;
const ROUNDS: usize = 32;

fn prefix(p: usize) -> String {
    format!("u{p:04}:")
}

fn options(px: Option<Arc<dyn PrefixExtractor>>, hold_compactions: bool) -> Options {
    let compaction = if hold_compactions {
        CompactionOptions {
            l0_compaction_threshold: 1000,
            l0_compaction_file_threshold: 0,
            ..CompactionOptions::default()
        }
    } else {
        CompactionOptions {
            target_file_size: 256 << 10,
            base_level_bytes: 1 << 20,
            level_multiplier: 4,
            ..CompactionOptions::default()
        }
    };
    Options {
        sst: SstOptions {
            prefix_extractor: px,
            ..SstOptions::default()
        },
        compaction,
        l0_slowdown_sublevels: 1000,
        l0_stop_sublevels: 1000,
        ..Options::default()
    }
}

/// Writes `ROUNDS` rounds, each the keys of a random 1/16 of the prefixes
/// (every prefix written in at least one round), flushing after each.
fn fill(db: &Db) {
    let mut rng = StdRng::seed_from_u64(11);
    let mut order: Vec<usize> = (0..PREFIXES).collect();
    order.shuffle(&mut rng);
    let per_round = PREFIXES / 16;
    for r in 0..ROUNDS {
        // The first 16 rounds cover every prefix once; the rest rewrite
        // random ones.
        let chosen: Vec<usize> = if r < 16 {
            order[r * per_round..(r + 1) * per_round].to_vec()
        } else {
            (0..per_round).map(|_| rng.gen_range(0..PREFIXES)).collect()
        };
        let mut batch = WriteBatch::new();
        for p in chosen {
            for k in 0..KEYS_PER_PREFIX {
                let v: Vec<u8> = (0..100).map(|_| rng.gen()).collect();
                batch.put(format!("{}{k:04}", prefix(p)), v);
            }
        }
        db.write(batch, &WriteOptions::default()).unwrap();
        db.flush().unwrap();
    }
}

fn bench_tree(c: &mut Criterion, name: &str, dir: &Path, hold_compactions: bool) {
    let px: Arc<dyn PrefixExtractor> = Arc::new(FixedPrefix(6));
    {
        let db = Db::open(dir, options(Some(Arc::clone(&px)), hold_compactions)).unwrap();
        fill(&db);
        db.wait_for_compactions().unwrap();
        let levels: Vec<usize> = db.metrics().levels.iter().map(|l| l.files).collect();
        eprintln!("{name}: files per level {levels:?}");
    }
    let mut g = c.benchmark_group(format!("prefix_scan/{name}"));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements(1));
    for (label, with) in [("with-extractor", Some(px)), ("without-extractor", None)] {
        let db = Db::open(dir, options(with, hold_compactions)).unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        g.bench_function(format!("present/{label}"), |b| {
            b.iter(|| {
                let p = prefix(rng.gen_range(0..PREFIXES));
                assert_eq!(db.prefix(p).count(), KEYS_PER_PREFIX);
            })
        });
        g.bench_function(format!("absent/{label}"), |b| {
            b.iter(|| {
                // Between two present prefixes: `u0123;` sorts after every
                // `u0123:` key and before `u0124:`.
                let p = format!("u{:04};", rng.gen_range(0..PREFIXES));
                assert_eq!(db.prefix(p).count(), 0);
            })
        });
        let m = db.metrics();
        eprintln!(
            "{name} {label}: prefix filters consulted {}, files skipped {}, block reads {}",
            m.prefix_filter_checks,
            m.prefix_filter_skips,
            m.block_cache_hits + m.block_cache_misses
        );
    }
    g.finish();
}

fn bench_prefix_scans(c: &mut Criterion) {
    let l0 = tempfile::tempdir().unwrap();
    bench_tree(c, "l0", l0.path(), true);
    let levels = tempfile::tempdir().unwrap();
    bench_tree(c, "levels", levels.path(), false);
}

criterion_group!(benches, bench_prefix_scans);
criterion_main!(benches);
