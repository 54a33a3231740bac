//! How the `--memory` budget of one import is divided.
//!
//! Owns the split of the budget between the parts of the pipeline that
//! hold memory at the same time, so the whole import (not only the sort
//! buffers) stays within it:
//!
//! - **chunks in flight**: the reader's chunk, the chunk queue, one chunk
//!   per worker, the parsed-results queue and the chunks waiting to be
//!   taken in input order, each held as its raw bytes and then as encoded
//!   entries. There are at most `1 + 4 × threads` of them
//!   ([`Budget::chunks_in_flight`]), plus [`RECYCLED_CHUNKS`] parsed
//!   chunks' buffers waiting to be read into again, per index
//!   [`RECYCLED_BATCHES`] empty entry batches waiting to be filled again
//!   (`pool`; with in-memory runs the pool keeps more, up to a run's
//!   worth per index, out of the sort share: `pipeline`'s `sort_limit`),
//!   and the [`STREAM_BATCHES`] chunks' batches an index in key
//!   order has with its SST writer thread (`handoff`). The chunk size is
//!   chosen so they take at most a quarter of the budget, counting
//!   [`PARSED_EXPANSION`] times the raw bytes for each chunk in flight (raw
//!   bytes plus the entries made from them), once for each recycled
//!   buffer, `PARSED_EXPANSION - 1` times for each recycled or streamed
//!   set of entry batches, and the reader's [`READ_SLACK`] in every
//!   buffer.
//! - **writers**: per index, one open SST writer, whose filter hashes and
//!   index grow with the file: the file is cut when they reach
//!   [`Budget::writer_cap`] (`sink::writer_memory`), so that is a bound,
//!   and one spill-run write buffer ([`SPILL_WRITE_BUFFER`]).
//! - **sort buffers**: the rest, but never less than a quarter of the
//!   budget (with a budget too small for the fixed parts, the sort buffers
//!   keep a quarter and the fixed parts go over; budgets from a few MiB up
//!   are not affected). Each chunk's entries are charged at what their
//!   arena holds plus the sort's pair per entry (`batch::EntryBatch::charge`),
//!   so sorting a full buffer allocates nothing uncounted.
//!
//! The merge runs after the last chunk is taken, so it reads the spilled
//! runs through buffers that share the chunks' quarter between them
//! (`sort::IndexSorter::with_merge_memory`), while the last buffer of each
//! index stays inside the sort share and the writers inside theirs.

use crate::handoff::STREAM_BATCHES;
use crate::pool::RECYCLED_BATCHES;

/// Bytes a chunk holds at its peak over its raw bytes: the raw bytes plus
/// the entries made from them (estimated from the entry sizes of the TPC-C
/// stock table with its two indexes: about 1.6 for the entries; rounded
/// up).
pub const PARSED_EXPANSION: usize = 3;

/// Parsed chunks' buffers held for the reader to reuse: up to two in the
/// queue back to it and one in its splitter (`chunk::Splitter::recycle`).
pub const RECYCLED_CHUNKS: usize = 3;

/// Bytes a chunk buffer holds beyond the chunk size (the reader reads up
/// to 64 KiB past its target, `chunk::Splitter`).
pub const READ_SLACK: usize = 64 << 10;

/// Write buffer of a spill run.
pub const SPILL_WRITE_BUFFER: usize = 256 << 10;

/// The smallest writer share (smaller cuts files too often).
const MIN_WRITER: usize = 256 << 10;

/// The smallest chunk the budget picks (smaller chunks cost more per row
/// than they save).
const MIN_CHUNK: usize = 16 << 10;

/// The default budget of an import: a quarter of the machine's memory
/// (256 MiB where `/proc/meminfo` cannot say).
pub fn default_memory() -> usize {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<usize>().ok())
    });
    total.map_or(256 << 20, |kb| kb * 1024 / 4)
}

/// One import's division of its memory budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The whole budget.
    pub total: usize,
    /// Input bytes per chunk.
    pub chunk_size: usize,
    /// Depth of the chunk and result queues.
    pub queue_depth: usize,
    /// Bytes reserved for chunks in flight.
    pub chunks: usize,
    /// Bytes reserved for SST writers and spill buffers (all indexes).
    pub writers: usize,
    /// Bytes one index's open SST writer may hold (its file is cut then).
    pub writer_cap: usize,
    /// Bytes for the sort buffers of all indexes together.
    pub sort: usize,
    /// Bytes for the filter of keys written by earlier units
    /// ([`crate::written`]), taken from the sort buffers' share: a direct
    /// or batch import into a table that held no rows. 0 otherwise.
    pub written: usize,
}

impl Budget {
    /// Divides `total` for `threads` workers and `indexes` indexes;
    /// `max_chunk` and `target_file` are the options' chunk and file sizes.
    pub fn new(
        total: usize,
        threads: usize,
        indexes: usize,
        max_chunk: usize,
        target_file: u64,
    ) -> Budget {
        let threads = threads.max(1);
        let queue_depth = threads;
        let in_flight = Self::chunks_in_flight(threads);
        let copies = in_flight * PARSED_EXPANSION
            + RECYCLED_CHUNKS
            + (RECYCLED_BATCHES + STREAM_BATCHES) * (PARSED_EXPANSION - 1);
        let slack = (in_flight + RECYCLED_CHUNKS) * READ_SLACK;
        let fit = (total / 4).saturating_sub(slack) / copies;
        let chunk_size = max_chunk.min(fit.max(MIN_CHUNK)).max(1);
        let chunks = copies * chunk_size + slack;
        let indexes = indexes.max(1);
        let writer_cap = (total / 8 / indexes)
            .min((target_file / 4).min(usize::MAX as u64) as usize)
            .max(MIN_WRITER);
        let writers = indexes * (writer_cap + SPILL_WRITE_BUFFER);
        let sort = total.saturating_sub(chunks + writers).max(total / 4);
        Budget {
            total,
            chunk_size,
            queue_depth,
            chunks,
            writers,
            writer_cap,
            sort,
            written: 0,
        }
    }

    /// Sets aside a 32nd of the budget, taken from the sort buffers, for
    /// the filter of keys written by earlier units.
    pub fn with_written_filter(mut self) -> Budget {
        self.written = self.total / 32;
        self.sort = self.sort.saturating_sub(self.written).max(self.total / 4);
        self
    }

    /// Chunks that can be held at once: the reader's, a full chunk queue,
    /// one per worker, a full result queue, and as many waiting for their
    /// turn in input order as there are workers.
    pub fn chunks_in_flight(threads: usize) -> usize {
        1 + 4 * threads
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    #[test]
    fn the_parts_fit_in_the_budget() {
        for total in [16 << 20, 64 << 20, 256 << 20, 4 << 30] {
            for threads in [1, 2, 8] {
                let b = Budget::new(total, threads, 2, 4 << 20, 64 << 20);
                assert!(b.chunks + b.writers + b.sort <= total, "{b:?}");
                assert!(b.chunks <= total / 4, "{b:?}");
                assert!(b.sort >= total / 4, "{b:?}");
                assert!(b.writers <= total / 4, "{b:?}");
                assert_eq!(b.writers, 2 * (b.writer_cap + SPILL_WRITE_BUFFER));
            }
        }
        // Big budgets keep the options' chunk size.
        assert_eq!(
            Budget::new(4 << 30, 2, 2, 4 << 20, 64 << 20).chunk_size,
            4 << 20
        );
        // Tiny budgets (tests) still sort in a quarter of the budget.
        let b = Budget::new(200, 2, 3, 16, 64 << 20);
        assert_eq!((b.chunk_size, b.sort), (16, 50));
    }
}
