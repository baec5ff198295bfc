//! Specific values of a few small real files, as the imported database stores them.

mod common;

use common::*;

fn docs(name: &str) -> std::path::PathBuf {
    fixtures().join("rocprofv3-csv-docs").join(name)
}

type Row = (String, i64, i64, i64, i64, i64, i64, i64);

#[test]
fn kernel_trace_values() {
    let imp = import_one(&[docs("kernel_trace.csv")]);
    // "KERNEL_DISPATCH","Agent 4",1,1,834304,1,10,"void addition_kernel<float>(float*, float const*,
    // float const*, int, int)",1,1550151853029637,1550151853042437,0,0,8,0,16,64,1,1,1024,1024,1
    let row: Row = imp
        .conn()
        .query_row(
            "SELECT KS.display_name, K.start, K.\"end\", K.agent_id, K.queue_id, K.stream_id, K.tid, K.kernel_id \
             FROM rocpd_kernel_dispatch K JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id WHERE K.id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?)),
        )
        .unwrap();
    assert_eq!(
        row,
        (
            "void addition_kernel<float>(float*, float const*, float const*, int, int)".to_string(),
            1550151853029637,
            1550151853042437,
            4,
            1,
            1,
            834304,
            10
        )
    );
    let dims: (i64, i64, i64, i64, i64, i64) = imp
        .conn()
        .query_row(
            "SELECT workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z \
             FROM rocpd_kernel_dispatch WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .unwrap();
    assert_eq!(dims, (64, 1, 1, 1024, 1024, 1));
    // "Agent 4" without agent_info.csv: agent id 4, logical index 4, a GPU (kernels ran on it).
    let agent: (i64, String) = imp
        .conn()
        .query_row(
            "SELECT logical_index, type FROM rocpd_info_agent WHERE id = 4",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(agent, (4, "GPU".to_string()));
    // Divide kernel: Accum_VGPR_Count 4 on its symbol; the event carries the correlation id.
    let accum: i64 = imp.one("SELECT accum_vgpr_count FROM rocpd_info_kernel_symbol WHERE id = 11");
    assert_eq!(accum, 4);
    let stack: i64 = imp.one(
        "SELECT E.stack_id FROM rocpd_kernel_dispatch K JOIN rocpd_event E ON E.id = K.event_id WHERE K.id = 4",
    );
    assert_eq!(stack, 4);
    let cat: String = imp.one(
        "SELECT S.string FROM rocpd_kernel_dispatch K JOIN rocpd_event E ON E.id = K.event_id \
         JOIN rocpd_string S ON S.id = E.category_id WHERE K.id = 4",
    );
    assert_eq!(cat, "KERNEL_DISPATCH");
}

#[test]
fn api_call_values() {
    let imp = import_one(&[docs("hip_runtime_trace.csv")]);
    // "HIP_RUNTIME_API_EXT","hipLaunchKernel",238,238,5,1191916547842972,1191916548408842
    let row: (String, String, i64, i64, i64, i64, i64) = imp
        .conn()
        .query_row(
            "SELECT N.string, C.string, R.pid, R.tid, R.start, R.\"end\", E.stack_id FROM rocpd_region R \
             JOIN rocpd_string N ON N.id = R.name_id JOIN rocpd_event E ON E.id = R.event_id \
             JOIN rocpd_string C ON C.id = E.category_id WHERE R.id = 5",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
        )
        .unwrap();
    assert_eq!(
        row,
        (
            "hipLaunchKernel".to_string(),
            "HIP_RUNTIME_API_EXT".to_string(),
            238,
            238,
            1191916547842972,
            1191916548408842,
            5
        )
    );
    let process: (i64, i64, i64) = imp
        .conn()
        .query_row(
            "SELECT id, start, \"end\" FROM rocpd_info_process",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(process, (238, 1191915574691984, 1191916562836351));
}

#[test]
fn marker_values() {
    let imp = import_one(&[docs("marker_api_trace.csv")]);
    let msg: String = imp.one(
        "SELECT json_extract(E.extdata, '$.message') FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id WHERE R.id = 1",
    );
    assert_eq!(msg, "before hipLaunchKernel");
    let name: String =
        imp.one("SELECT S.string FROM rocpd_region R JOIN rocpd_string S ON S.id = R.name_id WHERE R.id = 1");
    assert_eq!(name, "before hipLaunchKernel");
    // "hipLaunchKernel range" was recorded on thread 0.
    let tid: i64 = imp.one("SELECT tid FROM rocpd_region WHERE id = 2");
    assert_eq!(tid, 0);
    assert_eq!(imp.reader_counts()["marker"], 5);
}

#[test]
fn copy_directions_are_normalised() {
    let imp = import_one(&[docs(
        "historical/memory_copy_trace__2024-07-18__c798a92f36.csv",
    )]);
    let rows: Vec<(String, i64, i64)> = imp
        .conn()
        .prepare(
            "SELECT S.string, C.src_agent_id, C.dst_agent_id FROM rocpd_memory_copy C \
             JOIN rocpd_string S ON S.id = C.name_id ORDER BY C.start",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        rows,
        [
            ("MEMORY_COPY_HOST_TO_DEVICE".to_string(), 0, 1),
            ("MEMORY_COPY_DEVICE_TO_HOST".to_string(), 1, 0)
        ]
    );
    // The direction tells the agent types; correlation id 0 means none.
    let types: String = imp
        .one("SELECT group_concat(type, ',') FROM (SELECT type FROM rocpd_info_agent ORDER BY id)");
    assert_eq!(types, "CPU,GPU");
    let stack: Option<i64> = imp.one("SELECT stack_id FROM rocpd_event LIMIT 1");
    assert_eq!(stack, None);

    let imp = import_one(&[docs("memory_copy_trace.csv")]);
    let name: String = imp.one(
        "SELECT S.string FROM rocpd_memory_copy C JOIN rocpd_string S ON S.id = C.name_id ORDER BY C.start LIMIT 1",
    );
    assert_eq!(name, "MEMORY_COPY_HOST_TO_DEVICE");
    let dst: i64 = imp.one("SELECT dst_agent_id FROM rocpd_memory_copy ORDER BY start LIMIT 1");
    assert_eq!(dst, 4);
}

#[test]
fn allocation_values() {
    let imp = import_one(&[docs("memory_allocation_trace.csv")]);
    // "MEMORY_ALLOCATION","MEMORY_ALLOCATION_FREE","",0,"0x00007ffb26354000",7,...
    let free: (Option<i64>, String, String, i64, i64) = imp
        .conn()
        .query_row(
            "SELECT agent_id, type, level, address, size FROM rocpd_memory_allocate WHERE type = 'FREE' ORDER BY start LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap();
    assert_eq!(
        free,
        (None, "FREE".into(), "REAL".into(), 0x7ffb26354000, 0)
    );
    let alloc: (i64, i64) = imp
        .conn()
        .query_row(
            "SELECT agent_id, size FROM rocpd_memory_allocate WHERE type = 'ALLOC' ORDER BY start LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(alloc, (0, 1024));

    let imp = import_one(&[docs("scratch_memory_trace.csv")]);
    let s: (i64, String, String, i64, i64, i64) = imp
        .conn()
        .query_row(
            "SELECT agent_id, type, level, queue_id, tid, json_extract(extdata, '$.flags') \
             FROM rocpd_memory_allocate ORDER BY start LIMIT 1",
            [],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )
        .unwrap();
    assert_eq!(s, (4, "ALLOC".into(), "SCRATCH".into(), 1, 113, 0));
}

#[test]
fn counter_values() {
    let imp =
        import_one(
            &[fixtures().join("rocprofv3-csv-llamacpp/decode_stall_counter_collection.csv")],
        );
    // "1","1","Agent 1",...,"GRBM_EA_BUSY","3564.000000","342343619401537","342343619411517"
    let v: f64 = imp.one(
        "SELECT P.value FROM rocpd_pmc_event P JOIN rocpd_info_pmc I ON I.id = P.pmc_id \
         JOIN rocpd_kernel_dispatch K ON K.event_id = P.event_id WHERE K.id = 1 AND I.name = 'GRBM_EA_BUSY'",
    );
    assert_eq!(v, 3564.0);
    let k: (i64, i64, i64, String) = imp
        .conn()
        .query_row(
            "SELECT K.start, K.\"end\", K.agent_id, KS.kernel_name FROM rocpd_kernel_dispatch K \
             JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id WHERE K.id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(
        k,
        (
            342343619401537,
            342343619411517,
            1,
            "__amd_rocclr_copyBuffer".into()
        )
    );
    // Values written as %.8e read as numbers.
    let small: i64 = imp.one("SELECT COUNT(*) FROM rocpd_pmc_event WHERE value > 0 AND value < 1");
    assert!(small > 0);
    let pmcs: i64 = imp.one("SELECT COUNT(*) FROM rocpd_info_pmc");
    assert_eq!(pmcs, 10);
}

#[test]
fn rocpd_convert_csv_keeps_its_guid() {
    let imp = import_one(&[docs("rocpd-to-csv.csv")]);
    assert_eq!(imp.report.guid, "0000ddb5-8903-7903-b269-cd8d3745bb8a");
    let g: String = imp.one("SELECT value FROM rocpd_metadata WHERE tag = 'guid'");
    assert_eq!(g, "0000ddb5-8903-7903-b269-cd8d3745bb8a");
}

#[test]
fn early_kernel_trace_values() {
    // 2024-07: bare agent number, raw 64-bit queue handle, no Thread_Id / Dispatch_Id.
    let imp = import_one(&[docs("historical/kernel_trace__2024-07-18__c798a92f36.csv")]);
    let k: (i64, i64, i64, Option<i64>, i64, i64) = imp
        .conn()
        .query_row(
            "SELECT dispatch_id, agent_id, queue_id, tid, private_segment_size, kernel_id FROM rocpd_kernel_dispatch",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .unwrap();
    assert_eq!(k, (1, 1, 139690710949888, None, 0, 15));
    let q: String = imp.one("SELECT name FROM rocpd_info_queue");
    assert_eq!(q, "Queue 139690710949888");
}
