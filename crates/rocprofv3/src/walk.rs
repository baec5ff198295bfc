//! Finding the runs in a list of input paths.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rocpd_model::{Error, Result};

use crate::csv_import::{distinct_guids, CsvKind};
use crate::{json_import, sniff_file, Detected, Run, RunSource};

/// The `<kind>` parts of rocprofv3 CSV file names (`<prefix><kind>.csv`).
const NAME_KINDS: &[&str] = &[
    "agent_info",
    "kernel_trace",
    "hip_api_trace",
    "hsa_api_trace",
    "marker_api_trace",
    "rccl_api_trace",
    "rocdecode_api_trace",
    "rocjpeg_api_trace",
    "memory_copy_trace",
    "memory_allocation_trace",
    "scratch_memory_trace",
    "counter_collection",
    "pc_sampling_host_trap",
    "pc_sampling_stochastic",
    "kernel_stats",
    "hip_api_stats",
    "hsa_api_stats",
    "marker_api_stats",
    "rccl_api_stats",
    "rocdecode_api_stats",
    "rocjpeg_api_stats",
    "memory_copy_stats",
    "memory_allocation_stats",
    "scratch_memory_stats",
    "counter_collection_stats",
    "pc_sampling_host_trap_stats",
    "pc_sampling_stochastic_stats",
    "domain_stats",
];

/// Splits a CSV file stem into (prefix, name kind): `1234_kernel_trace` →
/// (`1234_`, `kernel_trace`). A stem ending in no known kind is its own group.
pub(crate) fn split_name(stem: &str) -> (String, Option<&'static str>) {
    let lower = stem.to_ascii_lowercase();
    let mut best: Option<&'static str> = None;
    for k in NAME_KINDS {
        let matches = lower == *k
            || (lower.len() > k.len()
                && lower.ends_with(k)
                && lower.as_bytes()[lower.len() - k.len() - 1] == b'_');
        if matches && best.is_none_or(|b| k.len() > b.len()) {
            best = Some(k);
        }
    }
    match best {
        Some(k) => (stem[..stem.len() - k.len()].to_string(), Some(k)),
        None => (stem.to_string(), None),
    }
}

/// Recursively lists the files of `dir` whose content is rocprofv3 CSV or JSON, sorted.
fn walk_dir(dir: &Path, out: &mut Vec<(PathBuf, Detected)>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::input(dir, "directory", e.to_string()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::input(dir, "directory", e.to_string()))?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk_dir(&p, out)?;
        } else if p.is_file() {
            if let Some(d) = sniff_file(&p)? {
                out.push((p, d));
            }
        }
    }
    Ok(())
}

#[derive(Default)]
struct Group {
    files: Vec<(PathBuf, CsvKind, Option<&'static str>)>,
}

pub(crate) fn group_runs(paths: &[PathBuf], threads: usize) -> Result<Vec<Run>> {
    let mut files: Vec<(PathBuf, Detected)> = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk_dir(p, &mut files)?;
        } else {
            match sniff_file(p)? {
                Some(d) => files.push((p.clone(), d)),
                None => {
                    if let Some(why) = crate::gzip_problem(p) {
                        return Err(Error::input(p, "gzip data", why));
                    }
                    return Err(Error::input(
                        p,
                        "line 1",
                        "not a rocprofv3 CSV or JSON file: the header names no rocprofv3 columns \
                         and the content is not a rocprofiler-sdk-tool JSON document",
                    ));
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    files.retain(|(p, _)| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));

    // The JSON files are pre-scanned side by side: each is a whole pass over the file.
    let json: Vec<&Path> = files
        .iter()
        .filter(|(_, d)| matches!(d, Detected::Json))
        .map(|(p, _)| p.as_path())
        .collect();
    // Every file is pre-scanned (a job never fails: its result is taken in input order
    // below), so the error reported does not depend on timing.
    let mut prescans =
        rocpd_pipeline::in_parallel(json.len(), threads, |i| Ok(json_import::prescan(json[i])))?
            .into_iter();
    let mut runs = Vec::new();
    // CSV groups keyed by (directory, prefix, whether the name had a known kind), in
    // first-seen order.
    let mut order: Vec<(PathBuf, String, bool)> = Vec::new();
    let mut groups: BTreeMap<(PathBuf, String, bool), Group> = BTreeMap::new();
    for (path, det) in files {
        match det {
            Detected::Json => {
                let json_import::Prescanned { procs, places } = prescans
                    .next()
                    .unwrap_or_else(|| Err(Error::Usage("internal: a pre-scan was lost".into())))?;
                if procs.is_empty() {
                    return Err(Error::input(
                        &path,
                        "rocprofiler-sdk-tool",
                        "the file holds no per-process object",
                    ));
                }
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                for (index, m) in procs.into_iter().enumerate() {
                    let label = match m.pid {
                        Some(pid) => format!("{name}#{index} pid {pid}"),
                        None => format!("{name}#{index}"),
                    };
                    runs.push(Run {
                        label,
                        files: vec![path.clone()],
                        source: RunSource::Json {
                            index,
                            pid: m.pid,
                            init_time: m.init_time,
                            identity: m.identity,
                            places: places.clone(),
                        },
                    });
                }
            }
            Detected::Csv(kind) => {
                let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                // `1234_kernel_trace.csv.gz` groups with `1234_kernel_trace.csv`'s run.
                let stem = crate::csv_stem(&path)
                    .map(str::to_string)
                    .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
                    .unwrap_or_default();
                let (prefix, name_kind) = split_name(&stem);
                let key = (dir, prefix, name_kind.is_some());
                if !groups.contains_key(&key) {
                    order.push(key.clone());
                }
                groups
                    .entry(key)
                    .or_default()
                    .files
                    .push((path, kind, name_kind));
            }
        }
    }
    for key in order {
        let group = groups.remove(&key).expect("group");
        let (dir, prefix, named) = key;
        for (i, (p, _, nk)) in group.files.iter().enumerate() {
            if let Some(other) = group.files[..i]
                .iter()
                .find(|(_, _, k)| k.is_some() && k == nk)
            {
                return Err(Error::input(
                    p,
                    "file name",
                    format!(
                        "two {} files in one run ({} and {}): give each process's files a distinct prefix",
                        nk.unwrap_or("?"),
                        other.0.display(),
                        p.display()
                    ),
                ));
            }
        }
        // `rocpd convert` CSVs hold several processes, told apart by their guid.
        let mut guids: Vec<String> = Vec::new();
        for (p, kind, _) in &group.files {
            if kind.is_imported() {
                for g in distinct_guids(p)? {
                    if !guids.contains(&g) {
                        guids.push(g);
                    }
                }
            }
        }
        let run_prefix = if named {
            prefix.clone()
        } else {
            format!("{prefix}_")
        };
        let base_label = {
            let p = prefix.trim_end_matches('_');
            if p.is_empty() {
                format!("{}/", dir.display())
            } else {
                format!("{}/{p}", dir.display())
            }
        };
        let files: Vec<PathBuf> = group.files.iter().map(|f| f.0.clone()).collect();
        let kinds: Vec<CsvKind> = group.files.iter().map(|f| f.1).collect();
        let make = |guid: Option<String>, label: String| Run {
            label,
            files: files.clone(),
            source: RunSource::Csv {
                dir: dir.clone(),
                prefix: run_prefix.clone(),
                kinds: kinds.clone(),
                guid,
            },
        };
        if guids.len() <= 1 {
            runs.push(make(guids.pop(), base_label));
        } else {
            for g in guids {
                let label = format!("{base_label} guid {g}");
                runs.push(make(Some(g), label));
            }
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_prefix_and_kind() {
        assert_eq!(
            split_name("1234_kernel_trace"),
            ("1234_".into(), Some("kernel_trace"))
        );
        assert_eq!(
            split_name("kernel_trace"),
            ("".into(), Some("kernel_trace"))
        );
        assert_eq!(
            split_name("decode_fetch_counter_collection"),
            ("decode_fetch_".into(), Some("counter_collection"))
        );
        assert_eq!(
            split_name("x_memory_copy_stats"),
            ("x_".into(), Some("memory_copy_stats"))
        );
        assert_eq!(split_name("hip_trace"), ("hip_trace".into(), None));
        assert_eq!(split_name("xkernel_trace"), ("xkernel_trace".into(), None));
    }

    /// JSON files pre-scanned side by side give the runs of one thread, in input order,
    /// and the error of the first bad file in that order.
    #[test]
    fn pre_scans_side_by_side_give_the_same_runs_and_error() {
        let tmp = tempfile::tempdir().unwrap();
        let object = |pid: i64| format!("{{\"metadata\":{{\"pid\":{pid},\"init_time\":5}}}}");
        let mut paths = Vec::new();
        for (i, objects) in [1, 3, 2, 1, 2].into_iter().enumerate() {
            let procs: Vec<String> = (0..objects).map(|k| object(100 * i as i64 + k)).collect();
            let p = tmp.path().join(format!("{i}_results.json"));
            let text = format!("{{\"rocprofiler-sdk-tool\":[{}]}}", procs.join(","));
            std::fs::write(&p, text).unwrap();
            paths.push(p);
        }
        let one = group_runs(&paths, 1).unwrap();
        assert_eq!(one.len(), 9);
        assert_eq!(
            format!("{one:?}"),
            format!("{:?}", group_runs(&paths, 4).unwrap())
        );
        // Two bad files: the first in input order is named, whatever finishes first.
        for bad in [1, 3] {
            std::fs::write(&paths[bad], "{\"rocprofiler-sdk-tool\":[]}").unwrap();
        }
        for threads in [1, 2, 4] {
            let e = group_runs(&paths, threads).unwrap_err().to_string();
            assert!(e.contains("1_results.json"), "{threads}: {e}");
        }
    }
}
