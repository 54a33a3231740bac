//! Opening databases for commands. Those that only read (`get`, `scan`,
//! `dump`, `lsm`) open read-only: they never create, rename or delete
//! anything, so they work on a full disk or a read-only directory, and fail
//! on a path that is not a database instead of creating one.

use anyhow::Result;
use std::path::Path;
use strata::{Db, Options};

/// Opens the database at `path` for a command that only reads: nothing in
/// the directory is created, renamed or deleted (no LOCK, no new MANIFEST;
/// the WAL is replayed into memory only), and a missing path, a plain file
/// or a directory that is not a Strata database is an error.
pub fn read_only(path: &Path) -> Result<Db> {
    Ok(Db::open_read_only(path, Options::default())?)
}

/// Opens the database at `path` for writing; it must exist: a missing path,
/// a plain file or a directory that is not a Strata database is an error,
/// and nothing is created (`delete`).
pub fn existing(path: &Path) -> Result<Db> {
    let opts = Options {
        create_if_missing: false,
        ..Options::default()
    };
    Ok(Db::open(path, opts)?)
}

/// Opens the database at `path`, creating it if needed (`put`, `load`,
/// `ingest`).
pub fn or_create(path: &Path, opts: Options) -> Result<Db> {
    Ok(Db::open(
        path,
        Options {
            create_if_missing: true,
            ..opts
        },
    )?)
}

/// Whether a command created the database it opened, so that a command
/// that fails before committing anything (`import`, `ingest`,
/// `ingest-table`) can leave the file system as it found it.
pub struct Created {
    path: std::path::PathBuf,
    what: Before,
}

/// What was at the path before the command opened it.
#[derive(Clone, Copy)]
enum Before {
    /// Nothing: the command made the directory.
    Missing,
    /// An empty directory: the command filled it.
    EmptyDir,
    /// Something else (a database, or anything the open refuses).
    Other,
}

/// [`or_create`], noting whether the path was missing or an empty
/// directory before: either way the database is this command's to remove
/// again.
pub fn or_create_undoable(path: &Path, opts: Options) -> Result<(Db, Created)> {
    let what = if !path.exists() {
        Before::Missing
    } else if path.is_dir() && is_empty_dir(path) {
        Before::EmptyDir
    } else {
        Before::Other
    };
    let db = or_create(path, opts)?;
    let created = Created {
        path: path.to_path_buf(),
        what,
    };
    Ok((db, created))
}

/// Whether `dir` is a directory with nothing in it (false if it cannot be
/// listed: then the database is not taken for this command's own).
fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
}

/// Removes everything in `dir`, leaving `dir` itself (a symbolic link in it
/// is removed, not followed).
fn empty_dir(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

impl Created {
    /// The command failed with `e` and committed nothing: closes `db` and,
    /// if this command created the database (in a missing path or an
    /// empty directory), removes it again (nothing else can be in it: the
    /// lock kept everyone else out while it was open): the directory it
    /// made, or the contents of the empty directory it was given, which
    /// stays. Returns `e`, with any failure to remove added to it.
    pub fn undo(self, db: Db, e: anyhow::Error) -> anyhow::Error {
        drop(db);
        let (removed, what, kept) = match self.what {
            Before::Other => return e,
            Before::Missing => (
                std::fs::remove_dir_all(&self.path),
                format!("the database {} this command created", self.path.display()),
                "",
            ),
            Before::EmptyDir => (
                empty_dir(&self.path),
                format!(
                    "the database this command created in the empty directory {}",
                    self.path.display()
                ),
                "; the directory stays, empty",
            ),
        };
        match removed {
            // Said, since the error may speak of what the command left in
            // the database (a direct or batch import's rows).
            Ok(()) => anyhow::anyhow!("{e:#} ({what} was removed again, with all it held{kept})"),
            Err(re) => e.context(format!("(and removing {what} failed: {re})")),
        }
    }
}
