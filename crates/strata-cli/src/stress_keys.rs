//! The keys and values of the crash-test workload, shared by the `stress`
//! tool that writes them (`stress.rs`, `crash_cmd.rs`) and by
//! `tests/crash.rs`, which includes this file with `#[path]` to check what
//! survived a kill. Both sides must derive the same bytes from a key
//! number, so the scheme lives here once. Depends on `std` only (the test
//! compiles it outside the binary crate).

/// The 50 keys ingested in `round` (at stress key `near`): odd rounds sit
/// among the stress keys just written (overlapping the memtable), even
/// rounds in their own key range.
pub fn ingest_round(round: u64, near: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..50u64)
        .map(|j| {
            let k = if round % 2 == 1 {
                format!(
                    "stress-{:012}-ingest-{round}-{j:02}",
                    near.saturating_sub(40) + j % 40
                )
            } else {
                format!("zz-ingest-{round:08}-{j:02}")
            };
            (k.into_bytes(), format!("ingested-{round}-{j}").into_bytes())
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

/// The key of stress write number `i`.
pub fn stress_key(i: u64) -> Vec<u8> {
    format!("stress-{i:012}").into_bytes()
}

/// The value of stress write number `i` (its length varies with `i`, so
/// blocks and memtables see values of several sizes).
pub fn stress_value(i: u64) -> Vec<u8> {
    format!("value-{i}-")
        .repeat(1 + (i % 13) as usize)
        .into_bytes()
}
