//! `rocpd-gen`: a deterministic generator of realistic RocPD schema-v3
//! databases (the SQLite files rocprofv3 writes, one per process), for tests
//! and benchmarks.
//!
//! This module owns the public API: [`GenConfig`], [`generate`] (one
//! database per process, written in parallel, each in one transaction) and
//! [`table_row_counts`]. The cluster layout is in [`layout`], the per-process
//! simulation in `sim`, SQLite writing in `db`, names in [`names`] and the
//! PRNG in [`rng`].
//!
//! Determinism: the same config (including the seed) gives byte-for-byte
//! identical row contents. No wall clock, no hash-map iteration order in the
//! output; every random choice comes from a SplitMix64 stream keyed by
//! (seed, pid).

pub mod layout;
pub mod names;
pub mod rng;

mod csv_export;
mod db;
mod json_export;
mod sim;

use anyhow::{bail, Context, Result};
use rocpd_schema::TABLES;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What to generate. Event counts grow linearly with
/// `processes * iterations` (plus a little with `threads_per_process`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// Number of nodes (hostnames `node-00`, `node-01`, …).
    pub nodes: u32,
    /// Total number of processes (one database each), spread round-robin
    /// over the nodes.
    pub processes: u32,
    /// GPU agents per node (each node also has one CPU agent).
    pub gpus_per_node: u32,
    /// Threads per process (at least 2: main + worker; a third runs HSA
    /// calls, more launch extra kernels).
    pub threads_per_process: u32,
    /// Scale knob: each iteration of each process emits a burst of API
    /// calls, kernels, copies, allocations, markers and samples.
    pub iterations: u32,
    /// Use names with quotes, commas, newlines, tabs, non-ASCII, an empty
    /// display name and a ~2000 character kernel name.
    pub odd_names: bool,
    /// Write process and thread row ids (1, 2, ... per database) that differ from the OS
    /// pids and tids, as the schema allows: every `pid`/`tid` reference column then holds
    /// a row id, and only `rocpd_info_process.pid` / `rocpd_info_thread.tid` the OS ids.
    pub row_ids: bool,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            seed: 1,
            nodes: 1,
            processes: 2,
            gpus_per_node: 2,
            threads_per_process: 3,
            iterations: 20,
            odd_names: true,
            row_ids: false,
        }
    }
}

impl GenConfig {
    /// Check the configuration's limits.
    pub fn validate(&self) -> Result<()> {
        if self.nodes == 0 {
            bail!("nodes must be at least 1");
        }
        if self.processes == 0 {
            bail!("processes must be at least 1");
        }
        if self.gpus_per_node == 0 {
            bail!("gpus_per_node must be at least 1");
        }
        if self.threads_per_process < 2 {
            bail!("threads_per_process must be at least 2");
        }
        if self.processes > 1_000_000 || self.threads_per_process > 4096 || self.gpus_per_node > 64
        {
            bail!("configuration too large");
        }
        Ok(())
    }
}

/// The database path of one process: `<out_dir>/<hostname>_<pid>_results.db`.
fn db_path(out_dir: &Path, node: &layout::NodeInfo, p: &layout::ProcInfo) -> PathBuf {
    out_dir.join(format!("{}_{}_results.db", node.hostname, p.pid))
}

/// Generate one database per process into `out_dir` (created if missing).
/// Returns the paths in rank order. Refuses to overwrite existing files;
/// each file is written under a temporary name and renamed when complete.
pub use csv_export::{export_csv, CsvCounts};
pub use json_export::{export_json, members_moved_last, objects_repeated};

/// Generates the databases.
pub fn generate(cfg: &GenConfig, out_dir: &Path) -> Result<Vec<PathBuf>> {
    cfg.validate()?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("creating output directory {}", out_dir.display()))?;
    let nodes = layout::nodes(cfg);
    let procs = layout::processes(cfg);
    let paths: Vec<PathBuf> = procs
        .iter()
        .map(|p| db_path(out_dir, &nodes[p.node as usize], p))
        .collect();
    for path in &paths {
        if path.exists() {
            bail!("refusing to overwrite existing file {}", path.display());
        }
    }

    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(procs.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let errors: Mutex<Vec<(usize, anyhow::Error)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= procs.len() {
                    break;
                }
                let p = &procs[i];
                if let Err(e) = write_one(cfg, &nodes[p.node as usize], p, &paths[i]) {
                    errors.lock().expect("poisoned").push((i, e));
                }
            });
        }
    });
    let mut errors = errors.into_inner().expect("poisoned");
    if !errors.is_empty() {
        errors.sort_by_key(|(i, _)| *i);
        let (_, e) = errors.remove(0);
        return Err(e);
    }
    Ok(paths)
}

/// Write one process database to a temporary file, then rename it.
fn write_one(
    cfg: &GenConfig,
    node: &layout::NodeInfo,
    p: &layout::ProcInfo,
    path: &Path,
) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    if tmp.exists() {
        std::fs::remove_file(&tmp).with_context(|| format!("removing stale {}", tmp.display()))?;
    }
    let result = (|| -> Result<()> {
        let conn = db::create(&tmp, &p.guid)?;
        conn.execute_batch("BEGIN")?;
        {
            let mut w = db::Writer::new(&conn, &p.guid)?;
            if cfg.row_ids {
                w = w.with_row_ids();
            }
            let s = sim::Sim::new(cfg, node, p, &mut w)?;
            s.run(cfg)?;
            w.finish()?;
        }
        conn.execute_batch("COMMIT")?;
        conn.close().map_err(|(_, e)| e)?;
        if path.exists() {
            bail!("refusing to overwrite existing file {}", path.display());
        }
        std::fs::rename(&tmp, path)
            .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("generating {}", path.display()))
}

/// Row counts of the 20 RocPD tables of one database (through the
/// un-suffixed `rocpd_<name>` views), in [`TABLES`] order.
pub fn table_row_counts(path: &Path) -> Result<Vec<(&'static str, u64)>> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("opening {}", path.display()))?;
    TABLES
        .iter()
        .map(|t| {
            let n: i64 = conn
                .query_row(&format!("SELECT COUNT(*) FROM \"{t}\""), [], |r| r.get(0))
                .with_context(|| format!("counting {t} in {}", path.display()))?;
            Ok((*t, n as u64))
        })
        .collect()
}
