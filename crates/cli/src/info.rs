//! `rocpd info`: what is in the inputs.

use anyhow::Result;
use serde_json::json;

use crate::out::{stdout, stdout_line};
use crate::{convert, inputs};

/// The length of `[a, b]` in ns, exactly (an i64 difference can overflow).
fn span_len(a: i64, b: i64) -> i128 {
    b as i128 - a as i128
}

/// Prints processes, agents, time span and row counts per table.
pub fn run(args: &[std::ffi::OsString], as_json: bool) -> Result<()> {
    let paths = inputs::expand(args)?.files;
    let resolved = crate::sources::resolve(&paths, false)?;
    let dbs = convert::open_all(&resolved.dbs)?;
    let mut cat = convert::catalog_of(&dbs)?;
    // Imported inputs: show the files they came from, not the temporary database.
    crate::sources::mark_imported(&mut cat, &resolved.origins);
    for s in &mut cat.sources {
        if let Some(first) = s.imported_from.first() {
            s.path = first.clone();
        }
    }
    let mut counts: std::collections::BTreeMap<&'static str, u64> = Default::default();
    for db in &dbs {
        for (t, n) in db.count_rows()? {
            *counts.entry(t.name()).or_default() += n;
        }
    }
    let span = convert::event_span(&dbs)?;
    let host = |source: u32, nid: i64| {
        cat.nodes
            .iter()
            .find(|n| n.source == source && n.id == nid)
            .and_then(|n| n.hostname.clone())
            .unwrap_or_default()
    };
    if as_json {
        let processes: Vec<_> = cat
            .processes
            .iter()
            .map(|p| {
                json!({
                    "file": cat.sources[p.source as usize].path.to_string_lossy(),
                    "guid": cat.sources[p.source as usize].guid,
                    "hostname": host(p.source, p.nid),
                    "pid": p.pid,
                    "command": p.command,
                    "threads": cat.threads.iter().filter(|t| t.source == p.source && t.pid == p.pid).count(),
                })
            })
            .collect();
        let agents: Vec<_> = cat
            .agents
            .iter()
            .map(|a| json!({"guid": cat.sources[a.source as usize].guid, "hostname": host(a.source, a.nid), "id": a.id, "type": a.agent_type, "name": a.name, "product_name": a.product_name}))
            .collect();
        let v = json!({
            "files": paths.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            "processes": processes,
            "agents": agents,
            "time_span_ns": span.map(|(a, b)| {
                // Fits u64 for every pair of i64 with b >= a; a span ending before it starts
                // (only in broken inputs) is still reported exactly.
                let len = span_len(a, b);
                let duration = u64::try_from(len)
                    .map(serde_json::Value::from)
                    .or_else(|_| i64::try_from(len).map(serde_json::Value::from))
                    .unwrap_or(serde_json::Value::Null);
                json!({"start": a, "end": b, "duration": duration})
            }),
            "rows": counts,
        });
        return stdout_line(&serde_json::to_string_pretty(&v)?);
    }
    let mut text = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        text,
        "{} file(s), {} process(es), {} agent(s)",
        paths.len(),
        cat.processes.len(),
        cat.agents.len()
    );
    for p in &cat.processes {
        let _ = writeln!(
            text,
            "  process {:>8} on {:<16} {} ({})",
            p.pid,
            host(p.source, p.nid),
            p.command.as_deref().unwrap_or("?"),
            cat.sources[p.source as usize].path.display()
        );
    }
    let mut seen = std::collections::HashSet::new();
    for a in &cat.agents {
        if seen.insert((host(a.source, a.nid), a.id)) {
            let _ = writeln!(
                text,
                "  agent   {:>8} on {:<16} {} {}",
                a.id,
                host(a.source, a.nid),
                a.agent_type,
                a.product_name
                    .as_deref()
                    .or(a.name.as_deref())
                    .unwrap_or("")
            );
        }
    }
    match span {
        Some((a, b)) => {
            let _ = writeln!(
                text,
                "time span: {a} .. {b} ns ({:.6} s)",
                span_len(a, b) as f64 / 1e9
            );
        }
        None => text.push_str("time span: no events\n"),
    }
    text.push_str("rows:\n");
    for (t, n) in &counts {
        let _ = writeln!(text, "  {t:<18} {n:>12}");
    }
    stdout(&text)
}
