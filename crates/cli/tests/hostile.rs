//! Hostile inputs and faults: outputs never replace inputs, printing never panics, large
//! values stay in bounded memory, odd paths and odd files work or are refused at once,
//! extreme numbers do not wrap, reads and writes add up, inputs stay untouched (WAL
//! included), signals leave no partial file, and messages are short and exact.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use rusqlite::Connection;

fn rocpd_os(args: &[&OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocpd"))
        .args(args)
        .output()
        .expect("run rocpd")
}

fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// A generated one-process database copied to `dir/name`.
fn db_named(dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let src = generate(&dir.join(".gen"), 5, 1, 4).remove(0);
    let dest = dir.join(name);
    std::fs::copy(&src, &dest).unwrap();
    std::fs::remove_dir_all(dir.join(".gen")).unwrap();
    dest
}

/// The full name of the table `base` in the single table set of `db`.
fn table(conn: &Connection, base: &str) -> String {
    conn.query_row(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?1 || '\\_%' ESCAPE '\\' \
         AND name NOT LIKE ?1 || '\\_%\\_%\\_%\\_%\\_%\\_%' ESCAPE '\\' ORDER BY length(name) LIMIT 1",
        [base],
        |r| r.get(0),
    )
    .unwrap()
}

/// `rocpd convert -q -i <db> -f csv -d <out> <extra...>`.
fn csv_of(db: &Path, out: &Path, extra: &[&str]) -> Output {
    let (db, out) = (db.to_str().unwrap(), out.to_str().unwrap());
    let mut args = vec!["convert", "-q", "-i", db, "-f", "csv", "-d", out];
    args.extend(extra);
    rocpd(&args)
}

fn refused(o: &Output, needle: &str) {
    let e = stderr(o);
    assert_eq!(code(o), Some(1), "expected exit 1: {e}");
    assert!(e.contains(needle), "{needle:?} not in: {e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn an_output_never_replaces_its_input() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let merged = db_named(dir, "merged.db");
    let before = std::fs::read(&merged).unwrap();
    let d = dir.to_str().unwrap();
    let m = merged.to_str().unwrap();
    let o = rocpd(&["merge", "-i", m, "-d", d, "--include", "kind=kernel"]);
    refused(&o, "would replace the input");
    assert!(stderr(&o).contains("merged.db"));

    // The output itself, and a hard link to it, count as the input.
    let out = db_named(dir, "out_results.db");
    let hard = dir.join("hard.db");
    std::fs::hard_link(&out, &hard).unwrap();
    for input in [&out, &hard] {
        let i = input.to_str().unwrap();
        let o = rocpd(&["convert", "-i", i, "-f", "rocpd", "-d", d, "-o", "out"]);
        refused(&o, "would replace the input");
    }
    // So does a symlink to an input.
    let links = dir.join("links");
    std::fs::create_dir(&links).unwrap();
    std::os::unix::fs::symlink(&merged, links.join("x.db")).unwrap();
    let o = rocpd(&["merge", "-i", links.join("x.db").to_str().unwrap(), "-d", d]);
    refused(&o, "would replace the input");
    // An output directory that would hold an input (a Parquet dataset named over it).
    let ds = dir.join("out_results.parquet");
    std::fs::create_dir(&ds).unwrap();
    let inner = db_named(&ds, "in.db");
    let o = rocpd(&[
        "convert",
        "-i",
        inner.to_str().unwrap(),
        "-f",
        "parquet",
        "-d",
        d,
        "-o",
        "out",
    ]);
    refused(&o, "would contain the input");

    assert_eq!(std::fs::read(&merged).unwrap(), before);
    let names: Vec<String> = files_in(dir)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "hard.db",
            "links",
            "merged.db",
            "out_results.db",
            "out_results.parquet"
        ]
    );
}

/// A `..` after an output directory that does not exist yet leads back to the input's
/// directory; an output name with a directory in it would leave `-d`. Both are refused
/// before anything is written.
#[test]
fn dot_dot_paths_and_names_with_directories_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let input = db_named(dir, "in.db");
    let before = std::fs::read(&input).unwrap();
    let i = input.to_str().unwrap();
    let new_up = dir.join("new/..");
    let up = new_up.to_str().unwrap();
    // `merge` names its output `<DIR>/<NAME>.db`: `new/../in.db` is the input.
    let o = rocpd(&["merge", "-q", "-i", i, "-d", up, "-o", "in"]);
    refused(&o, "would replace the input");
    let d = dir.to_str().unwrap();
    for name in ["../in", "sub/../in", "/abs/x", "..", "."] {
        for cmd in [
            vec!["merge", "-q", "-i", i, "-d", d, "-o", name],
            vec!["convert", "-q", "-i", i, "-f", "csv", "-d", d, "-o", name],
            vec!["summary", "-q", "-i", i, "-f", "csv", "-d", d, "-o", name],
        ] {
            let o = rocpd(&cmd);
            refused(&o, "the output name (-o)");
        }
    }
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let names: Vec<PathBuf> = files_in(dir);
    assert_eq!(
        names,
        std::slice::from_ref(&input),
        "only the input is left"
    );
}

/// A keyed split meets keys the catalog did not predict (rows of a process it does not
/// list): their parts are claimed when met, so one named like an input is refused, not
/// written over it.
#[test]
fn an_unpredicted_split_part_never_replaces_an_input() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let a = db_named(&dir.join("a"), "mod.db");
    {
        let conn = Connection::open(&a).unwrap();
        let r = table(&conn, "rocpd_region");
        conn.execute_batch(&format!(
            "UPDATE \"{r}\" SET pid = 9999 WHERE id IN (SELECT id FROM \"{r}\" LIMIT 3)"
        ))
        .unwrap();
    }
    // Another process than the first input's (another seed).
    let out = dir.join("b");
    std::fs::create_dir_all(&out).unwrap();
    let victim = out.join("out_results.pid-9999.db");
    std::fs::copy(generate(&dir.join("gen"), 6, 1, 4).remove(0), &victim).unwrap();
    std::fs::remove_dir_all(dir.join("gen")).unwrap();
    let out = out.as_path();
    let before = std::fs::read(&victim).unwrap();
    let o = rocpd(&[
        "convert",
        "-i",
        a.to_str().unwrap(),
        victim.to_str().unwrap(),
        "-f",
        "rocpd",
        "-d",
        out.to_str().unwrap(),
        "-o",
        "out",
        "--split-by",
        "process",
    ]);
    refused(&o, "would replace the input");
    assert!(stderr(&o).contains("pid-9999"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), before);
    assert_eq!(
        files_in(out),
        std::slice::from_ref(&victim),
        "parts were left behind"
    );
}

#[test]
fn the_report_never_replaces_an_input_or_an_output_and_is_checked_first() {
    let tmp = tempfile::tempdir().unwrap();
    let input = db_named(tmp.path(), "a.db");
    let before = std::fs::read(&input).unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let i = input.to_str().unwrap();
    let d = out.to_str().unwrap();
    let o = rocpd(&["convert", "-i", i, "-f", "pftrace", "-d", d, "--report", i]);
    refused(&o, "would replace the input");
    let trace = out.join("t_results.pftrace");
    let o = rocpd(&[
        "convert",
        "-i",
        i,
        "-f",
        "pftrace",
        "-o",
        "t",
        "-d",
        d,
        "--report",
        trace.to_str().unwrap(),
    ]);
    refused(&o, "same path");
    let missing = tmp.path().join("nowhere/r.json");
    let o = rocpd(&[
        "convert",
        "-i",
        i,
        "-f",
        "pftrace",
        "-d",
        d,
        "--report",
        missing.to_str().unwrap(),
    ]);
    refused(&o, "does not exist");
    let o = rocpd(&[
        "merge",
        "-i",
        i,
        "-d",
        d,
        "--report",
        tmp.path().to_str().unwrap(),
    ]);
    refused(&o, "is a directory");
    assert!(
        files_in(&out).is_empty(),
        "outputs written: {:?}",
        files_in(&out)
    );
    assert_eq!(std::fs::read(&input).unwrap(), before);
    // A good report is written whole, beside the outputs.
    let report = tmp.path().join("r.json");
    let o = rocpd(&[
        "convert",
        "-q",
        "-i",
        i,
        "-f",
        "pftrace",
        "-d",
        d,
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert!(v["rows_in"]["kernel_dispatch"].as_u64().unwrap() > 0);
}

#[test]
fn a_closed_or_full_stdout_never_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let input = db_named(tmp.path(), "a.db");
    let i = input.to_str().unwrap();
    for args in [
        vec!["info", "-i", i],
        vec!["summary", "-i", i],
        vec!["info", "--json", "-i", i],
    ] {
        // The reader goes away before anything is written: a broken pipe.
        let mut child = Command::new(env!("CARGO_BIN_EXE_rocpd"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), Some(0), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).is_empty(), "{args:?}: {}", stderr(&o));
        // A full device is an error that says so.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_rocpd"))
            .args(&args)
            .stdout(full)
            .output()
            .unwrap();
        refused(&o, "rocpd: error: stdout:");
    }
}

#[test]
fn help_that_cannot_be_written_is_an_error() {
    for args in [vec!["--help"], vec!["convert", "--help"], vec!["--version"]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_rocpd"))
            .args(&args)
            .stdout(full)
            .output()
            .unwrap();
        refused(&o, "rocpd: error: stdout:");
        // Written, it is a success; a usage error stays clap's exit 2.
        let o = rocpd(&args);
        assert_eq!(code(&o), Some(0), "{args:?}: {}", stderr(&o));
        assert!(!o.stdout.is_empty());
    }
    assert_eq!(code(&rocpd(&["convert", "--no-such-flag"])), Some(2));
}

#[test]
fn an_empty_output_path_variable_counts_as_unset() {
    let tmp = tempfile::tempdir().unwrap();
    let input = db_named(tmp.path(), "a.db");
    let o = Command::new(env!("CARGO_BIN_EXE_rocpd"))
        .args(["convert", "-q", "-f", "pftrace", "-i"])
        .arg(&input)
        .env("ROCPD_OUTPUT_PATH", "")
        .env("ROCPD_OUTPUT_NAME", "")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    // The default directory; an empty name is the empty name, as `-o ""` is.
    assert!(tmp
        .path()
        .join("rocpd-output-data/results.pftrace")
        .is_file());
    // Given empty on the command line, it is still refused.
    let o = Command::new(env!("CARGO_BIN_EXE_rocpd"))
        .args(["convert", "-q", "-f", "pftrace", "-d", "", "-i"])
        .arg(&input)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
}

#[test]
fn a_report_where_the_output_directory_goes_is_refused_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let input = db_named(tmp.path(), "a.db");
    let i = input.to_str().unwrap();
    let out = tmp.path().join("out");
    let o_dir = out.to_str().unwrap();
    let sub = out.join("sub");
    // The report where -d goes, or where a directory above it goes.
    for d in [o_dir, sub.to_str().unwrap()] {
        let o = rocpd(&[
            "convert", "-q", "-f", "pftrace", "-i", i, "-d", d, "--report", o_dir,
        ]);
        refused(&o, "is (or lies under) that path");
        assert!(!out.exists(), "nothing written for -d {d}");
    }
    let o = rocpd(&["merge", "-q", "-i", i, "-d", o_dir, "--report", o_dir]);
    refused(&o, "is (or lies under) that path");
    assert!(!out.exists());
}

#[test]
fn a_failed_run_leaves_no_directory_it_made() {
    let tmp = tempfile::tempdir().unwrap();
    let input = db_named(tmp.path(), "a.db");
    let (k, _) = break_a_dispatch(&input, "MAX");
    assert!(!k.is_empty());
    let out = tmp.path().join("new/deeper");
    // Files, an OTF2 archive, datasets (new, and appended to), several at once.
    for formats in [
        &["pftrace"][..],
        &["otf2"],
        &["parquet"],
        &["parquet", "--append"],
        &["csv", "otf2", "parquet"],
    ] {
        let mut args = vec!["convert", "-q", "-i", input.to_str().unwrap()];
        args.extend(["-d", out.to_str().unwrap(), "-f"]);
        args.extend(formats);
        let o = rocpd(&args);
        assert_eq!(code(&o), Some(1), "{formats:?}: {}", stderr(&o));
        assert!(
            !tmp.path().join("new").exists(),
            "{formats:?}: {}",
            stderr(&o)
        );
    }
    // A directory that was there before stays, empty or not.
    std::fs::create_dir(tmp.path().join("there")).unwrap();
    let o = rocpd(&[
        "convert",
        "-q",
        "-f",
        "otf2",
        "-i",
        input.to_str().unwrap(),
        "-d",
        tmp.path().join("there/new").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(tmp.path().join("there").is_dir());
    assert!(!tmp.path().join("there/new").exists());
    // Named through a `..` after a directory that is not there, it stays too.
    let o = rocpd(&[
        "convert",
        "-q",
        "-f",
        "pftrace",
        "-i",
        input.to_str().unwrap(),
        "-d",
        tmp.path().join("gone/../there").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(tmp.path().join("there").is_dir());
    // A summary whose third file cannot be created (its name is too long) leaves no
    // directory: the first files' temporaries are gone before it is removed.
    let long = "n".repeat(212);
    let o = rocpd(&[
        "summary",
        "-q",
        "-f",
        "csv",
        "-o",
        &long,
        "-i",
        input.to_str().unwrap(),
        "-d",
        tmp.path().join("sm/x").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(!tmp.path().join("sm").exists(), "{}", stderr(&o));
    // A query with no rows writes no file, and so no directory either.
    let o = rocpd(&[
        "query",
        "-i",
        input.to_str().unwrap(),
        "--query",
        "SELECT 1 WHERE 0",
        "--format",
        "csv",
        "-d",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(!tmp.path().join("new").exists(), "{}", stderr(&o));
    // One failing after some rows writes none of them.
    let o = rocpd(&[
        "query",
        "-i",
        input.to_str().unwrap(),
        "--query",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10) \
         SELECT CASE WHEN x > 5 THEN json('{') ELSE x END FROM c",
        "--format",
        "csv",
        "-d",
        out.to_str().unwrap(),
    ]);
    refused(&o, "malformed JSON");
    assert!(!tmp.path().join("new").exists(), "{}", stderr(&o));
}

#[test]
fn a_rank_output_that_is_a_dead_link_or_a_fifo_is_named_in_a_walk() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let db = db_named(&dir, "a_results.db");
    std::os::unix::fs::symlink(tmp.path().join("nowhere.db"), dir.join("b_results.db")).unwrap();
    let fifo = dir.join("c_results.db");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // Files of other names are nobody's output: passed over without a word, as before.
    std::os::unix::fs::symlink(tmp.path().join("nowhere"), dir.join("notes.txt")).unwrap();
    let start = Instant::now();
    let o = rocpd(&["info", "-i", dir.to_str().unwrap()]);
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "the FIFO was opened"
    );
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("b_results.db: skipped: a link that leads to no file"),
        "{e}"
    );
    assert!(
        e.contains("c_results.db: skipped: not a regular file"),
        "{e}"
    );
    assert!(!e.contains("notes.txt"), "{e}");
    assert!(db.exists());
}

#[test]
fn a_file_named_as_a_proton_output_says_what_it_lacks_as_one() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("odd.hatchet");
    std::fs::write(&p, br#"{"hello": "world", "frame": 1}"#).unwrap();
    let o = rocpd(&["info", "-i", p.to_str().unwrap()]);
    refused(
        &o,
        "odd.hatchet: start of file: JSON whose first element is not a node object",
    );
    assert!(!stderr(&o).contains("SQLite"), "{}", stderr(&o));
}

#[test]
fn summary_says_how_many_events_ended_before_they_started() {
    let tmp = tempfile::tempdir().unwrap();
    let input = db_named(tmp.path(), "a.db");
    let c = Connection::open(&input).unwrap();
    let k = table(&c, "rocpd_kernel_dispatch");
    c.execute_batch(&format!(
        "UPDATE \"{k}\" SET \"end\" = start - 5 WHERE id = (SELECT MIN(id) FROM \"{k}\")"
    ))
    .unwrap();
    drop(c);
    let o = rocpd(&["summary", "-i", input.to_str().unwrap()]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "note: 1 events ended before they started; they are counted with zero duration"
        ),
        "{}",
        stderr(&o)
    );
    let o = rocpd(&["-q", "summary", "-i", input.to_str().unwrap()]);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

/// Peak RSS (VmHWM) of a command, in KiB, sampled from /proc while it runs.
fn peak_rss_kib(mut cmd: Command) -> (Output, u64) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status) {
            if let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kb);
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (child.wait_with_output().unwrap(), peak)
}

/// A database whose names and event extdata are each about 1 MB.
fn megabyte_strings(dir: &Path, iterations: u32) -> PathBuf {
    let db = generate(dir, 9, 1, iterations).remove(0);
    let conn = Connection::open(&db).unwrap();
    let s = table(&conn, "rocpd_string");
    let e = table(&conn, "rocpd_event");
    conn.execute_batch(&format!(
        "UPDATE \"{s}\" SET string = string || substr(replace(hex(zeroblob(524288)), '00', 'ab'), 1, 1000000) \
           WHERE string NOT LIKE 'MARKER%' AND id NOT IN (SELECT category_id FROM \"{e}\" WHERE category_id IS NOT NULL);
         UPDATE \"{e}\" SET extdata = json_object('x', substr(replace(hex(zeroblob(524288)), '00', 'cd'), 1, 1000000) || id);"
    ))
    .unwrap();
    db
}

#[test]
fn megabyte_strings_convert_every_row_in_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut peaks = Vec::new();
    for (k, iterations) in [(0, 3u32), (1, 12)] {
        let db = megabyte_strings(&tmp.path().join(format!("in{k}")), iterations);
        let out = tmp.path().join(format!("out{k}"));
        let report = tmp.path().join(format!("r{k}.json"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rocpd"));
        cmd.args(["convert", "-q", "-f", "pftrace", "--no-annotations", "-i"])
            .arg(&db)
            .arg("-d")
            .arg(&out)
            .arg("--report")
            .arg(&report);
        let (o, peak) = peak_rss_kib(cmd);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        assert_eq!(v["rows_in"], v["outputs"][0]["rows"]);
        let kernels = sql_count(
            std::slice::from_ref(&db),
            "SELECT COUNT(*) FROM rocpd_kernel_dispatch",
        );
        assert_eq!(v["rows_in"]["kernel_dispatch"].as_u64().unwrap(), kernels);
        let bytes = std::fs::metadata(&db).unwrap().len();
        peaks.push((bytes, peak));
        std::fs::remove_dir_all(&out).unwrap();
    }
    let ((small_bytes, small), (big_bytes, big)) = (peaks[0], peaks[1]);
    assert!(big_bytes > 2 * small_bytes, "{peaks:?}");
    // Three times the data, not three times the memory (batches are bounded in bytes).
    assert!(
        big < small + small / 2 + 64 * 1024,
        "peak RSS grew with the input: {peaks:?}"
    );
}

#[test]
fn file_names_that_are_not_utf8_work() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    let plain = db_named(&dir, "x.db");
    let odd = dir.join(OsStr::from_bytes(b"rank-\xff\xfe_results.db"));
    std::fs::rename(&plain, &odd).unwrap();
    let out = tmp.path().join(OsStr::from_bytes(b"out-\xff"));
    for extra in [
        &["-f", "pftrace", "--split-by", "process"][..],
        &["-f", "rocpd"][..],
        &["-f", "rocpd", "--include", "kind=kernel"][..],
        &["-f", "parquet", "pftrace"][..],
    ] {
        let mut args: Vec<&OsStr> = vec![
            "convert".as_ref(),
            "-q".as_ref(),
            "-i".as_ref(),
            dir.as_os_str(),
            "-d".as_ref(),
            out.as_os_str(),
        ];
        args.extend(extra.iter().map(OsStr::new));
        let o = rocpd_os(&args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        std::fs::remove_dir_all(&out).unwrap();
    }
    let o = rocpd_os(&[
        "merge".as_ref(),
        "-q".as_ref(),
        "-i".as_ref(),
        odd.as_os_str(),
        "-d".as_ref(),
        out.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("merged.db").is_file());
}

#[test]
fn a_fifo_or_device_input_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("pipe_results.db");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for input in [fifo.as_os_str(), OsStr::new("/dev/zero")] {
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rocpd"))
            .args(["info".as_ref(), "-i".as_ref(), input])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(20) {
                child.kill().unwrap();
                panic!("rocpd hangs on {input:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = child.wait_with_output().unwrap();
        refused(&o, "not a regular file");
    }
}

#[test]
fn extreme_timestamps_do_not_wrap() {
    let tmp = tempfile::tempdir().unwrap();
    let db = db_named(tmp.path(), "wide.db");
    {
        let conn = Connection::open(&db).unwrap();
        let k = table(&conn, "rocpd_kernel_dispatch");
        conn.execute_batch(&format!(
            "UPDATE \"{k}\" SET start = -9223372036854775808, \"end\" = 9223372036854775807 \
             WHERE id = (SELECT MIN(id) FROM \"{k}\")"
        ))
        .unwrap();
    }
    let i = db.to_str().unwrap();
    let o = rocpd(&["info", "--json", "-i", i]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["time_span_ns"]["duration"].as_u64(), Some(u64::MAX));
    let o = rocpd(&["info", "-i", i]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("(18446744073.709551 s)") || text.contains("(18446744073.709553 s)"),
        "{text}"
    );

    let out = tmp.path().join("out");
    let d = out.to_str().unwrap();
    let o = rocpd(&["summary", "-q", "-i", i, "-f", "json", "-d", d, "-o", "s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = std::fs::read_to_string(out.join("s_summary.json")).unwrap();
    assert!(
        json.contains("18446744073709551615"),
        "the widest kernel is not 2^64-1 ns: {json}"
    );

    let o = rocpd(&[
        "convert",
        "-q",
        "-i",
        i,
        "-f",
        "pftrace",
        "-d",
        d,
        "-o",
        "t",
        "--split-by",
        "time",
        "--split-count",
        "4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("t_results.manifest.json")).unwrap())
            .unwrap();
    let outputs = m["outputs"].as_array().unwrap();
    // The wide kernel starts the first part; every other event lies in the middle of the
    // span, in the third part: not everything in the last one.
    assert_eq!(outputs.len(), 2, "{m}");
    assert!(
        outputs[0]["key"].as_str().unwrap().starts_with("part-001"),
        "{m}"
    );
    let o = rocpd(&[
        "convert", "-q", "-i", i, "-f", "otf2", "parquet", "-d", d, "-o", "w",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A window marker whose time is stored as text is refused as a stream's row would be,
/// naming the marker and the table, not with SQLite's "invalid column type".
#[test]
fn a_window_marker_with_a_text_time_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = db_named(tmp.path(), "marker.db");
    let (r, message) = {
        let conn = Connection::open(&db).unwrap();
        let (r, e) = (table(&conn, "rocpd_region"), table(&conn, "rocpd_event"));
        let message: String = conn
            .query_row(
                &format!(
                    "SELECT json_extract(E.extdata, '$.message') m FROM \"{r}\" R \
                     JOIN \"{e}\" E ON E.id = R.event_id WHERE m IS NOT NULL LIMIT 1"
                ),
                [],
                |row| row.get(0),
            )
            .unwrap();
        conn.execute(
            &format!(
                "UPDATE \"{r}\" SET start = '0x' || printf('%x', start) WHERE event_id IN \
                 (SELECT id FROM \"{e}\" WHERE json_extract(extdata, '$.message') = ?1)"
            ),
            [&message],
        )
        .unwrap();
        (r, message)
    };
    let out = tmp.path().join("out");
    let o = rocpd(&[
        "convert",
        "-i",
        db.to_str().unwrap(),
        "-f",
        "csv",
        "-o",
        "t",
        "-d",
        out.to_str().unwrap(),
        "--start-marker",
        &message,
    ]);
    refused(&o, &format!("in table {r}"));
    refused(&o, "times must be integers");
    assert!(files_in(&out).is_empty());
}

/// Rebuilds table `base` of `c` from a copy of its rows (`old_rows`): `make(name)` gives the
/// SQL that creates it again. Returns the table's full name.
fn rebuild(c: &Connection, base: &str, make: impl Fn(&str) -> String) -> String {
    let t = table(c, base);
    c.execute_batch(&format!(
        "PRAGMA foreign_keys = OFF; CREATE TABLE old_rows AS SELECT * FROM \"{t}\"; \
         DROP TABLE \"{t}\"; {} DROP TABLE old_rows;",
        make(&t)
    ))
    .unwrap();
    t
}

/// Tables whose SQL the streams would read wrong without a word are refused at open,
/// naming the table: a column named rowid (rows dropped or repeated), a WITHOUT ROWID
/// event table, and a joined table with an id given twice (rows repeated).
#[test]
fn tables_that_would_drop_or_repeat_rows_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    type Craft = fn(&Connection) -> String;
    let cases: [(&str, Craft, &str); 3] = [
        (
            "rowid.db",
            |c| {
                rebuild(c, "rocpd_kernel_dispatch", |k| {
                    format!(
                        "CREATE TABLE \"{k}\" AS SELECT *, CASE WHEN id % 2 = 1 THEN id END AS rowid \
                         FROM old_rows;"
                    )
                })
            },
            "column named rowid",
        ),
        (
            "without.db",
            |c| {
                rebuild(c, "rocpd_memory_copy", |m| {
                    let cols = "id, guid, nid, pid, tid, start, \"end\", name_id, dst_agent_id, \
                                dst_address, src_agent_id, src_address, size, queue_id, stream_id, \
                                region_name_id, event_id, extdata";
                    format!(
                        "CREATE TABLE \"{m}\" ({}) WITHOUT ROWID; \
                         INSERT INTO \"{m}\" SELECT {cols} FROM old_rows;",
                        cols.replacen("id,", "id INTEGER PRIMARY KEY,", 1)
                    )
                })
            },
            "WITHOUT ROWID",
        ),
        (
            "twice.db",
            |c| {
                rebuild(c, "rocpd_info_kernel_symbol", |ks| {
                    format!(
                        "CREATE TABLE \"{ks}\" AS SELECT * FROM old_rows UNION ALL SELECT * FROM old_rows;"
                    )
                })
            },
            "is given more than once",
        ),
    ];
    for (name, craft, needle) in cases {
        let db = db_named(&tmp.path().join(name), name);
        let t = craft(&Connection::open(&db).unwrap());
        let out = tmp.path().join(format!("out-{name}"));
        let o = rocpd(&[
            "convert",
            "-i",
            db.to_str().unwrap(),
            "-f",
            "csv",
            "-o",
            "t",
            "-d",
            out.to_str().unwrap(),
        ]);
        refused(&o, &format!("table {t}"));
        refused(&o, needle);
        assert!(files_in(&out).is_empty(), "{name}: {:?}", files_in(&out));
    }
}

/// A time stored as text sorts after every number in SQLite: such a row is refused, named,
/// instead of coming out of order (which once made the time merge spin forever).
#[test]
fn a_time_stored_as_text_is_refused_naming_its_row() {
    let tmp = tempfile::tempdir().unwrap();
    let db = db_named(tmp.path(), "text.db");
    let k = {
        let conn = Connection::open(&db).unwrap();
        let k = table(&conn, "rocpd_kernel_dispatch");
        conn.execute_batch(&format!(
            "UPDATE \"{k}\" SET start = '0x' || printf('%x', start) WHERE id = (SELECT MIN(id) FROM \"{k}\")"
        ))
        .unwrap();
        k
    };
    for format in ["csv", "pftrace"] {
        let out = tmp.path().join(format!("out-{format}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_rocpd"))
            .args(["convert", "-i"])
            .arg(&db)
            .args(["-f", format, "-o", "t", "-d"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let began = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if began.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                panic!("{format}: still running after 120 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        refused(&o, &format!("table {k}, row id"));
        refused(&o, "times must be integers");
        assert!(files_in(&out).is_empty(), "{:?}", files_in(&out));
    }
}

/// Sizes, pids and times at the ends of the 64-bit range reach Perfetto clamped or kept,
/// never wrapped, and never panic (this test's debug build checks overflow).
#[test]
fn extreme_sizes_pids_and_times_do_not_wrap_in_perfetto() {
    use perfetto_protos::trace::Trace;
    use protobuf::Message;
    let tmp = tempfile::tempdir().unwrap();
    let db = db_named(tmp.path(), "wide.db");
    {
        let conn = Connection::open(&db).unwrap();
        let (a, m, r, p) = (
            table(&conn, "rocpd_memory_allocate"),
            table(&conn, "rocpd_memory_copy"),
            table(&conn, "rocpd_region"),
            table(&conn, "rocpd_info_process"),
        );
        conn.execute_batch(&format!(
            "UPDATE \"{a}\" SET type = 'ALLOC', level = 'REAL', size = 9223372036854775807, \
               agent_id = (SELECT MIN(agent_id) FROM \"{a}\"), address = id; \
             UPDATE \"{m}\" SET size = -9223372036854775808 WHERE id = (SELECT MIN(id) FROM \"{m}\"); \
             UPDATE \"{r}\" SET start = -5, \"end\" = -3 WHERE id = (SELECT MIN(id) FROM \"{r}\"); \
             UPDATE \"{p}\" SET pid = 1099511627776;"
        ))
        .unwrap();
    }
    let out = tmp.path().join("out");
    let o = rocpd(&[
        "convert",
        "-i",
        db.to_str().unwrap(),
        "-f",
        "pftrace",
        "-d",
        out.to_str().unwrap(),
        "-o",
        "t",
    ]);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(e.contains("passed the 64-bit range"), "{e}");
    assert!(e.contains("beyond Perfetto's 32 bits"), "{e}");
    let trace =
        Trace::parse_from_bytes(&std::fs::read(out.join("t_results.pftrace")).unwrap()).unwrap();
    let mut counters = Vec::new();
    let mut negative_begin = false;
    let mut process_pids = Vec::new();
    for p in &trace.packet {
        if p.has_track_descriptor() && p.track_descriptor().process.is_some() {
            process_pids.push(p.track_descriptor().process.pid());
        }
        if p.has_track_event() {
            let ev = p.track_event();
            if ev.has_counter_value() {
                counters.push(ev.counter_value());
            }
            negative_begin |= ev
                .debug_annotations
                .iter()
                .any(|a| a.has_int_value() && a.int_value() == -5);
        }
    }
    // Seven allocations of 2^63-1 bytes on one agent: the sum is clamped, never negative.
    // (The copy of -2^63 bytes is written as it is, and its end negates it without
    // overflow.)
    assert_eq!(counters.iter().max(), Some(&i64::MAX), "{counters:?}");
    // The begin time -5 is written signed, not as 2^64-5.
    assert!(negative_begin);
    // No process descriptor carries a pid truncated from 2^40 (its low 32 bits are 0).
    assert!(process_pids.is_empty(), "{process_pids:?}");
}

#[test]
fn reads_and_writes_add_up_with_dangling_pmc_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let db = db_named(tmp.path(), "pmc.db");
    let pmc = {
        let conn = Connection::open(&db).unwrap();
        let p = table(&conn, "rocpd_pmc_event");
        conn.execute_batch(&format!(
            "PRAGMA foreign_keys = OFF; UPDATE \"{p}\" SET event_id = 99999999 WHERE id % 5 = 0"
        ))
        .unwrap();
        conn.query_row(&format!("SELECT COUNT(*) FROM \"{p}\""), [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap() as u64
    };
    let report = tmp.path().join("r.json");
    let o = rocpd(&[
        "convert",
        "-q",
        "-i",
        db.to_str().unwrap(),
        "-f",
        "pftrace",
        "rocpd",
        "-d",
        tmp.path().join("out").to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(v["rows_in"]["pmc_value"].as_u64(), Some(pmc));
    let dropped: u64 = v["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["rows"]["pmc_value"].as_u64())
        .sum();
    assert!(dropped > 0);
    for out in v["outputs"].as_array().unwrap() {
        let wrote = out["rows"]["pmc_value"].as_u64().unwrap_or(0);
        if out["path"].as_str().unwrap().ends_with(".db") {
            assert_eq!(wrote, pmc, "the RocPD copy keeps every row");
        } else {
            assert_eq!(wrote + dropped, pmc, "{out}");
        }
    }
}

#[test]
fn a_wal_database_is_read_without_writing_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let db = db_named(&work, "w.db");
    let inputs = tmp.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    let regions_before = sql_count(
        std::slice::from_ref(&db),
        "SELECT COUNT(*) FROM rocpd_region",
    );
    {
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
            .unwrap();
        let r = table(&conn, "rocpd_region");
        conn.execute_batch(&format!(
            "INSERT INTO \"{r}\" (nid, pid, tid, start, \"end\", name_id, event_id, extdata) \
             SELECT nid, pid, tid, start + 1, \"end\", name_id, event_id, extdata FROM \"{r}\" LIMIT 5"
        ))
        .unwrap();
        // A snapshot with the new rows only in the WAL, as a crashed or running writer leaves it.
        std::fs::copy(&db, inputs.join("w.db")).unwrap();
        std::fs::copy(work.join("w.db-wal"), inputs.join("w.db-wal")).unwrap();
    }
    let listing = files_in(&inputs);
    let wal = std::fs::read(inputs.join("w.db-wal")).unwrap();
    let o = rocpd(&[
        "info",
        "--json",
        "-i",
        inputs.join("w.db").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let regions = v["rows"]["region"].as_u64().unwrap() + v["rows"]["marker"].as_u64().unwrap();
    assert_eq!(regions, regions_before + 5, "rows in the WAL were not read");
    // Through a symbolic link elsewhere, the WAL beside the target is read too.
    let links = tmp.path().join("links");
    std::fs::create_dir(&links).unwrap();
    std::os::unix::fs::symlink(inputs.join("w.db"), links.join("link.db")).unwrap();
    let o = rocpd(&[
        "info",
        "--json",
        "-i",
        links.join("link.db").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let linked = v["rows"]["region"].as_u64().unwrap() + v["rows"]["marker"].as_u64().unwrap();
    assert_eq!(
        linked, regions,
        "rows in the WAL beside a link's target were not read"
    );
    assert_eq!(files_in(&links), [links.join("link.db")]);
    let o = rocpd(&[
        "convert",
        "-q",
        "-i",
        inputs.to_str().unwrap(),
        "-f",
        "rocpd",
        "pftrace",
        "-d",
        tmp.path().join("out").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        files_in(&inputs),
        listing,
        "files appeared beside the input"
    );
    assert_eq!(std::fs::read(inputs.join("w.db-wal")).unwrap(), wal);
    // On more threads than inputs the database's streams are read through more than one
    // connection to its private copy: every one sees the rows in the WAL.
    let traces: Vec<Vec<u8>> = ["1", "4"]
        .iter()
        .map(|threads| {
            let out = tmp.path().join(format!("t{threads}"));
            pftrace_on_threads(&inputs.join("w.db"), &out, threads)
        })
        .collect();
    assert!(traces[0] == traces[1], "threads 1 and 4 differ");
    assert_eq!(files_in(&inputs), listing);

    // WAL mode with no WAL file: read in place, still without a -shm beside it.
    std::fs::remove_file(inputs.join("w.db-wal")).unwrap();
    let o = rocpd(&["info", "-i", inputs.join("w.db").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(files_in(&inputs), vec![inputs.join("w.db")]);
}

/// Starts `rocpd args` with a private TMPDIR, waits until `ready` holds, sends `signal`,
/// and returns the output. None if the run ended before it could be interrupted.
fn interrupt(
    args: &[&str],
    tmpdir: &Path,
    ready: &dyn Fn() -> bool,
    signal: &str,
) -> Option<Output> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocpd"))
        .args(args)
        .env("TMPDIR", tmpdir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !ready() {
        if child.try_wait().unwrap().is_some() || started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    Some(child.wait_with_output().unwrap())
}

#[test]
fn signals_leave_no_partial_output_and_no_temporary_files() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 17, 4, 600);
    // A rocprofv3 JSON file of the same trace that the direct reader leaves to the
    // import, so that an import directory exists too (other CSV runs and JSON files are
    // read directly): its first counter record's dispatch ends a nanosecond after its
    // kernel record says, so the kernel record changes the row the counter record made.
    let (generated, _) =
        rocpd_gen::export_json(&inputs[0], &tmp.path().join("json")).expect("json export");
    let text = std::fs::read_to_string(&generated).unwrap();
    let json = tmp.path().join("json").join("9_results.json");
    std::fs::write(&json, common::counter_record_moved(&text)).unwrap();
    std::fs::remove_file(&generated).unwrap();
    for (signal, status, input, what) in [
        (
            "INT",
            130,
            inputs[0].to_str().unwrap().to_string(),
            "partial",
        ),
        (
            "TERM",
            143,
            json.to_str().unwrap().to_string(),
            "rocpd-import-",
        ),
        // The terminal closing (an ssh session lost) cleans up as Ctrl-C does.
        (
            "HUP",
            129,
            inputs[0].to_str().unwrap().to_string(),
            "partial",
        ),
    ] {
        let out = tmp.path().join(format!("out-{signal}"));
        let private = tmp.path().join(format!("tmp-{signal}"));
        std::fs::create_dir(&private).unwrap();
        let d = out.to_str().unwrap().to_string();
        let args = [
            "convert", "-q", "-i", &input, "-f", "pftrace", "otf2", "parquet", "-d", &d,
        ];
        let watch = if what == "partial" {
            out.clone()
        } else {
            private.clone()
        };
        let ready = || {
            files_in(&watch)
                .iter()
                .any(|p| p.file_name().unwrap().to_string_lossy().contains(what))
        };
        let o =
            interrupt(&args, &private, &ready, signal).expect("the run ended before the signal");
        assert_eq!(code(&o), Some(status), "{signal}: {}", stderr(&o));
        assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
        assert!(
            files_in(&out).is_empty(),
            "{signal}: left {:?}",
            files_in(&out)
        );
        assert!(
            files_in(&private).is_empty(),
            "{signal}: left {:?}",
            files_in(&private)
        );
    }
}

#[test]
fn messages_are_short_and_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("out");
    let ds = d.to_str().unwrap();

    // A missing column names the table and the column, not the SQL.
    let db = db_named(tmp.path(), "nocol.db");
    {
        let conn = Connection::open(&db).unwrap();
        let k = table(&conn, "rocpd_kernel_dispatch");
        conn.execute_batch(&format!("ALTER TABLE \"{k}\" DROP COLUMN grid_size_z"))
            .unwrap();
    }
    let o = rocpd(&[
        "convert",
        "-i",
        db.to_str().unwrap(),
        "-f",
        "pftrace",
        "-d",
        ds,
    ]);
    refused(&o, "missing column \"grid_size_z\"");
    assert!(
        stderr(&o).contains("rocpd_kernel_dispatch_"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).len() < 300, "{}", stderr(&o));

    // Text in `end` names the row, the column and the value.
    let db = db_named(tmp.path(), "textend.db");
    let id: i64 = {
        let conn = Connection::open(&db).unwrap();
        let r = table(&conn, "rocpd_region");
        conn.execute_batch(&format!(
            "UPDATE \"{r}\" SET \"end\" = 'soon' WHERE id = (SELECT MAX(id) FROM \"{r}\")"
        ))
        .unwrap();
        conn.query_row(&format!("SELECT MAX(id) FROM \"{r}\""), [], |r| r.get(0))
            .unwrap()
    };
    let o = rocpd(&[
        "convert",
        "-i",
        db.to_str().unwrap(),
        "-f",
        "pftrace",
        "-d",
        ds,
    ]);
    refused(
        &o,
        &format!("row id {id}: column end: expected an integer, found text \"soon\""),
    );

    // A number out of range says so.
    let good = db_named(tmp.path(), "good.db");
    let g = good.to_str().unwrap();
    let o = rocpd(&[
        "convert",
        "-i",
        g,
        "-f",
        "pftrace",
        "-d",
        ds,
        "--start",
        "99999999999999999999",
    ]);
    refused(&o, "out of range");
    let o = rocpd(&["summary", "-i", g, "--start=-99999999999999999999"]);
    refused(&o, "out of range");

    // An input without events writes a valid trace that opens, and says so.
    let empty = db_named(tmp.path(), "empty.db");
    {
        let conn = Connection::open(&empty).unwrap();
        for base in [
            "rocpd_region",
            "rocpd_kernel_dispatch",
            "rocpd_memory_copy",
            "rocpd_memory_allocate",
            "rocpd_sample",
            "rocpd_pmc_event",
        ] {
            let t = table(&conn, base);
            conn.execute_batch(&format!("DELETE FROM \"{t}\"")).unwrap();
        }
    }
    let o = rocpd(&[
        "convert",
        "-i",
        empty.to_str().unwrap(),
        "-f",
        "pftrace",
        "-d",
        ds,
        "-o",
        "e",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no events"), "{}", stderr(&o));
    let trace = d.join("e_results.pftrace");
    assert!(std::fs::metadata(&trace).unwrap().len() > 0);
    let decoded = decode(&trace);
    assert!(decoded.events.is_empty());
    assert!(!decoded.processes.is_empty(), "no process described");
}

/// A full disk names the full place: the output, or the temporary directory SQLite sorts
/// in; never the input. Needs a small tmpfs, so root (as in CI); skipped elsewhere.
#[test]
fn a_full_disk_names_the_output_or_the_temporary_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let small = tmp.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&small)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a small tmpfs here (needs root)");
        return;
    }
    let input = generate(&tmp.path().join("in"), 21, 1, 1500).remove(0);
    let i = input.to_str().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rocpd"))
        .args(["summary", "-i", i])
        .env("TMPDIR", &small)
        .env("SQLITE_TMPDIR", &small)
        .output()
        .unwrap();
    let sorting = stderr(&o);
    let o2 = rocpd(&[
        "convert",
        "-i",
        i,
        "-f",
        "pftrace",
        "-d",
        small.to_str().unwrap(),
    ]);
    let left = files_in(&small);
    let _ = Command::new("umount").arg(&small).status();
    refused(&o, small.to_str().unwrap());
    assert!(sorting.contains("temporary files"), "{sorting}");
    assert!(!sorting.contains(i), "{sorting}");
    refused(&o2, "out_results.pftrace: write failed");
    assert!(!stderr(&o2).contains(i), "{}", stderr(&o2));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn files_a_directory_walk_cannot_read_are_named_not_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    db_named(&run, "node00_4000_results.db");
    std::fs::write(run.join("node01_9999_results.db"), b"").unwrap();
    std::fs::write(run.join("7_kernel_trace.csv"), b"").unwrap();
    std::fs::write(run.join("node02_1_results.db"), [0x1f, 0x8b, 8, 0, 0, 0]).unwrap();
    std::fs::write(run.join("notes.txt"), b"not a profile, not named like one").unwrap();
    let report = tmp.path().join("r.json");
    let o = rocpd(&[
        "convert",
        "-i",
        run.to_str().unwrap(),
        "-f",
        "pftrace",
        "-d",
        tmp.path().join("out").to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let notes = v["notes"].to_string();
    for (file, why) in [
        ("node01_9999_results.db", "empty file"),
        ("7_kernel_trace.csv", "empty file"),
        ("node02_1_results.db", "gzip"),
    ] {
        assert!(
            e.contains("rocpd: warning: ") && e.contains(file),
            "{file}: {e}"
        );
        assert!(
            notes.contains(file) && notes.contains(why),
            "{file}: {notes}"
        );
    }
    assert!(!e.contains("notes.txt"), "{e}");

    // A kernel trace that lacks a required column is an error naming file and column.
    let run2 = tmp.path().join("run2");
    db_named(&run2, "node00_4000_results.db");
    std::fs::write(
        run2.join("5_kernel_trace.csv"),
        "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\"\n\
         \"KERNEL_DISPATCH\",1,1,1,\"k\",1,100\n",
    )
    .unwrap();
    let o = rocpd(&[
        "convert",
        "-i",
        run2.to_str().unwrap(),
        "-f",
        "pftrace",
        "-d",
        tmp.path().join("out2").to_str().unwrap(),
    ]);
    refused(&o, "5_kernel_trace.csv");
    assert!(stderr(&o).contains("End_Timestamp"), "{}", stderr(&o));
    assert!(!tmp.path().join("out2").exists());
}

/// Links back to a directory already read (`a -> .`, `b -> .`) made the walk endless
/// (2^40 paths for two of them); each directory is now read once, the others named.
#[test]
fn a_directory_walk_reads_each_directory_once_through_links() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("loop");
    let db = db_named(&dir, "only.db");
    std::os::unix::fs::symlink(".", dir.join("a")).unwrap();
    std::os::unix::fs::symlink(".", dir.join("b")).unwrap();
    let o = rocpd(&["info", "-i", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("1 file(s)"), "{out}");
    assert!(
        out.contains(&db.display().to_string()) || out.contains("only.db"),
        "{out}"
    );
    assert!(stderr(&o).contains("already read"), "{}", stderr(&o));
}

/// An output over something that is not a regular file (a pipe, a device, a link) is
/// refused rather than replaced by a plain file; so is an output named as an input's
/// SQLite side file, present or not; a script is read with a bound (a pipe works,
/// `/dev/zero` does not).
#[test]
fn outputs_never_replace_special_files_or_name_side_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let input = db_named(dir, "in.db");
    let i = input.to_str().unwrap();
    let out = dir.join("out");
    let d = out.to_str().unwrap();
    let fifo = dir.join("fifo.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let target = dir.join("t.json");
    std::fs::write(&target, b"old").unwrap();
    let link = dir.join("l.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for report in [&fifo, &link] {
        let r = report.to_str().unwrap();
        let o = rocpd(&[
            "convert", "-q", "-i", i, "-f", "csv", "-d", d, "--report", r,
        ]);
        refused(&o, "not a regular file");
        assert!(!out.exists(), "nothing written before the refusal");
    }
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    for side in ["-wal", "-journal"] {
        let r = format!("{i}{side}");
        let o = rocpd(&["merge", "-q", "-i", i, "-d", d, "--report", &r]);
        refused(&o, "would replace the input");
        assert!(!Path::new(&r).exists());
    }
    let o = rocpd(&[
        "query",
        "-i",
        i,
        "--script",
        "/dev/zero",
        "--query",
        "select 1",
    ]);
    refused(&o, "longer than 16 MiB");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocpd"))
        .args([
            "query",
            "-i",
            i,
            "--script",
            "/dev/stdin",
            "--format",
            "csv",
        ])
        .args(["--query", "SELECT COUNT(*) > 0 FROM kk"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"CREATE TEMP VIEW kk AS SELECT * FROM kernels;")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).ends_with("1\n"));
    let o = rocpd(&[
        "convert",
        "-q",
        "-i",
        i,
        "-f",
        "csv",
        "-d",
        d,
        "--split-by",
        "process",
        "--max-open",
        "0",
    ]);
    refused(&o, "--max-open");
}

/// A launched kernel's bad start is named in its own table and column, not through the
/// flow aggregates of the API call that launched it (which the region stream reads first).
#[test]
fn a_launched_kernels_bad_start_is_named_in_its_own_row() {
    let tmp = tempfile::tempdir().unwrap();
    for (n, value) in ["'abc'", "1e30"].iter().enumerate() {
        let db = db_named(tmp.path(), &format!("bad{n}.db"));
        let (k, id) = {
            let conn = Connection::open(&db).unwrap();
            let (k, r, e) = (
                table(&conn, "rocpd_kernel_dispatch"),
                table(&conn, "rocpd_region"),
                table(&conn, "rocpd_event"),
            );
            let id: i64 = conn
                .query_row(
                    &format!(
                        "SELECT X.id FROM \"{k}\" X JOIN \"{e}\" E ON E.id = X.event_id \
                         WHERE E.stack_id IN (SELECT E2.stack_id FROM \"{r}\" R JOIN \"{e}\" E2 ON E2.id = R.event_id) \
                         ORDER BY X.id LIMIT 1"
                    ),
                    [],
                    |row| row.get(0),
                )
                .unwrap();
            conn.execute_batch(&format!(
                "UPDATE \"{k}\" SET start = {value} WHERE id = {id}"
            ))
            .unwrap();
            (k, id)
        };
        let out = tmp.path().join(format!("out{n}"));
        let o = csv_of(&db, &out, &[]);
        refused(&o, &format!("table {k}, row id {id}: column start"));
        assert!(files_in(&out).is_empty());
    }
}

/// Kernels given one dispatch id keep their own counter rows in `counter_collection.csv`
/// (each row has its kernel's id and times); with the same times as well they cannot be
/// told apart, which is an error naming both rows.
#[test]
fn counter_rows_of_kernels_sharing_a_dispatch_id_keep_their_kernel() {
    let tmp = tempfile::tempdir().unwrap();
    let db = db_named(tmp.path(), "dup.db");
    let conn = Connection::open(&db).unwrap();
    let (k, p) = (
        table(&conn, "rocpd_kernel_dispatch"),
        table(&conn, "rocpd_pmc_event"),
    );
    let ids: Vec<i64> = conn
        .prepare(&format!(
            "SELECT id FROM \"{k}\" WHERE event_id IN (SELECT event_id FROM \"{p}\") ORDER BY id LIMIT 3"
        ))
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "the generated trace has counters");
    let list = ids
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    conn.execute_batch(&format!(
        "UPDATE \"{k}\" SET dispatch_id = 1 WHERE id IN ({list})"
    ))
    .unwrap();
    let mut want: Vec<(String, String)> = conn
        .prepare(&format!(
            "SELECT kernel_id, start FROM \"{k}\" WHERE id IN ({list})"
        ))
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?.to_string(),
                r.get::<_, i64>(1)?.to_string(),
            ))
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    want.sort();
    let out = tmp.path().join("out");
    let run = |out: &Path| csv_of(&db, out, &[]);
    let o = run(&out);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut reader = csv::Reader::from_path(out.join("out_counter_collection.csv")).unwrap();
    let header = reader.headers().unwrap().clone();
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (d, kid, st) = (at("Dispatch_Id"), at("Kernel_Id"), at("Start_Timestamp"));
    let mut got: Vec<(String, String)> = reader
        .records()
        .map(|r| r.unwrap())
        .filter(|f| &f[d] == "1")
        .map(|f| (f[kid].to_string(), f[st].to_string()))
        .collect();
    got.sort();
    got.dedup();
    assert_eq!(got, want);
    // The same times too: refused, naming both rows.
    conn.execute_batch(&format!(
        "UPDATE \"{k}\" SET start = (SELECT start FROM \"{k}\" WHERE id = {a}), \"end\" = (SELECT \"end\" FROM \"{k}\" WHERE id = {a}) WHERE id = {b}",
        a = ids[0],
        b = ids[1]
    ))
    .unwrap();
    drop(conn);
    let out2 = tmp.path().join("out2");
    let o = run(&out2);
    refused(&o, "cannot tell their counter values apart");
    assert!(files_in(&out2).is_empty());
    // Without counter values nothing needs telling apart.
    let out3 = tmp.path().join("out3");
    let o = csv_of(&db, &out3, &["--exclude", "kind=counter"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Two hosts whose names differ only in characters a file name cannot hold get a part
/// each in a node split, not one part holding both.
#[test]
fn hosts_with_the_same_safe_name_get_their_own_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 26, 2, 4);
    for (db, host) in inputs.iter().zip(["gpu node", "gpu_node"]) {
        let conn = Connection::open(db).unwrap();
        let n = table(&conn, "rocpd_info_node");
        conn.execute(&format!("UPDATE \"{n}\" SET hostname = ?1"), [host])
            .unwrap();
    }
    let out = tmp.path().join("out");
    let mut args = vec![
        "convert",
        "-q",
        "-f",
        "csv",
        "--split-by",
        "node",
        "-d",
        out.to_str().unwrap(),
        "-i",
    ];
    let paths: Vec<String> = inputs
        .iter()
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    args.extend(paths.iter().map(String::as_str));
    let o = rocpd(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut parts: Vec<String> = files_in(&out)
        .iter()
        .filter_map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.strip_suffix("_kernel_trace.csv").map(String::from)
        })
        .collect();
    parts.sort();
    assert_eq!(parts.len(), 2, "{parts:?}");
    // The name a file can hold keeps its plain label; the other gets a hash.
    assert_eq!(parts[0], "out.host-gpu_node", "{parts:?}");
    assert!(parts[1].starts_with("out.host-gpu_node-"), "{parts:?}");
}

/// A run started with SIGHUP ignored (`nohup`) outlives its terminal: the hangup does not
/// stop it.
#[test]
fn a_run_under_nohup_ignores_the_hangup() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 31, 2, 600);
    let out = tmp.path().join("out");
    let mut child = Command::new("bash")
        .arg("-c")
        .arg("trap '' HUP; exec \"$0\" convert -q -f pftrace csv -d \"$1\" -i \"$2\" \"$3\"")
        .arg(env!("CARGO_BIN_EXE_rocpd"))
        .arg(&out)
        .arg(&inputs[0])
        .arg(&inputs[1])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let began = Instant::now();
    let writing = || {
        files_in(&out)
            .iter()
            .any(|p| p.file_name().unwrap().to_string_lossy().contains("partial"))
    };
    while !writing() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before it could be signalled"
        );
        assert!(began.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(out.join("out_results.pftrace").is_file());
}

/// A rocprofv3 JSON document whose one kernel symbol's name is `name`, with a kernel
/// dispatch of that symbol.
fn json_with_kernel_name(name: &str) -> String {
    format!(
        r#"{{"rocprofiler-sdk-tool":[{{"metadata":{{"pid":5,"node":{{"hostname":"h"}}}},
      "agents":[{{"id":{{"handle":9}},"type":2,"node_id":1,"logical_node_id":1}}],
      "strings":{{"buffer_records":[{{"kind":"NONE","operations":[]}}]}},
      "kernel_symbols":[{{"kernel_id":1,"kernel_name":"{name}"}}],
      "buffer_records":{{"kernel_dispatch":[
        {{"kind":0,"operation":0,"thread_id":5,"correlation_id":{{"internal":1,"external":0}},
          "start_timestamp":10,"end_timestamp":20,
          "dispatch_info":{{"agent_id":{{"handle":9}},"queue_id":{{"handle":3}},"kernel_id":1,"dispatch_id":1}}}}
      ]}}}}]}}"#
    )
}

#[test]
fn a_json_value_larger_than_the_bound_is_refused_with_its_place() {
    let tmp = tempfile::tempdir().unwrap();
    // 7 MiB: a long name, read (it is the kernel's name in the output).
    let long = "k".repeat(7 << 20);
    let ok = tmp.path().join("long_results.json");
    std::fs::write(&ok, json_with_kernel_name(&long)).unwrap();
    let out = tmp.path().join("ok");
    let o = csv_of(&ok, &out, &[]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let kernels = std::fs::read_to_string(out.join("out_kernel_trace.csv")).unwrap();
    assert!(
        kernels.contains(&long),
        "the long name is not in the output"
    );

    // 9 MiB: refused, naming the file, the byte and the record; nothing written.
    let huge = tmp.path().join("huge_results.json");
    std::fs::write(&huge, json_with_kernel_name(&"k".repeat(9 << 20))).unwrap();
    let out = tmp.path().join("refused");
    for extra in [&[][..], &["--skip-bad-rows"][..]] {
        let o = csv_of(&huge, &out, extra);
        refused(&o, "huge_results.json: byte offset ");
        refused(&o, "kernel_symbols[0]: a single value");
        refused(&o, "larger than 8 MiB");
        assert!(!out.exists(), "{:?}", files_in(&out));
    }
    let o = rocpd(&["info", "-i", huge.to_str().unwrap()]);
    refused(&o, "larger than 8 MiB");
}

/// Names from the inputs are printed so that they cannot drive the terminal or forge a
/// line: `info` escapes control characters and bidirectional overrides in commands,
/// hostnames and file names, and so do warnings about files a walk skipped.
#[test]
fn info_and_warnings_print_control_characters_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let dbs = generate(tmp.path(), 51, 1, 2);
    let c = rusqlite::Connection::open(&dbs[0]).unwrap();
    let table = table_of(&c, "rocpd_info_process");
    c.execute(
        &format!("UPDATE \"{table}\" SET command = ?1"),
        ["evil\u{1b}]0;TITLE\u{7}\u{1b}[2J\n  process 1 on fake forged\r\u{202e}x"],
    )
    .unwrap();
    drop(c);
    let o = rocpd(&["info", "-i", dbs[0].to_str().unwrap()]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        !out.contains(['\u{1b}', '\u{7}', '\r', '\u{202e}']),
        "{out:?}"
    );
    assert!(
        out.contains(
            "evil\\u{1b}]0;TITLE\\u{7}\\u{1b}[2J\\n  process 1 on fake forged\\r\\u{202e}x"
        ),
        "{out}"
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.trim_start().starts_with("process"))
            .count(),
        1,
        "{out}"
    );
    // A skipped file's name in a warning, and an error naming a file.
    let dir = tmp.path().join("walk");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&dbs[0], dir.join("ok.db")).unwrap();
    std::fs::write(dir.join("bad\u{1b}[31m_results.db"), b"").unwrap();
    let o = rocpd(&["info", "-i", dir.to_str().unwrap()]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("bad\\u{1b}[31m_results.db"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
    let o = rocpd(&[
        "info",
        "-i",
        dir.join("bad\u{1b}[31m_results.db").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), Some(1));
    assert!(!stderr(&o).contains('\u{1b}'), "{:?}", stderr(&o));
}

/// A JSON `true` or `false` where a time, id or handle belongs is refused at its place,
/// read directly or with `--skip-bad-rows` skipped as the bad record it is (D168).
#[test]
fn a_json_boolean_is_no_timestamp() {
    let tmp = tempfile::tempdir().unwrap();
    let good = json_with_kernel_name("k");
    for (from, to) in [
        ("\"start_timestamp\":10", "\"start_timestamp\":true"),
        ("\"dispatch_id\":1}", "\"dispatch_id\":false}"),
        (
            "\"queue_id\":{\"handle\":3}",
            "\"queue_id\":{\"handle\":true}",
        ),
    ] {
        assert!(good.contains(from), "{from}");
        let path = tmp.path().join("bool_results.json");
        std::fs::write(&path, good.replace(from, to)).unwrap();
        let out = tmp.path().join("refused");
        let o = csv_of(&path, &out, &[]);
        refused(&o, "bool_results.json");
        refused(&o, "buffer_records.kernel_dispatch[0]");
        refused(&o, "expected an integer, found ");
        assert!(!out.exists(), "{:?}", files_in(&out));
        let skipped = tmp.path().join("skipped");
        let o = rocpd(&[
            "convert",
            "-i",
            path.to_str().unwrap(),
            "-f",
            "csv",
            "-d",
            skipped.to_str().unwrap(),
            "--skip-bad-rows",
        ]);
        assert_eq!(code(&o), Some(0), "{}", stderr(&o));
        assert!(stderr(&o).contains("expected an integer"), "{}", stderr(&o));
        let kernels = std::fs::read_to_string(skipped.join("out_kernel_trace.csv"));
        assert!(
            kernels.map_or(true, |k| k.lines().count() <= 1),
            "the bad record was written"
        );
        std::fs::remove_dir_all(&skipped).unwrap();
    }
}
