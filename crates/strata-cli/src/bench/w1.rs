//! `strata bench w1`: W1 (the TPC-C stock import) in one go, `strata
//! import` in every mode beside RocksDB 7.8's W1 ingest method.
//!
//! Thin on purpose: every run is one of `bench/`'s drivers (the
//! `import-*` variants of `bench/strata`, and `bench/rocksdb`'s `ingest-*`),
//! the same binaries and JSON lines `bench/run` uses, so the two never
//! measure differently. This command only makes sure the inputs and the
//! drivers exist, runs each case once, interleaved per input order
//! (RocksDB first, then each mode), and prints one table with the ratio of
//! each case's load+settle to RocksDB's from the same run. The pipeline
//! runs with the CLI's default budget (a quarter of RAM) and again with
//! `--memory 64MiB` (the driver's `spill64` variant), which shows the
//! spill path.

use super::{ensure_input, repo_root};
use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Args)]
pub struct W1Args {
    /// TPC-C warehouses (W1: 10, 100,000 rows each).
    #[arg(long, default_value_t = 10)]
    warehouses: u32,
    /// Input orders to run (`pk`, `random`, or both).
    #[arg(long, value_delimiter = ',', default_value = "pk,random")]
    orders: Vec<String>,
    /// Modes of `strata import` to run (`pipeline`, `spill64` (the
    /// pipeline under --memory 64MiB), `direct`, `batch`).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "pipeline,spill64,direct,batch"
    )]
    modes: Vec<String>,
    /// Rows per write batch of the batch mode (W1's batch method: 1,000).
    #[arg(long, default_value_t = 1000)]
    batch_rows: usize,
    /// Run without RocksDB (no ratios).
    #[arg(long)]
    no_rocksdb: bool,
    /// Also print every driver's JSON line.
    #[arg(long)]
    json: bool,
}

/// One finished case.
struct Row {
    order: String,
    /// Bytes of the CSV input.
    csv_bytes: f64,
    label: String,
    f: Value,
}

pub fn run(a: W1Args) -> Result<()> {
    // Arguments first, before minutes of building.
    if let Some(o) = a.orders.iter().find(|o| *o != "pk" && *o != "random") {
        bail!("--orders takes pk and random, not {o:?}");
    }
    let modes = ["pipeline", "spill64", "direct", "batch"];
    if let Some(m) = a.modes.iter().find(|m| !modes.contains(&m.as_str())) {
        bail!("--modes takes pipeline, spill64, direct and batch, not {m:?}");
    }
    let root = repo_root();
    let data = root.join("target/bench/data");
    let strata = build_strata(&root)?;
    let rocksdb = if a.no_rocksdb {
        None
    } else {
        Some(build_rocksdb(&root)?)
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!(
        "W1 · {} warehouses, {cores} cores, load average at start: {}",
        a.warehouses,
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut rows = Vec::new();
    for order in &a.orders {
        let input = data.join(format!("stock-w{}-{order}.csv", a.warehouses));
        let w = a.warehouses.to_string();
        ensure_input("tpcc_stock.py", &["-w", &w, "--order", order], &input)?;
        let mut cases: Vec<(&Path, String, String)> = Vec::new();
        if let Some(r) = &rocksdb {
            cases.push((r, format!("ingest-{order}"), "RocksDB ingest".into()));
        }
        for m in &a.modes {
            let label = match m.as_str() {
                "pipeline" => "import".to_string(),
                "spill64" => "import --memory 64MiB".to_string(),
                "direct" | "batch" => format!("import --mode {m}"),
                _ => bail!("--modes takes pipeline, spill64, direct and batch, not {m:?}"),
            };
            cases.push((&strata, format!("import-{m}-{order}"), label));
        }
        for (bin, variant, label) in cases {
            eprintln!("running {label} ({variant})");
            let f = run_driver(bin, &input, &data, &variant, a.batch_rows, a.json)?;
            rows.push(Row {
                order: order.clone(),
                csv_bytes: std::fs::metadata(&input).map_or(0.0, |m| m.len() as f64),
                label,
                f,
            });
        }
    }
    print_table(&rows, cores);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!(
        "load average at end: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}

/// `bench/strata`'s driver, built as `bench/run` builds it.
fn build_strata(root: &Path) -> Result<PathBuf> {
    eprintln!("building bench/strata (cargo build --release -p strata-bench)");
    let st = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "-q", "-p", "strata-bench"])
        .current_dir(root)
        .status()
        .context("running cargo")?;
    if !st.success() {
        bail!("building the Strata driver (bench/strata) failed");
    }
    Ok(root.join("target/release/strata-bench"))
}

/// `bench/rocksdb`'s driver (`build.sh`, needs g++ and librocksdb-dev),
/// built once into the path `bench/run` uses.
fn build_rocksdb(root: &Path) -> Result<PathBuf> {
    let out = root.join("target/bench/strata-bench-rocksdb");
    let src = root.join("bench/rocksdb");
    let newest_src = std::fs::read_dir(&src)
        .with_context(|| format!("reading {}", src.display()))?
        .filter_map(|e| e.ok()?.metadata().ok()?.modified().ok())
        .max();
    let built = out.metadata().and_then(|m| m.modified()).ok();
    if built.is_none() || newest_src > built {
        eprintln!("building bench/rocksdb (g++ against librocksdb-dev)");
        let st = Command::new("bash")
            .arg(src.join("build.sh"))
            .arg(&out)
            .status()
            .context("running bench/rocksdb/build.sh")?;
        if !st.success() {
            bail!("building the RocksDB driver failed (needs g++ and librocksdb-dev; or pass --no-rocksdb)");
        }
    }
    Ok(out)
}

/// Runs one driver case on a fresh database and returns its figures.
fn run_driver(
    bin: &Path,
    input: &Path,
    data: &Path,
    variant: &str,
    batch_rows: usize,
    echo: bool,
) -> Result<Value> {
    let db = data.join(format!("db-w1-cli-{variant}"));
    let scratch = PathBuf::from(format!("{}.ssts", db.display()));
    let clean = || {
        let _ = std::fs::remove_dir_all(&db);
        let _ = std::fs::remove_dir_all(&scratch);
    };
    clean();
    let out = Command::new(bin)
        .arg("w1")
        .arg(input)
        .arg(&db)
        .args([
            "--variant",
            variant,
            "--batch-rows",
            &batch_rows.to_string(),
        ])
        .output()
        .with_context(|| format!("running {}", bin.display()));
    clean();
    let out = out?;
    if !out.status.success() {
        bail!(
            "{} w1 --variant {variant} failed: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some(line) = stdout.lines().find(|l| l.starts_with('{')) else {
        bail!("{} printed no JSON line: {stdout}", bin.display());
    };
    if echo {
        println!("{line}");
    }
    let rec: Value = serde_json::from_str(line).context("the driver's JSON line")?;
    rec.get("figures")
        .cloned()
        .context("the driver's line has no figures")
}

fn num(f: &Value, k: &str) -> Option<f64> {
    f.get(k).and_then(Value::as_f64)
}

/// The table: per order, RocksDB's ingest method first, each mode after.
fn print_table(rows: &[Row], cores: usize) {
    println!(
        "| input | method | load s | settle s | load+settle s | x RocksDB | rows/s | CSV MB/s per core | write amp. | peak RSS | stall s | peak L0 files / sublevels | spilled |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let f = &r.f;
        let ls = num(f, "load_settle_s").unwrap_or(0.0);
        let base = rows
            .iter()
            .find(|b| b.order == r.order && b.label == "RocksDB ingest")
            .and_then(|b| num(&b.f, "load_settle_s"));
        let ratio = base.map_or(String::new(), |b| format!("{:.2}x", ls / b));
        let load = num(f, "load_s").unwrap_or(0.0);
        // Every method reads the whole CSV: its size over the load time.
        let mb_core = format!("{:.1}", r.csv_bytes / 1e6 / load / cores as f64);
        let rows_s = num(f, "rows").map_or(String::new(), |n| format!("{:.0}", n / load));
        let rss = num(f, "peak_rss_bytes").map_or(String::new(), |b| {
            let budget = num(f, "memory_budget_bytes").unwrap_or(0.0);
            if budget > 0.0 {
                format!("{:.0} MB ({:.2}x budget)", b / 1e6, b / budget)
            } else {
                format!("{:.0} MB", b / 1e6)
            }
        });
        let subl = num(f, "peak_l0_sublevels").map_or("-".to_string(), |v| format!("{v:.0}"));
        let spilled =
            num(f, "spilled_bytes").map_or(String::new(), |b| format!("{:.0} MB", b / 1e6));
        println!(
            "| {} | {} | {load:.2} | {:.2} | {ls:.2} | {ratio} | {rows_s} | {mb_core} | {:.2} | {rss} | {:.2} | {:.0} / {subl} | {spilled} |",
            r.order,
            r.label,
            num(f, "settle_s").unwrap_or(0.0),
            num(f, "write_amp").unwrap_or(0.0),
            num(f, "stall_s").unwrap_or(0.0),
            num(f, "peak_l0_files").unwrap_or(0.0),
        );
    }
}
