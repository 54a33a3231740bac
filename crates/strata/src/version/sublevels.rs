//! L0 sublevels: the overlapping files of L0 arranged into a stack of
//! non-overlapping runs, and the compaction picking built on that view.
//!
//! The structure is derived, never stored: it is rebuilt from the L0 files'
//! bounds and sequence numbers whenever L0 changes (after the model of
//! Pebble's `L0Sublevels`).
//!
//! Invariants of a built [`L0Sublevels`]:
//! - the files of one sublevel do not overlap, and are sorted by key;
//! - if two files overlap, the newer one (larger `largest_seq`, ties broken
//!   by file number) is in a strictly higher sublevel; each file sits in the
//!   lowest sublevel that satisfies this, so a newer file that overlaps no
//!   older one can sit below older files elsewhere in the key space.
//!
//! Key space is cut into *intervals* at every file boundary; each file covers
//! a contiguous run of whole intervals, so overlap questions become integer
//! comparisons. A file's largest key is inclusive, except a range tombstone's
//! exclusive end sentinel `(end, MAX_SEQUENCE, RangeDeletion)`: such a file
//! does not overlap one that starts at `end`.
//!
//! Picks keep the read order intact:
//! - an L0 -> Lbase pick contains, with every file, every older file that
//!   overlaps it (else an older version would stay in L0 above a newer one
//!   moved to Lbase);
//! - an intra-L0 pick contains, with every file, every newer file that
//!   overlaps it (the output takes the inputs' largest sequence number, so a
//!   newer file left behind would end up below older data), except files
//!   at or above the earliest sequence number still in memory, which it
//!   never takes (see [`L0Sublevels::pick_intra_l0_compaction`]);
//! - neither includes a file marked compacting; a pick whose closure would
//!   need one is abandoned.

use super::edit::FileMeta;
use crate::key::{ParsedKey, ValueKind, MAX_SEQUENCE};
use std::cmp::Reverse;
use std::collections::HashSet;
#[cfg(any(test, feature = "internals"))]
use std::fmt::Write as _;
use std::sync::Arc;

/// A point between intervals: just before `key`, or just after it when
/// `after` is set (the end of a file whose largest key is inclusive). The
/// derived order (key, then before < after) is the order of these points.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Boundary {
    key: Vec<u8>,
    after: bool,
}

#[derive(Debug)]
struct L0File {
    meta: Arc<FileMeta>,
    sublevel: usize,
    /// First and last interval covered, inclusive; `first <= last`.
    first: usize,
    last: usize,
    compacting: bool,
}

/// The sublevel view of L0. See the module documentation.
#[derive(Debug)]
pub struct L0Sublevels {
    /// All L0 files, oldest first; other fields refer to files by index here.
    files: Vec<L0File>,
    /// Per sublevel (0 = oldest), indices into `files` sorted by key.
    levels: Vec<Vec<usize>>,
    /// The same, as file metadata, for callers.
    level_metas: Vec<Vec<Arc<FileMeta>>>,
    /// Interval `i` is `[bounds[i], bounds[i + 1])`; the last one is open
    /// ended and always empty.
    bounds: Vec<Boundary>,
    /// Per interval: files covering it (= sublevels with a file there).
    depth: Vec<u32>,
    /// Per interval: how many of those files are compacting.
    compacting_depth: Vec<u32>,
    /// Per interval: bytes estimated to lie there, each file's size spread
    /// evenly over the intervals it covers.
    est_bytes: Vec<u64>,
    flush_split_keys: Vec<Vec<u8>>,
}

/// Files chosen for a compaction out of L0.
#[derive(Clone, Debug)]
pub struct L0Pick {
    /// The chosen files, by sublevel (oldest first), then by key.
    pub files: Vec<Arc<FileMeta>>,
    /// User-key range the files cover: `[smallest, largest]`, or
    /// `[smallest, largest)` when `largest_exclusive` (the range ends with a
    /// range tombstone's exclusive end).
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
    pub largest_exclusive: bool,
    /// Total size of `files`.
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
    pub bytes: u64,
    /// Start of the interval the pick was built around.
    pub seed_key: Vec<u8>,
    /// How many sublevels of the seed interval the pick takes: the read
    /// amplification it removes there.
    pub seed_depth: usize,
}

/// True if `ikey` is the exclusive end sentinel of a range tombstone.
fn is_exclusive_sentinel(ikey: &[u8]) -> bool {
    ParsedKey::parse(ikey)
        .is_some_and(|p| p.seq == MAX_SEQUENCE && p.kind == ValueKind::RangeDeletion as u8)
}

impl L0Sublevels {
    /// Builds the view of `files` (the L0 files, any order).
    /// `flush_split_bytes` is about how many bytes of L0, per sublevel, one
    /// flush output file may span (see [`Self::flush_split_keys`]); 0
    /// disables split keys.
    pub fn new(files: &[Arc<FileMeta>], flush_split_bytes: u64) -> L0Sublevels {
        let mut sorted: Vec<Arc<FileMeta>> = files.to_vec();
        sorted.sort_by_key(|f| (f.largest_seq, f.number));

        // Each file's two boundaries. A file whose end would not lie after its
        // start (only possible for malformed bounds) is widened to cover its
        // start key, so every file covers at least one interval.
        let ends: Vec<(Boundary, Boundary)> = sorted
            .iter()
            .map(|f| {
                let start = Boundary {
                    key: f.smallest_user_key().to_vec(),
                    after: false,
                };
                let mut end = Boundary {
                    key: f.largest_user_key().to_vec(),
                    after: !is_exclusive_sentinel(&f.largest),
                };
                if end <= start {
                    end = Boundary {
                        key: start.key.clone(),
                        after: true,
                    };
                }
                (start, end)
            })
            .collect();
        let mut bounds: Vec<Boundary> = ends
            .iter()
            .flat_map(|(s, e)| [s.clone(), e.clone()])
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let index = |b: &Boundary| bounds.partition_point(|x| x < b);

        let n = bounds.len();
        // Per interval: 1 + the highest sublevel holding a file there, 0 if
        // none. A file goes right above the highest of its intervals; since
        // files arrive oldest first, that puts it above every older file it
        // overlaps, and no higher.
        let mut top = vec![0usize; n];
        let mut out_files = Vec::with_capacity(sorted.len());
        let mut levels: Vec<Vec<usize>> = Vec::new();
        let mut depth_diff = vec![0i64; n + 1];
        let mut bytes_diff = vec![0u64; n + 1];
        for (i, (meta, (s, e))) in sorted.into_iter().zip(&ends).enumerate() {
            let first = index(s);
            let last = index(e) - 1;
            let sublevel = top[first..=last].iter().copied().max().unwrap_or(0);
            top[first..=last].fill(sublevel + 1);
            if sublevel == levels.len() {
                levels.push(Vec::new());
            }
            levels[sublevel].push(i);
            depth_diff[first] += 1;
            depth_diff[last + 1] -= 1;
            // A constant rate over [first, last]: the wrapping difference
            // array sums back to exact values, which fit in u64.
            let rate = meta.size / (last - first + 1) as u64;
            bytes_diff[first] = bytes_diff[first].wrapping_add(rate);
            bytes_diff[last + 1] = bytes_diff[last + 1].wrapping_sub(rate);
            out_files.push(L0File {
                meta,
                sublevel,
                first,
                last,
                compacting: false,
            });
        }
        for level in &mut levels {
            level.sort_by_key(|&f| out_files[f].first);
        }
        let level_metas = levels
            .iter()
            .map(|l| l.iter().map(|&f| out_files[f].meta.clone()).collect())
            .collect();
        let mut depth = Vec::with_capacity(n);
        let mut est_bytes = Vec::with_capacity(n);
        let (mut d, mut b) = (0i64, 0u64);
        for i in 0..n {
            d += depth_diff[i];
            b = b.wrapping_add(bytes_diff[i]);
            depth.push(d as u32);
            est_bytes.push(b);
        }

        let mut s = L0Sublevels {
            files: out_files,
            levels,
            level_metas,
            bounds,
            depth,
            compacting_depth: vec![0; n],
            est_bytes,
            flush_split_keys: Vec::new(),
        };
        s.flush_split_keys = s.compute_flush_split_keys(flush_split_bytes);
        s
    }

    /// Walks the intervals accumulating estimated bytes and cuts before the
    /// interval at which the running total has passed the threshold. The
    /// threshold is `flush_split_bytes` per sublevel: the bytes of every
    /// sublevel are summed, and a deeper L0 should not split flushes finer.
    fn compute_flush_split_keys(&self, flush_split_bytes: u64) -> Vec<Vec<u8>> {
        let threshold = flush_split_bytes.saturating_mul(self.levels.len() as u64);
        let mut keys: Vec<Vec<u8>> = Vec::new();
        if threshold == 0 {
            return keys;
        }
        let mut acc = 0u64;
        for (b, &bytes) in self.bounds.iter().zip(&self.est_bytes) {
            // An interval starting just after `k` yields split key `k` again
            // when one starting at `k` was cut just before; keep it once.
            if acc > threshold && keys.last() != Some(&b.key) {
                keys.push(b.key.clone());
                acc = 0;
            }
            acc = acc.saturating_add(bytes);
        }
        keys
    }

    /// The sublevels, oldest (0) first, each sorted by key.
    pub fn sublevels(&self) -> &[Vec<Arc<FileMeta>>] {
        &self.level_metas
    }

    pub fn num_sublevels(&self) -> usize {
        self.levels.len()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn num_files(&self) -> usize {
        self.files.len()
    }

    /// The most sublevels a point read in L0 can have to consult: the
    /// largest number of files stacked on one interval. At most
    /// [`Self::num_sublevels`], and less when the tallest stacks lie in
    /// different parts of the key space.
    pub fn read_amplification(&self) -> usize {
        self.depth.iter().copied().max().unwrap_or(0) as usize
    }

    /// Like [`Self::read_amplification`], but not counting files that are
    /// compacting: the depth that remains once running compactions finish,
    /// and so the one new compactions should be scored on.
    pub fn max_depth_after_ongoing(&self) -> usize {
        self.depth
            .iter()
            .zip(&self.compacting_depth)
            .map(|(&d, &c)| d.saturating_sub(c))
            .max()
            .unwrap_or(0) as usize
    }

    /// User keys at which a flush (or an intra-L0 compaction's output) should
    /// start a new file, ascending. Cutting there keeps output files from
    /// spanning stretches of L0 that hold many bytes, so that later L0 ->
    /// Lbase compactions can take narrow, tall slices of L0.
    pub fn flush_split_keys(&self) -> &[Vec<u8>] {
        &self.flush_split_keys
    }

    /// Marks the files whose numbers are in `compacting` (the inputs of every
    /// running compaction) as compacting, and every other file as not.
    /// Numbers not in L0 are ignored.
    pub fn set_compacting(&mut self, compacting: &HashSet<u64>) {
        let mut diff = vec![0i64; self.bounds.len() + 1];
        for f in &mut self.files {
            f.compacting = compacting.contains(&f.meta.number);
            if f.compacting {
                diff[f.first] += 1;
                diff[f.last + 1] -= 1;
            }
        }
        let mut c = 0i64;
        for (i, slot) in self.compacting_depth.iter_mut().enumerate() {
            c += diff[i];
            *slot = c as u32;
        }
    }

    /// Picks an L0 -> Lbase compaction.
    ///
    /// Intervals are tried tallest first (counting files not compacting).
    /// For each, the pick starts from the lowest file there (its seed) and
    /// climbs the interval's stack one file at a time; each file brings along
    /// every older file it overlaps, transitively. Climbing stops before a
    /// compacting file, before a file whose closure needs a compacting one,
    /// once the total (with the Lbase files under the range) would pass
    /// `max_bytes`, or once the key range would overlap a running Lbase
    /// compaction. Other files of the sublevels climbed through that lie
    /// within the chosen key range are then added while the total stays
    /// within `max_bytes` (this never widens the range, so it never drags in
    /// more of Lbase).
    ///
    /// The first step is always taken when it is possible at all, even over
    /// `max_bytes`, so that L0 can always drain. An interval whose first step
    /// is impossible is skipped for the next tallest; `None` if none works.
    ///
    /// `lbase_overlaps_compacting(lo, hi)` says whether the inclusive user-key
    /// range `[lo, hi]` overlaps an Lbase range already being compacted,
    /// including the ranges of running L0 -> Lbase compactions. (An exclusive
    /// end is passed as if inclusive: at worst a false conflict.) To run
    /// several base compactions side by side, call this again after marking
    /// the previous picks' files with [`Self::set_compacting`].
    ///
    /// `lbase_bytes(lo, hi)` is the size of the Lbase files overlapping
    /// `[lo, hi]`: the compaction rewrites them too, so they count against
    /// `max_bytes` with the L0 files (Pebble bounds the whole compaction,
    /// not its L0 part).
    pub fn pick_base_compaction(
        &self,
        max_bytes: u64,
        lbase_overlaps_compacting: &dyn Fn(&[u8], &[u8]) -> bool,
        lbase_bytes: &dyn Fn(&[u8], &[u8]) -> u64,
    ) -> Option<L0Pick> {
        // Every candidate built on one seed contains the seed's closure, so
        // if that first step fails for one interval it fails for all the
        // intervals sharing the seed, and if it succeeds we stop: trying a
        // seed once loses nothing.
        let mut tried = vec![false; self.files.len()];
        for iv in self.intervals_by_depth(1) {
            let stack = self.stack(iv);
            let Some(&seed) = stack.first() else { continue };
            if std::mem::replace(&mut tried[seed], true) || self.files[seed].compacting {
                continue;
            }
            let mut c = Candidate::new(self.files.len());
            let mut best: Option<Candidate> = None;
            for &f in &stack {
                if self.files[f].compacting {
                    break;
                }
                c.seed_depth += 1;
                if !self.add_closed(&mut c, f, (0..self.files[f].sublevel).rev()) {
                    break;
                }
                let (lo, hi) = (&self.bounds[c.first].key, &self.bounds[c.last + 1].key);
                if best.is_some() && c.bytes.saturating_add(lbase_bytes(lo, hi)) > max_bytes {
                    break;
                }
                if lbase_overlaps_compacting(lo, hi) {
                    break;
                }
                best = Some(c.clone());
            }
            let Some(mut c) = best else { continue };
            let top = self.files[stack[c.seed_depth - 1]].sublevel;
            // Filling never widens the range, so the Lbase part stays.
            let lbase = lbase_bytes(&self.bounds[c.first].key, &self.bounds[c.last + 1].key);
            self.fill_window(&mut c, iv, 0..=top, max_bytes.saturating_sub(lbase));
            return Some(self.make_pick(&c, iv));
        }
        None
    }

    /// Widens an L0 -> Lbase pick (from [`Self::pick_base_compaction`])
    /// with files lying strictly between the user keys `after` and `before`
    /// (`None`: unbounded), for when the L0 file count, not its depth, asks
    /// for a compaction: many small files side by side in one sublevel,
    /// which a pick built around one interval would take one at a time.
    /// The caller passes the bounds of the Lbase files next to those the
    /// pick already overlaps, so the widened pick reads no more of Lbase
    /// (Pebble's `ExtendL0ForBaseCompactionTo`).
    ///
    /// Sublevels are walked bottom up, files in key order; a file is added
    /// if it lies in the window, is not compacting, every older file it
    /// overlaps is already in the pick (the read-order rule of an L0 ->
    /// Lbase pick), and the total stays within `max_bytes`. The pick's own
    /// files are always kept, whatever `max_bytes` says.
    pub fn extend_base_pick(
        &self,
        pick: &L0Pick,
        after: Option<&[u8]>,
        before: Option<&[u8]>,
        max_bytes: u64,
    ) -> L0Pick {
        let numbers: HashSet<u64> = pick.files.iter().map(|f| f.number).collect();
        let mut c = Candidate::new(self.files.len());
        for (i, f) in self.files.iter().enumerate() {
            if numbers.contains(&f.meta.number) {
                self.add(&mut c, i);
            }
        }
        if c.files.is_empty() {
            return pick.clone();
        }
        let inside = |m: &FileMeta| {
            after.is_none_or(|a| m.smallest_user_key() > a)
                && before.is_none_or(|b| m.largest_user_key() < b)
        };
        for (level, files) in self.levels.iter().enumerate() {
            for &f in files {
                let file = &self.files[f];
                if c.picked[f]
                    || file.compacting
                    || !inside(&file.meta)
                    || c.bytes.saturating_add(file.meta.size) > max_bytes
                {
                    continue;
                }
                let older_picked = self.levels[..level].iter().all(|lower| {
                    let start = lower.partition_point(|&g| self.files[g].last < file.first);
                    lower[start..]
                        .iter()
                        .take_while(|&&g| self.files[g].first <= file.last)
                        .all(|&g| c.picked[g])
                });
                if older_picked {
                    self.add(&mut c, f);
                }
            }
        }
        let seed = self
            .bounds
            .iter()
            .position(|b| b.key == pick.seed_key)
            .unwrap_or(c.first);
        let mut out = self.make_pick(&c, seed);
        out.seed_depth = pick.seed_depth;
        out
    }

    /// Picks an intra-L0 compaction, for when L0 -> Lbase cannot proceed:
    /// files to merge into one new L0 file, which reduces the stack depth of
    /// the part of L0 they cover.
    ///
    /// Intervals are tried tallest first. For each, the pick starts from the
    /// topmost file there and descends the interval's stack one file at a
    /// time; each file brings along every newer file it overlaps,
    /// transitively. Descending stops before a compacting file, before a file
    /// whose closure needs a compacting one, or once the total would pass
    /// `max_bytes` (unless fewer than `min_files` files of the stack have
    /// been taken yet). A pick needs at least `min_files` files of the seed
    /// interval's stack (and at least 2: merging one file changes nothing).
    /// Other files of the sublevels from the lowest one descended to upward
    /// that lie within the chosen key range are then added while the total
    /// stays within `max_bytes`.
    ///
    /// Files whose largest sequence number is `earliest_unflushed` or more
    /// are left out as if absent, `earliest_unflushed` being the smallest
    /// sequence number still in memory (memtables and queued ingestions), or
    /// the next one to be assigned when memory holds nothing. The output
    /// takes its inputs' largest sequence number, and L0 is read newest
    /// first by that number; a memtable flushed later gets a smaller one
    /// than an input written after it (an ingestion placed beside an
    /// unflushed memtable it does not overlap), so the flushed file would
    /// sort below the output while holding data newer than the output's
    /// other inputs: a point read would then find an entry the memtable's
    /// deletion or range tombstone had removed (Pebble's
    /// `earliestUnflushedSeqNum` rule). Leaving such files out is safe: they
    /// are newer than every file taken, so the output still sorts below them.
    pub fn pick_intra_l0_compaction(
        &self,
        min_files: usize,
        max_bytes: u64,
        earliest_unflushed: u64,
    ) -> Option<L0Pick> {
        let min_files = min_files.max(2);
        // Intervals covered by the same files give the same candidate.
        let mut tried: HashSet<Vec<usize>> = HashSet::new();
        for iv in self.intervals_by_depth(min_files) {
            let mut stack = self.stack(iv);
            // Files too new to take are the newest of all, so they sit at
            // the top of every stack they are in.
            while stack
                .last()
                .is_some_and(|&f| self.files[f].meta.largest_seq >= earliest_unflushed)
            {
                stack.pop();
            }
            match stack.last() {
                Some(&top) if !self.files[top].compacting => {}
                _ => continue,
            }
            if !tried.insert(stack.clone()) {
                continue;
            }
            let mut c = Candidate::new(self.files.len());
            c.seq_limit = earliest_unflushed;
            let mut best: Option<Candidate> = None;
            for &f in stack.iter().rev() {
                if self.files[f].compacting {
                    break;
                }
                c.seed_depth += 1;
                let above = self.files[f].sublevel + 1..self.levels.len();
                if !self.add_closed(&mut c, f, above) {
                    break;
                }
                if best.as_ref().is_some_and(|b| b.seed_depth >= min_files) && c.bytes > max_bytes {
                    break;
                }
                best = Some(c.clone());
            }
            let Some(mut c) = best.filter(|b| b.seed_depth >= min_files) else {
                continue;
            };
            let bottom = self.files[stack[stack.len() - c.seed_depth]].sublevel;
            self.fill_window(&mut c, iv, (bottom..self.levels.len()).rev(), max_bytes);
            return Some(self.make_pick(&c, iv));
        }
        None
    }

    /// One line per sublevel, top (newest) first: `level: file file ...`,
    /// each file as `number:[lo-hi]`, or `number:[lo-hi)` when its end is a
    /// range tombstone's exclusive end.
    #[cfg(any(test, feature = "internals"))]
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for (level, files) in self.levels.iter().enumerate().rev() {
            let _ = write!(out, "{level}:");
            for &f in files {
                let f = &self.files[f];
                let end = &self.bounds[f.last + 1];
                let _ = write!(
                    out,
                    " {}:[{}-{}{}",
                    f.meta.number,
                    fmt_key(&self.bounds[f.first].key),
                    fmt_key(&end.key),
                    if end.after { "]" } else { ")" }
                );
            }
            out.push('\n');
        }
        out
    }

    /// One line per non-empty interval, in key order: its bounds, how many
    /// files cover it (and how many of those are compacting) and its
    /// estimated bytes. For debugging and tests.
    #[cfg(any(test, feature = "internals"))]
    pub fn describe_intervals(&self) -> String {
        let mut out = String::new();
        for i in 0..self.bounds.len().saturating_sub(1) {
            if self.depth[i] == 0 {
                continue;
            }
            let point =
                |b: &Boundary| format!("{}{}", fmt_key(&b.key), if b.after { "+" } else { "" });
            let _ = writeln!(
                out,
                "[{} {}) depth={} compacting={} bytes={}",
                point(&self.bounds[i]),
                point(&self.bounds[i + 1]),
                self.depth[i],
                self.compacting_depth[i],
                self.est_bytes[i]
            );
        }
        out
    }

    /// Intervals with at least `min` files not compacting, tallest first,
    /// then in key order.
    fn intervals_by_depth(&self, min: usize) -> Vec<usize> {
        let live = |i: usize| self.depth[i].saturating_sub(self.compacting_depth[i]) as usize;
        let mut ivs: Vec<usize> = (0..self.depth.len()).filter(|&i| live(i) >= min).collect();
        ivs.sort_by_key(|&i| (Reverse(live(i)), i));
        ivs
    }

    /// The files covering interval `iv`, lowest sublevel first.
    fn stack(&self, iv: usize) -> Vec<usize> {
        self.levels
            .iter()
            .filter_map(|level| {
                let i = level.partition_point(|&f| self.files[f].last < iv);
                level.get(i).copied().filter(|&f| self.files[f].first <= iv)
            })
            .collect()
    }

    fn add(&self, c: &mut Candidate, f: usize) {
        if c.picked[f] {
            return;
        }
        let file = &self.files[f];
        c.picked[f] = true;
        c.files.push(f);
        c.bytes = c.bytes.saturating_add(file.meta.size);
        c.first = c.first.min(file.first);
        c.last = c.last.max(file.last);
    }

    /// Adds file `f` and closes the candidate over overlap in one direction:
    /// walking `levels` away from `f`'s sublevel, every file overlapping `f`
    /// or a file added on its behalf. Files picked before are already closed
    /// and widen nothing, and files at or past the candidate's `seq_limit`
    /// are passed over (only an intra-L0 pick sets one, and such files are
    /// newer than all it takes). False if a needed file is compacting (the
    /// candidate is then unusable).
    fn add_closed(&self, c: &mut Candidate, f: usize, levels: impl Iterator<Item = usize>) -> bool {
        self.add(c, f);
        let (mut lo, mut hi) = (self.files[f].first, self.files[f].last);
        for level in levels {
            // Files of one sublevel do not overlap each other, so the range
            // as it stands before this level is all that matters within it.
            let (level_lo, level_hi) = (lo, hi);
            let files = &self.levels[level];
            let start = files.partition_point(|&g| self.files[g].last < level_lo);
            for &g in &files[start..] {
                let file = &self.files[g];
                if file.first > level_hi {
                    break;
                }
                if c.picked[g] || file.meta.largest_seq >= c.seq_limit {
                    continue;
                }
                if file.compacting {
                    return false;
                }
                self.add(c, g);
                lo = lo.min(file.first);
                hi = hi.max(file.last);
            }
        }
        true
    }

    /// Best-effort widening of a closed candidate: walking `levels` from the
    /// side the closure grows from, adds the files lying within a window
    /// that starts as the candidate's interval range. A file that cannot be
    /// added (it sticks out of the window, is compacting, or would pass
    /// `max_bytes`) shrinks the window to the side of it holding the seed
    /// interval, so that nothing added later overlaps it: a file added later
    /// lies in a later level, and would need the left-out file along.
    ///
    /// Every file over the seed interval in `levels` is already picked, so
    /// the seed interval always stays inside the window.
    fn fill_window(
        &self,
        c: &mut Candidate,
        seed: usize,
        levels: impl Iterator<Item = usize>,
        max_bytes: u64,
    ) {
        let (mut lo, mut hi) = (c.first, c.last);
        for level in levels {
            let files = &self.levels[level];
            let start = files.partition_point(|&f| self.files[f].last < lo);
            for &f in &files[start..] {
                let file = &self.files[f];
                if file.first > hi {
                    break;
                }
                // A file past the limit is newer than every candidate, so
                // leaving it out constrains nothing added later.
                if c.picked[f] || file.meta.largest_seq >= c.seq_limit {
                    continue;
                }
                let fits = file.first >= lo
                    && file.last <= hi
                    && !file.compacting
                    && c.bytes.saturating_add(file.meta.size) <= max_bytes;
                if fits {
                    self.add(c, f);
                } else if file.last < seed {
                    lo = file.last + 1;
                } else if file.first > seed {
                    hi = file.first - 1;
                } else {
                    // Not reachable (see above); stopping keeps the
                    // candidate valid regardless.
                    return;
                }
            }
        }
    }

    fn make_pick(&self, c: &Candidate, seed: usize) -> L0Pick {
        let mut files = c.files.clone();
        files.sort_by_key(|&f| (self.files[f].sublevel, self.files[f].first));
        let end = &self.bounds[c.last + 1];
        L0Pick {
            files: files.iter().map(|&f| self.files[f].meta.clone()).collect(),
            smallest: self.bounds[c.first].key.clone(),
            largest: end.key.clone(),
            largest_exclusive: !end.after,
            bytes: c.bytes,
            seed_key: self.bounds[seed].key.clone(),
            seed_depth: c.seed_depth,
        }
    }
}

/// A pick under construction.
#[derive(Clone, Debug)]
struct Candidate {
    picked: Vec<bool>,
    files: Vec<usize>,
    bytes: u64,
    /// Interval range covered by the files (empty: `first > last`).
    first: usize,
    last: usize,
    /// Files taken from the seed interval's stack.
    seed_depth: usize,
    /// Files whose largest sequence number is this or more are not taken
    /// (`u64::MAX`: no limit).
    seq_limit: u64,
}

impl Candidate {
    fn new(num_files: usize) -> Candidate {
        Candidate {
            picked: vec![false; num_files],
            files: Vec::new(),
            bytes: 0,
            first: usize::MAX,
            last: 0,
            seed_depth: 0,
            seq_limit: u64::MAX,
        }
    }
}

/// Printable ASCII as is, other bytes as `\xNN`.
#[cfg(any(test, feature = "internals"))]
fn fmt_key(key: &[u8]) -> String {
    let mut s = String::with_capacity(key.len());
    for &b in key {
        if b.is_ascii_graphic() && b != b'\\' {
            s.push(b as char);
        } else {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    s
}
