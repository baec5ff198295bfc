//! Splitting one event stream into several outputs, one per key.
//!
//! [`SplitSink`] is a [`Sink`] that routes every row to the child sink of its key, creating
//! children lazily with a factory. Each child is a complete writer of its own, so every
//! output is self-contained (it describes its processes, threads and tracks and interns its
//! own names). A row goes to the part where it *starts*: a slice crossing a time cut is kept
//! whole in the earlier part. Flows whose members fall in different outputs lose their
//! markers (see [`crate::flows`]).
//!
//! Rows are routed by key number, not by label: every key gets a number when it is first
//! met (the parts of a time split, and the processes, nodes and agents of the catalog, at
//! `begin`), and each (source, pid), (source, node) or (source, node, agent) remembers
//! its key's number, so routing a row allocates nothing.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use arrow_array::{Array, UInt32Array};
use rocpd_model::hash::FastMap;
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
    /// The part number of a time split; 0 for the keys of a process, node or agent
    /// split, which their labels tell apart (keys order by ordinal, then label).
    pub ordinal: usize,
    /// The label used in file names and the manifest, unique among the keys of a split.
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

/// The parts of a keyed split's earlier passes that commit into shared datasets, sealed
/// and waiting: a split in several passes (more keys than `--max-open`) commits them with
/// the last pass's, so that a pass that fails leaves every dataset as it was, as a split
/// in one pass does. Dropped, they commit nothing. One per output format, shared by that
/// format's split of every pass.
#[derive(Clone, Default)]
pub struct DeferredCommits {
    parts: std::rc::Rc<std::cell::RefCell<Vec<Child>>>,
    /// Whether the split holding this commits (the last pass) or only adds to it.
    last: bool,
}

impl DeferredCommits {
    /// Waiting parts for the splits of several passes.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same parts, for the split of a pass: the last pass's commits them all.
    pub fn for_pass(&self, last: bool) -> Self {
        DeferredCommits {
            parts: self.parts.clone(),
            last,
        }
    }

    /// Parts waiting now.
    pub fn waiting(&self) -> usize {
        self.parts.borrow().len()
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

/// A key met so far, and whether this pass writes its rows.
struct KeySlot {
    key: SplitKey,
    takes: bool,
}

/// Routes rows to one child sink per key.
pub struct SplitSink {
    mode: SplitMode,
    factory: SinkFactory,
    only: Option<KeyFilter>,
    catalog: Option<Arc<Catalog>>,
    process_labels: FastMap<(u32, i64), String>,
    /// The label of each (source, node id) with a hostname.
    hostnames: FastMap<(u32, i64), String>,
    /// Every key met so far, by number (for a time split, number = part).
    slots: Vec<KeySlot>,
    by_label: FastMap<String, usize>,
    by_process: FastMap<(u32, i64), usize>,
    by_node: FastMap<(u32, i64), usize>,
    by_agent: FastMap<(u32, i64, Option<i64>), usize>,
    /// The key number of every row of the batch being routed.
    row_keys: Vec<usize>,
    /// Per key number: rows of the batch being routed, then where its next row goes in
    /// `grouped`; 0 between batches.
    key_rows: Vec<u32>,
    /// The taken rows of the batch being routed, grouped by key.
    grouped: Vec<u32>,
    /// (key number, start in `grouped`, rows) of each key the batch touches, in key order.
    spans: Vec<(usize, u32, u32)>,
    /// Whether each row of the batch being routed loses its flow (its group is cut).
    row_cut: Vec<bool>,
    open: BTreeMap<SplitKey, Child>,
    /// Children done with their rows that commit into a shared dataset: sealed, and
    /// committed only when the split finishes (see [`Sink::seal`]).
    sealed: Vec<Child>,
    /// For a pass of a keyed split in several: where sealed parts wait for the last.
    deferred: Option<DeferredCommits>,
    done: Vec<OutputReport>,
    completed: bool,
}

impl Drop for SplitSink {
    /// A split that does not finish removes the parts it already completed: outputs are
    /// whole or absent for the run, not only per part. Parts appended to shared datasets
    /// were sealed, not committed: dropped, they commit nothing.
    fn drop(&mut self) {
        if !self.completed {
            for o in &self.done {
                rocpd_pipeline::remove_output(o);
            }
        }
    }
}

/// A file-name-safe version of `s` (dots kept: host names).
fn safe(s: &str) -> String {
    rocpd_model::naming::file_safe(s, true)
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
            process_labels: FastMap::default(),
            hostnames: FastMap::default(),
            slots: Vec::new(),
            by_label: FastMap::default(),
            by_process: FastMap::default(),
            by_node: FastMap::default(),
            by_agent: FastMap::default(),
            row_keys: Vec::new(),
            row_cut: Vec::new(),
            key_rows: Vec::new(),
            grouped: Vec::new(),
            spans: Vec::new(),
            open: BTreeMap::new(),
            sealed: Vec::new(),
            deferred: None,
            done: Vec::new(),
            completed: false,
        }
    }

    /// Makes this split one pass of several: its parts that commit into shared datasets
    /// wait in `deferred` unless it is the last pass's, which commits them all.
    pub fn with_deferred_commits(mut self, deferred: DeferredCommits) -> Self {
        self.deferred = Some(deferred);
        self
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
        // Ranks on one host share its part. A name with characters a file name cannot
        // hold also gets a hash of the name (`gpu node` is `host-gpu_node-<hash>`), so it
        // never shares a part with another host (`gpu_node`), whichever hosts a run
        // holds: appends of one rank per run land where the others do.
        let label = |h: &str| {
            let s = safe(h);
            if s != h {
                let hash = rocpd_model::hash::fnv1a64(h.as_bytes(), rocpd_model::hash::FNV_OFFSET);
                format!("host-{s}-{:08x}", hash as u32)
            } else {
                format!("host-{s}")
            }
        };
        self.hostnames = c
            .nodes
            .iter()
            .filter_map(|n| Some(((n.source, n.id), label(n.hostname.as_deref()?))))
            .collect();
        let mut count: FastMap<i64, usize> = FastMap::default();
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
            Some(label) => label.clone(),
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

    /// The number of the key labelled `label`, made on first use.
    fn slot(&mut self, ordinal: usize, label: String) -> usize {
        if let Some(&k) = self.by_label.get(&label) {
            return k;
        }
        let takes = self.only.as_ref().is_none_or(|o| o.takes(&label));
        let k = self.slots.len();
        self.by_label.insert(label.clone(), k);
        self.slots.push(KeySlot {
            key: SplitKey { ordinal, label },
            takes,
        });
        self.key_rows.push(0);
        k
    }

    fn process_slot(&mut self, source: u32, pid: i64) -> usize {
        if let Some(&k) = self.by_process.get(&(source, pid)) {
            return k;
        }
        let label = self
            .process_labels
            .get(&(source, pid))
            .cloned()
            .unwrap_or_else(|| format!("pid-{pid}"));
        let k = self.slot(0, label);
        self.by_process.insert((source, pid), k);
        k
    }

    fn node_slot(&mut self, source: u32, nid: i64) -> usize {
        if let Some(&k) = self.by_node.get(&(source, nid)) {
            return k;
        }
        let k = self.slot(0, self.node_label(source, nid));
        self.by_node.insert((source, nid), k);
        k
    }

    fn agent_slot(&mut self, source: u32, nid: i64, agent: Option<i64>) -> usize {
        if let Some(&k) = self.by_agent.get(&(source, nid, agent)) {
            return k;
        }
        let k = self.slot(0, self.agent_label(source, nid, agent));
        self.by_agent.insert((source, nid, agent), k);
        k
    }

    /// Numbers the keys the catalog predicts, so that routing their rows is a lookup.
    fn number_keys(&mut self, c: &Catalog) {
        match &self.mode {
            SplitMode::Time { cuts } => {
                let n = cuts.len() + 1;
                for i in 0..n {
                    self.slot(i, part_label(i, n));
                }
            }
            SplitMode::Process => {
                for p in &c.processes {
                    self.process_slot(p.source, p.pid);
                }
            }
            SplitMode::Node => {
                for n in &c.nodes {
                    self.node_slot(n.source, n.id);
                }
            }
            SplitMode::Agent => {
                for a in &c.agents {
                    self.agent_slot(a.source, a.nid, Some(a.id));
                }
                for p in &c.processes {
                    self.agent_slot(p.source, p.nid, None);
                }
            }
        }
    }

    /// Fills `row_keys` with the key number of every row of `b`.
    fn route(&mut self, b: &EventBatch) {
        let n = b.batch.num_rows();
        let starts = b.batch.column(col::START).as_primitive::<Int64Type>();
        let sources = b.batch.column(col::SOURCE).as_primitive::<UInt32Type>();
        let nids = b.batch.column(col::NID).as_primitive::<Int64Type>();
        let pids = b.batch.column(col::PID).as_primitive::<Int64Type>();
        let int = |a: &arrow_array::Int64Array, r: usize| a.is_valid(r).then(|| a.value(r));
        let mut keys = std::mem::take(&mut self.row_keys);
        keys.clear();
        match &self.mode {
            // Part i holds the rows starting in [cuts[i-1], cuts[i]); key number = part.
            SplitMode::Time { cuts } => {
                keys.extend((0..n).map(|r| cuts.partition_point(|&c| c <= starts.value(r))))
            }
            SplitMode::Process => {
                for r in 0..n {
                    let k = self.process_slot(sources.value(r), int(pids, r).unwrap_or(-1));
                    keys.push(k);
                }
            }
            SplitMode::Node => {
                for r in 0..n {
                    let k = self.node_slot(sources.value(r), int(nids, r).unwrap_or(-1));
                    keys.push(k);
                }
            }
            SplitMode::Agent => {
                let column = match b.table {
                    Table::KernelDispatch | Table::MemoryAllocation | Table::PmcValue => {
                        Some("agent_id")
                    }
                    Table::MemoryCopy => Some("dst_agent_id"),
                    _ => None,
                };
                let agents = column.map(|c| {
                    b.batch
                        .column(b.table.column_index(c))
                        .as_primitive::<Int64Type>()
                });
                for r in 0..n {
                    let agent = agents.and_then(|a| int(a, r));
                    let k = self.agent_slot(sources.value(r), int(nids, r).unwrap_or(-1), agent);
                    keys.push(k);
                }
            }
        }
        self.row_keys = keys;
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

    /// Done with the rows of `key`: its output is finished, or sealed when it commits into
    /// a shared dataset (committed by [`SplitSink::commit`] at the split's end).
    fn finish_child(&mut self, key: &SplitKey) -> Result<()> {
        if let Some(mut child) = self.open.remove(key) {
            if child.sink.commits_shared() {
                child.sink.seal()?;
                self.sealed.push(child);
            } else {
                self.commit(child)?;
            }
        }
        Ok(())
    }

    fn commit(&mut self, child: Child) -> Result<()> {
        for mut r in child.sink.finish()? {
            r.key = Some(child.key.label.clone());
            r.time_range = Some([child.first, child.last]);
            self.done.push(r);
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
    fn commits_shared(&self) -> bool {
        self.open
            .values()
            .chain(&self.sealed)
            .any(|c| c.sink.commits_shared())
            || self
                .deferred
                .as_ref()
                .is_some_and(|d| d.last && d.waiting() > 0)
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        self.index(catalog);
        self.number_keys(catalog);
        self.catalog = Some(catalog.clone());
        Ok(())
    }

    fn write(&mut self, chunk: &Chunk) -> Result<()> {
        // The parts of this chunk, by key number.
        let mut parts: Vec<(usize, Chunk)> = Vec::new();
        let mut touched: Vec<usize> = Vec::new();
        for b in &chunk.batches {
            self.route(b);
            let groups = GroupColumns::new(b);
            let mut cut = std::mem::take(&mut self.row_cut);
            cut.clear();
            cut.extend(
                (0..self.row_keys.len())
                    .map(|r| groups.get(r).is_some_and(|g| !self.group_whole(&g))),
            );
            let cleared = flows::clear(b, &cut);
            self.row_cut = cut;
            let b = cleared?;
            // The batch's rows grouped by key in one list (a counting sort), each key's
            // rows in their order: memory follows the batch, not the number of keys.
            for &k in &self.row_keys {
                if self.slots[k].takes {
                    if self.key_rows[k] == 0 {
                        touched.push(k);
                    }
                    self.key_rows[k] += 1;
                }
            }
            // In key order, as the children have always received their batches.
            touched.sort_unstable_by(|&x, &y| self.slots[x].key.cmp(&self.slots[y].key));
            let mut spans = std::mem::take(&mut self.spans);
            spans.clear();
            let mut at = 0;
            for &k in &touched {
                let n = self.key_rows[k];
                spans.push((k, at, n));
                // From here on, where the key's next row goes.
                self.key_rows[k] = at;
                at += n;
            }
            self.grouped.clear();
            self.grouped.resize(at as usize, 0);
            for (r, &k) in self.row_keys.iter().enumerate() {
                if self.slots[k].takes {
                    let next = &mut self.key_rows[k];
                    self.grouped[*next as usize] = r as u32;
                    *next += 1;
                }
            }
            for &k in &touched {
                self.key_rows[k] = 0;
            }
            touched.clear();
            for &(k, start, n) in &spans {
                let rows = &self.grouped[start as usize..(start + n) as usize];
                let taken = if rows.len() == b.batch.num_rows() {
                    Ok(b.batch.clone())
                } else {
                    let rows = UInt32Array::from_iter_values(rows.iter().copied());
                    arrow_select::take::take_record_batch(&b.batch, &rows)
                };
                let batch = match taken {
                    Ok(batch) => batch,
                    Err(e) => {
                        self.spans = spans;
                        return Err(e.into());
                    }
                };
                let part = match parts.iter().position(|(p, _)| *p == k) {
                    Some(i) => &mut parts[i].1,
                    None => {
                        parts.push((k, Chunk::default()));
                        &mut parts.last_mut().expect("just pushed").1
                    }
                };
                part.batches.push(EventBatch {
                    table: b.table,
                    batch,
                });
            }
            self.spans = spans;
        }
        parts.sort_by(|(x, _), (y, _)| self.slots[*x].key.cmp(&self.slots[*y].key));
        let parts: Vec<(SplitKey, Chunk)> = parts
            .into_iter()
            .map(|(k, c)| (self.slots[k].key.clone(), c))
            .collect();
        // Time parts only move forward: parts before the first one seen are complete.
        if let (SplitMode::Time { .. }, Some((first, _))) = (&self.mode, parts.first()) {
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
        // Time parts a chunk holds before its last are complete once written: every later
        // row starts after this chunk's rows, so in its last part or a later one. Finished
        // at once, a chunk that spans many parts holds one open at a time, not all.
        let time = matches!(self.mode, SplitMode::Time { .. });
        let last = parts.last().map(|(k, _)| k.ordinal);
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
            if time && Some(key.ordinal) != last {
                self.finish_child(&key)?;
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<Vec<OutputReport>> {
        let keys: Vec<SplitKey> = self.open.keys().cloned().collect();
        for k in keys {
            self.finish_child(&k)?;
        }
        let mut sealed = std::mem::take(&mut self.sealed);
        // A pass before the last leaves its parts waiting (and so commits none below);
        // the last takes every pass's.
        if let Some(d) = &self.deferred {
            let mut waiting = d.parts.borrow_mut();
            if d.last {
                sealed.append(&mut waiting);
            } else {
                waiting.append(&mut sealed);
            }
        }
        sealed.sort_by(|a, b| a.key.cmp(&b.key));
        // Every part checked before any commits, then all committed at once: a forced
        // exit (a second Ctrl-C) waits for the last, not only for the part under way.
        for child in &sealed {
            child.sink.check_commit()?;
        }
        let _all = rocpd_pipeline::cleanup::committing();
        for child in sealed {
            self.commit(child)?;
        }
        let mut done = std::mem::take(&mut self.done);
        self.completed = true;
        done.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(done)
    }
}
