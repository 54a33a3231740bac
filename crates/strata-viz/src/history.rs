//! The history of a tree across every open the logs remember: each change
//! to the tree (a *step*) with the engine event that made it and the
//! figures the page charts per step; each completed checkpoint is a step
//! too, one that changes nothing. Built only from `strata::inspect`
//! (read-only).
//!
//! Two sources, joined at the current MANIFEST's first record:
//! - **earlier sessions** come from the `EVENTS` log alone (each open
//!   rewrites the MANIFEST, so their edits are gone): every tree-changing
//!   event is a step, and an `open` or `log_rolled` event, which carries
//!   the whole tree, is a step that sets the tree to its files (the
//!   difference from the replayed tree, normally none, is what recovery
//!   flushed at open or what a crash kept out of the log);
//! - **the current MANIFEST** is authoritative from its first record (a
//!   snapshot of the tree) on: every edit that changes the tree is a step,
//!   matched to the event with exactly the same added and removed (level,
//!   file number) pairs, so a match is never a guess; an edit without one
//!   is shown as a plain "version edit".
//!
//! The join: the MANIFEST's snapshot is the `open` event of the current
//! session when that open's tree is the MANIFEST's tree at its snapshot or
//! after the recovery edits right behind it; otherwise (the MANIFEST was
//! rewritten mid-session on outgrowing its size) the last point in the log
//! where the replayed tree equals the snapshot; events from there on belong
//! to the MANIFEST's part.
//!
//! Invariants:
//! - step 0 is the oldest tree the logs hold; step `i` is the tree after
//!   applying steps `0..=i`;
//! - the MANIFEST's first record is always a step, and every later
//!   MANIFEST edit that changes the tree or queues an ingestion is one, in
//!   order, so the steps from there on, less the checkpoint steps, equal
//!   the MANIFEST's edits;
//! - a completed checkpoint (a `checkpoint` event) is a step that changes
//!   nothing, after the steps of the tree-changing events logged before it
//!   and before those logged after it, so its tree is the one it copied
//!   (less the work of a compaction that ended while it linked its files:
//!   the event logs the number of tables it holds, which the page shows);
//! - a file *placement* is one file at one level from the step that added
//!   it until the step that removed it (a move to the next level is a new
//!   placement of the same file number);
//! - replaying the log is lenient (a removal of a file the replay does not
//!   hold is skipped and counted in a note, never a failure): the log is
//!   not synced, so a crash may lose its last events, and the next open's
//!   whole tree repairs the replay;
//! - the sublevels of each step's L0 come from `strata::inspect::l0_sublevels`,
//!   the engine's own code.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::Path;
use strata::events::{Event, EventRecord};
use strata::inspect::{self, ManifestEdit, ManifestHistory, TableInfo, LEVELS};

/// What made a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// An open: the whole tree the database recovered (`job` is the
    /// session's number in the history, 0 when the history starts in the
    /// middle of a session because older log segments were deleted).
    Open = 0,
    /// A flush of a memtable into L0.
    Flush = 1,
    /// A compaction that rewrote its inputs.
    Compaction = 2,
    /// A compaction that moved one file down a level.
    Move = 3,
    /// An ingestion placed directly.
    Ingest = 4,
    /// An ingestion that waited behind a memtable and is now placed.
    IngestFlushable = 5,
    /// An ingestion's files queued behind an overlapping memtable (not in
    /// the tree yet).
    IngestQueued = 6,
    /// An edit no event explains.
    Edit = 7,
    /// A completed checkpoint: a copy of the tree as it stood (changes
    /// nothing; [`Step::checkpoint`] says where to and what it holds).
    Checkpoint = 8,
}

impl StepKind {
    /// Whether the step is an ingestion's (placed, placed after waiting,
    /// or queued).
    pub fn is_ingestion(self) -> bool {
        matches!(
            self,
            StepKind::Ingest | StepKind::IngestFlushable | StepKind::IngestQueued
        )
    }
}

/// One step of the timeline.
#[derive(Clone, Debug)]
pub struct Step {
    /// What made it.
    pub kind: StepKind,
    /// Placements added (indices into [`History::placements`]).
    pub added: Vec<usize>,
    /// Placements removed (indices into [`History::placements`]).
    pub removed: Vec<usize>,
    /// The event's time (seconds since the epoch), 0 if unmatched.
    pub time: f64,
    /// The flush or compaction job, the ingestion's or checkpoint's
    /// sequence number, or the session number of an open.
    pub job: u64,
    /// The compaction's reason (`recovery` for an edit an open made).
    pub reason: String,
    /// The compaction's start level.
    pub start_level: usize,
    /// The compaction's output level.
    pub output_level: usize,
    /// Bytes read (compactions).
    pub bytes_read: u64,
    /// Bytes written (flushes, compactions, ingestions).
    pub bytes_written: u64,
    /// How long the work took (a checkpoint's, its flush included).
    pub micros: u64,
    /// Write stops that ended since the previous step: count, microseconds.
    pub stalls: (u64, u64),
    /// Import phases, as text (`stock: read 12000 rows, 1.2 MiB in 0.35
    /// s`): those that ended since the previous step, or, for an
    /// ingestion, those whose time span holds it (an import's ingestion in
    /// its `ingest` phase).
    pub imports: Vec<String>,
    /// Files in L0 after this step.
    pub l0_files: usize,
    /// Sublevels of L0 after this step.
    pub l0_sublevels: usize,
    /// Read amplification after this step (L0 depth + non-empty levels).
    pub read_amp: usize,
    /// Bytes per level after this step.
    pub level_bytes: [u64; LEVELS],
    /// Bytes written by flushes and ingestions so far (incoming).
    pub incoming: u64,
    /// Bytes written by compactions so far: write amplification is
    /// `(incoming + compacted) / incoming`.
    pub compacted: u64,
    /// Placements whose sublevel changed (or was first set) at this step.
    pub sublevel_changes: Vec<(usize, usize)>,
    /// A checkpoint step's copy (`None` for every other kind).
    pub checkpoint: Option<CheckpointCopy>,
}

/// Where a checkpoint went and what it holds (from its event).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointCopy {
    /// The checkpoint's directory.
    pub dir: String,
    /// Table files in it.
    pub tables: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Tables hard-linked to the database's files.
    pub linked: usize,
    /// Tables copied (another file system).
    pub copied: usize,
}

impl Step {
    fn new(kind: StepKind) -> Step {
        Step {
            kind,
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
            imports: Vec::new(),
            l0_files: 0,
            l0_sublevels: 0,
            read_amp: 0,
            level_bytes: [0; LEVELS],
            incoming: 0,
            compacted: 0,
            sublevel_changes: Vec::new(),
            checkpoint: None,
        }
    }
}

/// One file at one level for a span of steps.
#[derive(Clone, Debug)]
pub struct Placement {
    /// The file (its level is the placement's).
    pub file: TableInfo,
    /// The step that added it.
    pub born: usize,
    /// The step that removed it, if one did.
    pub died: Option<usize>,
}

/// The whole history.
#[derive(Clone, Debug)]
pub struct History {
    /// The MANIFEST read.
    pub manifest: String,
    /// Every placement, in the order the steps add them.
    pub placements: Vec<Placement>,
    /// Every step, oldest first.
    pub steps: Vec<Step>,
    /// The first step that comes from the current MANIFEST (the steps
    /// before it come from the `EVENTS` log of earlier sessions).
    pub manifest_start: usize,
    /// Every distinct file bound, sorted: a key's position on the x axis is
    /// its index here.
    pub keys: Vec<Vec<u8>>,
    /// MANIFEST edits that changed nothing the picture shows (WAL
    /// bookkeeping).
    pub bookkeeping_edits: usize,
    /// Notes for the reader (unknown event kinds, torn lines, ...).
    pub notes: Vec<String>,
}

/// The (level, number) pairs an edit or event adds and removes, sorted.
type Signature = (Vec<(usize, u64)>, Vec<(usize, u64)>);

fn signature(
    added: impl Iterator<Item = (usize, u64)>,
    removed: impl Iterator<Item = (usize, u64)>,
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
    for file in &events.torn {
        notes.push(format!(
            "the last line of {file} was cut short (a crash, or a write in progress) and is skipped"
        ));
    }
    for (file, line, offset, what) in events.damaged.iter().take(3) {
        notes.push(format!(
            "{file} line {line} (offset {offset}) is damaged and skipped ({what}); the \
             chart may miss that event"
        ));
    }
    if events.damaged.len() > 3 {
        notes.push(format!(
            "{} more damaged lines skipped",
            events.damaged.len() - 3
        ));
    }
    for (file, line, kind) in events.unknown.iter().take(3) {
        notes.push(format!(
            "{file} line {line}: unknown event kind {kind:?} skipped"
        ));
    }
    if events.unknown.len() > 3 {
        notes.push(format!(
            "{} more lines of unknown kinds skipped",
            events.unknown.len() - 3
        ));
    }
    build(&manifest, &events.records, notes)
}

/// A set of (level, number) pairs as a count and an order-free hash, so
/// two trees compare in O(1) while one of them is replayed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SetHash(usize, u64);

fn mix(level: usize, number: u64) -> u64 {
    let mut z = number
        .wrapping_mul(8)
        .wrapping_add(level as u64)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SetHash {
    fn of(files: &[TableInfo]) -> SetHash {
        let mut h = SetHash::default();
        for f in files {
            h.toggle(f.level, f.number);
        }
        h
    }
    fn toggle(&mut self, level: usize, number: u64) {
        self.1 ^= mix(level, number);
    }
}

/// The set replay used to find where the MANIFEST joins the log.
#[derive(Default)]
struct SetReplay {
    live: HashSet<(usize, u64)>,
    hash: SetHash,
}

impl SetReplay {
    fn apply(&mut self, e: &Event) {
        if let Some(files) = e.whole_tree() {
            self.live = files.iter().map(|f| (f.level, f.number)).collect();
            self.hash = SetHash::of(files);
            self.hash.0 = self.live.len();
        } else if let Some((added, removed)) = e.tree_change() {
            for f in removed {
                if self.live.remove(&(f.level, f.number)) {
                    self.hash.toggle(f.level, f.number);
                }
            }
            for f in added {
                if self.live.insert((f.level, f.number)) {
                    self.hash.toggle(f.level, f.number);
                }
            }
            self.hash.0 = self.live.len();
        }
    }
}

/// Where the MANIFEST joins the log.
struct Join {
    /// Events before this index are earlier history.
    boundary: usize,
    /// The `open` event the MANIFEST's snapshot stands for, if any.
    open: Option<usize>,
    /// MANIFEST edits after the snapshot an open made (recovery).
    recovery_edits: usize,
}

/// The tree-changing events (not the whole-tree ones) by signature, in log
/// order.
fn events_by_signature(events: &[EventRecord]) -> HashMap<Signature, VecDeque<usize>> {
    let mut by_sig: HashMap<Signature, VecDeque<usize>> = HashMap::new();
    for (i, r) in events.iter().enumerate() {
        if r.event.whole_tree().is_some() {
            continue;
        }
        if let Some((added, removed)) = r.event.tree_change() {
            let sig = signature(
                added.iter().map(|f| (f.level, f.number)),
                removed.iter().map(|f| (f.level, f.number)),
            );
            by_sig.entry(sig).or_default().push_back(i);
        }
    }
    by_sig
}

fn find_join(
    manifest: &ManifestHistory,
    events: &[EventRecord],
    by_sig: &HashMap<Signature, VecDeque<usize>>,
) -> Join {
    // The first event a later MANIFEST edit matches bounds the join.
    let mut first_matched_edit = manifest.edits.len();
    let mut bound = events.len();
    for (ei, e) in manifest.edits.iter().enumerate().skip(1) {
        if !e.changes_tree() {
            continue;
        }
        if let Some(&i) = by_sig.get(&edit_signature(e)).and_then(|q| q.front()) {
            first_matched_edit = ei;
            bound = i;
            break;
        }
    }
    let open = events[..bound]
        .iter()
        .rposition(|r| matches!(r.event, Event::Open { .. }));
    // The MANIFEST's tree at its snapshot and after each unmatched edit
    // right behind it (what recovery wrote at open).
    if let Some(o) = open {
        if let Some(files) = events[o].event.whole_tree() {
            let mut want = SetHash::of(files);
            want.0 = files.len();
            let mut tree: HashSet<(usize, u64)> = HashSet::new();
            let mut h = SetHash::default();
            for (ei, e) in manifest
                .edits
                .iter()
                .enumerate()
                .take(first_matched_edit.min(64))
            {
                for &(l, n) in &e.removed {
                    if tree.remove(&(l, n)) {
                        h.toggle(l, n);
                    }
                }
                for f in &e.added {
                    if tree.insert((f.level, f.number)) {
                        h.toggle(f.level, f.number);
                    }
                }
                h.0 = tree.len();
                if h == want {
                    return Join {
                        boundary: o,
                        open: Some(o),
                        recovery_edits: ei,
                    };
                }
            }
        }
    }
    // Otherwise the last point before the bound where the log's tree is
    // the snapshot.
    let mut want = SetHash::of(&manifest.edits[0].added);
    want.0 = manifest.edits[0].added.len();
    let mut replay = SetReplay::default();
    let mut last_equal = (want == replay.hash).then_some(0);
    for (i, r) in events[..bound].iter().enumerate() {
        replay.apply(&r.event);
        if replay.hash == want {
            last_equal = Some(i + 1);
        }
    }
    match (last_equal, open) {
        (Some(b), _) => Join {
            boundary: b,
            open: None,
            recovery_edits: 0,
        },
        (None, Some(o)) => Join {
            boundary: o,
            open: Some(o),
            recovery_edits: 0,
        },
        (None, None) => Join {
            boundary: bound,
            open: None,
            recovery_edits: 0,
        },
    }
}

fn edit_signature(e: &ManifestEdit) -> Signature {
    signature(
        e.added.iter().map(|f| (f.level, f.number)),
        e.removed.iter().copied(),
    )
}

/// Applies changes to the tree and records them as steps.
struct Builder {
    live: HashMap<(usize, u64), usize>,
    /// L0's placements by file number (sublevels are computed from them).
    l0: BTreeMap<u64, usize>,
    files_per_level: [usize; LEVELS],
    placements: Vec<Placement>,
    steps: Vec<Step>,
    key_set: BTreeSet<Vec<u8>>,
    sublevel_of: HashMap<usize, usize>,
    level_bytes: [u64; LEVELS],
    incoming: u64,
    compacted: u64,
    /// Removals of files the replay did not hold (the log missed events).
    missing: usize,
    /// L0's read amplification after the last step.
    l0_read_amp: usize,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            live: HashMap::new(),
            l0: BTreeMap::new(),
            files_per_level: [0; LEVELS],
            placements: Vec::new(),
            steps: Vec::new(),
            key_set: BTreeSet::new(),
            sublevel_of: HashMap::new(),
            level_bytes: [0; LEVELS],
            incoming: 0,
            compacted: 0,
            missing: 0,
            l0_read_amp: 0,
        }
    }

    /// What turns the tree into exactly `files`: (added, removed).
    fn diff_to(&self, files: &[TableInfo]) -> (Vec<TableInfo>, Vec<(usize, u64)>) {
        let want: HashSet<(usize, u64)> = files.iter().map(|f| (f.level, f.number)).collect();
        let mut removed: Vec<(usize, u64)> = self
            .live
            .keys()
            .filter(|k| !want.contains(k))
            .copied()
            .collect();
        removed.sort_unstable();
        let added = files
            .iter()
            .filter(|f| !self.live.contains_key(&(f.level, f.number)))
            .cloned()
            .collect();
        (added, removed)
    }

    /// Applies `added`/`removed` as `step` (already described).
    fn push(&mut self, added: &[TableInfo], removed: &[(usize, u64)], mut step: Step) {
        let here = self.steps.len();
        let mut l0_changed = false;
        for &(level, n) in removed {
            let Some(p) = self.live.remove(&(level, n)) else {
                self.missing += 1;
                continue;
            };
            self.placements[p].died = Some(here);
            step.removed.push(p);
            self.sublevel_of.remove(&p);
            self.files_per_level[level] -= 1;
            let f = &self.placements[p].file;
            self.level_bytes[level] -= f.size;
            if level == 0 {
                self.l0.remove(&n);
                l0_changed = true;
            }
        }
        for f in added {
            if f.level >= LEVELS {
                continue;
            }
            if self.live.contains_key(&(f.level, f.number)) {
                // Already there (a log that repeats itself): keep the first.
                continue;
            }
            self.key_set.insert(f.smallest.clone());
            self.key_set.insert(f.largest.clone());
            let p = self.placements.len();
            self.live.insert((f.level, f.number), p);
            step.added.push(p);
            self.files_per_level[f.level] += 1;
            self.level_bytes[f.level] += f.size;
            if f.level == 0 {
                self.l0.insert(f.number, p);
                l0_changed = true;
            }
            self.placements.push(Placement {
                file: f.clone(),
                born: here,
                died: None,
            });
        }
        let added_bytes: u64 = added.iter().map(|f| f.size).sum();
        match step.kind {
            StepKind::Flush | StepKind::Ingest | StepKind::IngestFlushable => {
                self.incoming += added_bytes
            }
            StepKind::Compaction => self.compacted += step.bytes_written,
            // An unexplained edit or an open's difference that only adds
            // files brought new data (a recovery flush, say).
            StepKind::Edit | StepKind::Open if here > 0 && removed.is_empty() => {
                self.incoming += added_bytes
            }
            _ => {}
        }
        step.incoming = self.incoming;
        step.compacted = self.compacted;
        // L0's sublevels, recomputed only when L0 changed.
        if l0_changed || here == 0 {
            let files: Vec<&TableInfo> = self
                .l0
                .values()
                .map(|&p| &self.placements[p].file)
                .collect();
            let shape = inspect::l0_sublevels(&files);
            for (&n, &p) in &self.l0 {
                let s = shape.sublevel.get(&n).copied().unwrap_or(0);
                if self.sublevel_of.insert(p, s) != Some(s) {
                    step.sublevel_changes.push((p, s));
                }
            }
            step.l0_sublevels = shape.num_sublevels;
            self.l0_read_amp = shape.read_amplification;
        } else if let Some(prev) = self.steps.last() {
            step.l0_sublevels = prev.l0_sublevels;
        }
        step.read_amp = self.l0_read_amp;
        step.l0_files = self.l0.len();
        step.level_bytes = self.level_bytes;
        // Read amplification: L0's depth plus one per non-empty level.
        step.read_amp += (1..LEVELS).filter(|&l| self.files_per_level[l] > 0).count();
        self.steps.push(step);
    }
}

/// Builds the history from the current MANIFEST's edits and the event log
/// (every segment, oldest first).
pub fn build(
    manifest: &ManifestHistory,
    events: &[EventRecord],
    mut notes: Vec<String>,
) -> strata::Result<History> {
    let mut by_sig = events_by_signature(events);
    let join = find_join(manifest, events, &by_sig);
    let mut b = Builder::new();
    let mut step_of_event: HashMap<usize, usize> = HashMap::new();
    let mut sessions = 0u64;

    // Earlier sessions, from the log.
    for (i, r) in events[..join.boundary].iter().enumerate() {
        if let Some(files) = r.event.whole_tree() {
            let is_open = matches!(r.event, Event::Open { .. });
            let (added, removed) = b.diff_to(files);
            if is_open {
                sessions += 1;
            } else if !b.steps.is_empty() && added.is_empty() && removed.is_empty() {
                // A new log segment: nothing happened to the tree.
                continue;
            }
            let mut step = Step::new(StepKind::Open);
            step.time = r.time;
            step.job = if is_open { sessions } else { 0 };
            if !is_open && !b.steps.is_empty() {
                step.kind = StepKind::Edit;
                step.reason = "log segment".into();
            }
            step_of_event.insert(i, b.steps.len());
            b.push(&added, &removed, step);
        } else if let Some((added, removed)) = r.event.tree_change() {
            let mut step = Step::new(StepKind::Edit);
            describe(&mut step, r);
            step_of_event.insert(i, b.steps.len());
            let removed: Vec<(usize, u64)> = removed.iter().map(|f| (f.level, f.number)).collect();
            b.push(added, &removed, step);
        } else if matches!(r.event, Event::Checkpoint { .. }) {
            push_checkpoint(&mut b, &mut step_of_event, i, r);
        }
    }
    let missing_in_log = b.missing;
    // The current session's checkpoints, in log order: each goes in before
    // the first step whose event the log holds after it.
    let mut checkpoints: VecDeque<usize> = (join.boundary..events.len())
        .filter(|&i| matches!(events[i].event, Event::Checkpoint { .. }))
        .collect();

    // The current MANIFEST: its snapshot, then its edits.
    let manifest_start = b.steps.len();
    let mut bookkeeping = 0;
    for (ei, e) in manifest.edits.iter().enumerate() {
        if ei == 0 {
            let (added, removed) = b.diff_to(&e.added);
            let mut step = Step::new(StepKind::Edit);
            step.reason = "new MANIFEST".into();
            if let Some(o) = join.open {
                sessions += 1;
                step.kind = StepKind::Open;
                step.time = events[o].time;
                step.job = sessions;
                step.reason.clear();
                step_of_event.insert(o, b.steps.len());
            } else if b.steps.is_empty() {
                step.kind = StepKind::Open;
                step.reason.clear();
            }
            b.push(&added, &removed, step);
            continue;
        }
        if !e.changes_tree() && e.queued.is_empty() {
            bookkeeping += 1;
            continue;
        }
        // Events before the join are earlier history, never a match.
        let matched = by_sig.get_mut(&edit_signature(e)).and_then(|q| {
            while q.front().is_some_and(|&i| i < join.boundary) {
                q.pop_front();
            }
            q.pop_front()
        });
        let mut step = Step::new(if !e.changes_tree() {
            StepKind::IngestQueued
        } else {
            StepKind::Edit
        });
        if let Some(i) = matched {
            while let Some(&c) = checkpoints.front().filter(|&&c| c < i) {
                checkpoints.pop_front();
                push_checkpoint(&mut b, &mut step_of_event, c, &events[c]);
            }
            step_of_event.insert(i, b.steps.len());
            describe(&mut step, &events[i]);
        } else if ei <= join.recovery_edits {
            step.reason = "recovery".into();
        }
        if step.kind == StepKind::IngestQueued {
            step.bytes_written = e.queued.iter().map(|f| f.size).sum();
        }
        b.push(&e.added, &e.removed, step);
    }
    for c in checkpoints {
        push_checkpoint(&mut b, &mut step_of_event, c, &events[c]);
    }
    // Stops and import phases that ended between two steps go to the
    // later one.
    // An import phase that an ingestion happened within (an import's
    // ingestion inside its `ingest` phase) goes to that step. Only an
    // ingestion: a flush or compaction that ran during an import's `read`
    // phase is not the import's work, and taking the phase would split
    // one import's phases over two steps (a flush's end event can be
    // delivered just after `Db::flush` returns, inside the next import's
    // first phase).
    // Then each import's earlier phases go where its `ingest` phase went:
    // a flush or compaction the machine ran between two of its phases (one
    // scheduled late, under load) would otherwise take the phases that
    // ended before it and split the import over two steps.
    let mut steps = b.steps;
    let mut next_step = 0usize;
    let mut prev_step: Option<usize> = None;
    let last = steps.len().saturating_sub(1);
    // (step, import, whether it is the `ingest` phase, the line shown).
    let mut phases: Vec<(usize, &str, bool, String)> = Vec::new();
    for (i, r) in events.iter().enumerate() {
        if let Some(&s) = step_of_event.get(&i) {
            next_step = s + 1;
            prev_step = Some(s);
            continue;
        }
        let within = match (&r.event, prev_step) {
            (Event::ImportPhase { micros, .. }, Some(p))
                if steps[p].kind.is_ingestion()
                    && steps[p].time >= r.time - *micros as f64 / 1e6 =>
            {
                Some(p)
            }
            _ => None,
        };
        let target = within.unwrap_or(next_step.min(last));
        let Some(s) = steps.get_mut(target) else {
            continue;
        };
        match &r.event {
            Event::WriteStallEnd { micros, .. } => {
                s.stalls.0 += 1;
                s.stalls.1 += micros;
            }
            Event::ImportPhase {
                import,
                phase,
                rows,
                bytes,
                micros,
            } => phases.push((
                target,
                import,
                phase == "ingest",
                format!(
                    "{import}: {phase} {rows} rows, {} in {:.2} s",
                    crate::text::bytes(*bytes),
                    *micros as f64 / 1e6
                ),
            )),
            _ => {}
        }
    }
    let mut pending: HashMap<&str, Vec<usize>> = HashMap::new();
    for i in 0..phases.len() {
        let (step, import, ingest, _) = phases[i];
        if !ingest {
            pending.entry(import).or_default().push(i);
            continue;
        }
        for j in pending.remove(import).unwrap_or_default() {
            phases[j].0 = step;
        }
    }
    for (step, _, _, line) in phases {
        if let Some(s) = steps.get_mut(step) {
            s.imports.push(line);
        }
    }
    if manifest_start > 0 {
        notes.push(format!(
            "steps 0–{} come from the EVENTS log of earlier sessions, the rest from the current MANIFEST",
            manifest_start - 1
        ));
    }
    if missing_in_log > 0 {
        notes.push(format!(
            "{missing_in_log} removals in the EVENTS log name files its replay did not hold (events lost in a crash); the next open's tree corrects it"
        ));
    }
    let unmatched = steps[manifest_start..]
        .iter()
        .filter(|s| s.kind == StepKind::Edit && s.reason.is_empty())
        .count();
    if unmatched > 0 {
        notes.push(format!(
            "{unmatched} version edits have no matching event (EVENTS incomplete or older than the MANIFEST)"
        ));
    }
    if steps.is_empty() {
        steps.push(Step::new(StepKind::Open));
    }
    Ok(History {
        manifest: manifest.path.display().to_string(),
        placements: b.placements,
        steps,
        manifest_start,
        keys: b.key_set.into_iter().collect(),
        bookkeeping_edits: bookkeeping,
        notes,
    })
}

/// A checkpoint step for event `i` (`r`), changing nothing.
fn push_checkpoint(
    b: &mut Builder,
    step_of_event: &mut HashMap<usize, usize>,
    i: usize,
    r: &EventRecord,
) {
    let mut step = Step::new(StepKind::Checkpoint);
    describe(&mut step, r);
    step_of_event.insert(i, b.steps.len());
    b.push(&[], &[], step);
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
        Event::Checkpoint {
            dir,
            sequence,
            tables,
            bytes,
            linked,
            copied,
            micros,
        } => {
            step.kind = StepKind::Checkpoint;
            step.job = *sequence;
            step.micros = *micros;
            step.checkpoint = Some(CheckpointCopy {
                dir: dir.clone(),
                tables: *tables,
                bytes: *bytes,
                linked: *linked,
                copied: *copied,
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use std::path::PathBuf;

    fn file(level: usize, number: u64) -> TableInfo {
        TableInfo {
            level,
            number,
            size: 100,
            smallest: format!("k{number:03}a").into_bytes(),
            largest: format!("k{number:03}z").into_bytes(),
            largest_exclusive: false,
            smallest_seq: number,
            largest_seq: number,
            entries: Some(1),
            backing: None,
        }
    }

    fn rec(event: Event) -> EventRecord {
        EventRecord {
            v: 2,
            time: 1.0,
            event,
        }
    }

    fn flush(n: u64) -> EventRecord {
        rec(Event::FlushEnd {
            job: n,
            memtable: n,
            outputs: vec![file(0, n)],
            bytes_written: 100,
            micros: 1,
        })
    }

    fn edit(added: Vec<TableInfo>, removed: Vec<(usize, u64)>) -> ManifestEdit {
        ManifestEdit {
            offset: 0,
            added,
            removed,
            queued: vec![],
            last_sequence: None,
            next_file_number: None,
        }
    }

    fn trees(h: &History) -> Vec<Vec<(usize, u64)>> {
        (0..h.steps.len())
            .map(|i| {
                let mut v: Vec<_> = h
                    .placements
                    .iter()
                    .filter(|p| p.born <= i && p.died.is_none_or(|d| d > i))
                    .map(|p| (p.file.level, p.file.number))
                    .collect();
                v.sort_unstable();
                v
            })
            .collect()
    }

    /// A MANIFEST rewritten mid-session (no `open` at its snapshot) joins
    /// the log where the replayed tree equals its snapshot; a `log_rolled`
    /// that changes nothing is no step.
    #[test]
    fn a_manifest_rewritten_mid_session_joins_the_log() {
        let events = vec![
            rec(Event::Open { files: vec![] }),
            flush(1),
            flush(2),
            rec(Event::LogRolled {
                files: vec![file(0, 1), file(0, 2)],
            }),
            flush(3),
            rec(Event::CompactionEnd {
                job: 9,
                reason: "l0".into(),
                start_level: 0,
                output_level: 6,
                moved: false,
                cancelled: false,
                inputs: vec![file(0, 1), file(0, 2), file(0, 3)],
                outputs: vec![file(6, 4)],
                bytes_read: 300,
                bytes_written: 100,
                micros: 1,
            }),
            flush(5),
        ];
        let m = ManifestHistory {
            path: PathBuf::from("MANIFEST-000009"),
            edits: vec![
                edit(vec![file(6, 4)], vec![]),
                edit(vec![file(0, 5)], vec![]),
            ],
        };
        let h = build(&m, &events, vec![]).unwrap();
        let kinds: Vec<StepKind> = h.steps.iter().map(|s| s.kind).collect();
        use StepKind::*;
        assert_eq!(kinds, [Open, Flush, Flush, Flush, Compaction, Edit, Flush]);
        assert_eq!(h.manifest_start, 5);
        assert_eq!(h.steps[5].reason, "new MANIFEST");
        assert_eq!(
            trees(&h),
            [
                vec![],
                vec![(0, 1)],
                vec![(0, 1), (0, 2)],
                vec![(0, 1), (0, 2), (0, 3)],
                vec![(6, 4)],
                vec![(6, 4)],
                vec![(0, 5), (6, 4)],
            ]
        );
    }

    fn at(time: f64, event: Event) -> EventRecord {
        EventRecord { time, ..rec(event) }
    }

    fn phase(time: f64, name: &str, micros: u64) -> EventRecord {
        at(
            time,
            Event::ImportPhase {
                import: "t".into(),
                phase: name.into(),
                rows: 10,
                bytes: 100,
                micros,
            },
        )
    }

    /// An import's phases all go to its ingestion: the `ingest` phase that
    /// holds it, and the phases that ended before it, even when a flush
    /// ended inside the `read` phase (the flush is not the import's work)
    /// or between two phases (a flush a loaded machine ran late: the
    /// browser test's flake).
    /// A phase that no ingestion is inside goes to the next step.
    #[test]
    fn import_phases_go_to_the_ingestion_not_to_a_flush_inside_them() {
        let events = vec![
            at(1.0, Event::Open { files: vec![] }),
            // read: 1.0 .. 1.2, and a flush ends at 1.1, inside it.
            at(1.1, flush(1).event),
            phase(1.2, "read", 200_000),
            phase(1.3, "sort and write", 100_000),
            at(
                1.35,
                Event::Ingest {
                    sequence: 7,
                    flushable: Some(false),
                    excise: None,
                    added: vec![file(6, 2)],
                    removed: vec![],
                },
            ),
            phase(1.4, "ingest", 100_000),
            // An import whose read phase ended before a flush that ran
            // late: its phases all go to its ingestion all the same.
            phase(1.5, "read", 50_000),
            at(1.55, flush(8).event),
            phase(1.6, "sort and write", 10_000),
            at(
                1.65,
                Event::Ingest {
                    sequence: 9,
                    flushable: Some(false),
                    excise: None,
                    added: vec![file(6, 9)],
                    removed: vec![],
                },
            ),
            phase(1.7, "ingest", 100_000),
            // A second import whose read phase holds a flush, and which
            // fails before ingesting: its phase goes to the step after.
            at(2.1, flush(3).event),
            phase(2.2, "read", 200_000),
            at(2.5, flush(4).event),
        ];
        let m = ManifestHistory {
            path: PathBuf::from("MANIFEST-000005"),
            edits: vec![
                edit(vec![], vec![]),
                edit(vec![file(0, 1)], vec![]),
                edit(vec![file(6, 2)], vec![]),
                edit(vec![file(0, 8)], vec![]),
                edit(vec![file(6, 9)], vec![]),
                edit(vec![file(0, 3)], vec![]),
                edit(vec![file(0, 4)], vec![]),
            ],
        };
        let h = build(&m, &events, vec![]).unwrap();
        let s: Vec<(StepKind, Vec<&str>)> = h
            .steps
            .iter()
            .map(|s| {
                let phases = s
                    .imports
                    .iter()
                    .map(|t| t.split(' ').nth(1).unwrap_or(""))
                    .collect();
                (s.kind, phases)
            })
            .collect();
        use StepKind::*;
        assert_eq!(
            s,
            [
                (Open, vec![]),
                (Flush, vec![]),
                (Ingest, vec!["read", "sort", "ingest"]),
                (Flush, vec![]),
                (Ingest, vec!["read", "sort", "ingest"]),
                (Flush, vec![]),
                (Flush, vec!["read"]),
            ]
        );
    }

    fn checkpoint(dir: &str, sequence: u64, tables: usize) -> EventRecord {
        rec(Event::Checkpoint {
            dir: dir.into(),
            sequence,
            tables,
            bytes: 100 * tables as u64,
            linked: tables,
            copied: 0,
            micros: 7,
        })
    }

    /// A checkpoint is a step that changes nothing, in an earlier session
    /// (from the log) and in the current one (between the MANIFEST's
    /// edits, after the step of the event logged before it), so the tree
    /// at it is the tree it copied; it carries its directory and tables.
    /// Checkpoints used to leave no trace on the timeline.
    #[test]
    fn a_checkpoint_is_a_step_between_the_events_around_it() {
        let events = vec![
            rec(Event::Open { files: vec![] }),
            flush(1),
            checkpoint("/cp/a", 5, 1),
            flush(2),
            rec(Event::Open {
                files: vec![file(0, 1), file(0, 2)],
            }),
            flush(3),
            checkpoint("/cp/b", 9, 3),
            flush(4),
            checkpoint("/cp/c", 12, 4),
        ];
        let m = ManifestHistory {
            path: PathBuf::from("MANIFEST-000005"),
            edits: vec![
                edit(vec![file(0, 1), file(0, 2)], vec![]),
                edit(vec![file(0, 3)], vec![]),
                edit(vec![file(0, 4)], vec![]),
            ],
        };
        let h = build(&m, &events, vec![]).unwrap();
        use StepKind::*;
        let kinds: Vec<StepKind> = h.steps.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [Open, Flush, Checkpoint, Flush, Open, Flush, Checkpoint, Flush, Checkpoint]
        );
        assert_eq!(h.manifest_start, 4);
        let t = trees(&h);
        let l0 = |ns: &[u64]| ns.iter().map(|&n| (0, n)).collect::<Vec<_>>();
        assert_eq!(t[2], l0(&[1]));
        assert_eq!(t[6], l0(&[1, 2, 3]));
        assert_eq!(t[8], l0(&[1, 2, 3, 4]));
        for (step, dir, seq, tables) in
            [(2, "/cp/a", 5, 1), (6, "/cp/b", 9, 3), (8, "/cp/c", 12, 4)]
        {
            let s = &h.steps[step];
            assert!(s.added.is_empty() && s.removed.is_empty(), "step {step}");
            assert_eq!((s.job, s.micros), (seq, 7), "step {step}");
            let c = s.checkpoint.as_ref().unwrap();
            assert_eq!((c.dir.as_str(), c.tables, c.linked), (dir, tables, tables));
            assert_eq!(t[step].len(), tables, "the tree it copied");
        }
        assert!(h
            .steps
            .iter()
            .filter(|s| s.kind != Checkpoint)
            .all(|s| s.checkpoint.is_none()));
        // The page carries each one's copy at its step.
        let page = crate::html::render(&h, "/db");
        assert!(page.contains(
            r#""cp":[[2,"/cp/a",1,100,1,0],[6,"/cp/b",3,300,3,0],[8,"/cp/c",4,400,4,0]]"#
        ));
    }

    /// A log whose oldest kept segment starts with `log_rolled` starts the
    /// history there (session 0); a removal of a file the replay never
    /// held is skipped and noted.
    #[test]
    fn a_log_starting_mid_session_starts_the_history_there() {
        let events = vec![
            rec(Event::LogRolled {
                files: vec![file(6, 1)],
            }),
            rec(Event::CompactionEnd {
                job: 2,
                reason: "l0".into(),
                start_level: 0,
                output_level: 6,
                moved: false,
                cancelled: false,
                inputs: vec![file(0, 7), file(6, 1)],
                outputs: vec![file(6, 8)],
                bytes_read: 200,
                bytes_written: 100,
                micros: 1,
            }),
            rec(Event::Open {
                files: vec![file(6, 8), file(0, 9)],
            }),
            flush(10),
        ];
        let m = ManifestHistory {
            path: PathBuf::from("MANIFEST-000011"),
            edits: vec![
                edit(vec![file(6, 8)], vec![]),
                edit(vec![file(0, 9)], vec![]),
                edit(vec![file(0, 10)], vec![]),
            ],
        };
        let h = build(&m, &events, vec![]).unwrap();
        let s: Vec<(StepKind, u64, &str)> = h
            .steps
            .iter()
            .map(|s| (s.kind, s.job, s.reason.as_str()))
            .collect();
        use StepKind::*;
        assert_eq!(
            s,
            [
                (Open, 0, ""),
                (Compaction, 2, "l0"),
                (Open, 1, ""),
                (Edit, 0, "recovery"),
                (Flush, 10, ""),
            ]
        );
        assert_eq!(h.manifest_start, 2);
        assert!(
            h.notes.iter().any(|n| n.starts_with("1 removals")),
            "{:?}",
            h.notes
        );
        assert_eq!(trees(&h)[4], [(0, 9), (0, 10), (6, 8)]);
    }
}
