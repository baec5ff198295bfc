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

fn num(v: Option<&Value>) -> Option<i64> {
    v.and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
}

pub(crate) fn import(
    path: &Path,
    file_name: &str,
    bytes: &[u8],
    w: &mut Writer,
    notes: &mut Vec<String>,
) -> Result<()> {
    // Several JSON documents may be concatenated (3.5–3.7: one per stream).
    let mut docs: Vec<Value> = Vec::new();
    let mut it = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    for doc in it.by_ref() {
        match doc {
            Ok(v) => docs.push(v),
            Err(e) => {
                let off = offset_of(bytes, &e);
                return Err(Error::input(path, format!("byte {off}"), e.to_string()));
            }
        }
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
    let multi = docs.len() > 1;

    // Metadata first (names of processes and lanes).
    let events_of = |d: &Value| -> Vec<Value> {
        match d {
            Value::Object(o) => match o.get("traceEvents") {
                Some(Value::Array(a)) => a.clone(),
                _ => Vec::new(),
            },
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        }
    };
    for d in &docs {
        for ev in events_of(d) {
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

    for (di, d) in docs.iter().enumerate() {
        if !matches!(d, Value::Object(_) | Value::Array(_)) {
            return Err(Error::input(
                path,
                format!("document {di}"),
                "a chrome trace document must be an object or an array",
            ));
        }
        let base = d
            .get("baseTimeNanoseconds")
            .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
            .unwrap_or(0);
        for (ei, ev) in events_of(d).into_iter().enumerate() {
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
                    format!("document {di}, event {ei}"),
                    "complete event without a numeric \"ts\"",
                ));
            };
            let dur = ev
                .get("dur")
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
                .max(0.0);
            let start = base.saturating_add((ts * 1000.0).round() as i64);
            let end = start.saturating_add((dur * 1000.0).round() as i64);
            let pk = key_of(ev.get("pid"));
            let tk = key_of(ev.get("tid"));
            let string_pid = matches!(ev.get("pid"), Some(Value::String(_)));
            let pid = *pids
                .entry(pk.clone())
                .or_insert_with(|| match num(ev.get("pid")) {
                    Some(p) if !string_pid => p,
                    _ => {
                        next_pid += 1;
                        next_pid
                    }
                });
            let tid = match tids.get(&(pk.clone(), tk.clone())) {
                Some(t) => *t,
                None => {
                    let t = match num(ev.get("tid")) {
                        Some(t)
                            if !taken.contains(&t)
                                && !matches!(ev.get("tid"), Some(Value::String(_))) =>
                        {
                            t
                        }
                        _ => {
                            while taken.contains(&next_tid) {
                                next_tid += 1;
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
                                format!("GPU Stream {}", num(ev.get("tid")).unwrap_or(0))
                            } else {
                                format!("Thread {}", num(ev.get("tid")).unwrap_or(0))
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
                end.max(start),
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
    for (what, n) in ignored {
        notes.push(format!(
            "{file_name}: {n} events with {what} ignored (flows, instants, ...)"
        ));
    }
    Ok(())
}
