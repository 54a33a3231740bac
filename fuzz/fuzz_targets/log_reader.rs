#![no_main]
//! cargo fuzz run log_reader (body in fuzz/src/targets.rs)

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::targets::log_reader(data));
