//! Rolling SST writer: sorted entries in, ingestible files out.
//!
//! Owns the files of one output stream. Keys must arrive strictly
//! increasing (checked once per key, by the SST writer within a file and
//! here across a cut: an out-of-order key is an error, never a corrupt
//! file). A file is cut once it reaches the target size, and only
//! between two different user keys, so no key spans two files and the
//! files of one stream never overlap (ingestion requires it). With split
//! keys (`Db::ingest_split_keys`), a file is also cut before the first key
//! at or past each split, so each file overlaps as little of the tree as
//! the engine can arrange. An entry is a put or a deletion (the stale index
//! entry of a replaced row).
//!
//! [`Output`] is where a merge writes: a [`RollingSink`] (the pipeline
//! and direct modes) or a write batch (the batch mode).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use strata::{SstOptions, SstWriter};

/// A finished output file.
#[derive(Clone, Debug)]
pub struct SstFile {
    /// Where it is.
    pub path: PathBuf,
    /// Bytes on disk.
    pub size: u64,
    /// Entries in it.
    pub entries: u64,
}

/// Where a merge writes its entries, in strictly increasing key order.
pub trait Output {
    /// Writes `key` = `value`.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Deletes `key`.
    fn delete(&mut self, key: &[u8]) -> Result<()>;
}

impl Output for RollingSink {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add(key, value)
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.add_entry(key, None)
    }
}

/// Writes sorted entries into SSTs cut at a target size.
pub struct RollingSink {
    dir: PathBuf,
    name: String,
    target: u64,
    writer: Option<(SstWriter, PathBuf)>,
    /// The last user key of the file cut last: the open file's first key
    /// must be greater (within a file the SST writer refuses any key not
    /// greater than the one before it, so each key is compared once).
    prev_file_last: Option<Vec<u8>>,
    /// Length of the last key added (the writer's memory estimate).
    last_len: usize,
    files: Vec<SstFile>,
    /// Keys before which a file is cut, increasing; `next_split` is the
    /// first one not yet passed.
    splits: Vec<Vec<u8>>,
    next_split: usize,
    /// Entries and key-value bytes in the open file.
    file_kvs: u64,
    file_raw: u64,
    /// Memory the open file's writer may hold before the file is cut.
    memory_cap: usize,
    /// The sync of the file cut last, running on its own thread while
    /// the next file is written (joined before another starts and in
    /// `finish`: every file is durable before the stream's files are
    /// handed over).
    syncing: Option<std::thread::JoinHandle<strata::Result<()>>>,
    /// Entries written.
    pub kvs: u64,
    /// Uncompressed key and value bytes written.
    pub bytes: u64,
}

impl RollingSink {
    /// Files are named `<name>-<n>.sst` in `dir`.
    pub fn new(dir: &Path, name: &str, target: u64) -> RollingSink {
        RollingSink {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            target: target.max(1),
            writer: None,
            prev_file_last: None,
            last_len: 0,
            files: Vec::new(),
            splits: Vec::new(),
            next_split: 0,
            file_kvs: 0,
            file_raw: 0,
            memory_cap: usize::MAX,
            syncing: None,
            kvs: 0,
            bytes: 0,
        }
    }

    /// Cuts the files before the first key at or past each of `keys`
    /// (increasing) too; set before the first entry.
    pub fn set_split_keys(&mut self, keys: Vec<Vec<u8>>) {
        self.splits = keys;
        self.next_split = 0;
    }

    /// Cuts a file also whenever its writer would hold more than `cap`
    /// bytes ([`writer_memory`]), so the writer's share of the
    /// `--memory` budget is a bound, not a guess.
    pub fn with_memory_cap(mut self, cap: usize) -> RollingSink {
        self.set_memory_cap(cap);
        self
    }

    /// [`Self::with_memory_cap`] on a sink in use.
    pub fn set_memory_cap(&mut self, cap: usize) {
        self.memory_cap = cap;
    }

    /// What the open file's writer holds now (estimated, see
    /// [`writer_memory`]).
    pub fn held(&self) -> usize {
        if self.writer.is_none() {
            return 0;
        }
        writer_memory(self.file_kvs, self.file_raw, self.last_len)
    }

    /// Adds an entry; keys must be strictly increasing.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add_entry(key, Some(value))
    }

    /// Adds a put (`Some`) or a deletion (`None`).
    ///
    /// Order is checked once per key: by the SST writer within a file
    /// (an error naming both keys), here for a file's first key against
    /// the last key of the file before. The sink used to compare and copy
    /// every key itself as well, about 3% of a W1 import's time in pk
    /// order.
    fn add_entry(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let full = self
            .writer
            .as_ref()
            .is_some_and(|(w, _)| w.estimated_file_size() >= self.target)
            || self.held() >= self.memory_cap;
        let mut passed_split = false;
        while self
            .splits
            .get(self.next_split)
            .is_some_and(|k| key >= k.as_slice())
        {
            self.next_split += 1;
            passed_split = true;
        }
        // Keys are strictly increasing, so a cut here never splits a key.
        if full || passed_split {
            self.cut()?;
        }
        if self.writer.is_none() {
            if self
                .prev_file_last
                .as_ref()
                .is_some_and(|last| key <= last.as_slice())
            {
                return Err(Error::invalid(format!(
                    "internal: sink {} got keys out of order",
                    self.name
                )));
            }
            let path = self
                .dir
                .join(format!("{}-{:05}.sst", self.name, self.files.len()));
            let w = SstWriter::create(&path, SstOptions::for_ingestion())?;
            self.writer = Some((w, path));
        }
        if let Some((w, _)) = self.writer.as_mut() {
            match value {
                Some(v) => w.put(key, v)?,
                None => w.delete(key)?,
            }
        }
        let raw = (key.len() + value.map_or(0, <[u8]>::len)) as u64;
        self.kvs += 1;
        self.bytes += raw;
        self.file_kvs += 1;
        self.file_raw += raw;
        self.last_len = key.len();
        Ok(())
    }

    /// Finishes the open file. Its sync runs on a thread of its own
    /// while the next file is written (`last`: the stream's last file,
    /// synced here): the sync of a 64 MiB file took 25-60 ms on W1's
    /// disk, about a third of the random-order merge phase when the
    /// writer waited for each one.
    fn cut_as(&mut self, last: bool) -> Result<()> {
        self.file_kvs = 0;
        self.file_raw = 0;
        if let Some((w, path)) = self.writer.take() {
            let (info, mut file) = w.finish_unsynced()?;
            // The largest internal key: the user key and an 8-byte
            // trailer.
            self.prev_file_last = info
                .largest
                .as_ref()
                .map(|k| k[..k.len().saturating_sub(8)].to_vec());
            self.wait_sync()?;
            if last {
                file.sync()?;
            } else {
                let spawned = std::thread::Builder::new()
                    .name("strata-import-sync".into())
                    .spawn(move || file.sync());
                match spawned {
                    Ok(h) => self.syncing = Some(h),
                    // No thread: the file went unsynced with the
                    // closure that did not start, so the import fails.
                    Err(e) => {
                        return Err(Error::invalid(format!(
                            "starting a thread to sync {}: {e}",
                            path.display()
                        )))
                    }
                }
            }
            self.files.push(SstFile {
                path,
                size: info.file_size,
                entries: info.num_entries,
            });
        }
        Ok(())
    }

    fn cut(&mut self) -> Result<()> {
        self.cut_as(false)
    }

    /// Waits for the sync of the file cut before (its error, if any).
    fn wait_sync(&mut self) -> Result<()> {
        match self.syncing.take().map(std::thread::JoinHandle::join) {
            None => Ok(()),
            Some(Ok(r)) => Ok(r?),
            Some(Err(_)) => Err(Error::invalid("internal: an SST sync thread panicked")),
        }
    }

    /// Finishes the open file and waits until every file is durable; the
    /// files in key order.
    pub fn finish(mut self) -> Result<Vec<SstFile>> {
        self.cut_as(true)?;
        self.wait_sync()?;
        Ok(self.files)
    }
}

/// Bytes an SST writer holds for a file of `kvs` entries of `raw` key and
/// value bytes, keys about `key_len` long: the filter's key hashes (8
/// bytes each, in a vector that may be twice as large as needed), one
/// index entry per 4 KiB data block (the key, its handle and the entry in
/// a doubling vector), and the data block being built with its
/// compressed copy.
pub fn writer_memory(kvs: u64, raw: u64, key_len: usize) -> usize {
    let blocks = raw / 4096 + 1;
    let hashes = 16 * kvs;
    let index = blocks * (key_len as u64 + 104);
    (hashes + index) as usize + 3 * 4096
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap
    use super::*;

    /// The keys of each file written for `keys` with these splits.
    fn files(keys: &[&str], splits: &[&str], target: u64) -> Vec<Vec<String>> {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = RollingSink::new(dir.path(), "t", target);
        sink.set_split_keys(splits.iter().map(|s| s.as_bytes().to_vec()).collect());
        for k in keys {
            sink.add(k.as_bytes(), b"v").unwrap();
        }
        let mut rest = keys.iter().map(|k| k.to_string());
        let files = sink.finish().unwrap();
        let out: Vec<Vec<String>> = files
            .iter()
            .map(|f| rest.by_ref().take(f.entries as usize).collect())
            .collect();
        assert!(out.iter().all(|f| !f.is_empty()), "no empty file");
        assert_eq!(rest.next(), None, "every key written");
        out
    }

    #[test]
    fn files_are_cut_before_the_first_key_past_each_split() {
        let keys = ["a", "b", "d", "f", "g", "k", "m"];
        let big = u64::MAX;
        assert_eq!(files(&keys, &[], big), [keys.to_vec()]);
        // At a split key exactly, between keys, several splits between two
        // keys (one cut), splits before the first key and after the last
        // (none).
        assert_eq!(
            files(&keys, &["0", "b", "c", "e", "e1", "h", "z"], big),
            [
                vec!["a"],
                vec!["b"],
                vec!["d"],
                vec!["f", "g"],
                vec!["k", "m"]
            ]
        );
        // The target size still cuts (every key, at a 1-byte target).
        assert_eq!(
            files(&keys[..3], &["b"], 1),
            [vec!["a"], vec!["b"], vec!["d"]]
        );
    }

    /// A key not greater than the one before it is refused, within a
    /// file (by the SST writer) and as the first key of a file after a
    /// cut (by the sink), whether it is smaller or equal.
    #[test]
    fn keys_out_of_order_are_refused_within_and_across_files() {
        let dir = tempfile::tempdir().unwrap();
        // A target of one byte cuts a file after every key.
        for target in [u64::MAX, 1] {
            for second in ["a", "b"] {
                let mut sink = RollingSink::new(dir.path(), "t", target);
                sink.add(b"aa", b"v").unwrap();
                sink.add(b"b", b"v").unwrap();
                let e = sink.add(second.as_bytes(), b"v").unwrap_err().to_string();
                let want = if target == u64::MAX {
                    "keys must be strictly increasing"
                } else {
                    "got keys out of order"
                };
                assert!(e.contains(want), "target {target}, {second}: {e}");
            }
        }
    }

    /// Under a memory cap, files are cut so that no writer ever held more
    /// than the cap (the budget's writer share is a bound); without one,
    /// only the target size cuts.
    #[test]
    fn memory_cap_bounds_each_writer() {
        let dir = tempfile::tempdir().unwrap();
        let (n, cap) = (20_000u64, 64 << 10);
        let write = |name: &str, cap: usize| {
            let mut s = RollingSink::new(dir.path(), name, 64 << 20).with_memory_cap(cap);
            let mut peak = 0;
            for i in 0..n {
                s.add(&i.to_be_bytes(), b"value").unwrap();
                peak = peak.max(s.held());
            }
            (s.finish().unwrap(), peak)
        };
        let (files, peak) = write("capped", cap);
        assert!(files.len() > 1, "{} files", files.len());
        assert!(
            peak <= cap + writer_memory(1, 13, 8),
            "peak {peak} over cap {cap}"
        );
        for f in &files {
            assert!(writer_memory(f.entries - 1, (f.entries - 1) * 13, 8) < cap);
        }
        assert_eq!(files.iter().map(|f| f.entries).sum::<u64>(), n);
        let (files, peak) = write("uncapped", usize::MAX);
        assert_eq!(files.len(), 1);
        assert!(
            peak >= 16 * (n as usize - 1),
            "hashes of every key counted: {peak}"
        );
    }
}
