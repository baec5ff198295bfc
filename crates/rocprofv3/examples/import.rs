//! Imports rocprofv3 CSV/JSON inputs into RocPD databases in a temporary directory and
//! prints what was written, the time taken and the peak resident memory (VmHWM).
//!
//! `cargo run --release -p rocpd-rocprofv3 --example import -- PATH...`

use std::path::PathBuf;
use std::time::Instant;

fn vm_hwm_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let keep = std::env::var_os("KEEP").is_some();
    let tmp = tempfile::tempdir()?;
    let start = Instant::now();
    let runs = rocpd_rocprofv3::group_runs(&paths)?;
    println!(
        "{} run(s) found in {:.3} s",
        runs.len(),
        start.elapsed().as_secs_f64()
    );
    let opts = rocpd_rocprofv3::ImportOptions {
        skip_bad_rows: std::env::var_os("SKIP").is_some(),
    };
    for (i, run) in runs.iter().enumerate() {
        let dest = tmp.path().join(format!("run{i}.db"));
        let t = Instant::now();
        let report = rocpd_rocprofv3::import(run, &dest, &opts)?;
        let secs = t.elapsed().as_secs_f64();
        let events: u64 = report
            .rows
            .iter()
            .filter(|(t, _)| {
                matches!(
                    t.as_str(),
                    "rocpd_region"
                        | "rocpd_kernel_dispatch"
                        | "rocpd_memory_copy"
                        | "rocpd_memory_allocate"
                        | "rocpd_pmc_event"
                )
            })
            .map(|(_, n)| n)
            .sum();
        println!(
            "{}: guid {} in {:.3} s ({:.0} event rows/s)",
            run.label,
            report.guid,
            secs,
            events as f64 / secs.max(1e-9)
        );
        for (t, n) in report.rows.iter().filter(|(_, n)| *n > 0) {
            println!("    {t}: {n}");
        }
        for s in report.skipped.iter().chain(&report.ignored) {
            println!("    note: {s}");
        }
        let db = rocpd_db::Database::open(&dest)?;
        for (t, n) in db.count_rows()? {
            if n > 0 {
                println!("    reader {}: {n}", t.name());
            }
        }
        if keep {
            let kept = std::env::temp_dir().join(format!("rocprofv3-run{i}.db"));
            let _ = std::fs::remove_file(&kept);
            std::fs::copy(&dest, &kept)?;
            println!("    kept {}", kept.display());
        }
    }
    if let Some(k) = vm_hwm_kib() {
        println!("peak RSS (VmHWM): {k} KiB");
    }
    Ok(())
}
