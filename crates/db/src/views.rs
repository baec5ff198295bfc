//! The views of a merged RocPD database: `rocpd_<name>` as the union of every table set's
//! `rocpd_<name>_<uuid>` table, and the analysis and summary views AMD's tools query by
//! name (`regions`, `kernels`, `memory_copies`, `top_kernels`, `busy`, ...), with the
//! columns, names and order, documented for them (`formats/rocpd/README.md`, section 10).
//!
//! Written from the documented column lists, not copied. Where we differ on purpose:
//! - every join is on `(id, guid)`, and LEFT where a missing info row (a process, thread,
//!   agent, queue, string, event, kernel symbol) would hide an event;
//! - `pid` and `tid` are the OS ids: the event's `pid`/`tid` reference
//!   `rocpd_info_process.id`/`rocpd_info_thread.id`, and the view shows that row's `pid`/
//!   `tid`; without the info row (or with a NULL OS id in it), the reference itself, which
//!   is what rocprofv3 writes (ids equal to the OS ids);
//! - a JSON field of an `extdata` column is read only when the column holds valid JSON
//!   (NULL otherwise), so one malformed value cannot make a whole query fail;
//! - a kernel's name is its display name, or its kernel name when that is empty.

/// Most terms in one compound SELECT: SQLite's default limit (`SQLITE_MAX_COMPOUND_SELECT`,
/// 500), which every reader of the file (Python's `sqlite3`, AMD's tools) also has, since
/// a view's SQL is parsed by whoever queries it.
const MAX_UNION_TERMS: usize = 500;

/// `CREATE VIEW rocpd_<base> AS SELECT * FROM <t1> UNION ALL SELECT * FROM <t2> ...`.
///
/// Over more than [`MAX_UNION_TERMS`] table sets (a merge of 512 ranks) one SELECT would
/// exceed the limit, so the tables are unioned in parts, `rocpd_<base>__part_<n>` of at
/// most that many each, and the view unions the parts (each view is its own statement).
pub(crate) fn union_view(base: &str, tables: &[String]) -> String {
    let union = |names: &mut dyn Iterator<Item = &String>| {
        names
            .map(|t| format!("SELECT * FROM {}", crate::quote_ident(t)))
            .collect::<Vec<_>>()
            .join(" UNION ALL ")
    };
    if tables.len() <= MAX_UNION_TERMS {
        return format!(
            "CREATE VIEW {} AS {};\n",
            crate::quote_ident(base),
            union(&mut tables.iter())
        );
    }
    let mut sql = String::new();
    let mut parts = Vec::new();
    for (n, chunk) in tables.chunks(MAX_UNION_TERMS).enumerate() {
        let part = format!("{base}__part_{n}");
        sql.push_str(&format!(
            "CREATE VIEW {} AS {};\n",
            crate::quote_ident(&part),
            union(&mut chunk.iter())
        ));
        parts.push(part);
    }
    // 500 parts of 500 sets each reach 250,000 table sets; past that, SQLite's error
    // names the limit.
    sql.push_str(&format!(
        "CREATE VIEW {} AS {};\n",
        crate::quote_ident(base),
        union(&mut parts.iter())
    ));
    sql
}

/// The names of the analysis and summary views, in the order they are created.
pub const ANALYSIS_VIEW_NAMES: [&str; 21] = [
    "code_objects",
    "kernel_symbols",
    "processes",
    "threads",
    "regions",
    "region_args",
    "samples",
    "sample_regions",
    "regions_and_samples",
    "kernels",
    "pmc_info",
    "pmc_events",
    "events_args",
    "stream_args",
    "memory_copies",
    "memory_allocations",
    "scratch_memory",
    "counters_collection",
    "top_kernels",
    "busy",
    "top",
];

/// The analysis views, over the `rocpd_<name>` union views.
pub(crate) const ANALYSIS_VIEWS: &str = r#"
CREATE VIEW code_objects AS
  SELECT CO.id, CO.guid, CO.nid, COALESCE(P.pid, CO.pid) AS pid,
         A.absolute_index AS agent_abs_index, CO.uri, CO.load_base, CO.load_size,
         CO.load_delta, CO.storage_type AS storage_type_str,
         CASE WHEN json_valid(CO.extdata) THEN json_extract(CO.extdata, '$.size') END AS code_object_size,
         CASE WHEN json_valid(CO.extdata) THEN json_extract(CO.extdata, '$.storage_type') END AS storage_type,
         CASE WHEN json_valid(CO.extdata) THEN json_extract(CO.extdata, '$.memory_base') END AS memory_base,
         CASE WHEN json_valid(CO.extdata) THEN json_extract(CO.extdata, '$.memory_size') END AS memory_size
  FROM rocpd_info_code_object CO
  LEFT JOIN rocpd_info_agent A ON A.id = CO.agent_id AND A.guid = CO.guid
  LEFT JOIN rocpd_info_process P ON P.id = CO.pid AND P.guid = CO.guid;

CREATE VIEW kernel_symbols AS
  SELECT K.id, K.guid, K.nid, COALESCE(P.pid, K.pid) AS pid, K.code_object_id, K.kernel_name,
         K.display_name, K.kernel_object, K.kernarg_segment_size, K.kernarg_segment_alignment,
         K.group_segment_size, K.private_segment_size, K.sgpr_count, K.arch_vgpr_count,
         K.accum_vgpr_count,
         CASE WHEN json_valid(K.extdata) THEN json_extract(K.extdata, '$.size') END AS kernel_symbol_size,
         COALESCE(CASE WHEN json_valid(K.extdata) THEN json_extract(K.extdata, '$.kernel_id') END, K.id) AS kernel_id,
         CASE WHEN json_valid(K.extdata) THEN json_extract(K.extdata, '$.kernel_code_entry_byte_offset') END AS kernel_code_entry_byte_offset,
         CASE WHEN json_valid(K.extdata) THEN json_extract(K.extdata, '$.formatted_kernel_name') END AS formatted_kernel_name,
         CASE WHEN json_valid(K.extdata) THEN json_extract(K.extdata, '$.demangled_kernel_name') END AS demangled_kernel_name,
         CASE WHEN json_valid(K.extdata) THEN json_extract(K.extdata, '$.truncated_kernel_name') END AS truncated_kernel_name,
         CASE WHEN json_valid(K.extdata) THEN json_extract(K.extdata, '$.kernel_address.handle') END AS kernel_address
  FROM rocpd_info_kernel_symbol K
  LEFT JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid;

CREATE VIEW processes AS
  SELECT P.nid, N.machine_id, N.system_name, N.hostname, N.release AS system_release,
         N.version AS system_version, P.guid, P.ppid, P.pid, P.init, P.start, P."end", P.fini,
         P.command
  FROM rocpd_info_process P
  LEFT JOIN rocpd_info_node N ON N.id = P.nid AND N.guid = P.guid;

CREATE VIEW threads AS
  SELECT T.nid, N.machine_id, N.system_name, N.hostname, N.release AS system_release,
         N.version AS system_version, T.guid, COALESCE(P.ppid, T.ppid) AS ppid,
         COALESCE(P.pid, T.pid) AS pid, T.tid, T.start, T."end", T.name
  FROM rocpd_info_thread T
  LEFT JOIN rocpd_info_process P ON P.id = T.pid AND P.guid = T.guid
  LEFT JOIN rocpd_info_node N ON N.id = T.nid AND N.guid = T.guid;

CREATE VIEW regions AS
  SELECT R.id, R.guid, C.string AS category, S.string AS name, R.nid,
         COALESCE(P.pid, R.pid) AS pid, COALESCE(T.tid, R.tid) AS tid, R.start, R."end",
         R."end" - R.start AS duration, R.event_id, E.stack_id, E.parent_stack_id,
         E.correlation_id AS corr_id, E.extdata, E.call_stack, E.line_info
  FROM rocpd_region R
  LEFT JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
  LEFT JOIN rocpd_string S ON S.id = R.name_id AND S.guid = R.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = R.guid
  LEFT JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid
  LEFT JOIN rocpd_info_thread T ON T.id = R.tid AND T.guid = R.guid;

CREATE VIEW region_args AS
  SELECT R.id, R.guid, R.nid, COALESCE(P.pid, R.pid) AS pid, A.type, A.name, A.value
  FROM rocpd_region R
  JOIN rocpd_arg A ON A.event_id = R.event_id AND A.guid = R.guid
  LEFT JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid;

CREATE VIEW samples AS
  SELECT X.id, X.guid, C.string AS category, S.string AS name, T.nid,
         COALESCE(P.pid, T.pid) AS pid, COALESCE(TH.tid, T.tid) AS tid, X.timestamp,
         X.event_id, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id, E.extdata,
         E.call_stack, E.line_info
  FROM rocpd_sample X
  LEFT JOIN rocpd_track T ON T.id = X.track_id AND T.guid = X.guid
  LEFT JOIN rocpd_string S ON S.id = T.name_id AND S.guid = X.guid
  LEFT JOIN rocpd_event E ON E.id = X.event_id AND E.guid = X.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = X.guid
  LEFT JOIN rocpd_info_process P ON P.id = T.pid AND P.guid = X.guid
  LEFT JOIN rocpd_info_thread TH ON TH.id = T.tid AND TH.guid = X.guid;

CREATE VIEW sample_regions AS
  SELECT id, guid, category, name, nid, pid, tid, timestamp AS start, timestamp AS "end",
         0 AS duration, event_id, stack_id, parent_stack_id, corr_id, extdata, call_stack,
         line_info
  FROM samples;

CREATE VIEW regions_and_samples AS
  SELECT * FROM regions UNION ALL SELECT * FROM sample_regions;

CREATE VIEW kernels AS
  SELECT K.id, K.guid, COALESCE(T.tid, K.tid) AS tid, C.string AS category, RN.string AS region,
         COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name) AS name, K.nid,
         COALESCE(P.pid, K.pid) AS pid, A.absolute_index AS agent_abs_index,
         A.logical_index AS agent_log_index, A.type_index AS agent_type_index,
         A.type AS agent_type, KS.code_object_id, K.kernel_id, K.dispatch_id, K.stream_id,
         K.queue_id, Q.name AS queue, ST.name AS stream, K.start, K."end",
         K."end" - K.start AS duration, K.grid_size_x AS grid_x, K.grid_size_y AS grid_y,
         K.grid_size_z AS grid_z, K.workgroup_size_x AS workgroup_x,
         K.workgroup_size_y AS workgroup_y, K.workgroup_size_z AS workgroup_z,
         K.group_segment_size AS lds_size, K.private_segment_size AS scratch_size,
         KS.arch_vgpr_count AS vgpr_count, KS.accum_vgpr_count, KS.sgpr_count,
         KS.group_segment_size AS static_lds_size,
         KS.private_segment_size AS static_scratch_size, E.stack_id, E.parent_stack_id,
         E.correlation_id AS corr_id
  FROM rocpd_kernel_dispatch K
  LEFT JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
  LEFT JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = K.guid
  LEFT JOIN rocpd_string RN ON RN.id = K.region_name_id AND RN.guid = K.guid
  LEFT JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id AND KS.guid = K.guid
  LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
  LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid
  LEFT JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
  LEFT JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid;

CREATE VIEW pmc_info AS
  SELECT PI.id, PI.guid, PI.nid, COALESCE(P.pid, PI.pid) AS pid,
         A.absolute_index AS agent_abs_index, PI.is_constant, PI.is_derived, PI.name,
         PI.description, PI.block, PI.expression
  FROM rocpd_info_pmc PI
  LEFT JOIN rocpd_info_agent A ON A.id = PI.agent_id AND A.guid = PI.guid
  LEFT JOIN rocpd_info_process P ON P.id = PI.pid AND P.guid = PI.guid;

CREATE VIEW pmc_events AS
  SELECT PE.id, PE.guid, PE.pmc_id, PE.event_id, C.string AS category,
         COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name) AS name,
         COALESCE(K.nid, PI.nid) AS nid, COALESCE(P.pid, K.pid, PI.pid) AS pid, K.dispatch_id,
         K.start, K."end", K."end" - K.start AS duration, PI.name AS counter_name,
         PE.value AS counter_value
  FROM rocpd_pmc_event PE
  LEFT JOIN rocpd_info_pmc PI ON PI.id = PE.pmc_id AND PI.guid = PE.guid
  LEFT JOIN rocpd_event E ON E.id = PE.event_id AND E.guid = PE.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = PE.guid
  LEFT JOIN rocpd_kernel_dispatch K ON K.event_id = PE.event_id AND K.guid = PE.guid
  LEFT JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id AND KS.guid = PE.guid
  LEFT JOIN rocpd_info_process P ON P.id = COALESCE(K.pid, PI.pid) AND P.guid = PE.guid;

CREATE VIEW events_args AS
  SELECT A.event_id, C.string AS category, E.stack_id, E.parent_stack_id, E.correlation_id,
         A.position AS arg_position, A.type AS arg_type, A.name AS arg_name,
         A.value AS arg_value, E.call_stack, E.line_info, A.extdata
  FROM rocpd_arg A
  LEFT JOIN rocpd_event E ON E.id = A.event_id AND E.guid = A.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = A.guid;

CREATE VIEW stream_args AS
  SELECT A.id AS argument_id, A.event_id, A.position AS arg_position, A.type AS arg_type,
         A.value AS arg_value,
         CASE WHEN json_valid(A.extdata) THEN json_extract(A.extdata, '$.stream_id') END AS stream_id,
         S.nid, COALESCE(P.pid, S.pid) AS pid, S.name AS stream_name, S.extdata
  FROM rocpd_arg A
  LEFT JOIN rocpd_info_stream S ON S.guid = A.guid
    AND S.id = CASE WHEN json_valid(A.extdata) THEN json_extract(A.extdata, '$.stream_id') END
  LEFT JOIN rocpd_info_process P ON P.id = S.pid AND P.guid = S.guid
  WHERE A.name = 'stream';

CREATE VIEW memory_copies AS
  SELECT M.id, M.guid, C.string AS category, M.nid, COALESCE(P.pid, M.pid) AS pid,
         COALESCE(T.tid, M.tid) AS tid, M.start, M."end", M."end" - M.start AS duration,
         S.string AS name, RN.string AS region_name, M.stream_id, M.queue_id,
         ST.name AS stream_name, Q.name AS queue_name, M.size,
         D.name AS dst_device, D.absolute_index AS dst_agent_abs_index,
         D.logical_index AS dst_agent_log_index, D.type_index AS dst_agent_type_index,
         D.type AS dst_agent_type, M.dst_address,
         SRC.name AS src_device, SRC.absolute_index AS src_agent_abs_index,
         SRC.logical_index AS src_agent_log_index, SRC.type_index AS src_agent_type_index,
         SRC.type AS src_agent_type, M.src_address,
         E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
  FROM rocpd_memory_copy M
  LEFT JOIN rocpd_string S ON S.id = M.name_id AND S.guid = M.guid
  LEFT JOIN rocpd_string RN ON RN.id = M.region_name_id AND RN.guid = M.guid
  LEFT JOIN rocpd_info_agent D ON D.id = M.dst_agent_id AND D.guid = M.guid
  LEFT JOIN rocpd_info_agent SRC ON SRC.id = M.src_agent_id AND SRC.guid = M.guid
  LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
  LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid
  LEFT JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = M.guid
  LEFT JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
  LEFT JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid;

CREATE VIEW memory_allocations AS
  SELECT M.id, M.guid, C.string AS category, M.nid, COALESCE(P.pid, M.pid) AS pid,
         COALESCE(T.tid, M.tid) AS tid, M.start, M."end", M."end" - M.start AS duration,
         M.type, M.level, A.name AS agent_name, A.absolute_index AS agent_abs_index,
         A.logical_index AS agent_log_index, A.type_index AS agent_type_index,
         A.type AS agent_type, M.address, M.size, M.queue_id, Q.name AS queue_name,
         M.stream_id, ST.name AS stream_name, E.stack_id, E.parent_stack_id,
         E.correlation_id AS corr_id
  FROM rocpd_memory_allocate M
  LEFT JOIN rocpd_info_agent A ON A.id = M.agent_id AND A.guid = M.guid
  LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
  LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid
  LEFT JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = M.guid
  LEFT JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
  LEFT JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid;

CREATE VIEW scratch_memory AS
  SELECT M.id, M.guid, M.nid, COALESCE(P.pid, M.pid) AS pid, M.type AS operation,
         A.name AS agent_name, A.absolute_index AS agent_abs_index,
         A.logical_index AS agent_log_index, A.type_index AS agent_type_index,
         A.type AS agent_type, M.queue_id, COALESCE(T.tid, M.tid) AS tid,
         CASE WHEN json_valid(M.extdata) THEN json_extract(M.extdata, '$.flags') END AS alloc_flags,
         M.start, M."end", M."end" - M.start AS duration, M.size, M.address,
         E.correlation_id, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id,
         C.string AS category, E.extdata AS event_extdata
  FROM rocpd_memory_allocate M
  LEFT JOIN rocpd_info_agent A ON A.id = M.agent_id AND A.guid = M.guid
  LEFT JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = M.guid
  LEFT JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
  LEFT JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid
  WHERE M.level = 'SCRATCH'
  ORDER BY M.start;

CREATE VIEW counters_collection AS
  SELECT MIN(PE.id) AS id, PE.guid, K.dispatch_id, K.kernel_id, K.event_id, E.correlation_id,
         E.stack_id, E.parent_stack_id, COALESCE(P.pid, K.pid) AS pid,
         COALESCE(T.tid, K.tid) AS tid, K.agent_id, A.absolute_index AS agent_abs_index,
         A.logical_index AS agent_log_index, A.type_index AS agent_type_index,
         A.type AS agent_type, K.queue_id, K.grid_size_x, K.grid_size_y, K.grid_size_z,
         K.grid_size_x * K.grid_size_y * K.grid_size_z AS grid_size,
         COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name) AS kernel_name,
         RN.string AS kernel_region, K.workgroup_size_x, K.workgroup_size_y,
         K.workgroup_size_z,
         K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z AS workgroup_size,
         K.group_segment_size AS lds_block_size, K.private_segment_size AS scratch_size,
         KS.arch_vgpr_count AS vgpr_count, KS.accum_vgpr_count, KS.sgpr_count,
         PI.name AS counter_name, PI.symbol AS counter_symbol, PI.component, PI.description,
         PI.block, PI.expression, PI.value_type, PE.pmc_id AS counter_id,
         SUM(PE.value) AS value, K.start, K."end", PI.is_constant, PI.is_derived,
         K."end" - K.start AS duration, C.string AS category, K.nid, E.extdata,
         KS.code_object_id
  FROM rocpd_pmc_event PE
  JOIN rocpd_kernel_dispatch K ON K.event_id = PE.event_id AND K.guid = PE.guid
  LEFT JOIN rocpd_info_pmc PI ON PI.id = PE.pmc_id AND PI.guid = PE.guid
  LEFT JOIN rocpd_event E ON E.id = PE.event_id AND E.guid = PE.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = PE.guid
  LEFT JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = PE.guid
  LEFT JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id AND KS.guid = PE.guid
  LEFT JOIN rocpd_string RN ON RN.id = K.region_name_id AND RN.guid = PE.guid
  LEFT JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = PE.guid
  LEFT JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = PE.guid
  GROUP BY PE.guid, K.dispatch_id, K.agent_id, COALESCE(PI.name, PE.pmc_id);

CREATE VIEW top_kernels AS
  SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration,
         AVG(duration) / 1000.0 AS average,
         SUM(duration) * 100.0 / (SELECT SUM(duration) FROM kernels) AS percentage
  FROM kernels GROUP BY name ORDER BY total_duration DESC;

CREATE VIEW busy AS
  SELECT U.agent_id, A.type, SUM(U.duration) AS GpuTime, W.WallTime,
         SUM(U.duration) * 1.0 / W.WallTime AS Busy
  FROM (SELECT agent_id, guid, "end" - start AS duration FROM rocpd_kernel_dispatch
        UNION ALL SELECT dst_agent_id, guid, "end" - start FROM rocpd_memory_copy) U
  CROSS JOIN (SELECT MAX("end") - MIN(start) AS WallTime
              FROM (SELECT start, "end" FROM rocpd_kernel_dispatch
                    UNION ALL SELECT start, "end" FROM rocpd_memory_copy)) W
  LEFT JOIN rocpd_info_agent A ON A.id = U.agent_id AND A.guid = U.guid
  WHERE U.agent_id IS NOT NULL
  GROUP BY U.agent_id, U.guid;

CREATE VIEW top AS
  SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration,
         AVG(duration) / 1000.0 AS average,
         SUM(duration) * 100.0 / (SELECT SUM(d) FROM (SELECT duration AS d FROM kernels
           UNION ALL SELECT duration FROM memory_copies UNION ALL SELECT duration FROM regions)) AS percentage
  FROM (SELECT name, duration FROM kernels UNION ALL SELECT name, duration FROM memory_copies
        UNION ALL SELECT name, duration FROM regions)
  GROUP BY name ORDER BY total_duration DESC;
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// A merge of more table sets than one compound SELECT may hold (512 ranks, say) still
    /// gets its union views, and they hold every row.
    #[test]
    fn union_views_over_more_sets_than_one_select_may_hold() {
        for sets in [
            1,
            MAX_UNION_TERMS,
            MAX_UNION_TERMS + 1,
            2 * MAX_UNION_TERMS + 3,
        ] {
            let conn = rusqlite::Connection::open_in_memory().unwrap();
            let mut tables = Vec::new();
            let mut sql = String::from("BEGIN;");
            for i in 0..sets {
                let t = format!("rocpd_region_{i}");
                sql.push_str(&format!(
                    "CREATE TABLE {t} (id INTEGER); INSERT INTO {t} VALUES ({i});"
                ));
                tables.push(t);
            }
            sql.push_str("COMMIT;");
            conn.execute_batch(&sql).unwrap();
            conn.execute_batch(&union_view("rocpd_region", &tables))
                .unwrap_or_else(|e| panic!("{sets} sets: {e}"));
            let (n, sum): (i64, i64) = conn
                .query_row("SELECT COUNT(*), SUM(id) FROM rocpd_region", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .unwrap();
            assert_eq!(n as usize, sets);
            assert_eq!(sum, (sets * (sets - 1) / 2) as i64);
        }
    }
}
