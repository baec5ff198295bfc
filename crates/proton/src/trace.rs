//! `.chrome_trace` (Proton trace mode) → regions on their pid/tid.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use rocpd_model::{Error, Result};
use serde_json::{Map, Value};

use crate::writer::Writer;

/// Byte offset of a serde_json error (from its 1-based line and column).
fn offset_of(bytes: &[u8], e: &serde_json::Error) -> usize {
    if e.is_eof() {
        return bytes.len();
    }
    let mut line = 1usize;
    let mut off = 0usize;
    while line < e.line() && off < bytes.len() {
        if bytes[off] == b'\n' {
            line += 1;
        }
        off += 1;
    }
    (off + e.column().saturating_sub(1)).min(bytes.len())
}

fn key_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "0".into(),
        Some(Value::String(s)) => format!("s:{s}"),
        Some(other) => other.to_string(),
    }
}

pub(crate) use rocpd_model::describe_json as describe;

/// 2^63 as a float: an `i64` is strictly inside ±2^63.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// A numeric id or time: an integer within `i64`, or an integral float strictly inside
/// ±2^63. Anything else is an error message (nothing wraps or saturates).
fn int_of(v: &Value) -> std::result::Result<i64, String> {
    let Value::Number(n) = v else {
        return Err(format!("expected a number, found {}", describe(v)));
    };
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f > -TWO_63 && f < TWO_63 => Ok(f as i64),
        Some(f) if f.fract() == 0.0 || n.as_u64().is_some() => {
            Err(format!("{n} does not fit a signed 64-bit integer"))
        }
        _ => Err(format!("expected an integer, found {n}")),
    }
}

/// Microseconds (a float) as whole nanoseconds, rounded; `None` when they do not fit `i64`.
fn us_to_ns(us: f64) -> Option<i64> {
    let ns = (us * 1000.0).round();
    (ns.is_finite() && ns > -TWO_63 && ns < TWO_63).then_some(ns as i64)
}

/// A pid or tid: a number (integral, within `i64`), a string, or absent / `null`.
fn id_of(v: Option<&Value>, what: &str) -> std::result::Result<Option<i64>, String> {
    match v {
        None | Some(Value::Null) | Some(Value::String(_)) => Ok(None),
        Some(x @ Value::Number(_)) => int_of(x).map(Some).map_err(|m| format!("\"{what}\": {m}")),
        Some(other) => Err(format!(
            "\"{what}\": expected a number or a string, found {}",
            describe(other)
        )),
    }
}

/// The events of one document: its `traceEvents` array, or the document itself when it is
/// an array. Any other shape is an error message.
fn events_of(d: &Value) -> std::result::Result<&[Value], String> {
    match d {
        Value::Object(o) => match o.get("traceEvents") {
            Some(Value::Array(a)) => Ok(a),
            Some(other) => Err(format!(
                "\"traceEvents\": expected an array of events, found {}",
                describe(other)
            )),
            None => Err("expected a \"traceEvents\" array of events, found an object without one".into()),
        },
        Value::Array(a) => Ok(a),
        other => Err(format!(
            "a chrome trace document must be an object with a \"traceEvents\" array or an array of events, found {}",
            describe(other)
        )),
    }
}

pub(crate) fn import(
    path: &Path,
    file_name: &str,
    bytes: &[u8],
    w: &mut Writer,
    notes: &mut Vec<String>,
) -> Result<()> {
    // A UTF-8 byte-order mark is skipped (offsets in messages still count it).
    let (bytes, bom) = match bytes.strip_prefix(&[0xEF, 0xBB, 0xBF][..]) {
        Some(rest) => (rest, 3),
        None => (bytes, 0),
    };
    // Several JSON documents may be concatenated (3.5–3.7: one per stream).
    let mut docs: Vec<Value> = Vec::new();
    let mut it = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    for doc in it.by_ref() {
        match doc {
            Ok(v) => docs.push(v),
            Err(e) => {
                let off = offset_of(bytes, &e) + bom;
                return Err(Error::input(path, format!("byte {off}"), e.to_string()));
            }
        }
    }
    // Every document and event has the right shape before anything is used.
    let mut all_events: Vec<&[Value]> = Vec::with_capacity(docs.len());
    for (di, d) in docs.iter().enumerate() {
        let evs = events_of(d).map_err(|m| Error::input(path, format!("document {di}"), m))?;
        for (ei, ev) in evs.iter().enumerate() {
            if !ev.is_object() {
                return Err(Error::input(
                    path,
                    format!("document {di}, event {ei}"),
                    format!("expected an event object, found {}", describe(ev)),
                ));
            }
            if let Some(ph) = ev.get("ph").filter(|p| !p.is_string()) {
                return Err(Error::input(
                    path,
                    format!("document {di}, event {ei}"),
                    format!("\"ph\": expected a string, found {}", describe(ph)),
                ));
            }
        }
        all_events.push(evs);
    }
    if docs.is_empty() {
        notes.push(format!("{file_name}: empty chrome trace (no events)"));
    }
    let mut pids: HashMap<String, i64> = HashMap::new();
    let mut pid_names: HashMap<String, String> = HashMap::new();
    let mut tids: HashMap<(String, String), i64> = HashMap::new();
    let mut tid_names: HashMap<(String, String), String> = HashMap::new();
    let mut taken: HashSet<i64> = HashSet::new();
    let mut next_pid = 1_000_000i64;
    let mut next_tid = 1i64 << 24;
    let mut threads: BTreeMap<i64, (i64, String, String)> = BTreeMap::new();
    let mut ignored: BTreeMap<String, u64> = BTreeMap::new();
    let mut written = 0u64;
    let mut negative_durations = 0u64;
    let multi = docs.len() > 1;

    // Metadata first (names of processes and lanes).
    for evs in &all_events {
        for ev in evs.iter() {
            if ev.get("ph").and_then(Value::as_str) != Some("M") {
                continue;
            }
            let name = ev
                .pointer("/args/name")
                .and_then(Value::as_str)
                .map(str::to_string);
            let (pk, tk) = (key_of(ev.get("pid")), key_of(ev.get("tid")));
            match (ev.get("name").and_then(Value::as_str), name) {
                (Some("process_name"), Some(n)) => {
                    pid_names.insert(pk, n);
                }
                (Some("thread_name"), Some(n)) => {
                    tid_names.insert((pk, tk), n);
                }
                _ => {}
            }
        }
    }

    for (di, (d, evs)) in docs.iter().zip(&all_events).enumerate() {
        let base = match d.get("baseTimeNanoseconds") {
            None | Some(Value::Null) => 0,
            Some(v) => int_of(v).map_err(|m| {
                Error::input(
                    path,
                    format!("document {di}"),
                    format!("\"baseTimeNanoseconds\": {m}"),
                )
            })?,
        };
        for (ei, ev) in evs.iter().enumerate() {
            let place = || format!("document {di}, event {ei}");
            let ph = ev.get("ph").and_then(Value::as_str).unwrap_or("");
            if ph == "M" {
                continue;
            }
            if ph != "X" {
                *ignored.entry(format!("ph \"{ph}\"")).or_default() += 1;
                continue;
            }
            let Some(ts) = ev.get("ts").and_then(Value::as_f64) else {
                return Err(Error::input(
                    path,
                    place(),
                    "complete event without a numeric \"ts\"",
                ));
            };
            let dur = match ev.get("dur") {
                None | Some(Value::Null) => 0.0,
                Some(v) => v.as_f64().ok_or_else(|| {
                    Error::input(
                        path,
                        place(),
                        format!("\"dur\": expected a number, found {}", describe(v)),
                    )
                })?,
            };
            // A negative duration (clock skew) becomes 0; the notes count them.
            let dur = if dur < 0.0 {
                negative_durations += 1;
                0.0
            } else {
                dur
            };
            let ts_ns = us_to_ns(ts).ok_or_else(|| {
                Error::input(
                    path,
                    place(),
                    format!("\"ts\": {ts} µs does not fit a signed 64-bit nanosecond time"),
                )
            })?;
            let dur_ns = us_to_ns(dur).ok_or_else(|| {
                Error::input(
                    path,
                    place(),
                    format!("\"dur\": {dur} µs does not fit a signed 64-bit nanosecond time"),
                )
            })?;
            let start = base.checked_add(ts_ns).ok_or_else(|| {
                Error::input(
                    path,
                    place(),
                    format!(
                        "start time baseTimeNanoseconds {base} + ts {ts_ns} ns does not fit a signed 64-bit integer"
                    ),
                )
            })?;
            let end = start.checked_add(dur_ns).ok_or_else(|| {
                Error::input(
                    path,
                    place(),
                    format!(
                        "end time {start} + dur {dur_ns} ns does not fit a signed 64-bit integer"
                    ),
                )
            })?;
            let num_pid =
                id_of(ev.get("pid"), "pid").map_err(|m| Error::input(path, place(), m))?;
            let num_tid =
                id_of(ev.get("tid"), "tid").map_err(|m| Error::input(path, place(), m))?;
            let pk = key_of(ev.get("pid"));
            let tk = key_of(ev.get("tid"));
            let string_pid = matches!(ev.get("pid"), Some(Value::String(_)));
            let pid = match pids.get(&pk) {
                Some(p) => *p,
                None => {
                    let p = match num_pid {
                        Some(p) if !string_pid => p,
                        _ => {
                            next_pid = next_pid.checked_add(1).ok_or_else(|| {
                                Error::input(path, place(), "too many synthetic pids")
                            })?;
                            next_pid
                        }
                    };
                    pids.insert(pk.clone(), p);
                    p
                }
            };
            let tid = match tids.get(&(pk.clone(), tk.clone())) {
                Some(t) => *t,
                None => {
                    let t = match num_tid {
                        Some(t)
                            if !taken.contains(&t)
                                && !matches!(ev.get("tid"), Some(Value::String(_))) =>
                        {
                            t
                        }
                        _ => {
                            while taken.contains(&next_tid) {
                                next_tid = next_tid.checked_add(1).ok_or_else(|| {
                                    Error::input(path, place(), "too many synthetic tids")
                                })?;
                            }
                            next_tid
                        }
                    };
                    taken.insert(t);
                    tids.insert((pk.clone(), tk.clone()), t);
                    let tname = tid_names
                        .get(&(pk.clone(), tk.clone()))
                        .cloned()
                        .or_else(|| tk.strip_prefix("s:").map(str::to_string))
                        .unwrap_or_else(|| {
                            if ev.get("cat").and_then(Value::as_str) == Some("kernel") {
                                format!("GPU Stream {}", num_tid.unwrap_or(0))
                            } else {
                                format!("Thread {}", num_tid.unwrap_or(0))
                            }
                        });
                    let pname = pid_names
                        .get(&pk)
                        .cloned()
                        .or_else(|| pk.strip_prefix("s:").map(str::to_string))
                        .unwrap_or_else(|| file_name.to_string());
                    threads.insert(t, (pid, tname, pname));
                    t
                }
            };
            let cat = ev.get("cat").and_then(Value::as_str).unwrap_or("");
            let category = if string_pid {
                "PROTON_INTRA_KERNEL".to_string()
            } else if matches!(cat, "scope" | "metric" | "kernel") {
                format!("PROTON_{}", cat.to_ascii_uppercase())
            } else {
                "PROTON_TRACE".to_string()
            };
            let mut ext = match ev.get("args") {
                Some(Value::Object(m)) => m.clone(),
                Some(other) => {
                    let mut m = Map::new();
                    m.insert("args".into(), other.clone());
                    m
                }
                None => Map::new(),
            };
            ext.insert("cat".into(), cat.into());
            ext.insert("ts_us".into(), ts.into());
            ext.insert("dur_us".into(), dur.into());
            if let Some(p @ Value::String(_)) = ev.get("pid") {
                ext.insert("source_pid".into(), p.clone());
            }
            if let Some(t @ Value::String(_)) = ev.get("tid") {
                ext.insert("source_tid".into(), t.clone());
            }
            if multi {
                ext.insert("document".into(), di.into());
            }
            let name = ev.get("name").and_then(Value::as_str).unwrap_or("");
            w.region(
                pid,
                tid,
                start,
                end,
                name,
                &category,
                &Value::Object(ext).to_string(),
            )?;
            written += 1;
        }
    }
    for (tid, (pid, tname, _)) in &threads {
        w.thread(*pid, *tid, Some(tname))?;
    }
    let mut procs: BTreeMap<i64, String> = BTreeMap::new();
    for (pid, _, pname) in threads.values() {
        procs.entry(*pid).or_insert_with(|| pname.clone());
    }
    for (pid, pname) in &procs {
        let ext = serde_json::json!({"source_format": "proton-chrome-trace", "file": file_name});
        w.process(*pid, pname, &ext.to_string())?;
    }
    notes.push(format!(
        "{file_name}: {written} complete (X) events written as regions"
    ));
    if negative_durations > 0 {
        notes.push(format!(
            "{file_name}: {negative_durations} complete events with a negative \"dur\" written with duration 0"
        ));
    }
    for (what, n) in ignored {
        notes.push(format!(
            "{file_name}: {n} events with {what} ignored (flows, instants, ...)"
        ));
    }
    Ok(())
}
