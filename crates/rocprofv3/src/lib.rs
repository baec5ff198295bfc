//! Readers of rocprofv3's own outputs (CSV file sets and `*_results.json`): importers into
//! RocPD schema-v3 SQLite databases, and a direct reader of both.
//!
//! rocprofv3 writes one output per profiled process. This crate turns each such *run* into a
//! RocPD v3 database (one table set, one guid) that the caller places in a temporary
//! directory; the RocPD reader (`rocpd-db`) then reads it like any database, so sorting by
//! time, flow links and the catalog come for free and memory stays bounded.
//!
//! * [`sniff`] recognises the formats by content (a CSV header naming rocprofv3 columns;
//!   JSON starting with `{` and naming `rocprofiler-sdk-tool`, also gzip-compressed).
//! * [`group_runs`] groups CSV files into runs by directory and file-name prefix, and
//!   splits a JSON file into one run per per-process object.
//! * [`import`] writes one run into a new database, streaming: CSV records one at a time
//!   (bounded records, resynchronisation after a stray quote with `skip_bad_rows`), JSON
//!   through serde visitors over the record arrays (never a whole-file value).
//! * [`DirectRunSource`] reads a CSV run or a JSON process object directly, as a
//!   `rocpd_pipeline::Source` with no database, when its import needs none (no id claimed
//!   twice, no bad rows, JSON records after the tables they need): the same parsers write
//!   through a `RowSink` into a describing pass and one sorted stream per table, giving
//!   the rows the RocPD reader gives for the import.
//! * [`unrecognised_reason`] says why a file named like a rocprofv3 or RocPD output is not
//!   recognised, for directory walks to warn instead of dropping it.
//!
//! The mapping from rocprofv3 columns and records to RocPD rows is specified in
//! `formats/rocprofv3/README.md`.

#![warn(missing_docs)]

mod csv_import;
mod csv_read;
mod db;
mod direct;
mod flat_parse;
mod guid;
mod gzip;
mod json_import;
mod json_node;
mod json_scan;
mod paged;
mod reason;
mod recorded;
mod sink;
mod walk;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use rocpd_model::{Error, Result};

pub use csv_import::CsvKind;
pub use direct::{set_pages_in_memory, set_texts_in_memory, DirectRunSource};
#[doc(hidden)]
pub use paged::pages_written;
pub use reason::{named_as_output, unrecognised_reason};

/// What a file is, judged by its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Detected {
    /// A rocprofv3 CSV file of this kind.
    Csv(CsvKind),
    /// A rocprofv3 `*_results.json` (possibly gzip-compressed).
    Json,
}

/// How many bytes of a file [`sniff`] wants to see (the CLI may pass fewer).
pub const SNIFF_BYTES: usize = 8192;

/// Recognises a rocprofv3 CSV or JSON file from its first bytes (`head`, a few KiB).
///
/// * CSV: the header line names rocprofv3 columns (matched by name, case-insensitively;
///   an optional leading `Guid` column is allowed). A header that lacks a required column
///   is recognised too when the file name announces the kind (`*_kernel_trace.csv`, ...)
///   and the header shares at least two of the kind's columns, one of them particular to
///   it (`Kernel_Name` with `Dispatch_Id`, ...): [`import`] then names the missing columns.
/// * JSON: the text starts with `{` and names `"rocprofiler-sdk-tool"` early.
/// * Gzip input (magic `1f 8b`, e.g. `*_results.json.gz`, `*_kernel_trace.csv.gz`) is
///   decompressed in memory as far as `head` allows and checked the same way, JSON first,
///   then as CSV.
///
/// `path` is only used to read more of the file when `head` ends inside the CSV header.
pub fn sniff(path: &Path, head: &[u8]) -> Option<Detected> {
    if head.starts_with(&[0x1f, 0x8b]) {
        let text = json_import::gunzip_prefix(head, SNIFF_BYTES);
        if json_import::looks_like_json(&text) {
            return Some(Detected::Json);
        }
        let line = header_of(path, &text)?;
        return csv_import::kind_of_named_header(path, &line).map(Detected::Csv);
    }
    if json_import::looks_like_json(head) {
        return Some(Detected::Json);
    }
    let line = header_of(path, head)?;
    csv_import::kind_of_named_header(path, &line).map(Detected::Csv)
}

/// The header line of a CSV file: from `head` (decompressed, for gzip), or, when `head`
/// ends inside it (or the file is just a header without a line end), from the first 64 KiB
/// of `path`'s text.
pub(crate) fn header_of(path: &Path, head: &[u8]) -> Option<String> {
    csv_import::first_line(head).or_else(|| {
        let mut buf = Vec::new();
        open_text(path)
            .ok()?
            .take(65536)
            .read_to_end(&mut buf)
            .ok()?;
        let whole = buf.len() < 65536;
        csv_import::header_line(&buf, whole)
    })
}

/// Why `path`, which starts as gzip data, cannot be decompressed, if it cannot: what a
/// file that was not recognised says instead when its compression is the cause (a
/// `.gz` cut short in its first bytes decompresses to nothing recognisable).
pub(crate) fn gzip_problem(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut magic = Vec::with_capacity(2);
    (&mut f).take(2).read_to_end(&mut magic).ok()?;
    if magic != [0x1f, 0x8b] {
        return None;
    }
    let mut text = open_text(path).ok()?.take(SNIFF_BYTES as u64);
    match std::io::copy(&mut text, &mut std::io::sink()) {
        Err(e) => Some(format!("truncated or corrupt gzip data: {e}")),
        Ok(_) => None,
    }
}

/// Whether `path` is named as a marker API trace (`<prefix>marker_api_trace.csv`, or
/// `.csv.gz`): the file of a CSV run its markers are in.
pub fn is_marker_trace(path: &Path) -> bool {
    csv_stem(path).is_some_and(|s| s.ends_with("marker_api_trace"))
}

/// Opens `path` for reading its text: gzip data (magic `1f 8b`, one member or several
/// concatenated, as `gzip` and `cat a.gz b.gz` write, zero padding after them ignored:
/// [`gzip::GzMembers`]) is decompressed as it is read.
pub(crate) fn open_text(path: &Path) -> Result<Box<dyn Read + Send>> {
    let err = |e: std::io::Error| Error::input(path, "open", e.to_string());
    let mut f = std::fs::File::open(path).map_err(err)?;
    let mut magic = Vec::with_capacity(2);
    (&mut f)
        .take(2)
        .read_to_end(&mut magic)
        .map_err(|e| Error::input(path, "byte 0", e.to_string()))?;
    let f = std::fs::File::open(path).map_err(err)?;
    Ok(if magic == [0x1f, 0x8b] {
        Box::new(gzip::GzMembers::new(std::io::BufReader::with_capacity(
            1 << 16,
            f,
        )))
    } else {
        Box::new(f)
    })
}

/// The stem of a CSV file name without its `.csv` or `.csv.gz` ending (any case), or
/// `None` when the name has neither.
pub(crate) fn csv_stem(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let lower = name.to_ascii_lowercase();
    let cut = if lower.ends_with(".csv.gz") {
        7
    } else if lower.ends_with(".csv") {
        4
    } else {
        return None;
    };
    // The endings are ASCII, so the cut falls on a character boundary.
    Some(&name[..name.len() - cut])
}

/// Reads the first [`SNIFF_BYTES`] of `path` and calls [`sniff`].
pub fn sniff_file(path: &Path) -> Result<Option<Detected>> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::input(path, "open", e.to_string()))?;
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut f)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| Error::input(path, "byte 0", e.to_string()))?;
    Ok(sniff(path, &head))
}

/// Where a run's data comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunSource {
    /// A set of CSV files of one process.
    Csv {
        /// Directory holding the files.
        dir: PathBuf,
        /// The file-name prefix before the `<kind>.csv` part (`1234_`, `decode_`, or
        /// `""`); for a file whose name ends in no known kind, its whole stem plus `_`.
        prefix: String,
        /// Content kind of each file of [`Run::files`], in the same order.
        kinds: Vec<CsvKind>,
        /// For `rocpd convert` CSVs (leading `Guid` column): only rows of this guid.
        guid: Option<String>,
    },
    /// One per-process object of a `*_results.json` file (the run's only file).
    Json {
        /// Index of the object in the `rocprofiler-sdk-tool` array.
        index: usize,
        /// `metadata.pid`, if the pre-scan found it.
        pid: Option<i64>,
        /// `metadata.init_time` (ns), if the pre-scan found it.
        init_time: Option<i64>,
        /// Two hashes of the object's whole `metadata` value, when it names a pid or a
        /// start time: what the run's guid is made of, so that the same process given
        /// twice (a copy, gzipped or not) is refused as such (D167).
        identity: Option<[u64; 2]>,
        /// Where the file's large values lie, as the pre-scan found them (none: the
        /// reads scan every value they pass).
        places: JsonPlaces,
    },
}

/// The byte ranges of a JSON file's large values (its record sections, process objects,
/// ...), noted by the pass that groups the file's runs so that later reads jump over
/// those they do not parse instead of scanning them again. Shared by the runs of one
/// file; the default knows no places.
///
/// They also carry whether the first process object's describing read has checked the
/// whole file as JSON: the runs of later objects then pass over the rest of the file
/// unchecked instead of checking it again (D137). A run opened without its first object's
/// having been read checks the file itself, so its error is its import's.
///
/// Places are a cache, not part of what a run is: runs compare equal whatever places
/// they carry. They hold for the file as it was pre-scanned: a file whose length or
/// modification time has changed since is read without them.
#[derive(Clone, Default)]
pub struct JsonPlaces {
    spans: std::sync::Arc<[(u64, u64)]>,
    /// The file's length and modification time when it was pre-scanned.
    file: Option<(u64, Option<std::time::SystemTime>)>,
    /// Set by the first object's describing read once it has checked the whole file.
    checked: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl JsonPlaces {
    /// The places of `path`, as it is now.
    pub(crate) fn of_file(path: &Path, mut spans: Vec<(u64, u64)>) -> JsonPlaces {
        let Some(file) = Self::identity(path) else {
            return JsonPlaces::default();
        };
        spans.sort_unstable();
        JsonPlaces {
            spans: spans.into(),
            file: Some(file),
            checked: Default::default(),
        }
    }

    fn identity(path: &Path) -> Option<(u64, Option<std::time::SystemTime>)> {
        let meta = std::fs::metadata(path).ok()?;
        Some((meta.len(), meta.modified().ok()))
    }

    /// The (start, end) byte offsets of the values in `path`, sorted by start; none when
    /// the file is not the one pre-scanned.
    pub(crate) fn spans_in(&self, path: &Path) -> &[(u64, u64)] {
        if self.same_file(path) {
            &self.spans
        } else {
            &[]
        }
    }

    fn same_file(&self, path: &Path) -> bool {
        self.file.is_some() && Self::identity(path) == self.file
    }

    /// Whether the first object's read has checked `path`, as pre-scanned, as JSON.
    pub(crate) fn checked(&self, path: &Path) -> bool {
        self.checked.load(std::sync::atomic::Ordering::Acquire) && self.same_file(path)
    }

    /// Notes that the first object's read has checked `path` as JSON.
    pub(crate) fn set_checked(&self, path: &Path) {
        if self.same_file(path) {
            self.checked
                .store(true, std::sync::atomic::Ordering::Release);
        }
    }
}

impl PartialEq for JsonPlaces {
    fn eq(&self, _: &JsonPlaces) -> bool {
        true
    }
}

impl Eq for JsonPlaces {}

impl std::fmt::Debug for JsonPlaces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JsonPlaces({} noted)", self.spans.len())
    }
}

/// The outputs of one profiled process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// A short human-readable name (`<dir>/<prefix>` for CSV, `<file>#<index> pid <pid>` for
    /// JSON).
    pub label: String,
    /// The input files, in import order.
    pub files: Vec<PathBuf>,
    /// Format details.
    pub source: RunSource,
}

/// Groups input files (and the files found by walking input directories) into runs.
///
/// CSV files are grouped by directory and by the prefix before the `<kind>` part of the
/// name (`1234_kernel_trace.csv` → prefix `1234_`); the same kind twice in one group is an
/// error. `rocpd convert` CSVs (leading `Guid` column) are split further by guid (one
/// pre-scan of those files). Each JSON file yields one run per per-process object (one
/// streaming pre-scan of the file). Files named explicitly must be rocprofv3 CSV or JSON;
/// inside directories, other files are ignored.
pub fn group_runs(paths: &[PathBuf]) -> Result<Vec<Run>> {
    walk::group_runs(paths, 1)
}

/// [`group_runs`], pre-scanning JSON files on up to `threads` threads (the runs, their
/// order and any error are the same whatever the number).
pub fn group_runs_on(paths: &[PathBuf], threads: usize) -> Result<Vec<Run>> {
    walk::group_runs(paths, threads)
}

/// Options of [`import`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// Skip (and count) rows and files that cannot be read instead of failing.
    ///
    /// A bad CSV record that spans several physical lines (a stray quote) loses only its
    /// first line: reading resumes at its second line (see `formats/rocprofv3/README.md`).
    pub skip_bad_rows: bool,
}

/// What an import wrote and what it left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportReport {
    /// Rows per RocPD table base name (`rocpd_region`, ...), in schema order.
    pub rows: Vec<(String, u64)>,
    /// Input rows lost as bad (only with `skip_bad_rows`): for CSV, physical lines (a bad
    /// record loses one line, its first; a skipped file loses every line after its
    /// header), for JSON, records (array elements).
    pub skipped_rows: u64,
    /// The reasons for skipped lines, records and files, each naming file and line, offset
    /// or JSON path: the first [`MAX_SKIP_REASONS`], then one line saying how many more
    /// there were.
    pub skipped: Vec<String>,
    /// How many skip reasons were not listed in [`ImportReport::skipped`].
    pub skipped_unlisted: u64,
    /// Input that was read but has no place in RocPD and was left out on purpose (stats
    /// files, PC-sampling files and records, ...), with counts.
    pub ignored: Vec<String>,
    /// The guid of the written database.
    pub guid: String,
    /// For reads that take a JSON object's records out of file order: the skip reasons
    /// by place, put back in the import's order at the end (D111).
    pub(crate) ordered: Option<OrderedSkips>,
}

/// Skip reasons of several reads of one JSON object, each keyed by the walk that read the
/// record (the import's order reads late tables and then late records after the rest) and
/// its byte offset: the first [`MAX_SKIP_REASONS`] in that order are the import's.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct OrderedSkips {
    listed: BTreeMap<(u8, u64), String>,
    count: u64,
}

impl OrderedSkips {
    pub(crate) fn add(&mut self, key: (u8, u64), reason: String) {
        self.count = self.count.saturating_add(1);
        self.listed.insert(key, reason);
        if self.listed.len() > MAX_SKIP_REASONS {
            self.listed.pop_last();
        }
    }

    /// Puts the reasons into `report` as one read in file order lists them.
    pub(crate) fn into_report(self, report: &mut ImportReport) {
        report.skipped_rows = self.count;
        report.skipped = self.listed.into_values().collect();
        report.skipped_unlisted = self.count - report.skipped.len() as u64;
    }
}

impl ImportReport {
    /// Rows written to table `base` (`rocpd_kernel_dispatch`, ...).
    pub fn count(&self, base: &str) -> u64 {
        self.rows
            .iter()
            .find(|(t, _)| t == base)
            .map_or(0, |(_, n)| *n)
    }
}

/// How many skip reasons [`ImportReport::skipped`] keeps.
pub const MAX_SKIP_REASONS: usize = 20;

/// Imports one run into a new RocPD v3 database at `dest` (which must not exist).
///
/// The database's guid is derived deterministically from the run (see
/// `formats/rocprofv3/README.md`): importing the same files twice gives the same guid.
/// On error the partial database is removed.
pub fn import(run: &Run, dest: &Path, opts: &ImportOptions) -> Result<ImportReport> {
    if dest.exists() {
        return Err(Error::output(
            dest,
            "refusing to overwrite an existing file",
        ));
    }
    let result = import_inner(run, dest, opts);
    if result.is_err() {
        let _ = std::fs::remove_file(dest);
    }
    result
}

fn import_inner(run: &Run, dest: &Path, opts: &ImportOptions) -> Result<ImportReport> {
    let guid = guid::run_guid(run)?;
    let conn = db::create(dest, &guid)?;
    let mut report = ImportReport {
        guid: guid.clone(),
        ..Default::default()
    };
    db::begin(&conn, dest)?;
    {
        let mut out = db::Out::new(&conn, dest, &guid)?;
        match &run.source {
            RunSource::Csv { .. } => csv_import::import_run(run, &mut out, opts, &mut report)?,
            RunSource::Json { index, .. } => {
                json_import::import_process(&run.files[0], *index, &mut out, opts, &mut report)?
            }
        }
        out.finish()?;
    }
    say_unlisted(&mut report);
    db::commit(&conn, dest)?;
    report.rows = db::table_counts(&conn, dest, &guid)?;
    conn.close()
        .map_err(|(_, e)| Error::output(dest, e.to_string()))?;
    Ok(report)
}

/// Ends the list of skip reasons with how many were not listed.
pub(crate) fn say_unlisted(report: &mut ImportReport) {
    if report.skipped_unlisted > 0 {
        report.skipped.push(format!(
            "... and {} more skipped lines, records or files not listed ({} rows lost in all)",
            report.skipped_unlisted, report.skipped_rows
        ));
    }
}

/// One report of files read one by one (by their index in the run's plan), as one read of
/// them all in that order gives it: the same first [`MAX_SKIP_REASONS`] reasons listed.
pub(crate) fn merged_reports(reports: BTreeMap<usize, ImportReport>) -> ImportReport {
    let mut all = ImportReport::default();
    for r in reports.into_values() {
        all.skipped_rows = all.skipped_rows.saturating_add(r.skipped_rows);
        for reason in r.skipped {
            list_reason(&mut all, reason);
        }
        all.skipped_unlisted = all.skipped_unlisted.saturating_add(r.skipped_unlisted);
        all.ignored.extend(r.ignored);
    }
    all
}

/// Records a skipped record in the report (or turns it into the error when rows may not be
/// skipped).
pub(crate) fn skip_or_fail(
    opts: &ImportOptions,
    report: &mut ImportReport,
    err: Error,
) -> Result<()> {
    if !opts.skip_bad_rows {
        return Err(err);
    }
    note_skip(report, 1, err);
    Ok(())
}

/// [`skip_or_fail`] for a JSON record at `key` (see [`OrderedSkips`]), which a report that
/// keeps its reasons by place takes there.
pub(crate) fn skip_or_fail_at(
    opts: &ImportOptions,
    report: &mut ImportReport,
    err: Error,
    key: (u8, u64),
) -> Result<()> {
    if !opts.skip_bad_rows {
        return Err(err);
    }
    match report.ordered.as_mut() {
        Some(ordered) => {
            ordered.add(key, err.to_string());
            report.skipped_rows = report.skipped_rows.saturating_add(1);
        }
        None => note_skip(report, 1, err),
    }
    Ok(())
}

/// Records `lost` skipped rows (lines, records) with their reason.
pub(crate) fn note_skip(report: &mut ImportReport, lost: u64, err: Error) {
    report.skipped_rows = report.skipped_rows.saturating_add(lost);
    list_reason(report, err.to_string());
}

/// Lists a skip reason, or counts it once [`MAX_SKIP_REASONS`] are listed.
fn list_reason(report: &mut ImportReport, reason: String) {
    if report.skipped.len() < MAX_SKIP_REASONS {
        report.skipped.push(reason);
    } else {
        report.skipped_unlisted = report.skipped_unlisted.saturating_add(1);
    }
}
