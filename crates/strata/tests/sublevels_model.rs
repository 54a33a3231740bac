//! Randomized tests of `L0Sublevels` against brute force: random L0 files
//! (random bounds, sequence numbers, sizes, some ending in a range
//! tombstone's exclusive sentinel), random compacting files, and a run of
//! random base and intra-L0 picks, each marked compacting in turn.
//!
//! Set `STRATA_SEED` to replay one seed.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;
use strata::key::{make_internal_key, ValueKind, MAX_SEQUENCE};
use strata::version::{FileMeta, L0Pick, L0Sublevels};

/// A file's user-key extent: `[lo, hi]`, or `[lo, hi)` if `!inclusive`.
struct Span {
    lo: Vec<u8>,
    hi: Vec<u8>,
    inclusive: bool,
}

fn span(f: &FileMeta) -> Span {
    let p = strata::key::ParsedKey::parse(&f.largest).expect("largest key");
    Span {
        lo: f.smallest_user_key().to_vec(),
        hi: f.largest_user_key().to_vec(),
        inclusive: !(p.seq == MAX_SEQUENCE && p.kind == ValueKind::RangeDeletion as u8),
    }
}

/// True if point `k` lies in `s`.
fn covers(s: &Span, k: &[u8]) -> bool {
    s.lo.as_slice() <= k && (k < s.hi.as_slice() || (s.inclusive && k == s.hi.as_slice()))
}

fn overlap(a: &Span, b: &Span) -> bool {
    covers(a, &b.lo) || covers(b, &a.lo)
}

fn older(a: &FileMeta, b: &FileMeta) -> bool {
    (a.largest_seq, a.number) < (b.largest_seq, b.number)
}

fn random_key(rng: &mut StdRng) -> Vec<u8> {
    (0..rng.gen_range(1..=2))
        .map(|_| b"abcdefgh"[rng.gen_range(0..8)])
        .collect()
}

fn random_files(rng: &mut StdRng, n: usize, max_seq: u64) -> Vec<Arc<FileMeta>> {
    let mut numbers: Vec<u64> = (1..=n as u64).collect();
    numbers.shuffle(rng);
    numbers
        .into_iter()
        .map(|number| {
            let (mut lo, mut hi) = (random_key(rng), random_key(rng));
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            let seq = rng.gen_range(1..=max_seq);
            let small = rng.gen_range(1..=seq);
            let largest = if lo < hi && rng.gen_bool(0.25) {
                make_internal_key(&hi, MAX_SEQUENCE, ValueKind::RangeDeletion)
            } else {
                make_internal_key(&hi, seq, ValueKind::Value)
            };
            Arc::new(FileMeta {
                number,
                size: rng.gen_range(1..=200),
                smallest: make_internal_key(&lo, small, ValueKind::Value),
                largest,
                smallest_seq: small,
                largest_seq: seq,
                global_seqno: None,
                num_entries: 1,
                num_deletions: 0,
                num_range_deletions: 0,
                backing: None,
            })
        })
        .collect()
}

/// Checks the structure of `s` built from `files`.
fn check_structure(files: &[Arc<FileMeta>], s: &L0Sublevels, compacting: &HashSet<u64>) {
    let spans: HashMap<u64, Span> = files.iter().map(|f| (f.number, span(f))).collect();
    let mut level_of = HashMap::new();
    for (level, fs) in s.sublevels().iter().enumerate() {
        assert!(!fs.is_empty(), "sublevel {level} is empty");
        for f in fs {
            assert!(level_of.insert(f.number, level).is_none(), "file twice");
        }
        for w in fs.windows(2) {
            let (a, b) = (&spans[&w[0].number], &spans[&w[1].number]);
            assert!(a.lo < b.lo, "sublevel {level} not sorted");
            assert!(!overlap(a, b), "sublevel {level} overlaps");
        }
    }
    assert_eq!(level_of.len(), files.len());
    assert_eq!(s.num_sublevels(), s.sublevels().len());

    for f in files {
        // Each file sits right above the highest older file it overlaps.
        let want = files
            .iter()
            .filter(|g| older(g, f) && overlap(&spans[&g.number], &spans[&f.number]))
            .map(|g| level_of[&g.number] + 1)
            .max()
            .unwrap_or(0);
        assert_eq!(level_of[&f.number], want, "sublevel of file {}", f.number);
    }

    // Depth at a point: the sublevels holding a file that covers it. The
    // deepest point is some file's smallest key.
    let depth = |count: &dyn Fn(&FileMeta) -> bool| {
        files
            .iter()
            .map(|p| {
                s.sublevels()
                    .iter()
                    .filter(|fs| {
                        fs.iter()
                            .any(|f| count(f) && covers(&spans[&f.number], &spans[&p.number].lo))
                    })
                    .count()
            })
            .max()
            .unwrap_or(0)
    };
    assert_eq!(s.read_amplification(), depth(&|_| true));
    assert_eq!(
        s.max_depth_after_ongoing(),
        depth(&|f| !compacting.contains(&f.number))
    );
    assert!(s.read_amplification() <= s.num_sublevels());

    let keys = s.flush_split_keys();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "split keys ascending");
}

/// Every file an L0 -> Lbase pick of `f` has to take along: the older files
/// overlapping it, transitively.
fn base_closure(files: &[Arc<FileMeta>], f: &FileMeta) -> Vec<u64> {
    let mut out = vec![f.number];
    let mut seen: HashSet<u64> = out.iter().copied().collect();
    let mut i = 0;
    while i < out.len() {
        let cur = files.iter().find(|g| g.number == out[i]).expect("file");
        for g in files {
            if older(g, cur) && overlap(&span(g), &span(cur)) && seen.insert(g.number) {
                out.push(g.number);
            }
        }
        i += 1;
    }
    out
}

fn check_pick(
    files: &[Arc<FileMeta>],
    p: &L0Pick,
    compacting: &HashSet<u64>,
    base: bool,
    min_files: usize,
    unflushed: u64,
) {
    let picked: HashSet<u64> = p.files.iter().map(|f| f.number).collect();
    assert_eq!(picked.len(), p.files.len(), "a file picked twice");
    for f in &p.files {
        assert!(
            !compacting.contains(&f.number),
            "picked compacting {}",
            f.number
        );
        assert!(
            base || f.largest_seq < unflushed,
            "intra pick takes {} (seq {}) at or past the earliest unflushed {unflushed}",
            f.number,
            f.largest_seq
        );
    }
    for f in &p.files {
        for g in files {
            if picked.contains(&g.number) || !overlap(&span(f), &span(g)) {
                continue;
            }
            // Base: no older overlapping file left behind; intra: no newer
            // one it could take (one at or past the earliest unflushed
            // sequence number is newer than all it takes).
            let left_behind_wrong_side = if base {
                older(g, f)
            } else {
                older(f, g) && g.largest_seq < unflushed
            };
            assert!(
                !left_behind_wrong_side,
                "{} pick takes {} but leaves {}",
                if base { "base" } else { "intra" },
                f.number,
                g.number
            );
        }
    }
    assert_eq!(p.bytes, p.files.iter().map(|f| f.size).sum::<u64>());
    let spans: Vec<Span> = p.files.iter().map(|f| span(f)).collect();
    let lo = spans.iter().map(|s| s.lo.clone()).min().expect("files");
    let end = spans
        .iter()
        .map(|s| (s.hi.clone(), s.inclusive))
        .max()
        .expect("files");
    assert_eq!(p.smallest, lo);
    assert_eq!((p.largest.clone(), !p.largest_exclusive), end);
    assert!(p.seed_depth >= if base { 1 } else { min_files.max(2) });
}

/// Runs one random case; returns how many base and intra-L0 picks it made.
fn run_seed(seed: u64) -> (usize, usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = rng.gen_range(0..=40);
    let max_seq = rng.gen_range(1..=60);
    let files = random_files(&mut rng, n, max_seq);
    let split = rng.gen_range(0..=300);
    let mut s = L0Sublevels::new(&files, split);
    let mut compacting: HashSet<u64> = files
        .iter()
        .filter(|_| rng.gen_bool(0.1))
        .map(|f| f.number)
        .collect();
    s.set_compacting(&compacting);
    check_structure(&files, &s, &compacting);

    // Ranges of running L0 -> Lbase compactions, plus some random busy
    // Lbase ranges.
    let mut busy: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for _ in 0..rng.gen_range(0..=1) {
        let (mut a, mut b) = (random_key(&mut rng), random_key(&mut rng));
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        busy.push((a, b));
    }
    let mut picks = (0, 0);
    for _ in 0..20 {
        let base = rng.gen_bool(0.6);
        let max_bytes = rng.gen_range(1..=800);
        let min_files = rng.gen_range(0..=4);
        // The earliest sequence number in memory, for intra-L0 picks.
        let unflushed = if base || rng.gen_bool(0.4) {
            u64::MAX
        } else {
            rng.gen_range(1..=max_seq + 1)
        };
        let pick = if base {
            let b = busy.clone();
            let overlaps = move |lo: &[u8], hi: &[u8]| {
                b.iter()
                    .any(|(x, y)| lo <= y.as_slice() && x.as_slice() <= hi)
            };
            let mut p = s.pick_base_compaction(max_bytes, &overlaps, &|_, _| 0);
            // Sometimes widened as a count-triggered pick is, within a
            // random window around it (kept only clear of busy ranges, as
            // the picker's `build` keeps it clear of running outputs); the
            // result is checked like any base pick.
            if let Some(q) = p.as_ref().filter(|_| rng.gen_bool(0.5)) {
                let after = Some(random_key(&mut rng)).filter(|k| *k < q.smallest);
                let before = Some(random_key(&mut rng)).filter(|k| *k > q.largest);
                let wide = s.extend_base_pick(q, after.as_deref(), before.as_deref(), max_bytes);
                let had: HashSet<u64> = q.files.iter().map(|f| f.number).collect();
                let has: HashSet<u64> = wide.files.iter().map(|f| f.number).collect();
                assert!(had.is_subset(&has), "widening dropped a file");
                for f in wide.files.iter().filter(|f| !had.contains(&f.number)) {
                    assert!(after
                        .as_ref()
                        .is_none_or(|a| f.smallest_user_key() > a.as_slice()));
                    assert!(before
                        .as_ref()
                        .is_none_or(|b| f.largest_user_key() < b.as_slice()));
                }
                let added: u64 = wide
                    .files
                    .iter()
                    .filter(|f| !had.contains(&f.number))
                    .map(|f| f.size)
                    .sum();
                assert!(
                    added == 0 || wide.bytes <= max_bytes.max(q.bytes),
                    "over the budget"
                );
                if !overlaps(&wide.smallest, &wide.largest) {
                    p = Some(wide);
                }
            }
            match &p {
                Some(p) => assert!(!overlaps(&p.smallest, &p.largest)),
                None => {
                    // Nothing could be picked: every file's closure is busy.
                    for f in files.iter().filter(|f| !compacting.contains(&f.number)) {
                        let c = base_closure(&files, f);
                        let spans: Vec<Span> = files
                            .iter()
                            .filter(|g| c.contains(&g.number))
                            .map(|g| span(g))
                            .collect();
                        let lo = spans.iter().map(|s| s.lo.clone()).min().expect("files");
                        let hi = spans.iter().map(|s| s.hi.clone()).max().expect("files");
                        assert!(
                            c.iter().any(|n| compacting.contains(n)) || overlaps(&lo, &hi),
                            "no base pick, but file {} could go",
                            f.number
                        );
                    }
                }
            }
            p
        } else {
            s.pick_intra_l0_compaction(min_files, max_bytes, unflushed)
        };
        let Some(p) = pick else { continue };
        check_pick(&files, &p, &compacting, base, min_files, unflushed);
        if base {
            picks.0 += 1;
        } else {
            picks.1 += 1;
        }
        compacting.extend(p.files.iter().map(|f| f.number));
        if base {
            busy.push((p.smallest.clone(), p.largest.clone()));
        }
        s.set_compacting(&compacting);
        check_structure(&files, &s, &compacting);
    }
    picks
}

#[test]
fn sublevels_match_brute_force() {
    if let Some(seed) = std::env::var("STRATA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        run_seed(seed);
        return;
    }
    let (mut base, mut intra) = (0, 0);
    for seed in 0..3000 {
        let (b, i) = run_seed(seed);
        base += b;
        intra += i;
    }
    // The generator must actually exercise the pickers.
    assert!(
        base > 1000 && intra > 1000,
        "{base} base and {intra} intra picks"
    );
    println!("{base} base picks, {intra} intra-L0 picks checked");
}

/// Build and pick times for a large L0: printed, not asserted (run with
/// `--nocapture` to see them).
#[test]
fn large_l0_timing() {
    let mut rng = StdRng::seed_from_u64(7);
    // Mostly narrow flushed files over a wide key space, some wide ones.
    let files: Vec<Arc<FileMeta>> = (1..=1000u64)
        .map(|number| {
            let start: u32 = rng.gen_range(0..100_000);
            let width = if rng.gen_bool(0.05) {
                rng.gen_range(10_000..50_000)
            } else {
                rng.gen_range(10..1_000)
            };
            let lo = format!("key{start:08}");
            let hi = format!("key{:08}", start + width);
            Arc::new(FileMeta {
                number,
                size: rng.gen_range(1 << 20..64 << 20),
                smallest: make_internal_key(lo.as_bytes(), number, ValueKind::Value),
                largest: make_internal_key(hi.as_bytes(), number, ValueKind::Value),
                smallest_seq: number,
                largest_seq: number,
                global_seqno: None,
                num_entries: 1,
                num_deletions: 0,
                num_range_deletions: 0,
                backing: None,
            })
        })
        .collect();
    let t = Instant::now();
    let s = L0Sublevels::new(&files, 8 << 20);
    let build = t.elapsed();
    let t = Instant::now();
    let base = s.pick_base_compaction(256 << 20, &|_, _| false, &|_, _| 0);
    let pick_base = t.elapsed();
    let t = Instant::now();
    let intra = s.pick_intra_l0_compaction(4, 256 << 20, u64::MAX);
    let pick_intra = t.elapsed();
    println!(
        "1000 L0 files: build {build:?} ({} sublevels, read-amp {}, {} split keys), \
         base pick {pick_base:?} ({} files), intra pick {pick_intra:?} ({} files)",
        s.num_sublevels(),
        s.read_amplification(),
        s.flush_split_keys().len(),
        base.map_or(0, |p| p.files.len()),
        intra.map_or(0, |p| p.files.len()),
    );
}
