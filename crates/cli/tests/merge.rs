//! Merged RocPD output: lossless table by table, readable by our own reader and through
//! the analysis views, selective with filters and windows, refused for duplicates.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use rusqlite::types::Value;

fn merge(inputs: &[PathBuf], dir: &Path, extra: &[&str]) -> PathBuf {
    let mut args: Vec<String> = vec![
        "merge".into(),
        "-q".into(),
        "-d".into(),
        dir.display().to_string(),
        "-i".into(),
    ];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rocpd(&refs);
    assert!(o.status.success(), "{}", stderr(&o));
    dir.join("merged.db")
}

fn rows(c: &rusqlite::Connection, table: &str) -> Vec<Vec<Value>> {
    let mut st = c
        .prepare(&format!("SELECT * FROM \"{table}\" ORDER BY rowid"))
        .unwrap();
    let n = st.column_count();
    st.query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

fn tables(c: &rusqlite::Connection) -> Vec<String> {
    let mut st = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd\\_%' ESCAPE '\\' ORDER BY name")
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

fn count(c: &rusqlite::Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn merging_is_lossless_table_by_table_and_the_views_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 41, 3, 8);
    let out = merge(&ins, &tmp.path().join("out"), &[]);
    let m = rusqlite::Connection::open(&out).unwrap();
    let mut copied = 0;
    for p in &ins {
        let c = rusqlite::Connection::open(p).unwrap();
        for t in tables(&c) {
            assert_eq!(rows(&c, &t), rows(&m, &t), "{t} differs");
            copied += 1;
        }
    }
    assert_eq!(copied, tables(&m).len());
    // The union and analysis views AMD's tools query.
    let kd = sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_kernel_dispatch}") as i64;
    assert_eq!(count(&m, "SELECT COUNT(*) FROM rocpd_kernel_dispatch"), kd);
    assert_eq!(count(&m, "SELECT COUNT(*) FROM kernels"), kd);
    assert_eq!(
        count(&m, "SELECT COUNT(*) FROM kernels WHERE name IS NULL"),
        0
    );
    let regions = sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_region}") as i64;
    let samples = sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_sample}") as i64;
    assert_eq!(count(&m, "SELECT COUNT(*) FROM regions"), regions);
    assert_eq!(
        count(&m, "SELECT COUNT(*) FROM regions_and_samples"),
        regions + samples
    );
    assert_eq!(
        count(&m, "SELECT COUNT(*) FROM memory_copies"),
        sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_memory_copy}") as i64
    );
    assert_eq!(
        count(&m, "SELECT COUNT(*) FROM memory_allocations"),
        sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_memory_allocate}") as i64
    );
    assert_eq!(count(&m, "SELECT COUNT(*) FROM processes"), 3);
    assert_eq!(count(&m, "SELECT SUM(total_calls) FROM top_kernels"), kd);
    assert!(count(&m, "SELECT COUNT(*) FROM busy") > 0);
    for v in [
        "threads",
        "samples",
        "scratch_memory",
        "pmc_events",
        "pmc_info",
        "top",
        "kernel_symbols",
    ] {
        count(&m, &format!("SELECT COUNT(*) FROM {v}"));
    }
}

#[test]
fn a_merged_database_converts_like_its_inputs_and_merges_again_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 42, 2, 8);
    let merged = merge(&ins, &tmp.path().join("m"), &[]);
    let direct = decode(&convert(&ins, &tmp.path().join("a"), &[]));
    let via = decode(&convert(
        std::slice::from_ref(&merged),
        &tmp.path().join("b"),
        &[],
    ));
    assert_eq!(direct.slices_by_category, via.slices_by_category);
    assert_eq!(direct.instants_by_category, via.instants_by_category);
    assert_eq!(direct.flows, via.flows);
    assert_eq!(direct.events, via.events);
    let again = merge(std::slice::from_ref(&merged), &tmp.path().join("m2"), &[]);
    let (a, b) = (
        rusqlite::Connection::open(&merged).unwrap(),
        rusqlite::Connection::open(&again).unwrap(),
    );
    for t in tables(&a) {
        assert_eq!(rows(&a, &t), rows(&b, &t));
    }
}

#[test]
fn filtered_and_windowed_merges_keep_only_the_selected_rows_and_what_they_need() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 43, 2, 10);
    let out = merge(
        &ins,
        &tmp.path().join("w"),
        &["--start", "25%", "--end", "75%", "--inclusive", "false"],
    );
    let m = rusqlite::Connection::open(&out).unwrap();
    let (lo, hi): (i64, i64) = {
        // The inputs' span, as the window resolves it.
        let mut lo = i64::MAX;
        let mut hi = i64::MIN;
        for p in &ins {
            let c = rusqlite::Connection::open(p).unwrap();
            for t in tables(&c) {
                let (a, b) = match t.as_str() {
                    x if x.starts_with("rocpd_sample_") => ("timestamp", "timestamp"),
                    x if [
                        "rocpd_region_",
                        "rocpd_kernel_dispatch_",
                        "rocpd_memory_copy_",
                        "rocpd_memory_allocate_",
                    ]
                    .iter()
                    .any(|p| x.starts_with(p)) =>
                    {
                        ("start", "\"end\"")
                    }
                    _ => continue,
                };
                let (x, y): (i64, i64) = c
                    .query_row(
                        &format!("SELECT MIN({a}), MAX({b}) FROM \"{t}\""),
                        [],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .unwrap();
                lo = lo.min(x);
                hi = hi.max(y);
            }
        }
        (lo, hi)
    };
    let (s, e) = (
        lo + ((hi - lo) as f64 * 0.25).round() as i64,
        lo + ((hi - lo) as f64 * 0.75).round() as i64,
    );
    let want = sql_count(
        &ins,
        &format!(
            "SELECT COUNT(*) FROM {{rocpd_kernel_dispatch}} WHERE start <= {e} AND \"end\" >= {s}"
        ),
    ) as i64;
    assert_eq!(
        count(&m, "SELECT COUNT(*) FROM rocpd_kernel_dispatch"),
        want
    );
    assert!(want < sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_kernel_dispatch}") as i64);
    // Every kept row's event is there, and no other event.
    assert_eq!(
        count(&m, "SELECT COUNT(*) FROM kernels WHERE stack_id IS NULL"),
        0
    );
    let referenced = count(
        &m,
        "SELECT COUNT(*) FROM (SELECT guid, event_id FROM rocpd_region UNION SELECT guid, event_id FROM rocpd_sample \
         UNION SELECT guid, event_id FROM rocpd_kernel_dispatch UNION SELECT guid, event_id FROM rocpd_memory_copy \
         UNION SELECT guid, event_id FROM rocpd_memory_allocate UNION SELECT guid, event_id FROM rocpd_pmc_event)",
    );
    assert_eq!(count(&m, "SELECT COUNT(*) FROM rocpd_event"), referenced);
    // A filter: one process only.
    let out = merge(&ins, &tmp.path().join("f"), &["--include", "pid=4037"]);
    let m = rusqlite::Connection::open(&out).unwrap();
    assert_eq!(
        count(&m, "SELECT COUNT(DISTINCT pid) FROM rocpd_kernel_dispatch"),
        1
    );
    assert_eq!(
        count(&m, "SELECT COUNT(*) FROM rocpd_kernel_dispatch"),
        sql_count(
            &ins,
            // `pid` references the process row; 4037 is the OS pid.
            "SELECT COUNT(*) FROM {rocpd_kernel_dispatch} \
             WHERE pid IN (SELECT id FROM {rocpd_info_process} WHERE pid = 4037)"
        ) as i64
    );
}

#[test]
fn rocpd_output_splits_by_process_and_duplicates_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 44, 2, 5);
    let out = tmp.path().join("split");
    let mut args: Vec<String> = vec![
        "convert".into(),
        "-q".into(),
        "-f".into(),
        "rocpd".into(),
        "--split-by".into(),
        "process".into(),
        "-d".into(),
        out.display().to_string(),
        "-i".into(),
    ];
    args.extend(ins.iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert!(rocpd(&refs).status.success());
    let dbs: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
        .collect();
    assert_eq!(dbs.len(), 2);
    for db in &dbs {
        let m = rusqlite::Connection::open(db).unwrap();
        assert_eq!(count(&m, "SELECT COUNT(DISTINCT pid) FROM rocpd_region"), 1);
        // Only its own process's table set and info rows.
        assert_eq!(count(&m, "SELECT COUNT(*) FROM rocpd_info_process"), 1);
        assert_eq!(
            count(&m, "SELECT COUNT(DISTINCT guid) FROM rocpd_region"),
            1
        );
    }
    // So the parts merge back: every region once.
    let back = tmp.path().join("back");
    let o = rocpd(&[
        "merge",
        "-q",
        "-d",
        back.to_str().unwrap(),
        "-o",
        "b",
        "-i",
        dbs[0].to_str().unwrap(),
        dbs[1].to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let merged = std::fs::read_dir(&back)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "db"))
        .unwrap();
    let m = rusqlite::Connection::open(&merged).unwrap();
    assert_eq!(
        count(&m, "SELECT COUNT(*) FROM rocpd_region"),
        sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_region}") as i64
    );
    let copy = tmp.path().join("copy.db");
    std::fs::copy(&ins[0], &copy).unwrap();
    let dir = tmp.path().join("dup");
    let o = rocpd(&[
        "merge",
        "-d",
        dir.to_str().unwrap(),
        "-i",
        ins[0].to_str().unwrap(),
        copy.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("same process"), "{}", stderr(&o));
    assert!(!dir.exists() || std::fs::read_dir(&dir).unwrap().next().is_none());
}

/// A merge of more processes than one SQLite compound SELECT may hold terms (500) still
/// has its union and analysis views (D55); a directory input keeps the argument list short.
#[test]
fn more_than_five_hundred_processes_merge_with_their_views() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    let cfg = rocpd_gen::GenConfig {
        seed: 9,
        nodes: 1,
        processes: 501,
        gpus_per_node: 1,
        threads_per_process: 2,
        iterations: 1,
        odd_names: false,
        row_ids: false,
    };
    let ins = rocpd_gen::generate(&cfg, &dir).unwrap();
    let out = merge(&[dir], &tmp.path().join("m"), &[]);
    let m = rusqlite::Connection::open_with_flags(&out, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    assert_eq!(
        count(&m, "SELECT COUNT(*) FROM rocpd_region"),
        sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_region}") as i64
    );
    assert_eq!(count(&m, "SELECT COUNT(DISTINCT guid) FROM kernels"), 501);
    assert_eq!(count(&m, "SELECT COUNT(*) FROM rocpd_info_process"), 501);
}

/// A merged database holds one table set per process: on more threads than inputs its
/// streams are split over forks (D124), across its table sets, and the Perfetto file is
/// the same as on one thread.
#[test]
fn a_merged_database_converts_the_same_on_any_number_of_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 43, 3, 6);
    let merged = merge(&ins, &tmp.path().join("m"), &[]);
    let trace = |threads: &str| {
        pftrace_on_threads(&merged, &tmp.path().join(format!("t{threads}")), threads)
    };
    let one = trace("1");
    assert!(one.len() > 10_000);
    for threads in ["2", "5", "16"] {
        assert!(trace(threads) == one, "threads {threads}");
    }
}

/// The selective copy (a filter) takes what the whole copy takes: a database without an
/// event table (its arguments kept by the kept rows' events), and a table with a
/// generated column of the input's own.
#[test]
fn a_selective_copy_takes_databases_without_events_and_generated_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 27, 2, 4);
    let name = |c: &rusqlite::Connection, base: &str| -> String {
        c.query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?1 || '\\_%' ESCAPE '\\' ORDER BY length(name) LIMIT 1",
            [base],
            |r| r.get(0),
        )
        .unwrap()
    };
    {
        let c = rusqlite::Connection::open(&inputs[0]).unwrap();
        let e = name(&c, "rocpd_event");
        c.execute_batch(&format!(
            "PRAGMA foreign_keys = OFF; DROP VIEW IF EXISTS rocpd_event; DROP TABLE \"{e}\";"
        ))
        .unwrap();
        let c = rusqlite::Connection::open(&inputs[1]).unwrap();
        let r = name(&c, "rocpd_region");
        c.execute_batch(&format!(
            "ALTER TABLE \"{r}\" ADD COLUMN dur INTEGER GENERATED ALWAYS AS (\"end\" - start) VIRTUAL"
        ))
        .unwrap();
    }
    for (n, input) in inputs.iter().enumerate() {
        let out = tmp.path().join(format!("out{n}"));
        let merged = merge(
            std::slice::from_ref(input),
            &out,
            &["--include", "kind=api,kernel"],
        );
        let c = rusqlite::Connection::open(&merged).unwrap();
        let r = name(&c, "rocpd_region");
        let regions: i64 = c
            .query_row(&format!("SELECT COUNT(*) FROM \"{r}\""), [], |x| x.get(0))
            .unwrap();
        assert!(regions > 0, "input {n}: regions copied");
        if n == 1 {
            let bad: i64 = c
                .query_row(
                    &format!("SELECT COUNT(*) FROM \"{r}\" WHERE dur != \"end\" - start"),
                    [],
                    |x| x.get(0),
                )
                .unwrap();
            assert_eq!(bad, 0, "the generated column is kept as defined");
        }
    }
}

/// A copy that cannot write (a file size limit here, a full disk alike) names the output,
/// not the input it was reading, and leaves nothing.
#[test]
fn a_failed_write_names_the_output() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 28, 1, 20);
    let out = tmp.path().join("out");
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 64; exec \"$0\" convert -q -f rocpd --include kind=api,kernel -d \"$1\" -i \"$2\"")
        .arg(env!("CARGO_BIN_EXE_rocpd"))
        .arg(&out)
        .arg(&inputs[0])
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains(&out.display().to_string()), "{e}");
    assert!(!e.contains(&inputs[0].display().to_string()), "{e}");
    let left: Vec<_> = std::fs::read_dir(&out)
        .map(|r| r.count())
        .into_iter()
        .collect();
    assert!(left.iter().all(|&n| n == 0), "{left:?}");
}
