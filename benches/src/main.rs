//! `rocpd-bench`: throughput and peak memory of `rocpd` on generated traces.
//!
//! Generates RocPD databases with `rocpd-gen` (cached under `target/bench-data/`), runs
//! the release `rocpd` binary on them as a child process, and prints events/s and the
//! child's peak resident set size (from `wait4`'s rusage). Sizes 10x apart show whether
//! memory stays flat while time grows linearly. Inputs are generated in a child too
//! (hidden `--prepare` mode), so that this process stays small: a child's `ru_maxrss`
//! starts from its parent's resident size.
//!
//! Two sections compare rocpd with a floor measured in the same invocation:
//!
//! * **SQLite floor** (`--baseline-only`): the time and peak memory of stepping every
//!   event row of the inputs, `ORDER BY start`, through SQLite with no output, beside
//!   `convert -f pftrace` at `--threads 1` and `--threads 2`. The floor is this binary's
//!   hidden `--step-sqlite DB...` mode, run as a child and measured like rocpd.
//! * **Many inputs** (`--many-only`): 8, 32 and 64 small databases (the same size each,
//!   about 98 MB in all for 64) through `summary`, `convert -f parquet` and
//!   `convert -f pftrace`, and 1,024 tiny databases through `summary`: the cost per
//!   event as the number of inputs grows.
//!
//! * **A lake** (`--lake-only`): the eight databases of the multi cases into one Parquet
//!   dataset, by one run, by eight `--append` runs in turn and by eight at once.
//! * **Proton chrome traces and trees** (`--proton-only`): generated `.chrome_trace` files of 0.5M
//!   and 1.5M events (about 75 and 225 MB) through `convert -f pftrace`, beside a floor
//!   that only parses the JSON (this binary's hidden `--step-json FILE` mode), and
//!   generated `.hatchet` trees of 0.1M and 0.3M nodes beside a floor that parses them
//!   keeping nothing (`--step-any FILE`).
//! * **rocprofv3 CSV and JSON** (`--import-only`): the single and multi cases written out
//!   as CSV sets (read directly, against `db-t`, the same CSV sets imported into
//!   databases) and JSON files (read directly),
//!   converted beside the same trace as databases: time, peak memory and the most
//!   temporary disk (`TMPDIR`, files held open after unlinking included) each run used.
//! * **Runs imported before** (`--fallback-only`, module `fallback`): rocprofv3 runs the
//!   direct readers left to the import before D119-D121, D125, D127, D140 and D142, read directly beside their
//!   import followed by a read of the imported database, the Perfetto outputs compared.
//! * **External sort** (`--sort-only`): 1M and 3M generated API-call rows in three input
//!   orders through `rocpd_pipeline::RunSorter`, beside a floor that builds the same
//!   batches (this binary's hidden `--step-sort` mode): the sort readers of unordered
//!   input will use, its time, peak memory and temporary disk.
//!
//! Usage (from the workspace root):
//!   cargo build --release -p rocpd-cli -p rocpd-bench && target/release/rocpd-bench
//!     [--quick] [--best-of-3] [--summary-only] [--baseline-only] [--many-only] [--lake-only]
//!     [--proton-only] [--import-only] [--sort-only] [--fallback-only]
//!
//! `--quick` runs every case at a tenth of its events. `--best-of-3` runs every measured
//! conversion three times and reports the fastest (with the largest peak memory and
//! temporary disk of the three): on a shared two-core machine one run's time moves by a
//! quarter. The `--*-only` flags run just
//! those sections (they combine); without them every section runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

mod fallback;

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, OpenFlags};

struct Case {
    name: &'static str,
    processes: u32,
    iterations: u32,
}

struct Measured {
    events: u64,
    input_bytes: u64,
    output_bytes: u64,
    seconds: f64,
    peak_rss_kib: i64,
    /// The most the run's `TMPDIR` held at once (files SQLite unlinks at once, such as
    /// its sorters, are not seen).
    peak_tmp_bytes: u64,
}

/// Runs `f` while a thread samples the size of `tmp` every 50 ms; returns `f`'s result
/// and the largest size seen. The sampler shares the machine's two cores with the run it
/// measures, so it reads only this process's descendants' descriptors, not every
/// process's: scanning all of `/proc` every 20 ms slowed the runs with many temporary
/// files open (the direct readers' sort runs) by up to a fifth.
fn with_tmp_sampled<T>(tmp: &Path, f: impl FnOnce() -> Result<T>) -> Result<(T, u64)> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let stop = AtomicBool::new(false);
    let peak = AtomicU64::new(0);
    let r = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                let held = dir_size(tmp) + deleted_open_size(tmp);
                peak.fetch_max(held, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
        let r = f();
        stop.store(true, Ordering::SeqCst);
        r
    });
    Ok((r?, peak.load(Ordering::SeqCst)))
}

/// Bytes of files in `tmp` that a process holds open after unlinking them (the direct
/// rocprofv3 reader's paged maps live in such a file, D101), which [`dir_size`] cannot
/// see: found through the open descriptors of this process's descendants.
fn deleted_open_size(tmp: &Path) -> u64 {
    let prefix = tmp.to_string_lossy().into_owned();
    let mut total = 0;
    for pid in descendants() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let target = target.to_string_lossy();
            if target.starts_with(&prefix) && target.ends_with(" (deleted)") {
                total += std::fs::metadata(fd.path()).map_or(0, |m| m.len());
            }
        }
    }
    total
}

/// The processes this one started, and theirs (from each thread's `children` list).
fn descendants() -> Vec<u32> {
    let children_of = |pid: &str| -> Vec<u32> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Vec::new();
        };
        tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .flat_map(|list| {
                list.split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect()
    };
    let mut found = children_of("self");
    let mut i = 0;
    while i < found.len() {
        let more = children_of(&found[i].to_string());
        found.extend(more);
        i += 1;
    }
    found
}

/// A fresh, empty `tmp` directory under `dir`, for a child's `TMPDIR`.
fn fresh_tmp(dir: &Path) -> Result<PathBuf> {
    let tmp = dir.join("tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    Ok(tmp)
}

/// Runs `cmd`, returning (wall seconds, peak RSS in KiB of the child).
fn run_measured(cmd: &mut Command) -> Result<(f64, i64)> {
    run_concurrently(std::slice::from_mut(cmd))
}

/// Waits for `child` (spawned from `program`); returns its peak RSS in KiB, or an error
/// if it did not exit with status 0.
#[allow(unsafe_code)]
fn wait_measured(child: std::process::Child, program: &str) -> Result<i64> {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in; the pid is our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r != pid {
        bail!("wait4 failed");
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("{program} failed with status {status}");
    }
    std::mem::forget(child);
    Ok(usage.ru_maxrss)
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        dir_size(&p)
                    } else {
                        e.metadata().map(|m| m.len()).unwrap_or(0)
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

fn inputs_for(case: &Case, root: &Path) -> Result<PathBuf> {
    let dir = root.join(format!(
        "{}-p{}-i{}",
        case.name, case.processes, case.iterations
    ));
    if !dir.join("done").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        eprintln!("generating {} ...", dir.display());
        let seconds = prepare_in_child(&[
            "db".as_ref(),
            dir.join("db").as_os_str(),
            case.processes.to_string().as_ref(),
            case.iterations.to_string().as_ref(),
        ])?;
        std::fs::write(dir.join("done"), "")?;
        eprintln!("generated {} databases in {seconds:.1} s", case.processes);
    }
    Ok(dir)
}

/// Runs this binary's hidden `--prepare` mode as a child; returns its wall seconds.
///
/// Inputs are made in a child so that this process stays small: a child's `ru_maxrss`
/// starts from the RSS of the process that spawned it (Linux carries the old image's
/// high-water mark across `exec`), so a parent that had generated a large database
/// in-process would raise every peak measured after it.
fn prepare_in_child(args: &[&std::ffi::OsStr]) -> Result<f64> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("--prepare").args(args);
    Ok(run_measured(&mut cmd)?.0)
}

/// The hidden `--prepare` mode: `db DIR PROCESSES ITERATIONS` generates a case's
/// databases; `csv|json DB_DIR OUT_DIR` writes each database out as rocprofv3 CSV or JSON.
fn prepare(args: &[String]) -> Result<()> {
    match args {
        [kind, dir, processes, iterations] if kind == "db" => {
            let processes: u32 = processes.parse().context("processes")?;
            let cfg = rocpd_gen::GenConfig {
                seed: 42,
                nodes: processes.div_ceil(4),
                processes,
                gpus_per_node: 4,
                threads_per_process: 4,
                iterations: iterations.parse().context("iterations")?,
                odd_names: true,
                row_ids: false,
            };
            rocpd_gen::generate(&cfg, Path::new(dir))?;
        }
        [kind, db, out] if kind == "csv" || kind == "json" => {
            for e in std::fs::read_dir(db)? {
                let path = e?.path();
                if kind == "csv" {
                    rocpd_gen::export_csv(&path, Path::new(out))?;
                } else {
                    rocpd_gen::export_json(&path, Path::new(out))?;
                }
            }
        }
        [kind, file, events] if kind == "chrome" => {
            write_chrome_trace(Path::new(file), events.parse().context("events")?)?;
        }
        [kind, file, scopes] if kind == "tree" => {
            write_tree(Path::new(file), scopes.parse().context("scopes")?)?;
        }
        [kind, dir, json, scale] if kind == "fallback" => {
            fallback::write_inputs(
                Path::new(dir),
                Path::new(json),
                scale.parse().context("scale")?,
            )?;
        }
        _ => bail!(
            "usage: rocpd-bench --prepare db DIR PROCESSES ITERATIONS | csv|json DB_DIR OUT_DIR \
             | chrome FILE EVENTS | tree FILE SCOPES | fallback DIR JSON SCALE"
        ),
    }
    Ok(())
}

/// The case's databases written out as rocprofv3 CSV sets (cached beside them).
fn csv_for(case: &Case, root: &Path) -> Result<PathBuf> {
    let dir = inputs_for(case, root)?;
    let csv = dir.join("csv");
    if !dir.join("csv-done").exists() {
        let _ = std::fs::remove_dir_all(&csv);
        prepare_in_child(&["csv".as_ref(), dir.join("db").as_os_str(), csv.as_os_str()])?;
        std::fs::write(dir.join("csv-done"), "")?;
    }
    Ok(csv)
}

/// The case's CSV sets imported into RocPD databases, one per process (cached beside
/// them): the same trace as databases, the baseline of the CSV reader.
fn db_trace_for(rocpd: &Path, case: &Case, root: &Path) -> Result<PathBuf> {
    let traces = csv_for(case, root)?;
    let dir = inputs_for(case, root)?;
    let dbs = dir.join("db-csv");
    if !dir.join("db-csv-done").exists() {
        let _ = std::fs::remove_dir_all(&dbs);
        // One conversion per process (`<pid>_*.csv` of a host directory): one database
        // per process, as rocprofv3 writes them.
        for host in std::fs::read_dir(&traces)? {
            let host = host?.path();
            let mut runs: std::collections::BTreeMap<String, Vec<PathBuf>> = Default::default();
            for f in std::fs::read_dir(&host)? {
                let f = f?.path();
                let name = f
                    .file_name()
                    .context("a file")?
                    .to_string_lossy()
                    .into_owned();
                let pid = name.split('_').next().unwrap_or_default().to_string();
                runs.entry(pid).or_default().push(f);
            }
            for (pid, files) in runs {
                let host_name = host.file_name().context("a host")?.to_string_lossy();
                let status = Command::new(rocpd)
                    .args(["convert", "-q", "-f", "rocpd", "-o"])
                    .arg(format!("{host_name}-{pid}"))
                    .arg("-d")
                    .arg(&dbs)
                    .arg("-i")
                    .args(&files)
                    .status()?;
                if !status.success() {
                    bail!("importing {} failed", host.display());
                }
            }
        }
        std::fs::write(dir.join("db-csv-done"), "")?;
    }
    Ok(dbs)
}

/// The case's databases written out as rocprofv3 JSON files (cached beside them).
fn json_for(case: &Case, root: &Path) -> Result<PathBuf> {
    let dir = inputs_for(case, root)?;
    let json = dir.join("json");
    if !dir.join("json-v3-done").exists() {
        let _ = std::fs::remove_dir_all(&json);
        prepare_in_child(&[
            "json".as_ref(),
            dir.join("db").as_os_str(),
            json.as_os_str(),
        ])?;
        std::fs::write(dir.join("json-v3-done"), "")?;
    }
    Ok(json)
}

fn measure(rocpd: &Path, case: &Case, root: &Path, extra: &[&str]) -> Result<Measured> {
    let dir = inputs_for(case, root)?;
    // `--csv` / `--json` as the first argument reads the case as rocprofv3 CSV or JSON;
    // `--db-trace`, as the CSV sets imported into databases.
    let (input, extra) = match extra.first() {
        Some(&"--csv") => (csv_for(case, root)?, &extra[1..]),
        Some(&"--db-trace") => (db_trace_for(rocpd, case, root)?, &extra[1..]),
        Some(&"--json") => (json_for(case, root)?, &extra[1..]),
        _ => (dir.join("db"), extra),
    };
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let report = dir.join("report.json");
    let mut cmd = Command::new(rocpd);
    // A leading format name in `extra` picks the output format (default pftrace).
    let (format, extra) = match extra.first() {
        Some(&f) if ["rocpd", "parquet", "otf2", "pftrace", "csv"].contains(&f) => (f, &extra[1..]),
        _ => ("pftrace", extra),
    };
    cmd.args(["convert", "-q", "-f", format, "-o", "bench", "-i"])
        .arg(&input)
        .arg("-d")
        .arg(&out)
        .arg("--report")
        .arg(&report)
        .args(extra);
    let (seconds, peak_rss_kib, peak_tmp_bytes) = best_of_runs(|| {
        let _ = std::fs::remove_dir_all(&out);
        let tmp = fresh_tmp(&dir)?;
        cmd.env("TMPDIR", &tmp);
        let ((s, rss), tmp_bytes) = with_tmp_sampled(&tmp, || run_measured(&mut cmd))?;
        Ok((s, rss, tmp_bytes))
    })?;
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report)?)?;
    let events = v["rows_in"]
        .as_object()
        .map(|m| m.values().filter_map(|n| n.as_u64()).sum())
        .unwrap_or(0);
    Ok(Measured {
        events,
        input_bytes: dir_size(&input),
        output_bytes: dir_size(&out),
        seconds,
        peak_rss_kib,
        peak_tmp_bytes,
    })
}

/// Runs per measured conversion (`--best-of-3` makes it 3).
static MEASURE_RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

/// Runs `one` (seconds, peak RSS in KiB, temporary bytes) as often as `--best-of-3`
/// asks: the fastest time, since the machine's noise only ever adds time, and the
/// largest memory and temporary disk any run used.
fn best_of_runs(mut one: impl FnMut() -> Result<(f64, i64, u64)>) -> Result<(f64, i64, u64)> {
    let mut best = (f64::INFINITY, 0, 0);
    for _ in 0..MEASURE_RUNS
        .load(std::sync::atomic::Ordering::SeqCst)
        .max(1)
    {
        let (s, rss, tmp) = one()?;
        best = (best.0.min(s), best.1.max(rss), best.2.max(tmp));
    }
    Ok(best)
}

/// The flags `rocpd-bench` takes (besides the hidden `--step-sqlite` and `--prepare`).
const FLAGS: &[&str] = &[
    "--quick",
    "--best-of-3",
    "--summary-only",
    "--baseline-only",
    "--many-only",
    "--lake-only",
    "--proton-only",
    "--import-only",
    "--sort-only",
    "--fallback-only",
];

fn main() {
    // Printed with its causes but without the backtrace `Result` from `main` would add
    // when `RUST_BACKTRACE` is set: these are the bench's own errors, usage ones included.
    if let Err(e) = run() {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--step-sqlite") => return step_sqlite(&args[1..]),
        Some("--prepare") => return prepare(&args[1..]),
        Some("--step-json") => return step_json(&args[1..]),
        Some("--step-any") => return step_any(&args[1..]),
        Some("--step-sort") => return step_sort(&args[1..]),
        Some("--import-run") => return fallback::import_run(&args[1..]),
        _ => {}
    }
    if let Some(a) = args.iter().find(|a| !FLAGS.contains(&a.as_str())) {
        bail!(
            "unknown argument {a:?}; usage: rocpd-bench [{}]",
            FLAGS.join("] [")
        );
    }
    let flag = |f: &str| args.iter().any(|a| a == f);
    let quick = flag("--quick");
    if flag("--best-of-3") {
        MEASURE_RUNS.store(3, std::sync::atomic::Ordering::SeqCst);
    }
    let exe = std::env::current_exe()?;
    let rocpd = exe.with_file_name("rocpd");
    if !rocpd.exists() {
        bail!(
            "{} not found: run `cargo build --release -p rocpd-cli -p rocpd-bench` first",
            rocpd.display()
        );
    }
    let root = exe
        .parent()
        .and_then(Path::parent)
        .map(|t| t.join("bench-data"))
        .context("target dir")?;
    let scale = if quick { 10 } else { 1 };
    // Three sizes per layout: 0.1M, 1M and 3M events (10x and 30x the smallest).
    let cases = [
        Case {
            name: "single-0.1M",
            processes: 1,
            iterations: 1000 / scale,
        },
        Case {
            name: "single-1M",
            processes: 1,
            iterations: 10000 / scale,
        },
        Case {
            name: "single-3M",
            processes: 1,
            iterations: 30000 / scale,
        },
        Case {
            name: "multi-0.1M",
            processes: 8,
            iterations: 125 / scale,
        },
        Case {
            name: "multi-1M",
            processes: 8,
            iterations: 1250 / scale,
        },
        Case {
            name: "multi-3M",
            processes: 8,
            iterations: 3750 / scale,
        },
    ];
    let only: Vec<&str> = [
        "--summary-only",
        "--baseline-only",
        "--many-only",
        "--lake-only",
        "--proton-only",
        "--import-only",
        "--sort-only",
        "--fallback-only",
    ]
    .into_iter()
    .filter(|f| flag(f))
    .collect();
    if !only.is_empty() {
        if only.contains(&"--summary-only") {
            summary_section(&rocpd, &cases, &root)?;
        }
        if only.contains(&"--baseline-only") {
            baseline_section(&exe, &rocpd, &cases, &root)?;
        }
        if only.contains(&"--many-only") {
            many_section(&exe, &rocpd, &root, scale)?;
        }
        if only.contains(&"--lake-only") {
            lake_section(&rocpd, &cases[4..], &root)?;
        }
        if only.contains(&"--proton-only") {
            proton_section(&exe, &rocpd, &root, scale)?;
        }
        if only.contains(&"--import-only") {
            import_section(&rocpd, &cases, &root)?;
        }
        if only.contains(&"--sort-only") {
            sort_section(&exe, &root, scale)?;
        }
        if only.contains(&"--fallback-only") {
            fallback_section(&exe, &rocpd, &cases[0], &root, scale)?;
        }
        return Ok(());
    }
    println!(
        "{:<12} {:>4} {:>10} {:>8} {:>8} {:>8} {:>10} {:>9}",
        "case", "dbs", "events", "in MiB", "out MiB", "seconds", "events/s", "peak MiB"
    );
    let mut results = Vec::new();
    for case in &cases {
        let m = measure(&rocpd, case, &root, &[])?;
        println!(
            "{:<12} {:>4} {:>10} {:>8.1} {:>8.1} {:>8.2} {:>10.0} {:>9.1}",
            case.name,
            case.processes,
            m.events,
            m.input_bytes as f64 / 1048576.0,
            m.output_bytes as f64 / 1048576.0,
            m.seconds,
            m.events as f64 / m.seconds,
            m.peak_rss_kib as f64 / 1024.0
        );
        results.push(m);
    }
    for (first, label) in [(0, "single"), (3, "multi")] {
        let base = &results[first];
        for m in &results[first + 1..first + 3] {
            println!(
                "{label}: {:.1}x the events cost {:.1}x the time and {:.2}x the peak memory",
                m.events as f64 / base.events as f64,
                m.seconds / base.seconds,
                m.peak_rss_kib as f64 / base.peak_rss_kib as f64
            );
        }
    }
    // Splitting must cost about the same as not splitting.
    let case = &cases[1];
    println!("\nsplitting {} ({} events):", case.name, results[1].events);
    println!(
        "{:<28} {:>6} {:>8} {:>9}",
        "split", "files", "seconds", "peak MiB"
    );
    for (label, extra) in [
        ("none", vec![]),
        (
            "--split-by time, 4 parts",
            vec!["--split-by", "time", "--split-count", "4"],
        ),
        (
            "--split-by time, 64 parts",
            vec!["--split-by", "time", "--split-count", "64"],
        ),
        ("--max-file-size 4MiB", vec!["--max-file-size", "4MiB"]),
    ] {
        let m = measure(&rocpd, case, &root, &extra)?;
        let files = std::fs::read_dir(
            root.join(format!(
                "{}-p{}-i{}",
                case.name, case.processes, case.iterations
            ))
            .join("out"),
        )?
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "pftrace"))
        })
        .count();
        println!(
            "{:<28} {:>6} {:>8.2} {:>9.1}",
            label,
            files,
            m.seconds,
            m.peak_rss_kib as f64 / 1024.0
        );
    }
    // Parquet datasets, OTF2 archives and CSV sets at every size.
    for (title, format) in [
        ("Parquet datasets (-f parquet)", "parquet"),
        ("OTF2 archives (-f otf2)", "otf2"),
        ("CSV file sets (-f csv)", "csv"),
    ] {
        println!("\n{title}:");
        println!(
            "{:<12} {:>10} {:>8} {:>8} {:>10} {:>9}",
            "case", "events", "out MiB", "seconds", "events/s", "peak MiB"
        );
        for (i, case) in cases.iter().enumerate() {
            let m = measure(&rocpd, case, &root, &[format])?;
            println!(
                "{:<12} {:>10} {:>8.1} {:>8.2} {:>10.0} {:>9.1}",
                case.name,
                results[i].events,
                m.output_bytes as f64 / 1048576.0,
                m.seconds,
                results[i].events as f64 / m.seconds,
                m.peak_rss_kib as f64 / 1024.0
            );
        }
    }

    import_section(&rocpd, &cases, &root)?;
    fallback_section(&exe, &rocpd, &cases[0], &root, scale)?;
    sort_section(&exe, &root, scale)?;

    summary_section(&rocpd, &cases, &root)?;

    // Merged RocPD output: the copy inside SQLite, and the selective path (a window).
    println!("\nmerged RocPD output (-f rocpd):");
    println!(
        "{:<12} {:<22} {:>10} {:>8} {:>10} {:>9}",
        "case", "mode", "events", "seconds", "events/s", "peak MiB"
    );
    for i in [1, 2, 4, 5] {
        let case = &cases[i];
        for (mode, extra) in [
            ("copy (no filter)", vec!["rocpd"]),
            (
                "window 25%..75%",
                vec!["rocpd", "--start", "25%", "--end", "75%"],
            ),
        ] {
            let m = measure(&rocpd, case, &root, &extra)?;
            let events = results[i].events;
            println!(
                "{:<12} {:<22} {:>10} {:>8.2} {:>10.0} {:>9.1}",
                case.name,
                mode,
                events,
                m.seconds,
                events as f64 / m.seconds,
                m.peak_rss_kib as f64 / 1024.0
            );
        }
    }

    baseline_section(&exe, &rocpd, &cases, &root)?;
    many_section(&exe, &rocpd, &root, scale)
}

/// `rocpd summary` printed to the console (the baseline) beside `-f html`, which also
/// builds the GPU utilisation timeline: time and peak memory at 1M and 3M events.
fn summary_section(rocpd: &Path, cases: &[Case], root: &Path) -> Result<()> {
    println!("\nrocpd summary: console (baseline) and -f html (with the utilisation timeline):");
    println!(
        "{:<12} {:>12} {:>12} {:>12} {:>12}",
        "case", "console s", "console MiB", "html s", "html MiB"
    );
    for case in [&cases[1], &cases[2], &cases[4], &cases[5]] {
        let dir = inputs_for(case, root)?;
        let out = dir.join("out");
        let _ = std::fs::remove_dir_all(&out);
        let mut console = Command::new(rocpd);
        console
            .args(["summary", "-q", "-i"])
            .arg(dir.join("db"))
            .stdout(std::process::Stdio::null());
        let (cs, cm) = run_measured(&mut console)?;
        let mut html = Command::new(rocpd);
        html.args(["summary", "-q", "-f", "html", "-i"])
            .arg(dir.join("db"))
            .arg("-d")
            .arg(&out);
        let (hs, hm) = run_measured(&mut html)?;
        println!(
            "{:<12} {:>12.2} {:>12.1} {:>12.2} {:>12.1}",
            case.name,
            cs,
            cm as f64 / 1024.0,
            hs,
            hm as f64 / 1024.0
        );
    }
    Ok(())
}

/// The event tables the floor steps, each with the column rocpd orders it by.
const EVENT_TABLES: &[(&str, &str)] = &[
    ("rocpd_region", "start"),
    ("rocpd_kernel_dispatch", "start"),
    ("rocpd_memory_copy", "start"),
    ("rocpd_memory_allocate", "start"),
    ("rocpd_sample", "timestamp"),
    ("rocpd_pmc_event", "id"),
];

/// The hidden `--step-sqlite DB...` mode, the floor under every rocpd run: steps every
/// row of every event table of every table set in time order, reading each column so
/// that SQLite decodes it, writes nothing, and prints the number of rows on stdout.
fn step_sqlite(paths: &[String]) -> Result<()> {
    let mut rows = 0u64;
    for p in paths {
        rows += step_database(Path::new(p)).with_context(|| format!("stepping {p}"))?;
    }
    println!("{rows}");
    Ok(())
}

fn step_database(path: &Path) -> Result<u64> {
    let conn = Connection::open_with_flags(
        rocpd_db::file_uri(path, "mode=ro&immutable=1"),
        OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    conn.execute_batch("PRAGMA temp_store=FILE")?;
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut rows = 0u64;
    // A table set is one `rocpd_metadata_<uuid>` and the tables sharing its suffix.
    for uuid in names
        .iter()
        .filter_map(|n| n.strip_prefix("rocpd_metadata_"))
    {
        for (base, order) in EVENT_TABLES {
            let table = format!("{base}_{uuid}");
            if !names.contains(&table) {
                continue;
            }
            let sql = format!(
                "SELECT * FROM {} ORDER BY {}",
                rocpd_db::quote_ident(&table),
                rocpd_db::quote_ident(order)
            );
            let mut stmt = conn.prepare(&sql)?;
            let columns = stmt.column_count();
            let mut q = stmt.query([])?;
            while let Some(row) = q.next()? {
                for i in 0..columns {
                    std::hint::black_box(row.get_ref(i)?);
                }
                rows += 1;
            }
        }
    }
    Ok(rows)
}

/// The case's database files, in name order.
fn db_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("db"))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    v.retain(|p| p.extension().is_some_and(|x| x == "db"));
    v.sort();
    Ok(v)
}

/// One measured child run: wall seconds, peak RSS in KiB, and a count of events.
struct Run {
    seconds: f64,
    peak_rss_kib: i64,
    events: u64,
}

impl Run {
    fn mib(&self) -> f64 {
        self.peak_rss_kib as f64 / 1024.0
    }
}

/// The SQLite floor of a case: this binary's `--step-sqlite` over its databases.
fn measure_floor(exe: &Path, dir: &Path) -> Result<Run> {
    let count = dir.join("floor-rows.txt");
    // As rocpd's runs beside it: the fastest of `--best-of-3` (the first run of a case
    // may read a cold page cache, which made the floor look up to twice as slow).
    let (seconds, peak_rss_kib, _) = best_of_runs(|| {
        let mut cmd = Command::new(exe);
        cmd.arg("--step-sqlite")
            .args(db_files(dir)?)
            .stdout(std::fs::File::create(&count)?);
        let (s, rss) = run_measured(&mut cmd)?;
        Ok((s, rss, 0))
    })?;
    let events = std::fs::read_to_string(&count)?
        .trim()
        .parse()
        .context("row count of --step-sqlite")?;
    Ok(Run {
        seconds,
        peak_rss_kib,
        events,
    })
}

/// `rocpd summary` printed to the console (discarded); `events` is left 0.
fn measure_summary(rocpd: &Path, dir: &Path) -> Result<Run> {
    let mut cmd = Command::new(rocpd);
    cmd.args(["summary", "-q", "-i"])
        .arg(dir.join("db"))
        .stdout(Stdio::null());
    let (seconds, peak_rss_kib) = run_measured(&mut cmd)?;
    Ok(Run {
        seconds,
        peak_rss_kib,
        events: 0,
    })
}

/// `a` as a multiple of `base`, e.g. `2.3x`.
fn times(a: f64, base: f64) -> String {
    format!("{:.2}x", a / base)
}

/// The SQLite floor beside `convert -f pftrace` at one and two threads, on the 1M and
/// 3M cases with one database and with eight.
fn baseline_section(exe: &Path, rocpd: &Path, cases: &[Case], root: &Path) -> Result<()> {
    let started = Instant::now();
    println!("\nSQLite floor (every event row stepped ORDER BY start, no output) beside convert -f pftrace:");
    println!(
        "{:<12} {:>10} {:>10} {:>16} {:>16} {:>9} {:>9} {:>9} {:>9}",
        "case",
        "events",
        "baseline s",
        "threads=1 s",
        "threads=2 s",
        "2 vs 1",
        "base MiB",
        "t=1 MiB",
        "t=2 MiB"
    );
    for case in [&cases[1], &cases[2], &cases[4], &cases[5]] {
        let dir = inputs_for(case, root)?;
        let floor = measure_floor(exe, &dir)?;
        let t1 = measure(rocpd, case, root, &["--threads", "1"])?;
        let t2 = measure(rocpd, case, root, &["--threads", "2"])?;
        println!(
            "{:<12} {:>10} {:>10.2} {:>16} {:>16} {:>9} {:>9.1} {:>9.1} {:>9.1}",
            case.name,
            t1.events,
            floor.seconds,
            format!("{:.2} ({})", t1.seconds, times(t1.seconds, floor.seconds)),
            format!("{:.2} ({})", t2.seconds, times(t2.seconds, floor.seconds)),
            times(t1.seconds, t2.seconds),
            floor.mib(),
            t1.peak_rss_kib as f64 / 1024.0,
            t2.peak_rss_kib as f64 / 1024.0
        );
        if floor.events != t1.events {
            println!(
                "  note: the floor stepped {} rows, rocpd read {} events",
                floor.events, t1.events
            );
        }
    }
    println!("(floor section: {:.0} s)", started.elapsed().as_secs_f64());
    Ok(())
}

/// Many small inputs: 8, 32 and 64 databases of the same size through `summary`,
/// `convert -f parquet` and `convert -f pftrace`, and 1,024 tiny ones through `summary`,
/// each beside the SQLite floor. Prints the cost per event and how it grows with the
/// number of inputs.
/// Starts every command at once and waits for all; returns (wall seconds, the largest
/// peak RSS of any child in KiB).
fn run_concurrently(cmds: &mut [Command]) -> Result<(f64, i64)> {
    let started = Instant::now();
    let children = cmds
        .iter_mut()
        .map(|c| {
            let program = c.get_program().to_string_lossy().into_owned();
            let child = c.spawn().with_context(|| format!("spawn {program}"))?;
            Ok((child, program))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut peak = 0;
    for (child, program) in children {
        peak = peak.max(wait_measured(child, &program)?);
    }
    Ok((started.elapsed().as_secs_f64(), peak))
}

/// The lake (`--lake-only`): the eight databases of a multi case into one Parquet
/// dataset, as one run over all eight (the baseline), as eight `--append` runs one after
/// another, and as eight `--append` processes at the same moment (a SLURM array on one
/// node). Every run uses `--threads 1`, so eight processes ask for eight cores' worth of
/// work from however many the machine has.
fn lake_section(rocpd: &Path, cases: &[Case], root: &Path) -> Result<()> {
    println!(
        "\nA lake of eight ranks (-f parquet --threads 1; the baseline is one run over all eight):"
    );
    println!(
        "{:<10} {:<26} {:>8} {:>10} {:>9} {:>7}",
        "case", "how", "seconds", "events/s", "peak MiB", "vs base"
    );
    for case in cases {
        let dir = inputs_for(case, root)?;
        let mut dbs: Vec<PathBuf> = std::fs::read_dir(dir.join("db"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "db"))
            .collect();
        dbs.sort();
        let out = dir.join("lake");
        let convert = |input: &Path, append: bool| {
            let mut c = Command::new(rocpd);
            c.args([
                "convert",
                "-q",
                "-f",
                "parquet",
                "--threads",
                "1",
                "-o",
                "lake",
                "-d",
            ])
            .arg(&out)
            .arg("-i")
            .arg(input);
            if append {
                c.arg("--append");
            }
            c
        };
        let _ = std::fs::remove_dir_all(&out);
        let report = dir.join("lake-report.json");
        let (base_s, base_rss) =
            run_measured(convert(&dir.join("db"), false).arg("--report").arg(&report))?;
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report)?)?;
        let total: u64 = v["rows_in"]
            .as_object()
            .map(|m| m.values().filter_map(|n| n.as_u64()).sum())
            .unwrap_or(0);
        let events = lake_kernels(&out)?;
        let mut rows = Vec::new();
        let _ = std::fs::remove_dir_all(&out);
        let mut seq_s = 0.0;
        let mut seq_rss = 0;
        for db in &dbs {
            let (s, r) = run_measured(&mut convert(db, true))?;
            seq_s += s;
            seq_rss = seq_rss.max(r);
        }
        rows.push(lake_kernels(&out)?);
        let _ = std::fs::remove_dir_all(&out);
        let mut cmds: Vec<Command> = dbs.iter().map(|db| convert(db, true)).collect();
        let (con_s, con_rss) = run_concurrently(&mut cmds)?;
        rows.push(lake_kernels(&out)?);
        if rows.iter().any(|&r| r != events) {
            bail!(
                "{}: the lakes hold {rows:?} kernels, the baseline {events}",
                case.name
            );
        }
        for (how, s, rss) in [
            ("one run, eight inputs", base_s, base_rss),
            ("8 appends, one by one", seq_s, seq_rss),
            ("8 appends at once", con_s, con_rss),
        ] {
            println!(
                "{:<10} {:<26} {:>8.2} {:>10.0} {:>9.1} {:>6.2}x",
                case.name,
                how,
                s,
                total as f64 / s,
                rss as f64 / 1024.0,
                base_s / s
            );
        }
    }
    Ok(())
}

/// Kernel rows in a lake, from its summary.
fn lake_kernels(out: &Path) -> Result<u64> {
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(
        out.join("lake_results.parquet/_metadata.json"),
    )?)?;
    meta["tables"]["kernels"]["rows"]
        .as_u64()
        .context("kernel rows in _metadata.json")
}

/// Runs of each command in the many-inputs section.
const REPEATS: usize = 3;

/// Keeps the fastest time and the largest peak of a command's runs.
fn keep_best(run: &mut (&str, f64, i64), seconds: f64, peak_kib: i64) {
    run.1 = run.1.min(seconds);
    run.2 = run.2.max(peak_kib);
}

fn many_section(exe: &Path, rocpd: &Path, root: &Path, scale: u32) -> Result<()> {
    let started = Instant::now();
    // 90 iterations make databases of about 1.5 MB: 64 of them hold about 98 MB.
    let iterations = (90 / scale).max(1);
    let cases = [
        Case {
            name: "many-8",
            processes: 8,
            iterations,
        },
        Case {
            name: "many-32",
            processes: 32,
            iterations,
        },
        Case {
            name: "many-64",
            processes: 64,
            iterations,
        },
        Case {
            name: "many-1024",
            processes: 1024,
            iterations: 1,
        },
    ];
    println!("\nmany inputs (one database per process):");
    println!(
        "{:<10} {:>5} {:>7} {:>9} {:<9} {:>8} {:>9} {:>9}",
        "case", "dbs", "in MiB", "events", "command", "seconds", "µs/event", "peak MiB"
    );
    // Per case: (command, seconds per event) for the ratio at 64 against 8.
    let mut per_event: Vec<Vec<(&str, f64)>> = Vec::new();
    for case in &cases {
        let dir = inputs_for(case, root)?;
        let in_mib = dir_size(&dir.join("db")) as f64 / 1048576.0;
        // The small cases take a fraction of a second, so each command runs three times:
        // the fastest time and the largest peak are reported.
        let mut floor = measure_floor(exe, &dir)?;
        let mut runs = vec![("baseline", floor.seconds, floor.peak_rss_kib)];
        for _ in 1..REPEATS {
            let again = measure_floor(exe, &dir)?;
            keep_best(&mut runs[0], again.seconds, again.peak_rss_kib);
            floor.events = again.events;
        }
        runs.push(("summary", f64::INFINITY, 0));
        for _ in 0..REPEATS {
            let s = measure_summary(rocpd, &dir)?;
            keep_best(&mut runs[1], s.seconds, s.peak_rss_kib);
        }
        if case.processes <= 64 {
            for format in ["parquet", "pftrace"] {
                runs.push((format, f64::INFINITY, 0));
                for _ in 0..REPEATS {
                    let m = measure(rocpd, case, root, &[format])?;
                    if m.events != floor.events {
                        println!(
                            "  note: the floor stepped {} rows, {format} read {} events",
                            floor.events, m.events
                        );
                    }
                    if let Some(run) = runs.last_mut() {
                        keep_best(run, m.seconds, m.peak_rss_kib);
                    }
                }
            }
        }
        let events = floor.events;
        for (command, seconds, kib) in &runs {
            println!(
                "{:<10} {:>5} {:>7.1} {:>9} {:<9} {:>8.2} {:>9.2} {:>9.1}",
                case.name,
                case.processes,
                in_mib,
                events,
                command,
                seconds,
                seconds * 1e6 / events as f64,
                *kib as f64 / 1024.0
            );
        }
        per_event.push(
            runs.iter()
                .map(|(c, s, _)| (*c, s / events as f64))
                .collect(),
        );
    }
    let ratio = |to: usize| {
        per_event[0]
            .iter()
            .zip(&per_event[to])
            .map(|((c, a), (_, b))| format!("{c} {}", times(*b, *a)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("time per event, 32 inputs against 8: {}", ratio(1));
    println!("time per event, 64 inputs against 8: {}", ratio(2));
    println!("time per event, 1,024 inputs against 8: {}", ratio(3));
    println!(
        "(many-inputs section: {:.0} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Writes a Proton-like chrome trace of `events` complete events: kernels on eight GPU
/// streams and scopes on four CPU threads, with call stacks as Proton writes them, keys
/// sorted. Deterministic.
fn write_chrome_trace(path: &Path, events: u64) -> Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    write!(w, "{{\"displayTimeUnit\":\"us\",\"traceEvents\":[")?;
    let mut ts = [0u64; 12];
    for i in 0..events {
        let lane = (i % 12) as usize;
        let kernel = lane < 8;
        let dur_ns = 800 + (i.wrapping_mul(2654435761) % 20_000);
        let sep = if i == 0 { "" } else { "," };
        let (cat, name, tid) = if kernel {
            ("kernel", format!("matmul_kernel_{}", i % 97), lane as u64)
        } else {
            ("scope", format!("step_{}", i % 13), 100 + lane as u64)
        };
        write!(
            w,
            "{sep}{{\"args\":{{\"call_stack\":[\"ROOT\",\"train\",\"{name}\"]}},\"cat\":\"{cat}\",\
             \"dur\":{}.{:03},\"name\":\"{name}\",\"ph\":\"X\",\"pid\":0,\"tid\":{tid},\"ts\":{}.{:03}}}",
            dur_ns / 1000,
            dur_ns % 1000,
            ts[lane] / 1000,
            ts[lane] % 1000
        )?;
        ts[lane] += dur_ns + 150;
    }
    writeln!(w, "]}}")?;
    w.flush()?;
    Ok(())
}

/// Kernels under each scope of a generated tree.
const TREE_FANOUT: u64 = 1000;

/// Writes a Proton-like `.hatchet` tree: a `ROOT` placeholder, `scopes` scopes of
/// [`TREE_FANOUT`] kernels each, with time, count and a flops metric; names repeat (ten
/// scope names, fifty kernel names) as a profiled program's do. Deterministic.
fn write_tree(path: &Path, scopes: u64) -> Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    write!(
        w,
        "[{{\"frame\":{{\"name\":\"ROOT\",\"type\":\"function\"}},\"metrics\":{{}},\"children\":["
    )?;
    for i in 0..scopes {
        let sep = if i == 0 { "" } else { "," };
        write!(
            w,
            "{sep}{{\"frame\":{{\"name\":\"scope_{}\",\"type\":\"function\"}},\"metrics\":{{\"count\":1}},\"children\":[",
            i % 10
        )?;
        for j in 0..TREE_FANOUT {
            let k = i * TREE_FANOUT + j;
            let sep = if j == 0 { "" } else { "," };
            write!(
                w,
                "{sep}{{\"frame\":{{\"name\":\"kernel_{}\",\"type\":\"function\"}},\"metrics\":{{\
                 \"count\":{},\"device_id\":\"0\",\"device_type\":\"HIP\",\"flops\":{},\"time (ns)\":{}}},\
                 \"children\":[]}}",
                j % 50,
                1 + k % 100,
                k.wrapping_mul(2654435761) % 1_000_000_000,
                1 + k.wrapping_mul(40503) % 1_000_000
            )?;
        }
        write!(w, "]}}")?;
    }
    writeln!(w, "]}},{{\"HIP\":{{\"0\":{{\"arch\":\"gfx90a\"}}}}}}]")?;
    w.flush()?;
    Ok(())
}

/// The hidden `--step-any FILE` mode, the floor under a tree conversion: parses the JSON
/// file keeping nothing.
fn step_any(args: &[String]) -> Result<()> {
    let [file] = args else {
        bail!("usage: rocpd-bench --step-any FILE");
    };
    let f = std::io::BufReader::with_capacity(1 << 16, std::fs::File::open(file)?);
    let _: serde::de::IgnoredAny = serde_json::from_reader(f).context("parsing the tree")?;
    Ok(())
}

/// The hidden `--step-json FILE` mode, the floor under a chrome trace conversion: parses the
/// file with serde_json, reading every value and keeping none, and prints the number of
/// complete events on stdout.
fn step_json(args: &[String]) -> Result<()> {
    use serde_json::Value;
    let [file] = args else {
        bail!("usage: rocpd-bench --step-json FILE");
    };
    #[derive(serde::Deserialize)]
    struct Doc {
        #[serde(rename = "traceEvents")]
        events: Events,
    }
    struct Events(u64);
    impl<'de> serde::Deserialize<'de> for Events {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Events;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("events")
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<Events, A::Error> {
                    let mut n = 0;
                    while let Some(ev) = seq.next_element::<Value>()? {
                        n += u64::from(ev.get("ph").and_then(Value::as_str) == Some("X"));
                    }
                    Ok(Events(n))
                }
            }
            d.deserialize_seq(V)
        }
    }
    let f = std::io::BufReader::with_capacity(1 << 16, std::fs::File::open(file)?);
    let doc: Doc = serde_json::from_reader(f).context("parsing the chrome trace")?;
    println!("{}", doc.events.0);
    Ok(())
}

/// `convert -f pftrace` of `input` into `dir/out` (removed after), with `TMPDIR` a fresh
/// `dir/tmp`: ((seconds, peak KiB), peak temporary bytes).
fn pftrace_measured(rocpd: &Path, input: &Path, dir: &Path) -> Result<((f64, i64), u64)> {
    let out = dir.join("out");
    let measured = pftrace_into(rocpd, input, &out, dir);
    let _ = std::fs::remove_dir_all(&out);
    measured
}

/// `convert -f pftrace -o t` of `input` into `out` (emptied first, kept after), with
/// `TMPDIR` a fresh `dir/tmp`: ((seconds, peak KiB), peak temporary bytes).
fn pftrace_into(rocpd: &Path, input: &Path, out: &Path, dir: &Path) -> Result<((f64, i64), u64)> {
    let _ = std::fs::remove_dir_all(out);
    let tmp = fresh_tmp(dir)?;
    let mut convert = Command::new(rocpd);
    convert
        .args(["convert", "-q", "-f", "pftrace", "-o", "t", "-i"])
        .arg(input)
        .arg("-d")
        .arg(out)
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null());
    with_tmp_sampled(&tmp, || run_measured(&mut convert))
}

/// `file`, generated by this binary's `--prepare KIND FILE SIZE` in a child unless it exists
/// (written beside it first, so an interrupted run leaves no file that looks finished).
fn generated_once(file: &Path, kind: &str, size: u64) -> Result<()> {
    if !file.exists() {
        let tmp = file.with_extension("part");
        prepare_in_child(&[kind.as_ref(), tmp.as_os_str(), size.to_string().as_ref()])?;
        std::fs::rename(&tmp, file)?;
    }
    Ok(())
}

/// Many chrome traces read directly at once (D82): 4 and 32 links to one generated trace
/// (each link's name makes it its own process), through `convert -f pftrace`, which merges
/// them all in time order. Their sorters share one budget and each is described once, so
/// memory must not grow with their number, nor time per event.
fn many_chrome_traces(rocpd: &Path, dir: &Path, scale: u32) -> Result<()> {
    let size = 20_000 / u64::from(scale);
    let file = dir.join(format!("chrome-small-{size}.chrome_trace"));
    generated_once(&file, "chrome", size)?;
    println!("many chrome traces read directly (one trace of {size} events, linked):");
    let mut per = Vec::new();
    for copies in [4u64, 32] {
        let inputs = dir.join(format!("copies-{copies}"));
        let _ = std::fs::remove_dir_all(&inputs);
        std::fs::create_dir_all(&inputs)?;
        for k in 0..copies {
            std::fs::hard_link(&file, inputs.join(format!("rank{k:03}.chrome_trace")))?;
        }
        let ((seconds, kib), tmp_bytes) = pftrace_measured(rocpd, &inputs, dir)?;
        let events = size * copies;
        println!(
            "{:<12} {:>9} {:>8} {:<9} {:>8.2} {:>10.0} {:>9.1} {:>8.1}",
            format!("chrome-x{copies}"),
            events,
            "",
            "pftrace",
            seconds,
            events as f64 / seconds,
            kib as f64 / 1024.0,
            tmp_bytes as f64 / 1048576.0
        );
        per.push((seconds / events as f64, kib as f64));
        let _ = std::fs::remove_dir_all(&inputs);
    }
    println!(
        "32 traces against 4: time per event {:.2}x, peak RSS {:.2}x",
        per[1].0 / per[0].0,
        per[1].1 / per[0].1
    );
    Ok(())
}

/// Generated chrome traces of two sizes through `convert -f pftrace`, beside the JSON floor:
/// time, events/s, peak RSS, and temporary disk (a tree's import database, a chrome trace's
/// sort runs).
fn proton_section(exe: &Path, rocpd: &Path, root: &Path, scale: u32) -> Result<()> {
    let started = Instant::now();
    println!("\nProton chrome traces and trees through convert -f pftrace (baseline: parse the JSON only):");
    println!(
        "{:<12} {:>9} {:>8} {:<9} {:>8} {:>10} {:>9} {:>8}",
        "case", "events", "in MiB", "command", "seconds", "events/s", "peak MiB", "tmp MiB"
    );
    let dir = root.join("proton");
    std::fs::create_dir_all(&dir)?;
    let mut peaks = Vec::new();
    // (case, chrome events or tree scopes, is a tree)
    for (name, size, tree) in [
        ("chrome-0.5M", 500_000u64, false),
        ("chrome-1.5M", 1_500_000, false),
        ("tree-0.1M", 100, true),
        ("tree-0.3M", 300, true),
    ] {
        let size = size / u64::from(scale);
        let (kind, ext, events) = if tree {
            ("tree", "hatchet", size * (TREE_FANOUT + 1))
        } else {
            ("chrome", "chrome_trace", size)
        };
        let file = dir.join(format!("{name}-{size}.{ext}"));
        generated_once(&file, kind, size)?;
        let in_mib = std::fs::metadata(&file)?.len() as f64 / 1048576.0;
        let count = dir.join("floor-events.txt");
        let mut floor = Command::new(exe);
        floor
            .arg(if tree { "--step-any" } else { "--step-json" })
            .arg(&file)
            .stdout(std::fs::File::create(&count)?);
        let (fs, fk) = run_measured(&mut floor)?;
        if !tree {
            let stepped: u64 = std::fs::read_to_string(&count)?.trim().parse()?;
            if stepped != events {
                bail!("{name}: the floor read {stepped} events, {events} were written");
            }
        }
        let ((cs, ck), tmp_bytes) = pftrace_measured(rocpd, &file, &dir)?;
        for (command, seconds, kib, tmp_bytes) in
            [("baseline", fs, fk, 0), ("pftrace", cs, ck, tmp_bytes)]
        {
            println!(
                "{:<12} {:>9} {:>8.1} {:<9} {:>8.2} {:>10.0} {:>9.1} {:>8.1}",
                name,
                events,
                in_mib,
                command,
                seconds,
                events as f64 / seconds,
                kib as f64 / 1024.0,
                tmp_bytes as f64 / 1048576.0
            );
        }
        peaks.push(ck as f64 / 1024.0);
    }
    println!(
        "peak RSS, 1.5M events against 0.5M: {:.2}x; tree of 0.3M nodes against 0.1M: {:.2}x",
        peaks[1] / peaks[0],
        peaks[3] / peaks[2]
    );
    many_chrome_traces(rocpd, &dir, scale)?;
    println!("(proton section: {:.0} s)", started.elapsed().as_secs_f64());
    Ok(())
}

/// rocprofv3 CSV and JSON inputs (the same traces written out by the generator) against
/// the same trace as a database, each converted to pftrace in turn: time, peak memory and
/// the most temporary disk the run used, beside the input's size.
fn import_section(rocpd: &Path, cases: &[Case], root: &Path) -> Result<()> {
    println!("\nrocprofv3 CSV and JSON input against the database (-f pftrace):");
    println!(
        "{:<12} {:<5} {:>10} {:>8} {:>8} {:>10} {:>7} {:>9} {:>8} {:>7}",
        "case",
        "input",
        "events",
        "in MiB",
        "seconds",
        "events/s",
        "vs db",
        "peak MiB",
        "tmp MiB",
        "tmp/in"
    );
    for i in [0, 1, 2, 4, 5] {
        let case = &cases[i];
        let (mut db_rate, mut trace_rate) = (None, None);
        for (label, extra) in [
            ("db", &[][..]),
            ("db-t", &["--db-trace"][..]),
            ("csv", &["--csv"][..]),
            ("json", &["--json"][..]),
        ] {
            let m = measure(rocpd, case, root, extra)?;
            let rate = m.events as f64 / m.seconds;
            // The CSV sets against the same trace as databases (db-t), the rest against
            // the case's databases.
            let base = match label {
                "db-t" => *trace_rate.insert(rate),
                "csv" => trace_rate.unwrap_or(rate),
                _ => *db_rate.get_or_insert(rate),
            };
            println!(
                "{:<12} {:<5} {:>10} {:>8.1} {:>8.2} {:>10.0} {:>6.2}x {:>9.1} {:>8.1} {:>7.2}",
                case.name,
                label,
                m.events,
                m.input_bytes as f64 / 1048576.0,
                m.seconds,
                rate,
                rate / base,
                m.peak_rss_kib as f64 / 1024.0,
                m.peak_tmp_bytes as f64 / 1048576.0,
                m.peak_tmp_bytes as f64 / m.input_bytes.max(1) as f64
            );
        }
    }
    // RocPD output (D92): the databases are copied inside SQLite (the baseline); CSV and
    // JSON inputs are read directly and their rows written by `RocpdSink`.
    println!("\nrocprofv3 CSV and JSON input against the database (-f rocpd):");
    println!(
        "{:<12} {:<5} {:>10} {:>8} {:>10} {:>7} {:>9} {:>8}",
        "case", "input", "events", "seconds", "events/s", "vs db", "peak MiB", "tmp MiB"
    );
    for i in [1, 2] {
        let case = &cases[i];
        let mut db_rate = None;
        for (label, extra) in [
            ("db", &["rocpd"][..]),
            ("csv", &["--csv", "rocpd"][..]),
            ("json", &["--json", "rocpd"][..]),
        ] {
            let m = measure(rocpd, case, root, extra)?;
            let rate = m.events as f64 / m.seconds;
            let base = *db_rate.get_or_insert(rate);
            println!(
                "{:<12} {:<5} {:>10} {:>8.2} {:>10.0} {:>6.2}x {:>9.1} {:>8.1}",
                case.name,
                label,
                m.events,
                m.seconds,
                rate,
                rate / base,
                m.peak_rss_kib as f64 / 1024.0,
                m.peak_tmp_bytes as f64 / 1048576.0
            );
        }
    }
    Ok(())
}

/// `--fallback-only` (see [`fallback`]), its JSON case built on the smallest case's JSON.
fn fallback_section(
    exe: &Path,
    rocpd: &Path,
    smallest: &Case,
    root: &Path,
    scale: u32,
) -> Result<()> {
    let json_dir = json_for(smallest, root)?;
    let json = std::fs::read_dir(&json_dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .context("no JSON file in the smallest case")?;
    fallback::section(exe, rocpd, root, &json, scale)
}

/// The orders `--sort-only` feeds the external sort, as a reader of each kind would.
const SORT_ORDERS: [&str; 3] = ["in-order", "by-end", "random"];

/// The external sort of readers of unordered input (`rocpd_pipeline::RunSorter`) on
/// generated API-call rows at two sizes and three input orders, beside a floor that only
/// builds the same batches: time, peak memory and the most temporary disk it used.
fn sort_section(exe: &Path, root: &Path, scale: u32) -> Result<()> {
    println!("\nExternal sort of API-call rows (rocpd_pipeline::RunSorter, 16 MiB in memory; baseline: build the batches only):");
    println!(
        "{:<9} {:>9} {:<8} {:>8} {:>10} {:>9} {:>8} {:>7} {:>6}",
        "order", "rows", "command", "seconds", "rows/s", "peak MiB", "tmp MiB", "spills", "merges"
    );
    let dir = root.join("sort");
    std::fs::create_dir_all(&dir)?;
    let sizes = [
        1_000_000u64 / u64::from(scale),
        3_000_000 / u64::from(scale),
    ];
    let mut summary = Vec::new();
    for order in SORT_ORDERS {
        let mut peaks = Vec::new();
        for rows in sizes {
            for mode in ["build", "sort"] {
                let out = dir.join("stats.txt");
                let tmp = fresh_tmp(&dir)?;
                let mut cmd = Command::new(exe);
                cmd.args(["--step-sort", order, &rows.to_string(), mode])
                    .env("TMPDIR", &tmp)
                    .stdout(std::fs::File::create(&out)?);
                let ((seconds, kib), tmp_bytes) =
                    with_tmp_sampled(&tmp, || run_measured(&mut cmd))?;
                let stats: Vec<u64> = std::fs::read_to_string(&out)?
                    .split_whitespace()
                    .map(str::parse)
                    .collect::<std::result::Result<_, _>>()?;
                let [got, spills, merges] = stats[..] else {
                    bail!("--step-sort printed {stats:?}");
                };
                if got != rows {
                    bail!("{order}: {mode} gave {got} rows of {rows}");
                }
                println!(
                    "{:<9} {:>9} {:<8} {:>8.2} {:>10.0} {:>9.1} {:>8.1} {:>7} {:>6}",
                    order,
                    rows,
                    if mode == "build" { "baseline" } else { "sort" },
                    seconds,
                    rows as f64 / seconds,
                    kib as f64 / 1024.0,
                    tmp_bytes as f64 / 1048576.0,
                    spills,
                    merges
                );
                if mode == "sort" {
                    peaks.push(kib as f64 / 1024.0);
                }
            }
        }
        summary.push(format!("{order} {:.2}x", peaks[1] / peaks[0]));
    }
    println!(
        "sort peak RSS, 3x the rows against 1x: {}",
        summary.join(", ")
    );
    Ok(())
}

/// The hidden `--step-sort ORDER ROWS build|sort` mode: builds `ROWS` API-call rows in
/// `ORDER` (`in-order`; `by-end`, nested calls written as they end, as rocprofv3 does;
/// `random`) and, with `sort`, sorts them through a `RunSorter` and checks the order.
/// Prints the rows it saw, the spills and the merges of run files.
fn step_sort(args: &[String]) -> Result<()> {
    use rocpd_model::{BatchBuilder, ColumnBuilder, Table};
    use rocpd_pipeline::{BatchStream, RunSorter, SortOptions};
    let [order, rows, mode] = args else {
        bail!("usage: rocpd-bench --step-sort ORDER ROWS build|sort");
    };
    let rows: u64 = rows.parse().context("rows")?;
    let table = Table::Region;
    let names: Vec<String> = (0..50).map(|i| format!("hipApiFunction{i}")).collect();
    let mut seed = 1u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as i64
    };
    let key = |i: u64, next: &mut dyn FnMut() -> i64| -> (i64, i64) {
        let i = i as i64;
        match order.as_str() {
            "in-order" => (i * 100, i * 100 + 50 + (i % 7) * 10),
            // Groups of nine: eight inner calls that end first, then the outer one.
            "by-end" => {
                let (g, k) = (i / 9, i % 9);
                if k < 8 {
                    (g * 1000 + 10 + k * 110, g * 1000 + 110 + k * 110)
                } else {
                    (g * 1000, g * 1000 + 950)
                }
            }
            _ => {
                let s = next().rem_euclid(rows as i64 * 100);
                (s, s + next().rem_euclid(1000))
            }
        }
    };
    let mut sorter = (mode == "sort").then(|| RunSorter::new(table, SortOptions::default()));
    let mut builder = BatchBuilder::new(table, 2048);
    let mut built = 0u64;
    for i in 0..rows {
        let (start, end) = key(i, &mut next);
        for (c, spec) in table.columns().iter().enumerate() {
            match (builder.column(c), spec.name) {
                (ColumnBuilder::I64(x), "start") => x.append_value(start),
                (ColumnBuilder::I64(x), "end") => x.append_value(end),
                (ColumnBuilder::I64(x), "id" | "event_id" | "stack_id") => x.append_value(i as i64),
                (ColumnBuilder::I64(x), "pid" | "tid") => x.append_value(4242),
                (ColumnBuilder::Str(x), "name") => x.append_value(&names[(i % 50) as usize]),
                (ColumnBuilder::Str(x), "category") => x.append_value("HIP_RUNTIME_API_EXT"),
                (ColumnBuilder::U32(x), _) => x.append_value(0),
                (ColumnBuilder::I64(x), _) if !spec.nullable => x.append_value(0),
                (ColumnBuilder::Str(x), _) if !spec.nullable => x.append_value(""),
                (other, _) => other.push_null(),
            }
        }
        builder.end_row();
        if builder.is_full() || i + 1 == rows {
            let b = builder.finish()?;
            built += b.num_rows() as u64;
            if let Some(s) = sorter.as_mut() {
                s.push(b)?;
            }
        }
    }
    let Some(sorter) = sorter else {
        println!("{built} 0 0");
        return Ok(());
    };
    let mut sorted = sorter.finish()?;
    let (mut seen, mut last) = (0u64, (i64::MIN, std::cmp::Reverse(i64::MIN)));
    while let Some(b) = sorted.next_batch()? {
        let starts = b
            .column(rocpd_model::col::START)
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .context("start")?;
        let ends = b
            .column(rocpd_model::col::END)
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .context("end")?;
        for r in 0..b.num_rows() {
            let k = (starts.value(r), std::cmp::Reverse(ends.value(r)));
            if k < last {
                bail!("row {seen} is out of order");
            }
            last = k;
            seen += 1;
        }
    }
    let stats = sorted.stats();
    println!("{seen} {} {}", stats.spills, stats.merges);
    Ok(())
}
