//! The views of a merged RocPD database: `rocpd_<name>` as the union of every table set's
//! `rocpd_<name>_<uuid>` table, and the analysis views AMD's tools query by name
//! (`regions`, `kernels`, `memory_copies`, ...), with the column names documented for
//! them. Written from the documented column lists; joins are on `(id, guid)` and are LEFT
//! joins where a missing info row should not hide an event.

/// `CREATE VIEW rocpd_<base> AS SELECT * FROM <t1> UNION ALL SELECT * FROM <t2> ...`.
pub(crate) fn union_view(base: &str, tables: &[String]) -> String {
    let selects: Vec<String> = tables
        .iter()
        .map(|t| format!("SELECT * FROM {}", crate::quote_ident(t)))
        .collect();
    format!(
        "CREATE VIEW {} AS {};\n",
        crate::quote_ident(base),
        selects.join(" UNION ALL ")
    )
}

/// The analysis views, over the `rocpd_<name>` union views.
pub(crate) const ANALYSIS_VIEWS: &str = r#"
CREATE VIEW processes AS
  SELECT P.nid, N.machine_id, N.system_name, N.hostname, N.release AS system_release,
         N.version AS system_version, P.guid, P.ppid, P.pid, P.init, P.start, P."end", P.fini, P.command
  FROM rocpd_info_process P
  LEFT JOIN rocpd_info_node N ON N.id = P.nid AND N.guid = P.guid;

CREATE VIEW threads AS
  SELECT T.nid, N.machine_id, N.system_name, N.hostname, N.release AS system_release,
         N.version AS system_version, T.guid, T.ppid, T.pid, T.tid, T.start, T."end", T.name
  FROM rocpd_info_thread T
  LEFT JOIN rocpd_info_node N ON N.id = T.nid AND N.guid = T.guid;

CREATE VIEW regions AS
  SELECT R.id, R.guid, C.string AS category, S.string AS name, R.nid, R.pid, R.tid,
         R.start, R."end", R."end" - R.start AS duration, R.event_id, E.stack_id,
         E.parent_stack_id, E.correlation_id AS corr_id, E.extdata, E.call_stack, E.line_info
  FROM rocpd_region R
  LEFT JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
  LEFT JOIN rocpd_string S ON S.id = R.name_id AND S.guid = R.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = E.guid;

CREATE VIEW samples AS
  SELECT X.id, X.guid, C.string AS category, S.string AS name, T.nid, T.pid, T.tid,
         X.timestamp, X.event_id, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id,
         E.extdata, E.call_stack, E.line_info
  FROM rocpd_sample X
  LEFT JOIN rocpd_track T ON T.id = X.track_id AND T.guid = X.guid
  LEFT JOIN rocpd_string S ON S.id = T.name_id AND S.guid = X.guid
  LEFT JOIN rocpd_event E ON E.id = X.event_id AND E.guid = X.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = E.guid;

CREATE VIEW sample_regions AS
  SELECT id, guid, category, name, nid, pid, tid, timestamp AS start, timestamp AS "end",
         0 AS duration, event_id, stack_id, parent_stack_id, corr_id, extdata, call_stack, line_info
  FROM samples;

CREATE VIEW regions_and_samples AS
  SELECT * FROM regions UNION ALL SELECT * FROM sample_regions;

CREATE VIEW kernel_symbols AS
  SELECT K.id, K.guid, K.nid, K.pid, K.code_object_id, K.kernel_name, K.display_name,
         K.kernel_object, K.kernarg_segment_size, K.kernarg_segment_alignment,
         K.group_segment_size, K.private_segment_size, K.sgpr_count, K.arch_vgpr_count,
         K.accum_vgpr_count, K.id AS kernel_id
  FROM rocpd_info_kernel_symbol K;

CREATE VIEW kernels AS
  SELECT K.id, K.guid, K.tid, C.string AS category, RN.string AS region,
         COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name) AS name, K.nid, K.pid,
         A.absolute_index AS agent_abs_index, A.logical_index AS agent_log_index,
         A.type_index AS agent_type_index, A.type AS agent_type, KS.code_object_id, K.kernel_id,
         K.dispatch_id, K.stream_id, K.queue_id, Q.name AS queue, ST.name AS stream, K.start,
         K."end", K."end" - K.start AS duration, K.grid_size_x AS grid_x, K.grid_size_y AS grid_y,
         K.grid_size_z AS grid_z, K.workgroup_size_x AS workgroup_x,
         K.workgroup_size_y AS workgroup_y, K.workgroup_size_z AS workgroup_z,
         K.group_segment_size AS lds_size, K.private_segment_size AS scratch_size,
         KS.arch_vgpr_count AS vgpr_count, KS.accum_vgpr_count, KS.sgpr_count,
         KS.group_segment_size AS static_lds_size, KS.private_segment_size AS static_scratch_size,
         E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
  FROM rocpd_kernel_dispatch K
  LEFT JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
  LEFT JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = K.guid
  LEFT JOIN rocpd_string RN ON RN.id = K.region_name_id AND RN.guid = K.guid
  LEFT JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id AND KS.guid = K.guid
  LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
  LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid;

CREATE VIEW memory_copies AS
  SELECT M.id, M.guid, C.string AS category, M.nid, M.pid, M.tid, M.start, M."end",
         M."end" - M.start AS duration, S.string AS name, RN.string AS region_name, M.stream_id,
         M.queue_id, ST.name AS stream_name, Q.name AS queue_name, M.size,
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
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = M.guid;

CREATE VIEW memory_allocations AS
  SELECT M.id, M.guid, C.string AS category, M.nid, M.pid, M.tid, M.start, M."end",
         M."end" - M.start AS duration, M.type, M.level, A.name AS agent_name,
         A.absolute_index AS agent_abs_index, A.logical_index AS agent_log_index,
         A.type_index AS agent_type_index, A.type AS agent_type, M.address, M.size, M.queue_id,
         Q.name AS queue_name, M.stream_id, ST.name AS stream_name, E.stack_id,
         E.parent_stack_id, E.correlation_id AS corr_id
  FROM rocpd_memory_allocate M
  LEFT JOIN rocpd_info_agent A ON A.id = M.agent_id AND A.guid = M.guid
  LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
  LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid
  LEFT JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = M.guid;

CREATE VIEW scratch_memory AS
  SELECT id, guid, nid, pid, type AS operation, agent_name, agent_abs_index, agent_log_index,
         agent_type_index, agent_type, queue_id, tid, start, "end", duration, size, address,
         stack_id, parent_stack_id, corr_id, category
  FROM memory_allocations WHERE level = 'SCRATCH';

CREATE VIEW pmc_info AS
  SELECT P.id, P.guid, P.nid, P.pid, A.absolute_index AS agent_abs_index, P.is_constant,
         P.is_derived, P.name, P.description, P.block, P.expression
  FROM rocpd_info_pmc P
  LEFT JOIN rocpd_info_agent A ON A.id = P.agent_id AND A.guid = P.guid;

CREATE VIEW pmc_events AS
  SELECT PE.id, PE.guid, PE.pmc_id, PE.event_id, C.string AS category, P.name, K.nid, K.pid,
         K.dispatch_id, K.start, K."end", K."end" - K.start AS duration, P.name AS counter_name,
         PE.value AS counter_value
  FROM rocpd_pmc_event PE
  LEFT JOIN rocpd_info_pmc P ON P.id = PE.pmc_id AND P.guid = PE.guid
  LEFT JOIN rocpd_event E ON E.id = PE.event_id AND E.guid = PE.guid
  LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = PE.guid
  LEFT JOIN rocpd_kernel_dispatch K ON K.event_id = PE.event_id AND K.guid = PE.guid;

CREATE VIEW top_kernels AS
  SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration,
         AVG(duration) / 1000.0 AS average,
         SUM(duration) * 100.0 / (SELECT SUM(duration) FROM kernels) AS percentage
  FROM kernels GROUP BY name ORDER BY total_duration DESC;

CREATE VIEW top AS
  SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration,
         AVG(duration) / 1000.0 AS average,
         SUM(duration) * 100.0 / (SELECT SUM(d) FROM (SELECT duration AS d FROM kernels
           UNION ALL SELECT duration FROM memory_copies UNION ALL SELECT duration FROM regions)) AS percentage
  FROM (SELECT name, duration FROM kernels UNION ALL SELECT name, duration FROM memory_copies
        UNION ALL SELECT name, duration FROM regions)
  GROUP BY name ORDER BY total_duration DESC;

CREATE VIEW busy AS
  SELECT A.id AS agent_id, A.type, SUM(U.duration) AS GpuTime,
         (SELECT MAX("end") - MIN(start) FROM (SELECT start, "end" FROM rocpd_kernel_dispatch
           UNION ALL SELECT start, "end" FROM rocpd_memory_copy)) AS WallTime,
         SUM(U.duration) * 1.0 / (SELECT MAX("end") - MIN(start) FROM (SELECT start, "end" FROM rocpd_kernel_dispatch
           UNION ALL SELECT start, "end" FROM rocpd_memory_copy)) AS Busy
  FROM (SELECT agent_id, guid, "end" - start AS duration FROM rocpd_kernel_dispatch
        UNION ALL SELECT dst_agent_id, guid, "end" - start FROM rocpd_memory_copy) U
  JOIN rocpd_info_agent A ON A.id = U.agent_id AND A.guid = U.guid
  GROUP BY A.id, A.type;
"#;
