//! Duplicate keys: what the merge writes for each group of equal keys.
//!
//! Owns the `--on-duplicate` rules ([`OnDuplicate`]). The merge of each
//! index (`sort`) hands a [`Resolver`] every group of entries sharing one
//! key, in input order (file, then line: the same whatever the chunking,
//! the threads or the spilled runs, so the outcome is deterministic). The
//! primary index is resolved first:
//!
//! - `error`: two rows with one primary key, or a key already in the table,
//!   fail the import, naming both rows (or the row and the table).
//! - `ignore`: the first row wins (the table's, else the earliest in the
//!   input); the others are *dropped*.
//! - `replace`: the last row of the input wins, over the table's too; the
//!   earlier input rows are dropped.
//!
//! A dropped row's entries in the secondary indexes are skipped when those
//! are merged (their sources are remembered). A table row that `replace`
//! overwrites may have had secondary entries the new row does not have:
//! those are *stale* (they would point at a row that no longer has that
//! value), so the resolver computes them from the old row and the caller
//! feeds them back into the secondary sorters as deletions, which the merge
//! writes unless a put of the same key wins. Two different rows sharing a
//! unique secondary key are always an error, in every mode, except when the
//! table's entry is stale (its row is being replaced).

use crate::codec::TableCodec;
use crate::error::{Error, Result, RowSource};
use crate::parse::{Entry, EntryRef, Src};
use crate::sort::Keep;
use crate::written::{self, WrittenKeys};
use std::collections::HashSet;
use strata::Db;

/// Which keys a [`Resolver`] looks up in the table (to find the rows an
/// import's keys collide with).
#[derive(Clone, Copy)]
pub enum Lookups<'a> {
    /// None: the pipeline's one merge into a table that held no rows.
    None,
    /// Every key: the table held rows before the import.
    All,
    /// A unit of a direct or batch import into a table that held no rows:
    /// only keys the import's earlier units may have written (empty in the
    /// first unit), and the keys this unit keeps are noted in it (see
    /// [`crate::written`]).
    Written(&'a WrittenKeys),
}

/// What to do with a row whose primary key is already taken (by a row in
/// the table, or another row of the input).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDuplicate {
    /// Fail the import, naming both rows.
    #[default]
    Error,
    /// Keep the row that came first (the table's, else the earliest in the
    /// input) and skip the others, with all their index entries.
    Ignore,
    /// Keep the row that came last in the input (over the table's row);
    /// the replaced row's secondary-index entries are deleted.
    Replace,
}

/// The source given to deletions of stale entries (sorts after every row).
pub const STALE_SRC: Src = Src {
    file: u32::MAX,
    line: u64::MAX,
};

/// Decides each group of equal keys (see the module documentation).
pub struct Resolver<'a> {
    db: &'a Db,
    codec: &'a TableCodec,
    names: &'a [String],
    mode: OnDuplicate,
    /// Which keys are looked up in the table.
    lookups: Lookups<'a>,
    /// Hashes of the keys this resolver kept that later units look up
    /// (primary and unique secondary ones), under [`Lookups::Written`],
    /// handed to the filter when the resolver is dropped.
    noted: Vec<u64>,
    /// Rows dropped while resolving the primary index.
    pub dropped: HashSet<Src>,
    /// Per index: keys of stale entries of replaced table rows, to delete.
    pub stale: Vec<Vec<Vec<u8>>>,
    /// Table rows replaced.
    pub replaced: u64,
}

impl<'a> Resolver<'a> {
    /// A resolver for one import (or one unit of a direct or batch import).
    pub fn new(
        db: &'a Db,
        codec: &'a TableCodec,
        names: &'a [String],
        mode: OnDuplicate,
        lookups: Lookups<'a>,
    ) -> Resolver<'a> {
        Resolver {
            db,
            codec,
            names,
            mode,
            lookups,
            noted: Vec::new(),
            dropped: HashSet::new(),
            stale: vec![Vec::new(); codec.table.indexes.len()],
            replaced: 0,
        }
    }

    /// Whether equal keys must reach the resolver (rather than fail in the
    /// sorter straight away).
    pub fn keeps_dups(mode: OnDuplicate) -> bool {
        mode != OnDuplicate::Error
    }

    /// The table's value for `key`, if it may have one: a get, unless the
    /// lookups rule the key out.
    fn lookup(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let may = match self.lookups {
            Lookups::None => false,
            Lookups::All => true,
            Lookups::Written(w) => w.may_contain(written::hash(key)),
        };
        Ok(if may { self.db.get(key)? } else { None })
    }

    /// Notes that `key` is written, for the lookups of later units.
    fn note(&mut self, key: &[u8]) {
        if matches!(self.lookups, Lookups::Written(_)) {
            self.noted.push(written::hash(key));
        }
    }

    fn src(&self, s: Src) -> RowSource {
        RowSource {
            file: self.names.get(s.file as usize).cloned().unwrap_or_default(),
            line: s.line,
        }
    }

    fn dup(&self, index: usize, key: &[u8], first: Option<Src>, second: Src) -> Error {
        Error::Duplicate {
            index: self.codec.table.indexes[index].name.clone(),
            key: self.codec.describe_key(index, key),
            first: first.map(|f| self.src(f)),
            second: self.src(second),
        }
    }

    /// What to write for `group` (entries of index `index` with one key,
    /// in input order, deletions last).
    pub fn decide(&mut self, index: usize, group: &[EntryRef<'_>]) -> Result<Keep> {
        let mut puts = group
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.delete && !self.dropped.contains(&e.src));
        let has_delete = group.iter().any(|e| e.delete);
        let Some((first_at, first)) = puts.next() else {
            return Ok(if has_delete {
                Keep::Delete
            } else {
                Keep::Nothing
            });
        };
        let second = puts.next();
        if index > 0 {
            // A secondary key held by two live rows: the rows differ (same
            // primary keys were resolved already), so this is a conflict.
            if let Some((_, s)) = second {
                return Err(self.dup(index, first.key, Some(first.src), s.src));
            }
            if self.codec.table.indexes[index].unique {
                if let Some(v) = self.lookup(first.key)? {
                    if v != first.value && !has_delete {
                        return Err(self.dup(index, first.key, None, first.src));
                    }
                }
                self.note(first.key);
            }
            return Ok(Keep::Put(first_at));
        }
        let (keep_at, keep) = match (self.mode, second) {
            (OnDuplicate::Error, Some((_, s))) => {
                return Err(self.dup(0, first.key, Some(first.src), s.src))
            }
            (OnDuplicate::Replace, Some(_)) => {
                let last = group.iter().rposition(|e| !e.delete).unwrap_or(first_at);
                (last, &group[last])
            }
            _ => (first_at, first),
        };
        for (i, e) in group.iter().enumerate() {
            if i != keep_at && !e.delete {
                self.dropped.insert(e.src);
            }
        }
        if let Some(old) = self.lookup(keep.key)? {
            match self.mode {
                OnDuplicate::Error => return Err(self.dup(0, keep.key, None, keep.src)),
                OnDuplicate::Ignore => {
                    self.dropped.insert(keep.src);
                    return Ok(Keep::Nothing);
                }
                OnDuplicate::Replace => self.note_replaced(keep.key, &old, keep.value)?,
            }
        }
        self.note(keep.key);
        Ok(Keep::Put(keep_at))
    }

    /// Remembers the secondary entries of the table's row (`old`) that the
    /// new row (`new`) under primary key `key` does not have.
    fn note_replaced(&mut self, key: &[u8], old: &[u8], new: &[u8]) -> Result<()> {
        let codec = self.codec;
        let corrupt = |m: String| {
            Error::Catalog(format!(
                "table {}: row {}: {m}",
                codec.table.name,
                codec.describe_key(0, key)
            ))
        };
        let old_row = codec.decode_primary(key, old).map_err(corrupt)?;
        let new_row = codec.decode_primary(key, new).map_err(corrupt)?;
        let pk = codec.pk_bytes(&old_row);
        let (mut ok, mut nk, mut v) = (Vec::new(), Vec::new(), Vec::new());
        for index in 1..codec.table.indexes.len() {
            codec.entry(index, &old_row, &pk, &mut ok, &mut v);
            codec.entry(index, &new_row, &pk, &mut nk, &mut v);
            if ok != nk {
                self.stale[index].push(ok.clone());
            }
        }
        self.replaced += 1;
        Ok(())
    }

    /// The deletions for index `index`, as entries for its sorter.
    pub fn take_stale(&mut self, index: usize) -> crate::batch::EntryBatch {
        std::mem::take(&mut self.stale[index])
            .into_iter()
            .map(|key| Entry {
                key,
                value: Vec::new(),
                src: STALE_SRC,
                delete: true,
            })
            .collect()
    }
}

impl Drop for Resolver<'_> {
    /// Hands the noted keys to the filter (a unit's resolvers run on
    /// several threads; the filter takes them between units).
    fn drop(&mut self) {
        if let Lookups::Written(w) = self.lookups {
            w.note(&mut self.noted);
        }
    }
}
