//! Flushables: what waits in the immutable queue between the active
//! memtable and the tree: full memtables, and ingested files that overlapped
//! a memtable. The queue holds trait objects and the read path treats every
//! entry alike.
//!
//! Invariant: entries are ordered by age; every sequence number in an entry
//! is larger than every one in the entries behind it (older) and smaller
//! than every one in the entries ahead of it and in the active memtable.
//! Several entries may share one WAL; `last_seq` tells recovery which of
//! its records are already in tables.

use super::read::PointLookup;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::memtable::MemTable;
use crate::sstable::{Found, RangeTombstone};
use std::sync::Arc;

pub trait Flushable: Send + Sync {
    /// A number for logs and metrics.
    fn id(&self) -> u64;
    /// The WAL holding this entry's data; it may be deleted once this entry
    /// and every older one are flushed.
    fn wal_number(&self) -> u64;
    /// Every sequence number of this entry (and of older entries) is at most
    /// this; once the entry is in the tree the MANIFEST's flushed sequence
    /// moves up to it.
    fn last_seq(&self) -> u64;
    /// The smallest sequence number in this entry, if it holds any.
    fn first_seq(&self) -> Option<u64>;
    /// Newest point entry for `user_key` at `snapshot` (tombstones not applied).
    fn get(&self, user_key: &[u8], snapshot: u64) -> Result<Option<Found>>;
    fn range_tombstones(&self) -> Vec<RangeTombstone>;
    /// The newest sequence number (at most `snapshot`) of a range tombstone
    /// covering `user_key`, or 0.
    fn max_covering_tombstone(&self, user_key: &[u8], snapshot: u64) -> u64 {
        super::read::covering(&self.range_tombstones(), user_key, snapshot)
    }
    /// `get` and `max_covering_tombstone` for each key of `lookups` still
    /// open (ascending keys, from `read::multi_get`), as `read::get` asks
    /// them: the tombstones first, then the entry. Key by key by default;
    /// an entry holding tables reads each table once for all the keys.
    fn multi_get(&self, lookups: &mut [PointLookup<'_>], snapshot: u64) {
        for l in lookups.iter_mut().filter(|l| !l.is_done()) {
            l.cover(self.max_covering_tombstone(l.key, snapshot));
            l.settle(self.get(l.key, snapshot));
        }
    }
    fn iter(&self) -> Box<dyn InternalIterator + Send>;
    /// Whether the entry holds data in the user-key range `[lo, hi]`.
    fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool;
    /// The ingested files, if this entry is an ingestion (the flush job
    /// places them instead of writing).
    fn ingested(&self) -> Option<&super::ingest::IngestedFlushable> {
        None
    }
}

/// A memtable that is full and waits to be flushed.
pub struct ImmutableMemTable {
    pub mem: Arc<MemTable>,
    pub wal_number: u64,
    /// The highest sequence number assigned when it stopped taking writes.
    pub last_seq: u64,
}

impl Flushable for ImmutableMemTable {
    fn id(&self) -> u64 {
        self.mem.id()
    }
    fn wal_number(&self) -> u64 {
        self.wal_number
    }
    fn last_seq(&self) -> u64 {
        self.last_seq
    }
    fn first_seq(&self) -> Option<u64> {
        self.mem.first_seq()
    }
    fn get(&self, user_key: &[u8], snapshot: u64) -> Result<Option<Found>> {
        Ok(self.mem.get(user_key, snapshot))
    }
    fn range_tombstones(&self) -> Vec<RangeTombstone> {
        self.mem.range_tombstones()
    }
    fn max_covering_tombstone(&self, user_key: &[u8], snapshot: u64) -> u64 {
        self.mem.max_covering_tombstone(user_key, snapshot)
    }
    fn iter(&self) -> Box<dyn InternalIterator + Send> {
        Box::new(self.mem.iter())
    }
    fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.mem.overlaps(lo, hi)
    }
}
