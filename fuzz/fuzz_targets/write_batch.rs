#![no_main]
//! cargo fuzz run write_batch (body in fuzz/src/targets.rs)

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::targets::write_batch(data));
