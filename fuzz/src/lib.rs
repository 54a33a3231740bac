//! Fuzz targets for Strata's decoders of untrusted bytes; see `targets.rs`.

pub mod targets;
