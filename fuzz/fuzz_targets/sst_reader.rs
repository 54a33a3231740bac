#![no_main]
//! cargo fuzz run sst_reader (body in fuzz/src/targets.rs)

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::targets::sst_reader(data));
