//! Hostile input: wrong JSON types, out-of-range numbers, byte-order marks, unrecognised
//! files. Every input is built here, in a temporary directory.

use std::path::{Path, PathBuf};

use rocpd_proton::{import, sniff, unrecognised_reason, ImportReport, ProtonKind};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn try_import(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    kind: ProtonKind,
) -> Result<ImportReport, String> {
    let p = write(dir, name, bytes);
    let dest = dir.join(format!("{name}.db"));
    let r = import(&p, kind, &dest).map_err(|e| e.to_string());
    if r.is_err() {
        assert!(!dest.exists());
    } else {
        std::fs::remove_file(&dest).unwrap();
    }
    r
}

fn error(dir: &Path, name: &str, bytes: &[u8], kind: ProtonKind) -> String {
    match try_import(dir, name, bytes, kind) {
        Ok(_) => panic!("{name}: no error for {}", String::from_utf8_lossy(bytes)),
        Err(e) => {
            assert!(e.contains(name), "{e}");
            e
        }
    }
}

#[test]
fn a_chrome_trace_event_larger_than_the_bound_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    let t = ProtonKind::ChromeTrace;
    let doc = |name_bytes: usize| {
        format!(
            r#"{{"traceEvents": [{{"name": "{}", "ph": "X", "ts": 1, "dur": 2, "pid": 0, "tid": 0}}]}}"#,
            "n".repeat(name_bytes)
        )
    };
    // An event of 15 MiB is read, one of 17 MiB refused, with the file and the byte.
    assert!(try_import(d, "ok.chrome_trace", doc(15 << 20).as_bytes(), t).is_ok());
    let e = error(d, "big.chrome_trace", doc(17 << 20).as_bytes(), t);
    assert!(
        e.contains("byte ") && e.contains("larger than 16 MiB"),
        "{e}"
    );
}

#[test]
fn chrome_trace_shapes_are_checked() {
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    let t = ProtonKind::ChromeTrace;
    let e = error(d, "a.chrome_trace", br#"{"traceEvents": 5}"#, t);
    assert!(
        e.contains("document 0") && e.contains("expected an array"),
        "{e}"
    );
    let e = error(d, "b.chrome_trace", br#"{"traceEvents": {"ph": "X"}}"#, t);
    assert!(e.contains("expected an array"), "{e}");
    let e = error(d, "c.chrome_trace", br#"{"displayTimeUnit": "ns"}"#, t);
    assert!(e.contains("traceEvents"), "{e}");
    let e = error(d, "d.chrome_trace", br#"{"traceEvents": [5]}"#, t);
    assert!(
        e.contains("document 0, event 0") && e.contains("object"),
        "{e}"
    );
    let e = error(d, "e.chrome_trace", br#"{"traceEvents": [{"ph": 88}]}"#, t);
    assert!(e.contains("\"ph\""), "{e}");
    let e = error(
        d,
        "f.chrome_trace",
        br#"{"traceEvents": [{"ph": "X", "ts": 1, "dur": "long"}]}"#,
        t,
    );
    assert!(e.contains("event 0") && e.contains("\"dur\""), "{e}");
    let e = error(
        d,
        "g.chrome_trace",
        br#"{"traceEvents": [{"ph": "X", "ts": 1, "pid": [1]}]}"#,
        t,
    );
    assert!(e.contains("\"pid\""), "{e}");
    // The second of two concatenated documents.
    let e = error(
        d,
        "h.chrome_trace",
        b"{\"traceEvents\": []}\n{\"traceEvents\": null}",
        t,
    );
    assert!(e.contains("document 1"), "{e}");
    // Still fine: an empty array, a bare event array, an empty file.
    for (name, text) in [
        ("ok1.chrome_trace", &br#"{"traceEvents": []}"#[..]),
        (
            "ok2.chrome_trace",
            br#"[{"ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]"#,
        ),
        ("ok3.chrome_trace", b""),
    ] {
        try_import(d, name, text, t).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn chrome_trace_times_and_ids_out_of_range_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    let t = ProtonKind::ChromeTrace;
    let ev = |fields: &str| {
        format!(r#"{{"traceEvents": [{{"ph": "X", "pid": 1, "tid": 1, {fields}}}]}}"#)
    };
    let cases = [
        (ev(r#""ts": 1e300, "dur": 1"#), "\"ts\""),
        (ev(r#""ts": 1, "dur": 1e300"#), "\"dur\""),
        (
            r#"{"baseTimeNanoseconds": 9223372036854775000, "traceEvents": [{"ph": "X", "ts": 1000, "dur": 1}]}"#
                .to_string(),
            "baseTimeNanoseconds",
        ),
        (
            r#"{"baseTimeNanoseconds": 18446744073709551615, "traceEvents": []}"#.to_string(),
            "baseTimeNanoseconds",
        ),
        (ev(r#""ts": 9223372036854000, "dur": 1000"#), "end time"),
        (
            r#"{"traceEvents": [{"ph": "X", "ts": 1, "pid": 18446744073709551616}]}"#.to_string(),
            "\"pid\"",
        ),
        (
            r#"{"traceEvents": [{"ph": "X", "ts": 1, "tid": 1.5}]}"#.to_string(),
            "\"tid\"",
        ),
    ];
    for (i, (text, what)) in cases.iter().enumerate() {
        let name = format!("t{i}.chrome_trace");
        let e = error(d, &name, text.as_bytes(), t);
        assert!(e.contains(what), "{text}: {e}");
    }
    // Near the limits, but fitting: kept exactly.
    let text = r#"{"baseTimeNanoseconds": 9223372036854000000, "traceEvents": [{"ph": "X", "ts": 700, "dur": 0.5, "pid": 1, "tid": 1, "name": "k"}]}"#;
    let p = write(d, "near.chrome_trace", text.as_bytes());
    let dest = d.join("near.db");
    import(&p, t, &dest).unwrap();
    let c = rusqlite::Connection::open(&dest).unwrap();
    let (s, e): (i64, i64) = c
        .query_row("SELECT start, \"end\" FROM rocpd_region", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((s, e), (9223372036854700000, 9223372036854700500));
}

#[test]
fn chrome_trace_with_a_byte_order_mark_is_read() {
    let d = tempfile::tempdir().unwrap();
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend(
        br#"{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "name": "k"}]}"#,
    );
    let p = write(d.path(), "bom.chrome_trace", &bytes);
    assert_eq!(sniff(&p, &bytes), Some(ProtonKind::ChromeTrace));
    let rep = try_import(
        d.path(),
        "bom.chrome_trace",
        &bytes,
        ProtonKind::ChromeTrace,
    )
    .unwrap();
    assert_eq!(rep.count("rocpd_region"), 1);
    // Offsets count the mark.
    let mut bad = b"\xef\xbb\xbf".to_vec();
    bad.extend(br#"{"traceEvents": [x]}"#);
    let e = error(
        d.path(),
        "badbom.chrome_trace",
        &bad,
        ProtonKind::ChromeTrace,
    );
    assert!(e.contains("byte 20"), "{e}");
}

#[test]
fn tree_shapes_are_checked() {
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    let t = ProtonKind::Tree;
    let node = |extra: &str| {
        format!(
            r#"[{{"frame": {{"name": "ROOT"}}, "metrics": {{}}, "children": [{{"frame": {{"name": "k"}}, {extra}}}]}}, {{}}]"#
        )
    };
    let cases = [
        (node(r#""metrics": {}, "children": 5"#), "\"children\""),
        (
            node(r#""metrics": {}, "children": {"a": 1}"#),
            "\"children\"",
        ),
        (node(r#""metrics": [1, 2], "children": []"#), "\"metrics\""),
        (
            r#"[{"frame": 5, "metrics": {}, "children": []}]"#.to_string(),
            "\"frame\"",
        ),
        (
            r#"[{"frame": {"name": "ROOT"}, "children": []}, 5]"#.to_string(),
            "device metadata",
        ),
        (
            r#"[{"frame": {"name": "ROOT"}, "children": []}, {"HIP": [1]}]"#.to_string(),
            "device metadata",
        ),
        (
            r#"[{"frame": {"name": "ROOT"}, "children": []}, {"HIP": {"0": 5}}]"#.to_string(),
            "device metadata",
        ),
        (
            node(r#""metrics": {"time (ns)": "soon"}, "children": []"#),
            "time (ns)",
        ),
        (
            node(r#""metrics": {"count": [1]}, "children": []"#),
            "count",
        ),
    ];
    for (i, (text, what)) in cases.iter().enumerate() {
        let name = format!("t{i}.hatchet");
        let e = error(d, &name, text.as_bytes(), t);
        assert!(e.contains(what), "{text}: {e}");
    }
    // Still fine: null children and metrics, no device table.
    let ok = node(r#""metrics": null, "children": null"#);
    try_import(d, "ok.hatchet", ok.as_bytes(), t).unwrap();
    // A key the reader has no use for is passed over, however deep its value (read whole
    // it was refused past 256 levels).
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    let ignored = node(&format!(
        r#""metrics": {{}}, "junk": {deep}, "children": []"#
    ));
    try_import(d, "ignored.hatchet", ignored.as_bytes(), t).unwrap();
    // What is kept whole (here the device table) is refused past 16 MiB of input.
    let device = |x: String| {
        format!(
            r#"[{{"frame": {{"name": "ROOT"}}, "children": []}}, {{"HIP": {{"0": {{"arch": "gfx90a", "x": {x}}}}}}}]"#
        )
    };
    let kib = format!("\"{}\"", "a".repeat(1024));
    let many = format!("[{}]", vec![kib; 17 << 10].join(","));
    let e = error(d, "big.hatchet", device(many).as_bytes(), t);
    assert!(
        e.contains("device metadata (element 1) is larger than 16 MiB"),
        "{e}"
    );
    // One string past it is refused where it starts, before it is read whole.
    let one = format!("\"{}\"", "a".repeat(17 << 20));
    let e = error(d, "one.hatchet", device(one).as_bytes(), t);
    assert!(e.contains("byte 84: a string larger than 16 MiB"), "{e}");
}

#[test]
fn tree_metric_overflow_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    let t = ProtonKind::Tree;
    let tree = |a: &str, b: &str| {
        format!(
            r#"[{{"frame": {{"name": "ROOT"}}, "metrics": {{}}, "children": [
                {{"frame": {{"name": "a"}}, "metrics": {{"time (ns)": {a}, "count": 1}}, "children": []}},
                {{"frame": {{"name": "b"}}, "metrics": {{"time (ns)": {b}, "count": 1}}, "children": []}}]}}, {{}}]"#
        )
    };
    // A node whose own end overflows the time columns is named first (it is written as
    // soon as it ends), before its parent's sum would overflow u64.
    let e = error(
        d,
        "sum.hatchet",
        tree("18446744073709551615", "2").as_bytes(),
        t,
    );
    assert!(
        e.contains("node 1 (\"a\")") && e.contains("does not fit"),
        "{e}"
    );
    // The sum of the children's cycles overflows u64 while the times stay small.
    let cycles = r#"[{"frame": {"name": "ROOT"}, "children": [
        {"frame": {"name": "a"}, "metrics": {"time (ns)": 1, "cycles": 18446744073709551615}},
        {"frame": {"name": "b"}, "metrics": {"time (ns)": 1, "cycles": 2}}]}]"#;
    let e = error(d, "cycles.hatchet", cycles.as_bytes(), t);
    assert!(
        e.contains("node 2 (\"b\")")
            && e.contains("inclusive cycles")
            && e.contains("does not fit"),
        "{e}"
    );
    // Fits u64 but not the signed time columns.
    let e = error(
        d,
        "end.hatchet",
        tree("9223372036854775807", "1").as_bytes(),
        t,
    );
    assert!(
        e.contains("node 2 (\"b\")") && e.contains("does not fit"),
        "{e}"
    );
    // A unit conversion that overflows, and a float beyond u64.
    let one = |m: &str| {
        format!(
            r#"[{{"frame": {{"name": "ROOT"}}, "children": [{{"frame": {{"name": "k"}}, "metrics": {{{m}}}}}]}}]"#
        )
    };
    let e = error(
        d,
        "unit.hatchet",
        one(r#""time (s)": 18446744074"#).as_bytes(),
        t,
    );
    assert!(e.contains("node 1") && e.contains("time (s)"), "{e}");
    let e = error(d, "float.hatchet", one(r#""count": 1e30"#).as_bytes(), t);
    assert!(e.contains("count") && e.contains("does not fit"), "{e}");
    let e = error(d, "big.hatchet", one(r#""count": 1e400"#).as_bytes(), t);
    assert!(e.contains("out of the range"), "{e}");
    // The largest tree that fits is kept exactly.
    let rep = try_import(
        d,
        "max.hatchet",
        tree("9223372036854775806", "1").as_bytes(),
        t,
    )
    .unwrap();
    assert_eq!(rep.count("rocpd_region"), 2);
}

#[test]
fn unrecognised_proton_files_say_why() {
    let p = |n: &str| Path::new("/x").join(n);
    let r = |n: &str, h: &[u8]| unrecognised_reason(&p(n), h);
    assert_eq!(r("a.hatchet", b""), Some("empty file".into()));
    assert_eq!(r("a.chrome_trace", b""), None);
    assert_eq!(
        r("a.hatchet", br#"[{"name": "x"}]"#),
        Some("JSON without a \"frame\" key in the first 8 KiB (not a Proton tree)".into())
    );
    // An object named as a chrome trace is one: its "traceEvents" may come after long
    // leading keys, and the reader refuses it, naming the document, if it has none.
    assert_eq!(r("a.chrome_trace", br#"{"events": []}"#), None);
    let d = tempfile::tempdir().unwrap();
    let e = error(
        d.path(),
        "a.chrome_trace",
        br#"{"events": []}"#,
        ProtonKind::ChromeTrace,
    );
    assert!(
        e.contains("document 0") && e.contains("\"traceEvents\""),
        "{e}"
    );
    let late = format!(
        r#"{{"meta": "{}", "traceEvents": [{{"ph": "X", "ts": 1, "dur": 1, "name": "k"}}]}}"#,
        "x".repeat(9000)
    );
    let head = &late.as_bytes()[..8192];
    assert_eq!(
        sniff(&p("late.chrome_trace"), head),
        Some(ProtonKind::ChromeTrace)
    );
    assert_eq!(
        r("a.part_0.hatchet", &[0x1f, 0x8b, 8]),
        Some("gzip-compressed; Proton writes plain files (gunzip it first)".into())
    );
    assert_eq!(
        r("a.hatchet_msgpack", br#"{"x": 1}"#),
        Some("JSON text, not MessagePack".into())
    );
    assert_eq!(
        r("a.chrome_trace", b"hello"),
        Some("text, not JSON (a chrome trace expected)".into())
    );
    assert_eq!(r("a.hatchet", br#"[{"frame": {"name": "ROOT"}}]"#), None);
    assert_eq!(r("a.json", b""), None);
}

#[test]
fn tree_metrics_as_text_are_exact_and_metrics_named_as_computed_fields_are_kept() {
    let d = tempfile::tempdir().unwrap();
    let text = r#"[{"frame": {"name": "ROOT"}, "metrics": {}, "children": [{"frame": {"name": "k"},
        "metrics": {"time (ns)": "9007199254740993", "count": "18446744073709551615",
                    "kind": "user", "depth": 99, "synthetic_time": "x"}, "children": []}]}, {}]"#;
    let p = write(d.path(), "m.hatchet", text.as_bytes());
    let dest = d.path().join("m.db");
    import(&p, ProtonKind::Tree, &dest).unwrap();
    let c = rusqlite::Connection::open(&dest).unwrap();
    let ext: String = c
        .query_row(
            "SELECT E.extdata FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id \
             WHERE R.\"end\" - R.start = 9007199254740993",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let ext: serde_json::Value = serde_json::from_str(&ext).unwrap();
    assert_eq!(ext["exclusive_time_ns"], 9007199254740993u64, "{ext}");
    assert_eq!(ext["count"], 18446744073709551615u64, "{ext}");
    assert_eq!(ext["kind"], "kernel", "{ext}");
    assert_eq!(ext["metric:kind"], "user", "{ext}");
    assert_eq!(ext["metric:depth"], 99, "{ext}");
    assert_eq!(ext["metric:synthetic_time"], "x", "{ext}");
    assert_eq!(ext["synthetic_time"], true, "{ext}");
}

/// A chain of `depth` nodes under ROOT, written as Proton writes trees: sorted keys and
/// four-space indents, so each node's `children` comes before its `frame`.
fn sorted_chain(depth: usize, leaf_time: u64) -> String {
    let mut node = format!(
        "{{\n    \"children\": [],\n    \"frame\": {{\"name\": \"leaf\", \"type\": \"function\"}},\n    \"metrics\": {{\"count\": 1, \"time (ns)\": {leaf_time}}}\n}}"
    );
    for d in (0..depth).rev() {
        let indented = node.replace('\n', &format!("\n{}", " ".repeat(8)));
        node = format!(
            "{{\n    \"children\": [\n        {indented}\n    ],\n    \"frame\": {{\"name\": \"f{d}\", \"type\": \"python\"}},\n    \"metrics\": {{}}\n}}"
        );
    }
    format!("[{node}, {{}}]")
}

/// A tree whose first `frame` lies past the first 8 KiB (sorted keys put every `children`
/// first, and a deep leftmost path fills the head) is still a tree; before, it was taken
/// for a database, or passed over in a directory (D146).
#[test]
fn a_deep_tree_written_with_sorted_keys_is_recognised() {
    let d = tempfile::tempdir().unwrap();
    let text = sorted_chain(60, 5);
    assert!(!text.as_bytes()[..8192]
        .windows(7)
        .any(|w| w == b"\"frame\""));
    let p = write(d.path(), "deep.hatchet", text.as_bytes());
    assert_eq!(sniff(&p, &text.as_bytes()[..8192]), Some(ProtonKind::Tree));
    let r = try_import(d.path(), "deep.hatchet", text.as_bytes(), ProtonKind::Tree).unwrap();
    // The 60 nodes of the chain and its leaf.
    assert_eq!(r.count("rocpd_region"), 61, "{:?}", r.rows);
}

/// MessagePack trees follow the rules of JSON ones: a bare root map (named
/// `*.hatchet_msgpack`) and a top array of more than two elements are trees.
#[test]
fn messagepack_trees_take_the_shapes_json_trees_take() {
    // {"frame": {"name": "ROOT"}, "metrics": {}, "children": [
    //   {"frame": {"name": "k"}, "metrics": {"time (ns)": 7}, "children": []}]}
    let mut root = vec![0x83];
    root.extend_from_slice(b"\xa5frame\x81\xa4name\xa4ROOT\xa7metrics\x80");
    root.extend_from_slice(b"\xa8children\x91\x83");
    root.extend_from_slice(b"\xa5frame\x81\xa4name\xa1k");
    root.extend_from_slice(b"\xa7metrics\x81\xa9time (ns)\x07");
    root.extend_from_slice(b"\xa8children\x90");
    let d = tempfile::tempdir().unwrap();
    let bare = write(d.path(), "bare.hatchet_msgpack", &root);
    assert_eq!(sniff(&bare, &root), Some(ProtonKind::TreeMsgpack));
    let r = try_import(
        d.path(),
        "bare.hatchet_msgpack",
        &root,
        ProtonKind::TreeMsgpack,
    )
    .unwrap();
    assert_eq!(r.count("rocpd_region"), 1);
    // [root, {}, {}]
    let mut three = vec![0x93];
    three.extend_from_slice(&root);
    three.extend_from_slice(&[0x80, 0x80]);
    let p = write(d.path(), "three.hatchet_msgpack", &three);
    assert_eq!(sniff(&p, &three), Some(ProtonKind::TreeMsgpack));
    let r = try_import(
        d.path(),
        "three.hatchet_msgpack",
        &three,
        ProtonKind::TreeMsgpack,
    )
    .unwrap();
    assert_eq!(r.count("rocpd_region"), 1);
    assert!(
        r.notes.iter().any(|n| n.contains("extra top-level")),
        "{:?}",
        r.notes
    );
    // A bare map, or a longer array, named otherwise is not taken for a tree: other
    // MessagePack may have `frame` keys. The name's case does not matter.
    let other = write(d.path(), "x.bin", &root);
    assert_eq!(sniff(&other, &root), None);
    assert_eq!(sniff(&d.path().join("frames.msgpack"), &three), None);
    let upper = write(d.path(), "BARE.HATCHET_MSGPACK", &root);
    assert_eq!(sniff(&upper, &root), Some(ProtonKind::TreeMsgpack));
}

/// Only a file named as a tree is taken for one by a `children` first key: other JSON
/// has `children` too, and a directory walk must pass it over, not fail on it (D146).
#[test]
fn children_first_makes_a_tree_only_of_a_file_named_as_one() {
    let d = tempfile::tempdir().unwrap();
    for text in [
        &br#"{"children": [{"children": [], "id": 1}], "id": 0}"#[..],
        br#"[{"children": [{"x": 1}], "name": "a"}]"#,
        br#"{"children": 5, "a": 1}"#,
    ] {
        for name in ["tree.json", "cfg", "x.chrome_trace"] {
            let p = write(d.path(), name, text);
            assert_ne!(sniff(&p, text), Some(ProtonKind::Tree), "{name}");
        }
        let p = write(d.path(), "t.hatchet", text);
        assert_eq!(sniff(&p, text), Some(ProtonKind::Tree));
    }
}

/// Two files of one name and size whose first 64 KiB are the same but whose later
/// bytes differ (two runs of one program) are two processes: the guid hashes the whole
/// content. A true copy keeps the guid.
#[test]
fn the_guid_covers_the_whole_file() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (sorted_chain(400, 1111), sorted_chain(400, 9999));
    assert!(a.len() > 70_000 && a.len() == b.len() && a[..65536] == b[..65536]);
    let dir = |n: &str| {
        let p = d.path().join(n);
        std::fs::create_dir(&p).unwrap();
        p
    };
    let (r1, r2, r3) = (dir("r1"), dir("r2"), dir("r3"));
    // (guid, pid): the pid hashes the guid too, so the two runs are two processes in a
    // trace of both.
    let guid = |dir: &Path, text: &str| {
        let p = write(dir, "proton.hatchet", text.as_bytes());
        let s = rocpd_proton::ProtonSource::open(&p, ProtonKind::Tree).unwrap();
        let pid = rocpd_pipeline::Source::catalog(&s, 0).unwrap().processes[0].pid;
        (s.guid().to_string(), pid)
    };
    let (g1, g2, g3) = (guid(&r1, &a), guid(&r2, &b), guid(&r3, &a));
    assert_ne!(g1.0, g2.0);
    assert_ne!(g1.1, g2.1);
    assert_eq!(g1, g3);
}

/// A node giving `metrics` (or `frame`) twice is refused at the second: the second
/// silently replaced the first's values (D146).
#[test]
fn a_key_given_twice_in_a_node_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let text = br#"[{"frame": {"name": "ROOT"}, "metrics": {}, "children": [{"frame": {"name": "x"}, "metrics": {"time (ns)": 5}, "metrics": {"count": 2}, "children": []}]}, {}]"#;
    let e = error(d.path(), "twice.hatchet", text, ProtonKind::Tree);
    assert!(e.contains("\"metrics\" given twice in one node"), "{e}");
    assert!(e.contains("byte"), "{e}");
}
