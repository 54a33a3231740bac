//! The properties block: a bytewise-sorted block of `name -> value` entries.
//!
//! Numbers RocksDB itself defines are varint64s; the block-based table's own
//! user properties and the external-file properties use the encodings RocksDB
//! gives them (fixed32/fixed64 or decimal text). Strata adds `strata.*`
//! properties for what RocksDB does not record: smallest and largest internal
//! key and the sequence-number range. Unknown properties are kept as raw bytes
//! so a file written by another tool round-trips through `sst dump`.

use super::block::{Block, BlockIter, BlockIterMode};
use super::block_builder::BlockBuilder;
use crate::util::coding::{decode_fixed32, decode_fixed64, get_varint64, put_varint64};
use std::collections::BTreeMap;
use std::sync::Arc;

pub mod names {
    pub const DATA_SIZE: &str = "rocksdb.data.size";
    pub const INDEX_SIZE: &str = "rocksdb.index.size";
    pub const INDEX_PARTITIONS: &str = "rocksdb.index.partitions";
    pub const TOP_LEVEL_INDEX_SIZE: &str = "rocksdb.top-level.index.size";
    pub const INDEX_KEY_IS_USER_KEY: &str = "rocksdb.index.key.is.user.key";
    pub const INDEX_VALUE_IS_DELTA_ENCODED: &str = "rocksdb.index.value.is.delta.encoded";
    pub const FILTER_SIZE: &str = "rocksdb.filter.size";
    pub const RAW_KEY_SIZE: &str = "rocksdb.raw.key.size";
    pub const RAW_VALUE_SIZE: &str = "rocksdb.raw.value.size";
    pub const NUM_DATA_BLOCKS: &str = "rocksdb.num.data.blocks";
    pub const NUM_ENTRIES: &str = "rocksdb.num.entries";
    pub const NUM_FILTER_ENTRIES: &str = "rocksdb.num.filter_entries";
    pub const DELETED_KEYS: &str = "rocksdb.deleted.keys";
    pub const MERGE_OPERANDS: &str = "rocksdb.merge.operands";
    pub const NUM_RANGE_DELETIONS: &str = "rocksdb.num.range-deletions";
    pub const FORMAT_VERSION: &str = "rocksdb.format.version";
    pub const FIXED_KEY_LEN: &str = "rocksdb.fixed.key.length";
    pub const COLUMN_FAMILY_ID: &str = "rocksdb.column.family.id";
    pub const COLUMN_FAMILY_NAME: &str = "rocksdb.column.family.name";
    pub const FILTER_POLICY: &str = "rocksdb.filter.policy";
    pub const COMPARATOR: &str = "rocksdb.comparator";
    pub const MERGE_OPERATOR: &str = "rocksdb.merge.operator";
    pub const PREFIX_EXTRACTOR: &str = "rocksdb.prefix.extractor.name";
    pub const PROPERTY_COLLECTORS: &str = "rocksdb.property.collectors";
    pub const COMPRESSION: &str = "rocksdb.compression";
    pub const COMPRESSION_OPTIONS: &str = "rocksdb.compression_options";
    pub const CREATION_TIME: &str = "rocksdb.creation.time";
    pub const OLDEST_KEY_TIME: &str = "rocksdb.oldest.key.time";
    pub const FILE_CREATION_TIME: &str = "rocksdb.file.creation.time";
    // User-collected properties of the block-based table.
    pub const BBT_INDEX_TYPE: &str = "rocksdb.block.based.table.index.type";
    pub const BBT_PREFIX_FILTERING: &str = "rocksdb.block.based.table.prefix.filtering";
    pub const BBT_WHOLE_KEY_FILTERING: &str = "rocksdb.block.based.table.whole.key.filtering";
    // External-file properties read by ingestion.
    pub const EXTERNAL_VERSION: &str = "rocksdb.external_sst_file.version";
    pub const EXTERNAL_GLOBAL_SEQNO: &str = "rocksdb.external_sst_file.global_seqno";
    // Strata's own.
    pub const SMALLEST_KEY: &str = "strata.smallest.key";
    pub const LARGEST_KEY: &str = "strata.largest.key";
    pub const SMALLEST_SEQNO: &str = "strata.seqno.smallest";
    pub const LARGEST_SEQNO: &str = "strata.seqno.largest";
}

/// Decoded table properties (RocksDB's `rocksdb.*` names, and Strata's
/// own `strata.*` ones). The fields are the properties the engine uses;
/// [`all`](Self::all) keeps every property's raw bytes, the fields' too,
/// and `TableFile::display_property` shows one as a person reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableProperties {
    /// Bytes of the data blocks (`rocksdb.data.size`).
    pub data_size: u64,
    /// Bytes of the index block (`rocksdb.index.size`).
    pub index_size: u64,
    /// Bytes of the filter block (`rocksdb.filter.size`).
    pub filter_size: u64,
    /// Bytes of every key as written (`rocksdb.raw.key.size`).
    pub raw_key_size: u64,
    /// Bytes of every value as written (`rocksdb.raw.value.size`).
    pub raw_value_size: u64,
    /// Data blocks (`rocksdb.num.data.blocks`).
    pub num_data_blocks: u64,
    /// Entries: puts, deletions, merge operands and range tombstones, as
    /// RocksDB counts them (`rocksdb.num.entries`).
    pub num_entries: u64,
    /// Point deletions among them (`rocksdb.deleted.keys`).
    pub num_deletions: u64,
    /// Range tombstones (`rocksdb.num.range-deletions`).
    pub num_range_deletions: u64,
    /// Merge operands (`rocksdb.merge.operands`; Strata reads none).
    pub num_merge_operands: u64,
    /// The table's `format_version` as its properties record it.
    pub format_version: u64,
    /// Whether index keys are user keys, without sequence numbers.
    pub index_key_is_user_key: bool,
    /// Whether the index's block handles are delta-encoded.
    pub index_value_is_delta_encoded: bool,
    /// The compression name the writer recorded (`rocksdb.compression`).
    pub compression: String,
    /// The comparator's name (`leveldb.BytewiseComparator`).
    pub comparator: String,
    /// The filter policy's name, empty without a filter.
    pub filter_policy: String,
    /// The prefix extractor's name, empty without one.
    pub prefix_extractor: String,
    /// Whether the filter holds whole keys.
    pub whole_key_filtering: bool,
    /// Whether the filter holds key prefixes.
    pub prefix_filtering: bool,
    /// `rocksdb.external_sst_file.version`, if the file was written for ingestion.
    pub external_version: Option<u32>,
    /// The global sequence number recorded in the file
    /// (`rocksdb.external_sst_file.global_seqno`), if any.
    pub global_seqno: Option<u64>,
    /// Smallest internal key (Strata-written files only).
    pub smallest_key: Option<Vec<u8>>,
    /// Largest internal key (Strata-written files only).
    pub largest_key: Option<Vec<u8>>,
    /// Smallest sequence number (Strata-written files only).
    pub smallest_seqno: Option<u64>,
    /// Largest sequence number (Strata-written files only).
    pub largest_seqno: Option<u64>,
    /// Every property by name, raw bytes as stored.
    pub all: BTreeMap<String, Vec<u8>>,
}

/// How a property's raw value should be shown to a person.
pub fn display_value(name: &str, raw: &[u8]) -> String {
    use names::*;
    match name {
        BBT_INDEX_TYPE | EXTERNAL_VERSION if raw.len() == 4 => decode_fixed32(raw).to_string(),
        EXTERNAL_GLOBAL_SEQNO if raw.len() == 8 => decode_fixed64(raw).to_string(),
        SMALLEST_KEY | LARGEST_KEY => crate::util::hex::escape(raw),
        _ if is_varint_property(name) => match get_varint64(raw) {
            Some((v, n)) if n == raw.len() => v.to_string(),
            _ => crate::util::hex::escape(raw),
        },
        _ => crate::util::hex::escape(raw),
    }
}

fn is_varint_property(name: &str) -> bool {
    use names::*;
    matches!(
        name,
        DATA_SIZE
            | INDEX_SIZE
            | INDEX_PARTITIONS
            | TOP_LEVEL_INDEX_SIZE
            | INDEX_KEY_IS_USER_KEY
            | INDEX_VALUE_IS_DELTA_ENCODED
            | FILTER_SIZE
            | RAW_KEY_SIZE
            | RAW_VALUE_SIZE
            | NUM_DATA_BLOCKS
            | NUM_ENTRIES
            | NUM_FILTER_ENTRIES
            | DELETED_KEYS
            | MERGE_OPERANDS
            | NUM_RANGE_DELETIONS
            | FORMAT_VERSION
            | FIXED_KEY_LEN
            | COLUMN_FAMILY_ID
            | CREATION_TIME
            | OLDEST_KEY_TIME
            | FILE_CREATION_TIME
            | SMALLEST_SEQNO
            | LARGEST_SEQNO
    ) || name.starts_with("rocksdb.") && name.ends_with(".size") && name != "rocksdb.compression"
}

/// Collects properties for writing.
#[derive(Default)]
pub struct PropertiesBuilder {
    map: BTreeMap<String, Vec<u8>>,
}

impl PropertiesBuilder {
    pub fn u64(&mut self, name: &str, v: u64) {
        let mut b = Vec::new();
        put_varint64(&mut b, v);
        self.map.insert(name.to_string(), b);
    }
    pub fn bytes(&mut self, name: &str, v: &[u8]) {
        self.map.insert(name.to_string(), v.to_vec());
    }
    pub fn str(&mut self, name: &str, v: &str) {
        self.bytes(name, v.as_bytes());
    }
    /// The block, entries sorted by name (RocksDB requires the order).
    pub fn finish(&self) -> Vec<u8> {
        let mut b = BlockBuilder::new(1);
        for (k, v) in &self.map {
            b.add(k.as_bytes(), v);
        }
        b.finish().to_vec()
    }
}

impl TableProperties {
    /// Decodes a properties block. Malformed values of known properties are
    /// reported as errors (message only; the caller adds file and offset).
    pub fn decode(block: Vec<u8>) -> Result<TableProperties, String> {
        let block = Arc::new(Block::new(block)?);
        let mut it = BlockIter::new(block, BlockIterMode::BYTEWISE);
        let mut all = BTreeMap::new();
        it.seek_to_first();
        while it.valid() {
            let name = String::from_utf8_lossy(it.key()).into_owned();
            all.insert(name, it.value().to_vec());
            it.next();
        }
        if let Some(e) = it.error() {
            return Err(format!("properties block: {e}"));
        }
        let mut p = TableProperties::default();
        let num = |name: &str| -> Result<u64, String> {
            match all.get(name) {
                None => Ok(0),
                Some(raw) => match get_varint64(raw) {
                    Some((v, _)) => Ok(v),
                    None => Err(format!("property {name} is not a number")),
                },
            }
        };
        let text = |name: &str| {
            all.get(name)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default()
        };
        use names::*;
        p.data_size = num(DATA_SIZE)?;
        p.index_size = num(INDEX_SIZE)?;
        p.filter_size = num(FILTER_SIZE)?;
        p.raw_key_size = num(RAW_KEY_SIZE)?;
        p.raw_value_size = num(RAW_VALUE_SIZE)?;
        p.num_data_blocks = num(NUM_DATA_BLOCKS)?;
        p.num_entries = num(NUM_ENTRIES)?;
        p.num_deletions = num(DELETED_KEYS)?;
        p.num_range_deletions = num(NUM_RANGE_DELETIONS)?;
        p.num_merge_operands = num(MERGE_OPERANDS)?;
        p.format_version = num(FORMAT_VERSION)?;
        p.index_key_is_user_key = num(INDEX_KEY_IS_USER_KEY)? != 0;
        p.index_value_is_delta_encoded = num(INDEX_VALUE_IS_DELTA_ENCODED)? != 0;
        p.compression = text(COMPRESSION);
        p.comparator = text(COMPARATOR);
        p.filter_policy = text(FILTER_POLICY);
        p.prefix_extractor = text(PREFIX_EXTRACTOR);
        p.whole_key_filtering = all
            .get(BBT_WHOLE_KEY_FILTERING)
            .map(|v| v.as_slice() != b"0")
            .unwrap_or(true);
        p.prefix_filtering = all
            .get(BBT_PREFIX_FILTERING)
            .map(|v| v.as_slice() == b"1")
            .unwrap_or(false);
        if let Some(v) = all.get(EXTERNAL_VERSION) {
            if v.len() != 4 {
                return Err(format!(
                    "property {EXTERNAL_VERSION} has {} bytes, not 4",
                    v.len()
                ));
            }
            p.external_version = Some(decode_fixed32(v));
        }
        if let Some(v) = all.get(EXTERNAL_GLOBAL_SEQNO) {
            if v.len() != 8 {
                return Err(format!(
                    "property {EXTERNAL_GLOBAL_SEQNO} has {} bytes, not 8",
                    v.len()
                ));
            }
            p.global_seqno = Some(decode_fixed64(v));
        }
        p.smallest_key = all.get(SMALLEST_KEY).cloned();
        p.largest_key = all.get(LARGEST_KEY).cloned();
        if all.contains_key(SMALLEST_SEQNO) {
            p.smallest_seqno = Some(num(SMALLEST_SEQNO)?);
            p.largest_seqno = Some(num(LARGEST_SEQNO)?);
        }
        p.all = all;
        Ok(p)
    }
}
