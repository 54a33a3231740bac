//! `strata check DB`: verifies a database directory without changing it
//! (`strata::check`): every checksum of every table, WAL and MANIFEST
//! record, and the tree's invariants. Then, when the database holds SQL
//! tables (a catalog), that each table's indexes hold exactly one entry per
//! row (`strata_import::consistency`, on a read-only open: a repair that
//! dropped an index's file leaves every file sound and the table wrong).
//! Prints each problem with its file and offset (or its table and index),
//! and fails (exit status 1) if there is any; warnings (what a crash leaves
//! and recovery repairs) are printed but do not fail. A database another
//! process has open (its `LOCK` held, asked without taking it) is said so
//! first: the files change under the check, so its findings are a
//! snapshot, and a table no version names is then work in progress, not a
//! crash's leftover (the library words those warnings so).

use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct CheckArgs {
    /// The database directory.
    pub db: PathBuf,
}

pub fn run(a: CheckArgs) -> Result<()> {
    // What is no database at all (nothing there, a file, a directory
    // without CURRENT or MANIFEST) is refused by the check itself, in the
    // words opening it uses.
    let r = strata::check::check_dir(&a.db)?;
    if r.in_use.is_held() {
        let by = match r.in_use {
            strata::vfs::LockState::HeldElsewhere { pid: Some(pid) } => {
                format!("another process (pid {pid})")
            }
            _ => "another process".to_string(),
        };
        outln!(
            "note: {} is open by {by}, which may be writing to it: what follows is a \
             snapshot, and files that process is writing (a flush or compaction in \
             progress) can read as unfinished",
            a.db.display()
        )?;
    }
    for w in &r.warnings {
        outln!("warning: {w}")?;
    }
    for p in &r.problems {
        outln!("problem: {p}")?;
    }
    let t = check_tables(&a.db, !r.is_ok());
    for p in &t.problems {
        outln!("problem: {p}")?;
    }
    if let Some(n) = &t.note {
        outln!("note: {n}")?;
    }
    let problems = r.problems.len() + t.problems.len();
    // A table that could not be read through added none or only some of
    // its entries: the count says so rather than pass as the whole.
    let unread = match r.tables_unreadable {
        0 => String::new(),
        n => format!("; {n} could not be read through, so the count is partial"),
    };
    outln!(
        "checked {} MANIFEST records, {} tables ({} entries{}), {} WALs ({} records), \
         {} SQL tables ({} rows, {} index entries): {} problems, {} warnings",
        r.manifest_records,
        r.tables,
        r.table_entries,
        unread,
        r.wals,
        r.wal_records,
        t.tables,
        t.rows,
        t.index_entries,
        problems,
        r.warnings.len()
    )?;
    if problems > 0 {
        bail!("{}: {} problems found", a.db.display(), problems);
    }
    Ok(())
}

/// What the table-level check found, as lines to print.
#[derive(Default)]
pub struct TableCheck {
    /// SQL tables checked, their rows and secondary index entries.
    pub tables: u64,
    pub rows: u64,
    pub index_entries: u64,
    /// Each inconsistency (or why the tables could not be checked).
    pub problems: Vec<String>,
    /// Why the tables were not checked, when that is no problem of its own.
    pub note: Option<String>,
}

/// Opens `db` read-only and checks every SQL table's indexes against its
/// rows (`strata_import::consistency`; a table that cannot be read to the
/// end is a problem naming it). A database that does not open, or a catalog
/// that cannot be read, is a problem, unless `damaged` (the engine check
/// already found problems, which explain it): then it is a note, so one
/// damaged file is not reported twice.
pub fn check_tables(db: &std::path::Path, damaged: bool) -> TableCheck {
    let mut t = TableCheck::default();
    let failed = |what: String, t: &mut TableCheck| {
        if damaged {
            t.note = Some(format!("{what} (see the problems above)"));
        } else {
            t.problems.push(what);
        }
    };
    let db = match crate::open::read_only(db) {
        Ok(db) => db,
        Err(e) => {
            failed(
                format!("the SQL tables were not checked: the database does not open: {e:#}"),
                &mut t,
            );
            return t;
        }
    };
    match strata_import::consistency::check_tables(&db) {
        Ok(r) => {
            t.tables = r.tables;
            t.rows = r.rows;
            t.index_entries = r.index_entries;
            t.problems = r.problems.iter().map(|p| p.to_string()).collect();
        }
        Err(e) => failed(
            format!("the SQL tables were not checked: reading the catalog failed: {e}"),
            &mut t,
        ),
    }
    t
}
