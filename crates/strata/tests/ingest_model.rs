//! Ingestion checked against a model across flushes and reopens: small
//! memtables and a one-entry immutable queue make ingested files take both
//! paths (straight into the tree, or queued behind an overlapping memtable)
//! and be recovered from the WAL. This is the test that found file numbers
//! being reused after a reopen (an ingested file linked under a number the
//! MANIFEST had not recorded yet was overwritten by a recovery flush).

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use strata::sstable::{SstOptions, SstWriter};
use strata::vfs::{MemVfs, Vfs};
use strata::{Db, IngestOptions, Options, ReadOptions};

#[test]
fn ingestion_matches_a_model_across_reopens() {
    let mut paths_taken = [0u32; 2];
    for seed in 0..200u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let files = tempfile::tempdir().unwrap();
        let o = || Options {
            vfs: Some(vfs.clone()),
            memtable_size: 4 << 10,
            max_immutable_memtables: 1,
            ..Options::default()
        };
        let mut db = Db::open("/db", o()).unwrap();
        let mut model = BTreeMap::new();
        for step in 0..60 {
            let k = |rng: &mut StdRng| format!("k{:03}", rng.gen_range(0..100)).into_bytes();
            match rng.gen_range(0..10) {
                0..=5 => {
                    let (key, v) = (k(&mut rng), vec![b'p'; rng.gen_range(0..200)]);
                    db.put(&key, &v).unwrap();
                    model.insert(key, v);
                }
                6 | 7 => {
                    let mut kvs: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.gen_range(1..30))
                        .map(|_| (k(&mut rng), vec![b'i'; rng.gen_range(0..50)]))
                        .collect();
                    kvs.sort();
                    kvs.dedup_by(|a, b| a.0 == b.0);
                    let p = files.path().join(format!("{step}.sst"));
                    let mut w = SstWriter::create(&p, SstOptions::for_ingestion()).unwrap();
                    for (a, b) in &kvs {
                        w.put(a, b).unwrap();
                    }
                    w.finish().unwrap();
                    // Sometimes excise a range as well (ingest and excise).
                    let excise = if rng.gen_bool(0.3) {
                        let a = format!("k{:03}", rng.gen_range(0..100)).into_bytes();
                        let b = format!("k{:03}", rng.gen_range(0..=100)).into_bytes();
                        Some((a.clone().min(b.clone()), a.max(b))).filter(|(a, b)| a < b)
                    } else {
                        None
                    };
                    let small_file_bytes = if rng.gen_bool(0.2) { 1 << 20 } else { 0 };
                    let r = db
                        .ingest(
                            &[p],
                            &IngestOptions {
                                small_file_bytes,
                                excise: excise.clone(),
                                ..IngestOptions::default()
                            },
                        )
                        .unwrap();
                    if std::env::var_os("STRATA_TRACE").is_some() {
                        eprintln!(
                            "seed {seed} step {step} {r:?} excise {:?}",
                            excise.as_ref().map(|(a, b)| (
                                String::from_utf8_lossy(a).into_owned(),
                                String::from_utf8_lossy(b).into_owned()
                            ))
                        );
                    }
                    if !r.as_batch {
                        paths_taken[usize::from(r.flushable)] += 1;
                    }
                    if let Some((a, b)) = excise {
                        let doomed: Vec<_> = model.range(a..b).map(|(k, _)| k.clone()).collect();
                        for k in doomed {
                            model.remove(&k);
                        }
                    }
                    for (a, b) in kvs {
                        model.insert(a, b);
                    }
                }
                8 => {
                    if std::env::var_os("STRATA_TRACE").is_some() {
                        eprintln!("seed {seed} step {step} flush");
                    }
                    db.flush().unwrap()
                }
                _ => {
                    if std::env::var_os("STRATA_TRACE").is_some() {
                        eprintln!("seed {seed} step {step} reopen");
                    }
                    db.close().unwrap();
                    db = Db::open("/db", o()).unwrap();
                }
            }
            let mut it = db.iter(&ReadOptions::default()).unwrap();
            it.seek_to_first();
            let mut got = BTreeMap::new();
            while it.valid() {
                got.insert(it.key().to_vec(), it.value().to_vec());
                it.next();
            }
            if got != model {
                let extra: Vec<_> = got
                    .keys()
                    .filter(|k| !model.contains_key(*k))
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .take(5)
                    .collect();
                eprintln!("extra keys in the database: {extra:?}");
                let bad: Vec<_> = model
                    .iter()
                    .filter(|(k, v)| got.get(*k) != Some(v))
                    .map(|(k, v)| {
                        (
                            String::from_utf8_lossy(k).into_owned(),
                            v.len(),
                            got.get(k).map(|g| g.len()),
                        )
                    })
                    .take(5)
                    .collect();
                let m = db.metrics();
                let lv: Vec<usize> = m.levels.iter().map(|l| l.files).collect();
                let ev = String::from_utf8(
                    strata::vfs::read_all(vfs.as_ref(), std::path::Path::new("/db/EVENTS"))
                        .unwrap(),
                )
                .unwrap();
                for l in ev.lines().rev().take(8) {
                    eprintln!("EV {}", &l[..l.len().min(400)]);
                }
                panic!("seed {seed} step {step}: mismatch {bad:?} levels {lv:?}");
            }
        }
    }
    assert!(
        paths_taken[0] > 50 && paths_taken[1] > 50,
        "both ingestion paths exercised: {paths_taken:?}"
    );
}
