//! Model of version reference counting: a table file is not deleted while
//! any reader, iterator or compaction holds a version that names it, nor
//! while a MANIFEST record that is framed but not yet synced could leave a
//! crash recovering a version that names it; a table being written is not
//! deleted before its version is installed.
//!
//! Mirrors, in their order:
//! - `strata/src/db/mod.rs`: `DbInner::super_version` (a reader clones the
//!   `Arc<SuperVersion>` under the `sv` read lock; an iterator keeps it for
//!   its life) and `install_super_version` (under the state lock, the new
//!   super version replaces the old under the `sv` write lock);
//! - `strata/src/version/set.rs`: `log_and_apply_unsynced` (under the state
//!   lock: the edit applied to `current`, its record framed and pushed to
//!   the `ManifestLog`, the new version `remember`ed as a `Weak`; no disk
//!   I/O), `has_unsynced`, and `live_files` (the current version, plus
//!   every remembered version whose `Weak` still upgrades);
//! - `strata/src/version/manifest_log.rs`: `ManifestLog::push` (`framed`
//!   raised under `pending`, `Release`) and `sync` (`framed` loaded; under
//!   `io`, every pending record taken and written; the fsync with `io`
//!   released, as with a `sync_handle`; then `synced.fetch_max`);
//! - `strata/src/db/flush.rs`: `flush_one` (a file number `floor` taken
//!   without the lock, put in `pending_outputs` under it, the table written
//!   with no lock held; under the state lock `floor` removed, the edit
//!   applied and framed (unsynced: the flush never syncs it itself), the
//!   memtable dropped from the queue, the super version installed and the
//!   obsolete-file pass run) and `delete_obsolete_files` (the doomed files
//!   chosen: every table that no live version names and that is below
//!   every pending floor, and the WAL once a record moved the log number
//!   past it; nothing doomed: done, no sync; else while any record is
//!   unsynced, up to three times: sync with the state lock released
//!   (`MutexGuard::unlocked`) and choose again; still unsynced: delete
//!   nothing; else delete them, with the state lock held);
//! - `strata/src/db/compact.rs`: `run` (inputs picked from `current` under
//!   the state lock, that version held as `pinned`; outputs protected by a
//!   pending floor like a flush's; under the state lock the floor removed
//!   and the edit applied and framed; synced without the lock; then, under
//!   it, the super version installed, `pinned` dropped and the
//!   obsolete-file pass);
//! - `strata/src/db/commit.rs` (`CommitPipeline::commit`'s ingestion arm)
//!   and `Db::ingest` in `strata/src/db/mod.rs`: an ingestion whose excise
//!   removes a table applies its edit *and installs the super version*
//!   under the state lock, and its caller syncs the record only later,
//!   without any lock: the one place a table leaves every version through
//!   a record that is not yet durable, which only `delete_obsolete_files`'
//!   unsynced check keeps from deletion.
//!   (Its own linked files, protected by a pending floor in `Db::ingest`
//!   until after that sync, are left out: the floor is modelled by the
//!   flush's and the compaction's.)
//!
//! Replaced: a version is its list of table numbers; a MANIFEST record is
//! the list of the version it leads to (a replay of the synced records
//! ends at the last one synced); the directory is a set of numbers behind
//! a lock (one file-system operation at a time); reading a table is
//! checking that it exists; the memtable a flush writes is one flag, and
//! the WAL holding its data one more flag of the directory, made obsolete
//! by the flush's record.
//! `Arc`/`Weak` of versions are std's: loom has no `Weak` (its `Arc` cannot
//! be downgraded), so reference counts are not permuted themselves, while
//! every lock they are taken under is loom's, which is what orders a
//! reader against an installer and the obsolete-file pass.
//!
//! Checked in every interleaving: every table of the version a reader (or
//! compaction) holds exists while it holds it; no table is deleted while
//! the version the synced MANIFEST records would recover names it (a crash
//! then would name a missing file); the WAL holding the flushed memtable's
//! data is deleted only once the flush's record (naming its table) is
//! synced (else a crash loses the data: the table is named by no durable
//! record, the WAL gone); at the end, once nothing holds
//! an old version, one more obsolete-file pass leaves exactly the current
//! version's tables (none missing, none leaked), and the synced MANIFEST
//! recovers the current version.

use crate::lock;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::{Mutex, MutexGuard, RwLock};
use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Weak};

/// A deliberate mistake planted in the model (`None`: the real code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// The real code.
    None,
    /// `live_files` counts only the current version, not the versions
    /// readers still hold.
    CurrentOnly,
    /// The obsolete-file pass ignores `pending_outputs`.
    NoPendingFloor,
    /// A reader (an iterator) copies its version's file list and lets the
    /// super version go before it reads the tables.
    UnpinnedRead,
    /// The obsolete-file pass does not wait for unsynced MANIFEST records
    /// (no `has_unsynced` check): it treats files that an applied but
    /// unsynced edit removed as deletable.
    DeleteUnsynced,
    /// The obsolete-file pass syncs only when a table is doomed, and
    /// deletes an obsolete WAL without syncing (the flush's record, which
    /// makes the WAL obsolete, is never synced by the flush itself).
    DeleteWalUnsynced,
}

/// A version: the tables it names.
pub struct Version {
    files: Vec<u64>,
}

/// What a reader holds (`SuperVersion`; the memtables left out).
pub struct SuperVersion {
    version: Arc<Version>,
}

/// The part of `DbState` / `VersionSet` the model needs.
struct State {
    current: Arc<Version>,
    handed_out: Vec<Weak<Version>>,
    pending_outputs: BTreeSet<u64>,
    /// Memtables in the immutable queue (the flush's one).
    imm: u32,
    /// The record that moved the log number past the WAL holding the
    /// flush's memtable (the flush's own), once applied.
    wal_obsolete_by: Option<u64>,
}

/// `ManifestLog`: records framed in memory, written and synced outside the
/// state lock. Records are counted from 1; record 0 is the snapshot the
/// MANIFEST starts with.
struct Manifest {
    /// `Pending::framed` (the bytes themselves left out).
    pending: Mutex<u64>,
    framed: AtomicU64,
    synced: AtomicU64,
    io: Mutex<()>,
    /// The checks' own bookkeeping, not the engine's: what each record's
    /// version names, and a copy of `synced` raised in the same step (std
    /// types, so they add no scheduling points to permute).
    records: std::sync::Mutex<Vec<Vec<u64>>>,
    durable: std::sync::atomic::AtomicU64,
}

impl Manifest {
    /// `ManifestLog::push` (called under the state lock).
    fn push(&self, files: &[u64]) -> u64 {
        let mut p = lock(&self.pending);
        *p += 1;
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(files.to_vec());
        self.framed.store(*p, Ordering::Release);
        *p
    }

    /// `ManifestLog::has_unsynced`.
    fn has_unsynced(&self) -> bool {
        self.synced.load(Ordering::Acquire) < self.framed.load(Ordering::Acquire)
    }

    /// `ManifestLog::sync`: never takes the state lock.
    fn sync(&self) {
        let target = self.framed.load(Ordering::Acquire);
        if self.synced.load(Ordering::Acquire) >= target {
            return;
        }
        let upto = {
            let _io = lock(&self.io);
            // The write-out: every record framed so far.
            let upto = *lock(&self.pending);
            if self.synced.load(Ordering::Acquire) >= upto {
                return;
            }
            upto
        };
        // The fsync ran with `io` released (`sync_handle`): another job may
        // write out and sync meanwhile.
        self.synced.fetch_max(upto, Ordering::AcqRel);
        self.durable
            .fetch_max(upto, std::sync::atomic::Ordering::SeqCst);
    }

    /// The number of the last record a crash now would replay.
    fn durable_record(&self) -> u64 {
        self.durable.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The tables of the version a crash now would recover.
    fn durable(&self) -> Vec<u64> {
        let s = self.durable_record() as usize;
        self.records.lock().unwrap_or_else(|e| e.into_inner())[s].clone()
    }
}

/// The database: state lock, super version, file numbers, MANIFEST,
/// directory.
pub struct Db {
    state: Mutex<State>,
    sv: RwLock<Arc<SuperVersion>>,
    next_file: AtomicU64,
    manifest: Manifest,
    fs: Mutex<BTreeSet<u64>>,
    /// Whether the WAL holding the flush's memtable is in the directory
    /// (behind `fs`'s lock, with the tables).
    wal: std::sync::atomic::AtomicBool,
    bug: Bug,
}

impl Db {
    /// A database whose current version names `files` (all present, the
    /// MANIFEST synced).
    pub fn new(files: &[u64], bug: Bug) -> Db {
        let current = Arc::new(Version {
            files: files.to_vec(),
        });
        let next = files.iter().max().copied().unwrap_or(0) + 1;
        Db {
            state: Mutex::new(State {
                handed_out: vec![Arc::downgrade(&current)],
                current: Arc::clone(&current),
                pending_outputs: BTreeSet::new(),
                imm: 1,
                wal_obsolete_by: None,
            }),
            sv: RwLock::new(Arc::new(SuperVersion { version: current })),
            next_file: AtomicU64::new(next),
            manifest: Manifest {
                pending: Mutex::new(0),
                framed: AtomicU64::new(0),
                synced: AtomicU64::new(0),
                io: Mutex::new(()),
                records: std::sync::Mutex::new(vec![files.to_vec()]),
                durable: std::sync::atomic::AtomicU64::new(0),
            },
            fs: Mutex::new(files.iter().copied().collect()),
            wal: std::sync::atomic::AtomicBool::new(true),
            bug,
        }
    }

    /// `DbInner::super_version`.
    pub fn super_version(&self) -> Arc<SuperVersion> {
        let sv = match self.sv.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        Arc::clone(&sv)
    }

    /// `DbInner::new_file_number`.
    fn new_file_number(&self) -> u64 {
        self.next_file.fetch_add(1, Ordering::SeqCst)
    }

    /// `log_and_apply_unsynced` + `remember`, under the state lock: the
    /// version is current and its record framed, nothing on disk yet.
    /// Returns the record's number (`push`'s `framed` total).
    fn apply(&self, st: &mut State, files: Vec<u64>) -> u64 {
        let record = self.manifest.push(&files);
        st.current = Arc::new(Version { files });
        st.handed_out.retain(|w| w.strong_count() > 0);
        st.handed_out.push(Arc::downgrade(&st.current));
        record
    }

    /// `install_super_version`, under the state lock.
    fn install_super_version(&self, st: &State) {
        let sv = Arc::new(SuperVersion {
            version: Arc::clone(&st.current),
        });
        match self.sv.write() {
            Ok(mut g) => *g = sv,
            Err(p) => *p.into_inner() = sv,
        }
    }

    /// `VersionSet::live_files`.
    fn live_files(&self, st: &mut State) -> HashSet<u64> {
        st.handed_out.retain(|w| w.strong_count() > 0);
        let mut live: HashSet<u64> = st.current.files.iter().copied().collect();
        if self.bug != Bug::CurrentOnly {
            for w in &st.handed_out {
                if let Some(v) = w.upgrade() {
                    live.extend(v.files.iter().copied());
                }
            }
        }
        live
    }

    /// `delete_obsolete_files`: entered and left with the state lock held,
    /// which it releases only to sync the MANIFEST.
    fn delete_obsolete_files<'a>(&'a self, mut st: MutexGuard<'a, State>) {
        let mut tries = 0;
        let (gone, wal) = loop {
            let (gone, wal) = self.obsolete(&mut st);
            // Whether the pass makes the sync wait: anything doomed (the
            // planted bug overlooks the WAL).
            let doomed = !gone.is_empty() || (wal && self.bug != Bug::DeleteWalUnsynced);
            if !doomed || self.bug == Bug::DeleteUnsynced || !self.manifest.has_unsynced() {
                break (gone, wal);
            }
            tries += 1;
            if tries > 3 {
                return;
            }
            // `MutexGuard::unlocked(st, || db.manifest.sync())`.
            drop(st);
            self.manifest.sync();
            st = lock(&self.state);
        };
        let durable = self.manifest.durable();
        let mut fs = lock(&self.fs);
        for n in gone {
            assert!(
                !durable.contains(&n),
                "table {n} deleted while the synced MANIFEST names it (a crash now recovers a missing file)"
            );
            fs.remove(&n);
        }
        if wal {
            let by = st.wal_obsolete_by.unwrap_or(u64::MAX);
            assert!(
                self.manifest.durable_record() >= by,
                "the WAL holding the flushed memtable was deleted before the flush's record was synced (a crash now loses its data)"
            );
            self.wal.store(false, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// `obsolete_files`: the tables no live version names, below every
    /// pending floor, and whether the WAL is obsolete and still there.
    fn obsolete(&self, st: &mut State) -> (Vec<u64>, bool) {
        let live = self.live_files(st);
        let floor = match self.bug {
            Bug::NoPendingFloor => None,
            _ => st.pending_outputs.iter().next().copied(),
        };
        let fs = lock(&self.fs);
        let gone = fs
            .iter()
            .copied()
            .filter(|n| !(live.contains(n) || floor.is_some_and(|f| *n >= f)))
            .collect();
        let wal =
            st.wal_obsolete_by.is_some() && self.wal.load(std::sync::atomic::Ordering::SeqCst);
        (gone, wal)
    }

    /// Reading a table: it must exist.
    fn read_table(&self, n: u64, who: &str) {
        assert!(
            lock(&self.fs).contains(&n),
            "{who}: table {n} of the version it holds was deleted"
        );
    }

    /// A reader or iterator: holds a super version while it reads every
    /// table of its version (with a scheduling point between tables).
    pub fn read(&self) {
        let sv = self.super_version();
        let files = sv.version.files.clone();
        let held = if self.bug == Bug::UnpinnedRead {
            drop(sv);
            None
        } else {
            Some(sv)
        };
        for n in files {
            loom::thread::yield_now();
            self.read_table(n, "a reader");
        }
        drop(held);
    }

    /// `flush_one`: one new L0 table.
    pub fn flush(&self) {
        let floor = self.new_file_number();
        lock(&self.state).pending_outputs.insert(floor);
        // `write_l0`: the table's number is above the floor.
        let n = self.new_file_number();
        lock(&self.fs).insert(n);
        let mut st = lock(&self.state);
        st.pending_outputs.remove(&floor);
        let mut files = st.current.files.clone();
        files.push(n);
        // Written, never synced by the flush; the record moves the log
        // number past the memtable's WAL.
        let record = self.apply(&mut st, files);
        st.wal_obsolete_by = Some(record);
        st.imm -= 1;
        self.install_super_version(&st);
        self.delete_obsolete_files(st);
    }

    /// `compact::run`: every table of the current version merged into one.
    pub fn compact(&self) {
        let pinned = Arc::clone(&lock(&self.state).current);
        let inputs = pinned.files.clone();
        let floor = self.new_file_number();
        lock(&self.state).pending_outputs.insert(floor);
        // `write_outputs`: read the inputs, write the output.
        for &n in &inputs {
            self.read_table(n, "a compaction");
        }
        let out = self.new_file_number();
        lock(&self.fs).insert(out);
        let mut st = lock(&self.state);
        st.pending_outputs.remove(&floor);
        let mut files: Vec<u64> = st
            .current
            .files
            .iter()
            .copied()
            .filter(|n| !inputs.contains(n))
            .collect();
        files.push(out);
        self.apply(&mut st, files);
        // Written and synced without the state lock; published once durable.
        drop(st);
        self.manifest.sync();
        let st = lock(&self.state);
        self.install_super_version(&st);
        drop(pinned);
        self.delete_obsolete_files(st);
    }

    /// An ingestion whose excise removes table `gone` (the commit
    /// pipeline's ingestion arm: applied and published under the state
    /// lock), then `Db::ingest` syncing the record without any lock.
    pub fn ingest_excise(&self, gone: u64) {
        let mut st = lock(&self.state);
        let files: Vec<u64> = st
            .current
            .files
            .iter()
            .copied()
            .filter(|&n| n != gone)
            .collect();
        self.apply(&mut st, files);
        self.install_super_version(&st);
        drop(st);
        self.manifest.sync();
    }

    /// Once nothing holds an old version: one more obsolete-file pass, after
    /// which exactly the current version's tables must exist, and the
    /// synced MANIFEST must recover the current version.
    pub fn check_quiescent(&self) {
        self.delete_obsolete_files(lock(&self.state));
        let st = lock(&self.state);
        let want: BTreeSet<u64> = st.current.files.iter().copied().collect();
        let have = lock(&self.fs).clone();
        assert_eq!(
            have, want,
            "the directory's tables (left) are not the current version's (right)"
        );
        assert_eq!(st.imm, 0, "the flush left its memtable in the queue");
        assert!(!self.manifest.has_unsynced(), "a record was never synced");
        assert_eq!(
            self.manifest.durable(),
            st.current.files,
            "the synced MANIFEST does not recover the current version"
        );
    }
}

/// Which jobs run beside the reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// A flush and a compaction.
    FlushCompact,
    /// A flush and an ingestion whose excise removes table 1.
    FlushExcise,
}

/// One execution: a reader and two jobs at once over a version of two
/// tables; then the quiescent check.
pub fn run(scenario: Scenario, bug: Bug) {
    let db = loom::sync::Arc::new(Db::new(&[1, 2], bug));
    let threads: Vec<_> = [0, 1]
        .into_iter()
        .map(|i| {
            let db = loom::sync::Arc::clone(&db);
            loom::thread::spawn(move || match (i, scenario) {
                (0, _) => db.flush(),
                (_, Scenario::FlushCompact) => db.compact(),
                (_, Scenario::FlushExcise) => db.ingest_excise(1),
            })
        })
        .collect();
    db.read();
    for t in threads {
        t.join().expect("model thread");
    }
    db.check_quiescent();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(scenario: Scenario, bug: Bug) {
        crate::explore(move || run(scenario, bug));
    }

    /// Runs the model with `bug` planted and returns loom's failure (the
    /// test fails if loom finds none).
    fn finds(scenario: Scenario, bug: Bug) -> String {
        crate::planted_failure(|| check(scenario, bug))
    }

    #[test]
    fn reader_flush_and_compaction() {
        check(Scenario::FlushCompact, Bug::None);
    }

    #[test]
    fn reader_flush_and_excising_ingestion() {
        check(Scenario::FlushExcise, Bug::None);
    }

    #[test]
    fn finds_live_files_ignoring_readers() {
        let m = finds(Scenario::FlushCompact, Bug::CurrentOnly);
        assert!(m.contains("was deleted"), "{m}");
    }

    #[test]
    fn finds_missing_pending_floor() {
        let m = finds(Scenario::FlushCompact, Bug::NoPendingFloor);
        assert!(m.contains("not the current version's"), "{m}");
    }

    #[test]
    fn finds_unpinned_reader() {
        let m = finds(Scenario::FlushCompact, Bug::UnpinnedRead);
        assert!(m.contains("a reader: table"), "{m}");
    }

    #[test]
    fn finds_deletion_before_an_unsynced_record() {
        let m = finds(Scenario::FlushExcise, Bug::DeleteUnsynced);
        // Either deletion the pass may make too early: the table the
        // excise removed, or the WAL the flush's record made obsolete.
        assert!(
            m.contains("while the synced MANIFEST names it")
                || m.contains("before the flush's record was synced"),
            "{m}"
        );
    }

    #[test]
    fn finds_wal_deleted_before_the_flush_record_is_synced() {
        let m = finds(Scenario::FlushCompact, Bug::DeleteWalUnsynced);
        assert!(m.contains("before the flush's record was synced"), "{m}");
    }
}
