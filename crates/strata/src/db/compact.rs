//! Running compactions: background threads pick compactions
//! (`compaction::picker`), merge their inputs through the compaction
//! iterator (`compaction::iter`), write outputs (`db::output`), and install
//! the result with one MANIFEST edit. Several run at once on disjoint key
//! ranges; the picker's `Running` set keeps them apart.
//!
//! A compaction of one file into a level where nothing overlaps it is a
//! *move*: the edit relinks the file and no byte is rewritten.
//!
//! Inputs are read through the table cache, so a virtual input contributes
//! only its bounded part (and its tombstones clipped to it), and the output
//! replaces only the virtual file; its backing table lives on while other
//! files use it. A running compaction pins the version it was picked from,
//! which keeps its input tables on disk even if an ingest-and-excise removes
//! them from the current version meanwhile (`db::excise`); such a compaction
//! is then *cancelled* at install: its outputs could hold excised data, and
//! the inputs it would delete are gone. Nothing else removes a compaction's
//! inputs (the picker never gives one file to two compactions).

use super::events::{micros, tables};
use super::flush::delete_obsolete_files;
use super::level_iter::LevelIter;
use super::output::{CutPolicy, OutputWriter};
use super::{DbInner, DbState};
use crate::compaction::iter::CompactionIter;
use crate::compaction::picker::{self, Compaction};
use crate::error::Result;
use crate::events::Event;
use crate::iter::merging::MergingIterator;
use crate::iter::InternalIterator;
use crate::sstable::RangeTombstone;
use crate::version::sublevels::L0Sublevels;
use crate::version::{Version, VersionEdit, NUM_LEVELS};
use parking_lot::MutexGuard;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) fn compaction_loop(db: Arc<DbInner>) {
    loop {
        let c = {
            let mut st = db.state.lock();
            loop {
                if db.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                if db.bg_error().is_none() && st.manual_compactions == 0 {
                    if let Some(c) = pick(&db, &st) {
                        st.running.add(&c);
                        let n = st.running.outputs.len() as u64;
                        db.stats
                            .peak_running_compactions
                            .fetch_max(n, Ordering::Relaxed);
                        // The version `c` was picked from: the same lock.
                        break (c, st.versions.current());
                    }
                }
                db.bg_cv.wait_for(&mut st, Duration::from_millis(200));
            }
        };
        let (c, pinned) = c;
        let r = run(&db, &c, pinned);
        {
            let mut st = db.state.lock();
            st.running.remove(&c);
            if let Err(e) = r {
                db.set_bg_error("a background compaction", e);
            }
            db.bg_cv.notify_all();
            db.flush_done_cv.notify_all();
        }
        db.commit.notify_room();
    }
}

fn pick(db: &DbInner, st: &MutexGuard<'_, DbState>) -> Option<Compaction> {
    let v = st.versions.current();
    let mut sub = L0Sublevels::new(v.files(0), db.opts.compaction.flush_split_bytes);
    sub.set_compacting(&st.running.files);
    let unflushed = picker::Unflushed {
        earliest: earliest_unflushed_seq(db, st),
        earliest_in: &|lo, hi| first_seq_in_memory(st, Some((lo, hi))),
    };
    picker::pick(&v, &sub, &st.running, &db.opts.compaction, &unflushed)
}

/// The smallest sequence number held in memory (the memtable and the
/// immutable queue), or the next one to be assigned if memory holds none:
/// every file made from memory from now on holds only sequence numbers at
/// or above it. The visible sequence number is loaded first: a write it
/// covers has reached its memtable, so a memtable that looks empty after
/// the load holds nothing at or below it.
fn earliest_unflushed_seq(db: &DbInner, st: &DbState) -> u64 {
    let next = db.visible_seq.load(Ordering::Acquire).saturating_add(1);
    next.min(first_seq_in_memory(st, None))
}

/// The smallest sequence number of the memory entries holding data in
/// `range` (all of them for `None`), or `u64::MAX`. Called under the state
/// lock, after every write older than any file in the version has reached
/// its memtable.
fn first_seq_in_memory(st: &DbState, range: Option<(&[u8], &[u8])>) -> u64 {
    let mem = Some(&st.mem)
        .filter(|m| range.is_none_or(|(lo, hi)| m.overlaps(lo, hi)))
        .and_then(|m| m.first_seq());
    st.imm
        .iter()
        .filter(|e| range.is_none_or(|(lo, hi)| e.overlaps(lo, hi)))
        .filter_map(|e| e.first_seq())
        .chain(mem)
        .fold(u64::MAX, u64::min)
}

/// Whether every input of `c` is still in the current version at its level
/// (an excise may have removed or cut one while `c` ran).
fn inputs_intact(v: &Version, c: &Compaction) -> bool {
    c.all_inputs()
        .all(|(l, f)| v.files(l).iter().any(|g| g.number == f.number))
}

/// Runs one compaction and installs its result. `pinned` is the version `c`
/// was picked from; holding it keeps the input tables from the obsolete-file
/// pass until the compaction is installed or cancelled.
pub(crate) fn run(db: &DbInner, c: &Compaction, pinned: Arc<Version>) -> Result<()> {
    let start = Instant::now();
    let job = db.events.new_job();
    let inputs = tables(c.all_inputs().map(|(l, f)| (l, f.as_ref())));
    db.events.record(Event::CompactionBegin {
        job,
        reason: c.reason.name().to_string(),
        start_level: c.start_level,
        output_level: c.output_level,
        inputs: inputs.clone(),
    });
    let end = |outputs: &[crate::version::FileMeta], moved: bool, cancelled: bool| {
        let written = if moved || cancelled {
            0
        } else {
            outputs.iter().map(|f| f.size).sum()
        };
        Event::CompactionEnd {
            job,
            reason: if moved { "move" } else { c.reason.name() }.to_string(),
            start_level: c.start_level,
            output_level: c.output_level,
            moved,
            cancelled,
            inputs: inputs.clone(),
            outputs: tables(outputs.iter().map(|f| (c.output_level, f))),
            bytes_read: if moved { 0 } else { c.input_bytes() },
            bytes_written: written,
            micros: micros(start.elapsed()),
        }
    };
    if let Some(r) = try_move(db, c, &end) {
        return r;
    }
    let floor = db.new_file_number();
    db.state.lock().pending_outputs.insert(floor);
    let r = write_outputs(db, c, job);
    let mut st = db.state.lock();
    st.pending_outputs.remove(&floor);
    let outputs = r?;
    if !inputs_intact(&st.versions.current(), c) {
        // Cancelled by an excise: the outputs are in no version and go with
        // the next obsolete-file pass (this one, once the pin is dropped).
        db.stats
            .compactions_cancelled
            .fetch_add(1, Ordering::Relaxed);
        db.events.record(end(&outputs, false, true));
        drop(pinned);
        delete_obsolete_files(db, &mut st);
        return Ok(());
    }
    let mut edit = VersionEdit::default();
    for (l, f) in c.all_inputs() {
        edit.delete_file(l, f.number);
    }
    for f in &outputs {
        edit.add_file(c.output_level, f.clone());
    }
    let seq = db.visible_seq.load(Ordering::Acquire);
    st.versions.log_and_apply_unsynced(edit, seq)?;
    // Written and synced without the state lock (`version::manifest_log`);
    // the result is published once durable.
    drop(st);
    db.manifest.sync()?;
    let mut st = db.state.lock();
    db.install_super_version(&st);
    let read: u64 = c.input_bytes();
    let written: u64 = outputs.iter().map(|f| f.size).sum();
    db.stats.compactions.fetch_add(1, Ordering::Relaxed);
    db.stats
        .bytes_compacted_read
        .fetch_add(read, Ordering::Relaxed);
    db.stats
        .bytes_compacted_written
        .fetch_add(written, Ordering::Relaxed);
    db.events.record(end(&outputs, false, false));
    drop(pinned);
    delete_obsolete_files(db, &mut st);
    Ok(())
}

/// A single input file with nothing to merge moves down by relinking.
fn try_move(
    db: &DbInner,
    c: &Compaction,
    end: &dyn Fn(&[crate::version::FileMeta], bool, bool) -> Event,
) -> Option<Result<()>> {
    let gp: u64 = c.grandparents.iter().map(|f| f.size).sum();
    let single =
        c.inputs.len() == 1 && c.output_inputs.is_empty() && c.start_level != c.output_level;
    if !single
        || gp > db.opts.compaction.target_file_size.saturating_mul(10)
        || c.inputs[0].num_range_deletions > 0
    {
        return None;
    }
    let f = &c.inputs[0];
    let mut edit = VersionEdit::default();
    edit.delete_file(c.start_level, f.number);
    edit.add_file(c.output_level, (**f).clone());
    let mut st = db.state.lock();
    if !st
        .versions
        .current()
        .files(c.start_level)
        .iter()
        .any(|g| g.number == f.number)
    {
        // An excise removed or cut the file since it was picked.
        db.stats
            .compactions_cancelled
            .fetch_add(1, Ordering::Relaxed);
        db.events.record(end(&[], true, true));
        return Some(Ok(()));
    }
    let seq = db.visible_seq.load(Ordering::Acquire);
    if let Err(e) = st.versions.log_and_apply_unsynced(edit, seq) {
        return Some(Err(e));
    }
    drop(st);
    if let Err(e) = db.manifest.sync() {
        return Some(Err(e));
    }
    let st = db.state.lock();
    db.install_super_version(&st);
    db.stats.moves.fetch_add(1, Ordering::Relaxed);
    db.events
        .record(end(std::slice::from_ref(f.as_ref()), true, false));
    Some(Ok(()))
}

fn write_outputs(db: &DbInner, c: &Compaction, job: u64) -> Result<Vec<crate::version::FileMeta>> {
    let mut children: Vec<Box<dyn InternalIterator + Send>> = Vec::new();
    let mut tombstones: Vec<RangeTombstone> = Vec::new();
    let mut collect = |f: &crate::version::FileMeta| -> Result<()> {
        if f.num_range_deletions > 0 {
            tombstones.extend(db.table_cache.range_tombstones(f)?);
        }
        Ok(())
    };
    if c.start_level == 0 {
        for f in &c.inputs {
            collect(f)?;
            children.push(Box::new(db.table_cache.iter_no_fill(f)?));
        }
    } else {
        for f in &c.inputs {
            collect(f)?;
        }
        children.push(Box::new(LevelIter::for_compaction(
            c.inputs.clone(),
            Arc::clone(&db.table_cache),
        )));
    }
    if !c.output_inputs.is_empty() {
        for f in &c.output_inputs {
            collect(f)?;
        }
        children.push(Box::new(LevelIter::for_compaction(
            c.output_inputs.clone(),
            Arc::clone(&db.table_cache),
        )));
    }
    let snapshots: Vec<u64> = db.snapshots.lock().keys().copied().collect();
    let kept = CompactionIter::output_tombstones(&snapshots, &tombstones, c.bottommost);
    let mut it = CompactionIter::new(
        Box::new(MergingIterator::new(children)),
        snapshots,
        &tombstones,
        c.bottommost,
    );
    let target = db.opts.compaction.target_file_size;
    let policy = CutPolicy {
        target_file_size: target,
        max_grandparent_overlap: if c.output_level + 1 < NUM_LEVELS {
            10 * target
        } else {
            0
        },
        grandparents: c.grandparents.clone(),
        // Intra-L0 outputs are cut at the sublevel split keys, like flushes,
        // so they do not become the wide files the split keys prevent.
        // L0 -> Lbase outputs are cut where the Lbase files they replace
        // are cut (`compaction::lbase_cuts`: their boundaries, and inner
        // points of large ones), too: bulk loaders cut their files at
        // those keys (`Db::ingest_split_keys`), and cuts that stay put keep
        // the next load's L0 files aligned with the last one's, so each L0
        // pick stays one slice of the key space (W5, docs/bench-history/w5-sublevels.md).
        split_keys: if c.output_level == 0 {
            super::flush::l0_split_keys(db, &db.super_version().version)
        } else if c.start_level == 0 && db.opts.compaction.l0_sublevels {
            super::ingest::lbase_cut_keys(db, &c.output_inputs, c.lbase_split)
        } else {
            Vec::new()
        },
    };
    let new_number = || {
        let number = db.new_file_number();
        db.events.record(Event::TableCreated {
            job,
            number,
            reason: "compaction".into(),
        });
        number
    };
    let mut w = OutputWriter::new(
        db.vfs.as_ref(),
        &db.dir,
        &db.opts.sst,
        policy,
        kept,
        &new_number,
    );
    while it.valid() {
        w.add(it.key(), it.value())?;
        it.next();
    }
    it.status()?;
    w.finish()
}

/// Compacts every file overlapping `[lo, hi]` (user keys; `None` for
/// unbounded) down the tree, level by level, in the caller's thread.
/// Automatic compactions are paused meanwhile.
pub(crate) fn compact_range(db: &DbInner, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
    {
        let mut st = db.state.lock();
        st.manual_compactions += 1;
        while !st.running.is_empty() {
            db.bg_cv.wait_for(&mut st, Duration::from_millis(50));
        }
    }
    let r = (|| {
        for level in 0..NUM_LEVELS - 1 {
            // Picked and registered as running under one lock, so no
            // ingestion is placed into its output range in between.
            let c = {
                let mut st = db.state.lock();
                let v = st.versions.current();
                let (all_lo, all_hi) = key_span(&v);
                let lo = lo.map(<[u8]>::to_vec).unwrap_or(all_lo);
                let hi = hi.map(<[u8]>::to_vec).unwrap_or(all_hi);
                let c = picker::manual(&v, level, &lo, &hi, &st.running, &db.opts.compaction);
                if let Some(c) = &c {
                    st.running.add(c);
                }
                c.map(|c| (c, v))
            };
            if let Some((c, pinned)) = c {
                let r = run(db, &c, pinned);
                db.state.lock().running.remove(&c);
                r?;
            }
        }
        Ok(())
    })();
    // A compaction that failed before its MANIFEST record is the caller's
    // error alone (nothing changed). One whose MANIFEST write or sync
    // failed poisoned the log, so no later flush could record its table:
    // the database stops, as after a background compaction's failure, and
    // this caller gets the error saying so, as every later one will.
    let r = match r {
        Err(e) if db.manifest.check().is_err() => {
            Err(db.set_bg_error("a compaction's MANIFEST write", e))
        }
        r => r,
    };
    let mut st = db.state.lock();
    st.manual_compactions -= 1;
    db.bg_cv.notify_all();
    drop(st);
    db.commit.notify_room();
    r
}

/// The smallest and largest user key of any file.
fn key_span(v: &crate::version::Version) -> (Vec<u8>, Vec<u8>) {
    let mut lo: Option<&[u8]> = None;
    let mut hi: Option<&[u8]> = None;
    for (_, f) in v.all_files() {
        if lo.is_none_or(|x| f.smallest_user_key() < x) {
            lo = Some(f.smallest_user_key());
        }
        if hi.is_none_or(|x| f.largest_user_key() > x) {
            hi = Some(f.largest_user_key());
        }
    }
    (
        lo.unwrap_or_default().to_vec(),
        hi.unwrap_or_default().to_vec(),
    )
}

/// Waits until no compaction is running or needed (or an error).
pub(crate) fn wait_for_compactions(db: &DbInner) -> Result<()> {
    let mut st = db.state.lock();
    loop {
        if let Some(e) = db.bg_error() {
            return Err(e);
        }
        if st.running.is_empty() && st.imm.is_empty() && pick(db, &st).is_none() {
            return Ok(());
        }
        db.bg_cv.notify_all();
        db.flush_done_cv
            .wait_for(&mut st, Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::earliest_unflushed_seq;
    use crate::db::ingest::IngestOptions;
    use crate::db::{Db, Options};
    use crate::sstable::{SstOptions, SstWriter};

    /// The bound an intra-L0 pick respects is the oldest sequence number in
    /// memory, not the newest in the tree: an ingestion placed beside a
    /// memtable it does not overlap is newer than what the memtable holds,
    /// and it is the memtable's flush that must not end up below a
    /// compaction output.
    #[test]
    fn the_earliest_unflushed_sequence_number_is_the_oldest_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
        let next = |db: &Db| earliest_unflushed_seq(&db.inner, &db.inner.state.lock());
        assert_eq!(next(&db), db.latest_sequence() + 1, "nothing in memory");

        db.put("m", "1").unwrap();
        let in_memory = db.latest_sequence();
        let sst = dir.path().join("a.sst");
        let mut w = SstWriter::create(&sst, SstOptions::for_ingestion()).unwrap();
        w.put(b"a", b"2").unwrap();
        w.finish().unwrap();
        let opts = IngestOptions {
            small_file_bytes: 0,
            ..IngestOptions::default()
        };
        db.ingest(&[sst], &opts).unwrap();
        let ingested = db.latest_sequence();
        assert!(ingested > in_memory);
        assert!(
            db.files().iter().any(|(_, f)| f.largest_seq == ingested),
            "the ingestion went straight into the tree"
        );
        db.put("n", "3").unwrap();
        assert_eq!(next(&db), in_memory, "the memtable's first write");

        db.flush().unwrap();
        assert_eq!(next(&db), db.latest_sequence() + 1, "flushed");
    }
}
