//! `.chrome_trace` files read directly as a [`Source`], with no temporary database.
//!
//! The file is parsed twice by the same visitor that imports it (`crate::trace`), so
//! every event, error and note is the importer's:
//!
//! 1. **Describing** (when the source is opened): the catalog (node, processes, threads
//!    and their names, which `ph: "M"` events may give after the events they name), the
//!    number of regions, the event span, and what the end of the file decides about events
//!    read before it: a document's `baseTimeNanoseconds` that follows its events moves
//!    them (a shift per range of event ids), and a second document gives the first one's
//!    events `"document": 0`. Nothing per event is kept.
//! 2. **Streaming** (when the stream is opened, on a decode thread): the regions again,
//!    with those shifts applied, built into Arrow batches of the columns the run reads and
//!    sorted by time through a [`RunSorter`] (a chrome trace is in the order the profiler
//!    flushed it, not in time order).
//!
//! The rows are those the RocPD reader gives for the imported database: the same ids
//! (event id = region id = stack id = correlation id, counted from 1 in file order), node,
//! processes, threads, categories, names, messages and extdata, with one difference: the
//! `"document": 0` field sits among the keys in order instead of last (SQLite's
//! `json_set` appends it). `formats/proton/README.md` says what each column holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use rocpd_model::{
    BatchBuilder, Catalog, ColumnBuilder, Error, Node, Process, Projection, Result, SourceInfo,
    Table, Thread,
};
use rocpd_pipeline::{
    BatchStream, FileStamps, PreparedStream, RunSorter, SortOptions, Source, StageDrop,
    StreamOptions,
};
use serde_json::{Map, Value};

use crate::trace::{self, Region, RegionOut, TraceRead};
use crate::{file_name_of, guid_of, node_hash, ProtonKind};

/// What the describing pass learned that the streaming pass applies.
#[derive(Debug, Default, Clone)]
struct Plan {
    /// Regions read.
    regions: u64,
    /// `(from, to, delta)`: the regions with event ids `from..to` move by `delta` ns.
    /// A document's shifts all start at its first region and come in the order of their
    /// ends; two with the same ends are one (their deltas added).
    shifts: Vec<(i64, i64, i128)>,
    /// For each shift, the sum of its delta and those of the later shifts of its
    /// document: what a region in `shifts[k - 1].1..shifts[k].1` moves by.
    moves: Vec<i128>,
    /// The regions with event ids below this get `"document": 0`.
    document_zero_below: Option<i64>,
    /// Earliest start and latest end per pid, after the shifts.
    pid_spans: BTreeMap<i64, (i64, i64)>,
}

impl Plan {
    /// Fills [`Plan::moves`] from the shifts, from the last back. A document's sums stay
    /// far inside `i128`: each delta is a difference of two `i64` bases.
    fn add_up_moves(&mut self) {
        let mut moves = vec![0i128; self.shifts.len()];
        let mut later: Option<(i64, i128)> = None;
        for (k, &(from, _, delta)) in self.shifts.iter().enumerate().rev() {
            let rest = match later {
                Some((document, sum)) if document == from => sum,
                _ => 0,
            };
            moves[k] = delta.saturating_add(rest);
            later = Some((from, moves[k]));
        }
        self.moves = moves;
    }
}

/// The describing pass: counts and time extremes, nothing per event.
#[derive(Default)]
struct Describe {
    plan: Plan,
    /// Per pid, the earliest start and latest end of the current document's regions
    /// (still movable by a late base).
    document: BTreeMap<i64, (i64, i64)>,
}

impl Describe {
    fn close_document(&mut self) {
        for (pid, (lo, hi)) in std::mem::take(&mut self.document) {
            let e = self.plan.pid_spans.entry(pid).or_insert((lo, hi));
            *e = (e.0.min(lo), e.1.max(hi));
        }
    }
}

impl RegionOut for Describe {
    fn put_region(&mut self, r: &Region<'_>, _ext: Map<String, Value>) -> Result<()> {
        self.plan.regions += 1;
        let e = self.document.entry(r.pid).or_insert((r.start, r.end));
        *e = (e.0.min(r.start), e.1.max(r.end));
        Ok(())
    }

    fn next_event_id(&self) -> i64 {
        // Regions are numbered from 1 in file order.
        self.plan.regions as i64 + 1
    }

    fn shift_regions(&mut self, from: i64, to: i64, delta: i64) -> Result<bool> {
        // Only the current document's regions are ever moved, all of them so far.
        let fits = self
            .document
            .values()
            .all(|(lo, hi)| lo.checked_add(delta).is_some() && hi.checked_add(delta).is_some());
        if !fits {
            return Ok(false);
        }
        for (lo, hi) in self.document.values_mut() {
            *lo += delta;
            *hi += delta;
        }
        // Keys given again with no event between them make one shift: a file of many
        // late keys costs each region one shift of its document, not one per key.
        match self.plan.shifts.last_mut() {
            Some(last) if (last.0, last.1) == (from, to) => last.2 += i128::from(delta),
            _ => self.plan.shifts.push((from, to, i128::from(delta))),
        }
        Ok(true)
    }

    fn mark_document_zero(&mut self, end: i64) -> Result<()> {
        self.plan.document_zero_below = Some(end);
        Ok(())
    }

    fn begin_document(&mut self) {
        self.close_document();
    }
}

/// A `.chrome_trace` file opened as a source: described, ready to stream. A clone is the
/// same source opened again without reading the file (what the description holds is
/// bounded by the processes, threads and documents, not by the events).
#[derive(Clone)]
pub struct ChromeTraceSource {
    path: PathBuf,
    file_name: String,
    guid: String,
    nid: i64,
    plan: Plan,
    read: TraceRead,
    sort: SortOptions,
    /// The file as it was before the describing read; the stream checks it (D163).
    stamps: FileStamps,
}

impl ChromeTraceSource {
    /// Reads `path` once to describe it; a file that is not a valid chrome trace is
    /// refused here with the importer's message (file, document, event or byte offset).
    pub fn open(path: &Path) -> Result<Self> {
        let stamps = FileStamps::of([path])?;
        let guid = guid_of(path, ProtonKind::ChromeTrace)?;
        let file_name = file_name_of(path);
        let mut describe = Describe::default();
        let read = trace::read(path, &file_name, &mut describe).map_err(|e| stamps.explain(e))?;
        describe.close_document();
        describe.plan.add_up_moves();
        Ok(ChromeTraceSource {
            path: path.to_path_buf(),
            file_name,
            guid,
            nid: crate::node_id(node_hash()),
            plan: describe.plan,
            read,
            sort: SortOptions::default(),
            stamps,
        })
    }

    /// The same source with its streams sorted under `options` (memory budget, where
    /// run files go).
    pub fn with_sort_options(mut self, options: SortOptions) -> Self {
        self.sort = options;
        self
    }

    /// What the reading left out or made up, as the importer's notes say it.
    pub fn notes(&self) -> &[String] {
        &self.read.notes
    }

    /// The guid of the input (the importer's, so a file read both ways is one process).
    pub fn guid(&self) -> &str {
        &self.guid
    }
}

impl Source for ChromeTraceSource {
    fn path(&self) -> &Path {
        &self.path
    }

    fn source_count(&self) -> usize {
        1
    }

    fn catalog(&self, first_source: u32) -> Result<Catalog> {
        let source = first_source;
        let nid = self.nid;
        let mut c = base_catalog(&self.path, &self.guid, source);
        let extdata = trace::process_extdata(&self.file_name);
        for (pid, name) in &self.read.processes {
            let span = self.plan.pid_spans.get(pid);
            c.processes.push(Process {
                source,
                id: *pid,
                nid,
                ppid: None,
                pid: *pid,
                init: None,
                fini: None,
                start: span.map(|s| s.0),
                end: span.map(|s| s.1),
                command: Some(name.clone()),
                environment: Some("{}".into()),
                extdata: Some(extdata.clone()),
            });
        }
        for (pid, tid, name) in &self.read.threads {
            c.threads.push(Thread {
                source,
                id: *tid,
                nid,
                ppid: None,
                pid: *pid,
                tid: *tid,
                name: Some(name.clone()),
                start: None,
                end: None,
                extdata: Some("{}".into()),
            });
        }
        Ok(c)
    }

    fn event_span(&self) -> Result<Option<(i64, i64)>> {
        let spans = self.plan.pid_spans.values();
        Ok(spans.fold(None, |acc, &(lo, hi)| {
            Some(acc.map_or((lo, hi), |(a, b): (i64, i64)| (a.min(lo), b.max(hi))))
        }))
    }

    fn find_marker(&self, _text: &str) -> Result<Vec<(i64, i64)>> {
        // Markers are ROCTx ranges (`MARKER_*` categories); a chrome trace has none.
        Ok(Vec::new())
    }

    fn count_rows(&self) -> Result<Vec<(Table, u64)>> {
        Ok(vec![(Table::Region, self.plan.regions)])
    }

    fn dropped(&self) -> Result<Vec<StageDrop>> {
        Ok(Vec::new())
    }

    fn stream_count(&self) -> usize {
        1
    }

    fn prepare(
        &self,
        first_source: u32,
        options: &StreamOptions,
    ) -> Result<Vec<Box<dyn PreparedStream + '_>>> {
        if !options.wants(Table::Region) {
            return Ok(Vec::new());
        }
        Ok(vec![Box::new(Prepared {
            source: self,
            first_source,
            options: options.clone(),
        })])
    }
}

struct Prepared<'a> {
    source: &'a ChromeTraceSource,
    first_source: u32,
    options: StreamOptions,
}

impl PreparedStream for Prepared<'_> {
    fn table(&self) -> Table {
        Table::Region
    }

    fn open(&mut self) -> Result<Box<dyn BatchStream + '_>> {
        let s = self.source;
        let mut rows = Rows {
            next: 1,
            shift_from: 0,
            plan: &s.plan,
            rows: RegionRows::new(self.first_source, s.nid, &self.options, &s.sort),
            path: &s.path,
        };
        s.stamps
            .around(|| trace::read(&s.path, &s.file_name, &mut rows))?;
        rows.rows.finish()
    }
}

/// The source row and the synthetic node every Proton input is on.
pub(crate) fn base_catalog(path: &Path, guid: &str, source: u32) -> Catalog {
    let hash = node_hash();
    let mut c = Catalog::default();
    c.sources.push(SourceInfo {
        path: path.to_path_buf(),
        format: "proton".into(),
        guid: guid.to_string(),
        uuid: rocpd_schema::uuid_suffix(guid),
        schema_version: "3".into(),
        imported_from: Vec::new(),
    });
    c.nodes.push(Node {
        source,
        id: crate::node_id(hash),
        hash: Some(hash),
        machine_id: Some("unknown".into()),
        hostname: Some("unknown".into()),
        system_name: None,
        release: None,
        version: None,
        hardware_name: None,
        domain_name: None,
    });
    c
}

/// What a column of a region row is filled with.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fill {
    Source,
    /// The event id (also the region id, stack id and correlation id).
    EventId,
    Nid,
    Pid,
    Tid,
    Start,
    End,
    Zero,
    Category,
    Name,
    Message,
    EventExtdata,
    EmptyObject,
    Null,
}

/// The fill of every column of `table`, given what the run reads.
fn fills(table: Table, projection: &Projection) -> Vec<Fill> {
    table
        .columns()
        .iter()
        .map(|c| {
            let fill = match c.name {
                "source" => Fill::Source,
                "id" | "event_id" | "stack_id" | "correlation_id" => Fill::EventId,
                "nid" => Fill::Nid,
                "pid" => Fill::Pid,
                "tid" => Fill::Tid,
                "start" => Fill::Start,
                "end" => Fill::End,
                // No stack parent; no kernel or copy shares a region's stack id.
                "parent_stack_id" | "launched" => Fill::Zero,
                "category" => Fill::Category,
                "name" => Fill::Name,
                "message" => Fill::Message,
                "event_extdata" => Fill::EventExtdata,
                // The schema's default for JSON columns.
                "extdata" | "call_stack" | "line_info" => Fill::EmptyObject,
                _ => Fill::Null,
            };
            if c.nullable && !projection.fills_in(table, c.name) {
                Fill::Null
            } else {
                fill
            }
        })
        .collect()
}

/// Region rows of one direct source, built into batches of the columns a run reads and
/// pushed through a sorter (neither a chrome trace nor a tree is in time order).
pub(crate) struct RegionRows {
    source: u32,
    nid: i64,
    fills: Vec<Fill>,
    wants_message: bool,
    builder: BatchBuilder,
    sorter: RunSorter,
}

/// One region as the RocPD reader gives it from an imported Proton file.
pub(crate) struct RegionRow<'a> {
    /// Event id, also the region id, stack id and correlation id.
    pub id: i64,
    pub pid: i64,
    pub tid: i64,
    pub start: i64,
    pub end: i64,
    pub category: &'a str,
    pub name: &'a str,
    /// The event's extdata.
    pub extdata: Map<String, Value>,
}

impl RegionRows {
    pub(crate) fn new(source: u32, nid: i64, options: &StreamOptions, sort: &SortOptions) -> Self {
        let table = Table::Region;
        let mut sort = sort.clone();
        sort.batch_rows = options.batch_rows;
        RegionRows {
            source,
            nid,
            fills: fills(table, &options.projection),
            wants_message: options.projection.fills_in(table, "message"),
            builder: BatchBuilder::new(table, options.batch_rows.max(1)),
            sorter: RunSorter::new(table, sort),
        }
    }

    pub(crate) fn push(&mut self, r: RegionRow<'_>) -> Result<()> {
        let RegionRow { mut extdata, .. } = r;
        let message = if self.wants_message {
            message_of(&extdata)
        } else {
            None
        };
        for (i, fill) in self.fills.iter().enumerate() {
            let b = self.builder.column(i);
            match (fill, b) {
                (Fill::Source, ColumnBuilder::U32(x)) => x.append_value(self.source),
                (Fill::EventId, ColumnBuilder::I64(x)) => x.append_value(r.id),
                (Fill::Nid, ColumnBuilder::I64(x)) => x.append_value(self.nid),
                (Fill::Pid, ColumnBuilder::I64(x)) => x.append_value(r.pid),
                (Fill::Tid, ColumnBuilder::I64(x)) => x.append_value(r.tid),
                (Fill::Start, ColumnBuilder::I64(x)) => x.append_value(r.start),
                (Fill::End, ColumnBuilder::I64(x)) => x.append_value(r.end),
                (Fill::Zero, ColumnBuilder::I64(x)) => x.append_value(0),
                (Fill::Category, ColumnBuilder::Str(x)) => x.append_value(r.category),
                (Fill::Name, ColumnBuilder::Str(x)) => x.append_value(r.name),
                (Fill::Message, ColumnBuilder::Str(x)) => x.append_option(message.as_deref()),
                (Fill::EventExtdata, ColumnBuilder::Str(x)) => {
                    x.append_value(Value::Object(std::mem::take(&mut extdata)).to_string())
                }
                (Fill::EmptyObject, ColumnBuilder::Str(x)) => x.append_value("{}"),
                (_, other) => other.push_null(),
            }
        }
        self.builder.end_row();
        if self.builder.is_full() {
            let batch: RecordBatch = self.builder.finish()?;
            self.sorter.push(batch)?;
        }
        Ok(())
    }

    /// The rows pushed, in time order.
    pub(crate) fn finish(mut self) -> Result<Box<dyn BatchStream>> {
        if !self.builder.is_empty() {
            let b = self.builder.finish()?;
            self.sorter.push(b)?;
        }
        Ok(Box::new(self.sorter.finish()?))
    }
}

/// The streaming pass of a chrome trace: regions, moved by the plan, into rows.
struct Rows<'a> {
    next: i64,
    plan: &'a Plan,
    /// The first shift that does not end before the region being read.
    shift_from: usize,
    rows: RegionRows,
    path: &'a Path,
}

/// `message` as SQLite's `json_extract(extdata, '$.message')` gives it as text.
fn message_of(ext: &Map<String, Value>) -> Option<String> {
    rocpd_model::json_extract_text(ext.get("message")?)
}

impl RegionOut for Rows<'_> {
    fn put_region(&mut self, r: &Region<'_>, mut ext: Map<String, Value>) -> Result<()> {
        let id = self.next;
        self.next += 1;
        // Shifts are in id order and end in order (a document's come after the previous
        // document's), so those ending at or before this region are passed for good: the
        // cost per region is the shifts of its own document, not of the file.
        let shifts = &self.plan.shifts;
        while shifts.get(self.shift_from).is_some_and(|s| s.1 <= id) {
            self.shift_from += 1;
        }
        // The shifts still ahead of this region that start at or before it are the rest
        // of its document's: their sum was added up once (`Plan::moves`).
        let delta = match shifts.get(self.shift_from) {
            Some(s) if s.0 <= id => self.plan.moves[self.shift_from],
            _ => 0,
        };
        let moved = |t: i64| {
            i64::try_from(i128::from(t) + delta).map_err(|_| {
                Error::input(
                    self.path,
                    format!("event {id}"),
                    "a late baseTimeNanoseconds moves this event out of the signed 64-bit range",
                )
            })
        };
        let (start, end) = (moved(r.start)?, moved(r.end)?);
        if self.plan.document_zero_below.is_some_and(|e| id < e) {
            ext.insert("document".into(), 0.into());
        }
        self.rows.push(RegionRow {
            id,
            pid: r.pid,
            tid: r.tid,
            start,
            end,
            category: r.category,
            name: r.name,
            extdata: ext,
        })
    }

    fn next_event_id(&self) -> i64 {
        self.next
    }

    fn shift_regions(&mut self, _from: i64, _to: i64, _delta: i64) -> Result<bool> {
        // Applied to each region as it is read, from the plan.
        Ok(true)
    }

    fn mark_document_zero(&mut self, _end: i64) -> Result<()> {
        Ok(())
    }
}
