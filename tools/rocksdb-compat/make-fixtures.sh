#!/usr/bin/env bash
# Regenerates the RocksDB-written SST fixtures in
# crates/strata/tests/fixtures/rocksdb/ (or the directory given as $1).
#
# Every case is written by RocksDB's SstFileWriter (via strata-rocksdb-compat)
# with RocksDB's default options except what the case changes, plus a fixed
# db_host_id ("strata-fixtures") so the hostname of the generating machine
# does not leak into the files. Inputs come from gen_kv.py and are committed
# next to each file as NAME.input (the exact lines fed to `write`).
#
# Determinism: the .input files are byte-for-byte reproducible. The .sst files
# are reproducible except for the 20-byte rocksdb.creating.session.identity
# property, which SstFileWriter draws at random on every run (and hence the
# properties block checksum); everything else, including every offset, is
# identical.
#
# Environment: COMPAT=path to a prebuilt strata-rocksdb-compat binary
# (default: target/rocksdb-compat/strata-rocksdb-compat, built if missing).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/crates/strata/tests/fixtures/rocksdb}"
COMPAT="${COMPAT:-$root/target/rocksdb-compat/strata-rocksdb-compat}"
N=300  # point entries per input

if [ ! -x "$COMPAT" ]; then
  "$here/build.sh" "$COMPAT"
fi
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Shared inputs. The compression and checksum cases all use input "main" so
# that their data blocks hold identical entries (none.sst is the uncompressed
# reference for the other codecs, checksum-*.sst differ only in checksums).
python3 "$here/gen_kv.py" --seed 1 --n "$N" > "$tmp/main.input"
python3 "$here/gen_kv.py" --seed 2 --n "$N" --del-every 25 --ranges 2 > "$tmp/tombstones.input"
python3 "$here/gen_kv.py" --seed 3 --n "$N" > "$tmp/prefix.input"

# fixture NAME INPUT [write options...]
fixture() {
  local name="$1" input="$2"
  shift 2
  cp "$tmp/$input.input" "$out/$name.input"
  rm -f "$out/$name.sst"
  "$COMPAT" write "$out/$name.sst" --host-id strata-fixtures "$@" < "$out/$name.input" >/dev/null
  "$COMPAT" verify "$out/$name.sst" >/dev/null

  # Sanity check: RocksDB's SstFileReader must return exactly the `put`
  # entries of the input (deletes hide nothing else; SstFileReader does not
  # apply range tombstones).
  awk '$1 == "put" { print ($3 == "" ? $2 : $2 " " $3) }' "$out/$name.input" > "$tmp/expect"
  "$COMPAT" scan "$out/$name.sst" > "$tmp/got" 2>/dev/null
  if ! cmp -s "$tmp/expect" "$tmp/got"; then
    echo "error: $name.sst does not scan back to its input" >&2
    exit 1
  fi
  # Same through a DB: ingest into an empty DB (the file keeps seqno 0, so
  # its own range tombstones hide none of its own points).
  "$COMPAT" ingest "$tmp/db-$name" "$out/$name.sst" > "$tmp/got" 2>/dev/null
  if ! cmp -s "$tmp/expect" "$tmp/got"; then
    echo "error: $name.sst does not ingest back to its input" >&2
    exit 1
  fi
  # And the full listing, deletes and range tombstones included, must
  # reproduce the input line for line.
  "$COMPAT" scan --with-tombstones "$out/$name.sst" > "$tmp/got"
  if ! cmp -s "$out/$name.input" "$tmp/got"; then
    echo "error: $name.sst: scan --with-tombstones differs from its input" >&2
    exit 1
  fi
  printf '%-22s %7d bytes  %s\n' "$name.sst" "$(stat -c %s "$out/$name.sst")" "${*:-(defaults)}"
}

for c in none snappy lz4 zstd; do
  fixture "$c"       main --compression "$c"
  fixture "$c-bloom" main --compression "$c" --bloom 10
done
fixture checksum-xxh3   main --checksum xxh3
fixture checksum-crc32c main --checksum crc32c
fixture tombstones      tombstones
fixture prefix          prefix --prefix-len 4 --bloom 10
