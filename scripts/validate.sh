#!/usr/bin/env bash
# Converts the fixtures and a generated multi-process trace with the release binary and
# checks every output with independent readers: the Perfetto checker built on the
# official Perfetto protos (check_pftrace.py). Slice counts per category reported by the
# checker must equal the row counts `rocpd info` reports for the inputs.
#   usage: scripts/validate.sh TOOLS_DIR   (TOOLS_DIR holds setup.sh and check_pftrace.py)
set -euo pipefail
tools=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
venv=target/validators
if [ ! -x "$venv/bin/python" ]; then
  bash "$tools/setup.sh" "$venv"
fi
py=$venv/bin/python
cargo build --release -p rocpd-cli -p rocpd-gen
bin=${CARGO_TARGET_DIR:-target}/release
work=target/validate
rm -rf "$work" && mkdir -p "$work"

"$bin/rocpd-gen" --out "$work/gen" --seed 11 --nodes 2 --processes 4 --gpus 4 --threads 4 --iterations 300 >/dev/null

check() { # name, input, then further convert options
  local name=$1 input=$2; shift 2
  mkdir -p "$work/$name"
  "$bin/rocpd" convert -q -i "$input" "$@" -f pftrace -o "$name" -d "$work/$name"
  # Every output file (one, or every part of a split) must pass on its own.
  local n=0
  for trace in "$work/$name"/*.pftrace; do
    n=$((n + 1))
    "$py" "$tools/check_pftrace.py" "$trace" --json "$trace.check.json" > "$trace.check.txt" \
      || { cat "$trace.check.txt"; echo "FAILED: $trace"; exit 1; }
  done
  echo "  $name: $n file(s) pass check_pftrace.py"
  "$bin/rocpd" info --json -i "$input" > "$work/$name.info.json"
  "$py" - "$work/$name.info.json" "$work/$name"/*.check.json <<'PY'
import collections, json, sys
info = json.load(open(sys.argv[1]))
slices, instants = collections.Counter(), 0
for f in sys.argv[2:]:
    c = json.load(open(f))
    slices.update(c["slices_by_category"])
    instants += c["instants"]
check = {"slices_by_category": slices, "instants": instants}
rows = info["rows"]
slices = check["slices_by_category"]
api = sum(v for k, v in slices.items() if k.endswith("_api") and k != "marker_api") + slices.get("none", 0)
expect = {
    "kernel_dispatch": rows.get("kernel_dispatch", 0),
    "memory_copy": rows.get("memory_copy", 0),
    "memory_allocation+scratch_memory": rows.get("memory_allocation", 0),
    "marker_api": rows.get("marker", 0),
    "api (non-marker regions)": rows.get("region", 0),
    "instants": rows.get("sample", 0),
}
got = {
    "kernel_dispatch": slices.get("kernel_dispatch", 0),
    "memory_copy": slices.get("memory_copy", 0),
    "memory_allocation+scratch_memory": slices.get("memory_allocation", 0) + slices.get("scratch_memory", 0),
    "marker_api": slices.get("marker_api", 0),
    "api (non-marker regions)": api,
    "instants": check["instants"],
}
bad = {k: (got[k], expect[k]) for k in expect if got[k] != expect[k]}
if bad:
    sys.exit("count mismatch (output, input): %s" % bad)
print("  counts per category equal the input rows:", got)
PY
}

check fixture fixtures/generated
# rocprofv3 CSV sets, counter files included, are read directly: under a TMPDIR nothing
# can be created in (no temporary database is possible), every output must still pass.
"$bin/rocpd-gen" --out "$work/gencsv" --seed 12 --nodes 1 --processes 2 --iterations 60 --csv >/dev/null
TMPDIR="$work/no-such-directory" check csv_direct "$work/gencsv/csv"
# Real rocprofv3 outputs (CSV sets of several header generations, a JSON file).
check real_csv_llamacpp fixtures/rocprofv3-csv-llamacpp
check real_csv_docs fixtures/rocprofv3-csv-docs
check real_json fixtures/rocprofv3-json
check real_proton fixtures/proton
"$py" - fixtures/rocprofv3-csv-llamacpp "$work/real_csv_llamacpp" <<'PY'
import collections, csv, glob, json, os, sys
src, out = sys.argv[1:3]
kernels = sum(sum(1 for _ in csv.DictReader(open(f, newline=""))) for f in glob.glob(os.path.join(src, "*kernel_trace.csv")))
# These counter files carry their own prefixes (renamed upstream), so each is a run of its
# own whose dispatches come from the counter rows: one per distinct Dispatch_Id.
kernels += sum(len({r["Dispatch_Id"] for r in csv.DictReader(open(f, newline=""))}) for f in glob.glob(os.path.join(src, "*counter_collection.csv")))
apis = sum(sum(1 for _ in csv.DictReader(open(f, newline=""))) for f in glob.glob(os.path.join(src, "*hip_api_trace.csv")))
slices = collections.Counter()
for f in glob.glob(os.path.join(out, "*.check.json")):
    slices.update(json.load(open(f))["slices_by_category"])
assert slices["kernel_dispatch"] == kernels and slices["hip_api"] == apis, (slices, kernels, apis)
print("  real rocprofv3 CSV: kernel and HIP slices equal the CSV records (%d, %d, counted with Python's csv)" % (kernels, apis))
PY
check fixture_by_queue fixtures/generated --group-by-queue --kernel-rename --agent-index-value type-relative
check generated "$work/gen"
check generated_lean "$work/gen" --no-annotations --threads 1
check split_time "$work/gen" --split-by time --split-count 8
check split_size "$work/gen" --max-file-size 1MB
check split_process "$work/gen" --split-by process
# OTF2: the reference reader (otf2-print, Debian otf2-tools) and the OTF2 Python library
# (check_otf2.py) must accept every archive; Enter events must equal the input rows.
otf2_check() { # name, input, then further convert options
  local name=$1 input=$2; shift 2
  "$bin/rocpd" convert -q -i "$input" "$@" -f otf2 -o "$name" -d "$work/$name"
  local n=0
  for anchor in "$work/$name"/*.otf2; do
    n=$((n + 1))
    if command -v otf2-print >/dev/null 2>&1; then
      otf2-print --silent -Werror "$anchor" > /dev/null || { echo "FAILED: otf2-print $anchor"; exit 1; }
    fi
    "$py" "$tools/check_otf2.py" "$anchor" > "$anchor.check.txt" || { tail -5 "$anchor.check.txt"; echo "FAILED: check_otf2.py $anchor"; exit 1; }
  done
  "$bin/rocpd" info --json -i "$input" > "$work/$name.info.json"
  "$py" - "$work/$name.info.json" "$work/$name"/*.check.txt <<'PY'
import json, re, sys
rows = json.load(open(sys.argv[1]))["rows"]
enters = 0
for f in sys.argv[2:]:
    enters += sum(int(m) for m in re.findall(r"Enter=(\d+)", open(f).read()))
want = sum(rows.get(t, 0) for t in ["region", "marker", "sample", "kernel_dispatch", "memory_copy", "memory_allocation"])
assert enters == want, ("Enter events", enters, "input rows", want)
print("  otf2: %d archive(s) pass%s check_otf2.py; Enter events = input rows = %d" % (len(sys.argv) - 2, " otf2-print and", enters))
PY
}
command -v otf2-print >/dev/null 2>&1 || echo "  note: otf2-print not installed; only check_otf2.py runs"
otf2_check otf2_fixture fixtures/generated
otf2_check otf2_generated "$work/gen"
otf2_check otf2_split "$work/gen" --split-by time --split-count 3
TMPDIR="$work/no-such-directory" otf2_check otf2_csv_direct "$work/gencsv/csv"
TMPDIR="$work/no-such-directory" "$bin/rocpd" convert -q -i "$work/gencsv/csv" -f parquet -o pq -d "$work/parquet_csv_direct"
"$bin/rocpd" info --json -i "$work/gencsv/csv" > "$work/csv_direct.parquet.info.json"
"$py" - "$work/parquet_csv_direct/pq_results.parquet" "$work/csv_direct.parquet.info.json" <<'PY'
import duckdb, json, sys
ds, info = sys.argv[1], json.load(open(sys.argv[2]))["rows"]
for table, row in [("kernels", "kernel_dispatch"), ("api_calls", "region"), ("memory_copies", "memory_copy"), ("pmc_values", "pmc_value")]:
    n = duckdb.sql("select count(*) from read_parquet('%s/%s/*.parquet')" % (ds, table)).fetchall()[0][0]
    if n != info[row] or n == 0:
        sys.exit("csv_direct parquet %s: DuckDB reads %d rows, rocpd info says %d" % (table, n, info[row]))
print("  parquet (CSV read directly): DuckDB reads the rows rocpd info counts")
PY

# Merged RocPD: read by Python's sqlite3 module (not our code) through the view names AMD's
# tools query; counts must equal the inputs'.
"$bin/rocpd" merge -q -i "$work/gen" -o merged -d "$work/merge"
"$bin/rocpd" info --json -i "$work/gen" > "$work/merge.info.json"
"$py" - "$work/merge/merged.db" "$work/merge.info.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
rows = json.load(open(sys.argv[2]))["rows"]
q = lambda sql: db.execute(sql).fetchone()[0]
assert q("PRAGMA integrity_check") == "ok"
checks = {
    "kernels": (q("SELECT COUNT(*) FROM kernels"), rows["kernel_dispatch"]),
    "memory_copies": (q("SELECT COUNT(*) FROM memory_copies"), rows["memory_copy"]),
    "memory_allocations": (q("SELECT COUNT(*) FROM memory_allocations"), rows["memory_allocation"]),
    "regions": (q("SELECT COUNT(*) FROM regions"), rows["region"] + rows["marker"]),
    "samples": (q("SELECT COUNT(*) FROM samples"), rows["sample"]),
    "top_kernels": (q("SELECT SUM(total_calls) FROM top_kernels"), rows["kernel_dispatch"]),
}
bad = {k: v for k, v in checks.items() if v[0] != v[1]}
if bad:
    sys.exit("merged RocPD views disagree with the inputs (view, input): %s" % bad)
for v in ["processes", "threads", "regions_and_samples", "scratch_memory", "pmc_events", "busy", "top"]:
    q("SELECT COUNT(*) FROM %s" % v)
print("  merged RocPD: integrity ok; view counts equal the input rows:", {k: v[0] for k, v in checks.items()})
PY
# Every documented view, column by column, through the venv's Python sqlite3 as well as
# rusqlite (the test skips Python only when none is found; here it must run).
ROCPD_PYTHON="$(pwd)/$py" ROCPD_REQUIRE_PYTHON=1 bash scripts/run_built_tests.sh rocpd-cli:views
# rocpd query: its CSV and JSON equal Python's sqlite3 on the merged database of the
# same inputs (reals compared exactly), for several views.
"$py" - "$bin/rocpd" "$work/gen" "$work/merge/merged.db" <<'PY'
import csv, io, json, sqlite3, subprocess, sys
rocpd, gen, merged = sys.argv[1:4]
db = sqlite3.connect("file:%s?mode=ro" % merged, uri=True)
queries = [
    "SELECT * FROM kernels ORDER BY guid, id",
    "SELECT * FROM top_kernels ORDER BY total_duration DESC, name",
    "SELECT * FROM counters_collection ORDER BY guid, id",
    "SELECT * FROM busy ORDER BY agent_id, GpuTime",
    "SELECT pid, category, COUNT(*) AS n, AVG(duration) AS mean FROM regions GROUP BY 1, 2 ORDER BY 1, 2",
]
for sql in queries:
    cur = db.execute(sql)
    names = [d[0] for d in cur.description]
    want = cur.fetchall()
    out = subprocess.run([rocpd, "query", "-i", gen, "--query", sql, "--format", "csv"], check=True, capture_output=True, text=True).stdout
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows[0] == names, (sql, rows[0], names)
    assert len(rows) - 1 == len(want) > 0, (sql, len(rows) - 1, len(want))
    for got, exp in zip(rows[1:], want):
        for g, e in zip(got, exp):
            ok = (g == "" if e is None else float(g) == e if isinstance(e, float) else g == str(e))
            assert ok, (sql, g, e)
    js = json.loads(subprocess.run([rocpd, "query", "-i", gen, "--query", sql, "--format", "json"], check=True, capture_output=True, text=True).stdout)
    assert js == [dict(zip(names, r)) for r in want], sql
print("  rocpd query: CSV and JSON equal Python's sqlite3 on the merged database for %d queries" % len(queries))
PY
# Parquet: read by pyarrow and DuckDB. Row counts per table equal the inputs'; DuckDB's
# total kernel time per kernel equals `rocpd summary` and plain SQL on the source
# databases; row-group statistics let a time-range query skip row groups.
"$bin/rocpd" convert -q -i "$work/gen" -f parquet -o pq -d "$work/parquet" --row-group-rows 2000
"$bin/rocpd" convert -q -i "$work/gen" -f parquet -o pq -d "$work/parquet_split" --split-by process --partition-by node
"$bin/rocpd" summary -q -i "$work/gen" -f json -d "$work/parquet_summary"
"$py" - "$work/parquet/pq_results.parquet" "$work/merge.info.json" "$work/parquet_summary/summary.json" "$work/parquet_split" "$work/gen" <<'PY'
import glob, json, os, sqlite3, sys
import duckdb, pyarrow.parquet as pq
ds, info, summary, split, gen = sys.argv[1:6]
rows = json.load(open(info))["rows"]
tables = {"kernels": "kernel_dispatch", "api_calls": "region", "markers": "marker", "samples": "sample",
          "memory_copies": "memory_copy", "memory_allocations": "memory_allocation", "pmc_values": "pmc_value"}
for d, t in tables.items():
    files = sorted(glob.glob(os.path.join(ds, d, "**", "*.parquet"), recursive=True))
    n = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    m = duckdb.sql("select count(*) from read_parquet('%s/%s/**/*.parquet')" % (ds, d)).fetchall()[0][0] if files else 0
    want = rows.get(t, 0)
    assert n == m == want, (d, n, m, want)
    for f in files:
        starts = pq.read_table(f, columns=["start_ns"]).column(0).to_pylist()
        assert starts == sorted(starts), f + " not sorted by start"
# Total kernel time per kernel: DuckDB on Parquet == rocpd summary == SQL on the inputs.
duck = dict(duckdb.sql("select name, sum(duration_ns) from read_parquet('%s/kernels/*.parquet') group by 1" % ds).fetchall())
summ = {r["name"]: r["total_ns"] for v in json.load(open(summary))["views"] if v["name"] == "KERNELS" for r in v["rows"]}
sql = {}
for db in glob.glob(os.path.join(gen, "*.db")):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    kd = c.execute("select name from sqlite_master where name like 'rocpd_kernel_dispatch_%' and type='table'").fetchone()[0]
    ks = c.execute("select name from sqlite_master where name like 'rocpd_info_kernel_symbol_%' and type='table'").fetchone()[0]
    for name, t in c.execute('select coalesce(nullif(S.display_name, \'\'), S.kernel_name, \'\'), sum(K."end" - K.start) from "%s" K left join "%s" S on S.id = K.kernel_id group by 1' % (kd, ks)):
        sql[name] = sql.get(name, 0) + t
assert {k: int(v) for k, v in duck.items()} == {k: int(v) for k, v in summ.items()} == sql, "kernel totals differ"
# Pruning: row groups whose start_ns statistics meet the middle tenth of the span.
files = sorted(glob.glob(os.path.join(ds, "kernels", "*.parquet")))
stats = []
for f in files:
    md = pq.ParquetFile(f).metadata
    col = [md.schema.column(i).name for i in range(md.num_columns)].index("start_ns")
    for g in range(md.num_row_groups):
        st = md.row_group(g).column(col).statistics
        assert st is not None and st.has_min_max, "no start_ns statistics"
        stats.append((st.min, st.max))
lo, hi = min(s[0] for s in stats), max(s[1] for s in stats)
a, b = lo + (hi - lo) * 45 // 100, lo + (hi - lo) * 55 // 100
hit = sum(1 for mn, mx in stats if mx >= a and mn <= b)
assert hit < len(stats), (hit, len(stats))
q = duckdb.sql("select count(*) from read_parquet('%s/kernels/*.parquet') where start_ns between %d and %d" % (ds, a, b)).fetchall()[0][0]
# A split writes one dataset per process, partitioned by node; together they hold every kernel.
parts = sorted(glob.glob(os.path.join(split, "*.parquet")))
total = sum(duckdb.sql("select count(*) from read_parquet('%s/kernels/**/*.parquet', hive_partitioning=true)" % p).fetchall()[0][0] for p in parts)
assert total == rows["kernel_dispatch"], (total, rows["kernel_dispatch"])
print("  parquet: pyarrow and DuckDB read every table; counts, order and kernel totals agree "
      "(%d kernels); a 10%% time range meets %d of %d row groups (%d rows); %d split datasets" % (len(duck), hit, len(stats), q, len(parts)))
PY
# CSV: every file parsed by Python's csv module (not our code); headers equal the
# documented layouts (formats/csv/README.md); rows per file equal `rocpd info`'s counts
# (less the rows the report says have no CSV file); rows in time order; stats calls equal
# the trace rows. A split's parts together hold the same rows.
csv_check() { # name, input, then further convert options
  local name=$1 input=$2; shift 2
  "$bin/rocpd" convert -q -i "$input" "$@" -f csv --stats -o "$name" -d "$work/$name" --report "$work/$name.report.json"
  "$bin/rocpd" info --json -i "$input" > "$work/$name.info.json"
  "$py" - "$work/$name" "$name" "$work/$name.info.json" "$work/$name.report.json" <<'PY'
import collections, csv, glob, json, os, re, sys
out, name, info, report = sys.argv[1:5]
rows_in = json.load(open(info))["rows"]
rep = json.load(open(report))
api = '"Guid","Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"'
stats = '"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"'
layout = {
    "kernel_trace": '"Guid","Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"',
    "memory_copy_trace": '"Guid","Kind","Direction","Stream_Id","Source_Agent_Id","Destination_Agent_Id","Correlation_Id","Start_Timestamp","End_Timestamp"',
    "memory_allocation_trace": '"Guid","Kind","Operation","Agent_Id","Allocation_Size","Address","Correlation_Id","Start_Timestamp","End_Timestamp"',
    "scratch_memory_trace": '"Guid","Kind","Operation","Agent_Id","Queue_Id","Thread_Id","Alloc_Flags","Start_Timestamp","End_Timestamp","Allocation_Size"',
    "counter_collection": '"Guid","Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"',
    "agent_info": '"Guid","Node_Id","Logical_Node_Id","Agent_Type","Cpu_Cores_Count","Simd_Count","Cpu_Core_Id_Base","Simd_Id_Base","Max_Waves_Per_Simd","Lds_Size_In_Kb","Gds_Size_In_Kb","Num_Gws","Wave_Front_Size","Num_Xcc","Cu_Count","Array_Count","Num_Shader_Banks","Simd_Arrays_Per_Engine","Cu_Per_Simd_Array","Simd_Per_Cu","Max_Slots_Scratch_Cu","Gfx_Target_Version","Vendor_Id","Device_Id","Location_Id","Domain","Drm_Render_Minor","Num_Sdma_Engines","Num_Sdma_Xgmi_Engines","Num_Sdma_Queues_Per_Engine","Num_Cp_Queues","Max_Engine_Clk_Ccompute","Max_Engine_Clk_Fcompute","Sdma_Fw_Version","Fw_Version","Capability","Cu_Per_Engine","Max_Waves_Per_Cu","Family_Id","Workgroup_Max_Size","Grid_Max_Size","Local_Mem_Size","Hive_Id","Gpu_Id","Workgroup_Max_Dim_X","Workgroup_Max_Dim_Y","Workgroup_Max_Dim_Z","Grid_Max_Dim_X","Grid_Max_Dim_Y","Grid_Max_Dim_Z","Name","Vendor_Name","Product_Name","Model_Name"',
}
for d in ["hip", "hsa", "marker", "rccl", "rocdecode", "rocjpeg"]:
    layout[d + "_api_trace"] = api
for s in ["kernel", "hip_api", "hsa_api", "marker_api", "rccl_api", "rocdecode_api", "rocjpeg_api",
          "memory_copy", "memory_allocation", "scratch_memory", "domain"]:
    layout[s + "_stats"] = stats
lines = collections.Counter()   # records per kind, over every part
calls = collections.Counter()   # stats Calls per kind
files = sorted(glob.glob(os.path.join(out, "*.csv")))
assert files, "no CSV file written"
for f in files:
    base = os.path.basename(f)
    kind = next((k for k in sorted(layout, key=len, reverse=True) if base.endswith("_" + k + ".csv")), None)
    assert kind, "unexpected file " + base
    with open(f, newline="") as fh:
        header = fh.readline().rstrip("\n")
        assert header == layout[kind], "%s: header %s" % (base, header)
        fh.seek(0)
        r = csv.reader(fh)
        cols = next(r)
        recs = list(r)
    for rec in recs:
        assert len(rec) == len(cols), "%s: %d fields, not %d" % (base, len(rec), len(cols))
    if "Start_Timestamp" in cols:
        s, e = cols.index("Start_Timestamp"), cols.index("End_Timestamp")
        keys = [(int(x[s]), -int(x[e])) for x in recs]
        assert keys == sorted(keys), base + " not in time order"
    if kind.endswith("_stats"):
        calls[kind] += sum(int(x[1]) for x in recs)
    lines[kind] += len(recs)
skipped = collections.Counter()
values = 0
for o in rep["outputs"]:
    skipped.update(o["skipped"])
    if o["path"].endswith("_counter_collection.csv"):
        values += o["rows"].get("pmc_value", 0)
api_rows = sum(lines[d + "_api_trace"] for d in ["hip", "hsa", "rccl", "rocdecode", "rocjpeg"])
want = {
    "kernels": (lines["kernel_trace"], rows_in.get("kernel_dispatch", 0)),
    "api calls": (api_rows + skipped["API calls of other domains"], rows_in.get("region", 0)),
    "markers and samples": (lines["marker_api_trace"] + skipped["samples that are not markers"],
                            rows_in.get("marker", 0) + rows_in.get("sample", 0)),
    "copies": (lines["memory_copy_trace"], rows_in.get("memory_copy", 0)),
    "allocations": (lines["memory_allocation_trace"] + lines["scratch_memory_trace"], rows_in.get("memory_allocation", 0)),
    "counter values": (values + skipped["counter values without a dispatch"], rows_in.get("pmc_value", 0)),
    "kernel stats": (calls["kernel_stats"], lines["kernel_trace"]),
    "hip stats": (calls["hip_api_stats"], lines["hip_api_trace"]),
    "marker stats": (calls["marker_api_stats"], lines["marker_api_trace"]),
    "copy stats": (calls["memory_copy_stats"], lines["memory_copy_trace"]),
    "domain stats": (calls["domain_stats"], sum(calls[k] for k in calls if k != "domain_stats")),
}
assert lines["counter_collection"] <= max(values, 0) or values == 0
bad = {k: v for k, v in want.items() if v[0] != v[1]}
if bad:
    sys.exit("%s: CSV rows disagree with the inputs (csv, input): %s" % (name, bad))
print("  csv %s: %d files parsed by Python's csv; headers as documented; counts equal the inputs: %s"
      % (name, len(files), {k: v[0] for k, v in want.items()}))
PY
}
csv_check csv_fixture fixtures/generated
csv_check csv_generated "$work/gen"
csv_check csv_split_process "$work/gen" --split-by process
csv_check csv_split_time "$work/gen" --split-by time --split-count 5
csv_check csv_real_csv_llamacpp fixtures/rocprofv3-csv-llamacpp
csv_check csv_real_csv_docs fixtures/rocprofv3-csv-docs
csv_check csv_real_json fixtures/rocprofv3-json
csv_check csv_proton fixtures/proton
echo "validators: all outputs passed"
