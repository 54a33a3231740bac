//! Fuzz targets for Strata's decoders of untrusted bytes (`targets.rs`)
//! and the import tool's parsers (`import_targets.rs`).

pub mod import_targets;
pub mod targets;
