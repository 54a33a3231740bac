//! Helpers shared by the `strata` command's integration tests.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::process::Command;

/// Runs the `strata` binary with `args`: (exit status was success, stdout,
/// stderr).
pub fn strata(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}
