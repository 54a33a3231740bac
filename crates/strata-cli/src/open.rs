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
    fresh: bool,
}

/// [`or_create`], noting whether the path existed before.
pub fn or_create_undoable(path: &Path, opts: Options) -> Result<(Db, Created)> {
    let fresh = !path.exists();
    let db = or_create(path, opts)?;
    let created = Created {
        path: path.to_path_buf(),
        fresh,
    };
    Ok((db, created))
}

impl Created {
    /// The command failed with `e` and committed nothing: closes `db` and,
    /// if this command created the database, removes it again (nothing
    /// else can be in it: the lock kept everyone else out while it was
    /// open). Returns `e`, with any failure to remove added to it.
    pub fn undo(self, db: Db, e: anyhow::Error) -> anyhow::Error {
        drop(db);
        if !self.fresh {
            return e;
        }
        match std::fs::remove_dir_all(&self.path) {
            // Said, since the error may speak of what the command left in
            // the database (a direct or batch import's rows).
            Ok(()) => anyhow::anyhow!(
                "{e:#} (the database {} this command created was removed again, with all \
                 it held)",
                self.path.display()
            ),
            Err(re) => e.context(format!(
                "(and removing the database {} this command created failed: {re})",
                self.path.display()
            )),
        }
    }
}
