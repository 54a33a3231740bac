//! A deterministic generator of the TPC-C `stock` table (TPC-C 4.3.3.1),
//! following `shared/datagen/tpcc_stock.py`: 100,000 rows per warehouse,
//! columns `s_i_id, s_w_id, s_quantity, s_dist_01..s_dist_10, s_ytd,
//! s_order_cnt, s_remote_cnt, s_data`, quantity uniform in 10..=100, ten
//! 24-character random alphanumeric district strings, `s_data` of 26 to 50
//! random alphanumerics with `ORIGINAL` placed in 10% of the rows, rows in
//! primary-key order or a seeded random order. The same arguments always
//! give the same bytes (a seeded `StdRng`; the bytes differ from the Python
//! script's, whose generator is Python's own, but the shape is the same).

use rand::seq::SliceRandom;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::io::Write;

/// Items per warehouse.
pub const ITEMS: u32 = 100_000;

/// The TPC-C schema of the stock table, with the secondary index on
/// `s_i_id` that the order-entry transactions use.
///
/// The one copy of this DDL in the repository: the benchmark driver, the
/// visualiser's browser test and the Python benchmark and tests read this
/// file too, so every W1/W5 figure and every test uses the same table.
pub const SCHEMA: &str = include_str!("tpcc_stock.sql");

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

fn astring(rng: &mut StdRng, out: &mut Vec<u8>, n: usize) {
    for _ in 0..n {
        out.push(ALNUM[rng.gen_range(0..ALNUM.len())]);
    }
}

/// Writes the stock rows of `warehouses` warehouses as CSV to `out`, in
/// primary-key order or (`random`) a seeded random order; returns the rows.
pub fn write_stock(
    out: &mut impl Write,
    warehouses: u32,
    random: bool,
    seed: u64,
) -> std::io::Result<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut keys: Vec<(u32, u32)> = (1..=warehouses)
        .flat_map(|w| (1..=ITEMS).map(move |i| (w, i)))
        .collect();
    if random {
        keys.shuffle(&mut StdRng::seed_from_u64(seed + 1));
    }
    let mut line = Vec::with_capacity(400);
    for &(w, i) in &keys {
        line.clear();
        write!(line, "{i},{w},{}", rng.gen_range(10..=100))?;
        for _ in 0..10 {
            line.push(b',');
            astring(&mut rng, &mut line, 24);
        }
        line.extend_from_slice(b",0,0,0,");
        let n = rng.gen_range(26..=50);
        let start = line.len();
        astring(&mut rng, &mut line, n);
        if rng.gen::<f64>() < 0.10 {
            let at = start + rng.gen_range(0..=n - 8);
            line[at..at + 8].copy_from_slice(b"ORIGINAL");
        }
        line.push(b'\n');
        out.write_all(&line)?;
    }
    Ok(keys.len() as u64)
}
