//! `rocpd summary`: totals per name equal plain SQL on the inputs, per rank and after
//! filters and windows; rocpd's column names, view names and file names; NULL where AMD's
//! SQL gives NULL; full precision in CSV and JSON; the domain summary and
//! `--region-categories`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;

fn summary_json(inputs: &[PathBuf], dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<String> = vec![
        "summary".into(),
        "-q".into(),
        "-f".into(),
        "json".into(),
        "-d".into(),
        dir.display().to_string(),
        "-i".into(),
    ];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rocpd(&refs);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

/// The rows of the whole-run view `name`: (pid, name) → (calls, total ns).
fn view(v: &serde_json::Value, name: &str) -> BTreeMap<(Option<i64>, String), (u64, i64)> {
    view_of(v, name, false)
}

/// The rows of view `name`, whole-run or per rank.
fn view_of(
    v: &serde_json::Value,
    name: &str,
    by_rank: bool,
) -> BTreeMap<(Option<i64>, String), (u64, i64)> {
    v["views"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name && x["by_rank"] == by_rank)
        .map(|x| {
            x["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        (r["pid"].as_i64(), r["name"].as_str().unwrap().to_string()),
                        (
                            r["calls"].as_u64().unwrap(),
                            r["total_ns"].as_i64().unwrap(),
                        ),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Per kernel name (and pid with `by_pid`): (calls, total ns), by SQL on the inputs.
fn sql_kernels(
    inputs: &[PathBuf],
    by_pid: bool,
    cond: &str,
) -> BTreeMap<(Option<i64>, String), (u64, i64)> {
    let mut out: BTreeMap<(Option<i64>, String), (u64, i64)> = BTreeMap::new();
    for p in inputs {
        let c = rusqlite::Connection::open(p).unwrap();
        let t = |base: &str| -> String {
            c.query_row(&format!("SELECT name FROM sqlite_master WHERE name LIKE '{base}\\_%' ESCAPE '\\' AND type = 'table'"), [], |r| r.get(0))
                .unwrap()
        };
        let sql = format!(
            // `K.pid` references the process row; `P.pid` is the OS pid.
            "SELECT P.pid, COALESCE(NULLIF(S.display_name, ''), S.kernel_name, ''), COUNT(*), SUM(K.\"end\" - K.start) \
             FROM \"{}\" K LEFT JOIN \"{}\" S ON S.id = K.kernel_id \
             JOIN \"{}\" P ON P.id = K.pid WHERE {cond} GROUP BY 1, 2",
            t("rocpd_kernel_dispatch"),
            t("rocpd_info_kernel_symbol"),
            t("rocpd_info_process")
        );
        let mut st = c.prepare(&sql).unwrap();
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            })
            .unwrap();
        for row in rows {
            let (pid, name, n, total) = row.unwrap();
            let e = out.entry((by_pid.then_some(pid), name)).or_default();
            e.0 += n as u64;
            e.1 += total;
        }
    }
    out
}

#[test]
fn kernel_totals_equal_sql_overall_and_per_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 31, 3, 10);
    let v = summary_json(&ins, &tmp.path().join("a"), &[]);
    assert_eq!(view(&v, "KERNELS"), sql_kernels(&ins, false, "1"));
    let v = summary_json(&ins, &tmp.path().join("b"), &["--by-rank"]);
    // As AMD's: the whole-run views, then the same views per rank.
    assert_eq!(view(&v, "KERNELS"), sql_kernels(&ins, false, "1"));
    assert_eq!(view_of(&v, "KERNELS", true), sql_kernels(&ins, true, "1"));
    let copies: u64 = view_of(&v, "MEMORY_COPIES", true)
        .values()
        .map(|x| x.0)
        .sum();
    assert_eq!(
        copies,
        sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_memory_copy}")
    );
}

#[test]
fn summaries_follow_filters_and_windows() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 32, 2, 10);
    let v = summary_json(&ins, &tmp.path().join("a"), &["--include", "pid=4037"]);
    assert_eq!(
        view(&v, "KERNELS"),
        sql_kernels(&ins, false, "P.pid = 4037")
    );
    assert!(view(&v, "KERNELS").len() > 1);
    let v = summary_json(
        &ins,
        &tmp.path().join("b"),
        &["--exclude", "category=hsa_api"],
    );
    assert!(view(&v, "HSA").is_empty() && !view(&v, "HIP").is_empty());
}

#[test]
fn csv_uses_rocpd_column_names_and_console_prints_every_view() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 33, 1, 5);
    let out = tmp.path().join("csv");
    let mut args = vec![
        "summary",
        "-q",
        "-f",
        "csv",
        "console",
        "-o",
        "run",
        "-d",
        out.to_str().unwrap(),
        "-i",
    ];
    let p = ins[0].display().to_string();
    args.push(&p);
    let o = rocpd(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(out.join("run_kernels_summary.csv")).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        "Name,Calls,DURATION (nsec),AVERAGE (nsec),PERCENT (INC),MIN (nsec),MAX (nsec),STD_DEV"
    );
    let console = String::from_utf8(o.stdout).unwrap();
    for v in [
        "KERNELS_SUMMARY:",
        "HIP_SUMMARY:",
        "MEMORY_COPIES_SUMMARY:",
        "MARKERS_SUMMARY:",
    ] {
        assert!(console.contains(v), "{v} missing");
    }
}

/// The escaping the report must apply, written out here independently of the renderer.
fn html_escaped(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&#39;".to_string(),
            '\n' => "&#10;".to_string(),
            '\r' => "&#13;".to_string(),
            c if c.is_control() => " ".to_string(),
            c => c.to_string(),
        })
        .collect()
}

#[test]
fn the_html_report_holds_every_view_with_the_json_numbers_and_escaped_names() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 13, 3, 12);
    let out = tmp.path().join("out");
    let mut args = vec![
        "summary".to_string(),
        "-q".into(),
        "--summary-by-rank".into(),
    ];
    args.extend(["-f", "html", "json", "-o", "r", "-d"].map(String::from));
    args.push(out.display().to_string());
    args.push("-i".into());
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rocpd(&refs);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(out.join("r_summary.html")).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("r_summary.json")).unwrap()).unwrap();
    // Self-contained: nothing fetched from anywhere.
    for bad in ["http://", "https://", "src=", "@import", "<link"] {
        assert!(!html.contains(bad), "the page refers to {bad}");
    }
    assert_eq!(html.matches("<script>").count(), 1);
    assert!(html.contains("id=\"utilisation\"") && html.contains("id=\"ranks\""));
    assert!(html.contains("· GPU "), "no GPU timeline");
    let mut odd = 0;
    for v in json["views"].as_array().unwrap() {
        let name = format!(
            "{}_SUMMARY{}",
            v["name"].as_str().unwrap(),
            if v["by_rank"] == true { "_BY_RANK" } else { "" }
        );
        let at = html
            .find(&format!("<section class=\"view\" id=\"view-{name}\">"))
            .unwrap_or_else(|| panic!("view {name} missing"));
        let section = &html[at..at + html[at..].find("</section>").unwrap()];
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(section.matches("<tr><td").count(), rows.len(), "{name}");
        for r in rows {
            let total = r["total_ns"].as_i64().unwrap();
            assert!(
                section.contains(&format!("data-v=\"{total}\" class=\"total\">{total}<")),
                "{name}: total {total} missing"
            );
            let n = r["name"].as_str().unwrap();
            if n.chars().count() <= 64 {
                assert!(
                    section.contains(&format!("title=\"{}\"", html_escaped(n))),
                    "{name}: {n:?} not shown escaped"
                );
            }
            if n.contains(['<', '>', '&', '"']) {
                odd += 1;
                assert!(!section.contains(&format!(">{n}<")), "{n:?} unescaped");
            }
        }
    }
    assert!(odd > 0, "the generated names hold no character to escape");
}

/// Runs `rocpd summary -q -d <dir> <args> -i <inputs>`, which must succeed.
fn summary_run(inputs: &[PathBuf], dir: &Path, args: &[&str]) {
    let mut all: Vec<String> = vec!["summary".into(), "-q".into(), "-d".into()];
    all.push(dir.display().to_string());
    all.extend(args.iter().map(|s| s.to_string()));
    all.push("-i".into());
    all.extend(inputs.iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let o = rocpd(&refs);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A CSV file as (header, rows of fields); a plain split, as the test inputs hold no
/// comma inside a name.
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut lines = text.lines();
    let split = |l: &str| l.split(',').map(str::to_string).collect::<Vec<_>>();
    let header = split(lines.next().unwrap());
    (header, lines.map(split).collect())
}

/// The views of a summary JSON: (name, by_rank) → rows.
fn views(v: &serde_json::Value) -> BTreeMap<(String, bool), Vec<serde_json::Value>> {
    v["views"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                (
                    x["name"].as_str().unwrap().to_string(),
                    x["by_rank"].as_bool().unwrap(),
                ),
                x["rows"].as_array().unwrap().clone(),
            )
        })
        .collect()
}

/// Writes a rocprofv3 API trace CSV (`<pid>_<kind>_api_trace.csv`) with `rows`
/// (`"DOMAIN","function",pid,tid,correlation id,start,end`).
fn api_trace(path: PathBuf, rows: &[&str]) -> PathBuf {
    let mut text = String::from(
        "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n",
    );
    for r in rows {
        text.push_str(r);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// A small rocprofv3 run written by hand: HSA calls (one called once, one whose average
/// is not a 3-decimal number) and ROCTx marks, which are instants (a view whose total is 0).
fn hand_made_run(dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let hsa = api_trace(
        dir.join("7_hsa_api_trace.csv"),
        &[
            "\"HSA_CORE_API\",\"hsa_init\",7,7,1,1000,1500",
            "\"HSA_CORE_API\",\"hsa_agent_get_info\",7,7,2,2000,2003",
            "\"HSA_CORE_API\",\"hsa_agent_get_info\",7,7,3,3000,3004",
            "\"HSA_CORE_API\",\"hsa_agent_get_info\",7,7,4,4000,4004",
        ],
    );
    let marks = api_trace(
        dir.join("7_marker_api_trace.csv"),
        &[
            "\"MARKER_CORE_API\",\"start\",7,7,5,1100,1100",
            "\"MARKER_CORE_API\",\"tick\",7,7,6,2100,2100",
            "\"MARKER_CORE_API\",\"tick\",7,7,7,3100,3100",
        ],
    );
    vec![hsa, marks]
}

#[test]
fn null_statistics_are_empty_in_csv_and_null_in_json_and_averages_are_full_precision() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = hand_made_run(&tmp.path().join("in"));
    let out = tmp.path().join("out");
    summary_run(&ins, &out, &["-f", "csv", "json", "console", "-o", "r"]);
    // CSV: one file per view, named as AMD's; NULL is an empty field.
    let (header, rows) = read_csv(&out.join("r_hsa_summary.csv"));
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let row = |name: &str| rows.iter().find(|r| r[0] == name).unwrap().clone();
    assert_eq!(
        row("hsa_init")[col("STD_DEV")],
        "",
        "one call: no deviation"
    );
    assert_eq!(row("hsa_init")[col("AVERAGE (nsec)")], "500.0");
    let avg = &row("hsa_agent_get_info")[col("AVERAGE (nsec)")];
    assert_eq!(avg.parse::<f64>().unwrap(), 11.0 / 3.0);
    assert!(avg.len() > "3.667".len(), "rounded: {avg}");
    let share = row("hsa_init")[col("PERCENT (INC)")]
        .parse::<f64>()
        .unwrap();
    assert_eq!(share, 500.0 / 511.0 * 100.0);
    let (_, marks) = read_csv(&out.join("r_markers_summary.csv"));
    assert_eq!(marks.len(), 2);
    for m in &marks {
        assert_eq!(m[col("PERCENT (INC)")], "", "a view with total 0: no share");
        assert_eq!(m[col("DURATION (nsec)")], "0");
    }
    let tick = marks.iter().find(|r| r[0] == "tick").unwrap();
    assert_eq!(tick[col("STD_DEV")], "0.0", "two equal calls deviate by 0");
    // JSON: null.
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("r_summary.json")).unwrap()).unwrap();
    let all = views(&json);
    let hsa = &all[&("HSA".to_string(), false)];
    let init = hsa.iter().find(|r| r["name"] == "hsa_init").unwrap();
    assert!(init["stddev_ns"].is_null() && init["percent"].is_number());
    let info = hsa
        .iter()
        .find(|r| r["name"] == "hsa_agent_get_info")
        .unwrap();
    let avg = info["average_ns"].as_f64().unwrap();
    assert!((avg - 11.0 / 3.0).abs() < 1e-12, "{avg}");
    for m in &all[&("MARKERS".to_string(), false)] {
        assert!(m["percent"].is_null(), "{m}");
    }
    // The console shows a dash for a missing value and rounds.
    let o = rocpd(&[
        "summary",
        "-q",
        "-i",
        ins[0].to_str().unwrap(),
        ins[1].to_str().unwrap(),
    ]);
    let text = String::from_utf8(o.stdout).unwrap();
    let init_line: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("hsa_init"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(init_line.last(), Some(&"-"), "{text}");
    assert!(text.contains("3.667"), "{text}");
}

#[test]
fn allocations_are_named_by_their_type_and_scratch_counts_in_both_views() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 34, 2, 6);
    let v = summary_json(&ins, &tmp.path().join("a"), &[]);
    let by_type = |cond: &str| -> BTreeMap<(Option<i64>, String), (u64, i64)> {
        let mut m = BTreeMap::new();
        for t in ["ALLOC", "FREE", "REALLOC", "RECLAIM"] {
            let q = |what: &str| {
                sql_count(
                    &ins,
                    &format!("SELECT {what} FROM {{rocpd_memory_allocate}} WHERE type = '{t}' AND {cond}"),
                )
            };
            let n = q("COUNT(*)");
            if n > 0 {
                let total = q("COALESCE(SUM(\"end\" - start), 0)");
                m.insert((None, t.to_string()), (n, total as i64));
            }
        }
        m
    };
    let alloc = view(&v, "MEMORY_ALLOCATIONS");
    assert!(!alloc.is_empty(), "the generated run has allocations");
    assert_eq!(alloc, by_type("1"));
    assert_eq!(view(&v, "SCRATCH_MEMORY"), by_type("level = 'SCRATCH'"));
    // rocprofv3 CSV input: the operation names map back to the types.
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rocprofv3-csv-docs");
    let csv_ins = vec![
        docs.join("memory_allocation_trace.csv"),
        docs.join("scratch_memory_trace.csv"),
    ];
    let v = summary_json(&csv_ins, &tmp.path().join("b"), &[]);
    let calls = |view_name: &str| -> Vec<(String, u64)> {
        view(&v, view_name)
            .into_iter()
            .map(|(k, x)| (k.1, x.0))
            .collect()
    };
    // The fixtures: 2 allocations and 2 frees, 2 scratch allocations.
    let n = |s: &str, c: u64| (s.to_string(), c);
    assert_eq!(calls("MEMORY_ALLOCATIONS"), [n("ALLOC", 4), n("FREE", 2)]);
    assert_eq!(calls("SCRATCH_MEMORY"), [n("ALLOC", 2)]);
}

#[test]
fn the_domain_summary_has_one_row_per_view_equal_to_its_totals() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 35, 3, 8);
    let out = tmp.path().join("out");
    summary_run(
        &ins,
        &out,
        &["--domain-summary", "--summary-by-rank", "-f", "json", "csv"],
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let all = views(&json);
    for by_rank in [false, true] {
        let domain = &all[&("DOMAIN".to_string(), by_rank)];
        // Expected, from the other views: per (pid, view) calls, total, min, max.
        let mut want: BTreeMap<(i64, String), (u64, i64, u64, u64)> = BTreeMap::new();
        for ((name, r), rows) in &all {
            if *r != by_rank || name == "DOMAIN" {
                continue;
            }
            for row in rows {
                let pid = row["pid"].as_i64().unwrap_or(-1);
                let e = want
                    .entry((pid, name.clone()))
                    .or_insert((0, 0, u64::MAX, 0));
                e.0 += row["calls"].as_u64().unwrap();
                e.1 += row["total_ns"].as_i64().unwrap();
                e.2 = e.2.min(row["min_ns"].as_u64().unwrap());
                e.3 = e.3.max(row["max_ns"].as_u64().unwrap());
            }
        }
        let got: BTreeMap<(i64, String), (u64, i64, u64, u64)> = domain
            .iter()
            .map(|r| {
                (
                    (
                        r["pid"].as_i64().unwrap_or(-1),
                        r["name"].as_str().unwrap().to_string(),
                    ),
                    (
                        r["calls"].as_u64().unwrap(),
                        r["total_ns"].as_i64().unwrap(),
                        r["min_ns"].as_u64().unwrap(),
                        r["max_ns"].as_u64().unwrap(),
                    ),
                )
            })
            .collect();
        assert_eq!(got, want, "by_rank {by_rank}");
        assert!(got.keys().any(|k| k.1 == "KERNELS") && got.keys().any(|k| k.1 == "HIP"));
        // Averages over all the view's events; shares of the grand total (per process).
        let mut grand: BTreeMap<i64, i64> = BTreeMap::new();
        for ((pid, _), v) in &want {
            *grand.entry(*pid).or_default() += v.1;
        }
        for r in domain {
            let pid = r["pid"].as_i64().unwrap_or(-1);
            let (calls, total) = (
                r["calls"].as_f64().unwrap(),
                r["total_ns"].as_f64().unwrap(),
            );
            // (serde_json reads floats to within an ulp or so, not always exactly.)
            let avg = r["average_ns"].as_f64().unwrap();
            assert!((avg - total / calls).abs() <= 1e-12 * avg.abs(), "{avg}");
            let share = r["percent"].as_f64().unwrap();
            assert!((share - total / grand[&pid] as f64 * 100.0).abs() < 1e-9);
        }
    }
    let pids: std::collections::BTreeSet<i64> = all[&("DOMAIN".to_string(), true)]
        .iter()
        .map(|r| r["pid"].as_i64().unwrap())
        .collect();
    assert_eq!(pids.len(), 3, "one set of domain rows per process");
    // The files, named as AMD's.
    let (header, rows) = read_csv(&out.join("domain_summary.csv"));
    assert_eq!(header[0], "Name");
    assert_eq!(rows.len(), all[&("DOMAIN".to_string(), false)].len());
    let (header, _) = read_csv(&out.join("domain_summary_by_rank.csv"));
    assert_eq!(&header[..3], ["ProcessID", "Hostname", "Name"]);
    assert!(out.join("kernels_summary.csv").is_file());
    assert!(out.join("kernels_summary_by_rank.csv").is_file());
    // Without the option there is no domain view.
    let v = summary_json(&ins, &tmp.path().join("plain"), &[]);
    assert!(!views(&v).contains_key(&("DOMAIN".to_string(), false)));
}

#[test]
fn region_categories_choose_the_api_and_marker_views() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 36, 2, 6);
    let names = |extra: &[&str], dir: &str| -> Vec<String> {
        let v = summary_json(&ins, &tmp.path().join(dir), extra);
        views(&v).keys().map(|k| k.0.clone()).collect()
    };
    let auto = names(&[], "auto");
    for n in ["KERNELS", "HIP", "HSA", "MARKERS"] {
        assert!(auto.contains(&n.to_string()), "{n} missing from {auto:?}");
    }
    let chosen = names(&["--region-categories", "hip", "MARKER"], "chosen");
    assert!(chosen.contains(&"HIP".to_string()) && chosen.contains(&"MARKERS".to_string()));
    assert!(!chosen.contains(&"HSA".to_string()), "{chosen:?}");
    assert!(
        chosen.contains(&"KERNELS".to_string()),
        "kernels are not a region category"
    );
    let none = names(&["--region-categories", "NONE"], "none");
    assert!(none.contains(&"KERNELS".to_string()));
    for n in ["HIP", "HSA", "MARKERS"] {
        assert!(!none.contains(&n.to_string()), "{n} in {none:?}");
    }
    // A longer prefix: a view of its own, holding exactly the calls of those categories.
    let v = summary_json(
        &ins,
        &tmp.path().join("core"),
        &["--region-categories", "HSA_CORE"],
    );
    let calls: u64 = view(&v, "HSA_CORE").values().map(|x| x.0).sum();
    let want = sql_count(
        &ins,
        "SELECT COUNT(*) FROM {rocpd_region} R JOIN {rocpd_event} E ON E.id = R.event_id \
         JOIN {rocpd_string} S ON S.id = E.category_id WHERE S.string LIKE 'HSA\\_CORE\\_%' ESCAPE '\\'",
    ) + sql_count(
        &ins,
        "SELECT COUNT(*) FROM {rocpd_sample} R JOIN {rocpd_event} E ON E.id = R.event_id \
         JOIN {rocpd_string} S ON S.id = E.category_id WHERE S.string LIKE 'HSA\\_CORE\\_%' ESCAPE '\\'",
    );
    assert!(want > 0);
    assert_eq!(calls, want);
    // NONE with a category is a usage error.
    let o = rocpd(&[
        "summary",
        "-q",
        "--region-categories",
        "NONE",
        "HIP",
        "-i",
        ins[0].to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("NONE"), "{}", stderr(&o));
}

#[test]
fn every_kernel_statistic_equals_amds_sql_formulas() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = generate(&tmp.path().join("in"), 37, 3, 10);
    let out = tmp.path().join("out");
    summary_run(&ins, &out, &["-f", "csv"]);
    // AMD's formulas, in SQLite over the union of the inputs: AVG, SUM, MIN, MAX, the
    // sample variance as SUM((d - avg)^2) / (COUNT(*) - 1) (NULL for one call: SQLite
    // divides by zero as NULL), the share as CAST(total AS REAL) / grand total * 100.
    let c = rusqlite::Connection::open_in_memory().unwrap();
    let mut selects = Vec::new();
    for (i, p) in ins.iter().enumerate() {
        c.execute(
            &format!("ATTACH DATABASE ?1 AS db{i}"),
            [p.to_str().unwrap()],
        )
        .unwrap();
        let t = |base: &str| -> String {
            c.query_row(
                &format!("SELECT name FROM db{i}.sqlite_master WHERE type = 'table' AND name LIKE '{base}\\_%' ESCAPE '\\'"),
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        selects.push(format!(
            "SELECT COALESCE(NULLIF(S.display_name, ''), S.kernel_name, '') AS name, K.\"end\" - K.start AS duration \
             FROM db{i}.\"{}\" K LEFT JOIN db{i}.\"{}\" S ON S.id = K.kernel_id",
            t("rocpd_kernel_dispatch"),
            t("rocpd_info_kernel_symbol")
        ));
    }
    let sql = format!(
        "WITH k AS ({}), a AS (SELECT name, AVG(duration) AS avg FROM k GROUP BY name), \
         g AS (SELECT k.name, COUNT(*) AS calls, SUM(duration) AS total, a.avg AS avg, MIN(duration) AS mn, \
               MAX(duration) AS mx, SUM((duration - a.avg) * (duration - a.avg)) / (COUNT(*) - 1) AS var \
               FROM k JOIN a ON a.name = k.name GROUP BY k.name) \
         SELECT name, calls, total, avg, CAST(total AS REAL) / (SELECT SUM(total) FROM g) * 100, mn, mx, var FROM g",
        selects.join(" UNION ALL ")
    );
    let mut st = c.prepare(&sql).unwrap();
    let want: BTreeMap<String, Vec<Option<f64>>> = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                vec![
                    Some(r.get::<_, i64>(1)? as f64),
                    Some(r.get::<_, i64>(2)? as f64),
                    r.get::<_, Option<f64>>(3)?,
                    r.get::<_, Option<f64>>(4)?,
                    Some(r.get::<_, i64>(5)? as f64),
                    Some(r.get::<_, i64>(6)? as f64),
                    r.get::<_, Option<f64>>(7)?.map(f64::sqrt),
                ],
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let text = std::fs::read_to_string(out.join("kernels_summary.csv")).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let got: BTreeMap<String, Vec<Option<f64>>> = rdr
        .records()
        .map(|r| {
            let r = r.unwrap();
            let num = |i: usize| (!r[i].is_empty()).then(|| r[i].parse::<f64>().unwrap());
            (r[0].to_string(), (1..8).map(num).collect())
        })
        .collect();
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    let mut single = 0;
    for (name, w) in &want {
        let g = &got[name];
        for (col, (a, b)) in g.iter().zip(w).enumerate() {
            match (a, b) {
                (Some(a), Some(b)) => assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{name:?} column {col}: {a} vs {b}"
                ),
                (None, None) => single += 1,
                _ => panic!("{name:?} column {col}: {a:?} vs {b:?}"),
            }
        }
        // The average is AVG's double exactly, not a rounding of it.
        assert_eq!(g[2], w[2], "{name:?}");
    }
    assert!(
        single > 0,
        "no kernel with a single call in the generated run"
    );
}

/// View files are named after categories of the input: a category holding a path stays
/// a file name inside `-d` (letters, digits, `-` and `_` only). A format given twice,
/// apart, is written once.
#[test]
fn view_files_stay_inside_the_directory_and_formats_repeat_harmlessly() {
    let tmp = tempfile::tempdir().unwrap();
    let db = generate(&tmp.path().join("gen"), 5, 1, 4).remove(0);
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        let s = table_of(&c, "rocpd_string");
        let n = c
            .execute(
                &format!(
                    "UPDATE \"{s}\" SET string = '../escaped/pwn' WHERE string LIKE 'HIP%API%'"
                ),
                [],
            )
            .unwrap();
        assert!(n > 0);
    }
    let out = tmp.path().join("out").join("in");
    summary_run(
        std::slice::from_ref(&db),
        &out,
        &["-f", "csv", "json", "csv"],
    );
    assert!(!tmp.path().join("out").join("escaped").exists());
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("___escaped_pwn")),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.ends_with(".json")), "{names:?}");
}

/// The utilisation timeline's bins are bounded: 10^11 of them aborted on a failed
/// allocation; now a usage error, before anything is read.
#[test]
fn too_many_utilisation_bins_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = generate(&tmp.path().join("gen"), 5, 1, 4).remove(0);
    let out = tmp.path().join("out");
    let o = rocpd(&[
        "summary",
        "-i",
        db.to_str().unwrap(),
        "-f",
        "html",
        "--bins",
        "100000000000",
        "-d",
        out.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert!(!o.status.success() && !e.contains("panicked"), "{e}");
    assert!(e.contains("1 to 100000 bins"), "{e}");
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
}
