//! A file system for A/B measurements on a loaded machine: the OS file
//! system with every fsync (of a file or a directory) also taking a fixed
//! time, `STRATA_BENCH_FSYNC_US` microseconds, spent sleeping as a thread
//! waiting for a disk does. Run over tmpfs (`/dev/shm`, where an fsync
//! itself costs nothing) it models a quiet disk whose fsyncs take that
//! long, so two builds can be compared while other processes' disk traffic
//! would swing real fsyncs by 10x from run to run. Never used unless the
//! variable is set; the driver says so in its output.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use strata::vfs::{FileSync, OsVfs, RandomAccessFile, SequentialFile, Vfs, WritableFile};
use strata::Result;

/// The modelled fsync time, if `STRATA_BENCH_FSYNC_US` is set.
pub fn latency() -> Option<Duration> {
    let us: u64 = std::env::var("STRATA_BENCH_FSYNC_US").ok()?.parse().ok()?;
    Some(Duration::from_micros(us))
}

/// [`OsVfs`] with `latency` added to every fsync.
pub struct SlowSync {
    pub latency: Duration,
}

struct File {
    inner: Box<dyn WritableFile>,
    latency: Duration,
}

struct Handle {
    inner: Arc<dyn FileSync>,
    latency: Duration,
}

impl FileSync for Handle {
    fn sync(&self) -> Result<()> {
        self.inner.sync()?;
        std::thread::sleep(self.latency);
        Ok(())
    }
}

impl WritableFile for File {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()?;
        std::thread::sleep(self.latency);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        let inner = self.inner.sync_handle()?;
        Some(Arc::new(Handle {
            inner,
            latency: self.latency,
        }))
    }
}

impl Vfs for SlowSync {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(File {
            inner: OsVfs.create(path)?,
            latency: self.latency,
        }))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        OsVfs.open_random(path)
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        OsVfs.open_sequential(path)
    }
    fn exists(&self, path: &Path) -> bool {
        OsVfs.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        OsVfs.file_size(path)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        OsVfs.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        OsVfs.rename(from, to)
    }
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        OsVfs.link(from, to)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        OsVfs.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        OsVfs.list(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        OsVfs.sync_dir(dir)?;
        std::thread::sleep(self.latency);
        Ok(())
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn std::any::Any + Send + Sync>> {
        OsVfs.lock(path)
    }
}
