#!/usr/bin/env python3
"""Benchmark of the Python package: events streamed into pyarrow, against the CLI.

For one generated database of about 1M and one of about 3M events it measures, each in a
process of its own (time and peak RSS of that process):

  baseline  `rocpd convert -f parquet` of the database (the CLI's db→parquet)
  tables    rocpd_rs: every kernel dispatch and API call (tables `kernel_dispatch` and
            `region`) read into pyarrow.Tables (`read_all`)
  stream    the same rows consumed one batch at a time (nothing kept)

and prints events/s, seconds, peak RSS and the ratio to the baseline measured in the
same run. Run it with a Python that has rocpd_rs installed (scripts/python_tests.sh
leaves one in target/python-venv) after `cargo build --release -p rocpd-cli -p rocpd-gen`:

    target/python-venv/bin/python benches/python_stream.py [--quick] [--runs N]

--quick uses 0.1M and 0.3M events.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(os.environ.get("ROCPD_BIN_DIR", REPO / "target" / "release"))

CHILD = r"""
import json, resource, sys, time
import rocpd_rs
mode, db = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
rows = 0
with rocpd_rs.open(db) as inputs:
    for table in ("kernel_dispatch", "region"):
        reader = inputs.events(table)
        if mode == "tables":
            t = reader.read_all()
            rows += t.num_rows
            del t
        else:
            for batch in reader:
                rows += batch.num_rows
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rows": rows, "seconds": seconds, "peak_mib": peak}))
"""


def timed(cmd):
    """Runs `cmd`; returns (seconds, peak RSS MiB of that child, stdout)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(p.pid, 0)
    seconds = time.perf_counter() - t0
    out, err = p.stdout.read(), p.stderr.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {err}")
    return seconds, usage.ru_maxrss / 1024, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=2, help="runs per case; the best is shown")
    args = ap.parse_args()
    import rocpd_rs  # noqa: F401  (fail early without the package)

    sizes = [("0.1M", 1000), ("0.3M", 3000)] if args.quick else [("1M", 10000), ("3M", 30000)]
    print(f"rocpd_rs {rocpd_rs.__version__}, {os.cpu_count()} cores, best of {args.runs}")
    print(f"{'case':<6} {'mode':<9} {'events':>9} {'seconds':>8} {'events/s':>10} {'peak MiB':>9} {'x baseline':>10}")
    with tempfile.TemporaryDirectory(prefix="rocpd-pybench-") as tmp:
        tmp = pathlib.Path(tmp)
        for name, iterations in sizes:
            gen = tmp / name
            subprocess.run(
                [str(BIN / "rocpd-gen"), "--out", str(gen), "--seed", "1", "--processes", "1", "--iterations", str(iterations)],
                check=True,
                capture_output=True,
            )
            db = str(next(gen.rglob("*.db")))
            info = json.loads(subprocess.run([str(BIN / "rocpd"), "info", "--json", "-i", db], capture_output=True, text=True, check=True).stdout)
            streamed = info["rows"]["kernel_dispatch"] + info["rows"]["region"]
            total = sum(info["rows"].values())
            best = {}
            for _ in range(args.runs):
                out = tmp / "out"
                s, peak, _ = timed([str(BIN / "rocpd"), "convert", "-q", "-i", db, "-f", "parquet", "-d", str(out)])
                subprocess.run(["rm", "-rf", str(out)], check=True)
                best["baseline"] = min(best.get("baseline", (s, peak)), (s, peak))
                for mode in ("tables", "stream"):
                    s, peak, text = timed([sys.executable, "-c", CHILD, mode, db])
                    got = json.loads(text)
                    if got["rows"] != streamed:
                        sys.exit(f"{mode}: {got['rows']} rows, rocpd info counts {streamed}")
                    best[mode] = min(best.get(mode, (s, peak)), (s, peak))
            base = best["baseline"][0]
            for mode, events in (("baseline", total), ("tables", streamed), ("stream", streamed)):
                s, peak = best[mode]
                print(f"{name:<6} {mode:<9} {events:>9} {s:>8.2f} {events / s:>10.0f} {peak:>9.1f} {s / base:>10.2f}")


if __name__ == "__main__":
    main()
