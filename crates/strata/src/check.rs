//! Checking a database directory without opening it (`strata check DB`).
//!
//! [`check`] reads everything and changes nothing: it takes no lock, creates
//! no file and writes no byte, so it can run on a database another process
//! has open, or on a copy of a damaged one. It verifies:
//! - `CURRENT` names a MANIFEST that exists;
//! - every MANIFEST record: its checksum, that it decodes as a version edit,
//!   and that it applies (deletes only files the level holds, keeps every
//!   level below L0 sorted and non-overlapping);
//! - every table the version names: present, with the size the MANIFEST
//!   recorded, a footer that declares a block checksum (a table saying
//!   "none" is a problem: nothing in it can be verified, and a database
//!   whose options write checksummed tables refuses it), every block's
//!   checksum, each index entry bounding its block (`Table::verify`), keys
//!   in order, every key inside the bounds and
//!   sequence-number range the MANIFEST recorded, no sequence number above
//!   the MANIFEST's last sequence;
//! - the shape of the tree: files of each L0 sublevel do not overlap, and,
//!   key by key, a newer level or sublevel never holds an older version of
//!   a key than a level below it (this keeps one entry per distinct user
//!   key in memory: fine for the databases tests and operators check by
//!   hand, not for billions of keys);
//! - every live WAL (numbered at or above the MANIFEST's log number): every
//!   record's checksum, each decodes as a write batch, and the open's rules
//!   for their sequence numbers (`db::wal_sequence`: batches ascend, and
//!   past the MANIFEST's flushed sequence no gap that the MANIFEST does not
//!   account for, which shows a MANIFEST record is missing);
//! - the `EVENTS` log parses (`strata::events`). It is a diagnostic record,
//!   not data (recovery never reads it), so damage there is a warning
//!   naming the line's offset, whatever else is checked.
//!
//! What a crash legitimately leaves is reported as a warning, not a
//! problem: a last record cut short (or zero-filled) at the end of the
//! MANIFEST or of the newest WAL holding records (empty WALs after it were
//! created ahead of need; recovery drops the tail, and nothing acknowledged
//! as synced is in it: the judgement is the open's, `db::open`, so the two
//! agree), and table files no version names (recovery deletes them). A complete last record with a bad checksum is a problem: an
//! interrupted append does not leave one.
//!
//! **A database in use.** Before reading, the check asks whether anyone
//! holds the database's `LOCK` ([`Vfs::lock_state`]: `fcntl(F_GETLK)` on
//! the operating system, which takes no lock, and a `LOCK` that does not
//! exist is not created) and records it in [`CheckReport::in_use`]. A
//! live writer's files change while they are read, so the findings are a
//! snapshot, and what reads as a crash's leftovers is more likely work in
//! progress: a table no version names is the output of a flush,
//! compaction or ingestion not yet recorded (a user audit saw one
//! reported as "left by a crash" beside a compacting writer), and a last
//! record cut short may be an append under way. Those warnings say so.

use crate::db::filenames::{self, FileKind};
use crate::db::wal_sequence::WalSequence;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, ParsedKey};
use crate::sstable::{Table, TableOptions};
use crate::version::sublevels::L0Sublevels;
use crate::version::{FileMeta, Version, VersionEdit, NUM_LEVELS};
use crate::vfs::{self, LockState, OsVfs, Vfs};
use crate::wal::reader::{Damage, DroppedTail, LogReader, TailPolicy};
use crate::WriteBatch;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// One thing found wrong (or, as a warning, worth knowing).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finding {
    /// The file, as a path.
    pub file: String,
    /// Byte offset in `file` where the damage is (0 when it is about the
    /// file as a whole).
    pub offset: u64,
    /// What is wrong there.
    pub what: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at offset {}: {}", self.file, self.offset, self.what)
    }
}

/// What [`check`] found.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct CheckReport {
    /// Damage or broken invariants: the database is not sound.
    pub problems: Vec<Finding>,
    /// What a crash leaves behind and recovery repairs.
    pub warnings: Vec<Finding>,
    /// MANIFEST records read and verified.
    pub manifest_records: u64,
    /// Table files verified.
    pub tables: u64,
    /// Entries read from those tables.
    pub table_entries: u64,
    /// Table files among `tables` that could not be read through (each is
    /// also a problem): their entries are missing from `table_entries`, or
    /// partly so.
    pub tables_unreadable: u64,
    /// Live WAL files verified.
    pub wals: u64,
    /// Records read from those WALs.
    pub wal_records: u64,
    /// Whether the database was open (its `LOCK` held) when the check
    /// began: then the findings are a snapshot of files that a live
    /// writer changes (see the module documentation).
    pub in_use: LockState,
}

impl CheckReport {
    /// True if no problem was found (warnings allowed).
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, file: impl Into<String>, offset: u64, what: impl Into<String>) {
        self.problems.push(Finding {
            file: file.into(),
            offset,
            what: what.into(),
        });
    }

    fn warn(&mut self, file: impl Into<String>, offset: u64, what: impl Into<String>) {
        self.warnings.push(Finding {
            file: file.into(),
            offset,
            what: what.into(),
        });
    }

    /// Records an error met while reading `file`.
    fn error(&mut self, file: &str, e: Error) {
        match e {
            Error::Corruption { file, offset, msg } => self.problem(file, offset, msg),
            Error::Io { source, .. } => self.problem(file, 0, source.to_string()),
            e => self.problem(file, 0, e.to_string()),
        }
    }
}

/// Checks the database in `dir` on the operating system's file system.
pub fn check_dir(dir: &Path) -> Result<CheckReport> {
    check(&OsVfs, dir)
}

/// Checks the database in `dir` (see the module doc). What is no database
/// at all is an `Err`, in the words opening it uses: nothing at `dir`
/// (`Error::NotFound`), a file, a RocksDB or LevelDB database, or a
/// directory with neither a `CURRENT` nor a MANIFEST
/// (`Error::NotADatabase`); so is a directory that cannot be listed.
/// Everything found in the files of a database is in the report: one with
/// a MANIFEST but no `CURRENT` is a damaged database, and its missing
/// `CURRENT` is a problem.
pub fn check(vfs: &dyn Vfs, dir: &Path) -> Result<CheckReport> {
    let mut r = CheckReport::default();
    let Some(names) = crate::db::recovery_checks::list_dir(vfs, dir)? else {
        return Err(Error::NotFound {
            path: dir.display().to_string(),
        });
    };
    crate::db::recovery_checks::refuse_foreign(dir, &names)?;
    let manifest = |n: &String| matches!(filenames::parse(n), Some(FileKind::Manifest(_)));
    if !names.iter().any(|n| n == "CURRENT" || manifest(n)) {
        // Neither CURRENT nor a MANIFEST: no database, refused in the
        // words opening it uses (an empty directory, or one listing what
        // else it holds). `Ok` only if a CURRENT appeared meanwhile.
        crate::db::recovery_checks::require_database(vfs, dir)?;
    }
    // A probe that fails (a LOCK it may not read) tells nothing.
    r.in_use = vfs
        .lock_state(&filenames::lock(dir))
        .unwrap_or(LockState::Unknown);
    check_events(vfs, dir, &mut r);
    let Some(mut state) = check_manifest(vfs, dir, &mut r) else {
        return Ok(r);
    };
    // The WALs first: their ingestion markers name files that are live.
    state.redo = check_wals(vfs, dir, &state, &names, &mut r);
    check_tables(vfs, dir, &state, &names, &mut r);
    check_shape(vfs, dir, &state.version, &mut r);
    Ok(r)
}

/// The `EVENTS` log (every segment): damage is a warning (see the module
/// documentation), and so is a last line cut short (a crash while it was
/// written).
fn check_events(vfs: &dyn Vfs, dir: &Path, r: &mut CheckReport) {
    match crate::inspect::read_events_in(vfs, dir) {
        Ok(p) => {
            // `torn` holds the segments' paths as read (`dir` joined).
            for name in &p.torn {
                let path = Path::new(name);
                let shown = path.display().to_string();
                let at = vfs::read_all(vfs, path)
                    .ok()
                    .and_then(|t| t.iter().rposition(|&b| b == b'\n'))
                    .map_or(0, |i| i + 1);
                let why = if r.in_use.is_held() {
                    "(being written, or a crash: the database is in use)"
                } else {
                    "(a crash)"
                };
                r.warn(
                    &shown,
                    at as u64,
                    format!("the last event line was cut short {why}"),
                );
            }
            for (file, line, offset, what) in &p.damaged {
                r.warn(
                    file,
                    *offset,
                    format!(
                        "the event log is damaged at line {line} ({what}); readers skip the \
                         line, and the data is not affected"
                    ),
                );
            }
        }
        Err(Error::Corruption { file, offset, msg }) => r.warn(
            &file,
            offset,
            format!("the event log is damaged ({msg}); the data is not affected"),
        ),
        Err(e) => r.warn(
            dir.join(crate::events::EVENTS_FILE).display().to_string(),
            0,
            format!("the event log cannot be read: {e}"),
        ),
    }
}

/// What the MANIFEST says.
struct ManifestState {
    version: Version,
    log_number: u64,
    last_sequence: u64,
    /// The largest flushed sequence recorded (the WALs' records at or
    /// below it are in tables).
    flushed_seq: u64,
    next_file: u64,
    queued: Vec<FileMeta>,
    /// Files of ingestions past the MANIFEST's last sequence that recovery
    /// redoes from their WAL markers (`db::marker`): live data, though no
    /// MANIFEST record names them.
    redo: Vec<FileMeta>,
}

fn check_manifest(vfs: &dyn Vfs, dir: &Path, r: &mut CheckReport) -> Option<ManifestState> {
    let cur_path = filenames::current(dir);
    let cur_name = cur_path.display().to_string();
    let cur = match vfs::read_all(vfs, &cur_path) {
        Ok(c) => c,
        Err(e) => {
            r.problem(&cur_name, 0, format!("cannot read CURRENT: {e}"));
            return None;
        }
    };
    let text = String::from_utf8_lossy(&cur);
    let number = match filenames::parse(text.trim_end_matches('\n')) {
        Some(FileKind::Manifest(n)) if text.ends_with('\n') => n,
        _ => {
            r.problem(&cur_name, 0, format!("does not name a MANIFEST: {text:?}"));
            return None;
        }
    };
    let mpath = filenames::manifest(dir, number);
    let mname = mpath.display().to_string();
    let file = match vfs.open_sequential(&mpath) {
        Ok(f) => f,
        Err(e) => {
            r.problem(
                &mname,
                0,
                format!("named by CURRENT but cannot be read: {e}"),
            );
            return None;
        }
    };
    let mut reader = LogReader::new(file, &mname, TailPolicy::TolerateTornTail);
    let mut version = Version::new();
    let (mut log_number, mut last_sequence, mut next_file) = (0, None, None);
    let mut queued: BTreeMap<u64, Vec<FileMeta>> = BTreeMap::new();
    let mut ingested_seq = 0;
    let mut flushed_seq = 0;
    loop {
        let rec = match reader.read_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => break,
            Err(e) => {
                r.error(&mname, e);
                return None;
            }
        };
        r.manifest_records += 1;
        let off = reader.last_record_offset();
        let edit = match VersionEdit::decode(&rec) {
            Ok(e) => e,
            Err(m) => {
                r.problem(&mname, off, format!("record does not decode: {m}"));
                return None;
            }
        };
        version = match version.apply(&edit, &mname) {
            Ok(v) => v,
            Err(Error::Corruption { msg, .. }) => {
                r.problem(&mname, off, msg);
                return None;
            }
            Err(e) => {
                r.error(&mname, e);
                return None;
            }
        };
        for (_, f) in &edit.new_files {
            if f.smallest_seq > f.largest_seq {
                r.problem(
                    &mname,
                    off,
                    format!(
                        "file {} has sequence range {}..{}",
                        f.number, f.smallest_seq, f.largest_seq
                    ),
                );
            }
        }
        log_number = edit.log_number.unwrap_or(log_number).max(log_number);
        if let Some(s) = edit.last_sequence {
            if last_sequence.is_some_and(|l| s < l) {
                r.problem(&mname, off, format!("last sequence goes back to {s}"));
            }
            last_sequence = Some(s);
        }
        next_file = edit.next_file_number.or(next_file);
        flushed_seq = flushed_seq.max(edit.flushed_seq.unwrap_or(0));
        for f in &edit.queued_files {
            if let Some(s) = f.global_seqno {
                queued.entry(s).or_default().push(f.clone());
            }
        }
        ingested_seq = ingested_seq.max(edit.ingested_seq.unwrap_or(0));
        queued.retain(|&s, _| s > ingested_seq);
    }
    if let Some(t) = reader.dropped_tail() {
        tail_finding(r, vfs, &mpath, t, "", true);
    }
    let (Some(last_sequence), Some(next_file)) = (last_sequence, next_file) else {
        r.problem(&mname, 0, "no last sequence or next file number recorded");
        return None;
    };
    Some(ManifestState {
        version,
        log_number,
        last_sequence,
        flushed_seq,
        next_file,
        queued: queued.into_values().flatten().collect(),
        redo: Vec::new(),
    })
}

/// A damaged last record, judged as recovery judges it
/// ([`crate::wal::tail::judge`]). What an interrupted append leaves (a
/// record cut short, or zeros) is a warning, since recovery drops it and
/// nothing acknowledged as synced was in it; only zeros after the last
/// whole record, in a log whose writer reserves space ahead (the
/// MANIFEST), are no finding at all: that is how such a log ends after a
/// crash. A complete record whose checksum, type or length is wrong is not
/// what a crash leaves in an append-only file: a problem (recovery refuses
/// the database).
fn tail_finding(
    r: &mut CheckReport,
    vfs: &dyn Vfs,
    path: &Path,
    t: DroppedTail,
    what: &str,
    reserves: bool,
) {
    let name = path.display().to_string();
    let msg = format!(
        "damaged last record{what} ({} bytes): {}",
        t.bytes, t.damage
    );
    let file = match vfs.open_random(path) {
        Ok(f) => f,
        Err(e) => return r.error(&name, e),
    };
    match crate::wal::tail::judge(file.as_ref(), &t) {
        Ok(None) if reserves && t.damage == Damage::ZeroFilled => {}
        Ok(None) => {
            let live = if r.in_use.is_held() {
                " (or an append under way: the database is in use)"
            } else {
                ""
            };
            r.warn(
                &name,
                t.offset,
                format!("{msg}; a torn write, recovery drops it{live}"),
            )
        }
        Ok(Some(why)) => r.problem(&name, t.offset, format!("{msg}: {why}")),
        Err(e) => r.error(&name, e),
    }
}

fn check_tables(
    vfs: &dyn Vfs,
    dir: &Path,
    st: &ManifestState,
    names: &[String],
    r: &mut CheckReport,
) {
    let mname = "MANIFEST";
    let files: Vec<&FileMeta> = st
        .version
        .all_files()
        .map(|(_, f)| f.as_ref())
        .chain(st.queued.iter())
        .chain(st.redo.iter())
        .collect();
    // A redone ingestion's files are past what the MANIFEST recorded (its
    // counter and last sequence) by nature: only the rest are held to it.
    let recorded = files.len() - st.redo.len();
    for f in &files[..recorded] {
        if f.backing_number() >= st.next_file {
            r.problem(
                mname,
                0,
                format!(
                    "file {} is numbered at or above the next file number {}",
                    f.backing_number(),
                    st.next_file
                ),
            );
        }
        if f.largest_seq > st.last_sequence {
            r.problem(
                mname,
                0,
                format!(
                    "file {} holds sequence number {} above the last sequence {}",
                    f.number, f.largest_seq, st.last_sequence
                ),
            );
        }
    }
    // Physical tables, each checked once; virtual files are checked against
    // their backing table's contents below.
    let physical: BTreeMap<u64, &FileMeta> = files
        .iter()
        .filter(|f| !f.is_virtual())
        .map(|f| (f.number, *f))
        .collect();
    let referenced: BTreeSet<u64> = files.iter().map(|f| f.backing_number()).collect();
    for n in &referenced {
        let path = filenames::table(dir, *n);
        let name = path.display().to_string();
        if !vfs.exists(&path) {
            r.problem(&name, 0, "named by the MANIFEST but missing");
            continue;
        }
        r.tables += 1;
        let size = vfs.file_size(&path).unwrap_or(0);
        if let Some(f) = physical.get(n) {
            if f.size != size {
                // The offset where the file and the record part, as the
                // open reports it.
                r.problem(
                    &name,
                    size.min(f.size),
                    format!(
                        "the file's size is {size} bytes but the MANIFEST records {}: it was \
                         changed or replaced after it was added",
                        f.size
                    ),
                );
                r.tables_unreadable += 1;
                continue;
            }
        }
        let global_seqno = files
            .iter()
            .find(|f| f.backing_number() == *n)
            .and_then(|f| f.global_seqno);
        let opts = TableOptions {
            global_seqno,
            ..TableOptions::default()
        };
        let t = match Table::open_in(vfs, &path, opts) {
            Ok(t) => t,
            Err(e) => {
                r.error(&name, e);
                r.tables_unreadable += 1;
                continue;
            }
        };
        // `check` cannot tell a table made without checksums on purpose
        // (`SstOptions::checksum` none) from a footer whose checksum type
        // was flipped to none: either way it verifies nothing in it, and
        // the open refuses it unless the database writes such tables.
        if let Err(e) = t.require_checksums("a database that writes checksummed tables") {
            r.error(&name, e);
        }
        if let Err(e) = t.verify() {
            r.error(&name, e);
            r.tables_unreadable += 1;
            continue;
        }
        check_properties_checksum(vfs, &path, &name, &t, r);
        // Every entry within the bounds and sequence range recorded.
        if let Some(f) = physical.get(n) {
            let mut it = t.iter();
            it.seek_to_first();
            while it.valid() {
                r.table_entries += 1;
                let k = it.key();
                let bad = key::compare_internal(k, &f.smallest).is_lt()
                    || key::compare_internal(k, &f.largest).is_gt();
                let seq = ParsedKey::parse(k).map_or(u64::MAX, |p| p.seq);
                if bad || seq < f.smallest_seq || seq > f.largest_seq {
                    r.problem(
                        &name,
                        it.block_offset(),
                        format!(
                            "entry {:?} at sequence {seq} is outside the bounds the MANIFEST \
                             recorded for file {}",
                            String::from_utf8_lossy(key::user_key(k)),
                            f.number
                        ),
                    );
                    break;
                }
                it.next();
            }
            if let Err(e) = it.status() {
                r.error(&name, e);
                r.tables_unreadable += 1;
            }
        }
    }
    for name in names {
        if let Some(FileKind::Table(n)) = filenames::parse(name) {
            if !referenced.contains(&n) {
                let what = if r.in_use.is_held() {
                    "table named by no version while the database is in use: probably the \
                     output of a flush, compaction or ingestion in progress, not a crash's \
                     leftover (check again with the database closed to tell)"
                } else {
                    "table named by no version (left by a crash, or put here by hand): the next \
                     open deletes it if other files hold all it holds, else moves it to lost/"
                };
                r.warn(dir.join(name).display().to_string(), 0, what);
            }
        }
    }
}

/// Readers accept a properties block whose checksum matches only with the
/// global-sequence-number value zeroed (RocksDB rewrites that value in place
/// when it ingests a file). Strata never writes into a table and reads that
/// value from the MANIFEST instead, so such a block in a database is worth
/// a warning: the 8 bytes are not protected by any checksum.
fn check_properties_checksum(
    vfs: &dyn Vfs,
    path: &Path,
    name: &str,
    t: &Table,
    r: &mut CheckReport,
) {
    use crate::sstable::block::{Block, BlockIter, BlockIterMode};
    use crate::sstable::format::{read_block, BlockHandle};
    let f = t.footer();
    let Ok(file) = vfs.open_random(path) else {
        return;
    };
    let limit = file.len().saturating_sub(f.encode().len() as u64);
    let Ok(meta) = read_block(file.as_ref(), f.metaindex, f.block_checksum(), true, limit) else {
        return; // the table would not have opened
    };
    let Ok(block) = Block::new(meta.data) else {
        return;
    };
    let mut it = BlockIter::new(Arc::new(block), BlockIterMode::BYTEWISE);
    it.seek(crate::sstable::PROPERTIES_BLOCK_NAME.as_bytes());
    if !it.valid() || it.key() != crate::sstable::PROPERTIES_BLOCK_NAME.as_bytes() {
        return;
    }
    let Some(h) = BlockHandle::decode_from(it.value()) else {
        return;
    };
    if let Err(e) = read_block(file.as_ref(), h, f.block_checksum(), true, limit) {
        r.warn(
            name,
            h.offset,
            format!(
                "properties block fails its checksum unless its global sequence number is \
                 ignored (a value rewritten in place; Strata uses the MANIFEST's): {e}"
            ),
        );
    }
}

/// L0 sublevels do not overlap; key by key, newer levels hold newer versions.
fn check_shape(vfs: &dyn Vfs, dir: &Path, v: &Version, r: &mut CheckReport) {
    let sub = L0Sublevels::new(v.files(0), u64::MAX);
    // Sources newest first: L0 sublevels top down, then L1 and below.
    let mut ranks: Vec<(String, Vec<Arc<FileMeta>>)> = Vec::new();
    for (i, s) in sub.sublevels().iter().enumerate().rev() {
        let mut sorted = s.clone();
        sorted.sort_by(|a, b| key::compare_internal(&a.smallest, &b.smallest));
        for w in sorted.windows(2) {
            if w[0].overlaps_user_range(w[1].smallest_user_key(), w[1].largest_user_key()) {
                r.problem(
                    "MANIFEST",
                    0,
                    format!(
                        "L0 files {} and {} overlap in sublevel {i}",
                        w[0].number, w[1].number
                    ),
                );
            }
        }
        ranks.push((format!("L0 sublevel {i}"), sorted));
    }
    for level in 1..NUM_LEVELS {
        ranks.push((format!("L{level}"), v.files(level).to_vec()));
    }
    // Smallest sequence number of each user key seen in newer sources.
    let mut newer: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for (rank, files) in ranks {
        let mut here: BTreeMap<Vec<u8>, (u64, u64)> = BTreeMap::new();
        for f in files {
            let path = filenames::table(dir, f.backing_number());
            let opts = TableOptions {
                global_seqno: f.global_seqno,
                ..TableOptions::default()
            };
            let Ok(t) = Table::open_in(vfs, &path, opts) else {
                continue; // reported by check_tables
            };
            let mut it = t.iter();
            it.seek_to_first();
            while it.valid() {
                let uk = key::user_key(it.key());
                if f.contains_user_key(uk) {
                    let seq = ParsedKey::parse(it.key()).map_or(0, |p| p.seq);
                    let e = here.entry(uk.to_vec()).or_insert((seq, seq));
                    e.0 = e.0.min(seq);
                    e.1 = e.1.max(seq);
                }
                it.next();
            }
        }
        let mut reported = 0;
        for (k, (lo, hi)) in here {
            if let Some(&n) = newer.get(&k) {
                if hi >= n && reported < 5 {
                    reported += 1;
                    r.problem(
                        "MANIFEST",
                        0,
                        format!(
                            "key {:?} has sequence {hi} in {rank}, not older than sequence {n} \
                             in a newer level",
                            String::from_utf8_lossy(&k)
                        ),
                    );
                }
            }
            let e = newer.entry(k).or_insert(lo);
            *e = (*e).min(lo);
        }
    }
}

/// The live WALs, record by record. Returns the files named by ingestion
/// markers past the MANIFEST's last sequence: recovery redoes those
/// ingestions, so the files are live though no MANIFEST record names them.
fn check_wals(
    vfs: &dyn Vfs,
    dir: &Path,
    st: &ManifestState,
    names: &[String],
    r: &mut CheckReport,
) -> Vec<FileMeta> {
    let mut wals: Vec<u64> = names
        .iter()
        .filter_map(|n| match filenames::parse(n) {
            Some(FileKind::Wal(w)) if w >= st.log_number => Some(w),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    // As recovery judges it (`db::open::replay_wals`): the WAL the
    // MANIFEST names must be there.
    if st.log_number > 0 && wals.first() != Some(&st.log_number) {
        let e = crate::db::missing_wal(dir, st.log_number, st.flushed_seq);
        r.error(&filenames::wal(dir, st.log_number).display().to_string(), e);
    }
    // The open's numbering rules (`db::wal_sequence`): what it refuses is
    // a problem here, in its words.
    let mut seqs = WalSequence::new(st.flushed_seq, st.last_sequence);
    let mut redo = Vec::new();
    // Whether each WAL has a later one holding anything: as the open
    // judges it, a torn tail may be an unfinished last write only in the
    // newest WAL holding anything (the WAL thread creates the next WAL
    // ahead of need, so empty WALs after it say nothing).
    let written: Vec<bool> = wals
        .iter()
        .map(|w| {
            vfs.open_random(&filenames::wal(dir, *w))
                .map_or(true, |f| !f.is_empty())
        })
        .collect();
    for (i, w) in wals.iter().enumerate() {
        r.wals += 1;
        let path = filenames::wal(dir, *w);
        let name = path.display().to_string();
        let later_written = written[i + 1..].iter().any(|&b| b);
        let file = match vfs.open_sequential(&path) {
            Ok(f) => f,
            Err(e) => {
                r.error(&name, e);
                continue;
            }
        };
        let mut reader = LogReader::new(file, &name, TailPolicy::TolerateTornTail);
        loop {
            let rec = match reader.read_record() {
                Ok(Some(rec)) => rec,
                Ok(None) => break,
                Err(e) => {
                    r.error(&name, e);
                    break;
                }
            };
            r.wal_records += 1;
            let off = reader.last_record_offset();
            // `decode` checks every record of the batch; the offset of a bad
            // one is mapped to the file, as the open reports it.
            let b = match WriteBatch::decode(rec) {
                Ok(b) => b,
                Err((at, m)) => {
                    r.problem(
                        &name,
                        reader.last_record_byte_offset(at),
                        format!("the write batch of the log record at offset {off}: {m}"),
                    );
                    break;
                }
            };
            let Some(b_last) = b.last_sequence() else {
                r.problem(
                    &name,
                    off,
                    format!(
                        "batch at sequence {} with {} updates runs past the largest \
                         sequence number",
                        b.sequence(),
                        b.count()
                    ),
                );
                break;
            };
            if b.count() > 0 {
                if let Err(why) = seqs.batch(b.sequence(), b_last) {
                    r.problem(&name, off, why.to_string());
                }
            } else {
                // A gap before a marker is the open's to accept too.
                let _ = seqs.marker(b.sequence());
                // A marker that does not decode is the open's to refuse.
                if b.sequence() > st.last_sequence {
                    if let Ok(Some(m)) = crate::db::marker::IngestMarker::from_batch(&b) {
                        redo.extend(m.files);
                    }
                }
            }
        }
        if let Some(t) = reader.dropped_tail() {
            if later_written {
                // The open's words (`db::open::replay_wals`).
                r.problem(
                    &name,
                    t.offset,
                    format!(
                        "damaged record ({}) in a WAL that is not the newest",
                        t.damage
                    ),
                );
            } else {
                tail_finding(
                    r,
                    vfs,
                    &path,
                    t,
                    " of the newest WAL holding records",
                    false,
                );
            }
        }
    }
    redo
}
