//! Compaction: choosing what to compact (`picker`), and deciding which
//! entries survive (`iter`). The database runs the jobs (`db/compact.rs`).

pub mod iter;
pub mod picker;
