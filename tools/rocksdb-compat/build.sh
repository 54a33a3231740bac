#!/usr/bin/env bash
# Builds the RocksDB compatibility helper (tools/rocksdb-compat/compat.cc).
#
# Usage: tools/rocksdb-compat/build.sh [OUT]
#   OUT defaults to target/rocksdb-compat/strata-rocksdb-compat (relative to
#   the repository root). The OUT environment variable is honoured as well.
#
# Needs the RocksDB development package (tested with 7.8.3) and g++:
#   apt-get install librocksdb-dev g++
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
OUT="${1:-${OUT:-$root/target/rocksdb-compat/strata-rocksdb-compat}}"
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac  # relative to the caller's cwd

if ! command -v g++ >/dev/null 2>&1; then
  echo "error: g++ not found; install it with: apt-get install librocksdb-dev g++" >&2
  exit 1
fi
if [ ! -f /usr/include/rocksdb/sst_file_writer.h ] &&
   ! echo '#include <rocksdb/sst_file_writer.h>' | g++ -std=c++17 -x c++ -fsyntax-only - >/dev/null 2>&1; then
  echo "error: RocksDB headers (rocksdb/sst_file_writer.h) not found;" \
       "install them with: apt-get install librocksdb-dev g++" >&2
  exit 1
fi

mkdir -p "$(dirname "$OUT")"
cd "$here"
g++ -O2 -std=c++17 compat.cc -lrocksdb -o "$OUT"
echo "built $OUT"
