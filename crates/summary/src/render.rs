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

fn cells(v: &View, by_rank: bool) -> Vec<Vec<String>> {
    v.rows
        .iter()
        .map(|r| {
            let mut c = Vec::new();
            if by_rank {
                c.push(r.pid.map(|p| p.to_string()).unwrap_or_default());
                c.push(r.hostname.clone().unwrap_or_default());
            }
            c.extend([
                r.name.clone(),
                r.calls.to_string(),
                r.total_ns.to_string(),
                format!("{:.3}", r.average_ns),
                format!("{:.4}", r.percent),
                r.min_ns.to_string(),
                r.max_ns.to_string(),
                format!("{:.3}", r.stddev_ns),
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

/// Renders one view (CSV, console, Markdown) or all views (JSON) as text.
pub fn render(views: &[View], format: OutputFormat, by_rank: bool) -> Vec<(String, String)> {
    match format {
        OutputFormat::Json => vec![(
            "summary".into(),
            serde_json::to_string_pretty(&serde_json::json!({ "views": views }))
                .expect("serialisable"),
        )],
        OutputFormat::Csv => views
            .iter()
            .map(|v| {
                let mut s = headers(by_rank)
                    .iter()
                    .map(|h| csv_field(h))
                    .collect::<Vec<_>>()
                    .join(",");
                s.push('\n');
                for row in cells(v, by_rank) {
                    s.push_str(
                        &row.iter()
                            .map(|c| csv_field(c))
                            .collect::<Vec<_>>()
                            .join(","),
                    );
                    s.push('\n');
                }
                (format!("{}_summary", v.name.to_ascii_lowercase()), s)
            })
            .collect(),
        OutputFormat::Markdown => {
            let mut s = String::new();
            for v in views {
                s.push_str(&format!(
                    "## {}_SUMMARY\n\n| {} |\n|",
                    v.name,
                    headers(by_rank).join(" | ")
                ));
                for (i, _) in headers(by_rank).iter().enumerate() {
                    s.push_str(if i > usize::from(by_rank) * 2 {
                        "---:|"
                    } else {
                        "---|"
                    });
                }
                s.push('\n');
                for row in cells(v, by_rank) {
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
                s.push_str(&format!("\n{}_SUMMARY:\n", v.name));
                let h = headers(by_rank);
                let rows: Vec<Vec<String>> = cells(v, by_rank)
                    .into_iter()
                    .map(|r| r.iter().map(|c| console_field(c, 60)).collect())
                    .collect();
                let mut w: Vec<usize> = h.iter().map(|x| x.chars().count()).collect();
                for r in &rows {
                    for (i, c) in r.iter().enumerate() {
                        w[i] = w[i].max(c.chars().count());
                    }
                }
                let name_col = usize::from(by_rank) * 2;
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
