#!/usr/bin/env bash
# Runs Strata's tests on a fresh machine: installs what the tests need
# (RocksDB 7.8's tools and headers, for the compatibility tests and the
# RocksDB benchmark driver; Chromium, for the visualiser's browser test; the
# Go modules of the Pebble driver), checks formatting and lints, runs every
# test, then the benchmark smoke test (bench/run --quick: all three drivers
# built, every workload run small; about a minute), then the Python package's
# tests (python/run_tests.sh).
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

# Chromium renders the visualiser's page in the browser test
# (crates/strata-viz/tests/browser.rs).
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing Chromium (chromium) for the visualiser's browser test"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
  else
    echo "== Chromium missing and apt-get unavailable: the browser test will skip"
    echo "   (install with: sudo apt-get install chromium)"
  fi
fi

# Go for bench/pebble: the one on PATH or in /usr/local/go (this machine
# kind ships Go 1.26; Debian's golang-go is too old for Pebble v2). Without
# it the Pebble driver is skipped, except under CI=true, where bench/run
# fails.
[ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"
if command -v go >/dev/null 2>&1; then
  echo "== go mod download (bench/pebble, from the Go proxy)"
  (cd bench/pebble && go mod download)
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
# The library as a program using it builds it: without the `internals`
# feature (the tests' dev-dependencies turn it on in the build above), so
# the internals are private and code only tests use would be dead.
cargo clippy -p strata --lib -- -D warnings
echo "== cargo test"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line over every test binary (cargo prints one per binary,
# the last of which is often an empty doc-test run).
summary=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed", p, f }' "$log")
echo "$summary"
[ "$status" = 0 ] || exit "$status"

# loom models of the commit pipeline, version reference counting, write
# stalls, the MANIFEST log and WAL rotation (crates/strata-loom; empty
# without --cfg loom). Their own target directory, so the changed RUSTFLAGS
# rebuild nothing else. About 15-25 s once built; STRATA_LONG=1 adds a
# model of about 175,000 interleavings.
echo "== loom models (crates/strata-loom)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo clippy --release -p strata-loom --all-targets -- -D warnings
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test --release -p strata-loom

echo "== benchmark smoke test: bench/run --quick (figures go to target/bench/, not docs)"
python3 bench/test_run.py
python3 bench/run --quick

# The Python package (python/): a venv under target/, maturin, rocksdict and
# pytest from PyPI, the extension built once in release mode (sharing
# target/ with the benchmark build above), then its pytest suite.
echo "== Python bindings: python/run_tests.sh"
python/run_tests.sh
# The summary again, last, so it closes the output.
echo "$summary"
