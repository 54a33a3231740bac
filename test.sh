#!/usr/bin/env bash
# Runs Strata's tests on a fresh machine: installs what the tests need
# (RocksDB 7.8's tools and headers, for the compatibility tests and the
# RocksDB benchmark driver; under CI=true a Go toolchain for the Pebble
# driver), checks formatting and lints, runs every test, then the benchmark
# smoke test (bench/run --quick: all three drivers built, every workload run
# small; about a minute).
set -euo pipefail
cd "$(dirname "$0")"

need_rocksdb() {
  ! command -v sst_dump >/dev/null 2>&1 || ! command -v ldb >/dev/null 2>&1 ||
    [ ! -f /usr/include/rocksdb/sst_file_writer.h ] || ! command -v g++ >/dev/null 2>&1
}
if need_rocksdb; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing RocksDB tools and headers (rocksdb-tools, librocksdb-dev, g++)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq rocksdb-tools librocksdb-dev g++ >/dev/null
  else
    echo "== RocksDB tools missing and apt-get unavailable: compatibility tests will skip"
    echo "   (install with: sudo apt-get install rocksdb-tools librocksdb-dev g++)"
  fi
fi

# Go for bench/pebble: the one on PATH or in /usr/local/go; under CI=true,
# if there is none, the official toolchain module from the Go proxy
# (Debian's golang-go is too old for Pebble v2).
[ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null 2>&1 && [ "${CI:-}" = true ]; then
  gover=v0.0.1-go1.26.8.linux-amd64
  godir="${XDG_CACHE_HOME:-$HOME/.cache}/strata-go/$gover"
  if [ ! -x "$godir/bin/go" ]; then
    echo "== installing Go (golang.org/toolchain@$gover from the Go proxy)"
    rm -rf "$godir.tmp" && mkdir -p "$godir.tmp"
    curl -fsSL "https://proxy.golang.org/golang.org/toolchain/@v/$gover.zip" -o "$godir.tmp/go.zip"
    python3 -m zipfile -e "$godir.tmp/go.zip" "$godir.tmp"
    mv "$godir.tmp/golang.org/toolchain@$gover" "$godir"
    rm -rf "$godir.tmp"
    chmod +x "$godir"/bin/* "$godir"/pkg/tool/*/*
  fi
  export PATH="$godir/bin:$PATH"
fi
if command -v go >/dev/null 2>&1; then
  echo "== go mod download (bench/pebble, from the Go proxy)"
  (cd bench/pebble && go mod download)
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line over every test binary (cargo prints one per binary,
# the last of which is often an empty doc-test run).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
[ "$status" = 0 ] || exit "$status"

echo "== benchmark smoke test: bench/run --quick (figures go to target/bench/, not docs)"
python3 bench/test_run.py
python3 bench/run --quick
