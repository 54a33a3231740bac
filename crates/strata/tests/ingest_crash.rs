//! Power cuts at every step of one ingestion (`db::ingest::prepare` links
//! the files and syncs the directory while the check runs beside it; the
//! commit then writes the MANIFEST record and the WAL marker; the caller
//! syncs the MANIFEST).
//!
//! For each way in (a file placed in the tree, a file queued behind an
//! overlapping memtable, a copy instead of a link, two files at once), the
//! ingestion is run once to count the mutating file-system calls it makes,
//! then once per call with the power cut as that call starts (and a few
//! calls past the end, where background work goes on), each image keeping
//! a different random part of every unsynced tail (pages written back
//! before the cut). Every image must open (no MANIFEST record or WAL marker
//! naming a table whose directory entry or bytes were lost), pass
//! `strata::check`, hold every synced write made before, and hold the
//! ingestion whole or not at all; an acknowledged ingestion must be there.
//!
//! It caught a MANIFEST record made durable before the directory fsync (the
//! fsync moved after the caller's MANIFEST sync): "open failed ... missing".
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::vfs::fault::Op;
use strata::vfs::{FaultVfs, Vfs};
use strata::{Db, IngestOptions, Options, SstOptions, SstWriter, WriteOptions};

/// The ways into the tree this test cuts.
#[derive(Clone, Copy, Debug)]
enum Case {
    /// Nothing in memory overlaps: one MANIFEST edit places the file.
    Placed,
    /// The memtable overlaps: the file is queued (flushable ingestion).
    Queued,
    /// `move_files` off: a synced copy, not a link.
    Copied,
    /// Two files in one call: both or neither.
    TwoFiles,
}

fn opts(vfs: &FaultVfs) -> Options {
    let vfs: Arc<dyn Vfs> = Arc::new(vfs.clone());
    Options {
        vfs: Some(vfs),
        ..Options::default()
    }
}

fn key(prefix: &str, i: usize) -> Vec<u8> {
    format!("{prefix}{i:04}").into_bytes()
}

/// The files to ingest (written and synced through `vfs`), and the keys
/// they hold.
fn write_inputs(vfs: &FaultVfs, case: Case) -> (Vec<PathBuf>, Vec<Vec<u8>>) {
    vfs.create_dir_all(Path::new("/in")).unwrap();
    let parts: &[(&str, usize)] = match case {
        Case::TwoFiles => &[("a", 300), ("b", 300)],
        _ => &[("k", 600)],
    };
    let (mut paths, mut keys) = (Vec::new(), Vec::new());
    for (n, (prefix, count)) in parts.iter().enumerate() {
        let path = PathBuf::from(format!("/in/{n}.sst"));
        let mut w = SstWriter::create_in(vfs, &path, SstOptions::for_ingestion()).unwrap();
        for i in 0..*count {
            let k = key(prefix, i);
            w.put(&k, b"ingested").unwrap();
            keys.push(k);
        }
        w.finish().unwrap();
        paths.push(path);
    }
    vfs.sync_dir(Path::new("/in")).unwrap();
    (paths, keys)
}

/// What the database holds before the ingestion (all synced): keys apart
/// from the ingestion's, and for `Queued` older versions of some of its
/// keys, left in the memtable.
fn before(db: &Db, case: Case) {
    for i in 0..50 {
        db.put(key("z", i), b"before").unwrap();
    }
    db.flush().unwrap();
    if let Case::Queued = case {
        let mut b = strata::WriteBatch::new();
        for i in 100..200 {
            b.put(key("k", i), b"old");
        }
        db.write(b, &WriteOptions { sync: true }).unwrap();
    }
}

/// Mutating calls made so far.
fn mutating(vfs: &FaultVfs) -> u64 {
    Op::ALL
        .iter()
        .filter(|o| o.is_mutating())
        .map(|&o| vfs.count(o))
        .sum()
}

/// Runs `case` with the power cut `cut` mutating calls into the ingestion
/// (`None`: never); returns the image to reopen, whether the ingestion was
/// acknowledged, the ingested keys, and how many mutating calls the
/// ingestion made.
fn run(case: Case, cut: Option<(u64, u64)>) -> (FaultVfs, bool, Vec<Vec<u8>>, u64) {
    let vfs = FaultVfs::new();
    let db = Db::open("/db", opts(&vfs)).unwrap();
    before(&db, case);
    let (paths, keys) = write_inputs(&vfs, case);
    let io = IngestOptions {
        move_files: !matches!(case, Case::Copied),
        small_file_bytes: 0,
        ..IngestOptions::default()
    };
    let start = mutating(&vfs);
    if let Some((at, seed)) = cut {
        vfs.cut_power_after_keeping(at, seed);
    }
    let acked = db.ingest(&paths, &io).is_ok();
    let calls = mutating(&vfs) - start;
    if let (Some((_, seed)), false) = (cut, vfs.is_dead()) {
        // Cut after the call returned: background work may still be
        // writing; the image is what is durable now.
        let img = vfs.crash_clone_keeping(seed);
        drop(db);
        return (img, acked, keys, calls);
    }
    drop(db);
    let img = vfs.crash_image().unwrap_or_else(|| vfs.crash_clone());
    (img, acked, keys, calls)
}

/// Opens the image and checks it (see the module docs).
fn check_image(img: &FaultVfs, case: Case, acked: bool, keys: &[Vec<u8>], ctx: &str) {
    let db = Db::open("/db", opts(img)).unwrap_or_else(|e| panic!("{ctx}: open failed: {e}"));
    for i in 0..50 {
        assert_eq!(
            db.get(key("z", i))
                .unwrap_or_else(|e| panic!("{ctx}: read: {e}")),
            Some(b"before".to_vec()),
            "{ctx}: a synced write before the ingestion is lost"
        );
    }
    let mut present = 0;
    for k in keys {
        let got = db
            .get(k)
            .unwrap_or_else(|e| panic!("{ctx}: read {k:?}: {e}"));
        match got.as_deref() {
            Some(b"ingested") => present += 1,
            Some(b"old") | None => {}
            Some(v) => panic!("{ctx}: {k:?} holds {v:?}"),
        }
    }
    assert!(
        present == 0 || present == keys.len(),
        "{ctx}: {present} of {} ingested keys survived: a partial ingestion",
        keys.len()
    );
    if acked {
        assert_eq!(
            present,
            keys.len(),
            "{ctx}: an acknowledged ingestion is lost"
        );
    }
    if let Case::Queued = case {
        // The memtable's older versions were synced before the ingestion.
        let want: &[u8] = if present > 0 { b"ingested" } else { b"old" };
        for i in 100..200 {
            assert_eq!(
                db.get(key("k", i)).unwrap().as_deref(),
                Some(want),
                "{ctx}: key {i}"
            );
        }
    }
    db.close().unwrap();
    let report = strata::check::check(img, Path::new("/db")).unwrap();
    assert!(report.is_ok(), "{ctx}: check found {:?}", report.problems);
}

#[test]
fn a_power_cut_at_any_step_of_an_ingestion_leaves_it_whole_or_absent() {
    for case in [Case::Placed, Case::Queued, Case::Copied, Case::TwoFiles] {
        let (img, acked, keys, calls) = run(case, None);
        assert!(acked, "{case:?}: the ingestion succeeds without a cut");
        check_image(&img, case, true, &keys, &format!("{case:?}, no cut"));
        assert!(
            calls >= 3,
            "{case:?}: link, directory fsync, MANIFEST write and fsync: {calls} calls"
        );
        let mut cut_inside = 0;
        for at in 0..calls + 4 {
            for seed in 0..3 {
                let (img, acked, keys, _) = run(case, Some((at, seed)));
                cut_inside += u64::from(!acked);
                let ctx = format!("{case:?}, power cut at call {at} of {calls}, seed {seed}");
                check_image(&img, case, acked, &keys, &ctx);
            }
        }
        assert!(cut_inside > 0, "{case:?}: some cut lands inside the call");
        eprintln!(
            "{case:?}: {calls} mutating calls, cut at each (x3): {cut_inside} cuts inside the call"
        );
    }
}

/// The flush that follows a queued ingestion (W3's shape: unsynced Puts,
/// then an ingestion over them) writes its MANIFEST records without
/// syncing them (`db::flush`: nothing it does needs them durable until a
/// file is deleted). A power cut once the queue is empty, before anything
/// else syncs the MANIFEST, must still leave everything: the Puts are in
/// the WAL, which the flush synced before it wrote their table, and the
/// ingestion's own record was synced by its caller; the flush's table,
/// named by no durable record, is redundant and deleted at open.
///
/// It fails ("open failed ... found nowhere") when the flush writes the
/// table without first syncing the WAL it shares with the active memtable:
/// the table is then the only copy of the Puts, and nothing names it.
#[test]
fn a_power_cut_after_a_queued_ingestion_was_flushed_loses_nothing() {
    for seed in 0..6 {
        let vfs = FaultVfs::new();
        let db = Db::open("/db", opts(&vfs)).unwrap();
        for i in 0..300 {
            // Unsynced, as W3's: only the flush makes them durable.
            db.put(key("k", i), b"old").unwrap();
            db.put(key("m", i), b"put").unwrap();
        }
        let (paths, keys) = write_inputs(&vfs, Case::Queued);
        let io = IngestOptions {
            small_file_bytes: 0,
            ..IngestOptions::default()
        };
        let r = db.ingest(&paths, &io).unwrap();
        assert!(r.flushable, "the memtable overlaps: the files are queued");
        // Waits for the flush thread to write the memtable and place the
        // files; unlike `Db::flush`, this syncs no MANIFEST record.
        db.wait_for_compactions().unwrap();
        let img = vfs.crash_clone_keeping(seed);
        drop(db);
        let ctx = format!("seed {seed}");
        let db = Db::open("/db", opts(&img)).unwrap_or_else(|e| panic!("{ctx}: open failed: {e}"));
        for k in &keys {
            assert_eq!(
                db.get(k).unwrap().as_deref(),
                Some(&b"ingested"[..]),
                "{ctx}: {k:?}"
            );
        }
        for i in 0..300 {
            assert_eq!(
                db.get(key("m", i)).unwrap().as_deref(),
                Some(&b"put"[..]),
                "{ctx}: a Put the flush made durable is lost"
            );
        }
        db.close().unwrap();
        let report = strata::check::check(&img, Path::new("/db")).unwrap();
        assert!(report.is_ok(), "{ctx}: check found {:?}", report.problems);
    }
}
