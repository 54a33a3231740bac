//! The event log: one JSON line per flush, compaction, ingestion and open
//! in the file `EVENTS` of the database directory, kept across reopens. Each event
//! names the files it added and removed with their levels, sizes and user-key
//! bounds, so the history of the tree can be replayed (the LSM visualiser
//! reads it) and every byte a flush or compaction wrote is accounted for.

use crate::util::hex;
use crate::version::{FileMeta, Version};
use crate::vfs::{self, Vfs, WritableFile};
use parking_lot::Mutex;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const EVENTS_FILE: &str = "EVENTS";

pub struct EventLog {
    file: Mutex<Option<Box<dyn WritableFile>>>,
}

/// One event, already rendered as a JSON object.
pub struct Event(String);

fn file_json(level: usize, f: &FileMeta) -> String {
    let backing = match f.backing {
        Some(b) => format!(",\"backing\":{b}"),
        None => String::new(),
    };
    format!(
        "{{\"level\":{level},\"number\":{},\"size\":{},\"smallest\":\"{}\",\"largest\":\"{}\",\"smallest_seq\":{},\"largest_seq\":{}{backing}}}",
        f.number,
        f.size,
        hex::encode(f.smallest_user_key()),
        hex::encode(f.largest_user_key()),
        f.smallest_seq,
        f.largest_seq
    )
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Event {
    pub fn flush(memtable: u64, outputs: &[FileMeta], took: Duration) -> Event {
        let out: Vec<String> = outputs.iter().map(|f| file_json(0, f)).collect();
        let bytes: u64 = outputs.iter().map(|f| f.size).sum();
        Event(format!(
            "{{\"time\":{:.6},\"event\":\"flush\",\"memtable\":{memtable},\"added\":[{}],\"removed\":[],\"bytes_written\":{bytes},\"micros\":{}}}",
            now(),
            out.join(","),
            took.as_micros()
        ))
    }

    #[allow(clippy::too_many_arguments)]
    pub fn compaction(
        reason: &str,
        start_level: usize,
        output_level: usize,
        inputs: &[(usize, &FileMeta)],
        outputs: &[FileMeta],
        moved: bool,
        took: Duration,
    ) -> Event {
        let removed: Vec<String> = inputs.iter().map(|(l, f)| file_json(*l, f)).collect();
        let added: Vec<String> = outputs.iter().map(|f| file_json(output_level, f)).collect();
        let bytes_in: u64 = inputs.iter().map(|(_, f)| f.size).sum();
        let bytes_out: u64 = if moved {
            0
        } else {
            outputs.iter().map(|f| f.size).sum()
        };
        Event(format!(
            "{{\"time\":{:.6},\"event\":\"compaction\",\"reason\":\"{reason}\",\"start_level\":{start_level},\"output_level\":{output_level},\"moved\":{moved},\"added\":[{}],\"removed\":[{}],\"bytes_read\":{bytes_in},\"bytes_written\":{bytes_out},\"micros\":{}}}",
            now(),
            added.join(","),
            removed.join(","),
            took.as_micros()
        ))
    }

    /// An ingestion placed into the tree: the files it added (ingested ones
    /// and an excise's virtual files) and those an excise removed.
    pub fn ingest(
        seq: u64,
        excise: Option<&(Vec<u8>, Vec<u8>)>,
        removed: &[(usize, &FileMeta)],
        added: &[(usize, FileMeta)],
    ) -> Event {
        let removed: Vec<String> = removed.iter().map(|(l, f)| file_json(*l, f)).collect();
        let added: Vec<String> = added.iter().map(|(l, f)| file_json(*l, f)).collect();
        let excise = match excise {
            Some((a, b)) => format!(
                ",\"excise\":[\"{}\",\"{}\"]",
                hex::encode(a),
                hex::encode(b)
            ),
            None => String::new(),
        };
        Event(format!(
            "{{\"time\":{:.6},\"event\":\"ingest\",\"sequence\":{seq}{excise},\"added\":[{}],\"removed\":[{}]}}",
            now(),
            added.join(","),
            removed.join(",")
        ))
    }

    /// The whole tree at open: replaying later events from here gives the
    /// tree at any moment.
    pub fn open(v: &Version) -> Event {
        let mut files = String::new();
        for (i, (l, f)) in v.all_files().enumerate() {
            if i > 0 {
                files.push(',');
            }
            let _ = write!(files, "{}", file_json(l, f));
        }
        Event(format!(
            "{{\"time\":{:.6},\"event\":\"open\",\"added\":[{files}],\"removed\":[]}}",
            now()
        ))
    }

    pub fn stall(cause: &str, took: Duration) -> Event {
        Event(format!(
            "{{\"time\":{:.6},\"event\":\"stall\",\"cause\":\"{cause}\",\"micros\":{}}}",
            now(),
            took.as_micros()
        ))
    }
}

impl EventLog {
    /// Opens `EVENTS` in `dir`, keeping what earlier opens recorded.
    pub fn open(vfs: &dyn Vfs, dir: &Path) -> EventLog {
        let path = dir.join(EVENTS_FILE);
        let old = vfs::read_all(vfs, &path).unwrap_or_default();
        let file = vfs
            .create(&path)
            .ok()
            .and_then(|mut f| f.append(&old).ok().map(|_| f));
        EventLog {
            file: Mutex::new(file),
        }
    }

    /// A log that records nothing (a read-only database writes no file).
    pub fn disabled() -> EventLog {
        EventLog {
            file: Mutex::new(None),
        }
    }

    /// Appends an event. The log is for people and tools, not recovery, so a
    /// failure to write it disables it rather than failing the database.
    pub fn record(&self, e: &Event) {
        let mut g = self.file.lock();
        if let Some(f) = g.as_mut() {
            let mut line = e.0.clone();
            line.push('\n');
            if f.append(line.as_bytes()).and_then(|_| f.flush()).is_err() {
                *g = None;
            }
        }
    }
}
