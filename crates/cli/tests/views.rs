//! The views of a merged database, checked against the documented lists in
//! `formats/rocpd/README.md` (section 10): every view AMD's schema defines exists, with
//! its columns in order, every column can be selected, and each view holds the rows the
//! tables hold. Read with rusqlite and with Python's `sqlite3` module (another SQLite
//! and another client). The `pid`/`tid` columns show OS ids, tested on a database whose
//! row ids differ from them.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::*;
use rusqlite::Connection;

/// `(view, columns)` from the table between the `views:` markers of the format's README.
fn documented() -> Vec<(String, Vec<String>)> {
    let doc = include_str!("../../../formats/rocpd/README.md");
    let start = doc.find("<!-- views: begin -->").expect("begin marker");
    let end = doc.find("<!-- views: end -->").expect("end marker");
    doc[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let name = cells[0]
                .trim_start_matches("| ")
                .trim_matches('`')
                .to_string();
            let cols = cells[1]
                .split(", ")
                .map(|c| c.trim_matches('`').to_string())
                .collect();
            (name, cols)
        })
        .collect()
}

/// The table sets of a database: suffix → base names present.
fn sets(c: &Connection) -> Vec<String> {
    let mut st = c
        .prepare("SELECT substr(name, 16) FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd\\_metadata\\_%' ESCAPE '\\'")
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

fn one(c: &Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn strings(c: &Connection, sql: &str) -> BTreeSet<String> {
    let mut st = c.prepare(sql).unwrap();
    st.query_map([], |r| r.get::<_, Option<String>>(0))
        .unwrap()
        .filter_map(|r| r.unwrap())
        .collect()
}

/// Sums `sql` (with `{t}` for `rocpd_t_<suffix>`) over every table set of `c`.
fn per_set(c: &Connection, sql: &str) -> i64 {
    sets(c)
        .iter()
        .map(|s| {
            let mut q = sql.to_string();
            for &t in rocpd_schema::TABLES {
                q = q.replace(&format!("{{{t}}}"), &format!("\"{t}_{s}\""));
            }
            one(c, &q)
        })
        .sum()
}

/// The rows each view must hold, computed from the suffixed tables (never from a view).
fn expected_rows(c: &Connection) -> BTreeMap<&'static str, i64> {
    let n = |t: &str| per_set(c, &format!("SELECT COUNT(*) FROM {{{t}}}"));
    let regions = n("rocpd_region");
    let samples = n("rocpd_sample");
    let mut kernel_names = BTreeSet::new();
    let mut top_names = BTreeSet::new();
    for s in sets(c) {
        kernel_names.extend(strings(
            c,
            &format!(
                "SELECT COALESCE(NULLIF(S.display_name, ''), S.kernel_name) FROM \"rocpd_kernel_dispatch_{s}\" K \
                 LEFT JOIN \"rocpd_info_kernel_symbol_{s}\" S ON S.id = K.kernel_id"
            ),
        ));
        for t in ["rocpd_memory_copy", "rocpd_region"] {
            top_names.extend(strings(
                c,
                &format!("SELECT N.string FROM \"{t}_{s}\" X LEFT JOIN \"rocpd_string_{s}\" N ON N.id = X.name_id"),
            ));
        }
    }
    top_names.extend(kernel_names.iter().cloned());
    [
        ("code_objects", n("rocpd_info_code_object")),
        ("kernel_symbols", n("rocpd_info_kernel_symbol")),
        ("processes", n("rocpd_info_process")),
        ("threads", n("rocpd_info_thread")),
        ("regions", regions),
        (
            "region_args",
            per_set(
                c,
                "SELECT COUNT(*) FROM {rocpd_arg} A JOIN {rocpd_region} R ON R.event_id = A.event_id",
            ),
        ),
        ("samples", samples),
        ("sample_regions", samples),
        ("regions_and_samples", regions + samples),
        ("kernels", n("rocpd_kernel_dispatch")),
        ("pmc_info", n("rocpd_info_pmc")),
        ("pmc_events", n("rocpd_pmc_event")),
        ("events_args", n("rocpd_arg")),
        (
            "stream_args",
            per_set(c, "SELECT COUNT(*) FROM {rocpd_arg} WHERE name = 'stream'"),
        ),
        ("memory_copies", n("rocpd_memory_copy")),
        ("memory_allocations", n("rocpd_memory_allocate")),
        (
            "scratch_memory",
            per_set(c, "SELECT COUNT(*) FROM {rocpd_memory_allocate} WHERE level = 'SCRATCH'"),
        ),
        (
            "counters_collection",
            per_set(
                c,
                "SELECT COUNT(*) FROM (SELECT DISTINCT K.dispatch_id, K.agent_id, P.name \
                 FROM {rocpd_pmc_event} E JOIN {rocpd_kernel_dispatch} K ON K.event_id = E.event_id \
                 JOIN {rocpd_info_pmc} P ON P.id = E.pmc_id)",
            ),
        ),
        ("top_kernels", kernel_names.len() as i64),
        (
            "busy",
            per_set(
                c,
                "SELECT COUNT(DISTINCT a) FROM (SELECT agent_id AS a FROM {rocpd_kernel_dispatch} \
                 UNION ALL SELECT dst_agent_id FROM {rocpd_memory_copy}) WHERE a IS NOT NULL",
            ),
        ),
        ("top", top_names.len() as i64),
    ]
    .into_iter()
    .collect()
}

/// Renumbers the process and thread row ids of every set of `db` (and every reference to
/// them), so that they differ from the OS pid and tid; returns `(old thread id, new id)`
/// of one thread whose info row is then deleted.
fn renumber(db: &Path) -> (i64, i64) {
    let c = Connection::open(db).unwrap();
    // References are renumbered one table at a time, as a foreign-key check would not allow.
    c.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    let mut gone = (0, 0);
    for s in sets(&c) {
        let t = |b: &str| format!("\"{b}_{s}\"");
        let has = |b: &str, col: &str| -> bool {
            one(
                &c,
                &format!("SELECT COUNT(*) FROM pragma_table_info('{b}_{s}') WHERE name = '{col}'"),
            ) > 0
        };
        c.execute_batch(&format!(
            "UPDATE {} SET id = id + 1000;",
            t("rocpd_info_process")
        ))
        .unwrap();
        c.execute_batch(&format!(
            "UPDATE {} SET id = id + 100000;",
            t("rocpd_info_thread")
        ))
        .unwrap();
        for &b in rocpd_schema::TABLES {
            if b != "rocpd_info_process" && has(b, "pid") {
                c.execute_batch(&format!("UPDATE {} SET pid = pid + 1000;", t(b)))
                    .unwrap();
            }
            if b != "rocpd_info_thread" && has(b, "tid") {
                c.execute_batch(&format!("UPDATE {} SET tid = tid + 100000;", t(b)))
                    .unwrap();
            }
        }
        // One thread (not the main one) loses its info row.
        let (id, tid): (i64, i64) = c
            .query_row(
                &format!(
                    "SELECT T.id, T.tid FROM {} T JOIN {} R ON R.tid = T.id WHERE T.tid <> T.pid \
                     ORDER BY T.id LIMIT 1",
                    t("rocpd_info_thread"),
                    t("rocpd_region")
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        c.execute_batch(&format!(
            "DELETE FROM {} WHERE id = {id};",
            t("rocpd_info_thread")
        ))
        .unwrap();
        gone = (tid, id);
    }
    gone
}

fn merged(dir: &Path) -> (PathBuf, Vec<PathBuf>, (i64, i64)) {
    let ins = generate(&dir.join("in"), 71, 2, 6);
    let gone = renumber(&ins[1]);
    let out = dir.join("out");
    let mut args = vec!["merge", "-q", "-o", "m", "-d", out.to_str().unwrap(), "-i"];
    args.extend(ins.iter().map(|p| p.to_str().unwrap()));
    let o = rocpd(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    (out.join("m.db"), ins, gone)
}

/// A Python interpreter: `$ROCPD_PYTHON`, else `python3` if it runs.
fn python() -> Option<String> {
    let py = std::env::var("ROCPD_PYTHON").unwrap_or_else(|_| "python3".into());
    std::process::Command::new(&py)
        .arg("-c")
        .arg("import sqlite3")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| py)
}

const PY_CHECK: &str = r#"
import json, sqlite3, sys
spec = json.load(open(sys.argv[1]))
db = sqlite3.connect("file:%s?mode=ro" % spec["db"], uri=True)
for view, want in spec["views"].items():
    cur = db.execute("SELECT * FROM %s LIMIT 0" % view)
    names = [d[0] for d in cur.description]
    assert names == want["columns"], (view, names, want["columns"])
    cols = ", ".join('"%s"' % c for c in want["columns"])
    n = sum(1 for _ in db.execute("SELECT %s FROM %s" % (cols, view)))
    assert n == want["rows"], (view, n, want["rows"])
print("python sqlite3 %s: %d views, columns and rows as documented" % (sqlite3.sqlite_version, len(spec["views"])))
"#;

#[test]
fn every_documented_view_has_its_columns_in_order_and_the_rows_of_its_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, _, _) = merged(tmp.path());
    let c = Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let doc = documented();
    assert_eq!(
        doc.len(),
        21,
        "AMD's schema defines 21 analysis and summary views"
    );
    let names: Vec<&str> = doc.iter().map(|(v, _)| v.as_str()).collect();
    assert_eq!(
        names,
        rocpd::ANALYSIS_VIEWS,
        "the library's list, in the documented order"
    );
    // The views in the database are the union views and exactly the documented ones.
    let views = strings(&c, "SELECT name FROM sqlite_master WHERE type = 'view'");
    let mut want: BTreeSet<String> = doc.iter().map(|(v, _)| v.clone()).collect();
    want.extend(rocpd_schema::TABLES.iter().map(|t| t.to_string()));
    assert_eq!(views, want);
    let rows = expected_rows(&c);
    let mut spec = serde_json::Map::new();
    for (view, cols) in &doc {
        let st = c.prepare(&format!("SELECT * FROM {view} LIMIT 0")).unwrap();
        let names: Vec<String> = st.column_names().map(|s| s.to_string()).collect();
        assert_eq!(&names, cols, "columns of {view}");
        let list: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
        let mut st = c
            .prepare(&format!("SELECT {} FROM {view}", list.join(", ")))
            .unwrap();
        let mut it = st.query([]).unwrap();
        let mut n = 0;
        while let Some(r) = it.next().unwrap() {
            for i in 0..cols.len() {
                r.get_ref(i).unwrap();
            }
            n += 1;
        }
        assert_eq!(n, rows[view.as_str()], "rows of {view}");
        spec.insert(
            view.clone(),
            serde_json::json!({"columns": cols, "rows": n}),
        );
    }
    // Non-trivial: the generated inputs hold something for every view.
    for (view, n) in &rows {
        assert!(*n > 0, "{view} is empty: the test would not test it");
    }
    // Union views: the table's columns and all its rows.
    for &t in rocpd_schema::TABLES {
        let st = c.prepare(&format!("SELECT * FROM {t} LIMIT 0")).unwrap();
        let names: Vec<String> = st.column_names().map(|s| s.to_string()).collect();
        let sets = sets(&c);
        let first = Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap()
            .prepare(&format!("SELECT * FROM \"{t}_{}\" LIMIT 0", sets[0]))
            .unwrap()
            .column_names()
            .map(|s| s.to_string())
            .collect::<Vec<_>>();
        assert_eq!(names, first, "columns of {t}");
        assert_eq!(
            one(&c, &format!("SELECT COUNT(*) FROM {t}")),
            per_set(&c, &format!("SELECT COUNT(*) FROM {{{t}}}")),
            "rows of {t}"
        );
    }
    // The same through Python's sqlite3 module, when there is one (CI makes sure).
    match python() {
        Some(py) => {
            let spec_path = tmp.path().join("views.json");
            let json = serde_json::json!({"db": db.to_str().unwrap(), "views": spec});
            std::fs::write(&spec_path, json.to_string()).unwrap();
            let o = std::process::Command::new(&py)
                .args(["-c", PY_CHECK])
                .arg(&spec_path)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            eprintln!("{}", String::from_utf8_lossy(&o.stdout).trim());
        }
        None if std::env::var_os("ROCPD_REQUIRE_PYTHON").is_some() => {
            panic!("ROCPD_REQUIRE_PYTHON is set but no Python with sqlite3 runs")
        }
        None => {
            eprintln!("note: no python3 with sqlite3; the Python check of the views is skipped")
        }
    }
}

#[test]
fn pid_and_tid_are_the_os_ids_and_a_missing_thread_row_shows_its_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, _, (gone_tid, gone_ref)) = merged(tmp.path());
    let c = Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let os_pids: BTreeSet<String> = strings(&c, "SELECT CAST(pid AS TEXT) FROM rocpd_info_process");
    let os_tids: BTreeSet<String> = strings(&c, "SELECT CAST(tid AS TEXT) FROM rocpd_info_thread");
    assert!(!os_tids.contains(&gone_tid.to_string()));
    for (view, cols) in documented() {
        for col in ["pid", "tid"] {
            if !cols.iter().any(|c| c == col) {
                continue;
            }
            let got = strings(
                &c,
                &format!("SELECT DISTINCT CAST({col} AS TEXT) FROM {view} WHERE {col} IS NOT NULL"),
            );
            let allowed = if col == "pid" {
                os_pids.clone()
            } else {
                let mut a = os_tids.clone();
                a.insert(gone_ref.to_string());
                a
            };
            assert!(
                got.is_subset(&allowed),
                "{view}.{col}: {:?} are not OS ids",
                got.difference(&allowed).collect::<Vec<_>>()
            );
        }
    }
    // The renumbered database's processes appear with their OS pid in the events.
    let renumbered: BTreeSet<String> = strings(
        &c,
        "SELECT CAST(pid AS TEXT) FROM rocpd_info_process WHERE id <> pid",
    );
    // One database is renumbered here; with ROCPD_TEST_ROW_IDS every one already is.
    assert!(!renumbered.is_empty());
    let kernel_pids = strings(&c, "SELECT DISTINCT CAST(pid AS TEXT) FROM kernels");
    assert!(renumbered.is_subset(&kernel_pids), "{kernel_pids:?}");
    // Regions of the thread whose info row is gone keep the reference.
    assert!(
        one(
            &c,
            &format!("SELECT COUNT(*) FROM regions WHERE tid = {gone_ref}")
        ) > 0
    );
    // threads: the OS tid, the OS pid of its process.
    assert_eq!(
        one(
            &c,
            "SELECT COUNT(*) FROM threads T JOIN rocpd_info_process P ON P.guid = T.guid WHERE T.pid <> P.pid"
        ),
        0
    );
}

#[test]
fn busy_has_one_row_per_agent_and_process_and_sums_its_work() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, _, _) = merged(tmp.path());
    let c = Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let gpu = one(
        &c,
        "SELECT SUM(d) FROM (SELECT \"end\" - start AS d FROM rocpd_kernel_dispatch \
         UNION ALL SELECT \"end\" - start FROM rocpd_memory_copy WHERE dst_agent_id IS NOT NULL)",
    );
    assert_eq!(one(&c, "SELECT SUM(GpuTime) FROM busy"), gpu);
    let wall = one(
        &c,
        "SELECT MAX(e) - MIN(s) FROM (SELECT start AS s, \"end\" AS e FROM rocpd_kernel_dispatch \
         UNION ALL SELECT start, \"end\" FROM rocpd_memory_copy)",
    );
    assert_eq!(
        one(
            &c,
            &format!("SELECT COUNT(*) FROM busy WHERE WallTime <> {wall}")
        ),
        0
    );
    // One row per (process, agent): the multiset of (agent, GPU time) of the tables.
    let mut want: Vec<(i64, i64)> = Vec::new();
    for s in sets(&c) {
        let mut st = c
            .prepare(&format!(
                "SELECT a, SUM(d) FROM (SELECT agent_id AS a, \"end\" - start AS d FROM \"rocpd_kernel_dispatch_{s}\" \
                 UNION ALL SELECT dst_agent_id, \"end\" - start FROM \"rocpd_memory_copy_{s}\") \
                 WHERE a IS NOT NULL GROUP BY a"
            ))
            .unwrap();
        want.extend(
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(|r| r.unwrap()),
        );
    }
    let mut st = c.prepare("SELECT agent_id, GpuTime FROM busy").unwrap();
    let mut got: Vec<(i64, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert!(got.len() > sets(&c).len(), "several agents per process");
    assert_eq!(
        one(
            &c,
            "SELECT COUNT(*) FROM busy WHERE abs(Busy - GpuTime * 1.0 / WallTime) > 1e-12 OR type IS NULL"
        ),
        0
    );
}
