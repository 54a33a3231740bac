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
//!   the output of a flush or compaction cut short by a crash. Entries not
//!   accounted for that way are looked for elsewhere (`Evidence`): in a
//!   table of the recovered version at the same sequence number (a
//!   compaction whose edit never became durable, its inputs still live),
//!   or, past everything recovered, with the same key, kind and value in an
//!   ingested file no record names (an ingestion that never committed, or
//!   a compaction of its file). Such a table is set aside in `lost/`. If
//!   some entry is found nowhere, a MANIFEST edit that added the table is
//!   missing (a durable flush whose WAL is gone): corruption naming the
//!   table, and nothing is deleted. A table that cannot be read, or whose
//!   entries carry sequence number 0 (an ingested file, whose sequence
//!   number only the MANIFEST knows), cannot be proven redundant: a
//!   read-write open moves it to `lost/` with a line in `lost/LOG`, never
//!   unlinks it. Files of an ingestion redone from its WAL marker (see
//!   `db::marker`) count as referenced.
//!
//! - **The live WAL** ([`missing_wal`]): the WAL the MANIFEST names as the
//!   oldest still needed exists (its directory entry was durable before
//!   the edit naming it), or the writes since the last flush are gone.
//!
//! These checks read only; the caller decides what to delete or move, after
//! they all pass.

use super::filenames::{self, FileKind};
use super::table_cache::TableFiles;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::ParsedKey;
use crate::sstable::{RangeTombstone, Table};
use crate::version::{FileMeta, VersionSet};
use crate::vfs::{self, RandomAccessFile, Vfs};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// What a directory holds, as far as opening it is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DirKind {
    /// No such directory.
    Missing,
    /// Empty, or only what an interrupted creation of a database leaves.
    Fresh,
    /// A Strata database (CURRENT present).
    Database,
    /// No CURRENT, but files that are not a creation's leftovers: not a
    /// database `open` may use (the reason says what is there), though it
    /// may be one whose CURRENT was lost, which `repair` can rebuild.
    Unrecognised(String),
}

/// Files an interrupted `VersionSet::create` may leave behind: the lock,
/// the first MANIFEST (number 1, the first number a new database takes)
/// and CURRENT's temporary file.
/// Why a directory holding nothing, or only what an interrupted creation
/// leaves, is no database: one sentence, so `check`, `viz`, `lsm` and a
/// read-only open refuse an empty directory in the same words.
pub(crate) const NO_DATABASE_YET: &str =
    "the directory has no CURRENT file: it is empty, or holds only what an \
     interrupted creation leaves";

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
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotADirectory => {
            Err(Error::NotADatabase {
                path: dir.display().to_string(),
                reason: "it is a file, not a directory".into(),
            })
        }
        Err(e) => Err(e),
    }
}

/// `NotADatabase` if `names` (a directory's listing) hold the files of a
/// RocksDB or LevelDB database.
pub(crate) fn refuse_foreign(dir: &Path, names: &[String]) -> Result<()> {
    let mut markers: Vec<&String> = names.iter().filter(|n| foreign_marker(n)).collect();
    if markers.is_empty() {
        return Ok(());
    }
    markers.sort();
    let list: Vec<&str> = markers.iter().map(|s| s.as_str()).collect();
    Err(Error::NotADatabase {
        path: dir.display().to_string(),
        reason: format!(
            "it is a RocksDB or LevelDB database (it has {}); Strata can ingest its SST \
             files (`strata ingest`) or load what `ldb dump` prints (`strata kv load`), \
             but does not open it",
            list.join(", ")
        ),
    })
}

/// Decides what `dir` is before anything in it is read or written.
pub(crate) fn classify_dir(vfs: &dyn Vfs, dir: &Path) -> Result<DirKind> {
    let Some(names) = list_dir(vfs, dir)? else {
        return Ok(DirKind::Missing);
    };
    refuse_foreign(dir, &names)?;
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
    Ok(DirKind::Unrecognised(format!(
        "the directory has no CURRENT but is not empty ({}{more}); nothing was created \
         or changed in it.{hint}",
        shown.join(", ")
    )))
}

/// Refuses, in the words opening it uses, a `dir` that is not a Strata
/// database, for what reads a database's files without opening it
/// (`inspect`, so `strata viz` and `strata lsm`): nothing there, a file, a
/// RocksDB or LevelDB database, a directory without `CURRENT`.
pub(crate) fn require_database(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    let path = || dir.display().to_string();
    match classify_dir(vfs, dir)? {
        DirKind::Database => Ok(()),
        DirKind::Missing => Err(Error::NotFound { path: path() }),
        DirKind::Fresh => Err(Error::NotADatabase {
            path: path(),
            reason: NO_DATABASE_YET.into(),
        }),
        DirKind::Unrecognised(reason) => Err(Error::NotADatabase {
            path: path(),
            reason,
        }),
    }
}

/// Every table the recovered state names is present with its recorded
/// size, and no file holds a sequence number past the MANIFEST's last one.
/// Each physical table is opened to check it; the handles are returned if
/// there are at most `keep_up_to` tables (a read-only open reads through
/// them, `TableCache::pin`), else dropped (nothing, for a read-write open,
/// which passes 0).
pub(crate) fn check_referenced(
    vfs: &dyn Vfs,
    dir: &Path,
    set: &VersionSet,
    keep_up_to: usize,
) -> Result<HashMap<u64, Arc<dyn RandomAccessFile>>> {
    let mname = filenames::manifest(dir, set.manifest_number())
        .display()
        .to_string();
    let v = set.current();
    let queued = set.queued_ingestions();
    let files: Vec<(Option<usize>, &FileMeta)> = v
        .all_files()
        .map(|(l, f)| (Some(l), f.as_ref()))
        .chain(
            queued
                .iter()
                .flat_map(|(_, fs)| fs.iter().map(|f| (None, f))),
        )
        .collect();
    let physical: HashSet<u64> = files.iter().map(|(_, f)| f.backing_number()).collect();
    let keep = physical.len() <= keep_up_to;
    let mut opened: HashMap<u64, Arc<dyn RandomAccessFile>> = HashMap::new();
    for (level, f) in files {
        let path = filenames::table(dir, f.backing_number());
        let where_ = match level {
            Some(l) => format!("level {l}"),
            None => "a queued ingestion".to_string(),
        };
        let file = match opened.get(&f.backing_number()) {
            Some(file) => Arc::clone(file),
            None => match vfs.open_random(&path) {
                Ok(file) => file,
                Err(e) if e.io_error().map(|e| e.kind()) == Some(std::io::ErrorKind::NotFound) => {
                    return Err(Error::corruption(
                        path.display().to_string(),
                        0,
                        format!("missing: {mname} names it ({where_}, file {})", f.number),
                    ));
                }
                Err(e) => return Err(e),
            },
        };
        // A virtual file's size is that of its key range, not of the
        // physical table.
        if !f.is_virtual() {
            let size = file.len();
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
        if keep {
            opened.insert(f.backing_number(), file);
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
    Ok(opened)
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

    /// The highest sequence number in any range (0 if none).
    fn max(&self) -> u64 {
        self.0.iter().map(|r| r.1).max().unwrap_or(0)
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
    files: TableFiles<'_>,
    names: &[String],
    set: &VersionSet,
    deleted: &HashSet<u64>,
    rolled: &HashSet<u64>,
    mut replayed: SeqRanges,
) -> Result<Vec<(u64, Unreferenced)>> {
    let v = set.current();
    let queued = set.queued_ingestions();
    let mut referenced: HashSet<u64> = v.all_files().map(|(_, f)| f.backing_number()).collect();
    // Ingestions redone from their WAL markers: placed by this open.
    referenced.extend(rolled);
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
    // The newest sequence number anything recovered holds.
    let recovered_max = set.last_sequence().max(replayed.max());
    let mut out = Vec::new();
    let mut tables: Vec<u64> = names
        .iter()
        .filter_map(|n| match filenames::parse(n) {
            Some(FileKind::Table(t)) if !referenced.contains(&t) => Some(t),
            _ => None,
        })
        .collect();
    tables.sort_unstable();
    let mut ev = Evidence::new(files, &v, &tables, deleted);
    for n in &tables {
        let n = *n;
        if deleted.contains(&n) {
            // An edit of this MANIFEST removed it: obsolete, by record.
            out.push((n, Unreferenced::Redundant));
            continue;
        }
        let path = files.path(n);
        // Under the database's checksum rule: a table whose footer says
        // "none" could be judged redundant (and deleted) on bytes nothing
        // verified; refused, it cannot be proven redundant and is set aside.
        let t = match files.open(n) {
            Ok(t) => t,
            Err(e) => {
                out.push((n, Unreferenced::Unknown(format!("unreadable: {e}"))));
                continue;
            }
        };
        // Entries whose sequence number nothing cheap accounts for (not
        // at or below the flushed sequence, not an ingestion's, not in a
        // replayed WAL record): the range of their numbers, and whether
        // each is held elsewhere all the same (see `Evidence`).
        let mut uncovered: Option<(u64, u64)> = None;
        let mut unexplained: Option<(u64, u64)> = None;
        let mut kinds = Explained::default();
        let mut zero = false;
        let mut lookup_error = None;
        let mut check =
            |s: u64,
             ev: &mut Evidence<'_>,
             find: &dyn Fn(&mut Evidence<'_>, bool) -> Result<bool>| {
                if s == 0 {
                    zero = true;
                    return;
                }
                if s <= flushed || ingested.contains(s) || replayed.contains(s) {
                    return;
                }
                let u = uncovered.get_or_insert((s, s));
                u.0 = u.0.min(s);
                u.1 = u.1.max(s);
                if unexplained.is_some() {
                    return;
                }
                // Past everything recovered: only an ingestion that never
                // committed can have left it; else a live table holds it.
                let past = s > recovered_max;
                match find(ev, past) {
                    Ok(true) if past => kinds.uncommitted = true,
                    Ok(true) => kinds.live = true,
                    Ok(false) => unexplained = Some((s, s)),
                    Err(e) => {
                        unexplained = Some((s, s));
                        lookup_error = Some(e);
                    }
                }
            };
        for r in t.range_tombstones() {
            check(r.seq, &mut ev, &|ev, past| ev.holds_tombstone(r, past));
        }
        let mut it = t.iter();
        it.seek_to_first();
        let mut bad_key = false;
        while it.valid() {
            match ParsedKey::parse(it.key()) {
                Some(pk) => {
                    let (ikey, value) = (it.key(), it.value());
                    check(pk.seq, &mut ev, &|ev, past| {
                        ev.holds_point(ikey, &pk, value, past)
                    });
                }
                None => bad_key = true,
            }
            it.next();
        }
        // Every uncovered entry is held elsewhere: the table is what a
        // MANIFEST edit that never became durable left, and is set aside.
        // - A compaction's output: each entry is in a table of the
        //   recovered version at the same sequence number, so the inputs
        //   are still live.
        // - A file of an ingestion that never committed, or a compaction's
        //   output holding its entries: past everything recovered (so
        //   nothing recovered came after it, and no marker of it survives:
        //   a surviving marker redoes it), and the same key, kind and value
        //   are in an ingested file (sequence number 0) no record names,
        //   set aside with it.
        // A lost durable edit is different: a flush's table holds entries
        // of a WAL that is gone, which no table holds; a compaction whose
        // inputs were deleted after its edit was synced leaves the
        // recovered version naming missing files, refused by
        // `check_referenced`.
        if let (Some((lo, hi)), None, true, false) =
            (uncovered, unexplained, it.status().is_ok(), bad_key)
        {
            let what = match (kinds.live, kinds.uncommitted) {
                (true, true) => "in a live table or in an ingested file no record names",
                (true, false) => "in a live table",
                _ => "in an ingested file no record names",
            };
            out.push((
                n,
                Unreferenced::Unknown(format!(
                    "sequence numbers {lo}..={hi} are past the MANIFEST's flushed sequence \
                     {flushed}, but every such entry is {what}: left by a MANIFEST edit \
                     that never became durable"
                )),
            ));
            continue;
        }
        if let Some((lo, hi)) = uncovered {
            let why = match (&lookup_error, unexplained) {
                (Some(e), _) => format!(" (looking for them elsewhere failed: {e})"),
                (None, Some((s, _))) => format!(" (sequence number {s} is in no other table)"),
                (None, None) => String::new(),
            };
            return Err(Error::corruption(
                path.display().to_string(),
                0,
                format!(
                    "no MANIFEST record names this table, yet it holds sequence numbers \
                     {lo}..={hi}, which no listed table or WAL accounts for (flushed up to \
                     {flushed}){why}: a MANIFEST edit is missing. Nothing was deleted; \
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

/// What explained an unreferenced table's uncovered entries.
#[derive(Default)]
struct Explained {
    /// Some were found in a live table.
    live: bool,
    /// Some were found in an ingested file no record names.
    uncommitted: bool,
}

/// Looks up entries of an unreferenced table elsewhere: in the tables of
/// the recovered version (a compaction's output whose inputs are still
/// live), or in ingested files no record names (entries of an ingestion
/// that never committed). A sequence number identifies one operation, and
/// every entry that operation left in the recovered state descends from
/// tables of that version, which `check_referenced` found present; so once
/// one entry at a sequence number is found, the others at that number are
/// taken as found too (one lookup per number, not per entry, for a
/// compaction of ingested data).
struct Evidence<'a> {
    /// Opened under the database's checksum rule: an entry read from a
    /// table whose footer says "none" was verified by nothing, so it is no
    /// evidence.
    files: TableFiles<'a>,
    version: &'a crate::version::Version,
    tables: HashMap<u64, Arc<Table>>,
    found: HashSet<(u64, bool)>,
    /// Unreferenced tables not removed by a record, opened on first need:
    /// those whose entries carry sequence number 0 (ingested files).
    unreferenced: &'a [u64],
    deleted: &'a HashSet<u64>,
    orphans: Option<Vec<Arc<Table>>>,
}

impl<'a> Evidence<'a> {
    fn new(
        files: TableFiles<'a>,
        version: &'a crate::version::Version,
        unreferenced: &'a [u64],
        deleted: &'a HashSet<u64>,
    ) -> Self {
        Evidence {
            files,
            version,
            tables: HashMap::new(),
            found: HashSet::new(),
            unreferenced,
            deleted,
            orphans: None,
        }
    }

    fn open(&mut self, n: u64) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.get(&n) {
            return Ok(Arc::clone(t));
        }
        let t = self.files.open(n)?;
        self.tables.insert(n, Arc::clone(&t));
        Ok(t)
    }

    /// Live tables (not ingested ones: their entries carry sequence number
    /// 0) whose sequence range holds `seq` and that `fits`; or, if
    /// `orphan`, the ingested files no record names.
    fn candidates(
        &mut self,
        seq: u64,
        orphan: bool,
        fits: impl Fn(&FileMeta) -> bool,
    ) -> Result<Vec<Arc<Table>>> {
        if orphan {
            if self.orphans.is_none() {
                let mut found = Vec::new();
                for &n in self.unreferenced {
                    if self.deleted.contains(&n) {
                        continue;
                    }
                    // Unreadable ones are no evidence (and are set aside).
                    let Ok(t) = self.open(n) else { continue };
                    // Written for ingestion (a compaction's output may
                    // hold sequence number 0 too, but is not evidence).
                    if t.properties().external_version.is_none() {
                        continue;
                    }
                    let mut it = t.iter();
                    it.seek_to_first();
                    let first_zero = if it.valid() {
                        ParsedKey::parse(it.key()).is_some_and(|p| p.seq == 0)
                    } else {
                        t.range_tombstones().first().is_some_and(|r| r.seq == 0)
                    };
                    if first_zero {
                        found.push(t);
                    }
                }
                self.orphans = Some(found);
            }
            return Ok(self.orphans.clone().unwrap_or_default());
        }
        let mut out = Vec::new();
        let files: Vec<FileMeta> = self
            .version
            .all_files()
            .filter(|(_, f)| {
                f.global_seqno.is_none() && f.smallest_seq <= seq && seq <= f.largest_seq && fits(f)
            })
            .map(|(_, f)| f.as_ref().clone())
            .collect();
        for f in files {
            out.push(self.open(f.backing_number())?);
        }
        Ok(out)
    }

    /// Whether the point entry `ikey` (value `value`) is held elsewhere: a
    /// live table holds `ikey` exactly, or (`orphan`) an ingested file no
    /// record names holds its key and kind at sequence number 0 with the
    /// same value.
    fn holds_point(
        &mut self,
        ikey: &[u8],
        pk: &ParsedKey<'_>,
        value: &[u8],
        orphan: bool,
    ) -> Result<bool> {
        if self.found.contains(&(pk.seq, orphan)) {
            return Ok(true);
        }
        let target = if orphan {
            let mut k = Vec::new();
            crate::key::append_internal_key(&mut k, pk.user_key, 0, pk.kind);
            k
        } else {
            ikey.to_vec()
        };
        for t in self.candidates(pk.seq, orphan, |f| f.contains_user_key(pk.user_key))? {
            let mut it = t.iter();
            it.seek(&target);
            if it.valid() && it.key() == target.as_slice() && (!orphan || it.value() == value) {
                self.found.insert((pk.seq, orphan));
                return Ok(true);
            }
            it.status()?;
        }
        Ok(false)
    }

    /// Whether a range tombstone at `r.seq` (at 0 in an ingested file, if
    /// `orphan`) overlapping `r` is held elsewhere (compactions cut
    /// tombstones at file bounds).
    fn holds_tombstone(&mut self, r: &RangeTombstone, orphan: bool) -> Result<bool> {
        if self.found.contains(&(r.seq, orphan)) {
            return Ok(true);
        }
        let want = if orphan { 0 } else { r.seq };
        for t in self.candidates(r.seq, orphan, |f| f.overlaps_user_range(&r.start, &r.end))? {
            if t.range_tombstones()
                .iter()
                .any(|x| x.seq == want && x.start < r.end && r.start < x.end)
            {
                self.found.insert((r.seq, orphan));
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Moves `name` into `dir/lost/` and appends why to `lost/LOG`. Never
/// deletes: the operator decides.
pub(crate) fn move_to_lost(vfs: &dyn Vfs, dir: &Path, name: &str, why: &str) -> Result<()> {
    let lost = dir.join("lost");
    vfs.create_dir_all(&lost)?;
    vfs.rename(&dir.join(name), &lost.join(name))?;
    note_in_lost(vfs, dir, &lost, name, why)
}

/// Keeps `data` (the bytes of `name`) in `dir/lost/` as `move_to_lost`
/// does, but leaves `name` in place: the caller replaces it atomically
/// next, so no crash leaves it missing.
pub(crate) fn copy_to_lost(
    vfs: &dyn Vfs,
    dir: &Path,
    name: &str,
    data: &[u8],
    why: &str,
) -> Result<()> {
    let lost = dir.join("lost");
    vfs.create_dir_all(&lost)?;
    vfs::write_all(vfs, &lost.join(name), data)?;
    note_in_lost(vfs, dir, &lost, name, why)
}

/// Appends why `name` is in `lost` to `lost/LOG` and makes both
/// directories' entries durable.
fn note_in_lost(vfs: &dyn Vfs, dir: &Path, lost: &Path, name: &str, why: &str) -> Result<()> {
    let log = lost.join("LOG");
    let mut text = if vfs.exists(&log) {
        vfs::read_all(vfs, &log)?
    } else {
        Vec::new()
    };
    text.extend_from_slice(format!("{name}: {why}\n").as_bytes());
    vfs::write_all(vfs, &log, &text)?;
    vfs.sync_dir(lost)?;
    vfs.sync_dir(dir)
}

/// A missing WAL that the MANIFEST names as the oldest still needed (log
/// number `log_number`, everything up to `flushed_seq` in tables): the
/// writes it held are gone, so recovery refuses and `strata check` reports
/// it. The WAL's directory entry was made durable before any edit named it
/// (`CommitPipeline::make_wal_entries_durable`), so a power cut cannot
/// cause this; damage or a hand can.
pub(crate) fn missing_wal(dir: &Path, log_number: u64, flushed_seq: u64) -> Error {
    Error::corruption(
        filenames::wal(dir, log_number).display().to_string(),
        0,
        format!(
            "missing: the MANIFEST names this WAL as the oldest one still needed, so the \
             writes after sequence number {flushed_seq} that it held are gone. `strata repair` \
             opens the database without it"
        ),
    )
}
