//! `Table`: an open SST file. Opening reads the footer, metaindex,
//! properties, index, filter and range tombstones; data blocks are read on
//! demand through the shared block cache.
//!
//! Every block read verifies its checksum (unless the caller turns that off)
//! and every decoding failure becomes `Error::Corruption` naming the file and
//! the block's offset. A walk over every block (`verify`, `walk_blocks`)
//! also checks that each index entry bounds its block (`check_separator`);
//! a point lookup trusts the index. A damaged filter is dropped rather than
//! trusted: the table then answers from its data blocks, which is slower
//! but correct.
//!
//! The filter's prefixes are used only with a prefix extractor of the name
//! the table records (`TableOptions::prefix_extractor`): another
//! extractor's prefixes were never added, and asking for them could rule
//! out keys the table holds. The filter holds point keys only; nothing it
//! answers covers the range tombstones.

use super::block::{Block, BlockIter, BlockIterMode, KeyOrder};
use super::compression::CompressionType;
use super::filter::{FilterReader, BUILTIN_BLOOM_META_NAME};
use super::format::{
    read_block, BlockChecksum, BlockHandle, Footer, CONTEXT_CHECKSUM_VERSION, FOOTER_SIZE,
    INDEX_BLOCK_NAME, LEGACY_FOOTER_SIZE,
};
use super::prefix::PrefixExtractor;
use super::properties::{names, TableProperties};
use super::writer::{PROPERTIES_BLOCK_NAME, RANGE_DEL_BLOCK_NAME};
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, seek_key, ParsedKey, ValueKind, KIND_FOR_SEEK, MAX_SEQUENCE};
use crate::util::checksum::ChecksumType;
use crate::util::coding::decode_fixed32;
use crate::vfs::{OsVfs, RandomAccessFile, Vfs};
use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

/// How to open a table.
#[derive(Clone)]
pub struct TableOptions {
    /// Shared block cache; `None` reads every data block from the file.
    pub cache: Option<Arc<BlockCache>>,
    pub verify_checksums: bool,
    /// Sequence number to stamp on every key (ingested files). `None` uses
    /// the file's own `global_seqno` property, if it has one.
    pub global_seqno: Option<u64>,
    /// Must match the extractor the file was written with for its prefix
    /// filter to be used.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    pub use_filter: bool,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            cache: None,
            verify_checksums: true,
            global_seqno: None,
            prefix_extractor: None,
            use_filter: true,
        }
    }
}

/// A range tombstone of a table: it deletes the user keys in
/// `[start, end)` written before sequence number `seq` (the table's global
/// one, when it has one). Public through
/// [`TableFile::range_tombstones`](super::TableFile::range_tombstones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeTombstone {
    /// The first key deleted.
    pub start: Vec<u8>,
    /// The first key after the deleted range.
    pub end: Vec<u8>,
    /// The sequence number.
    pub seq: u64,
}

/// A point entry found by `Table::get`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub seq: u64,
    pub kind: ValueKind,
    pub value: Vec<u8>,
}

/// What [`TableFile::verify`](super::TableFile::verify) read: the blocks,
/// their sizes and compression, and the entries (`sst dump --stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableStats {
    /// Data blocks.
    pub data_blocks: u64,
    /// Their bytes uncompressed.
    pub data_raw_bytes: u64,
    /// Their bytes as stored (compressed, without block trailers).
    pub data_stored_bytes: u64,
    /// How many data blocks are stored with each compression type.
    pub blocks_by_compression: Vec<(CompressionType, u64)>,
    /// Point entries (puts, deletions, merge operands).
    pub entries: u64,
    /// Bytes of the index block.
    pub index_bytes: u64,
    /// Bytes of the filter block (0 without one).
    pub filter_bytes: u64,
    /// The filter's probes per key, when the table has a filter it can read.
    pub filter_probes: Option<u32>,
}

pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    name: String,
    footer: Footer,
    /// Blocks lie before the footer.
    data_limit: u64,
    props: TableProperties,
    index: Arc<Block>,
    index_mode: BlockIterMode,
    data_mode: BlockIterMode,
    filter: Option<FilterReader>,
    /// Why the filter block could not be read, and the offset the damage
    /// was found at.
    filter_error: Option<(u64, String)>,
    filter_bytes: u64,
    /// The prefix extractor, when it matches the file's.
    prefix: Option<Arc<dyn PrefixExtractor>>,
    tombstones: Vec<RangeTombstone>,
    cache: Option<Arc<BlockCache>>,
    cache_id: u64,
    verify: bool,
}

/// `px` if the table's filter holds its prefixes: the table was written
/// with a prefix filter by an extractor of the same name. Any other
/// extractor would ask about prefixes that were never added.
fn matching_extractor(
    px: Option<&Arc<dyn PrefixExtractor>>,
    props: &TableProperties,
) -> Option<Arc<dyn PrefixExtractor>> {
    px.filter(|p| props.prefix_filtering && p.name() == props.prefix_extractor)
        .map(Arc::clone)
}

impl Table {
    /// Opens a table on the OS file system.
    pub fn open_path(path: &Path, opts: TableOptions) -> Result<Arc<Table>> {
        Table::open(OsVfs.open_random(path)?, opts)
    }

    pub fn open_in(vfs: &dyn Vfs, path: &Path, opts: TableOptions) -> Result<Arc<Table>> {
        Table::open(vfs.open_random(path)?, opts)
    }

    pub fn open(file: Arc<dyn RandomAccessFile>, opts: TableOptions) -> Result<Arc<Table>> {
        let name = file.name().to_string();
        let mut footer = Footer::read(file.as_ref())?;
        let footer_len = if footer.format_version == 0 {
            LEGACY_FOOTER_SIZE
        } else {
            FOOTER_SIZE
        };
        let data_limit = file.len() - footer_len as u64;
        let verify = opts.verify_checksums;
        let checksum = footer.block_checksum();
        let read = |h: BlockHandle| read_block(file.as_ref(), h, checksum, verify, data_limit);
        let parse = |h: BlockHandle, what: &str, data: Vec<u8>| {
            Block::new(data)
                .map(Arc::new)
                .map_err(|m| Error::corruption(&name, h.offset, format!("{what} block: {m}")))
        };

        let metaindex = parse(footer.metaindex, "metaindex", read(footer.metaindex)?.data)?;
        let mut meta = Vec::new();
        let mut it = BlockIter::new(metaindex, BlockIterMode::BYTEWISE);
        it.seek_to_first();
        while it.valid() {
            let h = BlockHandle::decode_from(it.value()).ok_or_else(|| {
                Error::corruption(
                    &name,
                    footer.metaindex.offset,
                    "metaindex entry is not a block handle",
                )
            })?;
            meta.push((String::from_utf8_lossy(it.key()).into_owned(), h));
            it.next();
        }
        if let Some(e) = it.error() {
            return Err(Error::corruption(
                &name,
                footer.metaindex.offset,
                format!("metaindex block: {e}"),
            ));
        }
        let find = |n: &str| meta.iter().find(|(k, _)| k == n).map(|(_, h)| *h);

        let props = match find(PROPERTIES_BLOCK_NAME) {
            Some(h) => {
                let data = match read(h) {
                    Ok(c) => c.data,
                    Err(e) => properties_with_patched_seqno(file.as_ref(), h, checksum, data_limit)
                        .ok_or(e)?,
                };
                TableProperties::decode(data).map_err(|m| Error::corruption(&name, h.offset, m))?
            }
            None => TableProperties::default(),
        };
        if !props.comparator.is_empty() && props.comparator != "leveldb.BytewiseComparator" {
            return Err(Error::NotSupported(format!(
                "{name}: comparator {} (Strata orders keys bytewise)",
                props.comparator
            )));
        }
        if let Some(t) = props.all.get(names::BBT_INDEX_TYPE) {
            let t = if t.len() == 4 {
                decode_fixed32(t)
            } else {
                u32::MAX
            };
            // 0 = binary search, 1 = hash search (its index block is still a
            // binary-search index); 2 = two-level partitioned, 3 = binary
            // search with first keys: different block layouts.
            if t > 1 {
                return Err(Error::NotSupported(format!("{name}: index type {t}")));
            }
        }

        if footer.format_version >= CONTEXT_CHECKSUM_VERSION {
            // The footer no longer holds the index handle: the metaindex does.
            footer.index = find(INDEX_BLOCK_NAME).ok_or_else(|| {
                Error::corruption(
                    &name,
                    footer.metaindex.offset,
                    format!(
                        "format_version {} metaindex has no {INDEX_BLOCK_NAME} entry",
                        footer.format_version
                    ),
                )
            })?;
            check_compression_name(&name, &props, footer.format_version)?;
        }
        let index = parse(footer.index, "index", read(footer.index)?.data)?;
        let index_mode = BlockIterMode {
            order: if props.index_key_is_user_key {
                KeyOrder::Bytewise
            } else {
                KeyOrder::Internal
            },
            value_delta: props.index_value_is_delta_encoded,
            global_seqno: None,
        };
        let global_seqno =
            opts.global_seqno
                .or(match (props.external_version, props.global_seqno) {
                    (Some(v), Some(s)) if v >= 2 && s != 0 => Some(s),
                    _ => None,
                });
        if let Some(s) = global_seqno {
            if s > MAX_SEQUENCE {
                return Err(Error::corruption(
                    &name,
                    0,
                    format!("global sequence number {s} is too large"),
                ));
            }
        }
        let data_mode = BlockIterMode {
            global_seqno,
            ..BlockIterMode::DATA
        };

        let (mut filter, mut filter_error, mut filter_bytes) = (None, None, 0);
        if opts.use_filter {
            if let Some(h) = find(BUILTIN_BLOOM_META_NAME) {
                filter_bytes = h.size;
                match read(h) {
                    Ok(c) => filter = Some(FilterReader::new(&c.data)),
                    // The block reader's own error names this file and the
                    // offset: kept apart, so a report built from it does not
                    // name the file twice.
                    Err(Error::Corruption { offset, msg, .. }) => {
                        filter_error = Some((offset, msg))
                    }
                    Err(e) => filter_error = Some((h.offset, e.to_string())),
                }
            }
        }
        let prefix = matching_extractor(opts.prefix_extractor.as_ref(), &props);

        let mut tombstones = Vec::new();
        if let Some(h) = find(RANGE_DEL_BLOCK_NAME) {
            let b = parse(h, "range deletion", read(h)?.data)?;
            let mut it = BlockIter::new(b, data_mode);
            it.seek_to_first();
            while it.valid() {
                let p = ParsedKey::parse(it.key())
                    .filter(|p| p.kind == ValueKind::RangeDeletion as u8)
                    .ok_or_else(|| {
                        Error::corruption(
                            &name,
                            h.offset,
                            "range deletion block holds a key that is not a range tombstone",
                        )
                    })?;
                tombstones.push(RangeTombstone {
                    start: p.user_key.to_vec(),
                    end: it.value().to_vec(),
                    seq: p.seq,
                });
                it.next();
            }
            if let Some(e) = it.error() {
                return Err(Error::corruption(
                    &name,
                    h.offset,
                    format!("range deletion block: {e}"),
                ));
            }
        }

        let cache_id = opts.cache.as_ref().map(|c| c.new_id()).unwrap_or(0);
        Ok(Arc::new(Table {
            file,
            name,
            footer,
            data_limit,
            props,
            index,
            index_mode,
            data_mode,
            filter,
            filter_error,
            filter_bytes,
            prefix,
            tombstones,
            cache: opts.cache,
            cache_id,
            verify,
        }))
    }

    /// This table as a database reads it once ingested at `global_seqno`:
    /// the same open file, footer, index, filter and properties, named
    /// `name`, reading through `cache`, every key and range tombstone at
    /// `global_seqno`, its prefix filter used with `prefix_extractor` if
    /// the file names that extractor (as [`Table::open`] with those three
    /// options and otherwise default ones gives). For a table opened with
    /// default options and sequence number 0 (a file to ingest): the
    /// ingestion's second open of a file it has just opened and checked (a
    /// file open and four block reads) is saved. The file must be the one
    /// the database names (a hard link to it), not a copy.
    pub fn with_global_seqno(
        &self,
        name: String,
        cache: Option<Arc<BlockCache>>,
        global_seqno: u64,
        prefix_extractor: Option<&Arc<dyn PrefixExtractor>>,
    ) -> Result<Arc<Table>> {
        if global_seqno > MAX_SEQUENCE {
            return Err(Error::corruption(
                &name,
                0,
                format!("global sequence number {global_seqno} is too large"),
            ));
        }
        let cache_id = cache.as_ref().map(|c| c.new_id()).unwrap_or(0);
        Ok(Arc::new(Table {
            file: Arc::clone(&self.file),
            name,
            footer: self.footer,
            data_limit: self.data_limit,
            props: self.props.clone(),
            index: Arc::clone(&self.index),
            index_mode: self.index_mode,
            data_mode: BlockIterMode {
                global_seqno: Some(global_seqno),
                ..self.data_mode
            },
            filter: self.filter.clone(),
            filter_error: self.filter_error.clone(),
            filter_bytes: self.filter_bytes,
            prefix: matching_extractor(prefix_extractor, &self.props),
            tombstones: self
                .tombstones
                .iter()
                .map(|t| RangeTombstone {
                    seq: global_seqno,
                    ..t.clone()
                })
                .collect(),
            cache,
            cache_id,
            verify: self.verify,
        }))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// True if the footer declares no block checksum (`ChecksumType::None`):
    /// nothing read from the table is verified.
    pub fn has_no_checksums(&self) -> bool {
        self.footer.checksum == ChecksumType::None
    }

    /// Refuses a table whose footer declares no block checksum, as
    /// corruption naming the file and the footer's offset; `needs` says
    /// who requires checksums ("the database", "ingestion"). The footer of
    /// format_version 5 and older is not checksummed itself, so one
    /// flipped bit turns crc32c (1) into none (0) and every block after
    /// it is served unverified: a reader that expects checksummed tables
    /// must not take "none" on the footer's word. (From format_version 6
    /// the footer's own checksum catches that flip.)
    pub fn require_checksums(&self, needs: &str) -> Result<()> {
        if !self.has_no_checksums() {
            return Ok(());
        }
        Err(Error::corruption(
            &self.name,
            self.data_limit,
            format!(
                "the footer declares no checksum (checksum type none, format_version {}), \
                 so no block of this table could be verified, and {needs} requires one \
                 (a flipped footer bit turns crc32c into none)",
                self.footer.format_version
            ),
        ))
    }

    pub fn file_size(&self) -> u64 {
        self.file.len()
    }

    pub fn range_tombstones(&self) -> &[RangeTombstone] {
        &self.tombstones
    }

    /// Why the filter was not loaded, if it was present but unreadable:
    /// the damaged block's offset and what is wrong with it.
    pub fn filter_error(&self) -> Option<(u64, &str)> {
        self.filter_error.as_ref().map(|(at, m)| (*at, m.as_str()))
    }

    /// [`Self::filter_error`] as the corruption it is, at its offset.
    pub fn filter_corruption(&self) -> Option<Error> {
        self.filter_error
            .as_ref()
            .map(|(at, m)| Error::corruption(&self.name, *at, format!("filter block: {m}")))
    }

    pub fn has_filter(&self) -> bool {
        self.filter.is_some()
    }

    /// The sequence number stamped on every key, for ingested files.
    pub fn global_seqno(&self) -> Option<u64> {
        self.data_mode.global_seqno
    }

    /// False only if the filter proves `user_key` is absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        let Some(f) = &self.filter else { return true };
        if self.props.whole_key_filtering {
            return f.may_contain(user_key);
        }
        match self.prefix.as_ref().and_then(|p| p.prefix(user_key)) {
            Some(prefix) => f.may_contain(prefix),
            None => true,
        }
    }

    /// False only if the prefix filter proves that no point entry (a value
    /// or a deletion) has a user key whose prefix, under the extractor the
    /// table was opened with, is `prefix`. Always true without a filter or
    /// without a matching extractor (the file recorded another one, or
    /// none). Says nothing about range tombstones, which the filter never
    /// holds.
    pub fn may_contain_prefix(&self, prefix: &[u8]) -> bool {
        match (&self.filter, &self.prefix) {
            (Some(f), Some(_)) => f.may_contain(prefix),
            _ => true,
        }
    }

    /// Whether [`may_contain_prefix`](Self::may_contain_prefix) can ever
    /// say false: the table has a filter holding the prefixes of the
    /// extractor it was opened with.
    pub fn has_prefix_filter(&self) -> bool {
        self.filter.is_some() && self.prefix.is_some()
    }

    /// The newest point entry for `user_key` with sequence <= `snapshot`.
    /// Range tombstones are not applied here (see `range_tombstones`).
    ///
    /// The bloom filter first, then one seek in the index block and one in
    /// the data block it names, without building a `TableIter` (a point
    /// lookup is the hot read path: no table `Arc` clone, no bounds, no
    /// block skipping). A [`PointCursor`] used for one key: lookups of
    /// many keys in ascending order share one cursor.
    pub fn get(self: &Arc<Self>, user_key: &[u8], snapshot: u64) -> Result<Option<Found>> {
        PointCursor::new(self).get(user_key, snapshot)
    }

    /// `get` through a full iterator (see `get`).
    fn get_by_iter(self: &Arc<Self>, user_key: &[u8], target: &[u8]) -> Result<Option<Found>> {
        let mut it = self.iter();
        it.seek(target);
        it.status()?;
        if !it.valid() {
            return Ok(None);
        }
        let offset = it.block_offset();
        self.found(user_key, it.key(), it.value(), offset)
    }

    /// The entry at internal key `ikey` if it is `user_key`'s.
    fn found(
        &self,
        user_key: &[u8],
        ikey: &[u8],
        value: &[u8],
        offset: u64,
    ) -> Result<Option<Found>> {
        let Some(p) = ParsedKey::parse(ikey) else {
            return Err(Error::corruption(
                &self.name,
                offset,
                "data block key shorter than its trailer",
            ));
        };
        if p.user_key != user_key {
            return Ok(None);
        }
        let kind = p.value_kind().ok_or_else(|| {
            Error::corruption(
                &self.name,
                offset,
                format!("unknown value kind {:#x}", p.kind),
            )
        })?;
        Ok(Some(Found {
            seq: p.seq,
            kind,
            value: value.to_vec(),
        }))
    }

    pub fn iter(self: &Arc<Self>) -> TableIter {
        TableIter::new(Arc::clone(self), None, None)
    }

    /// An iterator that leaves the block cache as it found it: blocks it
    /// reads from the file are not added (a cached block is still used).
    /// For compactions, which read every block of their inputs once, and
    /// whose inputs are deleted when they end: filling the cache with those
    /// blocks would evict the blocks foreground reads use, and pay an
    /// insert and an eviction per block for nothing (RocksDB's compactions
    /// read with `fill_cache = false` for the same reasons).
    pub fn iter_no_fill(self: &Arc<Self>) -> TableIter {
        let mut it = TableIter::new(Arc::clone(self), None, None);
        it.fill_cache = false;
        it
    }

    /// An iterator limited to user keys in `[lower, upper)`.
    #[cfg(any(test, feature = "internals"))]
    pub fn iter_bounded(self: &Arc<Self>, lower: Option<&[u8]>, upper: Option<&[u8]>) -> TableIter {
        TableIter::new(
            Arc::clone(self),
            lower.map(<[u8]>::to_vec),
            upper.map(<[u8]>::to_vec),
        )
    }

    /// Approximate bytes of data blocks holding internal keys in
    /// `[smallest, largest]`: from the start of the block that holds
    /// `smallest` to the end of the block that holds `largest`, so whole
    /// blocks at either end count. Reads only the pinned index block.
    pub fn approximate_span(&self, smallest: &[u8], largest: &[u8]) -> u64 {
        let Some(first) = self.block_for(smallest) else {
            return 0;
        };
        let end = match self.block_for(largest) {
            Some(h) => h.end(),
            None => {
                // Past the last block's last key: up to the end of data.
                let mut idx = self.index_iter();
                idx.seek_to_last();
                match idx.valid().then(|| idx.handle()).flatten() {
                    Some(h) => h.end(),
                    None => first.end(),
                }
            }
        };
        end.saturating_sub(first.offset)
    }

    /// User keys that cut the table's data blocks into `parts` runs of
    /// about equal bytes, increasing: for each `i` in `1..parts`, a key
    /// between the last block that ends by the `i`-th share of the data and
    /// the next block. That key is the index separator `s` of the block
    /// (its last key <= `s` < the next block's first key) followed by a
    /// zero byte: the least key above `s`, so every key of the block is
    /// below the cut and every key of the next block at or above it (a
    /// writer cutting "before the first key at or past the split" cuts
    /// exactly between the two blocks). Cuts that would fall at the
    /// table's end, or repeat, are left out, so the result may be shorter.
    /// Reads only the pinned index block.
    pub fn cut_keys(&self, parts: usize) -> Vec<Vec<u8>> {
        let mut handles: Vec<(BlockHandle, Vec<u8>)> = Vec::new();
        let mut idx = self.index_iter();
        idx.seek_to_first();
        while idx.valid() {
            let Some(h) = idx.handle() else { break };
            let k = match self.index_mode.order {
                KeyOrder::Bytewise => idx.key(),
                KeyOrder::Internal => key::user_key(idx.key()),
            };
            handles.push((h, k.to_vec()));
            idx.next();
        }
        let Some(total) = handles.last().map(|(h, _)| h.end()) else {
            return Vec::new();
        };
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut b = 0;
        for i in 1..parts.max(1) {
            let share = total.saturating_mul(i as u64) / parts as u64;
            // Blocks up to `b` end before this share of the data.
            while b + 1 < handles.len() && handles[b + 1].0.end() <= share {
                b += 1;
            }
            if handles[b].0.end() > share || b + 1 == handles.len() {
                continue;
            }
            let mut k = handles[b].1.clone();
            k.push(0);
            if out.last() != Some(&k) {
                out.push(k);
            }
        }
        out
    }

    /// The data block that would hold internal key `ikey`, if any does.
    fn block_for(&self, ikey: &[u8]) -> Option<BlockHandle> {
        let mut idx = self.index_iter();
        match self.index_mode.order {
            KeyOrder::Bytewise => idx.seek(key::user_key(ikey)),
            KeyOrder::Internal => idx.seek(ikey),
        }
        idx.valid().then(|| idx.handle()).flatten()
    }

    fn index_iter(&self) -> BlockIter {
        BlockIter::new(Arc::clone(&self.index), self.index_mode)
    }

    /// A data block, from the cache or the file.
    fn data_block(&self, h: BlockHandle) -> Result<Arc<Block>> {
        self.data_block_filling(h, true)
    }

    /// [`data_block`](Self::data_block), adding a block read from the file
    /// to the block cache only if `fill`. A block already cached is used
    /// either way.
    fn data_block_filling(&self, h: BlockHandle, fill: bool) -> Result<Arc<Block>> {
        if let Some(c) = &self.cache {
            if let Some(b) = c.get((self.cache_id, h.offset)) {
                return Ok(b);
            }
        }
        let contents = read_block(
            self.file.as_ref(),
            h,
            self.footer.block_checksum(),
            self.verify,
            self.data_limit,
        )?;
        let b =
            Arc::new(Block::new(contents.data).map_err(|m| {
                Error::corruption(&self.name, h.offset, format!("data block: {m}"))
            })?);
        if let (Some(c), true) = (&self.cache, fill) {
            c.insert((self.cache_id, h.offset), Arc::clone(&b), b.size());
        }
        Ok(b)
    }

    /// The data blocks' handles, in file order: the index block's entries
    /// (a walk split into pieces, `db::ingest`, takes them in ranges).
    #[cfg(any(test, feature = "internals"))]
    pub fn data_handles(&self) -> Result<Vec<BlockHandle>> {
        Ok(self.index_entries()?.handles)
    }

    /// The index block's entries in file order: each data block's handle
    /// and separator, for a walk over every block that also checks each
    /// separator bounds its block ([`walk_blocks`](Self::walk_blocks)).
    pub fn index_entries(&self) -> Result<IndexEntries> {
        let mut out = IndexEntries::default();
        let mut idx = self.index_iter();
        idx.seek_to_first();
        while idx.valid() {
            out.handles.push(idx.handle().ok_or_else(|| {
                Error::corruption(
                    &self.name,
                    self.footer.index.offset,
                    "index entry is not a block handle",
                )
            })?);
            out.keys.extend_from_slice(idx.key());
            out.ends.push(out.keys.len());
            idx.next();
        }
        if let Some(e) = idx.error() {
            return Err(Error::corruption(
                &self.name,
                self.footer.index.offset,
                format!("index block: {e}"),
            ));
        }
        Ok(out)
    }

    /// Refuses a data block's first key (`ikey`, of the block at `offset`)
    /// at or below the previous index entry's separator, and its last key
    /// above its own entry's: RocksDB's rule for separators (`last key of
    /// block i <= separator i < first key of block i + 1`, compared as the
    /// index's keys are: internal keys, or user keys when the index holds
    /// those). A lookup seeks the index for the first separator at or past
    /// its key, so a separator below a key of its block sends the lookup
    /// of that key to the next block, and `get` misses a key a scan finds.
    fn check_separator(
        &self,
        b: &SeparatorBounds<'_>,
        ikey: &[u8],
        offset: u64,
        first: bool,
    ) -> Result<()> {
        let user = self.index_mode.order == KeyOrder::Bytewise;
        let cmp = |s: &[u8], k: &[u8]| {
            if user {
                s.cmp(key::user_key(k))
            } else {
                key::compare_internal(s, k)
            }
        };
        let internal = |k: &[u8]| {
            format!(
                "{:?} @ {}",
                crate::util::hex::escape(key::user_key(k)),
                key::trailer(k) >> 8
            )
        };
        let (entry, sep, ok, what) = if first {
            let Some(prev) = b.prev else { return Ok(()) };
            let ok = cmp(prev, ikey) == Ordering::Less;
            (
                b.entry - 1,
                prev,
                ok,
                ("is not below the first key", "the next"),
            )
        } else {
            let ok = cmp(b.sep, ikey) != Ordering::Less;
            (b.entry, b.sep, ok, ("is below the last key", "its"))
        };
        if ok {
            return Ok(());
        }
        let sep = if user {
            format!("{:?}", crate::util::hex::escape(sep))
        } else {
            internal(sep)
        };
        Err(Error::corruption(
            &self.name,
            self.footer.index.offset,
            format!(
                "index entry {entry} (separator {sep}) {} {} of {} data block (offset \
                 {offset}): the index does not bound its blocks, and a lookup of that key \
                 would miss it",
                what.0,
                internal(ikey),
                what.1,
            ),
        ))
    }

    /// Reads the data blocks `index.handles[run]` (a run of
    /// [`index_entries`]) in order through one read window, each block's
    /// checksum compared unless `checksums` is off and each block's first
    /// and last key checked against the index's separators
    /// (`check_separator`: two comparisons a block, on keys the walk holds
    /// anyway), and hands every entry's key (at least the 8-byte trailer
    /// long, else corruption) to `each` with its block's offset; `on_block`
    /// runs before each block. Returns the number of entries. Key order is
    /// the caller's to check (the ingestion's walk compares user keys once
    /// per entry: `db::ingest::walk_piece`); the buffers (window,
    /// decompressed block) are reused from block to block.
    ///
    /// [`index_entries`]: Self::index_entries
    pub fn walk_blocks(
        &self,
        index: &IndexEntries,
        run: std::ops::Range<usize>,
        checksums: bool,
        on_block: &mut dyn FnMut() -> Result<()>,
        each: &mut dyn FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<u64> {
        let Some(handles) = index.handles.get(run.clone()) else {
            return Err(Error::internal(format!(
                "{}: blocks {run:?} of {} walked",
                self.name,
                index.len()
            )));
        };
        let Some(last) = handles.last() else {
            return Ok(0);
        };
        let fill_end = last
            .offset
            .saturating_add(last.size)
            .saturating_add(super::format::BLOCK_TRAILER_SIZE as u64);
        let mut window = super::read_window::ReadWindow::with_fill_end(
            self.file.as_ref(),
            self.data_limit,
            fill_end,
        );
        let checksum = self.footer.block_checksum();
        let mut buf = Vec::new();
        let mut entries = 0u64;
        for (i, &h) in run.zip(handles) {
            on_block()?;
            window.block_into(h, checksum, checksums, &mut buf)?;
            let bounds = SeparatorBounds {
                entry: i,
                prev: i.checked_sub(1).map(|p| index.separator(p)),
                sep: index.separator(i),
            };
            let block = self.each_entry(std::mem::take(&mut buf), h.offset, &bounds, &mut |k| {
                entries += 1;
                each(k, h.offset)
            })?;
            // The block's buffer back for the next one (the walk was its
            // only other holder).
            if let Ok(b) = Arc::try_unwrap(block) {
                buf = b.into_data();
            }
        }
        Ok(entries)
    }

    /// Parses the data block `data` (at `offset`, for error messages) and
    /// hands each entry's key, in block order, to `each`: a key shorter
    /// than its 8-byte trailer, a block that does not parse, or an entry
    /// that does not decode is corruption, and so is a first or last key
    /// the index's separators (`bounds`) do not bound (`check_separator`;
    /// the first before `each` sees it, the last after). Returns the
    /// block, so that a caller can take its buffer back.
    fn each_entry(
        &self,
        data: Vec<u8>,
        offset: u64,
        bounds: &SeparatorBounds<'_>,
        each: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<Arc<Block>> {
        let b = Block::new(data)
            .map_err(|m| Error::corruption(&self.name, offset, format!("data block: {m}")))?;
        let mut it = BlockIter::new(Arc::new(b), self.data_mode);
        it.seek_to_first();
        let mut first = true;
        while it.valid() {
            if it.key().len() < 8 {
                return Err(Error::corruption(
                    &self.name,
                    offset,
                    "key shorter than its trailer",
                ));
            }
            if first {
                self.check_separator(bounds, it.key(), offset, true)?;
                first = false;
            }
            each(it.key())?;
            if it.at_last_entry() {
                self.check_separator(bounds, it.key(), offset, false)?;
            }
            it.next();
        }
        if let Some(e) = it.error() {
            return Err(Error::corruption(
                &self.name,
                offset,
                format!("data block: {e}"),
            ));
        }
        Ok(it.into_block())
    }

    /// Reads every block with checksum verification and checks that keys
    /// increase, that each index entry bounds its block
    /// (`check_separator`) and that the entry count matches the
    /// properties.
    pub fn verify(self: &Arc<Self>) -> Result<TableStats> {
        self.verify_with(true, &mut |_, _| Ok(()))
    }

    /// [`verify`](Self::verify) in one pass that also hands every point
    /// entry's internal key, in order, to `each` (with its data block's
    /// offset, for error messages): the ingestion's checks ride on the walk
    /// instead of reading every block a second time. Without `checksums`,
    /// block checksums are not compared (everything else is checked).
    pub fn verify_with(
        self: &Arc<Self>,
        checksums: bool,
        each: &mut dyn FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<TableStats> {
        if let Some(e) = self.filter_corruption() {
            return Err(e);
        }
        let mut stats = TableStats {
            index_bytes: self.footer.index.size,
            filter_bytes: self.filter_bytes,
            filter_probes: self.filter.as_ref().and_then(|f| f.num_probes()),
            ..TableStats::default()
        };
        let mut idx = self.index_iter();
        idx.seek_to_first();
        // Blocks are read in file order: through one buffer, not one
        // system call per block.
        let mut window = super::read_window::ReadWindow::new(self.file.as_ref(), self.data_limit);
        // The previous key, in a buffer reused for every entry.
        let mut last: Vec<u8> = Vec::new();
        let mut have_last = false;
        // The previous index entry's separator (`check_separator`).
        let mut prev_sep: Vec<u8> = Vec::new();
        let mut entry = 0usize;
        while idx.valid() {
            let h = idx.handle().ok_or_else(|| {
                Error::corruption(
                    &self.name,
                    self.footer.index.offset,
                    "index entry is not a block handle",
                )
            })?;
            let c = window.block(h, self.footer.block_checksum(), checksums)?;
            stats.data_blocks += 1;
            stats.data_raw_bytes += c.data.len() as u64;
            stats.data_stored_bytes += c.stored_size as u64;
            match stats
                .blocks_by_compression
                .iter_mut()
                .find(|(t, _)| *t == c.compression)
            {
                Some((_, n)) => *n += 1,
                None => stats.blocks_by_compression.push((c.compression, 1)),
            }
            let bounds = SeparatorBounds {
                entry,
                prev: (entry > 0).then_some(prev_sep.as_slice()),
                sep: idx.key(),
            };
            self.each_entry(c.data, h.offset, &bounds, &mut |k| {
                if have_last && key::compare_internal(&last, k) != Ordering::Less {
                    return Err(Error::corruption(&self.name, h.offset, "keys out of order"));
                }
                each(k, h.offset)?;
                last.clear();
                last.extend_from_slice(k);
                have_last = true;
                stats.entries += 1;
                Ok(())
            })?;
            prev_sep.clear();
            prev_sep.extend_from_slice(idx.key());
            entry += 1;
            idx.next();
        }
        if let Some(e) = idx.error() {
            return Err(Error::corruption(
                &self.name,
                self.footer.index.offset,
                format!("index block: {e}"),
            ));
        }
        let want = self
            .props
            .num_entries
            .saturating_sub(self.props.num_range_deletions);
        if self.props.all.contains_key(names::NUM_ENTRIES) && stats.entries != want {
            return Err(Error::corruption(
                &self.name,
                0,
                format!(
                    "properties say {want} point entries, data blocks hold {}",
                    stats.entries
                ),
            ));
        }
        Ok(stats)
    }
}

/// The index block's entries, in file order ([`Table::index_entries`]):
/// each data block's handle and its separator key (all separators in one
/// buffer: no allocation per block).
#[derive(Clone, Debug, Default)]
pub struct IndexEntries {
    /// The data blocks' handles.
    pub handles: Vec<BlockHandle>,
    keys: Vec<u8>,
    /// Where each separator ends in `keys`.
    ends: Vec<usize>,
}

impl IndexEntries {
    /// The number of entries (data blocks).
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// Entry `i`'s separator (`i < len()`).
    pub fn separator(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p]);
        &self.keys[start..self.ends[i]]
    }
}

/// What bounds one data block's keys in the index: its entry number, the
/// previous entry's separator (none for the first block) and its own.
struct SeparatorBounds<'a> {
    entry: usize,
    prev: Option<&'a [u8]>,
    sep: &'a [u8],
}

impl Drop for Table {
    fn drop(&mut self) {
        if let Some(c) = &self.cache {
            c.erase_id(self.cache_id);
        }
    }
}

/// RocksDB's ingestion (with `write_global_seqno`) overwrites the 8-byte
/// `global_seqno` property of its copy of a file in place and leaves the
/// properties block's checksum as it was, computed over a zero there. Such a
/// block is accepted when its checksum matches with those bytes zeroed;
/// anything else is still corruption.
fn properties_with_patched_seqno(
    file: &dyn RandomAccessFile,
    h: BlockHandle,
    checksum: BlockChecksum,
    limit: u64,
) -> Option<Vec<u8>> {
    let c = read_block(file, h, checksum, false, limit).ok()?;
    if c.compression != CompressionType::None {
        return None;
    }
    let block = Arc::new(Block::new(c.data.clone()).ok()?);
    let base = block.data().as_ptr() as usize;
    let mut it = BlockIter::new(block, BlockIterMode::BYTEWISE);
    it.seek(names::EXTERNAL_GLOBAL_SEQNO.as_bytes());
    if !it.valid() || it.key() != names::EXTERNAL_GLOBAL_SEQNO.as_bytes() || it.value().len() != 8 {
        return None;
    }
    // The value's position in the block, which is the same in `c.data`.
    let at = it.value().as_ptr() as usize - base;
    let mut zeroed = c.data.clone();
    zeroed[at..at + 8].fill(0);
    let mut trailer = [0u8; 5];
    file.read_exact_at(&mut trailer, h.offset + h.size).ok()?;
    let stored = crate::util::coding::decode_fixed32(&trailer[1..]).wrapping_sub(
        super::format::context_modifier(checksum.base_context, h.offset),
    );
    (crate::util::checksum::block_checksum(checksum.kind, &zeroed, trailer[0]) == stored)
        .then_some(c.data)
}

/// Format_version 7 writes the `rocksdb.compression` property as the
/// compression manager's name, `;`, the compression types used (two hex
/// digits each), `;` (RocksDB's `GetDecompressor`). Only RocksDB's built-in
/// manager (or none, for an uncompressed file) uses the compression types
/// Strata decodes; a custom manager's blocks are refused here rather than
/// reported as corrupt when read. A plain type name (`Snappy`) is accepted
/// too: rocksdict 0.3.29 (RocksDB 10.4.2) writes format_version 7 files with
/// one, and every block names its own compression type anyway.
fn check_compression_name(name: &str, props: &TableProperties, version: u32) -> Result<()> {
    if version < 7 {
        return Ok(());
    }
    let mut fields = props.compression.split(';');
    let manager = fields.next().unwrap_or_default();
    let Some(types) = fields.next() else {
        return Ok(()); // a plain, legacy type name
    };
    if !(manager.is_empty() || manager.starts_with("Builtin")) {
        return Err(Error::NotSupported(format!(
            "{name}: blocks compressed by RocksDB compression manager {manager:?}"
        )));
    }
    if types.len() % 2 != 0 || !types.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::corruption(
            name,
            0,
            format!(
                "compression property {:?} does not decode",
                props.compression
            ),
        ));
    }
    Ok(())
}

/// Point lookups in one table, [`Table::get`]'s way, for keys asked in
/// ascending order (a `multi_get`'s run of keys in one file, `db::read`).
///
/// The index stays where the previous key left it and the data block it
/// read stays loaded: a key in the same block costs no index search and
/// no block-cache lookup, and a key a few blocks on steps forward to its
/// index entry instead of searching the whole index (see
/// `block_for_next`), where separate `get`s pay a search and a lookup per
/// key. The bloom filter is still asked per key. A key below the one
/// before it (or the first) seeks the index afresh, so any order gives
/// right answers; ascending order is what makes the reuse possible.
pub struct PointCursor<'t> {
    table: &'t Arc<Table>,
    index: BlockIter,
    /// The previous lookup's seek target (empty before the first): the
    /// index entry `index` is at is the first whose separator is at or
    /// past it.
    target: Vec<u8>,
    /// This lookup's seek target, built here so that neither buffer is
    /// allocated again.
    next: Vec<u8>,
    /// The data block last read, with an iterator over it.
    data: Option<(BlockHandle, BlockIter)>,
}

impl<'t> PointCursor<'t> {
    /// A cursor at no key yet.
    pub fn new(table: &'t Arc<Table>) -> PointCursor<'t> {
        PointCursor {
            table,
            index: table.index_iter(),
            target: Vec::new(),
            next: Vec::new(),
            data: None,
        }
    }

    /// The newest point entry for `user_key` with sequence <= `snapshot`,
    /// exactly as [`Table::get`] answers (range tombstones not applied).
    ///
    /// The entry sought is in the block the index names whenever that
    /// block holds any entry at or past the target (the index names the
    /// first block whose last key is at or past it); otherwise, and on any
    /// index trouble, the lookup takes the iterator's path, which also
    /// reports corruption with its offset.
    pub fn get(&mut self, user_key: &[u8], snapshot: u64) -> Result<Option<Found>> {
        let t = self.table;
        if !t.may_contain(user_key) {
            return Ok(None);
        }
        self.next.clear();
        key::append_internal_key(
            &mut self.next,
            user_key,
            snapshot.min(MAX_SEQUENCE),
            KIND_FOR_SEEK,
        );
        let Some(h) = self.block_for_next() else {
            return t.get_by_iter(user_key, &self.target);
        };
        let it = match &mut self.data {
            Some((loaded, it)) if *loaded == h => it,
            data => {
                &mut data
                    .insert((h, BlockIter::new(t.data_block(h)?, t.data_mode)))
                    .1
            }
        };
        it.seek(&self.target);
        if let Some(e) = it.error() {
            return Err(Error::corruption(
                &t.name,
                h.offset,
                format!("data block: {e}"),
            ));
        }
        if !it.valid() {
            return t.get_by_iter(user_key, &self.target);
        }
        t.found(user_key, it.key(), it.value(), h.offset)
    }

    /// The data block that would hold the target in `next` (which becomes
    /// `target`), if any does: `Table::block_for`'s answer, the first index
    /// entry whose separator is at or past the target.
    ///
    /// When the target did not move back, that entry is the one the index
    /// is at or one after it (every entry before it was below the previous
    /// target, so below this one too): the cursor steps forward to it, up
    /// to [`WALK`](Self::WALK) entries, before it falls back to a seek over
    /// the whole index. The keys of a sorted batch are close together, so
    /// the next is mostly in the same block or a few blocks on, where
    /// stepping reads a few adjacent entries and a seek a dozen scattered
    /// ones.
    fn block_for_next(&mut self) -> Option<BlockHandle> {
        let order = self.table.index_mode.order;
        // The index compares user keys (bytewise) or internal keys.
        let cmp = |a: &[u8], b: &[u8]| match order {
            KeyOrder::Bytewise => a.cmp(key::user_key(b)),
            KeyOrder::Internal => key::compare_internal(a, b),
        };
        let forward = self.index.valid()
            && !self.target.is_empty()
            && match order {
                KeyOrder::Bytewise => key::user_key(&self.next).cmp(key::user_key(&self.target)),
                KeyOrder::Internal => key::compare_internal(&self.next, &self.target),
            } != Ordering::Less;
        std::mem::swap(&mut self.target, &mut self.next);
        let mut at = false;
        if forward {
            for _ in 0..=Self::WALK {
                if !self.index.valid() {
                    break;
                }
                if cmp(self.index.key(), &self.target) != Ordering::Less {
                    at = true;
                    break;
                }
                self.index.next();
            }
        }
        if !at {
            match order {
                KeyOrder::Bytewise => self.index.seek(key::user_key(&self.target)),
                KeyOrder::Internal => self.index.seek(&self.target),
            }
        }
        self.index.valid().then(|| self.index.handle()).flatten()
    }

    /// How many index entries a lookup steps over before it seeks instead.
    const WALK: usize = 16;
}

/// Iterator over a table's point entries, optionally bounded to user keys in
/// `[lower, upper)`.
pub struct TableIter {
    table: Arc<Table>,
    index: BlockIter,
    data: Option<BlockIter>,
    data_offset: u64,
    err: Option<Error>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    /// Whether blocks read from the file go into the block cache.
    fill_cache: bool,
}

impl TableIter {
    fn new(table: Arc<Table>, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> TableIter {
        let index = table.index_iter();
        TableIter {
            table,
            index,
            data: None,
            data_offset: 0,
            err: None,
            lower,
            upper,
            fill_cache: true,
        }
    }

    /// Offset of the data block the iterator is in (for error messages).
    pub fn block_offset(&self) -> u64 {
        self.data_offset
    }

    /// First entry with user key >= `user_key`.
    pub fn seek_ge(&mut self, user_key: &[u8]) {
        self.seek(&seek_key(user_key, MAX_SEQUENCE));
    }

    /// Last entry with user key < `user_key`.
    pub fn seek_lt(&mut self, user_key: &[u8]) {
        let mut t = user_key.to_vec();
        t.extend_from_slice(&key::pack_trailer(MAX_SEQUENCE, KIND_FOR_SEEK).to_le_bytes());
        self.seek_for_prev_raw(&t);
        if self.valid() && key::user_key(self.key()) >= user_key {
            self.prev_raw();
        }
        self.check_bounds();
    }

    fn fail(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.data = None;
    }

    fn index_error(&mut self) -> bool {
        if let Some(e) = self.index.error() {
            let e = Error::corruption(
                &self.table.name,
                self.table.footer.index.offset,
                format!("index block: {e}"),
            );
            self.fail(e);
            return true;
        }
        false
    }

    /// Loads the block the index iterator points at.
    fn load_block(&mut self) -> bool {
        self.data = None;
        if !self.index.valid() {
            self.index_error();
            return false;
        }
        let Some(h) = self.index.handle() else {
            let e = Error::corruption(
                &self.table.name,
                self.table.footer.index.offset,
                "index entry is not a block handle",
            );
            self.fail(e);
            return false;
        };
        match self.table.data_block_filling(h, self.fill_cache) {
            Ok(b) => {
                self.data_offset = h.offset;
                self.data = Some(BlockIter::new(b, self.table.data_mode));
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    fn data_error(&mut self) -> bool {
        if let Some(d) = &self.data {
            if let Some(e) = d.error() {
                let e = Error::corruption(
                    &self.table.name,
                    self.data_offset,
                    format!("data block: {e}"),
                );
                self.fail(e);
                return true;
            }
        }
        false
    }

    /// Moves past exhausted data blocks, to the next block's first entry
    /// (`forward`) or the previous block's last entry.
    fn skip_empty(&mut self, forward: bool) {
        loop {
            if self.err.is_some()
                || self.data.as_ref().is_some_and(|d| d.valid())
                || self.data_error()
            {
                return;
            }
            if self.data.is_some() {
                if forward {
                    self.index.next();
                } else {
                    self.index.prev();
                }
            }
            if !self.load_block() {
                return;
            }
            if let Some(d) = self.data.as_mut() {
                if forward {
                    d.seek_to_first();
                } else {
                    d.seek_to_last();
                }
            }
        }
    }

    fn skip_empty_forward(&mut self) {
        self.skip_empty(true)
    }

    fn skip_empty_backward(&mut self) {
        self.skip_empty(false)
    }

    fn seek_raw(&mut self, target: &[u8]) {
        self.err = None;
        match self.table.index_mode.order {
            KeyOrder::Bytewise => self.index.seek(key::user_key(target)),
            KeyOrder::Internal => self.index.seek(target),
        }
        if self.load_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek(target);
            }
            self.skip_empty_forward();
        }
    }

    fn seek_for_prev_raw(&mut self, target: &[u8]) {
        // Find the first entry > target's position, then step back: seek to
        // the block that could hold target, then move backward as needed.
        self.seek_raw(target);
        if self.err.is_some() {
            return;
        }
        if !self.valid_raw() {
            self.seek_to_last_raw();
        }
        while self.valid_raw() && key::compare_internal(self.key(), target) == Ordering::Greater {
            self.prev_raw();
        }
    }

    fn seek_to_last_raw(&mut self) {
        self.err = None;
        self.index.seek_to_last();
        if self.load_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek_to_last();
            }
            self.skip_empty_backward();
        }
    }

    fn prev_raw(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.prev();
        }
        self.skip_empty_backward();
    }

    fn valid_raw(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    /// Invalidates the iterator if it stands outside the bounds.
    fn check_bounds(&mut self) {
        if !self.valid_raw() {
            return;
        }
        let uk = key::user_key(self.key());
        let out = self.upper.as_deref().is_some_and(|u| uk >= u)
            || self.lower.as_deref().is_some_and(|l| uk < l);
        if out {
            self.data = None;
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.valid_raw()
    }

    fn seek_to_first(&mut self) {
        if let Some(l) = self.lower.clone() {
            self.seek_ge(&l);
            return;
        }
        self.err = None;
        self.index.seek_to_first();
        if self.load_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek_to_first();
            }
            self.skip_empty_forward();
        }
        self.check_bounds();
    }

    fn seek_to_last(&mut self) {
        if let Some(u) = self.upper.clone() {
            self.seek_lt(&u);
            return;
        }
        self.seek_to_last_raw();
        self.check_bounds();
    }

    fn seek(&mut self, target: &[u8]) {
        match &self.lower {
            Some(l) if key::user_key(target) < l.as_slice() => {
                let t = seek_key(&l.clone(), MAX_SEQUENCE);
                self.seek_raw(&t);
            }
            _ => self.seek_raw(target),
        }
        self.check_bounds();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        match &self.upper {
            Some(u) if key::user_key(target) >= u.as_slice() => {
                let u = u.clone();
                self.seek_lt(&u);
                return;
            }
            _ => self.seek_for_prev_raw(target),
        }
        self.check_bounds();
    }

    fn next(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.next();
        }
        self.skip_empty_forward();
        self.check_bounds();
    }

    fn prev(&mut self) {
        self.prev_raw();
        self.check_bounds();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map(|d| d.key()).unwrap_or(&[])
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map(|d| d.value()).unwrap_or(&[])
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
