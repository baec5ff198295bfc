//! rocprofv3's `--stats` files, from the flat profile of `rocpd-summary`.
//!
//! The summary sink aggregates while the trace streams (running statistics per name); at
//! the end each stats file takes the rows of one of its views, already sorted by total
//! duration (longest first) with each name's share of the view's total. `domain_stats.csv`
//! has one row per non-empty view, every name of it together.

use rocpd_summary::{Row, View};

use crate::layout::StatsFile;
use crate::text::{percentage, stats_float, Line};

/// The rows of `file` (empty when its view has none).
pub(crate) fn rows_of(file: StatsFile, views: &[View]) -> Vec<Row> {
    let view = |name: &str| views.iter().find(|v| v.name == name);
    match file.view() {
        Some((name, _)) => view(name).map(|v| v.rows.clone()).unwrap_or_default(),
        None => {
            let mut rows: Vec<Row> = StatsFile::ALL
                .iter()
                .filter_map(|f| f.view())
                .filter_map(|(name, domain)| Row::combine(domain.into(), &view(name)?.rows))
                .collect();
            let total: i128 = rows.iter().map(|r| r.total_ns).sum();
            for r in &mut rows {
                r.percent = r.total_ns as f64 * 100.0 / total.max(1) as f64;
            }
            rows.sort_by(|a, b| {
                (std::cmp::Reverse(a.total_ns), &a.name)
                    .cmp(&(std::cmp::Reverse(b.total_ns), &b.name))
            });
            rows
        }
    }
}

/// One stats line: `"Name",Calls,TotalDurationNs,AverageNs,Percentage,MinNs,MaxNs,StdDev`.
pub(crate) fn stats_line(line: &mut Line, r: &Row) {
    line.start();
    line.text(&r.name);
    line.int(r.calls);
    line.int(r.total_ns);
    line.raw(&stats_float(r.average_ns));
    line.raw(&percentage(r.percent));
    line.int(r.min_ns);
    line.int(r.max_ns);
    line.raw(&stats_float(r.stddev_ns));
}
