"""Strata: an embedded LSM key-value store built for bulk loading.

Keys and values are bytes (``str`` is accepted and stored as UTF-8). A
:class:`DB` reads like a dict (``db[k]``, ``db.get(k, default)``,
``k in db``, ``del db[k]``) and keeps keys sorted, so ``items()``,
``keys()`` and ``values()`` scan ranges in either direction. Bulk loads go
through :class:`SstWriter` and :meth:`DB.ingest`, or through the table
layer: :meth:`DB.import_csv` loads CSV/TSV files into SQL-defined tables,
read back with :meth:`DB.table`.

Table files use RocksDB's block-based format: files written by
``SstWriter`` ingest into RocksDB (e.g. with rocksdict), and files from
RocksDB's ``SstFileWriter`` ingest into Strata.

Example::

    import strata
    with strata.DB("/tmp/example-db") as db:
        db[b"user:1"] = b"ada"
        batch = strata.WriteBatch()
        batch.put(b"user:2", b"grace")
        db.write(batch, sync=True)
        for key, value in db.items(start=b"user:", end=b"user;"):
            print(key, value)
"""

from ._strata import (
    DB,
    BadRowError,
    BusyError,
    CorruptionError,
    DatabaseClosedError,
    DuplicateKeyError,
    InternalError,
    InvalidArgument,
    InvalidArgumentError,
    IoError,
    Iterator,
    NotFoundError,
    NotSupportedError,
    SchemaError,
    Snapshot,
    SstWriter,
    StrataError,
    Table,
    TableScan,
    TableEncoder,
    WriteBatch,
    decode_row,
    encode_key,
    encode_row,
)

__all__ = [
    "DB",
    "BadRowError",
    "BusyError",
    "CorruptionError",
    "DatabaseClosedError",
    "DuplicateKeyError",
    "InternalError",
    "InvalidArgument",
    "InvalidArgumentError",
    "IoError",
    "Iterator",
    "NotFoundError",
    "NotSupportedError",
    "SchemaError",
    "Snapshot",
    "SstWriter",
    "StrataError",
    "Table",
    "TableScan",
    "TableEncoder",
    "WriteBatch",
    "decode_row",
    "encode_key",
    "encode_row",
]
