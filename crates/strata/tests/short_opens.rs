//! Many short-lived opens, each writing one key and closing (what
//! `strata kv put` does): each reopen flushes the last session's WAL into
//! a small L0 file of its own, and each open records itself in the
//! `EVENTS` log. Neither may grow without bound: the L0 files sit side by
//! side in one sublevel, so only the L0 file-count term
//! (`CompactionOptions::l0_compaction_file_threshold`) ever compacts them,
//! and the log must cost a small record per open, not a copy of the tree.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use strata::{CompactionOptions, Db, Options};

const OPENS: usize = 120;
const FILE_THRESHOLD: usize = 20;

fn opts() -> Options {
    Options {
        compaction: CompactionOptions {
            l0_compaction_file_threshold: FILE_THRESHOLD,
            ..CompactionOptions::default()
        },
        ..Options::default()
    }
}

fn key(i: usize) -> String {
    format!("k{i}")
}

/// Opens, writes key `i`, closes.
fn one_session(dir: &Path, i: usize, opts: Options) {
    let db = Db::open(dir, opts).unwrap();
    db.put(key(i), format!("v{i}")).unwrap();
    db.close().unwrap();
}

/// The L0 file count stays at most the threshold however many sessions
/// there are, the files leave L0 merged (not moved one by one to Lbase,
/// which would keep the count, only elsewhere), and every key reads back.
/// (Without the count term every session but the last leaves an L0 file:
/// 119 here; with it but picks of one file each, 100 L6 files.)
#[test]
fn short_opens_keep_l0_file_count_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut peak = 0;
    for i in 0..OPENS {
        one_session(dir, i, opts());
        let db = Db::open(dir, opts()).unwrap();
        db.wait_for_compactions().unwrap();
        peak = peak.max(db.metrics().l0_files);
        db.close().unwrap();
    }
    let db = Db::open(dir, opts()).unwrap();
    db.wait_for_compactions().unwrap();
    let m = db.metrics();
    let total: usize = m.levels.iter().map(|l| l.files).sum();
    assert!(
        peak <= FILE_THRESHOLD && m.l0_files < FILE_THRESHOLD,
        "L0 files: peak {peak}, now {} (threshold {FILE_THRESHOLD})",
        m.l0_files
    );
    assert!(
        total <= FILE_THRESHOLD + 2,
        "{total} table files after {OPENS} sessions: {:?}",
        m.levels.iter().map(|l| l.files).collect::<Vec<_>>()
    );
    for i in 0..OPENS {
        assert_eq!(
            db.get(key(i)).unwrap().as_deref(),
            Some(format!("v{i}").as_bytes()),
            "key {i}"
        );
    }
    db.close().unwrap();
}

