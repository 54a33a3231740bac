//! The commit pipeline: the one place where sequence numbers are assigned.
//!
//! Writers queue up; the writer at the front becomes the leader, takes the
//! queued batches behind it as one group, assigns the group a contiguous
//! range of sequence numbers and writes it to the WAL as one record (one
//! fsync if any member asked for `sync`). Then the group goes into the
//! memtable, in one of two ways:
//! - **Pipelined** (Pebble's commit pipeline; `pipelined_commit`, off by
//!   default, and `concurrent_memtable_writes` on, and someone queued
//!   behind the group or an earlier group still inserting): the leader leaves the commit
//!   slot as soon as the record is framed, so the next group forms and
//!   frames while this one inserts. Every member inserts its own batch
//!   with `MemTable::add_concurrent` (a member done with its own takes the
//!   batches nobody has started, so a sleeping follower never holds the
//!   group up); the member whose insert finishes last waits until every
//!   earlier group has published (`visible_seq` = its first number - 1:
//!   a brief spin, then a sleep on `publish_cv`), publishes, and hands the
//!   members their result.
//! - **In the slot**: a lone writer (nobody queued behind it, no group
//!   still inserting) inserts with plain `add` while it keeps the slot,
//!   the cheapest path for one thread; with pipelining off a larger group
//!   inserts in parallel as above but keeps the slot until published
//!   (RocksDB's parallel memtable writes); with `concurrent_memtable_writes`
//!   off the leader inserts every batch with `add`.
//!
//! **Insert hints.** A writer that finds another batch writer in
//! `commit` (`writers_in`) looks up where its one-entry batch's key goes in the
//! active memtable before it queues (`hint_for`, `MemTable::insert_hint`);
//! if it then leads a group of one, it inserts from there
//! (`MemTable::add_hinted`), walking on past whatever was linked since.
//! The skiplist search, most of a random key's insert, so runs beside
//! the slot holder rather than inside the slot, which is what lets
//! several writers outrun one on two cores (with the watching in
//! `BUSY_SPINS`). A hint made in a memtable that has rotated since is
//! ignored. A lone writer makes none.
//!
//! Invariants:
//! - Sequence numbers are assigned under the queue lock, in queue order, and
//!   never reused: `last_seq` only grows. Every number assigned is
//!   published (`visible_seq` reaches it) even when its group or ingestion
//!   fails or goes unused, or later groups would wait for it forever.
//! - Only the slot holder frames WAL records, so records are in sequence
//!   order. Plain `add` runs only when no other insert can: the slot is
//!   held and `visible_seq` showed every earlier group published; every
//!   other insert is `add_concurrent`.
//! - `visible_seq` only grows and never passes an unfinished insert: a
//!   group stores it after all its batches are in (by the leader after its
//!   inserts, or by the member whose decrement of `Group::pending`,
//!   `AcqRel` after each batch's inserts, reaches zero and has therefore
//!   seen every member's inserts), and only once `visible_seq` is at its
//!   first number - 1, so groups publish in sequence order and a reader at
//!   `visible_seq` never sees a gap. A write returns only once published.
//! - A group's memtable is the active one when it takes it in the slot,
//!   and stays so until the group publishes: whatever needs a quiescent
//!   memtable holds the slot and first waits until every assigned number
//!   is published (`quiesce`): a rotation (it seals the memtable at
//!   `last_seq`), an ingestion (its overlap check, its flushable entry's
//!   rotation and its own number). Snapshots and reads take `visible_seq`
//!   and need nothing more.
//! - Nothing in the leader slot waits for a disk sync that the group did not
//!   ask for: an ingestion writes its MANIFEST record, publishes and leaves
//!   the slot, and its own caller syncs afterwards (see `version::set`).
//! - The leader frames records into memory under the WAL lock
//!   (`wal_buffer`); bytes reach the file in a write-out (`write_out`,
//!   under `io`): by the WAL thread every `wal_flush_interval`, by a synced
//!   write, or by the leader itself when the interval is zero. No write
//!   system call or fsync happens under the WAL lock.
//! - A rotation neither creates a file nor syncs one, allocates no
//!   memtable and wakes no background thread when the WAL thread runs
//!   (`wal_flush_interval` > 0): the thread creates the next WAL and its
//!   memtable ahead of need (`spare`), syncing the directory so the WAL's
//!   name is durable before any MANIFEST edit names it (recovery requires
//!   that WAL), and the old WAL is retired unsynced
//!   (`retired`) and written out and synced by the thread, which then
//!   wakes the flush thread (`bg_wake_pending`). No byte of the new WAL is
//!   written before that sync (`retired_pending`), so a later WAL never
//!   reaches the disk ahead of an earlier one; a synced write, a flush of
//!   the retired memtable and `close` sync the retired WAL first. An
//!   ingestion that queues behind the memtable (keeping its WAL) likewise
//!   takes a memtable the thread made ahead of need (`spare_mem`).
//! - Every wait of a foreground write is timed and counted by cause
//!   (`write_wait`); followers count theirs under their leader's slowest
//!   phase when it explains at least half of the wait.
//! - A batch writer counts itself in (`writers_in`) before it reads
//!   `DbInner::closed`, and is refused if set; `Db::close` sets it and
//!   then waits for the count to drain (`wait_writers_out`), so no batch
//!   commits after a close's last WAL sync. (Before the queue: the loom
//!   model's protocol is unchanged.)
//!
//! The queue, the leader/follower hand-off, the parallel insert, the
//! pipelined groups, the publication order and a rotation's quiescing are
//! checked by a loom model, `crates/strata-loom/src/commit.rs`, which
//! mirrors `commit`, `follow`, `lead`, `write_group`, `insert_group`,
//! `wait_done`, `release_slot`, `leave_slot`, `wait_published`,
//! `publish_in_order`, `quiesce` and `rotate` step by step: change it with
//! them. Likewise `crates/strata-loom/src/stall.rs` mirrors `make_room`,
//! `rotate_now` and `notify_room` (stops for queue room and L0 depth,
//! woken by flush and compaction or a background error), and
//! `crates/strata-loom/src/wal_rotation.rs` mirrors `rotate_now`'s
//! retired WAL, `write_out`, `finish_retired`, `sync_retired` and
//! `flush_wal`.

use super::wal_buffer::Wal;
use super::write_wait::WaitCause;
use super::{filenames, DbInner};
use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::memtable::skiplist::InsertHint;
use crate::memtable::MemTable;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::ingest::{self, IngestResult, Prepared};
use super::write_batch::{BatchOp, WriteBatch};

/// Largest group a leader builds, in batch bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;

pub(crate) enum Job {
    Batch(WriteBatch),
    /// Move the memtable (if not empty) onto the immutable queue.
    Rotate,
    /// Take a sequence number for prepared ingested files and place them.
    Ingest(IngestJob),
}

pub(crate) struct IngestJob {
    pub files: Vec<Prepared>,
    /// The excise range; `files` may hold its range-tombstone file.
    pub excise: Option<(Vec<u8>, Vec<u8>)>,
    pub allow_overlap: bool,
    pub result: Arc<Mutex<Option<IngestOutcome>>>,
    /// Set just before a MANIFEST record naming `files` is handed to the
    /// MANIFEST log: from then on the files may be the database's, and a
    /// caller whose commit failed must leave them (the next open judges
    /// them); while it is unset, a failed commit wrote nothing naming
    /// them, and the caller removes them (`Db::ingest`).
    pub named: Arc<AtomicBool>,
}

/// What an ingestion job hands back to its caller.
pub(crate) enum IngestOutcome {
    Done(IngestResult),
    /// The excise cannot cut the tree (memory or a snapshot now sees the
    /// range) and `prepare` wrote no range-tombstone file: nothing was
    /// taken (no sequence number published, no record written); the files
    /// come back for the caller to add one and commit again.
    NeedTombstone(Vec<Prepared>),
}

struct Writer {
    job: Mutex<Option<Job>>,
    sync: bool,
    cv: Condvar,
    /// `WAITING`, then `INSERT` (a parallel group: insert your batch) and
    /// `DONE`, or `DONE` straight away (the leader wrote the batch).
    /// Stored with `Release` under the queue lock, then `cv` is notified.
    state: AtomicU8,
    result: Mutex<Option<Result<()>>>,
    /// The slowest phase of the leader that wrote this writer's batch.
    slowest: Mutex<Option<(WaitCause, Duration)>>,
    /// Set when the writer reaches the front of the queue (it leads next).
    turn: AtomicBool,
    /// The group this writer inserts for and its place in it, handed over
    /// with `INSERT` (and taken by the writer, so no cycle of `Arc`s
    /// remains).
    group: Mutex<Option<(Arc<Group>, usize)>>,
    /// Where the batch's one entry goes in the memtable, found before the
    /// writer queued (`hint_for`), for its insert if it leads a group of
    /// one. Boxed: most writers have none, and the hint is a cache line
    /// and a half that a lone writer's `Writer` need not carry.
    hint: Option<Box<InsertHint>>,
}

/// A queued writer whose group has not reached it.
const WAITING: u8 = 0;
/// The writer's group is in the WAL and has its sequence numbers: the
/// writer inserts its own batch, if nobody took it yet (`Group::batches`).
const INSERT: u8 = 1;
/// The writer's group is published; `result` holds the outcome.
const DONE: u8 = 2;

/// A write group whose members insert their own batches into the memtable
/// at once, each on its own thread (RocksDB's parallel memtable writes).
/// A batch is inserted by whoever takes it from `batches` first: its own
/// writer if it is running, else a member done with its own (the leader
/// does not wait for a sleeping follower to be scheduled, which on a busy
/// machine costs more than the insert). The member whose insert finishes
/// last publishes `last_seq` and releases the commit slot, so groups
/// still publish one at a time, in sequence order.
struct Group {
    /// Queue order, the leader first; they are the front of the queue.
    members: Vec<Arc<Writer>>,
    /// Each member's batch (sequence numbers set), taken by its inserter.
    batches: Vec<Mutex<Option<WriteBatch>>>,
    /// The memtable to insert into: no rotation runs while the group holds
    /// the slot, so it stays the active one until the group is published.
    mem: Arc<MemTable>,
    first_seq: u64,
    last_seq: u64,
    /// Whether the group keeps the commit slot until it is published (the
    /// next group forms only after). Else (a pipelined group) the leader
    /// released the slot once the WAL record was framed, and the member
    /// that publishes first waits for every earlier group to publish.
    holds_slot: bool,
    /// Batches not yet fully inserted. Decremented with `AcqRel` after each
    /// batch's inserts: the member that brings it to zero has seen every
    /// other batch's inserts happen before, so its `Release` store of
    /// `visible_seq` publishes them all.
    pending: AtomicUsize,
    /// The first insert error (the WAL already holds the whole group, so
    /// it also becomes the background error).
    error: Mutex<Option<Error>>,
    /// The leader's slowest phase up to the WAL, for the followers' waits.
    slowest: Option<(WaitCause, Duration)>,
}

/// What `lead` leaves to do.
enum Led {
    /// The group is published (or failed); the leader releases the slot.
    Serial(Result<()>, Vec<Arc<Writer>>),
    /// The group is in the WAL: the members insert its batches.
    Parallel(Arc<Group>),
}

/// The smallest group (in entries) that is inserted in parallel; smaller
/// groups are inserted by the leader alone. 2 means every group of more
/// than one batch: a member is never woken just to insert (the leader
/// takes the batches of members not already running), so a parallel group
/// costs the serial one only a CAS per link and a counter per batch. No
/// break-even showed on the 2-core machine the benchmarks run on, where
/// 97% of groups hold one batch even with 4 writers
/// (docs/bench-history/w4-foreground-latency.md, parallel memtable inserts).
const PARALLEL_MIN_ENTRIES: u64 = 2;

/// Rounds a queued writer watches for its turn or its group's end without
/// leaving the CPU (`spin_loop`; 512 rounds took 15 µs on the benchmark
/// machine) before it starts yielding. With several writers the slot is
/// held about a microsecond per group (the skiplist search is done before
/// queueing, `hint_for`), so the writer ahead, running on the other core,
/// is usually done within the busy rounds; yielding at once cost a
/// context switch per Put (a quarter of the CPU of 4 writers on 2 cores
/// went to `sched_yield` and the switches). Measured on the 2-core
/// machine (docs/bench-history/w4-foreground-latency.md, session 27),
/// 4 writers' puts/s against one
/// writer's with 0 / 100 / 500 / 2,000 / 10,000 busy rounds: 0.98x /
/// 1.34x / 1.39x / 1.39x / 1.24x. Longer watches lose when the writer
/// ahead was preempted: only yielding or sleeping gives it the CPU back.
/// Only batch writers watch so, and not while an ingestion holds the
/// slot (tens of microseconds): there they yield, as before.
const BUSY_SPINS: u32 = 512;

/// Rounds a queued writer watches for its group to finish (yielding the
/// CPU between looks) after `BUSY_SPINS` and before it sleeps on its
/// condition variable.
const SPIN_ROUNDS: u32 = 64;

/// How long a queued writer watches for its turn (yielding between
/// looks) while an ingestion holds the commit slot, before it sleeps. An
/// ingestion holds the slot 30-70 µs (placement, the MANIFEST record and
/// the version framed in memory; no disk I/O), longer than `SPIN_ROUNDS`
/// lasts, so the Put queued behind it used to sleep and pay a wake-up on
/// top (W4 disjoint: its slowest Puts waited 55-87 µs for a 45 µs slot,
/// docs/bench-history/w4-foreground-latency.md, session 24).
/// Ingestions are rare (W4: five a second),
/// so the extra watching costs little CPU.
const INGEST_SPIN: Duration = Duration::from_micros(200);

/// Rounds a pipelined group watches `visible_seq` (busy, `spin_loop`) for
/// the groups before it to publish before it sleeps. Short: on two cores
/// the group waited for is often not running (preempted by the waiter or
/// another writer), and then only sleeping gives it the CPU. Tried on the
/// 2-core machine under load (docs/bench-history/w4-foreground-latency.md,
/// pipelined write groups): 512 busy
/// rounds then 4 yields, or 4 then 2 yields, cost 40-60% of the puts/s of
/// 16 busy rounds then sleeping.
const PUBLISH_SPINS: u32 = 16;

/// Hands a follower its group's result and wakes it; called under the
/// queue lock (the follower sleeps on its condition variable with it).
fn finish_member(member: &Writer, result: &Result<()>, slowest: Option<(WaitCause, Duration)>) {
    // A follower that never looked drops its share of a parallel group
    // here (the group holds the member).
    member.group.lock().take();
    *member.result.lock() = Some(result.clone());
    *member.slowest.lock() = slowest;
    member.state.store(DONE, Ordering::Release);
    member.cv.notify_one();
}

/// Counts a follower's wait, blamed on the leader's slowest phase if that
/// explains at least half of it.
fn count_follower_wait(db: &DbInner, w: &Writer, enqueued: Instant) {
    let waited = enqueued.elapsed();
    let cause = match *w.slowest.lock() {
        Some((c, d)) if d * 2 >= waited => c,
        _ => WaitCause::CommitQueue,
    };
    db.record_wait(cause, waited);
}

/// A follower's return once its group is done: counts its wait and takes
/// its result.
fn follower_done(db: &DbInner, w: &Writer, enqueued: Instant) -> Result<()> {
    count_follower_wait(db, w, enqueued);
    w.result.lock().take().unwrap_or(Ok(()))
}

/// The phases a leader went through, timed: each is counted (and logged if
/// long) as it ends; the slowest is handed to the group's followers.
#[derive(Default)]
struct Phases {
    slowest: Option<(WaitCause, Duration)>,
}

impl Phases {
    fn add(&mut self, db: &DbInner, cause: WaitCause, d: Duration) {
        db.record_wait(cause, d);
        if self.slowest.is_none_or(|(_, s)| d > s) {
            self.slowest = Some((cause, d));
        }
    }
}

struct Queue {
    writers: VecDeque<Arc<Writer>>,
    last_seq: u64,
}

pub(crate) struct CommitPipeline {
    q: Mutex<Queue>,
    /// Signalled (under `q`) when the immutable queue shrinks.
    room_cv: Condvar,
    /// The WAL records are framed into (memory only; see `wal_buffer`).
    wal: Mutex<Wal>,
    /// Held by a write-out: bytes are taken from a `Wal` and written to its
    /// file under it, so they reach the file in the order they were framed.
    /// Lock order: `io`, then `retired`, then `wal`; nobody holding `wal`
    /// takes `io`.
    io: Mutex<()>,
    /// The WAL a rotation left unsynced, for the next write-out to finish
    /// (write and sync) before any byte of the active WAL.
    retired: Mutex<Option<Wal>>,
    /// Whether `retired` holds a WAL; set under `wal` by the rotation,
    /// cleared once it is synced (readable without waiting for that sync).
    retired_pending: AtomicBool,
    /// A WAL file and its memtable made ahead of the next rotation by the
    /// WAL thread: `(file number, WAL, memtable)`. The memtable's arena
    /// has its first chunk, so a rotation allocates nothing.
    spare: Mutex<Option<(u64, Wal, Arc<MemTable>)>>,
    /// A memtable made ahead of need by the WAL thread for an ingestion
    /// that queues behind the active memtable (which keeps its WAL, so
    /// needs no spare WAL): its arena's first chunk was taken off the
    /// commit slot (making it there held the slot 30-200 µs, W3 overlap).
    spare_mem: Mutex<Option<Arc<MemTable>>>,
    /// A rotation left waking the flush and compaction threads to the WAL
    /// thread, which does it after its next write-out (a wake-up is a
    /// system call that, on this 2-core VM, now and then held the
    /// rotating writer for over a millisecond).
    bg_wake_pending: AtomicBool,
    /// Whether an ingestion holds the commit slot (queued writers watch
    /// for their turn longer: `INGEST_SPIN`).
    slot_ingesting: AtomicBool,
    /// Where a pipelined group (or a job quiescing the memtable) sleeps
    /// until an earlier group publishes; `publish_sleepers` counts them, so
    /// a publisher with nobody asleep takes no lock.
    publish_lock: Mutex<()>,
    publish_cv: Condvar,
    publish_sleepers: AtomicUsize,
    /// The WAL thread, once started, and whether it is parked: with
    /// nothing to write for a while it stops waking every
    /// `wal_flush_interval` (about a thousand wake-ups a second of an idle
    /// database, or of one loaded by ingestion alone, as `strata import`
    /// does) until a write leaves bytes for it (`wake_flusher`).
    flusher: std::sync::OnceLock<std::thread::Thread>,
    flusher_parked: AtomicBool,
    /// Batch writers inside `commit` (queued, leading or about to queue):
    /// a writer that finds another there looks up its entry's place in
    /// the memtable before it queues (`hint_for`).
    writers_in: AtomicUsize,
    /// The WALs created whose directory entries no directory sync has
    /// covered yet (a number joins right after its file is created, before
    /// anything is written to it, and leaves once a sync that began after
    /// it joined has finished). A MANIFEST edit may name a WAL as the
    /// oldest still needed only once its entry is durable
    /// (`make_wal_entries_durable`), so recovery can require that WAL: a
    /// power cut cannot take away a WAL a durable edit names; and a synced
    /// write is acknowledged only once its WAL's entry is durable.
    ///
    /// A set, not a watermark: WALs are not created in number order. A
    /// rotation that finds no spare allocates its number and then creates
    /// the file, and the WAL thread may meanwhile allocate the next number,
    /// create that spare and sync the directory; a watermark ("every WAL up
    /// to the spare is durable") then covered the rotation's WAL, created
    /// after that sync, and a synced write to it skipped the directory
    /// sync, so a power cut took the WAL and the acknowledged writes in it
    /// (found by the metamorphic test: a synced write lost, or the open
    /// refusing a gap in the WAL's sequence numbers;
    /// `tests/wal_entry_durability.rs`).
    wal_entries_pending: Mutex<Vec<u64>>,
    /// The highest `last_seq` a rotation (`rotate`) has sealed at, whether
    /// or not the memtable held anything: every operation numbered up to
    /// it is in a table or in a memtable on the immutable queue. A
    /// checkpoint reads it after its own rotation (`sealed_seq`): with an
    /// empty memtable no flush follows to advance the flushed sequence
    /// past an ingestion placed straight into the tree.
    sealed_seq: AtomicU64,
}

/// Counts a caller in `CommitPipeline::writers_in` for as long as it lives.
struct WriterIn<'a>(&'a AtomicUsize);

impl<'a> WriterIn<'a> {
    /// Counts the caller in; returns whether another caller was in.
    /// `SeqCst`, against `Db::close`: a writer counts itself in and then
    /// loads `DbInner::closed`, close stores `closed` and then loads the
    /// count (`wait_writers_out`), so either the writer sees the close or
    /// the close waits for the writer. (An RMW is a full barrier on x86
    /// whatever its ordering: no cost there.)
    fn enter(n: &'a AtomicUsize) -> (WriterIn<'a>, bool) {
        let others = n.fetch_add(1, Ordering::SeqCst) > 0;
        (WriterIn(n), others)
    }
}

impl Drop for WriterIn<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl CommitPipeline {
    /// The pipeline of a database whose active WAL is `wal`, whose
    /// directory entry the caller made durable.
    pub fn new(last_seq: u64, wal: Wal) -> CommitPipeline {
        CommitPipeline {
            wal_entries_pending: Mutex::new(Vec::new()),
            q: Mutex::new(Queue {
                writers: VecDeque::new(),
                last_seq,
            }),
            room_cv: Condvar::new(),
            wal: Mutex::new(wal),
            io: Mutex::new(()),
            retired: Mutex::new(None),
            retired_pending: AtomicBool::new(false),
            spare: Mutex::new(None),
            spare_mem: Mutex::new(None),
            bg_wake_pending: AtomicBool::new(false),
            sealed_seq: AtomicU64::new(0),
            slot_ingesting: AtomicBool::new(false),
            publish_lock: Mutex::new(()),
            publish_cv: Condvar::new(),
            publish_sleepers: AtomicUsize::new(0),
            flusher: std::sync::OnceLock::new(),
            flusher_parked: AtomicBool::new(false),
            writers_in: AtomicUsize::new(0),
        }
    }

    /// Records the WAL thread (see `flusher`).
    pub fn set_flusher(&self, t: std::thread::Thread) {
        let _ = self.flusher.set(t);
    }

    /// Wakes the WAL thread if it is parked: after bytes were framed for
    /// it to write out (one atomic load otherwise). The thread publishes
    /// that it parks before it looks for framed bytes under the WAL lock,
    /// and a writer frames under that lock before it looks here, so one
    /// of the two sees the other.
    pub fn wake_flusher(&self) {
        if self.flusher_parked.load(Ordering::SeqCst) {
            self.unpark_flusher();
        }
    }

    /// Wakes the WAL thread whatever it is doing (at close).
    pub fn unpark_flusher(&self) {
        if let Some(t) = self.flusher.get() {
            t.unpark();
        }
    }

    /// Parks the WAL thread (its own call) until [`Self::wake_flusher`],
    /// unless framed bytes or a retired WAL already wait for it.
    pub fn park_flusher(&self, db: &DbInner) {
        self.flusher_parked.store(true, Ordering::SeqCst);
        let idle = !self.retired_pending.load(Ordering::SeqCst)
            && !self.bg_wake_pending.load(Ordering::SeqCst)
            && !self.wal.lock().has_pending();
        if idle && !db.shutting_down.load(Ordering::SeqCst) {
            std::thread::park();
        }
        self.flusher_parked.store(false, Ordering::SeqCst);
    }

    /// Waits until no batch writer is in `commit` (at close, after
    /// `DbInner::closed` is set: the writers counted in before it finish
    /// their commits, every later one is refused). Close is rare and the
    /// writers inside finish within microseconds, or when a stall ends
    /// (the background threads still run), so it polls.
    pub fn wait_writers_out(&self) {
        while self.writers_in.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Wakes a leader waiting for room in the immutable queue.
    pub fn notify_room(&self) {
        let _q = self.q.lock();
        self.room_cv.notify_all();
    }

    /// Waits until every sequence number up to `seq` is published
    /// (`visible_seq` >= `seq`): a pipelined group before it publishes its
    /// own, a job that needs a quiescent memtable before it starts. The
    /// groups waited for are inserting on other threads, usually for a
    /// microsecond or two: watch briefly, then sleep until a publisher
    /// wakes it (on two cores the thread waited for may be preempted by
    /// the waiter itself: see `PUBLISH_SPINS`). Returns how long it waited, if at all
    /// (the clock is read only once a wait begins).
    fn wait_published(&self, db: &DbInner, seq: u64) -> Option<Duration> {
        if db.visible_seq.load(Ordering::Acquire) >= seq {
            return None;
        }
        let start = Instant::now();
        for _ in 0..PUBLISH_SPINS {
            std::hint::spin_loop();
            if db.visible_seq.load(Ordering::Acquire) >= seq {
                return Some(start.elapsed());
            }
        }
        // Counted before the check under the lock, and `publish` stores
        // `visible_seq` before it reads the count (both `SeqCst`-ordered):
        // either the publisher sees a sleeper and notifies under the lock,
        // or this check sees its number. The timeout is only a backstop.
        self.publish_sleepers.fetch_add(1, Ordering::SeqCst);
        let mut g = self.publish_lock.lock();
        while db.visible_seq.load(Ordering::SeqCst) < seq {
            self.publish_cv.wait_for(&mut g, Duration::from_millis(10));
        }
        drop(g);
        self.publish_sleepers.fetch_sub(1, Ordering::SeqCst);
        Some(start.elapsed())
    }

    /// Publishes a pipelined group (`first_seq..=last_seq`, all in the
    /// memtable) once every group before it has published, so `visible_seq`
    /// only grows and never passes an unfinished insert; wakes whoever
    /// sleeps on publication. Returns how long it waited for earlier
    /// groups.
    fn publish_in_order(&self, db: &DbInner, first_seq: u64, last_seq: u64) -> Option<Duration> {
        let waited = self.wait_published(db, first_seq - 1);
        db.visible_seq.store(last_seq, Ordering::Release);
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.publish_sleepers.load(Ordering::Relaxed) > 0 {
            let _g = self.publish_lock.lock();
            self.publish_cv.notify_all();
        }
        waited
    }

    /// Waits, with the queue lock released, until every sequence number
    /// assigned so far is published: the caller holds the commit slot (no
    /// number is assigned meanwhile), so afterwards no pipelined group is
    /// still inserting and the memtable is quiescent (a rotation may seal
    /// it, an ingestion may check it for overlap and take the next number).
    fn quiesce(&self, db: &DbInner, q: &mut MutexGuard<'_, Queue>) {
        let last = q.last_seq;
        if db.visible_seq.load(Ordering::Acquire) >= last {
            return;
        }
        MutexGuard::unlocked(q, || self.wait_published(db, last));
    }

    /// Writes out the framed WAL records and syncs them (at close, and for a
    /// flush of a memtable sharing the active WAL).
    pub fn sync_wal(&self, db: &DbInner) -> Result<()> {
        self.write_out(db, true)
    }

    /// Hands every framed record to the operating system, the retired
    /// WAL's (synced) first; with `sync`, makes them durable.
    fn write_out(&self, db: &DbInner, sync: bool) -> Result<()> {
        let _io = self.io.lock();
        loop {
            self.finish_retired(db)?;
            let mut w = self.wal.lock();
            if self.retired_pending.load(Ordering::Acquire) {
                // A rotation retired the WAL since: it goes first.
                continue;
            }
            let bytes = w.take_pending();
            let (file, number) = (Arc::clone(&w.file), w.number);
            drop(w);
            let mut f = file.lock();
            f.write(&bytes)?;
            if sync {
                // After a background error nothing is synced: records
                // handed to a failed write may be missing from the file,
                // so no sync may claim the WAL holds what the memtable does.
                if let Some(e) = db.bg_error() {
                    return Err(e);
                }
                f.sync()?;
                self.make_wal_entry_durable(db, Some(number))?;
            }
            return Ok(());
        }
    }

    /// Writes out and syncs the WAL a rotation retired, if any. The caller
    /// holds `io`.
    fn finish_retired(&self, db: &DbInner) -> Result<()> {
        if !self.retired_pending.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut r = self.retired.lock();
        if let Some(old) = r.as_mut() {
            let bytes = old.take_pending();
            let mut f = old.file.lock();
            f.write(&bytes)?;
            if let Some(e) = db.bg_error() {
                return Err(e);
            }
            f.sync()?;
            self.make_wal_entry_durable(db, Some(old.number))?;
        }
        *r = None;
        self.retired_pending.store(false, Ordering::Release);
        Ok(())
    }

    /// Syncs the WAL a rotation retired, if any (a flush, before writing
    /// the retired memtable's table).
    pub fn sync_retired(&self, db: &DbInner) -> Result<()> {
        let _io = self.io.lock();
        self.finish_retired(db)
    }

    /// The WAL thread's round, every `wal_flush_interval`: writes out (and
    /// syncs a retired WAL first), wakes the background threads if a
    /// rotation asked it to, then creates the next WAL and its memtable
    /// ahead of need. Returns whether it had anything to do (bytes or a
    /// retired WAL to write, a spare to create).
    pub fn flush_wal(&self, db: &DbInner) -> Result<bool> {
        let busy = self.retired_pending.load(Ordering::Acquire) || self.wal.lock().has_pending();
        let written = self.write_out(db, false);
        // Even after a failed write-out: the threads then see the error
        // (they would also wake on their own within 200 ms).
        if self.bg_wake_pending.swap(false, Ordering::SeqCst) {
            db.bg_cv.notify_all();
        }
        written?;
        if self.spare.lock().is_none() {
            let number = db.new_file_number();
            let path = filenames::wal(&db.dir, number);
            let wal = Wal::new(number, db.vfs.create(&path)?, path.display().to_string());
            self.wal_created(number);
            let mem = Arc::new(MemTable::new(number));
            *self.spare.lock() = Some((number, wal, mem));
            // The new WAL's directory entry is made durable here, off every
            // foreground path (a rotation may take the spare meanwhile:
            // nothing waits for this), so neither the flush that names it
            // in the MANIFEST nor its first synced write syncs the
            // directory.
            self.make_wal_entries_durable(db)?;
            return Ok(true);
        }
        if self.spare_mem.lock().is_none() {
            let mem = Arc::new(MemTable::new(db.new_file_number()));
            *self.spare_mem.lock() = Some(mem);
            return Ok(true);
        }
        Ok(busy)
    }

    /// Counts WAL `number`, whose file was just created, among those whose
    /// directory entries are not yet durable. Called before the WAL is
    /// handed to anyone (as the spare or the active WAL).
    fn wal_created(&self, number: u64) {
        self.wal_entries_pending.lock().push(number);
    }

    /// Makes the directory entry of every WAL created so far durable (a
    /// directory sync, unless every one is already). Called before a
    /// MANIFEST edit names a WAL: by the flush thread, and by the WAL
    /// thread for its spare, so it is a no-op for a flush unless a
    /// rotation had to create its WAL itself.
    pub fn make_wal_entries_durable(&self, db: &DbInner) -> Result<()> {
        self.make_wal_entry_durable(db, None)
    }

    /// Makes WAL `number`'s directory entry durable (`None`: every WAL's),
    /// unless it is already; the directory sync covers every WAL created
    /// before it. A synced write calls it for its WAL too: without it, a
    /// power cut would remove the file with every synced write in it
    /// (found by the power-cut tests on `FaultVfs`; RocksDB syncs the WAL
    /// directory the same way).
    fn make_wal_entry_durable(&self, db: &DbInner, number: Option<u64>) -> Result<()> {
        let covered: Vec<u64> = {
            let pending = self.wal_entries_pending.lock();
            let needed = match number {
                Some(n) => pending.contains(&n),
                None => !pending.is_empty(),
            };
            if !needed {
                return Ok(());
            }
            // Every WAL counted now was created before the sync below
            // starts, so the sync makes each one's entry durable.
            pending.clone()
        };
        db.vfs.sync_dir(&db.dir)?;
        self.wal_entries_pending
            .lock()
            .retain(|n| !covered.contains(n));
        Ok(())
    }

    /// The memtable that replaces the active one when an ingestion queues
    /// behind it: the WAL thread's spare if it made one, else a new one.
    fn take_spare_memtable(&self, db: &DbInner) -> Arc<MemTable> {
        let spare = self.spare_mem.lock().take();
        spare.unwrap_or_else(|| Arc::new(MemTable::new(db.new_file_number())))
    }

    /// At a close whose sync failed (a background error): hands what was
    /// framed to the operating system anyway, retired WAL first, without a
    /// sync, as a buffered file would when dropped (bytes whose write
    /// failed are tried again). Nothing of the active WAL is written if the
    /// retired one could not be.
    pub fn write_out_on_error(&self) {
        let _io = self.io.lock();
        if let Some(old) = self.retired.lock().as_mut() {
            let bytes = old.take_pending();
            if old.file.lock().write(&bytes).is_err() {
                return;
            }
        }
        let mut w = self.wal.lock();
        let bytes = w.take_pending();
        let _ = w.file.lock().write(&bytes);
    }

    /// Removes the spare WAL (at close): it holds nothing.
    pub fn discard_spare(&self, db: &DbInner) {
        if let Some((number, wal, _)) = self.spare.lock().take() {
            drop(wal);
            let _ = db.vfs.remove(&filenames::wal(&db.dir, number));
        }
    }

    /// The memtable position of a one-entry batch's key, looked up before
    /// the writer queues when another batch writer is in `commit` (`others`;
    /// nothing is looked up by a lone writer, which would only search
    /// twice). The search is most of a random key's insert (cache misses
    /// down the skiplist: 54% of a single-thread put's samples), so with
    /// several writers it runs beside the slot holder's work instead of
    /// inside the slot, and the insert in the slot only walks from the
    /// hint past what was linked since (`SkipList::insert_hinted`).
    fn hint_for(&self, db: &DbInner, b: &WriteBatch, others: bool) -> Option<Box<InsertHint>> {
        if b.count() != 1 || !others {
            return None;
        }
        let key = match b.iter().next()?.ok()? {
            BatchOp::Put(k, _) | BatchOp::Delete(k) => k,
            BatchOp::DeleteRange(..) => return None,
        };
        // The memtable may rotate before this writer leads: the hint then
        // names another memtable and is ignored (`SkipList::insert_hinted`).
        Some(Box::new(db.super_version().mem.insert_hint(key)))
    }

    pub fn commit(&self, db: &DbInner, job: Job, sync: bool) -> Result<()> {
        let is_ingest = matches!(job, Job::Ingest(_));
        // Only batches count and watch on the CPU: an ingestion or a
        // rotation ahead holds the slot for tens of microseconds, not one,
        // and a Put beside an ingester alone gains nothing from a hint
        // (W4, where hints and busy watching there made the Put tail
        // longer: docs/bench-history/w4-foreground-latency.md, session 27).
        let (_in, hint, busy) = match &job {
            Job::Batch(b) => {
                let (guard, others) = WriterIn::enter(&self.writers_in);
                // Counted in first (see `WriterIn::enter`): a close that
                // began is seen here, or waits for this write.
                if db.closed.load(Ordering::SeqCst) {
                    return Err(db.closed_error());
                }
                (Some(guard), self.hint_for(db, b, others), BUSY_SPINS)
            }
            _ => (None, None, 0),
        };
        let w = Arc::new(Writer {
            job: Mutex::new(Some(job)),
            sync,
            cv: Condvar::new(),
            state: AtomicU8::new(WAITING),
            result: Mutex::new(None),
            slowest: Mutex::new(None),
            turn: AtomicBool::new(false),
            group: Mutex::new(None),
            hint,
        });
        // When this writer started waiting: the clock is read only once a
        // wait begins (a lone writer reads it three times per commit, all
        // in `lead`: clock reads were 5% of a single-thread put's time).
        let mut enqueued: Option<Instant> = None;
        // Taking the queue lock is waiting too (it is held while groups
        // are formed and finished); only a noticeable wait is counted.
        let mut q = match self.q.try_lock() {
            Some(q) => q,
            None => {
                enqueued = Some(Instant::now());
                self.q.lock()
            }
        };
        let lock_wait = enqueued.is_some_and(|t| t.elapsed() >= Duration::from_micros(20));
        q.writers.push_back(Arc::clone(&w));
        if is_ingest {
            // A leader stalled on a full memtable queue runs ingestions
            // ahead of itself; wake it so this one does not wait out its
            // timeout.
            self.room_cv.notify_all();
        }
        let mut waited = false;
        let mut spun = false;
        loop {
            let state = w.state.load(Ordering::Acquire);
            if state != WAITING {
                drop(q);
                let since = enqueued.unwrap_or_else(Instant::now);
                return self.follow(db, &w, state, since);
            }
            if q.writers.front().is_some_and(|f| Arc::ptr_eq(f, &w)) {
                break;
            }
            waited = true;
            let since = *enqueued.get_or_insert_with(Instant::now);
            if !spun {
                // A group usually finishes within microseconds: watch for
                // it, first on the CPU (its leader is likely running on
                // the other core: `BUSY_SPINS`), then yielding the CPU to
                // it, before paying for a sleep and a wake-up.
                spun = true;
                drop(q);
                for round in 0.. {
                    let state = w.state.load(Ordering::Acquire);
                    if state != WAITING {
                        return self.follow(db, &w, state, since);
                    }
                    if w.turn.load(Ordering::Acquire) {
                        break;
                    }
                    // Behind an ingestion (tens of microseconds in the
                    // slot, no disk I/O) it keeps watching up to
                    // `INGEST_SPIN`: a sleep there cost a wake-up on top
                    // of the wait (see `INGEST_SPIN`).
                    let ingesting = self.slot_ingesting.load(Ordering::Relaxed);
                    if round >= busy + SPIN_ROUNDS && !(ingesting && since.elapsed() < INGEST_SPIN)
                    {
                        break;
                    }
                    if round < busy && !ingesting {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                }
                q = self.q.lock();
                continue;
            }
            w.cv.wait(&mut q);
        }
        if let Some(t) = enqueued.filter(|_| waited || lock_wait) {
            db.record_wait(WaitCause::CommitQueue, t.elapsed());
        }
        let job = w.job.lock().take();
        let mut phases = Phases::default();
        let (result, group) = match job {
            Some(Job::Rotate) => (
                self.rotate(db, &mut q, "flush", &mut phases),
                vec![Arc::clone(&w)],
            ),
            Some(Job::Ingest(j)) => {
                self.slot_ingesting.store(true, Ordering::Relaxed);
                let r = self.ingest(db, &mut q, j);
                self.slot_ingesting.store(false, Ordering::Relaxed);
                (r, vec![Arc::clone(&w)])
            }
            Some(Job::Batch(b)) => match self.lead(db, &mut q, &w, b, &mut phases) {
                Led::Serial(r, group) => (r, group),
                Led::Parallel(group) => {
                    if !group.holds_slot {
                        // Pipelined: the group has its numbers and its WAL
                        // record, and its memtable is pinned until it
                        // publishes (a rotation quiesces first), so the
                        // next group may form and frame while this one
                        // inserts.
                        self.leave_slot(&mut q, &group.members);
                    }
                    // Followers still watching their state (not asleep)
                    // insert their own batches now; the leader inserts its
                    // own and takes what nobody has. No follower is woken
                    // for this: a wake-up costs more than the insert.
                    for m in group.members.iter().skip(1) {
                        m.state.store(INSERT, Ordering::Release);
                    }
                    drop(q);
                    let r = self.insert_group(db, &w, &group, 0, Some(&mut phases));
                    // A rotation's event line, staged in the slot.
                    db.events.write_staged();
                    return r;
                }
            },
            None => (
                Err(Error::internal("writer has no job")),
                vec![Arc::clone(&w)],
            ),
        };
        self.release_slot(&mut q, &group, &w, &result, phases.slowest);
        drop(q);
        // Event lines staged in the slot (a rotation's), written now that
        // the writers queued behind it can go on.
        db.events.write_staged();
        result
    }

    /// A queued writer whose state left `WAITING` (`state`): either its
    /// group is done, or it helps insert it first.
    fn follow(&self, db: &DbInner, w: &Arc<Writer>, state: u8, enqueued: Instant) -> Result<()> {
        if state == INSERT {
            let taken = w.group.lock().take();
            let r = match taken {
                Some((group, own)) => self.insert_group(db, w, &group, own, None),
                // The group finished without this writer (`release_slot`
                // took the group back): its result is on the way.
                None => self.wait_done(w),
            };
            count_follower_wait(db, w, enqueued);
            return r;
        }
        follower_done(db, w, enqueued)
    }

    /// A member of a parallel group inserts the batches nobody has taken,
    /// its own (`own`) first; the one whose insert finishes last publishes
    /// the group and releases the slot, the others wait until it has.
    /// Returns the group's result. The leader times its inserts (`phases`).
    fn insert_group(
        &self,
        db: &DbInner,
        w: &Arc<Writer>,
        group: &Group,
        own: usize,
        phases: Option<&mut Phases>,
    ) -> Result<()> {
        let t = phases.is_some().then(Instant::now);
        let n = group.batches.len();
        let mut last = false;
        for i in (own..n).chain(0..own) {
            let Some(b) = group.batches[i].lock().take() else {
                continue;
            };
            if let Err(e) = apply_concurrently(&group.mem, &b) {
                let e = db.set_bg_error("a write group's memtable insert", e);
                group.error.lock().get_or_insert(e);
            }
            // Every batch's inserts happen before the decrement that
            // reaches zero (the decrements form one release sequence).
            last |= group.pending.fetch_sub(1, Ordering::AcqRel) == 1;
        }
        if let (Some(p), Some(t)) = (phases, t) {
            p.add(db, WaitCause::MemtableInsert, t.elapsed());
        }
        if last {
            let result = group.error.lock().clone().map_or(Ok(()), Err);
            if group.holds_slot {
                // Nothing before the group is unpublished (`lead`).
                db.visible_seq.store(group.last_seq, Ordering::Release);
                let mut q = self.q.lock();
                self.release_slot(&mut q, &group.members, w, &result, group.slowest);
            } else {
                if let Some(d) = self.publish_in_order(db, group.first_seq, group.last_seq) {
                    db.record_wait(WaitCause::CommitQueue, d);
                }
                if group.members.len() > 1 {
                    let _q = self.q.lock();
                    for m in &group.members {
                        if !Arc::ptr_eq(m, w) {
                            finish_member(m, &result, group.slowest);
                        }
                    }
                }
            }
            return result;
        }
        self.wait_done(w)
    }

    /// Waits until `w`'s group is done and takes its result.
    fn wait_done(&self, w: &Writer) -> Result<()> {
        // Another member is still inserting: it finishes within
        // microseconds, so watch for it (as `commit` does) before sleeping.
        for round in 0..BUSY_SPINS + SPIN_ROUNDS {
            if w.state.load(Ordering::Acquire) == DONE {
                return w.result.lock().take().unwrap_or(Ok(()));
            }
            if round < BUSY_SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        let mut q = self.q.lock();
        while w.state.load(Ordering::Acquire) != DONE {
            w.cv.wait(&mut q);
        }
        drop(q);
        w.result.lock().take().unwrap_or(Ok(()))
    }

    /// Ends a group (`members`, the front of the queue, in queue order):
    /// pops it, hands every member but `me` its result, and wakes the
    /// writer now at the front (it leads next).
    fn release_slot(
        &self,
        q: &mut MutexGuard<'_, Queue>,
        members: &[Arc<Writer>],
        me: &Arc<Writer>,
        result: &Result<()>,
        slowest: Option<(WaitCause, Duration)>,
    ) {
        for member in members {
            if !Arc::ptr_eq(member, me) {
                finish_member(member, result, slowest);
            }
        }
        self.leave_slot(q, members);
    }

    /// Pops a group (`members`, the front of the queue) and wakes the
    /// writer now at the front (it leads next).
    fn leave_slot(&self, q: &mut MutexGuard<'_, Queue>, members: &[Arc<Writer>]) {
        for member in members {
            let front = q.writers.pop_front();
            debug_assert!(front.is_some_and(|f| Arc::ptr_eq(&f, member)));
        }
        if let Some(next) = q.writers.front() {
            next.turn.store(true, Ordering::Release);
            next.cv.notify_one();
        }
    }

    /// Runs a group led by `w`: forms it, gives it its sequence numbers,
    /// writes its WAL record and either inserts it into the memtable and
    /// publishes it (`Led::Serial`) or leaves each member to insert its own
    /// batch (`Led::Parallel`, with the members' batches handed back).
    fn lead(
        &self,
        db: &DbInner,
        q: &mut MutexGuard<'_, Queue>,
        w: &Arc<Writer>,
        first: WriteBatch,
        phases: &mut Phases,
    ) -> Led {
        if let Err(e) = self.make_room(db, q, first.size_bytes(), phases) {
            return Led::Serial(Err(e), vec![Arc::clone(w)]);
        }
        let mut group = vec![Arc::clone(w)];
        let mut batches = vec![first];
        let mut bytes = batches[0].size_bytes();
        let mut sync = w.sync;
        for f in q.writers.iter().skip(1) {
            if bytes >= MAX_GROUP_BYTES || (f.sync && !w.sync) {
                // A sync write does not ride in a group whose leader did
                // not ask to wait for a sync.
                break;
            }
            let mut j = f.job.lock();
            match j.take() {
                Some(Job::Batch(b)) => {
                    bytes += b.size_bytes();
                    sync |= f.sync;
                    batches.push(b);
                    group.push(Arc::clone(f));
                }
                other => {
                    *j = other;
                    break;
                }
            }
        }
        let count: u64 = batches.iter().map(|b| b.count() as u64).sum();
        let first_seq = q.last_seq + 1;
        q.last_seq += count;
        let last_seq = q.last_seq;
        let concurrent = db.opts.concurrent_memtable_writes;
        // Pipelined: the group leaves the slot once its WAL record is
        // framed and inserts (`add_concurrent`) while the next group forms
        // and frames. A lone writer (nobody queued behind it, no group
        // still inserting) keeps the slot instead and inserts with plain
        // `add`: the cheapest path for a single thread, and nothing can
        // overlap it. (`visible_seq` cannot reach `first_seq - 1` after
        // this check unless it already has: only groups before this one
        // publish, and while this group holds the slot no other forms.)
        let pipelined = concurrent
            && db.opts.pipelined_commit
            && (group.len() > 1
                || q.writers.len() > 1
                || db.visible_seq.load(Ordering::Acquire) != first_seq - 1);
        let parallel =
            pipelined || (concurrent && group.len() > 1 && count >= PARALLEL_MIN_ENTRIES);
        let result = MutexGuard::unlocked(q, || -> Result<Option<Arc<MemTable>>> {
            // The WAL phases' end is the insert's start: one clock read.
            let t = self.write_group(db, &mut batches, first_seq, last_seq, sync, phases)?;
            // Taken in the slot: no rotation can run until this group is
            // published (a rotation quiesces first).
            let mem = db.super_version().mem.clone();
            if parallel {
                return Ok(Some(mem));
            }
            match (&w.hint, &batches[..]) {
                (Some(h), [b]) => apply_hinted(&mem, b, h)?,
                _ => {
                    for b in batches.iter() {
                        apply(&mem, b)?;
                    }
                }
            }
            drop(mem);
            phases.add(db, WaitCause::MemtableInsert, t.elapsed());
            db.visible_seq.store(last_seq, Ordering::Release);
            Ok(None)
        });
        let mem = match result {
            Ok(Some(mem)) => mem,
            Ok(None) => return Led::Serial(Ok(()), group),
            Err(e) => {
                // The WAL or memtable may now hold part of this group: stop
                // accepting writes rather than risk a gap or a duplicate.
                let e = db.set_bg_error("a write group's WAL write or memtable insert", e);
                // Its numbers are still published, in order: a pipelined
                // group after it (or a quiescing job) waits for them.
                self.publish_in_order(db, first_seq, last_seq);
                return Led::Serial(Err(e), group);
            }
        };
        let g = Arc::new(Group {
            pending: AtomicUsize::new(group.len()),
            members: group,
            batches: batches.into_iter().map(|b| Mutex::new(Some(b))).collect(),
            mem,
            first_seq,
            last_seq,
            holds_slot: !pipelined,
            error: Mutex::new(None),
            slowest: phases.slowest,
        });
        for (i, m) in g.members.iter().enumerate().skip(1) {
            *m.group.lock() = Some((Arc::clone(&g), i));
        }
        Led::Parallel(g)
    }

    /// Gives the group's batches their sequence numbers and frames them
    /// into the WAL as one record (written out, and synced, as the group
    /// asks). Returns when its last phase ended.
    fn write_group(
        &self,
        db: &DbInner,
        batches: &mut [WriteBatch],
        first_seq: u64,
        last_seq: u64,
        sync: bool,
        phases: &mut Phases,
    ) -> Result<Instant> {
        let mut seq = first_seq;
        for b in batches.iter_mut() {
            b.set_sequence(seq);
            seq += b.count() as u64;
        }
        debug_assert_eq!(seq, last_seq + 1);
        let user: usize = batches
            .iter()
            .map(|b| b.size_bytes() - super::write_batch::HEADER)
            .sum();
        db.stats
            .user_bytes
            .fetch_add(user as u64, Ordering::Relaxed);
        let t = Instant::now();
        {
            let mut wal = self.wal.lock();
            let before = wal.log.len();
            if batches.len() == 1 {
                wal.append(batches[0].data())?;
            } else {
                let mut all = WriteBatch::new();
                all.set_sequence(first_seq);
                for b in batches.iter() {
                    all.append(b);
                }
                wal.append(all.data())?;
            }
            db.stats
                .wal_bytes
                .fetch_add(wal.log.len() - before, Ordering::Relaxed);
        }
        // A parked WAL thread has bytes to write out (unsynced), or a
        // spare WAL to make again (after a rotation).
        self.wake_flusher();
        // Each phase starts when the one before ended (one clock read per
        // phase).
        let mut t = t;
        let mut phase = |cause: WaitCause, t: &mut Instant| {
            let now = Instant::now();
            phases.add(db, cause, now - *t);
            *t = now;
        };
        if sync {
            phase(WaitCause::WalWrite, &mut t);
            self.write_out(db, true)?;
            phase(WaitCause::WalSync, &mut t);
        } else {
            if db.opts.wal_flush_interval.is_zero() {
                self.write_out(db, false)?;
            }
            // Else the WAL thread writes it out within the interval.
            phase(WaitCause::WalWrite, &mut t);
        }
        if sync && db.manifest.owes() {
            // An ingestion ahead of this group may not have synced its
            // MANIFEST record yet; an acknowledged synced write must not
            // survive a crash that the ingestion before it does not. (No
            // state lock: the MANIFEST has its own, `version::manifest_log`.)
            // A failure poisoned the MANIFEST: stopped under its own name
            // (`lead` then returns this same error).
            if let Err(e) = db.manifest.sync() {
                return Err(db.set_bg_error("a synced write's MANIFEST sync", e));
            }
            phase(WaitCause::Manifest, &mut t);
        }
        Ok(t)
    }

    /// Backpressure, then room in the memtable: stops while L0 is at its
    /// hard depth limit or the immutable queue is full, slows the group down
    /// past the soft limits, and rotates a full memtable.
    fn make_room(
        &self,
        db: &DbInner,
        q: &mut MutexGuard<'_, Queue>,
        group_bytes: usize,
        phases: &mut Phases,
    ) -> Result<()> {
        let o = &db.opts;
        // Hard stop on L0 depth.
        let mut stopped: Option<Instant> = None;
        while db.l0_depth.load(Ordering::Relaxed) >= o.l0_stop_sublevels as u64
            && db.bg_error().is_none()
        {
            if stopped.is_none() {
                stopped = Some(Instant::now());
                db.stall_begun("stop: l0 sublevels");
            }
            db.bg_cv.notify_all();
            self.room_cv.wait_for(q, Duration::from_millis(50));
        }
        if let Some(t) = stopped {
            db.record_stall("stop: l0 sublevels", t.elapsed());
            phases.add(db, WaitCause::L0Stop, t.elapsed());
        }
        // Gentle slowdown: delay the group as if writes were limited to a
        // rate that halves with every sublevel past the soft limit.
        let depth = db.l0_depth.load(Ordering::Relaxed);
        let debt = db.debt.load(Ordering::Relaxed);
        // (`Options::check` keeps the slowdown at 1 or more; saturating
        // anyway, as a wrapped 0 would turn the slowdown off.)
        let over_depth = depth.saturating_sub((o.l0_slowdown_sublevels as u64).saturating_sub(1));
        let cause = if over_depth > 0 {
            Some("slowdown: l0 sublevels")
        } else if debt >= o.slowdown_debt_bytes {
            Some("slowdown: compaction debt")
        } else {
            None
        };
        if let Some(cause) = cause {
            let rate = (o.slowdown_rate >> over_depth.min(20)).max(1 << 20);
            let delay = Duration::from_secs_f64(group_bytes as f64 / rate as f64);
            let t = Instant::now();
            MutexGuard::unlocked(q, || std::thread::sleep(delay));
            db.record_stall(cause, t.elapsed());
            phases.add(db, WaitCause::Slowdown, t.elapsed());
        }
        let mut stalled: Option<Instant> = None;
        let r = loop {
            if let Some(e) = db.bg_error() {
                break Err(e);
            }
            // Read from the super version, not the state lock: the state
            // lock can be held across a MANIFEST sync (an ingestion's).
            let (mem_full, queue_full) = {
                let sv = db.super_version();
                (
                    sv.mem.approximate_memory_usage() >= db.opts.memtable_size,
                    sv.imm.len() >= db.opts.max_immutable_memtables,
                )
            };
            if !mem_full {
                break Ok(());
            }
            if queue_full {
                if stalled.is_none() {
                    stalled = Some(Instant::now());
                    db.stall_begun("stop: memtable queue full");
                }
                // Ingestions need no room in the memtable: let them through
                // while this group waits (the Pebble #4944 pitfall).
                self.run_waiting_ingestions(db, q);
                self.room_cv.wait_for(q, Duration::from_millis(100));
                continue;
            }
            break self.rotate(db, q, "full", phases);
        };
        if let Some(t) = stalled {
            db.record_stall("stop: memtable queue full", t.elapsed());
            phases.add(db, WaitCause::MemtableQueueFull, t.elapsed());
        }
        r
    }

    /// Runs the ingestions queued behind a stalled leader, ahead of it. They
    /// take their sequence numbers now; the stalled group has none yet, so
    /// order stays what the queue lock assigns. (A caller's own calls never
    /// overtake each other: each waits for its previous call to return.)
    fn run_waiting_ingestions(&self, db: &DbInner, q: &mut MutexGuard<'_, Queue>) {
        let mut i = 1;
        while i < q.writers.len() {
            let is_ingest = matches!(*q.writers[i].job.lock(), Some(Job::Ingest(_)));
            if !is_ingest {
                i += 1;
                continue;
            }
            let Some(w) = q.writers.remove(i) else {
                break;
            };
            let job = w.job.lock().take();
            let r = match job {
                Some(Job::Ingest(j)) => self.ingest(db, q, j),
                _ => Err(Error::internal("writer has no job")),
            };
            *w.result.lock() = Some(r);
            w.state.store(DONE, Ordering::Release);
            w.cv.notify_one();
        }
    }

    /// Starts a new WAL and memtable; the old memtable joins the immutable
    /// queue. Called by the leader, so no insert is in progress.
    fn rotate(
        &self,
        db: &DbInner,
        q: &mut MutexGuard<'_, Queue>,
        reason: &str,
        phases: &mut Phases,
    ) -> Result<()> {
        let t = Instant::now();
        // Pipelined groups still inserting into the memtable finish first:
        // it is sealed whole, at `last_seq`.
        self.quiesce(db, q);
        let last_seq = q.last_seq;
        let r = self.rotate_now(db, last_seq, reason);
        if r.is_ok() {
            self.sealed_seq.fetch_max(last_seq, Ordering::AcqRel);
        }
        phases.add(db, WaitCause::Rotation, t.elapsed());
        r
    }

    /// The highest sequence number a rotation sealed at (see the field):
    /// every operation numbered up to it is in a table or queued to be
    /// flushed.
    pub(crate) fn sealed_seq(&self) -> u64 {
        self.sealed_seq.load(Ordering::Acquire)
    }

    /// The rotation itself; only the current leader may call it. `last_seq`
    /// is the highest sequence number assigned so far.
    fn rotate_now(&self, db: &DbInner, last_seq: u64, reason: &str) -> Result<()> {
        if db.super_version().mem.is_empty() {
            return Ok(());
        }
        // The WAL thread made the next WAL and memtable ahead of need;
        // without it (no thread, or it has not caught up) both are made
        // here.
        // WAL numbers must grow in the order WALs are used (recovery
        // replays them in number order): a spare numbered before a WAL that
        // a rotation created itself meanwhile is of no use.
        let active = self.wal.lock().number;
        let spare = self.spare.lock().take();
        let spare = match spare {
            Some((n, w, _)) if n < active => {
                drop(w);
                let _ = db.vfs.remove(&filenames::wal(&db.dir, n));
                None
            }
            s => s,
        };
        let (number, next, mem) = match spare {
            Some(s) => s,
            None => {
                let number = db.new_file_number();
                let path = filenames::wal(&db.dir, number);
                let wal = Wal::new(number, db.vfs.create(&path)?, path.display().to_string());
                // Its directory entry is left to the flush that names it
                // or its first synced write (`make_wal_entry_durable`).
                self.wal_created(number);
                (number, wal, Arc::new(MemTable::new(number)))
            }
        };
        // The old WAL is synced before anything goes to the new one, so a
        // later WAL never survives a crash that an earlier one didn't. With
        // the WAL thread running, that is the thread's next write-out;
        // else (a process crash must lose nothing, or the WAL retired last
        // is still unsynced: rotations in quick succession) it is done here.
        let background =
            !db.opts.wal_flush_interval.is_zero() && !self.retired_pending.load(Ordering::Acquire);
        if !background {
            // The leader slot is held: nothing is framed meanwhile. A
            // failed write or sync stops the database, as a write group's
            // does: a failed fsync loses the unsynced bytes for good, and a
            // synced write going on into this WAL would be acknowledged
            // behind that hole (it used to be, the rotation's caller
            // getting a bare error and later writes going on).
            if let Err(e) = self.write_out(db, true) {
                return Err(db.set_bg_error("a memtable rotation's WAL write", e));
            }
        }
        {
            let mut wal = self.wal.lock();
            let old = std::mem::replace(&mut *wal, next);
            if background {
                *self.retired.lock() = Some(old);
                self.retired_pending.store(true, Ordering::Release);
            }
        }
        let mut st = db.state.lock();
        let (sealed, sealed_wal) = (st.mem.id(), st.mem_wal);
        st.seal_memtable(mem, number, last_seq);
        db.install_super_version(&st);
        drop(st);
        db.memtable_rotated(sealed, sealed_wal, reason);
        if background {
            // The WAL thread syncs the retired WAL within an interval and
            // wakes the flush thread then (it would sync that WAL first
            // anyway); a parked WAL thread is unparked, which is rare (it
            // parks only after idle intervals).
            // (SeqCst, against `park_flusher`'s store and load.)
            self.bg_wake_pending.store(true, Ordering::SeqCst);
            self.wake_flusher();
        } else {
            db.bg_cv.notify_all();
        }
        Ok(())
    }
}

impl CommitPipeline {
    /// Gives prepared files one sequence number and places them: straight
    /// into the tree if nothing in memory overlaps them, else as a flushable
    /// entry behind the memtable. Never waits for a flush or a disk sync:
    /// the MANIFEST record is written unsynced and the caller syncs it after
    /// leaving the commit queue.
    fn ingest(&self, db: &DbInner, q: &mut MutexGuard<'_, Queue>, job: IngestJob) -> Result<()> {
        if let Some(e) = db.bg_error() {
            return Err(e);
        }
        // The overlap check needs a memtable no pipelined group still
        // inserts into, and the ingestion's number is published after
        // every earlier one.
        self.quiesce(db, q);
        let has_tombstone = job.files.iter().any(|f| f.excise_tombstone);
        let sv = db.super_version();
        // With its tombstone file among `files`, memory over the excise
        // range counts as overlap; without, any overlap needs that file.
        let overlap = ingest::overlaps_memory(&sv.mem, &sv.imm, &job.files);
        let need = job.excise.as_ref().is_some_and(|(a, b)| {
            !has_tombstone && ingest::needs_tombstone(&sv.mem, &sv.imm, &job.files, a, b)
        });
        drop(sv);
        if need {
            *job.result.lock() = Some(IngestOutcome::NeedTombstone(job.files));
            return Ok(());
        }
        if overlap && !job.allow_overlap {
            return Err(Error::invalid(
                "the files overlap a memtable and allow_overlap_with_memtable is off",
            ));
        }
        let seq = q.last_seq + 1;
        q.last_seq = seq;
        let bytes: u64 = job
            .files
            .iter()
            .filter(|f| !f.excise_tombstone)
            .map(|f| f.size)
            .sum();
        let slot = Arc::clone(&job.result);
        // What the WAL marker names: the files the MANIFEST record adds.
        let mut marker = super::marker::IngestMarker {
            seq,
            files: Vec::new(),
            excise: job.excise.clone(),
        };
        let r = MutexGuard::unlocked(q, || -> Result<IngestOutcome> {
            let n = job.files.iter().filter(|f| !f.excise_tombstone).count();
            let result = if !overlap {
                let mut st = db.state.lock();
                // Held until the sequence number is published: a snapshot
                // is either registered now (and seen here) or taken after
                // the ingestion is visible, never older and unseen.
                let snapshots = db.snapshots.lock();
                let older_snapshot = snapshots.keys().next().is_some_and(|&s| s < seq);
                if older_snapshot && job.excise.is_some() && !has_tombstone {
                    // The snapshot needs the tombstone file. Nothing is
                    // applied: `seq` is handed back below.
                    return Ok(IngestOutcome::NeedTombstone(job.files));
                }
                let cut = job.excise.as_ref().filter(|_| !older_snapshot);
                let v = st.versions.current();
                let placed = ingest::placement(db, &v, &st.running, &job.files, seq, cut)?;
                job.named.store(true, Ordering::Release);
                st.versions.log_and_apply_unsynced(placed.edit, seq)?;
                db.manifest.owe();
                // A tombstone file is placed only if the range was not cut.
                marker.files = job
                    .files
                    .iter()
                    .filter(|f| !(f.excise_tombstone && placed.excised.is_some()))
                    .map(|f| f.meta(seq))
                    .collect();
                if placed.excised.is_some() {
                    // Readers without a snapshot must not read this version
                    // below `seq` (see `read::read_seq`).
                    st.excised_seq = seq;
                }
                db.install_super_version(&st);
                db.visible_seq.store(seq, Ordering::Release);
                drop(snapshots);
                drop(st);
                db.record_ingestion(
                    seq,
                    job.excise.as_ref(),
                    placed.excised.as_ref(),
                    &placed.added,
                    false,
                    true,
                );
                if placed.excised.is_some() {
                    // The tombstone file is in no version and no MANIFEST
                    // record: delete it now (a failure leaves it to the
                    // obsolete-file pass).
                    for f in job.files.iter().filter(|f| f.excise_tombstone) {
                        let _ = db.vfs.remove(&filenames::table(&db.dir, f.number));
                    }
                }
                IngestResult {
                    sequence: seq,
                    levels: placed.levels.into_iter().map(Some).collect(),
                    as_batch: false,
                    flushable: false,
                    excised: placed.excised.is_some(),
                }
            } else {
                // Opened before taking the state lock: reads through the
                // flushable need the tables, at this sequence number.
                let tables = ingest::queued_tables(db, &job.files, seq)?;
                // Taken before the state lock: making a memtable allocates.
                let fresh = self.take_spare_memtable(db);
                let mut st = db.state.lock();
                // The memtable holds older data that the files must shadow:
                // it goes into the queue first, then the files. Both keep
                // the current WAL, and so does the next memtable: the
                // MANIFEST's flushed sequence tells recovery which of the
                // WAL's records are already in tables, so no new WAL (and
                // no WAL sync) is needed here.
                let wal_number = st.mem_wal;
                if !st.mem.is_empty() {
                    let sealed = st.mem.id();
                    st.seal_memtable(fresh, wal_number, seq - 1);
                    db.memtable_rotated(sealed, wal_number, "ingest");
                } else {
                    // Unused (only the queue overlapped): kept for the next.
                    *self.spare_mem.lock() = Some(fresh);
                }
                let edit = crate::version::VersionEdit {
                    queued_files: job.files.iter().map(|f| f.meta(seq)).collect(),
                    ..Default::default()
                };
                job.named.store(true, Ordering::Release);
                st.versions.log_and_apply_unsynced(edit, seq)?;
                db.manifest.owe();
                marker.files = job.files.iter().map(|f| f.meta(seq)).collect();
                st.imm.push_back(Arc::new(ingest::IngestedFlushable {
                    id: seq,
                    wal_number,
                    seq,
                    files: job.files,
                    tables,
                    excise: job.excise,
                }));
                db.install_super_version(&st);
                db.visible_seq.store(seq, Ordering::Release);
                drop(st);
                // The flush thread is woken by the caller once it has left
                // the commit slot: waking it here let it take the CPU
                // while the writers behind this ingestion waited (about a
                // millisecond on two cores, measured in W4).
                db.stats.ingests_flushable.fetch_add(1, Ordering::Relaxed);
                IngestResult {
                    sequence: seq,
                    levels: vec![None; n],
                    as_batch: false,
                    flushable: true,
                    excised: false,
                }
            };
            Ok(IngestOutcome::Done(result))
        });
        if matches!(r, Ok(IngestOutcome::NeedTombstone(_))) {
            // Nothing took `seq`: it is handed back (only the slot holder
            // assigns numbers, so none came after it) and nothing is
            // published.
            debug_assert_eq!(q.last_seq, seq);
            q.last_seq = seq - 1;
        } else {
            // Published on every other path (a failed one too, holding
            // nothing): a later pipelined group waits for it.
            db.visible_seq.fetch_max(seq, Ordering::Release);
        }
        let outcome = match r {
            Ok(o) => o,
            Err(e) => return Err(db.set_bg_error("an ingestion's commit", e)),
        };
        if let IngestOutcome::Done(_) = outcome {
            db.stats.ingests.fetch_add(1, Ordering::Relaxed);
            db.stats.bytes_ingested.fetch_add(bytes, Ordering::Relaxed);
            // A marker in the WAL, after the MANIFEST record was handed to
            // the operating system and before any later write: a batch
            // with no update at the ingestion's sequence number, naming
            // its files (`db::marker`). If the MANIFEST loses the record
            // (a power cut or a failed MANIFEST write before the caller's
            // sync, or damage), recovery redoes the ingestion from its
            // files instead of leaving a hole before the writes after it
            // (see `open::replay_wals`).
            let marker = marker.to_batch();
            let framed = self.wal.lock().append(marker.data());
            let written = framed.and_then(|()| {
                if db.opts.wal_flush_interval.is_zero() {
                    self.write_out(db, false)
                } else {
                    self.wake_flusher();
                    Ok(())
                }
            });
            if let Err(e) = written {
                return Err(db.set_bg_error("the WAL write of an ingestion's marker", e));
            }
        }
        *slot.lock() = Some(outcome);
        Ok(())
    }
}

/// Inserts a batch (its sequence number already set) into a memtable; one
/// writer at a time (`MemTable::add`).
pub(crate) fn apply(mem: &MemTable, b: &WriteBatch) -> Result<()> {
    apply_with(mem, b, None, false)
}

/// As `apply`, starting the insert from a hint (`hint_for`) found for the
/// batch's one entry.
fn apply_hinted(mem: &MemTable, b: &WriteBatch, hint: &InsertHint) -> Result<()> {
    apply_with(mem, b, Some(hint), false)
}

/// As `apply`, alongside other threads inserting into the same memtable
/// (`MemTable::add_concurrent`): a parallel group's members.
fn apply_concurrently(mem: &MemTable, b: &WriteBatch) -> Result<()> {
    apply_with(mem, b, None, true)
}

fn apply_with(
    mem: &MemTable,
    b: &WriteBatch,
    hint: Option<&InsertHint>,
    concurrent: bool,
) -> Result<()> {
    #[cfg(test)]
    tests::slow_insert_hook(b);
    let add = |seq, kind, k: &[u8], v: &[u8]| match hint {
        _ if concurrent => mem.add_concurrent(seq, kind, k, v),
        // A range tombstone goes to the other list: `add_hinted` sees the
        // hint is not for it and inserts as `add` does.
        Some(h) => mem.add_hinted(seq, kind, k, v, h),
        None => mem.add(seq, kind, k, v),
    };
    for (seq, op) in (b.sequence()..).zip(b.iter()) {
        let op = op?;
        match op {
            BatchOp::Put(k, v) => {
                add(seq, ValueKind::Value, k, v);
            }
            BatchOp::Delete(k) => {
                add(seq, ValueKind::Deletion, k, b"");
            }
            BatchOp::DeleteRange(a, e) => {
                if a < e {
                    // `add` of a `RangeDeletion` is `add_range_tombstone`.
                    add(seq, ValueKind::RangeDeletion, a, e);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    /// The members of a parallel group insert their batches at once: every
    /// entry of every batch must be in the memtable afterwards, in order,
    /// with the memtable's counts and sequence bounds right. (With plain
    /// `add` here entries are lost, or debug builds panic.)
    /// Batches holding a key that starts with `slow-insert` sleep this long
    /// before their insert (0: no sleep), in every test of this module.
    static SLOW_INSERT_MS: AtomicUsize = AtomicUsize::new(0);
    /// Held by the tests that set `SLOW_INSERT_MS`, one at a time.
    static SLOW_TESTS: Mutex<()> = Mutex::new(());

    pub(super) fn slow_insert_hook(b: &WriteBatch) {
        let ms = SLOW_INSERT_MS.load(Ordering::Relaxed);
        if ms == 0 {
            return;
        }
        let slow = b
            .iter()
            .any(|op| matches!(op, Ok(BatchOp::Put(k, _)) if k.starts_with(b"slow-insert")));
        if slow {
            std::thread::sleep(Duration::from_millis(ms as u64));
        }
    }

    fn open_mem() -> Arc<crate::Db> {
        let vfs: Arc<dyn crate::vfs::Vfs> = Arc::new(crate::vfs::MemVfs::new());
        let opts = crate::Options {
            vfs: Some(vfs),
            pipelined_commit: true,
            ..crate::Options::default()
        };
        Arc::new(crate::Db::open("/db", opts).unwrap())
    }

    /// Sets up two pipelined groups the second of which finishes its
    /// insert first: `first` holds the slot (its insert sleeps) while
    /// `slow-insert` (unsynced) and then `behind` queue; when `first` is
    /// done, `slow-insert` leads a group of its own (what is behind it
    /// does not ride with it: a synced write, or a rotation), leaves the
    /// slot once framed, as there is a writer queued behind it, and
    /// sleeps in its insert while `behind` runs. Returns the thread
    /// writing `slow-insert`.
    fn slow_group_then(
        db: &Arc<crate::Db>,
        behind: impl FnOnce(&crate::Db) + Send + 'static,
    ) -> std::thread::JoinHandle<()> {
        SLOW_INSERT_MS.store(400, Ordering::Relaxed);
        // Sleeps order the writers, generously for a loaded machine; a
        // writer late to queue makes the test pass without checking.
        let d = Arc::clone(db);
        let first = std::thread::spawn(move || d.put("slow-insert-first", "1").unwrap());
        std::thread::sleep(Duration::from_millis(100));
        let d = Arc::clone(db);
        let slow = std::thread::spawn(move || d.put("slow-insert", "2").unwrap());
        std::thread::sleep(Duration::from_millis(100));
        let d = Arc::clone(db);
        let behind = std::thread::spawn(move || behind(&d));
        first.join().unwrap();
        behind.join().unwrap();
        slow
    }

    /// A synced write pipelined behind a group still inserting: it may
    /// insert first, but it is published (and returns) only after the
    /// group before it. (Publishing without waiting for earlier groups,
    /// `publish_in_order` without its `wait_published`, fails here: the
    /// synced write returns while `slow-insert` is not yet visible.)
    #[test]
    fn a_pipelined_group_publishes_after_the_group_before_it() {
        let _serial = SLOW_TESTS.lock();
        let db = open_mem();
        let (tx, rx) = std::sync::mpsc::channel();
        let slow = slow_group_then(&db, move |db| {
            db.write(
                {
                    let mut b = WriteBatch::new();
                    b.put("behind", "3");
                    b
                },
                &crate::WriteOptions { sync: true },
            )
            .unwrap();
            // What a reader sees once the later write has returned.
            tx.send(db.get("slow-insert").unwrap().is_some()).unwrap();
        });
        let seen = rx.recv().unwrap();
        slow.join().unwrap();
        SLOW_INSERT_MS.store(0, Ordering::Relaxed);
        assert!(
            seen,
            "a later write returned before an earlier group was published"
        );
        assert!(db.get("slow-insert").unwrap().is_some());
    }

    /// A rotation (`Db::flush`) queued behind a pipelined group still
    /// inserting waits for its insert before it seals the memtable. (With
    /// `quiesce` left out of `rotate`, the flushed table misses
    /// `slow-insert`, whose insert then lands in a memtable already
    /// flushed and dropped: the write is lost.)
    #[test]
    fn a_rotation_waits_for_pipelined_inserts() {
        let _serial = SLOW_TESTS.lock();
        let db = open_mem();
        let slow = slow_group_then(&db, |db| db.flush().unwrap());
        slow.join().unwrap();
        SLOW_INSERT_MS.store(0, Ordering::Relaxed);
        db.flush().unwrap();
        assert!(
            db.get("slow-insert").unwrap().is_some(),
            "a write inserted into a memtable the rotation had already sealed was lost"
        );
    }

    /// With the WAL thread running, a rotation installs the memtable the
    /// thread made ahead of need with the spare WAL (allocating nothing
    /// itself), and leaves waking the flush thread to the WAL thread,
    /// which clears the request on its next round. (Making the memtable
    /// in the rotation fails the first check; a WAL thread that never
    /// takes the request, the second.)
    #[test]
    fn a_rotation_takes_the_spare_memtable_and_leaves_the_wake_up_to_the_wal_thread() {
        let vfs: Arc<dyn crate::vfs::Vfs> = Arc::new(crate::vfs::MemVfs::new());
        let opts = crate::Options {
            vfs: Some(vfs),
            ..crate::Options::default()
        };
        let db = crate::Db::open("/db", opts).unwrap();
        let commit = &db.inner.commit;
        let deadline = Instant::now() + Duration::from_secs(10);
        for round in 0..3 {
            db.put(format!("k{round}"), "v").unwrap();
            let (number, spare) = loop {
                // A reference, not an address: a memtable made in the
                // rotation could reuse a dropped spare's address.
                if let Some((n, _, m)) = commit.spare.lock().as_ref() {
                    break (*n, Arc::clone(m));
                }
                assert!(Instant::now() < deadline, "the WAL thread made no spare");
                std::thread::sleep(Duration::from_millis(1));
            };
            db.flush().unwrap();
            let mem = Arc::clone(&db.inner.super_version().mem);
            assert_eq!(mem.id(), number, "round {round}: the spare WAL's number");
            assert!(
                Arc::ptr_eq(&mem, &spare),
                "round {round}: the rotation made its own memtable"
            );
            while commit.bg_wake_pending.load(Ordering::SeqCst) {
                assert!(
                    Instant::now() < deadline,
                    "the WAL thread never took the wake-up"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(
                db.get(format!("k{round}")).unwrap().as_deref(),
                Some(&b"v"[..])
            );
        }
        db.close().unwrap();
    }

    /// An ingestion that queues behind an overlapping memtable installs
    /// the memtable the WAL thread made ahead of need (`spare_mem`), so the
    /// commit slot allocates none; the thread makes the next. (Making the
    /// memtable in the commit fails the check.)
    #[test]
    fn a_queued_ingestion_takes_the_spare_memtable() {
        let vfs: Arc<dyn crate::vfs::Vfs> = Arc::new(crate::vfs::MemVfs::new());
        let opts = crate::Options {
            vfs: Some(Arc::clone(&vfs)),
            ..crate::Options::default()
        };
        let db = crate::Db::open("/db", opts).unwrap();
        let commit = &db.inner.commit;
        let deadline = Instant::now() + Duration::from_secs(10);
        vfs.create_dir_all(std::path::Path::new("/in")).unwrap();
        for round in 0..3 {
            let key = format!("k{round}");
            db.put(&key, "memtable").unwrap();
            let spare = loop {
                if let Some(m) = commit.spare_mem.lock().as_ref() {
                    break Arc::clone(m);
                }
                assert!(
                    Instant::now() < deadline,
                    "the WAL thread made no spare memtable"
                );
                std::thread::sleep(Duration::from_millis(1));
            };
            let path = std::path::PathBuf::from(format!("/in/{round}.sst"));
            let mut w = crate::sstable::SstWriter::create_in(
                vfs.as_ref(),
                &path,
                crate::sstable::SstOptions::for_ingestion(),
            )
            .unwrap();
            w.put(key.as_bytes(), b"ingested").unwrap();
            w.finish().unwrap();
            let o = crate::IngestOptions {
                small_file_bytes: 0,
                ..crate::IngestOptions::default()
            };
            let r = db.ingest(&[&path], &o).unwrap();
            assert!(r.flushable, "round {round}: the file overlaps the memtable");
            let mem = Arc::clone(&db.inner.super_version().mem);
            assert!(
                Arc::ptr_eq(&mem, &spare),
                "round {round}: the ingestion made its own memtable"
            );
            assert_eq!(db.get(&key).unwrap().as_deref(), Some(&b"ingested"[..]));
        }
        db.close().unwrap();
    }

    #[test]
    fn batches_applied_concurrently_are_all_in_the_memtable() {
        const THREADS: u64 = 4;
        const BATCHES: u64 = 300;
        const PER_BATCH: u64 = 10;
        for round in 0..3 {
            let mem = MemTable::with_arena_chunk_size(1, 4096);
            std::thread::scope(|s| {
                for t in 0..THREADS {
                    let mem = &mem;
                    s.spawn(move || {
                        for b in 0..BATCHES {
                            // Batch `b` of thread `t` holds sequence numbers
                            // interleaved with the other threads' batches,
                            // on keys shared by every thread.
                            let first = 1 + (b * THREADS + t) * PER_BATCH;
                            let mut batch = WriteBatch::new();
                            for j in 0..PER_BATCH {
                                let k = (b * 7 + j * 13 + t + round) % 500;
                                batch.put(format!("k{k:04}"), first.to_le_bytes());
                            }
                            batch.set_sequence(first);
                            apply_concurrently(mem, &batch).unwrap();
                        }
                    });
                }
            });
            let n = THREADS * BATCHES * PER_BATCH;
            assert_eq!(mem.num_entries(), n);
            assert_eq!((mem.first_seq(), mem.last_seq()), (Some(1), Some(n)));
            let mut it = Arc::new(mem).iter();
            crate::iter::InternalIterator::seek_to_first(&mut it);
            let mut seqs = Vec::new();
            let mut last: Option<Vec<u8>> = None;
            while crate::iter::InternalIterator::valid(&it) {
                let k = crate::iter::InternalIterator::key(&it).to_vec();
                if let Some(l) = &last {
                    assert!(crate::key::compare_internal(l, &k).is_lt(), "out of order");
                }
                let p = crate::key::ParsedKey::parse(&k).unwrap();
                seqs.push(p.seq);
                last = Some(k);
                crate::iter::InternalIterator::next(&mut it);
            }
            seqs.sort_unstable();
            assert_eq!(seqs, (1..=n).collect::<Vec<_>>(), "an entry is missing");
        }
    }
}
