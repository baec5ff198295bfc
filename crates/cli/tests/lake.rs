//! A data lake many jobs write at once: eight `rocpd convert --append` processes, one
//! generated rank each, started together into one dataset. Every run must succeed, every
//! row of every input must be there exactly once, no part file may be shared or torn, and
//! each table's Delta log must hold one commit per run.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::*;

#[test]
fn eight_concurrent_appends_keep_every_row_once() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = generate(&tmp.path().join("gen"), 21, 8, 40);
    assert_eq!(ranks.len(), 8);
    let lake = tmp.path().join("lake");
    let children: Vec<_> = ranks
        .iter()
        .map(|rank| {
            Command::new(env!("CARGO_BIN_EXE_rocpd"))
                .args([
                    "convert",
                    "-q",
                    "-f",
                    "parquet",
                    "--append",
                    "--table-format",
                    "delta",
                ])
                .args(["--partition-by", "node", "-o", "job", "-d"])
                .arg(&lake)
                .arg("-i")
                .arg(rank)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start rocpd")
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let ds = lake.join("job_results.parquet");
    let want = info_rows(&ranks);
    for (dir, model) in [
        ("kernels", "kernel_dispatch"),
        ("api_calls", "region"),
        ("markers", "marker"),
        ("samples", "sample"),
        ("memory_copies", "memory_copy"),
        ("memory_allocations", "memory_allocation"),
        ("pmc_values", "pmc_value"),
    ] {
        assert_eq!(
            parquet_rows(&ds.join(dir)),
            want.get(model).copied().unwrap_or(0),
            "{dir}"
        );
    }
    assert_eq!(parquet_rows(&ds.join("sources")), 8);
    assert_eq!(parquet_rows(&ds.join("processes")), 8);
    // Eight runs, eight versions of each log, each file listed once and present.
    let runs = std::fs::read_dir(ds.join("_runs")).unwrap().count();
    assert_eq!(runs, 8);
    let mut names = BTreeSet::new();
    for f in parquet_files(&ds) {
        assert!(names.insert(f.clone()));
    }
    let kernel_log = ds.join("kernels/_delta_log");
    let versions: BTreeSet<String> = std::fs::read_dir(&kernel_log)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expect: BTreeSet<String> = (0..8).map(|v| format!("{v:020}.json")).collect();
    assert_eq!(versions, expect);
    let mut added = BTreeSet::new();
    for v in &versions {
        for line in std::fs::read_to_string(kernel_log.join(v)).unwrap().lines() {
            let a: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(p) = a["add"]["path"].as_str() {
                assert!(added.insert(p.to_string()), "{p} added twice");
                assert!(ds.join("kernels").join(p).is_file(), "{p}");
            }
        }
    }
    assert_eq!(added.len(), parquet_files(&ds.join("kernels")).len());
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ds.join("_metadata.json")).unwrap()).unwrap();
    assert_eq!(summary["runs"].as_array().unwrap().len(), 8);
    assert_eq!(
        summary["tables"]["kernels"]["rows"].as_u64().unwrap(),
        want["kernel_dispatch"]
    );
}

#[test]
fn append_goes_with_parquet_only() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = generate(&tmp.path().join("gen"), 3, 1, 5);
    let out = tmp.path().join("out");
    let o = rocpd(&[
        "convert",
        "-f",
        "pftrace",
        "--append",
        "-d",
        &out.display().to_string(),
        "-i",
        &inputs[0].display().to_string(),
    ]);
    // A usage error of the run (exit 1), not of the command line's syntax (2).
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("go with -f parquet"), "{}", stderr(&o));
    assert!(!out.exists());
}

/// `rocpd convert -q -i <rank> -f parquet --append -o x -d <lake> <extra...>`.
fn append_to(
    lake: &std::path::Path,
    rank: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    let (rank, lake) = (rank.to_str().unwrap(), lake.to_str().unwrap());
    let mut args = vec!["convert", "-q", "-i", rank, "-f", "parquet", "--append"];
    args.extend(["-o", "x", "-d", lake]);
    args.extend(extra);
    rocpd(&args)
}

/// The entries of a table's Delta log: one per committed version.
fn log_versions(dataset: &std::path::Path, table: &str) -> usize {
    std::fs::read_dir(dataset.join(table).join("_delta_log"))
        .unwrap()
        .count()
}

/// The run files (`_runs/*.json`) of a dataset: one per committed run.
fn runs_of(dataset: &std::path::Path) -> usize {
    std::fs::read_dir(dataset.join("_runs"))
        .map(|r| r.count())
        .unwrap_or(0)
}

/// A split appending to datasets that fails at a later part (its dataset is a foreign
/// directory) commits none of its parts, and never removes a dataset earlier runs wrote.
#[test]
fn a_failed_split_append_commits_nothing_and_removes_no_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = generate(&tmp.path().join("gen"), 22, 2, 30);
    let lake = tmp.path().join("lake");
    let d = lake.to_str().unwrap();
    let split = [
        "-f",
        "parquet",
        "--split-by",
        "time",
        "--split-count",
        "4",
        "--append",
        "-o",
        "s",
        "-d",
        d,
    ];
    let first = ranks[0].to_str().unwrap();
    let o = rocpd(&[&["convert", "-q", "-i", first][..], &split[..]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let parts: Vec<_> = (1..=4)
        .map(|k| lake.join(format!("s_results.part-{k:03}_of_004.parquet")))
        .collect();
    for p in &parts {
        assert_eq!(runs_of(p), 1, "{}", p.display());
    }
    // The third part's dataset is replaced by a directory that is not a dataset.
    std::fs::remove_dir_all(&parts[2]).unwrap();
    std::fs::create_dir(&parts[2]).unwrap();
    std::fs::write(parts[2].join("notes.txt"), b"mine").unwrap();
    let second = ranks[1].to_str().unwrap();
    let o = rocpd(&[&["convert", "-q", "-i", second][..], &split[..]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("part-003_of_004"), "{}", stderr(&o));
    for (k, p) in parts.iter().enumerate() {
        if k == 2 {
            assert_eq!(std::fs::read(p.join("notes.txt")).unwrap(), b"mine");
        } else {
            // The first run's rows are all there, and nothing of the failed run.
            assert_eq!(runs_of(p), 1, "{}", p.display());
            let staging = std::fs::read_dir(p.join("_staging")).map(|r| r.count());
            assert!(staging.unwrap_or(0) == 0, "{}: staging left", p.display());
        }
    }
}

/// A process split appending to datasets in several passes (`--max-open 1`) commits every
/// part with the last pass: when a later pass fails, no dataset has the run, as in one
/// pass (D152). Each of the two datasets is made foreign in turn, so one of the cases
/// fails in the pass after the other dataset's.
#[test]
fn a_split_append_in_several_passes_commits_nothing_when_a_later_pass_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = generate(&tmp.path().join("gen"), 24, 2, 10);
    let (r0, r1) = (ranks[0].to_str().unwrap(), ranks[1].to_str().unwrap());
    let split = |lake: &std::path::Path, open: &str| {
        let d = lake.to_str().unwrap().to_string();
        rocpd(&[
            "convert",
            "-q",
            "-i",
            r0,
            r1,
            "-f",
            "parquet",
            "--split-by",
            "process",
            "--append",
            "--max-open",
            open,
            "-o",
            "s",
            "-d",
            &d,
        ])
    };
    // Both passes commit when both succeed.
    let whole = tmp.path().join("whole");
    let o = split(&whole, "1");
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names: Vec<_> = std::fs::read_dir(&whole)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".parquet"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    for n in &names {
        assert_eq!(runs_of(&whole.join(n)), 1, "{n:?}");
    }
    for (k, foreign) in names.iter().enumerate() {
        let lake = tmp.path().join(format!("lake{k}"));
        std::fs::create_dir_all(lake.join(foreign)).unwrap();
        std::fs::write(lake.join(foreign).join("notes.txt"), b"mine").unwrap();
        let o = split(&lake, "1");
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert_eq!(
            std::fs::read(lake.join(foreign).join("notes.txt")).unwrap(),
            b"mine"
        );
        let other = lake.join(&names[1 - k]);
        assert_eq!(
            runs_of(&other),
            0,
            "{}: committed by a failed run",
            other.display()
        );
        assert!(!other.exists(), "{}: skeleton left", other.display());
    }
}

/// When one output of a run fails as it finishes, the outputs finished before it go too.
#[test]
fn a_failed_output_takes_the_finished_ones_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = generate(&tmp.path().join("gen"), 23, 1, 5);
    let out = tmp.path().join("out");
    // A directory where a CSV output goes: its rename fails at the end.
    std::fs::create_dir_all(out.join("x_kernel_trace.csv")).unwrap();
    let o = rocpd(&[
        "convert",
        "-q",
        "-i",
        ranks[0].to_str().unwrap(),
        "-f",
        "otf2",
        "pftrace",
        "csv",
        "-o",
        "x",
        "-d",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["x_kernel_trace.csv"], "only the obstacle is left");
}

/// A symbolic link planted inside a dataset (a partition directory pointing elsewhere) is
/// refused: the run writes nothing through it, and commits nothing.
#[test]
fn an_append_never_writes_through_a_link_in_the_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = generate(&tmp.path().join("gen"), 24, 2, 5);
    let lake = tmp.path().join("lake");
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let append = |rank: &std::path::Path| append_to(&lake, rank, &["--table-format", "delta"]);
    let o = append(&ranks[0]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dataset = lake.join("x_results.parquet");
    let kernels = dataset.join("kernels");
    let moved = tmp.path().join("kernels-moved");
    std::fs::rename(&kernels, &moved).unwrap();
    std::os::unix::fs::symlink(&outside, &kernels).unwrap();
    let o = append(&ranks[1]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(runs_of(&dataset), 1);
    let logs = |t: &str| log_versions(&dataset, t);
    assert_eq!(
        logs("api_calls"),
        1,
        "no table got the refused run's commit"
    );
}

/// A Delta log that readers would refuse (a commit cut short, a gap before a stray
/// version, a directory at a version) is refused before the run adds anything to any
/// table's log.
#[test]
fn a_damaged_delta_log_is_refused_before_anything_is_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = generate(&tmp.path().join("gen"), 25, 2, 5);
    type Damage = fn(&std::path::Path);
    let damages: [(&str, Damage); 3] = [
        ("cut short", |log| {
            let first = log.join(format!("{:020}.json", 0));
            let text = std::fs::read(&first).unwrap();
            std::fs::write(&first, &text[..100]).unwrap();
        }),
        ("none between", |log| {
            std::fs::write(
                log.join(format!("{:020}.json", 5)),
                b"{\"commitInfo\":{}}\n",
            )
            .unwrap();
        }),
        ("not a regular file", |log| {
            std::fs::create_dir(log.join(format!("{:020}.json", 1))).unwrap();
        }),
    ];
    for (n, (what, damage)) in damages.iter().enumerate() {
        let lake = tmp.path().join(format!("lake{n}"));
        let append = |rank: &std::path::Path| append_to(&lake, rank, &["--table-format", "delta"]);
        let o = append(&ranks[0]);
        assert!(o.status.success(), "{}", stderr(&o));
        let dataset = lake.join("x_results.parquet");
        damage(&dataset.join("kernels").join("_delta_log"));
        let o = append(&ranks[1]);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{what}: {}", stderr(&o));
        assert_eq!(runs_of(&dataset), 1, "{what}");
        let logs = |t: &str| {
            std::fs::read_dir(dataset.join(t).join("_delta_log"))
                .unwrap()
                .count()
        };
        assert_eq!(
            logs("api_calls"),
            1,
            "{what}: no table got the refused run's commit"
        );
    }
}

/// A run description without its sources' guids would let an input in twice: refused.
#[test]
fn a_run_description_without_guids_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = generate(&tmp.path().join("gen"), 29, 2, 5);
    let lake = tmp.path().join("lake");
    let append = |rank: &std::path::Path| append_to(&lake, rank, &[]);
    let o = append(&ranks[0]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dataset = lake.join("x_results.parquet");
    std::fs::write(dataset.join("_runs").join("zzz.json"), b"{\"run\": \"x\"}").unwrap();
    let o = append(&ranks[1]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("zzz.json"), "{}", stderr(&o));
    assert_eq!(
        runs_of(&dataset),
        2,
        "the first run and the damaged description only"
    );
}

/// The first run of a dataset that fails leaves no dataset behind (no descriptor that
/// would pin its options for the next run).
#[test]
fn a_failed_first_append_leaves_no_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = generate(&tmp.path().join("gen"), 30, 1, 5);
    {
        let c = rusqlite::Connection::open(&ranks[0]).unwrap();
        let k: String = c
            .query_row(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd\\_kernel\\_dispatch\\_%' ESCAPE '\\'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        c.execute_batch(&format!(
            "UPDATE \"{k}\" SET grid_size_x = 'notanumber' WHERE id = (SELECT MAX(id) FROM \"{k}\")"
        ))
        .unwrap();
    }
    let lake = tmp.path().join("lake");
    let o = append_to(&lake, &ranks[0], &["--partition-by", "pid"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("column grid_size_x (grid_x)"),
        "{}",
        stderr(&o)
    );
    let left: Vec<_> = std::fs::read_dir(&lake)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// A split appending to datasets checks every part's commit before the first: a damage
/// found only at commit time in the last part leaves the earlier parts without the run.
#[test]
fn a_split_append_checks_every_part_before_committing_any() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = generate(&tmp.path().join("gen"), 32, 2, 30);
    let lake = tmp.path().join("lake");
    let append = |rank: &std::path::Path| {
        let split = ["--split-by", "time", "--split-count", "3"];
        append_to(
            &lake,
            rank,
            &[&["--table-format", "delta"][..], &split[..]].concat(),
        )
    };
    let o = append(&ranks[0]);
    assert!(o.status.success(), "{}", stderr(&o));
    let part = |k: usize| lake.join(format!("x_results.part-{k:03}_of_003.parquet"));
    let log = part(3).join("kernels").join("_delta_log");
    std::fs::copy(
        log.join(format!("{:020}.json", 0)),
        log.join(format!("{:020}.json", 2)),
    )
    .unwrap();
    let o = append(&ranks[1]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("none between"), "{}", stderr(&o));
    for k in 1..=3 {
        assert_eq!(runs_of(&part(k)), 1, "part {k}");
    }
}
