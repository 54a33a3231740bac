//! An iterator over one sorted level (L1 and below): the files in key order,
//! opened lazily through the table cache, so a short scan touches only the
//! files it needs. Each file is read through `TableCache::iter`, so a
//! virtual file yields only the keys within its bounds. A compaction's
//! level iterator ([`LevelIter::for_compaction`]) reads without filling the
//! block cache.

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
        }
    }

    /// A level iterator for a compaction: blocks it reads from the files
    /// are not added to the block cache.
    pub fn for_compaction(files: Vec<Arc<FileMeta>>, cache: Arc<TableCache>) -> LevelIter {
        LevelIter {
            fill_cache: false,
            ..LevelIter::new(files, cache)
        }
    }

    fn open(&mut self, idx: usize) -> bool {
        self.cur = None;
        self.idx = idx;
        let Some(f) = self.files.get(idx) else {
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
            if self.cur.is_none() || !self.open(self.idx + 1) {
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
            if self.cur.is_none() || self.idx == 0 || !self.open(self.idx - 1) {
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
        if self.open(0) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first();
            }
            self.skip_forward();
        }
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        if !self.files.is_empty() && self.open(self.files.len() - 1) {
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
        if self.open(i) {
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
        if i > 0 && self.open(i - 1) {
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
