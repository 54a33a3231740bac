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
//! delete), value, varint file, varint line`, in key order.

use crate::batch::EntryBatch;
use crate::encode::row::{get_varint, put_varint};
use crate::error::{Error, Result};
use crate::handoff::StreamWriter;
use crate::parse::{Entry, Src};
use crate::pool::BatchPool;
use crate::sink::{Output, RollingSink, SstFile};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
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
    runs: Vec<PathBuf>,
    /// Sorted runs kept in memory, in the run file format.
    mem_runs: Vec<Vec<u8>>,
    /// Bytes of `mem_runs` (part of `buf_bytes`).
    mem_run_bytes: usize,
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
            last: None,
            sink: RollingSink::new(dir, &format!("{name}-stream"), target_file),
            stream: None,
            streamed_src: None,
            streamed_src_path: dir.join(format!("{name}-stream.src")),
            streamed_run: None,
            runs: Vec::new(),
            mem_runs: Vec::new(),
            mem_run_bytes: 0,
            mem_run_at: usize::MAX,
            spilled_bytes: 0,
            streamed: false,
            keep_dups,
            split_keys: Vec::new(),
            writer_cap: usize::MAX,
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
            for s in batch.slots() {
                let key = batch.key_of(s);
                if let Some((pk, ps)) = prev {
                    match key.cmp(pk) {
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
            }
            if broke {
                self.break_order()?;
            } else if let Some(s) = batch.slots().last() {
                let (lk, src) = self.last.get_or_insert_with(|| (Vec::new(), s.src));
                lk.clear();
                lk.extend_from_slice(batch.key_of(s));
                *src = s.src;
            }
        }
        self.buf_bytes += batch.charge();
        self.buf.push(batch);
        Ok(())
    }

    /// Whether [`Self::upkeep`] has work: a buffer in key order big enough
    /// to stream, or one out of order big enough for an in-memory run.
    pub fn upkeep_due(&self) -> bool {
        if self.in_order {
            self.buf_bytes >= STREAM_AT
        } else {
            self.buf_bytes - self.mem_run_bytes >= self.mem_run_at
        }
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
        if !self.in_order && self.buf_bytes - self.mem_run_bytes >= self.mem_run_at {
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
        let order = sort_checked(&buf, self.keep_dups)?;
        // Room for every entry and about 12 bytes of varints each (the
        // vector grows past that), from the arenas' sizes: no pass in key
        // order over the slots.
        let size: usize = buf.iter().map(|b| b.used() + 12 * b.len()).sum();
        let mut run = Vec::with_capacity(size);
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
        drop(order);
        self.recycle(buf);
        self.mem_run_bytes += run.capacity();
        self.buf_bytes = self.mem_run_bytes;
        self.mem_runs.push(run);
        Ok(())
    }

    /// Writes the in-memory runs to run files (when the budget fills).
    fn spill_mem_runs(&mut self) -> Result<()> {
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
        Ok(())
    }

    /// The input is not in key order after all: what was streamed becomes
    /// a run.
    fn break_order(&mut self) -> Result<()> {
        self.in_order = false;
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
                for s in b.slots() {
                    put_varint(&mut src, s.src.file as u128);
                    put_varint(&mut src, s.src.line as u128);
                }
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
        let order = sort_checked(&buf, self.keep_dups)?;
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
    pub fn finish(
        mut self,
        each: impl FnMut(&[Entry]) -> Result<Keep>,
    ) -> std::result::Result<Vec<SstFile>, SortError> {
        self.reclaim_sink()?;
        let name = format!("{}-out", self.name);
        let fresh = self.new_sink(&name);
        let mut sink = std::mem::replace(&mut self.sink, fresh);
        sink.set_split_keys(std::mem::take(&mut self.split_keys));
        // The merge here, the SST writing on a thread of its own.
        let ((), files) = crate::handoff::write_on_thread(sink, |out| self.merge_into(out, each))?;
        Ok(files)
    }

    /// Like [`Self::finish`], into any output. Only for a sorter that
    /// never spilled or streamed (a direct or batch unit): what was
    /// streamed went to its own SSTs.
    pub fn merge_into(
        mut self,
        out: &mut dyn Output,
        mut each: impl FnMut(&[Entry]) -> Result<Keep>,
    ) -> std::result::Result<(), SortError> {
        let mut group: Vec<Entry> = Vec::with_capacity(1);
        if self.in_order {
            // Strictly increasing keys: every group is one entry.
            for b in std::mem::take(&mut self.buf) {
                for i in 0..b.len() {
                    group.clear();
                    group.push(b.entry(i));
                    write_group(out, &group, each(&group)?)?;
                }
            }
            if let Some(mut w) = self.streamed_src.take() {
                w.flush()
                    .map_err(|e| Error::io(&self.streamed_src_path, e))?;
            }
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let order = sort_checked(&buf, self.keep_dups)?;
        let mut sources: Vec<Source> = Vec::new();
        let mut streamed_files = Vec::new();
        if let Some((files, src)) = self.streamed_run.take() {
            let f = File::open(&src).map_err(|e| Error::io(&src, e))?;
            streamed_files = files.iter().map(|f| f.path.clone()).collect();
            sources.push(Source::Sst {
                files: streamed_files.clone().into_iter(),
                reader: None,
                src: BufReader::new(f),
                src_path: src,
            });
        }
        let read_buffer = self.run_read_buffer(self.runs.len());
        for r in &self.runs {
            let f = File::open(r).map_err(|e| Error::io(r, e))?;
            sources.push(Source::Run {
                r: BufReader::with_capacity(read_buffer, f),
                path: r.clone(),
            });
        }
        for run in std::mem::take(&mut self.mem_runs) {
            sources.push(Source::MemRun(run, 0));
        }
        sources.push(Source::Mem(order.into_iter(), buf));
        let mut heap = BinaryHeap::new();
        // Entries written are reused for the next ones read (their key
        // and value buffers keep their capacity): no allocation per entry.
        let mut spare: Vec<Entry> = Vec::new();
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(e) = s.next(&mut spare)? {
                heap.push(HeapItem(e, i));
            }
        }
        while let Some(HeapItem(e, i)) = heap.pop() {
            if let Some(n) = sources[i].next(&mut spare)? {
                heap.push(HeapItem(n, i));
            }
            if group.first().is_some_and(|g| g.key != e.key) {
                write_group(out, &group, each(&group)?)?;
                spare.append(&mut group);
            }
            if let (Some(first), false) = (group.first(), self.keep_dups) {
                return Err(SortError::Dup(Dup {
                    key: e.key,
                    first: first.src,
                    second: e.src,
                }));
            }
            group.push(e);
        }
        if !group.is_empty() {
            write_group(out, &group, each(&group)?)?;
        }
        for p in streamed_files.iter().chain(self.runs.iter()) {
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
fn prefetch<T: ?Sized>(p: &T) {
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

/// Decodes the entry at `*pos` of an in-memory run (or of a spilled
/// run's read buffer) and moves past it; `None` at its end. The same
/// format as [`read_run_entry`], read from the slice (not byte by byte
/// through `Read`: four varints per entry, which were about a fifth of
/// the merge's CPU in W1's random order).
fn decode_run_entry(run: &[u8], pos: &mut usize, spare: &mut Vec<Entry>) -> Result<Option<Entry>> {
    let Some(mut rest) = run.get(*pos..).filter(|r| !r.is_empty()) else {
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
    let Entry {
        mut key, mut value, ..
    } = reuse(spare);
    let klen = get_varint(&mut rest).map_err(corrupt)?;
    let klen = take(klen, rest)?;
    key.clear();
    key.extend_from_slice(&rest[..klen]);
    rest = &rest[klen..];
    let vlen = get_varint(&mut rest).map_err(corrupt)?;
    let delete = vlen & 1 == 1;
    let n = take(vlen >> 1, rest)?;
    value.clear();
    value.extend_from_slice(&rest[..n]);
    rest = &rest[n..];
    let file = get_varint(&mut rest).map_err(corrupt)?;
    let line = get_varint(&mut rest).map_err(corrupt)?;
    *pos = run.len() - rest.len();
    Ok(Some(run_entry(key, value, file, line, delete)))
}

/// A run entry from its decoded fields (both run readers' last step).
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

/// An entry from the merge's spares (or a new one) to fill.
fn reuse(spare: &mut Vec<Entry>) -> Entry {
    spare.pop().unwrap_or_else(|| Entry {
        key: Vec::new(),
        value: Vec::new(),
        src: Src { file: 0, line: 0 },
        delete: false,
    })
}

/// Bytes of read buffer per spilled run during the merge.
pub const RUN_READ_BUFFER: usize = 64 << 10;

fn write_group(out: &mut dyn Output, group: &[Entry], keep: Keep) -> Result<()> {
    match keep {
        Keep::Put(i) => match group.get(i) {
            Some(e) => out.put(&e.key, &e.value),
            None => Err(Error::invalid("internal: kept entry outside its group")),
        },
        Keep::Delete => match group.first() {
            Some(e) => out.delete(&e.key),
            None => Ok(()),
        },
        Keep::Nothing => Ok(()),
    }
}

/// One entry in the sort's order: (key head, batch, entry in batch).
type Pair = (u128, u32, u32);

/// The buffer's entries in order of key, then source; adjacent equal keys
/// are a duplicate (unless `keep_dups`: the merge's callback decides).
fn sort_checked(buf: &[EntryBatch], keep_dups: bool) -> std::result::Result<Vec<Pair>, SortError> {
    // Comparing entries by their keys in the arenas costs cache misses
    // per comparison; sort (16 key bytes after the shared prefix, batch,
    // entry) pairs instead, comparing whole keys only when those bytes
    // tie. The entries never move: runs are written by following the
    // pairs (the budget charges every entry its pair, `batch::SORT_PAIR`).
    let skip = common_prefix(buf);
    let n: usize = buf.iter().map(EntryBatch::len).sum();
    let mut order: Vec<Pair> = Vec::with_capacity(n);
    for (b, batch) in buf.iter().enumerate() {
        for (i, s) in batch.slots().iter().enumerate() {
            order.push((key_head(batch.key_of(s), skip), b as u32, i as u32));
        }
    }
    let slot = |p: &Pair| &buf[p.1 as usize].slots()[p.2 as usize];
    let key = |p: &Pair| buf[p.1 as usize].key(p.2 as usize);
    order.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| key(a).cmp(key(b)))
            .then_with(|| slot(a).src.cmp(&slot(b).src))
    });
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

/// The length of a prefix every key in `buf` shares (an index's keys
/// share its table and index prefix, and often leading bytes of their
/// first column), from each batch's shared prefix and first key: no pass
/// over the keys (that pass was 2-3% of W1's CPU in random order). It is
/// at most the keys' longest common prefix, which is all the sort needs.
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

struct HeapItem(Entry, usize);

impl PartialEq for HeapItem {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for HeapItem {}
impl PartialOrd for HeapItem {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for HeapItem {
    /// Reversed: the heap pops the smallest key (then earliest source).
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.key.cmp(&self.0.key).then(o.0.src.cmp(&self.0.src))
    }
}

enum Source {
    /// The last buffer, in the sort's order.
    Mem(std::vec::IntoIter<Pair>, Vec<EntryBatch>),
    /// A sorted run in memory and the offset of its next entry.
    MemRun(Vec<u8>, usize),
    Run {
        r: BufReader<File>,
        path: PathBuf,
    },
    Sst {
        files: std::vec::IntoIter<PathBuf>,
        reader: Option<Box<strata::sstable::SstReader>>,
        src: BufReader<File>,
        src_path: PathBuf,
    },
}

impl Source {
    /// The next entry, filled into one of `spare` when there is one.
    fn next(&mut self, spare: &mut Vec<Entry>) -> Result<Option<Entry>> {
        match self {
            Source::Mem(it, buf) => Ok(it.next().map(|(_, b, i)| {
                let (batch, i) = (&buf[b as usize], i as usize);
                let mut e = reuse(spare);
                e.key.clear();
                e.key.extend_from_slice(batch.key(i));
                e.value.clear();
                e.value.extend_from_slice(batch.value(i));
                let s = &batch.slots()[i];
                (e.src, e.delete) = (s.src, s.delete);
                e
            })),
            Source::MemRun(run, pos) => decode_run_entry(run, pos, spare),
            Source::Run { r, path } => {
                // An entry whole in the read buffer is decoded from the
                // slice; one that straddles the buffer's end (or a
                // corrupt one, for its error) is read through `Read`.
                let buffered = r.fill_buf().map_err(|e| Error::io(&*path, e))?;
                let mut pos = 0;
                if let Ok(Some(e)) = decode_run_entry(buffered, &mut pos, spare) {
                    r.consume(pos);
                    return Ok(Some(e));
                }
                read_run_entry(r, path, spare)
            }
            Source::Sst {
                files,
                reader,
                src,
                src_path,
            } => loop {
                if reader.is_none() {
                    match files.next() {
                        None => return Ok(None),
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
                        let missing = || {
                            Error::invalid(format!(
                                "{}: fewer sources than entries",
                                src_path.display()
                            ))
                        };
                        let file = read_varint(src)
                            .map_err(|e| Error::io(&*src_path, e))?
                            .ok_or_else(missing)?;
                        let line = read_varint(src)
                            .map_err(|e| Error::io(&*src_path, e))?
                            .ok_or_else(missing)?;
                        return Ok(Some(Entry {
                            key,
                            value,
                            src: Src {
                                file: file as u32,
                                line: line as u64,
                            },
                            delete: false,
                        }));
                    }
                }
            },
        }
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
            let Ok(order) = sort_checked(&buf, false) else {
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
                if rng.gen_bool(0.1) {
                    r = r.and_then(|_| s.spill());
                    assert!(r.is_err() || s.buf_bytes == 0, "case {case}");
                }
            }
            let mut out = Collect::default();
            let r = r.and_then(|_| s.merge_into(&mut out, |_| Ok(Keep::Put(0))));
            if dup {
                assert!(matches!(r, Err(SortError::Dup(_))), "case {case}");
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
}
