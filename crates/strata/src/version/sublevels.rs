//! TEMPORARY minimal L0 sublevels (replaced by the full implementation).
use super::FileMeta;
use std::collections::HashSet;
use std::sync::Arc;

pub struct L0Pick {
    pub files: Vec<Arc<FileMeta>>,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

pub struct L0Sublevels {
    files: Vec<Arc<FileMeta>>,
    levels: Vec<Vec<Arc<FileMeta>>>,
    compacting: HashSet<u64>,
    split: Vec<Vec<u8>>,
}

fn overlap(a: &FileMeta, b: &FileMeta) -> bool {
    a.overlaps_user_range(b.smallest_user_key(), b.largest_user_key())
        && b.overlaps_user_range(a.smallest_user_key(), a.largest_user_key())
}

impl L0Sublevels {
    pub fn new(files: &[Arc<FileMeta>], _flush_split_bytes: u64) -> L0Sublevels {
        let mut fs: Vec<Arc<FileMeta>> = files.to_vec();
        fs.sort_by(|a, b| {
            a.largest_seq
                .cmp(&b.largest_seq)
                .then(a.number.cmp(&b.number))
        });
        let mut level_of: Vec<usize> = Vec::new();
        let mut levels: Vec<Vec<Arc<FileMeta>>> = Vec::new();
        for (i, f) in fs.iter().enumerate() {
            let l = (0..i)
                .filter(|&j| overlap(&fs[j], f))
                .map(|j| level_of[j] + 1)
                .max()
                .unwrap_or(0);
            level_of.push(l);
            if levels.len() <= l {
                levels.resize(l + 1, Vec::new());
            }
            levels[l].push(Arc::clone(f));
        }
        L0Sublevels {
            files: fs,
            levels,
            compacting: HashSet::new(),
            split: Vec::new(),
        }
    }
    pub fn sublevels(&self) -> &[Vec<Arc<FileMeta>>] {
        &self.levels
    }
    fn depth(&self, skip: &HashSet<u64>) -> usize {
        self.files
            .iter()
            .map(|p| {
                self.files
                    .iter()
                    .filter(|f| {
                        !skip.contains(&f.number) && f.contains_user_key(p.smallest_user_key())
                    })
                    .count()
            })
            .max()
            .unwrap_or(0)
    }
    pub fn read_amplification(&self) -> usize {
        self.depth(&HashSet::new())
    }
    pub fn max_depth_after_ongoing(&self) -> usize {
        self.depth(&self.compacting)
    }
    pub fn flush_split_keys(&self) -> &[Vec<u8>] {
        &self.split
    }
    pub fn set_compacting(&mut self, numbers: &HashSet<u64>) {
        self.compacting = numbers.clone();
    }
    pub fn pick_base_compaction(
        &self,
        _max_bytes: u64,
        conflict: &dyn Fn(&[u8], &[u8]) -> bool,
    ) -> Option<L0Pick> {
        let seed = self
            .files
            .iter()
            .find(|f| !self.compacting.contains(&f.number))?;
        let mut chosen = vec![Arc::clone(seed)];
        loop {
            let before = chosen.len();
            for f in &self.files {
                if !chosen.iter().any(|c| c.number == f.number)
                    && chosen.iter().any(|c| overlap(c, f))
                {
                    chosen.push(Arc::clone(f));
                }
            }
            if chosen.len() == before {
                break;
            }
        }
        if chosen.iter().any(|f| self.compacting.contains(&f.number)) {
            return None;
        }
        let lo = chosen
            .iter()
            .map(|f| f.smallest_user_key().to_vec())
            .min()?;
        let hi = chosen.iter().map(|f| f.largest_user_key().to_vec()).max()?;
        if conflict(&lo, &hi) {
            return None;
        }
        Some(L0Pick {
            files: chosen,
            smallest: lo,
            largest: hi,
        })
    }
    pub fn pick_intra_l0_compaction(&self, _min_files: usize, _max_bytes: u64) -> Option<L0Pick> {
        None
    }
}
