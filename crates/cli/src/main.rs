//! The `rocpd` command: flags → plan → one library call.

mod info;
mod out;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use rocpd::{AgentIndexMode, ParquetOptions, PartitionKey, PerfettoOptions};

/// Convert ROCm profiling traces (RocPD databases, rocprofv3 CSV/JSON, Triton Proton) to
/// Perfetto, OTF2, Parquet, CSV or merged RocPD, fast and in bounded memory.
#[derive(Parser, Debug)]
#[command(name = "rocpd", version, about, disable_version_flag = true)]
struct Cli {
    /// Print the version (`-v` as AMD's rocpd spells it, and `-V`).
    #[arg(short = 'v', long, short_alias = 'V', action = clap::ArgAction::Version)]
    version: Option<bool>,
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
    /// Run SQL over the views of a merged RocPD database of the inputs (`kernels`,
    /// `regions`, `top_kernels`, ...), after the filters and the time window.
    Query(Box<QueryArgs>),
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
    /// CSV files as AMD's `rocpd convert -f csv` writes them: `<DIR>/<NAME>_kernel_trace.csv`,
    /// `_hip_api_trace.csv`, ... (one per kind of event with rows).
    Csv,
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
    /// Output name prefix: files are `<DIR>/<NAME>_results.<ext>` (CSV: `<DIR>/<NAME>_<kind>.csv`).
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
    /// CSV: also write rocprofv3's `--stats` files (`<NAME>_kernel_stats.csv`,
    /// `_hip_api_stats.csv`, ..., `_domain_stats.csv`).
    #[arg(long)]
    stats: bool,
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
    /// Parquet: add this run to the dataset if it exists (it is created if not). Many
    /// processes may append to one dataset at once; each run adds files of its own.
    #[arg(long)]
    append: bool,
    /// Parquet: `parquet` (plain hive directories) or `delta` (plus a Delta Lake log per
    /// table, one commit per run). Every run appending to a dataset uses its format.
    #[arg(long, value_name = "FORMAT", value_parser = ["parquet", "delta"])]
    table_format: Option<String>,
    /// Most outputs open at once in a process, node or agent split; more keys are written
    /// in further passes over the inputs.
    #[arg(long, default_value_t = 64)]
    max_open: usize,
    /// Decode threads (default: the machine's available parallelism). 1 decodes and writes
    /// on one thread; N decodes the inputs on N threads, the writers on one more, and
    /// describes (or imports) N rocprofv3 or Proton inputs at once. The output is the
    /// same for every N.
    #[arg(long)]
    threads: Option<usize>,
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
    /// Also every view per process (rank): `<view>_summary_by_rank`.
    #[arg(long = "summary-by-rank", alias = "by-rank")]
    by_rank: bool,
    /// Also a view with one row per view (KERNELS, HIP, ...): `domain_summary` (and
    /// `domain_summary_by_rank` with --summary-by-rank).
    #[arg(long)]
    domain_summary: bool,
    /// API calls and markers to summarise, one view per category (HIP, HSA, RCCL,
    /// ROCDECODE, ROCJPEG, MARKER, ...; a category is taken when it is CAT or starts with
    /// CAT_, ignoring case, so HIP takes HIP_RUNTIME_API_EXT; a CAT matching nothing gives
    /// no view); NONE for none. Default: one view per category word found.
    #[arg(long, num_args = 1.., value_name = "CAT")]
    region_categories: Vec<String>,
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
    /// Decode threads (default: the machine's available parallelism).
    #[arg(long)]
    threads: Option<usize>,
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

#[derive(clap::Args, Debug)]
struct QueryArgs {
    /// Input files, globs or directories.
    #[arg(short, long = "input", required = true, num_args = 1..)]
    input: Vec<std::ffi::OsString>,
    /// The SQL statement (read-only: SELECT, WITH, VALUES, PRAGMA reads).
    #[arg(long, required = true)]
    query: String,
    /// A file of SQL statements run before the query (e.g. CREATE TEMP VIEW ...).
    #[arg(long)]
    script: Option<PathBuf>,
    /// How the result is written.
    #[arg(long, value_enum, default_value = "console")]
    format: QueryFormat,
    /// Write the result to `<DIR>/<NAME>.<ext>` instead of stdout (default NAME: out).
    #[arg(short = 'o', long = "output-file")]
    output_file: Option<String>,
    /// Write the result into this directory instead of stdout (default: ./rocpd-output-data).
    #[arg(short = 'd', long = "output-path")]
    output_path: Option<PathBuf>,
    #[command(flatten)]
    select: SelectArgs,
    /// Decode threads of a filtered or windowed run (default: the machine's available parallelism).
    #[arg(long)]
    threads: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum QueryFormat {
    /// An aligned text table (values cut at 60 characters).
    Console,
    /// A header line and a line per row (RFC 4180 quoting).
    Csv,
    /// An array of records, indented by 2.
    Json,
    /// A Markdown table.
    #[value(alias = "markdown")]
    Md,
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

fn split_of(args: &ConvertArgs) -> Result<Option<rocpd::Split>> {
    let by = args.split_by.map(|b| match b {
        SplitBy::Time => rocpd::SplitBy::Time,
        SplitBy::Process => rocpd::SplitBy::Process,
        SplitBy::Node => rocpd::SplitBy::Node,
        SplitBy::Agent => rocpd::SplitBy::Agent,
        SplitBy::Size => rocpd::SplitBy::Size,
    });
    Ok(rocpd::Split::from_options(
        by,
        args.split_count,
        args.split_duration.as_deref(),
        args.max_file_size.as_deref(),
    )?)
}

/// Opens the inputs of `-i` (importing rocprofv3 and Proton files on `threads` threads),
/// printing the files directory walks left out.
fn open_inputs(
    args: &[std::ffi::OsString],
    skip_bad_rows: bool,
    threads: usize,
) -> Result<rocpd::Inputs> {
    let options = rocpd::OpenOptions {
        skip_bad_rows,
        threads,
    };
    let inputs = rocpd::Inputs::open(args, &options)?;
    for w in inputs.warnings() {
        out::stderr_line(&format!("rocpd: warning: {}", rocpd::printable(w)));
    }
    Ok(inputs)
}

fn threads(n: Option<usize>) -> usize {
    n.unwrap_or_else(rocpd::default_threads).max(1)
}

fn run_convert(args: ConvertArgs, quiet: bool) -> Result<()> {
    let formats: Vec<rocpd::Format> = args
        .format
        .iter()
        .map(|f| match f {
            Format::Pftrace => rocpd::Format::Pftrace,
            Format::Rocpd => rocpd::Format::Rocpd,
            Format::Parquet => rocpd::Format::Parquet,
            Format::Otf2 => rocpd::Format::Otf2,
            Format::Csv => rocpd::Format::Csv,
        })
        .collect();
    let agent_index = match args.agent_index_value {
        AgentIndex::Absolute => AgentIndexMode::Absolute,
        AgentIndex::Relative => AgentIndexMode::Relative,
        AgentIndex::TypeRelative => AgentIndexMode::TypeRelative,
    };
    let conversion = rocpd::Conversion {
        formats,
        dir: args.output_path.clone(),
        name: args.output_file.clone(),
        merge_naming: false,
        perfetto: PerfettoOptions {
            group_by_queue: args.group_by_queue,
            kernel_rename: args.kernel_rename,
            agent_index,
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
            append: args.append,
            table_format: args
                .table_format
                .as_deref()
                .and_then(rocpd::TableFormat::from_name)
                .unwrap_or_default(),
            ..Default::default()
        },
        csv: rocpd::CsvOptions {
            agent_index,
            kernel_rename: args.kernel_rename,
            stats: args.stats,
        },
        selection: args.select.selection()?,
        split: split_of(&args)?,
        max_open: args.max_open,
        threads: threads(args.threads),
        report: args.report.clone(),
    };
    conversion.validate()?;
    let mut inputs = open_inputs(
        &args.input,
        args.select.skip_bad_rows,
        threads(args.threads),
    )?;
    let bar = progress_bar(quiet);
    let report = inputs.convert(&conversion, &mut |p| {
        if let (Some((lo, hi)), Some(t)) = (p.span, p.time) {
            let done = ((t - lo) as f64 / (hi - lo).max(1) as f64).clamp(0.0, 1.0);
            bar.set_position((done * 1000.0) as u64);
        }
        bar.set_message(format!("{} events", p.rows));
    })?;
    bar.finish_and_clear();
    if !quiet {
        out::stderr_lines(&report.render());
    }
    Ok(())
}

impl SelectArgs {
    fn selection(&self) -> Result<rocpd::Selection> {
        let selection = rocpd::Selection {
            rules: Vec::new(),
            window: rocpd::WindowRequest {
                start: self.start.clone(),
                end: self.end.clone(),
                start_marker: self.start_marker.clone(),
                end_marker: self.end_marker.clone(),
                fully_inside: self.inclusive,
                keep_groups: self.keep_launches,
            },
        };
        Ok(selection.with_rules(&self.include, &self.exclude)?)
    }
}

fn run_merge(args: MergeArgs, quiet: bool) -> Result<()> {
    let name = args
        .output_file
        .strip_suffix(".db")
        .unwrap_or(&args.output_file)
        .to_string();
    let conversion = rocpd::Conversion {
        formats: vec![rocpd::Format::Rocpd],
        dir: args.output_path.clone(),
        name,
        merge_naming: true,
        selection: args.select.selection()?,
        max_open: 1,
        report: args.report.clone(),
        ..Default::default()
    };
    let mut inputs = open_inputs(
        &args.input,
        args.select.skip_bad_rows,
        rocpd::default_threads(),
    )?;
    let report = inputs.convert(&conversion, &mut |_| {})?;
    if !quiet {
        out::stderr_lines(&report.render());
    }
    Ok(())
}

fn run_summary(args: SummaryArgs, quiet: bool) -> Result<()> {
    let formats: Vec<rocpd::SummaryFormat> = args
        .format
        .iter()
        .map(|f| match f {
            SummaryFormat::Console => rocpd::SummaryFormat::Console,
            SummaryFormat::Csv => rocpd::SummaryFormat::Csv,
            SummaryFormat::Json => rocpd::SummaryFormat::Json,
            SummaryFormat::Md => rocpd::SummaryFormat::Markdown,
            SummaryFormat::Html => rocpd::SummaryFormat::Html,
        })
        .collect();
    let options = rocpd::SummaryOptions {
        by_rank: args.by_rank,
        domain_summary: args.domain_summary,
        region_categories: rocpd::RegionCategories::from_args(&args.region_categories)?,
        selection: args.select.selection()?,
        utilisation_bins: formats
            .contains(&rocpd::SummaryFormat::Html)
            .then_some(args.bins),
        threads: threads(args.threads),
    };
    let mut inputs = open_inputs(
        &args.input,
        args.select.skip_bad_rows,
        threads(args.threads),
    )?;
    let bar = progress_bar(quiet);
    let run = inputs.summary(&options, &mut |p| {
        bar.set_message(format!("{} events", p.rows))
    })?;
    bar.finish_and_clear();
    let (console, written) =
        inputs.write_summary(&run, &formats, &args.output_path, &args.output_file)?;
    if !quiet {
        for path in written {
            out::stderr_line(&format!("wrote {}", path.display()));
        }
        let outputs = run.report.outputs.iter().flat_map(|o| o.notes.iter());
        for n in run.report.notes.iter().chain(outputs) {
            out::stderr_lines(&format!("note: {n}"));
        }
    }
    out::stdout(&console)
}

fn run_query(args: QueryArgs, quiet: bool) -> Result<()> {
    let query = rocpd::Query {
        sql: args.query.clone(),
        script: args.script.clone(),
        selection: args.select.selection()?,
        format: match args.format {
            QueryFormat::Console => rocpd::QueryFormat::Console,
            QueryFormat::Csv => rocpd::QueryFormat::Csv,
            QueryFormat::Json => rocpd::QueryFormat::Json,
            QueryFormat::Md => rocpd::QueryFormat::Markdown,
        },
        threads: threads(args.threads),
    };
    let mut inputs = open_inputs(
        &args.input,
        args.select.skip_bad_rows,
        threads(args.threads),
    )?;
    let result = if args.output_file.is_some() || args.output_path.is_some() {
        let dir = args
            .output_path
            .clone()
            .unwrap_or_else(|| PathBuf::from("./rocpd-output-data"));
        let name = args.output_file.as_deref().unwrap_or("out");
        let path = rocpd::query_output_path(&dir, name, query.format)?;
        inputs.query_to_file(&query, &path)?
    } else {
        let mut stdout = out::Stdout::new();
        match inputs.query(&query, &mut stdout) {
            Ok(r) => r,
            // A failed stdout explains the query's error better than the error itself.
            Err(e) => return Err(stdout.error().unwrap_or_else(|| e.into())),
        }
    };
    if result.rows == 0 {
        out::stderr_line(&format!("No results found for query: {}", args.query));
    } else if let (Some(path), false) = (&result.file, quiet) {
        out::stderr_line(&format!("wrote {} ({} rows)", path.display(), result.rows));
    }
    // What the readers left out, as a conversion's report says it: a query's numbers
    // must not hide skipped rows.
    if !quiet {
        for n in &result.notes {
            out::stderr_lines(&format!("note: {n}"));
        }
    }
    Ok(())
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

/// On SIGINT, SIGTERM or SIGHUP (the terminal closed), asks the run to stop at its next
/// chunk (its unwinding removes temporaries and unfinished outputs); if it has not ended
/// after a grace period, or on a second signal, removes every registered temporary itself
/// and exits.
fn handle_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    const GRACE: std::time::Duration = std::time::Duration::from_secs(3);
    let Ok(mut signals) = signal_hook::iterator::Signals::new(
        // A run started under `nohup` (SIGHUP ignored) must outlive its terminal.
        if hangup_ignored() {
            vec![SIGINT, SIGTERM]
        } else {
            vec![SIGINT, SIGTERM, SIGHUP]
        },
    ) else {
        return;
    };
    std::thread::spawn(move || {
        let force = |sig: i32| -> ! {
            rocpd::cleanup::remove_registered();
            // The forced cleanup waited for a commit in progress; what it committed stays.
            out::stderr_line(&format!(
                "rocpd: interrupted by signal {sig}; temporary files removed{}",
                kept_note()
            ));
            std::process::exit(128 + sig)
        };
        let mut seen = false;
        for sig in signals.forever() {
            rocpd::cleanup::request_cancel(sig);
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

/// Whether SIGHUP was ignored when the process started (`nohup`, `trap '' HUP`), read
/// from the kernel's mask of ignored signals (Linux; elsewhere, not ignored).
fn hangup_ignored() -> bool {
    const SIGHUP_BIT: u64 = 1 << (signal_hook::consts::SIGHUP - 1);
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigIgn:"))
                .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        })
        .is_some_and(|mask| mask & SIGHUP_BIT != 0)
}

/// What an interrupted run says about a dataset it had committed to already.
fn kept_note() -> &'static str {
    if rocpd::cleanup::committed_shared() {
        " (the run had been committed to the dataset it appends to: its rows there stay, whole)"
    } else {
        ""
    }
}

/// Prints clap's help, version or usage error as `Cli::parse` would, but a help that could
/// not be written (`--help > /dev/full`) is an error, not a success.
fn parse_failure(e: clap::Error) -> ExitCode {
    use std::io::Write;
    if !e.use_stderr() {
        match e.print().and_then(|()| std::io::stdout().flush()) {
            Ok(()) => {}
            Err(w) if w.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(w) => {
                out::stderr_line(&format!("rocpd: error: stdout: {w}"));
                return ExitCode::from(1);
            }
        }
        return ExitCode::SUCCESS;
    }
    let _ = e.print();
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

/// The command line's definition, where `ROCPD_OUTPUT_PATH` set to the empty string counts
/// as unset (`ROCPD_OUTPUT_PATH= rocpd ...` takes the default, as a shell user expects,
/// rather than clap's "a value is required" naming a flag never given). An empty
/// `ROCPD_OUTPUT_NAME` stays the empty name, as `-o ""` is.
fn command() -> clap::Command {
    let empty: Vec<std::ffi::OsString> = ["ROCPD_OUTPUT_PATH"]
        .into_iter()
        .filter(|v| std::env::var_os(v).is_some_and(|x| x.is_empty()))
        .map(std::ffi::OsString::from)
        .collect();
    let cmd = <Cli as clap::CommandFactory>::command();
    if empty.is_empty() {
        return cmd;
    }
    cmd.mut_subcommands(|sub| {
        sub.mut_args(|arg| {
            if arg.get_env().is_some_and(|v| empty.iter().any(|e| e == v)) {
                arg.env(None)
            } else {
                arg
            }
        })
    })
}

fn main() -> ExitCode {
    let parsed = command()
        .try_get_matches()
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return parse_failure(e),
    };
    handle_signals();
    let result = match cli.command {
        Command::Convert(args) => run_convert(*args, cli.quiet),
        Command::Info(args) => info::run(&args.input, args.json),
        Command::Summary(args) => run_summary(*args, cli.quiet),
        Command::Merge(args) => run_merge(*args, cli.quiet),
        Command::Query(args) => run_query(*args, cli.quiet),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<out::StdoutClosed>() => ExitCode::SUCCESS,
        Err(e) => {
            let interrupted = rocpd::cleanup::cancelled_by().or_else(|| {
                e.chain()
                    .find_map(|c| match c.downcast_ref::<rocpd::Error>() {
                        Some(rocpd::Error::Interrupted { signal }) => Some(*signal),
                        _ => None,
                    })
            });
            match interrupted {
                Some(sig) => {
                    out::stderr_line(&format!(
                        "rocpd: interrupted{}; temporary files removed{}",
                        if sig > 0 {
                            format!(" by signal {sig}")
                        } else {
                            String::new()
                        },
                        kept_note()
                    ));
                    ExitCode::from(u8::try_from(128 + sig).unwrap_or(130))
                }
                None => {
                    // The message names input files and may quote their content.
                    let message = format!("{e:#}");
                    out::stderr_line(&format!("rocpd: error: {}", rocpd::printable(&message)));
                    ExitCode::from(1)
                }
            }
        }
    }
}
