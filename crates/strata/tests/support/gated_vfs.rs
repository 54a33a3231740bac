//! A file system for tests that hold some file operations at a gate:
//! `GatedVfs<G, V>` passes every call to `V` (a `MemVfs` by default; a
//! `FaultVfs` for a test that cuts the power), except that
//! `create` first calls the test's gate (`CreateGate::before_create`;
//! `remove` calls `CreateGate::before_remove`, and a directory sync that
//! succeeded `CreateGate::after_sync_dir`),
//! which may block, and hands the new file to the gate
//! (`CreateGate::wrap`), which may wrap it to hold its syncs. Each test keeps its own gate: which creations wait,
//! how they are counted, and how the gate opens. The gate's own methods
//! are reached through `Deref`.
//!
//! Like the wrappers it replaces, it overrides every required `Vfs` method
//! and leaves the provided ones (`copy`) to the trait, so a copy's
//! creation passes the gate too.
//!
//! Also here: the ingestible files those tests make ([`ingestible_sst`])
//! and the ingestion options that keep them files ([`file_ingestion`]).

#![allow(dead_code)]

use std::ops::Deref;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use strata::sstable::{SstOptions, SstWriter};
use strata::vfs::{MemVfs, RandomAccessFile, SequentialFile, Vfs, WritableFile};
use strata::{IngestOptions, Result};

/// An ingestible SST `dir/name`, written through `vfs` (the database's, so
/// ingestion reads the caller's file through it), with the range
/// tombstones and then the puts (`key` -> `ingested key`).
pub fn ingestible_sst(
    vfs: &dyn Vfs,
    dir: &Path,
    name: &str,
    puts: &[&str],
    tombstones: &[(&str, &str)],
) -> PathBuf {
    vfs.create_dir_all(dir).unwrap();
    let p = dir.join(name);
    let mut w = SstWriter::create_in(vfs, &p, SstOptions::for_ingestion()).unwrap();
    for (a, b) in tombstones {
        w.delete_range(a.as_bytes(), b.as_bytes()).unwrap();
    }
    for k in puts {
        w.put(k.as_bytes(), format!("ingested {k}").as_bytes())
            .unwrap();
    }
    w.finish().unwrap();
    p
}

/// Ingestion options under which every file stays a file (no small-file
/// fallback to a write batch).
pub fn file_ingestion() -> IngestOptions {
    IngestOptions {
        small_file_bytes: 0,
        ..IngestOptions::default()
    }
}

/// What a test does before a file is created (may block until it lets the
/// creation go on).
pub trait CreateGate: Send + Sync {
    /// Called by `create(path)` before the file is created.
    fn before_create(&self, path: &Path);
    /// The file `create(path)` returns, given the one it made (a gate that
    /// holds syncs wraps the files whose syncs it holds). As it is by
    /// default.
    fn wrap(&self, _path: &Path, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        file
    }
    /// Called by `remove(path)` before the file is removed (may block). By
    /// default it lets every removal through.
    fn before_remove(&self, _path: &Path) {}
    /// Called after `sync_dir(dir)` succeeded. By default nothing.
    fn after_sync_dir(&self, _dir: &Path) {}
}

/// A file system (`MemVfs` unless said otherwise), with every creation
/// passing `gate` first.
pub struct GatedVfs<G, V = MemVfs> {
    inner: V,
    gate: G,
}

impl<G> GatedVfs<G> {
    /// An empty file system whose creations pass `gate`.
    pub fn with_gate(gate: G) -> GatedVfs<G> {
        GatedVfs::over(MemVfs::new(), gate)
    }
}

impl<G, V> GatedVfs<G, V> {
    /// `inner`, whose creations pass `gate`.
    pub fn over(inner: V, gate: G) -> GatedVfs<G, V> {
        GatedVfs { inner, gate }
    }

    /// The file system under the gate (a `FaultVfs`'s crash image).
    pub fn inner(&self) -> &V {
        &self.inner
    }
}

impl<G, V> Deref for GatedVfs<G, V> {
    type Target = G;
    fn deref(&self) -> &G {
        &self.gate
    }
}

impl<G: CreateGate, V: Vfs> Vfs for GatedVfs<G, V> {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.gate.before_create(path);
        let file = self.inner.create(path)?;
        Ok(self.gate.wrap(path, file))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_random(path)
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.inner.open_sequential(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.gate.before_remove(path);
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.link(from, to)
    }
    fn canonicalize(&self, path: &Path) -> Result<PathBuf> {
        self.inner.canonicalize(path)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)?;
        self.gate.after_sync_dir(dir);
        Ok(())
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn std::any::Any + Send + Sync>> {
        self.inner.lock(path)
    }
}
