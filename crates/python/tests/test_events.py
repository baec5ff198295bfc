"""Inputs, catalogs and event streams, checked against the CLI and the model's spec."""

import re

import pyarrow as pa
import pytest

import rocpd_rs
from conftest import REPO, cli, cli_json


def model_doc_columns():
    """{table: [(column, arrow type, nullable)]} from formats/model/README.md."""
    text = (REPO / "formats" / "model" / "README.md").read_text()
    body = text.split("## The seven tables", 1)[1].split("\n## ", 1)[0]
    tables = {}
    for section in re.split(r"\n### ", body)[1:]:
        heading = section.split("\n", 1)[0]
        names = re.findall(r"`(\w+)`", heading)
        rows = re.findall(r"^\| (\d+) \| `(\w+)` \| (\w+) \| (yes|no) \|", section, re.M)
        if not rows:
            continue
        cols = [(name, ty, nullable == "yes") for _, name, ty, nullable in rows]
        assert [int(r[0]) for r in rows] == list(range(len(rows))), heading
        for n in names:
            tables[n] = cols
    return tables


ARROW_TYPES = {"UInt32": pa.uint32(), "Int64": pa.int64(), "Float64": pa.float64(), "Boolean": pa.bool_(), "Utf8": pa.string()}


def test_every_table_has_the_schema_the_model_documents(trace):
    documented = model_doc_columns()
    assert sorted(documented) == sorted(rocpd_rs.EVENT_TABLES)
    with rocpd_rs.open(trace) as inputs:
        for table in rocpd_rs.EVENT_TABLES:
            want = pa.schema([pa.field(n, ARROW_TYPES[t], nullable) for n, t, nullable in documented[table]])
            for got in (rocpd_rs.schema(table), inputs.events(table).schema):
                assert got.remove_metadata() == want, table
                assert [f.nullable for f in got] == [f.nullable for f in want], table


def test_info_is_what_the_cli_prints(trace, trace_info):
    with rocpd_rs.open(str(trace)) as inputs:
        assert inputs.info() == trace_info


def test_every_row_of_every_table_streams_in_time_order(trace, trace_info):
    with rocpd_rs.open([trace]) as inputs:
        for table in rocpd_rs.EVENT_TABLES:
            reader = inputs.events(table)
            rows, last = 0, None
            for batch in reader:
                starts = batch.column("start").to_pylist()
                assert starts == sorted(starts)
                if starts:
                    assert last is None or last <= starts[0]
                    last = starts[-1]
                rows += batch.num_rows
            assert rows == trace_info["rows"][table], table
    assert sum(trace_info["rows"].values()) > 10_000


def test_columns_are_the_ones_asked_for_in_that_order(trace):
    with rocpd_rs.open(trace) as inputs:
        t = inputs.events("kernels", columns=["kernel_name", "end", "start", "grid_x"]).read_all()
        assert t.column_names == ["kernel_name", "end", "start", "grid_x"]
        assert t.num_rows > 0 and t.column("grid_x").null_count == 0
        full = inputs.events("kernel_dispatch").read_all()
        assert t.column("kernel_name") == full.column("kernel_name")
        # A JSON text column not asked for is not even built.
        assert "extdata" not in inputs.events("kernel_dispatch", columns=["start"]).schema.names
        with pytest.raises(rocpd_rs.UsageError, match="no column \"colour\""):
            inputs.events("kernel_dispatch", columns=["colour"])
        with pytest.raises(TypeError):
            inputs.events("kernel_dispatch", columns="start")


def _cli_rows(tmp_path, trace, *options):
    """Rows per table that `rocpd convert` writes with these options."""
    report = tmp_path / "report.json"
    cli("convert", "-q", "-i", str(trace), "-f", "parquet", "-d", str(tmp_path / "cli"), "--report", str(report), *options)
    import json

    return json.loads(report.read_text())["outputs"][0]["rows"]


@pytest.mark.parametrize(
    "kwargs,options",
    [
        ({"start": "10%", "end": "60%"}, ["--start", "10%", "--end", "60%"]),
        ({"start": "10%", "end": "60%", "inclusive": False}, ["--start", "10%", "--end", "60%", "--inclusive", "false"]),
        ({"start": "20%", "end": "30%", "keep_launches": True}, ["--start", "20%", "--end", "30%", "--keep-launches"]),
        ({"include": ["name=^[a-m]"], "exclude": "kind=copy"}, ["--include", "name=^[a-m]", "--exclude", "kind=copy"]),
        ({"exclude": "kind=api"}, ["--exclude", "kind=api"]),
    ],
)
def test_windows_and_filters_keep_what_the_cli_keeps(tmp_path, trace, kwargs, options):
    want = _cli_rows(tmp_path, trace, *options)
    with rocpd_rs.open(trace) as inputs:
        for table in rocpd_rs.EVENT_TABLES:
            got = sum(b.num_rows for b in inputs.events(table, **kwargs))
            assert got == want.get(table, 0), (table, kwargs)
    assert sum(want.values()) > 0


def test_removing_the_api_calls_clears_the_kernels_launch_marks_as_the_cli_does(tmp_path, trace):
    import pyarrow.parquet as pq

    _cli_rows(tmp_path, trace, "--exclude", "kind=api")
    want = pq.read_table(tmp_path / "cli" / "out_results.parquet" / "kernels", columns=["has_launcher", "flow_first_start"])
    with rocpd_rs.open(trace) as inputs:
        got = inputs.events("kernel_dispatch", columns=["has_launcher", "flow_first_start"], exclude="kind=api").read_all()
        kept = inputs.events("kernel_dispatch", columns=["has_launcher"]).read_all()
    assert got.num_rows == want.num_rows > 0
    for column in ("has_launcher", "flow_first_start"):
        assert got.column(column).null_count == want.column(column).null_count, column
    assert pa.compute.sum(got.column("has_launcher")).as_py() == pa.compute.sum(want.column("has_launcher")).as_py()
    # The check means something: without the filter the kernels do have launchers.
    assert pa.compute.sum(kept.column("has_launcher")).as_py() > pa.compute.sum(got.column("has_launcher")).as_py()


def test_a_window_in_ns_is_an_int(trace, trace_info):
    lo, hi = trace_info["time_span_ns"]["start"], trace_info["time_span_ns"]["end"]
    mid = lo + (hi - lo) // 2
    with rocpd_rs.open(trace) as inputs:
        t = inputs.events("region", columns=["start", "end"], start=lo, end=mid).read_all()
        assert t.num_rows > 0
        assert min(t.column("start").to_pylist()) >= lo and max(t.column("end").to_pylist()) <= mid
        with pytest.raises(TypeError):
            inputs.events("region", start=1.5)


def test_catalog_tables(trace, trace_info):
    with rocpd_rs.open(trace) as inputs:
        processes = inputs.catalog("processes")
        assert isinstance(processes, pa.Table)
        assert sorted(processes.column("pid").to_pylist()) == sorted(p["pid"] for p in trace_info["processes"])
        for name in rocpd_rs.CATALOG_TABLES:
            assert isinstance(inputs.catalog(name), pa.Table)
        assert inputs.catalog("agents").num_rows >= 2
        symbols = inputs.catalog("kernel_symbols")
        kernels = inputs.events("kernel_dispatch", columns=["kernel_id"]).read_all()
        assert set(kernels.column("kernel_id").to_pylist()) <= set(symbols.column("id").to_pylist())
        with pytest.raises(rocpd_rs.UsageError, match="no catalog table"):
            inputs.catalog("widgets")


def test_a_stream_is_consumed_once_and_outlives_its_inputs(trace, trace_info):
    native = rocpd_rs.open(trace)._handle.catalog("processes")
    native.__arrow_c_stream__()
    with pytest.raises(RuntimeError, match="already consumed"):
        native.__arrow_c_stream__()
    inputs = rocpd_rs.open(trace)
    reader = inputs.events("kernel_dispatch", columns=["start"])
    inputs.close()
    with pytest.raises(rocpd_rs.UsageError, match="closed"):
        inputs.info()
    assert sum(b.num_rows for b in reader) == trace_info["rows"]["kernel_dispatch"]


def test_rocprofv3_csv_and_json_inputs(tmp_path):
    csv_dir = REPO / "fixtures" / "rocprofv3-csv-llamacpp"
    json_dir = REPO / "fixtures" / "rocprofv3-json"
    for d in (csv_dir, json_dir):
        want = cli_json("info", "--json", "-i", str(d))["rows"]
        with rocpd_rs.open(d) as inputs:
            got = {t: sum(b.num_rows for b in inputs.events(t, columns=["start"])) for t in rocpd_rs.EVENT_TABLES}
        assert got == {t: want.get(t, 0) for t in rocpd_rs.EVENT_TABLES}, d
        assert sum(got.values()) > 0
