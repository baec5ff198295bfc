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
            // The summary's domain view pools every event of each view (not the per-name
            // rows), so its deviation is that of all the domain's events.
            let domain = view(rocpd_summary::DOMAIN);
            let mut rows: Vec<Row> = StatsFile::ALL
                .iter()
                .filter_map(|f| f.view())
                .filter_map(|(name, domain_name)| {
                    let row = domain?.rows.iter().find(|r| r.name == name)?;
                    Some(Row {
                        name: domain_name.into(),
                        ..row.clone()
                    })
                })
                .collect();
            let total: i128 = rows.iter().map(|r| r.total_ns).sum();
            for r in &mut rows {
                r.percent = Some(r.total_ns as f64 * 100.0 / total.max(1) as f64);
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
    // rocprofv3 writes 0 where AMD's rocpd summary leaves a statistic NULL (one call, a
    // zero total).
    line.raw(&percentage(r.percent.unwrap_or(0.0)));
    line.int(r.min_ns);
    line.int(r.max_ns);
    line.raw(&stats_float(r.stddev_ns.unwrap_or(0.0)));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rocprofv3's own `hip_api_stats.csv` (rocprofiler-sdk documentation sample): from its
    /// counts, totals and extremes, our average, percentage and formats give its lines back
    /// byte for byte (the standard deviation, which needs the events, is taken from it).
    #[test]
    fn rocprofv3s_sample_stats_file_is_reproduced() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/rocprofv3-csv-docs/hip_api_stats.csv"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            String::from_utf8(crate::text::header_line(crate::layout::STATS_HEADER))
                .unwrap()
                .trim_end()
        );
        let fields: Vec<Vec<String>> = lines
            .map(|l| {
                let (name, rest) = l[1..].split_once("\",").unwrap();
                std::iter::once(name.to_string())
                    .chain(rest.split(',').map(String::from))
                    .collect()
            })
            .collect();
        let total: i128 = fields.iter().map(|f| f[2].parse::<i128>().unwrap()).sum();
        let mut line = Line::default();
        for (f, original) in fields.iter().zip(text.lines().skip(1)) {
            let calls: u64 = f[1].parse().unwrap();
            let t: i128 = f[2].parse().unwrap();
            let row = Row {
                pid: None,
                hostname: None,
                name: f[0].clone(),
                calls,
                total_ns: t,
                average_ns: t as f64 / calls as f64,
                percent: Some(t as f64 * 100.0 / total as f64),
                min_ns: f[5].parse().unwrap(),
                max_ns: f[6].parse().unwrap(),
                stddev_ns: Some(f[7].parse().unwrap()),
            };
            stats_line(&mut line, &row);
            assert_eq!(
                std::str::from_utf8(line.finish()).unwrap().trim_end(),
                original
            );
        }
    }
}
