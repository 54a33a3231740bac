//! `SstWriter`: builds one table file from entries added in increasing
//! internal-key order.
//!
//! The same writer serves flushes and compactions (entries with their own
//! sequence numbers) and importers building files for ingestion
//! ([`SstOptions::external`]: every key at sequence 0, strictly increasing
//! user keys, and the two external-file properties RocksDB's ingestion
//! needs). Nothing is visible until `finish` has written the footer and
//! synced the file, so a crash mid-write leaves a file with no valid footer,
//! which readers reject as corrupt.

use super::block_builder::{shared_len, BlockBuilder};
use super::compression::{self, CompressionType};
use super::filter::{BloomFilterBuilder, BUILTIN_BLOOM_META_NAME};
use super::format::{BlockHandle, Footer, BLOCK_TRAILER_SIZE, FORMAT_VERSION};
use super::prefix::PrefixExtractor;
use super::properties::{names, PropertiesBuilder, TableProperties};
use crate::error::{Error, Result};
use crate::key::{self, compare_internal, make_internal_key, ParsedKey, ValueKind, MAX_SEQUENCE};
use crate::util::checksum::{block_checksum, ChecksumType};
use crate::util::coding::{put_fixed32, put_fixed64, put_varsigned64};
use crate::util::hex;
use crate::vfs::{OsVfs, Vfs, WritableFile};
use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Metaindex names of the meta blocks.
pub const PROPERTIES_BLOCK_NAME: &str = "rocksdb.properties";
/// Metaindex name of the range-deletion block.
pub const RANGE_DEL_BLOCK_NAME: &str = "rocksdb.range_del";

/// The column family id RocksDB's `SstFileWriter` records when it writes a
/// file for no particular column family.
const UNKNOWN_COLUMN_FAMILY: u64 = 0x7fff_ffff;

/// Options for building a table.
///
/// ```
/// use strata::{ChecksumType, CompressionType, SstOptions};
/// let opts = SstOptions {
///     compression: CompressionType::Zstd,
///     checksum: ChecksumType::Xxh3,
///     bloom_bits_per_key: Some(16.0),
///     ..SstOptions::for_ingestion()
/// };
/// assert!(opts.external);
/// ```
#[derive(Clone, Debug)]
pub struct SstOptions {
    /// Target uncompressed size of a data block.
    pub block_size: usize,
    /// Entries between full keys in a data block.
    pub block_restart_interval: usize,
    /// Block compression.
    pub compression: CompressionType,
    /// Block checksum type. `ChecksumType::None` writes tables nothing can
    /// verify: a database refuses to read or ingest them unless its own
    /// `Options::sst.checksum` is none too (a footer saying "none" is
    /// otherwise taken for a flipped bit).
    pub checksum: ChecksumType,
    /// Bloom filter bits per key; `None` for no filter.
    pub bloom_bits_per_key: Option<f64>,
    /// Also add each point key's prefix to the filter (range tombstones
    /// are never in it), and record the extractor's name. As a database's
    /// option (`Options::sst`), the tables it writes get prefix filters and
    /// the tables it reads use theirs when they record the same name: a
    /// scan bounded to one prefix ([`Db::prefix`](crate::Db::prefix), a
    /// range inside one prefix) skips the files whose filter lacks that
    /// prefix, and a point read of a table without whole keys in its
    /// filter asks for the key's prefix (see [`PrefixExtractor`]). Changing
    /// it between opens is safe: tables written with another extractor, or
    /// none, are simply not skipped. Costs about one more filter entry per
    /// distinct prefix per table.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Add whole user keys to the filter (for point reads). Off with a
    /// `prefix_extractor`, the filter holds prefixes only: smaller, and a
    /// point read then asks it for the key's prefix (a read of a key whose
    /// prefix the table has reads a data block). Off without one, the
    /// table has no filter.
    pub whole_key_filtering: bool,
    /// Write a file for ingestion: sequence numbers 0, strictly increasing
    /// user keys, and the external-file properties.
    pub external: bool,
    /// Every this many bytes written, ask the operating system to start
    /// writing the file back to disk (after the previous request is done:
    /// [`WritableFile::start_write_back`]), so that a table being written
    /// never holds more than about twice this much dirty data. Other
    /// files' fsyncs then do not wait behind it: on ext4, a WAL's or the
    /// MANIFEST's fsync commits the journal, which first writes the data
    /// of every block allocated since the last commit, a flush's whole
    /// table included. 0 never asks (the final sync writes everything).
    /// Not a durability promise: only `finish`'s sync is. Default 0, as
    /// RocksDB's (Pebble's is 512 KiB): on this project's benchmark
    /// machine 512 KiB made W3's and W4's ingest calls no faster and W4's
    /// slowest Puts slower (docs/bench-history/w4-foreground-latency.md,
    /// session 38); a disk whose write-back bursts stall other I/O may
    /// gain from it.
    pub bytes_per_sync: u64,
}

impl Default for SstOptions {
    fn default() -> Self {
        SstOptions {
            block_size: 4096,
            block_restart_interval: 16,
            compression: CompressionType::Snappy,
            checksum: ChecksumType::Crc32c,
            bloom_bits_per_key: Some(10.0),
            prefix_extractor: None,
            whole_key_filtering: true,
            external: false,
            bytes_per_sync: 0,
        }
    }
}

impl SstOptions {
    /// Options for a file that will be handed to `ingest`.
    pub fn for_ingestion() -> SstOptions {
        SstOptions {
            external: true,
            ..SstOptions::default()
        }
    }
}

/// What a finished table holds.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SstInfo {
    /// Size of the finished file in bytes.
    pub file_size: u64,
    /// Point entries (puts and deletes).
    pub num_entries: u64,
    /// Range tombstones.
    pub num_range_deletions: u64,
    /// Smallest and largest *internal* key (the user key followed by 8
    /// bytes of sequence number and kind), counting range tombstones (whose
    /// end bound is stamped with the maximal sequence number); `None` for a
    /// table with no entries at all. [`smallest_key`](Self::smallest_key)
    /// and [`largest_key`](Self::largest_key) give the user keys.
    pub smallest: Option<Vec<u8>>,
    /// See `smallest`.
    pub largest: Option<Vec<u8>>,
    /// Smallest sequence number in the file.
    pub smallest_seqno: u64,
    /// Largest sequence number in the file.
    pub largest_seqno: u64,
    /// The table's properties block, as RocksDB's `sst_dump` shows it.
    pub properties: TableProperties,
}

impl SstInfo {
    /// The smallest user key the table holds (a range tombstone's start
    /// counts); `None` for a table with no entries.
    ///
    /// ```
    /// use strata::{SstOptions, SstWriter};
    /// # let dir = tempfile::tempdir()?;
    /// let mut w = SstWriter::create(dir.path().join("a.sst"), SstOptions::for_ingestion())?;
    /// w.put("apple", "1")?;
    /// w.put("pear", "2")?;
    /// let info = w.finish()?;
    /// assert_eq!(info.smallest_key(), Some(&b"apple"[..]));
    /// assert_eq!(info.largest_key(), Some(&b"pear"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn smallest_key(&self) -> Option<&[u8]> {
        self.smallest.as_deref().map(key::user_key)
    }

    /// The largest user key the table holds (a range tombstone's exclusive
    /// end counts); `None` for a table with no entries.
    pub fn largest_key(&self) -> Option<&[u8]> {
        self.largest.as_deref().map(key::user_key)
    }
}

/// Writes one SST file in RocksDB's block-based format. For files to
/// ingest, create it with [`SstOptions::for_ingestion`] and add keys in
/// strictly increasing order; nothing is readable until
/// [`finish`](Self::finish) has written the footer and synced the file.
///
/// ```
/// use strata::{SstOptions, SstWriter};
/// # let dir = tempfile::tempdir()?;
/// let mut w = SstWriter::create(dir.path().join("a.sst"), SstOptions::for_ingestion())?;
/// w.put("apple", "1")?;
/// w.put("banana", "2")?;
/// w.delete_range("c", "d")?; // tombstones may come in any order
/// let info = w.finish()?;
/// assert_eq!(info.num_entries, 2);
/// assert!(w_out_of_order_fails()?);
///
/// fn w_out_of_order_fails() -> strata::Result<bool> {
///     let dir = tempfile::tempdir().map_err(|e| strata::Error::io("tmp", e))?;
///     let mut w = SstWriter::create(dir.path().join("b.sst"), SstOptions::for_ingestion())?;
///     w.put("b", "")?;
///     Ok(w.put("a", "").is_err())
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SstWriter {
    file: Box<dyn WritableFile>,
    name: String,
    opts: SstOptions,
    offset: u64,
    /// `offset` at the last [`WritableFile::start_write_back`].
    written_back: u64,
    data_block: BlockBuilder,
    /// Handle of the last flushed data block, waiting for the next block's
    /// first key to choose its index separator.
    pending: Option<BlockHandle>,
    /// The index: each data block's handle and the end of its separator
    /// key in `index_keys` (the keys back to back: one allocation for the
    /// table, not one per block).
    index_entries: Vec<(usize, BlockHandle)>,
    index_keys: Vec<u8>,
    /// A user key spans two blocks, so index keys must keep their sequence
    /// numbers.
    index_needs_seq: bool,
    first_key: Vec<u8>,
    /// The last key of the last finished data block; while the open block
    /// holds entries, the last key added is that block's (see
    /// [`prev_key`](Self::prev_key)), so no key is copied per entry.
    last_key: Vec<u8>,
    has_entries: bool,
    filter: Option<BloomFilterBuilder>,
    last_prefix: Vec<u8>,
    has_last_prefix: bool,
    /// (start internal key, end user key).
    tombstones: Vec<(Vec<u8>, Vec<u8>)>,
    scratch: Vec<u8>,
    /// Reused for every block (`compression::Compressor`).
    compressor: compression::Compressor,
    /// Whether to try compressing the next data block
    /// (`compression::AdaptiveSkip`).
    skip: compression::AdaptiveSkip,
    // Counters that become properties.
    num_entries: u64,
    num_deletions: u64,
    num_merges: u64,
    raw_key_size: u64,
    raw_value_size: u64,
    num_data_blocks: u64,
    smallest_seq: u64,
    largest_seq: u64,
}

impl std::fmt::Debug for SstWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstWriter")
            .field("file", &self.name)
            .field("entries", &self.num_entries)
            .field("range_tombstones", &self.tombstones.len())
            .field("bytes_written", &self.offset)
            .finish_non_exhaustive()
    }
}

impl SstWriter {
    /// Starts a table on an already created file; `name` is used in errors.
    /// Internal ([`start`](Self::start)).
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn new(
        file: Box<dyn WritableFile>,
        name: impl Into<String>,
        opts: SstOptions,
    ) -> SstWriter {
        Self::start(file, name, opts)
    }

    /// Starts a table on an already created file; `name` is used in errors.
    pub(crate) fn start(
        file: Box<dyn WritableFile>,
        name: impl Into<String>,
        opts: SstOptions,
    ) -> SstWriter {
        let filter = opts
            .bloom_bits_per_key
            .filter(|&b| BloomFilterBuilder::writes_filter(b))
            .map(BloomFilterBuilder::new);
        SstWriter {
            file,
            name: name.into(),
            data_block: BlockBuilder::new(opts.block_restart_interval),
            opts,
            offset: 0,
            written_back: 0,
            pending: None,
            index_entries: Vec::new(),
            index_keys: Vec::new(),
            index_needs_seq: false,
            first_key: Vec::new(),
            last_key: Vec::new(),
            has_entries: false,
            filter,
            last_prefix: Vec::new(),
            has_last_prefix: false,
            tombstones: Vec::new(),
            scratch: Vec::new(),
            compressor: compression::Compressor::default(),
            skip: compression::AdaptiveSkip::default(),
            num_entries: 0,
            num_deletions: 0,
            num_merges: 0,
            raw_key_size: 0,
            raw_value_size: 0,
            num_data_blocks: 0,
            smallest_seq: u64::MAX,
            largest_seq: 0,
        }
    }

    /// Creates `path` on the OS file system and starts a table in it.
    pub fn create(path: impl AsRef<Path>, opts: SstOptions) -> Result<SstWriter> {
        Self::create_in(&OsVfs, path.as_ref(), opts)
    }

    /// Creates `path` on `vfs` and starts a table in it.
    pub fn create_in(vfs: &dyn Vfs, path: &Path, opts: SstOptions) -> Result<SstWriter> {
        if !opts.compression.can_write() {
            return Err(Error::NotSupported(format!(
                "writing {} blocks",
                opts.compression.rocksdb_name()
            )));
        }
        let f = vfs.create(path)?;
        Ok(SstWriter::start(f, path.display().to_string(), opts))
    }

    /// Point entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.num_entries
    }

    /// Bytes written so far plus the open data block: what the file would
    /// roughly weigh if finished now.
    pub fn estimated_file_size(&self) -> u64 {
        self.offset + self.data_block.estimated_size() as u64
    }

    /// Adds a value at sequence number 0 (files for ingestion).
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.entry_at(key.as_ref(), 0, ValueKind::Value, value.as_ref())
    }

    /// Adds a point deletion at sequence number 0.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.entry_at(key.as_ref(), 0, ValueKind::Deletion, b"")
    }

    /// Adds a range tombstone `[start, end)` at sequence number 0.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.tombstone_at(start.as_ref(), end.as_ref(), 0)
    }

    /// Adds an entry of any kind at any sequence number (tests). Internal
    /// ([`entry_at`](Self::entry_at)): the kinds are the engine's.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn add_entry(
        &mut self,
        user_key: &[u8],
        seq: u64,
        kind: ValueKind,
        value: &[u8],
    ) -> Result<()> {
        self.entry_at(user_key, seq, kind, value)
    }

    /// Adds an entry of any kind at any sequence number.
    pub(crate) fn entry_at(
        &mut self,
        user_key: &[u8],
        seq: u64,
        kind: ValueKind,
        value: &[u8],
    ) -> Result<()> {
        if seq > MAX_SEQUENCE {
            return Err(Error::invalid(format!(
                "sequence number {seq} is too large"
            )));
        }
        // A block stores lengths in 32 bits: a longer key or value would
        // wrap and write a table that reads as something else. Checked
        // before the key is copied (`add_ikey` checks its own entries).
        if let Some(why) = crate::db::write_batch::too_long(user_key, value) {
            return Err(Error::invalid(format!("{}: {why}", self.name)));
        }
        let mut k = std::mem::take(&mut self.scratch);
        k.clear();
        key::append_internal_key(&mut k, user_key, seq, kind as u8);
        let r = self.add_parsed(&k, user_key, seq, kind, value);
        self.scratch = k;
        r
    }

    /// Adds an entry by internal key (tests). Internal
    /// ([`add_ikey`](Self::add_ikey)).
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.add_ikey(ikey, value)
    }

    /// Adds an entry by internal key (flushes, compactions). Keys must
    /// strictly increase in internal-key order; range tombstones go through
    /// [`tombstone_at`](Self::tombstone_at).
    pub(crate) fn add_ikey(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let p = ParsedKey::parse(ikey).ok_or_else(|| {
            Error::invalid(format!("{}: internal key shorter than 8 bytes", self.name))
        })?;
        let kind = p.value_kind().ok_or_else(|| {
            Error::invalid(format!("{}: unknown value kind {:#x}", self.name, p.kind))
        })?;
        if let Some(why) = crate::db::write_batch::too_long(p.user_key, value) {
            return Err(Error::invalid(format!("{}: {why}", self.name)));
        }
        self.add_parsed(ikey, p.user_key, p.seq, kind, value)
    }

    /// The key added last (valid once there are entries).
    fn prev_key(&self) -> &[u8] {
        if self.data_block.is_empty() {
            &self.last_key
        } else {
            self.data_block.last_key()
        }
    }

    /// [`add`](Self::add) of `ikey`, already split into `user_key`, `seq`
    /// and `kind`.
    fn add_parsed(
        &mut self,
        ikey: &[u8],
        user_key: &[u8],
        seq: u64,
        kind: ValueKind,
        value: &[u8],
    ) -> Result<()> {
        if kind == ValueKind::RangeDeletion {
            return Err(Error::invalid(
                "range tombstones are added with add_range_tombstone",
            ));
        }
        // The order check and the block's prefix compression both need
        // the prefix this key shares with the one before: measured once,
        // it decides the order too (the first differing byte, or which
        // user key is a prefix of the other), so no key is compared twice.
        let mut shared = 0;
        if self.has_entries {
            let prev = self.prev_key();
            shared = shared_len(prev, ikey);
            if !follows(prev, ikey, shared, self.opts.external) {
                return Err(Error::invalid(format!(
                    "{}: key {} added after {}; keys must be strictly increasing",
                    self.name,
                    hex::escape(user_key),
                    hex::escape(key::user_key(prev))
                )));
            }
        }
        if self.opts.external && seq != 0 {
            return Err(Error::invalid(
                "files for ingestion hold sequence number 0 only",
            ));
        }
        if self.should_flush(ikey.len(), value.len()) {
            self.flush_data_block()?;
        }
        if let Some(h) = self.pending.take() {
            if key::user_key(&self.last_key) == user_key {
                self.index_needs_seq = true;
            }
            key::internal_separator_into(&self.last_key, ikey, &mut self.index_keys);
            self.index_entries.push((self.index_keys.len(), h));
        }
        if let Some(f) = self.filter.as_mut() {
            if let Some(px) = &self.opts.prefix_extractor {
                if let Some(prefix) = px.prefix(user_key) {
                    if !self.has_last_prefix || self.last_prefix != prefix {
                        f.add_key(prefix);
                        self.last_prefix.clear();
                        self.last_prefix.extend_from_slice(prefix);
                        self.has_last_prefix = true;
                    }
                }
            }
            if self.opts.whole_key_filtering {
                f.add_key(user_key);
            }
        }
        self.data_block.add_with_shared(ikey, value, shared);
        if !self.has_entries {
            self.first_key = ikey.to_vec();
        }
        self.has_entries = true;
        self.num_entries += 1;
        self.raw_key_size += ikey.len() as u64;
        self.raw_value_size += value.len() as u64;
        match kind {
            ValueKind::Deletion | ValueKind::SingleDeletion => self.num_deletions += 1,
            ValueKind::Merge => self.num_merges += 1,
            _ => {}
        }
        self.smallest_seq = self.smallest_seq.min(seq);
        self.largest_seq = self.largest_seq.max(seq);
        Ok(())
    }

    /// Adds a range tombstone at `seq` (tests). Internal
    /// ([`tombstone_at`](Self::tombstone_at)).
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn add_range_tombstone(&mut self, start: &[u8], end: &[u8], seq: u64) -> Result<()> {
        self.tombstone_at(start, end, seq)
    }

    /// Adds a range tombstone deleting user keys in `[start, end)` at `seq`.
    /// Tombstones may be added in any order, before or after point entries.
    pub(crate) fn tombstone_at(&mut self, start: &[u8], end: &[u8], seq: u64) -> Result<()> {
        if start >= end {
            return Err(Error::invalid(format!(
                "{}: {} range tombstone [{}, {})",
                self.name,
                if start > end {
                    "reversed (its begin is above its end)"
                } else {
                    "empty"
                },
                hex::escape(start),
                hex::escape(end)
            )));
        }
        if let Some(why) = crate::db::write_batch::too_long(start, b"")
            .or_else(|| crate::db::write_batch::too_long(end, b""))
        {
            return Err(Error::invalid(format!("{}: {why}", self.name)));
        }
        if self.opts.external && seq != 0 {
            return Err(Error::invalid(
                "files for ingestion hold sequence number 0 only",
            ));
        }
        self.tombstones.push((
            make_internal_key(start, seq, ValueKind::RangeDeletion),
            end.to_vec(),
        ));
        self.smallest_seq = self.smallest_seq.min(seq);
        self.largest_seq = self.largest_seq.max(seq);
        Ok(())
    }

    /// RocksDB's flush-by-size policy: cut when the block has reached the
    /// target, or when this entry would overflow it and the block is already
    /// within 10% of the target.
    fn should_flush(&self, key_len: usize, value_len: usize) -> bool {
        if self.data_block.is_empty() {
            return false;
        }
        let cur = self.data_block.estimated_size();
        let target = self.opts.block_size;
        cur >= target
            || (self.data_block.estimated_size_after(key_len, value_len) > target
                && cur > target * 9 / 10)
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        // The placeholder allocates nothing (a fresh builder per block
        // was an allocation and a free per 4 KiB).
        let mut block = std::mem::replace(&mut self.data_block, BlockBuilder::placeholder());
        // Data that has not been worth compressing for a while is stored
        // raw untried, except for a probe now and then
        // (`compression::AdaptiveSkip`). The stored bytes of a block that
        // is tried and does not shrink are the same as of one not tried.
        let compression = match self.opts.compression {
            CompressionType::None => CompressionType::None,
            c if self.skip.should_try() => c,
            _ => CompressionType::None,
        };
        let written = self.write_block_as(block.finish(), compression);
        // Put the builder back even if the write failed, so the writer
        // keeps a usable block and the last key added.
        block.swap_last_key(&mut self.last_key);
        block.reset();
        self.data_block = block;
        let (h, stored) = written?;
        if compression != CompressionType::None {
            self.skip.record(stored != CompressionType::None);
        }
        self.pending = Some(h);
        self.num_data_blocks += 1;
        Ok(())
    }

    /// Writes a block and its trailer, compressing it if that pays.
    fn write_block(&mut self, raw: &[u8], compression: CompressionType) -> Result<BlockHandle> {
        Ok(self.write_block_as(raw, compression)?.0)
    }

    /// [`write_block`](Self::write_block), also returning the type the
    /// block was stored as (`None` if compressing it did not pay).
    fn write_block_as(
        &mut self,
        raw: &[u8],
        compression: CompressionType,
    ) -> Result<(BlockHandle, CompressionType)> {
        let compressed = match compression {
            CompressionType::None => None,
            _ => self
                .compressor
                .compress(compression, raw)
                .filter(|c| compression::good_ratio(raw.len(), c.len())),
        };
        let (body, kind): (&[u8], CompressionType) = match compressed {
            Some(c) => (c, compression),
            None => (raw, CompressionType::None),
        };
        let handle = BlockHandle::new(self.offset, body.len() as u64);
        let mut trailer = [0u8; BLOCK_TRAILER_SIZE];
        trailer[0] = kind as u8;
        let sum = block_checksum(self.opts.checksum, body, kind as u8);
        trailer[1..].copy_from_slice(&sum.to_le_bytes());
        self.file.append(body)?;
        self.file.append(&trailer)?;
        self.offset += (body.len() + BLOCK_TRAILER_SIZE) as u64;
        let every = self.opts.bytes_per_sync;
        if every > 0 && self.offset - self.written_back >= every {
            self.file.start_write_back()?;
            self.written_back = self.offset;
        }
        Ok((handle, kind))
    }

    /// Writes the remaining blocks and the footer, syncs, and closes the file.
    pub fn finish(self) -> Result<SstInfo> {
        let (info, mut file) = self.finish_unsynced()?;
        file.sync()?;
        Ok(info)
    }

    /// [`finish`](Self::finish) without the final sync: the footer is
    /// written and the file is handed back unsynced. The caller must call
    /// [`WritableFile::sync`](crate::vfs::WritableFile::sync) on it (from any thread) before anything reads
    /// or ingests the table: until then a power cut can leave the file
    /// short or empty. A bulk loader writing several files in a row syncs
    /// each one on another thread while it writes the next (the sync of a
    /// 64 MiB file was a third of W1's merge phase when the writer waited
    /// for each one).
    ///
    /// ```
    /// use strata::{SstOptions, SstWriter};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let mut w = SstWriter::create(dir.path().join("a.sst"), SstOptions::for_ingestion())?;
    /// w.put("a", "1")?;
    /// let (info, mut file) = w.finish_unsynced()?;
    /// let syncing = std::thread::spawn(move || file.sync());
    /// // ... write the next file here ...
    /// syncing.join().expect("the sync thread")?;
    /// assert_eq!(info.num_entries, 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn finish_unsynced(mut self) -> Result<(SstInfo, Box<dyn WritableFile>)> {
        self.flush_data_block()?;
        if let Some(h) = self.pending.take() {
            // The last block's index key is its last key, unshortened.
            self.index_keys.extend_from_slice(&self.last_key);
            self.index_entries.push((self.index_keys.len(), h));
        }
        let data_size = self.offset;

        let mut meta: Vec<(String, BlockHandle)> = Vec::new();
        let mut filter_size = 0;
        let mut filter_entries = 0;
        if let Some(mut f) = self.filter.take() {
            if !f.is_empty() {
                filter_entries = f.num_added() as u64;
                let contents = f.finish();
                filter_size = contents.len() as u64;
                let h = self.write_block(&contents, CompressionType::None)?;
                meta.push((BUILTIN_BLOOM_META_NAME.to_string(), h));
            }
        }

        let mut index = BlockBuilder::new_value_delta(1);
        let mut prev: Option<BlockHandle> = None;
        let mut full = Vec::new();
        let mut delta = Vec::new();
        let mut start = 0;
        for &(end, ref h) in &self.index_entries {
            let k = &self.index_keys[start..end];
            start = end;
            let k: &[u8] = if self.index_needs_seq {
                k
            } else {
                key::user_key(k)
            };
            full.clear();
            h.encode_to(&mut full);
            delta.clear();
            if let Some(p) = prev {
                put_varsigned64(&mut delta, h.size as i64 - p.size as i64);
            }
            index.add_handle(k, &full, &delta);
            prev = Some(*h);
        }
        let index_contents = index.finish().to_vec();
        let index_handle = self.write_block(&index_contents, CompressionType::None)?;

        self.tombstones.sort_by(|a, b| compare_internal(&a.0, &b.0));
        if !self.tombstones.is_empty() {
            let mut b = BlockBuilder::new(1);
            for (k, end) in &self.tombstones {
                b.add(k, end);
            }
            let h = self.write_block(b.finish(), CompressionType::None)?;
            meta.push((RANGE_DEL_BLOCK_NAME.to_string(), h));
        }

        let (smallest, largest) = self.bounds();
        let props = self.properties(
            data_size,
            index_handle.size + BLOCK_TRAILER_SIZE as u64,
            filter_size,
            filter_entries,
            smallest.as_deref(),
            largest.as_deref(),
        );
        let h = self.write_block(&props.finish(), CompressionType::None)?;
        meta.push((PROPERTIES_BLOCK_NAME.to_string(), h));

        meta.sort_by(|a, b| a.0.cmp(&b.0));
        let mut mb = BlockBuilder::new(1);
        for (name, h) in &meta {
            mb.add(name.as_bytes(), &h.encode());
        }
        let metaindex_handle = self.write_block(mb.finish(), CompressionType::None)?;
        let footer = Footer {
            checksum: self.opts.checksum,
            metaindex: metaindex_handle,
            index: index_handle,
            format_version: FORMAT_VERSION,
            base_context_checksum: 0,
        };
        self.file.append(&footer.encode())?;
        let file_size = self.file.len();
        let properties = TableProperties::decode(props.finish())
            .map_err(|m| Error::corruption(&self.name, 0, m))?;
        let has_any = smallest.is_some();
        let info = SstInfo {
            file_size,
            num_entries: self.num_entries,
            num_range_deletions: self.tombstones.len() as u64,
            smallest,
            largest,
            smallest_seqno: if has_any { self.smallest_seq } else { 0 },
            largest_seqno: self.largest_seq,
            properties,
        };
        Ok((info, self.file))
    }

    /// Smallest and largest internal keys over point entries and tombstones.
    fn bounds(&self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let mut smallest: Option<Vec<u8>> = None;
        let mut largest: Option<Vec<u8>> = None;
        let mut consider = |k: &[u8]| {
            if smallest
                .as_deref()
                .is_none_or(|s| compare_internal(k, s) == Ordering::Less)
            {
                smallest = Some(k.to_vec());
            }
            if largest
                .as_deref()
                .is_none_or(|l| compare_internal(k, l) == Ordering::Greater)
            {
                largest = Some(k.to_vec());
            }
        };
        if self.has_entries {
            consider(&self.first_key);
            consider(&self.last_key);
        }
        for (start, end) in &self.tombstones {
            consider(start);
            consider(&make_internal_key(
                end,
                MAX_SEQUENCE,
                ValueKind::RangeDeletion,
            ));
        }
        (smallest, largest)
    }

    fn properties(
        &self,
        data_size: u64,
        index_size: u64,
        filter_size: u64,
        filter_entries: u64,
        smallest: Option<&[u8]>,
        largest: Option<&[u8]>,
    ) -> PropertiesBuilder {
        use names::*;
        let mut p = PropertiesBuilder::default();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let n_tomb = self.tombstones.len() as u64;
        p.u64(DATA_SIZE, data_size);
        p.u64(INDEX_SIZE, index_size);
        p.u64(INDEX_PARTITIONS, 0);
        p.u64(TOP_LEVEL_INDEX_SIZE, 0);
        p.u64(INDEX_KEY_IS_USER_KEY, (!self.index_needs_seq) as u64);
        p.u64(INDEX_VALUE_IS_DELTA_ENCODED, 1);
        p.u64(FILTER_SIZE, filter_size);
        p.u64(NUM_FILTER_ENTRIES, filter_entries);
        // RocksDB counts range tombstones as entries and deletions too.
        p.u64(
            RAW_KEY_SIZE,
            self.raw_key_size
                + self
                    .tombstones
                    .iter()
                    .map(|t| t.0.len() as u64)
                    .sum::<u64>(),
        );
        p.u64(
            RAW_VALUE_SIZE,
            self.raw_value_size
                + self
                    .tombstones
                    .iter()
                    .map(|t| t.1.len() as u64)
                    .sum::<u64>(),
        );
        p.u64(NUM_DATA_BLOCKS, self.num_data_blocks);
        p.u64(NUM_ENTRIES, self.num_entries + n_tomb);
        p.u64(DELETED_KEYS, self.num_deletions + n_tomb);
        p.u64(MERGE_OPERANDS, self.num_merges);
        p.u64(NUM_RANGE_DELETIONS, n_tomb);
        p.u64(FORMAT_VERSION, 0);
        p.u64(FIXED_KEY_LEN, 0);
        p.u64(
            COLUMN_FAMILY_ID,
            if self.opts.external {
                UNKNOWN_COLUMN_FAMILY
            } else {
                0
            },
        );
        p.str(
            COLUMN_FAMILY_NAME,
            if self.opts.external { "" } else { "default" },
        );
        p.str(
            FILTER_POLICY,
            if self.opts.bloom_bits_per_key.is_some() {
                "bloomfilter"
            } else {
                ""
            },
        );
        p.str(COMPARATOR, "leveldb.BytewiseComparator");
        p.str(MERGE_OPERATOR, "nullptr");
        let px = self
            .opts
            .prefix_extractor
            .as_ref()
            .map(|x| x.name())
            .unwrap_or_else(|| "nullptr".to_string());
        p.str(PREFIX_EXTRACTOR, &px);
        p.str(PROPERTY_COLLECTORS, "[]");
        p.str(COMPRESSION, self.opts.compression.rocksdb_name());
        p.str(
            COMPRESSION_OPTIONS,
            "window_bits=-14; level=32767; strategy=0; max_dict_bytes=0; zstd_max_train_bytes=0; enabled=0; max_dict_buffer_bytes=0; use_zstd_dict_trainer=1; ",
        );
        p.u64(CREATION_TIME, now);
        p.u64(OLDEST_KEY_TIME, now);
        p.u64(FILE_CREATION_TIME, now);
        let mut idx_type = Vec::new();
        put_fixed32(&mut idx_type, 0); // binary search index
        p.bytes(BBT_INDEX_TYPE, &idx_type);
        p.str(
            BBT_PREFIX_FILTERING,
            if self.opts.prefix_extractor.is_some() && self.opts.bloom_bits_per_key.is_some() {
                "1"
            } else {
                "0"
            },
        );
        p.str(
            BBT_WHOLE_KEY_FILTERING,
            if self.opts.whole_key_filtering {
                "1"
            } else {
                "0"
            },
        );
        if self.opts.external {
            let mut v = Vec::new();
            put_fixed32(&mut v, 2);
            p.bytes(EXTERNAL_VERSION, &v);
            let mut s = Vec::new();
            put_fixed64(&mut s, 0);
            p.bytes(EXTERNAL_GLOBAL_SEQNO, &s);
        }
        if let (Some(s), Some(l)) = (smallest, largest) {
            p.bytes(SMALLEST_KEY, s);
            p.bytes(LARGEST_KEY, l);
            p.u64(SMALLEST_SEQNO, self.smallest_seq);
            p.u64(LARGEST_SEQNO, self.largest_seq);
        }
        p
    }
}

/// Whether `ikey` may follow `prev` in a table, given the length of the
/// prefix they share (`shared_len(prev, ikey)`): internal keys strictly
/// increasing, and for ingestion (`external`) user keys strictly
/// increasing. Both keys hold at least their 8-byte trailer.
fn follows(prev: &[u8], ikey: &[u8], shared: usize, external: bool) -> bool {
    let (pu, ku) = (prev.len() - 8, ikey.len() - 8);
    if shared < pu.min(ku) {
        // The user keys differ first at `shared`.
        return ikey[shared] > prev[shared];
    }
    // One user key is a prefix of the other.
    match pu.cmp(&ku) {
        Ordering::Less => true,
        Ordering::Greater => false,
        // Equal user keys: for ingestion never; otherwise the newer
        // (larger) trailer comes first.
        Ordering::Equal => !external && key::trailer(ikey) < key::trailer(prev),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    /// `follows` agrees with the definitions (internal-key order; for
    /// ingestion, user-key order) for keys that differ inside their user
    /// keys, are prefixes of each other, are equal with other trailers,
    /// and whose trailer bytes equal the other key's next user-key byte.
    #[test]
    fn follows_is_the_key_order() {
        let users: [&[u8]; 8] = [b"", b"a", b"ab", b"abc", b"abd", b"b", b"a\x00", b"\x01"];
        let mut keys = Vec::new();
        for u in users {
            for (seq, kind) in [
                (0, ValueKind::Value),
                (0, ValueKind::Deletion),
                (9, ValueKind::Value),
                (0x6362, ValueKind::Value),
            ] {
                keys.push(make_internal_key(u, seq, kind));
            }
        }
        for a in &keys {
            for b in &keys {
                let shared = shared_len(a, b);
                let internal = compare_internal(a, b) == Ordering::Less;
                let user = key::user_key(a) < key::user_key(b);
                assert_eq!(follows(a, b, shared, false), internal, "{a:?} {b:?}");
                assert_eq!(follows(a, b, shared, true), user, "{a:?} {b:?}");
            }
        }
    }

    /// A block whose write fails leaves the writer with its builder and
    /// the last key added: a key not after it is still refused.
    #[test]
    fn a_failed_block_write_keeps_the_last_key() {
        use crate::vfs::fault::{Fault, Op};
        let vfs = crate::vfs::FaultVfs::new();
        let opts = SstOptions {
            block_size: 1,
            ..SstOptions::for_ingestion()
        };
        let mut w = SstWriter::create_in(&vfs, Path::new("/t.sst"), opts).unwrap();
        w.put(b"a", b"1").unwrap();
        w.put(b"b", b"2").unwrap();
        vfs.inject(Fault::eio(Op::Write, 1));
        // Cutting the block holding "b" fails.
        assert!(w.put(b"c", b"3").is_err());
        vfs.clear_fault();
        let e = w.put(b"b", b"2").unwrap_err();
        assert!(e.to_string().contains("strictly increasing"), "{e}");
        w.put(b"c", b"3").unwrap();
        w.put(b"d", b"4").unwrap();
    }

    /// A writer takes keys in order and refuses one that is not greater
    /// than the key before it, in the open block and just after a block
    /// was cut (a 1-byte block size cuts one after every key).
    #[test]
    fn keys_out_of_order_are_refused_in_and_across_blocks() {
        for block_size in [4096, 1] {
            for external in [true, false] {
                let opts = SstOptions {
                    block_size,
                    external,
                    ..SstOptions::default()
                };
                let vfs = crate::vfs::MemVfs::new();
                let mut w = SstWriter::create_in(&vfs, Path::new("/t.sst"), opts).unwrap();
                w.add_entry(b"ab", 0, ValueKind::Value, b"1").unwrap();
                w.add_entry(b"abc", 0, ValueKind::Value, b"2").unwrap();
                for (k, seq) in [(&b"ab"[..], 0), (b"abc", 0), (b"abb", 0), (b"a", 0)] {
                    let e = w.add_entry(k, seq, ValueKind::Value, b"x").unwrap_err();
                    assert!(e.to_string().contains("strictly increasing"), "{e}");
                }
                // An older version of the last key: internal order only.
                let r = w.add_entry(b"abc", 0, ValueKind::Deletion, b"");
                assert_eq!(r.is_ok(), !external, "external {external}");
                w.add_entry(b"abd", 0, ValueKind::Value, b"3").unwrap();
                let info = w.finish().unwrap();
                assert_eq!(info.num_entries, if external { 3 } else { 4 });
            }
        }
    }

    /// A file that records where the writer asked for write-back.
    struct Recording {
        len: u64,
        asked_at: Arc<parking_lot::Mutex<Vec<u64>>>,
    }

    impl WritableFile for Recording {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.len += data.len() as u64;
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            self.len
        }
        fn start_write_back(&mut self) -> Result<()> {
            self.asked_at.lock().push(self.len);
            Ok(())
        }
    }

    /// With `bytes_per_sync` N the writer asks for write-back each time N
    /// more bytes were written since it last asked (so never more than
    /// N plus one block unrequested), and never with 0.
    #[test]
    fn write_back_is_asked_every_bytes_per_sync() {
        for every in [0u64, 4096, 64 << 10] {
            let asked_at = Arc::new(parking_lot::Mutex::new(Vec::new()));
            let file = Recording {
                len: 0,
                asked_at: asked_at.clone(),
            };
            let opts = SstOptions {
                bytes_per_sync: every,
                compression: CompressionType::None,
                ..SstOptions::default()
            };
            let mut w = SstWriter::new(Box::new(file), "t", opts);
            for i in 0..20_000u32 {
                w.add_entry(
                    format!("k{i:08}").as_bytes(),
                    1,
                    ValueKind::Value,
                    &[7u8; 40],
                )
                .unwrap();
            }
            let info = w.finish().unwrap();
            let asked = asked_at.lock().clone();
            if every == 0 {
                assert!(asked.is_empty(), "{asked:?}");
                continue;
            }
            // The largest single write: the filter block (20,000 keys at
            // 10 bits) is about 25 KB; a data block about 4 KB.
            let slack: u64 = 32 << 10;
            let mut last = 0;
            for &at in &asked {
                assert!(
                    at - last >= every,
                    "asked at {at} after {last} (every {every})"
                );
                assert!(at - last < every + slack, "asked at {at} after {last}");
                last = at;
            }
            assert!(
                info.file_size - last < every + slack,
                "{last} of {}",
                info.file_size
            );
            assert!(asked.len() as u64 >= info.file_size / (every + slack));
            assert!(!asked.is_empty());
        }
    }

    /// On the operating system's file system the request succeeds and
    /// leaves the bytes as written.
    #[test]
    fn write_back_on_a_real_file_keeps_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sst");
        let opts = SstOptions {
            bytes_per_sync: 1024,
            ..SstOptions::for_ingestion()
        };
        let mut w = SstWriter::create(&path, opts).unwrap();
        for i in 0..5_000u32 {
            w.put(format!("k{i:06}"), format!("value {i}")).unwrap();
        }
        w.finish().unwrap();
        let got: Vec<(Vec<u8>, Vec<u8>)> = crate::sstable::SstReader::open(&path)
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        assert_eq!(got.len(), 5_000);
        assert_eq!(got[1234], (b"k001234".to_vec(), b"value 1234".to_vec()));
    }
}
