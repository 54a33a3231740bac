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
//! `--mode direct` and `--mode batch` ([`Mode`]) instead write a *unit*
//! whenever the buffers fill (direct: one ingestion of every index's sorted
//! buffer) or every N rows (batch: one write batch); each unit goes through
//! the same merge and duplicate resolution (`resolve`), with earlier units
//! seen as rows of the table, so every mode gives the same table. Those
//! modes are atomic per unit only (see [`import`]).
//!
//! All temporary files live in `<db>/scratch/import-<pid>-<n>/`
//! ([`Db::scratch_dir`]), removed when the import ends however it ends;
//! a directory left by a killed import is removed by the next read-write
//! open of the database, which empties the scratch directory.

use crate::batch::EntryBatch;
use crate::budget::Budget;
use crate::catalog::{self, CatalogEntry};
use crate::chunk::{Chunk, Splitter};
use crate::codec::TableCodec;
use crate::csv::dialect::{Dialect, Header};
use crate::csv::input::Input;
use crate::error::{Error, Result, RowSource};
use crate::parse::{parse_chunk, BadRow, EntryRef, Layout, Parsed, Src};
use crate::pool::BatchPool;
use crate::resolve::{Lookups, Resolver};
use crate::schema::Table;
use crate::sink::{Output, RollingSink, SstFile};
use crate::sort::{IndexSorter, SortError, MEM_RUN_AT};
use crate::written::WrittenKeys;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering as AtomicOrdering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strata::{Db, IngestOptions, WriteBatch, WriteOptions};

/// How to import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// How the input is written.
    pub dialect: Dialect,
    /// Memory budget of the whole import: chunks in flight, writers and
    /// the sort buffers of all indexes ([`crate::budget`] divides it).
    pub memory: usize,
    /// Target size of an output SST.
    pub target_file_size: u64,
    /// Largest parse chunk (the budget may pick a smaller one).
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
    /// What a primary key that is already in the table or elsewhere in
    /// the input means.
    pub on_duplicate: OnDuplicate,
    /// How the rows reach the database.
    pub mode: Mode,
}

/// How an import writes (all modes give the same table contents).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Sort every index externally, then ONE ingestion of every file: all
    /// or nothing.
    #[default]
    Pipeline,
    /// CockroachDB's old "direct" IMPORT: when the memory budget fills,
    /// sort the buffers and ingest them at once (one ingestion per
    /// buffer), so the files overlap (the scenario L0 sublevels exist
    /// for). Each buffer is atomic, the import is not (see [`import`]).
    Direct,
    /// PostgreSQL COPY: write batches of this many rows through the WAL
    /// and the memtable. Each batch is atomic, the import is not.
    Batch {
        /// Rows per write batch.
        rows_per_batch: usize,
    },
}

impl Mode {
    /// The default rows per batch of [`Mode::Batch`]: the W2 sweep
    /// (`docs/benchmarks.md`) flattens out from about 1,000 rows, and
    /// bigger batches only hold more memory.
    pub const DEFAULT_ROWS_PER_BATCH: usize = 1024;

    /// `pipeline`, `direct` or `batch`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Pipeline => "pipeline",
            Mode::Direct => "direct",
            Mode::Batch { .. } => "batch",
        }
    }
}

pub use crate::resolve::OnDuplicate;

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
            mode: Mode::Pipeline,
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
    /// SST files ingested into the database as files. Files the database
    /// applied as a write batch instead (under `small_file_bytes`: see
    /// [`Summary::batch_units`]) are not counted: none of them is in the
    /// tree.
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
    /// Input rows dropped as duplicates (not in `rows`): under
    /// [`OnDuplicate::Ignore`] the later rows (and rows already in the
    /// table), under [`OnDuplicate::Replace`] the earlier input rows.
    pub duplicates_ignored: u64,
    /// Table rows overwritten under [`OnDuplicate::Replace`].
    pub replaced: u64,
    /// Units written by [`Mode::Direct`] (ingestions) or [`Mode::Batch`]
    /// (write batches); 1 for the pipeline.
    pub units: u64,
    /// Units applied to the database as write batches: every unit of
    /// [`Mode::Batch`], and each pipeline or direct unit whose files were
    /// too small to ingest as files (the database applies a set under
    /// `IngestOptions::small_file_bytes` as a write batch: a small import
    /// takes this path). Their rows are in the WAL and memtable, and their
    /// files are not counted in [`IndexSummary::files`] (a user audit
    /// found a 1-row import reporting "files 1, sst bytes 1824").
    pub batch_units: u64,
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
    /// How the memory budget was divided.
    pub budget: Option<Budget>,
    /// Reading, parsing, buffering and spilling.
    pub read_parse: Duration,
    /// Merging runs and writing the SSTs.
    pub merge_write: Duration,
    /// The ingestion.
    pub ingest: Duration,
    /// Levels the ingested files landed on (one per file; none for a unit
    /// applied as a write batch).
    pub levels: Vec<Option<usize>>,
}

impl Summary {
    /// Bytes written (SSTs and spills) over the SST bytes: 1.0 when the
    /// data was written exactly once; `None` when no file was ingested
    /// (every unit applied as a write batch: nothing to amplify), which the
    /// CLI prints as `-` (`null` in `--json`) and Python gives as `None`.
    pub fn write_amplification(&self) -> Option<f64> {
        let sst: u64 = self.indexes.iter().map(|i| i.file_bytes).sum();
        (sst > 0).then(|| (sst + self.spilled_bytes) as f64 / sst as f64)
    }
}

static NEXT_TMP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Removes the directory when dropped, whatever happened.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    /// A new `import-<pid>-<n>` directory in the database's scratch
    /// directory ([`Db::scratch_dir`], which every read-write open of the
    /// database empties: what a killed import leaves goes at the next
    /// open).
    pub(crate) fn create(db: &Db) -> Result<TempDir> {
        let tmp = TempDir(db.scratch_dir().join(format!(
            "import-{}-{}",
            std::process::id(),
            NEXT_TMP.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        )));
        std::fs::create_dir_all(&tmp.0).map_err(|e| Error::io(&tmp.0, e))?;
        Ok(tmp)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Refuses a rejects path (or its `.reasons` file) that is one of the
/// inputs, lies inside the database's directory, or exists at all: writing
/// bad rows there would destroy an input, a database file ("input files are
/// only read"; a failed import leaves the database as it was) or whatever
/// the user kept at that path (an import never overwrites a file; the files
/// are created with `create_new` when the first bad row arrives, so one
/// that appears in between is not overwritten either).
fn check_rejects_path(db: &Db, rejects: &Path, inputs: &[Input]) -> Result<()> {
    // The file may not exist yet: then its directory, resolved, and its name.
    let resolve = |q: &Path| -> Option<PathBuf> {
        q.canonicalize().ok().or_else(|| {
            let dir = match q.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            Some(dir.canonicalize().ok()?.join(q.file_name()?))
        })
    };
    let db_dir = db
        .scratch_dir()
        .parent()
        .and_then(|d| d.canonicalize().ok());
    let files: Vec<PathBuf> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::File(f) => resolve(f),
            Input::Stdin => None,
        })
        .collect();
    for target in [rejects.to_path_buf(), reasons_path(rejects)] {
        let Some(t) = resolve(&target) else { continue };
        if files.contains(&t) {
            return Err(Error::invalid(format!(
                "the rejects file {} is also an input",
                target.display()
            )));
        }
        if db_dir.as_ref().is_some_and(|d| t.starts_with(d)) {
            return Err(Error::invalid(format!(
                "the rejects file {} is inside the database directory",
                target.display()
            )));
        }
    }
    for target in [rejects.to_path_buf(), reasons_path(rejects)] {
        // symlink_metadata: a dangling symbolic link is there too (and
        // `create_new` would refuse it later, after rows were parsed).
        if std::fs::symlink_metadata(&target).is_ok() {
            return Err(Error::invalid(format!(
                "the rejects file {} already exists: an import does not overwrite it \
                 (remove it or name a new file)",
                target.display()
            )));
        }
    }
    Ok(())
}

/// `t` with its names (table, columns, indexes) in lower case: names match
/// ignoring case everywhere, so a stored definition agrees with a schema
/// that spells them in another case.
fn folded(t: &Table) -> Table {
    let mut t = t.clone();
    t.name = t.name.to_lowercase();
    for c in &mut t.columns {
        c.name = c.name.to_lowercase();
    }
    for ix in &mut t.indexes {
        ix.name = ix.name.to_lowercase();
    }
    t
}

/// What differs first between the stored definition of a table and the
/// schema's, in the schema's words.
fn first_difference(stored: &Table, given: &Table) -> String {
    let (fs, fg) = (folded(stored), folded(given));
    let col = |c: &crate::schema::Column| {
        let null = if c.not_null { " NOT NULL" } else { "" };
        format!("{} {}{null}", c.name, c.ty.sql())
    };
    // Found in the folded tables, shown as each spells it.
    let at = |i: usize| (stored.columns.get(i), given.columns.get(i));
    match first_mismatch(&fs.columns, &fg.columns).map(|(i, ..)| (i, at(i))) {
        Some((i, (Some(a), Some(b)))) => {
            return format!(
                "column {} is {} in the table, {} in the schema",
                i + 1,
                col(a),
                col(b)
            )
        }
        Some((_, (Some(a), None))) => {
            return format!("the table has a column {} the schema lacks", col(a))
        }
        Some((_, (None, Some(b)))) => {
            return format!("the schema adds a column {} the table lacks", col(b))
        }
        _ => {}
    }
    let index = |t: &Table, ix: &crate::schema::Index| {
        let cols: Vec<&str> = ix
            .columns
            .iter()
            .filter_map(|&c| t.columns.get(c).map(|c| c.name.as_str()))
            .collect();
        let unique = if ix.unique { "unique " } else { "" };
        format!("{unique}index {} ({})", ix.name, cols.join(", "))
    };
    let at = |i: usize| (stored.indexes.get(i), given.indexes.get(i));
    match first_mismatch(&fs.indexes, &fg.indexes).map(|(i, ..)| at(i)) {
        Some((Some(a), Some(b))) => format!(
            "the table has {}, the schema {}",
            index(stored, a),
            index(given, b)
        ),
        Some((Some(a), None)) => format!("the schema lacks the table's {}", index(stored, a)),
        Some((None, Some(b))) => format!("the schema adds {}", index(given, b)),
        _ => "the definitions differ".into(),
    }
}

/// The first position at which `a` and `b` differ, with what each holds
/// there (`None` past its end).
fn first_mismatch<'a, T: PartialEq>(
    a: &'a [T],
    b: &'a [T],
) -> Option<(usize, Option<&'a T>, Option<&'a T>)> {
    (0..a.len().max(b.len()))
        .map(|i| (i, a.get(i), b.get(i)))
        .find(|(_, x, y)| x != y)
}

/// Imports `inputs` into table `table` (defined by `def`) of `db`. Creates the table if the catalog lacks it; if it
/// has it, the definitions must agree and a key already in the table is a
/// duplicate (see [`OnDuplicate`]).
///
/// Atomicity: in [`Mode::Pipeline`] the table and all its rows appear in
/// one ingestion, or (on any error, or a kill) nothing changes. In
/// [`Mode::Direct`] and [`Mode::Batch`] each unit (one ingestion, one
/// write batch) is atomic and later units see earlier ones as rows of the
/// table. When such an import fails with an error, the rows it wrote into
/// a table it created are deleted again (the table stays absent), but rows
/// it wrote into a table that already existed stay. A killed direct or
/// batch import into a new table leaves its rows without a catalog entry
/// (invisible to table commands); the next import that creates a table
/// deletes them.
pub fn import(db: &Db, def: &Table, inputs: &[Input], opts: &ImportOptions) -> Result<Summary> {
    opts.dialect.check().map_err(Error::invalid)?;
    // One import at a time per database (`catalog::exclusive`).
    let _only = catalog::exclusive(db);
    if let Some(r) = &opts.rejects {
        check_rejects_path(db, r, inputs)?;
    }
    set_phase(opts, Phase::Reading);
    let existing = catalog::get(db, &def.name)?;
    let (entry, created) = match existing {
        Some(e) => {
            if folded(&e.table) != folded(def) {
                return Err(Error::invalid(format!(
                    "table {} exists with a different definition: {}",
                    def.name,
                    first_difference(&e.table, def)
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
    let (table_lo, table_hi) = table_range(entry.id);
    if created {
        catalog::clear_unlisted_rows(db, entry.id)?;
    }
    let has_rows = !created && db.prefix(codec.prefix(0)).next().transpose()?.is_some();
    let rowid_base = if codec.table.hidden_rowid && has_rows {
        last_rowid(db, &codec)? + 1
    } else {
        0
    };
    let tmp = TempDir::create(db)?;

    let names: Vec<String> = inputs.iter().map(Input::name).collect();
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        opts.threads
    };
    let mut budget = Budget::new(
        opts.memory,
        threads,
        codec.table.indexes.len(),
        opts.chunk_size,
        opts.target_file_size,
    );
    // Units after the first look their keys up in the table; into a table
    // that held no rows, a filter of the earlier units' keys spares most
    // of those lookups (`written.rs`).
    let written = (opts.mode != Mode::Pipeline && !has_rows).then(|| {
        budget = budget.with_written_filter();
        WrittenKeys::new(budget.written)
    });
    let mut loader = Loader {
        written,
        budget,
        threads,
        db,
        codec: &codec,
        names: &names,
        opts,
        dir: tmp.0.clone(),
        has_rows,
        sorters: Vec::new(),
        pool: Arc::new(
            BatchPool::new(codec.table.indexes.len()).with_room(pool_room(&budget, &codec)),
        ),
        unit_rows: 0,
        summary: Summary {
            table: codec.table.name.clone(),
            created,
            budget: Some(budget),
            indexes: codec
                .table
                .indexes
                .iter()
                .map(|ix| IndexSummary {
                    name: ix.name.clone(),
                    in_order: true,
                    ..IndexSummary::default()
                })
                .collect(),
            ..Summary::default()
        },
        rejects: Rejects::open(opts.rejects.as_deref())?,
    };
    loader.sorters = loader.new_sorters();
    let r = loader.run(inputs, rowid_base, &entry, created);
    if r.is_err() && created && loader.summary.units > 0 && opts.mode != Mode::Pipeline {
        // Take back what the committed units of this failed import wrote
        // (an excise: their files leave the tree at once, see
        // `catalog::remove_rows`).
        if let (Err(c), Err(e)) = (catalog::remove_rows(db, &table_lo, &table_hi), &r) {
            // On a full disk the deletion fails too: say so, and what
            // becomes of the rows (the error alone would leave the user
            // believing the table's rows are gone).
            return Err(Error::Invalid(format!(
                "{e}; deleting the rows this import had written into the new table {} \
                 failed too ({c}): they stay in the database, invisible to table commands \
                 (the table has no catalog entry), until the next import that creates a \
                 table deletes them",
                def.name
            )));
        }
    }
    r?;
    set_phase(opts, Phase::Done);
    drop(tmp);
    Ok(loader.summary)
}

/// Ingestion options for files this import wrote itself (`sink.rs`:
/// `SstWriter` with `SstOptions::for_ingestion`, finished and synced in
/// the import's scratch directory inside the locked database directory,
/// written by nothing else since). The engine's pre-ingest walk over
/// every block and key would check again what that writer enforced as
/// each key was added (keys in order, no user key twice, sequence number
/// 0; the merge has already refused duplicates under `--on-duplicate
/// error`): no checksum pass (about 8% of a W1 import's CPU when it ran)
/// and no key walk (`trust_own_files`: 4-5% of the CPU, at the end of the
/// import with nothing beside it), as RocksDB's ingestion does by default;
/// the footer, index and properties are still read and checked, and the
/// first and last keys give the bounds. Reads still check every block's
/// checksum. Files a user hands over (`strata ingest`, bundles) keep the
/// full walk.
fn own_files() -> IngestOptions {
    IngestOptions {
        verify_checksums: false,
        trust_own_files: true,
        ..IngestOptions::default()
    }
}

/// The key range of every index of table `id`.
pub(crate) fn table_range(id: u32) -> (Vec<u8>, Vec<u8>) {
    let lo = crate::encode::key::index_prefix(id, 0)[..5].to_vec();
    let hi = crate::encode::key::prefix_end(&lo).unwrap_or_else(|| vec![0xff; 6]);
    (lo, hi)
}

/// Whether the sorters make in-memory runs (only when the budget holds
/// many of them: a spill writes each as its own run file, and the merge
/// reads every run file through its own buffer).
fn mem_runs(budget: &Budget, codec: &TableCodec) -> bool {
    budget.sort / codec.table.indexes.len().max(1) >= 16 * MEM_RUN_AT
}

/// Bytes of empty batches the pool keeps per index beyond its fixed few
/// (`BatchPool::with_room`): with in-memory runs, a run's worth, so the
/// batches a run gives back all go to the workers again instead of being
/// freed and made afresh (kept out of the sort share, `sort_limit`).
fn pool_room(budget: &Budget, codec: &TableCodec) -> usize {
    if mem_runs(budget, codec) {
        MEM_RUN_AT
    } else {
        0
    }
}

/// The state of one import on the calling thread.
struct Loader<'a> {
    budget: Budget,
    threads: usize,
    db: &'a Db,
    codec: &'a Arc<TableCodec>,
    names: &'a [String],
    opts: &'a ImportOptions,
    dir: PathBuf,
    /// The table held rows before the import.
    has_rows: bool,
    /// The keys earlier units wrote, when the table held no rows before
    /// the import (direct and batch modes). Taken out while a unit is
    /// merged, and given its keys between units.
    written: Option<WrittenKeys>,
    /// The current buffers (the whole import's, or the current unit's).
    sorters: Vec<IndexSorter>,
    /// Entry batches the sorters are done with, for the workers to reuse.
    pool: Arc<BatchPool>,
    /// Rows in the current unit (batch mode).
    unit_rows: usize,
    summary: Summary,
    rejects: Rejects,
}

impl Loader<'_> {
    fn src_of(&self, s: Src) -> RowSource {
        RowSource {
            file: self.names.get(s.file as usize).cloned().unwrap_or_default(),
            line: s.line,
        }
    }

    /// Whether the sorters make in-memory runs (see [`mem_runs`]).
    fn mem_runs(&self) -> bool {
        mem_runs(&self.budget, self.codec)
    }

    /// Buffered bytes (all indexes) at which the buffers spill: the sort
    /// share, less room for the copy each index makes while it turns
    /// buffered entries into an in-memory run (both are held until the
    /// run is done) and for the empty batches the pool keeps per index
    /// ([`pool_room`]).
    fn sort_limit(&self) -> usize {
        let nidx = self.codec.table.indexes.len();
        if self.mem_runs() {
            self.budget
                .sort
                .saturating_sub(nidx * MEM_RUN_AT + nidx * pool_room(&self.budget, self.codec))
        } else {
            self.budget.sort
        }
    }

    /// Fresh sorters, one per index, under `<tmp>/u<unit>-ix<i>`.
    fn new_sorters(&self) -> Vec<IndexSorter> {
        let pipeline = self.opts.mode == Mode::Pipeline;
        let keep_dups = Resolver::keeps_dups(self.opts.on_duplicate);
        let nidx = self.codec.table.indexes.len();
        let mem_run_at = if self.mem_runs() {
            MEM_RUN_AT
        } else {
            usize::MAX
        };
        (0..nidx)
            .map(|i| {
                IndexSorter::new(
                    &self.dir,
                    &format!("u{}-ix{i}", self.summary.units),
                    self.opts.target_file_size,
                    pipeline && !self.has_rows,
                    keep_dups,
                )
                .with_mem_run_at(mem_run_at)
                .with_writer_cap(self.budget.writer_cap)
                .with_merge_memory(self.budget.chunks / nidx.max(1))
                .with_pool(Arc::clone(&self.pool), i)
            })
            .collect()
    }

    fn run(
        &mut self,
        inputs: &[Input],
        rowid_base: i64,
        entry: &CatalogEntry,
        created: bool,
    ) -> Result<()> {
        let opts = self.opts;
        let started = Instant::now();
        let (threads, budget) = (self.threads, self.budget);
        let codec = self.codec;
        std::thread::scope(|s| -> Result<()> {
            // Every channel end lives in this scope: when `collect` returns
            // (maybe early, on an error) its receiver drops, the workers'
            // sends fail, they drop theirs, and the reader's sends fail in
            // turn, so no thread is left blocked.
            let depth = budget.queue_depth;
            let (chunk_tx, chunk_rx) = sync_channel::<(Chunk, Arc<Vec<usize>>)>(depth);
            let chunk_rx = Arc::new(Mutex::new(chunk_rx));
            let (res_tx, res_rx) = sync_channel::<Msg>(depth);
            // A token per chunk between the reader and `collect`: the reader
            // is never more than the budget's chunks ahead of the sorters,
            // however slow one worker is (results wait in input order).
            let (tok_tx, tok_rx) = sync_channel::<()>(Budget::chunks_in_flight(threads) - 1);
            // Parsed chunks' buffers back to the reader (see
            // `Splitter::recycle`); a full queue drops them.
            let (recycle_tx, recycle_rx) =
                sync_channel::<Vec<u8>>(crate::budget::RECYCLED_CHUNKS - 1);
            {
                let res_tx = res_tx.clone();
                let dialect = opts.dialect.clone();
                let codec = Arc::clone(codec);
                let inputs = inputs.to_vec();
                let chunk_size = budget.chunk_size;
                s.spawn(move || {
                    let ch = ReaderChannels {
                        chunks: chunk_tx,
                        results: res_tx,
                        tokens: tok_tx,
                        recycled: recycle_rx,
                    };
                    read_inputs(&inputs, &dialect, &codec, chunk_size, ch)
                });
            }
            for _ in 0..threads {
                let rx = Arc::clone(&chunk_rx);
                let tx = res_tx.clone();
                let codec = Arc::clone(codec);
                let dialect = opts.dialect.clone();
                let recycle = recycle_tx.clone();
                let pool = Arc::clone(&self.pool);
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
                        pool: Some(&pool),
                    };
                    let parsed = parse_chunk(&chunk, &layout);
                    let _ = recycle.try_send(chunk.data);
                    if tx.send(Msg::Parsed(chunk.seq, parsed)).is_err() {
                        return;
                    }
                });
            }
            drop(res_tx);
            drop(chunk_rx);
            drop(recycle_tx);
            self.collect(res_rx, tok_rx)
        })?;
        self.rejects.finish()?;
        self.summary.read_parse = started.elapsed();
        // The import's phases go to the database's EVENTS log (the
        // visualiser shows them beside the ingestion).
        let name = codec.table.name.as_str();
        self.db.log_import_phase(
            name,
            "read",
            self.summary.rows,
            self.summary.input_bytes,
            self.summary.read_parse,
        );

        set_phase(opts, Phase::Merging);
        let merge_start = Instant::now();
        let sorters = std::mem::take(&mut self.sorters);
        let mut files = Vec::new();
        // What the indexes counted before this unit's files: restored if
        // the database applies them as a write batch.
        let counted = self.file_counts();
        if opts.mode == Mode::Pipeline {
            files = self.merge_unit(sorters)?;
        } else if self.unit_rows > 0 {
            self.write_unit(sorters)?;
        }
        self.summary.merge_write = merge_start.elapsed().saturating_sub(self.summary.ingest);
        let sst_bytes: u64 = files.iter().map(|f| f.size).sum();
        self.db.log_import_phase(
            name,
            "sort and write",
            self.summary.rows,
            sst_bytes,
            self.summary.merge_write,
        );

        // One ingestion: every index, and the catalog entry of a new table.
        set_phase(opts, Phase::Ingesting);
        let ingest_start = Instant::now();
        let mut paths: Vec<PathBuf> = Vec::new();
        if created {
            let mut sink = RollingSink::new(&self.dir, "catalog", u64::MAX);
            sink.add(&catalog::key(&codec.table.name), &catalog::encode(entry))?;
            paths.extend(sink.finish()?.into_iter().map(|f| f.path));
        }
        let has_data = files.iter().any(|f| f.entries > 0);
        paths.extend(files.into_iter().map(|f| f.path));
        if !paths.is_empty() && (created || has_data) {
            let r = self.db.ingest(&paths, &own_files())?;
            // In the other modes this is the catalog entry alone, no unit.
            if r.as_batch && opts.mode == Mode::Pipeline {
                self.batch_applied(counted);
            }
            self.summary.levels.extend(r.levels);
        }
        if opts.mode == Mode::Pipeline {
            self.summary.units = 1;
        }
        self.summary.ingest += ingest_start.elapsed();
        self.db.log_import_phase(
            name,
            "ingest",
            self.summary.rows,
            sst_bytes,
            self.summary.ingest,
        );
        Ok(())
    }

    /// Merges one set of sorters (primary first) into SSTs, resolving
    /// duplicates; returns the files of every index.
    fn merge_unit(&mut self, mut sorters: Vec<IndexSorter>) -> Result<Vec<SstFile>> {
        // Cut the files where the tree is cut: a unit that overlaps earlier
        // data lands in L0, and each of its files then compacts into one
        // Lbase file instead of all of them.
        let splits = self.db.ingest_split_keys();
        for s in &mut sorters {
            s.set_split_keys(splits.clone());
        }
        if self.opts.on_duplicate == OnDuplicate::Error {
            return self.merge_unit_parallel(sorters);
        }
        let mut all = Vec::new();
        let written = self.written.take();
        let lookups = self.lookups(written.as_ref());
        let (db, codec, names) = (self.db, self.codec, self.names);
        let mode = self.opts.on_duplicate;
        let mut resolver = Resolver::new(db, codec, names, mode, lookups);
        for (i, mut sorter) in sorters.into_iter().enumerate() {
            let stale = resolver.take_stale(i);
            if !stale.is_empty() {
                sorter.push(stale).map_err(|e| self.sort_err(e, i))?;
            }
            let ix = &mut self.summary.indexes[i];
            ix.spilled_bytes += sorter.spilled_bytes;
            ix.in_order &= sorter.is_in_order();
            self.summary.spilled_bytes += sorter.spilled_bytes;
            let files = sorter.finish(|g| resolver.decide(i, g));
            let files = files.map_err(|e| self.sort_err(e, i))?;
            let ix = &mut self.summary.indexes[i];
            ix.kvs += files.iter().map(|f| f.entries).sum::<u64>();
            ix.files += files.len();
            ix.file_bytes += files.iter().map(|f| f.size).sum::<u64>();
            all.extend(files);
        }
        self.account(&resolver);
        drop(resolver);
        self.written = written;
        Ok(all)
    }

    /// [`Self::merge_unit`] under `--on-duplicate error`, every index on
    /// its own thread: there no index's merge depends on another's (no row
    /// is dropped or replaced, so no stale entries), so each gets its own
    /// [`Resolver`]. The indexes' sorts and SST writes then use every core
    /// instead of one. Errors are reported for the lowest index first, as
    /// the sequential merge would.
    fn merge_unit_parallel(&mut self, sorters: Vec<IndexSorter>) -> Result<Vec<SstFile>> {
        let written = self.written.take();
        let lookups = self.lookups(written.as_ref());
        let (db, codec, names) = (self.db, self.codec, self.names);
        let mode = self.opts.on_duplicate;
        for (i, sorter) in sorters.iter().enumerate() {
            let ix = &mut self.summary.indexes[i];
            ix.spilled_bytes += sorter.spilled_bytes;
            ix.in_order &= sorter.is_in_order();
            self.summary.spilled_bytes += sorter.spilled_bytes;
        }
        // The cores go to the indexes that still need a merge (one in
        // key order only finishes its stream): when fewer indexes than
        // threads need one, each one's merge is split by key range.
        let merging = sorters.iter().filter(|s| !s.is_in_order()).count();
        let ways = self.threads / merging.max(1);
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = sorters
                .into_iter()
                .enumerate()
                .map(|(i, sorter)| {
                    s.spawn(move || {
                        sorter.finish_split(ways, || {
                            let mut resolver = Resolver::new(db, codec, names, mode, lookups);
                            move |g: &[EntryRef<'_>]| resolver.decide(i, g)
                        })
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        self.written = written;
        let mut all = Vec::new();
        for (i, r) in results.into_iter().enumerate() {
            let files = r
                .map_err(|_| Error::invalid("internal: an index merge thread panicked"))?
                .map_err(|e| self.sort_err(e, i))?;
            let ix = &mut self.summary.indexes[i];
            ix.kvs += files.iter().map(|f| f.entries).sum::<u64>();
            ix.files += files.len();
            ix.file_bytes += files.iter().map(|f| f.size).sum::<u64>();
            all.extend(files);
        }
        Ok(all)
    }

    /// Which keys a unit's resolvers look up in the table: every key when
    /// it held rows; into a table that held none, those the filter of
    /// earlier units' keys may hold (none in the first unit), or none at
    /// all in the pipeline's one merge.
    fn lookups<'w>(&self, written: Option<&'w WrittenKeys>) -> Lookups<'w> {
        match (self.has_rows, written) {
            (true, _) => Lookups::All,
            (false, Some(w)) => Lookups::Written(w),
            (false, None) if self.summary.units == 0 => Lookups::None,
            (false, None) => Lookups::All,
        }
    }

    fn account(&mut self, resolver: &Resolver<'_>) {
        let dropped = resolver.dropped.len() as u64;
        self.summary.duplicates_ignored += dropped;
        self.summary.rows -= dropped;
        self.summary.replaced += resolver.replaced;
    }

    /// Writes the current unit of a direct or batch import.
    fn write_unit(&mut self, sorters: Vec<IndexSorter>) -> Result<()> {
        // The earlier units' keys, noted by their resolvers, join the
        // filter before this unit's resolvers read it.
        if let Some(w) = self.written.as_mut() {
            w.absorb();
        }
        match self.opts.mode {
            Mode::Pipeline => return Err(Error::invalid("internal: a unit in pipeline mode")),
            Mode::Direct => {
                let counted = self.file_counts();
                let files = self.merge_unit(sorters)?;
                let paths: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
                if files.iter().any(|f| f.entries > 0) {
                    let t = Instant::now();
                    let r = self.db.ingest(&paths, &own_files())?;
                    self.summary.ingest += t.elapsed();
                    if r.as_batch {
                        self.batch_applied(counted);
                    }
                    self.summary.levels.extend(r.levels);
                }
                for p in paths {
                    let _ = std::fs::remove_file(p);
                }
            }
            Mode::Batch { .. } => {
                let written = self.written.take();
                let lookups = self.lookups(written.as_ref());
                let (db, codec, names) = (self.db, self.codec, self.names);
                let mode = self.opts.on_duplicate;
                let mut resolver = Resolver::new(db, codec, names, mode, lookups);
                let mut out = BatchOutput::default();
                for (i, mut sorter) in sorters.into_iter().enumerate() {
                    let stale = resolver.take_stale(i);
                    if !stale.is_empty() {
                        sorter.push(stale).map_err(|e| self.sort_err(e, i))?;
                    }
                    let before = out.ops;
                    sorter
                        .merge_into(&mut out, |g| resolver.decide(i, g))
                        .map_err(|e| self.sort_err(e, i))?;
                    self.summary.indexes[i].kvs += out.ops - before;
                    self.summary.indexes[i].in_order = false;
                }
                self.account(&resolver);
                drop(resolver);
                self.written = written;
                if out.ops > 0 {
                    let t = Instant::now();
                    self.db.write(out.batch, &WriteOptions::default())?;
                    self.summary.ingest += t.elapsed();
                    self.summary.batch_units += 1;
                }
            }
        }
        self.summary.units += 1;
        self.unit_rows = 0;
        Ok(())
    }

    /// Each index's count of ingested files and their bytes, taken before
    /// a unit's files are written ([`Self::batch_applied`]).
    fn file_counts(&self) -> Vec<(usize, u64)> {
        self.summary
            .indexes
            .iter()
            .map(|i| (i.files, i.file_bytes))
            .collect()
    }

    /// The database applied a unit's files as a write batch (they were
    /// under `small_file_bytes`): none of them entered the tree, so the
    /// indexes' file counts go back to what they were before the unit
    /// (`counted`), and the unit is counted as a batch.
    fn batch_applied(&mut self, counted: Vec<(usize, u64)>) {
        for (ix, (files, bytes)) in self.summary.indexes.iter_mut().zip(counted) {
            ix.files = files;
            ix.file_bytes = bytes;
        }
        self.summary.batch_units += 1;
    }

    fn sort_err(&self, e: SortError, index: usize) -> Error {
        match e {
            SortError::Other(e) => e,
            SortError::Dup(d) => Error::Duplicate {
                index: self.codec.table.indexes[index].name.clone(),
                key: self.codec.describe_key(index, &d.key),
                first: Some(self.src_of(d.first)),
                second: self.src_of(d.second),
            },
        }
    }

    /// Runs `work` on every sorter that `due` picks, each on its own
    /// thread when more than one is picked: spilling, streaming or sorting
    /// one index's buffer does not depend on another's, and the calling
    /// thread (which feeds the sorters) waits for that work anyway, so the
    /// indexes' sorts and SST writes use every core instead of one.
    /// Errors are reported for the lowest index first.
    fn on_each(
        &mut self,
        due: fn(&IndexSorter) -> bool,
        work: fn(&mut IndexSorter) -> std::result::Result<(), SortError>,
    ) -> Result<()> {
        let picked = self.sorters.iter().filter(|s| due(s)).count();
        let results: Vec<(usize, std::result::Result<(), SortError>)> = if picked <= 1 {
            let mut out = Vec::new();
            for (i, s) in self.sorters.iter_mut().enumerate() {
                if due(s) {
                    out.push((i, work(s)));
                }
            }
            out
        } else {
            let joined: Vec<_> = std::thread::scope(|sc| {
                let handles: Vec<_> = self
                    .sorters
                    .iter_mut()
                    .enumerate()
                    .filter(|(_, s)| due(s))
                    .map(|(i, s)| (i, sc.spawn(move || work(s))))
                    .collect();
                handles.into_iter().map(|(i, h)| (i, h.join())).collect()
            });
            let mut out = Vec::new();
            for (i, r) in joined {
                let r =
                    r.map_err(|_| Error::invalid("internal: an index's sort thread panicked"))?;
                out.push((i, r));
            }
            out
        };
        for (i, r) in results {
            r.map_err(|e| self.sort_err(e, i))?;
        }
        Ok(())
    }

    /// Results in input order into the sorters.
    fn collect(&mut self, rx: Receiver<Msg>, tokens: Receiver<()>) -> Result<()> {
        let mut pending: BTreeMap<u64, Parsed> = BTreeMap::new();
        let mut next = 0u64;
        let mut end: Option<u64> = None;
        let mut read_error: Option<(u64, Error)> = None;
        loop {
            while let Some(p) = pending.remove(&next) {
                self.take(p)?;
                let _ = tokens.try_recv();
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
                    self.summary.input_bytes = bytes;
                }
                Err(_) => return Err(Error::invalid("internal: import threads ended early")),
            }
        }
    }

    /// One parsed chunk: bad rows counted, entries into the buffers, a
    /// spill (pipeline) or a unit written (direct, batch) when they fill.
    fn take(&mut self, p: Parsed) -> Result<()> {
        let opts = self.opts;
        for b in p.bad {
            self.summary.bad_rows += 1;
            if self.summary.bad_rows > opts.max_bad_rows {
                // Past a limit the user set, say so: the row named is only
                // the one that went over it.
                let reason = match opts.max_bad_rows {
                    0 => b.reason,
                    max => format!(
                        "{} (bad row {}: more than --max-bad-rows {max} allows)",
                        b.reason, self.summary.bad_rows
                    ),
                };
                return Err(Error::BadRow {
                    at: self.src_of(b.src),
                    column: b.column,
                    reason,
                });
            }
            let names = self.names;
            self.rejects.write(&b, &|s: Src| RowSource {
                file: names.get(s.file as usize).cloned().unwrap_or_default(),
                line: s.line,
            })?;
        }
        self.summary.rows += p.rows;
        if let Some(pr) = &opts.progress {
            pr.rows.fetch_add(p.rows, AtomicOrdering::Relaxed);
            pr.bytes.fetch_add(p.bytes, AtomicOrdering::Relaxed);
        }
        let mut entries = p.entries;
        let mut rows = p.rows as usize;
        loop {
            // In batch mode a unit ends after exactly `rows_per_batch` rows.
            let room = match opts.mode {
                Mode::Batch { rows_per_batch } => rows_per_batch.max(1) - self.unit_rows,
                _ => usize::MAX,
            };
            let now = rows.min(room);
            let rest: Vec<EntryBatch> = if now < rows {
                entries.iter_mut().map(|e| e.split_off(now)).collect()
            } else {
                Vec::new()
            };
            for (i, e) in std::mem::take(&mut entries).into_iter().enumerate() {
                self.sorters[i]
                    .push_only(e)
                    .map_err(|e| self.sort_err(e, i))?;
            }
            self.on_each(IndexSorter::upkeep_due, IndexSorter::upkeep)?;
            self.unit_rows += now;
            rows -= now;
            let used: usize = self.sorters.iter().map(|s| s.buf_bytes).sum();
            self.summary.peak_buffer_bytes = self.summary.peak_buffer_bytes.max(used);
            let full = used > self.sort_limit() || (now == room && room > 0);
            if full {
                if opts.mode == Mode::Pipeline {
                    self.on_each(|_| true, IndexSorter::spill)?;
                } else {
                    let fresh = self.new_sorters();
                    let sorters = std::mem::replace(&mut self.sorters, fresh);
                    self.write_unit(sorters)?;
                    self.sorters = self.new_sorters();
                }
            }
            if rows == 0 {
                return Ok(());
            }
            entries = rest;
        }
    }
}

/// The batch mode's output: one write batch.
#[derive(Default)]
struct BatchOutput {
    batch: WriteBatch,
    ops: u64,
}

impl Output for BatchOutput {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.batch.put(key, value);
        self.ops += 1;
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.batch.delete(key);
        self.ops += 1;
        Ok(())
    }
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

/// The reader thread's channels.
struct ReaderChannels {
    /// Chunks to the workers, with each file's field-to-column mapping.
    chunks: std::sync::mpsc::SyncSender<(Chunk, Arc<Vec<usize>>)>,
    /// Read errors and the end, to the collecting thread.
    results: std::sync::mpsc::SyncSender<Msg>,
    /// One token per chunk in flight (see `Loader::run`).
    tokens: std::sync::mpsc::SyncSender<()>,
    /// Parsed chunks' buffers, to read into again.
    recycled: Receiver<Vec<u8>>,
}

/// The reader thread: chunks of every input, in order, with each file's
/// field-to-column mapping.
fn read_inputs(
    inputs: &[Input],
    dialect: &Dialect,
    codec: &TableCodec,
    chunk_size: usize,
    ch: ReaderChannels,
) {
    let ReaderChannels {
        chunks: chunk_tx,
        results: res_tx,
        tokens,
        recycled,
    } = ch;
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
                if let Ok(buf) = recycled.try_recv() {
                    sp.recycle(buf);
                }
                let next = sp.next_chunk()?;
                if first && dialect.header == Header::Match {
                    columns = Arc::new(match_header(table, sp.header(), &input.name())?);
                }
                first = false;
                let Some(mut c) = next else { break };
                c.seq = seq;
                seq += 1;
                if tokens.send(()).is_err() {
                    return Ok(());
                }
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

/// The rejects file and its `.reasons` file, created only when the first
/// bad row arrives, and never over an existing file (`create_new`;
/// `check_rejects_path` already refused a path that existed before the
/// import began).
struct Rejects {
    path: Option<PathBuf>,
    out: Option<(
        std::io::BufWriter<std::fs::File>,
        std::io::BufWriter<std::fs::File>,
        PathBuf,
    )>,
}

impl Rejects {
    fn open(path: Option<&Path>) -> Result<Rejects> {
        Ok(Rejects {
            path: path.map(Path::to_path_buf),
            out: None,
        })
    }

    fn write(&mut self, b: &BadRow, src_of: &dyn Fn(Src) -> RowSource) -> Result<()> {
        if self.out.is_none() {
            let Some(p) = &self.path else {
                return Ok(());
            };
            let reasons = reasons_path(p);
            let create = |q: &Path| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(q)
                    .map_err(|e| Error::io(q, e))
            };
            let a = create(p)?;
            let r = create(&reasons)?;
            self.out = Some((
                std::io::BufWriter::new(a),
                std::io::BufWriter::new(r),
                p.clone(),
            ));
        }
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
