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
//! At most one batch waits in its queue, one is being written and one
//! waits to be queued ([`STREAM_BATCHES`]; the budget counts them with
//! the chunks in flight).
//!
//! Owns [`write_on_thread`]: the merge (reading runs, the heap,
//! duplicate checks) runs on the calling thread and hands its entries, in
//! small batches, to a thread that runs the [`RollingSink`] (block
//! building, compression, checksums, filter, the file writes). The final
//! merge of an index is one stream that nothing else overlaps (W1 in
//! random order: its primary index alone, about a third of the import's
//! wall time, with the second core idle); split in two, both cores work
//! on it. A merge whose entries lie in memory that outlives the writer
//! (runs kept in memory, the last buffer) lends them ([`Lend`],
//! [`write_on_thread_with`]): the batch carries the two slices, not a
//! copy; other entries are copied into the batch.
//!
//! Invariants: entries reach the sink in the order the merge gave them,
//! lent and copied alike; lent memory is not touched after the writer
//! thread is joined (the scope of `write_on_thread_with` ends before
//! `'s` does); the batches in existence hold at most about the memory
//! given ([`HANDOFF_MEMORY`] by default: the spill write buffer's share
//! of the budget, idle during the merge) besides what they lend;
//! if the sink fails, its error is the one returned (the merge then only
//! sees that the writer stopped).

use crate::batch::EntryBatch;
use crate::budget::SPILL_WRITE_BUFFER;
use crate::error::{Error, Result};
use crate::parse::Src;
use crate::pool::BatchPool;
use crate::sink::{Output, RollingSink, SstFile};
use crate::sort::prefetch;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

/// Bytes the handoff's batches hold together at most (about: a batch is
/// handed over once it reaches a quarter of this, and at most four exist:
/// one filling, two queued, one being written).
pub const HANDOFF_MEMORY: usize = SPILL_WRITE_BUFFER;

/// Chunks' batches an in-order stream holds outside its sorter's buffer:
/// one being written, one queued, one waiting to be queued.
pub const STREAM_BATCHES: usize = 3;

/// Batches queued between the merge and the writer.
const DEPTH: usize = 2;

/// Bytes a slot takes (counted in a batch's fill: a batch is handed over
/// once its keys, values and slots reach a quarter of the hand-off's
/// memory).
const SLOT: usize = std::mem::size_of::<crate::batch::Slot>();

/// Writes `batch`'s entries (in key order, after the sink's last) to
/// `sink`: the stream writer's loop.
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

/// An [`Output`] that can also take entries lent for `'s`: memory that
/// outlives the output's writer (a merge's runs in memory and last
/// buffer), so they are handed on without a copy.
pub trait Lend<'s>: Output {
    /// Writes `key` = `value`, both valid for `'s`.
    fn put_lent(&mut self, key: &'s [u8], value: &'s [u8]) -> Result<()>;
}

impl<'s> Lend<'s> for RollingSink {
    fn put_lent(&mut self, key: &'s [u8], value: &'s [u8]) -> Result<()> {
        self.put(key, value)
    }
}

/// One entry of a hand-off batch.
enum Item<'s> {
    /// A put of memory lent for `'s`.
    Lent(&'s [u8], &'s [u8]),
    /// The next entry of the batch's own copies.
    Copied,
}

/// Entries on their way from the merge to the writer, in key order.
struct Batch<'s> {
    items: Vec<Item<'s>>,
    copies: EntryBatch,
}

impl<'s> Batch<'s> {
    /// An empty batch with room for a full one (`bytes`) of small entries.
    fn new(bytes: usize) -> Batch<'s> {
        Batch {
            items: Vec::with_capacity(bytes / 64),
            copies: EntryBatch::with_capacity(bytes, bytes / 64),
        }
    }

    fn clear(&mut self) {
        self.items.clear();
        self.copies.clear();
    }

    /// Writes the entries to `sink`.
    fn write(&self, sink: &mut RollingSink) -> Result<()> {
        let mut copies = self.copies.slots().iter();
        for (i, item) in self.items.iter().enumerate() {
            // Lent entries lie in the merge's runs, one stream per run:
            // their lines are asked for a few entries ahead.
            if let Some(Item::Lent(key, value)) = self.items.get(i + LEND_AHEAD) {
                prefetch(*key);
                for line in value.chunks(64) {
                    prefetch(line);
                }
            }
            match item {
                Item::Lent(key, value) => sink.put(key, value)?,
                Item::Copied => {
                    let s = copies.next().ok_or_else(|| {
                        Error::invalid("internal: a hand-off batch lost a copied entry")
                    })?;
                    if s.delete {
                        sink.delete(self.copies.key_of(s))?;
                    } else {
                        sink.put(self.copies.key_of(s), self.copies.value_of(s))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// How many entries ahead the writer asks for a lent entry's bytes.
const LEND_AHEAD: usize = 4;

/// Bytes a lent entry takes in a batch (counted in its fill).
const ITEM: usize = std::mem::size_of::<Item<'static>>();

/// Runs `merge` with an [`Output`] whose entries `sink` writes on another
/// thread; returns the merge's result (its error, or the sink's error if
/// the sink failed) and the sink's files.
pub fn write_on_thread<T, E: From<Error>>(
    sink: RollingSink,
    merge: impl FnOnce(&mut dyn Output) -> std::result::Result<T, E>,
) -> std::result::Result<(T, Vec<SstFile>), E> {
    write_on_thread_with(sink, HANDOFF_MEMORY, |out: &mut dyn Lend<'_>| merge(out))
}

/// [`write_on_thread`] for a merge that lends entries valid for `'s`
/// ([`Lend`]), with the hand-off's batches holding about `memory` bytes
/// together (besides what they lend) instead of [`HANDOFF_MEMORY`] (a
/// merge split into ranges gives each range a share).
pub fn write_on_thread_with<'s, T, E: From<Error>>(
    mut sink: RollingSink,
    memory: usize,
    merge: impl FnOnce(&mut dyn Lend<'s>) -> std::result::Result<T, E>,
) -> std::result::Result<(T, Vec<SstFile>), E> {
    let batch = (memory / 4).max(4 << 10);
    std::thread::scope(|sc| {
        let (tx, rx) = sync_channel::<Batch<'s>>(DEPTH);
        let (back_tx, back_rx) = sync_channel::<Batch<'s>>(1);
        let writer = sc.spawn(move || -> Result<Vec<SstFile>> {
            for mut b in rx {
                b.write(&mut sink)?;
                b.clear();
                let _ = back_tx.try_send(b);
            }
            sink.finish()
        });
        let mut out = Handoff {
            tx: Some(tx),
            back: back_rx,
            cur: Batch::new(batch),
            filled: 0,
            batch,
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

/// An in-order stream's sink, running on its own thread (see the module
/// documentation). Dropping it waits for the thread.
pub struct StreamWriter {
    tx: Option<SyncSender<EntryBatch>>,
    handle: Option<std::thread::JoinHandle<Result<RollingSink>>>,
}

impl StreamWriter {
    /// Moves `sink` to a new thread; batches written go back to `pool` as
    /// the given index's.
    pub fn start(
        mut sink: RollingSink,
        pool: Option<(Arc<BatchPool>, usize)>,
    ) -> Result<StreamWriter> {
        let (tx, rx) = sync_channel::<EntryBatch>(1);
        let handle = std::thread::Builder::new()
            .name("strata-import-sst".into())
            .spawn(move || -> Result<RollingSink> {
                for b in rx {
                    write_batch(&mut sink, &b)?;
                    if let Some((pool, index)) = &pool {
                        pool.give(*index, b);
                    }
                }
                Ok(sink)
            })
            .map_err(|e| Error::invalid(format!("starting an SST writer thread: {e}")))?;
        Ok(StreamWriter {
            tx: Some(tx),
            handle: Some(handle),
        })
    }

    /// Queues `batch` (its entries in key order, after the ones before);
    /// waits while one is already queued.
    pub fn send(&mut self, batch: EntryBatch) -> Result<()> {
        match &self.tx {
            Some(tx) if tx.send(batch).is_ok() => Ok(()),
            // The writer stopped: its error.
            _ => Err(match self.stop() {
                Err(e) => e,
                Ok(_) => Error::invalid("internal: the SST writer stopped"),
            }),
        }
    }

    /// Waits for every queued batch to be written and gives the sink back.
    pub fn close(mut self) -> Result<RollingSink> {
        self.stop()
    }

    fn stop(&mut self) -> Result<RollingSink> {
        drop(self.tx.take());
        match self.handle.take().map(std::thread::JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(Error::invalid("internal: the SST writer thread panicked")),
            None => Err(Error::invalid(
                "internal: the SST writer was already stopped",
            )),
        }
    }
}

impl Drop for StreamWriter {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The merge's side: fills a batch, hands it over when full.
struct Handoff<'s> {
    tx: Option<SyncSender<Batch<'s>>>,
    back: Receiver<Batch<'s>>,
    cur: Batch<'s>,
    /// Bytes `cur` holds (its copies' keys, values and slots, and its
    /// items).
    filled: usize,
    /// Bytes after which `cur` is handed over.
    batch: usize,
}

impl<'s> Handoff<'s> {
    fn push(&mut self, key: &[u8], value: &[u8], delete: bool) -> Result<()> {
        self.cur
            .copies
            .push(key, value, Src { file: 0, line: 0 }, delete);
        self.cur.items.push(Item::Copied);
        self.filled += key.len() + value.len() + SLOT + ITEM;
        self.flush_if_full()
    }

    fn flush_if_full(&mut self) -> Result<()> {
        if self.filled >= self.batch {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the current batch to the writer.
    fn flush(&mut self) -> Result<()> {
        if self.cur.items.is_empty() {
            return Ok(());
        }
        let next = self
            .back
            .try_recv()
            .unwrap_or_else(|_| Batch::new(self.batch));
        let full = std::mem::replace(&mut self.cur, next);
        self.filled = 0;
        match &self.tx {
            Some(tx) if tx.send(full).is_ok() => Ok(()),
            _ => Err(Error::invalid("internal: the SST writer stopped")),
        }
    }
}

impl Output for Handoff<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.push(key, value, false)
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.push(key, &[], true)
    }
}

impl<'s> Lend<'s> for Handoff<'s> {
    fn put_lent(&mut self, key: &'s [u8], value: &'s [u8]) -> Result<()> {
        self.cur.items.push(Item::Lent(key, value));
        self.filled += ITEM;
        self.flush_if_full()
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

    /// Entries lent and entries copied, interleaved in runs of random
    /// lengths, reach the files in the order given, with their values
    /// (a lost or reordered copy, or a lent entry written twice, fails).
    #[test]
    fn lent_and_copied_entries_keep_their_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let dir = tempfile::tempdir().unwrap();
        let sink = RollingSink::new(dir.path(), "t", 64 << 10);
        let n = 30_000u32;
        let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("k{i:08}").into_bytes()).collect();
        let values: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; (i % 50) as usize]).collect();
        let lend: Vec<bool> = {
            let mut v = Vec::new();
            while v.len() < n as usize {
                let run = rng.gen_range(1..100);
                let lent = rng.gen_bool(0.5);
                v.extend(std::iter::repeat_n(lent, run));
            }
            v
        };
        let ((), files) = write_on_thread_with(sink, 16 << 10, |out| -> Result<()> {
            for i in 0..n as usize {
                if lend[i] {
                    out.put_lent(&keys[i], &values[i])?;
                } else {
                    out.put(&keys[i], &values[i])?;
                }
            }
            Ok(())
        })
        .unwrap();
        let got: Vec<(Vec<u8>, Vec<u8>)> = files
            .iter()
            .flat_map(|f| strata::sstable::SstReader::open(&f.path).unwrap())
            .map(|kv| kv.unwrap())
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = keys.into_iter().zip(values).collect();
        assert!(
            got == want,
            "{} entries read back, {} written",
            got.len(),
            n
        );
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
        // `SstReader` reads files of puts only, and says so at open.
        let e = strata::sstable::SstReader::open(&files[0].path).err();
        assert!(
            matches!(e, Some(strata::Error::NotSupported(_))),
            "a file holding deletions is not one SstReader reads: {e:?}"
        );
        let t = strata::sstable::TableFile::open(&files[0].path).unwrap();
        let first = t.entries().next().unwrap().unwrap();
        assert_eq!(
            (first.user_key.as_slice(), first.kind),
            (&b"k00000000"[..], 0),
            "the first entry is a deletion, not a value"
        );
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
        assert!(e.contains("keys must be strictly increasing"), "{e}");
    }
}
