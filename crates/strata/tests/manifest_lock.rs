//! A flush's or a compaction's MANIFEST fsync never holds up Puts, and an
//! ingestion waits for it only in its own final sync (the MANIFEST has its
//! own locks, apart from the state lock: `version::manifest_log`).
//!
//! A file system wrapper holds the MANIFEST fsyncs of chosen threads at a
//! gate: a flush (or a manual compaction) is frozen inside its MANIFEST
//! sync, after its record was framed. While it is held, an ingestion is
//! committed and readable at once, but its caller's own MANIFEST sync
//! waits: fsyncs run one at a time, each one's failure recorded before the
//! next (Linux reports a failed write-back once per open file
//! description; the loom model `finds_unserialised_fsyncs` shows an `Ok`
//! for lost bytes without it). Puts go on meanwhile; once the gate opens
//! the ingestion returns, and everything (the held job's result, the
//! ingestion, the Puts) must survive a reopen. No timing is asserted
//! beyond "not finished while held"; a wait that never ends fails after a
//! generous timeout instead of hanging.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use strata::vfs::{FileSync, Vfs, WritableFile};
use strata::{CompactionOptions, Db, Options, Result};
use support::{file_ingestion, ingestible_sst, CreateGate, GatedVfs};

#[path = "support/gated_vfs.rs"]
mod support;

/// The gate: shut for threads whose name starts with one of `held`.
struct Gate {
    held: Mutex<Vec<String>>,
    shut: Mutex<bool>,
    cv: Condvar,
    /// MANIFEST syncs waiting at the gate.
    waiting: AtomicUsize,
    /// MANIFEST syncs that went through.
    passed: AtomicUsize,
    /// Table removals of held threads wait at the gate too (instead of
    /// their MANIFEST syncs passing).
    removals: Mutex<bool>,
}

impl Gate {
    /// Waits here if the calling thread is held and the gate is shut.
    fn pass(&self) {
        self.wait_if_held();
        self.passed.fetch_add(1, Ordering::SeqCst);
    }
    /// A MANIFEST sync: held unless the gate holds removals instead.
    fn pass_sync(&self) {
        if *self.removals.lock().unwrap() {
            self.passed.fetch_add(1, Ordering::SeqCst);
            return;
        }
        self.pass();
    }
    fn wait_if_held(&self) {
        let me = std::thread::current().name().unwrap_or("").to_string();
        let held = self.held.lock().unwrap().iter().any(|p| me.starts_with(p));
        if held {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            let mut shut = self.shut.lock().unwrap();
            while *shut {
                shut = self.cv.wait(shut).unwrap();
            }
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }
    /// Like `pass`, for a table removal, if removals are held.
    fn hold_removal(&self) {
        if *self.removals.lock().unwrap() {
            self.pass();
        }
    }
    fn shut(&self, threads: &[&str]) {
        *self.held.lock().unwrap() = threads.iter().map(|s| s.to_string()).collect();
        *self.shut.lock().unwrap() = true;
    }
    fn open(&self) {
        *self.shut.lock().unwrap() = false;
        self.cv.notify_all();
    }
    fn wait_for_a_held_sync(&self) {
        for _ in 0..4000 {
            if self.waiting.load(Ordering::SeqCst) > 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("no MANIFEST sync reached the gate");
    }
}

/// The shared in-memory file system of the gated tests, whose MANIFEST
/// files sync through the gate.
type GateVfs = GatedVfs<ManifestGate>;

/// Wraps every MANIFEST file the database creates in a [`GatedFile`].
struct ManifestGate {
    gate: Arc<Gate>,
}

impl CreateGate for ManifestGate {
    fn before_create(&self, _path: &Path) {}
    /// Table removals (the obsolete-file pass) of held threads wait too.
    fn before_remove(&self, path: &Path) {
        if path.extension().is_some_and(|e| e == "sst") {
            self.gate.hold_removal();
        }
    }
    fn wrap(&self, path: &Path, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        let manifest = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("MANIFEST-"));
        if manifest {
            return Box::new(GatedFile {
                inner: file,
                gate: self.gate.clone(),
            });
        }
        file
    }
}

/// A MANIFEST file: both ways of syncing it pass the gate first.
struct GatedFile {
    inner: Box<dyn WritableFile>,
    gate: Arc<Gate>,
}

struct GatedSync {
    inner: Option<Arc<dyn FileSync>>,
    gate: Arc<Gate>,
}

impl FileSync for GatedSync {
    fn sync(&self) -> Result<()> {
        self.gate.pass_sync();
        match &self.inner {
            Some(s) => s.sync(),
            None => Ok(()),
        }
    }
}

impl WritableFile for GatedFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.gate.pass_sync();
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        Some(Arc::new(GatedSync {
            inner: self.inner.sync_handle(),
            gate: self.gate.clone(),
        }))
    }
}

fn gate_vfs() -> Arc<GateVfs> {
    Arc::new(GatedVfs::with_gate(ManifestGate {
        gate: Arc::new(Gate {
            held: Mutex::new(Vec::new()),
            shut: Mutex::new(false),
            cv: Condvar::new(),
            waiting: AtomicUsize::new(0),
            passed: AtomicUsize::new(0),
            removals: Mutex::new(false),
        }),
    }))
}

/// Automatic compactions are kept out of the way (a high L0 trigger), so
/// the only background MANIFEST writer is the one the test holds.
fn open(vfs: &Arc<GateVfs>) -> Arc<Db> {
    Arc::new(
        Db::open(
            "/db",
            Options {
                vfs: Some(vfs.clone() as Arc<dyn Vfs>),
                compaction: CompactionOptions {
                    l0_compaction_threshold: 1000,
                    ..CompactionOptions::default()
                },
                l0_slowdown_sublevels: 1000,
                l0_stop_sublevels: 1001,
                ..Options::default()
            },
        )
        .unwrap(),
    )
}

/// What holds the MANIFEST sync.
#[derive(Clone, Copy, Debug)]
enum Held {
    Flush,
    Compaction,
}

/// Holds `held`'s MANIFEST sync, then ingests two files (one into the
/// tree, one overlapping the memtable) from another thread and Puts: the
/// first ingestion is readable and the Puts complete while the sync is
/// held, the ingestions return only after it; then checks everything
/// survives a reopen.
fn ingest_while_held(held: Held) {
    let vfs = gate_vfs();
    let db = open(&vfs);
    for i in 0..200u32 {
        db.put(format!("a{i:04}"), [b'a'; 100]).unwrap();
    }
    if let Held::Compaction = held {
        db.flush().unwrap();
        for i in 0..200u32 {
            db.put(format!("a{i:04}"), [b'b'; 100]).unwrap();
        }
        db.flush().unwrap();
    }
    // The held job runs in a thread with a known name; the background
    // flush thread is `strata-flush`.
    let thread = match held {
        Held::Flush => "strata-flush",
        Held::Compaction => "held-compaction",
    };
    vfs.gate.shut(&[thread]);
    let job = {
        let db = db.clone();
        std::thread::Builder::new()
            .name("held-compaction".into())
            .spawn(move || match held {
                Held::Flush => db.flush(),
                Held::Compaction => db.compact_range(None, None),
            })
            .unwrap()
    };
    vfs.gate.wait_for_a_held_sync();

    let into_tree = ingestible_sst(
        vfs.as_ref(),
        Path::new("/in"),
        "tree.sst",
        &["m0001", "m0002"],
        &[],
    );
    db.put("z0001", "in memory").unwrap();
    let over_memory = ingestible_sst(
        vfs.as_ref(),
        Path::new("/in"),
        "mem.sst",
        &["z0001", "z0002"],
        &[],
    );
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let db = db.clone();
        std::thread::spawn(move || {
            let a = db.ingest(&[into_tree], &file_ingestion());
            let b = db.ingest(&[over_memory], &file_ingestion());
            // Let go of the database before answering: the test reopens it
            // once this thread has answered, and a reopen while this
            // clone is alive finds the database still open (a flake seen
            // once in ./test.sh: "already open on this in-memory file
            // system").
            drop(db);
            let _ = tx.send((a, b));
        });
    }
    // The first ingestion is committed and readable at once; its caller's
    // MANIFEST sync waits for the held fsync.
    let mut readable = false;
    for _ in 0..4000 {
        if db.get("m0002").unwrap() == Some(b"ingested m0002".to_vec()) {
            readable = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        readable,
        "{held:?}: the ingestion is readable before its sync"
    );
    // Puts go on meanwhile.
    for i in 0..100u32 {
        db.put(format!("p{i:04}"), [b'p'; 100]).unwrap();
    }
    assert!(
        rx.try_recv().is_err(),
        "{held:?}: an ingestion returned while a MANIFEST fsync before its own was held"
    );
    assert_eq!(
        vfs.gate.waiting.load(Ordering::SeqCst),
        1,
        "{held:?}: the sync was held throughout"
    );
    assert!(!job.is_finished(), "{held:?}: the job is still held");

    vfs.gate.open();
    let Ok((a, b)) = rx.recv_timeout(Duration::from_secs(60)) else {
        panic!("{held:?}: the ingestions did not finish after the gate opened");
    };
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(!a.flushable, "{held:?}: {a:?}");
    assert!(b.flushable, "{held:?}: overlaps the memtable: {b:?}");
    assert_eq!(db.get("z0001").unwrap(), Some(b"ingested z0001".to_vec()));
    db.put("z0002", "after").unwrap();
    job.join().unwrap().unwrap();
    let want_a = match held {
        Held::Flush => [b'a'; 100],
        Held::Compaction => [b'b'; 100],
    };
    let check = |db: &Db, when: &str| {
        assert_eq!(
            db.get("a0123").unwrap(),
            Some(want_a.to_vec()),
            "{held:?} {when}"
        );
        assert_eq!(
            db.get("m0001").unwrap(),
            Some(b"ingested m0001".to_vec()),
            "{held:?} {when}"
        );
        assert_eq!(db.get("z0001").unwrap(), Some(b"ingested z0001".to_vec()));
        assert_eq!(db.get("z0002").unwrap(), Some(b"after".to_vec()));
        assert_eq!(db.get("p0099").unwrap(), Some(vec![b'p'; 100]));
    };
    check(&db, "before reopen");
    let m = db.metrics();
    match held {
        Held::Flush => assert!(m.flushes >= 1, "{held:?}"),
        Held::Compaction => assert!(m.compactions + m.moves >= 1, "{held:?}"),
    }
    drop(db);
    let db = open(&vfs);
    check(&db, "after reopen");
}

#[test]
fn puts_go_on_while_a_flush_holds_its_manifest_sync() {
    ingest_while_held(Held::Flush);
}

#[test]
fn puts_go_on_while_a_compaction_holds_its_manifest_sync() {
    ingest_while_held(Held::Compaction);
}

/// An ingestion and Puts complete while a compaction's obsolete-file pass
/// is held inside a table removal: the pass unlinks files with the state
/// lock released (an ingestion's placement and a memtable rotation take
/// that lock inside the commit slot, so before, a Put could wait on an
/// unlink).
#[test]
fn an_ingestion_completes_while_an_obsolete_table_removal_is_held() {
    let vfs = gate_vfs();
    let db = open(&vfs);
    for round in 0..2u8 {
        for i in 0..200u32 {
            db.put(format!("a{i:04}"), [b'a' + round; 100]).unwrap();
        }
        db.flush().unwrap();
    }
    *vfs.gate.removals.lock().unwrap() = true;
    vfs.gate.shut(&["held-compaction", "strata-"]);
    let job = {
        let db = db.clone();
        std::thread::Builder::new()
            .name("held-compaction".into())
            .spawn(move || db.compact_range(None, None))
            .unwrap()
    };
    vfs.gate.wait_for_a_held_sync();
    let file = ingestible_sst(vfs.as_ref(), Path::new("/in"), "m.sst", &["m0001"], &[]);
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let db = db.clone();
        std::thread::spawn(move || {
            let r = db.ingest(&[file], &file_ingestion());
            for i in 0..100u32 {
                db.put(format!("p{i:04}"), [b'p'; 100]).unwrap();
            }
            let _ = tx.send(r);
        });
    }
    let outcome = rx.recv_timeout(Duration::from_secs(30));
    let still_held = vfs.gate.waiting.load(Ordering::SeqCst);
    vfs.gate.open();
    let r = outcome.expect("the ingestion waited behind a held table removal");
    r.unwrap();
    assert!(still_held >= 1, "a removal was held throughout");
    job.join().unwrap().unwrap();
    assert_eq!(db.get("a0007").unwrap(), Some(vec![b'b'; 100]));
    assert_eq!(db.get("m0001").unwrap(), Some(b"ingested m0001".to_vec()));
    assert_eq!(db.get("p0099").unwrap(), Some(vec![b'p'; 100]));
}
