//! Cross-check with the project's RocPD generator: a generated database is exported here to
//! a rocprofv3 CSV set (current layout, plain SQL), imported back, and compared table by
//! table.

mod common;

use std::path::Path;

use common::*;
use rusqlite::types::Value;

/// Runs `sql` on `conn` and writes the rows as a CSV file with `header`: strings quoted
/// (with quotes doubled), numbers bare, as rocprofv3 writes them.
fn export(conn: &rusqlite::Connection, path: &Path, header: &[&str], sql: &str) -> usize {
    let mut w = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::NonNumeric)
        .from_path(path)
        .unwrap();
    w.write_record(header).unwrap();
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    assert_eq!(n, header.len(), "{sql}");
    let mut rows = stmt.query([]).unwrap();
    let mut count = 0;
    while let Some(row) = rows.next().unwrap() {
        let rec: Vec<String> = (0..n)
            .map(|i| match row.get::<_, Value>(i).unwrap() {
                Value::Null => String::new(),
                Value::Integer(v) => v.to_string(),
                Value::Real(v) => format!("{v:.6}"),
                Value::Text(t) => t,
                Value::Blob(_) => unreachable!(),
            })
            .collect();
        w.write_record(&rec).unwrap();
        count += 1;
    }
    w.flush().unwrap();
    count
}

const AGENT: &str = "'Agent ' || (SELECT logical_index FROM rocpd_info_agent A WHERE A.id = ";

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
    let conn = rusqlite::Connection::open(&dbs[0]).unwrap();
    let (host, pid): (String, i64) = conn
        .query_row(
            "SELECT N.hostname, P.pid FROM rocpd_info_process P JOIN rocpd_info_node N ON N.id = P.nid",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let dir = tmp.path().join("csv").join(&host);
    std::fs::create_dir_all(&dir).unwrap();
    let file = |kind: &str| dir.join(format!("{pid}_{kind}.csv"));

    export(
        &conn,
        &file("agent_info"),
        &["Node_Id", "Logical_Node_Id", "Agent_Type", "Name", "Vendor_Name", "Product_Name", "Model_Name"],
        "SELECT id, logical_index, type, name, vendor_name, product_name, model_name FROM rocpd_info_agent ORDER BY id",
    );
    let api_header = [
        "Domain",
        "Function",
        "Process_Id",
        "Thread_Id",
        "Correlation_Id",
        "Start_Timestamp",
        "End_Timestamp",
    ];
    let api = |prefix: &str, function: &str| {
        format!(
            "SELECT C.string, {function}, R.pid, R.tid, R.id, R.start, R.\"end\" FROM rocpd_region R \
             JOIN rocpd_event E ON E.id = R.event_id JOIN rocpd_string C ON C.id = E.category_id \
             JOIN rocpd_string N ON N.id = R.name_id WHERE C.string LIKE '{prefix}%' ORDER BY R.start"
        )
    };
    let mut api_rows = 0;
    for (kind, prefix) in [
        ("hip_api_trace", "HIP_"),
        ("hsa_api_trace", "HSA_"),
        ("rccl_api_trace", "RCCL_"),
    ] {
        api_rows += export(&conn, &file(kind), &api_header, &api(prefix, "N.string"));
    }
    let markers = export(
        &conn,
        &file("marker_api_trace"),
        &api_header,
        &api(
            "MARKER_",
            "COALESCE(json_extract(E.extdata, '$.message'), N.string)",
        ),
    );
    let kernels = export(
        &conn,
        &file("kernel_trace"),
        &[
            "Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
            "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
            "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
            "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z",
        ],
        &format!(
            "SELECT 'KERNEL_DISPATCH', {AGENT}K.agent_id), K.queue_id, K.stream_id, K.tid, K.dispatch_id, K.kernel_id, \
             KS.kernel_name, E.stack_id, K.start, K.\"end\", K.group_segment_size, K.private_segment_size, \
             KS.arch_vgpr_count, KS.accum_vgpr_count, KS.sgpr_count, K.workgroup_size_x, K.workgroup_size_y, \
             K.workgroup_size_z, K.grid_size_x, K.grid_size_y, K.grid_size_z FROM rocpd_kernel_dispatch K \
             JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id JOIN rocpd_event E ON E.id = K.event_id ORDER BY K.start"
        ),
    );
    let copies = export(
        &conn,
        &file("memory_copy_trace"),
        &["Kind", "Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"],
        &format!(
            "SELECT 'MEMORY_COPY', N.string, C.stream_id, {AGENT}C.src_agent_id), {AGENT}C.dst_agent_id), E.stack_id, \
             C.start, C.\"end\" FROM rocpd_memory_copy C JOIN rocpd_string N ON N.id = C.name_id \
             JOIN rocpd_event E ON E.id = C.event_id ORDER BY C.start"
        ),
    );
    let allocs = export(
        &conn,
        &file("memory_allocation_trace"),
        &["Kind", "Operation", "Agent_Id", "Allocation_Size", "Address", "Correlation_Id", "Start_Timestamp", "End_Timestamp"],
        &format!(
            "SELECT 'MEMORY_ALLOCATION', CASE WHEN M.level = 'VIRTUAL' THEN 'MEMORY_ALLOCATION_VMEM_' ELSE 'MEMORY_ALLOCATION_' END \
             || CASE M.type WHEN 'ALLOC' THEN 'ALLOCATE' ELSE M.type END, \
             CASE WHEN M.agent_id IS NULL THEN '' ELSE {AGENT}M.agent_id) END, M.size, printf('0x%016x', M.address), \
             E.stack_id, M.start, M.\"end\" FROM rocpd_memory_allocate M JOIN rocpd_event E ON E.id = M.event_id \
             WHERE M.level != 'SCRATCH' ORDER BY M.start"
        ),
    );
    let scratch = export(
        &conn,
        &file("scratch_memory_trace"),
        &["Kind", "Operation", "Agent_Id", "Queue_Id", "Thread_Id", "Alloc_Flags", "Start_Timestamp", "End_Timestamp", "Allocation_Size"],
        &format!(
            "SELECT 'SCRATCH_MEMORY', 'SCRATCH_MEMORY_' || M.type, {AGENT}M.agent_id), M.queue_id, M.tid, \
             COALESCE(json_extract(M.extdata, '$.flags'), 0), M.start, M.\"end\", M.size \
             FROM rocpd_memory_allocate M WHERE M.level = 'SCRATCH' ORDER BY M.start"
        ),
    );
    let counters = export(
        &conn,
        &file("counter_collection"),
        &[
            "Correlation_Id", "Dispatch_Id", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id", "Grid_Size", "Kernel_Id",
            "Kernel_Name", "Workgroup_Size", "LDS_Block_Size", "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count",
            "SGPR_Count", "Counter_Name", "Counter_Value", "Start_Timestamp", "End_Timestamp",
        ],
        &format!(
            "SELECT E.stack_id, K.dispatch_id, {AGENT}K.agent_id), K.queue_id, K.pid, K.tid, \
             K.grid_size_x * K.grid_size_y * K.grid_size_z, K.kernel_id, KS.kernel_name, \
             K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z, K.group_segment_size, \
             K.private_segment_size, KS.arch_vgpr_count, KS.accum_vgpr_count, KS.sgpr_count, I.name, P.value, \
             K.start, K.\"end\" FROM rocpd_pmc_event P JOIN rocpd_info_pmc I ON I.id = P.pmc_id \
             JOIN rocpd_kernel_dispatch K ON K.event_id = P.event_id JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id \
             JOIN rocpd_event E ON E.id = K.event_id ORDER BY K.start"
        ),
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
               KS.kernel_name, E.stack_id, K.workgroup_size_x, K.grid_size_z";
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
