"""convert() and summary() against the CLI; errors; the stubs."""

import filecmp
import json
import os
import pathlib
import re

import pytest

import rocpd_rs
from conftest import REPO, cli, cli_json


# A Parquet run's id (in its file names) differs from run to run by design.
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{16}")


def named(d: pathlib.Path):
    """The files under `d` as (name with run ids as <run>, path), sorted by name."""
    return sorted((RUN_ID.sub("<run>", str(p.relative_to(d))), p) for p in d.rglob("*") if p.is_file())


def tree(d: pathlib.Path):
    return [n for n, _ in named(d)]


def same_files(a: pathlib.Path, b: pathlib.Path):
    """The files of two output trees pair up by name (run ids aside) and have the same
    bytes, except a Parquet run's description and summary, which record its id and time."""
    fa, fb = named(a), named(b)
    assert [n for n, _ in fa] == [n for n, _ in fb]
    for (name, pa), (_, pb) in zip(fa, fb):
        if "_runs/" in name or name.endswith("_metadata.json"):
            continue
        assert filecmp.cmp(pa, pb, shallow=False), name


@pytest.mark.parametrize(
    "formats,options,kwargs",
    [
        (["pftrace", "otf2", "csv", "parquet", "rocpd"], [], {}),
        (["pftrace"], ["--split-by", "time", "--split-count", "3", "--group-by-queue"], {"split_by": "time", "split_count": 3, "group_by_queue": True}),
        (["parquet"], ["--partition-by", "node,pid", "--row-group-rows", "1000"], {"partition_by": ["node", "pid"], "row_group_rows": 1000}),
        (["csv"], ["--stats", "--start", "25%", "--exclude", "kind=copy"], {"stats": True, "start": "25%", "exclude": "kind=copy"}),
        (["pftrace"], ["--split-by", "process", "--no-annotations", "--agent-index-value", "type-relative"], {"split_by": "process", "annotations": False, "agent_index_value": "type-relative"}),
        (["pftrace", "csv"], ["--kernel-rename", "--annotate-args", "--agent-index-value", "absolute"], {"kernel_rename": True, "annotate_args": True, "agent_index_value": "absolute"}),
        (["pftrace"], ["--split-by", "time", "--split-duration", "40000000ns"], {"split_by": "time", "split_duration": 40_000_000}),
        (["pftrace"], ["--max-file-size", "60000"], {"max_file_size": 60_000}),
        (["parquet"], ["--max-rows-per-file", "500", "--start", "10%", "--end", "50%", "--keep-launches", "--inclusive", "false"], {"max_rows_per_file": 500, "start": "10%", "end": "50%", "keep_launches": True, "inclusive": False}),
    ],
)
def test_convert_writes_what_the_cli_writes(tmp_path, trace, formats, options, kwargs):
    a, b = tmp_path / "cli", tmp_path / "py"
    cli("convert", "-q", "-i", str(trace), "-f", *formats, "-o", "job", "-d", str(a), *options)
    report = rocpd_rs.convert(trace, formats, b, name="job", **kwargs)
    files = tree(a)
    assert files
    same_files(a, b)
    written = {pathlib.Path(o["path"]).name for o in report["outputs"]}
    assert written and all(any(f.startswith(w) or w in f for f in files) for w in written)


def test_the_report_is_the_clis_report(tmp_path, trace):
    cli("convert", "-q", "-i", str(trace), "-f", "pftrace", "-d", str(tmp_path / "a"), "--report", str(tmp_path / "a.json"))
    got = rocpd_rs.convert(trace, "pftrace", tmp_path / "b", report=tmp_path / "b.json")
    want = json.loads((tmp_path / "a.json").read_text())
    assert json.loads((tmp_path / "b.json").read_text()) == got
    for r in (got, want):
        assert r.pop("seconds") > 0
        for o in r["outputs"]:
            o["path"] = pathlib.Path(o["path"]).name
    assert got == want


def test_summary_tables_equal_the_clis_json(tmp_path, trace):
    cli("summary", "-q", "-i", str(trace), "--summary-by-rank", "--domain-summary", "-f", "json", "-o", "s", "-d", str(tmp_path))
    want = json.loads((tmp_path / "s_summary.json").read_text())
    got = rocpd_rs.summary(trace, by_rank=True, domain_summary=True)
    views = want if isinstance(want, list) else want["views"]
    assert [v["title"] if "title" in v else _title(v) for v in views] == list(got)
    columns = {"Name": "name", "Calls": "calls", "DURATION (nsec)": "total_ns", "AVERAGE (nsec)": "average_ns",
               "PERCENT (INC)": "percent", "MIN (nsec)": "min_ns", "MAX (nsec)": "max_ns", "STD_DEV": "stddev_ns",
               "ProcessID": "pid", "Hostname": "hostname"}
    headers = ["Name", "Calls", "DURATION (nsec)", "AVERAGE (nsec)", "PERCENT (INC)", "MIN (nsec)", "MAX (nsec)", "STD_DEV"]
    for v in views:
        table = got[_title(v)]
        assert table.column_names == (["ProcessID", "Hostname"] if v["by_rank"] else []) + headers
        assert table.num_rows == len(v["rows"]) > 0
        for amd in table.column_names:
            key = columns[amd]
            assert table.column(amd).to_pylist() == [r.get(key) for r in v["rows"]], (v["name"], amd)
    assert "KERNELS_SUMMARY" in got and "KERNELS_SUMMARY_BY_RANK" in got and "DOMAIN_SUMMARY" in got


def _title(v):
    return v["name"] + ("_SUMMARY_BY_RANK" if v["by_rank"] else "_SUMMARY")


def test_kernel_totals_through_polars_and_duckdb_equal_the_summary(trace):
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    summary = rocpd_rs.summary(trace)["KERNELS_SUMMARY"]
    want = dict(zip(summary.column("Name").to_pylist(), summary.column("DURATION (nsec)").to_pylist()))
    assert len(want) > 3
    with rocpd_rs.open(trace) as inputs:
        frame = pl.from_arrow(inputs.events("kernel_dispatch", columns=["kernel_name", "start", "end"]))
        by_polars = frame.group_by("kernel_name").agg((pl.col("end") - pl.col("start")).sum().alias("total"))
        assert dict(zip(by_polars["kernel_name"], by_polars["total"])) == want
        reader = inputs.events("kernel_dispatch", columns=["kernel_name", "start", "end"])
        rows = duckdb.sql('select kernel_name, sum("end" - start)::ubigint from reader group by 1').fetchall()
        assert dict(rows) == want


def test_bad_input_raises_the_clis_message_and_writes_nothing(tmp_path):
    bad = tmp_path / "results.db"
    bad.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84 + b"garbage" * 100)
    out = tmp_path / "out"
    cli_run = cli("convert", "-q", "-i", str(bad), "-f", "pftrace", "-d", str(out), check=False)
    assert cli_run.returncode == 1
    want = cli_run.stderr.strip().removeprefix("rocpd: error: ")
    with pytest.raises(rocpd_rs.Error) as caught:
        rocpd_rs.convert(bad, "pftrace", out)
    assert str(caught.value) == want and str(bad) in want
    assert not isinstance(caught.value, ValueError)
    assert not out.exists() or not any(out.iterdir())
    with pytest.raises(rocpd_rs.Error, match="missing.db"):
        rocpd_rs.open(tmp_path / "missing.db")


def test_bad_arguments_raise_value_and_type_errors(tmp_path, trace):
    with pytest.raises(rocpd_rs.UsageError, match="unknown output format"):
        rocpd_rs.convert(trace, "svg", tmp_path)
    with pytest.raises(ValueError, match="--split-by time needs"):
        rocpd_rs.convert(trace, "pftrace", tmp_path, split_by="time")
    with pytest.raises(ValueError, match="--stats"):
        rocpd_rs.convert(trace, "pftrace", tmp_path, stats=True)
    with pytest.raises(ValueError, match="no event table"):
        rocpd_rs.open(trace).events("widgets")
    with pytest.raises(ValueError):
        rocpd_rs.open(trace).events("region", include="colour=red")
    with pytest.raises(rocpd_rs.UsageError, match="--start and --start-marker cannot both be given"):
        rocpd_rs.open(trace).events("region", start="10%", start_marker="m")
    with pytest.raises(ValueError, match="agent_index_value"):
        rocpd_rs.convert(trace, "pftrace", tmp_path, agent_index_value="sideways")
    with pytest.raises(TypeError):
        rocpd_rs.convert(trace, "pftrace", tmp_path, colour="red")
    with pytest.raises(TypeError):
        rocpd_rs.open(42)
    with pytest.raises(TypeError):
        rocpd_rs.open(trace).events(3)
    with pytest.raises(rocpd_rs.UsageError, match="no input files"):
        rocpd_rs.open([])
    assert not any(tmp_path.iterdir()), "nothing is written for a refused request"


def test_an_output_may_not_replace_an_input(tmp_path, trace):
    db = sorted(trace.rglob("*.db"))[0]
    before = db.read_bytes()
    with pytest.raises(rocpd_rs.Error, match="input"):
        rocpd_rs.convert(db, "rocpd", db.parent, name=db.name.removesuffix("_results.db"))
    assert db.read_bytes() == before


def test_walk_warnings_become_python_warnings(tmp_path, trace):
    d = tmp_path / "run"
    d.mkdir()
    db = sorted(trace.rglob("*.db"))[0]
    (d / db.name).write_bytes(db.read_bytes())
    (d / "123_results.db").write_bytes(b"")
    want = [line.removeprefix("rocpd: warning: ") for line in cli("info", "-i", str(d)).stderr.splitlines() if "warning" in line]
    assert len(want) == 1 and "123_results.db" in want[0]
    with pytest.warns(rocpd_rs.RocpdWarning) as caught:
        rocpd_rs.open(d).close()
    assert [str(w.message) for w in caught] == want


def test_the_stubs_name_what_the_module_has():
    stubs = (REPO / "crates" / "python" / "python" / "rocpd_rs" / "_native.pyi").read_text()
    public = {n for n in dir(rocpd_rs._native) if not n.startswith("_")}
    assert public
    for name in public:
        assert f"def {name}(" in stubs or f"class {name}" in stubs, name
    assert os.path.exists(REPO / "crates" / "python" / "python" / "rocpd_rs" / "py.typed")


def test_append_adds_runs_and_refuses_an_input_twice(tmp_path, trace):
    dbs = sorted(pathlib.Path(trace).glob("*.db"))
    assert len(dbs) >= 2
    lake = tmp_path / "lake"
    rocpd_rs.convert(dbs[0], "parquet", lake, name="l", append=True, table_format="delta")
    rocpd_rs.convert(dbs[1:], "parquet", lake, name="l", append=True, table_format="delta")
    ds = lake / "l_results.parquet"
    assert len(list((ds / "_runs").glob("*.json"))) == 2
    assert len(list((ds / "kernels" / "_delta_log").glob("*.json"))) == 2
    want = cli_json("info", "--json", "-i", *map(str, dbs))["rows"]["kernel_dispatch"]
    summary = json.loads((ds / "_metadata.json").read_text())
    assert summary["tables"]["kernels"]["rows"] == want
    before = tree(ds)
    with pytest.raises(rocpd_rs.Error, match="already in the dataset"):
        rocpd_rs.convert(dbs[0], "parquet", lake, name="l", append=True, table_format="delta")
    with pytest.raises(rocpd_rs.UsageError, match="table format is delta"):
        rocpd_rs.convert(dbs[0], "parquet", lake, name="l", append=True)
    assert tree(ds) == before
    with pytest.raises(rocpd_rs.UsageError, match="table_format"):
        rocpd_rs.convert(dbs[0], "parquet", tmp_path / "x", table_format="iceberg")
