//! What is in the inputs (`rocpd info`): files, processes, agents, time span, rows per
//! table.

use std::collections::BTreeMap;

use rocpd_model::Result;
use serde::Serialize;

use crate::window::Span;
use crate::Inputs;

/// One process.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessInfo {
    /// The file it was read from (for an imported input, the first file it came from).
    pub file: String,
    /// The guid of its table set.
    pub guid: String,
    /// Its node's hostname.
    pub hostname: String,
    /// OS process id.
    pub pid: i64,
    /// Its `rocpd_info_process.id` (what the schema's `pid` references hold; for
    /// rocprofv3 files the same as `pid`).
    pub id: i64,
    /// Command line, if recorded.
    pub command: Option<String>,
    /// Threads recorded for it.
    pub threads: usize,
}

/// One agent (CPU or GPU).
#[derive(Debug, Clone, Serialize)]
pub struct AgentInfo {
    /// The guid of the table set it belongs to.
    pub guid: String,
    /// Its node's hostname.
    pub hostname: String,
    /// Agent id.
    pub id: i64,
    /// `CPU` or `GPU`.
    #[serde(rename = "type")]
    pub agent_type: String,
    /// Agent name.
    pub name: Option<String>,
    /// Product name (`AMD Instinct MI300X`, ...).
    pub product_name: Option<String>,
}

/// The time span of the events.
#[derive(Debug, Clone, Serialize)]
pub struct TimeSpan {
    /// Earliest start, ns.
    pub start: i64,
    /// Latest end, ns.
    pub end: i64,
    /// `end - start`, exactly (it may exceed an i64); null only if it fits no JSON integer.
    pub duration: serde_json::Value,
}

/// What `rocpd info` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Info {
    /// The input files.
    pub files: Vec<String>,
    /// Every process, in input order.
    pub processes: Vec<ProcessInfo>,
    /// Every agent, in input order.
    pub agents: Vec<AgentInfo>,
    /// Earliest start and latest end of the events, if there are any.
    #[serde(rename = "time_span_ns")]
    pub time_span: Option<TimeSpan>,
    /// Rows per canonical table.
    pub rows: BTreeMap<&'static str, u64>,
}

/// The length of `[a, b]` in ns, exactly (an i64 difference can overflow).
pub fn span_len(a: i64, b: i64) -> i128 {
    b as i128 - a as i128
}

fn time_span((a, b): Span) -> TimeSpan {
    let len = span_len(a, b);
    // Fits u64 for every pair with b >= a; a span ending before it starts (only in
    // broken inputs) is still reported exactly.
    let duration = u64::try_from(len)
        .map(serde_json::Value::from)
        .or_else(|_| i64::try_from(len).map(serde_json::Value::from))
        .unwrap_or(serde_json::Value::Null);
    TimeSpan {
        start: a,
        end: b,
        duration,
    }
}

impl Inputs {
    /// Describes the inputs: what `rocpd info` prints (and `--json` gives).
    pub fn info(&mut self) -> Result<Info> {
        let rows = self.count_rows()?;
        let cat = self.catalog().clone();
        let host = |source: u32, nid: i64| {
            cat.nodes
                .iter()
                .find(|n| n.source == source && n.id == nid)
                .and_then(|n| n.hostname.clone())
                .unwrap_or_default()
        };
        let file_of = |source: u32| {
            cat.sources[source as usize]
                .shown_path()
                .to_string_lossy()
                .into_owned()
        };
        let processes = cat
            .processes
            .iter()
            .map(|p| ProcessInfo {
                file: file_of(p.source),
                guid: cat.sources[p.source as usize].guid.clone(),
                hostname: host(p.source, p.nid),
                pid: p.pid,
                id: p.id,
                command: p.command.clone(),
                threads: cat
                    .threads
                    .iter()
                    .filter(|t| t.source == p.source && t.pid == p.pid)
                    .count(),
            })
            .collect();
        let agents = cat
            .agents
            .iter()
            .map(|a| AgentInfo {
                guid: cat.sources[a.source as usize].guid.clone(),
                hostname: host(a.source, a.nid),
                id: a.id,
                agent_type: a.agent_type.clone(),
                name: a.name.clone(),
                product_name: a.product_name.clone(),
            })
            .collect();
        Ok(Info {
            files: self
                .files()
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
            processes,
            agents,
            time_span: self.span().map(time_span),
            rows,
        })
    }
}
