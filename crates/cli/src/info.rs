//! `rocpd info`: prints what the facade's [`rocpd::Info`] says about the inputs.

use anyhow::Result;

use rocpd::printable;

use crate::out::{stdout, stdout_line};

/// Prints processes, agents, time span and row counts per table.
pub fn run(args: &[std::ffi::OsString], as_json: bool) -> Result<()> {
    let mut inputs = crate::open_inputs(args, false, rocpd::default_threads())?;
    let info = inputs.info()?;
    if as_json {
        return stdout_line(&serde_json::to_string_pretty(&info)?);
    }
    let mut text = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        text,
        "{} file(s), {} process(es), {} agent(s)",
        info.files.len(),
        info.processes.len(),
        info.agents.len()
    );
    for p in &info.processes {
        let _ = writeln!(
            text,
            "  process {:>8} on {:<16} {} ({})",
            p.pid,
            printable(&p.hostname),
            printable(p.command.as_deref().unwrap_or("?")),
            printable(&p.file)
        );
    }
    let mut seen = std::collections::HashSet::new();
    for a in &info.agents {
        if seen.insert((a.hostname.clone(), a.id)) {
            let _ = writeln!(
                text,
                "  agent   {:>8} on {:<16} {} {}",
                a.id,
                printable(&a.hostname),
                printable(&a.agent_type),
                printable(
                    a.product_name
                        .as_deref()
                        .or(a.name.as_deref())
                        .unwrap_or("")
                )
            );
        }
    }
    match &info.time_span {
        Some(s) => {
            let _ = writeln!(
                text,
                "time span: {} .. {} ns ({:.6} s)",
                s.start,
                s.end,
                rocpd::span_len(s.start, s.end) as f64 / 1e9
            );
        }
        None => text.push_str("time span: no events\n"),
    }
    text.push_str("rows:\n");
    for (t, n) in &info.rows {
        let _ = writeln!(text, "  {t:<18} {n:>12}");
    }
    stdout(&text)
}
