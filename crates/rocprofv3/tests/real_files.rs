//! Every real rocprofv3 CSV fixture imports, and the imported database holds one row per
//! input record (counted here independently with the csv crate) and reads back with our
//! RocPD reader.

mod common;

use std::collections::HashSet;
use std::path::PathBuf;

use common::*;

fn csv_fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in [
        "rocprofv3-csv-docs",
        "rocprofv3-csv-docs/historical",
        "rocprofv3-csv-llamacpp",
    ] {
        let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "csv"))
            .collect();
        v.sort();
        out.extend(v);
    }
    out
}

#[test]
fn every_real_csv_file_imports_with_one_row_per_record() {
    let files = csv_fixtures();
    assert!(files.len() >= 40, "{} fixture files", files.len());
    for path in files {
        let (header, recs) = csv_records(&path);
        let has = |c: &str| header.iter().any(|h| h == c);
        let n = recs.len() as u64;
        let imp = import_one(std::slice::from_ref(&path));
        imp.check_integrity();
        let c = imp.reader_counts();
        let total: u64 = c.values().sum();
        let name = path.display();
        let streamed = imp.stream_all();
        for (t, n) in &c {
            assert_eq!(
                streamed.get(t).copied().unwrap_or(0),
                *n,
                "{name}: streamed {t}"
            );
        }
        if has("counter_name") {
            let raw: i64 = imp.one("SELECT COUNT(*) FROM rocpd_pmc_event");
            assert_eq!(raw as u64, n, "{name}: pmc rows");
            let dispatch_col = header.iter().position(|h| h == "dispatch_id").unwrap();
            let dispatches: HashSet<&str> = recs.iter().map(|r| &r[dispatch_col]).collect();
            if has("start_timestamp") {
                assert_eq!(c["pmc_value"], n, "{name}: timed pmc values");
                assert_eq!(c["kernel_dispatch"], dispatches.len() as u64, "{name}");
            } else {
                // No time to place a dispatch at: values stay on events only.
                assert_eq!(c["pmc_value"], 0, "{name}");
                assert_eq!(c["kernel_dispatch"], 0, "{name}");
                let events: i64 = imp.one("SELECT COUNT(*) FROM rocpd_event");
                assert_eq!(events as u64, dispatches.len() as u64, "{name}");
            }
        } else if has("kernel_name") {
            assert_eq!(c["kernel_dispatch"], n, "{name}");
            assert_eq!(total, n, "{name}");
        } else if has("function") {
            let domain = header.iter().position(|h| h == "domain").unwrap();
            let markers = recs
                .iter()
                .filter(|r| r[domain].starts_with("MARKER"))
                .count() as u64;
            assert_eq!(c["region"] + c["marker"], n, "{name}");
            assert_eq!(c["marker"], markers, "{name}");
            assert_eq!(total, n, "{name}");
        } else if has("direction") {
            assert_eq!(c["memory_copy"], n, "{name}");
            assert_eq!(total, n, "{name}");
        } else if has("operation") {
            assert_eq!(c["memory_allocation"], n, "{name}");
            assert_eq!(total, n, "{name}");
        } else {
            // Stats and PC-sampling files: recognised, reported, not imported.
            assert_eq!(total, 0, "{name}");
            assert_eq!(imp.report.ignored.len(), 1, "{name}");
            assert!(
                imp.report.ignored[0].contains(&format!("{n} ")),
                "{name}: {:?}",
                imp.report.ignored
            );
        }
        assert_eq!(imp.report.skipped_rows, 0);
    }
}

#[test]
fn a_directory_groups_into_runs_by_prefix() {
    let runs = rocpd_rocprofv3::group_runs(&[fixtures().join("rocprofv3-csv-llamacpp")]).unwrap();
    let mut labels: Vec<String> = runs
        .iter()
        .map(|r| r.label.rsplit('/').next().unwrap().to_string())
        .collect();
    labels.sort();
    assert_eq!(
        labels,
        [
            "decode",
            "decode_fetch",
            "decode_stall",
            "prefill",
            "prefill_fetch",
            "prefill_stall"
        ]
    );
    let decode = runs.iter().find(|r| r.label.ends_with("/decode")).unwrap();
    assert_eq!(decode.files.len(), 2);
    let imp = import_run(decode, &Default::default()).unwrap();
    imp.check_integrity();
    let c = imp.reader_counts();
    assert_eq!(c["kernel_dispatch"], 144);
    assert_eq!(c["region"], 920);
    // The pid comes from the API trace's Process_Id (the prefix is not a number) and
    // applies to the kernels too.
    let pids: i64 = imp.one("SELECT COUNT(DISTINCT pid) FROM rocpd_kernel_dispatch");
    assert_eq!(pids, 1);
    let pid: i64 = imp.one("SELECT pid FROM rocpd_kernel_dispatch LIMIT 1");
    let api_pid: i64 = imp.one("SELECT pid FROM rocpd_region LIMIT 1");
    assert_eq!(pid, api_pid);
    // Same input, same guid.
    let again = import_run(decode, &Default::default()).unwrap();
    assert_eq!(again.report.guid, imp.report.guid);
}

#[test]
fn the_docs_directory_walks_and_imports() {
    let all = import_all(&[fixtures().join("rocprofv3-csv-docs")]);
    assert!(all.len() > 20);
    for imp in &all {
        imp.check_integrity();
    }
}
