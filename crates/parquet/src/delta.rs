//! The Delta Lake transaction log of each table directory (`<table>/_delta_log/`),
//! written from the public Delta protocol: version 0 holds `protocol` and `metaData`,
//! and every run commits one version per table with an `add` action (partition values,
//! size, statistics) for each of its files and a `commitInfo` naming the run.
//!
//! A commit is the creation of `_delta_log/<version>.json` by a hard link, which fails
//! when the file exists: a writer that loses the race for a version number reads the log
//! again and tries the next one. Runs only ever add files (blind appends), so two
//! commits never conflict and no other check is needed.

use std::path::Path;

use arrow_schema::{DataType, Schema};
use rocpd_model::{Error, Result};
use serde_json::{json, Value};

use crate::dataset;

/// The protocol versions written: reader 1 and writer 2 (no deletion vectors, column
/// mapping or other table features), which every Delta reader supports.
const MIN_READER: u32 = 1;
const MIN_WRITER: u32 = 2;

/// One file a run adds to a table.
pub(crate) struct Add {
    /// Path inside the table directory, `/`-separated, as on disk.
    pub path: String,
    /// Its hive partition directory (`node=a/pid=1`, or `""`).
    pub partition: String,
    pub bytes: u64,
    pub rows: u64,
    /// `((start min, start max), (end min, end max))` for event tables.
    pub times: Option<((i64, i64), (i64, i64))>,
}

/// The Delta type of an Arrow column of the dataset.
fn delta_type(name: &str, t: &DataType) -> Result<&'static str> {
    Ok(match t {
        DataType::Int64 => "long",
        DataType::Int32 => "integer",
        DataType::Float64 => "double",
        DataType::Boolean => "boolean",
        DataType::Utf8 | DataType::LargeUtf8 => "string",
        DataType::Dictionary(_, v) if matches!(**v, DataType::Utf8) => "string",
        other => {
            return Err(Error::Usage(format!(
                "internal: column {name} has type {other}, which the Delta log does not map"
            )))
        }
    })
}

/// The Delta schema of a table: the file's columns, then the partition columns (whose
/// values are in the paths only).
pub(crate) fn schema_string(file_schema: &Schema, partition: &[(&str, &str)]) -> Result<String> {
    let mut fields: Vec<Value> = file_schema
        .fields()
        .iter()
        .map(|f| {
            Ok(json!({
                "name": f.name(),
                "type": delta_type(f.name(), f.data_type())?,
                "nullable": f.is_nullable(),
                "metadata": {},
            }))
        })
        .collect::<Result<_>>()?;
    for (name, ty) in partition {
        fields.push(json!({"name": name, "type": ty, "nullable": true, "metadata": {}}));
    }
    Ok(json!({"type": "struct", "fields": fields}).to_string())
}

/// Percent-encodes a relative path for an `add` action (a URI reference): everything
/// but unreserved characters, `/` and `=`, so that a `%XX` of a hive directory name
/// reaches the reader as the literal characters it is on disk.
fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/' | b'=') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The partition values of a hive directory: `%XX` decoded, the hive NULL as `null`.
fn partition_values(dir: &str) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for part in dir.split('/').filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            continue;
        };
        let value = if v == crate::convert::HIVE_NULL {
            Value::Null
        } else {
            Value::String(unescape(v))
        };
        out.insert(k.to_string(), value);
    }
    out
}

fn unescape(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The log's commit versions, sorted, and its newest checkpoint's version. A version
/// that is not a regular file is refused.
fn listing(log: &Path) -> Result<(Vec<u64>, Option<u64>)> {
    let rd = match std::fs::read_dir(log) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), None)),
        Err(e) => return Err(Error::output(log, format!("cannot list: {e}"))),
    };
    let mut versions = Vec::new();
    let mut checkpoint: Option<u64> = None;
    for e in rd.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        // `<version>.checkpoint.parquet`, or `<version>.checkpoint.<part>.<parts>.parquet`.
        if let Some(v) = name
            .split_once(".checkpoint.")
            .filter(|(_, rest)| rest.ends_with("parquet"))
            .and_then(|(v, _)| v.parse::<u64>().ok())
        {
            checkpoint = checkpoint.max(Some(v));
        }
        if let Some(v) = name
            .strip_suffix(".json")
            .filter(|s| s.len() == 20 && s.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|s| s.parse::<u64>().ok())
        {
            if !e.file_type().is_ok_and(|t| t.is_file()) {
                return Err(Error::output(
                    e.path(),
                    "a Delta log version that is not a regular file: the log is damaged",
                ));
            }
            versions.push(v);
        }
    }
    versions.sort_unstable();
    Ok((versions, checkpoint))
}

/// The version the next commit tries: one past the newest in the log (0 when empty).
/// Only lists the log: [`check_log`] has checked it before the run's first commit.
fn next_version(log: &Path) -> Result<u64> {
    match listing(log)?.0.last() {
        None => Ok(0),
        Some(newest) => newest
            .checked_add(1)
            .ok_or_else(|| Error::output(log, "a Delta log version past the largest number")),
    }
}

/// Refuses a log readers would refuse, before the run adds to it: a gap between the
/// versions from the newest checkpoint on (readers start there; older ones may be
/// gone), or a newest commit, or a first one without a checkpoint, that is not JSON
/// lines (and a version that is not a file, as [`listing`] does).
fn check_sound(log: &Path) -> Result<()> {
    let (mut versions, checkpoint) = listing(log)?;
    let (Some(&first), Some(&newest)) = (versions.first(), versions.last()) else {
        return Ok(());
    };
    if let Some(c) = checkpoint {
        versions.retain(|&v| v >= c);
    }
    if let Some(w) = versions.windows(2).find(|w| w[1] != w[0] + 1) {
        return Err(Error::output(
            log,
            format!(
                "the Delta log has versions {} and {} but none between: the log is damaged (Delta readers refuse it)",
                w[0], w[1]
            ),
        ));
    }
    let mut checked = vec![newest];
    if checkpoint.is_none() {
        checked.push(first);
    }
    for v in checked {
        let path = log.join(format!("{v:020}.json"));
        let text =
            std::fs::read(&path).map_err(|e| Error::output(&path, format!("cannot read: {e}")))?;
        let bad = text
            .split(|&b| b == b'\n')
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .any(|l| serde_json::from_slice::<serde_json::Value>(l).is_err());
        if bad || text.is_empty() {
            return Err(Error::output(
                &path,
                "a Delta commit that is not JSON lines (cut short?): the log is damaged",
            ));
        }
    }
    Ok(())
}

/// Checks, before a run publishes anything, that the log of the table `dir` can take
/// its commit: the log is sound ([`check_sound`]) and a file can be created in it (a
/// log made read-only or immutable would otherwise fail halfway through the tables).
pub(crate) fn check_log(dir: &Path, run: &str) -> Result<()> {
    let log = dir.join("_delta_log");
    check_sound(&log)?;
    std::fs::create_dir_all(&log)
        .map_err(|e| Error::output(&log, format!("cannot create directory: {e}")))?;
    let probe = log.join(format!(".rocpd-probe-{run}"));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| Error::output(&log, format!("cannot write a commit here: {e}")))?;
    std::fs::remove_file(&probe).map_err(|e| Error::output(&probe, format!("cannot remove: {e}")))
}

/// What one table's commit holds besides its adds.
pub(crate) struct TableLog<'a> {
    /// The table directory (`<dataset>/kernels`).
    pub dir: &'a Path,
    pub schema: String,
    pub partition_columns: Vec<String>,
    pub run: &'a str,
}

/// Commits `adds` as the next version of the table's log; returns the version. `scratch`
/// is a directory of the run's own on the same file system, for the draft.
pub(crate) fn commit(t: &TableLog, adds: &[&Add], scratch: &Path) -> Result<u64> {
    let log = t.dir.join("_delta_log");
    std::fs::create_dir_all(&log)
        .map_err(|e| Error::output(&log, format!("cannot create directory: {e}")))?;
    let now = dataset::now_ms();
    let mut body = String::new();
    for a in adds {
        let mut stats = json!({"numRecords": a.rows});
        if let Some(((s_lo, s_hi), (e_lo, e_hi))) = a.times {
            stats["minValues"] = json!({"start_ns": s_lo, "end_ns": e_lo});
            stats["maxValues"] = json!({"start_ns": s_hi, "end_ns": e_hi});
            stats["nullCount"] = json!({"start_ns": 0, "end_ns": 0});
        }
        let add = json!({"add": {
            "path": uri_path(&a.path),
            "partitionValues": partition_values(&a.partition),
            "size": a.bytes,
            "modificationTime": now,
            "dataChange": true,
            "stats": stats.to_string(),
        }});
        body.push_str(&add.to_string());
        body.push('\n');
    }
    let info = json!({"commitInfo": {
        "timestamp": now,
        "operation": "WRITE",
        "operationParameters": {
            "mode": "Append",
            "partitionBy": serde_json::to_string(&t.partition_columns).expect("JSON"),
        },
        "isBlindAppend": true,
        "engineInfo": format!("rocpd-rs/{}", env!("CARGO_PKG_VERSION")),
        "rocpdRun": t.run,
    }});
    body.push_str(&info.to_string());
    body.push('\n');

    let table_name = t
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for _attempt in 0..100_000 {
        let version = next_version(&log)?;
        let mut text = String::new();
        if version == 0 {
            text.push_str(
                &json!({"protocol": {"minReaderVersion": MIN_READER, "minWriterVersion": MIN_WRITER}})
                    .to_string(),
            );
            text.push('\n');
            text.push_str(
                &json!({"metaData": {
                    "id": dataset::random_uuid(),
                    "name": table_name,
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": t.schema,
                    "partitionColumns": t.partition_columns,
                    "configuration": {},
                    "createdTime": now,
                }})
                .to_string(),
            );
            text.push('\n');
        }
        text.push_str(&body);
        let draft = scratch.join(format!(".delta-{table_name}-{version}.json"));
        dataset::write_new(&draft, text.as_bytes())?;
        let dst = log.join(format!("{version:020}.json"));
        let won = dataset::publish(&draft, &dst);
        if !matches!(won, Ok(true)) {
            let _ = std::fs::remove_file(&draft);
        }
        if won? {
            return Ok(version);
        }
        // Another run took this version: read the log again and try the next.
    }
    Err(Error::output(
        &log,
        "could not commit: every version tried was taken by another writer",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_directories_become_values() {
        let v = partition_values("node=a%2Eb%25/pid=__HIVE_DEFAULT_PARTITION__");
        assert_eq!(v["node"], "a.b%");
        assert_eq!(v["pid"], Value::Null);
        assert!(partition_values("").is_empty());
        assert_eq!(unescape("100%"), "100%");
        assert_eq!(unescape("%4"), "%4");
        assert_eq!(unescape("%41%42"), "AB");
    }

    #[test]
    fn paths_are_uri_encoded() {
        assert_eq!(
            uri_path("node=%2Ehost/part-x.parquet"),
            "node=%252Ehost/part-x.parquet"
        );
    }

    #[test]
    fn versions_follow_the_newest_commit() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("_delta_log");
        assert_eq!(next_version(&log).unwrap(), 0);
        std::fs::create_dir(&log).unwrap();
        for v in 0..=3 {
            std::fs::write(log.join(format!("{v:020}.json")), "{\"commitInfo\":{}}\n").unwrap();
        }
        std::fs::write(log.join("x.json"), "").unwrap();
        assert_eq!(next_version(&log).unwrap(), 4);
        // Versions before the newest checkpoint may be gone; none after it.
        std::fs::write(log.join(format!("{:020}.checkpoint.parquet", 2)), "").unwrap();
        std::fs::remove_file(log.join(format!("{:020}.json", 1))).unwrap();
        assert_eq!(next_version(&log).unwrap(), 4);
        check_sound(&log).unwrap();
        std::fs::write(log.join(format!("{:020}.json", 5)), "{}\n").unwrap();
        let e = check_sound(&log).unwrap_err().to_string();
        assert!(e.contains("none between"), "{e}");
    }
}
