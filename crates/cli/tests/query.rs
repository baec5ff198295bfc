//! `rocpd query`: results equal SQLite's on a merged database of the same inputs (with
//! and without a window), the exact shape of each format, the read-only rule, scripts,
//! errors, files, closed pipes and non-database inputs.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use rusqlite::types::ValueRef;
use serde_json::Value;

fn query_cmd(inputs: &[PathBuf], tmp: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocpd"));
    c.arg("query").arg("-i").args(inputs).args(args);
    // The temporary merged database goes here, so the test can see it removed.
    let t = tmp.join("tmpdir");
    std::fs::create_dir_all(&t).unwrap();
    c.env("TMPDIR", &t);
    c
}

fn query(inputs: &[PathBuf], tmp: &Path, args: &[&str]) -> std::process::Output {
    let o = query_cmd(inputs, tmp, args).output().unwrap();
    let left: Vec<_> = std::fs::read_dir(tmp.join("tmpdir")).unwrap().collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    o
}

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}", stderr(o));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn failed(o: &std::process::Output) -> String {
    assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
    stderr(o)
}

/// A value as `--format csv` must write it: integers and text as they are, NULL empty,
/// reals as numbers (compared exactly).
#[derive(Debug, PartialEq)]
enum Cell {
    Text(String),
    Real(f64),
}

/// The header and rows of `sql` on `db`, read with rusqlite.
fn sqlite_rows(db: &Path, sql: &str) -> Vec<Vec<Cell>> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut st = c.prepare(sql).unwrap();
    let n = st.column_count();
    let header: Vec<Cell> = st
        .column_names()
        .map(|s| Cell::Text(s.to_string()))
        .collect();
    let mut out = vec![header];
    let mut rows = st.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        out.push(
            (0..n)
                .map(|i| match r.get_ref(i).unwrap() {
                    ValueRef::Null => Cell::Text(String::new()),
                    ValueRef::Integer(i) => Cell::Text(i.to_string()),
                    ValueRef::Real(f) => Cell::Real(f),
                    ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(_) => panic!("no blobs expected"),
                })
                .collect(),
        );
    }
    out
}

/// `--format csv` output read back with the csv crate; a field where `like` holds a real
/// is parsed as a number (Rust's parser rounds correctly: the comparison is exact).
fn csv_rows(text: &str, like: &[Vec<Cell>]) -> Vec<Vec<Cell>> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    r.records()
        .enumerate()
        .map(|(k, rec)| {
            rec.unwrap()
                .iter()
                .enumerate()
                .map(|(i, f)| match like.get(k).and_then(|row| row.get(i)) {
                    Some(Cell::Real(_)) => Cell::Real(f.parse().unwrap()),
                    _ => Cell::Text(f.to_string()),
                })
                .collect()
        })
        .collect()
}

/// Runs `sql` with `rocpd query` on `inputs` and checks it against rusqlite on `db`;
/// returns the number of rows.
fn same_as_sqlite(inputs: &[PathBuf], tmp: &Path, db: &Path, sql: &str, extra: &[&str]) -> usize {
    let mut args = vec!["--query", sql, "--format", "csv"];
    args.extend(extra);
    let out = ok(&query(inputs, tmp, &args));
    let want = sqlite_rows(db, sql);
    assert_eq!(csv_rows(&out, &want), want, "{sql}");
    want.len() - 1
}

fn merged(inputs: &[PathBuf], dir: &Path, extra: &[&str]) -> PathBuf {
    let mut args = vec!["merge", "-q", "-o", "m", "-d", dir.to_str().unwrap(), "-i"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    args.extend(extra);
    let o = rocpd(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    dir.join("m.db")
}

const QUERIES: [&str; 6] = [
    "SELECT * FROM kernels ORDER BY guid, id",
    "SELECT id, guid, category, name, pid, tid, start, \"end\", duration, extdata FROM regions ORDER BY guid, id",
    "SELECT * FROM top_kernels ORDER BY total_duration DESC, name",
    "SELECT K.name, K.duration, R.name AS launcher, R.tid FROM kernels K \
     JOIN regions R ON R.guid = K.guid AND R.stack_id = K.stack_id ORDER BY K.guid, K.id, R.id",
    "SELECT pid, COUNT(*) AS n, SUM(size) AS bytes, AVG(duration) AS mean FROM memory_copies GROUP BY pid ORDER BY pid",
    "SELECT * FROM busy ORDER BY agent_id, GpuTime",
];

#[test]
fn results_equal_sqlite_on_a_merged_database_of_the_same_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 81, 3, 6);
    let db = merged(&ins, &tmp.path().join("m"), &[]);
    for sql in QUERIES {
        let n = same_as_sqlite(&ins, tmp.path(), &db, sql, &[]);
        assert!(n > 1, "{sql}: too few rows to compare");
    }
}

#[test]
fn a_window_is_applied_first_exactly_as_merge_applies_it() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 82, 2, 10);
    let window = ["--start", "30%", "--end", "70%", "--inclusive", "false"];
    let db = merged(&ins, &tmp.path().join("m"), &window);
    let full = merged(&ins, &tmp.path().join("all"), &[]);
    for sql in [
        QUERIES[0],
        QUERIES[2],
        "SELECT COUNT(*) AS n, MIN(start) AS lo, MAX(\"end\") AS hi FROM regions_and_samples",
    ] {
        same_as_sqlite(&ins, tmp.path(), &db, sql, &window);
        assert_ne!(
            sqlite_rows(&db, sql),
            sqlite_rows(&full, sql),
            "{sql}: the window changed nothing"
        );
    }
}

#[test]
fn each_format_has_its_exact_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/generated")];
    let sql = "SELECT 1 AS n, 'a,\"b\"' AS text, NULL AS nul, 2.5 AS x \
               UNION ALL SELECT 22, 'line\nbreak|pipe', 'x', 1e300";
    let run = |f: &str| ok(&query(&ins, tmp.path(), &["--query", sql, "--format", f]));
    assert_eq!(
        run("csv"),
        "n,text,nul,x\n1,\"a,\"\"b\"\"\",,2.5\n22,\"line\nbreak|pipe\",x,1e300\n"
    );
    assert_eq!(
        run("json"),
        "[\n  {\n    \"n\":1,\n    \"text\":\"a,\\\"b\\\"\",\n    \"nul\":null,\n    \"x\":2.5\n  },\n  \
         {\n    \"n\":22,\n    \"text\":\"line\\nbreak|pipe\",\n    \"nul\":\"x\",\n    \"x\":1e300\n  }\n]\n"
    );
    assert_eq!(
        run("md"),
        "| n | text | nul | x |\n| ---: | :--- | :--- | ---: |\n| 1 | a,\"b\" | NULL | 2.5 |\n\
         | 22 | line\\nbreak\\|pipe | x | 1e300 |\n"
    );
    assert_eq!(
        run("console"),
        [
            " n  text              nul       x",
            "--  ----------------  ----  -----",
            " 1  a,\"b\"             NULL    2.5",
            "22  line\\nbreak|pipe  x     1e300",
            "",
        ]
        .join("\n")
    );
    assert_eq!(run("markdown"), run("md"));
}

#[test]
fn every_kind_of_write_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 83, 1, 2);
    let before: Vec<Vec<u8>> = ins.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let new_db = tmp.path().join("new.db");
    let attach = format!("ATTACH '{}' AS n", new_db.display());
    // The tables themselves (the rocpd_<name> union views cannot be written anyway).
    let region = table_of(
        &rusqlite::Connection::open(&ins[0]).unwrap(),
        "rocpd_region",
    );
    let insert = format!("INSERT INTO \"{region}\" SELECT * FROM \"{region}\"");
    let update = format!("UPDATE \"{region}\" SET start = 0");
    let delete = format!("DELETE FROM \"{region}\"");
    for (sql, what) in [
        (insert.as_str(), "INSERT into rocpd_region_"),
        (update.as_str(), "UPDATE of rocpd_region_"),
        (delete.as_str(), "DELETE from rocpd_region_"),
        ("CREATE TABLE t (x)", "CREATE TABLE t"),
        (attach.as_str(), "ATTACH"),
        ("PRAGMA user_version = 3", "PRAGMA user_version = 3"),
        ("PRAGMA query_only = 0", "PRAGMA query_only = 0"),
        (
            "SELECT load_extension('/no/such/extension')",
            "not authorized: SQLite extensions are not loaded",
        ),
    ] {
        let e = failed(&query(&ins, tmp.path(), &["--query", sql]));
        assert!(e.contains(what) && e.contains("read-only"), "{sql}: {e}");
        // The same in a script: refused, naming the file and the statement.
        let script = tmp.path().join("s.sql");
        std::fs::write(&script, format!("SELECT 1;\n{sql};")).unwrap();
        let e = failed(&query(
            &ins,
            tmp.path(),
            &["--script", script.to_str().unwrap(), "--query", "SELECT 1"],
        ));
        assert!(
            e.contains("s.sql: statement 2 (line 2)") && e.contains("read-only"),
            "{sql}: {e}"
        );
    }
    assert!(!new_db.exists());
    let after: Vec<Vec<u8>> = ins.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert_eq!(before, after);
}

#[test]
fn a_script_defines_temp_views_the_query_uses() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 84, 2, 4);
    let script = tmp.path().join("views.sql");
    std::fs::write(
        &script,
        "-- long kernels; per process\n\
         CREATE TEMP VIEW long_kernels AS SELECT * FROM kernels WHERE duration > 1000;\n\
         CREATE TEMP VIEW per_pid AS\n  SELECT pid, COUNT(*) AS n FROM long_kernels GROUP BY pid;\n",
    )
    .unwrap();
    let sql = "SELECT * FROM per_pid ORDER BY pid";
    let got = ok(&query(
        &ins,
        tmp.path(),
        &[
            "--script",
            script.to_str().unwrap(),
            "--query",
            sql,
            "--format",
            "csv",
        ],
    ));
    let db = merged(&ins, &tmp.path().join("m"), &[]);
    let want = sqlite_rows(
        &db,
        "SELECT pid, COUNT(*) AS n FROM kernels WHERE duration > 1000 GROUP BY pid ORDER BY pid",
    );
    assert_eq!(csv_rows(&got, &want), want);
    assert_eq!(want.len(), 3, "a header and two processes");
    // A script error names the file, the statement and its line.
    std::fs::write(&script, "SELECT 1;\n\nCREATE TEMP VIEW v AS SELEC 1;").unwrap();
    let e = failed(&query(
        &ins,
        tmp.path(),
        &["--script", script.to_str().unwrap(), "--query", "SELECT 1"],
    ));
    assert!(
        e.contains("views.sql: statement 2 (line 3): near \"SELEC\": syntax error"),
        "{e}"
    );
}

#[test]
fn errors_are_clear_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 85, 1, 2);
    let e = failed(&query(
        &ins,
        tmp.path(),
        &["--query", "SELECT * FROM no_such_view"],
    ));
    assert!(
        e.starts_with("rocpd: error: --query: no such table: no_such_view"),
        "{e}"
    );
    let e = failed(&query(&ins, tmp.path(), &["--query", "SELECT 1; SELECT 2"]));
    assert!(e.contains("more than one statement"), "{e}");
    let missing = tmp.path().join("missing.db");
    let e = failed(&query(
        std::slice::from_ref(&missing),
        tmp.path(),
        &["--query", "SELECT 1"],
    ));
    assert!(e.contains(missing.to_str().unwrap()), "{e}");
    let e = failed(&query(
        &ins,
        tmp.path(),
        &["--script", "/no/such/script.sql", "--query", "SELECT 1"],
    ));
    assert!(e.contains("/no/such/script.sql: read:"), "{e}");
    let e = failed(&query(
        &ins,
        tmp.path(),
        &["--query", "SELECT 1 AS a, 2 AS a", "--format", "json"],
    ));
    assert!(e.contains("two columns named \"a\""), "{e}");
    let e = failed(&query(
        &ins,
        tmp.path(),
        &["--query", "SELECT 1", "--start-marker", "no such marker"],
    ));
    assert!(e.contains("marker \"no such marker\" not found"), "{e}");
    // An empty result is not an error: a message, exit 0, no output.
    let o = query(
        &ins,
        tmp.path(),
        &["--query", "SELECT * FROM kernels WHERE 0"],
    );
    assert_eq!(ok(&o), "");
    assert_eq!(
        stderr(&o),
        "No results found for query: SELECT * FROM kernels WHERE 0\n"
    );
}

#[test]
fn results_go_to_a_file_whole_with_its_extension_and_never_over_an_input() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 86, 1, 2);
    let d = tmp.path().join("out");
    let sql = "SELECT name, total_calls FROM top_kernels ORDER BY name";
    let stdout = ok(&query(
        &ins,
        tmp.path(),
        &["--query", sql, "--format", "csv"],
    ));
    let o = query(
        &ins,
        tmp.path(),
        &[
            "--query",
            sql,
            "--format",
            "csv",
            "-o",
            "res",
            "-d",
            d.to_str().unwrap(),
        ],
    );
    assert_eq!(ok(&o), "");
    assert_eq!(std::fs::read_to_string(d.join("res.csv")).unwrap(), stdout);
    // The extension is not added twice; -d alone names the file `out`.
    ok(&query(
        &ins,
        tmp.path(),
        &[
            "--query",
            sql,
            "--format",
            "json",
            "-o",
            "r.json",
            "-d",
            d.to_str().unwrap(),
        ],
    ));
    assert!(d.join("r.json").is_file());
    ok(&query(
        &ins,
        tmp.path(),
        &["--query", sql, "--format", "md", "-d", d.to_str().unwrap()],
    ));
    assert!(d.join("out.md").is_file());
    // Empty: no file at all.
    let o = query(
        &ins,
        tmp.path(),
        &[
            "--query",
            "SELECT 1 WHERE 0",
            "-o",
            "empty",
            "-d",
            d.to_str().unwrap(),
        ],
    );
    assert!(o.status.success() && !d.join("empty.txt").exists());
    // Never over an input (a database may have any name).
    let input = ins[0].with_extension("csv");
    std::fs::rename(&ins[0], &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let (dir, name) = (input.parent().unwrap(), input.file_name().unwrap());
    let e = failed(&query(
        std::slice::from_ref(&input),
        tmp.path(),
        &[
            "--query",
            sql,
            "--format",
            "csv",
            "-o",
            name.to_str().unwrap(),
            "-d",
            dir.to_str().unwrap(),
        ],
    ));
    assert!(e.contains("input"), "{e}");
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains(".partial-"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn a_closed_pipe_ends_the_query_quietly_and_a_full_stdout_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 87, 1, 2);
    let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 2000000) \
               SELECT x, x * 2 AS y FROM c";
    let mut child = query_cmd(&ins, tmp.path(), &["--query", sql, "--format", "csv"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "x,y\n");
    // The reader is gone: the query stops without an error.
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    if Path::new("/dev/full").exists() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = query_cmd(
            &ins,
            tmp.path(),
            &["--query", "SELECT * FROM kernels", "--format", "csv"],
        )
        .stdout(full)
        .output()
        .unwrap();
        let e = failed(&o);
        assert!(e.starts_with("rocpd: error: stdout: "), "{e}");
    }
}

#[test]
fn a_query_failing_on_a_later_row_writes_nothing_to_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 88, 1, 2);
    // SQLite finds the overflow only at the last row; every row before it has been
    // rendered by then (about 9 MB of CSV: past what is held in memory).
    let rows = |last: &str| {
        format!(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 600000) \
             SELECT x, abs(CASE WHEN x < 600000 THEN x ELSE {last} END) AS y FROM c"
        )
    };
    let failing = rows("-9223372036854775808");
    for format in ["csv", "console", "json", "md"] {
        let o = query(&ins, tmp.path(), &["--query", &failing, "--format", format]);
        let e = failed(&o);
        assert!(e.contains("integer overflow"), "{format}: {e}");
        assert!(o.stdout.is_empty(), "{format}: {} bytes", o.stdout.len());
    }
    // The same rows without the overflow are given whole, in order.
    let text = ok(&query(
        &ins,
        tmp.path(),
        &["--query", &rows("-1"), "--format", "csv"],
    ));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 600_001);
    assert_eq!(
        (lines[0], lines[1], lines[600_000]),
        ("x,y", "1,1", "600000,1")
    );
}

#[test]
fn rocprofv3_csv_and_json_inputs_are_queried_like_databases() {
    let tmp = tempfile::tempdir().unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    for input in [
        "rocprofv3-csv-docs",
        "rocprofv3-json",
        "rocprofv3-csv-llamacpp",
    ] {
        let ins = vec![root.join(input)];
        let info = rocpd(&["info", "--json", "-i", ins[0].to_str().unwrap()]);
        let info: Value = serde_json::from_slice(&info.stdout).unwrap();
        let rows = &info["rows"];
        let out = ok(&query(
            &ins,
            tmp.path(),
            &[
                "--query",
                "SELECT (SELECT COUNT(*) FROM kernels) AS k, (SELECT COUNT(*) FROM regions) AS r, \
                 (SELECT COUNT(*) FROM memory_copies) AS c, (SELECT COUNT(*) FROM processes) AS p",
                "--format",
                "json",
            ],
        ));
        let got: Value = serde_json::from_str(&out).unwrap();
        let got = &got[0];
        assert_eq!(got["k"], rows["kernel_dispatch"], "{input}");
        assert_eq!(
            got["r"].as_u64().unwrap(),
            rows["region"].as_u64().unwrap() + rows["marker"].as_u64().unwrap(),
            "{input}"
        );
        assert_eq!(got["c"], rows["memory_copy"], "{input}");
        assert_eq!(
            got["p"],
            info["processes"].as_array().unwrap().len(),
            "{input}"
        );
        assert!(got["k"].as_u64().unwrap() > 0, "{input}");
    }
}

/// Rows skipped as bad are said on stderr: a query's counts must not hide them.
#[test]
fn skipped_bad_rows_are_said() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/rocprofv3-csv-docs/kernel_trace.csv");
    let text = std::fs::read_to_string(src).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    // The third line's first bare number becomes a word.
    let fields: Vec<&str> = lines[2].split(',').collect();
    let k = fields
        .iter()
        .position(|f| f.parse::<i64>().is_ok())
        .unwrap();
    let mut broken: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
    broken[k] = "notanumber".into();
    lines[2] = broken.join(",");
    std::fs::write(run.join("1_kernel_trace.csv"), lines.join("\n") + "\n").unwrap();
    let o = query(
        &[run],
        tmp.path(),
        &[
            "--skip-bad-rows",
            "--query",
            "SELECT COUNT(*) FROM kernels",
            "--format",
            "csv",
        ],
    );
    let out = ok(&o);
    assert!(out.ends_with(&format!("{}\n", lines.len() - 2)), "{out}");
    let e = stderr(&o);
    assert!(e.contains("1 input rows were skipped as bad"), "{e}");
}
