//! `Snapshot`: a consistent, read-only view of the database at one instant.
//!
//! A snapshot registers its sequence number in `DbInner::snapshots` for as
//! long as the value lives; flushes and compactions keep every version a
//! registered snapshot can see, so reads at it stay exact however much is
//! written or compacted meanwhile. Reads name the snapshot by reference
//! (`ReadOptions::snapshot`, or the snapshot's own methods), never by a bare
//! number, so reading at a snapshot that was dropped — whose versions may
//! be gone — cannot be written.

use super::iterator::{foreign_snapshot, prefix_to_bounds, range_to_bounds, DbIterator};
use super::read::{self, IterSpec};
use super::DbInner;
use crate::error::Result;
use std::ops::RangeBounds;
use std::sync::Arc;

/// A consistent view of the database as of one point in time, kept until
/// dropped. From [`Db::snapshot`](super::Db::snapshot).
///
/// Read at it with its own methods ([`get`](Self::get),
/// [`multi_get`](Self::multi_get), [`iter`](Self::iter),
/// [`range`](Self::range), [`prefix`](Self::prefix)) or through
/// [`ReadOptions::snapshot`](super::ReadOptions::snapshot). Holding a
/// snapshot keeps the old versions of overwritten and deleted keys on disk,
/// so drop it when done.
///
/// ```
/// # use strata::Db;
/// # let dir = tempfile::tempdir()?;
/// let db = Db::open_default(dir.path())?;
/// db.put("k", "old")?;
/// let snap = db.snapshot();
/// db.put("k", "new")?;
/// db.compact_range(None, None)?; // the old version survives compaction
/// assert_eq!(snap.get("k")?.as_deref(), Some(&b"old"[..]));
/// assert_eq!(db.get("k")?.as_deref(), Some(&b"new"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Reads borrow the snapshot, so reading at one that was dropped does not
/// compile:
///
/// ```compile_fail
/// # use strata::{Db, ReadOptions};
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Db::open_default(dir.path()).unwrap();
/// let snap = db.snapshot();
/// let opts = ReadOptions { snapshot: Some(&snap), ..ReadOptions::default() };
/// drop(snap);
/// db.get_opt("k", &opts).unwrap(); // error: `snap` dropped while borrowed
/// ```
pub struct Snapshot {
    pub(crate) seq: u64,
    pub(crate) db: Arc<DbInner>,
    /// Made after its database was closed: registered nowhere, and every
    /// read fails with the closed error (a snapshot made before the close
    /// goes on reading).
    pub(crate) closed: bool,
}

impl Snapshot {
    /// The sequence number the snapshot reads at: every write numbered at
    /// or below it is visible, none above. For logs and diagnostics.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("k", "v")?;
    /// let snap = db.snapshot();
    /// assert_eq!(snap.sequence(), db.latest_sequence());
    /// db.put("k", "w")?;
    /// assert!(snap.sequence() < db.latest_sequence());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sequence(&self) -> u64 {
        self.seq
    }

    /// The closed error, for a snapshot made after its database closed.
    fn check(&self) -> Result<()> {
        if self.closed {
            return Err(self.db.closed_error());
        }
        Ok(())
    }

    /// The value of `key` as of the snapshot.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// let snap = db.snapshot();
    /// db.put("k", "v")?;
    /// assert_eq!(snap.get("k")?, None, "written after the snapshot");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.check()?;
        read::get(&self.db, key.as_ref(), Some(self.seq))
    }

    /// The values of `keys` as of the snapshot, one result per key in the
    /// order given: [`Db::multi_get`](super::Db::multi_get) at the
    /// snapshot.
    ///
    /// ```
    /// # use strata::Db;
    /// # let dir = tempfile::tempdir()?;
    /// let db = Db::open_default(dir.path())?;
    /// db.put("a", "1")?;
    /// let snap = db.snapshot();
    /// db.delete("a")?;
    /// db.put("b", "2")?;
    /// let got: Vec<_> = snap.multi_get(["a", "b"]).into_iter().collect::<strata::Result<_>>()?;
    /// assert_eq!(got, [Some(b"1".to_vec()), None]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        match self.check() {
            Ok(()) => read::multi_get(&self.db, keys, Some(self.seq)),
            Err(e) => keys.into_iter().map(|_| Err(e.clone())).collect(),
        }
    }

    /// Every key and value as of the snapshot, in key order.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("a", "1")?;
    /// let snap = db.snapshot();
    /// db.delete("a")?;
    /// db.put("b", "2")?;
    /// let seen: Vec<_> = snap.iter().collect::<strata::Result<_>>()?;
    /// assert_eq!(seen, [(b"a".to_vec(), b"1".to_vec())]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter(&self) -> DbIterator {
        self.iter_bounds(None, None)
    }

    /// The keys in `range` as of the snapshot (any `RangeBounds` over byte
    /// strings, as [`Db::range`](super::Db::range)).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// for k in ["a", "b", "c"] {
    ///     db.put(k, "old")?;
    /// }
    /// let snap = db.snapshot();
    /// db.put("b", "new")?;
    /// let got: Vec<_> = snap.range("b"..).collect::<strata::Result<_>>()?;
    /// assert_eq!(got, [(b"b".to_vec(), b"old".to_vec()), (b"c".to_vec(), b"old".to_vec())]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        let (lower, upper) = range_to_bounds(&range);
        self.iter_bounds(lower, upper)
    }

    /// The keys starting with `prefix` as of the snapshot.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open_default(dir.path())?;
    /// db.put("user:1", "ada")?;
    /// let snap = db.snapshot();
    /// db.put("user:2", "grace")?;
    /// assert_eq!(snap.prefix("user:").count(), 1);
    /// assert_eq!(db.prefix("user:").count(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        let (lower, upper) = prefix_to_bounds(prefix.as_ref());
        self.iter_bounds(lower, upper)
    }

    fn iter_bounds(&self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> DbIterator {
        DbIterator::new(self.check().and_then(|()| {
            read::iter(
                &self.db,
                IterSpec {
                    snapshot: Some(self.seq),
                    lower,
                    upper,
                },
            )
        }))
    }

    /// This snapshot's sequence number, if it belongs to `db`.
    pub(crate) fn sequence_for(&self, db: &Arc<DbInner>) -> Result<u64> {
        if Arc::ptr_eq(&self.db, db) {
            Ok(self.seq)
        } else {
            Err(foreign_snapshot())
        }
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("sequence", &self.seq)
            .finish()
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        let mut s = self.db.snapshots.lock();
        if let Some(n) = s.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                s.remove(&self.seq);
            }
        }
    }
}
