"""The Spark path beside `import_csv`, same input, same run.

Generates the TPC-C stock table (W warehouses, random order, from
../shared/datagen), then, in turn: `db.import_csv` (Strata's own pipeline,
all cores of this machine), and `strata.spark.build_table` with
`local[1]` and `local[2]` followed by `db.ingest_table`. Prints one JSON
line per run (rows/s of the build, the ingest call's time, the checks'
time, the write amplification after the ingest) and a Markdown table.

    python python/bench_spark.py --warehouses 2 [--rounds 1]

Needs the package (python/run_tests.sh builds it into target/pyenv/venv)
and PySpark with Java.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import strata
from strata import spark as sspark

ROOT = Path(__file__).resolve().parents[1]
DATAGEN = ROOT.parent / "shared" / "datagen" / "tpcc_stock.py"
SCHEMA = (ROOT / "crates" / "strata-cli" / "src" / "tpcc_stock.sql").read_text()


def wa(db) -> float:
    m = db.metrics()
    ingested = max(m["bytes_ingested"], 1)
    return (m["bytes_ingested"] + m["bytes_flushed"] + m["bytes_compacted_written"]) / ingested


def run_import(csv: Path, work: Path, rows: int) -> dict:
    d = work / "import-db"
    t = time.perf_counter()
    with strata.DB(str(d)) as db:
        s = db.import_csv([str(csv)], schema=SCHEMA, table="stock", header=True)
        total = time.perf_counter() - t
        out = {"path": "import_csv", "rows": rows, "seconds": total, "rows_per_s": rows / total,
               "ingest_ms": s["ingest_seconds"] * 1e3,
               # The import's own figure counts its spill runs too.
               # (None when no file was ingested.)
               "write_amplification": max(wa(db), s["write_amplification"] or 0.0)}
    shutil.rmtree(d)
    return out


def run_spark(csv: Path, work: Path, rows: int, master: str, partitions: int) -> dict:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(master).appName("strata-bench")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    bundle = work / f"bundle-{master}"
    try:
        t = time.perf_counter()
        sspark.build_table([str(csv)], schema=SCHEMA, table="stock", out=str(bundle),
                           spark=spark, partitions=partitions, header=True)
        build = time.perf_counter() - t
    finally:
        spark.stop()
    d = work / "spark-db"
    with strata.DB(str(d)) as db:
        s = db.ingest_table(str(bundle))
        out = {"path": f"spark {master}", "rows": rows, "seconds": build, "rows_per_s": rows / build,
               "ingest_ms": s["ingest_seconds"] * 1e3, "verify_s": s["verify_seconds"],
               "levels": sorted(set(s["levels"]), key=str), "write_amplification": wa(db)}
    shutil.rmtree(d)
    shutil.rmtree(bundle)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warehouses", type=int, default=1)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--partitions", type=int, default=4)
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="strata-bench-spark-"))
    try:
        csv = work / "stock.csv"
        with open(csv, "wb") as f:
            subprocess.run([sys.executable, str(DATAGEN), "--warehouses", str(a.warehouses),
                            "--order", "random", "--header"], stdout=f, check=True)
        rows = a.warehouses * 100_000
        results = []
        for _ in range(a.rounds):
            for run in (lambda: run_import(csv, work, rows),
                        lambda: run_spark(csv, work, rows, "local[1]", a.partitions),
                        lambda: run_spark(csv, work, rows, "local[2]", a.partitions)):
                r = run()
                print(json.dumps(r), flush=True)
                results.append(r)
        base = {r["path"]: r for r in results}.get("import_csv")
        print("\n| path | rows/s | vs import_csv | ingest call | checks | WA |")
        print("|---|---|---|---|---|---|")
        for r in results:
            ratio = r["rows_per_s"] / base["rows_per_s"] if base else float("nan")
            ing = f"{r['ingest_ms']:.1f} ms" if r.get("ingest_ms") is not None else "-"
            ver = f"{r['verify_s']:.2f} s" if "verify_s" in r else "-"
            print(f"| {r['path']} | {r['rows_per_s']:,.0f} | {ratio:.2f}x | {ing} | {ver} | {r['write_amplification']:.2f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
