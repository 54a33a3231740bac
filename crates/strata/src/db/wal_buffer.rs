//! The active WAL as the commit pipeline sees it: records are framed into
//! memory (`Wal`, under the pipeline's WAL lock) and written to the file
//! (`WalFile`, under its own lock) by whoever writes out, never by a
//! foreground write that did not ask for it.
//!
//! Why: a `write` system call can block for tens of milliseconds on a
//! loaded machine (dirty-page throttling while a flush or compaction writes
//! its table). Framing into memory keeps that call, and the fsync, out of
//! the WAL lock that every write group takes; the bytes go to the file in
//! the order they were framed, because write-outs take them in that order
//! under the pipeline's write-out lock (see `commit::CommitPipeline`).
//!
//! Invariants: `Wal::log` frames records exactly as they appear in the
//! file (its offset is the file offset once every taken chunk is written);
//! bytes whose write failed stay first in line (`WalFile::unwritten`) and
//! go before anything else at the next attempt, as a buffered file keeps
//! them (a failed write sets the background error, so the next attempt is
//! the best-effort write-out at close).

use crate::error::Result;
use crate::vfs::WritableFile;
use crate::wal::staging::{staging_writer, Staged};
use crate::wal::writer::LogWriter;
use parking_lot::Mutex;
use std::sync::Arc;

/// Framed bytes not yet handed to the file.
type Pending = Staged;

/// The WAL file itself.
pub(crate) struct WalFile {
    file: Box<dyn WritableFile>,
    /// Bytes taken for this file whose write failed.
    unwritten: Vec<u8>,
}

impl WalFile {
    /// Appends `bytes` and hands them to the operating system.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        if self.unwritten.is_empty() {
            if bytes.is_empty() {
                return Ok(());
            }
            let before = self.file.len();
            if let Err(e) = self.file.append(bytes) {
                // What a short write did write is not written again.
                let done = (self.file.len() - before) as usize;
                self.unwritten = bytes[done.min(bytes.len())..].to_vec();
                return Err(e);
            }
        } else {
            self.unwritten.extend_from_slice(bytes);
            let before = self.file.len();
            if let Err(e) = self.file.append(&self.unwritten) {
                let done = (self.file.len() - before) as usize;
                self.unwritten.drain(..done.min(self.unwritten.len()));
                return Err(e);
            }
            self.unwritten.clear();
        }
        self.file.flush()
    }

    /// Makes everything written durable.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }
}

/// The WAL records are framed into: one per WAL file.
pub(crate) struct Wal {
    /// The WAL's file number.
    pub number: u64,
    pub log: LogWriter,
    pending: Pending,
    pub file: Arc<Mutex<WalFile>>,
}

impl Wal {
    /// WAL `number`, writing to `file` (named `name` in errors), at offset 0.
    pub fn new(number: u64, file: Box<dyn WritableFile>, name: impl Into<String>) -> Wal {
        let (log, pending) = staging_writer(name);
        Wal {
            number,
            log,
            pending,
            file: Arc::new(Mutex::new(WalFile {
                file,
                unwritten: Vec::new(),
            })),
        }
    }

    /// Frames a record (memory only).
    pub fn append(&mut self, payload: &[u8]) -> Result<()> {
        self.log.add_record(payload)
    }

    /// Takes the framed bytes not yet written, for the caller to write to
    /// `file` (in the order taken).
    pub fn take_pending(&mut self) -> Vec<u8> {
        std::mem::take(&mut *self.pending.lock())
    }

    /// Whether framed bytes wait to be taken.
    pub fn has_pending(&self) -> bool {
        !self.pending.lock().is_empty()
    }
}
