//! The "wide file" scenario that stalled CockroachDB imports: a statistics
//! key at the bottom of the key space is written every 10,000 data keys while
//! 1,000,000 keys arrive out of order (shuffled within windows of 50,000
//! keys, as an import's sort buffers deliver them). Unsplit, every flush
//! makes an L0 file spanning from the statistics key up to the window being
//! loaded: a tiny file over the whole key space below it, overlapping every
//! other L0 file, so L0 stacks up. With flush split keys the statistics key
//! lands in its own narrow file. The flush events in the `EVENTS` log show
//! every L0 file each flush made.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::seq::SliceRandom;
use rand::{rngs::StdRng, SeedableRng};
use std::path::Path;
use std::sync::Arc;
use strata::util::hex;
use strata::vfs::{self, MemVfs, Vfs};
use strata::{CompactionOptions, Db, Options};

const KEYS: u64 = 1_000_000;
const WINDOW: u64 = 50_000;
const STATS: &[u8] = b"\x00stats";

fn data_key(i: u64) -> Vec<u8> {
    let mut k = b"d".to_vec();
    k.extend_from_slice(&i.to_be_bytes());
    k
}

struct Outcome {
    flush_files: usize,
    /// For each flush output holding the stats key: the fraction of the
    /// data key space it spans.
    stats_spans: Vec<f64>,
    /// Of those, how many reach the window the flush was loading (the stats
    /// key shares a file with the data, spanning everything between).
    reaching: usize,
    /// Flushes that made a single file (no split keys applied).
    single_file_flushes: usize,
    peak_sublevels: u64,
}

/// Position of a hex-encoded data key in the key space, 0..1.
fn position(hex_key: &str) -> f64 {
    let b = hex::decode(hex_key).unwrap();
    if b.len() != 9 || b[0] != b'd' {
        return 0.0;
    }
    u64::from_be_bytes(b[1..].try_into().unwrap()) as f64 / KEYS as f64
}

fn load(split: bool) -> Outcome {
    let vfs = MemVfs::new();
    let dir = Path::new("/db");
    let opts = Options {
        vfs: Some(Arc::new(vfs.clone())),
        memtable_size: 1 << 20,
        compaction: CompactionOptions {
            l0_sublevels: split,
            flush_split_bytes: 64 << 10,
            target_file_size: 1 << 20,
            base_level_bytes: 4 << 20,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(dir, opts).unwrap();
    let mut order: Vec<u64> = (0..KEYS).collect();
    let mut rng = StdRng::seed_from_u64(5);
    for w in order.chunks_mut(WINDOW as usize) {
        w.shuffle(&mut rng);
    }
    for (n, i) in order.iter().enumerate() {
        db.put(data_key(*i), i.to_le_bytes()).unwrap();
        if (n + 1) % 10_000 == 0 {
            db.put(STATS, (n + 1).to_string().as_bytes()).unwrap();
        }
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    for i in (0..KEYS).step_by(9_973) {
        assert_eq!(db.get(data_key(i)).unwrap(), Some(i.to_le_bytes().to_vec()));
    }
    assert_eq!(db.get(STATS).unwrap(), Some(KEYS.to_string().into_bytes()));
    let peak_sublevels = db.metrics().peak_l0_sublevels;
    db.close().unwrap();

    let events =
        String::from_utf8(vfs::read_all(&vfs as &dyn Vfs, &dir.join("EVENTS")).unwrap()).unwrap();
    let stats_hex = hex::encode(STATS);
    let (mut flush_files, mut stats_spans, mut single_file_flushes, mut reaching) =
        (0, Vec::new(), 0, 0);
    for line in events.lines().filter(|l| l.contains("\"event\":\"flush\"")) {
        let files: Vec<(&str, &str)> = line
            .split("\"smallest\":\"")
            .skip(1)
            .map(|s| {
                let lo = &s[..s.find('"').unwrap()];
                let rest = &s[s.find("\"largest\":\"").unwrap() + 11..];
                (lo, &rest[..rest.find('"').unwrap()])
            })
            .collect();
        flush_files += files.len();
        if files.len() == 1 {
            single_file_flushes += 1;
        }
        // The window being loaded is the one holding this flush's largest key.
        let top = files.iter().map(|f| position(f.1)).fold(0.0, f64::max);
        let window_start =
            (top * KEYS as f64 / WINDOW as f64).floor() * WINDOW as f64 / KEYS as f64;
        for (lo, hi) in files {
            if lo == stats_hex {
                stats_spans.push(position(hi));
                if position(hi) >= window_start && window_start > 0.0 {
                    reaching += 1;
                }
            }
        }
    }
    Outcome {
        flush_files,
        stats_spans,
        reaching,
        single_file_flushes,
        peak_sublevels,
    }
}

#[test]
fn flush_splits_keep_the_stats_key_out_of_wide_files() {
    let split = load(true);
    let plain = load(false);
    eprintln!(
        "split: {} flush files, {} of {} stats-key files reach the window being loaded, peak {} L0 sublevels; \
         unsplit: {} flush files, {} of {} reach it, peak {} L0 sublevels",
        split.flush_files,
        split.reaching,
        split.stats_spans.len(),
        split.peak_sublevels,
        plain.flush_files,
        plain.reaching,
        plain.stats_spans.len(),
        plain.peak_sublevels
    );
    assert!(
        plain.stats_spans.len() > 10,
        "the load should flush the stats key many times"
    );
    // Unsplit, every flush after the first window is one file from the
    // stats key to the data.
    assert!(
        plain.reaching * 10 >= plain.stats_spans.len() * 9,
        "unsplit flushes should be wide"
    );
    // Split, the stats key is cut off from the data; only flushes into an
    // empty L0 with an empty Lbase have nothing to cut at.
    assert!(
        split.reaching <= split.single_file_flushes,
        "a split flush made a wide file"
    );
    assert!(
        split.peak_sublevels <= 8,
        "peak L0 depth {}",
        split.peak_sublevels
    );
    assert!(
        split.peak_sublevels < plain.peak_sublevels,
        "splitting should keep L0 shallower"
    );
}
