//! Engine events: what the database did, as one typed value per happening
//! (flushes, compactions, ingestions, write stalls, memtable rotations,
//! table files created and deleted, import phases, checkpoints), delivered
//! to an optional [`EventListener`] in [`Options`](crate::Options) (on a
//! thread of its own, with no lock held, so it may call back into the
//! database) and appended to the database's `EVENTS` log as JSON lines.
//!
//! The visualiser (`strata-viz`), the benchmarks and the tests all read
//! events through this one type ([`EventRecord`], parsed with
//! [`parse_events`]), so the log format has one definition.
//!
//! # The `EVENTS` format
//! One JSON object per line, each an [`EventRecord`]: `"v"` (the format
//! version, [`FORMAT_VERSION`]), `"time"` (seconds since the Unix epoch, as a
//! float), `"event"` (the kind, in `snake_case`), then the fields of that
//! kind. User keys are lower-case hex strings. The log is for people and
//! tools, never read by recovery.
//!
//! # Segments
//! The log is a sequence of files, each appended to and never rewritten:
//! `EVENTS` (the one being written) and `EVENTS.NNNNNN` (earlier ones, read
//! in number order before `EVENTS`). A read-write open continues the
//! previous session's `EVENTS` when it ends with a whole line, holds a
//! whole tree and has fewer than 4 MiB (`SEGMENT_BYTES`) after it; the open is
//! then written as a `reopen` line (below), not as the whole tree.
//! Otherwise (a first open, a torn last line, a full segment, a file
//! system that cannot append) the open renames the previous `EVENTS` to
//! the next number and starts a new one whose first tree-changing event is
//! [`Event::Open`] (only the `table_deleted` events of the files that open
//! cleans up come before it). A segment that outgrows `SEGMENT_BYTES`
//! is renamed the same way and the log continues in a new `EVENTS` that
//! starts with [`Event::LogRolled`] (the whole tree). So every segment's
//! tree changes start from the whole tree and it can be replayed on its
//! own, and the oldest segments are deleted while those kept exceed
//! 32 MiB (`KEEP_BYTES`). A crash can cut short only the last line of a segment;
//! a reader skips it and says so ([`ParsedEvents::torn`]).
//!
//! Why `reopen`: an `open` line carries the whole tree, so when every
//! open started a segment with one, N short sessions (one `strata kv put`
//! each, one more L0 file each) wrote N trees of up to N files: 300 such
//! opens left 300 segments and 5.6 MB of log for 300 keys. A `reopen` line
//! is `{"v":2,"time":..,"event":"reopen","added":[..],"removed":[..]}`:
//! the open's tree as a difference from the tree the segment's lines
//! before it describe (the file recovery flushed the last session's WAL
//! into, and what a crash kept from the log). It is not an [`Event`]:
//! [`parse_events`] replays the segment and hands it on as the
//! [`Event::Open`] it stands for (whole tree), and a listener hears the
//! `Open` as always; readers see no difference.
//!
//! Version 1 (before this module) had no `"v"` field and five kinds:
//! `open`, `flush`, `compaction`, `ingest`, `stall`, with `added`/`removed`
//! file lists. [`parse_events`] still reads those lines, converted to
//! [`Event::Open`], [`Event::FlushEnd`], [`Event::CompactionEnd`],
//! [`Event::Ingest`] (with `flushable: None`: version 1 did not record it)
//! and [`Event::WriteStallEnd`].
//!
//! Invariants:
//! - every event that changes the tree (`open`, `flush_end`,
//!   `compaction_end` unless cancelled, `ingest`) names every file it added
//!   and removed with its level, so replaying them from an `open` gives the
//!   tree after each change;
//! - events are written in the order they happened to the tree (each is
//!   recorded after its MANIFEST record), except `*_begin` events, which
//!   come before the work they announce;
//! - `open` and `log_rolled` carry the whole tree: a reader replaying the
//!   log sets its tree to their files (the difference from the replayed
//!   tree is what events a crash lost, or what recovery flushed at open);
//!   a `reopen` line is read as the `open` it stands for;
//! - a `reopen` line only follows a whole tree in its own segment;
//! - a reader skips kinds it does not know (a newer Strata may add some)
//!   rather than failing.

use crate::error::Result;
use crate::util::hex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

/// The `"v"` field written on every line. Version 1 had no such field.
pub const FORMAT_VERSION: u32 = 2;

/// The name of the event log in a database directory (the segment being
/// written; earlier segments are `EVENTS.NNNNNN`).
pub const EVENTS_FILE: &str = "EVENTS";

/// A segment of the log is closed (renamed to `EVENTS.NNNNNN`) once the
/// events after its opening tree exceed this many bytes. (The writer's
/// limits and segment names are the engine's business: readers take
/// whatever segments they find, `inspect::read_events`.)
pub(crate) const SEGMENT_BYTES: u64 = 4 << 20;

/// Closed segments are deleted, oldest first, while together they exceed
/// this many bytes (so the log takes at most about this plus one segment).
pub(crate) const KEEP_BYTES: u64 = 32 << 20;

/// The name of closed segment `n` (`EVENTS.000001`, ...).
pub(crate) fn segment_name(n: u64) -> String {
    format!("{EVENTS_FILE}.{n:06}")
}

/// The number of a closed segment's file name, if `name` is one.
pub(crate) fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(EVENTS_FILE)?.strip_prefix('.')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// One table file as an event (or a MANIFEST record) names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableInfo {
    /// The level the file is on (the level it left, for removed files).
    pub level: usize,
    /// The file number (`NNNNNN.sst`).
    pub number: u64,
    /// Bytes on disk (an estimate for a virtual file).
    pub size: u64,
    /// Smallest and largest user keys (range tombstones included).
    #[serde(with = "hex_bytes")]
    pub smallest: Vec<u8>,
    #[serde(with = "hex_bytes")]
    /// Largest user key.
    pub largest: Vec<u8>,
    /// The largest bound is a range tombstone's exclusive end: the file holds
    /// nothing at `largest` itself.
    #[serde(default, skip_serializing_if = "is_false")]
    pub largest_exclusive: bool,
    /// Smallest sequence number of the file's entries.
    pub smallest_seq: u64,
    /// Largest sequence number of the file's entries.
    pub largest_seq: u64,
    /// Entries in the file, when known (absent in version-1 logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u64>,
    /// For a virtual file (an excise's key range of another table), that
    /// table's number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing: Option<u64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl TableInfo {
    pub(crate) fn from_meta(level: usize, f: &crate::version::FileMeta) -> TableInfo {
        TableInfo {
            level,
            number: f.number,
            size: f.size,
            smallest: f.smallest_user_key().to_vec(),
            largest: f.largest_user_key().to_vec(),
            largest_exclusive: f.largest_is_exclusive(),
            smallest_seq: f.smallest_seq,
            largest_seq: f.largest_seq,
            entries: Some(f.num_entries),
            backing: f.backing,
        }
    }
}

/// A key range `[start, end)` (an ingestion's excise).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRange {
    #[serde(with = "hex_bytes")]
    /// First key of the range (inclusive).
    pub start: Vec<u8>,
    #[serde(with = "hex_bytes")]
    /// End of the range (exclusive).
    pub end: Vec<u8>,
}

/// What happened. New kinds may be added (hence `non_exhaustive`); readers
/// of a log skip kinds they do not know.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The database was opened; `files` is the whole tree it recovered.
    Open {
        /// Every table of the recovered tree, at its level.
        files: Vec<TableInfo>,
    },
    /// A flush of the oldest immutable memtable starts.
    FlushBegin {
        /// The job's number (unique within one open).
        job: u64,
        /// The memtable being flushed.
        memtable: u64,
    },
    /// A flush finished and its L0 files are in the tree.
    FlushEnd {
        /// The job's number, as in its `FlushBegin`.
        job: u64,
        /// The memtable flushed.
        memtable: u64,
        /// The L0 files written.
        outputs: Vec<TableInfo>,
        /// Bytes written to those files.
        bytes_written: u64,
        /// How long the flush took.
        micros: u64,
    },
    /// A compaction starts. `reason` is the picker's (`l0`, `size`,
    /// `intra-l0`, `manual`, ...).
    CompactionBegin {
        /// The job's number (unique within one open).
        job: u64,
        /// Why the picker chose it.
        reason: String,
        /// The level its first inputs come from.
        start_level: usize,
        /// The level its outputs go to.
        output_level: usize,
        /// The files it reads, at their levels.
        inputs: Vec<TableInfo>,
    },
    /// A compaction finished. A move relinks its single input one level
    /// down (`moved`, no bytes written); a cancelled one (an excise removed
    /// an input meanwhile) changed nothing. Each input and output carries
    /// its level.
    CompactionEnd {
        /// The job's number, as in its `CompactionBegin`.
        job: u64,
        /// Why the picker chose it.
        reason: String,
        /// The level its first inputs came from.
        start_level: usize,
        /// The level its outputs went to.
        output_level: usize,
        /// The single input was moved down a level, not rewritten.
        moved: bool,
        /// An excise took an input meanwhile; nothing changed.
        #[serde(default)]
        cancelled: bool,
        /// The files it read, at their levels.
        inputs: Vec<TableInfo>,
        /// The files it wrote, at the output level.
        outputs: Vec<TableInfo>,
        /// Bytes read from the inputs.
        bytes_read: u64,
        /// Bytes written to the outputs.
        bytes_written: u64,
        /// How long it took.
        micros: u64,
    },
    /// An ingestion is in the tree. `added` holds each ingested file at the
    /// level it landed on (and an excise's virtual files), `removed` what an
    /// excise took out. `flushable` says whether it waited in the immutable
    /// queue behind an overlapping memtable (`None` in version-1 logs).
    Ingest {
        /// The sequence number every ingested entry got.
        sequence: u64,
        /// Whether it waited in the immutable queue (`None`: not recorded).
        flushable: Option<bool>,
        /// The key range an excise cut out of the tree first, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        excise: Option<KeyRange>,
        /// The files put into the tree, at their levels.
        added: Vec<TableInfo>,
        /// The files an excise took out.
        removed: Vec<TableInfo>,
    },
    /// Writes stopped. `cause`: `stop: l0 sublevels` or `stop: memtable
    /// queue full`. (Slowdowns, which delay one write group a little, are
    /// counted in the metrics but not logged.)
    WriteStallBegin {
        /// Why writes stopped.
        cause: String,
    },
    /// Writes resumed after `micros`.
    WriteStallEnd {
        /// Why writes had stopped.
        cause: String,
        /// How long they were stopped.
        micros: u64,
    },
    /// A foreground write waited `micros` on `cause` (at least
    /// [`Options::slow_write_event`](crate::Options::slow_write_event));
    /// causes as in [`WriteWaitMetrics`](crate::WriteWaitMetrics).
    WriteWait {
        /// What the write waited on.
        cause: String,
        /// How long.
        micros: u64,
    },
    /// The active memtable `memtable` (writing to WAL `wal`) joined the
    /// immutable queue. `reason`: `full`, `flush` (asked for) or `ingest`
    /// (an overlapping ingestion queued behind it).
    MemtableRotated {
        /// The memtable that joined the queue.
        memtable: u64,
        /// The WAL it was written to.
        wal: u64,
        /// Why it was rotated.
        reason: String,
    },
    /// A flush or compaction (`reason`) started writing table `number`.
    TableCreated {
        /// The flush or compaction writing it.
        job: u64,
        /// The new table's file number.
        number: u64,
        /// `flush` or the compaction's reason.
        reason: String,
    },
    /// Table file `number` was deleted (no live version needs it).
    TableDeleted {
        /// The deleted table's file number.
        number: u64,
    },
    /// The previous segment of the `EVENTS` log reached 4 MiB
    /// and the log continues in a new one, which starts with this: `files`
    /// is the whole tree, so a reader can replay from here when older
    /// segments have been deleted. Written to the log only; a listener
    /// never receives it (nothing happened to the database).
    LogRolled {
        /// Every table of the tree, at its level.
        files: Vec<TableInfo>,
    },
    /// One phase of an import finished (reported by the importer through
    /// `Db::log_import_phase`); it changes
    /// nothing in the tree by itself (the ingestion that ends an import is
    /// its own [`Event::Ingest`]).
    ImportPhase {
        /// What is being imported (the importer's label, e.g. the tables).
        import: String,
        /// The phase: `read` (parse and encode rows), `sort`, `write`
        /// (table files), `ingest`; an importer may name others.
        phase: String,
        /// Rows the phase handled.
        rows: u64,
        /// Bytes the phase read or wrote (its main volume).
        bytes: u64,
        /// How long the phase took.
        micros: u64,
    },
    /// A checkpoint ([`Db::checkpoint`](crate::Db::checkpoint)) is
    /// complete: `dir` is a database of its own holding every operation
    /// numbered up to `sequence`. It changes nothing in this database's
    /// tree (the flush it starts with is its own `flush_end`). A failed
    /// checkpoint, which removes what it made, is not logged.
    Checkpoint {
        /// The checkpoint's directory (absolute, as the call named it:
        /// symbolic links not resolved).
        dir: String,
        /// It holds every operation numbered up to this, and none after.
        sequence: u64,
        /// Table files in it.
        tables: usize,
        /// Their bytes.
        bytes: u64,
        /// Tables hard-linked to this database's files.
        linked: usize,
        /// Tables copied (a hard link was not possible: another file
        /// system).
        copied: usize,
        /// How long the checkpoint took, its flush included.
        micros: u64,
    },
}

impl Event {
    /// The kind, as written in the `"event"` field.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Open { .. } => "open",
            Event::FlushBegin { .. } => "flush_begin",
            Event::FlushEnd { .. } => "flush_end",
            Event::CompactionBegin { .. } => "compaction_begin",
            Event::CompactionEnd { .. } => "compaction_end",
            Event::Ingest { .. } => "ingest",
            Event::WriteStallBegin { .. } => "write_stall_begin",
            Event::WriteStallEnd { .. } => "write_stall_end",
            Event::WriteWait { .. } => "write_wait",
            Event::MemtableRotated { .. } => "memtable_rotated",
            Event::TableCreated { .. } => "table_created",
            Event::TableDeleted { .. } => "table_deleted",
            Event::LogRolled { .. } => "log_rolled",
            Event::ImportPhase { .. } => "import_phase",
            Event::Checkpoint { .. } => "checkpoint",
        }
    }

    /// The files this event put into and took out of the tree, if it
    /// changed the tree (an `open` or `log_rolled` "adds" the whole tree:
    /// see [`Event::whole_tree`]).
    pub fn tree_change(&self) -> Option<(&[TableInfo], &[TableInfo])> {
        match self {
            Event::Open { files } | Event::LogRolled { files } => Some((files, &[])),
            Event::FlushEnd { outputs, .. } => Some((outputs, &[])),
            Event::CompactionEnd {
                inputs,
                outputs,
                cancelled: false,
                ..
            } => Some((outputs, inputs)),
            Event::Ingest { added, removed, .. } => Some((added, removed)),
            _ => None,
        }
    }
}

impl Event {
    /// The whole tree, for the events that carry it (`open`, `log_rolled`):
    /// a reader replaying the log replaces its tree with these files.
    pub fn whole_tree(&self) -> Option<&[TableInfo]> {
        match self {
            Event::Open { files } | Event::LogRolled { files } => Some(files),
            _ => None,
        }
    }
}

/// The tree as a log's events describe it, by (level, number).
pub(crate) type LogTree = BTreeMap<(usize, u64), TableInfo>;

/// Applies one event to `tree`: a whole tree replaces it, a tree change
/// removes then adds. The writer and [`parse_events`] replay with this one
/// rule, so a `reopen` line's difference, taken by the one, gives back
/// the same tree to the other.
pub(crate) fn apply_to_tree(tree: &mut LogTree, event: &Event) {
    if let Some(files) = event.whole_tree() {
        *tree = files
            .iter()
            .map(|f| ((f.level, f.number), f.clone()))
            .collect();
    } else if let Some((added, removed)) = event.tree_change() {
        for f in removed {
            tree.remove(&(f.level, f.number));
        }
        for f in added {
            tree.insert((f.level, f.number), f.clone());
        }
    }
}

/// A `reopen` line (see the module documentation), as written.
#[derive(Serialize, Deserialize)]
struct ReopenLine {
    v: u32,
    time: f64,
    event: String,
    added: Vec<TableInfo>,
    removed: Vec<TableInfo>,
}

/// The `reopen` line (no newline) for an open at `time` whose whole tree
/// is `files`, following a segment whose lines describe `before`.
pub(crate) fn reopen_line(time: f64, before: &LogTree, files: &[TableInfo]) -> String {
    let now: LogTree = files
        .iter()
        .map(|f| ((f.level, f.number), f.clone()))
        .collect();
    let added = now
        .iter()
        .filter(|(k, f)| before.get(k) != Some(f))
        .map(|(_, f)| f.clone())
        .collect();
    let removed = before
        .iter()
        .filter(|(k, f)| now.get(k) != Some(f))
        .map(|(_, f)| f.clone())
        .collect();
    serde_json::to_string(&ReopenLine {
        v: FORMAT_VERSION,
        time,
        event: "reopen".into(),
        added,
        removed,
    })
    .unwrap_or_default()
}

/// One line of the `EVENTS` log: an event and when it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Format version ([`FORMAT_VERSION`]; 1 for lines of the old format).
    pub v: u32,
    /// Seconds since the Unix epoch.
    pub time: f64,
    #[serde(flatten)]
    /// What happened.
    pub event: Event,
}

impl EventRecord {
    /// The line written to the log (no newline).
    pub fn to_json(&self) -> String {
        // Serialising these plain structs cannot fail (no maps with
        // non-string keys, no failing Serialize impls).
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Receives every event as it happens. Pebble's `EventListener` is the
/// model, with one method over the [`Event`] enum instead of one per kind.
///
/// **Where it runs.** On a thread of the database's own (`strata-events`),
/// one event at a time, in the order of the `EVENTS` log, and with no lock
/// of the database held: the events are queued where the work happens and
/// handed over from there. So it may call back into the
/// [`Db`](crate::Db), as RocksDB's listeners read a property in
/// `OnFlushCompleted`: [`metrics`](crate::Db::metrics), reads, iterators,
/// snapshots, writes, and even [`flush`](crate::Db::flush),
/// [`compact_range`](crate::Db::compact_range),
/// [`ingest`](crate::Db::ingest), [`sync_wal`](crate::Db::sync_wal),
/// [`checkpoint`](crate::Db::checkpoint),
/// [`wait_for_compactions`](crate::Db::wait_for_compactions) and
/// [`close`](crate::Db::close). Those calls wait for the database's
/// background work as they would elsewhere, but not for the listener to
/// hear their own events, which queue behind the one being heard (from a
/// listener, they return before it has). A listener that holds the `Db`
/// (an `Arc`) is dropped when the database closes, which ends the cycle.
///
/// **Timing.** A call that changes the tree or waits for it (`Db::open`,
/// `flush`, `compact_range`, `wait_for_compactions`, `ingest`,
/// `checkpoint`, `close`) returns only once the listener has heard every
/// event recorded before it returns; the events of plain writes (memtable
/// rotations, write stops, slow waits) may be heard just after the write
/// returns. Background work never waits for the listener, so a slow one
/// delays only the events behind it (they queue in memory) and those
/// calls: keep it quick. A panic in it is caught, and loses that event
/// only.
///
/// ```
/// use std::sync::{Arc, Mutex, OnceLock, Weak};
/// use strata::events::{Event, EventListener, EventRecord};
/// use strata::{Db, Options};
///
/// /// Reads the tree's shape after every flush.
/// #[derive(Default)]
/// struct L0Watch {
///     db: OnceLock<Weak<Db>>,
///     l0_files: Mutex<Vec<usize>>,
/// }
/// impl EventListener for L0Watch {
///     fn on_event(&self, r: &EventRecord) {
///         if let (Event::FlushEnd { .. }, Some(db)) = (&r.event, self.db.get().and_then(Weak::upgrade)) {
///             self.l0_files.lock().unwrap().push(db.metrics().l0_files);
///         }
///     }
/// }
///
/// # let dir = tempfile::tempdir()?;
/// let watch = Arc::new(L0Watch::default());
/// let opts = Options { event_listener: Some(watch.clone()), ..Options::default() };
/// let db = Arc::new(Db::open(dir.path(), opts)?);
/// watch.db.set(Arc::downgrade(&db)).expect("set once");
/// db.put("k", "v")?;
/// db.flush()?; // returns once the listener has heard the flush
/// assert_eq!(*watch.l0_files.lock().unwrap(), [1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait EventListener: Send + Sync {
    /// Called once per event, in the order of the `EVENTS` log.
    fn on_event(&self, record: &EventRecord);
}

impl fmt::Debug for dyn EventListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventListener")
    }
}

/// A listener that keeps every event in memory (tests, benchmarks).
#[derive(Debug, Default)]
pub struct EventCollector {
    records: Mutex<Vec<EventRecord>>,
}

impl EventCollector {
    /// An empty collector.
    pub fn new() -> EventCollector {
        EventCollector::default()
    }

    /// Everything received so far, in order.
    pub fn records(&self) -> Vec<EventRecord> {
        self.records.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

impl EventListener for EventCollector {
    fn on_event(&self, record: &EventRecord) {
        if let Ok(mut g) = self.records.lock() {
            g.push(record.clone());
        }
    }
}

/// What [`parse_events`] read (one segment) or
/// [`inspect::read_events`](crate::inspect::read_events) read (every
/// segment, oldest first).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ParsedEvents {
    /// The events, in log order.
    pub records: Vec<EventRecord>,
    /// The files read, oldest first, each with the index in `records` of
    /// its first event.
    pub files: Vec<(String, usize)>,
    /// Lines of kinds this Strata does not know (written by a newer one),
    /// skipped: (file, 1-based line number, kind).
    pub unknown: Vec<(String, usize, String)>,
    /// Files whose last line was cut short (a crash while it was written):
    /// that line was ignored.
    pub torn: Vec<String>,
    /// Lines before the last that are not valid events (damage: a flipped
    /// byte, a garbage line), skipped, so one damaged line does not make
    /// the whole log unreadable; readers report each (`strata check` as a
    /// warning, `strata lsm` and `strata viz` as a note): (file, 1-based
    /// line number, byte offset of the line, what is wrong).
    pub damaged: Vec<(String, usize, u64, String)>,
}

impl ParsedEvents {
    /// Appends `next` (the following segment) to these events.
    pub fn append(&mut self, next: ParsedEvents) {
        let base = self.records.len();
        self.records.extend(next.records);
        self.files
            .extend(next.files.into_iter().map(|(f, i)| (f, i + base)));
        self.unknown.extend(next.unknown);
        self.torn.extend(next.torn);
        self.damaged.extend(next.damaged);
    }
}

/// Parses the text of one `EVENTS` segment (`file` names it in what it
/// reports). A line that is not a valid event is damage: skipped and
/// reported in [`ParsedEvents::damaged`] with its line number and byte
/// offset (the log is a diagnostic record, so one bad line must not make
/// the rest unreadable); the last line may be torn (written partly before
/// a crash), which is skipped and reported in [`ParsedEvents::torn`].
pub fn parse_events(text: &[u8], file: &str) -> Result<ParsedEvents> {
    parse_segment(text, file).map(|s| s.events)
}

/// One segment as [`parse_events`] reads it, with what a writer that
/// continues it needs (`db::events`).
pub(crate) struct Segment {
    /// The events, as [`parse_events`] returns them.
    pub(crate) events: ParsedEvents,
    /// The tree after the segment's last event.
    pub(crate) tree: LogTree,
    /// Where the line of the segment's first whole tree (an `open` or a
    /// `log_rolled`) ends, if it has one.
    pub(crate) opening: Option<u64>,
}

/// [`parse_events`], keeping the tree it replays and where the segment's
/// first whole tree ends.
pub(crate) fn parse_segment(text: &[u8], file: &str) -> Result<Segment> {
    let mut out = ParsedEvents {
        files: vec![(file.to_string(), 0)],
        ..ParsedEvents::default()
    };
    let mut offset = 0usize;
    let mut opening = None;
    // The segment's tree so far, for its `reopen` lines.
    let mut tree = LogTree::new();
    let mut lines = text.split(|&b| b == b'\n').enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let start = offset;
        offset += line.len() + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let last = lines.peek().is_none_or(|(_, rest)| rest.is_empty()) && !text.ends_with(b"\n");
        match parse_line(line) {
            Ok(Parsed::Record(r)) => {
                apply_to_tree(&mut tree, &r.event);
                if opening.is_none() && r.event.whole_tree().is_some() {
                    opening = Some(offset.min(text.len()) as u64);
                }
                out.records.push(r);
            }
            Ok(Parsed::Reopen(line)) => {
                for f in &line.removed {
                    tree.remove(&(f.level, f.number));
                }
                for f in line.added {
                    tree.insert((f.level, f.number), f);
                }
                out.records.push(EventRecord {
                    v: line.v,
                    time: line.time,
                    event: Event::Open {
                        files: tree.values().cloned().collect(),
                    },
                });
            }
            Ok(Parsed::Unknown(kind)) => out.unknown.push((file.to_string(), i + 1, kind)),
            Err(_) if last => out.torn.push(file.to_string()),
            // The JSON parser counts lines and columns within the line it
            // was given: its "line 1" is this line.
            Err(msg) => out.damaged.push((
                file.to_string(),
                i + 1,
                start as u64,
                msg.replace(" at line 1 column ", " at column "),
            )),
        }
    }
    Ok(Segment {
        events: out,
        tree,
        opening,
    })
}

enum Parsed {
    Record(EventRecord),
    Reopen(ReopenLine),
    Unknown(String),
}

const KNOWN: &[&str] = &[
    "open",
    "flush_begin",
    "flush_end",
    "compaction_begin",
    "compaction_end",
    "ingest",
    "write_stall_begin",
    "write_stall_end",
    "write_wait",
    "memtable_rotated",
    "table_created",
    "table_deleted",
    "log_rolled",
    "import_phase",
    "checkpoint",
];

fn parse_line(line: &[u8]) -> std::result::Result<Parsed, String> {
    let value: serde_json::Value = serde_json::from_slice(line).map_err(|e| e.to_string())?;
    let kind = value
        .get("event")
        .and_then(|k| k.as_str())
        .ok_or("no \"event\" field")?
        .to_string();
    if value.get("v").is_none() {
        return legacy::convert(&value, &kind);
    }
    if kind == "reopen" {
        return serde_json::from_value(value)
            .map(Parsed::Reopen)
            .map_err(|e| format!("reopen line: {e}"));
    }
    if !KNOWN.contains(&kind.as_str()) {
        return Ok(Parsed::Unknown(kind));
    }
    serde_json::from_value(value)
        .map(Parsed::Record)
        .map_err(|e| format!("{kind} event: {e}"))
}

/// Version-1 lines (no `"v"`): see the module documentation.
mod legacy {
    use super::{Event, EventRecord, Parsed, TableInfo};
    use serde::Deserialize;
    use serde_json::Value;

    #[derive(Deserialize)]
    struct Common {
        time: f64,
        #[serde(default)]
        added: Vec<TableInfo>,
        #[serde(default)]
        removed: Vec<TableInfo>,
        #[serde(default)]
        memtable: u64,
        #[serde(default)]
        bytes_written: u64,
        #[serde(default)]
        bytes_read: u64,
        #[serde(default)]
        micros: u64,
        #[serde(default)]
        reason: String,
        #[serde(default)]
        start_level: usize,
        #[serde(default)]
        output_level: usize,
        #[serde(default)]
        moved: bool,
        #[serde(default)]
        sequence: u64,
        #[serde(default)]
        excise: Option<(String, String)>,
        #[serde(default)]
        cause: String,
    }

    pub(super) fn convert(v: &Value, kind: &str) -> Result<Parsed, String> {
        let c = Common::deserialize(v).map_err(|e| format!("version-1 {kind} event: {e}"))?;
        let event = match kind {
            "open" => Event::Open { files: c.added },
            "flush" => Event::FlushEnd {
                job: 0,
                memtable: c.memtable,
                outputs: c.added,
                bytes_written: c.bytes_written,
                micros: c.micros,
            },
            "compaction" => Event::CompactionEnd {
                job: 0,
                reason: c.reason,
                start_level: c.start_level,
                output_level: c.output_level,
                moved: c.moved,
                cancelled: false,
                inputs: c.removed,
                outputs: c.added,
                bytes_read: c.bytes_read,
                bytes_written: c.bytes_written,
                micros: c.micros,
            },
            "ingest" => Event::Ingest {
                sequence: c.sequence,
                flushable: None,
                excise: match c.excise {
                    Some((a, b)) => Some(super::KeyRange {
                        start: crate::util::hex::decode(&a).ok_or("excise start is not hex")?,
                        end: crate::util::hex::decode(&b).ok_or("excise end is not hex")?,
                    }),
                    None => None,
                },
                added: c.added,
                removed: c.removed,
            },
            "stall" => Event::WriteStallEnd {
                cause: c.cause,
                micros: c.micros,
            },
            other => return Ok(Parsed::Unknown(other.to_string())),
        };
        Ok(Parsed::Record(EventRecord {
            v: 1,
            time: c.time,
            event,
        }))
    }
}

/// User keys as lower-case hex strings.
mod hex_bytes {
    use super::hex;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(b))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        hex::decode(&s).ok_or_else(|| serde::de::Error::custom(format!("{s:?} is not hex")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files and bytes per level of a list of files.
    fn per_level(files: &[TableInfo]) -> BTreeMap<usize, (usize, u64)> {
        let mut m = BTreeMap::new();
        for f in files {
            let e = m.entry(f.level).or_insert((0, 0));
            e.0 += 1;
            e.1 += f.size;
        }
        m
    }

    fn table(level: usize, number: u64) -> TableInfo {
        TableInfo {
            level,
            number,
            size: 100 * number,
            smallest: b"a\x00".to_vec(),
            largest: b"z".to_vec(),
            largest_exclusive: number & 1 == 0,
            smallest_seq: 1,
            largest_seq: 9,
            entries: Some(3),
            backing: None,
        }
    }

    #[test]
    fn every_kind_round_trips_through_json() {
        let events = vec![
            Event::Open {
                files: vec![table(1, 4)],
            },
            Event::FlushBegin {
                job: 1,
                memtable: 7,
            },
            Event::FlushEnd {
                job: 1,
                memtable: 7,
                outputs: vec![table(0, 8), table(0, 9)],
                bytes_written: 1700,
                micros: 12,
            },
            Event::CompactionBegin {
                job: 2,
                reason: "l0".into(),
                start_level: 0,
                output_level: 3,
                inputs: vec![table(0, 8), table(3, 4)],
            },
            Event::CompactionEnd {
                job: 2,
                reason: "l0".into(),
                start_level: 0,
                output_level: 3,
                moved: false,
                cancelled: false,
                inputs: vec![table(0, 8), table(3, 4)],
                outputs: vec![table(3, 10)],
                bytes_read: 1200,
                bytes_written: 1000,
                micros: 99,
            },
            Event::Ingest {
                sequence: 5,
                flushable: Some(true),
                excise: Some(KeyRange {
                    start: b"b".to_vec(),
                    end: b"c".to_vec(),
                }),
                added: vec![table(6, 11)],
                removed: vec![],
            },
            Event::WriteStallBegin {
                cause: "stop: l0 sublevels".into(),
            },
            Event::WriteStallEnd {
                cause: "stop: l0 sublevels".into(),
                micros: 5,
            },
            Event::WriteWait {
                cause: "memtable rotation".into(),
                micros: 12_000,
            },
            Event::MemtableRotated {
                memtable: 3,
                wal: 3,
                reason: "full".into(),
            },
            Event::TableCreated {
                job: 1,
                number: 8,
                reason: "flush".into(),
            },
            Event::TableDeleted { number: 8 },
            Event::LogRolled {
                files: vec![table(6, 11), table(0, 9)],
            },
            Event::ImportPhase {
                import: "stock".into(),
                phase: "sort".into(),
                rows: 100,
                bytes: 4096,
                micros: 77,
            },
            Event::Checkpoint {
                dir: "/backups/db-1".into(),
                sequence: 41,
                tables: 5,
                bytes: 9000,
                linked: 3,
                copied: 2,
                micros: 1500,
            },
        ];
        // Every kind a reader knows is here (a new kind without its round
        // trip fails this).
        let mut kinds: Vec<&str> = events.iter().map(Event::kind).collect();
        kinds.sort_unstable();
        let mut known = KNOWN.to_vec();
        known.sort_unstable();
        assert_eq!(kinds, known);
        let mut text = String::new();
        for (i, e) in events.iter().enumerate() {
            let r = EventRecord {
                v: FORMAT_VERSION,
                time: 1000.5 + i as f64,
                event: e.clone(),
            };
            let line = r.to_json();
            assert!(
                line.contains(&format!("\"event\":\"{}\"", e.kind())),
                "{line}"
            );
            text.push_str(&line);
            text.push('\n');
        }
        let parsed = parse_events(text.as_bytes(), "EVENTS").unwrap();
        let got: Vec<Event> = parsed.records.into_iter().map(|r| r.event).collect();
        assert_eq!(got, events);
        assert!(parsed.unknown.is_empty() && parsed.torn.is_empty());
    }

    #[test]
    fn segment_names_parse_back() {
        assert_eq!(segment_name(7), "EVENTS.000007");
        assert_eq!(parse_segment_name(&segment_name(1234567)), Some(1234567));
        for bad in [
            "EVENTS",
            "EVENTS.",
            "EVENTS.x1",
            "EVENTS.1.tmp",
            "xEVENTS.1",
        ] {
            assert_eq!(parse_segment_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn version_one_lines_still_read() {
        let text = br#"{"time":1.5,"event":"open","added":[{"level":6,"number":3,"size":10,"smallest":"61","largest":"7a","smallest_seq":0,"largest_seq":4}],"removed":[]}
{"time":2.0,"event":"flush","memtable":5,"added":[{"level":0,"number":6,"size":20,"smallest":"62","largest":"63","smallest_seq":5,"largest_seq":9}],"removed":[],"bytes_written":20,"micros":7}
{"time":2.5,"event":"compaction","reason":"l0","start_level":0,"output_level":6,"moved":false,"added":[{"level":6,"number":7,"size":25,"smallest":"61","largest":"7a","smallest_seq":0,"largest_seq":9}],"removed":[{"level":0,"number":6,"size":20,"smallest":"62","largest":"63","smallest_seq":5,"largest_seq":9},{"level":6,"number":3,"size":10,"smallest":"61","largest":"7a","smallest_seq":0,"largest_seq":4}],"bytes_read":30,"bytes_written":25,"micros":8}
{"time":3.0,"event":"ingest","sequence":10,"excise":["61","62"],"added":[],"removed":[]}
{"time":3.5,"event":"stall","cause":"stop: l0 sublevels","micros":40}
"#;
        let p = parse_events(text, "EVENTS").unwrap();
        let kinds: Vec<&str> = p.records.iter().map(|r| r.event.kind()).collect();
        assert_eq!(
            kinds,
            [
                "open",
                "flush_end",
                "compaction_end",
                "ingest",
                "write_stall_end"
            ]
        );
        assert!(p.records.iter().all(|r| r.v == 1));
        match &p.records[2].event {
            Event::CompactionEnd {
                inputs, outputs, ..
            } => {
                assert_eq!(per_level(inputs).get(&0), Some(&(1, 20)));
                assert_eq!(per_level(inputs).get(&6), Some(&(1, 10)));
                assert_eq!(outputs[0].number, 7);
            }
            e => panic!("{e:?}"),
        }
        match &p.records[3].event {
            Event::Ingest {
                excise, flushable, ..
            } => {
                assert_eq!(excise.as_ref().map(|r| r.end.clone()), Some(b"b".to_vec()));
                assert_eq!(*flushable, None);
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn torn_tail_and_bad_middle_line_are_skipped_and_named() {
        let good = EventRecord {
            v: FORMAT_VERSION,
            time: 1.0,
            event: Event::TableDeleted { number: 4 },
        }
        .to_json();
        let torn = format!("{good}\n{}", &good[..good.len() / 2]);
        let p = parse_events(torn.as_bytes(), "EVENTS").unwrap();
        assert_eq!(p.records.len(), 1);
        assert_eq!(p.torn, ["EVENTS"]);

        let bad = format!("{good}\n{{\"v\":2,\"time\":1,\"event\":\"flush_end\"}}\n{good}\n");
        // The damaged line is skipped and named (line, offset, what); the
        // events on either side of it are read.
        let p = parse_events(bad.as_bytes(), "EVENTS").unwrap();
        assert_eq!(p.records.len(), 2);
        assert!(p.torn.is_empty());
        let [(file, line, offset, what)] = &p.damaged[..] else {
            panic!("{:?}", p.damaged);
        };
        assert_eq!((file.as_str(), *line), ("EVENTS", 2));
        assert_eq!(*offset as usize, good.len() + 1);
        assert!(
            !what.contains("line 1"),
            "the parser's own line count: {what}"
        );

        let newer = format!("{good}\n{{\"v\":3,\"time\":1,\"event\":\"warp_drive\"}}\n");
        let p = parse_events(newer.as_bytes(), "EVENTS").unwrap();
        assert_eq!(
            p.unknown,
            vec![("EVENTS".to_string(), 2, "warp_drive".to_string())]
        );
    }
}
