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

use super::level_iter::LevelIter;
use super::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::iter::db_iter::DbIter;
use crate::iter::merging::MergingIterator;
use crate::iter::range_del::RangeDelAggregator;
use crate::iter::InternalIterator;
use crate::key::ValueKind;
use crate::sstable::{Found, RangeTombstone};
use crate::version::Version;
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

pub(crate) fn iter(db: &DbInner, opts: IterSpec) -> Result<RawIterator> {
    let opts = &opts;
    let (snapshot, sv) = read_seq(db, opts.snapshot);
    let version = Arc::clone(&sv.version);
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
        tombstones.extend(db.table_cache.range_tombstones(f)?);
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
        children.push(Box::new(LevelIter::new(files, Arc::clone(&db.table_cache))));
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
