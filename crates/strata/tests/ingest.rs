//! External SST ingestion: placement at the lowest level, the flushable path
//! over an overlapping memtable (visible at once, ordered with writes,
//! recovered from the WAL), the small-file batch path, errors that leave the
//! database unchanged, files written by RocksDB, and callers' files never
//! modified.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::{Path, PathBuf};
use strata::sstable::{SstOptions, SstWriter};
use strata::{CompactionOptions, Db, IngestOptions, Options, ReadOptions};

fn opts() -> Options {
    Options {
        compaction: CompactionOptions {
            l0_compaction_threshold: 100,
            ..CompactionOptions::default()
        },
        // A stop below the threshold is refused (writes stopped there
        // would wait for a compaction that never starts).
        l0_stop_sublevels: 100,
        ..Options::default()
    }
}

/// Ingestion options that keep even small test files as files.
fn files_opts() -> IngestOptions {
    IngestOptions {
        small_file_bytes: 0,
        ..IngestOptions::default()
    }
}

fn write_sst(path: &Path, kvs: &[(&[u8], &[u8])]) -> PathBuf {
    let mut w = SstWriter::create(path, SstOptions::for_ingestion()).unwrap();
    for (k, v) in kvs {
        w.put(k, v).unwrap();
    }
    w.finish().unwrap();
    path.to_path_buf()
}

fn scan(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.raw_iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

#[test]
fn disjoint_files_go_to_the_lowest_free_level() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    db.put(b"a1", b"x").unwrap();
    db.flush().unwrap(); // L0 now holds [a1]
    let f1 = write_sst(&d.path().join("1.sst"), &[(b"m1", b"one"), (b"m2", b"two")]);
    let f2 = write_sst(&d.path().join("2.sst"), &[(b"q1", b"three")]);
    let r = db.ingest(&[f1, f2], &files_opts()).unwrap();
    assert!(!r.flushable && !r.as_batch);
    assert_eq!(
        r.levels,
        vec![Some(6), Some(6)],
        "nothing overlaps: the bottom level"
    );
    assert_eq!(db.get(b"m2").unwrap(), Some(b"two".to_vec()));
    // A file overlapping the L0 file lands above it.
    let f3 = write_sst(&d.path().join("3.sst"), &[(b"a0", b"z"), (b"a2", b"y")]);
    let r = db.ingest(&[f3], &files_opts()).unwrap();
    assert_eq!(
        r.levels,
        vec![Some(0)],
        "overlaps L0: stays in L0, newer than it"
    );
    assert_eq!(scan(&db).len(), 6);
    let m = db.metrics();
    assert_eq!(m.ingests, 2);
    assert_eq!(m.ingested_per_level[6].0, 2);
    assert_eq!(m.ingested_per_level[0].0, 1);
}

#[test]
fn split_keys_are_lbases_file_boundaries() {
    for sublevels in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let mut o = opts();
        o.compaction.l0_sublevels = sublevels;
        let db = Db::open(d.path().join("db"), o).unwrap();
        assert!(db.ingest_split_keys().is_empty(), "an empty tree");
        let f = |n: &str, k: &[u8]| write_sst(&d.path().join(n), &[(k, b"v")]);
        let files = [f("1.sst", b"c"), f("2.sst", b"f"), f("3.sst", b"k")];
        let r = db.ingest(&files, &files_opts()).unwrap();
        assert_eq!(r.levels, vec![Some(6); 3]);
        let want: Vec<Vec<u8>> = if sublevels {
            vec![b"f".to_vec(), b"k".to_vec()]
        } else {
            Vec::new()
        };
        assert_eq!(db.ingest_split_keys(), want, "sublevels {sublevels}");
        // Files overlapping L6 go to L0 (Lbase is L6) and move no split:
        // the splits are Lbase's boundaries only.
        let kv = |k: &'static [u8]| (k, &b"w"[..]);
        let g = write_sst(&d.path().join("4.sst"), &[kv(b"b"), kv(b"d")]);
        let h = write_sst(&d.path().join("5.sst"), &[kv(b"j"), kv(b"l")]);
        let r = db.ingest(&[g, h], &files_opts()).unwrap();
        assert_eq!(r.levels, vec![Some(0), Some(0)]);
        assert_eq!(db.ingest_split_keys(), want, "sublevels {sublevels}");
    }
}

/// L0 -> Lbase compactions cut their outputs where the Lbase files they
/// replace began, so the split keys a bulk loader cut its last files at
/// still hold for its next ones.
#[test]
fn an_l0_compaction_keeps_lbases_boundaries() {
    for sublevels in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let mut o = opts();
        o.compaction.l0_sublevels = sublevels;
        let db = Db::open(d.path().join("db"), o).unwrap();
        let kv = |k: &'static [u8]| (k, &b"v"[..]);
        let l6 = [
            write_sst(&d.path().join("1.sst"), &[kv(b"c"), kv(b"d")]),
            write_sst(&d.path().join("2.sst"), &[kv(b"f"), kv(b"g")]),
            write_sst(&d.path().join("3.sst"), &[kv(b"k"), kv(b"m")]),
        ];
        assert_eq!(
            db.ingest(&l6, &files_opts()).unwrap().levels,
            vec![Some(6); 3]
        );
        let wide = write_sst(
            &d.path().join("4.sst"),
            &[kv(b"b"), kv(b"e"), kv(b"h"), kv(b"z")],
        );
        assert_eq!(
            db.ingest(&[wide], &files_opts()).unwrap().levels,
            vec![Some(0)]
        );
        db.compact_range(None, None).unwrap();
        let starts: Vec<Vec<u8>> = db
            .files()
            .into_iter()
            .map(|(l, f)| {
                assert_eq!(l, 6, "all in L6");
                strata::key::user_key(&f.smallest).to_vec()
            })
            .collect();
        if sublevels {
            assert_eq!(starts, [&b"b"[..], b"f", b"k"], "cut where L6 was cut");
        } else {
            assert_eq!(starts, [&b"b"[..]], "one small output");
        }
    }
}

#[test]
fn overlapping_memtable_takes_the_flushable_path_in_sequence_order() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let db = Db::open(&dir, opts()).unwrap();
    db.put(b"k5", b"before").unwrap();
    db.put(b"k9", b"untouched").unwrap();
    let snap = db.snapshot();
    let f = write_sst(
        &d.path().join("f.sst"),
        &[(b"k1", b"ingested"), (b"k5", b"ingested")],
    );
    let r = db.ingest(&[f], &files_opts()).unwrap();
    assert!(r.flushable, "the file overlaps the memtable");
    // Visible at once, and newer than the earlier write.
    assert_eq!(db.get(b"k5").unwrap(), Some(b"ingested".to_vec()));
    // The snapshot taken before the ingestion does not see it.
    let old = ReadOptions {
        snapshot: Some(&snap),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt(b"k5", &old).unwrap(), Some(b"before".to_vec()));
    assert_eq!(db.get_opt(b"k1", &old).unwrap(), None);
    drop(snap);
    // A write after the ingestion is newer than it.
    db.put(b"k1", b"after").unwrap();
    assert_eq!(db.get(b"k1").unwrap(), Some(b"after".to_vec()));
    let want = vec![
        (b"k1".to_vec(), b"after".to_vec()),
        (b"k5".to_vec(), b"ingested".to_vec()),
        (b"k9".to_vec(), b"untouched".to_vec()),
    ];
    assert_eq!(scan(&db), want);
    // Recovery: the ingestion was only in the queue and the WAL.
    db.close().unwrap();
    let db = Db::open(&dir, opts()).unwrap();
    assert_eq!(scan(&db), want, "after reopen");
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(scan(&db), want, "after flush and compaction");
    assert_eq!(db.metrics().levels[0].files, 0);
}

#[test]
fn flushable_path_placed_by_the_flush() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    db.put(b"b", b"old").unwrap();
    let f = write_sst(
        &d.path().join("f.sst"),
        &[(b"a", b"1"), (b"b", b"2"), (b"c", b"3")],
    );
    assert!(db.ingest(&[f], &files_opts()).unwrap().flushable);
    db.flush().unwrap();
    let m = db.metrics();
    assert_eq!(m.ingests_flushable, 1);
    assert_eq!(
        m.ingested_per_level.iter().map(|x| x.0).sum::<u64>(),
        1,
        "placed once"
    );
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
}

/// A small set becomes one write batch, and `move_files` means the same
/// there as for files: moved (the default), the caller's files are gone
/// once the call returns; copied (`move_files: false`), they stay. (The
/// batch path used to leave them whatever `move_files` said, so a caller
/// had to look at `as_batch` to know.) A refused ingestion leaves them.
#[test]
fn small_files_become_a_batch_and_move_files_still_holds() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    let f = write_sst(&d.path().join("f.sst"), &[(b"x", b"1"), (b"y", b"2")]);
    let g = write_sst(&d.path().join("g.sst"), &[(b"z", b"3")]);
    let r = db.ingest(&[&f, &g], &IngestOptions::default()).unwrap();
    assert!(r.as_batch);
    assert_eq!(db.get(b"y").unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.get(b"z").unwrap(), Some(b"3".to_vec()));
    assert_eq!(db.metrics().ingests_as_batch, 1);
    assert!(
        !f.exists() && !g.exists(),
        "moved (as a batch), yet still there"
    );

    let copied = write_sst(&d.path().join("c.sst"), &[(b"c", b"4")]);
    let keep = IngestOptions {
        move_files: false,
        ..IngestOptions::default()
    };
    let r = db.ingest(&[&copied], &keep).unwrap();
    assert!(r.as_batch);
    assert_eq!(db.get(b"c").unwrap(), Some(b"4".to_vec()));
    assert!(copied.exists(), "copied, so left where it was");

    // Overlapping files are refused: nothing is applied or removed.
    let a = write_sst(&d.path().join("a.sst"), &[(b"m1", b"1"), (b"m3", b"3")]);
    let b = write_sst(&d.path().join("b.sst"), &[(b"m2", b"2")]);
    assert!(db.ingest(&[&a, &b], &IngestOptions::default()).is_err());
    assert!(a.exists() && b.exists());
    assert_eq!(db.get(b"m1").unwrap(), None);
}

/// An excise range is refused naming what is wrong with it: a reversed
/// one as reversed (it was called "empty", which sent the caller looking
/// for the wrong mistake), an empty one as empty.
#[test]
fn a_reversed_excise_range_says_it_is_reversed() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    let excise = |a: &str, b: &str| IngestOptions {
        excise: Some((a.as_bytes().to_vec(), b.as_bytes().to_vec())),
        ..IngestOptions::default()
    };
    let none: [&Path; 0] = [];
    let e = db.ingest(&none, &excise("z", "a")).unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(e.to_string().contains("reversed"), "{e}");
    let e = db.ingest(&none, &excise("m", "m")).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
}

/// An excise is never turned into a write batch, however small the files
/// (the default `small_file_bytes`): as a batch it would be a range
/// tombstone over files that keep their space until a compaction. With
/// small files and with none at all, the files inside the range leave the
/// tree in the call, and no tombstone is written.
#[test]
fn an_excise_with_small_or_no_files_cuts_the_tree() {
    for with_file in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let db = Db::open(d.path().join("db"), excise_opts()).unwrap();
        // Two overlapping flushes, so the compaction merges them into
        // several target-sized files rather than moving one.
        for parity in 0..2 {
            for i in (parity..400).step_by(2) {
                db.put(key(i), format!("base{i}")).unwrap();
            }
            db.flush().unwrap();
        }
        db.compact_range(None, None).unwrap();
        let inside = |db: &Db| {
            db.files()
                .iter()
                .filter(|(_, f)| intersects(f, &key(100), &key(300)))
                .count()
        };
        assert!(inside(&db) > 2, "{:?}", db.files());
        let paths: Vec<PathBuf> = if with_file {
            vec![write_sst(&d.path().join("f.sst"), &[(&key(200), b"new")])]
        } else {
            Vec::new()
        };
        let o = IngestOptions {
            excise: Some((key(100), key(300))),
            ..IngestOptions::default()
        };
        let r = db.ingest(&paths, &o).unwrap();
        assert!(!r.as_batch, "with_file={with_file}: {r:?}");
        assert!(r.excised, "with_file={with_file}: {r:?}");
        let m = db.metrics();
        assert_eq!(
            (m.excises, m.excise_fallbacks, m.ingests_as_batch),
            (1, 0, 0)
        );
        assert_eq!(
            inside(&db),
            usize::from(with_file),
            "with_file={with_file}: only the ingested file may lie in the range: {:?}",
            db.files()
        );
        assert!(db.files().iter().all(|(_, f)| f.num_range_deletions == 0));
        for i in 0..400 {
            let want = match i {
                200 if with_file => Some(b"new".to_vec()),
                100..300 => None,
                _ => Some(format!("base{i}").into_bytes()),
            };
            assert_eq!(db.get(key(i)).unwrap(), want, "with_file={with_file}: {i}");
        }
        db.close().unwrap();
    }
}

#[test]
fn bad_ingestions_fail_and_change_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    db.put(b"m", b"mem").unwrap();
    let a = write_sst(&d.path().join("a.sst"), &[(b"a", b"1"), (b"c", b"1")]);
    let b = write_sst(&d.path().join("b.sst"), &[(b"b", b"2")]);
    let e = db.ingest(&[a.clone(), b], &files_opts()).unwrap_err();
    assert!(e.to_string().contains("overlap"), "{e}");
    // One file named twice, by the same name or two that resolve to it
    // (a `.` or `..` in between, a symbolic link), in either path: the
    // file is named twice, not "a and a overlap".
    std::fs::create_dir(d.path().join("sub")).unwrap();
    let dotted = d.path().join("sub").join("..").join(".").join("a.sst");
    let link = d.path().join("link.sst");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    for small in [0, 1 << 20] {
        let o = IngestOptions {
            small_file_bytes: small,
            ..IngestOptions::default()
        };
        for twice in [
            vec![a.clone(), a.clone()],
            vec![a.clone(), dotted.clone()],
            vec![link.clone(), a.clone()],
        ] {
            let e = db.ingest(&twice, &o).unwrap_err().to_string();
            assert!(e.contains("is named twice in one ingestion"), "{e}");
            assert!(!e.contains("overlap"), "{e}");
            let what = format!("{}: is named twice", twice[1].display());
            assert!(e.contains(&what), "{e}");
        }
    }
    // A directory is refused as one, not as a file damaged at an offset,
    // on both paths (batch and files).
    for small in [0, 1 << 20] {
        let o = IngestOptions {
            small_file_bytes: small,
            ..IngestOptions::default()
        };
        let sub = d.path().join("sub");
        let e = db
            .ingest(std::slice::from_ref(&sub), &o)
            .unwrap_err()
            .to_string();
        let what = format!("{}: is a directory, not an SST file", sub.display());
        assert!(e.contains(&what), "{e}");
        assert!(!e.contains("offset"), "{e}");
    }
    let e = db
        .ingest(&[a.clone(), dotted.clone()], &files_opts())
        .unwrap_err();
    assert!(
        e.to_string().contains(&format!("as {}", a.display())),
        "{e}"
    );
    // Sequence numbers other than 0.
    let p = d.path().join("seq.sst");
    let mut w = SstWriter::create(&p, SstOptions::default()).unwrap();
    w.add_entry(b"s", 7, strata::key::ValueKind::Value, b"v")
        .unwrap();
    w.finish().unwrap();
    let e = db.ingest(&[p], &files_opts()).unwrap_err();
    assert!(e.to_string().contains("sequence number 7"), "{e}");
    // Overlap with the memtable when the caller forbids it.
    let m = write_sst(&d.path().join("m.sst"), &[(b"m", b"file")]);
    let no = IngestOptions {
        allow_overlap_with_memtable: false,
        ..files_opts()
    };
    assert!(db.ingest(&[m], &no).is_err());
    assert_eq!(
        scan(&db),
        vec![(b"m".to_vec(), b"mem".to_vec())],
        "nothing changed"
    );
    // A later good ingestion still works.
    db.ingest(&[a], &files_opts()).unwrap();
    assert_eq!(scan(&db).len(), 3);
}

#[test]
fn callers_files_are_never_modified() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    db.put(b"k", b"v").unwrap();
    let f = write_sst(&d.path().join("f.sst"), &[(b"k", b"w")]);
    let before = std::fs::read(&f).unwrap();
    // Copied: the caller's file stays (moving removes the caller's path,
    // see tests/recovery.rs).
    let copy = IngestOptions {
        move_files: false,
        ..files_opts()
    };
    db.ingest(std::slice::from_ref(&f), &copy).unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    assert_eq!(std::fs::read(&f).unwrap(), before);
}

#[test]
fn rocksdb_written_files_ingest() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rocksdb");
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    let copy = |name: &str| {
        let p = d.path().join(name);
        std::fs::copy(fixtures.join(name), &p).unwrap();
        p
    };
    let r = db.ingest(&[copy("zstd-bloom.sst")], &files_opts()).unwrap();
    assert_eq!(r.levels, vec![Some(6)]);
    let input = std::fs::read_to_string(fixtures.join("zstd-bloom.input")).unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = input
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let h = |s: Option<&&str>| {
                s.map(|s| strata::util::hex::decode(s).unwrap())
                    .unwrap_or_default()
            };
            (h(f.get(1)), h(f.get(2)))
        })
        .collect();
    assert_eq!(scan(&db), want);
    for (k, v) in want.iter().step_by(13) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
}

/// Ingest-and-excise: what `[b, d)` held before is gone, the ingested keys
/// and everything outside the range stay, with no file outside rewritten;
/// the same through the flushable path and across a reopen.
#[test]
fn ingest_and_excise_replaces_a_range() {
    for overlap_memtable in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("db");
        let db = Db::open(&dir, opts()).unwrap();
        for k in [&b"a1"[..], b"b1", b"b2", b"c1", b"c9", b"d1", b"e1"] {
            db.put(k, b"old").unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        if overlap_memtable {
            db.put(b"c5", b"recent").unwrap();
        }
        let before = db.metrics();
        let f = write_sst(
            &d.path().join("new.sst"),
            &[(b"b5", b"new"), (b"c1", b"new")],
        );
        let o = IngestOptions {
            excise: Some((b"b".to_vec(), b"d".to_vec())),
            ..files_opts()
        };
        let r = db.ingest(&[f], &o).unwrap();
        assert_eq!(r.flushable, overlap_memtable);
        // Over memory the range is cut only when the flush places the files.
        assert_eq!(r.excised, !overlap_memtable);
        let want: Vec<(Vec<u8>, Vec<u8>)> = [
            (&b"a1"[..], &b"old"[..]),
            (b"b5", b"new"),
            (b"c1", b"new"),
            (b"d1", b"old"),
            (b"e1", b"old"),
        ]
        .iter()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
        assert_eq!(scan(&db), want, "overlap_memtable={overlap_memtable}");
        assert_eq!(db.get(b"b2").unwrap(), None);
        assert_eq!(
            db.get(b"c5").unwrap(),
            None,
            "the memtable's keys in the range are excised too"
        );
        assert_eq!(
            db.metrics().bytes_compacted_written,
            before.bytes_compacted_written,
            "no data was rewritten"
        );
        db.close().unwrap();
        let db = Db::open(&dir, opts()).unwrap();
        assert_eq!(scan(&db), want, "after reopen");
        db.compact_range(None, None).unwrap();
        assert_eq!(scan(&db), want, "after compaction");
    }
}

/// Table files on disk, by number.
fn tables_on_disk(dir: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".sst")?.parse().ok()
        })
        .collect();
    v.sort_unstable();
    v
}

/// The tables on disk once every one of them is in `referenced`, or after
/// 10 s, whichever comes first. Obsolete tables are deleted by the
/// obsolete-file pass of the job that made them obsolete, after it has
/// installed its version and released the state lock for the MANIFEST
/// sync (`flush::delete_obsolete_files`): a caller woken by the install
/// (`Db::flush` returns once the queue is empty) can list the directory
/// before the pass has unlinked them, most of all with the background
/// threads at a lower CPU priority (`Options::background_nice`).
fn tables_on_disk_settled(dir: &Path, referenced: &std::collections::HashSet<u64>) -> Vec<u64> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let on_disk = tables_on_disk(dir);
        if on_disk.iter().all(|n| referenced.contains(n)) || std::time::Instant::now() > deadline {
            return on_disk;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Whether a file's user-key range intersects `[a, b)`.
fn intersects(f: &strata::version::FileMeta, a: &[u8], b: &[u8]) -> bool {
    f.smallest_user_key() < b
        && if f.largest_is_exclusive() {
            a < f.largest_user_key()
        } else {
            a <= f.largest_user_key()
        }
}

fn key(i: usize) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// A tree over `k0000..k0399` with several files in L6 (small target file
/// size), and in L0 newer versions of a few keys plus two range tombstones
/// that each cross one end of the range, then an ingestion of a file in
/// `[k0150, k0250)` that excises that range. Returns the model of what the
/// database must hold afterwards.
fn excise_fixture(
    db: &Db,
    d: &Path,
) -> (
    std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    strata::IngestResult,
) {
    let mut model = std::collections::BTreeMap::new();
    // Two overlapping flushes, so the compaction merges (rather than
    // moves) them into several target-sized files.
    for parity in 0..2 {
        for i in (parity..400).step_by(2) {
            let v = format!("base{i}").into_bytes();
            db.put(key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in (130..270).step_by(7) {
        let v = format!("l0-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    // The parts of these outside the range must keep deleting what they
    // cover in L6 once the L0 file is cut.
    for (a, b) in [(140, 160), (245, 255)] {
        db.delete_range(key(a), key(b)).unwrap();
        for i in a..b {
            model.remove(&key(i));
        }
    }
    db.flush().unwrap();
    let files = db.files();
    assert!(
        files.iter().filter(|(l, _)| *l == 6).count() > 3,
        "{files:?}"
    );
    assert!(files.iter().any(|(l, _)| *l == 0));
    let ingested: Vec<(Vec<u8>, Vec<u8>)> = (150..250)
        .step_by(3)
        .map(|i| (key(i), format!("new{i}").into_bytes()))
        .collect();
    let kv: Vec<(&[u8], &[u8])> = ingested
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let f = write_sst(&d.join("excise.sst"), &kv);
    let o = IngestOptions {
        excise: Some((key(150), key(250))),
        ..files_opts()
    };
    let r = db.ingest(&[f], &o).unwrap();
    for i in 150..250 {
        model.remove(&key(i));
    }
    for (k, v) in ingested {
        model.insert(k, v);
    }
    (model, r)
}

fn excise_opts() -> Options {
    Options {
        compaction: CompactionOptions {
            l0_compaction_threshold: 100,
            target_file_size: 2 << 10,
            ..CompactionOptions::default()
        },
        l0_stop_sublevels: 100,
        ..Options::default()
    }
}

fn check_model(db: &Db, model: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let got: Vec<(Vec<u8>, Vec<u8>)> = scan(db);
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got, want, "{what}: scan");
    for i in 0..400 {
        assert_eq!(
            db.get(key(i)).unwrap().as_ref(),
            model.get(&key(i)),
            "{what}: get {i}"
        );
    }
    // Backward, with bounds that start and end inside virtual files.
    let mut it = db
        .raw_iter(&ReadOptions {
            lower: Some(key(120)),
            upper: Some(key(280)),
            ..ReadOptions::default()
        })
        .unwrap();
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push(it.key().unwrap().to_vec());
        it.prev();
    }
    let want: Vec<Vec<u8>> = model
        .range(key(120)..key(280))
        .rev()
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(back, want, "{what}: backward scan");
}

/// Ingest-and-excise with nothing in memory over the range cuts the tree:
/// no file but the ingested one intersects the range, the ingested file
/// goes to the bottom level, nothing is rewritten, and the data outside the
/// range reads the same, after a reopen and after a full compaction too.
#[test]
fn excise_cuts_the_tree_with_virtual_files() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let db = Db::open(&dir, excise_opts()).unwrap();
    let (model, r) = excise_fixture(&db, d.path());
    assert!(r.excised && !r.flushable, "{r:?}");
    assert_eq!(
        r.levels,
        vec![Some(6)],
        "the cut range lets the file go to the bottom"
    );
    let m = db.metrics();
    assert_eq!(m.excises, 1);
    assert_eq!(m.excise_fallbacks, 0);
    assert!(
        m.virtual_files >= 2,
        "files reaching past both ends were cut: {m:?}"
    );
    assert_eq!(m.compactions, 1, "only the fixture's own compaction ran");
    assert_eq!(m.flushes, 3, "only the fixture's own flushes ran");
    let (a, b) = (key(150), key(250));
    let files = db.files();
    let ingested: Vec<_> = files
        .iter()
        .filter(|(_, f)| f.global_seqno == Some(r.sequence))
        .collect();
    assert_eq!(ingested.len(), 1);
    assert_eq!(ingested[0].0, 6);
    for (l, f) in &files {
        if f.global_seqno != Some(r.sequence) {
            assert!(
                !intersects(f, &a, &b),
                "L{l} file {} intersects the range",
                f.number
            );
        }
    }
    for (_, f) in files.iter().filter(|(_, f)| f.is_virtual()) {
        assert!(f.size > 0 && f.size <= 64 << 10, "size estimate {}", f.size);
    }
    // Tight bounds in L0: the left part ends at the clipped tombstone's
    // exclusive end (past its last point, k0144), the right part starts at
    // the clipped tombstone's start (before its first point, k0256) and
    // ends at its last point; each keeps exactly one tombstone.
    let l0: Vec<_> = files
        .iter()
        .filter(|(l, _)| *l == 0)
        .map(|(_, f)| f)
        .collect();
    let l = l0
        .iter()
        .filter(|f| f.largest_user_key() <= a.as_slice())
        .max_by_key(|f| f.largest_user_key())
        .expect("an L0 part left of the range");
    let r0 = l0
        .iter()
        .filter(|f| f.smallest_user_key() >= b.as_slice())
        .min_by_key(|f| f.smallest_user_key())
        .expect("an L0 part right of the range");
    assert!(l.is_virtual() && r0.is_virtual());
    assert_eq!(l.largest_user_key(), a.as_slice());
    assert!(l.largest_is_exclusive());
    assert_eq!(r0.smallest_user_key(), b.as_slice());
    assert!(l.num_range_deletions >= 1 && r0.num_range_deletions >= 1);
    let last = l0.iter().map(|f| f.largest_user_key()).max();
    assert_eq!(last, Some(key(263).as_slice()));
    let left = files
        .iter()
        .filter(|(l, f)| *l == 6 && f.is_virtual() && f.largest_user_key() < a.as_slice())
        .map(|(_, f)| f.largest_user_key().to_vec())
        .max();
    assert_eq!(
        left,
        Some(key(149)),
        "left part ends at the last key before the range"
    );
    let right = files
        .iter()
        .filter(|(l, f)| *l == 6 && f.is_virtual() && f.smallest_user_key() >= b.as_slice())
        .map(|(_, f)| f.smallest_user_key().to_vec())
        .min();
    assert_eq!(
        right,
        Some(key(250)),
        "right part starts at the first key at the end"
    );
    check_model(&db, &model, "after the excise");

    // The physical tables behind virtual files stay on disk although no
    // version names them directly, across an obsolete-file pass.
    let backing: Vec<u64> = files.iter().filter_map(|(_, f)| f.backing).collect();
    db.put(b"zz", b"flush me").unwrap();
    db.flush().unwrap();
    let on_disk = tables_on_disk(&dir);
    for b in &backing {
        assert!(
            on_disk.contains(b),
            "backing table {b} deleted while referenced"
        );
        assert!(files.iter().all(|(_, f)| f.number != *b));
    }
    // Virtual numbers name no file.
    for (_, f) in files.iter().filter(|(_, f)| f.is_virtual()) {
        assert!(!on_disk.contains(&f.number));
    }
    let mut model = model;
    model.insert(b"zz".to_vec(), b"flush me".to_vec());

    db.close().unwrap();
    let db = Db::open(&dir, excise_opts()).unwrap();
    let reopened: Vec<(usize, u64, Option<u64>)> = db
        .files()
        .iter()
        .map(|(l, f)| (*l, f.number, f.backing))
        .collect();
    assert!(
        reopened.iter().any(|(_, _, b)| b.is_some()),
        "virtual files recovered"
    );
    check_model(&db, &model, "after reopen");

    // An iterator holding the current version keeps the backing tables
    // alive through a compaction that rewrites every virtual file.
    let mut held = db.raw_iter(&ReadOptions::default()).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.metrics().virtual_files,
        0,
        "compaction rewrote the virtual files"
    );
    let on_disk = tables_on_disk(&dir);
    for b in &backing {
        assert!(
            on_disk.contains(b),
            "backing table {b} deleted under a reader"
        );
    }
    held.seek_to_first();
    let mut n = 0;
    while held.valid() {
        n += 1;
        held.next();
    }
    held.status().unwrap();
    assert_eq!(
        n,
        model.len(),
        "the held iterator reads the old version whole"
    );
    drop(held);
    // The next obsolete-file pass deletes them.
    db.put(b"zz", b"again").unwrap();
    db.flush().unwrap();
    model.insert(b"zz".to_vec(), b"again".to_vec());
    let live: std::collections::HashSet<u64> = db
        .files()
        .iter()
        .map(|(_, f)| f.backing.unwrap_or(f.number))
        .collect();
    let on_disk = tables_on_disk_settled(&dir, &live);
    for b in &backing {
        assert!(
            !on_disk.contains(b),
            "backing table {b} outlived its last reference"
        );
    }
    check_model(&db, &model, "after compaction");
    db.close().unwrap();
    let db = Db::open(&dir, excise_opts()).unwrap();
    check_model(&db, &model, "after compaction and reopen");
}

/// A snapshot older than the ingestion must keep seeing the excised data,
/// so the excise falls back to a range-tombstone file; without one, the
/// next excise cuts.
#[test]
fn excise_under_an_older_snapshot_uses_a_tombstone() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), excise_opts()).unwrap();
    for i in 0..50 {
        db.put(key(i), b"old").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let snap = db.snapshot();
    let f = write_sst(&d.path().join("a.sst"), &[(&key(20), b"new")]);
    let o = IngestOptions {
        excise: Some((key(10), key(30))),
        ..files_opts()
    };
    let r = db.ingest(&[f], &o).unwrap();
    assert!(!r.excised && !r.flushable, "{r:?}");
    assert_eq!(r.levels.len(), 1, "levels name the caller's files only");
    assert_eq!(db.metrics().excise_fallbacks, 1);
    assert_eq!(db.metrics().virtual_files, 0);
    let at_snap = ReadOptions {
        snapshot: Some(&snap),
        ..ReadOptions::default()
    };
    assert_eq!(
        db.get_opt(key(15), &at_snap).unwrap(),
        Some(b"old".to_vec())
    );
    assert_eq!(
        db.get_opt(key(20), &at_snap).unwrap(),
        Some(b"old".to_vec())
    );
    assert_eq!(db.get(key(15)).unwrap(), None);
    assert_eq!(db.get(key(20)).unwrap(), Some(b"new".to_vec()));
    drop(snap);
    let f = write_sst(&d.path().join("b.sst"), &[(&key(40), b"newer")]);
    let o = IngestOptions {
        excise: Some((key(35), key(45))),
        ..files_opts()
    };
    let r = db.ingest(&[f], &o).unwrap();
    assert!(r.excised, "{r:?}");
    assert_eq!(db.get(key(36)).unwrap(), None);
    assert_eq!(db.get(key(34)).unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get(key(45)).unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get(key(40)).unwrap(), Some(b"newer".to_vec()));
    assert_eq!(db.get(key(15)).unwrap(), None);
    // The tombstone file of the cut excise was never placed or kept.
    let m = db.metrics();
    assert_eq!((m.excises, m.excise_fallbacks), (1, 1));
    let dir = d.path().join("db");
    let referenced: std::collections::HashSet<u64> = db
        .files()
        .iter()
        .map(|(_, f)| f.backing.unwrap_or(f.number))
        .collect();
    for n in tables_on_disk_settled(&dir, &referenced) {
        assert!(
            referenced.contains(&n),
            "table {n} on disk is referenced by nothing"
        );
    }
}

/// Memory over the range: the ingestion waits in the queue with its
/// tombstone file (reads see the range deleted at once), and the flush
/// thread cuts the range when it places the files, dropping the tombstone
/// file.
#[test]
fn excise_over_memory_cuts_when_placed() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let db = Db::open(&dir, excise_opts()).unwrap();
    for i in 0..50 {
        db.put(key(i), b"old").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.put(key(25), b"in memory").unwrap();
    let f = write_sst(&d.path().join("a.sst"), &[(&key(20), b"new")]);
    let o = IngestOptions {
        excise: Some((key(10), key(30))),
        ..files_opts()
    };
    let r = db.ingest(&[f], &o).unwrap();
    assert!(r.flushable && !r.excised, "{r:?}");
    assert_eq!(db.get(key(25)).unwrap(), None, "memory is excised too");
    assert_eq!(db.get(key(15)).unwrap(), None);
    db.flush().unwrap();
    let m = db.metrics();
    assert_eq!((m.excises, m.excise_fallbacks), (1, 0), "cut when placed");
    let files = db.files();
    let tomb = files
        .iter()
        .filter(|(_, f)| f.num_range_deletions > 0)
        .count();
    assert_eq!(tomb, 0, "the tombstone file was dropped");
    for (_, f) in &files {
        if f.global_seqno != Some(r.sequence) {
            assert!(
                !intersects(f, &key(10), &key(30)),
                "file {} intersects",
                f.number
            );
        }
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = (0..50)
        .filter(|i| !(10..30).contains(i))
        .map(|i| (key(i), b"old".to_vec()))
        .chain(std::iter::once((key(20), b"new".to_vec())))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    assert_eq!(scan(&db), want);
    let referenced: std::collections::HashSet<u64> = files
        .iter()
        .map(|(_, f)| f.backing.unwrap_or(f.number))
        .collect();
    for n in tables_on_disk_settled(&dir, &referenced) {
        assert!(
            referenced.contains(&n),
            "table {n} on disk is referenced by nothing: {files:?} {:?}",
            std::fs::read_to_string(dir.join("EVENTS")).unwrap()
        );
    }
    db.close().unwrap();
    let db = Db::open(&dir, excise_opts()).unwrap();
    assert_eq!(scan(&db), want, "after reopen");

    // Queued behind memory with an older snapshot open: when placed, the
    // tombstone file goes into the tree instead of a cut.
    db.put(key(41), b"in memory").unwrap();
    let snap = db.snapshot();
    let f = write_sst(&d.path().join("b.sst"), &[(&key(42), b"new")]);
    let o = IngestOptions {
        excise: Some((key(40), key(45))),
        ..files_opts()
    };
    let r = db.ingest(&[f], &o).unwrap();
    assert!(r.flushable, "{r:?}");
    db.flush().unwrap();
    let m = db.metrics();
    assert_eq!(
        (m.excises, m.excise_fallbacks),
        (0, 1),
        "after reopen, counters restart"
    );
    let at = ReadOptions {
        snapshot: Some(&snap),
        ..ReadOptions::default()
    };
    assert_eq!(
        db.get_opt(key(41), &at).unwrap(),
        Some(b"in memory".to_vec())
    );
    assert_eq!(db.get_opt(key(43), &at).unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get(key(41)).unwrap(), None);
    assert_eq!(db.get(key(43)).unwrap(), None);
    assert_eq!(db.get(key(42)).unwrap(), Some(b"new".to_vec()));
    assert!(db.files().iter().any(|(_, f)| f.num_range_deletions > 0));
}

/// The checks of a file to ingest run in one walk over its blocks (the
/// keys handed from `Table::verify_with`): a defect deep inside a file of
/// many blocks is still refused (a flipped byte as corruption naming the
/// file, a sequence number other than 0, a user key twice, two files of one
/// call overlapping), each leaving the database unchanged (no table of it
/// left in the database's directory, and the caller keeps its files), and
/// the bounds found on the walk are the file's first and last keys (a file
/// holding only either one lands above it).
#[test]
fn every_block_of_a_file_to_ingest_is_checked() {
    use strata::key::ValueKind;
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    db.put(b"a", b"mem").unwrap();
    let value = |i: u32| format!("{i:0>100}").into_bytes();
    let key = |i: u32| format!("k{i:05}").into_bytes();
    // 2,000 keys of 100-byte values, uncompressed: about 50 data blocks,
    // so a byte flipped at a third of the file lies in a middle block and
    // only its checksum can tell.
    let write = |name: &str, entries: &[(Vec<u8>, u64, ValueKind)]| {
        let p = d.path().join(name);
        let o = SstOptions {
            compression: strata::CompressionType::None,
            ..SstOptions::default()
        };
        let mut w = SstWriter::create(&p, o).unwrap();
        for (i, (k, seq, kind)) in entries.iter().enumerate() {
            w.add_entry(k, *seq, *kind, &value(i as u32)).unwrap();
        }
        w.finish().unwrap();
        p
    };
    let good: Vec<_> = (0..2000).map(|i| (key(i), 0, ValueKind::Value)).collect();
    let before = scan(&db);
    let tables_before = tables_on_disk(&d.path().join("db"));
    // A flipped byte, with verification on.
    let flipped = write("flipped.sst", &good);
    let mut bytes = std::fs::read(&flipped).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0x20;
    std::fs::write(&flipped, &bytes).unwrap();
    let e = db.ingest(&[&flipped], &files_opts()).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains("flipped.sst"), "{e}");
    // Sequence number 7 on one key in the middle.
    let mut seq = good.clone();
    seq[1000].1 = 7;
    let e = db
        .ingest(&[write("seq.sst", &seq)], &files_opts())
        .unwrap_err();
    assert!(e.to_string().contains("sequence number 7"), "{e}");
    // One user key twice (a put and a delete, both at sequence 0).
    let mut dup = good.clone();
    dup.insert(1001, (key(1000), 0, ValueKind::Deletion));
    let e = db
        .ingest(&[write("dup.sst", &dup)], &files_opts())
        .unwrap_err();
    assert!(e.to_string().contains("appears twice"), "{e}");
    // Two good files of one call that overlap each other.
    let (x, y) = (write("x.sst", &good[..1000]), write("y.sst", &good[999..]));
    let e = db.ingest(&[&x, &y], &files_opts()).unwrap_err();
    assert!(e.to_string().contains("overlap"), "{e}");
    assert_eq!(scan(&db), before, "nothing changed");
    assert_eq!(
        tables_on_disk(&d.path().join("db")),
        tables_before,
        "a refused file's link is removed"
    );
    for f in [&flipped, &x, &y] {
        assert!(f.exists(), "{} is the caller's still", f.display());
    }
    // The bounds: the whole file goes to the bottom; a file holding only
    // its last key, then one holding only its first, each overlaps it and
    // lands above it, in L0 (L6 is Lbase here, and ingested files skip the
    // levels between).
    let r = db
        .ingest(&[write_sst_like(&d, "all.sst", &good)], &files_opts())
        .unwrap();
    assert_eq!(r.levels, vec![Some(6)]);
    let last = write_sst(&d.path().join("last.sst"), &[(&key(1999), b"new")]);
    assert_eq!(
        db.ingest(&[last], &files_opts()).unwrap().levels,
        vec![Some(0)]
    );
    let first = write_sst(&d.path().join("first.sst"), &[(&key(0), b"new")]);
    assert_eq!(
        db.ingest(&[first], &files_opts()).unwrap().levels,
        vec![Some(0)]
    );
    assert_eq!(db.get(key(1999)).unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get(key(1000)).unwrap(), Some(value(1000)));
}

/// `entries` (all puts at sequence 0) as a file for ingestion.
fn write_sst_like(
    d: &tempfile::TempDir,
    name: &str,
    entries: &[(Vec<u8>, u64, strata::key::ValueKind)],
) -> PathBuf {
    let mut w = SstWriter::create(d.path().join(name), SstOptions::for_ingestion()).unwrap();
    for (i, (k, _, _)) in entries.iter().enumerate() {
        w.put(k, format!("{i:0>100}").into_bytes()).unwrap();
    }
    w.finish().unwrap();
    d.path().join(name)
}

/// The files of one ingestion are checked several at once (one thread per
/// core), but the error is the first bad file's in the caller's order, not
/// the first to be found: here a large file corrupt near its end comes
/// before a small file with a bad sequence number, which a second thread
/// finishes checking long before; and nothing changes.
#[test]
fn the_first_bad_file_in_the_callers_order_is_reported() {
    use strata::key::ValueKind;
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    db.put(b"a", b"mem").unwrap();
    let write = |name: &str, prefix: &str, n: u32, seq: u64| {
        let p = d.path().join(name);
        let o = SstOptions {
            compression: strata::CompressionType::None,
            ..SstOptions::default()
        };
        let mut w = SstWriter::create(&p, o).unwrap();
        for i in 0..n {
            let s = if i == n / 2 { seq } else { 0 };
            let k = format!("{prefix}{i:06}").into_bytes();
            w.add_entry(&k, s, ValueKind::Value, format!("{i:0>100}").as_bytes())
                .unwrap();
        }
        w.finish().unwrap();
        p
    };
    let small_good = write("0-good.sst", "b", 10, 0);
    // 20,000 entries, about 2.3 MB: a byte flipped at 80% of the file lies
    // in a data block its checksum covers.
    let big_corrupt = write("1-corrupt.sst", "c", 20_000, 0);
    let mut bytes = std::fs::read(&big_corrupt).unwrap();
    let at = bytes.len() * 4 / 5;
    bytes[at] ^= 0x20;
    std::fs::write(&big_corrupt, &bytes).unwrap();
    let small_bad = write("2-seq.sst", "d", 10, 7);
    let last_good = write("3-good.sst", "e", 10, 0);
    let before = scan(&db);
    for round in 0..5 {
        let e = db
            .ingest(
                &[&small_good, &big_corrupt, &small_bad, &last_good],
                &files_opts(),
            )
            .unwrap_err();
        assert!(
            e.is_corruption() && e.to_string().contains("1-corrupt.sst"),
            "round {round}: {e}"
        );
    }
    // Alone, the small bad file's own error.
    let e = db.ingest(&[&small_bad], &files_opts()).unwrap_err();
    assert!(e.to_string().contains("sequence number 7"), "{e}");
    assert_eq!(scan(&db), before, "nothing changed");
    // The good files of the same call still ingest.
    db.ingest(&[&small_good, &last_good], &files_opts())
        .unwrap();
    assert_eq!(scan(&db).len(), before.len() + 20);
}

/// What the `EVENTS` log holds when a call returns: an ingestion's event
/// and a rotation's are staged inside the commit slot and written once
/// the slot is left, but always before the call that staged them returns
/// (a tool reading the log after an ingestion must find it). (Planted:
/// neither the commit, once it has left the slot, nor `Db::ingest` writing
/// the staged lines fails the first check; the commit alone not writing
/// them fails the last.)
#[test]
fn the_log_holds_an_ingestion_and_a_rotation_when_the_call_returns() {
    use strata::events::{parse_events, Event};
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let db = Db::open(
        &dir,
        Options {
            memtable_size: 64 << 10,
            ..opts()
        },
    )
    .unwrap();
    let logged = || {
        parse_events(&std::fs::read(dir.join("EVENTS")).unwrap(), "EVENTS")
            .unwrap()
            .records
            .into_iter()
            .map(|r| r.event)
            .collect::<Vec<_>>()
    };
    db.put(b"m", b"1").unwrap();
    // Disjoint from memory: placed in the tree at once.
    let f = write_sst(&d.path().join("a.sst"), &[(b"a", b"x"), (b"b", b"y")]);
    let r = db.ingest(&[f], &files_opts()).unwrap();
    assert!(!r.flushable);
    let ingested = |seq: u64| {
        logged()
            .iter()
            .any(|e| matches!(e, Event::Ingest { sequence, .. } if *sequence == seq))
    };
    assert!(ingested(r.sequence), "no Ingest event: {:?}", logged());
    // Over the memtable: the memtable is rotated in the slot, then queued.
    let f = write_sst(&d.path().join("b.sst"), &[(b"m", b"2")]);
    let r = db.ingest(&[f], &files_opts()).unwrap();
    assert!(r.flushable);
    // (Its `Ingest` event comes when the flush places it.)
    let rotations = |why: &str| {
        logged()
            .iter()
            .filter(|e| matches!(e, Event::MemtableRotated { reason, .. } if reason == why))
            .count()
    };
    assert_eq!(rotations("ingest"), 1, "{:?}", logged());
    // Puts that fill the memtable: the Put that rotates it returns with
    // the rotation logged.
    let led_rotations = || {
        db.metrics()
            .write_waits
            .iter()
            .find(|w| w.cause == "memtable rotation")
            .map_or(0, |w| w.count)
    };
    let before = rotations("full");
    let mut i = 0u32;
    while rotations("full") == before {
        let led = led_rotations();
        db.put(format!("k{i:08}"), [7u8; 1000]).unwrap();
        i += 1;
        if led_rotations() > led {
            assert!(
                rotations("full") > before,
                "a Put rotated the memtable and returned before its event was written"
            );
        }
        assert!(i < 10_000, "no rotation");
    }
    db.close().unwrap();
}

/// Ingestion options for files this process wrote (`strata import`'s).
fn trusted_opts() -> IngestOptions {
    IngestOptions {
        verify_checksums: false,
        trust_own_files: true,
        ..files_opts()
    }
}

/// The data block offsets of a table, in file order.
fn data_blocks(path: &Path) -> Vec<u64> {
    let t = strata::sstable::Table::open_in(
        &strata::vfs::OsVfs,
        path,
        strata::sstable::TableOptions::default(),
    )
    .unwrap();
    let mut offsets: Vec<u64> = Vec::new();
    t.verify_with(true, &mut |_, off| {
        if offsets.last() != Some(&off) {
            offsets.push(off);
        }
        Ok(())
    })
    .unwrap();
    offsets
}

fn flip_byte(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x55;
    std::fs::write(path, bytes).unwrap();
}

/// `trust_own_files` reads a file Strata wrote for ingestion for its
/// bounds only (its first and last blocks, checksummed), ingesting the
/// same keys at the same level as the full walk; a damaged block it does
/// not read is reported by the first read of it (corruption, never wrong
/// data); any other file gets the full walk, which still refuses a user
/// key twice.
#[test]
fn trusted_own_files_are_checked_by_their_bounds() {
    let d = tempfile::tempdir().unwrap();
    let keys: Vec<(Vec<u8>, Vec<u8>)> = (0..2000)
        .map(|i| {
            (
                format!("k{i:06}").into_bytes(),
                format!("value {i}").into_bytes(),
            )
        })
        .collect();
    let kvs: Vec<(&[u8], &[u8])> = keys.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    let own = |name: &str| write_sst(&d.path().join(name), &kvs);
    let untouched = |db: &Db| {
        assert_eq!(
            scan(db),
            vec![(b"a".to_vec(), b"x".to_vec())],
            "nothing changed"
        );
    };

    // Same keys, same placement as the full walk.
    let full = Db::open(d.path().join("full"), opts()).unwrap();
    full.put(b"a", b"x").unwrap();
    let want = full.ingest(&[own("f.sst")], &files_opts()).unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    db.put(b"a", b"x").unwrap();
    let got = db.ingest(&[own("t.sst")], &trusted_opts()).unwrap();
    assert_eq!(got.levels, want.levels);
    assert_eq!(scan(&db), scan(&full));
    // The bounds are right: a file overlapping only the last key overlaps.
    let last = keys.last().unwrap().0.clone();
    let over = write_sst(&d.path().join("o.sst"), &[(&last, b"again")]);
    let e = db.ingest(&[own("o2.sst"), over], &trusted_opts());
    assert!(e.unwrap_err().to_string().contains("overlap"));

    // A damaged first or last block is refused before anything changes.
    let db2 = Db::open(d.path().join("db2"), opts()).unwrap();
    db2.put(b"a", b"x").unwrap();
    for which in ["first", "last"] {
        let p = own(&format!("bad-{which}.sst"));
        let blocks = data_blocks(&p);
        assert!(blocks.len() > 4, "{} blocks", blocks.len());
        let at = if which == "first" {
            blocks[0]
        } else {
            *blocks.last().unwrap()
        };
        flip_byte(&p, at + 3);
        let e = db2.ingest(&[p], &trusted_opts()).unwrap_err();
        assert!(e.to_string().contains("checksum"), "{which}: {e}");
        untouched(&db2);
    }

    // A damaged middle block is not read by the check; the first read of
    // it reports the corruption rather than wrong data.
    let p = own("bad-middle.sst");
    let blocks = data_blocks(&p);
    flip_byte(&p, blocks[blocks.len() / 2] + 3);
    db2.ingest(&[p], &trusted_opts()).unwrap();
    let mut it = db2.raw_iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    while it.valid() {
        it.next();
    }
    let e = it.status().unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");

    // The check reads nothing between the first and last blocks (which
    // is why it is only for a process's own files): a middle block
    // rewritten out of order, with its checksum recomputed, passes it, and
    // the full walk refuses the same file.
    let raw_kvs = |name: &str| {
        let p = d.path().join(name);
        let o = SstOptions {
            compression: strata::CompressionType::None,
            ..SstOptions::for_ingestion()
        };
        let mut w = SstWriter::create(&p, o).unwrap();
        for (k, v) in &kvs {
            w.put(k, v).unwrap();
        }
        w.finish().unwrap();
        let blocks = data_blocks(&p);
        let (at, next) = (blocks[blocks.len() / 2], blocks[blocks.len() / 2 + 1]);
        let mut bytes = std::fs::read(&p).unwrap();
        let body = (at as usize)..(next as usize - 5);
        // The block's first key, whole at a restart point after three
        // one-byte varints: `k...` becomes `>...`, before the previous key.
        assert_eq!(bytes[body.start + 3], b'k');
        bytes[body.start + 3] = b'>';
        let sum = strata::util::checksum::block_checksum(
            strata::ChecksumType::Crc32c,
            &bytes[body.clone()],
            bytes[body.end],
        );
        bytes[body.end + 1..body.end + 5].copy_from_slice(&sum.to_le_bytes());
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let db4 = Db::open(d.path().join("db4"), opts()).unwrap();
    let e = db4.ingest(&[raw_kvs("r1.sst")], &files_opts()).unwrap_err();
    // The walk's index check finds it first: the separator of the block
    // before is not below the block's new first key.
    assert!(e.to_string().contains("is not below the first key"), "{e}");
    db4.ingest(&[raw_kvs("r2.sst")], &trusted_opts()).unwrap();

    // Not written for ingestion (no external-file properties): the full
    // walk, which refuses a user key twice at sequence number 0.
    let db3 = Db::open(d.path().join("db3"), opts()).unwrap();
    db3.put(b"a", b"x").unwrap();
    let p = d.path().join("twice.sst");
    let mut w = SstWriter::create(&p, SstOptions::default()).unwrap();
    w.add_entry(b"t", 0, strata::key::ValueKind::Value, b"v")
        .unwrap();
    w.add_entry(b"t", 0, strata::key::ValueKind::Deletion, b"")
        .unwrap();
    w.finish().unwrap();
    let e = db3.ingest(&[p], &trusted_opts()).unwrap_err();
    assert!(e.to_string().contains("appears twice"), "{e}");
    untouched(&db3);
}

/// `Metrics` splits ingestions' time into their phases: with every fsync
/// taking 50 ms, an ingestion of one file pays one directory fsync (in its
/// preparation) and one MANIFEST fsync (after its commit), each counted
/// where it happened, and the phases add up to no more than the calls'
/// total. A file small enough to become a write batch adds to the total
/// only.
#[test]
fn ingest_metrics_split_the_calls_into_their_phases() {
    use std::sync::Arc;
    use strata::vfs::{FaultVfs, Vfs};
    let fs = FaultVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let db = Db::open(
        "/db",
        Options {
            vfs: Some(Arc::clone(&vfs)),
            ..opts()
        },
    )
    .unwrap();
    let sst = |name: &str, keys: &[&[u8]]| {
        vfs.create_dir_all(Path::new("/in")).unwrap();
        let p = Path::new("/in").join(name);
        let mut w = SstWriter::create_in(vfs.as_ref(), &p, SstOptions::for_ingestion()).unwrap();
        for k in keys {
            w.put(k, b"v").unwrap();
        }
        w.finish().unwrap();
        p
    };
    let a = sst("a.sst", &[b"a1", b"a2"]);
    let b = sst("b.sst", &[b"b1"]);
    let before = db.metrics();
    assert_eq!(before.ingest_prepare_micros, 0);
    // One modelled fsync takes FSYNC_US and two twice that: the margins
    // leave a loaded machine FSYNC_US of slack for preemption and late
    // wake-ups (at 50 ms that was within reach of a 2-core VM's stalls).
    const FSYNC_US: u64 = 200_000;
    fs.set_sync_latency(std::time::Duration::from_micros(FSYNC_US));
    db.ingest(&[&a], &files_opts()).unwrap();
    let m = db.metrics();
    let one = |us: u64| (FSYNC_US..2 * FSYNC_US).contains(&us);
    assert_eq!(m.ingests, 1);
    assert!(one(m.ingest_dir_sync_micros), "one directory fsync: {m:?}");
    assert!(m.ingest_prepare_micros >= m.ingest_dir_sync_micros);
    assert!(one(m.ingest_prepare_micros), "{m:?}");
    assert!(
        one(m.ingest_manifest_sync_micros),
        "one MANIFEST fsync: {m:?}"
    );
    assert!(
        m.ingest_commit_micros < FSYNC_US,
        "the commit syncs nothing: {m:?}"
    );
    let phases = m.ingest_prepare_micros + m.ingest_commit_micros + m.ingest_manifest_sync_micros;
    assert!(phases <= m.ingest_micros, "{m:?}");
    // A batch-sized ingestion: its synced write is not a phase of a file
    // ingestion.
    db.ingest(&[&b], &IngestOptions::default()).unwrap();
    let n = db.metrics();
    assert_eq!(n.ingests_as_batch, 1);
    assert!(n.ingest_micros >= m.ingest_micros + FSYNC_US, "{n:?}");
    assert_eq!(
        (n.ingest_prepare_micros, n.ingest_dir_sync_micros),
        (m.ingest_prepare_micros, m.ingest_dir_sync_micros)
    );
    assert_eq!(n.ingest_manifest_sync_micros, m.ingest_manifest_sync_micros);
    assert_eq!(n.ingest_commit_micros, m.ingest_commit_micros);
    assert_eq!(db.get(b"b1").unwrap(), Some(b"v".to_vec()));
}

/// The table files of `dir` on `vfs`, by name.
fn tables_in(vfs: &dyn strata::vfs::Vfs, dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = vfs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect();
    v.sort();
    v
}

/// A path that resolves into the database directory is refused before
/// anything is changed, however it is spelt (as is, through `..`, through
/// a symbolic link to the directory or to the table), moved or copied,
/// as files or as a batch: the call is `InvalidArgument` naming the path,
/// the table stays (byte for byte) and the database reopens with the same
/// contents and checks clean. (A user audit: with `move_files` the live
/// table was linked in and then removed, and the next open failed,
/// "missing: MANIFEST names it".) A file outside the directory named
/// through it (`db/../f.sst`) is still ingested.
#[test]
fn a_file_inside_the_database_directory_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let db = Db::open(&dir, opts()).unwrap();
    // An ingested table, as in the audit: its keys are at sequence number
    // 0 (its global one is the MANIFEST's), so nothing else refuses it.
    let keys: Vec<(Vec<u8>, Vec<u8>)> = (0..100u32)
        .map(|i| {
            (
                format!("k{i:03}").into_bytes(),
                format!("v{i}").into_bytes(),
            )
        })
        .collect();
    let kvs: Vec<(&[u8], &[u8])> = keys.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    let first = write_sst(&d.path().join("first.sst"), &kvs);
    db.ingest(&[first], &files_opts()).unwrap();
    let tables = tables_on_disk(&dir);
    assert_eq!(tables.len(), 1, "{tables:?}");
    let table = dir.join(format!("{:06}.sst", tables[0]));
    let bytes = std::fs::read(&table).unwrap();
    let contents = scan(&db);
    std::os::unix::fs::symlink(&dir, d.path().join("alias")).unwrap();
    std::os::unix::fs::symlink(&table, d.path().join("link.sst")).unwrap();
    let name = table.file_name().unwrap();
    let spellings = [
        table.clone(),
        d.path().join("db/../db").join(name),
        d.path().join("db/./").join(name),
        d.path().join("alias").join(name),
        d.path().join("link.sst"),
    ];
    let copy = IngestOptions {
        move_files: false,
        ..files_opts()
    };
    for p in &spellings {
        for (how, o) in [
            ("moved", files_opts()),
            ("copied", copy.clone()),
            ("as a batch", IngestOptions::default()),
        ] {
            let e = db.ingest(std::slice::from_ref(p), &o).unwrap_err();
            assert!(matches!(e, strata::Error::InvalidArgument(_)), "{how}: {e}");
            let msg = e.to_string();
            assert!(msg.contains(&p.display().to_string()), "{how}: {msg}");
            assert!(
                msg.contains("inside the database directory"),
                "{how}: {msg}"
            );
            assert_eq!(tables_on_disk(&dir), tables, "{how} {}", p.display());
            assert_eq!(std::fs::read(&table).unwrap(), bytes, "{how}");
            assert_eq!(scan(&db), contents, "{how}");
        }
    }
    assert_eq!(db.metrics().ingests, 1, "the first only");
    db.close().unwrap();
    let db = Db::open(&dir, opts()).unwrap();
    assert_eq!(scan(&db), contents, "reopened with the same contents");
    assert_eq!(tables_on_disk(&dir), tables);
    // Outside the directory, named through it: not refused.
    let f = write_sst(&d.path().join("f.sst"), &[(b"z1", b"outside")]);
    let via = dir.join("..").join("f.sst");
    db.ingest(&[via], &files_opts()).unwrap();
    assert!(!f.exists(), "moved in");
    assert_eq!(db.get(b"z1").unwrap(), Some(b"outside".to_vec()));
    // The scratch directory is the tools' (the import ingests its files
    // from there), not the database's: not refused either.
    let work = db.scratch_dir().join("tool-1");
    std::fs::create_dir_all(&work).unwrap();
    let s = write_sst(&work.join("s.sst"), &[(b"z2", b"scratch")]);
    db.ingest(&[&s], &files_opts()).unwrap();
    assert!(!s.exists(), "moved in");
    assert_eq!(db.get(b"z2").unwrap(), Some(b"scratch".to_vec()));
    db.close().unwrap();
    let report = strata::check::check_dir(&dir).unwrap();
    assert!(
        report.is_ok() && report.warnings.is_empty(),
        "{:?} {:?}",
        report.problems,
        report.warnings
    );
}

/// A file holding a Merge operand (RocksDB writes them; Strata has no
/// merge operator and cannot read one) is refused whichever way it would
/// enter, as files or as a write batch, moved or copied, with a message
/// naming the file, the key and the block's offset, in words (not Rust's
/// `Some(Merge)`), and nothing changes. (A user audit: as files it was
/// accepted, and then `get` of the key and every scan over it failed.)
#[test]
fn merge_operands_are_refused_on_both_paths() {
    use strata::key::ValueKind;
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    db.put(b"a", b"kept").unwrap();
    let p = d.path().join("merge.sst");
    let mut w = SstWriter::create(&p, SstOptions::for_ingestion()).unwrap();
    w.add_entry(b"m1", 0, ValueKind::Value, b"one").unwrap();
    w.add_entry(b"m2", 0, ValueKind::Merge, b"+1").unwrap();
    w.add_entry(b"m3", 0, ValueKind::Value, b"three").unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let copy = IngestOptions {
        move_files: false,
        ..files_opts()
    };
    for (how, o) in [
        ("moved", files_opts()),
        ("copied", copy),
        ("as a batch", IngestOptions::default()),
    ] {
        let e = db.ingest(std::slice::from_ref(&p), &o).unwrap_err();
        assert!(matches!(e, strata::Error::NotSupported(_)), "{how}: {e}");
        let msg = e.to_string();
        for needle in [
            p.display().to_string().as_str(),
            "a Merge entry (key \"m2\") in the data block at offset 0",
            "Strata has no merge operator, so it cannot ingest merge operands",
        ] {
            assert!(msg.contains(needle), "{how}: {needle:?} not in {msg}");
        }
        assert!(!msg.contains("Some("), "{how}: {msg}");
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "{how}: the file stays");
        assert_eq!(scan(&db), vec![(b"a".to_vec(), b"kept".to_vec())], "{how}");
        assert_eq!(db.get(b"m2").unwrap(), None, "{how}");
        assert!(tables_on_disk(&d.path().join("db")).is_empty(), "{how}");
    }
    assert_eq!(db.iter().count(), 1);
}

/// An ingestion that fails after it made files in the database directory
/// removes every one of them and nothing else, so the directory holds no
/// table that no MANIFEST record names (`check` warns of none, and the
/// next open has nothing to move to `lost/`): a copy cut short by a full
/// disk (a user audit: the partial copy stayed and the next open moved it
/// to `lost/`, where it kept the space), an excise's range-tombstone file
/// cut short the same way, and files the commit refused (they overlap the
/// memtable, which the caller forbade).
#[test]
fn a_failed_ingestion_leaves_no_file_behind() {
    use std::sync::Arc;
    use strata::vfs::fault::{Fault, FaultKind, Op};
    use strata::vfs::{FaultVfs, Vfs};
    let fs = FaultVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let dir = Path::new("/db");
    let open = || {
        Db::open(
            dir,
            Options {
                vfs: Some(Arc::clone(&vfs)),
                ..opts()
            },
        )
        .unwrap()
    };
    let db = open();
    db.put(b"a", b"flushed").unwrap();
    db.flush().unwrap();
    db.put(b"m00500", b"in memory").unwrap();
    vfs.create_dir_all(Path::new("/in")).unwrap();
    let sst = |name: &str, prefix: &str| {
        let p = Path::new("/in").join(name);
        let mut w = SstWriter::create_in(vfs.as_ref(), &p, SstOptions::for_ingestion()).unwrap();
        for i in 0..2000u32 {
            w.put(format!("{prefix}{i:05}"), [b'v'; 40]).unwrap();
        }
        w.finish().unwrap();
        p
    };
    let big = sst("big.sst", "k");
    let mem = sst("mem.sst", "m");
    let tables = tables_in(vfs.as_ref(), dir);
    let contents = scan(&db);
    // The first write of a table fails half done, with ENOSPC.
    let full_disk = || Fault {
        kind: FaultKind::NoSpace,
        torn: true,
        path_filter: Some(".sst".into()),
        ..Fault::eio(Op::Write, 1)
    };
    let copy = IngestOptions {
        move_files: false,
        ..files_opts()
    };
    fs.inject(full_disk());
    let e = db.ingest(std::slice::from_ref(&big), &copy).unwrap_err();
    fs.clear_fault();
    assert!(e.to_string().contains("/db/"), "the copy failed: {e}");
    assert_eq!(fs.fired().len(), 1, "{e}");
    assert_eq!(tables_in(vfs.as_ref(), dir), tables, "copy: {e}");
    // An excise under a snapshot writes a range-tombstone file (the file
    // itself is linked: no write).
    let snap = db.snapshot();
    let excise = IngestOptions {
        excise: Some((b"k".to_vec(), b"l".to_vec())),
        ..files_opts()
    };
    fs.inject(full_disk());
    let e = db.ingest(std::slice::from_ref(&big), &excise).unwrap_err();
    fs.clear_fault();
    assert_eq!(fs.fired().len(), 2, "{e}");
    assert_eq!(tables_in(vfs.as_ref(), dir), tables, "tombstone file: {e}");
    assert!(vfs.exists(&big), "the caller keeps the file");
    drop(snap);
    // Refused by the commit, after `prepare` linked the file in.
    let no = IngestOptions {
        allow_overlap_with_memtable: false,
        ..files_opts()
    };
    let e = db.ingest(std::slice::from_ref(&mem), &no).unwrap_err();
    assert!(e.to_string().contains("overlap a memtable"), "{e}");
    assert_eq!(tables_in(vfs.as_ref(), dir), tables, "refused: {e}");
    assert!(vfs.exists(&mem), "the caller keeps the file");
    assert_eq!(scan(&db), contents);
    db.close().unwrap();
    let report = strata::check::check(vfs.as_ref(), dir).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert!(
        report.warnings.iter().all(|w| !w.file.ends_with(".sst")),
        "no unreferenced table: {:?}",
        report.warnings
    );
    let db = open();
    assert_eq!(scan(&db), contents);
    assert!(vfs.list(&dir.join("lost")).unwrap_or_default().is_empty());
    // The same files go in once the disk has room.
    db.ingest(&[&big], &copy).unwrap();
    assert_eq!(db.get(b"k01999").unwrap(), Some(vec![b'v'; 40]));
}
