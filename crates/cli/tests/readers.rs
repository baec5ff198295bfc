//! rocprofv3 CSV and JSON inputs and the OTF2 output, end to end through the binary.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn run_ok(args: &[&str]) {
    let o = rocpd(args);
    assert!(o.status.success(), "rocpd {args:?}: {}", stderr(&o));
}

#[test]
fn the_real_rocprofv3_json_converts_with_every_dispatch() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&[
        "convert",
        "-q",
        "-i",
        "../../fixtures/rocprofv3-json",
        "-f",
        "pftrace",
        "-d",
        out.to_str().unwrap(),
    ]);
    let d = decode(&out.join("out_results.pftrace"));
    assert_eq!(d.slices_by_category["kernel_dispatch"], 43_915);
}

#[test]
fn real_rocprofv3_csv_sets_convert_and_info_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&[
        "convert",
        "-q",
        "-i",
        "../../fixtures/rocprofv3-csv-docs",
        "-f",
        "pftrace",
        "-d",
        out.to_str().unwrap(),
    ]);
    let d = decode(&out.join("out_results.pftrace"));
    for cat in ["kernel_dispatch", "memory_copy", "hip_api", "marker_api"] {
        assert!(
            d.slices_by_category.get(cat).copied().unwrap_or(0) > 0,
            "{cat} missing: {:?}",
            d.slices_by_category
        );
    }
    let o = rocpd(&["info", "--json", "-i", "../../fixtures/rocprofv3-csv-docs"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["rows"]["kernel_dispatch"].as_u64(),
        d.slices_by_category.get("kernel_dispatch").copied()
    );
}

#[test]
fn a_bad_csv_row_names_file_and_line_unless_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    std::fs::create_dir(&dir).unwrap();
    let csv = dir.join("1234_kernel_trace.csv");
    std::fs::copy("../../fixtures/rocprofv3-csv-docs/kernel_trace.csv", &csv).unwrap();
    let mut text = std::fs::read_to_string(&csv).unwrap();
    text.push_str("\"KERNEL_DISPATCH\",1,2\n");
    std::fs::write(&csv, text.as_bytes()).unwrap();
    let line = text.lines().count();
    let out = tmp.path().join("out");
    let o = rocpd(&[
        "convert",
        "-i",
        dir.to_str().unwrap(),
        "-f",
        "pftrace",
        "-d",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("1234_kernel_trace.csv") && e.contains(&format!("line {line}")),
        "{e}"
    );
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
    let report = tmp.path().join("report.json");
    run_ok(&[
        "convert",
        "-q",
        "-i",
        dir.to_str().unwrap(),
        "-f",
        "pftrace",
        "-d",
        out.to_str().unwrap(),
        "--skip-bad-rows",
        "--report",
        report.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap();
    assert_eq!(v["dropped"][0]["rows"]["input_rows"], 1, "{v}");
}

fn anchors(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "otf2"))
        .collect();
    v.sort();
    v
}

#[test]
fn otf2_archives_are_written_whole_and_the_reference_reader_accepts_them() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 51, 2, 6);
    let out = tmp.path().join("out");
    let mut args: Vec<String> = vec![
        "convert".into(),
        "-q".into(),
        "-f".into(),
        "otf2".into(),
        "-d".into(),
        out.display().to_string(),
        "-i".into(),
    ];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run_ok(&refs);
    let a = anchors(&out);
    assert_eq!(a.len(), 1);
    assert!(out.join("out_results.def").exists() && out.join("out_results").is_dir());
    let mut split = refs.clone();
    let split_dir = tmp.path().join("split");
    let s = split_dir.display().to_string();
    split[5] = &s;
    split.extend(["--split-by", "process"]);
    run_ok(&split);
    assert_eq!(anchors(&split_dir).len(), 2);
    // The reference reader, where it is installed (CI installs Debian's otf2-tools).
    if std::process::Command::new("otf2-print")
        .arg("--help")
        .output()
        .is_ok()
    {
        for anchor in a.iter().chain(&anchors(&split_dir)) {
            let o = std::process::Command::new("otf2-print")
                .args(["--silent", "-Werror"])
                .arg(anchor)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "otf2-print {}: {}",
                anchor.display(),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    } else {
        eprintln!("note: otf2-print not installed; archive structure checked by the OTF2 crate's own tests");
    }
}

#[test]
fn the_same_trace_as_rocpd_csv_and_json_converts_to_the_same_slices() {
    let tmp = tempfile::tempdir().unwrap();
    let dbs = generate(&tmp.path().join("in"), 52, 2, 8);
    let csv = tmp.path().join("csv");
    for db in &dbs {
        rocpd_gen::export_csv(db, &csv).unwrap();
    }
    let from_db = decode(&convert(&dbs, &tmp.path().join("a"), &[]));
    let from_csv = decode(&convert(
        std::slice::from_ref(&csv),
        &tmp.path().join("b"),
        &[],
    ));
    // Every slice (API calls, markers, kernels, copies, allocations) is the same, with the
    // same category, name and start; CSV has no place for samples, so instants are left out.
    assert_eq!(from_db.slices_by_category, from_csv.slices_by_category);
    let instant_cats: std::collections::BTreeSet<&String> =
        from_db.instants_by_category.keys().collect();
    let slices = |d: &Decoded| -> Vec<(String, String, u64)> {
        let mut v: Vec<_> = d
            .events
            .iter()
            .filter(|e| d.slices_by_category.contains_key(&e.0) && !instant_cats.contains(&e.0))
            .cloned()
            .collect();
        v.sort();
        v
    };
    let (a, b) = (slices(&from_db), slices(&from_csv));
    let only_a: Vec<_> = a.iter().filter(|x| !b.contains(x)).take(5).collect();
    let only_b: Vec<_> = b.iter().filter(|x| !a.contains(x)).take(5).collect();
    assert!(
        a == b,
        "slices differ between RocPD and CSV: {only_a:?} vs {only_b:?}"
    );
    assert!(from_csv.flows > 0);
}

#[test]
fn proton_trees_and_traces_convert_with_one_slice_per_node_or_event() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let tree = "../../fixtures/proton/real_gpu/triton_lang_triton_matmul_b200.hatchet";
    run_ok(&[
        "convert",
        "-q",
        "-i",
        tree,
        "-f",
        "pftrace",
        "-d",
        out.to_str().unwrap(),
    ]);
    let d = decode(&out.join("out_results.pftrace"));
    // Count the tree's nodes other than ROOT independently of the importer.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tree).unwrap()).unwrap();
    let mut stack = vec![&v[0]];
    let mut nodes = 0u64;
    while let Some(n) = stack.pop() {
        if n["frame"]["name"] != "ROOT" {
            nodes += 1;
        }
        stack.extend(n["children"].as_array().into_iter().flatten());
    }
    assert_eq!(d.slices_by_category.values().sum::<u64>(), nodes);
    assert!(
        d.threads
            .iter()
            .any(|(_, _, n)| n.contains("aggregated, synthetic time")),
        "{:?}",
        d.threads
    );
    // A whole directory of Proton files of every version converts.
    let all = tmp.path().join("all");
    run_ok(&[
        "convert",
        "-q",
        "-i",
        "../../fixtures/proton",
        "-f",
        "pftrace",
        "-d",
        all.to_str().unwrap(),
    ]);
    decode(&all.join("out_results.pftrace"));
}
