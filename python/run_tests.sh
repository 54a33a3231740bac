#!/usr/bin/env bash
# Builds the Python package into a virtual environment and runs its tests
# (test.sh calls this; it also works on its own from a clone):
#   python/run_tests.sh [pytest arguments...]
# The venv is target/pyenv/venv (ignored by git, like all of target/). On a
# fresh Debian machine run as root, python3-venv is installed with apt-get.
# The extension is built with `maturin develop --release` into the shared
# target/ directory, so the engine's compiled dependencies are reused.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$root/target/pyenv/venv

if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing python3-venv (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq python3-venv python3-pip >/dev/null
  else
    echo "python3 cannot create virtual environments: install python3-venv" >&2
    exit 1
  fi
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "== creating $venv"
  python3 -m venv "$venv"
fi
# PySpark runs the Spark path's tests (python/tests/test_spark.py) in
# local mode; it needs Java 17 or newer.
if ! command -v java >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing Java (openjdk-17-jre-headless) for PySpark"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    echo "== Java missing and apt-get unavailable: the Spark tests will skip"
  fi
fi
echo "== pip install maturin pytest rocksdict pyspark (PyPI)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  'maturin>=1.9.4,<2' 'pytest>=7' 'rocksdict==0.3.29' 'pyspark==4.3.0'

echo "== cargo fmt --check / clippy (python/, outside the workspace)"
cargo fmt --manifest-path python/Cargo.toml -- --check
CARGO_TARGET_DIR=$root/target cargo clippy --manifest-path python/Cargo.toml --all-targets -- -D warnings

echo "== maturin develop --release (the strata package into the venv)"
VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH CARGO_TARGET_DIR=$root/target \
  "$venv/bin/maturin" develop --release -q -m python/Cargo.toml

echo "== pytest python/tests"
"$venv/bin/python" -m pytest -q python/tests "$@"
