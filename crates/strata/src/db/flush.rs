//! The flush thread: writes the oldest immutable memtable to an L0 table,
//! records it in the MANIFEST together with the new oldest live WAL, drops
//! the memtable from the queue, and deletes files nothing needs any more.
//!
//! Flushing one entry at a time, oldest first, keeps the invariant that L0
//! files are newer than everything below them and older than everything
//! still queued.

use super::flushable::Flushable;
use super::{filenames, DbInner};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::sstable::{RangeTombstone, SstOptions, SstWriter};
use crate::version::{FileMeta, VersionEdit};
use crate::vfs::Vfs;
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
            db.set_bg_error(e);
        }
        {
            let _st = db.state.lock();
            db.flush_done_cv.notify_all();
        }
        db.commit.notify_room();
    }
}

/// Writes `imm` (the oldest queue entry) to L0 and installs the result.
fn flush_one(db: &DbInner, imm: Arc<dyn Flushable>) -> Result<()> {
    let number = db.new_file_number();
    db.state.lock().pending_outputs.insert(number);
    let r = write_l0(db, &imm, number);
    let mut st = db.state.lock();
    st.pending_outputs.remove(&number);
    let meta = r?;
    let mut edit = VersionEdit::default();
    let mut largest_seq = 0;
    if let Some(m) = meta {
        largest_seq = m.largest_seq;
        db.stats.bytes_flushed.fetch_add(m.size, Ordering::Relaxed);
        edit.add_file(0, m);
    }
    // The oldest WAL still needed is the next queued entry's, or the active
    // memtable's.
    let next_wal = st.imm.get(1).map(|f| f.wal_number()).unwrap_or(st.mem_wal);
    edit.log_number = Some(next_wal);
    let seq = db.visible_seq.load(Ordering::Acquire).max(largest_seq);
    st.versions.log_and_apply(edit, seq)?;
    st.imm.pop_front();
    db.install_super_version(&st);
    db.stats.flushes.fetch_add(1, Ordering::Relaxed);
    delete_obsolete_files(db, &mut st);
    Ok(())
}

/// Writes the entry's contents as table `number`; `None` if it holds nothing.
fn write_l0(db: &DbInner, imm: &Arc<dyn Flushable>, number: u64) -> Result<Option<FileMeta>> {
    write_table(
        db.vfs.as_ref(),
        &db.dir,
        number,
        &db.opts.sst,
        imm.iter(),
        &imm.range_tombstones(),
    )
}

/// Writes every entry of `it` and the tombstones as table `number` in
/// `dir`, synced; `None` (and no file) if there is nothing to write.
pub(crate) fn write_table(
    vfs: &dyn Vfs,
    dir: &Path,
    number: u64,
    sst: &SstOptions,
    mut it: Box<dyn InternalIterator + Send>,
    tombstones: &[RangeTombstone],
) -> Result<Option<FileMeta>> {
    let path = filenames::table(dir, number);
    let opts = SstOptions {
        external: false,
        ..sst.clone()
    };
    let mut w = SstWriter::create_in(vfs, &path, opts)?;
    it.seek_to_first();
    while it.valid() {
        w.add(it.key(), it.value())?;
        it.next();
    }
    it.status()?;
    for t in tombstones {
        w.add_range_tombstone(&t.start, &t.end, t.seq)?;
    }
    let info = w.finish()?;
    let (Some(smallest), Some(largest)) = (info.smallest, info.largest) else {
        vfs.remove(&path)?;
        return Ok(None);
    };
    vfs.sync_dir(dir)?;
    Ok(Some(FileMeta {
        number,
        size: info.file_size,
        smallest,
        largest,
        smallest_seq: info.smallest_seqno,
        largest_seq: info.largest_seqno,
        global_seqno: None,
        num_entries: info.num_entries,
        num_deletions: info.properties.num_deletions,
        num_range_deletions: info.num_range_deletions,
    }))
}

/// Deletes WALs older than the MANIFEST's log number, old MANIFESTs, temp
/// files, and tables that no live version references. Errors are ignored: a
/// file left behind is deleted by a later pass or the next open.
pub(crate) fn delete_obsolete_files(db: &DbInner, st: &mut super::DbState) {
    let live = st.versions.live_files();
    let log_number = st.versions.log_number();
    let manifest = st.versions.manifest_number();
    let Ok(names) = db.vfs.list(&db.dir) else {
        return;
    };
    for name in names {
        let keep = match filenames::parse(&name) {
            Some(filenames::FileKind::Wal(n)) => n >= log_number,
            Some(filenames::FileKind::Table(n)) => {
                live.contains(&n) || st.pending_outputs.contains(&n)
            }
            Some(filenames::FileKind::Manifest(n)) => n >= manifest,
            Some(filenames::FileKind::Temp) => false,
            _ => true,
        };
        if !keep {
            if let Some(filenames::FileKind::Table(n)) = filenames::parse(&name) {
                db.table_cache.evict(n);
            }
            let _ = db.vfs.remove(&db.dir.join(&name));
        }
    }
}

/// Blocks until the immutable queue is empty (or a background error).
pub(crate) fn wait_for_flushes(db: &DbInner) -> Result<()> {
    let mut st = db.state.lock();
    loop {
        if let Some(e) = db.bg_error() {
            return Err(e);
        }
        if st.imm.is_empty() {
            return Ok(());
        }
        db.bg_cv.notify_all();
        db.flush_done_cv
            .wait_for(&mut st, Duration::from_millis(100));
    }
}
