#!/usr/bin/env python3
"""Writes the format_version 6 and 7 SST fixtures with rocksdict's
SstFileWriter (current RocksDB, from PyPI), from the same `.input` files as
the RocksDB 7.8 fixtures (put/del/range lines, hex).

    target/pyenv/venv/bin/python tools/rocksdict/make_fixtures.py \
        crates/strata/tests/fixtures/rocksdb

Needs `pip install rocksdict==0.3.29` (python/run_tests.sh installs it into
target/pyenv/venv). Each output NAME.sst gets NAME.input, its entries
(the source's put and del lines), so crates/strata/tests/rocksdb_new_formats.rs can expect exactly those
entries.
"""

import sys
from pathlib import Path

import rocksdict

# name: (input, format_version, checksum, compression)
FIXTURES = {
    "rocksdict-fv6": ("tombstones", 6, rocksdict.ChecksumType.xxh3(), None),
    "rocksdict-fv7": ("tombstones", 7, rocksdict.ChecksumType.xxh3(), None),
    "rocksdict-fv6-crc32c-zstd": (
        "snappy",  # the "main" input (all main inputs are identical)
        6,
        rocksdict.ChecksumType.crc32c(),
        rocksdict.DBCompressionType.zstd(),
    ),
    "rocksdict-fv7-lz4": ("snappy", 7, rocksdict.ChecksumType.xxh3(), rocksdict.DBCompressionType.lz4()),
}


def lines(path):
    for line in path.read_text().splitlines():
        f = line.split(" ")
        yield line, f[0], [bytes.fromhex(x) for x in f[1:]] + [b"", b""]


def write(out: Path, name: str, spec) -> None:
    src, fv, checksum, compression = spec
    opts = rocksdict.Options(raw_mode=True)
    t = rocksdict.BlockBasedOptions()
    t.set_format_version(fv)
    t.set_checksum_type(checksum)
    opts.set_block_based_table_factory(t)
    if compression is not None:
        opts.set_compression_type(compression)
    w = rocksdict.SstFileWriter(opts)
    path = out / f"{name}.sst"
    w.open(str(path))
    kept = []
    for line, op, args in lines(out / f"{src}.input"):
        # rocksdict's SstFileWriter has no delete_range: range lines are
        # left out of the file and of its .input.
        if op == "put":
            w[args[0]] = args[1]
        elif op == "del":
            del w[args[0]]
        else:
            continue
        kept.append(line)
    w.finish()
    (out / f"{name}.input").write_text("\n".join(kept) + "\n")
    print(f"{path}: {path.stat().st_size} bytes")


def main() -> None:
    out = Path(sys.argv[1])
    for name, spec in FIXTURES.items():
        write(out, name, spec)


if __name__ == "__main__":
    main()
