//! `rocpd convert`: inputs → event stream → stages → writers, in one or more passes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use rocpd_db::{Database, RocpdSink};
use rocpd_model::Catalog;
use rocpd_otf2::{Otf2Options, Otf2Sink};
use rocpd_parquet::{ParquetOptions, ParquetSink};
use rocpd_perfetto::{PerfettoOptions, PerfettoSink, SizePlanner};
use rocpd_pipeline::{run, OutputFile, PathGuard, Progress, RunOptions, RunReport, Sink, Stage};
use rocpd_stages::time::parse_time;
use rocpd_stages::{Filter, FilterRule, KeyFilter, SplitKey, SplitMode, SplitSink, Window};

/// Most time parts a split may have.
const MAX_PARTS: usize = 100_000;

/// Opens every input as a RocPD database.
pub fn open_all(inputs: &[PathBuf]) -> Result<Vec<Database>> {
    inputs
        .iter()
        .map(|p| Database::open(p).map_err(anyhow::Error::from))
        .collect()
}

/// Reads the catalogs of `dbs`, numbering sources in order; refuses a process given twice.
pub fn catalog_of(dbs: &[Database]) -> Result<Catalog> {
    let mut cat = Catalog::default();
    let mut seen: std::collections::HashMap<String, PathBuf> = Default::default();
    for db in dbs {
        let c = db.catalog(cat.sources.len() as u32)?;
        for s in &c.sources {
            if let Some(first) = seen.insert(s.guid.clone(), s.path.clone()) {
                bail!(
                    "{}: holds the same process (guid {}) as {}; give each database once",
                    s.path.display(),
                    s.guid,
                    first.display()
                );
            }
        }
        cat.extend(c);
    }
    Ok(cat)
}

/// Earliest start and latest end of the events of all inputs.
pub fn event_span(dbs: &[Database]) -> Result<Option<(i64, i64)>> {
    let mut span: Option<(i64, i64)> = None;
    for db in dbs {
        if let Some((a, b)) = db.event_span()? {
            span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        }
    }
    Ok(span)
}

/// How to split outputs.
#[derive(Debug, Clone)]
pub enum Split {
    /// `--split-by time` with `--split-count`.
    TimeCount(usize),
    /// `--split-by time` with `--split-duration` (ns).
    TimeDuration(i64),
    /// `--split-by size` with `--max-file-size` (bytes).
    Size(u64),
    /// `--split-by process|node|agent`.
    Keyed(SplitMode),
}

/// A time window request.
#[derive(Debug, Clone, Default)]
pub struct WindowRequest {
    /// `--start` value.
    pub start: Option<String>,
    /// `--end` value.
    pub end: Option<String>,
    /// `--start-marker` text.
    pub start_marker: Option<String>,
    /// `--end-marker` text.
    pub end_marker: Option<String>,
    /// `--inclusive`: keep only events wholly inside.
    pub fully_inside: bool,
    /// `--keep-launches`.
    pub keep_groups: bool,
}

impl WindowRequest {
    fn is_set(&self) -> bool {
        self.start.is_some()
            || self.end.is_some()
            || self.start_marker.is_some()
            || self.end_marker.is_some()
    }
}

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    /// Perfetto trace.
    Pftrace,
    /// Merged RocPD database.
    Rocpd,
    /// Parquet dataset (a directory).
    Parquet,
    /// OTF2 archive.
    Otf2,
}

impl Fmt {
    fn ext(self) -> &'static str {
        match self {
            Fmt::Pftrace => "pftrace",
            Fmt::Rocpd => "db",
            Fmt::Parquet => "parquet",
            Fmt::Otf2 => "otf2",
        }
    }
}

/// Everything a conversion needs.
pub struct Plan {
    /// Output formats.
    pub formats: Vec<Fmt>,
    /// Write the RocPD output as `<dir>/<name>.db` (`rocpd merge`) instead of
    /// `<dir>/<name>_results.db`.
    pub merge_naming: bool,
    /// Input databases (imported inputs are temporary databases).
    pub inputs: Vec<PathBuf>,
    /// Imported databases: their format and the files they came from.
    pub origins: HashMap<PathBuf, crate::sources::Origin>,
    /// Output directory.
    pub dir: PathBuf,
    /// Output name prefix.
    pub name: String,
    /// Perfetto options.
    pub perfetto: PerfettoOptions,
    /// Parquet options.
    pub parquet: ParquetOptions,
    /// `--include` / `--exclude` rules.
    pub rules: Vec<FilterRule>,
    /// The window.
    pub window: WindowRequest,
    /// The split.
    pub split: Option<Split>,
    /// Most outputs open at once (keyed splits run in several passes beyond it).
    pub max_open: usize,
    /// Driver options.
    pub run: RunOptions,
    /// The user's input files (what outputs must never replace).
    pub input_files: Vec<PathBuf>,
    /// `--report FILE.json`.
    pub report: Option<PathBuf>,
    /// What the imports of rocprofv3 and Proton inputs left out, for the report.
    pub import_notes: Vec<String>,
    /// Rows skipped as bad with `--skip-bad-rows`.
    pub skipped_rows: u64,
}

fn marker_time(dbs: &[Database], text: &str, end: bool) -> Result<i64> {
    let mut found = Vec::new();
    for db in dbs {
        for m in db.find_marker(text)? {
            found.push((db.path().to_path_buf(), m));
        }
    }
    match found.as_slice() {
        [] => bail!("marker {text:?} not found in any input (searched ROCTx marker messages)"),
        [(_, (s, e))] => Ok(if end { *e } else { *s }),
        many => bail!(
            "marker {text:?} is ambiguous: {} markers carry it (first in {} at {} ns); use --start/--end instead",
            many.len(),
            many[0].0.display(),
            many[0].1 .0
        ),
    }
}

/// Resolves the window against the inputs; errors if it is empty or misses the data.
fn resolve_window(
    dbs: &[Database],
    w: &WindowRequest,
    span: Option<(i64, i64)>,
) -> Result<Option<(i64, i64)>> {
    if !w.is_set() {
        return Ok(None);
    }
    let Some((lo, hi)) = span else {
        bail!("a time window was given but the inputs hold no events");
    };
    let at = |v: &Option<String>, default: i64| -> Result<i64> {
        Ok(match v {
            Some(s) => parse_time(s)?.resolve(lo, hi),
            None => default,
        })
    };
    let start = match &w.start_marker {
        Some(m) => marker_time(dbs, m, false)?,
        None => at(&w.start, lo)?,
    };
    let end = match &w.end_marker {
        Some(m) => marker_time(dbs, m, true)?,
        None => at(&w.end, hi)?,
    };
    if end < lo || start > hi {
        bail!("the window [{start}, {end}] ns holds no events: the inputs span [{lo}, {hi}] ns");
    }
    if end < start {
        bail!("the window ends ({end} ns) before it starts ({start} ns)");
    }
    Ok(Some((start, end)))
}

fn stages(plan: &Plan, window: Option<(i64, i64)>) -> Vec<Box<dyn Stage>> {
    let mut v: Vec<Box<dyn Stage>> = Vec::new();
    if !plan.rules.is_empty() {
        v.push(Box::new(Filter::new(plan.rules.clone())));
    }
    if let Some((s, e)) = window {
        v.push(Box::new(Window::new(
            s,
            e,
            plan.window.fully_inside,
            plan.window.keep_groups,
        )));
    }
    v
}

/// `<dir>/<name>_results.<ext>`, as rocpd names its outputs.
pub fn output_path(dir: &Path, name: &str, ext: &str) -> PathBuf {
    if name.is_empty() {
        dir.join(format!("results.{ext}"))
    } else {
        dir.join(format!("{name}_results.{ext}"))
    }
}

/// The cut times of a time split of `[lo, hi]`: computed in i128, since the span of a
/// trace may exceed what an i64 holds, so no cut wraps around.
fn time_cuts(lo: i64, hi: i64, split: &Split) -> Result<Vec<i64>> {
    let len = (hi as i128 - lo as i128).max(0) + 1;
    let parts: i128 = match *split {
        Split::TimeCount(n) => n as i128,
        Split::TimeDuration(d) => {
            if d <= 0 {
                bail!("--split-duration must be positive");
            }
            (len + d as i128 - 1) / d as i128
        }
        _ => unreachable!("time splits only"),
    };
    if parts == 0 || parts > MAX_PARTS as i128 {
        bail!("a time split needs between 1 and {MAX_PARTS} parts, not {parts}");
    }
    Ok((1..parts)
        .map(|k| {
            let offset = match *split {
                Split::TimeDuration(d) => k * d as i128,
                _ => len * k / parts,
            };
            // lo + offset < hi + 1 for every k < parts, so it fits in an i64.
            (lo as i128 + offset) as i64
        })
        .collect())
}

fn run_pass(
    plan: &Plan,
    window: Option<(i64, i64)>,
    sinks: Vec<Box<dyn Sink>>,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunReport> {
    let paths = plan.inputs.clone();
    let origins = plan.origins.clone();
    // Arguments cost an extra aggregation: read them when an output shows or keeps them.
    let with_args = (plan.perfetto.annotate_args
        && plan.perfetto.annotations
        && plan.formats.contains(&Fmt::Pftrace))
        || plan.formats.contains(&Fmt::Parquet);
    Ok(run(
        move |emit| {
            // Imported inputs: name the files they came from, not the temporary database.
            let adjust = |c: &mut Catalog| crate::sources::mark_imported(c, &origins);
            rocpd_db::produce(&paths, with_args, &adjust, emit)
        },
        stages(plan, window),
        sinks,
        &plan.run,
        on_progress,
    )?)
}

/// Where the output of `fmt` goes: `<dir>/<name>_results[.<label>].<ext>`, or
/// `<dir>/<name>[.<label>].db` for `rocpd merge`.
fn format_path(
    dir: &Path,
    name: &str,
    merge_naming: bool,
    fmt: Fmt,
    label: Option<&str>,
) -> PathBuf {
    let ext = match label {
        Some(l) => format!("{l}.{}", fmt.ext()),
        None => fmt.ext().to_string(),
    };
    if merge_naming && fmt == Fmt::Rocpd {
        dir.join(format!("{name}.{ext}"))
    } else {
        output_path(dir, name, &ext)
    }
}

/// The writer of `fmt` for the output named with `label` (a split key), if any.
fn make_sink(plan: &SinkPlan, fmt: Fmt, label: Option<&str>) -> Box<dyn Sink> {
    let path = format_path(&plan.dir, &plan.name, plan.merge_naming, fmt, label);
    match fmt {
        Fmt::Pftrace => Box::new(PerfettoSink::new(&path, plan.perfetto.clone())),
        Fmt::Rocpd => Box::new(RocpdSink::new(&path)),
        Fmt::Parquet => Box::new(ParquetSink::new(&path, plan.parquet.clone())),
        Fmt::Otf2 => Box::new(Otf2Sink::new(&path, Otf2Options::default())),
    }
}

/// What a sink factory needs (owned, so split factories can keep it).
#[derive(Clone)]
struct SinkPlan {
    dir: PathBuf,
    name: String,
    merge_naming: bool,
    perfetto: PerfettoOptions,
    parquet: ParquetOptions,
}

impl SinkPlan {
    fn of(plan: &Plan) -> Self {
        SinkPlan {
            dir: plan.dir.clone(),
            name: plan.name.clone(),
            merge_naming: plan.merge_naming,
            perfetto: plan.perfetto.clone(),
            parquet: plan.parquet.clone(),
        }
    }
}

/// Claims every path the output of `fmt` (with split key `label`) creates.
fn claim_format(guard: &mut PathGuard, plan: &Plan, fmt: Fmt, label: Option<&str>) -> Result<()> {
    let path = format_path(&plan.dir, &plan.name, plan.merge_naming, fmt, label);
    match fmt {
        // A file, or a dataset directory, and its temporary sibling.
        Fmt::Pftrace | Fmt::Rocpd | Fmt::Parquet => guard.claim_file(&path)?,
        Fmt::Otf2 => {
            guard.claim(&path)?;
            guard.claim(&path.with_extension("def"))?;
            guard.claim(&path.with_extension(""))?;
        }
    }
    Ok(())
}

/// Claims the outputs of every format for each label (`None`: unsplit).
fn claim_outputs(guard: &mut PathGuard, plan: &Plan, labels: &[Option<String>]) -> Result<()> {
    for fmt in &plan.formats {
        for l in labels {
            claim_format(guard, plan, *fmt, l.as_deref())?;
        }
    }
    Ok(())
}

/// The sinks of every format for an unsplit run.
fn sinks(plan: &Plan, formats: &[Fmt]) -> Vec<Box<dyn Sink>> {
    formats
        .iter()
        .map(|f| make_sink(&SinkPlan::of(plan), *f, None))
        .collect()
}

/// One split router per format.
fn split_sinks(plan: &Plan, mode: SplitMode, only: Option<KeyFilter>) -> Vec<Box<dyn Sink>> {
    plan.formats
        .iter()
        .map(|&fmt| {
            let sp = SinkPlan::of(plan);
            let factory = move |key: &SplitKey| -> rocpd_model::Result<Box<dyn Sink>> {
                Ok(make_sink(&sp, fmt, Some(&key.label)))
            };
            Box::new(SplitSink::new(
                mode.clone(),
                Box::new(factory),
                only.clone(),
            )) as Box<dyn Sink>
        })
        .collect()
}

/// A time range, ns.
pub type Span = (i64, i64);

/// Checks the inputs (refusals, duplicate processes) and resolves the window: the
/// catalog, the inputs' time span and the window, before any output exists.
fn prepare(plan: &Plan) -> Result<(Catalog, Option<Span>, Option<Span>)> {
    let dbs = open_all(&plan.inputs)?;
    let catalog = catalog_of(&dbs)?;
    let span = event_span(&dbs)?;
    let window = resolve_window(&dbs, &plan.window, span)?;
    Ok((catalog, span, window))
}

/// Builds a sink from the catalog and the time range the events cover.
pub type MakeSink<'a> = dyn FnMut(&Catalog, Option<Span>) -> Box<dyn Sink> + 'a;

/// Runs the inputs through the plan's stages into the sink `make_sink` builds from the
/// catalog and the time range the events cover (the window, else the inputs' span); the
/// sink writes no output files of its own. Returns the report and the catalog.
pub fn run_into(
    plan: &Plan,
    make_sink: &mut MakeSink<'_>,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<(RunReport, Catalog)> {
    let (catalog, span, window) = prepare(plan)?;
    let sink = make_sink(&catalog, window.or(span));
    let report = run_pass(plan, window, vec![sink], on_progress)?;
    Ok((report, catalog))
}

/// Creates the report file (so a bad `--report` path fails before any output exists).
fn open_report(path: &Path, guard: &mut PathGuard) -> Result<OutputFile> {
    if path.is_dir() {
        bail!(
            "--report {}: is a directory; give a file name",
            path.display()
        );
    }
    let parent = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = parent {
        if !dir.is_dir() {
            bail!(
                "--report {}: the directory {} does not exist",
                path.display(),
                dir.display()
            );
        }
    }
    guard.claim_file(path)?;
    Ok(OutputFile::create(path)?)
}

/// Runs the whole conversion: checks every output path against the inputs and each other
/// first, then writes the outputs, the manifest of a split and the `--report` file. On an
/// error after some outputs were written, those outputs are removed again.
pub fn convert(plan: &Plan, on_progress: &mut dyn FnMut(&Progress)) -> Result<RunReport> {
    let (catalog, span, window) = prepare(plan)?;
    let mut guard = PathGuard::new(&plan.input_files);
    let report_file = plan
        .report
        .as_deref()
        .map(|p| open_report(p, &mut guard))
        .transpose()?;
    let mut report = write_outputs(plan, &catalog, span, window, &mut guard, on_progress)?;
    add_import_notes(&mut report, plan);
    if report.rows_in.values().all(|&n| n == 0) {
        report
            .notes
            .push("the inputs hold no events: every output is valid and empty".into());
    }
    if let Some(mut f) = report_file {
        let written = serde_json::to_writer_pretty(f.writer(), &report)
            .map_err(|e| anyhow::anyhow!("{}: cannot write report: {e}", f.path().display()))
            .and_then(|_| f.commit().map_err(anyhow::Error::from));
        if let Err(e) = written {
            for o in &report.outputs {
                remove_output(&o.path);
            }
            return Err(e);
        }
    }
    Ok(report)
}

/// Adds what the imports of rocprofv3 and Proton inputs left out to the report.
fn add_import_notes(report: &mut RunReport, plan: &Plan) {
    let mut origins: Vec<_> = plan.origins.iter().collect();
    origins.sort_by(|a, b| a.0.cmp(b.0));
    for (db, origin) in origins {
        let files: Vec<String> = origin
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        report.notes.push(format!(
            "{} imported from {} ({})",
            db.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            files.join(", "),
            origin.format
        ));
    }
    report.notes.extend(plan.import_notes.iter().cloned());
    if plan.skipped_rows > 0 {
        report.dropped.push(rocpd_pipeline::StageDrop {
            stage: "reader (bad rows skipped with --skip-bad-rows)".into(),
            rows: [("input_rows", plan.skipped_rows)].into_iter().collect(),
        });
    }
}

fn write_outputs(
    plan: &Plan,
    catalog: &Catalog,
    span: Option<Span>,
    window: Option<Span>,
    guard: &mut PathGuard,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunReport> {
    let Some(split) = &plan.split else {
        claim_outputs(guard, plan, &[None])?;
        // Unfiltered RocPD output is a copy inside SQLite; everything else streams.
        let fast = plan.rules.is_empty() && window.is_none();
        let streamed: Vec<Fmt> = plan
            .formats
            .iter()
            .copied()
            .filter(|f| !(fast && *f == Fmt::Rocpd))
            .collect();
        let mut report = if streamed.is_empty() {
            RunReport::default()
        } else {
            run_pass(plan, window, sinks(plan, &streamed), on_progress)?
        };
        if fast && plan.formats.contains(&Fmt::Rocpd) {
            let started = std::time::Instant::now();
            let path = format_path(&plan.dir, &plan.name, plan.merge_naming, Fmt::Rocpd, None);
            let out = rocpd_db::merge(&plan.inputs, &path);
            let out = match out {
                Ok(o) => o,
                Err(e) => {
                    for o in &report.outputs {
                        remove_output(&o.path);
                    }
                    return Err(e.into());
                }
            };
            if report.rows_in.is_empty() {
                report.rows_in = out.rows.clone();
            }
            report.outputs.push(out);
            report.seconds += started.elapsed().as_secs_f64();
        }
        return Ok(report);
    };
    let claim_keys = |guard: &mut PathGuard, keys: &[String]| -> Result<()> {
        let labels: Vec<Option<String>> = keys.iter().cloned().map(Some).collect();
        claim_outputs(guard, plan, &labels)?;
        guard.claim_file(&output_path(&plan.dir, &plan.name, "manifest.json"))?;
        Ok(())
    };
    let report = match split {
        Split::TimeCount(_) | Split::TimeDuration(_) => {
            let (lo, hi) = window.or(span).unwrap_or((0, 0));
            let cuts = time_cuts(lo, hi, split)?;
            let mode = SplitMode::Time { cuts: cuts.clone() };
            claim_keys(guard, &SplitSink::keys(&mode, catalog))?;
            run_pass(
                plan,
                window,
                split_sinks(plan, SplitMode::Time { cuts }, None),
                on_progress,
            )?
        }
        Split::Size(cap) => {
            if plan.formats.iter().any(|f| *f != Fmt::Pftrace) {
                bail!("--max-file-size splits Perfetto traces only; use --split-by time for other formats");
            }
            let cuts = Arc::new(Mutex::new(Vec::new()));
            let planner = SizePlanner::new(*cap, plan.perfetto.clone(), cuts.clone());
            run_pass(plan, window, vec![Box::new(planner)], on_progress)?;
            let cuts = std::mem::take(&mut *cuts.lock().expect("not poisoned"));
            let mode = SplitMode::Time { cuts: cuts.clone() };
            claim_keys(guard, &SplitSink::keys(&mode, catalog))?;
            run_pass(
                plan,
                window,
                split_sinks(plan, SplitMode::Time { cuts }, None),
                on_progress,
            )?
        }
        Split::Keyed(mode) => {
            let keys = SplitSink::keys(mode, catalog);
            claim_keys(guard, &keys)?;
            let known: Arc<HashSet<String>> = Arc::new(keys.iter().cloned().collect());
            let mut total: Option<RunReport> = None;
            for (i, group) in keys.chunks(plan.max_open.max(1)).enumerate() {
                let only = KeyFilter {
                    group: group.iter().cloned().collect(),
                    known: known.clone(),
                    take_unknown: i == 0,
                };
                let pass = run_pass(
                    plan,
                    window,
                    split_sinks(plan, mode.clone(), Some(only)),
                    on_progress,
                );
                let r = match pass {
                    Ok(r) => r,
                    Err(e) => {
                        // Outputs are whole or absent for the run, not only per pass.
                        for o in total.iter().flat_map(|t| &t.outputs) {
                            remove_output(&o.path);
                        }
                        return Err(e);
                    }
                };
                match &mut total {
                    None => total = Some(r),
                    Some(t) => {
                        t.outputs.extend(r.outputs);
                        t.seconds += r.seconds;
                    }
                }
            }
            total.unwrap_or_default()
        }
    };
    write_manifest(plan, split, &report)?;
    Ok(report)
}

fn write_manifest(plan: &Plan, split: &Split, report: &RunReport) -> Result<()> {
    let path = output_path(&plan.dir, &plan.name, "manifest.json");
    let by = match split {
        Split::TimeCount(_) | Split::TimeDuration(_) => "time",
        Split::Size(_) => "size",
        Split::Keyed(SplitMode::Process) => "process",
        Split::Keyed(SplitMode::Node) => "node",
        Split::Keyed(SplitMode::Agent) => "agent",
        Split::Keyed(SplitMode::Time { .. }) => "time",
    };
    let outputs: Vec<serde_json::Value> = report
        .outputs
        .iter()
        .map(|o| {
            serde_json::json!({
                "path": o.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                "key": o.key,
                "time_range_ns": o.time_range,
                "events": o.rows,
                "bytes": o.bytes,
            })
        })
        .collect();
    let v = serde_json::json!({
        "split_by": by,
        "inputs": plan
            .inputs
            .iter()
            .flat_map(|p| match plan.origins.get(p) {
                Some(o) => o.files.clone(),
                None => vec![p.clone()],
            })
            // JSON strings are UTF-8: a name that is not is shown with replacement characters.
            .map(|p| p.to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
        "events_read": report.rows_in,
        "dropped": report.dropped,
        "outputs": outputs,
    });
    let mut f = OutputFile::create(&path)?;
    serde_json::to_writer_pretty(f.writer(), &v).with_context(|| format!("{}", path.display()))?;
    f.commit()?;
    Ok(())
}

/// Removes a finished output of a run that failed later: a file, a dataset directory, or an
/// OTF2 archive (anchor, `.def` and event directory).
fn remove_output(path: &Path) {
    if path.is_dir() {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
    if path.extension().is_some_and(|e| e == "otf2") {
        let _ = std::fs::remove_file(path.with_extension("def"));
        let _ = std::fs::remove_dir_all(path.with_extension(""));
    }
}
