//! The direct rocprofv3 reader (CSV runs and JSON process objects) against the import:
//! every column of every row of every table, the catalog, counts, span and marker search
//! equal what the RocPD reader gives for the run imported into a database.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use rocpd_model::{Catalog, Projection, Table};
use rocpd_pipeline::{SortOptions, Source, StreamOptions};
use rocpd_rocprofv3::{DirectRunSource, ImportOptions, Run};

/// Every row of `table` from `source`, in one batch.
fn rows(source: &dyn Source, table: Table, batch_rows: usize) -> RecordBatch {
    let options = StreamOptions {
        projection: Projection::all(),
        batch_rows,
        tables: None,
    };
    let mut batches = Vec::new();
    for p in source.prepare(0, &options).unwrap().iter_mut() {
        if p.table() != table {
            continue;
        }
        let mut s = p.open().unwrap();
        while let Some(b) = s.next_batch().unwrap() {
            batches.push(b);
        }
    }
    arrow_select::concat::concat_batches(&table.schema(), &batches).unwrap()
}

/// The catalog without what names the files read (a temporary database, or the CSVs).
fn comparable(mut c: Catalog) -> String {
    for s in &mut c.sources {
        s.path = PathBuf::new();
        s.format = String::new();
        s.imported_from.clear();
    }
    serde_json::to_string(&c).unwrap()
}

fn one_run(dir: &Path) -> Run {
    let mut runs = rocpd_rocprofv3::group_runs(&[dir.to_path_buf()]).unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.remove(0)
}

/// Reads `run` both ways and compares everything; returns the rows per table.
fn same_as_imported(run: &Run, sort: SortOptions) -> Vec<(Table, u64)> {
    same_as_imported_with(run, sort, &ImportOptions::default())
}

/// [`same_as_imported`] with `opts` for both reads; also compares what they skipped.
fn same_as_imported_with(run: &Run, sort: SortOptions, opts: &ImportOptions) -> Vec<(Table, u64)> {
    let tmp = tempfile::tempdir().unwrap();
    let db_path = tmp.path().join("imported.db");
    let report = rocpd_rocprofv3::import(run, &db_path, opts).unwrap();
    let db = rocpd_db::Database::open(&db_path).unwrap();
    let direct = DirectRunSource::open(run, opts)
        .unwrap()
        .expect("read directly")
        .with_sort_options(sort.clone());
    assert_eq!(direct.guid(), report.guid);
    assert_eq!(direct.skipped(), report.skipped, "{}", run.label);
    assert_eq!(direct.skipped_rows(), report.skipped_rows, "{}", run.label);
    // Described and streamed on one thread (counter files after the rest, one table
    // after another) or two (beside the API files, tables side by side), the same.
    let one = DirectRunSource::open_on(run, opts, 1)
        .unwrap()
        .expect("read directly")
        .with_sort_options(sort);
    assert_eq!(one.skipped(), report.skipped, "{}: one thread", run.label);
    assert_eq!(
        comparable(one.catalog(0).unwrap()),
        comparable(direct.catalog(0).unwrap())
    );
    assert_eq!(one.count_rows().unwrap(), direct.count_rows().unwrap());
    assert_eq!(
        format!("{:?}", one.dropped().unwrap()),
        format!("{:?}", direct.dropped().unwrap())
    );
    assert_eq!(direct.ignored(), report.ignored);
    assert_eq!(
        comparable(db.catalog(0).unwrap()),
        comparable(direct.catalog(0).unwrap()),
        "{}",
        run.label
    );
    assert_eq!(
        Source::event_span(&db).unwrap(),
        direct.event_span().unwrap()
    );
    let counts = Source::count_rows(&db).unwrap();
    assert_eq!(counts, direct.count_rows().unwrap(), "{}", run.label);
    assert_eq!(
        format!("{:?}", Source::dropped(&db).unwrap()),
        format!("{:?}", direct.dropped().unwrap()),
        "{}",
        run.label
    );
    for table in Table::ALL {
        let (a, b) = (rows(&db, table, 7), rows(&direct, table, 5));
        // Read side by side (two threads) or alone (one): the same rows.
        assert!(
            rows(&one, table, 5) == b,
            "{}: {}: one thread",
            run.label,
            table.name()
        );
        same_rows(&run.label, table, &a, &b);
    }
    counts
}

/// Asserts that `a` and `b` (rows of `table`) hold the same rows, column by column.
fn same_rows(label: &str, table: Table, a: &RecordBatch, b: &RecordBatch) {
    assert_eq!(a.num_rows(), b.num_rows(), "{label}: {}", table.name());
    for (i, col) in table.columns().iter().enumerate() {
        assert!(
            a.column(i).to_data() == b.column(i).to_data(),
            "{label}: {}.{}: {:?} against {:?}",
            table.name(),
            col.name,
            a.column(i).slice(0, a.num_rows().min(4)),
            b.column(i).slice(0, b.num_rows().min(4))
        );
    }
}

/// A generated single-process trace written as a CSV set without its counter file.
fn generated(dir: &Path, seed: u64, odd_names: bool) -> PathBuf {
    let csv = generated_with_counters(dir, seed, odd_names);
    for e in std::fs::read_dir(&csv).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with("counter_collection.csv") {
            std::fs::remove_file(p).unwrap();
        }
    }
    csv
}

/// A generated single-process trace written as a CSV set.
fn generated_with_counters(dir: &Path, seed: u64, odd_names: bool) -> PathBuf {
    let cfg = rocpd_gen::GenConfig {
        seed,
        processes: 1,
        iterations: 15,
        odd_names,
        ..Default::default()
    };
    let dbs = rocpd_gen::generate(&cfg, &dir.join("gen")).unwrap();
    let (csv, _) = rocpd_gen::export_csv(&dbs[0], &dir.join("csv")).unwrap();
    csv
}

#[test]
fn a_generated_trace_reads_as_its_imported_database() {
    for (seed, odd) in [(3, true), (8, false)] {
        let tmp = tempfile::tempdir().unwrap();
        let run = one_run(&generated(tmp.path(), seed, odd));
        let counts = same_as_imported(&run, SortOptions::default());
        let n = |t: Table| counts.iter().find(|(x, _)| *x == t).unwrap().1;
        assert!(
            n(Table::Region) > 100
                && n(Table::Marker) > 5
                && n(Table::KernelDispatch) > 20
                && n(Table::MemoryCopy) > 5
                && n(Table::MemoryAllocation) > 5,
            "{counts:?}"
        );
        same_with_every_batch_spilled(&run, tmp.path());
    }
}

/// [`same_as_imported`] with a sort budget of one byte: every batch goes to disk and the
/// runs merge back; nothing is left in the spill directory.
fn same_with_every_batch_spilled(run: &Run, tmp: &Path) {
    let spill = tmp.join("spill");
    std::fs::create_dir(&spill).unwrap();
    same_as_imported(
        run,
        SortOptions {
            memory_bytes: 1,
            batch_rows: 8192,
            spill_dir: Some(spill.clone()),
        },
    );
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
}

/// Puts `bad` lines into `path` after its second row: a record with a field too few, one
/// whose `field` is not a number (when the file has that column), and, once, a stray
/// quote that runs over the lines after it.
fn spoil_csv(path: &Path, bad: usize, field: &str, stray_quote: bool) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 3, "{}", path.display());
    let header: Vec<&str> = lines[0].split(',').collect();
    let column = header.iter().position(|h| h.trim_matches('"') == field);
    let mut out: Vec<String> = lines[..3].iter().map(|l| l.to_string()).collect();
    for k in 0..bad {
        match column {
            Some(c) if k % 2 == 1 => {
                let mut fields: Vec<String> = lines[1].split(',').map(String::from).collect();
                fields[c] = "\"ten\"".into();
                out.push(fields.join(","));
            }
            _ => out.push(lines[1].rsplit_once(',').unwrap().0.to_string()),
        }
    }
    if stray_quote {
        // It runs into the next line, which opens with a quote: one field too many.
        out.push("x,\"unclosed".into());
    }
    out.extend(lines[3..].iter().map(|l| l.to_string()));
    std::fs::write(path, out.join("\n") + "\n").unwrap();
}

/// Asserts that the direct reader leaves `run` to the import (read strictly).
fn left_to_import(run: &Run) {
    let direct = DirectRunSource::open(run, &ImportOptions::default()).unwrap();
    assert!(direct.is_none(), "{} is left to the import", run.label);
}

/// Asserts that read strictly, `run` fails with the import's error, word for word, which
/// the direct reader finds without the import (D115, D116), on one thread and two.
/// Returns the error as text.
fn fails_as_imported(run: &Run) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let strict = ImportOptions::default();
    let imported = rocpd_rocprofv3::import(run, &tmp.path().join("x.db"), &strict)
        .unwrap_err()
        .to_string();
    for threads in [1, 2] {
        match DirectRunSource::open_on(run, &strict, threads) {
            Err(e) => assert_eq!(e.to_string(), imported, "{}", run.label),
            Ok(found) => panic!("{}: not an error: {}", run.label, found.is_some()),
        }
    }
    imported
}

/// `run`, which has bad rows: the import's error without `skip_bad_rows` (which reports
/// the first), read directly with it; `capped` says whether it has more skip reasons than
/// the report lists.
fn read_skipping(run: &Run, capped: bool) -> DirectRunSource {
    fails_as_imported(run);
    let skip = ImportOptions {
        skip_bad_rows: true,
    };
    let direct = DirectRunSource::open(run, &skip)
        .unwrap()
        .expect("read directly");
    let last = direct.skipped().last().unwrap();
    assert_eq!(
        last.starts_with("... and "),
        capped,
        "{:?}",
        direct.skipped()
    );
    direct
}

/// A CSV run with bad lines fails read strictly with the import's error, found without
/// the import (D115): the first bad line of the first file in the import's order,
/// although the describing pass reads the API files last and the counter files beside
/// them (on two threads), so it meets another first.
#[test]
fn csv_runs_with_bad_lines_fail_with_the_import_error() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = generated_with_counters(tmp.path(), 4, false);
    let file = |suffix: &str| {
        std::fs::read_dir(&csv)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(suffix))
            .unwrap()
    };
    let (api, kernels, counters) = (
        file("hip_api_trace.csv"),
        file("kernel_trace.csv"),
        file("counter_collection.csv"),
    );
    let originals: Vec<(PathBuf, String)> = [&api, &kernels, &counters]
        .iter()
        .map(|p| (p.to_path_buf(), std::fs::read_to_string(p).unwrap()))
        .collect();
    let restore = || {
        for (p, text) in &originals {
            std::fs::write(p, text).unwrap();
        }
    };
    // (files spoiled, the file the error names)
    let cases: [(&[&PathBuf], &PathBuf); 4] = [
        (&[&counters], &counters),
        (&[&kernels, &counters], &kernels),
        (&[&counters, &api], &api),
        (&[&kernels, &counters, &api], &api),
    ];
    for (spoiled, named) in cases {
        restore();
        for p in spoiled {
            spoil_csv(p, 1, "End_Timestamp", false);
        }
        let e = fails_as_imported(&one_run(&csv));
        let name = named.file_name().unwrap().to_string_lossy();
        assert!(e.contains(name.as_ref()) && e.contains("line 4"), "{e}");
    }
}

/// A run whose import fails on its database before the first bad line (a taken id with
/// no larger id left for it) fails with the import's error, naming that row, found
/// without the import (D123, D126); the bad line's error, which the describing pass meets
/// first (it reads the API files last), is not the import's (D115).
#[test]
fn a_run_with_no_id_left_for_a_taken_id_fails_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let row = |start: u64| {
        format!(
            "\"HIP_RUNTIME_API\",\"hipA\",1,1,{},{start},{}",
            i64::MAX,
            start + 5
        )
    };
    let kernels =
        std::fs::read_to_string("../../fixtures/rocprofv3-csv-docs/kernel_trace.csv").unwrap();
    std::fs::create_dir(&dir).unwrap();
    let api = format!("{API_HEADER}\n{}\n{}\n", row(10), row(20));
    std::fs::write(dir.join("1_hip_api_trace.csv"), api).unwrap();
    let bad = format!("{kernels}\"KERNEL_DISPATCH\",1\n");
    std::fs::write(dir.join("1_kernel_trace.csv"), bad).unwrap();
    let run = one_run(&dir);
    let e = fails_as_imported(&run);
    assert!(!e.contains("kernel_trace.csv"), "{e}");
    // The import names the row and why, not its database (D123).
    assert!(
        e.contains("1_hip_api_trace.csv: line 3: its id is taken by an earlier row"),
        "{e}"
    );
}

/// The JSON form of the last test: two API records with the largest correlation id. The
/// describing pass's API read is replayed from a recording on two threads (D139); the
/// second record's error is the import's either way, word for word.
#[test]
fn a_json_object_with_no_id_left_for_a_taken_id_fails_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = generated_doc(tmp.path(), 12);
    let records = hip_api(&mut doc);
    for i in [0, 1] {
        records[i]["correlation_id"]["internal"] = serde_json::json!(i64::MAX);
    }
    let path = tmp.path().join("max_results.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    let run = one_run(&path);
    let e = fails_as_imported(&run);
    assert!(e.contains("its id is taken by an earlier row"), "{e}");
}

#[test]
fn csv_runs_with_bad_lines_skipped_read_as_imported() {
    let skip = ImportOptions {
        skip_bad_rows: true,
    };
    // A few bad lines in several files, then more than the report lists (20), spread
    // over files the describing pass reads in another order than the import (API files
    // last, counter files beside them): the same rows, reasons and counts.
    for (seed, many) in [(5, false), (6, true)] {
        let tmp = tempfile::tempdir().unwrap();
        let csv = generated_with_counters(tmp.path(), seed, false);
        let n = if many { 9 } else { 1 };
        let mut spoiled = 0;
        for e in std::fs::read_dir(&csv).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let (field, quote) = if name.ends_with("hip_api_trace.csv") {
                ("Start_Timestamp", false)
            } else if name.ends_with("kernel_trace.csv") {
                ("End_Timestamp", false)
            } else if name.ends_with("memory_copy_trace.csv") {
                ("Start_Timestamp", true)
            } else if name.ends_with("counter_collection.csv") {
                ("Counter_Value", false)
            } else {
                continue;
            };
            spoil_csv(&p, n, field, quote);
            spoiled += 1;
        }
        assert_eq!(spoiled, 4, "{}", csv.display());
        let run = one_run(&csv);
        let direct = read_skipping(&run, many);
        assert!(
            direct.skipped_rows() >= 4 * n as u64,
            "{}",
            direct.skipped_rows()
        );
        // The stray quote's record was resynchronised (listed when few are listed).
        assert_eq!(
            direct
                .skipped()
                .iter()
                .any(|s| s.contains("reading resumes at line")),
            !many,
            "{:?}",
            direct.skipped()
        );
        same_as_imported_with(&run, SortOptions::default(), &skip);
    }
}

#[test]
fn a_gzip_compressed_trace_reads_as_its_imported_database() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let csv = generated_with_counters(tmp.path(), 4, true);
    for e in std::fs::read_dir(&csv).unwrap() {
        let p = e.unwrap().path();
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(format!("{}.gz", p.display())).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(&std::fs::read(&p).unwrap()).unwrap();
        gz.finish().unwrap();
        std::fs::remove_file(&p).unwrap();
    }
    let run = one_run(&csv);
    assert!(run
        .files
        .iter()
        .all(|f| f.to_string_lossy().ends_with(".csv.gz")));
    same_as_imported(&run, SortOptions::default());
}

#[test]
fn markers_are_found_as_the_database_finds_them() {
    let tmp = tempfile::tempdir().unwrap();
    let run = one_run(&generated(tmp.path(), 5, false));
    let db_path = tmp.path().join("imported.db");
    rocpd_rocprofv3::import(&run, &db_path, &ImportOptions::default()).unwrap();
    let db = rocpd_db::Database::open(&db_path).unwrap();
    let direct = DirectRunSource::open(&run, &ImportOptions::default())
        .unwrap()
        .unwrap();
    let markers = rows(&db, Table::Marker, 100);
    let message = markers
        .column(Table::Marker.column_index("message"))
        .as_string::<i32>();
    let mut names: Vec<String> = (0..markers.num_rows())
        .filter(|&r| !message.is_null(r))
        .map(|r| message.value(r).to_string())
        .collect();
    names.dedup();
    names.truncate(6);
    assert!(!names.is_empty());
    for name in names.iter().map(String::as_str).chain(["no such marker"]) {
        assert_eq!(
            db.find_marker(name).unwrap(),
            direct.find_marker(name).unwrap(),
            "{name}"
        );
    }
}

/// What the import does with the database, the direct reader leaves to the import.
#[test]
fn runs_that_need_the_database_are_left_to_the_import() {
    let tmp = tempfile::tempdir().unwrap();
    // Two API rows with one correlation id: the import gives the second a new id.
    let header = "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"";
    let write = |name: &str, body: &str| {
        let dir = tmp.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("1_hip_api_trace.csv"), format!("{header}\n{body}")).unwrap();
        one_run(&dir)
    };
    let twice = write(
        "twice",
        "\"HIP_RUNTIME_API\",\"hipA\",1,1,5,10,20\n\"HIP_RUNTIME_API\",\"hipB\",1,1,5,30,40\n",
    );
    // Read directly since D110, with the id the import gives the second row.
    same_as_imported(&twice, SortOptions::default());
    // A bad row: the direct reader reports it as the import does.
    let bad = write("bad", "\"HIP_RUNTIME_API\",\"hipA\",1,1,5,ten,20\n");
    fails_as_imported(&bad);
    let skip = ImportOptions {
        skip_bad_rows: true,
    };
    same_as_imported_with(&bad, SortOptions::default(), &skip);
    // A plain one is read directly.
    let plain = write(
        "plain",
        "\"HIP_RUNTIME_API\",\"hipA\",1,1,5,10,20\n\"MARKER_CORE_API\",\"step\",1,2,6,12,18\n",
    );
    same_as_imported(&plain, SortOptions::default());
}

#[test]
fn real_trace_files_without_counters_read_as_imported() {
    // The documentation's and llama.cpp's trace files of every kind but counters, as
    // runs of their own.
    let mut cases = Vec::new();
    for (dir, files) in [
        (
            "rocprofv3-csv-docs",
            &[
                "kernel_trace.csv",
                "hip_api_trace.csv",
                "memory_copy_trace.csv",
                "memory_allocation_trace.csv",
                "scratch_memory_trace.csv",
                "hip_api_stats.csv",
            ][..],
        ),
        // The documentation's API files are of different runs (their ids overlap).
        ("rocprofv3-csv-docs", &["hsa_api_trace.csv"][..]),
        ("rocprofv3-csv-docs", &["marker_api_trace.csv"][..]),
        (
            "rocprofv3-csv-llamacpp",
            &["decode_hip_api_trace.csv", "decode_kernel_trace.csv"][..],
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let run_dir = tmp.path().join("run");
        std::fs::create_dir(&run_dir).unwrap();
        for f in files {
            let from = Path::new("../../fixtures").join(dir).join(f);
            if from.exists() {
                std::fs::copy(&from, run_dir.join(f)).unwrap();
            }
        }
        cases.push((tmp, run_dir));
    }
    // Kernel traces of every header generation, each a run of its own.
    let historical = Path::new("../../fixtures/rocprofv3-csv-docs/historical");
    for e in std::fs::read_dir(historical).unwrap() {
        let from = e.unwrap().path();
        let name = from.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("kernel_trace__") {
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        let run_dir = tmp.path().join("run");
        std::fs::create_dir(&run_dir).unwrap();
        std::fs::copy(&from, run_dir.join("kernel_trace.csv")).unwrap();
        cases.push((tmp, run_dir));
    }
    assert!(cases.len() >= 9);
    for (_tmp, dir) in &cases {
        for run in rocpd_rocprofv3::group_runs(std::slice::from_ref(dir)).unwrap() {
            same_as_imported(&run, SortOptions::default());
        }
    }
}

/// The documentation's directory as a user gives it (`-i fixtures/rocprofv3-csv-docs`):
/// every run it groups is read directly and as imported, the unprefixed one too, whose API
/// files come from different runs and take each other's correlation ids (D110).
#[test]
fn every_run_of_the_documentation_directory_reads_as_imported() {
    let docs = Path::new("../../fixtures/rocprofv3-csv-docs").to_path_buf();
    let runs = rocpd_rocprofv3::group_runs(&[docs]).unwrap();
    assert!(runs.len() >= 10, "{}", runs.len());
    let mut checked = 0;
    for run in &runs {
        assert!(
            DirectRunSource::open(run, &ImportOptions::default())
                .unwrap()
                .is_some(),
            "{} is read directly",
            run.label
        );
        let counts = same_as_imported(run, SortOptions::default());
        // Every API row of the run is a region or marker row, those whose id was taken too.
        let api_lines: usize = run
            .files
            .iter()
            .filter(|f| f.to_string_lossy().ends_with("api_trace.csv"))
            .map(|f| std::fs::read_to_string(f).unwrap().lines().skip(1).count())
            .sum();
        if run.files.len() > 5 {
            let rows = |t: Table| counts.iter().find(|(c, _)| *c == t).unwrap().1;
            assert_eq!(
                rows(Table::Region) + rows(Table::Marker),
                api_lines as u64,
                "{}",
                run.label
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 1);
}

/// Files that change between the describing pass and a stream fail the stream with an
/// error naming the file, never a panic, and never fewer rows: a file cut short at a line's
/// end would otherwise read cleanly (D163). Put back as it was, the file reads again.
#[test]
fn files_changed_after_opening_give_errors_not_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = generated(tmp.path(), 6, false);
    let run = one_run(&csv);
    let direct = DirectRunSource::open(&run, &ImportOptions::default())
        .unwrap()
        .unwrap();
    let file_of = |kind: &str| {
        run.files
            .iter()
            .find(|f| f.to_string_lossy().ends_with(kind))
            .unwrap()
            .clone()
    };
    let (kernel, api) = (file_of("kernel_trace.csv"), file_of("hip_api_trace.csv"));
    let original = std::fs::read_to_string(&kernel).unwrap();
    let modified = std::fs::metadata(&kernel).unwrap().modified().unwrap();
    let header = original.lines().next().unwrap().to_string();
    let options = StreamOptions {
        projection: Projection::all(),
        batch_rows: 64,
        tables: None,
    };
    let drain = |source: &DirectRunSource| -> Result<u64, String> {
        let mut n = 0;
        for mut p in source.prepare(0, &options).map_err(|e| e.to_string())? {
            let mut s = p.open().map_err(|e| e.to_string())?;
            while let Some(b) = s.next_batch().map_err(|e| e.to_string())? {
                n += b.num_rows() as u64;
            }
        }
        Ok(n)
    };
    let all = drain(&direct).unwrap();
    let changed = |e: &str| {
        assert!(
            e.contains("kernel_trace.csv: whole file: changed while being converted"),
            "{e}"
        )
    };
    // A bad row appended; the last row cut off at its line's end; only the header left.
    let last_line = original.trim_end().rfind('\n').unwrap() + 1;
    for text in [
        format!("{original}{}\n", "x,".repeat(5)),
        original[..last_line].to_string(),
        format!("{header}\n"),
    ] {
        std::fs::write(&kernel, text).unwrap();
        changed(&drain(&direct).unwrap_err());
    }
    // The same bytes written again later: changed too, by its time.
    std::fs::write(&kernel, &original).unwrap();
    let f = std::fs::File::options().write(true).open(&kernel).unwrap();
    f.set_modified(modified + std::time::Duration::from_secs(10))
        .unwrap();
    let e = drain(&direct).unwrap_err();
    assert!(e.contains("written again"), "{e}");
    // As it was: the same rows.
    f.set_modified(modified).unwrap();
    assert_eq!(drain(&direct).unwrap(), all);
    // The API file gone: an error naming it.
    std::fs::remove_file(&api).unwrap();
    let e = drain(&direct).unwrap_err();
    assert!(e.contains("hip_api_trace.csv"), "{e}");
}

#[test]
fn generated_traces_with_counter_files_read_as_imported() {
    for (seed, odd) in [(3, true), (9, false)] {
        let tmp = tempfile::tempdir().unwrap();
        let run = one_run(&generated_with_counters(tmp.path(), seed, odd));
        assert!(run
            .files
            .iter()
            .any(|f| f.to_string_lossy().ends_with("counter_collection.csv")));
        let counts = same_as_imported(&run, SortOptions::default());
        let n = |t: Table| counts.iter().find(|(x, _)| *x == t).unwrap().1;
        assert!(n(Table::PmcValue) > 50, "{counts:?}");
        same_with_every_batch_spilled(&run, tmp.path());
    }
}

/// Counter rows of dispatches whose ids lie a page apart or more, some found in a kernel
/// trace and some made by the counter rows: their facts are kept by rank among the
/// counted dispatches (D119), in pages written out and read back, and the run reads as
/// imported.
#[test]
fn counter_rows_of_scattered_dispatch_ids_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    // 600 dispatches 1,000 ids apart (more pages of 512 ids than the density rule of a
    // page map of dispatch ids took), every other one in the kernel trace.
    let (mut traced, mut counted) = (Vec::new(), Vec::new());
    for k in 1..=600i64 {
        let start = 1_000_000 + k * 100;
        let d = Dispatch {
            agent: "Agent 4",
            id: k * 1000 + k % 7,
            correlation: k,
            kernel: "kern",
            start,
            end: start + 50,
        };
        if k % 2 == 0 {
            traced.push(d.kernel_row());
        }
        counted.push(d.counter_row(15606, k as f64));
    }
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    write_csv(&dir, "kernel_trace.csv", KERNEL_HEADER, &traced);
    write_csv(&dir, "counter_collection.csv", COUNTER_HEADER, &counted);
    let run = one_run(&dir);
    let counts = same_as_imported(&run, SortOptions::default());
    let n = |t: Table| counts.iter().find(|(x, _)| *x == t).unwrap().1;
    assert_eq!(
        (n(Table::PmcValue), n(Table::KernelDispatch)),
        (600, 600),
        "{counts:?}"
    );
    let source = DirectRunSource::open(&run, &ImportOptions::default())
        .unwrap()
        .expect("read directly");
    let values = rows(&source, Table::PmcValue, 1000);
    let value = values.column_by_name("value").unwrap();
    let value = value.as_primitive::<arrow_array::types::Float64Type>();
    let dispatch = ints(&values, values.schema().index_of("dispatch_id").unwrap());
    // Each value is its own dispatch's (the counter value is the row's ordinal).
    for (i, d) in dispatch.iter().enumerate() {
        let k = value.value(i) as i64;
        assert_eq!(*d, k * 1000 + k % 7);
    }
}

/// A run whose kernels are few in each page of 512 correlation ids, with many bytes of
/// input behind each page (here one launching call with a 24 KB name each; in rocprofv3's
/// traces, many HIP calls between launches): past 256 pages it was imported, and now
/// reads directly as imported, the groups' file staying within the input's size (D120).
#[test]
fn kernels_few_among_many_api_bytes_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let long = "Call".repeat(6000);
    let ids = || (1..=300i64).map(|k| k * 512 + k % 7);
    // Each call its own name, so that a JSON object's strings carry the bytes too.
    let calls: Vec<String> = ids()
        .map(|c| {
            let start = 1_000_000 + c * 1000;
            format!(
                "\"HIP_RUNTIME_API\",\"hip{c}{long}\",1,7,{c},{start},{}",
                start + 400
            )
        })
        .collect();
    let kernels: Vec<String> = ids()
        .zip(1..)
        .map(|(c, id)| {
            let start = 1_000_000 + c * 1000 + 500;
            let d = Dispatch {
                agent: "Agent 4",
                id,
                correlation: c,
                kernel: "kern",
                start,
                end: start + 300,
            };
            d.kernel_row()
        })
        .collect();
    let source = csv_run_as_imported(
        &tmp.path().join("run"),
        &[
            ("1_hip_api_trace.csv", API_HEADER, &strs(&calls)),
            ("1_kernel_trace.csv", KERNEL_HEADER, &strs(&kernels)),
        ],
    );
    // Every kernel has its launching call: the groups of all 300 pages were kept.
    let batch = rows(&source, Table::KernelDispatch, 4096);
    let launched = batch.column_by_name("has_launcher").unwrap().as_boolean();
    assert_eq!((launched.len(), launched.true_count()), (300, 300));
    // The same run as a JSON object (its import exported as rocprofv3 writes JSON).
    let db = tmp.path().join("run.db");
    let run = one_run(&tmp.path().join("run"));
    rocpd_rocprofv3::import(&run, &db, &ImportOptions::default()).unwrap();
    let (json, _) = rocpd_gen::export_json(&db, &tmp.path().join("json")).unwrap();
    let counts = read_directly_as_imported(&json);
    assert!(counts.contains(&(Table::KernelDispatch, 300)), "{counts:?}");
}

/// Three more cases of D120's input rule, each found by a review: counter rows that make
/// scattered dispatches are described beside the API files on two threads by a describer
/// that had no allowance (so the run was imported on two threads and read directly on
/// one); and the bytes of files the import does not read (PC sampling) counted as input.
#[test]
fn the_input_rule_counts_imported_files_on_any_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = Path::new("../../fixtures/rocprofv3-csv-docs");
    let pc_header = std::fs::read_to_string(docs.join("pc_sampling_host_trap.csv")).unwrap();
    let pc_header = pc_header.lines().next().unwrap();
    let long = "k".repeat(24_000);
    let ids = || (1..=300i64).map(|k| k * 512 + k % 5);
    let start = |c: i64| 1_000_000 + c * 1000;
    // One traced kernel and its call, and 300 dispatches made by counter rows with long
    // kernel names, their correlation ids one a page.
    let dispatch = |id: i64, correlation: i64, kernel: &'static str| Dispatch {
        agent: "Agent 4",
        id,
        correlation,
        kernel,
        start: start(correlation) + 500,
        end: start(correlation) + 800,
    };
    let kernel = dispatch(1, 1, "kern").kernel_row();
    let calls: Vec<String> = std::iter::once(1)
        .chain(ids())
        .map(|c| {
            format!(
                "\"HIP_RUNTIME_API\",\"hipLaunchKernel\",1,7,{c},{},{}",
                start(c),
                start(c) + 400
            )
        })
        .collect();
    let counters: Vec<String> = ids()
        .zip(2..)
        .map(|(c, id)| {
            let name = format!("{long}{id}");
            Dispatch {
                kernel: &name,
                ..dispatch(id, c, "")
            }
            .counter_row(1, 1.0)
        })
        .collect();
    let dir = tmp.path().join("made");
    let kernels = [kernel];
    csv_run_as_imported(
        &dir,
        &[
            ("1_kernel_trace.csv", KERNEL_HEADER, &strs(&kernels)),
            ("1_hip_api_trace.csv", API_HEADER, &strs(&calls)),
            ("1_counter_collection.csv", COUNTER_HEADER, &strs(&counters)),
        ],
    );
    let run = one_run(&dir);
    for threads in [1, 2] {
        let direct = DirectRunSource::open_on(&run, &ImportOptions::default(), threads).unwrap();
        assert!(direct.is_some(), "{threads} threads");
    }

    // 300 kernels one a page with nothing else, and 12 MB of PC samples beside: the
    // samples are not imported (their bytes allow no pages, a unit test of the describer
    // checks), and the kernels' pages fit the map's memory and then compress to less than
    // their rows, so the run reads directly (D149; it was imported before).
    let kernels: Vec<String> = ids()
        .zip(1..)
        .map(|(c, id)| dispatch(id, c, "kern").kernel_row())
        .collect();
    let samples: Vec<String> = (0..150_000)
        .map(|i| {
            format!(
                "{},65535,1,\"s_endpgm {long:.40}\",\"\",1",
                3_464_444_413_017_201i64 + i
            )
        })
        .collect();
    let dir = tmp.path().join("sampled");
    std::fs::create_dir(&dir).unwrap();
    write_csv(&dir, "1_kernel_trace.csv", KERNEL_HEADER, &kernels);
    write_csv(&dir, "1_pc_sampling_host_trap.csv", pc_header, &samples);
    let run = one_run(&dir);
    assert!(
        std::fs::metadata(dir.join("1_pc_sampling_host_trap.csv"))
            .unwrap()
            .len()
            > 10 << 20
    );
    let counts = same_as_imported(&run, SortOptions::default());
    assert!(counts.contains(&(Table::KernelDispatch, 300)), "{counts:?}");
}

/// A crafted run naming a new agent on every kernel row, with counter values: more
/// agents than a PMC fact indexes (2^16) leaves it to the import instead of failing in
/// the PMC stream with an internal error; fewer reads directly as imported. (Agents are
/// found through indexes now: a scan of every agent for every row took 17 s for 70,000.)
#[test]
fn a_run_naming_a_new_agent_on_every_row_reads_or_is_imported() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, n) in [("few", 3000i64), ("many", 65_537)] {
        let (mut kernels, mut counters) = (Vec::new(), Vec::new());
        for k in 1..=n {
            let agent = format!("Agent {k}");
            let start = 1_000_000 + k * 1000;
            let d = Dispatch {
                agent: &agent,
                id: k,
                correlation: k,
                kernel: "kern",
                start,
                end: start + 700,
            };
            kernels.push(d.kernel_row());
            counters.push(d.counter_row(15606, k as f64));
        }
        let files = [
            ("kernel_trace.csv", KERNEL_HEADER, &kernels),
            ("counter_collection.csv", COUNTER_HEADER, &counters),
        ];
        let dir = tmp.path().join(name);
        if name == "few" {
            let files: Vec<(&str, &str, Vec<&str>)> =
                files.iter().map(|(f, h, r)| (*f, *h, strs(r))).collect();
            let borrowed: Vec<(&str, &str, &[&str])> =
                files.iter().map(|(f, h, r)| (*f, *h, &r[..])).collect();
            csv_run_as_imported(&dir, &borrowed);
        } else {
            std::fs::create_dir(&dir).unwrap();
            for (file, head, rows) in &files {
                write_csv(&dir, file, head, rows);
            }
            left_to_import(&one_run(&dir));
        }
    }
}

/// The real llama.cpp decode trace, forty times over (ids and times shifted) with every
/// third kernel kept: a few kernels in each page of 512 correlation ids, the others
/// taken by calls of domains not traced. Its flow groups pass 256 pages at 7 kernels a
/// page; it was imported, and reads directly as imported (D120).
#[test]
fn a_long_real_decode_trace_with_sparse_kernels_reads_as_imported() {
    let real = Path::new("../../fixtures/rocprofv3-csv-llamacpp");
    let read = |name: &str| std::fs::read_to_string(real.join(name)).unwrap();
    // Every field is quoted: `","` splits them.
    let fields = |line: &str| -> Vec<String> {
        let inner = line.trim().trim_start_matches('"').trim_end_matches('"');
        inner.split("\",\"").map(String::from).collect()
    };
    let join = |f: &[String]| format!("\"{}\"", f.join("\",\""));
    let repeated = |name: &str, shifted: &[(&str, i64)], keep: usize| -> (String, Vec<String>) {
        let text = read(name);
        let mut lines = text.lines();
        let header = lines.next().unwrap().to_string();
        let names = fields(&header);
        let at = |n: &str| names.iter().position(|x| x == n).unwrap();
        let body: Vec<Vec<String>> = lines.map(fields).collect();
        let mut out = Vec::new();
        for copy in 0..40i64 {
            for row in body.iter().step_by(keep) {
                let mut row = row.clone();
                for (column, by) in shifted {
                    let v: i64 = row[at(column)].parse().unwrap();
                    row[at(column)] = (v + copy * by).to_string();
                }
                out.push(join(&row));
            }
        }
        (header, out)
    };
    let times = 100_000_000;
    let shift = [
        ("Correlation_Id", 30_000),
        ("Start_Timestamp", times),
        ("End_Timestamp", times),
    ];
    let (api_header, calls) = repeated("decode_hip_api_trace.csv", &shift, 1);
    let mut kernel_shift = shift.to_vec();
    kernel_shift.push(("Dispatch_Id", 1000));
    let (kernel_header, kernels) = repeated("decode_kernel_trace.csv", &kernel_shift, 3);
    let tmp = tempfile::tempdir().unwrap();
    let source = csv_run_as_imported(
        &tmp.path().join("decode"),
        &[
            ("decode_hip_api_trace.csv", &api_header, &strs(&calls)),
            ("decode_kernel_trace.csv", &kernel_header, &strs(&kernels)),
        ],
    );
    let batch = rows(&source, Table::KernelDispatch, 4096);
    assert_eq!(batch.num_rows(), kernels.len());
    let launched = batch.column_by_name("has_launcher").unwrap().as_boolean();
    // Eight of each copy's 48 kernels were launched by a call the HIP trace has.
    assert_eq!(launched.true_count(), 8 * 40);
}

/// API rows whose correlation ids spread over more than the 16,384 pages of 4,096 ids the
/// region ids were kept in (rocprofv3 numbers every call it intercepts, traced or not, so
/// a long trace's ids spread so): read directly as imported, a taken id among them moved
/// as the import moves it (D140); so are ids one to a page of 32,768 (D142), up to the
/// pages a map may have.
#[test]
fn api_rows_spread_over_many_id_pages_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let header = "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"";
    let write = |name: &str, ids: &mut dyn Iterator<Item = i64>| {
        let dir = tmp.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let mut body = String::from(header);
        for (k, id) in ids.enumerate() {
            let start = 1_000 + 10 * k as i64;
            body.push_str(&format!(
                "\n\"HIP_RUNTIME_API\",\"hipCall{}\",7,7,{id},{start},{}",
                k % 3,
                start + 5
            ));
        }
        std::fs::write(dir.join("7_hip_api_trace.csv"), body + "\n").unwrap();
        one_run(&dir)
    };
    // 17,000 ids 4,096 apart (70M ids), then one taken again: it moves past the largest.
    let mut spread = (0..17_000).map(|k: i64| 1 + k * 4096).chain([4097]);
    let run = write("spread", &mut spread);
    let counts = same_as_imported(&run, SortOptions::default());
    assert!(counts.contains(&(Table::Region, 17_001)), "{counts:?}");
    // One id to each page of 32,768 ids, 17,000 pages (a 1 MB input): their pages are
    // nearly empty and compress to little, so the file stays within the input (D142).
    let mut scattered = (0..17_000).map(|k: i64| 1 + k * 40_000);
    same_as_imported(&write("scattered", &mut scattered), SortOptions::default());
    // Past the 131,072 pages a map may have (their index in memory): left to the import.
    let mut beyond = (0..131_073).map(|k: i64| 1 + k * 32_768);
    let beyond = write("beyond", &mut beyond);
    let why = DirectRunSource::open_or_why(&beyond, &ImportOptions::default(), 1).unwrap();
    assert_eq!(why.err(), Some("correlation ids too scattered"));
}

/// Counter files of every header generation, alone (their rows make the dispatches) and
/// beside kernel traces (their rows find them, and give a thread to dispatches that have
/// none), with and without time.
#[test]
fn real_counter_files_read_as_imported() {
    let docs = Path::new("../../fixtures/rocprofv3-csv-docs");
    let historical = docs.join("historical");
    let counter_files: Vec<PathBuf> = std::fs::read_dir(&historical)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("counter_collection__") || name.starts_with("kernel_names__")
        })
        .chain([docs.join("counter_collection.csv")])
        .collect();
    let kernel_traces: Vec<Option<PathBuf>> = std::fs::read_dir(&historical)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("kernel_trace__")
        })
        .chain([docs.join("kernel_trace.csv")])
        .map(Some)
        .chain([None])
        .collect();
    assert!(counter_files.len() >= 5 && kernel_traces.len() >= 7);
    let mut pmc_rows = 0;
    let mut untimed = 0;
    for counters in &counter_files {
        for trace in &kernel_traces {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("run");
            std::fs::create_dir(&dir).unwrap();
            std::fs::copy(counters, dir.join("counter_collection.csv")).unwrap();
            if let Some(t) = trace {
                std::fs::copy(t, dir.join("kernel_trace.csv")).unwrap();
            }
            for run in rocpd_rocprofv3::group_runs(std::slice::from_ref(&dir)).unwrap() {
                let direct = DirectRunSource::open(&run, &ImportOptions::default())
                    .unwrap()
                    .unwrap_or_else(|| panic!("{} is read directly", run.label));
                untimed += direct.dropped().unwrap().len();
                let counts = same_as_imported(&run, SortOptions::default());
                pmc_rows += counts
                    .iter()
                    .find(|(t, _)| *t == Table::PmcValue)
                    .unwrap()
                    .1;
            }
        }
    }
    assert!(pmc_rows > 100, "{pmc_rows}");
    assert!(untimed > 0, "no case has counter values without time");
}

/// Counter values sort as the database orders them: by their dispatch's time, then its
/// event, then the counter, then the value's id. Here two dispatches share their times
/// and the counter file lists them, and their counters, in other orders than those.
#[test]
fn counter_values_sort_by_dispatch_event_and_counter() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let kernel_header = KERNEL_HEADER;
    let kernel = |dispatch: i64| {
        format!("\"KERNEL_DISPATCH\",\"Agent 1\",1,1,7,{dispatch},10,\"k\",{dispatch},100,200,0,0,8,0,16,64,1,1,1024,1,1")
    };
    std::fs::write(
        dir.join("kernel_trace.csv"),
        format!("{kernel_header}\n{}\n{}\n", kernel(5), kernel(2)),
    )
    .unwrap();
    let counter_header = COUNTER_HEADER;
    let value = |dispatch: i64, counter: &str, v: f64| {
        format!("{dispatch},{dispatch},\"Agent 1\",1,7,7,1024,10,\"k\",64,0,0,8,0,16,\"{counter}\",{v},100,200")
    };
    let rows = [
        value(2, "SQ_WAVES", 1.0),
        value(2, "GRBM_COUNT", 2.0),
        value(5, "GRBM_COUNT", 3.0),
        value(5, "SQ_WAVES", 4.0),
    ];
    write_csv(&dir, "counter_collection.csv", counter_header, &rows);
    let run = one_run(&dir);
    same_as_imported(&run, SortOptions::default());
    let direct = DirectRunSource::open(&run, &ImportOptions::default())
        .unwrap()
        .unwrap();
    let pmc = rows_of(&direct);
    // Dispatch 5's event comes first (the kernel trace lists it first), SQ_WAVES is
    // counter 1 (the file names it first).
    assert_eq!(pmc, [(5, 1, 4.0), (5, 2, 3.0), (2, 1, 1.0), (2, 2, 2.0)]);
}

/// (dispatch id, counter id, value) of every PMC row of `source`, in stream order.
fn rows_of(source: &dyn Source) -> Vec<(i64, i64, f64)> {
    use arrow_array::types::{Float64Type, Int64Type};
    let b = rows(source, Table::PmcValue, 3);
    let int = |name: &str| {
        b.column(Table::PmcValue.column_index(name))
            .as_primitive::<Int64Type>()
            .clone()
    };
    let (dispatch, counter) = (int("dispatch_id"), int("pmc_id"));
    let value = b
        .column(Table::PmcValue.column_index("value"))
        .as_primitive::<Float64Type>()
        .clone();
    (0..b.num_rows())
        .map(|i| (dispatch.value(i), counter.value(i), value.value(i)))
        .collect()
}

/// A generated single-process trace written as a rocprofv3 JSON file.
fn generated_json(dir: &Path, seed: u64, odd_names: bool) -> PathBuf {
    generated_json_of(dir, seed, odd_names, 15)
}

fn generated_json_of(dir: &Path, seed: u64, odd_names: bool, iterations: u32) -> PathBuf {
    let cfg = rocpd_gen::GenConfig {
        seed,
        processes: 1,
        iterations,
        odd_names,
        ..Default::default()
    };
    let dbs = rocpd_gen::generate(&cfg, &dir.join("gen")).unwrap();
    let (json, _) = rocpd_gen::export_json(&dbs[0], &dir.join("json")).unwrap();
    json
}

/// The HIP API records of a generated document's process object.
fn hip_api(doc: &mut serde_json::Value) -> &mut Vec<serde_json::Value> {
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["hip_api"]
        .as_array_mut()
        .unwrap()
}

/// A generated JSON file (of plain names) as a document to edit.
fn generated_doc(dir: &Path, seed: u64) -> serde_json::Value {
    generated_text_and_doc(dir, seed).1
}

/// A generated JSON file (of plain names): its text, in rocprofv3's member order, and
/// its document.
fn generated_text_and_doc(dir: &Path, seed: u64) -> (String, serde_json::Value) {
    let json = generated_json(dir, seed, false);
    let text = std::fs::read_to_string(json).unwrap();
    let doc = serde_json::from_str(&text).unwrap();
    (text, doc)
}

/// The counts of the JSON file at `path`, which must be read directly, after every row
/// is compared with its import.
fn read_directly_as_imported(path: &Path) -> Vec<(Table, u64)> {
    let run = one_run(path);
    assert!(DirectRunSource::open(&run, &ImportOptions::default())
        .unwrap()
        .is_some());
    same_as_imported(&run, SortOptions::default())
}

#[test]
fn a_generated_json_trace_reads_as_its_imported_database() {
    for (seed, odd) in [(3, true), (8, false)] {
        let tmp = tempfile::tempdir().unwrap();
        let json = generated_json(tmp.path(), seed, odd);
        let counts = read_directly_as_imported(&json);
        let n = |t: Table| counts.iter().find(|(x, _)| *x == t).unwrap().1;
        assert!(
            n(Table::Region) > 100
                && n(Table::Marker) > 5
                && n(Table::KernelDispatch) > 20
                && n(Table::MemoryCopy) > 5
                && n(Table::MemoryAllocation) > 5
                && n(Table::PmcValue) > 50,
            "{counts:?}"
        );
        same_with_every_batch_spilled(&one_run(&json), tmp.path());
    }
}

/// Sections of a MiB and more are noted by the first read of a plain JSON file, and the
/// later reads jump over those they skip by opening the file again past them: the rows
/// are the same as the import's, which reads every byte.
#[test]
fn reads_that_jump_over_large_sections_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json_of(tmp.path(), 4, true, 500);
    let size = std::fs::metadata(&json).unwrap().len();
    assert!(
        size > 8 << 20,
        "sections of a MiB need a larger file: {size}"
    );
    let counts = read_directly_as_imported(&json);
    let n = |t: Table| counts.iter().find(|(x, _)| *x == t).unwrap().1;
    assert!(
        n(Table::Region) > 5_000 && n(Table::KernelDispatch) > 1_000,
        "{counts:?}"
    );
}

/// A file of several large process objects, each opened on its own as a library user
/// may: every object reads directly and as its import, its reads jumping over the other
/// objects where they need not check them (the pre-scan noted them, D136, D137).
#[test]
fn each_large_object_of_a_json_file_reads_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json_of(tmp.path(), 8, false, 150);
    let one = std::fs::read_to_string(&json).unwrap();
    let text = rocpd_gen::objects_repeated(&one, 3, 300).unwrap();
    assert!(
        text.len() > 3 << 21,
        "objects of over a MiB: {}",
        text.len()
    );
    let path = tmp.path().join("three_results.json");
    std::fs::write(&path, text).unwrap();
    let runs = rocpd_rocprofv3::group_runs(&[path]).unwrap();
    assert_eq!(runs.len(), 3);
    let mut kernels = Vec::new();
    for run in &runs {
        assert!(DirectRunSource::open(run, &ImportOptions::default())
            .unwrap()
            .is_some());
        let counts = same_as_imported(run, SortOptions::default());
        let n = |t: Table| counts.iter().find(|(x, _)| *x == t).unwrap().1;
        kernels.push(n(Table::KernelDispatch));
    }
    assert!(
        kernels[0] > 100 && kernels.iter().all(|&k| k == kernels[0]),
        "{kernels:?}"
    );
}

/// rocprofv3 writes counter records (`callback_records`) before kernel records, so
/// counter records make dispatches that kernel records complete; a file in the other order
/// (kernel records first) reads the same.
#[test]
fn json_counter_records_read_before_or_after_their_kernel_records() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json(tmp.path(), 6, false);
    let text = std::fs::read_to_string(&json).unwrap();
    // The last of each key: `strings` has keys of the same names, earlier.
    let callbacks = text.rfind("\"callback_records\":").unwrap();
    let buffers = text.rfind(",\"buffer_records\":").unwrap();
    assert!(
        callbacks < buffers,
        "the generator writes rocprofv3's order"
    );
    let tail = text.len() - "}]}".len();
    assert_eq!(&text[tail..], "}]}");
    let swapped = format!(
        "{}{},{}{}",
        &text[..callbacks],
        &text[buffers + 1..tail],
        &text[callbacks..buffers],
        &text[tail..]
    );
    serde_json::from_str::<serde_json::Value>(&swapped).unwrap();
    let kernels_first = tmp.path().join("kernels_first_results.json");
    std::fs::write(&kernels_first, swapped).unwrap();
    let mut pmc = Vec::new();
    for path in [&json, &kernels_first] {
        let counts = read_directly_as_imported(path);
        let n = |t: Table| counts.iter().find(|(x, _)| *x == t).unwrap().1;
        assert!(
            n(Table::PmcValue) > 50 && n(Table::KernelDispatch) > 20,
            "{counts:?}"
        );
        pmc.push(counts);
    }
    assert_eq!(pmc[0], pmc[1]);
}

/// A counter record that repeats an earlier one's dispatch joins the dispatch the first
/// made (the import adds its values to it): the PMC stream then keeps the facts of the
/// dispatches counter records make, which it otherwise drops as nothing looks them up.
#[test]
fn json_counter_records_joining_a_made_dispatch_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json(tmp.path(), 9, false);
    let text = std::fs::read_to_string(&json).unwrap();
    let key = "\"counter_collection\":[";
    let at = text.find(&format!("{key}{{")).unwrap() + key.len();
    let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter();
    let first: serde_json::Value = values.next().unwrap().unwrap();
    let end = at + values.byte_offset();
    let again = serde_json::to_string(&first).unwrap();
    let joined = tmp.path().join("joined_results.json");
    std::fs::write(&joined, format!("{},{again}{}", &text[..end], &text[end..])).unwrap();
    let plain = read_directly_as_imported(&json);
    let counts = read_directly_as_imported(&joined);
    let n = |c: &[(Table, u64)], t: Table| c.iter().find(|(x, _)| *x == t).unwrap().1;
    let values = first["records"].as_array().unwrap().len() as u64;
    assert!(values > 0);
    assert_eq!(
        n(&counts, Table::PmcValue),
        n(&plain, Table::PmcValue) + values
    );
    assert_eq!(
        n(&counts, Table::KernelDispatch),
        n(&plain, Table::KernelDispatch)
    );
}

/// Gives the external correlation ids of the generated JSON object at `json`'s kernels
/// and copies (every `step`-th one) the region names `name` makes of them, in its
/// `strings.correlation_id.external` table; returns how many it named.
fn name_regions(json: &Path, step: usize, name: impl Fn(i64) -> String) -> usize {
    let text = std::fs::read_to_string(json).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let records = &doc["rocprofiler-sdk-tool"][0]["buffer_records"];
    let mut externals: Vec<i64> = ["kernel_dispatch", "memory_copy"]
        .iter()
        .flat_map(|k| records[k].as_array().unwrap())
        .filter_map(|r| r["correlation_id"]["external"].as_i64())
        .filter(|e| *e != 0)
        .collect();
    externals.sort_unstable();
    externals.dedup();
    let entries: Vec<String> = externals
        .iter()
        .step_by(step)
        .map(|&e| format!("{{\"key\":{e},\"value\":\"{}\"}}", name(e)))
        .collect();
    let named = text.replacen(
        "\"correlation_id\":{\"external\":[]}",
        &format!(
            "\"correlation_id\":{{\"external\":[{}]}}",
            entries.join(",")
        ),
        1,
    );
    assert_ne!(named, text);
    std::fs::write(json, named).unwrap();
    entries.len()
}

/// Region names of kernels and copies come from `strings.correlation_id.external`.
#[test]
fn json_region_names_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json(tmp.path(), 7, false);
    let named = name_regions(&json, 2, |e| format!("range {e}"));
    assert!(named >= 1, "{named}");
    let run = one_run(&json);
    same_as_imported(&run, SortOptions::default());
    let direct = DirectRunSource::open(&run, &ImportOptions::default())
        .unwrap()
        .unwrap();
    let kernels = rows(&direct, Table::KernelDispatch, 100);
    let names = kernels
        .column(Table::KernelDispatch.column_index("region_name"))
        .as_string::<i32>();
    assert!((0..kernels.num_rows()).any(|i| !names.is_null(i)));
}

/// Texts past what a stream keeps in memory come back from its file (D125): the region
/// names and marker messages of an object read with one distinct text in memory, as
/// imported; objects with more than 2^19 distinct texts were imported (D121).
#[test]
fn json_texts_past_the_memory_kept_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json(tmp.path(), 7, false);
    // Long enough that the stream's file is written (past 256 KiB) and read back.
    let named = name_regions(&json, 1, |e| {
        format!("range {e} {}", "x".repeat(20_000 + e as usize % 7))
    });
    assert!(named >= 16, "{named} external ids");
    let run = one_run(&json);
    rocpd_rocprofv3::set_texts_in_memory(1);
    let counts = same_as_imported(&run, SortOptions::default());
    rocpd_rocprofv3::set_texts_in_memory(0);
    let n = |t: Table| counts.iter().find(|(x, _)| *x == t).map_or(0, |(_, n)| *n);
    assert!(
        n(Table::Marker) > 0 && n(Table::KernelDispatch) > 0,
        "{counts:?}"
    );
}

/// Marker texts whose ids spread over more than the 16,384 pages of 4,096 ids the text
/// ids were kept in (17,000 markers 4,096 ids apart, past the object's own ids): read
/// directly as imported, the text ids in pages on disk (D140; "text ids too scattered"
/// before).
#[test]
fn json_marker_texts_spread_over_many_id_pages_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = generated_doc(tmp.path(), 9);
    let object = &mut doc["rocprofiler-sdk-tool"][0];
    let mut largest = 0;
    for list in object["buffer_records"].as_object().unwrap().values() {
        for r in list.as_array().into_iter().flatten() {
            largest = largest.max(r["correlation_id"]["internal"].as_i64().unwrap_or(0));
        }
    }
    let first = object["buffer_records"]["marker_api"][0]["start_timestamp"]
        .as_i64()
        .unwrap();
    let (mut markers, mut texts) = (Vec::new(), Vec::new());
    for k in 0..17_000i64 {
        let id = largest + 1 + k * 4096;
        let start = first + k * 10;
        markers.push(serde_json::json!({
            "correlation_id": {"ancestor": 0, "external": 0, "internal": id},
            "end_timestamp": start + 5, "kind": 4, "operation": 1, "size": 1,
            "start_timestamp": start, "thread_id": 4000
        }));
        texts.push(serde_json::json!({"key": id, "value": format!("step {}", k % 50)}));
    }
    let extend = |v: &mut serde_json::Value, more: Vec<serde_json::Value>| {
        v.as_array_mut().unwrap().extend(more);
    };
    extend(&mut object["buffer_records"]["marker_api"], markers);
    extend(&mut object["strings"]["marker_api"], texts);
    let json = tmp.path().join("spread_results.json");
    std::fs::write(&json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let counts = read_directly_as_imported(&json);
    let markers = counts.iter().find(|(t, _)| *t == Table::Marker).unwrap().1;
    assert!(markers > 17_000, "{counts:?}");
}

#[test]
fn json_markers_are_found_as_the_database_finds_them() {
    let tmp = tempfile::tempdir().unwrap();
    let run = one_run(&generated_json(tmp.path(), 5, false));
    let db_path = tmp.path().join("imported.db");
    rocpd_rocprofv3::import(&run, &db_path, &ImportOptions::default()).unwrap();
    let db = rocpd_db::Database::open(&db_path).unwrap();
    let direct = DirectRunSource::open(&run, &ImportOptions::default())
        .unwrap()
        .unwrap();
    let markers = rows(&db, Table::Marker, 100);
    assert!(markers.num_rows() > 0);
    let name = markers
        .column(Table::Marker.column_index("name"))
        .as_string::<i32>();
    for i in [0, markers.num_rows() - 1] {
        let text = name.value(i).to_string();
        assert_eq!(
            db.find_marker(&text).unwrap(),
            direct.find_marker(&text).unwrap()
        );
    }
    assert!(direct.find_marker("no such marker").unwrap().is_empty());
}

#[test]
fn the_real_json_file_reads_as_imported() {
    let path = Path::new("../../fixtures/rocprofv3-json/908_results.json.gz");
    let runs = rocpd_rocprofv3::group_runs(&[path.to_path_buf()]).unwrap();
    assert!(!runs.is_empty());
    for run in &runs {
        let counts = same_as_imported(run, SortOptions::default());
        let n = |t: Table| counts.iter().find(|(x, _)| *x == t).unwrap().1;
        assert!(n(Table::KernelDispatch) > 40_000, "{counts:?}");
    }
}

/// `text` (a one-object document written in rocprofv3's order) with the object's
/// `members` moved to its end, in the order given.
fn members_moved_last(text: &str, members: &[&str]) -> String {
    rocpd_gen::members_moved_last(text, members).expect("a generated one-object document")
}

/// `kernel_symbols` after the kernel and counter records, with `metadata` and the agents
/// before them: the records are read where they stand and make up rows for the kernels
/// they name, which the table's rows then replace, so every dispatch keeps its kernel's
/// name, directly and imported alike.
#[test]
fn json_kernel_symbols_after_the_records_name_the_kernels() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json(tmp.path(), 7, false);
    let text = std::fs::read_to_string(&json).unwrap();
    let late = members_moved_last(&text, &["kernel_symbols"]);
    assert!(late.find("\"kernel_symbols\"").unwrap() > late.find("\"buffer_records\"").unwrap());
    assert!(late.find("\"metadata\"").unwrap() < late.find("\"callback_records\"").unwrap());
    let path = tmp.path().join("late_symbols_results.json");
    std::fs::write(&path, &late).unwrap();
    assert_eq!(
        read_directly_as_imported(&path),
        read_directly_as_imported(&json)
    );
    let names = |p: &Path| {
        let source = DirectRunSource::open(&one_run(p), &ImportOptions::default())
            .unwrap()
            .expect("read directly");
        let b = rows(&source, Table::KernelDispatch, 1000);
        let c = b.column(Table::KernelDispatch.column_index("kernel_name"));
        let names: Vec<String> = c
            .as_string::<i32>()
            .iter()
            .map(|n| n.unwrap_or("").to_string())
            .collect();
        names
    };
    let expected = names(&json);
    assert!(expected.iter().all(|n| !n.is_empty()), "{expected:?}");
    assert_eq!(names(&path), expected);
    let sql = "SELECT COUNT(*) FROM rocpd_info_kernel_symbol WHERE kernel_name IS NULL";
    assert_eq!(count_imported(&path, &tmp.path().join("late.db"), sql), 0);
}

/// Imports the JSON file at `path` into `db` and counts with `sql` there.
fn count_imported(path: &Path, db: &Path, sql: &str) -> i64 {
    rocpd_rocprofv3::import(&one_run(path), db, &ImportOptions::default()).unwrap();
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

/// Records before the tables they need (the strings, the agents): the import reads them
/// after the tables, in their order; so does the direct reader's second walk (D108), in
/// a plain file (jumping over what it skips) and a gzip stream alike. When some records
/// could be read at once and others not, the orders part and the object is imported.
#[test]
fn json_records_before_their_tables_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json(tmp.path(), 6, true);
    let text = std::fs::read_to_string(&json).unwrap();
    let tables = [
        "agents",
        "counters",
        "strings",
        "code_objects",
        "kernel_symbols",
    ];
    let late = members_moved_last(&text, &tables);
    assert!(late.find("\"strings\"").unwrap() > late.find("\"buffer_records\"").unwrap());
    let dir = tmp.path().join("late");
    std::fs::create_dir(&dir).unwrap();
    let plain = dir.join("late_results.json");
    std::fs::write(&plain, &late).unwrap();
    let counts = read_directly_as_imported(&plain);
    let n = |t: Table| counts.iter().find(|(x, _)| *x == t).unwrap().1;
    assert!(
        n(Table::Region) > 300 && n(Table::PmcValue) > 100,
        "{counts:?}"
    );
    let gz = tmp.path().join("gz");
    std::fs::create_dir(&gz).unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, late.as_bytes()).unwrap();
    std::fs::write(gz.join("late_results.json.gz"), enc.finish().unwrap()).unwrap();
    assert_eq!(
        read_directly_as_imported(&gz.join("late_results.json.gz")),
        counts
    );
    // The strings last and the counter records after the kernel records: the counter
    // records (which need no strings) are read where they stand, before the kernel
    // records held back; their events come first.
    let split = members_moved_last(&text, &["callback_records", "strings"]);
    let dir = tmp.path().join("split");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("split_results.json"), split).unwrap();
    assert_eq!(
        read_directly_as_imported(&dir.join("split_results.json")),
        counts
    );
    // Keys sorted (as serde_json writes a `Value`): `metadata` after the records and the
    // `counters` after the counter records. The tables wait for `metadata` and the counter
    // records for the `counters` too, so every row has the process of `metadata` and the
    // counters keep their names (the import made up `counter N` and wrote process 0).
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let dir = tmp.path().join("sorted");
    std::fs::create_dir(&dir).unwrap();
    let sorted = dir.join("sorted_results.json");
    std::fs::write(&sorted, serde_json::to_string(&doc).unwrap()).unwrap();
    let i = |k: &str| serde_json::to_string(&doc).unwrap().find(k).unwrap();
    assert!(
        i("\"buffer_records\"") < i("\"metadata\"")
            && i("\"callback_records\"") < i("\"counters\"")
    );
    assert_eq!(read_directly_as_imported(&sorted), counts);
    let db = tmp.path().join("sorted.db");
    rocpd_rocprofv3::import(&one_run(&sorted), &db, &ImportOptions::default()).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let pid = doc["rocprofiler-sdk-tool"][0]["metadata"]["pid"]
        .as_i64()
        .unwrap();
    for table in [
        "rocpd_kernel_dispatch",
        "rocpd_region",
        "rocpd_info_pmc",
        "rocpd_info_kernel_symbol",
    ] {
        let other: i64 = conn
            .query_row(
                &format!("SELECT COUNT(*) FROM {table} WHERE pid != {pid}"),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(other, 0, "{table}");
    }
    let made_up: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM rocpd_info_pmc WHERE name LIKE 'counter %'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(made_up, 0);
    // `counters` held back for a later `metadata`: counter records after that wait for it
    // too (they would make up their counters if read at once).
    let held = members_moved_last(
        &text,
        &[
            "metadata",
            "strings",
            "code_objects",
            "kernel_symbols",
            "summary",
            "callback_records",
            "buffer_records",
        ],
    );
    assert!(held.find("\"counters\":").unwrap() < held.find("\"metadata\":").unwrap());
    let dir = tmp.path().join("held");
    std::fs::create_dir(&dir).unwrap();
    let held_path = dir.join("held_results.json");
    std::fs::write(&held_path, held).unwrap();
    assert_eq!(read_directly_as_imported(&held_path), counts);
    let sql = "SELECT COUNT(*) FROM rocpd_info_pmc WHERE name LIKE 'counter %'";
    assert_eq!(
        count_imported(&held_path, &tmp.path().join("held.db"), sql),
        0
    );
    // Counter records held back for a later `counters` table and kernel records read
    // where they stand: the kernel records make the dispatches, as in the import, also
    // when the describing pass reads the kernel records on a thread of their own.
    let kernels_first = members_moved_last(&text, &["counters", "buffer_records"]);
    let dir = tmp.path().join("kernels-first");
    std::fs::create_dir(&dir).unwrap();
    let path = dir.join("kf_results.json");
    std::fs::write(&path, kernels_first).unwrap();
    assert_eq!(read_directly_as_imported(&path), counts);
    // A held-back table that is not JSON: checked when it is read, so the object is left
    // to the import, which reports it.
    let sorted_text = std::fs::read_to_string(&sorted).unwrap();
    let at = sorted_text.find("\"counters\":").unwrap() + "\"counters\":".len();
    let mut values =
        serde_json::Deserializer::from_str(&sorted_text[at..]).into_iter::<serde_json::Value>();
    values.next().unwrap().unwrap();
    let end = at + values.byte_offset();
    let bad = dir.join("bad_results.json");
    std::fs::write(
        &bad,
        format!("{}nul{}", &sorted_text[..at], &sorted_text[end..]),
    )
    .unwrap();
    let e = fails_as_imported(&one_run(&bad));
    assert!(e.contains("invalid JSON") || e.contains("expected"), "{e}");
}

/// JSON objects whose import needs more than the direct reader keeps are imported: kernel
/// records that move the dispatch a counter record made or complete it twice, and bad
/// JSON the import reports.
const API_HEADER: &str = "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"";
const COPY_HEADER: &str = "\"Kind\",\"Direction\",\"Stream_Id\",\"Source_Agent_Id\",\"Destination_Agent_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"";

/// The Int64 column `c` of `b`.
fn ints(b: &RecordBatch, c: usize) -> Vec<i64> {
    let a = b.column(c).as_primitive::<arrow_array::types::Int64Type>();
    a.values().to_vec()
}

/// Writes `files` (name, header, rows) into `dir` as one CSV run, compares it read
/// directly with its import, and returns it read directly.
fn csv_run_as_imported(dir: &Path, files: &[(&str, &str, &[&str])]) -> DirectRunSource {
    std::fs::create_dir(dir).unwrap();
    for (name, header, rows) in files {
        write_csv(dir, name, header, rows);
    }
    let run = one_run(dir);
    same_as_imported(&run, SortOptions::default());
    DirectRunSource::open(&run, &ImportOptions::default())
        .unwrap()
        .expect("read directly")
}

/// Host-to-device copies without a thread, each (correlation id, start, end).
fn copy_rows(copies: &[(i64, i64, i64)]) -> Vec<String> {
    let row = |(corr, start, end): &(i64, i64, i64)| {
        format!("\"MEMORY_COPY\",\"MEMORY_COPY_HOST_TO_DEVICE\",0,\"Agent 0\",\"Agent 1\",{corr},{start},{end}")
    };
    copies.iter().map(row).collect()
}

/// API rows of process 1 in `domain`, each (function, thread, correlation id, start, end).
fn api_rows(domain: &str, calls: &[(&str, i64, i64, i64, i64)]) -> Vec<String> {
    let row = |(f, tid, corr, start, end): &(&str, i64, i64, i64, i64)| {
        format!("\"{domain}\",\"{f}\",1,{tid},{corr},{start},{end}")
    };
    calls.iter().map(row).collect()
}

/// Borrowed rows, as [`csv_run_as_imported`] takes them.
fn strs(rows: &[String]) -> Vec<&str> {
    rows.iter().map(String::as_str).collect()
}

/// Writes the CSV file `name` in `dir`: `head`, then `rows`, a line each.
fn write_csv<S: std::borrow::Borrow<str>>(dir: &Path, name: &str, head: &str, rows: &[S]) {
    std::fs::write(dir.join(name), format!("{head}\n{}\n", rows.join("\n"))).unwrap();
}

const KERNEL_HEADER: &str = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"";
const COUNTER_HEADER: &str = "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"";

/// A dispatch of kernel 10 on thread 7, as a kernel trace row or a counter row gives it.
struct Dispatch<'a> {
    agent: &'a str,
    id: i64,
    correlation: i64,
    kernel: &'a str,
    start: i64,
    end: i64,
}

impl Dispatch<'_> {
    /// Its kernel trace row.
    fn kernel_row(&self) -> String {
        let d = self;
        format!(
            "\"KERNEL_DISPATCH\",\"{}\",1,1,7,{},10,\"{}\",{},{},{},0,0,8,0,16,64,1,1,1024,1024,1",
            d.agent, d.id, d.kernel, d.correlation, d.start, d.end
        )
    }

    /// A counter row of it, in process `pid`: `SQ_WAVES` = `value`.
    fn counter_row(&self, pid: i64, value: f64) -> String {
        let d = self;
        format!(
            "{},{},\"{}\",1,{pid},7,1048576,10,\"{}\",64,0,0,8,0,16,\"SQ_WAVES\",{value},{},{}",
            d.correlation, d.id, d.agent, d.kernel, d.start, d.end
        )
    }
}

/// API rows whose correlation id an earlier row took get the next free id, as SQLite gives
/// it to the import (one past the largest), which a later row may then find taken in turn;
/// a copy without a thread takes the thread of the region whose id is its correlation id,
/// moved or not (D110).
#[test]
fn api_rows_with_a_taken_correlation_id_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let hip = api_rows(
        "HIP_RUNTIME_API",
        &[("hipA", 11, 5, 10, 20), ("hipB", 12, 5, 30, 40)],
    );
    let marker = api_rows("MARKER_CORE_API", &[("step", 13, 6, 32, 38)]);
    let hip_c = api_rows("HIP_RUNTIME_API", &[("hipC", 14, 3, 50, 60)]);
    let first: Vec<String> = [hip, marker, hip_c].concat();
    // The second API file's rows come after the first's: 5 and 6 are taken again.
    let second = api_rows(
        "HSA_CORE_API",
        &[("hsaD", 15, 6, 70, 80), ("hsaE", 16, 9, 90, 95)],
    );
    let copies = copy_rows(&[(6, 33, 36), (7, 41, 44), (8, 71, 74)]);
    let source = csv_run_as_imported(
        &tmp.path().join("run"),
        &[
            ("1_hip_api_trace.csv", API_HEADER, &strs(&first)),
            ("1_hsa_api_trace.csv", API_HEADER, &strs(&second)),
            ("1_memory_copy_trace.csv", COPY_HEADER, &strs(&copies)),
        ],
    );
    // What the import gives: hipB moves to 6, the marker then to 7, hsaD to 8; the copies
    // of 6, 7 and 8 take those rows' threads.
    let (id, tid) = (rocpd_model::col::ID, rocpd_model::col::TID);
    let regions = ints(&rows(&source, Table::Region, 100), id);
    assert_eq!(regions, vec![5, 6, 3, 8, 9]);
    assert_eq!(ints(&rows(&source, Table::Marker, 100), id), vec![7]);
    let tids = ints(&rows(&source, Table::MemoryCopy, 100), tid);
    assert_eq!(tids, vec![12, 13, 15]);

    // The table is AUTOINCREMENT: with every id below zero, the next free id is 1, not
    // one past the largest; correlation id 0 (no stack id) given twice moves to 2 and
    // still gives its thread to the copy of 2 (both found by a review).
    let calls = [
        ("hipA", 21, -5, 10, 20),
        ("hipB", 22, -5, 30, 40),
        ("hipC", 23, 0, 50, 60),
        ("hipD", 24, 0, 70, 80),
    ];
    let apis = api_rows("HIP_RUNTIME_API", &calls);
    let copies = copy_rows(&[(1, 31, 34), (2, 71, 74)]);
    let source = csv_run_as_imported(
        &tmp.path().join("low"),
        &[
            ("1_hip_api_trace.csv", API_HEADER, &strs(&apis)),
            ("1_memory_copy_trace.csv", COPY_HEADER, &strs(&copies)),
        ],
    );
    let regions = ints(&rows(&source, Table::Region, 100), id);
    assert_eq!(regions, vec![-5, 1, 0, 2]);
    let tids = ints(&rows(&source, Table::MemoryCopy, 100), tid);
    assert_eq!(tids, vec![22, 24]);
}

/// Kernel trace rows whose dispatch id an earlier row took get the next free row id, as
/// the import's AUTOINCREMENT table gives it, while their `dispatch_id` column keeps their
/// own (D112); a counter file beside them, whose rows find dispatches by row id, reads
/// as imported too (D117).
#[test]
fn kernel_rows_with_a_taken_dispatch_id_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = Path::new("../../fixtures/rocprofv3-csv-docs");
    let text = std::fs::read_to_string(docs.join("kernel_trace.csv")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let dispatch = |line: &str| -> i64 { line.split(',').nth(5).unwrap().parse().unwrap() };
    let largest = lines[1..].iter().map(|l| dispatch(l)).max().unwrap();
    // The first row again, then a row whose own id is the one the first repeat takes.
    let mut fields: Vec<String> = lines[2].split(',').map(String::from).collect();
    fields[5] = (largest + 1).to_string();
    let body = format!("{}\n{}\n{}\n", text.trim_end(), lines[1], fields.join(","));
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("kernel_trace.csv"), &body).unwrap();
    let run = one_run(&dir);
    let counts = same_as_imported(&run, SortOptions::default());
    let kernels = counts
        .iter()
        .find(|(t, _)| *t == Table::KernelDispatch)
        .unwrap()
        .1;
    assert_eq!(kernels as usize, lines.len() + 1);
    let source = DirectRunSource::open(&run, &ImportOptions::default())
        .unwrap()
        .expect("read directly");
    let batch = rows(&source, Table::KernelDispatch, 100);
    let mut ids = ints(&batch, rocpd_model::col::ID);
    ids.sort_unstable();
    let mut expected: Vec<i64> = lines[1..].iter().map(|l| dispatch(l)).collect();
    expected.extend([largest + 1, largest + 2]);
    expected.sort_unstable();
    assert_eq!(ids, expected);
    // Counter rows find their dispatch by the row id the import gave it (D117): one for
    // the repeated row's own id (the first of the two), and one for each id the repeats
    // took (the repeat, whose own id is another, and the row moved in turn).
    let counters = std::fs::read_to_string(docs.join("counter_collection.csv")).unwrap();
    let row: Vec<&str> = counters.lines().nth(1).unwrap().split(',').collect();
    let repeated = dispatch(lines[1]);
    let mut more = counters.trim_end().to_string();
    for id in [repeated, largest + 1, largest + 2] {
        let mut fields: Vec<String> = row.iter().map(|f| f.to_string()).collect();
        fields[1] = id.to_string();
        more.push('\n');
        more.push_str(&fields.join(","));
    }
    std::fs::write(dir.join("counter_collection.csv"), more + "\n").unwrap();
    let counts = same_as_imported(&one_run(&dir), SortOptions::default());
    let values = counts
        .iter()
        .find(|(t, _)| *t == Table::PmcValue)
        .unwrap()
        .1;
    assert!(values >= 3, "{counts:?}");
}

/// A JSON object without counter records whose kernel records repeat a dispatch id (a
/// record given twice, and one given the id the repeat moves to) reads directly as
/// imported, the repeats taking the next free row ids (D113); with its counter records,
/// which find dispatches by row id, it is still left to the import.
#[test]
fn json_kernel_records_with_a_taken_dispatch_id_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = generated_doc(tmp.path(), 10);
    let object = &mut doc["rocprofiler-sdk-tool"][0];
    let kernels = object["buffer_records"]["kernel_dispatch"]
        .as_array_mut()
        .unwrap();
    assert!(kernels.len() > 3);
    let dispatch = |k: &serde_json::Value| k["dispatch_info"]["dispatch_id"].as_i64().unwrap();
    let largest = kernels.iter().map(dispatch).max().unwrap();
    // Every record keeps its own id but the two repeats, which take the next free ones.
    let mut expected: Vec<i64> = kernels.iter().map(dispatch).collect();
    expected.extend([largest + 1, largest + 2]);
    expected.sort_unstable();
    let first = kernels[0].clone();
    let mut next = kernels[1].clone();
    next["dispatch_info"]["dispatch_id"] = serde_json::json!(largest + 1);
    kernels.insert(2, first);
    kernels.push(next);
    let n = kernels.len();
    let with_counters = tmp.path().join("counted_results.json");
    std::fs::write(&with_counters, serde_json::to_string(&doc).unwrap()).unwrap();
    left_to_import(&one_run(&with_counters));
    let callbacks = doc["rocprofiler-sdk-tool"][0]["callback_records"]
        .as_object_mut()
        .unwrap();
    assert!(callbacks.remove("counter_collection").is_some());
    let path = tmp.path().join("taken_results.json");
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    let counts = read_directly_as_imported(&path);
    let kernel_rows = counts
        .iter()
        .find(|(t, _)| *t == Table::KernelDispatch)
        .unwrap()
        .1;
    assert_eq!(kernel_rows as usize, n);
    let source = DirectRunSource::open(&one_run(&path), &ImportOptions::default())
        .unwrap()
        .expect("read directly");
    let mut ids = ints(
        &rows(&source, Table::KernelDispatch, 100),
        rocpd_model::col::ID,
    );
    ids.sort_unstable();
    assert_eq!(ids, expected);
}

/// `metadata` given a second time after the records: the same again reads directly as
/// imported; another node (which rows before it would not carry) or another pid is left
/// to the import.
#[test]
fn json_metadata_given_again_after_the_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (text, doc) = generated_text_and_doc(tmp.path(), 12);
    let metadata = &doc["rocprofiler-sdk-tool"][0]["metadata"];
    assert!(text.find("\"metadata\"").unwrap() < text.find("\"buffer_records\"").unwrap());
    let again = |m: &serde_json::Value, name: &str| {
        let end = text.trim_end().strip_suffix("}]}").unwrap();
        let path = tmp.path().join(name);
        std::fs::write(&path, format!("{end},\"metadata\":{m}}}]}}")).unwrap();
        one_run(&path)
    };
    let same = again(metadata, "same_results.json");
    let counts = same_as_imported(&same, SortOptions::default());
    assert!(counts
        .iter()
        .any(|(t, n)| *t == Table::KernelDispatch && *n > 0));
    let mut other_node = metadata.clone();
    other_node["node"]["hostname"] = serde_json::json!("elsewhere");
    left_to_import(&again(&other_node, "node_results.json"));
    let mut other_pid = metadata.clone();
    other_pid["pid"] = serde_json::json!(metadata["pid"].as_i64().unwrap() + 1);
    left_to_import(&again(&other_pid, "pid_results.json"));
    // Another process given before the records, then the first again after them: the
    // rows after it would be the first process's (found by review).
    // The object's own record members (`strings` names the same keys earlier).
    let records = ["\"callback_records\":", "\"buffer_records\":"]
        .iter()
        .filter_map(|k| text.rfind(k))
        .min()
        .unwrap();
    assert!(text.find("\"metadata\":").unwrap() < records);
    let between = format!("\"metadata\":{other_pid},");
    let back = format!("{}{between}{}", &text[..records], &text[records..]);
    let end = back.trim_end().strip_suffix("}]}").unwrap();
    let path = tmp.path().join("back_results.json");
    std::fs::write(&path, format!("{end},\"metadata\":{metadata}}}]}}")).unwrap();
    left_to_import(&one_run(&path));
}

/// A JSON object with `metadata` after its records, whose import holds every record back
/// and parses them after its walk: a bad record among them is reported without the
/// import (D116), while the held records fit the memory kept for them and past it, where
/// the bad record is read back from the temporary file the rest wait in (D126).
#[test]
fn json_bad_records_held_back_past_the_memory_kept_fail_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = generated_doc(tmp.path(), 11);
    let apis = hip_api(&mut doc);
    apis[5]["start_timestamp"] = serde_json::json!("soon");
    let small = tmp.path().join("small_results.json");
    // serde_json sorts the members: `metadata` after `buffer_records`.
    std::fs::write(&small, serde_json::to_string(&doc).unwrap()).unwrap();
    let e = fails_as_imported(&one_run(&small));
    assert!(
        e.contains("hip_api[5]") && e.contains("start_timestamp"),
        "{e}"
    );
    // The records before it carry 35 MiB of a member nobody reads (7 MiB each: one
    // value may not pass 8 MiB, D147).
    for k in 0..5 {
        hip_api(&mut doc)[k]["padding"] = serde_json::json!("x".repeat(7 << 20));
    }
    let large = tmp.path().join("large_results.json");
    std::fs::write(&large, serde_json::to_string(&doc).unwrap()).unwrap();
    let imported = fails_as_imported(&one_run(&large));
    assert_eq!(imported, e.replace("small_results", "large_results"));
}

/// Held-back records count with all they cost, not their text alone: 300,000 records `0`
/// held for the agents (a few bytes of text, a longer place each) pass the memory kept
/// for them (found by review), and the rest wait in a temporary file; the first bad one
/// is reported as the import reports it (D126).
#[test]
fn json_many_tiny_held_back_records_fail_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = generated_doc(tmp.path(), 13);
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["memory_copy"] =
        serde_json::Value::Array(vec![serde_json::json!(0); 300_000]);
    let e = fails_as_imported(&agents_last(&doc, &tmp.path().join("tiny_results.json")));
    assert!(e.contains("memory_copy[0]"), "{e}");
}

/// Writes `doc` to `path` with its `agents` last (so every record is held back for
/// them), as a run.
fn agents_last(doc: &serde_json::Value, path: &Path) -> Run {
    let text = members_moved_last(&serde_json::to_string(doc).unwrap(), &["agents"]);
    std::fs::write(path, text).unwrap();
    one_run(path)
}

/// Two kernel records with the largest dispatch id, held back like every record, then a
/// bad record: the import fails on its database at the second kernel record, before the
/// bad one, and the direct reader reports that row as the import does, although the
/// search for its error had refused the object already (found by review; D126).
#[test]
fn json_held_records_with_no_id_left_fail_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = generated_doc(tmp.path(), 14);
    let object = &mut doc["rocprofiler-sdk-tool"][0];
    object["callback_records"]
        .as_object_mut()
        .unwrap()
        .remove("counter_collection");
    let records = &mut object["buffer_records"];
    for k in 0..2 {
        records["kernel_dispatch"][k]["dispatch_info"]["dispatch_id"] = serde_json::json!(i64::MAX);
    }
    records["memory_copy"][3]["start_timestamp"] = serde_json::json!("soon");
    let e = fails_as_imported(&agents_last(&doc, &tmp.path().join("full_results.json")));
    assert!(
        e.contains("buffer_records.kernel_dispatch[1]: its id is taken by an earlier row"),
        "{e}"
    );
}

/// Two kernel records with the largest dispatch id and one correlation id, after
/// counter records made dispatches: the import takes the second as completing the row
/// the first wrote (an update, no id needed) and succeeds, so the direct reader must not
/// report that no id is left; it leaves the object to the import (found by review of
/// D126).
#[test]
fn json_kernel_records_completing_the_largest_dispatch_id_are_left_to_the_import() {
    let tmp = tempfile::tempdir().unwrap();
    let generated = generated_doc(tmp.path(), 15);
    // Counter records with their times, and without (they then make events only, and
    // the import takes the kernel records as completing all the same).
    for timed in [true, false] {
        let mut doc = generated.clone();
        let object = &mut doc["rocprofiler-sdk-tool"][0];
        let counters = object["callback_records"]["counter_collection"]
            .as_array_mut()
            .unwrap();
        assert!(
            !counters.is_empty(),
            "the generated object has counter records"
        );
        if !timed {
            for c in counters.iter_mut() {
                let data = c["dispatch_data"].as_object_mut().unwrap();
                data.remove("start_timestamp");
                data.remove("end_timestamp");
            }
        }
        let kernels = object["buffer_records"]["kernel_dispatch"]
            .as_array_mut()
            .unwrap();
        let internal = kernels[0]["correlation_id"]["internal"].clone();
        for k in [0, 1] {
            kernels[k]["dispatch_info"]["dispatch_id"] = serde_json::json!(i64::MAX);
            kernels[k]["correlation_id"]["internal"] = internal.clone();
        }
        // serde_json sorts the members: in rocprofv3's order again, `counters` after
        // `metadata` (counter records wait for both), the buffer records after the
        // callback records, and both after the tables (`strings` first, which names the
        // record kinds too).
        let sorted = serde_json::to_string(&doc).unwrap();
        let last = ["counters", "strings", "callback_records", "buffer_records"];
        let text = members_moved_last(&sorted, &last);
        let path = tmp.path().join(format!("completed{timed}_results.json"));
        std::fs::write(&path, text).unwrap();
        let run = one_run(&path);
        for threads in [1, 2] {
            let direct = DirectRunSource::open_on(&run, &ImportOptions::default(), threads);
            assert!(
                matches!(direct, Ok(None)),
                "timed {timed}, {threads} threads: {:?}",
                direct.map(|d| d.is_some())
            );
        }
        let db = tmp.path().join(format!("{timed}.db"));
        rocpd_rocprofv3::import(&run, &db, &ImportOptions::default())
            .expect("the import completes the dispatch");
    }
}

/// A JSON object whose API records repeat correlation ids (a record given twice, and
/// one given the id of a later record) reads directly as imported (D110).
#[test]
fn json_api_records_with_a_taken_correlation_id_read_as_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = generated_doc(tmp.path(), 9);
    let apis = hip_api(&mut doc);
    assert!(apis.len() > 10);
    let first = apis[0].clone();
    apis.insert(1, first);
    let later = apis[8]["correlation_id"]["internal"].clone();
    apis[2]["correlation_id"]["internal"] = later;
    let path = tmp.path().join("taken_results.json");
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    read_directly_as_imported(&path);
}

/// A JSON object with bad records in several sections, skipped with `skip_bad_rows`,
/// reads directly with the import's rows, reasons and counts (D111): few and more than
/// the 20 listed, with the tables where rocprofv3 puts them or after the records (whose
/// records are then read in later walks), on one thread and two.
#[test]
fn json_objects_with_bad_records_skipped_read_as_imported() {
    let skip = ImportOptions {
        skip_bad_rows: true,
    };
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json(tmp.path(), 12, false);
    let text = std::fs::read_to_string(&json).unwrap();
    let mut case = 0;
    // The members in rocprofv3's order (tables first), sorted (records before
    // `metadata`: all read late), and with `counters` between the counter records and
    // the buffer records (the counter records read late, after the buffer records that
    // follow them in the file).
    for many in [false, true] {
        for order in ["rocprofv3", "sorted", "counters late"] {
            let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            let object = &mut doc["rocprofiler-sdk-tool"][0];
            let sections = [
                ("buffer_records", "hip_api"),
                ("buffer_records", "kernel_dispatch"),
                ("buffer_records", "memory_copy"),
                ("callback_records", "counter_collection"),
            ];
            for (k, (group, name)) in sections.iter().enumerate() {
                let records = object[group][name].as_array_mut().unwrap();
                let n = if many { 7 } else { 1 };
                assert!(records.len() > 3 * n, "{name}");
                for i in 0..n {
                    // A record without its fields, and one whose time is not a number.
                    let at = 1 + 3 * i + k % 2;
                    if i % 2 == 0 {
                        records[at] = serde_json::json!({ "bogus": true });
                    } else {
                        records[at]["start_timestamp"] = serde_json::json!("soon");
                        records[at]["dispatch_data"] = serde_json::json!("soon");
                    }
                }
            }
            // serde_json sorts the members (which puts the records before `metadata`
            // and `strings`); rocprofv3's order puts the tables first.
            let object = doc["rocprofiler-sdk-tool"][0].as_object().unwrap();
            let records = ["buffer_records", "callback_records"];
            let mut members: Vec<&String> = object.keys().collect();
            match order {
                "rocprofv3" => members.sort_by_key(|k| records.contains(&k.as_str())),
                "counters late" => members.sort_by_key(|k| match k.as_str() {
                    "callback_records" => 1,
                    "counters" => 2,
                    "buffer_records" => 3,
                    _ => 0,
                }),
                _ => {}
            }
            let body: Vec<String> = members
                .iter()
                .map(|k| format!("{:?}:{}", k, object[k.as_str()]))
                .collect();
            let out = format!("{{\"rocprofiler-sdk-tool\":[{{{}}}]}}", body.join(","));
            case += 1;
            let path = tmp.path().join(format!("bad{case}_results.json"));
            std::fs::write(&path, out).unwrap();
            let run = one_run(&path);
            // Sorted, `metadata` comes after the records, which the import holds back and
            // parses after the walk: so does the direct reader's search for its error.
            let direct = read_skipping(&run, many);
            let n = if many { 28 } else { 4 };
            assert_eq!(direct.skipped_rows(), n, "{:?}", direct.skipped());
            same_as_imported_with(&run, SortOptions::default(), &skip);
        }
    }
}

#[test]
fn json_objects_that_need_the_database_are_left_to_the_import() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json(tmp.path(), 4, false);
    let text = std::fs::read_to_string(&json).unwrap();
    // A counter record whose dispatch ends later than its kernel record says, or whose
    // dispatch has another group segment size: the kernel record changes the row.
    let counters = text.find("\"counter_collection\":[{").unwrap();
    let changed = |key: &str, name: &str| {
        let at = counters + text[counters..].find(key).unwrap() + key.len();
        let digits = text[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
        let n: i64 = text[at..at + digits].parse().unwrap();
        let path = tmp.path().join(name);
        let changed = format!("{}{}{}", &text[..at], n + 1, &text[at + digits..]);
        std::fs::write(&path, changed).unwrap();
        left_to_import(&one_run(&path));
        path
    };
    let path = changed("\"end_timestamp\":", "moved_results.json");
    let resized = changed("\"group_segment_size\":", "resized_results.json");
    // Two kernel records completing one counted dispatch (found by the fuzzer): the
    // import updates the row twice, the streams would write it once.
    let twice = tmp.path().join("twice_results.json");
    let counted = text.rfind("\"counter_collection\":[{").unwrap();
    let at = counted + text[counted..].find("\"dispatch_id\":").unwrap() + 14;
    let digits = text[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
    let counted: i64 = text[at..at + digits].parse().unwrap();
    let at = text.rfind("\"kernel_dispatch\":[").unwrap() + "\"kernel_dispatch\":".len();
    let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter();
    let mut kernels: Vec<serde_json::Value> = values.next().unwrap().unwrap();
    let end = at + values.byte_offset();
    let again = kernels
        .iter()
        .find(|k| k["dispatch_info"]["dispatch_id"] == counted)
        .unwrap()
        .clone();
    kernels.push(again);
    let doubled = serde_json::to_string(&kernels).unwrap();
    std::fs::write(&twice, format!("{}{doubled}{}", &text[..at], &text[end..])).unwrap();
    let run = one_run(&twice);
    left_to_import(&run);
    rocpd_rocprofv3::import(&run, &tmp.path().join("x.db"), &ImportOptions::default()).unwrap();
    std::fs::remove_file(tmp.path().join("x.db")).unwrap();
    // Bad JSON in a section no table needs, in an API call (which the first describing
    // read leaves to the second to check), and a region-name table of the wrong type
    // (found by the fuzzer): the import's error, not a direct read.
    let bad = tmp.path().join("bad_results.json");
    for (from, to, says) in [
        ("\"summary\":[]", "\"summary\":[1, 2x]", "invalid JSON"),
        ("\"hip_api\":[{", "\"hip_api\":[{\"x\":tru,", "invalid JSON"),
        (
            "\"correlation_id\":{\"external\":[]}",
            "\"correlation_id\":[]",
            "strings.correlation_id",
        ),
    ] {
        let broken = text.replacen(from, to, 1);
        assert_ne!(broken, text);
        std::fs::write(&bad, broken).unwrap();
        let e = fails_as_imported(&one_run(&bad));
        assert!(e.contains("bad_results.json") && e.contains(says), "{e}");
    }
    // The import still reads both.
    for p in [&path, &resized] {
        let run = one_run(p);
        rocpd_rocprofv3::import(&run, &tmp.path().join("x.db"), &ImportOptions::default()).unwrap();
        std::fs::remove_file(tmp.path().join("x.db")).unwrap();
    }
}

/// Writes `run`, read directly, as a RocPD database (`rocpd_db::write_rocpd`, what
/// `-f rocpd`, `merge` and `query` do with it) and compares that database with the run's
/// import: the catalog, span, counts, dropped rows, and every column of every row of
/// every table as the RocPD reader reads them.
fn written_as_imported(run: &Run) -> Vec<(Table, u64)> {
    let tmp = tempfile::tempdir().unwrap();
    let imported = tmp.path().join("imported.db");
    rocpd_rocprofv3::import(run, &imported, &ImportOptions::default()).unwrap();
    let direct = DirectRunSource::open(run, &ImportOptions::default())
        .unwrap()
        .expect("read directly");
    let written = tmp.path().join("written.db");
    let catalog = std::sync::Arc::new(direct.catalog(0).unwrap());
    let mut sources: Vec<rocpd_pipeline::Numbered> = vec![(0, Box::new(direct))];
    let report = rocpd_db::write_rocpd(&mut sources, catalog, &written).unwrap();
    assert_eq!(report[0].path, written);
    let (a, b) = (
        rocpd_db::Database::open(&imported).unwrap(),
        rocpd_db::Database::open(&written).unwrap(),
    );
    assert_eq!(
        comparable(a.catalog(0).unwrap()),
        comparable(b.catalog(0).unwrap())
    );
    assert_eq!(
        Source::event_span(&a).unwrap(),
        Source::event_span(&b).unwrap()
    );
    let counts = Source::count_rows(&a).unwrap();
    assert_eq!(counts, Source::count_rows(&b).unwrap(), "{}", run.label);
    assert_eq!(
        format!("{:?}", Source::dropped(&a).unwrap()),
        format!("{:?}", Source::dropped(&b).unwrap())
    );
    for table in Table::ALL {
        same_rows(&run.label, table, &rows(&a, table, 7), &rows(&b, table, 5));
    }
    counts
}

/// A CSV run with its counter file and a JSON file in rocprofv3's record order, read
/// directly and written as RocPD, give the database their import gives.
#[test]
fn runs_read_directly_write_the_database_their_import_writes() {
    for (seed, odd) in [(4, true), (9, false)] {
        let tmp = tempfile::tempdir().unwrap();
        let csv = generated_with_counters(tmp.path(), seed, odd);
        let counts = written_as_imported(&one_run(&csv));
        // rocprofv3 outputs have no samples.
        let events = |c: &[(Table, u64)]| c.iter().all(|(t, n)| *n > 0 || *t == Table::Sample);
        assert!(events(&counts), "{counts:?}");
        let json = generated_json(&tmp.path().join("json"), seed, odd);
        let counts = written_as_imported(&one_run(&json));
        assert!(events(&counts), "{counts:?}");
    }
}

/// A typed agent reference keeps the agent it first resolved to. `"CPU 0"` makes a
/// synthesized CPU agent, `"GPU 0"` another, `"0"` then gives the first GPU evidence (a
/// kernel ran there) and type index 0: resolved against the final agents, the second
/// `"GPU 0"` dispatch read directly named another agent than its import.
#[test]
fn a_typed_agent_reference_keeps_its_first_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut kernels, mut counters) = (Vec::new(), Vec::new());
    for (k, agent) in [(1i64, "CPU 0"), (2, "GPU 0"), (3, "0"), (4, "GPU 0")] {
        let start = 1_000_000 + k * 1000;
        let d = Dispatch {
            agent,
            id: k,
            correlation: k,
            kernel: "kern",
            start,
            end: start + 700,
        };
        kernels.push(d.kernel_row());
        if k == 1 {
            counters.push(d.counter_row(15606, 1.0));
        }
    }
    let (kernels, counters) = (strs(&kernels), strs(&counters));
    csv_run_as_imported(
        &tmp.path().join("typed"),
        &[
            ("5_kernel_trace.csv", KERNEL_HEADER, &kernels[..]),
            ("5_counter_collection.csv", COUNTER_HEADER, &counters[..]),
        ],
    );
}

/// The fields of one CSV line, quotes kept (the generated files quote no quote).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                fields.push(String::new());
                continue;
            }
            _ => {}
        }
        fields.last_mut().unwrap().push(ch);
    }
    fields
}

/// A `Kernel_Id` that a later kernel row names otherwise (rocprofv3's `--kernel-rename`
/// writes the ROCTx range's name there) keeps the first name as the kernel's and its own
/// as the dispatch's region name, read either way (D146). Before, the later name was
/// dropped, unsaid.
#[test]
fn a_kernel_id_named_otherwise_keeps_the_name_as_region_name() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = generated_with_counters(tmp.path(), 6, false);
    let path = std::fs::read_dir(&csv)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("kernel_trace.csv"))
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let header = csv_fields(&lines[0]);
    let name_col = header.iter().position(|h| h == "\"Kernel_Name\"").unwrap();
    let id_col = header.iter().position(|h| h == "\"Kernel_Id\"").unwrap();
    let dispatch_col = header.iter().position(|h| h == "\"Dispatch_Id\"").unwrap();
    // The last row of the first row's kernel.
    let first = csv_fields(&lines[1]);
    let row = (2..lines.len())
        .rev()
        .find(|&r| csv_fields(&lines[r])[id_col] == first[id_col])
        .unwrap();
    let mut fields = csv_fields(&lines[row]);
    fields[name_col] = "\"my_roctx_range\"".into();
    let renamed: i64 = fields[dispatch_col].parse().unwrap();
    lines[row] = fields.join(",");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let run = one_run(&csv);
    same_as_imported(&run, SortOptions::default());
    let direct = DirectRunSource::open(&run, &ImportOptions::default())
        .unwrap()
        .unwrap();
    let batch = rows(&direct, Table::KernelDispatch, 1000);
    let col = |n: &str| batch.column(Table::KernelDispatch.column_index(n)).clone();
    let (ids, names, regions) = (col("dispatch_id"), col("kernel_name"), col("region_name"));
    let ids = ids.as_primitive::<arrow_array::types::Int64Type>();
    let (names, regions) = (names.as_string::<i32>(), regions.as_string::<i32>());
    let first_name = first[name_col].trim_matches('"');
    let mut seen = 0;
    for i in 0..batch.num_rows() {
        if ids.value(i) == renamed {
            seen += 1;
            assert_eq!(names.value(i), first_name);
            assert_eq!(regions.value(i), "my_roctx_range");
        } else {
            assert!(regions.is_null(i), "row {i}");
        }
    }
    assert_eq!(seen, 1);
}

/// A kernel trace with a comma after every line (an unnamed last column, as a
/// spreadsheet may save it) reads as without it; before, the file was passed over as
/// "not a rocprofv3 kernel_trace file". A column named twice is an error at the header:
/// which of the two holds the values is anyone's guess (D146).
#[test]
fn an_unnamed_column_is_ignored_and_a_column_named_twice_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = generated_with_counters(tmp.path(), 7, false);
    let path = std::fs::read_dir(&csv)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("kernel_trace.csv"))
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let before = same_as_imported(&one_run(&csv), SortOptions::default());
    let trailing: String = text.lines().map(|l| format!("{l},\n")).collect();
    std::fs::write(&path, trailing).unwrap();
    assert_eq!(
        same_as_imported(&one_run(&csv), SortOptions::default()),
        before
    );
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[0].push_str(",\"Start_Timestamp\"");
    for l in &mut lines[1..] {
        l.push_str(",1");
    }
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    // Found as the run is formed, before either reader.
    let err = rocpd_rocprofv3::group_runs(std::slice::from_ref(&csv))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("kernel_trace.csv")
            && err.contains("line 1")
            && err.contains("column Start_Timestamp appears twice"),
        "{err}"
    );
}

/// A syntax error in a later process object of a JSON file is placed in that object,
/// read either way: before, the read of the first object (which checks the rest of the
/// file, D137) named the first object and a record index of its own (D146).
#[test]
fn a_syntax_error_in_a_later_process_object_names_that_object() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json(tmp.path(), 6, false);
    let one = std::fs::read_to_string(&json).unwrap();
    let text = rocpd_gen::objects_repeated(&one, 2, 300).unwrap();
    // The last record's start in the file lies in the second object.
    let at = text.rfind("\"start_timestamp\":").unwrap() + "\"start_timestamp\":".len();
    let broken = format!("{}12x3{}", &text[..at], &text[at..]);
    let path = tmp.path().join("two_results.json");
    std::fs::write(&path, broken).unwrap();
    let runs = rocpd_rocprofv3::group_runs(&[path]).unwrap();
    assert_eq!(runs.len(), 2);
    let err = fails_as_imported(&runs[0]);
    assert!(
        err.contains(&format!("byte offset {}", at + 2))
            && err.contains("in rocprofiler-sdk-tool[1]")
            && !err.contains("tool[0]"),
        "{err}"
    );
}

/// The cap of one JSON value (D147): members nobody reads have none and are read
/// directly, whatever their size; a record just under the cap is read directly and as
/// imported beside such a member; one past it is the run's error, placed where the
/// record starts, found by the direct reader alone, on one thread and two.
#[test]
fn json_values_past_the_cap_fail_and_unread_members_have_none() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = generated_doc(tmp.path(), 13);
    let members = |doc: &mut serde_json::Value, pad: usize| {
        doc["zz_extra"] = serde_json::json!({"KEY": "z".repeat(9 << 20), "n": "NUMBER"});
        doc["rocprofiler-sdk-tool"][0]["zz_member"] = serde_json::json!("y".repeat(9 << 20));
        hip_api(doc)[3]["padding"] = serde_json::json!("p".repeat(pad));
    };
    // A record of about 7.95 MiB beside two unread members of 9 MiB.
    members(&mut doc, (8 << 20) - (60 << 10));
    // A key and a number of 9 MiB in the unread member too.
    let number = format!("-{}.5e+3", "1".repeat(9 << 20));
    let text = serde_json::to_string(&doc)
        .unwrap()
        .replacen("\"KEY\"", &format!("\"{}\"", "k".repeat(9 << 20)), 1)
        .replacen("\"NUMBER\"", &number, 1);
    let near = tmp.path().join("near_results.json");
    std::fs::write(&near, text).unwrap();
    read_directly_as_imported(&near);

    // The record past the cap.
    members(&mut doc, 9 << 20);
    let text = serde_json::to_string(&doc).unwrap();
    let past = tmp.path().join("past_results.json");
    std::fs::write(&past, &text).unwrap();
    let run = one_run(&past);
    // Records are separated by `},{` (nested objects are followed by a key).
    let at = text[..text.find("\"padding\":\"p").unwrap()]
        .rfind("},{")
        .unwrap()
        + 2;
    for threads in [1, 2] {
        let e = DirectRunSource::open_on(&run, &ImportOptions::default(), threads)
            .err()
            .expect("an error")
            .to_string();
        assert!(
            e.contains("past_results.json")
                && e.contains("hip_api[3]")
                && e.contains("larger than 8 MiB"),
            "{e}"
        );
        assert!(e.contains(&format!("byte offset {at},")), "{e}");
    }
    // The import refuses it too (its own place, serde's).
    let imported =
        rocpd_rocprofv3::import(&run, &tmp.path().join("x.db"), &ImportOptions::default())
            .unwrap_err()
            .to_string();
    assert!(
        imported.contains("hip_api[3]") && imported.contains("larger than 8 MiB"),
        "{imported}"
    );
}

/// Which reads give a source's streams their rows (D161). With two threads the first
/// stream opened reads every stream's rows, side by side; on one, a JSON object is read
/// once for all its streams and a CSV run once per table, the region and marker streams
/// reading the API files once between them, and the dispatch and counter value streams
/// the kernel trace and counter files. A stream that finds its rows read opens with the
/// input moved away; one that does not fails naming a file. Each stream's rows are those
/// of a source that reads its table alone.
#[test]
fn streams_read_the_input_as_planned() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let csv = generated_with_counters(a.path(), 5, false);
    let json = generated_json(b.path(), 5, false);
    let options = StreamOptions {
        projection: Projection::all(),
        batch_rows: 64,
        tables: None,
    };
    let drain = |p: &mut Box<dyn rocpd_pipeline::PreparedStream + '_>| {
        let table = p.table();
        let mut s = p.open().map_err(|e| e.to_string())?;
        let mut batches = Vec::new();
        while let Some(b) = s.next_batch().map_err(|e| e.to_string())? {
            batches.push(b);
        }
        Ok::<_, String>(arrow_select::concat::concat_batches(&table.schema(), &batches).unwrap())
    };
    let pair = |x: Table, y: Table| {
        let regions = [Table::Region, Table::Marker];
        let kernels = [Table::KernelDispatch, Table::PmcValue];
        [regions, kernels]
            .iter()
            .any(|p| p.contains(&x) && p.contains(&y))
    };
    for (input, is_json) in [(csv, false), (json, true)] {
        let run = one_run(&input);
        for threads in [1, 2] {
            let source = DirectRunSource::open_on(&run, &ImportOptions::default(), threads)
                .unwrap()
                .expect("read directly");
            let tables: Vec<Table> = source
                .prepare(0, &options)
                .unwrap()
                .iter()
                .map(|p| p.table())
                .collect();
            assert_eq!(tables.len(), 6, "{input:?}: {tables:?}");
            let alone: Vec<RecordBatch> = tables.iter().map(|t| rows(&source, *t, 64)).collect();
            assert!(alone.iter().all(|b| b.num_rows() > 0), "{input:?}");
            for first in 0..tables.len() {
                let mut prepared = source.prepare(0, &options).unwrap();
                assert!(drain(&mut prepared[first]).unwrap() == alone[first]);
                let away = input.with_extension("away");
                std::fs::rename(&input, &away).unwrap();
                for (i, p) in prepared.iter_mut().enumerate() {
                    if i == first {
                        continue;
                    }
                    let (of, after) = (tables[i], tables[first]);
                    let read = threads >= 2 || is_json || pair(of, after);
                    match drain(p) {
                        Ok(got) => {
                            assert!(read, "{input:?}: {of:?} after {after:?}: read again");
                            assert!(got == alone[i], "{input:?}: {of:?} after {after:?}");
                        }
                        Err(e) => {
                            assert!(!read, "{input:?}: {of:?} after {after:?}: {e}");
                            assert!(e.contains(".csv"), "{e}");
                        }
                    }
                }
                std::fs::rename(&away, &input).unwrap();
            }
        }
    }
}

/// A JSON file changed between the describing read and a stream fails the stream,
/// naming the file, even when it is still valid JSON with the same records (D163).
#[test]
fn a_json_file_changed_after_opening_fails_its_streams() {
    let tmp = tempfile::tempdir().unwrap();
    let json = generated_json(tmp.path(), 3, false);
    let run = one_run(&json);
    let original = std::fs::read(&json).unwrap();
    let modified = std::fs::metadata(&json).unwrap().modified().unwrap();
    for threads in [1, 2] {
        let direct = DirectRunSource::open_on(&run, &ImportOptions::default(), threads)
            .unwrap()
            .unwrap();
        let regions = rows(&direct, Table::Region, 64);
        let mut longer = original.clone();
        longer.extend_from_slice(b"  \n");
        std::fs::write(&json, &longer).unwrap();
        let options = StreamOptions {
            projection: Projection::all(),
            batch_rows: 64,
            tables: None,
        };
        let mut prepared = direct.prepare(0, &options).unwrap();
        assert!(prepared.len() >= 4, "{} streams", prepared.len());
        for p in prepared.iter_mut() {
            let table = p.table();
            let e = match p.open() {
                Ok(_) => panic!("{table:?} streamed from a changed file"),
                Err(e) => e.to_string(),
            };
            assert!(
                e.contains("_results.json: whole file: changed while being converted"),
                "{e}"
            );
        }
        drop(prepared);
        std::fs::write(&json, &original).unwrap();
        let f = std::fs::File::options().write(true).open(&json).unwrap();
        f.set_modified(modified).unwrap();
        assert_eq!(rows(&direct, Table::Region, 64), regions);
    }
}
