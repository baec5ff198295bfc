//! One test per CSV header generation seen in the wild (and the quoting oddities), on
//! small files written here.

mod common;

use common::*;
use rocpd_rocprofv3::{group_runs, RunSource};

/// (dispatch id, agent, queue, tid, stream, start, kernel name)
type Dispatch = (i64, i64, i64, Option<i64>, i64, i64, String);

fn dispatches(imp: &Imported) -> Vec<Dispatch> {
    imp.conn()
        .prepare(
            "SELECT K.dispatch_id, K.agent_id, K.queue_id, K.tid, K.stream_id, K.start, KS.kernel_name \
             FROM rocpd_kernel_dispatch K JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id ORDER BY K.start",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn kernel_trace_2024_07_with_counters_2024_08() {
    // Bare agent numbers, raw queue handles, no Thread_Id / Dispatch_Id; the counter file of
    // that time has no Kernel_Id and no timestamps.
    let (_d, paths) = write_dir(&[
        (
            "5619_kernel_trace.csv",
            "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Private_Segment_Size\",\"Group_Segment_Size\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n\
             \"KERNEL_DISPATCH\",1,139892123975680,15,\"matrixTranspose(float*, float*, int)\",1,100,200,0,0,4,4,1,1024,1024,1\n\
             \"KERNEL_DISPATCH\",1,139892123975680,15,\"matrixTranspose(float*, float*, int)\",2,300,400,0,0,4,4,1,1024,1024,1\n",
        ),
        (
            "5619_counter_collection.csv",
            "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\"\n\
             1,1,1,139892123975680,5619,5620,1048576,\"matrixTranspose(float*, float*, int)\",16,0,0,8,16,\"SQ_WAVES\",65536\n\
             2,2,1,139892123975680,5619,5620,1048576,\"matrixTranspose(float*, float*, int)\",16,0,0,8,16,\"SQ_WAVES\",65536\n",
        ),
    ]);
    let imp = import_one(&paths);
    imp.check_integrity();
    let d = dispatches(&imp);
    assert_eq!(d.len(), 2);
    assert_eq!(
        d[0],
        (
            1,
            1,
            139892123975680,
            Some(5620),
            0,
            100,
            "matrixTranspose(float*, float*, int)".into()
        )
    );
    // Counter rows attach to the kernel trace's dispatches (same dispatch id).
    let c = imp.reader_counts();
    assert_eq!(c["pmc_value"], 2);
    assert_eq!(c["kernel_dispatch"], 2);
    let pid: i64 = imp.one("SELECT pid FROM rocpd_kernel_dispatch LIMIT 1");
    assert_eq!(pid, 5619);
}

#[test]
fn kernel_trace_2024_08_thread_and_dispatch_ids() {
    let (_d, paths) = write_dir(&[(
        "42_kernel_trace.csv",
        "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Private_Segment_Size\",\"Group_Segment_Size\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n\
         \"KERNEL_DISPATCH\",2,1,77,9,3,\"k\",12,10,20,64,256,64,1,1,64,1,1\n",
    )]);
    let imp = import_one(&paths);
    assert_eq!(dispatches(&imp), [(9, 2, 1, Some(77), 0, 10, "k".into())]);
    let seg: (i64, i64) = imp
        .conn()
        .query_row(
            "SELECT private_segment_size, group_segment_size FROM rocpd_kernel_dispatch",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(seg, (64, 256));
}

#[test]
fn kernel_trace_2025_03_streams_and_agent_labels() {
    let (_d, paths) = write_dir(&[(
        "42_kernel_trace.csv",
        "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Private_Segment_Size\",\"Group_Segment_Size\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n\
         \"KERNEL_DISPATCH\",\"Agent 4\",2,5,77,9,3,\"k\",12,10,20,0,0,64,1,1,64,1,1\n",
    )]);
    let imp = import_one(&paths);
    assert_eq!(dispatches(&imp), [(9, 4, 2, Some(77), 5, 10, "k".into())]);
    let s: String = imp.one("SELECT name FROM rocpd_info_stream");
    assert_eq!(s, "Stream 5");
}

#[test]
fn kernel_trace_2025_06_register_columns() {
    let (_d, paths) = write_dir(&[(
        "42_kernel_trace.csv",
        "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n\
         \"KERNEL_DISPATCH\",\"Agent 1\",1,0,77,1,3,\"k\",1,10,20,512,16,24,8,32,64,1,1,64,1,1\n",
    )]);
    let imp = import_one(&paths);
    let v: (i64, i64, i64, i64, i64, i64, i64) = imp
        .conn()
        .query_row(
            "SELECT K.group_segment_size, K.private_segment_size, S.arch_vgpr_count, S.accum_vgpr_count, \
             S.sgpr_count, S.group_segment_size, S.private_segment_size FROM rocpd_kernel_dispatch K \
             JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
        )
        .unwrap();
    assert_eq!(v, (512, 16, 24, 8, 32, 512, 16));
    let s: String = imp.one("SELECT name FROM rocpd_info_stream");
    assert_eq!(s, "Default Stream");
}

#[test]
fn rocpd_convert_variant_with_guid_and_other_capitalisation() {
    let header = "\"Guid\",\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Lds_Block_Size\",\"Scratch_Size\",\"Vgpr_Count\",\"Accum_Vgpr_Count\",\"Sgpr_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"";
    let g1 = "0000ddb5-8903-7903-b269-cd8d3745bb8a";
    let g2 = "0000ddb5-8903-7903-b269-cd8d3745bb8b";
    let content = format!(
        "{header}\n\
         \"{g1}\",\"KERNEL_DISPATCH\",\"Agent 1\",1,0,10,1,3,\"k\",1,10,20,64,0,12,0,16,64,1,1,64,1,1\n\
         \"{g1}\",\"KERNEL_DISPATCH\",\"Agent 1\",1,0,10,2,3,\"k\",2,30,40,64,0,12,0,16,64,1,1,64,1,1\n\
         \"{g2}\",\"KERNEL_DISPATCH\",\"Agent 1\",1,0,20,1,3,\"k\",1,50,60,64,0,12,0,16,64,1,1,64,1,1\n"
    );
    let (_d, paths) = write_dir(&[("out_kernel_trace.csv", &content)]);
    let runs = group_runs(&paths).unwrap();
    assert_eq!(runs.len(), 2);
    let mut got = Vec::new();
    for run in &runs {
        let imp = import_run(run, &Default::default()).unwrap();
        let n = imp.reader_counts()["kernel_dispatch"];
        let lds: i64 = imp.one("SELECT group_segment_size FROM rocpd_kernel_dispatch LIMIT 1");
        let vgpr: i64 = imp.one("SELECT arch_vgpr_count FROM rocpd_info_kernel_symbol");
        assert_eq!((lds, vgpr), (64, 12));
        got.push((imp.report.guid.clone(), n));
    }
    got.sort();
    assert_eq!(got, [(g1.to_string(), 2), (g2.to_string(), 1)]);
}

#[test]
fn columns_are_matched_by_name_not_position() {
    let (_d, paths) = write_dir(&[(
        "7_hip_api_trace.csv",
        "start_timestamp,END_TIMESTAMP,function,Domain,Extra_Column,Correlation_Id,Thread_Id,Process_Id\n\
         100,200,hipMalloc,HIP_RUNTIME_API_EXT,zzz,3,8,7\n",
    )]);
    let imp = import_one(&paths);
    let r: (i64, i64, i64, i64, String) = imp
        .conn()
        .query_row(
            "SELECT R.id, R.start, R.\"end\", R.tid, S.string FROM rocpd_region R JOIN rocpd_string S ON S.id = R.name_id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap();
    assert_eq!(r, (3, 100, 200, 8, "hipMalloc".into()));
}

#[test]
fn quoting_crlf_and_missing_final_newline() {
    // Quoted fields with commas, doubled quotes and a newline; CRLF line ends; numbers
    // quoted too (QUOTE_ALL); no newline after the last record.
    let content = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\r\n\
        \"KERNEL_DISPATCH\",\"Agent 1\",\"1\",\"0\",\"7\",\"1\",\"3\",\"void f<a, \"\"b\"\">(int,\nint)\",\"1\",\"10\",\"20\",\"0\",\"0\",\"8\",\"0\",\"16\",\"64\",\"1\",\"1\",\"64\",\"1\",\"1\"\r\n\
        \"KERNEL_DISPATCH\",\"Agent 1\",\"1\",\"0\",\"7\",\"2\",\"4\",\"g\u{00b5}\",\"2\",\"30\",\"40\",\"0\",\"0\",\"8\",\"0\",\"16\",\"64\",\"1\",\"1\",\"64\",\"1\",\"1\"";
    let (_d, paths) = write_dir(&[("9_kernel_trace.csv", content)]);
    let imp = import_one(&paths);
    let d = dispatches(&imp);
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].6, "void f<a, \"b\">(int,\nint)");
    assert_eq!(d[1].6, "g\u{00b5}");
    assert_eq!(d[1].5, 30);
}

#[test]
fn agent_info_maps_logical_labels_to_node_ids() {
    let mut header: Vec<String> = [
        "Node_Id",
        "Logical_Node_Id",
        "Agent_Type",
        "Cpu_Cores_Count",
    ]
    .iter()
    .map(|s| format!("\"{s}\""))
    .collect();
    header.extend(
        [
            "\"Name\"",
            "\"Vendor_Name\"",
            "\"Product_Name\"",
            "\"Model_Name\"",
        ]
        .map(String::from),
    );
    let agent_info = format!(
        "{}\n0,0,\"CPU\",64,\"AMD EPYC\",\"CPU\",\"AMD EPYC\",\"\"\n2,1,\"GPU\",0,\"gfx942\",\"AMD\",\"AMD Instinct MI300X\",\"ip discovery\"\n",
        header.join(",")
    );
    let kernels = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n\
        \"KERNEL_DISPATCH\",\"Agent 1\",1,0,7,1,3,\"k\",1,10,20\n";
    let copies = "\"Kind\",\"Direction\",\"Stream_Id\",\"Source_Agent_Id\",\"Destination_Agent_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n\
        \"MEMORY_COPY\",\"MEMORY_COPY_HOST_TO_DEVICE\",0,\"Agent 0\",\"Agent 1\",5,1,2\n";
    let (_d, paths) = write_dir(&[
        ("node-a/12_agent_info.csv", &agent_info),
        ("node-a/12_kernel_trace.csv", kernels),
        ("node-a/12_memory_copy_trace.csv", copies),
    ]);
    let imp = import_one(&paths);
    imp.check_integrity();
    assert_eq!(dispatches(&imp)[0].1, 2);
    let copy: (i64, i64) = imp
        .conn()
        .query_row(
            "SELECT src_agent_id, dst_agent_id FROM rocpd_memory_copy",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(copy, (0, 2));
    let a: (String, i64, i64, String, i64) = imp
        .conn()
        .query_row(
            "SELECT type, logical_index, type_index, product_name, json_extract(extdata, '$.cpu_cores_count') \
             FROM rocpd_info_agent WHERE id = 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap();
    assert_eq!(a, ("CPU".into(), 0, 0, "AMD EPYC".into(), 64));
    let n: i64 = imp.one("SELECT COUNT(*) FROM rocpd_info_agent");
    assert_eq!(n, 2);
    // rocprofv3's <hostname>/<pid>_... layout names the node.
    let host: String = imp.one("SELECT hostname FROM rocpd_info_node");
    assert_eq!(host, "node-a");
    let pid: i64 = imp.one("SELECT id FROM rocpd_info_process");
    assert_eq!(pid, 12);
}

#[test]
fn counter_collection_2025_with_scientific_values() {
    let (_d, paths) = write_dir(&[(
        "3_counter_collection.csv",
        "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n\
         1,1,\"Agent 1\",1,3,3,1048576,17,\"k\",64,0,0,8,0,16,\"SQ_WAVES\",16384.000000,100,200\n\
         1,1,\"Agent 1\",1,3,3,1048576,17,\"k\",64,0,0,8,0,16,\"SQ_BUSY\",1.11193455e-01,100,200\n\
         2,2,\"Agent 1\",1,3,3,1048576,17,\"k\",64,0,0,8,0,16,\"SQ_BUSY\",0.00000000e+00,300,400\n",
    )]);
    let imp = import_one(&paths);
    imp.check_integrity();
    let c = imp.reader_counts();
    assert_eq!((c["kernel_dispatch"], c["pmc_value"]), (2, 3));
    let v: f64 = imp.one(
        "SELECT P.value FROM rocpd_pmc_event P JOIN rocpd_info_pmc I ON I.id = P.pmc_id \
         JOIN rocpd_kernel_dispatch K ON K.event_id = P.event_id WHERE I.name = 'SQ_BUSY' AND K.id = 1",
    );
    assert!((v - 0.111193455).abs() < 1e-12);
    let grid: (i64, i64) = imp
        .conn()
        .query_row(
            "SELECT grid_size_x, workgroup_size_x FROM rocpd_kernel_dispatch WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(grid, (1048576, 64));
}

#[test]
fn memory_allocation_generations() {
    let (_d, paths) = write_dir(&[
        (
            "a/1_memory_allocation_trace.csv",
            "\"Kind\",\"Operation\",\"Agent_Id\",\"Allocation_Size\",\"Starting_Address\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n\
             \"MEMORY_ALLOCATION\",\"MEMORY_ALLOCATION_ALLOCATE\",0,4096,\"0x7f0000001000\",1,10,20\n\
             \"MEMORY_ALLOCATION\",\"MEMORY_ALLOCATION_VMEM_FREE\",\"\",0,\"0x7f0000001000\",2,30,40\n",
        ),
        (
            "b/1_memory_allocation_trace.csv",
            "\"Kind\",\"Operation\",\"Agent_Id\",\"Allocation_Size\",\"Address\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n\
             \"MEMORY_ALLOCATION\",\"MEMORY_ALLOCATION_ALLOCATE\",\"Agent 0\",4096,\"0x00007f0000001000\",1,10,20\n",
        ),
    ]);
    let all = import_all(&paths);
    assert_eq!(all.len(), 2);
    let rows: Vec<(Option<i64>, String, String, i64)> = all[0]
        .conn()
        .prepare("SELECT agent_id, type, level, address FROM rocpd_memory_allocate ORDER BY start")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        rows,
        [
            (Some(0), "ALLOC".into(), "REAL".into(), 0x7f0000001000),
            (None, "FREE".into(), "VIRTUAL".into(), 0x7f0000001000)
        ]
    );
    let addr: i64 = all[1].one("SELECT address FROM rocpd_memory_allocate");
    assert_eq!(addr, 0x7f0000001000);
}

#[test]
fn type_relative_agent_labels() {
    let (_d, paths) = write_dir(&[(
        "5_memory_copy_trace.csv",
        "\"Kind\",\"Direction\",\"Stream_Id\",\"Source_Agent_Id\",\"Destination_Agent_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n\
         \"MEMORY_COPY\",\"MEMORY_COPY_HOST_TO_DEVICE\",0,\"CPU 0\",\"GPU 0\",1,1,2\n\
         \"MEMORY_COPY\",\"MEMORY_COPY_DEVICE_TO_DEVICE\",0,\"GPU 0\",\"GPU 1\",2,3,4\n",
    )]);
    let imp = import_one(&paths);
    imp.check_integrity();
    let agents: Vec<(i64, String, i64)> = imp
        .conn()
        .prepare("SELECT id, type, type_index FROM rocpd_info_agent ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        agents,
        [
            (0, "CPU".into(), 0),
            (1, "GPU".into(), 0),
            (2, "GPU".into(), 1)
        ]
    );
    let run = &group_runs(&paths).unwrap()[0];
    assert!(matches!(&run.source, RunSource::Csv { prefix, .. } if prefix == "5_"));
}
