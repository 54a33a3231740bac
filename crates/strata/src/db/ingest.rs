//! External SST ingestion: whole files handed to the database.
//!
//! 1. **Prepare**, outside every lock: open each file, verify its checksums
//!    and that every key has sequence number 0, find its bounds, check the
//!    files do not overlap each other, and hard-link (or copy) them into the
//!    database directory under new file numbers. Strata never writes into
//!    an ingested file: its global sequence number lives in the MANIFEST.
//!    A set whose total size is under `small_file_bytes` is applied as a
//!    write batch instead.
//! 2. **Commit**: the ingestion takes one sequence number through the commit
//!    pipeline, like a batch, so a write that commits before it is older and
//!    one after is newer, and foreground writes never wait on a flush.
//! 3. **Place**: if no memtable or queued flushable overlaps the files, one
//!    MANIFEST edit puts each file at the lowest level where nothing in the
//!    levels above (or that level) overlaps it and no running compaction is
//!    writing its range. Otherwise the files join the immutable queue as one
//!    *flushable* entry behind the memtable they overlap (which is moved to
//!    the queue first, keeping its WAL): visible to reads at once, recorded
//!    in the MANIFEST as queued, and placed at their own best level when the
//!    queue reaches them.
//! 4. **Sync**: either way the commit writes one MANIFEST record without
//!    waiting for the disk, publishes the sequence number and lets the
//!    writes behind it go; the ingesting caller then syncs the MANIFEST
//!    before it returns. Writes queued behind an ingestion therefore never
//!    wait for its sync.
//!
//! All files of one call appear together or not at all: one MANIFEST
//! record. Files linked by an ingestion that never committed are
//! unreferenced and deleted at the next open.

use super::filenames;
use super::flushable::Flushable;
use super::write_batch::WriteBatch;
use super::DbInner;
use crate::compaction::picker::Running;
use crate::error::{Error, Result};
use crate::iter::merging::MergingIterator;
use crate::iter::InternalIterator;
use crate::key::{self, ParsedKey, ValueKind, MAX_SEQUENCE};
use crate::memtable::MemTable;
use crate::sstable::{Found, RangeTombstone, Table, TableOptions};
use crate::version::{FileMeta, Version, NUM_LEVELS};
use crate::vfs::OsVfs;
use crate::vfs::Vfs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to ingest.
#[derive(Clone, Debug)]
pub struct IngestOptions {
    /// Hard-link the files (they must not be modified afterwards); false
    /// copies them. A link that fails (another file system) falls back to a
    /// copy.
    pub move_files: bool,
    /// A set of files holding less than this in total (uncompressed keys and
    /// values) is applied as a write batch instead of entering the tree as
    /// files. Default 32 KiB, from `strata bench ingest-size`: up to about
    /// 36 KB a synced batch took at most as long as linking a file (0.44x to
    /// 0.80x on an idle WAL, 0.82x to 1.02x behind 1,000 unsynced Puts),
    /// and it leaves no tiny file in the tree; at 118 KB it took 1.45x.
    pub small_file_bytes: u64,
    /// Files overlapping a memtable become a flushable entry (true) or make
    /// the call fail (false).
    pub allow_overlap_with_memtable: bool,
    pub verify_checksums: bool,
    /// Ingest and excise: atomically delete every key in `[start, end)` that
    /// the database held before this ingestion (the ingested files' own keys
    /// stay). Implemented as one extra file holding a single range tombstone
    /// at the ingestion's sequence number, placed in the same MANIFEST edit
    /// or queue entry; nothing outside the range is rewritten.
    pub excise: Option<(Vec<u8>, Vec<u8>)>,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            move_files: true,
            small_file_bytes: 32 << 10,
            allow_overlap_with_memtable: true,
            verify_checksums: true,
            excise: None,
        }
    }
}

/// What an ingestion did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IngestResult {
    pub sequence: u64,
    /// Level each file landed on (empty when applied as a batch; `None`
    /// entries for files waiting in the flushable queue).
    pub levels: Vec<Option<usize>>,
    pub as_batch: bool,
    pub flushable: bool,
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
        }
    }
}

/// A checked file: the table, its smallest and largest user key, and
/// whether the largest is a range tombstone's exclusive end.
type Inspected = (Arc<Table>, Vec<u8>, Vec<u8>, bool);

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

/// Opens and checks a file to ingest; returns the table and its bounds.
fn inspect(path: &Path, verify: bool) -> Result<Inspected> {
    let name = path.display().to_string();
    // Opened with the keys' own sequence numbers, which must all be 0.
    let t = Table::open_path(path, TableOptions::default())?;
    let p = t.properties();
    if let Some(v) = p.external_version {
        if v >= 2 && p.global_seqno.unwrap_or(0) != 0 {
            return Err(Error::invalid(format!(
                "{name}: already has a global sequence number"
            )));
        }
    }
    if verify {
        t.verify()?;
    }
    let mut it = t.iter();
    it.seek_to_first();
    let mut range: Option<(Vec<u8>, Vec<u8>)> = None;
    while it.valid() {
        let pk = ParsedKey::parse(it.key()).ok_or_else(|| {
            Error::corruption(&name, it.block_offset(), "key shorter than its trailer")
        })?;
        if pk.seq != 0 {
            return Err(Error::invalid(format!(
                "{name}: key {} has sequence number {} (files to ingest hold sequence 0 only)",
                crate::util::hex::escape(pk.user_key),
                pk.seq
            )));
        }
        match &mut range {
            Some((_, last)) if last.as_slice() == pk.user_key => {
                return Err(Error::invalid(format!(
                    "{name}: key {} appears twice",
                    crate::util::hex::escape(pk.user_key)
                )));
            }
            Some((_, last)) => *last = pk.user_key.to_vec(),
            None => range = Some((pk.user_key.to_vec(), pk.user_key.to_vec())),
        }
        it.next();
    }
    it.status()?;
    match bounds(range, t.range_tombstones()) {
        Some((l, h, excl)) => Ok((t, l, h, excl)),
        None => Err(Error::invalid(format!("{name}: file holds no entries"))),
    }
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
            k => {
                return Err(Error::NotSupported(format!(
                    "{}: ingesting {k:?} entries",
                    t.name()
                )))
            }
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
    Files(Vec<Prepared>, Vec<Arc<Table>>),
}

/// Step 1: checks and links the files (or builds the batch).
pub(crate) fn prepare(db: &DbInner, paths: &[PathBuf], opts: &IngestOptions) -> Result<Prepare> {
    if paths.is_empty() && opts.excise.is_none() {
        return Err(Error::invalid("nothing to ingest"));
    }
    if let Some((a, b)) = &opts.excise {
        if a >= b {
            return Err(Error::invalid("excise range is empty"));
        }
    }
    let mut inspected = Vec::new();
    for p in paths {
        inspected.push(inspect(p, opts.verify_checksums)?);
    }
    for i in 0..inspected.len() {
        for j in i + 1..inspected.len() {
            let (a, b) = (&inspected[i], &inspected[j]);
            if overlaps(&a.1, &a.2, a.3, &b.1, &b.2, b.3) {
                return Err(Error::invalid(format!(
                    "{} and {} overlap; files of one ingestion must not",
                    paths[i].display(),
                    paths[j].display()
                )));
            }
        }
    }
    // Uncompressed bytes: a batch costs what it holds (memtable inserts,
    // WAL bytes), whatever the file's compression.
    let total: u64 = inspected
        .iter()
        .map(|t| t.0.properties().raw_key_size + t.0.properties().raw_value_size)
        .sum();
    if total < opts.small_file_bytes {
        let mut all = WriteBatch::new();
        // The excise first: its sequence number is below every put's.
        if let Some((a, b)) = &opts.excise {
            all.delete_range(a, b);
        }
        for (t, ..) in &inspected {
            all.append(&as_batch(t)?);
        }
        return Ok(Prepare::Batch(all));
    }
    let mut out = Vec::new();
    let mut tables = Vec::new();
    if let Some((a, b)) = &opts.excise {
        let number = db.new_file_number();
        let path = filenames::table(&db.dir, number);
        let mut w = crate::sstable::SstWriter::create_in(
            db.vfs.as_ref(),
            &path,
            crate::sstable::SstOptions::for_ingestion(),
        )?;
        w.delete_range(a, b)?;
        let info = w.finish()?;
        out.push(Prepared {
            number,
            size: info.file_size,
            smallest_user: a.clone(),
            largest_user: b.clone(),
            largest_exclusive: true,
            num_entries: 0,
            num_deletions: 0,
            num_range_deletions: 1,
        });
    }
    for (p, (t, lo, hi, excl)) in paths.iter().zip(inspected) {
        let number = db.new_file_number();
        let dst = filenames::table(&db.dir, number);
        link_or_copy(db.vfs.as_ref(), p, &dst, opts.move_files)?;
        let props = t.properties();
        out.push(Prepared {
            number,
            size: t.file_size(),
            smallest_user: lo,
            largest_user: hi,
            largest_exclusive: excl,
            num_entries: props.num_entries.saturating_sub(props.num_range_deletions),
            num_deletions: props
                .num_deletions
                .saturating_sub(props.num_range_deletions),
            num_range_deletions: props.num_range_deletions,
        });
        tables.push(t);
    }
    db.vfs.sync_dir(&db.dir)?;
    Ok(Prepare::Files(out, tables))
}

fn link_or_copy(vfs: &dyn Vfs, src: &Path, dst: &Path, link: bool) -> Result<()> {
    if link && vfs.link(src, dst).is_ok() {
        return Ok(());
    }
    // Read through the OS (the caller's file is outside the database) and
    // write through the database's file system.
    let data = crate::vfs::read_all(&OsVfs, src).or_else(|_| crate::vfs::read_all(vfs, src))?;
    crate::vfs::write_all(vfs, dst, &data)
}

/// The level a file goes to: the lowest level such that neither it nor any
/// level above holds an overlapping file, and no running compaction writes
/// its range there.
pub(crate) fn place(v: &Version, f: &Prepared, running: &Running) -> usize {
    let mut best = 0;
    for l in 0..NUM_LEVELS {
        let hit = v.files(l).iter().any(|g| {
            overlaps(
                &f.smallest_user,
                &f.largest_user,
                f.largest_exclusive,
                g.smallest_user_key(),
                g.largest_user_key(),
                g.largest_is_exclusive(),
            )
        }) || running.writes_range(l, &f.smallest_user, &f.largest_user);
        if hit {
            break;
        }
        best = l;
    }
    best
}

/// Places the files of one ingestion in order: each at the lowest level
/// free of overlap with the version and with the files placed before it in
/// this edit (an excise file and the data inside its range share a sequence
/// number, so either may sit above the other, but never in one level).
pub(crate) fn place_all(v: &Version, files: &[Prepared], running: &Running) -> Vec<usize> {
    let mut placed: Vec<(usize, &Prepared)> = Vec::new();
    let mut out = Vec::new();
    for f in files {
        let mut best = place(v, f, running);
        for l in 1..=best {
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
                best = l - 1;
                break;
            }
        }
        placed.push((best, f));
        out.push(best);
    }
    out
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

/// Ingested files waiting in the immutable queue (internal; public only
/// because the `Flushable` trait names it).
pub struct IngestedFlushable {
    pub id: u64,
    pub wal_number: u64,
    pub seq: u64,
    pub files: Vec<Prepared>,
    pub tables: Vec<Arc<Table>>,
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
    fn iter(&self) -> Box<dyn InternalIterator + Send> {
        Box::new(MergingIterator::new(
            self.tables
                .iter()
                .map(|t| Box::new(t.iter()) as Box<dyn InternalIterator + Send>)
                .collect(),
        ))
    }
    fn memory_bytes(&self) -> usize {
        0
    }
    fn memtable(&self) -> Option<&Arc<MemTable>> {
        None
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
