//! Model of WAL rotation with the WAL thread running: the old WAL is
//! retired unsynced, and the next write-out (the WAL thread's, a synced
//! write's, or a flush's `sync_retired`) writes and syncs it before any
//! byte of the new WAL.
//!
//! Mirrors, in their order, `strata/src/db/commit.rs`:
//! - `rotate_now` with `wal_flush_interval` > 0 and no WAL retired yet
//!   (the leader slot held: under the WAL lock `wal`, the new WAL replaces
//!   the old, which goes to `retired`; `retired_pending` set, `Release`);
//! - `write_out` (under `io`, in a loop: `finish_retired`; then under
//!   `wal`: if `retired_pending` (`Acquire`) is set again, a rotation
//!   retired the WAL since: start over; else take the pending bytes, and
//!   with `wal` released write them to the WAL's file, and sync it if
//!   asked);
//! - `finish_retired` (if `retired_pending`: under `retired`, the retired
//!   WAL's pending bytes written and synced; `retired` emptied, then
//!   `retired_pending` cleared, `Release`);
//! - `sync_retired` (a flush of the retired memtable: `finish_retired`
//!   under `io`) and `flush_wal` (the WAL thread's round: `write_out`
//!   without a sync);
//! - `write_group` (the leader frames its record under `wal`; a synced
//!   group then runs `write_out` with a sync; an unsynced one leaves the
//!   write-out to the WAL thread).
//!
//! Replaced: a record is its sequence number; a WAL file is the records
//! written to it and how many are synced (one lock for the disk, one for
//! each file as in the engine). Left out: the spare WAL and memtable the
//! thread makes ahead of need (they only move a file creation and an
//! allocation), the flush thread's wake-up the thread makes after its
//! write-out for a rotation (a flush waits for the retired WAL through
//! `sync_retired` whoever wakes it, and polls besides), a second
//! rotation while one WAL is still retired (then the leader writes out and
//! syncs itself, under the slot: nothing runs beside it that this model
//! would add), errors (`commit.rs`'s background error is in `stall.rs`),
//! the directory sync of a new WAL.
//!
//! Checked in every interleaving: when a byte of a WAL is written, every
//! older WAL is written and synced whole (so the disk never holds a later
//! WAL's records without an earlier one's, and a crash keeps a prefix of
//! the records); a synced write returns only once its record and every
//! earlier one are durable; a flush's `sync_retired` returns only once the
//! retired memtable's WAL is durable.
//!
//! Two candidate mistakes the model showed harmless (loom found no failing
//! schedule, so they are not kept as planted bugs): handing the old WAL to
//! `retired` after releasing `wal` (only the leader frames records, and it
//! is the one rotating, so nothing reaches the new WAL in between), and
//! clearing `retired_pending` before the retired WAL's sync (every
//! `finish_retired` runs under `io`, so no other finisher can act on the
//! early clear). The engine keeps the stricter order anyway.

use crate::lock;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{Arc, Mutex};

/// A deliberate mistake planted in the model (`None`: the real code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// The real code.
    None,
    /// `write_out` does not look at `retired_pending` again under `wal`: a
    /// rotation between its `finish_retired` and its take of the pending
    /// bytes lets it write the new WAL first.
    NoRecheck,
    /// `write_out` does not finish the retired WAL first.
    NoFinishRetired,
}

/// A WAL file on the disk.
#[derive(Debug, Default)]
struct File {
    /// Records written, in order.
    written: Vec<u64>,
    /// How many of them a sync made durable.
    synced: usize,
}

/// `wal_buffer::Wal`: records framed and not yet taken by a write-out,
/// and the file.
struct Wal {
    number: usize,
    pending: Vec<u64>,
}

/// The WAL side of `CommitPipeline`, with the disk.
pub struct Pipeline {
    wal: Mutex<Wal>,
    io: Mutex<()>,
    retired: Mutex<Option<Wal>>,
    retired_pending: AtomicBool,
    /// The WAL files, by number (each `Wal::file`'s lock is this one: one
    /// file-system call at a time).
    disk: Mutex<Vec<File>>,
    /// The checks' own record of what was framed into each WAL (std, so it
    /// adds no scheduling points).
    framed: std::sync::Mutex<Vec<Vec<u64>>>,
    /// Set once the rotation happened (the flush waits for its memtable).
    rotated: AtomicBool,
    /// The first order violation `write` saw.
    violation: std::sync::Mutex<Option<String>>,
    bug: Bug,
}

impl Pipeline {
    /// A pipeline writing WAL 0.
    pub fn new(bug: Bug) -> Pipeline {
        Pipeline {
            wal: Mutex::new(Wal {
                number: 0,
                pending: Vec::new(),
            }),
            io: Mutex::new(()),
            retired: Mutex::new(None),
            retired_pending: AtomicBool::new(false),
            disk: Mutex::new(vec![File::default()]),
            framed: std::sync::Mutex::new(vec![Vec::new()]),
            rotated: AtomicBool::new(false),
            violation: std::sync::Mutex::new(None),
            bug,
        }
    }

    /// `write_group`'s framing: record `seq` into the active WAL.
    fn frame(&self, seq: u64) {
        let mut w = lock(&self.wal);
        w.pending.push(seq);
        self.framed.lock().unwrap_or_else(|e| e.into_inner())[w.number].push(seq);
    }

    /// Writes `bytes` to WAL `number`, checking the order on the disk.
    fn write(&self, number: usize, bytes: Vec<u64>) {
        if bytes.is_empty() {
            return;
        }
        let mut d = lock(&self.disk);
        let framed = self.framed.lock().unwrap_or_else(|e| e.into_inner());
        let behind = d
            .iter()
            .enumerate()
            .take(number)
            .find(|(older, f)| f.synced != framed[*older].len())
            .map(|(older, f)| (older, f.synced, framed[older].len()));
        drop(framed);
        if let Some((older, synced, all)) = behind {
            self.fail(format!(
                "WAL {number} written while older WAL {older} holds {synced} synced of {all} records"
            ));
        }
        d[number].written.extend(bytes);
    }

    /// Records a failed check, reported once every thread is joined (loom
    /// aborts on a panic that unwinds through a loom guard or leaves
    /// threads running).
    fn fail(&self, msg: String) {
        let mut v = self.violation.lock().unwrap_or_else(|e| e.into_inner());
        v.get_or_insert(msg);
    }

    /// Syncs WAL `number`.
    fn sync_file(&self, number: usize) {
        let mut d = lock(&self.disk);
        d[number].synced = d[number].written.len();
    }

    /// `rotate_now`, the WAL thread running and no WAL retired.
    pub fn rotate(&self) {
        let next = {
            let mut d = lock(&self.disk);
            d.push(File::default());
            self.framed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Vec::new());
            d.len() - 1
        };
        let mut w = lock(&self.wal);
        let old = std::mem::replace(
            &mut *w,
            Wal {
                number: next,
                pending: Vec::new(),
            },
        );
        *lock(&self.retired) = Some(old);
        self.retired_pending.store(true, Ordering::Release);
        drop(w);
        self.rotated.store(true, Ordering::Release);
    }

    /// `finish_retired` (`io` held).
    fn finish_retired(&self) {
        if !self.retired_pending.load(Ordering::Acquire) {
            return;
        }
        let mut r = lock(&self.retired);
        if let Some(old) = r.as_mut() {
            let bytes = std::mem::take(&mut old.pending);
            self.write(old.number, bytes);
            self.sync_file(old.number);
        }
        *r = None;
        self.retired_pending.store(false, Ordering::Release);
    }

    /// `write_out`.
    pub fn write_out(&self, sync: bool) {
        let _io = lock(&self.io);
        loop {
            if self.bug != Bug::NoFinishRetired {
                self.finish_retired();
            }
            let mut w = lock(&self.wal);
            if self.bug != Bug::NoRecheck
                && self.bug != Bug::NoFinishRetired
                && self.retired_pending.load(Ordering::Acquire)
            {
                continue;
            }
            let bytes = std::mem::take(&mut w.pending);
            let number = w.number;
            drop(w);
            self.write(number, bytes);
            if sync {
                self.sync_file(number);
            }
            return;
        }
    }

    /// `sync_retired`: a flush of the retired memtable, once the rotation
    /// happened. Checks that the memtable's WAL (WAL 0) is durable.
    pub fn flush_retired_memtable(&self) {
        while !self.rotated.load(Ordering::Acquire) {
            loom::thread::yield_now();
        }
        {
            let _io = lock(&self.io);
            self.finish_retired();
        }
        let synced = lock(&self.disk)[0].synced;
        let all = self.framed.lock().unwrap_or_else(|e| e.into_inner())[0].len();
        if synced != all {
            self.fail(format!(
                "sync_retired returned with the retired WAL holding {synced} synced of {all} records"
            ));
        }
    }

    /// Asserts every record up to `seq` is durable.
    fn assert_durable(&self, seq: u64) {
        let mut durable: Vec<u64> = lock(&self.disk)
            .iter()
            .flat_map(|f| f.written[..f.synced].iter().copied())
            .collect();
        durable.sort_unstable();
        if !(1..=seq).all(|s| durable.binary_search(&s).is_ok()) {
            self.fail(format!(
                "a synced write of record {seq} returned with only {durable:?} durable"
            ));
        }
    }
}

/// One execution: the leader (the model's main thread) writes record 1
/// unsynced, rotates, writes record 2 unsynced and record 3 synced; the
/// WAL thread writes out once meanwhile; with `flush`, a flush of the
/// retired memtable runs `sync_retired` once the rotation happened.
pub fn run(flush: bool, bug: Bug) {
    let p = Arc::new(Pipeline::new(bug));
    let wal_thread = {
        let p = Arc::clone(&p);
        loom::thread::spawn(move || p.write_out(false))
    };
    let flusher = flush.then(|| {
        let p = Arc::clone(&p);
        loom::thread::spawn(move || p.flush_retired_memtable())
    });
    p.frame(1);
    p.rotate();
    p.frame(2);
    p.frame(3);
    p.write_out(true);
    p.assert_durable(3);
    wal_thread.join().expect("WAL thread");
    if let Some(f) = flusher {
        f.join().expect("flush");
    }
    let violation = p.violation.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(v) = violation {
        panic!("{v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(flush: bool, bug: Bug) {
        crate::explore(move || run(flush, bug));
    }

    #[test]
    fn wal_thread_beside_a_rotation() {
        check(false, Bug::None);
    }

    #[test]
    fn wal_thread_and_a_flush_beside_a_rotation() {
        check(true, Bug::None);
    }

    #[test]
    fn finds_missing_recheck() {
        let m = crate::planted_failure(|| check(false, Bug::NoRecheck));
        assert!(m.contains("while older WAL 0"), "{m}");
    }

    #[test]
    fn finds_missing_finish_retired() {
        let m = crate::planted_failure(|| check(false, Bug::NoFinishRetired));
        assert!(m.contains("while older WAL 0"), "{m}");
    }
}
