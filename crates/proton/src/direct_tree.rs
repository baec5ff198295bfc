//! `.hatchet` / `.hatchet_msgpack` trees read directly as a [`Source`], with no temporary
//! database.
//!
//! A tree is laid out by the importer's own code (`crate::tree::lay_out`), so widths,
//! ids, extdata, notes and errors cannot drift apart:
//!
//! 1. **Describing** (when the source is opened): the layout runs once with its nodes
//!    counted and dropped, which gives the number of regions, their span, the devices
//!    (agents) and the notes, and finds every error the file has.
//! 2. **Streaming** (when the stream is opened, on a decode thread): the layout runs
//!    again and its nodes go into Arrow batches through a [`RunSorter`]. Nodes come as
//!    they end (children before their parent), numbered as they begin; the sorter puts
//!    them in (start, end descending, id) order, which is the RocPD reader's.
//!
//! Describing reads the file twice (D76); a stream reads it once more with the facts the
//! first of those learned, so a conversion parses it three times. A tree of 0.3M nodes
//! parses in well under a second; the database it replaces took seconds to write and 106
//! MiB of temporary disk.

use std::path::{Path, PathBuf};

use rocpd_model::{Agent, Catalog, Process, Result, Table, Thread};
use rocpd_pipeline::{
    BatchStream, FileStamps, PreparedStream, SortOptions, Source, StageDrop, StreamOptions,
};

use crate::direct::{base_catalog, RegionRow, RegionRows};
use crate::tree::{self, LaidOut, NodeOut, TREE_CATEGORY, TREE_THREAD_NAME};
use crate::{file_name_of, guid_of, node_hash, ProtonKind};

/// A Proton tree file opened as a source: described, ready to stream. A clone is the same
/// source opened again without reading the file.
#[derive(Clone)]
pub struct TreeSource {
    path: PathBuf,
    kind: ProtonKind,
    file_name: String,
    guid: String,
    nid: i64,
    /// The pid (and tid) of its process ([`tree::tree_pid`]).
    pid: i64,
    laid: tree::Laid,
    sort: SortOptions,
    /// The file as it was before the describing read; the stream checks it (D163).
    stamps: FileStamps,
}

/// The describing pass's output: nothing kept per node.
struct Drop;

impl NodeOut for Drop {
    fn put_node(&mut self, _node: LaidOut<'_>) -> Result<()> {
        Ok(())
    }
}

impl TreeSource {
    /// Lays `path` out once to describe it; a file that is not a valid tree is refused
    /// here with the importer's message (file and byte offset, or node).
    pub fn open(path: &Path, kind: ProtonKind) -> Result<Self> {
        let stamps = FileStamps::of([path])?;
        let guid = guid_of(path, kind)?;
        let file_name = file_name_of(path);
        // The importer numbers nodes from 1: its database is new.
        let laid = tree::lay_out(path, &file_name, kind, &mut Drop, 1, None)
            .map_err(|e| stamps.explain(e))?;
        let pid = tree::tree_pid(&file_name, &guid);
        Ok(TreeSource {
            path: path.to_path_buf(),
            kind,
            file_name,
            pid,
            guid,
            nid: crate::node_id(node_hash()),
            laid,
            sort: SortOptions::default(),
            stamps,
        })
    }

    /// The kind of tree file it reads.
    pub fn kind(&self) -> ProtonKind {
        self.kind
    }

    /// The same source with its stream sorted under `options`.
    pub fn with_sort_options(mut self, options: SortOptions) -> Self {
        self.sort = options;
        self
    }

    /// What the layout made up or left out, as the importer's notes say it.
    pub fn notes(&self) -> &[String] {
        &self.laid.notes
    }

    /// The guid of the input (the importer's).
    pub fn guid(&self) -> &str {
        &self.guid
    }
}

impl Source for TreeSource {
    fn path(&self) -> &Path {
        &self.path
    }

    fn source_count(&self) -> usize {
        1
    }

    fn catalog(&self, first_source: u32) -> Result<Catalog> {
        let (source, nid, pid) = (first_source, self.nid, self.pid);
        let mut c = base_catalog(&self.path, &self.guid, source);
        c.processes.push(Process {
            source,
            id: pid,
            nid,
            ppid: None,
            pid,
            init: None,
            fini: None,
            start: self.laid.span.map(|s| s.0),
            end: self.laid.span.map(|s| s.1),
            command: Some(self.file_name.clone()),
            environment: Some("{}".into()),
            extdata: Some(self.laid.process_extdata.clone()),
        });
        c.threads.push(Thread {
            source,
            id: pid,
            nid,
            ppid: None,
            pid,
            tid: pid,
            name: Some(TREE_THREAD_NAME.into()),
            start: None,
            end: None,
            extdata: Some("{}".into()),
        });
        for d in &self.laid.devices {
            c.agents.push(Agent {
                source,
                id: d.agent_id,
                nid,
                pid: Some(pid),
                agent_type: "GPU".into(),
                absolute_index: d.index,
                logical_index: d.index,
                type_index: Some(d.type_index),
                uuid: None,
                name: Some(d.arch.clone()),
                model_name: Some(d.arch.clone()),
                vendor_name: Some(d.vendor.clone()),
                product_name: Some(d.arch.clone()),
                user_name: Some(d.arch.clone()),
                extdata: Some(d.extdata.clone()),
            });
        }
        Ok(c)
    }

    fn event_span(&self) -> Result<Option<(i64, i64)>> {
        Ok(self.laid.span)
    }

    fn find_marker(&self, _text: &str) -> Result<Vec<(i64, i64)>> {
        // Markers are ROCTx ranges; a tree has none.
        Ok(Vec::new())
    }

    fn count_rows(&self) -> Result<Vec<(Table, u64)>> {
        Ok(vec![(Table::Region, self.laid.written)])
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
    source: &'a TreeSource,
    first_source: u32,
    options: StreamOptions,
}

/// The streaming pass's output: every node as a region row.
struct Nodes {
    pid: i64,
    rows: RegionRows,
}

impl NodeOut for Nodes {
    fn put_node(&mut self, n: LaidOut<'_>) -> Result<()> {
        self.rows.push(RegionRow {
            id: n.id,
            pid: self.pid,
            tid: self.pid,
            start: n.start,
            end: n.end,
            category: TREE_CATEGORY,
            name: n.name,
            extdata: n.extdata,
        })
    }
}

impl PreparedStream for Prepared<'_> {
    fn table(&self) -> Table {
        Table::Region
    }

    fn open(&mut self) -> Result<Box<dyn BatchStream + '_>> {
        let s = self.source;
        let mut nodes = Nodes {
            pid: s.pid,
            rows: RegionRows::new(self.first_source, s.nid, &self.options, &s.sort),
        };
        // The facts of the describing pass: one parse of the file fewer.
        let facts = Some(s.laid.facts);
        s.stamps
            .around(|| tree::lay_out(&s.path, &s.file_name, s.kind, &mut nodes, 1, facts))?;
        nodes.rows.finish()
    }
}
