//! Writing a generated RocPD database out again as a rocprofv3 CSV set (the current,
//! rocprofiler-sdk 1.x layout: `<host>/<pid>_<kind>.csv`), so that the same trace can be
//! read as RocPD and as CSV and the two compared, and CSV reading can be benchmarked.
//!
//! Thread and process columns carry the OS ids, as rocprofv3 writes them: an event's `pid`
//! and `tid` are references to `rocpd_info_process` and `rocpd_info_thread` rows, which
//! are the OS ids themselves only when the generator was not asked for `row_ids`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::types::Value;

/// Runs `sql` on `conn` and writes the rows as a CSV file with `header`: strings quoted
/// (with quotes doubled), numbers bare, as rocprofv3 writes them.
fn export(conn: &rusqlite::Connection, path: &Path, header: &[&str], sql: &str) -> Result<usize> {
    let mut w = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::NonNumeric)
        .from_path(path)?;
    w.write_record(header)?;
    let mut stmt = conn.prepare(sql)?;
    let n = stmt.column_count();
    anyhow::ensure!(
        n == header.len(),
        "{sql}: {n} columns for {} headers",
        header.len()
    );
    let mut rows = stmt.query([])?;
    let mut count = 0;
    while let Some(row) = rows.next()? {
        let rec = (0..n)
            .map(|i| {
                Ok(match row.get::<_, Value>(i)? {
                    Value::Null => String::new(),
                    Value::Integer(v) => v.to_string(),
                    Value::Real(v) => format!("{v:.6}"),
                    Value::Text(t) => t,
                    Value::Blob(b) => String::from_utf8_lossy(&b).into_owned(),
                })
            })
            .collect::<rusqlite::Result<Vec<String>>>()?;
        w.write_record(&rec)?;
        count += 1;
    }
    w.flush()?;
    Ok(count)
}

const AGENT: &str = "'Agent ' || (SELECT logical_index FROM rocpd_info_agent A WHERE A.id = ";

/// Rows written per CSV kind.
#[derive(Debug, Default, Clone)]
pub struct CsvCounts {
    /// HIP, HSA and RCCL API calls.
    pub api: usize,
    /// Marker API rows.
    pub markers: usize,
    /// Kernel dispatches.
    pub kernels: usize,
    /// Memory copies.
    pub copies: usize,
    /// Memory allocations (not scratch).
    pub allocations: usize,
    /// Scratch-memory rows.
    pub scratch: usize,
    /// Counter values.
    pub counters: usize,
}

/// Writes the CSV set of the (single-process) database `db` under `out_dir/<host>/`;
/// returns the directory and the rows written per kind.
pub fn export_csv(db: &Path, out_dir: &Path) -> Result<(PathBuf, CsvCounts)> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("{}: cannot open", db.display()))?;
    let (host, pid): (String, i64) = conn.query_row(
        "SELECT N.hostname, P.pid FROM rocpd_info_process P JOIN rocpd_info_node N ON N.id = P.nid",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let dir = out_dir.join(&host);
    std::fs::create_dir_all(&dir)?;
    let file = |kind: &str| dir.join(format!("{pid}_{kind}.csv"));

    export(
        &conn,
        &file("agent_info"),
        &["Node_Id", "Logical_Node_Id", "Agent_Type", "Name", "Vendor_Name", "Product_Name", "Model_Name"],
        "SELECT id, logical_index, type, name, vendor_name, product_name, model_name FROM rocpd_info_agent ORDER BY id",
    )?;
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
            "SELECT C.string, {function}, (SELECT PI.pid FROM rocpd_info_process PI WHERE PI.id = R.pid), (SELECT TI.tid FROM rocpd_info_thread TI WHERE TI.id = R.tid), R.id, R.start, R.\"end\" FROM rocpd_region R \
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
        api_rows += export(&conn, &file(kind), &api_header, &api(prefix, "N.string"))?;
    }
    let markers = export(
        &conn,
        &file("marker_api_trace"),
        &api_header,
        &api(
            "MARKER_",
            "COALESCE(json_extract(E.extdata, '$.message'), N.string)",
        ),
    )?;
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
            "SELECT 'KERNEL_DISPATCH', {AGENT}K.agent_id), K.queue_id, K.stream_id, (SELECT TI.tid FROM rocpd_info_thread TI WHERE TI.id = K.tid), K.dispatch_id, K.kernel_id, \
             COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name), E.stack_id, K.start, K.\"end\", K.group_segment_size, K.private_segment_size, \
             KS.arch_vgpr_count, KS.accum_vgpr_count, KS.sgpr_count, K.workgroup_size_x, K.workgroup_size_y, \
             K.workgroup_size_z, K.grid_size_x, K.grid_size_y, K.grid_size_z FROM rocpd_kernel_dispatch K \
             JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id JOIN rocpd_event E ON E.id = K.event_id ORDER BY K.start"
        ),
    )?;
    let copies = export(
        &conn,
        &file("memory_copy_trace"),
        &["Kind", "Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"],
        &format!(
            "SELECT 'MEMORY_COPY', N.string, C.stream_id, {AGENT}C.src_agent_id), {AGENT}C.dst_agent_id), E.stack_id, \
             C.start, C.\"end\" FROM rocpd_memory_copy C JOIN rocpd_string N ON N.id = C.name_id \
             JOIN rocpd_event E ON E.id = C.event_id ORDER BY C.start"
        ),
    )?;
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
    )?;
    let scratch = export(
        &conn,
        &file("scratch_memory_trace"),
        &["Kind", "Operation", "Agent_Id", "Queue_Id", "Thread_Id", "Alloc_Flags", "Start_Timestamp", "End_Timestamp", "Allocation_Size"],
        &format!(
            "SELECT 'SCRATCH_MEMORY', 'SCRATCH_MEMORY_' || M.type, {AGENT}M.agent_id), M.queue_id, (SELECT TI.tid FROM rocpd_info_thread TI WHERE TI.id = M.tid), \
             COALESCE(json_extract(M.extdata, '$.flags'), 0), M.start, M.\"end\", M.size \
             FROM rocpd_memory_allocate M WHERE M.level = 'SCRATCH' ORDER BY M.start"
        ),
    )?;
    let counters = export(
        &conn,
        &file("counter_collection"),
        &[
            "Correlation_Id", "Dispatch_Id", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id", "Grid_Size", "Kernel_Id",
            "Kernel_Name", "Workgroup_Size", "LDS_Block_Size", "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count",
            "SGPR_Count", "Counter_Name", "Counter_Value", "Start_Timestamp", "End_Timestamp",
        ],
        &format!(
            "SELECT E.stack_id, K.dispatch_id, {AGENT}K.agent_id), K.queue_id, (SELECT PI.pid FROM rocpd_info_process PI WHERE PI.id = K.pid), (SELECT TI.tid FROM rocpd_info_thread TI WHERE TI.id = K.tid), \
             K.grid_size_x * K.grid_size_y * K.grid_size_z, K.kernel_id, COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name), \
             K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z, K.group_segment_size, \
             K.private_segment_size, KS.arch_vgpr_count, KS.accum_vgpr_count, KS.sgpr_count, I.name, P.value, \
             K.start, K.\"end\" FROM rocpd_pmc_event P JOIN rocpd_info_pmc I ON I.id = P.pmc_id \
             JOIN rocpd_kernel_dispatch K ON K.event_id = P.event_id JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id \
             JOIN rocpd_event E ON E.id = K.event_id ORDER BY K.start"
        ),
    )?;
    Ok((
        dir,
        CsvCounts {
            api: api_rows,
            markers,
            kernels,
            copies,
            allocations: allocs,
            scratch,
            counters,
        },
    ))
}
