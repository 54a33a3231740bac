//! `TableFile`: the public way to look at one SST file as a whole, what
//! `strata sst dump` and `strata sst verify` show (RocksDB's `sst_dump`):
//! its footer's format version and checksum type, its properties, its
//! entries and range tombstones, and a verification that reads every
//! block. The engine's own reader (`Table`) stays internal; this type
//! lends it out read-only and names nothing of the engine's in its
//! signatures.
//!
//! Invariant: opening reads the footer, the index, the properties and the
//! range tombstones and checks them (a damaged file is an
//! `Error::Corruption` naming the file and the offset, never a panic); the
//! data blocks are read, checksums verified, only by `entries` and
//! `verify`. A table whose footer declares no checksum is read unverified,
//! and [`TableFile::has_checksums`] says so.

use super::properties::{display_value, TableProperties};
use super::reader::{RangeTombstone, Table, TableOptions, TableStats};
use super::sst_reader::TableEntries;
use crate::error::{Error, Result};
use crate::util::checksum::ChecksumType;
use std::path::Path;
use std::sync::Arc;

/// One SST file opened for inspection.
///
/// ```
/// use strata::sstable::TableFile;
/// use strata::{SstOptions, SstWriter};
/// # let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("a.sst");
/// let mut w = SstWriter::create(&path, SstOptions::for_ingestion())?;
/// w.delete_range("m", "p")?;
/// w.put("a", "1")?;
/// w.delete("b")?;
/// w.finish()?;
///
/// let t = TableFile::open(&path)?;
/// assert_eq!(t.properties().num_range_deletions, 1);
/// let keys: Vec<Vec<u8>> = t.entries().map(|e| e.map(|e| e.user_key)).collect::<strata::Result<_>>()?;
/// assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
/// let r = &t.range_tombstones()[0];
/// assert_eq!((r.start.as_slice(), r.end.as_slice()), (&b"m"[..], &b"p"[..]));
/// let stats = t.verify()?; // reads every block
/// assert_eq!(stats.entries, 2);
/// # Ok::<(), strata::Error>(())
/// ```
pub struct TableFile {
    table: Arc<Table>,
}

impl std::fmt::Debug for TableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableFile")
            .field("file", &self.table.name())
            .field("size", &self.table.file_size())
            .field("format_version", &self.table.footer().format_version)
            .finish_non_exhaustive()
    }
}

impl TableFile {
    /// Opens the SST file at `path` on the OS file system. A directory, a
    /// file too short for a footer, or a footer, index or properties block
    /// that does not read is an error naming the file (and the offset, for
    /// damage).
    pub fn open(path: impl AsRef<Path>) -> Result<TableFile> {
        let path = path.as_ref();
        // Reading a directory as a table would fail with an offset that
        // means nothing (its size less the footer's).
        if path.is_dir() {
            return Err(Error::invalid(format!(
                "{} is a directory, not an SST file",
                path.display()
            )));
        }
        Ok(TableFile {
            table: Table::open_path(path, TableOptions::default())?,
        })
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.table.file_size()
    }

    /// The footer's `format_version` (Strata writes 5; it reads 0 to 7).
    pub fn format_version(&self) -> u32 {
        self.table.footer().format_version
    }

    /// The footer's block checksum type.
    pub fn checksum(&self) -> ChecksumType {
        self.table.footer().checksum
    }

    /// Whether the blocks carry checksums. Without them nothing read from
    /// the file is verified, and a database that writes checksummed
    /// tables refuses to ingest it.
    pub fn has_checksums(&self) -> bool {
        !self.table.has_no_checksums()
    }

    /// The table's properties block.
    pub fn properties(&self) -> &TableProperties {
        self.table.properties()
    }

    /// How a property's raw value (from [`TableProperties::all`]) reads to
    /// a person: numbers as numbers, keys escaped, text as text.
    pub fn display_property(name: &str, raw: &[u8]) -> String {
        display_value(name, raw)
    }

    /// The global sequence number an ingestion gave the file, if any.
    pub fn global_seqno(&self) -> Option<u64> {
        self.table.global_seqno()
    }

    /// Whether the table has a filter block (readable or not).
    pub fn has_filter(&self) -> bool {
        self.table.has_filter()
    }

    /// Why the table's filter block could not be used, if it could not
    /// (where it is and what is wrong with it): the table reads without it
    /// (every lookup reads the data).
    pub fn filter_error(&self) -> Option<String> {
        self.table
            .filter_error()
            .map(|(at, m)| format!("the filter block at offset {at}: {m}"))
    }

    /// The range tombstones, in the order the table stores them.
    pub fn range_tombstones(&self) -> &[RangeTombstone] {
        self.table.range_tombstones()
    }

    /// Every point entry in key order, puts and deletions alike (see
    /// [`TableEntry`](super::TableEntry)); stops at the first damaged
    /// block, which it yields as an error.
    pub fn entries(&self) -> TableEntries {
        self.table.entries()
    }

    /// Reads every block of the table, verifying checksums, key order and
    /// the counts the properties claim; the figures of what it read.
    pub fn verify(&self) -> Result<TableStats> {
        self.table.verify()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sstable::{SstOptions, SstWriter};

    fn write(path: &Path) {
        let mut w = SstWriter::create(path, SstOptions::for_ingestion()).unwrap();
        w.delete_range("k5", "k7").unwrap();
        for i in 0..200 {
            w.put(format!("k{i:03}"), vec![b'v'; 100]).unwrap();
        }
        w.finish().unwrap();
    }

    #[test]
    fn reads_back_what_the_writer_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.sst");
        write(&p);
        let t = TableFile::open(&p).unwrap();
        assert_eq!(t.file_size(), std::fs::metadata(&p).unwrap().len());
        assert_eq!(t.format_version(), 5);
        assert!(t.has_checksums());
        assert_eq!(t.global_seqno(), None);
        let keys: Vec<Vec<u8>> = t.entries().map(|e| e.unwrap().user_key).collect();
        let want: Vec<Vec<u8>> = (0..200).map(|i| format!("k{i:03}").into_bytes()).collect();
        assert_eq!(keys, want);
        assert_eq!(
            t.range_tombstones(),
            [RangeTombstone {
                start: b"k5".to_vec(),
                end: b"k7".to_vec(),
                seq: 0
            }]
        );
        let s = t.verify().unwrap();
        assert_eq!(s.entries, 200);
        assert_eq!(s.data_blocks, t.properties().num_data_blocks);
        assert!(s.data_blocks > 1, "{s:?}");
        let n = t.properties().all.get("rocksdb.num.entries").unwrap();
        assert_eq!(TableFile::display_property("rocksdb.num.entries", n), "201");
    }

    /// A flipped byte in a data block: `entries` yields corruption naming
    /// the file, `verify` fails the same way; nothing panics.
    #[test]
    fn a_damaged_block_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.sst");
        write(&p);
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[100] ^= 0xff;
        std::fs::write(&p, &bytes).unwrap();
        let t = TableFile::open(&p).unwrap();
        let e = t.entries().find_map(|e| e.err()).unwrap();
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains("t.sst"), "{e}");
        let e = t.verify().unwrap_err();
        assert!(e.is_corruption(), "{e}");
        let e = TableFile::open(dir.path()).err().unwrap();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }

    /// A flipped byte in the filter block: the table opens without its
    /// filter, and `verify` reports the damage once, at its own offset (it
    /// said "corruption in t.sst at offset 0: filter block: corruption in
    /// t.sst at offset N: ...").
    #[test]
    fn a_damaged_filter_block_is_reported_at_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.sst");
        let opts = SstOptions {
            bloom_bits_per_key: Some(10.0),
            ..SstOptions::for_ingestion()
        };
        let mut w = SstWriter::create(&p, opts).unwrap();
        for i in 0..200 {
            w.put(format!("k{i:03}"), vec![b'v'; 100]).unwrap();
        }
        w.finish().unwrap();
        let good = std::fs::read(&p).unwrap();
        assert!(TableFile::open(&p).unwrap().has_filter());
        // The filter block sits after the data blocks: flip bytes from the
        // end of the data towards the footer until one lands in it.
        let mut found = false;
        for at in (good.len() / 2..good.len()).rev() {
            let mut bytes = good.clone();
            bytes[at] ^= 0x5a;
            std::fs::write(&p, &bytes).unwrap();
            let Ok(t) = TableFile::open(&p) else { continue };
            if t.filter_error().is_none() {
                continue;
            }
            let e = t.verify().unwrap_err();
            let shown = e.to_string();
            assert_eq!(shown.matches("t.sst").count(), 1, "{shown}");
            assert!(shown.contains("filter block: "), "{shown}");
            match e {
                crate::Error::Corruption { offset, .. } => {
                    assert!(offset > 0 && offset <= at as u64, "{shown}")
                }
                e => panic!("{e}"),
            }
            found = true;
            break;
        }
        assert!(found, "no flipped byte reached the filter block");
    }
}
