//! Choosing compactions.
//!
//! Level sizes are dynamic (RocksDB's `level_compaction_dynamic_level_bytes`):
//! the last level's target is its actual size (at least `base_level_bytes`),
//! each level above holds a tenth of the one below, and Lbase, where L0
//! compacts into, is the highest level whose target is still at least
//! `base_level_bytes`. Levels above Lbase that hold data (left from when the
//! tree was smaller) get an unbounded score and drain downward.
//!
//! L0's score is the larger of its depth in sublevels over
//! `l0_compaction_threshold` and its file count (files not being compacted)
//! over `l0_compaction_file_threshold` (Pebble's two L0 terms). The count
//! term is for L0 files that never stack: many small flushes of disjoint
//! keys (one per short-lived open, say) sit in one sublevel, so the depth
//! term stays low however many there are. When the count term is what
//! triggers L0 (it is at least 1 and above the depth term), an L0 -> Lbase
//! pick is widened with every L0 file it can take without pulling in more
//! of Lbase ([`L0Sublevels::extend_base_pick`], Pebble's
//! `ExtendL0ForBaseCompactionTo`): a pick around one depth-1 interval
//! would otherwise take a single file and move it, count unchanged. With
//! //! sublevel picking, an L0 compaction is built around the tallest interval
//! of L0 (see `version::sublevels`) so several can run on disjoint key
//! ranges; intra-L0 compaction is the fallback when L0 -> Lbase cannot
//! proceed. Without it (the comparison mode), L0 is picked the classic way:
//! a file and everything in L0 that overlaps it, transitively.
//!
//! Conflicts: a compaction never takes a file another running compaction
//! takes, and never writes a key range of a level that a running compaction
//! is also writing.

use super::lbase_cuts;
use crate::version::sublevels::L0Sublevels;
use crate::version::{FileMeta, Version, NUM_LEVELS};
use std::collections::HashSet;
use std::sync::Arc;

#[derive(Clone, Debug)]
/// How levels are sized and compactions are picked (part of
/// [`Options`](crate::Options)).
///
/// ```
/// use strata::{CompactionOptions, Options};
/// let opts = Options {
///     compaction: CompactionOptions {
///         target_file_size: 64 << 20,
///         ..CompactionOptions::default()
///     },
///     ..Options::default()
/// };
/// # let _ = opts;
/// ```
pub struct CompactionOptions {
    /// L0 depth (sublevels) at which L0 scores 1 (0 is taken as 1). At
    /// most `Options::l0_stop_sublevels` unless
    /// `l0_compaction_file_threshold` is (writes stopped below both would
    /// wait for a compaction that never starts; `Db::open` refuses it).
    pub l0_compaction_threshold: usize,
    /// L0 file count (files not being compacted) at which L0 scores 1,
    /// whatever its depth; 0 turns the count term off. Pebble's
    /// `L0CompactionFileThreshold` (500 there). Default 200: below it,
    /// Strata's own workloads never reach it (peaks of 147 L0 files in W5
    /// with the default slicing, 78 in W1's direct import, tens in W3 and
    /// W4, docs/benchmarks.md), so they pick exactly as before; above it,
    /// L0 files are nearly always small ones that never stacked (one
    /// flush per short-lived open: 300 opens left 299 files of 1.7 KB in
    /// one sublevel), which cost a table-cache entry, a descriptor and a
    /// MANIFEST record each and are cheap to merge. W5 with 2 MiB Lbase
    /// slices (`lbase_split_bytes`, not the default) peaks at 310 files
    /// and would compact on this term as well as on depth. A nonzero
    /// value at most `Options::l0_stop_sublevels` also makes the stop safe
    /// (see `l0_compaction_threshold`).
    pub l0_compaction_file_threshold: usize,
    /// Pick L0 compactions from the sublevel structure (and split flushes
    /// at sublevel boundaries); off: classic whole-overlap L0 picking.
    pub l0_sublevels: bool,
    /// Target size of Lbase; each level below is `level_multiplier` times
    /// larger.
    pub base_level_bytes: u64,
    /// Size ratio between consecutive levels below Lbase. At least 1
    /// (level targets are divided by it; 1 gives every level the bottom
    /// level's size).
    pub level_multiplier: u64,
    /// Output files are cut at this size.
    pub target_file_size: u64,
    /// Upper bound on a compaction's input bytes (soft for L0 picks, whose
    /// bound with sublevels is smaller: see `l0_base_max_bytes`).
    pub max_compaction_bytes: u64,
    /// Flush outputs are cut at sublevel split keys every this many bytes of
    /// L0 below them.
    pub flush_split_bytes: u64,
    /// Fewest files an intra-L0 compaction merges.
    pub intra_l0_min_files: usize,
    /// With `l0_sublevels`: an Lbase file of at least twice this size is
    /// given cut points about this many bytes apart (from its index block),
    /// besides its boundaries with its neighbours. Bulk loaders cut their
    /// files there (`Db::ingest_split_keys`)
    /// and L0 -> Lbase compactions cut their outputs there, so Lbase is
    /// sliced about this fine and an L0 -> Lbase compaction of a narrow
    /// stack of L0 rewrites a slice of this size, not a whole
    /// `target_file_size` file (see `compaction::lbase_cuts`); L0 -> Lbase
    /// picks are then bounded with their Lbase bytes (a quarter of Lbase,
    /// `picker::l0_base_max_bytes`). 0 (the default): the size is scaled
    /// to the data instead (`lbase_slices`). A fixed small size costs time
    /// on a large load: in W5 at 10 warehouses 2 MiB slices took the
    /// largest L0 -> Lbase compaction from 40% of the data to 6-8%, but
    /// load+settle up by 24-50% (about 8x the compactions and 5x the L0
    /// files; docs/bench-history/w5-sublevels.md, 2026-11-23, issue 15).
    pub lbase_split_bytes: u64,
    /// With `l0_sublevels` and `lbase_split_bytes` 0: slice Lbase as
    /// `lbase_split_bytes` does, at a size scaled to the data: the tree's
    /// bytes over this many, rounded down to a power of two, at least a
    /// 32nd of `target_file_size` (`compaction::lbase_cuts::split_bytes`).
    /// While Lbase is the bottom level it is cut into this many to twice
    /// as many slices however large the load, so an L0 -> Lbase compaction
    /// is a small share of the data without the per-file costs of a fixed
    /// small slice on a large load; above the bottom, Lbase's files are
    /// small against the data and are seldom cut. 0 (with
    /// `lbase_split_bytes` 0) turns slicing off: cuts at Lbase's file
    /// boundaries only, and L0 -> Lbase picks bounded by their L0 bytes
    /// alone. Default 32: in W5 at 10 warehouses the largest L0 -> Lbase
    /// compaction fell from 33% of the data to 5-7%
    /// (docs/bench-history/w5-sublevels.md, session 24, issue 15 W5 helper).
    pub lbase_slices: u64,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions {
            l0_compaction_threshold: 4,
            l0_compaction_file_threshold: 200,
            l0_sublevels: true,
            base_level_bytes: 64 << 20,
            level_multiplier: 10,
            target_file_size: 32 << 20,
            max_compaction_bytes: 512 << 20,
            flush_split_bytes: 4 << 20,
            intra_l0_min_files: 4,
            lbase_split_bytes: 0,
            lbase_slices: 32,
        }
    }
}

/// Why a compaction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    L0ToBase,
    IntraL0,
    LevelScore,
    Manual,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::L0ToBase => "l0-to-base",
            Reason::IntraL0 => "intra-l0",
            Reason::LevelScore => "level-score",
            Reason::Manual => "manual",
        }
    }
}

/// A chosen compaction.
#[derive(Clone, Debug)]
pub struct Compaction {
    pub reason: Reason,
    pub start_level: usize,
    pub output_level: usize,
    /// Input files of `start_level`.
    pub inputs: Vec<Arc<FileMeta>>,
    /// Input files of `output_level` (empty for intra-L0).
    pub output_inputs: Vec<Arc<FileMeta>>,
    /// Files of the level below the output, for cutting outputs.
    pub grandparents: Vec<Arc<FileMeta>>,
    /// User-key range of all inputs.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    /// No level below the output holds data in the range.
    pub bottommost: bool,
    /// For an L0 -> Lbase compaction picked from sublevels (or a manual
    /// one out of L0 with sublevels on): the slice size Lbase was cut at
    /// when picked (`lbase_cuts::split_bytes`), at whose cut points of the
    /// replaced Lbase files the outputs are cut; 0 otherwise.
    pub lbase_split: u64,
    /// The score that chose this compaction (no reader yet; kept for the
    /// compaction's event record).
    #[allow(dead_code)]
    pub score: f64,
}

impl Compaction {
    pub fn all_inputs(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        self.inputs
            .iter()
            .map(move |f| (self.start_level, f))
            .chain(
                self.output_inputs
                    .iter()
                    .map(move |f| (self.output_level, f)),
            )
    }

    pub fn input_bytes(&self) -> u64 {
        self.all_inputs().map(|(_, f)| f.size).sum()
    }
}

/// What the picker must avoid: running compactions' files and output ranges.
#[derive(Clone, Debug, Default)]
pub struct Running {
    pub files: HashSet<u64>,
    /// (output level, smallest, largest user key).
    pub outputs: Vec<(usize, Vec<u8>, Vec<u8>)>,
}

impl Running {
    pub fn add(&mut self, c: &Compaction) {
        for (_, f) in c.all_inputs() {
            self.files.insert(f.number);
        }
        self.outputs
            .push((c.output_level, c.smallest.clone(), c.largest.clone()));
    }

    pub fn remove(&mut self, c: &Compaction) {
        for (_, f) in c.all_inputs() {
            self.files.remove(&f.number);
        }
        if let Some(i) = self
            .outputs
            .iter()
            .position(|(l, a, b)| *l == c.output_level && *a == c.smallest && *b == c.largest)
        {
            self.outputs.remove(i);
        }
    }

    fn output_conflict(&self, level: usize, lo: &[u8], hi: &[u8]) -> bool {
        self.outputs
            .iter()
            .any(|(l, a, b)| *l == level && a.as_slice() <= hi && lo <= b.as_slice())
    }

    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }

    /// Whether a running compaction writes level `level` within `[lo, hi]`.
    pub fn writes_range(&self, level: usize, lo: &[u8], hi: &[u8]) -> bool {
        self.output_conflict(level, lo, hi)
    }
}

/// Level targets and the base level of a version.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelTargets {
    pub base_level: usize,
    pub target: [u64; NUM_LEVELS],
}

pub fn level_targets(v: &Version, o: &CompactionOptions) -> LevelTargets {
    let bottom = NUM_LEVELS - 1;
    let mut target = [0u64; NUM_LEVELS];
    let mut t = v.level_bytes(bottom).max(o.base_level_bytes);
    target[bottom] = t;
    let mut base = bottom;
    while base > 1 && t / o.level_multiplier >= o.base_level_bytes {
        t /= o.level_multiplier;
        base -= 1;
        target[base] = t;
    }
    // L0 must compact into the first non-empty level, never past it: newer
    // data would otherwise land below older data (a level above the computed
    // base can hold data after the tree shrank, or an ingested file). Such
    // levels get targets continuing the geometric series, so they drain down.
    if let Some(first) = (1..NUM_LEVELS).find(|&l| !v.files(l).is_empty()) {
        while base > first {
            base -= 1;
            target[base] = (target[base + 1] / o.level_multiplier).max(1);
        }
    }
    LevelTargets {
        base_level: base,
        target,
    }
}

/// Bytes that must still be compacted to bring every level to its target:
/// all of L0 plus each level's excess.
pub fn compaction_debt(v: &Version, t: &LevelTargets) -> u64 {
    let mut debt = v.level_bytes(0);
    for l in 1..NUM_LEVELS {
        debt += v.level_bytes(l).saturating_sub(t.target[l]);
    }
    debt
}

/// Compaction scores per level (>= 1 means the level needs compaction).
pub fn scores(
    v: &Version,
    sub: &L0Sublevels,
    t: &LevelTargets,
    running: &Running,
    o: &CompactionOptions,
) -> [f64; NUM_LEVELS] {
    let mut s = [0.0; NUM_LEVELS];
    let (depth, count) = l0_terms(v, sub, running, o);
    s[0] = depth.max(count);
    for (l, score) in s.iter_mut().enumerate().take(NUM_LEVELS - 1).skip(1) {
        let bytes: u64 = v
            .files(l)
            .iter()
            .filter(|f| !running.files.contains(&f.number))
            .map(|f| f.size)
            .sum();
        *score = if l < t.base_level {
            if bytes > 0 {
                1000.0
            } else {
                0.0
            }
        } else {
            bytes as f64 / t.target[l].max(1) as f64
        };
    }
    s
}

/// L0's two score terms: (depth, file count), each over its threshold
/// (the count term 0 when `l0_compaction_file_threshold` is 0).
pub fn l0_terms(
    v: &Version,
    sub: &L0Sublevels,
    running: &Running,
    o: &CompactionOptions,
) -> (f64, f64) {
    let idle = v
        .files(0)
        .iter()
        .filter(|f| !running.files.contains(&f.number))
        .count();
    let depth = if o.l0_sublevels {
        sub.max_depth_after_ongoing()
    } else {
        idle
    };
    let depth = depth as f64 / o.l0_compaction_threshold.max(1) as f64;
    let count = if o.l0_compaction_file_threshold == 0 {
        0.0
    } else {
        idle as f64 / o.l0_compaction_file_threshold as f64
    };
    (depth, count)
}

fn range_of<'a>(files: impl Iterator<Item = &'a Arc<FileMeta>>) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut lo: Option<&[u8]> = None;
    let mut hi: Option<&[u8]> = None;
    for f in files {
        let (a, b) = (f.smallest_user_key(), f.largest_user_key());
        if lo.is_none_or(|x| a < x) {
            lo = Some(a);
        }
        if hi.is_none_or(|x| b > x) {
            hi = Some(b);
        }
    }
    Some((lo?.to_vec(), hi?.to_vec()))
}

fn is_bottommost(v: &Version, output_level: usize, lo: &[u8], hi: &[u8]) -> bool {
    (output_level + 1..NUM_LEVELS).all(|l| v.overlapping(l, lo, hi).is_empty())
}

/// Builds a compaction of `inputs` (from `start`) into `output`, pulling in
/// the overlapping output-level files; `None` if any is already compacting
/// or the output range is being written by another compaction.
fn build(
    v: &Version,
    reason: Reason,
    start: usize,
    output: usize,
    inputs: Vec<Arc<FileMeta>>,
    running: &Running,
    score: f64,
) -> Option<Compaction> {
    let (lo, hi) = range_of(inputs.iter())?;
    let output_inputs = if output == start {
        Vec::new()
    } else {
        v.overlapping(output, &lo, &hi)
    };
    if inputs
        .iter()
        .chain(&output_inputs)
        .any(|f| running.files.contains(&f.number))
    {
        return None;
    }
    let (lo, hi) = range_of(inputs.iter().chain(&output_inputs))?;
    if running.output_conflict(output, &lo, &hi) {
        return None;
    }
    let grandparents = if output + 1 < NUM_LEVELS {
        v.overlapping(output + 1, &lo, &hi)
    } else {
        Vec::new()
    };
    // L0 files left out of an L0 compaction may hold older versions of the
    // range (an intra-L0 output can span a wide sequence range), so the
    // output is the bottom only if no other L0 file overlaps it.
    let l0_clear = start != 0
        || v.overlapping(0, &lo, &hi)
            .iter()
            .all(|f| inputs.iter().any(|i| i.number == f.number));
    Some(Compaction {
        reason,
        start_level: start,
        output_level: output,
        bottommost: l0_clear && is_bottommost(v, output, &lo, &hi),
        lbase_split: 0,
        inputs,
        output_inputs,
        grandparents,
        smallest: lo,
        largest: hi,
        score,
    })
}

/// What an intra-L0 pick must know about memory (see [`pick_intra_l0`]).
pub struct Unflushed<'a> {
    /// The smallest sequence number held in memory, or the next one to be
    /// assigned when memory holds nothing.
    pub earliest: u64,
    /// The smallest sequence number of the memory entries (memtable,
    /// queued flushables) holding data in the user-key range `[lo, hi]`,
    /// or `u64::MAX` if none does.
    pub earliest_in: &'a dyn Fn(&[u8], &[u8]) -> u64,
}

/// Picks the most urgent compaction, or `None`.
pub fn pick(
    v: &Version,
    sub: &L0Sublevels,
    running: &Running,
    o: &CompactionOptions,
    unflushed: &Unflushed<'_>,
) -> Option<Compaction> {
    let t = level_targets(v, o);
    let s = scores(v, sub, &t, running, o);
    let mut order: Vec<usize> = (0..NUM_LEVELS - 1).filter(|&l| s[l] >= 1.0).collect();
    order.sort_by(|a, b| s[*b].total_cmp(&s[*a]));
    for l in order {
        let c = if l == 0 {
            pick_l0(v, sub, &t, running, o, s[0], unflushed)
        } else {
            pick_level(v, l, running, s[l])
        };
        if c.is_some() {
            return c;
        }
    }
    None
}

fn pick_l0(
    v: &Version,
    sub: &L0Sublevels,
    t: &LevelTargets,
    running: &Running,
    o: &CompactionOptions,
    score: f64,
    unflushed: &Unflushed<'_>,
) -> Option<Compaction> {
    let base = t.base_level;
    if o.l0_sublevels {
        let conflict = |lo: &[u8], hi: &[u8]| {
            running.output_conflict(base, lo, hi)
                || v.overlapping(base, lo, hi)
                    .iter()
                    .any(|f| running.files.contains(&f.number))
        };
        // With Lbase slicing off (`lbase_split_bytes` and `lbase_slices`
        // 0), L0 picks are bounded by their L0 bytes alone, as before
        // slicing existed.
        let split = lbase_cuts::split_bytes_of(v, o);
        let sliced = split > 0;
        let lbase_bytes = |lo: &[u8], hi: &[u8]| -> u64 {
            if sliced {
                v.overlapping(base, lo, hi).iter().map(|f| f.size).sum()
            } else {
                0
            }
        };
        let max = if sliced {
            l0_base_max_bytes(v, t, o, split)
        } else {
            o.max_compaction_bytes
        };
        if let Some(p) = sub.pick_base_compaction(max, &conflict, &lbase_bytes) {
            let (depth, count) = l0_terms(v, sub, running, o);
            if count >= 1.0 && count > depth {
                // The file count triggered: take every L0 file that costs
                // no more of Lbase, or the pick may take one file and move
                // it (see the module documentation).
                let wide = widen_to_lbase_gap(v, sub, base, &p, max, &lbase_bytes);
                if wide.files.len() > p.files.len() {
                    if let Some(mut c) =
                        build(v, Reason::L0ToBase, 0, base, wide.files, running, score)
                    {
                        c.lbase_split = split;
                        return Some(c);
                    }
                }
            }
            if let Some(mut c) = build(v, Reason::L0ToBase, 0, base, p.files, running, score) {
                c.lbase_split = split;
                return Some(c);
            }
        }
        // L0 -> Lbase is blocked; merge a stack of L0 files instead, so
        // reads do not pay for the depth meanwhile.
        let p = pick_intra_l0(sub, o, unflushed)?;
        return build(v, Reason::IntraL0, 0, 0, p.files, running, score);
    }
    // Classic: the oldest idle L0 file and everything overlapping it,
    // transitively (L0 files are newest first).
    let l0 = v.files(0);
    let seed = l0
        .iter()
        .rev()
        .find(|f| !running.files.contains(&f.number))?;
    let mut chosen: Vec<Arc<FileMeta>> = vec![Arc::clone(seed)];
    let (mut lo, mut hi) = (
        seed.smallest_user_key().to_vec(),
        seed.largest_user_key().to_vec(),
    );
    loop {
        let before = chosen.len();
        for f in l0 {
            if !chosen.iter().any(|c| c.number == f.number) && f.overlaps_user_range(&lo, &hi) {
                if f.smallest_user_key() < lo.as_slice() {
                    lo = f.smallest_user_key().to_vec();
                }
                if f.largest_user_key() > hi.as_slice() {
                    hi = f.largest_user_key().to_vec();
                }
                chosen.push(Arc::clone(f));
            }
        }
        if chosen.len() == before {
            break;
        }
    }
    build(v, Reason::L0ToBase, 0, base, chosen, running, score)
}

/// `p` widened with the L0 files lying between the Lbase files next to
/// the ones `p` already overlaps (exclusive), within `max` bytes with the
/// Lbase files under `p`: a compaction of the result reads no more of
/// Lbase than `p`'s would.
fn widen_to_lbase_gap(
    v: &Version,
    sub: &L0Sublevels,
    base: usize,
    p: &crate::version::L0Pick,
    max: u64,
    lbase_bytes: &dyn Fn(&[u8], &[u8]) -> u64,
) -> crate::version::L0Pick {
    let lbase = v.files(base);
    let under = v.overlapping(base, &p.smallest, &p.largest);
    let lo = under
        .first()
        .map_or(p.smallest.as_slice(), |f| f.smallest_user_key())
        .min(p.smallest.as_slice());
    let hi = under
        .last()
        .map_or(p.largest.as_slice(), |f| f.largest_user_key())
        .max(p.largest.as_slice());
    let after = lbase
        .iter()
        .rev()
        .find(|f| f.largest_user_key() < lo)
        .map(|f| f.largest_user_key());
    let before = lbase
        .iter()
        .find(|f| f.smallest_user_key() > hi)
        .map(|f| f.smallest_user_key());
    let budget = max.saturating_sub(lbase_bytes(&p.smallest, &p.largest));
    sub.extend_base_pick(p, after, before, budget)
}

/// An intra-L0 pick that cannot put an output above newer data still in
/// memory. The output takes its inputs' largest sequence number, and a
/// memtable flushed later sorts below it if its own largest is smaller
/// ([`L0Sublevels::pick_intra_l0_compaction`]). That matters only where
/// memory holds data in the output's key range: data written there after
/// the pick is newer than every input (an ingestion is placed in the tree
/// only once every smaller sequence number is in memory), so its flush
/// sorts above the output, as it must. So the pick is first made without
/// a limit and kept if every input is older than the memory entries
/// overlapping its range (W4's ingestions beside a memtable of other keys:
/// without this, none of them could be merged while the memtable filled,
/// and L0's depth slowed the writes, Put p99 32-56 -> 144-171 µs); else it
/// is made again leaving out every file at or past the earliest sequence
/// number in memory (Pebble's rule).
fn pick_intra_l0(
    sub: &L0Sublevels,
    o: &CompactionOptions,
    unflushed: &Unflushed<'_>,
) -> Option<crate::version::L0Pick> {
    let (min, max) = (o.intra_l0_min_files, o.max_compaction_bytes);
    let p = sub.pick_intra_l0_compaction(min, max, u64::MAX)?;
    let newest = p.files.iter().map(|f| f.largest_seq).max().unwrap_or(0);
    if newest < (unflushed.earliest_in)(&p.smallest, &p.largest) {
        return Some(p);
    }
    sub.pick_intra_l0_compaction(min, max, unflushed.earliest)
}

/// The most an L0 -> Lbase compaction picked from sublevels should read,
/// its Lbase files included, when Lbase is sliced at `split` bytes
/// (`lbase_cuts::split_bytes` > 0): a quarter of Lbase, but at least four
/// slices and at most
/// `max_compaction_bytes`. The point of sublevels is that L0 drains into
/// Lbase a slice at a time instead of rewriting the level; a bound
/// relative to Lbase keeps each compaction a small share of the data
/// however the load grows, and the seed's own step is taken over the
/// bound, so L0 always drains. A tighter bound takes fewer L0 files per
/// Lbase byte rewritten: in W5 (10 warehouses, one run each) a sixteenth
/// gave write amplification 4.6-4.8 and a largest compaction of 5.8% of
/// the data, an eighth 4.4 and 5.2-5.8%, a quarter 4.3 and 8.6%, no bound
/// 4.2 and 10.3% (docs/bench-history/w5-sublevels.md, 2026-11-23, issue 15).
pub fn l0_base_max_bytes(v: &Version, t: &LevelTargets, o: &CompactionOptions, split: u64) -> u64 {
    (v.level_bytes(t.base_level) / 4)
        .max(split.saturating_mul(4))
        .min(o.max_compaction_bytes)
}

/// Ln -> Ln+1: the idle file whose overlap with the next level is smallest
/// relative to its size (RocksDB's "min overlapping ratio"), which moves the
/// most bytes down for the least rewriting.
fn pick_level(v: &Version, l: usize, running: &Running, score: f64) -> Option<Compaction> {
    let mut cands: Vec<(f64, &Arc<FileMeta>)> = v
        .files(l)
        .iter()
        .filter(|f| !running.files.contains(&f.number))
        .map(|f| {
            let overlap: u64 = v
                .overlapping(l + 1, f.smallest_user_key(), f.largest_user_key())
                .iter()
                .map(|g| g.size)
                .sum();
            (overlap as f64 / f.size.max(1) as f64, f)
        })
        .collect();
    cands.sort_by(|a, b| a.0.total_cmp(&b.0));
    cands.into_iter().find_map(|(_, f)| {
        build(
            v,
            Reason::LevelScore,
            l,
            l + 1,
            vec![Arc::clone(f)],
            running,
            score,
        )
    })
}

/// A manual compaction of `[lo, hi]` from `level` into the next level (or
/// Lbase for L0), or `None` if the level holds nothing there.
pub fn manual(
    v: &Version,
    level: usize,
    lo: &[u8],
    hi: &[u8],
    running: &Running,
    o: &CompactionOptions,
) -> Option<Compaction> {
    let t = level_targets(v, o);
    let mut inputs = v.overlapping(level, lo, hi);
    if inputs.is_empty() {
        return None;
    }
    let output = if level == 0 { t.base_level } else { level + 1 };
    if level == 0 {
        // Whole overlap closure, so no older L0 file is left above newer
        // output.
        loop {
            let (a, b) = range_of(inputs.iter())?;
            let more = v.overlapping(0, &a, &b);
            if more.len() == inputs.len() {
                break;
            }
            inputs = more;
        }
    }
    let mut c = build(v, Reason::Manual, level, output, inputs, running, 0.0)?;
    if level == 0 && o.l0_sublevels {
        c.lbase_split = lbase_cuts::split_bytes_of(v, o);
    }
    Some(c)
}
