//! The database's side of [`crate::events`]: stamps each event with the time,
//! hands it to the listener in `Options`, and appends it as a JSON line to
//! `EVENTS` in the database directory (kept across reopens).
//!
//! The log is for people and tools, never for recovery: a failure to write
//! it disables the file (the listener still gets every event) rather than
//! failing the database. Job numbers (flushes and compactions, to pair
//! `*_begin` with `*_end`) count from 1 at each open.

pub use crate::events::EVENTS_FILE;
use crate::events::{Event, EventListener, EventRecord, TableInfo, FORMAT_VERSION};
use crate::version::{FileMeta, Version};
use crate::vfs::{self, Vfs, WritableFile};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub struct EventLog {
    file: Mutex<Option<Box<dyn WritableFile>>>,
    listener: Option<Arc<dyn EventListener>>,
    next_job: AtomicU64,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

pub fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

pub fn tables<'a>(files: impl IntoIterator<Item = (usize, &'a FileMeta)>) -> Vec<TableInfo> {
    files
        .into_iter()
        .map(|(l, f)| TableInfo::from_meta(l, f))
        .collect()
}

/// The whole tree at open: replaying later events from here gives the tree
/// at any moment.
pub fn open_event(v: &Version) -> Event {
    Event::Open {
        files: tables(v.all_files().map(|(l, f)| (l, f.as_ref()))),
    }
}

impl EventLog {
    /// Opens `EVENTS` in `dir`, keeping what earlier opens recorded.
    pub fn open(vfs: &dyn Vfs, dir: &Path, listener: Option<Arc<dyn EventListener>>) -> EventLog {
        let path = dir.join(EVENTS_FILE);
        // The VFS has no open-for-append: the old text is copied into the
        // new file.
        let mut old = vfs::read_all(vfs, &path).unwrap_or_default();
        // A last line cut short by a crash is dropped: appended to, it
        // would become a damaged line in the middle, which readers refuse.
        old.truncate(old.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1));
        let file = vfs
            .create(&path)
            .ok()
            .and_then(|mut f| f.append(&old).ok().map(|_| f));
        EventLog {
            file: Mutex::new(file),
            listener,
            next_job: AtomicU64::new(1),
        }
    }

    /// A log that writes no file (a read-only database creates nothing);
    /// the listener still hears every event.
    pub fn disabled(listener: Option<Arc<dyn EventListener>>) -> EventLog {
        EventLog {
            file: Mutex::new(None),
            listener,
            next_job: AtomicU64::new(1),
        }
    }

    /// A number for a new flush or compaction job.
    pub fn new_job(&self) -> u64 {
        self.next_job.fetch_add(1, Ordering::Relaxed)
    }

    /// Delivers an event to the listener and appends it to the log.
    pub fn record(&self, event: Event) {
        let r = EventRecord {
            v: FORMAT_VERSION,
            time: now(),
            event,
        };
        if let Some(l) = &self.listener {
            l.on_event(&r);
        }
        let mut g = self.file.lock();
        if let Some(f) = g.as_mut() {
            let mut line = r.to_json();
            line.push('\n');
            if f.append(line.as_bytes()).and_then(|_| f.flush()).is_err() {
                *g = None;
            }
        }
    }
}
