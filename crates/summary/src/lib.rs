//! The flat profile `rocpd summary` prints: per kernel, per API function (one view per API
//! domain), per copy direction, per allocation operation, per marker: calls, total,
//! average, min, max and standard deviation of the durations, and each name's share of
//! its view's total.
//!
//! [`SummarySink`] aggregates as events stream by, in memory proportional to the number of
//! distinct names (times processes with `by_rank`), never to the number of events. Views
//! and column names follow AMD's `rocpd summary` (`KERNELS`, `HIP`, `MEMORY_COPIES`, ...;
//! `Name`, `Calls`, `DURATION (nsec)`, ...).

mod html;
mod render;
mod utilisation;

use std::collections::BTreeMap;

use rocpd_model::hash::FastMap;
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use arrow_array::{Array, StringArray};
use rocpd_model::naming::allocation_operation;
use rocpd_model::{col, Catalog, EventBatch, Result, Table};
use rocpd_pipeline::{Chunk, OutputReport, Sink};
use serde::Serialize;

pub use html::{escape, render_html, RunInfo, SHORT_NAME};
pub use render::{csv_field, render, OutputFormat};
pub use utilisation::{AgentTimeline, Utilisation};

/// Running statistics of one name (Welford's algorithm for the variance).
#[derive(Debug, Clone, Copy, Default)]
struct Stats {
    calls: u64,
    total: i128,
    min: u64,
    max: u64,
    mean: f64,
    m2: f64,
}

impl Stats {
    /// The row of these statistics, with its share of `view_total` ns.
    fn row(
        &self,
        name: String,
        pid: Option<i64>,
        hostname: Option<String>,
        view_total: i128,
    ) -> Row {
        Row {
            pid,
            hostname,
            name,
            calls: self.calls,
            total_ns: self.total,
            average_ns: self.total as f64 / self.calls as f64,
            percent: self.total as f64 * 100.0 / view_total.max(1) as f64,
            min_ns: self.min,
            max_ns: self.max,
            stddev_ns: if self.calls > 1 {
                (self.m2 / (self.calls - 1) as f64).sqrt()
            } else {
                0.0
            },
        }
    }

    fn add(&mut self, d: u64) {
        if self.calls == 0 {
            self.min = d;
            self.max = d;
        } else {
            self.min = self.min.min(d);
            self.max = self.max.max(d);
        }
        self.calls += 1;
        self.total = self.total.saturating_add(d as i128);
        let delta = d as f64 - self.mean;
        self.mean += delta / self.calls as f64;
        self.m2 += delta * (d as f64 - self.mean);
    }
}

/// `end - start` in ns, computed without overflow: 0 for an event that ends before it
/// starts, and exact up to `u64::MAX` (an event from `i64::MIN` to `i64::MAX`).
pub fn duration_ns(start: i64, end: i64) -> u64 {
    (end as i128 - start as i128).clamp(0, u64::MAX as i128) as u64
}

fn wide_integer<S: serde::Serializer>(v: &i128, s: S) -> std::result::Result<S::Ok, S::Error> {
    match u64::try_from(*v) {
        Ok(u) => s.serialize_u64(u),
        Err(_) => match i64::try_from(*v) {
            Ok(i) => s.serialize_i64(i),
            Err(_) => s.serialize_f64(*v as f64),
        },
    }
}

/// One row of a view.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Process id, with `by_rank`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    /// Hostname, with `by_rank`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Kernel, function, operation or marker name.
    pub name: String,
    /// Number of events.
    pub calls: u64,
    /// Sum of durations, ns. In JSON an integer while it fits in 64 bits, beyond that a
    /// floating-point number (JSON readers hold no wider integers).
    #[serde(serialize_with = "wide_integer")]
    pub total_ns: i128,
    /// Mean duration, ns.
    pub average_ns: f64,
    /// Share of the view's total, percent.
    pub percent: f64,
    /// Shortest, ns.
    pub min_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Sample standard deviation (n - 1), ns; 0 for one call.
    pub stddev_ns: f64,
}

impl Row {
    /// The rows as one (a whole domain, e.g. every HIP call): calls and totals added, the
    /// extremes of the extremes, and the sample standard deviation of all the events
    /// together, recovered from each row's count, mean and deviation (the pooled sums of
    /// squares of Chan et al.), so no event is needed twice. `percent` is left at 100:
    /// the caller knows what the share is of. `None` for no rows or no calls.
    pub fn combine(name: String, rows: &[Row]) -> Option<Row> {
        let calls: u64 = rows.iter().map(|r| r.calls).sum();
        if calls == 0 {
            return None;
        }
        let total: i128 = rows.iter().map(|r| r.total_ns).sum();
        let mean = total as f64 / calls as f64;
        let m2: f64 = rows
            .iter()
            .filter(|r| r.calls > 0)
            .map(|r| {
                let own = r.stddev_ns * r.stddev_ns * (r.calls - 1) as f64;
                let shift = r.average_ns - mean;
                own + r.calls as f64 * shift * shift
            })
            .sum();
        let live = rows.iter().filter(|r| r.calls > 0);
        Some(Row {
            pid: None,
            hostname: None,
            name,
            calls,
            total_ns: total,
            average_ns: mean,
            percent: 100.0,
            min_ns: live.clone().map(|r| r.min_ns).min().unwrap_or(0),
            max_ns: live.map(|r| r.max_ns).max().unwrap_or(0),
            stddev_ns: if calls > 1 {
                (m2 / (calls - 1) as f64).max(0.0).sqrt()
            } else {
                0.0
            },
        })
    }
}

/// One view: a named table of rows, sorted by total duration, longest first.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// `KERNELS`, `HIP`, `MEMORY_COPIES`, ...
    pub name: String,
    /// The rows.
    pub rows: Vec<Row>,
}

/// A process (source index, pid) when summarising per rank.
type Rank = Option<(u32, i64)>;

/// Statistics per (rank, name) of one view.
type ViewStats = FastMap<(Rank, String), Stats>;

/// A finished summary.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// The views, in a fixed order.
    pub views: Vec<View>,
    /// GPU utilisation over time, when asked for with [`SummarySink::with_utilisation`].
    pub utilisation: Option<Utilisation>,
}

/// The finished summary, shared with the caller of [`SummarySink::new`].
pub type SummaryHandle = Arc<Mutex<Summary>>;

/// A [`Sink`] that aggregates the flat profile.
pub struct SummarySink {
    by_rank: bool,
    catalog: Option<Arc<Catalog>>,
    hostnames: FastMap<(u32, i64), String>,
    views: BTreeMap<String, ViewStats>,
    rows_seen: BTreeMap<&'static str, u64>,
    utilisation: Option<utilisation::Tracker>,
    out: SummaryHandle,
}

impl SummarySink {
    /// A summary, per process with `by_rank`; the result lands in `out` at `finish`.
    pub fn new(by_rank: bool, out: SummaryHandle) -> Self {
        SummarySink {
            by_rank,
            catalog: None,
            hostnames: FastMap::default(),
            views: BTreeMap::new(),
            rows_seen: BTreeMap::new(),
            utilisation: None,
            out,
        }
    }

    /// Also computes each GPU's busy fraction over `bins` equal bins of `span` (ns).
    pub fn with_utilisation(mut self, span: (i64, i64), bins: usize) -> Self {
        self.utilisation = Some(utilisation::Tracker::new(span, bins));
        self
    }

    fn add_batch(&mut self, b: &EventBatch) {
        let t = b.table;
        if t == Table::PmcValue {
            return;
        }
        let batch = &b.batch;
        let starts = batch.column(col::START).as_primitive::<Int64Type>();
        let ends = batch.column(col::END).as_primitive::<Int64Type>();
        let sources = batch.column(col::SOURCE).as_primitive::<UInt32Type>();
        let pids = batch.column(col::PID).as_primitive::<Int64Type>();
        let s = |n: &str| batch.column(t.column_index(n)).as_string::<i32>();
        let text = |a: &StringArray, r: usize| {
            if a.is_valid(r) {
                a.value(r).to_string()
            } else {
                String::new()
            }
        };
        let category = s("category");
        for r in 0..batch.num_rows() {
            let (view, name): (String, String) = match t {
                Table::KernelDispatch => ("KERNELS".into(), text(s("kernel_name"), r)),
                Table::MemoryCopy => ("MEMORY_COPIES".into(), text(s("name"), r)),
                Table::MemoryAllocation => {
                    let level = s("level");
                    let level = level.is_valid(r).then(|| level.value(r));
                    let op = allocation_operation(&text(s("type"), r), level);
                    if level == Some("SCRATCH") {
                        ("SCRATCH_MEMORY".into(), op)
                    } else {
                        ("MEMORY_ALLOCATIONS".into(), op)
                    }
                }
                Table::Marker => {
                    let m = text(s("message"), r);
                    (
                        "MARKERS".into(),
                        if m.is_empty() { text(s("name"), r) } else { m },
                    )
                }
                Table::Region | Table::Sample => {
                    // One view per domain: the category's first word (HIP_RUNTIME_API_EXT → HIP).
                    let cat = text(category, r);
                    let domain = cat
                        .split('_')
                        .next()
                        .filter(|d| !d.is_empty())
                        .unwrap_or("NONE");
                    let domain = domain.to_ascii_uppercase();
                    if domain == "MARKER" {
                        let m = text(s("message"), r);
                        (
                            "MARKERS".into(),
                            if m.is_empty() { text(s("name"), r) } else { m },
                        )
                    } else {
                        (domain, text(s("name"), r))
                    }
                }
                Table::PmcValue => unreachable!(),
            };
            let rank = self.by_rank.then(|| {
                (
                    sources.value(r),
                    if pids.is_valid(r) { pids.value(r) } else { -1 },
                )
            });
            let d = duration_ns(starts.value(r), ends.value(r));
            self.views
                .entry(view)
                .or_default()
                .entry((rank, name))
                .or_default()
                .add(d);
        }
        *self.rows_seen.entry(t.name()).or_default() += batch.num_rows() as u64;
    }
}

impl Sink for SummarySink {
    fn projection(&self) -> rocpd_model::Projection {
        rocpd_model::Projection::without_json_text()
    }

    fn needs_time_order(&self) -> bool {
        // The busy-time union walks each GPU's intervals in start order; statistics don't care.
        self.utilisation.is_some()
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        self.hostnames = catalog
            .processes
            .iter()
            .filter_map(|p| {
                let host = catalog
                    .nodes
                    .iter()
                    .find(|n| n.source == p.source && n.id == p.nid)?
                    .hostname
                    .clone()?;
                Some(((p.source, p.pid), host))
            })
            .collect();
        self.catalog = Some(catalog.clone());
        Ok(())
    }

    fn write(&mut self, chunk: &Chunk) -> Result<()> {
        for b in &chunk.batches {
            self.add_batch(b);
        }
        if let (Some(u), Some(c)) = (&mut self.utilisation, &self.catalog) {
            u.write(c, chunk);
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<OutputReport>> {
        let mut views = Vec::new();
        for (name, stats) in self.views {
            let mut rows: Vec<Row> = Vec::with_capacity(stats.len());
            // Percent of the view's total (per process with by_rank, like rocpd's by-rank views).
            let mut totals: FastMap<Rank, i128> = FastMap::default();
            for ((rank, _), s) in &stats {
                *totals.entry(*rank).or_default() += s.total;
            }
            for ((rank, n), s) in stats {
                let host = rank.map(|r| self.hostnames.get(&r).cloned().unwrap_or_default());
                rows.push(s.row(n, rank.map(|r| r.1), host, totals[&rank]));
            }
            rows.sort_by(|a, b| {
                (a.pid, std::cmp::Reverse(a.total_ns), &a.name).cmp(&(
                    b.pid,
                    std::cmp::Reverse(b.total_ns),
                    &b.name,
                ))
            });
            views.push(View { name, rows });
        }
        // Views in a fixed order: kernels, copies, allocations, then API domains, markers.
        let rank = |n: &str| match n {
            "KERNELS" => 0,
            "MEMORY_COPIES" => 1,
            "MEMORY_ALLOCATIONS" => 2,
            "SCRATCH_MEMORY" => 3,
            "MARKERS" => 5,
            _ => 4,
        };
        views.sort_by(|a, b| (rank(&a.name), &a.name).cmp(&(rank(&b.name), &b.name)));
        let utilisation = self.utilisation.map(utilisation::Tracker::finish);
        if let Ok(mut out) = self.out.lock() {
            *out = Summary { views, utilisation };
        }
        let mut report = OutputReport::default();
        for (t, n) in self.rows_seen {
            report.rows.insert(t, n);
        }
        Ok(vec![report])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_statistics_match_the_textbook_formulas() {
        let xs = [3u64, 7, 7, 19, 24, 0];
        let mut s = Stats::default();
        for x in xs {
            s.add(x);
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<u64>() as f64 / n;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert_eq!((s.calls, s.total, s.min, s.max), (6, 60, 0, 24));
        assert!((s.mean - mean).abs() < 1e-9);
        assert!((s.m2 / (n - 1.0) - var).abs() < 1e-6);
    }

    #[test]
    fn combined_rows_equal_the_statistics_of_all_their_events() {
        let groups: [&[u64]; 3] = [&[3, 7, 7], &[19], &[24, 0, 5, 5]];
        let row = |name: &str, xs: &[u64]| {
            let mut s = Stats::default();
            for &x in xs {
                s.add(x);
            }
            s.row(name.into(), None, None, s.total)
        };
        let rows: Vec<Row> = groups.iter().map(|g| row("x", g)).collect();
        let all: Vec<u64> = groups.iter().flat_map(|g| g.iter().copied()).collect();
        let whole = row("all", &all);
        let c = Row::combine("all".into(), &rows).unwrap();
        assert_eq!((c.calls, c.total_ns, c.min_ns, c.max_ns), (8, 70, 0, 24));
        assert!((c.average_ns - whole.average_ns).abs() < 1e-9);
        assert!(
            (c.stddev_ns - whole.stddev_ns).abs() < 1e-9,
            "{c:?} {whole:?}"
        );
        assert!(Row::combine("none".into(), &[]).is_none());
        let one = Row::combine("one".into(), &rows[1..2]).unwrap();
        assert_eq!((one.calls, one.stddev_ns), (1, 0.0));
    }

    #[test]
    fn durations_never_wrap() {
        assert_eq!(duration_ns(i64::MIN, i64::MAX), u64::MAX);
        assert_eq!(duration_ns(10, 4), 0);
        assert_eq!(duration_ns(-5, 5), 10);
        let mut s = Stats::default();
        s.add(u64::MAX);
        s.add(u64::MAX);
        assert_eq!(s.total, 2 * u64::MAX as i128);
    }
}
