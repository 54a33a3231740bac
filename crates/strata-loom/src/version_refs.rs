//! Model of version reference counting: a table file is not deleted while
//! any reader, iterator or compaction holds a version that names it, and
//! a table being written is not deleted before its version is installed.
//!
//! Mirrors, in their order:
//! - `strata/src/db/mod.rs`: `DbInner::super_version` (a reader clones the
//!   `Arc<SuperVersion>` under the `sv` read lock; an iterator keeps it for
//!   its life) and `install_super_version` (under the state lock, the new
//!   super version replaces the old under the `sv` write lock);
//! - `strata/src/version/set.rs`: `log_and_apply` installing `current` and
//!   `remember`ing it as a `Weak`, and `live_files` (the current version,
//!   plus every remembered version whose `Weak` still upgrades);
//! - `strata/src/db/flush.rs`: `flush_one` (a file number `floor` taken
//!   without the lock, put in `pending_outputs` under it, the table written
//!   with no lock held, then under the state lock: `floor` removed, the
//!   version installed, the obsolete-file pass) and
//!   `delete_obsolete_files` (under the state lock: deletes every table
//!   that no live version names and that is below every pending floor);
//! - `strata/src/db/compact.rs`: `run` (inputs picked from `current` under
//!   the state lock, that version held as `pinned` until the result is
//!   installed; outputs protected by a pending floor like a flush's).
//!
//! Replaced: a version is its list of table numbers; the directory is a set
//! of numbers behind a lock (one file-system operation at a time); reading
//! a table is checking that it exists. `Arc`/`Weak` of versions are std's:
//! loom has no `Weak` (its `Arc` cannot be downgraded), so reference counts
//! are not permuted themselves, while every lock they are taken under is
//! loom's, which is what orders a reader against an installer and the
//! obsolete-file pass.
//!
//! Checked in every interleaving: every table of the version a reader (or
//! compaction) holds exists while it holds it; at the end, once nothing
//! holds an old version, one more obsolete-file pass leaves exactly the
//! current version's tables (none missing, none leaked).

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
}

/// The database: state lock, super version, file numbers, directory.
pub struct Db {
    state: Mutex<State>,
    sv: RwLock<Arc<SuperVersion>>,
    next_file: AtomicU64,
    fs: Mutex<BTreeSet<u64>>,
    bug: Bug,
}

impl Db {
    /// A database whose current version names `files` (all present).
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
            }),
            sv: RwLock::new(Arc::new(SuperVersion { version: current })),
            next_file: AtomicU64::new(next),
            fs: Mutex::new(files.iter().copied().collect()),
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

    /// `log_and_apply` + `remember` + `install_super_version`, under the
    /// state lock.
    fn install(&self, st: &mut State, files: Vec<u64>) {
        st.current = Arc::new(Version { files });
        st.handed_out.retain(|w| w.strong_count() > 0);
        st.handed_out.push(Arc::downgrade(&st.current));
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

    /// `delete_obsolete_files`, under the state lock.
    fn delete_obsolete_files(&self, st: &mut State) {
        let live = self.live_files(st);
        let floor = match self.bug {
            Bug::NoPendingFloor => None,
            _ => st.pending_outputs.iter().next().copied(),
        };
        lock(&self.fs).retain(|n| live.contains(n) || floor.is_some_and(|f| *n >= f));
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
        self.install(&mut st, files);
        self.delete_obsolete_files(&mut st);
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
        self.install(&mut st, files);
        drop(pinned);
        self.delete_obsolete_files(&mut st);
    }

    /// Once nothing holds an old version: one more obsolete-file pass, after
    /// which exactly the current version's tables must exist.
    pub fn check_quiescent(&self) {
        let mut st = lock(&self.state);
        self.delete_obsolete_files(&mut st);
        let want: BTreeSet<u64> = st.current.files.iter().copied().collect();
        let have = lock(&self.fs).clone();
        assert_eq!(
            have, want,
            "the directory's tables (left) are not the current version's (right)"
        );
    }
}

/// Locks `m` (a panic in another model thread already fails the run).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// One execution: a reader, a flush and a compaction at once over a
/// version of two tables; then the quiescent check.
pub fn run(bug: Bug) {
    let db = loom::sync::Arc::new(Db::new(&[1, 2], bug));
    let threads: Vec<_> = [0, 1]
        .into_iter()
        .map(|i| {
            let db = loom::sync::Arc::clone(&db);
            loom::thread::spawn(move || match i {
                0 => db.flush(),
                _ => db.compact(),
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

    /// Runs the model under loom within the preemption bound
    /// (LOOM_MAX_PREEMPTIONS, default 3 here).
    fn check(bug: Bug) {
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = Some(3);
        }
        let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let n = std::sync::Arc::clone(&runs);
        b.check(move || {
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            run(bug)
        });
        eprintln!(
            "loom: {} interleavings explored",
            runs.load(std::sync::atomic::Ordering::Relaxed)
        );
    }

    /// Runs the model with `bug` planted and returns loom's failure (the
    /// test fails if loom finds none).
    fn finds(bug: Bug) -> String {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(bug)));
        let e = r.expect_err("loom found no failing interleaving for the planted bug");
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    }

    #[test]
    fn reader_flush_and_compaction() {
        check(Bug::None);
    }

    #[test]
    fn finds_live_files_ignoring_readers() {
        let m = finds(Bug::CurrentOnly);
        assert!(m.contains("was deleted"), "{m}");
    }

    #[test]
    fn finds_missing_pending_floor() {
        let m = finds(Bug::NoPendingFloor);
        assert!(m.contains("not the current version's"), "{m}");
    }

    #[test]
    fn finds_unpinned_reader() {
        let m = finds(Bug::UnpinnedRead);
        assert!(m.contains("a reader: table"), "{m}");
    }
}
