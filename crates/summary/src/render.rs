//! Writing a summary as a terminal table, CSV, JSON or Markdown.

use crate::View;

/// How to print a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Aligned text, one table per view.
    Console,
    /// One CSV document per view (rocpd's column names).
    Csv,
    /// One JSON document with every view.
    Json,
    /// Markdown tables.
    Markdown,
}

/// AMD's column names, with `ProcessID` and `Hostname` first per rank.
pub(crate) fn headers(by_rank: bool) -> Vec<&'static str> {
    let mut h = Vec::new();
    if by_rank {
        h.extend(["ProcessID", "Hostname"]);
    }
    h.extend([
        "Name",
        "Calls",
        "DURATION (nsec)",
        "AVERAGE (nsec)",
        "PERCENT (INC)",
        "MIN (nsec)",
        "MAX (nsec)",
        "STD_DEV",
    ]);
    h
}

/// How numbers are written: rounded for reading, or in full for other programs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Precision {
    /// Averages and deviations to 3 decimals, percentages to 4; `-` for a missing value.
    Rounded,
    /// Every digit needed to read the same number back; an empty field for a missing one.
    Full,
}

/// A floating-point number with every digit needed to read it back, as Python writes
/// it (`5.0`, not `5`), so the CSV reads like AMD's pandas output.
pub(crate) fn full(x: f64) -> String {
    let s = format!("{x}");
    if x.is_finite() && !s.contains(['.', 'e', 'E']) {
        format!("{s}.0")
    } else {
        s
    }
}

fn number(x: Option<f64>, decimals: usize, p: Precision) -> String {
    match (x, p) {
        (Some(x), Precision::Full) => full(x),
        (Some(x), Precision::Rounded) => format!("{x:.decimals$}"),
        (None, Precision::Full) => String::new(),
        (None, Precision::Rounded) => "-".into(),
    }
}

fn cells(v: &View, p: Precision) -> Vec<Vec<String>> {
    v.rows
        .iter()
        .map(|r| {
            let mut c = Vec::new();
            if v.by_rank {
                c.push(r.pid.map(|p| p.to_string()).unwrap_or_default());
                c.push(r.hostname.clone().unwrap_or_default());
            }
            c.extend([
                r.name.clone(),
                r.calls.to_string(),
                r.total_ns.to_string(),
                number(Some(r.average_ns), 3, p),
                number(r.percent, 4, p),
                r.min_ns.to_string(),
                r.max_ns.to_string(),
                number(r.stddev_ns, 3, p),
            ]);
            c
        })
        .collect()
}

/// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, with
/// quotes doubled.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn md_field(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// One-line, printable version of a name for the console.
fn console_field(s: &str, width: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() > width {
        let cut: String = flat.chars().take(width.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

/// Renders each view as a CSV document named after it (`kernels_summary`,
/// `kernels_summary_by_rank`, `domain_summary`, ...), or all views as one console text,
/// Markdown or JSON document (named `summary`).
pub fn render(views: &[View], format: OutputFormat) -> Vec<(String, String)> {
    match format {
        OutputFormat::Json => vec![(
            "summary".into(),
            serde_json::to_string_pretty(&serde_json::json!({ "views": views }))
                .expect("serialisable"),
        )],
        OutputFormat::Csv => views
            .iter()
            .map(|v| {
                let mut s = headers(v.by_rank)
                    .iter()
                    .map(|h| csv_field(h))
                    .collect::<Vec<_>>()
                    .join(",");
                s.push('\n');
                for row in cells(v, Precision::Full) {
                    s.push_str(
                        &row.iter()
                            .map(|c| csv_field(c))
                            .collect::<Vec<_>>()
                            .join(","),
                    );
                    s.push('\n');
                }
                (v.title().to_ascii_lowercase(), s)
            })
            .collect(),
        OutputFormat::Markdown => {
            let mut s = String::new();
            for v in views {
                let h = headers(v.by_rank);
                s.push_str(&format!("## {}\n\n| {} |\n|", v.title(), h.join(" | ")));
                for (i, _) in h.iter().enumerate() {
                    s.push_str(if i > usize::from(v.by_rank) * 2 {
                        "---:|"
                    } else {
                        "---|"
                    });
                }
                s.push('\n');
                for row in cells(v, Precision::Rounded) {
                    s.push_str(&format!(
                        "| {} |\n",
                        row.iter()
                            .map(|c| md_field(c))
                            .collect::<Vec<_>>()
                            .join(" | ")
                    ));
                }
                s.push('\n');
            }
            vec![("summary".into(), s)]
        }
        OutputFormat::Console => {
            let mut s = String::new();
            for v in views {
                s.push_str(&format!("\n{}:\n", v.title()));
                let h = headers(v.by_rank);
                let rows: Vec<Vec<String>> = cells(v, Precision::Rounded)
                    .into_iter()
                    .map(|r| r.iter().map(|c| console_field(c, 60)).collect())
                    .collect();
                let mut w: Vec<usize> = h.iter().map(|x| x.chars().count()).collect();
                for r in &rows {
                    for (i, c) in r.iter().enumerate() {
                        w[i] = w[i].max(c.chars().count());
                    }
                }
                let name_col = usize::from(v.by_rank) * 2;
                let line = |cells: &[String]| {
                    cells
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            if i <= name_col {
                                format!("{c:<width$}", width = w[i])
                            } else {
                                format!("{c:>width$}", width = w[i])
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("  ")
                };
                s.push_str(&line(&h.iter().map(|x| x.to_string()).collect::<Vec<_>>()));
                s.push('\n');
                for r in &rows {
                    s.push_str(line(r).trim_end());
                    s.push('\n');
                }
            }
            vec![("summary".into(), s)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Row;

    #[test]
    fn full_precision_reads_back_the_same_number() {
        for x in [5.0, 1.0 / 3.0, 458_514_859.0 / 13.0, 1e-7, 2.5e20, 0.0] {
            let s = full(x);
            assert_eq!(s.parse::<f64>().unwrap(), x, "{s}");
        }
        assert_eq!(full(5.0), "5.0");
        assert_eq!(full(0.1), "0.1");
    }

    #[test]
    fn missing_statistics_are_empty_in_csv_and_a_dash_on_the_console() {
        let v = View {
            name: "HIP".into(),
            by_rank: false,
            rows: vec![Row {
                pid: None,
                hostname: None,
                name: "hipInit".into(),
                calls: 1,
                total_ns: 0,
                average_ns: 0.0,
                percent: None,
                min_ns: 0,
                max_ns: 0,
                stddev_ns: None,
            }],
        };
        let csv = &render(std::slice::from_ref(&v), OutputFormat::Csv)[0];
        assert_eq!(csv.0, "hip_summary");
        assert_eq!(csv.1.lines().nth(1), Some("hipInit,1,0,0.0,,0,0,"));
        let console = &render(std::slice::from_ref(&v), OutputFormat::Console)[0].1;
        assert!(console.starts_with("\nHIP_SUMMARY:\n"), "{console}");
        let last: Vec<&str> = console.lines().last().unwrap().split_whitespace().collect();
        assert_eq!(last, ["hipInit", "1", "0", "0.000", "-", "0", "0", "-"]);
    }
}

/// A view as an Arrow batch with AMD's column names ([`headers`]): `ProcessID` (Int64)
/// and `Hostname` first in a view per rank, then `Name`, `Calls`, `DURATION (nsec)`,
/// `AVERAGE (nsec)`, `PERCENT (INC)`, `MIN (nsec)`, `MAX (nsec)`, `STD_DEV`. Counts and
/// durations are UInt64 (a total past 2^64-1 ns, possible only for hostile input,
/// saturates); the average, percentage and deviation are Float64, null where the other
/// formats leave them empty.
pub fn view_batch(v: &View) -> rocpd_model::Result<arrow_array::RecordBatch> {
    use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    let rows = &v.rows;
    let mut columns: Vec<ArrayRef> = Vec::new();
    if v.by_rank {
        columns.push(Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.pid))));
        columns.push(Arc::new(StringArray::from_iter(
            rows.iter().map(|r| r.hostname.as_deref()),
        )));
    }
    columns.push(Arc::new(StringArray::from_iter_values(
        rows.iter().map(|r| r.name.as_str()),
    )));
    let u64s = |f: &dyn Fn(&crate::Row) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(f)))
    };
    columns.push(u64s(&|r| r.calls));
    columns.push(u64s(&|r| {
        u64::try_from(r.total_ns.max(0)).unwrap_or(u64::MAX)
    }));
    columns.push(Arc::new(Float64Array::from_iter_values(
        rows.iter().map(|r| r.average_ns),
    )));
    columns.push(Arc::new(Float64Array::from_iter(
        rows.iter().map(|r| r.percent),
    )));
    columns.push(u64s(&|r| r.min_ns));
    columns.push(u64s(&|r| r.max_ns));
    columns.push(Arc::new(Float64Array::from_iter(
        rows.iter().map(|r| r.stddev_ns),
    )));
    let fields: Vec<Field> = headers(v.by_rank)
        .into_iter()
        .zip(&columns)
        .map(|(name, c)| {
            let nullable = matches!(name, "ProcessID" | "Hostname" | "PERCENT (INC)" | "STD_DEV");
            let ty: DataType = c.data_type().clone();
            Field::new(name, ty, nullable)
        })
        .collect();
    let meta = std::collections::HashMap::from([("rocpd.view".to_string(), v.title())]);
    Ok(arrow_array::RecordBatch::try_new(
        Arc::new(Schema::new_with_metadata(fields, meta)),
        columns,
    )?)
}

#[cfg(test)]
mod batch_tests {
    use super::*;
    use crate::Row;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, UInt64Type};
    use arrow_array::Array;

    fn row(name: &str, calls: u64, total: i128, stddev: Option<f64>) -> Row {
        Row {
            pid: Some(7),
            hostname: Some("h".into()),
            name: name.into(),
            calls,
            total_ns: total,
            average_ns: total as f64 / calls as f64,
            percent: None,
            min_ns: 1,
            max_ns: 2,
            stddev_ns: stddev,
        }
    }

    #[test]
    fn a_view_becomes_a_batch_with_amds_columns() {
        let v = View {
            name: "KERNELS".into(),
            by_rank: true,
            rows: vec![row("a", 2, 30, Some(1.5)), row("b", 1, i128::MAX, None)],
        };
        let b = view_batch(&v).unwrap();
        let schema = b.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, headers(true));
        let total = b.column(4).as_primitive::<UInt64Type>();
        assert_eq!(
            total.values(),
            &[30, u64::MAX],
            "a total past u64 saturates"
        );
        let sd = b.column(9).as_primitive::<Float64Type>();
        assert_eq!(sd.value(0), 1.5);
        assert!(sd.is_null(1), "one call has no deviation");
        assert!(b.column(6).is_null(0), "a zero total has no percentage");
        let flat = View {
            by_rank: false,
            ..v
        };
        assert_eq!(view_batch(&flat).unwrap().num_columns(), 8);
    }
}
