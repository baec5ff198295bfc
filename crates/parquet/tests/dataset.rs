//! End-to-end tests: generated RocPD databases, read with the project's reader, merged
//! into chunks and written by `ParquetSink`; the dataset is read back with the `parquet`
//! crate's own Arrow reader and compared with plain SQL on the inputs.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::RecordBatch;
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::statistics::Statistics;
use rocpd_db::Database;
use rocpd_model::Catalog;
use rocpd_parquet::{ParquetOptions, ParquetSink, PartitionKey};
use rocpd_pipeline::{BatchStream, OutputReport, Sink, TimeMerge};
use rusqlite::Connection;

const TABLES: [&str; 7] = [
    "api_calls",
    "markers",
    "samples",
    "kernels",
    "memory_copies",
    "memory_allocations",
    "pmc_values",
];

const DIMENSIONS: [&str; 10] = [
    "sources",
    "nodes",
    "processes",
    "threads",
    "agents",
    "queues",
    "streams",
    "kernel_symbols",
    "code_objects",
    "pmc_info",
];

/// Generated inputs shared by the tests of this binary: 2 nodes, 4 processes.
fn inputs() -> &'static [PathBuf] {
    static INPUTS: OnceLock<(tempfile::TempDir, Vec<PathBuf>)> = OnceLock::new();
    &INPUTS
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let cfg = rocpd_gen::GenConfig {
                seed: 7,
                nodes: 2,
                processes: 4,
                gpus_per_node: 2,
                threads_per_process: 3,
                iterations: 240,
                odd_names: true,
                row_ids: std::env::var_os("ROCPD_TEST_ROW_IDS").is_some(),
            };
            let paths = rocpd_gen::generate(&cfg, dir.path()).expect("generate");
            (dir, paths)
        })
        .1
}

/// Reads `inputs` the way the CLI does and feeds the chunks to a `ParquetSink` by hand.
fn write_dataset(
    inputs: &[PathBuf],
    out: &Path,
    opts: ParquetOptions,
) -> rocpd_model::Result<Vec<OutputReport>> {
    let mut sink: Box<dyn Sink> = Box::new(ParquetSink::new(out, opts));
    rocpd_db::convert_into(inputs, sink.as_mut())?;
    sink.finish()
}

struct ReadFile {
    path: PathBuf,
    meta: Arc<ParquetMetaData>,
    batches: Vec<RecordBatch>,
}

impl ReadFile {
    fn rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    fn i64s(&self, col: &str) -> Vec<i64> {
        let mut v = Vec::new();
        for b in &self.batches {
            let a = b.column_by_name(col).unwrap().as_primitive::<Int64Type>();
            v.extend(a.iter().map(|x| x.unwrap_or(i64::MIN)));
        }
        v
    }

    /// Values of a dictionary-encoded string column (None for NULL).
    fn dict_strings(&self, col: &str) -> Vec<Option<String>> {
        let mut v = Vec::new();
        for b in &self.batches {
            let d = b.column_by_name(col).unwrap().as_dictionary::<Int32Type>();
            let values = d.values().as_string::<i32>();
            for k in d.keys().iter() {
                v.push(k.map(|k| values.value(k as usize).to_string()));
            }
        }
        v
    }
}

fn read(path: &Path) -> ReadFile {
    let opts = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
    let builder =
        ParquetRecordBatchReaderBuilder::try_new_with_options(File::open(path).unwrap(), opts)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let meta = builder.metadata().clone();
    let batches = builder
        .build()
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    ReadFile {
        path: path.to_path_buf(),
        meta,
        batches,
    }
}

/// Every `.parquet` file under `dir`, recursively, sorted by path.
fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(parquet_files(&p));
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The one part file of dimension table `name` of a one-run dataset.
fn dim_file(dataset: &Path, name: &str) -> PathBuf {
    let files = parquet_files(&dataset.join(name));
    assert_eq!(files.len(), 1, "{name}: {files:?}");
    files.into_iter().next().unwrap()
}

fn table_rows(dataset: &Path, table: &str) -> usize {
    parquet_files(&dataset.join(table))
        .iter()
        .map(|p| read(p).rows())
        .sum()
}

fn dir_size(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        n += if p.is_dir() {
            dir_size(&p)
        } else {
            p.metadata().unwrap().len()
        };
    }
    n
}

/// Suffixed names of one RocPD base table in a database.
fn suffixed(conn: &Connection, base: &str) -> Vec<String> {
    let mut st = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?1 ESCAPE '!'")
        .unwrap();
    let pattern = format!("{}!_%", base.replace('_', "!_"));
    let names: Vec<String> = st
        .query_map([pattern], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    names
}

fn sql_count(conn: &Connection, sql: &str) -> usize {
    conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as usize
}

/// Expected rows per dataset table, by plain SQL on the inputs.
fn expected_counts(inputs: &[PathBuf]) -> BTreeMap<&'static str, usize> {
    let mut n: BTreeMap<&'static str, usize> = TABLES.iter().map(|t| (*t, 0)).collect();
    for p in inputs {
        let c = Connection::open(p).unwrap();
        for t in suffixed(&c, "rocpd_kernel_dispatch") {
            *n.get_mut("kernels").unwrap() +=
                sql_count(&c, &format!("SELECT COUNT(*) FROM \"{t}\""));
        }
        for t in suffixed(&c, "rocpd_memory_copy") {
            *n.get_mut("memory_copies").unwrap() +=
                sql_count(&c, &format!("SELECT COUNT(*) FROM \"{t}\""));
        }
        for t in suffixed(&c, "rocpd_memory_allocate") {
            *n.get_mut("memory_allocations").unwrap() +=
                sql_count(&c, &format!("SELECT COUNT(*) FROM \"{t}\""));
        }
        for t in suffixed(&c, "rocpd_sample") {
            *n.get_mut("samples").unwrap() +=
                sql_count(&c, &format!("SELECT COUNT(*) FROM \"{t}\""));
        }
        for t in suffixed(&c, "rocpd_region") {
            let s = &t["rocpd_region".len()..];
            let total = sql_count(&c, &format!("SELECT COUNT(*) FROM \"{t}\""));
            let markers = sql_count(
                &c,
                &format!(
                    "SELECT COUNT(*) FROM \"{t}\" X JOIN \"rocpd_event{s}\" E ON E.id = X.event_id \
                     JOIN \"rocpd_string{s}\" CS ON CS.id = E.category_id \
                     WHERE CS.string LIKE 'MARKER\\_%' ESCAPE '\\'"
                ),
            );
            *n.get_mut("markers").unwrap() += markers;
            *n.get_mut("api_calls").unwrap() += total - markers;
        }
        for t in suffixed(&c, "rocpd_pmc_event") {
            let s = &t["rocpd_pmc_event".len()..];
            // Only values whose event is a kernel dispatch or a sample have a time.
            *n.get_mut("pmc_values").unwrap() += sql_count(
                &c,
                &format!(
                    "SELECT COUNT(*) FROM \"{t}\" X WHERE \
                     EXISTS (SELECT 1 FROM \"rocpd_kernel_dispatch{s}\" K WHERE K.event_id = X.event_id) \
                     OR EXISTS (SELECT 1 FROM \"rocpd_sample{s}\" S WHERE S.event_id = X.event_id)"
                ),
            );
        }
    }
    n
}

/// SQL: total `end - start` per kernel display name over all inputs.
fn expected_kernel_durations(inputs: &[PathBuf]) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for p in inputs {
        let c = Connection::open(p).unwrap();
        for t in suffixed(&c, "rocpd_kernel_dispatch") {
            let s = &t["rocpd_kernel_dispatch".len()..];
            let sql = format!(
                "SELECT COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name, ''), SUM(X.\"end\" - X.start) \
                 FROM \"{t}\" X LEFT JOIN \"rocpd_info_kernel_symbol{s}\" KS ON KS.id = X.kernel_id GROUP BY 1"
            );
            let mut st = c.prepare(&sql).unwrap();
            let rows = st
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .unwrap();
            for r in rows {
                let (name, d) = r.unwrap();
                *out.entry(name).or_insert(0) += d;
            }
        }
    }
    out
}

fn start_stats(meta: &ParquetMetaData, rg: usize) -> (i64, i64) {
    let col = meta.row_group(rg).column(5);
    assert_eq!(col.column_path().string(), "start_ns");
    match col.statistics() {
        Some(Statistics::Int64(s)) => (
            *s.min_opt().expect("start_ns min"),
            *s.max_opt().expect("start_ns max"),
        ),
        other => panic!("no start_ns statistics in row group {rg}: {other:?}"),
    }
}

#[test]
fn dataset_matches_the_inputs_and_is_sorted_indexed_and_prunable() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t_results.parquet");
    let opts = ParquetOptions {
        row_group_rows: 1000,
        ..Default::default()
    };
    let reports = write_dataset(inputs(), &out, opts).expect("write dataset");

    // Whole: the directory exists, no temporary directory is left.
    let siblings: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(siblings.len(), 1, "only the dataset is left");

    // Row counts per table equal SQL counts on the inputs.
    let want = expected_counts(inputs());
    eprintln!("expected rows: {want:?}");
    for t in TABLES {
        assert_eq!(table_rows(&out, t), want[t], "rows of {t}");
        if want[t] == 0 {
            assert!(!out.join(t).exists(), "{t} has no rows and no files");
        }
    }
    assert!(want["kernels"] > 10_000, "enough kernels to test pruning");

    // The report.
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!(r.path, out);
    assert_eq!(r.bytes, dir_size(&out));
    assert_eq!(r.rows["kernel_dispatch"] as usize, want["kernels"]);
    assert_eq!(r.rows["region"] as usize, want["api_calls"]);
    assert_eq!(r.rows["pmc_value"] as usize, want["pmc_values"]);

    // Every event file: sorted by start, statistics and page index present, metadata.
    let mut guids = BTreeSet::new();
    for t in TABLES {
        for path in parquet_files(&out.join(t)) {
            let f = read(&path);
            let starts = f.i64s("start_ns");
            assert!(
                starts.windows(2).all(|w| w[0] <= w[1]),
                "{}: start_ns not sorted",
                path.display()
            );
            let ends = f.i64s("end_ns");
            let durations = f.i64s("duration_ns");
            for i in 0..starts.len() {
                assert_eq!(durations[i], ends[i] - starts[i]);
            }
            let meta = &f.meta;
            let fm = meta.file_metadata();
            assert!(fm.created_by().unwrap().starts_with("rocpd-rs version "));
            let kv: BTreeMap<_, _> = fm
                .key_value_metadata()
                .unwrap()
                .iter()
                .map(|k| (k.key.as_str(), k.value.as_deref().unwrap_or("")))
                .collect();
            assert_eq!(kv["rocpd.parquet_schema_version"], "3");
            assert_eq!(kv["rocpd.table"], t);
            let page_index = meta.page_index().expect("page index read");
            assert!(page_index.is_complete());
            for rg in 0..meta.num_row_groups() {
                start_stats(meta, rg);
                let chunk = meta.row_group(rg).column(5);
                assert!(chunk.column_index_range().is_some(), "column index written");
                assert!(chunk.offset_index_range().is_some(), "offset index written");
                assert!(matches!(
                    page_index.column_index(rg, 5),
                    Some(ColumnIndexMetaData::INT64(_))
                ));
                assert!(page_index.offset_index(rg, 5).is_some());
                let sorting = meta
                    .row_group(rg)
                    .sorting_columns()
                    .expect("sorting columns");
                assert_eq!(sorting[0].column_idx, 5);
                assert!(!sorting[0].descending);
            }
            // Resolved names are dictionary-typed.
            let schema = f.batches[0].schema();
            for col in ["guid", "name", "category_group", "hostname"] {
                assert!(
                    matches!(
                        schema.field_with_name(col).unwrap().data_type(),
                        DataType::Dictionary(..)
                    ),
                    "{t}.{col} is dictionary-encoded"
                );
            }
            assert!(schema.field_with_name("source").is_err());
            guids.extend(f.dict_strings("guid").into_iter().flatten());
            let hosts: BTreeSet<_> = f.dict_strings("hostname").into_iter().collect();
            assert!(hosts
                .iter()
                .all(|h| h.as_deref().is_some_and(|h| h.starts_with("node-"))));
        }
    }
    assert_eq!(guids.len(), 4, "one guid per generated process");

    // Kernel names: dictionary-typed; per-kernel total duration equals SQL.
    let mut durations: BTreeMap<String, i64> = BTreeMap::new();
    let kernel_files = parquet_files(&out.join("kernels"));
    for path in &kernel_files {
        let f = read(path);
        let names = f.dict_strings("name");
        let d = f.i64s("duration_ns");
        for (n, d) in names.into_iter().zip(d) {
            *durations.entry(n.expect("kernel name")).or_insert(0) += d;
        }
        let agents = f.dict_strings("agent");
        assert!(agents
            .iter()
            .all(|a| a.as_deref().is_some_and(|a| a.starts_with("Agent "))));
    }
    assert_eq!(durations, expected_kernel_durations(inputs()));

    // Pruning: a predicate over the middle tenth of the time span selects strictly fewer
    // row groups (by their statistics) than the file has.
    let f = read(&kernel_files[0]);
    let meta = &f.meta;
    let n = meta.num_row_groups();
    assert!(n >= 5, "{}: {n} row groups", f.path.display());
    let (lo, _) = start_stats(meta, 0);
    let (_, hi) = start_stats(meta, n - 1);
    let (t0, t1) = (lo + (hi - lo) * 45 / 100, lo + (hi - lo) * 55 / 100);
    let selected = (0..n)
        .filter(|&rg| {
            let (min, max) = start_stats(meta, rg);
            max >= t0 && min <= t1
        })
        .count();
    assert!(
        selected >= 1 && selected < n,
        "{selected} of {n} row groups selected"
    );
    // Row groups are flushed at row_group_rows, and only the last of a file is short
    // (rows wait for a whole row group; their bound in bytes is far away here).
    let groups: Vec<i64> = meta.row_groups().iter().map(|rg| rg.num_rows()).collect();
    assert!(groups.iter().all(|&n| n <= 1000));
    assert!(
        groups[..groups.len() - 1].iter().all(|&n| n == 1000),
        "{groups:?}"
    );

    // Dimension tables and _metadata.json.
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("_metadata.json")).unwrap()).unwrap();
    assert_eq!(meta["schema_version"], "3");
    let runs = meta["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join(format!("_runs/{}.json", runs[0]["run"].as_str().unwrap())))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(run["producer"]["name"], "rocpd-rs");
    assert_eq!(run["sources"].as_array().unwrap().len(), 4);
    for t in TABLES {
        assert_eq!(
            meta["tables"][t]["rows"].as_u64().unwrap() as usize,
            want[t],
            "{t}"
        );
        let files = meta["tables"][t]["files"].as_array().unwrap();
        assert_eq!(files.len(), parquet_files(&out.join(t)).len());
    }
    for d in DIMENSIONS {
        let f = read(&dim_file(&out, d));
        assert_eq!(
            meta["tables"][d]["rows"].as_u64().unwrap() as usize,
            f.rows(),
            "{d}"
        );
    }
    assert_eq!(read(&dim_file(&out, "sources")).rows(), 4);
    assert_eq!(read(&dim_file(&out, "processes")).rows(), 4);
    assert!(read(&dim_file(&out, "kernel_symbols")).rows() > 0);
    let agents = read(&dim_file(&out, "agents"));
    assert!(agents.batches[0].column_by_name("label").is_some());
}

/// SQL: rows of a RocPD base table per pid, over all inputs.
fn expected_rows_per_pid(inputs: &[PathBuf], base: &str) -> BTreeMap<i64, usize> {
    let mut out = BTreeMap::new();
    for p in inputs {
        let c = Connection::open(p).unwrap();
        for t in suffixed(&c, base) {
            // `pid` references the process row; its `pid` is the OS pid.
            let suffix = &t[base.len()..];
            let mut st = c
                .prepare(&format!(
                    "SELECT COALESCE(P.pid, X.pid), COUNT(*) FROM \"{t}\" X \
                     LEFT JOIN \"rocpd_info_process{suffix}\" P ON P.id = X.pid GROUP BY 1"
                ))
                .unwrap();
            let rows = st
                .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
                .unwrap();
            for r in rows {
                let (pid, n) = r.unwrap();
                *out.entry(pid).or_insert(0) += n as usize;
            }
        }
    }
    out
}

#[test]
fn hive_partitioning_splits_by_node_and_pid() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p_results.parquet");
    let opts = ParquetOptions {
        partition_by: PartitionKey::parse_list("node,pid").unwrap(),
        ..Default::default()
    };
    write_dataset(inputs(), &out, opts).expect("write dataset");
    let want = expected_counts(inputs());
    for (t, base) in [
        ("kernels", "rocpd_kernel_dispatch"),
        ("memory_copies", "rocpd_memory_copy"),
        ("memory_allocations", "rocpd_memory_allocate"),
    ] {
        let files = parquet_files(&out.join(t));
        let mut per_pid: BTreeMap<i64, usize> = BTreeMap::new();
        let mut nodes = BTreeSet::new();
        let mut total = 0;
        for path in &files {
            let rel = path.strip_prefix(out.join(t)).unwrap();
            let parts: Vec<_> = rel
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            assert_eq!(parts.len(), 3, "{}", rel.display());
            let node = parts[0].strip_prefix("node=").expect("node=…");
            let pid: i64 = parts[1]
                .strip_prefix("pid=")
                .expect("pid=…")
                .parse()
                .unwrap();
            assert!(
                parts[2].starts_with("part-") && parts[2].ends_with("-00000.parquet"),
                "{}",
                parts[2]
            );
            let f = read(path);
            // Every row's hostname is its directory's; `pid` is only in the path.
            assert!(f
                .dict_strings("hostname")
                .iter()
                .all(|h| h.as_deref() == Some(node)));
            assert!(f.batches[0].schema().field_with_name("pid").is_err());
            assert!(f.batches[0].schema().field_with_name("tid").is_ok());
            let starts = f.i64s("start_ns");
            assert!(starts.windows(2).all(|w| w[0] <= w[1]));
            *per_pid.entry(pid).or_insert(0) += f.rows();
            total += f.rows();
            nodes.insert(node.to_string());
        }
        assert_eq!(total, want[t], "{t}");
        assert_eq!(
            per_pid,
            expected_rows_per_pid(inputs(), base),
            "{t} per pid"
        );
        assert_eq!(per_pid.len(), 4, "{t}: one directory per process");
        assert_eq!(nodes.len(), 2, "{t}: two nodes");
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("_metadata.json")).unwrap()).unwrap();
    assert_eq!(meta["partition_by"], serde_json::json!(["node", "pid"]));
    assert_eq!(meta["columns_only_in_path"], serde_json::json!(["pid"]));
}

#[test]
fn node_partitioning_keeps_every_column() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("n_results.parquet");
    let opts = ParquetOptions {
        partition_by: vec![PartitionKey::Node],
        ..Default::default()
    };
    write_dataset(inputs(), &out, opts).expect("write dataset");
    let files = parquet_files(&out.join("kernels"));
    assert_eq!(files.len(), 2);
    let mut total = 0;
    for p in &files {
        let f = read(p);
        let dir = p.parent().unwrap().file_name().unwrap().to_string_lossy();
        let node = dir.strip_prefix("node=").unwrap();
        assert!(f
            .dict_strings("hostname")
            .iter()
            .all(|h| h.as_deref() == Some(node)));
        assert_eq!(
            f.batches[0].schema().fields().len(),
            rocpd_parquet::event_schema(rocpd_model::Table::KernelDispatch)
                .fields()
                .len()
        );
        total += f.rows();
    }
    assert_eq!(total, expected_counts(inputs())["kernels"]);
}

#[test]
fn files_roll_over_and_stay_sorted() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r_results.parquet");
    let opts = ParquetOptions {
        row_group_rows: 300,
        max_rows_per_file: 2000,
        ..Default::default()
    };
    let reports = write_dataset(inputs(), &out, opts).expect("write dataset");
    let files = parquet_files(&out.join("kernels"));
    assert!(files.len() > 3, "{} part files", files.len());
    let mut last = i64::MIN;
    let mut total = 0;
    for (i, path) in files.iter().enumerate() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("part-") && name.ends_with(&format!("-{i:05}.parquet")),
            "{name}"
        );
        let f = read(path);
        assert!(f.rows() <= 2000);
        if i + 1 < files.len() {
            assert_eq!(f.rows(), 2000, "only the last part is short");
        }
        let starts = f.i64s("start_ns");
        assert!(starts[0] >= last, "parts follow each other in time");
        assert!(starts.windows(2).all(|w| w[0] <= w[1]));
        last = *starts.last().unwrap();
        total += f.rows();
    }
    assert_eq!(total, expected_counts(inputs())["kernels"]);
    assert!(reports[0].notes.is_empty(), "{:?}", reports[0].notes);
}

#[test]
fn too_many_open_partitions_finish_the_least_recently_used_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("l_results.parquet");
    let opts = ParquetOptions {
        partition_by: vec![PartitionKey::Pid],
        max_open_files: 2,
        ..Default::default()
    };
    let reports = write_dataset(inputs(), &out, opts).expect("write dataset");
    assert!(
        reports[0]
            .notes
            .iter()
            .any(|n| n.contains("finished early")),
        "{:?}",
        reports[0].notes
    );
    let want = expected_counts(inputs());
    for t in TABLES {
        let files = parquet_files(&out.join(t));
        let mut total = 0;
        for p in &files {
            let f = read(p);
            let starts = f.i64s("start_ns");
            assert!(starts.windows(2).all(|w| w[0] <= w[1]));
            total += f.rows();
        }
        assert_eq!(total, want[t], "{t}");
    }
    let kernel_dirs: BTreeSet<_> = parquet_files(&out.join("kernels"))
        .iter()
        .map(|p| p.parent().unwrap().to_path_buf())
        .collect();
    assert!(parquet_files(&out.join("kernels")).len() > kernel_dirs.len());
}

/// Begins `sink` on `input` and writes its first three chunks, without finishing.
fn begin_and_write_a_few_chunks(sink: &mut ParquetSink, input: &Path) {
    let db = Database::open(input).unwrap();
    let catalog = Arc::new(db.catalog(0).unwrap());
    sink.begin(&catalog).unwrap();
    let mut queries = db
        .queries(0, 500, &rocpd_model::Projection::all().without("args"))
        .unwrap();
    let mut streams: Vec<Box<dyn BatchStream + '_>> = Vec::new();
    for q in &mut queries {
        streams.push(Box::new(q.stream().unwrap()));
    }
    let mut merge = TimeMerge::new(streams);
    for _ in 0..3 {
        if let Some(chunk) = merge.next_chunk().unwrap() {
            sink.write(&chunk).unwrap();
        }
    }
}

#[test]
fn a_dropped_sink_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("d_results.parquet");
    {
        let mut sink = ParquetSink::new(&out, ParquetOptions::default());
        begin_and_write_a_few_chunks(&mut sink, &inputs()[0]);
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            1,
            "the partial directory"
        );
        assert!(!out.exists());
    }
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// A forced exit (the CLI's second signal, or its grace period passed) does not unwind:
/// it removes the registered temporaries and runs the registered cleaners. A first
/// append that made the dataset's directory takes its skeleton away with it; an append
/// to a dataset with a committed run leaves that run.
#[test]
fn a_forced_exit_during_a_first_append_leaves_no_skeleton() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("lake").join("a_results.parquet");
    let append = ParquetOptions {
        append: true,
        ..ParquetOptions::default()
    };
    let mut sink = ParquetSink::new(&out, append.clone());
    begin_and_write_a_few_chunks(&mut sink, &inputs()[0]);
    assert!(out.join("_dataset.json").is_file());
    rocpd_pipeline::cleanup::remove_registered_under(tmp.path());
    // The process would exit here: nothing of the sink unwinds.
    std::mem::forget(sink);
    assert!(
        !out.exists(),
        "left {:?}",
        std::fs::read_dir(&out).map(|d| d.count())
    );
    assert!(tmp.path().join("lake").is_dir());

    let mut first: Box<dyn Sink> = Box::new(ParquetSink::new(&out, append.clone()));
    let db = Database::open(&inputs()[0]).unwrap();
    first.begin(&Arc::new(db.catalog(0).unwrap())).unwrap();
    first.finish().unwrap();
    let mut second = ParquetSink::new(&out, append);
    begin_and_write_a_few_chunks(&mut second, &inputs()[1]);
    rocpd_pipeline::cleanup::remove_registered_under(tmp.path());
    std::mem::forget(second);
    assert!(out.join("_dataset.json").is_file());
    assert_eq!(std::fs::read_dir(out.join("_runs")).unwrap().count(), 1);
    assert_eq!(std::fs::read_dir(out.join("_staging")).unwrap().count(), 0);
}

/// A descriptor taken away while a run stages (a first run's cleanup racing this run's
/// check, D150) is put back at the commit, so no run is committed into a dataset without
/// one; a descriptor another run made meanwhile with other options refuses the commit;
/// and a dataset left without one says so (D153).
#[test]
fn a_run_never_commits_into_a_dataset_without_its_descriptor() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r_results.parquet");
    let append = ParquetOptions {
        append: true,
        ..ParquetOptions::default()
    };
    let begun = |input: &Path| {
        let mut sink: Box<dyn Sink> = Box::new(ParquetSink::new(&out, append.clone()));
        let db = Database::open(input).unwrap();
        sink.begin(&Arc::new(db.catalog(0).unwrap())).unwrap();
        sink
    };
    // A first run creates the dataset, a second begins beside it, and the first fails:
    // its cleanup, racing the second's check, took the descriptor (done here by hand).
    let first = begun(&inputs()[0]);
    let desc = out.join("_dataset.json");
    let text = std::fs::read(&desc).unwrap();
    let second = begun(&inputs()[1]);
    drop(first);
    std::fs::remove_file(&desc).unwrap();
    // The second run puts it back as it commits.
    second.finish().unwrap();
    assert_eq!(std::fs::read(&desc).unwrap(), text);
    assert_eq!(std::fs::read_dir(out.join("_runs")).unwrap().count(), 1);
    // Replaced by one of other options while the third stages: refused.
    let third = begun(&inputs()[2]);
    let mut other: serde_json::Value = serde_json::from_slice(&text).unwrap();
    other["partition_by"] = serde_json::json!(["node"]);
    std::fs::write(&desc, serde_json::to_vec(&other).unwrap()).unwrap();
    let err = third.finish().unwrap_err().to_string();
    assert!(err.contains("partition"), "{err}");
    assert_eq!(std::fs::read_dir(out.join("_runs")).unwrap().count(), 1);
    // Gone for good: the next run says what is missing.
    std::fs::remove_file(&desc).unwrap();
    let mut fourth = ParquetSink::new(&out, append.clone());
    let db = Database::open(&inputs()[3]).unwrap();
    let err = fourth
        .begin(&Arc::new(db.catalog(0).unwrap()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("without its _dataset.json"), "{err}");
}

#[test]
fn a_failed_finish_leaves_nothing_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("f_results.parquet");
    let db = Database::open(&inputs()[0]).unwrap();
    let catalog = Arc::new(db.catalog(0).unwrap());
    let mut sink: Box<dyn Sink> = Box::new(ParquetSink::new(&out, ParquetOptions::default()));
    sink.begin(&catalog).unwrap();
    // Someone else creates the directory meanwhile: finish refuses to replace it.
    std::fs::create_dir(&out).unwrap();
    let err = sink.finish().unwrap_err().to_string();
    assert!(err.contains(&out.display().to_string()), "{err}");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("f_results.parquet")]);
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

#[test]
fn an_existing_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("e_results.parquet");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), b"x").unwrap();
    let mut sink = ParquetSink::new(&out, ParquetOptions::default());
    let err = sink
        .begin(&Arc::new(Catalog::default()))
        .unwrap_err()
        .to_string();
    assert!(err.contains(&out.display().to_string()), "{err}");
    assert!(err.contains("already exists"), "{err}");
    drop(sink);
    assert_eq!(std::fs::read(out.join("keep")).unwrap(), b"x");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn an_empty_run_writes_dimension_tables_only() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("z_results.parquet");
    let db = Database::open(&inputs()[0]).unwrap();
    let catalog = Arc::new(db.catalog(0).unwrap());
    let mut sink: Box<dyn Sink> = Box::new(ParquetSink::new(&out, ParquetOptions::default()));
    sink.begin(&catalog).unwrap();
    let reports = sink.finish().unwrap();
    assert_eq!(reports[0].rows.values().sum::<u64>(), 0);
    for t in TABLES {
        assert!(!out.join(t).exists());
    }
    for d in DIMENSIONS {
        read(&dim_file(&out, d));
    }
    assert!(out.join("_metadata.json").exists());
}

#[test]
fn partition_keys_parse() {
    assert_eq!(
        PartitionKey::parse_list("node,pid").unwrap(),
        vec![PartitionKey::Node, PartitionKey::Pid]
    );
    assert_eq!(
        PartitionKey::parse_list(" PID ").unwrap(),
        vec![PartitionKey::Pid]
    );
    assert!(PartitionKey::parse_list("").unwrap().is_empty());
    assert!(PartitionKey::parse_list("node,host").is_err());
    assert!(PartitionKey::parse_list("pid,pid").is_err());
}

/// A synthetic kernel-dispatch batch with the given (start, end) rows; other columns are
/// zeros, `k`, or NULL.
fn kernel_batch(rows: &[(i64, i64)]) -> rocpd_model::EventBatch {
    use arrow_array::{new_null_array, ArrayRef, Int64Array, StringArray, UInt32Array};
    let table = rocpd_model::Table::KernelDispatch;
    let schema = table.schema();
    let n = rows.len();
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| -> ArrayRef {
            match (f.name().as_str(), f.data_type()) {
                ("start", _) => Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
                ("end", _) => Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
                (_, DataType::UInt32) => Arc::new(UInt32Array::from(vec![0; n])),
                (_, DataType::Int64) if !f.is_nullable() => Arc::new(Int64Array::from(vec![7; n])),
                (_, DataType::Utf8) if !f.is_nullable() => {
                    Arc::new(StringArray::from(vec!["k"; n]))
                }
                (_, t) => new_null_array(t, n),
            }
        })
        .collect();
    rocpd_model::EventBatch {
        table,
        batch: RecordBatch::try_new(schema, columns).unwrap(),
    }
}

#[test]
fn batches_of_one_table_in_a_chunk_are_merged_by_start_and_order_breaks_start_a_new_part() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("s_results.parquet");
    let mut sink: Box<dyn Sink> = Box::new(ParquetSink::new(&out, ParquetOptions::default()));
    sink.begin(&Arc::new(Catalog::default())).unwrap();
    // One chunk, two batches of the same table (two inputs), each sorted.
    let chunk = rocpd_pipeline::Chunk {
        batches: vec![
            kernel_batch(&[(10, 15), (30, 35), (30, 40)]),
            kernel_batch(&[(20, 25), (40, 45)]),
        ],
    };
    sink.write(&chunk).unwrap();
    // A later chunk that breaks the time-slab promise.
    let chunk = rocpd_pipeline::Chunk {
        batches: vec![kernel_batch(&[(5, 6), (50, 60)])],
    };
    sink.write(&chunk).unwrap();
    let reports = sink.finish().unwrap();
    assert!(
        reports[0]
            .notes
            .iter()
            .any(|n| n.contains("out of start-time order")),
        "{:?}",
        reports[0].notes
    );
    let files = parquet_files(&out.join("kernels"));
    assert_eq!(files.len(), 2);
    let first = read(&files[0]);
    assert_eq!(first.i64s("start_ns"), vec![10, 20, 30, 30, 40]);
    assert_eq!(first.i64s("end_ns"), vec![15, 25, 40, 35, 45]);
    assert_eq!(first.i64s("duration_ns"), vec![5, 5, 10, 5, 5]);
    let second = read(&files[1]);
    assert_eq!(second.i64s("start_ns"), vec![5, 50]);
    // Unknown source, node and agent: empty guid, NULL hostname, `Agent <id>`.
    assert!(first.dict_strings("hostname").iter().all(Option::is_none));
    assert!(first
        .dict_strings("agent")
        .iter()
        .all(|a| a.as_deref() == Some("Agent 7")));
    assert!(first
        .dict_strings("category_group")
        .iter()
        .all(|c| c.as_deref() == Some("kernel_dispatch")));
    assert_eq!(reports[0].rows["kernel_dispatch"], 7);
    assert_eq!(reports[0].time_range, Some([5, 60]));
}

fn appending() -> ParquetOptions {
    ParquetOptions {
        append: true,
        ..Default::default()
    }
}

fn json_file(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `dir` (relative paths, sorted), directories left out.
fn all_files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Row counts per table (events and dimensions) of a dataset, read from its files.
fn counts(dataset: &Path) -> BTreeMap<String, usize> {
    TABLES
        .iter()
        .chain(DIMENSIONS.iter())
        .map(|t| (t.to_string(), table_rows(dataset, t)))
        .collect()
}

#[test]
fn runs_append_to_one_dataset_each_with_files_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("a_results.parquet");
    let all = inputs();
    write_dataset(&all[..2], &out, ParquetOptions::default()).expect("first run");
    let before = all_files(&out);
    write_dataset(&all[2..3], &out, appending()).expect("second run");
    write_dataset(&all[3..], &out, appending()).expect("third run");
    // No file of the first run was touched or replaced.
    let after = all_files(&out);
    for f in before.iter().filter(|f| f.ends_with(".parquet")) {
        assert!(after.contains(f), "{f} is gone");
    }
    // Every row of every input is there once.
    let want = expected_counts(all);
    let got = counts(&out);
    for t in TABLES {
        assert_eq!(got[t], want[t], "{t}");
    }
    assert_eq!(got["sources"], 4);
    assert_eq!(got["processes"], 4);
    // One description per run; the summary lists the three and adds up their rows.
    let runs: Vec<_> = after.iter().filter(|f| f.starts_with("_runs/")).collect();
    assert_eq!(runs.len(), 3, "{runs:?}");
    let meta = json_file(&out.join("_metadata.json"));
    assert_eq!(meta["runs"].as_array().unwrap().len(), 3);
    for t in TABLES {
        assert_eq!(
            meta["tables"][t]["rows"].as_u64().unwrap() as usize,
            want[t]
        );
    }
    let listed: usize = TABLES
        .iter()
        .chain(DIMENSIONS.iter())
        .map(|t| meta["tables"][t]["files"].as_array().unwrap().len())
        .sum();
    assert_eq!(
        listed,
        after.iter().filter(|f| f.ends_with(".parquet")).count()
    );
    // Each run's files carry its id.
    for r in meta["runs"].as_array().unwrap() {
        let id = r["run"].as_str().unwrap();
        let desc = json_file(&out.join(format!("_runs/{id}.json")));
        for t in TABLES {
            for f in desc["tables"][t]["files"].as_array().unwrap() {
                let path = f["path"].as_str().unwrap();
                assert!(path.contains(id), "{path}");
                assert_eq!(
                    read(&out.join(path)).rows() as u64,
                    f["rows"].as_u64().unwrap()
                );
            }
        }
    }
    // Nothing staged is left.
    assert!(
        !after.iter().any(|f| f.starts_with("_staging")),
        "{after:?}"
    );
}

#[test]
fn appending_creates_a_missing_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("lake/m_results.parquet");
    write_dataset(&inputs()[..1], &out, appending()).expect("append to nothing");
    let desc = json_file(&out.join("_dataset.json"));
    assert_eq!(desc["schema_version"], "3");
    assert_eq!(desc["table_format"], "parquet");
    assert_eq!(table_rows(&out, "sources"), 1);
}

#[test]
fn appending_an_input_twice_is_refused_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t_results.parquet");
    write_dataset(&inputs()[..2], &out, appending()).unwrap();
    let before = all_files(&out);
    let err = write_dataset(&inputs()[1..3], &out, appending())
        .unwrap_err()
        .to_string();
    assert!(err.contains(&inputs()[1].display().to_string()), "{err}");
    assert!(err.contains("already in the dataset"), "{err}");
    assert_eq!(all_files(&out), before);
}

#[test]
fn appending_with_other_options_or_to_other_directories_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o_results.parquet");
    write_dataset(&inputs()[..1], &out, appending()).unwrap();
    let before = all_files(&out);
    let partitioned = ParquetOptions {
        partition_by: vec![PartitionKey::Node],
        ..appending()
    };
    let err = write_dataset(&inputs()[1..2], &out, partitioned)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("partitioned by (none), this run by node"),
        "{err}"
    );
    let delta = ParquetOptions {
        table_format: rocpd_parquet::TableFormat::Delta,
        ..appending()
    };
    let err = write_dataset(&inputs()[1..2], &out, delta)
        .unwrap_err()
        .to_string();
    assert!(err.contains("table format is parquet"), "{err}");
    assert_eq!(all_files(&out), before);

    // A dataset of an older layout (schema version 2: no _dataset.json).
    let old = tmp.path().join("old_results.parquet");
    std::fs::create_dir(&old).unwrap();
    std::fs::write(old.join("_metadata.json"), br#"{"schema_version": "2"}"#).unwrap();
    std::fs::write(old.join("processes.parquet"), b"PAR1").unwrap();
    let err = write_dataset(&inputs()[..1], &old, appending())
        .unwrap_err()
        .to_string();
    assert!(err.contains("schema version 2"), "{err}");
    assert!(err.contains(&old.display().to_string()), "{err}");
    // A descriptor of a version this build does not write.
    let newer = tmp.path().join("new_results.parquet");
    std::fs::create_dir(&newer).unwrap();
    std::fs::write(
        newer.join("_dataset.json"),
        br#"{"format": "rocpd-parquet", "schema_version": "9", "table_format": "parquet", "partition_by": []}"#,
    )
    .unwrap();
    let err = write_dataset(&inputs()[..1], &newer, appending())
        .unwrap_err()
        .to_string();
    assert!(err.contains("schema version 9"), "{err}");
    // A directory of something else.
    let other = tmp.path().join("photos");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("cat.jpg"), b"x").unwrap();
    let err = write_dataset(&inputs()[..1], &other, appending())
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a rocpd Parquet dataset"), "{err}");
    assert_eq!(all_files(&other), vec!["cat.jpg".to_string()]);
    // Refused before anything was made in them: no staging directory either.
    for d in [&other, &old] {
        assert!(!d.join("_staging").exists(), "{}", d.display());
    }
    // A broken descriptor is named, not trusted.
    std::fs::write(newer.join("_dataset.json"), b"{not json").unwrap();
    let err = write_dataset(&inputs()[..1], &newer, appending())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("_dataset.json") && err.contains("not valid JSON"),
        "{err}"
    );
}

#[test]
fn a_failed_append_leaves_nothing_visible() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x_results.parquet");
    write_dataset(&inputs()[..1], &out, appending()).unwrap();
    let before = all_files(&out);
    {
        let mut sink = ParquetSink::new(&out, appending());
        begin_and_write_a_few_chunks(&mut sink, &inputs()[1]);
        let staged = out.join("_staging").join(sink.run_id());
        assert!(staged.is_dir(), "the run is staged");
        // Dropped: the run failed.
    }
    assert_eq!(all_files(&out), before);
    assert_eq!(std::fs::read_dir(out.join("_staging")).unwrap().count(), 0);
}

/// The actions of every commit of a table's Delta log, by version.
fn delta_log(table: &Path) -> BTreeMap<u64, Vec<serde_json::Value>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(table.join("_delta_log")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let v: u64 = name.strip_suffix(".json").unwrap().parse().unwrap();
        assert_eq!(name.len(), 25, "{name}");
        let text = std::fs::read_to_string(&p).unwrap();
        let actions = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        out.insert(v, actions);
    }
    out
}

#[test]
fn concurrent_delta_appends_commit_one_version_each_and_list_every_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("dl_results.parquet");
    let opts = ParquetOptions {
        append: true,
        table_format: rocpd_parquet::TableFormat::Delta,
        partition_by: vec![PartitionKey::Node, PartitionKey::Pid],
        ..Default::default()
    };
    // Four writers at once, one input each.
    std::thread::scope(|s| {
        let handles: Vec<_> = inputs()
            .iter()
            .map(|input| {
                let (out, opts) = (out.clone(), opts.clone());
                s.spawn(move || write_dataset(std::slice::from_ref(input), &out, opts))
            })
            .collect();
        for h in handles {
            h.join().unwrap().expect("every concurrent run succeeds");
        }
    });
    let want = expected_counts(inputs());
    let runs: BTreeSet<String> = std::fs::read_dir(out.join("_runs"))
        .unwrap()
        .map(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            n.strip_suffix(".json").unwrap().to_string()
        })
        .collect();
    assert_eq!(runs.len(), 4);
    assert_eq!(
        json_file(&out.join("_metadata.json"))["runs"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    for t in TABLES.iter().chain(DIMENSIONS.iter()) {
        let log = delta_log(&out.join(t));
        assert_eq!(
            log.keys().copied().collect::<Vec<_>>(),
            vec![0, 1, 2, 3],
            "{t}"
        );
        // Version 0 defines the table; every version is one run's blind append.
        assert!(log[&0][0].get("protocol").is_some(), "{t}");
        let meta = &log[&0][1]["metaData"];
        let schema: serde_json::Value =
            serde_json::from_str(meta["schemaString"].as_str().unwrap()).unwrap();
        let names: Vec<&str> = schema["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        let mut committed = BTreeSet::new();
        let mut rows = 0;
        let mut paths = BTreeSet::new();
        for (v, actions) in &log {
            let info = actions.last().unwrap();
            committed.insert(info["commitInfo"]["rocpdRun"].as_str().unwrap().to_string());
            for a in actions.iter().filter_map(|a| a.get("add")) {
                let path = a["path"].as_str().unwrap();
                assert!(paths.insert(path.to_string()), "{t}: {path} added twice");
                let file = out.join(t).join(path);
                assert_eq!(a["size"].as_u64().unwrap(), file.metadata().unwrap().len());
                let stats: serde_json::Value =
                    serde_json::from_str(a["stats"].as_str().unwrap()).unwrap();
                let f = read(&file);
                assert_eq!(stats["numRecords"].as_u64().unwrap() as usize, f.rows());
                if TABLES.contains(t) {
                    let starts = f.i64s("start_ns");
                    assert_eq!(stats["minValues"]["start_ns"], starts[0]);
                    assert_eq!(stats["maxValues"]["start_ns"], *starts.last().unwrap());
                    let ends = f.i64s("end_ns");
                    assert_eq!(stats["minValues"]["end_ns"], *ends.iter().min().unwrap());
                    assert_eq!(stats["maxValues"]["end_ns"], *ends.iter().max().unwrap());
                    let pv = &a["partitionValues"];
                    assert!(path.starts_with(&format!(
                        "node={}/pid={}/",
                        pv["node"].as_str().unwrap(),
                        pv["pid"].as_str().unwrap()
                    )));
                }
                rows += f.rows();
            }
            assert!(*v == 0 || actions.iter().all(|a| a.get("metaData").is_none()));
        }
        assert_eq!(committed, runs, "{t}: one commit per run");
        // The log lists exactly the table's files.
        let on_disk: BTreeSet<String> = parquet_files(&out.join(t))
            .iter()
            .map(|p| p.strip_prefix(out.join(t)).unwrap().display().to_string())
            .collect();
        assert_eq!(paths, on_disk, "{t}");
        if TABLES.contains(t) {
            assert_eq!(rows, want[*t], "{t}");
            assert_eq!(meta["partitionColumns"], serde_json::json!(["node", "pid"]));
            assert!(
                names.contains(&"node") && names.contains(&"pid") && names.contains(&"start_ns")
            );
        } else {
            assert_eq!(meta["partitionColumns"], serde_json::json!([]));
        }
    }
}
