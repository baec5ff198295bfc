//! Bad inputs: each gets a clear error naming the file and what was found, exit code 1,
//! and no output file.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Runs a conversion expected to fail; returns stderr after checking the exit code and
/// that the output directory holds no file.
fn refused(inputs: &[&Path], out: &Path) -> String {
    let mut args: Vec<String> = vec!["convert".into(), "-i".into()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(["-f", "pftrace", "-d"].map(String::from));
    args.push(out.display().to_string());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rocpd(&refs);
    assert_eq!(
        o.status.code(),
        Some(1),
        "expected failure, got {:?}: {}",
        o.status,
        stderr(&o)
    );
    if out.exists() {
        let left: Vec<_> = std::fs::read_dir(out).unwrap().collect();
        assert!(left.is_empty(), "output left behind: {left:?}");
    }
    stderr(&o)
}

fn one_db(dir: &Path) -> PathBuf {
    generate(dir, 3, 1, 4).remove(0)
}

#[test]
fn a_text_file_is_not_a_database() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("kernel_trace.db");
    std::fs::write(&f, "\"Kind\",\"Agent_Id\"\n").unwrap();
    let e = refused(&[&f], &tmp.path().join("out"));
    assert!(
        e.contains("kernel_trace.db") && e.contains("not a SQLite database"),
        "{e}"
    );
}

#[test]
fn gzip_and_empty_files_are_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let gz = tmp.path().join("x.db");
    std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0]).unwrap();
    let e = refused(&[&gz], &tmp.path().join("out"));
    assert!(e.contains("gzip"), "{e}");
    let empty = tmp.path().join("empty.db");
    std::fs::write(&empty, "").unwrap();
    let e = refused(&[&empty], &tmp.path().join("out"));
    assert!(e.contains("empty.db") && e.contains("empty file"), "{e}");
}

#[test]
fn a_legacy_rpd_database_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let e = refused(
        &[Path::new("../../fixtures/rpd-legacy/matmul_result.rpd")],
        &tmp.path().join("out"),
    );
    assert!(
        e.contains("matmul_result.rpd")
            && e.contains("legacy rocmProfileData")
            && e.contains("schema_version 2"),
        "{e}"
    );
}

#[test]
fn a_rocprof_v1_results_db_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("results.db");
    let c = rusqlite::Connection::open(&f).unwrap();
    c.execute_batch(
        "CREATE TABLE HIP (BeginNs INTEGER, EndNs INTEGER, Name TEXT);
         CREATE TABLE OPS (BeginNs INTEGER, EndNs INTEGER);
         CREATE TABLE KERN (BeginNs INTEGER, EndNs INTEGER, KernelName TEXT);",
    )
    .unwrap();
    drop(c);
    let e = refused(&[&f], &tmp.path().join("out"));
    assert!(e.contains("results.db") && e.contains("rocprof v1"), "{e}");
}

#[test]
fn an_unrelated_sqlite_database_lists_what_it_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("other.db");
    rusqlite::Connection::open(&f)
        .unwrap()
        .execute_batch("CREATE TABLE customers (id INTEGER);")
        .unwrap();
    let e = refused(&[&f], &tmp.path().join("out"));
    assert!(
        e.contains("other.db") && e.contains("without RocPD tables") && e.contains("customers"),
        "{e}"
    );
}

#[test]
fn an_unknown_schema_version_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = one_db(&tmp.path().join("in"));
    let c = rusqlite::Connection::open(&db).unwrap();
    let meta = table_of(&c, "rocpd_metadata");
    c.execute(
        &format!("UPDATE \"{meta}\" SET value = '4' WHERE tag = 'schema_version'"),
        [],
    )
    .unwrap();
    drop(c);
    let e = refused(&[&db], &tmp.path().join("out"));
    assert!(
        e.contains("schema_version \"4\" is not supported") && e.contains(&meta),
        "{e}"
    );
}

#[test]
fn a_truncated_database_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let db = one_db(&tmp.path().join("in"));
    let bytes = std::fs::read(&db).unwrap();
    let cut = tmp.path().join("cut.db");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let e = refused(&[&cut], &tmp.path().join("out"));
    assert!(e.contains("cut.db") && e.contains("truncated"), "{e}");
}

#[test]
fn a_corrupt_database_fails_with_the_file_and_table_and_leaves_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let db = one_db(&tmp.path().join("in"));
    let mut bytes = std::fs::read(&db).unwrap();
    let page = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    // Scribble over every page but the first (the schema) and keep the header valid.
    for p in (page..bytes.len()).step_by(page) {
        for b in &mut bytes[p..p + 64.min(page)] {
            *b = 0xA5;
        }
    }
    let bad = tmp.path().join("bad.db");
    std::fs::write(&bad, &bytes).unwrap();
    let e = refused(&[&bad], &tmp.path().join("out"));
    assert!(
        e.contains("bad.db") && (e.contains("malformed") || e.contains("corrupt")),
        "{e}"
    );
    // A split that fails part-way removes the parts it had finished.
    let split = tmp.path().join("split");
    let o = rocpd(&[
        "convert",
        "-i",
        bad.to_str().unwrap(),
        "-f",
        "pftrace",
        "--split-by",
        "time",
        "--split-count",
        "4",
        "-d",
        split.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        !split.exists() || std::fs::read_dir(&split).unwrap().next().is_none(),
        "parts left behind"
    );
}

#[test]
fn the_same_process_twice_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = one_db(&tmp.path().join("in"));
    let copy = tmp.path().join("copy.db");
    std::fs::copy(&db, &copy).unwrap();
    let e = refused(&[&db, &copy], &tmp.path().join("out"));
    assert!(e.contains("same process"), "{e}");
}

#[test]
fn missing_inputs_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let e = refused(&[&tmp.path().join("nope.db")], &tmp.path().join("out"));
    assert!(e.contains("nope.db") && e.contains("no such file"), "{e}");
    let e = refused(&[&tmp.path().join("*.db")], &tmp.path().join("out"));
    assert!(e.contains("no file matches"), "{e}");
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    let e = refused(&[&tmp.path().join("empty")], &tmp.path().join("out"));
    assert!(e.contains("holds no profiling database"), "{e}");
}

#[test]
fn usage_errors_exit_with_2() {
    let o = rocpd(&["convert", "-i", "x.db", "-f", "nosuchformat"]);
    assert_eq!(o.status.code(), Some(2));
    let o = rocpd(&["convert", "-f", "pftrace"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_missing_required_value_names_the_table_row_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let db = one_db(&tmp.path().join("in"));
    let (kd, id) = break_a_dispatch(&db, "ORDER BY id DESC");
    let e = refused(&[&db], &tmp.path().join("out"));
    assert!(
        e.contains(&format!(
            "table {kd}, row id {id}: column agent_id: is missing"
        )),
        "{e}"
    );
}

#[test]
fn version_is_printed_for_amds_dash_v_and_for_dash_capital_v() {
    for flag in ["-v", "-V", "--version"] {
        let o = common::rocpd(&[flag]);
        assert!(o.status.success(), "{flag}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.starts_with("rocpd "), "{flag}: {out}");
    }
}

/// A rocprofv3 JSON file of a generated process of `iterations`, and the CSV run of the
/// same process.
fn rocprofv3_files(dir: &Path, iterations: u32) -> (PathBuf, PathBuf) {
    let db = generate(&dir.join("db"), 3, 1, iterations).remove(0);
    let (json, _) = rocpd_gen::export_json(&db, &dir.join("json")).unwrap();
    let (csv, _) = rocpd_gen::export_csv(&db, &dir.join("csv")).unwrap();
    (json, csv)
}

#[test]
fn the_same_rocprofv3_process_twice_is_refused_however_it_is_copied() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let (json, csv) = rocprofv3_files(tmp.path(), 4);
    let text = std::fs::read_to_string(&json).unwrap();
    let copies = tmp.path().join("copies");
    std::fs::create_dir(&copies).unwrap();
    // Renamed; gzipped; written again with other spacing and key order (serde_json's
    // `Value` sorts keys).
    let renamed = copies.join("other_results.json");
    std::fs::write(&renamed, &text).unwrap();
    let gz = copies.join("gz_results.json.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let pretty = copies.join("pretty_results.json");
    std::fs::write(&pretty, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    for copy in [&renamed, &gz, &pretty] {
        let e = refused(&[&json, copy], &tmp.path().join("out"));
        assert!(
            e.contains("holds the same process") && e.contains(&*copy.to_string_lossy()),
            "{e}"
        );
    }
    // One file holding the process object twice.
    let mut twice = value.clone();
    let tool = twice["rocprofiler-sdk-tool"].as_array_mut().unwrap();
    tool.push(tool[0].clone());
    let doubled = copies.join("twice_results.json");
    std::fs::write(&doubled, twice.to_string()).unwrap();
    let e = refused(&[&doubled], &tmp.path().join("out"));
    assert!(e.contains("holds the same process"), "{e}");
    // A CSV run copied to another directory.
    let moved = tmp.path().join("csv-copy");
    std::fs::create_dir(&moved).unwrap();
    for f in std::fs::read_dir(&csv).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, moved.join(f.file_name().unwrap())).unwrap();
    }
    let e = refused(&[&csv, &moved], &tmp.path().join("out"));
    assert!(e.contains("holds the same process"), "{e}");
    // The copy's files named one by one, in reverse name order (a run's guid does not
    // depend on the order its files are given in).
    let mut files: Vec<PathBuf> = std::fs::read_dir(&moved)
        .unwrap()
        .map(|f| f.unwrap().path())
        .collect();
    files.sort();
    files.reverse();
    let mut inputs: Vec<&Path> = vec![&csv];
    inputs.extend(files.iter().map(PathBuf::as_path));
    let e = refused(&inputs, &tmp.path().join("out"));
    assert!(e.contains("holds the same process"), "{e}");
}

#[test]
fn two_csv_runs_alike_but_for_their_last_row_are_two_processes() {
    let tmp = tempfile::tempdir().unwrap();
    // Enough iterations for a kernel trace past twice the 64 KiB the guid reads of
    // each end of a file.
    let (_, csv) = rocprofv3_files(tmp.path(), 60);
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    for f in std::fs::read_dir(&csv).unwrap() {
        let f = f.unwrap().path();
        let to = other.join(f.file_name().unwrap());
        let mut bytes = std::fs::read(&f).unwrap();
        if to.to_string_lossy().ends_with("kernel_trace.csv") {
            // The same names, sizes and first 64 KiB: only the last timestamp's last
            // digit differs.
            assert!(bytes.len() > 128 << 10, "{} bytes", bytes.len());
            let at = bytes.len() - 2;
            assert!(bytes[at].is_ascii_digit(), "{}", bytes[at] as char);
            bytes[at] = if bytes[at] == b'9' {
                b'8'
            } else {
                bytes[at] + 1
            };
        }
        std::fs::write(&to, bytes).unwrap();
    }
    let o = rocpd(&["info", "-i", csv.to_str().unwrap(), other.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("2 process(es)"), "{out}");
}

/// A process given as its database and as its rocprofv3 JSON file (rocprofv3 writes both
/// side by side when asked for two formats) is refused by its host, pid and start time:
/// the two have different guids (D172). Two different processes stay two.
#[test]
fn the_same_process_as_database_and_json_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = generate(&tmp.path().join("db"), 3, 2, 4);
    let (json, _) = rocpd_gen::export_json(&db[0], &tmp.path().join("json")).unwrap();
    let e = refused(&[&db[0], &json], &tmp.path().join("out"));
    assert!(
        e.contains("holds the same process (pid ") && e.contains("in another form"),
        "{e}"
    );
    let o = rocpd(&[
        "info",
        "-i",
        db[1].to_str().unwrap(),
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 process(es)"));
}
