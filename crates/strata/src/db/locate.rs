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
pub(crate) fn check_database_dir(vfs: &dyn Vfs, dir: &Path, create_if_missing: bool) -> Result<()> {
    if create_if_missing {
        return Ok(());
    }
    let path = dir.display().to_string();
    if !vfs.exists(dir) {
        return Err(Error::NotFound { path });
    }
    let names = match vfs.list(dir) {
        Ok(names) => names,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(Error::NotADatabase {
                path,
                reason: "it is a file, not a directory".into(),
            })
        }
        Err(e) => return Err(e),
    };
    if vfs.exists(&filenames::current(dir)) {
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
