//! An in-memory file system for tests: fast, isolated, and (unlike a temp
//! directory) free of the page cache, so it shows what the engine itself
//! writes and reads.

use super::{FileSync, RandomAccessFile, SequentialFile, Vfs, WritableFile};
use crate::error::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Data = Arc<RwLock<Vec<u8>>>;

/// [`Vfs`] whose files live in a map. Clones share the same files.
///
/// ```
/// use std::sync::Arc;
/// use strata::vfs::{MemVfs, Vfs};
/// use strata::{Db, Options};
///
/// let vfs = MemVfs::new();
/// let opts = Options { vfs: Some(Arc::new(vfs.clone())), ..Options::default() };
/// let db = Db::open("/db", opts)?; // nothing touches the disk
/// db.put("k", "v")?;
/// db.close()?;
/// assert!(vfs.list(std::path::Path::new("/db"))?.contains(&"CURRENT".to_string()));
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct MemVfs {
    files: Arc<Mutex<BTreeMap<PathBuf, Data>>>,
    locks: Arc<Mutex<std::collections::BTreeSet<PathBuf>>>,
}

struct MemLock {
    path: PathBuf,
    locks: Arc<Mutex<std::collections::BTreeSet<PathBuf>>>,
}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.locks.lock().remove(&self.path);
    }
}

impl MemVfs {
    /// An empty in-memory file system.
    pub fn new() -> MemVfs {
        MemVfs::default()
    }

    fn get(&self, path: &Path) -> Result<Data> {
        self.files
            .lock()
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(path))
    }
}

fn not_found(path: &Path) -> Error {
    Error::io(
        path.display().to_string(),
        io::Error::new(io::ErrorKind::NotFound, "no such file"),
    )
}

struct MemWritable {
    data: Data,
}

impl WritableFile for MemWritable {
    fn append(&mut self, d: &[u8]) -> Result<()> {
        self.data.write().extend_from_slice(d);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.read().len() as u64
    }
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        Some(Arc::new(MemSync))
    }
}

/// Memory is as durable as it gets: syncing does nothing.
struct MemSync;

impl FileSync for MemSync {
    fn sync(&self) -> Result<()> {
        Ok(())
    }
}

struct MemRandom {
    name: String,
    data: Data,
}

impl RandomAccessFile for MemRandom {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let d = self.data.read();
        let start = offset as usize;
        match start.checked_add(buf.len()) {
            Some(end) if end <= d.len() => {
                buf.copy_from_slice(&d[start..end]);
                Ok(())
            }
            _ => Err(Error::io(
                format!("{} (offset {offset})", self.name),
                io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file"),
            )),
        }
    }
    fn len(&self) -> u64 {
        self.data.read().len() as u64
    }
    fn name(&self) -> &str {
        &self.name
    }
}

struct MemSequential {
    data: Data,
    pos: usize,
}

impl SequentialFile for MemSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let d = self.data.read();
        let n = buf.len().min(d.len().saturating_sub(self.pos));
        buf[..n].copy_from_slice(&d[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Vfs for MemVfs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let data: Data = Arc::default();
        self.files.lock().insert(path.to_path_buf(), data.clone());
        Ok(Box::new(MemWritable { data }))
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(MemWritable {
            data: self.get(path)?,
        }))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(MemRandom {
            name: path.display().to_string(),
            data: self.get(path)?,
        }))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        Ok(Box::new(MemSequential {
            data: self.get(path)?,
            pos: 0,
        }))
    }
    fn exists(&self, path: &Path) -> bool {
        self.files.lock().contains_key(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(self.get(path)?.read().len() as u64)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.files
            .lock()
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut files = self.files.lock();
        let d = files.remove(from).ok_or_else(|| not_found(from))?;
        files.insert(to.to_path_buf(), d);
        Ok(())
    }
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        let mut files = self.files.lock();
        let d = files.get(from).cloned().ok_or_else(|| not_found(from))?;
        if files.contains_key(to) {
            return Err(Error::io(
                to.display().to_string(),
                io::Error::new(io::ErrorKind::AlreadyExists, "file exists"),
            ));
        }
        files.insert(to.to_path_buf(), d);
        Ok(())
    }
    fn create_dir_all(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        Ok(self
            .files
            .lock()
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn std::any::Any + Send + Sync>> {
        if !self.locks.lock().insert(path.to_path_buf()) {
            return Err(Error::Busy {
                path: path.parent().unwrap_or(path).display().to_string(),
                msg: "it is already open on this in-memory file system".into(),
            });
        }
        Ok(Box::new(MemLock {
            path: path.to_path_buf(),
            locks: Arc::clone(&self.locks),
        }))
    }
    fn sync_dir(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
    fn lock_state(&self, path: &Path) -> Result<super::LockState> {
        Ok(if self.locks.lock().contains(path) {
            super::LockState::HeldHere
        } else {
            super::LockState::Free
        })
    }
}
