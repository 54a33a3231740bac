"""The GIL is released during long operations: a lazy table scan, a
table count, a key-value scan, an import, an ingestion and a compaction
each let another Python thread run while the engine works.

How the tests can fail: `progress_while` raises the interpreter's switch
interval to 1,000 s for its duration, so the interpreter never takes the
GIL from the thread running the operation; a counting thread can then only
run when that thread lets go of the GIL itself. An operation that keeps
the GIL from start to end leaves the count exactly where it was, on any
machine under any load (no timing involved); one that releases it lets the
counter in as soon as the counter is scheduled during a release. The
operation is repeated (up to `TRIES` times) until the count moves, so a
loaded machine that keeps the counter off the CPU during one release does
not fail the test; every repetition of a GIL-holding operation counts 0.
"""

import sys
import threading
import time

import pytest

import strata

TRIES = 10


def progress_while(work, prepare=lambda: None):
    """How many times a counting thread counted while `work()` ran (0 if
    it never did in `TRIES` runs). `prepare()` runs before each `work()`,
    outside what is counted (it may release the GIL itself)."""
    ticks = [0]
    stop = [False]

    def counter():
        while not stop[0]:
            ticks[0] += 1
            # Lets go of the GIL (the interpreter will not take it from
            # this thread either), so `work` gets it back.
            time.sleep(0.0001)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    t = threading.Thread(target=counter, daemon=True)
    try:
        t.start()
        for _ in range(TRIES):
            prepare()
            before = ticks[0]
            work()
            moved = ticks[0] - before
            if moved:
                return moved
        return 0
    finally:
        stop[0] = True
        t.join()
        sys.setswitchinterval(old)


def schema(name="s"):
    return f"""
CREATE TABLE {name} (
    w INT NOT NULL,
    i INT NOT NULL,
    qty SMALLINT,
    data VARCHAR(50),
    PRIMARY KEY (w, i)
);
CREATE INDEX {name}_i ON {name} (i);
"""
ROWS = 60_000


def write_csv(path, rows=ROWS, w=1):
    path.write_text("".join(f"{w},{i},{i % 100},row-{i:08d}-{'x' * 20}\n" for i in range(rows)))
    return path


@pytest.fixture
def table(db, tmp_path):
    db.import_csv([write_csv(tmp_path / "s.csv")], schema=schema(), table="s")
    return db.table("s")


@pytest.mark.parametrize("index", [None, "s_i"])
def test_table_scan_releases_the_gil(table, index):
    """`Table.scan` (strata.TableScan) reads its chunks with the GIL
    released: the other thread counts while a scan is drained. The scan
    is made outside what is counted (making one releases the GIL too)."""
    scan = [None]

    def prepare():
        scan[0] = table.scan(index=index)

    def drain():
        n = 0
        for _ in scan[0]:
            n += 1
        assert n == ROWS

    assert progress_while(drain, prepare) > 0, "no other thread ran during any of the scans"


@pytest.mark.parametrize("index", [None, "s_i"])
def test_table_count_releases_the_gil(table, index):
    """`Table.count` reads every entry of an index with the GIL released."""

    def work():
        assert table.count(index) == ROWS

    assert progress_while(work) > 0


def test_key_value_scan_releases_the_gil(db):
    b = strata.WriteBatch()
    for i in range(200_000):
        b.put(b"%08d" % i, b"")
    db.write(b)
    it = [None]

    def prepare():
        it[0] = db.keys()

    def drain():
        assert sum(1 for _ in it[0]) == 200_000

    assert progress_while(drain, prepare) > 0


def test_import_releases_the_gil(db, tmp_path):
    csv = write_csv(tmp_path / "s.csv")
    names = iter(f"s{n}" for n in range(TRIES))

    def work():
        name = next(names)
        s = db.import_csv([csv], schema=schema(name), table=name)
        assert s["rows"] == ROWS

    assert progress_while(work) > 0


def test_ingest_releases_the_gil(db, tmp_path):
    paths = iter(tmp_path / f"{n}.sst" for n in range(TRIES))
    path = [None]

    def prepare():
        path[0] = next(paths)
        with strata.SstWriter(path[0]) as w:
            for i in range(100_000):
                w.put(b"%s-%08d" % (path[0].stem.encode(), i), b"v" * 50)

    def work():
        r = db.ingest([path[0]], move=True)
        assert not r["as_batch"]

    assert progress_while(work, prepare) > 0


def test_compaction_releases_the_gil(db):
    rounds = iter(range(TRIES))

    def prepare():
        r = next(rounds)
        for part in range(2):
            b = strata.WriteBatch()
            for i in range(part, 60_000, 2):
                b.put(b"%08d" % i, b"%d" % r * 40)
            db.write(b)
            db.flush()

    def work():
        db.compact_range()

    assert progress_while(work, prepare) > 0


def test_dropping_an_open_database_releases_the_gil(tmp_path):
    """A `DB` garbage-collected without `close()` is closed with the GIL
    released: the close joins the background threads and syncs the WAL."""
    dbs = iter(range(TRIES))
    holder = [None]

    def prepare():
        holder[0] = strata.DB(tmp_path / f"db{next(dbs)}")
        holder[0][b"k"] = b"v" * 1000

    def work():
        holder[0] = None  # the last reference: the DB is dropped here

    assert progress_while(work, prepare) > 0
