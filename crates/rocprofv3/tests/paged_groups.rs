//! Flow groups kept mostly in a temporary file (D101) give the rows they give in memory.
//! Its own test binary: the page limit it lowers is the process's.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;
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
        rocpd_rocprofv3::set_pages_in_memory(1);
        let before = rocpd_rocprofv3::pages_written();
        for threads in [1, 2] {
            let paged = all_rows(&open(&run, threads));
            assert!(paged == in_memory, "{}: {threads} threads", run.label);
        }
        assert!(
            rocpd_rocprofv3::pages_written() > before + 10,
            "{}: pages went out",
            run.label
        );
        rocpd_rocprofv3::set_pages_in_memory(0);
    }
}
