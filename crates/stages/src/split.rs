//! Splitting one event stream into several outputs, one per key.
//!
//! [`SplitSink`] is a [`Sink`] that routes every row to the child sink of its key, creating
//! children lazily with a factory. Each child is a complete writer of its own, so every
//! output is self-contained (it describes its processes, threads and tracks and interns its
//! own names). A row goes to the part where it *starts*: a slice crossing a time cut is kept
//! whole in the earlier part. Flows whose members fall in different outputs lose their
//! markers (see [`crate::flows`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use arrow_array::{Array, UInt32Array};
use rocpd_model::{col, Catalog, EventBatch, Result, Table};
use rocpd_pipeline::{Chunk, OutputReport, Sink};

use crate::flows::{self, GroupColumns};

/// How outputs are keyed.
#[derive(Debug, Clone)]
pub enum SplitMode {
    /// By start time: part `i` holds the rows starting in `[cuts[i-1], cuts[i])`.
    Time {
        /// The cut times, ascending; there are `cuts.len() + 1` parts.
        cuts: Vec<i64>,
    },
    /// One output per process.
    Process,
    /// One output per node (hostname).
    Node,
    /// One output per agent (kernels on it, copies to it, allocations and counters on it),
    /// plus one per node for events without an agent (API calls, markers, samples); flows
    /// between an API call and its kernels are not drawn, since they are in different files.
    Agent,
}

/// The key of one output.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SplitKey {
    /// Order of the output among all keys (part number for time splits).
    pub ordinal: usize,
    /// The label used in file names and the manifest.
    pub label: String,
}

/// Which keys one pass of a keyed split writes: the keys of `group`, and, if
/// `take_unknown`, every key not among `known` (rows whose key the catalog did not predict,
/// e.g. a process or agent it does not list), so no row is lost between passes.
#[derive(Debug, Clone)]
pub struct KeyFilter {
    /// The keys of this pass.
    pub group: HashSet<String>,
    /// Every key predicted from the catalog.
    pub known: Arc<HashSet<String>>,
    /// Whether this pass also takes unpredicted keys (exactly one pass should).
    pub take_unknown: bool,
}

impl KeyFilter {
    fn takes(&self, label: &str) -> bool {
        self.group.contains(label) || (self.take_unknown && !self.known.contains(label))
    }
}

/// Makes the child sink of a key.
pub type SinkFactory = Box<dyn FnMut(&SplitKey) -> Result<Box<dyn Sink>> + Send>;

struct Child {
    key: SplitKey,
    sink: Box<dyn Sink>,
    first: i64,
    last: i64,
}

/// Routes rows to one child sink per key.
pub struct SplitSink {
    mode: SplitMode,
    factory: SinkFactory,
    only: Option<KeyFilter>,
    catalog: Option<Arc<Catalog>>,
    process_labels: HashMap<(u32, i64), String>,
    hostnames: HashMap<(u32, i64), String>,
    open: BTreeMap<SplitKey, Child>,
    done: Vec<OutputReport>,
    completed: bool,
}

impl Drop for SplitSink {
    /// A split that does not finish removes the parts it already completed: outputs are
    /// whole or absent for the run, not only per part.
    fn drop(&mut self) {
        if !self.completed {
            for o in &self.done {
                if std::fs::remove_file(&o.path).is_err() {
                    let _ = std::fs::remove_dir_all(&o.path);
                }
                // An OTF2 archive is an anchor, a .def file and an event directory.
                if o.path.extension().is_some_and(|e| e == "otf2") {
                    let _ = std::fs::remove_file(o.path.with_extension("def"));
                    let _ = std::fs::remove_dir_all(o.path.with_extension(""));
                }
            }
        }
    }
}

/// A file-name-safe version of `s`.
fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl SplitSink {
    /// Splits by `mode`, making children with `factory`. With `only`, rows whose key the
    /// filter does not take are ignored (the caller writes them in another pass).
    pub fn new(mode: SplitMode, factory: SinkFactory, only: Option<KeyFilter>) -> Self {
        SplitSink {
            mode,
            factory,
            only,
            catalog: None,
            process_labels: HashMap::new(),
            hostnames: HashMap::new(),
            open: BTreeMap::new(),
            done: Vec::new(),
            completed: false,
        }
    }

    /// The labels of every key `mode` can produce over `catalog`, in output order (for
    /// keyed splits; time splits are numbered parts).
    pub fn keys(mode: &SplitMode, catalog: &Catalog) -> Vec<String> {
        let mut s = SplitSink::new(mode.clone(), Box::new(|_| unreachable!()), None);
        s.completed = true;
        s.index(catalog);
        let mut keys: Vec<String> = match mode {
            SplitMode::Time { cuts } => (0..=cuts.len())
                .map(|i| part_label(i, cuts.len() + 1))
                .collect(),
            SplitMode::Process => s.process_labels.values().cloned().collect(),
            SplitMode::Node => catalog
                .nodes
                .iter()
                .map(|n| s.node_label(n.source, n.id))
                .collect(),
            SplitMode::Agent => catalog
                .agents
                .iter()
                .map(|a| s.agent_label(a.source, a.nid, Some(a.id)))
                .chain(
                    catalog
                        .processes
                        .iter()
                        .map(|p| s.agent_label(p.source, p.nid, None)),
                )
                .collect(),
        };
        keys.sort();
        keys.dedup();
        keys
    }

    fn index(&mut self, c: &Catalog) {
        self.hostnames = c
            .nodes
            .iter()
            .filter_map(|n| Some(((n.source, n.id), n.hostname.clone()?)))
            .collect();
        let mut count: HashMap<i64, usize> = HashMap::new();
        for p in &c.processes {
            *count.entry(p.pid).or_default() += 1;
        }
        self.process_labels = c
            .processes
            .iter()
            .map(|p| {
                let label = if count[&p.pid] > 1 {
                    // The guid's tail: its head is a timestamp, shared by processes started
                    // together (UUIDv7).
                    let guid = &c.sources[p.source as usize].guid;
                    let tail: String = guid.chars().rev().filter(|c| *c != '-').take(12).collect();
                    let tail: String = tail.chars().rev().collect();
                    format!("pid-{}-{}", p.pid, safe(&tail))
                } else {
                    format!("pid-{}", p.pid)
                };
                ((p.source, p.pid), label)
            })
            .collect();
    }

    fn node_label(&self, source: u32, nid: i64) -> String {
        match self.hostnames.get(&(source, nid)) {
            Some(h) => format!("host-{}", safe(h)),
            None => format!("host-{nid}"),
        }
    }

    fn agent_label(&self, source: u32, nid: i64, agent: Option<i64>) -> String {
        let node = self.node_label(source, nid);
        match agent {
            Some(a) => format!("{node}.agent-{a}"),
            None => format!("{node}.no-agent"),
        }
    }

    /// The key of every row of `b`.
    fn row_keys(&self, b: &EventBatch) -> Vec<SplitKey> {
        let n = b.batch.num_rows();
        let starts = b.batch.column(col::START).as_primitive::<Int64Type>();
        let sources = b.batch.column(col::SOURCE).as_primitive::<UInt32Type>();
        let nids = b.batch.column(col::NID).as_primitive::<Int64Type>();
        let pids = b.batch.column(col::PID).as_primitive::<Int64Type>();
        let int = |a: &arrow_array::Int64Array, r: usize| a.is_valid(r).then(|| a.value(r));
        (0..n)
            .map(|r| match &self.mode {
                SplitMode::Time { cuts } => {
                    let i = cuts.partition_point(|&c| c <= starts.value(r));
                    SplitKey {
                        ordinal: i,
                        label: part_label(i, cuts.len() + 1),
                    }
                }
                SplitMode::Process => {
                    let key = (sources.value(r), int(pids, r).unwrap_or(-1));
                    SplitKey {
                        ordinal: 0,
                        label: self
                            .process_labels
                            .get(&key)
                            .cloned()
                            .unwrap_or_else(|| format!("pid-{}", key.1)),
                    }
                }
                SplitMode::Node => SplitKey {
                    ordinal: 0,
                    label: self.node_label(sources.value(r), int(nids, r).unwrap_or(-1)),
                },
                SplitMode::Agent => {
                    let column = match b.table {
                        Table::KernelDispatch | Table::MemoryAllocation | Table::PmcValue => {
                            Some("agent_id")
                        }
                        Table::MemoryCopy => Some("dst_agent_id"),
                        _ => None,
                    };
                    let agent = column.and_then(|c| {
                        int(
                            b.batch
                                .column(b.table.column_index(c))
                                .as_primitive::<Int64Type>(),
                            r,
                        )
                    });
                    SplitKey {
                        ordinal: 0,
                        label: self.agent_label(
                            sources.value(r),
                            int(nids, r).unwrap_or(-1),
                            agent,
                        ),
                    }
                }
            })
            .collect()
    }

    /// Whether the flow group of a row stays whole in its output.
    fn group_whole(&self, g: &flows::Group) -> bool {
        match &self.mode {
            SplitMode::Time { cuts } => {
                cuts.partition_point(|&c| c <= g.first_start)
                    == cuts.partition_point(|&c| c <= g.last_start)
            }
            SplitMode::Process | SplitMode::Node => true,
            // API calls have no agent: they never share an output with their kernels.
            SplitMode::Agent => false,
        }
    }

    fn finish_child(&mut self, key: &SplitKey) -> Result<()> {
        if let Some(child) = self.open.remove(key) {
            for mut r in child.sink.finish()? {
                r.key = Some(child.key.label.clone());
                r.time_range = Some([child.first, child.last]);
                self.done.push(r);
            }
        }
        Ok(())
    }
}

/// `part-003_of_016`.
pub fn part_label(i: usize, n: usize) -> String {
    let width = n.to_string().len().max(3);
    format!("part-{:0width$}_of_{:0width$}", i + 1, n)
}

impl Sink for SplitSink {
    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        self.index(catalog);
        self.catalog = Some(catalog.clone());
        Ok(())
    }

    fn write(&mut self, chunk: &Chunk) -> Result<()> {
        let mut parts: BTreeMap<SplitKey, Chunk> = BTreeMap::new();
        for b in &chunk.batches {
            let keys = self.row_keys(b);
            let groups = GroupColumns::new(b);
            let cut: Vec<bool> = (0..keys.len())
                .map(|r| groups.get(r).is_some_and(|g| !self.group_whole(&g)))
                .collect();
            let b = flows::clear(b, &cut)?;
            let mut rows: BTreeMap<&SplitKey, Vec<u32>> = BTreeMap::new();
            for (r, k) in keys.iter().enumerate() {
                if self.only.as_ref().is_none_or(|o| o.takes(&k.label)) {
                    rows.entry(k).or_default().push(r as u32);
                }
            }
            for (k, idx) in rows {
                let batch = if idx.len() == b.batch.num_rows() {
                    b.batch.clone()
                } else {
                    arrow_select::take::take_record_batch(&b.batch, &UInt32Array::from(idx))?
                };
                parts
                    .entry(k.clone())
                    .or_default()
                    .batches
                    .push(EventBatch {
                        table: b.table,
                        batch,
                    });
            }
        }
        // Time parts only move forward: parts before the first one seen are complete.
        if let (SplitMode::Time { .. }, Some(first)) = (&self.mode, parts.keys().next()) {
            let stale: Vec<SplitKey> = self
                .open
                .keys()
                .filter(|k| k.ordinal < first.ordinal)
                .cloned()
                .collect();
            for k in stale {
                self.finish_child(&k)?;
            }
        }
        for (key, part) in parts {
            if !self.open.contains_key(&key) {
                let mut sink = (self.factory)(&key)?;
                sink.begin(self.catalog.as_ref().expect("begin before write"))?;
                self.open.insert(
                    key.clone(),
                    Child {
                        key: key.clone(),
                        sink,
                        first: i64::MAX,
                        last: i64::MIN,
                    },
                );
            }
            let child = self.open.get_mut(&key).expect("just opened");
            for b in &part.batches {
                let s = b.batch.column(col::START).as_primitive::<Int64Type>();
                let e = b.batch.column(col::END).as_primitive::<Int64Type>();
                if let Some(&first) = s.values().first() {
                    child.first = child.first.min(first);
                }
                child.last = child
                    .last
                    .max(e.values().iter().copied().max().unwrap_or(i64::MIN));
            }
            child.sink.write(&part)?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<Vec<OutputReport>> {
        let keys: Vec<SplitKey> = self.open.keys().cloned().collect();
        for k in keys {
            self.finish_child(&k)?;
        }
        let mut done = std::mem::take(&mut self.done);
        self.completed = true;
        done.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(done)
    }
}
