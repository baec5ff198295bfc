//! Imports every sample file under fixtures/proton and checks the rows independently.

use std::path::{Path, PathBuf};

use rocpd_proton::{import, sniff_file, ProtonKind};
use rusqlite::Connection;
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/proton")
}

fn all_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in [
        "real_gpu",
        "triton_test_fixtures",
        "generated_cpu",
        "constructed",
    ] {
        for e in std::fs::read_dir(fixtures().join(dir)).unwrap() {
            out.push(e.unwrap().path());
        }
    }
    out.sort();
    out
}

/// Non-ROOT nodes of a tree, counted recursively on a serde_json value.
fn count_nodes(v: &Value) -> u64 {
    let name = v.pointer("/frame/name").and_then(Value::as_str);
    let own = u64::from(name != Some("ROOT"));
    own + v
        .get("children")
        .and_then(Value::as_array)
        .map_or(0, |c| c.iter().map(count_nodes).sum())
}

fn x_events(bytes: &[u8]) -> u64 {
    serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .map(|d| {
            let d = d.unwrap();
            d["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["ph"] == "X")
                .count() as u64
        })
        .sum()
}

fn run(path: &Path, kind: ProtonKind) -> (tempfile::TempDir, PathBuf, rocpd_proton::ImportReport) {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("out.db");
    let rep = import(path, kind, &dest).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (dir, dest, rep)
}

/// (name, start, end, extdata) of every region, in id order.
fn regions(dest: &Path) -> Vec<(String, i64, i64, Value)> {
    let c = Connection::open(dest).unwrap();
    let mut st = c
        .prepare(
            "SELECT S.string, R.start, R.\"end\", E.extdata FROM rocpd_region R \
             JOIN rocpd_string S ON S.id = R.name_id JOIN rocpd_event E ON E.id = R.event_id \
             ORDER BY R.id",
        )
        .unwrap();
    st.query_map([], |r| {
        let ext: String = r.get(3)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            serde_json::from_str(&ext).unwrap(),
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn every_file_imports_with_expected_counts() {
    let files = all_files();
    assert!(files.len() >= 30);
    for f in files {
        let kind = sniff_file(&f)
            .unwrap()
            .unwrap_or_else(|| panic!("not sniffed: {}", f.display()));
        let bytes = std::fs::read(&f).unwrap();
        let (_d, dest, rep) = run(&f, kind);
        let expect = match kind {
            ProtonKind::Tree => {
                let v: Value = serde_json::from_slice(&bytes).unwrap();
                let root = if v.is_array() { &v[0] } else { &v };
                count_nodes(root)
            }
            ProtonKind::TreeMsgpack => 2, // outer, inner (checked against JSON below)
            ProtonKind::ChromeTrace => x_events(&bytes),
        };
        assert_eq!(rep.count("rocpd_region"), expect, "{}", f.display());
        assert_eq!(rep.count("rocpd_event"), expect, "{}", f.display());
        // Our reader opens it.
        let db = rocpd_db::Database::open(&dest).unwrap();
        let counts = db.count_rows().unwrap();
        let total: u64 = counts.iter().map(|(_, n)| n).sum();
        assert_eq!(total, expect, "{}: {counts:?}", f.display());
        // Nesting of tree layouts: each child within its parent.
        if kind != ProtonKind::ChromeTrace {
            check_nesting(&dest);
        }
    }
}

fn check_nesting(dest: &Path) {
    let rs = regions(dest);
    // Regions are written in pre-order with depth in extdata; the nearest preceding region
    // of depth d-1 is the parent.
    let mut stack: Vec<(i64, i64, u64)> = Vec::new();
    for (name, s, e, ext) in rs {
        let d = ext["depth"].as_u64().unwrap();
        assert!(e > s, "{name}: zero width");
        while stack.last().is_some_and(|t| t.2 >= d) {
            stack.pop();
        }
        if let Some(&(ps, pe, pd)) = stack.last() {
            assert_eq!(pd + 1, d);
            assert!(
                s >= ps && e <= pe,
                "{name} [{s},{e}) outside parent [{ps},{pe})"
            );
        }
        stack.push((s, e, d));
    }
}

#[test]
fn golden_b200_matmul() {
    let f = fixtures().join("real_gpu/triton_lang_triton_matmul_b200.hatchet");
    let v: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    let (_d, dest, rep) = run(&f, ProtonKind::Tree);
    assert!(rep.notes[0].contains("synthetic"));
    let rs = regions(&dest);
    // Find a kernel node (one with "time (ns)") in the JSON and compare its row.
    fn find_kernel(v: &Value) -> Option<&Value> {
        if v["frame"]["name"] != "ROOT" && v["metrics"].get("time (ns)").is_some() {
            return Some(v);
        }
        v["children"].as_array()?.iter().find_map(find_kernel)
    }
    fn incl(v: &Value) -> u64 {
        v["metrics"]["time (ns)"].as_u64().unwrap_or(0)
            + v["children"]
                .as_array()
                .map_or(0, |c| c.iter().map(incl).sum())
    }
    let k = find_kernel(&v[0]).unwrap();
    let name = k["frame"]["name"].as_str().unwrap();
    let row = rs.iter().find(|r| r.0 == name).unwrap();
    assert_eq!(row.3["kind"], "kernel");
    assert_eq!(row.3["exclusive_time_ns"], k["metrics"]["time (ns)"]);
    assert_eq!(row.3["inclusive_time_ns"].as_u64().unwrap(), incl(k));
    assert_eq!(row.3["count"], k["metrics"]["count"]);
    assert_eq!(row.3["device_type"], "CUDA");
    assert_eq!(row.3["device_id"], 0);
    assert_eq!((row.2 - row.1) as u64, incl(k));
    // Every top-level node's width is its inclusive time, and they are laid side by side.
    let mut cursor = 0;
    for c in v[0]["children"].as_array().unwrap() {
        let r = rs
            .iter()
            .find(|r| r.0 == c["frame"]["name"].as_str().unwrap())
            .unwrap();
        assert_eq!(r.1, cursor);
        assert_eq!((r.2 - r.1) as u64, incl(c).max(1));
        cursor = r.2;
    }
    // Device table → one GPU agent, arch "100".
    let c = Connection::open(&dest).unwrap();
    let (ty, name): (String, String) = c
        .query_row("SELECT type, name FROM rocpd_info_agent", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((ty.as_str(), name.as_str()), ("GPU", "100"));
    let tname: String = c
        .query_row("SELECT name FROM rocpd_info_thread", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tname, "Proton tree (aggregated, synthetic time)");
}

#[test]
fn old_capitalised_keys_and_int_arch() {
    let f = fixtures().join("triton_test_fixtures/pre3.0_2024-05_example.json");
    let (_d, dest, _) = run(&f, ProtonKind::Tree);
    let rs = regions(&dest);
    let k = rs.iter().find(|r| r.3["kind"] == "kernel").unwrap();
    assert!(k.3["exclusive_time_ns"].as_u64().unwrap() > 0);
    assert!(k.3.get("Time (ns)").is_some());
    let c = Connection::open(&dest).unwrap();
    let arch: String = c
        .query_row("SELECT name FROM rocpd_info_agent", [], |r| r.get(0))
        .unwrap();
    assert_eq!(arch, "89");
}

#[test]
fn msgpack_equals_json_twin() {
    let f = fixtures().join("generated_cpu/tree_scopes_v3.9.0.hatchet_msgpack");
    let (_d, dest, _) = run(&f, ProtonKind::TreeMsgpack);
    // The same tree written as JSON by hand (decoded with an independent tool).
    let dir = tempfile::tempdir().unwrap();
    let twin = dir.path().join("tree_scopes_v3.9.0.hatchet");
    std::fs::write(
        &twin,
        r#"[{"frame":{"name":"ROOT","type":"function"},"metrics":{},"children":[
            {"frame":{"name":"outer","type":"function"},"metrics":{},"children":[
              {"frame":{"name":"inner","type":"function"},
               "metrics":{"bytes":4096,"flops":1500000000.0,"s":2.5,"vec":[1,2,3]},"children":[]}]}]},{}]"#,
    )
    .unwrap();
    let (_d2, dest2, _) = run(&twin, ProtonKind::Tree);
    assert_eq!(regions(&dest), regions(&dest2));
    assert_eq!(regions(&dest)[1].3["vec"], serde_json::json!([1, 2, 3]));
}

#[test]
fn root_only_gives_zero_rows() {
    let f = fixtures().join("generated_cpu/tree_empty_root_only_v3.9.0.hatchet");
    let (_d, _, rep) = run(&f, ProtonKind::Tree);
    assert_eq!(rep.count("rocpd_region"), 0);
}

#[test]
fn cycles_only_tree() {
    let f = fixtures()
        .join("constructed/tree_instrumentation_cycles_only_v3.7plus_CONSTRUCTED.hatchet");
    let (_d, dest, rep) = run(&f, ProtonKind::Tree);
    assert!(rep.notes[0].contains("cycles"));
    let rs = regions(&dest);
    let scope = rs.iter().find(|r| r.3.get("cycles").is_some()).unwrap();
    assert_eq!(scope.3["device_type"], "CUDA");
    assert!(scope.3["inclusive_cycles"].as_u64().unwrap() >= scope.3["cycles"].as_u64().unwrap());
    assert_eq!(
        (scope.2 - scope.1) as u64,
        scope.3["inclusive_cycles"].as_u64().unwrap()
    );
}

#[test]
fn edge_case_values_kept() {
    let f = fixtures().join("generated_cpu/tree_edgecases_v3.6.0.hatchet");
    let (_d, dest, _) = run(&f, ProtonKind::Tree);
    let rs = regions(&dest);
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0].0, "ünïcode ✓ \"quoted\" \\ back");
    assert_eq!(rs[0].3["big_u"].as_u64(), Some(9223372036854775813));
    assert_eq!(rs[0].3["nan_metric"], Value::Null);
    assert_eq!(rs[0].3["neg"], -3);
    assert_eq!(rs[0].3["str_metric"], "hello");
}

#[test]
fn special_frames_marked() {
    let f = fixtures().join("triton_test_fixtures/main_examples_triton.json");
    let (_d, dest, _) = run(&f, ProtonKind::Tree);
    let rs = regions(&dest);
    let s = rs
        .iter()
        .find(|r| r.0.starts_with("__proton_launch_metadata"))
        .unwrap();
    assert_eq!(s.3["kind"], "special");
}

#[test]
fn deep_tree_without_recursion() {
    let depth = 20_000;
    let mut s = String::from("[");
    for i in 0..depth {
        s.push_str(&format!(r#"{{"frame":{{"name":"n{i}"}},"children":["#));
    }
    s.push_str(r#"{"frame":{"name":"leaf"},"metrics":{"time (ns)":5,"count":1}}"#);
    for _ in 0..depth {
        s.push_str("]}");
    }
    s.push_str(",{}]");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("deep.hatchet");
    std::fs::write(&f, s).unwrap();
    let (_d, _, rep) = run(&f, ProtonKind::Tree);
    assert_eq!(rep.count("rocpd_region"), depth as u64 + 1);
}

#[test]
fn chrome_traces() {
    let f = fixtures().join("constructed/trace_kernels_v3.8_lanes_flows_CONSTRUCTED.chrome_trace");
    let (_d, dest, rep) = run(&f, ProtonKind::ChromeTrace);
    assert_eq!(rep.count("rocpd_region"), 3);
    assert!(rep.notes.iter().any(|n| n.contains("ph \"s\"")));
    let c = Connection::open(&dest).unwrap();
    let (start, end): (i64, i64) = c
        .query_row(
            "SELECT R.start, R.\"end\" FROM rocpd_region R JOIN rocpd_string S ON S.id = R.name_id \
             WHERE S.string = 'add_kernel'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((start, end), (41_000, 43_048));
    let lane: String = c
        .query_row(
            "SELECT name FROM rocpd_info_thread WHERE tid = 200007",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(lane, "GPU Stream 7");
    // 3.9 absolute time base.
    let f = fixtures().join("generated_cpu/trace_cpu_scopes_v3.9.0.chrome_trace");
    let (_d, dest, _) = run(&f, ProtonKind::ChromeTrace);
    let c = Connection::open(&dest).unwrap();
    let min: i64 = c
        .query_row("SELECT MIN(start) FROM rocpd_region", [], |r| r.get(0))
        .unwrap();
    assert_eq!(min, 1795954152369198548);
    // Empty 3.7 trace.
    let f = fixtures().join("generated_cpu/trace_cpu_scopes_only_v3.7.1_EMPTY.chrome_trace");
    let (_d, _, rep) = run(&f, ProtonKind::ChromeTrace);
    assert_eq!(rep.count("rocpd_region"), 0);
}

#[test]
fn bad_input_names_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[u8], ProtonKind, &str)] = &[
        ("notjson.hatchet", b"hello", ProtonKind::Tree, "byte 0"),
        (
            "trunc.hatchet",
            b"[{\"frame\": {\"name\": \"ROOT\"}, \"children\": [",
            ProtonKind::Tree,
            "byte 42",
        ),
        (
            "trunc.hatchet_msgpack",
            &[0x92, 0x83, 0xa5, b'f', b'r'],
            ProtonKind::TreeMsgpack,
            "byte 3",
        ),
        (
            "trunc.chrome_trace",
            b"{\"traceEvents\":[{\"ph\":",
            ProtonKind::ChromeTrace,
            "byte 22",
        ),
    ];
    for (name, bytes, kind, place) in cases {
        let f = dir.path().join(name);
        std::fs::write(&f, bytes).unwrap();
        let dest = dir.path().join(format!("{name}.db"));
        let e = import(&f, *kind, &dest).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains(place), "{name}: {e}");
        assert!(!dest.exists());
    }
}

#[test]
fn guid_is_deterministic() {
    let f = fixtures().join("real_gpu/tritonbench_proton_cuda.hatchet");
    let (_a, _, r1) = run(&f, ProtonKind::Tree);
    let (_b, _, r2) = run(&f, ProtonKind::Tree);
    assert_eq!(r1.guid, r2.guid);
    let f2 = fixtures().join("generated_cpu/tree_phases_v3.9.0.part_1.hatchet");
    let (_c, _, r3) = run(&f2, ProtonKind::Tree);
    assert_ne!(r1.guid, r3.guid);
}

#[test]
fn sniff_rejects_other_formats() {
    use rocpd_proton::sniff;
    let p = Path::new("x.json");
    assert_eq!(sniff(p, br#"{"rocprofiler-sdk-tool": []}"#), None);
    assert_eq!(sniff(p, b"Kernel_Name,Start_Timestamp\n"), None);
    assert_eq!(sniff(p, b""), None);
    assert_eq!(
        sniff(Path::new("a.chrome_trace"), b""),
        Some(ProtonKind::ChromeTrace)
    );
    assert_eq!(
        sniff(p, br#"[{"ph":"X","ts":1}]"#),
        Some(ProtonKind::ChromeTrace)
    );
    assert_eq!(
        sniff(p, b"\n[\n {\"children\": [], \"frame\": {}}]"),
        Some(ProtonKind::Tree)
    );
}
