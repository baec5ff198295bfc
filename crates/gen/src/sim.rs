//! The simulation of one profiled process: threads issuing HIP/HSA/ROCTx/RCCL
//! calls, the kernels and copies they launch on GPU queues and copy engines,
//! allocations, PMC values and periodic samples, written as RocPD v3 rows.
//!
//! Facts followed (rocprofv3's conventions, docs/notes/rocpd-reference.md
//! §3.2): region id = internal correlation id; `rocpd_event.stack_id` =
//! internal correlation id, `parent_stack_id` = ancestor (for kernels and
//! copies: the launching call), `correlation_id` = external id; zero-length
//! API records become samples on a per-(thread, category) track; ROCTx text
//! lives in the event's `extdata.message`; kernel dispatch id = dispatch_id.
//!
//! Row order is deliberately not time order: API records are written when
//! they complete, thread by thread, and GPU activity is flushed per iteration
//! grouped by queue / copy engine.

use crate::db::{AllocRow, CopyRow, DispatchRow, EventRow, PmcDef, Writer};
use crate::layout::{NodeInfo, ProcInfo};
use crate::names::*;
use crate::rng::{mix64, Rng};
use crate::GenConfig;
use anyhow::Result;
use std::collections::HashMap;

/// The string table: ids assigned from 1 in first-use order.
#[derive(Default)]
struct Interner {
    map: HashMap<String, i64>,
    list: Vec<String>,
}

impl Interner {
    fn id(&mut self, s: &str) -> i64 {
        if let Some(id) = self.map.get(s) {
            return *id;
        }
        self.list.push(s.to_string());
        let id = self.list.len() as i64;
        self.map.insert(s.to_string(), id);
        id
    }
}

#[derive(Clone, Copy)]
enum CounterKind {
    Waves,
    Valu,
    Grbm,
    TccHit,
}

struct Gpu {
    agent_id: i64,
    /// Kernel symbol id per template index.
    kernel_ids: Vec<i64>,
    counters: Vec<(i64, CounterKind)>,
    /// When the copy engine is next free.
    engine_end: i64,
    next_addr: i64,
    addr_base: i64,
}

struct Queue {
    id: i64,
    gpu: usize,
    last_start: i64,
    last_end: i64,
    has_prev: bool,
    scratch_size: Option<i64>,
}

struct Stream {
    id: i64,
    queue: usize,
    handle: String,
}

struct OpenRange {
    corr: i64,
    start: i64,
    msg: &'static str,
    name_sid: i64,
}

/// An API call in progress.
struct Call {
    corr: i64,
    th: usize,
    start: i64,
    cat: &'static str,
    name: &'static str,
    parent: i64,
    ext: i64,
}

struct PendingKernel {
    dispatch_id: i64,
    corr: i64,
    ext: i64,
    tid: i64,
    gpu: usize,
    queue: usize,
    stream: usize,
    tmpl: usize,
    start: i64,
    end: i64,
    region_name_id: Option<i64>,
}

struct PendingCopy {
    corr: i64,
    ext: i64,
    tid: i64,
    start: i64,
    end: i64,
    name: &'static str,
    dst_agent: i64,
    dst_address: i64,
    src_agent: i64,
    src_address: i64,
    size: i64,
    queue_id: Option<i64>,
    stream_id: Option<i64>,
    region_name_id: Option<i64>,
}

struct PendingAlloc {
    corr: i64,
    ext: i64,
    row: AllocRow,
    category: &'static str,
}

enum Pending {
    Kernel(PendingKernel),
    Copy(PendingCopy),
    Alloc(PendingAlloc),
}

#[derive(Clone, Copy)]
enum Dir {
    H2D,
    D2H,
    D2D,
}

/// Generates and writes one process database's rows.
pub struct Sim<'w, 'c> {
    w: &'w mut Writer<'c>,
    rng: Rng,
    odd: bool,
    node: &'w NodeInfo,
    proc_: &'w ProcInfo,
    nid: i64,
    pid: i64,
    strings: Interner,
    msgs: Messages,
    kernels: Vec<KernelTemplate>,
    kernel_weight_total: u64,
    tids: Vec<i64>,
    cursor: Vec<i64>,
    ranges: Vec<Vec<OpenRange>>,
    cpu_agent: i64,
    gpus: Vec<Gpu>,
    queues: Vec<Queue>,
    streams: Vec<Stream>,
    tracks: Vec<(Option<i64>, i64, i64)>,
    live_allocs: Vec<(i64, i64)>,
    host_addr: i64,
    pending: Vec<(usize, Pending)>,
    next_corr: i64,
    next_event: i64,
    next_dispatch: i64,
    next_copy: i64,
    next_alloc: i64,
    next_sample: i64,
    next_arg: i64,
    next_pmc_event: i64,
    next_ext: i64,
    want_tie: bool,
    want_overlap: bool,
    cpu_freq_pmc: i64,
    freq_track: i64,
    next_freq_ts: i64,
    max_ts: i64,
}

/// A JSON string literal (quoted and escaped).
fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("string serialization cannot fail")
}

/// A JSON object of string values, keys in the given order.
fn json_obj(pairs: &[(&str, String)]) -> String {
    let body: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}:{}", json_str(k), json_str(v)))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// The short kernel name rocprofv3 calls "truncated": no return type, no
/// template arguments, no parameters, no namespaces.
fn truncated_name(display: &str) -> String {
    let mut s = display;
    if let Some(p) = s.find('(') {
        s = &s[..p];
    }
    if let Some(p) = s.find('<') {
        s = &s[..p];
    }
    let s = s.trim();
    let s = s.strip_prefix("void ").unwrap_or(s);
    s.rsplit("::").next().unwrap_or(s).trim().to_string()
}

const HOST_ADDR_BASE: i64 = 0x7f2c_4000_0000;
const DEV_ADDR_BASE: i64 = 0x7ee0_0000_0000;

impl<'w, 'c> Sim<'w, 'c> {
    /// Set up the process: strings, node, agents, queues, streams, code
    /// objects, kernel symbols, counters and threads.
    pub fn new(
        cfg: &GenConfig,
        node: &'w NodeInfo,
        proc_: &'w ProcInfo,
        w: &'w mut Writer<'c>,
    ) -> Result<Self> {
        let rng = Rng::new(cfg.seed, 0x7072_6f63_0000_0000 ^ proc_.pid as u64);
        let kernels = kernel_templates(cfg.odd_names);
        let kernel_weight_total = kernels.iter().map(|k| k.weight).sum();
        let threads = cfg.threads_per_process as usize;
        let tids: Vec<i64> = (0..threads)
            .map(|i| {
                let i = i as i64;
                if i <= 36 {
                    proc_.pid + i
                } else {
                    500_000 + i64::from(proc_.rank) * 4096 + i
                }
            })
            .collect();
        let mut sim = Sim {
            w,
            rng,
            odd: cfg.odd_names,
            node,
            proc_,
            nid: node.id,
            pid: proc_.pid,
            strings: Interner::default(),
            msgs: Messages::new(cfg.odd_names),
            kernels,
            kernel_weight_total,
            cursor: vec![proc_.base_ts; threads],
            ranges: (0..threads).map(|_| Vec::new()).collect(),
            tids,
            cpu_agent: 0,
            gpus: Vec::new(),
            queues: Vec::new(),
            streams: Vec::new(),
            tracks: Vec::new(),
            live_allocs: Vec::new(),
            host_addr: HOST_ADDR_BASE,
            pending: Vec::new(),
            next_corr: 1,
            next_event: 1,
            next_dispatch: 1,
            next_copy: 1,
            next_alloc: 1,
            next_sample: 1,
            next_arg: 1,
            next_pmc_event: 1,
            next_ext: 0,
            want_tie: false,
            want_overlap: false,
            cpu_freq_pmc: 1,
            freq_track: 0,
            next_freq_ts: proc_.base_ts,
            max_ts: proc_.base_ts,
        };
        sim.setup(cfg)?;
        Ok(sim)
    }

    fn setup(&mut self, cfg: &GenConfig) -> Result<()> {
        // Strings that every database has, in a fixed order.
        self.strings.id("");
        for cat in [
            CAT_HIP,
            CAT_HSA_CORE,
            CAT_HSA_AMD,
            CAT_MARKER,
            CAT_RCCL,
            CAT_KERNEL,
            CAT_COPY,
            CAT_ALLOC,
            CAT_SCRATCH,
            CAT_CPU_FREQ,
        ] {
            self.strings.id(cat);
        }
        for m in self.msgs.all() {
            self.strings.id(m);
        }
        self.w.node(self.node)?;

        // Threads.
        for &tid in &self.tids {
            self.w.thread(self.nid, self.proc_.ppid, self.pid, tid)?;
        }

        // Agents: every agent of the node (CPU first, then GPUs).
        let g = cfg.gpus_per_node;
        let handle_base: i64 = 0x5610_7a00_0000 + i64::from(self.node.index) * 0x10_0000;
        let cpu_name = "AMD EPYC 9654 96-Core Processor";
        let cpu_ext = format!(
            "{{\"node_id\":0,\"logical_node_id\":0,\"logical_node_type_id\":0,\"id\":{{\"handle\":{}}},\"type\":1,\"cpu_cores_count\":192,\"simd_count\":0,\"cu_count\":0,\"wave_front_size\":0,\"name\":{},\"vendor_name\":\"CPU\",\"product_name\":{}}}",
            handle_base,
            json_str(cpu_name),
            json_str(cpu_name)
        );
        self.w.agent(
            0,
            self.nid,
            self.pid,
            "CPU",
            [0, 0, 0],
            0,
            [cpu_name, "", "CPU", cpu_name, cpu_name],
            &cpu_ext,
        )?;
        let product = "AMD Instinct MI300X";
        for i in 0..i64::from(g) {
            let abs = i + 1;
            let uuid =
                (mix64(cfg.seed ^ (u64::from(self.node.index) << 8) ^ abs as u64) >> 1) as i64;
            let ext = format!(
                "{{\"node_id\":{abs},\"logical_node_id\":{abs},\"logical_node_type_id\":{i},\"id\":{{\"handle\":{}}},\"type\":2,\"cpu_cores_count\":0,\"simd_count\":1216,\"cu_count\":304,\"wave_front_size\":64,\"max_waves_per_simd\":8,\"gfx_target_version\":90402,\"gpu_id\":{},\"name\":\"gfx942\",\"vendor_name\":\"AMD\",\"product_name\":{}}}",
                handle_base + abs * 0x2a8,
                40_000 + abs * 1_117,
                json_str(product)
            );
            self.w.agent(
                abs,
                self.nid,
                self.pid,
                "GPU",
                [abs, abs, i],
                uuid,
                ["gfx942", "aqua_vanjaram", "AMD", product, product],
                &ext,
            )?;
        }

        // GPUs this process uses: its primary device and, when there is one,
        // the next device (peer copies, second stream pair).
        let primary = self.proc_.local_rank % g;
        let mut used = vec![primary];
        if g >= 2 {
            used.push((primary + 1) % g);
        }
        let queue_base: i64 = 0x7f3a_0000_1000 + self.rng.below(0x4000) as i64 * 0x10_0000;
        let mut n_queue = 0i64;
        let mut next_co = 1i64;
        let mut next_kernel = 1i64;
        for (gi, &dev) in used.iter().enumerate() {
            let agent_id = i64::from(dev) + 1;
            // Two HSA queues per used GPU.
            for _ in 0..2 {
                let id = queue_base + n_queue * 0x1000;
                n_queue += 1;
                self.w
                    .queue(id, self.nid, self.pid, &format!("Queue {n_queue}"))?;
                self.queues.push(Queue {
                    id,
                    gpu: gi,
                    last_start: 0,
                    last_end: 0,
                    has_prev: false,
                    scratch_size: None,
                });
            }
            // Code objects: the application's library (FILE) and the
            // runtime's embedded blit/odd kernels (MEMORY).
            let file_co = next_co;
            let load_base = 0x7f3b_0000_0000 + i64::from(dev) * 0x1000_0000;
            self.w.code_object(
                file_co,
                self.nid,
                self.pid,
                agent_id,
                "file:///opt/rocm-7.1.0/lib/libtorch_hip.so#offset=26222592&size=8937472",
                [load_base, 8_937_472, load_base],
                "FILE",
            )?;
            let mem_co = next_co + 1;
            let mem_base = load_base + 0x0100_0000;
            self.w.code_object(
                mem_co,
                self.nid,
                self.pid,
                agent_id,
                &format!(
                    "memory://{}#offset=0x{:x}&size=262144",
                    self.pid,
                    0x5591_0000_0000i64 + mem_base % 0x1_0000_0000
                ),
                [mem_base, 262_144, mem_base],
                "MEMORY",
            )?;
            next_co += 2;
            let mut kernel_ids = Vec::with_capacity(self.kernels.len());
            for (ti, t) in self.kernels.iter().enumerate() {
                let id = next_kernel;
                next_kernel += 1;
                let in_memory = ti >= 10 || t.kernel_name.starts_with("__amd_rocclr");
                let co = if in_memory { mem_co } else { file_co };
                let kernel_object = load_base + 0x4_0000 + id * 0x140;
                let extdata = format!(
                    "{{\"formatted_kernel_name\":{},\"demangled_kernel_name\":{},\"truncated_kernel_name\":{},\"kernel_address\":{{\"handle\":{}}},\"kernel_code_entry_byte_offset\":256}}",
                    json_str(&t.display_name),
                    json_str(&t.display_name),
                    json_str(&truncated_name(&t.display_name)),
                    kernel_object + 0x100
                );
                let kernarg = 24 + (t.kernel_name.len() as i64 % 31) * 8;
                self.w.kernel_symbol(
                    id,
                    self.nid,
                    self.pid,
                    co,
                    t,
                    kernel_object,
                    kernarg,
                    &extdata,
                )?;
                kernel_ids.push(id);
            }
            // Counters collected on this GPU.
            let defs: [(i64, &str, &str, &str, &str, CounterKind); 4] = [
                (
                    4,
                    "SQ_WAVES",
                    "SQ",
                    "",
                    "Count number of waves sent to SQs. (per-simd, emulated, global)",
                    CounterKind::Waves,
                ),
                (
                    26,
                    "SQ_INSTS_VALU",
                    "SQ",
                    "",
                    "Number of VALU instructions issued. (per-simd, emulated)",
                    CounterKind::Valu,
                ),
                (
                    0,
                    "GRBM_COUNT",
                    "GRBM",
                    "",
                    "Tie High - Count Number of Clocks",
                    CounterKind::Grbm,
                ),
                (
                    -1,
                    "TCC_HIT_sum",
                    "",
                    "reduce(TCC_HIT,sum)",
                    "Number of cache hits. Sum over TCC instances.",
                    CounterKind::TccHit,
                ),
            ];
            let mut counters = Vec::new();
            for (slot, (code, name, block, expr, desc, kind)) in defs.into_iter().enumerate() {
                let id = agent_id * 256 + slot as i64 + 1;
                self.w.pmc(
                    self.nid,
                    self.pid,
                    &PmcDef {
                        id,
                        agent_id,
                        target_arch: "GPU",
                        event_code: (code >= 0).then_some(code),
                        name,
                        symbol: name,
                        description: desc,
                        component: "rocm",
                        units: "",
                        block,
                        expression: expr,
                        is_derived: !expr.is_empty(),
                    },
                )?;
                counters.push((id, kind));
            }
            self.gpus.push(Gpu {
                agent_id,
                kernel_ids,
                counters,
                engine_end: 0,
                next_addr: DEV_ADDR_BASE + i64::from(dev) * 0x10_0000_0000,
                addr_base: DEV_ADDR_BASE + i64::from(dev) * 0x10_0000_0000,
            });
        }

        // Streams: the default stream and three more, spread over the
        // queues of the used GPUs.
        let stream_base: i64 = 0x5591_2c40_0000 + self.rng.below(0x1_0000) as i64 * 0x1000;
        let nq = self.queues.len();
        for s in 0..4usize {
            let (id, name, handle) = if s == 0 {
                (0, "Default Stream".to_string(), "0".to_string())
            } else {
                let h = stream_base + s as i64 * 0x200;
                (h, format!("Stream {s}"), format!("0x{h:x}"))
            };
            self.w.stream(id, self.nid, self.pid, &name)?;
            self.streams.push(Stream {
                id,
                queue: s % nq,
                handle,
            });
        }

        // rocprof-sys style CPU frequency counter and its track.
        self.cpu_freq_pmc = 1;
        self.w.pmc(
            self.nid,
            self.pid,
            &PmcDef {
                id: self.cpu_freq_pmc,
                agent_id: self.cpu_agent,
                target_arch: "CPU",
                event_code: None,
                name: "cpu_frequency",
                symbol: "CPU frequency",
                description: "CPU core frequency",
                component: "rocprof-sys",
                units: "MHz",
                block: "",
                expression: "",
                is_derived: false,
            },
        )?;
        self.freq_track = self.track(None, CPU_FREQ_TRACK)?;
        Ok(())
    }

    // ---- small helpers ----------------------------------------------------

    fn sid(&mut self, s: &str) -> i64 {
        self.strings.id(s)
    }

    fn track(&mut self, tid: Option<i64>, name: &str) -> Result<i64> {
        let name_id = self.sid(name);
        if let Some(t) = self
            .tracks
            .iter()
            .find(|(t, n, _)| *t == tid && *n == name_id)
        {
            return Ok(t.2);
        }
        let id = self.tracks.len() as i64 + 1;
        self.w.track(id, self.nid, self.pid, tid, name_id)?;
        self.tracks.push((tid, name_id, id));
        Ok(id)
    }

    fn advance(&mut self, th: usize, lo: i64, hi: i64) {
        let d = self.rng.range(lo, hi);
        self.cursor[th] += d;
    }

    fn ext_id(&mut self) -> i64 {
        if self.rng.percent(12) {
            self.next_ext += 1;
            self.next_ext
        } else {
            0
        }
    }

    fn note_ts(&mut self, ts: i64) {
        self.max_ts = self.max_ts.max(ts);
    }

    fn event(
        &mut self,
        category: &str,
        stack_id: i64,
        parent: i64,
        ext: i64,
        async_op: bool,
        extdata: &str,
    ) -> Result<i64> {
        let id = self.next_event;
        self.next_event += 1;
        let category_id = self.sid(category);
        let js = if async_op { Some("{}") } else { None };
        self.w.event(&EventRow {
            id,
            category_id,
            stack_id,
            parent_stack_id: parent,
            correlation_id: ext,
            call_stack: js,
            line_info: js,
            extdata,
        })?;
        Ok(id)
    }

    fn innermost_range_name(&self, th: usize) -> Option<i64> {
        self.ranges[th].last().map(|r| r.name_sid)
    }

    // ---- API calls --------------------------------------------------------

    fn begin_at(
        &mut self,
        th: usize,
        start: i64,
        cat: &'static str,
        name: &'static str,
        parent: i64,
        ext: i64,
    ) -> Call {
        let corr = self.next_corr;
        self.next_corr += 1;
        Call {
            corr,
            th,
            start,
            cat,
            name,
            parent,
            ext,
        }
    }

    fn begin(&mut self, th: usize, cat: &'static str, name: &'static str, parent: i64) -> Call {
        let ext = if cat == CAT_HIP { self.ext_id() } else { 0 };
        let start = self.cursor[th];
        self.begin_at(th, start, cat, name, parent, ext)
    }

    /// Finish a call: a region (or, when zero-length and `sample_if_zero`, a
    /// sample on the thread's category track) plus its event and arguments.
    fn end_call(
        &mut self,
        call: Call,
        end: i64,
        extdata: &str,
        args: &[(&str, &str, String, String)],
        sample_if_zero: bool,
    ) -> Result<()> {
        let tid = self.tids[call.th];
        let event_id = self.event(call.cat, call.corr, call.parent, call.ext, false, extdata)?;
        if end == call.start && sample_if_zero {
            let track = self.track(Some(tid), call.cat)?;
            let id = self.next_sample;
            self.next_sample += 1;
            self.w.sample(id, track, call.start, event_id)?;
        } else {
            let name_id = self.sid(call.name);
            self.w.region(
                call.corr, self.nid, self.pid, tid, call.start, end, name_id, event_id,
            )?;
        }
        for (pos, (ty, name, value, ext)) in args.iter().enumerate() {
            let id = self.next_arg;
            self.next_arg += 1;
            self.w
                .arg(id, event_id, pos as i64, ty, name, value, ext.as_str())?;
        }
        self.cursor[call.th] = self.cursor[call.th].max(end);
        self.note_ts(end);
        Ok(())
    }

    /// A simple call of `lo..=hi` ns on thread `th`.
    fn simple(
        &mut self,
        th: usize,
        cat: &'static str,
        name: &'static str,
        lo: i64,
        hi: i64,
    ) -> Result<()> {
        let call = self.begin(th, cat, name, 0);
        let end = call.start + self.rng.range(lo, hi);
        self.end_call(call, end, "{}", &[], true)
    }

    /// `hipGetDevice`: usually 1-2 µs; sometimes zero-length, stored as a
    /// sample (rocprofv3 style) or, rarely, as a zero-length region.
    fn get_device(&mut self, th: usize, zero_permille: u64, as_region: bool) -> Result<()> {
        let call = self.begin(th, CAT_HIP, "hipGetDevice", 0);
        let end = if self.rng.permille(zero_permille) {
            call.start
        } else {
            call.start + self.rng.range(1_000, 2_000)
        };
        self.end_call(call, end, "{}", &[], !as_region)
    }

    fn message_ext(msg: &str) -> String {
        format!("{{\"message\":{}}}", json_str(msg))
    }

    fn push(&mut self, th: usize, msg: &'static str) {
        let corr = self.next_corr;
        self.next_corr += 1;
        let start = self.cursor[th];
        let name_sid = self.sid(msg);
        self.ranges[th].push(OpenRange {
            corr,
            start,
            msg,
            name_sid,
        });
        self.advance(th, 1_000, 3_000);
    }

    fn pop(&mut self, th: usize) -> Result<()> {
        self.advance(th, 1_000, 2_000);
        let r = self.ranges[th].pop().expect("pop without push");
        let call = Call {
            corr: r.corr,
            th,
            start: r.start,
            cat: CAT_MARKER,
            name: ROCTX_THREAD_RANGE,
            parent: 0,
            ext: 0,
        };
        let end = self.cursor[th];
        self.end_call(call, end, &Self::message_ext(r.msg), &[], true)
    }

    fn mark(&mut self, th: usize, msg: &'static str) -> Result<()> {
        let call = self.begin(th, CAT_MARKER, ROCTX_MARK, 0);
        let start = call.start;
        self.end_call(call, start, &Self::message_ext(msg), &[], true)?;
        self.advance(th, 500, 1_500);
        Ok(())
    }

    // ---- GPU work ---------------------------------------------------------

    fn pick_kernel(&mut self) -> usize {
        let mut r = self.rng.below(self.kernel_weight_total);
        for (i, k) in self.kernels.iter().enumerate() {
            if r < k.weight {
                return i;
            }
            r -= k.weight;
        }
        0
    }

    /// `hipLaunchKernel` on `stream`, launching exactly one dispatch.
    fn launch(&mut self, th: usize, stream: usize, tmpl: Option<usize>, parent: i64) -> Result<()> {
        let t = match tmpl {
            Some(t) if t < self.kernels.len() => t,
            _ => self.pick_kernel(),
        };
        let call = self.begin(th, CAT_HIP, "hipLaunchKernel", parent);
        let api_dur = if self.rng.percent(5) {
            self.rng.range(20_000, 45_000)
        } else {
            self.rng.range(4_000, 15_000)
        };
        let api_end = call.start + api_dur;
        let ready = call.start + self.rng.range(2_000, 12_000);
        let base = self.kernels[t].dur_ns;
        // Some zero-duration kernels: ~1% at random plus every 40th dispatch.
        let mut dur = if self.rng.permille(10) || self.next_dispatch % 40 == 7 {
            0
        } else {
            self.rng.jitter(base, 0.8, 1.25).clamp(5_000, 5_000_000)
        };
        let qi = self.streams[stream].queue;
        // Ties and partial overlaps happen at random, and are also forced
        // now and then (at the next launch where they are possible) so that
        // even small databases have some.
        if self.next_dispatch % 48 == 20 {
            self.want_tie = true;
        }
        if self.next_dispatch % 32 == 5 {
            self.want_overlap = true;
        }
        let roll = self.rng.below(100);
        let q = &self.queues[qi];
        let (start, end);
        let can_tie = q.has_prev && q.last_start > call.start + 1_000;
        let can_overlap = q.has_prev && q.last_end > ready && q.last_end - q.last_start > 4_000;
        if can_tie && (roll < 2 || self.want_tie) {
            // Exact tie with the previous kernel on this queue.
            self.want_tie = false;
            start = q.last_start;
            end = q.last_end;
        } else if can_overlap && (roll < 7 || self.want_overlap) {
            // Partial overlap with the previous kernel (firmware timestamps).
            self.want_overlap = false;
            let ov = self.rng.range(500, (q.last_end - q.last_start) / 2);
            start = (q.last_end - ov).max(ready).max(q.last_start + 1);
            dur = dur
                .max(5_000)
                .max(q.last_end - start + 1_000)
                .min(5_000_000);
            end = start + dur;
        } else {
            let gap = if self.rng.percent(10) {
                0
            } else {
                self.rng.range(500, 3_000)
            };
            start = ready.max(q.last_end + gap);
            end = start + dur;
        }
        let q = &mut self.queues[qi];
        q.last_start = start;
        q.last_end = q.last_end.max(end);
        q.has_prev = true;
        let gpu = q.gpu;
        let queue_scratch = q.scratch_size;
        self.note_ts(end);

        let dispatch_id = self.next_dispatch;
        self.next_dispatch += 1;
        let tid = self.tids[th];
        let region_name_id = self.innermost_range_name(th);
        let k = &self.kernels[t];
        let (groups, wg, private) = (k.groups, k.workgroup, k.private_segment);
        // Host-side kernel stub address, as hipLaunchKernel receives it.
        let function_address = 0x5591_0a00_0000 + t as i64 * 0x40;
        self.pending.push((
            qi,
            Pending::Kernel(PendingKernel {
                dispatch_id,
                corr: call.corr,
                ext: call.ext,
                tid,
                gpu,
                queue: qi,
                stream,
                tmpl: t,
                start,
                end,
                region_name_id,
            }),
        ));

        // Scratch memory: allocated when a kernel needing it first runs on a
        // queue, occasionally released after a kernel completes.
        if private > 0 {
            let size = private * 64 * 2048;
            match queue_scratch {
                None => {
                    let s = (start - self.rng.range(2_000, 6_000)).max(call.start + 500);
                    let e = (s + self.rng.range(1_000, 3_000)).min(start.max(s));
                    let flags = if self.rng.percent(20) {
                        "{\"flags\":1}"
                    } else {
                        "{\"flags\":0}"
                    };
                    self.push_scratch(&call, tid, gpu, qi, "ALLOC", s, e, size, flags);
                    self.queues[qi].scratch_size = Some(size);
                }
                Some(sz) if self.rng.percent(10) => {
                    let s = end + self.rng.range(5_000, 20_000);
                    let e = s + self.rng.range(1_000, 4_000);
                    self.push_scratch(&call, tid, gpu, qi, "FREE", s, e, sz, "{\"flags\":0}");
                    self.queues[qi].scratch_size = None;
                }
                Some(_) => {}
            }
        }

        let s = &self.streams[stream];
        let stream_ext = format!("{{\"stream_id\":{}}}", s.id);
        let args = [
            (
                "const void*",
                "function_address",
                format!("0x{function_address:x}"),
                "{}".to_string(),
            ),
            (
                "dim3",
                "numBlocks",
                format!("{{{groups}, 1, 1}}"),
                "{}".to_string(),
            ),
            (
                "dim3",
                "dimBlocks",
                format!("{{{wg}, 1, 1}}"),
                "{}".to_string(),
            ),
            ("hipStream_t", "stream", s.handle.clone(), stream_ext),
        ];
        self.end_call(call, api_end, "{}", &args, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn push_scratch(
        &mut self,
        call: &Call,
        tid: i64,
        gpu: usize,
        qi: usize,
        kind: &'static str,
        start: i64,
        end: i64,
        size: i64,
        flags: &'static str,
    ) {
        self.note_ts(end);
        let row = AllocRow {
            id: 0,
            nid: self.nid,
            pid: self.pid,
            tid,
            agent_id: Some(self.gpus[gpu].agent_id),
            kind,
            level: "SCRATCH",
            start,
            end,
            address: None,
            size,
            queue_id: Some(self.queues[qi].id),
            stream_id: None,
            event_id: 0,
            extdata: flags,
        };
        self.pending.push((
            2000,
            Pending::Alloc(PendingAlloc {
                corr: call.corr,
                ext: call.ext,
                row,
                category: CAT_SCRATCH,
            }),
        ));
    }

    fn copy_duration(&self, dir: Dir, size: i64, peer: bool) -> i64 {
        // Bytes per ns: PCIe-ish for host copies, HBM for local device
        // copies, XGMI for peer copies.
        let bw = match dir {
            Dir::H2D | Dir::D2H => 24,
            Dir::D2D if peer => 48,
            Dir::D2D => 1_200,
        };
        1_500 + size / bw
    }

    fn host_address(&mut self, size: i64) -> i64 {
        let a = self.host_addr;
        self.host_addr += (size + 0xfff) & !0xfff;
        if self.host_addr > HOST_ADDR_BASE + 0x40_0000_0000 {
            self.host_addr = HOST_ADDR_BASE;
        }
        a
    }

    /// Next device address of a GPU: a bump allocator (2 MiB granularity)
    /// that wraps around in a 32 GiB window so addresses stay plausible in
    /// long runs.
    fn device_address(&mut self, gpu: usize, size: i64) -> i64 {
        const WINDOW: i64 = 0x8_0000_0000;
        let g = &mut self.gpus[gpu];
        let aligned = (size + 0x1f_ffff) & !0x1f_ffff;
        if g.next_addr + aligned > g.addr_base + WINDOW {
            g.next_addr = g.addr_base;
        }
        let a = g.next_addr;
        g.next_addr += aligned;
        a
    }

    /// `hipMemcpyAsync` on `stream`: one copy on the GPU's copy engine.
    fn memcpy_async(&mut self, th: usize, stream: usize, dir: Dir, size: i64) -> Result<()> {
        let call = self.begin(th, CAT_HIP, "hipMemcpyAsync", 0);
        let api_end = call.start + self.rng.range(5_000, 20_000);
        let qi = self.streams[stream].queue;
        let gpu = self.queues[qi].gpu;
        let (dst_gpu, peer) = match dir {
            Dir::D2D if self.gpus.len() > 1 && self.rng.percent(50) => {
                ((gpu + 1) % self.gpus.len(), true)
            }
            _ => (gpu, false),
        };
        let ready = call.start + self.rng.range(3_000, 10_000);
        let start = ready.max(self.gpus[dst_gpu].engine_end + self.rng.range(0, 2_000));
        let end = start + self.copy_duration(dir, size, peer);
        self.gpus[dst_gpu].engine_end = end;
        self.note_ts(end);
        let (name, dst_agent, src_agent, dst_address, src_address) = match dir {
            Dir::H2D => (
                COPY_H2D,
                self.gpus[gpu].agent_id,
                self.cpu_agent,
                self.device_address(gpu, size),
                self.host_address(size),
            ),
            Dir::D2H => (
                COPY_D2H,
                self.cpu_agent,
                self.gpus[gpu].agent_id,
                self.host_address(size),
                self.device_address(gpu, size),
            ),
            Dir::D2D => (
                COPY_D2D,
                self.gpus[dst_gpu].agent_id,
                self.gpus[gpu].agent_id,
                self.device_address(dst_gpu, size),
                self.device_address(gpu, size),
            ),
        };
        let queue_id = if self.rng.percent(50) {
            Some(self.queues[qi].id)
        } else {
            None
        };
        let s = &self.streams[stream];
        let stream_id = s.id;
        let handle = s.handle.clone();
        let region_name_id = self.innermost_range_name(th);
        self.pending.push((
            1000 + dst_gpu,
            Pending::Copy(PendingCopy {
                corr: call.corr,
                ext: call.ext,
                tid: self.tids[th],
                start,
                end,
                name,
                dst_agent,
                dst_address,
                src_agent,
                src_address,
                size,
                queue_id,
                stream_id: Some(stream_id),
                region_name_id,
            }),
        ));
        let args = [
            (
                "void*",
                "dst",
                format!("0x{dst_address:x}"),
                "{}".to_string(),
            ),
            (
                "const void*",
                "src",
                format!("0x{src_address:x}"),
                "{}".to_string(),
            ),
            ("size_t", "sizeBytes", size.to_string(), "{}".to_string()),
            (
                "hipStream_t",
                "stream",
                handle,
                format!("{{\"stream_id\":{stream_id}}}"),
            ),
        ];
        self.end_call(call, api_end, "{}", &args, true)
    }

    /// Blocking `hipMemcpy` device → host on the default stream, with the
    /// HSA calls the runtime makes inside it (nested regions whose ancestor
    /// is the hipMemcpy call).
    fn memcpy_sync_d2h(&mut self, th: usize, size: i64) -> Result<()> {
        let call = self.begin(th, CAT_HIP, "hipMemcpy", 0);
        let qi = self.streams[0].queue;
        let gpu = self.queues[qi].gpu;
        // Runtime enqueues the copy.
        let c1_start = call.start + self.rng.range(1_000, 3_000);
        let c1 = self.begin_at(
            th,
            c1_start,
            CAT_HSA_AMD,
            "hsa_amd_memory_async_copy",
            call.corr,
            0,
        );
        let c1_end = c1_start + self.rng.range(4_000, 10_000);
        self.end_call(c1, c1_end, "{}", &[], true)?;
        // The copy waits for the default stream's kernels and the engine.
        let start = (c1_end + 1_000)
            .max(self.queues[qi].last_end + 1_000)
            .max(self.gpus[gpu].engine_end + 500);
        let end = start + self.copy_duration(Dir::D2H, size, false);
        self.gpus[gpu].engine_end = end;
        // Runtime waits for completion.
        let c2_start = c1_end + self.rng.range(500, 1_500);
        let c2 = self.begin_at(
            th,
            c2_start,
            CAT_HSA_CORE,
            "hsa_signal_wait_scacquire",
            call.corr,
            0,
        );
        let c2_end = end + self.rng.range(500, 2_000);
        self.end_call(c2, c2_end, "{}", &[], true)?;
        let api_end = c2_end + self.rng.range(1_000, 3_000);
        let dst_address = self.host_address(size);
        let src_address = self.device_address(gpu, size);
        let region_name_id = self.innermost_range_name(th);
        self.pending.push((
            1000 + gpu,
            Pending::Copy(PendingCopy {
                corr: call.corr,
                ext: call.ext,
                tid: self.tids[th],
                start,
                end,
                name: COPY_D2H,
                dst_agent: self.cpu_agent,
                dst_address,
                src_agent: self.gpus[gpu].agent_id,
                src_address,
                size,
                queue_id: None,
                stream_id: Some(0),
                region_name_id,
            }),
        ));
        self.end_call(call, api_end, "{}", &[], true)
    }

    fn hip_malloc(&mut self, th: usize) -> Result<()> {
        let call = self.begin(th, CAT_HIP, "hipMalloc", 0);
        let api_end = call.start + self.rng.range(10_000, 45_000);
        let gpu = if self.gpus.len() > 1 && self.rng.percent(25) {
            1
        } else {
            0
        };
        let size = *self
            .rng
            .pick(&[1 << 20, 16 << 20, 64 << 20, 256 << 20, 2 << 30]);
        let address = self.device_address(gpu, size);
        let start = call.start + self.rng.range(2_000, 5_000);
        let end = (start + self.rng.range(2_000, 10_000)).min(api_end - 500);
        self.live_allocs.push((address, size));
        let row = AllocRow {
            id: self.next_alloc,
            nid: self.nid,
            pid: self.pid,
            tid: self.tids[th],
            agent_id: Some(self.gpus[gpu].agent_id),
            kind: "ALLOC",
            level: "REAL",
            start,
            end,
            address: Some(address),
            size,
            queue_id: None,
            stream_id: None,
            event_id: 0,
            extdata: "{}",
        };
        self.write_alloc(call.corr, call.ext, CAT_ALLOC, row)?;
        self.end_call(call, api_end, "{}", &[], true)
    }

    fn hip_free(&mut self, th: usize) -> Result<()> {
        if self.live_allocs.is_empty() {
            return Ok(());
        }
        let idx = self.rng.below(self.live_allocs.len() as u64) as usize;
        let (address, _) = self.live_allocs.remove(idx);
        let call = self.begin(th, CAT_HIP, "hipFree", 0);
        let api_end = call.start + self.rng.range(5_000, 30_000);
        let start = call.start + self.rng.range(1_000, 3_000);
        let end = (start + self.rng.range(1_000, 8_000)).min(api_end - 500);
        let row = AllocRow {
            id: self.next_alloc,
            nid: self.nid,
            pid: self.pid,
            tid: self.tids[th],
            agent_id: None,
            kind: "FREE",
            level: "REAL",
            start,
            end,
            address: Some(address),
            size: 0,
            queue_id: None,
            stream_id: None,
            event_id: 0,
            extdata: "{}",
        };
        self.write_alloc(call.corr, call.ext, CAT_ALLOC, row)?;
        self.end_call(call, api_end, "{}", &[], true)
    }

    fn write_alloc(
        &mut self,
        corr: i64,
        ext: i64,
        category: &str,
        mut row: AllocRow,
    ) -> Result<()> {
        row.id = self.next_alloc;
        self.next_alloc += 1;
        row.event_id = self.event(category, corr, corr, ext, true, "{}")?;
        self.note_ts(row.end);
        self.w.alloc(&row)
    }

    /// `hipDeviceSynchronize`: returns when every used queue and copy engine
    /// is idle.
    fn device_sync(&mut self, th: usize) -> Result<()> {
        let call = self.begin(th, CAT_HIP, "hipDeviceSynchronize", 0);
        let busy = self
            .queues
            .iter()
            .map(|q| q.last_end)
            .chain(self.gpus.iter().map(|g| g.engine_end))
            .max()
            .unwrap_or(0);
        let end =
            (call.start + self.rng.range(2_000, 6_000)).max(busy + self.rng.range(1_000, 4_000));
        self.end_call(call, end, "{}", &[], true)
    }

    /// `hipStreamSynchronize(stream)`.
    fn stream_sync(&mut self, th: usize, stream: usize) -> Result<()> {
        let call = self.begin(th, CAT_HIP, "hipStreamSynchronize", 0);
        let qi = self.streams[stream].queue;
        let busy = self.queues[qi].last_end;
        let end =
            (call.start + self.rng.range(2_000, 5_000)).max(busy + self.rng.range(1_000, 3_000));
        self.end_call(call, end, "{}", &[], true)
    }

    // ---- per-thread iteration bodies --------------------------------------

    fn main_iteration(&mut self, it: u32) -> Result<()> {
        let th = 0;
        let m = self.msgs.clone();
        let n_streams = self.streams.len();
        self.push(th, m.step);
        for (pi, phase) in [m.forward, m.backward].into_iter().enumerate() {
            self.push(th, phase);
            let n = self.rng.range(2, 5);
            for _ in 0..n {
                let stream = if self.rng.percent(25) {
                    2 % n_streams
                } else {
                    0
                };
                self.launch(th, stream, None, 0)?;
                self.advance(th, 1_000, 8_000);
                if self.rng.percent(15) {
                    self.get_device(th, 500, false)?;
                    self.advance(th, 500, 2_000);
                }
            }
            if pi == 0 {
                let size = *self
                    .rng
                    .pick(&[4 << 10, 64 << 10, 1 << 20, 8 << 20, 32 << 20]);
                self.memcpy_async(th, 0, Dir::H2D, size)?;
                self.advance(th, 1_000, 5_000);
            }
            self.pop(th)?;
            self.advance(th, 1_000, 5_000);
        }
        self.push(th, m.optimizer);
        self.launch(th, 0, Some(6), 0)?;
        if self.rng.percent(50) {
            self.advance(th, 1_000, 4_000);
            self.launch(th, 0, None, 0)?;
        }
        self.pop(th)?;
        if it.is_multiple_of(5) {
            self.advance(th, 1_000, 3_000);
            self.mark(th, m.checkpoint)?;
        }
        self.advance(th, 1_000, 4_000);
        self.device_sync(th)?;
        self.pop(th)?;
        self.advance(th, 2_000, 10_000);
        match it % 3 {
            0 => self.hip_malloc(th)?,
            // Not every allocation is freed, but the live set stays bounded.
            1 if self.rng.percent(70) || self.live_allocs.len() > 64 => self.hip_free(th)?,
            _ => {}
        }
        if it.is_multiple_of(2) {
            self.advance(th, 2_000, 8_000);
            let size = *self.rng.pick(&[8, 4 << 10, 256 << 10]);
            self.memcpy_sync_d2h(th, size)?;
        }
        self.advance(th, 20_000, 80_000);
        Ok(())
    }

    fn worker_iteration(&mut self, it: u32) -> Result<()> {
        let th = 1;
        let m = self.msgs.clone();
        let ns = self.streams.len();
        let overlap = it % 4 == 1;
        // roctxRangeStartA/Stop ranges overlap without nesting: A=[a0,a1],
        // B=[b0,b1] with a0 < b0 < a1 < b1.
        let mut a = None;
        let mut b = None;
        if overlap {
            a = Some(self.begin_range(th, m.prefetch_a));
            self.advance(th, 1_000, 3_000);
        }
        let size = *self.rng.pick(&[64 << 10, 1 << 20, 4 << 20]);
        self.memcpy_async(th, 1 % ns, Dir::H2D, size)?;
        self.advance(th, 1_000, 4_000);
        if overlap {
            b = Some(self.begin_range(th, m.prefetch_b));
            self.advance(th, 1_000, 3_000);
        }
        self.launch(th, 1 % ns, None, 0)?;
        self.advance(th, 1_000, 4_000);
        if let Some(r) = a.take() {
            self.end_range(th, r)?;
            self.advance(th, 1_000, 3_000);
        }
        self.launch(th, 3 % ns, None, 0)?;
        self.advance(th, 1_000, 4_000);
        if it % 3 == 2 {
            let size = *self.rng.pick(&[1 << 20, 16 << 20]);
            self.memcpy_async(th, 3 % ns, Dir::D2D, size)?;
            self.advance(th, 1_000, 4_000);
        }
        if let Some(r) = b.take() {
            self.end_range(th, r)?;
            self.advance(th, 1_000, 3_000);
        }
        if it % 6 == 3 {
            // RCCL collective launching its kernel through HIP (nested).
            let call = self.begin(th, CAT_RCCL, "ncclAllReduce", 0);
            self.cursor[th] = call.start + self.rng.range(3_000, 8_000);
            self.launch(th, 1 % ns, Some(9), call.corr)?;
            let end = self.cursor[th] + self.rng.range(3_000, 10_000);
            self.end_call(call, end, "{}", &[], true)?;
            self.advance(th, 1_000, 4_000);
        }
        if it % 10 == 7 {
            // A zero-length region (start == end) kept as a region.
            self.get_device(th, 1000, true)?;
        }
        self.stream_sync(th, 1 % ns)?;
        self.advance(th, 5_000, 30_000);
        Ok(())
    }

    fn begin_range(&mut self, th: usize, msg: &'static str) -> (Call, &'static str) {
        let mut call = self.begin(th, CAT_MARKER, ROCTX_PROCESS_RANGE, 0);
        call.ext = 0;
        self.sid(msg);
        self.advance(th, 1_000, 2_000);
        (call, msg)
    }

    fn end_range(&mut self, th: usize, (call, msg): (Call, &'static str)) -> Result<()> {
        self.advance(th, 1_000, 2_000);
        let end = self.cursor[th];
        self.end_call(call, end, &Self::message_ext(msg), &[], true)
    }

    fn hsa_iteration(&mut self, th: usize) -> Result<()> {
        let n = self.rng.range(4, 8);
        for _ in 0..n {
            let &(cat, name, lo, hi) = self.rng.pick(HSA_CALLS);
            self.simple(th, cat, name, lo, hi)?;
            self.advance(th, 2_000, 20_000);
        }
        Ok(())
    }

    fn extra_iteration(&mut self, th: usize) -> Result<()> {
        let stream = th % self.streams.len();
        self.launch(th, stream, None, 0)?;
        self.advance(th, 2_000, 8_000);
        if self.rng.percent(50) {
            self.launch(th, stream, None, 0)?;
            self.advance(th, 2_000, 8_000);
        }
        self.stream_sync(th, stream)?;
        self.advance(th, 10_000, 60_000);
        Ok(())
    }

    // ---- flushing ---------------------------------------------------------

    fn flush_pending(&mut self) -> Result<()> {
        let mut pending = std::mem::take(&mut self.pending);
        // Grouped by queue / copy engine / allocation lane, launch order
        // within a lane (stable sort).
        pending.sort_by_key(|(lane, _)| *lane);
        for (_, p) in pending {
            match p {
                Pending::Kernel(k) => self.write_kernel(k)?,
                Pending::Copy(c) => {
                    let event_id = self.event(CAT_COPY, c.corr, c.corr, c.ext, true, "{}")?;
                    let name_id = self.sid(c.name);
                    let row = CopyRow {
                        id: self.next_copy,
                        nid: self.nid,
                        pid: self.pid,
                        tid: c.tid,
                        start: c.start,
                        end: c.end,
                        name_id,
                        dst_agent: c.dst_agent,
                        dst_address: c.dst_address,
                        src_agent: c.src_agent,
                        src_address: c.src_address,
                        size: c.size,
                        queue_id: c.queue_id,
                        stream_id: c.stream_id,
                        region_name_id: c.region_name_id,
                        event_id,
                    };
                    self.next_copy += 1;
                    self.w.copy(&row)?;
                }
                Pending::Alloc(a) => self.write_alloc(a.corr, a.ext, a.category, a.row)?,
            }
        }
        Ok(())
    }

    fn write_kernel(&mut self, k: PendingKernel) -> Result<()> {
        let event_id = self.event(CAT_KERNEL, k.corr, k.corr, k.ext, true, "{}")?;
        let t = &self.kernels[k.tmpl];
        let (wg, groups, private, group) =
            (t.workgroup, t.groups, t.private_segment, t.group_segment);
        let g = &self.gpus[k.gpu];
        let row = DispatchRow {
            nid: self.nid,
            pid: self.pid,
            tid: k.tid,
            agent_id: g.agent_id,
            kernel_id: g.kernel_ids[k.tmpl],
            dispatch_id: k.dispatch_id,
            queue_id: self.queues[k.queue].id,
            stream_id: self.streams[k.stream].id,
            start: k.start,
            end: k.end,
            private_segment: private,
            group_segment: group,
            workgroup: [wg, 1, 1],
            grid: [wg * groups, 1, 1],
            region_name_id: k.region_name_id,
            event_id,
        };
        self.w.dispatch(&row)?;
        // Counter values: one row per counter, sometimes a second dimension
        // instance for the same counter (not aggregated).
        let counters = g.counters.clone();
        let waves = groups * ((wg + 63) / 64);
        let dur = (k.end - k.start).max(1);
        for (pmc_id, kind) in counters {
            let instances = if self.rng.percent(5) { 2 } else { 1 };
            for _ in 0..instances {
                let value = match kind {
                    CounterKind::Waves => waves as f64,
                    CounterKind::Valu => (waves * self.rng.range(200, 2_000)) as f64,
                    CounterKind::Grbm => (dur as f64 * 2.1).round(),
                    CounterKind::TccHit => (self.rng.range(0, 50_000) * groups / 64) as f64,
                };
                let id = self.next_pmc_event;
                self.next_pmc_event += 1;
                self.w.pmc_event(id, event_id, pmc_id, value)?;
            }
        }
        Ok(())
    }

    fn cpu_samples_until(&mut self, until: i64) -> Result<()> {
        while self.next_freq_ts <= until {
            let ts = self.next_freq_ts;
            let event_id = self.event(CAT_CPU_FREQ, 0, 0, 0, false, "{}")?;
            let id = self.next_sample;
            self.next_sample += 1;
            self.w.sample(id, self.freq_track, ts, event_id)?;
            let mhz = (1_500 + self.rng.range(0, 2_200)) as f64;
            let pid = self.next_pmc_event;
            self.next_pmc_event += 1;
            self.w.pmc_event(pid, event_id, self.cpu_freq_pmc, mhz)?;
            self.next_freq_ts += 1_000_000;
        }
        Ok(())
    }

    /// Run all iterations and write the remaining rows (process, strings).
    pub fn run(mut self, cfg: &GenConfig) -> Result<()> {
        let threads = self.tids.len();
        let hsa_th = if threads >= 3 { 2 } else { 1 };
        for it in 0..cfg.iterations {
            // All threads start the iteration together (± a few µs).
            let it_start = self.cursor[0];
            for th in 1..threads {
                let jitter = self.rng.range(0, 5_000);
                self.cursor[th] = self.cursor[th].max(it_start + jitter);
            }
            self.main_iteration(it)?;
            self.worker_iteration(it)?;
            self.hsa_iteration(hsa_th)?;
            for th in 3..threads {
                self.extra_iteration(th)?;
            }
            let until = self.cursor.iter().copied().max().unwrap_or(0);
            self.cpu_samples_until(until)?;
            self.flush_pending()?;
        }
        self.flush_pending()?;
        self.finish(cfg)
    }

    fn finish(self, cfg: &GenConfig) -> Result<()> {
        let base = self.proc_.base_ts;
        let fini = self.max_ts + 2_000_000;
        let times = [base - 3_000_000, fini, base - 120_000_000, fini + 4_000_000];
        let rocm = "/opt/rocm-7.1.0";
        let g = cfg.gpus_per_node;
        let visible: Vec<String> = (0..g).map(|i| i.to_string()).collect();
        let env = json_obj(&[
            ("HIP_VISIBLE_DEVICES", visible.join(",")),
            ("HOME", "/home/user".to_string()),
            ("LOCAL_RANK", self.proc_.local_rank.to_string()),
            ("PATH", format!("{rocm}/bin:/usr/local/bin:/usr/bin:/bin")),
            ("RANK", self.proc_.rank.to_string()),
            ("ROCM_PATH", rocm.to_string()),
            ("ROCPROF_OUTPUT_FORMAT", "rocpd".to_string()),
            ("WORLD_SIZE", cfg.processes.to_string()),
        ]);
        let command = command(self.proc_.rank, self.odd);
        self.w
            .process(self.nid, self.proc_.ppid, self.pid, times, &command, &env)?;
        for (i, s) in self.strings.list.iter().enumerate() {
            self.w.string(i as i64 + 1, s)?;
        }
        Ok(())
    }
}
