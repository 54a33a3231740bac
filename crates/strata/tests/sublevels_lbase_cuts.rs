//! Where Lbase is cut (`compaction::lbase_cuts`), end to end: the keys
//! `Db::ingest_split_keys` gives a bulk loader, and what they do to a load
//! of overlapping units like W5's (each unit a sorted run over the whole
//! key space, ingested as files cut at those keys).
//!
//! - `large_lbase_files_are_cut_inside`: a large Lbase file yields cut
//!   points inside it that split it into parts of about `lbase_split_bytes`,
//!   and an L0 -> Lbase compaction of a unit cut there keeps them as file
//!   boundaries (so the next unit's cuts line up with the last one's).
//! - `a_load_of_overlapping_units_keeps_every_l0_compaction_small`: no
//!   L0 -> Lbase compaction reads more than 10% of the data, and every key
//!   reads back its last value (against a model). Without the inner cut
//!   points, the units after the first land in L0 as files spanning the
//!   whole first unit, and the first L0 -> Lbase compaction takes several
//!   units at once. Run with a fixed slice size and with the default,
//!   slices scaled to Lbase (`CompactionOptions::lbase_slices`).

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use strata::events::{Event, EventListener, EventRecord};
use strata::sstable::{SstOptions, SstWriter};
use strata::{CompactionOptions, Db, IngestOptions, Options};

const SPLIT: u64 = 16 << 10;

fn opts(listener: Option<Arc<dyn EventListener>>) -> Options {
    opts_with(SPLIT, listener)
}

/// `opts` with `lbase_split_bytes` = `split` (0: the default slices, scaled
/// to Lbase).
fn opts_with(split: u64, listener: Option<Arc<dyn EventListener>>) -> Options {
    Options {
        compaction: CompactionOptions {
            lbase_split_bytes: split,
            target_file_size: if split == 0 { 256 << 10 } else { 1 << 20 },
            // Lbase stays L6: the data never reaches 10x this.
            base_level_bytes: 64 << 20,
            ..CompactionOptions::default()
        },
        event_listener: listener,
        ..Options::default()
    }
}

/// Small blocks, so a table of a few hundred KiB has many cut points.
fn sst_opts() -> SstOptions {
    SstOptions {
        block_size: 1024,
        ..SstOptions::for_ingestion()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// Writes sorted `kvs` as files cut before the first key at or past each
/// of `splits` (as `strata import` does); returns the paths.
fn write_cut(
    dir: &Path,
    name: &str,
    kvs: &[(Vec<u8>, Vec<u8>)],
    splits: &[Vec<u8>],
) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut next = splits.iter().peekable();
    let mut w: Option<SstWriter> = None;
    for (k, v) in kvs {
        let mut cut = false;
        while next.next_if(|s| k.as_slice() >= s.as_slice()).is_some() {
            cut = true;
        }
        if cut {
            if let Some(w) = w.take() {
                w.finish().unwrap();
            }
        }
        if w.is_none() {
            let p = dir.join(format!("{name}-{}.sst", paths.len()));
            w = Some(SstWriter::create(&p, sst_opts()).unwrap());
            paths.push(p);
        }
        w.as_mut().unwrap().put(k, v).unwrap();
    }
    if let Some(w) = w {
        w.finish().unwrap();
    }
    paths
}

fn ingest_opts() -> IngestOptions {
    IngestOptions {
        small_file_bytes: 0,
        ..IngestOptions::default()
    }
}

#[test]
fn large_lbase_files_are_cut_inside() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts(None)).unwrap();
    // Values that do not compress, so the file's size is its data's.
    let mut rng = StdRng::seed_from_u64(1);
    let kvs: Vec<(Vec<u8>, Vec<u8>)> = (0..4000)
        .map(|i| (key(i), (0..100).map(|_| rng.gen::<u8>()).collect()))
        .collect();
    let first = write_cut(d.path(), "a", &kvs, &[]);
    assert_eq!(first.len(), 1);
    assert_eq!(
        db.ingest(&first, &ingest_opts()).unwrap().levels,
        vec![Some(6)]
    );
    let size = db.files()[0].1.size;
    let splits = db.ingest_split_keys();
    let parts = (size / SPLIT) as usize;
    assert!(parts >= 10, "{size} bytes make {parts} parts");
    // One cut between each two parts (blocks are much smaller than a part).
    assert_eq!(splits.len(), parts - 1, "{size} bytes, cuts {splits:?}");
    assert!(splits.windows(2).all(|w| w[0] < w[1]), "increasing");
    // Parts of about equal size: keys are of equal size here.
    let mut counts = Vec::new();
    let mut bounds: Vec<&[u8]> = vec![b""];
    bounds.extend(splits.iter().map(|s| s.as_slice()));
    for (i, lo) in bounds.iter().enumerate() {
        let n = kvs
            .iter()
            .filter(|(k, _)| {
                k.as_slice() >= *lo && bounds.get(i + 1).is_none_or(|hi| k.as_slice() < *hi)
            })
            .count();
        counts.push(n);
    }
    let avg = kvs.len() / counts.len();
    assert!(
        counts.iter().all(|&n| n > avg / 2 && n < avg * 3 / 2),
        "keys per part {counts:?}"
    );
    // A unit over every key, cut there, lands in L0 one file per part;
    // compacted, L6 is cut at the same keys.
    let newer: Vec<(Vec<u8>, Vec<u8>)> = (0..4000)
        .step_by(3)
        .map(|i| (key(i), b"new".to_vec()))
        .collect();
    let unit = write_cut(d.path(), "b", &newer, &splits);
    assert_eq!(unit.len(), parts);
    let r = db.ingest(&unit, &ingest_opts()).unwrap();
    assert!(r.levels.iter().all(|l| *l == Some(0)));
    db.compact_range(None, None).unwrap();
    let starts: Vec<Vec<u8>> = db
        .files()
        .into_iter()
        .map(|(l, f)| {
            assert_eq!(l, 6);
            strata::key::user_key(&f.smallest).to_vec()
        })
        .collect();
    for s in &splits {
        let at = kvs.iter().map(|(k, _)| k).find(|k| *k >= s).unwrap();
        assert!(
            starts.contains(at),
            "no L6 file starts at {at:?}; starts {starts:?}"
        );
    }
    assert_eq!(db.get(key(3)).unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get(key(4)).unwrap(), Some(kvs[4].1.clone()));
}

/// Keeps the bytes read by each L0 -> Lbase compaction.
#[derive(Default)]
struct L0Compactions(Mutex<Vec<u64>>);

impl EventListener for L0Compactions {
    fn on_event(&self, r: &EventRecord) {
        if let Event::CompactionEnd {
            start_level: 0,
            output_level,
            moved: false,
            bytes_read,
            ..
        } = &r.event
        {
            if *output_level > 0 {
                self.0.lock().unwrap().push(*bytes_read);
            }
        }
    }
}

#[test]
fn a_load_of_overlapping_units_keeps_every_l0_compaction_small() {
    load_of_overlapping_units(SPLIT);
}

/// The same with the default options but the file size: Lbase is sliced at
/// a size scaled to it (`CompactionOptions::lbase_slices`), a 32nd of
/// Lbase but at least 32 KiB here (a 32nd of the 1 MiB target file size).
#[test]
fn a_load_of_overlapping_units_with_scaled_slices_keeps_every_l0_compaction_small() {
    load_of_overlapping_units(0);
}

fn load_of_overlapping_units(split: u64) {
    let d = tempfile::tempdir().unwrap();
    let watch = Arc::new(L0Compactions::default());
    let db = Db::open(
        d.path().join("db"),
        opts_with(split, Some(Arc::clone(&watch) as Arc<dyn EventListener>)),
    )
    .unwrap();
    let mut rng = StdRng::seed_from_u64(15);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    // 40 units of 1,000 random keys out of 40,000: each unit spans the
    // whole key space and overlaps every earlier one, and is about 4% of
    // the data, as W5's units are (15 MB of 326 MB at 10 warehouses).
    for u in 0..40 {
        let mut unit: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for _ in 0..1000 {
            let v: Vec<u8> = (0..100).map(|_| rng.gen_range(b'a'..=b'z')).collect();
            unit.insert(key(rng.gen_range(0..40_000)), v);
        }
        let kvs: Vec<(Vec<u8>, Vec<u8>)> = unit.into_iter().collect();
        let files = write_cut(d.path(), &format!("u{u}"), &kvs, &db.ingest_split_keys());
        db.ingest(&files, &ingest_opts()).unwrap();
        model.extend(kvs);
        // Each unit is compacted before the next arrives, so how large a
        // compaction is depends on Lbase's slices, not on how far the
        // background threads of a loaded machine fell behind.
        db.wait_for_compactions().unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let data: u64 = db.files().iter().map(|(_, f)| f.size).sum();
    let reads = watch.0.lock().unwrap().clone();
    assert!(reads.len() >= 5, "L0 -> Lbase compactions: {reads:?}");
    let largest = reads.iter().copied().max().unwrap();
    assert!(
        largest * 10 <= data,
        "an L0 -> Lbase compaction read {largest} bytes of {data} ({:.0}%); all: {reads:?}",
        100.0 * largest as f64 / data as f64
    );
    let mut it = db.iter();
    let mut n = 0;
    for kv in &mut it {
        let (k, v) = kv.unwrap();
        assert_eq!(model.get(&k[..]).map(|v| &v[..]), Some(&v[..]), "key {k:?}");
        n += 1;
    }
    assert_eq!(n, model.len());
}
