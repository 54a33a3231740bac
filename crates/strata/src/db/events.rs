//! The database's side of [`crate::events`]: stamps each event with the time,
//! queues it for the listener in `Options`, and appends it as a JSON line to
//! the `EVENTS` log in the database directory (kept across reopens).
//!
//! The listener is called on a thread of its own (`strata-events`,
//! `Dispatch`), never on the thread that records the event: events are
//! recorded where the work happens, often under the state lock (a flush's
//! end, a compaction's, the open's) or in the commit slot (a rotation, an
//! ingestion), and a listener that called back into the database there (a
//! `metrics()` in `FlushEnd`, the usual RocksDB pattern) deadlocked on that
//! lock. The queue is filled under the log's lock, in the order the lines
//! take in the log, and one thread empties it, so the listener hears the
//! events one at a time, in log order, with no lock of the database held.
//! A call that wants its events heard before it returns (`Db::flush`,
//! `ingest`, ...) waits for the queue to pass them (`wait_heard`), after
//! releasing every lock, and unless it runs on the dispatcher itself (a
//! listener's own call, whose events queue behind the one being heard).
//! Background threads never wait for it: a listener blocked on a write
//! stall must not hold up the flush that ends the stall.
//!
//! The log is a sequence of segments (format in [`crate::events`]): `EVENTS`
//! is written, `EVENTS.NNNNNN` are closed. No segment is ever rewritten or
//! copied. An open continues the previous `EVENTS` when it can
//! (`Writer::resume`: a whole last line, a whole tree in it, fewer than
//! [`SEGMENT_BYTES`] after that tree, a file system that appends), and
//! writes itself there as a `reopen` line, the difference between its
//! tree and the tree the segment describes, so N short sessions cost N
//! small lines rather than N trees. Otherwise it renames the previous
//! `EVENTS` to the next number (one atomic rename; the old code copied the
//! whole log into a new file at each open, which a crash between the
//! truncating create and the copy could empty), and a segment past
//! [`SEGMENT_BYTES`] is closed the same way mid-session. In each new
//! segment the first tree change is the whole tree (`open` or
//! `log_rolled`), so deleting the oldest closed segments to stay under
//! [`KEEP_BYTES`] never leaves a segment that cannot be replayed.
//!
//! Invariants:
//! - the log is for people and tools, never for recovery: a failure to
//!   write, rename or create a segment disables the file for the rest of
//!   the session (the listener still gets every event) rather than failing
//!   the database, and never truncates what earlier sessions wrote (when
//!   the rename fails, no new `EVENTS` is created over the old one);
//! - lines are written whole with one append each (a staged run of them
//!   with one) and not synced: a crash
//!   can cut short only a segment's last line, and the next session writes
//!   a new segment instead of appending after it (it resumes a segment only
//!   when the whole segment parses and ends with a newline);
//! - to start a segment with the whole tree, the log keeps the tree as its
//!   own events describe it (`Open` sets it, other tree changes update it),
//!   one entry per live file;
//! - job numbers (flushes and compactions, to pair `*_begin` with `*_end`)
//!   count from 1 at each open;
//! - a line's place in the log is fixed when it is recorded, under the
//!   log's lock; an event recorded inside the commit slot (an ingestion's,
//!   a rotation's) is only staged there (`stage`: the listener hears it,
//!   the event joins `pending`); its JSON line is formatted and written
//!   once the slot is left (`write_staged`), so the Puts queued behind the
//!   slot do not wait for it (the Ingest event took 11-16 µs of an
//!   ingestion's 40-45 µs in the slot,
//!   docs/bench-history/w4-foreground-latency.md, session 24).
//!   Staged events go to the file before any later line, and before the
//!   call that staged them returns to its caller.
//! - the listener's queue holds each event once, in log order; staged
//!   events join it when staged (their place), and the dispatcher is woken
//!   for them only by `write_staged`, outside the slot (a wake-up is a
//!   system call the Puts queued behind the slot would wait for).

use crate::events::{
    apply_to_tree, parse_segment, parse_segment_name, reopen_line, segment_name, Event,
    EventListener, EventRecord, LogTree, TableInfo, EVENTS_FILE, FORMAT_VERSION, KEEP_BYTES,
    SEGMENT_BYTES,
};
use crate::version::{FileMeta, Version};
use crate::vfs::{Vfs, WritableFile};
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub struct EventLog {
    writer: Mutex<Option<Writer>>,
    /// The listener's thread and queue, if there is a listener.
    dispatch: Option<Dispatch>,
    next_job: AtomicU64,
    /// Whether a staged line may be waiting in `Writer::pending` (set
    /// under the lock; read without it, to skip taking the lock).
    staged: AtomicBool,
}

/// The listener's thread (`strata-events`) and the queue it empties.
struct Dispatch {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The thread's id: a call made on it (by the listener) never waits
    /// for the queue, which waits for that call.
    id: ThreadId,
}

struct Shared {
    q: Mutex<Queue>,
    /// Wakes the dispatcher: events queued, or stop.
    work: Condvar,
    /// Signalled after each event heard (`wait_heard`).
    heard: Condvar,
    /// An event was staged (queued in the commit slot) without waking the
    /// dispatcher; `write_staged` wakes it.
    wake_pending: AtomicBool,
}

struct Queue {
    events: VecDeque<EventRecord>,
    /// Events queued and events the listener has returned from, since
    /// open.
    queued: u64,
    heard: u64,
    /// Set at close: nothing more is queued, and the dispatcher exits once
    /// it has emptied the queue.
    stop: bool,
}

impl Dispatch {
    fn start(listener: Arc<dyn EventListener>) -> crate::Result<Dispatch> {
        let shared = Arc::new(Shared {
            q: Mutex::new(Queue {
                events: VecDeque::new(),
                queued: 0,
                heard: 0,
                stop: false,
            }),
            work: Condvar::new(),
            heard: Condvar::new(),
            wake_pending: AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        let t = std::thread::Builder::new()
            .name("strata-events".into())
            .spawn(move || dispatch_loop(&s, listener))
            .map_err(|e| crate::Error::io("spawning the event listener's thread", e))?;
        Ok(Dispatch {
            shared,
            id: t.thread().id(),
            thread: Mutex::new(Some(t)),
        })
    }

    fn on_dispatcher(&self) -> bool {
        std::thread::current().id() == self.id
    }

    /// Queues `r` (the caller holds the log's lock, so the queue's order is
    /// the log's); wakes the dispatcher unless `staged`.
    fn push(&self, r: EventRecord, staged: bool) {
        let mut q = self.shared.q.lock();
        if q.stop {
            return;
        }
        q.events.push_back(r);
        q.queued += 1;
        drop(q);
        if staged {
            self.shared.wake_pending.store(true, Ordering::Release);
        } else {
            self.shared.work.notify_one();
        }
    }

    /// Wakes the dispatcher for events staged without waking it.
    fn wake_for_staged(&self) {
        if self.shared.wake_pending.swap(false, Ordering::AcqRel) {
            self.shared.work.notify_one();
        }
    }

    /// Waits until the listener has heard every event queued so far.
    fn wait_heard(&self) {
        if self.on_dispatcher() {
            return;
        }
        let mut q = self.shared.q.lock();
        let upto = q.queued;
        if q.heard >= upto {
            return;
        }
        self.shared.wake_pending.store(false, Ordering::Release);
        self.shared.work.notify_one();
        while q.heard < upto {
            self.shared.heard.wait(&mut q);
        }
    }

    /// Lets the dispatcher hand out what is queued and exit; waits for it
    /// unless called on it (a listener closing the database: it goes on
    /// with the queue once the listener returns).
    fn stop(&self) {
        self.shared.q.lock().stop = true;
        self.shared.work.notify_one();
        let t = self.thread.lock().take();
        if let Some(t) = t {
            if !self.on_dispatcher() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Dispatch {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The dispatcher: hands each queued event to the listener, oldest first,
/// with the queue's lock released, until stopped and empty.
fn dispatch_loop(shared: &Shared, listener: Arc<dyn EventListener>) {
    let mut q = shared.q.lock();
    loop {
        if let Some(r) = q.events.pop_front() {
            parking_lot::MutexGuard::unlocked(&mut q, || {
                // A panicking listener loses its event, not the thread:
                // the calls waiting for the queue would wait forever.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    listener.on_event(&r)
                }));
            });
            q.heard += 1;
            shared.heard.notify_all();
            continue;
        }
        if q.stop {
            return;
        }
        shared.work.wait(&mut q);
    }
}

/// Size limits of the log (the constants, smaller in tests).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Bytes after a segment's opening tree before it is closed.
    pub segment_bytes: u64,
    /// Bytes of closed segments kept.
    pub keep_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            segment_bytes: SEGMENT_BYTES,
            keep_bytes: KEEP_BYTES,
        }
    }
}

/// The segment being written.
struct Writer {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    file: Box<dyn WritableFile>,
    /// Bytes in this segment, and how many of them are its opening tree.
    written: u64,
    opening: u64,
    /// The tree as the events describe it, by (level, number).
    tree: LogTree,
    /// This segment was the last session's, resumed: the session's `Open`
    /// is to be written as a `reopen` line against `tree`.
    resumed: bool,
    limits: Limits,
    /// Events staged and not yet handed to the file, in order (formatted
    /// when written: the JSON is most of an event's cost).
    pending: Vec<EventRecord>,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

pub fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

pub fn tables<'a>(files: impl IntoIterator<Item = (usize, &'a FileMeta)>) -> Vec<TableInfo> {
    files
        .into_iter()
        .map(|(l, f)| TableInfo::from_meta(l, f))
        .collect()
}

/// The whole tree at open: replaying later events from here gives the tree
/// at any moment.
pub fn open_event(v: &Version) -> Event {
    Event::Open {
        files: tables(v.all_files().map(|(l, f)| (l, f.as_ref()))),
    }
}

/// Closes the segment `EVENTS` (if there is one) by renaming it to the next
/// number, then deletes the oldest closed segments beyond the limit. Errors
/// mean `EVENTS` may still be there: the caller must not create over it.
fn close_segment(vfs: &dyn Vfs, dir: &Path, limits: Limits) -> crate::Result<()> {
    let names = vfs.list(dir)?;
    let mut closed: Vec<u64> = names.iter().filter_map(|n| parse_segment_name(n)).collect();
    closed.sort_unstable();
    if names.iter().any(|n| n == EVENTS_FILE) {
        let next = closed.last().map_or(1, |n| n + 1);
        vfs.rename(&dir.join(EVENTS_FILE), &dir.join(segment_name(next)))?;
        closed.push(next);
    }
    // Newest first: keep segments while they fit (the newest always).
    let mut kept = 0u64;
    for (i, &n) in closed.iter().rev().enumerate() {
        let path = dir.join(segment_name(n));
        kept = kept.saturating_add(vfs.file_size(&path).unwrap_or(0));
        if i > 0 && kept > limits.keep_bytes {
            // A segment that cannot be deleted is only disk use.
            let _ = vfs.remove(&path);
        }
    }
    Ok(())
}

impl Drop for Writer {
    /// Staged lines left unwritten (a failed call that never reached
    /// `write_staged`) still go to the file.
    fn drop(&mut self) {
        let _ = self.write_pending();
    }
}

impl Writer {
    /// Starts a new `EVENTS` after closing the previous one.
    fn start(vfs: Arc<dyn Vfs>, dir: &Path, limits: Limits) -> Option<Writer> {
        close_segment(vfs.as_ref(), dir, limits).ok()?;
        let file = vfs.create(&dir.join(EVENTS_FILE)).ok()?;
        Some(Writer {
            vfs,
            dir: dir.to_path_buf(),
            file,
            written: 0,
            opening: 0,
            tree: BTreeMap::new(),
            resumed: false,
            limits,
            pending: Vec::new(),
        })
    }

    /// Continues the last session's `EVENTS`, if it ends with a whole line,
    /// parses, holds a whole tree (so it replays on its own) and has fewer
    /// than `segment_bytes` after that tree; `None` otherwise, or if the
    /// file system cannot append, and the caller starts a new segment.
    /// Reading it costs at most about a segment per open.
    fn resume(vfs: Arc<dyn Vfs>, dir: &Path, limits: Limits) -> Option<Writer> {
        let path = dir.join(EVENTS_FILE);
        if !vfs.exists(&path) {
            return None;
        }
        let text = crate::vfs::read_all(vfs.as_ref(), &path).ok()?;
        if !text.ends_with(b"\n") {
            return None;
        }
        let seg = parse_segment(&text, EVENTS_FILE).ok()?;
        // A damaged or torn line: the segment's tree may miss an event,
        // so a new segment starts with a whole tree instead.
        if !seg.events.torn.is_empty() || !seg.events.damaged.is_empty() {
            return None;
        }
        // Up to the end of the segment's first whole tree: what a roll
        // does not count against the segment either.
        let opening = seg.opening?;
        let written = text.len() as u64;
        if written - opening >= limits.segment_bytes {
            return None;
        }
        let tree = seg.tree;
        let file = vfs.open_append(&path).ok()?;
        Some(Writer {
            vfs,
            dir: dir.to_path_buf(),
            file,
            written,
            opening,
            tree,
            resumed: true,
            limits,
            pending: Vec::new(),
        })
    }

    fn append(&mut self, line: &str) -> crate::Result<()> {
        self.write_pending()?;
        self.write_bytes(line.as_bytes())
    }

    /// Hands whole lines to the file with one append.
    fn write_bytes(&mut self, lines: &[u8]) -> crate::Result<()> {
        self.file.append(lines)?;
        self.file.flush()?;
        self.written += lines.len() as u64;
        Ok(())
    }

    /// Formats the staged events and hands their lines to the file.
    fn write_pending(&mut self) -> crate::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut lines = String::new();
        for r in self.pending.drain(..) {
            lines.push_str(&r.to_json());
            lines.push('\n');
        }
        self.write_bytes(lines.as_bytes())
    }

    /// Closes this segment and continues in a new one that opens with the
    /// whole tree. `None`: the log is off for the rest of the session.
    fn roll(mut self) -> Option<Writer> {
        self.write_pending().ok()?;
        self.file.flush().ok()?;
        let tree = std::mem::take(&mut self.tree);
        let mut next = Writer::start(Arc::clone(&self.vfs), &self.dir, self.limits)?;
        drop(self);
        let files: Vec<TableInfo> = tree.values().cloned().collect();
        let line = line_of(Event::LogRolled { files });
        next.append(&line).ok()?;
        next.opening = next.written;
        next.tree = tree;
        Some(next)
    }

    /// Keeps `tree` as the events describe it.
    fn track(&mut self, event: &Event) {
        apply_to_tree(&mut self.tree, event);
    }
}

fn line_of(event: Event) -> String {
    let mut line = EventRecord {
        v: FORMAT_VERSION,
        time: now(),
        event,
    }
    .to_json();
    line.push('\n');
    line
}

impl EventLog {
    /// Continues the segment the last session wrote in `dir` when it can
    /// (`Writer::resume`), else starts a new segment, closing that one
    /// (earlier sessions stay in the closed segments). With a listener,
    /// starts its thread (the only error).
    pub fn open(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        listener: Option<Arc<dyn EventListener>>,
    ) -> crate::Result<EventLog> {
        EventLog::with_limits(vfs, dir, listener, Limits::default())
    }

    /// [`EventLog::open`] with other size limits (tests).
    pub fn with_limits(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        listener: Option<Arc<dyn EventListener>>,
        limits: Limits,
    ) -> crate::Result<EventLog> {
        Ok(EventLog {
            writer: Mutex::new(
                Writer::resume(Arc::clone(&vfs), dir, limits)
                    .or_else(|| Writer::start(vfs, dir, limits)),
            ),
            dispatch: listener.map(Dispatch::start).transpose()?,
            next_job: AtomicU64::new(1),
            staged: AtomicBool::new(false),
        })
    }

    /// A log that writes no file (a read-only database creates nothing);
    /// the listener still hears every event.
    pub fn disabled(listener: Option<Arc<dyn EventListener>>) -> crate::Result<EventLog> {
        Ok(EventLog {
            writer: Mutex::new(None),
            dispatch: listener.map(Dispatch::start).transpose()?,
            next_job: AtomicU64::new(1),
            staged: AtomicBool::new(false),
        })
    }

    /// A number for a new flush or compaction job.
    pub fn new_job(&self) -> u64 {
        self.next_job.fetch_add(1, Ordering::Relaxed)
    }

    /// Queues an event for the listener and appends it to the log (after
    /// any staged lines). Safe under any lock: the listener is not called
    /// here.
    pub fn record(&self, event: Event) {
        self.add(event, false);
    }

    /// Queues an event for the listener and takes its place in the log,
    /// but leaves its line in memory for `write_staged` (or the next
    /// `record`) to write: for events recorded inside the commit slot,
    /// whose caller calls `write_staged` once it has left the slot (which
    /// also wakes the listener's thread for it).
    pub fn stage(&self, event: Event) {
        self.add(event, true);
    }

    /// Waits until the listener has heard every event recorded so far
    /// (see the module documentation); at once without a listener, and on
    /// the listener's own thread. The caller holds no lock.
    pub fn wait_heard(&self) {
        if let Some(d) = &self.dispatch {
            d.wait_heard();
        }
    }

    /// Writes what is pending and closes the log file, then lets the
    /// listener hear what is queued and stops its thread (at `Db::close`,
    /// which then releases the LOCK, after which another open may write
    /// the log). Events recorded later are dropped. On the listener's own
    /// thread (a listener closing the database) the thread is not waited
    /// for: it hears the rest of the queue once the listener returns.
    pub fn close(&self) {
        drop(self.writer.lock().take());
        if let Some(d) = &self.dispatch {
            d.stop();
        }
    }

    /// Writes the staged lines, if any, and wakes the listener's thread
    /// for staged events.
    pub fn write_staged(&self) {
        if let Some(d) = &self.dispatch {
            d.wake_for_staged();
        }
        if !self.staged.load(Ordering::Acquire) {
            return;
        }
        let mut g = self.writer.lock();
        if let Some(w) = g.as_mut() {
            if w.write_pending().is_err() {
                // As for a failed append: no file for the rest of the session.
                *g = None;
            }
        }
        // Cleared only once written: a caller that sees it clear finds its
        // staged line already in the file, not still being written by
        // another thread.
        self.staged.store(false, Ordering::Release);
    }

    fn add(&self, event: Event, staged: bool) {
        let r = EventRecord {
            v: FORMAT_VERSION,
            time: now(),
            event,
        };
        // Queued for the listener under the log's lock, so it hears the
        // events in the order they are written (two threads recording at
        // once used to reach the two in different orders:
        // `wide_file`'s comparison failed under load, when foreground
        // `write_wait` events raced background ones). Only queued: the
        // caller may hold the state lock or the commit slot.
        let mut g = self.writer.lock();
        if let Some(d) = &self.dispatch {
            d.push(r.clone(), staged);
        }
        let Some(mut w) = g.take() else {
            return;
        };
        if staged {
            // Its size counts towards the segment once written; a roll
            // writes it into the segment it was staged in first.
            w.track(&r.event);
            w.pending.push(r);
            self.staged.store(true, Ordering::Release);
            *g = Some(w);
            return;
        }
        let mut line = match &r.event {
            Event::Open { files } if w.resumed => reopen_line(r.time, &w.tree, files),
            _ => r.to_json(),
        };
        line.push('\n');
        if w.written - w.opening + line.len() as u64 > w.limits.segment_bytes
            && w.written > w.opening
        {
            match w.roll() {
                Some(next) => w = next,
                None => return,
            }
        }
        if w.append(&line).is_err() {
            return;
        }
        if matches!(r.event, Event::Open { .. }) {
            w.resumed = false;
        }
        w.track(&r.event);
        *g = Some(w);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use crate::inspect::{read_events_in, Tree};
    use crate::vfs::{self, MemVfs};

    fn file(level: usize, number: u64) -> TableInfo {
        TableInfo {
            level,
            number,
            size: 1000 + number,
            smallest: format!("k{number:04}").into_bytes(),
            largest: format!("k{number:04}z").into_bytes(),
            largest_exclusive: false,
            smallest_seq: number,
            largest_seq: number,
            entries: Some(10),
            backing: None,
        }
    }

    fn flush(n: u64) -> Event {
        Event::FlushEnd {
            job: n,
            memtable: n,
            outputs: vec![file(0, n)],
            bytes_written: 1000,
            micros: 5,
        }
    }

    /// Replays a whole log: the tree after its last event.
    fn replay(vfs: &MemVfs, dir: &Path) -> (Tree, crate::events::ParsedEvents) {
        let p = read_events_in(vfs, dir).unwrap();
        let mut t = Tree::new();
        for r in &p.records {
            if let Some(files) = r.event.whole_tree() {
                t = Tree::new();
                t.apply_files(files, &[]).unwrap();
            } else if let Some((a, rm)) = r.event.tree_change() {
                t.apply_files(a, rm).unwrap();
            }
        }
        (t, p)
    }

    fn numbers(t: &Tree) -> Vec<(usize, u64)> {
        let mut v: Vec<_> = (0..crate::inspect::LEVELS)
            .flat_map(|l| t.files(l).iter().map(move |f| (l, f.number)))
            .collect();
        v.sort_unstable();
        v
    }

    /// Events staged in the commit slot keep the place they were recorded
    /// at: random runs of `record`, `stage` and `write_staged`, with
    /// segments rolling every few lines, must leave the log (every segment,
    /// in order) holding exactly the events recorded so far, in recording
    /// order, whenever nothing is staged and unwritten, and a replay must
    /// end at the true tree. (Planted: `append` not writing the staged
    /// events first puts them after a later line; a roll not writing them
    /// first puts them in the next segment, after its opening tree;
    /// `write_staged` doing nothing leaves them out; each fails here.)
    #[test]
    fn staged_events_keep_their_place_across_records_and_rolls() {
        for seed in 0..20u64 {
            let vfs = MemVfs::new();
            let dir = Path::new("/db");
            vfs.create_dir_all(dir).unwrap();
            let limits = Limits {
                segment_bytes: 700,
                keep_bytes: u64::MAX,
            };
            let log = EventLog::with_limits(Arc::new(vfs.clone()), dir, None, limits).unwrap();
            log.record(Event::Open { files: vec![] });
            let mut rng = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let mut step = || {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (rng >> 33) % 4
            };
            let mut want: Vec<u64> = Vec::new();
            for n in 1..=60u64 {
                let staged = match step() {
                    0 | 1 => {
                        log.record(flush(n));
                        false
                    }
                    2 => {
                        log.stage(flush(n));
                        true
                    }
                    _ => {
                        log.stage(flush(n));
                        log.write_staged();
                        false
                    }
                };
                want.push(n);
                if staged {
                    continue;
                }
                let p = read_events_in(&vfs, dir).unwrap();
                let got: Vec<u64> = p
                    .records
                    .iter()
                    .filter_map(|r| match &r.event {
                        Event::FlushEnd { job, .. } => Some(*job),
                        _ => None,
                    })
                    .collect();
                assert_eq!(got, want, "seed {seed}, after event {n}");
            }
            log.write_staged();
            assert!(
                p_segments(&vfs, dir) >= 3,
                "seed {seed}: the log should have rolled"
            );
            let (t, _) = replay(&vfs, dir);
            let all: Vec<_> = (1..=60).map(|n| (0, n)).collect();
            assert_eq!(numbers(&t), all, "seed {seed}");
        }
    }

    fn p_segments(vfs: &MemVfs, dir: &Path) -> usize {
        read_events_in(vfs, dir).unwrap().files.len()
    }

    /// Sessions each start a segment; a long session rolls into segments
    /// that each open with the whole tree; the oldest are deleted within
    /// the limit; replaying what is kept still ends at the true tree.
    #[test]
    fn segments_roll_keep_within_limit_and_replay() {
        let vfs = MemVfs::new();
        let dir = Path::new("/db");
        vfs.create_dir_all(dir).unwrap();
        let limits = Limits {
            segment_bytes: 2_000,
            keep_bytes: 6_000,
        };
        let mut next = 1u64;
        let mut tree: Vec<TableInfo> = Vec::new();
        for session in 0..4 {
            let log = EventLog::with_limits(Arc::new(vfs.clone()), dir, None, limits).unwrap();
            log.record(Event::Open {
                files: tree.clone(),
            });
            for _ in 0..10 + session * 5 {
                log.record(flush(next));
                tree.push(file(0, next));
                next += 1;
                if tree.len() > 4 {
                    // Compact two L0 files into L6.
                    let (a, b) = (tree.remove(0), tree.remove(0));
                    let out = file(6, next);
                    next += 1;
                    log.record(Event::CompactionEnd {
                        job: 0,
                        reason: "l0".into(),
                        start_level: 0,
                        output_level: 6,
                        moved: false,
                        cancelled: false,
                        inputs: vec![a, b],
                        outputs: vec![out.clone()],
                        bytes_read: 2,
                        bytes_written: 1,
                        micros: 1,
                    });
                    tree.push(out);
                }
            }
        }
        let names = vfs.list(dir).unwrap();
        let closed: Vec<u64> = names.iter().filter_map(|n| parse_segment_name(n)).collect();
        assert!(closed.len() >= 2, "{names:?}");
        let closed_bytes: u64 = closed
            .iter()
            .map(|&n| vfs.file_size(&dir.join(segment_name(n))).unwrap())
            .sum();
        let newest = closed.iter().max().unwrap();
        let newest_bytes = vfs.file_size(&dir.join(segment_name(*newest))).unwrap();
        assert!(
            closed_bytes <= limits.keep_bytes + newest_bytes,
            "{closed_bytes} bytes kept in {closed:?}"
        );
        assert!(
            !names.contains(&segment_name(1)),
            "the oldest segment was not deleted: {names:?}"
        );
        let (t, p) = replay(&vfs, dir);
        let mut want: Vec<_> = tree.iter().map(|f| (f.level, f.number)).collect();
        want.sort_unstable();
        assert_eq!(numbers(&t), want);
        // Every file read starts with the whole tree.
        for (name, first) in &p.files {
            let e = &p.records[*first].event;
            assert!(e.whole_tree().is_some(), "{name} starts with {}", e.kind());
        }
        assert!(p
            .records
            .iter()
            .any(|r| matches!(r.event, Event::LogRolled { .. })));
        assert!(p.torn.is_empty());
    }

    /// A crash cuts the last line of a session's segment short: the next
    /// session starts a new segment instead of appending after it, and a
    /// reader skips the cut line, naming the file.
    #[test]
    fn a_torn_line_stays_at_its_segment_end() {
        let vfs = MemVfs::new();
        let dir = Path::new("/db");
        vfs.create_dir_all(dir).unwrap();
        let log = EventLog::open(Arc::new(vfs.clone()), dir, None).unwrap();
        log.record(Event::Open { files: vec![] });
        log.record(flush(1));
        drop(log);
        let path = dir.join(EVENTS_FILE);
        let mut text = vfs::read_all(&vfs, &path).unwrap();
        let cut = line_of(flush(2));
        text.extend_from_slice(&cut.as_bytes()[..cut.len() / 2]);
        vfs::write_all(&vfs, &path, &text).unwrap();

        let log = EventLog::open(Arc::new(vfs.clone()), dir, None).unwrap();
        log.record(Event::Open {
            files: vec![file(0, 1), file(0, 3)],
        });
        log.record(flush(4));
        drop(log);
        let (t, p) = replay(&vfs, dir);
        assert_eq!(p.torn, [dir.join(segment_name(1)).display().to_string()]);
        assert_eq!(numbers(&t), [(0, 1), (0, 3), (0, 4)]);
        let kinds: Vec<&str> = p.records.iter().map(|r| r.event.kind()).collect();
        assert_eq!(kinds, ["open", "flush_end", "open", "flush_end"]);
    }

    /// A log that cannot close the previous segment leaves it as it was
    /// (and writes nothing) rather than creating a new `EVENTS` over it.
    #[test]
    fn a_failed_close_never_truncates_the_old_log() {
        use crate::vfs::fault::{Fault, Op};
        use crate::vfs::FaultVfs;
        let vfs = FaultVfs::new();
        let dir = Path::new("/db");
        vfs.create_dir_all(dir).unwrap();
        let log = EventLog::open(Arc::new(vfs.clone()), dir, None).unwrap();
        log.record(Event::Open { files: vec![] });
        drop(log);
        let before = vfs::read_all(&vfs, &dir.join(EVENTS_FILE)).unwrap();
        vfs.inject(Fault::eio(Op::Rename, 1));
        let log = EventLog::open(Arc::new(vfs.clone()), dir, None).unwrap();
        log.record(flush(1));
        drop(log);
        vfs.clear_fault();
        assert_eq!(vfs.fired().len(), 1, "the rename was not tried");
        let after = vfs::read_all(&vfs, &dir.join(EVENTS_FILE)).unwrap();
        assert_eq!(before, after);
    }
}
