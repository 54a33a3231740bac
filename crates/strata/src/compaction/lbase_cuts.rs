//! Where Lbase is cut: the keys at which bulk loaders cut the files they
//! are about to ingest (`Db::ingest_split_keys`) and at which L0 -> Lbase
//! compactions cut their outputs.
//!
//! A file cut at these keys that lands in L0 overlaps one slice of Lbase,
//! so the L0 -> Lbase compaction that takes it rewrites that slice, not the
//! whole level (W5, docs/bench-history/w5-sublevels.md). The keys are each Lbase file's
//! start (but the first file's) and, in a file of at least twice the
//! slice size ([`split_bytes`]: `lbase_split_bytes` when set, else scaled
//! to the data by `lbase_slices`; 0 when both are 0), the points that cut
//! its data blocks into parts of about that size (from its index block).
//! Without the inner
//! points, Lbase's slices are its files: 32 MiB by default, and a whole
//! ingested unit when the first unit of a load went to the bottom of an
//! empty tree, so every unit after it would land in L0 as files spanning
//! all of it and the first L0 -> Lbase compaction would take them all.
//!
//! Invariants of [`cut_keys`]'s result: strictly increasing; every key lies
//! inside the span of the Lbase files (after the first file's smallest
//! key); L0 -> Lbase outputs cut at the keys of the Lbase files they
//! replace reproduce those keys as file boundaries (the inner points once
//! the output parts are below twice the slice size), so the next
//! loader's cuts line up with the last one's.

use super::picker::CompactionOptions;
use crate::version::{FileMeta, Version, NUM_LEVELS};
use std::sync::Arc;

/// The slice size Lbase is cut at when the tree holds `data_bytes`:
/// `lbase_split_bytes` when set; else, with `lbase_slices` set, the data's
/// bytes over `lbase_slices` rounded down to a power of two, but at least
/// a 32nd of `target_file_size` (1 MiB by default: below that, the
/// per-file and per-compaction costs of tiny slices outweigh what they
/// bound); 0 (no slicing) when both options are 0.
///
/// Scaled to the whole tree, not to Lbase: the point is that one
/// L0 -> Lbase compaction stays a small share of the data. While Lbase is
/// the bottom level (the first 640 MB of a load by default) it holds about
/// all the data and is cut into `lbase_slices` to twice as many slices;
/// once Lbase is a level above the bottom it holds a tenth of the data or
/// less, its files (`target_file_size`) are already small against the
/// data, and finer slices there only cost: in W5 at 100 warehouses,
/// slicing Lbase at a 32nd of itself made the Lbase -> bottom compactions
/// take 8 MiB files that each rewrote whole 32 MiB files below (L6 read
/// 11.8 GB against 8.4 GB, 1,607 compactions against 682). The size steps
/// only when the data doubles, so the cut points stay put in between.
pub fn split_bytes(data_bytes: u64, o: &CompactionOptions) -> u64 {
    if o.lbase_split_bytes > 0 {
        return o.lbase_split_bytes;
    }
    if o.lbase_slices == 0 {
        return 0;
    }
    let s = (data_bytes / o.lbase_slices).max(o.target_file_size / 32);
    match s {
        0 => 0,
        s => 1 << (63 - s.leading_zeros()),
    }
}

/// [`split_bytes`] of version `v`'s data.
pub fn split_bytes_of(v: &Version, o: &CompactionOptions) -> u64 {
    split_bytes((0..NUM_LEVELS).map(|l| v.level_bytes(l)).sum(), o)
}

/// The cut keys of `files` (one level's files, sorted and disjoint).
/// `inner(file, parts)` returns keys that cut `file` into `parts` parts of
/// about equal bytes (a hint: empty when the file cannot be read).
pub fn cut_keys(
    files: &[Arc<FileMeta>],
    split_bytes: u64,
    inner: &dyn Fn(&FileMeta, usize) -> Vec<Vec<u8>>,
) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let push = |k: Vec<u8>, out: &mut Vec<Vec<u8>>| {
        if out.last().is_none_or(|last| *last < k) {
            out.push(k);
        }
    };
    for (i, f) in files.iter().enumerate() {
        if i > 0 {
            push(f.smallest_user_key().to_vec(), &mut out);
        }
        let parts = f.size.checked_div(split_bytes).unwrap_or(0);
        if parts < 2 {
            continue;
        }
        let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
        for k in inner(f, parts as usize) {
            // Only points strictly inside the file cut it.
            if lo < k.as_slice() && k.as_slice() <= hi {
                push(k, &mut out);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    fn file(lo: &str, hi: &str, size: u64) -> Arc<FileMeta> {
        Arc::new(FileMeta {
            number: 1,
            size,
            smallest: make_internal_key(lo.as_bytes(), 1, ValueKind::Value),
            largest: make_internal_key(hi.as_bytes(), 1, ValueKind::Value),
            smallest_seq: 1,
            largest_seq: 1,
            global_seqno: None,
            num_entries: 1,
            num_deletions: 0,
            num_range_deletions: 0,
            backing: None,
        })
    }

    /// Inner points of a file `lo..hi`: the keys `inner` lists for it,
    /// recording how many parts were asked for.
    fn run(files: &[Arc<FileMeta>], split: u64, inner: &[&str]) -> (Vec<String>, Vec<usize>) {
        let asked = std::cell::RefCell::new(Vec::new());
        let keys = cut_keys(files, split, &|_, parts| {
            asked.borrow_mut().push(parts);
            inner.iter().map(|k| k.as_bytes().to_vec()).collect()
        });
        let keys = keys
            .into_iter()
            .map(|k| String::from_utf8(k).unwrap_or_default())
            .collect();
        (keys, asked.into_inner())
    }

    fn opts(fixed: u64, slices: u64) -> CompactionOptions {
        CompactionOptions {
            lbase_split_bytes: fixed,
            lbase_slices: slices,
            target_file_size: 32 << 20,
            ..CompactionOptions::default()
        }
    }

    #[test]
    fn the_split_size_scales_with_the_data_in_powers_of_two() {
        let o = opts(0, 32);
        // A 32nd of Lbase, rounded down to a power of two.
        assert_eq!(split_bytes(320 << 20, &o), 8 << 20);
        assert_eq!(split_bytes(512 << 20, &o), 16 << 20);
        assert_eq!(split_bytes((512 << 20) - 1, &o), 8 << 20);
        assert_eq!(split_bytes(10 << 30, &o), 256 << 20);
        // At least a 32nd of the target file size, however little data.
        assert_eq!(split_bytes(0, &o), 1 << 20);
        assert_eq!(split_bytes(40 << 20, &o), 1 << 20);
        // A fixed size wins; both 0 turn slicing off.
        assert_eq!(split_bytes(320 << 20, &opts(2 << 20, 32)), 2 << 20);
        assert_eq!(split_bytes(320 << 20, &opts(0, 0)), 0);
    }

    #[test]
    fn small_files_are_cut_only_at_their_boundaries() {
        let files = [file("a", "c", 30), file("d", "f", 39), file("g", "k", 10)];
        // Below twice the split size: no inner points asked for.
        assert_eq!(
            run(&files, 20, &["b"]),
            (vec!["d".into(), "g".into()], vec![])
        );
        // Split size 0: boundaries only.
        assert_eq!(run(&files, 0, &["b"]).0, ["d", "g"]);
    }

    #[test]
    fn large_files_get_inner_points_inside_them_only() {
        let files = [file("a", "c", 100), file("d", "m", 45)];
        // 100 / 20 = 5 parts of the first file, 45 / 20 = 2 of the second;
        // "a" (the start), "a" again and "z" (outside) are dropped, and so
        // is what would not increase.
        let (keys, asked) = run(&files, 20, &["a", "b", "a", "c", "e", "z"]);
        assert_eq!(asked, [5, 2]);
        assert_eq!(keys, ["b", "c", "d", "e"]);
    }
}
