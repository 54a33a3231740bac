//! Every read at a snapshot sees exactly a prefix of the sequence numbers:
//! all writes numbered at or below the snapshot's sequence, none above.
//!
//! Several writers commit at once (single puts and batches, so write
//! groups form and their members insert in parallel) while readers take
//! snapshots and, at each, look up the newest keys of every writer (the
//! writes most likely still being inserted) and now and then scan
//! everything. Memtables rotate and flush underneath. No reader knows a
//! write's sequence number while it runs: the test records what it saw
//! and, once the database is closed, learns every key's sequence number
//! from the WAL records (every byte written to any WAL is kept by the file
//! system wrapper, so WALs deleted after a flush still count), then checks
//! each observation against them.
//!
//! This catches a group published before all its members have inserted
//! (a snapshot sees a later write but not an earlier one) and inserts
//! that lose entries (a write is missing at every later snapshot). Each
//! writer also reads its own write back once `write` returns, and each
//! reader checks that the visible sequence never goes back: pipelined
//! groups publishing out of order fail both.

#![allow(clippy::unwrap_used)] // tests may unwrap

#[path = "support/gated_vfs.rs"]
mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use strata::sstable::SstOptions;
use strata::vfs::{MemVfs, Vfs, WritableFile};
use strata::wal::reader::{LogReader, TailPolicy};
use strata::{BatchOp, Db, Options, WriteBatch, WriteOptions};
use support::{CreateGate, GatedVfs};

const WRITERS: u64 = 8;
const PER_WRITER: u64 = 2_000;
const READERS: usize = 2;

fn key(w: u64, i: u64) -> Vec<u8> {
    format!("w{w}-{i:06}").into_bytes()
}

/// Keeps a copy of every byte appended to a WAL (`*.log`), by file name.
#[derive(Default)]
struct WalTee {
    wals: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
}

struct TeeFile {
    name: String,
    file: Box<dyn WritableFile>,
    wals: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
}

impl WritableFile for TeeFile {
    fn append(&mut self, data: &[u8]) -> strata::Result<()> {
        self.file.append(data)?;
        let mut w = self.wals.lock().unwrap();
        w.entry(self.name.clone())
            .or_default()
            .extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> strata::Result<()> {
        self.file.flush()
    }
    fn sync(&mut self) -> strata::Result<()> {
        // A sync that takes a while, as on a disk: writers queue up behind
        // a synced group, so large groups form.
        std::thread::sleep(std::time::Duration::from_micros(50));
        self.file.sync()
    }
    fn len(&self) -> u64 {
        self.file.len()
    }
}

impl CreateGate for WalTee {
    fn before_create(&self, _path: &Path) {}
    fn wrap(&self, path: &Path, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".log") {
            return file;
        }
        Box::new(TeeFile {
            name,
            file,
            wals: Arc::clone(&self.wals),
        })
    }
}

/// What a reader saw at snapshots.
#[derive(Default)]
struct Seen {
    /// `(seq, w << 24 | i << 1 | found)`: write `i` of writer `w` was (or
    /// was not) visible at `seq`. Packed: readers record millions.
    points: Vec<(u64, u32)>,
    /// `(seq, count, sum)`: a scan at `seq` saw `count` keys whose hashes
    /// sum to `sum`.
    scans: Vec<(u64, u64, u64)>,
}

fn hash(k: &[u8]) -> u64 {
    // FNV-1a: any fixed hash does; the sum of a set's hashes tells sets of
    // the same size apart.
    k.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Every key's sequence number, from the WAL records.
fn sequence_numbers(wals: &BTreeMap<String, Vec<u8>>) -> HashMap<Vec<u8>, u64> {
    let vfs = MemVfs::new();
    vfs.create_dir_all(Path::new("/wal")).unwrap();
    let mut seqs = HashMap::new();
    for (name, bytes) in wals {
        let p = Path::new("/wal").join(name);
        strata::vfs::write_all(&vfs, &p, bytes).unwrap();
        let mut r = LogReader::new(vfs.open_sequential(&p).unwrap(), name, TailPolicy::Strict);
        while let Some(rec) = r.read_record().unwrap() {
            let first = u64::from_le_bytes(rec[..8].try_into().unwrap());
            let b = WriteBatch::from_bytes(rec).unwrap();
            for (seq, op) in (first..).zip(b.iter()) {
                match op.unwrap() {
                    BatchOp::Put(k, _) => {
                        assert!(
                            seqs.insert(k.to_vec(), seq).is_none(),
                            "{} written twice",
                            String::from_utf8_lossy(k)
                        );
                    }
                    other => panic!("unexpected op {other:?}"),
                }
            }
        }
    }
    seqs
}

#[test]
fn every_snapshot_sees_a_prefix_of_sequence_numbers() {
    prefix_under(false);
}

/// The same with pipelined write groups (`Options::pipelined_commit`).
#[test]
fn every_snapshot_sees_a_prefix_with_pipelined_groups() {
    prefix_under(true);
}

fn prefix_under(pipelined_commit: bool) {
    let vfs = Arc::new(GatedVfs::with_gate(WalTee::default()));
    let opts = Options {
        pipelined_commit,
        memtable_size: 256 << 10,
        vfs: Some(Arc::clone(&vfs) as Arc<dyn Vfs>),
        sst: SstOptions {
            block_size: 1024,
            ..SstOptions::default()
        },
        ..Options::default()
    };
    let db = Arc::new(Db::open("/db", opts).unwrap());
    // Per writer: how many of its writes have started (a reader looks up
    // the newest of those).
    let started: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (db, started) = (Arc::clone(&db), Arc::clone(&started));
        writers.push(std::thread::spawn(move || {
            let mut i = 0;
            // Counted in batches, not keys: counting keys (`i % 40`), the
            // first 200-key batch kept `i` a multiple of 40, and every
            // batch was a large one.
            let mut batch = 0u64;
            while i < PER_WRITER {
                // Now and then a large batch: its insert takes far longer
                // than framing the small groups behind it, so pipelined
                // groups finish out of order and must wait to publish.
                let n = if batch.is_multiple_of(8) {
                    200.min(PER_WRITER - i)
                } else if batch.is_multiple_of(3) {
                    16.min(PER_WRITER - i)
                } else {
                    1
                };
                batch += 1;
                started[w as usize].store(i + n, Ordering::SeqCst);
                // Now and then a pause between announcing a write and
                // making it: readers then surely look up a write that is
                // not visible yet (the race this test needs, which on a
                // loaded 2-core machine could otherwise not happen at all:
                // "lookups never raced the writes" failed once that way).
                if batch % 4 == 1 {
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
                let mut b = WriteBatch::new();
                for j in i..i + n {
                    b.put(key(w, j), j.to_le_bytes());
                }
                db.write(b, &WriteOptions { sync: i % 3 == 0 }).unwrap();
                // Read your writes: once `write` returns, the write is
                // published (with pipelined groups, only after every
                // group before it).
                assert!(
                    db.get(key(w, i + n - 1)).unwrap().is_some(),
                    "writer {w}: write {} not visible after it returned",
                    i + n - 1
                );
                i += n;
            }
        }));
    }
    let mut readers = Vec::new();
    for r in 0..READERS {
        let (db, started, stop) = (Arc::clone(&db), Arc::clone(&started), Arc::clone(&stop));
        readers.push(std::thread::spawn(move || {
            let mut seen = Seen::default();
            let mut round = 0u64;
            let mut last_seq = 0;
            // Bounded, to bound the test's memory (64 MiB a reader).
            while !stop.load(Ordering::SeqCst) && seen.points.len() < 1 << 22 {
                let snap = db.snapshot();
                let seq = snap.sequence();
                // Groups publish in sequence order: the visible sequence
                // only grows.
                assert!(
                    seq >= last_seq,
                    "visible sequence went back from {last_seq} to {seq}"
                );
                last_seq = seq;
                // The newest write of every writer first: the one most
                // likely still being inserted.
                for back in 1..=2 {
                    for w in 0..WRITERS {
                        let n = started[w as usize].load(Ordering::SeqCst);
                        let Some(i) = n.checked_sub(back) else {
                            continue;
                        };
                        let found = snap.get(key(w, i)).unwrap().is_some();
                        let packed = (w as u32) << 24 | (i as u32) << 1 | u32::from(found);
                        seen.points.push((seq, packed));
                    }
                }
                round += 1;
                if round % 64 == r as u64 * 32 {
                    let (mut count, mut sum) = (0, 0u64);
                    for item in snap.iter() {
                        let (k, _) = item.unwrap();
                        count += 1;
                        sum = sum.wrapping_add(hash(&k));
                    }
                    seen.scans.push((seq, count, sum));
                }
            }
            seen
        }));
    }
    // A writer that panics inside a group leaves the others waiting for it
    // forever: report the panic (or a hang) instead of hanging the test.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !writers.is_empty() {
        if let Some(at) = writers.iter().position(|w| w.is_finished()) {
            if let Err(e) = writers.swap_remove(at).join() {
                std::panic::resume_unwind(e);
            }
            continue;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the writers are stuck"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<Seen> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    // A flush a rotation queued may still be running (the flush thread
    // runs at a lower priority, `Options::background_nice`): the count is
    // read once the queue has drained.
    db.wait_for_compactions().unwrap();
    let flushes = db.metrics().flushes;
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();

    let seqs = sequence_numbers(&vfs.wals.lock().unwrap());
    assert_eq!(
        seqs.len() as u64,
        WRITERS * PER_WRITER,
        "every write is in the WAL"
    );
    // Sequence numbers are 1..=N, one per write, so a prefix is a count.
    let mut by_seq: Vec<(u64, u64)> = seqs.iter().map(|(k, &s)| (s, hash(k))).collect();
    by_seq.sort_unstable();
    for (i, (s, _)) in by_seq.iter().enumerate() {
        assert_eq!(*s, i as u64 + 1, "sequence numbers leave a gap");
    }
    let mut prefix_sum = vec![0u64; by_seq.len() + 1];
    for (i, (_, h)) in by_seq.iter().enumerate() {
        prefix_sum[i + 1] = prefix_sum[i].wrapping_add(*h);
    }
    let (mut points, mut scans, mut misses) = (0, 0, 0);
    for &(seq, packed) in seen.iter().flat_map(|s| &s.points) {
        let (w, i, found) = (packed >> 24, (packed >> 1) & 0x7f_ffff, packed & 1 == 1);
        let key = key(u64::from(w), u64::from(i));
        let at = seqs[&key];
        assert_eq!(
            found,
            at <= seq,
            "a snapshot at {seq} {} {} (written at {at})",
            if found { "sees" } else { "misses" },
            String::from_utf8_lossy(&key)
        );
        points += 1;
        misses += usize::from(!found);
    }
    for &(seq, count, sum) in seen.iter().flat_map(|s| &s.scans) {
        let n = (seq as usize).min(by_seq.len());
        assert_eq!(
            (count, sum),
            (n as u64, prefix_sum[n]),
            "a scan at {seq} does not see exactly the writes numbered up to it"
        );
        scans += 1;
    }
    eprintln!(
        "checked {points} lookups ({misses} not yet visible) and {scans} scans; {flushes} flushes"
    );
    // The test means something only if reads raced the writes and the
    // memtables rotated underneath.
    assert!(
        misses > 0 && points > misses,
        "lookups never raced the writes"
    );
    assert!(scans > 0, "no scan ran");
    assert!(flushes > 0, "the test should have flushed memtables");
}
