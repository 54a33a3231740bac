//! `strata demo`: the product's main job, end to end. Generate the TPC-C
//! stock table (`tpcc`), import it with its schema (primary key
//! `(s_w_id, s_i_id)` and the secondary index on `s_i_id`) in one atomic
//! ingestion, print the import's summary, read rows back by key and by
//! index, and show the tree the files landed in.

use crate::{import_cmd, open, tpcc};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Instant;
use strata::Options;
use strata_import::csv::input::Input;
use strata_import::table::TableReader;
use strata_import::{ImportOptions, Schema};

/// Arguments of `strata demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Where to write the demo's files (stock.csv, schema.sql and the
    /// database db/). Each run overwrites the first two and deletes and
    /// recreates DIR/db; a DIR that already holds files the demo did not
    /// write (no DIR/.strata-demo) is refused, so nothing else is lost.
    #[arg(long, default_value = "demo-output")]
    dir: PathBuf,
    /// TPC-C warehouses (100,000 stock rows, about 31 MB of CSV, each).
    #[arg(long, default_value_t = 1)]
    warehouses: u32,
    /// Generate the rows in random order instead of primary-key order.
    #[arg(long)]
    random: bool,
    /// Memory for the import's sort buffers, e.g. 64MiB.
    #[arg(long, default_value = "256MiB")]
    memory: String,
}

/// Runs the demo.
pub fn run(a: DemoArgs) -> Result<()> {
    if a.warehouses == 0 {
        bail!("--warehouses must be at least 1");
    }
    // Refused as `strata import` refuses it, before anything is written.
    let memory = import_cmd::parse_memory(&a.memory)?;
    // The demo deletes and overwrites what it wrote before: only in a
    // directory it made (its marker file) or one that is empty or absent.
    let marker = a.dir.join(".strata-demo");
    if a.dir.exists() && !marker.exists() {
        let mut entries =
            std::fs::read_dir(&a.dir).with_context(|| format!("reading {}", a.dir.display()))?;
        if let Some(e) = entries.next() {
            let e = e.with_context(|| format!("reading {}", a.dir.display()))?;
            bail!(
                "{} already holds {} (and was not made by strata demo, which would \
                 overwrite it): choose another --dir, or remove it yourself",
                a.dir.display(),
                e.file_name().to_string_lossy()
            );
        }
    }
    std::fs::create_dir_all(&a.dir).with_context(|| format!("creating {}", a.dir.display()))?;
    std::fs::write(
        &marker,
        "written by strata demo: it may delete db/ and overwrite its files here\n",
    )
    .with_context(|| format!("creating {}", marker.display()))?;
    let csv = a.dir.join("stock.csv");
    let schema_path = a.dir.join("schema.sql");
    let db_dir = a.dir.join("db");
    if db_dir.exists() {
        // The demo's own database from an earlier run: start afresh.
        std::fs::remove_dir_all(&db_dir)
            .with_context(|| format!("removing the earlier demo database {}", db_dir.display()))?;
    }

    outln!("== 1. Generate the TPC-C stock table")?;
    let start = Instant::now();
    let f = std::fs::File::create(&csv).with_context(|| format!("creating {}", csv.display()))?;
    let mut w = BufWriter::new(f);
    let rows = tpcc::write_stock(&mut w, a.warehouses, a.random, 1)
        .with_context(|| format!("writing {}", csv.display()))?;
    std::io::Write::flush(&mut w)?;
    drop(w);
    let size = std::fs::metadata(&csv)?.len();
    outln!(
        "   {rows} rows, {:.1} MB of CSV in {} ({} order), {:.1} s",
        size as f64 / 1e6,
        csv.display(),
        if a.random { "random" } else { "primary-key" },
        start.elapsed().as_secs_f64()
    )?;
    std::fs::write(&schema_path, tpcc::SCHEMA)?;
    outln!("   schema: {}", schema_path.display())?;
    for l in tpcc::SCHEMA
        .lines()
        .filter(|l| l.contains("PRIMARY KEY") || l.contains("INDEX"))
    {
        outln!("     {}", l.trim())?;
    }

    outln!("== 2. Import it: parse on all cores, sort per index, write SSTs, one atomic ingest")?;
    outln!(
        "   (the same as: strata import {} {} --schema {} --table stock --memory {})",
        db_dir.display(),
        csv.display(),
        schema_path.display(),
        a.memory
    )?;
    let schema = Schema::parse(tpcc::SCHEMA)?;
    let Some(table) = schema.table("stock") else {
        bail!("the TPC-C schema has no stock table");
    };
    let db = open::or_create(&db_dir, Options::default())?;
    let opts = ImportOptions {
        memory,
        ..ImportOptions::default()
    };
    let start = Instant::now();
    let summary = strata_import::import(&db, table, &[Input::File(csv.clone())], &opts)?;
    let elapsed = start.elapsed();
    let levels: Vec<usize> = db.metrics().levels.iter().map(|l| l.files).collect();
    import_cmd::print_summary(&summary, elapsed, &levels, None)?;

    outln!("== 3. Read rows back")?;
    let t = TableReader::open(&db, "stock")?;
    let key = vec!["1".to_string(), "42".to_string()];
    match t.get(&key)? {
        Some(row) => outln!(
            "   by primary key (s_w_id=1, s_i_id=42):\n     {}",
            t.format_row(&row, &strata_import::csv::dialect::Dialect::csv())
        )?,
        None => bail!("row (1, 42) is missing after the import"),
    }
    let Some(ix) = t.codec.table.index_by_name("stock_i_id") else {
        bail!("the stock table has no index stock_i_id");
    };
    outln!("   by the index on s_i_id (s_i_id = 7, every warehouse, at most 3):")?;
    let want = vec!["7".to_string()];
    let mut lines = Vec::new();
    let n = t.scan(ix, &want, &want, Some(3), |row| {
        let line = t.format_row(&row, &strata_import::csv::dialect::Dialect::csv());
        lines.push(line.chars().take(70).collect::<String>());
        Ok(())
    })?;
    for short in lines {
        outln!("     {short}...")?;
    }
    if n == 0 {
        bail!("the index on s_i_id found no row for s_i_id = 7");
    }
    let start = Instant::now();
    let count = t.count()?;
    outln!(
        "   count: {count} rows (a full scan of the primary index, {:.2} s)",
        start.elapsed().as_secs_f64()
    )?;
    if count != rows {
        bail!("imported {rows} rows but the table holds {count}");
    }

    outln!("== 4. The tree")?;
    let m = db.metrics();
    for (l, lv) in m.levels.iter().enumerate() {
        if lv.files > 0 {
            outln!(
                "   L{l}: {} files, {:.1} MB",
                lv.files,
                lv.bytes as f64 / 1e6
            )?;
        }
    }
    outln!(
        "   flushes {}, compactions {}, ingestions {}: the data was written once, into the bottom level",
        m.flushes, m.compactions, m.ingests
    )?;
    db.close()?;
    outln!(
        "   try: strata scan {} stock --index stock_i_id --from 7 --to 7 --limit 5",
        db_dir.display()
    )?;
    Ok(())
}
