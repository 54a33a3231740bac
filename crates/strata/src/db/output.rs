//! Writing a sorted stream of entries as one or more table files: the common
//! back end of flushes, recovery and compactions.
//!
//! A new file is started when the current one reaches the target size, when
//! the keys written so far overlap too many bytes of the grandparent level
//! (so a later compaction of this file stays small), or at a split key (flush
//! split keys derived from L0's sublevels). Files are cut only between user
//! keys, never between two versions of one key, so files of a level never
//! share a boundary user key. Each file receives the range tombstones
//! clipped to its own span, so file bounds never overlap: a file cut at key
//! `K` ends with the exclusive sentinel `(K, MAX_SEQUENCE, RangeDeletion)`
//! at most, which sorts before every entry of `K` in the next file.

use super::filenames;
use crate::error::Result;
use crate::key;
use crate::sstable::{RangeTombstone, SstInfo, SstOptions, SstWriter};
use crate::version::FileMeta;
use crate::vfs::Vfs;
use std::path::Path;
use std::sync::Arc;

/// Where and when to cut output files.
#[derive(Clone, Debug, Default)]
pub struct CutPolicy {
    /// Cut when a file reaches this size (0: never by size).
    pub target_file_size: u64,
    /// Cut before a key at which the file has overlapped more than this many
    /// grandparent bytes (0: ignore grandparents).
    pub max_grandparent_overlap: u64,
    pub grandparents: Vec<Arc<FileMeta>>,
    /// Cut before the first key >= each of these (sorted user keys).
    pub split_keys: Vec<Vec<u8>>,
}

pub struct OutputWriter<'a> {
    vfs: &'a dyn Vfs,
    dir: &'a Path,
    sst: SstOptions,
    policy: CutPolicy,
    new_number: &'a dyn Fn() -> u64,
    tombstones: Vec<RangeTombstone>,
    cur: Option<(u64, SstWriter)>,
    /// Lower bound (user key) of the current file's span; `None` = -inf.
    span_start: Option<Vec<u8>>,
    last_user_key: Vec<u8>,
    has_last: bool,
    next_split: usize,
    gp_index: usize,
    gp_overlap: u64,
    pub outputs: Vec<FileMeta>,
    /// Numbers allocated (so the caller can protect them from deletion).
    pub numbers: Vec<u64>,
}

impl<'a> OutputWriter<'a> {
    pub fn new(
        vfs: &'a dyn Vfs,
        dir: &'a Path,
        sst: &SstOptions,
        policy: CutPolicy,
        tombstones: Vec<RangeTombstone>,
        new_number: &'a dyn Fn() -> u64,
    ) -> OutputWriter<'a> {
        let mut tombstones = tombstones;
        tombstones.retain(|t| t.start < t.end);
        OutputWriter {
            vfs,
            dir,
            sst: SstOptions {
                external: false,
                ..sst.clone()
            },
            policy,
            new_number,
            tombstones,
            cur: None,
            span_start: None,
            last_user_key: Vec::new(),
            has_last: false,
            next_split: 0,
            gp_index: 0,
            gp_overlap: 0,
            outputs: Vec::new(),
            numbers: Vec::new(),
        }
    }

    /// Adds the next entry (internal keys in increasing order).
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let uk = key::user_key(ikey);
        let new_user_key = !self.has_last || self.last_user_key.as_slice() != uk;
        if new_user_key && self.cur.is_some() && self.should_cut(uk) {
            self.finish_current(Some(uk.to_vec()))?;
        }
        if self.cur.is_none() {
            let n = (self.new_number)();
            self.numbers.push(n);
            let w =
                SstWriter::create_in(self.vfs, &filenames::table(self.dir, n), self.sst.clone())?;
            self.cur = Some((n, w));
        }
        if let Some((_, w)) = self.cur.as_mut() {
            w.add_ikey(ikey, value)?;
        }
        if new_user_key {
            self.last_user_key.clear();
            self.last_user_key.extend_from_slice(uk);
            self.has_last = true;
        }
        Ok(())
    }

    fn should_cut(&mut self, uk: &[u8]) -> bool {
        let mut cut = false;
        while self.next_split < self.policy.split_keys.len()
            && self.policy.split_keys[self.next_split].as_slice() <= uk
        {
            self.next_split += 1;
            cut = true;
        }
        // Grandparent files that end before `uk` are now fully overlapped.
        while self.gp_index < self.policy.grandparents.len()
            && self.policy.grandparents[self.gp_index].largest_user_key() < uk
        {
            if self.has_last {
                self.gp_overlap += self.policy.grandparents[self.gp_index].size;
            }
            self.gp_index += 1;
        }
        if self.policy.max_grandparent_overlap > 0
            && self.gp_overlap > self.policy.max_grandparent_overlap
        {
            cut = true;
        }
        if let Some((_, w)) = &self.cur {
            if self.policy.target_file_size > 0
                && w.estimated_file_size() >= self.policy.target_file_size
            {
                cut = true;
            }
        }
        cut
    }

    /// Finishes the current file; its span ends at `end` (exclusive), or
    /// extends to +inf for the last file.
    fn finish_current(&mut self, end: Option<Vec<u8>>) -> Result<()> {
        let Some((n, mut w)) = self.cur.take() else {
            return Ok(());
        };
        for t in &self.tombstones {
            let start = match &self.span_start {
                Some(s) if s.as_slice() > t.start.as_slice() => s.clone(),
                _ => t.start.clone(),
            };
            let stop = match &end {
                Some(e) if e.as_slice() < t.end.as_slice() => e.clone(),
                _ => t.end.clone(),
            };
            if start < stop {
                w.tombstone_at(&start, &stop, t.seq)?;
            }
        }
        let info = w.finish()?;
        if let Some(m) = meta(n, info) {
            self.outputs.push(m);
        } else {
            self.vfs.remove(&filenames::table(self.dir, n))?;
        }
        self.span_start = end;
        self.gp_overlap = 0;
        Ok(())
    }

    /// Finishes the last file (writing one for tombstones alone if no entry
    /// came) and syncs the directory. Returns the files written.
    pub fn finish(mut self) -> Result<Vec<FileMeta>> {
        if self.cur.is_none() && self.outputs.is_empty() && !self.tombstones.is_empty() {
            let n = (self.new_number)();
            self.numbers.push(n);
            let w =
                SstWriter::create_in(self.vfs, &filenames::table(self.dir, n), self.sst.clone())?;
            self.cur = Some((n, w));
        }
        self.finish_current(None)?;
        if !self.outputs.is_empty() {
            self.vfs.sync_dir(self.dir)?;
        }
        Ok(self.outputs)
    }
}

fn meta(number: u64, info: SstInfo) -> Option<FileMeta> {
    let (smallest, largest) = (info.smallest?, info.largest?);
    Some(FileMeta {
        number,
        size: info.file_size,
        smallest,
        largest,
        smallest_seq: info.smallest_seqno,
        largest_seq: info.largest_seqno,
        global_seqno: None,
        num_entries: info.num_entries,
        num_deletions: info.properties.num_deletions,
        num_range_deletions: info.num_range_deletions,
        backing: None,
    })
}
