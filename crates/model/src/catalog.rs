//! The catalog: dimension data delivered to every sink before the first event.
//!
//! Everything here is small next to the event tables (a few rows per process, agent,
//! queue or kernel symbol). Rows keep the ids of their source (OS pids and tids, agent node
//! ids, queue and stream handles, ...); ids are only unique together with the `source`
//! index, which [`CatalogIndex`] uses as part of every key.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

/// One input source: a set of tables that belong together (for RocPD, one UUID suffix of
/// one database file, i.e. one profiled process).
#[derive(Debug, Clone, Serialize)]
pub struct SourceInfo {
    /// The file it was read from.
    pub path: PathBuf,
    /// Input format (`rocpd`, ...).
    pub format: String,
    /// Global id of the source (RocPD `guid`, a UUID with dashes).
    pub guid: String,
    /// Table-name suffix (RocPD `uuid`, `_` + guid with underscores).
    pub uuid: String,
    /// Schema version found in the source.
    pub schema_version: String,
    /// For sources imported from another format (rocprofv3 CSV/JSON, Proton), the files
    /// they were imported from; `path` is then a temporary database.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub imported_from: Vec<PathBuf>,
}

impl SourceInfo {
    /// The file to name in messages: the first file it was imported from, else its own.
    pub fn shown_path(&self) -> &std::path::Path {
        self.imported_from.first().unwrap_or(&self.path)
    }
}

/// A machine.
#[derive(Debug, Clone, Serialize)]
#[allow(missing_docs)]
pub struct Node {
    pub source: u32,
    pub id: i64,
    pub hash: Option<i64>,
    pub machine_id: Option<String>,
    pub hostname: Option<String>,
    pub system_name: Option<String>,
    pub release: Option<String>,
    pub version: Option<String>,
    pub hardware_name: Option<String>,
    pub domain_name: Option<String>,
}

/// A profiled process. `id` is the row id (`rocpd_info_process.id`, what the schema's
/// `pid` references hold), `pid` the OS pid. In every other catalog record and in the
/// event tables, `pid` is the OS pid: readers resolve the references.
#[derive(Debug, Clone, Serialize)]
#[allow(missing_docs)]
pub struct Process {
    pub source: u32,
    pub id: i64,
    pub nid: i64,
    pub ppid: Option<i64>,
    pub pid: i64,
    pub init: Option<i64>,
    pub fini: Option<i64>,
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub command: Option<String>,
    pub environment: Option<String>,
    pub extdata: Option<String>,
}

impl Process {
    /// The command's first token (the program as invoked), or `pid <n>` without a command.
    pub fn program(&self) -> String {
        self.command
            .as_deref()
            .and_then(|c| c.split_whitespace().next())
            .map(str::to_string)
            .unwrap_or_else(|| format!("pid {}", self.pid))
    }

    /// The command split into tokens.
    pub fn cmdline(&self) -> Vec<String> {
        self.command
            .as_deref()
            .map(|c| c.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Base name of the program (what the main thread is called).
    pub fn program_basename(&self) -> String {
        let p = self.program();
        p.rsplit('/').next().unwrap_or(&p).to_string()
    }
}

/// A thread of a profiled process.
/// `id` is the row id (`rocpd_info_thread.id`, what the schema's `tid` references hold),
/// `tid` the OS tid and `pid` the OS pid of its process. Event tables carry OS tids.
#[derive(Debug, Clone, Serialize)]
#[allow(missing_docs)]
pub struct Thread {
    pub source: u32,
    pub id: i64,
    pub nid: i64,
    pub ppid: Option<i64>,
    pub pid: i64,
    pub tid: i64,
    pub name: Option<String>,
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub extdata: Option<String>,
}

/// A CPU or GPU agent.
#[derive(Debug, Clone, Serialize)]
#[allow(missing_docs)]
pub struct Agent {
    pub source: u32,
    pub id: i64,
    pub nid: i64,
    pub pid: Option<i64>,
    /// `CPU` or `GPU`.
    pub agent_type: String,
    pub absolute_index: Option<i64>,
    pub logical_index: Option<i64>,
    pub type_index: Option<i64>,
    pub uuid: Option<i64>,
    pub name: Option<String>,
    pub model_name: Option<String>,
    pub vendor_name: Option<String>,
    pub product_name: Option<String>,
    pub user_name: Option<String>,
    pub extdata: Option<String>,
}

/// How agents are numbered in labels (rocpd's `--agent-index-value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentIndexMode {
    /// `Agent <node id>`.
    Absolute,
    /// `Agent <logical index>` (the default).
    #[default]
    Relative,
    /// `GPU <n>` / `CPU <n>`, numbered within the type.
    TypeRelative,
}

impl AgentIndexMode {
    /// The mode named as rocpd's `--agent-index-value` takes it: `absolute`, `relative` or
    /// `type-relative` (also `type_relative`), ignoring case.
    pub fn from_name(v: &str) -> Option<AgentIndexMode> {
        match v.to_ascii_lowercase().replace('_', "-").as_str() {
            "absolute" => Some(AgentIndexMode::Absolute),
            "relative" => Some(AgentIndexMode::Relative),
            "type-relative" => Some(AgentIndexMode::TypeRelative),
            _ => None,
        }
    }
}

impl Agent {
    /// The label and index of this agent under `mode`, e.g. `("Agent", 2)` or `("GPU", 1)`.
    pub fn label(&self, mode: AgentIndexMode) -> (String, i64) {
        match mode {
            AgentIndexMode::Absolute => ("Agent".into(), self.absolute_index.unwrap_or(self.id)),
            AgentIndexMode::Relative => (
                "Agent".into(),
                self.logical_index
                    .or(self.absolute_index)
                    .unwrap_or(self.id),
            ),
            AgentIndexMode::TypeRelative => (
                self.agent_type.clone(),
                self.type_index.or(self.logical_index).unwrap_or(self.id),
            ),
        }
    }
}

/// An HSA queue or a HIP stream (same shape).
#[derive(Debug, Clone, Serialize)]
#[allow(missing_docs)]
pub struct Queue {
    pub source: u32,
    pub id: i64,
    pub nid: i64,
    pub pid: Option<i64>,
    pub name: Option<String>,
    pub extdata: Option<String>,
}

/// A HIP stream.
pub type Stream = Queue;

/// A kernel symbol.
#[derive(Debug, Clone, Serialize)]
#[allow(missing_docs)]
pub struct KernelSymbol {
    pub source: u32,
    pub id: i64,
    pub nid: i64,
    pub pid: Option<i64>,
    pub code_object_id: Option<i64>,
    /// The names and `extdata` are shared (`Arc`): a real trace holds thousands of
    /// templated kernel names of a kilobyte or more, and the reader's description, the
    /// run's catalog and its writers hold one copy between them, not one each.
    pub kernel_name: Option<Arc<str>>,
    pub display_name: Option<Arc<str>>,
    pub kernel_object: Option<i64>,
    pub kernarg_segment_size: Option<i64>,
    pub kernarg_segment_alignment: Option<i64>,
    pub group_segment_size: Option<i64>,
    pub private_segment_size: Option<i64>,
    pub sgpr_count: Option<i64>,
    pub arch_vgpr_count: Option<i64>,
    pub accum_vgpr_count: Option<i64>,
    pub extdata: Option<Arc<str>>,
}

/// A code object loaded on an agent.
#[derive(Debug, Clone, Serialize)]
#[allow(missing_docs)]
pub struct CodeObject {
    pub source: u32,
    pub id: i64,
    pub nid: i64,
    pub pid: Option<i64>,
    pub agent_id: Option<i64>,
    pub uri: Option<String>,
    pub load_base: Option<i64>,
    pub load_size: Option<i64>,
    pub load_delta: Option<i64>,
    pub storage_type: Option<String>,
    pub extdata: Option<String>,
}

/// A performance-counter definition.
#[derive(Debug, Clone, Serialize)]
#[allow(missing_docs)]
pub struct Pmc {
    pub source: u32,
    pub id: i64,
    pub nid: i64,
    pub pid: Option<i64>,
    pub agent_id: Option<i64>,
    pub target_arch: Option<String>,
    pub event_code: Option<i64>,
    pub instance_id: Option<i64>,
    pub name: String,
    pub symbol: Option<String>,
    pub description: Option<String>,
    pub long_description: Option<String>,
    pub component: Option<String>,
    pub units: Option<String>,
    pub value_type: Option<String>,
    pub block: Option<String>,
    pub expression: Option<String>,
    pub is_constant: Option<i64>,
    pub is_derived: Option<i64>,
    pub extdata: Option<String>,
}

/// All dimension data of a run, over all inputs.
#[derive(Debug, Clone, Default, Serialize)]
#[allow(missing_docs)]
pub struct Catalog {
    pub sources: Vec<SourceInfo>,
    pub nodes: Vec<Node>,
    pub processes: Vec<Process>,
    pub threads: Vec<Thread>,
    pub agents: Vec<Agent>,
    pub queues: Vec<Queue>,
    pub streams: Vec<Stream>,
    pub kernel_symbols: Vec<KernelSymbol>,
    pub code_objects: Vec<CodeObject>,
    pub pmcs: Vec<Pmc>,
}

impl Catalog {
    /// Appends `other`, whose rows are already numbered with their final source indexes.
    pub fn extend(&mut self, other: Catalog) {
        self.sources.extend(other.sources);
        self.nodes.extend(other.nodes);
        self.processes.extend(other.processes);
        self.threads.extend(other.threads);
        self.agents.extend(other.agents);
        self.queues.extend(other.queues);
        self.streams.extend(other.streams);
        self.kernel_symbols.extend(other.kernel_symbols);
        self.code_objects.extend(other.code_objects);
        self.pmcs.extend(other.pmcs);
    }

    /// Earliest process start and latest process end over all processes, if known.
    pub fn time_span(&self) -> Option<(i64, i64)> {
        let lo = self
            .processes
            .iter()
            .filter_map(|p| p.start.or(p.init))
            .min()?;
        let hi = self
            .processes
            .iter()
            .filter_map(|p| p.end.or(p.fini))
            .max()?;
        Some((lo, hi.max(lo)))
    }
}

/// Lookups into a [`Catalog`] by `(source, id)`.
#[derive(Debug, Default)]
pub struct CatalogIndex {
    nodes: HashMap<(u32, i64), usize>,
    processes: HashMap<(u32, i64), usize>,
    threads: HashMap<(u32, i64), usize>,
    agents: HashMap<(u32, i64), usize>,
    queues: HashMap<(u32, i64), usize>,
    streams: HashMap<(u32, i64), usize>,
    kernel_symbols: HashMap<(u32, i64), usize>,
    pmcs: HashMap<(u32, i64), usize>,
}

fn index_of<T>(rows: &[T], key: impl Fn(&T) -> (u32, i64)) -> HashMap<(u32, i64), usize> {
    rows.iter().enumerate().map(|(i, r)| (key(r), i)).collect()
}

impl CatalogIndex {
    /// Builds the lookups. Processes are keyed by pid, threads by tid.
    pub fn new(c: &Catalog) -> Self {
        CatalogIndex {
            nodes: index_of(&c.nodes, |r| (r.source, r.id)),
            processes: index_of(&c.processes, |r| (r.source, r.pid)),
            threads: index_of(&c.threads, |r| (r.source, r.tid)),
            agents: index_of(&c.agents, |r| (r.source, r.id)),
            queues: index_of(&c.queues, |r| (r.source, r.id)),
            streams: index_of(&c.streams, |r| (r.source, r.id)),
            kernel_symbols: index_of(&c.kernel_symbols, |r| (r.source, r.id)),
            pmcs: index_of(&c.pmcs, |r| (r.source, r.id)),
        }
    }

    /// Node row index.
    pub fn node(&self, source: u32, id: i64) -> Option<usize> {
        self.nodes.get(&(source, id)).copied()
    }
    /// Process row index by pid.
    pub fn process(&self, source: u32, pid: i64) -> Option<usize> {
        self.processes.get(&(source, pid)).copied()
    }
    /// Thread row index by tid.
    pub fn thread(&self, source: u32, tid: i64) -> Option<usize> {
        self.threads.get(&(source, tid)).copied()
    }
    /// Agent row index.
    pub fn agent(&self, source: u32, id: i64) -> Option<usize> {
        self.agents.get(&(source, id)).copied()
    }
    /// Queue row index.
    pub fn queue(&self, source: u32, id: i64) -> Option<usize> {
        self.queues.get(&(source, id)).copied()
    }
    /// Stream row index.
    pub fn stream(&self, source: u32, id: i64) -> Option<usize> {
        self.streams.get(&(source, id)).copied()
    }
    /// Kernel symbol row index.
    pub fn kernel_symbol(&self, source: u32, id: i64) -> Option<usize> {
        self.kernel_symbols.get(&(source, id)).copied()
    }
    /// PMC definition row index.
    pub fn pmc(&self, source: u32, id: i64) -> Option<usize> {
        self.pmcs.get(&(source, id)).copied()
    }
}
