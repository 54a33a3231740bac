//! CSV and TSV input: the [`dialect`] (how fields are delimited and quoted,
//! which string means NULL, whether there is a header) and the [`input`]
//! files (plain, gzip or zstd by extension, standard input, globs).

pub mod dialect;
pub mod input;
