//! `strata::check` against databases damaged on purpose, one file kind at a
//! time: every table, WAL, MANIFEST and CURRENT byte flip and truncation
//! tried must be reported (with the damaged file's name), never panic, and
//! check must never change the directory. Broken invariants (overlapping
//! files in a level, an older version above a newer one, a table missing or
//! of the wrong size) are built by hand and must be reported too.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::check::{check, CheckReport};
use strata::key::{make_internal_key, ValueKind};
use strata::sstable::{SstOptions, SstWriter};
use strata::version::{FileMeta, VersionEdit};
use strata::vfs::fault::Op;
use strata::vfs::{read_all, FaultVfs, Vfs};
use strata::wal::LogWriter;
use strata::{CompactionOptions, Db, IngestOptions, Options, WriteBatch, WriteOptions};

const DIR: &str = "/db";

/// A database with tables on several levels (one ingested), a MANIFEST of
/// many records and a WAL holding unflushed writes.
fn build() -> FaultVfs {
    let vfs = FaultVfs::new();
    let o = Options {
        vfs: Some(Arc::new(vfs.clone()) as Arc<dyn Vfs>),
        memtable_size: 4 << 10,
        compaction: CompactionOptions {
            target_file_size: 4 << 10,
            l0_compaction_threshold: 2,
            base_level_bytes: 16 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(DIR, o).unwrap();
    for i in 0..600u32 {
        db.put(format!("k{:05}", i * 7 % 1000).as_bytes(), [b'v'; 40])
            .unwrap();
    }
    db.compact_range(None, None).unwrap();
    // The file to ingest is written through the database's file system,
    // which ingestion reads (and moves it) through.
    let p = std::path::PathBuf::from("/files/ing.sst");
    let mut w = SstWriter::create_in(&vfs, &p, SstOptions::for_ingestion()).unwrap();
    for i in 0..50u32 {
        w.put(format!("z{i:03}").as_bytes(), b"ingested").unwrap();
    }
    w.finish().unwrap();
    db.ingest(
        &[p],
        &IngestOptions {
            small_file_bytes: 0,
            ..IngestOptions::default()
        },
    )
    .unwrap();
    for i in 0..40u32 {
        let mut b = WriteBatch::new();
        b.put(format!("w{i:03}").as_bytes(), b"in the wal");
        db.write(b, &WriteOptions { sync: true }).unwrap();
    }
    db.close().unwrap();
    vfs
}

/// Opens the database (on a copy: opening writes) and reads every entry,
/// panics turned into errors.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn contents(vfs: &FaultVfs) -> Result<Entries, String> {
    let v = vfs.crash_clone();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let o = Options {
            vfs: Some(Arc::new(v) as Arc<dyn Vfs>),
            ..Options::default()
        };
        let db = Db::open(DIR, o).map_err(|e| e.to_string())?;
        db.iter()
            .collect::<strata::Result<Entries>>()
            .map_err(|e| e.to_string())
    }))
    .unwrap_or_else(|_| Err("PANIC".to_string()))
}

fn names(vfs: &FaultVfs) -> Vec<String> {
    let mut n = vfs.list(Path::new(DIR)).unwrap();
    n.sort();
    n
}

/// Runs check and asserts it changed nothing.
fn run_check(vfs: &FaultVfs) -> CheckReport {
    let mutating: Vec<u64> = Op::ALL
        .iter()
        .filter(|o| o.is_mutating())
        .map(|&o| vfs.count(o))
        .collect();
    let before: Vec<(String, Vec<u8>)> = names(vfs)
        .into_iter()
        .map(|n| {
            let d = read_all(vfs, &Path::new(DIR).join(&n)).unwrap();
            (n, d)
        })
        .collect();
    let r = check(vfs, Path::new(DIR)).unwrap();
    let after: Vec<(String, Vec<u8>)> = names(vfs)
        .into_iter()
        .map(|n| {
            let d = read_all(vfs, &Path::new(DIR).join(&n)).unwrap();
            (n, d)
        })
        .collect();
    assert!(before == after, "check changed the directory");
    let after_ops: Vec<u64> = Op::ALL
        .iter()
        .filter(|o| o.is_mutating())
        .map(|&o| vfs.count(o))
        .collect();
    assert_eq!(mutating, after_ops, "check made a mutating call");
    r
}

fn of_kind(vfs: &FaultVfs, pred: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    names(vfs)
        .into_iter()
        .filter(|n| pred(n))
        .map(|n| Path::new(DIR).join(n))
        .collect()
}

/// A copy of `vfs` (durable state: `build` closed the database cleanly).
fn fresh(vfs: &FaultVfs) -> FaultVfs {
    vfs.crash_clone()
}

/// Flips bytes of `file` at `step`-spaced offsets, one copy per offset, and
/// requires each to be reported as a problem (or, if `warn_ok` says so for
/// that offset, as a warning) naming the file. Returns (cases, problems,
/// warnings).
fn flip_each(
    base: &FaultVfs,
    file: &Path,
    step: usize,
    warn_ok: impl Fn(&strata::check::Finding) -> bool,
) -> (u64, u64, u64) {
    let len = base.file_size(file).unwrap() as usize;
    let name = file.display().to_string();
    let (mut cases, mut problems, mut warnings) = (0, 0, 0);
    let mut off = 0;
    while off < len {
        let v = fresh(base);
        v.corrupt(file, off, |b| b ^ 0x5a).unwrap();
        let r = run_check(&v);
        cases += 1;
        let named = |fs: &[strata::check::Finding]| fs.iter().any(|f| f.file == name);
        if named(&r.problems) {
            problems += 1;
        } else if r.warnings.iter().any(|f| f.file == name && warn_ok(f)) {
            warnings += 1;
        } else {
            panic!(
                "flipping {name} at offset {off} of {len} not reported: problems {:?} warnings {:?}",
                r.problems, r.warnings
            );
        }
        off += step;
    }
    (cases, problems, warnings)
}

/// Flips `file` at `step`-spaced offsets and opens each copy with the
/// engine: a panic fails the test; returns how many copies opened without
/// an error but read differently from the undamaged database (recovery
/// dropping a damaged last record of a log, which `check` reports).
fn silently_different(base: &FaultVfs, file: &Path, step: usize) -> u64 {
    let want = contents(base).expect("the undamaged database reads");
    let len = base.file_size(file).unwrap() as usize;
    let mut n = 0;
    for off in (0..len).step_by(step) {
        let v = fresh(base);
        v.corrupt(file, off, |b| b ^ 0x5a).unwrap();
        match contents(&v) {
            Ok(got) => n += u64::from(got != want),
            Err(e) => assert!(e != "PANIC", "{} flipped at {off}: panic", file.display()),
        }
    }
    n
}

#[test]
fn a_sound_database_checks_clean_and_is_not_changed() {
    let vfs = build();
    let r = run_check(&vfs);
    assert!(r.is_ok(), "problems: {:?}", r.problems);
    assert!(r.warnings.is_empty(), "warnings: {:?}", r.warnings);
    assert!(r.tables >= 3, "tables {}", r.tables);
    assert_eq!(r.tables_unreadable, 0, "{r:?}");
    assert!(r.wal_records >= 40 && r.manifest_records >= 3, "{r:?}");
    assert!(r.table_entries > 500, "{r:?}");
}

#[test]
fn every_table_byte_flip_is_reported() {
    let base = build();
    let tables = of_kind(&base, |n| n.ends_with(".sst"));
    assert!(tables.len() >= 3);
    let mut total = (0, 0, 0);
    let want = contents(&base).expect("the undamaged database reads");
    let mut refused = 0;
    for t in &tables {
        let len = base.file_size(t).unwrap() as usize;
        // About 300 offsets per table: every block kind and the footer.
        let step = (len / 300).max(1);
        let (c, p, w) = flip_each(&base, t, step, |f| {
            f.what.contains("global sequence number")
        });
        // The engine itself: opening and reading the damaged database fails
        // with the file named, or returns exactly the right contents.
        let mut off = 0;
        while off < len {
            let v = fresh(&base);
            v.corrupt(t, off, |b| b ^ 0x5a).unwrap();
            match contents(&v) {
                Ok(got) => assert!(got == want, "flip at {} {off}: wrong answer", t.display()),
                Err(e) => {
                    assert!(
                        e.contains(&t.display().to_string()),
                        "error does not name the file: {e}"
                    );
                    refused += 1;
                }
            }
            off += step * 4;
        }
        total = (total.0 + c, total.1 + p, total.2 + w);
        // Truncation: the size no longer matches the MANIFEST.
        for cut in [len / 2, len - 1] {
            let v = fresh(&base);
            let data = read_all(&v, t).unwrap();
            let mut f = v.create(t).unwrap();
            f.append(&data[..cut]).unwrap();
            f.sync().unwrap();
            let r = run_check(&v);
            // At the offset where the file ends, as the open reports it.
            assert!(
                r.problems
                    .iter()
                    .any(|p| p.file == t.display().to_string() && p.offset == cut as u64),
                "truncated {} not reported: {:?}",
                t.display(),
                r.problems
            );
            // And the summary's entry count is known to be partial.
            assert_eq!(r.tables_unreadable, 1, "{r:?}");
            total.0 += 1;
            total.1 += 1;
        }
    }
    eprintln!(
        "SST corruption cases: {total:?} (cases, problems, warnings); engine reads of damaged \
         copies: {refused} refused naming the file, the rest read right"
    );
}

#[test]
fn every_wal_byte_flip_is_reported() {
    let base = build();
    let wals = of_kind(&base, |n| n.ends_with(".log"));
    assert_eq!(wals.len(), 1);
    let (c, p, w) = flip_each(&base, &wals[0], 2, |f| f.what.contains("torn write"));
    let silent = silently_different(&base, &wals[0], 2);
    eprintln!(
        "WAL corruption cases: {c} ({p} problems, {w} warnings); reopened by the engine with \
         different contents and no error: {silent}"
    );
    assert!(p > c / 2, "most WAL flips are problems: {p} of {c}");
}

/// A WAL cut short or with a byte flipped, with and without an empty WAL
/// after it (the WAL thread creates the next WAL ahead of need, so a crash
/// often leaves one): `check` reports a problem exactly when the open
/// refuses the database. It once read every WAL but the last strictly, and
/// so called a torn write before an empty WAL a problem that the open
/// accepts.
#[test]
fn check_judges_a_damaged_wal_as_the_open_does() {
    let base = build();
    let wals = of_kind(&base, |n| n.ends_with(".log"));
    assert_eq!(wals.len(), 1);
    let wal = &wals[0];
    let data = read_all(&base, wal).unwrap();
    let number: u64 = wal
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .unwrap();
    let next = Path::new(DIR).join(format!("{:06}.log", number + 1));
    let (mut accepted, mut refused, mut torn_warnings) = (0, 0, 0);
    for at in (0..data.len()).step_by(7) {
        for flip in [false, true] {
            for with_next in [false, true] {
                let v = fresh(&base);
                if flip {
                    v.corrupt(wal, at, |b| b ^ 0x5a).unwrap();
                } else {
                    strata::vfs::write_all(&v, wal, &data[..at]).unwrap();
                }
                if with_next {
                    strata::vfs::write_all(&v, &next, b"").unwrap();
                }
                let r = run_check(&v);
                let opened = contents(&v);
                assert_eq!(
                    r.problems.is_empty(),
                    opened.is_ok(),
                    "{} at {at}, empty WAL after it: {with_next}: check's problems {:?}, \
                     the open: {:?}",
                    if flip { "flipped" } else { "cut" },
                    r.problems,
                    opened.err()
                );
                if opened.is_ok() {
                    accepted += 1;
                    torn_warnings +=
                        u64::from(r.warnings.iter().any(|f| f.what.contains("torn write")));
                } else {
                    refused += 1;
                }
            }
        }
    }
    eprintln!(
        "damaged WAL cases: {accepted} opened ({torn_warnings} with a torn-write warning), \
         {refused} refused, check agreeing in each"
    );
    assert!(refused > 0 && torn_warnings > 0, "both outcomes tried");
}

#[test]
fn every_manifest_and_current_byte_flip_is_reported() {
    let base = build();
    let m = of_kind(&base, |n| n.starts_with("MANIFEST-"));
    assert_eq!(m.len(), 1);
    let (c, p, w) = flip_each(&base, &m[0], 3, |f| f.what.contains("torn write"));
    let silent = silently_different(&base, &m[0], 3);
    eprintln!(
        "MANIFEST corruption cases: {c} ({p} problems, {w} warnings); reopened by the engine \
         with different contents and no error: {silent}"
    );
    assert!(p > c / 2, "most MANIFEST flips are problems: {p} of {c}");
    let cur = Path::new(DIR).join("CURRENT");
    let (c, p, _) = flip_each(&base, &cur, 1, |_| false);
    eprintln!("CURRENT corruption cases: {c} ({p} problems)");
    // A CURRENT naming a missing MANIFEST, and a missing table.
    let v = fresh(&base);
    v.remove(&m[0]).unwrap();
    assert!(!run_check(&v).is_ok());
    let v = fresh(&base);
    let t = &of_kind(&v, |n| n.ends_with(".sst"))[0];
    v.remove(t).unwrap();
    let r = run_check(&v);
    assert!(
        r.problems.iter().any(|p| p.what.contains("missing")),
        "{r:?}"
    );
}

/// Writes a table of `(user key, seq)` puts and returns its metadata.
fn table(vfs: &FaultVfs, n: u64, keys: &[(&str, u64)]) -> FileMeta {
    let path = Path::new(DIR).join(format!("{n:06}.sst"));
    let mut w = SstWriter::create_in(vfs, &path, SstOptions::default()).unwrap();
    let mut ikeys: Vec<Vec<u8>> = keys
        .iter()
        .map(|(k, s)| make_internal_key(k.as_bytes(), *s, ValueKind::Value))
        .collect();
    ikeys.sort_by(|a, b| strata::key::compare_internal(a, b));
    for k in &ikeys {
        w.add(k, b"v").unwrap();
    }
    let info = w.finish().unwrap();
    FileMeta {
        number: n,
        size: info.file_size,
        smallest: info.smallest.unwrap(),
        largest: info.largest.unwrap(),
        smallest_seq: info.smallest_seqno,
        largest_seq: info.largest_seqno,
        global_seqno: None,
        num_entries: info.num_entries,
        num_deletions: 0,
        num_range_deletions: 0,
        backing: None,
    }
}

/// A hand-made database: `files` placed by one MANIFEST record.
fn hand_made(files: Vec<(usize, FileMeta)>) -> FaultVfs {
    let vfs = table_vfs();
    let mut e = VersionEdit {
        comparator: Some("leveldb.BytewiseComparator".into()),
        log_number: Some(0),
        next_file_number: Some(100),
        last_sequence: Some(1000),
        ..VersionEdit::default()
    };
    e.new_files = files;
    let path = Path::new(DIR).join("MANIFEST-000050");
    let mut w = LogWriter::new(vfs.create(&path).unwrap(), "m");
    w.add_record(&e.encode()).unwrap();
    w.sync().unwrap();
    strata::version::set::set_current(&vfs, Path::new(DIR), 50).unwrap();
    vfs
}

thread_local! {
    static VFS: std::cell::RefCell<Option<FaultVfs>> = const { std::cell::RefCell::new(None) };
}

fn table_vfs() -> FaultVfs {
    VFS.with(|v| v.borrow_mut().get_or_insert_with(FaultVfs::new).clone())
}

fn reset() {
    VFS.with(|v| *v.borrow_mut() = Some(FaultVfs::new()));
}

#[test]
fn broken_invariants_are_reported() {
    // Sound: L1 newer than L2 for the shared key.
    reset();
    let v = table_vfs();
    let a = table(&v, 1, &[("a", 20), ("m", 21)]);
    let b = table(&v, 2, &[("a", 5), ("z", 6)]);
    let r = run_check(&hand_made(vec![(1, a.clone()), (2, b.clone())]));
    assert!(r.is_ok(), "{:?}", r.problems);

    // An older version of "a" above a newer one.
    reset();
    let v = table_vfs();
    let a = table(&v, 1, &[("a", 5), ("m", 6)]);
    let b = table(&v, 2, &[("a", 20), ("z", 21)]);
    let r = run_check(&hand_made(vec![(1, a), (2, b)]));
    assert!(
        r.problems.iter().any(|p| p.what.contains("not older")),
        "{:?}",
        r.problems
    );

    // Two overlapping files in L1.
    reset();
    let v = table_vfs();
    let a = table(&v, 1, &[("a", 5), ("m", 6)]);
    let b = table(&v, 2, &[("c", 20), ("z", 21)]);
    let r = run_check(&hand_made(vec![(1, a), (1, b)]));
    assert!(
        r.problems.iter().any(|p| p.what.contains("overlap")),
        "{:?}",
        r.problems
    );

    // A recorded size or bounds that do not match the table.
    reset();
    let v = table_vfs();
    let mut a = table(&v, 1, &[("a", 5), ("m", 6)]);
    a.size += 1;
    let r = run_check(&hand_made(vec![(1, a)]));
    assert!(
        r.problems.iter().any(|p| p.what.contains("size")),
        "{:?}",
        r.problems
    );
    reset();
    let v = table_vfs();
    let mut a = table(&v, 1, &[("a", 5), ("m", 6)]);
    a.largest = make_internal_key(b"c", 6, ValueKind::Value);
    let r = run_check(&hand_made(vec![(1, a)]));
    assert!(
        r.problems
            .iter()
            .any(|p| p.what.contains("outside the bounds")),
        "{:?}",
        r.problems
    );

    // A sequence number above the MANIFEST's last sequence.
    reset();
    let v = table_vfs();
    let a = table(&v, 1, &[("a", 5000)]);
    let r = run_check(&hand_made(vec![(1, a)]));
    assert!(
        r.problems.iter().any(|p| p.what.contains("last sequence")),
        "{:?}",
        r.problems
    );
}

/// The EVENTS log damaged every way a crash or a stray write can: cut at
/// every 7th byte, a byte flipped at every 5th, and garbage lines (binary,
/// invalid UTF-8, unbalanced or 10,000-deep JSON, wrong field types,
/// numbers past u64, a 1 MiB line, NUL bytes) put in the middle and at the
/// end. For each: the event reader never panics and either parses or
/// skips the damaged lines, naming EVENTS, the line and an offset inside
/// it (it used to refuse the whole log); `check` reports
/// it as a warning naming EVENTS (never a problem: it is not data) and
/// changes nothing; a read-only open leaves its bytes alone; the database
/// opens read-write with exactly its data.
#[test]
fn events_damage_is_reported_and_never_fatal() {
    let base = build();
    let events = Path::new(DIR).join("EVENTS");
    let ev_name = events.display().to_string();
    let text = read_all(&base, &events).unwrap();
    assert!(text.len() > 1000, "EVENTS of {} bytes", text.len());
    let want = contents(&base).unwrap();
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for cut in (0..text.len()).step_by(7) {
        cases.push((format!("cut at {cut}"), text[..cut].to_vec()));
    }
    for off in (0..text.len()).step_by(5) {
        let mut d = text.clone();
        d[off] ^= 0x5a;
        cases.push((format!("byte {off} flipped"), d));
    }
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let long = format!(
        "{{\"v\":2,\"event\":\"open\",\"x\":\"{}\"}}",
        "a".repeat(1 << 20)
    );
    let garbage: Vec<Vec<u8>> = vec![
        b"\x00\x01\xff\xfe\x00".to_vec(),
        b"{".to_vec(),
        b"not json at all".to_vec(),
        b"\xc3\x28\xa0\xa1".to_vec(),
        deep.into_bytes(),
        br#"{"v":2,"time":1,"event":"flush_end","job":"x"}"#.to_vec(),
        br#"{"v":2,"time":1,"event":"table_deleted","number":99999999999999999999999}"#.to_vec(),
        br#"{"v":2,"time":1e999,"event":"open"}"#.to_vec(),
        br#"{"v":2}"#.to_vec(),
        br#"{"event":"compaction_end"}"#.to_vec(),
        long.into_bytes(),
        vec![0u8; 4096],
    ];
    let first_line = text.iter().position(|&b| b == b'\n').unwrap() + 1;
    for (i, g) in garbage.iter().enumerate() {
        let mut mid = text[..first_line].to_vec();
        mid.extend_from_slice(g);
        mid.push(b'\n');
        mid.extend_from_slice(&text[first_line..]);
        cases.push((format!("garbage line {i} in the middle"), mid));
        let mut end = text.clone();
        end.extend_from_slice(g);
        end.push(b'\n');
        cases.push((format!("garbage line {i} at the end"), end));
        let mut torn = text.clone();
        torn.extend_from_slice(g);
        cases.push((format!("garbage line {i} as a torn last line"), torn));
    }
    let (mut parsed, mut reported, mut torn) = (0, 0, 0);
    for (case, data) in &cases {
        let v = fresh(&base);
        strata::vfs::write_all(&v, &events, data).unwrap();
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            strata::inspect::read_events_in(&v, Path::new(DIR))
        }))
        .unwrap_or_else(|_| panic!("{case}: the event reader panicked"));
        let damaged = match read {
            Ok(p) if !p.damaged.is_empty() => {
                // Damaged lines are skipped and named, with offsets inside
                // the file.
                for (file, line, offset, _) in &p.damaged {
                    assert_eq!(file, &ev_name, "{case}");
                    assert!(*line >= 1, "{case}");
                    assert!(*offset <= data.len() as u64, "{case}: offset {offset}");
                }
                reported += 1;
                true
            }
            Ok(p) => {
                parsed += 1;
                let t = !p.torn.is_empty();
                torn += u64::from(t);
                t
            }
            Err(strata::Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, ev_name, "{case}");
                assert!(offset <= data.len() as u64, "{case}: offset {offset}");
                reported += 1;
                true
            }
            Err(e) => panic!("{case}: {e}"),
        };
        let r = run_check(&v);
        assert!(r.problems.is_empty(), "{case}: {:?}", r.problems);
        if damaged {
            assert!(
                r.warnings.iter().any(|w| w.file == ev_name),
                "{case}: check did not warn: {:?}",
                r.warnings
            );
        }
        let o = Options {
            vfs: Some(Arc::new(v.clone()) as Arc<dyn Vfs>),
            ..Options::default()
        };
        let ro = Db::open_read_only(DIR, o).unwrap_or_else(|e| panic!("{case}: {e}"));
        drop(ro);
        assert!(
            read_all(&v, &events).unwrap() == *data,
            "{case}: a read-only open changed EVENTS"
        );
        assert_eq!(contents(&v).as_ref(), Ok(&want), "{case}");
    }
    eprintln!(
        "EVENTS corruption cases: {} ({parsed} parse, {torn} of them with a torn last line \
         skipped; {reported} with damaged lines skipped and reported with an offset)",
        cases.len()
    );
    assert!(reported > 100 && parsed > 10, "{reported} {parsed}");
}

/// A crash that tears the last EVENTS line, then an open that records more
/// events: the log must still read (the torn line must not end up in the
/// middle, where it would be corruption).
#[test]
fn events_torn_by_a_crash_still_read_after_the_next_open() {
    let base = build();
    let events = Path::new(DIR).join("EVENTS");
    let text = read_all(&base, &events).unwrap();
    for cut in [text.len() - 1, text.len() - 10, text.len() / 2] {
        let v = fresh(&base);
        strata::vfs::write_all(&v, &events, &text[..cut]).unwrap();
        let o = Options {
            vfs: Some(Arc::new(v.clone()) as Arc<dyn Vfs>),
            ..Options::default()
        };
        let db = Db::open(DIR, o).unwrap();
        db.put(b"after", b"the crash").unwrap();
        db.flush().unwrap();
        db.close().unwrap();
        let p = strata::inspect::read_events_in(&v, Path::new(DIR))
            .unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        assert!(p.records.len() > 3, "cut at {cut}");
        let r = run_check(&v);
        assert!(
            !r.warnings.iter().any(|w| w.file.ends_with("EVENTS")),
            "cut at {cut}: {:?}",
            r.warnings
        );
    }
}

/// What is no database at all is refused by `check`, by `inspect` (the
/// visualiser's reader), by a read-only open and by repair alike, with the same
/// error kind and words, and none of them creates anything; a directory
/// with a MANIFEST but no CURRENT is a damaged database to `check` (a
/// problem in its report), and no database to the others. On the
/// operating system's file system: the in-memory ones have no
/// directories of their own.
#[test]
fn what_is_no_database_is_refused_alike_by_every_reader() {
    use strata::Error;
    let root = tempfile::tempdir().unwrap();
    let at = |p: &str| root.path().join(p);
    for d in ["empty", "rocks", "lost-current"] {
        std::fs::create_dir(at(d)).unwrap();
    }
    for (file, data) in [
        ("a-file", &b"text"[..]),
        ("rocks/IDENTITY", &b"0123"[..]),
        ("rocks/000004.sst", &b"x"[..]),
        ("lost-current/MANIFEST-000007", &b""[..]),
    ] {
        std::fs::write(at(file), data).unwrap();
    }
    let kind = |e: &Error| match e {
        Error::NotFound { .. } => "NotFound",
        Error::NotADatabase { .. } => "NotADatabase",
        _ => "other",
    };
    let tree = || -> Vec<String> {
        let mut names = Vec::new();
        let mut dirs = vec![root.path().to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                names.push(p.display().to_string());
                if p.is_dir() {
                    dirs.push(p);
                }
            }
        }
        names.sort();
        names
    };
    let before = tree();
    for (dir, want) in [
        ("nothing-here", "NotFound"),
        ("a-file", "NotADatabase"),
        ("empty", "NotADatabase"),
        ("rocks", "NotADatabase"),
    ] {
        let p = at(dir);
        let checked = strata::check::check_dir(&p).map(|_| ()).unwrap_err();
        assert_eq!(kind(&checked), want, "check {dir}: {checked}");
        let read = strata::inspect::read_manifest(&p).map(|_| ()).unwrap_err();
        assert_eq!(kind(&read), want, "inspect {dir}: {read}");
        let opened = Db::open_read_only(&p, Options::default())
            .map(|_| ())
            .unwrap_err();
        assert_eq!(kind(&opened), want, "open {dir}: {opened}");
        // Repair refuses what has no MANIFEST at all the same way.
        let repaired = Db::repair(&p, Options::default()).map(|_| ()).unwrap_err();
        assert_eq!(kind(&repaired), want, "repair {dir}: {repaired}");
        // The same sentence up to the reason, whoever refuses.
        let head = |e: &Error| e.to_string().split(':').next().map(str::to_string);
        assert_eq!(head(&checked), head(&opened), "{dir}");
        assert_eq!(head(&read), head(&opened), "{dir}");
    }
    let p = at("lost-current");
    let r = strata::check::check_dir(&p).unwrap();
    assert!(
        r.problems.iter().any(|f| f.file.ends_with("CURRENT")),
        "{:?}",
        r.problems
    );
    let read = strata::inspect::read_manifest(&p).map(|_| ()).unwrap_err();
    assert_eq!(kind(&read), "NotADatabase", "{read}");
    assert!(read.to_string().contains("strata repair"), "{read}");
    assert_eq!(before, tree(), "a reader created or removed something");
}

/// A database in use (its LOCK held) is reported as such, and a table no
/// version names is then worded as work in progress, not a crash's
/// leftover; the probe neither takes the lock nor creates a LOCK file.
#[test]
fn a_database_in_use_is_said_to_be_and_its_stray_table_is_work_in_progress() {
    use strata::vfs::{LockState, MemVfs};
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let db = Db::open(&dir, Options::default()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    let live = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    std::fs::copy(&live, dir.join("999999.sst")).unwrap();
    let stray = |r: &CheckReport| {
        r.warnings
            .iter()
            .find(|w| w.file.ends_with("999999.sst"))
            .unwrap()
            .what
            .clone()
    };
    let r = strata::check::check_dir(&dir).unwrap();
    assert_eq!(r.in_use, LockState::HeldHere);
    let w = stray(&r);
    assert!(
        w.contains("in progress") && !w.contains("left by a crash"),
        "{w}"
    );
    // The lock is still the Db's: this process cannot take it twice.
    assert!(Db::open(&dir, Options::default()).is_err());
    db.close().unwrap();
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    let r = strata::check::check_dir(&dir).unwrap();
    assert_eq!(r.in_use, LockState::Free);
    assert!(stray(&r).contains("left by a crash"), "{}", stray(&r));
    assert!(!dir.join("LOCK").exists(), "check created LOCK");

    // An in-memory file system tells too.
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let o = Options {
        vfs: Some(Arc::clone(&vfs)),
        ..Options::default()
    };
    let db = Db::open("/m", o).unwrap();
    assert_eq!(
        check(vfs.as_ref(), Path::new("/m")).unwrap().in_use,
        LockState::HeldHere
    );
    db.close().unwrap();
    assert_eq!(
        check(vfs.as_ref(), Path::new("/m")).unwrap().in_use,
        LockState::Free
    );
}
