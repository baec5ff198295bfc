"""Shared fixtures: the `rocpd` and `rocpd-gen` binaries of this checkout, and generated
traces. The CLI is the reference the package is compared with, so it is the same build's.

ROCPD_BIN_DIR names the directory of both binaries (CI sets it to target/release);
otherwise target/release, then target/debug, are used if they hold both, and failing
that `cargo build --release` makes them.
"""

import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


def _bin_dir() -> pathlib.Path:
    env = os.environ.get("ROCPD_BIN_DIR")
    if env:
        return pathlib.Path(env)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    for profile in ("release", "debug"):
        d = target / profile
        if (d / "rocpd").is_file() and (d / "rocpd-gen").is_file():
            return d
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "rocpd-cli", "-p", "rocpd-gen"],
        cwd=REPO,
        check=True,
    )
    return target / "release"


BIN = _bin_dir()
ROCPD = str(BIN / "rocpd")
ROCPD_GEN = str(BIN / "rocpd-gen")


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the CLI; returns the finished process (text output)."""
    return subprocess.run([ROCPD, *args], capture_output=True, text=True, check=check)


def cli_json(*args: str):
    return json.loads(cli(*args).stdout)


def generate(out: pathlib.Path, **opts) -> pathlib.Path:
    """Generated databases under `out` (rocpd-gen's flags as keywords)."""
    flags = []
    for k, v in opts.items():
        flag = "--" + k.replace("_", "-")
        flags += [flag] if v is True else [flag, str(v)]
    subprocess.run([ROCPD_GEN, "--out", str(out), *flags], check=True, capture_output=True)
    return out


@pytest.fixture(scope="session")
def trace(tmp_path_factory) -> pathlib.Path:
    """Three processes on two nodes with odd names, about 40k events."""
    return generate(tmp_path_factory.mktemp("trace"), seed=5, nodes=2, processes=3, gpus=2, iterations=130)


@pytest.fixture(scope="session")
def trace_info(trace):
    return cli_json("info", "--json", "-i", str(trace))
