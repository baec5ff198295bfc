#!/usr/bin/env bash
# The data lake as its readers see it (formats/parquet/README.md, "Many runs, one
# dataset"): eight `rocpd convert --append --table-format delta` processes write one
# generated rank each into one dataset at the same moment; DuckDB must then count
# exactly the inputs' rows per table, with no duplicate or torn part file, and the
# `deltalake` package (delta-rs) must open every table with one commit per run and the
# same row counts. Then the Spark recipe (scripts/spark_lake.py) runs in local[2] mode,
# with pyspark from PyPI and Java 17 from Debian; when either cannot be installed here,
# that part is skipped with a message.
#   usage: scripts/lake_tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
target=$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)
bin=$target/release
venv=$target/lake-venv
pip_q=(-q --disable-pip-version-check)
cargo build --release -q -p rocpd-cli -p rocpd-gen
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install "${pip_q[@]}" duckdb deltalake pyarrow
py=$venv/bin/python

work=$target/lake-test
rm -rf "$work" && mkdir -p "$work"
"$bin/rocpd-gen" --out "$work/gen" --seed 5 --nodes 2 --processes 8 --gpus 2 --threads 2 --iterations 200 >/dev/null
ranks=("$work"/gen/*.db)
echo "  ${#ranks[@]} generated ranks, appended by as many concurrent processes"
pids=()
for r in "${ranks[@]}"; do
  "$bin/rocpd" convert -q -i "$r" -f parquet --append --table-format delta --partition-by node,pid \
    -o lake -d "$work" 2>"$r.err" &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { cat "${ranks[$i]}.err"; echo "FAILED: append of ${ranks[$i]}"; exit 1; }
done
"$bin/rocpd" info --json -i "$work/gen" > "$work/info.json"

"$py" - "$work/lake_results.parquet" "$work/info.json" "${#ranks[@]}" <<'PY'
import glob, json, os, sys
import duckdb, pyarrow.parquet as pq
from deltalake import DeltaTable
ds, info, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = json.load(open(info))["rows"]
events = {"kernels": "kernel_dispatch", "api_calls": "region", "markers": "marker", "samples": "sample",
          "memory_copies": "memory_copy", "memory_allocations": "memory_allocation", "pmc_values": "pmc_value"}
dims = ["sources", "nodes", "processes", "threads", "agents", "queues", "streams", "kernel_symbols",
        "code_objects", "pmc_info"]
runs = sorted(f[:-5] for f in os.listdir(os.path.join(ds, "_runs")))
assert len(runs) == n, runs
# Every part file on disk is listed by exactly one run's description, and carries its id.
listed = {}
for r in runs:
    for t, desc in json.load(open(os.path.join(ds, "_runs", r + ".json")))["tables"].items():
        for f in desc["files"]:
            assert f["path"] not in listed, "listed by two runs: " + f["path"]
            assert r in os.path.basename(f["path"]), (r, f["path"])
            listed[f["path"]] = f["rows"]
names = set()
for t in list(events) + dims:
    files = glob.glob(os.path.join(ds, t, "**", "*.parquet"), recursive=True)
    for f in files:
        rel = os.path.relpath(f, ds)
        names.add(rel)
        # A torn file has no footer; a file shared by two writers has the wrong count.
        assert pq.ParquetFile(f).metadata.num_rows == listed.get(rel), rel
    got = duckdb.sql("select count(*) from read_parquet('%s/%s/**/*.parquet', hive_partitioning=true)" % (ds, t)).fetchall()[0][0] if files else 0
    dt = DeltaTable(os.path.join(ds, t))
    hist = dt.history()
    committed = sorted(h["rocpdRun"] for h in hist)
    assert committed == runs, (t, committed, runs)
    assert dt.version() == n - 1, (t, dt.version())
    delta_rows = dt.to_pyarrow_dataset().count_rows()
    if t in events:
        want = rows.get(events[t], 0)
        assert got == delta_rows == want, (t, got, delta_rows, want)
    else:
        assert got == delta_rows, (t, got, delta_rows)
        if t in ("sources", "processes"):
            assert got == n, (t, got)
assert names == set(listed), sorted(names ^ set(listed))[:5]
k = DeltaTable(os.path.join(ds, "kernels"))
assert k.metadata().partition_columns == ["node", "pid"], k.metadata().partition_columns
pids = sorted(set(k.to_pyarrow_table(columns=["pid"]).column("pid").to_pylist()))
assert len(pids) == n, pids
print("  lake: %d concurrent appends; DuckDB counts the inputs' rows in every table (%d kernels); "
      "no duplicate or torn part file (%d files); deltalake opens all %d tables, each with %d commits, one per run"
      % (n, rows["kernel_dispatch"], len(names), len(events) + len(dims), n))
# Every check has passed. DuckDB's and delta-rs's native threads can abort the interpreter
# as it tears down ("terminate called without an active exception"), so leave now.
sys.stdout.flush()
os._exit(0)
PY

echo "  the Spark recipe (scripts/spark_lake.py): pyspark in local[2] mode"
java_ok=0
if command -v java >/dev/null 2>&1 && java -version 2>&1 | grep -q 'version "\(1[7-9]\|2[0-9]\)'; then
  java_ok=1
elif [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless) >/dev/null 2>&1 \
    && java_ok=1 || echo "  note: openjdk-17-jre-headless could not be installed"
fi
if [ "$java_ok" != 1 ]; then
  echo "  SKIPPED: Spark needs Java 17 (Debian openjdk-17-jre-headless), not available here"
  exit 0
fi
if ! "$venv/bin/pip" install "${pip_q[@]}" pyspark; then
  echo "  SKIPPED: pyspark could not be installed from PyPI"
  exit 0
fi
spark_ranks=("${ranks[@]:0:4}")
SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$py "$py" "$repo/scripts/spark_lake.py" --rocpd "$bin/rocpd" --lake "$work/spark" "${spark_ranks[@]}"
