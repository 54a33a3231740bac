//! `SstReader`: the public, forward-only way to read back the puts of an
//! SST file written by [`SstWriter`](super::SstWriter) (RocksDB's
//! `SstFileReader`). Bulk loaders need it to merge files they wrote earlier
//! with later data; it yields user keys and values in key order and skips
//! nothing silently. Its items are pairs, which cannot say "deleted", so a
//! well-formed file holding anything but puts (deletions, range
//! tombstones, merge operands) is `Error::NotSupported`, never corruption:
//! refused at open when the file's properties count deletions or range
//! tombstones, else at the first such entry. [`TableFile::entries`]
//! (super::TableFile::entries) reads every entry with its kind. A corrupt
//! block is `Error::Corruption` (file and offset).

use super::reader::{Table, TableIter, TableOptions};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{ParsedKey, ValueKind};
use std::path::Path;
use std::sync::Arc;

/// Reads the key-value pairs of one SST file of puts, in key order.
///
/// A file that holds deletions or range tombstones (well-formed, but not
/// representable as pairs) is [`Error::NotSupported`] at
/// [`open`](Self::open); read it with
/// [`TableFile::entries`](super::TableFile::entries) and
/// [`TableFile::range_tombstones`](super::TableFile::range_tombstones)
/// instead.
///
/// ```
/// use strata::{SstOptions, SstWriter};
/// use strata::sstable::SstReader;
/// # let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("a.sst");
/// let mut w = SstWriter::create(&path, SstOptions::for_ingestion())?;
/// w.put("a", "1")?;
/// w.put("b", "2")?;
/// w.finish()?;
/// let pairs: Vec<(Vec<u8>, Vec<u8>)> = SstReader::open(&path)?.collect::<strata::Result<_>>()?;
/// assert_eq!(pairs, vec![(b"a".to_vec(), b"1".to_vec()), (b"b".to_vec(), b"2".to_vec())]);
/// # Ok::<(), strata::Error>(())
/// ```
pub struct SstReader {
    /// Every entry, of which a put is a pair and anything else an error.
    entries: TableEntries,
    done: bool,
}

impl SstReader {
    /// Opens `path` (checksums verified on every block read). A table whose
    /// footer declares no checksum is read unverified (a database refuses
    /// to ingest one unless it writes such tables itself). A table whose
    /// properties count deletions, range tombstones or merge operands is
    /// [`Error::NotSupported`]: its pairs alone would not be its contents.
    ///
    /// ```
    /// use strata::sstable::SstReader;
    /// use strata::{SstOptions, SstWriter};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("d.sst");
    /// let mut w = SstWriter::create(&path, SstOptions::for_ingestion())?;
    /// w.put("a", "1")?;
    /// w.delete("b")?;
    /// w.finish()?;
    /// let e = SstReader::open(&path).unwrap_err();
    /// assert!(e.is_not_supported(), "{e}");
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<SstReader> {
        let table: Arc<Table> = Table::open_path(path.as_ref(), TableOptions::default())?;
        let p = table.properties();
        if p.num_deletions > 0 || p.num_range_deletions > 0 || p.num_merge_operands > 0 {
            return Err(Error::NotSupported(format!(
                "{}: holds {} deletions, {} range tombstones and {} merge operands, which \
                 SstReader cannot yield (it reads files of puts); read it with \
                 TableFile::entries and TableFile::range_tombstones",
                table.name(),
                p.num_deletions,
                p.num_range_deletions,
                p.num_merge_operands
            )));
        }
        Ok(SstReader {
            entries: table.entries(),
            done: false,
        })
    }
}

impl std::fmt::Debug for SstReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstReader")
            .field("file", &self.entries.name)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Iterator for SstReader {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.entries.next()? {
            Ok(e) if e.kind == ValueKind::Value as u8 => Some(Ok((e.user_key, e.value))),
            Ok(e) => {
                // A well-formed entry of another kind (a deletion the
                // properties did not count, a merge operand): not damage,
                // just nothing a pair can say.
                self.done = true;
                Some(Err(Error::NotSupported(format!(
                    "{}: the entry of key {:?} in the block at offset {} is of kind {} (not a \
                     put), which SstReader cannot yield; read the file with TableFile::entries",
                    self.entries.name,
                    String::from_utf8_lossy(&e.user_key[..e.user_key.len().min(64)]),
                    self.entries.iter.block_offset(),
                    e.kind
                ))))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// One entry of a table as it is stored, in the table's key order: the user
/// key, the sequence number and kind of its internal key, and the value.
/// What `strata sst dump` prints, as RocksDB's `sst_dump --command=scan`
/// does. Range tombstones are not entries (a table lists them apart).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableEntry {
    /// The user key.
    pub user_key: Vec<u8>,
    /// The sequence number (the table's global sequence number, when it has
    /// one, in place of the stored zero).
    pub seq: u64,
    /// RocksDB's value-type byte: 1 a put, 0 a deletion, 7 a single
    /// deletion, 2 a merge operand.
    pub kind: u8,
    /// The value (empty for a deletion).
    pub value: Vec<u8>,
}

/// The entries of a table in key order ([`TableFile::entries`](super::TableFile::entries)). Stops at the
/// first error (a corrupt block or a key too short for its trailer), which
/// it yields, naming the file and the block's offset.
pub struct TableEntries {
    iter: TableIter,
    started: bool,
    done: bool,
    name: String,
}

impl std::fmt::Debug for TableEntries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableEntries")
            .field("file", &self.name)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Table {
    /// Every entry of the table in key order, puts and deletions alike, with
    /// the sequence number and kind of each (see [`TableEntry`]; the public
    /// way in is [`TableFile::entries`](super::TableFile::entries)).
    ///
    /// ```
    /// use strata::sstable::{TableEntry, TableFile};
    /// use strata::{SstOptions, SstWriter};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("a.sst");
    /// let mut w = SstWriter::create(&path, SstOptions::for_ingestion())?;
    /// w.put("a", "1")?;
    /// w.delete("b")?;
    /// w.finish()?;
    /// let t = TableFile::open(&path)?;
    /// let entries: Vec<TableEntry> = t.entries().collect::<strata::Result<_>>()?;
    /// let put = TableEntry { user_key: b"a".to_vec(), seq: 0, kind: 1, value: b"1".to_vec() };
    /// let del = TableEntry { user_key: b"b".to_vec(), seq: 0, kind: 0, value: Vec::new() };
    /// assert_eq!(entries, [put, del]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn entries(self: &Arc<Self>) -> TableEntries {
        TableEntries {
            iter: self.iter(),
            started: false,
            done: false,
            name: self.name().to_string(),
        }
    }
}

impl Iterator for TableEntries {
    type Item = Result<TableEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.started {
            self.iter.next();
        } else {
            self.iter.seek_to_first();
            self.started = true;
        }
        if !self.iter.valid() {
            self.done = true;
            return self.iter.status().err().map(Err);
        }
        match ParsedKey::parse(self.iter.key()) {
            Some(p) => Some(Ok(TableEntry {
                user_key: p.user_key.to_vec(),
                seq: p.seq,
                kind: p.kind,
                value: self.iter.value().to_vec(),
            })),
            None => {
                self.done = true;
                Some(Err(Error::corruption(
                    self.name.clone(),
                    self.iter.block_offset(),
                    "key shorter than its trailer",
                )))
            }
        }
    }
}
