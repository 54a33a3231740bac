//! `lsm`: the shape of the tree and its history.
//!
//! The tree (files and bytes per level, L0 sublevels) is the current
//! version, from the MANIFEST. The counters (flushes, compactions, bytes
//! written, ingestions) are summed over the database's `EVENTS` log, which
//! every open, flush, compaction and ingestion appends to and which is kept
//! across reopens: they describe the database's whole life, not this
//! process (which has done nothing yet).

use anyhow::Result;
use std::io::BufRead;
use std::path::Path;
use strata::Db;

pub fn lsm(db_path: &Path) -> Result<()> {
    let db = crate::open::existing(db_path)?;
    print_tree(&db);
    let totals = EventTotals::read(&db_path.join("EVENTS"))?;
    totals.print();
    Ok(())
}

/// The current version's shape.
pub fn print_tree(db: &Db) {
    let m = db.metrics();
    println!("level  files         bytes        target   score");
    for (l, lv) in m.levels.iter().enumerate() {
        let base = if l == m.base_level { " (Lbase)" } else { "" };
        let target = if l == 0 {
            "-".to_string()
        } else {
            lv.target_bytes.to_string()
        };
        println!(
            "L{l}     {:>5} {:>13} {:>13} {:>7.2}{base}",
            lv.files, lv.bytes, target, lv.score
        );
    }
    println!(
        "L0: {} files in {} sublevels; read amplification {}",
        m.l0_files, m.l0_sublevels, m.read_amplification
    );
    println!(
        "memtable {} bytes, {} immutable; compaction debt {} bytes; last sequence {}",
        m.memtable_bytes, m.immutable_memtables, m.compaction_debt, m.last_sequence
    );
}

/// Counters summed over the `EVENTS` log.
#[derive(Default, Debug, PartialEq)]
pub struct EventTotals {
    pub opens: u64,
    pub flushes: u64,
    pub bytes_flushed: u64,
    pub compactions: u64,
    pub moves: u64,
    pub bytes_compacted_read: u64,
    pub bytes_compacted_written: u64,
    pub ingests: u64,
    pub bytes_ingested: u64,
    pub stalls: u64,
    pub stall_micros: u64,
    /// Lines that did not parse (a torn last line after a crash).
    pub unreadable: u64,
}

impl EventTotals {
    /// Sums the log at `path`; a missing log (a database from before the
    /// log existed) gives zeros.
    pub fn read(path: &Path) -> Result<EventTotals> {
        let mut t = EventTotals::default();
        let f = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(t),
            Err(e) => return Err(anyhow::anyhow!("reading {}: {e}", path.display())),
        };
        for line in std::io::BufReader::new(f).lines() {
            let line = line?;
            match serde_json::from_str::<serde_json::Value>(&line) {
                Ok(v) => t.add(&v),
                Err(_) => t.unreadable += 1,
            }
        }
        Ok(t)
    }

    fn add(&mut self, v: &serde_json::Value) {
        let n = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
        let added_bytes = || {
            v.get("added")
                .and_then(|a| a.as_array())
                .map(|a| a.iter().filter_map(|f| f.get("size")?.as_u64()).sum())
                .unwrap_or(0)
        };
        match v.get("event").and_then(|e| e.as_str()) {
            Some("open") => self.opens += 1,
            Some("flush") => {
                self.flushes += 1;
                self.bytes_flushed += n("bytes_written");
            }
            Some("compaction") => {
                if v.get("moved").and_then(|m| m.as_bool()) == Some(true) {
                    self.moves += 1;
                } else {
                    self.compactions += 1;
                    self.bytes_compacted_read += n("bytes_read");
                    self.bytes_compacted_written += n("bytes_written");
                }
            }
            Some("ingest") => {
                self.ingests += 1;
                self.bytes_ingested += added_bytes();
            }
            Some("stall") => {
                self.stalls += 1;
                self.stall_micros += n("micros");
            }
            _ => {}
        }
    }

    fn print(&self) {
        println!(
            "history (EVENTS): {} opens; {} flushes ({} B); {} compactions (read {} B, wrote {} B), {} moves; {} ingestions ({} B); {} write stops ({:.3}s)",
            self.opens,
            self.flushes,
            self.bytes_flushed,
            self.compactions,
            self.bytes_compacted_read,
            self.bytes_compacted_written,
            self.moves,
            self.ingests,
            self.bytes_ingested,
            self.stalls,
            self.stall_micros as f64 / 1e6
        );
        if self.unreadable > 0 {
            println!("({} unreadable EVENTS lines skipped)", self.unreadable);
        }
    }
}
