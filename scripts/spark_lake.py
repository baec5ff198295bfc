#!/usr/bin/env python3
"""A Spark job that fills one rocpd Parquet lake from many profiles, then reads it.

Spark distributes the input databases over its executors; each task runs
``rocpd convert --append`` on its input, so every rank lands in the same dataset at
the same time. The driver then reads the lake with ``spark.read.parquet`` (hive
partitions discovered) and checks it: rows per table equal ``rocpd info`` on the
inputs, and each kernel's total time equals ``rocpd summary``.

    usage: spark_lake.py --rocpd BIN --lake DIR [--master local[2]] INPUT.db...

The lake is ``DIR/<name>_results.parquet`` (``--name``, default ``lake``). Run it again
with other inputs and they are appended; an input already in the lake is refused.
On a cluster, give ``--master`` (or run it with spark-submit) and put ``rocpd`` and the
lake on storage every executor sees.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

TABLES = {
    "kernels": "kernel_dispatch",
    "api_calls": "region",
    "markers": "marker",
    "samples": "sample",
    "memory_copies": "memory_copy",
    "memory_allocations": "memory_allocation",
    "pmc_values": "pmc_value",
}


def convert_one(rocpd, lake_dir, name, path):
    """One Spark task: append one input to the lake. Returns (input, exit code, stderr)."""
    run = subprocess.run(
        [rocpd, "convert", "-q", "-i", path, "-f", "parquet", "--append",
         "--partition-by", "node,pid", "-o", name, "-d", lake_dir],
        capture_output=True, text=True)
    return path, run.returncode, run.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rocpd", required=True, help="the rocpd binary (on every executor)")
    ap.add_argument("--lake", required=True, help="directory that holds the lake")
    ap.add_argument("--name", default="lake")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("inputs", nargs="+")
    a = ap.parse_args()
    rocpd = os.path.abspath(a.rocpd)
    lake_dir = os.path.abspath(a.lake)
    inputs = [os.path.abspath(p) for p in a.inputs]
    dataset = os.path.join(lake_dir, a.name + "_results.parquet")

    from pyspark.sql import SparkSession, functions as F
    spark = (SparkSession.builder.master(a.master).appName("rocpd-lake")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        name = a.name
        results = (spark.sparkContext.parallelize(inputs, len(inputs))
                   .map(lambda p: convert_one(rocpd, lake_dir, name, p)).collect())
        failed = [(p, rc, err) for p, rc, err in results if rc != 0]
        for p, rc, err in failed:
            print("convert failed (exit %d) for %s: %s" % (rc, p, err), file=sys.stderr)
        if failed:
            return 1
        print("spark: %d tasks appended their input to %s" % (len(results), dataset))

        # What the inputs hold, by rocpd itself.
        info = json.loads(subprocess.run([rocpd, "info", "--json", "-i", *inputs],
                                         check=True, capture_output=True, text=True).stdout)
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([rocpd, "summary", "-q", "-i", *inputs, "-f", "json", "-d", out],
                           check=True)
            with open(os.path.join(out, "summary.json")) as f:
                summary = json.load(f)
        want_rows = info["rows"]
        bad = []
        for table, model in TABLES.items():
            path = os.path.join(dataset, table)
            got = spark.read.parquet(path).count() if os.path.isdir(path) else 0
            want = want_rows.get(model, 0)
            if got != want:
                bad.append("%s: spark counts %d rows, rocpd info %d" % (table, got, want))
        kernels = spark.read.parquet(os.path.join(dataset, "kernels"))
        for col in ("node", "pid"):
            if col not in kernels.columns:
                bad.append("hive partition column %s not discovered" % col)
        spark_totals = {r["name"]: int(r["total"]) for r in
                        kernels.groupBy("name").agg(F.sum("duration_ns").alias("total")).collect()}
        rocpd_totals = {r["name"]: int(r["total_ns"]) for v in summary["views"]
                        if v["name"] == "KERNELS" for r in v["rows"]}
        if spark_totals != rocpd_totals:
            diff = sorted(set(spark_totals.items()) ^ set(rocpd_totals.items()))[:5]
            bad.append("per-kernel total time differs from rocpd summary: %s" % diff)
        if bad:
            print("\n".join(bad), file=sys.stderr)
            return 1
        print("spark: rows per table equal rocpd info (%d kernels in %d partitions); "
              "total time of %d kernels equals rocpd summary"
              % (want_rows.get("kernel_dispatch", 0),
                 kernels.select("node", "pid").distinct().count(), len(spark_totals)))
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
