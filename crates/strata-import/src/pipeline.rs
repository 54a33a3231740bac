//! The import pipeline: input files to one atomic ingestion.
//!
//! One reader thread cuts the inputs into chunks of whole records
//! (`chunk`); worker threads (one per core) parse and encode them
//! (`parse`); the calling thread takes the results in input order, counts
//! bad rows, and feeds each index's [`IndexSorter`] under one memory budget
//! (when the buffers together exceed it, every sorter spills: straight to
//! SSTs while its index is in key order, else a sorted run). At the end each
//! sorter merges into rolling SSTs (`sink`), and every file of every index,
//! plus an SST holding the catalog entry of a new table, goes into the
//! database in ONE `Db::ingest`: the table and all its rows appear together
//! or not at all. Into an empty key range the files land in the bottom
//! level, so the data is written once (plus spills).
//!
//! All temporary files live in `<db>/import-tmp-<pid>-<n>/`, removed when
//! the import ends however it ends; directories left by a killed import
//! are removed by the next import's [`clean_stale`].

use crate::catalog::{self, CatalogEntry};
use crate::chunk::{Chunk, Splitter};
use crate::codec::TableCodec;
use crate::csv::dialect::{Dialect, Header};
use crate::csv::input::Input;
use crate::error::{Error, Result, RowSource};
use crate::parse::{parse_chunk, BadRow, Layout, Parsed, Src};
use crate::schema::Table;
use crate::sink::{RollingSink, SstFile};
use crate::sort::{IndexSorter, SortError};
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering as AtomicOrdering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strata::{Db, IngestOptions};

/// How to import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// How the input is written.
    pub dialect: Dialect,
    /// Memory for the sort buffers of all indexes together.
    pub memory: usize,
    /// Target size of an output SST.
    pub target_file_size: u64,
    /// Size of a parse chunk.
    pub chunk_size: usize,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Bad rows tolerated (written to `rejects`) before the import fails.
    pub max_bad_rows: u64,
    /// Where bad rows go: the original records, and a `<file>.reasons`
    /// file beside it with one `file:line: column: reason` line per record.
    pub rejects: Option<PathBuf>,
    /// Counters the import updates as it goes, for a progress display.
    pub progress: Option<Arc<Progress>>,
    /// What a primary key that is already in the table or earlier in the
    /// input means.
    pub on_duplicate: OnDuplicate,
}

/// What to do with a row whose primary key is already taken (by a row in
/// the table, or an earlier row of the input).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDuplicate {
    /// Fail the import, naming both rows.
    #[default]
    Error,
    /// Keep the row that came first (the table's, else the earliest in the
    /// input) and skip the others, with all their index entries. A
    /// unique secondary index shared by rows with different primary keys
    /// is still an error.
    Ignore,
}

/// Live counters of a running import (read from another thread).
#[derive(Debug, Default)]
pub struct Progress {
    /// Input bytes (decompressed) handed to the parsers so far.
    pub bytes: AtomicU64,
    /// Rows encoded so far.
    pub rows: AtomicU64,
    /// The current [`Phase`], as its `u8`.
    pub phase: AtomicU8,
}

/// The phases of an import, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Reading, parsing, encoding, sorting buffers and spilling.
    Reading = 0,
    /// Merging sorted runs into SSTs.
    Merging = 1,
    /// Ingesting the SSTs.
    Ingesting = 2,
    /// Finished.
    Done = 3,
}

impl Phase {
    /// The phase stored in [`Progress::phase`].
    pub fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Reading,
            1 => Phase::Merging,
            2 => Phase::Ingesting,
            _ => Phase::Done,
        }
    }

    /// A lower-case name for displays.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Reading => "reading",
            Phase::Merging => "merging",
            Phase::Ingesting => "ingesting",
            Phase::Done => "done",
        }
    }
}

fn set_phase(opts: &ImportOptions, p: Phase) {
    if let Some(pr) = &opts.progress {
        pr.phase.store(p as u8, AtomicOrdering::Relaxed);
    }
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            dialect: Dialect::csv(),
            memory: 256 << 20,
            target_file_size: 64 << 20,
            chunk_size: 4 << 20,
            threads: 0,
            max_bad_rows: 0,
            rejects: None,
            progress: None,
            on_duplicate: OnDuplicate::Error,
        }
    }
}

/// What one index received.
#[derive(Clone, Debug, Default)]
pub struct IndexSummary {
    /// Index name.
    pub name: String,
    /// Entries written.
    pub kvs: u64,
    /// SST files written.
    pub files: usize,
    /// Bytes of those files.
    pub file_bytes: u64,
    /// The input arrived in this index's key order: written straight
    /// through, never sorted or spilled.
    pub in_order: bool,
    /// Bytes written to this index's spill runs.
    pub spilled_bytes: u64,
}

/// What an import did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// The table imported into.
    pub table: String,
    /// Whether this import created the table.
    pub created: bool,
    /// Rows imported.
    pub rows: u64,
    /// Rows skipped under [`OnDuplicate::Ignore`] (not in `rows`).
    pub duplicates_ignored: u64,
    /// Rows rejected (at most `max_bad_rows`).
    pub bad_rows: u64,
    /// Input bytes read (decompressed).
    pub input_bytes: u64,
    /// Per index, primary key first.
    pub indexes: Vec<IndexSummary>,
    /// Bytes written to spill runs, all indexes.
    pub spilled_bytes: u64,
    /// Largest total of the sort buffers.
    pub peak_buffer_bytes: usize,
    /// Reading, parsing, buffering and spilling.
    pub read_parse: Duration,
    /// Merging runs and writing the SSTs.
    pub merge_write: Duration,
    /// The ingestion.
    pub ingest: Duration,
    /// Levels the ingested files landed on (one per file).
    pub levels: Vec<Option<usize>>,
}

impl Summary {
    /// Bytes written (SSTs and spills) over the SST bytes: 1.0 when the
    /// data was written exactly once.
    pub fn write_amplification(&self) -> f64 {
        let sst: u64 = self.indexes.iter().map(|i| i.file_bytes).sum();
        if sst == 0 {
            return 0.0;
        }
        (sst + self.spilled_bytes) as f64 / sst as f64
    }
}

static NEXT_TMP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Removes temporary directories of imports that did not end (killed).
/// Call with the database open: its lock means no other import runs.
pub fn clean_stale(db_dir: &Path) -> Result<()> {
    let rd = match std::fs::read_dir(db_dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(db_dir, e)),
    };
    let own = format!("import-tmp-{}-", std::process::id());
    for ent in rd {
        let ent = ent.map_err(|e| Error::io(db_dir, e))?;
        let name = ent.file_name().to_string_lossy().to_string();
        if name.starts_with("import-tmp-") && !name.starts_with(&own) {
            std::fs::remove_dir_all(ent.path()).map_err(|e| Error::io(ent.path(), e))?;
        }
    }
    Ok(())
}

/// Removes the directory when dropped, whatever happened.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Imports `inputs` into table `table` (defined by `def`) of `db`, whose
/// directory is `db_dir`. Creates the table if the catalog lacks it; if it
/// has it, the definitions must agree and a key already in the table is a
/// duplicate.
pub fn import(
    db: &Db,
    db_dir: &Path,
    def: &Table,
    inputs: &[Input],
    opts: &ImportOptions,
) -> Result<Summary> {
    set_phase(opts, Phase::Reading);
    clean_stale(db_dir)?;
    let existing = catalog::get(db, &def.name)?;
    let (entry, created) = match existing {
        Some(e) => {
            if e.table != *def {
                return Err(Error::invalid(format!(
                    "table {} exists with a different definition",
                    def.name
                )));
            }
            (e, false)
        }
        None => (
            CatalogEntry {
                id: catalog::next_id(db)?,
                table: def.clone(),
            },
            true,
        ),
    };
    let codec = Arc::new(TableCodec::new(entry.table.clone(), entry.id));
    let has_rows = !created && db.prefix(codec.prefix(0)).next().transpose()?.is_some();
    let rowid_base = if codec.table.hidden_rowid && has_rows {
        last_rowid(db, &codec)? + 1
    } else {
        0
    };
    let tmp = TempDir(db_dir.join(format!(
        "import-tmp-{}-{}",
        std::process::id(),
        NEXT_TMP.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )));
    std::fs::create_dir_all(&tmp.0).map_err(|e| Error::io(&tmp.0, e))?;

    let names: Vec<String> = inputs.iter().map(Input::name).collect();
    let src_of = |s: Src| RowSource {
        file: names.get(s.file as usize).cloned().unwrap_or_default(),
        line: s.line,
    };
    let mut summary = Summary {
        table: codec.table.name.clone(),
        created,
        ..Summary::default()
    };
    let started = Instant::now();
    let ignore = opts.on_duplicate == OnDuplicate::Ignore;
    let mut sorters: Vec<IndexSorter> = codec
        .table
        .indexes
        .iter()
        .enumerate()
        .map(|(i, _)| {
            IndexSorter::new(
                &tmp.0,
                &format!("ix{i}"),
                opts.target_file_size,
                !has_rows,
                ignore,
            )
        })
        .collect();
    let mut rejects = Rejects::open(opts.rejects.as_deref())?;

    // Reader and workers.
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        opts.threads
    };
    let result = std::thread::scope(|s| -> Result<()> {
        // Every channel end lives in this scope: when `collect` returns
        // (maybe early, on an error) its receiver drops, the workers' sends
        // fail, they drop theirs, and the reader's sends fail in turn, so
        // no thread is left blocked.
        let (chunk_tx, chunk_rx) = sync_channel::<(Chunk, Arc<Vec<usize>>)>(threads * 2);
        let chunk_rx = Arc::new(Mutex::new(chunk_rx));
        let (res_tx, res_rx) = sync_channel::<Msg>(threads * 2);
        {
            let res_tx = res_tx.clone();
            let dialect = opts.dialect.clone();
            let codec = Arc::clone(&codec);
            let inputs = inputs.to_vec();
            let chunk_size = opts.chunk_size;
            s.spawn(move || read_inputs(&inputs, &dialect, &codec, chunk_size, chunk_tx, res_tx));
        }
        for _ in 0..threads {
            let rx = Arc::clone(&chunk_rx);
            let tx = res_tx.clone();
            let codec = Arc::clone(&codec);
            let dialect = opts.dialect.clone();
            s.spawn(move || loop {
                let next = rx.lock().map(|r| r.recv());
                let Ok(Ok((chunk, columns))) = next else {
                    return;
                };
                let layout = Layout {
                    codec: &codec,
                    dialect: &dialect,
                    columns: &columns,
                    rowid_base,
                };
                let parsed = parse_chunk(&chunk, &layout);
                if tx.send(Msg::Parsed(chunk.seq, parsed)).is_err() {
                    return;
                }
            });
        }
        drop(res_tx);
        drop(chunk_rx);
        collect(
            res_rx,
            &codec,
            &mut sorters,
            &mut summary,
            &mut rejects,
            opts,
            &src_of,
        )
    });
    result?;
    summary.read_parse = started.elapsed();
    // The import's phases go to the database's EVENTS log (the visualiser
    // shows them beside the ingestion).
    let name = codec.table.name.as_str();
    db.log_import_phase(
        name,
        "read",
        summary.rows,
        summary.input_bytes,
        summary.read_parse,
    );
    rejects.finish()?;

    // Merge every index into SSTs.
    set_phase(opts, Phase::Merging);
    let merge_start = Instant::now();
    let mut all_files: Vec<SstFile> = Vec::new();
    // Rows skipped under `ignore`, decided by the primary index (merged
    // first); their entries in the other indexes are skipped too.
    let mut dropped: HashSet<Src> = HashSet::new();
    for (i, sorter) in sorters.into_iter().enumerate() {
        let ix = &codec.table.indexes[i];
        let check_existing = has_rows && (i == 0 || ix.unique);
        let mut dup_in_table: Option<(Vec<u8>, Src)> = None;
        let mut conflict: Option<(Vec<u8>, Src, Src)> = None;
        summary.spilled_bytes += sorter.spilled_bytes;
        let spilled_bytes = sorter.spilled_bytes;
        let in_order = sorter.is_in_order();
        let files = sorter.finish(|e, dup_of| {
            if dup_in_table.is_some() || conflict.is_some() || dropped.contains(&e.src) {
                return Ok(false);
            }
            if let Some(first) = dup_of {
                if i == 0 {
                    dropped.insert(e.src);
                } else {
                    conflict = Some((e.key.clone(), first, e.src));
                }
                return Ok(false);
            }
            if check_existing && db.get(&e.key)?.is_some() {
                if ignore && i == 0 {
                    dropped.insert(e.src);
                } else {
                    dup_in_table = Some((e.key.clone(), e.src));
                }
                return Ok(false);
            }
            Ok(true)
        });
        let files = files.map_err(|e| sort_err(e, &codec, i, &src_of))?;
        if let Some((k, first, second)) = conflict {
            return Err(Error::Duplicate {
                index: ix.name.clone(),
                key: codec.describe_key(i, &k),
                first: Some(src_of(first)),
                second: src_of(second),
            });
        }
        if let Some((k, s)) = dup_in_table {
            return Err(Error::Duplicate {
                index: ix.name.clone(),
                key: codec.describe_key(i, &k),
                first: None,
                second: src_of(s),
            });
        }
        summary.indexes.push(IndexSummary {
            name: ix.name.clone(),
            kvs: files.iter().map(|f| f.entries).sum(),
            spilled_bytes,
            files: files.len(),
            file_bytes: files.iter().map(|f| f.size).sum(),
            in_order,
        });
        all_files.extend(files);
    }
    summary.merge_write = merge_start.elapsed();
    let sst_bytes: u64 = all_files.iter().map(|f| f.size).sum();
    db.log_import_phase(
        name,
        "sort and write",
        summary.rows,
        sst_bytes,
        summary.merge_write,
    );
    summary.duplicates_ignored = dropped.len() as u64;
    summary.rows -= summary.duplicates_ignored;

    // One ingestion: every index, and the catalog entry of a new table.
    set_phase(opts, Phase::Ingesting);
    let ingest_start = Instant::now();
    let mut paths: Vec<PathBuf> = Vec::new();
    if created {
        let mut sink = RollingSink::new(&tmp.0, "catalog", u64::MAX);
        sink.add(&catalog::key(&codec.table.name), &catalog::encode(&entry))?;
        paths.extend(sink.finish()?.into_iter().map(|f| f.path));
    }
    paths.extend(all_files.iter().map(|f| f.path.clone()));
    if !paths.is_empty() && (created || summary.rows > 0) {
        let r = db.ingest(&paths, &IngestOptions::default())?;
        summary.levels = r.levels;
    }
    summary.ingest = ingest_start.elapsed();
    db.log_import_phase(name, "ingest", summary.rows, sst_bytes, summary.ingest);
    set_phase(opts, Phase::Done);
    drop(tmp);
    Ok(summary)
}

enum Msg {
    Parsed(u64, Parsed),
    /// Reading failed before chunk `seq` could be made.
    ReadError(u64, Error),
    /// The reader made `n` chunks and read these many bytes.
    Done(u64, u64),
}

fn last_rowid(db: &Db, codec: &TableCodec) -> Result<i64> {
    let mut it = db.prefix(codec.prefix(0));
    let Some(kv) = it.next_back() else {
        return Ok(-1);
    };
    let (k, v) = kv?;
    let row = codec
        .decode_primary(&k, &v)
        .map_err(|m| Error::Catalog(format!("table {}: {m}", codec.table.name)))?;
    match row.last() {
        Some(crate::value::Value::Int(i)) => Ok(*i),
        _ => Err(Error::Catalog(format!(
            "table {}: hidden row id is not an integer",
            codec.table.name
        ))),
    }
}

/// The reader thread: chunks of every input, in order, with each file's
/// field-to-column mapping.
fn read_inputs(
    inputs: &[Input],
    dialect: &Dialect,
    codec: &TableCodec,
    chunk_size: usize,
    chunk_tx: std::sync::mpsc::SyncSender<(Chunk, Arc<Vec<usize>>)>,
    res_tx: std::sync::mpsc::SyncSender<Msg>,
) {
    let mut seq = 0u64;
    let mut offset = 0u64;
    let mut bytes = 0u64;
    let table = &codec.table;
    let identity: Arc<Vec<usize>> = Arc::new((0..table.input_columns().len()).collect());
    for (fi, input) in inputs.iter().enumerate() {
        let r = (|| -> Result<()> {
            let reader = input.open()?;
            let mut sp = Splitter::new(reader, dialect, fi, input.name(), offset, chunk_size);
            let mut columns = Arc::clone(&identity);
            let mut first = true;
            loop {
                let next = sp.next_chunk()?;
                if first && dialect.header == Header::Match {
                    columns = Arc::new(match_header(table, sp.header(), &input.name())?);
                }
                first = false;
                let Some(mut c) = next else { break };
                c.seq = seq;
                seq += 1;
                if chunk_tx.send((c, Arc::clone(&columns))).is_err() {
                    return Ok(());
                }
            }
            offset = sp.offset();
            bytes += sp.bytes_read;
            Ok(())
        })();
        if let Err(e) = r {
            let _ = res_tx.send(Msg::ReadError(seq, e));
            return;
        }
    }
    let _ = res_tx.send(Msg::Done(seq, bytes));
}

/// The table column of each field, from a header record.
fn match_header(
    table: &Table,
    header: Option<&::csv::StringRecord>,
    file: &str,
) -> Result<Vec<usize>> {
    let at = || RowSource {
        file: file.to_string(),
        line: 1,
    };
    let Some(h) = header else {
        return Err(Error::BadRow {
            at: at(),
            column: None,
            reason: "no header record to match columns by".into(),
        });
    };
    let inputs = table.input_columns();
    let mut cols = Vec::new();
    for name in h.iter() {
        let name = name.trim();
        let Some(c) = inputs
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
        else {
            return Err(Error::BadRow {
                at: at(),
                column: Some(name.to_string()),
                reason: format!("header names a column table {} does not have", table.name),
            });
        };
        if cols.contains(&c) {
            return Err(Error::BadRow {
                at: at(),
                column: Some(name.to_string()),
                reason: "header names the column twice".into(),
            });
        }
        cols.push(c);
    }
    if let Some(missing) = (0..inputs.len()).find(|c| !cols.contains(c)) {
        return Err(Error::BadRow {
            at: at(),
            column: Some(inputs[missing].name.clone()),
            reason: "header lacks this column".into(),
        });
    }
    Ok(cols)
}

/// The calling thread's part: results in input order into the sorters.
fn collect(
    rx: Receiver<Msg>,
    codec: &TableCodec,
    sorters: &mut [IndexSorter],
    summary: &mut Summary,
    rejects: &mut Rejects,
    opts: &ImportOptions,
    src_of: &dyn Fn(Src) -> RowSource,
) -> Result<()> {
    let mut pending: BTreeMap<u64, Parsed> = BTreeMap::new();
    let mut next = 0u64;
    let mut end: Option<u64> = None;
    let mut read_error: Option<(u64, Error)> = None;
    loop {
        while let Some(p) = pending.remove(&next) {
            take(p, codec, sorters, summary, rejects, opts, src_of)?;
            next += 1;
        }
        if let Some((seq, _)) = &read_error {
            if *seq == next {
                let (_, e) = read_error
                    .take()
                    .ok_or_else(|| Error::invalid("internal"))?;
                return Err(e);
            }
        }
        if end == Some(next) {
            return Ok(());
        }
        match rx.recv() {
            Ok(Msg::Parsed(seq, p)) => {
                pending.insert(seq, p);
            }
            Ok(Msg::ReadError(seq, e)) => read_error = Some((seq, e)),
            Ok(Msg::Done(n, bytes)) => {
                end = Some(n);
                summary.input_bytes = bytes;
            }
            Err(_) => return Err(Error::invalid("internal: import threads ended early")),
        }
    }
}

fn take(
    p: Parsed,
    codec: &TableCodec,
    sorters: &mut [IndexSorter],
    summary: &mut Summary,
    rejects: &mut Rejects,
    opts: &ImportOptions,
    src_of: &dyn Fn(Src) -> RowSource,
) -> Result<()> {
    for b in p.bad {
        summary.bad_rows += 1;
        if summary.bad_rows > opts.max_bad_rows {
            return Err(Error::BadRow {
                at: src_of(b.src),
                column: b.column,
                reason: b.reason,
            });
        }
        rejects.write(&b, src_of)?;
    }
    summary.rows += p.rows;
    if let Some(pr) = &opts.progress {
        pr.rows.fetch_add(p.rows, AtomicOrdering::Relaxed);
        pr.bytes.fetch_add(p.bytes, AtomicOrdering::Relaxed);
    }
    for (i, (s, entries)) in sorters.iter_mut().zip(p.entries).enumerate() {
        s.push(entries).map_err(|e| sort_err(e, codec, i, src_of))?;
    }
    let used: usize = sorters.iter().map(|s| s.buf_bytes).sum();
    summary.peak_buffer_bytes = summary.peak_buffer_bytes.max(used);
    if used > opts.memory {
        for (i, s) in sorters.iter_mut().enumerate() {
            s.spill().map_err(|e| sort_err(e, codec, i, src_of))?;
        }
    }
    Ok(())
}

pub(crate) fn sort_err(
    e: SortError,
    codec: &TableCodec,
    index: usize,
    src_of: &dyn Fn(Src) -> RowSource,
) -> Error {
    match e {
        SortError::Other(e) => e,
        SortError::Dup(d) => Error::Duplicate {
            index: codec.table.indexes[index].name.clone(),
            key: codec.describe_key(index, &d.key),
            first: Some(src_of(d.first)),
            second: src_of(d.second),
        },
    }
}

/// The rejects file and its reasons file.
struct Rejects {
    out: Option<(
        std::io::BufWriter<std::fs::File>,
        std::io::BufWriter<std::fs::File>,
        PathBuf,
    )>,
}

impl Rejects {
    fn open(path: Option<&Path>) -> Result<Rejects> {
        let Some(p) = path else {
            return Ok(Rejects { out: None });
        };
        let reasons = reasons_path(p);
        let a = std::fs::File::create(p).map_err(|e| Error::io(p, e))?;
        let b = std::fs::File::create(&reasons).map_err(|e| Error::io(&reasons, e))?;
        Ok(Rejects {
            out: Some((
                std::io::BufWriter::new(a),
                std::io::BufWriter::new(b),
                p.to_path_buf(),
            )),
        })
    }

    fn write(&mut self, b: &BadRow, src_of: &dyn Fn(Src) -> RowSource) -> Result<()> {
        let Some((a, r, p)) = self.out.as_mut() else {
            return Ok(());
        };
        a.write_all(&b.raw).map_err(|e| Error::io(&*p, e))?;
        if !b.raw.ends_with(b"\n") {
            a.write_all(b"\n").map_err(|e| Error::io(&*p, e))?;
        }
        let col = b
            .column
            .as_deref()
            .map(|c| format!(" column {c}:"))
            .unwrap_or_default();
        writeln!(r, "{}:{col} {}", src_of(b.src), b.reason).map_err(|e| Error::io(&*p, e))?;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if let Some((a, r, p)) = self.out.as_mut() {
            a.flush().map_err(|e| Error::io(&*p, e))?;
            r.flush().map_err(|e| Error::io(&*p, e))?;
        }
        Ok(())
    }
}

/// `<rejects>.reasons`.
pub fn reasons_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(".reasons");
    PathBuf::from(s)
}
