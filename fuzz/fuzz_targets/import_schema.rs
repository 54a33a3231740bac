#![no_main]
//! cargo fuzz run import_schema (body in fuzz/src/import_targets.rs)

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::import_targets::import_schema(data));
