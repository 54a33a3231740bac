//! Table bundles: a table's SST files built elsewhere (Apache Spark, another
//! machine, another process), described by a manifest and ingested in one
//! step.
//!
//! A bundle is a directory holding the table's SSTs (the primary index and
//! every secondary index, encoded exactly as `strata import` encodes them)
//! and [`MANIFEST_NAME`], a JSON document naming the table, its DDL, the
//! table id its keys were encoded with, and per file: the index it belongs
//! to, its size, SHA-256, entry count and first and last key
//! (`docs/formats.md`, "Table bundles").
//!
//! [`ingest_table`] trusts nothing in a bundle. Before the database is
//! touched it checks, and names the file and the entry when a check fails:
//! every file is a plain name inside the bundle, its size and SHA-256 match
//! the manifest (a file rewritten or cut after the manifest was written is
//! refused), its entries are puts in strictly increasing order, all inside
//! its index's key range and each decodable under the schema, its count and
//! first and last key match the manifest, the files of one index do not
//! overlap (so a key written by two tasks, a retried task's leftover, or a
//! duplicate primary key across partitions is caught), and every index has
//! one entry per row. Only then are the catalog entry and every file
//! ingested in ONE `Db::ingest`: the table appears with all its rows or not
//! at all, and into an empty key range the files land in the bottom level
//! without compaction. A bundle small enough (under the ingestion's
//! `small_file_bytes`) is applied by the database as a write batch
//! instead: the summary then counts no file ingested and one batch unit
//! ([`BundleSummary::batch_units`]), as an import's summary does.
//!
//! Invariants: a bundle only creates a table (a table of that name, or
//! another table with its id, already in the catalog is an error: the
//! bundle's keys carry the id, and merging into live rows would replace them
//! silently), and keys already under the bundle's table id without a
//! catalog entry (rows of a killed direct or batch import) are deleted
//! before the ingestion; the bundle directory is never modified unless
//! [`BundleOptions::move_files`] is set, in which case the ingested files are
//! moved into the database after the ingestion succeeded.

use crate::catalog::{self, CatalogEntry};
use crate::codec::TableCodec;
use crate::encode::key::prefix_end;
use crate::error::{Error, Result};
use crate::schema::Schema;
use crate::sink::RollingSink;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use strata::sstable::SstReader;
use strata::{Db, IngestOptions};

/// The manifest's file name inside a bundle directory.
pub const MANIFEST_NAME: &str = "strata-bundle.json";
/// The manifest's `format` field.
pub const FORMAT: &str = "strata-table-bundle";
/// The manifest version this code writes and reads.
pub const VERSION: u32 = 1;

/// A bundle's manifest (`strata-bundle.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleManifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// The table's name (matched case-insensitively, as in the catalog).
    pub table: String,
    /// The table id the keys were encoded with.
    pub table_id: u32,
    /// SQL DDL defining the table (and possibly others; `table` picks one).
    pub schema: String,
    /// Rows in the table: every index holds this many entries.
    pub rows: u64,
    /// The files, in any order.
    pub files: Vec<BundleFile>,
}

/// One SST file of a bundle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleFile {
    /// File name inside the bundle directory (no directories).
    pub name: String,
    /// The index the file's entries belong to (`primary` for the rows).
    pub index: String,
    /// Entries (key-value pairs) in the file.
    pub entries: u64,
    /// Size in bytes.
    pub size: u64,
    /// Lower-case hex SHA-256 of the whole file.
    pub sha256: String,
    /// The first key, lower-case hex.
    pub smallest: String,
    /// The last key, lower-case hex.
    pub largest: String,
}

impl BundleManifest {
    /// A manifest for `table` (defined in `schema`) with no files yet.
    pub fn new(table: &str, table_id: u32, schema: &str) -> BundleManifest {
        BundleManifest {
            format: FORMAT.to_string(),
            version: VERSION,
            table: table.to_string(),
            table_id,
            schema: schema.to_string(),
            rows: 0,
            files: Vec::new(),
        }
    }

    /// Reads `dir/strata-bundle.json`.
    pub fn read(dir: &Path) -> Result<BundleManifest> {
        let path = dir.join(MANIFEST_NAME);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let m: BundleManifest = serde_json::from_str(&text).map_err(|e| {
            Error::invalid(format!(
                "{}: line {}, column {}: not a bundle manifest: {e}",
                path.display(),
                e.line(),
                e.column()
            ))
        })?;
        if m.format != FORMAT || m.version != VERSION {
            return Err(Error::invalid(format!(
                "{}: format {:?} version {} (this Strata reads {FORMAT:?} version {VERSION})",
                path.display(),
                m.format,
                m.version
            )));
        }
        Ok(m)
    }

    /// Writes `dir/strata-bundle.json` durably (a temporary file, synced,
    /// renamed over the name), so a reader sees the old manifest or the new
    /// one, never part of one.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(MANIFEST_NAME);
        let tmp = dir.join(format!("{MANIFEST_NAME}.tmp"));
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::invalid(format!("manifest: {e}")))?;
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.write_all(b"\n")?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            std::fs::File::open(dir)?.sync_all()
        };
        write().map_err(|e| Error::io(&path, e))
    }
}

/// Describes the SST `dir/name` as a bundle file of `index`: reads it
/// whole (size, SHA-256, entries, first and last key). For writers of
/// bundles; [`ingest_table`] repeats every check.
pub fn describe_file(dir: &Path, name: &str, index: &str) -> Result<BundleFile> {
    let path = dir.join(name);
    let (size, sha256) = hash_file(&path)?;
    let mut entries = 0u64;
    let mut first: Option<Vec<u8>> = None;
    let mut last: Vec<u8> = Vec::new();
    for kv in SstReader::open(&path)? {
        let (k, _) = kv?;
        entries += 1;
        if first.is_none() {
            first = Some(k.clone());
        }
        last = k;
    }
    Ok(BundleFile {
        name: name.to_string(),
        index: index.to_string(),
        entries,
        size,
        sha256,
        smallest: hex::encode(first.unwrap_or_default()),
        largest: hex::encode(last),
    })
}

/// How [`ingest_table`] treats the bundle's files.
#[derive(Clone, Debug, Default)]
pub struct BundleOptions {
    /// Move the files into the database once the ingestion succeeded
    /// (hard links where the bundle is on the same file system), instead
    /// of copying them and leaving the bundle as it was.
    pub move_files: bool,
}

/// What [`ingest_table`] did.
#[derive(Clone, Debug, Default)]
pub struct BundleSummary {
    /// The table created.
    pub table: String,
    /// Its id.
    pub table_id: u32,
    /// Rows in it.
    pub rows: u64,
    /// The bundle's files that entered the tree as files (the catalog
    /// entry's file not counted): all of them, or 0 when the database
    /// applied the bundle as a write batch ([`Self::batch_units`]).
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// 1 when the database applied the bundle's files as a write batch
    /// instead of ingesting them (a small bundle: under the ingestion's
    /// `small_file_bytes`), else 0; as [`Summary::batch_units`] counts an
    /// import's units.
    ///
    /// [`Summary::batch_units`]: crate::Summary::batch_units
    pub batch_units: u64,
    /// Entries per index, in the table's index order.
    pub entries: Vec<(String, u64)>,
    /// Level each ingested file landed on (catalog file first; `None`: it
    /// waits in the flushable queue, or the set was applied as a batch).
    pub levels: Vec<Option<usize>>,
    /// Reading and checking every file.
    pub verify: Duration,
    /// The ingestion call.
    pub ingest: Duration,
}

/// Checks the bundle in `dir` and ingests it into `db` as a new table, in
/// one atomic ingestion (the catalog entry's file is written in the
/// database's scratch directory). See the module documentation for the checks.
///
/// ```
/// # use strata_import::bundle::{BundleManifest, BundleOptions, ingest_table};
/// # let dir = tempfile::tempdir().unwrap();
/// # let db_dir = dir.path().join("db");
/// # let bundle = dir.path().join("bundle");
/// # std::fs::create_dir(&bundle).unwrap();
/// // An empty table: a manifest and no files.
/// let schema = "CREATE TABLE t (id INT PRIMARY KEY, name TEXT)";
/// BundleManifest::new("t", 1, schema).write(&bundle)?;
/// let db = strata::Db::open_default(&db_dir)?;
/// let s = ingest_table(&db, &bundle, &BundleOptions::default())?;
/// assert_eq!(s.rows, 0);
/// assert!(strata_import::catalog::get(&db, "t")?.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn ingest_table(db: &Db, dir: &Path, opts: &BundleOptions) -> Result<BundleSummary> {
    // One import or bundle at a time per database (`catalog::exclusive`).
    let _only = catalog::exclusive(db);
    let m = BundleManifest::read(dir)?;
    let mpath = dir.join(MANIFEST_NAME);
    let schema = Schema::parse(&m.schema)
        .map_err(|e| Error::invalid(format!("{}: schema: {e}", mpath.display())))?;
    let Some(table) = schema.table(&m.table).cloned() else {
        return Err(Error::invalid(format!(
            "{}: the schema does not define table {}",
            mpath.display(),
            m.table
        )));
    };
    if m.table_id == 0 {
        return Err(Error::invalid(format!(
            "{}: table_id 0 is not a table id (ids start at 1)",
            mpath.display()
        )));
    }
    for e in catalog::list(db)? {
        if e.table.name.eq_ignore_ascii_case(&table.name) {
            return Err(Error::invalid(format!(
                "table {} already exists (id {}); a bundle creates a new table",
                e.table.name, e.id
            )));
        }
        if e.id == m.table_id {
            return Err(Error::invalid(format!(
                "table id {} of the bundle is table {}'s; rebuild the bundle with a free id \
                 (the next free one is {})",
                m.table_id,
                e.table.name,
                catalog::next_id(db)?
            )));
        }
    }
    let codec = TableCodec::new(table, m.table_id);

    // Check every file before touching the database.
    let verify_start = Instant::now();
    let mut per_index: Vec<Vec<KeyRange<'_>>> = vec![Vec::new(); codec.table.indexes.len()];
    let mut entries = vec![0u64; codec.table.indexes.len()];
    let mut bytes = 0u64;
    let mut seen = std::collections::HashSet::new();
    for f in &m.files {
        if f.name.is_empty()
            || f.name.contains(['/', '\\'])
            || f.name == "."
            || f.name == ".."
            || f.name == MANIFEST_NAME
        {
            return Err(Error::invalid(format!(
                "{}: file name {:?} is not a plain file name in the bundle",
                mpath.display(),
                f.name
            )));
        }
        if !seen.insert(f.name.as_str()) {
            return Err(Error::invalid(format!(
                "{}: file {} is listed twice",
                mpath.display(),
                f.name
            )));
        }
        let Some(ix) = codec.table.index_by_name(&f.index) else {
            return Err(Error::invalid(format!(
                "{}: file {}: table {} has no index {}",
                mpath.display(),
                f.name,
                codec.table.name,
                f.index
            )));
        };
        let (smallest, largest) = verify_file(dir, f, &codec, ix)?;
        per_index[ix].push((smallest, largest, f.name.as_str()));
        entries[ix] += f.entries;
        bytes += f.size;
    }
    for (ix, files) in per_index.iter_mut().enumerate() {
        files.sort();
        for w in files.windows(2) {
            if w[1].0 <= w[0].1 {
                return Err(Error::invalid(format!(
                    "bundle {}: files {} and {} of index {} overlap (a key in both, or a \
                     duplicate key across partitions)",
                    dir.display(),
                    w[0].2,
                    w[1].2,
                    codec.table.indexes[ix].name
                )));
            }
        }
    }
    for (ix, n) in entries.iter().enumerate() {
        if *n != m.rows {
            return Err(Error::invalid(format!(
                "bundle {}: index {} holds {n} entries, the manifest says {} rows",
                dir.display(),
                codec.table.indexes[ix].name,
                m.rows
            )));
        }
    }
    let verify = verify_start.elapsed();

    // Rows a killed direct or batch import left under this id (no catalog
    // entry) must not surface as the new table's rows.
    catalog::clear_unlisted_rows(db, m.table_id)?;

    // One ingestion: the catalog entry and every file.
    let ingest_start = Instant::now();
    // The catalog entry's file, in an import's temporary directory (a
    // killed run's is removed by the next open of the database).
    let tmp = crate::pipeline::TempDir::create(db)?;
    let entry = CatalogEntry {
        id: m.table_id,
        table: codec.table.clone(),
    };
    let mut sink = RollingSink::new(&tmp.0, "catalog", u64::MAX);
    sink.add(&catalog::key(&entry.table.name), &catalog::encode(&entry))?;
    let mut paths: Vec<PathBuf> = sink.finish()?.into_iter().map(|f| f.path).collect();
    paths.extend(m.files.iter().map(|f| dir.join(&f.name)));
    let r = db.ingest(
        &paths,
        &IngestOptions {
            move_files: opts.move_files,
            ..IngestOptions::default()
        },
    )?;
    let ingest = ingest_start.elapsed();
    drop(tmp);
    // A small bundle is applied as a write batch: none of its files
    // entered the tree, so none is counted as ingested (as an import's
    // summary counts a unit applied that way).
    let (files, bytes, batch_units) = if r.as_batch {
        (0, 0, 1)
    } else {
        (m.files.len(), bytes, 0)
    };
    Ok(BundleSummary {
        table: codec.table.name.clone(),
        table_id: m.table_id,
        rows: m.rows,
        files,
        bytes,
        batch_units,
        entries: codec
            .table
            .indexes
            .iter()
            .zip(&entries)
            .map(|(ix, n)| (ix.name.clone(), *n))
            .collect(),
        levels: r.levels,
        verify,
        ingest,
    })
}

/// A file's first and last key and its name.
type KeyRange<'a> = (Vec<u8>, Vec<u8>, &'a str);

/// Checks one file against its manifest entry and the schema; returns its
/// first and last key.
fn verify_file(
    dir: &Path,
    f: &BundleFile,
    codec: &TableCodec,
    ix: usize,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let path = dir.join(&f.name);
    let bad = |what: String| Error::invalid(format!("bundle file {}: {what}", path.display()));
    let (size, sha256) = hash_file(&path)?;
    if size != f.size {
        return Err(bad(format!(
            "{size} bytes, the manifest says {} (cut or rewritten after the manifest was written)",
            f.size
        )));
    }
    if !sha256.eq_ignore_ascii_case(&f.sha256) {
        return Err(bad(format!(
            "SHA-256 {sha256}, the manifest says {} (changed after the manifest was written)",
            f.sha256
        )));
    }
    if f.entries == 0 {
        return Err(bad(
            "holds no entries (an empty file cannot be ingested)".into()
        ));
    }
    let lo = codec.prefix(ix).to_vec();
    let hi = prefix_end(&lo);
    let index = &codec.table.indexes[ix].name;
    let mut n = 0u64;
    let mut first: Option<Vec<u8>> = None;
    let mut last: Vec<u8> = Vec::new();
    for kv in SstReader::open(&path)? {
        let (k, v) = kv?;
        let at = |what: &str| {
            bad(format!(
                "entry {n} (key {}): {what}",
                hex::encode(&k[..k.len().min(64)])
            ))
        };
        if first.is_some() && k <= last {
            return Err(at("keys are not in increasing order"));
        }
        if k < lo || hi.as_ref().is_some_and(|h| &k >= h) {
            return Err(at(&format!(
                "not a key of index {index} of table {} (id {})",
                codec.table.name, codec.table_id
            )));
        }
        let decoded = if ix == 0 {
            codec.decode_primary(&k, &v).map(|_| ())
        } else {
            codec.primary_of_entry(ix, &k, &v).map(|_| ())
        };
        if let Err(e) = decoded {
            return Err(at(&format!("does not decode under the schema: {e}")));
        }
        if first.is_none() {
            first = Some(k.clone());
        }
        last = k;
        n += 1;
    }
    let first = first.unwrap_or_default();
    if n != f.entries {
        return Err(bad(format!("{n} entries, the manifest says {}", f.entries)));
    }
    if !hex::encode(&first).eq_ignore_ascii_case(&f.smallest)
        || !hex::encode(&last).eq_ignore_ascii_case(&f.largest)
    {
        return Err(bad(format!(
            "keys {}..{}, the manifest says {}..{}",
            hex::encode(&first),
            hex::encode(&last),
            f.smallest,
            f.largest
        )));
    }
    Ok((first, last))
}

/// Size and lower-case hex SHA-256 of `path`.
fn hash_file(path: &Path) -> Result<(u64, String)> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok((size, hex::encode(h.finalize())))
}
