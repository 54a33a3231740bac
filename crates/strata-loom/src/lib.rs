//! [loom](https://docs.rs/loom) models of the pieces of Strata's
//! synchronisation that the rest of the engine's correctness rests on:
//!
//! - [`commit`] mirrors the commit pipeline (`strata/src/db/commit.rs`:
//!   `CommitPipeline::commit`, `follow`, `lead`, `write_group`,
//!   `insert_group`, `wait_done`, `release_slot`): the queue of writers,
//!   the leader/follower hand-off (spin, then sleep on the writer's
//!   condition variable; `state`, `turn`), sequence numbers assigned under
//!   the queue lock, the members of a group inserting its batches in
//!   parallel, and the publication of `visible_seq` by the last of them,
//!   after the whole group is in the memtable; pipelined groups (a group
//!   leaves the queue once its WAL record is framed, inserts beside the
//!   next group and publishes in sequence order) and a rotation waiting
//!   for their inserts before it seals the memtable.
//! - [`version_refs`] mirrors version reference counting and the MANIFEST
//!   window (`strata/src/version/set.rs`: `log_and_apply_unsynced`,
//!   `remember`, `live_files`; `strata/src/version/manifest_log.rs`:
//!   `push`, `sync`, `has_unsynced`; `strata/src/db/mod.rs`:
//!   `super_version`, `install_super_version`, `ingest`;
//!   `strata/src/db/commit.rs`: an ingestion's excise;
//!   `strata/src/db/flush.rs`: `flush_one`, `delete_obsolete_files`;
//!   `strata/src/db/compact.rs`: `run`): readers holding a super version,
//!   edits applied and framed under the state lock but synced and
//!   published outside it, the pending-outputs floor and the obsolete-file
//!   pass that waits for every record to be synced.
//! - [`stall`] mirrors write backpressure (`strata/src/db/commit.rs`:
//!   `make_room`, `rotate_now`, `notify_room`; the flush and compaction
//!   threads' loops in `flush.rs` and `compact.rs`): a leader stopped for
//!   queue room or L0 depth, woken by the job that makes room or by a
//!   background error, which it and every later write then return.
//! - [`manifest_log`] mirrors the MANIFEST log
//!   (`strata/src/version/manifest_log.rs`: `push`, `sync`, `poison`,
//!   `switch_to`; `strata/src/version/set.rs`: `log_and_apply_unsynced`,
//!   `write_new_manifest`): write-out under `io`, the fsync outside it,
//!   a failed fsync poisoning the log (on a disk that loses the failed
//!   write-back and reports it once), a MANIFEST switch beside a sync.
//! - [`wal_rotation`] mirrors WAL rotation with the WAL thread running
//!   (`strata/src/db/commit.rs`: `rotate_now`, `write_out`,
//!   `finish_retired`, `sync_retired`, `flush_wal`): the retired WAL
//!   written and synced before any byte of the next one.
//!
//! The engine's code itself does not run under loom (its locks are
//! `parking_lot`'s, its WAL and memtable are real files and skiplists);
//! each model keeps the real code's locks, atomics, orderings and the order
//! of its steps, and replaces the data (WAL records, memtable entries,
//! table files) by what the checks need. A change to the synchronisation
//! of the mirrored functions must be made here too: both modules say, step
//! by step, which line of the engine each step stands for.
//!
//! Each model takes a `Bug` switch that plants a deliberate mistake; the
//! tests show the model holds without one and that loom finds every
//! planted one (a deadlock in a child process: loom aborts on one).
//!
//! Run (under half a minute once built, release build):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p strata-loom
//! ```
//!
//! Without `--cfg loom` the crate is empty.

#[cfg(loom)]
pub mod commit;
#[cfg(loom)]
pub mod manifest_log;
#[cfg(loom)]
pub mod stall;
#[cfg(loom)]
pub mod version_refs;
#[cfg(loom)]
pub mod wal_rotation;

/// Locks `m` (a panic in another model thread already fails the run).
#[cfg(loom)]
pub(crate) fn lock<T>(m: &loom::sync::Mutex<T>) -> loom::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Runs `model` under loom, exploring every interleaving within the
/// preemption bound (`LOOM_MAX_PREEMPTIONS`; else 3, or 4 with
/// `STRATA_LONG`), and prints how many it explored.
#[cfg(all(loom, test))]
pub(crate) fn explore(model: impl Fn() + Sync + Send + 'static) {
    let long = std::env::var_os("STRATA_LONG").is_some();
    explore_within(if long { 4 } else { 3 }, model);
}

/// [`explore`] with a default preemption bound of `bound`
/// (`LOOM_MAX_PREEMPTIONS` still overrides it).
#[cfg(all(loom, test))]
pub(crate) fn explore_within(bound: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(bound);
    }
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n = std::sync::Arc::clone(&runs);
    b.check(move || {
        n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model()
    });
    eprintln!(
        "loom: {} interleavings explored",
        runs.load(std::sync::atomic::Ordering::Relaxed)
    );
}

/// Runs the ignored test `name` (a model with a bug planted that can
/// make a thread wait forever) in a child process, the test binary itself,
/// and returns its output; panics unless the child failed. (loom aborts the
/// process on a deadlock: its cleanup panics while unwinding.)
#[cfg(all(loom, test))]
pub(crate) fn planted_in_child(name: &str) -> String {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            name,
            "--test-threads",
            "1",
            "--nocapture",
        ])
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("running the test binary");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("running 1 test"),
        "no test named {name}"
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "loom found no failure: {err}");
    err
}

/// [`planted_in_child`], and loom must have reported a deadlock.
#[cfg(all(loom, test))]
pub(crate) fn planted_deadlock(name: &str) {
    let err = planted_in_child(name);
    assert!(err.contains("deadlock; threads"), "{err}");
}

/// Runs `model` (a loom model with a bug planted) and returns loom's
/// failure message; panics if loom found no failing interleaving, so a
/// planted-bug test fails when its model stops catching the bug.
#[cfg(all(loom, test))]
pub(crate) fn planted_failure(model: impl FnOnce()) -> String {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(model));
    let e = r.expect_err("loom found no failing interleaving for the planted bug");
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}
