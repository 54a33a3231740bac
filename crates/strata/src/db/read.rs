//! The read path: point lookups and iterators over the memtable, the
//! immutable queue, L0 (newest file first) and the sorted levels.
//!
//! A lookup visits sources newest first and stops at the first point entry
//! visible at the snapshot. Range tombstones are collected along the way:
//! a tombstone can only delete entries older than itself, and every older
//! entry lies in the same source or a later one, so the maximum tombstone
//! sequence seen so far decides whether the entry found is deleted.
//!
//! Files are read through the table cache, which keeps every reader of a
//! virtual file (an excise's leftover, see `db::excise`) inside its bounds.
//!
//! An iterator whose bounds lie inside one extractor prefix
//! (`sstable::bounds_prefix`, with `Options::sst.prefix_extractor`) does
//! not read the point entries of a table file whose prefix filter rules
//! that prefix out (see `iter`). It still takes the file's range
//! tombstones: the filter holds point keys only, and a tombstone in a file
//! with no key of the prefix can delete keys of it in older files.
//!
//! `multi_get` answers many keys exactly as `get` would answer each of
//! them at one sequence number and one super version. It sorts the
//! distinct keys and visits the sources in `get`'s order, each source once
//! for every key still open (see `multi_get`): for each key, the sources
//! it consults, and what it collects from each, are `get`'s; only the
//! grouping differs. A key is settled by the first source that finds a
//! point entry for it, or fails there with that source's error; the other
//! keys go on.

use super::level_iter::LevelIter;
use super::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::iter::db_iter::DbIter;
use crate::iter::merging::MergingIterator;
use crate::iter::range_del::RangeDelAggregator;
use crate::iter::InternalIterator;
use crate::key::ValueKind;
use crate::sstable::{Found, RangeTombstone};
use crate::version::{Version, NUM_LEVELS};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::iterator::RawIterator;

pub(crate) fn covering(ts: &[RangeTombstone], key: &[u8], snapshot: u64) -> u64 {
    ts.iter()
        .filter(|t| t.seq <= snapshot && t.start.as_slice() <= key && key < t.end.as_slice())
        .map(|t| t.seq)
        .max()
        .unwrap_or(0)
}

/// The value an entry stands for, given the newest covering tombstone.
fn resolve(f: Found, max_tombstone: u64) -> Result<Option<Vec<u8>>> {
    if f.seq < max_tombstone {
        return Ok(None);
    }
    match f.kind {
        ValueKind::Value => Ok(Some(f.value)),
        ValueKind::Deletion | ValueKind::SingleDeletion => Ok(None),
        k => Err(Error::NotSupported(format!("reading a {k:?} entry"))),
    }
}

/// The sequence number a read without an explicit snapshot reads at: the
/// visible sequence, loaded before the super version so the version holds
/// everything up to it. A virtual excise removes data outright, so a version
/// installed by one must not be read below the excise's sequence number (it
/// would miss the excised data and the ingested files alike): reading at
/// `sv.excised_seq` instead is safe, because an ingestion installs its
/// version only once every lower sequence number is applied.
fn read_seq(db: &DbInner, snapshot: Option<u64>) -> (u64, Arc<SuperVersion>) {
    let visible = db.visible_seq.load(Ordering::Acquire);
    let sv = db.super_version();
    let seq = snapshot.unwrap_or(visible.max(sv.excised_seq));
    (seq, sv)
}

/// The value of `key` at sequence number `snapshot` (`None`: the latest).
pub(crate) fn get(db: &DbInner, key: &[u8], snapshot: Option<u64>) -> Result<Option<Vec<u8>>> {
    let (snapshot, sv) = read_seq(db, snapshot);
    let mut max_tomb = sv.mem.max_covering_tombstone(key, snapshot);
    if let Some(f) = sv.mem.get(key, snapshot) {
        return resolve(f, max_tomb);
    }
    for imm in sv.imm.iter().rev() {
        max_tomb = max_tomb.max(imm.max_covering_tombstone(key, snapshot));
        if let Some(f) = imm.get(key, snapshot)? {
            return resolve(f, max_tomb);
        }
    }
    for (_, meta) in sv.version.files_for_key(key) {
        let (tomb, found) = db.table_cache.point(meta, key, snapshot)?;
        max_tomb = max_tomb.max(tomb);
        if let Some(f) = found {
            return resolve(f, max_tomb);
        }
    }
    Ok(None)
}

/// One distinct key of a `multi_get` while it is looked up: the newest
/// covering range tombstone seen so far (`get`'s `max_tomb`) and, once a
/// source has decided it, the answer.
pub struct PointLookup<'k> {
    pub key: &'k [u8],
    max_tomb: u64,
    answer: Option<Result<Option<Vec<u8>>>>,
}

impl<'k> PointLookup<'k> {
    fn new(key: &'k [u8]) -> PointLookup<'k> {
        PointLookup {
            key,
            max_tomb: 0,
            answer: None,
        }
    }

    /// Whether a source has decided the key (no later source is asked).
    pub fn is_done(&self) -> bool {
        self.answer.is_some()
    }

    /// Notes a range tombstone covering the key, by its sequence number
    /// (0: none).
    pub fn cover(&mut self, tombstone_seq: u64) {
        self.max_tomb = self.max_tomb.max(tombstone_seq);
    }

    /// What a source's point lookup gave: an entry decides the key (against
    /// the tombstones seen so far, this source's included), an error fails
    /// it, nothing leaves it to the next source.
    pub fn settle(&mut self, found: Result<Option<Found>>) {
        match found {
            Ok(None) => {}
            Ok(Some(f)) => self.answer = Some(resolve(f, self.max_tomb)),
            Err(e) => self.answer = Some(Err(e)),
        }
    }
}

/// The values of `keys` at sequence number `snapshot` (`None`: the latest),
/// each read at the same sequence number in the same super version, in
/// the order given (duplicates answered once and copied).
///
/// The distinct keys are sorted, then each source is visited once, in
/// `get`'s order, for the keys still open: the memtable and the immutable
/// queue (newest first) key by key (an ingestion waiting there batches
/// its tables, `Flushable::multi_get`); each L0 file, newest first, for
/// the run of sorted keys inside its bounds; and each lower level in one
/// walk that pairs the runs of keys with the files holding them (the file
/// `files_for_key` would pick for each). Each file is opened through the
/// table cache once per run and read with one `PointCursor`
/// (`TableCache::points`).
pub(crate) fn multi_get<K: AsRef<[u8]>>(
    db: &DbInner,
    keys: impl IntoIterator<Item = K>,
    snapshot: Option<u64>,
) -> Vec<Result<Option<Vec<u8>>>> {
    let keys: Vec<K> = keys.into_iter().collect();
    let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
    let (snapshot, sv) = read_seq(db, snapshot);
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_unstable_by(|&a, &b| keys[a].cmp(keys[b]));
    // The positions asking for each distinct key, in ascending key order.
    let runs: Vec<&[usize]> = order.chunk_by(|&a, &b| keys[a] == keys[b]).collect();
    let mut lookups: Vec<PointLookup<'_>> =
        runs.iter().map(|r| PointLookup::new(keys[r[0]])).collect();
    look_up(db, &sv, snapshot, &mut lookups);
    let mut out: Vec<Result<Option<Vec<u8>>>> = keys.iter().map(|_| Ok(None)).collect();
    for (l, run) in lookups.into_iter().zip(runs) {
        let answer = l.answer.unwrap_or(Ok(None));
        // The last position asking for the key takes its answer, earlier
        // ones a copy.
        if let Some((&last, rest)) = run.split_last() {
            for &i in rest {
                out[i] = answer.clone();
            }
            out[last] = answer;
        }
    }
    out
}

/// Settles `lookups` (distinct keys, ascending) from the sources of `sv`
/// at `snapshot`; a key no source decides stays open (absent).
fn look_up(db: &DbInner, sv: &SuperVersion, snapshot: u64, lookups: &mut [PointLookup<'_>]) {
    for l in lookups.iter_mut() {
        l.cover(sv.mem.max_covering_tombstone(l.key, snapshot));
        if let Some(f) = sv.mem.get(l.key, snapshot) {
            l.settle(Ok(Some(f)));
        }
    }
    for imm in sv.imm.iter().rev() {
        imm.multi_get(lookups, snapshot);
    }
    // The keys still open, as positions in `lookups` (so still ascending).
    let mut open: Vec<usize> = (0..lookups.len())
        .filter(|&i| !lookups[i].is_done())
        .collect();
    // L0, newest file first: each file for the run of keys inside it.
    // Keys it settles stay in `open` until the level is done; later files'
    // runs skip them.
    for f in sv.version.files(0) {
        if open.is_empty() {
            return;
        }
        let lo = open.partition_point(|&i| lookups[i].key < f.smallest_user_key());
        let hi = lo + open[lo..].partition_point(|&i| !f.ends_before(lookups[i].key));
        db.table_cache.points(f, snapshot, lookups, &open[lo..hi]);
    }
    // Each sorted level: walk the open keys and the files together. For a
    // key, the file is the first that does not end before it, as in
    // `Version::files_for_key`; that file serves every following key up to
    // the first one it ends before, less the keys below its smallest (in
    // the gap before it: no file of the level holds them).
    for level in 1..NUM_LEVELS {
        open.retain(|&i| !lookups[i].is_done());
        if open.is_empty() {
            return;
        }
        let files = sv.version.files(level);
        let (mut fi, mut p) = (0, 0);
        while p < open.len() {
            fi += files[fi..].partition_point(|f| f.ends_before(lookups[open[p]].key));
            let Some(f) = files.get(fi) else { break };
            let end = p + open[p..].partition_point(|&i| !f.ends_before(lookups[i].key));
            let start =
                p + open[p..end].partition_point(|&i| lookups[i].key < f.smallest_user_key());
            db.table_cache
                .points(f, snapshot, lookups, &open[start..end]);
            p = end;
        }
    }
}

/// The cursor under the public iterators. Holds the super version it was
/// built from, so the memtables and files it reads stay alive.
pub(crate) struct DbCursor {
    pub inner: DbIter,
    _sv: Arc<SuperVersion>,
    _version: Arc<Version>,
}

/// What an iterator reads: a snapshot's sequence number (`None`: the
/// latest) and user-key bounds `[lower, upper)`.
pub(crate) struct IterSpec {
    pub snapshot: Option<u64>,
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
}

fn overlaps_bounds(lo: &[u8], hi: &[u8], opts: &IterSpec) -> bool {
    opts.upper.as_deref().is_none_or(|u| lo < u) && opts.lower.as_deref().is_none_or(|l| hi >= l)
}

/// An iterator over what `opts` selects: the memtables, the immutable
/// queue, each L0 file and one `LevelIter` per lower level, merged, with
/// the range tombstones of every source that overlaps the bounds.
///
/// With a prefix extractor and bounds inside one of its prefixes
/// (`sstable::bounds_prefix`), a table file whose prefix filter rules the
/// prefix out contributes no point entries: an L0 file is left out of the
/// merge, a lower level's file is passed over by its `LevelIter` when the
/// scan reaches it (`TableCache::may_hold_prefix` counts both). Only its
/// point entries: its tombstones are gathered here beforehand like every
/// other file's, so a tombstone in such a file still deletes the keys it
/// covers in older files. The answer is exactly that of the same iterator
/// without the extractor: a file ruled out holds no point entry (value or
/// deletion) of the prefix, and every key within the bounds has it.
pub(crate) fn iter(db: &DbInner, opts: IterSpec) -> Result<RawIterator> {
    let opts = &opts;
    let (snapshot, sv) = read_seq(db, opts.snapshot);
    let version = Arc::clone(&sv.version);
    let prefix: Option<Vec<u8>> = db.opts.sst.prefix_extractor.as_deref().and_then(|px| {
        crate::sstable::bounds_prefix(px, opts.lower.as_deref(), opts.upper.as_deref())
            .map(<[u8]>::to_vec)
    });
    let mut children: Vec<Box<dyn InternalIterator + Send>> = Vec::new();
    let mut tombstones: Vec<RangeTombstone> = Vec::new();
    children.push(Box::new(sv.mem.iter()));
    tombstones.extend(sv.mem.range_tombstones());
    for imm in sv.imm.iter().rev() {
        children.push(imm.iter());
        tombstones.extend(imm.range_tombstones());
    }
    for f in version.files(0) {
        if !overlaps_bounds(f.smallest_user_key(), f.largest_user_key(), opts) {
            continue;
        }
        // Tombstones first, whatever the filter says of the points.
        tombstones.extend(db.table_cache.range_tombstones(f)?);
        if let Some(p) = &prefix {
            if !db.table_cache.may_hold_prefix(f, p)? {
                continue;
            }
        }
        children.push(Box::new(db.table_cache.iter(f)?));
    }
    for level in 1..crate::version::NUM_LEVELS {
        let files: Vec<_> = version
            .files(level)
            .iter()
            .filter(|f| overlaps_bounds(f.smallest_user_key(), f.largest_user_key(), opts))
            .cloned()
            .collect();
        if files.is_empty() {
            continue;
        }
        for f in files.iter().filter(|f| f.num_range_deletions > 0) {
            tombstones.extend(db.table_cache.range_tombstones(f)?);
        }
        children.push(Box::new(
            LevelIter::new(files, Arc::clone(&db.table_cache)).with_prefix(prefix.clone()),
        ));
    }
    let merged = MergingIterator::new(children);
    let rd = RangeDelAggregator::new(snapshot, tombstones);
    Ok(RawIterator {
        cursor: DbCursor {
            inner: DbIter::new(
                Box::new(merged),
                snapshot,
                rd,
                opts.lower.clone(),
                opts.upper.clone(),
            ),
            _sv: sv,
            _version: version,
        },
    })
}
