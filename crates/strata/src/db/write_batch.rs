//! `WriteBatch`: a group of updates applied atomically, in RocksDB's
//! WriteBatch layout so that a WAL record is the batch's bytes as they are:
//!
//! ```text
//! sequence: fixed64 | count: fixed32 | record*
//! record = 0x01 key value          (put)
//!        | 0x00 key                (delete)
//!        | 0x0F begin end          (delete range [begin, end))
//!        | 0x03 blob               (log data: not an update, not counted)
//! where key, value, begin, end, blob are varint32-length-prefixed bytes
//! ```
//!
//! Record `i` of a batch whose header says sequence `s` is applied at
//! sequence `s + i`: a batch takes `count` consecutive sequence numbers.
//! Log data (RocksDB's `kTypeLogData`) takes none and is never applied:
//! Strata writes it only in an ingestion's WAL marker (`db::marker`), and
//! [`WriteBatch::iter`] skips it.
//!
//! Buffer reuse (Pebble's batch pool): a dropped batch (the engine drops
//! every batch it has committed) leaves its buffer in a small per-thread
//! pool, and [`WriteBatch::new`] takes one from there, so a caller writing
//! batch after batch grows its buffer once instead of reallocating it up
//! from empty every commit. The pool holds at most [`POOL_BUFFERS`]
//! buffers and [`POOL_MAX_BYTES`] of capacity per thread; larger buffers
//! are freed as before. A pooled buffer is cleared before reuse, so no
//! batch ever sees another's bytes.

use crate::key::ValueKind;
use crate::util::coding::{decode_fixed32, decode_fixed64, put_length_prefixed, Reader};
use std::cell::RefCell;

pub const HEADER: usize = 12;

/// Tag of a log-data record (RocksDB's `kTypeLogData`).
const LOG_DATA: u8 = 0x03;

/// Most buffers a thread's pool keeps.
pub(crate) const POOL_BUFFERS: usize = 4;

/// Most capacity, summed over its buffers, a thread's pool keeps: Pebble
/// retains batches up to 1 MiB. A larger buffer is freed on drop.
pub(crate) const POOL_MAX_BYTES: usize = 1 << 20;

thread_local! {
    /// Buffers of dropped batches, for the next `WriteBatch::new` on this
    /// thread.
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A cleared buffer from this thread's pool, if it has one.
fn pooled_buffer() -> Option<Vec<u8>> {
    POOL.try_with(|p| p.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten()
}

/// Keeps `rep` in this thread's pool if it fits, else frees it.
fn return_buffer(mut rep: Vec<u8>) {
    let cap = rep.capacity();
    if cap <= HEADER || cap > POOL_MAX_BYTES {
        return;
    }
    rep.clear();
    // `try_with`: a batch dropped during thread teardown just frees its
    // buffer.
    let _ = POOL.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut() {
            let held: usize = p.iter().map(Vec::capacity).sum();
            if p.len() < POOL_BUFFERS && held + cap <= POOL_MAX_BYTES {
                p.push(rep);
            }
        }
    });
}

/// A group of writes applied atomically by [`Db::write`](crate::Db::write):
/// after a crash either every one of them is there or none is, and readers
/// never see part of a batch. Updates apply in the order they were added
/// (a later put of the same key wins).
///
/// The builder methods cannot fail: an update the batch cannot hold (a key
/// or value longer than the formats allow, a range whose begin is above
/// its end) is left out and marks the whole batch *refused*.
/// [`status`](Self::status) says so at once, and `Db::write` refuses such a
/// batch whole, so no part of it is ever written; [`clear`](Self::clear)
/// makes the batch usable again, and [`append`](Self::append) carries a
/// refusal into the batch appended to.
///
/// ```
/// use strata::{Db, WriteBatch, WriteOptions};
/// # let dir = tempfile::tempdir()?;
/// # let db = Db::open_default(dir.path())?;
/// db.put("balance:alice", "100")?;
/// let mut batch = WriteBatch::new();
/// batch
///     .put("balance:alice", "70")
///     .put("balance:bob", "30")
///     .delete("pending:tx-9");
/// assert_eq!(batch.len(), 3);
/// db.write(batch, &WriteOptions::default())?;
/// assert_eq!(db.get("balance:bob")?, Some(b"30".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    /// Why the batch cannot be written, if an update was refused as it was
    /// added (a key or value too long for the formats' 32-bit lengths, a
    /// range whose begin is above its end): the builder methods cannot
    /// return an error, so the refused update is left out and
    /// [`Db::write`](crate::Db::write) refuses the whole batch with this.
    refused: Option<String>,
}

/// The longest key the formats hold: a WAL record, a table entry and a
/// MANIFEST record store a length in 32 bits, and a table's internal key
/// is the user key and 8 bytes.
pub const MAX_KEY_BYTES: usize = u32::MAX as usize - 8;
/// The longest value the formats hold (a 32-bit length).
pub const MAX_VALUE_BYTES: usize = u32::MAX as usize;

/// The refusal of a range whose begin is above its end.
pub(crate) fn range_reversed(begin: &[u8], end: &[u8]) -> String {
    format!(
        "delete_range: begin {:?} is above end {:?}",
        String::from_utf8_lossy(&begin[..begin.len().min(64)]),
        String::from_utf8_lossy(&end[..end.len().min(64)])
    )
}

/// Why a key or value is too long for the formats, if it is.
pub(crate) fn too_long(key: &[u8], value: &[u8]) -> Option<String> {
    if key.len() > MAX_KEY_BYTES {
        Some(format!(
            "a key of {} bytes is longer than the {MAX_KEY_BYTES} bytes a key may hold",
            key.len()
        ))
    } else if value.len() > MAX_VALUE_BYTES {
        Some(format!(
            "a value of {} bytes (key {:?}) is longer than the {MAX_VALUE_BYTES} bytes a \
             value may hold",
            value.len(),
            String::from_utf8_lossy(&key[..key.len().min(64)])
        ))
    } else {
        None
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

impl Drop for WriteBatch {
    fn drop(&mut self) {
        return_buffer(std::mem::take(&mut self.rep));
    }
}

/// One update of a batch, as [`WriteBatch::iter`] yields it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Set a key (key, value).
    Put(&'a [u8], &'a [u8]),
    /// Delete a key.
    Delete(&'a [u8]),
    /// Delete every key in `[begin, end)`.
    DeleteRange(&'a [u8], &'a [u8]),
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        let rep = match pooled_buffer() {
            Some(mut rep) => {
                // Cleared when pooled; cleared again here so that the
                // header is zeros whatever the pool held.
                rep.clear();
                rep.resize(HEADER, 0);
                rep
            }
            None => vec![0; HEADER],
        };
        WriteBatch { rep, refused: None }
    }

    /// Rebuilds a batch from the bytes of [`data`](Self::data) (RocksDB's
    /// WriteBatch encoding). Every record must decode and the count must
    /// match, else the error is [`Error::Corruption`](crate::Error) with
    /// the offending byte offset.
    ///
    /// ```
    /// # use strata::WriteBatch;
    /// let mut b = WriteBatch::new();
    /// b.put("k", "v");
    /// assert_eq!(WriteBatch::from_bytes(b.data().to_vec())?, b);
    /// assert!(WriteBatch::from_bytes(vec![1, 2, 3]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(rep: Vec<u8>) -> crate::error::Result<WriteBatch> {
        Self::decode(rep)
            .map_err(|(offset, m)| crate::error::Error::corruption("write batch", offset, m))
    }

    /// [`from_bytes`](Self::from_bytes) with the message bare, for callers
    /// that name the file it came from. The offset is the byte of the batch
    /// where the problem was found: the start of a record that does not
    /// decode, the count field (8) for a count that does not match, 0 for
    /// a batch shorter than its header. A caller reading the batch from a
    /// log maps it to a file offset (`LogReader::last_record_byte_offset`).
    pub(crate) fn decode(rep: Vec<u8>) -> std::result::Result<WriteBatch, (u64, String)> {
        if rep.len() < HEADER {
            return Err((
                0,
                format!(
                    "write batch of {} bytes is shorter than its header",
                    rep.len()
                ),
            ));
        }
        let b = WriteBatch { rep, refused: None };
        let mut n = 0u32;
        for op in b.iter() {
            match op {
                Ok(_) => n += 1,
                // `BatchIter` reports where the bad record starts; kept,
                // not flattened into a message at offset 0.
                Err(crate::error::Error::Corruption { offset, msg, .. }) => {
                    return Err((offset, msg))
                }
                Err(e) => return Err((0, e.to_string())),
            }
        }
        if n != b.count() {
            return Err((
                8,
                format!("write batch header says {} records, found {n}", b.count()),
            ));
        }
        Ok(b)
    }

    /// Leaves an update out and marks the batch refused (the first reason
    /// is kept): see the `refused` field.
    fn refuse(&mut self, why: String) -> &mut Self {
        self.refused.get_or_insert(why);
        self
    }

    /// Whether the batch can be written: `Ok`, or the
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) that
    /// [`Db::write`](crate::Db::write) would refuse it with, because an
    /// update was refused as it was added (the first such update's reason;
    /// see the [type's documentation](Self)). A refused update is not in
    /// the batch, so [`len`](Self::len) and [`is_empty`](Self::is_empty)
    /// do not count it: check here, not there.
    ///
    /// ```
    /// use strata::WriteBatch;
    /// let mut b = WriteBatch::new();
    /// b.put("a", "1");
    /// assert!(b.status().is_ok());
    /// b.delete_range("z", "a"); // reversed: refused, left out
    /// assert_eq!(b.len(), 1);
    /// let e = b.status().unwrap_err();
    /// assert!(e.is_invalid_argument());
    /// assert!(e.to_string().contains("is above end"), "{e}");
    /// b.clear(); // a cleared batch can be written again
    /// assert!(b.status().is_ok());
    /// ```
    pub fn status(&self) -> crate::error::Result<()> {
        match &self.refused {
            Some(why) => Err(crate::error::Error::invalid(why.clone())),
            None => Ok(()),
        }
    }

    /// Sets `key` to `value`. A key longer than [`MAX_KEY_BYTES`] or a
    /// value longer than [`MAX_VALUE_BYTES`] is left out and makes the
    /// batch refused (see [`status`](Self::status)):
    /// [`Db::write`](crate::Db::write) refuses it whole
    /// (`InvalidArgument`). Returns the batch, so calls chain.
    ///
    /// ```
    /// use strata::WriteBatch;
    /// let mut b = WriteBatch::new();
    /// b.put("user:1", "ada").put(b"raw\x00key", [1u8, 2, 3]);
    /// assert_eq!(b.len(), 2);
    /// ```
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        if let Some(why) = too_long(key.as_ref(), value.as_ref()) {
            return self.refuse(why);
        }
        self.rep.push(ValueKind::Value as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
        put_length_prefixed(&mut self.rep, value.as_ref());
        self.bump();
        self
    }

    /// Removes `key` (a key longer than [`MAX_KEY_BYTES`] makes the batch
    /// refused, as for [`put`](Self::put)).
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        if let Some(why) = too_long(key.as_ref(), b"") {
            return self.refuse(why);
        }
        self.rep.push(ValueKind::Deletion as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
        self.bump();
        self
    }

    /// Deletes every key in `[begin, end)`. An empty range is a no-op that
    /// still takes a sequence number; a `begin` above `end` is left out
    /// and makes the batch refused ([`status`](Self::status);
    /// [`Db::write`](crate::Db::write) refuses it whole, `InvalidArgument`,
    /// as [`Db::delete_range`](crate::Db::delete_range) refuses it), since
    /// swapped arguments would otherwise delete nothing, silently.
    ///
    /// ```
    /// use strata::{Db, WriteBatch, WriteOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// for k in ["tmp:1", "tmp:2", "user:1"] {
    ///     db.put(k, "")?;
    /// }
    /// let mut b = WriteBatch::new();
    /// b.delete_range("tmp:", "tmp;"); // every key starting with "tmp:"
    /// db.write(b, &WriteOptions::default())?;
    /// assert_eq!(db.iter().count(), 1);
    ///
    /// let mut swapped = WriteBatch::new();
    /// swapped.put("x", "1").delete_range("tmp;", "tmp:");
    /// assert!(db.write(swapped, &WriteOptions::default()).is_err()); // none of it written
    /// assert_eq!(db.get("x")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range(&mut self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> &mut Self {
        let (b, e) = (begin.as_ref(), end.as_ref());
        if let Some(why) = too_long(b, b"").or_else(|| too_long(e, b"")) {
            return self.refuse(why);
        }
        if b > e {
            return self.refuse(range_reversed(b, e));
        }
        self.rep.push(ValueKind::RangeDeletion as u8);
        put_length_prefixed(&mut self.rep, begin.as_ref());
        put_length_prefixed(&mut self.rep, end.as_ref());
        self.bump();
        self
    }

    /// Appends a log-data record: carried in the WAL, never applied, not
    /// counted (RocksDB's `PutLogData`).
    pub(crate) fn put_log_data(&mut self, blob: &[u8]) -> &mut Self {
        self.rep.push(LOG_DATA);
        put_length_prefixed(&mut self.rep, blob);
        self
    }

    /// The batch's log-data records, in order (see
    /// [`put_log_data`](Self::put_log_data)); `None` if a record does not
    /// decode.
    pub(crate) fn log_data(&self) -> Option<Vec<&[u8]>> {
        let mut r = Reader::new(&self.rep[HEADER..]);
        let mut out = Vec::new();
        while !r.is_empty() {
            match r.bytes(1)?[0] {
                0x01 | 0x0F => {
                    r.length_prefixed()?;
                    r.length_prefixed()?;
                }
                0x00 => {
                    r.length_prefixed()?;
                }
                LOG_DATA => out.push(r.length_prefixed()?),
                _ => return None,
            }
        }
        Some(out)
    }

    /// Appends every update of `other`. If `other` is refused (see
    /// [`status`](Self::status)), so is this batch from now on: the update
    /// `other` left out would otherwise be missing from this batch
    /// silently, and the rest of `other` written without it. This batch's
    /// own refusal, if it has one, is the one kept.
    ///
    /// ```
    /// use strata::WriteBatch;
    /// let mut bad = WriteBatch::new();
    /// bad.put("x", "1").delete_range("c", "a"); // reversed: refused
    /// let mut batch = WriteBatch::new();
    /// batch.put("y", "2");
    /// batch.append(&bad);
    /// assert_eq!(batch.len(), 2);
    /// assert!(batch.status().is_err(), "refused whole, as `bad` is");
    /// ```
    pub fn append(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(&other.rep[HEADER..]);
        let n = self.count() + other.count();
        self.rep[8..12].copy_from_slice(&n.to_le_bytes());
        if let Some(why) = &other.refused {
            self.refused.get_or_insert_with(|| why.clone());
        }
    }

    fn bump(&mut self) {
        let n = self.count() + 1;
        self.rep[8..12].copy_from_slice(&n.to_le_bytes());
    }

    /// Updates in the batch.
    pub fn len(&self) -> usize {
        self.count() as usize
    }

    /// Updates in the batch (as the encoding stores it).
    pub fn count(&self) -> u32 {
        decode_fixed32(&self.rep[8..12])
    }

    /// Whether the batch holds no update.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    pub(crate) fn sequence(&self) -> u64 {
        decode_fixed64(&self.rep[..8])
    }

    /// The sequence number of the batch's last update (an empty batch,
    /// an ingestion's marker, has only its own), or `None` if its numbers
    /// run past [`MAX_SEQUENCE`](crate::key::MAX_SEQUENCE): only a damaged
    /// or forged log record holds such a batch, and recovery refuses it.
    pub(crate) fn last_sequence(&self) -> Option<u64> {
        let last = self
            .sequence()
            .checked_add(u64::from(self.count().max(1)) - 1)?;
        (last <= crate::key::MAX_SEQUENCE).then_some(last)
    }

    pub(crate) fn set_sequence(&mut self, seq: u64) {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
    }

    /// Removes every update, keeping the allocation, and forgets a refusal
    /// (see [`status`](Self::status)): the batch is as new.
    ///
    /// ```
    /// use strata::{Db, WriteBatch, WriteOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open_default(dir.path())?;
    /// let mut b = WriteBatch::new();
    /// b.put("a", "1").delete_range("z", "a"); // reversed: refused
    /// b.clear(); // start over: no updates, no refusal
    /// b.put("a", "2");
    /// db.write(b, &WriteOptions::default())?;
    /// assert_eq!(db.get("a")?, Some(b"2".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER, 0);
        self.refused = None;
    }

    /// Bytes of the encoded batch (what goes into the WAL). A refused
    /// batch's bytes hold only the updates it accepted, and say nothing of
    /// the refusal: check [`status`](Self::status) before handing them on.
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    /// Size of the encoded batch in bytes.
    pub fn size_bytes(&self) -> usize {
        self.rep.len()
    }

    /// The batch's updates in the order they were added (and are applied).
    /// A batch decoded from bytes ([`WriteBatch::from_bytes`]) that turns
    /// out damaged past its header yields an error at the damage.
    ///
    /// ```
    /// use strata::{BatchOp, WriteBatch};
    /// let mut b = WriteBatch::new();
    /// b.put("k", "v").delete("old");
    /// let ops: Vec<BatchOp> = b.iter().collect::<strata::Result<_>>()?;
    /// assert_eq!(ops, [BatchOp::Put(b"k", b"v"), BatchOp::Delete(b"old")]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            r: Reader::new(&self.rep[HEADER..]),
        }
    }
}

/// Iterator over a batch's updates (see [`WriteBatch::iter`]).
pub struct BatchIter<'a> {
    r: Reader<'a>,
}

impl std::fmt::Debug for BatchIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchIter")
            .field("at", &(HEADER + self.r.pos()))
            .finish_non_exhaustive()
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = crate::error::Result<BatchOp<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.r.is_empty() {
                return None;
            }
            let at = self.r.pos();
            let tag = self.r.bytes(1)?[0];
            let bad = |what: &str| {
                Some(Err(crate::error::Error::corruption(
                    "write batch",
                    (HEADER + at) as u64,
                    what,
                )))
            };
            let op = match tag {
                LOG_DATA => match self.r.length_prefixed() {
                    // Not an update: skipped.
                    Some(_) => continue,
                    None => return bad("truncated log data"),
                },
                0x01 => match (self.r.length_prefixed(), self.r.length_prefixed()) {
                    (Some(k), Some(v)) => BatchOp::Put(k, v),
                    _ => return bad("truncated put"),
                },
                0x00 => match self.r.length_prefixed() {
                    Some(k) => BatchOp::Delete(k),
                    None => return bad("truncated delete"),
                },
                0x0F => match (self.r.length_prefixed(), self.r.length_prefixed()) {
                    (Some(a), Some(b)) => BatchOp::DeleteRange(a, b),
                    _ => return bad("truncated delete-range"),
                },
                t => {
                    // Make the iterator stop after reporting.
                    self.r = Reader::new(&[]);
                    return bad(&format!("unknown record tag {t:#04x}"));
                }
            };
            return Some(Ok(op));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dropped batch's buffer comes back from `new` (so its capacity is
    /// reused) but empty: no updates, a zero header, none of the old bytes.
    /// The pool keeps no more than its limits.
    #[test]
    fn pooled_buffers_come_back_empty_and_bounded() {
        // Tests share threads only one at a time; start from an empty pool.
        POOL.with(|p| p.borrow_mut().clear());
        let mut b = WriteBatch::new();
        for i in 0..100u32 {
            b.put(i.to_be_bytes(), [0xEE; 40]);
        }
        b.set_sequence(77);
        let (ptr, cap) = (b.rep.as_ptr(), b.rep.capacity());
        drop(b);
        let c = WriteBatch::new();
        assert_eq!(c.rep.as_ptr(), ptr, "the dropped buffer is reused");
        assert_eq!(c.rep.capacity(), cap);
        assert_eq!(c.data(), &[0u8; HEADER][..]);
        assert_eq!((c.count(), c.sequence(), c.len()), (0, 0, 0));
        assert_eq!(c.iter().count(), 0);
        assert_eq!(WriteBatch::from_bytes(c.data().to_vec()).unwrap(), c);
        drop(c);
        // Bounds: never more than POOL_BUFFERS buffers nor POOL_MAX_BYTES.
        let many: Vec<WriteBatch> = (0..2 * POOL_BUFFERS)
            .map(|_| {
                let mut b = WriteBatch::new();
                b.put(b"k", [1u8; 1000]);
                b
            })
            .collect();
        drop(many);
        let mut big = WriteBatch::new();
        big.put(b"k", vec![2u8; POOL_MAX_BYTES]);
        drop(big);
        POOL.with(|p| {
            let p = p.borrow();
            assert!(p.len() <= POOL_BUFFERS);
            assert!(p.iter().map(Vec::capacity).sum::<usize>() <= POOL_MAX_BYTES);
            assert!(p.iter().all(Vec::is_empty));
        });
    }

    #[test]
    fn round_trip_and_counts() {
        let mut b = WriteBatch::new();
        b.put(b"k1", b"v1")
            .delete(b"k2")
            .delete_range(b"a", b"z")
            .put(b"", b"");
        b.set_sequence(1000);
        assert_eq!(b.count(), 4);
        let c = WriteBatch::from_bytes(b.data().to_vec()).unwrap();
        assert_eq!(c.sequence(), 1000);
        let ops: Vec<_> = c.iter().map(|o| o.unwrap()).collect();
        assert_eq!(
            ops,
            vec![
                BatchOp::Put(b"k1", b"v1"),
                BatchOp::Delete(b"k2"),
                BatchOp::DeleteRange(b"a", b"z"),
                BatchOp::Put(b"", b""),
            ]
        );
        let mut d = WriteBatch::new();
        d.put(b"x", b"y");
        d.append(&c);
        assert_eq!(d.count(), 5);
    }

    #[test]
    fn log_data_is_carried_but_not_applied() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v").put_log_data(b"blob").delete(b"d");
        b.put_log_data(b"");
        assert_eq!(b.count(), 2, "log data is not counted");
        let c = WriteBatch::from_bytes(b.data().to_vec()).unwrap();
        let ops: Vec<_> = c.iter().map(|o| o.unwrap()).collect();
        assert_eq!(ops, vec![BatchOp::Put(b"k", b"v"), BatchOp::Delete(b"d")]);
        assert_eq!(c.log_data().unwrap(), vec![&b"blob"[..], &b""[..]]);
        let mut only = WriteBatch::new();
        only.put_log_data(b"x");
        assert!(only.is_empty());
        assert_eq!(WriteBatch::from_bytes(only.data().to_vec()).unwrap(), only);
        let cut = &only.data()[..only.data().len() - 1];
        assert!(WriteBatch::from_bytes(cut.to_vec()).is_err());
    }

    #[test]
    fn damaged_batches_are_rejected() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value").delete(b"gone");
        let good = b.data().to_vec();
        for cut in 0..good.len() {
            assert!(
                WriteBatch::from_bytes(good[..cut].to_vec()).is_err(),
                "cut {cut}"
            );
        }
        let mut wrong_count = good.clone();
        wrong_count[8] = 3;
        assert!(WriteBatch::from_bytes(wrong_count).is_err());
        let mut bad_tag = good.clone();
        bad_tag[HEADER] = 0x55;
        assert!(WriteBatch::from_bytes(bad_tag).is_err());
    }

    /// A bad record inside a batch is reported at the byte where it starts
    /// (or the count field, for a count that does not match), by `decode`
    /// and `from_bytes` alike. `decode` used to say offset 0 for every bad
    /// record, with the record's real offset buried in its message.
    #[test]
    fn a_bad_record_is_reported_at_its_offset() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value")
            .put_log_data(b"blob")
            .delete(b"gone");
        let good = b.data().to_vec();
        // put: tag, 1 + 3, 1 + 5 bytes; log data: tag, 1 + 4 bytes.
        let log_data_at = HEADER + 11;
        let delete_at = log_data_at + 6;
        assert_eq!(good[log_data_at], LOG_DATA);
        assert_eq!(good[delete_at], ValueKind::Deletion as u8);
        let decoded_at = |rep: Vec<u8>| -> (u64, String) {
            let (at, msg) = WriteBatch::decode(rep.clone()).unwrap_err();
            match WriteBatch::from_bytes(rep).unwrap_err() {
                crate::error::Error::Corruption {
                    file,
                    offset,
                    msg: m,
                } => {
                    assert_eq!((file.as_str(), offset, &m), ("write batch", at, &msg));
                }
                e => panic!("not corruption: {e}"),
            }
            assert!(
                !msg.contains("offset"),
                "the offset is not in the message: {msg}"
            );
            (at, msg)
        };
        // Cut inside the last record (the delete): its start.
        for cut in delete_at + 1..good.len() {
            let (at, msg) = decoded_at(good[..cut].to_vec());
            assert_eq!(at, delete_at as u64, "cut at {cut}: {msg}");
            assert!(msg.contains("truncated delete"), "{msg}");
        }
        // Cut inside the log data: its start.
        let (at, msg) = decoded_at(good[..log_data_at + 3].to_vec());
        assert_eq!(at, log_data_at as u64, "{msg}");
        assert!(msg.contains("truncated log data"), "{msg}");
        // An unknown tag where the delete starts.
        let mut garbled = good.clone();
        garbled[delete_at] = 0x55;
        let (at, msg) = decoded_at(garbled);
        assert_eq!(at, delete_at as u64, "{msg}");
        assert!(msg.contains("unknown record tag 0x55"), "{msg}");
        // A put whose key length runs past the batch: the put's start.
        let mut long_key = good.clone();
        long_key[HEADER + 1] = 0x7f;
        let (at, msg) = decoded_at(long_key);
        assert_eq!(at, HEADER as u64, "{msg}");
        // Every record decodes but the count is wrong: the count field.
        let mut wrong_count = good.clone();
        wrong_count[8] = 3;
        assert_eq!(decoded_at(wrong_count).0, 8);
        // Shorter than the header: offset 0.
        assert_eq!(decoded_at(good[..HEADER - 1].to_vec()).0, 0);
    }
}
