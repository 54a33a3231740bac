#![no_main]
//! cargo fuzz run version_edit (body in fuzz/src/targets.rs)

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::targets::version_edit(data));
