//! The `rocpd` command: flags → plan → one library call.

mod convert;
mod info;
mod inputs;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use rocpd_model::AgentIndexMode;
use rocpd_perfetto::{PerfettoOptions, PerfettoSink};
use rocpd_pipeline::{RunOptions, Sink};

/// Convert ROCm profiling traces (RocPD databases) to Perfetto, fast and in bounded memory.
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
    Convert(ConvertArgs),
    /// Show what is in the inputs: processes, agents, time span, rows per table.
    Info(InfoArgs),
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Perfetto trace (`.pftrace`), for ui.perfetto.dev.
    #[value(alias = "perfetto")]
    Pftrace,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AgentIndex {
    Absolute,
    Relative,
    TypeRelative,
}

#[derive(clap::Args, Debug)]
struct ConvertArgs {
    /// Input files, globs or directories (RocPD `.db` files; the format is detected by content).
    #[arg(short, long = "input", required = true, num_args = 1..)]
    input: Vec<String>,
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

#[derive(clap::Args, Debug)]
struct InfoArgs {
    /// Input files, globs or directories.
    #[arg(short, long = "input", required = true, num_args = 1..)]
    input: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn run_convert(args: ConvertArgs, quiet: bool) -> Result<()> {
    let inputs = inputs::expand(&args.input)?;
    let dbs = convert::open_all(&inputs)?;
    // Refuse duplicate processes before anything is written.
    convert::catalog_of(&dbs)?;
    let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
    let mut formats = args.format.clone();
    formats.dedup();
    for f in formats {
        match f {
            Format::Pftrace => {
                let opts = PerfettoOptions {
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
                };
                let path = convert::output_path(&args.output_path, &args.output_file, "pftrace");
                sinks.push(Box::new(PerfettoSink::new(&path, opts)));
            }
        }
    }
    let bar = progress_bar(quiet);
    let options = RunOptions {
        decode_thread: args.threads > 1,
        ..Default::default()
    };
    let report = convert::convert(dbs, args.annotate_args, sinks, &options, &mut |p| {
        if let (Some((lo, hi)), Some(t)) = (p.span, p.time) {
            let done = ((t - lo) as f64 / (hi - lo).max(1) as f64).clamp(0.0, 1.0);
            bar.set_position((done * 1000.0) as u64);
        }
        bar.set_message(format!("{} events", p.rows));
    })?;
    bar.finish_and_clear();
    if let Some(path) = &args.report {
        convert::write_report(path, &report)?;
    }
    if !quiet {
        eprintln!("{}", report.render());
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Convert(args) => run_convert(args, cli.quiet),
        Command::Info(args) => info::run(&args.input, args.json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rocpd: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
