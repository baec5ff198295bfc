//! Streaming Parquet dataset writer.
//!
//! A dataset directory holds one table (a sub-directory of part files) per event kind,
//! with names resolved into dictionary-encoded string columns so that queries need no
//! join, and one table per dimension list of the catalog. Each run adds part files of its
//! own (`part-<run>-<n>.parquet`) and a description (`_runs/<run>.json`); many runs,
//! concurrent ones included, can append to one dataset, and with the Delta table format
//! each table also gets a Delta Lake log. Rows are sorted by start time in every file;
//! files are zstd-compressed, with column statistics and page indexes so that time-range
//! predicates prune row groups and pages. Only the in-progress row group of each open file
//! is held in memory. The layout is specified in `formats/parquet/README.md`.

#![warn(missing_docs)]

mod convert;
mod dataset;
mod delta;
mod dims;
mod files;
mod schema;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::DataType;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use rocpd_model::{Catalog, Error, Result, Table, MODEL_VERSION};
use rocpd_pipeline::{Chunk, OutputReport, Sink};
use serde_json::json;

pub use dims::{dimension_table, DIMENSION_TABLES};
pub use schema::{
    arrow_schema as event_schema, markdown as columns_markdown, table_dir, SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
};

use convert::Resolver;
use dataset::Descriptor;
use files::FileSet;

/// Upper bound on the estimated encoded size of one in-progress row group: a row group
/// is flushed at `row_group_rows` rows or at this size, whichever comes first, so that
/// rows with very large JSON columns cannot make a buffer grow without bound.
pub const MAX_ROW_GROUP_BYTES: usize = 16 << 20;

/// How the dataset is written.
#[derive(Debug, Clone)]
pub struct ParquetOptions {
    /// Rows per row group (default 32768): large enough for efficient column scans
    /// and compression, small enough that start-time statistics prune well and that the
    /// in-progress buffer of each open file stays a few MiB.
    pub row_group_rows: usize,
    /// Rows per part file before a new one is started (default 16,777,216).
    pub max_rows_per_file: u64,
    /// Hive partitioning keys, in directory order (`node=<hostname>/pid=<pid>`).
    pub partition_by: Vec<PartitionKey>,
    /// zstd level (default 1; 1..=22).
    pub zstd_level: i32,
    /// Part files open at once (default 64). When a further one is needed, the least
    /// recently used is finished; later rows of its partition start a new part file.
    pub max_open_files: usize,
    /// Add this run to the dataset if it exists (creating it if not), instead of
    /// refusing an existing directory. Concurrent appending runs are safe.
    pub append: bool,
    /// Whether each table also gets a Delta Lake log (default plain Parquet).
    pub table_format: TableFormat,
    /// Rows waiting for their row group, over all open files, in bytes (default
    /// [`MAX_BUFFERED_BYTES`]). Rows are encoded a whole row group at a time; past this
    /// bound, the file with the most waiting rows writes them as a shorter row group.
    pub buffer_bytes: usize,
}

/// Longest min or max value kept in a column chunk's statistics (and, as parquet-rs
/// does by default, in the page index).
pub const STATISTICS_TRUNCATE_BYTES: usize = 64;

/// Default bound on the rows waiting for their row group ([`ParquetOptions::buffer_bytes`]).
/// 12 MiB: at 16 the waiting rows were the largest part of the peak with eight
/// databases; at 8 the big tables' row groups shrink from about 10,000 rows to 7,000,
/// and more row groups mean more footer to hold, so memory grew faster with the trace.
pub const MAX_BUFFERED_BYTES: usize = 12 << 20;

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            row_group_rows: 32_768,
            max_rows_per_file: 16_777_216,
            partition_by: Vec::new(),
            zstd_level: 1,
            max_open_files: 64,
            append: false,
            table_format: TableFormat::Parquet,
            buffer_bytes: MAX_BUFFERED_BYTES,
        }
    }
}

/// A hive partitioning key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PartitionKey {
    /// `node=<hostname>` (hostname of the row's node).
    Node,
    /// `pid=<pid>` (the row's process id).
    Pid,
}

impl PartitionKey {
    /// The key's name (also the directory key).
    pub fn name(self) -> &'static str {
        match self {
            PartitionKey::Node => "node",
            PartitionKey::Pid => "pid",
        }
    }

    /// Parses a comma-separated list such as `node,pid` (order kept; an empty string
    /// gives no partitioning).
    pub fn parse_list(s: &str) -> Result<Vec<PartitionKey>> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let key = match part.to_ascii_lowercase().as_str() {
                "node" => PartitionKey::Node,
                "pid" => PartitionKey::Pid,
                _ => {
                    return Err(Error::Usage(format!(
                        "unknown partition key '{part}' (expected node, pid)"
                    )))
                }
            };
            if out.contains(&key) {
                return Err(Error::Usage(format!("partition key '{part}' given twice")));
            }
            out.push(key);
        }
        Ok(out)
    }
}

/// How the tables of a dataset are described to readers besides their files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TableFormat {
    /// Plain Parquet directories (hive layout); runs are listed in `_runs/`.
    #[default]
    Parquet,
    /// Plain Parquet directories plus a Delta Lake transaction log per table
    /// (`<table>/_delta_log/`), one commit per run.
    Delta,
}

impl TableFormat {
    /// `parquet` or `delta`.
    pub fn name(self) -> &'static str {
        match self {
            TableFormat::Parquet => "parquet",
            TableFormat::Delta => "delta",
        }
    }

    /// The format named `name` (`parquet`, `delta`; any case).
    pub fn from_name(name: &str) -> Option<TableFormat> {
        match name.to_ascii_lowercase().as_str() {
            "parquet" => Some(TableFormat::Parquet),
            "delta" => Some(TableFormat::Delta),
            _ => None,
        }
    }
}

/// A [`Sink`] adding one run to a Parquet dataset directory, whole or not at all.
///
/// Without [`ParquetOptions::append`] the dataset must not exist: it is built in a
/// sibling temporary directory (`.<name>.partial-<pid>`) that `finish` renames into
/// place. With it, the run's files are staged in `<dataset>/_staging/<run>/` and
/// published at `finish` under names no other run uses (`part-<run>-<n>.parquet`),
/// then the run is committed (`_runs/<run>.json`, and the Delta logs). Dropped without
/// `finish`, the sink removes everything of its own and nothing else.
pub struct ParquetSink {
    dir: PathBuf,
    opts: ParquetOptions,
    run: String,
    /// The directory the run's files are published into: the temporary sibling of `dir`
    /// for a new dataset, `dir` itself when appending.
    root: PathBuf,
    /// The temporary sibling of a new dataset (removed on drop).
    tmp: Option<PathBuf>,
    /// `<root>/_staging/<run>`, where the run's files are written.
    staging: PathBuf,
    /// Files published by a commit that has not completed (removed on drop).
    published: Vec<(PathBuf, rocpd_pipeline::cleanup::Registered)>,
    registered: Vec<rocpd_pipeline::cleanup::Registered>,
    state: Option<State>,
    /// Whether this run made the directory of the dataset it appends to: if it fails
    /// with no run committed and no other run staging there, it takes the dataset's
    /// skeleton (descriptor, empty directories) away again.
    made_dir: bool,
    /// The same for a forced exit, which does not unwind (registered when `made_dir`).
    skeleton: Option<rocpd_pipeline::cleanup::RegisteredCleaner>,
}

struct State {
    resolver: Resolver,
    files: FileSet,
    /// The file schema of each event table (`Table as usize`), for the Delta logs.
    schemas: Vec<arrow_schema::SchemaRef>,
}

impl ParquetSink {
    /// A sink that will create the dataset directory `dir` (which must not exist), or
    /// with [`ParquetOptions::append`] add a run to it.
    pub fn new(dir: &Path, opts: ParquetOptions) -> Self {
        ParquetSink {
            dir: dir.to_path_buf(),
            opts,
            run: String::new(),
            root: PathBuf::new(),
            made_dir: false,
            skeleton: None,
            tmp: None,
            staging: PathBuf::new(),
            published: Vec::new(),
            registered: Vec::new(),
            state: None,
        }
    }

    /// The id of this run (set by `begin`): part of its file names and of
    /// `_runs/<run>.json`.
    pub fn run_id(&self) -> &str {
        &self.run
    }

    fn check_options(&self) -> Result<()> {
        let o = &self.opts;
        if o.row_group_rows == 0 || o.max_rows_per_file == 0 || o.max_open_files == 0 {
            return Err(Error::Usage(
                "parquet: row group rows, rows per file and open files must be at least 1".into(),
            ));
        }
        ZstdLevel::try_new(o.zstd_level)
            .map_err(|_| Error::Usage(format!("parquet: bad zstd level {}", o.zstd_level)))?;
        Ok(())
    }

    fn descriptor(&self) -> Descriptor {
        Descriptor {
            schema_version: SCHEMA_VERSION.to_string(),
            table_format: self.opts.table_format,
            partition_by: self
                .opts
                .partition_by
                .iter()
                .map(|k| k.name().to_string())
                .collect(),
        }
    }

    /// Makes the directory the run publishes into, and the run's staging directory.
    fn prepare(&mut self, catalog: &Catalog) -> Result<()> {
        let desc = self.descriptor();
        self.run = dataset::new_run_id();
        if self.opts.append {
            self.made_dir = self.dir.symlink_metadata().is_err();
            if self.made_dir {
                self.skeleton = Some(rocpd_pipeline::cleanup::RegisteredCleaner::new(
                    &self.dir,
                    dataset::remove_unused_skeleton,
                ));
            }
            std::fs::create_dir_all(&self.dir)
                .map_err(|e| Error::output(&self.dir, format!("cannot create directory: {e}")))?;
            self.root = self.dir.clone();
        } else {
            if self.dir.symlink_metadata().is_ok() {
                return Err(Error::output(
                    &self.dir,
                    "already exists; refusing to overwrite it (to add a run to a dataset, use append)",
                ));
            }
            let parent = self
                .dir
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::output(parent, format!("cannot create directory: {e}")))?;
            let tmp = rocpd_pipeline::temp_sibling(&self.dir)?;
            self.registered
                .push(rocpd_pipeline::cleanup::Registered::new(&tmp));
            if tmp.symlink_metadata().is_ok() {
                // Left behind by a crashed run of a process with the same pid.
                std::fs::remove_dir_all(&tmp).map_err(|e| {
                    Error::output(&tmp, format!("cannot remove stale directory: {e}"))
                })?;
            }
            std::fs::create_dir(&tmp)
                .map_err(|e| Error::output(&tmp, format!("cannot create directory: {e}")))?;
            self.root = tmp.clone();
            self.tmp = Some(tmp);
        }
        // A link planted at `_staging` would take the run's files outside the dataset.
        dataset::refuse_links(&self.root, Path::new(dataset::STAGING))?;
        let staging = self.root.join(dataset::STAGING).join(&self.run);
        self.registered
            .push(rocpd_pipeline::cleanup::Registered::new(&staging));
        self.staging = staging;
        // Checked before anything is created, so that a refused directory is left as
        // it was; the staging directory is made when the descriptor needs a draft.
        dataset::prepare_append(&self.root, &desc, &self.staging)?;
        std::fs::create_dir_all(&self.staging)
            .map_err(|e| Error::output(&self.staging, format!("cannot create directory: {e}")))?;
        if self.opts.append {
            // The first run of a new dataset that failed may have taken its descriptor
            // between the check and the staging directory (D145, D150): check again now
            // that this run is staging; the commit checks once more (D153).
            dataset::prepare_append(&self.root, &desc, &self.staging)?;
        }
        dataset::refuse_known_sources(&self.root, &source_guids(catalog))?;
        Ok(())
    }

    /// Every place a commit writes, checked before its first step: no link on the way to
    /// `_runs/`, to the files `rels` or to a table's `_delta_log/`, and each Delta log of
    /// the event tables and the dimension tables `dims` sound and writable.
    fn check_places(&self, rels: &[&str], dims: &[&str]) -> Result<()> {
        dataset::refuse_links(&self.root, Path::new(dataset::RUNS))?;
        for rel in rels {
            dataset::refuse_links(&self.root, Path::new(rel))?;
        }
        if self.opts.table_format == TableFormat::Delta {
            let tables = Table::ALL.iter().map(|&t| table_dir(t));
            for name in tables.chain(dims.iter().copied()) {
                dataset::refuse_links(&self.root, &Path::new(name).join("_delta_log"))?;
                delta::check_log(&self.root.join(name), &self.run)?;
            }
        }
        Ok(())
    }

    /// Publishes the staged file `rel` at `<root>/<rel>`.
    fn publish(&mut self, rel: &str) -> Result<()> {
        let dst = self.root.join(rel);
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::output(parent, format!("cannot create directory: {e}")))?;
        }
        let registered = rocpd_pipeline::cleanup::Registered::new(&dst);
        if !dataset::publish(&self.staging.join(rel), &dst)? {
            return Err(Error::output(
                &dst,
                "exists already; a run never replaces a file",
            ));
        }
        self.published.push((dst, registered));
        Ok(())
    }
}

fn source_guids(cat: &Catalog) -> Vec<(String, PathBuf)> {
    cat.sources
        .iter()
        .map(|s| (s.guid.clone(), s.path.clone()))
        .collect()
}

fn created_by() -> String {
    // "<application> version <version>" is the form parquet-mr parses; other forms make
    // it ignore the statistics of string columns.
    format!("rocpd-rs version {}", env!("CARGO_PKG_VERSION"))
}

fn base_properties(opts: &ParquetOptions, kv: Vec<KeyValue>) -> Result<WriterProperties> {
    let level = ZstdLevel::try_new(opts.zstd_level)
        .map_err(|_| Error::Usage(format!("parquet: bad zstd level {}", opts.zstd_level)))?;
    Ok(WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_dictionary_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Page)
        // Every row group's statistics stay in memory until the file's footer is
        // written, and untruncated the min and max of a JSON column (`args`,
        // `call_stack`) are whole documents. 64 bytes is the page index's own limit, and
        // a truncated bound is still a bound.
        .set_statistics_truncate_length(Some(STATISTICS_TRUNCATE_BYTES))
        .set_created_by(created_by())
        .set_key_value_metadata(Some(kv))
        .set_max_row_group_row_count(Some(opts.row_group_rows))
        .set_max_row_group_bytes(Some(MAX_ROW_GROUP_BYTES))
        .build())
}

fn event_properties(
    opts: &ParquetOptions,
    table: Table,
    schema: &arrow_schema::Schema,
    start_column: usize,
) -> Result<WriterProperties> {
    let mut kv: Vec<KeyValue> = schema::table_metadata(table)
        .into_iter()
        .map(|(k, v)| KeyValue::new(k, v))
        .collect();
    kv.sort_by(|a, b| a.key.cmp(&b.key));
    let props = base_properties(opts, kv)?;
    let mut b = props.into_builder();
    // Dictionary encoding pays for strings (names repeat); numbers are mostly distinct
    // (times, ids), so their dictionaries only filled up to the fallback limit and made
    // the files larger (26 MiB against 16 MiB for 1M events) and the writer slower.
    for f in schema.fields() {
        if !matches!(f.data_type(), DataType::Utf8 | DataType::Dictionary(..)) {
            b = b.set_column_dictionary_enabled(ColumnPath::from(f.name().as_str()), false);
        }
    }
    Ok(b.set_sorting_columns(Some(vec![SortingColumn {
        column_idx: start_column as i32,
        descending: false,
        nulls_first: false,
    }]))
    .build())
}

/// Writes one small file in a single pass; returns its size.
fn write_whole_file(path: &Path, batch: &RecordBatch, props: WriterProperties) -> Result<u64> {
    let fail = |e: &dyn std::fmt::Display| Error::output(path, format!("write failed: {e}"));
    let file = files::create_new(path)?;
    let mut w = ArrowWriter::try_new(std::io::BufWriter::new(file), batch.schema(), Some(props))
        .map_err(|e| fail(&e))?;
    w.write(batch).map_err(|e| fail(&e))?;
    let file = w
        .into_inner()
        .map_err(|e| fail(&e))?
        .into_inner()
        .map_err(|e| fail(e.error()))?;
    file.sync_all().map_err(|e| fail(&e))?;
    Ok(file.metadata().map_err(|e| fail(&e))?.len())
}

/// One file of the run, as its description and the Delta log list it.
struct RunFile {
    /// The table (directory) name.
    table: String,
    /// Path relative to the dataset root.
    rel: String,
    add: delta::Add,
}

impl Sink for ParquetSink {
    fn commits_shared(&self) -> bool {
        self.opts.append
    }

    fn seal(&mut self) -> Result<()> {
        match self.state.as_mut() {
            Some(st) => st.files.close_all(),
            None => Ok(()),
        }
    }

    fn check_commit(&self) -> Result<()> {
        let Some(st) = self.state.as_ref() else {
            return Ok(());
        };
        let cat = st.resolver.catalog();
        if self.opts.append {
            dataset::refuse_known_sources(&self.root, &source_guids(cat))?;
        }
        let rels: Vec<&str> = st.files.done.iter().map(|p| p.rel.as_str()).collect();
        let dims: Vec<&str> = dims::dimension_tables(cat).iter().map(|d| d.name).collect();
        self.check_places(&rels, &dims)
    }

    fn needs_time_order(&self) -> bool {
        // Every part file is sorted on its own (a row out of order starts a new part), so
        // inputs can come a group at a time: a new part per table for each group.
        false
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        self.check_options()?;
        self.prepare(catalog)?;
        // A partition key that is also a column name is stored only in the directory
        // names (the Hive convention): readers that add the key as a column (pyarrow's
        // default) would otherwise fail on two `pid` columns of different types.
        let omit: &[&str] = if self.opts.partition_by.contains(&PartitionKey::Pid) {
            &["pid"]
        } else {
            &[]
        };
        let tables = Table::ALL
            .iter()
            .map(|&t| {
                let (schema, projection) = schema::file_schema(t, omit);
                let start = schema.index_of("start_ns")?;
                let end = schema.index_of("end_ns")?;
                Ok(files::TableFiles {
                    props: event_properties(&self.opts, t, &schema, start)?,
                    schema,
                    projection,
                    start,
                    end,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let schemas = tables.iter().map(|t| t.schema.clone()).collect();
        self.state = Some(State {
            resolver: Resolver::new(catalog.clone()),
            files: FileSet::new(
                &self.staging,
                &self.run,
                tables,
                files::Limits {
                    row_group_rows: self.opts.row_group_rows,
                    max_rows_per_file: self.opts.max_rows_per_file,
                    max_open_files: self.opts.max_open_files,
                    buffer_bytes: self.opts.buffer_bytes,
                },
            ),
            schemas,
        });
        Ok(())
    }

    fn write(&mut self, chunk: &Chunk) -> Result<()> {
        let st = self
            .state
            .as_mut()
            .ok_or_else(|| Error::Usage("internal: parquet sink written before begin".into()))?;
        for table in Table::ALL {
            let batches: Vec<&RecordBatch> = chunk
                .batches
                .iter()
                .filter(|b| b.table == table && b.batch.num_rows() > 0)
                .map(|b| &b.batch)
                .collect();
            if batches.is_empty() {
                continue;
            }
            let model = convert::sorted(table, &batches)?;
            let rows = st.resolver.convert(table, &model)?;
            for part in st
                .resolver
                .partition(&self.opts.partition_by, &model, rows)?
            {
                st.files.append(table, &part.dir, part.batch)?;
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<Vec<OutputReport>> {
        let mut st = self
            .state
            .take()
            .ok_or_else(|| Error::Usage("internal: parquet sink finished before begin".into()))?;
        st.files.close_all()?;
        let mut report = OutputReport {
            path: self.dir.clone(),
            shared: self.opts.append,
            ..Default::default()
        };
        let mut span: Option<(i64, i64)> = None;
        let mut total_bytes = 0u64;
        let mut parts = std::mem::take(&mut st.files.done);
        parts.sort_by(|a, b| (a.table, &a.rel).cmp(&(b.table, &b.rel)));
        let mut run_files: Vec<RunFile> = Vec::new();
        let mut tables = serde_json::Map::new();
        for table in Table::ALL {
            let mine: Vec<_> = parts.iter().filter(|p| p.table == table).collect();
            let rows: u64 = mine.iter().map(|p| p.rows).sum();
            report.add(table, rows);
            let mut files = Vec::new();
            for p in mine {
                total_bytes += p.bytes;
                span = Some(match span {
                    Some((lo, hi)) => (lo.min(p.span.0), hi.max(p.span.1)),
                    None => p.span,
                });
                let json = json!({
                    "path": p.rel,
                    "rows": p.rows,
                    "bytes": p.bytes,
                    "row_groups": p.row_groups,
                    "start_ns_min": p.span.0,
                    "end_ns_max": p.span.1,
                });
                files.push(json);
                let dir = table_dir(table);
                run_files.push(RunFile {
                    table: dir.to_string(),
                    rel: p.rel.clone(),
                    add: delta::Add {
                        path: p.rel[dir.len() + 1..].to_string(),
                        partition: p.partition.clone(),
                        bytes: p.bytes,
                        rows: p.rows,
                        times: Some(((p.span.0, p.inner.0), (p.inner.1, p.span.1))),
                    },
                });
            }
            tables.insert(
                table_dir(table).into(),
                json!({
                    "kind": "event",
                    "model_table": table.name(),
                    "rows": rows,
                    "sorted_by": ["start_ns"],
                    "files": files,
                }),
            );
        }
        let dim_props = base_properties(
            &self.opts,
            vec![KeyValue::new(
                SCHEMA_VERSION_KEY.to_string(),
                SCHEMA_VERSION.to_string(),
            )],
        )?;
        let mut dim_schemas = Vec::new();
        for d in dims::dimension_tables(st.resolver.catalog()) {
            let batch = d.batch()?;
            let file = files::part_name(&self.run, 0);
            let rel = format!("{}/{file}", d.name);
            let dir = self.staging.join(d.name);
            std::fs::create_dir_all(&dir)
                .map_err(|e| Error::output(&dir, format!("cannot create directory: {e}")))?;
            let bytes = write_whole_file(&dir.join(&file), &batch, dim_props.clone())?;
            total_bytes += bytes;
            let rows = batch.num_rows() as u64;
            let json = json!({"path": rel, "rows": rows, "bytes": bytes});
            tables.insert(
                d.name.into(),
                json!({"kind": "dimension", "rows": rows, "files": [json]}),
            );
            run_files.push(RunFile {
                table: d.name.to_string(),
                rel,
                add: delta::Add {
                    path: file,
                    partition: String::new(),
                    bytes,
                    rows,
                    times: None,
                },
            });
            dim_schemas.push((d.name, batch.schema()));
        }
        if st.files.evictions > 0 {
            report.notes.push(format!(
                "{} part files were finished early because more than {} partitions were open at once; their later rows are in further part files",
                st.files.evictions, self.opts.max_open_files
            ));
        }
        if st.files.order_breaks > 0 {
            report.notes.push(format!(
                "rows arrived out of start-time order {} times; each time a new part file was started so that every file stays sorted",
                st.files.order_breaks
            ));
        }
        let cat = st.resolver.catalog();
        let run_desc = json!({
            "run": self.run,
            "created": dataset::now_rfc3339(),
            "schema_version": SCHEMA_VERSION,
            "model_version": MODEL_VERSION,
            "producer": {
                "name": "rocpd-rs",
                "version": env!("CARGO_PKG_VERSION"),
                "created_by": created_by(),
            },
            "options": {
                "row_group_rows": self.opts.row_group_rows,
                "max_row_group_bytes": MAX_ROW_GROUP_BYTES,
                "buffer_bytes": self.opts.buffer_bytes,
                "max_rows_per_file": self.opts.max_rows_per_file,
                "zstd_level": self.opts.zstd_level,
                "partition_by": self.opts.partition_by.iter().map(|k| k.name()).collect::<Vec<_>>(),
                "table_format": self.opts.table_format.name(),
            },
            "sources": cat.sources.iter().map(|s| json!({
                "guid": s.guid,
                "path": s.path.display().to_string(),
                "format": s.format,
            })).collect::<Vec<_>>(),
            "time_range_ns": span.map(|(a, b)| [a, b]),
            "notes": report.notes,
            "tables": tables,
        });
        let guids = source_guids(cat);
        let schemas = std::mem::take(&mut st.schemas);
        drop(st);

        // Commit: the files, then each table's Delta log, then the run's description.
        if self.opts.append {
            // Another run may have committed the same inputs since `begin`.
            dataset::refuse_known_sources(&self.root, &guids)?;
        }
        let runs_dir = self.root.join(dataset::RUNS);
        let rels: Vec<&str> = run_files.iter().map(|f| f.rel.as_str()).collect();
        let dims: Vec<&str> = dim_schemas.iter().map(|(n, _)| *n).collect();
        self.check_places(&rels, &dims)?;
        if self.opts.append {
            // No run commits into a dataset without its descriptor: one taken by a first
            // run's cleanup after this run's own check is put back (this run is staging,
            // so no cleanup takes it again), and one another run made meanwhile must
            // match this run's options (D153).
            dataset::prepare_append(&self.root, &self.descriptor(), &self.staging)?;
        }
        std::fs::create_dir_all(&runs_dir)
            .map_err(|e| Error::output(&runs_dir, format!("cannot create directory: {e}")))?;
        let draft = self.staging.join(format!("{}.json", self.run));
        dataset::write_new(
            &draft,
            &serde_json::to_vec_pretty(&run_desc).expect("JSON value"),
        )?;
        total_bytes += std::fs::metadata(&draft).map(|m| m.len()).unwrap_or(0);
        let run_path = runs_dir.join(format!("{}.json", self.run));
        // From the first file published to the run's description, a forced exit (a second
        // Ctrl-C) waits: between two Delta commits it would leave the run in some tables'
        // logs and not in `_runs`, so that appending the same input again counted it twice.
        let committing = rocpd_pipeline::cleanup::committing();
        for f in &run_files {
            self.publish(&f.rel)?;
        }
        if self.opts.table_format == TableFormat::Delta {
            let partition_columns = self.descriptor().partition_by;
            let partition_types: Vec<(&str, &str)> = self
                .opts
                .partition_by
                .iter()
                .map(|k| match k {
                    PartitionKey::Node => ("node", "string"),
                    PartitionKey::Pid => ("pid", "long"),
                })
                .collect();
            let mut logs: Vec<(String, String, Vec<String>)> = Table::ALL
                .iter()
                .map(|&t| {
                    Ok((
                        table_dir(t).to_string(),
                        delta::schema_string(&schemas[t as usize], &partition_types)?,
                        partition_columns.clone(),
                    ))
                })
                .collect::<Result<_>>()?;
            for (name, schema) in &dim_schemas {
                logs.push((
                    name.to_string(),
                    delta::schema_string(schema, &[])?,
                    Vec::new(),
                ));
            }
            for (i, (name, schema, partition_columns)) in logs.into_iter().enumerate() {
                let adds: Vec<&delta::Add> = run_files
                    .iter()
                    .filter(|f| f.table == name)
                    .map(|f| &f.add)
                    .collect();
                let log = delta::TableLog {
                    dir: &self.root.join(&name),
                    schema,
                    partition_columns,
                    run: &self.run,
                };
                match delta::commit(&log, &adds, &self.staging) {
                    // From the first commit on, a log lists the run's files: they stay,
                    // whatever happens next, so that no log points at a missing file.
                    Ok(_) => self.published.clear(),
                    Err(e) if i > 0 => {
                        // Describe the run anyway, so that it is known (and its inputs
                        // refused if appended again) rather than half in the dataset.
                        let described = dataset::publish(&draft, &run_path);
                        return Err(Error::output(
                            &self.root,
                            format!(
                                "the run {} is committed in the Delta logs of the tables before {name} only{}: {e}",
                                self.run,
                                if matches!(described, Ok(true)) { "" } else { ", and has no _runs entry" }
                            ),
                        ));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        if !dataset::publish(&draft, &run_path)? {
            return Err(Error::output(
                &run_path,
                "exists already; run ids must not repeat",
            ));
        }
        // Committed: from here on the run's files are the dataset's.
        self.published.clear();
        if self.opts.append {
            committing.done();
        } else {
            drop(committing);
        }
        let summary = dataset::rebuild_summary(&self.root, &self.descriptor(), &self.staging);
        let _ = std::fs::remove_dir_all(&self.staging);
        self.registered.pop();
        if let Err(e) = summary {
            report.notes.push(format!(
                "the run is committed but the summary was not rebuilt ({e}); the next run rebuilds it"
            ));
        }
        if let Some(tmp) = self.tmp.clone() {
            // A new dataset: no other writer knows its staging area, and every byte of
            // it is this run's.
            let _ = std::fs::remove_dir(tmp.join(dataset::STAGING));
            total_bytes = tree_size(&tmp);
            if self.dir.symlink_metadata().is_ok() {
                return Err(Error::output(
                    &self.dir,
                    "appeared while the dataset was written; refusing to overwrite it",
                ));
            }
            std::fs::rename(&tmp, &self.dir)
                .map_err(|e| Error::output(&self.dir, format!("cannot rename into place: {e}")))?;
            // Only now is the directory no longer ours to remove.
            self.tmp = None;
        }
        report.bytes = total_bytes;
        report.time_range = span.map(|(a, b)| [a, b]);
        Ok(vec![report])
    }
}

/// The bytes of every file under `dir`.
fn tree_size(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_size(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

impl Drop for ParquetSink {
    fn drop(&mut self) {
        self.state = None;
        for (path, _) in self.published.drain(..) {
            let _ = std::fs::remove_file(path);
        }
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_dir_all(tmp);
        } else if !self.staging.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.staging);
            if self.made_dir {
                dataset::remove_unused_skeleton(&self.root);
            }
        }
    }
}
