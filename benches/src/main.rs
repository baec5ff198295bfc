//! `rocpd-bench`: throughput and peak memory of `rocpd convert` on generated traces.
//!
//! Generates RocPD databases with `rocpd-gen` (cached under `target/bench-data/`), runs
//! the release `rocpd` binary on them as a child process, and prints events/s and the
//! child's peak resident set size (from `wait4`'s rusage). Sizes 10x apart show whether
//! memory stays flat while time grows linearly.
//!
//! Usage (from the workspace root):
//!   cargo build --release -p rocpd-cli -p rocpd-bench && target/release/rocpd-bench [--quick]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

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
}

/// Runs `cmd`, returning (wall seconds, peak RSS in KiB of the child).
#[allow(unsafe_code)]
fn run_measured(cmd: &mut Command) -> Result<(f64, i64)> {
    let started = Instant::now();
    let child = cmd.spawn().context("spawn rocpd")?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in; the pid is our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = started.elapsed().as_secs_f64();
    if r != pid {
        bail!("wait4 failed");
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("rocpd failed with status {status}");
    }
    std::mem::forget(child);
    Ok((seconds, usage.ru_maxrss))
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
        let cfg = rocpd_gen::GenConfig {
            seed: 42,
            nodes: case.processes.div_ceil(4),
            processes: case.processes,
            gpus_per_node: 4,
            threads_per_process: 4,
            iterations: case.iterations,
            odd_names: true,
        };
        eprintln!("generating {} ...", dir.display());
        rocpd_gen::generate(&cfg, &dir.join("db"))?;
        std::fs::write(dir.join("done"), "")?;
    }
    Ok(dir)
}

/// The case's databases written out as rocprofv3 CSV sets (cached beside them).
fn csv_for(case: &Case, root: &Path) -> Result<PathBuf> {
    let dir = inputs_for(case, root)?;
    let csv = dir.join("csv");
    if !dir.join("csv-done").exists() {
        let _ = std::fs::remove_dir_all(&csv);
        for e in std::fs::read_dir(dir.join("db"))? {
            rocpd_gen::export_csv(&e?.path(), &csv)?;
        }
        std::fs::write(dir.join("csv-done"), "")?;
    }
    Ok(csv)
}

/// The case's databases written out as rocprofv3 JSON files (cached beside them).
fn json_for(case: &Case, root: &Path) -> Result<PathBuf> {
    let dir = inputs_for(case, root)?;
    let json = dir.join("json");
    if !dir.join("json-done").exists() {
        let _ = std::fs::remove_dir_all(&json);
        for e in std::fs::read_dir(dir.join("db"))? {
            rocpd_gen::export_json(&e?.path(), &json)?;
        }
        std::fs::write(dir.join("json-done"), "")?;
    }
    Ok(json)
}

fn measure(rocpd: &Path, case: &Case, root: &Path, extra: &[&str]) -> Result<Measured> {
    let dir = inputs_for(case, root)?;
    // `--csv` / `--json` as the first argument reads the case as rocprofv3 CSV or JSON.
    let (input, extra) = match extra.first() {
        Some(&"--csv") => (csv_for(case, root)?, &extra[1..]),
        Some(&"--json") => (json_for(case, root)?, &extra[1..]),
        _ => (dir.join("db"), extra),
    };
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let report = dir.join("report.json");
    let mut cmd = Command::new(rocpd);
    // A leading format name in `extra` picks the output format (default pftrace).
    let (format, extra) = match extra.first() {
        Some(&f) if ["rocpd", "parquet", "otf2"].contains(&f) => (f, &extra[1..]),
        _ => ("pftrace", extra),
    };
    cmd.args(["convert", "-q", "-f", format, "-o", "bench", "-i"])
        .arg(&input)
        .arg("-d")
        .arg(&out)
        .arg("--report")
        .arg(&report)
        .args(extra);
    let (seconds, peak_rss_kib) = run_measured(&mut cmd)?;
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
    })
}

fn main() -> Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
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
    if std::env::args().any(|a| a == "--summary-only") {
        return summary_section(&rocpd, &cases, &root);
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
    // Parquet datasets and OTF2 archives at every size.
    for (title, format) in [
        ("Parquet datasets (-f parquet)", "parquet"),
        ("OTF2 archives (-f otf2)", "otf2"),
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

    // Reading rocprofv3 CSV and JSON (the same traces written out): import + convert.
    for (title, flag) in [
        ("rocprofv3 CSV input (-f pftrace)", "--csv"),
        ("rocprofv3 JSON input (-f pftrace)", "--json"),
    ] {
        println!("\n{title}:");
        println!(
            "{:<12} {:>10} {:>8} {:>8} {:>10} {:>9}",
            "case", "events", "in MiB", "seconds", "events/s", "peak MiB"
        );
        for i in [0, 1, 3, 4] {
            let case = &cases[i];
            let m = measure(&rocpd, case, &root, &[flag])?;
            println!(
                "{:<12} {:>10} {:>8.1} {:>8.2} {:>10.0} {:>9.1}",
                case.name,
                m.events,
                m.input_bytes as f64 / 1048576.0,
                m.seconds,
                m.events as f64 / m.seconds,
                m.peak_rss_kib as f64 / 1024.0
            );
        }
    }

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
    Ok(())
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
