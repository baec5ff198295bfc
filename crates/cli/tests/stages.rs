//! Filter, window and split: counts against SQL on the inputs, splits against the
//! unsplit output, every output checked on its own, and the bad requests.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn inputs(dir: &Path, seed: u64) -> Vec<PathBuf> {
    generate(&dir.join("in"), seed, 3, 12)
}

fn arg_list(inputs: &[PathBuf]) -> Vec<String> {
    let mut v = vec!["-i".to_string()];
    v.extend(inputs.iter().map(|p| p.display().to_string()));
    v
}

fn run(inputs: &[PathBuf], out: &Path, extra: &[&str]) -> Vec<PathBuf> {
    let mut args = arg_list(inputs);
    args.extend([
        "-o".into(),
        "t".into(),
        "-d".into(),
        out.display().to_string(),
    ]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    convert_args(&refs);
    traces(out)
}

/// Decodes every part and checks that together they hold exactly the unsplit events.
fn assert_parts_equal_whole(whole: &Decoded, parts: &[PathBuf]) -> Vec<Decoded> {
    let decoded: Vec<Decoded> = parts.iter().map(|p| decode(p)).collect();
    let mut events: Vec<_> = decoded.iter().flat_map(|d| d.events.clone()).collect();
    events.sort();
    assert_eq!(events.len(), whole.events.len());
    assert!(
        events == whole.events,
        "the parts do not hold the same events as the whole"
    );
    decoded
}

#[test]
fn time_splits_partition_the_events_and_every_part_stands_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = inputs(tmp.path(), 21);
    let whole = decode(&run(&ins, &tmp.path().join("whole"), &[])[0]);
    for (n, extra) in [
        ("4", vec!["--split-by", "time", "--split-count", "4"]),
        ("64", vec!["--split-by", "time", "--split-count", "64"]),
        ("d", vec!["--split-by", "time", "--split-duration", "2ms"]),
        // A window wider than the data: the parts cut the events it holds, not the
        // window (they all fell into one part).
        (
            "w",
            vec!["--start", "0", "--split-by", "time", "--split-count", "4"],
        ),
    ] {
        let out = tmp.path().join(format!("split{n}"));
        let parts = run(&ins, &out, &extra);
        assert!(parts.len() > 1, "{extra:?}");
        let decoded = assert_parts_equal_whole(&whole, &parts);
        // Every part names its processes itself (and decode checked that every track it
        // uses is described in it).
        for d in &decoded {
            if !d.events.is_empty() {
                assert!(!d.processes.is_empty());
            }
        }
        // No more flows than the whole, and those kept are complete (decode checks it).
        assert!(decoded.iter().map(|d| d.flows).sum::<u64>() <= whole.flows);
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("t_results.manifest.json")).unwrap())
                .unwrap();
        let outputs = manifest["outputs"].as_array().unwrap();
        assert_eq!(outputs.len(), parts.len());
        let listed: u64 = outputs
            .iter()
            .flat_map(|o| o["events"].as_object().unwrap().values())
            .map(|v| v.as_u64().unwrap())
            .sum();
        let read: u64 = manifest["events_read"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(listed, read);
        if n == "w" {
            assert_eq!(parts.len(), 4, "{parts:?}");
        }
        if n == "4" {
            assert!(parts[0]
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .ends_with("part-001_of_004.pftrace"));
        }
    }
}

#[test]
fn process_node_and_agent_splits_partition_the_events() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = inputs(tmp.path(), 22);
    let whole = decode(&run(&ins, &tmp.path().join("whole"), &[])[0]);
    let by_pid = run(&ins, &tmp.path().join("pid"), &["--split-by", "process"]);
    assert_eq!(by_pid.len(), 3);
    let decoded = assert_parts_equal_whole(&whole, &by_pid);
    // Flows never cross processes: all of them survive.
    assert_eq!(decoded.iter().map(|d| d.flows).sum::<u64>(), whole.flows);
    for d in &decoded {
        assert_eq!(d.processes.len(), 1);
    }
    // Several passes with few outputs open at once give the same files.
    let few = run(
        &ins,
        &tmp.path().join("pid1"),
        &["--split-by", "process", "--max-open", "1"],
    );
    for (a, b) in by_pid.iter().zip(&few) {
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    }
    let by_node = run(&ins, &tmp.path().join("node"), &["--split-by", "node"]);
    assert_eq!(by_node.len(), 2);
    assert_parts_equal_whole(&whole, &by_node);
    let by_agent = run(&ins, &tmp.path().join("agent"), &["--split-by", "agent"]);
    assert!(by_agent
        .iter()
        .any(|p| p.to_str().unwrap().contains(".no-agent.")));
    let decoded = assert_parts_equal_whole(&whole, &by_agent);
    assert_eq!(decoded.iter().map(|d| d.flows).sum::<u64>(), 0);
}

#[test]
fn size_splits_keep_every_part_under_the_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = inputs(tmp.path(), 23);
    let whole_path = run(&ins, &tmp.path().join("whole"), &[]).remove(0);
    let whole = decode(&whole_path);
    let cap = std::fs::metadata(&whole_path).unwrap().len() / 5;
    let parts = run(
        &ins,
        &tmp.path().join("size"),
        &["--max-file-size", &cap.to_string()],
    );
    assert!(parts.len() >= 5, "{} parts", parts.len());
    for p in &parts {
        assert!(
            std::fs::metadata(p).unwrap().len() <= cap,
            "{} over {cap}",
            p.display()
        );
    }
    assert_parts_equal_whole(&whole, &parts);
}

#[test]
fn filters_keep_what_sql_says() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = inputs(tmp.path(), 24);
    let region_cat =
        "SELECT COUNT(*) FROM {rocpd_region} R JOIN {rocpd_event} E ON E.id = R.event_id \
                      JOIN {rocpd_string} S ON S.id = E.category_id WHERE ";
    // Dropping HSA calls removes exactly them, and keeps the flows of HIP launches.
    let d = decode(
        &run(
            &ins,
            &tmp.path().join("a"),
            &["--exclude", "category=hsa_api"],
        )[0],
    );
    assert!(!d.slices_by_category.contains_key("hsa_api"));
    assert_eq!(
        d.slices_by_category["hip_api"],
        sql_count(&ins, &format!("{region_cat} S.string LIKE 'HIP%'"))
    );
    assert_eq!(d.flows, expected_flows(&ins));
    // Kernels only.
    let d = decode(&run(&ins, &tmp.path().join("b"), &["--include", "kind=kernel"])[0]);
    assert_eq!(
        d.slices_by_category.keys().collect::<Vec<_>>(),
        vec!["kernel_dispatch"]
    );
    assert_eq!(
        d.slices_by_category["kernel_dispatch"],
        sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_kernel_dispatch}")
    );
    assert_eq!(d.flows, 0);
    // One process, by pid; one thread's API calls by name.
    let d = decode(&run(&ins, &tmp.path().join("c"), &["--include", "pid=4037"])[0]);
    assert_eq!(d.processes.keys().collect::<Vec<_>>(), vec![&4037]);
    let d = decode(
        &run(
            &ins,
            &tmp.path().join("e"),
            &["--include", "kind=api", "--include", "name=^hipMemcpy"],
        )[0],
    );
    let n = sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_region} R JOIN {rocpd_string} S ON S.id = R.name_id WHERE S.string LIKE 'hipMemcpy%'");
    assert_eq!(d.slices_by_category.values().sum::<u64>(), n);
    // A node by hostname.
    let d = decode(
        &run(
            &ins,
            &tmp.path().join("f"),
            &["--include", "node=node-01", "--include", "kind=kernel"],
        )[0],
    );
    let n = sql_count(&ins, "SELECT COUNT(*) FROM {rocpd_kernel_dispatch} K JOIN {rocpd_info_node} N ON N.id = K.nid WHERE N.hostname = 'node-01'");
    assert_eq!(d.slices_by_category["kernel_dispatch"], n);
    // A node by id, written as a number; `01` is not how the id is written, so it names
    // no node (and no hostname).
    let nid = sql_count(&ins[..1], "SELECT MIN(nid) FROM {rocpd_kernel_dispatch}");
    let by_id = format!("node={nid}");
    let d = decode(
        &run(
            &ins,
            &tmp.path().join("g"),
            &["--include", &by_id, "--include", "kind=kernel"],
        )[0],
    );
    let n = sql_count(
        &ins,
        &format!("SELECT COUNT(*) FROM {{rocpd_kernel_dispatch}} WHERE nid = {nid}"),
    );
    assert!(n > 0);
    assert_eq!(d.slices_by_category["kernel_dispatch"], n);
    let padded = format!("node=0{nid}");
    let d = decode(
        &run(
            &ins,
            &tmp.path().join("h"),
            &["--include", &padded, "--include", "kind=kernel"],
        )[0],
    );
    assert_eq!(d.slices_by_category.get("kernel_dispatch"), None);
}

fn span(ins: &[PathBuf]) -> (i64, i64) {
    let mut lo = i64::MAX;
    let mut hi = i64::MIN;
    for p in ins {
        let c = rusqlite::Connection::open(p).unwrap();
        let mut st = c.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_region_%' OR name LIKE 'rocpd_kernel_dispatch_%' OR name LIKE 'rocpd_memory_copy_%' OR name LIKE 'rocpd_memory_allocate_%' OR name LIKE 'rocpd_sample_%'").unwrap();
        let names: Vec<String> = st
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        for n in names {
            let (a, b) = if n.starts_with("rocpd_sample_") {
                ("timestamp", "timestamp")
            } else {
                ("start", "\"end\"")
            };
            let (x, y): (Option<i64>, Option<i64>) = c
                .query_row(
                    &format!("SELECT MIN({a}), MAX({b}) FROM \"{n}\""),
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            if let (Some(x), Some(y)) = (x, y) {
                lo = lo.min(x);
                hi = hi.max(y);
            }
        }
    }
    (lo, hi)
}

#[test]
fn windows_keep_what_sql_says_with_rocpd_inclusive_semantics() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = inputs(tmp.path(), 25);
    let (lo, hi) = span(&ins);
    let (s, e) = (lo + (hi - lo) / 4, lo + (hi - lo) * 3 / 4);
    let kernels = |cond: &str| {
        sql_count(
            &ins,
            &format!("SELECT COUNT(*) FROM {{rocpd_kernel_dispatch}} WHERE {cond}"),
        )
    };
    // --inclusive true (the default): wholly inside.
    let d = decode(
        &run(
            &ins,
            &tmp.path().join("a"),
            &["--start", "25%", "--end", "75%"],
        )[0],
    );
    assert_eq!(
        d.slices_by_category["kernel_dispatch"],
        kernels(&format!("start >= {s} AND \"end\" <= {e}"))
    );
    // --inclusive false: overlapping. Absolute ns give the same window.
    let (ss, es) = (s.to_string(), e.to_string());
    let d = decode(
        &run(
            &ins,
            &tmp.path().join("b"),
            &["--start", &ss, "--end", &es, "--inclusive", "false"],
        )[0],
    );
    assert_eq!(
        d.slices_by_category["kernel_dispatch"],
        kernels(&format!("start <= {e} AND \"end\" >= {s}"))
    );
    // Offsets with units from the start of the trace.
    let off = format!("{}us", (s - lo) / 1000);
    let d2 = decode(
        &run(
            &ins,
            &tmp.path().join("c"),
            &["--start", &off, "--inclusive", "false"],
        )[0],
    );
    let s2 = lo + (s - lo) / 1000 * 1000;
    assert_eq!(
        d2.slices_by_category["kernel_dispatch"],
        kernels(&format!("\"end\" >= {s2}"))
    );
    // Keeping launches together: never fewer kernels, and flows whole (decode checks).
    let d3 = decode(
        &run(
            &ins,
            &tmp.path().join("d"),
            &["--start", "25%", "--end", "75%", "--keep-launches"],
        )[0],
    );
    assert!(
        d3.slices_by_category["kernel_dispatch"]
            >= kernels(&format!("start >= {s} AND \"end\" <= {e}"))
    );
    assert!(d3.flows >= d.flows);
}

#[test]
fn marker_windows_use_the_marker_and_refuse_unknown_or_ambiguous_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = inputs(tmp.path(), 26);
    // A message that occurs once: the first training step's checkpoint marker, if unique,
    // else any unique one.
    let c = rusqlite::Connection::open(&ins[0]).unwrap();
    let ev = table_of(&c, "rocpd_event");
    let unique: Option<String> = c
        .query_row(
            &format!("SELECT json_extract(extdata, '$.message') m FROM \"{ev}\" WHERE m IS NOT NULL GROUP BY m HAVING COUNT(*) = 1 LIMIT 1"),
            [],
            |r| r.get(0),
        )
        .ok();
    let repeated: String = c
        .query_row(
            &format!("SELECT json_extract(extdata, '$.message') m FROM \"{ev}\" WHERE m IS NOT NULL GROUP BY m HAVING COUNT(*) > 1 LIMIT 1"),
            [],
            |r| r.get(0),
        )
        .unwrap();
    let one = vec![ins[0].clone()];
    if let Some(m) = unique {
        let d = decode(
            &run(
                &one,
                &tmp.path().join("a"),
                &["--start-marker", &m, "--end-marker", &m],
            )[0],
        );
        assert!(
            d.slices_by_category.get("marker_api").copied().unwrap_or(0)
                + d.instants_by_category
                    .get("marker_api")
                    .copied()
                    .unwrap_or(0)
                >= 1
        );
    }
    let out = tmp.path().join("bad");
    let mut args: Vec<String> = vec![
        "convert".into(),
        "-f".into(),
        "pftrace".into(),
        "-d".into(),
        out.display().to_string(),
    ];
    args.extend(arg_list(&one));
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend_from_slice(extra);
        rocpd(&a)
    };
    let o = with(&["--start-marker", "no such marker"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
    let o = with(&["--start-marker", &repeated]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("ambiguous"), "{}", stderr(&o));
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
}

#[test]
fn bad_windows_splits_and_filters_are_refused_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = inputs(tmp.path(), 27);
    let out = tmp.path().join("out");
    let mut base: Vec<String> = vec![
        "convert".into(),
        "-f".into(),
        "pftrace".into(),
        "-d".into(),
        out.display().to_string(),
    ];
    base.extend(arg_list(&ins));
    for (extra, expect) in [
        (vec!["--start", "0", "--end", "1000"], "holds no events"),
        (vec!["--start", "75%", "--end", "25%"], "before it starts"),
        (vec!["--start", "5 parsecs"], "not a duration"),
        (vec!["--max-file-size", "100"], "too small"),
        (vec!["--split-by", "time"], "--split-count"),
        (vec!["--split-by", "size"], "--max-file-size"),
        (vec!["--include", "colour=red"], "unknown key"),
        (vec!["--exclude", "name=("], "regular expression"),
        (vec!["--keep-launches"], "goes with a time window"),
        (
            vec!["--split-by", "process", "--split-count", "3"],
            "go with --split-by time",
        ),
        (vec!["--start", "200%"], "between 0% and 100%"),
        (
            vec!["--split-by", "time", "--split-count", "10001"],
            "between 1 and 10000 parts",
        ),
    ] {
        let mut a: Vec<&str> = base.iter().map(String::as_str).collect();
        a.extend_from_slice(&extra);
        let o = rocpd(&a);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{extra:?}: {}", stderr(&o));
        assert!(
            !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
            "{extra:?} left output"
        );
    }
}

/// With `--keep-launches`, a kernel kept for its launch (though it ends past the window)
/// keeps its counter values: they follow their dispatch, as without the option. They
/// were judged on their own times and dropped.
#[test]
fn counter_values_follow_a_kernel_kept_for_its_launch() {
    let tmp = tempfile::tempdir().unwrap();
    let input = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/generated/node-00_4000_results.db");
    let out = tmp.path().join("kl");
    let refs = [
        "-i",
        input.to_str().unwrap(),
        "-f",
        "rocpd",
        "-o",
        "t",
        "-d",
        out.to_str().unwrap(),
        "--start",
        "30%",
        "--end",
        "31%",
        "--keep-launches",
    ];
    convert_args(&refs);
    // Counter values per dispatch id, in a database.
    let per_dispatch = |db: &Path| -> std::collections::BTreeMap<i64, i64> {
        let c = rusqlite::Connection::open(db).unwrap();
        let mut st = c
            .prepare(
                "SELECT K.dispatch_id, COUNT(P.id) FROM rocpd_kernel_dispatch K \
                 LEFT JOIN rocpd_pmc_event P ON P.event_id = K.event_id GROUP BY K.dispatch_id",
            )
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let whole = per_dispatch(&input);
    let kept = per_dispatch(&out.join("t_results.db"));
    assert!(!kept.is_empty());
    assert!(kept.values().sum::<i64>() > 0, "{kept:?}");
    for (dispatch, n) in &kept {
        assert_eq!(Some(n), whole.get(dispatch), "dispatch {dispatch}");
    }
}

/// A CSV run's ambiguous marker names the run's marker API trace, the file the markers
/// are in, not the run's first file.
#[test]
fn an_ambiguous_marker_of_a_csv_run_names_the_marker_file() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = inputs(tmp.path(), 26);
    let c = rusqlite::Connection::open(&ins[0]).unwrap();
    let ev = table_of(&c, "rocpd_event");
    let repeated: String = c
        .query_row(
            &format!("SELECT json_extract(extdata, '$.message') m FROM \"{ev}\" WHERE m IS NOT NULL GROUP BY m HAVING COUNT(*) > 1 LIMIT 1"),
            [],
            |r| r.get(0),
        )
        .unwrap();
    let (csv, _) = rocpd_gen::export_csv(&ins[0], &tmp.path().join("csv")).unwrap();
    let out = tmp.path().join("out");
    let o = rocpd(&[
        "convert",
        "-i",
        csv.to_str().unwrap(),
        "-f",
        "pftrace",
        "-d",
        out.to_str().unwrap(),
        "--start-marker",
        &repeated,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("ambiguous") && e.contains("_marker_api_trace.csv at "),
        "{e}"
    );
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
}
