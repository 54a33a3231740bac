//! Compact row encoding: the value stored under a primary key.
//!
//! A row value holds the columns that are not in the primary key (those are
//! in the key already), in column order: a varint count of the encoded
//! columns, a NULL bitmap (`ceil(count / 8)` bytes, bit `i % 8` of byte
//! `i / 8` set when column `i` is NULL), then each non-NULL value:
//! integers, DATE and TIMESTAMP as zigzag varints, DECIMAL as a zigzag
//! varint of its scaled 128-bit integer, floats as 8 little-endian bytes,
//! BOOL as one byte, text and BYTEA as a varint length and the bytes.
//! Invariant: `decode(encode(row)) == row` for the table the row was
//! encoded with; the count lets a reader detect a row from another schema.

use crate::schema::{ColumnType, Table};
use crate::value::{Value, ValueRef};

/// The non-primary-key columns of `table`, in column order.
pub fn value_columns(table: &Table) -> Vec<usize> {
    let pk = &table.primary().columns;
    (0..table.columns.len())
        .filter(|c| !pk.contains(c))
        .collect()
}

/// Encodes the columns `cols` of `row` into `out`.
pub fn encode(out: &mut Vec<u8>, row: &[Value], cols: &[usize]) {
    encode_with(out, cols, |c| row[c].view());
}

/// [`encode`] of a row given column by column (`cell(c)`: column `c`'s
/// value).
pub fn encode_with<'a>(out: &mut Vec<u8>, cols: &[usize], cell: impl Fn(usize) -> ValueRef<'a>) {
    put_varint(out, cols.len() as u128);
    let bitmap_at = out.len();
    out.resize(bitmap_at + cols.len().div_ceil(8), 0);
    for (i, &c) in cols.iter().enumerate() {
        match cell(c) {
            ValueRef::Null => out[bitmap_at + i / 8] |= 1 << (i % 8),
            ValueRef::Int(v) | ValueRef::Timestamp(v) => put_varint(out, zigzag(v as i128)),
            ValueRef::Date(v) => put_varint(out, zigzag(v as i128)),
            ValueRef::Decimal(v) => put_varint(out, zigzag(v)),
            ValueRef::Float(f) => out.extend_from_slice(&f.to_le_bytes()),
            ValueRef::Bool(b) => out.push(b as u8),
            ValueRef::Text(s) => {
                put_varint(out, s.len() as u128);
                out.extend_from_slice(s.as_bytes());
            }
            ValueRef::Bytes(b) => {
                put_varint(out, b.len() as u128);
                out.extend_from_slice(b);
            }
        }
    }
}

/// Decodes a row value of `table` into `row` (which has one slot per
/// column; the primary-key slots are left as they are).
pub fn decode(
    mut input: &[u8],
    table: &Table,
    cols: &[usize],
    row: &mut [Value],
) -> Result<(), String> {
    let n = get_varint(&mut input)? as usize;
    if n != cols.len() {
        return Err(format!(
            "row holds {n} columns, table {} has {} outside its primary key",
            table.name,
            cols.len()
        ));
    }
    let nb = n.div_ceil(8);
    if input.len() < nb {
        return Err("row ends in its NULL bitmap".into());
    }
    let (bitmap, mut rest) = input.split_at(nb);
    for (i, &c) in cols.iter().enumerate() {
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            row[c] = Value::Null;
            continue;
        }
        row[c] = match &table.columns[c].ty {
            ColumnType::SmallInt | ColumnType::Int | ColumnType::BigInt => {
                Value::Int(unzigzag(get_varint(&mut rest)?) as i64)
            }
            ColumnType::Timestamp => Value::Timestamp(unzigzag(get_varint(&mut rest)?) as i64),
            ColumnType::Date => Value::Date(unzigzag(get_varint(&mut rest)?) as i32),
            ColumnType::Decimal { .. } => Value::Decimal(unzigzag(get_varint(&mut rest)?)),
            ColumnType::Double => {
                let b = take(&mut rest, 8)?;
                Value::Float(f64::from_le_bytes(b.try_into().map_err(|_| "short float")?))
            }
            ColumnType::Bool => Value::Bool(take(&mut rest, 1)?[0] != 0),
            ty => {
                let len = get_varint(&mut rest)? as usize;
                let b = take(&mut rest, len)?.to_vec();
                if *ty == ColumnType::Bytea {
                    Value::Bytes(b)
                } else {
                    Value::Text(String::from_utf8(b).map_err(|_| "text is not UTF-8")?)
                }
            }
        };
    }
    if !rest.is_empty() {
        return Err(format!("{} bytes after the last column", rest.len()));
    }
    Ok(())
}

fn take<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if input.len() < n {
        return Err("row ends early".into());
    }
    let (a, b) = input.split_at(n);
    *input = b;
    Ok(a)
}

fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

fn unzigzag(v: u128) -> i128 {
    ((v >> 1) as i128) ^ -((v & 1) as i128)
}

#[inline(always)]
pub(crate) fn put_varint(out: &mut Vec<u8>, v: u128) {
    // One byte inline (text lengths under 128, small counts), up to 63
    // bits without 128-bit shifts: this runs for every column of every
    // row.
    if v < 0x80 {
        out.push(v as u8);
    } else {
        put_long_varint(out, v);
    }
}

/// [`put_varint`] of a value of 128 or more.
fn put_long_varint(out: &mut Vec<u8>, mut v: u128) {
    if let Ok(mut w) = u64::try_from(v) {
        while w >= 0x80 {
            out.push((w as u8) | 0x80);
            w >>= 7;
        }
        out.push(w as u8);
        return;
    }
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes a varint from the front of `input` and advances past it.
/// Values of up to 63 bits (every length, file and line number, most
/// integers in practice) take a fast path without 128-bit shifts: the
/// four varints of a sorted run's entry were most of the import merge's
/// decoding.
#[inline]
pub(crate) fn get_varint(input: &mut &[u8]) -> Result<u128, String> {
    let mut v = 0u64;
    for (i, &b) in input.iter().take(9).enumerate() {
        v |= u64::from(b & 0x7F) << (7 * i);
        if b < 0x80 {
            *input = &input[i + 1..];
            return Ok(u128::from(v));
        }
    }
    get_long_varint(input)
}

/// [`get_varint`] of a value wider than 63 bits, or one that is cut
/// short or too long (its errors).
fn get_long_varint(input: &mut &[u8]) -> Result<u128, String> {
    let mut v: u128 = 0;
    for shift in (0..133).step_by(7) {
        let (&b, rest) = input.split_first().ok_or("varint ends early")?;
        *input = rest;
        v |= ((b & 0x7F) as u128) << shift;
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err("varint too long".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_on_both_paths() {
        // 63 bits and under take the fast path, wider values the long one;
        // a varint cut short is an error on either.
        for v in [
            0u128,
            1,
            127,
            128,
            300,
            (1 << 56) - 1,
            1 << 62,
            (1 << 63) - 1,
            1 << 63,
            u128::MAX,
        ] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            b.push(0xAB);
            let mut rest = b.as_slice();
            assert_eq!(get_varint(&mut rest).unwrap(), v);
            assert_eq!(rest, &[0xAB]);
            let cut = &b[..b.len() - 2];
            assert!(get_varint(&mut &cut[..]).is_err(), "{v}: cut short");
        }
    }

    #[test]
    fn zigzag_round_trips_extremes() {
        for v in [0, -1, 1, i128::MIN, i128::MAX, i64::MIN as i128] {
            assert_eq!(unzigzag(zigzag(v)), v);
            let mut b = Vec::new();
            put_varint(&mut b, zigzag(v));
            assert_eq!(unzigzag(get_varint(&mut b.as_slice()).unwrap()), v);
        }
    }
}
