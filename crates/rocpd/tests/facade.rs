//! The facade as a Rust program uses it: thread counts, projection, event streams and
//! many inputs.

use std::path::{Path, PathBuf};

use arrow_array::{Array, RecordBatchReader};
use rocpd::{Conversion, EventOptions, Format, Inputs, Projection, Split, Table};

fn generate(dir: &Path, processes: u32, iterations: u32) -> Vec<PathBuf> {
    let cfg = rocpd_gen::GenConfig {
        seed: 7,
        processes,
        nodes: processes.div_ceil(2),
        iterations,
        row_ids: std::env::var_os("ROCPD_TEST_ROW_IDS").is_some(),
        ..Default::default()
    };
    rocpd_gen::generate(&cfg, dir).unwrap()
}

/// Every file under `dir`, relative path → bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn convert(inputs: &[PathBuf], out: &Path, threads: usize, split: Option<Split>) {
    let mut opened = Inputs::open(inputs, &Default::default()).unwrap();
    let c = Conversion {
        formats: vec![Format::Pftrace, Format::Otf2, Format::Parquet],
        dir: out.to_path_buf(),
        split,
        threads,
        ..Default::default()
    };
    opened.convert(&c, &mut |_| {}).unwrap();
}

/// `path` with every Parquet run id (`20261202T051055Z-3f9a1c2b7d4e6a81`) as `<run>`:
/// ids differ from run to run by design.
fn without_run_ids(path: &Path) -> String {
    let s = path.to_string_lossy();
    let b = s.as_bytes();
    let is_id = |i: usize| {
        let id = &b[i..i + 33];
        id[..8].iter().all(u8::is_ascii_digit)
            && id[8] == b'T'
            && id[9..15].iter().all(u8::is_ascii_digit)
            && &id[15..17] == b"Z-"
            && id[17..].iter().all(|c| c.is_ascii_hexdigit())
    };
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if i + 33 <= b.len() && is_id(i) {
            out.push_str("<run>");
            i += 33;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

#[test]
fn output_is_byte_identical_for_every_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let many = generate(&tmp.path().join("many"), 5, 6);
    let one = generate(&tmp.path().join("one"), 1, 12);
    for (name, inputs, split) in [
        ("many", &many, None),
        ("one", &one, None),
        ("many-time", &many, Some(Split::TimeCount(3))),
        (
            "many-process",
            &many,
            Some(Split::Keyed(rocpd::SplitMode::Process)),
        ),
    ] {
        let mut trees = Vec::new();
        for threads in [1, 2, 4] {
            let out = tmp.path().join(format!("{name}-{threads}"));
            convert(inputs, &out, threads, split.clone());
            let t = tree(&out);
            assert!(t.len() >= 3, "{name}: {t:?}");
            trees.push(t);
        }
        for (k, t) in trees.iter().enumerate().skip(1) {
            assert_eq!(t.len(), trees[0].len(), "{name}: file count");
            for ((pa, a), (pb, b)) in trees[0].iter().zip(t) {
                assert_eq!(without_run_ids(pa), without_run_ids(pb), "{name}");
                // A Parquet run's description and the summary record the run's id and
                // time; everything else is a pure function of the inputs.
                let sa = pa.to_string_lossy();
                if sa.ends_with("_metadata.json") || sa.contains("_runs/") {
                    continue;
                }
                assert!(
                    a == b,
                    "{name}: {} differs at threads {}",
                    pa.display(),
                    [1, 2, 4][k]
                );
            }
        }
    }
}

#[test]
fn summary_is_identical_for_every_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 12, 2);
    let mut texts = Vec::new();
    for threads in [1, 2, 4] {
        let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
        let options = rocpd::SummaryOptions {
            by_rank: true,
            threads,
            ..Default::default()
        };
        let run = opened.summary(&options, &mut |_| {}).unwrap();
        let out = tmp.path().join(format!("s{threads}"));
        let (_, files) = opened
            .write_summary(&run, &[rocpd::SummaryFormat::Json], &out, "x")
            .unwrap();
        texts.push(
            files
                .iter()
                .map(|f| std::fs::read(f).unwrap())
                .collect::<Vec<_>>(),
        );
    }
    assert!(!texts[0].is_empty());
    assert_eq!(texts[0], texts[1]);
    assert_eq!(texts[0], texts[2]);
}

#[test]
fn a_projected_stream_builds_no_json_text_column() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 1, 3);
    let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
    let json = [
        "call_stack",
        "line_info",
        "event_extdata",
        "extdata",
        "args",
    ];
    let mut non_null = |projection: Projection| -> (usize, usize) {
        let options = EventOptions {
            projection,
            ..Default::default()
        };
        let (mut rows, mut filled) = (0, 0);
        for table in [Table::Region, Table::KernelDispatch] {
            let reader = opened.events(table, &options).unwrap();
            assert_eq!(reader.schema(), table.schema());
            for b in reader {
                let b = b.unwrap();
                rows += b.num_rows();
                for c in json {
                    if let Some(i) = table.column_position(c) {
                        let col = b.column(i);
                        filled += col.len() - col.null_count();
                    }
                }
            }
        }
        (rows, filled)
    };
    let (rows_all, filled_all) = non_null(Projection::all());
    let (rows_lean, filled_lean) = non_null(Projection::without_json_text());
    assert!(rows_all > 0);
    assert_eq!(rows_all, rows_lean, "a projection keeps every row");
    assert!(
        filled_all > 0,
        "the generated data has JSON text to leave out"
    );
    assert_eq!(filled_lean, 0, "no JSON text column is built");
}

#[test]
fn events_come_in_time_order_with_every_row() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 3, 4);
    let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
    let counts = opened.count_rows().unwrap();
    for threads in [1, 3] {
        let options = EventOptions {
            threads,
            ..Default::default()
        };
        let mut rows = 0u64;
        let mut last = i64::MIN;
        for chunk in opened.chunks(&options).unwrap() {
            let chunk = chunk.unwrap();
            for (b, r) in chunk.time_order() {
                let batch = &chunk.batches[b].batch;
                let starts = batch
                    .column(rocpd_model_start())
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .unwrap();
                assert!(starts.value(r) >= last);
                last = starts.value(r);
                rows += 1;
            }
        }
        assert_eq!(rows, counts.values().sum::<u64>());
    }
}

#[test]
fn a_table_reader_yields_rows_in_time_order_across_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 3, 4);
    let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
    let counts = opened.count_rows().unwrap();
    for table in Table::ALL {
        let reader = opened.events(table, &EventOptions::default()).unwrap();
        let (mut rows, mut last) = (0u64, (i64::MIN, i64::MAX));
        for batch in reader {
            let batch = batch.unwrap();
            let col = |name| {
                batch
                    .column_by_name(name)
                    .unwrap()
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .unwrap()
                    .clone()
            };
            let (start, end) = (col("start"), col("end"));
            for r in 0..batch.num_rows() {
                let key = (start.value(r), end.value(r));
                // Within a batch (start, end descending), the order of a chunk; across
                // batches by start: rows of one start time may span two chunks.
                assert!(
                    key.0 > last.0 || (key.0 == last.0 && (r == 0 || key.1 <= last.1)),
                    "{table:?}: {key:?} after {last:?}"
                );
                last = key;
            }
            rows += batch.num_rows() as u64;
        }
        assert_eq!(rows, counts[table.name()], "{table:?}");
    }
}

#[test]
fn a_table_reader_with_rules_clears_launch_marks_as_a_conversion_does() {
    // Excluding the API calls must clear the kernels' launch marks, which the filter
    // decides from the API calls it saw: so the table's reader must read them too.
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 2, 4);
    let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
    let selection = rocpd::Selection::default()
        .with_rules(&[], &["kind=api".to_string()])
        .unwrap();
    let options = EventOptions {
        selection,
        ..Default::default()
    };
    let launched = |b: &arrow_array::RecordBatch| {
        let c = b.column_by_name("has_launcher").unwrap();
        let c = c
            .as_any()
            .downcast_ref::<arrow_array::BooleanArray>()
            .unwrap();
        c.iter().filter(|v| *v == Some(true)).count()
    };
    let mut want = (0, 0);
    for chunk in opened.chunks(&options).unwrap() {
        for b in &chunk.unwrap().batches {
            if b.table == Table::KernelDispatch {
                want.0 += b.batch.num_rows();
                want.1 += launched(&b.batch);
            }
        }
    }
    let mut got = (0, 0);
    for b in opened.events(Table::KernelDispatch, &options).unwrap() {
        let b = b.unwrap();
        got.0 += b.num_rows();
        got.1 += launched(&b);
    }
    assert!(want.0 > 0);
    assert_eq!(got, want);
    assert_eq!(want.1, 0, "no kernel keeps a launcher that was removed");
    // Chunks asked for one table hold only it, with the same marks.
    let one = EventOptions {
        tables: Some(vec![Table::KernelDispatch]),
        ..options
    };
    let mut chunked = (0, 0);
    for chunk in opened.chunks(&one).unwrap() {
        for b in &chunk.unwrap().batches {
            assert_eq!(b.table, Table::KernelDispatch);
            chunked.0 += b.batch.num_rows();
            chunked.1 += launched(&b.batch);
        }
    }
    assert_eq!(chunked, want);
}

/// With `keep_groups`, counter values follow their dispatches (D144): a reader of the
/// counter table alone reads the dispatches through the window too, and gives what a
/// run over every table keeps.
#[test]
fn a_counter_reader_with_kept_launches_keeps_what_every_table_keeps() {
    let inputs = vec![Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/generated/node-00_4000_results.db")];
    let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
    let options = EventOptions {
        selection: rocpd::Selection {
            window: rocpd::WindowRequest {
                start: Some("30%".into()),
                end: Some("31%".into()),
                keep_groups: true,
                ..Default::default()
            },
            ..Default::default()
        },
        ..Default::default()
    };
    let mut want = 0;
    for chunk in opened.chunks(&options).unwrap() {
        for b in &chunk.unwrap().batches {
            if b.table == Table::PmcValue {
                want += b.batch.num_rows();
            }
        }
    }
    let mut got = 0;
    for b in opened.events(Table::PmcValue, &options).unwrap() {
        got += b.unwrap().num_rows();
    }
    assert!(want > 0);
    assert_eq!(got, want);
}

#[test]
fn a_window_refuses_a_time_and_a_marker_for_the_same_end() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 1, 2);
    let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
    for (start, marker, end, end_marker, what) in [
        (
            Some("10%"),
            Some("m"),
            None,
            None,
            "--start and --start-marker",
        ),
        (None, None, Some("90%"), Some("m"), "--end and --end-marker"),
    ] {
        let options = EventOptions {
            selection: rocpd::Selection {
                rules: Vec::new(),
                window: rocpd::WindowRequest {
                    start: start.map(String::from),
                    start_marker: marker.map(String::from),
                    end: end.map(String::from),
                    end_marker: end_marker.map(String::from),
                    ..Default::default()
                },
            },
            ..Default::default()
        };
        let err = opened
            .events(Table::Region, &options)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains(what), "{err}");
    }
}

#[test]
fn a_table_reader_yields_the_columns_asked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 2, 3);
    let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
    let columns = ["kernel_name", "end", "grid_x"];
    let options = EventOptions {
        projection: Projection::only(Table::KernelDispatch, &columns).unwrap(),
        ..Default::default()
    };
    let reader = opened
        .events(Table::KernelDispatch, &options)
        .unwrap()
        .with_columns(&columns)
        .unwrap();
    let names: Vec<String> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, columns);
    let mut rows = 0;
    for b in reader {
        let b = b.unwrap();
        assert_eq!(b.num_columns(), 3);
        assert_eq!(b.column(2).null_count(), 0, "a projected column is filled");
        rows += b.num_rows();
    }
    assert!(rows > 0);
    let again = opened
        .events(Table::KernelDispatch, &EventOptions::default())
        .unwrap();
    let err = again.with_columns(&["colour"]).err().unwrap().to_string();
    assert!(
        err.contains("no column \"colour\"") && err.contains("kernel_name"),
        "{err}"
    );
}

fn rocpd_model_start() -> usize {
    Table::Region.column_index("start")
}

#[test]
fn a_window_and_rules_apply_to_event_streams_as_to_conversions() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 2, 4);
    let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
    let selection = rocpd::Selection {
        window: rocpd::WindowRequest {
            start: Some("25%".into()),
            end: Some("75%".into()),
            ..Default::default()
        },
        ..Default::default()
    }
    .with_rules(&["kind=kernel".into()], &[])
    .unwrap();
    let window = selection.resolve(&mut opened).unwrap().unwrap();
    let options = EventOptions {
        selection,
        ..Default::default()
    };
    let mut chunks = opened.chunks(&options).unwrap();
    let mut kept = 0;
    for chunk in chunks.by_ref() {
        for b in chunk.unwrap().batches {
            assert_eq!(b.table, Table::KernelDispatch);
            let s = b
                .batch
                .column(5)
                .as_any()
                .downcast_ref::<arrow_array::Int64Array>()
                .unwrap();
            let e = b
                .batch
                .column(6)
                .as_any()
                .downcast_ref::<arrow_array::Int64Array>()
                .unwrap();
            for r in 0..b.batch.num_rows() {
                assert!(s.value(r) >= window.0 && e.value(r) <= window.1);
                kept += 1;
            }
        }
    }
    assert!(kept > 0);
    let dropped: u64 = chunks.dropped().iter().flat_map(|d| d.rows.values()).sum();
    let total: u64 = opened.count_rows().unwrap().values().sum();
    assert_eq!(
        kept + dropped,
        total,
        "every row is kept or counted as dropped"
    );
}

#[test]
fn more_inputs_than_kept_open_convert_and_summarise() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), rocpd::KEEP_OPEN as u32 + 6, 1);
    let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
    let counts = opened.count_rows().unwrap();
    let total: u64 = counts.values().sum();
    let run = opened.summary(&Default::default(), &mut |_| {}).unwrap();
    // The summary reads every table but the counter values, which it does not show (D106).
    let pmc = counts.get(Table::PmcValue.name()).copied().unwrap_or(0);
    assert!(pmc > 0, "the generated inputs have counter values");
    assert!(!run.report.rows_in.contains_key(Table::PmcValue.name()));
    assert_eq!(run.report.rows_in.values().sum::<u64>(), total - pmc);
    let c = Conversion {
        formats: vec![Format::Pftrace],
        dir: tmp.path().join("out"),
        ..Default::default()
    };
    let report = opened.convert(&c, &mut |_| {}).unwrap();
    assert_eq!(report.rows_in.values().sum::<u64>(), total);
}

#[test]
fn a_missing_input_is_an_error_naming_it() {
    let e = Inputs::open(&["/nonexistent/a.db"], &Default::default()).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/a.db"), "{e}");
}

#[test]
fn splits_of_order_free_formats_over_more_inputs_than_a_group() {
    let tmp = tempfile::tempdir().unwrap();
    let mut inputs = generate(
        &tmp.path().join("in"),
        rocpd::INDEPENDENT_GROUP as u32 + 3,
        1,
    );
    // Latest processes first: the second group of inputs goes back in time.
    inputs.reverse();
    let mut opened = Inputs::open(&inputs, &Default::default()).unwrap();
    let total: u64 = opened.count_rows().unwrap().values().sum();
    for (k, split) in [
        Split::TimeCount(3),
        Split::Keyed(rocpd::SplitMode::Process),
        Split::Keyed(rocpd::SplitMode::Node),
    ]
    .into_iter()
    .enumerate()
    {
        let c = Conversion {
            formats: vec![Format::Parquet, Format::Rocpd],
            dir: tmp.path().join(format!("out{k}")),
            split: Some(split),
            threads: 2,
            ..Default::default()
        };
        let report = opened.convert(&c, &mut |_| {}).unwrap();
        assert_eq!(report.rows_in.values().sum::<u64>(), total);
        for fmt in ["parquet", "db"] {
            let written: u64 = report
                .outputs
                .iter()
                .filter(|o| o.path.extension().is_some_and(|e| e == fmt))
                .flat_map(|o| o.rows.values())
                .sum();
            assert_eq!(written, total, "split {k}, {fmt}");
        }
    }
}

#[test]
fn imports_on_several_threads_give_the_same_inputs_notes_and_output() {
    // Six CSV runs (decode, decode_fetch, ... prefill_stall), imported side by side.
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rocprofv3-csv-llamacpp");
    let mut seen = Vec::new();
    for threads in [1, 2, 4] {
        let options = rocpd::OpenOptions {
            threads,
            ..Default::default()
        };
        let mut inputs = Inputs::open(&[&fixture], &options).unwrap();
        assert_eq!(inputs.len(), 6);
        let out = tempfile::tempdir().unwrap();
        let c = Conversion {
            formats: vec![Format::Pftrace],
            dir: out.path().to_path_buf(),
            threads: 1,
            ..Default::default()
        };
        inputs.convert(&c, &mut |_| {}).unwrap();
        let files: Vec<String> = inputs
            .input_files()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        seen.push((
            files,
            inputs.import_notes(),
            format!("{:?}", inputs.catalog().processes),
            tree(out.path()),
        ));
    }
    assert_eq!(seen[0], seen[1], "2 threads");
    assert_eq!(seen[0], seen[2], "4 threads");
}

/// Writes llama.cpp's kernel trace into `dir` as run `prefix`, cut inside a quoted field
/// when `cut`.
fn kernel_trace_run(dir: &Path, prefix: &str, cut: bool) {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rocprofv3-csv-llamacpp");
    let mut text = std::fs::read(fixture.join("decode_kernel_trace.csv")).unwrap();
    if cut {
        text.truncate(text.len() / 2);
        text.extend_from_slice(b"\n\"unterminated");
    }
    std::fs::write(dir.join(format!("{prefix}kernel_trace.csv")), text).unwrap();
}

/// The error of opening `dir` on 1, 2 and 3 threads.
fn open_errors(dir: &Path) -> Vec<String> {
    [1, 2, 3]
        .into_iter()
        .map(|threads| {
            let options = rocpd::OpenOptions {
                threads,
                ..Default::default()
            };
            Inputs::open(&[dir], &options).unwrap_err().to_string()
        })
        .collect()
}

#[test]
fn an_import_error_is_the_first_bad_input_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    // Three runs; the second and the third have a kernel trace cut inside a quoted field.
    for prefix in ["a_", "b_", "c_"] {
        kernel_trace_run(dir.path(), prefix, prefix != "a_");
    }
    let errors = open_errors(dir.path());
    assert!(errors[0].contains("b_kernel_trace.csv"), "{}", errors[0]);
    assert_eq!(errors[0], errors[1]);
    assert_eq!(errors[0], errors[2]);
}

/// An earlier input's error comes before a later input's (D115): the first failing
/// input's error is reported, as when every error came from the import. Run a's error is
/// one the import met on its database; the direct reader now reports it the same (D126).
#[test]
fn an_error_in_the_import_of_an_earlier_run_comes_before_a_later_run_error() {
    let dir = tempfile::tempdir().unwrap();
    // Run a: two API rows with the largest correlation id. The second needs the next id
    // of the import's table, which has none left: the import fails there.
    let header = "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"";
    let row = |start: u64| {
        format!(
            "\"HIP_RUNTIME_API\",\"hipA\",1,1,{},{start},{}",
            i64::MAX,
            start + 5
        )
    };
    std::fs::write(
        dir.path().join("a_hip_api_trace.csv"),
        format!("{header}\n{}\n{}\n", row(10), row(20)),
    )
    .unwrap();
    // Run b: a kernel trace cut inside a quoted field, which the direct reader reports.
    kernel_trace_run(dir.path(), "b_", true);
    let errors = open_errors(dir.path());
    // The row whose id is taken with none larger left is named, as the import names it
    // (it used to name its temporary database and say the disk was full).
    for e in &errors {
        assert!(
            e.contains("a_hip_api_trace.csv: line 3: its id is taken by an earlier row")
                && e.ends_with("(9223372036854775807 is taken)"),
            "{e}"
        );
    }
    // Alone, run b's error is the direct reader's.
    std::fs::remove_file(dir.path().join("a_hip_api_trace.csv")).unwrap();
    let e = Inputs::open(&[dir.path()], &Default::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("b_kernel_trace.csv"), "{e}");
}

/// A run the direct reader leaves to the import says so in the notes, with why: it is
/// slower and writes a temporary database. A run read directly says nothing of the kind.
#[test]
fn a_run_left_to_the_import_says_why_in_the_notes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = generate(&tmp.path().join("gen"), 1, 3).remove(0);
    let (json, _) = rocpd_gen::export_json(&db, &tmp.path().join("json")).unwrap();
    let text = std::fs::read_to_string(&json).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut metadata = doc["rocprofiler-sdk-tool"][0]["metadata"].clone();
    metadata["node"]["hostname"] = serde_json::json!("elsewhere");
    let end = text.trim_end().strip_suffix("}]}").unwrap();
    let again = tmp.path().join("again");
    std::fs::create_dir(&again).unwrap();
    let path = again.join("again_results.json");
    std::fs::write(&path, format!("{end},\"metadata\":{metadata}}}]}}")).unwrap();
    let notes = |p: &Path| {
        Inputs::open(&[p], &Default::default())
            .unwrap()
            .import_notes()
    };
    // A Proton input first: its job comes before the runs', and the reason must stay
    // with its run.
    let proton = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/proton/generated_cpu/tree_edgecases_v3.9.0.hatchet");
    let both = Inputs::open(&[proton.as_path(), path.as_path()], &Default::default())
        .unwrap()
        .import_notes();
    let with_reason: Vec<&String> = both
        .iter()
        .filter(|n| n.contains("not read directly"))
        .collect();
    assert_eq!(with_reason.len(), 1, "{both:?}");
    assert!(with_reason[0].contains("again_results.json"), "{both:?}");
    let imported = notes(&path);
    assert!(
        imported.iter().any(|n| n.contains("again_results.json")
            && n.contains("not read directly (metadata after records)")),
        "{imported:?}"
    );
    let direct = notes(&json);
    assert!(
        !direct.iter().any(|n| n.contains("not read directly")),
        "{direct:?}"
    );
}

/// A JSON file of several process objects with bad JSON in a later object: whatever the
/// thread count, and whichever object's read gets to check the file (the first object's
/// read checks it for the others once it has, D137), the error reported is the same; the
/// same file without the fault opens on every thread count.
#[test]
fn bad_json_in_a_later_object_is_the_same_error_on_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let db = &generate(&dir.path().join("gen"), 1, 6)[0];
    let json_dir = dir.path().join("json");
    let (json, _) = rocpd_gen::export_json(db, &json_dir).unwrap();
    let one = std::fs::read_to_string(&json).unwrap();
    let text = rocpd_gen::objects_repeated(&one, 3, 500).unwrap();
    std::fs::remove_file(&json).unwrap();
    let path = json_dir.join("three_results.json");
    for threads in [1, 2, 3] {
        std::fs::write(&path, &text).unwrap();
        let options = rocpd::OpenOptions {
            threads,
            ..Default::default()
        };
        Inputs::open(&[&path], &options).unwrap();
    }
    // A colon missing in the middle object, then in the last.
    let key = "\"thread_id\":";
    let middle = text.len() / 2 + text[text.len() / 2..].find(key).unwrap();
    for at in [middle, text.rfind(key).unwrap()] {
        let broken = format!("{}\"thread_id\" {}", &text[..at], &text[at + 12..]);
        std::fs::write(&path, broken).unwrap();
        let errors = open_errors(&json_dir);
        assert!(
            errors[0].contains("three_results.json") && errors[0].contains("invalid JSON"),
            "{}",
            errors[0]
        );
        assert_eq!(errors[0], errors[1]);
        assert_eq!(errors[0], errors[2]);
    }
}

#[test]
fn a_query_result_says_which_input_rows_it_did_not_see() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let header = "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n";
    let rows = "HIP,hipMalloc,7,7,1,100,150\nHIP,hipFree,7,7,2,notanumber,250\nHIP,hipFree,7,7,3,300,350\n";
    std::fs::write(run.join("7_hip_api_trace.csv"), format!("{header}{rows}")).unwrap();
    let options = rocpd::OpenOptions {
        skip_bad_rows: true,
        threads: 1,
    };
    let mut inputs = Inputs::open(&[run.into_os_string()], &options).unwrap();
    let query = rocpd::Query {
        sql: "SELECT COUNT(*) AS n FROM regions".into(),
        format: rocpd::QueryFormat::Csv,
        threads: 1,
        ..Default::default()
    };
    let mut out = Vec::new();
    let result = inputs.query(&query, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "n\n2\n");
    // The skipped line, named, then the count.
    assert_eq!(result.notes.len(), 2, "{:?}", result.notes);
    assert!(
        result.notes[0].contains("7_hip_api_trace.csv: line 3: column start_timestamp"),
        "{:?}",
        result.notes
    );
    assert_eq!(
        result.notes[1],
        "1 input rows were skipped as bad (--skip-bad-rows); the query did not see them"
    );
    let path = tmp.path().join("q.csv");
    let to_file = inputs.query_to_file(&query, &path).unwrap();
    assert_eq!(to_file.notes, result.notes);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "n\n2\n");
}
