//! `Db::checkpoint`: a copy of the database in a new directory, openable on
//! its own, made while the database stays in use (a backup, or a copy to
//! experiment on). Its tables are hard links to the database's own (tables
//! are never modified after they are written, so sharing them is safe),
//! copied instead where the directory is on another file system.
//!
//! **What a checkpoint holds:** exactly the operations numbered up to some
//! sequence number F, and every write and ingestion acknowledged before the
//! call, synced or not. Writes acknowledged while the call runs may or may
//! not be in it, but never some without the ones numbered before them: it
//! is the state the database was in at one moment, never a mixture.
//!
//! **How:**
//! 1. Ingestions are held off (`DbInner::checkpoint_gate`, taken for
//!    writing; every ingestion holds it for reading), because a
//!    non-overlapping ingestion enters the tree at once with a sequence
//!    number above writes still in the memtable: the tree alone would then
//!    hold an operation without some of those numbered before it. Writes go
//!    on; only ingestions wait, and only for the flush below.
//! 2. The memtable is sealed and every queued memtable and ingestion is
//!    flushed (`flush::wait_for_flushes`), so every operation acknowledged
//!    before the call is in a table.
//! 3. Under the state lock the current version is taken with F, the
//!    larger of the flushed sequence number and the one step 2's rotation
//!    sealed at (with an empty memtable nothing is flushed, so an
//!    ingestion placed straight into the tree can lie past the flushed
//!    sequence): every operation numbered up to F is in its tables and,
//!    with no ingestion since step 1, nothing numbered above F is
//!    (checked). Holding the version keeps its tables from being deleted
//!    (`VersionSet::live_files`) while they are linked.
//! 4. In the new directory: each table, an empty WAL (the MANIFEST names
//!    the oldest WAL still needed, and recovery refuses a missing one), a
//!    MANIFEST holding one snapshot of the version, all synced, the
//!    directory synced, and CURRENT last (`version::set::set_current`).
//!    Recovery treats a directory with tables but no CURRENT as no
//!    database (it refuses to open it), so a checkpoint cut short by a
//!    crash is never mistaken for a complete one; one that fails with an
//!    error removes the files it made.
//!
//! 5. A completed checkpoint is recorded as an [`Event::Checkpoint`]
//!    (listener and `EVENTS` log): directory, sequence number, tables,
//!    bytes, linked and copied counts, duration. A failed one is not.
//!
//! The source's WALs, EVENTS, `lost/` and `scratch/` are not copied: the
//! flush of step 2 puts everything the WALs hold into tables first.

use super::{events, filenames, flush, DbInner};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::version::set::{set_current, write_snapshot_manifest};
use crate::vfs::{lexically_normal, Vfs};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What [`Db::checkpoint`](crate::Db::checkpoint) made.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointInfo {
    /// The checkpoint holds every operation numbered up to this sequence
    /// number, and none after it.
    pub sequence: u64,
    /// Table files in the checkpoint.
    pub tables: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Tables copied because a hard link was not possible (another file
    /// system); the rest share the database's files.
    pub copied: usize,
}

/// Makes the checkpoint (see the module documentation).
pub(crate) fn create(db: &DbInner, target: &Path) -> Result<CheckpointInfo> {
    let started = Instant::now();
    let vfs = db.vfs.as_ref();
    refuse_target(db, target)?;
    let no_ingestions = db.checkpoint_gate.write();
    db.commit.commit(db, super::commit::Job::Rotate, false)?;
    // Read before the flushes, so every operation up to it is in a table
    // once they are done.
    let sealed = db.commit.sealed_seq();
    flush::wait_for_flushes(db)?;
    let (version, flushed, ingested, next_file) = {
        let st = db.state.lock();
        (
            st.versions.current(),
            st.versions.flushed_seq(),
            st.versions.ingested_seq(),
            st.versions.next_file_number(),
        )
    };
    // Every operation numbered up to `upto` is in the version's tables. A
    // flush advances the flushed sequence; an ingestion placed straight into
    // the tree does not. When the memtable was empty at the rotation above
    // (nothing written since the last ingestion), nothing was flushed, so
    // the flushed sequence can lie below that ingestion's number while
    // every operation up to the rotation's `sealed` point is in tables all
    // the same (the queue was flushed since), and ingestions are held off.
    // (Taking the flushed sequence alone refused a checkpoint right after
    // an ingestion of files: "the tree holds sequence number 36, past the
    // flushed 35".)
    let upto = flushed.max(sealed);
    let newest = version
        .all_files()
        .map(|(_, f)| f.largest_seq.max(f.global_seqno.unwrap_or(0)))
        .max()
        .unwrap_or(0);
    if newest > upto {
        // Step 3's claim broken: the tree holds an operation numbered past
        // the flushed sequence, so it would not be a prefix.
        return Err(Error::internal(format!(
            "checkpoint: the tree holds sequence number {newest}, past {upto} (flushed \
             {flushed}, sealed at {sealed})"
        )));
    }
    // The version is taken and checked: an ingestion from here on makes a
    // newer version, which the checkpoint does not copy, so ingestions need
    // not wait for the tables to be linked or copied.
    drop(no_ingestions);
    let backing: BTreeSet<u64> = version
        .all_files()
        .map(|(_, f)| f.backing_number())
        .collect();
    let mut made = Made {
        vfs,
        dir: target.to_path_buf(),
        files: Vec::new(),
        done: false,
    };
    vfs.create_dir_all(target)?;
    let mut info = CheckpointInfo {
        sequence: upto,
        tables: backing.len(),
        bytes: 0,
        copied: 0,
    };
    for &n in &backing {
        let src = filenames::table(&db.dir, n);
        let dst = filenames::table(target, n);
        if vfs.link(&src, &dst).is_err() {
            // Another file system (or one without links): a synced copy,
            // never over a file someone else put there meanwhile (nor is
            // such a file removed on the way out).
            if vfs.exists(&dst) {
                return Err(Error::invalid(format!(
                    "{} appeared while the checkpoint was being made",
                    dst.display()
                )));
            }
            made.files.push(dst.clone());
            vfs.copy(&src, &dst)?;
            info.copied += 1;
        } else {
            made.files.push(dst.clone());
        }
        info.bytes += vfs.file_size(&dst)?;
    }
    // Numbers past every table's: the WAL, then the MANIFEST.
    let wal = next_file;
    let manifest = next_file + 1;
    let wal_path = filenames::wal(target, wal);
    made.files.push(wal_path.clone());
    vfs.create(&wal_path)?.sync()?;
    let mut edit = version.snapshot_edit();
    edit.log_number = Some(wal);
    edit.next_file_number = Some(manifest + 1);
    edit.last_sequence = Some(upto);
    edit.flushed_seq = Some(upto);
    edit.ingested_seq = Some(ingested.min(upto));
    made.files.push(filenames::manifest(target, manifest));
    write_snapshot_manifest(vfs, target, manifest, edit)?;
    // Every entry durable before CURRENT can be: a CURRENT that survived a
    // power cut without the tables it leads to would be a damaged
    // database rather than no database.
    vfs.sync_dir(target)?;
    made.files.push(filenames::temp(target, manifest));
    made.files.push(filenames::current(target));
    set_current(vfs, target, manifest)?;
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        vfs.sync_dir(parent)?;
    }
    made.done = true;
    db.events.record(Event::Checkpoint {
        dir: lexically_normal(&std::path::absolute(target).unwrap_or_else(|_| target.into()))
            .display()
            .to_string(),
        sequence: info.sequence,
        tables: info.tables,
        bytes: info.bytes,
        linked: info.tables - info.copied,
        copied: info.copied,
        micros: events::micros(started.elapsed()),
    });
    Ok(info)
}

/// A checkpoint goes into a new directory, outside the database's.
fn refuse_target(db: &DbInner, target: &Path) -> Result<()> {
    if db.vfs.exists(target) || std::fs::symlink_metadata(target).is_ok() {
        return Err(Error::invalid(format!(
            "checkpoint directory {} already exists: a checkpoint goes into a new directory",
            target.display()
        )));
    }
    let resolved = resolve_new(db.vfs.as_ref(), target);
    if db.dir_names.iter().any(|d| resolved.starts_with(d)) {
        return Err(Error::invalid(format!(
            "checkpoint directory {} is inside the database's directory {}",
            target.display(),
            db.dir.display()
        )));
    }
    Ok(())
}

/// The name a path that does not exist yet will have: its nearest existing
/// ancestor resolved by the file system, then the rest.
fn resolve_new(vfs: &dyn Vfs, path: &Path) -> PathBuf {
    let path = lexically_normal(&std::path::absolute(path).unwrap_or_else(|_| path.into()));
    let mut rest = Vec::new();
    let mut at = path.as_path();
    loop {
        if let Ok(p) = vfs.canonicalize(at) {
            if vfs.exists(at) || at.is_dir() {
                let mut p = p;
                p.extend(rest.iter().rev());
                return p;
            }
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return path.clone(),
        }
    }
}

/// The files a checkpoint made, removed again unless it finished.
struct Made<'a> {
    vfs: &'a dyn Vfs,
    dir: PathBuf,
    files: Vec<PathBuf>,
    done: bool,
}

impl Drop for Made<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        for f in self.files.iter().rev() {
            let _ = self.vfs.remove(f);
        }
        // The directory was new; it goes too if nothing else is in it.
        if self.vfs.list(&self.dir).is_ok_and(|l| l.is_empty()) {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}
