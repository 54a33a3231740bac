//! CSV and TSV input: the [`dialect`] (how fields are delimited and quoted,
//! which string means NULL, whether there is a header) and the [`input`]
//! files (plain, gzip or zstd by extension, standard input, globs), and
//! the [`records`] of one chunk in memory.

pub mod dialect;
pub mod input;
pub mod records;
