//! Cross-check with the project's RocPD generator: a generated database is written out as a
//! rocprofv3 CSV set (the generator's CSV mode, plain SQL), imported back, and compared
//! table by table.

mod common;

use common::*;

#[test]
fn generated_database_exported_to_csv_imports_back() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = rocpd_gen::GenConfig {
        seed: 3,
        processes: 1,
        iterations: 12,
        ..Default::default()
    };
    let dbs = rocpd_gen::generate(&cfg, &tmp.path().join("gen")).unwrap();
    let (_, n) = rocpd_gen::export_csv(&dbs[0], &tmp.path().join("csv")).unwrap();
    let (api_rows, markers, kernels, copies, allocs, scratch, counters) = (
        n.api,
        n.markers,
        n.kernels,
        n.copies,
        n.allocations,
        n.scratch,
        n.counters,
    );
    assert!(
        kernels > 20
            && api_rows > 50
            && markers > 5
            && copies > 5
            && allocs > 0
            && scratch > 0
            && counters > 20
    );

    let imp = import_one(&[tmp.path().join("csv")]);
    imp.check_integrity();
    let c = imp.reader_counts();
    let streamed = imp.stream_all();
    for (t, n) in &c {
        assert_eq!(streamed.get(t).copied().unwrap_or(0), *n, "streamed {t}");
    }
    assert_eq!(c["region"], api_rows as u64);
    assert_eq!(c["marker"], markers as u64);
    assert_eq!(c["kernel_dispatch"], kernels as u64);
    assert_eq!(c["memory_copy"], copies as u64);
    assert_eq!(c["memory_allocation"], (allocs + scratch) as u64);
    assert_eq!(c["pmc_value"], counters as u64);
    // The generator's own database, read by the same reader, agrees (samples aside: the
    // CSV layout has no place for them).
    let gen = rocpd_db::Database::open(&dbs[0]).unwrap();
    let g: std::collections::HashMap<_, _> = gen
        .count_rows()
        .unwrap()
        .into_iter()
        .map(|(t, n)| (t.name(), n))
        .collect();
    for t in [
        "region",
        "marker",
        "kernel_dispatch",
        "memory_copy",
        "memory_allocation",
    ] {
        assert_eq!(c[t], g[t], "{t}");
    }

    // Same rows, not just the same counts.
    let q = |sql: &str| -> i64 {
        let conn = imp.conn();
        conn.execute(&format!("ATTACH '{}' AS g", dbs[0].display()), [])
            .unwrap();
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    };
    // Dispatches: id, agent, queue, stream, times, kernel, name, correlation.
    let key = "K.id, K.agent_id, K.queue_id, K.stream_id, K.tid, K.start, K.\"end\", K.kernel_id, \
               COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name), E.stack_id, K.workgroup_size_x, K.grid_size_z";
    let from = |db: &str| {
        format!(
            "SELECT {key} FROM {db}.rocpd_kernel_dispatch K JOIN {db}.rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id \
             JOIN {db}.rocpd_event E ON E.id = K.event_id"
        )
    };
    assert_eq!(
        q(&format!(
            "SELECT COUNT(*) FROM ({} EXCEPT {})",
            from("main"),
            from("g")
        )),
        0
    );
    assert_eq!(
        q(&format!(
            "SELECT COUNT(*) FROM ({} EXCEPT {})",
            from("g"),
            from("main")
        )),
        0
    );
    // API calls and markers: id, tid, times, name (marker: message), category.
    let regions = |db: &str| {
        format!(
            "SELECT R.id, R.pid, R.tid, R.start, R.\"end\", C.string, \
             COALESCE(json_extract(E.extdata, '$.message'), N.string) FROM {db}.rocpd_region R \
             JOIN {db}.rocpd_event E ON E.id = R.event_id JOIN {db}.rocpd_string C ON C.id = E.category_id \
             JOIN {db}.rocpd_string N ON N.id = R.name_id"
        )
    };
    assert_eq!(
        q(&format!(
            "SELECT COUNT(*) FROM ({} EXCEPT {})",
            regions("main"),
            regions("g")
        )),
        0
    );
    assert_eq!(
        q(&format!(
            "SELECT COUNT(*) FROM ({} EXCEPT {})",
            regions("g"),
            regions("main")
        )),
        0
    );
    // Copies: times, direction, agents. Allocations: type, level, agent, address, size.
    let copies_q = |db: &str| {
        format!(
            "SELECT C.start, C.\"end\", N.string, C.src_agent_id, C.dst_agent_id, C.stream_id FROM {db}.rocpd_memory_copy C \
             JOIN {db}.rocpd_string N ON N.id = C.name_id"
        )
    };
    assert_eq!(
        q(&format!(
            "SELECT COUNT(*) FROM ({} EXCEPT {})",
            copies_q("main"),
            copies_q("g")
        )),
        0
    );
    let allocs_q = |db: &str| {
        format!(
            "SELECT start, \"end\", type, level, agent_id, CASE WHEN level = 'SCRATCH' THEN NULL ELSE address END, size \
             FROM {db}.rocpd_memory_allocate"
        )
    };
    assert_eq!(
        q(&format!(
            "SELECT COUNT(*) FROM ({} EXCEPT {})",
            allocs_q("main"),
            allocs_q("g")
        )),
        0
    );
    // Counter values by dispatch and name.
    let pmc_q = |db: &str| {
        format!(
            "SELECT K.id, I.name, round(P.value, 6) FROM {db}.rocpd_pmc_event P JOIN {db}.rocpd_info_pmc I ON I.id = P.pmc_id \
             JOIN {db}.rocpd_kernel_dispatch K ON K.event_id = P.event_id"
        )
    };
    assert_eq!(
        q(&format!(
            "SELECT COUNT(*) FROM ({} EXCEPT {})",
            pmc_q("main"),
            pmc_q("g")
        )),
        0
    );
}
