//! The dataset directory as many runs share it: its descriptor (`_dataset.json`, written
//! once by whichever run creates the dataset), run ids, the per-run descriptions
//! (`_runs/<run>.json`), publishing staged files without ever replacing one, and the
//! summary (`_metadata.json`) rebuilt from the runs after each commit.
//!
//! Every file that another process may read is made visible by one atomic step: a hard
//! link (which fails rather than replace an existing name) for the files that are never
//! rewritten, a rename for the one file that is (the summary). Nothing is ever written
//! in place where a reader could see it half done.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rocpd_model::{Error, Result};
use serde_json::{json, Value};

use crate::schema::SCHEMA_VERSION;
use crate::TableFormat;

/// The descriptor of a dataset: its layout version and the options every run must share.
pub(crate) const DESCRIPTOR: &str = "_dataset.json";
/// The committed runs, one description each.
pub(crate) const RUNS: &str = "_runs";
/// The files of runs in progress (`_staging/<run>/`), published at commit.
pub(crate) const STAGING: &str = "_staging";
/// The summary of every committed run, rebuilt after each commit.
pub(crate) const SUMMARY: &str = "_metadata.json";

/// What every run appending to a dataset must agree on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Descriptor {
    pub schema_version: String,
    pub table_format: TableFormat,
    pub partition_by: Vec<String>,
}

impl Descriptor {
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "format": "rocpd-parquet",
            "schema_version": self.schema_version,
            "table_format": self.table_format.name(),
            "partition_by": self.partition_by,
            "created_by": crate::created_by(),
        })
    }

    fn from_json(path: &Path, v: &Value) -> Result<Descriptor> {
        let bad =
            |what: &str| Error::output(path, format!("not a rocpd dataset descriptor: {what}"));
        if v.get("format").and_then(Value::as_str) != Some("rocpd-parquet") {
            return Err(bad("no \"format\": \"rocpd-parquet\""));
        }
        let version = v
            .get("schema_version")
            .and_then(version_text)
            .ok_or_else(|| bad("no schema_version"))?;
        let format = v
            .get("table_format")
            .and_then(Value::as_str)
            .and_then(TableFormat::from_name)
            .ok_or_else(|| bad("no known table_format"))?;
        let partition_by = v
            .get("partition_by")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no partition_by list"))?
            .iter()
            .map(|k| {
                k.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad("partition_by"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Descriptor {
            schema_version: version,
            table_format: format,
            partition_by,
        })
    }
}

/// A schema version as written, `"3"` or `3`.
fn version_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Seconds since the epoch, now.
fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The current UTC time in RFC 3339 (`2026-12-02T05:10:55Z`).
pub(crate) fn now_rfc3339() -> String {
    rfc3339(now_secs())
}

/// A new run id: the UTC start time and 64 random bits (`20261202T051055Z-3f9a1c2b7d4e6a81`).
/// Sortable by time, and distinct for writers that start in the same second on any host.
pub(crate) fn new_run_id() -> String {
    format!("{}-{:016x}", compact_utc(now_secs()), random_u64())
}

/// 64 bits no other process picks: the standard library seeds each `RandomState` from
/// the operating system's random source.
pub(crate) fn random_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.finish()
}

/// A random (version 4) UUID, for the Delta table id.
pub(crate) fn random_uuid() -> String {
    let (a, b) = (random_u64(), random_u64());
    let b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    let a = (a & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// Civil date of a day count since 1970-01-01 (proleptic Gregorian).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day, hour, minute, second) in UTC of `secs` since the epoch.
fn utc(secs: u64) -> (i64, u32, u32, u64, u64, u64) {
    let (y, m, d) = civil((secs / 86_400) as i64);
    let s = secs % 86_400;
    (y, m, d, s / 3600, s / 60 % 60, s % 60)
}

fn compact_utc(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = utc(secs);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// RFC 3339 UTC time of `secs` since the epoch (`2026-12-02T05:10:55Z`).
fn rfc3339(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = utc(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Makes `src` visible as `dst` in one step, failing (and leaving `src`) when `dst`
/// exists: a hard link, then `src` is removed. `AlreadyExists` comes back as `Ok(false)`.
pub(crate) fn publish(src: &Path, dst: &Path) -> Result<bool> {
    match std::fs::hard_link(src, dst) {
        Ok(()) => {
            let _ = std::fs::remove_file(src);
            Ok(true)
        }
        // Over NFS a retried link can report EEXIST although this call made the name:
        // then both names are one file.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && same_file(src, dst) => {
            let _ = std::fs::remove_file(src);
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::output(
            dst,
            format!("cannot publish {}: {e}", src.display()),
        )),
    }
}

#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &Path, _: &Path) -> bool {
    false
}

/// Writes `bytes` to `tmp` (which must not exist) and flushes it to disk.
pub(crate) fn write_new(tmp: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut f = crate::files::create_new(tmp)?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::output(tmp, format!("write failed: {e}")))
}

fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read(path).map_err(|e| Error::output(path, format!("cannot read: {e}")))?;
    serde_json::from_slice(&text).map_err(|e| Error::output(path, format!("not valid JSON: {e}")))
}

/// Gets an existing dataset `dir` ready for one more run (creating it when it is missing
/// or empty), after checking that it is a dataset this version writes with the same
/// options. `staging` is the run's own staging directory, for the descriptor's draft.
pub(crate) fn prepare_append(dir: &Path, want: &Descriptor, staging: &Path) -> Result<()> {
    let desc = dir.join(DESCRIPTOR);
    if !desc.exists() {
        let entries: Vec<String> = match std::fs::read_dir(dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(e) => return Err(Error::output(dir, format!("cannot list: {e}"))),
        };
        // A dataset another writer is creating this moment has only its staging area.
        // (Or, by now, its descriptor too.)
        let fresh = entries.iter().all(|n| n == STAGING || n == DESCRIPTOR);
        if !fresh && !desc.exists() {
            let meta = dir.join(SUMMARY);
            if meta.exists() {
                let v = read_json(&meta)?;
                let version = v.get("schema_version").and_then(version_text);
                if version.as_deref() == Some(SCHEMA_VERSION) {
                    return Err(Error::output(
                        dir,
                        format!(
                            "is a rocpd Parquet dataset without its {DESCRIPTOR} (removed?); refusing to append to it"
                        ),
                    ));
                }
                return Err(Error::output(
                    dir,
                    format!(
                        "is a Parquet dataset of schema version {}, written by an older rocpd; this rocpd appends only to version {SCHEMA_VERSION} datasets: write a new dataset",
                        version.unwrap_or_else(|| "?".into())
                    ),
                ));
            }
            return Err(Error::output(
                dir,
                format!(
                    "is not a rocpd Parquet dataset (no {DESCRIPTOR}); refusing to append to it"
                ),
            ));
        }
        let draft = staging.join(DESCRIPTOR);
        std::fs::create_dir_all(staging)
            .map_err(|e| Error::output(staging, format!("cannot create directory: {e}")))?;
        write_new(
            &draft,
            &serde_json::to_vec_pretty(&want.to_json()).expect("JSON value"),
        )?;
        // Whoever links first creates the dataset; the others check against it.
        publish(&draft, &desc)?;
        let _ = std::fs::remove_file(&draft);
    }
    let have = Descriptor::from_json(&desc, &read_json(&desc)?)?;
    if have.schema_version != want.schema_version {
        return Err(Error::output(
            dir,
            format!(
                "is a Parquet dataset of schema version {}; this rocpd writes version {}: write a new dataset",
                have.schema_version, want.schema_version
            ),
        ));
    }
    if have.table_format != want.table_format {
        return Err(Error::Usage(format!(
            "{}: the dataset's table format is {}; append with --table-format {}",
            dir.display(),
            have.table_format.name(),
            have.table_format.name()
        )));
    }
    if have.partition_by != want.partition_by {
        let keys = |k: &[String]| {
            if k.is_empty() {
                "(none)".to_string()
            } else {
                k.join(",")
            }
        };
        return Err(Error::Usage(format!(
            "{}: the dataset is partitioned by {}, this run by {}; every run of a dataset uses the same --partition-by",
            dir.display(),
            keys(&have.partition_by),
            keys(&want.partition_by)
        )));
    }
    Ok(())
}

/// The committed runs of `dir`, by run id (sorted), as their descriptions say.
pub(crate) fn runs(dir: &Path) -> Result<BTreeMap<String, Value>> {
    let runs_dir = dir.join(RUNS);
    let mut out = BTreeMap::new();
    let rd = match std::fs::read_dir(&runs_dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::output(&runs_dir, format!("cannot list: {e}"))),
    };
    for e in rd {
        let e = e.map_err(|e| Error::output(&runs_dir, format!("cannot list: {e}")))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(run) = name.strip_suffix(".json") else {
            continue;
        };
        if run.starts_with('.') {
            continue;
        }
        out.insert(run.to_string(), read_json(&e.path())?);
    }
    Ok(out)
}

/// Refuses a run whose inputs are already in the dataset: appending a source twice
/// would count every one of its events twice.
pub(crate) fn refuse_known_sources(dir: &Path, guids: &[(String, PathBuf)]) -> Result<()> {
    for (run, v) in runs(dir)? {
        // A run description without its sources' guids would let an input in twice.
        let damaged = || {
            Error::output(
                dir.join(RUNS).join(format!("{run}.json")),
                "a run description without its sources' guids: the dataset's run list is damaged",
            )
        };
        let known = v
            .get("sources")
            .and_then(Value::as_array)
            .ok_or_else(damaged)?;
        for s in known {
            let g = s.get("guid").and_then(Value::as_str).ok_or_else(damaged)?;
            if let Some((_, path)) = guids.iter().find(|(mine, _)| mine == g) {
                return Err(Error::input(
                    path,
                    format!("source guid {g}"),
                    format!(
                        "its events are already in the dataset {} (run {run}); appending it again would count them twice",
                        dir.display()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Rebuilds `_metadata.json` from every committed run and renames it into place, until
/// the runs listed after the rename are those it summarises: a writer that renames last
/// has then seen every run committed before it, so concurrent commits cannot leave a
/// summary that misses one.
pub(crate) fn rebuild_summary(dir: &Path, desc: &Descriptor, scratch: &Path) -> Result<()> {
    for attempt in 0..1000 {
        let runs = runs(dir)?;
        let summary = summarize(desc, &runs);
        let tmp = scratch.join(format!(".{SUMMARY}.{attempt}"));
        write_new(
            &tmp,
            &serde_json::to_vec_pretty(&summary).expect("JSON value"),
        )?;
        let dst = dir.join(SUMMARY);
        std::fs::rename(&tmp, &dst)
            .map_err(|e| Error::output(&dst, format!("cannot rename into place: {e}")))?;
        let after = self::runs(dir)?;
        if after.keys().eq(runs.keys()) {
            return Ok(());
        }
    }
    Err(Error::output(
        dir.join(SUMMARY),
        "runs kept committing while the summary was rebuilt; it will be rebuilt by the next run",
    ))
}

fn summarize(desc: &Descriptor, runs: &BTreeMap<String, Value>) -> Value {
    let mut tables: BTreeMap<String, (String, u64, Vec<Value>)> = BTreeMap::new();
    let mut span: Option<(i64, i64)> = None;
    let mut run_list = Vec::new();
    for (id, r) in runs {
        if let Some([a, b]) = r
            .get("time_range_ns")
            .and_then(Value::as_array)
            .and_then(|v| <&[Value; 2]>::try_from(v.as_slice()).ok())
        {
            if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
                span = Some(span.map_or((a, b), |(lo, hi)| (lo.min(a), hi.max(b))));
            }
        }
        let mut rows = serde_json::Map::new();
        for (name, t) in r
            .get("tables")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let n = t.get("rows").and_then(Value::as_u64).unwrap_or(0);
            rows.insert(name.clone(), n.into());
            let kind = t
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let entry = tables.entry(name.clone()).or_insert((kind, 0, Vec::new()));
            entry.1 = entry.1.saturating_add(n);
            for f in t
                .get("files")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let mut f = f.clone();
                if let Some(o) = f.as_object_mut() {
                    o.insert("run".into(), id.clone().into());
                }
                entry.2.push(f);
            }
        }
        run_list.push(json!({
            "run": id,
            "created": r.get("created"),
            "sources": r.get("sources"),
            "rows": rows,
        }));
    }
    let tables: serde_json::Map<String, Value> = tables
        .into_iter()
        .map(|(name, (kind, rows, files))| {
            (name, json!({"kind": kind, "rows": rows, "files": files}))
        })
        .collect();
    json!({
        "format": "rocpd-parquet",
        "schema_version": desc.schema_version,
        "table_format": desc.table_format.name(),
        "partition_by": desc.partition_by,
        "columns_only_in_path": if desc.partition_by.iter().any(|k| k == "pid") { vec!["pid"] } else { vec![] },
        "runs": run_list,
        "time_range_ns": span.map(|(a, b)| [a, b]),
        "tables": tables,
    })
}

/// Removes the skeleton of a dataset no run was committed to (its descriptor and empty
/// directories), when no other run is staging in it: what a first run that failed
/// leaves. Directories are removed only when empty, so files of any other writer stay.
pub(crate) fn remove_unused_skeleton(root: &Path) {
    let empty = |d: &Path| std::fs::read_dir(d).map_or(true, |mut r| r.next().is_none());
    if !empty(&root.join(RUNS)) || !empty(&root.join(STAGING)) {
        return;
    }
    fn prune(dir: &Path) {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    prune(&e.path());
                }
            }
        }
        let _ = std::fs::remove_dir(dir);
    }
    let _ = std::fs::remove_file(root.join(DESCRIPTOR));
    prune(root);
}

/// Refuses a symbolic link at `root/<rel>` or on the way there: a dataset other users
/// write to could hold one planted to send this run's files outside the output directory.
pub(crate) fn refuse_links(root: &Path, rel: &Path) -> Result<()> {
    let mut at = root.to_path_buf();
    for c in rel.components() {
        at.push(c);
        if at
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(Error::output(
                &at,
                "is a symbolic link inside the dataset; a run never writes through one",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_188_255), "2026-12-02T05:10:55Z");
        assert_eq!(compact_utc(1_796_188_255), "20261202T051055Z");
    }

    #[test]
    fn run_ids_and_uuids_differ_and_have_their_shape() {
        let (a, b) = (new_run_id(), new_run_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), "20261202T051055Z-".len() + 16);
        let u = random_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
    }

    #[test]
    fn publishing_never_replaces_a_file() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, c) = (d.path().join("a"), d.path().join("b"), d.path().join("c"));
        write_new(&a, b"first").unwrap();
        assert!(publish(&a, &c).unwrap());
        assert!(!a.exists());
        write_new(&b, b"second").unwrap();
        assert!(!publish(&b, &c).unwrap());
        assert_eq!(std::fs::read(&c).unwrap(), b"first");
        assert!(write_new(&c, b"third").is_err());
    }
}
