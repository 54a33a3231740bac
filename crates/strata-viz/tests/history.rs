//! The history across reopens: a database opened, written, flushed,
//! compacted, ingested into and closed several times (some sessions leave
//! data in the WAL for the next open to recover, one ends with a torn line
//! in its EVENTS segment) must give one timeline with a step for every
//! open, and at every step exactly the tree an independent oracle says:
//! the events the engine delivered to a listener, replayed strictly, for
//! the earlier sessions, and the current MANIFEST's edits for the last one.
//! Rendering reads the directory only: no name, byte or mtime changes.
//! A checkpoint is a step whose tree is the one the checkpoint holds.
#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::seq::SliceRandom;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use strata::events::{Event, EventCollector};
use strata::inspect::{self, Tree};
use strata::sstable::{SstOptions, SstWriter};
use strata::{CompactionOptions, Db, IngestOptions, Options};
use strata_viz::history::{self, StepKind};
use support::dir_listing;

mod support;

type FileSet = BTreeSet<(usize, u64)>;

fn set_of(t: &Tree) -> FileSet {
    (0..inspect::LEVELS)
        .flat_map(|l| t.files(l).iter().map(move |f| (l, f.number)))
        .collect()
}

fn opts(listener: Arc<EventCollector>) -> Options {
    Options {
        memtable_size: 32 << 10,
        compaction: CompactionOptions {
            target_file_size: 16 << 10,
            base_level_bytes: 128 << 10,
            ..CompactionOptions::default()
        },
        event_listener: Some(listener),
        ..Options::default()
    }
}

/// One session's work: puts (flushing on their own), sometimes an explicit
/// flush, a compaction, an ingestion; `leave_wal` leaves the last puts in
/// the WAL for the next open to recover.
fn session(
    dir: &Path,
    n: usize,
    rng: &mut StdRng,
    collector: &Arc<EventCollector>,
    leave_wal: bool,
) {
    let db = Db::open(dir, opts(Arc::clone(collector))).unwrap();
    let mut keys: Vec<u32> = (0..1500).map(|i| i * 7 + n as u32).collect();
    keys.shuffle(rng);
    for k in &keys {
        db.put(format!("key{k:06}").as_bytes(), [b'a' + n as u8; 50])
            .unwrap();
    }
    if n % 3 == 1 {
        db.compact_range(None, None).unwrap();
    }
    if n.is_multiple_of(2) {
        let f = dir.with_extension(format!("ingest{n}.sst"));
        let mut w = SstWriter::create(&f, SstOptions::for_ingestion()).unwrap();
        for j in 0..100 {
            w.put(format!("zz{n:02}{j:04}").as_bytes(), [b'i'; 30])
                .unwrap();
        }
        w.finish().unwrap();
        let o = IngestOptions {
            small_file_bytes: 0,
            ..IngestOptions::default()
        };
        db.ingest(&[f], &o).unwrap();
    }
    if !leave_wal {
        db.flush().unwrap();
    } else {
        for _ in 0..50 {
            let k: u32 = rng.gen_range(0..10_000);
            db.put(format!("key{k:06}").as_bytes(), b"in the WAL")
                .unwrap();
        }
    }
    db.wait_for_compactions().unwrap();
    db.close().unwrap();
}

#[test]
fn every_open_is_in_the_history_with_the_right_trees() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let collector = Arc::new(EventCollector::new());
    let mut rng = StdRng::seed_from_u64(99);
    const SESSIONS: usize = 6;
    let mut ends: Vec<FileSet> = Vec::new();
    for n in 0..SESSIONS {
        let before = collector.records().len();
        session(&dir, n, &mut rng, &collector, n == 1 || n == 3);
        assert!(collector.records().len() > before);
        // The tree at close, from the MANIFEST (authoritative).
        let m = inspect::read_manifest(&dir).unwrap();
        let mut t = Tree::new();
        for e in &m.edits {
            t.apply(e).unwrap();
        }
        ends.push(set_of(&t));
        if n == 2 {
            // A crash cut the segment's last line short.
            let ev = dir.join(inspect::EVENTS_FILE);
            let mut text = std::fs::read(&ev).unwrap();
            text.extend_from_slice(br#"{"v":2,"time":1.0,"event":"flush_end","jo"#);
            std::fs::write(&ev, text).unwrap();
        }
    }

    // The oracle: the listener's events replayed strictly up to the last
    // open, then the current MANIFEST's edits.
    let records = collector.records();
    let last_open = records
        .iter()
        .rposition(|r| matches!(r.event, Event::Open { .. }))
        .unwrap();
    let mut want: Vec<FileSet> = Vec::new();
    let mut t = Tree::new();
    for r in &records[..last_open] {
        if let Some(files) = r.event.whole_tree() {
            t = Tree::new();
            t.apply_files(files, &[]).unwrap();
        } else if let Some((a, rm)) = r.event.tree_change() {
            t.apply_files(a, rm).unwrap();
        } else {
            continue;
        }
        want.push(set_of(&t));
    }
    let manifest_start = want.len();
    let m = inspect::read_manifest(&dir).unwrap();
    let mut t = Tree::new();
    for (i, e) in m.edits.iter().enumerate() {
        if i > 0 && !e.changes_tree() && e.queued.is_empty() {
            continue;
        }
        t.apply(e).unwrap();
        want.push(set_of(&t));
    }

    let before = dir_listing(&dir);
    let h = history::load(&dir).unwrap();
    let page = strata_viz::render_page(&dir).unwrap();
    assert_eq!(
        dir_listing(&dir),
        before,
        "reading changed the database directory"
    );
    assert!(page.len() > 1000);

    assert_eq!(h.manifest_start, manifest_start);
    assert_eq!(h.steps.len(), want.len(), "steps vs oracle");
    // The tree at every step, from the placements alive then.
    for (i, w) in want.iter().enumerate() {
        let got: FileSet = h
            .placements
            .iter()
            .filter(|p| p.born <= i && p.died.is_none_or(|d| d > i))
            .map(|p| (p.file.level, p.file.number))
            .collect();
        assert_eq!(&got, w, "tree at step {i} (manifest from {manifest_start})");
    }
    // One open step per session, numbered in order; the tree just before
    // each reopen is the tree the MANIFEST had at that close.
    let opens: Vec<(usize, u64)> = h
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind == StepKind::Open)
        .map(|(i, s)| (i, s.job))
        .collect();
    assert_eq!(
        opens.iter().map(|o| o.1).collect::<Vec<_>>(),
        (1..=SESSIONS as u64).collect::<Vec<_>>()
    );
    for (k, &(step, _)) in opens.iter().enumerate().skip(1) {
        assert_eq!(want[step - 1], ends[k - 1], "tree before open #{}", k + 1);
    }
    // Every flush, compaction and ingestion of every session is a step.
    let count = |f: &dyn Fn(&Event) -> bool| records.iter().filter(|r| f(&r.event)).count();
    let flushes = count(&|e| matches!(e, Event::FlushEnd { .. }));
    let ingests = count(&|e| matches!(e, Event::Ingest { .. }));
    let steps_of = |k: StepKind| h.steps.iter().filter(|s| s.kind == k).count();
    assert_eq!(steps_of(StepKind::Flush), flushes);
    assert_eq!(
        steps_of(StepKind::Ingest) + steps_of(StepKind::IngestFlushable),
        ingests
    );
    // What recovery wrote at the open after a session left data in its
    // WAL: in an open's difference (earlier sessions) or a recovery edit.
    assert!(h
        .steps
        .iter()
        .any(|s| s.kind == StepKind::Open && s.job > 1 && !s.added.is_empty()));
    assert!(
        h.notes.iter().any(|n| n.contains("cut short")),
        "{:?}",
        h.notes
    );
}

/// Many short sessions (one key each, as `strata kv put` does) continue
/// one `EVENTS` segment with a `reopen` line each instead of a whole tree:
/// the history still has one open step per session, numbered in order,
/// and ends at the MANIFEST's tree.
#[test]
fn short_sessions_sharing_a_segment_are_each_an_open() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    const SESSIONS: usize = 40;
    for i in 0..SESSIONS {
        let db = Db::open(&dir, Options::default()).unwrap();
        db.put(format!("k{i}"), format!("v{i}")).unwrap();
        db.close().unwrap();
    }
    let segments = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("EVENTS")
        })
        .count();
    assert_eq!(segments, 1);
    let h = history::load(&dir).unwrap();
    let opens: Vec<u64> = h
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Open)
        .map(|s| s.job)
        .collect();
    assert_eq!(opens, (1..=SESSIONS as u64).collect::<Vec<_>>());
    let m = inspect::read_manifest(&dir).unwrap();
    let mut t = Tree::new();
    for e in &m.edits {
        t.apply(e).unwrap();
    }
    let last = h.steps.len() - 1;
    let got: FileSet = h
        .placements
        .iter()
        .filter(|p| p.born <= last && p.died.is_none_or(|d| d > last))
        .map(|p| (p.file.level, p.file.number))
        .collect();
    assert_eq!(got, set_of(&t));
    assert!(
        h.notes.iter().all(|n| !n.contains("no matching event")),
        "{:?}",
        h.notes
    );
}

/// Checkpoints are steps of the timeline, one per completed checkpoint, in
/// an earlier session (from the log) and in the current one (between the
/// MANIFEST's edits); each changes nothing, and the tree at it is the tree
/// the checkpoint holds, read back from the checkpoint's own MANIFEST.
#[test]
fn a_checkpoint_is_a_step_holding_the_tree_it_copied() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    // No automatic compaction, so none ends while a checkpoint links its
    // files (which the step's tree would show and the copy not hold).
    let opts = Options {
        compaction: CompactionOptions {
            l0_compaction_threshold: 20,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let mut copies = Vec::new();
    for session in 0..2 {
        let db = Db::open(&dir, opts.clone()).unwrap();
        for round in 0..4 {
            for k in 0..50 {
                db.put(format!("s{session}r{round}k{k:03}"), "v").unwrap();
            }
            if round == 2 {
                let cp = d.path().join(format!("cp{session}"));
                db.checkpoint(&cp).unwrap();
                copies.push(cp);
            } else {
                db.flush().unwrap();
            }
        }
        if session == 0 {
            db.compact_range(None, None).unwrap();
        }
        db.close().unwrap();
    }
    let h = history::load(&dir).unwrap();
    let steps: Vec<usize> = (0..h.steps.len())
        .filter(|&i| h.steps[i].kind == StepKind::Checkpoint)
        .collect();
    assert_eq!(
        steps.len(),
        2,
        "{:?}",
        h.steps.iter().map(|s| s.kind).collect::<Vec<_>>()
    );
    assert!(steps[0] < h.manifest_start && steps[1] >= h.manifest_start);
    let tree_at = |i: usize| -> FileSet {
        h.placements
            .iter()
            .filter(|p| p.born <= i && p.died.is_none_or(|d| d > i))
            .map(|p| (p.file.level, p.file.number))
            .collect()
    };
    for (&step, cp) in steps.iter().zip(&copies) {
        let s = &h.steps[step];
        assert!(s.added.is_empty() && s.removed.is_empty());
        let c = s.checkpoint.as_ref().unwrap();
        assert_eq!(c.dir, cp.display().to_string());
        let m = inspect::read_manifest(cp).unwrap();
        let mut t = Tree::new();
        for e in &m.edits {
            t.apply(e).unwrap();
        }
        let held = set_of(&t);
        assert_eq!(tree_at(step), held, "step {step}: the tree {} holds", c.dir);
        assert_eq!(tree_at(step - 1), held, "a checkpoint changes nothing");
        assert_eq!(c.tables, held.len());
    }
}
