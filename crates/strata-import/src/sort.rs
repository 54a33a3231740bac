//! External sort of one index's entries, with in-order detection.
//!
//! Owns an [`IndexSorter`]: the entries of one index arrive chunk by chunk
//! in input order. While every key so far is strictly greater than the one
//! before (a dump in primary-key order), the sorter is *in order*: its
//! buffer needs no sort, and when memory runs short it is written straight
//! to the output SSTs (no spill). Once a key arrives out of order, buffers
//! are sorted and spilled as runs to the temporary directory instead; if
//! SSTs were already streamed, they become the first run (read back with
//! `strata::sstable::SstReader`, their rows' sources from a side file).
//! [`IndexSorter::finish`] k-way merges the runs and the last buffer into
//! the output. Equal keys anywhere (in a buffer, across runs, at the join
//! of two chunks) are a duplicate, reported with both rows' sources; ties
//! are ordered by source (input order: file, then line), so the earlier
//! row is named first. With `keep_dups` the merge instead hands every group
//! of equal keys, in input order, to the caller, which picks the entry to
//! write ([`Keep`]): that is how `--on-duplicate ignore|replace` decide
//! deterministically, whatever the chunking, threads or spilled runs.
//!
//! Run file format: per entry `varint klen, key, varint (vlen << 1 |
//! delete), value, varint file, varint line`, in key order. A stream's
//! side file of sources: groups of `varint n, varint file, varint first
//! line`, `n` entries on consecutive lines each, in the stream's order.

use crate::batch::EntryBatch;
use crate::encode::row::{get_varint, put_varint};
use crate::error::{Error, Result};
use crate::handoff::{Lend, StreamWriter};
use crate::parse::{Entry, EntryRef, Src};
use crate::pool::BatchPool;
use crate::sink::{Output, RollingSink, SstFile};
use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A duplicate found while sorting: the key and both rows.
#[derive(Debug)]
pub struct Dup {
    /// The key.
    pub key: Vec<u8>,
    /// The earlier row.
    pub first: Src,
    /// The later row.
    pub second: Src,
}

/// What the merge writes for one group of equal keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// A put of the group's entry at this index.
    Put(usize),
    /// A deletion of the key.
    Delete,
    /// Nothing.
    Nothing,
}

/// Why sorting stopped.
pub enum SortError {
    /// Two entries with one key.
    Dup(Dup),
    /// Anything else.
    Other(Error),
}

impl From<Error> for SortError {
    fn from(e: Error) -> SortError {
        SortError::Other(e)
    }
}

impl From<strata::Error> for SortError {
    fn from(e: strata::Error) -> SortError {
        SortError::Other(Error::Db(e))
    }
}

/// The external sort of one index (see the module documentation).
pub struct IndexSorter {
    dir: PathBuf,
    name: String,
    target_file: u64,
    /// Chunks' batches, in input order.
    buf: Vec<EntryBatch>,
    /// Bytes charged to the memory budget by the buffer.
    pub buf_bytes: usize,
    in_order: bool,
    /// The first key pushed while in order (the streamed run's smallest).
    first: Option<Vec<u8>>,
    last: Option<(Vec<u8>, Src)>,
    /// The output while in order (on `stream`'s thread while it runs).
    sink: RollingSink,
    /// The thread writing the in-order stream (started by its first
    /// spill, stopped before `sink` is used here again).
    stream: Option<StreamWriter>,
    /// Sources of the entries streamed into `sink`, in order.
    streamed_src: Option<BufWriter<File>>,
    streamed_src_path: PathBuf,
    /// SSTs streamed before the order broke, and their sources file.
    streamed_run: Option<(Vec<SstFile>, PathBuf)>,
    /// How many leading bytes every key of `streamed_run` shares: its
    /// keys lie between the first and the last in-order key, so they
    /// share what those two share.
    streamed_shared: usize,
    runs: Vec<PathBuf>,
    /// Sorted runs kept in memory, in the run file format.
    mem_runs: Vec<Vec<u8>>,
    /// How many leading bytes every key of each run (spilled, then in
    /// memory) shares: the merge compares keys by the bytes after what
    /// all its sources share.
    runs_shared: Vec<usize>,
    mem_runs_shared: Vec<usize>,
    /// Bytes of `mem_runs` (part of `buf_bytes`).
    mem_run_bytes: usize,
    /// The sort's arrays of pairs, kept from one in-memory run to the
    /// next (see [`PairArrays`]); their bytes are part of `buf_bytes`.
    pair_arrays: PairArrays,
    /// Buffer bytes that make an in-memory run (`usize::MAX`: never).
    mem_run_at: usize,
    /// Bytes written to spill runs.
    pub spilled_bytes: u64,
    /// Whether any buffer went straight to the output.
    pub streamed: bool,
    /// Equal keys are handed to `finish`'s callback instead of failing.
    keep_dups: bool,
    /// Where `finish`'s output files are cut besides their target size.
    split_keys: Vec<Vec<u8>>,
    /// Memory each output SST writer may hold (see `RollingSink`).
    writer_cap: usize,
    /// Keys of every `sample_every`-th entry pushed (by position in the
    /// input, so the same input gives the same samples whatever the
    /// timing): where [`Self::finish_split`] cuts the merge.
    samples: Vec<Vec<u8>>,
    sample_every: u64,
    /// Entries pushed.
    pushed: u64,
    /// Entries that make a merge worth splitting ([`SPLIT_AT`]).
    split_at: u64,
    /// Bytes the merge's run read buffers may take together.
    merge_memory: usize,
    /// Where batches go once their entries are written or copied (this
    /// sorter's index in the pool).
    pool: Option<(Arc<BatchPool>, usize)>,
}

impl IndexSorter {
    /// `allow_in_order`: false disables straight-through writing (the
    /// caller must see every entry in the merge). `keep_dups`: equal keys
    /// are not an error here; `finish`'s callback decides (requires
    /// `allow_in_order` false).
    pub fn new(
        dir: &Path,
        name: &str,
        target_file: u64,
        allow_in_order: bool,
        keep_dups: bool,
    ) -> IndexSorter {
        IndexSorter {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            target_file,
            buf: Vec::new(),
            buf_bytes: 0,
            in_order: allow_in_order && !keep_dups,
            first: None,
            last: None,
            sink: RollingSink::new(dir, &format!("{name}-stream"), target_file),
            stream: None,
            streamed_src: None,
            streamed_src_path: dir.join(format!("{name}-stream.src")),
            streamed_run: None,
            streamed_shared: 0,
            runs: Vec::new(),
            mem_runs: Vec::new(),
            runs_shared: Vec::new(),
            mem_runs_shared: Vec::new(),
            mem_run_bytes: 0,
            pair_arrays: PairArrays::default(),
            mem_run_at: usize::MAX,
            spilled_bytes: 0,
            streamed: false,
            keep_dups,
            split_keys: Vec::new(),
            writer_cap: usize::MAX,
            samples: Vec::new(),
            sample_every: FIRST_SAMPLE_EVERY,
            pushed: 0,
            split_at: SPLIT_AT,
            merge_memory: usize::MAX,
            pool: None,
        }
    }

    /// Cuts every output SST whose writer would hold more than `cap`
    /// bytes (the writers' share of the budget).
    pub fn with_writer_cap(mut self, cap: usize) -> IndexSorter {
        self.writer_cap = cap;
        self.sink.set_memory_cap(cap);
        self
    }

    /// Hands batches whose entries are done with back to `pool` as index
    /// `index`'s.
    pub fn with_pool(mut self, pool: Arc<BatchPool>, index: usize) -> IndexSorter {
        self.pool = Some((pool, index));
        self
    }

    /// Gives `buf`'s batches back to the pool (or frees them).
    fn recycle(&self, buf: Vec<EntryBatch>) {
        if let Some((pool, index)) = &self.pool {
            for b in buf {
                pool.give(*index, b);
            }
        }
    }

    /// Makes the merge's read buffers (one per spilled run) take at most
    /// `bytes` together, each between 4 KiB and [`RUN_READ_BUFFER`].
    pub fn with_merge_memory(mut self, bytes: usize) -> IndexSorter {
        self.merge_memory = bytes;
        self
    }

    /// The read buffer of each of `runs` spilled runs in the merge.
    pub fn run_read_buffer(&self, runs: usize) -> usize {
        (self.merge_memory / runs.max(1)).clamp(4 << 10, RUN_READ_BUFFER)
    }

    /// A new output stream under the writer cap.
    fn new_sink(&self, name: &str) -> RollingSink {
        RollingSink::new(&self.dir, name, self.target_file).with_memory_cap(self.writer_cap)
    }

    /// Cuts `finish`'s output files before the first key at or past each
    /// of `keys` too (`Db::ingest_split_keys`). What was streamed in order
    /// is already written and keeps its cuts.
    pub fn set_split_keys(&mut self, keys: Vec<Vec<u8>>) {
        self.split_keys = keys;
    }

    /// Sorts the buffer into a run kept in memory whenever it holds
    /// `bytes` out of key order (see `make_mem_run`); by default it never
    /// does. Worth it when the budget holds many such runs: a spill
    /// writes each as its own run file.
    pub fn with_mem_run_at(mut self, bytes: usize) -> IndexSorter {
        self.mem_run_at = bytes.max(1);
        self
    }

    /// Splits merges of at least `entries` entries (tests: small ones).
    #[cfg(test)]
    fn with_split_at(mut self, entries: u64) -> IndexSorter {
        self.split_at = entries;
        self
    }

    /// Whether every key so far arrived strictly increasing (so the
    /// output needs no sort and no spill).
    pub fn is_in_order(&self) -> bool {
        self.in_order
    }

    /// Adds one chunk's entries (in input order), then does the buffer's
    /// upkeep if it is due ([`Self::upkeep`]).
    pub fn push(&mut self, batch: EntryBatch) -> std::result::Result<(), SortError> {
        self.push_only(batch)?;
        self.upkeep()
    }

    /// Adds one chunk's entries (in input order) and nothing else: the
    /// caller runs [`Self::upkeep`] when [`Self::upkeep_due`] (the
    /// pipeline runs the indexes' upkeep in parallel).
    pub fn push_only(&mut self, batch: EntryBatch) -> std::result::Result<(), SortError> {
        if self.in_order && !batch.is_empty() {
            let mut broke = false;
            let mut prev = self.last.as_ref().map(|(k, s)| (k.as_slice(), *s));
            // Every key of the batch shares its first `shared` bytes, so
            // two keys of it compare by what follows (the first key
            // compares with the last of the batch before, whole).
            let shared = batch.shared_prefix();
            let mut from = 0;
            for s in batch.slots() {
                let key = batch.key_of(s);
                if let Some((pk, ps)) = prev {
                    match cmp_keys_from(key, pk, from) {
                        Ordering::Greater => {}
                        Ordering::Equal => {
                            return Err(SortError::Dup(Dup {
                                key: key.to_vec(),
                                first: ps,
                                second: s.src,
                            }))
                        }
                        Ordering::Less => {
                            broke = true;
                            break;
                        }
                    }
                }
                prev = Some((key, s.src));
                from = shared;
            }
            if broke {
                self.break_order()?;
            } else if let Some(s) = batch.slots().last() {
                if self.first.is_none() {
                    if let Some(f) = batch.slots().first() {
                        self.first = Some(batch.key_of(f).to_vec());
                    }
                }
                let (lk, src) = self.last.get_or_insert_with(|| (Vec::new(), s.src));
                lk.clear();
                lk.extend_from_slice(batch.key_of(s));
                *src = s.src;
            }
        }
        self.sample(&batch);
        self.buf_bytes += batch.charge();
        self.buf.push(batch);
        Ok(())
    }

    /// Keeps the key of every `sample_every`-th entry of the input; when
    /// [`MAX_SAMPLES`] are kept, every other one is dropped and the
    /// interval doubles, so the samples stay evenly spread over the input.
    fn sample(&mut self, batch: &EntryBatch) {
        if self.keep_dups {
            return;
        }
        let n = batch.len() as u64;
        let mut every = self.sample_every;
        // The first position in this batch that is a multiple of `every`.
        let mut at = (every - self.pushed % every) % every;
        while at < n {
            self.samples.push(batch.key(at as usize).to_vec());
            at += every;
            if self.samples.len() >= MAX_SAMPLES {
                let mut i = 0;
                self.samples.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                every *= 2;
                self.sample_every = every;
                // Continue at the next multiple of the new interval.
                let pos = self.pushed + at;
                at = pos.div_ceil(every) * every - self.pushed;
            }
        }
        self.pushed += n;
    }

    /// Whether [`Self::upkeep`] has work: a buffer in key order big enough
    /// to stream, or one out of order big enough for an in-memory run.
    pub fn upkeep_due(&self) -> bool {
        if self.in_order {
            self.buf_bytes >= STREAM_AT
        } else {
            self.buffered() >= self.mem_run_at
        }
    }

    /// Bytes of the buffer's batches: what is charged beyond the
    /// in-memory runs and the kept pair arrays.
    fn buffered(&self) -> usize {
        self.buf_bytes - self.mem_run_bytes - self.pair_arrays.bytes()
    }

    /// Streams a big enough buffer in key order to the output, or sorts
    /// a big enough one out of order into an in-memory run.
    pub fn upkeep(&mut self) -> std::result::Result<(), SortError> {
        if self.in_order && self.buf_bytes >= STREAM_AT {
            // In key order: straight to the output now, not when the
            // whole budget fills (less memory, and no big write at the
            // end that nothing overlaps).
            self.spill()?;
        }
        if !self.in_order && self.buffered() >= self.mem_run_at {
            self.make_mem_run()?;
        }
        Ok(())
    }

    /// Sorts the buffer into a run held in memory, in the run file
    /// format: its entries then lie contiguous, in key order, with no
    /// per-entry allocation. Merging a few such runs reads memory in
    /// order; merging one big sorted buffer of entries jumps to a random
    /// address for every key and value (W1 in random order: 16% of the
    /// CPU in `memcmp` cache misses, and slower in memory than with
    /// spills to disk). The run also takes less memory than the entries.
    fn make_mem_run(&mut self) -> std::result::Result<(), SortError> {
        let buf = std::mem::take(&mut self.buf);
        // The radix sort's second array of pairs fits in the room kept
        // for the run, which is allocated after it. Both arrays are the
        // last run's: fresh ones were mapped and zeroed by the kernel a
        // page at a time for every run (W1 random order: 14% of the
        // import's page faults, each array freed again after its run).
        let mut arrays = std::mem::take(&mut self.pair_arrays);
        let order = sort_checked_with(
            &buf,
            self.keep_dups,
            Some(&mut arrays.spare),
            std::mem::take(&mut arrays.pairs),
        )?;
        let shared = common_prefix(&buf);
        // The run's size, bounded from each batch's longest key and value
        // and its last source (no pass over the slots: that cost 7% more
        // instructions than the copy loop), its pages mapped in at once
        // (see `pool::map_in`); on W1 the bound is the size but for the
        // few line numbers under 16384.
        let size: usize = buf.iter().map(run_len_bound).sum();
        let mut run = Vec::with_capacity(size);
        crate::pool::map_in(&mut run);
        // The entries are read in key order, i.e. from random places in
        // the chunks' arenas: a cache miss each (W1 random order: this
        // copy was 15% of the import's CPU). Loads are started ahead: the
        // slot of the entry `2 * AHEAD` on, the bytes of the one `AHEAD`
        // on (its slot loaded by then).
        const AHEAD: usize = 8;
        for (j, &(_, b, i)) in order.iter().enumerate() {
            if let Some(&(_, b, i)) = order.get(j + 2 * AHEAD) {
                prefetch(&buf[b as usize].slots()[i as usize]);
            }
            if let Some(&(_, b, i)) = order.get(j + AHEAD) {
                for line in buf[b as usize].entry_bytes(i as usize).chunks(64) {
                    prefetch(line);
                }
            }
            encode_run_entry(&mut run, &buf[b as usize], i as usize);
        }
        arrays.pairs = order;
        arrays.pairs.clear();
        self.pair_arrays = arrays;
        self.recycle(buf);
        self.mem_run_bytes += run.capacity();
        self.buf_bytes = self.mem_run_bytes + self.pair_arrays.bytes();
        self.mem_runs.push(run);
        self.mem_runs_shared.push(shared);
        Ok(())
    }

    /// Writes the in-memory runs to run files (when the budget fills).
    fn spill_mem_runs(&mut self) -> Result<()> {
        self.runs_shared
            .extend(std::mem::take(&mut self.mem_runs_shared));
        for run in std::mem::take(&mut self.mem_runs) {
            let path = self
                .dir
                .join(format!("{}-run-{:05}.run", self.name, self.runs.len()));
            std::fs::write(&path, &run).map_err(|e| Error::io(&path, e))?;
            self.spilled_bytes += run.len() as u64;
            self.runs.push(path);
        }
        self.buf_bytes -= self.mem_run_bytes;
        self.mem_run_bytes = 0;
        // The budget is full: the kept pair arrays go too (a spill sorts
        // with the pairs its entries are charged for).
        self.buf_bytes -= self.pair_arrays.bytes();
        self.pair_arrays = PairArrays::default();
        Ok(())
    }

    /// The input is not in key order after all: what was streamed becomes
    /// a run.
    fn break_order(&mut self) -> Result<()> {
        self.in_order = false;
        if let (Some(first), Some((last, _))) = (&self.first, &self.last) {
            self.streamed_shared = crate::batch::common_len(first, last);
        }
        self.first = None;
        self.last = None;
        if self.streamed {
            self.reclaim_sink()?;
            let fresh = self.new_sink(&format!("{}-out", self.name));
            let sink = std::mem::replace(&mut self.sink, fresh);
            let files = sink.finish()?;
            if let Some(mut w) = self.streamed_src.take() {
                w.flush()
                    .map_err(|e| Error::io(&self.streamed_src_path, e))?;
            }
            self.streamed_run = Some((files, self.streamed_src_path.clone()));
        }
        Ok(())
    }

    /// Frees the buffer: straight to the output while in order, else
    /// sorted into a spill run.
    pub fn spill(&mut self) -> std::result::Result<(), SortError> {
        self.spill_mem_runs()?;
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        self.buf_bytes = 0;
        if self.in_order {
            self.streamed = true;
            if self.streamed_src.is_none() {
                let f = File::create(&self.streamed_src_path)
                    .map_err(|e| Error::io(&self.streamed_src_path, e))?;
                self.streamed_src = Some(BufWriter::new(f));
            }
            let mut src = Vec::new();
            for b in &buf {
                put_src_groups(&mut src, b.slots().iter().map(|s| s.src));
            }
            if let Some(w) = self.streamed_src.as_mut() {
                w.write_all(&src)
                    .map_err(|e| Error::io(&self.streamed_src_path, e))?;
            }
            // The entries go to the SSTs on the stream's own thread.
            let stream = match &mut self.stream {
                Some(w) => w,
                None => {
                    let placeholder = self.new_sink(&format!("{}-unused", self.name));
                    let sink = std::mem::replace(&mut self.sink, placeholder);
                    self.stream
                        .insert(StreamWriter::start(sink, self.pool.clone())?)
                }
            };
            for b in buf {
                stream.send(b)?;
            }
            return Ok(());
        }
        // Spilling because the budget is full: no room for a second
        // array of pairs.
        let order = sort_checked(&buf, self.keep_dups, false)?;
        self.runs_shared.push(common_prefix(&buf));
        let path = self
            .dir
            .join(format!("{}-run-{:05}.run", self.name, self.runs.len()));
        let f = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let mut w = BufWriter::with_capacity(crate::budget::SPILL_WRITE_BUFFER, f);
        let mut rec = Vec::new();
        for &(_, b, i) in &order {
            rec.clear();
            encode_run_entry(&mut rec, &buf[b as usize], i as usize);
            w.write_all(&rec).map_err(|e| Error::io(&path, e))?;
            self.spilled_bytes += rec.len() as u64;
        }
        w.flush().map_err(|e| Error::io(&path, e))?;
        self.runs.push(path);
        drop(order);
        self.recycle(buf);
        Ok(())
    }

    /// Takes the stream's sink back from its thread, once every batch
    /// sent is written.
    fn reclaim_sink(&mut self) -> Result<()> {
        if let Some(w) = self.stream.take() {
            self.sink = w.close()?;
        }
        Ok(())
    }

    /// Merges everything into the output SSTs and returns them. `each`
    /// sees every group of entries with one key, in key order, the group
    /// in input order (tombstones last), and says what to write; a group
    /// of more than one entry is a [`SortError::Dup`] unless `keep_dups`.
    pub fn finish<F>(mut self, each: F) -> std::result::Result<Vec<SstFile>, SortError>
    where
        F: FnMut(&[EntryRef<'_>]) -> Result<Keep> + Send,
    {
        if !self.in_order && !self.keep_dups {
            return self.merge_ranges(Vec::new(), vec![each]);
        }
        self.reclaim_sink()?;
        let name = format!("{}-out", self.name);
        let fresh = self.new_sink(&name);
        let mut sink = std::mem::replace(&mut self.sink, fresh);
        sink.set_split_keys(std::mem::take(&mut self.split_keys));
        // The merge here, the SST writing on a thread of its own.
        let ((), files) = crate::handoff::write_on_thread(sink, |out| self.merge_into(out, each))?;
        Ok(files)
    }

    /// Whether [`Self::finish_split`] can split this sorter's merge by key
    /// range: out of key order, equal keys an error, no spilled runs (each
    /// range would read every one again through a read buffer of its
    /// own), and enough entries to be worth the threads.
    pub fn can_split(&self) -> bool {
        !self.in_order && !self.keep_dups && self.runs.is_empty() && self.pushed >= self.split_at
    }

    /// Like [`Self::finish`], with the merge cut into up to `ways` key
    /// ranges, each merged on a thread of its own and written by another
    /// (`make_each` gives each range its callback; a duplicate or error is
    /// reported for the lowest range that has one, as one merge would).
    /// One merge when [`Self::can_split`] says no. The final merge of an
    /// index out of key order is a stream that nothing overlaps: when it
    /// is the only one (W1's secondary index in pk order, about a fifth of
    /// the import's time), one merge thread and one writer thread leave
    /// the cores partly idle. The files come back in key order.
    pub fn finish_split<F>(
        mut self,
        ways: usize,
        mut make_each: impl FnMut() -> F,
    ) -> std::result::Result<Vec<SstFile>, SortError>
    where
        F: FnMut(&[EntryRef<'_>]) -> Result<Keep> + Send,
    {
        if ways < 2 || !self.can_split() {
            return self.finish(make_each());
        }
        let cuts = split_points(std::mem::take(&mut self.samples), ways);
        let eaches = (0..=cuts.len()).map(|_| make_each()).collect();
        self.merge_ranges(cuts, eaches)
    }

    /// The sources of one merge (or of one key range of it): what was
    /// streamed, from `bounds.0` until `bounds.1` (`None`: unbounded);
    /// every spilled run; the in-memory runs, run `i` from byte
    /// `runs[i].0` to `runs[i].1`; the last buffer's `order`. Returns
    /// them with the prefix length all keys of each share.
    fn sources(
        &self,
        streamed: Option<&(Vec<SstFile>, PathBuf)>,
        runs: &[(usize, usize)],
        order: Vec<Pair>,
        buf_shared: usize,
        bounds: (Option<Vec<u8>>, Option<Vec<u8>>),
    ) -> Result<(Vec<Source>, Vec<usize>)> {
        let mut sources = Vec::new();
        let mut shared = Vec::new();
        if let Some((files, src)) = streamed {
            let f = File::open(src).map_err(|e| Error::io(src, e))?;
            sources.push(Source::Sst {
                files: files
                    .iter()
                    .map(|f| f.path.clone())
                    .collect::<Vec<_>>()
                    .into_iter(),
                reader: None,
                src: BufReader::new(f),
                src_path: src.clone(),
                group: SrcGroup::default(),
                cur: empty_entry(),
                from: bounds.0,
                until: bounds.1,
            });
            shared.push(self.streamed_shared);
        }
        let read_buffer = self.run_read_buffer(self.runs.len());
        for (i, path) in self.runs.iter().enumerate() {
            let f = File::open(path).map_err(|e| Error::io(path, e))?;
            sources.push(Source::Run {
                r: BufReader::with_capacity(read_buffer, f),
                path: path.clone(),
                cur: empty_entry(),
                spare: Vec::new(),
            });
            shared.push(self.runs_shared.get(i).copied().unwrap_or(0));
        }
        for (run, &(next, end)) in runs.iter().enumerate() {
            sources.push(Source::MemRun {
                run,
                cur: Span::default(),
                next,
                end,
            });
            shared.push(self.mem_runs_shared.get(run).copied().unwrap_or(0));
        }
        sources.push(Source::Mem {
            order: order.into_iter(),
            cur: (0, 0),
        });
        shared.push(buf_shared);
        Ok((sources, shared))
    }

    /// The merge of a sorter out of order whose equal keys are an error,
    /// cut at `cuts` (increasing; none: one range, which may read spilled
    /// runs) into ranges merged at once, range `r` with `eaches[r]`. Each
    /// range's merge lends the writer the entries of the runs in memory
    /// and of the last buffer instead of copying them (`handoff::Lend`).
    fn merge_ranges<F>(
        mut self,
        cuts: Vec<Vec<u8>>,
        eaches: Vec<F>,
    ) -> std::result::Result<Vec<SstFile>, SortError>
    where
        F: FnMut(&[EntryRef<'_>]) -> Result<Keep> + Send,
    {
        self.reclaim_sink()?;
        let ranges = cuts.len() + 1;
        if eaches.len() != ranges || (ranges > 1 && !self.runs.is_empty()) {
            return Err(SortError::Other(Error::invalid(
                "internal: a merge cut into ranges it cannot have",
            )));
        }
        let buf = std::mem::take(&mut self.buf);
        let mem_runs = self.mem_run_at != usize::MAX;
        let mut order = sort_checked(&buf, false, mem_runs)?;
        let st = Stable {
            runs: std::mem::take(&mut self.mem_runs),
            bufs: buf,
        };
        // The last buffer's order, cut where the keys reach each cut.
        let mut orders = Vec::with_capacity(ranges);
        for cut in cuts.iter().rev() {
            let p = order
                .partition_point(|&(_, b, i)| st.bufs[b as usize].key(i as usize) < cut.as_slice());
            orders.push(order.split_off(p));
        }
        orders.push(order);
        orders.reverse();
        let run_at = st
            .runs
            .iter()
            .map(|r| run_cuts(r, &cuts))
            .collect::<Result<Vec<_>>>()?;
        let buf_shared = common_prefix(&st.bufs);
        let streamed = self.streamed_run.take();
        let split_keys = std::mem::take(&mut self.split_keys);
        // Without spilled runs the merge's read buffers are not needed:
        // their share of the budget (`merge_memory`) takes the extra
        // writers, each up to the one writer's cap.
        let cap = self
            .writer_cap
            .min(self.writer_cap.saturating_add(self.merge_memory) / ranges)
            .max(1);
        let handoff = crate::handoff::HANDOFF_MEMORY / ranges;
        // Each range's sources, sink and callback, before any thread runs.
        let mut jobs = Vec::with_capacity(ranges);
        for ((r, order), each) in orders.into_iter().enumerate().zip(eaches) {
            // Spilled runs only in a merge of one range (checked above).
            let (sources, shared) = self.sources(
                streamed.as_ref(),
                &run_at
                    .iter()
                    .map(|at| (at[r], at[r + 1]))
                    .collect::<Vec<_>>(),
                order,
                buf_shared,
                (
                    r.checked_sub(1).map(|c| cuts[c].clone()),
                    cuts.get(r).cloned(),
                ),
            )?;
            let name = if ranges == 1 {
                format!("{}-out", self.name)
            } else {
                format!("{}-out{r}", self.name)
            };
            let mut sink =
                RollingSink::new(&self.dir, &name, self.target_file).with_memory_cap(cap);
            sink.set_split_keys(split_keys.clone());
            jobs.push((sources, shared, sink, each));
        }
        let st = &st;
        let merge = |(mut sources, shared, sink, mut each): (Vec<Source>, Vec<usize>, _, F)| {
            crate::handoff::write_on_thread_with(sink, handoff, |out| {
                merge_unique(&mut sources, st, &shared, out, &mut each)
            })
        };
        let results: Vec<_> = if ranges == 1 {
            jobs.into_iter().map(|j| Ok(merge(j))).collect()
        } else {
            std::thread::scope(|sc| {
                let handles: Vec<_> = jobs.into_iter().map(|j| sc.spawn(|| merge(j))).collect();
                handles.into_iter().map(|h| h.join()).collect()
            })
        };
        let mut files = Vec::new();
        for r in results {
            let ((), f) = r.map_err(|_| {
                SortError::Other(Error::invalid("internal: a merge thread panicked"))
            })??;
            files.extend(f);
        }
        let streamed = streamed
            .iter()
            .flat_map(|(files, _)| files.iter().map(|f| &f.path));
        for p in streamed.chain(self.runs.iter()) {
            let _ = std::fs::remove_file(p);
        }
        Ok(files)
    }

    /// Like [`Self::finish`], into any output. Only for a sorter that
    /// never spilled or streamed (a direct or batch unit): what was
    /// streamed went to its own SSTs.
    pub fn merge_into(
        mut self,
        out: &mut dyn Output,
        mut each: impl FnMut(&[EntryRef<'_>]) -> Result<Keep>,
    ) -> std::result::Result<(), SortError> {
        if self.in_order {
            // Strictly increasing keys: every group is one entry.
            for b in std::mem::take(&mut self.buf) {
                for i in 0..b.len() {
                    let one = [b.entry_ref(i)];
                    write_group(out, &one, each(&one)?)?;
                }
            }
            if let Some(mut w) = self.streamed_src.take() {
                w.flush()
                    .map_err(|e| Error::io(&self.streamed_src_path, e))?;
            }
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        // With in-memory runs on, the last buffer is smaller than a run
        // and the room kept for building one is free.
        let mem_runs = self.mem_run_at != usize::MAX;
        let order = sort_checked(&buf, self.keep_dups, mem_runs)?;
        // What in-memory sources' entries borrow from: fixed for the whole
        // merge, so an entry is handed on where it lies, never copied out.
        let st = Stable {
            runs: std::mem::take(&mut self.mem_runs),
            bufs: buf,
        };
        let streamed = self.streamed_run.take();
        let whole: Vec<(usize, usize)> = st.runs.iter().map(|r| (0, r.len())).collect();
        let buf_shared = common_prefix(&st.bufs);
        let (mut sources, shared) =
            self.sources(streamed.as_ref(), &whole, order, buf_shared, (None, None))?;
        if !self.keep_dups {
            merge_unique(&mut sources, &st, &shared, &mut Copying(out), &mut each)?;
        } else {
            let mut heap = start_heap(&mut sources, &st, &shared)?;
            // Groups of equal keys may span many entries of one source:
            // they are copied (entries of written groups are reused).
            let mut group: Vec<Entry> = Vec::with_capacity(1);
            let mut spare: Vec<Entry> = Vec::new();
            while let Some(top) = heap.top() {
                let e = sources[top].current(&st);
                if group.first().is_some_and(|g| g.key != e.key) {
                    write_owned_group(out, &group, &mut each)?;
                    spare.append(&mut group);
                }
                let mut owned = spare.pop().unwrap_or_else(empty_entry);
                e.copy_into(&mut owned);
                group.push(owned);
                heap.next(&mut sources, &st, top)?;
            }
            if !group.is_empty() {
                write_owned_group(out, &group, &mut each)?;
            }
        }
        drop(sources);
        drop(st);
        let streamed = streamed
            .iter()
            .flat_map(|(files, _)| files.iter().map(|f| &f.path));
        for p in streamed.chain(self.runs.iter()) {
            let _ = std::fs::remove_file(p);
        }
        Ok(())
    }
}

/// Buffered bytes after which an index in key order is written to its
/// output SSTs.
const STREAM_AT: usize = 8 << 20;

/// Buffered bytes (out of key order) after which the buffer becomes a
/// sorted run in memory (a few MiB keep the sort's working set close to
/// the caches; 16 MiB runs beat one big sort of W1's 1,000,000 rows).
pub const MEM_RUN_AT: usize = 16 << 20;

/// Asks the CPU to start loading the cache line where `p` starts (a
/// hint; nothing is read).
#[inline]
pub(crate) fn prefetch<T: ?Sized>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch instruction only hints the cache: it reads
    // nothing the program sees and never faults (and `p` is a live
    // reference). It is `unsafe` only for its `target_feature` (SSE, which
    // every x86_64 has).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::from_ref(p).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// At least the bytes of `b`'s entries in the run format
/// ([`encode_run_entry`]): its keys and values, and per entry the
/// varints of the longest key, the longest value (with the delete bit)
/// and the last entry's source (sources grow through a batch, which holds
/// one chunk's rows in input order).
fn run_len_bound(b: &EntryBatch) -> usize {
    let varint = |v: u64| (64 - (v | 1).leading_zeros() as usize).div_ceil(7);
    let (k, v) = b.longest();
    let last = b.slots().last().map(|s| s.src).unwrap_or_default();
    let per_entry = varint(k.into())
        + varint((u64::from(v) << 1) | 1)
        + varint(last.file.into())
        + varint(last.line);
    b.used() + b.len() * per_entry
}

/// Appends one entry in the run format (see the module documentation).
fn encode_run_entry(rec: &mut Vec<u8>, b: &EntryBatch, i: usize) {
    let s = &b.slots()[i];
    let (key, value) = (b.key_of(s), b.value_of(s));
    put_varint(rec, key.len() as u128);
    rec.extend_from_slice(key);
    put_varint(rec, ((value.len() as u128) << 1) | s.delete as u128);
    rec.extend_from_slice(value);
    put_varint(rec, s.src.file as u128);
    put_varint(rec, s.src.line as u128);
}

/// Reads one entry in the run format from `r` (`path` names it in
/// errors); `None` at its end.
fn read_run_entry(r: &mut impl Read, path: &Path, spare: &mut Vec<Entry>) -> Result<Option<Entry>> {
    let corrupt = |m: &str| Error::invalid(format!("{}: {m}", path.display()));
    let Some(klen) = read_varint(r).map_err(|e| Error::io(path, e))? else {
        return Ok(None);
    };
    let Entry {
        mut key, mut value, ..
    } = reuse(spare);
    key.clear();
    key.resize(klen as usize, 0);
    r.read_exact(&mut key).map_err(|e| Error::io(path, e))?;
    let vlen = read_varint(r)
        .map_err(|e| Error::io(path, e))?
        .ok_or_else(|| corrupt("run ends inside an entry"))?;
    let delete = vlen & 1 == 1;
    value.clear();
    value.resize((vlen >> 1) as usize, 0);
    r.read_exact(&mut value).map_err(|e| Error::io(path, e))?;
    let file = read_varint(r)
        .map_err(|e| Error::io(path, e))?
        .ok_or_else(|| corrupt("run ends inside an entry"))?;
    let line = read_varint(r)
        .map_err(|e| Error::io(path, e))?
        .ok_or_else(|| corrupt("run ends inside an entry"))?;
    Ok(Some(run_entry(key, value, file, line, delete)))
}

/// Where one entry of a run lies in the run's bytes (see
/// [`decode_span`]).
#[derive(Clone, Copy, Debug, Default)]
struct Span {
    key: usize,
    klen: usize,
    value: usize,
    vlen: usize,
    src: Src,
    delete: bool,
}

impl Span {
    /// The entry in `run`, the bytes it was decoded from.
    fn entry<'r>(&self, run: &'r [u8]) -> EntryRef<'r> {
        EntryRef {
            key: run.get(self.key..self.key + self.klen).unwrap_or_default(),
            value: run
                .get(self.value..self.value + self.vlen)
                .unwrap_or_default(),
            src: self.src,
            delete: self.delete,
        }
    }
}

/// Decodes the entry at `pos` of an in-memory run (or of a spilled run's
/// read buffer): where it lies and the offset just past it; `None` at
/// the run's end. The same format as [`read_run_entry`], read from the
/// slice (not byte by byte through `Read`: four varints per entry, which
/// were about a fifth of the merge's CPU in W1's random order), and not
/// copied: the merge hands the entry on from where it lies.
fn decode_span(run: &[u8], pos: usize) -> Result<Option<(Span, usize)>> {
    let Some(mut rest) = run.get(pos..).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    let corrupt = |m: String| Error::invalid(format!("(sorted run in memory): {m}"));
    let take = |n: u128, rest: &[u8]| -> Result<usize> {
        let n = usize::try_from(n).map_err(|_| corrupt("length out of range".into()))?;
        if rest.len() < n {
            return Err(corrupt("run ends inside an entry".into()));
        }
        Ok(n)
    };
    let at = |rest: &[u8]| run.len() - rest.len();
    let klen = get_varint(&mut rest).map_err(corrupt)?;
    let klen = take(klen, rest)?;
    let key = at(rest);
    rest = &rest[klen..];
    let vlen = get_varint(&mut rest).map_err(corrupt)?;
    let delete = vlen & 1 == 1;
    let vlen = take(vlen >> 1, rest)?;
    let value = at(rest);
    rest = &rest[vlen..];
    let file = get_varint(&mut rest).map_err(corrupt)?;
    let line = get_varint(&mut rest).map_err(corrupt)?;
    let span = Span {
        key,
        klen,
        value,
        vlen,
        src: Src {
            file: file as u32,
            line: line as u64,
        },
        delete,
    };
    Ok(Some((span, at(rest))))
}

/// A run entry from its decoded fields (the stream reader's last step).
fn run_entry(key: Vec<u8>, value: Vec<u8>, file: u128, line: u128, delete: bool) -> Entry {
    Entry {
        key,
        value,
        src: Src {
            file: file as u32,
            line: line as u64,
        },
        delete,
    }
}

/// An entry with empty buffers, to fill.
fn empty_entry() -> Entry {
    Entry {
        key: Vec::new(),
        value: Vec::new(),
        src: Src { file: 0, line: 0 },
        delete: false,
    }
}

/// An entry from the merge's spares (or a new one) to fill.
fn reuse(spare: &mut Vec<Entry>) -> Entry {
    spare.pop().unwrap_or_else(empty_entry)
}

/// Bytes of read buffer per spilled run during the merge.
pub const RUN_READ_BUFFER: usize = 64 << 10;

fn write_group(out: &mut dyn Output, group: &[EntryRef<'_>], keep: Keep) -> Result<()> {
    match keep {
        Keep::Put(i) => match group.get(i) {
            Some(e) => out.put(e.key, e.value),
            None => Err(Error::invalid("internal: kept entry outside its group")),
        },
        Keep::Delete => match group.first() {
            Some(e) => out.delete(e.key),
            None => Ok(()),
        },
        Keep::Nothing => Ok(()),
    }
}

/// Decides and writes a group of owned entries (`--on-duplicate ignore`
/// or `replace`).
fn write_owned_group(
    out: &mut dyn Output,
    group: &[Entry],
    each: &mut impl FnMut(&[EntryRef<'_>]) -> Result<Keep>,
) -> Result<()> {
    if let [e] = group {
        let one = [e.as_ref()];
        return write_group(out, &one, each(&one)?);
    }
    let refs: Vec<EntryRef<'_>> = group.iter().map(Entry::as_ref).collect();
    write_group(out, &refs, each(&refs)?)
}

/// One entry in the sort's order: (key head, batch, entry in batch).
type Pair = (u128, u32, u32);

/// The sort's two arrays of pairs (the order and the radix sort's second
/// array), kept by a sorter between in-memory runs so each run reuses
/// pages already mapped. Empty between uses.
#[derive(Debug, Default)]
struct PairArrays {
    pairs: Vec<Pair>,
    spare: Vec<Pair>,
}

impl PairArrays {
    /// Bytes the arrays hold (charged to the sorter's buffer).
    fn bytes(&self) -> usize {
        (self.pairs.capacity() + self.spare.capacity()) * std::mem::size_of::<Pair>()
    }
}

/// The buffer's entries in order of key, then source; adjacent equal keys
/// are a duplicate (unless `keep_dups`: the merge's callback decides).
///
/// `scratch`: the sort may allocate a second array of pairs (the radix
/// sort's, [`radix_sort_heads`]); only where the budget holds that room.
fn sort_checked(
    buf: &[EntryBatch],
    keep_dups: bool,
    scratch: bool,
) -> std::result::Result<Vec<Pair>, SortError> {
    let mut spare = Vec::new();
    sort_checked_with(buf, keep_dups, scratch.then_some(&mut spare), Vec::new())
}

/// [`sort_checked`] into `order`'s allocation (cleared first), with
/// `scratch` (when the budget holds it) as the radix sort's second array;
/// the returned order and `scratch` keep both allocations.
fn sort_checked_with(
    buf: &[EntryBatch],
    keep_dups: bool,
    scratch: Option<&mut Vec<Pair>>,
    mut order: Vec<Pair>,
) -> std::result::Result<Vec<Pair>, SortError> {
    // Comparing entries by their keys in the arenas costs cache misses
    // per comparison; sort (16 key bytes after the shared prefix, batch,
    // entry) pairs instead, comparing whole keys only when those bytes
    // tie. The entries never move: runs are written by following the
    // pairs (the budget charges every entry its pair, `batch::SORT_PAIR`).
    let skip = common_prefix(buf);
    let n: usize = buf.iter().map(EntryBatch::len).sum();
    order.clear();
    order.reserve(n);
    for (b, batch) in buf.iter().enumerate() {
        for (i, s) in batch.slots().iter().enumerate() {
            order.push((key_head(batch.key_of(s), skip), b as u32, i as u32));
        }
    }
    let slot = |p: &Pair| &buf[p.1 as usize].slots()[p.2 as usize];
    let key = |p: &Pair| buf[p.1 as usize].key(p.2 as usize);
    let full = |a: &Pair, b: &Pair| {
        a.0.cmp(&b.0)
            .then_with(|| key(a).cmp(key(b)))
            .then_with(|| slot(a).src.cmp(&slot(b).src))
    };
    if !scratch.is_some_and(|spare| radix_sort_heads(&mut order, spare)) {
        order.sort_unstable_by(full);
    } else {
        // The radix sort ordered the heads only: entries whose heads tie
        // (keys equal in their first 16 bytes after the prefix) are
        // ordered by whole key, then source.
        let mut at = 0;
        while at < order.len() {
            let head = order[at].0;
            let end = at + order[at..].iter().take_while(|p| p.0 == head).count();
            if end - at > 1 {
                order[at..end].sort_unstable_by(full);
            }
            at = end;
        }
    }
    if keep_dups {
        return Ok(order);
    }
    if let Some(w) = order
        .windows(2)
        .position(|w| w[0].0 == w[1].0 && key(&w[0]) == key(&w[1]))
    {
        return Err(SortError::Dup(Dup {
            key: key(&order[w]).to_vec(),
            first: slot(&order[w]).src,
            second: slot(&order[w + 1]).src,
        }));
    }
    Ok(order)
}

/// Most byte passes [`radix_sort_heads`] makes; heads varying in more
/// bytes are sorted by comparison.
const RADIX_PASSES: usize = 8;

/// Sorts `order` by its heads alone with a least-significant-digit radix
/// sort over the bytes in which the heads differ at all (an index's keys
/// after their shared prefix differ in a few bytes: W1's primary keys in
/// 4 of 16), if there are at most [`RADIX_PASSES`] of them; returns
/// whether it did. Heads that tie keep their order. About a tenth of the
/// instructions of the comparison sort it replaces, which was 13-14% of
/// a W1 import's in random order. Uses `spare` as its second array of
/// pairs (grown to `order`'s length); the two may swap allocations.
fn radix_sort_heads(order: &mut Vec<Pair>, spare: &mut Vec<Pair>) -> bool {
    let Some(first) = order.first().map(|p| p.0) else {
        return true;
    };
    let diff = order.iter().fold(0u128, |d, p| d | (p.0 ^ first));
    let shifts: Vec<u32> = (0..16u32)
        .map(|b| 8 * b)
        .filter(|&sh| (diff >> sh) & 0xFF != 0)
        .collect();
    if shifts.len() > RADIX_PASSES || order.len() < 64 {
        return false;
    }
    // Every pass's counts in one read of the heads.
    let mut counts = vec![[0usize; 256]; shifts.len()];
    for p in order.iter() {
        for (c, &sh) in counts.iter_mut().zip(&shifts) {
            c[((p.0 >> sh) & 0xFF) as usize] += 1;
        }
    }
    let mut from = std::mem::take(order);
    let mut to = std::mem::take(spare);
    // Every slot is written by each pass; the fill only makes the length.
    to.clear();
    to.resize(from.len(), (0, 0, 0));
    for (c, &sh) in counts.iter_mut().zip(&shifts) {
        let mut sum = 0;
        for n in c.iter_mut() {
            (*n, sum) = (sum, sum + *n);
        }
        for p in &from {
            let d = &mut c[((p.0 >> sh) & 0xFF) as usize];
            to[*d] = *p;
            *d += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    *order = from;
    *spare = to;
    true
}

/// The length of a prefix every key in `buf` shares (an index's keys
/// share its table and index prefix, and often leading bytes of their
/// first column), from each batch's shared prefix and first key: no pass
/// over the keys (that pass was 2-3% of W1's CPU in random order). It is
/// at most the keys' longest common prefix, which is all the sort needs.
/// `a.cmp(b)` for keys whose first `from` bytes are known to be equal:
/// one big-endian comparison of the 8 bytes at `from` (moved back to fit
/// the shorter key; the bytes before `from` are equal, so they decide
/// nothing) settles it unless those bytes are equal too. The in-order
/// check compares every key with the one before it, and in a batch of
/// W1 keys in pk order only the last 3 of 25 bytes differ: `memcmp`
/// there was about 3% of the import's time.
#[inline]
pub(crate) fn cmp_keys_from(a: &[u8], b: &[u8], from: usize) -> Ordering {
    let n = a.len().min(b.len());
    if n >= 8 {
        let at = from.min(n - 8);
        if let (Some(x), Some(y)) = (a[at..].first_chunk::<8>(), b[at..].first_chunk::<8>()) {
            let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
            if x != y {
                return x.cmp(&y);
            }
            return a[at + 8..].cmp(&b[at + 8..]);
        }
    }
    a.cmp(b)
}

fn common_prefix(buf: &[EntryBatch]) -> usize {
    let mut batches = buf.iter().filter(|b| !b.is_empty());
    let Some(f) = batches.next() else {
        return 0;
    };
    let first = f.key(0);
    batches.fold(f.shared_prefix(), |n, b| {
        n.min(b.shared_prefix())
            .min(crate::batch::common_len(first, b.key(0)))
    })
}

/// The 16 bytes of `key` after the shared prefix of `skip` bytes, as a
/// big-endian number (zero-padded): its order agrees with the keys' byte
/// order wherever the two differ.
fn key_head(key: &[u8], skip: usize) -> u128 {
    let mut b = [0u8; 16];
    let rest = key.get(skip..).unwrap_or_default();
    let n = rest.len().min(16);
    b[..n].copy_from_slice(&rest[..n]);
    u128::from_be_bytes(b)
}

/// Appends the sources of a stream's entries to its side file: groups
/// of `varint n, varint file, varint first line` for `n` entries on
/// consecutive lines of one file (a chunk's rows, one entry each: a group
/// per chunk instead of two varints per entry, which were a tenth of the
/// coordinating thread's time in W1's pk order).
fn put_src_groups(out: &mut Vec<u8>, srcs: impl Iterator<Item = Src>) {
    let mut group: Option<(u64, Src)> = None;
    for s in srcs {
        match &mut group {
            Some((n, first)) if first.file == s.file && first.line + *n == s.line => *n += 1,
            _ => {
                if let Some((n, first)) = group {
                    put_src_group(out, n, first);
                }
                group = Some((1, s));
            }
        }
    }
    if let Some((n, first)) = group {
        put_src_group(out, n, first);
    }
}

fn put_src_group(out: &mut Vec<u8>, n: u64, first: Src) {
    put_varint(out, n.into());
    put_varint(out, first.file.into());
    put_varint(out, first.line.into());
}

/// A reader's place in a stream's side file of sources (see
/// [`put_src_groups`]): the next entry's source and how many entries of
/// its group are left.
#[derive(Debug, Default)]
struct SrcGroup {
    left: u64,
    next: Src,
}

impl SrcGroup {
    /// The next entry's source.
    fn next(&mut self, r: &mut impl Read, path: &Path) -> Result<Src> {
        if self.left == 0 {
            let corrupt = |m: &str| Error::invalid(format!("{}: {m}", path.display()));
            let mut field = || -> Result<u128> {
                read_varint(r)
                    .map_err(|e| Error::io(path, e))?
                    .ok_or_else(|| corrupt("fewer sources than entries"))
            };
            let (n, file, line) = (field()?, field()?, field()?);
            self.left = u64::try_from(n).map_err(|_| corrupt("group length out of range"))?;
            self.next = Src {
                file: u32::try_from(file).map_err(|_| corrupt("file out of range"))?,
                line: u64::try_from(line).map_err(|_| corrupt("line out of range"))?,
            };
            if self.left == 0 {
                return Err(corrupt("an empty group of sources"));
            }
        }
        let at = self.next;
        self.left -= 1;
        self.next.line = self.next.line.saturating_add(1);
        Ok(at)
    }
}

/// An [`Output`] that writes what it is lent like anything else (for a
/// merge into an output that keeps nothing).
struct Copying<'o>(&'o mut dyn Output);

impl Output for Copying<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.0.put(key, value)
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.0.delete(key)
    }
}

impl<'s> Lend<'s> for Copying<'_> {
    fn put_lent(&mut self, key: &'s [u8], value: &'s [u8]) -> Result<()> {
        self.0.put(key, value)
    }
}

/// Advances every source to its first entry and builds the heap of those
/// that have one.
fn start_heap(sources: &mut [Source], st: &Stable, shared: &[usize]) -> Result<Heap> {
    let mut live = Vec::with_capacity(sources.len());
    for (i, s) in sources.iter_mut().enumerate() {
        if s.advance(st)? {
            live.push(i);
        }
    }
    Ok(Heap::new(live, sources, st, shared))
}

/// Merges `sources` (none holding a key twice) into `out`: equal keys in
/// two sources are a [`SortError::Dup`]. `shared[s]`: a prefix length
/// every key of source `s` shares.
fn merge_unique<'st>(
    sources: &mut [Source],
    st: &'st Stable,
    shared: &[usize],
    out: &mut dyn Lend<'st>,
    each: &mut dyn FnMut(&[EntryRef<'_>]) -> Result<Keep>,
) -> std::result::Result<(), SortError> {
    let mut heap = start_heap(sources, st, shared)?;
    // No source holds a key twice (each was sorted and checked, or
    // written in strictly increasing order), so a key's group is one
    // entry unless the next smallest current entry, a child of the heap's
    // root, has the same key: a duplicate.
    while let Some(top) = heap.top() {
        let e = sources[top].current(st);
        // Equal keys have equal heads: whole keys are compared only then
        // (comparing them at every step was 17% of the primary index's
        // merge thread in W1's random order).
        if let Some(next) = heap
            .second(sources, st)
            .filter(|&n| heap.heads[n] == heap.heads[top])
        {
            let n = sources[next].current(st);
            if n.key == e.key {
                return Err(SortError::Dup(Dup {
                    key: e.key.to_vec(),
                    first: e.src,
                    second: n.src,
                }));
            }
        }
        let one = [e];
        match (each(&one)?, sources[top].lent(st)) {
            // An entry in memory that outlives the writer goes to it as
            // it lies (W1's primary rows: 300 bytes each, copied into
            // the hand-off's batches before).
            (Keep::Put(0), Some(e)) if !e.delete => out.put_lent(e.key, e.value)?,
            (keep, _) => write_group(out, &one, keep)?,
        }
        heap.next(sources, st, top)?;
    }
    Ok(())
}

/// Up to `ways - 1` distinct keys, increasing, that cut a merge into
/// about equal ranges: the quantiles of the sampled keys (samples taken
/// by input position, so the same input is cut at the same keys).
fn split_points(mut samples: Vec<Vec<u8>>, ways: usize) -> Vec<Vec<u8>> {
    samples.sort_unstable();
    let mut cuts: Vec<Vec<u8>> = (1..ways)
        .filter_map(|q| samples.get(samples.len() * q / ways).cloned())
        .collect();
    cuts.dedup();
    cuts
}

/// Where each range of a run in memory starts when `cuts` (increasing)
/// divide it: `0`, then per cut the offset of the run's first entry at or
/// past it, then the run's length.
fn run_cuts(run: &[u8], cuts: &[Vec<u8>]) -> Result<Vec<usize>> {
    let mut at = vec![0];
    let mut pos = 0;
    for cut in cuts {
        while let Some((span, after)) = decode_span(run, pos)? {
            if span.entry(run).key >= cut.as_slice() {
                break;
            }
            pos = after;
        }
        at.push(pos);
    }
    at.push(run.len());
    Ok(at)
}

/// Entries a sorter must have been given for its merge to be split by
/// key range (smaller merges take less than starting threads is worth).
const SPLIT_AT: u64 = 100_000;

/// Samples a sorter keeps at most (a few hundred KiB of keys), and the
/// interval it starts sampling at.
const MAX_SAMPLES: usize = 4096;
const FIRST_SAMPLE_EVERY: u64 = 64;

/// What the merge's in-memory sources' entries lie in, fixed for the
/// whole merge (the sources keep only offsets into it).
struct Stable {
    /// Sorted runs kept in memory.
    runs: Vec<Vec<u8>>,
    /// The last buffer's batches.
    bufs: Vec<EntryBatch>,
}

/// One sorted input of the merge and its current entry.
enum Source {
    /// The last buffer, in the sort's order; `cur`: (batch, entry) of
    /// the current entry in [`Stable::bufs`].
    Mem {
        order: std::vec::IntoIter<Pair>,
        cur: (u32, u32),
    },
    /// A sorted run in memory ([`Stable::runs`]`[run]`): where the
    /// current entry lies, where the next one starts and where the
    /// source's part of the run ends.
    MemRun {
        run: usize,
        cur: Span,
        next: usize,
        end: usize,
    },
    /// A spilled run: its current entry is copied out of the read buffer.
    Run {
        r: BufReader<File>,
        path: PathBuf,
        cur: Entry,
        spare: Vec<Entry>,
    },
    /// What was streamed before the order broke: its entries from `from`
    /// (inclusive) until `until` (exclusive), either unbounded when `None`.
    Sst {
        files: std::vec::IntoIter<PathBuf>,
        reader: Option<Box<strata::sstable::SstReader>>,
        src: BufReader<File>,
        src_path: PathBuf,
        /// Where the side file's group of sources stands.
        group: SrcGroup,
        cur: Entry,
        from: Option<Vec<u8>>,
        until: Option<Vec<u8>>,
    },
}

impl Source {
    /// The current entry (after [`Self::advance`] said there is one).
    fn current<'r>(&'r self, st: &'r Stable) -> EntryRef<'r> {
        match self {
            Source::Mem { cur: (b, i), .. } => match st.bufs.get(*b as usize) {
                Some(batch) => batch.entry_ref(*i as usize),
                None => EntryRef::EMPTY,
            },
            Source::MemRun { run, cur, .. } => match st.runs.get(*run) {
                Some(r) => cur.entry(r),
                None => EntryRef::EMPTY,
            },
            Source::Run { cur, .. } | Source::Sst { cur, .. } => cur.as_ref(),
        }
    }

    /// The current entry, borrowed from `st` rather than from the
    /// source: only for the sources in memory (the others' entries are
    /// copied out of a read buffer or a table file).
    fn lent<'st>(&self, st: &'st Stable) -> Option<EntryRef<'st>> {
        match self {
            Source::Mem { cur: (b, i), .. } => st
                .bufs
                .get(*b as usize)
                .map(|batch| batch.entry_ref(*i as usize)),
            Source::MemRun { run, cur, .. } => st.runs.get(*run).map(|r| cur.entry(r)),
            Source::Run { .. } | Source::Sst { .. } => None,
        }
    }

    /// Moves to the next entry; false at the end.
    fn advance(&mut self, st: &Stable) -> Result<bool> {
        match self {
            Source::Mem { order, cur } => Ok(match order.next() {
                Some((_, b, i)) => {
                    *cur = (b, i);
                    true
                }
                None => false,
            }),
            Source::MemRun {
                run,
                cur,
                next,
                end,
            } => {
                let bytes = st.runs.get(*run).map(Vec::as_slice).unwrap_or_default();
                let bytes = bytes.get(..*end).unwrap_or(bytes);
                Ok(match decode_span(bytes, *next)? {
                    Some((span, after)) => {
                        (*cur, *next) = (span, after);
                        true
                    }
                    None => false,
                })
            }
            Source::Run {
                r,
                path,
                cur,
                spare,
            } => {
                spare.push(std::mem::replace(cur, empty_entry()));
                // An entry whole in the read buffer is decoded from the
                // slice; one that straddles the buffer's end (or a
                // corrupt one, for its error) is read through `Read`.
                let buffered = r.fill_buf().map_err(|e| Error::io(&*path, e))?;
                if let Ok(Some((span, after))) = decode_span(buffered, 0) {
                    let mut e = reuse(spare);
                    span.entry(buffered).copy_into(&mut e);
                    r.consume(after);
                    *cur = e;
                    return Ok(true);
                }
                Ok(match read_run_entry(r, path, spare)? {
                    Some(e) => {
                        *cur = e;
                        true
                    }
                    None => false,
                })
            }
            Source::Sst {
                files,
                reader,
                src,
                src_path,
                group,
                cur,
                from,
                until,
            } => loop {
                if reader.is_none() {
                    match files.next() {
                        None => return Ok(false),
                        Some(p) => *reader = Some(Box::new(strata::sstable::SstReader::open(&p)?)),
                    }
                }
                let Some(rd) = reader.as_mut() else {
                    continue;
                };
                match rd.next() {
                    None => *reader = None,
                    Some(kv) => {
                        let (key, value) = kv?;
                        let at = group.next(src, src_path)?;
                        if from.as_ref().is_some_and(|f| key < *f) {
                            continue;
                        }
                        // Past the lower bound: the rest is not below it.
                        *from = None;
                        if until.as_ref().is_some_and(|u| key >= *u) {
                            *reader = None;
                            files.by_ref().for_each(drop);
                            return Ok(false);
                        }
                        *cur = run_entry(key, value, at.file.into(), at.line.into(), false);
                        return Ok(true);
                    }
                }
            },
        }
    }
}

/// A binary min-heap of the merge's live sources (their numbers), by
/// their current entries: the smaller key, then the earlier row (input
/// order). The root's entry is the next one out; its source is advanced
/// in place and sifted down once, not popped and pushed again (half the
/// comparisons), and no entry moves or is copied: the heap holds source
/// numbers, the sources their entries. Each source's key is compared
/// first by its 16 bytes after the prefix every key of every source
/// shares, as an integer kept per source (`heads`); whole keys only when
/// those tie.
struct Heap {
    h: Vec<usize>,
    /// Per source: its current key's head ([`key_head`] after `skip`).
    heads: Vec<u128>,
    skip: usize,
}

impl Heap {
    /// The heap of `live` sources (each with a current entry);
    /// `shared[s]`: a prefix length every key of source `s` shares.
    fn new(live: Vec<usize>, sources: &[Source], st: &Stable, shared: &[usize]) -> Heap {
        // Every key of every source shares the prefix that each source's
        // keys share and that its first key shares with the first
        // source's first key.
        let first = live.first().map(|&s| sources[s].current(st).key);
        let skip = live
            .iter()
            .map(|&s| {
                let k = sources[s].current(st).key;
                let own = shared.get(s).copied().unwrap_or(0);
                own.min(crate::batch::common_len(first.unwrap_or_default(), k))
            })
            .min()
            .unwrap_or(0);
        let mut heads = vec![0; sources.len()];
        for &s in &live {
            heads[s] = key_head(sources[s].current(st).key, skip);
        }
        let mut heap = Heap {
            h: live,
            heads,
            skip,
        };
        for i in (0..heap.h.len() / 2).rev() {
            heap.sift_down(i, sources, st);
        }
        heap
    }

    /// Whether source `a`'s current entry comes before source `b`'s.
    #[inline]
    fn less(&self, sources: &[Source], st: &Stable, a: usize, b: usize) -> bool {
        match self.heads[a].cmp(&self.heads[b]) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => {
                let (x, y) = (sources[a].current(st), sources[b].current(st));
                x.key.cmp(y.key).then(x.src.cmp(&y.src)) == Ordering::Less
            }
        }
    }

    fn sift_down(&mut self, mut i: usize, sources: &[Source], st: &Stable) {
        let n = self.h.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                return;
            }
            let c = if l + 1 < n && self.less(sources, st, self.h[l + 1], self.h[l]) {
                l + 1
            } else {
                l
            };
            if !self.less(sources, st, self.h[c], self.h[i]) {
                return;
            }
            self.h.swap(c, i);
            i = c;
        }
    }

    /// The source at the root: its entry is the smallest.
    fn top(&self) -> Option<usize> {
        self.h.first().copied()
    }

    /// The source whose entry is the smallest after the root's.
    fn second(&self, sources: &[Source], st: &Stable) -> Option<usize> {
        match (self.h.get(1), self.h.get(2)) {
            (Some(&a), Some(&b)) => Some(if self.less(sources, st, b, a) { b } else { a }),
            (Some(&a), None) => Some(a),
            _ => None,
        }
    }

    /// Advances source `top` (the root) past the entry just taken, and
    /// restores the heap (dropping the source at its end).
    fn next(&mut self, sources: &mut [Source], st: &Stable, top: usize) -> Result<()> {
        let more = match sources.get_mut(top) {
            Some(s) => s.advance(st)?,
            None => false,
        };
        if more {
            self.heads[top] = key_head(sources[top].current(st).key, self.skip);
        } else {
            self.h.swap_remove(0);
        }
        self.sift_down(0, sources, st);
        Ok(())
    }
}

/// A varint from a stream; `None` at a clean end.
fn read_varint(r: &mut impl Read) -> std::io::Result<Option<u128>> {
    // At most 19 bytes hold a u128 (7 bits each); a longer one is
    // corrupt, which `get_varint` reports. No allocation: this runs four
    // times per entry in the merge.
    let mut bytes = [0u8; 20];
    let mut n = 0;
    loop {
        let mut b = [0u8];
        if r.read(&mut b)? == 0 {
            if n == 0 {
                return Ok(None);
            }
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "varint cut short",
            ));
        }
        bytes[n] = b[0];
        n += 1;
        if b[0] < 0x80 || n == bytes.len() {
            break;
        }
    }
    get_varint(&mut &bytes[..n])
        .map(Some)
        .map_err(|m| std::io::Error::new(std::io::ErrorKind::InvalidData, m))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;
    use rand::{Rng, SeedableRng};

    #[derive(Default)]
    struct Collect(Vec<(Vec<u8>, Vec<u8>)>);

    impl Output for Collect {
        fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
            self.0.push((key.to_vec(), value.to_vec()));
            Ok(())
        }
        fn delete(&mut self, _key: &[u8]) -> Result<()> {
            unreachable!("no deletions here")
        }
    }

    /// The sort orders keys as bytes whatever prefixes the batches share:
    /// keys of one batch share long prefixes that differ from batch to
    /// batch (the part of the keys the sort may skip is what ALL share).
    #[test]
    fn sort_orders_batches_with_different_shared_prefixes() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        for case in 0..200 {
            let mut buf = Vec::new();
            let mut all = Vec::new();
            for b in 0..rng.gen_range(1..5) {
                let prefix: Vec<u8> = (0..rng.gen_range(0..24))
                    .map(|_| rng.gen_range(0..2u8))
                    .collect();
                let mut batch = EntryBatch::default();
                for i in 0..rng.gen_range(0..20) {
                    let mut key = prefix.clone();
                    key.extend((0..rng.gen_range(0..20)).map(|_| rng.gen_range(0..4u8)));
                    key.extend_from_slice(&[b as u8, i as u8]); // distinct
                    batch.push(
                        &key,
                        b"",
                        Src {
                            file: 0,
                            line: all.len() as u64,
                        },
                        false,
                    );
                    all.push(key);
                }
                buf.push(batch);
            }
            let Ok(order) = sort_checked(&buf, false, case % 2 == 0) else {
                panic!("case {case}: a duplicate among distinct keys");
            };
            let got: Vec<&[u8]> = order
                .iter()
                .map(|&(_, b, i)| buf[b as usize].key(i as usize))
                .collect();
            all.sort();
            assert_eq!(
                got,
                all.iter().map(Vec::as_slice).collect::<Vec<_>>(),
                "case {case}"
            );
        }
    }

    /// The radix sort of the heads, with whole keys and sources ordering
    /// ties, gives the comparison sort's order: keys that vary in few
    /// bytes (the radix path), long keys whose heads tie, equal keys in
    /// several batches (ordered by source) and keys that vary in many
    /// bytes (the fallback).
    #[test]
    fn radix_sort_matches_the_comparison_sort() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(21);
        for case in 0..300 {
            let mut buf = Vec::new();
            let varying = rng.gen_range(1..12);
            let tail = rng.gen_range(0..3);
            let mut line = 0;
            for _ in 0..rng.gen_range(1..6) {
                let mut batch = EntryBatch::default();
                for _ in 0..rng.gen_range(0..200) {
                    let mut key = vec![1u8, 2, 3];
                    // Bytes that vary (from a small alphabet, so heads and
                    // keys tie), then constant ones, then a tail after the
                    // 16 head bytes.
                    key.extend((0..varying).map(|_| rng.gen_range(0..3u8)));
                    key.extend([9u8; 10]);
                    key.extend((0..tail).map(|_| rng.gen_range(0..2u8)));
                    line += 1;
                    batch.push(&key, b"", Src { file: 0, line }, false);
                }
                buf.push(batch);
            }
            let Ok(radix) = sort_checked(&buf, true, true) else {
                panic!("case {case}: keep_dups reported a duplicate");
            };
            let Ok(plain) = sort_checked(&buf, true, false) else {
                panic!("case {case}: keep_dups reported a duplicate");
            };
            let view = |o: &[Pair]| -> Vec<(Vec<u8>, u64)> {
                o.iter()
                    .map(|&(_, b, i)| {
                        let b = &buf[b as usize];
                        (b.key(i as usize).to_vec(), b.slots()[i as usize].src.line)
                    })
                    .collect()
            };
            let got = view(&radix);
            let mut want = got.clone();
            want.sort();
            assert_eq!(got, want, "case {case}");
            assert_eq!(got, view(&plain), "case {case}");
        }
    }

    /// A batch's run length bound holds what its entries encode to,
    /// whatever the lengths, flags and sources (varints of one to many
    /// bytes), and is exact when every entry's varints are as long as the
    /// longest's.
    #[test]
    fn run_len_bound_holds_the_encoded_length() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(31);
        for _ in 0..200 {
            let mut b = EntryBatch::default();
            for _ in 0..rng.gen_range(0..20) {
                let k = vec![1u8; rng.gen_range(0..300)];
                let v = vec![2u8; rng.gen_range(0..20_000)];
                // Sources grow through a batch (one chunk's rows).
                let file = b.slots().last().map_or(0, |s| s.src.file);
                let line = b.slots().last().map_or(0, |s| s.src.line);
                let src = Src {
                    file: file
                        + rng.gen_range(0..2)
                            * (rng.gen_range(0..=u32::MAX / 4) >> rng.gen_range(0..32)),
                    line: line + (rng.gen_range(0..=u64::MAX / 64) >> rng.gen_range(0..64)),
                };
                b.push(&k, &v, src, rng.gen_bool(0.2));
            }
            let mut run = Vec::new();
            for i in 0..b.len() {
                encode_run_entry(&mut run, &b, i);
            }
            assert!(run_len_bound(&b) >= run.len());
        }
        // Equal lengths and sources of one varint size: exact.
        let mut b = EntryBatch::default();
        for line in 20_000..20_100 {
            b.push(&[3u8; 25], &[4u8; 300], Src { file: 0, line }, false);
        }
        let mut run = Vec::new();
        for i in 0..b.len() {
            encode_run_entry(&mut run, &b, i);
        }
        assert_eq!(run_len_bound(&b), run.len());
    }

    /// Each in-memory run after the first sorts in the pair arrays the
    /// run before kept (their pages already mapped), and they come back
    /// empty and charged; a spill gives them back.
    #[test]
    fn in_memory_runs_reuse_the_pair_arrays() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = IndexSorter::new(dir.path(), "t", 1 << 20, false, false).with_mem_run_at(1);
        let mut line = 0;
        let mut batch = |n: u64| -> EntryBatch {
            (0..n)
                .map(|k| {
                    line += 1;
                    Entry {
                        key: ((k * 7919 + line) % 100_003).to_be_bytes().to_vec(),
                        value: vec![],
                        src: Src { file: 0, line },
                        delete: false,
                    }
                })
                .collect()
        };
        assert!(s.push(batch(1000)).is_ok());
        assert_eq!(s.mem_runs.len(), 1);
        let (pairs, spare) = (s.pair_arrays.pairs.as_ptr(), s.pair_arrays.spare.as_ptr());
        assert!(s.pair_arrays.pairs.is_empty() && s.pair_arrays.pairs.capacity() >= 1000);
        assert!(s.pair_arrays.spare.capacity() >= 1000);
        assert!(s.push(batch(900)).is_ok());
        assert_eq!(s.mem_runs.len(), 2);
        // The same two allocations (the radix passes may swap them).
        let mut now = [s.pair_arrays.pairs.as_ptr(), s.pair_arrays.spare.as_ptr()];
        now.sort();
        let mut then = [pairs, spare];
        then.sort();
        assert_eq!(now, then);
        assert_eq!(
            s.buf_bytes,
            s.mem_run_bytes + s.pair_arrays.bytes(),
            "runs and arrays charged"
        );
        assert!(s.spill().is_ok());
        assert_eq!((s.buf_bytes, s.pair_arrays.bytes()), (0, 0));
    }

    /// With `keep_dups`, the merge hands every group of equal keys to the
    /// callback in key order, the group in input order, from wherever
    /// its entries lie (in-memory runs, spilled runs, the last buffer),
    /// and writes what the callback keeps: checked against a model.
    #[test]
    fn kept_duplicates_arrive_grouped_in_input_order() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for case in 0..40 {
            let dir = tempfile::tempdir().unwrap();
            let n = rng.gen_range(0..2000u64);
            let distinct = rng.gen_range(1..400u64);
            let keys: Vec<u64> = (0..n).map(|_| rng.gen_range(0..distinct)).collect();
            let mut s = IndexSorter::new(dir.path(), "t", 1 << 20, false, true)
                .with_mem_run_at(rng.gen_range(200..20_000))
                .with_merge_memory(rng.gen_range(0..100_000));
            let mut at = 0;
            for part in keys.chunks(rng.gen_range(1..300)) {
                let es: EntryBatch = part
                    .iter()
                    .enumerate()
                    .map(|(j, &k)| Entry {
                        key: [vec![3u8; (case % 3) * 9], k.to_be_bytes().to_vec()].concat(),
                        value: (at + j).to_string().into_bytes(),
                        src: Src {
                            file: 0,
                            line: (at + j) as u64 + 1,
                        },
                        delete: false,
                    })
                    .collect();
                at += part.len();
                assert!(s.push(es).is_ok(), "case {case}");
                if rng.gen_bool(0.1) {
                    assert!(s.spill().is_ok(), "case {case}");
                }
            }
            let mut groups: Vec<(u64, Vec<u64>)> = Vec::new();
            let mut out = Collect::default();
            let r = s.merge_into(&mut out, |g| {
                let k = u64::from_be_bytes(g[0].key[g[0].key.len() - 8..].try_into().unwrap());
                assert!(g.iter().all(|e| e.key == g[0].key), "case {case}");
                groups.push((k, g.iter().map(|e| e.src.line).collect()));
                // Keep the last row of the group.
                Ok(Keep::Put(g.len() - 1))
            });
            assert!(r.is_ok(), "case {case}");
            let mut want: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
            for (i, &k) in keys.iter().enumerate() {
                want.entry(k).or_default().push(i as u64 + 1);
            }
            let want: Vec<(u64, Vec<u64>)> = want.into_iter().collect();
            assert_eq!(groups, want, "case {case}");
            let written: Vec<(u64, u64)> = out
                .0
                .iter()
                .map(|(k, v)| {
                    let k = u64::from_be_bytes(k[k.len() - 8..].try_into().unwrap());
                    let line: u64 = String::from_utf8(v.clone()).unwrap().parse().unwrap();
                    (k, line + 1)
                })
                .collect();
            let kept: Vec<(u64, u64)> =
                want.iter().map(|(k, l)| (*k, *l.last().unwrap())).collect();
            assert_eq!(written, kept, "case {case}");
        }
    }

    /// In-memory runs, spills of them and the last buffer merge into
    /// exactly the sorted input, and equal keys across runs are still a
    /// duplicate naming both rows.
    #[test]
    fn memory_runs_merge_like_one_sort() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for case in 0..40 {
            let dir = tempfile::tempdir().unwrap();
            let n = rng.gen_range(0..3000u64);
            let mut keys: Vec<u64> = (0..n).collect();
            for i in (1..keys.len()).rev() {
                keys.swap(i, rng.gen_range(0..=i));
            }
            let dup = case % 4 == 3 && n > 10;
            if dup {
                keys[n as usize - 1] = keys[0];
            }
            let entry = |i: usize, k: u64| Entry {
                // A shared prefix longer than 16 bytes in some cases, so
                // ties of the sort's integer head are exercised too.
                key: [vec![7u8; (case % 3) * 9], k.to_be_bytes().to_vec()].concat(),
                value: k.to_string().into_bytes(),
                src: Src {
                    file: 0,
                    line: i as u64 + 1,
                },
                delete: false,
            };
            // Read buffers from 4 KiB (the least) up: spilled entries
            // straddle their ends.
            let mut s = IndexSorter::new(dir.path(), "t", 1 << 20, false, false)
                .with_mem_run_at(rng.gen_range(200..20_000))
                .with_merge_memory(rng.gen_range(0..100_000));
            let mut r = Ok(());
            let mut at = 0;
            for part in keys.chunks(rng.gen_range(1..500)) {
                let es: EntryBatch = part
                    .iter()
                    .enumerate()
                    .map(|(j, &k)| entry(at + j, k))
                    .collect();
                at += part.len();
                // The sorter charges exactly what its batches hold (arena
                // and sort pairs), and a spill gives it all back.
                let before = s.buf_bytes;
                let charge = es.charge();
                r = r.and_then(|_| s.push(es));
                if r.is_ok() && s.mem_runs.is_empty() {
                    assert_eq!(s.buf_bytes, before + charge, "case {case}");
                }
                // Runs, kept pair arrays and batches: all of it charged.
                let batches: usize = s.buf.iter().map(EntryBatch::charge).sum();
                assert!(
                    r.is_err() || s.buf_bytes == s.mem_run_bytes + s.pair_arrays.bytes() + batches,
                    "case {case}"
                );
                if rng.gen_bool(0.1) {
                    r = r.and_then(|_| s.spill());
                    assert!(r.is_err() || s.buf_bytes == 0, "case {case}");
                }
            }
            let mut out = Collect::default();
            let r = r.and_then(|_| s.merge_into(&mut out, |_| Ok(Keep::Put(0))));
            if dup {
                // Both rows, the earlier first (lines are 1 + position),
                // wherever the two copies ended up (runs, spills, the
                // last buffer).
                let Err(SortError::Dup(d)) = r else {
                    panic!("case {case}: no duplicate reported");
                };
                assert_eq!(d.first.line, 1, "case {case}");
                assert_eq!(d.second.line, n, "case {case}");
                assert_eq!(
                    &d.key[d.key.len() - 8..],
                    &keys[0].to_be_bytes(),
                    "case {case}"
                );
                continue;
            }
            assert!(r.is_ok(), "case {case}");
            let mut want: Vec<u64> = keys.clone();
            want.sort_unstable();
            let got: Vec<u64> = out
                .0
                .iter()
                .map(|(k, v)| {
                    let k = u64::from_be_bytes(k[k.len() - 8..].try_into().unwrap());
                    assert_eq!(v, &k.to_string().into_bytes());
                    k
                })
                .collect();
            assert_eq!(got, want, "case {case}");
        }
    }

    /// What was streamed in key order before the order broke merges back
    /// in order with what came after, though the streamed keys differ at
    /// an earlier byte than the later ones do: the merge may skip only
    /// the prefix every key of every source shares.
    #[test]
    fn a_stream_broken_late_merges_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = IndexSorter::new(dir.path(), "t", 64 << 20, true, false);
        let mut line = 0;
        let mut entry = |k: u64| {
            line += 1;
            Entry {
                key: [vec![1u8], k.to_be_bytes().to_vec()].concat(),
                value: vec![b'v'; 64],
                src: Src { file: 0, line },
                delete: false,
            }
        };
        // Even keys from 0xff00 to about 0x592de, enough bytes to be
        // streamed to SSTs: they share 6 bytes (the tag and five zeros).
        let even: Vec<u64> = (0..150_000u64).map(|i| 0xff00 + 2 * i).collect();
        for part in even.chunks(10_000) {
            let batch: EntryBatch = part.iter().map(|&k| entry(k)).collect();
            assert!(s.push(batch).is_ok());
        }
        // All of them, so the buffer holds none when the order breaks.
        assert!(s.spill().is_ok());
        assert!(s.streamed && s.is_in_order());
        // Then odd keys from 0xff01 to 0xffff, out of order: they share 8
        // bytes with each other and with the first streamed key, so only
        // the streamed run's own prefix (6) keeps the merge from skipping
        // byte 6, where 0xffff and the streamed 0x10000 differ.
        let odd: Vec<u64> = (0..128u64).rev().map(|i| 0xff01 + 2 * i).collect();
        let batch: EntryBatch = odd.iter().map(|&k| entry(k)).collect();
        assert!(s.push(batch).is_ok());
        assert!(!s.is_in_order());
        // A merge that compares the wrong bytes hands the SST writer a
        // smaller key after a larger one, which it refuses. Split in
        // three, each range reads its part of the streamed SSTs.
        let files = match s.finish_split(3, || |_: &[EntryRef<'_>]| Ok(Keep::Put(0))) {
            Ok(files) => files,
            Err(SortError::Other(e)) => panic!("{e}"),
            Err(SortError::Dup(d)) => panic!("duplicate {:?}", d.key),
        };
        let mut want: Vec<u64> = even.iter().chain(&odd).copied().collect();
        want.sort_unstable();
        let got: Vec<u64> = files
            .iter()
            .flat_map(|f| strata::sstable::SstReader::open(&f.path).unwrap())
            .map(|kv| u64::from_be_bytes(kv.unwrap().0[1..].try_into().unwrap()))
            .collect();
        assert!(got == want, "{} keys out, {} in", got.len(), want.len());
    }

    /// The keys of an index's SST files, in the order of the files.
    fn keys_of(files: &[SstFile]) -> Vec<Vec<u8>> {
        files
            .iter()
            .flat_map(|f| strata::sstable::SstReader::open(&f.path).unwrap())
            .map(|kv| kv.unwrap().0)
            .collect()
    }

    /// A merge split into key ranges writes exactly what one merge
    /// writes, in key order across its files, and reports the duplicate
    /// one merge reports (the smallest key's), whichever range holds it;
    /// in-memory runs, the last buffer and ranges left empty included.
    #[test]
    fn a_split_merge_writes_what_one_merge_writes() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(13);
        for case in 0..30 {
            let n = rng.gen_range(1..4000u64);
            let mut keys: Vec<u64> = (0..n).map(|k| k * 3).collect();
            for i in (1..keys.len()).rev() {
                keys.swap(i, rng.gen_range(0..=i));
            }
            let dups = case % 3 == 2 && n > 10;
            if dups {
                // Two duplicated keys: the merge names the smaller one.
                keys[n as usize - 1] = keys[0];
                keys[n as usize - 2] = keys[1];
            }
            let ways = rng.gen_range(2..6);
            let mem_run_at = rng.gen_range(200..40_000);
            let parts: Vec<usize> = {
                let mut v = Vec::new();
                let mut left = keys.len();
                while left > 0 {
                    let p = rng.gen_range(1..500).min(left);
                    v.push(p);
                    left -= p;
                }
                v
            };
            let dir = tempfile::tempdir().unwrap();
            let build = |name: &str| {
                let mut s = IndexSorter::new(dir.path(), name, 16 << 10, false, false)
                    .with_mem_run_at(mem_run_at)
                    .with_split_at(0);
                let mut at = 0;
                for &p in &parts {
                    let batch: EntryBatch = keys[at..at + p]
                        .iter()
                        .enumerate()
                        .map(|(j, &k)| Entry {
                            key: [b"pre".to_vec(), k.to_be_bytes().to_vec()].concat(),
                            value: k.to_string().into_bytes(),
                            src: Src {
                                file: 0,
                                line: (at + j) as u64 + 1,
                            },
                            delete: false,
                        })
                        .collect();
                    at += p;
                    s.push(batch)?;
                }
                Ok(s)
            };
            let one = build("one").and_then(|s| s.finish(|_| Ok(Keep::Put(0))));
            let split = build("split").and_then(|s| {
                assert!(s.can_split(), "case {case}");
                s.finish_split(ways, || |_: &[EntryRef<'_>]| Ok(Keep::Put(0)))
            });
            match (one, split) {
                (Ok(a), Ok(b)) => {
                    let (ka, kb) = (keys_of(&a), keys_of(&b));
                    assert_eq!(ka.len(), n as usize, "case {case}");
                    assert!(ka == kb, "case {case}: the split merge wrote other keys");
                }
                (Err(SortError::Dup(a)), Err(SortError::Dup(b))) => {
                    assert!(dups, "case {case}");
                    assert_eq!(a.key, b.key, "case {case}");
                    assert_eq!((a.first, a.second), (b.first, b.second), "case {case}");
                }
                _ => panic!("case {case}: one merge and the split merge disagree"),
            }
        }
    }

    /// Samples are the keys at every `sample_every`-th input position,
    /// however the input is cut into batches, and stay evenly spread
    /// when they are thinned.
    #[test]
    fn samples_follow_input_positions() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(17);
        let n = 600_000u64;
        let mut s = IndexSorter::new(dir.path(), "t", 1 << 20, false, false);
        let mut at = 0u64;
        while at < n {
            let len = rng.gen_range(1..5000).min(n - at);
            let batch: EntryBatch = (at..at + len)
                .map(|k| Entry {
                    key: k.to_be_bytes().to_vec(),
                    value: Vec::new(),
                    src: Src { file: 0, line: k },
                    delete: false,
                })
                .collect();
            s.sample(&batch);
            at += len;
        }
        let every = s.sample_every;
        assert!(every > FIRST_SAMPLE_EVERY, "never thinned");
        let want: Vec<Vec<u8>> = (0..n)
            .step_by(every as usize)
            .map(|k| k.to_be_bytes().to_vec())
            .collect();
        assert!(
            s.samples == want,
            "{} samples, every {every}",
            s.samples.len()
        );
    }

    /// A stream's sources come back from its side file as they went in:
    /// runs of consecutive lines, gaps, other files, lone entries.
    #[test]
    fn stream_sources_round_trip_in_groups() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(23);
        for _ in 0..200 {
            let mut srcs = Vec::new();
            let mut at = Src { file: 0, line: 1 };
            for _ in 0..rng.gen_range(0..300) {
                match rng.gen_range(0..10) {
                    0 => at.line += rng.gen_range(2..1000),
                    1 => {
                        at.file += 1;
                        at.line = rng.gen_range(1..5);
                    }
                    _ => {}
                }
                srcs.push(at);
                at.line += 1;
            }
            let mut bytes = Vec::new();
            // Any cut into batches: groups do not span them.
            let cut = rng.gen_range(0..=srcs.len());
            put_src_groups(&mut bytes, srcs[..cut].iter().copied());
            put_src_groups(&mut bytes, srcs[cut..].iter().copied());
            let mut r = bytes.as_slice();
            let mut group = SrcGroup::default();
            let path = Path::new("side");
            let got: Vec<Src> = (0..srcs.len())
                .map(|_| group.next(&mut r, path).unwrap())
                .collect();
            assert_eq!(got, srcs);
            assert!(r.is_empty(), "bytes left over");
            assert!(group.next(&mut r, path).is_err(), "a source past the end");
        }
    }

    /// `cmp_keys_from` agrees with comparing the whole keys, for keys of
    /// every length up to 24 sharing prefixes of every length, told any
    /// true lower bound of what they share (the 8-byte window moved back
    /// to fit a short key, equal windows, keys that are prefixes of each
    /// other).
    #[test]
    fn cmp_keys_from_agrees_with_whole_key_order() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for _ in 0..200_000 {
            let la = rng.gen_range(0..25usize);
            let lb = rng.gen_range(0..25usize);
            let common = rng.gen_range(0..=la.min(lb));
            let a: Vec<u8> = (0..la).map(|_| rng.gen_range(0..3u8) * 127).collect();
            let mut b: Vec<u8> = (0..lb).map(|_| rng.gen_range(0..3u8) * 127).collect();
            b[..common].copy_from_slice(&a[..common]);
            let known = crate::batch::common_len(&a, &b);
            let from = rng.gen_range(0..=known);
            assert_eq!(
                cmp_keys_from(&a, &b, from),
                a.cmp(&b),
                "{a:?} {b:?} from {from}"
            );
        }
    }

    /// The in-order check over batches whose keys share a long prefix
    /// and differ in their last bytes (W1's primary keys): a key smaller
    /// than the one before it, at any place in a batch or at the start of
    /// the next, ends the in-order path; an equal one is a duplicate
    /// naming both rows.
    #[test]
    fn in_order_check_finds_every_break_and_duplicate() {
        let key = |i: u64| {
            let mut k = b"\x01prefix-shared-by-all:".to_vec();
            k.extend_from_slice(&i.to_be_bytes());
            k
        };
        let src = |line: u64| Src { file: 0, line };
        for at in 1..40u64 {
            for dup in [false, true] {
                let dir = tempfile::tempdir().unwrap();
                let mut sorter = IndexSorter::new(dir.path(), "t", 1 << 20, true, false);
                let mut lines = 0;
                let mut result = Ok(());
                for chunk in 0..4u64 {
                    let mut b = EntryBatch::default();
                    for j in 0..10u64 {
                        let i = chunk * 10 + j;
                        // Entry `at` repeats (or goes below) the one
                        // before; the others are `i + 10`.
                        let k = match (i == at, dup) {
                            (true, true) => at + 9,
                            (true, false) => at + 8,
                            _ => i + 10,
                        };
                        lines += 1;
                        b.push(&key(k), b"v", src(lines), false);
                    }
                    result = result.and_then(|()| sorter.push_only(b));
                }
                if dup {
                    match result {
                        Err(SortError::Dup(d)) => {
                            assert_eq!((d.first.line, d.second.line), (at, at + 1), "at {at}");
                            assert_eq!(d.key, key(at + 9));
                        }
                        _ => panic!("at {at}: no duplicate found"),
                    }
                } else {
                    assert!(result.is_ok(), "at {at}");
                    assert!(!sorter.is_in_order(), "at {at}: the break went unseen");
                }
            }
        }
        // And a stream in order stays in order.
        let dir = tempfile::tempdir().unwrap();
        let mut sorter = IndexSorter::new(dir.path(), "t", 1 << 20, true, false);
        for chunk in 0..4u64 {
            let mut b = EntryBatch::default();
            for j in 0..10u64 {
                b.push(&key(chunk * 10 + j), b"v", src(chunk * 10 + j + 1), false);
            }
            assert!(sorter.push_only(b).is_ok());
        }
        assert!(sorter.is_in_order());
    }
}
