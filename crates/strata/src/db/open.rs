//! Opening a database: decide what the directory is, rebuild the version
//! from the MANIFEST, check it against the files present, replay every live
//! WAL into memory, and only then, if every check passed, write: a new
//! MANIFEST, the replayed data as L0 tables, a fresh WAL; then delete what
//! the recovered MANIFEST proves obsolete and start the background threads.
//! A read-only open (`Db::open_read_only`) stops before writing: the
//! replayed WAL contents stay in memory, nothing in the directory is
//! created, renamed or deleted, and no lock is taken.
//!
//! The recovery rules (what is corruption, what may be dropped, what may be
//! deleted) are in `docs/architecture.md`, "Recovery rules"; the checks are
//! in `recovery_checks`. A WAL's torn tail (what an interrupted append
//! leaves: see `wal::tail`) is dropped: no writer was told that write had
//! succeeded with `sync`. Damage followed by valid records, a torn tail in
//! any WAL but the newest, or a gap in the sequence numbers that no
//! MANIFEST record explains, is corruption and fails the open, because data
//! after the damage was acknowledged.

use super::bg_priority;
use super::commit::{apply, CommitPipeline};
use super::compact::compaction_loop;
use super::events::{open_event, EventLog};
use super::flush::{delete_obsolete_files, flush_loop};
use super::flushable::{Flushable, ImmutableMemTable};
use super::marker::IngestMarker;
use super::options::Options;
use super::recovery_checks::{self as checks, DirKind, SeqRanges, Unreferenced};
use super::table_cache::{ChecksumRule, TableCache, TableFiles};
use super::wal_buffer::Wal;
use super::wal_sequence::WalSequence;
use super::write_batch::WriteBatch;
use super::{filenames, Db, DbInner, DbState, Stats};
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::sstable::SstOptions;
use crate::version::{FileMeta, VersionEdit, VersionSet};
use crate::vfs::{OsVfs, SequentialFile, Vfs, WritableFile};
use crate::wal::reader::{LogReader, TailPolicy};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

/// What WAL replay produced, oldest first: memtables, and ingestions that
/// were waiting in the immutable queue (they go back in sequence order
/// among the replayed records).
enum Replayed {
    /// A memtable and the highest sequence number in it (or before it).
    Mem(Arc<MemTable>, u64),
    Queued(u64, Vec<FileMeta>),
}

/// The WAL writer of a read-only database: every write is refused.
struct NoWal;

impl WritableFile for NoWal {
    fn append(&mut self, _data: &[u8]) -> Result<()> {
        Err(Error::NotSupported("the database is open read-only".into()))
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
}

/// Times a read-only open is tried while a writer changes the database
/// under it (see [`open`]).
const READ_ONLY_ATTEMPTS: usize = 20;

pub(crate) fn open(dir: &Path, opts: Options, read_only: bool) -> Result<Db> {
    opts.check()?;
    let db = open_checked(dir, opts, read_only)?;
    // The listener has heard the open (and whatever else the open logged)
    // when it returns, as it hears a flush's events before `flush` returns.
    db.inner.events.wait_heard();
    Ok(db)
}

fn open_checked(dir: &Path, opts: Options, read_only: bool) -> Result<Db> {
    if !read_only {
        return open_once(dir, opts, false);
    }
    // A read-only open takes no lock, so a writer may flush, compact or
    // retire a WAL while it reads. `open_once` lists the directory and
    // opens the WALs before it reads the MANIFEST, which rules out the
    // flush races (see there). A compaction can still delete an input
    // table between the MANIFEST's read and the table's open, and such a
    // view is no state the database was in: a failure while CURRENT or
    // the directory's files changed is not reported, and the open starts
    // again from the new MANIFEST. (Failures with nothing changed used to
    // be tried 4 times as well, for the flush race this ordering removed.)
    let vfs: Arc<dyn Vfs> = opts.vfs.clone().unwrap_or_else(|| Arc::new(OsVfs));
    let mut attempt = 1;
    loop {
        let before = manifest_mark(vfs.as_ref(), dir);
        match open_once(dir, opts.clone(), true) {
            Err(_)
                if attempt < READ_ONLY_ATTEMPTS && manifest_mark(vfs.as_ref(), dir) != before =>
            {
                attempt += 1;
            }
            r => return r,
        }
    }
}

/// What a writer changes around an edit: CURRENT's text (a new MANIFEST)
/// and the directory's names (every flush, compaction and ingestion adds
/// tables before its edit and removes WALs or tables after it; a MANIFEST
/// keeps its size as it grows into reserved space, so its size says
/// nothing). `None` where unreadable.
fn manifest_mark(vfs: &dyn Vfs, dir: &Path) -> Option<(Vec<u8>, Vec<String>)> {
    let current = crate::vfs::read_all(vfs, &filenames::current(dir)).ok()?;
    let mut names = vfs.list(dir).ok()?;
    names.sort_unstable();
    Some((current, names))
}

fn open_once(dir: &Path, mut opts: Options, read_only: bool) -> Result<Db> {
    let vfs: Arc<dyn Vfs> = opts.vfs.clone().unwrap_or_else(|| Arc::new(OsVfs));
    let kind = checks::classify_dir(vfs.as_ref(), dir)?;
    let shown = dir.display();
    match kind {
        DirKind::Missing if read_only || !opts.create_if_missing => {
            return Err(Error::NotFound {
                path: shown.to_string(),
            })
        }
        DirKind::Fresh if read_only || !opts.create_if_missing => {
            return Err(Error::NotADatabase {
                path: shown.to_string(),
                reason: format!(
                    "{}{}",
                    checks::NO_DATABASE_YET,
                    if read_only {
                        ", and a read-only open creates nothing"
                    } else {
                        ", and create_if_missing is off"
                    }
                ),
            });
        }
        DirKind::Unrecognised(reason) => {
            return Err(Error::NotADatabase {
                path: shown.to_string(),
                reason,
            })
        }
        DirKind::Database if opts.error_if_exists && !read_only => {
            return Err(Error::invalid(format!("database {shown} already exists")));
        }
        _ => {}
    }
    let lock: Box<dyn std::any::Any + Send + Sync> = if read_only {
        Box::new(())
    } else {
        vfs.create_dir_all(dir)?;
        vfs.lock(&filenames::lock(dir))?
    };
    // Decided again under the lock: another process may have created the
    // database in between.
    let exists = vfs.exists(&filenames::current(dir));
    let mut deleted = Default::default();
    // The directory is listed before the MANIFEST is read. Under the lock
    // the order does not matter; for a read-only open beside a writer it
    // rules out a false "missing edit": a writer deletes a WAL only after
    // the edit naming the tables that replace it, so a table listed here
    // that the MANIFEST read next does not name still has its WAL listed
    // here. (Listing after the read let a flush's table and WAL deletion
    // both land between the two, which a slow debug build under load did
    // on nearly every try.)
    let names;
    let mut wal_files = BTreeMap::new();
    let mut pinned = HashMap::new();
    let mut versions = if exists {
        names = vfs.list(dir)?;
        // The WALs are opened at once, for the same reason: a writer may
        // retire one while the MANIFEST is read, and an open file is still
        // readable after its name is gone.
        wal_files = open_wals(vfs.as_ref(), dir, &names)?;
        let r = VersionSet::recover(Arc::clone(&vfs), dir)?;
        // A read-only open beside a writer: the WAL the MANIFEST now names
        // as the oldest still needed may be newer than every WAL listed
        // (created after the listing, then made the oldest by a flush
        // before the read). It is not missing, only new: open it now.
        // Everything before it is in the MANIFEST just read, so its
        // records, as far as they are written, continue that state. A
        // writer deletes it only after a later edit, so if it is gone the
        // open fails and is tried again from the new MANIFEST; a WAL
        // missing below a listed one is damage, refused as before.
        let log_number = r.set.log_number();
        if read_only && log_number > 0 && wal_files.keys().all(|&w| w < log_number) {
            if let Ok(f) = vfs.open_sequential(&filenames::wal(dir, log_number)) {
                wal_files.insert(log_number, Ok(f));
            }
        }
        // A read-only open keeps its tables open (`TableCache::pin`).
        let keep = if read_only { opts.max_open_files } else { 0 };
        pinned = checks::check_referenced(vfs.as_ref(), dir, &r.set, keep)?;
        deleted = r.deleted;
        r.set
    } else if read_only {
        // `classify_dir` saw a CURRENT file; it went away since.
        return Err(Error::NotADatabase {
            path: shown.to_string(),
            reason: "its CURRENT file disappeared while opening".into(),
        });
    } else {
        let set = VersionSet::create(Arc::clone(&vfs), dir)?;
        names = vfs.list(dir)?;
        set
    };
    let recovered_next_file = versions.next_file_number();

    // Every numbered file in the directory counts as used: a WAL, or a file
    // an ingestion linked before the crash, may be newer than the MANIFEST's
    // counter, and reusing its number would overwrite it.
    mark_numbers_used(&versions, &names);

    let ReplayOutcome {
        replayed,
        ranges,
        mut last_seq,
        rolled,
    } = replay_wals(vfs.as_ref(), dir, wal_files, &versions, &opts)?;
    let tables = TableFiles {
        vfs: vfs.as_ref(),
        dir,
        rule: ChecksumRule::of(&opts),
    };
    let audit = checks::audit_unreferenced(tables, &names, &versions, &deleted, &rolled, ranges)?;

    let block_cache = Arc::new(BlockCache::new(opts.block_cache_bytes));
    let mut table_cache = TableCache::new(
        Arc::clone(&vfs),
        dir.to_path_buf(),
        opts.max_open_files,
        block_cache,
        ChecksumRule::of(&opts),
        opts.sst.prefix_extractor.clone(),
    );
    table_cache.pin(pinned);
    let table_cache = Arc::new(table_cache);

    // Every check passed. A read-only open keeps what it replayed in the
    // immutable queue; a read-write open writes it to L0.
    let mut imm: VecDeque<Arc<dyn Flushable>> = VecDeque::new();
    let (log, wal_number) = if read_only {
        for r in replayed {
            match r {
                Replayed::Mem(m, last) => {
                    imm.push_back(Arc::new(ImmutableMemTable {
                        mem: m,
                        wal_number: 0,
                        last_seq: last,
                    }));
                }
                Replayed::Queued(seq, files) => {
                    imm.push_back(Arc::new(queued_flushable(&table_cache, seq, files)?));
                }
            }
        }
        (Wal::new(0, Box::new(NoWal), "(read-only)"), 0)
    } else {
        versions.start_manifest()?;
        let mut edit = VersionEdit::default();
        let mut placed_seq = None;
        for r in replayed {
            match r {
                Replayed::Mem(m, _) => {
                    for f in write_table(vfs.as_ref(), dir, &versions, &opts.sst, &m)? {
                        edit.add_file(0, f);
                    }
                }
                Replayed::Queued(seq, files) => {
                    for f in files {
                        edit.add_file(0, f);
                    }
                    placed_seq = Some(seq);
                }
            }
        }
        if let Some(s) = placed_seq {
            last_seq = last_seq.max(s);
            edit.ingested_seq = Some(s);
        }
        edit.flushed_seq = Some(last_seq);
        // A fresh WAL; everything older is now in tables.
        let wal_number = versions.new_file_number();
        let wal_path = filenames::wal(dir, wal_number);
        let log = Wal::new(
            wal_number,
            vfs.create(&wal_path)?,
            wal_path.display().to_string(),
        );
        // Durable before the edit names it: recovery requires that WAL
        // (the commit pipeline starts with it counted as durable).
        vfs.sync_dir(dir)?;
        edit.log_number = Some(wal_number);
        versions.log_and_apply(edit, last_seq)?;
        // Tables nothing references that cannot be proven redundant, or
        // that carry a number the MANIFEST never handed out, are moved
        // aside; the rest are left to the obsolete-file pass below.
        for (n, verdict) in &audit {
            let why = match verdict {
                Unreferenced::Unknown(why) => why.clone(),
                Unreferenced::Redundant if *n >= recovered_next_file => format!(
                    "redundant, but numbered at or past the MANIFEST's next file number \
                     {recovered_next_file}"
                ),
                Unreferenced::Redundant => continue,
            };
            let name = format!("{n:06}.sst");
            checks::move_to_lost(vfs.as_ref(), dir, &name, &why)?;
        }
        (log, wal_number)
    };

    let next_file = versions.file_number_allocator();
    let manifest = versions.manifest_log();
    let mem = Arc::new(MemTable::new(wal_number));
    let state = DbState {
        versions,
        mem,
        mem_wal: wal_number,
        imm,
        pending_outputs: BTreeSet::new(),
        running: Default::default(),
        manual_compactions: 0,
        excised_seq: 0,
    };
    let sv = super::SuperVersion {
        mem: Arc::clone(&state.mem),
        imm: state.imm.iter().cloned().collect(),
        version: state.versions.current(),
        excised_seq: 0,
    };
    let vfs_for_events = Arc::clone(&vfs);
    // The listener lives in the event log (its thread) alone, not in the
    // options the database keeps: a listener holding an `Arc<Db>` (to read
    // metrics, say) makes a cycle, and `close` breaks it by stopping that
    // thread.
    let listener = opts.event_listener.take();
    let dir_names = super::ingest::resolved_names(vfs.as_ref(), dir);
    let inner = Arc::new(DbInner {
        dir: dir.to_path_buf(),
        dir_names,
        vfs,
        opts,
        sv: RwLock::new(Arc::new(sv)),
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        flush_done_cv: Condvar::new(),
        commit: CommitPipeline::new(last_seq, log),
        visible_seq: AtomicU64::new(last_seq),
        next_file,
        manifest,
        table_cache,
        shutting_down: AtomicBool::new(false),
        bg_error: Mutex::new(None),
        snapshots: Mutex::new(BTreeMap::new()),
        stats: Stats::default(),
        events: if read_only {
            EventLog::disabled(listener)?
        } else {
            EventLog::open(vfs_for_events, dir, listener)?
        },
        read_only,
        l0_depth: AtomicU64::new(0),
        debt: AtomicU64::new(0),
        lock: Mutex::new(Some(lock)),
        checkpoint_gate: parking_lot::RwLock::new(()),
        closed: AtomicBool::new(false),
        ops: parking_lot::RwLock::new(()),
    });
    if !read_only {
        // Whatever a killed tool left in the scratch directory (the
        // import's sort runs) goes now: nothing in it is part of the
        // database, and no tool can be using it while we hold the lock.
        match inner.vfs.remove_dir_all(&filenames::scratch(dir)) {
            Ok(()) | Err(Error::NotSupported(_)) => {}
            Err(e) => return Err(e),
        }
    }
    {
        let mut st = inner.state.lock();
        if !read_only {
            delete_obsolete_files(&inner, &mut st);
        }
        inner.install_super_version(&st);
        inner.events.record(open_event(&st.versions.current()));
    }
    if read_only {
        // No flush, compaction or WAL thread: nothing may be written.
        return Ok(Db {
            inner,
            threads: Mutex::new(Vec::new()),
            closing: Mutex::new(()),
        });
    }
    // The threads are handed to the `Db` one by one, so that if a spawn
    // fails, dropping it shuts down (and joins) those already running:
    // each holds the database, and with it the LOCK file.
    let db = Db {
        inner,
        threads: Mutex::new(Vec::new()),
        closing: Mutex::new(()),
    };
    let bg = Arc::clone(&db.inner);
    let t = std::thread::Builder::new()
        .name("strata-flush".into())
        .spawn(move || {
            bg_priority::lower_current_thread(bg.opts.background_nice);
            flush_loop(bg)
        })
        .map_err(|e| Error::io("spawning the flush thread", e))?;
    db.threads.lock().push(t);
    for i in 0..db.inner.opts.max_background_compactions.max(1) {
        let bg = Arc::clone(&db.inner);
        let t = std::thread::Builder::new()
            .name(format!("strata-compact-{i}"))
            .spawn(move || {
                bg_priority::lower_current_thread(bg.opts.background_nice);
                compaction_loop(bg)
            })
            .map_err(|e| Error::io("spawning a compaction thread", e))?;
        db.threads.lock().push(t);
    }
    if !db.inner.opts.wal_flush_interval.is_zero() {
        let bg = Arc::clone(&db.inner);
        let t = std::thread::Builder::new()
            .name("strata-wal".into())
            .spawn(move || wal_flush_loop(bg))
            .map_err(|e| Error::io("spawning the WAL flusher thread", e))?;
        db.inner.commit.set_flusher(t.thread().clone());
        db.threads.lock().push(t);
    }
    Ok(db)
}

/// Hands unsynced WAL records to the operating system every
/// `wal_flush_interval`, so a process crash loses at most that window of
/// writes made without `sync`; also syncs a WAL retired by a rotation and
/// creates the next WAL ahead of need (see `commit`), keeping both off the
/// foreground writes. After [`FLUSHER_IDLE_ROUNDS`] intervals with nothing
/// to do it parks until a write frames bytes for it (`commit`'s
/// `wake_flusher`), so an idle database, or one loaded only by ingestion,
/// does not wake it a thousand times a second. A close wakes it from
/// either wait ([`wait_interval`]).
fn wal_flush_loop(db: Arc<DbInner>) {
    let mut idle = 0;
    while wait_interval(&db, db.opts.wal_flush_interval) {
        match db.commit.flush_wal(&db) {
            Err(e) => {
                db.set_bg_error("the background WAL flusher's write", e);
                return;
            }
            Ok(true) => idle = 0,
            Ok(false) => idle += 1,
        }
        if idle >= FLUSHER_IDLE_ROUNDS {
            db.commit.park_flusher(&db);
            idle = 0;
        }
    }
}

/// Intervals with nothing to write after which the WAL thread parks.
const FLUSHER_IDLE_ROUNDS: u32 = 16;

/// The WAL thread's wait between rounds: `interval`, cut short when the
/// database shuts down; returns whether it is still running. A parked
/// wait, not a sleep, because `Db::shutdown` joins this thread: a sleep
/// made every close (and drop) wait out the rest of the interval (10 s for
/// a 10 s interval). Shutdown sets `shutting_down` and then unparks the
/// thread, so whichever of the flag check and the park comes first, the
/// wait ends at once (an unpark before the park leaves a token that makes
/// it return). Other early returns (a writer's stale `wake_flusher`
/// token, a spurious wake-up) park again for the rest of the interval.
fn wait_interval(db: &DbInner, interval: std::time::Duration) -> bool {
    use std::sync::atomic::Ordering;
    use std::time::Instant;
    // No deadline (an interval past what `Instant` can hold): the wait
    // ends only at shutdown.
    let deadline = Instant::now().checked_add(interval);
    loop {
        if db.shutting_down.load(Ordering::SeqCst) {
            return false;
        }
        match deadline {
            None => std::thread::park(),
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return true;
                }
                std::thread::park_timeout(d - now);
            }
        }
    }
}

/// Marks the number of every WAL, table and MANIFEST in `names` as used,
/// so no file allocated from `versions` overwrites one (`repair` too, whose
/// MANIFEST may have lost the edits that counted them).
pub(super) fn mark_numbers_used(versions: &VersionSet, names: &[String]) {
    for name in names {
        match filenames::parse(name) {
            Some(filenames::FileKind::Wal(n))
            | Some(filenames::FileKind::Table(n))
            | Some(filenames::FileKind::Manifest(n)) => versions.mark_file_number_used(n),
            _ => {}
        }
    }
}

/// What WAL replay found.
struct ReplayOutcome {
    /// Memtables and queued ingestions, oldest first.
    replayed: Vec<Replayed>,
    /// Sequence numbers of the records (and markers) replayed.
    ranges: SeqRanges,
    /// The last sequence number.
    last_seq: u64,
    /// Files of ingestions redone from their markers (in `replayed`, in
    /// no version yet).
    rolled: HashSet<u64>,
}

/// The WALs of a listing, opened, by number.
type WalFiles = BTreeMap<u64, std::result::Result<Box<dyn SequentialFile>, Error>>;

/// Opens every WAL in `names`. One that is gone by now keeps its error:
/// beside a writer it was retired after the listing, so the MANIFEST read
/// next no longer needs it, and if it does, [`replay_wals`] reports it.
fn open_wals(vfs: &dyn Vfs, dir: &Path, names: &[String]) -> Result<WalFiles> {
    let mut out = BTreeMap::new();
    for n in names {
        if let Some(filenames::FileKind::Wal(w)) = filenames::parse(n) {
            let r = vfs.open_sequential(&filenames::wal(dir, w));
            if let Err(e) = &r {
                if e.io_error().map(|e| e.kind()) != Some(std::io::ErrorKind::NotFound) {
                    return r.map(|_| out);
                }
            }
            out.insert(w, r);
        }
    }
    Ok(out)
}

/// Replays the WALs of `wal_files` (opened by [`open_wals`]) that the
/// MANIFEST does not cover (numbered at or above its log number), oldest
/// first, into memory.
///
/// Sequence numbers must run on without a gap from the MANIFEST's flushed
/// sequence (`wal_sequence`, whose rules `strata check` applies too),
/// except for numbers the MANIFEST accounts for (ingestions: at or below
/// its last sequence) and ingestions redone from their markers:
/// a WAL record whose number jumps past the MANIFEST's last sequence
/// follows something no surviving record holds (a lost MANIFEST edit, such
/// as an acknowledged ingestion's whose marker is gone too), so recovery
/// stops and names the record instead of serving data with a hole in it.
fn replay_wals(
    vfs: &dyn Vfs,
    dir: &Path,
    mut wal_files: WalFiles,
    versions: &VersionSet,
    opts: &Options,
) -> Result<ReplayOutcome> {
    let log_number = versions.log_number();
    let wal_files = wal_files.split_off(&log_number);
    // The WAL the MANIFEST names as the oldest still needed must be there:
    // its directory entry was made durable before the edit naming it
    // (`CommitPipeline::make_wal_entries_durable`), so only damage or a
    // hand takes it away, and with it every write since the last flush,
    // synced ones included. (Zero: no WAL named yet, a database whose
    // first open stopped before it made one.)
    if log_number > 0 && !wal_files.contains_key(&log_number) {
        return Err(checks::missing_wal(dir, log_number, versions.flushed_seq()));
    }
    let wals: Vec<u64> = wal_files.keys().copied().collect();
    let mut last_seq = versions.last_sequence();
    let manifest_last = versions.last_sequence();
    let flushed_seq = versions.flushed_seq();
    let mut queued: VecDeque<(u64, Vec<FileMeta>)> = versions.queued_ingestions().into();
    let mut out = Vec::new();
    let mut rolled = HashSet::new();
    let mut ranges = SeqRanges::default();
    let mut mem = Arc::new(MemTable::new(0));
    let mut mem_last = flushed_seq;
    // The numbering rules, shared with `strata check`.
    let mut seqs = WalSequence::new(flushed_seq, manifest_last);
    for (i, (&w, file)) in wals.iter().zip(wal_files.into_values()).enumerate() {
        let path = filenames::wal(dir, w);
        let name = path.display().to_string();
        let mut r = LogReader::new(file?, &name, TailPolicy::TolerateTornTail);
        while let Some(rec) = r.read_record()? {
            let off = r.last_record_offset();
            // Reported where the bad record of the batch is in the file
            // (the batch's offset mapped through the log's fragments),
            // with the log record's own offset in the message.
            let b = WriteBatch::decode(rec).map_err(|(at, m)| {
                Error::corruption(
                    &name,
                    r.last_record_byte_offset(at),
                    format!("the write batch of the log record at offset {off}: {m}"),
                )
            })?;
            let Some(b_last) = b.last_sequence() else {
                return Err(Error::corruption(
                    &name,
                    off,
                    format!(
                        "this record's sequence numbers ({} and {} more) run past the \
                         largest a sequence number may be",
                        b.sequence(),
                        b.count().saturating_sub(1)
                    ),
                ));
            };
            if b.count() == 0 {
                // An ingestion's marker (see `db::marker`): its sequence
                // number is one the MANIFEST accounts for, or the MANIFEST
                // lost its record and the ingestion is redone from the
                // files the marker names.
                let s = b.sequence();
                if s > flushed_seq && s > manifest_last {
                    let tables = TableFiles {
                        vfs,
                        dir,
                        rule: ChecksumRule::of(opts),
                    };
                    let m = roll_forward(tables, &b, manifest_last)
                        .map_err(|why| Error::corruption(&name, off, why))?;
                    queue_before(s, &mut queued, &mut mem, &mut mem_last, &mut out);
                    seal(&mut mem, mem_last, &mut out);
                    if let Some((a, e)) = &m.excise {
                        // The excise deletes everything older than the
                        // ingestion in the range: a range tombstone at its
                        // sequence number (it does not cover the ingested
                        // entries, which are at that number too).
                        let t = Arc::new(MemTable::new(0));
                        if a < e {
                            t.add_range_tombstone(s, a, e);
                        }
                        out.push(Replayed::Mem(t, s));
                    }
                    rolled.extend(m.files.iter().map(|f| f.number));
                    if !m.files.is_empty() {
                        out.push(Replayed::Queued(s, m.files));
                    }
                    mem_last = mem_last.max(s);
                    last_seq = last_seq.max(s);
                }
                if s > flushed_seq {
                    ranges.add(s, s);
                }
                // A gap before a marker is accepted (`wal_sequence`).
                let _ = seqs.marker(s);
                continue;
            }
            // Numbered out of order, or after a gap past the MANIFEST
            // (`wal_sequence`): refused, naming the record.
            let replay = seqs
                .batch(b.sequence(), b_last)
                .map_err(|why| Error::corruption(&name, off, why.to_string()))?;
            last_seq = last_seq.max(b_last);
            ranges.add(b.sequence(), b_last);
            // Already in a table: the WAL was shared with a memtable that
            // was flushed before the crash.
            if !replay {
                continue;
            }
            queue_before(b.sequence(), &mut queued, &mut mem, &mut mem_last, &mut out);
            apply(&mem, &b)?;
            mem_last = mem_last.max(b_last);
            if mem.approximate_memory_usage() >= opts.memtable_size {
                seal(&mut mem, mem_last, &mut out);
            }
        }
        if let Some(t) = r.dropped_tail() {
            // A torn tail may be an unfinished last write only in the newest
            // WAL holding anything: the WAL thread creates the next WAL
            // ahead of need, and a rotation writes nothing to the new WAL
            // before the old one is synced, so empty WALs after this one
            // say nothing about whether its tail was ever complete.
            let mut later_written = false;
            for &later in &wals[i + 1..] {
                if !vfs.open_random(&filenames::wal(dir, later))?.is_empty() {
                    later_written = true;
                    break;
                }
            }
            if later_written {
                return Err(Error::corruption(
                    &name,
                    t.offset,
                    format!(
                        "damaged record ({}) in a WAL that is not the newest",
                        t.damage
                    ),
                ));
            }
            if let Some(why) = crate::wal::tail::judge(vfs.open_random(&path)?.as_ref(), &t)? {
                return Err(Error::corruption(&name, t.offset, why));
            }
        }
    }
    if !mem.is_empty() {
        out.push(Replayed::Mem(mem, mem_last));
    }
    for (s, files) in queued {
        out.push(Replayed::Queued(s, files));
    }
    Ok(ReplayOutcome {
        replayed: out,
        ranges,
        last_seq,
        rolled,
    })
}

/// Moves the memtable being replayed (if not empty) to `out`, with the
/// highest sequence number in or before it.
fn seal(mem: &mut Arc<MemTable>, mem_last: u64, out: &mut Vec<Replayed>) {
    if !mem.is_empty() {
        let m = std::mem::replace(mem, Arc::new(MemTable::new(0)));
        out.push(Replayed::Mem(m, mem_last));
    }
}

/// Places the queued ingestions older than `seq` in `out`, each after the
/// memtable replayed before it (which its files must shadow).
fn queue_before(
    seq: u64,
    queued: &mut VecDeque<(u64, Vec<FileMeta>)>,
    mem: &mut Arc<MemTable>,
    mem_last: &mut u64,
    out: &mut Vec<Replayed>,
) {
    while queued.front().is_some_and(|(s, _)| *s < seq) {
        let Some((s, files)) = queued.pop_front() else {
            break;
        };
        seal(mem, *mem_last, out);
        out.push(Replayed::Queued(s, files));
        *mem_last = (*mem_last).max(s);
    }
}

/// An ingestion marker past the MANIFEST's last sequence: its record was
/// lost (never durable, or cut away). Returns the ingestion to redo if the
/// marker names its files and every one is present, with the size the
/// record gave it, and opens as a table under the database's checksum
/// rule (`tables.rule`: a file whose footer says "none" is refused, as the
/// table cache would refuse it on every read); otherwise why the open must
/// refuse.
/// `repair` makes the same check before it redoes an ingestion.
pub(super) fn roll_forward(
    tables: TableFiles<'_>,
    b: &WriteBatch,
    manifest_last: u64,
) -> std::result::Result<IngestMarker, String> {
    let vfs = tables.vfs;
    let s = b.sequence();
    let missing = format!(
        "an ingestion at sequence number {s} was committed before this point, but the \
         MANIFEST (last sequence {manifest_last}) has no record of it"
    );
    let m = match IngestMarker::from_batch(b) {
        Ok(Some(m)) => m,
        Ok(None) => {
            return Err(format!(
                "{missing}, and its marker does not name its files: a MANIFEST record is \
                 missing"
            ))
        }
        Err(e) => return Err(format!("{missing}, and its marker is damaged ({e})")),
    };
    for f in &m.files {
        let path = tables.path(f.number);
        let shown = path.display();
        if !vfs.exists(&path) {
            return Err(format!(
                "{missing}, and its file {shown} is missing, so it cannot be redone: a \
                 MANIFEST record is missing"
            ));
        }
        let size = vfs.file_size(&path).map_err(|e| e.to_string())?;
        if size != f.size {
            return Err(format!(
                "{missing}, and its file {shown} is {size} bytes where the marker records {}, \
                 so it cannot be redone: a MANIFEST record is missing",
                f.size
            ));
        }
        if let Err(e) = tables.open(f.number) {
            return Err(format!(
                "{missing}, and its file {shown} does not open ({e}), so it cannot be redone: \
                 a MANIFEST record is missing"
            ));
        }
    }
    Ok(m)
}

/// A queued ingestion rebuilt for a read-only open, which keeps it in the
/// immutable queue instead of placing it.
fn queued_flushable(
    tc: &TableCache,
    seq: u64,
    files: Vec<FileMeta>,
) -> Result<super::ingest::IngestedFlushable> {
    let mut tables = Vec::new();
    let mut prepared = Vec::new();
    for f in files {
        tables.push(tc.get(&f)?);
        prepared.push(super::ingest::Prepared {
            number: f.number,
            size: f.size,
            smallest_user: f.smallest_user_key().to_vec(),
            largest_user: f.largest_user_key().to_vec(),
            largest_exclusive: f.largest_is_exclusive(),
            num_entries: f.num_entries,
            num_deletions: f.num_deletions,
            num_range_deletions: f.num_range_deletions,
            excise_tombstone: false,
            opened: None,
        });
    }
    Ok(super::ingest::IngestedFlushable {
        id: seq,
        wal_number: 0,
        seq,
        files: prepared,
        tables,
        excise: None,
    })
}

/// Writes a recovered memtable as L0 tables.
fn write_table(
    vfs: &dyn Vfs,
    dir: &Path,
    versions: &VersionSet,
    sst: &SstOptions,
    mem: &Arc<MemTable>,
) -> Result<Vec<FileMeta>> {
    super::flush::write_tables(
        vfs,
        dir,
        sst,
        super::output::CutPolicy::default(),
        Box::new(mem.iter()),
        mem.range_tombstones(),
        &|| versions.new_file_number(),
    )
}
