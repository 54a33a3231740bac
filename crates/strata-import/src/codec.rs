//! One table's rows to key-value entries and back.
//!
//! Owns [`TableCodec`]: for a row, the primary entry (key: primary-key
//! columns; value: the other columns, `encode::row`) and one entry per
//! secondary index. A non-unique index entry's key is the indexed columns
//! followed by the primary-key columns (so equal indexed values stay
//! distinct) and its value is empty; a unique index entry's key is the
//! indexed columns alone and its value is the encoded primary key, so a
//! second row with the same indexed values is a duplicate key. SQL lets a
//! UNIQUE column hold many NULLs, so a unique entry with a NULL in it also
//! carries the primary key in its key (and still in its value).

use crate::encode::{key, row};
use crate::schema::Table;
use crate::value::{Value, ValueRef};

/// The key-value encoder and decoder of one table.
pub struct TableCodec {
    /// The definition.
    pub table: Table,
    /// The id in every key.
    pub table_id: u32,
    value_cols: Vec<usize>,
    prefixes: Vec<[u8; key::PREFIX_LEN]>,
}

impl TableCodec {
    /// The codec of `table` stored under `table_id`.
    pub fn new(table: Table, table_id: u32) -> TableCodec {
        let value_cols = row::value_columns(&table);
        let prefixes = (0..table.indexes.len())
            .map(|i| key::index_prefix(table_id, i as u16))
            .collect();
        TableCodec {
            table,
            table_id,
            value_cols,
            prefixes,
        }
    }

    /// The key prefix of index `index` (0: primary).
    pub fn prefix(&self, index: usize) -> &[u8] {
        &self.prefixes[index]
    }

    /// The encoded primary-key columns of `row` (no prefix).
    pub fn pk_bytes(&self, row: &[Value]) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        for &c in &self.table.primary().columns {
            key::encode_value(&mut out, &row[c]);
        }
        out
    }

    /// [`Self::pk_bytes`] into `out` (cleared first), reusing its
    /// allocation.
    pub fn pk_bytes_into(&self, row: &[Value], out: &mut Vec<u8>) {
        out.clear();
        for &c in &self.table.primary().columns {
            key::encode_value(out, &row[c]);
        }
    }

    /// Appends `row`'s entry for `index` to `k` and `v` (both cleared
    /// first); `pk` is [`Self::pk_bytes`] of the row.
    pub fn entry(&self, index: usize, row: &[Value], pk: &[u8], k: &mut Vec<u8>, v: &mut Vec<u8>) {
        k.clear();
        let klen = self.entry_to(index, |c| row[c].view(), pk, k);
        v.clear();
        v.extend_from_slice(&k[klen..]);
        k.truncate(klen);
    }

    /// [`Self::pk_bytes_into`] of a row given column by column (`cell(c)`:
    /// column `c`'s value).
    pub fn pk_bytes_with<'a>(&self, cell: impl Fn(usize) -> ValueRef<'a>, out: &mut Vec<u8>) {
        out.clear();
        for &c in &self.table.primary().columns {
            key::encode_ref(out, cell(c));
        }
    }

    /// Appends the entry of a row (given column by column, `cell(c)`) for
    /// `index` to `out`: its key, then its value; returns the key's
    /// length. `pk` is the row's [`Self::pk_bytes_with`]. The parser
    /// encodes this way straight into its batches, with no copy of the
    /// row's text.
    pub fn entry_to<'a>(
        &self,
        index: usize,
        cell: impl Fn(usize) -> ValueRef<'a>,
        pk: &[u8],
        out: &mut Vec<u8>,
    ) -> usize {
        let start = out.len();
        out.extend_from_slice(&self.prefixes[index]);
        if index == 0 {
            out.extend_from_slice(pk);
            let klen = out.len() - start;
            row::encode_with(out, &self.value_cols, cell);
            return klen;
        }
        let ix = &self.table.indexes[index];
        let mut has_null = false;
        for &c in &ix.columns {
            let v = cell(c);
            has_null |= v == ValueRef::Null;
            key::encode_ref(out, v);
        }
        if ix.unique {
            if has_null {
                out.extend_from_slice(pk);
            }
            let klen = out.len() - start;
            out.extend_from_slice(pk);
            klen
        } else {
            out.extend_from_slice(pk);
            out.len() - start
        }
    }

    /// The key of the primary entry whose primary-key columns are `values`.
    pub fn primary_key(&self, values: &[Value]) -> Vec<u8> {
        let mut k = self.prefixes[0].to_vec();
        for v in values {
            key::encode_value(&mut k, v);
        }
        k
    }

    /// The prefix of `index` followed by the leading indexed `values`.
    pub fn index_key_prefix(&self, index: usize, values: &[Value]) -> Vec<u8> {
        let mut k = self.prefixes[index].to_vec();
        for v in values {
            key::encode_value(&mut k, v);
        }
        k
    }

    /// The row stored under a primary entry.
    pub fn decode_primary(&self, k: &[u8], v: &[u8]) -> Result<Vec<Value>, String> {
        let mut row = vec![Value::Null; self.table.columns.len()];
        let mut rest = k
            .strip_prefix(&self.prefixes[0][..])
            .ok_or("key is not in this table's primary index")?;
        for &c in &self.table.primary().columns {
            row[c] = key::decode_value(&mut rest, &self.table.columns[c].ty)?;
        }
        if !rest.is_empty() {
            return Err("bytes after the primary key".into());
        }
        row::decode(v, &self.table, &self.value_cols, &mut row)?;
        Ok(row)
    }

    /// The primary key (with the primary prefix) a secondary entry points at.
    pub fn primary_of_entry(&self, index: usize, k: &[u8], v: &[u8]) -> Result<Vec<u8>, String> {
        let ix = &self.table.indexes[index];
        let mut pk = self.prefixes[0].to_vec();
        if ix.unique {
            pk.extend_from_slice(v);
            return Ok(pk);
        }
        let mut rest = k
            .strip_prefix(&self.prefixes[index][..])
            .ok_or("key is not in this index")?;
        for &c in &ix.columns {
            key::decode_value(&mut rest, &self.table.columns[c].ty)?;
        }
        pk.extend_from_slice(rest);
        Ok(pk)
    }

    /// The values of `index`'s columns in an entry's key (for messages).
    pub fn describe_key(&self, index: usize, k: &[u8]) -> String {
        let ix = &self.table.indexes[index];
        let Some(mut rest) = k.strip_prefix(&self.prefixes[index][..]) else {
            return format!("{k:02x?}");
        };
        let mut parts = Vec::new();
        for &c in &ix.columns {
            let ty = &self.table.columns[c].ty;
            match key::decode_value(&mut rest, ty) {
                Ok(Value::Null) => parts.push("NULL".to_string()),
                Ok(v) => parts.push(crate::value::format(ty, &v)),
                Err(_) => return format!("{k:02x?}"),
            }
        }
        format!("({})", parts.join(", "))
    }
}
