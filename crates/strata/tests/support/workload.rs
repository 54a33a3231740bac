//! A seeded workload for the fault and power-cut tests: writes (synced and
//! not), batches, deletes, range deletes, ingestions (some excising a
//! range), flushes and compactions, generated up front so a seed names one
//! sequence, with a model that says which database states a recovery may
//! legitimately produce.
//!
//! The recovery rule checked (`check_recovered`): after a crash the
//! database holds exactly the effects of a *prefix* of the executed
//! operations (the WAL and the MANIFEST are ordered logs), that prefix
//! reaches at least the last acknowledged durable operation (a synced
//! write, an ingestion, a flush or a compaction), and an operation that
//! failed may be in it or not (its effect is undefined, but never partial:
//! a batch or an ingestion is all or nothing).

#![allow(dead_code)]

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use strata::sstable::{SstOptions, SstWriter};
use strata::vfs::Vfs;
use strata::{Db, IngestOptions, WriteBatch, WriteOptions};

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Clone, Debug)]
pub enum WOp {
    /// Puts (`Some`) and deletes (`None`) applied as one batch.
    Batch {
        ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        sync: bool,
    },
    DeleteRange {
        a: Vec<u8>,
        b: Vec<u8>,
        sync: bool,
    },
    Ingest {
        path: PathBuf,
        kvs: Vec<(Vec<u8>, Vec<u8>)>,
        excise: Option<(Vec<u8>, Vec<u8>)>,
        /// Applied as a write batch (under the small-file threshold).
        as_batch: bool,
    },
    Flush,
    Compact,
}

impl WOp {
    /// Whether an acknowledged `self` is durable (survives a power cut), and
    /// makes every earlier acknowledged operation durable with it.
    pub fn durable_when_acked(&self) -> bool {
        match self {
            WOp::Batch { sync, .. } | WOp::DeleteRange { sync, .. } => *sync,
            WOp::Ingest { .. } | WOp::Flush | WOp::Compact => true,
        }
    }

    pub fn apply(&self, m: &mut Model) {
        match self {
            WOp::Batch { ops, .. } => {
                for (k, v) in ops {
                    match v {
                        Some(v) => m.insert(k.clone(), v.clone()),
                        None => m.remove(k),
                    };
                }
            }
            WOp::DeleteRange { a, b, .. } => {
                let doomed: Vec<_> = m
                    .range(a.clone()..b.clone())
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in doomed {
                    m.remove(&k);
                }
            }
            WOp::Ingest { kvs, excise, .. } => {
                if let Some((a, b)) = excise {
                    WOp::DeleteRange {
                        a: a.clone(),
                        b: b.clone(),
                        sync: true,
                    }
                    .apply(m);
                }
                for (k, v) in kvs {
                    m.insert(k.clone(), v.clone());
                }
            }
            WOp::Flush | WOp::Compact => {}
        }
    }

    /// Runs the operation on `db`. An ingestion first writes its file
    /// through `vfs` (the database's file system, which ingestion reads
    /// through), so a fault can also strike the caller's own file.
    pub fn run(&self, db: &Db, vfs: &dyn Vfs) -> strata::Result<()> {
        match self {
            WOp::Batch { ops, sync } => {
                let mut b = WriteBatch::new();
                for (k, v) in ops {
                    match v {
                        Some(v) => b.put(k, v),
                        None => b.delete(k),
                    };
                }
                db.write(b, &WriteOptions { sync: *sync })
            }
            WOp::DeleteRange { a, b, sync } => {
                let mut wb = WriteBatch::new();
                wb.delete_range(a, b);
                db.write(wb, &WriteOptions { sync: *sync })
            }
            WOp::Ingest {
                path,
                kvs,
                excise,
                as_batch,
            } => {
                let mut w = SstWriter::create_in(vfs, path, SstOptions::for_ingestion())?;
                for (k, v) in kvs {
                    w.put(k, v)?;
                }
                w.finish()?;
                db.ingest(
                    std::slice::from_ref(path),
                    &IngestOptions {
                        small_file_bytes: if *as_batch { 1 << 20 } else { 0 },
                        excise: excise.clone(),
                        ..IngestOptions::default()
                    },
                )
                .map(|_| ())
            }
            WOp::Flush => db.flush(),
            WOp::Compact => db.compact_range(None, None),
        }
    }
}

fn key(rng: &mut StdRng, keys: u32) -> Vec<u8> {
    format!("k{:04}", rng.gen_range(0..keys)).into_bytes()
}

/// `n` operations over `keys` keys; ingestion files are written in `files`.
pub fn generate(seed: u64, n: usize, keys: u32, files: &Path) -> Vec<WOp> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut ops = Vec::with_capacity(n);
    for i in 0..n {
        let sync = rng.gen_bool(0.5);
        let op = match rng.gen_range(0..100) {
            0..=49 => WOp::Batch {
                ops: vec![(key(&mut rng, keys), Some(value(&mut rng, i)))],
                sync,
            },
            50..=64 => WOp::Batch {
                ops: (0..rng.gen_range(2..8))
                    .map(|_| {
                        let k = key(&mut rng, keys);
                        let v = if rng.gen_bool(0.2) {
                            None
                        } else {
                            Some(value(&mut rng, i))
                        };
                        (k, v)
                    })
                    .collect(),
                sync,
            },
            65..=69 => {
                let (a, b) = range(&mut rng, keys);
                WOp::DeleteRange { a, b, sync }
            }
            70..=84 => {
                let path = files.join(format!("{seed}-{i}.sst"));
                let mut kvs: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.gen_range(1..40))
                    .map(|_| (key(&mut rng, keys), value(&mut rng, i)))
                    .collect();
                kvs.sort();
                kvs.dedup_by(|a, b| a.0 == b.0);
                let excise = rng.gen_bool(0.25).then(|| range(&mut rng, keys));
                WOp::Ingest {
                    path,
                    kvs,
                    excise,
                    as_batch: rng.gen_bool(0.2),
                }
            }
            85..=94 => WOp::Flush,
            _ => WOp::Compact,
        };
        ops.push(op);
    }
    ops
}

fn value(rng: &mut StdRng, i: usize) -> Vec<u8> {
    let mut v = format!("v{i}-").into_bytes();
    v.resize(rng.gen_range(4..120), b'x');
    v
}

fn range(rng: &mut StdRng, keys: u32) -> (Vec<u8>, Vec<u8>) {
    let a = rng.gen_range(0..keys);
    let b = (a + rng.gen_range(1..keys / 4 + 2)).min(keys);
    (
        format!("k{a:04}").into_bytes(),
        format!("k{b:04}").into_bytes(),
    )
}

/// What happened to one executed operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Acked,
    Failed,
}

/// Reads the whole database.
pub fn dump(db: &Db) -> strata::Result<Model> {
    db.iter().collect()
}

/// Whether `op` goes through the WAL (and not the MANIFEST).
fn is_wal_op(op: &WOp) -> bool {
    matches!(op, WOp::Batch { .. } | WOp::DeleteRange { .. })
        || matches!(
            op,
            WOp::Ingest {
                as_batch: true,
                excise: None,
                ..
            }
        )
}

/// Whether an acknowledged `op` makes every earlier WAL record durable (a
/// synced WAL write syncs the WAL; a flush or compaction puts the memtable
/// in tables).
fn is_wal_barrier(op: &WOp) -> bool {
    match op {
        WOp::Batch { sync, .. } | WOp::DeleteRange { sync, .. } => *sync,
        // An excising ingestion never takes the batch path (its excise
        // would be only a tombstone there): it goes in as files, which do
        // not sync the WAL, whatever `small_file_bytes` says.
        WOp::Ingest {
            as_batch, excise, ..
        } => *as_batch && excise.is_none(),
        WOp::Flush | WOp::Compact => true,
    }
}

/// Checks `got` (the recovered database) against the executed operations.
///
/// The WAL and the MANIFEST are ordered logs, so recovery keeps a prefix
/// `ops[..p]` of the operations (`p` reaching the last acknowledged durable
/// one; with `all_acked`, every acknowledged one), except that unsynced WAL
/// writes may be lost as a suffix of the WAL from some `q` on (after the
/// last acknowledged WAL barrier before `p`): an ingestion is durable when
/// acknowledged, but it does not sync the WAL, so unsynced writes made
/// before it can be lost while it survives (as in RocksDB). Each failed
/// operation may or may not have taken effect, but all or nothing.
/// Returns `(p, q)` of the first match.
pub fn check_recovered(
    got: &Model,
    executed: &[(WOp, Status)],
    all_acked: bool,
) -> Result<(usize, usize), String> {
    let n = executed.len();
    let floor = executed
        .iter()
        .rposition(|(op, s)| *s == Status::Acked && (all_acked || op.durable_when_acked()))
        .map_or(0, |i| i + 1);
    let failed: Vec<usize> = executed
        .iter()
        .enumerate()
        .filter(|(_, (_, s))| *s == Status::Failed)
        .map(|(i, _)| i)
        .collect();
    assert!(failed.len() <= 4, "too many failed operations to enumerate");
    for mask in 0u32..(1 << failed.len()) {
        let skipped = |i: usize| {
            failed
                .iter()
                .position(|&f| f == i)
                .is_some_and(|bit| mask & (1 << bit) == 0)
        };
        for p in floor..=n {
            // WAL records before the last acknowledged barrier are durable.
            let barrier = executed[..p]
                .iter()
                .rposition(|(op, s)| *s == Status::Acked && is_wal_barrier(op))
                .map_or(0, |i| i + 1);
            let lowest_q = if all_acked { p } else { barrier };
            for q in (lowest_q..=p).rev() {
                let mut m = Model::new();
                for (i, (op, _)) in executed[..p].iter().enumerate() {
                    let lost = i >= q && is_wal_op(op) && !is_wal_barrier(op);
                    if !lost && !skipped(i) {
                        op.apply(&mut m);
                    }
                }
                if &m == got {
                    return Ok((p, q));
                }
            }
        }
    }
    let mut full = Model::new();
    for (op, s) in executed {
        if *s == Status::Acked {
            op.apply(&mut full);
        }
    }
    let missing: Vec<String> = full
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(v))
        .take(5)
        .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
        .collect();
    let extra: Vec<String> = got
        .keys()
        .filter(|k| !full.contains_key(*k))
        .take(5)
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    let trace: Vec<String> = executed
        .iter()
        .map(|(op, s)| {
            let st = if *s == Status::Acked { "" } else { " FAILED" };
            match op {
                WOp::Batch { ops, sync } => {
                    let ks: Vec<String> = ops
                        .iter()
                        .map(|(k, v)| {
                            format!(
                                "{}{}",
                                String::from_utf8_lossy(k),
                                if v.is_some() { "" } else { "(del)" }
                            )
                        })
                        .collect();
                    format!("batch{} {ks:?}{st}", if *sync { " sync" } else { "" })
                }
                WOp::DeleteRange { a, b, sync } => format!(
                    "delete_range{} {}..{}{st}",
                    if *sync { " sync" } else { "" },
                    String::from_utf8_lossy(a),
                    String::from_utf8_lossy(b)
                ),
                WOp::Ingest {
                    kvs,
                    excise,
                    as_batch,
                    ..
                } => format!(
                    "ingest {} keys{}{}{st}",
                    kvs.len(),
                    if *as_batch { " as batch" } else { "" },
                    if excise.is_some() { " excise" } else { "" }
                ),
                WOp::Flush => format!("flush{st}"),
                WOp::Compact => format!("compact{st}"),
            }
        })
        .collect();
    if std::env::var_os("STRATA_TRACE").is_some() {
        for (i, t) in trace.iter().enumerate() {
            eprintln!("  op {i}: {t}");
        }
    }
    Err(format!(
        "recovered state matches no allowed prefix (floor {floor} of {} ops, failed at {failed:?}); \
         against all acked ops: differing {missing:?}, extra {extra:?}",
        executed.len()
    ))
}
