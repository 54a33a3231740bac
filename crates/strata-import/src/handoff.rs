//! A merge's output written on a thread of its own.
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
use crate::sink::{Output, RollingSink, SstFile};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Bytes the handoff's batches hold together at most (about: a batch is
/// handed over once it reaches a quarter of this, and at most four exist:
/// one filling, two queued, one being written).
pub const HANDOFF_MEMORY: usize = SPILL_WRITE_BUFFER;

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
                for s in b.slots() {
                    if s.delete {
                        sink.delete(b.key_of(s))?;
                    } else {
                        sink.put(b.key_of(s), b.value_of(s))?;
                    }
                }
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
