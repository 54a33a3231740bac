//! What recovery checks before it trusts a directory, and what it may do
//! with files the MANIFEST does not name. The rules are in
//! `docs/architecture.md` ("Recovery rules"); in short:
//!
//! - **What the directory is** ([`classify_dir`]): a Strata database has
//!   CURRENT. A RocksDB or LevelDB database is recognised by its own files
//!   (IDENTITY, OPTIONS-*, LOG) and refused by name. A directory without
//!   CURRENT is a new database only if it is empty or holds nothing but what
//!   an interrupted creation leaves (LOCK, MANIFEST-000001, 000001.dbtmp);
//!   otherwise opening refuses and touches nothing.
//! - **What the MANIFEST names** ([`check_referenced`]): every table the
//!   recovered version (or a queued ingestion) names is present with the
//!   size the MANIFEST recorded, and no file holds sequence numbers past
//!   the MANIFEST's last sequence. A mismatch is corruption naming the file.
//! - **What the MANIFEST does not name** ([`audit_unreferenced`]): a table
//!   that an edit of the MANIFEST removed is obsolete by record (a
//!   compaction's input not yet unlinked). Any other table nobody
//!   references is read. If every entry's sequence number is accounted for
//!   (at or below the MANIFEST's flushed sequence, so the data is in listed
//!   tables; an ingestion's; or in a WAL being replayed) it is redundant:
//!   the output of a flush or compaction cut short by a crash. If some entry is accounted for
//!   nowhere, a MANIFEST edit that added the table is missing: corruption
//!   naming the table, and nothing is deleted. A table that cannot be read,
//!   or whose entries carry sequence number 0 (an ingested file, whose
//!   sequence number only the MANIFEST knows), cannot be proven redundant:
//!   a read-write open moves it to `lost/` with a line in `lost/LOG`,
//!   never unlinks it.
//!
//! These checks read only; the caller decides what to delete or move, after
//! they all pass.

use super::filenames::{self, FileKind};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::ParsedKey;
use crate::sstable::{Table, TableOptions};
use crate::version::VersionSet;
use crate::vfs::{self, Vfs};
use std::collections::HashSet;
use std::path::Path;

/// What a directory holds, as far as opening it is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DirKind {
    /// No such directory.
    Missing,
    /// Empty, or only what an interrupted creation of a database leaves.
    Fresh,
    /// A Strata database (CURRENT present).
    Database,
}

/// Files an interrupted `VersionSet::create` may leave behind: the lock,
/// the first MANIFEST (number 1, the first number a new database takes)
/// and CURRENT's temporary file.
fn creation_leftover(name: &str) -> bool {
    matches!(name, "LOCK" | "MANIFEST-000001" | "000001.dbtmp")
}

/// Names that mark a RocksDB or LevelDB database.
fn foreign_marker(name: &str) -> bool {
    name == "IDENTITY"
        || name.starts_with("OPTIONS-")
        || name == "LOG"
        || name.starts_with("LOG.old")
        || name.ends_with(".ldb")
}

/// Lists `dir`, or `None` if it does not exist.
pub(crate) fn list_dir(vfs: &dyn Vfs, dir: &Path) -> Result<Option<Vec<String>>> {
    match vfs.list(dir) {
        Ok(names) => Ok(Some(names)),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Decides what `dir` is before anything in it is read or written.
pub(crate) fn classify_dir(vfs: &dyn Vfs, dir: &Path) -> Result<DirKind> {
    let Some(names) = list_dir(vfs, dir)? else {
        return Ok(DirKind::Missing);
    };
    let mut markers: Vec<&String> = names.iter().filter(|n| foreign_marker(n)).collect();
    if !markers.is_empty() {
        markers.sort();
        let list: Vec<&str> = markers.iter().map(|s| s.as_str()).collect();
        return Err(Error::NotSupported(format!(
            "{} is a RocksDB or LevelDB database (it has {}), not a Strata database; \
             Strata can ingest its SST files (`strata ingest`) or load what `ldb dump` \
             prints (`strata load`), but does not open it",
            dir.display(),
            list.join(", ")
        )));
    }
    if names.iter().any(|n| n == "CURRENT") {
        return Ok(DirKind::Database);
    }
    let mut other: Vec<&String> = names.iter().filter(|n| !creation_leftover(n)).collect();
    if other.is_empty() {
        return Ok(DirKind::Fresh);
    }
    other.sort();
    let shown: Vec<&str> = other.iter().take(5).map(|s| s.as_str()).collect();
    let more = if other.len() > 5 {
        format!(" and {} more", other.len() - 5)
    } else {
        String::new()
    };
    let hint = if other
        .iter()
        .any(|n| matches!(filenames::parse(n), Some(FileKind::Manifest(_))))
    {
        " It has a MANIFEST: if it is a Strata database whose CURRENT was lost, \
         `strata repair` can rebuild CURRENT."
    } else {
        ""
    };
    Err(Error::invalid(format!(
        "{} has no CURRENT but is not empty ({}{more}): it is not a Strata database, \
         and nothing was created or changed in it.{hint}",
        dir.display(),
        shown.join(", ")
    )))
}

/// Every table the recovered state names is present with its recorded
/// size, and no file holds a sequence number past the MANIFEST's last one.
pub(crate) fn check_referenced(vfs: &dyn Vfs, dir: &Path, set: &VersionSet) -> Result<()> {
    let mname = filenames::manifest(dir, set.manifest_number())
        .display()
        .to_string();
    let v = set.current();
    let queued = set.queued_ingestions();
    let files = v.all_files().map(|(l, f)| (Some(l), f.as_ref())).chain(
        queued
            .iter()
            .flat_map(|(_, fs)| fs.iter().map(|f| (None, f))),
    );
    for (level, f) in files {
        let path = filenames::table(dir, f.backing_number());
        let where_ = match level {
            Some(l) => format!("level {l}"),
            None => "a queued ingestion".to_string(),
        };
        if !vfs.exists(&path) {
            return Err(Error::corruption(
                path.display().to_string(),
                0,
                format!("missing: {mname} names it ({where_}, file {})", f.number),
            ));
        }
        // A virtual file's size is that of its key range, not of the
        // physical table.
        if !f.is_virtual() {
            let size = vfs.file_size(&path)?;
            if size != f.size {
                return Err(Error::corruption(
                    path.display().to_string(),
                    size.min(f.size),
                    format!(
                        "the file is {size} bytes but {mname} records {} ({where_}): \
                         it was changed or replaced after it was added",
                        f.size
                    ),
                ));
            }
        }
        let top = f.global_seqno.unwrap_or(f.largest_seq);
        if top > set.last_sequence() {
            return Err(Error::corruption(
                &mname,
                0,
                format!(
                    "file {} holds sequence number {top}, past the MANIFEST's last \
                     sequence {}",
                    f.number,
                    set.last_sequence()
                ),
            ));
        }
    }
    Ok(())
}

/// Sorted, merged inclusive ranges of sequence numbers.
#[derive(Default)]
pub(crate) struct SeqRanges(Vec<(u64, u64)>);

impl SeqRanges {
    pub fn add(&mut self, lo: u64, hi: u64) {
        self.0.push((lo, hi));
    }

    fn finish(&mut self) {
        self.0.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(self.0.len());
        for &(lo, hi) in &self.0 {
            match out.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        self.0 = out;
    }

    fn contains(&self, s: u64) -> bool {
        let i = self.0.partition_point(|&(lo, _)| lo <= s);
        i > 0 && self.0[i - 1].1 >= s
    }
}

/// What an unreferenced table is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unreferenced {
    /// Every entry is accounted for elsewhere: safe to delete.
    Redundant,
    /// Cannot be proven redundant (unreadable, or an ingested file):
    /// moved aside, never deleted.
    Unknown(String),
}

/// Reads every table in `names` that the recovered state does not
/// reference. `replayed` holds the sequence numbers of the WAL records
/// being replayed. Returns each table's verdict, or corruption naming the
/// first table holding data nothing else accounts for.
pub(crate) fn audit_unreferenced(
    vfs: &dyn Vfs,
    dir: &Path,
    names: &[String],
    set: &VersionSet,
    deleted: &HashSet<u64>,
    mut replayed: SeqRanges,
) -> Result<Vec<(u64, Unreferenced)>> {
    let v = set.current();
    let queued = set.queued_ingestions();
    let mut referenced: HashSet<u64> = v.all_files().map(|(_, f)| f.backing_number()).collect();
    // Sequence numbers of ingestions (they may sit above the flushed
    // sequence).
    let mut ingested = SeqRanges::default();
    for (_, f) in v.all_files() {
        if let Some(s) = f.global_seqno {
            ingested.add(s, s);
        }
    }
    for (s, fs) in &queued {
        ingested.add(*s, *s);
        referenced.extend(fs.iter().map(|f| f.backing_number()));
    }
    ingested.finish();
    replayed.finish();
    let flushed = set.flushed_seq();
    let mut out = Vec::new();
    let mut tables: Vec<u64> = names
        .iter()
        .filter_map(|n| match filenames::parse(n) {
            Some(FileKind::Table(t)) if !referenced.contains(&t) => Some(t),
            _ => None,
        })
        .collect();
    tables.sort_unstable();
    for n in tables {
        if deleted.contains(&n) {
            // An edit of this MANIFEST removed it: obsolete, by record.
            out.push((n, Unreferenced::Redundant));
            continue;
        }
        let path = filenames::table(dir, n);
        let t = match Table::open_in(vfs, &path, TableOptions::default()) {
            Ok(t) => t,
            Err(e) => {
                out.push((n, Unreferenced::Unknown(format!("unreadable: {e}"))));
                continue;
            }
        };
        let mut uncovered: Option<(u64, u64)> = None;
        let mut zero = false;
        let mut check = |s: u64| {
            if s == 0 {
                zero = true;
            } else if s > flushed && !ingested.contains(s) && !replayed.contains(s) {
                let u = uncovered.get_or_insert((s, s));
                u.0 = u.0.min(s);
                u.1 = u.1.max(s);
            }
        };
        for r in t.range_tombstones() {
            check(r.seq);
        }
        let mut it = t.iter();
        it.seek_to_first();
        let mut bad_key = false;
        while it.valid() {
            match ParsedKey::parse(it.key()) {
                Some(pk) => check(pk.seq),
                None => bad_key = true,
            }
            it.next();
        }
        if let Some((lo, hi)) = uncovered {
            return Err(Error::corruption(
                path.display().to_string(),
                0,
                format!(
                    "no MANIFEST record names this table, yet it holds sequence numbers \
                     {lo}..={hi}, which no listed table or WAL accounts for (flushed up to \
                     {flushed}): a MANIFEST edit is missing. Nothing was deleted; \
                     `strata repair` can put the table back"
                ),
            ));
        }
        let verdict = if let Err(e) = it.status() {
            Unreferenced::Unknown(format!("unreadable: {e}"))
        } else if bad_key {
            Unreferenced::Unknown("holds a key shorter than its trailer".into())
        } else if zero {
            Unreferenced::Unknown(
                "holds sequence number 0 (an ingested file no MANIFEST record names)".into(),
            )
        } else {
            Unreferenced::Redundant
        };
        out.push((n, verdict));
    }
    Ok(out)
}

/// Moves `name` into `dir/lost/` and appends why to `lost/LOG`. Never
/// deletes: the operator decides.
pub(crate) fn move_to_lost(vfs: &dyn Vfs, dir: &Path, name: &str, why: &str) -> Result<()> {
    let lost = dir.join("lost");
    vfs.create_dir_all(&lost)?;
    vfs.rename(&dir.join(name), &lost.join(name))?;
    let log = lost.join("LOG");
    let mut text = if vfs.exists(&log) {
        vfs::read_all(vfs, &log)?
    } else {
        Vec::new()
    };
    text.extend_from_slice(format!("{name}: {why}\n").as_bytes());
    vfs::write_all(vfs, &log, &text)?;
    vfs.sync_dir(&lost)?;
    vfs.sync_dir(dir)
}
