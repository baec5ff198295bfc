#!/usr/bin/env bash
# The Python package (crates/python) as a user gets it: built and installed into a fresh
# venv with the README's command, checked to be one abi3 wheel for CPython >= 3.9, then
# its pytest suite, which compares it with this checkout's CLI.
#   usage: scripts/python_tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
target=$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)
venv=$target/python-venv
pip_q=(-q --disable-pip-version-check)
rm -rf "$venv" "$target/wheels"
python3 -m venv "$venv"

echo "  building the wheel (maturin, release)"
"$venv/bin/pip" wheel "${pip_q[@]}" --no-deps -w "$target/wheels" ./crates/python
wheel=$(ls "$target"/wheels/rocpd_rs-*.whl)
case "$wheel" in
  *-cp39-abi3-*.whl) echo "  $(basename "$wheel"): one wheel for every CPython >= 3.9" ;;
  *) echo "not an abi3 wheel for CPython >= 3.9: $wheel"; exit 1 ;;
esac

echo "  pip install ./crates/python (the README's command)"
"$venv/bin/pip" install "${pip_q[@]}" ./crates/python
"$venv/bin/pip" install "${pip_q[@]}" pytest polars duckdb

cargo build --release -q -p rocpd-cli -p rocpd-gen
# Run from outside the source tree, so `import rocpd_rs` is the installed package.
cd "$target"
ROCPD_BIN_DIR=$target/release "$venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/crates/python/tests"
