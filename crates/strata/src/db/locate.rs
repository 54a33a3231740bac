//! Deciding, before anything is created, whether a path holds a database.
//!
//! Opening with `create_if_missing` off must leave the file system exactly
//! as it was when the path is not a database: no directory, no `LOCK` file.
//! So the path is examined first, and the answer is a distinct error for
//! each case a user can meet: nothing there ([`Error::NotFound`]), a plain
//! file or a directory without a `CURRENT` file ([`Error::NotADatabase`]).

use super::filenames;
use crate::error::{Error, Result};
use crate::vfs::Vfs;
use std::path::Path;

/// Fails unless `dir` is a database directory or one may be created there.
/// A plain file is never one, whatever `create_if_missing` says. (The
/// in-memory file system has no directories: there, a directory exists when
/// files lie under it.)
pub(crate) fn check_database_dir(vfs: &dyn Vfs, dir: &Path, create_if_missing: bool) -> Result<()> {
    if vfs.exists(&filenames::current(dir)) {
        return Ok(());
    }
    let path = dir.display().to_string();
    let missing = || {
        if create_if_missing {
            Ok(())
        } else {
            Err(Error::NotFound { path: path.clone() })
        }
    };
    let names = match vfs.list(dir) {
        Ok(names) => names,
        Err(_) if !vfs.exists(dir) => return missing(),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(Error::NotADatabase {
                path,
                reason: "it is a file, not a directory".into(),
            })
        }
        Err(e) => return Err(e),
    };
    if names.is_empty() && !vfs.exists(dir) {
        return missing();
    }
    if create_if_missing {
        return Ok(());
    }
    let reason = if names.is_empty() {
        "the directory is empty".to_string()
    } else {
        format!(
            "the directory has no CURRENT file ({} other entries)",
            names.len()
        )
    };
    Err(Error::NotADatabase { path, reason })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemVfs;

    /// The in-memory file system has no directories: a database on it is
    /// found by its CURRENT file, and a path with nothing under it is
    /// missing.
    #[test]
    fn in_memory_paths() {
        let vfs = MemVfs::new();
        let dir = Path::new("/db");
        assert!(matches!(
            check_database_dir(&vfs, dir, false),
            Err(Error::NotFound { .. })
        ));
        assert!(check_database_dir(&vfs, dir, true).is_ok());
        let mut f = vfs
            .create(&dir.join("notes"))
            .unwrap_or_else(|e| panic!("{e}"));
        f.sync().unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            check_database_dir(&vfs, dir, false),
            Err(Error::NotADatabase { .. })
        ));
        vfs.create(&filenames::current(dir))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(check_database_dir(&vfs, dir, false).is_ok());
    }
}
