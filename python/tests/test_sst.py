"""SstWriter, ingestion, corruption, and interoperability with current
RocksDB through rocksdict (both ways)."""

import os

import pytest

import strata

rocksdict = pytest.importorskip("rocksdict")


def kvs(n, prefix=b"k"):
    return [(prefix + b"%06d" % i, b"value-%d" % (i * 7)) for i in range(n)]


def test_sst_writer_and_ingest(db, tmp_path):
    path = tmp_path / "a.sst"
    with strata.SstWriter(path) as w:
        for k, v in kvs(1000):
            w.put(k, v)
        w.delete(b"k000999x")
        assert len(w) == 1001
    assert path.exists()
    r = db.ingest([path])
    assert r["sequence"] > 0
    assert path.exists(), "the default copies, leaving the caller's file"
    assert db[b"k000500"] == b"value-3500"
    assert list(db.items()) == kvs(1000)
    # move=True takes the file.
    p2 = tmp_path / "b.sst"
    w = strata.SstWriter(p2, compression="zstd", checksum="xxh3", bloom_bits_per_key=None)
    w.put(b"z1", b"1")
    info = w.finish()
    assert info["num_entries"] == 1 and info["smallest"] == info["largest"] == b"z1"
    db.ingest(p2, move=True)
    assert not p2.exists()
    assert db[b"z1"] == b"1"
    m = db.metrics()
    assert m["ingests"] >= 1
    # The phases of file ingestions (both above were small enough to be
    # applied as batches, so none has any) are part of the total.
    phases = ("ingest_prepare_micros", "ingest_commit_micros", "ingest_manifest_sync_micros")
    assert m["ingests_as_batch"] == m["ingests"]
    assert all(m[k] == 0 for k in phases + ("ingest_dir_sync_micros",))
    p3 = tmp_path / "c.sst"
    with strata.SstWriter(p3) as w:
        for k, v in kvs(5000, prefix=b"m"):  # over the 32 KiB batch limit
            w.put(k, v)
    db.ingest(p3)
    m = db.metrics()
    assert m["ingests"] - m["ingests_as_batch"] == 1
    assert m["ingest_dir_sync_micros"] <= m["ingest_prepare_micros"]
    assert m["ingest_prepare_micros"] > 0  # opening and reading the file
    assert sum(m[k] for k in phases) <= m["ingest_micros"]


def test_sst_writer_errors(tmp_path):
    w = strata.SstWriter(tmp_path / "x.sst")
    w.put(b"b", b"1")
    with pytest.raises(strata.InvalidArgumentError):
        w.put(b"a", b"2")  # out of order
    w.finish()
    with pytest.raises(strata.InvalidArgumentError):
        w.put(b"c", b"3")  # finished
    with pytest.raises(TypeError):
        strata.SstWriter(tmp_path / "y.sst", colour="blue")
    # Leaving the block with an exception removes the partial file.
    p = tmp_path / "partial.sst"
    with pytest.raises(RuntimeError):
        with strata.SstWriter(p) as w:
            w.put(b"a", b"1")
            raise RuntimeError("stop")
    assert not p.exists()


def test_ingest_corrupt_file_is_reported(db, tmp_path):
    path = tmp_path / "c.sst"
    with strata.SstWriter(path, compression="none") as w:
        for k, v in kvs(2000):
            w.put(k, v)
    data = bytearray(path.read_bytes())
    data[100] ^= 0x40  # inside the first data block
    path.write_bytes(bytes(data))
    with pytest.raises(strata.CorruptionError) as e:
        db.ingest([path])
    assert e.value.file.endswith("c.sst") or "c.sst" in str(e.value)
    assert e.value.offset == 0  # the first data block starts the file
    assert list(db.keys()) == []


def rocksdict_writer(path, format_version=None):
    opts = rocksdict.Options(raw_mode=True)
    if format_version is not None:
        t = rocksdict.BlockBasedOptions()
        t.set_format_version(format_version)
        opts.set_block_based_table_factory(t)
    w = rocksdict.SstFileWriter(opts)
    w.open(str(path))
    return w


@pytest.mark.parametrize("fv", [None, 5, 6, 7])
def test_strata_ingests_rocksdict_sst(db, tmp_path, fv):
    """rocksdict's SstFileWriter (RocksDB 10.4; format_version 6 by
    default) written at run time, ingested by Strata and read back."""
    path = tmp_path / "rocks.sst"
    w = rocksdict_writer(path, fv)
    data = kvs(5000, b"r")
    for k, v in data:
        w[k] = v
    w.finish()
    tail = path.read_bytes()[-12:-8]
    assert int.from_bytes(tail, "little") == (6 if fv is None else fv)
    db.ingest([path])
    assert list(db.items()) == data
    assert list(db.keys(start=b"r001000", end=b"r001003", reverse=True)) == [
        b"r001002",
        b"r001001",
        b"r001000",
    ]


def test_rocksdict_footer_corruption_is_reported(db, tmp_path):
    path = tmp_path / "rocks.sst"
    w = rocksdict_writer(path)
    for k, v in kvs(100):
        w[k] = v
    w.finish()
    data = bytearray(path.read_bytes())
    at = len(data) - 53
    data[at + 20] ^= 1  # an unchecked reserved byte: only the footer checksum covers it
    path.write_bytes(bytes(data))
    with pytest.raises(strata.CorruptionError) as e:
        db.ingest([path])
    assert "footer checksum" in str(e.value)
    assert e.value.offset == at


def test_rocksdict_ingests_strata_sst(tmp_path):
    """Strata's SstWriter output ingested by RocksDB (rocksdict) and read
    back, every compression Strata writes."""
    rd = rocksdict.Rdict(str(tmp_path / "rocks"), rocksdict.Options(raw_mode=True))
    try:
        expected = {}
        for i, comp in enumerate(["none", "snappy", "lz4", "zstd"]):
            path = tmp_path / f"s{i}.sst"
            data = kvs(3000, b"s%d-" % i)
            with strata.SstWriter(path, compression=comp) as w:
                for k, v in data:
                    w.put(k, v)
            rd.ingest_external_file([str(path)])
            expected.update(data)
        got = dict(rd.items())
        assert got == expected
        assert rd[b"s2-001234"] == b"value-%d" % (1234 * 7)
    finally:
        rd.close()
