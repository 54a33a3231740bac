//! `strata-import`: CSV and TSV files into Strata tables, all or nothing.
//!
//! A table is defined in SQL DDL ([`schema`]), its rows are encoded into
//! order-preserving keys and compact values ([`encode`], [`codec`]), and an
//! import ([`pipeline::import`]) parses the input on all cores, sorts each
//! index externally under one memory budget, writes SSTs and ingests every
//! file of every index with the table's [`catalog`] entry in one atomic
//! ingestion. [`table`] reads tables back (get, scan, count), and
//! [`consistency`] checks that every index holds one entry per row. It uses only
//! the public API of the `strata` crate. A table built elsewhere (Apache
//! Spark, another machine) arrives as a [`bundle`]: its SSTs and a manifest,
//! checked whole and ingested in one step. `docs/import.md` describes the
//! pipeline, `docs/formats.md` the encodings.

pub mod batch;
pub mod budget;
pub mod bundle;
pub mod catalog;
pub mod chunk;
pub mod codec;
pub mod consistency;
pub mod csv;
pub mod encode;
pub mod error;
pub mod handoff;
pub mod parse;
pub mod pipeline;
pub mod pool;
pub mod resolve;
pub mod schema;
pub mod sink;
pub mod sort;
pub mod table;
pub mod value;
pub mod written;

pub use error::{Error, Result, RowSource};
pub use pipeline::{import, ImportOptions, Mode, OnDuplicate, Summary};
pub use schema::Schema;
