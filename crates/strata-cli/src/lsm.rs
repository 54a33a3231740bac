//! `lsm`: the shape of the tree and its history.
//!
//! The tree (files and bytes per level, L0 sublevels) is the current
//! version, from the MANIFEST. The counters (flushes, compactions, bytes
//! written, ingestions, checkpoints) are summed over the database's
//! `EVENTS` log, which every open, flush, compaction, ingestion and
//! completed checkpoint appends to and which is kept
//! across reopens: they describe the database's whole life, not this
//! process (which has done nothing yet). An open that rebuilds memtables
//! from the WAL writes them to L0 without flush events; its `open` (or
//! `reopen`) line carries the tree, so an L0 table that first appears in
//! an open's tree is counted as a flush at open.

use anyhow::Result;
use std::collections::BTreeSet;
use std::path::Path;
use strata::events::Event;
use strata::Db;

pub fn lsm(db_path: &Path) -> Result<()> {
    // The open comes first: its checks give the errors for what is not a
    // database. Neither it nor the chart (read from the MANIFEST) writes.
    let db = crate::open::read_only(db_path)?;
    out!("{}", crate::viz_cmd::text_chart(db_path)?)?;
    print_tree(&db)?;
    let totals = EventTotals::read(db_path)?;
    totals.print()
}

/// The current version's shape.
pub fn print_tree(db: &Db) -> Result<()> {
    let m = db.metrics();
    outln!("level  files         bytes        target   score")?;
    for (l, lv) in m.levels.iter().enumerate() {
        let base = if l == m.base_level { " (Lbase)" } else { "" };
        let target = if l == 0 {
            "-".to_string()
        } else {
            lv.target_bytes.to_string()
        };
        outln!(
            "L{l}     {:>5} {:>13} {:>13} {:>7.2}{base}",
            lv.files,
            lv.bytes,
            target,
            lv.score
        )?;
    }
    outln!(
        "L0: {} files in {} sublevels; whole-tree read amplification {} (memtables + L0 sublevels + non-empty levels)",
        m.l0_files,
        m.l0_sublevels,
        m.read_amplification
    )?;
    outln!(
        "memtable {} bytes, {} immutable; compaction debt {} bytes; last sequence {}",
        m.memtable_bytes,
        m.immutable_memtables,
        m.compaction_debt,
        m.last_sequence
    )?;
    print_write_waits(&m)
}

/// Foreground write waits since this `Db` was opened: the longest, and a
/// log2 histogram per cause (nothing for a database that took no writes,
/// such as `strata lsm`'s read-only open; its history is in EVENTS).
pub fn print_write_waits(m: &strata::Metrics) -> Result<()> {
    if m.write_waits.is_empty() {
        return Ok(());
    }
    outln!(
        "longest write wait {:.3} ms ({})",
        m.longest_write_wait_micros as f64 / 1e3,
        m.longest_write_wait_cause
    )?;
    outln!("write waits        count   total ms     max ms  histogram (below µs: count)")?;
    for w in &m.write_waits {
        let hist: Vec<String> = w
            .histogram
            .iter()
            .map(|(below, n)| format!("<{below}:{n}"))
            .collect();
        outln!(
            "{:<18} {:>6} {:>10.3} {:>10.3}  {}",
            w.cause,
            w.count,
            w.total_micros as f64 / 1e3,
            w.max_micros as f64 / 1e3,
            hist.join(" ")
        )?;
    }
    Ok(())
}

/// Counters summed over the `EVENTS` log.
#[derive(Default, Debug, PartialEq)]
pub struct EventTotals {
    pub opens: u64,
    /// Flushes, those at open included.
    pub flushes: u64,
    pub bytes_flushed: u64,
    /// Of `flushes`: L0 tables that first appeared in an open's tree (the
    /// memtables it rebuilt from the WAL, which log no flush events).
    pub flushes_at_open: u64,
    pub compactions: u64,
    pub moves: u64,
    pub bytes_compacted_read: u64,
    pub bytes_compacted_written: u64,
    pub ingests: u64,
    pub bytes_ingested: u64,
    /// Completed checkpoints (`Db::checkpoint`, `strata checkpoint`; a
    /// refused or failed one logs nothing).
    pub checkpoints: u64,
    pub stalls: u64,
    pub stall_micros: u64,
    /// Long foreground write waits (`write_wait` events): count and
    /// longest in microseconds, by cause.
    pub slow_waits: std::collections::BTreeMap<String, (u64, u64)>,
    /// Lines skipped: of kinds this version does not know, or a torn last
    /// line after a crash.
    pub unreadable: u64,
    /// Damaged lines skipped, each as "file line N (offset O): what".
    pub damaged: Vec<String>,
}

impl EventTotals {
    /// Sums the log of the database at `db` (every segment, read through
    /// `strata::inspect`, the one event type the engine writes); a missing
    /// log (a database from before the log existed) gives zeros. A torn
    /// last line of a segment is skipped.
    pub fn read(db: &Path) -> Result<EventTotals> {
        let mut t = EventTotals::default();
        let parsed = strata::inspect::read_events(db)?;
        t.unreadable = (parsed.unknown.len() + parsed.torn.len()) as u64;
        t.damaged = parsed
            .damaged
            .iter()
            .map(|(file, line, offset, what)| {
                format!("{file} line {line} (offset {offset}): {what}")
            })
            .collect();
        // The tree as the events so far describe it, by (level, number);
        // `None` before the first event that carries the whole tree.
        let mut tree: Option<BTreeSet<(usize, u64)>> = None;
        for r in &parsed.records {
            t.add(&r.event);
            t.add_flushes_at_open(&mut tree, &r.event);
        }
        Ok(t)
    }

    /// Follows the tree through `e`; for an `open`, counts each L0 table
    /// of its tree that the events before it did not put there. The
    /// log's first whole tree (a database older than its log, or a log
    /// whose older segments are gone) is taken as it is.
    fn add_flushes_at_open(&mut self, tree: &mut Option<BTreeSet<(usize, u64)>>, e: &Event) {
        if let Some(files) = e.whole_tree() {
            if let (Event::Open { .. }, Some(before)) = (e, tree.as_ref()) {
                for f in files {
                    if f.level == 0 && !before.contains(&(f.level, f.number)) {
                        self.flushes += 1;
                        self.flushes_at_open += 1;
                        self.bytes_flushed += f.size;
                    }
                }
            }
            *tree = Some(files.iter().map(|f| (f.level, f.number)).collect());
        } else if let (Some(tree), Some((added, removed))) = (tree.as_mut(), e.tree_change()) {
            for f in removed {
                tree.remove(&(f.level, f.number));
            }
            for f in added {
                tree.insert((f.level, f.number));
            }
        }
    }

    fn add(&mut self, e: &Event) {
        match e {
            Event::Open { .. } => self.opens += 1,
            Event::FlushEnd { bytes_written, .. } => {
                self.flushes += 1;
                self.bytes_flushed += bytes_written;
            }
            Event::CompactionEnd {
                moved,
                cancelled,
                bytes_read,
                bytes_written,
                ..
            } => {
                if *moved {
                    self.moves += 1;
                } else if !*cancelled {
                    self.compactions += 1;
                    self.bytes_compacted_read += bytes_read;
                    self.bytes_compacted_written += bytes_written;
                }
            }
            Event::Ingest { added, .. } => {
                self.ingests += 1;
                self.bytes_ingested += added.iter().map(|f| f.size).sum::<u64>();
            }
            Event::Checkpoint { .. } => self.checkpoints += 1,
            Event::WriteStallEnd { micros, .. } => {
                self.stalls += 1;
                self.stall_micros += micros;
            }
            Event::WriteWait { cause, micros } => {
                let e = self.slow_waits.entry(cause.clone()).or_default();
                e.0 += 1;
                e.1 = e.1.max(*micros);
            }
            _ => {}
        }
    }

    fn print(&self) -> Result<()> {
        let at_open = if self.flushes_at_open > 0 {
            format!("{} at open, from the WAL; ", self.flushes_at_open)
        } else {
            String::new()
        };
        outln!(
            "history (EVENTS): {} opens; {} flushes ({at_open}{} B); {} compactions (read {} B, wrote {} B), {} moves; {} ingestions ({} B); {} checkpoints; {} write stops ({:.3}s)",
            self.opens,
            self.flushes,
            self.bytes_flushed,
            self.compactions,
            self.bytes_compacted_read,
            self.bytes_compacted_written,
            self.moves,
            self.ingests,
            self.bytes_ingested,
            self.checkpoints,
            self.stalls,
            self.stall_micros as f64 / 1e6
        )?;
        if !self.slow_waits.is_empty() {
            let by: Vec<String> = self
                .slow_waits
                .iter()
                .map(|(c, (n, max))| format!("{c}: {n}, longest {:.1} ms", *max as f64 / 1e3))
                .collect();
            outln!("long write waits (EVENTS): {}", by.join("; "))?;
        }
        if self.unreadable > 0 {
            outln!("({} unreadable EVENTS lines skipped)", self.unreadable)?;
        }
        for d in self.damaged.iter().take(3) {
            outln!("(damaged EVENTS line skipped, so the totals may miss an event: {d})")?;
        }
        if self.damaged.len() > 3 {
            outln!(
                "({} more damaged EVENTS lines skipped)",
                self.damaged.len() - 3
            )?;
        }
        Ok(())
    }
}
