//! rocprofv3 JSON documents written here: every record kind, several processes, records
//! before the tables they need, gzip.

mod common;

use std::io::Write;

use common::*;
use rocpd_rocprofv3::{group_runs, sniff_file, Detected, RunSource};
use serde_json::json;

fn strings() -> serde_json::Value {
    json!({
        "callback_records": [],
        "buffer_records": [
            {"kind": "NONE", "operations": []},
            {"kind": "HIP_RUNTIME_API_EXT", "operations": ["hipMalloc", "hipLaunchKernel", "hipMemcpy"]},
            {"kind": "MARKER_CORE_RANGE_API", "operations": ["roctxRangePushA", "roctxRangePop"]},
            {"kind": "KERNEL_DISPATCH", "operations": ["NONE", "KERNEL_DISPATCH_ENQUEUE", "KERNEL_DISPATCH_COMPLETE"]},
            {"kind": "MEMORY_COPY", "operations": ["MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_HOST", "MEMORY_COPY_HOST_TO_DEVICE"]},
            {"kind": "MEMORY_ALLOCATION", "operations": ["MEMORY_ALLOCATION_NONE", "MEMORY_ALLOCATION_ALLOCATE", "MEMORY_ALLOCATION_FREE"]},
            {"kind": "SCRATCH_MEMORY", "operations": ["SCRATCH_MEMORY_NONE", "SCRATCH_MEMORY_ALLOC", "SCRATCH_MEMORY_FREE"]}
        ],
        "marker_api": [{"key": 10, "value": "train step, \"one\""}],
        "correlation_id": {"external": [{"key": 77, "value": "my_range"}]},
        "counters": {"dimension_ids": []},
        "pc_sample_instructions": [],
        "att_filenames": ["a.att"]
    })
}

fn agents() -> serde_json::Value {
    json!([
        {"size": 312, "id": {"handle": 5000}, "type": 1, "node_id": 0, "logical_node_id": 0,
         "logical_node_type_id": 0, "name": "EPYC", "vendor_name": "CPU", "product_name": "EPYC", "model_name": ""},
        {"size": 312, "id": {"handle": 5001}, "type": 2, "node_id": 1, "logical_node_id": 1,
         "logical_node_type_id": 0, "name": "gfx942", "vendor_name": "AMD", "product_name": "MI300X",
         "model_name": "ip discovery", "device_id": 29857}
    ])
}

fn corr(i: u64, e: u64) -> serde_json::Value {
    json!({"internal": i, "external": e, "ancestor": 0})
}

fn records() -> serde_json::Value {
    let info = json!({"size": 72, "agent_id": {"handle": 5001}, "queue_id": {"handle": 16}, "kernel_id": 3,
        "dispatch_id": 1, "private_segment_size": 0, "group_segment_size": 256,
        "workgroup_size": {"x": 256, "y": 1, "z": 1}, "grid_size": {"x": 4096, "y": 1, "z": 1}});
    json!({
        "callback_records": {"counter_collection": [
            {"thread_id": 11, "dispatch_data": {"size": 1, "correlation_id": corr(2, 77),
              "start_timestamp": 1200, "end_timestamp": 1800, "dispatch_info": info},
             "records": [{"counter_id": {"handle": 40}, "value": 12.5}, {"counter_id": {"handle": 41}, "value": 1.0}],
             "stream_id": {"handle": 0}}
        ]},
        "buffer_records": {
            "kernel_dispatch": [
                {"size": 184, "kind": 3, "operation": 2, "thread_id": 11, "correlation_id": corr(2, 77),
                 "start_timestamp": 1200, "end_timestamp": 1800, "dispatch_info": info, "stream_id": {"handle": 3}}
            ],
            "hip_api": [
                {"size": 1, "kind": 1, "operation": 0, "correlation_id": corr(1, 0), "start_timestamp": 1000,
                 "end_timestamp": 1100, "thread_id": 11},
                {"size": 1, "kind": 1, "operation": 1, "correlation_id": corr(2, 77), "start_timestamp": 1110,
                 "end_timestamp": 1190, "thread_id": 11},
                {"size": 1, "kind": 1, "operation": 2, "correlation_id": corr(3, 0), "start_timestamp": 1900,
                 "end_timestamp": 2500, "thread_id": 12}
            ],
            "marker_api": [
                {"size": 1, "kind": 2, "operation": 0, "correlation_id": corr(10, 0), "start_timestamp": 900,
                 "end_timestamp": 3000, "thread_id": 11}
            ],
            "memory_copy": [
                {"size": 1, "kind": 4, "operation": 2, "thread_id": 12, "correlation_id": corr(3, 0),
                 "start_timestamp": 2000, "end_timestamp": 2400, "dst_agent_id": {"handle": 5001},
                 "src_agent_id": {"handle": 5000}, "bytes": 65536, "stream_id": {"handle": 0}}
            ],
            "memory_allocation": [
                {"size": 1, "kind": 5, "operation": 1, "thread_id": 11, "correlation_id": corr(1, 0),
                 "start_timestamp": 1010, "end_timestamp": 1090, "agent_id": {"handle": 5001},
                 "address": "0x00007f0000000000", "allocation_size": 1048576},
                {"size": 1, "kind": 5, "operation": 2, "thread_id": 11, "correlation_id": corr(4, 0),
                 "start_timestamp": 2600, "end_timestamp": 2700, "agent_id": {"handle": 0},
                 "address": "0x00007f0000000000", "allocation_size": 0}
            ],
            "scratch_memory": [
                {"size": 1, "kind": 6, "operation": 1, "agent_id": {"handle": 5001}, "queue_id": {"handle": 16},
                 "thread_id": 11, "start_timestamp": 1150, "end_timestamp": 1160, "flags": 0, "allocation_size": 4096}
            ],
            "kfd": [{"x": 1}, {"x": 2}],
            "pc_sample_host_trap": []
        }
    })
}

fn process(pid: u64, records_first: bool) -> serde_json::Value {
    let meta = json!({"node": {"id": 7, "hash": 77, "machine_id": "abc", "hostname": "host-1"},
        "pid": pid, "init_time": 500, "fini_time": 5000, "command": ["./app", "--x"], "config": {"json_output": true}});
    let symbols = json!([{"size": 88, "kernel_id": 3, "code_object_id": 1, "kernel_name": "k.kd",
        "formatted_kernel_name": "k", "group_segment_size": 256, "sgpr_count": 16, "arch_vgpr_count": 8}]);
    let code_objects = json!([{"size": 88, "code_object_id": 1, "agent_id": {"handle": 5001},
        "uri": "file:///a.out#offset=0", "storage_type": 1}]);
    let counters = json!([{"agent_id": {"handle": 5001}, "id": {"handle": 40}, "is_constant": 0,
        "is_derived": 0, "name": "SQ_WAVES", "description": "waves", "block": "SQ", "expression": ""}]);
    let r = records();
    // Build the object text in a chosen key order.
    let mut parts = vec![format!("\"metadata\":{meta}")];
    let header = [
        format!("\"agents\":{}", agents()),
        format!("\"counters\":{counters}"),
        format!("\"strings\":{}", strings()),
        format!("\"code_objects\":{code_objects}"),
        format!("\"kernel_symbols\":{symbols}"),
        "\"summary\":[]".to_string(),
    ];
    let recs = [
        format!("\"callback_records\":{}", r["callback_records"]),
        format!("\"buffer_records\":{}", r["buffer_records"]),
    ];
    if records_first {
        parts.extend(recs);
        parts.extend(header);
    } else {
        parts.extend(header);
        parts.extend(recs);
    }
    serde_json::from_str(&format!("{{{}}}", parts.join(","))).unwrap()
}

fn document(records_first: bool) -> String {
    // serde_json keeps insertion order only with preserve_order; write the text by hand.
    let procs: Vec<String> = [100u64, 200]
        .iter()
        .map(|pid| {
            let v = process(*pid, records_first);
            let order = if records_first {
                [
                    "metadata",
                    "callback_records",
                    "buffer_records",
                    "agents",
                    "counters",
                    "strings",
                    "code_objects",
                    "kernel_symbols",
                    "summary",
                ]
            } else {
                [
                    "metadata",
                    "agents",
                    "counters",
                    "strings",
                    "code_objects",
                    "kernel_symbols",
                    "summary",
                    "callback_records",
                    "buffer_records",
                ]
            };
            let fields: Vec<String> = order.iter().map(|k| format!("\"{k}\":{}", v[*k])).collect();
            format!("{{{}}}", fields.join(","))
        })
        .collect();
    format!("{{\"rocprofiler-sdk-tool\":[{}]}}", procs.join(","))
}

fn check(imp: &Imported, pid: i64) {
    imp.check_integrity();
    let c = imp.reader_counts();
    let streamed = imp.stream_all();
    for (t, n) in &c {
        assert_eq!(streamed.get(t).copied().unwrap_or(0), *n, "streamed {t}");
    }
    assert_eq!(c["region"], 3, "{c:?}");
    assert_eq!(c["marker"], 1);
    assert_eq!(c["kernel_dispatch"], 1);
    assert_eq!(c["memory_copy"], 1);
    assert_eq!(c["memory_allocation"], 3);
    assert_eq!(c["pmc_value"], 2);
    assert!(
        imp.report
            .ignored
            .iter()
            .any(|s| s.contains("2 records of") && s.contains("kfd")),
        "{:?}",
        imp.report.ignored
    );
    let p: (i64, String, i64) = imp
        .conn()
        .query_row(
            "SELECT pid, command, init FROM rocpd_info_process",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(p, (pid, "./app --x".into(), 500));
    // Dispatch: agent handle 5001 -> node 1; the counter record came first and the buffer
    // record completed it (stream 3); kernel-rename text from the external id.
    let d: (i64, i64, i64, i64, i64, i64, String, String) = imp
        .conn()
        .query_row(
            "SELECT K.agent_id, K.queue_id, K.stream_id, K.start, K.\"end\", K.group_segment_size, KS.display_name, RN.string \
             FROM rocpd_kernel_dispatch K JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id \
             JOIN rocpd_string RN ON RN.id = K.region_name_id WHERE K.id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?)),
        )
        .unwrap();
    assert_eq!(
        d,
        (1, 16, 3, 1200, 1800, 256, "k".into(), "my_range".into())
    );
    let e: (i64, i64, String) = imp
        .conn()
        .query_row(
            "SELECT E.stack_id, E.correlation_id, C.string FROM rocpd_kernel_dispatch K JOIN rocpd_event E ON E.id = K.event_id \
             JOIN rocpd_string C ON C.id = E.category_id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(e, (2, 77, "KERNEL_DISPATCH".into()));
    // Marker: operation name as the region name, the message from strings.marker_api.
    let m: (String, String) = imp
        .conn()
        .query_row(
            "SELECT N.string, json_extract(E.extdata, '$.message') FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id \
             JOIN rocpd_string N ON N.id = R.name_id WHERE R.id = 10",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(m, ("roctxRangePushA".into(), "train step, \"one\"".into()));
    let copy: (String, i64, i64, i64) = imp
        .conn()
        .query_row(
            "SELECT N.string, C.src_agent_id, C.dst_agent_id, C.size FROM rocpd_memory_copy C JOIN rocpd_string N ON N.id = C.name_id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(copy, ("MEMORY_COPY_HOST_TO_DEVICE".into(), 0, 1, 65536));
    let allocs: Vec<(Option<i64>, String, String, i64)> = imp
        .conn()
        .prepare("SELECT agent_id, type, level, size FROM rocpd_memory_allocate ORDER BY start")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        allocs,
        [
            (Some(1), "ALLOC".into(), "REAL".into(), 1048576),
            (Some(1), "ALLOC".into(), "SCRATCH".into(), 4096),
            (None, "FREE".into(), "REAL".into(), 0)
        ]
    );
    let pmc: (String, String, f64) = imp
        .conn()
        .query_row(
            "SELECT I.name, I.block, P.value FROM rocpd_pmc_event P JOIN rocpd_info_pmc I ON I.id = P.pmc_id WHERE I.id = 40",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(pmc, ("SQ_WAVES".into(), "SQ".into(), 12.5));
    let host: (i64, String) = imp
        .conn()
        .query_row("SELECT id, hostname FROM rocpd_info_node", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(host, (7, "host-1".into()));
    let agent: (String, i64, String) = imp
        .conn()
        .query_row(
            "SELECT type, uuid, product_name FROM rocpd_info_agent WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(agent, ("GPU".into(), 29857, "MI300X".into()));
    let storage: String = imp.one("SELECT storage_type FROM rocpd_info_code_object WHERE id = 1");
    assert_eq!(storage, "FILE");
}

fn import_doc(name: &str, bytes: &[u8]) -> Vec<Imported> {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    assert_eq!(sniff_file(&path).unwrap(), Some(Detected::Json));
    let runs = group_runs(&[path]).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(
        matches!(
            runs[1].source,
            RunSource::Json {
                index: 1,
                pid: Some(200),
                ..
            }
        ),
        "{:?}",
        runs[1]
    );
    let out = runs
        .iter()
        .map(|r| import_run(r, &Default::default()).unwrap())
        .collect();
    drop(d);
    out
}

#[test]
fn every_record_kind_of_two_processes() {
    let all = import_doc("two_results.json", document(false).as_bytes());
    check(&all[0], 100);
    check(&all[1], 200);
    assert_ne!(all[0].report.guid, all[1].report.guid);
}

#[test]
fn records_before_strings_and_agents() {
    let all = import_doc("late_results.json", document(true).as_bytes());
    check(&all[0], 100);
    check(&all[1], 200);
}

#[test]
fn gzip_compressed() {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(document(false).as_bytes()).unwrap();
    let gz = enc.finish().unwrap();
    let all = import_doc("two_results.json.gz", &gz);
    check(&all[0], 100);
}
