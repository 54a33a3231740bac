//! SST writing on threads of its own: a merge's output, and an index
//! streamed in key order.
//!
//! Owns [`StreamWriter`]: while an index arrives in key order, its
//! buffered batches go straight to SSTs; the batches themselves (no copy)
//! move to a thread that owns the stream's [`RollingSink`], writes their
//! entries and hands them back to the pool. Before, the calling thread
//! wrote them itself between taking parsed chunks, and on W1 in key order
//! it was the busiest thread of the import (about 0.49 CPU seconds
//! against 0.27-0.29 for each parse worker), so the workers waited for it.
//! One thread was then the busiest of the import again (W1 in key order:
//! 461 samples against 259 and 208 for the parse workers), so the stream
//! is written by [`STREAM_LANES`] threads ("lanes"), each taking
//! [`SEGMENT_BATCHES`] consecutive batches (a segment) in turn: a lane
//! ends its open file when a new segment of its starts, so its files never
//! span a segment and the lanes' files, ordered by segment, are disjoint
//! and in key order (`RollingSink::join`, on `close`). Each lane's writer
//! gets its share of the stream's memory cap. Per lane at most one batch
//! waits in its queue and one is being written, and one waits to be
//! queued ([`stream_batches`]; the budget counts them with the chunks in
//! flight, and streams with one lane when its chunks are too small for
//! segments worth a file each, `budget::LANE_MIN_CHUNK`).
//!
//! Owns [`write_on_thread`]: the merge (reading runs, the heap,
//! duplicate checks) runs on the calling thread and hands its entries, in
//! small batches, to a thread that runs the [`RollingSink`] (block
//! building, compression, checksums, filter, the file writes). The final
//! merge of an index is one stream that nothing else overlaps (W1 in
//! random order: its primary index alone, about a third of the import's
//! wall time, with the second core idle); split in two, both cores work
//! on it.
//!
//! Invariants: entries reach the sink in the order the merge gave them;
//! the batches in existence hold at most about [`HANDOFF_MEMORY`] (it is
//! the spill write buffer's share of the budget, idle during the merge);
//! if the sink fails, its error is the one returned (the merge then only
//! sees that the writer stopped).

use crate::batch::EntryBatch;
use crate::budget::SPILL_WRITE_BUFFER;
use crate::error::{Error, Result};
use crate::parse::Src;
use crate::pool::BatchPool;
use crate::sink::{Output, RollingSink, SstFile};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

/// Bytes the handoff's batches hold together at most (about: a batch is
/// handed over once it reaches a quarter of this, and at most four exist:
/// one filling, two queued, one being written).
pub const HANDOFF_MEMORY: usize = SPILL_WRITE_BUFFER;

/// Chunks' batches an in-order stream written by `lanes` lanes holds
/// outside its sorter's buffer: per lane one being written and one
/// queued, and one waiting to be queued.
pub const fn stream_batches(lanes: usize) -> usize {
    2 * lanes + 1
}

/// SST writer threads of an in-order stream at most (see the module
/// documentation; `budget::Budget::stream_lanes` picks how many).
pub const STREAM_LANES: usize = 2;

/// Consecutive batches of an in-order stream one lane writes before the
/// next lane takes the stream: with one batch being written and one
/// queued per lane, two keep every lane busy while the stream is faster
/// than one writer.
pub const SEGMENT_BATCHES: u64 = 2;

/// Batches queued between the merge and the writer.
const DEPTH: usize = 2;

/// Bytes of entries (keys, values, slots) after which a batch is handed
/// over.
const BATCH: usize = HANDOFF_MEMORY / 4;

/// Bytes a slot takes (counted in [`BATCH`]).
const SLOT: usize = std::mem::size_of::<crate::batch::Slot>();

/// An empty batch with room for a full one of small entries.
fn new_batch() -> EntryBatch {
    EntryBatch::with_capacity(BATCH, BATCH / 64)
}

/// Writes `batch`'s entries (in key order, after the sink's last) to
/// `sink`: the writer threads' one loop.
fn write_batch(sink: &mut RollingSink, batch: &EntryBatch) -> Result<()> {
    for s in batch.slots() {
        if s.delete {
            sink.delete(batch.key_of(s))?;
        } else {
            sink.put(batch.key_of(s), batch.value_of(s))?;
        }
    }
    Ok(())
}

/// Runs `merge` with an [`Output`] whose entries `sink` writes on another
/// thread; returns the merge's result (its error, or the sink's error if
/// the sink failed) and the sink's files.
pub fn write_on_thread<T, E: From<Error>>(
    mut sink: RollingSink,
    merge: impl FnOnce(&mut dyn Output) -> std::result::Result<T, E>,
) -> std::result::Result<(T, Vec<SstFile>), E> {
    std::thread::scope(|sc| {
        let (tx, rx) = sync_channel::<EntryBatch>(DEPTH);
        let (back_tx, back_rx) = sync_channel::<EntryBatch>(1);
        let writer = sc.spawn(move || -> Result<Vec<SstFile>> {
            for mut b in rx {
                write_batch(&mut sink, &b)?;
                b.clear();
                let _ = back_tx.try_send(b);
            }
            sink.finish()
        });
        let mut out = Handoff {
            tx: Some(tx),
            back: back_rx,
            cur: new_batch(),
            filled: 0,
        };
        let merged = merge(&mut out).and_then(|t| out.flush().map(|()| t).map_err(E::from));
        // Closes the queue: the writer finishes its files and returns.
        drop(out);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(Error::invalid("internal: the SST writer thread panicked")));
        match (merged, written) {
            (Ok(t), Ok(files)) => Ok((t, files)),
            (_, Err(e)) => Err(E::from(e)),
            (Err(e), Ok(_)) => Err(e),
        }
    })
}

/// An in-order stream's sinks, running on threads of their own (see the
/// module documentation). Dropping it waits for the threads.
pub struct StreamWriter {
    lanes: Vec<Lane>,
    /// Batches sent so far.
    sent: u64,
}

/// One writer thread of a stream: the batches of every `lanes.len()`-th
/// segment.
struct Lane {
    tx: Option<SyncSender<(EntryBatch, Option<u64>)>>,
    handle: Option<std::thread::JoinHandle<Result<RollingSink>>>,
}

impl StreamWriter {
    /// Moves `sink` to a new thread, and `lanes - 1` siblings of it (each
    /// under a `1 / lanes` share of its memory cap) to threads of
    /// their own; batches written go back to `pool` as the given index's.
    pub fn start(
        sink: RollingSink,
        pool: Option<(Arc<BatchPool>, usize)>,
        lanes: usize,
    ) -> Result<StreamWriter> {
        let lanes = lanes.max(1);
        let cap = sink.memory_cap() / lanes;
        let mut sinks = Vec::with_capacity(lanes);
        for l in 1..lanes {
            sinks.push(
                sink.sibling(&format!("{}-{l}", sink.name()))
                    .with_memory_cap(cap),
            );
        }
        sinks.insert(0, sink.with_memory_cap(cap));
        let mut w = StreamWriter {
            lanes: Vec::with_capacity(lanes),
            sent: 0,
        };
        for mut sink in sinks {
            let (tx, rx) = sync_channel::<(EntryBatch, Option<u64>)>(1);
            let pool = pool.clone();
            let handle = std::thread::Builder::new()
                .name("strata-import-sst".into())
                .spawn(move || -> Result<RollingSink> {
                    for (b, segment) in rx {
                        if let Some(seg) = segment {
                            sink.start_segment(seg)?;
                        }
                        write_batch(&mut sink, &b)?;
                        if let Some((pool, index)) = &pool {
                            pool.give(*index, b);
                        }
                    }
                    Ok(sink)
                })
                .map_err(|e| Error::invalid(format!("starting an SST writer thread: {e}")))?;
            w.lanes.push(Lane {
                tx: Some(tx),
                handle: Some(handle),
            });
        }
        Ok(w)
    }

    /// Queues `batch` (its entries in key order, after the ones before)
    /// on its segment's lane; waits while one is already queued there.
    pub fn send(&mut self, batch: EntryBatch) -> Result<()> {
        let seg = self.sent / SEGMENT_BATCHES;
        // One lane writes the stream as one run of files, cut by size only.
        let first = self.sent.is_multiple_of(SEGMENT_BATCHES) && self.lanes.len() > 1;
        self.sent += 1;
        let lane = (seg % self.lanes.len() as u64) as usize;
        let sent = self.lanes[lane]
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send((batch, first.then_some(seg))).is_ok());
        if sent {
            return Ok(());
        }
        // A writer stopped: its error.
        Err(match self.stop() {
            Err(e) => e,
            Ok(_) => Error::invalid("internal: the SST writer stopped"),
        })
    }

    /// Waits for every queued batch to be written and gives back one sink
    /// holding every lane's files in key order (`RollingSink::join`).
    pub fn close(mut self) -> Result<RollingSink> {
        self.stop()
    }

    fn stop(&mut self) -> Result<RollingSink> {
        for l in &mut self.lanes {
            drop(l.tx.take());
        }
        let mut sinks = Vec::with_capacity(self.lanes.len());
        let mut first_err = None;
        for l in &mut self.lanes {
            let r = match l.handle.take().map(std::thread::JoinHandle::join) {
                Some(Ok(r)) => r,
                Some(Err(_)) => Err(Error::invalid("internal: the SST writer thread panicked")),
                None => Err(Error::invalid(
                    "internal: the SST writer was already stopped",
                )),
            };
            match r {
                Ok(s) => sinks.push(s),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        let cap = sinks
            .iter()
            .fold(0usize, |a, s| a.saturating_add(s.memory_cap()));
        RollingSink::join(sinks).map(|s| s.with_memory_cap(cap))
    }
}

impl Drop for StreamWriter {
    fn drop(&mut self) {
        for l in &mut self.lanes {
            drop(l.tx.take());
        }
        for l in &mut self.lanes {
            if let Some(h) = l.handle.take() {
                let _ = h.join();
            }
        }
    }
}

/// The merge's side: fills a batch, hands it over when full.
struct Handoff {
    tx: Option<SyncSender<EntryBatch>>,
    back: Receiver<EntryBatch>,
    cur: EntryBatch,
    /// Bytes `cur` holds (its entries' keys, values and slots).
    filled: usize,
}

impl Handoff {
    fn push(&mut self, key: &[u8], value: &[u8], delete: bool) -> Result<()> {
        self.cur.push(key, value, Src { file: 0, line: 0 }, delete);
        self.filled += key.len() + value.len() + SLOT;
        if self.filled >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the current batch to the writer.
    fn flush(&mut self) -> Result<()> {
        if self.cur.is_empty() {
            return Ok(());
        }
        let next = self.back.try_recv().unwrap_or_else(|_| new_batch());
        let full = std::mem::replace(&mut self.cur, next);
        self.filled = 0;
        match &self.tx {
            Some(tx) if tx.send(full).is_ok() => Ok(()),
            _ => Err(Error::invalid("internal: the SST writer stopped")),
        }
    }
}

impl Output for Handoff {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.push(key, value, false)
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.push(key, &[], true)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    /// Every entry (across many batches and files) reaches the files in
    /// order, and the merge's own result comes back.
    #[test]
    fn entries_reach_the_files_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let sink = RollingSink::new(dir.path(), "t", 64 << 10);
        let n = 20_000u32;
        let (t, files) = write_on_thread(sink, |out| -> Result<u32> {
            for i in 0..n {
                out.put(format!("k{i:08}").as_bytes(), &i.to_le_bytes())?;
            }
            Ok(42)
        })
        .unwrap();
        assert_eq!(t, 42);
        assert!(files.len() > 1, "{files:?}");
        let mut got = Vec::new();
        for f in &files {
            for kv in strata::sstable::SstReader::open(&f.path).unwrap() {
                got.push(kv.unwrap());
            }
        }
        let want: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
            .map(|i| (format!("k{i:08}").into_bytes(), i.to_le_bytes().to_vec()))
            .collect();
        assert!(
            got == want,
            "{} entries read back, {} written",
            got.len(),
            n
        );
    }

    /// The keys of `files`, in the order given.
    fn keys_of(files: &[SstFile]) -> Vec<Vec<Vec<u8>>> {
        files
            .iter()
            .map(|f| {
                strata::sstable::SstReader::open(&f.path)
                    .unwrap()
                    .map(|kv| kv.unwrap().0)
                    .collect()
            })
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

        /// An in-order stream written by several lanes comes back as one
        /// sink whose files, in the order given, hold exactly the entries
        /// sent, in order: no file empty, none overlapping the next (each
        /// file's last key before the next one's first), no entry lost or
        /// repeated; and the joined sink writes on after them. Batches of
        /// every size (empty ones too), 1-3 lanes, target sizes that cut
        /// files inside segments as well.
        #[test]
        fn lanes_write_disjoint_files_in_key_order(
            sizes in proptest::collection::vec(0usize..400, 0..16),
            lanes in 1usize..4,
            target in proptest::sample::select(vec![300u64, 8 << 10, 1 << 30]),
            more in 0u32..50,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let sink = RollingSink::new(dir.path(), "s", target);
            let mut w = StreamWriter::start(sink, None, lanes).unwrap();
            let mut want = Vec::new();
            let mut k = 0u32;
            for n in &sizes {
                let mut b = EntryBatch::with_capacity(1 << 10, 16);
                for _ in 0..*n {
                    let key = format!("k{k:08}").into_bytes();
                    b.push(&key, &k.to_le_bytes(), Src { file: 0, line: k as u64 }, false);
                    want.push(key);
                    k += 1;
                }
                w.send(b).unwrap();
            }
            let mut sink = w.close().unwrap();
            for _ in 0..more {
                let key = format!("k{k:08}").into_bytes();
                sink.add(&key, b"after").unwrap();
                want.push(key);
                k += 1;
            }
            let files = sink.finish().unwrap();
            let keys = keys_of(&files);
            for (f, ks) in files.iter().zip(&keys) {
                proptest::prop_assert!(!ks.is_empty(), "empty file {:?}", f.path);
                proptest::prop_assert_eq!(f.entries, ks.len() as u64);
            }
            for pair in keys.windows(2) {
                proptest::prop_assert!(
                    pair[0].last() < pair[1].first(),
                    "files overlap or out of order"
                );
            }
            let got: Vec<Vec<u8>> = keys.into_iter().flatten().collect();
            proptest::prop_assert_eq!(got.len(), want.len());
            proptest::prop_assert!(got == want, "entries lost, repeated or out of order");
        }
    }

    /// A lane switch without `start_segment` (two lanes' files tagged
    /// with one segment) is refused by the join, not passed on as files
    /// that may overlap.
    #[test]
    fn join_refuses_two_lanes_in_one_segment() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = RollingSink::new(dir.path(), "a", 1 << 20);
        let mut b = a.sibling("b");
        a.start_segment(3).unwrap();
        b.start_segment(3).unwrap();
        a.add(b"k1", b"v").unwrap();
        b.add(b"k2", b"v").unwrap();
        let e = RollingSink::join(vec![a, b]).err().unwrap().to_string();
        assert!(e.contains("one segment"), "{e}");
    }

    /// Deletions go through as deletions (counted in the files' entries,
    /// not read back as values).
    #[test]
    fn deletions_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let sink = RollingSink::new(dir.path(), "t", 1 << 20);
        let ((), files) = write_on_thread(sink, |out| -> Result<()> {
            for i in 0..1000u32 {
                let k = format!("k{i:08}");
                if i % 2 == 0 {
                    out.delete(k.as_bytes())?;
                } else {
                    out.put(k.as_bytes(), b"v")?;
                }
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(files.iter().map(|f| f.entries).sum::<u64>(), 1000);
        let first = strata::sstable::SstReader::open(&files[0].path)
            .unwrap()
            .next()
            .unwrap();
        assert!(first.is_err(), "the first entry is a deletion, not a value");
    }

    /// A sink that fails (keys out of order) is the error returned, and
    /// the merge is stopped rather than left blocked.
    #[test]
    fn the_sinks_error_is_returned() {
        let dir = tempfile::tempdir().unwrap();
        let sink = RollingSink::new(dir.path(), "t", 64 << 10);
        let r = write_on_thread(sink, |out| -> Result<()> {
            out.put(b"b", b"1")?;
            out.put(b"a", b"2")?;
            for i in 0..100_000u32 {
                out.put(format!("z{i:08}").as_bytes(), b"x")?;
            }
            Ok(())
        });
        let e = r.err().unwrap().to_string();
        assert!(e.contains("out of order"), "{e}");
    }
}
