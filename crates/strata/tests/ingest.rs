//! External SST ingestion: placement at the lowest level, the flushable path
//! over an overlapping memtable (visible at once, ordered with writes,
//! recovered from the WAL), the small-file batch path, errors that leave the
//! database unchanged, files written by RocksDB, and callers' files never
//! modified.

use std::path::{Path, PathBuf};
use strata::sstable::{SstOptions, SstWriter};
use strata::{CompactionOptions, Db, IngestOptions, Options, ReadOptions};

fn opts() -> Options {
    Options {
        compaction: CompactionOptions {
            l0_compaction_threshold: 100,
            ..CompactionOptions::default()
        },
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
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
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
        snapshot: Some(snap.sequence()),
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

#[test]
fn small_files_become_a_batch() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("db"), opts()).unwrap();
    let f = write_sst(&d.path().join("f.sst"), &[(b"x", b"1"), (b"y", b"2")]);
    let r = db.ingest(&[f], &IngestOptions::default()).unwrap();
    assert!(r.as_batch);
    assert_eq!(db.get(b"y").unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.metrics().ingests_as_batch, 1);
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
    db.ingest(std::slice::from_ref(&f), &files_opts()).unwrap();
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
