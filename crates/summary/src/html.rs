//! The summary as one self-contained HTML page: the run, every view's table (sortable)
//! with a bar chart of its top names, per-rank time with `--summary-by-rank`, and the GPU
//! utilisation timeline. Inline CSS, inline SVG and a few lines of inline JavaScript (for
//! sorting); nothing is loaded from anywhere.
//!
//! Every name is escaped; names longer than [`SHORT_NAME`] characters are shortened for
//! display, with the full name in a tooltip (`title`). Numbers are the same as in the
//! other formats: the page renders the views [`crate::SummarySink`] produced.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::render::headers;
use crate::{Utilisation, View};

/// Characters of a name shown before it is shortened.
pub const SHORT_NAME: usize = 64;
/// Names drawn in each view's bar chart.
const TOP: usize = 12;

/// What the page says about the run, besides the views.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The input files.
    pub inputs: Vec<String>,
    /// Processes: (hostname, pid, command).
    pub processes: Vec<(String, i64, String)>,
    /// Distinct node hostnames.
    pub nodes: Vec<String>,
    /// Agents: one line each (`host · GPU 0 (MI300X)`).
    pub agents: Vec<String>,
    /// Earliest start and latest end of the events, ns.
    pub span: Option<(i64, i64)>,
    /// Events read per table.
    pub events: BTreeMap<String, u64>,
}

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A name for display: escaped, shortened past [`SHORT_NAME`] characters with the full
/// name in a tooltip.
fn display_name(name: &str) -> String {
    let flat: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= SHORT_NAME {
        return format!("<span title=\"{}\">{}</span>", escape(name), escape(&flat));
    }
    let cut: String = flat.chars().take(SHORT_NAME - 1).collect();
    format!(
        "<span class=\"short\" title=\"{}\">{}…</span>",
        escape(name),
        escape(&cut)
    )
}

/// `12.3 ms` style durations for labels.
fn human_ns(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    format!("{v:.3} {unit}")
}

/// A horizontal bar chart: (label, tooltip, value) rows.
fn bar_chart(rows: &[(String, String, f64)], value_label: &dyn Fn(f64) -> String) -> String {
    let max = rows.iter().map(|r| r.2).fold(0.0f64, f64::max).max(1e-9);
    let (label_w, bar_w, row_h) = (360.0, 420.0, 20.0);
    let h = row_h * rows.len() as f64 + 4.0;
    let mut s = format!(
        "<svg class=\"bars\" width=\"{}\" height=\"{h}\" role=\"img\">",
        label_w + bar_w + 120.0
    );
    for (i, (label, tip, v)) in rows.iter().enumerate() {
        let y = i as f64 * row_h + 2.0;
        let w = (v / max * bar_w).max(1.0);
        let shown: String = if label.chars().count() > 48 {
            format!("{}…", label.chars().take(47).collect::<String>())
        } else {
            label.clone()
        };
        let _ = write!(
            s,
            "<g><title>{}</title><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\"></rect>\
             <text x=\"{}\" y=\"{}\">{}</text></g>",
            escape(tip),
            label_w - 6.0,
            y + 14.0,
            escape(&shown),
            label_w,
            row_h - 4.0,
            label_w + w + 6.0,
            y + 14.0,
            escape(&value_label(*v)),
        );
    }
    s.push_str("</svg>");
    s
}

/// A statistic AMD's SQL can leave NULL: its cell, `–` (sorted below every value) when
/// missing.
fn optional_cell(x: Option<f64>, decimals: usize) -> String {
    match x {
        Some(x) => format!("<td data-v=\"{x}\">{x:.decimals$}</td>"),
        None => "<td data-v=\"-1\" title=\"no value (NULL in AMD's rocpd)\">–</td>".into(),
    }
}

fn view_section(v: &View) -> String {
    let mut s = String::new();
    let by_rank = v.by_rank;
    let id = escape(&v.title());
    let _ = write!(s, "<section class=\"view\" id=\"view-{id}\"><h2>{id}</h2>");
    // The chart: top names by total time over all ranks.
    let mut totals: BTreeMap<&str, f64> = BTreeMap::new();
    for r in &v.rows {
        *totals.entry(r.name.as_str()).or_default() += r.total_ns as f64;
    }
    let mut top: Vec<(&str, f64)> = totals.into_iter().collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    top.truncate(TOP);
    let rows: Vec<(String, String, f64)> = top
        .iter()
        .map(|(n, t)| {
            let flat: String = n
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            (flat, n.to_string(), *t)
        })
        .collect();
    s.push_str("<p class=\"caption\">Top names by total time</p>");
    s.push_str(&bar_chart(&rows, &|v| human_ns(v)));
    // The table: every row, sortable by clicking a header.
    s.push_str("<table class=\"sortable\"><thead><tr>");
    for (i, h) in headers(by_rank).iter().enumerate() {
        let _ = write!(s, "<th data-col=\"{i}\">{}</th>", escape(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &v.rows {
        s.push_str("<tr>");
        if by_rank {
            let pid = r.pid.map(|p| p.to_string()).unwrap_or_default();
            let host = r.hostname.clone().unwrap_or_default();
            let _ = write!(
                s,
                "<td data-v=\"{}\">{}</td><td>{}</td>",
                escape(&pid),
                escape(&pid),
                escape(&host)
            );
        }
        let _ = write!(
            s,
            "<td class=\"name\">{}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\" class=\"total\">{}</td>\
             <td data-v=\"{}\">{:.3}</td>{}<td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td>{}</tr>",
            display_name(&r.name),
            r.calls,
            r.calls,
            r.total_ns,
            r.total_ns,
            r.average_ns,
            r.average_ns,
            optional_cell(r.percent, 4),
            r.min_ns,
            r.min_ns,
            r.max_ns,
            r.max_ns,
            optional_cell(r.stddev_ns, 3),
        );
    }
    s.push_str("</tbody></table></section>");
    s
}

/// Views whose time is GPU time; every other view but markers is API time.
fn is_gpu_view(name: &str) -> bool {
    matches!(name, "KERNELS" | "MEMORY_COPIES")
}

fn is_api_view(name: &str) -> bool {
    !is_gpu_view(name)
        && !matches!(
            name,
            "MARKERS" | "MEMORY_ALLOCATIONS" | "SCRATCH_MEMORY" | crate::DOMAIN
        )
}

/// Per rank, total GPU time and API time: imbalance shows as bars of unequal length.
fn ranks_section(views: &[View]) -> String {
    let mut per: BTreeMap<(i64, String), (f64, f64)> = BTreeMap::new();
    for v in views.iter().filter(|v| v.by_rank) {
        for r in &v.rows {
            let key = (r.pid.unwrap_or(-1), r.hostname.clone().unwrap_or_default());
            let e = per.entry(key).or_default();
            if is_gpu_view(&v.name) {
                e.0 += r.total_ns as f64;
            } else if is_api_view(&v.name) {
                e.1 += r.total_ns as f64;
            }
        }
    }
    let label = |(pid, host): &(i64, String)| format!("pid {pid} on {host}");
    let gpu: Vec<(String, String, f64)> =
        per.iter().map(|(k, v)| (label(k), label(k), v.0)).collect();
    let api: Vec<(String, String, f64)> =
        per.iter().map(|(k, v)| (label(k), label(k), v.1)).collect();
    format!(
        "<section id=\"ranks\"><h2>Per rank</h2><p class=\"caption\">GPU time (kernels and copies)</p>{}\
         <p class=\"caption\">API time</p>{}</section>",
        bar_chart(&gpu, &|v| human_ns(v)),
        bar_chart(&api, &|v| human_ns(v))
    )
}

fn utilisation_section(u: &Utilisation) -> String {
    let mut s = String::from("<section id=\"utilisation\"><h2>GPU utilisation</h2>");
    let Some((lo, hi)) = u.span else {
        s.push_str("<p>No events.</p></section>");
        return s;
    };
    if u.agents.is_empty() {
        s.push_str("<p>No kernel or copy ran on a GPU agent.</p></section>");
        return s;
    }
    let len = (hi as i128 - lo as i128 + 1) as f64;
    let _ = write!(
        s,
        "<p class=\"caption\">Busy fraction of each GPU over {} equal bins of {} \
         (darker: busier; kernels and copies, overlaps counted once)</p>",
        u.bins,
        human_ns(len / u.bins.max(1) as f64)
    );
    let (label_w, strip_w, row_h) = (300.0, 700.0, 22.0);
    let cell = strip_w / u.bins.max(1) as f64;
    let h = row_h * u.agents.len() as f64 + 24.0;
    let _ = write!(
        s,
        "<svg class=\"timeline\" width=\"{}\" height=\"{h}\" role=\"img\">",
        label_w + strip_w + 60.0
    );
    for (i, a) in u.agents.iter().enumerate() {
        let y = i as f64 * row_h;
        let mean = a.busy.iter().sum::<f64>() / a.busy.len().max(1) as f64;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect class=\"strip\" x=\"{label_w}\" y=\"{y}\" width=\"{strip_w}\" height=\"{}\"></rect>",
            label_w - 6.0,
            y + 15.0,
            escape(&a.label),
            row_h - 4.0
        );
        for (k, b) in a.busy.iter().enumerate() {
            if *b > 0.0 {
                let _ = write!(
                    s,
                    "<rect x=\"{:.2}\" y=\"{y}\" width=\"{:.2}\" height=\"{}\" fill-opacity=\"{:.3}\">\
                     <title>{:.1}% busy</title></rect>",
                    label_w + k as f64 * cell,
                    cell,
                    row_h - 4.0,
                    b.clamp(0.05, 1.0),
                    b * 100.0
                );
            }
        }
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\">{:.0}%</text>",
            label_w + strip_w + 6.0,
            y + 15.0,
            mean * 100.0
        );
    }
    let axis_y = row_h * u.agents.len() as f64 + 14.0;
    let _ = write!(
        s,
        "<text x=\"{label_w}\" y=\"{axis_y}\">0</text><text x=\"{}\" y=\"{axis_y}\" text-anchor=\"end\">{}</text></svg></section>",
        label_w + strip_w,
        human_ns(len)
    );
    s
}

fn run_section(run: &RunInfo) -> String {
    let mut s = String::from("<section id=\"run\"><h2>The run</h2><table class=\"facts\">");
    let span = match run.span {
        Some((a, b)) => format!(
            "{a} .. {b} ns ({})",
            human_ns((b as i128 - a as i128) as f64)
        ),
        None => "no events".into(),
    };
    let total: u64 = run.events.values().sum();
    for (k, v) in [
        ("Inputs", run.inputs.len().to_string()),
        ("Processes", run.processes.len().to_string()),
        ("Nodes", run.nodes.len().to_string()),
        ("Agents", run.agents.len().to_string()),
        ("Time span", span),
        ("Events", total.to_string()),
    ] {
        let _ = write!(s, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    s.push_str(
        "</table><details><summary>Inputs, processes, agents, events per table</summary><ul>",
    );
    for i in &run.inputs {
        let _ = write!(s, "<li>{}</li>", escape(i));
    }
    s.push_str("</ul><table><tr><th>Host</th><th>PID</th><th>Command</th></tr>");
    for (h, p, c) in &run.processes {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{p}</td><td>{}</td></tr>",
            escape(h),
            display_name(c)
        );
    }
    s.push_str("</table><ul>");
    for a in &run.agents {
        let _ = write!(s, "<li>{}</li>", escape(a));
    }
    s.push_str("</ul><table><tr><th>Table</th><th>Events</th></tr>");
    for (t, n) in &run.events {
        let _ = write!(s, "<tr><td>{}</td><td>{n}</td></tr>", escape(t));
    }
    s.push_str("</table></details></section>");
    s
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}\
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}\
td.name,th:first-child,.facts th,.facts td{text-align:left}th{cursor:pointer;background:#f6f6f6}\
.bars rect{fill:#c0392b}.bars text,.timeline text{font-size:12px;fill:#333}\
.timeline rect{fill:#1f6fb2}.timeline rect.strip{fill:#eef2f6}.caption{color:#666;margin:4px 0}\
.short{border-bottom:1px dotted #999}";

/// Sorts a table by the clicked column (numbers by `data-v`), toggling the direction;
/// marks the page ready at the end, which the CI check looks for.
const SCRIPT: &str = "document.querySelectorAll('table.sortable').forEach(function(t){\
t.querySelectorAll('th').forEach(function(th){th.addEventListener('click',function(){\
var c=+th.dataset.col,b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),d=th.dataset.dir==='a'?-1:1;\
th.dataset.dir=d===1?'a':'d';rows.sort(function(x,y){var p=x.cells[c],q=y.cells[c];\
var u=p.dataset.v,v=q.dataset.v;if(u!==undefined&&v!==undefined){return d*(parseFloat(u)-parseFloat(v));}\
return d*p.textContent.localeCompare(q.textContent);});rows.forEach(function(r){b.appendChild(r);});});});});\
document.body.dataset.ready='1';";

/// Renders the whole page; with views per rank, also a per-rank section.
pub fn render_html(views: &[View], utilisation: Option<&Utilisation>, run: &RunInfo) -> String {
    let mut s = String::from(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>rocpd summary</title><style>",
    );
    s.push_str(STYLE);
    s.push_str("</style></head><body><h1>rocpd summary</h1><nav>");
    for v in views {
        let _ = write!(s, "<a href=\"#view-{0}\">{0}</a> · ", escape(&v.title()));
    }
    s.push_str("<a href=\"#utilisation\">GPU utilisation</a></nav>");
    s.push_str(&run_section(run));
    if let Some(u) = utilisation {
        s.push_str(&utilisation_section(u));
    }
    if views.iter().any(|v| v.by_rank) {
        s.push_str(&ranks_section(views));
    }
    for v in views {
        s.push_str(&view_section(v));
    }
    s.push_str("<script>");
    s.push_str(SCRIPT);
    s.push_str("</script></body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Row;

    fn row(name: &str, total: i128) -> Row {
        Row {
            pid: None,
            hostname: None,
            name: name.into(),
            calls: 2,
            total_ns: total,
            average_ns: total as f64 / 2.0,
            percent: Some(50.0),
            min_ns: 1,
            max_ns: total as u64,
            stddev_ns: None,
        }
    }

    #[test]
    fn odd_names_are_escaped_and_long_ones_shortened() {
        let long = format!("void k<{}>(\"x\")", "a".repeat(200));
        let views = vec![View {
            name: "KERNELS".into(),
            by_rank: false,
            rows: vec![
                row("<script>alert('x')</script> & \"q\"\nline", 10),
                row(&long, 5),
            ],
        }];
        let html = render_html(&views, None, &RunInfo::default());
        assert!(!html.contains("<script>alert"), "unescaped name");
        assert!(
            html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;")
        );
        // The long name: shortened in the cell, whole in the tooltip.
        let full = escape(&long);
        assert!(html.contains(&format!("title=\"{full}\"")));
        assert!(html.contains("…</span>"));
        assert_eq!(html.matches("<script>").count(), 1, "only our own script");
        // A missing deviation is shown as a dash that sorts below every value.
        assert!(html.contains("<td data-v=\"-1\" title=\"no value (NULL in AMD's rocpd)\">–</td>"));
    }
}
