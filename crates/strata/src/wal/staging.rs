//! A log writer that frames records into memory instead of into a file.
//!
//! The WAL (`db::wal_buffer`) and the MANIFEST (`version::manifest_log`)
//! both frame records under a lock, cheaply, and write the bytes out later
//! without it. Framing depends only on the offset within the log (block
//! boundaries every 32 KiB), so the staged bytes are exactly what the file
//! would have received, provided they are appended to it in the order they
//! were staged, from the offset the writer started at. The staging file's
//! length keeps counting bytes already taken out of the buffer, because
//! that length is the log writer's offset.

use super::writer::LogWriter;
use crate::error::Result;
use crate::vfs::WritableFile;
use parking_lot::Mutex;
use std::sync::Arc;

/// Bytes framed and not yet taken out to be written to the file.
pub type Staged = Arc<Mutex<Vec<u8>>>;

/// A [`LogWriter`] for a new, empty log (`name` in errors) that appends its
/// framed bytes to the returned buffer.
pub fn staging_writer(name: impl Into<String>) -> (LogWriter, Staged) {
    let staged: Staged = Arc::new(Mutex::new(Vec::new()));
    let sink = StagingFile {
        buf: Arc::clone(&staged),
        len: 0,
    };
    (LogWriter::new(Box::new(sink), name), staged)
}

/// The in-memory file a staging writer appends to.
struct StagingFile {
    buf: Staged,
    /// Every byte ever appended (the log writer's offset), including those
    /// already taken out of `buf`.
    len: u64,
}

impl WritableFile for StagingFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.buf.lock().extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
}
