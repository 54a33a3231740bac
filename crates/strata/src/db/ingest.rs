//! External SST ingestion: whole files handed to the database.
//!
//! 1. **Prepare**, outside every lock: refuse any path that resolves into
//!    the database directory, before anything is read or changed
//!    (`outside_the_directory`: it may be a live table, which a move would
//!    remove from under the MANIFEST; the tools' `scratch/` is not the
//!    database's), open each file (one whose footer
//!    declares no block checksum is refused unless the database writes
//!    such tables itself: `open_to_ingest`), hard-link
//!    (`move_files`) or copy it into the database directory under a new
//!    file number, then sync the directory on the calling thread while a
//!    helper thread walks every block (checksums, each index entry
//!    bounding its block, every key at sequence number 0 and of a kind
//!    Strata reads, no key twice, the bounds), the calling thread taking a
//!    share of the blocks once its fsync returns (`SharedWalk`: runs of
//!    blocks, their seams checked after; `prepare` has the order and why
//!    it is crash safe; with `IngestOptions::trust_own_files`, a file
//!    Strata's writer made for ingestion is read for its bounds only),
//!    check the files do not overlap each other, and unlink them again if
//!    any is refused; all through the database's `Vfs`. A file named twice
//!    in one call is refused first (`named_once`), in those words: it
//!    would otherwise be refused as overlapping itself. Strata never writes into an ingested file: its global
//!    sequence number lives in the MANIFEST.
//!
//! **The database owns what it ingests.** No path outside the directory
//! may share an inode with a live table, or rewriting that path in place
//! would change (or, truncated, corrupt) what the database serves. With
//! `move_files` (RocksDB's meaning) the file is hard-linked in and the
//! caller's link is removed once the ingestion succeeded (on failure the
//! database's link is removed instead and the caller keeps the file); a
//! link that fails (another file system) falls back to a copy, which leaves
//! the caller's file alone. Opening checks every table's size against the
//! MANIFEST, so a file changed behind the database's back is reported.
//!    A set whose total size is under `small_file_bytes` is applied as a
//!    write batch instead, unless the call excises (as a batch, the excise
//!    would only be a range tombstone); with `move_files` its files are
//!    removed once the batch is synced, as moved files are.
//! 2. **Commit**: the ingestion takes one sequence number through the commit
//!    pipeline, like a batch, so a write that commits before it is older and
//!    one after is newer, and foreground writes never wait on a flush.
//! 3. **Place**: if no memtable or queued flushable overlaps the files, one
//!    MANIFEST edit puts each file at the lowest level where nothing in the
//!    levels above (or that level) overlaps it and no running compaction is
//!    writing its range, skipping the empty levels between L0 and Lbase
//!    (so a file that overlaps Lbase goes to L0: `place`). Otherwise the files join the immutable queue as one
//!    *flushable* entry behind the memtable they overlap (which is moved to
//!    the queue first, keeping its WAL): visible to reads at once, recorded
//!    in the MANIFEST as queued, and placed at their own best level when the
//!    queue reaches them.
//! 4. **Sync**: either way the commit writes one MANIFEST record without
//!    waiting for the disk and publishes the sequence number, then appends
//!    a marker to the WAL (a batch with no update at the ingestion's
//!    sequence number, naming its files: `db::marker`; recovery redoes the
//!    ingestion from it if the record is ever lost) before it lets the
//!    writes behind it go; the ingesting caller then syncs the
//!    MANIFEST before it returns. Writes queued behind an ingestion therefore never
//!    wait for its sync.
//!
//! All files of one call appear together or not at all: one MANIFEST
//! record. A call that fails before its record is handed to the MANIFEST
//! log (`IngestJob::named`) removes every file it made in the directory,
//! and only those: links, copies (a partial one too: its number is noted
//! before the copy starts), range-tombstone files (`remove_made`). Files
//! left by a crash, or by a removal that failed, are unreferenced and set
//! aside at the next open.
//!
//! **Ingest and excise** (`IngestOptions::excise`): everything the database
//! held in `[start, end)` before the ingestion goes, without rewriting
//! anything. Where the files are placed, in the same edit, `db::excise`
//! deletes the files inside the range and replaces those reaching past it
//! with virtual files; the ingested files are then placed against the cut
//! version, so they can go to the bottom. Two things an excise cannot cut
//! are handled by a *range-tombstone file* (one range tombstone
//! `[start, end)` at the ingestion's sequence number, placed or queued with
//! the ingestion; a tombstone deletes only older entries, so the ingested
//! keys stay):
//! - **memory**: memtables are not cut. The tombstone file is one of the
//!   ingestion's files, so if a memtable or a queued entry overlaps the
//!   range, the ingestion takes the flushable path and reads see the
//!   tombstone while it waits in the queue (an ingestion queued because its
//!   files overlap memory carries the tombstone file for the same reason).
//!   When the flush thread places it, everything older is in the tree, so
//!   the range is excised then and the tombstone file dropped. Recovery
//!   places a queued ingestion as it was queued, tombstone file included
//!   (correct, just not cut).
//! - **snapshots**: an ingestion's files have one sequence number, and a
//!   snapshot older than it must still see the excised data. If any
//!   registered snapshot is older than the ingestion when it is placed, the
//!   tombstone file is placed instead of cutting (Pebble instead waits for
//!   such snapshots or turns them into file-only snapshots). The check and
//!   the publication of the sequence number happen under the snapshot lock,
//!   so no snapshot older than the ingestion can appear after the check.
//!
//! The commit decides, but must not write files (it holds the commit
//! slot, and a file must be synced before a MANIFEST record names it). So
//! `prepare` writes the tombstone file when memory overlaps the range or
//! the files (the ingestion will queue), or any snapshot is registered
//! (every registered snapshot is older than the ingestion to come);
//! otherwise none is written, and if one of those appears before the
//! commit, the commit takes nothing, returns the files, and the caller
//! writes the tombstone file and commits again. A tombstone file the commit
//! does not need (the range was cut after all) is deleted at once.

use super::excise::Excised;
use super::filenames;
use super::flushable::Flushable;
use super::table_cache::ChecksumRule;
use super::write_batch::WriteBatch;
use super::DbInner;
use crate::compaction::picker::Running;
use crate::error::{Error, Result};
use crate::iter::merging::MergingIterator;
use crate::iter::InternalIterator;
use crate::key::{self, ParsedKey, ValueKind, MAX_SEQUENCE};
use crate::memtable::MemTable;
use crate::sstable::{Found, IndexEntries, RangeTombstone, Table, TableOptions};
use crate::version::{FileMeta, Version, VersionEdit, NUM_LEVELS};
use crate::vfs::Vfs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// How [`Db::ingest`](crate::Db::ingest) treats its files.
///
/// ```
/// use strata::IngestOptions;
/// // Copy instead of hard-linking, always enter the tree as files, and
/// // replace whatever the database held in ["user:", "user;").
/// let opts = IngestOptions {
///     move_files: false,
///     small_file_bytes: 0,
///     excise: Some((b"user:".to_vec(), b"user;".to_vec())),
///     ..IngestOptions::default()
/// };
/// assert!(opts.allow_overlap_with_memtable);
/// ```
#[derive(Clone, Debug)]
pub struct IngestOptions {
    /// Move the files into the database (RocksDB's `move_files`): hard-link
    /// each one in, and once the ingestion succeeded remove the caller's
    /// path, so nothing outside the database shares the table's inode.
    /// False copies them and leaves the caller's files as they were. A link
    /// that fails (another file system) falls back to a copy. A set
    /// applied as a write batch ([`small_file_bytes`](Self::small_file_bytes))
    /// is moved too: its files are removed once the batch is durable, so
    /// what is left of the caller's files never depends on the path taken.
    pub move_files: bool,
    /// A set of files holding less than this in total (uncompressed keys and
    /// values) is applied as a write batch instead of entering the tree as
    /// files. Default 32 KiB, from `strata bench ingest-size`: up to about
    /// 36 KB a synced batch took at most as long as linking a file (0.44x to
    /// 0.80x on an idle WAL, 0.82x to 1.02x behind 1,000 unsynced Puts),
    /// and it leaves no tiny file in the tree; at 118 KB it took 1.45x.
    /// Not with [`excise`](Self::excise): a batch could only delete the
    /// range with a tombstone, leaving the files it cuts in the tree.
    pub small_file_bytes: u64,
    /// Files (or an excise range) overlapping a memtable or a queued entry
    /// become a flushable entry (true) or make the call fail (false).
    pub allow_overlap_with_memtable: bool,
    /// Check every block checksum of the files before ingesting them.
    /// Every key is read either way (in one walk over the blocks), to check
    /// sequence numbers, order and duplicates; false only skips the
    /// checksums (as RocksDB's default does), for files this process just
    /// wrote itself.
    pub verify_checksums: bool,
    /// Check files that Strata's [`SstWriter`](crate::SstWriter) wrote for
    /// ingestion (`SstOptions::for_ingestion`: the external-file version
    /// and `strata.seqno.*` properties saying sequence number 0 only) as
    /// RocksDB's ingestion checks every file by default: the footer, index
    /// and properties (read when the file is opened) and the first and
    /// last key (the bounds), not every key. For files this process wrote
    /// and finished itself, which nothing else has written since (`strata
    /// import`'s own): that writer refuses a key out of order, a user key
    /// twice and a sequence number other than 0 as each is added, which is
    /// what the walk over every key would check again (the writer also
    /// chose the index separators, so the walk's index check is skipped
    /// too). A block damaged after the writer finished is still reported
    /// when it is read (every read checks its block's checksum), but after
    /// the ingestion rather than by it. Files without those properties (RocksDB's, or Strata's
    /// not written for ingestion) get the full walk, and so does every file
    /// when `verify_checksums` asks for every block. Default false.
    pub trust_own_files: bool,
    /// Ingest and excise: atomically delete every key in `[start, end)` that
    /// the database held before this ingestion (the ingested files' own keys
    /// stay). Files inside the range leave the version and files reaching
    /// past it are replaced by virtual files (no data is rewritten), in the
    /// same MANIFEST edit as the ingested files, which can then go to the
    /// bottom. Falls back to a range-tombstone file when memory or an older
    /// snapshot sees the range (see the module documentation).
    pub excise: Option<(Vec<u8>, Vec<u8>)>,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            move_files: true,
            small_file_bytes: 32 << 10,
            allow_overlap_with_memtable: true,
            verify_checksums: true,
            trust_own_files: false,
            excise: None,
        }
    }
}

/// What an ingestion did: returned by [`Db::ingest`](crate::Db::ingest),
/// whose example reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IngestResult {
    /// The sequence number the ingested keys are visible at.
    pub sequence: u64,
    /// Level each of the caller's files landed on, in the caller's order
    /// (empty when applied as a batch; `None` entries for files waiting in
    /// the flushable queue).
    pub levels: Vec<Option<usize>>,
    /// The files were small and applied as a write batch instead.
    pub as_batch: bool,
    /// The files overlapped a memtable and wait behind it in the flush queue.
    pub flushable: bool,
    /// The excise (if any) cut the tree in this call's MANIFEST edit; false
    /// when it was left to a range-tombstone file (queued behind memory,
    /// which the flush thread may still cut when it places the files, or
    /// held back by an older snapshot).
    pub excised: bool,
}

/// A prepared file: linked into the database, bounds known.
pub struct Prepared {
    pub number: u64,
    pub size: u64,
    pub smallest_user: Vec<u8>,
    pub largest_user: Vec<u8>,
    /// The largest bound is a range tombstone's exclusive end.
    pub largest_exclusive: bool,
    pub num_entries: u64,
    pub num_deletions: u64,
    pub num_range_deletions: u64,
    /// The range-tombstone file of an excise (written by `prepare`, not the
    /// caller's): placed only when the range is not cut.
    pub excise_tombstone: bool,
    /// The table as `prepare` opened and checked it, when the database's
    /// file is a hard link to the same inode (`None` for a copy, which is
    /// another file): reused by a queued ingestion instead of opening the
    /// file again (`queued_tables`).
    pub opened: Option<Arc<Table>>,
}

impl Prepared {
    /// The MANIFEST record of this file at global sequence `seq`.
    pub fn meta(&self, seq: u64) -> FileMeta {
        let largest = if self.largest_exclusive {
            key::make_internal_key(&self.largest_user, MAX_SEQUENCE, ValueKind::RangeDeletion)
        } else {
            // Kind 0 is the smallest trailer at `seq`: no entry of the file
            // sorts after it.
            key::make_internal_key(&self.largest_user, seq, ValueKind::Deletion)
        };
        FileMeta {
            number: self.number,
            size: self.size,
            smallest: key::make_internal_key(&self.smallest_user, seq, ValueKind::RangeDeletion),
            largest,
            smallest_seq: seq,
            largest_seq: seq,
            global_seqno: Some(seq),
            num_entries: self.num_entries,
            num_deletions: self.num_deletions,
            num_range_deletions: self.num_range_deletions,
            backing: None,
        }
    }
}

/// A checked file's smallest and largest user key, and whether the largest
/// is a range tombstone's exclusive end.
type Bounds = (Vec<u8>, Vec<u8>, bool);

/// A file's user-key bounds from its point keys' range and its range
/// tombstones; the largest bound is exclusive when a tombstone's end lies
/// past every point key.
fn bounds(
    points: Option<(Vec<u8>, Vec<u8>)>,
    tombstones: &[RangeTombstone],
) -> Option<(Vec<u8>, Vec<u8>, bool)> {
    let (mut lo, mut hi) = match points {
        Some((l, h)) => (Some(l), Some(h)),
        None => (None, None),
    };
    let mut exclusive = false;
    for r in tombstones {
        if lo.as_ref().is_none_or(|l| r.start < *l) {
            lo = Some(r.start.clone());
        }
        if hi.as_ref().is_none_or(|h| r.end > *h) {
            hi = Some(r.end.clone());
            exclusive = true;
        }
    }
    Some((lo?, hi?, exclusive))
}

/// The names `path` resolves to on `vfs` ([`Vfs::canonicalize`]): the
/// whole path's (its last component followed if it is a symbolic link) and
/// its parent directory's joined with its file name (the name of the link
/// itself, which is what a hard link and the removal of a moved file act
/// on); the path as given, lexically normalised, when neither resolves (a
/// path that does not exist, refused when it is opened).
pub(crate) fn resolved_names(vfs: &dyn Vfs, path: &Path) -> Vec<PathBuf> {
    let mut names = Vec::new();
    if let Ok(p) = vfs.canonicalize(path) {
        names.push(p);
    }
    if let Some(file) = path.file_name() {
        let parent = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Ok(d) = vfs.canonicalize(parent) {
            names.push(d.join(file));
        }
    }
    if names.is_empty() {
        names.push(crate::vfs::lexically_normal(path));
    }
    names
}

/// Refuses every path to ingest that lies in the database directory `dir`
/// (or below it), by any of the names it resolves to ([`resolved_names`]:
/// `..` and symbolic links resolved, on the operating system's file
/// system): such a path may be a live table, and an ingestion that moves
/// it (hard-links it in and removes the caller's path) removed the table
/// from under the MANIFEST, which named it still (found by a user audit:
/// `Corruption ... missing: MANIFEST names it` at the next open). A copy
/// is refused too: nothing in the directory is the caller's to hand over,
/// and the database may delete any of it. The one exception is the
/// scratch directory (`Db::scratch_dir`), the tools' own, which the
/// database never reads: the import writes its files there and ingests
/// them. `dirs` are the names `dir` resolves to, found at open.
///
/// `names[i]` is `resolved_names` of `paths[i]`, found once for this check
/// and `named_once`.
fn outside_the_directory(
    dir: &Path,
    dirs: &[PathBuf],
    paths: &[PathBuf],
    names: &[Vec<PathBuf>],
) -> Result<()> {
    let in_db = |n: &PathBuf| {
        dirs.iter()
            .any(|d| n.starts_with(d) && !n.starts_with(filenames::scratch(d)))
    };
    for (p, names) in paths.iter().zip(names) {
        let inside = names.iter().find(|n| in_db(n));
        if let Some(n) = inside {
            return Err(Error::invalid(format!(
                "{}: is inside the database directory {} (it resolves to {}); \
                 only files from outside it can be ingested (the database \
                 owns, and may delete, every file in its directory)",
                p.display(),
                dir.display(),
                n.display()
            )));
        }
    }
    Ok(())
}

/// Refuses a call that names one file twice (`[p, p]`, or `./p` and `p`,
/// or a symbolic link and its target: compared by the name each resolves
/// to, [`resolved_names`]'s first), before anything is read: the file would
/// otherwise be refused as overlapping itself ("p and p overlap"), which
/// is not what is wrong (found by a user audit; the CLI said so already).
/// `names` as for `outside_the_directory`.
fn named_once(paths: &[PathBuf], names: &[Vec<PathBuf>]) -> Result<()> {
    let mut seen: Vec<(&PathBuf, &PathBuf)> = Vec::with_capacity(paths.len());
    for (p, names) in paths.iter().zip(names) {
        let Some(name) = names.first() else {
            continue;
        };
        if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
            let how = if *first == p {
                String::new()
            } else {
                format!(
                    " (as {}; both resolve to {})",
                    first.display(),
                    name.display()
                )
            };
            return Err(Error::invalid(format!(
                "{}: is named twice in one ingestion{how}; name each file once",
                p.display()
            )));
        }
        seen.push((name, p));
    }
    Ok(())
}

/// Opens a file to ingest (footer, index, properties: a few reads; a
/// directory is refused as one) and checks what its footer and properties
/// say; the walk over its blocks is
/// [`walk`]. Under the database's checksum `rule` (`ChecksumRule`) a file
/// whose footer declares no block checksum is refused: its walk could
/// verify no block, and the database would serve them unverified.
fn open_to_ingest(vfs: &dyn Vfs, path: &Path, rule: ChecksumRule) -> Result<Arc<Table>> {
    // Opened with the keys' own sequence numbers, which must all be 0.
    let t = Table::open_in(vfs, path, TableOptions::default()).map_err(|e| {
        // A directory is no damaged file: say what it is, with no offset
        // (a user audit: its first read failed "at offset N").
        if e.io_error().map(|io| io.kind()) == Some(std::io::ErrorKind::IsADirectory) {
            Error::invalid(format!(
                "{}: is a directory, not an SST file",
                path.display()
            ))
        } else {
            e
        }
    })?;
    rule.check(&t, "ingestion")?;
    let p = t.properties();
    if let Some(v) = p.external_version {
        if v >= 2 && p.global_seqno.unwrap_or(0) != 0 {
            return Err(Error::invalid(format!(
                "{}: already has a global sequence number",
                path.display()
            )));
        }
    }
    Ok(t)
}

/// How much of each file an ingestion reads before linking it.
#[derive(Clone, Copy, Debug)]
struct Check {
    /// Every block's checksum too (`IngestOptions::verify_checksums`).
    checksums: bool,
    /// Only the bounds of files Strata wrote for ingestion, unless
    /// `checksums` (`IngestOptions::trust_own_files`, [`own_file_bounds`]).
    trust_own: bool,
}

impl Check {
    fn of(opts: &IngestOptions) -> Check {
        Check {
            checksums: opts.verify_checksums,
            trust_own: opts.trust_own_files,
        }
    }
}

/// Checks every block of an opened file to ingest on this thread, in one
/// piece; returns its bounds.
fn walk(t: &Arc<Table>, path: &Path, verify: Check) -> Result<Bounds> {
    let plan = Plan::of(t, verify);
    let outs = plan
        .pieces(0, usize::MAX)
        .into_iter()
        .map(|p| walk_piece(t, path, &plan, p, verify, None))
        .collect();
    combine(t, path, &plan, outs)
}

/// True if `t` is a file Strata's `SstWriter` wrote for ingestion: the
/// external-file version it writes with `SstOptions::external` and the
/// `strata.seqno.*` range it writes for every file, at 0 and 0. Such a
/// writer refused, as each key was added, a key out of order, a user key
/// twice and a sequence number other than 0 (`sstable::writer`).
fn written_for_ingestion_by_strata(t: &Table) -> bool {
    let p = t.properties();
    p.external_version.is_some() && p.smallest_seqno == Some(0) && p.largest_seqno == Some(0)
}

/// The bounds of a file Strata wrote for ingestion
/// (`IngestOptions::trust_own_files`): its first and last point key (two
/// block reads, each checksummed) and its range tombstones (read at
/// open), instead of a walk over every key. The two keys are still
/// checked for sequence number 0 and a readable kind.
fn own_file_bounds(t: &Arc<Table>, path: &Path) -> Result<Bounds> {
    let name = path.display().to_string();
    let mut it = t.iter();
    let mut user_key_at = |first: bool| -> Result<Option<Vec<u8>>> {
        if first {
            it.seek_to_first();
        } else {
            it.seek_to_last();
        }
        if !it.valid() {
            it.status()?;
            return Ok(None);
        }
        let pk = ParsedKey::parse(it.key())
            .ok_or_else(|| Error::corruption(&name, 0, "key shorter than its trailer"))?;
        if pk.seq != 0 {
            return Err(Error::invalid(format!(
                "{name}: key {} has sequence number {} (files to ingest hold sequence 0 only)",
                crate::util::hex::escape(pk.user_key),
                pk.seq
            )));
        }
        if !readable_kind(pk.kind) {
            return Err(unreadable_kind(&name, pk.user_key, pk.kind, None));
        }
        Ok(Some(pk.user_key.to_vec()))
    };
    let first = user_key_at(true)?;
    let last = user_key_at(false)?;
    let range = first.zip(last);
    bounds(range, t.range_tombstones())
        .ok_or_else(|| Error::invalid(format!("{name}: file holds no entries")))
}

/// Data blocks per piece of a file's walk, at least: the pieces are what
/// the calling thread and the helper share (`SharedWalk`), so that one
/// file's walk runs on both cores. 16 blocks of 4 KiB are about 25 µs of
/// work on this machine (W4's file has 157); a large file is cut into at
/// most [`MAX_PIECES`] pieces.
const PIECE_BLOCKS: usize = 16;

/// Pieces per file, at most (an import's 64 MiB files).
const MAX_PIECES: usize = 64;

/// How one file is walked, decided before the walk starts.
enum Plan {
    /// Its bounds only ([`own_file_bounds`]), in one piece.
    Own,
    /// Every data block (the index block's entries: handles and
    /// separators, each separator checked against its block), in runs.
    Blocks(IndexEntries),
    /// Refused before any block is read: its index does not read.
    Failed(Error),
}

impl Plan {
    fn of(t: &Table, check: Check) -> Plan {
        if check.trust_own && !check.checksums && written_for_ingestion_by_strata(t) {
            return Plan::Own;
        }
        match t.index_entries() {
            Ok(h) => Plan::Blocks(h),
            Err(e) => Plan::Failed(e),
        }
    }

    /// The pieces of file `file` under this plan, runs of at least
    /// `blocks` data blocks.
    fn pieces(&self, file: usize, blocks: usize) -> Vec<Piece> {
        match self {
            Plan::Own | Plan::Failed(_) => vec![Piece { file, blocks: 0..0 }],
            Plan::Blocks(h) => {
                let per = blocks.max(h.len().div_ceil(MAX_PIECES)).max(1);
                (0..h.len())
                    .step_by(per)
                    .map(|from| Piece {
                        file,
                        blocks: from..from.saturating_add(per).min(h.len()),
                    })
                    .collect()
            }
        }
    }
}

/// One piece of the walks of a call: file `file`'s bounds, or a run of its
/// data blocks (`Plan::Blocks`).
#[derive(Clone, Debug)]
struct Piece {
    file: usize,
    blocks: std::ops::Range<usize>,
}

/// What a piece of a walk found.
enum PieceOut {
    /// A whole file's result (`Plan::Own`, `Plan::Failed`, or a piece
    /// that panicked).
    Whole(Result<Bounds>),
    /// A run of data blocks.
    Run(Run),
}

/// What a run of data blocks found: enough to check the seams between
/// runs in [`combine`] as one walk would have checked them.
struct Run {
    /// The first entry's internal key and its block's offset, kept before
    /// that entry is checked at all, so that the seam check (is it after
    /// the previous run's last key?) comes first, as in one walk.
    first: Option<(Vec<u8>, u64)>,
    /// The last entry's internal key (all checks passed).
    last: Vec<u8>,
    /// Entries walked (when `end` is `Ok`).
    entries: u64,
    /// The run's first error, if any: it stops there.
    end: Result<()>,
}

/// Refuses an ingested entry the database could not serve (the entry
/// `ikey` in the data block at `offset` of file `name`): a sequence number
/// other than 0, or a kind Strata cannot read ([`readable_kind`]). One
/// read of the trailer for both: the walk calls this for every entry.
#[inline]
fn check_entry(name: &str, ikey: &[u8], offset: u64) -> Result<()> {
    let trailer = key::trailer(ikey);
    let seq = trailer >> 8;
    if seq != 0 {
        return Err(Error::invalid(format!(
            "{name}: key {} has sequence number {seq} (files to ingest hold sequence 0 only)",
            crate::util::hex::escape(key::user_key(ikey))
        )));
    }
    let kind = trailer as u8;
    if !readable_kind(kind) {
        return Err(unreadable_kind(
            name,
            key::user_key(ikey),
            kind,
            Some(offset),
        ));
    }
    Ok(())
}

/// Whether a point entry of `kind` is one a read can answer from: a value,
/// a deletion or a single deletion (`read::resolve`, `DbIter`). A Merge
/// operand needs a merge operator, which Strata does not have, and every
/// other kind RocksDB writes (a blob index, a wide-column entity, ...) is
/// unknown to the reader; range tombstones live in their own block, never
/// among the point entries. Such an entry ingested made every read of its
/// key, and every scan over it, fail afterwards (a user audit: a RocksDB
/// file with a Merge entry was accepted, then `get` said `NotSupported:
/// reading a Merge entry`), so the ingestion refuses the file instead.
#[inline]
fn readable_kind(kind: u8) -> bool {
    kind == ValueKind::Value as u8
        || kind == ValueKind::Deletion as u8
        || kind == ValueKind::SingleDeletion as u8
}

/// The refusal of an entry of unreadable `kind` at `user_key` in file
/// `name` (in the data block at `offset`, when known), saying what the
/// entry is in RocksDB's terms and why Strata cannot take it.
fn unreadable_kind(name: &str, user_key: &[u8], kind: u8, offset: Option<u64>) -> Error {
    let key = crate::util::hex::escape(user_key);
    let at = offset
        .map(|o| format!(" in the data block at offset {o}"))
        .unwrap_or_default();
    let what = match kind {
        k if k == ValueKind::Merge as u8 => format!(
            "a Merge entry (key \"{key}\"){at}: Strata has no merge operator, \
             so it cannot ingest merge operands"
        ),
        k if k == ValueKind::RangeDeletion as u8 => format!(
            "a range tombstone among the point entries (key \"{key}\"){at}: \
             range tombstones belong in the file's range-deletion block"
        ),
        k => {
            let named = match k {
                0x11 => " (RocksDB's blob index, BlobDB)",
                0x14 => " (RocksDB's deletion with a timestamp)",
                0x16 => " (RocksDB's wide-column entity)",
                0x18 => " (RocksDB's value with a preferred sequence number)",
                _ => "",
            };
            format!(
                "an entry of kind {k:#04x}{named} (key \"{key}\"){at}: Strata reads \
                 only values, deletions and single deletions among a file's point entries"
            )
        }
    };
    Error::NotSupported(format!("{name}: {what}"))
}

/// The checks of an entry `ikey` (in the block at `offset`) that follows
/// `prev`, in one walk's order: after `prev` in internal-key order (else
/// corruption, as `Table::verify` says), sequence number 0 and a readable
/// kind ([`check_entry`]), not the same user key. Taken only when the user keys do not increase (or at a seam
/// between runs): an increasing user key passes the first and the last.
fn check_follows(table: &str, name: &str, prev: &[u8], ikey: &[u8], offset: u64) -> Result<()> {
    if key::compare_internal(prev, ikey) != std::cmp::Ordering::Less {
        return Err(Error::corruption(table, offset, "keys out of order"));
    }
    check_entry(name, ikey, offset)?;
    if key::user_key(prev) == key::user_key(ikey) {
        return Err(Error::invalid(format!(
            "{name}: key {} appears twice",
            crate::util::hex::escape(key::user_key(ikey))
        )));
    }
    Ok(())
}

/// `a < b`, bytewise: the first 8 bytes compared as one big-endian word
/// (inline: random keys differ there), the rest by `memcmp`. (A `memcmp`
/// call per entry was 17% of a W4 file's walk in a profile.)
#[inline]
fn user_key_less(a: &[u8], b: &[u8]) -> bool {
    if let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x < y;
        }
    }
    a < b
}

/// Walks one piece of a file. With `watch`, counts each block walked in
/// `watch.1` and gives up (with an error no caller sees) once `watch.0` is
/// set: a helper's piece, which the calling thread may take over
/// (`walk_beside`).
fn walk_piece(
    t: &Arc<Table>,
    path: &Path,
    plan: &Plan,
    piece: Piece,
    check: Check,
    watch: Option<(&AtomicBool, &AtomicU64)>,
) -> PieceOut {
    let index = match plan {
        Plan::Own => return PieceOut::Whole(own_file_bounds(t, path)),
        Plan::Failed(e) => return PieceOut::Whole(Err(e.clone())),
        Plan::Blocks(h) => h,
    };
    PieceOut::Run(walk_run(
        t,
        path,
        index,
        piece.blocks,
        check.checksums,
        watch,
    ))
}

/// Walks a run of data blocks (`index`'s entries `run`): checksums
/// (unless `checksums` is off), each block's first and last key against
/// the index's separators (`Table::walk_blocks`), and each key after the
/// one before it, at sequence number 0, of a kind Strata reads, no user
/// key twice. One comparison
/// of user keys per entry: a user key greater than
/// the previous one is also greater as an internal key and no duplicate;
/// only otherwise does [`check_follows`] find which check fails. (The walk
/// compared internal keys and then user keys, two `memcmp` calls per
/// entry, 18% of a W4 file's walk in a profile.) The previous key is kept
/// in one reused buffer: no allocation per key.
fn walk_run(
    t: &Arc<Table>,
    path: &Path,
    index: &IndexEntries,
    run: std::ops::Range<usize>,
    checksums: bool,
    watch: Option<(&AtomicBool, &AtomicU64)>,
) -> Run {
    let name = path.display().to_string();
    let mut first: Option<(Vec<u8>, u64)> = None;
    let mut last: Vec<u8> = Vec::new();
    let mut on_block = || -> Result<()> {
        if let Some((cancel, progress)) = watch {
            progress.fetch_add(1, Ordering::Relaxed);
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::internal("check taken over by the calling thread"));
            }
        }
        Ok(())
    };
    let walked = t.walk_blocks(index, run, checksums, &mut on_block, &mut |ikey, offset| {
        // `walk_blocks` hands over keys of 8 bytes or more only.
        if first.is_none() {
            first = Some((ikey.to_vec(), offset));
            check_entry(&name, ikey, offset)?;
        } else if user_key_less(key::user_key(&last), key::user_key(ikey)) {
            check_entry(&name, ikey, offset)?;
        } else {
            check_follows(t.name(), &name, &last, ikey, offset)?;
        }
        last.clear();
        last.extend_from_slice(ikey);
        Ok(())
    });
    let (entries, end) = match walked {
        Ok(n) => (n, Ok(())),
        Err(e) => (0, Err(e)),
    };
    Run {
        first,
        last,
        entries,
        end,
    }
}

/// A file's result from its pieces' (in file order): each run's first key
/// checked against the previous run's last (the seam) before the run's
/// own error, then the entry count against the properties, then the
/// bounds, so the outcome, the first error included, is the one a single
/// walk over the whole file gives, however the pieces were shared out.
fn combine(t: &Table, path: &Path, plan: &Plan, outs: Vec<PieceOut>) -> Result<Bounds> {
    if !matches!(plan, Plan::Blocks(_)) {
        return match outs.into_iter().next() {
            Some(PieceOut::Whole(r)) => r,
            _ => Err(Error::internal(format!(
                "{}: was not checked",
                path.display()
            ))),
        };
    }
    if let Some(e) = t.filter_corruption() {
        return Err(e);
    }
    let name = path.display().to_string();
    let mut prev: Option<Vec<u8>> = None;
    let mut first: Option<Vec<u8>> = None;
    let mut entries = 0u64;
    for out in outs {
        let run = match out {
            PieceOut::Run(r) => r,
            PieceOut::Whole(r) => {
                r?;
                return Err(Error::internal(format!("{name}: a piece gave bounds")));
            }
        };
        if let Some((k, offset)) = &run.first {
            if let Some(p) = &prev {
                check_follows(t.name(), &name, p, k, *offset)?;
            }
            if first.is_none() {
                first = Some(key::user_key(k).to_vec());
            }
        }
        run.end?;
        entries += run.entries;
        if run.first.is_some() {
            prev = Some(run.last);
        }
    }
    let props = t.properties();
    let want = props.num_entries.saturating_sub(props.num_range_deletions);
    if props
        .all
        .contains_key(crate::sstable::properties::names::NUM_ENTRIES)
        && entries != want
    {
        return Err(Error::corruption(
            t.name(),
            0,
            format!("properties say {want} point entries, data blocks hold {entries}"),
        ));
    }
    let range = first.zip(prev.map(|p| key::user_key(&p).to_vec()));
    bounds(range, t.range_tombstones())
        .ok_or_else(|| Error::invalid(format!("{name}: file holds no entries")))
}

/// Worker threads for walking `pieces` pieces: one per core, at most one
/// per piece.
fn walkers(pieces: usize) -> usize {
    cores().min(pieces)
}

/// The number of cores, asked once per process: `available_parallelism`
/// reads three cgroup files on every call (`/proc/self/cgroup`, the CPU
/// quota and period), 85 µs of a 0.5 ms W3 call when it was asked per
/// ingestion (traced, `docs/bench-history/w3-ingest-overlap.md`).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// [`walk`]s every opened file, several at once when there are several
/// (through [`walk_beside`]'s threads): an
/// import hands over a file per index and per size cut at once (W1:
/// 0.12-0.2 s on one core at the end of the import, about a tenth of its
/// time, with the other core idle). Errors are reported for the first
/// failing file in `paths`' order (see [`walk_beside`]).
fn walk_all(tables: &[Arc<Table>], paths: &[PathBuf], verify: Check) -> Result<Vec<Bounds>> {
    if cores() <= 1 || tables.len() <= 1 {
        return tables
            .iter()
            .zip(paths)
            .map(|(t, p)| walk(t, p, verify))
            .collect();
    }
    // The same sharing as beside a sync, with nothing beside: the caller
    // and the helper threads take the pieces in turn.
    walk_beside(tables, paths, verify, || ()).0
}

/// The walks' results in the caller's order: the first error is the first
/// failing file's, whatever order the walks finished in, so the message
/// does not depend on scheduling.
fn in_callers_order(
    results: &mut [Option<Result<Bounds>>],
    paths: &[PathBuf],
) -> Result<Vec<Bounds>> {
    results
        .iter_mut()
        .zip(paths)
        .map(|(r, p)| {
            r.take()
                .unwrap_or_else(|| Err(Error::invalid(format!("{}: was not checked", p.display()))))
        })
        .collect()
}

/// The walks of one call shared between the calling thread and helper
/// threads (`walk_beside`), in pieces: each file's data blocks in runs of
/// [`PIECE_BLOCKS`] or more (`Plan::pieces`), taken in turn through `next`,
/// so each piece is walked exactly once, by whichever thread gets to it
/// first, and one file's walk is shared too. [`combine`] then checks the
/// seams between a file's runs and gives each file the result one walk
/// over it would have given.
struct SharedWalk {
    tables: Vec<Arc<Table>>,
    paths: Vec<PathBuf>,
    verify: Check,
    /// How each file is walked (its data blocks, read from its index by
    /// the calling thread before the walk is shared).
    plans: Vec<Plan>,
    pieces: Vec<Piece>,
    next: AtomicUsize,
    results: parking_lot::Mutex<Vec<Option<PieceOut>>>,
    /// Notified as each result is stored.
    stored: parking_lot::Condvar,
    /// Set when the calling thread takes the helpers' pieces over.
    cancel: AtomicBool,
    /// Blocks walked by the helpers so far (only grows: any change is
    /// progress).
    progress: AtomicU64,
}

impl SharedWalk {
    fn new(tables: &[Arc<Table>], paths: &[PathBuf], verify: Check) -> SharedWalk {
        let plans: Vec<Plan> = tables.iter().map(|t| Plan::of(t, verify)).collect();
        let pieces: Vec<Piece> = plans
            .iter()
            .enumerate()
            .flat_map(|(i, p)| p.pieces(i, PIECE_BLOCKS))
            .collect();
        SharedWalk {
            tables: tables.to_vec(),
            paths: paths.to_vec(),
            verify,
            plans,
            results: parking_lot::Mutex::new(pieces.iter().map(|_| None).collect()),
            pieces,
            next: AtomicUsize::new(0),
            stored: parking_lot::Condvar::new(),
            cancel: AtomicBool::new(false),
            progress: AtomicU64::new(0),
        }
    }

    /// Walks piece `i`, watched (a helper's) or not (the caller's).
    fn walk(&self, i: usize, watched: bool) -> PieceOut {
        let p = &self.pieces[i];
        let (t, path, plan) = (
            &self.tables[p.file],
            &self.paths[p.file],
            &self.plans[p.file],
        );
        let watch = watched.then_some((&self.cancel, &self.progress));
        walk_piece(t, path, plan, p.clone(), self.verify, watch)
    }

    /// Walks pieces until none is left to take (the helpers).
    fn work(&self) {
        while !self.cancel.load(Ordering::Relaxed) {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.pieces.len() {
                return;
            }
            // A panic becomes this file's error: the caller waits for
            // every result, and a helper's panic would otherwise leave it
            // waiting for ever.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.walk(i, true)))
                .unwrap_or_else(|_| {
                    PieceOut::Whole(Err(Error::internal(format!(
                        "{}: the check of the file panicked",
                        self.paths[self.pieces[i].file].display()
                    ))))
                });
            if self.cancel.load(Ordering::Relaxed) {
                // Taken over: the calling thread stores this piece's result.
                return;
            }
            self.store(i, r);
        }
    }

    /// Stores piece `i`'s result unless one is there already.
    fn store(&self, i: usize, r: PieceOut) {
        let mut results = self.results.lock();
        if results[i].is_none() {
            results[i] = Some(r);
        }
        drop(results);
        self.stored.notify_all();
    }

    /// The calling thread's part: every piece no helper took, then a wait
    /// for the helpers' pieces while they make progress; a helper that
    /// makes none for `STALL` is off the CPU, and its pieces are walked
    /// here instead. Returns each file's result, combined from its pieces.
    fn finish(&self) -> Vec<Option<Result<Bounds>>> {
        const STALL: std::time::Duration = std::time::Duration::from_micros(100);
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.pieces.len() {
                break;
            }
            self.store(i, self.walk(i, false));
        }
        let mut results = self.results.lock();
        let mut seen = self.progress.load(Ordering::Relaxed);
        while results.iter().any(Option::is_none) {
            if !self.stored.wait_for(&mut results, STALL).timed_out() {
                continue;
            }
            let now = self.progress.load(Ordering::Relaxed);
            if now != seen {
                seen = now;
                continue;
            }
            self.cancel.store(true, Ordering::Relaxed);
            let missing: Vec<usize> = (0..results.len())
                .filter(|&i| results[i].is_none())
                .collect();
            drop(results);
            for i in missing {
                self.store(i, self.walk(i, false));
            }
            results = self.results.lock();
        }
        let mut outs: Vec<Vec<PieceOut>> = self.tables.iter().map(|_| Vec::new()).collect();
        for (p, r) in self.pieces.iter().zip(results.iter_mut()) {
            if let Some(r) = r.take() {
                outs[p.file].push(r);
            }
        }
        drop(results);
        outs.into_iter()
            .enumerate()
            .map(|(f, o)| Some(combine(&self.tables[f], &self.paths[f], &self.plans[f], o)))
            .collect()
    }
}

/// The process's ingest-check helper: one thread, started by the first
/// ingestion that syncs beside its check and then asleep between calls,
/// that takes [`SharedWalk`]s from a queue. One thread kept, not one
/// spawned per call: a thread's creation cost 0.1 ms of a W3 call on this
/// machine under load (A/B on tmpfs, `docs/bench-history/w3-ingest-overlap.md`), a wake-up a
/// few µs. Shared by every database of the process, like RocksDB's
/// `Env` thread pools; a job it never reaches costs nothing, since its
/// caller walks every piece it finds untaken.
struct Helper {
    queue: parking_lot::Mutex<std::collections::VecDeque<Arc<SharedWalk>>>,
    posted: parking_lot::Condvar,
}

impl Helper {
    /// The helper, started on first use; `None` if no thread could be
    /// started (the calling thread then walks every file itself).
    fn get() -> Option<&'static Helper> {
        static HELPER: std::sync::OnceLock<Option<&'static Helper>> = std::sync::OnceLock::new();
        *HELPER.get_or_init(|| {
            let h: &'static Helper = Box::leak(Box::new(Helper {
                queue: parking_lot::Mutex::new(std::collections::VecDeque::new()),
                posted: parking_lot::Condvar::new(),
            }));
            std::thread::Builder::new()
                .name("strata-ingest-check".into())
                .spawn(move || h.run())
                .ok()
                .map(|_| h)
        })
    }

    fn run(&self) {
        loop {
            let job = {
                let mut q = self.queue.lock();
                loop {
                    if let Some(j) = q.pop_front() {
                        break j;
                    }
                    self.posted.wait(&mut q);
                }
            };
            job.work();
        }
    }

    fn post(&self, job: Arc<SharedWalk>) {
        self.queue.lock().push_back(job);
        self.posted.notify_one();
    }
}

/// Runs `beside` (the directory fsync) on the calling thread at once,
/// while the helper thread ([`Helper`]) [`walk`]s the files; returns both
/// outcomes. The walk is CPU (every block read, from the page cache as a
/// rule, and checksummed) and the fsync is the disk's time, so with a core
/// free the call pays the longer of the two instead of their sum.
///
/// The helper is only a helper: once `beside` is done, the calling thread
/// takes every piece the helper has not started (so a file whose walk
/// outlasts the fsync, W4's, is walked by both threads from then on), and
/// waits for a piece the helper is walking only while the helper makes
/// progress; a helper that walks no block for 100 µs is off the CPU (on a
/// loaded machine a thread can wait milliseconds for one) or waiting for
/// the disk, and the calling thread walks its piece itself while the
/// helper gives up at its next block. So the call never
/// waits for the helper to be scheduled: at worst it costs a wake-up and
/// 100 µs over walking after the fsync. (Waiting for a started file
/// without that bound made W3's call slower than before in 6 of 6 A/B
/// pairs on a disk at load 7.)
fn walk_beside<R>(
    tables: &[Arc<Table>],
    paths: &[PathBuf],
    verify: Check,
    beside: impl FnOnce() -> R,
) -> (Result<Vec<Bounds>>, R) {
    let shared = Arc::new(SharedWalk::new(tables, paths, verify));
    if let Some(h) = Helper::get() {
        h.post(Arc::clone(&shared));
    }
    // Many files (an import's) on more than two cores: a thread per
    // further core, each ending when nothing is left.
    for _ in 0..walkers(shared.pieces.len()).saturating_sub(2) {
        let s = Arc::clone(&shared);
        let _ = std::thread::Builder::new()
            .name("strata-ingest-check".into())
            .spawn(move || s.work());
    }
    let out = beside();
    let mut results = shared.finish();
    let walked = in_callers_order(&mut results, paths);
    (walked, out)
}

/// The first pair of files of one call that overlap, as an error.
fn check_disjoint(paths: &[PathBuf], bounds: &[Bounds]) -> Result<()> {
    for i in 0..bounds.len() {
        for j in i + 1..bounds.len() {
            let (a, b) = (&bounds[i], &bounds[j]);
            if overlaps(&a.0, &a.1, a.2, &b.0, &b.1, b.2) {
                return Err(Error::invalid(format!(
                    "{} and {} overlap; files of one ingestion must not",
                    paths[i].display(),
                    paths[j].display()
                )));
            }
        }
    }
    Ok(())
}

fn overlaps(
    a_lo: &[u8],
    a_hi: &[u8],
    a_excl: bool,
    b_lo: &[u8],
    b_hi: &[u8],
    b_excl: bool,
) -> bool {
    let a_before_b = if a_excl { a_hi <= b_lo } else { a_hi < b_lo };
    let b_before_a = if b_excl { b_hi <= a_lo } else { b_hi < a_lo };
    !a_before_b && !b_before_a
}

/// Turns a file's entries into a write batch (the small-file path).
fn as_batch(t: &Arc<Table>) -> Result<WriteBatch> {
    let mut b = WriteBatch::new();
    let mut it = t.iter();
    it.seek_to_first();
    while it.valid() {
        let p =
            ParsedKey::parse(it.key()).ok_or_else(|| Error::corruption(t.name(), 0, "bad key"))?;
        match p.value_kind() {
            Some(ValueKind::Value) => b.put(p.user_key, it.value()),
            Some(ValueKind::Deletion) | Some(ValueKind::SingleDeletion) => b.delete(p.user_key),
            // The walk refused these already, unless it was skipped
            // (`trust_own_files`): the same words either way.
            _ => return Err(unreadable_kind(t.name(), p.user_key, p.kind, None)),
        };
        it.next();
    }
    it.status()?;
    // Tombstones last: in a batch each record gets its own (later) sequence
    // number, and a file's tombstones must not delete its own point keys.
    // They are applied first instead, so points are newer.
    let mut with_tombstones = WriteBatch::new();
    for r in t.range_tombstones() {
        with_tombstones.delete_range(&r.start, &r.end);
    }
    with_tombstones.append(&b);
    Ok(with_tombstones)
}

pub(crate) enum Prepare {
    Batch(WriteBatch),
    /// The prepared files, their tables, and the caller's paths that were
    /// hard-linked (to remove once the ingestion succeeded).
    Files(Vec<Prepared>, Vec<Arc<Table>>, Vec<PathBuf>),
}

/// Step 1: checks and links the files (or builds the batch).
///
/// Every file is opened first (footer, index, properties: a few reads), so
/// a set under `small_file_bytes` is known before anything is linked; it is
/// checked and becomes a batch. Otherwise each file is linked (or copied)
/// into the directory under a new number, and then the one directory fsync
/// of the call runs on this thread while worker threads check every block
/// of every file (`walk_beside`): the call pays the longer of the two, not
/// their sum. Crash safety rests on one order, kept here: both finish,
/// and both succeed, before `prepare` returns, and only then does the
/// commit frame the MANIFEST record and write the WAL marker naming the
/// files, so neither can be durable before the files' directory entries
/// are (`tests/ingest_crash.rs` cuts the power at every step). A file the
/// check refuses is unlinked again before the error is returned: it is in
/// no MANIFEST record, and a crash before the unlink leaves an unreferenced
/// table, deleted at the next open. An excise checks first and syncs
/// after: whether it needs a range-tombstone file (written before the
/// directory fsync, which covers it too) depends on the files' bounds.
pub(crate) fn prepare(db: &DbInner, paths: &[PathBuf], opts: &IngestOptions) -> Result<Prepare> {
    if paths.is_empty() && opts.excise.is_none() {
        return Err(Error::invalid("nothing to ingest"));
    }
    if let Some((a, b)) = &opts.excise {
        // Said apart: swapped arguments are a mistake to point at, not
        // an empty range.
        if a > b {
            return Err(Error::invalid(format!(
                "excise range is reversed: start {:?} is above end {:?}",
                String::from_utf8_lossy(&a[..a.len().min(64)]),
                String::from_utf8_lossy(&b[..b.len().min(64)])
            )));
        }
        if a == b {
            return Err(Error::invalid("excise range is empty"));
        }
    }
    let vfs = db.vfs.as_ref();
    // Before anything is read or changed: a file the database may already
    // own is no file to hand it.
    let names: Vec<Vec<PathBuf>> = paths.iter().map(|p| resolved_names(vfs, p)).collect();
    outside_the_directory(&db.dir, &db.dir_names, paths, &names)?;
    named_once(paths, &names)?;
    let tables = paths
        .iter()
        .map(|p| open_to_ingest(vfs, p, ChecksumRule::of(&db.opts)))
        .collect::<Result<Vec<_>>>()?;
    // Uncompressed bytes: a batch costs what it holds (memtable inserts,
    // WAL bytes), whatever the file's compression.
    let total: u64 = tables
        .iter()
        .map(|t| t.properties().raw_key_size + t.properties().raw_value_size)
        .sum();
    // An excise never takes the batch path: as a batch it would be a range
    // tombstone, and the files it was asked to cut out of the tree would
    // keep their space until a compaction reached them (an excise with no
    // files, `total` 0, is how `strata import` takes back a failed import).
    if total < opts.small_file_bytes && opts.excise.is_none() {
        let walked = walk_all(&tables, paths, Check::of(opts))?;
        check_disjoint(paths, &walked)?;
        let mut all = WriteBatch::new();
        for t in &tables {
            all.append(&as_batch(t)?);
        }
        return Ok(Prepare::Batch(all));
    }
    // Every table file this call made in the directory, removed again if
    // the call fails before the commit.
    let mut made = Vec::new();
    let r = link_and_check(db, paths, opts, tables, &mut made);
    if r.is_err() {
        remove_made(db, &made);
    }
    r
}

/// [`prepare`] for files that enter the tree as files: links, checks and
/// syncs (see there), noting in `made` each table it creates.
fn link_and_check(
    db: &DbInner,
    paths: &[PathBuf],
    opts: &IngestOptions,
    tables: Vec<Arc<Table>>,
    made: &mut Vec<u64>,
) -> Result<Prepare> {
    let vfs = db.vfs.as_ref();
    let mut linked = Vec::new();
    let mut same_inode = Vec::new();
    for p in paths {
        let number = db.new_file_number();
        let dst = filenames::table(&db.dir, number);
        if vfs.exists(&dst) {
            // A fresh number names no file; one that does is not this
            // call's to overwrite (a copy truncates) or to remove.
            return Err(Error::internal(format!(
                "{}: a table with a new file number exists already",
                dst.display()
            )));
        }
        // Noted before the link or copy: a copy that fails part way (a
        // full disk) leaves a partial file, which is this call's to remove
        // (it stayed, and the next open moved it to `lost/`, where it kept
        // the space: a user audit).
        made.push(number);
        let moved = link_or_copy(vfs, p, &dst, opts.move_files)?;
        if moved {
            linked.push(p.clone());
        }
        same_inode.push(moved);
    }
    let walked = if opts.excise.is_some() {
        let walked = walk_all(&tables, paths, Check::of(opts))?;
        check_disjoint(paths, &walked)?;
        walked
    } else {
        let (walked, synced) = walk_beside(&tables, paths, Check::of(opts), || sync_dir_timed(db));
        // A bad file's error first: it says what to fix.
        let walked = walked?;
        check_disjoint(paths, &walked)?;
        synced?;
        walked
    };
    let mut out = Vec::new();
    for (((t, (lo, hi, excl)), number), &moved) in
        tables.iter().zip(walked).zip(made.iter()).zip(&same_inode)
    {
        let props = t.properties();
        out.push(Prepared {
            number: *number,
            size: t.file_size(),
            smallest_user: lo,
            largest_user: hi,
            largest_exclusive: excl,
            num_entries: props.num_entries.saturating_sub(props.num_range_deletions),
            num_deletions: props
                .num_deletions
                .saturating_sub(props.num_range_deletions),
            num_range_deletions: props.num_range_deletions,
            excise_tombstone: false,
            opened: moved.then(|| Arc::clone(t)),
        });
    }
    if let Some((a, b)) = &opts.excise {
        // The range-tombstone file, if the excise looks unable to cut the
        // tree at once (see the module docs); should that change before
        // the commit, the commit asks for it (`NeedTombstone`).
        let sv = db.super_version();
        if needs_tombstone(&sv.mem, &sv.imm, &out, a, b) || !db.snapshots.lock().is_empty() {
            let f = write_excise_tombstone(db, a, b)?;
            made.push(f.number);
            out.insert(0, f);
        }
        // The one directory sync of the call, for every link, copy and
        // tombstone file above: it must complete before the commit frames
        // a MANIFEST record naming them (the record may reach the disk any
        // time after, synced or not), or a crash could leave a record
        // naming a file whose directory entry was lost.
        sync_dir_timed(db)?;
    }
    Ok(Prepare::Files(out, tables, linked))
}

/// The database directory's fsync of an ingestion, its time counted in
/// `Metrics::ingest_dir_sync_micros`.
pub(crate) fn sync_dir_timed(db: &DbInner) -> Result<()> {
    let t = std::time::Instant::now();
    let r = db.vfs.sync_dir(&db.dir);
    db.stats
        .ingest_dir_sync_micros
        .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
    r
}

/// Writes the range-tombstone file of an excise of `[a, b)` (synced; the
/// caller syncs the directory). If the write fails, what it left of the
/// file (under a number no other file has) is removed again.
pub(crate) fn write_excise_tombstone(db: &DbInner, a: &[u8], b: &[u8]) -> Result<Prepared> {
    let number = db.new_file_number();
    let r = write_tombstone_file(db.vfs.as_ref(), &db.dir, number, a, b);
    if r.is_err() {
        // Best effort: a file left behind is unreferenced (the next open
        // moves it aside); the write's error is the one to report.
        let _ = db.vfs.remove(&filenames::table(&db.dir, number));
    }
    r
}

/// Removes the tables `numbers` of `db`'s directory, which an ingestion
/// made and then failed before any MANIFEST record named them. Best
/// effort: a file left behind is unreferenced, and the next open moves it
/// aside; the ingestion's own error is the one to report.
pub(crate) fn remove_made(db: &DbInner, numbers: &[u64]) {
    for &n in numbers {
        let _ = db.vfs.remove(&filenames::table(&db.dir, n));
    }
}

/// Writes table `number` of `dir` holding one range tombstone `[a, b)` at
/// sequence number 0 (an ingested file's; its global sequence number is
/// the MANIFEST's), synced; the caller syncs the directory. Also used by
/// `repair` to redo an excise from an ingestion's WAL marker.
pub(crate) fn write_tombstone_file(
    vfs: &dyn Vfs,
    dir: &Path,
    number: u64,
    a: &[u8],
    b: &[u8],
) -> Result<Prepared> {
    let path = filenames::table(dir, number);
    let mut w = crate::sstable::SstWriter::create_in(
        vfs,
        &path,
        crate::sstable::SstOptions::for_ingestion(),
    )?;
    w.delete_range(a, b)?;
    let info = w.finish()?;
    Ok(Prepared {
        number,
        size: info.file_size,
        smallest_user: a.to_vec(),
        largest_user: b.to_vec(),
        largest_exclusive: true,
        num_entries: 0,
        num_deletions: 0,
        num_range_deletions: 1,
        excise_tombstone: true,
        opened: None,
    })
}

/// Puts `src` into the database as `dst`: a hard link if `link` and the
/// file system allows it (returns true: the caller's link must go once the
/// ingestion succeeded), else a synced copy (false).
fn link_or_copy(vfs: &dyn Vfs, src: &Path, dst: &Path, link: bool) -> Result<bool> {
    if link && vfs.link(src, dst).is_ok() {
        return Ok(true);
    }
    vfs.copy(src, dst)?;
    Ok(false)
}

/// The level a file goes to: L0 if it overlaps a file there; otherwise the
/// lowest level at or below `base` (Lbase, `compaction::picker`) such that
/// neither it nor any level from `base` down to it holds an overlapping
/// file and no running compaction writes its range there; L0 if even
/// `base` is taken.
///
/// The levels between L0 and Lbase are skipped, as RocksDB and Pebble do:
/// they are empty by the tree's shape, and a file put there makes the
/// first non-empty level far larger than its target, so the next
/// compaction rewrites a whole level below it for one file's worth of new
/// data (W5, docs/bench-history/w5-sublevels.md, measured write amplification 6.9 with
/// the old rule and 3.9 with this one). An overlapping file goes to L0
/// instead, where sublevels and flush splitting compact it into Lbase in
/// narrow slices. The skipped levels are empty because `base` is never
/// below the first non-empty level, so skipping cannot jump over data.
pub(crate) fn place(v: &Version, f: &Prepared, running: &Running, base: usize) -> usize {
    let hit = |l: usize| {
        v.files(l).iter().any(|g| {
            overlaps(
                &f.smallest_user,
                &f.largest_user,
                f.largest_exclusive,
                g.smallest_user_key(),
                g.largest_user_key(),
                g.largest_is_exclusive(),
            )
        }) || running.writes_range(l, &f.smallest_user, &f.largest_user)
    };
    debug_assert!(
        (1..base).all(|l| v.files(l).is_empty()),
        "levels above Lbase are empty"
    );
    if hit(0) {
        return 0;
    }
    let mut best = 0;
    for l in base.max(1)..NUM_LEVELS {
        if hit(l) {
            break;
        }
        best = l;
    }
    best
}

/// Places the files of one ingestion in order: each where [`place`] puts
/// it, but free of overlap with the files placed before it in this edit too
/// (a range-tombstone file and the data inside its range share a sequence
/// number, so either may sit above the other, but never in one level
/// below L0). A file that collides at Lbase goes to L0.
pub(crate) fn place_all(
    v: &Version,
    files: &[&Prepared],
    running: &Running,
    base: usize,
) -> Vec<usize> {
    let mut placed: Vec<(usize, &Prepared)> = Vec::new();
    let mut out = Vec::new();
    for &f in files {
        let mut best = place(v, f, running, base);
        for l in base.max(1)..=best {
            let hit = placed.iter().any(|(pl, p)| {
                *pl == l
                    && overlaps(
                        &f.smallest_user,
                        &f.largest_user,
                        f.largest_exclusive,
                        &p.smallest_user,
                        &p.largest_user,
                        p.largest_exclusive,
                    )
            });
            if hit {
                best = if l > base { l - 1 } else { 0 };
                break;
            }
        }
        placed.push((best, f));
        out.push(best);
    }
    out
}

/// Keys at which a bulk loader should cut the files of its next ingestion
/// (`Db::ingest_split_keys`): where Lbase is cut
/// (`compaction::lbase_cuts`): the first key of every Lbase file but the
/// first, and (with `lbase_split_bytes` set) points inside Lbase files of
/// at least twice that size. A file cut there overlaps one slice of Lbase at
/// most, so when it lands in L0 the L0 -> Lbase compaction that takes it
/// can be one slice wide, not the whole level (W5, docs/bench-history/w5-sublevels.md).
/// L0's flush split keys are left out: in W5 adding them cut files finer
/// and raised write amplification (5.3 against 4.6) without making the
/// largest compaction smaller. Empty with `l0_sublevels` off, which turns
/// flush splitting off too: classic L0 takes whole files either way.
pub(crate) fn split_keys(db: &DbInner, v: &Version) -> Vec<Vec<u8>> {
    let o = &db.opts.compaction;
    if !o.l0_sublevels {
        return Vec::new();
    }
    let base = crate::compaction::picker::level_targets(v, o).base_level;
    let split = crate::compaction::lbase_cuts::split_bytes_of(v, o);
    lbase_cut_keys(db, v.files(base), split)
}

/// `compaction::lbase_cuts::cut_keys` of `files` (Lbase's, or some of
/// them) at slices of `split` bytes (`lbase_cuts::split_bytes`), reading
/// inner points from the files' index blocks
/// (a file that cannot be opened gives none: the keys are a hint, and the
/// error surfaces on the paths that must read the file).
pub(crate) fn lbase_cut_keys(db: &DbInner, files: &[Arc<FileMeta>], split: u64) -> Vec<Vec<u8>> {
    crate::compaction::lbase_cuts::cut_keys(files, split, &|f, parts| {
        db.table_cache
            .get(f)
            .map(|t| t.cut_keys(parts))
            .unwrap_or_default()
    })
}

/// Whether an excise of `[a, b)` with these files must bring its
/// range-tombstone file, whatever the snapshots: memory holds data in the
/// range (tested as `[a, b]`: erring towards a tombstone is safe), or the
/// files overlap memory and so will wait in the queue, where only the
/// tombstone can hide the range from readers.
pub(crate) fn needs_tombstone(
    mem: &MemTable,
    imm: &[Arc<dyn Flushable>],
    files: &[Prepared],
    a: &[u8],
    b: &[u8],
) -> bool {
    mem.overlaps(a, b) || imm.iter().any(|e| e.overlaps(a, b)) || overlaps_memory(mem, imm, files)
}

/// Whether the memtable or any queued flushable overlaps the files.
pub(crate) fn overlaps_memory(
    mem: &MemTable,
    imm: &[Arc<dyn Flushable>],
    files: &[Prepared],
) -> bool {
    files.iter().any(|f| {
        mem.overlaps(&f.smallest_user, &f.largest_user)
            || imm
                .iter()
                .any(|e| e.overlaps(&f.smallest_user, &f.largest_user))
    })
}

/// The one MANIFEST edit that puts an ingestion's files into the tree.
pub(crate) struct Placement {
    pub edit: VersionEdit,
    /// Level of each of the caller's files (the tombstone file left out).
    pub levels: Vec<usize>,
    /// What the excise cut, if it cut the tree.
    pub excised: Option<Excised>,
    /// Every file the edit adds, with its level (for the event log).
    pub added: Vec<(usize, FileMeta)>,
}

/// Builds the edit placing `files` (one ingestion, sequence `seq`) into `v`.
/// With `excise`, the range is cut out of `v` first (`db::excise`) and the
/// range-tombstone file is left out; the data files are then placed against
/// the cut version, all in the same edit. Without it, every file (the
/// tombstone file included, if any) is placed as it is.
pub(crate) fn placement(
    db: &DbInner,
    v: &Version,
    running: &Running,
    files: &[Prepared],
    seq: u64,
    excise: Option<&(Vec<u8>, Vec<u8>)>,
) -> Result<Placement> {
    let mut edit = VersionEdit::default();
    let mut added = Vec::new();
    let (excised, cut) = match excise {
        Some((a, b)) => {
            let x = super::excise::excise(
                v,
                &db.table_cache,
                a,
                b,
                &|| db.new_file_number(),
                &mut edit,
            )?;
            added.extend(x.added.iter().cloned());
            let cut = v.apply(&edit, "excise")?;
            (Some(x), Some(cut))
        }
        None => (None, None),
    };
    let to_place: Vec<&Prepared> = files
        .iter()
        .filter(|f| excised.is_none() || !f.excise_tombstone)
        .collect();
    let target = cut.as_ref().unwrap_or(v);
    let base = crate::compaction::picker::level_targets(target, &db.opts.compaction).base_level;
    let levels = place_all(target, &to_place, running, base);
    let mut data_levels = Vec::new();
    for (f, &l) in to_place.iter().zip(&levels) {
        db.stats.record_ingested_file(l, f.size);
        edit.add_file(l, f.meta(seq));
        added.push((l, f.meta(seq)));
        if !f.excise_tombstone {
            data_levels.push(l);
        }
    }
    Ok(Placement {
        edit,
        levels: data_levels,
        excised,
        added,
    })
}

/// The tables a queued ingestion reads through at sequence `seq`, cached
/// in the table cache: the tables `prepare` opened, rebound to the
/// database's file name, its block cache and `seq`, for linked files
/// (saving a second open: 40 µs of a W3 call under load, traced); opened
/// anew for copies and range-tombstone files.
pub(crate) fn queued_tables(db: &DbInner, files: &[Prepared], seq: u64) -> Result<Vec<Arc<Table>>> {
    files
        .iter()
        .map(|f| match &f.opened {
            Some(t) => db.table_cache.adopt(f.number, t, seq),
            None => db.table_cache.get(&f.meta(seq)),
        })
        .collect()
}

/// Ingested files waiting in the immutable queue (internal; public only
/// because the `Flushable` trait names it).
pub struct IngestedFlushable {
    pub id: u64,
    pub wal_number: u64,
    pub seq: u64,
    pub files: Vec<Prepared>,
    pub tables: Vec<Arc<Table>>,
    /// The excise range, if the ingestion has one: `files` then include its
    /// range-tombstone file, which covers the range while the entry waits;
    /// the flush thread cuts the range instead when it places the files, if
    /// no older snapshot needs the data.
    pub excise: Option<(Vec<u8>, Vec<u8>)>,
}

impl Flushable for IngestedFlushable {
    fn id(&self) -> u64 {
        self.id
    }
    fn wal_number(&self) -> u64 {
        self.wal_number
    }
    fn last_seq(&self) -> u64 {
        self.seq
    }
    fn first_seq(&self) -> Option<u64> {
        Some(self.seq)
    }
    fn get(&self, user_key: &[u8], snapshot: u64) -> Result<Option<Found>> {
        if snapshot < self.seq {
            return Ok(None);
        }
        for t in &self.tables {
            if let Some(f) = t.get(user_key, snapshot)? {
                return Ok(Some(f));
            }
        }
        Ok(None)
    }
    fn range_tombstones(&self) -> Vec<RangeTombstone> {
        self.tables
            .iter()
            .flat_map(|t| t.range_tombstones().iter().cloned())
            .collect()
    }
    /// `get` per key, table by table: every table's tombstones cover a
    /// key before any entry of it is looked at (as
    /// `max_covering_tombstone` over `range_tombstones` does), and a key
    /// goes on to the next table only if the one before found nothing.
    fn multi_get(&self, lookups: &mut [super::read::PointLookup<'_>], snapshot: u64) {
        for l in lookups.iter_mut().filter(|l| !l.is_done()) {
            for t in &self.tables {
                l.cover(super::read::covering(t.range_tombstones(), l.key, snapshot));
            }
        }
        if snapshot < self.seq {
            return;
        }
        for t in &self.tables {
            let mut cursor = crate::sstable::reader::PointCursor::new(t);
            for l in lookups.iter_mut().filter(|l| !l.is_done()) {
                l.settle(cursor.get(l.key, snapshot));
            }
        }
    }
    fn iter(&self) -> Box<dyn InternalIterator + Send> {
        Box::new(MergingIterator::new(
            self.tables
                .iter()
                .map(|t| Box::new(t.iter()) as Box<dyn InternalIterator + Send>)
                .collect(),
        ))
    }
    fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.files.iter().any(|f| {
            overlaps(
                lo,
                hi,
                false,
                &f.smallest_user,
                &f.largest_user,
                f.largest_exclusive,
            )
        })
    }
    fn ingested(&self) -> Option<&IngestedFlushable> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::super::commit::{IngestJob, IngestOutcome, Job};
    use super::*;
    use crate::db::{Db, Options};
    use parking_lot::Mutex;

    /// A helper that took files and then never ran (off the CPU): the
    /// calling thread walks them itself once no progress shows, cancels
    /// the helper, and returns every file's own result in order, a bad
    /// file's error included.
    #[test]
    fn the_caller_takes_over_files_a_stalled_helper_took() {
        let d = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for (n, keys) in [["a1", "a2"], ["b1", "b2"]].iter().enumerate() {
            let p = d.path().join(format!("{n}.sst"));
            let mut w =
                crate::sstable::SstWriter::create(&p, crate::sstable::SstOptions::for_ingestion())
                    .unwrap();
            for k in keys {
                w.put(k.as_bytes(), b"v").unwrap();
            }
            w.finish().unwrap();
            paths.push(p);
        }
        // The second file's data block damaged: only the walk sees it.
        let mut bytes = std::fs::read(&paths[1]).unwrap();
        bytes[3] ^= 0xff;
        std::fs::write(&paths[1], bytes).unwrap();
        let vfs = crate::vfs::OsVfs;
        let tables: Vec<_> = paths
            .iter()
            .map(|p| open_to_ingest(&vfs, p, ChecksumRule::REQUIRED).unwrap())
            .collect();
        let mut shared = SharedWalk::new(
            &tables,
            &paths,
            Check {
                checksums: true,
                trust_own: false,
            },
        );
        // Every piece taken by a helper that never runs.
        shared.next = AtomicUsize::new(shared.pieces.len());
        let mut results = shared.finish();
        assert!(
            shared.cancel.load(Ordering::Relaxed),
            "the helper is cancelled"
        );
        let first = results[0].take().unwrap().unwrap();
        assert_eq!(
            (first.0.as_slice(), first.1.as_slice()),
            (&b"a1"[..], &b"a2"[..])
        );
        let second = results[1].take().unwrap();
        assert!(
            second
                .as_ref()
                .is_err_and(|e| e.to_string().contains("1.sst")),
            "the damaged file is refused, by name: {second:?}"
        );
        // The helper, scheduled at last, finds nothing to take and stores
        // nothing over the caller's results.
        shared.work();
        assert!(shared.results.lock().iter().all(Option::is_none));
    }

    /// A file of `n` keys `k000000`, ... with 100-byte values, stored
    /// uncompressed, so every full data block has the same size (two can
    /// trade places and keep their checksums: format_version 5 has no
    /// per-offset context).
    fn equal_blocks_file(dir: &Path, n: usize) -> PathBuf {
        let p = dir.join("split.sst");
        let mut w = crate::sstable::SstWriter::create(
            &p,
            crate::sstable::SstOptions {
                compression: crate::sstable::CompressionType::None,
                ..crate::sstable::SstOptions::for_ingestion()
            },
        )
        .unwrap();
        for i in 0..n {
            w.put(format!("k{i:06}"), [b'v'; 100]).unwrap();
        }
        w.finish().unwrap();
        p
    }

    /// The walk of `p` in one piece on this thread, and split into pieces
    /// shared between a helper thread and this one (`SharedWalk`), with
    /// the number of pieces.
    fn walked_both_ways(p: &Path) -> (Result<Bounds>, Result<Bounds>, usize) {
        let full = Check {
            checksums: true,
            trust_own: false,
        };
        let t = open_to_ingest(&crate::vfs::OsVfs, p, ChecksumRule::REQUIRED).unwrap();
        let single = walk(&t, p, full);
        let shared = Arc::new(SharedWalk::new(&[t], &[p.to_path_buf()], full));
        let helper = {
            let s = Arc::clone(&shared);
            std::thread::spawn(move || s.work())
        };
        let mut split = shared.finish();
        helper.join().unwrap();
        (single, split[0].take().unwrap(), shared.pieces.len())
    }

    /// One file's walk split into pieces (the calling thread and the
    /// helper each take runs of data blocks) finds what one walk finds:
    /// the same bounds for a sound file; for a damaged block in the first
    /// run, the last block before a seam, the first after it, or the last
    /// run, the same corruption error, naming the file; and a key out of
    /// order across a seam (each run still in order) is caught there, by
    /// the same error both ways: the index separator before it is not
    /// below it (`Table::walk_blocks` checks each block against the index,
    /// which implies the order across blocks; the seam check in `combine`
    /// stays, and says "keys out of order" if the index is ever not
    /// checked).
    #[test]
    fn a_walk_split_into_pieces_finds_what_one_walk_finds() {
        let d = tempfile::tempdir().unwrap();
        let p = equal_blocks_file(d.path(), 3000);
        let (single, split, pieces) = walked_both_ways(&p);
        assert!(pieces >= 4, "{pieces} pieces: the file must be split");
        let (lo, hi, excl) = split.unwrap();
        assert_eq!((lo, hi, excl), single.unwrap());
        let clean = std::fs::read(&p).unwrap();
        let t = open_to_ingest(&crate::vfs::OsVfs, &p, ChecksumRule::REQUIRED).unwrap();
        let h = t.data_handles().unwrap();
        drop(t);
        let seam = PIECE_BLOCKS;
        let name = p.display().to_string();
        for (what, block) in [
            ("first run", 1),
            ("last block before a seam", seam - 1),
            ("first block after a seam", seam),
            ("last run", h.len() - 1),
        ] {
            let mut bytes = clean.clone();
            bytes[h[block].offset as usize + 3] ^= 0x40;
            std::fs::write(&p, &bytes).unwrap();
            let (single, split, _) = walked_both_ways(&p);
            let e = split.expect_err(what);
            assert!(e.is_corruption(), "{what}: {e}");
            assert!(e.to_string().contains(&name), "{what}: {e}");
            assert!(e.to_string().contains("checksum mismatch"), "{what}: {e}");
            assert_eq!(e.to_string(), single.unwrap_err().to_string(), "{what}");
        }
        // The first key of the first block after a seam, whole at a
        // restart point after three one-byte varints, made smaller than
        // every key before it (`k...` becomes `>...`) and the block's
        // checksum recomputed: each run is still in order, the seam not.
        let at = h[seam];
        let body = (at.offset as usize)..(at.offset + at.size) as usize;
        let mut bytes = clean.clone();
        assert_eq!(bytes[body.start + 3], b'k');
        bytes[body.start + 3] = b'>';
        let sum = crate::util::checksum::block_checksum(
            crate::util::checksum::ChecksumType::Crc32c,
            &bytes[body.clone()],
            bytes[body.end],
        );
        bytes[body.end + 1..body.end + 5].copy_from_slice(&sum.to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        let (single, split, _) = walked_both_ways(&p);
        let e = split.expect_err("keys out of order across the seam");
        assert!(e.is_corruption(), "{e}");
        assert!(
            e.to_string()
                .contains(&format!("index entry {} ", seam - 1))
                && e.to_string().contains("is not below the first key \">"),
            "{e}"
        );
        assert!(e.to_string().contains(&name), "{e}");
        assert_eq!(e.to_string(), single.unwrap_err().to_string());
    }

    /// The checks of one entry after another, in one walk's order: out of
    /// order first (corruption), then a sequence number other than 0, then
    /// the same user key twice (the seam check of `combine` uses it).
    #[test]
    fn an_entry_after_another_is_checked_in_one_walks_order() {
        let ik =
            |k: &str, seq: u64, kind: ValueKind| key::make_internal_key(k.as_bytes(), seq, kind);
        let f = |prev: &[u8], k: &[u8]| check_follows("t.sst", "f.sst", prev, k, 7);
        let v = ValueKind::Value;
        assert!(f(&ik("a", 0, v), &ik("b", 0, v)).is_ok());
        let e = f(&ik("b", 0, v), &ik("a", 0, v)).unwrap_err();
        assert!(
            e.is_corruption() && e.to_string().contains("out of order"),
            "{e}"
        );
        let e = f(&ik("b", 0, v), &ik("a", 5, v)).unwrap_err();
        assert!(e.is_corruption(), "order before the sequence number: {e}");
        let e = f(&ik("a", 0, v), &ik("b", 5, v)).unwrap_err();
        assert!(e.to_string().contains("sequence number 5"), "{e}");
        // Same user key, the later entry's trailer smaller: in internal
        // order, but twice.
        let e = f(
            &ik("a", 0, ValueKind::Value),
            &ik("a", 0, ValueKind::Deletion),
        )
        .unwrap_err();
        assert!(e.to_string().contains("appears twice"), "{e}");
        assert!(user_key_less(b"k0000000a", b"k0000000b"));
        assert!(!user_key_less(b"k0000000b", b"k0000000b"));
        assert!(user_key_less(b"k", b"k0"));
        assert!(!user_key_less(b"k00000001", b"k00000000"));
        assert!(user_key_less(b"a0000000", b"b"));
    }

    /// A table `prepare` opened, rebound to the database's name, cache and
    /// global sequence number (`TableCache::adopt`), reads exactly as the
    /// same file opened afresh at that sequence number: every entry with
    /// its stamped key, the range tombstones, point reads. (Planted: the
    /// tombstones left at sequence 0 fail here.) Its prefix filter is used
    /// with the database's extractor as a fresh open's is, though
    /// `prepare` opened it without one (planted: an adopted table that kept
    /// the ingestion's "no extractor" never skipped a prefix scan).
    #[test]
    fn an_adopted_table_reads_as_a_fresh_open_at_its_sequence_number() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.sst");
        let px: Arc<dyn crate::sstable::PrefixExtractor> = Arc::new(crate::sstable::FixedPrefix(3));
        let mut w = crate::sstable::SstWriter::create(
            &p,
            crate::sstable::SstOptions {
                prefix_extractor: Some(Arc::clone(&px)),
                ..crate::sstable::SstOptions::for_ingestion()
            },
        )
        .unwrap();
        for i in 0..500u32 {
            w.put(format!("k{i:04}"), format!("v{i}")).unwrap();
        }
        w.delete_range("k0100", "k0200").unwrap();
        w.finish().unwrap();
        let vfs = crate::vfs::OsVfs;
        let checked = open_to_ingest(&vfs, &p, ChecksumRule::REQUIRED).unwrap();
        let full = Check {
            checksums: true,
            trust_own: false,
        };
        walk(&checked, &p, full).unwrap();
        let cache = Arc::new(crate::cache::BlockCache::new(1 << 20));
        assert!(!checked.has_prefix_filter());
        let adopted = checked
            .with_global_seqno(
                "db/000007.sst".into(),
                Some(Arc::clone(&cache)),
                42,
                Some(&px),
            )
            .unwrap();
        let fresh = Table::open_in(
            &vfs,
            &p,
            TableOptions {
                cache: Some(cache),
                global_seqno: Some(42),
                prefix_extractor: Some(Arc::clone(&px)),
                ..TableOptions::default()
            },
        )
        .unwrap();
        assert!(adopted.has_prefix_filter() && fresh.has_prefix_filter());
        for q in ["k00", "k04", "k05", "k99", "zzz"] {
            let q = q.as_bytes();
            assert_eq!(adopted.may_contain_prefix(q), fresh.may_contain_prefix(q));
        }
        assert!(adopted.may_contain_prefix(b"k04"));
        assert_eq!(adopted.name(), "db/000007.sst");
        assert_eq!(adopted.global_seqno(), Some(42));
        assert_eq!(adopted.range_tombstones(), fresh.range_tombstones());
        assert_eq!(adopted.range_tombstones()[0].seq, 42);
        let entries = |t: &Arc<Table>| crate::iter::collect_all(&mut t.iter());
        let all = entries(&adopted);
        assert_eq!(all.len(), 500);
        assert_eq!(all, entries(&fresh));
        for k in ["k0000", "k0150", "k0499", "k9999"] {
            assert_eq!(
                adopted.get(k.as_bytes(), 42).unwrap(),
                fresh.get(k.as_bytes(), 42).unwrap(),
                "{k}"
            );
            assert_eq!(adopted.get(k.as_bytes(), 41).unwrap(), None, "{k} below 42");
        }
    }

    /// Runs `files` through the commit pipeline as one ingestion job (with
    /// `opts`' excise range, overlap allowed) and returns its outcome.
    fn commit_prepared(
        inner: &DbInner,
        files: Vec<Prepared>,
        opts: &IngestOptions,
    ) -> IngestOutcome {
        let slot = Arc::new(Mutex::new(None));
        let job = IngestJob {
            files,
            excise: opts.excise.clone(),
            allow_overlap: true,
            result: Arc::clone(&slot),
            named: Arc::default(),
        };
        inner.commit.commit(inner, Job::Ingest(job), false).unwrap();
        let outcome = slot.lock().take();
        outcome.unwrap()
    }

    /// An ingestion whose commit asks for a tombstone file after taking a
    /// sequence number (a snapshot older than it appeared after `prepare`)
    /// hands that number back: the synced write after it takes the same
    /// number, so a power cut before the ingestion is committed again
    /// leaves no gap in the sequence numbers, and recovery, which refuses
    /// a gap ("a MANIFEST record is missing"), opens with the write.
    #[test]
    fn a_number_an_ingestion_gives_back_leaves_no_gap_after_a_power_cut() {
        use crate::db::WriteOptions;
        use crate::vfs::FaultVfs;
        let vfs = FaultVfs::new();
        let dir = Path::new("/db");
        let open = |vfs: &FaultVfs| {
            let shared: Arc<dyn Vfs> = Arc::new(vfs.clone());
            let opts = Options {
                vfs: Some(shared),
                ..Options::default()
            };
            Db::open(dir, opts).unwrap()
        };
        let db = open(&vfs);
        let inner = &db.inner;
        db.put(b"k4", b"old").unwrap();
        db.flush().unwrap();
        let p = Path::new("/in.sst");
        let mut w = crate::sstable::SstWriter::create_in(
            &vfs,
            p,
            crate::sstable::SstOptions::for_ingestion(),
        )
        .unwrap();
        w.put(b"k5", b"new").unwrap();
        w.finish().unwrap();
        let opts = IngestOptions {
            small_file_bytes: 0,
            excise: Some((b"k0".to_vec(), b"k9".to_vec())),
            ..IngestOptions::default()
        };
        let Prepare::Files(files, _, _) = prepare(inner, &[p.to_path_buf()], &opts).unwrap() else {
            panic!("files expected");
        };
        let snap = db.snapshot();
        let before = db.latest_sequence();
        let outcome = commit_prepared(inner, files, &opts);
        assert!(matches!(outcome, IngestOutcome::NeedTombstone(_)));
        let mut b = WriteBatch::new();
        b.put(b"after", b"synced");
        db.write(b, &WriteOptions { sync: true }).unwrap();
        assert_eq!(db.latest_sequence(), before + 1, "the number was reused");
        drop(snap);
        // The power is cut here: the ingestion was never committed again.
        let image = vfs.crash_clone();
        drop(db);
        let db = open(&image);
        assert_eq!(db.get(b"after").unwrap(), Some(b"synced".to_vec()));
        assert_eq!(db.get(b"k4").unwrap(), Some(b"old".to_vec()));
        assert_eq!(db.get(b"k5").unwrap(), None);
        assert_eq!(db.latest_sequence(), before + 1);
    }

    /// `prepare` writes no tombstone file when nothing needs one; if memory
    /// comes to hold data in the range, or to overlap the files (they will
    /// queue), or a snapshot is taken before the commit, the commit takes
    /// nothing and hands the files back, and a second commit with the
    /// tombstone file goes through.
    #[test]
    fn commit_asks_for_a_tombstone_that_prepare_did_not_write() {
        for cause in ["memory", "files", "snapshot"] {
            let d = tempfile::tempdir().unwrap();
            let db = Db::open(d.path().join("db"), Options::default()).unwrap();
            let inner = &db.inner;
            inner.state.lock().pending_outputs.insert(0);
            db.put(b"a", b"old").unwrap();
            db.put(b"k4", b"old").unwrap();
            db.flush().unwrap();
            let p = d.path().join("f.sst");
            let mut w =
                crate::sstable::SstWriter::create(&p, crate::sstable::SstOptions::for_ingestion())
                    .unwrap();
            let new_key: &[u8] = if cause == "files" { b"m5" } else { b"k5" };
            w.put(new_key, b"new").unwrap();
            w.finish().unwrap();
            let opts = IngestOptions {
                small_file_bytes: 0,
                excise: Some((b"k0".to_vec(), b"k9".to_vec())),
                ..IngestOptions::default()
            };
            let Prepare::Files(files, _, _) = prepare(inner, &[p], &opts).unwrap() else {
                panic!("files expected");
            };
            assert!(
                files.iter().all(|f| !f.excise_tombstone),
                "nothing needs one"
            );
            let snap = match cause {
                "memory" => {
                    db.put(b"k3", b"in memory").unwrap();
                    None
                }
                "files" => {
                    db.put(b"m5", b"in memory").unwrap();
                    None
                }
                _ => Some(db.snapshot()),
            };
            let visible = db.latest_sequence();
            let commit = |files: Vec<Prepared>| commit_prepared(inner, files, &opts);
            let IngestOutcome::NeedTombstone(mut files) = commit(files) else {
                panic!("{cause}: the commit must ask for the tombstone file");
            };
            assert_eq!(db.latest_sequence(), visible, "{cause}: nothing published");
            assert_eq!(db.get(b"k4").unwrap(), Some(b"old".to_vec()));
            files.insert(0, write_excise_tombstone(inner, b"k0", b"k9").unwrap());
            let IngestOutcome::Done(r) = commit(files) else {
                panic!("{cause}: the second commit goes through");
            };
            assert!(!r.excised, "{cause}: {r:?}");
            assert_eq!(r.flushable, cause != "snapshot");
            inner.state.lock().versions.sync_manifest().unwrap();
            assert_eq!(db.get(b"k4").unwrap(), None, "{cause}: excised at once");
            assert_eq!(db.get(b"k3").unwrap(), None);
            assert_eq!(db.get(new_key).unwrap(), Some(b"new".to_vec()));
            assert_eq!(db.get(b"a").unwrap(), Some(b"old".to_vec()));
            if let Some(s) = snap {
                let at = crate::db::ReadOptions {
                    snapshot: Some(&s),
                    ..Default::default()
                };
                assert_eq!(db.get_opt(b"k4", &at).unwrap(), Some(b"old".to_vec()));
            }
            inner.state.lock().pending_outputs.remove(&0);
        }
    }
}
