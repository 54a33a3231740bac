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

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::path::{Path, PathBuf};

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(corpus_dir(target))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Runs `f` on `data`; on a panic saves the input and fails naming it.
fn run_one(target: &str, what: &str, f: fn(&[u8]), data: &[u8]) {
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

#[test]
fn import_corpora_and_mutations_never_panic() {
    let iters: usize = std::env::var("STRATA_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let mut summary = Vec::new();
    for (name, f) in import_targets::IMPORT_TARGETS {
        let inputs = corpus(name);
        assert!(
            inputs
                .iter()
                .filter(|(n, _)| n.starts_with("seed-"))
                .count()
                >= 3,
            "too few seeds for {name} in {}",
            corpus_dir(name).display()
        );
        let mut rng = StdRng::seed_from_u64(0x1e0 ^ name.len() as u64);
        let mut execs = 0u64;
        for (file, data) in &inputs {
            run_one(name, file, f, data);
            execs += 1;
        }
        for (i, (file, data)) in inputs.iter().enumerate() {
            let other = &inputs[(i + 1) % inputs.len()].1;
            for k in 0..iters {
                let m = mutate::mutate(&mut rng, data, other);
                run_one(name, &format!("{file}-mutation-{k}"), f, &m);
                execs += 1;
            }
        }
        run_one(name, "empty", f, &[]);
        for k in 0..iters {
            let n = rng.gen_range(0..256);
            let d: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            run_one(name, &format!("random-{k}"), f, &d);
            execs += 1;
        }
        summary.push(format!(
            "{name}: {} inputs, {execs} executions",
            inputs.len()
        ));
    }
    eprintln!("import fuzz replay: {}", summary.join("; "));
}
