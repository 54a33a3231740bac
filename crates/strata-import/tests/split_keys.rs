//! A direct-mode unit that overlaps the table's earlier rows lands in L0;
//! its files must be cut at the tree's split keys (`Db::ingest_split_keys`),
//! so each overlaps at most one file of Lbase and the L0 -> Lbase
//! compaction that takes it rewrites one Lbase file, not the level (W5,
//! docs/bench-history/w5-sublevels.md). With `l0_sublevels` off there are no split keys and
//! a unit's file spans every Lbase file it meets (checked too, so the test
//! sees the difference it is about).

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::sync::Arc;
use strata::events::{Event, EventCollector, TableInfo};
use strata::key::user_key;
use strata::{CompactionOptions, Db, Options};
use strata_import::csv::input::Input;
use strata_import::{import, ImportOptions, Mode, Schema};

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, note TEXT);";

fn csv(dir: &Path, name: &str, ids: impl Iterator<Item = i64>) -> Input {
    let mut s = String::new();
    for id in ids {
        s.push_str(&format!("{id},note number {id} with some padding text\n"));
    }
    let p = dir.join(name);
    std::fs::write(&p, s).unwrap();
    Input::File(p)
}

/// A file's user-key bounds.
type Bounds = (Vec<u8>, Vec<u8>);

fn overlaps(a: &Bounds, f: &TableInfo) -> bool {
    a.0.as_slice() <= f.largest.as_slice() && f.smallest.as_slice() <= a.1.as_slice()
}

/// Imports even ids (pipeline: one ingestion into an empty tree, so L6,
/// cut at 8 KiB), then odd ids in direct mode (one unit, overlapping
/// every L6 file). Returns the L6 files before the second import and the
/// files its ingestion put into L0.
fn run(dir: &Path, sublevels: bool) -> (Vec<Bounds>, Vec<TableInfo>) {
    let events = Arc::new(EventCollector::new());
    let db = Db::open(
        dir.join("db"),
        Options {
            compaction: CompactionOptions {
                l0_sublevels: sublevels,
                // Nothing compacts while the test looks.
                l0_compaction_threshold: 100,
                ..CompactionOptions::default()
            },
            // At or above the threshold, or the open refuses it.
            l0_stop_sublevels: 100,
            event_listener: Some(events.clone()),
            ..Options::default()
        },
    )
    .unwrap();
    let schema = Schema::parse(SCHEMA).unwrap();
    let t = schema.table("t").unwrap();
    let small = ImportOptions {
        target_file_size: 8 << 10,
        ..ImportOptions::default()
    };
    let even = csv(dir, "even.csv", (0..4000).map(|i| 2 * i));
    import(&db, t, &[even], &small).unwrap();
    let l6: Vec<Bounds> = db
        .files()
        .into_iter()
        .filter(|(l, _)| *l == 6)
        .map(|(_, f)| {
            (
                user_key(&f.smallest).to_vec(),
                user_key(&f.largest).to_vec(),
            )
        })
        .collect();
    assert!(l6.len() >= 4, "L6 has several files: {}", l6.len());
    let seen = events.records().len();
    let odd = csv(dir, "odd.csv", (0..4000).map(|i| 2 * i + 1));
    let direct = ImportOptions {
        mode: Mode::Direct,
        ..ImportOptions::default()
    };
    let s = import(&db, t, &[odd], &direct).unwrap();
    assert_eq!(s.units, 1, "one unit");
    let l0 = events.records()[seen..]
        .iter()
        .filter_map(|r| match &r.event {
            Event::Ingest { added, .. } => Some(added.clone()),
            _ => None,
        })
        .flatten()
        .filter(|f| f.level == 0)
        .collect();
    (l6, l0)
}

/// The L6 files some L0 file overlaps (the catalog's own file is met by
/// none).
fn met<'a>(l6: &'a [Bounds], l0: &[TableInfo]) -> Vec<&'a Bounds> {
    l6.iter()
        .filter(|g| l0.iter().any(|f| overlaps(g, f)))
        .collect()
}

#[test]
fn a_direct_unit_is_cut_at_the_trees_split_keys() {
    let dir = tempfile::tempdir().unwrap();
    let (l6, l0) = run(dir.path(), true);
    let met = met(&l6, &l0);
    assert!(
        met.len() >= 4,
        "the unit meets several L6 files: {}",
        met.len()
    );
    assert!(
        l0.len() >= met.len(),
        "{} L0 files for {} L6 files",
        l0.len(),
        met.len()
    );
    for f in &l0 {
        let n = l6.iter().filter(|g| overlaps(g, f)).count();
        assert!(n <= 1, "L0 file {f:?} overlaps {n} L6 files");
    }
}

#[test]
fn without_sublevels_a_unit_is_cut_only_at_its_target_size() {
    let dir = tempfile::tempdir().unwrap();
    let (l6, l0) = run(dir.path(), false);
    assert_eq!(l0.len(), 1, "one file: {l0:?}");
    assert!(
        met(&l6, &l0).len() >= 4,
        "the one file spans several L6 files"
    );
}
