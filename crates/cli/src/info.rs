//! `rocpd info`: what is in the inputs.

use anyhow::Result;
use serde_json::json;

use crate::{convert, inputs};

/// Prints processes, agents, time span and row counts per table.
pub fn run(args: &[String], as_json: bool) -> Result<()> {
    let paths = inputs::expand(args)?;
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
                    "file": cat.sources[p.source as usize].path,
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
            "files": paths,
            "processes": processes,
            "agents": agents,
            "time_span_ns": span.map(|(a, b)| json!({"start": a, "end": b, "duration": b - a})),
            "rows": counts,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{} file(s), {} process(es), {} agent(s)",
        paths.len(),
        cat.processes.len(),
        cat.agents.len()
    );
    for p in &cat.processes {
        println!(
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
            println!(
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
        Some((a, b)) => println!("time span: {a} .. {b} ns ({:.6} s)", (b - a) as f64 / 1e9),
        None => println!("time span: no events"),
    }
    println!("rows:");
    for (t, n) in &counts {
        println!("  {t:<18} {n:>12}");
    }
    Ok(())
}
