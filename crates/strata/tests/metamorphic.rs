//! Metamorphic test (after Pebble's): one random operation sequence
//! (writes, batches, deletes, range deletes, ingestions with and without
//! excise, snapshots, point reads and scans in both directions at a snapshot
//! or the latest state, flushes, compactions, reopens, simulated power cuts)
//! is run under several randomly chosen option sets (block size, restart
//! interval, compression, bloom filter, memtable size, immutable queue,
//! L0 sublevels on or off, flush split size, compaction thresholds, target
//! file size, small-file ingestion fallback on or off, WAL flush interval)
//! and every output is compared across them and against an in-memory model.
//!
//! A power cut is preceded by a synced write: every acknowledged operation
//! is then durable, so the state after it is the same whatever the options
//! did in the background, and outputs stay comparable.
//!
//! A failing seed is reduced (chunks of operations dropped while it still
//! fails) and written to `testdata/metamorphic/<name>.ops`; every file there
//! is replayed by `replay_reduced_cases` under the option sets its header
//! names. `STRATA_META_SEEDS=n` runs n seeds (default 12) from
//! `STRATA_META_FIRST` (default 0); `STRATA_META_SECS=t` instead runs seeds
//! from `STRATA_META_FIRST` on until t seconds have passed (the long run);
//! `STRATA_META_SEED=s` runs one; `STRATA_META_OPS` sets the sequence length
//! (default 250). `STRATA_META_TRACE=1` keeps every operation and engine
//! event of a run in memory and prints them when the run differs from the
//! model: for a case that fails only under some thread timings, replay it
//! in a loop with the trace on.
#![allow(clippy::unwrap_used)] // tests may unwrap

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::events::{EventListener, EventRecord};
use strata::sstable::{CompressionType, SstOptions, SstWriter};
use strata::vfs::{FaultVfs, Vfs};
use strata::{
    CompactionOptions, Db, IngestOptions, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions,
};

type Kv = (String, Option<String>);

#[derive(Clone, Debug, PartialEq)]
enum MOp {
    Batch {
        ops: Vec<Kv>,
        sync: bool,
    },
    DeleteRange {
        a: String,
        b: String,
    },
    Ingest {
        kvs: Vec<(String, String)>,
        excise: Option<(String, String)>,
    },
    Snapshot,
    Release(usize),
    Get {
        key: String,
        snap: Option<usize>,
    },
    Scan {
        lo: String,
        hi: String,
        rev: bool,
        snap: Option<usize>,
    },
    Flush,
    Compact {
        range: Option<(String, String)>,
    },
    Reopen,
    Crash,
}

const KEYS: u32 = 120;

fn key(rng: &mut StdRng) -> String {
    format!("k{:03}", rng.gen_range(0..KEYS))
}

fn range(rng: &mut StdRng) -> (String, String) {
    let a = rng.gen_range(0..KEYS);
    let b = (a + rng.gen_range(1..30)).min(KEYS);
    (format!("k{a:03}"), format!("k{b:03}"))
}

fn generate(seed: u64, n: usize) -> Vec<MOp> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut ops = Vec::new();
    let mut snaps = 0;
    for i in 0..n {
        let val = |rng: &mut StdRng| {
            let mut v = format!("v{i}-");
            let len = rng.gen_range(2..150);
            while v.len() < len {
                v.push(char::from(b'a' + (v.len() % 26) as u8));
            }
            v
        };
        let op = match rng.gen_range(0..100) {
            0..=34 => MOp::Batch {
                ops: vec![(key(&mut rng), Some(val(&mut rng)))],
                sync: rng.gen_bool(0.2),
            },
            35..=44 => MOp::Batch {
                ops: (0..rng.gen_range(2..10))
                    .map(|_| {
                        let k = key(&mut rng);
                        (k, rng.gen_bool(0.75).then(|| val(&mut rng)))
                    })
                    .collect(),
                sync: rng.gen_bool(0.2),
            },
            45..=49 => MOp::Batch {
                ops: vec![(key(&mut rng), None)],
                sync: false,
            },
            50..=53 => {
                let (a, b) = range(&mut rng);
                MOp::DeleteRange { a, b }
            }
            54..=61 => {
                let mut kvs: Vec<(String, String)> = (0..rng.gen_range(1..60))
                    .map(|_| (key(&mut rng), val(&mut rng)))
                    .collect();
                kvs.sort();
                kvs.dedup_by(|a, b| a.0 == b.0);
                MOp::Ingest {
                    kvs,
                    excise: rng.gen_bool(0.3).then(|| range(&mut rng)),
                }
            }
            62..=65 => {
                snaps += 1;
                MOp::Snapshot
            }
            66..=67 if snaps > 0 => MOp::Release(rng.gen_range(0..snaps)),
            66..=77 => MOp::Get {
                key: key(&mut rng),
                snap: (snaps > 0 && rng.gen_bool(0.3)).then(|| rng.gen_range(0..snaps)),
            },
            78..=87 => {
                let (lo, hi) = range(&mut rng);
                MOp::Scan {
                    lo,
                    hi,
                    rev: rng.gen_bool(0.5),
                    snap: (snaps > 0 && rng.gen_bool(0.3)).then(|| rng.gen_range(0..snaps)),
                }
            }
            88..=91 => MOp::Flush,
            92..=94 => MOp::Compact {
                range: rng.gen_bool(0.5).then(|| range(&mut rng)),
            },
            95..=97 => MOp::Reopen,
            _ => MOp::Crash,
        };
        ops.push(op);
    }
    ops
}

/// One option set, chosen by `seed` (0: the defaults, scaled down).
#[derive(Clone)]
struct Config {
    opts: Options,
    small_file_bytes: u64,
}

fn config(seed: u64) -> Config {
    let mut o = Options {
        memtable_size: 32 << 10,
        compaction: CompactionOptions {
            target_file_size: 16 << 10,
            base_level_bytes: 64 << 10,
            flush_split_bytes: 16 << 10,
            ..CompactionOptions::default()
        },
        max_background_compactions: 2,
        ..Options::default()
    };
    if seed == 0 {
        return Config {
            opts: o,
            small_file_bytes: IngestOptions::default().small_file_bytes,
        };
    }
    let mut rng = StdRng::seed_from_u64(seed);
    o.sst = SstOptions {
        block_size: [64, 256, 1024, 4096][rng.gen_range(0..4)],
        block_restart_interval: [1, 2, 16][rng.gen_range(0..3)],
        compression: [
            CompressionType::None,
            CompressionType::Snappy,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ][rng.gen_range(0..4)],
        bloom_bits_per_key: rng.gen_bool(0.5).then_some(10.0),
        ..SstOptions::default()
    };
    o.memtable_size = [1 << 10, 4 << 10, 16 << 10, 256 << 10][rng.gen_range(0..4)];
    o.max_immutable_memtables = rng.gen_range(1..4);
    o.compaction.l0_sublevels = rng.gen_bool(0.5);
    o.compaction.flush_split_bytes = [1 << 10, 8 << 10, 1 << 20][rng.gen_range(0..3)];
    o.compaction.l0_compaction_threshold = rng.gen_range(1..5);
    o.compaction.target_file_size = [1 << 10, 4 << 10, 64 << 10][rng.gen_range(0..3)];
    o.compaction.base_level_bytes = [4 << 10, 32 << 10][rng.gen_range(0..2)];
    o.wal_flush_interval = std::time::Duration::from_millis(rng.gen_range(0..2));
    Config {
        opts: o,
        small_file_bytes: if rng.gen_bool(0.5) { 0 } else { 1 << 20 },
    }
}

type Model = BTreeMap<String, String>;

fn model_apply(m: &mut Model, op: &MOp) {
    match op {
        MOp::Batch { ops, .. } => {
            for (k, v) in ops {
                match v {
                    Some(v) => m.insert(k.clone(), v.clone()),
                    None => m.remove(k),
                };
            }
        }
        MOp::DeleteRange { a, b } => {
            let doomed: Vec<String> = m
                .range(a.clone()..b.clone())
                .map(|(k, _)| k.clone())
                .collect();
            for k in doomed {
                m.remove(&k);
            }
        }
        MOp::Ingest { kvs, excise } => {
            if let Some((a, b)) = excise {
                model_apply(
                    m,
                    &MOp::DeleteRange {
                        a: a.clone(),
                        b: b.clone(),
                    },
                );
            }
            for (k, v) in kvs {
                m.insert(k.clone(), v.clone());
            }
        }
        _ => {}
    }
}

/// The outputs of the model: what every configuration must print.
fn run_model(ops: &[MOp]) -> Vec<String> {
    let mut m = Model::new();
    let mut snaps: Vec<Option<Model>> = Vec::new();
    let mut out = Vec::new();
    for op in ops {
        match op {
            MOp::Snapshot => snaps.push(Some(m.clone())),
            MOp::Release(i) => {
                if let Some(s) = snaps.get_mut(*i) {
                    *s = None;
                }
            }
            MOp::Reopen | MOp::Crash => snaps.fill(None),
            MOp::Get { key, snap } => {
                let view = match snap {
                    Some(i) => snaps.get(*i).and_then(|s| s.as_ref()),
                    None => Some(&m),
                };
                out.push(match view {
                    Some(v) => format!("get {key} = {:?}", v.get(key)),
                    None => format!("get {key}: no snapshot"),
                });
            }
            MOp::Scan { lo, hi, rev, snap } => {
                let view = match snap {
                    Some(i) => snaps.get(*i).and_then(|s| s.as_ref()),
                    None => Some(&m),
                };
                out.push(match view {
                    Some(v) => {
                        let mut items: Vec<String> = v
                            .range(lo.clone()..hi.clone())
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect();
                        if *rev {
                            items.reverse();
                        }
                        format!("scan {lo}..{hi}: {}", items.join(" "))
                    }
                    None => format!("scan {lo}..{hi}: no snapshot"),
                });
            }
            op => model_apply(&mut m, op),
        }
    }
    out
}

/// Whether `STRATA_META_TRACE` is set: every operation and engine event
/// of a run is kept in memory, and a run that differs from the model
/// prints them (to see what a run that fails only sometimes did: replay
/// its case in a loop with the trace on; kept in memory because printing
/// as it goes changes the timing enough to hide such failures).
fn tracing() -> bool {
    std::env::var_os("STRATA_META_TRACE").is_some()
}

static TRACE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn trace(line: String) {
    if let Ok(mut t) = TRACE.lock() {
        t.push(line);
    }
}

/// Keeps every engine event (`STRATA_META_TRACE`).
struct Tracer;

impl EventListener for Tracer {
    fn on_event(&self, r: &EventRecord) {
        trace(format!("  event {:?}", r.event));
    }
}

struct Runner {
    vfs: FaultVfs,
    cfg: Config,
    db: Option<Db>,
    snaps: Vec<Option<Snapshot>>,
    files: PathBuf,
    n_ingest: usize,
}

impl Runner {
    fn options(&self) -> Options {
        Options {
            vfs: Some(Arc::new(self.vfs.clone()) as Arc<dyn Vfs>),
            event_listener: tracing().then(|| Arc::new(Tracer) as Arc<dyn EventListener>),
            ..self.cfg.opts.clone()
        }
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("database open")
    }

    fn read_opts(&self, snap: Option<usize>) -> Option<ReadOptions<'_>> {
        match snap {
            None => Some(ReadOptions::default()),
            Some(i) => self
                .snaps
                .get(i)
                .and_then(|s| s.as_ref())
                .map(|s| ReadOptions {
                    snapshot: Some(s),
                    ..ReadOptions::default()
                }),
        }
    }

    fn step(&mut self, op: &MOp, out: &mut Vec<String>) -> Result<(), String> {
        let e = |e: strata::Error| e.to_string();
        match op {
            MOp::Batch { ops, sync } => {
                let mut b = WriteBatch::new();
                for (k, v) in ops {
                    match v {
                        Some(v) => b.put(k.as_bytes(), v.as_bytes()),
                        None => b.delete(k.as_bytes()),
                    };
                }
                self.db()
                    .write(b, &WriteOptions { sync: *sync })
                    .map_err(e)?;
            }
            MOp::DeleteRange { a, b } => {
                self.db()
                    .delete_range(a.as_bytes(), b.as_bytes())
                    .map_err(e)?;
            }
            MOp::Ingest { kvs, excise } => {
                self.n_ingest += 1;
                let p = self.files.join(format!("{}.sst", self.n_ingest));
                // Written through the database's file system, which
                // ingestion reads through.
                let mut w =
                    SstWriter::create_in(&self.vfs, &p, SstOptions::for_ingestion()).map_err(e)?;
                for (k, v) in kvs {
                    w.put(k.as_bytes(), v.as_bytes()).map_err(e)?;
                }
                w.finish().map_err(e)?;
                let o = IngestOptions {
                    small_file_bytes: self.cfg.small_file_bytes,
                    excise: excise
                        .as_ref()
                        .map(|(a, b)| (a.clone().into_bytes(), b.clone().into_bytes())),
                    ..IngestOptions::default()
                };
                self.db().ingest(&[p], &o).map_err(e)?;
            }
            MOp::Snapshot => {
                let s = self.db().snapshot();
                self.snaps.push(Some(s));
            }
            MOp::Release(i) => {
                if let Some(s) = self.snaps.get_mut(*i) {
                    *s = None;
                }
            }
            MOp::Get { key, snap } => out.push(match self.read_opts(*snap) {
                Some(ro) => {
                    let v = self.db().get_opt(key.as_bytes(), &ro).map_err(e)?;
                    let v = v.map(|v| String::from_utf8_lossy(&v).into_owned());
                    format!("get {key} = {v:?}")
                }
                None => format!("get {key}: no snapshot"),
            }),
            MOp::Scan { lo, hi, rev, snap } => out.push(match self.read_opts(*snap) {
                Some(ro) => {
                    let ro = ReadOptions {
                        lower: Some(lo.clone().into_bytes()),
                        upper: Some(hi.clone().into_bytes()),
                        ..ro
                    };
                    let mut it = self.db().raw_iter(&ro).map_err(e)?;
                    let mut items = Vec::new();
                    if *rev {
                        it.seek_to_last();
                    } else {
                        it.seek_to_first();
                    }
                    while let Some((k, v)) = it.item() {
                        items.push(format!(
                            "{}={}",
                            String::from_utf8_lossy(k),
                            String::from_utf8_lossy(v)
                        ));
                        if *rev {
                            it.prev();
                        } else {
                            it.next();
                        }
                    }
                    it.status().map_err(e)?;
                    format!("scan {lo}..{hi}: {}", items.join(" "))
                }
                None => format!("scan {lo}..{hi}: no snapshot"),
            }),
            MOp::Flush => self.db().flush().map_err(e)?,
            MOp::Compact { range } => match range {
                Some((a, b)) => self
                    .db()
                    .compact_range(Some(a.as_bytes()), Some(b.as_bytes()))
                    .map_err(e)?,
                None => self.db().compact_range(None, None).map_err(e)?,
            },
            MOp::Reopen => {
                for s in &mut self.snaps {
                    *s = None;
                }
                if let Some(db) = self.db.take() {
                    db.close().map_err(e)?;
                }
                self.db = Some(Db::open("/db", self.options()).map_err(e)?);
            }
            MOp::Crash => {
                for s in &mut self.snaps {
                    *s = None;
                }
                // A synced write first: everything acknowledged is durable.
                let mut b = WriteBatch::new();
                b.put(b"~sync", b"");
                b.delete(b"~sync");
                self.db()
                    .write(b, &WriteOptions { sync: true })
                    .map_err(e)?;
                let image = self.vfs.crash_clone_keeping(self.n_ingest as u64);
                if tracing() {
                    let db = Path::new("/db");
                    for name in self.vfs.list(db).unwrap_or_default() {
                        let p = db.join(&name);
                        let kept = image.file_size(&p).map_or("gone".into(), |n| n.to_string());
                        let live = self.vfs.file_size(&p).unwrap_or(0);
                        trace(format!("  crash: {name} {live} bytes, kept {kept}"));
                    }
                }
                drop(self.db.take());
                self.vfs = image;
                self.db = Some(
                    Db::open("/db", self.options())
                        .map_err(|x| format!("open after power cut: {x}"))?,
                );
            }
        }
        Ok(())
    }
}

/// Runs `ops` under `cfg`; returns the outputs (an error ends them).
fn run(ops: &[MOp], cfg: &Config) -> Vec<String> {
    let files = tempfile::tempdir().expect("temp dir");
    let vfs = FaultVfs::new();
    let mut r = Runner {
        vfs,
        cfg: cfg.clone(),
        db: None,
        snaps: Vec::new(),
        files: files.path().to_path_buf(),
        n_ingest: 0,
    };
    let mut out = Vec::new();
    match Db::open("/db", r.options()) {
        Ok(db) => r.db = Some(db),
        Err(e) => return vec![format!("open failed: {e}")],
    }
    for (i, op) in ops.iter().enumerate() {
        if tracing() {
            trace(format!(
                "op {i}: {}",
                format!("{op:?}").chars().take(160).collect::<String>()
            ));
        }
        if let Err(e) = r.step(op, &mut out) {
            out.push(format!("op {i} {op:?} failed: {e}"));
            break;
        }
    }
    for s in &mut r.snaps {
        *s = None;
    }
    if let Some(db) = r.db.take() {
        if let Err(e) = db.close() {
            out.push(format!("close failed: {e}"));
        }
    }
    out
}

/// The first configuration (by index) whose outputs differ from the model,
/// with a description of the first difference.
fn first_failure(ops: &[MOp], configs: &[u64]) -> Option<(u64, String)> {
    let want = run_model(ops);
    for &c in configs {
        if let Ok(mut t) = TRACE.lock() {
            t.clear();
        }
        let got = run(ops, &config(c));
        if got != want {
            if let Ok(t) = TRACE.lock() {
                for line in t.iter() {
                    eprintln!("{line}");
                }
            }
            let i = got
                .iter()
                .zip(&want)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(want.len()));
            return Some((
                c,
                format!("output {i}: got {:?}, model {:?}", got.get(i), want.get(i)),
            ));
        }
    }
    None
}

/// Drops chunks of operations while `config` still fails.
fn reduce(mut ops: Vec<MOp>, config_seed: u64) -> Vec<MOp> {
    let fails = |ops: &[MOp]| first_failure(ops, &[config_seed]).is_some();
    let mut chunk = ops.len() / 2;
    while chunk >= 1 {
        let mut i = 0;
        while i < ops.len() {
            let mut shorter = ops.clone();
            shorter.drain(i..(i + chunk).min(ops.len()));
            if fails(&shorter) {
                ops = shorter;
            } else {
                i += chunk;
            }
        }
        chunk /= 2;
    }
    ops
}

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/metamorphic")
}

fn encode(ops: &[MOp], configs: &[u64], note: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# {note}");
    let _ = writeln!(
        s,
        "configs {}",
        configs
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    for op in ops {
        let line = match op {
            MOp::Batch { ops, sync } => {
                let items: Vec<String> = ops
                    .iter()
                    .map(|(k, v)| match v {
                        Some(v) => format!("{k}={v}"),
                        None => format!("{k}=-"),
                    })
                    .collect();
                format!(
                    "batch{} {}",
                    if *sync { "-sync" } else { "" },
                    items.join(" ")
                )
            }
            MOp::DeleteRange { a, b } => format!("delrange {a} {b}"),
            MOp::Ingest { kvs, excise } => {
                let items: Vec<String> = kvs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                match excise {
                    Some((a, b)) => format!("ingest-excise {a} {b} {}", items.join(" ")),
                    None => format!("ingest {}", items.join(" ")),
                }
            }
            MOp::Snapshot => "snapshot".into(),
            MOp::Release(i) => format!("release {i}"),
            MOp::Get { key, snap } => match snap {
                Some(i) => format!("get {key} @{i}"),
                None => format!("get {key}"),
            },
            MOp::Scan { lo, hi, rev, snap } => {
                let mut l = format!("scan{} {lo} {hi}", if *rev { "-rev" } else { "" });
                if let Some(i) = snap {
                    let _ = write!(l, " @{i}");
                }
                l
            }
            MOp::Flush => "flush".into(),
            MOp::Compact { range } => match range {
                Some((a, b)) => format!("compact {a} {b}"),
                None => "compact".into(),
            },
            MOp::Reopen => "reopen".into(),
            MOp::Crash => "crash".into(),
        };
        s.push_str(&line);
        s.push('\n');
    }
    s
}

/// Parses a reduced case: its configurations and operations.
fn decode(text: &str) -> Result<(Vec<u64>, Vec<MOp>), String> {
    let mut configs = Vec::new();
    let mut ops = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let bad = |m: &str| format!("line {}: {m}: {line:?}", n + 1);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        let kv = |s: &str| -> Result<(String, Option<String>), String> {
            let (k, v) = s.split_once('=').ok_or_else(|| bad("expected key=value"))?;
            Ok((k.to_string(), (v != "-").then(|| v.to_string())))
        };
        let snap = |s: Option<&&str>| -> Result<Option<usize>, String> {
            s.map(|s| {
                s.strip_prefix('@')
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| bad("expected @snapshot"))
            })
            .transpose()
        };
        let arg = |i: usize| -> Result<String, String> {
            w.get(i)
                .map(|s| s.to_string())
                .ok_or_else(|| bad("missing argument"))
        };
        let op = match w[0] {
            "configs" => {
                for c in &w[1..] {
                    configs.push(c.parse().map_err(|_| bad("bad config"))?);
                }
                continue;
            }
            "batch" | "batch-sync" => MOp::Batch {
                ops: w[1..].iter().map(|s| kv(s)).collect::<Result<_, _>>()?,
                sync: w[0] == "batch-sync",
            },
            "delrange" => MOp::DeleteRange {
                a: arg(1)?,
                b: arg(2)?,
            },
            "ingest" | "ingest-excise" => {
                let (excise, rest) = if w[0] == "ingest-excise" {
                    (Some((arg(1)?, arg(2)?)), &w[3..])
                } else {
                    (None, &w[1..])
                };
                let kvs = rest
                    .iter()
                    .map(|s| kv(s).map(|(k, v)| (k, v.unwrap_or_default())))
                    .collect::<Result<_, _>>()?;
                MOp::Ingest { kvs, excise }
            }
            "snapshot" => MOp::Snapshot,
            "release" => MOp::Release(arg(1)?.parse().map_err(|_| bad("bad index"))?),
            "get" => MOp::Get {
                key: arg(1)?,
                snap: snap(w.get(2))?,
            },
            "scan" | "scan-rev" => MOp::Scan {
                lo: arg(1)?,
                hi: arg(2)?,
                rev: w[0] == "scan-rev",
                snap: snap(w.get(3))?,
            },
            "flush" => MOp::Flush,
            "compact" => MOp::Compact {
                range: if w.len() >= 3 {
                    Some((arg(1)?, arg(2)?))
                } else {
                    None
                },
            },
            "reopen" => MOp::Reopen,
            "crash" => MOp::Crash,
            _ => return Err(bad("unknown operation")),
        };
        ops.push(op);
    }
    Ok((configs, ops))
}

/// A numeric knob from the environment, or `default` when unset.
fn knob(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("{name}={s}: not a number")),
        Err(_) => default,
    }
}

#[test]
fn random_sequences_agree_across_option_sets() {
    // A seed is one operation sequence; STRATA_META_SECS > 0 keeps taking
    // seeds from STRATA_META_FIRST on until that much time has passed (the
    // long run), otherwise STRATA_META_SEEDS seeds are run.
    let secs = knob("STRATA_META_SECS", 0);
    let first = knob("STRATA_META_FIRST", 0);
    let n_ops = knob("STRATA_META_OPS", 250) as usize;
    let start = std::time::Instant::now();
    let deadline = std::time::Duration::from_secs(secs);
    let seeds: Box<dyn Iterator<Item = u64>> = match std::env::var("STRATA_META_SEED") {
        Ok(s) => Box::new(std::iter::once(s.parse().expect("STRATA_META_SEED"))),
        Err(_) if secs > 0 => Box::new((first..).take_while(move |_| start.elapsed() < deadline)),
        Err(_) => Box::new(first..first + knob("STRATA_META_SEEDS", 12)),
    };
    let mut outputs = 0;
    let mut ran = 0;
    let mut last_seed = first;
    for seed in seeds {
        let ops = generate(seed, n_ops);
        // Configuration 0 and three random option sets per seed.
        let configs = [0, seed * 3 + 1, seed * 3 + 2, seed * 3 + 3];
        outputs += run_model(&ops).len() * configs.len();
        if let Some((c, what)) = first_failure(&ops, &configs) {
            let small = reduce(ops.clone(), c);
            let name = format!("seed-{seed}-config-{c}");
            let path = testdata().join(format!("{name}.ops"));
            let _ = std::fs::create_dir_all(testdata());
            let note = format!("metamorphic seed {seed}, config {c}: {what}");
            std::fs::write(&path, encode(&small, &[c], &note)).expect("writing the case");
            panic!(
                "{note}\nreduced from {} to {} operations: {}",
                ops.len(),
                small.len(),
                path.display()
            );
        }
        ran += 1;
        last_seed = seed;
        if secs > 0 && ran % 50 == 0 {
            eprintln!(
                "metamorphic: {ran} seeds ({first}..={seed}) passed, {outputs} outputs, {:.0} s",
                start.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "metamorphic: {ran} seeds ({first}..={last_seed}) x 4 option sets of {n_ops} operations, \
         {outputs} outputs compared, {:.0} s",
        start.elapsed().as_secs_f64()
    );
}

/// Replays one reduced case under its option sets against the model.
fn replay_case(name: &str) {
    let p = testdata().join(format!("{name}.ops"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let (configs, ops) = decode(&text).unwrap_or_else(|m| panic!("{}: {m}", p.display()));
    if let Some((c, what)) = first_failure(&ops, &configs) {
        panic!("{}: config {c}: {what}", p.display());
    }
}

/// Range deletions applied to the memtable (a deliberately injected bug,
/// caught and reduced from 250 operations to 3).
#[test]
fn case_range_delete_in_memtable() {
    replay_case("range-delete-in-memtable");
}

/// A synced write lost to a WAL created out of number order (seed 391246,
/// found in session 39; reduced only from 400 operations to 398, since it
/// failed in about one run in a hundred: a thread interleaving, which
/// `tests/wal_entry_durability.rs` forces every time).
#[test]
fn case_wal_created_out_of_number_order() {
    replay_case("wal-created-out-of-number-order");
}

/// Every reduced case in testdata/metamorphic, replayed under its option
/// sets and checked against the model.
#[test]
fn replay_reduced_cases() {
    let Ok(dir) = std::fs::read_dir(testdata()) else {
        return;
    };
    let mut n = 0;
    for e in dir.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "ops") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("reading a case");
        let (configs, ops) = decode(&text).unwrap_or_else(|m| panic!("{}: {m}", p.display()));
        // The text form round-trips, so a written case replays what failed.
        assert_eq!(decode(&encode(&ops, &configs, "")).unwrap().1, ops);
        if let Some((c, what)) = first_failure(&ops, &configs) {
            panic!("{}: config {c}: {what}", p.display());
        }
        n += 1;
    }
    eprintln!("replayed {n} reduced metamorphic cases");
}
