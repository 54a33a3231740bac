#!/usr/bin/env python3
"""Strata's Python bindings beside rocksdict (current RocksDB), in one run.

    target/pyenv/venv/bin/python python/bench.py [--keys 1000000] [--warehouses 10]
        [--dir /tmp/strata-pybench] [--skip-import] [--skip-kv]

Needs the package built in release mode (`python/run_tests.sh` or
`pip install ./python`) and rocksdict. Three measurements, each engine with
its WAL on and no sync, Snappy tables, 64 MiB memtables:

1. puts: `--keys` keys (16-byte keys, 100-byte values, shuffled order) in
   write batches of 1,000; keys/s, then flush.
2. scan: a full forward scan of those keys (`items()`), keys/s, the best of
   three scans (after a flush and compactions).
3. import (W1, docs/benchmarks.md): the TPC-C stock table of `--warehouses`
   warehouses (/work/shared/datagen/tpcc_stock.py) with `db.import_csv`,
   against rocksdict storing the same table. The comparison the target is
   set against (`rocksdict_same_kvs_s`): a plain Python program reads the
   CSV (`csv.reader`), encodes each row with the package's public encoder
   (`strata.TableEncoder`, the import's own code: the primary entry with
   the row and the secondary index entry), sorts each index's entries,
   writes one SST per index with rocksdict's SstFileWriter and ingests
   them (moved in). Afterwards both stores are read back and compared
   entry by entry (count and SHA-256 of every key and value; the run
   stops if they differ), so both sides store exactly the same KVs.
   Two lower bounds for rocksdict are reported beside it, neither of them
   the same work: `rocksdict_sst_ingest_s` writes and ingests the KVs
   already encoded and sorted (read out of the Strata store; no CSV
   reading or encoding timed), and `rocksdict_raw_line_s` is the fastest
   plain Python pipeline that splits only the two key fields and stores
   the raw CSV line as the value (not Strata's row encoding, so not the
   same KVs).

Prints one JSON object and a table of ratios (Strata / rocksdict
throughput; for the import, Strata time / rocksdict time).
"""

import argparse
import csv
import hashlib
import itertools
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import time
from operator import itemgetter
from pathlib import Path

import rocksdict

import strata

# The TPC-C stock table of `strata demo` and the benchmark drivers (one copy
# in the repository).
ROOT = Path(__file__).resolve().parents[1]
STOCK_SCHEMA = (ROOT / "crates" / "strata-cli" / "src" / "tpcc_stock.sql").read_text()
# The shared deterministic generator, beside the repository (`../shared`).
DATAGEN = ROOT.parent / "shared" / "datagen" / "tpcc_stock.py"

MEMTABLE = 64 << 20


def rocks_options():
    o = rocksdict.Options(raw_mode=True)
    o.create_if_missing(True)
    o.set_write_buffer_size(MEMTABLE)
    o.set_max_background_jobs(os.cpu_count() or 2)
    o.set_compression_type(rocksdict.DBCompressionType.snappy())
    return o


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    return path


def keys_values(n, seed=7):
    ids = list(range(n))
    random.Random(seed).shuffle(ids)
    rnd = random.Random(seed + 1)
    value = bytes(rnd.randrange(256) for _ in range(100))
    return [(b"key%013d" % i, value) for i in ids]


def best_scan(db, n, runs=3):
    """The fastest of `runs` full scans (`items()`, every pair consumed)."""
    best = None
    for _ in range(runs):
        t = time.perf_counter()
        count = 0
        for _k, _v in db.items():
            count += 1
        d = time.perf_counter() - t
        assert count == n, count
        best = d if best is None else min(best, d)
    return best


def bench_puts_scan(base, n):
    kv = keys_values(n)
    out = {}
    # Strata
    db = strata.DB(fresh(base / "strata-kv"), memtable_size=MEMTABLE)
    t = time.perf_counter()
    for i in range(0, n, 1000):
        b = strata.WriteBatch()
        for k, v in kv[i : i + 1000]:
            b.put(k, v)
        db.write(b)
    out["strata_put_s"] = time.perf_counter() - t
    db.flush()
    db.wait_for_compactions()
    out["strata_scan_s"] = best_scan(db, n)
    db.close()
    # rocksdict
    rd = rocksdict.Rdict(str(fresh(base / "rocks-kv")), rocks_options())
    t = time.perf_counter()
    for i in range(0, n, 1000):
        b = rocksdict.WriteBatch(raw_mode=True)
        for k, v in kv[i : i + 1000]:
            b.put(k, v)
        rd.write(b)
    out["rocksdict_put_s"] = time.perf_counter() - t
    rd.flush()
    rd.compact_range(None, None)
    out["rocksdict_scan_s"] = best_scan(rd, n)
    rd.close()
    return out


def enc(v):
    return struct.pack(">Q", (v & 0xFFFFFFFFFFFFFFFF) ^ 0x8000000000000000)


def rocks_ingest(path, ssts):
    """Ingests `ssts` into a new rocksdict database at `path`, moving the
    files in (they were written for it; copying them would time a copy)."""
    rd = rocksdict.Rdict(str(path), rocks_options())
    o = rocksdict.IngestExternalFileOptions()
    o.set_move_files(True)
    rd.ingest_external_file([str(p) for p in ssts], o)
    rd.close()


def rocks_raw_line_pipeline(path, csv_path):
    """A lower bound, not the same KVs: as fast as plain Python goes, parse the
    CSV as bytes, encode kv-spec v1 keys (/work/shared/workloads/README.md)
    for the primary key and the secondary index, sort each index on its own
    (the input's order leaves few runs to merge), write one SST per index
    (the primary keys all sort before the index's), ingest both (moved).
    The value of a primary entry is the raw CSV line (not Strata's row
    encoding); index entries are empty."""
    pk, ix = [], []
    with open(csv_path, "rb") as f:
        for line in f:
            line = line.rstrip(b"\n")
            i, w, _ = line.split(b",", 2)
            i_id, w_id = enc(int(i)), enc(int(w))
            pk.append((b"\x81\x01" + w_id + i_id, line))
            ix.append(b"\x81\x02" + i_id + w_id)
    pk.sort(key=itemgetter(0))
    ix.sort()
    ssts = [path / "pk.sst", path / "ix.sst"]
    w = rocksdict.SstFileWriter(rocks_options())
    w.open(str(ssts[0]))
    for k, v in pk:
        w[k] = v
    w.finish()
    w = rocksdict.SstFileWriter(rocks_options())
    w.open(str(ssts[1]))
    for k in ix:
        w[k] = b""
    w.finish()
    rocks_ingest(path / "db", ssts)
    return len(pk) + len(ix)


def rocks_same_kvs(path, csv_path, table_id, phases):
    """What a rocksdict user writes to store exactly what `import_csv`
    stores: read the CSV with the csv module, encode every row with
    `strata.TableEncoder` (primary entry and secondary index entry, the
    import's own encoding, so the keys and values are Strata's), sort each
    index's entries, write one SST per index (an index's keys all sort
    after the previous index's) and ingest them (moved). SstFileWriter
    refuses keys that are not strictly ascending, so a duplicate key fails
    the run as the import would. Fills `phases` with the seconds of each
    step."""
    t = time.perf_counter()
    enc = strata.TableEncoder(STOCK_SCHEMA, "stock", table_id)
    per_index = [[] for _ in enc.index_names]
    adds = [p.append for p in per_index]
    entries = enc.entries
    with open(csv_path, newline="") as f:
        for row in csv.reader(f):
            for ix, k, v in entries(row):
                adds[ix]((k, v))
    phases["read_encode"] = time.perf_counter() - t
    t = time.perf_counter()
    for kvs in per_index:
        kvs.sort(key=itemgetter(0))
    phases["sort"] = time.perf_counter() - t
    t = time.perf_counter()
    ssts = []
    for ix, kvs in enumerate(per_index):
        sst = path / f"ix{ix}.sst"
        w = rocksdict.SstFileWriter(rocks_options())
        w.open(str(sst))
        for k, v in kvs:
            w[k] = v
        w.finish()
        ssts.append(sst)
    phases["sst_write"] = time.perf_counter() - t
    n = sum(len(p) for p in per_index)
    del per_index, adds
    t = time.perf_counter()
    rocks_ingest(path / "db", ssts)
    phases["ingest"] = time.perf_counter() - t
    return n


def same_kvs(strata_path, rocks_path):
    """Reads every table entry of the Strata store (keys from 0x01; the
    0x00 system keys hold the catalog) and every entry of the rocksdict
    store side by side; raises at the first difference. Returns the count
    and a SHA-256 of all keys and values (length-prefixed)."""
    h = hashlib.sha256()
    n = 0
    with strata.DB(strata_path, read_only=True) as db:
        rd = rocksdict.Rdict(str(rocks_path), rocks_options())
        try:
            pairs = itertools.zip_longest(db.items(start=b"\x01"), rd.items())
            for a, b in pairs:
                if a != b:
                    raise SystemExit(f"the stores differ at entry {n}: strata {a!r}, rocksdict {b!r}")
                k, v = a
                h.update(struct.pack("<II", len(k), len(v)))
                h.update(k)
                h.update(v)
                n += 1
        finally:
            rd.close()
    return n, h.hexdigest()


def bench_import(base, warehouses):
    out = {}
    csv_path = base / f"stock-w{warehouses}.csv"
    if not csv_path.exists():
        with open(csv_path, "wb") as f:
            subprocess.run([sys.executable, str(DATAGEN), "-w", str(warehouses)], stdout=f, check=True)
    out["csv_bytes"] = csv_path.stat().st_size
    strata_path = fresh(base / "strata-w1")
    db = strata.DB(strata_path)
    t = time.perf_counter()
    s = db.import_csv([csv_path], schema=STOCK_SCHEMA, table="stock")
    out["strata_import_s"] = time.perf_counter() - t
    out["strata_rows"] = s["rows"]
    out["strata_import_phases_s"] = {
        k: round(s[k + "_seconds"], 3) for k in ("read_parse", "merge_write", "ingest")
    }
    table_id = db.table("stock").table_id
    # Lower bound 1: the KVs as Strata stored them (table keys start at
    # 0x01; the catalog key below them is Strata's own), already encoded
    # and sorted.
    kvs = list(db.items(start=b"\x01"))
    db.close()
    out["kvs"] = len(kvs)
    path = fresh(base / "rocks-w1")
    path.mkdir(parents=True)
    t = time.perf_counter()
    w = rocksdict.SstFileWriter(rocks_options())
    w.open(str(path / "w1.sst"))
    for k, v in kvs:
        w[k] = v
    w.finish()
    rocks_ingest(path / "db", [path / "w1.sst"])
    out["rocksdict_sst_ingest_s"] = time.perf_counter() - t
    del kvs
    shutil.rmtree(path, ignore_errors=True)
    # The comparison: the same KVs from the CSV, with the public encoder.
    path = fresh(base / "rocks-w1-same")
    path.mkdir(parents=True)
    t = time.perf_counter()
    phases = {}
    n = rocks_same_kvs(path, csv_path, table_id, phases)
    out["rocksdict_same_kvs_s"] = time.perf_counter() - t
    out["rocksdict_same_kvs_phases_s"] = {k: round(v, 3) for k, v in phases.items()}
    out["rocksdict_same_kvs"] = n
    count, digest = same_kvs(strata_path, path / "db")
    if count != out["kvs"] or n != count:
        raise SystemExit(f"entry counts differ: strata {out['kvs']}, rocksdict wrote {n}, compared {count}")
    out["identical_kvs"] = {"count": count, "sha256": digest}
    shutil.rmtree(path, ignore_errors=True)
    # Lower bound 2: raw CSV lines as values (not the same KVs).
    path = fresh(base / "rocks-w1-raw-line")
    path.mkdir(parents=True)
    t = time.perf_counter()
    n = rocks_raw_line_pipeline(path, csv_path)
    out["rocksdict_raw_line_s"] = time.perf_counter() - t
    out["rocksdict_raw_line_kvs"] = n
    shutil.rmtree(path, ignore_errors=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--warehouses", type=int, default=10)
    ap.add_argument("--dir", default="/tmp/strata-pybench")
    ap.add_argument("--skip-import", action="store_true")
    ap.add_argument("--skip-kv", action="store_true", help="only the import (W1)")
    a = ap.parse_args()
    base = Path(a.dir)
    base.mkdir(parents=True, exist_ok=True)
    r = {"keys": a.keys, "warehouses": a.warehouses, "cpus": os.cpu_count()}
    if not a.skip_kv:
        r.update(bench_puts_scan(base, a.keys))
    if not a.skip_import:
        r.update(bench_import(base, a.warehouses))
    print(json.dumps(r, indent=1))
    n = a.keys
    if not a.skip_kv:
        print(f"\nbatched puts: strata {n / r['strata_put_s']:,.0f} keys/s, "
              f"rocksdict {n / r['rocksdict_put_s']:,.0f} keys/s, "
              f"ratio {r['rocksdict_put_s'] / r['strata_put_s']:.2f}x")
        print(f"full scan:    strata {n / r['strata_scan_s']:,.0f} keys/s, "
              f"rocksdict {n / r['rocksdict_scan_s']:,.0f} keys/s, "
              f"ratio {r['rocksdict_scan_s'] / r['strata_scan_s']:.2f}x")
    if not a.skip_import:
        si = r["strata_import_s"]
        print(f"import W1:    strata import_csv {si:.2f} s ({r['kvs']:,} KVs); time ratios strata/rocksdict:")
        print(f"  rocksdict, same KVs (csv + strata.TableEncoder + sort + SST + ingest) "
              f"{r['rocksdict_same_kvs_s']:.2f} s: {si / r['rocksdict_same_kvs_s']:.2f}x "
              f"(identical: {r['identical_kvs']['count']:,} KVs, sha256 {r['identical_kvs']['sha256'][:16]})")
        print(f"  lower bound, pre-encoded sorted KVs (SST + ingest only) "
              f"{r['rocksdict_sst_ingest_s']:.2f} s: {si / r['rocksdict_sst_ingest_s']:.2f}x")
        print(f"  lower bound, raw CSV line values (not the same KVs) "
              f"{r['rocksdict_raw_line_s']:.2f} s: {si / r['rocksdict_raw_line_s']:.2f}x")

if __name__ == "__main__":
    main()
