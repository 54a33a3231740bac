"""The table layer: import_csv, table reads, the encoders, and errors."""

import datetime
import decimal
import re

import pytest

import strata

SCHEMA = """
CREATE TABLE item (
    id INT PRIMARY KEY,
    name VARCHAR(20) NOT NULL,
    price DECIMAL(10,2),
    added DATE,
    seen TIMESTAMP,
    ok BOOL,
    blob BYTEA,
    ratio DOUBLE
);
CREATE INDEX item_name ON item (name);
"""

ROWS = [
    (1, "apple", "1.50", "2024-01-02", "2024-01-02 03:04:05", "true", "\\x00ff", "0.5"),
    (2, "pear", "", "2023-12-31", "2024-01-02 03:04:05.123456", "false", "", "-1e300"),
    (3, "fig", "99999999.99", "", "", "", "\\x41", "inf"),
    (10, "apple", "0.01", "1970-01-01", "1970-01-01 00:00:00", "t", "\\x", "0"),
]


def write_csv(path, rows, header=True):
    lines = []
    if header:
        lines.append("id,name,price,added,seen,ok,blob,ratio")
    for r in rows:
        lines.append(",".join(str(x) for x in r))
    path.write_text("\n".join(lines) + "\n")


def expected(r):
    def opt(s, f):
        return None if s == "" else f(s)

    return (
        r[0],
        r[1],
        opt(r[2], decimal.Decimal),
        opt(r[3], datetime.date.fromisoformat),
        opt(r[4], datetime.datetime.fromisoformat),
        opt(r[5], lambda s: s in ("true", "t")),
        opt(r[6], lambda s: bytes.fromhex(s[2:])),
        opt(r[7], float),
    )


def test_import_round_trip(db, tmp_path):
    csv = tmp_path / "items.csv"
    write_csv(csv, ROWS)
    schema = tmp_path / "s.sql"
    schema.write_text(SCHEMA)
    s = db.import_csv([csv], schema=schema, table="item", header=True)
    assert s["rows"] == 4 and s["created"] and s["table"] == "item"
    assert [i["name"] for i in s["indexes"]][1] == "item_name"
    assert db.tables() == ["item"]
    t = db.table("item")
    assert t.columns == ["id", "name", "price", "added", "seen", "ok", "blob", "ratio"]
    assert t.count() == 4 and len(t) == 4
    assert t.count("item_name") == 4
    for r in ROWS:
        assert t.get(r[0]) == expected(r)
        assert t.get(str(r[0])) == expected(r)  # text forms parse too
    assert t.get(4) is None
    d = t.get(1, as_dict=True)
    assert d["name"] == "apple" and d["price"] == decimal.Decimal("1.50")
    # Scans: primary key order, bounds, limit, secondary index.
    assert [r[0] for r in t.scan()] == [1, 2, 3, 10]
    assert [r[0] for r in t.scan(start=2, end=3)] == [2, 3]
    assert [r[0] for r in t.scan(limit=2)] == [1, 2]
    assert [r[1] for r in t.scan(index="item_name")] == ["apple", "apple", "fig", "pear"]
    assert [r[0] for r in t.scan(index="item_name", start="apple", end="apple")] == [1, 10]
    # bytes are a text column's UTF-8 text (and an INT's digits).
    assert [r[0] for r in t.scan(index="item_name", start=b"apple", end=b"apple")] == [1, 10]
    assert t.get(b"10") == expected(ROWS[3])
    with pytest.raises(strata.InvalidArgumentError, match="UTF-8"):
        t.get(b"\xff")
    # The entries are in the key space: the encoders reproduce them.
    k = strata.encode_key(SCHEMA, "item", expected(ROWS[0]), table_id=t.table_id)
    assert db[k] == strata.encode_row(SCHEMA, "item", expected(ROWS[0]))
    assert strata.decode_row(SCHEMA, "item", k, db[k]) == expected(ROWS[0])
    ik = strata.encode_key(SCHEMA, "item", list(expected(ROWS[3])), table_id=t.table_id, index="item_name")
    assert ik in db
    # Dicts work as rows too.
    row = dict(zip(t.columns, expected(ROWS[1])))
    assert strata.encode_key(SCHEMA, "item", row, table_id=t.table_id) in db


def test_import_schema_text_tsv_and_second_import(db, tmp_path):
    tsv = tmp_path / "a.tsv"
    tsv.write_text("5\tkiwi\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n")
    s = db.import_csv(str(tsv), schema=SCHEMA, table="item", format="tsv")
    assert s["rows"] == 1
    tsv2 = tmp_path / "b.tsv"
    tsv2.write_text("6\tlime\t2.00\t\\N\t\\N\t\\N\t\\N\t\\N\n")
    s = db.import_csv([tsv2], schema=SCHEMA, format="tsv")  # the only table
    assert s["rows"] == 1 and not s["created"]
    assert db.table("item").get(5) == (5, "kiwi", None, None, None, None, None, None)
    assert db.table("item").count() == 2


def test_import_errors_leave_nothing(db, tmp_path):
    bad = tmp_path / "bad.csv"
    write_csv(bad, ROWS[:2] + [(3, "x" * 30, "", "", "", "", "", "")], header=False)
    with pytest.raises(strata.BadRowError) as e:
        db.import_csv([bad], schema=SCHEMA, table="item")
    assert e.value.line == 3 and e.value.column == "name"
    assert db.tables() == [] and list(db.keys()) == []
    dup = tmp_path / "dup.csv"
    write_csv(dup, [ROWS[0], ROWS[0]], header=False)
    with pytest.raises(strata.DuplicateKeyError):
        db.import_csv([dup], schema=SCHEMA, table="item")
    s = db.import_csv([dup], schema=SCHEMA, table="item", on_duplicate="ignore")
    assert s["rows"] == 1 and s["duplicates_ignored"] == 1
    with pytest.raises(strata.InvalidArgumentError):
        db.import_csv([dup], schema=SCHEMA, table="item", on_duplicate="overwrite")
    with pytest.raises(strata.SchemaError):
        db.import_csv([dup], schema="CREATE TABLE (", table="item")
    with pytest.raises(strata.InvalidArgumentError):
        db.import_csv([dup], schema=SCHEMA, table="nope")
    with pytest.raises(strata.InvalidArgumentError):
        db.table("nope")
    with pytest.raises(strata.IoError):
        db.import_csv([tmp_path / "missing.csv"], schema=SCHEMA, table="item")
    with pytest.raises(strata.InvalidArgumentError):
        strata.encode_key(SCHEMA, "item", (1, "a"), table_id=1)
    with pytest.raises(strata.InvalidArgumentError):
        strata.encode_row(SCHEMA, "item", (1, None, None, None, None, None, None, None))


def test_schema_text_or_file(db, tmp_path, monkeypatch):
    """A str is a file only if it names one (or cannot be DDL: no white
    space, no parenthesis); other text is parsed as DDL, so text that is
    not DDL gets the parser's error with its place, not "No such file"."""
    csv = tmp_path / "items.csv"
    write_csv(csv, ROWS, header=False)
    bad = {
        "CRATE TABLE t (a INT)": "found: CRATE at Line: 1, Column: 1",
        "": "the schema is empty",
        "  -- only a comment\n": "the schema is empty",
        "CREATE TEMP TABLE t (a INT)": "line 1: `CREATE TEMP TABLE t (a INT)`: TEMPORARY (line 1, column 8) is not supported",
        "CREATE TABLE t (a INT);\nSET x = 1": "line 2: `SET x = 1`",
    }
    for text, says in bad.items():
        with pytest.raises(strata.SchemaError, match=re.escape(says)):
            db.import_csv([csv], schema=text)
        with pytest.raises(strata.SchemaError, match=re.escape(says)):
            strata.TableEncoder(text, None, 1)
        with pytest.raises(strata.SchemaError, match=re.escape(says)):
            strata.encode_row(text, None, ROWS[0])
    # A missing file is a missing file (as a str without white space, or a
    # path object); one that exists is read, whatever its name.
    for missing in ["missing.sql", str(tmp_path / "missing.sql"), tmp_path / "missing.sql"]:
        with pytest.raises(strata.IoError, match="No such file"):
            db.import_csv([csv], schema=missing)
    odd = tmp_path / "my schema (v2).sql"
    odd.write_text(SCHEMA)
    assert db.import_csv([csv], schema=str(odd), table="item")["rows"] == len(ROWS)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.sql").write_text(SCHEMA)
    assert strata.TableEncoder("s.sql", "item", 1).input_columns[0] == "id"
    # A file's DDL error names the file.
    broken = tmp_path / "broken.sql"
    broken.write_text("CREATE TABLE t (a INT);\nCREATE TABLE a ()")
    with pytest.raises(strata.SchemaError, match=re.escape(f"{broken}: line 2: `CREATE TABLE a ()`: table a (line 2, column 14) has no columns")):
        db.import_csv([csv], schema=broken)
    assert db.tables() == ["item"]


def test_import_rejects_file_must_not_exist(db, tmp_path):
    """rejects= names a file that must not exist (nor its .reasons): the
    import is refused before anything is read and the file is kept."""
    bad = tmp_path / "bad.csv"
    write_csv(bad, ROWS[:2] + [(3, "x" * 30, "", "", "", "", "", "")], header=False)
    keep = tmp_path / "keep.txt"
    keep.write_text("mine")
    with pytest.raises(strata.InvalidArgumentError, match="already exists"):
        db.import_csv([bad], schema=SCHEMA, table="item", max_bad_rows=1, rejects=keep)
    assert keep.read_text() == "mine"
    assert db.tables() == [] and list(db.keys()) == []
    new = tmp_path / "new.csv"
    s = db.import_csv([bad], schema=SCHEMA, table="item", max_bad_rows=1, rejects=new)
    assert s["rows"] == 2 and new.read_text().startswith("3,")


def test_table_closed(db_path, tmp_path):
    csv = tmp_path / "items.csv"
    write_csv(csv, ROWS, header=False)
    db = strata.DB(db_path)
    db.import_csv([csv], schema=SCHEMA, table="item")
    t = db.table("item")
    db.close()
    with pytest.raises(strata.DatabaseClosedError):
        t.get(1)


def test_dates_python_cannot_hold_come_back_as_text(db, tmp_path):
    # The import accepts year 0 (MySQL's zero date); Python's datetime
    # holds years 1 to 9999. Such a value comes back as its text, and the
    # rest of the row, and the table, stay readable.
    csv = tmp_path / "ev.csv"
    csv.write_text(
        "1,0000-01-01,0000-06-01 00:00:00\n"
        "2,0001-01-01,9999-12-31 23:59:59.999999\n"
        "3,2020-01-01,2020-01-01 00:00:00.5\n"
    )
    db.import_csv([csv], schema="CREATE TABLE ev (id INT PRIMARY KEY, d DATE, ts TIMESTAMP)")
    t = db.table("ev")
    assert t.get(1) == (1, "0000-01-01", "0000-06-01 00:00:00")
    assert t.get(2) == (
        2,
        datetime.date(1, 1, 1),
        datetime.datetime(9999, 12, 31, 23, 59, 59, 999999),
    )
    assert t.get(3) == (3, datetime.date(2020, 1, 1), datetime.datetime(2020, 1, 1, 0, 0, 0, 500000))
    # The encoders' inverse gives the same.
    k = strata.encode_key("CREATE TABLE ev (id INT PRIMARY KEY, d DATE, ts TIMESTAMP)", "ev", (1, None, None), table_id=t.table_id)
    assert strata.decode_row("CREATE TABLE ev (id INT PRIMARY KEY, d DATE, ts TIMESTAMP)", "ev", k, db[k])[1] == "0000-01-01"
    assert [r[0] for r in t.scan()] == [1, 2, 3]


def test_import_on_duplicate_replace_keeps_the_last_row_and_its_index(db, tmp_path):
    first = tmp_path / "first.csv"
    write_csv(first, ROWS[:2], header=False)
    db.import_csv([first], schema=SCHEMA, table="item")
    again = tmp_path / "again.csv"
    newer = (1, "quince", "2.00", "", "", "", "", "")
    newest = (1, "date", "3.00", "", "", "", "", "")
    write_csv(again, [newer, newest, (4, "plum", "", "", "", "", "", "")], header=False)
    with pytest.raises(strata.DuplicateKeyError):
        db.import_csv([again], schema=SCHEMA, table="item")
    s = db.import_csv([again], schema=SCHEMA, table="item", on_duplicate="replace")
    assert s["replaced"] == 1 and s["duplicates_ignored"] == 1, s
    t = db.table("item")
    assert t.get(1)[1] == "date"
    assert t.count() == 3
    # The replaced row's index entry went with it; the new one is there.
    names = [r[1] for r in t.scan(index="item_name")]
    assert names == sorted(["date", "pear", "plum"]), names
    assert t.count(index="item_name") == 3


def test_a_table_keeps_its_database_open(db, db_path, tmp_path):
    """`strata.DB(path).table(name)` outlives the expression that made the
    `DB`: the table (and its scans) keep the database open, so nobody has to
    name the `DB` first; once the last of them is gone, it is closed."""
    import gc

    tsv = tmp_path / "a.tsv"
    tsv.write_text("5\tkiwi\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n6\tlime\t2.00\t\\N\t\\N\t\\N\t\\N\t\\N\n")
    db.import_csv(str(tsv), schema=SCHEMA, table="item", format="tsv")
    db.close()
    assert strata.DB(db_path).table("item").count() == 2
    gc.collect()
    rows = list(strata.DB(db_path).table("item").scan())
    assert [r[0] for r in rows] == [5, 6]
    gc.collect()
    # The database was closed when the last object went: it opens again.
    strata.DB(db_path).close()


def test_a_small_import_counts_a_batch_and_no_files(db, tmp_path):
    # A few rows are applied by the database as a write batch, not as
    # files: the summary counts a batch unit and no files (it said one
    # file of 1.8 KB for a row that was never in a file of the tree).
    csv = tmp_path / "items.csv"
    write_csv(csv, ROWS)
    schema = tmp_path / "s.sql"
    schema.write_text(SCHEMA)
    s = db.import_csv([csv], schema=schema, table="item", header=True)
    assert (s["units"], s["batch_units"]) == (1, 1)
    assert all(i["files"] == 0 and i["file_bytes"] == 0 for i in s["indexes"])
    assert s["levels"] == []
    # No file, nothing to amplify: None, as `strata import --json` gives
    # null (it was 0.0).
    assert s["write_amplification"] is None
    assert db.table("item").count() == len(ROWS)
    # Rows enough for files: a number, 1.0 when written once.
    big = tmp_path / "big.csv"
    big.write_text("".join(f"{i},{'x' * 40}\n" for i in range(3000)))
    s = db.import_csv([big], schema="CREATE TABLE big (id INT PRIMARY KEY, v TEXT);", table="big")
    assert s["batch_units"] == 0 and s["indexes"][0]["files"] >= 1, s
    assert s["write_amplification"] >= 1.0, s


def test_unsupported_python_types_are_a_type_error(db, tmp_path):
    """Any object used to become its str(): a list stored as '[1, 2]'."""
    schema = "CREATE TABLE u (id INT PRIMARY KEY, t TEXT, b BYTEA);"
    for bad in ([1, 2], {"a": 1}, object(), {1}):
        with pytest.raises(TypeError, match=r"column t: a value of type \w+ is not supported for a TEXT column"):
            strata.encode_row(schema, "u", (1, bad, None))
    with pytest.raises(TypeError, match="column id: a value of type dict is not supported"):
        strata.encode_key(schema, "u", ({"a": 1}, None, None), table_id=1)
    # bytearray and memoryview are bytes.
    want = strata.encode_row(schema, "u", (1, "x", b"\x00\x01"))
    assert strata.encode_row(schema, "u", (1, bytearray(b"x"), bytearray(b"\x00\x01"))) == want
    assert strata.encode_row(schema, "u", (1, memoryview(b"x"), memoryview(b"\x00\x01"))) == want


def test_escape_equal_to_the_quote_is_the_default(db, tmp_path):
    p = tmp_path / "q.csv"
    p.write_text('1,"a""b"\n2,"say ""hi"", ok"\n')
    db.import_csv([str(p)], "CREATE TABLE e (id INT PRIMARY KEY, v TEXT);", "e", escape='"')
    t = db.table("e")
    assert t.get(1)[1] == 'a"b'
    assert t.get(2)[1] == 'say "hi", ok'


def test_minus_zero_keeps_its_sign(db, tmp_path):
    import math

    p = tmp_path / "f.csv"
    p.write_text("1,-0.0\n")
    db.import_csv([str(p)], "CREATE TABLE f (id INT PRIMARY KEY, x DOUBLE PRECISION);", "f")
    x = db.table("f").get(1)[1]
    assert x == 0.0 and math.copysign(1.0, x) == -1.0


BUNDLE_SCHEMA = "CREATE TABLE kv (k INT PRIMARY KEY, v TEXT); CREATE INDEX kv_v ON kv (v);"


def write_bundle(out, n, width):
    """A table bundle of ``n`` rows (values ``width`` characters long),
    one SST per index, as ``strata.spark.build_table`` writes one."""
    import hashlib
    import json

    from strata import spark

    out.mkdir()
    enc = strata.TableEncoder(BUNDLE_SCHEMA, "kv", 1)
    per_index = [[] for _ in enc.index_names]
    for i in range(n):
        for ix, k, v in enc.entries((i, f"v{n - i:06d}".ljust(width, "x"))):
            per_index[ix].append((k, v))
    files = []
    for ix, entries in enumerate(per_index):
        entries.sort()
        name = f"{enc.index_names[ix]}.sst"
        with strata.SstWriter(str(out / name)) as w:
            for k, v in entries:
                w.put(k, v)
        data = (out / name).read_bytes()
        files.append({
            "name": name,
            "index": enc.index_names[ix],
            "entries": len(entries),
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "smallest": entries[0][0].hex(),
            "largest": entries[-1][0].hex(),
        })
    manifest = {
        "format": spark.FORMAT,
        "version": spark.VERSION,
        "table": "kv",
        "table_id": 1,
        "schema": BUNDLE_SCHEMA,
        "rows": n,
        "files": files,
    }
    (out / spark.MANIFEST_NAME).write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "rows, width, as_batch",
    [
        # A few short rows: under the ingestion's small_file_bytes (32 KiB),
        # so the database applies them as a write batch.
        (5, 8, True),
        # 2,000 rows of 100-byte values: the files enter the tree.
        (2000, 100, False),
    ],
)
def test_ingest_table_says_whether_files_were_ingested(tmp_path, rows, width, as_batch):
    """A small bundle applied as a write batch counts no files and one
    batch unit, as import_csv's summary does (it used to report the
    bundle's two files as ingested); a larger one counts its files."""
    write_bundle(tmp_path / "bundle", rows, width)
    with strata.DB(str(tmp_path / "db")) as db:
        s = db.ingest_table(str(tmp_path / "bundle"))
        assert s["rows"] == rows
        assert s["entries"] == {"primary": rows, "kv_v": rows}
        if as_batch:
            # No file entered the tree.
            assert (s["files"], s["bytes"], s["levels"]) == (0, 0, []), s
            assert s["batch_units"] == 1, s
        else:
            assert (s["files"], s["batch_units"]) == (2, 0), s
            assert s["bytes"] > 32 << 10, s
            # The catalog entry's file, then the bundle's two.
            assert len(s["levels"]) == 3, s
        assert db.table("kv").count() == rows
        assert db.table("kv").get(3) == (3, f"v{rows - 3:06d}".ljust(width, "x"))
