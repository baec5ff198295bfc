//! Process and thread ids as the RocPD schema defines them: the `pid`/`tid` columns of
//! every table but the info tables' own are references to `rocpd_info_process.id` /
//! `rocpd_info_thread.id`. On databases whose row ids differ from the OS ids, every
//! output and option must show and take the OS ids `rocpd info` prints.
//! (The whole CLI suite runs on such databases too with `ROCPD_TEST_ROW_IDS=1`; `.ci/run`
//! does that.)

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{decode, rocpd, stderr, traces};

/// Two processes, each database with process row id 1 and thread row ids 1, 2, 3.
fn row_id_inputs(dir: &Path) -> Vec<PathBuf> {
    let cfg = rocpd_gen::GenConfig {
        seed: 41,
        nodes: 1,
        processes: 2,
        gpus_per_node: 2,
        threads_per_process: 3,
        iterations: 6,
        odd_names: false,
        row_ids: true,
    };
    rocpd_gen::generate(&cfg, dir).expect("generate")
}

/// `(process row id, OS pid)` and the set of `(OS pid, OS tid)` of one database.
fn os_ids(db: &Path) -> ((i64, i64), BTreeSet<(i64, i64)>) {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let p = conn
        .query_row("SELECT id, pid FROM rocpd_info_process", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let mut st = conn
        .prepare("SELECT P.pid, T.tid FROM rocpd_info_thread T JOIN rocpd_info_process P ON P.id = T.pid")
        .unwrap();
    let threads = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (p, threads)
}

fn convert(inputs: &[PathBuf], out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["convert".to_string(), "-q".into(), "-i".into()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(["-o", "t", "-d"].map(String::from));
    args.push(out.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    rocpd(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn generated_row_ids_differ_from_os_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = row_id_inputs(tmp.path());
    let ((id_a, pid_a), threads_a) = os_ids(&ins[0]);
    let ((id_b, pid_b), _) = os_ids(&ins[1]);
    assert_eq!((id_a, id_b), (1, 1), "both processes are row 1");
    assert_ne!(pid_a, pid_b);
    assert!(pid_a > 1 && pid_b > 1);
    assert_eq!(threads_a.len(), 3);
    assert!(threads_a.iter().all(|&(_, tid)| tid > 3));
}

#[test]
fn perfetto_splits_and_filters_use_os_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = row_id_inputs(&tmp.path().join("in"));
    let ((_, pid_a), threads_a) = os_ids(&ins[0]);
    let ((_, pid_b), threads_b) = os_ids(&ins[1]);

    // One trace: two processes under their OS pids, threads under their OS tids.
    let o = convert(&ins, &tmp.path().join("all"), &["-f", "pftrace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = decode(&tmp.path().join("all/t_results.pftrace"));
    let pids: BTreeSet<i64> = d.processes.keys().map(|&p| p as i64).collect();
    assert_eq!(pids, BTreeSet::from([pid_a, pid_b]));
    let tids: BTreeSet<(i64, i64)> = d
        .threads
        .iter()
        .map(|(p, t, _)| (*p as i64, *t as i64))
        .collect();
    let want: BTreeSet<(i64, i64)> = threads_a.union(&threads_b).copied().collect();
    assert!(
        want.is_subset(&tids) || tids.is_subset(&want),
        "threads {tids:?}, info tables {want:?}"
    );
    assert!(tids.iter().all(|(p, _)| *p == pid_a || *p == pid_b));
    assert!(tids.iter().all(|(_, t)| *t > 3), "no row id shown as a tid");

    // A split by process: one file per OS pid.
    let o = convert(
        &ins,
        &tmp.path().join("split"),
        &["-f", "pftrace", "--split-by", "process"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let names: BTreeSet<String> = traces(&tmp.path().join("split"))
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    for pid in [pid_a, pid_b] {
        assert!(
            names.iter().any(|n| n.contains(&format!("pid-{pid}."))),
            "no part for pid {pid}: {names:?}"
        );
    }

    // A filter by the OS pid keeps that process's events, and only them.
    let o = convert(
        &ins,
        &tmp.path().join("one"),
        &["-f", "pftrace", "--include", &format!("pid={pid_a}")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let one = decode(&tmp.path().join("one/t_results.pftrace"));
    assert_eq!(
        one.processes.keys().copied().collect::<Vec<_>>(),
        vec![pid_a as i32]
    );
    let solo = convert(&ins[..1], &tmp.path().join("solo"), &["-f", "pftrace"]);
    assert!(solo.status.success());
    let solo = decode(&tmp.path().join("solo/t_results.pftrace"));
    assert_eq!(one.slices_by_category, solo.slices_by_category);
    // The row id is not a pid any more.
    let o = convert(
        &ins,
        &tmp.path().join("none"),
        &["-f", "pftrace", "--include", "pid=1"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let none = decode(&tmp.path().join("none/t_results.pftrace"));
    assert!(
        none.slices_by_category.is_empty(),
        "{:?}",
        none.slices_by_category
    );

    // A thread filter by OS tid.
    let &(_, tid) = threads_a.iter().next().unwrap();
    let o = convert(
        &ins,
        &tmp.path().join("tid"),
        &["-f", "pftrace", "--include", &format!("tid={tid}")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let t = decode(&tmp.path().join("tid/t_results.pftrace"));
    assert!(t.slices_by_category.values().sum::<u64>() > 0);
}

#[test]
fn info_summary_and_parquet_show_os_ids_and_keep_row_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let ins = row_id_inputs(&tmp.path().join("in"));
    let ((_, pid_a), threads_a) = os_ids(&ins[0]);
    let ((_, pid_b), threads_b) = os_ids(&ins[1]);
    let mut args = vec!["info".to_string(), "--json".into(), "-i".into()];
    args.extend(ins.iter().map(|p| p.display().to_string()));
    let o = rocpd(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let info: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = info.to_string();
    for pid in [pid_a, pid_b] {
        assert!(
            text.contains(&format!("\"pid\":{pid}")),
            "info lacks pid {pid}"
        );
    }

    // The summary by rank names the OS pid.
    let mut args = vec!["summary".to_string(), "-q".into(), "-i".into()];
    args.extend(ins.iter().map(|p| p.display().to_string()));
    args.extend(["--summary-by-rank", "-f", "csv", "-o", "s", "-d"].map(String::from));
    let sdir = tmp.path().join("summary");
    args.push(sdir.display().to_string());
    let o = rocpd(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let by_rank = std::fs::read_dir(&sdir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.to_string_lossy().contains("kernels_summary")
                && std::fs::read_to_string(p).is_ok_and(|t| t.starts_with("ProcessID"))
        })
        .expect("a kernels summary by rank");
    let mut r = csv::Reader::from_path(&by_rank).unwrap();
    let pids: BTreeSet<i64> = r
        .records()
        .map(|rec| rec.unwrap()[0].parse::<i64>().unwrap())
        .collect();
    assert_eq!(pids, BTreeSet::from([pid_a, pid_b]));

    // Parquet: OS ids in pid/tid, row ids in process_id/thread_id.
    let o = convert(&ins, &tmp.path().join("pq"), &["-f", "parquet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tmp.path().join("pq/t_results.parquet/api_calls");
    let mut seen = BTreeSet::new();
    for file in walk(&dir) {
        let f = std::fs::File::open(&file).unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let batch = batch.unwrap();
            let col = |name: &str| {
                batch
                    .column_by_name(name)
                    .unwrap_or_else(|| panic!("no column {name}"))
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .unwrap()
                    .clone()
            };
            let (pid, tid, prow, trow) =
                (col("pid"), col("tid"), col("process_id"), col("thread_id"));
            for r in 0..batch.num_rows() {
                seen.insert((pid.value(r), tid.value(r), prow.value(r), trow.value(r)));
            }
        }
    }
    assert!(!seen.is_empty());
    let threads: BTreeSet<(i64, i64)> = threads_a.union(&threads_b).copied().collect();
    for (pid, tid, prow, trow) in seen {
        assert!(pid == pid_a || pid == pid_b, "pid {pid}");
        assert!(threads.contains(&(pid, tid)), "thread ({pid}, {tid})");
        assert_eq!(prow, 1);
        assert!((1..=3).contains(&trow), "thread row {trow}");
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
    out
}

/// The same trace written with row ids equal to the OS ids and with row ids unlike them
/// converts to the same bytes: nothing of the row ids leaks into a timeline.
#[test]
fn row_ids_do_not_change_perfetto_or_otf2_output() {
    let tmp = tempfile::tempdir().unwrap();
    let gen = |dir: &str, row_ids: bool| {
        let cfg = rocpd_gen::GenConfig {
            seed: 43,
            nodes: 2,
            processes: 3,
            gpus_per_node: 2,
            threads_per_process: 4,
            iterations: 5,
            odd_names: true,
            row_ids,
        };
        rocpd_gen::generate(&cfg, &tmp.path().join(dir)).expect("generate")
    };
    let (plain, rows) = (gen("plain", false), gen("rows", true));
    for format in ["pftrace", "otf2"] {
        let out = |ins: &[PathBuf], name: &str| {
            let dir = tmp.path().join(format!("{name}-{format}"));
            let o = convert(ins, &dir, &["-f", format]);
            assert!(o.status.success(), "{}", stderr(&o));
            let mut files: Vec<(String, Vec<u8>)> = Vec::new();
            collect(&dir, &dir, &mut files);
            files
        };
        let (a, b) = (out(&plain, "plain"), out(&rows, "rows"));
        assert!(!a.is_empty());
        assert_eq!(
            a.iter().map(|f| &f.0).collect::<Vec<_>>(),
            b.iter().map(|f| &f.0).collect::<Vec<_>>()
        );
        for ((name, x), (_, y)) in a.iter().zip(&b) {
            assert!(x == y, "{format}: {name} differs");
        }
    }
}

/// Every file under `dir` as (relative path, bytes), sorted.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(root, &p, out);
        } else {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.push((rel, std::fs::read(&p).unwrap()));
        }
    }
}
