//! `strata crash-test`: a short run (SIGKILL and power-cut rounds for two
//! seconds) must succeed and report what it verified; longer runs use
//! `--duration` by hand (docs/reliability.md).
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::process::Command;

#[test]
fn crash_test_driver_survives_a_short_run() {
    let d = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["crash-test", "--duration", "2"])
        .arg(d.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("SIGKILLs") && out.contains("0 lost"), "{out}");
}
