//! `.hatchet` / `.hatchet_msgpack` trees → synthetic-time flame layout of regions, streamed:
//! two passes over the file, holding only the open nodes (the depth of the tree).

use std::path::Path;

use rocpd_model::{Error, Result};
use serde_json::{Map, Value};

use crate::pull::{read_bounded, skip_value, JsonPull, MsgpackPull, PResult, Pull, PullError, Tok};
use crate::{parse_error, ProtonKind};
use rocpd_model::hash::{fnv1a64, FNV_OFFSET};

/// The thread name of the synthetic flame layout.
pub const TREE_THREAD_NAME: &str = "Proton tree (aggregated, synthetic time)";
/// The event category of tree nodes.
pub const TREE_CATEGORY: &str = "PROTON_TREE";

/// What a node object says, once its `}` is read (its children were visited before).
#[derive(Debug, Default)]
pub(crate) struct NodeFields {
    pub name: Option<String>,
    pub top_name: Option<String>,
    pub frame_type: Option<String>,
    pub metrics: Map<String, Value>,
    /// The keys read so far (`frame`, `metrics`, `name`), each a bit: one given twice is
    /// an error, since the second would silently replace the first's values.
    seen: u8,
}

impl NodeFields {
    /// The frame name, else the top-level `name`, else empty.
    fn display_name(&self) -> String {
        self.name
            .clone()
            .or_else(|| self.top_name.clone())
            .unwrap_or_default()
    }
}

/// What the walk over a tree tells, node by node in document order.
trait Visit {
    /// Node `index` (pre-order, the root is 0) begins; its parent is the innermost open one.
    fn open(&mut self, index: usize) -> Result<()>;
    /// Node `index` ends: all its children have ended before.
    fn close(&mut self, index: usize, node: NodeFields) -> Result<()>;
}

/// What follows the root in the tree array.
#[derive(Default)]
pub(crate) struct Tail {
    pub devices: Option<Value>,
    pub extra_elements: usize,
}

fn bad<T>(p: &dyn Pull, msg: &str) -> PResult<T> {
    Err(PullError {
        offset: p.offset(),
        message: msg.to_string(),
    })
}

/// Walks a whole tree document (array `[root, devices, ...]` or a bare root object),
/// telling `v` of every node; holds only the open nodes (the tree's depth), never the tree.
fn walk(path: &Path, p: &mut dyn Pull, v: &mut dyn Visit) -> Result<Tail> {
    let pe = |e| parse_error(path, e);
    let mut tail = Tail::default();
    match p.next_tok().map_err(pe)? {
        Tok::BeginMap => walk_nodes(path, p, v)?,
        Tok::BeginArr => {
            match p.next_tok().map_err(pe)? {
                Tok::BeginMap => walk_nodes(path, p, v)?,
                _ => return bad(p, "element 0 of the tree array is not a node object").map_err(pe),
            }
            let t = p.next_tok().map_err(pe)?;
            if t != Tok::EndArr {
                tail.devices = Some(read_bounded(p, t, "device metadata (element 1)").map_err(pe)?);
                loop {
                    let t = p.next_tok().map_err(pe)?;
                    if t == Tok::EndArr {
                        break;
                    }
                    skip_value(p, t).map_err(pe)?;
                    tail.extra_elements += 1;
                }
            }
        }
        Tok::Eof => return bad(p, "empty input").map_err(pe),
        _ => {
            return bad(
                p,
                "a Proton tree is a JSON array [root, devices] or a root object",
            )
            .map_err(pe)
        }
    }
    match p.next_tok().map_err(pe)? {
        Tok::Eof => Ok(tail),
        _ => bad(p, "trailing data after the tree").map_err(pe),
    }
}

/// Walks the node whose `{` was just read, and all its descendants, with an explicit stack.
fn walk_nodes(path: &Path, p: &mut dyn Pull, v: &mut dyn Visit) -> Result<()> {
    let pe = |e| parse_error(path, e);
    // (pre-order index, fields so far, inside its children array)
    let mut stack: Vec<(usize, NodeFields, bool)> = vec![(0, NodeFields::default(), false)];
    let mut next_index = 1usize;
    v.open(0)?;
    while let Some(top) = stack.last_mut() {
        let tok = p.next_tok().map_err(pe)?;
        if top.2 {
            match tok {
                Tok::BeginMap => {
                    let id = next_index;
                    next_index += 1;
                    stack.push((id, NodeFields::default(), false));
                    v.open(id)?;
                }
                Tok::EndArr => top.2 = false,
                _ => return bad(p, "an element of \"children\" is not a node object").map_err(pe),
            }
            continue;
        }
        match tok {
            Tok::EndMap => {
                if let Some((index, fields, _)) = stack.pop() {
                    v.close(index, fields)?;
                }
            }
            Tok::Key(k) => {
                let value = p.next_tok().map_err(pe)?;
                let key = k.trim().to_ascii_lowercase();
                if key == "children" {
                    match value {
                        Tok::BeginArr => top.2 = true,
                        Tok::Scalar(Value::Null) => {}
                        _ => {
                            return bad(p, "\"children\" is not an array of node objects")
                                .map_err(pe)
                        }
                    }
                    continue;
                }
                // Keys of no use are passed over, not read: an array under one would
                // otherwise become a whole `Value` in memory.
                if !matches!(key.as_str(), "frame" | "metrics" | "name") {
                    skip_value(p, value).map_err(pe)?;
                    continue;
                }
                let at = p.offset();
                let what = format!("{key:?} of a node");
                let value = read_bounded(p, value, &what).map_err(pe)?;
                field(&mut top.1, &key, value).map_err(|message| {
                    parse_error(
                        path,
                        PullError {
                            offset: at,
                            message,
                        },
                    )
                })?;
            }
            _ => return bad(p, "malformed node object").map_err(pe),
        }
    }
    Ok(())
}

/// Records one key of a node object (lower-cased); other keys are ignored.
fn field(node: &mut NodeFields, key: &str, value: Value) -> std::result::Result<(), String> {
    let bit = match key {
        "frame" => 1,
        "metrics" => 2,
        "name" => 4,
        _ => 0,
    };
    if node.seen & bit != 0 {
        return Err(format!("{key:?} given twice in one node"));
    }
    node.seen |= bit;
    match key {
        "frame" => match value {
            Value::Object(f) => {
                for (fk, fv) in f {
                    match fk.to_ascii_lowercase().as_str() {
                        "name" => node.name = Some(text(&fv)),
                        "type" => node.frame_type = Some(text(&fv)),
                        _ => {}
                    }
                }
            }
            Value::Null => {}
            // A bare name (tolerated).
            Value::String(name) => node.name = Some(name),
            other => {
                return Err(format!(
                    "\"frame\" is not an object (found {})",
                    crate::trace::describe(&other)
                ))
            }
        },
        "metrics" => match value {
            Value::Object(m) => node.metrics = m,
            Value::Null => {}
            other => {
                return Err(format!(
                    "\"metrics\" is not an object (found {})",
                    crate::trace::describe(&other)
                ))
            }
        },
        "name" => node.top_name = Some(text(&value)),
        _ => {}
    }
    Ok(())
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// 2^64 as a float.
const TWO_64: f64 = 18_446_744_073_709_551_616.0;

/// A float as a non-negative whole number: rounded, negatives → 0, NaN → none; a value
/// of 2^64 or more is an error.
fn float_u64(f: f64) -> std::result::Result<Option<u64>, String> {
    if f.is_nan() {
        return Ok(None);
    }
    let r = f.max(0.0).round();
    if r < TWO_64 {
        Ok(Some(r as u64))
    } else {
        Err(format!("{f} does not fit an unsigned 64-bit integer"))
    }
}

/// A non-negative integer metric value, scaled by `factor`: integers exact (checked
/// multiplication), floats scaled then rounded, negatives → 0, `null` → none; numeric
/// strings are parsed. Other types and values that do not fit `u64` are errors.
fn metric_u64(v: &Value, factor: u64) -> std::result::Result<Option<u64>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                return u.checked_mul(factor).map(Some).ok_or_else(|| {
                    format!("{n} × {factor} does not fit an unsigned 64-bit integer")
                });
            }
            if n.as_i64().is_some() {
                return Ok(Some(0));
            }
            float_u64(n.as_f64().unwrap_or(f64::NAN) * factor as f64)
        }
        // Integers exactly, as when given as numbers; then floats.
        Value::String(t) if t.trim().parse::<u64>().is_ok() => {
            metric_u64(&Value::from(t.trim().parse::<u64>().unwrap_or(0)), factor)
        }
        Value::String(t) if t.trim().parse::<i64>().is_ok() => Ok(Some(0)),
        Value::String(t) => match t.trim().parse::<f64>() {
            Ok(f) => float_u64(f * factor as f64),
            Err(_) => Err(format!(
                "expected a number, found {}",
                crate::trace::describe(v)
            )),
        },
        other => Err(format!(
            "expected a number, found {}",
            crate::trace::describe(other)
        )),
    }
}

/// The extdata fields of a node computed here rather than taken from its metrics (`count`,
/// `device_id` and `device_type` are the metrics themselves, read).
const COMPUTED: [&str; 8] = [
    "kind",
    "inclusive_time_ns",
    "exclusive_time_ns",
    "inclusive_cycles",
    "exclusive_cycles",
    "frame_type",
    "depth",
    "synthetic_time",
];

/// The nanosecond factor of a `time (<unit>)` key, if `key` (lower-cased, trimmed) is one.
fn time_factor(key: &str) -> Option<u64> {
    let unit = key.strip_prefix("time (")?.strip_suffix(')')?.trim();
    match unit {
        "ns" => Some(1),
        "us" | "µs" => Some(1_000),
        "ms" => Some(1_000_000),
        "s" => Some(1_000_000_000),
        _ => None,
    }
}

#[derive(Default, Clone)]
struct Known {
    time_ns: Option<u64>,
    count: Option<u64>,
    cycles: Option<u64>,
    device_id: Option<Value>,
    device_type: Option<String>,
}

fn known(metrics: &Map<String, Value>) -> std::result::Result<Known, String> {
    let mut k = Known::default();
    for (key, v) in metrics {
        let lk = key.trim().to_ascii_lowercase();
        let in_key = |m: String| format!("metric {key:?}: {m}");
        if let Some(f) = time_factor(&lk) {
            k.time_ns = metric_u64(v, f).map_err(in_key)?;
            continue;
        }
        match lk.as_str() {
            "count" => k.count = metric_u64(v, 1).map_err(in_key)?,
            "cycles" => k.cycles = metric_u64(v, 1).map_err(in_key)?,
            "device_id" | "deviceid" => {
                k.device_id = match v {
                    Value::String(s) => s
                        .trim()
                        .parse::<i64>()
                        .map(Value::from)
                        .ok()
                        .or_else(|| Some(v.clone())),
                    Value::Null => None,
                    other => Some(other.clone()),
                }
            }
            "device_type" | "devicetype" => k.device_type = Some(text(v)),
            _ => {}
        }
    }
    if k.time_ns.is_some() && k.count.is_none() {
        k.count = Some(1);
    }
    // The instrumentation backend writes device_type as enum number: 0 = HIP, 1 = CUDA.
    if let Some(t) = &k.device_type {
        match t.trim() {
            "0" => k.device_type = Some("HIP".into()),
            "1" => k.device_type = Some("CUDA".into()),
            _ => {}
        }
    }
    Ok(k)
}

/// Whether a frame name is one of Proton's special (bookkeeping) frames.
pub(crate) fn is_special(name: &str) -> bool {
    name == "__proton_launch_metadata"
        || name.starts_with("__proton_launch_metadata:")
        || name == "<captured_at>"
        || name == "<metric>"
}

/// Opens `path` as a token stream of its kind.
fn pull(path: &Path, kind: ProtonKind) -> Result<Box<dyn Pull>> {
    let f = std::fs::File::open(path).map_err(|e| Error::input(path, "open", e.to_string()))?;
    Ok(match kind {
        ProtonKind::TreeMsgpack => Box::new(MsgpackPull::new(f)),
        _ => Box::new(JsonPull::new(f)),
    })
}

/// Where a node is, for messages: its pre-order index and name.
fn place(index: usize, name: &str) -> String {
    format!("node {index} ({name:?})")
}

fn overflow(path: &Path, index: usize, name: &str, what: &str) -> Error {
    Error::input(
        path,
        place(index, name),
        format!("{what} does not fit a 64-bit integer (metric values too large)"),
    )
}

/// First pass: the facts about the whole tree that every node's layout depends on.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Facts {
    /// The root is Proton's `ROOT` placeholder (not written, not counted).
    root_placeholder: bool,
    /// Some data node has a time metric (widths are then times).
    has_time: bool,
    /// Some data node has a cycles metric (widths are cycles when no node has time).
    has_cycles: bool,
}

struct Survey<'a> {
    path: &'a Path,
    facts: Facts,
}

impl Visit for Survey<'_> {
    fn open(&mut self, _index: usize) -> Result<()> {
        Ok(())
    }

    fn close(&mut self, index: usize, node: NodeFields) -> Result<()> {
        let name = node.display_name();
        let k =
            known(&node.metrics).map_err(|m| Error::input(self.path, place(index, &name), m))?;
        if index == 0 {
            let f = &mut self.facts;
            f.root_placeholder = name == "ROOT";
            f.has_time |= k.time_ns.is_some() && !f.root_placeholder;
            f.has_cycles |= k.cycles.is_some() && !f.root_placeholder;
        } else {
            self.facts.has_time |= k.time_ns.is_some();
            self.facts.has_cycles |= k.cycles.is_some();
        }
        Ok(())
    }
}

/// A node of the second pass whose children are still being laid out.
struct Open {
    start: u64,
    /// Where the next child starts.
    cursor: u64,
    depth: u32,
    /// Sums over the children that have ended.
    incl_time: u64,
    incl_cycles: u64,
    child_w: u64,
}

/// Second pass: lays each node out when it ends (its width needs its subtree) and writes
/// it as a region. A node starts where its previous sibling ended, so its start is known
/// when it begins; ids follow pre-order, as the nodes appear in the file.
struct Layout<'a> {
    path: &'a Path,
    facts: &'a Facts,
    out: &'a mut dyn NodeOut,
    first_id: i64,
    open: Vec<Open>,
    written: u64,
}

/// A node laid out: what becomes one region (on the tree's one thread, category
/// [`TREE_CATEGORY`]).
pub(crate) struct LaidOut<'a> {
    /// Event id: the node's pre-order number (the placeholder root not counted) from the
    /// first id.
    pub id: i64,
    pub start: i64,
    pub end: i64,
    pub name: &'a str,
    pub extdata: Map<String, Value>,
}

/// Where the layout pass puts each node, in the order nodes end (post-order).
pub(crate) trait NodeOut {
    fn put_node(&mut self, node: LaidOut<'_>) -> Result<()>;
}

impl Visit for Layout<'_> {
    fn open(&mut self, index: usize) -> Result<()> {
        let (start, depth) = match self.open.last() {
            Some(parent) => (parent.cursor, parent.depth.checked_add(1)),
            None => (0, Some(0)),
        };
        let depth = depth.ok_or_else(|| overflow(self.path, index, "", "the depth"))?;
        self.open.push(Open {
            start,
            cursor: start,
            depth,
            incl_time: 0,
            incl_cycles: 0,
            child_w: 0,
        });
        Ok(())
    }

    fn close(&mut self, index: usize, node: NodeFields) -> Result<()> {
        let Some(o) = self.open.pop() else {
            return Ok(());
        };
        let path = self.path;
        let f = self.facts;
        let name = node.display_name();
        let k = known(&node.metrics).map_err(|m| Error::input(path, place(index, &name), m))?;
        let data = index != 0 || !f.root_placeholder;
        let (mut incl_time, mut incl_cycles) = (o.incl_time, o.incl_cycles);
        if data {
            incl_time = incl_time
                .checked_add(k.time_ns.unwrap_or(0))
                .ok_or_else(|| overflow(path, index, &name, "the inclusive time"))?;
            incl_cycles = incl_cycles
                .checked_add(k.cycles.unwrap_or(0))
                .ok_or_else(|| overflow(path, index, &name, "the inclusive cycles"))?;
        }
        let metric = if f.has_time {
            incl_time
        } else if f.has_cycles {
            incl_cycles
        } else {
            0
        };
        let mut width = metric.max(o.child_w);
        if width == 0 {
            width = k.count.unwrap_or(0).max(1);
        }
        if let Some(parent) = self.open.last_mut() {
            // A parent is named by its index only: its name comes after its children.
            parent.incl_time = parent
                .incl_time
                .checked_add(incl_time)
                .ok_or_else(|| overflow(path, index, &name, "the parent's inclusive time"))?;
            parent.incl_cycles = parent
                .incl_cycles
                .checked_add(incl_cycles)
                .ok_or_else(|| overflow(path, index, &name, "the parent's inclusive cycles"))?;
            parent.child_w = parent
                .child_w
                .checked_add(width)
                .ok_or_else(|| overflow(path, index, &name, "the width of the children"))?;
            parent.cursor = parent
                .cursor
                .checked_add(width)
                .ok_or_else(|| overflow(path, index, &name, "the synthetic start time"))?;
        }
        if !data {
            return Ok(());
        }
        let node_kind = if is_special(&name) {
            "special"
        } else if k.time_ns.is_some() {
            "kernel"
        } else {
            "scope"
        };
        let mut ext = node.metrics;
        // A metric named as a field we compute is kept under another name, not lost.
        for key in COMPUTED {
            if let Some(v) = ext.remove(key) {
                ext.insert(format!("metric:{key}"), v);
            }
        }
        ext.insert("kind".into(), node_kind.into());
        ext.insert("inclusive_time_ns".into(), incl_time.into());
        ext.insert("exclusive_time_ns".into(), k.time_ns.unwrap_or(0).into());
        ext.insert("count".into(), k.count.unwrap_or(0).into());
        if f.has_cycles {
            ext.insert("inclusive_cycles".into(), incl_cycles.into());
            ext.insert("exclusive_cycles".into(), k.cycles.unwrap_or(0).into());
        }
        ext.insert("device_id".into(), k.device_id.unwrap_or(Value::Null));
        ext.insert(
            "device_type".into(),
            k.device_type.map_or(Value::Null, Value::from),
        );
        if let Some(t) = node.frame_type {
            ext.insert("frame_type".into(), t.into());
        }
        ext.insert("depth".into(), o.depth.into());
        ext.insert("synthetic_time".into(), true.into());
        // Synthetic times must fit the signed 64-bit time columns.
        let to_time = |x: Option<u64>| {
            x.and_then(|x| i64::try_from(x).ok())
                .ok_or_else(|| overflow(path, index, &name, "the synthetic end time"))
        };
        let s = to_time(Some(o.start))?;
        let e = to_time(o.start.checked_add(width))?;
        // Pre-order ids, without the placeholder root.
        let id = i64::try_from(index)
            .ok()
            .and_then(|i| i.checked_sub(i64::from(f.root_placeholder)))
            .and_then(|i| i.checked_add(self.first_id))
            .ok_or_else(|| overflow(path, index, &name, "the event id"))?;
        self.out.put_node(LaidOut {
            id,
            start: s,
            end: e,
            name: &name,
            extdata: ext,
        })?;
        self.written += 1;
        Ok(())
    }
}

/// A GPU device of the tree's device table (element 1): an agent of the catalog.
#[derive(Debug, Clone)]
pub(crate) struct Device {
    /// Agent id, counted from 1 in table order.
    pub agent_id: i64,
    /// The device index, when it is a number.
    pub index: Option<i64>,
    /// Index among the tree's devices: the device index, else `agent_id - 1`.
    pub type_index: i64,
    /// The architecture, the agent's name.
    pub arch: String,
    pub vendor: String,
    /// The device's fields with its type and index, as JSON text.
    pub extdata: String,
}

/// What laying out a whole tree learned: everything about it but its nodes.
#[derive(Debug, Clone)]
pub(crate) struct Laid {
    /// Nodes written.
    pub written: u64,
    /// Earliest start and latest end of the nodes written.
    pub span: Option<(i64, i64)>,
    pub devices: Vec<Device>,
    pub notes: Vec<String>,
    /// The process row's extdata (format, synthetic time, width unit).
    pub process_extdata: String,
    /// What the first pass learned, for laying the tree out again without it.
    pub facts: Facts,
}

/// Counts the nodes put through it and their time extremes (a describing pass).
struct Extremes<'a> {
    inner: &'a mut dyn NodeOut,
    span: Option<(i64, i64)>,
}

impl NodeOut for Extremes<'_> {
    fn put_node(&mut self, node: LaidOut<'_>) -> Result<()> {
        let (s, e) = (node.start, node.end);
        self.span = Some(self.span.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
        self.inner.put_node(node)
    }
}

/// The pid of the tree read from `file_name`, whose guid is `guid`: the name alone gave
/// two runs' `proton.hatchet` one pid, and a Perfetto trace of both one process (D146).
pub(crate) fn tree_pid(file_name: &str, guid: &str) -> i64 {
    let h = fnv1a64(guid.as_bytes(), fnv1a64(file_name.as_bytes(), FNV_OFFSET));
    (h % 999_983) as i64 + 1
}

/// Lays a tree file out in two streaming passes (memory follows the tree's depth, not its
/// size): the first learns which metric sets the widths, the second puts every node into
/// `out` as it ends, numbered from `first_id` in pre-order. Every error of the file (parse,
/// metrics, overflow, device table) comes from here. With the facts of an earlier layout
/// of the same file (`known`), the first pass is skipped.
pub(crate) fn lay_out(
    path: &Path,
    file_name: &str,
    kind: ProtonKind,
    out: &mut dyn NodeOut,
    first_id: i64,
    known: Option<Facts>,
) -> Result<Laid> {
    let facts = match known {
        Some(f) => f,
        None => {
            let mut survey = Survey {
                path,
                facts: Facts::default(),
            };
            walk(path, &mut *pull(path, kind)?, &mut survey)?;
            survey.facts
        }
    };
    let mut extremes = Extremes {
        inner: out,
        span: None,
    };
    let mut layout = Layout {
        path,
        facts: &facts,
        first_id,
        out: &mut extremes,
        open: Vec::new(),
        written: 0,
    };
    let tail = walk(path, &mut *pull(path, kind)?, &mut layout)?;
    let written = layout.written;
    let span = extremes.span;
    let mut notes = Vec::new();
    if tail.extra_elements > 0 {
        notes.push(format!(
            "{file_name}: {} extra top-level elements after the device table ignored",
            tail.extra_elements
        ));
    }
    let unit = if facts.has_time {
        "time (ns)"
    } else if facts.has_cycles {
        "cycles"
    } else {
        "count (no time metric)"
    };
    notes.push(format!(
        "{file_name}: aggregated Proton tree, {written} nodes written as synthetic-time regions \
         (widths = inclusive {unit}; not a timeline)"
    ));
    let devices = devices(path, &tail)?;
    let format = if kind == ProtonKind::TreeMsgpack {
        "proton-hatchet-msgpack"
    } else {
        "proton-hatchet"
    };
    let ext =
        serde_json::json!({"source_format": format, "synthetic_time": true, "width_unit": unit});
    Ok(Laid {
        written,
        span,
        devices,
        notes,
        process_extdata: ext.to_string(),
        facts,
    })
}

/// The device table (element 1) as GPU agents.
fn devices(path: &Path, tail: &Tail) -> Result<Vec<Device>> {
    let mut out = Vec::new();
    let mut agent_id = 0i64;
    match &tail.devices {
        Some(Value::Object(types)) => {
            for (dtype, devs) in types {
                let Value::Object(devs) = devs else {
                    return Err(Error::input(
                        path,
                        format!("device metadata (element 1), {dtype:?}"),
                        format!(
                            "expected an object of devices, found {}",
                            crate::trace::describe(devs)
                        ),
                    ));
                };
                for (idx, dev) in devs {
                    let Value::Object(fields) = dev else {
                        return Err(Error::input(
                            path,
                            format!("device metadata (element 1), {dtype:?} {idx:?}"),
                            format!(
                                "expected a device object, found {}",
                                crate::trace::describe(dev)
                            ),
                        ));
                    };
                    agent_id += 1;
                    let index = idx.trim().parse::<i64>().ok();
                    let vendor = match dtype.as_str() {
                        "CUDA" => "NVIDIA",
                        "HIP" => "AMD",
                        other => other,
                    };
                    let mut ext = fields.clone();
                    ext.insert("device_type".into(), dtype.clone().into());
                    ext.insert("device_index".into(), idx.clone().into());
                    out.push(Device {
                        agent_id,
                        index,
                        type_index: index.unwrap_or(agent_id - 1),
                        arch: dev.get("arch").map(text).unwrap_or_default(),
                        vendor: vendor.to_string(),
                        extdata: Value::Object(ext).to_string(),
                    });
                }
            }
        }
        Some(Value::Null) | None => {}
        Some(other) => {
            return Err(Error::input(
                path,
                "device metadata (element 1)",
                format!(
                    "expected an object of device types, found {}",
                    crate::trace::describe(other)
                ),
            ))
        }
    }
    Ok(out)
}
