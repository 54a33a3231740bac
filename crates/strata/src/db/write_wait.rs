//! Foreground write waits: how long writes waited, and on what.
//!
//! Every phase of a commit that a writer can wait on is timed and counted
//! under its cause ([`WaitCause`]) in a fixed-bucket log2 histogram of
//! microseconds, with the longest wait per cause and overall. A follower
//! (a writer whose batch a leader wrote for it) counts its whole wait under
//! the leader's longest phase when that phase took at least half of it (it
//! was stuck behind a rotation, say), else under `commit queue`.
//!
//! Each thread also keeps its own running totals per cause
//! ([`thread_write_waits`]), so a caller can tell what one write of its
//! own waited on by reading them before and after it (the benchmark
//! driver's per-Put trace: which phase the slowest Puts spent their time
//! in). Adding to them is a thread-local add per wait counted, no lock.
//!
//! Invariants: recording is lock-free (relaxed atomics: the figures are
//! statistics, read without a consistent cut); a wait is counted once, under
//! one cause, in the database's histograms and in the totals of the thread
//! that waited; a wait of `slow` or longer is also logged as a
//! [`Event::WriteWait`](crate::events::Event::WriteWait) by the caller.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What a foreground write waited on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitCause {
    /// Earlier write groups (its turn as leader, or a leader writing for it).
    CommitQueue,
    /// The hard L0 depth limit (writes stopped).
    L0Stop,
    /// A full immutable-memtable queue (writes stopped).
    MemtableQueueFull,
    /// The gentle slowdown past the soft limits.
    Slowdown,
    /// Switching to a new memtable and WAL.
    Rotation,
    /// Appending to the WAL and handing it to the operating system.
    WalWrite,
    /// Syncing the WAL (a write with `sync`).
    WalSync,
    /// Syncing an ingestion's MANIFEST record ahead of a synced write.
    Manifest,
    /// Inserting the group into the memtable (a fresh arena chunk's page
    /// faults; the CPU taken by background work).
    MemtableInsert,
}

impl WaitCause {
    pub const ALL: [WaitCause; 9] = [
        WaitCause::CommitQueue,
        WaitCause::L0Stop,
        WaitCause::MemtableQueueFull,
        WaitCause::Slowdown,
        WaitCause::Rotation,
        WaitCause::WalWrite,
        WaitCause::WalSync,
        WaitCause::Manifest,
        WaitCause::MemtableInsert,
    ];

    /// The name in metrics, events and `strata lsm`.
    pub fn name(self) -> &'static str {
        match self {
            WaitCause::CommitQueue => "commit queue",
            WaitCause::L0Stop => "stop: l0 sublevels",
            WaitCause::MemtableQueueFull => "stop: memtable queue full",
            WaitCause::Slowdown => "slowdown",
            WaitCause::Rotation => "memtable rotation",
            WaitCause::WalWrite => "wal write",
            WaitCause::WalSync => "wal sync",
            WaitCause::Manifest => "manifest sync",
            WaitCause::MemtableInsert => "memtable insert",
        }
    }
}

thread_local! {
    /// This thread's waits so far, in nanoseconds, per cause (`WaitCause as
    /// usize`), over every database it wrote to.
    static THREAD_WAITS: [Cell<u64>; 9] = const { [const { Cell::new(0) }; 9] };
}

/// The calling thread's foreground write waits so far, in nanoseconds per
/// cause (the names of [`WriteWaitMetrics::cause`]), summed over every
/// write it made to any database since it started. Read it before and
/// after a write to see what that write waited on; time a write spent
/// outside every counted phase (its own code, the allocator, being
/// preempted between phases) is in none of them.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let db = strata::Db::open_default(dir.path())?;
/// let before = strata::thread_write_waits();
/// db.put("k", "v")?;
/// let after = strata::thread_write_waits();
/// let insert = after.iter().zip(before.iter())
///     .find(|((cause, _), _)| *cause == "memtable insert")
///     .map(|((_, a), (_, b))| a - b);
/// assert!(insert.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn thread_write_waits() -> [(&'static str, u64); 9] {
    THREAD_WAITS.with(|t| std::array::from_fn(|i| (WaitCause::ALL[i].name(), t[i].get())))
}

/// Buckets of the histogram: bucket `i` counts waits below `2^i` µs (and at
/// least `2^(i-1)`); the last bucket takes everything longer.
pub const BUCKETS: usize = 28;

#[derive(Default)]
struct CauseStats {
    count: AtomicU64,
    total_micros: AtomicU64,
    max_micros: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

/// The histograms of every cause.
#[derive(Default)]
pub(crate) struct WriteWaits {
    causes: [CauseStats; 9],
}

fn bucket(micros: u64) -> usize {
    // 0 µs -> 0, 1 -> 1, 2..=3 -> 2, 4..=7 -> 3, ...
    ((u64::BITS - micros.leading_zeros()) as usize).min(BUCKETS - 1)
}

impl WriteWaits {
    /// Counts one wait.
    pub fn record(&self, cause: WaitCause, d: Duration) {
        let us = d.as_micros().min(u64::MAX as u128) as u64;
        let c = &self.causes[cause as usize];
        c.count.fetch_add(1, Ordering::Relaxed);
        c.total_micros.fetch_add(us, Ordering::Relaxed);
        c.max_micros.fetch_max(us, Ordering::Relaxed);
        c.buckets[bucket(us)].fetch_add(1, Ordering::Relaxed);
        let ns = d.as_nanos().min(u64::MAX as u128) as u64;
        THREAD_WAITS.with(|t| {
            let c = &t[cause as usize];
            c.set(c.get().wrapping_add(ns));
        });
    }

    /// The figures of every cause that was recorded at least once.
    pub fn metrics(&self) -> Vec<WriteWaitMetrics> {
        WaitCause::ALL
            .iter()
            .filter_map(|&cause| {
                let c = &self.causes[cause as usize];
                let count = c.count.load(Ordering::Relaxed);
                (count > 0).then(|| WriteWaitMetrics {
                    cause: cause.name().to_string(),
                    count,
                    total_micros: c.total_micros.load(Ordering::Relaxed),
                    max_micros: c.max_micros.load(Ordering::Relaxed),
                    histogram: c
                        .buckets
                        .iter()
                        .enumerate()
                        .map(|(i, b)| (1u64 << i, b.load(Ordering::Relaxed)))
                        .filter(|&(_, n)| n > 0)
                        .collect(),
                })
            })
            .collect()
    }
}

/// Foreground write waits of one cause, since open (see [`Metrics`](crate::Metrics)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteWaitMetrics {
    /// What writes waited on: `commit queue`, `memtable rotation`,
    /// `wal write`, `wal sync`, `manifest sync`, `memtable insert`, `slowdown`,
    /// `stop: l0 sublevels` or `stop: memtable queue full`.
    pub cause: String,
    /// Waits counted.
    pub count: u64,
    /// Their total, in microseconds.
    pub total_micros: u64,
    /// The longest, in microseconds.
    pub max_micros: u64,
    /// `(below, count)`: waits shorter than `below` microseconds (and at
    /// least half of it), for each non-empty power-of-two bucket, shortest
    /// first; the last bucket also holds everything longer.
    pub histogram: Vec<(u64, u64)>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    #[test]
    fn buckets_are_powers_of_two() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 1);
        assert_eq!(bucket(2), 2);
        assert_eq!(bucket(3), 2);
        assert_eq!(bucket(4), 3);
        assert_eq!(bucket(1023), 10);
        assert_eq!(bucket(1024), 11);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn records_count_total_max_and_histogram_per_cause() {
        let w = WriteWaits::default();
        w.record(WaitCause::Rotation, Duration::from_micros(3));
        w.record(WaitCause::Rotation, Duration::from_micros(1500));
        w.record(WaitCause::WalWrite, Duration::from_micros(0));
        let m = w.metrics();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].cause, "memtable rotation");
        assert_eq!(
            (m[0].count, m[0].total_micros, m[0].max_micros),
            (2, 1503, 1500)
        );
        assert_eq!(m[0].histogram, vec![(4, 1), (2048, 1)]);
        assert_eq!(m[1].cause, "wal write");
        assert_eq!(m[1].histogram, vec![(1, 1)]);
    }

    /// Each thread's totals hold its own waits only, under their cause.
    #[test]
    fn thread_totals_count_the_calling_threads_waits_by_cause() {
        let w = std::sync::Arc::new(WriteWaits::default());
        let get = |name: &str| {
            thread_write_waits()
                .iter()
                .find(|(c, _)| *c == name)
                .map(|&(_, n)| n)
                .unwrap()
        };
        let rot0 = get("memtable rotation");
        let ins0 = get("memtable insert");
        w.record(WaitCause::Rotation, Duration::from_micros(3));
        w.record(WaitCause::Rotation, Duration::from_nanos(500));
        let other = std::sync::Arc::clone(&w);
        std::thread::spawn(move || other.record(WaitCause::MemtableInsert, Duration::from_secs(1)))
            .join()
            .unwrap();
        assert_eq!(get("memtable rotation") - rot0, 3_500);
        assert_eq!(get("memtable insert") - ins0, 0, "another thread's wait");
        let names: Vec<_> = thread_write_waits().iter().map(|(c, _)| *c).collect();
        let all: Vec<_> = WaitCause::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names, all);
    }
}
