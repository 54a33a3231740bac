"""Table.scan: a lazy iterator, checked against a model of the table (both
indexes, bounds, limits, both directions), partial iteration, the view it
reads, and closing (the scan's own close and the database's)."""

import itertools
import random

import pytest

import strata

SCHEMA = """
CREATE TABLE t (
    id INT PRIMARY KEY,
    grp INT NOT NULL,
    name VARCHAR(12)
);
CREATE INDEX t_grp ON t (grp);
"""

N = 3000  # more rows than several read-ahead chunks (16, 32, ... 512)


def rows(ids, seed=7):
    rng = random.Random(seed)
    return [(i, rng.randrange(40), None if i % 11 == 0 else f"n{i}") for i in ids]


def load(db, tmp_path, data, name="t.csv"):
    csv = tmp_path / name
    csv.write_text("".join(f"{i},{g},{'' if n is None else n}\n" for i, g, n in data))
    db.import_csv([csv], schema=SCHEMA, table="t", null="")
    return db.table("t")


def model_scan(data, index, start, end, reverse, limit):
    """What scan(index=, start=, end=, reverse=, limit=) must return."""
    if index is None:
        key = lambda r: (r[0],)  # noqa: E731
    else:
        key = lambda r: (r[1], r[0])  # noqa: E731
    out = [r for r in sorted(data, key=key)
           if (start is None or key(r)[0] >= start) and (end is None or key(r)[0] <= end)]
    if reverse:
        out.reverse()
    return out if limit is None else out[:limit]


def test_scan_matches_model(db, tmp_path):
    ids = random.Random(1).sample(range(100_000), N)
    data = rows(ids)
    t = load(db, tmp_path, data)
    s = t.scan()
    assert isinstance(s, strata.TableScan) and not isinstance(s, list)
    rng = random.Random(2)
    for _ in range(60):
        index = rng.choice([None, "t_grp", 1])
        hi = 100_000 if index is None else 40
        start = rng.choice([None, rng.randrange(hi)])
        end = rng.choice([None, rng.randrange(hi)])
        reverse = rng.random() < 0.5
        limit = rng.choice([None, None, 0, 1, 17, rng.randrange(2 * N)])
        want = model_scan(data, None if index is None else 1, start, end, reverse, limit)
        got = t.scan(index=index, start=start, end=end, limit=limit, reverse=reverse)
        # Partial iteration first, then the rest of the same scan.
        k = rng.randrange(len(want) + 2)
        head = list(itertools.islice(got, k))
        assert head == want[:k], (index, start, end, reverse, limit, k)
        assert head + list(got) == want, (index, start, end, reverse, limit, k)
        assert list(got) == []  # exhausted stays exhausted
    d = next(t.scan(index="t_grp", reverse=True, as_dict=True))
    top = model_scan(data, 1, None, None, True, 1)[0]
    assert d == dict(zip(["id", "grp", "name"], top))


def test_scan_reads_the_table_as_it_was(db, tmp_path):
    data = rows(range(0, 2 * N, 2))
    t = load(db, tmp_path, data)
    by_pk = t.scan()
    by_grp = t.scan(index="t_grp")
    assert next(by_pk) == data[0]
    first = next(by_grp)
    # Rows added and a row removed after the scans began are not seen by
    # them; a new scan sees them.
    more = rows(range(1, 2 * N, 2), seed=8)
    load(db, tmp_path, more, name="more.csv")
    victim = model_scan(data, 1, None, None, False, None)[-1]
    db.delete(strata.encode_key(SCHEMA, "t", victim, table_id=t.table_id))
    assert [first] + list(by_grp) == model_scan(data, 1, None, None, False, None)
    assert [data[0]] + list(by_pk) == data
    now = sorted(data + more)
    now.remove(victim)
    assert list(t.scan()) == now
    # The index entry of the removed row is left, naming nothing: a scan
    # of the index made now says so instead of inventing a row.
    with pytest.raises(strata.StrataError, match="names a row that does not exist"):
        list(t.scan(index="t_grp", start=victim[1]))


def test_scan_close(db_path, tmp_path):
    db = strata.DB(db_path)
    t = load(db, tmp_path, rows(range(N)))
    s = t.scan()
    assert [r[0] for r in itertools.islice(s, 20)] == list(range(20))
    s.close()
    assert list(s) == []
    s.close()  # idempotent
    live = t.scan(index="t_grp", reverse=True)
    next(live)
    unstarted = t.scan(start=5)
    done = t.scan(limit=3)
    assert len(list(done)) == 3
    db.close()
    for x in (live, unstarted):
        with pytest.raises(strata.DatabaseClosedError):
            next(x)
    with pytest.raises(strata.DatabaseClosedError):
        t.scan()
    # The directory is free although the scans are still alive.
    with strata.DB(db_path) as again:
        assert again.table("t").count() == N
    del live, unstarted, done


def test_scan_bad_arguments(db, tmp_path):
    t = load(db, tmp_path, rows(range(10)))
    with pytest.raises(strata.InvalidArgumentError, match="no index t_nope"):
        t.scan(index="t_nope")
    with pytest.raises(strata.InvalidArgumentError, match="column id"):
        t.scan(start="not a number")
    with pytest.raises(strata.InvalidArgumentError, match="1 columns, 2 values"):
        t.scan(start=(1, 2))
