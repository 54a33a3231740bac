//! Compaction: choosing what to compact (`picker`), and deciding which
//! entries survive (`iter`), and where Lbase is cut (`lbase_cuts`). The
//! database runs the jobs (`db/compact.rs`).

pub mod iter;
pub mod lbase_cuts;
pub mod picker;

#[cfg(test)]
mod lbase_cuts_data;
#[cfg(test)]
mod picker_data;
