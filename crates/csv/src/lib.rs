//! The CSV writer: the file set AMD's `rocpd convert -f csv` writes, streamed, and
//! rocprofv3's `--stats` files.
//!
//! [`CsvSink`] writes, for one output, `<dir>/<prefix>_<name>.csv` (`<dir>/<name>.csv`
//! with an empty prefix) for each of the trace files of [`TraceFile`] that receives a
//! row: kernel dispatches, one file per API domain (HIP, HSA, markers, RCCL, rocDecode,
//! rocJPEG), memory copies, allocations, scratch memory, counter values per dispatch and
//! the agents of the processes. With [`CsvOptions::stats`] it also writes the stats files
//! of [`StatsFile`]. Rows are written as chunks arrive, in time order (`start` ascending,
//! `end` descending) within each file; every process goes into the same files, told apart
//! by the `Guid` column.
//!
//! Headers, value conventions, where each column comes from and every deviation from
//! AMD's writer are specified in `formats/csv/README.md`.
//!
//! Every file is built under a temporary name and renamed into place by
//! [`Sink::finish`]; dropped unfinished, or when any file fails, the sink leaves none of
//! its files behind.

#![warn(missing_docs)]

mod agents;
mod counters;
mod layout;
mod stats;
mod text;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::{Array, BooleanArray, RecordBatch, StringArray};
use rocpd_model::hash::FastMap;
use rocpd_model::naming::{allocation_operation, output_category};
use rocpd_model::view::{gi, gs, oi, os, strs, Cols};
use rocpd_model::{
    AgentIndexMode, Catalog, CatalogIndex, Error, EventBatch, Projection, Result, Table,
};
use rocpd_pipeline::{Chunk, OutputFile, OutputReport, Sink, TableCounts};
use rocpd_summary::{Summary, SummarySink};

pub use layout::{
    StatsFile, TraceFile, AGENT_HEADER, ALLOCATION_HEADER, API_HEADER, COPY_HEADER, COUNTER_HEADER,
    KERNEL_HEADER, SCRATCH_HEADER, STATS_HEADER,
};

/// Write buffer of each open CSV file: a split keeps many sets open at once.
const FILE_BUFFER: usize = 64 << 10;

/// How the CSV set is written.
#[derive(Debug, Clone, Default)]
pub struct CsvOptions {
    /// How agents are numbered in `Agent_Id` columns (`"Agent <n>"`, `"GPU <n>"`).
    pub agent_index: AgentIndexMode,
    /// Name kernels after their enclosing ROCTx range, when they have one.
    pub kernel_rename: bool,
    /// Also write rocprofv3's `--stats` files.
    pub stats: bool,
}

/// The file-name prefix of an output: `<name>`, `<name>.<label>` for a split part, or
/// `<label>` when the name is empty.
pub fn prefix(name: &str, label: Option<&str>) -> String {
    match (name.is_empty(), label) {
        (_, None) => name.to_string(),
        (true, Some(l)) => l.to_string(),
        (false, Some(l)) => format!("{name}.{l}"),
    }
}

/// `<dir>/<prefix>_<file>.csv`, or `<dir>/<file>.csv` with an empty prefix.
pub fn file_path(dir: &Path, prefix: &str, file: &str) -> PathBuf {
    if prefix.is_empty() {
        dir.join(format!("{file}.csv"))
    } else {
        dir.join(format!("{prefix}_{file}.csv"))
    }
}

/// Every file the set with `prefix` may write (trace files, and stats files with
/// `stats`), for claiming the paths before a run.
pub fn output_paths(dir: &Path, prefix: &str, stats: bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = TraceFile::ALL
        .iter()
        .map(|f| file_path(dir, prefix, f.name()))
        .collect();
    if stats {
        v.extend(
            StatsFile::ALL
                .iter()
                .map(|f| file_path(dir, prefix, f.name())),
        );
    }
    v
}

/// Rows the CSV set has no file for: the reason counted in the report, and its note.
const SKIP_API: (&str, &str) = (
    "API calls of other domains",
    "their category (KFD events, OpenMP, Proton scopes and kernels, ...) has no file in AMD's CSV layout",
);
const SKIP_SAMPLE: (&str, &str) = (
    "samples that are not markers",
    "zero-length API records stored as samples and counter-track samples have no CSV file; as in AMD's rocpd convert, only marker samples are written",
);
const SKIP_PMC: (&str, &str) = (
    "counter values without a dispatch",
    "counter values on sample tracks belong to no kernel dispatch, and counter_collection.csv has rows per dispatch",
);

/// One open trace file.
struct Open {
    file: OutputFile,
    rows: TableCounts,
    lines: u64,
}

/// The trace files of the set, opened on their first row.
struct Files {
    dir: PathBuf,
    prefix: String,
    open: Vec<Option<Open>>,
}

impl Files {
    /// Appends a finished line to `f`, counting `rows` input rows of `table`.
    fn emit(&mut self, f: TraceFile, table: Option<Table>, rows: u64, line: &[u8]) -> Result<()> {
        let slot = &mut self.open[f as usize];
        if slot.is_none() {
            let path = file_path(&self.dir, &self.prefix, f.name());
            let mut file = OutputFile::create_with_buffer(&path, FILE_BUFFER)?;
            let header = text::header_line(f.header());
            file.writer()
                .write_all(&header)
                .map_err(|e| file.io_error(e))?;
            *slot = Some(Open {
                file,
                rows: TableCounts::new(),
                lines: 0,
            });
        }
        let Some(open) = slot.as_mut() else {
            return Err(Error::Usage("internal: a CSV file did not open".into()));
        };
        let written = open.file.writer().write_all(line);
        written.map_err(|e| open.file.io_error(e))?;
        open.lines += 1;
        if let Some(t) = table {
            *open.rows.entry(t.name()).or_default() += rows;
        }
        Ok(())
    }
}

/// The summary aggregated for the stats files.
struct Stats {
    sink: SummarySink,
    out: Arc<Mutex<Summary>>,
}

/// Writes the CSV file set of one output (see the crate documentation).
pub struct CsvSink {
    options: CsvOptions,
    all_agents: bool,
    catalog: Option<Arc<Catalog>>,
    index: CatalogIndex,
    labels: FastMap<(u32, i64), (String, i64)>,
    files: Files,
    line: text::Line,
    seen: Vec<bool>,
    counters: counters::Counters,
    stats: Option<Stats>,
    skipped: BTreeMap<(&'static str, &'static str), u64>,
}

impl CsvSink {
    /// A CSV set written as `<dir>/<prefix>_<name>.csv` (see [`prefix`] and [`file_path`]).
    /// Nothing is created before the first row.
    pub fn new(dir: &Path, prefix: &str, options: CsvOptions) -> Self {
        let stats = options.stats.then(|| {
            let out = Arc::new(Mutex::new(Summary::default()));
            Stats {
                sink: SummarySink::new(false, out.clone())
                    .with_domain_summary()
                    .with_operation_names(),
                out,
            }
        });
        CsvSink {
            options,
            all_agents: true,
            catalog: None,
            index: CatalogIndex::default(),
            labels: FastMap::default(),
            files: Files {
                dir: dir.to_path_buf(),
                prefix: prefix.to_string(),
                open: TraceFile::ALL.iter().map(|_| None).collect(),
            },
            line: text::Line::default(),
            seen: Vec::new(),
            counters: counters::Counters::default(),
            stats,
            skipped: BTreeMap::new(),
        }
    }

    /// `agent_info.csv` lists only the agents of processes with rows in this output (for
    /// the parts of a split), instead of every agent of the inputs.
    pub fn agents_of_written_processes(mut self) -> Self {
        self.all_agents = false;
        self
    }
}

/// Writes an `Agent_Id` field: the agent's label, `""` for none.
fn agent_field(
    labels: &FastMap<(u32, i64), (String, i64)>,
    line: &mut text::Line,
    source: u32,
    agent: Option<i64>,
) {
    match agent {
        Some(a) => match labels.get(&(source, a)) {
            Some((label, idx)) => line.label(label, *idx),
            None => line.label("Agent", a),
        },
        None => line.text(""),
    }
}

/// The `flags` member of a scratch row's extdata, read in place: the other members are
/// skipped, and a number or a string without escapes is not copied.
#[derive(serde::Deserialize)]
struct ScratchExtdata<'a> {
    #[serde(borrow, default)]
    flags: Option<Flags<'a>>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Flags<'a> {
    Number(serde_json::Number),
    Text(#[serde(borrow)] std::borrow::Cow<'a, str>),
    Other(serde::de::IgnoredAny),
}

/// The scratch `Alloc_Flags` from the row's extdata (`{"flags": ...}`). An object is read
/// in place; anything the in-place read refuses (text that is not an object, a repeated
/// member) goes through a whole `serde_json::Value`, as it always did. Members other than
/// `flags` are skipped unchecked, so an object whose other members `Value` would refuse
/// (a number past `f64`, a lone surrogate escape) still gives its flags.
fn alloc_flags(line: &mut text::Line, extdata: Option<&str>) {
    let Some(text) = extdata else {
        return line.empty();
    };
    // A struct also reads from an array; only an object has members.
    let in_place = text
        .trim_start()
        .starts_with('{')
        .then(|| serde_json::from_str::<ScratchExtdata<'_>>(text).ok())
        .flatten();
    let flags = match in_place {
        Some(ScratchExtdata { flags }) => flags,
        None => serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(
                |mut v| match v.get_mut("flags").map(serde_json::Value::take) {
                    Some(serde_json::Value::Number(n)) => Some(Flags::Number(n)),
                    Some(serde_json::Value::String(s)) => Some(Flags::Text(s.into())),
                    _ => None,
                },
            ),
    };
    match flags {
        Some(Flags::Number(n)) => line.int(n),
        Some(Flags::Text(s)) => line.text(&s),
        _ => line.empty(),
    }
}

/// The batch's sample rows that are markers (the only samples the stats count).
fn marker_samples(b: &EventBatch) -> Result<Option<RecordBatch>> {
    let cats = strs(&b.batch, Table::Sample, "category");
    let keep: BooleanArray = (0..b.batch.num_rows())
        .map(|r| Some(output_category(os(cats, r).unwrap_or("")) == "marker_api"))
        .collect();
    if keep.true_count() == 0 {
        return Ok(None);
    }
    if keep.true_count() == b.batch.num_rows() {
        return Ok(Some(b.batch.clone()));
    }
    Ok(Some(arrow_select::filter::filter_record_batch(
        &b.batch, &keep,
    )?))
}

impl Sink for CsvSink {
    fn projection(&self) -> Projection {
        // The scratch rows' flags are in their own extdata; nothing else reads JSON text.
        Projection::without_json_text().with("extdata")
    }

    fn needs_time_order(&self) -> bool {
        // Each file's rows in one time order over all processes.
        true
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        self.index = CatalogIndex::new(catalog);
        self.labels = catalog
            .agents
            .iter()
            .map(|a| ((a.source, a.id), a.label(self.options.agent_index)))
            .collect();
        self.seen = vec![false; catalog.sources.len()];
        self.counters.enabled = !catalog.pmcs.is_empty();
        if let Some(s) = &mut self.stats {
            s.sink.begin(catalog)?;
        }
        self.catalog = Some(catalog.clone());
        Ok(())
    }

    fn write(&mut self, chunk: &Chunk) -> Result<()> {
        let Some(cat) = self.catalog.clone() else {
            return Err(Error::Usage("internal: CSV rows before the catalog".into()));
        };
        let cols: Vec<Cols> = chunk
            .batches
            .iter()
            .map(|b| Cols::new(&b.batch, b.table))
            .collect();
        let extdata: Vec<Option<&StringArray>> = chunk
            .batches
            .iter()
            .map(|b| {
                (b.table == Table::MemoryAllocation).then(|| strs(&b.batch, b.table, "extdata"))
            })
            .collect();
        for (bi, r) in chunk.time_order() {
            let table = chunk.batches[bi].table;
            let c = &cols[bi];
            let source = c.source.value(r);
            let Some(info) = cat.sources.get(source as usize) else {
                return Err(Error::Usage(format!(
                    "internal: a row of source {source}, which the catalog does not list"
                )));
            };
            let guid = info.guid.as_str();
            if let Some(s) = self.seen.get_mut(source as usize) {
                *s = true;
            }
            let start = c.start.value(r);
            let end = c.end.value(r);
            let corr = oi(c.stack_id, r).unwrap_or(0);
            let line = &mut self.line;
            match table {
                Table::Region | Table::Marker | Table::Sample => {
                    let category = os(c.category, r).unwrap_or("");
                    let file = TraceFile::of_api_category(output_category(category));
                    let file = match (table, file) {
                        (_, None) => {
                            let why = if table == Table::Sample {
                                SKIP_SAMPLE
                            } else {
                                SKIP_API
                            };
                            *self.skipped.entry(why).or_default() += 1;
                            continue;
                        }
                        (Table::Sample, Some(f)) if f != TraceFile::MarkerApi => {
                            *self.skipped.entry(SKIP_SAMPLE).or_default() += 1;
                            continue;
                        }
                        (_, Some(f)) => f,
                    };
                    let name = gs(c.name, r).unwrap_or("");
                    let function = match (file, gs(c.message, r)) {
                        (TraceFile::MarkerApi, Some(m)) if !m.is_empty() => m,
                        _ => name,
                    };
                    line.start();
                    line.text(guid);
                    line.text(category);
                    line.text(function);
                    line.opt_int(oi(c.pid, r));
                    line.opt_int(oi(c.tid, r));
                    line.int(corr);
                    line.int(start);
                    line.int(end);
                    self.files.emit(file, Some(table), 1, line.finish())?;
                }
                Table::KernelDispatch => {
                    let agent = gi(c.agent_id, r);
                    let kernel_id = gi(c.kernel_id, r).unwrap_or(0);
                    let dispatch_id = gi(c.dispatch_id, r).unwrap_or(0);
                    let kernel = gs(c.kernel_name, r).unwrap_or("");
                    let name = match gs(c.region_name, r) {
                        Some(region) if self.options.kernel_rename && !region.is_empty() => region,
                        _ => kernel,
                    };
                    let symbol = self
                        .index
                        .kernel_symbol(source, kernel_id)
                        .map(|i| &cat.kernel_symbols[i]);
                    let wg = c.workgroup.map(|a| gi(a, r));
                    let grid = c.grid.map(|a| gi(a, r));
                    let lds = gi(c.group_segment_size, r);
                    let scratch = gi(c.private_segment_size, r);
                    line.start();
                    line.text(guid);
                    line.text("KERNEL_DISPATCH");
                    agent_field(&self.labels, line, source, agent);
                    line.opt_int(gi(c.queue_id, r));
                    line.opt_int(gi(c.stream_id, r));
                    line.opt_int(oi(c.tid, r));
                    line.int(dispatch_id);
                    line.int(kernel_id);
                    line.text(name);
                    line.int(corr);
                    line.int(start);
                    line.int(end);
                    line.opt_int(lds);
                    line.opt_int(scratch);
                    line.opt_int(symbol.and_then(|k| k.arch_vgpr_count));
                    line.opt_int(symbol.and_then(|k| k.accum_vgpr_count));
                    line.opt_int(symbol.and_then(|k| k.sgpr_count));
                    for v in wg.iter().chain(grid.iter()) {
                        line.opt_int(*v);
                    }
                    self.files
                        .emit(TraceFile::KernelTrace, Some(table), 1, line.finish())?;
                    if self.counters.enabled {
                        let kernel_name = self.counters.name(name);
                        self.counters.dispatch(
                            source,
                            dispatch_id,
                            counters::Dispatch {
                                start,
                                end,
                                row_id: row_id(&chunk.batches[bi].batch, r),
                                twin: None,
                                queue_id: gi(c.queue_id, r),
                                kernel_id,
                                kernel_name,
                                grid,
                                workgroup: wg,
                                lds,
                                scratch,
                            },
                        );
                    }
                }
                Table::MemoryCopy => {
                    line.start();
                    line.text(guid);
                    line.text("MEMORY_COPY");
                    line.text(gs(c.name, r).unwrap_or(""));
                    line.opt_int(gi(c.stream_id, r));
                    agent_field(&self.labels, line, source, gi(c.src_agent_id, r));
                    agent_field(&self.labels, line, source, gi(c.dst_agent_id, r));
                    line.int(corr);
                    line.int(start);
                    line.int(end);
                    self.files
                        .emit(TraceFile::MemoryCopy, Some(table), 1, line.finish())?;
                }
                Table::MemoryAllocation => {
                    let kind = gs(c.kind, r).unwrap_or("");
                    let level = gs(c.level, r);
                    let agent = gi(c.agent_id, r);
                    line.start();
                    line.text(guid);
                    if level == Some("SCRATCH") {
                        line.text("SCRATCH_MEMORY");
                        line.text(&allocation_operation(kind, level));
                        agent_field(&self.labels, line, source, agent);
                        line.opt_int(gi(c.queue_id, r));
                        line.opt_int(oi(c.tid, r));
                        alloc_flags(line, extdata[bi].and_then(|a| os(a, r)));
                        line.int(start);
                        line.int(end);
                        line.opt_int(gi(c.size, r));
                        self.files
                            .emit(TraceFile::ScratchMemory, Some(table), 1, line.finish())?;
                    } else {
                        line.text("MEMORY_ALLOCATION");
                        line.text(&allocation_operation(kind, level));
                        agent_field(&self.labels, line, source, agent);
                        line.opt_int(gi(c.size, r));
                        line.address(gi(c.address, r));
                        line.int(corr);
                        line.int(start);
                        line.int(end);
                        self.files.emit(
                            TraceFile::MemoryAllocation,
                            Some(table),
                            1,
                            line.finish(),
                        )?;
                    }
                }
                Table::PmcValue => {
                    let Some(dispatch) = gi(c.dispatch_id, r) else {
                        *self.skipped.entry(SKIP_PMC).or_default() += 1;
                        continue;
                    };
                    let value = c.value.and_then(|v| v.is_valid(r).then(|| v.value(r)));
                    self.counters.add(counters::Value {
                        source,
                        start,
                        end,
                        dispatch,
                        pmc_id: gi(c.pmc_id, r).unwrap_or(0),
                        value,
                        agent: gi(c.agent_id, r),
                        pid: oi(c.pid, r),
                        tid: oi(c.tid, r),
                        correlation: oi(c.stack_id, r),
                        name: gs(c.counter_name, r),
                    });
                }
            }
        }
        if let Some(hi) = chunk.max_start() {
            self.flush_counters(Some(hi), &cat)?;
        }
        if let Some(s) = &mut self.stats {
            let mut kept = Chunk::default();
            for b in &chunk.batches {
                match b.table {
                    Table::PmcValue => {}
                    Table::Sample => {
                        if let Some(batch) = marker_samples(b)? {
                            kept.batches.push(EventBatch {
                                table: b.table,
                                batch,
                            });
                        }
                    }
                    _ => kept.batches.push(b.clone()),
                }
            }
            s.sink.write(&kept)?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<Vec<OutputReport>> {
        let Some(cat) = self.catalog.clone() else {
            return Ok(Vec::new());
        };
        self.flush_counters(None, &cat)?;
        self.write_agents(&cat)?;
        let stats = self.stats_files()?;
        let mut reports: Vec<OutputReport> = Vec::new();
        let mut written: Vec<PathBuf> = Vec::new();
        let undo = |written: &[PathBuf]| {
            for p in written {
                let _ = std::fs::remove_file(p);
            }
        };
        let open = std::mem::take(&mut self.files.open);
        for (f, slot) in TraceFile::ALL.iter().zip(open) {
            let Some(o) = slot else { continue };
            let path = o.file.path().to_path_buf();
            let bytes = match o.file.commit() {
                Ok(b) => b,
                Err(e) => {
                    undo(&written);
                    return Err(e);
                }
            };
            written.push(path.clone());
            let mut report = OutputReport {
                path,
                bytes,
                rows: o.rows,
                ..Default::default()
            };
            if *f == TraceFile::CounterCollection {
                let values: u64 = report.rows.values().sum();
                report.notes.push(format!(
                    "{} rows: the {values} counter values summed per (dispatch, counter)",
                    o.lines
                ));
            }
            reports.push(report);
        }
        for (path, file) in stats {
            match file.commit() {
                Ok(bytes) => {
                    written.push(path.clone());
                    reports.push(OutputReport {
                        path,
                        bytes,
                        ..Default::default()
                    });
                }
                Err(e) => {
                    undo(&written);
                    return Err(e);
                }
            }
        }
        let mut notes = Vec::new();
        for p in output_paths(&self.files.dir, &self.files.prefix, self.options.stats) {
            if !written.contains(&p) && p.symlink_metadata().is_ok() {
                notes.push(format!(
                    "{} is not part of this output (an earlier run's?): this run wrote no row of its kind",
                    p.display()
                ));
            }
        }
        let mut skipped = BTreeMap::new();
        for ((reason, why), n) in std::mem::take(&mut self.skipped) {
            notes.push(format!("{reason}: {why}"));
            skipped.insert(reason.to_string(), n);
        }
        if !notes.is_empty() || !skipped.is_empty() {
            if reports.is_empty() {
                // No file: the rows left out are still reported, on the set as a whole.
                reports.push(OutputReport {
                    path: file_path(&self.files.dir, &self.files.prefix, "*"),
                    ..Default::default()
                });
            }
            let first = &mut reports[0];
            first.skipped.append(&mut skipped);
            first.notes.extend(notes);
        }
        Ok(reports)
    }
}

/// The row id (`id` column) of row `r`.
fn row_id(batch: &RecordBatch, r: usize) -> i64 {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    batch
        .column(rocpd_model::col::ID)
        .as_primitive::<Int64Type>()
        .value(r)
}

impl CsvSink {
    fn flush_counters(&mut self, bound: Option<i64>, cat: &Catalog) -> Result<()> {
        let labels = &self.labels;
        let files = &mut self.files;
        let write_label = |source: u32, agent: Option<i64>, line: &mut text::Line| {
            agent_field(labels, line, source, agent)
        };
        self.counters.flush(
            bound,
            cat,
            &self.index,
            &write_label,
            &mut self.line,
            &mut |bytes, rows| {
                files.emit(
                    TraceFile::CounterCollection,
                    Some(Table::PmcValue),
                    rows,
                    bytes,
                )
            },
        )
    }

    fn write_agents(&mut self, cat: &Catalog) -> Result<()> {
        let mut agents: Vec<&rocpd_model::Agent> = cat
            .agents
            .iter()
            .filter(|a| self.all_agents || self.seen.get(a.source as usize) == Some(&true))
            .collect();
        agents.sort_by_key(|a| (a.source, a.absolute_index.unwrap_or(a.id), a.id));
        for a in agents {
            let guid = &cat.sources[a.source as usize].guid;
            agents::agent_row(&mut self.line, guid, a);
            self.files
                .emit(TraceFile::AgentInfo, None, 0, self.line.finish())?;
        }
        Ok(())
    }

    /// The stats files, written but not committed.
    fn stats_files(&mut self) -> Result<Vec<(PathBuf, OutputFile)>> {
        let Some(s) = self.stats.take() else {
            return Ok(Vec::new());
        };
        Box::new(s.sink).finish()?;
        let views = s
            .out
            .lock()
            .map(|g| g.views.clone())
            .unwrap_or_else(|p| p.into_inner().views.clone());
        let mut out = Vec::new();
        for f in StatsFile::ALL {
            let rows = stats::rows_of(f, &views);
            if rows.is_empty() {
                continue;
            }
            let path = file_path(&self.files.dir, &self.files.prefix, f.name());
            let mut file = OutputFile::create_with_buffer(&path, FILE_BUFFER)?;
            let header = text::header_line(STATS_HEADER);
            file.writer()
                .write_all(&header)
                .map_err(|e| file.io_error(e))?;
            for r in &rows {
                stats::stats_line(&mut self.line, r);
                let w = file.writer().write_all(self.line.finish());
                w.map_err(|e| file.io_error(e))?;
            }
            out.push((path, file));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `alloc_flags` as it was, parsing a whole `serde_json::Value`: the field must not
    /// change now that it reads in place.
    fn alloc_flags_by_value(line: &mut text::Line, extdata: Option<&str>) {
        let flags = extdata
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .and_then(|v| v.get("flags").cloned());
        match flags {
            Some(serde_json::Value::Number(n)) => line.raw(&n.to_string()),
            Some(serde_json::Value::String(s)) => line.text(&s),
            _ => line.empty(),
        }
    }

    #[test]
    fn scratch_flags_read_in_place_as_before() {
        let cases = [
            None,
            Some(""),
            Some("not json"),
            Some("{}"),
            Some(r#"{"flags": 0}"#),
            Some(r#"{"size": 4, "flags": 3, "other": [1, {"a": "b"}]}"#),
            Some(r#"{"flags": -7}"#),
            Some(r#"{"flags": 18446744073709551615}"#),
            Some(r#"{"flags": 1.5e3}"#),
            Some(r#"{"flags": "ALLOC_FLAG_ALT"}"#),
            Some(r#"{"flags": "quote \" and \u00e9"}"#),
            Some(r#"{"flags": [1, 2]}"#),
            Some(r#"{"flags": null}"#),
            Some(r#"{"flags": true}"#),
            Some("[1, 2]"),
            Some("[5]"),
            Some(r#"["x"]"#),
            Some(r#"{"flags": 1, "flags": 2}"#),
            Some(r#"  {"flags": "a\"b"}  "#),
        ];
        for extdata in cases {
            let (mut now, mut before) = (text::Line::default(), text::Line::default());
            now.start();
            before.start();
            alloc_flags(&mut now, extdata);
            alloc_flags_by_value(&mut before, extdata);
            assert_eq!(now.finish(), before.finish(), "{extdata:?}");
        }
    }
}
