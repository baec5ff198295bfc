"""What a long call does: it releases the GIL, stops on Ctrl-C leaving nothing behind,
and streams in memory that does not grow with the trace."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import rocpd_rs
from conftest import generate


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory):
    """One process, about 600k events: a conversion of a second or more."""
    return generate(tmp_path_factory.mktemp("long"), seed=3, processes=1, iterations=6000, no_odd_names=True)


def test_the_gil_is_released_while_rust_works(tmp_path, long_trace):
    span = {}

    def run():
        span["start"] = time.monotonic()
        rocpd_rs.convert(long_trace, "pftrace", tmp_path, threads=1)
        span["end"] = time.monotonic()

    worker = threading.Thread(target=run)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.monotonic())
        time.sleep(0.001)
    worker.join()
    inside = [t for t in ticks if span["start"] + 0.05 < t < span["end"] - 0.05]
    assert span["end"] - span["start"] > 0.3
    # Held, the GIL would leave this thread no tick until the conversion ends.
    assert len(inside) > 50, (len(inside), span)


CHILD = textwrap.dedent(
    """
    import sys, rocpd_rs
    print("started", flush=True)
    try:
        rocpd_rs.convert(sys.argv[1], ["pftrace", "parquet", "otf2"], sys.argv[2], threads=1)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(3)
    print("finished", flush=True)
    """
)


def test_ctrl_c_stops_a_conversion_and_leaves_nothing(tmp_path, long_trace):
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(long_trace), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout.readline().strip() == "started"
    # Wait until the conversion is writing (its temporary outputs exist), then interrupt.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (out.exists() and any(out.iterdir())):
        time.sleep(0.01)
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 3, (stdout, stderr)
    assert "interrupted" in stdout
    assert not out.exists() or list(out.iterdir()) == [], list(out.iterdir())
    assert list(tmp.iterdir()) == []


MEASURE = textwrap.dedent(
    """
    import json, resource, sys, rocpd_rs
    rows = 0
    with rocpd_rs.open(sys.argv[1]) as inputs:
        for table in ("kernel_dispatch", "region"):
            for batch in inputs.events(table, threads=2):
                rows += batch.num_rows
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps({"rows": rows, "peak_mib": peak}))
    """
)


def test_memory_does_not_grow_with_the_trace(tmp_path):
    peaks = {}
    for iterations in (1500, 6000):
        d = generate(tmp_path / str(iterations), seed=9, processes=1, iterations=iterations, no_odd_names=True)
        run = subprocess.run([sys.executable, "-c", MEASURE, str(d)], capture_output=True, text=True, check=True)
        peaks[iterations] = json.loads(run.stdout)
    small, large = peaks[1500], peaks[6000]
    assert large["rows"] > 3.5 * small["rows"]
    # Four times the events, the same memory (within 15% or 8 MiB for noise).
    assert large["peak_mib"] <= max(small["peak_mib"] * 1.15, small["peak_mib"] + 8), peaks
