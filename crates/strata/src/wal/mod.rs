//! The log-file record format shared by the write-ahead log and the
//! MANIFEST: RocksDB's legacy log format (LevelDB's), which `ldb dump_wal`
//! reads. [`format`](mod@format) has the layout; [`LogWriter`] frames
//! logical records into 32 KiB blocks; [`LogReader`] reads them back.
//!
//! # Torn tail or corruption
//!
//! A crash can leave the end of a log unfinished: a record cut off, the
//! First fragments of a large record without its Last, zero-filled or
//! garbage bytes where the file was extended but not written. None of that
//! was acknowledged by a sync, so recovery may drop it. Damage with good
//! records after it is different: those records may have been
//! acknowledged, and skipping the damage would silently lose or reorder
//! data. The reader tells the two apart like this.
//!
//! *Damage* is the first place where the bytes are not what the writer
//! produces: a header or payload cut off by end of file, a length running
//! past its block, a checksum mismatch, an all-zero header, an unknown
//! type, a First not closed by a Last, or a Middle/Last with no First.
//!
//! - [`TailPolicy::Strict`]: damage is [`Error::Corruption`](crate::Error)
//!   at its offset.
//! - [`TailPolicy::TolerateTornTail`]: the reader searches the rest of the
//!   file for a **complete, valid logical record**: a Full record, or a
//!   First followed by Middles and a Last, every checksum good and laid out
//!   as a writer lays them out (a First fills the rest of its block),
//!   starting at any offset where a header can start. If there is one, the
//!   log went on after the damage, so it is not an unfinished last write:
//!   corruption at the damage offset (the message also names the valid
//!   record's offset). If there is none, everything from the start of the
//!   damaged logical record to end of file is a torn tail: `read_record`
//!   returns `Ok(None)` and [`LogReader::dropped_tail`] says where, how
//!   much and why.
//!
//! Why only *complete* records count: the intact later fragments of the
//! damaged record (say a page in the middle of an unsynced 1 MiB record
//! never reached the disk) are part of the same unacknowledged write and
//! prove nothing was written after it. Why every offset and not only block
//! starts: a damaged length field hides where the next record in the same
//! block begins.
//!
//! Damage inside the *last* record (bit rot after it was synced) looks to
//! the reader exactly like a torn write of it and is dropped as a tail;
//! recovery then asks [`tail::judge`] whether the dropped bytes are what an
//! unfinished write leaves (a short read at end of file, or zero fill) and
//! reports anything else as corruption. Bytes after damage that happen to form a valid
//! record (a 2^-32 chance per candidate offset for garbage; stale log data
//! in a garbage-filled tail) turn a torn tail into a corruption error:
//! recovery then stops and asks instead of dropping data. Likewise a hole
//! left by unsynced pages reaching the disk out of order, followed by later
//! records, is reported as corruption rather than guessed to be harmless.
//!
//! An unknown record type whose checksum verifies (RocksDB's recyclable or
//! compressed-WAL records) is [`Error::NotSupported`](crate::Error), not
//! damage, so such a file is never dropped as one big torn tail.

pub mod format;
pub mod reader;
pub mod staging;
pub mod tail;
pub mod writer;

pub use reader::{LogReader, TailPolicy};
// Short paths for tests (the engine names the submodules).
#[cfg(any(test, feature = "internals"))]
pub use reader::{Damage, DroppedTail};
#[cfg(any(test, feature = "internals"))]
pub use writer::LogWriter;

#[cfg(test)]
mod tests;
