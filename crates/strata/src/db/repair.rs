//! `Db::repair`: the explicit, reported way past the corruption that
//! `Db::open` refuses. It salvages what the files prove and lists exactly
//! what was lost; it never runs on its own.
//!
//! 1. **The MANIFEST**: CURRENT's, or if CURRENT is missing or damaged the
//!    highest-numbered `MANIFEST-*` in the directory. Its edits are read up
//!    to the first damage; the edits from there on are lost (reported with
//!    the offset and reason).
//! 2. **Tables it names**: a table that is missing, or whose size is not
//!    the recorded one, leaves the version (reported: level, key range,
//!    entries); so do virtual files of a missing physical table and queued
//!    ingestions with a missing file.
//! 3. **Tables it does not name**: a readable table holding entries that
//!    nothing else accounts for (the output of a flush whose MANIFEST edit
//!    was lost, see `recovery_checks`) is put back in L0, with bounds and
//!    sequence numbers read from its entries. Its entries are newer than
//!    everything the recovered version holds in tables, so L0 is where
//!    they belong. A table with sequence number 0 (an ingested file whose
//!    sequence number only the lost record held) cannot be placed safely:
//!    the open that ends the repair moves it to `lost/`, and the report
//!    says so. So does a table that cannot be read: what it held cannot
//!    be known, so the report lists it under `lost`.
//! 4. **Ingestions whose record was lost**: a WAL marker (`db::marker`)
//!    past the MANIFEST's last sequence number names the ingestion's files.
//!    If every one is present with its recorded size and opens as a table
//!    (the check `open::roll_forward` makes), the ingestion is redone as
//!    open's recovery redoes it: its files are queued again at the marker's
//!    sequence number (an excise becomes a range-tombstone file at that
//!    number, as for an ingestion that waited in the queue), so the open
//!    that ends the repair places them in sequence order among the WAL
//!    records; the report lists it under `recovered`. Otherwise it is
//!    reported as lost, with the reason.
//! 5. **Sequence numbers**: WAL records past the MANIFEST's last sequence
//!    number with a gap before them (an ingestion whose record was lost and
//!    whose marker did not survive) are kept; the gap is reported as lost
//!    and the last sequence raised past it. What a gap is, is the open's
//!    rule (`wal_sequence`); only what is done about it differs.
//! 6. **The live WAL**: if the WAL the MANIFEST names as the oldest still
//!    needed is missing (recovery refuses that, `recovery_checks`), its
//!    writes are reported lost and an empty WAL takes its place. A WAL
//!    damaged before its end (which recovery refuses) is cut back to the
//!    records before the damage; what follows is reported lost, and the
//!    damaged original is kept in `lost/`.
//! 7. A new MANIFEST holding the repaired version is written and CURRENT
//!    pointed at it; then the database is opened normally (which replays
//!    the WALs and moves what it cannot prove redundant to `lost/`), so a
//!    repair that leaves the database unopenable fails.
//! 8. The repaired database is checked as `strata check` does (every
//!    table's blocks are read, so a repair costs a full read): damage no
//!    step above mends, such as a table block that fails its checksum, is
//!    left in place and reported under `lost`, never as "nothing lost".

use super::filenames::{self, FileKind};
use super::marker::IngestMarker;
use super::options::Options;
use super::recovery_checks::{self as checks, DirKind};
use super::table_cache::{ChecksumRule, TableFiles};
use super::wal_sequence::{SeqBreak, WalSequence};
use super::write_batch::WriteBatch;
use super::Db;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, ParsedKey, ValueKind, MAX_SEQUENCE};
use crate::version::{FileMeta, VersionEdit, VersionSet};
use crate::vfs::{OsVfs, Vfs};
use crate::wal::{LogReader, TailPolicy};
use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

/// Cuts WAL `w` back to its first `at` bytes (the records read before its
/// damage: a log's prefix up to a record's end is itself a log that ends
/// cleanly), keeping the damaged original in `lost/`. The prefix is
/// written to a temporary file, synced, then renamed over the WAL, so a
/// crash leaves either file whole.
fn salvage_wal(vfs: &dyn Vfs, dir: &Path, w: u64, at: u64, why: &str) -> Result<()> {
    let (name, path) = (format!("{w:06}.log"), filenames::wal(dir, w));
    let data = crate::vfs::read_all(vfs, &path)?;
    checks::copy_to_lost(
        vfs,
        dir,
        &name,
        &data,
        &format!("damaged at offset {at} ({why}); repair kept the records before it"),
    )?;
    let keep = usize::try_from(at).map_or(data.len(), |a| a.min(data.len()));
    let tmp = filenames::temp(dir, w);
    crate::vfs::write_all(vfs, &tmp, &data[..keep])?;
    vfs.rename(&tmp, &path)?;
    vfs.sync_dir(dir)
}

/// What `Db::repair` found, kept and lost.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct RepairReport {
    /// The MANIFEST the repair started from.
    pub manifest: String,
    /// Everything that was lost, one line each (empty: nothing was).
    pub lost: Vec<String>,
    /// What was salvaged or set aside, one line each.
    pub recovered: Vec<String>,
}

impl RepairReport {
    /// Whether the repair kept everything (nothing in [`Self::lost`]).
    pub fn lost_nothing(&self) -> bool {
        self.lost.is_empty()
    }
}

/// See the module documentation.
pub(crate) fn repair(dir: &Path, opts: Options) -> Result<RepairReport> {
    let vfs: Arc<dyn Vfs> = opts.vfs.clone().unwrap_or_else(|| Arc::new(OsVfs));
    let shown = dir.display();
    // No CURRENT but files (`Unrecognised`) is exactly what repair may be
    // for; a missing directory or a RocksDB one is refused.
    if checks::classify_dir(vfs.as_ref(), dir)? == DirKind::Missing {
        return Err(Error::NotFound {
            path: shown.to_string(),
        });
    }
    let mut report = RepairReport::default();
    let names = vfs.list(dir)?;
    // Not even a MANIFEST: nothing here is Strata's, so nothing (not even
    // LOCK) is created.
    if !names.iter().any(|n| {
        matches!(
            filenames::parse(n),
            Some(FileKind::Current) | Some(FileKind::Manifest(_))
        )
    }) {
        return Err(Error::NotADatabase {
            path: shown.to_string(),
            reason: "the directory has no CURRENT and no MANIFEST, so there is nothing to repair"
                .into(),
        });
    }
    let manifest = {
        let _lock = vfs.lock(&filenames::lock(dir))?;
        repair_locked(&vfs, dir, &names, ChecksumRule::of(&opts), &mut report)?
    };
    // The normal open finishes the job; what it moves aside is reported.
    let lost_log = dir.join("lost").join("LOG");
    let before = crate::vfs::read_all(vfs.as_ref(), &lost_log).unwrap_or_default();
    let opened = Db::open(
        dir,
        Options {
            create_if_missing: false,
            error_if_exists: false,
            ..opts
        },
    )
    .and_then(|db| db.close());
    if let Err(e) = opened {
        // Say what the repair changed before it failed: the database is
        // not as it was, and the MANIFEST it replaced is kept.
        return Err(e.context(format!(
            "the repair wrote {manifest} and pointed CURRENT at it, then opening the \
             repaired database failed; the MANIFEST it replaced is kept in lost/"
        )));
    }
    report.manifest = manifest;
    let after = crate::vfs::read_all(vfs.as_ref(), &lost_log).unwrap_or_default();
    if after.len() > before.len() {
        for line in String::from_utf8_lossy(&after[before.len()..]).lines() {
            report.recovered.push(format!("moved to lost/: {line}"));
        }
    }
    // What the steps above do not look at (a table's blocks, the WALs'
    // records past the MANIFEST) is checked now, as `strata check` would:
    // a report of "nothing lost" over a table with an unreadable block
    // would be false.
    for p in crate::check::check(vfs.as_ref(), dir)?.problems {
        report.lost.push(format!(
            "{p}: damage left in place (reads that reach it fail; `strata check` reports it)"
        ));
    }
    Ok(report)
}

fn repair_locked(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    names: &[String],
    rule: ChecksumRule,
    report: &mut RepairReport,
) -> Result<String> {
    // Every table this repair reads is opened under the database's
    // checksum rule, as the open that ends the repair would read it.
    let tables = TableFiles {
        vfs: vfs.as_ref(),
        dir,
        rule,
    };
    let number = match crate::version::set::read_current(vfs.as_ref(), dir) {
        Ok(n) => n,
        Err(e) => {
            let newest = names
                .iter()
                .filter_map(|n| match filenames::parse(n) {
                    Some(FileKind::Manifest(m)) => Some(m),
                    _ => None,
                })
                .max()
                .ok_or_else(|| {
                    Error::NotSupported(format!(
                        "{}: no MANIFEST to repair from ({e}); rebuilding a database from \
                         its tables alone is not supported",
                        dir.display()
                    ))
                })?;
            report.recovered.push(format!(
                "CURRENT unusable ({e}): using the newest MANIFEST, MANIFEST-{newest:06}"
            ));
            newest
        }
    };
    let mname = format!("MANIFEST-{number:06}");
    let r = VersionSet::recover_manifest(Arc::clone(vfs), dir, number, true)?;
    if let Some((off, why)) = &r.stopped {
        report.lost.push(format!(
            "{mname}: the edits from offset {off} on do not read ({why}); what they \
                 recorded is lost unless a salvaged line names it"
        ));
    }
    let mut set = r.set;
    // Every file this repair may read must open before it changes
    // anything: an operating system's refusal (a permission, an I/O error)
    // is not damage to repair around, and a repair failing half-way would
    // leave a new MANIFEST over a database it could not read.
    // A table that is damaged is the repair's to handle (it reports it);
    // only the refusals are failures here.
    for name in names {
        let read = match filenames::parse(name) {
            Some(FileKind::Table(n)) => tables.open(n).map(drop),
            Some(FileKind::Wal(_)) => vfs.open_random(&dir.join(name)).and_then(|f| {
                let mut first = [0u8; 1];
                if f.is_empty() {
                    Ok(())
                } else {
                    f.read_exact_at(&mut first, 0)
                }
            }),
            _ => Ok(()),
        };
        if let Err(e) = read {
            if e.is_io() {
                return Err(e.context("nothing was changed"));
            }
        }
    }
    // The MANIFEST being replaced is kept in lost/ (the open after the
    // repair deletes it as obsolete): what the repair dropped from it can
    // still be read there.
    let old = crate::vfs::read_all(vfs.as_ref(), &dir.join(&mname))?;
    super::recovery_checks::copy_to_lost(
        vfs.as_ref(),
        dir,
        &mname,
        &old,
        "the MANIFEST a repair replaced",
    )?;
    // The MANIFEST may have lost the edits that counted the newest files:
    // a file this repair writes (an excise's range-tombstone file, the new
    // MANIFEST) must not take one's number.
    super::open::mark_numbers_used(&set, names);
    let flushed = set.flushed_seq();

    // Tables the MANIFEST names that are not there as it recorded them.
    let mut edit = VersionEdit::default();
    let mut gone = std::collections::HashSet::new();
    for (level, f) in set.current().all_files() {
        let path = filenames::table(dir, f.backing_number());
        let problem = if !vfs.exists(&path) {
            Some("missing".to_string())
        } else if !f.is_virtual() {
            let size = vfs.file_size(&path)?;
            (size != f.size).then(|| format!("{size} bytes, {} recorded", f.size))
        } else {
            None
        };
        if let Some(p) = problem {
            edit.delete_file(level, f.number);
            gone.insert(f.backing_number());
            report.lost.push(format!(
                "table {:06} (level {level}, keys {}..{}, {} entries, sequence numbers \
                 {}..={}): {p}",
                f.number,
                crate::util::hex::escape(f.smallest_user_key()),
                crate::util::hex::escape(f.largest_user_key()),
                f.num_entries,
                f.smallest_seq,
                f.largest_seq
            ));
        }
    }
    // Virtual files cut from a physical table that left.
    for (level, f) in set.current().all_files() {
        if f.is_virtual()
            && gone.contains(&f.backing_number())
            && !edit.deleted_files.contains(&(level, f.number))
        {
            edit.delete_file(level, f.number);
        }
    }
    let mut drop_queued = Vec::new();
    for (seq, files) in set.queued_ingestions() {
        if let Some(f) = files
            .iter()
            .find(|f| !vfs.exists(&filenames::table(dir, f.number)))
        {
            drop_queued.extend(files.iter().map(|f| f.number));
            report.lost.push(format!(
                "the ingestion at sequence {seq} ({} files): file {:06} is missing",
                files.len(),
                f.number
            ));
        }
    }

    // WAL sequence numbers, to tell what unreferenced tables hold that
    // nothing else does, and to find gaps.
    let mut wal_ranges: Vec<(u64, u64)> = Vec::new();
    // Ingestions' WAL markers.
    let mut markers: Vec<WriteBatch> = Vec::new();
    let mut wals: Vec<u64> = names
        .iter()
        .filter_map(|n| match filenames::parse(n) {
            Some(FileKind::Wal(w)) if w >= set.log_number() => Some(w),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    // The WAL the MANIFEST names as the oldest still needed, which recovery
    // requires: if it is gone, its writes are lost, and an empty one takes
    // its place so the database opens (a gap before the next WAL's records
    // is reported below, as for any other).
    let log_number = set.log_number();
    if log_number > 0 && wals.first() != Some(&log_number) {
        report.lost.push(format!(
            "{:06}.log: missing, though the MANIFEST names it as the oldest WAL still \
             needed; the writes after sequence number {} that it held are lost (an empty \
             WAL now takes its place)",
            log_number,
            set.flushed_seq()
        ));
        let path = filenames::wal(dir, log_number);
        vfs.create(&path)?.sync()?;
        vfs.sync_dir(dir)?;
    }
    for w in wals {
        let path = filenames::wal(dir, w);
        let mut rd = LogReader::new(
            vfs.open_sequential(&path)?,
            path.display().to_string(),
            TailPolicy::TolerateTornTail,
        );
        // Records read before any damage: the WAL is cut back to them.
        let mut intact = 0usize;
        loop {
            match rd.read_record() {
                Ok(Some(rec)) => {
                    intact += 1;
                    if let Ok(b) = WriteBatch::from_bytes(rec) {
                        // A batch numbered out of range is left to the
                        // open that follows, which refuses it by name.
                        let Some(last) = b.last_sequence() else {
                            continue;
                        };
                        if b.count() > 0 {
                            wal_ranges.push((b.sequence(), last));
                        } else {
                            markers.push(b);
                        }
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    // The open would refuse this WAL; it is cut back to
                    // the records before the damage, the original kept in
                    // lost/.
                    let at = rd.last_record_end();
                    salvage_wal(vfs.as_ref(), dir, w, at, &e.to_string())?;
                    report.lost.push(format!(
                        "{w:06}.log: every record from offset {at} on, where it is damaged \
                         ({e}); the {intact} records before it were kept, and the damaged \
                         file is in lost/"
                    ));
                    break;
                }
            }
        }
    }
    // Markers past the MANIFEST's last sequence: redone where the files
    // they name prove the ingestion, else (with why) reported below.
    let manifest_last = set.last_sequence();
    let mut redo: Vec<IngestMarker> = Vec::new();
    let mut not_redone: Vec<(u64, String)> = Vec::new();
    for b in &markers {
        let s = b.sequence();
        if s <= flushed || s <= manifest_last {
            continue;
        }
        match super::open::roll_forward(tables, b, manifest_last) {
            Ok(m) => redo.push(m),
            Err(why) => not_redone.push((s, why)),
        }
    }
    let in_wal = |s: u64| wal_ranges.iter().any(|&(a, b)| a <= s && s <= b);
    let ingested: std::collections::HashSet<u64> = set
        .current()
        .all_files()
        .filter_map(|(_, f)| f.global_seqno)
        .chain(set.queued_ingestions().into_iter().map(|(s, _)| s))
        .chain(redo.iter().map(|m| m.seq))
        .collect();

    // Unreferenced tables holding data nothing else accounts for go back.
    let referenced: std::collections::HashSet<u64> = set
        .current()
        .all_files()
        .map(|(_, f)| f.backing_number())
        .chain(
            set.queued_ingestions()
                .into_iter()
                .flat_map(|(_, fs)| fs.into_iter().map(|f| f.number)),
        )
        .chain(redo.iter().flat_map(|m| m.files.iter().map(|f| f.number)))
        .collect();
    let mut top = set.last_sequence();
    for name in names {
        let Some(FileKind::Table(n)) = filenames::parse(name) else {
            continue;
        };
        if referenced.contains(&n) || r.deleted.contains(&n) {
            continue;
        }
        let accounted = |s: u64| s <= flushed || in_wal(s) || ingested.contains(&s);
        // One that does not open (under the checksum rule too) is not put
        // back: the open that ends the repair moves it to `lost/`. What it
        // held cannot be known, so its entries count as lost: a torn
        // flush or compaction output held nothing unique, but a finished
        // flush whose MANIFEST record was lost did, and a report of
        // "nothing lost" must never be a guess.
        let (meta, unaccounted) = match table_meta(tables, n, &accounted) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(e) => {
                report.lost.push(format!(
                    "{name}: no MANIFEST record names it and it cannot be read ({e}); \
                     whatever it held that no other file holds is not in the repaired \
                     database (the file is kept in lost/). Such a file is most often a \
                     flush's or compaction's output that a crash cut short, whose entries \
                     the WAL or the tables it was made from still hold; but a finished \
                     flush whose MANIFEST record was lost looks the same, so this is not \
                     reported as nothing lost"
                ));
                continue;
            }
        };
        if meta.smallest_seq == 0 {
            report.lost.push(format!(
                "{name}: an ingested file (sequence number 0) that no surviving MANIFEST \
                 record places; kept in lost/ for you to ingest again"
            ));
            continue;
        }
        if unaccounted {
            report.recovered.push(format!(
                "{name}: put back in L0 (keys {}..{}, {} entries, sequence numbers {}..={})",
                crate::util::hex::escape(meta.smallest_user_key()),
                crate::util::hex::escape(meta.largest_user_key()),
                meta.num_entries,
                meta.smallest_seq,
                meta.largest_seq
            ));
            top = top.max(meta.largest_seq);
            edit.add_file(0, meta);
        }
    }

    // Gaps in the WAL's sequence numbers past the MANIFEST's last one (and
    // the tables put back above), found by the open's rule
    // (`wal_sequence`): repair keeps the records after a gap and reports
    // its numbers lost where the open refuses, and it reports a gap before
    // a marker too, which the open accepts. An ingestion's number is not a
    // gap: its marker is in the WAL, and it is redone or reported lost
    // below. Taken in number order, as this step always took them: a log
    // out of order is the open's to refuse.
    let mut numbered: Vec<(u64, u64, bool)> = wal_ranges
        .iter()
        .map(|&(a, b)| (a, b, false))
        .chain(redo.iter().map(|m| (m.seq, m.seq, true)))
        .chain(not_redone.iter().map(|&(s, _)| (s, s, true)))
        .collect();
    numbered.sort_unstable();
    let mut seqs = WalSequence::new(flushed, top);
    for &(a, b, marker) in &numbered {
        let found = if marker {
            seqs.marker(a)
        } else {
            seqs.batch(a, b).err()
        };
        if let Some(SeqBreak::Gap { from, to, .. }) = found {
            report.lost.push(format!(
                "sequence numbers {}..={to}: in no WAL record, past every surviving MANIFEST \
                 record (an ingestion whose record was lost)",
                from.max(top + 1)
            ));
        }
    }
    for (s, why) in &not_redone {
        report.lost.push(format!(
            "the ingestion at sequence number {s}: its WAL marker survives but not its \
             MANIFEST record ({why}; an ingested file no record places is kept in lost/)"
        ));
    }
    if let Some(b) = wal_ranges.iter().map(|&(_, b)| b).max() {
        top = top.max(b);
    }
    if let Some(m) = markers.iter().map(|b| b.sequence()).max() {
        top = top.max(m);
    }

    // The redone ingestions, queued at their sequence numbers (an excise
    // as a range-tombstone file first, as `ingest::prepare` orders it).
    let mut wrote_tombstone = false;
    for m in redo {
        let s = m.seq;
        let mut what: Vec<String> = m
            .files
            .iter()
            .map(|f| format!("{:06}.sst", f.number))
            .collect();
        if let Some((a, b)) = m.excise.as_ref().filter(|(a, b)| a < b) {
            let n = set.new_file_number();
            let t = super::ingest::write_tombstone_file(vfs.as_ref(), dir, n, a, b)?;
            edit.queued_files.push(t.meta(s));
            wrote_tombstone = true;
            what.push(format!(
                "the excise of {}..{} as the range-tombstone file {n:06}.sst",
                crate::util::hex::escape(a),
                crate::util::hex::escape(b)
            ));
        }
        edit.queued_files.extend(m.files);
        report.recovered.push(format!(
            "the ingestion at sequence number {s}, whose MANIFEST record was lost: redone \
             from its WAL marker ({})",
            what.join(", ")
        ));
    }
    if wrote_tombstone {
        vfs.sync_dir(dir)?;
    }

    set.repair_version(&edit, &drop_queued)?;
    set.raise_last_sequence(top);
    set.start_manifest()?;
    Ok(mname)
}

/// The MANIFEST record of table `n`, read from its entries (`None` if it
/// holds none), and whether some entry's sequence number is not
/// `accounted` for. Opened under the database's checksum rule: a table
/// whose footer says "none" would be put back on bytes nothing verified,
/// and every read of it would then fail in the table cache.
fn table_meta(
    tables: TableFiles<'_>,
    n: u64,
    accounted: &dyn Fn(u64) -> bool,
) -> Result<Option<(FileMeta, bool)>> {
    let path = tables.path(n);
    let t = tables.open(n)?;
    let mut it = t.iter();
    it.seek_to_first();
    let mut smallest: Option<Vec<u8>> = None;
    let mut largest: Option<Vec<u8>> = None;
    let (mut lo_seq, mut hi_seq) = (u64::MAX, 0);
    let (mut entries, mut deletions) = (0, 0);
    let mut unaccounted = false;
    while it.valid() {
        let k = it.key();
        let pk = ParsedKey::parse(k)
            .ok_or_else(|| Error::corruption(path.display().to_string(), 0, "bad key"))?;
        lo_seq = lo_seq.min(pk.seq);
        hi_seq = hi_seq.max(pk.seq);
        unaccounted |= !accounted(pk.seq);
        entries += 1;
        if matches!(
            pk.value_kind(),
            Some(ValueKind::Deletion) | Some(ValueKind::SingleDeletion)
        ) {
            deletions += 1;
        }
        if smallest.is_none() {
            smallest = Some(k.to_vec());
        }
        largest = Some(k.to_vec());
        it.next();
    }
    it.status()?;
    for r in t.range_tombstones() {
        unaccounted |= !accounted(r.seq);
        lo_seq = lo_seq.min(r.seq);
        hi_seq = hi_seq.max(r.seq);
        let s = key::make_internal_key(&r.start, r.seq, ValueKind::RangeDeletion);
        let e = key::make_internal_key(&r.end, MAX_SEQUENCE, ValueKind::RangeDeletion);
        if smallest
            .as_ref()
            .is_none_or(|x| key::compare_internal(&s, x) == Ordering::Less)
        {
            smallest = Some(s);
        }
        if largest
            .as_ref()
            .is_none_or(|x| key::compare_internal(&e, x) == Ordering::Greater)
        {
            largest = Some(e);
        }
    }
    let (Some(smallest), Some(largest)) = (smallest, largest) else {
        return Ok(None);
    };
    Ok(Some((
        FileMeta {
            number: n,
            size: t.file_size(),
            smallest,
            largest,
            smallest_seq: lo_seq,
            largest_seq: hi_seq,
            global_seqno: None,
            num_entries: entries,
            num_deletions: deletions,
            num_range_deletions: t.range_tombstones().len() as u64,
            backing: None,
        },
        unaccounted,
    )))
}
