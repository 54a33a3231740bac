//! `ManifestLog`: the open MANIFEST file, with its own locks, apart from
//! the state lock that guards the version set.
//!
//! Why: a flush's or compaction's MANIFEST write and fsync used to run
//! under the state lock, which the commit pipeline also takes to place an
//! ingestion, so an ingestion (and every Put queued behind it) waited for
//! another job's disk I/O: up to 168 ms in W4 on a loaded machine. As in
//! RocksDB (the MANIFEST writer releases the DB mutex for the write and
//! sync) and Pebble (`logLock` apart from `d.mu`), the version set now only
//! *frames* a record into memory, under the state lock, in the same
//! critical section that applies its edit; whoever needs the record
//! durable calls [`ManifestLog::sync`] afterwards, without the state lock.
//!
//! Invariants:
//! - Records are framed in the order their edits were applied to the
//!   in-memory version (both under the state lock), so the file replays to
//!   the version that was built, whatever order syncs finish in.
//! - Framed bytes reach the file in the order framed: a write-out takes
//!   every pending byte under `io` and writes it before releasing `io`. A
//!   record is framed whole (`push`), never split across two write-outs'
//!   takes.
//! - `framed` and `synced` count bytes since open, over every MANIFEST
//!   this database wrote; `synced` only grows and never passes what was
//!   written. A record is durable once `synced` reaches the `framed` total
//!   that its `push` returned.
//! - The fsync runs without `io` when the file offers a
//!   [`FileSync`](crate::vfs::FileSync) handle, so a second job can write
//!   out its own record (and writes queued behind it go on) while another
//!   job's fsync is in progress. The fsyncs themselves run one at a time
//!   (`fsync_serial`), each one's outcome recorded (poison on failure)
//!   before the next begins: Linux reports a failed write-back once per
//!   open file description, and the handle is a `dup`, so a second fsync
//!   running beside a failed one could succeed and return `Ok` for a
//!   record behind bytes that never reached the disk (found by the loom
//!   model; Pebble's `logAndApply` also syncs one edit at a time). An
//!   ingestion's caller therefore waits for a flush's fsync in progress,
//!   which on the same file the kernel largely serialises anyway. An fsync
//!   covers every byte written before it began, so `synced` is raised to
//!   what was written when the write-out ended.
//! - Any failed write or sync poisons the log: the record may or may not
//!   be on disk, so nothing more is written, `has_unsynced` stays true (no
//!   file is deleted, no synced write is acknowledged) and every later
//!   `sync` returns the error, until a reopen lets recovery decide. (Found
//!   by `FaultVfs` before this split: a failed sync's record was synced by
//!   the next edit, which deleted a file a second time, and the reopen
//!   failed.)
//! - Lock order: the state lock, then `io`, then `pending`. `sync` never
//!   takes the state lock; a MANIFEST switch (`VersionSet`, rare: every
//!   `MAX_MANIFEST_BYTES`) holds both.
//!
//! `push`, `sync`, `poison` and `switch_to` (with `VersionSet`'s
//! `write_new_manifest`) are mirrored step by step by a loom model,
//! `crates/strata-loom/src/manifest_log.rs`: change it with them.

use crate::error::{Error, Result};
use crate::vfs::WritableFile;
use crate::wal::staging::{staging_writer, Staged};
use crate::wal::writer::LogWriter;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Frames records in the log format into memory, as they will lie in one
/// MANIFEST file (the framer knows the file's block offsets), for `push`.
pub struct Framer {
    log: LogWriter,
    staged: Staged,
}

impl Framer {
    /// Frames for a new, empty MANIFEST (`name` in errors).
    pub fn new(name: impl Into<String>) -> Framer {
        let (log, staged) = staging_writer(name);
        Framer { log, staged }
    }

    /// The bytes of one record holding `payload`.
    pub fn frame(&mut self, payload: &[u8]) -> Result<Vec<u8>> {
        self.log.add_record(payload)?;
        Ok(std::mem::take(&mut *self.staged.lock()))
    }

    /// The file's length once every framed record is written.
    pub fn len(&self) -> u64 {
        self.log.len()
    }

    /// Whether nothing was framed.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.log.is_empty()
    }
}

/// Bytes framed and not yet taken by a write-out, and the running total
/// framed (both changed together, under this lock).
struct Pending {
    bytes: Vec<u8>,
    framed: u64,
}

/// The file, under `io`.
struct Io {
    file: Option<Box<dyn WritableFile>>,
    /// Bytes (counted like `framed`) handed to the file so far.
    written: u64,
    /// How far the file's space is reserved ([`WritableFile::preallocate`]),
    /// in the file's own offsets.
    reserved: u64,
}

/// How far ahead of its content the MANIFEST's space is reserved. A write
/// into reserved space changes neither the file's size nor its
/// allocation, so the fsync that makes an edit durable (a flush's, a
/// compaction's, an ingestion's, which its caller waits for) writes the
/// record's block and flushes the disk's cache without a journal commit:
/// RocksDB's `manifest_preallocation_size` (4 MiB) for the same reason.
/// One extension costs one journal commit per this many bytes of records
/// (thousands of edits), paid by the first edit written past the reserved
/// end (and the first after each switch). A MANIFEST is rewritten past
/// 8 MiB, so at most a few extensions happen per file.
const MANIFEST_RESERVE: u64 = 1 << 20;

/// The MANIFEST as its writers share it (see the module docs).
pub struct ManifestLog {
    pending: Mutex<Pending>,
    /// Mirror of `Pending::framed`, readable without a lock.
    framed: AtomicU64,
    synced: AtomicU64,
    /// The `framed` total a synced write must see durable before it is
    /// acknowledged (`owe`): raised past an ingestion's record, not past a
    /// flush's, whose data a synced WAL holds anyway.
    owed: AtomicU64,
    io: Mutex<Io>,
    /// Held across each fsync through a handle and the recording of its
    /// outcome (module docs).
    fsync_serial: Mutex<()>,
    poisoned: Mutex<Option<Error>>,
    poisoned_flag: AtomicBool,
}

impl Default for ManifestLog {
    fn default() -> Self {
        ManifestLog::new()
    }
}

impl ManifestLog {
    /// A log with no file yet (`switch_to` opens one).
    pub fn new() -> ManifestLog {
        ManifestLog {
            pending: Mutex::new(Pending {
                bytes: Vec::new(),
                framed: 0,
            }),
            framed: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            owed: AtomicU64::new(0),
            io: Mutex::new(Io {
                file: None,
                written: 0,
                reserved: 0,
            }),
            fsync_serial: Mutex::new(()),
            poisoned: Mutex::new(None),
            poisoned_flag: AtomicBool::new(false),
        }
    }

    /// Queues one whole framed record for the file; returns the `framed`
    /// total that makes it durable once `synced` reaches it. Memory only.
    pub fn push(&self, record: &[u8]) -> Result<u64> {
        self.check()?;
        let mut p = self.pending.lock();
        p.bytes.extend_from_slice(record);
        p.framed += record.len() as u64;
        self.framed.store(p.framed, Ordering::Release);
        Ok(p.framed)
    }

    /// The error that poisoned the log, if any.
    pub fn check(&self) -> Result<()> {
        if self.poisoned_flag.load(Ordering::Acquire) {
            if let Some(e) = &*self.poisoned.lock() {
                return Err(e.clone());
            }
        }
        Ok(())
    }

    /// Stops every further write after `e` (see the module docs).
    pub fn poison(&self, e: Error) {
        let mut p = self.poisoned.lock();
        if p.is_none() {
            *p = Some(e);
        }
        self.poisoned_flag.store(true, Ordering::Release);
    }

    /// Whether some framed record is not known durable (always, once
    /// poisoned).
    pub fn has_unsynced(&self) -> bool {
        self.poisoned_flag.load(Ordering::Acquire)
            || self.synced.load(Ordering::Acquire) < self.framed.load(Ordering::Acquire)
    }

    /// Marks every record framed so far as owed by later synced writes
    /// (see `owes`): called after an ingestion's record is framed, before
    /// its sequence number is published.
    pub fn owe(&self) {
        self.owed
            .fetch_max(self.framed.load(Ordering::Acquire), Ordering::AcqRel);
    }

    /// Whether an owed record (`owe`) is not known durable (always, once
    /// poisoned): a synced write syncs the MANIFEST first, so it never
    /// survives a crash that an ingestion before it does not. Records
    /// nobody owes (a flush's or a queued ingestion's placement, which a
    /// crash may lose without losing data: `db::flush`) do not make a
    /// synced write wait.
    pub fn owes(&self) -> bool {
        self.poisoned_flag.load(Ordering::Acquire)
            || self.synced.load(Ordering::Acquire) < self.owed.load(Ordering::Acquire)
    }

    /// Writes every framed record out and makes it durable. Never takes the
    /// state lock; the fsync itself runs without `io` where the file allows
    /// it, so a concurrent caller's write-out and sync are not held up by
    /// this one's.
    pub fn sync(&self) -> Result<()> {
        self.check()?;
        let target = self.framed.load(Ordering::Acquire);
        if self.synced.load(Ordering::Acquire) >= target {
            return Ok(());
        }
        let (handle, upto) = {
            let mut guard = self.io.lock();
            let io = &mut *guard;
            self.check()?;
            let (bytes, upto) = {
                let mut p = self.pending.lock();
                (std::mem::take(&mut p.bytes), p.framed)
            };
            let Some(file) = io.file.as_mut() else {
                return Err(Error::internal("no MANIFEST open"));
            };
            let end = file.len() + bytes.len() as u64;
            if end > io.reserved {
                // Best effort, like the reservation itself: a failure here
                // (the disk full) reappears in the append if it matters.
                io.reserved = end + MANIFEST_RESERVE;
                let _ = file.preallocate(io.reserved);
            }
            let written = if bytes.is_empty() {
                Ok(())
            } else {
                file.append(&bytes).and_then(|()| file.flush())
            };
            if let Err(e) = written {
                self.poison(e.clone());
                return Err(e);
            }
            io.written = upto;
            if self.synced.load(Ordering::Acquire) >= upto {
                return Ok(());
            }
            match file.sync_handle() {
                Some(h) => (h, upto),
                None => {
                    // No handle: the fsync runs under `io`.
                    if let Err(e) = file.sync() {
                        self.poison(e.clone());
                        return Err(e);
                    }
                    self.synced.fetch_max(upto, Ordering::AcqRel);
                    return Ok(());
                }
            }
        };
        // One fsync at a time, its failure recorded before the next one
        // runs and checks (module docs; the loom model's
        // `finds_unserialised_fsyncs` shows the race without it).
        let _one = self.fsync_serial.lock();
        if let Err(e) = handle.sync() {
            self.poison(e.clone());
            return Err(e);
        }
        self.synced.fetch_max(upto, Ordering::AcqRel);
        self.check()
    }

    /// Closes the file, at `Db::close` once the last record is synced and
    /// nothing can frame another: dropping it gives back the space reserved
    /// past the records (`vfs::os`), so a closed database's MANIFEST ends
    /// where its records do, as it did when closing dropped the whole
    /// database (now a closed `Db` may live on, shared, and an iterator or
    /// snapshot may keep its state alive). A sync after this fails.
    pub fn close(&self) {
        let file = self.io.lock().file.take();
        drop(file);
    }

    /// Replaces the file with `file`, whose content (a snapshot of the
    /// whole state, already synced, and named by CURRENT) makes every
    /// record framed so far redundant. Records still pending are written to
    /// the old file first (unsynced: the new file supersedes them). Called
    /// with the state lock held, so nothing is framed meanwhile.
    pub fn switch_to(&self, file: Box<dyn WritableFile>) -> Result<()> {
        self.check()?;
        let mut guard = self.io.lock();
        let io = &mut *guard;
        let (bytes, upto) = {
            let mut p = self.pending.lock();
            (std::mem::take(&mut p.bytes), p.framed)
        };
        if let Some(old) = io.file.as_mut() {
            if !bytes.is_empty() {
                // Best effort: a failure here loses nothing the new
                // MANIFEST does not hold.
                let _ = old.append(&bytes).and_then(|()| old.flush());
            }
        }
        io.file = Some(file);
        io.written = upto;
        // Nothing reserved yet: the first `sync` reserves, and its fsync
        // makes the reservation durable with its record.
        io.reserved = 0;
        self.synced.fetch_max(upto, Ordering::AcqRel);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use crate::vfs::{MemVfs, Vfs};
    use std::path::Path;

    #[test]
    fn records_reach_the_file_in_order_and_sync_counts_them() {
        let vfs = MemVfs::new();
        let log = ManifestLog::new();
        assert!(log.sync().is_ok(), "nothing framed: nothing to do");
        log.switch_to(vfs.create(Path::new("/m")).unwrap()).unwrap();
        let a = log.push(b"one").unwrap();
        let b = log.push(b"two").unwrap();
        assert_eq!((a, b), (3, 6));
        assert!(log.has_unsynced());
        assert_eq!(vfs.file_size(Path::new("/m")).unwrap(), 0, "memory only");
        log.sync().unwrap();
        assert!(!log.has_unsynced());
        let got = crate::vfs::read_all(&vfs, Path::new("/m")).unwrap();
        assert_eq!(got, b"onetwo");
    }

    #[test]
    fn a_failed_sync_poisons_the_log() {
        let vfs = crate::vfs::FaultVfs::new();
        vfs.create_dir_all(Path::new("/d")).unwrap();
        let log = ManifestLog::new();
        log.switch_to(vfs.create(Path::new("/d/m")).unwrap())
            .unwrap();
        log.push(b"rec").unwrap();
        vfs.inject(crate::vfs::fault::Fault::eio(
            crate::vfs::fault::Op::Sync,
            1,
        ));
        assert!(log.sync().is_err());
        assert!(log.has_unsynced(), "poisoned: never counted durable");
        assert!(log.push(b"more").is_err(), "nothing framed after");
        assert!(log.sync().is_err(), "the error stays");
    }
}
