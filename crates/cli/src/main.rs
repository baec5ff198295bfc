//! The `rocpd` command: flags → plan → one library call.

mod convert;
mod info;
mod inputs;
mod out;
mod sources;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::{Parser, Subcommand, ValueEnum};
use rocpd_model::AgentIndexMode;
use rocpd_parquet::{ParquetOptions, PartitionKey};
use rocpd_perfetto::PerfettoOptions;
use rocpd_pipeline::{PathGuard, RunOptions};
use rocpd_stages::{time, FilterRule, SplitMode};

/// Convert ROCm profiling traces (RocPD databases, rocprofv3 CSV/JSON, Triton Proton) to
/// Perfetto, OTF2, Parquet or merged RocPD, fast and in bounded memory.
#[derive(Parser, Debug)]
#[command(name = "rocpd", version, about)]
struct Cli {
    /// No progress bar and no report on stderr.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Convert inputs to one or more output formats.
    Convert(Box<ConvertArgs>),
    /// Show what is in the inputs: processes, agents, time span, rows per table.
    Info(InfoArgs),
    /// Merge databases into one RocPD database (same as `convert -f rocpd`, named `<DIR>/<NAME>.db`).
    Merge(Box<MergeArgs>),
    /// Flat profile: per kernel, API function, copy direction and marker, the calls, total,
    /// average, min, max and standard deviation of durations.
    Summary(Box<SummaryArgs>),
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Perfetto trace (`.pftrace`), for ui.perfetto.dev.
    #[value(alias = "perfetto")]
    Pftrace,
    /// One merged RocPD database (`.db`), for AMD's rocpd tools and ROCm Optiq.
    Rocpd,
    /// A Parquet dataset (a directory of tables), for DuckDB, Polars, Spark, Trino.
    Parquet,
    /// An OTF2 archive (`.otf2` anchor, `.def`, event files), for Vampir and the Score-P tools.
    Otf2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SplitBy {
    Time,
    Process,
    Node,
    Agent,
    Size,
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" => Ok(true),
        "false" | "f" | "no" | "n" | "0" => Ok(false),
        _ => Err(format!("{s:?} is not true or false")),
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AgentIndex {
    Absolute,
    Relative,
    TypeRelative,
}

#[derive(clap::Args, Debug)]
struct ConvertArgs {
    /// Input files, globs or directories (RocPD databases, rocprofv3 CSV/JSON, Proton files;
    /// the format is detected by content).
    #[arg(short, long = "input", required = true, num_args = 1..)]
    input: Vec<std::ffi::OsString>,
    /// Output formats.
    #[arg(short = 'f', long = "output-format", required = true, num_args = 1.., ignore_case = true)]
    format: Vec<Format>,
    /// Output name prefix: files are `<DIR>/<NAME>_results.<ext>`.
    #[arg(
        short = 'o',
        long = "output-file",
        env = "ROCPD_OUTPUT_NAME",
        default_value = "out"
    )]
    output_file: String,
    /// Output directory.
    #[arg(
        short = 'd',
        long = "output-path",
        env = "ROCPD_OUTPUT_PATH",
        default_value = "./rocpd-output-data"
    )]
    output_path: PathBuf,
    /// Kernels on per-agent HSA queue tracks, copies on per-agent/thread tracks (instead of per HIP stream).
    #[arg(long)]
    group_by_queue: bool,
    /// Name kernels after the enclosing ROCTx range, when there is one.
    #[arg(long)]
    kernel_rename: bool,
    /// How agents are numbered in names.
    #[arg(long, value_enum, default_value = "relative")]
    agent_index_value: AgentIndex,
    /// Leave out debug annotations (begin_ns, corr_id, ...): smaller files.
    #[arg(long)]
    no_annotations: bool,
    /// Add API call arguments as an `args` annotation.
    #[arg(long)]
    annotate_args: bool,
    #[command(flatten)]
    select: SelectArgs,
    /// Split the output into several files, each complete in itself.
    #[arg(long, value_enum)]
    split_by: Option<SplitBy>,
    /// --split-by time: the number of equal time parts.
    #[arg(long)]
    split_count: Option<usize>,
    /// --split-by time: the length of each part (1s, 500ms, ...).
    #[arg(long)]
    split_duration: Option<String>,
    /// --split-by size: the largest file (500MB, 1GiB, ...); implies --split-by size.
    #[arg(long)]
    max_file_size: Option<String>,
    /// Parquet: rows per row group (the unit a time-range query skips or reads).
    #[arg(long, default_value_t = 32768)]
    row_group_rows: usize,
    /// Parquet: rows per file before a new part file starts.
    #[arg(long, default_value_t = 16_777_216)]
    max_rows_per_file: u64,
    /// Parquet: hive partitioning by `node`, `pid` or `node,pid`.
    #[arg(long)]
    partition_by: Option<String>,
    /// Most outputs open at once in a process, node or agent split; more keys are written
    /// in further passes over the inputs.
    #[arg(long, default_value_t = 64)]
    max_open: usize,
    /// Threads: 1 decodes and writes on one thread; 2 or more decode on a thread of its own.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Also write the run report (events in/out per table and output) as JSON.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Accepted for compatibility with AMD's rocpd; this tool streams and needs no trace buffer.
    #[arg(long, hide = true)]
    perfetto_backend: Option<String>,
    /// Accepted for compatibility with AMD's rocpd (ignored).
    #[arg(long, hide = true)]
    perfetto_buffer_fill_policy: Option<String>,
    /// Accepted for compatibility with AMD's rocpd (ignored).
    #[arg(long, hide = true)]
    perfetto_buffer_size: Option<String>,
    /// Accepted for compatibility with AMD's rocpd (ignored).
    #[arg(long, hide = true)]
    perfetto_shmem_size_hint: Option<String>,
}

/// What to read: filters and the time window (shared by convert and summary).
#[derive(clap::Args, Debug, Clone)]
struct SelectArgs {
    /// rocprofv3 CSV/JSON inputs: skip rows that cannot be read (counted in the report)
    /// instead of stopping at the first.
    #[arg(long)]
    skip_bad_rows: bool,
    /// Keep only events matching KEY=VALUE[,VALUE...] (KEY: kind, category, name (a regular
    /// expression), node, pid, tid, agent); repeat for more keys (all must match).
    #[arg(long, value_name = "KEY=VALUE")]
    include: Vec<String>,
    /// Remove events matching KEY=VALUE[,VALUE...] (keys as for --include).
    #[arg(long, value_name = "KEY=VALUE")]
    exclude: Vec<String>,
    /// Window start: absolute ns, an offset from the trace start with a unit (1.5s, 200ms,
    /// 300us), or N% of the inputs' time span.
    #[arg(long, conflicts_with = "start_marker")]
    start: Option<String>,
    /// Window end (same forms as --start).
    #[arg(long, conflicts_with = "end_marker")]
    end: Option<String>,
    /// Window start at the start of the ROCTx marker with this message.
    #[arg(long)]
    start_marker: Option<String>,
    /// Window end at the end of the ROCTx marker with this message.
    #[arg(long)]
    end_marker: Option<String>,
    /// true: keep only events wholly inside the window; false: keep events that overlap it
    /// (what AMD's rocpd code does, whatever its help text says).
    #[arg(long, default_value = "true", value_parser = parse_bool, action = clap::ArgAction::Set)]
    inclusive: bool,
    /// Keep an API call and the kernels and copies it launched together: a window never
    /// shows a kernel without its launch, or the reverse.
    #[arg(long)]
    keep_launches: bool,
}

#[derive(clap::Args, Debug)]
struct SummaryArgs {
    /// Input files, globs or directories.
    #[arg(short, long = "input", required = true, num_args = 1..)]
    input: Vec<std::ffi::OsString>,
    /// One summary per process (rank) instead of one over all inputs.
    #[arg(long = "summary-by-rank", alias = "by-rank")]
    by_rank: bool,
    /// Output formats; console prints to stdout, the others write files.
    #[arg(short = 'f', long = "format", value_enum, num_args = 1.., default_value = "console")]
    format: Vec<SummaryFormat>,
    /// Output file prefix: `<DIR>/<NAME>_<view>_summary.csv`, ... (none by default).
    #[arg(
        short = 'o',
        long = "output-file",
        env = "ROCPD_OUTPUT_NAME",
        default_value = ""
    )]
    output_file: String,
    /// Output directory for file formats.
    #[arg(
        short = 'd',
        long = "output-path",
        env = "ROCPD_OUTPUT_PATH",
        default_value = "./rocpd-output-data"
    )]
    output_path: PathBuf,
    #[command(flatten)]
    select: SelectArgs,
    /// Threads: 1 decodes and aggregates on one thread; 2 or more decode on a thread of its own.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// `-f html`: the number of equal time bins of the GPU utilisation timeline.
    #[arg(long, default_value_t = 200)]
    bins: usize,
}

#[derive(clap::Args, Debug)]
struct MergeArgs {
    /// Input files, globs or directories.
    #[arg(short, long = "input", required = true, num_args = 1..)]
    input: Vec<std::ffi::OsString>,
    /// Output name: the database is `<DIR>/<NAME>.db`.
    #[arg(
        short = 'o',
        long = "output-file",
        env = "ROCPD_OUTPUT_NAME",
        default_value = "merged"
    )]
    output_file: String,
    /// Output directory.
    #[arg(
        short = 'd',
        long = "output-path",
        env = "ROCPD_OUTPUT_PATH",
        default_value = "./rocpd-output-data"
    )]
    output_path: PathBuf,
    #[command(flatten)]
    select: SelectArgs,
    /// Also write the run report as JSON.
    #[arg(long)]
    report: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SummaryFormat {
    Console,
    Csv,
    Json,
    #[value(alias = "markdown")]
    Md,
    /// One self-contained HTML page with charts: `<DIR>/<NAME>_summary.html`.
    Html,
}

#[derive(clap::Args, Debug)]
struct InfoArgs {
    /// Input files, globs or directories.
    #[arg(short, long = "input", required = true, num_args = 1..)]
    input: Vec<std::ffi::OsString>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn split_of(args: &ConvertArgs) -> Result<Option<convert::Split>> {
    use convert::Split;
    let by = match (args.split_by, &args.max_file_size) {
        (None, Some(_)) => Some(SplitBy::Size),
        (by, _) => by,
    };
    if by != Some(SplitBy::Time) && (args.split_count.is_some() || args.split_duration.is_some()) {
        bail!("--split-count and --split-duration go with --split-by time");
    }
    if by != Some(SplitBy::Size) && args.max_file_size.is_some() {
        bail!("--max-file-size goes with --split-by size");
    }
    let Some(by) = by else {
        return Ok(None);
    };
    Ok(Some(match by {
        SplitBy::Time => match (args.split_count, &args.split_duration) {
            (Some(n), None) => Split::TimeCount(n),
            (None, Some(d)) => Split::TimeDuration(time::parse_duration(d)?),
            _ => bail!("--split-by time needs one of --split-count N or --split-duration D"),
        },
        SplitBy::Size => match &args.max_file_size {
            Some(s) => Split::Size(time::parse_size(s)?),
            None => bail!("--split-by size needs --max-file-size S (e.g. 1GiB)"),
        },
        SplitBy::Process => Split::Keyed(SplitMode::Process),
        SplitBy::Node => Split::Keyed(SplitMode::Node),
        SplitBy::Agent => Split::Keyed(SplitMode::Agent),
    }))
}

fn run_convert(args: ConvertArgs, quiet: bool) -> Result<()> {
    let mut formats: Vec<convert::Fmt> = args
        .format
        .iter()
        .map(|f| match f {
            Format::Pftrace => convert::Fmt::Pftrace,
            Format::Rocpd => convert::Fmt::Rocpd,
            Format::Parquet => convert::Fmt::Parquet,
            Format::Otf2 => convert::Fmt::Otf2,
        })
        .collect();
    formats.sort_by_key(|f| *f as u8);
    formats.dedup();
    let expanded = inputs::expand(&args.input)?;
    let files = expanded.files;
    let resolved = sources::resolve(&files, args.select.skip_bad_rows)?;
    let plan = convert::Plan {
        formats,
        merge_naming: false,
        inputs: resolved.dbs.clone(),
        origins: resolved.origins.clone(),
        dir: args.output_path.clone(),
        name: args.output_file.clone(),
        perfetto: PerfettoOptions {
            group_by_queue: args.group_by_queue,
            kernel_rename: args.kernel_rename,
            agent_index: match args.agent_index_value {
                AgentIndex::Absolute => AgentIndexMode::Absolute,
                AgentIndex::Relative => AgentIndexMode::Relative,
                AgentIndex::TypeRelative => AgentIndexMode::TypeRelative,
            },
            annotations: !args.no_annotations,
            annotate_args: args.annotate_args,
            ..Default::default()
        },
        parquet: ParquetOptions {
            row_group_rows: args.row_group_rows,
            max_rows_per_file: args.max_rows_per_file,
            partition_by: match &args.partition_by {
                Some(s) => PartitionKey::parse_list(s)?,
                None => Vec::new(),
            },
            ..Default::default()
        },
        rules: args.select.rules()?,
        window: args.select.window(),
        split: split_of(&args)?,
        max_open: args.max_open,
        run: RunOptions {
            decode_thread: args.threads > 1,
            ..Default::default()
        },
        input_files: files,
        report: args.report.clone(),
        import_notes: expanded
            .warnings
            .iter()
            .chain(&resolved.notes)
            .cloned()
            .collect(),
        skipped_rows: resolved.skipped_rows,
    };
    let bar = progress_bar(quiet);
    let report = convert::convert(&plan, &mut |p| {
        if let (Some((lo, hi)), Some(t)) = (p.span, p.time) {
            let done = ((t - lo) as f64 / (hi - lo).max(1) as f64).clamp(0.0, 1.0);
            bar.set_position((done * 1000.0) as u64);
        }
        bar.set_message(format!("{} events", p.rows));
    })?;
    bar.finish_and_clear();
    if !quiet {
        out::stderr_line(&report.render());
    }
    Ok(())
}

impl SelectArgs {
    fn rules(&self) -> Result<Vec<FilterRule>> {
        self.check()?;
        let mut rules = Vec::new();
        for r in &self.include {
            rules.push(FilterRule::parse(r, true)?);
        }
        for r in &self.exclude {
            rules.push(FilterRule::parse(r, false)?);
        }
        Ok(rules)
    }

    fn check(&self) -> Result<()> {
        let windowed = self.start.is_some()
            || self.end.is_some()
            || self.start_marker.is_some()
            || self.end_marker.is_some();
        if self.keep_launches && !windowed {
            bail!("--keep-launches goes with a time window (--start/--end or the marker options)");
        }
        Ok(())
    }

    fn window(&self) -> convert::WindowRequest {
        convert::WindowRequest {
            start: self.start.clone(),
            end: self.end.clone(),
            start_marker: self.start_marker.clone(),
            end_marker: self.end_marker.clone(),
            fully_inside: self.inclusive,
            keep_groups: self.keep_launches,
        }
    }
}

fn run_merge(args: MergeArgs, quiet: bool) -> Result<()> {
    let name = args
        .output_file
        .strip_suffix(".db")
        .unwrap_or(&args.output_file)
        .to_string();
    let expanded = inputs::expand(&args.input)?;
    let files = expanded.files;
    let resolved = sources::resolve(&files, args.select.skip_bad_rows)?;
    let plan = convert::Plan {
        formats: vec![convert::Fmt::Rocpd],
        merge_naming: true,
        inputs: resolved.dbs.clone(),
        origins: resolved.origins.clone(),
        dir: args.output_path.clone(),
        name,
        perfetto: PerfettoOptions::default(),
        parquet: ParquetOptions::default(),
        rules: args.select.rules()?,
        window: args.select.window(),
        split: None,
        max_open: 1,
        run: RunOptions::default(),
        input_files: files,
        report: args.report.clone(),
        import_notes: expanded
            .warnings
            .iter()
            .chain(&resolved.notes)
            .cloned()
            .collect(),
        skipped_rows: resolved.skipped_rows,
    };
    let report = convert::convert(&plan, &mut |_| {})?;
    if !quiet {
        out::stderr_line(&report.render());
    }
    Ok(())
}

fn run_summary(args: SummaryArgs, quiet: bool) -> Result<()> {
    let expanded = inputs::expand(&args.input)?;
    let files = expanded.files;
    let resolved = sources::resolve(&files, args.select.skip_bad_rows)?;
    let plan = convert::Plan {
        formats: Vec::new(),
        merge_naming: false,
        inputs: resolved.dbs.clone(),
        origins: resolved.origins.clone(),
        dir: args.output_path.clone(),
        name: args.output_file.clone(),
        perfetto: PerfettoOptions::default(),
        parquet: ParquetOptions::default(),
        rules: args.select.rules()?,
        window: args.select.window(),
        split: None,
        max_open: 1,
        run: RunOptions {
            decode_thread: args.threads > 1,
            ..Default::default()
        },
        input_files: files.clone(),
        report: None,
        import_notes: Vec::new(),
        skipped_rows: 0,
    };
    let result: rocpd_summary::SummaryHandle = Default::default();
    let bar = progress_bar(quiet);
    let html = args.format.contains(&SummaryFormat::Html);
    let mut events_span = None;
    let (report, catalog) = convert::run_into(
        &plan,
        &mut |_, span| {
            events_span = span;
            let sink = rocpd_summary::SummarySink::new(args.by_rank, result.clone());
            Box::new(match span {
                Some(span) if html => sink.with_utilisation(span, args.bins.max(1)),
                _ => sink,
            })
        },
        &mut |p| bar.set_message(format!("{} events", p.rows)),
    )?;
    bar.finish_and_clear();
    let summary = std::mem::take(
        &mut *result
            .lock()
            .map_err(|_| anyhow::anyhow!("internal: summary lost"))?,
    );
    let views = summary.views;
    let mut formats = args.format.clone();
    formats.dedup();
    // Render everything and check every file name first: no file is written when one of
    // them would replace an input or another.
    let mut guard = PathGuard::new(&files);
    let mut console = String::new();
    let mut written = Vec::new();
    for f in formats {
        let (format, ext) = match f {
            SummaryFormat::Console => (rocpd_summary::OutputFormat::Console, ""),
            SummaryFormat::Csv => (rocpd_summary::OutputFormat::Csv, "csv"),
            SummaryFormat::Json => (rocpd_summary::OutputFormat::Json, "json"),
            SummaryFormat::Md => (rocpd_summary::OutputFormat::Markdown, "md"),
            SummaryFormat::Html => {
                let run = run_info(&catalog, &files, &report, events_span);
                let page = rocpd_summary::render_html(
                    &views,
                    summary.utilisation.as_ref(),
                    &run,
                    args.by_rank,
                );
                let file = if args.output_file.is_empty() {
                    "summary.html".to_string()
                } else {
                    format!("{}_summary.html", args.output_file)
                };
                let path = args.output_path.join(file);
                guard.claim_file(&path)?;
                written.push((path, page));
                continue;
            }
        };
        for (name, text) in rocpd_summary::render(&views, format, args.by_rank) {
            if format == rocpd_summary::OutputFormat::Console {
                console.push_str(&text);
                continue;
            }
            let file = if args.output_file.is_empty() {
                format!("{name}.{ext}")
            } else {
                format!("{}_{name}.{ext}", args.output_file)
            };
            let path = args.output_path.join(file);
            guard.claim_file(&path)?;
            written.push((path, text));
        }
    }
    let mut files_out = Vec::new();
    for (path, text) in &written {
        let mut f = rocpd_pipeline::OutputFile::create(path)?;
        std::io::Write::write_all(f.writer(), text.as_bytes()).map_err(|e| f.io_error(e))?;
        files_out.push(f);
    }
    // Commit only when every file was written whole.
    for f in files_out {
        let path = f.path().to_path_buf();
        f.commit()?;
        if !quiet {
            out::stderr_line(&format!("wrote {}", path.display()));
        }
    }
    out::stdout(&console)
}

/// What the HTML summary says about the run: the user's files, processes, nodes, agents,
/// the span and the events read.
fn run_info(
    catalog: &rocpd_model::Catalog,
    files: &[std::path::PathBuf],
    report: &rocpd_pipeline::RunReport,
    span: Option<(i64, i64)>,
) -> rocpd_summary::RunInfo {
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
            let (label, n) = a.label(rocpd_model::AgentIndexMode::TypeRelative);
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
    rocpd_summary::RunInfo {
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

fn progress_bar(quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(1000);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {percent:>3}% of the time span, {msg} ({elapsed})",
        )
        .expect("valid template"),
    );
    bar
}

/// On SIGINT or SIGTERM, asks the run to stop at its next chunk (its unwinding removes
/// temporaries and unfinished outputs); if it has not ended after a grace period, or on a
/// second signal, removes every registered temporary itself and exits.
fn handle_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    const GRACE: std::time::Duration = std::time::Duration::from_secs(3);
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        let force = |sig: i32| -> ! {
            rocpd_pipeline::cleanup::remove_registered();
            out::stderr_line(&format!(
                "rocpd: interrupted by signal {sig}; temporary files removed"
            ));
            std::process::exit(128 + sig)
        };
        let mut seen = false;
        for sig in signals.forever() {
            rocpd_pipeline::cleanup::request_cancel(sig);
            if seen {
                force(sig);
            }
            seen = true;
            std::thread::spawn(move || {
                std::thread::sleep(GRACE);
                force(sig);
            });
        }
    });
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    handle_signals();
    let result = match cli.command {
        Command::Convert(args) => run_convert(*args, cli.quiet),
        Command::Info(args) => info::run(&args.input, args.json),
        Command::Summary(args) => run_summary(*args, cli.quiet),
        Command::Merge(args) => run_merge(*args, cli.quiet),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<out::StdoutClosed>() => ExitCode::SUCCESS,
        Err(e) => {
            let interrupted = rocpd_pipeline::cleanup::cancelled_by().or_else(|| {
                e.chain()
                    .find_map(|c| match c.downcast_ref::<rocpd_model::Error>() {
                        Some(rocpd_model::Error::Interrupted { signal }) => Some(*signal),
                        _ => None,
                    })
            });
            match interrupted {
                Some(sig) => {
                    out::stderr_line(&format!(
                        "rocpd: interrupted{}; temporary files removed",
                        if sig > 0 {
                            format!(" by signal {sig}")
                        } else {
                            String::new()
                        }
                    ));
                    ExitCode::from(u8::try_from(128 + sig).unwrap_or(130))
                }
                None => {
                    out::stderr_line(&format!("rocpd: error: {e:#}"));
                    ExitCode::from(1)
                }
            }
        }
    }
}
