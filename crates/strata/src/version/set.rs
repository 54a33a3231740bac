//! `VersionSet`: the current `Version`, the MANIFEST that records how it came
//! to be, and the counters persisted with it (next file number, last
//! sequence, oldest live WAL).
//!
//! Locking: the set lives under the database's state lock, but its MANIFEST
//! file does not (`manifest_log`). Logging an edit (`log_and_apply_unsynced`)
//! applies it to the in-memory version and frames its record into memory,
//! in one critical section, so records lie in the file in the order the
//! versions were built; nothing there touches the disk. The caller then
//! makes the record durable with `ManifestLog::sync` after releasing the
//! state lock (if anything needs it durable: a flush's record waits for
//! the next sync, `db::flush`), so Puts and an ingestion's commit (which
//! takes the state lock inside the commit pipeline) never wait behind a
//! flush's or a compaction's MANIFEST write or fsync; only the ingesting
//! caller's final sync waits for an fsync in progress
//! (`version::manifest_log`).
//!
//! Durability rule: the in-memory version may run ahead of the MANIFEST on
//! disk only by records framed and not yet synced, and nothing is done on
//! the strength of such a record until it is synced that a crash could not
//! undo: a compaction does not publish its result before its own sync
//! returns; no file (table or WAL) is deleted while any record is unsynced
//! (`has_unsynced`, see `flush::delete_obsolete_files`); an ingestion is
//! acknowledged, and a synced write that follows it too (`ManifestLog::owe`),
//! only once the MANIFEST is synced. A flush drops its memtable from the
//! queue at once: the data stays in a synced WAL, which is not deleted
//! before the record is durable. What readers may see early (a flush's
//! table instead of its memtable, a compaction's outputs instead of its
//! inputs) holds the same data either way, and recovery rebuilds the old
//! version plus the WALs if the record is lost.
//!
//! `CURRENT` names the live MANIFEST and is replaced by writing a temporary
//! file, syncing it and renaming it over `CURRENT` (atomic), then syncing
//! the directory.
//!
//! Recovery (`recover`) only reads: CURRENT must name an existing MANIFEST
//! exactly, and damage in the MANIFEST is corruption unless
//! `wal::tail::judge` accepts it as an unfinished last write; `salvage`
//! (for repair) keeps the edits before the damage instead. A read-write
//! open then starts a new MANIFEST (`start_manifest`) holding one snapshot
//! of the recovered version, once its checks passed; a MANIFEST that grows
//! past `MAX_MANIFEST_BYTES` is replaced the same way (under the state
//! lock, the one MANIFEST I/O there: once per 8 MiB of edits), so recovery
//! never replays an unbounded history.
//!
//! Version reference counting (`remember`, `live_files`, with the super
//! version, flush, compaction and obsolete-file pass around them) is
//! checked by a loom model, `crates/strata-loom/src/version_refs.rs`:
//! change it with them.

use super::edit::FileMeta;
use super::edit::{VersionEdit, COMPARATOR};
use super::manifest_log::{Framer, ManifestLog};
use super::version::Version;
use crate::db::filenames;
use crate::error::{Error, Result};
use crate::vfs::{self, Vfs};
use crate::wal::reader::{DroppedTail, LogReader, TailPolicy};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

const MAX_MANIFEST_BYTES: u64 = 8 << 20;

pub struct VersionSet {
    dir: PathBuf,
    vfs: Arc<dyn Vfs>,
    current: Arc<Version>,
    /// Frames records for the open MANIFEST (`None` until one is started).
    framer: Option<Framer>,
    /// The open MANIFEST file, shared with callers that sync it without
    /// the state lock.
    log: Arc<ManifestLog>,
    manifest_number: u64,
    /// Shared with writers that allocate file numbers (WAL rotation) without
    /// taking the lock that guards the rest of the set.
    next_file: Arc<AtomicU64>,
    /// WALs numbered below this hold nothing that is not in a table.
    log_number: u64,
    /// Highest sequence number recorded in the MANIFEST.
    last_sequence: u64,
    /// Highest sequence number of a queued ingestion now in the tree.
    ingested_seq: u64,
    /// Every WAL record at or below this sequence number is in a table.
    flushed_seq: u64,
    /// Ingestions waiting in the immutable queue, by sequence number.
    queued: BTreeMap<u64, Vec<FileMeta>>,
    /// Every version installed, to know which files readers may still use:
    /// a reader holds its version through an `Arc`, so a version whose
    /// weak reference still upgrades is in use.
    handed_out: Vec<Weak<Version>>,
}

/// What recovery learned besides the version itself.
pub struct Recovered {
    /// The recovered state. It has no MANIFEST open: nothing was written,
    /// and `start_manifest` must be called before any edit is logged.
    pub set: VersionSet,
    /// The MANIFEST that was read (CURRENT's). It and every earlier one are
    /// obsolete once a new MANIFEST is in place.
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
    pub old_manifest: Option<u64>,
    /// Salvage only: where reading stopped early, and why. Every edit from
    /// this offset on is lost.
    pub stopped: Option<(u64, String)>,
    /// A torn tail (an unfinished last write) that was dropped.
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
    pub dropped_tail: Option<DroppedTail>,
    /// Physical tables an edit of this MANIFEST removed from the version
    /// and that nothing references any more: provably obsolete.
    pub deleted: HashSet<u64>,
}

/// The MANIFEST number CURRENT names. A CURRENT that is not exactly
/// `MANIFEST-NNNNNN\n`, or names a MANIFEST that does not exist, is
/// corruption of CURRENT.
pub fn read_current(vfs: &dyn Vfs, dir: &Path) -> Result<u64> {
    let cur_path = filenames::current(dir);
    let cname = cur_path.display().to_string();
    let cur = vfs::read_all(vfs, &cur_path)?;
    let cur = String::from_utf8_lossy(&cur);
    let name = cur.trim_end_matches('\n');
    let number = match filenames::parse(name) {
        Some(filenames::FileKind::Manifest(n))
            if cur.ends_with('\n') && name.len() + 1 == cur.len() =>
        {
            n
        }
        _ => {
            return Err(Error::corruption(
                cname,
                0,
                format!("CURRENT does not name a MANIFEST: {name:?}"),
            ))
        }
    };
    if !vfs.exists(&filenames::manifest(dir, number)) {
        return Err(Error::corruption(
            cname,
            0,
            format!("CURRENT names {name}, which does not exist"),
        ));
    }
    Ok(number)
}

impl VersionSet {
    /// Creates the MANIFEST and CURRENT of a new, empty database.
    pub fn create(vfs: Arc<dyn Vfs>, dir: &Path) -> Result<VersionSet> {
        let mut set = VersionSet {
            dir: dir.to_path_buf(),
            vfs,
            current: Arc::new(Version::new()),
            framer: None,
            log: Arc::new(ManifestLog::new()),
            manifest_number: 0,
            next_file: Arc::new(AtomicU64::new(1)),
            log_number: 0,
            last_sequence: 0,
            ingested_seq: 0,
            flushed_seq: 0,
            queued: BTreeMap::new(),
            handed_out: Vec::new(),
        };
        let v = Arc::downgrade(&set.current);
        set.remember(v);
        set.write_new_manifest()?;
        Ok(set)
    }

    /// Rebuilds the version from CURRENT's MANIFEST, writing nothing.
    ///
    /// Any damage is [`Error::Corruption`] naming the MANIFEST and offset,
    /// except a torn tail that [`wal::tail::judge`](crate::wal::tail::judge)
    /// accepts as an unfinished last write (reported in `dropped_tail`).
    pub fn recover(vfs: Arc<dyn Vfs>, dir: &Path) -> Result<Recovered> {
        let number = read_current(vfs.as_ref(), dir)?;
        Self::recover_manifest(vfs, dir, number, false)
    }

    /// Rebuilds the version from MANIFEST-`number`, writing nothing. With
    /// `salvage`, damage ends the reading instead of failing it: the edits
    /// before it are kept and `stopped` says where and why.
    pub fn recover_manifest(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        number: u64,
        salvage: bool,
    ) -> Result<Recovered> {
        let mpath = filenames::manifest(dir, number);
        let mname = mpath.display().to_string();
        let mut reader = LogReader::new(
            vfs.open_sequential(&mpath)?,
            &mname,
            TailPolicy::TolerateTornTail,
        );
        let mut version = Version::new();
        let (mut log_number, mut next_file, mut last_seq) = (None, None, None);
        let mut ingested_seq = 0;
        let mut flushed_seq = 0;
        let mut queued: BTreeMap<u64, Vec<FileMeta>> = BTreeMap::new();
        let mut saw_any = false;
        let mut stopped = None;
        let mut deleted = HashSet::new();
        loop {
            let step = reader.read_record().and_then(|rec| match rec {
                None => Ok(None),
                Some(rec) => {
                    let off = reader.last_record_offset();
                    let edit =
                        VersionEdit::decode(&rec).map_err(|m| Error::corruption(&mname, off, m))?;
                    // Name the record, not the file's start.
                    let v = version.apply(&edit, &mname).map_err(|e| match e {
                        Error::Corruption { file, msg, .. } => Error::Corruption {
                            file,
                            offset: off,
                            msg,
                        },
                        e => e,
                    })?;
                    Ok(Some((edit, v)))
                }
            });
            let (edit, v) = match step {
                Ok(Some(x)) => x,
                Ok(None) => break,
                Err(e) if salvage && !matches!(e, Error::Io { .. }) => {
                    let off = match &e {
                        Error::Corruption { offset, .. } => *offset,
                        _ => reader.last_record_end(),
                    };
                    stopped = Some((off, e.to_string()));
                    break;
                }
                Err(e) => return Err(e),
            };
            if let Some(c) = &edit.comparator {
                if c != COMPARATOR {
                    return Err(Error::NotSupported(format!("{mname}: comparator {c}")));
                }
            }
            deleted.extend(edit.deleted_files.iter().map(|&(_, n)| n));
            version = v;
            log_number = edit.log_number.or(log_number);
            next_file = edit.next_file_number.or(next_file);
            last_seq = edit.last_sequence.or(last_seq);
            ingested_seq = ingested_seq.max(edit.ingested_seq.unwrap_or(0));
            flushed_seq = flushed_seq.max(edit.flushed_seq.unwrap_or(0));
            add_queued(&mut queued, &edit.queued_files);
            queued.retain(|&s, _| s > ingested_seq);
            saw_any = true;
        }
        let dropped_tail = reader.dropped_tail();
        if let Some(t) = dropped_tail {
            // Dropping a tail is safe only if it was never a whole record:
            // a MANIFEST edit is synced before anything relies on it, so a
            // record that was complete once may have been relied on.
            if let Some(why) = crate::wal::tail::judge(vfs.open_random(&mpath)?.as_ref(), &t)? {
                if !salvage {
                    return Err(Error::corruption(&mname, t.offset, why));
                }
                stopped.get_or_insert((t.offset, why));
            }
        }
        let missing = |what: &str| Error::corruption(&mname, 0, format!("MANIFEST has no {what}"));
        if !saw_any {
            // Under salvage, the first record (the tree's snapshot) may be
            // there but damaged: say so, not that the file is empty.
            return Err(match stopped {
                Some((off, why)) => Error::corruption(
                    &mname,
                    off,
                    format!(
                        "its first record, the snapshot every later edit builds on, is \
                         damaged ({why}), so there is no tree to rebuild from"
                    ),
                ),
                None => missing("records"),
            });
        }
        let next_file = next_file.ok_or_else(|| missing("next file number"))?;
        let last_seq = last_seq.ok_or_else(|| missing("last sequence"))?;
        // Every edit that flushes also records the last sequence, which is
        // never below what it flushed: a flushed sequence past it would make
        // recovery skip WAL records as already in tables.
        if flushed_seq > last_seq {
            return Err(Error::corruption(
                &mname,
                0,
                format!("the flushed sequence {flushed_seq} is past the last sequence {last_seq}"),
            ));
        }
        let mut max_file = number;
        for (_, f) in version.all_files() {
            max_file = max_file.max(f.number).max(f.backing_number());
        }
        let mut set = VersionSet {
            dir: dir.to_path_buf(),
            vfs,
            current: Arc::new(version),
            framer: None,
            log: Arc::new(ManifestLog::new()),
            manifest_number: number,
            next_file: Arc::new(AtomicU64::new(next_file.max(max_file + 1))),
            log_number: log_number.unwrap_or(0),
            last_sequence: last_seq,
            ingested_seq,
            flushed_seq,
            queued,
            handed_out: Vec::new(),
        };
        let v = Arc::downgrade(&set.current);
        set.remember(v);
        for f in set.live_files() {
            deleted.remove(&f);
        }
        Ok(Recovered {
            set,
            old_manifest: Some(number),
            stopped,
            dropped_tail,
            deleted,
        })
    }

    /// Starts a new MANIFEST holding a snapshot of the recovered state and
    /// points CURRENT at it; the MANIFEST that was read is then deleted.
    /// Called by a read-write open once every recovery check has passed.
    pub fn start_manifest(&mut self) -> Result<()> {
        self.write_new_manifest()
    }

    /// The next file number the MANIFEST recorded (or, once files were
    /// allocated, the next to allocate).
    pub fn next_file_number(&self) -> u64 {
        self.next_file.load(Ordering::SeqCst)
    }

    /// Applies a repair's edit to the version without logging it (the
    /// repaired state goes into a new MANIFEST by `start_manifest`),
    /// forgets queued ingestions holding a file in `drop_queued`, and queues
    /// the edit's queued files (ingestions repair redoes).
    pub fn repair_version(&mut self, edit: &VersionEdit, drop_queued: &[u64]) -> Result<()> {
        let v = self.current.apply(edit, "repair")?;
        self.current = Arc::new(v);
        self.queued
            .retain(|_, fs| !fs.iter().any(|f| drop_queued.contains(&f.number)));
        add_queued(&mut self.queued, &edit.queued_files);
        let v = Arc::downgrade(&self.current);
        self.remember(v);
        Ok(())
    }

    /// Raises the last sequence number (repair: past tables it put back
    /// and WAL records whose gap it reported).
    pub fn raise_last_sequence(&mut self, last: u64) {
        self.last_sequence = self.last_sequence.max(last);
    }

    /// Starts a new MANIFEST holding a snapshot of the current state and
    /// points CURRENT at it. Called under the state lock: nothing is
    /// framed meanwhile, so the snapshot holds every record framed so far.
    /// (Mirrored, with `ManifestLog::switch_to`, by the loom model
    /// `crates/strata-loom/src/manifest_log.rs`.)
    fn write_new_manifest(&mut self) -> Result<()> {
        let number = self.new_file_number();
        let path = filenames::manifest(&self.dir, number);
        let mut file = self.vfs.create(&path)?;
        let mut framer = Framer::new(path.display().to_string());
        let mut e = self.current.snapshot_edit();
        e.comparator = Some(COMPARATOR.to_string());
        e.log_number = Some(self.log_number);
        e.next_file_number = Some(self.next_file.load(Ordering::SeqCst));
        e.last_sequence = Some(self.last_sequence);
        e.ingested_seq = Some(self.ingested_seq);
        e.flushed_seq = Some(self.flushed_seq);
        e.queued_files = self.queued.values().flatten().cloned().collect();
        let rec = framer.frame(&e.encode())?;
        file.append(&rec)?;
        file.sync()?;
        set_current(self.vfs.as_ref(), &self.dir, number)?;
        self.log.switch_to(file)?;
        let old = self.manifest_number;
        self.framer = Some(framer);
        self.manifest_number = number;
        if old != 0 {
            let _ = self.vfs.remove(&filenames::manifest(&self.dir, old));
        }
        Ok(())
    }

    pub fn current(&self) -> Arc<Version> {
        Arc::clone(&self.current)
    }

    /// Allocates a file number (shared by WALs, tables and MANIFESTs).
    pub fn new_file_number(&self) -> u64 {
        self.next_file.fetch_add(1, Ordering::SeqCst)
    }

    /// Makes sure numbers up to `n` are never allocated again (files found
    /// in the directory that the MANIFEST does not know about yet, such as
    /// WALs and files linked by an ingestion waiting in the queue).
    pub fn mark_file_number_used(&self, n: u64) {
        self.next_file.fetch_max(n + 1, Ordering::SeqCst);
    }

    pub fn file_number_allocator(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.next_file)
    }

    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    pub fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    /// Queued ingestions with this sequence number or lower are in the tree.
    pub fn ingested_seq(&self) -> u64 {
        self.ingested_seq
    }

    /// WAL records with this sequence number or lower are in tables.
    pub fn flushed_seq(&self) -> u64 {
        self.flushed_seq
    }

    /// Ingestions recorded as waiting in the immutable queue and not yet
    /// placed, oldest first: `(sequence number, files)`.
    pub fn queued_ingestions(&self) -> Vec<(u64, Vec<FileMeta>)> {
        self.queued.iter().map(|(&s, f)| (s, f.clone())).collect()
    }

    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// Records `edit` durably and makes the resulting version current
    /// (`log_and_apply_unsynced`, then a sync). For callers that hold no
    /// lock others wait on: open, tests.
    pub fn log_and_apply(&mut self, edit: VersionEdit, last_sequence: u64) -> Result<Arc<Version>> {
        let v = self.log_and_apply_unsynced(edit, last_sequence)?;
        self.log.sync()?;
        Ok(v)
    }

    /// Makes the version `edit` leads to current and frames its MANIFEST
    /// record, in memory only. `last_sequence` is the highest sequence
    /// number whose data the new version (plus live WALs) holds. The caller
    /// must sync the record (`ManifestLog::sync`, after releasing the state
    /// lock) before acting on it: see the module docs.
    pub fn log_and_apply_unsynced(
        &mut self,
        mut edit: VersionEdit,
        last_sequence: u64,
    ) -> Result<Arc<Version>> {
        self.log.check()?;
        let mname = filenames::manifest(&self.dir, self.manifest_number)
            .display()
            .to_string();
        let v = self.current.apply(&edit, &mname)?;
        let last = self.last_sequence.max(last_sequence);
        edit.last_sequence = Some(last);
        edit.next_file_number = Some(self.next_file.load(Ordering::SeqCst));
        let framer = self
            .framer
            .as_mut()
            .ok_or_else(|| Error::internal("version set has no MANIFEST open"))?;
        let framed = framer
            .frame(&edit.encode())
            .and_then(|rec| self.log.push(&rec));
        if let Err(e) = framed {
            self.log.poison(e.clone());
            return Err(e);
        }
        self.last_sequence = last;
        if let Some(l) = edit.log_number {
            self.log_number = self.log_number.max(l);
        }
        add_queued(&mut self.queued, &edit.queued_files);
        if let Some(s) = edit.ingested_seq {
            self.ingested_seq = self.ingested_seq.max(s);
            let placed = self.ingested_seq;
            self.queued.retain(|&q, _| q > placed);
        }
        if let Some(s) = edit.flushed_seq {
            self.flushed_seq = self.flushed_seq.max(s);
        }
        self.current = Arc::new(v);
        self.remember(Arc::downgrade(&self.current));
        if self
            .framer
            .as_ref()
            .is_some_and(|f| f.len() > MAX_MANIFEST_BYTES)
        {
            // The edit is recorded either way; a failed switch poisons the
            // log (CURRENT may name either MANIFEST now).
            if let Err(e) = self.write_new_manifest() {
                self.log.poison(e);
            }
        }
        Ok(self.current())
    }

    /// Makes every MANIFEST record framed so far durable. Takes no lock
    /// but the log's own; callers holding the state lock should release it
    /// first and call `ManifestLog::sync` (`manifest_log`).
    #[cfg(any(test, feature = "internals"))]
    pub fn sync_manifest(&self) -> Result<()> {
        self.log.sync()
    }

    /// Whether some MANIFEST record is not yet durable.
    pub fn has_unsynced(&self) -> bool {
        self.log.has_unsynced()
    }

    /// The MANIFEST file, for syncing without the state lock.
    pub fn manifest_log(&self) -> Arc<ManifestLog> {
        Arc::clone(&self.log)
    }

    /// Remembers a version that readers may hold (through a super version),
    /// so its files are not deleted while it lives.
    fn remember(&mut self, v: Weak<Version>) {
        self.handed_out.retain(|w| w.strong_count() > 0);
        self.handed_out.push(v);
    }

    /// Numbers of every physical table file that the current version or any
    /// version still held by a reader refers to, directly or as the backing
    /// table of a virtual file: a physical table stays while any virtual
    /// file cut from it is live anywhere.
    pub fn live_files(&mut self) -> HashSet<u64> {
        self.handed_out.retain(|w| w.strong_count() > 0);
        let mut live: HashSet<u64> = self
            .current
            .all_files()
            .map(|(_, f)| f.backing_number())
            .collect();
        live.extend(self.queued.values().flatten().map(|f| f.backing_number()));
        for w in &self.handed_out {
            if let Some(v) = w.upgrade() {
                live.extend(v.all_files().map(|(_, f)| f.backing_number()));
            }
        }
        live
    }
}

/// Groups queued files by their ingestion's sequence number.
fn add_queued(queued: &mut BTreeMap<u64, Vec<FileMeta>>, files: &[FileMeta]) {
    for f in files {
        if let Some(s) = f.global_seqno {
            queued.entry(s).or_default().push(f.clone());
        }
    }
}

/// Writes MANIFEST-`number` in `dir` holding `edit` alone (a snapshot of a
/// version with its numbers), synced, for a directory that has no MANIFEST
/// yet: a checkpoint's (`db::checkpoint`). CURRENT is left to the caller
/// (`set_current`), so the directory is a database only once it is written.
pub fn write_snapshot_manifest(
    vfs: &dyn Vfs,
    dir: &Path,
    number: u64,
    mut edit: VersionEdit,
) -> Result<()> {
    let path = filenames::manifest(dir, number);
    let mut framer = Framer::new(path.display().to_string());
    edit.comparator = Some(COMPARATOR.to_string());
    let rec = framer.frame(&edit.encode())?;
    let mut file = vfs.create(&path)?;
    file.append(&rec)?;
    file.sync()
}

/// Points CURRENT at MANIFEST-`number`, atomically.
pub fn set_current(vfs: &dyn Vfs, dir: &Path, number: u64) -> Result<()> {
    let tmp = filenames::temp(dir, number);
    let name = filenames::manifest(dir, number);
    let body = format!(
        "{}\n",
        name.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    );
    vfs::write_all(vfs, &tmp, body.as_bytes())?;
    vfs.rename(&tmp, &filenames::current(dir))?;
    vfs.sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};
    use crate::version::edit::FileMeta;
    use crate::vfs::MemVfs;

    fn file(n: u64) -> FileMeta {
        FileMeta {
            number: n,
            size: 10,
            smallest: make_internal_key(format!("k{n:03}").as_bytes(), n, ValueKind::Value),
            largest: make_internal_key(format!("k{n:03}z").as_bytes(), n, ValueKind::Value),
            smallest_seq: n,
            largest_seq: n,
            global_seqno: None,
            num_entries: 1,
            num_deletions: 0,
            num_range_deletions: 0,
            backing: None,
        }
    }

    #[test]
    fn edits_survive_recovery() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let dir = Path::new("/db");
        let mut set = VersionSet::create(vfs.clone(), dir).unwrap();
        for i in 0..50u64 {
            let mut e = VersionEdit::default();
            let n = set.new_file_number();
            e.add_file(1, file(n));
            if i % 3 == 2 {
                e.delete_file(1, n - 1);
            }
            e.log_number = Some(i);
            set.log_and_apply(e, 100 + i).unwrap();
        }
        let want: Vec<u64> = set.current().files(1).iter().map(|f| f.number).collect();
        let next = set.new_file_number();
        drop(set);
        let mut r = VersionSet::recover(vfs.clone(), dir).unwrap();
        r.set.start_manifest().unwrap();
        let got: Vec<u64> = r.set.current().files(1).iter().map(|f| f.number).collect();
        assert_eq!(got, want);
        assert_eq!(r.set.last_sequence(), 149);
        assert_eq!(r.set.log_number(), 49);
        assert!(r.set.new_file_number() > next, "file numbers never reused");
        // Recovery wrote a new MANIFEST and CURRENT names it.
        let cur = vfs::read_all(vfs.as_ref(), &filenames::current(dir)).unwrap();
        assert_eq!(
            String::from_utf8(cur).unwrap(),
            format!("MANIFEST-{:06}\n", r.set.manifest_number())
        );
    }

    /// A flushed sequence past the last sequence (a forged or damaged
    /// record with a valid checksum) would make recovery skip WAL records
    /// as if they were in tables: refused. Equal is what a flush of
    /// everything records.
    #[test]
    fn a_flushed_sequence_past_the_last_is_corruption() {
        for (flushed, ok) in [(100, true), (101, false)] {
            let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
            let dir = Path::new("/db");
            let mut set = VersionSet::create(vfs.clone(), dir).unwrap();
            let e = VersionEdit {
                flushed_seq: Some(flushed),
                ..VersionEdit::default()
            };
            set.log_and_apply(e, 100).unwrap();
            drop(set);
            match VersionSet::recover(vfs, dir) {
                Ok(_) => assert!(ok, "flushed {flushed} past last 100 was accepted"),
                Err(e) => {
                    assert!(!ok && e.is_corruption(), "flushed {flushed}: {e}");
                    assert!(e.to_string().contains("past the last sequence 100"), "{e}");
                }
            }
        }
    }

    #[test]
    fn damaged_current_is_corruption() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let dir = Path::new("/db");
        VersionSet::create(vfs.clone(), dir).unwrap();
        vfs::write_all(vfs.as_ref(), &filenames::current(dir), b"garbage").unwrap();
        assert!(VersionSet::recover(vfs, dir).err().unwrap().is_corruption());
    }
}
