use super::skiplist::{node_size, MAX_HEIGHT};
use super::*;
use crate::key::{compare_internal, make_internal_key, seek_key};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};

/// An internal key ordered as the memtable orders it.
#[derive(Clone, PartialEq, Eq, Debug)]
struct IKey(Vec<u8>);

impl Ord for IKey {
    fn cmp(&self, o: &Self) -> Ordering {
        compare_internal(&self.0, &o.0)
    }
}

impl PartialOrd for IKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

#[test]
fn memtable_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<MemTable>();
    check::<Arc<MemTable>>();
    check::<MemTableIter>();
}

/// Short user keys over a tiny alphabet including 0x00 and 0xff, so that
/// empty keys, prefixes and many versions per key all occur.
fn random_user_key(rng: &mut StdRng) -> Vec<u8> {
    const ALPHABET: [u8; 4] = [0x00, 0x01, b'a', 0xff];
    let len = rng.gen_range(0..=3);
    (0..len).map(|_| ALPHABET[rng.gen_range(0..4)]).collect()
}

fn random_kind(rng: &mut StdRng) -> ValueKind {
    [
        ValueKind::Value,
        ValueKind::Value,
        ValueKind::Deletion,
        ValueKind::Merge,
        ValueKind::SingleDeletion,
    ][rng.gen_range(0..5)]
}

fn random_value(rng: &mut StdRng) -> Vec<u8> {
    // Mostly small; sometimes larger than a quarter of the 4 KiB test chunk
    // (a chunk of its own) or empty.
    let len = match rng.gen_range(0..20) {
        0 => 0,
        1 => rng.gen_range(1000..3000),
        _ => rng.gen_range(1..64),
    };
    (0..len).map(|_| rng.gen()).collect()
}

/// Compares the iterator's position with `pos` in `model`.
fn check_position(it: &MemTableIter, model: &[(Vec<u8>, Vec<u8>)], pos: Option<usize>, what: &str) {
    match pos {
        None => assert!(!it.valid(), "{what}: iterator valid, model exhausted"),
        Some(i) => {
            assert!(it.valid(), "{what}: iterator invalid, model at {i}");
            assert_eq!(it.key(), &model[i].0[..], "{what}: key");
            assert_eq!(it.value(), &model[i].1[..], "{what}: value");
        }
    }
}

/// Random adds, gets, seeks and walks in both directions, checked against a
/// `BTreeMap` ordered by internal key.
#[test]
fn matches_a_model() {
    let (seeds, ops) = if cfg!(miri) { (1, 150) } else { (40, 1500) };
    for seed in 0..seeds {
        let mut rng = StdRng::seed_from_u64(seed);
        let mem = Arc::new(MemTable::with_arena_chunk_size(seed, 4096));
        let mut model: BTreeMap<IKey, Vec<u8>> = BTreeMap::new();
        let mut tombstones: Vec<RangeTombstone> = Vec::new();
        let mut deletes = 0u64;
        let mut seqs: Vec<u64> = Vec::new();
        // Created before any add: must see everything added later.
        let mut it = mem.iter();
        assert!(mem.is_empty());
        for op in 0..ops {
            let snapshot: Vec<(Vec<u8>, Vec<u8>)> = model
                .iter()
                .map(|(k, v)| (k.0.clone(), v.clone()))
                .collect();
            match rng.gen_range(0..100) {
                0..=54 => {
                    let (uk, kind, value) = (
                        random_user_key(&mut rng),
                        random_kind(&mut rng),
                        random_value(&mut rng),
                    );
                    // A small sequence range, so exact duplicates occur.
                    let seq = rng.gen_range(0..300);
                    let ik = IKey(make_internal_key(&uk, seq, kind));
                    let fresh = !model.contains_key(&ik);
                    assert_eq!(
                        mem.add(seq, kind, &uk, &value),
                        fresh,
                        "seed {seed} op {op}"
                    );
                    if fresh {
                        model.insert(ik, value);
                        seqs.push(seq);
                        if matches!(kind, ValueKind::Deletion | ValueKind::SingleDeletion) {
                            deletes += 1;
                        }
                    }
                }
                55..=59 => {
                    let (a, b) = (random_user_key(&mut rng), random_user_key(&mut rng));
                    let seq = rng.gen_range(0..300);
                    let fresh = !tombstones.iter().any(|t| t.start == a && t.seq == seq);
                    assert_eq!(mem.add_range_tombstone(seq, &a, &b), fresh);
                    if fresh {
                        tombstones.push(RangeTombstone {
                            start: a,
                            end: b,
                            seq,
                        });
                        seqs.push(seq);
                    }
                }
                60..=74 => {
                    let uk = random_user_key(&mut rng);
                    let snap = rng.gen_range(0..320);
                    let want =
                        model
                            .range(IKey(seek_key(&uk, snap))..)
                            .next()
                            .and_then(|(k, v)| {
                                let p = ParsedKey::parse(&k.0).unwrap();
                                (p.user_key == uk).then(|| Found {
                                    seq: p.seq,
                                    kind: p.value_kind().unwrap(),
                                    value: v.clone(),
                                })
                            });
                    assert_eq!(
                        mem.get(&uk, snap),
                        want,
                        "seed {seed} op {op} get {uk:?}@{snap}"
                    );
                }
                75..=94 => {
                    // Seek (or seek_for_prev) to a random target, then walk
                    // a few steps in random directions.
                    let uk = random_user_key(&mut rng);
                    let target = if rng.gen_bool(0.5) {
                        seek_key(&uk, rng.gen_range(0..320))
                    } else {
                        make_internal_key(&uk, rng.gen_range(0..320), random_kind(&mut rng))
                    };
                    let mut pos;
                    if rng.gen_bool(0.5) {
                        it.seek(&target);
                        let i =
                            snapshot.partition_point(|(k, _)| compare_internal(k, &target).is_lt());
                        pos = (i < snapshot.len()).then_some(i);
                    } else {
                        it.seek_for_prev(&target);
                        let i =
                            snapshot.partition_point(|(k, _)| compare_internal(k, &target).is_le());
                        pos = i.checked_sub(1);
                    }
                    check_position(&it, &snapshot, pos, "seek");
                    for _ in 0..rng.gen_range(0..12) {
                        let Some(i) = pos else { break };
                        if rng.gen_bool(0.5) {
                            it.next();
                            pos = (i + 1 < snapshot.len()).then_some(i + 1);
                        } else {
                            it.prev();
                            pos = i.checked_sub(1);
                        }
                        check_position(&it, &snapshot, pos, "step");
                    }
                }
                _ => {
                    let mut fwd = Vec::new();
                    it.seek_to_first();
                    while it.valid() {
                        fwd.push((it.key().to_vec(), it.value().to_vec()));
                        it.next();
                    }
                    assert_eq!(fwd, snapshot, "seed {seed} op {op} forward");
                    let mut back = Vec::new();
                    it.seek_to_last();
                    while it.valid() {
                        back.push((it.key().to_vec(), it.value().to_vec()));
                        it.prev();
                    }
                    back.reverse();
                    assert_eq!(back, snapshot, "seed {seed} op {op} backward");
                }
            }
        }

        // Counters, bounds and tombstones.
        assert_eq!(mem.num_entries(), (model.len() + tombstones.len()) as u64);
        assert_eq!(mem.num_deletes(), deletes);
        assert_eq!(mem.num_range_deletes(), tombstones.len() as u64);
        assert_eq!(mem.is_empty(), model.is_empty() && tombstones.is_empty());
        assert_eq!(mem.first_seq(), seqs.iter().copied().min());
        assert_eq!(mem.last_seq(), seqs.iter().copied().max());
        tombstones.sort_by(|a, b| a.start.cmp(&b.start).then(b.seq.cmp(&a.seq)));
        assert_eq!(mem.range_tombstones(), tombstones);

        let point_keys: Vec<&[u8]> = model.keys().map(|k| key::user_key(&k.0)).collect();
        let live: Vec<&RangeTombstone> = tombstones.iter().filter(|t| t.start < t.end).collect();
        let smallest = point_keys
            .iter()
            .map(|k| k.to_vec())
            .chain(live.iter().map(|t| t.start.clone()))
            .min();
        let largest = point_keys
            .iter()
            .map(|k| k.to_vec())
            .chain(live.iter().map(|t| t.end.clone()))
            .max();
        assert_eq!(mem.smallest_user_key(), smallest);
        assert_eq!(mem.largest_user_key(), largest);
        for _ in 0..200 {
            let (a, b) = (random_user_key(&mut rng), random_user_key(&mut rng));
            let want = a <= b
                && (point_keys
                    .iter()
                    .any(|k| a.as_slice() <= *k && *k <= b.as_slice())
                    || live.iter().any(|t| t.start <= b && a < t.end));
            assert_eq!(mem.overlaps(&a, &b), want, "overlaps {a:?}..={b:?}");
        }
    }
}

#[test]
fn overlaps_points_and_tombstones() {
    let mem = MemTable::new(3);
    assert!(!mem.overlaps(b"a", b"z"));
    assert_eq!(mem.smallest_user_key(), None);
    assert_eq!(mem.first_seq(), None);
    assert_eq!(mem.last_seq(), None);
    mem.add(5, ValueKind::Value, b"d", b"1");
    mem.add(6, ValueKind::Deletion, b"f", b"");
    assert!(mem.overlaps(b"a", b"d"));
    assert!(mem.overlaps(b"d", b"d"));
    assert!(mem.overlaps(b"e", b"f"));
    assert!(!mem.overlaps(b"a", b"c"));
    assert!(!mem.overlaps(b"da", b"e"));
    assert!(!mem.overlaps(b"g", b"z"));
    assert!(!mem.overlaps(b"z", b"a"));
    // [m, p): covers m..=o\xff.., not p.
    mem.add_range_tombstone(7, b"m", b"p");
    assert!(mem.overlaps(b"n", b"n"));
    assert!(mem.overlaps(b"g", b"m"));
    assert!(mem.overlaps(b"o\xff", b"zz"));
    assert!(!mem.overlaps(b"p", b"zz"));
    assert!(!mem.overlaps(b"g", b"l"));
    // An empty tombstone covers nothing.
    mem.add_range_tombstone(8, b"x", b"x");
    assert!(!mem.overlaps(b"w", b"y"));
    assert_eq!(mem.smallest_user_key().as_deref(), Some(&b"d"[..]));
    assert_eq!(mem.largest_user_key().as_deref(), Some(&b"p"[..]));
    assert_eq!(mem.first_seq(), Some(5));
    assert_eq!(mem.last_seq(), Some(8));
    assert_eq!(mem.num_entries(), 4);
    assert_eq!(mem.num_deletes(), 1);
    assert_eq!(mem.num_range_deletes(), 2);
    // RangeDeletion through `add` is a tombstone, not a point entry.
    assert!(mem.add(9, ValueKind::RangeDeletion, b"a", b"b"));
    assert_eq!(mem.get(b"a", 100), None);
    assert_eq!(mem.range_tombstones()[0].start, b"a");
}

#[test]
fn get_respects_snapshots_and_kinds() {
    let mem = MemTable::new(1);
    mem.add(10, ValueKind::Value, b"k", b"v10");
    mem.add(20, ValueKind::Deletion, b"k", b"");
    mem.add(30, ValueKind::Merge, b"k", b"m30");
    assert_eq!(mem.get(b"k", 9), None);
    let at = |s| mem.get(b"k", s).map(|f| (f.seq, f.kind, f.value));
    assert_eq!(at(10), Some((10, ValueKind::Value, b"v10".to_vec())));
    assert_eq!(at(19), Some((10, ValueKind::Value, b"v10".to_vec())));
    assert_eq!(at(20), Some((20, ValueKind::Deletion, Vec::new())));
    assert_eq!(at(u64::MAX), Some((30, ValueKind::Merge, b"m30".to_vec())));
    assert_eq!(mem.get(b"j", u64::MAX), None);
    assert_eq!(mem.get(b"kk", u64::MAX), None);
    // Long keys take the heap path for the lookup key.
    let long = vec![b'x'; 500];
    mem.add(40, ValueKind::Value, &long, b"long");
    assert_eq!(mem.get(&long, 40).unwrap().value, b"long");
    assert_eq!(mem.get(&long[..499], 40), None);
}

/// 16-byte user key for entry `i`: a hash prefix spreads inserts all over
/// the list; the index suffix makes keys unique and lets a reader recover
/// `i` from any key it meets.
fn conc_key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&splitmix(i).to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn conc_index(user_key: &[u8]) -> u64 {
    u64::from_be_bytes(user_key[8..16].try_into().unwrap())
}

/// 100 bytes that depend on every bit of `i`, so a torn or stale read shows.
fn conc_value(i: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(100);
    let mut x = i;
    while v.len() < 100 {
        x = splitmix(x);
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(100);
    v
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Checks one entry a reader met: well-formed, with the writer's value.
fn check_entry(ikey: &[u8], value: &[u8]) {
    let p = ParsedKey::parse(ikey).expect("key shorter than trailer");
    assert_eq!(p.user_key.len(), 16);
    let i = conc_index(p.user_key);
    assert_eq!(p.user_key, conc_key(i), "torn key");
    assert_eq!(p.seq, i + 1);
    assert_eq!(p.kind, ValueKind::Value as u8);
    assert_eq!(value, conc_value(i), "torn value for entry {i}");
}

/// One reader's loop: full scans (checking order, contents and that every
/// entry published before the scan began is seen), short backward walks,
/// and gets of published keys, until `done`.
fn reader(mem: &Arc<MemTable>, published: &dyn Fn() -> Vec<u64>, done: &AtomicBool, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut it = mem.iter();
    loop {
        let last_round = done.load(Acquire);
        let before = published();
        let mut seen = std::collections::HashSet::new();
        it.seek_to_first();
        let mut prev: Option<Vec<u8>> = None;
        while it.valid() {
            check_entry(it.key(), it.value());
            if let Some(p) = &prev {
                assert!(compare_internal(p, it.key()).is_lt(), "scan out of order");
            }
            seen.insert(conc_index(key::user_key(it.key())));
            prev = Some(it.key().to_vec());
            it.next();
        }
        for &i in &before {
            assert!(seen.contains(&i), "scan missed published entry {i}");
        }

        it.seek_to_last();
        for _ in 0..50 {
            if !it.valid() {
                break;
            }
            let k = it.key().to_vec();
            check_entry(&k, it.value());
            it.prev();
            if it.valid() {
                assert!(compare_internal(it.key(), &k).is_lt(), "prev out of order");
            }
        }

        let published = published();
        for _ in 0..200 {
            if published.is_empty() {
                break;
            }
            let i = published[rng.gen_range(0..published.len())];
            let f = mem
                .get(&conc_key(i), MAX_SEQUENCE)
                .unwrap_or_else(|| panic!("get missed published entry {i}"));
            assert_eq!((f.seq, f.kind), (i + 1, ValueKind::Value));
            assert_eq!(f.value, conc_value(i), "torn get for {i}");
        }
        if last_round {
            return;
        }
    }
}

/// One writer (`add`) inserts entries in hash order while three readers
/// scan, walk backwards and get.
#[test]
fn one_writer_many_readers() {
    let n: u64 = if cfg!(miri) { 200 } else { 200_000 };
    let mem = Arc::new(MemTable::new(1));
    // Entries 0..inserted are published (the writer's Release store
    // follows each add).
    let inserted = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let published = || {
        // Sample published indices: the first, the last and a spread.
        let m = inserted.load(Acquire) as u64;
        let mut v: Vec<u64> = (0..m).step_by((m as usize / 2000).max(1)).collect();
        if m > 0 {
            v.push(m - 1);
        }
        v
    };
    std::thread::scope(|s| {
        for r in 0..3 {
            let (mem, done, published) = (&mem, &done, &published);
            s.spawn(move || reader(mem, published, done, r));
        }
        for i in 0..n {
            assert!(mem.add(i + 1, ValueKind::Value, &conc_key(i), &conc_value(i)));
            inserted.store(i as usize + 1, Release);
        }
        done.store(true, Release);
    });
    assert_eq!(mem.num_entries(), n);
    let mut it = mem.iter();
    it.seek_to_first();
    let mut count = 0;
    while it.valid() {
        check_entry(it.key(), it.value());
        count += 1;
        it.next();
    }
    assert_eq!(count, n);
    assert_eq!(mem.first_seq(), Some(1));
    assert_eq!(mem.last_seq(), Some(n));
}

/// Three writers (`add_concurrent`) insert interleaved entries while two
/// readers check what they see; then the memtable holds exactly everything.
#[test]
fn concurrent_writers_and_readers() {
    let n: u64 = if cfg!(miri) { 150 } else { 150_000 };
    const WRITERS: u64 = 3;
    let mem = Arc::new(MemTable::new(2));
    // progress[w]: writer w has published its entries i < progress[w] with
    // i % WRITERS == w.
    let progress: Vec<AtomicUsize> = (0..WRITERS).map(|_| AtomicUsize::new(0)).collect();
    let done = AtomicBool::new(false);
    let finished = AtomicUsize::new(0);
    let published = || {
        let mut v = Vec::new();
        for (w, p) in progress.iter().enumerate() {
            let m = p.load(Acquire) as u64;
            let step = (m as usize / 1000).max(1) * WRITERS as usize;
            v.extend((w as u64..m).step_by(step));
        }
        v
    };
    std::thread::scope(|s| {
        for r in 0..2 {
            let (mem, done, published) = (&mem, &done, &published);
            s.spawn(move || reader(mem, published, done, 10 + r));
        }
        for w in 0..WRITERS {
            let (mem, progress, finished, done) = (&mem, &progress, &finished, &done);
            s.spawn(move || {
                for i in (w..n).step_by(WRITERS as usize) {
                    assert!(mem.add_concurrent(
                        i + 1,
                        ValueKind::Value,
                        &conc_key(i),
                        &conc_value(i)
                    ));
                    progress[w as usize].store(i as usize + 1, Release);
                }
                if finished.fetch_add(1, AcqRel) + 1 == WRITERS as usize {
                    done.store(true, Release);
                }
            });
        }
    });
    assert_eq!(mem.num_entries(), n);
    mem.points.check_invariants().unwrap();
    for i in 0..n {
        let f = mem.get(&conc_key(i), MAX_SEQUENCE).expect("entry lost");
        assert_eq!(f.value, conc_value(i));
    }
    // A duplicate is refused by either path.
    assert!(!mem.add_concurrent(1, ValueKind::Value, &conc_key(0), b"x"));
    assert!(!mem.add(1, ValueKind::Value, &conc_key(0), b"x"));
}

/// Memory usage grows by exactly each node's arena size (plus a chunk's
/// abandoned tail when a new chunk opens), about key + value + 8-byte
/// trailer + 8-byte header + 8 bytes per tower level.
#[test]
fn arena_accounting() {
    let n = if cfg!(miri) { 300 } else { 20_000 };
    let chunk = 64 << 10;
    let mem = MemTable::with_arena_chunk_size(9, chunk);
    let heads = 2 * node_size(MAX_HEIGHT, 0, 0);
    assert_eq!(mem.approximate_memory_usage(), heads);
    assert_eq!(mem.allocated_bytes(), chunk);
    let sizes: Vec<usize> = (1..=MAX_HEIGHT)
        .map(|h| node_size(h, 16 + 8, 100).next_multiple_of(8))
        .collect();
    // A one-level node: 8 (link) + 8 (header) + 24 (key) + 100 (value).
    assert_eq!(sizes[0], 144);
    let mut rng = StdRng::seed_from_u64(3);
    let mut total = 0;
    let mut tails = 0;
    for i in 0..n {
        let before = mem.approximate_memory_usage();
        let chunks_before = mem.allocated_bytes();
        let key: [u8; 16] = rng.gen();
        mem.add(i + 1, ValueKind::Value, &key, &[7u8; 100]);
        let grew = mem.approximate_memory_usage() - before;
        let tail = if mem.allocated_bytes() > chunks_before {
            // A new chunk: the old one's tail (smaller than any node) joins
            // the usage.
            chunks_before - before
        } else {
            0
        };
        assert!(tail < sizes[MAX_HEIGHT - 1]);
        assert!(
            sizes.contains(&(grew - tail)),
            "entry {i} grew usage by {grew}"
        );
        total += grew - tail;
        tails += tail;
    }
    let usage = mem.approximate_memory_usage();
    assert_eq!(usage, heads + total + tails);
    assert!(mem.allocated_bytes() >= usage);
    assert_eq!(mem.allocated_bytes() % chunk, 0);
    // Expected tower height 4/3: 144 + 8/3 bytes per entry on average.
    if !cfg!(miri) {
        let per_entry = total as f64 / n as f64;
        assert!(
            (per_entry - (144.0 + 8.0 / 3.0)).abs() < 0.5,
            "{per_entry} bytes per entry"
        );
    }

    // A value larger than a quarter chunk gets a chunk of its own; the
    // current chunk's tail is not abandoned.
    let before = mem.approximate_memory_usage();
    let big = vec![1u8; chunk / 2];
    mem.add(n + 1, ValueKind::Value, b"big", &big);
    let grew = mem.approximate_memory_usage() - before;
    assert!((1..=MAX_HEIGHT).any(|h| grew == node_size(h, 3 + 8, big.len()).next_multiple_of(8)));
    assert_eq!(mem.get(b"big", MAX_SEQUENCE).unwrap().value, big);
}
