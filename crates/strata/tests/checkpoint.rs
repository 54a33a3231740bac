//! `Db::checkpoint` checked against a model: each checkpoint, opened on its
//! own, holds exactly what the database held when it was taken, whatever
//! came before (flushes, queued and excising ingestions, range deletions,
//! compactions, reopens) and whatever the database and the checkpoint do
//! after it; beside concurrent writers and ingestions it is a prefix that
//! includes everything acknowledged before the call; and a checkpoint cut
//! short by an error or a power cut is never opened as a database holding
//! something else.
//!
//! `STRATA_MODEL_SEEDS=n` runs n seeds of the model test instead of the
//! default.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use strata::sstable::{SstOptions, SstWriter};
use strata::vfs::{FaultVfs, MemVfs, Vfs};
use strata::{Db, IngestOptions, Options, WriteBatch, WriteOptions};
use support::{file_ingestion, ingestible_sst, CreateGate, GatedVfs};

#[path = "support/gated_vfs.rs"]
mod support;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn seeds(default: u64) -> u64 {
    std::env::var("STRATA_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn dump(db: &Db) -> Model {
    db.iter().collect::<strata::Result<Model>>().unwrap()
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    format!("k{:03}", rng.gen_range(0..100)).into_bytes()
}

/// An ingestible SST of random keys `k000`..`k099`, and its entries.
fn random_sst(vfs: &dyn Vfs, rng: &mut StdRng, path: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut kvs: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.gen_range(1..30))
        .map(|_| (key(rng), vec![b'i'; rng.gen_range(0..60)]))
        .collect();
    kvs.sort();
    kvs.dedup_by(|a, b| a.0 == b.0);
    let mut w = SstWriter::create_in(vfs, path, SstOptions::for_ingestion()).unwrap();
    for (k, v) in &kvs {
        w.put(k, v).unwrap();
    }
    w.finish().unwrap();
    kvs
}

fn describe(m: &Model, got: &Model) -> String {
    let missing: Vec<_> = m
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(v))
        .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
        .take(5)
        .collect();
    let extra: Vec<_> = got
        .keys()
        .filter(|k| !m.contains_key(*k))
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .take(5)
        .collect();
    format!(
        "{} keys expected, {} found; wrong or missing {missing:?}, extra {extra:?}",
        m.len(),
        got.len()
    )
}

/// Random operations on a database with a small memtable (so flushes,
/// queued ingestions and compactions happen); a checkpoint at random
/// points, each checked at once and again at the end, after the database
/// and the other checkpoints went on changing.
#[test]
fn checkpoints_hold_what_the_database_held_when_taken() {
    let mut taken = 0;
    for seed in 0..seeds(60) {
        let mut rng = StdRng::seed_from_u64(seed);
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let o = || Options {
            vfs: Some(vfs.clone()),
            memtable_size: 4 << 10,
            max_immutable_memtables: 1,
            ..Options::default()
        };
        let mut db = Db::open("/db", o()).unwrap();
        let mut model = Model::new();
        let mut checkpoints: Vec<(PathBuf, Model)> = Vec::new();
        for step in 0..80 {
            match rng.gen_range(0..20) {
                0..=8 => {
                    let (k, v) = (key(&mut rng), vec![b'p'; rng.gen_range(0..200)]);
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
                9 => {
                    let k = key(&mut rng);
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                10 => {
                    let (a, b) = (key(&mut rng), key(&mut rng));
                    let (a, b) = (a.clone().min(b.clone()), a.max(b));
                    let mut batch = WriteBatch::new();
                    batch.delete_range(&a, &b);
                    db.write(batch, &WriteOptions::default()).unwrap();
                    model.retain(|k, _| !(a <= *k && *k < b));
                }
                11..=13 => {
                    let p = PathBuf::from(format!("/in/{seed}-{step}.sst"));
                    let kvs = random_sst(vfs.as_ref(), &mut rng, &p);
                    let excise = rng.gen_bool(0.3).then(|| {
                        let (a, b) = (key(&mut rng), key(&mut rng));
                        (a.clone().min(b.clone()), a.max(b))
                    });
                    let excise = excise.filter(|(a, b)| a < b);
                    db.ingest(
                        &[p],
                        &IngestOptions {
                            excise: excise.clone(),
                            ..IngestOptions::default()
                        },
                    )
                    .unwrap();
                    if let Some((a, b)) = excise {
                        model.retain(|k, _| !(a <= *k && *k < b));
                    }
                    model.extend(kvs);
                }
                14 => db.flush().unwrap(),
                15 => db.compact_range(None, None).unwrap(),
                16 => {
                    db.close().unwrap();
                    db = Db::open("/db", o()).unwrap();
                }
                _ => {
                    let dir = PathBuf::from(format!("/cp{step}"));
                    let info = db.checkpoint(&dir).unwrap();
                    assert!(info.sequence <= db.latest_sequence());
                    let cp = Db::open(&dir, o()).unwrap();
                    let got = dump(&cp);
                    assert!(
                        got == model,
                        "seed {seed} step {step}: checkpoint just taken: {}",
                        describe(&model, &got)
                    );
                    // The checkpoint is a database of its own: writes to it
                    // stay in it.
                    cp.put("only-in-the-checkpoint", "x").unwrap();
                    cp.close().unwrap();
                    let mut m = model.clone();
                    m.insert(b"only-in-the-checkpoint".to_vec(), b"x".to_vec());
                    checkpoints.push((dir, m));
                    taken += 1;
                }
            }
        }
        // The database went on (compactions removed tables the checkpoints
        // share); each checkpoint still holds its moment.
        db.compact_range(None, None).unwrap();
        assert_eq!(dump(&db), model, "seed {seed}: the database itself");
        db.close().unwrap();
        for (dir, m) in &checkpoints {
            let cp = Db::open(dir, o()).unwrap();
            cp.compact_range(None, None).unwrap();
            let got = dump(&cp);
            assert!(
                got == *m,
                "seed {seed}: {} at the end: {}",
                dir.display(),
                describe(m, &got)
            );
            cp.close().unwrap();
        }
        let db = Db::open("/db", o()).unwrap();
        assert_eq!(
            dump(&db),
            model,
            "seed {seed}: the database after reopening"
        );
        db.close().unwrap();
    }
    assert!(taken > 50, "checkpoints taken: {taken}");
}

/// A writer and an ingester run while checkpoints are taken: every
/// checkpoint holds a prefix of each one's operations (keys `w000000000..`,
/// files `x000000..`), at least as long as what was acknowledged before the
/// call. A non-overlapping ingestion placed in the tree after the
/// checkpoint's flush, with writes numbered before it still in the
/// memtable, would break the prefix: the checkpoint holds ingestions off
/// while it flushes.
#[test]
fn checkpoints_beside_writers_and_ingestions_are_prefixes() {
    let root = tempfile::tempdir().unwrap();
    // Memtables large enough that most flushes are the checkpoints' own:
    // an ingestion during one lands above the flushed sequence number.
    let opts = || Options {
        memtable_size: 4 << 20,
        ..Options::default()
    };
    let db = Arc::new(Db::open(root.path().join("db"), opts()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let ingested = Arc::new(AtomicU64::new(0));
    let writer = {
        let (db, stop, written) = (db.clone(), stop.clone(), written.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                db.put(format!("w{i:09}"), [b'v'; 100]).unwrap();
                i += 1;
                if i.is_multiple_of(64) {
                    // Paced, so that a checkpoint has a moderate number of
                    // keys to read.
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                written.store(i, Ordering::SeqCst);
            }
        })
    };
    let ingester = {
        let (db, stop, ingested) = (db.clone(), stop.clone(), ingested.clone());
        let files = root.path().join("files");
        std::fs::create_dir(&files).unwrap();
        std::thread::spawn(move || {
            let mut j = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let p = files.join(format!("{j}.sst"));
                let mut w = SstWriter::create(&p, SstOptions::for_ingestion()).unwrap();
                w.put(format!("x{j:06}"), b"ingested").unwrap();
                w.finish().unwrap();
                db.ingest(&[&p], &IngestOptions::default()).unwrap();
                j += 1;
                ingested.store(j, Ordering::SeqCst);
            }
        })
    };
    for n in 0..15 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (w0, i0) = (
            written.load(Ordering::SeqCst),
            ingested.load(Ordering::SeqCst),
        );
        let dir = root.path().join(format!("cp{n}"));
        let info = db.checkpoint(&dir).unwrap();
        let cp = Db::open(&dir, opts()).unwrap();
        let keys: Vec<Vec<u8>> = cp.iter().map(|kv| kv.unwrap().0).collect();
        cp.close().unwrap();
        let ws: Vec<&Vec<u8>> = keys.iter().filter(|k| k[0] == b'w').collect();
        let xs: Vec<&Vec<u8>> = keys.iter().filter(|k| k[0] == b'x').collect();
        for (i, k) in ws.iter().enumerate() {
            assert_eq!(
                **k,
                format!("w{i:09}").into_bytes(),
                "checkpoint {n}: writes"
            );
        }
        for (j, k) in xs.iter().enumerate() {
            assert_eq!(
                **k,
                format!("x{j:06}").into_bytes(),
                "checkpoint {n}: ingestions"
            );
        }
        assert!(
            ws.len() as u64 >= w0 && xs.len() as u64 >= i0,
            "checkpoint {n} (sequence {}) holds {} writes and {} ingestions; {w0} and {i0} \
             were acknowledged before it",
            info.sequence,
            ws.len(),
            xs.len()
        );
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    ingester.join().unwrap();
    assert!(ingested.load(Ordering::SeqCst) > 5, "ingestions ran");
}

/// What a checkpoint refuses, before it changes anything.
#[test]
fn a_checkpoint_refuses_an_existing_directory_one_inside_the_database_and_a_read_only_open() {
    let root = tempfile::tempdir().unwrap();
    let dbdir = root.path().join("db");
    let db = Db::open_default(&dbdir).unwrap();
    db.put("k", "v").unwrap();
    let exists = root.path().join("exists");
    std::fs::create_dir(&exists).unwrap();
    let e = db.checkpoint(&exists).unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(e.to_string().contains("already exists"), "{e}");
    assert_eq!(std::fs::read_dir(&exists).unwrap().count(), 0);
    for inside in [
        dbdir.join("cp"),
        dbdir.join("sub/../cp2"),
        root.path().join("db/x/y"),
    ] {
        let e = db.checkpoint(&inside).unwrap_err();
        assert!(e.to_string().contains("inside the database"), "{e}");
        assert!(!inside.exists(), "{}", inside.display());
    }
    // Through a symbolic link to the database's directory.
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&dbdir, &link).unwrap();
    let e = db.checkpoint(link.join("cp")).unwrap_err();
    assert!(e.to_string().contains("inside the database"), "{e}");
    db.close().unwrap();
    let ro = Db::open_read_only(&dbdir, Options::default()).unwrap();
    let e = ro.checkpoint(root.path().join("cp")).unwrap_err();
    assert!(e.is_not_supported(), "{e}");
    assert!(!root.path().join("cp").exists());
}

/// A checkpoint that fails at any file-system call removes what it made
/// and leaves the database as it was; a power cut at any point leaves a
/// directory that either opens with exactly the database's data or is
/// refused (no CURRENT), never one that opens with something else.
#[test]
fn a_checkpoint_cut_short_is_never_taken_for_a_database() {
    let setup = |vfs: &Arc<FaultVfs>| -> (Db, Model) {
        let dynvfs: Arc<dyn Vfs> = vfs.clone();
        let db = Db::open(
            "/db",
            Options {
                vfs: Some(dynvfs),
                memtable_size: 8 << 10,
                ..Options::default()
            },
        )
        .unwrap();
        let mut model = Model::new();
        for i in 0..300u32 {
            let (k, v) = (format!("k{:04}", i * 7 % 300), format!("v{i}"));
            db.put(&k, &v).unwrap();
            model.insert(k.into_bytes(), v.into_bytes());
        }
        // Synced, so that the source keeps every write across a power cut
        // (the memtable still holds some: the checkpoint flushes them).
        let mut b = WriteBatch::new();
        b.put("synced", "1");
        db.write(b, &WriteOptions { sync: true }).unwrap();
        model.insert(b"synced".to_vec(), b"1".to_vec());
        (db, model)
    };
    let opts = |vfs: FaultVfs| {
        let vfs: Arc<dyn Vfs> = Arc::new(vfs);
        Options {
            vfs: Some(vfs),
            ..Options::default()
        }
    };
    // How many mutating calls a checkpoint makes.
    let calls = {
        let vfs = Arc::new(FaultVfs::new());
        let (db, _) = setup(&vfs);
        let count = |v: &FaultVfs| -> u64 {
            strata::vfs::fault::Op::ALL
                .iter()
                .filter(|o| o.is_mutating())
                .map(|&o| v.count(o))
                .sum()
        };
        let before = count(&vfs);
        db.checkpoint("/cp").unwrap();
        count(&vfs) - before
    };
    assert!(calls > 5, "{calls} calls");
    let (mut opened, mut refused) = (0, 0);
    for n in 0..calls {
        let vfs = Arc::new(FaultVfs::new());
        let (db, model) = setup(&vfs);
        vfs.cut_power_after(n);
        let r = db.checkpoint("/cp");
        drop(db);
        // Background threads make some of the calls, so a cut near the end
        // may fall after the checkpoint: then the power goes now, and the
        // checkpoint, acknowledged, must open.
        let image = vfs.crash_image().unwrap_or_else(|| vfs.crash_clone());
        if r.is_ok() {
            assert!(
                image.exists(Path::new("/cp/CURRENT")),
                "cut after {n} of {calls}: acknowledged, but CURRENT is not durable"
            );
        }
        // Read-only, so that a directory that is no database is refused
        // rather than made one.
        let has_current = image.exists(Path::new("/cp/CURRENT"));
        match Db::open_read_only("/cp", opts(image.crash_clone())) {
            Ok(cp) => {
                let got = dump(&cp);
                assert!(
                    got == model,
                    "cut after {n}: the checkpoint opened: {}",
                    describe(&model, &got)
                );
                opened += 1;
            }
            Err(e) => {
                assert!(
                    !has_current,
                    "cut after {n}: CURRENT there, yet refused: {e}"
                );
                refused += 1;
            }
        }
        let db = Db::open("/db", opts(image)).unwrap();
        assert_eq!(dump(&db), model, "cut after {n}: the database");
    }
    // A cut after the last call of the checkpoint is outside it; every cut
    // inside left no database behind.
    assert!(refused > 0, "{opened} opened, {refused} refused");
    for n in 1..=calls {
        for op in [strata::vfs::fault::Op::Create, strata::vfs::fault::Op::Sync] {
            let vfs = Arc::new(FaultVfs::new());
            let (db, model) = setup(&vfs);
            vfs.inject(strata::vfs::fault::Fault::eio(op, n));
            let r = db.checkpoint("/cp");
            vfs.clear_fault();
            if r.is_ok() {
                continue; // fewer than n calls of this kind
            }
            let left = vfs.list(Path::new("/cp")).unwrap();
            assert!(left.is_empty(), "{op:?} #{n} failed: left {left:?}");
            // The database goes on (a failed checkpoint's flush may have
            // stopped it: then a reopen brings it back).
            let got = match db.put("after", "1") {
                Ok(()) => dump(&db),
                Err(_) => {
                    db.close().ok();
                    let dynvfs: Arc<dyn Vfs> = vfs.clone();
                    let db = Db::open(
                        "/db",
                        Options {
                            vfs: Some(dynvfs),
                            ..Options::default()
                        },
                    )
                    .unwrap();
                    db.put("after", "1").unwrap();
                    dump(&db)
                }
            };
            let mut m = model.clone();
            m.insert(b"after".to_vec(), b"1".to_vec());
            assert_eq!(got, m, "{op:?} #{n} failed: the database");
        }
    }
}

/// Holds the flush thread's table creations while shut.
struct FlushGate {
    shut: Mutex<bool>,
    cv: Condvar,
    held: AtomicUsize,
}

impl CreateGate for FlushGate {
    fn before_create(&self, path: &Path) {
        let flush = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("strata-flush"));
        if !flush || path.extension().is_none_or(|e| e != "sst") {
            return;
        }
        self.held.fetch_add(1, Ordering::SeqCst);
        let mut shut = self.shut.lock().unwrap();
        while *shut {
            shut = self.cv.wait(shut).unwrap();
        }
        self.held.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An ingestion that arrives while a checkpoint flushes waits for it. The
/// flush is held at a gate; a non-overlapping ingestion from another thread
/// arrives meanwhile. Placed at once, it would sit in the tree above the
/// flushed sequence number, ahead of writes numbered before it (the
/// checkpoint would refuse that tree rather than copy it).
#[test]
fn an_ingestion_during_a_checkpoint_waits_for_it() {
    let vfs = Arc::new(GatedVfs::with_gate(FlushGate {
        shut: Mutex::new(true),
        cv: Condvar::new(),
        held: AtomicUsize::new(0),
    }));
    let dynvfs: Arc<dyn Vfs> = vfs.clone();
    let opts = || Options {
        vfs: Some(dynvfs.clone()),
        ..Options::default()
    };
    let db = Arc::new(Db::open("/db", opts()).unwrap());
    for i in 0..100 {
        db.put(format!("w{i:03}"), "v").unwrap();
    }
    let p = ingestible_sst(vfs.as_ref(), Path::new("/in"), "x.sst", &["x"], &[]);
    let checkpoint = {
        let db = db.clone();
        std::thread::spawn(move || db.checkpoint("/cp"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while vfs.held.load(Ordering::SeqCst) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the flush never reached the gate"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let ingested = Arc::new(AtomicBool::new(false));
    let ingester = {
        let (db, ingested) = (db.clone(), ingested.clone());
        std::thread::spawn(move || {
            db.ingest(&[&p], &file_ingestion()).unwrap();
            ingested.store(true, Ordering::SeqCst);
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let waited = !ingested.load(Ordering::SeqCst);
    *vfs.shut.lock().unwrap() = false;
    vfs.cv.notify_all();
    let info = checkpoint.join().unwrap().unwrap();
    ingester.join().unwrap();
    assert!(
        waited,
        "the ingestion went ahead while the checkpoint flushed"
    );
    let cp = Db::open_read_only("/cp", opts()).unwrap();
    let got = dump(&cp);
    assert_eq!(
        got.len(),
        100,
        "checkpoint at sequence {}: {got:?}",
        info.sequence
    );
    assert_eq!(dump(&db).len(), 101);
}

/// Where tables cannot be linked (another file system), they are copied:
/// every link fails here, and the checkpoint holds copies that outlive the
/// database's own files.
#[test]
fn a_checkpoint_copies_tables_it_cannot_link() {
    use strata::vfs::fault::{Fault, Op};
    let vfs = Arc::new(FaultVfs::new());
    let dynvfs: Arc<dyn Vfs> = vfs.clone();
    let opts = || Options {
        vfs: Some(dynvfs.clone()),
        memtable_size: 8 << 10,
        ..Options::default()
    };
    let db = Db::open("/db", opts()).unwrap();
    let mut model = Model::new();
    for i in 0..500u32 {
        let (k, v) = (format!("k{:04}", i * 7 % 500), format!("v{i}"));
        db.put(&k, &v).unwrap();
        model.insert(k.into_bytes(), v.into_bytes());
    }
    vfs.inject(Fault {
        sticky: true,
        ..Fault::eio(Op::Link, 1)
    });
    let info = db.checkpoint("/cp").unwrap();
    vfs.clear_fault();
    assert!(info.tables > 1, "{info:?}");
    assert_eq!(info.copied, info.tables, "{info:?}");
    // The database's tables go (compacted away and deleted); the copies stay.
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let cp = Db::open("/cp", opts()).unwrap();
    assert_eq!(dump(&cp), model);
}

/// A completed checkpoint is an event: the listener hears, and the
/// database's `EVENTS` log holds, one `checkpoint` per checkpoint with what
/// the call returned (directory, sequence number, tables, bytes, linked and
/// copied counts) and its duration, whether its tables were linked or
/// copied; a refused checkpoint logs none. Checkpoints used to leave no
/// trace in either.
#[test]
fn a_checkpoint_is_an_event_in_the_listener_and_the_log() {
    use strata::events::{Event, EventCollector};
    use strata::vfs::fault::{Fault, Op};
    let vfs = Arc::new(FaultVfs::new());
    let dynvfs: Arc<dyn Vfs> = vfs.clone();
    let heard = Arc::new(EventCollector::new());
    let db = Db::open(
        "/db",
        Options {
            vfs: Some(dynvfs.clone()),
            memtable_size: 8 << 10,
            event_listener: Some(heard.clone()),
            ..Options::default()
        },
    )
    .unwrap();
    let mut taken = Vec::new();
    for (round, copy) in [(0u32, false), (1, true), (2, false)] {
        for i in 0..300u32 {
            db.put(format!("k{round}-{i:04}"), [b'v'; 40]).unwrap();
        }
        if copy {
            vfs.inject(Fault {
                sticky: true,
                ..Fault::eio(Op::Link, 1)
            });
        }
        let dir = format!("/cp{round}");
        let info = db.checkpoint(&dir).unwrap();
        vfs.clear_fault();
        assert!(info.tables > 0, "{info:?}");
        assert_eq!(info.copied, if copy { info.tables } else { 0 }, "{info:?}");
        taken.push((dir, info));
    }
    // Refused (the directory exists): no event.
    assert!(db.checkpoint("/cp0").is_err());
    let checkpoints = |records: Vec<strata::events::EventRecord>| -> Vec<Event> {
        records
            .into_iter()
            .map(|r| r.event)
            .filter(|e| e.kind() == "checkpoint")
            .collect()
    };
    let from_listener = checkpoints(heard.records());
    db.close().unwrap();
    let log = strata::inspect::read_events_in(vfs.as_ref(), Path::new("/db")).unwrap();
    assert!(log.unknown.is_empty() && log.damaged.is_empty(), "{log:?}");
    let from_log = checkpoints(log.records);
    assert_eq!(
        from_listener, from_log,
        "the log holds what the listener heard"
    );
    assert_eq!(from_log.len(), taken.len(), "{from_log:?}");
    for (e, (dir, info)) in from_log.iter().zip(&taken) {
        let Event::Checkpoint {
            dir: d,
            sequence,
            tables,
            bytes,
            linked,
            copied,
            micros,
        } = e
        else {
            panic!("{e:?}");
        };
        assert_eq!(
            (d.as_str(), *sequence, *tables, *bytes, *linked, *copied),
            (
                dir.as_str(),
                info.sequence,
                info.tables,
                info.bytes,
                info.tables - info.copied,
                info.copied
            ),
            "{e:?}"
        );
        assert!(*micros > 0, "{e:?}");
    }
}

/// A checkpoint right after an ingestion of files placed straight into the
/// tree, with nothing written after it: the memtable is empty, so no flush
/// advances the flushed sequence past the ingestion's number. The
/// checkpoint still holds everything, the ingestion included (it was
/// refused with "the tree holds sequence number N, past the flushed N-1"),
/// and the copy opens at that sequence number and takes new writes.
#[test]
fn a_checkpoint_right_after_an_ingestion_of_files_holds_it() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open_default(d.path().join("db")).unwrap();
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    let sst = d.path().join("in.sst");
    let mut w = SstWriter::create(&sst, SstOptions::for_ingestion()).unwrap();
    for i in 0..100 {
        w.put(format!("k{i:03}"), "v").unwrap();
    }
    w.finish().unwrap();
    let r = db
        .ingest(
            &[&sst],
            &IngestOptions {
                small_file_bytes: 0,
                ..IngestOptions::default()
            },
        )
        .unwrap();
    assert!(!r.as_batch && !r.flushable, "{r:?}");
    let want = dump(&db);
    let info = db.checkpoint(d.path().join("cp")).unwrap();
    assert_eq!(info.sequence, r.sequence);
    db.close().unwrap();
    let cp = Db::open_default(d.path().join("cp")).unwrap();
    assert_eq!(dump(&cp), want);
    assert_eq!(cp.latest_sequence(), r.sequence);
    cp.put("b", "2").unwrap();
    assert_eq!(cp.get("b").unwrap(), Some(b"2".to_vec()));
}
