//! The flush thread: writes the oldest immutable memtable to an L0 table,
//! records it in the MANIFEST together with the new oldest live WAL and the
//! flushed sequence number (a WAL may be shared by several queue entries),
//! drops the memtable from the queue, and deletes files nothing needs any
//! more.
//!
//! Flushing one entry at a time, oldest first, keeps the invariant that L0
//! files are newer than everything below them and older than everything
//! still queued.
//!
//! **No MANIFEST sync of its own.** A flush (or the placement of a queued
//! ingestion) writes its edit without waiting for the disk. Nothing needs
//! the edit durable until a file it makes obsolete is deleted: the entry's
//! data stays durable where it was (a synced WAL, which `flush_one` syncs
//! before the table is written if it is the active one; a queued
//! ingestion's record, synced by its caller), and the WAL is deleted only
//! once the edit moving the log number past it is durable. So the sync is
//! left to [`delete_obsolete_files`], which syncs before it deletes
//! anything, and to whoever syncs next (an ingestion's caller, a
//! compaction, [`Db::flush`](crate::Db::flush), `close`). A crash that
//! loses the edit leaves the table unnamed: recovery finds its entries in
//! the WAL it replays (or the ingestion still queued) and deletes it as
//! redundant (`recovery_checks`). Two fsyncs fewer per flush of a memtable
//! sealed by an ingestion; they ran beside the next ingestion call's own
//! fsyncs (W3 overlap: the call waited for them on the disk's journal,
//! `docs/bench-history/w3-ingest-overlap.md`, "what the overlapping call waits for").

use super::events::{micros, tables};
use super::flushable::Flushable;
use super::output::{CutPolicy, OutputWriter};
use super::{filenames, DbInner};
use crate::error::Result;
use crate::events::Event;
use crate::iter::InternalIterator;
use crate::sstable::{RangeTombstone, SstOptions};
use crate::version::sublevels::L0Sublevels;
use crate::version::{FileMeta, VersionEdit};
use crate::vfs::Vfs;
use parking_lot::MutexGuard;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn flush_loop(db: Arc<DbInner>) {
    loop {
        let next = {
            let mut st = db.state.lock();
            loop {
                if db.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                if db.bg_error().is_none() {
                    if let Some(f) = st.imm.front() {
                        break Arc::clone(f);
                    }
                }
                db.bg_cv.wait_for(&mut st, Duration::from_millis(200));
            }
        };
        if let Err(e) = flush_one(&db, next) {
            db.set_bg_error("a background flush", e);
        }
        {
            let _st = db.state.lock();
            db.flush_done_cv.notify_all();
        }
        // A flush may make a compaction worth running.
        db.bg_cv.notify_all();
        db.commit.notify_room();
    }
}

/// Writes `imm` (the oldest queue entry) to L0 and installs the result.
fn flush_one(db: &DbInner, imm: Arc<dyn Flushable>) -> Result<()> {
    let start = std::time::Instant::now();
    // Every table this job creates is numbered above `floor`, which keeps
    // them from the obsolete-file pass until they are installed.
    let floor = db.new_file_number();
    db.state.lock().pending_outputs.insert(floor);
    // The edit below names the next memtable's WAL as the oldest still
    // needed, and recovery requires the WAL such an edit names, so its
    // directory entry must be durable first. Every WAL the edit can name
    // was created before this point (when `imm` and the entries after it
    // were sealed). Usually the WAL thread did it when it made the WAL.
    if let Err(e) = db.commit.make_wal_entries_durable(db) {
        db.state.lock().pending_outputs.remove(&floor);
        return Err(e);
    }
    if let Some(ing) = imm.ingested() {
        db.state.lock().pending_outputs.remove(&floor);
        return place_ingested(db, &imm, ing);
    }
    // The memtable's records must be durable in a WAL before its table can
    // exist on disk. Otherwise a power cut between the table's sync and the
    // MANIFEST edit's leaves a table holding data that no WAL holds, which
    // recovery cannot tell from a lost edit (recovery rule 4) and refuses.
    // A rotated WAL is synced once rotated out, so only a memtable
    // that shares the active WAL (one queued behind an ingestion) needs a
    // sync here; doing it only then keeps an fsync under the WAL lock, which
    // foreground writers wait on, off every ordinary flush. If the WAL
    // cannot be synced, no table is written.
    // A rotation with the WAL thread running leaves the old WAL's sync to
    // that thread; if it has not got to it yet, it is done here.
    db.commit.sync_retired(db)?;
    if imm.wal_number() == db.state.lock().mem_wal {
        // Such a memtable was sealed by a queued ingestion, whose caller
        // is syncing its MANIFEST record right now (the flush thread is
        // woken before that sync). That record first: this WAL sync (the
        // memtable's unsynced writes, 1.2 MB in W3) run beside it made the
        // caller's fsync wait on the disk for it (W3 overlap: the MANIFEST
        // fsync 2-4x the directory fsync). Whoever comes first syncs; the
        // other finds it done (`ManifestLog::sync`).
        if db.manifest.owes() {
            db.manifest.sync()?;
        }
        db.commit.sync_wal(db)?;
    }
    let job = db.events.new_job();
    db.events.record(Event::FlushBegin {
        job,
        memtable: imm.id(),
    });
    let r = write_l0(db, &imm, job);
    let mut st = db.state.lock();
    st.pending_outputs.remove(&floor);
    let outputs = r?;
    let mut edit = VersionEdit::default();
    let mut largest_seq = 0;
    let mut bytes = 0;
    for m in &outputs {
        largest_seq = largest_seq.max(m.largest_seq);
        bytes += m.size;
        edit.add_file(0, m.clone());
    }
    db.stats.bytes_flushed.fetch_add(bytes, Ordering::Relaxed);
    // The oldest WAL still needed is the next queued entry's, or the active
    // memtable's.
    let next_wal = st.imm.get(1).map(|f| f.wal_number()).unwrap_or(st.mem_wal);
    edit.log_number = Some(next_wal);
    edit.flushed_seq = Some(imm.last_seq());
    let seq = db.visible_seq.load(Ordering::Acquire).max(largest_seq);
    // Written, not synced: see the module documentation ("No MANIFEST
    // sync of its own").
    st.versions.log_and_apply_unsynced(edit, seq)?;
    st.imm.pop_front();
    db.install_super_version(&st);
    db.stats.flushes.fetch_add(1, Ordering::Relaxed);
    db.events.record(Event::FlushEnd {
        job,
        memtable: imm.id(),
        outputs: tables(outputs.iter().map(|f| (0, f))),
        bytes_written: bytes,
        micros: micros(start.elapsed()),
    });
    delete_obsolete_files(db, &mut st);
    Ok(())
}

/// An ingestion reaching the front of the queue: every older entry is in the
/// tree, so each file goes to its best level now. An excise is cut now too,
/// dropping the range-tombstone file that covered the range while the
/// ingestion waited, unless a registered snapshot older than the ingestion
/// still needs the data (no such snapshot can appear any more: the
/// ingestion's sequence number is already visible).
fn place_ingested(
    db: &DbInner,
    imm: &Arc<dyn Flushable>,
    ing: &super::ingest::IngestedFlushable,
) -> Result<()> {
    let mut st = db.state.lock();
    let older_snapshot = db
        .snapshots
        .lock()
        .keys()
        .next()
        .is_some_and(|&s| s < ing.seq);
    let cut = ing.excise.as_ref().filter(|_| !older_snapshot);
    // The version is not held past this: a live version keeps its files
    // from the obsolete-file pass below.
    let placed = {
        let v = st.versions.current();
        super::ingest::placement(db, &v, &st.running, &ing.files, ing.seq, cut)?
    };
    let mut edit = placed.edit;
    let next_wal = st.imm.get(1).map(|f| f.wal_number()).unwrap_or(st.mem_wal);
    edit.log_number = Some(next_wal);
    edit.ingested_seq = Some(ing.seq);
    edit.flushed_seq = Some(ing.seq);
    let seq = db.visible_seq.load(Ordering::Acquire).max(ing.seq);
    // Written, not synced, as in `flush_one`: if the record is lost, the
    // MANIFEST still holds the ingestion as queued (synced by its caller)
    // and recovery places it again.
    st.versions.log_and_apply_unsynced(edit, seq)?;
    st.imm.pop_front();
    db.install_super_version(&st);
    db.stats.flushes.fetch_add(1, Ordering::Relaxed);
    db.record_ingestion(
        ing.seq,
        ing.excise.as_ref(),
        placed.excised.as_ref(),
        &placed.added,
        true,
        false,
    );
    let _ = imm;
    // Deletes the tombstone file if the range was cut: it was recorded only
    // as queued, and the edit just marked the ingestion placed.
    delete_obsolete_files(db, &mut st);
    Ok(())
}

/// Writes the entry's contents as L0 tables. With flush splitting on, the
/// output is cut at the current L0's flush split keys (so no output spans
/// intervals of L0 that hold many bytes) and wherever it has overlapped two
/// target files' worth of Lbase (so each L0 file compacts into a small,
/// separate part of Lbase: without this a first wide flush would leave L0
/// with no interior boundaries to split later flushes at).
fn write_l0(db: &DbInner, imm: &Arc<dyn Flushable>, job: u64) -> Result<Vec<FileMeta>> {
    let o = &db.opts.compaction;
    let policy = if o.l0_sublevels {
        let v = db.super_version().version.clone();
        let base = crate::compaction::picker::level_targets(&v, o).base_level;
        CutPolicy {
            split_keys: l0_split_keys(db, &v),
            grandparents: v.files(base).to_vec(),
            max_grandparent_overlap: o.target_file_size.saturating_mul(2),
            target_file_size: 0,
        }
    } else {
        CutPolicy::default()
    };
    write_tables(
        db.vfs.as_ref(),
        &db.dir,
        &db.opts.sst,
        policy,
        imm.iter(),
        imm.range_tombstones(),
        &|| {
            let number = db.new_file_number();
            db.events.record(Event::TableCreated {
                job,
                number,
                reason: "flush".into(),
            });
            number
        },
    )
}

/// The flush split keys of `v`'s L0.
pub(crate) fn l0_split_keys(db: &DbInner, v: &crate::version::Version) -> Vec<Vec<u8>> {
    L0Sublevels::new(v.files(0), db.opts.compaction.flush_split_bytes)
        .flush_split_keys()
        .to_vec()
}

/// Writes every entry of `it` and the tombstones as tables in `dir` under
/// `policy`, synced; no file if there is nothing to write.
pub(crate) fn write_tables(
    vfs: &dyn Vfs,
    dir: &Path,
    sst: &SstOptions,
    policy: CutPolicy,
    mut it: Box<dyn InternalIterator + Send>,
    tombstones: Vec<RangeTombstone>,
    new_number: &dyn Fn() -> u64,
) -> Result<Vec<FileMeta>> {
    let mut w = OutputWriter::new(vfs, dir, sst, policy, tombstones, new_number);
    it.seek_to_first();
    while it.valid() {
        w.add(it.key(), it.value())?;
        it.next();
    }
    it.status()?;
    w.finish()
}

/// Deletes WALs older than the MANIFEST's log number, old MANIFESTs, temp
/// files, and tables that no live version references. Errors are ignored: a
/// file left behind is deleted by a later pass or the next open.
///
/// A table counts as live if any live version names it directly or as the
/// backing table of a virtual file (`VersionSet::live_files`); running
/// compactions keep their inputs live by holding the version they were
/// picked from. The table cache is keyed by physical number, so closing a
/// deleted file's reader here affects nothing else.
pub(crate) fn delete_obsolete_files(db: &DbInner, st: &mut MutexGuard<'_, super::DbState>) {
    // A file may leave the version through a record not yet durable (an
    // ingestion's, whose caller syncs it, a flush's, which is never synced
    // by the flush itself, or another job's between its framing and its
    // sync): files are deleted only once every record is durable, or
    // recovery could name a deleted file. The sync runs with the state
    // lock released (`version::manifest_log`), and only if there is
    // something to delete (a flush that makes nothing obsolete leaves its
    // record to the next sync); if more records keep arriving meanwhile, a
    // later pass deletes the files.
    let mut tries = 0;
    let doomed = loop {
        let doomed = obsolete_files(db, st);
        if doomed.is_empty() || !st.versions.has_unsynced() {
            break doomed;
        }
        tries += 1;
        if tries > 3 || MutexGuard::unlocked(st, || db.manifest.sync()).is_err() {
            return;
        }
    };
    if doomed.is_empty() {
        return;
    }
    MutexGuard::unlocked(st, || {
        for name in doomed {
            let removed = db.vfs.remove(&db.dir.join(&name)).is_ok();
            if let Some(filenames::FileKind::Table(n)) = filenames::parse(&name) {
                db.table_cache.evict(n);
                if removed {
                    db.events.record(Event::TableDeleted { number: n });
                }
            }
        }
    });
}

/// The files of the directory that nothing needs any more, by the current
/// version (whose last records may not be durable yet: the caller syncs
/// before it deletes).
fn obsolete_files(db: &DbInner, st: &mut MutexGuard<'_, super::DbState>) -> Vec<String> {
    let mut live = st.versions.live_files();
    // Ingested files waiting in the immutable queue are in no version yet.
    for e in &st.imm {
        if let Some(ing) = e.ingested() {
            live.extend(ing.files.iter().map(|f| f.number));
        }
    }
    let log_number = st.versions.log_number();
    let manifest = st.versions.manifest_number();
    // The listing and the choice happen under the state lock (a table
    // created after it is protected by the pending-output floor only while
    // the lock is held); the unlinks do not: an ingestion's placement and a
    // memtable rotation take the state lock inside the commit slot, so a
    // Put would otherwise wait on an unlink. The files chosen are in no
    // version and never will be again, so removing them unlocked is safe;
    // a concurrent pass may try the same file, and only the one that
    // removes it records the event.
    let Ok(names) = db.vfs.list(&db.dir) else {
        return Vec::new();
    };
    let mut doomed = Vec::new();
    for name in names {
        let keep = match filenames::parse(&name) {
            Some(filenames::FileKind::Wal(n)) => n >= log_number,
            Some(filenames::FileKind::Table(n)) => {
                live.contains(&n)
                    || st
                        .pending_outputs
                        .iter()
                        .next()
                        .is_some_and(|&floor| n >= floor)
            }
            Some(filenames::FileKind::Manifest(n)) => n >= manifest,
            Some(filenames::FileKind::Temp) => false,
            _ => true,
        };
        if !keep {
            doomed.push(name);
        }
    }
    doomed
}

/// Blocks until every memtable and ingestion queued when it was called is
/// flushed (or a background error). Entries queued meanwhile are not waited
/// for: writers that keep sealing memtables as fast as they are flushed
/// would otherwise keep the queue from ever being empty, and `Db::flush`
/// (or a checkpoint) would never return.
pub(crate) fn wait_for_flushes(db: &DbInner) -> Result<()> {
    let mut st = db.state.lock();
    // The queue is in order of sequence numbers: the newest entry's last
    // number marks where the entries to wait for end.
    let Some(upto) = st.imm.back().map(|f| f.last_seq()) else {
        return db.bg_error().map_or(Ok(()), Err);
    };
    loop {
        if let Some(e) = db.bg_error() {
            return Err(e);
        }
        if st.imm.front().is_none_or(|f| f.last_seq() > upto) {
            return Ok(());
        }
        db.bg_cv.notify_all();
        db.flush_done_cv
            .wait_for(&mut st, Duration::from_millis(100));
    }
}
