//! Opening databases for commands: those that only read never create one.

use anyhow::Result;
use std::path::Path;
use strata::{Db, Options};

/// Opens the database at `path`, which must exist: a missing path, a plain
/// file or a directory that is not a Strata database is an error, and
/// nothing is created. For the commands that read (and `delete`).
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
