//! Read-only inspection of a database directory, for tools that show a
//! database's history (the visualiser `strata-viz`, `strata lsm`) without
//! opening it: the MANIFEST as the sequence of version edits it records, the
//! tree those edits build step by step, the sublevels of L0 at any step, and
//! the `EVENTS` log.
//!
//! Contract:
//! - nothing here creates, writes, renames or locks a file, so it works on a
//!   closed database and beside a live one (which may append to the MANIFEST
//!   and the log meanwhile: a record cut short at the end is a write in
//!   progress and is left out, not reported as damage);
//! - the MANIFEST holds the history since the database was last opened (each
//!   open writes a new MANIFEST whose first edit is a snapshot of the whole
//!   tree) or since it last outgrew its size limit; the `EVENTS` log holds
//!   earlier sessions too (within its size limit, see
//!   [`crate::events`]), and its tree-changing events carry the same file
//!   metadata, so a tool can go further back with it;
//! - damage is an [`Error::Corruption`](crate::Error) naming the file and
//!   offset, never a panic; an edit that removes a file the tree does not
//!   hold, or makes a level below L0 overlap, is damage too;
//! - keys are user keys; [`TableInfo`] is the type the events use, so a file
//!   seen in the MANIFEST and in an event compares equal field by field
//!   (except `entries`, which both know, and the level of removed files,
//!   which a MANIFEST deletion records as well).

use crate::db::filenames;
use crate::error::{Error, Result};
pub use crate::events::{parse_events, ParsedEvents, TableInfo, EVENTS_FILE};
use crate::key::{make_internal_key, ValueKind, MAX_SEQUENCE};
use crate::version::edit::COMPARATOR;
use crate::version::{FileMeta, L0Sublevels, VersionEdit, NUM_LEVELS};
use crate::vfs::{self, OsVfs, Vfs};
use crate::wal::reader::{LogReader, TailPolicy};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Levels in a tree (L0 to L6).
pub const LEVELS: usize = NUM_LEVELS;

/// One MANIFEST record, as far as the shape of the tree goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestEdit {
    /// Byte offset of the record in the MANIFEST.
    pub offset: u64,
    /// Files put into the tree, with their levels.
    pub added: Vec<TableInfo>,
    /// Files taken out: (level, number).
    pub removed: Vec<(usize, u64)>,
    /// Files of an ingestion that waits in the immutable queue behind an
    /// overlapping memtable: not in the tree yet (a later edit adds them).
    pub queued: Vec<TableInfo>,
    /// The last sequence number the edit records, if it does.
    pub last_sequence: Option<u64>,
    /// The next file number the edit records, if it does.
    pub next_file_number: Option<u64>,
}

impl ManifestEdit {
    fn from_edit(offset: u64, e: &VersionEdit) -> ManifestEdit {
        ManifestEdit {
            offset,
            added: e
                .new_files
                .iter()
                .map(|(l, f)| TableInfo::from_meta(*l, f))
                .collect(),
            removed: e.deleted_files.clone(),
            queued: e
                .queued_files
                .iter()
                .map(|f| TableInfo::from_meta(0, f))
                .collect(),
            last_sequence: e.last_sequence,
            next_file_number: e.next_file_number,
        }
    }

    /// Whether the edit changes which files make up the tree.
    pub fn changes_tree(&self) -> bool {
        !self.added.is_empty() || !self.removed.is_empty()
    }
}

/// The live MANIFEST of a database directory, read as version edits.
#[derive(Clone, Debug)]
pub struct ManifestHistory {
    /// The MANIFEST file read.
    pub path: PathBuf,
    /// Every record, in order; the first is the snapshot the MANIFEST
    /// started with.
    pub edits: Vec<ManifestEdit>,
}

/// Reads the MANIFEST that `CURRENT` names in `dir` (operating-system file
/// system). A `dir` that is no database is refused as opening refuses it
/// ([`Error::NotFound`], [`Error::NotADatabase`]).
pub fn read_manifest(dir: &Path) -> Result<ManifestHistory> {
    read_manifest_in(&OsVfs, dir)
}

/// [`read_manifest`] over any file system.
pub fn read_manifest_in(vfs: &dyn Vfs, dir: &Path) -> Result<ManifestHistory> {
    // A live database may switch to a new MANIFEST (and delete the old one)
    // between our reading CURRENT and opening what it named: read again.
    let mut attempt = 0;
    loop {
        let path = current_manifest(vfs, dir)?;
        if !vfs.exists(&path) && attempt < 3 {
            attempt += 1;
            std::thread::sleep(std::time::Duration::from_millis(20));
            continue;
        }
        return read_manifest_file(vfs, &path);
    }
}

fn current_manifest(vfs: &dyn Vfs, dir: &Path) -> Result<PathBuf> {
    crate::db::recovery_checks::require_database(vfs, dir)?;
    let cur_path = filenames::current(dir);
    let cur = vfs::read_all(vfs, &cur_path)?;
    let cur = String::from_utf8_lossy(&cur);
    let name = cur.trim_end_matches('\n');
    match filenames::parse(name) {
        Some(filenames::FileKind::Manifest(n)) if cur.ends_with('\n') => {
            Ok(filenames::manifest(dir, n))
        }
        _ => Err(Error::corruption(
            cur_path.display().to_string(),
            0,
            format!("CURRENT does not name a MANIFEST: {name:?}"),
        )),
    }
}

/// Reads one MANIFEST file as version edits.
pub(crate) fn read_manifest_file(vfs: &dyn Vfs, path: &Path) -> Result<ManifestHistory> {
    let name = path.display().to_string();
    let mut reader = LogReader::new(
        vfs.open_sequential(path)?,
        &name,
        TailPolicy::TolerateTornTail,
    );
    let mut edits = Vec::new();
    let mut tree = Tree::new();
    while let Some(rec) = reader.read_record()? {
        let off = reader.last_record_offset();
        let edit = VersionEdit::decode(&rec).map_err(|m| Error::corruption(&name, off, m))?;
        if let Some(c) = &edit.comparator {
            if c != COMPARATOR {
                return Err(Error::NotSupported(format!("{name}: comparator {c}")));
            }
        }
        let e = ManifestEdit::from_edit(off, &edit);
        // Checked as recovery would check it, so a tool never draws a tree
        // the database would refuse.
        tree.apply(&e)
            .map_err(|m| Error::corruption(&name, off, m))?;
        edits.push(e);
    }
    if edits.is_empty() {
        return Err(Error::corruption(&name, 0, "MANIFEST has no records"));
    }
    Ok(ManifestHistory {
        path: path.to_path_buf(),
        edits,
    })
}

/// Reads the whole `EVENTS` log of `dir`: the closed segments
/// (`EVENTS.NNNNNN`) in number order, then `EVENTS`. A database without a
/// log has no events. A segment whose last line was cut short by a crash
/// is read without it ([`ParsedEvents::torn`] names it).
pub fn read_events(dir: &Path) -> Result<ParsedEvents> {
    read_events_in(&OsVfs, dir)
}

/// [`read_events`] over any file system.
pub fn read_events_in(vfs: &dyn Vfs, dir: &Path) -> Result<ParsedEvents> {
    // A live database may close its segment (rename `EVENTS` to the next
    // number) or delete an old one while we read: then the names differ
    // afterwards, and we read again.
    let mut attempt = 0;
    loop {
        let names = segment_files(vfs, dir)?;
        let mut out = ParsedEvents::default();
        let mut vanished = false;
        for name in &names {
            let path = dir.join(name);
            let text = match vfs::read_all(vfs, &path) {
                Ok(t) => t,
                Err(_) if !vfs.exists(&path) => {
                    vanished = true;
                    break;
                }
                Err(e) => return Err(e),
            };
            out.append(parse_events(&text, &path.display().to_string())?);
        }
        if (vanished || segment_files(vfs, dir)? != names) && attempt < 3 {
            attempt += 1;
            continue;
        }
        return Ok(out);
    }
}

/// The log's files in `dir`, oldest first.
fn segment_files(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<String>> {
    let names = vfs.list(dir)?;
    let mut closed: Vec<u64> = names
        .iter()
        .filter_map(|n| crate::events::parse_segment_name(n))
        .collect();
    closed.sort_unstable();
    let mut out: Vec<String> = closed
        .into_iter()
        .map(crate::events::segment_name)
        .collect();
    if names.iter().any(|n| n == EVENTS_FILE) {
        out.push(EVENTS_FILE.to_string());
    }
    Ok(out)
}

/// The files of the tree at one step, by level, built by applying edits.
/// L0 is kept newest first (as the engine reads it), other levels by
/// smallest key. Files are shared (`Arc`), so cloning a tree and inserting
/// into a level of thousands of files stay cheap.
#[derive(Clone, Debug, Default)]
pub struct Tree {
    levels: Vec<Vec<Arc<TableInfo>>>,
}

impl Tree {
    /// An empty tree.
    pub fn new() -> Tree {
        Tree {
            levels: vec![Vec::new(); LEVELS],
        }
    }

    /// The files on `level` (L0 newest first, other levels in key order).
    pub fn files(&self, level: usize) -> &[Arc<TableInfo>] {
        self.levels.get(level).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Files on every level.
    pub fn num_files(&self) -> usize {
        self.levels.iter().map(Vec::len).sum()
    }

    /// Bytes of the files on `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.files(level).iter().map(|f| f.size).sum()
    }

    /// Applies one edit; an edit that removes a missing file, names a level
    /// past L6 or makes a level below L0 overlap is refused (the message
    /// says which file).
    pub fn apply(&mut self, e: &ManifestEdit) -> std::result::Result<(), String> {
        self.change(&e.added, e.removed.iter().copied())
    }

    /// Applies an event's change (see [`crate::events::Event::tree_change`]).
    pub fn apply_files(
        &mut self,
        added: &[TableInfo],
        removed: &[TableInfo],
    ) -> std::result::Result<(), String> {
        self.change(added, removed.iter().map(|f| (f.level, f.number)))
    }

    fn change(
        &mut self,
        added: &[TableInfo],
        removed: impl Iterator<Item = (usize, u64)>,
    ) -> std::result::Result<(), String> {
        // One pass per level over what it loses (a level may hold thousands
        // of files and a history hundreds of thousands of edits).
        let mut gone: Vec<Vec<u64>> = vec![Vec::new(); LEVELS];
        for (level, n) in removed {
            gone.get_mut(level)
                .ok_or_else(|| format!("edit names level {level}"))?
                .push(n);
        }
        for (level, numbers) in gone.iter().enumerate() {
            if numbers.is_empty() {
                continue;
            }
            let files = &mut self.levels[level];
            let before = files.len();
            files.retain(|f| !numbers.contains(&f.number));
            if before - files.len() != numbers.len() {
                return Err(format!(
                    "edit deletes a file that level {level} does not hold (one of {numbers:?})"
                ));
            }
        }
        let mut l0_touched = false;
        for f in added {
            if f.level >= LEVELS {
                return Err(format!("edit names level {}", f.level));
            }
            if f.level == 0 {
                self.levels[0].push(Arc::new(f.clone()));
                l0_touched = true;
                continue;
            }
            // Below L0: insert in key order; only the neighbours can overlap.
            let files = &mut self.levels[f.level];
            let i = files.partition_point(|g| g.smallest < f.smallest);
            let ends_before = |a: &TableInfo, b: &TableInfo| {
                if a.largest_exclusive {
                    a.largest <= b.smallest
                } else {
                    a.largest < b.smallest
                }
            };
            let clash = (i > 0 && !ends_before(&files[i - 1], f))
                .then(|| files[i - 1].number)
                .or_else(|| {
                    files
                        .get(i)
                        .filter(|g| !ends_before(f, g))
                        .map(|g| g.number)
                });
            if let Some(other) = clash {
                return Err(format!(
                    "files {other} and {} overlap in level {}",
                    f.number, f.level
                ));
            }
            files.insert(i, Arc::new(f.clone()));
        }
        if l0_touched {
            self.levels[0].sort_by(|a, b| {
                b.largest_seq
                    .cmp(&a.largest_seq)
                    .then(b.number.cmp(&a.number))
            });
        }
        Ok(())
    }
}

/// L0 arranged into sublevels, computed by the engine's own code (the one
/// compaction picking and backpressure use).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct L0Shape {
    /// Sublevel of each file (0 = oldest), by file number.
    pub sublevel: HashMap<u64, usize>,
    /// How many sublevels L0 has.
    pub num_sublevels: usize,
    /// The most files stacked over one key: what a point read in L0 may
    /// have to consult.
    pub read_amplification: usize,
}

/// The sublevels of `l0` (the L0 files, any order; `TableInfo`s or
/// `Arc<TableInfo>`s as [`Tree::files`] gives them).
pub fn l0_sublevels<T: std::borrow::Borrow<TableInfo>>(l0: &[T]) -> L0Shape {
    let metas: Vec<Arc<FileMeta>> = l0.iter().map(|f| Arc::new(to_meta(f.borrow()))).collect();
    let sub = L0Sublevels::new(&metas, 0);
    let mut sublevel = HashMap::with_capacity(l0.len());
    for (i, files) in sub.sublevels().iter().enumerate() {
        for f in files {
            sublevel.insert(f.number, i);
        }
    }
    L0Shape {
        sublevel,
        num_sublevels: sub.num_sublevels(),
        read_amplification: sub.read_amplification(),
    }
}

/// The metadata the sublevel code reads: bounds (with the exclusive-end
/// sentinel), sequence numbers, number and size.
fn to_meta(f: &TableInfo) -> FileMeta {
    let largest = if f.largest_exclusive {
        make_internal_key(&f.largest, MAX_SEQUENCE, ValueKind::RangeDeletion)
    } else {
        make_internal_key(&f.largest, f.largest_seq, ValueKind::Value)
    };
    FileMeta {
        number: f.number,
        size: f.size,
        smallest: make_internal_key(&f.smallest, f.smallest_seq, ValueKind::Value),
        largest,
        smallest_seq: f.smallest_seq,
        largest_seq: f.largest_seq,
        global_seqno: None,
        num_entries: f.entries.unwrap_or(0),
        num_deletions: 0,
        num_range_deletions: 0,
        backing: f.backing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemVfs;
    use crate::{CompactionOptions, Db, Options};

    /// Replaying the MANIFEST gives the tree the database reports, and
    /// every L0 step's sublevel count matches the engine's own view.
    #[test]
    fn manifest_replay_matches_the_open_database() {
        let vfs = MemVfs::new();
        let dir = Path::new("/db");
        let opts = Options {
            vfs: Some(Arc::new(vfs.clone())),
            memtable_size: 64 << 10,
            compaction: CompactionOptions {
                target_file_size: 32 << 10,
                base_level_bytes: 256 << 10,
                ..CompactionOptions::default()
            },
            ..Options::default()
        };
        let db = Db::open(dir, opts).unwrap();
        for i in 0..20_000u32 {
            let k = (i.wrapping_mul(2_654_435_761) % 50_000).to_be_bytes();
            db.put(k, [7u8; 40]).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        let m = db.metrics();

        let h = read_manifest_in(&vfs, dir).unwrap();
        assert!(h.edits.len() > 3, "{} edits", h.edits.len());
        let mut tree = Tree::new();
        for e in &h.edits {
            tree.apply(e).unwrap();
        }
        for (l, lv) in m.levels.iter().enumerate() {
            assert_eq!(tree.files(l).len(), lv.files, "L{l} files");
            assert_eq!(tree.level_bytes(l), lv.bytes, "L{l} bytes");
        }
        assert_eq!(l0_sublevels(tree.files(0)).num_sublevels, m.l0_sublevels);

        let events = read_events_in(&vfs, dir).unwrap();
        assert!(events
            .records
            .iter()
            .any(|r| matches!(r.event, crate::events::Event::FlushEnd { .. })));
        db.close().unwrap();
    }

    #[test]
    fn edits_that_break_the_tree_are_refused() {
        let f = |level, number, lo: &str, hi: &str| TableInfo {
            level,
            number,
            size: 1,
            smallest: lo.into(),
            largest: hi.into(),
            largest_exclusive: false,
            smallest_seq: 1,
            largest_seq: number,
            entries: None,
            backing: None,
        };
        let mut t = Tree::new();
        t.apply_files(&[f(1, 1, "a", "c"), f(1, 2, "d", "f")], &[])
            .unwrap();
        let err = t
            .clone()
            .apply_files(&[f(1, 3, "c", "d")], &[])
            .unwrap_err();
        assert!(err.contains("overlap in level 1"), "{err}");
        let err = t
            .clone()
            .apply_files(&[], &[f(2, 1, "a", "c")])
            .unwrap_err();
        assert!(err.contains("level 2 does not hold"), "{err}");
        // An exclusive end may touch the next file's start.
        let mut x = f(1, 4, "g", "h");
        x.largest_exclusive = true;
        t.apply_files(&[x, f(1, 5, "h", "i")], &[]).unwrap();
        let shape = l0_sublevels(&[f(0, 6, "a", "m"), f(0, 7, "c", "d"), f(0, 8, "x", "y")]);
        assert_eq!(shape.num_sublevels, 2);
        assert_eq!(shape.sublevel[&7], 1);
        assert_eq!(
            shape.sublevel[&8], 0,
            "a newer file overlapping nothing sits low"
        );
        assert_eq!(shape.read_amplification, 2);
    }
}
