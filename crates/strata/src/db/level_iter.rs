//! An iterator over one sorted level (L1 and below): the files in key order,
//! opened lazily through the table cache, so a short scan touches only the
//! files it needs. Each file is read through `TableCache::iter`, so a
//! virtual file yields only the keys within its bounds. A compaction's
//! level iterator ([`LevelIter::for_compaction`]) reads without filling the
//! block cache.
//!
//! With a filter prefix ([`LevelIter::with_prefix`]), a file whose prefix
//! filter rules the prefix out is passed over as if it held no point
//! entries: the iterator moves on to the next file in its direction
//! without reading any of its data blocks. That is only right when every
//! key the reader will accept has that prefix (the caller's bounds
//! guarantee it, `sstable::bounds_prefix`), and when the files' range
//! tombstones reach the reader some other way: this iterator yields point
//! entries only, and the reader gathers every file's tombstones itself
//! (`read::iter`).

use super::table_cache::{FileIter, TableCache};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::compare_internal;
use crate::version::FileMeta;
use std::cmp::Ordering;
use std::sync::Arc;

pub struct LevelIter {
    files: Vec<Arc<FileMeta>>,
    cache: Arc<TableCache>,
    /// Index of the file `cur` reads.
    idx: usize,
    cur: Option<FileIter>,
    err: Option<Error>,
    /// Whether blocks read go into the block cache (`TableCache::iter`) or
    /// not (`TableCache::iter_no_fill`).
    fill_cache: bool,
    /// The extractor prefix of every key the reader accepts, if it has one:
    /// files whose prefix filter lacks it are passed over.
    prefix: Option<Vec<u8>>,
}

/// Which way [`LevelIter::open`] looks for a file that may hold entries.
#[derive(Clone, Copy)]
enum Dir {
    Forward,
    Backward,
}

impl LevelIter {
    pub fn new(files: Vec<Arc<FileMeta>>, cache: Arc<TableCache>) -> LevelIter {
        LevelIter {
            files,
            cache,
            idx: 0,
            cur: None,
            err: None,
            fill_cache: true,
            prefix: None,
        }
    }

    /// Passes over files whose prefix filter rules out `prefix`, which
    /// must be the extractor prefix of every key the reader accepts (see
    /// the module comment).
    pub fn with_prefix(self, prefix: Option<Vec<u8>>) -> LevelIter {
        LevelIter { prefix, ..self }
    }

    /// A level iterator for a compaction: blocks it reads from the files
    /// are not added to the block cache.
    pub fn for_compaction(files: Vec<Arc<FileMeta>>, cache: Arc<TableCache>) -> LevelIter {
        LevelIter {
            fill_cache: false,
            ..LevelIter::new(files, cache)
        }
    }

    /// Opens file `idx`, or, if its prefix filter rules it out, the first
    /// file after it (`Dir::Forward`) or before it (`Dir::Backward`) that
    /// it does not rule out. False if there is none, or on an error (kept
    /// in `err`). A file passed over holds no point entry the reader
    /// accepts, so the entries of the file opened instead are the next
    /// (previous) ones in the level: a seek in it for a target that lay in
    /// a file passed over lands on its first (last) entry.
    fn open(&mut self, idx: usize, dir: Dir) -> bool {
        self.cur = None;
        self.idx = idx;
        loop {
            let Some(f) = self.files.get(self.idx) else {
                return false;
            };
            let wanted = match &self.prefix {
                None => Ok(true),
                Some(p) => self.cache.may_hold_prefix(f, p),
            };
            match wanted {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    self.err.get_or_insert(e);
                    return false;
                }
            }
            self.idx = match dir {
                Dir::Forward => self.idx + 1,
                Dir::Backward => match self.idx.checked_sub(1) {
                    Some(i) => i,
                    None => return false,
                },
            };
        }
        let Some(f) = self.files.get(self.idx) else {
            return false;
        };
        let it = if self.fill_cache {
            self.cache.iter(f)
        } else {
            self.cache.iter_no_fill(f)
        };
        match it {
            Ok(it) => {
                self.cur = Some(it);
                true
            }
            Err(e) => {
                self.err.get_or_insert(e);
                false
            }
        }
    }

    fn cur_failed(&mut self) -> bool {
        if let Some(Err(e)) = self.cur.as_ref().map(|c| c.status()) {
            self.err.get_or_insert(e);
            self.cur = None;
            return true;
        }
        false
    }

    fn skip_forward(&mut self) {
        loop {
            if self.err.is_some()
                || self.cur.as_ref().is_some_and(|c| c.valid())
                || self.cur_failed()
            {
                return;
            }
            if self.cur.is_none() || !self.open(self.idx + 1, Dir::Forward) {
                self.cur = None;
                return;
            }
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        loop {
            if self.err.is_some()
                || self.cur.as_ref().is_some_and(|c| c.valid())
                || self.cur_failed()
            {
                return;
            }
            if self.cur.is_none() || self.idx == 0 || !self.open(self.idx - 1, Dir::Backward) {
                self.cur = None;
                return;
            }
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last();
            }
        }
    }
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.cur.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        if self.open(0, Dir::Forward) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first();
            }
            self.skip_forward();
        }
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        if !self.files.is_empty() && self.open(self.files.len() - 1, Dir::Backward) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last();
            }
            self.skip_backward();
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.largest, target) == Ordering::Less);
        if self.open(i, Dir::Forward) {
            if let Some(c) = self.cur.as_mut() {
                c.seek(target);
            }
            self.skip_forward();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = None;
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.smallest, target) != Ordering::Greater);
        if i > 0 && self.open(i - 1, Dir::Backward) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_for_prev(target);
            }
            self.skip_backward();
        } else {
            self.cur = None;
        }
    }

    fn next(&mut self) {
        if let Some(c) = self.cur.as_mut() {
            c.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(c) = self.cur.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|c| c.key()).unwrap_or(&[])
    }

    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|c| c.value()).unwrap_or(&[])
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::BlockCache;
    use crate::db::filenames;
    use crate::db::table_cache::ChecksumRule;
    use crate::key::{user_key, ValueKind};
    use crate::sstable::{FixedPrefix, PrefixExtractor, SstOptions, SstWriter};
    use crate::vfs::{MemVfs, Vfs};
    use std::path::Path;

    /// Six files in key order, file `i` holding keys `X1` and `X2` for
    /// the `i`th letter `X` of `abcdef`, written and read with
    /// `FixedPrefix(1)`.
    fn level() -> (Vec<Arc<FileMeta>>, Arc<TableCache>) {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let dir = Path::new("/db");
        let px: Arc<dyn PrefixExtractor> = Arc::new(FixedPrefix(1));
        let mut files = Vec::new();
        for (i, c) in "abcdef".chars().enumerate() {
            let number = i as u64 + 1;
            let opts = SstOptions {
                prefix_extractor: Some(Arc::clone(&px)),
                ..SstOptions::default()
            };
            let mut w =
                SstWriter::create_in(vfs.as_ref(), &filenames::table(dir, number), opts).unwrap();
            for k in [format!("{c}1"), format!("{c}2")] {
                w.add_entry(k.as_bytes(), 10 - number, ValueKind::Value, b"v")
                    .unwrap();
            }
            let info = w.finish().unwrap();
            files.push(Arc::new(FileMeta {
                number,
                size: info.file_size,
                smallest: info.smallest.unwrap(),
                largest: info.largest.unwrap(),
                smallest_seq: 10 - number,
                largest_seq: 10 - number,
                global_seqno: None,
                num_entries: 2,
                num_deletions: 0,
                num_range_deletions: 0,
                backing: None,
            }));
        }
        let cache = TableCache::new(
            vfs,
            dir.to_path_buf(),
            10,
            Arc::new(BlockCache::new(1 << 20)),
            ChecksumRule::REQUIRED,
            Some(px),
        );
        (files, Arc::new(cache))
    }

    fn key_of(it: &LevelIter) -> Option<String> {
        it.valid()
            .then(|| String::from_utf8_lossy(user_key(it.key())).into_owned())
    }

    /// Every way of moving (seeks to either end, seeks before, inside and
    /// past the files, steps both ways) yields exactly the keys of the
    /// files whose filter may hold the prefix, whichever files around
    /// them are passed over: at the start, the end, or both sides.
    #[test]
    fn files_ruled_out_are_passed_over_both_ways() {
        let (files, cache) = level();
        for p in ["a", "c", "f", "x"] {
            // The keys of the files the filter lets through (a false
            // positive lets a file's other keys through: the level iterator
            // does not apply bounds, its reader does).
            let mut want = Vec::new();
            let mut ruled_out = 0;
            for f in &files {
                if cache.may_hold_prefix(f, p.as_bytes()).unwrap() {
                    let c = (b'a' + (f.number - 1) as u8) as char;
                    want.extend([format!("{c}1"), format!("{c}2")]);
                } else {
                    ruled_out += 1;
                }
            }
            assert!(ruled_out >= 4, "{p}: {ruled_out} files ruled out");
            let mut it = LevelIter::new(files.clone(), Arc::clone(&cache))
                .with_prefix(Some(p.as_bytes().to_vec()));
            let mut got = Vec::new();
            it.seek_to_first();
            while let Some(k) = key_of(&it) {
                got.push(k);
                it.next();
            }
            assert_eq!(got, want, "{p}: forward");
            got.clear();
            it.seek_to_last();
            while let Some(k) = key_of(&it) {
                got.push(k);
                it.prev();
            }
            got.reverse();
            assert_eq!(got, want, "{p}: backward");
            for target in ["", "a", "b2", "c0", "c1", "c3", "e", "f2", "g"] {
                let t = crate::key::seek_key(target.as_bytes(), crate::key::MAX_SEQUENCE);
                it.seek(&t);
                let first = want.iter().find(|k| k.as_str() >= target).cloned();
                assert_eq!(key_of(&it), first, "{p}: seek {target}");
                it.seek_for_prev(&crate::key::make_internal_key(
                    target.as_bytes(),
                    0,
                    ValueKind::Value,
                ));
                let last = want.iter().rev().find(|k| k.as_str() <= target).cloned();
                assert_eq!(key_of(&it), last, "{p}: seek_for_prev {target}");
                it.status().unwrap();
            }
        }
        // Without a prefix, every file is read.
        let mut it = LevelIter::new(files, cache);
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        assert_eq!(n, 12);
    }
}
