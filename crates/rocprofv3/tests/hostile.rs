//! Hostile input: stray quotes, oversized records, out-of-range integers, wrong JSON
//! types, byte-order marks, incomplete headers. Every input is built here, in a temporary
//! directory.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::*;
use rocpd_rocprofv3::{
    group_runs, sniff_file, unrecognised_reason, CsvKind, Detected, ImportOptions, Run, RunSource,
    MAX_SKIP_REASONS,
};

const API_HEADER: &str = "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n";

const KERNEL_HEADER: &str = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n";

fn skip() -> ImportOptions {
    ImportOptions {
        skip_bad_rows: true,
    }
}

/// An API row as rocprofv3 writes it (strings quoted).
fn api_row(corr: u64) -> String {
    format!(
        "\"HIP_RUNTIME_API_EXT\",\"hipLaunchKernel\",7,7,{corr},{},{}\n",
        corr * 100,
        corr * 100 + 50
    )
}

/// An API trace of `n` rows (line k + 1 holds correlation id k).
fn api_file(n: u64) -> Vec<String> {
    (1..=n).map(api_row).collect()
}

fn one_run(files: &[(&str, &str)]) -> (tempfile::TempDir, Run) {
    let (d, paths) = write_dir(files);
    let runs = group_runs(&paths).unwrap();
    assert_eq!(runs.len(), 1);
    (d, runs.into_iter().next().unwrap())
}

fn err_of(run: &Run, opts: &ImportOptions) -> String {
    import_run(run, opts).err().expect("an error").to_string()
}

#[test]
fn an_unterminated_quote_loses_one_line_and_reading_resumes() {
    let mut lines = api_file(40);
    // Line 31 (record 30) loses its closing quote: the quote of line 32 closes it.
    lines[29] = "\"HIP_RUNTIME_API_EXT\",\"hipLaunchKernel,7,7,30,3000,3050\n".into();
    let content = format!("{API_HEADER}{}", lines.concat());
    let (_d, run) = one_run(&[("7_hip_api_trace.csv", &content)]);

    let msg = err_of(&run, &ImportOptions::default());
    assert!(
        msg.contains("7_hip_api_trace.csv") && msg.contains(": line 31:"),
        "{msg}"
    );

    let imp = import_run(&run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 1, "{:?}", imp.report.skipped);
    assert_eq!(imp.reader_counts()["region"], 39);
    let note = &imp.report.skipped[0];
    assert!(
        note.contains("line 31") && note.contains("resumes at line 32"),
        "{note}"
    );
    // Line 32 (correlation id 31) is there.
    assert_eq!(
        imp.one::<i64>("SELECT COUNT(*) FROM rocpd_region WHERE start = 3100 AND \"end\" = 3150"),
        1
    );
    imp.check_integrity();
}

#[test]
fn every_lost_line_is_counted() {
    // A kernel name with a newline (legitimate), but a bad timestamp: the record spans two
    // lines, both are lost, and both are counted.
    let good = |corr: u64| {
        format!(
            "\"KERNEL_DISPATCH\",\"Agent 1\",1,1,\"k{corr}\",{corr},{},{}\n",
            corr * 10,
            corr * 10 + 5
        )
    };
    let content = format!(
        "{KERNEL_HEADER}{}\"KERNEL_DISPATCH\",\"Agent 1\",1,2,\"two\nlines\",2,xx,25\n{}",
        good(1),
        good(3)
    );
    let (_d, run) = one_run(&[("7_kernel_trace.csv", &content)]);
    let msg = err_of(&run, &ImportOptions::default());
    assert!(
        msg.contains("line 3") && msg.contains("runs over lines 3-4"),
        "{msg}"
    );
    let imp = import_run(&run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 2, "{:?}", imp.report.skipped);
    assert_eq!(imp.reader_counts()["kernel_dispatch"], 2);
    assert!(imp.report.skipped[0].contains("line 3"));
    assert!(imp.report.skipped[1].contains("line 4"));
}

#[test]
fn quoted_newlines_commas_and_quotes_are_kept() {
    let name = "void k<\n\"a, b\">(int)";
    let quoted = name.replace('"', "\"\"");
    let content = format!(
        "{KERNEL_HEADER}\"KERNEL_DISPATCH\",\"Agent 1\",1,1,\"{quoted}\",1,10,20\n\
         \"KERNEL_DISPATCH\",\"Agent 1\",1,1,\"{quoted}\",2,30,40\n"
    );
    let (_d, run) = one_run(&[("7_kernel_trace.csv", &content)]);
    let imp = import_run(&run, &ImportOptions::default()).unwrap();
    assert_eq!(imp.report.skipped_rows, 0);
    assert_eq!(imp.reader_counts()["kernel_dispatch"], 2);
    let got: String = imp.one("SELECT kernel_name FROM rocpd_info_kernel_symbol LIMIT 1");
    assert_eq!(got, name);
}

#[test]
fn a_record_may_not_grow_without_bound() {
    // An unterminated quote on line 2 and then 1.3 MB of lines without quotes: the record
    // stops at the 1 MiB limit; line 2 is lost and every line after it is read.
    let mut content = String::from(API_HEADER);
    content.push_str("\"HIP_RUNTIME_API_EXT\",\"hipMalloc,7,7,1,1,2\n");
    let n = 50_000u64;
    for c in 2..=n + 1 {
        content.push_str(&format!("HIP,hipFree,7,7,{c},{c},{c}\n"));
    }
    assert!(content.len() > 1 << 20);
    let (_d, run) = one_run(&[("7_hip_api_trace.csv", &content)]);
    let msg = err_of(&run, &ImportOptions::default());
    assert!(
        msg.contains("line 2") && msg.contains("1048576 bytes"),
        "{msg}"
    );
    let imp = import_run(&run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 1, "{:?}", imp.report.skipped);
    assert_eq!(imp.reader_counts()["region"], n);

    // One physical line longer than the limit: dropped, the next line is read.
    let mut content = String::from(API_HEADER);
    content.push_str(&api_row(1));
    content.push_str(&"x".repeat(3 << 20));
    content.push('\n');
    content.push_str(&api_row(2));
    let (_d, run) = one_run(&[("7_hip_api_trace.csv", &content)]);
    let msg = err_of(&run, &ImportOptions::default());
    assert!(msg.contains("line 3") && msg.contains("1 MiB"), "{msg}");
    let imp = import_run(&run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 1);
    assert_eq!(imp.reader_counts()["region"], 2);
}

#[test]
fn skip_notes_are_bounded_and_counted() {
    let mut content = String::from(API_HEADER);
    for c in 1..=30u64 {
        content.push_str(&format!("\"HIP\",\"f\",7,7,{c},bad,1\n"));
    }
    content.push_str(&api_row(99));
    let (_d, run) = one_run(&[("7_hip_api_trace.csv", &content)]);
    let imp = import_run(&run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 30);
    assert_eq!(imp.report.skipped.len(), MAX_SKIP_REASONS + 1);
    assert_eq!(imp.report.skipped_unlisted, 10);
    assert!(imp.report.skipped[0].contains("line 2"));
    assert!(imp.report.skipped[19].contains("line 21"));
    let last = imp.report.skipped.last().unwrap();
    assert!(
        last.contains("10 more") && last.contains("30 rows"),
        "{last}"
    );
    assert_eq!(imp.reader_counts()["region"], 1);
}

#[test]
fn csv_integers_out_of_range_are_refused() {
    // i64::MIN and i64::MAX are kept exactly.
    let content =
        format!("{API_HEADER}\"HIP\",\"f\",7,7,1,-9223372036854775808,9223372036854775807\n");
    let (_d, run) = one_run(&[("7_hip_api_trace.csv", &content)]);
    let imp = import_run(&run, &ImportOptions::default()).unwrap();
    assert_eq!(imp.one::<i64>("SELECT start FROM rocpd_region"), i64::MIN);
    assert_eq!(imp.one::<i64>("SELECT \"end\" FROM rocpd_region"), i64::MAX);

    for (value, shown) in [
        ("9223372036854775808", "9223372036854775808"),
        ("18446744073709551615", "18446744073709551615"),
        ("0x8000000000000000", "0x8000000000000000"),
        ("9.25e18", "9.25e18"),
        ("-9223372036854775809", "-9223372036854775809"),
    ] {
        let content = format!("{API_HEADER}\"HIP\",\"f\",7,7,1,10,{value}\n{}", api_row(2));
        let (_d, run) = one_run(&[("7_hip_api_trace.csv", &content)]);
        let msg = err_of(&run, &ImportOptions::default());
        assert!(
            msg.contains("line 2")
                && msg.contains("end_timestamp")
                && msg.contains(shown)
                && msg.contains("out of range"),
            "{value}: {msg}"
        );
        let imp = import_run(&run, &skip()).unwrap();
        assert_eq!(imp.report.skipped_rows, 1);
        assert_eq!(imp.reader_counts()["region"], 1);
    }

    // Grid sizes are stored as given (nothing multiplies them); a grid size beyond i64 is
    // refused like any other integer.
    let content = "\"Kind\",\"Agent_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n\
         \"KERNEL_DISPATCH\",\"Agent 1\",\"k\",1,10,20,4294967295,4294967295,4294967295\n\
         \"KERNEL_DISPATCH\",\"Agent 1\",\"k\",2,30,40,1,1,9223372036854775808\n";
    let (_d, run) = one_run(&[("7_kernel_trace.csv", content)]);
    let msg = err_of(&run, &ImportOptions::default());
    assert!(
        msg.contains("line 3") && msg.contains("grid_size_z"),
        "{msg}"
    );
    let imp = import_run(&run, &skip()).unwrap();
    assert_eq!(
        imp.one::<i64>("SELECT grid_size_z FROM rocpd_kernel_dispatch"),
        4294967295
    );
}

#[test]
fn a_kernel_trace_without_end_timestamp_is_found_and_refused_by_name() {
    let content = "\"Kind\",\"Agent_Id\",\"Dispatch_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\"\n\
                   \"KERNEL_DISPATCH\",\"Agent 1\",1,\"k\",1,10\n";
    let api = format!("{API_HEADER}{}", api_row(1));
    let (d, paths) = write_dir(&[
        ("7_kernel_trace.csv", content),
        ("7_hip_api_trace.csv", &api),
    ]);
    assert_eq!(
        sniff_file(&paths[0]).unwrap(),
        Some(Detected::Csv(CsvKind::KernelTrace))
    );
    // The directory walk keeps it; the import names the file and the column.
    let runs = group_runs(&[d.path().to_path_buf()]).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].files.len(), 2);
    let msg = err_of(&runs[0], &ImportOptions::default());
    let want = format!(
        "{}: header: missing column End_Timestamp",
        paths[0].display()
    );
    assert_eq!(msg, want);
    // With skip_bad_rows, the file is skipped and its lines counted.
    let imp = import_run(&runs[0], &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 1);
    assert!(imp.report.skipped[0].contains("missing column End_Timestamp"));
    assert_eq!(imp.reader_counts()["region"], 1);

    // Two columns missing: both named.
    let content = "\"Kernel_Name\",\"Dispatch_Id\",\"Agent_Id\",\"Correlation_Id\"\n\"k\",1,1,1\n";
    let (_d, run) = one_run(&[("7_kernel_trace.csv", content)]);
    assert!(err_of(&run, &ImportOptions::default())
        .ends_with("header: missing columns Start_Timestamp, End_Timestamp"));

    // Without the name, such a header is not recognised (no guessing).
    let (_d, paths) = write_dir(&[("kernels.csv", content)]);
    assert_eq!(sniff_file(&paths[0]).unwrap(), None);
}

fn reason(dir: &Path, name: &str, bytes: &[u8]) -> Option<String> {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    let head = &bytes[..bytes.len().min(rocpd_rocprofv3::SNIFF_BYTES)];
    unrecognised_reason(&p, head)
}

#[test]
fn unrecognised_profiler_outputs_say_why() {
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    assert_eq!(reason(d, "1_results.db", b""), Some("empty file".into()));
    assert_eq!(
        reason(d, "1_results.db", b"this is text\n"),
        Some("text, not a SQLite database".into())
    );
    assert_eq!(reason(d, "1_results.db", b"SQLite format 3\0......"), None);
    assert_eq!(
        reason(d, "old.rpd", &[0x1f, 0x8b, 8, 0]),
        Some("gzip-compressed, not a SQLite database (decompress it first)".into())
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"hello, not json").unwrap();
    let gz = gz.finish().unwrap();
    assert_eq!(
        reason(d, "1_results.json.gz", &gz),
        Some("gzip-compressed but not JSON".into())
    );
    assert_eq!(
        reason(d, "1_results.json", br#"{"traceEvents": []}"#),
        Some("JSON, but no \"rocprofiler-sdk-tool\" key in the first 4 KiB".into())
    );
    assert_eq!(
        reason(d, "1_results.json", br#"{"rocprofiler-sdk-tool": []}"#),
        None
    );
    assert_eq!(
        reason(d, "1_kernel_trace.csv", b"a,b,c\n1,2,3\n"),
        Some(
            "CSV header lacks Kernel_Name, Agent_Id, Correlation_Id, Start_Timestamp, \
             End_Timestamp (not a rocprofv3 kernel_trace file)"
                .into()
        )
    );
    assert_eq!(
        reason(d, "1_memory_copy_trace.csv", b""),
        Some("empty file".into())
    );
    // Recognised content, and names that are not a profiler's: nothing to say.
    assert_eq!(
        reason(d, "1_hip_api_trace.csv", API_HEADER.as_bytes()),
        None
    );
    assert_eq!(reason(d, "notes.csv", b"a,b\n"), None);
    assert_eq!(reason(d, "x.hatchet", b""), None);
}

fn json_run(path: &Path) -> Run {
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

/// A small rocprofv3 JSON document with one HIP call whose fields are `api`.
fn json_doc(api: &str) -> String {
    format!(
        r#"{{"rocprofiler-sdk-tool":[{{"metadata":{{"pid":5}},
      "agents":[{{"id":{{"handle":9}},"type":2,"node_id":1,"logical_node_id":1}}],
      "strings":{{"buffer_records":[{{"kind":"NONE","operations":[]}},{{"kind":"HIP_RUNTIME_API_EXT","operations":["hipMalloc"]}}]}},
      "kernel_symbols":[],
      "buffer_records":{{"hip_api":[
        {{"kind":1,"operation":0,"correlation_id":{{"internal":1,"external":0}},"start_timestamp":1,"end_timestamp":2,"thread_id":5}},
        {api}
      ]}}}}]}}"#
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn json_integers_out_of_range_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let api = |start: &str, end: &str| {
        format!(
            r#"{{"kind":1,"operation":0,"correlation_id":{{"internal":2,"external":0}},"start_timestamp":{start},"end_timestamp":{end},"thread_id":5}}"#
        )
    };
    // The limits themselves are kept exactly.
    let p = write(
        d.path(),
        "ok_results.json",
        json_doc(&api("-9223372036854775808", "9223372036854775807")).as_bytes(),
    );
    let imp = import_run(&json_run(&p), &ImportOptions::default()).unwrap();
    assert_eq!(
        imp.one::<i64>("SELECT MIN(start) FROM rocpd_region"),
        i64::MIN
    );
    assert_eq!(
        imp.one::<i64>("SELECT MAX(\"end\") FROM rocpd_region"),
        i64::MAX
    );

    for (start, end) in [
        ("1", "18446744073709551616"),
        ("1", "9223372036854775808"),
        ("-9223372036854775809", "2"),
        ("1", "1.8446744073709552e19"),
        ("1", "\"0xffffffffffffffff\""),
    ] {
        let p = write(
            d.path(),
            "x_results.json",
            json_doc(&api(start, end)).as_bytes(),
        );
        let msg = import_run(&json_run(&p), &ImportOptions::default())
            .err()
            .expect("an error")
            .to_string();
        assert!(
            msg.contains("x_results.json")
                && msg.contains("buffer_records.hip_api[1]")
                && msg.contains("_timestamp")
                && msg.contains("out of range"),
            "{start} {end}: {msg}"
        );
        let imp = import_run(&json_run(&p), &skip()).unwrap();
        assert_eq!(imp.report.skipped_rows, 1);
        assert_eq!(imp.reader_counts()["region"], 1);
    }
}

#[test]
fn a_json_value_may_not_grow_without_bound() {
    // The import's reads (serde's) keep the direct reader's bound of 8 MiB per value:
    // a record, a table's entry, the metadata, a key. The place is the record's.
    let d = tempfile::tempdir().unwrap();
    let api = |pad: usize| {
        format!(
            r#"{{"kind":1,"operation":0,"correlation_id":{{"internal":2,"external":0}},"start_timestamp":3,"end_timestamp":4,"thread_id":5,"pad":"{}"}}"#,
            "p".repeat(pad)
        )
    };
    let p = write(
        d.path(),
        "ok_results.json",
        json_doc(&api(7 << 20)).as_bytes(),
    );
    let imp = import_run(&json_run(&p), &ImportOptions::default()).unwrap();
    assert_eq!(imp.reader_counts()["region"], 2);

    let p = write(
        d.path(),
        "big_results.json",
        json_doc(&api(9 << 20)).as_bytes(),
    );
    for opts in [ImportOptions::default(), skip()] {
        let msg = err_of(&json_run(&p), &opts);
        assert!(
            msg.contains("big_results.json")
                && msg.contains("buffer_records.hip_api[1]")
                && msg.contains("larger than 8 MiB"),
            "{msg}"
        );
    }
    // The metadata, read by the pre-scan as well.
    let doc = json_doc(&api(1)).replacen(
        r#""pid":5"#,
        &format!(r#""pid":5,"command":["{}"]"#, "c".repeat(9 << 20)),
        1,
    );
    let p = write(d.path(), "meta_results.json", doc.as_bytes());
    let msg = group_runs(std::slice::from_ref(&p))
        .map(|runs| err_of(&runs[0], &ImportOptions::default()))
        .unwrap_or_else(|e| e.to_string());
    assert!(
        msg.contains("meta_results.json") && msg.contains("larger than 8 MiB"),
        "{msg}"
    );
}

#[test]
fn json_with_a_byte_order_mark_is_read_also_gzipped() {
    let d = tempfile::tempdir().unwrap();
    let api = r#"{"kind":1,"operation":0,"correlation_id":{"internal":2,"external":0},"start_timestamp":3,"end_timestamp":4,"thread_id":5}"#;
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend(json_doc(api).as_bytes());
    let plain = write(d.path(), "bom_results.json", &bytes);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bytes).unwrap();
    let gz = write(d.path(), "bomgz_results.json.gz", &gz.finish().unwrap());
    for p in [&plain, &gz] {
        assert_eq!(sniff_file(p).unwrap(), Some(Detected::Json));
        let runs = group_runs(std::slice::from_ref(p)).unwrap();
        assert_eq!(runs.len(), 1);
        let imp = import_run(&runs[0], &ImportOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(imp.reader_counts()["region"], 2);
    }
    // Byte offsets still count the mark.
    let mut bad = b"\xef\xbb\xbf".to_vec();
    bad.extend(br#"{"rocprofiler-sdk-tool": [ x ]}"#);
    let p = write(d.path(), "badbom_results.json", &bad);
    let msg = group_runs(&[p]).err().unwrap().to_string();
    let at = 3 + br#"{"rocprofiler-sdk-tool": [ "#.len();
    assert!(msg.contains(&format!("byte offset {at}")), "{msg}");
}

#[test]
fn json_values_of_the_wrong_type_are_errors() {
    let d = tempfile::tempdir().unwrap();
    let base = json_doc(
        r#"{"kind":1,"operation":0,"correlation_id":{"internal":2,"external":0},"start_timestamp":3,"end_timestamp":4,"thread_id":5}"#,
    );
    let cases: Vec<(String, &str)> = vec![
        (
            base.replace(
                r#""kernel_symbols":[],"#,
                r#""kernel_symbols":[], "callback_records": {"kernel_dispatch": 5},"#,
            ),
            "kernel_dispatch",
        ),
        (
            base.replace(r#""metadata":{"pid":5}"#, r#""metadata":5"#),
            "metadata",
        ),
        (
            base.replace(r#""thread_id":5}"#, r#""thread_id":[5]}"#),
            "thread_id",
        ),
        (
            base.replace(
                r#""kernel_symbols":[],"#,
                r#""kernel_symbols":[], "callback_records": {"counter_collection": [
                  {"dispatch_data": {"dispatch_info": {"agent_id": {"handle": 9}, "kernel_id": 1,
                   "dispatch_id": 1, "grid_size": 5}}, "records": []}]},"#,
            ),
            "grid_size",
        ),
        (
            base.replace(
                r#""kernel_symbols":[],"#,
                r#""kernel_symbols":[], "callback_records": {"counter_collection": [
                  {"dispatch_data": {"dispatch_info": {"agent_id": {"handle": 9}, "kernel_id": 1,
                   "dispatch_id": 1}}, "records": 5}]},"#,
            ),
            "records",
        ),
        (
            base.replace(
                r#"{"kind":1,"operation":0,"correlation_id":{"internal":1"#,
                r#"7, {"kind":1,"operation":0,"correlation_id":{"internal":1"#,
            ),
            "hip_api[0]",
        ),
    ];
    for (text, what) in cases {
        assert_ne!(text, base, "{what}: the replacement did not apply");
        let p = write(d.path(), "t_results.json", text.as_bytes());
        let msg = import_run(&json_run(&p), &ImportOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{what}: no error"))
            .to_string();
        assert!(
            msg.contains("t_results.json") && msg.contains(what),
            "{what}: {msg}"
        );
    }
}

/// Found by the fuzzer: a `rocpd convert` CSV whose Guid column is not a GUID used to be
/// imported into a database the RocPD reader then refused, naming a temporary file.
#[test]
fn a_guid_column_that_is_not_a_guid_is_refused_naming_the_column() {
    let csv = "\"Guid\",\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n\
               \"not-a-hex-guid\",\"HIP_COMPILER_API_EXT\",\"__hipRegisterFatBinary\",137,137,1,3719662243949943,3719662243977763\n";
    let (_d, run) = one_run(&[("rocpd-to-csv.csv", csv)]);
    let e = err_of(&run, &ImportOptions::default());
    assert!(e.contains("rocpd-to-csv.csv: column Guid"), "{e}");
    assert!(e.contains("\"not-a-hex-guid\" is not a GUID"), "{e}");
    // The direct reader says the same, without importing (D115).
    let direct = rocpd_rocprofv3::DirectRunSource::open(&run, &ImportOptions::default())
        .map(|s| s.is_some())
        .unwrap_err();
    assert_eq!(direct.to_string(), e);
    // Found by the fuzzer: dashes alone, or a leading dash, made a table set without a guid.
    for bad in ["-", "--", "-0197c21f"] {
        let (_d, run) = one_run(&[("rocpd-to-csv.csv", &csv.replace("not-a-hex-guid", bad))]);
        let e = err_of(&run, &ImportOptions::default());
        assert!(e.contains(&format!("{bad:?} is not a GUID")), "{e}");
    }
    let good = csv.replace("not-a-hex-guid", "0197c21f-f140-743f-9c16-9f3fc5986769");
    let (_d, run) = one_run(&[("rocpd-to-csv.csv", &good)]);
    assert!(import_run(&run, &ImportOptions::default()).is_ok());
}

/// A row with an empty guid, in a `rocpd convert` CSV whose rows name their process by
/// guid, belongs to no run: it was dropped without a word. It is a bad row now, named;
/// with `skip_bad_rows` skipped and counted, read directly as imported.
#[test]
fn a_row_without_a_guid_is_a_bad_row_not_a_silent_drop() {
    let guid = "0197c21f-f140-743f-9c16-9f3fc5986769";
    let row = |g: &str, corr: u64| {
        format!(
            "\"{g}\",\"HIP_COMPILER_API_EXT\",\"__hipRegisterFatBinary\",137,137,{corr},3719662243949943,3719662243977763\n"
        )
    };
    let csv = format!(
        "\"Guid\",\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n{}{}{}",
        row(guid, 1),
        row("", 2),
        row(guid, 3)
    );
    let (_d, run) = one_run(&[("rocpd-to-csv.csv", &csv)]);
    let e = err_of(&run, &ImportOptions::default());
    assert!(
        e.contains("rocpd-to-csv.csv: line 3") && e.contains("empty guid"),
        "{e}"
    );
    let imp = import_run(&run, &skip()).unwrap();
    assert_eq!(imp.report.skipped_rows, 1);
    assert_eq!(imp.reader_counts()["region"], 2);
    let direct = rocpd_rocprofv3::DirectRunSource::open(&run, &skip())
        .unwrap()
        .expect("read directly");
    assert_eq!(direct.skipped_rows(), 1);
}

/// An empty grid or workgroup size, in a file whose header has the column, is the row's
/// error, not a 0: rocprofv3 always writes them, and a row cut short after a comma ends
/// so. A generation without the column still reads 0 (D169).
#[test]
fn an_empty_grid_or_workgroup_size_is_refused_not_read_as_zero() {
    let header = "\"Kind\",\"Agent_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Workgroup_Size_X\",\"Grid_Size_X\",\"Grid_Size_Z\"\n";
    let good = "\"KERNEL_DISPATCH\",\"Agent 1\",\"k\",1,10,20,64,256,1\n";
    for (bad, column) in [
        (
            "\"KERNEL_DISPATCH\",\"Agent 1\",\"k\",2,30,40,64,256,\n",
            "grid_size_z",
        ),
        (
            "\"KERNEL_DISPATCH\",\"Agent 1\",\"k\",2,30,40,64,256,",
            "grid_size_z",
        ),
        (
            "\"KERNEL_DISPATCH\",\"Agent 1\",\"k\",2,30,40,,256,1\n",
            "workgroup_size_x",
        ),
    ] {
        let content = format!("{header}{good}{bad}");
        let (_d, run) = one_run(&[("7_kernel_trace.csv", &content)]);
        let msg = err_of(&run, &ImportOptions::default());
        assert!(
            msg.contains("line 3") && msg.contains(column) && msg.contains("empty"),
            "{bad:?}: {msg}"
        );
        let imp = import_run(&run, &skip()).unwrap();
        assert_eq!(imp.report.skipped_rows, 1);
        assert_eq!(imp.reader_counts()["kernel_dispatch"], 1);
    }
    // Without Grid_Size_Y in the header, its value is 0.
    let content = format!("{header}{good}");
    let (_d, run) = one_run(&[("7_kernel_trace.csv", &content)]);
    let imp = import_run(&run, &ImportOptions::default()).unwrap();
    assert_eq!(
        imp.one::<i64>("SELECT grid_size_y FROM rocpd_kernel_dispatch"),
        0
    );
    assert_eq!(
        imp.one::<i64>("SELECT grid_size_z FROM rocpd_kernel_dispatch"),
        1
    );
}
