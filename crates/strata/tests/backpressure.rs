//! Backpressure: with low slowdown and stop thresholds, a heavy load is
//! slowed and stopped while compactions catch up; every stall is recorded
//! with its cause and duration, and no write is lost.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::sync::Arc;
use strata::vfs::{MemVfs, Vfs};
use strata::{CompactionOptions, Db, Options, WriteBatch, WriteOptions};

#[test]
fn stalls_are_recorded_by_cause_and_nothing_is_lost() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let opts = Options {
        vfs: Some(vfs),
        memtable_size: 64 << 10,
        max_immutable_memtables: 1,
        l0_slowdown_sublevels: 2,
        l0_stop_sublevels: 4,
        slowdown_rate: 4 << 20,
        max_background_compactions: 1,
        compaction: CompactionOptions {
            l0_compaction_threshold: 2,
            target_file_size: 256 << 10,
            base_level_bytes: 1 << 20,
            flush_split_bytes: 32 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    let n = 60_000u64;
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            // Scattered keys, so every flush overlaps the ones before it.
            let k = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes();
            b.put(k, i.to_le_bytes());
        }
        db.write(b, &WriteOptions::default()).unwrap();
    }
    db.wait_for_compactions().unwrap();
    let m = db.metrics();
    let causes: Vec<&str> = m.stalls.iter().map(|s| s.cause.as_str()).collect();
    eprintln!(
        "stalls: {:?}; peak L0 sublevels {}",
        m.stalls, m.peak_l0_sublevels
    );
    assert!(
        causes.iter().any(|c| c.starts_with("slowdown")),
        "a slowdown should have been recorded: {causes:?}"
    );
    assert!(m.stalls.iter().all(|s| s.count > 0), "{:?}", m.stalls);
    assert!(
        m.stalls.iter().map(|s| s.micros).sum::<u64>() > 0,
        "stall time should be measured"
    );
    assert!(
        m.peak_l0_sublevels <= 6,
        "the stop threshold (4) should bound L0 depth, saw {}",
        m.peak_l0_sublevels
    );
    for i in (0..n).step_by(101) {
        let k = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes();
        assert_eq!(db.get(k).unwrap(), Some(i.to_le_bytes().to_vec()));
    }
}
