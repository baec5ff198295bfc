//! `-f csv` end to end through the binary: the files read back through our own rocprofv3
//! CSV reader (the one `-i <dir>` uses) to the same events; splits, filters and windows
//! apply; a bad input leaves no CSV file.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::*;
use rocpd_model::naming::output_category;
use rocpd_model::view::{gi, gs, oi, os, Cols};
use rocpd_model::Table;

fn run_ok(args: &[&str]) -> std::process::Output {
    let o = rocpd(args);
    assert!(o.status.success(), "rocpd {args:?}: {}", stderr(&o));
    o
}

fn csv_convert(input: &str, out: &Path, extra: &[&str]) {
    let mut args = vec!["convert", "-q", "-i", input, "-f", "csv", "-o", "t", "-d"];
    let out = out.to_str().unwrap();
    args.push(out);
    args.extend_from_slice(extra);
    run_ok(&args);
}

/// Every event of the inputs as comparable text keys, per kind, and the counter sums per
/// (guid, dispatch, counter). The keys hold what the CSV files carry: for `reread`
/// (inputs read back from CSV) the rows as imported; for the original inputs the rows as
/// the CSV set writes them (marker samples are marker rows; other samples are not kept).
#[derive(Debug, Default, PartialEq)]
struct Events {
    keys: BTreeMap<&'static str, Vec<String>>,
    counters: BTreeMap<(String, i64, String), f64>,
    agents: BTreeSet<String>,
}

fn events(input: &Path) -> Events {
    let mut inp = rocpd::Inputs::open(&[input], &Default::default()).unwrap();
    let cat = inp.catalog().clone();
    let mut ev = Events::default();
    for a in &cat.agents {
        ev.agents.insert(format!(
            "{}|{}|{:?}|{}|{:?}",
            cat.sources[a.source as usize].guid,
            a.id,
            a.logical_index,
            a.agent_type,
            a.product_name
        ));
    }
    let opts = rocpd::EventOptions {
        threads: 1,
        ..Default::default()
    };
    for chunk in inp.chunks(&opts).unwrap() {
        let chunk = chunk.unwrap();
        for b in &chunk.batches {
            let c = Cols::new(&b.batch, b.table);
            for r in 0..b.batch.num_rows() {
                let guid = &cat.sources[c.source.value(r) as usize].guid;
                let (start, end) = (c.start.value(r), c.end.value(r));
                let corr = oi(c.stack_id, r).unwrap_or(0);
                let (pid, tid) = (oi(c.pid, r), oi(c.tid, r));
                let category = os(c.category, r).unwrap_or("");
                let (kind, key) = match b.table {
                    Table::Region | Table::Marker | Table::Sample => {
                        let out = output_category(category);
                        let marker = out == "marker_api";
                        if b.table == Table::Sample && !marker {
                            continue;
                        }
                        let name = gs(c.name, r).unwrap_or("");
                        let function = match gs(c.message, r) {
                            Some(m) if marker && !m.is_empty() => m,
                            _ => name,
                        };
                        (
                            if marker { "marker" } else { "api" },
                            format!("{guid}|{category}|{function}|{pid:?}|{tid:?}|{corr}|{start}|{end}"),
                        )
                    }
                    Table::KernelDispatch => (
                        "kernel",
                        format!(
                            "{guid}|{:?}|{:?}|{:?}|{}|{corr}|{start}|{end}|{:?}|{:?}|{tid:?}|{:?}|{:?}|{:?}|{:?}",
                            gi(c.agent_id, r),
                            gi(c.dispatch_id, r),
                            gi(c.kernel_id, r),
                            gs(c.kernel_name, r).unwrap_or(""),
                            gi(c.queue_id, r),
                            gi(c.stream_id, r),
                            gi(c.group_segment_size, r),
                            gi(c.private_segment_size, r),
                            c.workgroup.map(|a| gi(a, r)),
                            c.grid.map(|a| gi(a, r)),
                        ),
                    ),
                    Table::MemoryCopy => (
                        "copy",
                        format!(
                            "{guid}|{}|{:?}|{:?}|{:?}|{corr}|{start}|{end}",
                            gs(c.name, r).unwrap_or(""),
                            gi(c.src_agent_id, r),
                            gi(c.dst_agent_id, r),
                            gi(c.stream_id, r),
                        ),
                    ),
                    Table::MemoryAllocation => {
                        let level = gs(c.level, r);
                        if level == Some("SCRATCH") {
                            (
                                "scratch",
                                format!(
                                    "{guid}|{:?}|{:?}|{:?}|{tid:?}|{:?}|{start}|{end}",
                                    gs(c.kind, r),
                                    gi(c.agent_id, r),
                                    gi(c.queue_id, r),
                                    gi(c.size, r),
                                ),
                            )
                        } else {
                            (
                                "allocation",
                                format!(
                                    "{guid}|{:?}|{level:?}|{:?}|{:?}|{:?}|{corr}|{start}|{end}",
                                    gs(c.kind, r),
                                    gi(c.agent_id, r),
                                    gi(c.size, r),
                                    gi(c.address, r),
                                ),
                            )
                        }
                    }
                    Table::PmcValue => {
                        let Some(d) = gi(c.dispatch_id, r) else { continue };
                        let v = c.value.map(|a| a.value(r)).unwrap_or(0.0);
                        let name = gs(c.counter_name, r).unwrap_or("").to_string();
                        *ev.counters.entry((guid.clone(), d, name)).or_default() += v;
                        continue;
                    }
                };
                ev.keys.entry(kind).or_default().push(key);
            }
        }
    }
    for v in ev.keys.values_mut() {
        v.sort();
    }
    ev
}

fn assert_same(original: &Events, reread: &Events) {
    assert_eq!(
        original.keys.keys().collect::<Vec<_>>(),
        reread.keys.keys().collect::<Vec<_>>()
    );
    for (kind, want) in &original.keys {
        let got = &reread.keys[kind];
        assert_eq!(got.len(), want.len(), "{kind}: rows");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g, w, "{kind}");
        }
    }
    assert_eq!(
        original.counters.len(),
        reread.counters.len(),
        "counter groups"
    );
    for (k, v) in &original.counters {
        let g = reread.counters[k];
        assert!(
            (g - v).abs() <= 1e-9 * v.abs().max(1.0),
            "{k:?}: {g} != {v}"
        );
    }
    assert_eq!(original.agents, reread.agents);
}

fn generated() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/generated")
}

fn files_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_generated_fixture_reads_back_to_the_same_events() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("csv");
    csv_convert(generated().to_str().unwrap(), &out, &[]);
    let original = events(&generated());
    let reread = events(&out);
    assert_same(&original, &reread);
    for kind in ["api", "marker", "kernel", "copy", "allocation", "scratch"] {
        assert!(
            original.keys.get(kind).is_some_and(|v| !v.is_empty()),
            "{kind}"
        );
    }
    assert!(!original.counters.is_empty());
    // Quotes, commas and newlines in kernel names and marker texts came back whole.
    let has = |kind: &str, text: &str| reread.keys[kind].iter().any(|k| k.contains(text));
    assert!(has(
        "kernel",
        "|void quote_kernel<\"fast\", 2>(float*, int)|"
    ));
    assert!(has("kernel", "|newline_kernel\n(int, float)|"));
    assert!(has("marker", "|checkpoint, \"epoch\" ü|"));
    // Python's csv module (or any reader) sees the same records: the reader above is ours,
    // so count the records with an independent parser too.
    let kernels = csv::Reader::from_path(out.join("t_kernel_trace.csv"))
        .unwrap()
        .records()
        .count();
    assert_eq!(kernels, original.keys["kernel"].len());
}

#[test]
fn a_real_rocprofv3_trace_reads_back_to_the_same_events() {
    // The real JSON output (43,915 kernel dispatches of a training run on 8 MI350X), imported,
    // written as CSV and read back.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("csv");
    let json = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rocprofv3-json");
    csv_convert(json.to_str().unwrap(), &out, &["--stats"]);
    let original = events(&json);
    let reread = events(&out);
    assert_eq!(original.keys["kernel"].len(), 43_915);
    assert_same(&original, &reread);
    assert_eq!(original.agents.len(), 10);
    let stats = std::fs::read_to_string(out.join("t_kernel_stats.csv")).unwrap();
    let calls: u64 = csv::Reader::from_reader(stats.as_bytes())
        .records()
        .map(|r| r.unwrap()[1].parse::<u64>().unwrap())
        .sum();
    assert_eq!(calls, 43_915);
}

#[test]
fn real_rocprofv3_csv_files_read_back_to_the_same_events() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rocprofv3-csv-llamacpp");
    let out = tmp.path().join("csv");
    csv_convert(src.to_str().unwrap(), &out, &[]);
    let original = events(&src);
    let reread = events(&out);
    assert!(original.keys["kernel"].len() > 1000);
    assert_same(&original, &reread);
}

/// The kernel rows of every `*kernel_trace.csv` in `dir`, as (guid, dispatch id, start).
fn kernel_rows(dir: &Path) -> Vec<(String, i64, i64)> {
    let mut v = Vec::new();
    for f in files_in(dir) {
        if !f.ends_with("_kernel_trace.csv") {
            continue;
        }
        let mut r = csv::Reader::from_path(dir.join(&f)).unwrap();
        let h = r.headers().unwrap().clone();
        let at = |n: &str| h.iter().position(|x| x == n).unwrap();
        let (g, d, s) = (at("Guid"), at("Dispatch_Id"), at("Start_Timestamp"));
        for rec in r.records() {
            let rec = rec.unwrap();
            v.push((
                rec[g].to_string(),
                rec[d].parse().unwrap(),
                rec[s].parse().unwrap(),
            ));
        }
    }
    v.sort();
    v
}

#[test]
fn splits_write_one_set_per_part_named_like_the_other_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    csv_convert(generated().to_str().unwrap(), &whole, &[]);
    let all = kernel_rows(&whole);

    let by_process = tmp.path().join("process");
    csv_convert(
        generated().to_str().unwrap(),
        &by_process,
        &["--split-by", "process", "--stats"],
    );
    let names = files_in(&by_process);
    for pid in [4000, 4037, 4074] {
        for kind in [
            "kernel_trace",
            "hip_api_trace",
            "agent_info",
            "kernel_stats",
        ] {
            let f = format!("t.pid-{pid}_{kind}.csv");
            assert!(names.contains(&f), "{f} missing: {names:?}");
        }
        // A part holds its own process only, agents included.
        let guids = |kind: &str| -> BTreeSet<String> {
            let f = by_process.join(format!("t.pid-{pid}_{kind}.csv"));
            let mut r = csv::Reader::from_path(f).unwrap();
            r.records().map(|x| x.unwrap()[0].to_string()).collect()
        };
        assert_eq!(guids("agent_info").len(), 1);
        assert_eq!(guids("agent_info"), guids("kernel_trace"));
        assert_eq!(guids("hip_api_trace"), guids("kernel_trace"));
    }
    assert_eq!(kernel_rows(&by_process), all);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(by_process.join("t_results.manifest.json")).unwrap())
            .unwrap();
    let listed: BTreeSet<String> = manifest["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["path"].as_str().unwrap().to_string())
        .collect();
    let mut on_disk = names.clone();
    on_disk.remove("t_results.manifest.json");
    assert_eq!(listed, on_disk);
    // Each part reads back as its own processes: the parts together are the whole.
    let reread = events(&by_process);
    let original = events(&generated());
    assert_eq!(reread.keys["kernel"], original.keys["kernel"]);

    let by_time = tmp.path().join("time");
    csv_convert(
        generated().to_str().unwrap(),
        &by_time,
        &["--split-by", "time", "--split-count", "3"],
    );
    let names = files_in(&by_time);
    for part in ["part-001_of_003", "part-002_of_003", "part-003_of_003"] {
        assert!(
            names.contains(&format!("t.{part}_kernel_trace.csv")),
            "{names:?}"
        );
    }
    assert_eq!(kernel_rows(&by_time), all);
    // Parts are in time order: every kernel of part 1 starts before every kernel of part 2.
    let part = |p: &str| -> Vec<i64> {
        let mut r =
            csv::Reader::from_path(by_time.join(format!("t.{p}_kernel_trace.csv"))).unwrap();
        r.records()
            .map(|x| x.unwrap()[10].parse().unwrap())
            .collect()
    };
    let (a, b) = (part("part-001_of_003"), part("part-002_of_003"));
    assert!(a.iter().max() < b.iter().min());
}

#[test]
fn filters_and_windows_apply() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("kernels");
    csv_convert(
        generated().to_str().unwrap(),
        &out,
        &["--include", "kind=kernel"],
    );
    assert_eq!(
        files_in(&out),
        BTreeSet::from([
            "t_agent_info.csv".to_string(),
            "t_kernel_trace.csv".to_string()
        ])
    );
    let out = tmp.path().join("no-hsa");
    csv_convert(
        generated().to_str().unwrap(),
        &out,
        &["--exclude", "category=hsa_api"],
    );
    assert!(!out.join("t_hsa_api_trace.csv").exists());
    assert!(out.join("t_hip_api_trace.csv").exists());
    // A window keeps the kernels wholly inside it, as for every format.
    let all = kernel_rows(&{
        let d = tmp.path().join("all");
        csv_convert(generated().to_str().unwrap(), &d, &[]);
        d
    });
    let out = tmp.path().join("window");
    csv_convert(
        generated().to_str().unwrap(),
        &out,
        &["--start", "25%", "--end", "75%"],
    );
    let kept = kernel_rows(&out);
    assert!(!kept.is_empty() && kept.len() < all.len());
    let pftrace = tmp.path().join("pf");
    let trace = convert(
        &[generated()],
        &pftrace,
        &["--start", "25%", "--end", "75%"],
    );
    assert_eq!(
        decode(&trace).slices_by_category["kernel_dispatch"],
        kept.len() as u64
    );
}

#[test]
fn the_report_lists_every_file_and_stats_need_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let report = tmp.path().join("r.json");
    csv_convert(
        generated().to_str().unwrap(),
        &out,
        &["--report", report.to_str().unwrap(), "--stats"],
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let listed: BTreeSet<String> = r["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            Path::new(o["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(listed, files_in(&out));
    let kernels = r["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["path"].as_str().unwrap().ends_with("t_kernel_trace.csv"))
        .unwrap();
    assert_eq!(
        kernels["rows"]["kernel_dispatch"],
        r["rows_in"]["kernel_dispatch"]
    );
    let o = rocpd(&[
        "convert",
        "-i",
        generated().to_str().unwrap(),
        "-f",
        "pftrace",
        "--stats",
        "-d",
    ]);
    assert_ne!(o.status.code(), Some(0));
    let o = rocpd(&[
        "convert",
        "-q",
        "-i",
        generated().to_str().unwrap(),
        "-f",
        "pftrace",
        "--stats",
        "-d",
        tmp.path().join("x").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--stats"), "{}", stderr(&o));
}

#[test]
fn a_bad_input_row_leaves_no_csv_file() {
    let tmp = tempfile::tempdir().unwrap();
    let db = generate(&tmp.path().join("in"), 3, 1, 4).remove(0);
    // The last dispatch in time: the other files have rows by then.
    let (kd, id) = break_a_dispatch(&db, "ORDER BY start DESC");
    for extra in [
        &[][..],
        &["--split-by", "time", "--split-count", "4"][..],
        &["--stats"][..],
    ] {
        let out = tmp.path().join(format!("out{}", extra.len()));
        let mut args = vec![
            "convert",
            "-i",
            db.to_str().unwrap(),
            "-f",
            "csv",
            "-d",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = rocpd(&args);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(&format!("table {kd}, row id {id}")), "{e}");
        let left = if out.exists() {
            files_in(&out)
        } else {
            BTreeSet::new()
        };
        assert!(left.is_empty(), "{extra:?}: left {left:?}");
    }
}
