//! `rocpd summary`: totals per name equal plain SQL on the inputs, per rank and after
//! filters and windows; rocpd's column names.

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

fn view(v: &serde_json::Value, name: &str) -> BTreeMap<(Option<i64>, String), (u64, i64)> {
    v["views"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
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
    assert_eq!(view(&v, "KERNELS"), sql_kernels(&ins, true, "1"));
    let copies: u64 = view(&v, "MEMORY_COPIES").values().map(|x| x.0).sum();
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
        let name = v["name"].as_str().unwrap();
        let at = html
            .find(&format!("<section class=\"view\" id=\"view-{name}\">"))
            .unwrap_or_else(|| panic!("view {name} missing"));
        let section = &html[at..at + html[at..].find("</section>").unwrap()];
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(
            section.matches("<tr><td data-v=").count(),
            rows.len(),
            "{name}"
        );
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
