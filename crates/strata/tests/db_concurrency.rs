//! Four writers and two readers at once: every reader must see a prefix of
//! each writer's sequence of keys (no gaps, never going back), while
//! memtables rotate and flush underneath. Run with the commit pipeline
//! both ways (`Options::pipelined_commit` off, the default, and on, where
//! write groups insert at once and must publish in order). Two groups are
//! rarely in flight at once here (a publish without waiting for the group
//! before it passed three runs); the commit unit tests force that overlap
//! (`a_pipelined_group_publishes_after_the_group_before_it`), this test
//! covers the rest of the write path with the option on.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use strata::sstable::SstOptions;
use strata::vfs::{MemVfs, Vfs};
use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

const WRITERS: usize = 4;
const PER_WRITER: u64 = 20_000;

fn key(w: usize, i: u64) -> Vec<u8> {
    format!("w{w}-{i:08}").into_bytes()
}

#[test]
fn readers_see_prefixes_of_every_writer() {
    readers_see_prefixes(false);
}

#[test]
fn readers_see_prefixes_of_every_writer_pipelined() {
    readers_see_prefixes(true);
}

fn readers_see_prefixes(pipelined_commit: bool) {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let opts = Options {
        memtable_size: 64 << 10,
        pipelined_commit,
        vfs: Some(vfs),
        sst: SstOptions {
            block_size: 1024,
            ..SstOptions::default()
        },
        ..Options::default()
    };
    let db = Arc::new(Db::open("/db", opts).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let db = Arc::clone(&db);
        writers.push(std::thread::spawn(move || {
            let mut i = 0;
            while i < PER_WRITER {
                // Mix single puts and small batches.
                if i % 7 == 0 && i + 3 <= PER_WRITER {
                    let mut b = WriteBatch::new();
                    for j in i..i + 3 {
                        b.put(key(w, j), j.to_le_bytes());
                    }
                    db.write(
                        b,
                        &WriteOptions {
                            sync: i % 1000 == 0,
                        },
                    )
                    .unwrap();
                    i += 3;
                } else {
                    db.put(key(w, i), i.to_le_bytes()).unwrap();
                    i += 1;
                }
            }
        }));
    }
    let mut readers = Vec::new();
    for r in 0..2 {
        let db = Arc::clone(&db);
        let stop = Arc::clone(&stop);
        readers.push(std::thread::spawn(move || {
            let mut seen = [0u64; WRITERS];
            let mut scans = 0;
            loop {
                // A scan that starts after `stop` sees every write.
                let stopping = stop.load(Ordering::SeqCst);
                for (w, last) in seen.iter_mut().enumerate() {
                    let opts = ReadOptions {
                        lower: Some(format!("w{w}-").into_bytes()),
                        upper: Some(format!("w{w}.").into_bytes()),
                        ..ReadOptions::default()
                    };
                    let mut it = db.raw_iter(&opts).unwrap();
                    if r == 0 {
                        it.seek_to_first();
                    } else {
                        it.seek_to_last();
                    }
                    let mut n = 0u64;
                    let mut keys = Vec::new();
                    while it.valid() {
                        keys.push(it.key().unwrap().to_vec());
                        let v = u64::from_le_bytes(it.value().unwrap().try_into().unwrap());
                        assert_eq!(it.key().unwrap(), key(w, v).as_slice(), "value matches key");
                        n += 1;
                        if r == 0 {
                            it.next();
                        } else {
                            it.prev();
                        }
                    }
                    it.status().unwrap();
                    if r == 1 {
                        keys.reverse();
                    }
                    for (i, k) in keys.iter().enumerate() {
                        assert_eq!(k, &key(w, i as u64), "reader {r} saw a gap in writer {w}");
                    }
                    assert!(
                        n >= *last,
                        "reader {r} went back in writer {w}: {n} < {last}"
                    );
                    *last = n;
                    // Point reads agree with the scan's prefix.
                    if n > 0 {
                        assert!(db.get(key(w, n - 1)).unwrap().is_some());
                    }
                }
                scans += 1;
                if stopping && scans >= 3 {
                    break;
                }
            }
            seen
        }));
    }
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    for r in readers {
        let seen = r.join().unwrap();
        assert_eq!(
            seen, [PER_WRITER; WRITERS],
            "the last scan sees every write"
        );
    }
    for w in 0..WRITERS {
        for i in (0..PER_WRITER).step_by(997) {
            assert_eq!(db.get(key(w, i)).unwrap(), Some(i.to_le_bytes().to_vec()));
        }
    }
    // Counted once the queued flushes are done (the flush thread runs at
    // a lower priority and may still be writing the last one).
    db.wait_for_compactions().unwrap();
    assert!(
        db.metrics().flushes > 0,
        "the test should have flushed memtables"
    );
}

/// Four writers overwrite their own small sets of keys with single puts, in
/// random order, while the others write beside them: each put then finds
/// the pipeline busy and looks up its key's place in the memtable before
/// it queues (the commit pipeline's insert hint), often in a memtable that
/// rotates before the put leads, and inserts ahead of the key's older
/// entries. Afterwards, and after a reopen, every key holds the last value
/// its writer wrote.
#[test]
fn overwrites_from_writers_side_by_side_keep_the_newest() {
    use rand::{rngs::StdRng, Rng, SeedableRng};
    const KEYS: u64 = 300;
    const PUTS: u64 = 15_000;
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let opts = || Options {
        memtable_size: 64 << 10,
        vfs: Some(Arc::clone(&vfs)),
        ..Options::default()
    };
    let db = Arc::new(Db::open("/db", opts()).unwrap());
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(w as u64);
                let mut last = vec![None; KEYS as usize];
                for n in 0..PUTS {
                    let k = rng.gen_range(0..KEYS);
                    if n % 11 == 0 {
                        db.delete(key(w, k)).unwrap();
                        last[k as usize] = None;
                    } else {
                        db.put(key(w, k), n.to_le_bytes()).unwrap();
                        last[k as usize] = Some(n.to_le_bytes().to_vec());
                    }
                }
                last
            })
        })
        .collect();
    let last: Vec<Vec<Option<Vec<u8>>>> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    let check = |db: &Db, when: &str| {
        for (w, keys) in last.iter().enumerate() {
            for (k, want) in keys.iter().enumerate() {
                let got = db.get(key(w, k as u64)).unwrap();
                assert_eq!(&got, want, "writer {w} key {k} {when}");
            }
        }
    };
    check(&db, "before the reopen");
    db.wait_for_compactions().unwrap();
    assert!(db.metrics().flushes > 0, "memtables should have rotated");
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
    let db = Db::open("/db", opts()).unwrap();
    check(&db, "after the reopen");
}
