//! Bad input: every error names the file and the line, byte offset or JSON path;
//! `skip_bad_rows` skips and counts instead.

mod common;

use std::io::Write;

use common::*;
use rocpd_rocprofv3::{group_runs, import, ImportOptions, Run, RunSource};

const API_HEADER: &str =
    "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n";

fn skip() -> ImportOptions {
    ImportOptions {
        skip_bad_rows: true,
    }
}

#[test]
fn wrong_field_count_names_file_and_line() {
    let content = format!(
        "{API_HEADER}\"HIP_RUNTIME_API_EXT\",\"hipMalloc\",1,1,1,10,20\n\
         \"HIP_RUNTIME_API_EXT\",\"hipFree\",1,1,2,30\n\
         \"HIP_RUNTIME_API_EXT\",\"hipFree\",1,1,3,50,60\n"
    );
    let (_d, paths) = write_dir(&[("1_hip_api_trace.csv", &content)]);
    let run = &group_runs(&paths).unwrap()[0];
    let err = import_run(run, &ImportOptions::default())
        .err()
        .expect("an error");
    let msg = err.to_string();
    assert!(msg.contains("1_hip_api_trace.csv"), "{msg}");
    assert!(msg.contains("line 3"), "{msg}");
    assert!(msg.contains("expected 7 fields"), "{msg}");

    let imp = import_run(run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 1);
    assert!(
        imp.report.skipped[0].contains("line 3"),
        "{:?}",
        imp.report.skipped
    );
    assert_eq!(imp.reader_counts()["region"], 2);
}

#[test]
fn bad_values_name_the_column() {
    let content = format!(
        "{API_HEADER}\"HIP_RUNTIME_API_EXT\",\"hipMalloc\",1,1,1,ten,20\n\
         \"HIP_RUNTIME_API_EXT\",\"hipFree\",1,1,2,30,40\n\
         \"HIP_RUNTIME_API_EXT\",\"hipFree\",1,1,,50,60\n"
    );
    let (_d, paths) = write_dir(&[("1_hip_api_trace.csv", &content)]);
    let run = &group_runs(&paths).unwrap()[0];
    let msg = import_run(run, &ImportOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("line 2") && msg.contains("start_timestamp") && msg.contains("\"ten\""),
        "{msg}"
    );
    let imp = import_run(run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 2);
    assert!(
        imp.report.skipped[1].contains("line 4"),
        "{:?}",
        imp.report.skipped
    );
    assert_eq!(imp.reader_counts()["region"], 1);
}

#[test]
fn a_file_that_is_not_rocprofv3_is_refused() {
    let (_d, paths) = write_dir(&[
        (
            "results.csv",
            "Index,KernelName,gpu-id,queue-id,BeginNs,EndNs\n0,k,0,0,1,2\n",
        ),
        (
            "1_hip_api_trace.csv",
            &format!("{API_HEADER}\"HIP_RUNTIME_API_EXT\",\"f\",1,1,1,1,2\n"),
        ),
    ]);
    let msg = group_runs(&paths[..1]).err().unwrap().to_string();
    assert!(
        msg.contains("results.csv") && msg.contains("not a rocprofv3"),
        "{msg}"
    );
    // A directory ignores it.
    let runs = group_runs(&[paths[0].parent().unwrap().to_path_buf()]).unwrap();
    assert_eq!(runs.len(), 1);

    // Named in a run anyway (e.g. by a caller that built the run itself).
    let mut run = runs[0].clone();
    run.files.push(paths[0].clone());
    if let RunSource::Csv { kinds, .. } = &mut run.source {
        kinds.push(rocpd_rocprofv3::CsvKind::Api);
    }
    let msg = import_run(&run, &ImportOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("results.csv") && msg.contains("line 1"),
        "{msg}"
    );
    let imp = import_run(&run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 1);
    assert_eq!(imp.reader_counts()["region"], 1);
}

#[test]
fn an_unterminated_quote_is_a_bad_row() {
    // Like a run killed while writing: the last record stops inside a quoted field.
    let content = format!("{API_HEADER}\"HIP_RUNTIME_API_EXT\",\"hipMalloc\",1,1,1,10,20\n\"HIP_RUNTIME_API_EXT\",\"hipFr");
    let (_d, paths) = write_dir(&[("1_hip_api_trace.csv", &content)]);
    let run = &group_runs(&paths).unwrap()[0];
    let msg = import_run(run, &ImportOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(msg.contains("line 3"), "{msg}");
    let imp = import_run(run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 1);
    assert_eq!(imp.reader_counts()["region"], 1);
}

#[test]
fn the_same_kind_twice_in_one_run_is_an_error() {
    let content = format!("{API_HEADER}\"HIP_RUNTIME_API_EXT\",\"f\",1,1,1,1,2\n");
    let (_d, paths) = write_dir(&[
        ("7_hip_api_trace.csv", &content),
        ("7_HIP_API_TRACE.csv", &content),
    ]);
    let msg = group_runs(&paths).err().unwrap().to_string();
    assert!(msg.contains("two hip_api_trace files"), "{msg}");
}

#[test]
fn existing_destination_is_refused_and_failures_leave_no_file() {
    let content = format!("{API_HEADER}\"HIP_RUNTIME_API_EXT\",\"f\",1,1,1,x,2\n");
    let (d, paths) = write_dir(&[("7_hip_api_trace.csv", &content)]);
    let run = &group_runs(&paths).unwrap()[0];
    let dest = d.path().join("out.db");
    std::fs::write(&dest, b"x").unwrap();
    assert!(import(run, &dest, &ImportOptions::default()).is_err());
    assert_eq!(std::fs::read(&dest).unwrap(), b"x");
    let dest = d.path().join("out2.db");
    assert!(import(run, &dest, &ImportOptions::default()).is_err());
    assert!(!dest.exists());
}

fn json_run(path: &std::path::Path) -> Run {
    Run {
        label: "test".into(),
        files: vec![path.to_path_buf()],
        source: RunSource::Json {
            index: 0,
            pid: None,
            init_time: None,
            identity: None,
            places: Default::default(),
        },
    }
}

#[test]
fn truncated_gzip_names_the_byte_offset() {
    let full = std::fs::read(fixtures().join("rocprofv3-json/908_results.json.gz")).unwrap();
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("cut_results.json.gz");
    std::fs::write(&path, &full[..full.len() / 2]).unwrap();
    // The prefix still sniffs as rocprofv3 JSON; the pre-scan finds the truncation.
    assert_eq!(
        rocpd_rocprofv3::sniff_file(&path).unwrap(),
        Some(rocpd_rocprofv3::Detected::Json)
    );
    let msg = group_runs(std::slice::from_ref(&path))
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("cut_results.json.gz") && msg.contains("byte offset"),
        "{msg}"
    );
    assert!(msg.contains("gzip"), "{msg}");
    // Importing directly fails the same way, with the JSON path reached.
    let msg = import_run(&json_run(&path), &ImportOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("byte offset") && msg.contains("buffer_records.kernel_dispatch["),
        "{msg}"
    );
}

#[test]
fn invalid_json_names_the_byte_offset() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("bad_results.json");
    let text = r#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":5},"agents":[{"id":{"handle":1},"type":2,"node_id":1}] "strings":{}}]}"#;
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let offset = text.find(" \"strings\"").unwrap();
    let msg = import_run(&json_run(&path), &ImportOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("bad_results.json") && msg.contains("invalid JSON"),
        "{msg}"
    );
    // The offset of the byte the parser could not accept (the quote after the space).
    let at = format!("byte offset {}", offset + 1);
    assert!(msg.contains(&at), "{msg} (expected {at})");
    let msg = group_runs(&[path]).err().unwrap().to_string();
    assert!(msg.contains("byte offset"), "{msg}");
}

#[test]
fn bad_json_records_are_skipped_and_counted() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("x_results.json");
    let text = r#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":5},
      "agents":[{"id":{"handle":9},"type":2,"node_id":1,"logical_node_id":1}],
      "strings":{"buffer_records":[{"kind":"NONE","operations":[]},{"kind":"HIP_RUNTIME_API_EXT","operations":["hipMalloc"]}]},
      "kernel_symbols":[],
      "buffer_records":{"hip_api":[
        {"kind":1,"operation":0,"correlation_id":{"internal":1,"external":0},"start_timestamp":1,"end_timestamp":2,"thread_id":5},
        {"kind":1,"operation":0,"correlation_id":{"internal":2,"external":0},"end_timestamp":2,"thread_id":5}
      ]}}]}"#;
    std::fs::write(&path, text).unwrap();
    let msg = import_run(&json_run(&path), &ImportOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("buffer_records.hip_api[1]") && msg.contains("start_timestamp"),
        "{msg}"
    );
    let imp = import_run(&json_run(&path), &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 1);
    assert_eq!(imp.reader_counts()["region"], 1);
}

/// Lines that each leave a quote open: every bad record runs to the end of the file, and
/// reading each one's lines again made the file cost lines × its size (a 1.2 MB file did
/// not end in 30 s, with or without `skip_bad_rows`). Past a fixed number of bytes read
/// again, a bad record's lines are dropped with it: the read ends, every line counted.
#[test]
fn lines_that_each_open_a_quote_cost_a_bounded_rereading() {
    let lines = 20_000;
    let content = format!("{API_HEADER}{}", "a\",\"b\n".repeat(lines));
    let (_d, paths) = write_dir(&[("hip_api_trace.csv", &content)]);
    let run = &group_runs(&paths).unwrap()[0];
    let msg = import_run(run, &ImportOptions::default())
        .err()
        .expect("an error")
        .to_string();
    assert!(msg.contains("line 2"), "{msg}");
    let imp = import_run(run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, lines as u64);
    assert!(
        imp.report
            .skipped
            .iter()
            .chain(std::iter::once(&String::new()))
            .any(|s| s.contains("read again past 64 MiB"))
            || imp.report.skipped_unlisted > 0,
        "{:?}",
        imp.report.skipped
    );
    assert_eq!(imp.reader_counts().get("region").copied().unwrap_or(0), 0);
}
