//! The file-system boundary. Everything that touches storage goes through a
//! [`Vfs`], so tests can run on memory ([`MemVfs`]) or on a file system that
//! injects faults and simulates power loss ([`FaultVfs`]), and the engine
//! never calls `std::fs` directly.
//!
//! Contract: a [`WritableFile`]'s bytes are durable only after `sync`; a
//! rename is atomic; `sync_dir` makes a directory's entries (creates,
//! renames, removes) durable; two paths naming the same file have the same
//! [`Vfs::canonicalize`] (on a file system with symbolic links, as far as
//! it can resolve them: the operating system's resolves every one).

pub mod fault;
mod mem;
mod os;

pub use fault::FaultVfs;
pub use mem::MemVfs;
pub use os::OsVfs;

use crate::error::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A file being written from start to end.
pub trait WritableFile: Send {
    /// Appends `data` at the end of the file.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the operating system (not durable yet).
    fn flush(&mut self) -> Result<()>;
    /// Makes every appended byte durable.
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// Reserves the file's space up to `upto` bytes from its start, ahead
    /// of the appends that will fill it, so that a later `sync` of those
    /// appends has no allocation or file size to make durable, only the
    /// bytes (one write and a cache flush instead of a file-system journal
    /// commit on ext4 and XFS). Readers may see the reserved space past
    /// [`len`](Self::len) as zero bytes, until the file is dropped, which
    /// gives the space back. The default does nothing: a hint, not a
    /// promise, and a file system that cannot reserve is no error.
    fn preallocate(&mut self, upto: u64) -> Result<()> {
        let _ = upto;
        Ok(())
    }
    /// Asks the operating system to start writing every byte appended so
    /// far to the disk, first waiting for what the previous call started
    /// (Linux `sync_file_range` with `WAIT_BEFORE | WRITE`; RocksDB's and
    /// Pebble's `bytes_per_sync`). It promises nothing about durability,
    /// which is still [`sync`](Self::sync)'s: it keeps the file's dirty
    /// data small while it is written, so that another file's fsync (a
    /// WAL's, the MANIFEST's, an ingestion's directory) does not wait for
    /// megabytes of this one (ext4 commits its journal only after the data
    /// of the blocks it allocated), and this file's own final sync is
    /// short. The default does nothing: a hint, like
    /// [`preallocate`](Self::preallocate).
    fn start_write_back(&mut self) -> Result<()> {
        Ok(())
    }
    /// Whether nothing was appended yet.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A handle that syncs this file without borrowing it, so one thread
    /// can append (and `flush`) while another waits for an earlier fsync:
    /// the MANIFEST's writers do (`version::manifest_log`). It makes
    /// durable every byte flushed before its `sync` began. `None` (the
    /// default) means the file has no such handle and is synced through
    /// [`sync`](Self::sync) only.
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        None
    }
}

/// Syncs a [`WritableFile`] from another thread (see
/// [`WritableFile::sync_handle`]).
pub trait FileSync: Send + Sync {
    /// Makes every byte flushed to the file before this call durable.
    fn sync(&self) -> Result<()>;
}

/// A file read at arbitrary offsets, shared between threads.
pub trait RandomAccessFile: Send + Sync {
    /// Reads exactly `buf.len()` bytes at `offset`; reading past the end is
    /// an error.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
    /// Length of the file in bytes.
    fn len(&self) -> u64;
    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The name used in error messages.
    fn name(&self) -> &str;
}

/// A file read once from start to end (logs).
pub trait SequentialFile: Send {
    /// Reads up to `buf.len()` bytes; 0 means end of file.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
}

/// The file-system operations the engine needs.
pub trait Vfs: Send + Sync {
    /// Creates (or truncates) a file for writing.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens an existing file for writing at its end (the `EVENTS` log
    /// continuing the last session's segment). The default says it is not
    /// supported, and callers do what they did before it existed.
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Err(crate::error::Error::io(
            path.display().to_string(),
            std::io::Error::from(std::io::ErrorKind::Unsupported),
        ))
    }
    /// Opens a file for reads at any offset.
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens a file to read once from start to end.
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>>;
    /// Whether a file or directory exists at `path`.
    fn exists(&self, path: &Path) -> bool;
    /// Size of the file in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Renames `from` to `to` atomically, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Hard-links `from` as `to`; fails if the two are on different file
    /// systems (the caller then copies).
    fn link(&self, from: &Path, to: &Path) -> Result<()>;
    /// Copies `from` to a new file `to`, synced: `to` shares nothing with
    /// `from` afterwards. Streams in 1 MiB pieces, so any size fits.
    fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        let mut src = self.open_sequential(from)?;
        let mut dst = self.create(to)?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = src.read(&mut buf)?;
            if n == 0 {
                break;
            }
            dst.append(&buf[..n])?;
        }
        dst.sync()
    }
    /// `path`'s one name on this file system, for telling whether two
    /// paths name the same file or one lies inside a directory (ingestion
    /// refuses files inside the database's directory): the operating
    /// system's resolves it as `realpath` does (absolute, every symbolic
    /// link followed, so `path` must exist). The default, for file systems
    /// without links or a current directory (in memory, fault injection,
    /// whose files are keyed by their path as given), is
    /// the name made lexically normal: `.` dropped and `..` applied to it.
    fn canonicalize(&self, path: &Path) -> Result<PathBuf> {
        Ok(lexically_normal(path))
    }
    /// Creates `dir` and its missing parents.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Removes `dir` and everything under it; a missing `dir` is not an
    /// error. Only the operating system's file system implements it (the
    /// scratch directory it serves is written by tools through `std::fs`);
    /// by default it is [`Error::NotSupported`](crate::Error::NotSupported).
    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        Err(crate::Error::NotSupported(format!(
            "removing the directory {} on this file system",
            dir.display()
        )))
    }
    /// Names (not paths) of the entries in `dir`.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Makes the directory's entries durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Takes an exclusive lock on `path` (creating it), held until the
    /// returned guard is dropped; fails at once if someone holds it.
    fn lock(&self, path: &Path) -> Result<Box<dyn std::any::Any + Send + Sync>>;
    /// Whether someone holds the lock [`Vfs::lock`] takes on `path`, asked
    /// without taking it, creating the file or changing anything (a read-only
    /// tool such as `check` beside a live database). The default cannot
    /// tell: [`LockState::Unknown`].
    fn lock_state(&self, path: &Path) -> Result<LockState> {
        let _ = path;
        Ok(LockState::Unknown)
    }
}

/// Who holds a lock file's lock ([`Vfs::lock_state`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockState {
    /// No one (or there is no lock file).
    Free,
    /// This process (a `Db` open here).
    HeldHere,
    /// Another process; its id when the operating system says.
    HeldElsewhere {
        /// The holder's process id.
        pid: Option<u32>,
    },
    /// This file system cannot tell.
    #[default]
    Unknown,
}

impl LockState {
    /// True if someone holds the lock: the database is in use.
    pub fn is_held(&self) -> bool {
        matches!(self, LockState::HeldHere | LockState::HeldElsewhere { .. })
    }
}

/// `path` with every `.` component dropped and every `..` taking away the
/// component before it (kept at the start of a relative path, dropped
/// after the root), without asking any file system: the name a path
/// resolves to where no component is a symbolic link.
pub(crate) fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            c => out.push(c),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

// Whole-file helpers: the engine's, and (with the `internals` feature,
// hidden) its tests' and fuzz targets'; not part of the API.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use whole_file::{read_all, write_all};
#[cfg(not(feature = "internals"))]
pub(crate) use whole_file::{read_all, write_all};

mod whole_file {
    use super::Vfs;
    use crate::error::Result;
    use std::path::Path;

    /// Reads a whole file through a [`Vfs`].
    pub fn read_all(vfs: &dyn Vfs, path: &Path) -> Result<Vec<u8>> {
        let f = vfs.open_random(path)?;
        let mut buf = vec![0u8; f.len() as usize];
        f.read_exact_at(&mut buf, 0)?;
        Ok(buf)
    }

    /// Writes a whole file through a [`Vfs`] and syncs it.
    pub fn write_all(vfs: &dyn Vfs, path: &Path, data: &[u8]) -> Result<()> {
        let mut f = vfs.create(path)?;
        f.append(data)?;
        f.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(vfs: &dyn Vfs, dir: &Path) {
        vfs.create_dir_all(dir).unwrap();
        let a = dir.join("a");
        let b = dir.join("b");
        let mut w = vfs.create(&a).unwrap();
        w.append(b"hello ").unwrap();
        w.append(b"world").unwrap();
        assert_eq!(w.len(), 11);
        w.sync().unwrap();
        drop(w);
        assert!(vfs.exists(&a));
        assert_eq!(vfs.file_size(&a).unwrap(), 11);
        let r = vfs.open_random(&a).unwrap();
        let mut buf = [0u8; 5];
        r.read_exact_at(&mut buf, 6).unwrap();
        assert_eq!(&buf, b"world");
        assert!(r.read_exact_at(&mut buf, 8).is_err(), "read past end");
        let mut s = vfs.open_sequential(&a).unwrap();
        let mut all = Vec::new();
        let mut chunk = [0u8; 4];
        loop {
            let n = s.read(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            all.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(all, b"hello world");
        let c = dir.join("c");
        vfs.copy(&a, &c).unwrap();
        assert_eq!(read_all(vfs, &c).unwrap(), b"hello world");
        vfs.remove(&c).unwrap();
        vfs.link(&a, &b).unwrap();
        assert_eq!(read_all(vfs, &b).unwrap(), b"hello world");
        vfs.remove(&a).unwrap();
        assert!(!vfs.exists(&a));
        assert_eq!(read_all(vfs, &b).unwrap(), b"hello world");
        vfs.rename(&b, &a).unwrap();
        assert!(!vfs.exists(&b));
        let mut names = vfs.list(dir).unwrap();
        names.sort();
        assert_eq!(names, vec!["a".to_string()]);
        assert!(vfs.open_random(&b).is_err());
        vfs.sync_dir(dir).unwrap();
        let l = dir.join("LOCK");
        let g = vfs.lock(&l).unwrap();
        assert!(vfs.lock(&l).is_err(), "second lock must fail");
        drop(g);
        drop(vfs.lock(&l).unwrap());
    }

    #[test]
    fn lexically_normal_applies_dots_to_the_name() {
        for (p, want) in [
            ("/db/../db/000006.sst", "/db/000006.sst"),
            ("/db/./x/../000006.sst", "/db/000006.sst"),
            ("/../db", "/db"),
            ("a/../../b", "../b"),
            ("./a/..", "."),
            ("db/", "db"),
        ] {
            assert_eq!(lexically_normal(Path::new(p)), Path::new(want), "{p}");
        }
    }

    #[test]
    fn os_vfs_behaves() {
        let d = tempfile::tempdir().unwrap();
        exercise(&OsVfs, &d.path().join("sub"));
    }

    #[test]
    fn mem_vfs_behaves() {
        exercise(&MemVfs::new(), Path::new("/db"));
    }

    #[test]
    fn fault_vfs_behaves() {
        exercise(&FaultVfs::new(), Path::new("/db"));
    }
}
