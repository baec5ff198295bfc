//! Turning the event stream into OTF2 locations, regions, Enter/Leave and Metric events.
//!
//! Rows arrive in global start order. Every open slice's end waits in a min-heap; before
//! anything at time `t` is written, every pending end at or before `t` is written as a
//! Leave, so each location's events are in non-decreasing time order and its Enter/Leave
//! pairs nest. A slice that overlaps an open slice on its location without nesting in it
//! goes to an extra location (`... (overlap N)`), never into broken nesting.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::Array;
use rocpd_model::hash::FastMap;
use rocpd_model::lanes::{Lanes, Slot};
use rocpd_model::naming::{allocation_operation, output_category};
use rocpd_model::{AgentIndexMode, Catalog, CatalogIndex, EventBatch, Table};
use rocpd_pipeline::{Chunk, OutputReport};

use crate::defs::{
    paradigm, role, Defs, Group, Location, LocationType, Process, ATTR_BYTES, ATTR_CATEGORY,
    ATTR_CORR_ID, ATTR_DISPATCH_ID,
};
use crate::encode::{event, put_i64, put_record, put_u32, put_u64, ty, ATTRIBUTE_LIST};
use crate::evt::EventStream;
use rocpd_model::view::{gi as int, gs as text, Cols};

/// What a location stands for; slices of one key share a location (and its overlap lanes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum LocKey {
    /// A CPU thread (source, pid, tid): API calls, markers, samples.
    Thread(u32, i64, i64),
    /// A sample track without a thread (source, pid, track id).
    Track(u32, i64, i64),
    /// Kernels of one queue (source, pid, agent, queue).
    Queue(u32, i64, i64, i64),
    /// Copies of one thread towards one agent (source, pid, destination agent, tid).
    Copy(u32, i64, i64, i64),
    /// Allocations on one agent, or without one (source, pid, agent).
    Alloc(u32, i64, Option<i64>),
    /// Counter values not attached to a kernel location (source, pid, agent).
    Counters(u32, i64, Option<i64>),
}

impl LocKey {
    fn process(&self) -> (u32, i64) {
        match *self {
            LocKey::Thread(s, p, _)
            | LocKey::Track(s, p, _)
            | LocKey::Queue(s, p, _, _)
            | LocKey::Copy(s, p, _, _)
            | LocKey::Alloc(s, p, _)
            | LocKey::Counters(s, p, _) => (s, p),
        }
    }
}

/// An attribute value on an Enter event.
enum Attr {
    Str(u32),
    Int(i64),
}

/// A location's event stream (its open slices, with their regions, are in `Lanes`).
struct Lane {
    stream: EventStream,
}

/// Counter values of one (location, metric) waiting to be summed over dimension instances.
struct PmcPoint {
    loc: usize,
    metric: u32,
    source: u32,
    event: Option<i64>,
    ts: i64,
    sum: f64,
}

/// The event side of one archive.
pub(crate) struct Writer {
    cat: Arc<Catalog>,
    idx: CatalogIndex,
    dir: PathBuf,
    chunk_size: u64,
    buffer_bytes: usize,
    max_buffered: usize,
    pub defs: Defs,
    lanes: Vec<Lane>,
    /// Which lanes each key has, and the end and region of every open slice.
    placing: Lanes<LocKey, u32>,
    heap: BinaryHeap<Reverse<(i64, Reverse<u64>, usize)>>,
    seq: u64,
    buffered: usize,
    now: i64,
    dispatches: FastMap<(u32, i64), usize>,
    pmc: Vec<PmcPoint>,
    queue_numbers: FastMap<(u32, i64, i64), FastMap<i64, usize>>,
    first_ts: Option<u64>,
    last_ts: u64,
    rec: Vec<u8>,
    scratch: Vec<u8>,
    attrs: Vec<(u32, Attr)>,
    pub report: OutputReport,
    negative_durations: u64,
    negative_timestamps: u64,
    spills: u64,
}

impl Writer {
    pub fn new(
        cat: Arc<Catalog>,
        dir: PathBuf,
        defs: Defs,
        chunk_size: u64,
        buffer_bytes: usize,
        max_buffered: usize,
    ) -> Self {
        Writer {
            idx: CatalogIndex::new(&cat),
            cat,
            dir,
            chunk_size,
            buffer_bytes,
            max_buffered,
            defs,
            lanes: Vec::new(),
            placing: Lanes::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            buffered: 0,
            now: i64::MIN,
            dispatches: FastMap::default(),
            pmc: Vec::new(),
            queue_numbers: FastMap::default(),
            first_ts: None,
            last_ts: 0,
            rec: Vec::new(),
            scratch: Vec::new(),
            attrs: Vec::new(),
            report: OutputReport::default(),
            negative_durations: 0,
            negative_timestamps: 0,
            spills: 0,
        }
    }

    // ---- names and groups -------------------------------------------------------------

    fn host_of(&mut self, source: u32, nid: Option<i64>) -> usize {
        let node = nid
            .and_then(|n| self.idx.node(source, n))
            .map(|i| &self.cat.nodes[i]);
        match node {
            Some(n) => {
                let name = n
                    .hostname
                    .clone()
                    .filter(|h| !h.is_empty())
                    .unwrap_or_else(|| format!("node {}", n.id));
                let key = format!("{name}\u{0}{}", n.machine_id.as_deref().unwrap_or(""));
                self.defs.host(&key, &name)
            }
            None => {
                let name = match nid {
                    Some(n) => format!("node {n}"),
                    None => "unknown node".to_string(),
                };
                self.defs.host(&format!("{name}\u{0}?"), &name)
            }
        }
    }

    fn process_of(&mut self, source: u32, pid: i64, row_nid: Option<i64>) -> usize {
        let p = self
            .idx
            .process(source, pid)
            .map(|i| &self.cat.processes[i]);
        let nid = p.map(|p| p.nid).or(row_nid);
        let name = match p {
            Some(p) => format!("{} (pid {pid})", p.program()),
            None => format!("pid {pid}"),
        };
        let host = self.host_of(source, nid);
        self.defs.process(source, pid, || Process { host, name })
    }

    /// `("GPU Agent-1", is a GPU, accelerator key, node id)` of an agent.
    fn agent(&self, source: u32, agent: i64) -> (String, bool, String, Option<i64>) {
        match self.idx.agent(source, agent).map(|i| &self.cat.agents[i]) {
            Some(a) => {
                let (_, n) = a.label(AgentIndexMode::Relative);
                let label = format!("{} Agent-{n}", a.agent_type);
                let key = format!("{}:{}", a.agent_type, a.absolute_index.unwrap_or(a.id));
                (label, a.agent_type == "GPU", key, Some(a.nid))
            }
            None => (
                format!("UNK Agent-{agent}"),
                true,
                format!("unknown:{source}:{agent}"),
                None,
            ),
        }
    }

    fn accelerator_group(&mut self, source: u32, agent: i64, process: usize) -> Group {
        let (label, _, key, nid) = self.agent(source, agent);
        let host = match nid {
            Some(n) => self.host_of(source, Some(n)),
            None => self.defs.processes[process].host,
        };
        let name = match self
            .idx
            .agent(source, agent)
            .and_then(|i| self.cat.agents[i].name.as_deref())
            .filter(|n| !n.is_empty())
        {
            Some(n) => format!("{label} ({n})"),
            None => label,
        };
        Group::Accelerator(self.defs.accelerator(host, &key, &name, process))
    }

    /// Name, type and group of the first location of `key`.
    fn describe(
        &mut self,
        key: &LocKey,
        hint: &str,
        nid: Option<i64>,
    ) -> (String, LocationType, Group) {
        let (source, pid) = key.process();
        let process = self.process_of(source, pid, nid);
        let own = Group::Process(process);
        match *key {
            LocKey::Thread(_, _, tid) => {
                let name = if tid < 0 {
                    "Thread (unknown)".to_string()
                } else {
                    format!("Thread {tid}")
                };
                (name, LocationType::CpuThread, own)
            }
            LocKey::Track(_, _, track) => {
                let name = if hint.is_empty() {
                    format!("Track {track}")
                } else {
                    hint.to_string()
                };
                (name, LocationType::CpuThread, own)
            }
            LocKey::Queue(s, p, agent, queue) => {
                let (label, ..) = self.agent(s, agent);
                let numbers = self.queue_numbers.entry((s, p, agent)).or_default();
                let next = numbers.len();
                let k = *numbers.entry(queue).or_insert(next);
                let g = self.accelerator_group(s, agent, process);
                (
                    format!("Compute on {label}, Queue {k} (pid {p})"),
                    LocationType::AcceleratorStream,
                    g,
                )
            }
            LocKey::Copy(s, p, dst, tid) => {
                let (label, gpu, ..) = self.agent(s, dst);
                let g = if gpu && dst >= 0 {
                    self.accelerator_group(s, dst, process)
                } else {
                    own
                };
                let name = if tid < 0 {
                    format!("Copy to {label} (pid {p})")
                } else {
                    format!("Thread {tid}, Copy to {label} (pid {p})")
                };
                (name, LocationType::AcceleratorStream, g)
            }
            LocKey::Alloc(s, p, agent) => match agent {
                Some(a) => {
                    let (label, gpu, ..) = self.agent(s, a);
                    let g = if gpu {
                        self.accelerator_group(s, a, process)
                    } else {
                        own
                    };
                    (
                        format!("Memory Allocate at {label} (pid {p})"),
                        LocationType::AcceleratorStream,
                        g,
                    )
                }
                None => (
                    "Memory Deallocate (Free)".to_string(),
                    LocationType::AcceleratorStream,
                    own,
                ),
            },
            LocKey::Counters(s, p, agent) => match agent {
                Some(a) => {
                    let (label, gpu, ..) = self.agent(s, a);
                    let g = if gpu {
                        self.accelerator_group(s, a, process)
                    } else {
                        own
                    };
                    (
                        format!("Counters on {label} (pid {p})"),
                        LocationType::Metric,
                        g,
                    )
                }
                None => ("Counters".to_string(), LocationType::Metric, own),
            },
        }
    }

    // ---- locations and lanes ----------------------------------------------------------

    fn new_lane(&mut self, key: &LocKey, hint: &str, nid: Option<i64>) -> io::Result<usize> {
        let (name, kind, group) = self.describe(key, hint, nid);
        let n = self.placing.count(key);
        let name = if n == 0 {
            name
        } else {
            format!("{name} (overlap {n})")
        };
        let id = self.lanes.len();
        if id as u64 >= u64::MAX - 1 {
            return Err(io::Error::other("too many locations"));
        }
        self.defs.locations.push(Location { name, kind, group });
        self.lanes.push(Lane {
            stream: EventStream::new(self.dir.join(format!("{id}.evt"))),
        });
        let lane = self.placing.add(key);
        debug_assert_eq!(lane, id);
        Ok(id)
    }

    fn first_lane(&mut self, key: &LocKey, hint: &str, nid: Option<i64>) -> io::Result<usize> {
        match self.placing.first(key) {
            Some(l) => Ok(l),
            None => self.new_lane(key, hint, nid),
        }
    }

    /// The first lane of `key` on which a slice ending at `end` nests.
    fn lane_for(
        &mut self,
        key: &LocKey,
        hint: &str,
        nid: Option<i64>,
        end: i64,
    ) -> io::Result<usize> {
        match self.placing.place(key, end) {
            Slot::Lane(l) => Ok(l),
            Slot::New(_) => self.new_lane(key, hint, nid),
        }
    }

    // ---- events -----------------------------------------------------------------------

    fn time(&mut self, ts: i64) -> u64 {
        if ts < 0 {
            self.negative_timestamps += 1;
            0
        } else {
            ts as u64
        }
    }

    /// Appends `self.rec` to lane `l` at `ts`, spilling buffers that grew too large.
    fn push(&mut self, l: usize, ts: i64) -> io::Result<()> {
        let t = self.time(ts);
        self.first_ts = Some(self.first_ts.map_or(t, |f| f.min(t)));
        self.last_ts = self.last_ts.max(t);
        let lane = &mut self.lanes[l];
        let before = lane.stream.buffered();
        lane.stream.push(self.chunk_size, t, &self.rec)?;
        let mut after = lane.stream.buffered();
        if lane.stream.buffered_len() >= self.buffer_bytes {
            lane.stream.spill(false)?;
            self.spills += 1;
            after = lane.stream.buffered();
        }
        self.buffered = self.buffered + after - before;
        if self.buffered > self.max_buffered {
            self.relieve()?;
        }
        Ok(())
    }

    /// Spills and frees the largest buffers until at most half the budget is held.
    fn relieve(&mut self) -> io::Result<()> {
        let mut sizes: Vec<(usize, usize)> = self
            .lanes
            .iter()
            .enumerate()
            .map(|(i, l)| (l.stream.buffered(), i))
            .filter(|&(b, _)| b > 0)
            .collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        for (size, i) in sizes {
            if self.buffered <= self.max_buffered / 2 {
                break;
            }
            self.lanes[i].stream.spill(true)?;
            self.spills += 1;
            self.buffered -= size;
        }
        Ok(())
    }

    fn enter(&mut self, l: usize, ts: i64, region: u32) -> io::Result<()> {
        self.rec.clear();
        if !self.attrs.is_empty() {
            self.scratch.clear();
            put_u32(&mut self.scratch, self.attrs.len() as u32);
            for (id, v) in &self.attrs {
                put_u32(&mut self.scratch, *id);
                match *v {
                    Attr::Str(s) => {
                        self.scratch.push(ty::STRING);
                        put_u32(&mut self.scratch, s);
                    }
                    Attr::Int(i) => {
                        self.scratch.push(ty::INT64);
                        put_i64(&mut self.scratch, i);
                    }
                }
            }
            put_record(&mut self.rec, ATTRIBUTE_LIST, &self.scratch);
        }
        self.rec.push(event::ENTER);
        put_u32(&mut self.rec, region);
        self.push(l, ts)
    }

    fn leave(&mut self, l: usize, ts: i64, region: u32) -> io::Result<()> {
        self.rec.clear();
        self.rec.push(event::LEAVE);
        put_u32(&mut self.rec, region);
        self.push(l, ts)
    }

    fn metric(&mut self, l: usize, ts: i64, metric: u32, value: f64) -> io::Result<()> {
        self.scratch.clear();
        put_u32(&mut self.scratch, metric);
        self.scratch.push(1);
        self.scratch.push(ty::DOUBLE);
        put_u64(&mut self.scratch, value.to_bits());
        self.rec.clear();
        put_record(&mut self.rec, event::METRIC, &self.scratch);
        self.push(l, ts)
    }

    /// Writes every pending Leave at or before `ts`.
    fn advance(&mut self, ts: i64) -> io::Result<()> {
        while let Some(&Reverse((t, _, l))) = self.heap.peek() {
            if t > ts {
                break;
            }
            self.heap.pop();
            let (_, region) = self.placing.close(l).expect("open slice");
            self.leave(l, t, region)?;
        }
        Ok(())
    }

    /// Writes the Enter of a slice on a lane of `key` and schedules its Leave.
    #[allow(clippy::too_many_arguments)]
    fn slice(
        &mut self,
        key: &LocKey,
        hint: &str,
        nid: Option<i64>,
        start: i64,
        end: i64,
        region: u32,
    ) -> io::Result<usize> {
        self.advance(start)?;
        let end = if end < start {
            self.negative_durations += 1;
            start
        } else {
            end
        };
        let l = self.lane_for(key, hint, nid, end)?;
        self.enter(l, start, region)?;
        self.placing.open(l, end, region);
        self.seq += 1;
        self.heap.push(Reverse((end, Reverse(self.seq), l)));
        Ok(l)
    }

    /// Writes the summed counter values waiting for more dimension instances.
    fn flush_pmc(&mut self) -> io::Result<()> {
        // Taken and given back, so the buffer is not allocated again at every timestamp.
        let mut points = std::mem::take(&mut self.pmc);
        for p in points.drain(..) {
            self.metric(p.loc, p.ts, p.metric, p.sum)?;
        }
        self.pmc = points;
        Ok(())
    }

    /// Writes every row of `chunk`, in time order.
    pub fn write_chunk(&mut self, chunk: &Chunk) -> io::Result<()> {
        let cols: Vec<Cols<'_>> = chunk
            .batches
            .iter()
            .map(|EventBatch { table, batch }| Cols::new(batch, *table))
            .collect();
        for (b, r) in chunk.time_order() {
            self.row(chunk.batches[b].table, &cols[b], r)?;
        }
        for (t, n) in chunk.rows_per_table() {
            self.report.add(t, n as u64);
        }
        Ok(())
    }

    fn row(&mut self, table: Table, c: &Cols<'_>, r: usize) -> io::Result<()> {
        let source = c.source.value(r);
        let nid = int(Some(c.nid), r);
        let pid = int(Some(c.pid), r).unwrap_or(-1);
        let tid = int(Some(c.tid), r);
        let (start, end) = (c.start.value(r), c.end.value(r));
        let raw_cat = text(Some(c.category), r).unwrap_or("");
        let stack_id = int(Some(c.stack_id), r);
        if start > self.now {
            self.flush_pmc()?;
            self.dispatches.clear();
            self.now = start;
        }
        self.attrs.clear();
        match table {
            Table::Region | Table::Marker | Table::Sample => {
                let name = text(c.name, r).unwrap_or("");
                let shown = text(c.message, r).filter(|m| !m.is_empty()).unwrap_or(name);
                let category = output_category(raw_cat);
                let par = if table == Table::Sample {
                    paradigm::SAMPLING
                } else {
                    match category {
                        "hip_api" => paradigm::HIP,
                        "marker_api" => paradigm::USER,
                        "openmp" => paradigm::OPENMP,
                        _ => paradigm::UNKNOWN,
                    }
                };
                let region = self.defs.region(shown, role::FUNCTION, par)?;
                self.attrs
                    .push((ATTR_CATEGORY, Attr::Str(self.defs.string(category)?)));
                if let Some(s) = stack_id {
                    self.attrs.push((ATTR_CORR_ID, Attr::Int(s)));
                }
                let key = match (table, tid) {
                    (Table::Sample, None) => {
                        LocKey::Track(source, pid, int(c.track_id, r).unwrap_or(-1))
                    }
                    _ => LocKey::Thread(source, pid, tid.unwrap_or(-1)),
                };
                // Samples are instants: zero-length regions.
                let end = if table == Table::Sample { start } else { end };
                self.slice(&key, name, nid, start, end, region)?;
            }
            Table::KernelDispatch => {
                let agent = int(c.agent_id, r).unwrap_or(-1);
                let queue = int(c.queue_id, r).unwrap_or(-1);
                let name = text(c.kernel_name, r).unwrap_or("");
                let region = self.defs.region(name, role::FUNCTION, paradigm::HIP)?;
                self.attrs.push((
                    ATTR_CATEGORY,
                    Attr::Str(self.defs.string("kernel_dispatch")?),
                ));
                if let Some(s) = stack_id {
                    self.attrs.push((ATTR_CORR_ID, Attr::Int(s)));
                }
                let dispatch = int(c.dispatch_id, r);
                if let Some(d) = dispatch {
                    self.attrs.push((ATTR_DISPATCH_ID, Attr::Int(d)));
                }
                let key = LocKey::Queue(source, pid, agent, queue);
                let l = self.slice(&key, "", nid, start, end, region)?;
                if let Some(d) = dispatch {
                    self.dispatches.insert((source, d), l);
                }
            }
            Table::MemoryCopy => {
                let name = text(c.name, r).unwrap_or("");
                let dst = int(c.dst_agent_id, r).unwrap_or(-1);
                let region = self.defs.region(name, role::DATA_TRANSFER, paradigm::HIP)?;
                self.attrs
                    .push((ATTR_CATEGORY, Attr::Str(self.defs.string("memory_copy")?)));
                if let Some(s) = stack_id {
                    self.attrs.push((ATTR_CORR_ID, Attr::Int(s)));
                }
                if let Some(b) = int(c.size, r) {
                    self.attrs.push((ATTR_BYTES, Attr::Int(b)));
                }
                let key = LocKey::Copy(source, pid, dst, tid.unwrap_or(-1));
                self.slice(&key, "", nid, start, end, region)?;
            }
            Table::MemoryAllocation => {
                let kind = text(c.kind, r).unwrap_or("");
                let level = text(c.level, r);
                let op = allocation_operation(kind, level);
                let rl = match kind {
                    "ALLOC" => role::ALLOCATE,
                    "FREE" => role::DEALLOCATE,
                    "REALLOC" => role::REALLOCATE,
                    _ => role::FUNCTION,
                };
                let region = self.defs.region(&op, rl, paradigm::HIP)?;
                let category = if level == Some("SCRATCH") {
                    "scratch_memory"
                } else {
                    "memory_allocation"
                };
                self.attrs
                    .push((ATTR_CATEGORY, Attr::Str(self.defs.string(category)?)));
                if let Some(s) = stack_id {
                    self.attrs.push((ATTR_CORR_ID, Attr::Int(s)));
                }
                if let Some(b) = int(c.size, r) {
                    self.attrs.push((ATTR_BYTES, Attr::Int(b)));
                }
                let key = LocKey::Alloc(source, pid, int(c.agent_id, r));
                self.slice(&key, "", nid, start, end, region)?;
            }
            Table::PmcValue => {
                let agent = int(c.agent_id, r);
                let name = text(c.counter_name, r).unwrap_or("");
                let pmc = int(c.pmc_id, r)
                    .and_then(|id| self.idx.pmc(source, id))
                    .map(|i| &self.cat.pmcs[i]);
                let unit = pmc
                    .and_then(|p| p.units.as_deref())
                    .filter(|u| !u.is_empty())
                    .unwrap_or("#");
                // Borrowed, and the description copied only for a new metric: this runs
                // for every counter row.
                let metric = self.defs.metric(name, unit, || {
                    pmc.and_then(|p| p.description.clone()).unwrap_or_default()
                });
                let value = c
                    .value
                    .filter(|v| v.is_valid(r))
                    .map_or(0.0, |v| v.value(r));
                let event = int(Some(c.event_id), r);
                self.advance(start)?;
                let on_kernel = int(c.dispatch_id, r)
                    .and_then(|d| self.dispatches.get(&(source, d)))
                    .copied();
                let l = match on_kernel {
                    Some(l) => l,
                    None => self.first_lane(&LocKey::Counters(source, pid, agent), "", nid)?,
                };
                // Dimension instances of one (event, counter) arrive together: one point.
                match self
                    .pmc
                    .iter()
                    .position(|p| p.loc == l && p.metric == metric)
                {
                    Some(i)
                        if event.is_some()
                            && self.pmc[i].event == event
                            && self.pmc[i].source == source =>
                    {
                        self.pmc[i].sum += value;
                    }
                    found => {
                        if let Some(i) = found {
                            let p = self.pmc.remove(i);
                            self.metric(p.loc, p.ts, p.metric, p.sum)?;
                        }
                        self.pmc.push(PmcPoint {
                            loc: l,
                            metric,
                            source,
                            event,
                            ts: start,
                            sum: value,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes everything still pending and closes every event file; returns the event
    /// count of every location, the clock range (offset, length) and the bytes written.
    pub fn finish(&mut self) -> io::Result<(Vec<u64>, (u64, u64), u64)> {
        self.flush_pmc()?;
        self.advance(i64::MAX)?;
        if self.lanes.is_empty() {
            // The reference reader refuses an archive without locations: give an empty
            // output one location without events.
            let host = self.defs.host("", "unknown node");
            let p = self.defs.process(u32::MAX, -1, || Process {
                host,
                name: "no events".into(),
            });
            self.defs.locations.push(Location {
                name: "no events".into(),
                kind: LocationType::CpuThread,
                group: Group::Process(p),
            });
            self.lanes.push(Lane {
                stream: EventStream::new(self.dir.join("0.evt")),
            });
        }
        let mut events = Vec::with_capacity(self.lanes.len());
        let mut bytes = 0;
        let local_defs = crate::encode::empty_local_defs();
        for (l, lane) in self.lanes.iter_mut().enumerate() {
            bytes += lane.stream.finish()?;
            events.push(lane.stream.events());
            std::fs::write(self.dir.join(format!("{l}.def")), &local_defs)?;
            bytes += local_defs.len() as u64;
        }
        self.buffered = 0;
        let clock = match self.first_ts {
            Some(f) => (f, self.last_ts - f),
            None => (0, 0),
        };
        if self.placing.extra_slices() > 0 {
            let lanes = self.placing.extra_lanes();
            self.report.notes.push(format!(
                "{} slices overlapped a slice on their location without nesting in it; they were put on {lanes} extra \"(overlap N)\" locations",
                self.placing.extra_slices()
            ));
        }
        if self.negative_durations > 0 {
            self.report.notes.push(format!(
                "{} events ended before they started; they are written with zero duration",
                self.negative_durations
            ));
        }
        if self.negative_timestamps > 0 {
            self.report.notes.push(format!(
                "{} events had negative timestamps, written as 0 (OTF2 timestamps are unsigned)",
                self.negative_timestamps
            ));
        }
        if self.defs.truncated > 0 {
            self.report.notes.push(format!(
                "{} names longer than 1 MiB were cut to fit an OTF2 definition chunk",
                self.defs.truncated
            ));
        }
        if self.defs.cleared > 0 {
            self.report.notes.push(format!(
                "more distinct names than the definition cache holds: {} times, names seen again were defined again under new ids",
                self.defs.cleared
            ));
        }
        Ok((events, clock, bytes))
    }

    /// Times a location's buffer was appended to its file before the end.
    pub fn spills(&self) -> u64 {
        self.spills
    }
}
