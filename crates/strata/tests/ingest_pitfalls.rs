//! The ingestion pitfalls other engines hit, each reproduced against
//! Strata. A file system wrapper can hold back the creation of table files,
//! which freezes flushes and compactions at a chosen moment:
//!
//! - Pebble #4944: an ingestion blocked for seconds while the memtable queue
//!   was at its stop threshold. Here the queue is full and the flush is held,
//!   and the ingestion must still return (and be readable) before the flush
//!   is let go.
//! - RocksDB #13091: a file overlapping only a running compaction's output
//!   range was forced into L0. Here it must land just above the level that
//!   compaction writes, when that level is below Lbase (ingested files skip
//!   the empty levels above Lbase, as in RocksDB and Pebble).
//! - CockroachDB #80589: a file that merely touches a neighbour's boundary
//!   (an exclusive range-tombstone end) was treated as overlapping. Here it
//!   must go to the same level as the neighbour.
//! - An ingestion placed in L0 beside a memtable it does not overlap is
//!   newer than what that memtable holds; an intra-L0 compaction merging it
//!   with older L0 files made a file that sorted above the memtable's flush,
//!   so a point read found data the memtable had deleted (Strata's own, found
//!   by `tests/ingest_model.rs`; Pebble's rule is `earliestUnflushedSeqNum`,
//!   RocksDB's answer was L0 epoch numbers). Here no intra-L0 compaction may
//!   take the ingested file while older data in its range is in memory,
//!   and one may when the memtable holds only other keys.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use strata::vfs::Vfs;
use strata::{CompactionOptions, Db, Options};
use support::{file_ingestion, ingestible_sst, CreateGate, GatedVfs};

#[path = "support/gated_vfs.rs"]
mod support;

/// MemVfs, except that a background job (a thread named `strata-...`, or
/// only the compaction threads with `GateVfs::holding("strata-compact-")`)
/// creating a `.sst` file waits while the gate is shut. Ingestions copy
/// their files in from the caller's thread and pass.
type GateVfs = GatedVfs<Gate>;

/// The gate's state and policy.
struct Gate {
    /// Threads whose name starts with this are held.
    held_threads: &'static str,
    shut: Mutex<bool>,
    cv: Condvar,
    /// Table creations waiting at the gate.
    waiting: AtomicUsize,
}

impl GateVfs {
    fn new() -> Arc<GateVfs> {
        GateVfs::holding("strata-")
    }
    /// A gate that holds only the threads named `held_threads...`.
    fn holding(held_threads: &'static str) -> Arc<GateVfs> {
        Arc::new(GatedVfs::with_gate(Gate {
            held_threads,
            shut: Mutex::new(false),
            cv: Condvar::new(),
            waiting: AtomicUsize::new(0),
        }))
    }
}

impl Gate {
    fn set_shut(&self, shut: bool) {
        *self.shut.lock().unwrap() = shut;
        self.cv.notify_all();
    }
    /// Waits until some job is held at the gate.
    fn wait_for_a_held_job(&self) {
        for _ in 0..2000 {
            if self.waiting.load(Ordering::SeqCst) > 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("no flush or compaction reached the gate");
    }
    /// Whether `n` jobs are held at the gate within `limit`.
    fn held_within(&self, n: usize, limit: Duration) -> bool {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if self.waiting.load(Ordering::SeqCst) >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }
}

impl CreateGate for Gate {
    fn before_create(&self, path: &Path) {
        let background = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with(self.held_threads));
        if background && path.extension().is_some_and(|e| e == "sst") {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            let mut shut = self.shut.lock().unwrap();
            while *shut {
                shut = self.cv.wait(shut).unwrap();
            }
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn open(vfs: &Arc<GateVfs>, memtable_size: usize) -> Db {
    open_with(vfs, memtable_size, CompactionOptions::default())
}

fn open_with(vfs: &Arc<GateVfs>, memtable_size: usize, compaction: CompactionOptions) -> Db {
    Db::open(
        "/db",
        Options {
            vfs: Some(vfs.clone() as Arc<dyn Vfs>),
            memtable_size,
            max_immutable_memtables: 1,
            compaction,
            ..Options::default()
        },
    )
    .unwrap()
}

#[test]
fn a_full_memtable_queue_does_not_block_an_ingestion() {
    let vfs = GateVfs::new();
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(&vfs, 4 << 10));
    vfs.set_shut(true);
    // A writer fills the memtable and the one-entry queue; the flush is
    // held at the gate, so the writer stalls.
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..400u32 {
                db.put(format!("k{i:04}").as_bytes(), [b'v'; 100]).unwrap();
            }
        })
    };
    vfs.wait_for_a_held_job();
    std::thread::sleep(Duration::from_millis(50));
    assert!(!writer.is_finished(), "the writer should be stalled");
    // An ingestion overlapping the memtable: it must not wait for room.
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let db = db.clone();
        let p = ingestible_sst(
            vfs.as_ref(),
            dir.path(),
            "a.sst",
            &["k0001", "k0002", "k9999"],
            &[],
        );
        std::thread::spawn(move || {
            let t = std::time::Instant::now();
            let r = db.ingest(&[p], &file_ingestion());
            // Reported, not asserted: timing belongs in benchmarks.
            eprintln!("ingestion over a full, held queue took {:?}", t.elapsed());
            let _ = tx.send(r);
        });
    }
    let r = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the ingestion waited for the held flush")
        .unwrap();
    assert!(r.flushable, "it overlapped the memtable: {r:?}");
    // Readable while the flush is still held.
    assert_eq!(db.get(b"k9999").unwrap(), Some(b"ingested k9999".to_vec()));
    assert!(
        vfs.waiting.load(Ordering::SeqCst) > 0,
        "the gate still holds"
    );
    vfs.set_shut(false);
    writer.join().unwrap();
    // Puts that came after the ingestion win over its keys.
    assert_eq!(db.get(b"k0300").unwrap(), Some(vec![b'v'; 100]));
    db.flush().unwrap();
    assert_eq!(db.get(b"k9999").unwrap(), Some(b"ingested k9999".to_vec()));
}

#[test]
fn a_running_compaction_does_not_force_a_file_into_l0() {
    let vfs = GateVfs::new();
    let dir = tempfile::tempdir().unwrap();
    // Ingested files skip the empty levels above Lbase, so the level above
    // the compaction's must be at or below Lbase: a small `base_level_bytes`
    // and a thousand keys per L6 file put Lbase at L4 (L6 ~ 30 KB, L5's
    // target ~ 7.5 KB, L4's ~ 1.9 KB), while the two small files that land
    // in L5 stay under its target (no automatic compaction starts).
    let db = Arc::new(open_with(
        &vfs,
        1 << 20,
        CompactionOptions {
            base_level_bytes: 1 << 10,
            level_multiplier: 4,
            ..CompactionOptions::default()
        },
    ));
    let thousand = |p: &str| (0..1000).map(|i| format!("{p}{i:03}")).collect::<Vec<_>>();
    let (bs, ys) = (thousand("b"), thousand("y"));
    let bs: Vec<&str> = bs.iter().map(String::as_str).collect();
    let ys: Vec<&str> = ys.iter().map(String::as_str).collect();
    // L6 gets [b000, b999] and [y000, y999]; then [a, c] and [x, z] overlap
    // those and land in L5.
    let r = db
        .ingest(
            &[
                ingestible_sst(vfs.as_ref(), dir.path(), "b.sst", &bs, &[]),
                ingestible_sst(vfs.as_ref(), dir.path(), "y.sst", &ys, &[]),
            ],
            &file_ingestion(),
        )
        .unwrap();
    assert_eq!(r.levels, vec![Some(6), Some(6)]);
    let r = db
        .ingest(
            &[
                ingestible_sst(vfs.as_ref(), dir.path(), "ac.sst", &["a", "c"], &[]),
                ingestible_sst(vfs.as_ref(), dir.path(), "xz.sst", &["x", "z"], &[]),
            ],
            &file_ingestion(),
        )
        .unwrap();
    assert_eq!(r.levels, vec![Some(5), Some(5)]);
    let m = db.metrics();
    assert!(m.levels[4].target_bytes > 0, "Lbase is L4 or above: {m:?}");
    assert!(m.levels[5].score < 1.0, "L5 needs no compaction: {m:?}");
    // Compacting [a, z] from L5 into L6 writes that whole range in L6; the
    // gate holds it while it runs.
    vfs.set_shut(true);
    let compaction = {
        let db = db.clone();
        std::thread::Builder::new()
            .name("strata-test-compact-range".into())
            .spawn(move || db.compact_range(Some(b"a"), Some(b"z")))
            .unwrap()
    };
    vfs.wait_for_a_held_job();
    // [m, n] overlaps no file anywhere, only the running compaction's output
    // range in L6: it goes to L5, not L0.
    let r = db
        .ingest(
            &[ingestible_sst(
                vfs.as_ref(),
                dir.path(),
                "mn.sst",
                &["m", "n"],
                &[],
            )],
            &file_ingestion(),
        )
        .unwrap();
    assert_eq!(r.levels, vec![Some(5)], "just above the compaction's level");
    vfs.set_shut(false);
    compaction.join().unwrap().unwrap();
    for k in ["a", "b000", "b999", "c", "m", "n", "x", "y000", "y999", "z"] {
        assert_eq!(
            db.get(k.as_bytes()).unwrap(),
            Some(format!("ingested {k}").into_bytes()),
            "{k}"
        );
    }
}

#[test]
fn touching_a_boundary_is_not_overlapping() {
    let vfs = GateVfs::new();
    let dir = tempfile::tempdir().unwrap();
    let db = open(&vfs, 1 << 20);
    // [a, m) as a range tombstone with points before m: its end is exclusive.
    let r = db
        .ingest(
            &[ingestible_sst(
                vfs.as_ref(),
                dir.path(),
                "am.sst",
                &["a", "c"],
                &[("a", "m")],
            )],
            &file_ingestion(),
        )
        .unwrap();
    assert_eq!(r.levels, vec![Some(6)]);
    // Starts exactly at m: touches [a, m) but shares no key with it.
    let r = db
        .ingest(
            &[ingestible_sst(
                vfs.as_ref(),
                dir.path(),
                "mq.sst",
                &["m", "q"],
                &[],
            )],
            &file_ingestion(),
        )
        .unwrap();
    assert_eq!(r.levels, vec![Some(6)], "touching is not overlapping");
    // Ends at a, which the first file holds: that does overlap.
    let r = db
        .ingest(
            &[ingestible_sst(
                vfs.as_ref(),
                dir.path(),
                "0a.sst",
                &["0", "a"],
                &[],
            )],
            &file_ingestion(),
        )
        .unwrap();
    // L6 is Lbase here, and ingested files skip the levels above Lbase:
    // L0 is the only level left (tests in src/db/testdata/placement cover
    // a higher Lbase).
    assert_eq!(r.levels, vec![Some(0)], "sharing key a overlaps");
    assert_eq!(db.get(b"m").unwrap(), Some(b"ingested m".to_vec()));
    assert_eq!(db.get(b"a").unwrap(), Some(b"ingested a".to_vec()));
}

/// Opens a gate when dropped.
struct OpenOnDrop<'a>(&'a Gate);

impl Drop for OpenOnDrop<'_> {
    fn drop(&mut self) {
        self.0.set_shut(false);
    }
}

/// L0 holds W (its compaction into Lbase held at the gate, which blocks
/// L0 -> Lbase for every file over it), then A over `[b, m]`, flushed, then
/// the memtable deletes `deleted`, then B over `[b, c]` is ingested: it does
/// not overlap the memtable, so it is placed in L0 at once (on top of A),
/// newer than the deletion. A and B make a stack of two, enough for an
/// intra-L0 compaction. Returns whether one was picked (on a quiet machine
/// it reaches the gate within milliseconds), then lets everything finish and checks the reads.
/// `wait`: how long to give the compaction thread (nice +10, so slow to
/// be scheduled on a loaded machine) to reach its output file. Where the
/// merge must happen it is long (the wait ends as soon as it does); where
/// it must not, a late merge only makes the test check less, never fail.
fn intra_l0_beside_a_memtable(deleted: &str, wait: Duration) -> bool {
    // Compactions are held; flushes pass.
    let vfs = GateVfs::holding("strata-compact-");
    vfs.set_shut(true);
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        "/db",
        Options {
            vfs: Some(vfs.clone() as Arc<dyn Vfs>),
            memtable_size: 1 << 20,
            max_background_compactions: 2,
            compaction: CompactionOptions {
                l0_compaction_threshold: 1,
                intra_l0_min_files: 2,
                ..CompactionOptions::default()
            },
            ..Options::default()
        },
    )
    .unwrap();
    // Opens the gate when the test ends, failed or not, before the database
    // closes (which waits for held compactions).
    let _open_at_end = OpenOnDrop(&vfs);
    // W lies over a file in Lbase, so its compaction writes a table rather
    // than moving W.
    let r = db
        .ingest(
            &[ingestible_sst(
                vfs.as_ref(),
                dir.path(),
                "az.sst",
                &["a", "z"],
                &[],
            )],
            &file_ingestion(),
        )
        .unwrap();
    assert_eq!(r.levels, vec![Some(6)]);
    db.put("a", "w").unwrap();
    db.put("z", "w").unwrap();
    db.flush().unwrap();
    assert!(
        vfs.held_within(1, Duration::from_secs(10)),
        "W's compaction"
    );
    db.put("b", "a").unwrap();
    db.put("m", "a").unwrap();
    db.flush().unwrap();
    db.delete(deleted).unwrap();
    let r = db
        .ingest(
            &[ingestible_sst(
                vfs.as_ref(),
                dir.path(),
                "bc.sst",
                &["b", "c"],
                &[],
            )],
            &file_ingestion(),
        )
        .unwrap();
    assert_eq!(r.levels, vec![Some(0)]);
    let merged = vfs.held_within(2, wait);
    db.flush().unwrap();
    vfs.set_shut(false);
    db.wait_for_compactions().unwrap();
    let want_m = (deleted != "m").then(|| b"a".to_vec());
    assert_eq!(db.get("m").unwrap(), want_m);
    assert_eq!(db.get(deleted).unwrap(), None);
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"ingested b"[..]));
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"w"[..]));
    merged
}

/// The memtable deletes m, inside A: merged with B, A's m would carry B's
/// sequence number and sort above the file the memtable flushes to, so a
/// read of m would find A's value before the deletion. No intra-L0
/// compaction may take B.
#[test]
fn an_intra_l0_compaction_leaves_an_ingestion_newer_than_memory_alone() {
    assert!(
        !intra_l0_beside_a_memtable("m", Duration::from_millis(500)),
        "an intra-L0 compaction took the ingested file while older data in its range was in memory"
    );
}

/// The memtable deletes x, outside A and B: whatever it holds in their
/// range is written later and is newer than both, so A and B may be merged
/// (W4's disjoint ingestions: without this, L0 deepened until writes were
/// slowed).
#[test]
fn an_intra_l0_compaction_takes_an_ingestion_beside_a_memtable_of_other_keys() {
    assert!(
        intra_l0_beside_a_memtable("x", Duration::from_secs(30)),
        "no intra-L0 compaction took A and B"
    );
}
