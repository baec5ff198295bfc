//! rocprofv3 CSV and JSON inputs and the OTF2 output, end to end through the binary.

mod common;

use std::collections::{BTreeMap, BTreeSet};
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
    // The error is found without the import (D115): with a TMPDIR nothing can be created
    // in, the line is still what the user is told about.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rocpd"))
        .args(["convert", "-i"])
        .arg(&dir)
        .args(["-f", "pftrace", "-d"])
        .arg(&out)
        .env("TMPDIR", tmp.path().join("no-such-directory"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("1234_kernel_trace.csv") && e.contains(&format!("line {line}")),
        "{e}"
    );
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
    let report = tmp.path().join("report.json");
    // Skipped lines are read directly (D109): with a TMPDIR nothing can be created in, no
    // temporary database could be; the run's notes name the line.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rocpd"))
        .args(["convert", "-i"])
        .arg(&dir)
        .args(["-f", "pftrace", "-d"])
        .arg(&out)
        .args(["--skip-bad-rows", "--report"])
        .arg(&report)
        .env("TMPDIR", tmp.path().join("no-such-directory"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("line {line}: expected")) && !e.contains("imported from"),
        "{e}"
    );
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

/// Rows per table directory of a Parquet dataset, from the files' footers.
fn dataset_rows(ds: &Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(ds)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('_'))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, parquet_rows(&p))
        })
        .collect()
}

/// The guard of issue 12's direct readers: one generated trace given as RocPD databases,
/// as rocprofv3 CSV sets and as rocprofv3 JSON files converts to the same Perfetto slices
/// (track, name, start, duration), the same flows (which slices each arrow joins) and the
/// same Parquet row counts, except where CSV and JSON carry less than the database
/// (`formats/rocprofv3/README.md`, "The same trace three ways").
#[test]
fn the_same_trace_as_rocpd_csv_and_json_converts_to_the_same_slices_and_flows() {
    let tmp = tempfile::tempdir().unwrap();
    let dbs = generate(&tmp.path().join("in"), 52, 2, 8);
    let (csv, json) = (tmp.path().join("csv"), tmp.path().join("json"));
    for db in &dbs {
        rocpd_gen::export_csv(db, &csv).unwrap();
        rocpd_gen::export_json(db, &json).unwrap();
    }
    let inputs: [(&str, Vec<PathBuf>); 3] = [
        ("rocpd", dbs.clone()),
        ("csv", vec![csv]),
        ("json", vec![json]),
    ];
    let mut decoded = Vec::new();
    let mut rows = Vec::new();
    for (label, input) in &inputs {
        let out = tmp.path().join(format!("out-{label}"));
        decoded.push(decode(&convert(input, &out, &[])));
        let mut args = vec!["convert", "-q", "-f", "parquet", "-o", "t", "-d"];
        let out_dir = out.display().to_string();
        args.push(&out_dir);
        args.push("-i");
        let names: Vec<String> = input.iter().map(|p| p.display().to_string()).collect();
        args.extend(names.iter().map(String::as_str));
        run_ok(&args);
        rows.push(dataset_rows(&out.join("t_results.parquet")));
    }
    let db = &decoded[0];
    assert!(!db.slices.is_empty() && !db.flow_ends.is_empty());
    let pmc_on_samples = pmc_values_on_samples(&dbs);
    assert!(pmc_on_samples > 0);
    // Tracks of samples (instants), which neither layout has a place for.
    let sample_tracks: BTreeSet<&String> = db
        .instant_track_names
        .iter()
        .filter(|t| !db.slices.iter().any(|s| &s.0 == *t))
        .collect();
    for (i, (label, _)) in inputs.iter().enumerate().skip(1) {
        let d = &decoded[i];
        // A thread may be named otherwise only where the input has no program name: a
        // CSV set's main thread is `pid N` where the database names it after the command.
        let mut rename = std::collections::HashMap::new();
        for (pid, tid, name) in &d.threads {
            let theirs = db
                .threads
                .iter()
                .find(|t| (t.0, t.1) == (*pid, *tid))
                .unwrap_or_else(|| panic!("{label}: thread {pid}/{tid} is not the database's"));
            if &theirs.2 != name {
                assert!(
                    *label == "csv" && pid == tid && *name == format!("pid {pid}"),
                    "{label}: thread {pid}/{tid} is {name:?}, the database's {:?}",
                    theirs.2
                );
                rename.insert(name.clone(), theirs.2.clone());
            }
        }
        let track = |t: &String| rename.get(t).cloned().unwrap_or_else(|| t.clone());
        let mut slices: Vec<_> = d
            .slices
            .iter()
            .map(|(t, n, ts, dur)| (track(t), n.clone(), *ts, *dur))
            .collect();
        slices.sort();
        let only_db: Vec<_> = db
            .slices
            .iter()
            .filter(|x| !slices.contains(x))
            .take(5)
            .collect();
        let only_d: Vec<_> = slices
            .iter()
            .filter(|x| !db.slices.contains(x))
            .take(5)
            .collect();
        assert!(
            db.slices == slices,
            "{label}: slices differ from the database's: {only_db:?} against {only_d:?}"
        );
        let mut flows: Vec<Vec<_>> = d
            .flow_ends
            .iter()
            .map(|ends| {
                let mut e: Vec<_> = ends
                    .iter()
                    .map(|(t, n, ts)| (track(t), n.clone(), *ts))
                    .collect();
                e.sort();
                e
            })
            .collect();
        flows.sort();
        assert_eq!(db.flow_ends, flows, "{label}: flows");
        let tracks: BTreeSet<String> = d.track_names.iter().map(track).collect();
        let want: BTreeSet<String> = db
            .track_names
            .iter()
            .filter(|t| !sample_tracks.contains(t))
            .cloned()
            .collect();
        assert_eq!(want, tracks, "{label}: track names");
        assert!(d.instants_by_category.is_empty(), "{label}: no samples");
        // Parquet: every event table has the database's rows but samples and the PMC
        // values of samples; dimension tables the same rows, but those that list
        // definitions, which hold only what the events use.
        let got = &rows[i];
        let n = |t: &str| got.get(t).copied().unwrap_or(0);
        for (table, want) in &rows[0] {
            let want = match table.as_str() {
                "samples" => 0,
                "pmc_values" => want - pmc_on_samples,
                _ => *want,
            };
            if ["kernel_symbols", "code_objects", "pmc_info"].contains(&table.as_str()) {
                assert!(
                    n(table) > 0 && n(table) <= want,
                    "{label}: Parquet {table} has {} rows, the database {want}",
                    n(table)
                );
            } else {
                assert_eq!(n(table), want, "{label}: Parquet rows of {table}");
            }
        }
    }
}

/// PMC values of `dbs` that belong to samples (rocprofv3's layouts have no place for them).
fn pmc_values_on_samples(dbs: &[PathBuf]) -> u64 {
    let mut n = 0;
    for db in dbs {
        let c =
            rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let table = |base: &str| -> String {
            c.query_row(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?1 || '%'",
                [base],
                |r| r.get(0),
            )
            .unwrap()
        };
        let (pmc, samples) = (table("rocpd_pmc_event"), table("rocpd_sample"));
        let sql = format!(
            "SELECT COUNT(*) FROM \"{pmc}\" WHERE event_id IN (SELECT event_id FROM \"{samples}\")"
        );
        n += c.query_row(&sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64;
    }
    n
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

/// Every file under `dir`, relative, with its bytes.
fn tree_bytes(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

/// The Perfetto trace of `<dir>/t_results.db` (a RocPD output), converted with `TMPDIR`
/// set to `tmpdir`.
fn read_back(dir: &Path, tmpdir: &Path) -> Vec<u8> {
    let db = dir.join("t_results.db");
    let back = dir.join("back");
    let o = convert_to(&db, &back, &["pftrace"], Some(tmpdir));
    assert!(o.status.success(), "{}: {}", db.display(), stderr(&o));
    std::fs::read(back.join("t_results.pftrace")).unwrap()
}

/// `rocpd convert -q -o t -i INPUT -d OUT -f FORMATS...`, with `TMPDIR` set to `tmpdir`
/// when given.
fn convert_to(
    input: &Path,
    out: &Path,
    formats: &[&str],
    tmpdir: Option<&Path>,
) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rocpd"));
    cmd.args(["convert", "-q", "-o", "t", "-i"])
        .arg(input)
        .arg("-d")
        .arg(out)
        .arg("-f")
        .args(formats);
    if let Some(t) = tmpdir {
        cmd.env("TMPDIR", t);
    }
    cmd.output().unwrap()
}

/// Proton files (chrome traces and trees) are read directly, with no temporary database
/// (issue 12): with a `TMPDIR` nothing can be created in, Perfetto, OTF2, Parquet and
/// RocPD conversions succeed; adding `-f rocpd` to the command changes no byte of the
/// others, and the RocPD database it writes from the rows converts back to the same
/// Perfetto trace. (`crates/proton/tests/direct.rs` compares the reader and the written
/// database with the import.) `query` runs on a database written the same way.
#[test]
fn proton_files_convert_directly_to_what_their_imported_database_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let mut traces = Vec::new();
    for dir in [
        "generated_cpu",
        "constructed",
        "real_gpu",
        "triton_test_fixtures",
    ] {
        for e in std::fs::read_dir(Path::new("../../fixtures/proton").join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.to_string_lossy().into_owned();
            if name.ends_with(".chrome_trace")
                || name.contains(".hatchet")
                || dir == "triton_test_fixtures"
            {
                traces.push(p);
            }
        }
    }
    traces.sort();
    let count = |ext: &str| {
        traces
            .iter()
            .filter(|p| p.to_string_lossy().contains(ext))
            .count()
    };
    assert!(count(".chrome_trace") >= 5 && count(".hatchet") >= 15 && count(".json") >= 9);
    let no_tmp = tmp.path().join("no-such-directory");
    for (i, trace) in traces.iter().enumerate() {
        let (a, b) = (
            tmp.path().join(format!("a{i}")),
            tmp.path().join(format!("b{i}")),
        );
        let convert = |out: &Path, formats: &[&str], tmpdir: Option<&Path>| {
            let o = convert_to(trace, out, formats, tmpdir);
            assert!(o.status.success(), "{}: {}", trace.display(), stderr(&o));
        };
        convert(&a, &["pftrace", "otf2", "parquet"], Some(&no_tmp));
        convert(&b, &["pftrace", "otf2", "parquet", "rocpd"], Some(&no_tmp));
        let pf = |d: &Path| std::fs::read(d.join("t_results.pftrace")).unwrap();
        assert!(
            pf(&a) == pf(&b),
            "{}: Perfetto output differs",
            trace.display()
        );
        assert!(
            read_back(&b, &no_tmp) == pf(&a),
            "{}: the written database converts to another trace",
            trace.display()
        );
        for part in ["t_results.otf2", "t_results.def"] {
            assert_eq!(
                std::fs::read(a.join(part)).unwrap(),
                std::fs::read(b.join(part)).unwrap()
            );
        }
        assert!(tree_bytes(&a.join("t_results")) == tree_bytes(&b.join("t_results")));
        assert_eq!(
            dataset_rows(&a.join("t_results.parquet")),
            dataset_rows(&b.join("t_results.parquet"))
        );
    }
    // A query over a chrome trace or a tree runs on a database written from its rows.
    for kind in [".chrome_trace", ".hatchet"] {
        let file = traces
            .iter()
            .find(|p| {
                let regions = info_rows(std::slice::from_ref(p)).get("region").copied();
                p.to_string_lossy().contains(kind) && regions.unwrap_or(0) > 0
            })
            .unwrap();
        let o = rocpd(&[
            "query",
            "-i",
            &file.display().to_string(),
            "--query",
            "SELECT COUNT(*) FROM regions",
            "--format",
            "csv",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let n = info_rows(std::slice::from_ref(file))["region"];
        assert!(String::from_utf8_lossy(&o.stdout).contains(&n.to_string()));
    }
}

/// Past 16 inputs the sources are opened again for every pass (`KEEP_OPEN`): a chrome
/// trace then opens from its description, not by reading the file again, and the output
/// is still what it was. Seventeen copies (a copy's name makes it its own process) convert
/// to Perfetto directly, with a `TMPDIR` nothing can be created in, byte for byte as when
/// `-f rocpd` in the same command writes them all as one database, which converts back to
/// the same trace.
#[test]
fn seventeen_chrome_traces_convert_as_their_imported_databases() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(
        "../../fixtures/proton/constructed/trace_kernels_v3.8_lanes_flows_CONSTRUCTED.chrome_trace",
    );
    let inputs = tmp.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    for k in 0..17 {
        std::fs::copy(src, inputs.join(format!("rank{k:02}.chrome_trace"))).unwrap();
    }
    let convert = |out: &Path, formats: &[&str], tmpdir: Option<&Path>| {
        let o = convert_to(&inputs, out, formats, tmpdir);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    convert(
        &a,
        &["pftrace"],
        Some(&tmp.path().join("no-such-directory")),
    );
    let no_tmp = tmp.path().join("no-such-directory");
    convert(&b, &["pftrace", "rocpd"], Some(&no_tmp));
    let pf = |d: &Path| std::fs::read(d.join("t_results.pftrace")).unwrap();
    assert!(pf(&a) == pf(&b), "Perfetto output differs");
    // The database lists its 17 table sets in its own order, not the inputs', so the
    // trace read back is compared as decoded (every slice, track, process and flow).
    read_back(&b, &no_tmp);
    assert_eq!(
        format!("{:?}", decode(&b.join("back/t_results.pftrace"))),
        format!("{:?}", decode(&a.join("t_results.pftrace")))
    );
    let decoded = decode(&a.join("t_results.pftrace"));
    let per_copy = info_rows(&[src.to_path_buf()])["region"];
    assert_eq!(decoded.slices.len() as u64, 17 * per_copy);
}

/// rocprofv3 CSV runs, counter files included, are read directly, with no temporary
/// database (issue 12): with a `TMPDIR` nothing can be created in, Perfetto, OTF2,
/// Parquet and RocPD conversions of two processes' CSV sets succeed; adding `-f rocpd`
/// changes no byte (Parquet: no row) of the others, and the database it writes converts
/// back to the same trace; so for a rocprofv3 JSON file of one of them.
/// (`crates/rocprofv3/tests/direct.rs` compares readers and written databases with the
/// import.) A JSON file that must be imported fails under that `TMPDIR`.
#[test]
fn rocprofv3_runs_convert_directly_to_what_their_imported_databases_give() {
    let tmp = tempfile::tempdir().unwrap();
    let dbs = generate(&tmp.path().join("in"), 61, 2, 6);
    let csv = tmp.path().join("csv");
    let mut counter_files = 0;
    for db in &dbs {
        let (dir, _) = rocpd_gen::export_csv(db, &csv).unwrap();
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            counter_files += usize::from(p.to_string_lossy().ends_with("counter_collection.csv"));
        }
    }
    assert_eq!(counter_files, 2);
    let no_tmp = tmp.path().join("no-such-directory");
    let convert = |out: &Path, formats: &[&str], tmpdir: Option<&Path>| {
        convert_to(&csv, out, formats, tmpdir)
    };
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let o = convert(&a, &["pftrace", "otf2", "parquet"], Some(&no_tmp));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = convert(&b, &["pftrace", "otf2", "parquet", "rocpd"], Some(&no_tmp));
    assert!(o.status.success(), "{}", stderr(&o));
    let pf = |d: &Path| std::fs::read(d.join("t_results.pftrace")).unwrap();
    assert!(pf(&a) == pf(&b), "Perfetto output differs");
    assert!(
        read_back(&b, &no_tmp) == pf(&a),
        "the written database differs"
    );
    for part in ["t_results.otf2", "t_results.def"] {
        assert_eq!(
            std::fs::read(a.join(part)).unwrap(),
            std::fs::read(b.join(part)).unwrap()
        );
    }
    assert!(tree_bytes(&a.join("t_results")) == tree_bytes(&b.join("t_results")));
    let rows = dataset_rows(&a.join("t_results.parquet"));
    assert_eq!(rows, dataset_rows(&b.join("t_results.parquet")));
    assert!(
        rows["kernels"] > 0 && rows["memory_copies"] > 0 && rows["pmc_values"] > 0,
        "{rows:?}"
    );
    let decoded = decode(&a.join("t_results.pftrace"));
    assert!(!decoded.flow_ends.is_empty());
    // Any number of decode threads (the region and marker streams share one read of the
    // API files, whichever opens first), byte for byte; the inputs are left as they were.
    let listing = || tree_bytes(&csv);
    let before = listing();
    // Perfetto bytes of `input` converted on `threads` threads, with the unusable TMPDIR.
    let on_threads = |input: &Path, threads: &str| {
        let out = tmp.path().join(format!("threads-{threads}"));
        let _ = std::fs::remove_dir_all(&out);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_rocpd"))
            .args([
                "convert",
                "-q",
                "-o",
                "t",
                "-f",
                "pftrace",
                "--threads",
                threads,
            ])
            .arg("-i")
            .arg(input)
            .arg("-d")
            .arg(&out)
            .env("TMPDIR", &no_tmp)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        pf(&out)
    };
    for threads in ["1", "4"] {
        assert!(
            on_threads(&csv, threads) == pf(&a),
            "--threads {threads}: Perfetto output differs"
        );
    }
    assert!(listing() == before, "an input changed");
    // A JSON file is read directly too (issue 12), counter records included, and written
    // as RocPD with that TMPDIR.
    let (json, _) = rocpd_gen::export_json(&dbs[0], &tmp.path().join("json")).unwrap();
    let (c, d) = (tmp.path().join("c"), tmp.path().join("d"));
    let o = convert_to(&json, &c, &["pftrace", "parquet"], Some(&no_tmp));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = convert_to(&json, &d, &["pftrace", "parquet", "rocpd"], Some(&no_tmp));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(pf(&c) == pf(&d), "JSON: Perfetto output differs");
    assert!(
        read_back(&d, &no_tmp) == pf(&c),
        "JSON: the written database differs"
    );
    let json_rows = dataset_rows(&c.join("t_results.parquet"));
    assert_eq!(json_rows, dataset_rows(&d.join("t_results.parquet")));
    assert!(json_rows["pmc_values"] > 0, "{json_rows:?}");
    // Its streams read side by side (two threads or more for one input) or one after
    // another: the same bytes.
    for threads in ["1", "2", "3"] {
        assert!(
            on_threads(&json, threads) == pf(&c),
            "JSON, --threads {threads}: Perfetto output differs"
        );
    }
    // Written again with sorted keys (records before `metadata`, `counters` and `strings`),
    // it is read directly all the same (D108): the same trace, as CSV, but for the guid
    // (made from the file's bytes).
    let as_csv = |input: &Path, out: &Path| -> Vec<(String, Vec<String>)> {
        let o = convert_to(input, out, &["csv"], Some(&no_tmp));
        assert!(o.status.success(), "{}", stderr(&o));
        let mut files: Vec<_> = std::fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(f).unwrap();
                let rows = text
                    .lines()
                    .map(|l| l.split_once(',').map_or(l, |(_, rest)| rest).to_string())
                    .collect();
                (f.file_name().unwrap().to_string_lossy().into_owned(), rows)
            })
            .collect()
    };
    let original = as_csv(&json, &tmp.path().join("csv-a"));
    let text = std::fs::read_to_string(&json).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    std::fs::write(&json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let sorted = as_csv(&json, &tmp.path().join("csv-b"));
    assert!(original.len() > 5 && original.iter().all(|(_, rows)| rows.len() > 1));
    assert!(sorted == original, "JSON with sorted keys: other rows");
    // One whose kernel record contradicts its counter record imports: nothing can be
    // created there.
    std::fs::write(&json, common::counter_record_moved(&text)).unwrap();
    let o = convert_to(&json, &tmp.path().join("f"), &["pftrace"], Some(&no_tmp));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("temporary"), "{}", stderr(&o));
}
