//! Turning the event stream into Perfetto tracks, slices, instants, counters and flows.
//!
//! Rows arrive in global start order. Every slice end is kept in a min-heap of pending
//! ends (with the counter decrements of in-flight copies); before anything at time `t` is
//! written, every pending end at or before `t` is written first, so the file is in
//! non-decreasing time order and slices on a track nest by construction. A slice that
//! overlaps an open slice on its track without nesting in it goes to an extra *lane*
//! (a sibling track named `... (overlap N)`), never into broken nesting.
//!
//! The common rows (API calls, kernels, copies, samples) are written without a heap
//! allocation: annotations are built in a buffer the writer keeps, the agent names of
//! annotations are made once per agent, and flow ids hash a per-source prefix hashed once.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::sync::Arc;

use arrow_array::{Array, Int64Array};
use rocpd_model::hash::{fnv1a64, FastMap, FastSet, FNV_OFFSET};
use rocpd_model::lanes::{Lanes, Slot};
use rocpd_model::naming::{allocation_operation, output_category};
use rocpd_model::{AgentIndexMode, Catalog, CatalogIndex, EventBatch, Table};
use rocpd_pipeline::{Chunk, OutputReport};

use crate::encoder::{Annotations, CounterValue, Encoder, NO_ANNOTATIONS};
use crate::proto::{
    event_type, unit, CounterDescriptor, ProcessDescriptor, ThreadDescriptor, TrackDescriptor,
};
use rocpd_model::view::{gi, gs, oi, os, Cols};

/// What the Perfetto output contains.
#[derive(Debug, Clone)]
pub struct PerfettoOptions {
    /// Kernels on per-agent HSA-queue tracks and copies on per-(agent, thread) tracks,
    /// instead of per-HIP-stream tracks.
    pub group_by_queue: bool,
    /// Name kernels after their enclosing ROCTx range when there is one.
    pub kernel_rename: bool,
    /// How agents are numbered in names.
    pub agent_index: AgentIndexMode,
    /// Write debug annotations (begin_ns, corr_id, ...); off makes files smaller.
    pub annotations: bool,
    /// Add API arguments as an `args` annotation.
    pub annotate_args: bool,
    /// Bytes of interned strings kept before the interning state is cleared.
    pub intern_limit_bytes: usize,
}

impl Default for PerfettoOptions {
    fn default() -> Self {
        PerfettoOptions {
            group_by_queue: false,
            kernel_rename: false,
            agent_index: AgentIndexMode::Relative,
            annotations: true,
            annotate_args: false,
            intern_limit_bytes: 32 << 20,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum TrackKey {
    Thread(u32, i64, i64),
    Stream(u32, i64, i64),
    Queue(u32, i64, i64, i64),
    CopyTo(u32, i64, i64, i64),
    Allocations(u32, i64),
    Samples(u32, i64, i64),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum CounterKey {
    CopyBytes(u32, i64, i64),
    AllocBytes(u32, i64, i64),
    Pmc(u32, i64, i64, i64),
}

struct CounterTrack {
    uuid: u64,
    /// Wide: sizes come from the input, and a sum or a negated size of `i64` values may
    /// leave `i64` (the counter is written clamped, and noted).
    value: i128,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    End(usize),
    Delta(usize, i128),
}

struct PmcPoint {
    source: u32,
    event: Option<i64>,
    ts: i64,
    sum: f64,
}

/// FNV-1a over `bytes`, never 0 (0 is not a valid track uuid).
fn fnv(bytes: &[u8]) -> u64 {
    fnv1a64(bytes, FNV_OFFSET).max(1)
}

/// The decimal digits of `v` in `buf`, as `format!("{v}")` writes them.
fn decimal(v: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = v.unsigned_abs();
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// The state of one Perfetto output.
pub(crate) struct Writer {
    cat: Arc<Catalog>,
    idx: CatalogIndex,
    opts: PerfettoOptions,
    enc: Encoder,
    described: FastSet<u64>,
    lanes: Lanes<TrackKey>,
    /// The track uuid of every lane.
    lane_uuids: Vec<u64>,
    heap: BinaryHeap<Reverse<(i64, Reverse<u64>, Action)>>,
    seq: u64,
    counter_ids: FastMap<CounterKey, usize>,
    counters: Vec<CounterTrack>,
    live_allocs: FastMap<(u32, i64, i64), (usize, i64)>,
    pmc_pending: FastMap<usize, PmcPoint>,
    queue_numbers: FastMap<(u32, i64, i64), FastMap<i64, usize>>,
    thread_numbers: FastMap<(u32, i64), usize>,
    /// `Agent-3` of every catalog agent, as annotations name it.
    agent_args: Vec<String>,
    /// FNV-1a state after `flow/<guid>/` of every source.
    flow_prefixes: Vec<u64>,
    /// The annotations of the row being written (kept for its buffers).
    ann: Annotations,
    pub report: OutputReport,
    negative_durations: u64,
    /// Counter values written clamped to `i64` ([`CounterTrack::value`]).
    clamped_counter_values: u64,
    /// Process and thread tracks described by name: a pid or tid past `i32`.
    wide_ids: u64,
}

impl Writer {
    pub fn new(cat: Arc<Catalog>, opts: PerfettoOptions) -> Self {
        let idx = CatalogIndex::new(&cat);
        // rocpd numbers the non-main threads of a process 1, 2, ... in thread order.
        let mut thread_numbers = FastMap::default();
        let mut per_process: FastMap<(u32, i64), Vec<i64>> = FastMap::default();
        for t in &cat.threads {
            if t.tid != t.pid {
                per_process
                    .entry((t.source, t.pid))
                    .or_default()
                    .push(t.tid);
            }
        }
        for ((source, _), mut tids) in per_process {
            tids.sort_unstable();
            for (i, tid) in tids.into_iter().enumerate() {
                thread_numbers.insert((source, tid), i + 1);
            }
        }
        let agent_args = cat
            .agents
            .iter()
            .map(|a| {
                let (label, n) = a.label(opts.agent_index);
                format!("{label}-{n}")
            })
            .collect();
        let flow_prefixes = cat
            .sources
            .iter()
            .map(|s| fnv1a64(format!("flow/{}/", s.guid).as_bytes(), FNV_OFFSET))
            .collect();
        Writer {
            enc: Encoder::new(opts.intern_limit_bytes),
            cat,
            idx,
            opts,
            described: FastSet::default(),
            lanes: Lanes::new(),
            lane_uuids: Vec::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            counter_ids: FastMap::default(),
            counters: Vec::new(),
            live_allocs: FastMap::default(),
            pmc_pending: FastMap::default(),
            queue_numbers: FastMap::default(),
            thread_numbers,
            agent_args,
            flow_prefixes,
            ann: Annotations::default(),
            report: OutputReport::default(),
            negative_durations: 0,
            clamped_counter_values: 0,
            wide_ids: 0,
        }
    }

    fn guid(&self, source: u32) -> &str {
        self.cat
            .sources
            .get(source as usize)
            .map_or("", |s| s.guid.as_str())
    }

    fn agent_label(&self, source: u32, agent: Option<i64>) -> (String, i64, String) {
        match agent.and_then(|a| self.idx.agent(source, a)) {
            Some(i) => {
                let a = &self.cat.agents[i];
                let (label, n) = a.label(self.opts.agent_index);
                (label, n, a.agent_type.clone())
            }
            None => ("Agent".into(), agent.unwrap_or(-1), "UNK".into()),
        }
    }

    /// Adds the `label-n` name of `agent` (as [`Writer::agent_label`] names it) to `ann`.
    fn agent_arg(
        &self,
        ann: &mut Annotations,
        name: &'static str,
        source: u32,
        agent: Option<i64>,
    ) {
        match agent.and_then(|a| self.idx.agent(source, a)) {
            Some(i) => ann.s(name, &self.agent_args[i]),
            None => ann.fmt(name, format_args!("Agent-{}", agent.unwrap_or(-1))),
        }
    }

    fn describe(&mut self, out: &mut impl Write, d: TrackDescriptor) -> io::Result<()> {
        let uuid = d.uuid.expect("uuid");
        if self.described.insert(uuid) {
            self.enc.descriptor(out, d)?;
        }
        Ok(())
    }

    /// The process track (described on first use).
    fn process_track(&mut self, out: &mut impl Write, source: u32, pid: i64) -> io::Result<u64> {
        let uuid = fnv(format!("process/{}/{pid}", self.guid(source)).as_bytes());
        if !self.described.contains(&uuid) {
            let p = self
                .idx
                .process(source, pid)
                .map(|i| &self.cat.processes[i]);
            let process_name = p.map_or_else(|| format!("pid {pid}"), |p| p.program());
            // Perfetto's pids are 32-bit: a larger one (only from crafted input) is shown
            // as a named track, not truncated into another process's pid.
            let d = match i32::try_from(pid) {
                Ok(pid) => TrackDescriptor {
                    uuid: Some(uuid),
                    process: Some(ProcessDescriptor {
                        pid: Some(pid),
                        cmdline: p.map(|p| p.cmdline()).unwrap_or_default(),
                        process_name: Some(process_name),
                        start_timestamp_ns: p.and_then(|p| p.init.or(p.start)),
                    }),
                    ..Default::default()
                },
                Err(_) => {
                    self.wide_ids += 1;
                    TrackDescriptor {
                        uuid: Some(uuid),
                        name: Some(process_name),
                        ..Default::default()
                    }
                }
            };
            self.describe(out, d)?;
        }
        Ok(uuid)
    }

    fn thread_name(&self, source: u32, pid: i64, tid: i64) -> String {
        if let Some(name) = self
            .idx
            .thread(source, tid)
            .and_then(|i| self.cat.threads[i].name.as_deref())
            .filter(|n| !n.is_empty())
        {
            return name.to_string();
        }
        if tid == pid {
            return self.idx.process(source, pid).map_or_else(
                || format!("pid {pid}"),
                |i| self.cat.processes[i].program_basename(),
            );
        }
        match self.thread_numbers.get(&(source, tid)) {
            Some(n) => format!("THREAD {n}"),
            None => format!("THREAD tid {tid}"),
        }
    }

    fn thread_index(&self, source: u32, pid: i64, tid: i64) -> usize {
        if tid == pid {
            0
        } else {
            self.thread_numbers
                .get(&(source, tid))
                .copied()
                .unwrap_or(0)
        }
    }

    fn base_name(&mut self, key: &TrackKey, hint: &str) -> String {
        match *key {
            TrackKey::Thread(s, pid, tid) => {
                if tid < 0 {
                    "THREAD (unknown)".into()
                } else {
                    self.thread_name(s, pid, tid)
                }
            }
            TrackKey::Stream(_, _, id) => format!("STREAM [{id}]"),
            TrackKey::Queue(s, pid, agent, queue) => {
                let (label, n, ty) = self.agent_label(s, Some(agent));
                let numbers = self.queue_numbers.entry((s, pid, agent)).or_default();
                let next = numbers.len();
                let k = *numbers.entry(queue).or_insert(next);
                format!("COMPUTE {label} [{n}] QUEUE [{k}] {ty}")
            }
            TrackKey::CopyTo(s, pid, agent, tid) => {
                let (_, n, ty) = self.agent_label(s, Some(agent));
                let t = self.thread_index(s, pid, tid);
                format!("COPY to AGENT [{n}] THREAD [{t}] ({ty})")
            }
            TrackKey::Allocations(..) => "MEMORY ALLOCATIONS".into(),
            TrackKey::Samples(..) => hint.to_string(),
        }
    }

    fn key_process(key: &TrackKey) -> (u32, i64) {
        match *key {
            TrackKey::Thread(s, p, _)
            | TrackKey::Stream(s, p, _)
            | TrackKey::Queue(s, p, _, _)
            | TrackKey::CopyTo(s, p, _, _)
            | TrackKey::Samples(s, p, _)
            | TrackKey::Allocations(s, p) => (s, p),
        }
    }

    /// Creates lane `n` of `key`'s group and describes its track.
    fn new_lane(&mut self, out: &mut impl Write, key: &TrackKey, hint: &str) -> io::Result<usize> {
        let (source, pid) = Self::key_process(key);
        let parent = self.process_track(out, source, pid)?;
        let n = self.lanes.count(key);
        let uuid = fnv(format!("{key:?}/{}/lane{n}", self.guid(source)).as_bytes());
        let name = self.base_name(key, hint);
        let thread_ids = match key {
            TrackKey::Thread(_, pid, tid) if *tid >= 0 => {
                let ids = i32::try_from(*pid).ok().zip(i32::try_from(*tid).ok());
                if ids.is_none() && n == 0 {
                    self.wide_ids += 1;
                }
                ids
            }
            _ => None,
        };
        let d = match (thread_ids, n) {
            (Some((pid, tid)), 0) => TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(parent),
                thread: Some(ThreadDescriptor {
                    pid: Some(pid),
                    tid: Some(tid),
                    thread_name: Some(name),
                }),
                ..Default::default()
            },
            (_, 0) => TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(parent),
                name: Some(name),
                ..Default::default()
            },
            _ => TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(parent),
                name: Some(format!("{name} (overlap {n})")),
                ..Default::default()
            },
        };
        self.describe(out, d)?;
        let lane = self.lanes.add(key);
        self.lane_uuids.push(uuid);
        debug_assert_eq!(lane + 1, self.lane_uuids.len());
        Ok(lane)
    }

    fn first_lane(
        &mut self,
        out: &mut impl Write,
        key: &TrackKey,
        hint: &str,
    ) -> io::Result<usize> {
        match self.lanes.first(key) {
            Some(l) => Ok(l),
            None => self.new_lane(out, key, hint),
        }
    }

    /// The first lane of `key` on which a slice ending at `end` nests.
    fn lane_for(
        &mut self,
        out: &mut impl Write,
        key: &TrackKey,
        hint: &str,
        end: i64,
    ) -> io::Result<usize> {
        match self.lanes.place(key, end) {
            Slot::Lane(l) => Ok(l),
            Slot::New(_) => self.new_lane(out, key, hint),
        }
    }

    fn push_pending(&mut self, ts: i64, action: Action) {
        self.seq += 1;
        self.heap.push(Reverse((ts, Reverse(self.seq), action)));
    }

    /// Writes every pending end and counter change at or before `ts`.
    fn advance(&mut self, out: &mut impl Write, ts: i64) -> io::Result<()> {
        while let Some(Reverse((t, _, _))) = self.heap.peek() {
            if *t > ts {
                break;
            }
            let Reverse((t, _, action)) = self.heap.pop().expect("peeked");
            match action {
                Action::End(l) => {
                    self.lanes.close(l);
                    let uuid = self.lane_uuids[l];
                    self.enc.event(
                        out,
                        t,
                        uuid,
                        event_type::SLICE_END,
                        None,
                        None,
                        &NO_ANNOTATIONS,
                        None,
                    )?;
                }
                Action::Delta(c, d) => self.add_to_counter(out, c, t, d)?,
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn slice(
        &mut self,
        out: &mut impl Write,
        key: &TrackKey,
        hint: &str,
        start: i64,
        end: i64,
        name: &str,
        category: &str,
        ann: &Annotations,
        flow: Option<u64>,
    ) -> io::Result<()> {
        self.advance(out, start)?;
        let end = if end < start {
            self.negative_durations += 1;
            start
        } else {
            end
        };
        let lane = self.lane_for(out, key, hint, end)?;
        self.lanes.open(lane, end, ());
        let uuid = self.lane_uuids[lane];
        self.enc.event(
            out,
            start,
            uuid,
            event_type::SLICE_BEGIN,
            Some(name),
            Some(category),
            ann,
            flow,
        )?;
        self.push_pending(end, Action::End(lane));
        Ok(())
    }

    fn counter_track(
        &mut self,
        out: &mut impl Write,
        key: CounterKey,
        pmc_name: &str,
    ) -> io::Result<usize> {
        if let Some(&c) = self.counter_ids.get(&key) {
            return Ok(c);
        }
        let (source, pid, agent, unit, name) = match key {
            CounterKey::CopyBytes(s, p, a) => {
                let (l, n, t) = self.agent_label(s, Some(a));
                (
                    s,
                    p,
                    a,
                    unit::SIZE_BYTES,
                    format!("COPY BYTES to {l} [{n}] ({t})"),
                )
            }
            CounterKey::AllocBytes(s, p, a) => {
                let (l, n, t) = self.agent_label(s, Some(a));
                (
                    s,
                    p,
                    a,
                    unit::SIZE_BYTES,
                    format!("ALLOCATE BYTES on {l} [{n}] ({t})"),
                )
            }
            CounterKey::Pmc(s, p, a, _) => {
                let (l, n, _) = self.agent_label(s, Some(a));
                (s, p, a, unit::COUNT, format!("{l} [{n}] PMC {pmc_name}"))
            }
        };
        let _ = agent;
        let parent = self.process_track(out, source, pid)?;
        let uuid = fnv(format!("{key:?}/{}", self.guid(source)).as_bytes());
        self.describe(
            out,
            TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(parent),
                name: Some(name),
                counter: Some(CounterDescriptor { unit: Some(unit) }),
                ..Default::default()
            },
        )?;
        self.counters.push(CounterTrack { uuid, value: 0 });
        self.counter_ids.insert(key, self.counters.len() - 1);
        Ok(self.counters.len() - 1)
    }

    fn add_to_counter(
        &mut self,
        out: &mut impl Write,
        c: usize,
        ts: i64,
        delta: i128,
    ) -> io::Result<()> {
        let counter = &mut self.counters[c];
        counter.value = counter.value.saturating_add(delta);
        let (uuid, wide) = (counter.uuid, counter.value);
        let v = i64::try_from(wide).unwrap_or(if wide < 0 { i64::MIN } else { i64::MAX });
        if i128::from(v) != wide {
            self.clamped_counter_values += 1;
        }
        self.enc.counter(out, ts, uuid, CounterValue::Int(v))
    }

    /// The flow id of a group: FNV-1a of `flow/<guid>/<stack id>`.
    fn flow_id(&self, source: u32, stack_id: i64) -> u64 {
        let prefix = match self.flow_prefixes.get(source as usize) {
            Some(&p) => p,
            // Not in the catalog: the guid is empty, as `Writer::guid` says.
            None => fnv1a64(b"flow//", FNV_OFFSET),
        };
        fnv1a64(decimal(stack_id, &mut [0; 20]), prefix).max(1)
    }

    /// Writes every row of `chunk`, in time order.
    pub fn write_chunk(&mut self, out: &mut impl Write, chunk: &Chunk) -> io::Result<()> {
        let cols: Vec<Cols<'_>> = chunk
            .batches
            .iter()
            .map(|EventBatch { table, batch }| Cols::new(batch, *table))
            .collect();
        for (b, r) in chunk.time_order() {
            self.row(out, chunk.batches[b].table, &cols[b], r)?;
        }
        for (t, n) in chunk.rows_per_table() {
            self.report.add(t, n as u64);
        }
        Ok(())
    }

    pub(crate) fn row(
        &mut self,
        out: &mut impl Write,
        table: Table,
        c: &Cols<'_>,
        r: usize,
    ) -> io::Result<()> {
        // Taken for the row so that it can be passed along with `&mut self`; put back
        // for its buffers.
        let mut ann = std::mem::take(&mut self.ann);
        ann.clear();
        let written = self.row_with(out, table, c, r, &mut ann);
        self.ann = ann;
        written
    }

    fn row_with(
        &mut self,
        out: &mut impl Write,
        table: Table,
        c: &Cols<'_>,
        r: usize,
        ann: &mut Annotations,
    ) -> io::Result<()> {
        let source = c.source.value(r);
        let pid = oi(c.pid, r).unwrap_or(-1);
        let tid = oi(c.tid, r);
        let (start, end) = (c.start.value(r), c.end.value(r));
        let raw_cat = os(c.category, r).unwrap_or("");
        let stack_id = oi(c.stack_id, r);
        let annotate = self.opts.annotations;
        if annotate {
            // Unsigned, as times are; a negative one (crafted input) is written signed
            // rather than wrapped to a huge unsigned value.
            for (key, t) in [("begin_ns", start), ("end_ns", end)] {
                match u64::try_from(t) {
                    Ok(u) => ann.u(key, u),
                    Err(_) => ann.i(key, t),
                }
            }
            // Exact for every pair of i64 (widened; a difference past i64 saturates).
            let delta = (end as i128 - start as i128).clamp(i64::MIN as i128, i64::MAX as i128);
            ann.i("delta_ns", delta as i64);
        }
        match table {
            Table::Region | Table::Marker | Table::Sample => {
                let name = gs(c.name, r).unwrap_or("");
                let message = gs(c.message, r).filter(|m| !m.is_empty());
                let shown = message.unwrap_or(name);
                let category = output_category(raw_cat);
                if annotate {
                    ann.i("tid", tid.unwrap_or(-1));
                    ann.s("kind", raw_cat);
                    ann.s("operation", name);
                    if let Some(s) = stack_id {
                        ann.i("corr_id", s);
                    }
                    if let Some(p) = oi(c.parent_stack_id, r) {
                        ann.i("ancestor_id", p);
                    }
                }
                if table == Table::Sample {
                    let key = match tid {
                        Some(t) => TrackKey::Thread(source, pid, t),
                        None => TrackKey::Samples(source, pid, gi(c.track_id, r).unwrap_or(-1)),
                    };
                    self.advance(out, start)?;
                    let lane = self.first_lane(out, &key, name)?;
                    let uuid = self.lane_uuids[lane];
                    return self.enc.event(
                        out,
                        start,
                        uuid,
                        event_type::INSTANT,
                        Some(shown),
                        Some(category),
                        ann,
                        None,
                    );
                }
                if annotate && self.opts.annotate_args {
                    if let Some(args) = gs(c.args, r) {
                        ann.s("args", args);
                    }
                }
                let launched = gi(c.launched, r).unwrap_or(0);
                let flow = stack_id
                    .filter(|_| launched > 0)
                    .map(|s| self.flow_id(source, s));
                let key = TrackKey::Thread(source, pid, tid.unwrap_or(-1));
                self.slice(out, &key, "", start, end, shown, category, ann, flow)
            }
            Table::KernelDispatch => {
                let agent = gi(c.agent_id, r);
                let queue = gi(c.queue_id, r).unwrap_or(0);
                let stream = gi(c.stream_id, r).unwrap_or(0);
                let kernel = gs(c.kernel_name, r).unwrap_or("");
                let region = gs(c.region_name, r).filter(|s| !s.is_empty());
                let name = match region {
                    Some(rn) if self.opts.kernel_rename => rn,
                    _ => kernel,
                };
                if annotate {
                    ann.s("kind", raw_cat);
                    self.agent_arg(ann, "agent", source, agent);
                    if let Some(s) = stack_id {
                        ann.i("corr_id", s);
                    }
                    ann.i("queue", queue);
                    ann.i("tid", tid.unwrap_or(-1));
                    ann.i("kernel_id", gi(c.kernel_id, r).unwrap_or(-1));
                    ann.i("dispatch_id", gi(c.dispatch_id, r).unwrap_or(-1));
                    let size = |a: Option<&Int64Array>| gi(a, r).unwrap_or(0);
                    ann.i("Scratch_Size", size(c.private_segment_size));
                    ann.i("LDS_Block_Size", size(c.group_segment_size));
                    let dims = |ann: &mut Annotations, name, d: &[Option<&Int64Array>; 3]| {
                        let (x, y, z) = (size(d[0]), size(d[1]), size(d[2]));
                        match x.checked_mul(y).and_then(|xy| xy.checked_mul(z)) {
                            Some(n) => ann.fmt(name, format_args!("{n} (x={x}, y={y}, z={z})")),
                            // The product does not fit in 64 bits: show the factors only.
                            None => ann.fmt(name, format_args!("(x={x}, y={y}, z={z})")),
                        }
                    };
                    dims(ann, "workgroup_size", &c.workgroup);
                    dims(ann, "grid_size", &c.grid);
                    ann.i("stream_id", stream);
                }
                let flow = stack_id
                    .filter(|_| c.has_launcher.is_some_and(|l| l.is_valid(r) && l.value(r)))
                    .map(|s| self.flow_id(source, s));
                let key = if self.opts.group_by_queue {
                    TrackKey::Queue(source, pid, agent.unwrap_or(-1), queue)
                } else {
                    TrackKey::Stream(source, pid, stream)
                };
                self.slice(
                    out,
                    &key,
                    "",
                    start,
                    end,
                    name,
                    "kernel_dispatch",
                    ann,
                    flow,
                )
            }
            Table::MemoryCopy => {
                let name = gs(c.name, r).unwrap_or("");
                let dst = gi(c.dst_agent_id, r);
                let src_agent = gi(c.src_agent_id, r);
                let size = gi(c.size, r).unwrap_or(0);
                let stream = gi(c.stream_id, r).unwrap_or(0);
                if annotate {
                    ann.s("kind", raw_cat);
                    ann.s("operation", name);
                    self.agent_arg(ann, "src_agent", source, src_agent);
                    self.agent_arg(ann, "dst_agent", source, dst);
                    ann.i("copy_bytes", size);
                    if let Some(s) = stack_id {
                        ann.i("corr_id", s);
                    }
                    ann.i("tid", tid.unwrap_or(-1));
                    ann.i("stream_id", stream);
                }
                let flow = stack_id
                    .filter(|_| c.has_launcher.is_some_and(|l| l.is_valid(r) && l.value(r)))
                    .map(|s| self.flow_id(source, s));
                let key = if self.opts.group_by_queue {
                    TrackKey::CopyTo(source, pid, dst.unwrap_or(-1), tid.unwrap_or(-1))
                } else {
                    TrackKey::Stream(source, pid, stream)
                };
                self.slice(out, &key, "", start, end, name, "memory_copy", ann, flow)?;
                // In-flight bytes towards the destination agent.
                let c = self.counter_track(
                    out,
                    CounterKey::CopyBytes(source, pid, dst.unwrap_or(-1)),
                    "",
                )?;
                self.add_to_counter(out, c, start, i128::from(size))?;
                self.push_pending(end.max(start), Action::Delta(c, -i128::from(size)));
                Ok(())
            }
            Table::MemoryAllocation => {
                let kind = gs(c.kind, r).unwrap_or("");
                let level = gs(c.level, r);
                let agent = gi(c.agent_id, r);
                let address = gi(c.address, r);
                let size = gi(c.size, r).unwrap_or(0);
                let op = allocation_operation(kind, level);
                let category = if level == Some("SCRATCH") {
                    "scratch_memory"
                } else {
                    "memory_allocation"
                };
                if annotate {
                    ann.s("kind", raw_cat);
                    ann.s("operation", &op);
                    if agent.is_some() {
                        self.agent_arg(ann, "agent", source, agent);
                    }
                    if let Some(a) = address {
                        ann.fmt("address", format_args!("0x{:016x}", a as u64));
                    }
                    ann.i("size", size);
                    if let Some(s) = stack_id {
                        ann.i("corr_id", s);
                    }
                    ann.i("tid", tid.unwrap_or(-1));
                }
                let key = TrackKey::Allocations(source, pid);
                self.slice(out, &key, "", start, end, &op, category, ann, None)?;
                if level != Some("SCRATCH") {
                    self.track_allocated_bytes(
                        out, source, pid, kind, agent, address, size, start,
                    )?;
                }
                Ok(())
            }
            Table::PmcValue => {
                let agent = gi(c.agent_id, r).unwrap_or(-1);
                let pmc = gi(c.pmc_id, r).unwrap_or(-1);
                let name = gs(c.counter_name, r).unwrap_or("");
                let value = match c.value {
                    Some(v) if v.is_valid(r) => v.value(r),
                    _ => 0.0,
                };
                let event = oi(c.event_id, r);
                let c = self.counter_track(out, CounterKey::Pmc(source, pid, agent, pmc), name)?;
                // Dimension instances of one (event, counter) arrive together: sum them
                // into one point at the dispatch start.
                match self.pmc_pending.get_mut(&c) {
                    Some(p) if p.source == source && p.event == event && event.is_some() => {
                        p.sum += value;
                        Ok(())
                    }
                    _ => {
                        let prev = self.pmc_pending.insert(
                            c,
                            PmcPoint {
                                source,
                                event,
                                ts: start,
                                sum: value,
                            },
                        );
                        match prev {
                            Some(p) => self.enc.counter(
                                out,
                                p.ts,
                                self.counters[c].uuid,
                                CounterValue::Double(p.sum),
                            ),
                            None => Ok(()),
                        }
                    }
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn track_allocated_bytes(
        &mut self,
        out: &mut impl Write,
        source: u32,
        pid: i64,
        kind: &str,
        agent: Option<i64>,
        address: Option<i64>,
        size: i64,
        ts: i64,
    ) -> io::Result<()> {
        let Some(address) = address else {
            return Ok(());
        };
        match kind {
            "ALLOC" => {
                let Some(agent) = agent else { return Ok(()) };
                let c = self.counter_track(out, CounterKey::AllocBytes(source, pid, agent), "")?;
                if let Some((old_c, old_size)) =
                    self.live_allocs.insert((source, pid, address), (c, size))
                {
                    // Reused address without a free: the old block is gone.
                    self.add_to_counter(out, old_c, ts, -i128::from(old_size))?;
                }
                self.add_to_counter(out, c, ts, i128::from(size))
            }
            "FREE" => match self.live_allocs.remove(&(source, pid, address)) {
                Some((c, sz)) => self.add_to_counter(out, c, ts, -i128::from(sz)),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// Pending slice ends, counter changes and PMC points not yet written.
    pub(crate) fn pending(&self) -> usize {
        self.heap.len() + self.pmc_pending.len()
    }

    /// Writes everything still pending.
    pub fn finish(&mut self, out: &mut impl Write) -> io::Result<()> {
        self.advance(out, i64::MAX)?;
        if self.enc.written == 0 {
            // No event at all: describe the processes, so the file is a trace that opens
            // (and shows what was profiled) rather than an empty file.
            let procs: Vec<(u32, i64)> = self
                .cat
                .processes
                .iter()
                .map(|p| (p.source, p.pid))
                .collect();
            for (source, pid) in procs {
                self.process_track(out, source, pid)?;
            }
            if self.enc.written == 0 {
                let d = TrackDescriptor {
                    uuid: Some(fnv(b"rocpd-rs/no-events")),
                    name: Some("no events".into()),
                    ..Default::default()
                };
                self.describe(out, d)?;
            }
            self.report
                .notes
                .push("no events to write: the trace holds only the process descriptions".into());
        }
        let mut points: Vec<(usize, PmcPoint)> = self.pmc_pending.drain().collect();
        points.sort_by_key(|(c, p)| (p.ts, *c));
        for (c, p) in points {
            self.enc.counter(
                out,
                p.ts,
                self.counters[c].uuid,
                CounterValue::Double(p.sum),
            )?;
        }
        if self.lanes.extra_slices() > 0 {
            let lanes = self.lanes.extra_lanes();
            self.report.notes.push(format!(
                "{} slices overlapped a slice on their track without nesting in it; they were put on {lanes} extra \"(overlap N)\" tracks",
                self.lanes.extra_slices()
            ));
        }
        if self.wide_ids > 0 {
            self.report.notes.push(format!(
                "{} processes or threads have a pid or tid beyond Perfetto's 32 bits; they are shown as named tracks",
                self.wide_ids
            ));
        }
        if self.clamped_counter_values > 0 {
            self.report.notes.push(format!(
                "{} byte-counter values passed the 64-bit range (sizes from the input); they were written clamped to it",
                self.clamped_counter_values
            ));
        }
        if self.negative_durations > 0 {
            self.report.notes.push(format!(
                "{} events ended before they started; they are drawn with zero duration",
                self.negative_durations
            ));
        }
        self.report.bytes = self.enc.written;
        Ok(())
    }
}
