//! A foreground write never waits on a flush's or a compaction's disk I/O.
//!
//! A file system wrapper holds every file a flush or compaction thread
//! creates (its table) at a gate. While a flush is held, Puts must go on
//! completing through every memtable the budget allows (the active one and
//! `max_immutable_memtables` queued ones), and the first Put that blocks
//! must do so only once that budget is genuinely exhausted: the stall it
//! reports is `stop: memtable queue full`, with the queue full and the
//! active memtable at its size. While a compaction is held, flushes and
//! Puts go on. No timing is asserted: progress is counted in Puts, and the
//! stall is observed through the engine's event listener.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use strata::events::{Event, EventListener, EventRecord};
use strata::vfs::Vfs;
use strata::{CompactionOptions, Db, Metrics, Options};
use support::{CreateGate, GatedVfs};

#[path = "support/gated_vfs.rs"]
mod support;

/// MemVfs, except that a thread whose name starts with one of `held`'s
/// prefixes waits at the gate when it creates a file while the gate is shut.
type GateVfs = GatedVfs<Gate>;

/// The gate's state and policy.
struct Gate {
    held: Mutex<Vec<&'static str>>,
    shut: Mutex<bool>,
    cv: Condvar,
    /// Creations waiting at the gate.
    waiting: AtomicUsize,
}

impl GateVfs {
    fn new() -> Arc<GateVfs> {
        Arc::new(GatedVfs::with_gate(Gate {
            held: Mutex::new(Vec::new()),
            shut: Mutex::new(false),
            cv: Condvar::new(),
            waiting: AtomicUsize::new(0),
        }))
    }
}

impl Gate {
    fn shut(&self, threads: &[&'static str]) {
        *self.held.lock().unwrap() = threads.to_vec();
        *self.shut.lock().unwrap() = true;
    }
    fn open(&self) {
        *self.shut.lock().unwrap() = false;
        self.cv.notify_all();
    }
}

impl CreateGate for Gate {
    fn before_create(&self, _path: &Path) {
        let me = std::thread::current().name().unwrap_or("").to_string();
        let held = self.held.lock().unwrap().iter().any(|p| me.starts_with(p));
        if held && *self.shut.lock().unwrap() {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            let mut shut = self.shut.lock().unwrap();
            while *shut {
                shut = self.cv.wait(shut).unwrap();
            }
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Hears when writes stop, and what the test saw then. It never calls
/// back into the `Db` (the listener contract: events may be delivered
/// while the engine holds its locks; a `metrics()` call here deadlocked
/// against a flush recording its event), so the test reads the metrics
/// itself once it sees the stop, while the held jobs keep the engine as
/// it was.
struct StallWatch {
    stalled: AtomicBool,
    /// (cause, Puts acknowledged at the stall, table creations held at the
    /// gate then)
    seen: Mutex<Option<(String, u64, usize)>>,
    puts: Arc<AtomicU64>,
    gate: Arc<GateVfs>,
    /// Every stop's cause.
    causes: Mutex<Vec<String>>,
}

impl StallWatch {
    /// A watch that has seen no stop yet, reading the Puts counted in
    /// `puts` and the creations held at `gate`.
    fn new(puts: &Arc<AtomicU64>, gate: &Arc<GateVfs>) -> Arc<StallWatch> {
        Arc::new(StallWatch {
            stalled: AtomicBool::new(false),
            seen: Mutex::new(None),
            puts: puts.clone(),
            gate: gate.clone(),
            causes: Mutex::new(Vec::new()),
        })
    }
}

impl EventListener for StallWatch {
    fn on_event(&self, r: &EventRecord) {
        if let Event::WriteStallBegin { cause } = &r.event {
            self.causes.lock().unwrap().push(cause.clone());
            if self.stalled.swap(true, Ordering::SeqCst) {
                return;
            }
            let n = self.puts.load(Ordering::SeqCst);
            let held = self.gate.waiting.load(Ordering::SeqCst);
            *self.seen.lock().unwrap() = Some((cause.clone(), n, held));
        }
    }
}

const MEMTABLE: usize = 64 << 10;
const QUEUE: usize = 2;
const VALUE: usize = 100;

/// Opens with a small memtable budget; `l0_stop` is the L0 depth at which
/// writes stop.
fn open(vfs: &Arc<GateVfs>, watch: &Arc<StallWatch>, l0_stop: usize) -> Arc<Db> {
    Arc::new(
        Db::open(
            "/db",
            Options {
                vfs: Some(vfs.clone() as Arc<dyn Vfs>),
                memtable_size: MEMTABLE,
                max_immutable_memtables: QUEUE,
                l0_slowdown_sublevels: l0_stop / 2,
                l0_stop_sublevels: l0_stop,
                event_listener: Some(watch.clone() as Arc<dyn EventListener>),
                compaction: CompactionOptions {
                    l0_compaction_threshold: 2,
                    ..CompactionOptions::default()
                },
                ..Options::default()
            },
        )
        .unwrap(),
    )
}

/// Keys in scattered order, so flushed tables overlap and compactions
/// rewrite them (sequential keys would only be moved down).
fn key(i: u64) -> Vec<u8> {
    format!("key{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).into_bytes()
}

/// Puts keys `from..` until `stop`, counting acknowledged Puts in `puts`.
fn writer(db: Arc<Db>, from: u64, puts: Arc<AtomicU64>, stop: Arc<AtomicBool>) -> u64 {
    let mut i = from;
    while !stop.load(Ordering::SeqCst) {
        db.put(key(i), [b'v'; VALUE]).unwrap();
        i += 1;
        puts.fetch_add(1, Ordering::SeqCst);
    }
    i
}

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..4000 {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("gave up waiting for {what}");
}

#[test]
fn puts_continue_until_the_memtable_budget_is_exhausted_while_a_flush_is_held() {
    let vfs = GateVfs::new();
    let puts = Arc::new(AtomicU64::new(0));
    let watch = StallWatch::new(&puts, &vfs);
    let db = open(&vfs, &watch, 24);
    vfs.shut(&["strata-flush", "strata-compact"]);
    let stop = Arc::new(AtomicBool::new(false));
    let w = {
        let (db, puts, stop) = (db.clone(), puts.clone(), stop.clone());
        std::thread::spawn(move || writer(db, 0, puts, stop))
    };
    // The writer goes on until it stops on its own.
    wait_for("the writer to stall", || {
        watch.seen.lock().unwrap().is_some()
    });
    let (cause, at_stall, held) = watch.seen.lock().unwrap().take().unwrap();
    // The writer is stopped and every flush and compaction is held: the
    // engine is as it was at the stop.
    let m: Metrics = db.metrics();
    eprintln!(
        "{at_stall} puts when writes stopped; memtable {} bytes, {} queued, \
         {held} table creations held; waits {:?}",
        m.memtable_bytes, m.immutable_memtables, m.write_waits
    );
    // It blocked only once the budget was exhausted: the queue is full and
    // the active memtable is at its size.
    assert_eq!(cause, "stop: memtable queue full");
    assert_eq!(m.immutable_memtables, QUEUE);
    assert!(m.memtable_bytes >= MEMTABLE, "{}", m.memtable_bytes);
    // No flush has written its table (the gate holds them; the first may
    // not even have reached it yet), yet every memtable of the budget was
    // filled: the Puts into the second and later ones did not wait for the
    // first flush's I/O.
    assert_eq!(m.flushes, 0, "the gate held every flush");
    let entry = (VALUE + key(0).len()) as u64;
    assert!(
        at_stall * entry >= (QUEUE * MEMTABLE) as u64,
        "only {at_stall} puts of {entry} bytes before writes stopped"
    );
    // No write waited on anything but the queue and the stop.
    for wait in &m.write_waits {
        assert!(
            [
                "commit queue",
                "wal write",
                "memtable insert",
                "memtable rotation"
            ]
            .contains(&wait.cause.as_str()),
            "a write waited on {}",
            wait.cause
        );
    }
    // The flush is (or gets) held at the gate, and the writer stays
    // stopped behind it.
    wait_for("a flush held at the gate", || {
        vfs.waiting.load(Ordering::SeqCst) > 0
    });
    assert_eq!(db.metrics().flushes, 0);
    assert!(!w.is_finished(), "the writer stopped at the full budget");
    // Let the flushes go: the writer resumes, and everything is readable.
    vfs.open();
    stop.store(true, Ordering::SeqCst);
    let end = w.join().unwrap();
    db.wait_for_compactions().unwrap();
    for i in (0..end).step_by(97) {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![b'v'; VALUE]), "{i}");
    }
}

#[test]
fn flushes_and_puts_go_on_while_a_compaction_is_held() {
    let vfs = GateVfs::new();
    let puts = Arc::new(AtomicU64::new(0));
    let watch = StallWatch::new(&puts, &vfs);
    // L0 may grow as deep as it likes here: stopping on it is backpressure
    // by design, not a wait on the held compaction's I/O.
    let db = open(&vfs, &watch, 100_000);
    vfs.shut(&["strata-compact"]);
    let stop = Arc::new(AtomicBool::new(false));
    let w = {
        let (db, puts, stop) = (db.clone(), puts.clone(), stop.clone());
        std::thread::spawn(move || writer(db, 0, puts, stop))
    };
    wait_for("a compaction held at the gate", || {
        vfs.waiting.load(Ordering::SeqCst) > 0
    });
    let flushes = db.metrics().flushes;
    let at_gate = puts.load(Ordering::SeqCst);
    // Two more memtables' worth are flushed while the compaction is held.
    wait_for("flushes past the held compaction", || {
        db.metrics().flushes >= flushes + 2
    });
    assert!(vfs.waiting.load(Ordering::SeqCst) > 0, "still held");
    // Waited for, not read at once: on a loaded machine the two flushes can
    // be of memtables filled before the gate, and the writer's next put
    // not yet scheduled (it failed that way under a parallel soak).
    wait_for("puts past the held compaction", || {
        puts.load(Ordering::SeqCst) > at_gate
    });
    assert!(vfs.waiting.load(Ordering::SeqCst) > 0, "still held");
    // Writes may stop for a moment while a flush catches up with them,
    // never on L0 (the held compaction's work).
    let causes = watch.causes.lock().unwrap().clone();
    assert!(
        causes.iter().all(|c| c == "stop: memtable queue full"),
        "{causes:?}"
    );
    vfs.open();
    stop.store(true, Ordering::SeqCst);
    let end = w.join().unwrap();
    db.wait_for_compactions().unwrap();
    for i in (0..end).step_by(89) {
        assert_eq!(db.get(key(i)).unwrap(), Some(vec![b'v'; VALUE]), "{i}");
    }
}
