//! Conversions: inputs → stages → writers, in one or more passes, with every output path
//! claimed first, the manifest of a split, and the run report.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rocpd_csv::{CsvOptions, CsvSink};
use rocpd_db::RocpdSink;
use rocpd_model::{Error, Projection, Result};
use rocpd_otf2::{Otf2Options, Otf2Sink};
use rocpd_parquet::{ParquetOptions, ParquetSink};
use rocpd_perfetto::{PerfettoOptions, PerfettoSink, SizePlanner};
use rocpd_pipeline::{OutputFile, PathGuard, Progress, RunReport, Sink};
use rocpd_stages::{DeferredCommits, KeyFilter, SplitKey, SplitMode, SplitSink};

use crate::window::{Selection, Span};
use crate::Inputs;

/// Most time parts a split may have. Every part's paths are claimed before the run
/// writes (D26), a few hundred bytes each, and a CSV part has a file per table: 100,000
/// CSV parts took 600 MiB before a row was read; 10,000 take under 90 MiB.
const MAX_PARTS: usize = 10_000;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    /// Perfetto trace (`.pftrace`).
    Pftrace,
    /// Merged RocPD database (`.db`).
    Rocpd,
    /// Parquet dataset (a directory).
    Parquet,
    /// OTF2 archive (`.otf2` anchor, `.def`, event directory).
    Otf2,
    /// CSV files as AMD's `rocpd convert -f csv` writes them (`<name>_kernel_trace.csv`,
    /// ...), one file per kind of event.
    Csv,
}

impl Format {
    /// The format named `name`, as `-f` takes it (`pftrace` or `perfetto`, `rocpd`,
    /// `parquet`, `otf2`, `csv`), ignoring case.
    pub fn from_name(name: &str) -> Result<Format> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "pftrace" | "perfetto" => Format::Pftrace,
            "rocpd" => Format::Rocpd,
            "parquet" => Format::Parquet,
            "otf2" => Format::Otf2,
            "csv" => Format::Csv,
            _ => {
                return Err(Error::Usage(format!(
                    "unknown output format {name:?} (pftrace, perfetto, rocpd, parquet, otf2, csv)"
                )))
            }
        })
    }

    /// The file extension of the output.
    pub fn ext(self) -> &'static str {
        match self {
            Format::Pftrace => "pftrace",
            Format::Rocpd => "db",
            Format::Parquet => "parquet",
            Format::Otf2 => "otf2",
            Format::Csv => "csv",
        }
    }
}

/// How to split outputs into several files, each complete in itself.
#[derive(Debug, Clone)]
pub enum Split {
    /// Equal time parts: this many.
    TimeCount(usize),
    /// Time parts of this length, ns.
    TimeDuration(i64),
    /// Perfetto traces of at most this many bytes (a dry run finds the cuts).
    Size(u64),
    /// One output per process, node or agent.
    Keyed(SplitMode),
}

/// What `--split-by` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitBy {
    /// Time parts (with a count or a duration).
    Time,
    /// One output per process.
    Process,
    /// One output per node.
    Node,
    /// One output per agent.
    Agent,
    /// Perfetto files of at most a size.
    Size,
}

impl SplitBy {
    /// `time`, `process`, `node`, `agent` or `size`, ignoring case.
    pub fn from_name(name: &str) -> Result<SplitBy> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "time" => SplitBy::Time,
            "process" => SplitBy::Process,
            "node" => SplitBy::Node,
            "agent" => SplitBy::Agent,
            "size" => SplitBy::Size,
            _ => {
                return Err(Error::Usage(format!(
                    "unknown split {name:?} (time, process, node, agent, size)"
                )))
            }
        })
    }
}

impl Split {
    /// The split the options ask for (`--split-by`, `--split-count`, `--split-duration`,
    /// `--max-file-size`; a size alone implies a size split), refusing options that do
    /// not go together.
    pub fn from_options(
        by: Option<SplitBy>,
        count: Option<usize>,
        duration: Option<&str>,
        max_file_size: Option<&str>,
    ) -> Result<Option<Split>> {
        let by = match (by, max_file_size) {
            (None, Some(_)) => Some(SplitBy::Size),
            (by, _) => by,
        };
        let usage = |m: &str| Err(Error::Usage(m.into()));
        if by != Some(SplitBy::Time) && (count.is_some() || duration.is_some()) {
            return usage("--split-count and --split-duration go with --split-by time");
        }
        if by != Some(SplitBy::Size) && max_file_size.is_some() {
            return usage("--max-file-size goes with --split-by size");
        }
        let Some(by) = by else {
            return Ok(None);
        };
        Ok(Some(match by {
            SplitBy::Time => match (count, duration) {
                (Some(n), None) => Split::TimeCount(n),
                (None, Some(d)) => Split::TimeDuration(rocpd_stages::time::parse_duration(d)?),
                _ => {
                    return usage(
                        "--split-by time needs one of --split-count N or --split-duration D",
                    )
                }
            },
            SplitBy::Size => match max_file_size {
                Some(s) => Split::Size(rocpd_stages::time::parse_size(s)?),
                None => return usage("--split-by size needs --max-file-size S (e.g. 1GiB)"),
            },
            SplitBy::Process => Split::Keyed(SplitMode::Process),
            SplitBy::Node => Split::Keyed(SplitMode::Node),
            SplitBy::Agent => Split::Keyed(SplitMode::Agent),
        }))
    }
}

/// Everything a conversion needs besides its inputs.
#[derive(Debug, Clone)]
pub struct Conversion {
    /// Output formats (each once).
    pub formats: Vec<Format>,
    /// Output directory (created if missing).
    pub dir: PathBuf,
    /// Output name prefix: `<dir>/<name>_results.<ext>`.
    pub name: String,
    /// Name the RocPD output `<dir>/<name>.db` (`rocpd merge`).
    pub merge_naming: bool,
    /// Perfetto options.
    pub perfetto: PerfettoOptions,
    /// Parquet options.
    pub parquet: ParquetOptions,
    /// CSV options.
    pub csv: CsvOptions,
    /// Which events to keep.
    pub selection: Selection,
    /// The split, if any.
    pub split: Option<Split>,
    /// Most outputs open at once in a keyed split; more keys take more passes.
    pub max_open: usize,
    /// Decode threads.
    pub threads: usize,
    /// Also write the run report as JSON to this file.
    pub report: Option<PathBuf>,
}

impl Default for Conversion {
    fn default() -> Self {
        Conversion {
            formats: vec![Format::Pftrace],
            dir: PathBuf::from("."),
            name: "out".into(),
            merge_naming: false,
            perfetto: PerfettoOptions::default(),
            parquet: ParquetOptions::default(),
            csv: CsvOptions::default(),
            selection: Selection::default(),
            split: None,
            max_open: 64,
            threads: crate::default_threads(),
            report: None,
        }
    }
}

impl Conversion {
    /// Refuses options that do not go together, before any input is opened (a front
    /// calls it first; [`Inputs::convert`] calls it too).
    pub fn validate(&self) -> Result<()> {
        if self.formats.is_empty() {
            return Err(Error::Usage("no output format given".into()));
        }
        rocpd_model::naming::check_output_name(&self.name)?;
        if self.max_open == 0 {
            return Err(Error::Usage("--max-open must be at least 1".into()));
        }
        if self.csv.stats && !self.formats.contains(&Format::Csv) {
            return Err(Error::Usage(
                "--stats writes CSV files; it goes with -f csv".into(),
            ));
        }
        let parquet = &self.parquet;
        if (parquet.append || parquet.table_format != rocpd_parquet::TableFormat::Parquet)
            && !self.formats.contains(&Format::Parquet)
        {
            return Err(Error::Usage(
                "--append and --table-format apply to Parquet datasets; they go with -f parquet"
                    .into(),
            ));
        }
        Ok(())
    }
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
                return Err(Error::Usage("--split-duration must be positive".into()));
            }
            (len + d as i128 - 1) / d as i128
        }
        _ => return Err(Error::Usage("internal: not a time split".into())),
    };
    if parts == 0 || parts > MAX_PARTS as i128 {
        return Err(Error::Usage(format!(
            "a time split needs between 1 and {MAX_PARTS} parts, not {parts}"
        )));
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

/// What a sink factory needs (owned, so split factories can keep it).
#[derive(Clone)]
struct SinkPlan {
    dir: PathBuf,
    name: String,
    merge_naming: bool,
    perfetto: PerfettoOptions,
    parquet: ParquetOptions,
    csv: CsvOptions,
    /// The sources read directly (a RocPD output writes their rows, not their ids).
    direct_sources: Arc<Vec<u32>>,
}

impl SinkPlan {
    fn of(c: &Conversion, direct_sources: Arc<Vec<u32>>) -> Self {
        SinkPlan {
            direct_sources,
            dir: c.dir.clone(),
            name: c.name.clone(),
            merge_naming: c.merge_naming,
            perfetto: c.perfetto.clone(),
            parquet: c.parquet.clone(),
            csv: c.csv.clone(),
        }
    }

    /// Where the output of `fmt` goes: `<dir>/<name>_results[.<label>].<ext>`, or
    /// `<dir>/<name>[.<label>].db` for `rocpd merge`. (CSV sets are named by their prefix,
    /// [`SinkPlan::csv_prefix`].)
    fn path(&self, fmt: Format, label: Option<&str>) -> PathBuf {
        let ext = match label {
            Some(l) => format!("{l}.{}", fmt.ext()),
            None => fmt.ext().to_string(),
        };
        if self.merge_naming && fmt == Format::Rocpd {
            self.dir.join(format!("{}.{ext}", self.name))
        } else {
            output_path(&self.dir, &self.name, &ext)
        }
    }

    /// The writer of `fmt` for the output named with `label` (a split key), if any.
    fn sink(&self, fmt: Format, label: Option<&str>) -> Box<dyn Sink> {
        let path = self.path(fmt, label);
        match fmt {
            Format::Pftrace => Box::new(PerfettoSink::new(&path, self.perfetto.clone())),
            Format::Rocpd => {
                Box::new(RocpdSink::new(&path).with_direct_sources(&self.direct_sources))
            }
            Format::Parquet => Box::new(ParquetSink::new(&path, self.parquet.clone())),
            Format::Otf2 => Box::new(Otf2Sink::new(&path, Otf2Options::default())),
            Format::Csv => {
                let sink = CsvSink::new(&self.dir, &self.csv_prefix(label), self.csv.clone());
                // A part of a split lists the agents of its own processes.
                Box::new(if label.is_some() {
                    sink.agents_of_written_processes()
                } else {
                    sink
                })
            }
        }
    }

    /// The file-name prefix of a CSV set: `<name>`, `<name>.<label>` or `<label>`.
    fn csv_prefix(&self, label: Option<&str>) -> String {
        rocpd_csv::prefix(&self.name, label)
    }

    /// Claims every path the output of `fmt` (with split key `label`) creates.
    fn claim(&self, guard: &mut PathGuard, fmt: Format, label: Option<&str>) -> Result<()> {
        let path = self.path(fmt, label);
        match fmt {
            // A file and its temporary sibling.
            Format::Pftrace | Format::Rocpd => guard.claim_file(&path)?,
            // A dataset directory (one appended to exists already) and its sibling.
            Format::Parquet => {
                guard.claim(&path)?;
                guard.claim(&rocpd_pipeline::temp_sibling(&path)?)?;
            }
            Format::Otf2 => {
                guard.claim(&path)?;
                guard.claim(&path.with_extension("def"))?;
                guard.claim(&path.with_extension(""))?;
            }
            Format::Csv => {
                let prefix = self.csv_prefix(label);
                for p in rocpd_csv::output_paths(&self.dir, &prefix, self.csv.stats) {
                    guard.claim_file(&p)?;
                }
            }
        }
        Ok(())
    }
}

/// A split router for `fmt`: it reads what the format's own sink reads.
struct Router {
    inner: SplitSink,
    projection: Projection,
    ordered: bool,
}

impl Sink for Router {
    fn begin(&mut self, catalog: &Arc<rocpd_model::Catalog>) -> Result<()> {
        self.inner.begin(catalog)
    }
    fn write(&mut self, chunk: &rocpd_pipeline::Chunk) -> Result<()> {
        self.inner.write(chunk)
    }
    fn finish(self: Box<Self>) -> Result<Vec<rocpd_pipeline::OutputReport>> {
        Box::new(self.inner).finish()
    }
    fn projection(&self) -> Projection {
        self.projection.clone()
    }
    fn needs_time_order(&self) -> bool {
        self.ordered
    }
    fn commits_shared(&self) -> bool {
        self.inner.commits_shared()
    }
}

/// One split router per format.
/// The outputs of keys a keyed split meets that the catalog did not predict (rows of a
/// process, node or agent it does not list): their paths are claimed when the key is met,
/// against the run's inputs and every output claimed before, so that no such part can
/// replace an input.
#[derive(Clone)]
struct Unpredicted {
    guard: Arc<Mutex<PathGuard>>,
    known: Arc<HashSet<String>>,
}

fn split_sinks(
    c: &Conversion,
    direct_sources: &Arc<Vec<u32>>,
    mode: SplitMode,
    only: Option<KeyFilter>,
    unpredicted: Option<Unpredicted>,
    deferred: Option<(&[DeferredCommits], bool)>,
) -> Vec<Box<dyn Sink>> {
    c.formats
        .iter()
        .enumerate()
        .map(|(i, &fmt)| {
            let sp = SinkPlan::of(c, direct_sources.clone());
            // A prototype tells what the format reads; it writes nothing until begun.
            let proto = sp.sink(fmt, None);
            // A time split finishes each part once the stream has passed it, so it needs
            // the global order whatever the format. A process's rows come from one input:
            // a process split of any format can take the inputs one after another.
            let ordered = matches!(mode, SplitMode::Time { .. })
                || (proto.needs_time_order() && !matches!(mode, SplitMode::Process));
            let projection = proto.projection();
            drop(proto);
            let unpredicted = unpredicted.clone();
            let factory = move |key: &SplitKey| -> Result<Box<dyn Sink>> {
                if let Some(u) = unpredicted
                    .as_ref()
                    .filter(|u| !u.known.contains(&key.label))
                {
                    let mut guard = u.guard.lock().unwrap_or_else(|p| p.into_inner());
                    sp.claim(&mut guard, fmt, Some(&key.label))?;
                }
                Ok(sp.sink(fmt, Some(&key.label)))
            };
            let mut inner = SplitSink::new(mode.clone(), Box::new(factory), only.clone());
            if let Some((waiting, last)) = deferred {
                inner = inner.with_deferred_commits(waiting[i].for_pass(last));
            }
            Box::new(Router {
                inner,
                projection,
                ordered,
            }) as Box<dyn Sink>
        })
        .collect()
}

/// Creates the report file (so a bad report path fails before any output exists).
fn open_report(path: &Path, dir: &Path, guard: &mut PathGuard) -> Result<OutputFile> {
    if path.is_dir() {
        return Err(Error::Usage(format!(
            "--report {}: is a directory; give a file name",
            path.display()
        )));
    }
    if rocpd_pipeline::within(dir, path) {
        return Err(Error::Usage(format!(
            "--report {}: the output directory {} is (or lies under) that path; give the report a path of its own",
            path.display(),
            dir.display()
        )));
    }
    let parent = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = parent {
        if !dir.is_dir() {
            return Err(Error::Usage(format!(
                "--report {}: the directory {} does not exist",
                path.display(),
                dir.display()
            )));
        }
    }
    guard.claim_file(path)?;
    OutputFile::create(path)
}

impl Inputs {
    /// Runs a whole conversion: checks every output path against the inputs and each
    /// other first, then writes the outputs, the manifest of a split and the report file.
    /// On an error after some outputs were written, those outputs are removed again.
    ///
    /// ```
    /// # fn main() -> rocpd::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let cfg = rocpd_gen::GenConfig { processes: 1, iterations: 2, ..Default::default() };
    /// # let db = rocpd_gen::generate(&cfg, &dir.path().join("in")).unwrap().remove(0);
    /// let mut inputs = rocpd::Inputs::open(&[&db], &Default::default())?;
    /// let conversion = rocpd::Conversion {
    ///     formats: vec![rocpd::Format::Pftrace],
    ///     dir: dir.path().join("out"),
    ///     ..Default::default()
    /// };
    /// let report = inputs.convert(&conversion, &mut |_| {})?;
    /// assert!(report.outputs[0].path.ends_with("out_results.pftrace"));
    /// # Ok(()) }
    /// ```
    pub fn convert(
        &mut self,
        conversion: &Conversion,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunReport> {
        let mut c = conversion.clone();
        c.formats.sort();
        c.formats.dedup();
        c.validate()?;
        let window = c.selection.resolve(self)?;
        // Dropped on any error below: the directories this run made for its outputs go
        // again when they are left empty.
        let new_dirs = rocpd_pipeline::NewDirs::of(&c.dir);
        let mut guard = PathGuard::new(&self.read_files());
        let report_file = c
            .report
            .as_deref()
            .map(|p| open_report(p, &c.dir, &mut guard))
            .transpose()?;
        let mut report = self.write_outputs(&c, window, &mut guard, on_progress)?;
        report.notes.extend(self.import_notes());
        if self.skipped_rows() > 0 {
            report.dropped.push(rocpd_pipeline::StageDrop {
                stage: "reader (bad rows skipped with --skip-bad-rows)".into(),
                rows: [("input_rows", self.skipped_rows())].into_iter().collect(),
            });
        }
        if report.rows_in.values().all(|&n| n == 0) {
            report
                .notes
                .push("the inputs hold no events: every output is valid and empty".into());
        }
        if let Some(mut f) = report_file {
            let written = serde_json::to_writer_pretty(f.writer(), &report)
                .map_err(|e| Error::output(f.path(), format!("cannot write report: {e}")))
                .and_then(|_| f.commit());
            if let Err(e) = written {
                for o in &report.outputs {
                    rocpd_pipeline::remove_output(o);
                }
                // The manifest of a split would list files no longer there.
                if c.split.is_some() {
                    rocpd_pipeline::remove_output_path(&output_path(
                        &c.dir,
                        &c.name,
                        "manifest.json",
                    ));
                }
                return Err(e);
            }
        }
        new_dirs.keep();
        Ok(report)
    }

    fn write_outputs(
        &mut self,
        c: &Conversion,
        window: Option<Span>,
        guard: &mut PathGuard,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunReport> {
        let sp = SinkPlan::of(c, Arc::new(self.direct_sources()));
        let claim_all = |guard: &mut PathGuard, labels: &[Option<String>]| -> Result<()> {
            for fmt in &c.formats {
                for l in labels {
                    sp.claim(guard, *fmt, l.as_deref())?;
                }
            }
            Ok(())
        };
        let Some(split) = &c.split else {
            claim_all(guard, &[None])?;
            // Unfiltered RocPD output of databases is a copy inside SQLite; everything
            // else streams (inputs read directly have no database to copy from).
            let fast =
                c.selection.rules.is_empty() && window.is_none() && !self.has_direct_inputs();
            let streamed: Vec<Box<dyn Sink>> = c
                .formats
                .iter()
                .filter(|f| !(fast && **f == Format::Rocpd))
                .map(|f| sp.sink(*f, None))
                .collect();
            let mut report = if streamed.is_empty() {
                RunReport::default()
            } else {
                self.run_window(&c.selection, window, streamed, c.threads, on_progress)?
            };
            if fast && c.formats.contains(&Format::Rocpd) {
                let started = std::time::Instant::now();
                let path = sp.path(Format::Rocpd, None);
                let out = match rocpd_db::merge(&self.databases(), &path) {
                    Ok(o) => o,
                    Err(e) => {
                        for o in &report.outputs {
                            rocpd_pipeline::remove_output(o);
                        }
                        return Err(e);
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
        let direct = Arc::new(self.direct_sources());
        let manifest = output_path(&c.dir, &c.name, "manifest.json");
        let claim_keys = |guard: &mut PathGuard, keys: &[String]| -> Result<()> {
            let labels: Vec<Option<String>> = keys.iter().cloned().map(Some).collect();
            claim_all(guard, &labels)?;
            guard.claim_file(&manifest)?;
            Ok(())
        };
        let catalog = self.catalog().clone();
        let report = match split {
            Split::TimeCount(_) | Split::TimeDuration(_) => {
                // Over the events the window holds: a window wider than the data would
                // put them all in one of its parts.
                let (lo, hi) = match (window, self.span()) {
                    (Some(w), Some(s)) if w.0.max(s.0) <= w.1.min(s.1) => {
                        (w.0.max(s.0), w.1.min(s.1))
                    }
                    (w, s) => w.or(s).unwrap_or((0, 0)),
                };
                let cuts = time_cuts(lo, hi, split)?;
                let mode = SplitMode::Time { cuts };
                claim_keys(guard, &SplitSink::keys(&mode, &catalog))?;
                let sinks = split_sinks(c, &direct, mode, None, None, None);
                self.run_window(&c.selection, window, sinks, c.threads, on_progress)?
            }
            Split::Size(cap) => {
                if c.formats.iter().any(|f| *f != Format::Pftrace) {
                    return Err(Error::Usage(
                        "--max-file-size splits Perfetto traces only; use --split-by time for other formats".into(),
                    ));
                }
                let cuts = Arc::new(Mutex::new(Vec::new()));
                let planner = SizePlanner::new(*cap, c.perfetto.clone(), cuts.clone());
                self.run_window(
                    &c.selection,
                    window,
                    vec![Box::new(planner)],
                    c.threads,
                    on_progress,
                )?;
                let cuts = std::mem::take(&mut *cuts.lock().unwrap_or_else(|p| p.into_inner()));
                let mode = SplitMode::Time { cuts };
                claim_keys(guard, &SplitSink::keys(&mode, &catalog))?;
                let sinks = split_sinks(c, &direct, mode, None, None, None);
                self.run_window(&c.selection, window, sinks, c.threads, on_progress)?
            }
            Split::Keyed(mode) => {
                let keys = SplitSink::keys(mode, &catalog);
                claim_keys(guard, &keys)?;
                let known: Arc<HashSet<String>> = Arc::new(keys.iter().cloned().collect());
                let unpredicted = Unpredicted {
                    guard: Arc::new(Mutex::new(guard.clone())),
                    known: known.clone(),
                };
                let mut total: Option<RunReport> = None;
                // Parts appended to shared datasets commit with the last pass (D152).
                let waiting: Vec<DeferredCommits> =
                    c.formats.iter().map(|_| DeferredCommits::new()).collect();
                let passes = keys.len().div_ceil(c.max_open.max(1));
                for (i, group) in keys.chunks(c.max_open.max(1)).enumerate() {
                    let only = KeyFilter {
                        group: group.iter().cloned().collect(),
                        known: known.clone(),
                        take_unknown: i == 0,
                    };
                    let sinks = split_sinks(
                        c,
                        &direct,
                        mode.clone(),
                        Some(only),
                        Some(unpredicted.clone()),
                        Some((&waiting, i + 1 == passes)),
                    );
                    let pass = self.run_window(&c.selection, window, sinks, c.threads, on_progress);
                    let r = match pass {
                        Ok(r) => r,
                        Err(e) => {
                            // Outputs are whole or absent for the run, not only per pass.
                            for o in total.iter().flat_map(|t| &t.outputs) {
                                rocpd_pipeline::remove_output(o);
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
        // A split is complete only with its manifest: without one, its parts go too.
        if let Err(e) = self.write_manifest(&manifest, split, &report) {
            for o in &report.outputs {
                rocpd_pipeline::remove_output(o);
            }
            return Err(e);
        }
        Ok(report)
    }

    fn write_manifest(&self, path: &Path, split: &Split, report: &RunReport) -> Result<()> {
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
            // JSON strings are UTF-8: a name that is not is shown with replacement characters.
            "inputs": self
                .input_files()
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect::<Vec<_>>(),
            "events_read": report.rows_in,
            "dropped": report.dropped,
            "outputs": outputs,
        });
        let mut f = OutputFile::create(path)?;
        serde_json::to_writer_pretty(f.writer(), &v)
            .map_err(|e| Error::output(path, format!("cannot write manifest: {e}")))?;
        f.commit().map(|_| ())
    }
}
