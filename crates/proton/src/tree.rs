//! `.hatchet` / `.hatchet_msgpack` trees → synthetic-time flame layout of regions.

use std::path::Path;

use rocpd_model::{Error, Result};
use serde_json::{Map, Value};

use crate::pull::{read_value, skip_value, JsonPull, MsgpackPull, PResult, Pull, PullError, Tok};
use crate::writer::Writer;
use crate::{parse_error, ProtonKind};
use rocpd_model::hash::{fnv1a64, FNV_OFFSET};

/// The thread name of the synthetic flame layout.
pub const TREE_THREAD_NAME: &str = "Proton tree (aggregated, synthetic time)";
/// The event category of tree nodes.
pub const TREE_CATEGORY: &str = "PROTON_TREE";

const NO_PARENT: usize = usize::MAX;

#[derive(Debug, Default)]
pub(crate) struct Node {
    pub name: Option<String>,
    pub top_name: Option<String>,
    pub frame_type: Option<String>,
    pub metrics: Map<String, Value>,
    pub parent: usize,
    pub children: Vec<usize>,
}

pub(crate) struct Parsed {
    /// Nodes in pre-order; index 0 is the root.
    pub nodes: Vec<Node>,
    pub devices: Option<Value>,
    pub extra_elements: usize,
}

fn bad<T>(p: &dyn Pull, msg: &str) -> PResult<T> {
    Err(PullError {
        offset: p.offset(),
        message: msg.to_string(),
    })
}

/// Parses a whole tree document (array `[root, devices, ...]` or a bare root object).
pub(crate) fn parse(p: &mut dyn Pull) -> PResult<Parsed> {
    let mut out = Parsed {
        nodes: Vec::new(),
        devices: None,
        extra_elements: 0,
    };
    match p.next_tok()? {
        Tok::BeginMap => out.nodes = parse_nodes(p)?,
        Tok::BeginArr => {
            match p.next_tok()? {
                Tok::BeginMap => out.nodes = parse_nodes(p)?,
                _ => return bad(p, "element 0 of the tree array is not a node object"),
            }
            let t = p.next_tok()?;
            if t != Tok::EndArr {
                out.devices = Some(read_value(p, t)?);
                loop {
                    let t = p.next_tok()?;
                    if t == Tok::EndArr {
                        break;
                    }
                    skip_value(p, t)?;
                    out.extra_elements += 1;
                }
            }
        }
        Tok::Eof => return bad(p, "empty input"),
        _ => {
            return bad(
                p,
                "a Proton tree is a JSON array [root, devices] or a root object",
            )
        }
    }
    match p.next_tok()? {
        Tok::Eof => Ok(out),
        _ => bad(p, "trailing data after the tree"),
    }
}

/// Parses the node whose `{` was just read, and all its descendants, with an explicit stack.
fn parse_nodes(p: &mut dyn Pull) -> PResult<Vec<Node>> {
    let mut nodes = vec![Node {
        parent: NO_PARENT,
        ..Default::default()
    }];
    // (node, inside its children array)
    let mut stack: Vec<(usize, bool)> = vec![(0, false)];
    while let Some(&(cur, in_children)) = stack.last() {
        let tok = p.next_tok()?;
        if in_children {
            match tok {
                Tok::BeginMap => {
                    let id = nodes.len();
                    nodes.push(Node {
                        parent: cur,
                        ..Default::default()
                    });
                    nodes[cur].children.push(id);
                    stack.push((id, false));
                }
                Tok::EndArr => {
                    if let Some(top) = stack.last_mut() {
                        top.1 = false;
                    }
                }
                _ => return bad(p, "an element of \"children\" is not a node object"),
            }
            continue;
        }
        match tok {
            Tok::EndMap => {
                stack.pop();
            }
            Tok::Key(k) => {
                let v = p.next_tok()?;
                let key = k.trim().to_ascii_lowercase();
                if key == "children" {
                    match v {
                        Tok::BeginArr => {
                            if let Some(top) = stack.last_mut() {
                                top.1 = true;
                            }
                        }
                        Tok::Scalar(Value::Null) => {}
                        _ => return bad(p, "\"children\" is not an array of node objects"),
                    }
                    continue;
                }
                let at = p.offset();
                let value = read_value(p, v)?;
                let node = &mut nodes[cur];
                match key.as_str() {
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
                            return Err(PullError {
                                offset: at,
                                message: format!(
                                    "\"frame\" is not an object (found {})",
                                    crate::trace::describe(&other)
                                ),
                            })
                        }
                    },
                    "metrics" => match value {
                        Value::Object(m) => node.metrics = m,
                        Value::Null => {}
                        other => {
                            return Err(PullError {
                                offset: at,
                                message: format!(
                                    "\"metrics\" is not an object (found {})",
                                    crate::trace::describe(&other)
                                ),
                            })
                        }
                    },
                    "name" => node.top_name = Some(text(&value)),
                    _ => {}
                }
            }
            _ => return bad(p, "malformed node object"),
        }
    }
    Ok(nodes)
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

pub(crate) fn import(
    path: &Path,
    file_name: &str,
    bytes: &[u8],
    kind: ProtonKind,
    w: &mut Writer,
    notes: &mut Vec<String>,
) -> Result<()> {
    let parsed = match kind {
        ProtonKind::TreeMsgpack => parse(&mut MsgpackPull::new(bytes)),
        _ => parse(&mut JsonPull::new(bytes)),
    }
    .map_err(|e| parse_error(path, e))?;
    if parsed.extra_elements > 0 {
        notes.push(format!(
            "{file_name}: {} extra top-level elements after the device table ignored",
            parsed.extra_elements
        ));
    }
    let nodes = parsed.nodes;
    let n = nodes.len();
    let names: Vec<String> = nodes
        .iter()
        .map(|x| {
            x.name
                .clone()
                .or_else(|| x.top_name.clone())
                .unwrap_or_default()
        })
        .collect();
    let root_placeholder = names[0] == "ROOT";
    // Where a node is, for messages: its pre-order index and name.
    let place = |i: usize| format!("node {i} ({:?})", names[i]);
    let known: Vec<Known> = nodes
        .iter()
        .enumerate()
        .map(|(i, x)| known(&x.metrics).map_err(|m| Error::input(path, place(i), m)))
        .collect::<Result<_>>()?;
    let overflow = |i: usize, what: &str| {
        Error::input(
            path,
            place(i),
            format!("{what} does not fit a 64-bit integer (metric values too large)"),
        )
    };
    let data = |i: usize| i != 0 || !root_placeholder;
    let has_time = (0..n).any(|i| data(i) && known[i].time_ns.is_some());
    let has_cycles = (0..n).any(|i| data(i) && known[i].cycles.is_some());

    // Inclusive sums and widths, children before parents (children have higher indices).
    let mut incl_time = vec![0u64; n];
    let mut incl_cycles = vec![0u64; n];
    let mut child_w = vec![0u64; n];
    let mut width = vec![0u64; n];
    for i in (0..n).rev() {
        if data(i) {
            incl_time[i] = incl_time[i]
                .checked_add(known[i].time_ns.unwrap_or(0))
                .ok_or_else(|| overflow(i, "the inclusive time"))?;
            incl_cycles[i] = incl_cycles[i]
                .checked_add(known[i].cycles.unwrap_or(0))
                .ok_or_else(|| overflow(i, "the inclusive cycles"))?;
        }
        let metric = if has_time {
            incl_time[i]
        } else if has_cycles {
            incl_cycles[i]
        } else {
            0
        };
        let mut wd = metric.max(child_w[i]);
        if wd == 0 {
            wd = known[i].count.unwrap_or(0).max(1);
        }
        width[i] = wd;
        let p = nodes[i].parent;
        if p != NO_PARENT {
            incl_time[p] = incl_time[p]
                .checked_add(incl_time[i])
                .ok_or_else(|| overflow(p, "the inclusive time"))?;
            incl_cycles[p] = incl_cycles[p]
                .checked_add(incl_cycles[i])
                .ok_or_else(|| overflow(p, "the inclusive cycles"))?;
            child_w[p] = child_w[p]
                .checked_add(wd)
                .ok_or_else(|| overflow(p, "the width of the children"))?;
        }
    }
    let mut start = vec![0u64; n];
    let mut depth = vec![0u32; n];
    for i in 0..n {
        let mut cursor = start[i];
        for &c in &nodes[i].children {
            start[c] = cursor;
            depth[c] = depth[i]
                .checked_add(1)
                .ok_or_else(|| overflow(c, "the depth"))?;
            cursor = cursor
                .checked_add(width[c])
                .ok_or_else(|| overflow(c, "the synthetic start time"))?;
        }
    }

    let pid = (fnv1a64(file_name.as_bytes(), FNV_OFFSET) % 999_983) as i64 + 1;
    // Synthetic times must fit the signed 64-bit time columns.
    let to_time = |i: usize, x: Option<u64>| {
        x.and_then(|x| i64::try_from(x).ok())
            .ok_or_else(|| overflow(i, "the synthetic end time"))
    };
    let mut written = 0u64;
    for i in 0..n {
        if !data(i) {
            continue;
        }
        let k = &known[i];
        let node = &nodes[i];
        let name = &names[i];
        let node_kind = if is_special(name) {
            "special"
        } else if k.time_ns.is_some() {
            "kernel"
        } else {
            "scope"
        };
        let mut ext = node.metrics.clone();
        ext.insert("kind".into(), node_kind.into());
        ext.insert("inclusive_time_ns".into(), incl_time[i].into());
        ext.insert("exclusive_time_ns".into(), k.time_ns.unwrap_or(0).into());
        ext.insert("count".into(), k.count.unwrap_or(0).into());
        if has_cycles {
            ext.insert("inclusive_cycles".into(), incl_cycles[i].into());
            ext.insert("exclusive_cycles".into(), k.cycles.unwrap_or(0).into());
        }
        ext.insert(
            "device_id".into(),
            k.device_id.clone().unwrap_or(Value::Null),
        );
        ext.insert(
            "device_type".into(),
            k.device_type.clone().map_or(Value::Null, Value::from),
        );
        if let Some(t) = &node.frame_type {
            ext.insert("frame_type".into(), t.clone().into());
        }
        ext.insert("depth".into(), depth[i].into());
        ext.insert("synthetic_time".into(), true.into());
        let extdata = Value::Object(ext).to_string();
        let s = to_time(i, Some(start[i]))?;
        let e = to_time(i, start[i].checked_add(width[i]))?;
        w.region(pid, pid, s, e, name, TREE_CATEGORY, &extdata)?;
        written += 1;
    }
    let unit = if has_time {
        "time (ns)"
    } else if has_cycles {
        "cycles"
    } else {
        "count (no time metric)"
    };
    notes.push(format!(
        "{file_name}: aggregated Proton tree, {written} nodes written as synthetic-time regions \
         (widths = inclusive {unit}; not a timeline)"
    ));

    // Devices (element 1) → GPU agents.
    let mut agent_id = 0i64;
    match &parsed.devices {
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
                    if !dev.is_object() {
                        return Err(Error::input(
                            path,
                            format!("device metadata (element 1), {dtype:?} {idx:?}"),
                            format!(
                                "expected a device object, found {}",
                                crate::trace::describe(dev)
                            ),
                        ));
                    }
                    agent_id += 1;
                    let index = idx.trim().parse::<i64>().ok();
                    let arch = dev.get("arch").map(text).unwrap_or_default();
                    let vendor = match dtype.as_str() {
                        "CUDA" => "NVIDIA",
                        "HIP" => "AMD",
                        other => other,
                    };
                    let mut ext = match dev {
                        Value::Object(m) => m.clone(),
                        _ => Map::new(),
                    };
                    ext.insert("device_type".into(), dtype.clone().into());
                    ext.insert("device_index".into(), idx.clone().into());
                    let ext = Value::Object(ext).to_string();
                    w.agent(
                        agent_id,
                        pid,
                        index,
                        index.unwrap_or(agent_id - 1),
                        &arch,
                        vendor,
                        &ext,
                    )?;
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

    let format = if kind == ProtonKind::TreeMsgpack {
        "proton-hatchet-msgpack"
    } else {
        "proton-hatchet"
    };
    w.thread(pid, pid, Some(TREE_THREAD_NAME))?;
    let ext =
        serde_json::json!({"source_format": format, "synthetic_time": true, "width_unit": unit});
    w.process(pid, file_name, &ext.to_string())?;
    Ok(())
}
