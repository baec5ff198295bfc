//! The `rocpd-gen` command: parse flags into a [`GenConfig`], generate the
//! databases, print each path and the total row count per table.

use anyhow::Result;
use clap::Parser;
use rocpd_gen::{generate, table_row_counts, GenConfig};
use std::path::PathBuf;
use std::time::Instant;

/// Generate deterministic, realistic RocPD v3 databases (one per process).
#[derive(Debug, Parser)]
#[command(name = "rocpd-gen", version)]
struct Args {
    /// Output directory (created if missing; existing files are not
    /// overwritten).
    #[arg(long)]
    out: PathBuf,
    /// Seed of every random choice.
    #[arg(long, default_value_t = GenConfig::default().seed)]
    seed: u64,
    /// Number of nodes.
    #[arg(long, default_value_t = GenConfig::default().nodes)]
    nodes: u32,
    /// Total number of processes, spread over the nodes.
    #[arg(long, default_value_t = GenConfig::default().processes)]
    processes: u32,
    /// GPUs per node.
    #[arg(long, default_value_t = GenConfig::default().gpus_per_node)]
    gpus: u32,
    /// Threads per process (at least 2).
    #[arg(long, default_value_t = GenConfig::default().threads_per_process)]
    threads: u32,
    /// Iterations per process (events grow linearly with it).
    #[arg(long, default_value_t = GenConfig::default().iterations)]
    iterations: u32,
    /// Use plain names only (no quotes, newlines, non-ASCII, …).
    #[arg(long)]
    no_odd_names: bool,
    /// Write process and thread row ids (1, 2, ... in each database) that differ from the
    /// OS pids and tids; the `pid`/`tid` columns of the other tables then reference them.
    /// rocprofv3 CSV and JSON carry OS ids only, so not with --csv or --json.
    #[arg(long, conflicts_with_all = ["csv", "json"])]
    row_ids: bool,
    /// Also write each database as a rocprofv3 CSV set under `<out>/csv/<host>/<pid>_*.csv`
    /// (the same trace, for cross-checks and CSV benchmarks).
    #[arg(long)]
    csv: bool,
    /// Also write each database as a rocprofv3 JSON file under `<out>/json/<pid>_results.json`.
    #[arg(long)]
    json: bool,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let cfg = GenConfig {
        seed: a.seed,
        nodes: a.nodes,
        processes: a.processes,
        gpus_per_node: a.gpus,
        threads_per_process: a.threads,
        iterations: a.iterations,
        odd_names: !a.no_odd_names,
        row_ids: a.row_ids,
    };
    let t0 = Instant::now();
    let paths = generate(&cfg, &a.out)?;
    let elapsed = t0.elapsed();
    let mut totals: Vec<(&str, u64)> = Vec::new();
    for path in &paths {
        println!("{}", path.display());
        for (i, (table, n)) in table_row_counts(path)?.into_iter().enumerate() {
            if totals.len() <= i {
                totals.push((table, 0));
            }
            totals[i].1 += n;
        }
    }
    let width = totals.iter().map(|(t, _)| t.len()).max().unwrap_or(0);
    let mut all = 0;
    for (table, n) in &totals {
        println!("{table:<width$} {n:>12}");
        all += n;
    }
    println!("{:<width$} {all:>12}", "total");
    if a.csv {
        for path in &paths {
            let (dir, n) = rocpd_gen::export_csv(path, &a.out.join("csv"))?;
            println!(
                "{} ({} kernels, {} API calls as CSV)",
                dir.display(),
                n.kernels,
                n.api
            );
        }
    }
    if a.json {
        for path in &paths {
            let (file, counts) = rocpd_gen::export_json(path, &a.out.join("json"))?;
            let records: usize = counts.values().sum();
            println!("{} ({records} records as JSON)", file.display());
        }
    }
    let secs = elapsed.as_secs_f64();
    eprintln!(
        "generated {} database(s), {all} rows in {secs:.2} s ({:.0} rows/s)",
        paths.len(),
        all as f64 / secs.max(1e-9)
    );
    Ok(())
}
