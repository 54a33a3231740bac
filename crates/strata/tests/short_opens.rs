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

fn events_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("EVENTS"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
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

/// The `EVENTS` log grows by a small record per session, not by a copy of
/// the tree: after 4x the sessions it is at most about 4x the size (every
/// open writing the whole tree made it grow with the square: 16x), each
/// session costs under 2 KB, the sessions share one segment, and the log
/// still replays to the tree the MANIFEST holds. (Without `reopen` lines:
/// 200 segments, 16.5x the bytes from 50 to 200 sessions.)
#[test]
fn short_opens_grow_the_events_log_linearly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut sizes = Vec::new();
    // The default options: the 200 L0 files stay below the file-count
    // threshold, so the tree grows by a file per session.
    for i in 0..200 {
        one_session(dir, i, Options::default());
        if i + 1 == 50 || i + 1 == 200 {
            sizes.push(events_bytes(dir));
        }
    }
    let (at50, at200) = (sizes[0], sizes[1]);
    assert!(
        at200 <= at50 * 9 / 2,
        "EVENTS: {at50} bytes after 50 sessions, {at200} after 200"
    );
    assert!(
        at200 < 200 * 2000,
        "EVENTS: {at200} bytes after 200 sessions"
    );
    let segments = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("EVENTS")
        })
        .count();
    assert_eq!(segments, 1, "EVENTS segments after 200 sessions");

    // Replayed, the log ends at the MANIFEST's tree, with an open per
    // session.
    let events = strata::inspect::read_events(dir).unwrap();
    let opens = events
        .records
        .iter()
        .filter(|r| matches!(r.event, strata::events::Event::Open { .. }))
        .count();
    assert_eq!(opens, 200);
    let mut log = strata::inspect::Tree::new();
    for r in &events.records {
        if let Some(files) = r.event.whole_tree() {
            log = strata::inspect::Tree::new();
            log.apply_files(files, &[]).unwrap();
        } else if let Some((a, rm)) = r.event.tree_change() {
            log.apply_files(a, rm).unwrap();
        }
    }
    let m = strata::inspect::read_manifest(dir).unwrap();
    let mut want = strata::inspect::Tree::new();
    for e in &m.edits {
        want.apply(e).unwrap();
    }
    let set = |t: &strata::inspect::Tree| -> Vec<(usize, u64)> {
        (0..strata::inspect::LEVELS)
            .flat_map(|l| t.files(l).iter().map(move |f| (l, f.number)))
            .collect()
    };
    assert_eq!(set(&log), set(&want));
}
