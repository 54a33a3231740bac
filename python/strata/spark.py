"""Build a table's SST files with Apache Spark; ingest them in one step.

When the input outgrows one machine, Spark's executors do the import's
work: every row is encoded with Strata's own encoder (the same Rust code as
``strata import``, through these bindings, so keys are byte-identical), the
entries of each index are range-partitioned by key (boundaries chosen from a
sample, as HBase's TotalOrderPartitioner does), sorted within each
partition, checked for duplicate primary or unique keys (range partitioning
puts equal keys in one partition, next to each other), and written as one
SST per partition. The result is a *bundle*: a directory of SSTs and
``strata-bundle.json`` (file names, index, entry counts, sizes, SHA-256 and
key ranges), which :meth:`strata.DB.ingest_table` (or ``strata ingest-table
DB DIR``) checks and ingests with the table's catalog entry in one atomic
ingestion; into an empty database every file lands in the bottom level.

Retries and speculative execution: a task writes to a name unique to its
attempt (``_attempts/<index>-<partition>-<attempt>.sst``); only the driver,
once the job has succeeded, renames the one attempt Spark reported per
partition to its final name, deletes every other attempt's file, and then
writes the manifest (by rename, last). A killed or retried task can leave
files in ``_attempts/`` but never in the bundle.

Command line (``--master local[N]`` by default, so it runs on one
machine with PySpark from PyPI and the machine's Java; it also works under
``spark-submit``)::

    python -m strata.spark --schema S.sql --table T --out DIR \\
        [--master local[2]] [--partitions N] [--table-id N] \\
        [--format csv|parquet] [--delimiter ,] [--tsv] [--quote '"'] \\
        [--null '\\N'] [--header] INPUT...

As ``strata import``, CSV input has no header unless ``--header`` (or
``header=True``) says its first record is one; here the header's names
map the columns (``strata import --header match``).
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

import strata

MANIFEST_NAME = "strata-bundle.json"
FORMAT = "strata-table-bundle"
VERSION = 1
ATTEMPTS = "_attempts"
_DUP_MARK = "STRATA-DUPLICATE-KEY"


class BundleError(Exception):
    """The Spark job could not produce a bundle (a duplicate key, a bad
    row, an output directory in the way)."""


def _schema_text(schema: str) -> str:
    p = Path(schema)
    if "\n" not in schema and not schema.lstrip().upper().startswith("CREATE") and p.exists():
        return p.read_text()
    return schema


def _values(row: Any, n: int, null: Optional[str]) -> list:
    """The first ``n`` values of ``row`` (selected in table column order).
    For CSV text (``null`` not None) the fields are normalised as ``strata
    import`` reads them. Spark's reader (``nullValue`` a byte no text
    holds, ``emptyValue`` "") gives an unquoted empty field as None and a
    quoted one (``""``) as "": None is NULL under the empty marker and the
    empty text under any other, "" is always the empty text, and a field
    equal to a non-empty marker is NULL. Spark does not say whether that
    field was quoted, so a quoted ``"\\N"`` is NULL here where ``strata
    import`` reads it as text (the one difference, in docs/python.md)."""
    vals = list(row[:n])
    if null is None or null == "":
        return vals
    return [None if v == null else ("" if v is None else v) for v in vals]


def _encode_partition(schema: str, table: str, table_id: int, columns: Sequence[str], null: Optional[str]):
    """Returns a function mapping an iterator of Spark rows to
    ``((index, key), value)`` entries, one per row and index."""

    n = len(columns)

    def run(rows: Iterable[Any]) -> Iterator[Any]:
        enc = strata.TableEncoder(schema, table, table_id)
        for row in rows:
            for ix, k, v in enc.entries(_values(row, n, null)):
                yield ((ix, k), v)

    return run


def _boundaries(sample: list[tuple[int, bytes]], n_indexes: int, parts: int) -> list[list[bytes]]:
    """Per index, up to ``parts - 1`` split keys from a sample of its keys
    (quantiles), so partitions get similar numbers of entries."""
    per: list[list[bytes]] = [[] for _ in range(n_indexes)]
    for ix, k in sample:
        per[ix].append(k)
    out = []
    for keys in per:
        keys.sort()
        bounds: list[bytes] = []
        if keys and parts > 1:
            for i in range(1, parts):
                b = keys[(i * len(keys)) // parts]
                if not bounds or b > bounds[-1]:
                    bounds.append(b)
        out.append(bounds)
    return out


def _write_partition(out: str, index_names: list[str], fail_partition: Optional[int]):
    """Returns the function a task runs on one sorted partition: check
    duplicates, write the attempt's SST, describe it."""

    def run(pid: int, it: Iterator[Any]) -> Iterator[dict]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        attempt = ctx.attemptNumber() if ctx else 0
        task_attempt = ctx.taskAttemptId() if ctx else 0
        it = iter(it)
        first = next(it, None)
        if first is None:
            return
        ix = first[0][0]
        name = f"{index_names[ix]}-part-{pid:05d}"
        tmp = Path(out) / ATTEMPTS / f"{name}-attempt-{task_attempt}.sst"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        n = 0
        smallest = first[0][1]
        last = None
        with strata.SstWriter(str(tmp)) as w:
            for (i, k), v in _chain(first, it):
                if last is not None and k == last:
                    raise BundleError(f"{_DUP_MARK} {i} {k.hex()}")
                w.put(k, v)
                last = k
                n += 1
                if fail_partition == pid and attempt == 0 and n == 10:
                    # Test hook: the first attempt of this partition dies
                    # half-way, leaving a partial file behind.
                    raise RuntimeError("injected task failure (_fail_partition)")
        h = hashlib.sha256()
        with open(tmp, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        yield {
            "partition": pid,
            "attempt": tmp.name,
            "name": name + ".sst",
            "index": index_names[ix],
            "entries": n,
            "size": tmp.stat().st_size,
            "sha256": h.hexdigest(),
            "smallest": smallest.hex(),
            "largest": last.hex(),
        }

    return run


def _chain(first, it):
    yield first
    yield from it


def build_table(
    data: Any,
    *,
    schema: str,
    table: str,
    out: str,
    table_id: int = 1,
    partitions: Optional[int] = None,
    spark: Any = None,
    delimiter: str = ",",
    quote: str = '"',
    null: Optional[str] = None,
    header: bool = False,
    sample_fraction: Optional[float] = None,
    format: Optional[str] = None,
    _fail_partition: Optional[int] = None,
) -> dict:
    """Builds the bundle of table ``table`` (defined in ``schema``: DDL
    text or a path) in directory ``out`` from ``data``: a Spark DataFrame
    (columns named as the table's) or paths: CSV (read with the dialect
    given, every field as text, as ``strata import`` reads them; the
    columns in the table's order, or, with ``header=True``, a first record
    naming them, in any order, as ``strata import --header match``) or
    Parquet (``format="parquet"``, the default when every path ends in
    ``.parquet``).
    ``partitions``: partitions per index (default: Spark's default
    parallelism). ``sample_fraction``: the fraction of the entries sampled
    to choose the partitions' key boundaries (default: enough for about
    2,000 keys per partition of each index, at most all of them). ``table_id`` must be free in the database the bundle will
    be ingested into (1 for an empty one). Returns the manifest (a dict).
    ``_fail_partition`` (tests): the first attempt of that partition's
    task dies after writing part of its file."""
    from pyspark.sql import DataFrame, SparkSession

    schema = _schema_text(schema)
    spark = spark or SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    enc = strata.TableEncoder(schema, table, table_id)
    columns = enc.input_columns
    index_names = enc.index_names
    parts = partitions or max(sc.defaultParallelism, 1)

    if isinstance(data, DataFrame):
        df = data
        text_null = None
    else:
        paths = [data] if isinstance(data, (str, os.PathLike)) else list(data)
        if format is None:
            parquet = all(str(p).rstrip("/").endswith(".parquet") for p in paths)
            format = "parquet" if parquet else "csv"
        if format not in ("csv", "parquet"):
            raise BundleError(f"format {format!r}: use 'csv' or 'parquet'")
    if isinstance(data, DataFrame):
        pass
    elif format == "parquet":
        # Typed columns: each value is given to the encoder as it is (its
        # text form is parsed with the column's type), NULL as NULL.
        df = spark.read.parquet(*[str(p) for p in paths])
        text_null = None
    else:
        reader = spark.read.option("header", header).option("sep", delimiter)
        reader = reader.option("quote", quote).option("escape", quote)
        reader = reader.option("multiLine", True).option("mode", "FAILFAST")
        # Every field as text; `_values` applies the NULL marker (the
        # unquoted empty field by default, as in `strata import`'s CSV
        # dialect: Spark gives it as None, a quoted "" as "").
        text_null = "" if null is None else null
        reader = reader.option("nullValue", "\u0000")
        reader = reader.option("emptyValue", "")
        if header:
            df = reader.csv([str(p) for p in paths], inferSchema=False)
        else:
            from pyspark.sql.types import StringType, StructField, StructType

            st = StructType([StructField(c, StringType()) for c in columns])
            df = reader.schema(st).csv([str(p) for p in paths])
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise BundleError(f"input lacks column(s) {', '.join(missing)} of table {table}")
    # Rows in table column order: the encoder takes them by position.
    df = df.select(*columns)

    outp = Path(out)
    if outp.exists() and any(outp.iterdir()):
        raise BundleError(f"{out}: the output directory is not empty")
    outp.mkdir(parents=True, exist_ok=True)

    entries = df.rdd.mapPartitions(_encode_partition(schema, table, table_id, columns, text_null))
    entries = entries.persist()
    total = entries.count()
    frac = sample_fraction or min(1.0, 2000.0 * parts * len(index_names) / max(total, 1))
    sample = entries.keys().sample(False, frac, seed=7).collect() if total else []
    bounds = _boundaries(sample, len(index_names), parts)
    base = []
    acc = 0
    for b in bounds:
        base.append(acc)
        acc += len(b) + 1
    n_parts = max(acc, 1)
    bb = sc.broadcast((bounds, base))

    def part_of(key) -> int:
        bounds, base = bb.value
        ix, k = key
        return base[ix] + bisect.bisect_right(bounds[ix], k)

    sorted_rdd = entries.repartitionAndSortWithinPartitions(
        numPartitions=n_parts, partitionFunc=part_of
    )
    try:
        files = sorted_rdd.mapPartitionsWithIndex(
            _write_partition(str(outp), index_names, _fail_partition)
        ).collect()
    except Exception as e:  # Py4JJavaError wraps the task's exception
        msg = str(e)
        at = msg.find(_DUP_MARK)
        if at < 0:
            raise
        ix_s, key_hex = msg[at + len(_DUP_MARK) :].split()[:2]
        raise _duplicate(df, schema, table, table_id, columns, text_null, int(ix_s), bytes.fromhex(key_hex)) from None
    finally:
        entries.unpersist()

    # Commit: each partition's reported attempt becomes its final name;
    # every other attempt's file (failed, killed, speculative) goes.
    attempts = outp / ATTEMPTS
    manifest_files = []
    for f in sorted(files, key=lambda f: f["partition"]):
        os.replace(attempts / f["attempt"], outp / f["name"])
        manifest_files.append({k: f[k] for k in ("name", "index", "entries", "size", "sha256", "smallest", "largest")})
    if attempts.exists():
        shutil.rmtree(attempts)
    rows = sum(f["entries"] for f in manifest_files if f["index"] == index_names[0])
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "table": table,
        "table_id": table_id,
        "schema": schema,
        "rows": rows,
        "files": manifest_files,
    }
    tmp = outp / (MANIFEST_NAME + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(manifest, fh, indent=2)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, outp / MANIFEST_NAME)
    return manifest


def _duplicate(df, schema, table, table_id, columns, null, ix, key) -> BundleError:
    """Finds the rows whose entry in index ``ix`` is ``key`` (a second pass
    over the input, only on failure) and names them."""
    from pyspark.sql.functions import input_file_name

    def find(rows):
        enc = strata.TableEncoder(schema, table, table_id)
        for row in rows:
            values = _values(row, len(columns), null)
            for i, k, _ in enc.entries(values):
                if i == ix and k == key:
                    yield (row["__file"], tuple(values))

    hits = df.withColumn("__file", input_file_name()).rdd.mapPartitions(find).take(2)
    enc = strata.TableEncoder(schema, table, table_id)
    desc = enc.describe_key(ix, key)
    rows = "; ".join(f"{f or '<dataframe>'}: {v}" for f, v in hits)
    return BundleError(
        f"duplicate key {desc} in index {enc.index_names[ix]} of table {table}: rows {rows}"
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m strata.spark", description=__doc__.split("\n")[0])
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="CSV/TSV or Parquet files or directories")
    p.add_argument("--schema", required=True, help="SQL DDL file")
    p.add_argument("--table", required=True)
    p.add_argument("--out", required=True, help="bundle directory to create")
    p.add_argument("--master", default=None, help="Spark master (default local[2]; ignored under spark-submit)")
    p.add_argument("--partitions", type=int, default=None, help="partitions (files) per index")
    p.add_argument("--table-id", type=int, default=1)
    p.add_argument("--format", choices=["csv", "parquet"], default=None,
                   help="input format (default: parquet when every INPUT ends in .parquet)")
    p.add_argument("--delimiter", default=",")
    p.add_argument("--tsv", action="store_true", help="tab-delimited CSV (quoted fields; not the backslash escapes of strata import --format tsv)")
    p.add_argument("--quote", default='"')
    p.add_argument("--null", default=None, help="the text of a NULL field (e.g. \\N)")
    h = p.add_mutually_exclusive_group()
    h.add_argument("--header", dest="header", action="store_true",
                   help="the first record of each CSV file names the columns (default: no header, as strata import)")
    h.add_argument("--no-header", dest="header", action="store_false",
                   help="no header record (the default; kept for scripts that say so)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = _parser().parse_args(argv)
    from pyspark.sql import SparkSession

    # In local mode the executors' Python is this one, which has strata
    # installed; on a cluster, PYSPARK_PYTHON names the executors' own.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = SparkSession.builder.appName("strata-bundle")
    if a.master or "SPARK_MASTER" not in os.environ and not os.environ.get("SPARK_ENV_LOADED"):
        b = b.master(a.master or "local[2]")
    spark = b.getOrCreate()
    try:
        m = build_table(
            a.inputs,
            schema=a.schema,
            table=a.table,
            out=a.out,
            table_id=a.table_id,
            partitions=a.partitions,
            spark=spark,
            delimiter="\t" if a.tsv else a.delimiter,
            quote=a.quote,
            null=a.null,
            header=a.header,
            format=a.format,
        )
    except BundleError as e:
        print(f"strata.spark: {e}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    print(f"{a.out}: table {m['table']}, {m['rows']} rows, {len(m['files'])} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
