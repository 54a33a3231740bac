//! Opening a database: lock the directory, rebuild the version from the
//! MANIFEST, replay every live WAL into a memtable, write what was replayed
//! to L0, start a fresh WAL, delete what nothing needs, start the flush
//! thread.
//!
//! A WAL's torn tail (an incomplete record at the very end, left by a crash
//! in the middle of a write) is dropped: no writer was told that write had
//! succeeded with `sync`. Damage followed by valid records, or a torn tail in
//! any WAL but the newest, is corruption and fails the open, because data
//! after the damage was acknowledged.

use super::commit::{apply, CommitPipeline, Wal};
use super::compact::compaction_loop;
use super::events::{open_event, EventLog};
use super::flush::{delete_obsolete_files, flush_loop};
use super::options::Options;
use super::table_cache::TableCache;
use super::write_batch::WriteBatch;
use super::{filenames, Db, DbInner, DbState, Stats};
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::sstable::SstOptions;
use crate::version::{FileMeta, VersionEdit, VersionSet};
use crate::vfs::{OsVfs, Vfs};
use crate::wal::reader::{LogReader, TailPolicy};
use crate::wal::writer::LogWriter;
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

pub(crate) fn open(dir: &Path, opts: Options) -> Result<Db> {
    let vfs: Arc<dyn Vfs> = opts.vfs.clone().unwrap_or_else(|| Arc::new(OsVfs));
    vfs.create_dir_all(dir)?;
    let lock = vfs.lock(&filenames::lock(dir))?;
    let exists = vfs.exists(&filenames::current(dir));
    if exists && opts.error_if_exists {
        return Err(Error::invalid(format!(
            "database {} already exists",
            dir.display()
        )));
    }
    let mut versions = if exists {
        VersionSet::recover(Arc::clone(&vfs), dir)?.set
    } else if opts.create_if_missing {
        VersionSet::create(Arc::clone(&vfs), dir)?
    } else {
        return Err(Error::invalid(format!(
            "{} is not a database (no CURRENT) and create_if_missing is off",
            dir.display()
        )));
    };

    // Every numbered file in the directory counts as used: a WAL, or a file
    // an ingestion linked before the crash, may be newer than the MANIFEST's
    // counter, and reusing its number would overwrite it.
    for name in vfs.list(dir)? {
        match filenames::parse(&name) {
            Some(filenames::FileKind::Wal(n))
            | Some(filenames::FileKind::Table(n))
            | Some(filenames::FileKind::Manifest(n)) => versions.mark_file_number_used(n),
            _ => {}
        }
    }

    // Replay live WALs, oldest first.
    let mut wals: Vec<u64> = vfs
        .list(dir)?
        .iter()
        .filter_map(|n| match filenames::parse(n) {
            Some(filenames::FileKind::Wal(w)) if w >= versions.log_number() => Some(w),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    let mut last_seq = versions.last_sequence();
    let flushed_seq = versions.flushed_seq();
    // Ingestions that were waiting in the immutable queue go back in
    // sequence order among the replayed records: what was replayed before
    // one is older, so it is written to L0 first, then the files.
    let mut queued: VecDeque<(u64, Vec<FileMeta>)> = versions.queued_ingestions().into();
    let mut placed_seq = None;
    let mut edit = VersionEdit::default();
    let mut mem = Arc::new(MemTable::new(0));
    let mut place_queued_before = |seq: u64,
                                   mem: &mut Arc<MemTable>,
                                   edit: &mut VersionEdit,
                                   versions: &VersionSet|
     -> Result<()> {
        while queued.front().is_some_and(|(s, _)| *s < seq) {
            let Some((s, files)) = queued.pop_front() else {
                break;
            };
            let m = std::mem::replace(mem, Arc::new(MemTable::new(0)));
            if !m.is_empty() {
                for f in write_table(vfs.as_ref(), dir, versions, &opts.sst, &m)? {
                    edit.add_file(0, f);
                }
            }
            for f in files {
                edit.add_file(0, f);
            }
            placed_seq = Some(s);
        }
        Ok(())
    };
    for (i, &w) in wals.iter().enumerate() {
        let path = filenames::wal(dir, w);
        let name = path.display().to_string();
        let mut r = LogReader::new(
            vfs.open_sequential(&path)?,
            &name,
            TailPolicy::TolerateTornTail,
        );
        while let Some(rec) = r.read_record()? {
            let off = r.last_record_offset();
            let b = WriteBatch::from_bytes(rec).map_err(|m| Error::corruption(&name, off, m))?;
            if b.count() == 0 {
                continue;
            }
            let b_last = b.sequence() + b.count() as u64 - 1;
            last_seq = last_seq.max(b_last);
            // Already in a table: the WAL was shared with a memtable that
            // was flushed before the crash.
            if b_last <= flushed_seq {
                continue;
            }
            place_queued_before(b.sequence(), &mut mem, &mut edit, &versions)?;
            apply(&mem, &b)?;
            if mem.approximate_memory_usage() >= opts.memtable_size {
                let m = std::mem::replace(&mut mem, Arc::new(MemTable::new(0)));
                for f in write_table(vfs.as_ref(), dir, &versions, &opts.sst, &m)? {
                    edit.add_file(0, f);
                }
            }
        }
        if let Some(t) = r.dropped_tail() {
            if i + 1 < wals.len() {
                return Err(Error::corruption(
                    &name,
                    t.offset,
                    format!(
                        "damaged record ({:?}) in a WAL that is not the newest",
                        t.damage
                    ),
                ));
            }
        }
    }
    place_queued_before(u64::MAX, &mut mem, &mut edit, &versions)?;
    if let Some(s) = placed_seq {
        last_seq = last_seq.max(s);
        edit.ingested_seq = Some(s);
    }
    if !mem.is_empty() {
        for f in write_table(vfs.as_ref(), dir, &versions, &opts.sst, &mem)? {
            edit.add_file(0, f);
        }
    }
    edit.flushed_seq = Some(last_seq);

    // A fresh WAL; everything older is now in tables.
    let wal_number = versions.new_file_number();
    let wal_path = filenames::wal(dir, wal_number);
    let log = LogWriter::new(vfs.create(&wal_path)?, wal_path.display().to_string());
    edit.log_number = Some(wal_number);
    versions.log_and_apply(edit, last_seq)?;

    let block_cache = Arc::new(BlockCache::new(opts.block_cache_bytes));
    let table_cache = Arc::new(TableCache::new(
        Arc::clone(&vfs),
        dir.to_path_buf(),
        opts.max_open_files,
        block_cache,
    ));
    let next_file = versions.file_number_allocator();
    let manifest_unsynced = versions.unsynced_flag();
    let mem = Arc::new(MemTable::new(wal_number));
    let state = DbState {
        versions,
        mem,
        mem_wal: wal_number,
        imm: VecDeque::new(),
        pending_outputs: BTreeSet::new(),
        running: Default::default(),
        manual_compactions: 0,
        excised_seq: 0,
    };
    let sv = super::SuperVersion {
        mem: Arc::clone(&state.mem),
        imm: Vec::new(),
        version: state.versions.current(),
        excised_seq: 0,
    };
    let vfs_for_events = Arc::clone(&vfs);
    let listener = opts.event_listener.clone();
    let inner = Arc::new(DbInner {
        dir: dir.to_path_buf(),
        vfs,
        opts,
        sv: RwLock::new(Arc::new(sv)),
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        flush_done_cv: Condvar::new(),
        commit: CommitPipeline::new(last_seq, Wal { log, dirty: false }),
        visible_seq: AtomicU64::new(last_seq),
        next_file,
        manifest_unsynced,
        table_cache,
        shutting_down: AtomicBool::new(false),
        bg_error: Mutex::new(None),
        snapshots: Mutex::new(BTreeMap::new()),
        stats: Stats::default(),
        events: EventLog::open(vfs_for_events.as_ref(), dir, listener),
        l0_depth: AtomicU64::new(0),
        debt: AtomicU64::new(0),
        _lock: lock,
    });
    {
        let mut st = inner.state.lock();
        delete_obsolete_files(&inner, &mut st);
        inner.install_super_version(&st);
        inner.events.record(open_event(&st.versions.current()));
    }
    let bg = Arc::clone(&inner);
    let t = std::thread::Builder::new()
        .name("strata-flush".into())
        .spawn(move || flush_loop(bg))
        .map_err(|e| Error::io("spawning the flush thread", e))?;
    let mut threads = vec![t];
    for i in 0..inner.opts.max_background_compactions.max(1) {
        let bg = Arc::clone(&inner);
        let t = std::thread::Builder::new()
            .name(format!("strata-compact-{i}"))
            .spawn(move || compaction_loop(bg))
            .map_err(|e| Error::io("spawning a compaction thread", e))?;
        threads.push(t);
    }
    if !inner.opts.wal_flush_interval.is_zero() {
        let bg = Arc::clone(&inner);
        let t = std::thread::Builder::new()
            .name("strata-wal".into())
            .spawn(move || wal_flush_loop(bg))
            .map_err(|e| Error::io("spawning the WAL flusher thread", e))?;
        threads.push(t);
    }
    Ok(Db {
        inner,
        threads: Mutex::new(threads),
    })
}

/// Hands unsynced WAL records to the operating system every
/// `wal_flush_interval`, so a process crash loses at most that window of
/// writes made without `sync`.
fn wal_flush_loop(db: Arc<DbInner>) {
    while !db.shutting_down.load(std::sync::atomic::Ordering::SeqCst) {
        std::thread::sleep(db.opts.wal_flush_interval);
        if let Err(e) = db.commit.flush_wal() {
            db.set_bg_error(e);
            return;
        }
    }
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
