//! The history of a tree: every MANIFEST edit that changed it (a *step*),
//! each matched to the engine event that made it, with the figures the page
//! charts per step. Built only from `strata::inspect` (read-only).
//!
//! Invariants:
//! - step 0 is the MANIFEST's first record (the tree when the database was
//!   opened); step `i` is the tree after applying steps `0..=i`;
//! - a file *placement* is one file at one level from the step that added
//!   it until the step that removed it (a move to the next level is a new
//!   placement of the same file number);
//! - an edit is matched to the event with exactly the same added and
//!   removed (level, file number) pairs, so a match is never a guess; an
//!   edit without one (e.g. an EVENTS log that failed to write) is shown as
//!   a plain "version edit";
//! - the sublevels of each step's L0 come from `strata::inspect::l0_sublevels`,
//!   the engine's own code.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::Path;
use strata::events::{Event, EventRecord};
use strata::inspect::{self, ManifestHistory, TableInfo, Tree, LEVELS};

/// What made a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// The MANIFEST's opening snapshot.
    Open = 0,
    Flush = 1,
    Compaction = 2,
    Move = 3,
    Ingest = 4,
    /// An ingestion that waited behind a memtable and is now placed.
    IngestFlushable = 5,
    /// An ingestion's files queued behind an overlapping memtable (not in
    /// the tree yet).
    IngestQueued = 6,
    /// An edit no event explains.
    Edit = 7,
}

/// One step of the timeline.
#[derive(Clone, Debug)]
pub struct Step {
    pub kind: StepKind,
    /// Placements added and removed (indices into `History::placements`).
    pub added: Vec<usize>,
    pub removed: Vec<usize>,
    /// The event's time (seconds since the epoch), 0 if unmatched.
    pub time: f64,
    pub job: u64,
    pub reason: String,
    pub start_level: usize,
    pub output_level: usize,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub micros: u64,
    /// Write stops that ended since the previous step: count, microseconds.
    pub stalls: (u64, u64),
    /// Figures of the tree after this step.
    pub l0_files: usize,
    pub l0_sublevels: usize,
    pub read_amp: usize,
    pub level_bytes: [u64; LEVELS],
    /// Bytes written by flushes, ingestions (incoming) and compactions so
    /// far: write amplification is `(incoming + compacted) / incoming`.
    pub incoming: u64,
    pub compacted: u64,
    /// Placements whose sublevel changed (or was first set) at this step.
    pub sublevel_changes: Vec<(usize, usize)>,
}

/// One file at one level for a span of steps.
#[derive(Clone, Debug)]
pub struct Placement {
    pub file: TableInfo,
    pub born: usize,
    pub died: Option<usize>,
}

/// The whole history.
#[derive(Clone, Debug)]
pub struct History {
    pub manifest: String,
    pub placements: Vec<Placement>,
    pub steps: Vec<Step>,
    /// Every distinct file bound, sorted: a key's position on the x axis is
    /// its index here.
    pub keys: Vec<Vec<u8>>,
    /// Edits that changed nothing the picture shows (WAL bookkeeping).
    pub bookkeeping_edits: usize,
    /// Notes for the reader (unknown event kinds, torn tail, ...).
    pub notes: Vec<String>,
}

/// The (level, number) pairs an edit or event adds and removes, sorted.
type Signature = (Vec<(usize, u64)>, Vec<(usize, u64)>);

fn signature<'a>(
    added: impl Iterator<Item = (usize, u64)>,
    removed: impl Iterator<Item = (usize, u64)> + 'a,
) -> Signature {
    let mut a: Vec<_> = added.collect();
    let mut r: Vec<_> = removed.collect();
    a.sort_unstable();
    r.sort_unstable();
    (a, r)
}

/// Reads `dir` (never writing to it) and builds its history.
pub fn load(dir: &Path) -> strata::Result<History> {
    let manifest = inspect::read_manifest(dir)?;
    let events = inspect::read_events(dir)?;
    let mut notes = Vec::new();
    if events.torn_tail {
        notes.push("the last EVENTS line was cut short (a write in progress or a crash)".into());
    }
    for (line, kind) in events.unknown.iter().take(3) {
        notes.push(format!(
            "EVENTS line {line}: unknown event kind {kind:?} skipped"
        ));
    }
    build(&manifest, &events.records, notes)
}

/// Builds the history from a MANIFEST's edits and the event log.
pub fn build(
    manifest: &ManifestHistory,
    events: &[EventRecord],
    mut notes: Vec<String>,
) -> strata::Result<History> {
    // Tree-changing events by signature, in log order.
    let mut by_sig: HashMap<Signature, VecDeque<usize>> = HashMap::new();
    for (i, r) in events.iter().enumerate() {
        if let Some((added, removed)) = r.event.tree_change() {
            let sig = signature(
                added.iter().map(|f| (f.level, f.number)),
                removed.iter().map(|f| (f.level, f.number)),
            );
            by_sig.entry(sig).or_default().push_back(i);
        }
    }
    let mut tree = Tree::new();
    let mut live: HashMap<(usize, u64), usize> = HashMap::new();
    let mut placements: Vec<Placement> = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut step_of_event: HashMap<usize, usize> = HashMap::new();
    let mut bookkeeping = 0;
    let mut key_set: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut sublevel_of: HashMap<usize, usize> = HashMap::new();
    let (mut incoming, mut compacted) = (0u64, 0u64);
    let mut level_bytes = [0u64; LEVELS];
    for (ei, e) in manifest.edits.iter().enumerate() {
        if !e.changes_tree() && e.queued.is_empty() {
            bookkeeping += 1;
            continue;
        }
        tree.apply(e).map_err(|m| {
            strata::Error::corruption(manifest.path.display().to_string(), e.offset, m)
        })?;
        let sig = signature(
            e.added.iter().map(|f| (f.level, f.number)),
            e.removed.iter().copied(),
        );
        // The opening snapshot is the latest `open` with these files; every
        // later edit, the earliest unmatched event with its signature.
        let matched = by_sig.get_mut(&sig).and_then(|q| {
            if ei == 0 {
                let last = q.pop_back();
                q.clear();
                last
            } else {
                q.pop_front()
            }
        });
        let mut step = Step {
            kind: if ei == 0 {
                StepKind::Open
            } else if !e.changes_tree() {
                StepKind::IngestQueued
            } else {
                StepKind::Edit
            },
            added: Vec::new(),
            removed: Vec::new(),
            time: 0.0,
            job: 0,
            reason: String::new(),
            start_level: 0,
            output_level: 0,
            bytes_read: 0,
            bytes_written: 0,
            micros: 0,
            stalls: (0, 0),
            l0_files: 0,
            l0_sublevels: 0,
            read_amp: 0,
            level_bytes: [0; LEVELS],
            incoming: 0,
            compacted: 0,
            sublevel_changes: Vec::new(),
        };
        if let Some(i) = matched {
            step_of_event.insert(i, steps.len());
            describe(&mut step, &events[i]);
        }
        if step.kind == StepKind::IngestQueued {
            step.bytes_written = e.queued.iter().map(|f| f.size).sum();
        }
        for &(level, n) in &e.removed {
            if let Some(p) = live.remove(&(level, n)) {
                placements[p].died = Some(steps.len());
                step.removed.push(p);
                sublevel_of.remove(&p);
            }
        }
        for f in &e.added {
            key_set.insert(f.smallest.clone());
            key_set.insert(f.largest.clone());
            live.insert((f.level, f.number), placements.len());
            step.added.push(placements.len());
            placements.push(Placement {
                file: f.clone(),
                born: steps.len(),
                died: None,
            });
        }
        match step.kind {
            StepKind::Flush | StepKind::Ingest | StepKind::IngestFlushable => {
                incoming += e.added.iter().map(|f| f.size).sum::<u64>()
            }
            StepKind::Compaction => compacted += step.bytes_written,
            StepKind::Edit if ei > 0 && e.removed.is_empty() => {
                incoming += e.added.iter().map(|f| f.size).sum::<u64>()
            }
            _ => {}
        }
        step.incoming = incoming;
        step.compacted = compacted;
        // L0's sublevels, recomputed only when L0 changed.
        let l0_changed = e.added.iter().any(|f| f.level == 0) || e.removed.iter().any(|r| r.0 == 0);
        let prev = steps.last();
        if l0_changed || prev.is_none() {
            let shape = inspect::l0_sublevels(tree.files(0));
            for f in tree.files(0) {
                let p = live[&(0, f.number)];
                let s = shape.sublevel.get(&f.number).copied().unwrap_or(0);
                if sublevel_of.insert(p, s) != Some(s) {
                    step.sublevel_changes.push((p, s));
                }
            }
            step.l0_sublevels = shape.num_sublevels;
            step.read_amp = shape.read_amplification;
        } else if let Some(p) = prev {
            step.l0_sublevels = p.l0_sublevels;
            step.read_amp = p.read_amp;
        }
        step.l0_files = tree.files(0).len();
        // Kept as running sums: summing a level of thousands of files at
        // every one of 100,000 steps would dominate the build.
        for &p in &step.removed {
            let f = &placements[p].file;
            level_bytes[f.level] -= f.size;
        }
        for &p in &step.added {
            let f = &placements[p].file;
            level_bytes[f.level] += f.size;
        }
        step.level_bytes = level_bytes;
        // Read amplification: L0's depth plus one per non-empty level.
        step.read_amp += (1..LEVELS).filter(|&l| !tree.files(l).is_empty()).count();
        steps.push(step);
    }
    // Stops that ended between two steps go to the later one.
    let mut next_step = 0usize;
    for (i, r) in events.iter().enumerate() {
        if let Some(&s) = step_of_event.get(&i) {
            next_step = s + 1;
        } else if let Event::WriteStallEnd { micros, .. } = &r.event {
            let last = steps.len().saturating_sub(1);
            if let Some(s) = steps.get_mut(next_step.min(last)) {
                s.stalls.0 += 1;
                s.stalls.1 += micros;
            }
        }
    }
    let unmatched = steps.iter().filter(|s| s.kind == StepKind::Edit).count();
    if unmatched > 0 {
        notes.push(format!(
            "{unmatched} version edits have no matching event (EVENTS incomplete or older than the MANIFEST)"
        ));
    }
    Ok(History {
        manifest: manifest.path.display().to_string(),
        placements,
        steps,
        keys: key_set.into_iter().collect(),
        bookkeeping_edits: bookkeeping,
        notes,
    })
}

fn describe(step: &mut Step, r: &EventRecord) {
    step.time = r.time;
    match &r.event {
        Event::Open { .. } => step.kind = StepKind::Open,
        Event::FlushEnd {
            job,
            bytes_written,
            micros,
            ..
        } => {
            step.kind = StepKind::Flush;
            step.job = *job;
            step.bytes_written = *bytes_written;
            step.micros = *micros;
        }
        Event::CompactionEnd {
            job,
            reason,
            start_level,
            output_level,
            moved,
            bytes_read,
            bytes_written,
            micros,
            ..
        } => {
            step.kind = if *moved {
                StepKind::Move
            } else {
                StepKind::Compaction
            };
            step.job = *job;
            step.reason = reason.clone();
            step.start_level = *start_level;
            step.output_level = *output_level;
            step.bytes_read = *bytes_read;
            step.bytes_written = *bytes_written;
            step.micros = *micros;
        }
        Event::Ingest {
            sequence,
            flushable,
            added,
            ..
        } => {
            step.kind = if *flushable == Some(true) {
                StepKind::IngestFlushable
            } else {
                StepKind::Ingest
            };
            step.job = *sequence;
            step.bytes_written = added.iter().map(|f| f.size).sum();
        }
        _ => {}
    }
}
