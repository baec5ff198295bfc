//! Turning the input files into RocPD databases: SQLite files are used as they are;
//! rocprofv3 CSV sets and JSON files, and Triton Proton trees and traces, are imported into
//! temporary RocPD databases (in the system's temporary directory, never beside the input) that live as
//! long as the command.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rocpd_rocprofv3::{ImportOptions, ImportReport};

/// Where a database came from, for reports and messages.
#[derive(Debug, Clone)]
pub struct Origin {
    /// `rocprofv3-csv` or `rocprofv3-json`.
    pub format: String,
    /// The input files it was imported from.
    pub files: Vec<PathBuf>,
}

/// The inputs as RocPD databases.
pub struct Inputs {
    /// Databases to read, in input order.
    pub dbs: Vec<PathBuf>,
    /// Imported databases and what they came from.
    pub origins: HashMap<PathBuf, Origin>,
    /// What the imports left out (bad rows skipped, records with no place in RocPD).
    pub notes: Vec<String>,
    /// Rows skipped as bad with `--skip-bad-rows`.
    pub skipped_rows: u64,
    _tmp: Option<(tempfile::TempDir, rocpd_pipeline::cleanup::Registered)>,
}

fn head(path: &Path) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; 8192];
    let mut f = rocpd_pipeline::open_regular(path)?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    buf.truncate(n);
    Ok(buf)
}

/// Marks the catalog's sources read from imported databases with the format and files
/// they came from, so reports name those files rather than the temporary database.
pub fn mark_imported(catalog: &mut rocpd_model::Catalog, origins: &HashMap<PathBuf, Origin>) {
    for s in &mut catalog.sources {
        if let Some(o) = origins.get(&s.path) {
            s.format = o.format.clone();
            s.imported_from = o.files.clone();
        }
    }
}

/// Whether the content of `path` is an input this tool reads (for directory walks):
/// `Ok(None)` when it is, otherwise why not when its name says it should be
/// (`Some(Some(reason))`), or `Some(None)` for any other file.
pub fn unrecognised(path: &Path) -> Result<Option<Option<String>>> {
    let h = head(path)?;
    if rocpd_db::looks_like_sqlite(&h)
        || rocpd_rocprofv3::sniff(path, &h).is_some()
        || rocpd_proton::sniff(path, &h).is_some()
    {
        return Ok(None);
    }
    Ok(Some(
        rocpd_rocprofv3::unrecognised_reason(path, &h)
            .or_else(|| rocpd_proton::unrecognised_reason(path, &h)),
    ))
}

/// Sorts `paths` into databases, rocprofv3 files and Proton files, and imports the latter.
pub fn resolve(paths: &[PathBuf], skip_bad_rows: bool) -> Result<Inputs> {
    let mut dbs = Vec::new();
    let mut rocprof = Vec::new();
    let mut proton = Vec::new();
    for p in paths {
        let h = head(p)?;
        let ext = p
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        if rocpd_db::looks_like_sqlite(&h) {
            dbs.push(p.clone());
        } else if let Some(kind) = rocpd_proton::sniff(p, &h) {
            proton.push((p.clone(), kind));
        } else if rocpd_rocprofv3::sniff(p, &h).is_some()
            || ["csv", "json"].contains(&ext.as_str())
            || (ext == "gz" && p.to_string_lossy().to_ascii_lowercase().contains(".json"))
        {
            // Unrecognised .csv/.json files go to the importer too: it says what is wrong.
            rocprof.push(p.clone());
        } else {
            // The database reader explains what the file is not.
            dbs.push(p.clone());
        }
    }
    let mut inputs = Inputs {
        dbs,
        origins: HashMap::new(),
        notes: Vec::new(),
        skipped_rows: 0,
        _tmp: None,
    };
    if rocprof.is_empty() && proton.is_empty() {
        return Ok(inputs);
    }
    let tmp = tempfile::Builder::new()
        .prefix("rocpd-import-")
        .tempdir()
        .context("cannot create a temporary directory for imported inputs")?;
    // Registered at once, so an interrupted import leaves nothing in the temporary directory.
    let registered = rocpd_pipeline::cleanup::Registered::new(tmp.path());
    let opts = ImportOptions { skip_bad_rows };
    for (i, (path, kind)) in proton.iter().enumerate() {
        let dest = tmp.path().join(format!("proton-{i:04}.db"));
        let report = rocpd_proton::import(path, *kind, &dest)?;
        inputs.notes.extend(
            report
                .notes
                .iter()
                .map(|n| format!("{}: {n}", path.display())),
        );
        inputs.origins.insert(
            dest.clone(),
            Origin {
                format: "proton".into(),
                files: vec![path.to_path_buf()],
            },
        );
        inputs.dbs.push(dest);
    }
    let runs = if rocprof.is_empty() {
        Vec::new()
    } else {
        rocpd_rocprofv3::group_runs(&rocprof)?
    };
    for (i, run) in runs.iter().enumerate() {
        let dest = tmp.path().join(format!("import-{i:04}.db"));
        let report: ImportReport = rocpd_rocprofv3::import(run, &dest, &opts)?;
        let format = match run.source {
            rocpd_rocprofv3::RunSource::Csv { .. } => "rocprofv3-csv",
            rocpd_rocprofv3::RunSource::Json { .. } => "rocprofv3-json",
        };
        inputs.skipped_rows += report.skipped_rows;
        for s in report.skipped.iter().chain(&report.ignored) {
            inputs.notes.push(format!("{}: {s}", run.label));
        }
        inputs.origins.insert(
            dest.clone(),
            Origin {
                format: format.into(),
                files: run.files.clone(),
            },
        );
        inputs.dbs.push(dest);
    }
    inputs._tmp = Some((tmp, registered));
    Ok(inputs)
}
