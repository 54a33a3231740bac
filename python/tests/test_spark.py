"""The Spark path (``strata.spark``) against ``import_csv``: the same CSV
through both gives identical tables, duplicates fail the job naming both
rows, and a task that dies half-way and is retried leaves exactly one copy
of every row. Runs PySpark in local mode with 2 executor threads."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import strata

pyspark = pytest.importorskip("pyspark", reason="PySpark is not installed (test.sh installs it)")
from strata import spark as sspark  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATAGEN = ROOT.parent / "shared" / "datagen" / "tpcc_stock.py"

# The TPC-C stock table of `strata demo` (one copy in the repository).
STOCK = (ROOT / "crates" / "strata-cli" / "src" / "tpcc_stock.sql").read_text()

MIXED = """CREATE TABLE people (
    id BIGINT PRIMARY KEY,
    name TEXT,
    balance DECIMAL(12,3),
    born DATE,
    seen TIMESTAMP,
    email VARCHAR(40) UNIQUE
);
CREATE INDEX people_name ON people (name, born);
"""


@pytest.fixture(scope="module")
def session():
    from pyspark.sql import SparkSession

    # The executors' Python is this one (it has strata installed).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # local[2,4]: two executor threads, and a failed task is retried (up
    # to 4 attempts), as on a cluster.
    s = (
        SparkSession.builder.master("local[2,4]")
        .appName("strata-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def all_pairs(path):
    with strata.DB(str(path), read_only=True) as db:
        return list(db.items())


def mixed_csv(path, n=3000, dup=False):
    import random

    rng = random.Random(11)
    names = ["ámbar", "Zoë", "李小龍", "plain", "with,comma", 'quo"te', "new\nline"]
    lines = ["id,name,balance,born,seen,email"]
    ids = list(range(n))
    rng.shuffle(ids)
    for i in ids:
        name = "\\N" if rng.random() < 0.1 else rng.choice(names) + str(rng.randrange(30))
        if name != "\\N" and any(c in name for c in ',"\n'):
            name = '"' + name.replace('"', '""') + '"'
        bal = "\\N" if rng.random() < 0.1 else f"{rng.randrange(-10**6, 10**6)}.{rng.randrange(1000):03d}"
        born = "\\N" if rng.random() < 0.1 else f"{rng.randrange(1900, 2030):04d}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
        seen = "\\N" if rng.random() < 0.2 else f"2026-0{rng.randrange(1, 10)}-1{rng.randrange(10)} 1{rng.randrange(10)}:3{rng.randrange(10)}:0{rng.randrange(10)}"
        email = "\\N" if rng.random() < 0.2 else f"user{i}@example.org"
        lines.append(f"{i * 13 - 5000},{name},{bal},{born},{seen},{email}")
    if dup:
        # The same primary key as the first row, far away in the file.
        first = lines[1].split(",", 1)[0]
        lines.append(f"{first},dupe,1.000,2000-01-01,\\N,\\N")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def import_both(tmp_path, session, schema, table, csv, null=None, partitions=3, header=True, **kw):
    """``header=None``: neither call is told (both default to no header)."""
    a = tmp_path / "imported"
    with strata.DB(str(a)) as db:
        opts = {"null": null} if null is not None else {}
        db.import_csv([str(csv)], schema=schema, table=table, header=header, **opts)
    bundle = tmp_path / "bundle"
    if header is not None:
        kw["header"] = header
    m = sspark.build_table(
        [str(csv)], schema=schema, table=table, out=str(bundle), spark=session,
        partitions=partitions, null=null, **kw,
    )
    b = tmp_path / "bundled"
    with strata.DB(str(b)) as db:
        s = db.ingest_table(str(bundle))
    return a, b, m, s


def test_tpcc_stock_spark_equals_import_csv(tmp_path, session):
    if not DATAGEN.exists():
        pytest.skip(f"{DATAGEN} is missing (the shared inputs beside the repository)")
    csv = tmp_path / "stock.csv"
    with open(csv, "wb") as f:
        subprocess.run([sys.executable, str(DATAGEN), "--warehouses", "1", "--order", "random", "--header"],
                       stdout=f, check=True)
    # The generator's header names the columns as the schema does.
    a, b, m, s = import_both(tmp_path, session, STOCK, "stock", csv, partitions=4)
    assert m["rows"] == 100_000
    assert s["rows"] == 100_000
    assert {f["index"] for f in m["files"]} == {"primary", "stock_i_id"}
    assert len(m["files"]) >= 4, m["files"]
    # Into an empty database every file lands in the bottom level.
    assert all(level == 6 for level in s["levels"]), s["levels"]
    assert all_pairs(a) == all_pairs(b)
    assert not (tmp_path / "bundle" / "_attempts").exists()


def test_nulls_decimals_dates_unicode_spark_equals_import_csv(tmp_path, session):
    csv = tmp_path / "people.csv"
    mixed_csv(csv)
    a, b, m, _ = import_both(tmp_path, session, MIXED, "people", csv, null="\\N")
    assert m["rows"] == 3000
    pa, pb = all_pairs(a), all_pairs(b)
    assert len(pa) == 3000 * 3 + 1  # three indexes and the catalog entry
    assert pa == pb


def test_quoted_empty_is_text_and_unquoted_empty_is_null(tmp_path, session):
    """Under the default NULL marker both paths read ``""`` as the empty
    string and an unquoted empty field as NULL (Spark gives them as "" and
    None, which ``_values`` keeps apart)."""
    csv = tmp_path / "q.csv"
    csv.write_text('id,a,b\n1,,x\n2,"",y\n3,"",\n4,z,""\n', encoding="utf-8")
    schema = "CREATE TABLE q (id INT PRIMARY KEY, a TEXT, b TEXT);"
    a, b, m, _ = import_both(tmp_path, session, schema, "q", csv, partitions=1)
    assert m["rows"] == 4
    assert all_pairs(a) == all_pairs(b)
    with strata.DB(str(a), read_only=True) as db:
        t = db.table("q")
        assert [t.get(i) for i in range(1, 5)] == [
            (1, None, "x"), (2, "", "y"), (3, "", None), (4, "z", ""),
        ]


def test_duplicate_primary_key_names_both_rows(tmp_path, session):
    csv = tmp_path / "people.csv"
    mixed_csv(csv, n=500, dup=True)
    with pytest.raises(sspark.BundleError) as e:
        sspark.build_table([str(csv)], schema=MIXED, table="people", out=str(tmp_path / "b"),
                           spark=session, partitions=2, null="\\N", header=True)
    msg = str(e.value)
    assert "duplicate key" in msg and "index primary" in msg, msg
    assert msg.count("people.csv") == 2 and "dupe" in msg, msg
    assert not (tmp_path / "b" / sspark.MANIFEST_NAME).exists()


def test_retried_task_leaves_one_copy_of_every_row(tmp_path, session):
    csv = tmp_path / "people.csv"
    mixed_csv(csv, n=2000)
    sc = session.sparkContext
    sc.setJobGroup("strata-retry", "a task dies once")
    try:
        _, b, m, _ = import_both(tmp_path, session, MIXED, "people", csv, null="\\N",
                                 _fail_partition=1)
    finally:
        sc.setJobGroup("", "")
    # The failure did happen (and Spark retried the task).
    tracker = sc.statusTracker()
    failed = 0
    for job in tracker.getJobIdsForGroup("strata-retry"):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else []:
            st = tracker.getStageInfo(stage)
            failed += st.numFailedTasks if st else 0
    assert failed >= 1, "no task failed: the injected failure did not happen"
    assert m["rows"] == 2000
    bundle = tmp_path / "bundle"
    names = sorted(p.name for p in bundle.iterdir())
    assert names == sorted([f["name"] for f in m["files"]] + [sspark.MANIFEST_NAME]), names
    with strata.DB(str(b), read_only=True) as db:
        assert db.table("people").count() == 2000


def headerless(csv):
    """``csv`` without its header line."""
    lines = csv.read_text(encoding="utf-8").split("\n", 1)
    csv.write_text(lines[1], encoding="utf-8")


def test_command_line(tmp_path):
    """The README's example: a CSV file without a header (as `strata demo`
    writes stock.csv) and no header option. The default was a header, so
    the first row was taken for column names and the job failed."""
    csv = tmp_path / "people.csv"
    mixed_csv(csv, n=200)
    headerless(csv)
    schema = tmp_path / "s.sql"
    schema.write_text(MIXED)
    out = tmp_path / "bundle"
    r = subprocess.run(
        [sys.executable, "-m", "strata.spark", "--schema", str(schema), "--table", "people",
         "--out", str(out), "--master", "local[2]", "--partitions", "2", "--null", "\\N", str(csv)],
        capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "200 rows" in r.stdout
    with strata.DB(str(tmp_path / "db")) as db:
        db.ingest_table(str(out))
        assert db.table("people").count() == 200
    with strata.DB(str(tmp_path / "imported")) as db:
        db.import_csv([str(csv)], schema=MIXED, table="people", null="\\N")
    assert all_pairs(tmp_path / "db") == all_pairs(tmp_path / "imported")


def test_header_options():
    """No header unless told, as `strata import`; `--no-header` (the old
    way to say so) still parses."""
    parse = sspark._parser().parse_args
    base = ["--schema", "s.sql", "--table", "t", "--out", "o", "in.csv"]
    assert parse(base).header is False
    assert parse(base + ["--header"]).header is True
    assert parse(base + ["--no-header"]).header is False
    with pytest.raises(SystemExit):
        parse(base + ["--header", "--no-header"])
    import inspect

    assert inspect.signature(sspark.build_table).parameters["header"].default is False


def test_build_table_reads_no_header_by_default(tmp_path, session):
    csv = tmp_path / "people.csv"
    mixed_csv(csv, n=300)
    headerless(csv)
    a, b, m, _ = import_both(tmp_path, session, MIXED, "people", csv, null="\\N", header=None)
    assert m["rows"] == 300
    assert all_pairs(a) == all_pairs(b)


def test_parquet_with_typed_columns_equals_import_csv(tmp_path, session):
    """Parquet input: typed columns (BIGINT, DECIMAL, DATE, TIMESTAMP,
    text), each value handed to the encoder as Spark gives it."""
    from pyspark.sql import functions as F

    csv = tmp_path / "people.csv"
    mixed_csv(csv, n=1500)
    session.conf.set("spark.sql.session.timeZone", "UTC")
    df = (
        session.read.option("header", True).option("multiLine", True)
        .option("escape", '"').option("nullValue", "\\N").csv(str(csv))
        .select(
            F.col("id").cast("bigint").alias("id"),
            "name",
            F.col("balance").cast("decimal(12,3)").alias("balance"),
            F.col("born").cast("date").alias("born"),
            F.col("seen").cast("timestamp").alias("seen"),
            "email",
        )
    )
    pq = tmp_path / "people.parquet"
    df.write.parquet(str(pq))
    a = tmp_path / "imported"
    with strata.DB(str(a)) as db:
        db.import_csv([str(csv)], schema=MIXED, table="people", header=True, null="\\N")
    bundle = tmp_path / "bundle"
    m = sspark.build_table([str(pq)], schema=MIXED, table="people", out=str(bundle),
                           spark=session, partitions=2)
    assert m["rows"] == 1500
    b = tmp_path / "bundled"
    with strata.DB(str(b)) as db:
        db.ingest_table(str(bundle))
    assert all_pairs(a) == all_pairs(b)
