#!/usr/bin/env bash
# Builds bench/rocksdb/driver.cc against Debian's librocksdb-dev (7.8).
# Usage: bench/rocksdb/build.sh OUT
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:?usage: build.sh OUT}"
if ! command -v g++ >/dev/null 2>&1 || [ ! -f /usr/include/rocksdb/db.h ]; then
  echo "error: g++ or RocksDB headers missing; install with: apt-get install librocksdb-dev g++" >&2
  exit 1
fi
mkdir -p "$(dirname "$OUT")"
g++ -O2 -std=c++17 "$here/driver.cc" -lrocksdb -lpthread -o "$OUT"
