#!/usr/bin/env python3
"""Dump the footer, metaindex block and raw properties block of a RocksDB
block-based table (format_version 2..5, e.g. files written by RocksDB 7.8).

Usage: tools/rocksdb-compat/sst_meta.py FILE.sst

This is an independent debugging aid (no RocksDB needed; uncompressed
metaindex/properties blocks, as RocksDB always writes them, are assumed). It shows the exact
bytes a writer has to produce for the meta part of a file, which
`sst_dump --show_properties` only shows in pretty-printed form. For every
property it prints the name, the raw value as hex and, where the encoding is
known, a decoded form.

Layout recap (all integers little-endian):
  footer (last 53 bytes):
    checksum_type:u8 | metaindex BlockHandle | index BlockHandle
    | zero padding up to 41 bytes | format_version:u32 | magic:u64
  BlockHandle = varint64 offset, varint64 size (size excludes the trailer)
  block trailer (5 bytes after every block): compression_type:u8 | checksum:u32
  block = entries | restart offsets (u32 each) | num_restarts:u32
  entry = varint32 shared | varint32 non_shared | varint32 value_len
          | key delta | value
"""

import sys

BLOCK_BASED_MAGIC = 0x88E241B785F4CFF7
FOOTER_LEN = 53
CHECKSUM_NAMES = {0: "none", 1: "crc32c", 2: "xxhash", 3: "xxhash64", 4: "xxh3"}

# How the values of well-known properties are encoded.
VARINT_PROPS = {
    "rocksdb.data.size", "rocksdb.index.size", "rocksdb.index.partitions",
    "rocksdb.top-level.index.size", "rocksdb.index.key.is.user.key",
    "rocksdb.index.value.is.delta.encoded", "rocksdb.filter.size",
    "rocksdb.raw.key.size", "rocksdb.raw.value.size", "rocksdb.num.data.blocks",
    "rocksdb.num.entries", "rocksdb.num.filter_entries", "rocksdb.deleted.keys",
    "rocksdb.merge.operands", "rocksdb.num.merge_operands",
    "rocksdb.num.range-deletions", "rocksdb.format.version",
    "rocksdb.fixed.key.length", "rocksdb.column.family.id",
    "rocksdb.creation.time", "rocksdb.oldest.key.time",
    "rocksdb.file.creation.time", "rocksdb.slow.compression.estimated.data.size",
    "rocksdb.fast.compression.estimated.data.size", "rocksdb.original.file.number",
    "rocksdb.tail.start.offset", "rocksdb.key.largest.seqno",
    "rocksdb.key.smallest.seqno",
}
FIXED32_PROPS = {"rocksdb.external_sst_file.version",
                 "rocksdb.block.based.table.index.type"}
FIXED64_PROPS = {"rocksdb.external_sst_file.global_seqno"}


def varint(buf, pos):
    """Decode a LEB128 varint at buf[pos:]; return (value, new_pos)."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def block_handle(buf, pos):
    offset, pos = varint(buf, pos)
    size, pos = varint(buf, pos)
    return (offset, size), pos


def block_entries(data, handle):
    """Yield (key, value) pairs of an uncompressed block at `handle`."""
    offset, size = handle
    block = data[offset:offset + size]
    compression = data[offset + size]
    if compression != 0:
        raise ValueError(f"block at {offset} is compressed (type {compression})")
    num_restarts = int.from_bytes(block[-4:], "little")
    end = len(block) - 4 - 4 * num_restarts
    pos = 0
    key = b""
    while pos < end:
        shared, pos = varint(block, pos)
        non_shared, pos = varint(block, pos)
        value_len, pos = varint(block, pos)
        key = key[:shared] + block[pos:pos + non_shared]
        pos += non_shared
        value = block[pos:pos + value_len]
        pos += value_len
        yield key, value


def index_entries(data, handle):
    """Yield (separator_key, data_block_handle) from the index block.

    Assumes what RocksDB 7.8 writes by default for format_version >= 4:
    index_block_restart_interval = 1, so every entry is a restart point
    (shared == 0) and, with "index.value.is.delta.encoded", an entry is
    varint32 shared | varint32 non_shared | key | BlockHandle (no value length).
    """
    offset, size = handle
    block = data[offset:offset + size]
    num_restarts = int.from_bytes(block[-4:], "little")
    end = len(block) - 4 - 4 * num_restarts
    pos = 0
    while pos < end:
        shared, pos = varint(block, pos)
        non_shared, pos = varint(block, pos)
        if shared != 0:
            raise ValueError("unexpected shared key bytes in index block")
        key = block[pos:pos + non_shared]
        pos += non_shared
        h, pos = block_handle(block, pos)
        yield key, h


def decode_property(name, value):
    try:
        if name in VARINT_PROPS:
            v, end = varint(value, 0)
            return str(v) if end == len(value) else None
        if name in FIXED32_PROPS and len(value) == 4:
            return str(int.from_bytes(value, "little"))
        if name in FIXED64_PROPS and len(value) == 8:
            return str(int.from_bytes(value, "little"))
    except IndexError:
        return None
    if all(32 <= b < 127 for b in value):
        return repr(value.decode("ascii"))
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    footer = data[-FOOTER_LEN:]
    magic = int.from_bytes(footer[-8:], "little")
    if magic != BLOCK_BASED_MAGIC:
        sys.exit(f"not a block-based table (magic {magic:#x})")
    fmt = int.from_bytes(footer[-12:-8], "little")
    checksum = footer[0]
    metaindex, pos = block_handle(footer, 1)
    index, pos = block_handle(footer, pos)
    print(f"file size            {len(data)}")
    print(f"footer               {footer.hex()}")
    print(f"format_version       {fmt}")
    print(f"checksum type        {checksum} ({CHECKSUM_NAMES.get(checksum, '?')})")
    print(f"metaindex handle     offset={metaindex[0]} size={metaindex[1]}")
    print(f"index handle         offset={index[0]} size={index[1]}")
    print(f"index block trailer  {data[index[0] + index[1]:index[0] + index[1] + 5].hex()}")

    print("\nmetaindex block entries (name -> handle):")
    props_handle = None
    for key, value in block_entries(data, metaindex):
        h, _ = block_handle(value, 0)
        print(f"  {key.decode('latin-1'):40} offset={h[0]} size={h[1]}")
        if key == b"rocksdb.properties":
            props_handle = h
    if props_handle is None:
        sys.exit("no rocksdb.properties block")

    props = dict(block_entries(data, props_handle))
    index_type_byte = data[index[0] + index[1]]
    if index_type_byte != 0:
        # enable_index_compression (default true) compresses the index block
        # when that saves enough; decompressing is out of scope here.
        print(f"\nindex block is compressed (type {index_type_byte}); "
              "data block list skipped")
    elif props.get(b"rocksdb.index.value.is.delta.encoded") == b"\x01":
        print("\ndata blocks (from the index block; compression type byte of the trailer):")
        for key, (off, size) in index_entries(data, index):
            print(f"  offset={off:<6} size={size:<5} compression={data[off + size]}"
                  f"  separator=0x{key.hex()[:40]}{'...' if len(key) > 20 else ''}")

    print("\nproperties block (name = raw hex  [decoded]):")
    for key, value in block_entries(data, props_handle):
        name = key.decode("latin-1")
        decoded = decode_property(name, value)
        line = f"  {name} = 0x{value.hex()}"
        if decoded is not None:
            line += f"  [{decoded}]"
        print(line)


if __name__ == "__main__":
    main()
