//! End-to-end conversion of RocPD databases to Perfetto, checked with the official
//! Perfetto schema and against plain SQL on the inputs.

mod common;

use common::*;

#[test]
fn slice_counts_per_category_equal_database_rows_at_several_sizes_and_seeds() {
    for (seed, processes, iterations) in [(1, 1, 3), (2, 3, 25), (3, 2, 120)] {
        let tmp = tempfile::tempdir().unwrap();
        let inputs = generate(&tmp.path().join("in"), seed, processes, iterations);
        let out = convert(&inputs, &tmp.path().join("out"), &[]);
        let d = decode(&out);
        let (slices, instants) = expected(&inputs);
        assert_eq!(d.slices_by_category, slices, "seed {seed}");
        assert_eq!(d.instants_by_category, instants, "seed {seed}");
        assert_eq!(d.flows, expected_flows(&inputs), "seed {seed}");
        assert_eq!(d.processes.len(), processes as usize);
    }
}

#[test]
fn fixture_has_the_track_layout_rocpd_users_know() {
    let inputs: Vec<_> = ["node-00_4000", "node-00_4074", "node-01_4037"]
        .iter()
        .map(|n| std::path::PathBuf::from(format!("../../fixtures/generated/{n}_results.db")))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let d = decode(&convert(&inputs, tmp.path(), &[]));
    // One process track per process, named after the program, with its pid.
    assert_eq!(
        d.processes
            .iter()
            .map(|(p, n)| (*p, n.as_str()))
            .collect::<Vec<_>>(),
        vec![(4000, "python3"), (4037, "python3"), (4074, "python3")]
    );
    // Main thread named after the program, the others THREAD n.
    for pid in [4000, 4037, 4074] {
        assert!(
            d.threads.contains(&(pid, pid, "python3".to_string())),
            "{:?}",
            d.threads
        );
    }
    assert!(d.threads.iter().any(|(_, _, n)| n == "THREAD 1"));
    assert!(d.track_names.contains("STREAM [0]"));
    assert!(d.track_names.contains("MEMORY ALLOCATIONS"));
    for name in [
        "COPY BYTES to Agent [1] (GPU)",
        "ALLOCATE BYTES on Agent [1] (GPU)",
        "Agent [1] PMC SQ_WAVES",
    ] {
        assert!(
            d.counter_track_names.contains(name),
            "{name} missing: {:?}",
            d.counter_track_names
        );
    }
    assert!(d.counter_samples > 0);
    for a in [
        "begin_ns",
        "end_ns",
        "delta_ns",
        "tid",
        "kind",
        "operation",
        "corr_id",
        "agent",
        "copy_bytes",
        "grid_size",
    ] {
        assert!(d.annotation_names.contains(a), "annotation {a} missing");
    }
    // ROCTx messages name marker slices, not the API function.
    let markers = &d.names_by_category["marker_api"];
    assert!(!markers.contains("roctxRangePushA"), "{markers:?}");
    let (slices, _) = expected(&inputs);
    assert_eq!(d.slices_by_category, slices);
    assert_eq!(d.flows, expected_flows(&inputs));
}

#[test]
fn group_by_queue_puts_kernels_on_queue_tracks_and_copies_on_agent_thread_tracks() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 5, 1, 10);
    let d = decode(&convert(
        &inputs,
        &tmp.path().join("out"),
        &["--group-by-queue"],
    ));
    assert!(
        d.track_names
            .iter()
            .any(|n| n.starts_with("COMPUTE Agent [1] QUEUE [0] GPU")),
        "{:?}",
        d.track_names
    );
    assert!(
        d.track_names
            .iter()
            .any(|n| n.starts_with("COPY to AGENT [")),
        "{:?}",
        d.track_names
    );
    assert!(!d.track_names.iter().any(|n| n.starts_with("STREAM [")));
    let (slices, _) = expected(&inputs);
    assert_eq!(d.slices_by_category, slices);
}

#[test]
fn agent_index_value_changes_the_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 6, 1, 5);
    let d = decode(&convert(
        &inputs,
        &tmp.path().join("out"),
        &["--agent-index-value", "type-relative"],
    ));
    assert!(
        d.counter_track_names
            .iter()
            .any(|n| n.starts_with("COPY BYTES to GPU [")),
        "{:?}",
        d.counter_track_names
    );
}

#[test]
fn kernel_rename_uses_the_enclosing_range_name() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 7, 1, 10);
    let plain = decode(&convert(&inputs, &tmp.path().join("a"), &[]));
    let renamed = decode(&convert(
        &inputs,
        &tmp.path().join("b"),
        &["--kernel-rename"],
    ));
    let (p, r) = (
        &plain.names_by_category["kernel_dispatch"],
        &renamed.names_by_category["kernel_dispatch"],
    );
    assert_ne!(p, r);
    let markers = &renamed.names_by_category["marker_api"];
    assert!(
        r.iter().any(|n| markers.contains(n)),
        "no kernel took a range name: {r:?}"
    );
    assert_eq!(plain.slices_by_category, renamed.slices_by_category);
}

#[test]
fn no_annotations_makes_smaller_files_with_the_same_slices() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 8, 2, 10);
    let a = convert(&inputs, &tmp.path().join("a"), &[]);
    let b = convert(&inputs, &tmp.path().join("b"), &["--no-annotations"]);
    let (da, db) = (decode(&a), decode(&b));
    assert!(db.annotation_names.is_empty());
    assert_eq!(da.slices_by_category, db.slices_by_category);
    assert!(std::fs::metadata(&b).unwrap().len() * 2 < std::fs::metadata(&a).unwrap().len());
}

#[test]
fn output_is_deterministic_and_the_same_with_or_without_a_decode_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 9, 3, 10);
    let a = std::fs::read(convert(&inputs, &tmp.path().join("a"), &["--threads", "1"])).unwrap();
    let b = std::fs::read(convert(&inputs, &tmp.path().join("b"), &["--threads", "2"])).unwrap();
    let c = std::fs::read(convert(&inputs, &tmp.path().join("c"), &[])).unwrap();
    assert!(a == b && b == c);
}

#[test]
fn inputs_are_left_untouched_and_nothing_is_written_beside_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    let inputs = generate(&dir, 10, 2, 5);
    let before: Vec<_> = inputs
        .iter()
        .map(|p| {
            (
                std::fs::read(p).unwrap(),
                std::fs::metadata(p).unwrap().modified().unwrap(),
            )
        })
        .collect();
    let listing = |d: &std::path::Path| {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let files_before = listing(&dir);
    convert(std::slice::from_ref(&dir), &tmp.path().join("out"), &[]);
    let after: Vec<_> = inputs
        .iter()
        .map(|p| {
            (
                std::fs::read(p).unwrap(),
                std::fs::metadata(p).unwrap().modified().unwrap(),
            )
        })
        .collect();
    assert!(before == after, "an input changed");
    assert_eq!(files_before, listing(&dir));
}

#[test]
fn the_report_counts_every_event_in_and_out() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 11, 2, 8);
    let report = tmp.path().join("report.json");
    convert(
        &inputs,
        &tmp.path().join("out"),
        &["--report", report.to_str().unwrap()],
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(v["rows_in"], v["outputs"][0]["rows"]);
    let (slices, instants) = expected(&inputs);
    let events: u64 = v["rows_in"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "pmc_value")
        .map(|(_, n)| n.as_u64().unwrap())
        .sum();
    assert_eq!(
        events,
        slices.values().sum::<u64>() + instants.values().sum::<u64>()
    );
}

#[test]
fn info_reports_processes_and_row_counts() {
    let o = rocpd(&["info", "--json", "-i", "../../fixtures/generated"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["processes"].as_array().unwrap().len(), 3);
    let dbs: Vec<_> = std::fs::read_dir("../../fixtures/generated")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
        .collect();
    let (slices, _) = expected(&dbs);
    assert_eq!(
        v["rows"]["kernel_dispatch"].as_u64(),
        slices.get("kernel_dispatch").copied()
    );
    assert!(v["time_span_ns"]["duration"].as_i64().unwrap() > 0);
}

/// The suffixed user tables of a RocPD database.
fn user_tables(conn: &rusqlite::Connection) -> Vec<String> {
    let mut st = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd\\_%' ESCAPE '\\'")
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn absent_and_empty_tables_are_tolerated() {
    let tmp = tempfile::tempdir().unwrap();
    let db = generate(&tmp.path().join("in"), 12, 1, 5).remove(0);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    let tables = user_tables(&conn);
    for t in &tables {
        // No args, samples, tracks, PMC values or copies at all; no allocations left.
        if [
            "rocpd_arg_",
            "rocpd_sample_",
            "rocpd_track_",
            "rocpd_pmc_event_",
            "rocpd_memory_copy_",
            "rocpd_info_pmc_",
        ]
        .iter()
        .any(|p| t.starts_with(p))
        {
            conn.execute_batch(&format!("DROP TABLE \"{t}\"")).unwrap();
        }
        if t.starts_with("rocpd_memory_allocate_") {
            conn.execute(&format!("DELETE FROM \"{t}\""), []).unwrap();
        }
        if t.starts_with("rocpd_info_thread_") {
            conn.execute(&format!("UPDATE \"{t}\" SET name = NULL"), [])
                .unwrap();
        }
    }
    drop(conn);
    let d = decode(&convert(
        std::slice::from_ref(&db),
        &tmp.path().join("out"),
        &[],
    ));
    assert!(!d.slices_by_category.contains_key("memory_copy"));
    assert!(!d.slices_by_category.contains_key("memory_allocation"));
    assert!(d.instants_by_category.is_empty());
    assert!(d.slices_by_category["kernel_dispatch"] > 0);
    assert!(
        d.threads.iter().any(|(_, _, n)| n == "THREAD 1"),
        "{:?}",
        d.threads
    );
}

#[test]
fn a_merged_database_with_several_table_sets_converts_like_its_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let parts = generate(&tmp.path().join("in"), 13, 2, 6);
    let merged = tmp.path().join("merged.db");
    let conn = rusqlite::Connection::open(&merged).unwrap();
    for (i, p) in parts.iter().enumerate() {
        conn.execute(
            &format!("ATTACH DATABASE ?1 AS p{i}"),
            [p.to_str().unwrap()],
        )
        .unwrap();
        let names: Vec<String> = {
            let mut st = conn
                .prepare(&format!("SELECT name FROM p{i}.sqlite_master WHERE type = 'table' AND name LIKE 'rocpd\\_%' ESCAPE '\\'"))
                .unwrap();
            st.query_map([], |r| r.get(0))
                .unwrap()
                .map(|r| r.unwrap())
                .collect()
        };
        for n in names {
            conn.execute_batch(&format!(
                "CREATE TABLE main.\"{n}\" AS SELECT * FROM p{i}.\"{n}\""
            ))
            .unwrap();
        }
        conn.execute_batch(&format!("DETACH DATABASE p{i}"))
            .unwrap();
    }
    drop(conn);
    let whole = decode(&convert(&[merged], &tmp.path().join("a"), &[]));
    let split = decode(&convert(&parts, &tmp.path().join("b"), &[]));
    assert_eq!(whole.slices_by_category, split.slices_by_category);
    assert_eq!(whole.instants_by_category, split.instants_by_category);
    assert_eq!(whole.flows, split.flows);
    assert_eq!(whole.processes, split.processes);
}

#[test]
fn parquet_datasets_list_every_table_with_the_input_row_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("in"), 14, 2, 6);
    let mut args = vec![
        "convert".to_string(),
        "-q".into(),
        "-f".into(),
        "parquet".into(),
        "-o".into(),
        "p".into(),
        "-d".into(),
    ];
    args.push(tmp.path().join("out").display().to_string());
    args.push("-i".into());
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rocpd(&refs);
    assert!(o.status.success(), "{}", stderr(&o));
    let ds = tmp.path().join("out/p_results.parquet");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ds.join("_metadata.json")).unwrap()).unwrap();
    let rows = |t: &str| -> u64 {
        meta["tables"][t]["rows"]
            .as_u64()
            .unwrap_or_else(|| panic!("table {t} missing: {meta}"))
    };
    assert_eq!(
        rows("kernels"),
        sql_count(&inputs, "SELECT COUNT(*) FROM {rocpd_kernel_dispatch}")
    );
    assert_eq!(
        rows("memory_copies"),
        sql_count(&inputs, "SELECT COUNT(*) FROM {rocpd_memory_copy}")
    );
    let run = meta["runs"][0]["run"].as_str().unwrap();
    assert!(ds
        .join(format!("kernels/part-{run}-00000.parquet"))
        .exists());
    assert!(ds
        .join(format!("processes/part-{run}-00000.parquet"))
        .exists());
    assert!(ds.join(format!("_runs/{run}.json")).exists());
}
