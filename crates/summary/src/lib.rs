//! The flat profile `rocpd summary` prints: per kernel, per API function (one view per API
//! domain), per copy direction, per allocation operation, per marker: calls, total,
//! average, min, max and standard deviation of the durations, and each name's share of
//! its view's total; optionally one row per view (the domain summary) and every view
//! again per process.
//!
//! [`SummarySink`] aggregates as events stream by, in memory proportional to the number of
//! distinct names (times processes with `by_rank`), never to the number of events. Views
//! and column names follow AMD's `rocpd summary` (`KERNELS`, `HIP`, `MEMORY_COPIES`, ...;
//! `Name`, `Calls`, `DURATION (nsec)`, ...); a statistic AMD's SQL leaves NULL (the
//! standard deviation of one call, the share of a view whose total is 0) is `None` here.

#![warn(missing_docs)]

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
use rocpd_model::{col, Catalog, Error, EventBatch, Result, Table};
use rocpd_pipeline::{Chunk, OutputReport, Sink};
use serde::Serialize;

pub use html::{escape, render_html, RunInfo, SHORT_NAME};
pub use render::{csv_field, render, view_batch, OutputFormat};
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
    fn add(&mut self, d: u64) {
        if self.calls == 0 {
            self.min = d;
            self.max = d;
        } else {
            self.min = self.min.min(d);
            self.max = self.max.max(d);
        }
        self.calls = self.calls.saturating_add(1);
        self.total = self.total.saturating_add(i128::from(d));
        let delta = d as f64 - self.mean;
        self.mean += delta / self.calls as f64;
        self.m2 += delta * (d as f64 - self.mean);
    }

    /// Adds the events `o` describes (Chan, Golub and LeVeque's pairwise update), as if
    /// they had been added one by one.
    fn merge(&mut self, o: &Stats) {
        if o.calls == 0 {
            return;
        }
        if self.calls == 0 {
            *self = *o;
            return;
        }
        let (na, nb) = (self.calls as f64, o.calls as f64);
        let n = na + nb;
        let delta = o.mean - self.mean;
        self.mean += delta * nb / n;
        self.m2 += o.m2 + delta * delta * (na * nb / n);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.calls = self.calls.saturating_add(o.calls);
        self.total = self.total.saturating_add(o.total);
    }

    /// The sample standard deviation (n - 1); `None` below two calls, where AMD's
    /// `/(COUNT(*) - 1)` divides by zero and SQLite yields NULL.
    fn stddev(&self) -> Option<f64> {
        (self.calls > 1).then(|| (self.m2.max(0.0) / (self.calls - 1) as f64).sqrt())
    }
}

/// `part` as a percentage of `whole`, computed as AMD's SQL does
/// (`CAST(part AS REAL) / whole * 100`); `None` when `whole` is 0 (SQLite's NULL for a
/// division by zero).
fn percent(part: i128, whole: i128) -> Option<f64> {
    (whole != 0).then(|| part as f64 / whole as f64 * 100.0)
}

/// `end - start` in ns, computed without overflow: 0 for an event that ends before it
/// starts, and exact up to `u64::MAX` (an event from `i64::MIN` to `i64::MAX`).
pub fn duration_ns(start: i64, end: i64) -> u64 {
    (i128::from(end) - i128::from(start)).clamp(0, i128::from(u64::MAX)) as u64
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
    /// Process id, in a view per rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    /// Hostname, in a view per rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Kernel, function, operation or marker name; in the domain view, the view's name.
    pub name: String,
    /// Number of events.
    pub calls: u64,
    /// Sum of durations, ns. In JSON an integer while it fits in 64 bits, beyond that a
    /// floating-point number (JSON readers hold no wider integers).
    #[serde(serialize_with = "wide_integer")]
    pub total_ns: i128,
    /// Mean duration, ns.
    pub average_ns: f64,
    /// Share of the view's total, percent; `None` when that total is 0.
    pub percent: Option<f64>,
    /// Shortest, ns.
    pub min_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Sample standard deviation (n - 1), ns; `None` for one call.
    pub stddev_ns: Option<f64>,
}

/// The name of the view with one row per other view (`--domain-summary`).
pub const DOMAIN: &str = "DOMAIN";

/// One view: a named table of rows, sorted by total duration, longest first (by
/// process first in a view per rank).
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// `KERNELS`, `HIP`, `MEMORY_COPIES`, ..., [`DOMAIN`].
    pub name: String,
    /// Whether the rows are per process (AMD's `<view>_summary_by_rank`).
    pub by_rank: bool,
    /// The rows.
    pub rows: Vec<Row>,
}

impl View {
    /// AMD's name of the view: `KERNELS_SUMMARY`, `KERNELS_SUMMARY_BY_RANK`,
    /// `DOMAIN_SUMMARY`, ... (the console header without its colon; lower-cased, the
    /// file name).
    pub fn title(&self) -> String {
        let suffix = if self.by_rank {
            "_SUMMARY_BY_RANK"
        } else {
            "_SUMMARY"
        };
        format!("{}{suffix}", self.name)
    }
}

/// Which API calls and markers get views (AMD's `--region-categories`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RegionCategories {
    /// One view per first word of the categories in the inputs (`HIP_RUNTIME_API_EXT` →
    /// `HIP`), and `MARKERS` for the `MARKER_*` ones.
    #[default]
    Auto,
    /// No view of API calls or markers (`NONE`); kernels, copies and allocations stay.
    Nothing,
    /// One view per category given (upper-cased), holding the API calls and samples whose
    /// category is it or starts with it and `_`, ignoring case; markers matched by one go
    /// to `MARKERS`.
    Only(Vec<String>),
}

impl RegionCategories {
    /// From the values of `--region-categories`: none given is [`RegionCategories::Auto`],
    /// `NONE` alone [`RegionCategories::Nothing`].
    pub fn from_args<S: AsRef<str>>(values: &[S]) -> Result<Self> {
        if values.is_empty() {
            return Ok(RegionCategories::Auto);
        }
        let mut cats: Vec<String> = Vec::new();
        for v in values {
            let c = v.as_ref().trim().to_ascii_uppercase();
            if c.is_empty() || c.chars().any(char::is_whitespace) {
                return Err(Error::Usage(format!(
                    "--region-categories: {:?} is not a category (a word such as HIP, HSA, RCCL or MARKER)",
                    v.as_ref()
                )));
            }
            if !cats.contains(&c) {
                cats.push(c);
            }
        }
        if cats.iter().any(|c| c == "NONE") {
            if cats.len() > 1 {
                return Err(Error::Usage(
                    "--region-categories: NONE (no API or marker views) cannot be combined with categories".into(),
                ));
            }
            return Ok(RegionCategories::Nothing);
        }
        Ok(RegionCategories::Only(cats))
    }

    /// The views an API call, sample or marker (`marker`: a row of the marker table) of
    /// `category` counts in: `MARKERS` for markers, else its domain's view; several when
    /// several given categories match it.
    fn views_of(&self, category: &str, marker: bool) -> Vec<String> {
        let up = category.to_ascii_uppercase();
        let is_marker = marker || up == "MARKER" || up.starts_with("MARKER_");
        match self {
            RegionCategories::Nothing => Vec::new(),
            RegionCategories::Auto if is_marker => vec![MARKERS.into()],
            RegionCategories::Auto => {
                // The category's first word (HIP_RUNTIME_API_EXT → HIP).
                let first = up.split('_').next().unwrap_or("");
                vec![region_view(if first.is_empty() { "NONE" } else { first })]
            }
            RegionCategories::Only(cats) => {
                let matches = |c: &String| {
                    up == *c || (up.starts_with(c.as_str()) && up[c.len()..].starts_with('_'))
                };
                if is_marker {
                    if cats.iter().any(|c| c == "MARKER" || matches(c)) {
                        vec![MARKERS.into()]
                    } else {
                        Vec::new()
                    }
                } else {
                    // Two categories given may name one view (`KERNELS` and
                    // `KERNELS_API`): a call counts in it once.
                    let mut views: Vec<String> = Vec::new();
                    for v in cats.iter().filter(|c| matches(c)).map(|c| region_view(c)) {
                        if !views.contains(&v) {
                            views.push(v);
                        }
                    }
                    views
                }
            }
        }
    }
}

const MARKERS: &str = "MARKERS";

/// The views that are not a category's: API calls whose category is named like one
/// (`KERNELS_API`) must not be counted in it.
const FIXED_VIEWS: [&str; 6] = [
    "KERNELS",
    "MEMORY_COPIES",
    "MEMORY_ALLOCATIONS",
    "SCRATCH_MEMORY",
    DOMAIN,
    MARKERS,
];

/// The view of API calls and samples whose category gives `name`: the name itself, or
/// `<name>_API` when a view that is not a category's has it.
fn region_view(name: &str) -> String {
    if FIXED_VIEWS.contains(&name) {
        format!("{name}_API")
    } else {
        name.to_string()
    }
}

/// A process when summarising per rank: (source index, node id, pid); -1 for a null id.
type Rank = (u32, i64, i64);

/// Statistics per name of one view, per rank (`None` for the whole run without ranks).
type ViewStats = BTreeMap<Option<Rank>, FastMap<String, Stats>>;

/// A finished summary.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// The views, in a fixed order: the whole-run views, then (with `by_rank`) the same
    /// views per process.
    pub views: Vec<View>,
    /// GPU utilisation over time, when asked for with [`SummarySink::with_utilisation`].
    pub utilisation: Option<Utilisation>,
}

/// The finished summary, shared with the caller of [`SummarySink::new`].
pub type SummaryHandle = Arc<Mutex<Summary>>;

/// A [`Sink`] that aggregates the flat profile.
pub struct SummarySink {
    by_rank: bool,
    domain: bool,
    categories: RegionCategories,
    /// The views of each category seen (a few distinct ones per run), for API calls and
    /// samples ([0]) and for markers ([1]).
    routes: [FastMap<String, Vec<String>>; 2],
    catalog: Option<Arc<Catalog>>,
    views: BTreeMap<String, ViewStats>,
    rows_seen: BTreeMap<&'static str, u64>,
    utilisation: Option<utilisation::Tracker>,
    /// rocprofv3's naming of allocations (see [`SummarySink::with_operation_names`]).
    operation_names: bool,
    /// Events that end before they start: counted with zero duration, and said so.
    negative_durations: u64,
    out: SummaryHandle,
}

impl SummarySink {
    /// A summary, also per process with `by_rank`; the result lands in `out` at `finish`.
    pub fn new(by_rank: bool, out: SummaryHandle) -> Self {
        SummarySink {
            by_rank,
            domain: false,
            operation_names: false,
            negative_durations: 0,
            categories: RegionCategories::Auto,
            routes: Default::default(),
            catalog: None,
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

    /// Also adds the [`DOMAIN`] view: one row per other view (per process with
    /// `by_rank`), over all its events.
    pub fn with_domain_summary(mut self) -> Self {
        self.domain = true;
        self
    }

    /// Names allocations by their operation as rocprofv3's `--stats` files do
    /// (`MEMORY_ALLOCATION_ALLOCATE`, `SCRATCH_MEMORY_ALLOC`, ...; scratch only in
    /// `SCRATCH_MEMORY`) instead of by `type` as AMD's `rocpd summary` does (`ALLOC`, `FREE`;
    /// scratch in both views).
    pub fn with_operation_names(mut self) -> Self {
        self.operation_names = true;
        self
    }

    /// Which API calls and markers are summarised, and in which views.
    pub fn with_region_categories(mut self, categories: RegionCategories) -> Self {
        self.categories = categories;
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
        let nids = batch.column(col::NID).as_primitive::<Int64Type>();
        let pids = batch.column(col::PID).as_primitive::<Int64Type>();
        let s = |n: &str| batch.column(t.column_index(n)).as_string::<i32>();
        fn text(a: &StringArray, r: usize) -> &str {
            if a.is_valid(r) {
                a.value(r)
            } else {
                ""
            }
        }
        // The name column of each table; markers are named by their ROCTx message, or
        // their range's name without one.
        let names = s(match t {
            Table::KernelDispatch => "kernel_name",
            Table::MemoryAllocation => "type",
            _ => "name",
        });
        let messages =
            matches!(t, Table::Marker | Table::Region | Table::Sample).then(|| s("message"));
        let levels = (t == Table::MemoryAllocation).then(|| s("level"));
        let category = s("category");
        let id = |a: &arrow_array::Int64Array, r: usize| {
            if a.is_valid(r) {
                a.value(r)
            } else {
                -1
            }
        };
        let operation_names = self.operation_names;
        for r in 0..batch.num_rows() {
            let rank = self
                .by_rank
                .then(|| (sources.value(r), id(nids, r), id(pids, r)));
            let d = duration_ns(starts.value(r), ends.value(r));
            if ends.value(r) < starts.value(r) {
                self.negative_durations += 1;
            }
            let name = text(names, r);
            let views = &mut self.views;
            match t {
                Table::KernelDispatch => record(views, "KERNELS", rank, name, d),
                Table::MemoryCopy => record(views, "MEMORY_COPIES", rank, name, d),
                Table::MemoryAllocation if operation_names => {
                    let level = levels.and_then(|l| l.is_valid(r).then(|| l.value(r)));
                    let scratch = level.is_some_and(|l| l.eq_ignore_ascii_case("SCRATCH"));
                    let view = if scratch {
                        "SCRATCH_MEMORY"
                    } else {
                        "MEMORY_ALLOCATIONS"
                    };
                    record(views, view, rank, &allocation_operation(name, level), d);
                }
                Table::MemoryAllocation => {
                    // AMD's memory_allocations view holds every level, named by `type`
                    // (ALLOC, FREE, ...); scratch_memory is the SCRATCH subset, named by
                    // its `operation`, the same column.
                    record(views, "MEMORY_ALLOCATIONS", rank, name, d);
                    if levels.is_some_and(|l| {
                        l.is_valid(r) && l.value(r).eq_ignore_ascii_case("SCRATCH")
                    }) {
                        record(views, "SCRATCH_MEMORY", rank, name, d);
                    }
                }
                Table::Marker | Table::Region | Table::Sample => {
                    let cat = text(category, r);
                    let marker = t == Table::Marker;
                    let routes = &mut self.routes[usize::from(marker)];
                    if !routes.contains_key(cat) {
                        routes.insert(cat.to_string(), self.categories.views_of(cat, marker));
                    }
                    for view in &routes[cat] {
                        let shown = match messages {
                            Some(m) if view == MARKERS && !text(m, r).is_empty() => text(m, r),
                            _ => name,
                        };
                        record(views, view, rank, shown, d);
                    }
                }
                Table::PmcValue => {}
            }
        }
        *self.rows_seen.entry(t.name()).or_default() += batch.num_rows() as u64;
    }
}

/// Counts an event of `d` ns for `name` in `view` (for `rank`).
fn record(
    views: &mut BTreeMap<String, ViewStats>,
    view: &str,
    rank: Option<Rank>,
    name: &str,
    d: u64,
) {
    if !views.contains_key(view) {
        views.insert(view.to_string(), ViewStats::new());
    }
    let Some(ranked) = views.get_mut(view) else {
        return;
    };
    let names = ranked.entry(rank).or_default();
    match names.get_mut(name) {
        Some(s) => s.add(d),
        None => {
            let mut s = Stats::default();
            s.add(d);
            names.insert(name.to_string(), s);
        }
    }
}

/// The hostname of each process, by (source, node id), falling back to the node of the
/// process with that (source, pid) when the event has no node id.
struct Hosts {
    by_node: FastMap<(u32, i64), String>,
    by_pid: FastMap<(u32, i64), String>,
}

impl Hosts {
    fn new(catalog: Option<&Catalog>) -> Self {
        let mut hosts = Hosts {
            by_node: FastMap::default(),
            by_pid: FastMap::default(),
        };
        let Some(c) = catalog else {
            return hosts;
        };
        for n in &c.nodes {
            if let Some(h) = &n.hostname {
                hosts.by_node.insert((n.source, n.id), h.clone());
            }
        }
        for p in &c.processes {
            if let Some(h) = hosts.by_node.get(&(p.source, p.nid)).cloned() {
                hosts.by_pid.entry((p.source, p.pid)).or_insert(h);
            }
        }
        hosts
    }

    fn of(&self, (source, nid, pid): Rank) -> String {
        self.by_node
            .get(&(source, nid))
            .or_else(|| self.by_pid.get(&(source, pid)))
            .cloned()
            .unwrap_or_default()
    }
}

/// Rows of one view's names; percentages of their sum. Longest total first, then by name.
fn rows_of<'a>(
    names: impl Iterator<Item = (&'a String, &'a Stats)>,
    rank: Option<(i64, &str)>,
) -> Vec<Row> {
    let names: Vec<(&String, &Stats)> = names.collect();
    let total: i128 = names
        .iter()
        .fold(0i128, |t, (_, s)| t.saturating_add(s.total));
    let mut rows: Vec<Row> = names
        .into_iter()
        .map(|(n, s)| Row {
            pid: rank.map(|r| r.0),
            hostname: rank.map(|r| r.1.to_string()),
            name: n.clone(),
            calls: s.calls,
            total_ns: s.total,
            average_ns: s.total as f64 / s.calls.max(1) as f64,
            percent: percent(s.total, total),
            min_ns: s.min,
            max_ns: s.max,
            stddev_ns: s.stddev(),
        })
        .collect();
    rows.sort_by(|a, b| {
        (std::cmp::Reverse(a.total_ns), &a.name).cmp(&(std::cmp::Reverse(b.total_ns), &b.name))
    });
    rows
}

/// Views in AMD's order: kernels, copies, allocations, scratch, the API domains
/// (alphabetical), markers, and the domain view last.
fn view_rank(n: &str) -> u8 {
    match n {
        "KERNELS" => 0,
        "MEMORY_COPIES" => 1,
        "MEMORY_ALLOCATIONS" => 2,
        "SCRATCH_MEMORY" => 3,
        MARKERS => 5,
        DOMAIN => 6,
        _ => 4,
    }
}

impl Sink for SummarySink {
    fn projection(&self) -> rocpd_model::Projection {
        rocpd_model::Projection::without_json_text()
    }

    fn reads_table(&self, table: Table) -> bool {
        // No view shows counter values (AMD's summary has none either): on generated
        // traces they are half the rows, and the costliest query of the RocPD reader.
        table != Table::PmcValue
    }

    fn needs_time_order(&self) -> bool {
        // The busy-time union walks each GPU's intervals in start order; statistics don't care.
        self.utilisation.is_some()
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
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
        let hosts = Hosts::new(self.catalog.as_deref());
        let mut names: Vec<&String> = self.views.keys().collect();
        names.sort_by_key(|n| (view_rank(n), n.as_str()));
        let mut whole = Vec::new();
        let mut per_rank = Vec::new();
        // The domain view's statistics: per view (whole run), per (rank, view).
        let mut domain: BTreeMap<String, Stats> = BTreeMap::new();
        let mut domain_ranks: BTreeMap<Rank, BTreeMap<String, Stats>> = BTreeMap::new();
        for name in names {
            let stats = &self.views[name];
            // The whole run: every rank's statistics merged, ranks in order (the result
            // does not depend on hash-map order).
            let mut merged: BTreeMap<&String, Stats> = BTreeMap::new();
            for ranked in stats.values() {
                for (n, s) in ranked {
                    merged.entry(n).or_default().merge(s);
                }
            }
            let d = domain.entry(name.clone()).or_default();
            for s in merged.values() {
                d.merge(s);
            }
            whole.push(View {
                name: name.clone(),
                by_rank: false,
                rows: rows_of(merged.iter().map(|(n, s)| (*n, s)), None),
            });
            if !self.by_rank {
                continue;
            }
            let mut rows = Vec::new();
            for (rank, ranked) in stats {
                let Some(rank) = *rank else { continue };
                let host = hosts.of(rank);
                let mut sorted: Vec<(&String, &Stats)> = ranked.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(b.0));
                let d = domain_ranks
                    .entry(rank)
                    .or_default()
                    .entry(name.clone())
                    .or_default();
                for (_, s) in &sorted {
                    d.merge(s);
                }
                rows.push((rank, rows_of(sorted.into_iter(), Some((rank.2, &host)))));
            }
            per_rank.push(View {
                name: name.clone(),
                by_rank: true,
                rows: sort_by_pid(rows),
            });
        }
        if self.domain && !domain.is_empty() {
            whole.push(View {
                name: DOMAIN.into(),
                by_rank: false,
                rows: rows_of(domain.iter(), None),
            });
            if self.by_rank {
                let rows = domain_ranks
                    .iter()
                    .map(|(rank, views)| {
                        let host = hosts.of(*rank);
                        (*rank, rows_of(views.iter(), Some((rank.2, &host))))
                    })
                    .collect();
                per_rank.push(View {
                    name: DOMAIN.into(),
                    by_rank: true,
                    rows: sort_by_pid(rows),
                });
            }
        }
        let mut views = whole;
        views.extend(per_rank);
        let utilisation = self.utilisation.map(utilisation::Tracker::finish);
        if let Ok(mut out) = self.out.lock() {
            *out = Summary { views, utilisation };
        }
        let mut report = OutputReport::default();
        for (t, n) in self.rows_seen {
            report.rows.insert(t, n);
        }
        if self.negative_durations > 0 {
            report.notes.push(format!(
                "{} events ended before they started; they are counted with zero duration",
                self.negative_durations
            ));
        }
        Ok(vec![report])
    }
}

/// Rows of every rank, by pid (AMD's `ORDER BY pid`), then source and node; each rank's
/// rows keep their order.
fn sort_by_pid(mut ranks: Vec<(Rank, Vec<Row>)>) -> Vec<Row> {
    ranks.sort_by_key(|(r, _)| (r.2, r.0, r.1));
    ranks.into_iter().flat_map(|(_, rows)| rows).collect()
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
    fn merged_statistics_equal_the_statistics_of_all_events() {
        let (xs, ys) = ([5u64, 9, 9, 1000, 3], [7u64, 7, 12]);
        let (mut a, mut b, mut all) = (Stats::default(), Stats::default(), Stats::default());
        for x in xs {
            a.add(x);
            all.add(x);
        }
        for y in ys {
            b.add(y);
            all.add(y);
        }
        let mut m = Stats::default();
        m.merge(&a);
        m.merge(&Stats::default());
        m.merge(&b);
        assert_eq!((m.calls, m.total, m.min, m.max), (8, 1052, 3, 1000));
        assert!((m.mean - all.mean).abs() < 1e-9);
        let (sm, sa) = (m.stddev().unwrap(), all.stddev().unwrap());
        assert!((sm - sa).abs() < 1e-9 * sa, "{sm} vs {sa}");
    }

    #[test]
    fn one_call_has_no_deviation_and_a_zero_total_no_share() {
        let mut s = Stats::default();
        s.add(42);
        assert_eq!(s.stddev(), None);
        s.add(42);
        assert_eq!(s.stddev(), Some(0.0));
        assert_eq!(percent(0, 0), None);
        assert_eq!(percent(1, 4), Some(25.0));
    }

    #[test]
    fn region_categories_parse_and_route_like_rocpd() {
        use RegionCategories as R;
        assert_eq!(R::from_args::<&str>(&[]).unwrap(), R::Auto);
        assert_eq!(R::from_args(&["none"]).unwrap(), R::Nothing);
        assert!(R::from_args(&["NONE", "HIP"]).is_err());
        assert!(R::from_args(&[""]).is_err());
        let only = R::from_args(&["hip", "HIP", "marker", "hip_runtime"]).unwrap();
        assert_eq!(
            only,
            R::Only(vec!["HIP".into(), "MARKER".into(), "HIP_RUNTIME".into()])
        );
        assert_eq!(
            only.views_of("HIP_RUNTIME_API_EXT", false),
            vec!["HIP".to_string(), "HIP_RUNTIME".to_string()]
        );
        assert_eq!(
            only.views_of("HIP_COMPILER_API", false),
            vec!["HIP".to_string()]
        );
        assert!(only.views_of("HIPX_API", false).is_empty());
        assert!(only.views_of("HSA_CORE_API", false).is_empty());
        assert_eq!(
            only.views_of("MARKER_CORE_API", false),
            vec!["MARKERS".to_string()]
        );
        assert_eq!(only.views_of("", true), vec!["MARKERS".to_string()]);
        let hip = R::from_args(&["HIP"]).unwrap();
        assert!(hip.views_of("MARKER_CORE_API", true).is_empty());
        assert_eq!(
            R::Auto.views_of("hsa_core_api", false),
            vec!["HSA".to_string()]
        );
        assert_eq!(R::Auto.views_of("OMPT", false), vec!["OMPT".to_string()]);
        assert_eq!(R::Auto.views_of("", false), vec!["NONE".to_string()]);
        assert!(R::Nothing.views_of("HIP_API", false).is_empty());
        assert!(R::Nothing.views_of("MARKER_CORE_API", true).is_empty());
        // A category named like a view that is not a category's has a view of its own.
        for (category, view) in [
            ("KERNELS_API", "KERNELS_API"),
            ("kernels", "KERNELS_API"),
            ("DOMAIN_X", "DOMAIN_API"),
            ("MARKERS_EXT", "MARKERS_API"),
            ("MEMORY_COPIES", "MEMORY"),
        ] {
            assert_eq!(R::Auto.views_of(category, false), vec![view.to_string()]);
        }
        let fixed = R::from_args(&["KERNELS", "SCRATCH_MEMORY"]).unwrap();
        assert_eq!(
            fixed.views_of("KERNELS_API", false),
            vec!["KERNELS_API".to_string()]
        );
        assert_eq!(
            fixed.views_of("SCRATCH_MEMORY", false),
            vec!["SCRATCH_MEMORY_API".to_string()]
        );
        let both = R::from_args(&["KERNELS", "KERNELS_API"]).unwrap();
        assert_eq!(
            both.views_of("KERNELS_API", false),
            vec!["KERNELS_API".to_string()],
            "counted once"
        );
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
