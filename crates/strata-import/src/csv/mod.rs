//! CSV and TSV input: the [`dialect`] (how fields are delimited and quoted,
//! which string means NULL, whether there is a header) and the [`input`]
//! files (plain, gzip or zstd by extension, standard input, globs), and
//! the [`records`] of one chunk in memory, and the backslash escapes of
//! PostgreSQL's text format that TSV fields carry ([`text_escapes`]).

pub mod dialect;
pub mod input;
pub mod records;
pub mod text_escapes;
