//! Making earlier unsynced writes durable: `Db::sync_wal` (RocksDB's
//! `FlushWAL(true)` / `SyncWAL`) and an empty batch written with `sync`,
//! which does the same, and the `*_opt` writes with `sync`. Checked with
//! power cuts on the fault-injecting file system (`vfs::FaultVfs`): its
//! crash image keeps only what was fsynced (file bytes and directory
//! entries), so an unsynced write is lost there for certain, and one made
//! durable must be in the image.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use strata::vfs::{FaultVfs, Vfs};
use strata::{Db, Options, WriteBatch, WriteOptions};

fn opts(vfs: &FaultVfs, wal_flush_interval: Duration) -> Options {
    let vfs: Arc<dyn Vfs> = Arc::new(vfs.clone());
    Options {
        vfs: Some(vfs),
        // Small: the writes below rotate memtables, so a WAL retired by a
        // rotation (synced later by the WAL thread) is among those synced.
        memtable_size: 16 << 10,
        wal_flush_interval,
        ..Options::default()
    }
}

/// The keys of `prefix` that the database in the power-cut image holds.
fn after_power_cut(vfs: &FaultVfs, prefix: &str) -> usize {
    let image = vfs.crash_clone();
    let db = Db::open_read_only(Path::new("/db"), opts(&image, Duration::ZERO)).unwrap();
    db.prefix(prefix).count()
}

#[test]
fn sync_wal_and_an_empty_synced_batch_make_earlier_writes_durable() {
    // With the WAL thread (writes wait in Strata's buffer; a long interval
    // so it does not write them out on its own) and without it (each
    // write handed to the operating system at once, unsynced).
    for interval in [Duration::from_secs(60), Duration::ZERO] {
        let vfs = FaultVfs::new();
        let db = Db::open("/db", opts(&vfs, interval)).unwrap();
        let put = |prefix: &str| {
            for i in 0..500 {
                db.put(format!("{prefix}{i:04}"), [b'v'; 40]).unwrap();
            }
        };
        put("a:");
        // Rotations sync the WALs they retire (at the latest at the next
        // rotation), but the writes in the active WAL are lost.
        let kept = after_power_cut(&vfs, "a:");
        assert!(
            kept < 500,
            "{interval:?}: every unsynced write survived a power cut; the test shows nothing"
        );
        db.sync_wal().unwrap();
        assert_eq!(after_power_cut(&vfs, "a:"), 500, "{interval:?}: sync_wal");

        put("b:");
        db.write(WriteBatch::new(), &WriteOptions { sync: true })
            .unwrap();
        assert_eq!(
            after_power_cut(&vfs, "b:"),
            500,
            "{interval:?}: an empty batch written with sync"
        );

        // The `_opt` writes: synced, each carries the unsynced ones before it.
        put("c:");
        let sync = WriteOptions { sync: true };
        db.put_opt("d:1", "x", &sync).unwrap();
        assert_eq!(after_power_cut(&vfs, "c:"), 500, "{interval:?}: put_opt");
        assert_eq!(after_power_cut(&vfs, "d:"), 1, "{interval:?}: put_opt");
        db.delete_opt("c:0000", &sync).unwrap();
        assert_eq!(after_power_cut(&vfs, "c:"), 499, "{interval:?}: delete_opt");
        db.delete_range_opt("c:", "c;", &sync).unwrap();
        assert_eq!(
            after_power_cut(&vfs, "c:"),
            0,
            "{interval:?}: delete_range_opt"
        );
        let waits = db.metrics().write_waits;
        let syncs: u64 = waits
            .iter()
            .filter(|w| w.cause == "wal sync")
            .map(|w| w.count)
            .sum();
        assert!(
            syncs >= 5,
            "{interval:?}: each sync is a wait counted: {waits:?}"
        );
        db.close().unwrap();
    }
}

/// A read-only database has no WAL of its own to sync: `sync_wal` is
/// `NotSupported`, as its writes are.
#[test]
fn sync_wal_on_a_read_only_database_is_not_supported() {
    let dir = tempfile::tempdir().unwrap();
    Db::open_default(dir.path()).unwrap().close().unwrap();
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert!(ro.sync_wal().unwrap_err().is_not_supported());
}
