//! Byte encodings of table data: [`key`] (order-preserving index keys) and
//! [`row`] (compact primary-row values). `docs/formats.md` describes both.

pub mod key;
pub mod row;
