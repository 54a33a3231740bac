#![no_main]
//! cargo fuzz run block (body in fuzz/src/targets.rs)

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::targets::block(data));
