//! A data lake many jobs write at once: eight `rocpd convert --append` processes, one
//! generated rank each, started together into one dataset. Every run must succeed, every
//! row of every input must be there exactly once, no part file may be shared or torn, and
//! each table's Delta log must hold one commit per run.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::*;

#[test]
fn eight_concurrent_appends_keep_every_row_once() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = generate(&tmp.path().join("gen"), 21, 8, 40);
    assert_eq!(ranks.len(), 8);
    let lake = tmp.path().join("lake");
    let children: Vec<_> = ranks
        .iter()
        .map(|rank| {
            Command::new(env!("CARGO_BIN_EXE_rocpd"))
                .args([
                    "convert",
                    "-q",
                    "-f",
                    "parquet",
                    "--append",
                    "--table-format",
                    "delta",
                ])
                .args(["--partition-by", "node", "-o", "job", "-d"])
                .arg(&lake)
                .arg("-i")
                .arg(rank)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start rocpd")
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let ds = lake.join("job_results.parquet");
    let want = info_rows(&ranks);
    for (dir, model) in [
        ("kernels", "kernel_dispatch"),
        ("api_calls", "region"),
        ("markers", "marker"),
        ("samples", "sample"),
        ("memory_copies", "memory_copy"),
        ("memory_allocations", "memory_allocation"),
        ("pmc_values", "pmc_value"),
    ] {
        assert_eq!(
            parquet_rows(&ds.join(dir)),
            want.get(model).copied().unwrap_or(0),
            "{dir}"
        );
    }
    assert_eq!(parquet_rows(&ds.join("sources")), 8);
    assert_eq!(parquet_rows(&ds.join("processes")), 8);
    // Eight runs, eight versions of each log, each file listed once and present.
    let runs = std::fs::read_dir(ds.join("_runs")).unwrap().count();
    assert_eq!(runs, 8);
    let mut names = BTreeSet::new();
    for f in parquet_files(&ds) {
        assert!(names.insert(f.clone()));
    }
    let kernel_log = ds.join("kernels/_delta_log");
    let versions: BTreeSet<String> = std::fs::read_dir(&kernel_log)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expect: BTreeSet<String> = (0..8).map(|v| format!("{v:020}.json")).collect();
    assert_eq!(versions, expect);
    let mut added = BTreeSet::new();
    for v in &versions {
        for line in std::fs::read_to_string(kernel_log.join(v)).unwrap().lines() {
            let a: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(p) = a["add"]["path"].as_str() {
                assert!(added.insert(p.to_string()), "{p} added twice");
                assert!(ds.join("kernels").join(p).is_file(), "{p}");
            }
        }
    }
    assert_eq!(added.len(), parquet_files(&ds.join("kernels")).len());
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ds.join("_metadata.json")).unwrap()).unwrap();
    assert_eq!(summary["runs"].as_array().unwrap().len(), 8);
    assert_eq!(
        summary["tables"]["kernels"]["rows"].as_u64().unwrap(),
        want["kernel_dispatch"]
    );
}

#[test]
fn append_goes_with_parquet_only() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("gen"), 3, 1, 5);
    let out = tmp.path().join("out");
    let o = rocpd(&[
        "convert",
        "-f",
        "pftrace",
        "--append",
        "-d",
        &out.display().to_string(),
        "-i",
        &inputs[0].display().to_string(),
    ]);
    // A usage error of the run (exit 1), not of the command line's syntax (2).
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("go with -f parquet"), "{}", stderr(&o));
    assert!(!out.exists());
}
