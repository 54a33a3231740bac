//! An event listener may call back into the database: the usual RocksDB
//! pattern of reading a property (`metrics()`) in `OnFlushCompleted`, a
//! read, a write, even a flush or a close. Events used to be handed to
//! the listener on the thread doing the work, under the database's state
//! lock (a flush's end, a compaction's, the open), so `metrics()` there
//! hung `flush()` forever. They are now heard on the listener's own
//! thread, with no lock held. Each workload runs under a watchdog, so a
//! regression fails the test instead of hanging it.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;
use strata::events::{Event, EventListener, EventRecord};
use strata::sstable::{SstOptions, SstWriter};
use strata::{CompactionOptions, Db, IngestOptions, Options};

/// Runs `f` on a thread of its own and fails if it has not returned
/// within `secs` (the thread is left behind: it is hung).
fn within<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(_) => panic!("{what} did not return within {secs} s: hung (a listener deadlock?)"),
    }
}

/// Calls back into the database on every event it hears.
#[derive(Default)]
struct Reentrant {
    db: OnceLock<Weak<Db>>,
    /// Kinds heard, in order.
    heard: Mutex<Vec<String>>,
    /// Errors of its calls while the database was open.
    errors: Mutex<Vec<String>>,
    closing: AtomicBool,
    puts: AtomicU64,
}

impl EventListener for Reentrant {
    fn on_event(&self, r: &EventRecord) {
        self.heard.lock().unwrap().push(r.event.kind().to_string());
        let Some(db) = self.db.get().and_then(Weak::upgrade) else {
            return; // the open's events, before `db` is set
        };
        let fail = |what: &str, e: strata::Error| {
            if !self.closing.load(Ordering::SeqCst) {
                self.errors
                    .lock()
                    .unwrap()
                    .push(format!("{what} in {}: {e}", r.event.kind()));
            }
        };
        // On every kind of event: the metrics, reads and a write.
        if db.metrics().levels.is_empty() {
            fail("metrics", strata::Error::internal("no levels"));
        }
        if let Err(e) = db.get("k00001") {
            fail("get", e);
        }
        if let Some(Err(e)) = db.iter().next() {
            fail("iter", e);
        }
        let n = self.puts.fetch_add(1, Ordering::SeqCst);
        if let Err(e) = db.put(format!("heard:{n:06}"), r.event.kind()) {
            fail("put", e);
        }
        // Heavier calls on some kinds: each waits for background work or
        // for the queue of events behind this one.
        let heavy = match &r.event {
            Event::Checkpoint { .. } => db.flush(),
            Event::Ingest { .. } => db.sync_wal(),
            Event::CompactionEnd { .. } if n.is_multiple_of(5) => db.wait_for_compactions(),
            _ => Ok(()),
        };
        if let Err(e) = heavy {
            fail("a flush, sync or wait", e);
        }
    }
}

fn sst(path: &Path, prefix: &str, n: usize) {
    let mut w = SstWriter::create(path, SstOptions::for_ingestion()).unwrap();
    for i in 0..n {
        w.put(format!("{prefix}{i:06}"), [b'i'; 64]).unwrap();
    }
    w.finish().unwrap();
}

/// Flushes, compactions, write stops, rotations, ingestions (as files,
/// queued behind the memtable, and as a batch), a checkpoint, a manual
/// compaction and the close, with a listener calling `metrics`, `get`,
/// `iter` and `put` on every event, `flush` on the checkpoint's, `sync_wal`
/// on each ingestion's and `wait_for_compactions` on some compactions'. It
/// must not hang, every call must succeed, and the listener must hear
/// exactly what the `EVENTS` log holds, in its order.
#[test]
fn a_listener_may_call_back_into_the_database_on_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let listener = Arc::new(Reentrant::default());
    let l = Arc::clone(&listener);
    let (heard_kinds, log_kinds) = within(300, "the workload", move || {
        let db = Arc::new(
            Db::open(
                &path,
                Options {
                    memtable_size: 32 << 10,
                    max_immutable_memtables: 1,
                    event_listener: Some(l.clone()),
                    compaction: CompactionOptions {
                        l0_compaction_threshold: 2,
                        target_file_size: 64 << 10,
                        base_level_bytes: 256 << 10,
                        ..CompactionOptions::default()
                    },
                    ..Options::default()
                },
            )
            .unwrap(),
        );
        l.db.set(Arc::downgrade(&db)).unwrap();
        for i in 0..20_000 {
            db.put(format!("k{i:05}"), [b'v'; 100]).unwrap();
        }
        let tmp = path.parent().unwrap();
        sst(&tmp.join("big.sst"), "b", 2_000);
        db.ingest(&[tmp.join("big.sst")], &IngestOptions::default())
            .unwrap();
        db.put("q000100", "in the memtable").unwrap();
        sst(&tmp.join("queued.sst"), "q", 2_000);
        let r = db
            .ingest(&[tmp.join("queued.sst")], &IngestOptions::default())
            .unwrap();
        assert!(r.flushable, "{r:?}");
        sst(&tmp.join("small.sst"), "s", 10);
        let r = db
            .ingest(&[tmp.join("small.sst")], &IngestOptions::default())
            .unwrap();
        assert!(r.as_batch, "{r:?}");
        db.checkpoint(tmp.join("cp")).unwrap();
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        l.closing.store(true, Ordering::SeqCst);
        db.close().unwrap();
        let heard = l.heard.lock().unwrap().clone();
        let log = strata::inspect::read_events(&path).unwrap();
        let logged: Vec<String> = log
            .records
            .iter()
            .map(|r| r.event.kind().to_string())
            .collect();
        (heard, logged)
    });
    let errors = listener.errors.lock().unwrap().clone();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        heard_kinds, log_kinds,
        "the listener hears the log's events in its order"
    );
    let kinds: BTreeSet<&str> = heard_kinds.iter().map(String::as_str).collect();
    for k in [
        "open",
        "flush_begin",
        "flush_end",
        "compaction_begin",
        "compaction_end",
        "ingest",
        "checkpoint",
        "memtable_rotated",
        "table_created",
        "table_deleted",
    ] {
        assert!(kinds.contains(k), "no {k} heard: {kinds:?}");
    }
    assert!(listener.puts.load(Ordering::SeqCst) > 100);
}

/// A listener that closes the database (when the flush it hears ends):
/// the close completes from the listener's thread, the flush that waited
/// for the listener returns, later calls say the database is closed, and
/// the directory can be opened again at once.
#[test]
fn a_listener_may_close_the_database() {
    #[derive(Default)]
    struct Closer(OnceLock<Weak<Db>>, Mutex<Option<strata::Result<()>>>);
    impl EventListener for Closer {
        fn on_event(&self, r: &EventRecord) {
            if let (Event::FlushEnd { .. }, Some(db)) =
                (&r.event, self.0.get().and_then(Weak::upgrade))
            {
                let mut g = self.1.lock().unwrap();
                if g.is_none() {
                    *g = Some(db.close());
                }
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let closer = Arc::new(Closer::default());
    let c = Arc::clone(&closer);
    within(
        60,
        "a flush whose listener closes the database",
        move || {
            let db = Arc::new(
                Db::open(
                    &path,
                    Options {
                        event_listener: Some(c.clone()),
                        ..Options::default()
                    },
                )
                .unwrap(),
            );
            c.0.set(Arc::downgrade(&db)).unwrap();
            db.put("k", "v").unwrap();
            db.flush().unwrap();
            let closed = c.1.lock().unwrap().take();
            assert!(matches!(closed, Some(Ok(()))), "{closed:?}");
            let e = db.put("k2", "v").unwrap_err();
            assert!(e.to_string().contains("is closed"), "{e}");
            let again = Db::open_default(&path).unwrap();
            assert_eq!(again.get("k").unwrap(), Some(b"v".to_vec()));
        },
    );
}

/// A listener holding the database (an `Arc<Db>`, a cycle through the
/// options) no longer keeps it open for good: `close` stops the listener's
/// thread, which drops the listener and with it the cycle.
#[test]
fn close_breaks_a_listener_cycle() {
    struct Holder(Mutex<Option<Arc<Db>>>);
    impl EventListener for Holder {
        fn on_event(&self, _: &EventRecord) {
            if let Some(db) = self.0.lock().unwrap().as_ref() {
                let _ = db.metrics();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    within(
        60,
        "a flush heard by a listener holding the database",
        move || {
            let holder = Arc::new(Holder(Mutex::new(None)));
            let db = Arc::new(
                Db::open(
                    &path,
                    Options {
                        event_listener: Some(holder.clone()),
                        ..Options::default()
                    },
                )
                .unwrap(),
            );
            *holder.0.lock().unwrap() = Some(Arc::clone(&db));
            drop(holder);
            db.put("k", "v").unwrap();
            db.flush().unwrap();
            assert_eq!(Arc::strong_count(&db), 2, "ours and the listener's");
            db.close().unwrap();
            assert_eq!(
                Arc::strong_count(&db),
                1,
                "the listener is gone with its thread"
            );
        },
    );
}
