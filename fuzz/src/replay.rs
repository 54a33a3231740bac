//! The corpus replay loop shared by the stable-Rust fuzz tests
//! (`crates/strata/tests/fuzz_replay.rs`,
//! `crates/strata-import/tests/fuzz_replay.rs`), which include this file
//! and `mutate.rs` with `#[path]`: every committed input of a target's
//! corpus (`fuzz/corpus/<target>/`), then seeded mutations of each, the
//! empty input and random bytes, each run under `catch_unwind`.
//!
//! Contract: a panicking input is written to `target/fuzz-failures/` and
//! the test fails naming that file, so a failure is reproducible with the
//! real fuzzer (`cargo fuzz run <target> <file>`). The mutation stream is
//! seeded per target, so a run is deterministic for a given corpus.

use crate::mutate::mutate;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::path::{Path, PathBuf};

/// How one replay runs.
pub struct Replay {
    /// Mutations per corpus input, and random inputs per target.
    pub iters: usize,
    /// Mixed with the target name's length into the RNG seed.
    pub seed: u64,
    /// Random inputs are up to this many bytes long.
    pub max_random_len: usize,
    /// The corpus must hold at least this many `seed-*` files.
    pub min_seeds: usize,
}

/// `STRATA_FUZZ_ITERS` if set, else `default`.
pub fn iters_from_env(default: usize) -> usize {
    std::env::var("STRATA_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// `fuzz/corpus/<target>`.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

/// The corpus files of `target`, sorted by name (empty if the folder is
/// missing: `replay` then fails on the seed count, naming the folder).
pub fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(corpus_dir(target))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().is_file())
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read(e.path()).unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Runs `f` on `data`; on a panic saves the input and fails naming it.
pub fn run_one(target: &str, what: &str, f: fn(&[u8]), data: &[u8]) {
    if std::panic::catch_unwind(|| f(data)).is_err() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-failures");
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join(format!("{target}-{}", what.replace('/', "_")));
        let _ = std::fs::write(&path, data);
        panic!(
            "fuzz target {target} panicked on {what}; input saved at {}",
            path.display()
        );
    }
}

/// Replays target `name` (body `f`) as `cfg` says; returns a summary line
/// (inputs and executions).
pub fn replay(name: &str, f: fn(&[u8]), cfg: &Replay) -> String {
    let inputs = corpus(name);
    let seeds = inputs
        .iter()
        .filter(|(n, _)| n.starts_with("seed-"))
        .count();
    assert!(
        seeds >= cfg.min_seeds,
        "{seeds} seed inputs for {name} in {} (at least {} wanted)",
        corpus_dir(name).display(),
        cfg.min_seeds
    );
    let mut rng = StdRng::seed_from_u64(cfg.seed ^ name.len() as u64);
    let mut execs = 0u64;
    for (file, data) in &inputs {
        run_one(name, file, f, data);
        execs += 1;
    }
    for (i, (file, data)) in inputs.iter().enumerate() {
        let other = &inputs[(i + 1) % inputs.len()].1;
        for k in 0..cfg.iters {
            let m = mutate(&mut rng, data, other);
            run_one(name, &format!("{file}-mutation-{k}"), f, &m);
            execs += 1;
        }
    }
    run_one(name, "empty", f, &[]);
    for k in 0..cfg.iters {
        let n = rng.gen_range(0..cfg.max_random_len);
        let d: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        run_one(name, &format!("random-{k}"), f, &d);
        execs += 1;
    }
    format!("{name}: {} inputs, {execs} executions", inputs.len())
}
