//! Lowers the CPU priority of a database's flush and compaction threads
//! ([`Options::background_nice`](super::Options::background_nice)), as
//! RocksDB's `Env::LowerThreadPoolCPUPriority` does for its pools.
//!
//! Why: on a busy machine the slowest foreground Puts were the Put thread
//! preempted in the middle of its memtable insert by a compaction or flush
//! thread and kept off the CPU until the next scheduler tick (4 ms at
//! HZ=250; docs/bench-history/w4-foreground-latency.md, session 25).
//! A thread with a higher nice value
//! has a smaller weight in the kernel's fair scheduler: it gets a smaller
//! share of a contended CPU and, with a later virtual deadline, it rarely
//! preempts a normal thread on waking up or at a tick.
//!
//! Invariants:
//! - Only the calling thread is changed, once, as it starts (each
//!   background thread calls [`lower_current_thread`] first thing).
//!   Threads a caller waits for (the ingest call's block walk, the WAL
//!   thread that bounds the unsynced-write window and whose locks a synced
//!   write takes, the arena's prefault thread that prepares the next
//!   memtable chunk) keep the application's priority.
//! - The change is relative (the opener's nice plus the option, at most
//!   19), so it never asks for a higher priority than the thread had, which
//!   an unprivileged process may not.
//! - A refusal is not an error: the thread then runs at the priority it
//!   inherited, as it would with the option at zero. Opening never fails
//!   because of it.

/// The highest nice value Linux accepts (the lowest priority).
const MAX_NICE: i32 = 19;

/// Raises the calling thread's nice value by `delta` (clamped so the
/// result is at most 19). Returns the nice value the thread runs at now,
/// or `None` if it is unchanged (`delta` is zero, the platform has no
/// per-thread nice value, or the kernel refused).
pub(crate) fn lower_current_thread(delta: u8) -> Option<i32> {
    if delta == 0 || cfg!(miri) {
        return None;
    }
    imp::lower(i32::from(delta))
}

#[cfg(target_os = "linux")]
mod imp {
    use super::MAX_NICE;
    use rustix::process::{getpriority_process, setpriority_process};

    pub(super) fn lower(delta: i32) -> Option<i32> {
        // On Linux PRIO_PROCESS with a thread id addresses that one thread
        // (nice is per thread there, unlike POSIX's per process).
        let tid = Some(rustix::thread::gettid());
        let now = getpriority_process(tid).ok()?;
        let target = (now + delta).min(MAX_NICE);
        if target <= now {
            return None;
        }
        setpriority_process(tid, target).ok().map(|()| target)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    // Elsewhere a nice value is the process's, not a thread's: lowering it
    // would slow the application's threads too, so nothing is changed.
    pub(super) fn lower(_delta: i32) -> Option<i32> {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    fn nice_of_this_thread() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
    }

    #[test]
    fn lowering_changes_only_the_calling_thread_and_clamps_at_19() {
        let before = nice_of_this_thread();
        let (a, seen_a) = std::thread::spawn(|| (lower_current_thread(5), nice_of_this_thread()))
            .join()
            .unwrap();
        assert_eq!(a, Some((before + 5).min(MAX_NICE)).filter(|&n| n > before));
        assert_eq!(seen_a, (before + 5).min(MAX_NICE));
        let (b, seen_b) = std::thread::spawn(|| (lower_current_thread(200), nice_of_this_thread()))
            .join()
            .unwrap();
        assert_eq!(seen_b, MAX_NICE);
        assert!(b.is_none() || b == Some(MAX_NICE));
        let (c, seen_c) = std::thread::spawn(|| (lower_current_thread(0), nice_of_this_thread()))
            .join()
            .unwrap();
        assert_eq!((c, seen_c), (None, before));
        assert_eq!(
            nice_of_this_thread(),
            before,
            "the caller's own thread is unchanged"
        );
    }
}
