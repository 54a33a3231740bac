//! Helpers shared by the visualiser's integration tests.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::time::SystemTime;

/// Names, sizes, modification times and contents of every entry in `dir`
/// (a subdirectory with empty contents), by name: equal before and after
/// means a read-only tool changed nothing there.
pub fn dir_listing(dir: &Path) -> Vec<(String, u64, SystemTime, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.len(),
                m.modified().unwrap(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}
