//! Names of the files in a database directory.
//!
//! ```text
//! CURRENT          name of the live MANIFEST, replaced atomically by rename
//! MANIFEST-NNNNNN  log of version edits
//! NNNNNN.log       write-ahead log
//! NNNNNN.sst       table file
//! LOCK             held while the database is open
//! scratch/         tools' temporary files (the import's sort runs), made
//!                  under the lock; emptied by every read-write open
//! ```
//! All numbered files share one counter, so a number names one file.

use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Wal(u64),
    Table(u64),
    Manifest(u64),
    Current,
    Lock,
    Temp,
}

pub fn wal(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.log"))
}

pub fn table(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.sst"))
}

pub fn manifest(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("MANIFEST-{n:06}"))
}

pub fn current(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

pub fn lock(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

/// The scratch directory (see [`crate::Db::scratch_dir`]).
pub fn scratch(dir: &Path) -> PathBuf {
    dir.join("scratch")
}

pub fn temp(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.dbtmp"))
}

pub fn parse(name: &str) -> Option<FileKind> {
    match name {
        "CURRENT" => return Some(FileKind::Current),
        "LOCK" => return Some(FileKind::Lock),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return n.parse().ok().map(FileKind::Manifest);
    }
    let (num, ext) = name.split_once('.')?;
    let n: u64 = num.parse().ok()?;
    match ext {
        "log" => Some(FileKind::Wal(n)),
        "sst" => Some(FileKind::Table(n)),
        "dbtmp" => Some(FileKind::Temp),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        let d = Path::new("/db");
        for (p, k) in [
            (wal(d, 7), FileKind::Wal(7)),
            (table(d, 1234567), FileKind::Table(1234567)),
            (manifest(d, 3), FileKind::Manifest(3)),
            (current(d), FileKind::Current),
            (lock(d), FileKind::Lock),
        ] {
            let name = p.file_name().unwrap().to_str().unwrap();
            assert_eq!(parse(name), Some(k), "{name}");
        }
        assert_eq!(parse("foo.txt"), None);
        assert_eq!(parse("MANIFEST-x"), None);
    }
}
