//! The real 908_results.json.gz (37 MB of JSON, 43,915 dispatches, 8 GPUs) imports with
//! peak memory well below its size. Alone in its test binary so that the process's peak
//! resident set (VmHWM) measures this import only.

mod common;

use common::*;

fn vm_hwm_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn json_908_imports_streaming() {
    let path = fixtures().join("rocprofv3-json/908_results.json.gz");
    let before = vm_hwm_kib();
    let imp = import_one(&[path]);
    let peak = vm_hwm_kib();
    eprintln!("VmHWM before {before:?} KiB, after import {peak:?} KiB");
    if let Some(peak) = peak {
        // The decompressed document is 37,455,763 bytes; stay far below it.
        assert!(peak < 36 * 1024, "peak RSS {peak} KiB");
    }
    assert_eq!(imp.report.count("rocpd_kernel_dispatch"), 43_915);
    assert_eq!(imp.report.count("rocpd_info_kernel_symbol"), 9_889);
    assert_eq!(imp.report.count("rocpd_info_agent"), 10);
    assert_eq!(imp.report.count("rocpd_info_code_object"), 38);
    let c = imp.reader_counts();
    assert_eq!(c["kernel_dispatch"], 43_915);
    imp.check_integrity();

    // The first record: {"kind":11,"operation":2,"thread_id":908,"correlation_id":{"internal":1},
    // "start_timestamp":63857982592000,"end_timestamp":63857982594840,"dispatch_info":{"agent_id":
    // {"handle":37946},"queue_id":{"handle":16},"kernel_id":8,"dispatch_id":1,...,"workgroup_size":
    // {"x":512,...},"grid_size":{"x":512,...}},"stream_id":{"handle":0}}
    let k: (i64, i64, i64, i64, i64, i64, i64, i64) = imp
        .conn()
        .query_row(
            "SELECT agent_id, queue_id, kernel_id, tid, start, \"end\", workgroup_size_x, grid_size_x \
             FROM rocpd_kernel_dispatch WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?)),
        )
        .unwrap();
    assert_eq!(k, (2, 16, 8, 908, 63857982592000, 63857982594840, 512, 512));
    let gpus: i64 = imp.one("SELECT COUNT(*) FROM rocpd_info_agent WHERE type = 'GPU' AND product_name = 'AMD Instinct MI350X'");
    assert_eq!(gpus, 8);
    let cat: String = imp.one(
        "SELECT C.string FROM rocpd_kernel_dispatch K JOIN rocpd_event E ON E.id = K.event_id \
         JOIN rocpd_string C ON C.id = E.category_id LIMIT 1",
    );
    assert_eq!(cat, "KERNEL_DISPATCH");
    let host: String = imp.one("SELECT hostname FROM rocpd_info_node");
    assert_eq!(host, "smci350-zts-gtu-c6-25");
    let cmd: String = imp.one("SELECT command FROM rocpd_info_process WHERE id = 908");
    assert!(cmd.starts_with("/opt/conda/envs/py_3.10/bin/python3.10 -u /workspace/aorta/train.py"));
    // Kernel names resolve through kernel_symbols (display name = formatted name).
    let name: String = imp.one(
        "SELECT KS.display_name FROM rocpd_kernel_dispatch K JOIN rocpd_info_kernel_symbol KS ON KS.id = K.kernel_id WHERE K.id = 1",
    );
    let formatted: String = imp.one(
        "SELECT json_extract(extdata, '$.formatted_kernel_name') FROM rocpd_info_kernel_symbol WHERE id = 8",
    );
    assert_eq!(name, formatted);
    assert!(!name.is_empty());
}
