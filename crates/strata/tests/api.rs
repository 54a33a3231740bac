//! The public API as a user meets it: the std iterators (both ends mixed,
//! ranges, prefixes) against a model, snapshot reads across compactions,
//! and the errors for misuse (a foreign snapshot, a second open, a path
//! that is not a database, options the database could not run with).

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::time::{Duration, Instant};
use strata::{
    CompactionOptions, CompressionType, Db, Error, Options, ReadOptions, Snapshot, SstOptions,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn small() -> Options {
    Options {
        memtable_size: 4 << 10,
        ..Options::default()
    }
}

/// Keys from a small alphabet (with 0x00 and 0xff, so prefix and
/// successor edges are hit).
fn key(rng: &mut StdRng) -> Vec<u8> {
    const ALPHABET: &[u8] = &[0x00, b'a', b'b', b'c', 0xff];
    (0..rng.gen_range(0..4))
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())])
        .collect()
}

fn bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng)),
        _ => Bound::Excluded(key(rng)),
    }
}

/// Drains `it` taking from the front or the back at random; the result, in
/// key order, must equal `want`.
fn drain_mixed(mut it: strata::DbIterator, rng: &mut StdRng) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (mut front, mut back) = (Vec::new(), Vec::new());
    loop {
        let item = if rng.gen_bool(0.5) {
            it.next().map(|r| (true, r))
        } else {
            it.next_back().map(|r| (false, r))
        };
        match item {
            None => break,
            Some((true, r)) => front.push(r.unwrap()),
            Some((false, r)) => back.push(r.unwrap()),
        }
    }
    // Fused: both ends stay empty.
    assert!(it.next().is_none() && it.next_back().is_none());
    back.reverse();
    front.extend(back);
    front
}

fn check_reads(
    db: &Db,
    snap: Option<&Snapshot>,
    m: &Model,
    rng: &mut StdRng,
    ctx: &str,
) -> Result<(), String> {
    let all: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let it = match snap {
        Some(s) => s.iter(),
        None => db.iter(),
    };
    let got: Vec<_> = it.collect::<strata::Result<_>>().unwrap();
    if got != all {
        return Err(format!("{ctx}: forward scan differs"));
    }
    let it = match snap {
        Some(s) => s.iter(),
        None => db.iter(),
    };
    let mut rev: Vec<_> = it.rev().collect::<strata::Result<_>>().unwrap();
    rev.reverse();
    if rev != all {
        return Err(format!("{ctx}: reverse scan differs"));
    }
    for _ in 0..4 {
        let (lo, hi) = (bound(rng), bound(rng));
        // Filtered by hand: BTreeMap::range panics on start > end, where
        // Strata answers empty.
        let want: Vec<_> = m
            .iter()
            .filter(|(k, _)| (lo.as_ref(), hi.as_ref()).contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>();
        let it = match snap {
            Some(s) => s.range((lo.clone(), hi.clone())),
            None => db.range((lo.clone(), hi.clone())),
        };
        let got = drain_mixed(it, rng);
        if got != want {
            return Err(format!("{ctx}: range {lo:?}..{hi:?}: {got:?} != {want:?}"));
        }
        let p = key(rng);
        let want: Vec<_> = m
            .iter()
            .filter(|(k, _)| k.starts_with(&p))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let it = match snap {
            Some(s) => s.prefix(&p),
            None => db.prefix(&p),
        };
        let got = drain_mixed(it, rng);
        if got != want {
            return Err(format!("{ctx}: prefix {p:?}: {got:?} != {want:?}"));
        }
        let k = key(rng);
        let got = match snap {
            Some(s) => s.get(&k).unwrap(),
            None => db.get(&k).unwrap(),
        };
        if got.as_ref() != m.get(&k) {
            return Err(format!("{ctx}: get {k:?}"));
        }
    }
    Ok(())
}

/// Random writes, flushes and compactions; after each step the latest view
/// and every live snapshot read exactly what the model says, through
/// `iter`, `.rev()`, `range` and `prefix` drained from both ends.
#[test]
fn iterators_and_snapshots_match_a_model() {
    for seed in 0..12u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), small()).unwrap();
        let mut m = Model::new();
        let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
        for step in 0..150 {
            match rng.gen_range(0..10) {
                0..=5 => {
                    let (k, v) = (key(&mut rng), vec![b'v'; rng.gen_range(0..300)]);
                    db.put(&k, &v).unwrap();
                    m.insert(k, v);
                }
                6 => {
                    let k = key(&mut rng);
                    db.delete(&k).unwrap();
                    m.remove(&k);
                }
                7 => {
                    let (a, b) = (key(&mut rng), key(&mut rng));
                    let r = db.delete_range(&a, &b);
                    if a <= b {
                        r.unwrap();
                        m.retain(|k, _| !(a <= *k && *k < b));
                    } else {
                        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
                    }
                }
                8 => {
                    if snaps.len() < 3 {
                        snaps.push((db.snapshot(), m.clone()));
                    } else {
                        snaps.remove(rng.gen_range(0..snaps.len()));
                    }
                }
                _ => {
                    if rng.gen_bool(0.5) {
                        db.flush().unwrap();
                    } else {
                        db.compact_range(None, None).unwrap();
                    }
                }
            }
            let ctx = format!("seed {seed} step {step}");
            check_reads(&db, None, &m, &mut rng, &ctx).unwrap();
            for (s, sm) in &snaps {
                check_reads(&db, Some(s), sm, &mut rng, &format!("{ctx} snapshot")).unwrap();
            }
        }
    }
}

/// A snapshot keeps its view through compactions that would otherwise drop
/// the overwritten versions, via its own methods and via `ReadOptions`.
#[test]
fn snapshot_survives_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    db.put("k", "old").unwrap();
    let snap = db.snapshot();
    db.put("k", "new").unwrap();
    db.delete("gone").unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(snap.get("k").unwrap(), Some(b"old".to_vec()));
    let at = ReadOptions {
        snapshot: Some(&snap),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt("k", &at).unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get("k").unwrap(), Some(b"new".to_vec()));
    let mut raw = db.raw_iter(&at).unwrap();
    raw.seek_to_first();
    assert_eq!(raw.item(), Some((&b"k"[..], &b"old"[..])));
}

/// A snapshot of one database handed to another is an error, never a read
/// at an unrelated sequence number.
#[test]
fn foreign_snapshot_is_an_error() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Db::open_default(d1.path()).unwrap();
    let b = Db::open_default(d2.path()).unwrap();
    b.put("k", "v").unwrap();
    let snap = a.snapshot();
    let at = ReadOptions {
        snapshot: Some(&snap),
        ..ReadOptions::default()
    };
    assert!(matches!(
        b.get_opt("k", &at),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(b.raw_iter(&at), Err(Error::InvalidArgument(_))));
    let mut it = b.iter_opt(&at);
    assert!(matches!(it.next(), Some(Err(Error::InvalidArgument(_)))));
    assert!(it.next().is_none());
}

/// A raw iterator starts unpositioned: no key, not an empty key.
#[test]
fn raw_iterator_starts_unpositioned() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_default(dir.path()).unwrap();
    db.put("", "empty key").unwrap();
    let mut it = db.raw_iter(&ReadOptions::default()).unwrap();
    assert!(!it.valid());
    assert_eq!(it.key(), None);
    it.seek_to_first();
    assert_eq!(it.item(), Some((&b""[..], &b"empty key"[..])));
}

/// A second open of the same directory in this process is `Busy` and says
/// so; after the first closes, it succeeds.
#[test]
fn second_open_in_process_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_default(dir.path()).unwrap();
    let e = Db::open_default(dir.path()).err().unwrap();
    assert!(e.is_busy(), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("this process"), "{msg}");
    assert!(!msg.contains("another process"), "{msg}");
    db.close().unwrap();
    Db::open_default(dir.path()).unwrap();
}

/// A snapshot or an iterator that outlives `close` (or a dropped `Db`)
/// does not keep the LOCK: the next open succeeds at once (it was `Busy`
/// until they dropped, which from Python meant until the garbage collector
/// ran). They still read what they saw, and the reopened database holds
/// every write.
#[test]
fn a_snapshot_or_iterator_outliving_close_does_not_hold_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_default(dir.path()).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), "old").unwrap();
    }
    let snap = db.snapshot();
    let mut it = db.iter();
    assert_eq!(it.next().unwrap().unwrap().0, b"k000");
    db.close().unwrap();
    let db = Db::open_default(dir.path()).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), "new").unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(snap.get("k050").unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(it.count(), 99);
    drop(snap);
    assert_eq!(db.get("k050").unwrap().as_deref(), Some(&b"new"[..]));
    // Dropping (rather than closing) releases it too.
    let snap = db.snapshot();
    drop(db);
    let db = Db::open_default(dir.path()).unwrap();
    assert_eq!(db.iter().count(), 100);
    drop(snap);
}

/// With `create_if_missing` off, a path that is not a database fails with
/// its own error and nothing is created: not the directory, not a LOCK.
#[test]
fn not_a_database_creates_nothing() {
    let root = tempfile::tempdir().unwrap();
    let opts = || Options {
        create_if_missing: false,
        ..Options::default()
    };
    let listing = |p: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };

    let missing = root.path().join("missing");
    let e = Db::open(&missing, opts()).err().unwrap();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    assert!(!missing.exists());

    let file = root.path().join("file");
    std::fs::write(&file, b"hello").unwrap();
    let e = Db::open(&file, opts()).err().unwrap();
    assert!(matches!(e, Error::NotADatabase { .. }), "{e}");
    assert!(e.to_string().contains("file"), "{e}");
    // Not even with create_if_missing.
    let e = Db::open_default(&file).err().unwrap();
    assert!(matches!(e, Error::NotADatabase { .. }), "{e}");
    assert_eq!(std::fs::read(&file).unwrap(), b"hello");

    let other = root.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), b"x").unwrap();
    let e = Db::open(&other, opts()).err().unwrap();
    assert!(matches!(e, Error::NotADatabase { .. }), "{e}");
    assert!(e.is_not_found());
    assert_eq!(listing(&other), ["notes.txt"]);

    assert_eq!(listing(root.path()), ["file", "other"]);
}

/// Keys and values of any `AsRef<[u8]>` type, and batches built by chaining.
#[test]
fn as_ref_keys_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_default(dir.path()).unwrap();
    db.put("str", String::from("string")).unwrap();
    db.put(b"bytes", [1u8, 2, 3]).unwrap();
    db.put(vec![0u8, 255], &b"vec"[..]).unwrap();
    let mut b = strata::WriteBatch::new();
    b.put("x", "1").delete("str").delete_range("a", "b");
    db.write(b, &strata::WriteOptions::default()).unwrap();
    assert_eq!(db.get("str").unwrap(), None);
    assert_eq!(db.get(b"bytes").unwrap(), Some(vec![1, 2, 3]));
    assert_eq!(db.get([0u8, 255]).unwrap(), Some(b"vec".to_vec()));
    assert_eq!(db.get(String::from("x")).unwrap(), Some(b"1".to_vec()));
}

/// A tool's leftovers in the scratch directory survive a read-only open
/// (which changes nothing) and are gone after the next read-write open;
/// the database's own files are untouched.
#[test]
fn a_read_write_open_empties_the_scratch_directory() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("db");
    let work = {
        let db = Db::open_default(&path).unwrap();
        db.put("k", "v").unwrap();
        let work = db.scratch_dir().join("import-1-0");
        std::fs::create_dir_all(work.join("nested")).unwrap();
        std::fs::write(work.join("run-0"), b"sorted run").unwrap();
        std::fs::write(work.join("nested").join("out.sst"), b"x").unwrap();
        work
    };
    drop(Db::open_read_only(&path, Options::default()).unwrap());
    assert!(work.join("run-0").exists(), "a read-only open removed it");
    let db = Db::open_default(&path).unwrap();
    assert!(!db.scratch_dir().exists(), "left after a read-write open");
    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
}

/// Options with which no write could ever proceed are refused by `open`
/// (and `open_read_only`) as `InvalidArgument` naming the option, before
/// anything is created; before, `open` accepted them and the first writes
/// hung (a queue of no immutable memtables, a stop at L0 depth 0).
#[test]
fn options_that_would_hang_writes_are_refused_at_open() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("db");
    let cases: [(&str, Options); 4] = [
        (
            "memtable_size",
            Options {
                memtable_size: 0,
                ..Options::default()
            },
        ),
        (
            "max_immutable_memtables",
            Options {
                max_immutable_memtables: 0,
                ..Options::default()
            },
        ),
        (
            "l0_stop_sublevels",
            Options {
                l0_stop_sublevels: 0,
                l0_slowdown_sublevels: 0,
                ..Options::default()
            },
        ),
        (
            "l0_slowdown_sublevels",
            Options {
                l0_slowdown_sublevels: 30,
                l0_stop_sublevels: 20,
                ..Options::default()
            },
        ),
    ];
    for (name, opts) in cases {
        match Db::open(&path, opts.clone()) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains(name), "{name}: {m}"),
            Err(e) => panic!("{name}: {e}"),
            Ok(_) => panic!("{name}: opened"),
        }
        assert!(
            !path.exists(),
            "{name}: the refused open created the directory"
        );
        assert!(matches!(
            Db::open_read_only(&path, opts),
            Err(Error::InvalidArgument(_))
        ));
    }
    // The smallest memtable and queue work.
    let db = Db::open(
        &path,
        Options {
            memtable_size: 1,
            max_immutable_memtables: 1,
            ..Options::default()
        },
    )
    .unwrap();
    for i in 0..20u32 {
        db.put(i.to_be_bytes(), "v").unwrap();
    }
    assert_eq!(db.iter().count(), 20);
}

/// `Options` with one compaction option changed.
fn with_compaction(f: impl FnOnce(&mut CompactionOptions)) -> Options {
    let mut o = Options::default();
    f(&mut o.compaction);
    o
}

/// Option values a user audit found `open` accepting and the database then
/// panicking on (a level multiplier of 0 divides by zero), aborting on (a
/// thread per compaction slot: a million of them), hanging on (an L0 stop
/// below every L0 compaction trigger, so writes wait for a compaction that
/// never starts) or failing every flush with (a compression Strata reads
/// but cannot write). Each is refused by `open` and `open_read_only` as
/// `InvalidArgument` naming every option involved and what is allowed,
/// before anything is created. The values just inside each range open.
#[test]
fn options_that_panicked_aborted_or_hung_are_refused_at_open() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("db");
    let stop_conflict: &[&str] = &[
        "l0_stop_sublevels",
        "compaction.l0_compaction_threshold",
        "compaction.l0_compaction_file_threshold",
        "never starts",
    ];
    let cases: Vec<(&[&str], Options)> = vec![
        (
            &["compaction.level_multiplier", "allowed: 1 or more"],
            with_compaction(|c| c.level_multiplier = 0),
        ),
        (
            &["max_background_compactions", "allowed: 1 to 256"],
            Options {
                max_background_compactions: 1_000_000,
                ..Options::default()
            },
        ),
        (
            &["max_background_compactions", "allowed: 1 to 256"],
            Options {
                max_background_compactions: 257,
                ..Options::default()
            },
        ),
        // The audit's first hang: stop 1 under the default trigger (4
        // sublevels, 200 files); puts blocked for good after ~6,000.
        (
            stop_conflict,
            Options {
                l0_stop_sublevels: 1,
                l0_slowdown_sublevels: 1,
                ..Options::default()
            },
        ),
        // The second: a trigger of 50 over the default stop (24), the file
        // count term off.
        (
            stop_conflict,
            with_compaction(|c| {
                c.l0_compaction_threshold = 50;
                c.l0_compaction_file_threshold = 0;
            }),
        ),
        // A file-count trigger above the stop does not make it safe:
        // whether memtables still queued at the stop flush enough files
        // to reach it is a race.
        (
            stop_conflict,
            with_compaction(|c| {
                c.l0_compaction_threshold = 50;
                c.l0_compaction_file_threshold = 25;
            }),
        ),
        // Classic L0 picking stops on the same depth.
        (
            stop_conflict,
            Options {
                l0_stop_sublevels: 3,
                l0_slowdown_sublevels: 2,
                compaction: CompactionOptions {
                    l0_sublevels: false,
                    l0_compaction_threshold: 4,
                    l0_compaction_file_threshold: 0,
                    ..CompactionOptions::default()
                },
                ..Options::default()
            },
        ),
        (
            &[
                "l0_slowdown_sublevels",
                "allowed: 1 to l0_stop_sublevels (24)",
            ],
            Options {
                l0_slowdown_sublevels: 0,
                ..Options::default()
            },
        ),
        (
            &[
                "sst.compression",
                "Zlib",
                "allowed: None, Snappy, Lz4, Zstd",
            ],
            Options {
                sst: SstOptions {
                    compression: CompressionType::Zlib,
                    ..SstOptions::default()
                },
                ..Options::default()
            },
        ),
        (
            &["wal_flush_interval", "3600s", "allowed: 0 to 60s"],
            Options {
                wal_flush_interval: Duration::from_secs(3600),
                ..Options::default()
            },
        ),
        (
            &["wal_flush_interval", "allowed: 0 to 60s"],
            Options {
                wal_flush_interval: Duration::MAX,
                ..Options::default()
            },
        ),
    ];
    let unwritable = [
        CompressionType::Bzip2,
        CompressionType::Lz4hc,
        CompressionType::Xpress,
    ]
    .map(|compression| {
        let opts = Options {
            sst: SstOptions {
                compression,
                ..SstOptions::default()
            },
            ..Options::default()
        };
        (
            &["sst.compression", "allowed: None, Snappy, Lz4, Zstd"][..],
            opts,
        )
    });
    for (names, opts) in cases.into_iter().chain(unwritable) {
        let what = format!("{names:?} ({opts:?})");
        match Db::open(&path, opts.clone()) {
            Err(Error::InvalidArgument(m)) => {
                for name in names {
                    assert!(m.contains(name), "{what}: {m:?} does not say {name:?}");
                }
            }
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: opened"),
        }
        assert!(
            !path.exists(),
            "{what}: the refused open created the directory"
        );
        assert!(
            matches!(
                Db::open_read_only(&path, opts),
                Err(Error::InvalidArgument(_))
            ),
            "{what}: read-only"
        );
    }
    // Just inside: each opens, takes a write and closes. (0 compaction
    // threads and an L0 threshold of 0 are each taken as 1.)
    let inside = [
        with_compaction(|c| c.level_multiplier = 1),
        Options {
            max_background_compactions: 0,
            ..Options::default()
        },
        with_compaction(|c| c.l0_compaction_threshold = 0),
        Options {
            max_background_compactions: Options::MAX_BACKGROUND_COMPACTIONS,
            ..Options::default()
        },
        // The stop at the depth trigger.
        Options {
            l0_stop_sublevels: 1,
            l0_slowdown_sublevels: 1,
            compaction: CompactionOptions {
                l0_compaction_threshold: 1,
                l0_compaction_file_threshold: 0,
                ..CompactionOptions::default()
            },
            ..Options::default()
        },
        // Below the depth trigger but at the file-count trigger.
        with_compaction(|c| {
            c.l0_compaction_threshold = 50;
            c.l0_compaction_file_threshold = 24;
        }),
        Options {
            wal_flush_interval: Options::MAX_WAL_FLUSH_INTERVAL,
            ..Options::default()
        },
    ];
    for opts in inside {
        let what = format!("{opts:?}");
        let db = Db::open(&path, opts).unwrap_or_else(|e| panic!("{what}: {e}"));
        db.put("k", "v").unwrap();
        db.close().unwrap();
    }
}

/// Writes a few thousand overlapping keys through 4 KiB memtables with
/// `opts`, on a thread of their own; fails if they have not finished,
/// read back and closed within 30 s (a hang, not a speed: they take a few
/// seconds). Returns the database's stalls by cause.
fn writes_finish(what: &str, opts: Options) -> Vec<(String, u64)> {
    const KEYS: u64 = 3000;
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("db");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let db = Db::open(&path, opts).unwrap();
        // A stride through the key space, so each flush spans it and L0's
        // files stack.
        for i in 0..KEYS {
            let k = (i * 7919) % KEYS;
            db.put(format!("key{k:06}"), [b'v'; 64]).unwrap();
        }
        assert_eq!(db.iter().count() as u64, KEYS);
        let stalls = db
            .metrics()
            .stalls
            .iter()
            .map(|s| (s.cause.clone(), s.count))
            .collect::<Vec<_>>();
        db.close().unwrap();
        let _ = tx.send(stalls);
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(stalls) => stalls,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: {KEYS} puts did not finish in 30 s (writes hung)")
        }
        Err(e) => panic!("{what}: the writer failed ({e}; its panic is printed above)"),
    }
}

/// The smallest accepted gaps between the L0 stop and the L0 compaction
/// triggers (none: the stop at the trigger) keep writes moving, in both
/// L0 picking modes and on the file-count trigger; before `open` refused
/// the stop below the triggers, these were the values one step from a
/// hang.
#[test]
fn writes_at_the_smallest_accepted_l0_stop_do_not_hang() {
    let small = |stop: usize, slowdown: usize, c: CompactionOptions| Options {
        memtable_size: 4 << 10,
        l0_stop_sublevels: stop,
        l0_slowdown_sublevels: slowdown,
        compaction: c,
        ..Options::default()
    };
    // Stop at depth 1 with the depth trigger at 1: every flush stops the
    // writes until L0 is compacted.
    let stalls = writes_finish(
        "stop 1, threshold 1",
        small(
            1,
            1,
            CompactionOptions {
                l0_compaction_threshold: 1,
                l0_compaction_file_threshold: 0,
                ..CompactionOptions::default()
            },
        ),
    );
    assert!(
        stalls
            .iter()
            .any(|(cause, n)| cause.contains("stop") && cause.contains("l0") && *n > 0),
        "the writes never reached the stop, so the boundary went untested: {stalls:?}"
    );
    writes_finish(
        "classic picking, stop 2, threshold 2",
        small(
            2,
            1,
            CompactionOptions {
                l0_sublevels: false,
                l0_compaction_threshold: 2,
                l0_compaction_file_threshold: 0,
                ..CompactionOptions::default()
            },
        ),
    );
    writes_finish(
        "stop 3 at the file-count trigger 3, depth trigger 50",
        small(
            3,
            2,
            CompactionOptions {
                l0_compaction_threshold: 50,
                l0_compaction_file_threshold: 3,
                ..CompactionOptions::default()
            },
        ),
    );
    writes_finish(
        "level multiplier 1",
        small(
            24,
            12,
            CompactionOptions {
                level_multiplier: 1,
                l0_compaction_threshold: 2,
                base_level_bytes: 16 << 10,
                target_file_size: 8 << 10,
                ..CompactionOptions::default()
            },
        ),
    );
}

/// `close` (and drop) wakes the WAL thread rather than waiting out its
/// `wal_flush_interval`: with a 10 s interval a close took 10 s (and one
/// of `u64::MAX` seconds never returned), because the thread slept the
/// whole interval and shutdown joins it. The unsynced writes are still
/// there after reopening: shutdown syncs the WAL itself. The 5 s bound is
/// for a hang, not a speed (a close takes milliseconds).
#[test]
fn close_does_not_wait_out_the_wal_flush_interval() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("db");
    let opts = Options {
        wal_flush_interval: Duration::from_secs(10),
        ..Options::default()
    };
    for (round, by_drop) in [(0u32, false), (1, true)] {
        let db = Db::open(&path, opts.clone()).unwrap();
        for i in 0..100u32 {
            db.put(format!("r{round}-{i}"), "v").unwrap();
        }
        let t = Instant::now();
        if by_drop {
            drop(db);
        } else {
            db.close().unwrap();
        }
        let took = t.elapsed();
        assert!(
            took < Duration::from_secs(5),
            "round {round}: {} took {took:?} with a 10 s interval",
            if by_drop { "drop" } else { "close" }
        );
    }
    let db = Db::open_default(&path).unwrap();
    for round in 0..2u32 {
        for i in 0..100u32 {
            assert_eq!(
                db.get(format!("r{round}-{i}")).unwrap(),
                Some(b"v".to_vec()),
                "round {round}, key {i}"
            );
        }
    }
}
