//! Replays the import fuzz targets' committed corpora
//! (`fuzz/corpus/import_*/`) through their bodies
//! (`fuzz/src/import_targets.rs`) in an ordinary `cargo test`, then runs
//! each target on seeded mutations of every input (`fuzz/src/mutate.rs`)
//! and on random bytes: the stable-Rust stand-in for cargo-fuzz, so CI
//! needs no nightly toolchain. `STRATA_FUZZ_ITERS=n` sets the mutations
//! per input (default 500). A panicking input is saved under
//! `target/fuzz-failures/` and named in the failure.
#![allow(clippy::unwrap_used)] // tests may unwrap

#[path = "../../../fuzz/src/import_targets.rs"]
mod import_targets;

#[path = "../../../fuzz/src/mutate.rs"]
mod mutate;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;
use replay::{iters_from_env, replay, Replay};

#[test]
fn import_corpora_and_mutations_never_panic() {
    let cfg = Replay {
        iters: iters_from_env(500),
        seed: 0x1e0,
        max_random_len: 256,
        min_seeds: 3,
    };
    let summary: Vec<String> = import_targets::IMPORT_TARGETS
        .iter()
        .map(|(name, f)| replay(name, *f, &cfg))
        .collect();
    eprintln!("import fuzz replay: {}", summary.join("; "));
}
