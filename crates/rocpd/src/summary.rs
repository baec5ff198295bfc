//! The flat profile of `rocpd summary`: per view and name, calls and duration statistics,
//! optionally per process and with each GPU's utilisation over time; and its files.

use std::path::{Path, PathBuf};

use rocpd_model::{AgentIndexMode, Catalog, Error, Result};
use rocpd_pipeline::{OutputFile, PathGuard, Progress, RunReport};
use rocpd_summary::{RegionCategories, RunInfo, Summary, SummaryHandle, SummarySink};

use crate::window::{Selection, Span};
use crate::Inputs;

/// What a summary computes.
#[derive(Debug, Clone)]
pub struct SummaryOptions {
    /// Also every view per process (AMD's `--summary-by-rank`: `<view>_summary_by_rank`).
    pub by_rank: bool,
    /// Also the view with one row per other view (AMD's `--domain-summary`), per process
    /// too with `by_rank`.
    pub domain_summary: bool,
    /// Which API calls and markers get views (AMD's `--region-categories`).
    pub region_categories: RegionCategories,
    /// Which events count.
    pub selection: Selection,
    /// Also compute each GPU's busy fraction over this many time bins (1 to
    /// [`MAX_UTILISATION_BINS`]).
    pub utilisation_bins: Option<usize>,
    /// Decode threads.
    pub threads: usize,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            by_rank: false,
            domain_summary: false,
            region_categories: RegionCategories::Auto,
            selection: Selection::default(),
            utilisation_bins: None,
            threads: crate::default_threads(),
        }
    }
}

/// A finished summary and the run that made it.
#[derive(Debug, Clone)]
pub struct SummaryRun {
    /// The views (and utilisation).
    pub summary: Summary,
    /// Rows read and dropped.
    pub report: RunReport,
    /// The time range the events cover: the window, else the inputs' span.
    pub span: Option<Span>,
    /// Whether the views per process were computed too.
    pub by_rank: bool,
}

/// The most time bins of the utilisation timeline: each GPU keeps a counter a bin, and
/// a page shows no more than a few thousand.
pub const MAX_UTILISATION_BINS: usize = 100_000;

/// The files a summary can be written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryFormat {
    /// Aligned text tables, returned as text (for a terminal).
    Console,
    /// One `<name>_<view>_summary[_by_rank].csv` per view, numbers in full precision.
    Csv,
    /// One `<name>_summary.json` holding every view, numbers in full precision.
    Json,
    /// One `<name>_summary.md` holding every view.
    Markdown,
    /// One self-contained `<name>_summary.html` page.
    Html,
}

impl Inputs {
    /// Computes the flat profile.
    pub fn summary(
        &mut self,
        options: &SummaryOptions,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<SummaryRun> {
        if let Some(bins) = options.utilisation_bins {
            if !(1..=MAX_UTILISATION_BINS).contains(&bins) {
                return Err(Error::Usage(format!(
                    "the utilisation timeline takes 1 to {MAX_UTILISATION_BINS} bins, not {bins}"
                )));
            }
        }
        let window = options.selection.resolve(self)?;
        let span = window.or(self.span());
        let handle: SummaryHandle = Default::default();
        let mut sink = SummarySink::new(options.by_rank, handle.clone())
            .with_region_categories(options.region_categories.clone());
        if options.domain_summary {
            sink = sink.with_domain_summary();
        }
        let sink = match (span, options.utilisation_bins) {
            (Some(span), Some(bins)) => sink.with_utilisation(span, bins.max(1)),
            _ => sink,
        };
        let report = self.run_window(
            &options.selection,
            window,
            vec![Box::new(sink)],
            options.threads,
            on_progress,
        )?;
        let mut report = report;
        // What a conversion's report says of its inputs, a summary's says too.
        report.notes.extend(self.input_notes("the summary"));
        let summary = std::mem::take(&mut *handle.lock().unwrap_or_else(|p| p.into_inner()));
        Ok(SummaryRun {
            summary,
            report,
            span,
            by_rank: options.by_rank,
        })
    }

    /// What the HTML page says about the run: the user's files, processes, nodes,
    /// agents, the span and the events read.
    pub fn run_info(&self, run: &SummaryRun) -> RunInfo {
        run_info(self.catalog(), self.files(), &run.report, run.span)
    }

    /// Renders `run` in `formats` and writes the files into `dir` (named after `name`),
    /// after checking that none would replace an input or another; returns the console
    /// text and the files written. Files are written whole or not at all.
    pub fn write_summary(
        &self,
        run: &SummaryRun,
        formats_given: &[SummaryFormat],
        dir: &Path,
        name: &str,
    ) -> Result<(String, Vec<PathBuf>)> {
        // Each format once, in the order first given.
        let mut formats: Vec<SummaryFormat> = Vec::new();
        for f in formats_given {
            if !formats.contains(f) {
                formats.push(*f);
            }
        }
        rocpd_model::naming::check_output_name(name)?;
        let mut guard = PathGuard::new(&self.read_files());
        let mut console = String::new();
        let mut pending: Vec<(PathBuf, String)> = Vec::new();
        let views = &run.summary.views;
        for f in formats {
            let (format, ext) = match f {
                SummaryFormat::Console => (rocpd_summary::OutputFormat::Console, ""),
                SummaryFormat::Csv => (rocpd_summary::OutputFormat::Csv, "csv"),
                SummaryFormat::Json => (rocpd_summary::OutputFormat::Json, "json"),
                SummaryFormat::Markdown => (rocpd_summary::OutputFormat::Markdown, "md"),
                SummaryFormat::Html => {
                    let page = rocpd_summary::render_html(
                        views,
                        run.summary.utilisation.as_ref(),
                        &self.run_info(run),
                    );
                    let file = if name.is_empty() {
                        "summary.html".to_string()
                    } else {
                        format!("{name}_summary.html")
                    };
                    let path = dir.join(file);
                    guard.claim_file(&path)?;
                    pending.push((path, page));
                    continue;
                }
            };
            for (view, text) in rocpd_summary::render(views, format) {
                if format == rocpd_summary::OutputFormat::Console {
                    console.push_str(&text);
                    continue;
                }
                // A view may be named after a category of the input: only its letters,
                // digits, `-` and `_` go into the file name, never a path.
                let view = rocpd_model::naming::file_safe(&view, false);
                let file = if name.is_empty() {
                    format!("{view}.{ext}")
                } else {
                    format!("{name}_{view}.{ext}")
                };
                let path = dir.join(file);
                guard.claim_file(&path)?;
                pending.push((path, text));
            }
        }
        // Held across every file: a file that fails drops the others' temporaries first.
        let new_dirs = rocpd_pipeline::NewDirs::of(dir);
        let mut files = Vec::new();
        for (path, text) in &pending {
            let mut f = OutputFile::create(path)?;
            std::io::Write::write_all(f.writer(), text.as_bytes()).map_err(|e| f.io_error(e))?;
            files.push(f);
        }
        // Commit only when every file was written whole.
        let mut written = Vec::new();
        for f in files {
            let path = f.path().to_path_buf();
            f.commit()?;
            written.push(path);
        }
        new_dirs.keep();
        Ok((console, written))
    }
}

fn run_info(
    catalog: &Catalog,
    files: &[PathBuf],
    report: &RunReport,
    span: Option<Span>,
) -> RunInfo {
    let host = |source: u32, nid: i64| {
        catalog
            .nodes
            .iter()
            .find(|n| n.source == source && n.id == nid)
            .and_then(|n| n.hostname.clone())
            .unwrap_or_default()
    };
    let mut nodes: Vec<String> = catalog
        .processes
        .iter()
        .map(|p| host(p.source, p.nid))
        .collect();
    nodes.sort();
    nodes.dedup();
    let mut agents: Vec<String> = catalog
        .agents
        .iter()
        .map(|a| {
            let (label, n) = a.label(AgentIndexMode::TypeRelative);
            let product = a
                .product_name
                .as_deref()
                .or(a.name.as_deref())
                .unwrap_or("");
            format!("{} · {label} {n} {product}", host(a.source, a.nid))
                .trim_end()
                .to_string()
        })
        .collect();
    agents.sort();
    agents.dedup();
    RunInfo {
        inputs: files.iter().map(|f| f.display().to_string()).collect(),
        processes: catalog
            .processes
            .iter()
            .map(|p| {
                (
                    host(p.source, p.nid),
                    p.pid,
                    p.command.clone().unwrap_or_default(),
                )
            })
            .collect(),
        nodes,
        agents,
        span,
        events: report
            .rows_in
            .iter()
            .map(|(t, n)| (t.to_string(), *n))
            .collect(),
    }
}
