//! Table-level consistency: does every index of every table hold exactly
//! one entry per row?
//!
//! The engine's check (`strata::check`) verifies checksums and the tree's
//! invariants, but knows nothing of tables: after `Db::repair` drops a
//! damaged or missing SST, a table can keep all its rows and lose a whole
//! secondary index (or the reverse) with every remaining file sound. This
//! module owns the check one level up, for every table in the catalog.
//!
//! Invariant checked, per table and secondary index: the multiset of the
//! index's stored entries (key and value) equals the multiset of entries
//! the rows of the primary index imply (`TableCodec::entry`). It is tested
//! with a count and an order-independent fingerprint (the wrapping sum of a
//! 64-bit hash of each entry), so each index is read once in key order and
//! nothing is held in memory: a lost, extra, dangling or stale entry
//! changes the count or (but for a 2^-64 chance) the sum. Only when an
//! index disagrees is a sample looked for, with point lookups capped at
//! [`SAMPLE_PROBES`] each way, so a problem names a row or an entry when
//! one is found quickly. Reading only: nothing is written.

use crate::catalog::{self, CatalogEntry};
use crate::codec::TableCodec;
use crate::error::Result;
use std::hash::{DefaultHasher, Hasher};
use strata::Db;

/// Point lookups spent looking for a sample key of a disagreeing index, in
/// each direction (a row without its entry; an entry without its row). A
/// whole lost index is found at the first probe; a few missing entries
/// among millions may not be, and the problem then gives only the counts.
pub const SAMPLE_PROBES: u64 = 100_000;

/// One inconsistency of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The table's name.
    pub table: String,
    /// The index's name (`None`: the table as a whole, e.g. a row that
    /// does not decode).
    pub index: Option<String>,
    /// What is wrong, with counts and a sample key when one was found.
    pub what: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.index {
            Some(i) => write!(f, "table {}, index {}: {}", self.table, i, self.what),
            None => write!(f, "table {}: {}", self.table, self.what),
        }
    }
}

/// What [`check_tables`] read and found.
#[derive(Debug, Default)]
pub struct Report {
    /// Tables in the catalog, all checked.
    pub tables: u64,
    /// Rows (primary entries) read.
    pub rows: u64,
    /// Secondary index entries read.
    pub index_entries: u64,
    /// Inconsistencies found.
    pub problems: Vec<Finding>,
}

/// The fingerprint of one entry: its key and value, the key's length first
/// so that where the key ends is part of what is hashed.
fn entry_hash(k: &[u8], v: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write_usize(k.len());
    h.write(k);
    h.write(v);
    h.finish()
}

/// Count and fingerprint of a multiset of entries.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    n: u64,
    sum: u64,
}

impl Tally {
    fn add(&mut self, k: &[u8], v: &[u8]) {
        self.n += 1;
        self.sum = self.sum.wrapping_add(entry_hash(k, v));
    }
}

/// Checks every table in the catalog of `db` (see the module doc). Only a
/// catalog that cannot be read is an `Err`; what is inconsistent, and a
/// table that cannot be read to the end (a damaged block), is a problem in
/// the report naming the table, and the other tables are still checked.
pub fn check_tables(db: &Db) -> Result<Report> {
    let mut r = Report::default();
    for CatalogEntry { id, table } in catalog::list(db)? {
        r.tables += 1;
        let name = table.name.clone();
        if let Err(e) = check_table(db, &TableCodec::new(table, id), &mut r) {
            r.problems.push(Finding {
                table: name,
                index: None,
                what: format!("reading it failed, so it is not checked: {e}"),
            });
        }
    }
    Ok(r)
}

fn check_table(db: &Db, c: &TableCodec, r: &mut Report) -> Result<()> {
    let t = &c.table;
    let n = t.indexes.len();
    let mut expected = vec![Tally::default(); n];
    let (mut k, mut v) = (Vec::new(), Vec::new());
    let mut undecodable = 0u64;
    let mut first_bad = None;
    for kv in db.prefix(c.prefix(0)) {
        let (pk_key, value) = kv?;
        r.rows += 1;
        expected[0].n += 1;
        let row = match c.decode_primary(&pk_key, &value) {
            Ok(row) => row,
            Err(m) => {
                undecodable += 1;
                first_bad.get_or_insert_with(|| format!("{}: {m}", c.describe_key(0, &pk_key)));
                continue;
            }
        };
        let pk = &pk_key[c.prefix(0).len()..];
        for (i, e) in expected.iter_mut().enumerate().skip(1) {
            c.entry(i, &row, pk, &mut k, &mut v);
            e.add(&k, &v);
        }
    }
    if undecodable > 0 {
        r.problems.push(Finding {
            table: t.name.clone(),
            index: None,
            what: format!(
                "{undecodable} of {} rows do not decode (its indexes are not checked \
                 against them), e.g. the row with primary key {}",
                expected[0].n,
                first_bad.unwrap_or_default()
            ),
        });
    }
    for i in 1..n {
        let mut actual = Tally::default();
        for kv in db.prefix(c.prefix(i)) {
            let (k, v) = kv?;
            actual.add(&k, &v);
        }
        r.index_entries += actual.n;
        // Rows that do not decode imply no entries: the counts compare
        // with the rows that do (the undecodable rows are their own problem).
        let rows = expected[0].n - undecodable;
        if actual == expected[i] {
            continue;
        }
        let ix = &t.indexes[i];
        let cols: Vec<&str> = ix
            .columns
            .iter()
            .map(|&col| t.columns[col].name.as_str())
            .collect();
        let mut what = if actual.n == expected[i].n {
            format!(
                "{} entries for {rows} rows, but they are not the rows' entries \
                 (an entry is stale or names another row)",
                actual.n
            )
        } else {
            format!(
                "{} entries for {rows} rows: every row must have exactly one",
                actual.n
            )
        };
        if let Some(s) = sample(db, c, i)? {
            what.push_str("; e.g. ");
            what.push_str(&s);
        }
        r.problems.push(Finding {
            table: t.name.clone(),
            index: Some(format!("{} ({})", ix.name, cols.join(", "))),
            what,
        });
    }
    Ok(())
}

/// A row of `c` whose entry in index `i` is missing or different, or an
/// entry of index `i` that its row does not imply, looked for with at most
/// [`SAMPLE_PROBES`] point lookups each way.
fn sample(db: &Db, c: &TableCodec, i: usize) -> Result<Option<String>> {
    let ix_name = &c.table.indexes[i].name;
    let (mut k, mut v) = (Vec::new(), Vec::new());
    for kv in db.prefix(c.prefix(0)).take(SAMPLE_PROBES as usize) {
        let (pk_key, value) = kv?;
        let Ok(row) = c.decode_primary(&pk_key, &value) else {
            continue;
        };
        c.entry(i, &row, &pk_key[c.prefix(0).len()..], &mut k, &mut v);
        match db.get(&k)? {
            Some(got) if got == v => {}
            found => {
                return Ok(Some(format!(
                    "the row with primary key {} has {} in {ix_name} (its entry is {})",
                    c.describe_key(0, &pk_key),
                    if found.is_some() {
                        "an entry naming another row"
                    } else {
                        "no entry"
                    },
                    c.describe_key(i, &k),
                )))
            }
        }
    }
    for kv in db.prefix(c.prefix(i)).take(SAMPLE_PROBES as usize) {
        let (ek, ev) = kv?;
        let entry = c.describe_key(i, &ek);
        let Ok(pk_key) = c.primary_of_entry(i, &ek, &ev) else {
            return Ok(Some(format!("the entry {entry} does not decode")));
        };
        let Some(value) = db.get(&pk_key)? else {
            return Ok(Some(format!(
                "the entry {entry} names the row with primary key {}, which does not exist",
                c.describe_key(0, &pk_key)
            )));
        };
        let Ok(row) = c.decode_primary(&pk_key, &value) else {
            continue;
        };
        c.entry(i, &row, &pk_key[c.prefix(0).len()..], &mut k, &mut v);
        if k != ek || v != ev {
            return Ok(Some(format!(
                "the entry {entry} names the row with primary key {}, whose entry is {}",
                c.describe_key(0, &pk_key),
                c.describe_key(i, &k)
            )));
        }
    }
    Ok(None)
}
