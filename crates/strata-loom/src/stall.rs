//! Model of write backpressure: a leader stopped for room (a full
//! immutable-memtable queue, or L0 at its stop depth) and woken by the
//! flush and the compaction that make room, or by a background error that
//! it must then return (sticky, as every later write).
//!
//! Mirrors, in their order:
//! - `strata/src/db/commit.rs`: `CommitPipeline::make_room` (under the
//!   queue lock `q`: while `l0_depth` is at `l0_stop_sublevels` and there
//!   is no background error, wake the background threads (`bg_cv`) and
//!   wait on `room_cv`; then loop: a background error is returned; the
//!   memtable's size and the immutable queue's length are read from the
//!   super version; room in the memtable: go; a full queue: wait on
//!   `room_cv` and look again; else rotate), `rotate_now` (under the state
//!   lock the memtable joins the immutable queue, the super version is
//!   installed, `bg_cv` notified) and `notify_room` (`room_cv.notify_all`
//!   with `q` held);
//! - `strata/src/db/flush.rs`: the flush thread's loop (under the state
//!   lock, wait on `bg_cv` until there is no background error and the
//!   queue has a memtable, or shutdown), `flush_one` (the table written
//!   with no lock; under the state lock the memtable leaves the queue, L0
//!   grows, the super version is installed) or, when it fails,
//!   `set_bg_error`; then `bg_cv.notify_all` and `notify_room`, in both
//!   cases;
//! - `strata/src/db/compact.rs`: the compaction thread's loop (wait on
//!   `bg_cv` for L0 at its trigger; the merge with no lock; under the state
//!   lock L0 shrinks, `bg_cv.notify_all`; then `notify_room`).
//!
//! `room_cv` and `bg_cv` are `wait_for`s with a timeout (50-200 ms) in the
//! engine; loom's timed wait never times out, so a run that needs the
//! timeout to go on is reported as a deadlock: the model checks that no
//! stopped writer depends on a timeout to be woken.
//!
//! Replaced: a memtable is a count of batches (full at `MEM_BATCHES`); the
//! super version is the memtable and the queue's length behind the `sv`
//! lock; L0 is its depth; a table is nothing. Left out: slowdowns (a
//! sleep without waiting for anyone), ingestions run by a stalled leader
//! (`run_waiting_ingestions`, which only shortens the queue behind it),
//! the WAL and sequence numbers (`commit.rs`'s model), stall accounting.
//!
//! Checked in every interleaving: the immutable queue never exceeds its
//! limit; a write goes into a memtable with room; once a background
//! error is set, every
//! write returns it (the leader stopped when it happened included), and
//! none is accepted after it; every stopped writer is woken (no deadlock).
//! Not checked, because the engine does not promise it: L0 below its stop
//! depth when a write goes in. The stop is looked at once per group,
//! before the wait for queue room; the flush that makes that room can take
//! L0 to the stop depth, and the group still goes in (the next group that
//! needs room stops). An early version of this model asserted it and loom
//! found that schedule at once.

use crate::lock;
use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use loom::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

/// A deliberate mistake planted in the model (`None`: the real code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// The real code.
    None,
    /// `notify_room` signals `room_cv` without taking `q`: the signal can
    /// fall between a leader's look at the queue and its wait.
    NotifyWithoutQueueLock,
    /// A failed flush returns early, without `notify_room`.
    NoWakeOnError,
    /// After a wait for queue room, the leader rotates without looking at
    /// the queue again (an `if` where the engine loops).
    NoRecheckAfterWake,
    /// The compaction does not `notify_room` once L0 shrank.
    CompactionNoWake,
    /// The background error is taken (cleared) by the first writer that
    /// sees it instead of staying until reopen.
    ErrorNotSticky,
}

/// Batches a memtable holds before it is full.
const MEM_BATCHES: u64 = 1;

/// A memtable: its batch count (its inserts are the leader's alone).
struct Mem {
    batches: AtomicU64,
}

/// What `make_room` reads: `SuperVersion`'s memtable and queue length.
struct SuperVersion {
    mem: Arc<Mem>,
    imm: usize,
}

/// The part of `DbState` the model needs.
struct State {
    mem: Arc<Mem>,
    imm: usize,
    /// How many flushes are left to fail (the model's fault).
    failing_flushes: u32,
}

/// The model's configuration.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Batches the writer commits, one after another.
    pub writes: u32,
    /// `max_immutable_memtables`.
    pub max_imm: usize,
    /// L0 depth at the start.
    pub l0_depth: u64,
    /// `l0_stop_sublevels` (the compaction's trigger too).
    pub l0_stop: u64,
    /// Memtables already in the immutable queue at the start.
    pub imm: usize,
    /// Whether the first flush fails (a background error).
    pub fail_flush: bool,
    /// Whether the flush thread runs (left out where no flush is needed,
    /// to keep the number of interleavings down).
    pub flush: bool,
    /// Whether the compaction thread runs (likewise).
    pub compaction: bool,
    /// Whether a thread calls `notify_room` once without making room (a
    /// manual compaction ending, an ingestion queued behind the leader):
    /// a wake-up that finds the queue still full.
    pub notifier: bool,
}

/// The database: the commit queue's lock and `room_cv`, the state lock,
/// `bg_cv`, the super version, `l0_depth` and the background error.
pub struct Db {
    q: Mutex<()>,
    room_cv: Condvar,
    state: Mutex<State>,
    bg_cv: Condvar,
    sv: RwLock<Arc<SuperVersion>>,
    l0_depth: AtomicU64,
    bg_error: Mutex<Option<&'static str>>,
    shutting_down: AtomicBool,
    cfg: Config,
    bug: Bug,
}

impl Db {
    /// A database in the configuration's starting state: a full memtable.
    pub fn new(cfg: Config, bug: Bug) -> Db {
        let mem = Arc::new(Mem {
            batches: AtomicU64::new(MEM_BATCHES),
        });
        Db {
            q: Mutex::new(()),
            room_cv: Condvar::new(),
            state: Mutex::new(State {
                mem: Arc::clone(&mem),
                imm: cfg.imm,
                failing_flushes: u32::from(cfg.fail_flush),
            }),
            bg_cv: Condvar::new(),
            sv: RwLock::new(Arc::new(SuperVersion { mem, imm: cfg.imm })),
            l0_depth: AtomicU64::new(cfg.l0_depth),
            bg_error: Mutex::new(None),
            shutting_down: AtomicBool::new(false),
            cfg,
            bug,
        }
    }

    /// `DbInner::bg_error`.
    fn bg_error(&self) -> Option<&'static str> {
        let mut g = lock(&self.bg_error);
        if self.bug == Bug::ErrorNotSticky {
            return g.take();
        }
        *g
    }

    /// `DbInner::super_version`.
    fn super_version(&self) -> Arc<SuperVersion> {
        let g = match self.sv.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        Arc::clone(&g)
    }

    /// `DbInner::install_super_version` (the state lock held).
    fn install_super_version(&self, st: &State) {
        let sv = Arc::new(SuperVersion {
            mem: Arc::clone(&st.mem),
            imm: st.imm,
        });
        match self.sv.write() {
            Ok(mut g) => *g = sv,
            Err(p) => *p.into_inner() = sv,
        }
    }

    /// `CommitPipeline::notify_room`.
    pub fn notify_room(&self) {
        if self.bug == Bug::NotifyWithoutQueueLock {
            self.room_cv.notify_all();
            return;
        }
        let _q = lock(&self.q);
        self.room_cv.notify_all();
    }

    /// One write by the leader: `make_room` with `q` held, then the
    /// insert (`write_group`, `q` released). Returns the error it got.
    pub fn write(&self) -> Result<(), &'static str> {
        let mut q = lock(&self.q);
        // Hard stop on L0 depth.
        while self.l0_depth.load(Ordering::Relaxed) >= self.cfg.l0_stop && self.bg_error().is_none()
        {
            self.bg_cv.notify_all();
            q = wait(&self.room_cv, q);
        }
        let mut waited = false;
        let r = loop {
            if let Some(e) = self.bg_error() {
                break Err(e);
            }
            let (mem_full, queue_full) = {
                let sv = self.super_version();
                (
                    sv.mem.batches.load(Ordering::Relaxed) >= MEM_BATCHES,
                    sv.imm >= self.cfg.max_imm,
                )
            };
            if !mem_full {
                break Ok(());
            }
            if queue_full && !(self.bug == Bug::NoRecheckAfterWake && waited) {
                q = wait(&self.room_cv, q);
                waited = true;
                continue;
            }
            self.rotate();
            break Ok(());
        };
        drop(q);
        r?;
        // `write_group`: the insert into the memtable of the super version.
        let sv = self.super_version();
        let n = sv.mem.batches.fetch_add(1, Ordering::Relaxed) + 1;
        assert!(n <= MEM_BATCHES, "a write went into a full memtable");
        Ok(())
    }

    /// `rotate_now` (the leader, `q` held).
    fn rotate(&self) {
        let mut st = lock(&self.state);
        st.imm += 1;
        assert!(
            st.imm <= self.cfg.max_imm,
            "the immutable queue holds {} memtables, above its limit {}",
            st.imm,
            self.cfg.max_imm
        );
        st.mem = Arc::new(Mem {
            batches: AtomicU64::new(0),
        });
        self.install_super_version(&st);
        drop(st);
        self.bg_cv.notify_all();
    }

    /// The flush thread (`flush.rs`'s loop around `flush_one`).
    pub fn flush_thread(&self) {
        loop {
            {
                let mut st = lock(&self.state);
                loop {
                    if self.shutting_down.load(Ordering::SeqCst) {
                        return;
                    }
                    if self.bg_error().is_none() && st.imm > 0 {
                        break;
                    }
                    st = wait(&self.bg_cv, st);
                }
            }
            // `flush_one`: the table is written with no lock held.
            let failed = {
                let mut st = lock(&self.state);
                if st.failing_flushes > 0 {
                    st.failing_flushes -= 1;
                    true
                } else {
                    st.imm -= 1;
                    self.l0_depth.fetch_add(1, Ordering::Relaxed);
                    self.install_super_version(&st);
                    false
                }
            };
            if failed {
                let mut g = lock(&self.bg_error);
                if g.is_none() {
                    *g = Some("flush failed");
                }
                drop(g);
                if self.bug == Bug::NoWakeOnError {
                    continue;
                }
            }
            self.bg_cv.notify_all();
            self.notify_room();
        }
    }

    /// The compaction thread (`compact.rs`'s loop around `run`).
    pub fn compaction_thread(&self) {
        loop {
            {
                let mut st = lock(&self.state);
                loop {
                    if self.shutting_down.load(Ordering::SeqCst) {
                        return;
                    }
                    if self.bg_error().is_none()
                        && self.l0_depth.load(Ordering::Relaxed) >= self.cfg.l0_stop
                    {
                        break;
                    }
                    st = wait(&self.bg_cv, st);
                }
            }
            // `run`: the merge with no lock held; then L0 shrinks.
            {
                let _st = lock(&self.state);
                self.l0_depth.store(0, Ordering::Relaxed);
                self.bg_cv.notify_all();
            }
            if self.bug != Bug::CompactionNoWake {
                self.notify_room();
            }
        }
    }

    /// `Db::close`'s stop of the background threads.
    pub fn shut_down(&self) {
        let _st = lock(&self.state);
        self.shutting_down.store(true, Ordering::SeqCst);
        self.bg_cv.notify_all();
    }
}

/// `Condvar::wait_for` (loom's never times out).
fn wait<'a, T>(cv: &Condvar, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    match cv.wait(g) {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// One execution: the writer (on the model's main thread) commits
/// `cfg.writes` batches beside the flush and compaction threads; then
/// every check.
pub fn run(cfg: Config, bug: Bug) {
    let db = Arc::new(Db::new(cfg, bug));
    let mut threads = Vec::new();
    if cfg.flush {
        let db = Arc::clone(&db);
        threads.push(loom::thread::spawn(move || db.flush_thread()));
    }
    if cfg.compaction {
        let db = Arc::clone(&db);
        threads.push(loom::thread::spawn(move || db.compaction_thread()));
    }
    if cfg.notifier {
        let db = Arc::clone(&db);
        threads.push(loom::thread::spawn(move || db.notify_room()));
    }
    let mut failed = false;
    for _ in 0..cfg.writes {
        match db.write() {
            Ok(()) => assert!(
                !failed,
                "a write was accepted after a background error was returned"
            ),
            Err(_) => failed = true,
        }
    }
    db.shut_down();
    for t in threads {
        t.join().expect("background thread");
    }
    if cfg.fail_flush {
        // The flush fails before any write can go through (the writer
        // starts stopped), so every write returns the error.
        assert!(failed, "a write was accepted although the flush failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memtable full, immutable queue full: the write waits for the flush,
    /// and another thread's `notify_room` may wake it first.
    const QUEUE_FULL: Config = Config {
        writes: 1,
        max_imm: 1,
        l0_depth: 0,
        l0_stop: 2,
        imm: 1,
        fail_flush: false,
        flush: true,
        compaction: false,
        notifier: true,
    };

    /// L0 at its stop depth: the write waits for the compaction, then
    /// rotates (the queue has room).
    const L0_STOP: Config = Config {
        writes: 1,
        max_imm: 1,
        l0_depth: 2,
        l0_stop: 2,
        imm: 0,
        fail_flush: false,
        flush: false,
        compaction: true,
        notifier: false,
    };

    /// Queue full and the flush fails: the stopped writer and the next
    /// write get the error.
    const FLUSH_FAILS: Config = Config {
        writes: 2,
        max_imm: 1,
        l0_depth: 0,
        l0_stop: 2,
        imm: 1,
        fail_flush: true,
        flush: true,
        compaction: true,
        notifier: false,
    };

    fn check(cfg: Config, bug: Bug) {
        crate::explore(move || run(cfg, bug));
    }

    #[test]
    fn waits_for_queue_room() {
        check(QUEUE_FULL, Bug::None);
    }

    #[test]
    fn waits_for_l0_to_shrink() {
        check(L0_STOP, Bug::None);
    }

    #[test]
    fn stopped_writer_gets_the_background_error() {
        check(FLUSH_FAILS, Bug::None);
    }

    #[test]
    fn finds_rotation_without_recheck() {
        let m = crate::planted_failure(|| check(QUEUE_FULL, Bug::NoRecheckAfterWake));
        assert!(m.contains("above its limit"), "{m}");
    }

    /// Without a sticky error, loom finds a write accepted after the
    /// error, or a flush and a writer that each wait for the other.
    #[test]
    fn finds_error_not_sticky() {
        let m = crate::planted_in_child("stall::tests::failure_error_not_sticky");
        assert!(
            m.contains("accepted") || m.contains("deadlock; threads"),
            "{m}"
        );
    }

    #[test]
    #[ignore = "run by finds_error_not_sticky in a child process"]
    fn failure_error_not_sticky() {
        check(FLUSH_FAILS, Bug::ErrorNotSticky);
    }

    #[test]
    fn finds_notify_without_queue_lock() {
        crate::planted_deadlock("stall::tests::deadlock_notify_without_queue_lock");
    }

    #[test]
    fn finds_no_wake_on_error() {
        crate::planted_deadlock("stall::tests::deadlock_no_wake_on_error");
    }

    #[test]
    fn finds_compaction_without_wake() {
        crate::planted_deadlock("stall::tests::deadlock_compaction_no_wake");
    }

    #[test]
    #[ignore = "run by finds_notify_without_queue_lock in a child process"]
    fn deadlock_notify_without_queue_lock() {
        check(QUEUE_FULL, Bug::NotifyWithoutQueueLock);
    }

    #[test]
    #[ignore = "run by finds_no_wake_on_error in a child process"]
    fn deadlock_no_wake_on_error() {
        check(FLUSH_FAILS, Bug::NoWakeOnError);
    }

    #[test]
    #[ignore = "run by finds_compaction_without_wake in a child process"]
    fn deadlock_compaction_no_wake() {
        check(L0_STOP, Bug::CompactionNoWake);
    }
}
