//! Streaming Parquet dataset writer.
//!
//! A run becomes one dataset directory: one table (sub-directory of part files) per event
//! kind, with names resolved into dictionary-encoded string columns so that queries need
//! no join, plus one small file per dimension table of the catalog and a
//! `_metadata.json`. Rows are sorted by start time in every file; files are
//! zstd-compressed, with column statistics and page indexes so that time-range predicates
//! prune row groups and pages. Only the in-progress row group of each open file is held
//! in memory. The layout is specified column by column in `formats/parquet/README.md`.

mod convert;
mod dims;
mod files;
mod schema;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use rocpd_model::{Catalog, Error, Result, Table, MODEL_VERSION};
use rocpd_pipeline::{Chunk, OutputReport, Sink};
use serde_json::json;

pub use dims::{dimension_table, DIMENSION_TABLES};
pub use schema::{
    arrow_schema as event_schema, markdown as columns_markdown, table_dir, SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
};

use convert::Resolver;
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
    /// zstd level (default 3; 1..=22).
    pub zstd_level: i32,
    /// Part files open at once (default 64). When a further one is needed, the least
    /// recently used is finished; later rows of its partition start a new part file.
    pub max_open_files: usize,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            row_group_rows: 32_768,
            max_rows_per_file: 16_777_216,
            partition_by: Vec::new(),
            zstd_level: 3,
            max_open_files: 64,
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

/// A [`Sink`] writing one Parquet dataset directory, whole or not at all: everything is
/// built in a sibling temporary directory (`.<name>.partial-<pid>`) that `finish` renames
/// into place; dropped without `finish`, the temporary directory is removed.
pub struct ParquetSink {
    dir: PathBuf,
    tmp: PathBuf,
    registered: Option<rocpd_pipeline::cleanup::Registered>,
    opts: ParquetOptions,
    state: Option<State>,
}

struct State {
    resolver: Resolver,
    files: FileSet,
}

impl ParquetSink {
    /// A sink that will create the dataset directory `dir` (which must not exist).
    pub fn new(dir: &Path, opts: ParquetOptions) -> Self {
        ParquetSink {
            dir: dir.to_path_buf(),
            tmp: PathBuf::new(),
            registered: None,
            opts,
            state: None,
        }
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
        .set_created_by(created_by())
        .set_key_value_metadata(Some(kv))
        .set_max_row_group_row_count(Some(opts.row_group_rows))
        .set_max_row_group_bytes(Some(MAX_ROW_GROUP_BYTES))
        .build())
}

fn event_properties(
    opts: &ParquetOptions,
    table: Table,
    start_column: usize,
) -> Result<WriterProperties> {
    let mut kv: Vec<KeyValue> = schema::table_metadata(table)
        .into_iter()
        .map(|(k, v)| KeyValue::new(k, v))
        .collect();
    kv.sort_by(|a, b| a.key.cmp(&b.key));
    let props = base_properties(opts, kv)?;
    Ok(props
        .into_builder()
        .set_sorting_columns(Some(vec![SortingColumn {
            column_idx: start_column as i32,
            descending: false,
            nulls_first: false,
        }]))
        .build())
}

/// Writes one small file in a single pass; returns its size.
fn write_whole_file(path: &Path, batch: &RecordBatch, props: WriterProperties) -> Result<u64> {
    let fail = |e: &dyn std::fmt::Display| Error::output(path, format!("write failed: {e}"));
    let file = std::fs::File::create(path)
        .map_err(|e| Error::output(path, format!("cannot create: {e}")))?;
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

impl Sink for ParquetSink {
    fn needs_time_order(&self) -> bool {
        // Every part file is sorted on its own (a row out of order starts a new part), so
        // inputs can come a group at a time: a new part per table for each group.
        false
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        self.check_options()?;
        if self.dir.symlink_metadata().is_ok() {
            return Err(Error::output(
                &self.dir,
                "already exists; refusing to overwrite it",
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
        self.registered = Some(rocpd_pipeline::cleanup::Registered::new(&tmp));
        if tmp.symlink_metadata().is_ok() {
            // Left behind by a crashed run of a process with the same pid.
            std::fs::remove_dir_all(&tmp)
                .map_err(|e| Error::output(&tmp, format!("cannot remove stale directory: {e}")))?;
        }
        std::fs::create_dir(&tmp)
            .map_err(|e| Error::output(&tmp, format!("cannot create directory: {e}")))?;
        self.tmp = tmp;
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
                    props: event_properties(&self.opts, t, start)?,
                    schema,
                    projection,
                    start,
                    end,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.state = Some(State {
            resolver: Resolver::new(catalog.clone()),
            files: FileSet::new(
                &self.tmp,
                tables,
                self.opts.max_rows_per_file,
                self.opts.max_open_files,
            ),
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
            ..Default::default()
        };
        let mut tables = serde_json::Map::new();
        let mut span: Option<(i64, i64)> = None;
        let mut total_bytes = 0u64;
        let mut parts = std::mem::take(&mut st.files.done);
        parts.sort_by(|a, b| (a.table, &a.rel).cmp(&(b.table, &b.rel)));
        for table in Table::ALL {
            let mine: Vec<_> = parts.iter().filter(|p| p.table == table).collect();
            let rows: u64 = mine.iter().map(|p| p.rows).sum();
            report.add(table, rows);
            for p in &mine {
                total_bytes += p.bytes;
                span = Some(match span {
                    Some((lo, hi)) => (lo.min(p.span.0), hi.max(p.span.1)),
                    None => p.span,
                });
            }
            let files: Vec<_> = mine
                .iter()
                .map(|p| {
                    json!({
                        "path": p.rel,
                        "rows": p.rows,
                        "bytes": p.bytes,
                        "row_groups": p.row_groups,
                        "start_ns_min": p.span.0,
                        "end_ns_max": p.span.1,
                    })
                })
                .collect();
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
        for d in dims::dimension_tables(st.resolver.catalog()) {
            let batch = d.batch()?;
            let bytes = write_whole_file(&self.tmp.join(d.file), &batch, dim_props.clone())?;
            total_bytes += bytes;
            tables.insert(
                d.file.trim_end_matches(".parquet").into(),
                json!({
                    "kind": "dimension",
                    "rows": batch.num_rows(),
                    "files": [{"path": d.file, "rows": batch.num_rows(), "bytes": bytes}],
                }),
            );
        }
        let cat = st.resolver.catalog();
        let meta = json!({
            "format": "rocpd-parquet",
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
                "max_rows_per_file": self.opts.max_rows_per_file,
                "zstd_level": self.opts.zstd_level,
                "partition_by": self.opts.partition_by.iter().map(|k| k.name()).collect::<Vec<_>>(),
            },
            "columns_only_in_path": if self.opts.partition_by.contains(&PartitionKey::Pid) {
                vec!["pid"]
            } else {
                Vec::new()
            },
            "sources": cat.sources.iter().map(|s| json!({
                "guid": s.guid,
                "path": s.path.display().to_string(),
                "format": s.format,
            })).collect::<Vec<_>>(),
            "time_range_ns": span.map(|(a, b)| [a, b]),
            "tables": tables,
        });
        let meta_path = self.tmp.join("_metadata.json");
        let text = serde_json::to_vec_pretty(&meta)
            .map_err(|e| Error::output(&meta_path, format!("cannot encode: {e}")))?;
        std::fs::write(&meta_path, &text)
            .map_err(|e| Error::output(&meta_path, format!("write failed: {e}")))?;
        total_bytes += text.len() as u64;

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
        drop(st);
        if self.dir.symlink_metadata().is_ok() {
            return Err(Error::output(
                &self.dir,
                "appeared while the dataset was written; refusing to overwrite it",
            ));
        }
        std::fs::rename(&self.tmp, &self.dir)
            .map_err(|e| Error::output(&self.dir, format!("cannot rename into place: {e}")))?;
        self.tmp = PathBuf::new();
        report.bytes = total_bytes;
        report.time_range = span.map(|(a, b)| [a, b]);
        Ok(vec![report])
    }
}

impl Drop for ParquetSink {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.state = None;
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}
