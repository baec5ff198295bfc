//! Writing a generated RocPD database out again as a rocprofv3 JSON file
//! (`<pid>_results.json`, the `{"rocprofiler-sdk-tool": [ ... ]}` layout), so that the same
//! trace can be read as RocPD, CSV and JSON and the three compared, and JSON reading can
//! be benchmarked. Records are written one at a time: memory does not grow with the trace.
//!
//! Thread and process columns carry the OS ids, as rocprofv3 writes them: an event's `pid`
//! and `tid` are references to `rocpd_info_process` and `rocpd_info_thread` rows, which
//! are the OS ids themselves only when the generator was not asked for `row_ids`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::Connection;
use serde_json::{json, Value};

/// Buffer-record kinds and their operation names, indexed as rocprofv3's `strings` table.
struct Kinds {
    names: Vec<String>,
    ops: Vec<Vec<String>>,
}

impl Kinds {
    fn kind(&mut self, name: &str) -> usize {
        match self.names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.names.push(name.to_string());
                self.ops.push(vec![format!("{name}_NONE")]);
                self.names.len() - 1
            }
        }
    }
    fn op(&mut self, kind: &str, op: &str) -> (usize, usize) {
        let k = self.kind(kind);
        let ops = &mut self.ops[k];
        let o = match ops.iter().position(|x| x == op) {
            Some(i) => i,
            None => {
                ops.push(op.to_string());
                ops.len() - 1
            }
        };
        (k, o)
    }
}

fn rows(
    conn: &Connection,
    sql: &str,
    mut f: impl FnMut(&rusqlite::Row<'_>) -> Result<()>,
) -> Result<()> {
    let mut st = conn.prepare(sql).with_context(|| sql.to_string())?;
    let mut r = st.query([])?;
    while let Some(row) = r.next()? {
        f(row)?;
    }
    Ok(())
}

fn corr(stack: Option<i64>, external: Option<i64>, ancestor: Option<i64>) -> Value {
    json!({"internal": stack.unwrap_or(0), "external": external.unwrap_or(0), "ancestor": ancestor.unwrap_or(0)})
}

const AGENT_HANDLE: &str = "(SELECT COALESCE(json_extract(A.extdata, '$.id.handle'), A.id) FROM rocpd_info_agent A WHERE A.id = ";

/// `text`, a one-object document as [`export_json`] writes it (tables first, as rocprofv3
/// writes them), with the object's `members` moved to its end in the order given: the
/// layout of a file written again by a tool that orders members otherwise. `None` if the
/// text is not laid out so. For tests and fuzz seeds of readers that must not depend on
/// member order.
pub fn members_moved_last(text: &str, members: &[&str]) -> Option<String> {
    let mut body = text.to_string();
    let mut moved = Vec::new();
    for key in members {
        let name = format!("\"{key}\":");
        // The object's own member: the tables are the first of their name, the record
        // sections the last (`strings` names the record kinds too).
        let at = if key.ends_with("_records") {
            body.rfind(&name)
        } else {
            body.find(&name)
        }?;
        let value = at + name.len();
        let mut values =
            serde_json::Deserializer::from_str(body.get(value..)?).into_iter::<Value>();
        values.next()?.ok()?;
        let end = value + values.byte_offset();
        moved.push(body.get(at..end)?.to_string());
        // The member and the comma after it (before it, for the object's last).
        if body.get(end..end + 1) == Some(",") {
            body.replace_range(at..end + 1, "");
        } else if at > 0 && body.get(at - 1..at) == Some(",") {
            body.replace_range(at - 1..end, "");
        } else {
            return None;
        }
    }
    // The object ends at the document's last two closing brackets: `}]}`.
    let close = body.trim_end().len().checked_sub(3)?;
    if body.get(close..close + 3) != Some("}]}") {
        return None;
    }
    body.insert_str(close, &format!(",{}", moved.join(",")));
    serde_json::from_str::<Value>(&body).ok()?;
    Some(body)
}

/// `text`, a one-object document as [`export_json`] writes it, with its process object
/// given `objects` times, the copies' `metadata.pid` counting up from `first_pid`: the
/// layout of a file that holds several processes. `None` if the text is not such a
/// document. For tests of readers of several objects in one file.
pub fn objects_repeated(text: &str, objects: usize, first_pid: i64) -> Option<String> {
    let doc: Value = serde_json::from_str(text).ok()?;
    let object = doc.get("rocprofiler-sdk-tool")?.get(0)?;
    let mut copies = Vec::with_capacity(objects);
    for i in 0..objects {
        let mut copy = object.clone();
        let pid = first_pid.checked_add(i64::try_from(i).ok()?)?;
        copy.get_mut("metadata")?
            .as_object_mut()?
            .insert("pid".into(), json!(pid));
        copies.push(copy);
    }
    Some(json!({ "rocprofiler-sdk-tool": copies }).to_string())
}

/// Writes the JSON file of the (single-process) database `db` into `out_dir`; returns
/// its path and the records written per list.
pub fn export_json(db: &Path, out_dir: &Path) -> Result<(PathBuf, BTreeMap<String, usize>)> {
    let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("{}: cannot open", db.display()))?;
    let (pid, init, fini, command, nid, hash, machine, host): (i64, i64, i64, String, i64, i64, String, String) = conn
        .query_row(
            "SELECT P.pid, COALESCE(P.init, 0), COALESCE(P.fini, 0), COALESCE(P.command, ''), N.id, N.hash, \
             N.machine_id, N.hostname FROM rocpd_info_process P JOIN rocpd_info_node N ON N.id = P.nid",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?)),
        )
        .context("process")?;
    std::fs::create_dir_all(out_dir)?;
    let path = out_dir.join(format!("{pid}_results.json"));
    // The records go to a temporary file first: the strings table, which rocprofv3
    // writes before them, names every operation they use.
    let records_path = out_dir.join(format!(".{pid}_records.tmp"));
    let mut w = std::io::BufWriter::new(std::fs::File::create(&records_path)?);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut kinds = Kinds {
        names: vec!["NONE".into()],
        ops: vec![vec![]],
    };

    let meta = json!({"node": {"id": nid, "hash": hash, "machine_id": machine, "hostname": host},
        "pid": pid, "init_time": init, "fini_time": fini,
        "command": command.split_whitespace().collect::<Vec<_>>(), "config": {}});
    write!(w, "\"buffer_records\":{{")?;
    let mut markers: Vec<Value> = Vec::new();
    for (i, (list, prefix)) in [
        ("hip_api", "HIP_"),
        ("hsa_api", "HSA_"),
        ("marker_api", "MARKER_"),
        ("rccl_api", "RCCL_"),
    ]
    .iter()
    .enumerate()
    {
        write!(w, "{}\"{list}\":[", if i == 0 { "" } else { "," })?;
        let mut first = true;
        rows(
            &conn,
            &format!(
                "SELECT C.string, N.string, (SELECT TI.tid FROM rocpd_info_thread TI WHERE TI.id = R.tid), E.stack_id, E.correlation_id, E.parent_stack_id, R.start, R.\"end\", \
                 json_extract(E.extdata, '$.message') FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id \
                 JOIN rocpd_string C ON C.id = E.category_id JOIN rocpd_string N ON N.id = R.name_id \
                 WHERE C.string LIKE '{prefix}%' ORDER BY R.start"
            ),
            |r| {
                let (k, o) = kinds.op(&r.get::<_, String>(0)?, &r.get::<_, String>(1)?);
                let stack: Option<i64> = r.get(3)?;
                if let Some(m) = r.get::<_, Option<String>>(8)? {
                    markers.push(json!({"key": stack.unwrap_or(0), "value": m}));
                }
                let v = json!({"size": 1, "kind": k, "operation": o, "thread_id": r.get::<_, Option<i64>>(2)?,
                    "correlation_id": corr(stack, r.get(4)?, r.get(5)?), "start_timestamp": r.get::<_, i64>(6)?,
                    "end_timestamp": r.get::<_, i64>(7)?});
                write!(w, "{}{v}", if first { "" } else { "," })?;
                first = false;
                *counts.entry(list.to_string()).or_default() += 1;
                Ok(())
            },
        )?;
        write!(w, "]")?;
    }
    let info = "json_object('size', 72, 'agent_id', json_object('handle', {AH}K.agent_id)), \
        'queue_id', json_object('handle', K.queue_id), 'kernel_id', K.kernel_id, 'dispatch_id', K.dispatch_id, \
        'private_segment_size', K.private_segment_size, 'group_segment_size', K.group_segment_size, \
        'workgroup_size', json_object('x', K.workgroup_size_x, 'y', K.workgroup_size_y, 'z', K.workgroup_size_z), \
        'grid_size', json_object('x', K.grid_size_x, 'y', K.grid_size_y, 'z', K.grid_size_z))"
        .replace("{AH}", AGENT_HANDLE);
    write!(w, ",\"kernel_dispatch\":[")?;
    let mut first = true;
    let (kd, kd_op) = kinds.op("KERNEL_DISPATCH", "KERNEL_DISPATCH_COMPLETE");
    rows(
        &conn,
        &format!(
            "SELECT (SELECT TI.tid FROM rocpd_info_thread TI WHERE TI.id = K.tid), E.stack_id, E.correlation_id, E.parent_stack_id, K.start, K.\"end\", {info}, K.stream_id \
             FROM rocpd_kernel_dispatch K JOIN rocpd_event E ON E.id = K.event_id ORDER BY K.start"
        ),
        |r| {
            let info: Value = serde_json::from_str(&r.get::<_, String>(6)?)?;
            let v = json!({"size": 184, "kind": kd, "operation": kd_op, "thread_id": r.get::<_, Option<i64>>(0)?,
                "correlation_id": corr(r.get(1)?, r.get(2)?, r.get(3)?), "start_timestamp": r.get::<_, i64>(4)?,
                "end_timestamp": r.get::<_, i64>(5)?, "dispatch_info": info,
                "stream_id": {"handle": r.get::<_, Option<i64>>(7)?.unwrap_or(0)}});
            write!(w, "{}{v}", if first { "" } else { "," })?;
            first = false;
            *counts.entry("kernel_dispatch".into()).or_default() += 1;
            Ok(())
        },
    )?;
    write!(w, "],\"memory_copy\":[")?;
    first = true;
    rows(
        &conn,
        &format!(
            "SELECT N.string, (SELECT TI.tid FROM rocpd_info_thread TI WHERE TI.id = M.tid), E.stack_id, E.correlation_id, E.parent_stack_id, M.start, M.\"end\", \
             {AGENT_HANDLE}M.dst_agent_id), {AGENT_HANDLE}M.src_agent_id), M.size, M.stream_id \
             FROM rocpd_memory_copy M JOIN rocpd_event E ON E.id = M.event_id JOIN rocpd_string N ON N.id = M.name_id \
             ORDER BY M.start"
        ),
        |r| {
            let (k, o) = kinds.op("MEMORY_COPY", &r.get::<_, String>(0)?);
            let v = json!({"size": 1, "kind": k, "operation": o, "thread_id": r.get::<_, Option<i64>>(1)?,
                "correlation_id": corr(r.get(2)?, r.get(3)?, r.get(4)?), "start_timestamp": r.get::<_, i64>(5)?,
                "end_timestamp": r.get::<_, i64>(6)?, "dst_agent_id": {"handle": r.get::<_, Option<i64>>(7)?},
                "src_agent_id": {"handle": r.get::<_, Option<i64>>(8)?}, "bytes": r.get::<_, Option<i64>>(9)?,
                "stream_id": {"handle": r.get::<_, Option<i64>>(10)?.unwrap_or(0)}});
            write!(w, "{}{v}", if first { "" } else { "," })?;
            first = false;
            *counts.entry("memory_copy".into()).or_default() += 1;
            Ok(())
        },
    )?;
    for (list, scratch) in [("memory_allocation", false), ("scratch_memory", true)] {
        write!(w, "],\"{list}\":[")?;
        first = true;
        rows(
            &conn,
            &format!(
                "SELECT M.type, M.level, (SELECT TI.tid FROM rocpd_info_thread TI WHERE TI.id = M.tid), E.stack_id, E.correlation_id, E.parent_stack_id, M.start, M.\"end\", \
                 CASE WHEN M.agent_id IS NULL THEN 0 ELSE {AGENT_HANDLE}M.agent_id) END, M.address, M.size, M.queue_id, \
                 COALESCE(json_extract(M.extdata, '$.flags'), 0) \
                 FROM rocpd_memory_allocate M LEFT JOIN rocpd_event E ON E.id = M.event_id \
                 WHERE (M.level = 'SCRATCH') = {} ORDER BY M.start",
                if scratch { 1 } else { 0 }
            ),
            |r| {
                let ty: String = r.get(0)?;
                let level: Option<String> = r.get(1)?;
                let (kind, op) = if scratch {
                    ("SCRATCH_MEMORY".to_string(), format!("SCRATCH_MEMORY_{ty}"))
                } else {
                    let vmem = if level.as_deref() == Some("VIRTUAL") { "VMEM_" } else { "" };
                    let t = if ty == "ALLOC" { "ALLOCATE".to_string() } else { ty };
                    ("MEMORY_ALLOCATION".to_string(), format!("MEMORY_ALLOCATION_{vmem}{t}"))
                };
                let (k, o) = kinds.op(&kind, &op);
                let mut v = json!({"size": 1, "kind": k, "operation": o, "thread_id": r.get::<_, Option<i64>>(2)?,
                    "start_timestamp": r.get::<_, i64>(6)?, "end_timestamp": r.get::<_, i64>(7)?,
                    "agent_id": {"handle": r.get::<_, Option<i64>>(8)?.unwrap_or(0)},
                    "allocation_size": r.get::<_, Option<i64>>(10)?.unwrap_or(0)});
                if scratch {
                    v["queue_id"] = json!({"handle": r.get::<_, Option<i64>>(11)?.unwrap_or(0)});
                    v["flags"] = json!(r.get::<_, Option<i64>>(12)?.unwrap_or(0));
                } else {
                    v["correlation_id"] = corr(r.get(3)?, r.get(4)?, r.get(5)?);
                    v["address"] = json!(format!("0x{:016x}", r.get::<_, Option<i64>>(9)?.unwrap_or(0) as u64));
                }
                write!(w, "{}{v}", if first { "" } else { "," })?;
                first = false;
                *counts.entry(list.into()).or_default() += 1;
                Ok(())
            },
        )?;
    }
    // Counter values, one callback record per dispatch with its counters, into a file of
    // their own: rocprofv3 writes `callback_records` before `buffer_records`.
    write!(w, "]}}")?;
    w.flush()?;
    drop(w);
    let callbacks_path = out_dir.join(format!(".{pid}_callbacks.tmp"));
    let mut w = std::io::BufWriter::new(std::fs::File::create(&callbacks_path)?);
    write!(w, "\"callback_records\":{{\"counter_collection\":[")?;
    first = true;
    let mut current: Option<(i64, Value)> = None;
    let flush =
        |w: &mut std::io::BufWriter<std::fs::File>, rec: Value, first: &mut bool| -> Result<()> {
            write!(w, "{}{rec}", if *first { "" } else { "," })?;
            *first = false;
            Ok(())
        };
    rows(
        &conn,
        &format!(
            "SELECT K.id, (SELECT TI.tid FROM rocpd_info_thread TI WHERE TI.id = K.tid), E.stack_id, E.correlation_id, E.parent_stack_id, K.start, K.\"end\", {info}, \
             K.stream_id, P.pmc_id, P.value FROM rocpd_pmc_event P JOIN rocpd_kernel_dispatch K ON K.event_id = P.event_id \
             JOIN rocpd_event E ON E.id = K.event_id ORDER BY K.start, K.id, P.id"
        ),
        |r| {
            let id: i64 = r.get(0)?;
            let value = json!({"counter_id": {"handle": r.get::<_, i64>(9)?}, "value": r.get::<_, Option<f64>>(10)?});
            *counts.entry("counter_collection".into()).or_default() += 1;
            if let Some((cur, rec)) = current.as_mut() {
                if *cur == id {
                    rec["records"].as_array_mut().expect("array").push(value);
                    return Ok(());
                }
            }
            if let Some((_, rec)) = current.take() {
                flush(&mut w, rec, &mut first)?;
            }
            let info: Value = serde_json::from_str(&r.get::<_, String>(7)?)?;
            current = Some((
                id,
                json!({"thread_id": r.get::<_, Option<i64>>(1)?, "dispatch_data": {"size": 1,
                    "correlation_id": corr(r.get(2)?, r.get(3)?, r.get(4)?), "start_timestamp": r.get::<_, i64>(5)?,
                    "end_timestamp": r.get::<_, i64>(6)?, "dispatch_info": info},
                    "records": [value], "stream_id": {"handle": r.get::<_, Option<i64>>(8)?.unwrap_or(0)}}),
            ));
            Ok(())
        },
    )?;
    if let Some((_, rec)) = current.take() {
        flush(&mut w, rec, &mut first)?;
    }
    write!(w, "]}}")?;
    // The small tables, after the records.
    let mut agents = Vec::new();
    rows(
        &conn,
        "SELECT COALESCE(json_extract(extdata, '$.id.handle'), id), type, absolute_index, logical_index, type_index, \
         name, vendor_name, product_name, model_name FROM rocpd_info_agent ORDER BY id",
        |r| {
            agents.push(json!({"size": 312, "id": {"handle": r.get::<_, i64>(0)?},
                "type": if r.get::<_, String>(1)? == "GPU" { 2 } else { 1 },
                "node_id": r.get::<_, Option<i64>>(2)?, "logical_node_id": r.get::<_, Option<i64>>(3)?,
                "logical_node_type_id": r.get::<_, Option<i64>>(4)?, "name": r.get::<_, Option<String>>(5)?,
                "vendor_name": r.get::<_, Option<String>>(6)?, "product_name": r.get::<_, Option<String>>(7)?,
                "model_name": r.get::<_, Option<String>>(8)?}));
            Ok(())
        },
    )?;
    let mut counters = Vec::new();
    rows(
        &conn,
        &format!(
            "SELECT {AGENT_HANDLE}P.agent_id), P.id, P.name, P.description, P.block, P.expression, P.is_constant, \
             P.is_derived FROM rocpd_info_pmc P ORDER BY P.id"
        ),
        |r| {
            counters.push(json!({"agent_id": {"handle": r.get::<_, Option<i64>>(0)?}, "id": {"handle": r.get::<_, i64>(1)?},
                "name": r.get::<_, String>(2)?, "description": r.get::<_, Option<String>>(3)?,
                "block": r.get::<_, Option<String>>(4)?, "expression": r.get::<_, Option<String>>(5)?,
                "is_constant": r.get::<_, Option<i64>>(6)?, "is_derived": r.get::<_, Option<i64>>(7)?}));
            Ok(())
        },
    )?;
    let mut symbols = Vec::new();
    rows(
        &conn,
        "SELECT id, code_object_id, kernel_name, COALESCE(NULLIF(display_name, ''), kernel_name), group_segment_size, \
         private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count FROM rocpd_info_kernel_symbol ORDER BY id",
        |r| {
            symbols.push(json!({"size": 88, "kernel_id": r.get::<_, i64>(0)?, "code_object_id": r.get::<_, Option<i64>>(1)?,
                "kernel_name": r.get::<_, Option<String>>(2)?, "formatted_kernel_name": r.get::<_, Option<String>>(3)?,
                "group_segment_size": r.get::<_, Option<i64>>(4)?, "private_segment_size": r.get::<_, Option<i64>>(5)?,
                "sgpr_count": r.get::<_, Option<i64>>(6)?, "arch_vgpr_count": r.get::<_, Option<i64>>(7)?,
                "accum_vgpr_count": r.get::<_, Option<i64>>(8)?}));
            Ok(())
        },
    )?;
    let buffer: Vec<Value> = kinds
        .names
        .iter()
        .zip(&kinds.ops)
        .map(|(k, ops)| json!({"kind": k, "operations": ops}))
        .collect();
    let strings = json!({"callback_records": [], "buffer_records": buffer, "marker_api": markers,
        "correlation_id": {"external": []}, "counters": {"dimension_ids": []}});
    w.flush()?;
    drop(w);
    // The small tables before the records, in rocprofv3's order.
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
    write!(
        out,
        "{{\"rocprofiler-sdk-tool\":[{{\"metadata\":{meta},\"agents\":{},\"counters\":{},\"strings\":{strings},\"code_objects\":[],\"kernel_symbols\":{},\"summary\":[],",
        Value::Array(agents),
        Value::Array(counters),
        Value::Array(symbols)
    )?;
    std::io::copy(&mut std::fs::File::open(&callbacks_path)?, &mut out)?;
    write!(out, ",")?;
    std::io::copy(&mut std::fs::File::open(&records_path)?, &mut out)?;
    write!(out, "}}]}}")?;
    out.flush()?;
    std::fs::remove_file(&records_path)?;
    std::fs::remove_file(&callbacks_path)?;
    Ok((path, counts))
}
