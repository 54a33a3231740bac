"""Type stubs of the Strata extension module (re-exported by ``strata``)."""

import datetime
import decimal
import os
import pathlib
from types import TracebackType
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, overload

Key = Union[bytes, bytearray, memoryview, str]
PathLike = Union[str, "os.PathLike[str]"]
SqlValue = Union[
    None, int, float, decimal.Decimal, str, bool, datetime.date, datetime.datetime, bytes
]
Row = Tuple[SqlValue, ...]

class StrataError(Exception):
    """Base class of every Strata error."""

class CorruptionError(StrataError):
    """Stored bytes are not what the format says."""

    file: str
    offset: int

class InvalidArgumentError(StrataError):
    """The request cannot be done (a bad option, keys out of order, ...)."""

InvalidArgument = InvalidArgumentError
"""The earlier name of `InvalidArgumentError`, kept as an alias."""

class NotSupportedError(StrataError):
    """The file or request uses a feature Strata does not implement."""

class BusyError(StrataError):
    """The database is open elsewhere."""

class NotFoundError(StrataError):
    """There is no Strata database at the path."""

class IoError(StrataError):
    """An operating-system I/O error."""

    path: str
    errno: Optional[int]

class InternalError(StrataError):
    """A bug in Strata."""

class DatabaseClosedError(StrataError):
    """The database or snapshot was closed."""

class SchemaError(StrataError):
    """The table definition is unusable."""

class BadRowError(StrataError):
    """A row of an import's input is malformed."""

    file: str
    line: int
    column: Optional[str]

class DuplicateKeyError(StrataError):
    """Two rows share a primary or unique key."""

    index: str

class Iterator:
    """Entries of a database or snapshot, in key order or reversed."""

    def __iter__(self) -> "Iterator": ...
    def __next__(self) -> Any: ...
    def close(self) -> None:
        """Releases the cursor now."""

class WriteBatch:
    """Writes applied atomically by :meth:`DB.write`."""

    def __init__(self) -> None: ...
    def put(self, key: Key, value: Key) -> None: ...
    def delete(self, key: Key) -> None: ...
    def delete_range(self, start: Key, end: Key) -> None: ...
    def clear(self) -> None: ...
    def size_bytes(self) -> int: ...
    def __len__(self) -> int: ...
    def __setitem__(self, key: Key, value: Key) -> None: ...
    def __delitem__(self, key: Key) -> None: ...

class Snapshot:
    """A consistent view of a database at one instant (a context manager)."""

    @property
    def sequence(self) -> int: ...
    def get(self, key: Key, default: Any = None) -> Any: ...
    def __getitem__(self, key: Key) -> bytes: ...
    def __contains__(self, key: Key) -> bool: ...
    def items(
        self, start: Optional[Key] = None, end: Optional[Key] = None, reverse: bool = False
    ) -> Iterator: ...
    def keys(
        self, start: Optional[Key] = None, end: Optional[Key] = None, reverse: bool = False
    ) -> Iterator: ...
    def values(
        self, start: Optional[Key] = None, end: Optional[Key] = None, reverse: bool = False
    ) -> Iterator: ...
    def __iter__(self) -> Iterator: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Snapshot": ...
    def __exit__(self, *args: Any) -> bool: ...

class SstWriter:
    """Writes one SST file for ingestion (a context manager)."""

    def __init__(
        self,
        path: PathLike,
        *,
        compression: str = "snappy",
        checksum: str = "crc32c",
        block_size: int = 4096,
        block_restart_interval: int = 16,
        bloom_bits_per_key: Optional[float] = 10.0,
        whole_key_filtering: bool = True,
        prefix_extractor: Optional[str] = None,
    ) -> None: ...
    @property
    def path(self) -> pathlib.Path: ...
    def put(self, key: Key, value: Key) -> None: ...
    def delete(self, key: Key) -> None: ...
    def delete_range(self, start: Key, end: Key) -> None: ...
    def finish(self) -> Dict[str, Any]: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> "SstWriter": ...
    def __exit__(
        self,
        exc_type: Optional[type] = None,
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> bool: ...

class TableScan:
    """Rows of a table, read lazily in chunks (from :meth:`Table.scan`);
    raises :class:`DatabaseClosedError` once the database is closed."""

    def __iter__(self) -> "TableScan": ...
    def __next__(self) -> Union[Row, Dict[str, SqlValue]]: ...
    def close(self) -> None:
        """Releases the cursor now (the scan then yields nothing more)."""

class Table:
    """A table of a database's catalog, from :meth:`DB.table`."""

    @property
    def name(self) -> str: ...
    @property
    def table_id(self) -> int: ...
    @property
    def columns(self) -> List[str]: ...
    @property
    def indexes(self) -> List[str]: ...
    def get(self, *pk: SqlValue, as_dict: bool = False) -> Optional[Union[Row, Dict[str, SqlValue]]]: ...
    def scan(
        self,
        index: Optional[Union[str, int]] = None,
        start: Optional[Union[SqlValue, Sequence[SqlValue]]] = None,
        end: Optional[Union[SqlValue, Sequence[SqlValue]]] = None,
        limit: Optional[int] = None,
        as_dict: bool = False,
        reverse: bool = False,
    ) -> "TableScan":
        """Rows in index order (``reverse=True``: backward) whose leading
        index columns are ``>= start`` and ``<= end``, at most ``limit``, as
        a lazy iterator over the table as it is now."""
    def count(self, index: Optional[Union[str, int]] = None) -> int: ...
    def __len__(self) -> int: ...

class DB:
    """An open Strata database (a context manager; closes on exit)."""

    def __init__(
        self,
        path: PathLike,
        *,
        create_if_missing: bool = True,
        error_if_exists: bool = False,
        read_only: bool = False,
        memtable_size: int = ...,
        max_immutable_memtables: int = ...,
        block_cache_bytes: int = ...,
        max_open_files: int = ...,
        max_background_compactions: int = ...,
        wal_flush_interval: float = 0.001,
        compression: str = "snappy",
        checksum: str = "crc32c",
        block_size: int = 4096,
        block_restart_interval: int = 16,
        bloom_bits_per_key: Optional[float] = 10.0,
        whole_key_filtering: bool = True,
        prefix_extractor: Optional[str] = None,
    ) -> None: ...
    @property
    def path(self) -> pathlib.Path: ...
    @property
    def closed(self) -> bool: ...
    @property
    def latest_sequence(self) -> int: ...
    def get(self, key: Key, default: Any = None) -> Any: ...
    def __getitem__(self, key: Key) -> bytes: ...
    def __setitem__(self, key: Key, value: Key) -> None: ...
    def __delitem__(self, key: Key) -> None: ...
    def __contains__(self, key: Key) -> bool: ...
    def __iter__(self) -> Iterator: ...
    def put(self, key: Key, value: Key, sync: bool = False) -> None: ...
    def delete(self, key: Key, sync: bool = False) -> None: ...
    def delete_range(self, start: Key, end: Key, sync: bool = False) -> None: ...
    def write(self, batch: WriteBatch, sync: bool = False) -> None: ...
    def items(
        self, start: Optional[Key] = None, end: Optional[Key] = None, reverse: bool = False
    ) -> Iterator: ...
    def keys(
        self, start: Optional[Key] = None, end: Optional[Key] = None, reverse: bool = False
    ) -> Iterator: ...
    def values(
        self, start: Optional[Key] = None, end: Optional[Key] = None, reverse: bool = False
    ) -> Iterator: ...
    def snapshot(self) -> Snapshot: ...
    def ingest(
        self,
        paths: Union[PathLike, Sequence[PathLike]],
        move: bool = False,
        verify_checksums: bool = True,
        allow_overlap: bool = True,
    ) -> Dict[str, Any]: ...
    def ingest_table(self, bundle: PathLike, *, move: bool = False) -> Dict[str, Any]:
        """Ingests a table bundle (SSTs and ``strata-bundle.json``, as
        :func:`strata.spark.build_table` writes it) as a new table, checked
        whole first and ingested in one atomic step. Returns a summary:
        ``table``, ``table_id``, ``rows``, ``files`` and ``bytes`` (the
        bundle's files that entered the tree as files), ``batch_units`` (1
        when the database applied a small bundle as a write batch instead:
        then ``files`` is 0 and ``levels`` empty), ``entries`` per index,
        ``levels``, ``verify_seconds``, ``ingest_seconds``."""
    def metrics(self) -> Dict[str, Any]: ...
    def flush(self) -> None: ...
    def sync_wal(self) -> None:
        """Makes every write made so far durable (writes made without
        ``sync=True`` survive a power cut once it returns)."""
    def compact_range(self, start: Optional[Key] = None, end: Optional[Key] = None) -> None: ...
    def wait_for_compactions(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> "DB": ...
    def __exit__(self, *args: Any) -> bool: ...
    def tables(self) -> List[str]: ...
    def import_csv(
        self,
        files: Union[PathLike, Sequence[PathLike]],
        schema: Union[str, PathLike],
        table: Optional[str] = None,
        *,
        format: str = "csv",
        delimiter: Optional[str] = None,
        quote: Optional[str] = None,
        escape: Optional[str] = None,
        header: Union[None, bool, str] = None,
        null: Optional[str] = None,
        memory: Optional[int] = None,
        threads: int = 0,
        max_bad_rows: int = 0,
        rejects: Optional[PathLike] = None,
        on_duplicate: str = "error",
    ) -> Dict[str, Any]: ...
    def table(self, name: str) -> Table: ...

class TableEncoder:
    """Rows of one table to the entries of every index, encoded as
    :meth:`DB.import_csv` encodes them (the schema is parsed once)."""

    def __init__(self, schema: Union[str, PathLike], table: Optional[str], table_id: int) -> None: ...
    @property
    def input_columns(self) -> List[str]: ...
    @property
    def index_names(self) -> List[str]: ...
    def entries(
        self, row: Union[Sequence[SqlValue], Dict[str, SqlValue]], *, rowid: Optional[int] = None
    ) -> List[Tuple[int, bytes, bytes]]:
        """``(index number, key, value)`` for each index, primary first."""
    def describe_key(self, index: int, key: bytes) -> str: ...

def encode_key(
    schema: Union[str, PathLike],
    table: Optional[str],
    row: Union[Sequence[SqlValue], Dict[str, SqlValue]],
    *,
    table_id: int,
    index: Optional[Union[str, int]] = None,
    rowid: Optional[int] = None,
) -> bytes: ...
def encode_row(
    schema: Union[str, PathLike],
    table: Optional[str],
    row: Union[Sequence[SqlValue], Dict[str, SqlValue]],
    *,
    rowid: Optional[int] = None,
) -> bytes: ...
def decode_row(schema: Union[str, PathLike], table: Optional[str], key: bytes, value: bytes) -> Row: ...
