//! Helpers shared by the import's integration tests.

#![allow(clippy::unwrap_used)] // tests may unwrap
#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;

/// Nothing is left in the database's scratch directory (where imports
/// keep their temporary files) or beside it.
pub fn no_temp_dirs(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let n = e.unwrap().file_name().to_string_lossy().to_string();
        assert!(!n.starts_with("import"), "left behind: {n}");
    }
    let left: Vec<String> = std::fs::read_dir(dir.join("scratch"))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind in scratch/: {left:?}");
}
