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
rm -rf "$venv"
python3 -m venv "$venv"

echo "  pip install ./crates/python (the README's command: maturin builds the wheel in release)"
start=$SECONDS
"$venv/bin/pip" install "${pip_q[@]}" ./crates/python
echo "  built and installed in $((SECONDS - start)) s"
# The wheel's tag, as installed: one wheel for every CPython from 3.9 on.
tag=$("$venv/bin/python" - <<'PY'
import importlib.metadata as m
print(" ".join(l.split(":", 1)[1].strip() for l in m.distribution("rocpd-rs").read_text("WHEEL").splitlines() if l.startswith("Tag:")))
PY
)
case "$tag" in
  cp39-abi3-*) echo "  wheel tag $tag: abi3, CPython >= 3.9" ;;
  *) echo "not an abi3 wheel for CPython >= 3.9: $tag"; exit 1 ;;
esac
"$venv/bin/pip" install "${pip_q[@]}" pytest polars duckdb

cargo build --release -q -p rocpd-cli -p rocpd-gen
# Run from outside the source tree, so `import rocpd_rs` is the installed package.
cd "$target"
ROCPD_BIN_DIR=$target/release "$venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/crates/python/tests"
