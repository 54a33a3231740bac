"""The DB class: mapping idioms, writes, batches, iterators against a model,
snapshots, closing, metrics and errors."""

import errno
import random
import threading
import time

import pytest

import strata


def test_mapping_idioms(db):
    db[b"a"] = b"1"
    db["b"] = "2"  # str is stored as UTF-8
    db.put(b"c", bytearray(b"3"))
    assert db[b"a"] == b"1"
    assert db[b"b"] == b"2"
    assert db.get(b"c") == b"3"
    assert db.get(b"zz") is None
    assert db.get(b"zz", b"dflt") == b"dflt"
    assert b"a" in db and b"zz" not in db
    with pytest.raises(KeyError):
        db[b"zz"]
    del db[b"a"]
    assert b"a" not in db
    with pytest.raises(KeyError):
        del db[b"a"]
    db.delete(b"never-there")  # no error, like RocksDB
    assert list(db) == [b"b", b"c"]


def test_type_errors(db):
    with pytest.raises(TypeError):
        db[1] = b"x"
    with pytest.raises(TypeError):
        db.get(None)
    with pytest.raises(TypeError):
        db[(104, 105)] = b"x"  # a tuple of ints is not bytes
    db[memoryview(b"mv")] = bytearray(b"ba")
    assert db[b"mv"] == b"ba"
    with pytest.raises(TypeError):
        strata.DB(db.path / "other", no_such_option=1)


def test_delete_range_and_batch(db):
    for i in range(100):
        db[b"k%03d" % i] = b"v%d" % i
    db.delete_range(b"k010", b"k090")
    with pytest.raises(strata.InvalidArgumentError):
        db.delete_range(b"k090", b"k010")
    # The class's earlier name is the same class, so old handlers still catch.
    assert strata.InvalidArgument is strata.InvalidArgumentError
    assert issubclass(strata.InvalidArgumentError, strata.StrataError)
    with pytest.raises(strata.InvalidArgument):
        db.delete_range(b"k090", b"k010")
    assert len(list(db.keys())) == 20
    b = strata.WriteBatch()
    b.put(b"x", b"1")
    b[b"y"] = b"2"
    b.delete(b"k000")
    b.delete_range(b"k090", b"k095")
    assert len(b) == 4
    db.write(b, sync=True)
    assert db[b"x"] == b"1" and db[b"y"] == b"2"
    assert b"k000" not in db and b"k094" not in db and b"k095" in db
    # The batch is not consumed: clear and reuse.
    assert len(b) == 4
    b.clear()
    assert len(b) == 0
    b.put(b"z", b"3")
    db.write(b)
    assert db[b"z"] == b"3"


def _model_range(model, start, end, reverse):
    keys = sorted(k for k in model if (start is None or k >= start) and (end is None or k < end))
    if reverse:
        keys.reverse()
    return [(k, model[k]) for k in keys]


@pytest.mark.parametrize("seed", range(4))
def test_iterators_against_model(db_path, seed):
    """Random puts, deletes, range deletes, flushes and reopens; after each
    step, random bounded scans in both directions equal the model's."""
    rng = random.Random(seed)
    model = {}
    db = strata.DB(db_path, memtable_size=64 << 10)
    keyspace = [b"key%04d" % i for i in range(400)]
    for step in range(60):
        for _ in range(rng.randrange(1, 80)):
            r = rng.random()
            k = rng.choice(keyspace)
            if r < 0.7:
                v = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
                db[k] = v
                model[k] = v
            elif r < 0.9:
                db.delete(k)
                model.pop(k, None)
            else:
                e = rng.choice(keyspace)
                lo, hi = min(k, e), max(k, e)
                db.delete_range(lo, hi)
                for x in [x for x in model if lo <= x < hi]:
                    del model[x]
        if rng.random() < 0.2:
            db.flush()
        if rng.random() < 0.1:
            db.close()
            db = strata.DB(db_path, memtable_size=64 << 10)
        for _ in range(3):
            start = rng.choice([None] + keyspace)
            end = rng.choice([None] + keyspace)
            reverse = rng.random() < 0.5
            want = _model_range(model, start, end, reverse)
            assert list(db.items(start=start, end=end, reverse=reverse)) == want
            assert list(db.keys(start=start, end=end, reverse=reverse)) == [k for k, _ in want]
            assert list(db.values(start=start, end=end, reverse=reverse)) == [v for _, v in want]
        k = rng.choice(keyspace)
        assert db.get(k) == model.get(k)
    db.close()


def test_long_scan_crosses_chunks(db):
    """More entries than one read-ahead chunk, both directions, partial
    consumption."""
    b = strata.WriteBatch()
    n = 5000
    for i in range(n):
        b.put(b"%06d" % i, b"v" * (i % 7))
    db.write(b)
    assert [k for k in db.keys()] == [b"%06d" % i for i in range(n)]
    assert [k for k in db.keys(reverse=True)] == [b"%06d" % i for i in reversed(range(n))]
    it = db.items(start=b"001000")
    assert next(it) == (b"001000", b"v" * (1000 % 7))
    assert next(it)[0] == b"001001"


def test_iterator_view_is_fixed(db):
    db[b"a"] = b"1"
    it = db.keys()
    db[b"b"] = b"2"
    assert list(it) == [b"a"]


def test_snapshot_reads(db):
    db[b"k"] = b"old"
    db[b"gone"] = b"x"
    with db.snapshot() as snap:
        db[b"k"] = b"new"
        del db[b"gone"]
        db[b"added"] = b"y"
        db.compact_range()
        assert snap[b"k"] == b"old"
        assert snap.get(b"gone") == b"x"
        assert b"added" not in snap
        assert list(snap.keys()) == [b"gone", b"k"]
        assert list(snap.items(reverse=True)) == [(b"k", b"old"), (b"gone", b"x")]
        assert list(snap.values(start=b"h")) == [b"old"]
        assert snap.sequence < db.latest_sequence
    with pytest.raises(strata.DatabaseClosedError):
        snap.get(b"k")
    assert db[b"k"] == b"new"


def test_snapshot_isolation_under_concurrent_writes(db):
    """A writer thread keeps rewriting every key (each round one value for
    all keys); a snapshot taken mid-way must always show one round's
    values for every key, however often it is read."""
    keys = [b"acct%03d" % i for i in range(200)]
    b = strata.WriteBatch()
    for k in keys:
        b.put(k, b"0")
    db.write(b)
    # The writer stops after a bounded number of rounds: every round adds a
    # version per key that a snapshot iterator steps over.
    max_rounds = 150
    stop = threading.Event()
    rounds = [0]

    def writer():
        r = 0
        while not stop.is_set() and r < max_rounds:
            r += 1
            wb = strata.WriteBatch()
            for k in keys:
                wb.put(k, str(r).encode())
            db.write(wb)
            rounds[0] = r
            time.sleep(0.0005)  # lasts long enough for several snapshots

    t = threading.Thread(target=writer)
    t.start()
    try:
        seen_rounds = set()
        while t.is_alive() or len(seen_rounds) < 2:
            with db.snapshot() as snap:
                first = list(snap.values())
                assert len(first) == len(keys)
                assert len(set(first)) == 1, "a snapshot mixed two rounds"
                for _ in range(2):
                    assert list(snap.values(reverse=True)) == first
                    assert snap[keys[17]] == first[0]
                seen_rounds.add(first[0])
            if not t.is_alive():
                break
    finally:
        stop.set()
        t.join()
    assert rounds[0] > 0
    assert rounds[0] == max_rounds
    assert len(seen_rounds) > 1, "the writer thread never ran while snapshots were read"


def test_multi_get_against_get_and_a_model(db, tmp_path):
    """Random writes, range deletes, ingestions, flushes and compactions;
    every `multi_get` of a random key list (repeats, absent keys) equals
    the per-key `get`s and a dict, at the latest data and at a snapshot."""
    rng = random.Random(5)
    model = {}

    def key():
        return b"k%03d" % rng.randrange(200)

    snap, snap_model = None, None
    for step in range(600):
        op = rng.randrange(100)
        if op < 45:
            k, v = key(), b"v%d" % step
            db[k] = v
            model[k] = v
        elif op < 55:
            k = key()
            db.delete(k)
            model.pop(k, None)
        elif op < 60:
            a, b = sorted((key(), key()))
            db.delete_range(a, b)
            for k in [k for k in model if a <= k < b]:
                del model[k]
        elif op < 64:
            path = tmp_path / ("%d.sst" % step)
            kvs = {key(): b"i%d" % step for _ in range(rng.randrange(1, 30))}
            with strata.SstWriter(path) as w:
                for k in sorted(kvs):
                    w.put(k, kvs[k])
            db.ingest([path])
            model.update(kvs)
        elif op < 67:
            db.flush()
        elif op < 69:
            db.compact_range()
        elif op < 72:
            if snap is not None:
                snap.close()
            snap, snap_model = db.snapshot(), dict(model)
        else:
            keys = [key() for _ in range(rng.randrange(0, 40))]
            keys += [b"absent", b""] + keys[:3]
            rng.shuffle(keys)
            if snap is not None and rng.random() < 0.4:
                got = snap.multi_get(keys)
                assert got == [snap.get(k) for k in keys]
                assert got == [snap_model.get(k) for k in keys]
            else:
                # Any iterable of keys, str among them.
                got = db.multi_get(iter(keys + ["k001"]))
                assert got == [db.get(k) for k in keys + [b"k001"]]
                assert got == [model.get(k) for k in keys + [b"k001"]]
    if snap is not None:
        snap.close()
    assert db.multi_get([]) == []


def test_multi_get_refuses_a_single_key_and_closed_readers(db):
    db[b"ab"] = b"1"
    for single in (b"ab", "ab"):
        with pytest.raises(TypeError, match="iterable of keys"):
            db.multi_get(single)
    with pytest.raises(TypeError):
        db.multi_get([b"ab", 3])
    snap = db.snapshot()
    assert snap.multi_get([b"ab", b"x"]) == [b"1", None]
    snap.close()
    with pytest.raises(strata.DatabaseClosedError):
        snap.multi_get([b"ab"])
    db.close()
    with pytest.raises(strata.DatabaseClosedError):
        db.multi_get([b"ab"])


def test_multi_get_raises_on_a_damaged_block(db_path):
    """A key whose data block is damaged raises `CorruptionError`, as `get`
    does; keys elsewhere still read."""
    db = strata.DB(db_path, block_size=256)
    for i in range(2000):
        db[b"key%05d" % i] = b"value-%d" % i
    db.flush()
    db.close()
    (table,) = list(db_path.glob("*.sst"))
    data = bytearray(table.read_bytes())
    data[len(data) // 4] ^= 0x55  # inside a data block (they come first)
    table.write_bytes(bytes(data))
    with strata.DB(db_path) as db:
        bad = []
        for i in range(2000):
            k = b"key%05d" % i
            try:
                assert db.get(k) == b"value-%d" % i
            except strata.CorruptionError:
                bad.append(k)
        assert 0 < len(bad) < 100
        with pytest.raises(strata.CorruptionError) as e:
            db.multi_get([b"key00000", bad[0], b"key01999"])
        assert e.value.file.endswith(table.name)
        assert db.multi_get([b"key00000", b"key01999"]) == [b"value-0", b"value-1999"]


def test_multi_get_reads_one_view_under_a_concurrent_writer(db):
    """A writer thread sets `a` and `z` to the same counter in every batch;
    `multi_get([a, z])` never returns two different counters. The reader
    reads until it has seen 50 counters (or the writer's bounded rounds
    run out), so the two overlap however the threads are scheduled."""
    db.write(_pair(0))
    max_rounds = 200_000
    stop = threading.Event()
    rounds = [0]

    def writer():
        r = 0
        while not stop.is_set() and r < max_rounds:
            r += 1
            db.write(_pair(r))
            rounds[0] = r

    t = threading.Thread(target=writer)
    t.start()
    seen = set()
    try:
        while len(seen) < 50 and t.is_alive():
            a, z = db.multi_get([b"a", b"z"])
            assert a == z, "multi_get mixed two writes"
            seen.add(a)
    finally:
        stop.set()
        t.join()
    assert db.multi_get([b"z", b"a"]) == [b"%d" % rounds[0]] * 2
    assert len(seen) > 1, "the writer never ran while multi_get read"


def _pair(r):
    b = strata.WriteBatch()
    b.put(b"a", b"%d" % r)
    b.put(b"m%04d" % (r % 500), b"f" * 100)
    b.put(b"z", b"%d" % r)
    return b


def test_close_with_live_iterators_and_snapshots(db_path):
    db = strata.DB(db_path)
    for i in range(3000):
        db[b"%05d" % i] = b"v"
    it = db.items()
    assert next(it) == (b"00000", b"v")
    rev = db.keys(reverse=True)
    snap = db.snapshot()
    db.close()
    assert db.closed
    for x in (it, rev):
        with pytest.raises(strata.DatabaseClosedError):
            next(x)
    with pytest.raises(strata.DatabaseClosedError):
        snap.get(b"00001")
    with pytest.raises(strata.DatabaseClosedError):
        db[b"00001"]
    with pytest.raises(strata.DatabaseClosedError):
        db.keys()
    db.close()  # idempotent
    # The directory is released although `it` and `snap` are still alive.
    with strata.DB(db_path) as again:
        assert again[b"00001"] == b"v"
    del it, rev, snap


def test_busy_and_not_found(db, tmp_path):
    with pytest.raises(strata.BusyError):
        strata.DB(db.path)
    with pytest.raises(strata.NotFoundError):
        strata.DB(tmp_path / "missing", create_if_missing=False)
    assert not (tmp_path / "missing").exists()
    notdb = tmp_path / "plain"
    notdb.mkdir()
    (notdb / "file").write_text("x")
    with pytest.raises(strata.NotFoundError):
        strata.DB(notdb, create_if_missing=False)
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(tmp_path / "x", compression="brotli")
    for bad in (0, -1):
        with pytest.raises(strata.InvalidArgumentError, match="memtable_size must be positive"):
            strata.DB(tmp_path / "x", memtable_size=bad)
    assert issubclass(strata.CorruptionError, strata.StrataError)


def test_read_only(db_path):
    with strata.DB(db_path) as db:
        db[b"k"] = b"v"
    with strata.DB(db_path, read_only=True) as ro:
        assert ro[b"k"] == b"v"
        with pytest.raises(strata.NotSupportedError):
            ro[b"k2"] = b"v"


def test_context_manager_and_reopen(db_path):
    with strata.DB(db_path) as db:
        db.put(b"k", b"v", sync=True)
    assert db.closed
    with strata.DB(db_path) as db:
        assert db[b"k"] == b"v"


def test_sync_wal_makes_unsynced_writes_durable(db_path):
    db = strata.DB(db_path)
    for i in range(100):
        db.put(b"k%03d" % i, b"v")  # sync=False
    waits = lambda m: sum(w["count"] for w in m["write_waits"] if w["cause"] == "wal sync")
    before = waits(db.metrics())
    db.sync_wal()
    assert waits(db.metrics()) == before + 1
    db.close()
    with pytest.raises(strata.DatabaseClosedError):
        db.sync_wal()


def test_flush_compact_metrics(db):
    for i in range(1000):
        db[b"%04d" % i] = b"x" * 100
    m0 = db.metrics()
    assert m0["flushes"] == 0 and m0["memtable_bytes"] > 0
    db.flush()
    m = db.metrics()
    assert m["flushes"] == 1 and m["l0_files"] == 1
    assert len(m["levels"]) >= 2 and m["levels"][0]["files"] == 1
    assert m["last_sequence"] == db.latest_sequence == 1000
    db.compact_range(b"0000", b"9999")
    m = db.metrics()
    assert m["l0_files"] == 0
    assert sum(l["files"] for l in m["levels"]) >= 1
    # A read from the compaction's output misses, caches its block, then
    # hits (the block cache's counters as the engine keeps them).
    before = db.metrics()
    assert db[b"0500"] == b"x" * 100 and db[b"0500"] == b"x" * 100
    m = db.metrics()
    assert m["block_cache_misses"] == before["block_cache_misses"] + 1
    assert m["block_cache_inserts"] == before["block_cache_inserts"] + 1
    assert m["block_cache_hits"] == before["block_cache_hits"] + 1
    assert 0 < m["block_cache_usage"] <= m["block_cache_capacity"]
    assert list(db.keys())[:2] == [b"0000", b"0001"]


def test_prefix_extractor(tmp_path):
    # Files each holding one round's prefix and spanning "a" to "z" (as
    # many as the compactions leave): a range within one prefix reads only
    # the files whose prefix filter has it, with the same answer as
    # without the extractor.
    # Prefixes in no file (five, so a filter's false positive on one
    # cannot leave every file read).
    absent = [(b"p5%d:" % i, b"p5%d;" % i) for i in range(5)]
    with strata.DB(tmp_path / "db", prefix_extractor="fixed:4") as db:
        for n in range(20):
            for i in range(10):
                db[b"p%02d:%d" % (n, i)] = b"v"
            db[b"a"] = db[b"z"] = b""
            db.flush()
        assert list(db.keys(b"p07:", b"p07;")) == [b"p07:%d" % i for i in range(10)]
        assert all(list(db.keys(*a)) == [] for a in absent)
        m = db.metrics()
        assert m["prefix_filter_checks"] >= 2 and m["prefix_filter_skips"] >= 1
    with strata.DB(tmp_path / "db", prefix_extractor=None) as db:
        assert len(list(db.keys(b"p07:", b"p07;"))) == 10
        assert db.metrics()["prefix_filter_checks"] == 0
    # (Compactions there may have rewritten every file without a prefix
    # filter: a new file gets one again.)
    with strata.DB(tmp_path / "db", prefix_extractor="rocksdb.FixedPrefix.4") as db:
        db[b"a"] = db[b"p99:"] = db[b"z"] = b""
        db.flush()
        assert all(list(db.keys(*a, reverse=True)) == [] for a in absent)
        assert db.metrics()["prefix_filter_skips"] >= 1
    for bad in ("fixed", "fixed:x", "suffix:3", "rocksdb.Noop"):
        with pytest.raises(strata.InvalidArgumentError, match="prefix_extractor"):
            strata.DB(tmp_path / "other", prefix_extractor=bad)
    with strata.SstWriter(tmp_path / "f.sst", prefix_extractor="capped:2") as w:
        w.put(b"k", b"v")


def test_checkpoint(tmp_path):
    with strata.DB(tmp_path / "db") as db:
        for i in range(2000):
            db[b"%05d" % i] = b"v%d" % i
        info = db.checkpoint(tmp_path / "cp")
        db[b"after"] = b"1"
        assert info["sequence"] == 2000 and info["tables"] >= 1
        assert info["copied"] == 0 and info["bytes"] > 0
        with pytest.raises(strata.InvalidArgumentError, match="already exists"):
            db.checkpoint(tmp_path / "cp")
        with pytest.raises(strata.InvalidArgumentError, match="inside the database"):
            db.checkpoint(tmp_path / "db" / "cp")
        # The operating system's error reaches Python with its errno and
        # path (a file where a directory must be: ENOTDIR).
        (tmp_path / "file").write_text("x")
        with pytest.raises(strata.IoError, match="Not a directory") as e:
            db.checkpoint(tmp_path / "file" / "cp")
        assert e.value.errno == errno.ENOTDIR
        assert e.value.path == str(tmp_path / "file" / "cp")
    with strata.DB(tmp_path / "cp") as cp:
        assert len(list(cp.keys())) == 2000
        assert cp[b"01999"] == b"v1999" and b"after" not in cp


def test_metrics_report_write_waits(tmp_path):
    # Small memtables, so writes rotate them (and may wait doing so).
    with strata.DB(tmp_path / "w", memtable_size=64 << 10) as db:
        for i in range(20000):
            db[b"%06d" % i] = b"v" * 64
        m = db.metrics()
    waits = m["write_waits"]
    assert isinstance(waits, list)
    for w in waits:
        assert set(w) == {"cause", "count", "total_micros", "max_micros", "histogram"}
        assert w["count"] == sum(n for _, n in w["histogram"])
        assert w["max_micros"] <= w["total_micros"]
    longest = max((w["max_micros"] for w in waits), default=0)
    assert m["longest_write_wait_micros"] == longest
    if longest:
        assert m["longest_write_wait_cause"] in {w["cause"] for w in waits}
    else:
        assert m["longest_write_wait_cause"] == ""


def test_iterators_and_snapshots_keep_their_database_open(db_path):
    """An iterator or snapshot of a `DB` nobody holds still reads (it used
    to raise `DatabaseClosedError` once the `DB` was garbage-collected);
    the database closes when the last of them is gone."""
    import gc

    with strata.DB(db_path) as db:
        db[b"a"] = b"1"
        db[b"b"] = b"2"
    assert list(strata.DB(db_path).items()) == [(b"a", b"1"), (b"b", b"2")]
    gc.collect()
    it = strata.DB(db_path).keys()
    gc.collect()
    assert next(it) == b"a"
    # Still open through the iterator: a second open is refused as busy.
    with pytest.raises(strata.BusyError):
        strata.DB(db_path)
    del it
    gc.collect()
    snap = strata.DB(db_path).snapshot()
    gc.collect()
    assert snap.get(b"b") == b"2"
    del snap
    gc.collect()
    # The last holder gone, the directory is free.
    strata.DB(db_path).close()


def test_ingest_of_a_file_named_twice_or_a_directory_says_so(db, tmp_path):
    # One file named twice (here as p and sub/../p) is refused as named
    # twice, not as overlapping itself; a directory as a directory, with
    # no offset. Nothing is ingested either way.
    p = tmp_path / "a.sst"
    with strata.SstWriter(p) as w:
        w.put(b"a", b"1")
    (tmp_path / "sub").mkdir()
    for other in [p, tmp_path / "sub" / ".." / "a.sst"]:
        with pytest.raises(strata.InvalidArgumentError) as e:
            db.ingest([p, other])
        assert "is named twice in one ingestion" in str(e.value)
        assert "overlap" not in str(e.value)
    with pytest.raises(strata.InvalidArgumentError) as e:
        db.ingest([tmp_path])
    assert "is a directory, not an SST file" in str(e.value)
    assert "offset" not in str(e.value)
    assert list(db.keys()) == []
