//! Excise: cutting the user-key range `[start, end)` out of a version
//! without rewriting any data (Pebble's virtual sstables).
//!
//! For every file of every level whose range intersects `[start, end)`:
//! - a file entirely inside the range is deleted from the version;
//! - a file reaching past either end is replaced by up to two *virtual
//!   files*: new `FileMeta`s under new numbers whose `backing` names the
//!   physical table (for a file that is itself virtual, its own backing
//!   table), bounded to the part left of `start` and the part right of
//!   `end`. A side holding nothing (no point entry and no tombstone
//!   fragment) is omitted.
//!
//! Invariants of a virtual file, relied on by every reader:
//! - its bounds are *tight*: the smallest bound is the first point entry or
//!   tombstone start of the part, the largest the last point entry or a
//!   tombstone's exclusive end (`(end, MAX_SEQUENCE, RangeDeletion)`,
//!   making `largest_is_exclusive()` true), both found in the backing table
//!   through the parent's own bounds, with tombstones clipped to the part;
//! - a bound never falls between two versions of one user key (the left
//!   part ends with the oldest version of its last key, the right part
//!   starts with the newest version of its first key), so readers clamp by
//!   user key alone (`iter::BoundedIter`);
//! - the parts of one file are disjoint and lie within the parent's range,
//!   so they keep every level's ordering and non-overlap;
//! - sequence bounds and global sequence number are the parent's (loose
//!   but correct); `num_range_deletions` counts the tombstones clipped to
//!   the part, exactly, so readers that skip files without tombstones stay
//!   right;
//! - `size` is an estimate: the bytes of the backing table's data blocks
//!   from the one holding the smallest bound to the one holding the largest
//!   (whole blocks, so the two parts of a file may together exceed it by a
//!   block), at least 1 and at most the parent's size; entries and
//!   deletions are the parent's scaled by the same share.
//!
//! The caller adds the excise's changes and the ingested files to one
//! MANIFEST edit, so the cut and the ingestion are atomic. An excise may
//! only run when no registered snapshot is older than the ingestion (the
//! data it removes would vanish from that snapshot) and nothing in memory
//! holds data in the range (memtables are not cut); `db::ingest` falls back
//! to a range-tombstone file otherwise.

use super::table_cache::TableCache;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{compare_internal, make_internal_key, seek_key, ValueKind, MAX_SEQUENCE};
use crate::sstable::RangeTombstone;
use crate::version::{FileMeta, Version, VersionEdit, NUM_LEVELS};
use std::cmp::Ordering;
use std::sync::Arc;

/// What an excise changed, for the event log and the caller's result.
#[derive(Default)]
pub(crate) struct Excised {
    /// Files taken out of the version (entirely inside, or replaced).
    pub removed: Vec<(usize, Arc<FileMeta>)>,
    /// Virtual files put in their place.
    pub added: Vec<(usize, FileMeta)>,
}

/// Whether `f`'s user-key range intersects `[start, end)`.
pub(crate) fn overlaps_range(f: &FileMeta, start: &[u8], end: &[u8]) -> bool {
    f.smallest_user_key() < end
        && if f.largest_is_exclusive() {
            start < f.largest_user_key()
        } else {
            start <= f.largest_user_key()
        }
}

/// Adds to `edit` the changes that cut `[start, end)` out of `v`, taking
/// file numbers for virtual files from `new_number`.
pub(crate) fn excise(
    v: &Version,
    cache: &TableCache,
    start: &[u8],
    end: &[u8],
    new_number: &dyn Fn() -> u64,
    edit: &mut VersionEdit,
) -> Result<Excised> {
    let mut out = Excised::default();
    for level in 0..NUM_LEVELS {
        for f in v.files(level) {
            if !overlaps_range(f, start, end) {
                continue;
            }
            let parts = remainder(cache, f, start, end, new_number)?;
            edit.delete_file(level, f.number);
            out.removed.push((level, Arc::clone(f)));
            for p in parts {
                edit.add_file(level, p.clone());
                out.added.push((level, p));
            }
        }
    }
    Ok(out)
}

/// The exclusive-end sentinel of a tombstone ending at `end`.
fn sentinel(end: &[u8]) -> Vec<u8> {
    make_internal_key(end, MAX_SEQUENCE, ValueKind::RangeDeletion)
}

/// The smallest internal key a tombstone contributes to a file's bounds.
fn tombstone_start(t: &RangeTombstone) -> Vec<u8> {
    make_internal_key(&t.start, t.seq, ValueKind::RangeDeletion)
}

fn min_key(a: Option<Vec<u8>>, b: Vec<u8>) -> Option<Vec<u8>> {
    match a {
        Some(a) if compare_internal(&a, &b) != Ordering::Greater => Some(a),
        _ => Some(b),
    }
}

fn max_key(a: Option<Vec<u8>>, b: Vec<u8>) -> Option<Vec<u8>> {
    match a {
        Some(a) if compare_internal(&a, &b) != Ordering::Less => Some(a),
        _ => Some(b),
    }
}

/// The virtual files that keep what `f` holds outside `[start, end)`.
fn remainder(
    cache: &TableCache,
    f: &FileMeta,
    start: &[u8],
    end: &[u8],
    new_number: &dyn Fn() -> u64,
) -> Result<Vec<FileMeta>> {
    let reaches_left = f.smallest_user_key() < start;
    let reaches_right = if f.largest_is_exclusive() {
        f.largest_user_key() > end
    } else {
        f.largest_user_key() >= end
    };
    if !reaches_left && !reaches_right {
        return Ok(Vec::new());
    }
    // Both read through `f`'s own bounds: a virtual parent contributes
    // only what it covers.
    let mut it = cache.iter(f)?;
    let tombstones = cache.range_tombstones(f)?;
    let mut parts = Vec::new();
    if reaches_left {
        // Tombstones clipped to end at `start`.
        let ts: Vec<RangeTombstone> = tombstones
            .iter()
            .filter(|t| t.start.as_slice() < start)
            .map(|t| RangeTombstone {
                start: t.start.clone(),
                end: t.end.as_slice().min(start).to_vec(),
                seq: t.seq,
            })
            .collect();
        it.seek_to_first();
        it.status()?;
        let mut smallest = None;
        if it.valid() && crate::key::user_key(it.key()) < start {
            smallest = Some(it.key().to_vec());
        }
        // The last entry before `start` is the oldest version of its key.
        it.seek_for_prev(&seek_key(start, MAX_SEQUENCE));
        it.status()?;
        let mut largest = it.valid().then(|| it.key().to_vec());
        for t in &ts {
            smallest = min_key(smallest, tombstone_start(t));
            largest = max_key(largest, sentinel(&t.end));
        }
        if let (Some(s), Some(l)) = (smallest, largest) {
            parts.push(part(cache, f, s, l, ts.len() as u64, new_number)?);
        }
    }
    if reaches_right {
        // Tombstones clipped to start at `end`.
        let ts: Vec<RangeTombstone> = tombstones
            .iter()
            .filter(|t| t.end.as_slice() > end)
            .map(|t| RangeTombstone {
                start: t.start.as_slice().max(end).to_vec(),
                end: t.end.clone(),
                seq: t.seq,
            })
            .collect();
        // The first entry at or after `end` is the newest version of its key.
        it.seek(&seek_key(end, MAX_SEQUENCE));
        it.status()?;
        let mut smallest = it.valid().then(|| it.key().to_vec());
        it.seek_to_last();
        it.status()?;
        let mut largest = None;
        if it.valid() && crate::key::user_key(it.key()) >= end {
            largest = Some(it.key().to_vec());
        }
        for t in &ts {
            smallest = min_key(smallest, tombstone_start(t));
            largest = max_key(largest, sentinel(&t.end));
        }
        if let (Some(s), Some(l)) = (smallest, largest) {
            parts.push(part(cache, f, s, l, ts.len() as u64, new_number)?);
        }
    }
    Ok(parts)
}

/// One virtual file of `f` with the given bounds.
fn part(
    cache: &TableCache,
    f: &FileMeta,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    num_range_deletions: u64,
    new_number: &dyn Fn() -> u64,
) -> Result<FileMeta> {
    let parent = f.size.max(1);
    let size = cache
        .get(f)?
        .approximate_span(&smallest, &largest)
        .clamp(1, parent);
    let share = |n: u64| (u128::from(n) * u128::from(size) / u128::from(parent)) as u64;
    Ok(FileMeta {
        number: new_number(),
        size,
        smallest,
        largest,
        smallest_seq: f.smallest_seq,
        largest_seq: f.largest_seq,
        global_seqno: f.global_seqno,
        num_entries: share(f.num_entries),
        num_deletions: share(f.num_deletions),
        num_range_deletions,
        backing: Some(f.backing_number()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::BlockCache;
    use crate::db::filenames;
    use crate::key::{user_key, ParsedKey};
    use crate::sstable::{SstOptions, SstWriter};
    use crate::vfs::{MemVfs, Vfs};
    use std::cell::Cell;
    use std::path::Path;

    /// Table 1: a@5 b@6 b@3 d@4 f@2 h@7, tombstones [c,e)@8 and [g,i)@9.
    fn setup() -> (TableCache, FileMeta) {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let dir = Path::new("/db");
        let mut w = SstWriter::create_in(
            vfs.as_ref(),
            &filenames::table(dir, 1),
            SstOptions::default(),
        )
        .unwrap();
        for (k, s) in [("a", 5), ("b", 6), ("b", 3), ("d", 4), ("f", 2), ("h", 7)] {
            w.add_entry(k.as_bytes(), s, ValueKind::Value, k.as_bytes())
                .unwrap();
        }
        w.add_range_tombstone(b"c", b"e", 8).unwrap();
        w.add_range_tombstone(b"g", b"i", 9).unwrap();
        let info = w.finish().unwrap();
        let f = FileMeta {
            number: 1,
            size: info.file_size,
            smallest: info.smallest.unwrap(),
            largest: info.largest.unwrap(),
            smallest_seq: 2,
            largest_seq: 9,
            global_seqno: None,
            num_entries: 6,
            num_deletions: 0,
            num_range_deletions: 2,
            backing: None,
        };
        let cache = TableCache::new(
            vfs,
            dir.to_path_buf(),
            10,
            Arc::new(BlockCache::new(1 << 20)),
            crate::db::table_cache::ChecksumRule::REQUIRED,
            None,
        );
        (cache, f)
    }

    fn cut(cache: &TableCache, f: &FileMeta, a: &str, b: &str) -> Vec<FileMeta> {
        let next = Cell::new(100);
        let n = || {
            next.set(next.get() + 1);
            next.get()
        };
        remainder(cache, f, a.as_bytes(), b.as_bytes(), &n).unwrap()
    }

    fn show(k: &[u8]) -> String {
        let p = ParsedKey::parse(k).unwrap();
        format!(
            "{}@{}/{}",
            String::from_utf8_lossy(p.user_key),
            p.seq,
            p.kind
        )
    }

    fn bounds(f: &FileMeta) -> (String, String) {
        (show(&f.smallest), show(&f.largest))
    }

    /// What a reader of `f` sees: point keys and tombstones.
    fn contents(cache: &TableCache, f: &FileMeta) -> (Vec<String>, Vec<(String, String)>) {
        let mut it = cache.iter(f).unwrap();
        let mut keys = Vec::new();
        it.seek_to_first();
        while it.valid() {
            keys.push(show(it.key()));
            it.next();
        }
        let ts = cache
            .range_tombstones(f)
            .unwrap()
            .iter()
            .map(|t| {
                (
                    String::from_utf8_lossy(&t.start).into_owned(),
                    String::from_utf8_lossy(&t.end).into_owned(),
                )
            })
            .collect();
        (keys, ts)
    }

    const MAX: u64 = MAX_SEQUENCE;

    #[test]
    fn parts_have_tight_bounds() {
        let (cache, f) = setup();
        // Both sides; the right one ends at a tombstone's exclusive end.
        let p = cut(&cache, &f, "b", "g");
        assert_eq!(p.len(), 2);
        assert_eq!(bounds(&p[0]), ("a@5/1".into(), "a@5/1".into()));
        assert_eq!(p[0].num_range_deletions, 0);
        assert_eq!(bounds(&p[1]), ("g@9/15".into(), format!("i@{MAX}/15")));
        assert!(p[1].largest_is_exclusive());
        assert_eq!(p[1].num_range_deletions, 1);
        assert!(p.iter().all(|x| x.backing == Some(1) && x.number > 100));
        assert!(p.iter().all(|x| x.size >= 1 && x.size <= f.size));

        // Inside a tombstone: the left part ends at the clipped tombstone's
        // end (past the oldest version of b), the right part starts at the
        // clipped tombstone's start (before d@4).
        let p = cut(&cache, &f, "c0", "d");
        assert_eq!(bounds(&p[0]), ("a@5/1".into(), format!("c0@{MAX}/15")));
        assert_eq!(
            contents(&cache, &p[0]),
            (
                vec!["a@5/1".into(), "b@6/1".into(), "b@3/1".into()],
                vec![("c".into(), "c0".into())]
            )
        );
        assert_eq!(bounds(&p[1]), ("d@8/15".into(), format!("i@{MAX}/15")));
        assert_eq!(p[1].num_range_deletions, 2);
        assert_eq!(
            contents(&cache, &p[1]),
            (
                vec!["d@4/1".into(), "f@2/1".into(), "h@7/1".into()],
                vec![("d".into(), "e".into()), ("g".into(), "i".into())]
            )
        );

        // Nothing left, or one side only.
        assert!(cut(&cache, &f, "a", "z").is_empty());
        let p = cut(&cache, &f, "0", "b");
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].smallest_user_key(), b"b");
        assert_eq!(show(&p[0].smallest), "b@6/1", "the newest version of b");
        let p = cut(&cache, &f, "b0", "z");
        assert_eq!(p.len(), 1);
        assert_eq!(show(&p[0].largest), "b@3/1", "the oldest version of b");
        // The exclusive end is outside the file: a cut ending at it leaves
        // no right part, one ending just before it leaves only that key
        // range of the tombstone.
        assert_eq!(cut(&cache, &f, "h", "i").len(), 1);
        let p = cut(&cache, &f, "a", "h0");
        assert_eq!(p.len(), 1);
        assert_eq!(
            contents(&cache, &p[0]),
            (vec![], vec![("h0".into(), "i".into())])
        );
    }

    #[test]
    fn a_virtual_file_is_cut_within_its_own_bounds() {
        let (cache, f) = setup();
        let right = cut(&cache, &f, "c0", "d").pop().unwrap(); // [d@8 .. i)
        let p = cut(&cache, &right, "f", "g0");
        assert_eq!(p.len(), 2);
        assert!(p.iter().all(|x| x.backing == Some(1)), "the physical table");
        assert_eq!(bounds(&p[0]), ("d@8/15".into(), format!("e@{MAX}/15")));
        assert_eq!(
            contents(&cache, &p[0]),
            (vec!["d@4/1".into()], vec![("d".into(), "e".into())])
        );
        assert_eq!(bounds(&p[1]), ("g0@9/15".into(), format!("i@{MAX}/15")));
        assert_eq!(
            contents(&cache, &p[1]),
            (vec!["h@7/1".into()], vec![("g0".into(), "i".into())])
        );
        // Nothing of the parent's left side (a, b) leaks into its parts.
        let p = cut(&cache, &right, "e", "z");
        assert_eq!(contents(&cache, &p[0]).0, vec!["d@4/1".to_string()]);
        assert!(user_key(&p[0].smallest) >= b"d".as_slice());
    }

    #[test]
    fn excise_deletes_and_replaces_across_levels() {
        let (cache, f) = setup();
        let mut inside = f.clone();
        inside.number = 2;
        inside.backing = Some(1);
        inside.smallest = make_internal_key(b"d", 4, ValueKind::Value);
        inside.largest = make_internal_key(b"f", 2, ValueKind::Value);
        inside.num_range_deletions = 1;
        let mut e = VersionEdit::default();
        e.add_file(0, f.clone());
        e.add_file(3, inside);
        let v = Version::new().apply(&e, "test").unwrap();
        let mut edit = VersionEdit::default();
        let next = Cell::new(10);
        let n = || {
            next.set(next.get() + 1);
            next.get()
        };
        let x = excise(&v, &cache, b"c", b"g", &n, &mut edit).unwrap();
        assert_eq!(edit.deleted_files, vec![(0, 1), (3, 2)]);
        assert_eq!(x.removed.len(), 2);
        let added: Vec<(usize, String, String)> = edit
            .new_files
            .iter()
            .map(|(l, f)| {
                let (a, b) = bounds(f);
                (*l, a, b)
            })
            .collect();
        assert_eq!(
            added,
            vec![
                (0, "a@5/1".into(), "b@3/1".into()),
                (0, "g@9/15".into(), format!("i@{MAX}/15")),
            ]
        );
        let cut = v.apply(&edit, "test").unwrap();
        assert!(cut.all_files().all(|(_, f)| !overlaps_range(f, b"c", b"g")));
    }
}
