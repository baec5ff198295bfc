//! Flow groups kept mostly in a temporary file (D101) give the rows they give in memory.
//! Its own test binary: the page limit it lowers is the process's.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use rocpd_model::{Projection, Table};
use rocpd_pipeline::{Source, StreamOptions};
use rocpd_rocprofv3::{DirectRunSource, ImportOptions, Run};

/// Every table's rows from `source`, one batch each.
fn all_rows(source: &dyn Source) -> Vec<(Table, RecordBatch)> {
    let options = StreamOptions {
        projection: Projection::all(),
        batch_rows: 1000,
        tables: None,
    };
    let mut out = Vec::new();
    for p in source.prepare(0, &options).unwrap().iter_mut() {
        let table = p.table();
        let mut s = p.open().unwrap();
        let mut batches = Vec::new();
        while let Some(b) = s.next_batch().unwrap() {
            batches.push(b);
        }
        let one = arrow_select::concat::concat_batches(&table.schema(), &batches).unwrap();
        out.push((table, one));
    }
    out
}

/// The 64-bit integer column `name` of `table`'s rows in `rows`.
fn int_column(rows: &[(Table, RecordBatch)], table: Table, name: &str) -> arrow_array::Int64Array {
    let batch = &rows.iter().find(|(t, _)| *t == table).expect("the table").1;
    batch
        .column_by_name(name)
        .expect(name)
        .as_primitive::<arrow_array::types::Int64Type>()
        .clone()
}

/// Asserts that `run` read with one page of each map in memory, on one thread and two,
/// gives the rows `in_memory`; returns the pages written meanwhile. The caller holds
/// [`PAGE_LIMIT`].
fn same_on_one_page(run: &Run, in_memory: &[(Table, RecordBatch)]) -> u64 {
    rocpd_rocprofv3::set_pages_in_memory(1);
    let before = rocpd_rocprofv3::pages_written();
    for threads in [1, 2] {
        let paged = all_rows(&open(run, threads));
        assert!(paged == in_memory, "{}: {threads} threads", run.label);
    }
    let written = rocpd_rocprofv3::pages_written() - before;
    rocpd_rocprofv3::set_pages_in_memory(0);
    written
}

/// The page limit is the process's: the tests that lower it take turns.
static PAGE_LIMIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_run(path: &Path) -> Run {
    let mut runs = rocpd_rocprofv3::group_runs(&[path.to_path_buf()]).unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.remove(0)
}

fn open(run: &Run, threads: usize) -> DirectRunSource {
    DirectRunSource::open_on(run, &ImportOptions::default(), threads)
        .unwrap()
        .expect("read directly")
}

/// A generated single-process trace as CSV and as JSON, with enough correlation ids for
/// a dozen pages of flow groups.
fn generated(dir: &Path) -> [PathBuf; 2] {
    let cfg = rocpd_gen::GenConfig {
        seed: 11,
        processes: 1,
        iterations: 120,
        ..Default::default()
    };
    let dbs = rocpd_gen::generate(&cfg, &dir.join("gen")).unwrap();
    let (csv, _) = rocpd_gen::export_csv(&dbs[0], &dir.join("csv")).unwrap();
    let (json, _) = rocpd_gen::export_json(&dbs[0], &dir.join("json")).unwrap();
    [csv, json]
}

#[test]
fn flow_groups_written_out_read_back_the_same() {
    let _turn = PAGE_LIMIT.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    for path in generated(tmp.path()) {
        let run = one_run(&path);
        let in_memory = all_rows(&open(&run, 2));
        let flows = in_memory
            .iter()
            .find(|(t, _)| *t == Table::KernelDispatch)
            .map(|(_, b)| {
                let launcher = b.column_by_name("has_launcher").expect("column");
                launcher.as_boolean().true_count()
            })
            .unwrap();
        assert!(
            flows > 1000,
            "{}: {flows} kernels with a launcher",
            run.label
        );
        let written = same_on_one_page(&run, &in_memory);
        assert!(written > 10, "{}: pages went out", run.label);
    }
}

/// A 2024-07 kernel trace (no thread column; dispatches numbered by row) beside a counter
/// file whose rows give each dispatch its thread: the threads the counter rows give are
/// paged (D127), and read back from the file give the rows they give in memory.
#[test]
fn threads_given_by_counter_rows_written_out_read_back_the_same() {
    const N: i64 = 3_000;
    let _turn = PAGE_LIMIT.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let time = |i: i64| (1_000 + 10 * i, 1_005 + 10 * i);
    let mut kernels = String::from(
        "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Private_Segment_Size\",\"Group_Segment_Size\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n",
    );
    let mut counters = String::from(
        "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n",
    );
    for i in 1..=N {
        let (start, end) = time(i);
        kernels.push_str(&format!(
            "\"KERNEL_DISPATCH\",1,1,10,\"k\",{i},{start},{end},0,0,64,1,1,1024,1,1\n"
        ));
        counters.push_str(&format!(
            "{i},{i},1,1,4242,{},1024,10,\"k\",64,0,0,8,16,\"SQ_WAVES\",{i},{start},{end}\n",
            100 + i % 5
        ));
    }
    // API calls launching every tenth kernel, on thread 4242: on two threads the counter
    // file is then described beside them, and the threads it gives come back from the
    // second describer; the counter rows' threads win over the calls' (the import's order).
    let mut apis = String::from(
        "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n",
    );
    for i in (1..=N).step_by(10) {
        let (start, _) = time(i);
        apis.push_str(&format!(
            "\"HIP_RUNTIME_API\",\"hipLaunchKernel\",4242,4242,{i},{},{}\n",
            start - 4,
            start - 2
        ));
    }
    std::fs::write(dir.join("4242_hip_api_trace.csv"), apis).unwrap();
    std::fs::write(dir.join("4242_kernel_trace.csv"), kernels).unwrap();
    std::fs::write(dir.join("4242_counter_collection.csv"), counters).unwrap();
    let run = one_run(&dir);
    let in_memory = all_rows(&open(&run, 2));
    let column = |name: &str| int_column(&in_memory, Table::KernelDispatch, name);
    let (ids, tids) = (column("dispatch_id"), column("tid"));
    assert_eq!(ids.len(), N as usize);
    assert_eq!(tids.null_count(), 0);
    for (id, tid) in ids.values().iter().zip(tids.values()) {
        assert_eq!(*tid, 100 + id % 5, "dispatch {id}");
    }
    assert!(same_on_one_page(&run, &in_memory) > 0, "pages went out");
}

/// API rows whose correlation id an earlier row took get the ids the import gives them
/// (D110); they are kept in paged maps (D131), and read back from the file they give the
/// rows they give in memory.
#[test]
fn rows_with_a_taken_id_written_out_read_back_the_same() {
    const N: i64 = 3_000;
    let _turn = PAGE_LIMIT.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let mut apis = String::from(
        "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n",
    );
    // The run twice over in one file: every row of the second copy finds its id taken.
    for copy in 0..2 {
        for i in 1..=N {
            let start = 1_000 + 10 * (i + copy * N);
            apis.push_str(&format!(
                "\"HIP_RUNTIME_API\",\"hipA\",4242,4242,{i},{start},{}\n",
                start + 5
            ));
        }
    }
    std::fs::write(dir.join("4242_hip_api_trace.csv"), apis).unwrap();
    let run = one_run(&dir);
    let in_memory = all_rows(&open(&run, 2));
    let column = |name: &str| int_column(&in_memory, Table::Region, name);
    let (ids, starts) = (column("id"), column("start"));
    assert_eq!(ids.len(), 2 * N as usize);
    // In time order, the k-th row is the k-th of the file: the second copy's rows took
    // the next free ids, N + 1 on.
    for (k, (id, start)) in ids.values().iter().zip(starts.values()).enumerate() {
        assert_eq!(*start, 1_000 + 10 * (k as i64 + 1));
        assert_eq!(*id, k as i64 + 1, "row {k}");
    }
    assert!(same_on_one_page(&run, &in_memory) > 0, "pages went out");
}
