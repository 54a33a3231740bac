//! The table cache: open `Table` readers by file number, at most
//! `max_open_files` of them (least recently used closed first). Every table
//! shares the database's block cache.

use crate::cache::{BlockCache, LruCache};
use crate::db::filenames;
use crate::error::Result;
use crate::sstable::{Table, TableOptions};
use crate::version::FileMeta;
use crate::vfs::Vfs;
use std::path::PathBuf;
use std::sync::Arc;

pub struct TableCache {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    tables: LruCache<Arc<Table>>,
    block_cache: Arc<BlockCache>,
}

impl TableCache {
    pub fn new(
        vfs: Arc<dyn Vfs>,
        dir: PathBuf,
        max_open: usize,
        block_cache: Arc<BlockCache>,
    ) -> TableCache {
        TableCache {
            vfs,
            dir,
            // Charge 1 per table: the budget counts open files.
            tables: LruCache::with_shards(max_open.max(1), 0),
            block_cache,
        }
    }

    pub fn get(&self, f: &FileMeta) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.get((0, f.number)) {
            return Ok(t);
        }
        let opts = TableOptions {
            cache: Some(Arc::clone(&self.block_cache)),
            global_seqno: f.global_seqno,
            ..TableOptions::default()
        };
        let t = Table::open_in(
            self.vfs.as_ref(),
            &filenames::table(&self.dir, f.number),
            opts,
        )?;
        self.tables.insert((0, f.number), Arc::clone(&t), 1);
        Ok(t)
    }

    /// Closes a table (its file is being deleted).
    pub fn evict(&self, number: u64) {
        self.tables.erase((0, number));
    }
}
