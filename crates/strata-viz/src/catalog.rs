//! Table and index names for the key axis: where the import catalog
//! (`strata-import`, keys under `0x00 "catalog/"`) knows a table, each of
//! its indexes owns the keys starting with its prefix (`0x01`, table id,
//! index id), and the page labels that stretch of the axis
//! `table` (the primary index) or `table.index`.
//!
//! Invariants:
//! - the catalog is read through a read-only open (`Db::open_read_only`
//!   creates, writes and locks nothing), and only when the tree holds keys
//!   of the system or table space, so a database that was never imported
//!   into is never opened;
//! - a catalog that cannot be read is a note on the page, never a failure:
//!   the bands are a label, the history is drawn without them.

use std::path::Path;
use strata_import::catalog::CatalogEntry;
use strata_import::codec::TableCodec;
use strata_import::encode::key::{index_prefix, prefix_end, PREFIX_LEN, SYSTEM_SPACE, TABLE_SPACE};

/// One index's stretch of the key space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    /// `table` for the primary index, `table.index` for a secondary one.
    pub label: String,
    /// The index's key prefix (its first key is at or after it).
    pub start: Vec<u8>,
    /// The first key after the index (`None`: the end of the key space).
    pub end: Option<Vec<u8>>,
}

/// Whether any of `keys` (sorted file bounds) is a catalog or table key.
pub fn has_table_keys(keys: &[Vec<u8>]) -> bool {
    keys.iter()
        .any(|k| matches!(k.first(), Some(&b) if b == SYSTEM_SPACE || b == TABLE_SPACE))
}

/// Whether `k` is one of the import's system keys (its catalog's).
pub fn is_system_key(k: &[u8]) -> bool {
    k.first() == Some(&SYSTEM_SPACE)
}

/// The tables the catalog of `dir` holds (read through a read-only open).
pub fn read(dir: &Path) -> Result<Vec<CatalogEntry>, String> {
    let db = strata::Db::open_read_only(dir, strata::Options::default())
        .map_err(|e| format!("opening read-only to read the catalog: {e}"))?;
    strata_import::catalog::list(&db).map_err(|e| format!("reading the catalog: {e}"))
}

/// The bands of every index the catalog of `dir` knows, in key order.
pub fn bands(dir: &Path) -> Result<Vec<Band>, String> {
    Ok(bands_of(&read(dir)?))
}

/// Each of `keys` decoded under the catalog's `entries`: the index's
/// column values as text, e.g. `stock (1, 42)` or `stock.stock_i_id (42)`
/// (a secondary entry's primary-key tail is left out); `""` for a key of
/// no known index (the catalog's own keys, raw keys).
pub fn decode_keys(entries: &[CatalogEntry], keys: &[Vec<u8>]) -> Vec<String> {
    let codecs: Vec<TableCodec> = entries
        .iter()
        .map(|e| TableCodec::new(e.table.clone(), e.id))
        .collect();
    keys.iter()
        .map(|k| {
            if k.len() < PREFIX_LEN || k[0] != TABLE_SPACE {
                return String::new();
            }
            let id = u32::from_be_bytes([k[1], k[2], k[3], k[4]]);
            let ix = usize::from(u16::from_be_bytes([k[5], k[6]]));
            match codecs.iter().find(|c| c.table_id == id) {
                Some(c) if ix < c.table.indexes.len() => {
                    let name = if ix == 0 {
                        c.table.name.clone()
                    } else {
                        format!("{}.{}", c.table.name, c.table.indexes[ix].name)
                    };
                    format!("{name} {}", c.describe_key(ix, k))
                }
                _ => String::new(),
            }
        })
        .collect()
}

/// The bands of every index of the catalog's `entries`, in key order.
pub fn bands_of(entries: &[CatalogEntry]) -> Vec<Band> {
    let catalog = strata_import::catalog::key("");
    let mut out = vec![Band {
        label: "catalog".into(),
        end: prefix_end(&catalog),
        start: catalog,
    }];
    for e in entries {
        for (i, ix) in e.table.indexes.iter().enumerate() {
            let Ok(id) = u16::try_from(i) else { continue };
            let start = index_prefix(e.id, id).to_vec();
            let end = prefix_end(&start);
            let label = if i == 0 {
                e.table.name.clone()
            } else {
                format!("{}.{}", e.table.name, ix.name)
            };
            out.push(Band { label, start, end });
        }
    }
    out.sort_by(|a, b| a.start.cmp(&b.start));
    out
}

/// Each band as the ranks of the first and last of `keys` (the sorted
/// file bounds that place keys on the axis) inside it; bands holding no
/// bound are left out.
pub fn ranks(bands: &[Band], keys: &[Vec<u8>]) -> Vec<(String, usize, usize)> {
    bands
        .iter()
        .filter_map(|b| {
            let lo = keys.partition_point(|k| k < &b.start);
            let hi = match &b.end {
                Some(end) => keys.partition_point(|k| k < end),
                None => keys.len(),
            };
            (hi > lo).then(|| (b.label.clone(), lo, hi - 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    #[test]
    fn ranks_cover_the_bounds_inside_each_band() {
        let band = |label: &str, id: u32, ix: u16| {
            let start = index_prefix(id, ix).to_vec();
            Band {
                label: label.into(),
                end: prefix_end(&start),
                start,
            }
        };
        let key = |id: u32, ix: u16, tail: &[u8]| {
            let mut k = index_prefix(id, ix).to_vec();
            k.extend_from_slice(tail);
            k
        };
        let mut keys = vec![
            b"\x00catalog/stock".to_vec(),
            key(1, 0, b"a"),
            key(1, 0, b"z"),
            key(1, 1, b"m"),
            key(2, 0, b"q"),
            b"\x7fplain".to_vec(),
        ];
        keys.sort();
        let bands = [
            band("stock", 1, 0),
            band("stock.by_item", 1, 1),
            band("empty", 1, 2),
            band("item", 2, 0),
        ];
        assert_eq!(
            ranks(&bands, &keys),
            [
                ("stock".to_string(), 1, 2),
                ("stock.by_item".to_string(), 3, 3),
                ("item".to_string(), 4, 4),
            ]
        );
        assert!(has_table_keys(&keys));
        assert!(!has_table_keys(&[b"abc".to_vec()]));
    }
}
