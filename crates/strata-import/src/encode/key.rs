//! Order-preserving key encoding: comparing two encoded keys as bytes gives
//! the SQL order of the values they encode.
//!
//! Layout of every table key: [`TABLE_SPACE`] (1 byte), the table id
//! (u32 big-endian), the index id (u16 big-endian; 0 is the primary key),
//! then the index's columns, each encoded by [`encode_value`]:
//! - a tag byte, `0x00` for NULL (so NULLs sort first) and `0x01` otherwise;
//! - integers, DATE and TIMESTAMP: the value with its sign bit flipped, big
//!   endian (8 bytes; DATE 4), so negatives come before positives;
//! - floats: the IEEE bits with the sign bit flipped for positives and every
//!   bit flipped for negatives (-inf < ... < 0 < ... < inf < NaN; -0 is
//!   encoded as 0, one key, as SQL compares them);
//! - DECIMAL: the scaled 128-bit integer, sign flipped, 16 bytes; the scale
//!   is the column's, so equal scales make this order by value;
//! - text and BYTEA: the bytes with each `0x00` written `0x00 0xFF`, then
//!   the terminator `0x00 0x01`, so a string sorts before its extensions
//!   and embedded zero bytes keep their order;
//! - BOOL: one byte, 0 or 1.
//!
//! Every encoding is self-delimiting, so a key of several columns compares
//! column by column. System keys (the catalog) start with [`SYSTEM_SPACE`],
//! below every table key.

use crate::schema::ColumnType;
use crate::value::{Value, ValueRef};

/// First byte of system keys (the catalog).
pub const SYSTEM_SPACE: u8 = 0x00;
/// First byte of every table key.
pub const TABLE_SPACE: u8 = 0x01;
/// Length of the table-and-index prefix of a table key.
pub const PREFIX_LEN: usize = 7;

const NULL_TAG: u8 = 0x00;
const VALUE_TAG: u8 = 0x01;

/// The prefix shared by every key of one index of one table.
pub fn index_prefix(table_id: u32, index_id: u16) -> [u8; PREFIX_LEN] {
    let mut p = [0u8; PREFIX_LEN];
    p[0] = TABLE_SPACE;
    p[1..5].copy_from_slice(&table_id.to_be_bytes());
    p[5..7].copy_from_slice(&index_id.to_be_bytes());
    p
}

/// The smallest key after every key starting with `prefix` (for range
/// ends); `None` when there is none (all `0xFF`).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut p = prefix.to_vec();
    while let Some(last) = p.pop() {
        if last < 0xFF {
            p.push(last + 1);
            return Some(p);
        }
    }
    None
}

/// Appends the encoding of `v` to `out` (the column's type is implied by
/// the value; a DECIMAL's scale is the column's).
pub fn encode_value(out: &mut Vec<u8>, v: &Value) {
    encode_ref(out, v.view());
}

/// [`encode_value`] of a borrowed value.
pub fn encode_ref(out: &mut Vec<u8>, v: ValueRef<'_>) {
    match v {
        ValueRef::Null => out.push(NULL_TAG),
        ValueRef::Int(i) | ValueRef::Timestamp(i) => {
            out.push(VALUE_TAG);
            out.extend_from_slice(&((i as u64) ^ (1 << 63)).to_be_bytes());
        }
        ValueRef::Date(d) => {
            out.push(VALUE_TAG);
            out.extend_from_slice(&((d as u32) ^ (1 << 31)).to_be_bytes());
        }
        ValueRef::Float(f) => {
            out.push(VALUE_TAG);
            // -0 and 0 are one key (a row value keeps -0's sign).
            let b = crate::value::canonical_float(f).to_bits();
            let k = if b >> 63 == 1 { !b } else { b ^ (1 << 63) };
            out.extend_from_slice(&k.to_be_bytes());
        }
        ValueRef::Decimal(d) => {
            out.push(VALUE_TAG);
            out.extend_from_slice(&((d as u128) ^ (1 << 127)).to_be_bytes());
        }
        ValueRef::Text(s) => {
            out.push(VALUE_TAG);
            escape_bytes(out, s.as_bytes());
        }
        ValueRef::Bytes(b) => {
            out.push(VALUE_TAG);
            escape_bytes(out, b);
        }
        ValueRef::Bool(b) => {
            out.push(VALUE_TAG);
            out.push(b as u8);
        }
    }
}

fn escape_bytes(out: &mut Vec<u8>, b: &[u8]) {
    for &x in b {
        out.push(x);
        if x == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Decodes one value of type `ty` from the front of `input`, advancing it.
pub fn decode_value(input: &mut &[u8], ty: &ColumnType) -> Result<Value, String> {
    let (&tag, rest) = input.split_first().ok_or("key ends early")?;
    *input = rest;
    if tag == NULL_TAG {
        return Ok(Value::Null);
    }
    if tag != VALUE_TAG {
        return Err(format!("bad value tag {tag:#x}"));
    }
    let mut take = |n: usize| -> Result<&[u8], String> {
        if input.len() < n {
            return Err("key ends early".into());
        }
        let (a, b) = input.split_at(n);
        *input = b;
        Ok(a)
    };
    Ok(match ty {
        ColumnType::SmallInt | ColumnType::Int | ColumnType::BigInt | ColumnType::Timestamp => {
            let raw = u64::from_be_bytes(take(8)?.try_into().map_err(|_| "short")?);
            let v = (raw ^ (1 << 63)) as i64;
            if *ty == ColumnType::Timestamp {
                Value::Timestamp(v)
            } else {
                Value::Int(v)
            }
        }
        ColumnType::Date => {
            let raw = u32::from_be_bytes(take(4)?.try_into().map_err(|_| "short")?);
            Value::Date((raw ^ (1 << 31)) as i32)
        }
        ColumnType::Double => {
            let k = u64::from_be_bytes(take(8)?.try_into().map_err(|_| "short")?);
            let b = if k >> 63 == 1 { k ^ (1 << 63) } else { !k };
            Value::Float(f64::from_bits(b))
        }
        ColumnType::Decimal { .. } => {
            let raw = u128::from_be_bytes(take(16)?.try_into().map_err(|_| "short")?);
            Value::Decimal((raw ^ (1 << 127)) as i128)
        }
        ColumnType::Bool => Value::Bool(take(1)?[0] != 0),
        ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text | ColumnType::Bytea => {
            let mut bytes = Vec::new();
            loop {
                let b = take(1)?[0];
                if b != 0 {
                    bytes.push(b);
                    continue;
                }
                match take(1)?[0] {
                    0xFF => bytes.push(0),
                    0x01 => break,
                    x => return Err(format!("bad escape 0x00 {x:#x}")),
                }
            }
            if *ty == ColumnType::Bytea {
                Value::Bytes(bytes)
            } else {
                Value::Text(String::from_utf8(bytes).map_err(|_| "text is not UTF-8")?)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_is_the_next_prefix() {
        assert_eq!(prefix_end(&[1, 2, 0xFF]), Some(vec![1, 3]));
        assert_eq!(prefix_end(&[0xFF, 0xFF]), None);
    }
}
