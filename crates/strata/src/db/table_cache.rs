//! The table cache: open `Table` readers by *physical* file number, at most
//! `max_open_files` of them (least recently used closed first). Every table
//! shares the database's block cache. A table whose footer declares no
//! block checksum is refused unless the database writes such tables itself
//! (`Options::requires_table_checksums`).
//!
//! [`ChecksumRule`] is the one place that applies that rule to a table
//! file the database opens. Every reader of the database's tables goes
//! through it, not only this cache: ingestion, the open's redo of an
//! ingestion from its WAL marker (`open::roll_forward`) and its audit of
//! unreferenced tables (`recovery_checks`), and repair. A reader that took
//! "none" on the footer's word would decide on bytes nothing verified (and
//! hand the database a table this cache then refuses on every read).
//!
//! A virtual file (see `db::excise`) is read through its backing table: the
//! cache opens and keys tables by `FileMeta::backing_number`, so all virtual
//! files cut from one table share one reader. Every way of reading a file
//! goes through here and sees only the file's own bounds: `iter` clamps the
//! table iterator (`iter::BoundedIter`), `range_tombstones` clips the
//! table's tombstones, `point` and `points` (a `multi_get`'s run of
//! keys) refuse keys outside. Closing a reader
//! (eviction) never deletes anything; the obsolete-file pass deletes a
//! physical file only when no live version references it directly or as a
//! backing table (`VersionSet::live_files`).
//!
//! Every table is opened with the database's prefix extractor
//! (`Options::sst.prefix_extractor`), which the table uses only if the
//! file records one of the same name: a file written without one, or with
//! another (before a reopen that changed it, or ingested), is never
//! skipped by [`TableCache::may_hold_prefix`] and its point lookups use
//! only its whole-key filter. A virtual file answers with its backing
//! table's filter, which holds at least the virtual file's keys.

use super::read::PointLookup;
use crate::cache::{BlockCache, LruCache};
use crate::db::filenames;
use crate::db::options::Options;
use crate::error::Result;
use crate::iter::{BoundedIter, KeyBounds};
use crate::sstable::reader::PointCursor;
use crate::sstable::{Found, PrefixExtractor, RangeTombstone, Table, TableIter, TableOptions};
use crate::version::FileMeta;
use crate::vfs::{RandomAccessFile, Vfs};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// An iterator over one file: its table's, clamped to the file's bounds
/// when the file is virtual.
pub type FileIter = BoundedIter<TableIter>;

pub struct TableCache {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    tables: LruCache<Arc<Table>>,
    block_cache: Arc<BlockCache>,
    /// Files opened once and read through these handles, not their names
    /// (a read-only database's tables: `pin`).
    pinned: HashMap<u64, Arc<dyn RandomAccessFile>>,
    /// Whether a table whose footer declares no block checksum is read.
    rule: ChecksumRule,
    /// The database's prefix extractor, given to every table opened.
    prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Files whose prefix filter an iterator asked (`may_hold_prefix` on a
    /// table with a usable prefix filter), and those it ruled out.
    prefix_checks: AtomicU64,
    prefix_skips: AtomicU64,
}

/// Whether the database reads a table whose footer declares no block
/// checksum (`Options::requires_table_checksums` decides), applied where a
/// table file is opened. A format_version 5 footer carries no checksum of
/// its own, so one flipped bit says "none"; see `Table::require_checksums`.
/// Who refuses a table without checksums when the database reads it,
/// named with the option: a database written with checksums off and
/// opened with the default options would read as damaged otherwise.
const DATABASE_NEEDS: &str = "the database (opened with Options::sst.checksum other than none; \
     tables written with ChecksumType::None are read with it set to none)";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChecksumRule {
    /// Refuse a table whose footer declares no block checksum.
    require: bool,
}

impl ChecksumRule {
    /// Every table must declare a block checksum (a database that writes
    /// checksummed tables); the unit tests' rule.
    #[cfg(test)]
    pub(crate) const REQUIRED: ChecksumRule = ChecksumRule { require: true };

    /// The rule of a database opened with `opts`.
    pub(crate) fn of(opts: &Options) -> ChecksumRule {
        ChecksumRule {
            require: opts.requires_table_checksums(),
        }
    }

    /// Refuses `t` if the rule requires a checksum and its footer declares
    /// none: corruption naming the file and the footer's offset. `needs`
    /// says who requires it ("the database", "ingestion").
    pub(crate) fn check(self, t: &Table, needs: &str) -> Result<()> {
        if self.require {
            t.require_checksums(needs)?;
        }
        Ok(())
    }

    /// Opens the table at `path` (`Table::open_in`) and applies the rule
    /// for the database ([`DATABASE_NEEDS`]).
    pub(crate) fn open(self, vfs: &dyn Vfs, path: &Path, opts: TableOptions) -> Result<Arc<Table>> {
        let t = Table::open_in(vfs, path, opts)?;
        self.check(&t, DATABASE_NEEDS)?;
        Ok(t)
    }
}

/// The table files of the database in `dir`, for the readers outside the
/// cache (recovery, repair): each opened whole, at its entries' own
/// sequence numbers, under the database's checksum rule.
#[derive(Clone, Copy)]
pub(crate) struct TableFiles<'a> {
    pub(crate) vfs: &'a dyn Vfs,
    pub(crate) dir: &'a Path,
    pub(crate) rule: ChecksumRule,
}

impl TableFiles<'_> {
    /// The path of table `n`.
    pub(crate) fn path(&self, n: u64) -> PathBuf {
        filenames::table(self.dir, n)
    }

    /// Opens table `n` (see [`ChecksumRule::open`]).
    pub(crate) fn open(&self, n: u64) -> Result<Arc<Table>> {
        self.rule
            .open(self.vfs, &self.path(n), TableOptions::default())
    }
}

/// The user-key bounds of `f`.
pub fn file_bounds(f: &FileMeta) -> KeyBounds {
    KeyBounds {
        lower: f.smallest_user_key().to_vec(),
        upper: f.largest_user_key().to_vec(),
        upper_exclusive: f.largest_is_exclusive(),
    }
}

/// The bounds readers must apply to `f`: its own for a virtual file; none
/// for a physical one, whose table holds nothing outside them.
pub fn read_bounds(f: &FileMeta) -> Option<KeyBounds> {
    f.is_virtual().then(|| file_bounds(f))
}

impl TableCache {
    pub fn new(
        vfs: Arc<dyn Vfs>,
        dir: PathBuf,
        max_open: usize,
        block_cache: Arc<BlockCache>,
        rule: ChecksumRule,
        prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    ) -> TableCache {
        TableCache {
            vfs,
            dir,
            // Charge 1 per table: the budget counts open files.
            tables: LruCache::with_shards(max_open.max(1), 0),
            block_cache,
            pinned: HashMap::new(),
            rule,
            prefix_extractor,
            prefix_checks: AtomicU64::new(0),
            prefix_skips: AtomicU64::new(0),
        }
    }

    /// Reads each table of `files` (by physical number) through the handle
    /// given instead of opening it by name. A read-only database takes no
    /// lock, so the writer beside it may delete a table of its version
    /// (a compaction's input) while it reads; the handle, opened at the
    /// open, keeps the file readable (a full scan beside a writer with
    /// 64 KiB memtables failed 1 time in 300 with "No such file" before).
    pub fn pin(&mut self, files: HashMap<u64, Arc<dyn RandomAccessFile>>) {
        self.pinned = files;
    }

    /// The physical table behind `f` (the whole table: callers reading a
    /// virtual file go through `iter`, `range_tombstones` or `point`). Every
    /// file cut from one table carries the table's global sequence number,
    /// so whichever opens it first opens it right for all.
    pub fn get(&self, f: &FileMeta) -> Result<Arc<Table>> {
        let number = f.backing_number();
        if let Some(t) = self.tables.get((0, number)) {
            return Ok(t);
        }
        let opts = TableOptions {
            cache: Some(Arc::clone(&self.block_cache)),
            global_seqno: f.global_seqno,
            prefix_extractor: self.prefix_extractor.clone(),
            ..TableOptions::default()
        };
        let t = match self.pinned.get(&number) {
            Some(file) => {
                let t = Table::open(Arc::clone(file), opts)?;
                self.rule.check(&t, DATABASE_NEEDS)?;
                t
            }
            None => self.rule.open(
                self.vfs.as_ref(),
                &filenames::table(&self.dir, number),
                opts,
            )?,
        };
        self.tables.insert((0, number), Arc::clone(&t), 1);
        Ok(t)
    }

    /// Caches table `number`, which the caller has open already as `t` (a
    /// file to ingest, opened through a hard link to the same inode), read
    /// at `global_seqno` with the database's prefix extractor
    /// (`Table::with_global_seqno`), as `get` would have opened it; returns
    /// what `get` returns for it from now on.
    pub fn adopt(&self, number: u64, t: &Table, global_seqno: u64) -> Result<Arc<Table>> {
        let name = filenames::table(&self.dir, number).display().to_string();
        let t = t.with_global_seqno(
            name,
            Some(Arc::clone(&self.block_cache)),
            global_seqno,
            self.prefix_extractor.as_ref(),
        )?;
        self.tables.insert((0, number), Arc::clone(&t), 1);
        Ok(t)
    }

    /// Whether `f` may hold a point entry (a value or a deletion) whose
    /// key has extractor prefix `prefix`: false only if its table's prefix
    /// filter rules that out. Opens the table (its filter is read at open
    /// and kept), never a data block. Only for a `prefix` that every key
    /// the caller will read has (`sstable::bounds_prefix`).
    ///
    /// Point entries only: `f`'s range tombstones are not in the filter,
    /// and may delete keys of this prefix held by other files, so a caller
    /// that skips `f`'s point entries must still apply its tombstones.
    pub fn may_hold_prefix(&self, f: &FileMeta, prefix: &[u8]) -> Result<bool> {
        let t = self.get(f)?;
        if !t.has_prefix_filter() {
            return Ok(true);
        }
        self.prefix_checks.fetch_add(1, Ordering::Relaxed);
        let may = t.may_contain_prefix(prefix);
        if !may {
            self.prefix_skips.fetch_add(1, Ordering::Relaxed);
        }
        Ok(may)
    }

    /// (checks, skips) of [`may_hold_prefix`](Self::may_hold_prefix) since
    /// the cache was made (for `Db::metrics`).
    pub fn prefix_filter_figures(&self) -> (u64, u64) {
        (
            self.prefix_checks.load(Ordering::Relaxed),
            self.prefix_skips.load(Ordering::Relaxed),
        )
    }

    /// The block cache's counters since it was made, its bytes in use and
    /// its budget (for `Db::metrics`).
    pub fn block_cache_figures(&self) -> (crate::cache::CacheStats, usize, usize) {
        let c = &self.block_cache;
        (c.stats(), c.usage(), c.capacity())
    }

    /// An iterator over `f`'s point entries, within its bounds.
    pub fn iter(&self, f: &FileMeta) -> Result<FileIter> {
        Ok(BoundedIter::new(self.get(f)?.iter(), read_bounds(f)))
    }

    /// [`iter`](Self::iter) for a compaction: the blocks it reads are not
    /// added to the block cache (`Table::iter_no_fill`).
    pub fn iter_no_fill(&self, f: &FileMeta) -> Result<FileIter> {
        Ok(BoundedIter::new(
            self.get(f)?.iter_no_fill(),
            read_bounds(f),
        ))
    }

    /// `f`'s range tombstones, clipped to its bounds.
    pub fn range_tombstones(&self, f: &FileMeta) -> Result<Vec<RangeTombstone>> {
        let t = self.get(f)?;
        Ok(match read_bounds(f) {
            None => t.range_tombstones().to_vec(),
            Some(b) => t
                .range_tombstones()
                .iter()
                .filter_map(|r| b.clip(r))
                .collect(),
        })
    }

    /// A point lookup in `f`: the newest sequence number (at most
    /// `snapshot`) of a range tombstone of `f` covering `user_key`, and the
    /// newest point entry visible at `snapshot`. A key outside `f`'s bounds
    /// finds nothing; for a key inside, clipping the tombstones to the
    /// bounds would not change which cover it, so they are not copied.
    pub fn point(
        &self,
        f: &FileMeta,
        user_key: &[u8],
        snapshot: u64,
    ) -> Result<(u64, Option<Found>)> {
        if !f.contains_user_key(user_key) {
            return Ok((0, None));
        }
        let t = self.get(f)?;
        let tomb = super::read::covering(t.range_tombstones(), user_key, snapshot);
        Ok((tomb, t.get(user_key, snapshot)?))
    }

    /// [`point`](Self::point) for a run of keys of a `multi_get`: the
    /// lookups of `lookups` at positions `run` (ascending keys) that are
    /// still open, each covered by `f`'s tombstones and settled by its
    /// entry, the table found in the cache once and read with one
    /// `PointCursor`. A key outside `f`'s bounds finds nothing, as in
    /// `point`. A table that cannot be opened fails every open key of the
    /// run (each `get` would fail the same way).
    pub fn points(
        &self,
        f: &FileMeta,
        snapshot: u64,
        lookups: &mut [PointLookup<'_>],
        run: &[usize],
    ) {
        let inside = |l: &PointLookup<'_>| !l.is_done() && f.contains_user_key(l.key);
        if !run.iter().any(|&i| inside(&lookups[i])) {
            return;
        }
        let t = match self.get(f) {
            Ok(t) => t,
            Err(e) => {
                for &i in run {
                    if inside(&lookups[i]) {
                        lookups[i].settle(Err(e.clone()));
                    }
                }
                return;
            }
        };
        let mut cursor = PointCursor::new(&t);
        for &i in run {
            let l = &mut lookups[i];
            if inside(l) {
                l.cover(super::read::covering(t.range_tombstones(), l.key, snapshot));
                l.settle(cursor.get(l.key, snapshot));
            }
        }
    }

    /// Closes a table (its file is being deleted).
    pub fn evict(&self, number: u64) {
        self.tables.erase((0, number));
    }
}
