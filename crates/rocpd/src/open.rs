//! [`Inputs`]: the opened inputs of a run, whatever their format, and the runs over them.
//!
//! Opening detects each file by content. RocPD databases are read as they are; Proton
//! files (chrome traces and trees) and rocprofv3 runs (CSV runs and JSON process
//! objects) are read directly ([`rocpd_proton::ProtonSource`],
//! [`rocpd_rocprofv3::DirectRunSource`]); a rocprofv3 run the direct reader leaves to
//! the import (`DirectRunSource::open_or_why` says why) is imported into a RocPD database
//! in a private temporary directory (never beside the input) that lives as long as the
//! `Inputs`. Outputs that copy rows into a database (`-f rocpd`, `merge`) write the rows
//! of direct sources through the RocPD sink; `query` writes its own temporary merged
//! database. The catalogs of all inputs are read once, numbering sources in input order,
//! and a process given twice is refused before anything else happens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rocpd_db::Database;
use rocpd_model::{Catalog, Error, Projection, Result, Table};
use rocpd_pipeline::cleanup::Registered;
use rocpd_pipeline::{
    in_parallel, Numbered, ProduceOptions, Progress, RunOptions, RunReport, Sink, Source, Stage,
};

use crate::expand::{expand, head};
use crate::window::{Selection, Span};

/// Inputs kept open between the steps of a run; more are opened again for each pass,
/// so that memory does not grow with their number.
pub const KEEP_OPEN: usize = 16;

/// Inputs read at a time by sinks that do not need one global time order. Fixed, not
/// the thread count, so that the order rows reach a sink (and so any floating-point
/// statistic) does not depend on the number of threads.
pub const INDEPENDENT_GROUP: usize = 8;

/// SQLite page cache shared by all open inputs, KiB (each gets between 64 KiB and 1 MiB).
/// Larger caches bought no speed on eight or 64 inputs and cost memory (D36).
pub const CACHE_BUDGET_KIB: usize = 4 << 10;

/// Sort memory shared by the sorters of the inputs read directly, bytes (each gets between
/// 512 KiB and `rocpd_pipeline::SORT_MEMORY`, one input's together at most that): a run
/// that merges them in time order holds every one at once, so the sum must not grow with
/// their number (D82, D85).
pub const SORT_BUDGET: usize = 32 << 20;

/// How inputs are opened.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// Skip rocprofv3 rows that cannot be read (counted in the report) instead of failing.
    pub skip_bad_rows: bool,
    /// Threads describing (or importing) rocprofv3 and Proton inputs, one input (run)
    /// each at a time; 0 for the machine's available parallelism. What is read does not
    /// depend on it.
    pub threads: usize,
}

impl OpenOptions {
    /// [`OpenOptions::threads`], with 0 resolved.
    fn threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }
}

/// The format name of a rocprofv3 run's input.
fn run_format(run: &rocpd_rocprofv3::Run) -> &'static str {
    match run.source {
        rocpd_rocprofv3::RunSource::Csv { .. } => "rocprofv3-csv",
        rocpd_rocprofv3::RunSource::Json { .. } => "rocprofv3-json",
    }
}

/// An input read directly, with no database: described once, then cloned for every
/// open.
#[derive(Clone)]
pub(crate) enum Direct {
    Proton(rocpd_proton::ProtonSource),
    Rocprofv3(rocpd_rocprofv3::DirectRunSource),
}

impl Direct {
    /// A source over it, without reading its files again.
    fn source(&self) -> Box<dyn Source> {
        match self {
            Direct::Proton(p) => Box::new(p.clone()),
            Direct::Rocprofv3(c) => Box::new(c.clone()),
        }
    }

    /// How many sorters its streams use at once.
    fn sorters(&self) -> usize {
        match self {
            Direct::Proton(_) => 1,
            Direct::Rocprofv3(c) => c.stream_count(),
        }
    }

    fn with_sort_options(self, sort: rocpd_pipeline::SortOptions) -> Self {
        match self {
            Direct::Proton(p) => Direct::Proton(p.with_sort_options(sort)),
            Direct::Rocprofv3(c) => Direct::Rocprofv3(c.with_sort_options(sort)),
        }
    }

    /// What its notes are prefixed with, and the file that stands for it among the inputs.
    fn label(&self) -> (String, PathBuf) {
        match self {
            Direct::Proton(p) => (p.path().display().to_string(), p.path().to_path_buf()),
            Direct::Rocprofv3(c) => (c.run().label.clone(), c.path().to_path_buf()),
        }
    }

    /// Notes of the reading (what was skipped as bad, made up or left out), as the import
    /// says them.
    fn notes(&self) -> Vec<&String> {
        match self {
            Direct::Proton(p) => p.notes().iter().collect(),
            Direct::Rocprofv3(c) => c.skipped().iter().chain(c.ignored()).collect(),
        }
    }

    /// Rows skipped as bad ([`OpenOptions::skip_bad_rows`]).
    fn skipped_rows(&self) -> u64 {
        match self {
            Direct::Proton(_) => 0,
            Direct::Rocprofv3(c) => c.skipped_rows(),
        }
    }
}

/// Where an imported input came from.
#[derive(Debug, Clone)]
pub struct Origin {
    /// `rocprofv3-csv`, `rocprofv3-json` or `proton`.
    pub format: String,
    /// The files it was imported from.
    pub files: Vec<PathBuf>,
}

/// A process as its host, pid and start time (ns) name it: the same in every format
/// that records all three.
type ProcessKey = (String, i64, i64);

/// The key of `p`, when its input gives a host name (or machine id) and a start time.
fn process_key(c: &Catalog, p: &rocpd_model::Process) -> Option<ProcessKey> {
    let init = p.init.filter(|&t| t > 0)?;
    let node = c
        .nodes
        .iter()
        .find(|n| n.source == p.source && n.id == p.nid)?;
    let host = [&node.hostname, &node.machine_id]
        .into_iter()
        .flatten()
        .find(|h| !h.is_empty())?;
    Some((host.clone(), p.pid, init))
}

/// One input as the reader sees it: a database (the user's, or one imported from other
/// files) or a file read directly, and the source numbers its processes take.
#[derive(Debug, Clone)]
struct Input {
    /// The database, or the file read directly.
    db: PathBuf,
    origin: Option<Origin>,
    first_source: u32,
}

/// The temporary directory of imported inputs, removed when the last user drops it.
struct ImportDir {
    dir: tempfile::TempDir,
    _registered: Registered,
}

/// Opened inputs: their catalog, their time span, and everything a run needs.
///
/// ```
/// # fn main() -> rocpd::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// # let cfg = rocpd_gen::GenConfig { processes: 1, iterations: 2, ..Default::default() };
/// # let db = rocpd_gen::generate(&cfg, dir.path()).unwrap().remove(0);
/// let mut inputs = rocpd::Inputs::open(&[&db], &rocpd::OpenOptions::default())?;
/// assert_eq!(inputs.catalog().processes.len(), 1);
/// let info = inputs.info()?;
/// assert!(info.rows["kernel_dispatch"] > 0);
/// # Ok(()) }
/// ```
pub struct Inputs {
    files: Vec<PathBuf>,
    warnings: Vec<String>,
    /// Files read to find the inputs (package indexes), which no output may replace.
    read_also: Vec<PathBuf>,
    inputs: Vec<Input>,
    catalog: Arc<Catalog>,
    span: Option<Span>,
    notes: Vec<String>,
    skipped_rows: u64,
    /// The open sources, by input; all `None` past [`KEEP_OPEN`] inputs.
    open: Vec<Option<Numbered>>,
    cache_kib: usize,
    imports: Option<Arc<ImportDir>>,
    /// The inputs read directly, not as databases, with their description (made while
    /// resolving): every later open of one clones it instead of reading the files again.
    described: BTreeMap<usize, Arc<Direct>>,
}

impl std::fmt::Debug for Inputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inputs")
            .field("files", &self.files)
            .field("inputs", &self.inputs)
            .finish_non_exhaustive()
    }
}

impl Inputs {
    /// Opens the inputs named by `args`: files, globs or directories (see
    /// [`crate::expand()`]).
    pub fn open<S: AsRef<std::ffi::OsStr>>(args: &[S], options: &OpenOptions) -> Result<Inputs> {
        let expanded = expand(args)?;
        let mut inputs = Inputs::open_files(&expanded.files, options)?;
        inputs.warnings = expanded.warnings;
        inputs.read_also = expanded.indexes;
        Ok(inputs)
    }

    /// Opens exactly these files (no glob or directory expansion).
    pub fn open_files(files: &[PathBuf], options: &OpenOptions) -> Result<Inputs> {
        if files.is_empty() {
            return Err(Error::Usage("no input files".into()));
        }
        let mut inputs = Inputs {
            files: files.to_vec(),
            warnings: Vec::new(),
            read_also: Vec::new(),
            inputs: Vec::new(),
            catalog: Arc::default(),
            span: None,
            notes: Vec::new(),
            skipped_rows: 0,
            open: Vec::new(),
            cache_kib: 1024,
            imports: None,
            described: BTreeMap::new(),
        };
        inputs.resolve(files, options)?;
        inputs.cache_kib = (CACHE_BUDGET_KIB / inputs.inputs.len().max(1)).clamp(64, 1024);
        inputs.describe()?;
        Ok(inputs)
    }

    /// Sorts `files` into databases, rocprofv3 files and Proton files, and imports the
    /// latter.
    fn resolve(&mut self, files: &[PathBuf], options: &OpenOptions) -> Result<()> {
        let mut rocprof = Vec::new();
        let mut proton = Vec::new();
        for p in files {
            let h = head(p)?;
            let ext = p
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_ascii_lowercase();
            if rocpd_db::looks_like_sqlite(&h) {
                self.push(p.clone(), None);
            } else if let Some(kind) = rocpd_proton::sniff(p, &h) {
                proton.push((p.clone(), kind));
            } else if rocpd_rocprofv3::sniff(p, &h).is_some()
                || ["csv", "json"].contains(&ext.as_str())
                || (ext == "gz" && {
                    let name = p.to_string_lossy().to_ascii_lowercase();
                    name.contains(".json") || name.ends_with(".csv.gz")
                })
            {
                // Unrecognised .csv/.json files go to the importer too: it says what is wrong.
                rocprof.push(p.clone());
            } else if let Some(why) = rocpd_proton::unrecognised_reason(p, &h) {
                // Named as a Proton output: what it lacks as one, not as a database.
                return Err(Error::input(p, "start of file", why));
            } else {
                // The database reader explains what the file is not.
                self.push(p.clone(), None);
            }
        }
        if rocprof.is_empty() && proton.is_empty() {
            return Ok(());
        }
        let runs = if rocprof.is_empty() {
            Vec::new()
        } else {
            rocpd_rocprofv3::group_runs_on(&rocprof, options.threads())?
        };
        let opts = rocpd_rocprofv3::ImportOptions {
            skip_bad_rows: options.skip_bad_rows,
        };
        // First every input that can be read directly is described (Proton files, CSV
        // runs whose import needs no database), then the rest are imported: side by side
        // each time, results taken in input order, so inputs, notes and errors do not
        // depend on timing.
        let jobs = proton.len() + runs.len();
        // A run may use the threads fewer inputs than threads leave idle: a CSV run
        // describes its counter files on a second one, and a run's streams read their
        // tables side by side on its share.
        let per_run = (options.threads() / jobs.max(1)).max(1);
        // An input that fails to open is not yet the error: an earlier run left to the
        // import may fail in it, and the first failing input's error is the one reported
        // (D75), as when every error came from the import. Inputs after a failed one are
        // not opened: their errors could not come first.
        let first_failed = AtomicUsize::new(usize::MAX);
        let opened = in_parallel(jobs, options.threads(), |job| {
            if job > first_failed.load(Ordering::SeqCst) {
                return Ok(Err(None));
            }
            // The source read directly, or why the run is imported.
            let found = match proton.get(job) {
                Some((path, kind)) => {
                    rocpd_proton::ProtonSource::open(path, *kind).map(|s| Ok(Direct::Proton(s)))
                }
                None => {
                    let run = &runs[job - proton.len()];
                    rocpd_rocprofv3::DirectRunSource::open_or_why(run, &opts, per_run)
                        .map(|s| s.map(Direct::Rocprofv3))
                }
            };
            Ok(found.map_err(|e| {
                first_failed.fetch_min(job, Ordering::SeqCst);
                Some(e)
            }))
        })?;
        // `Err(Some(e))`: failed to open; `Err(None)`: after a failure, not opened. The
        // first failure (job, error) is the one that counts.
        let mut direct = Vec::with_capacity(jobs);
        let mut why_imported = Vec::with_capacity(jobs);
        let mut failed = None;
        for (job, o) in opened.into_iter().enumerate() {
            match o {
                Ok(Ok(found)) => {
                    direct.push(Some(found));
                    why_imported.push(None);
                }
                Ok(Err(why)) => {
                    direct.push(None);
                    why_imported.push(Some(why));
                }
                Err(e) => {
                    if failed.is_none() {
                        failed = e.map(|e| (job, e));
                    }
                    direct.push(None);
                    why_imported.push(None);
                }
            }
        }
        let imported: Vec<usize> = (0..runs.len())
            .filter(|k| direct[proton.len() + k].is_none())
            .filter(|k| failed.as_ref().is_none_or(|(f, _)| proton.len() + k < *f))
            .collect();
        let tmp = if imported.is_empty() {
            // Nothing to import: no temporary directory.
            PathBuf::new()
        } else {
            self.import_dir()?
        };
        let dest = |k: usize| tmp.join(format!("import-{k:04}.db"));
        let mut reports = in_parallel(imported.len(), options.threads(), |job| {
            let k = imported[job];
            rocpd_rocprofv3::import(&runs[k], &dest(k), &opts)
        })?
        .into_iter();
        // No run before the input that failed to open failed in its import.
        if let Some((_, e)) = failed {
            return Err(e);
        }
        // The sorters of the inputs read directly share one budget: a run merging them in
        // time order holds all of them at once (D82); one input's together take at most
        // what one sorter would.
        let sorters: usize = direct.iter().flatten().map(Direct::sorters).sum();
        for (job, found) in direct.into_iter().enumerate() {
            let run = job.checked_sub(proton.len()).map(|k| &runs[k]);
            match (found, run) {
                (Some(source), _) => {
                    let own = source.sorters().max(1);
                    let memory = (SORT_BUDGET / sorters.max(1))
                        .min(rocpd_pipeline::SORT_MEMORY / own)
                        .clamp(512 << 10, rocpd_pipeline::SORT_MEMORY);
                    let sort = rocpd_pipeline::SortOptions {
                        memory_bytes: memory,
                        ..Default::default()
                    };
                    let (label, shown) = source.label();
                    self.skipped_rows += source.skipped_rows();
                    self.notes
                        .extend(source.notes().iter().map(|n| format!("{label}: {n}")));
                    self.described
                        .insert(self.inputs.len(), Arc::new(source.with_sort_options(sort)));
                    self.push(shown, None);
                }
                (None, Some(run)) => {
                    let k = job - proton.len();
                    let Some(report) = reports.next() else {
                        return Err(Error::Usage("internal: an import was skipped".into()));
                    };
                    self.skipped_rows += report.skipped_rows;
                    if let Some(why) = why_imported.get(job).copied().flatten() {
                        // The slow way round, and a temporary database: say why.
                        self.notes.push(format!(
                            "{}: imported into a temporary database before reading, not read directly ({why})",
                            run.label
                        ));
                    }
                    for s in report.skipped.iter().chain(&report.ignored) {
                        self.notes.push(format!("{}: {s}", run.label));
                    }
                    self.push(
                        dest(k),
                        Some(Origin {
                            format: run_format(run).into(),
                            files: run.files.clone(),
                        }),
                    );
                }
                (None, None) => {
                    return Err(Error::Usage("internal: a Proton input was not read".into()))
                }
            }
        }
        Ok(())
    }

    fn push(&mut self, db: PathBuf, origin: Option<Origin>) {
        self.inputs.push(Input {
            db,
            origin,
            first_source: 0,
        });
    }

    /// The private directory of imported databases, created on first use.
    fn import_dir(&mut self) -> Result<PathBuf> {
        if self.imports.is_none() {
            let (dir, registered) = private_tempdir("rocpd-import-", "imported inputs")?;
            self.imports = Some(Arc::new(ImportDir {
                dir,
                _registered: registered,
            }));
        }
        Ok(self
            .imports
            .as_ref()
            .map(|i| i.dir.path().to_path_buf())
            .unwrap_or_default())
    }

    fn open_db(&mut self, k: usize) -> Result<Numbered> {
        let input = &self.inputs[k];
        open_source(
            &input.db,
            self.described.get(&k),
            input.first_source,
            self.cache_kib,
        )
    }

    /// The catalog's source indices of the inputs read directly, with no database behind
    /// them (one source each: a rocprofv3 run or a Proton file is one process).
    pub(crate) fn direct_sources(&self) -> Vec<u32> {
        self.described
            .keys()
            .map(|&k| self.inputs[k].first_source)
            .collect()
    }

    /// Whether some input is read directly, with no database behind it.
    pub(crate) fn has_direct_inputs(&self) -> bool {
        !self.described.is_empty()
    }

    /// Reads every input's catalog and event span; refuses a process given twice (the
    /// same guid, or the same host, pid and start).
    fn describe(&mut self) -> Result<()> {
        let keep = self.inputs.len() <= KEEP_OPEN;
        let mut catalog = Catalog::default();
        let mut seen: std::collections::HashMap<String, PathBuf> = Default::default();
        let mut seen_process: std::collections::HashMap<ProcessKey, PathBuf> = Default::default();
        let mut span: Option<Span> = None;
        for k in 0..self.inputs.len() {
            self.inputs[k].first_source = catalog.sources.len() as u32;
            let (first, source) = self.open_db(k)?;
            let mut c = source.catalog(first)?;
            if let Some(o) = &self.inputs[k].origin {
                // Imported inputs: name the files they came from, not the temporary database.
                for s in &mut c.sources {
                    s.format = o.format.clone();
                    s.imported_from = o.files.clone();
                }
            }
            for s in &c.sources {
                let shown = s.shown_path();
                if let Some(earlier) = seen.insert(s.guid.clone(), shown.to_path_buf()) {
                    return Err(Error::Usage(format!(
                        "{}: holds the same process (guid {}) as {}; give each input once",
                        shown.display(),
                        s.guid,
                        earlier.display()
                    )));
                }
            }
            // The same process in two formats (rocprofv3 writes `<pid>_results.json` and
            // `<pid>_results.db` side by side) has two guids: known by its host, pid and
            // start instead, where the input gives all three (D172).
            for p in &c.processes {
                let Some(key) = process_key(&c, p) else {
                    continue;
                };
                let shown = c
                    .sources
                    .get(p.source.saturating_sub(first) as usize)
                    .map(|s| s.shown_path().to_path_buf())
                    .unwrap_or_default();
                if let Some(earlier) = seen_process.insert(key.clone(), shown.clone()) {
                    return Err(Error::Usage(format!(
                        "{}: holds the same process (pid {} on {}, started at {} ns) as {}, \
                         in another form (the same run written in two formats?); give each \
                         input once",
                        shown.display(),
                        key.1,
                        key.0,
                        key.2,
                        earlier.display()
                    )));
                }
            }
            catalog.extend(c);
            if let Some((a, b)) = source.event_span()? {
                span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
            }
            self.open.push(keep.then_some((first, source)));
        }
        self.catalog = Arc::new(catalog);
        self.span = span;
        Ok(())
    }

    /// Runs `f` over the sources of inputs `range`, opening those that are not open.
    /// With `release`, they are closed afterwards (a run reading its inputs a group at a
    /// time then holds one group's connections and caches, not every input's).
    pub(crate) fn with_sources<R>(
        &mut self,
        range: std::ops::Range<usize>,
        release: bool,
        f: impl FnOnce(&mut Vec<Numbered>) -> Result<R>,
    ) -> Result<R> {
        let mut part = Vec::with_capacity(range.len());
        let mut kept = Vec::with_capacity(range.len());
        for k in range.clone() {
            match self.open[k].take() {
                Some(s) => {
                    part.push(s);
                    kept.push(true);
                }
                None => {
                    part.push(self.open_db(k)?);
                    kept.push(false);
                }
            }
        }
        let r = f(&mut part);
        if !release {
            for ((k, s), was_open) in range.zip(part).zip(kept) {
                if was_open {
                    self.open[k] = Some(s);
                }
            }
        }
        r
    }

    /// The files as given (after expansion): what outputs must never replace.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Every file read to open the inputs: the input files and the package indexes that
    /// listed them. No output may replace any of them.
    pub fn read_files(&self) -> Vec<PathBuf> {
        let mut all = self.files.clone();
        all.extend(self.read_also.iter().cloned());
        all
    }

    /// Files left out of directory walks, each with why.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What the imports and direct readings of rocprofv3 and Proton inputs left out, and
    /// where each imported input came from.
    pub fn import_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let mut inputs: Vec<&Input> = self.inputs.iter().collect();
        inputs.sort_by(|a, b| a.db.cmp(&b.db));
        for i in inputs {
            if let Some(o) = &i.origin {
                let files: Vec<String> = o.files.iter().map(|f| f.display().to_string()).collect();
                notes.push(format!(
                    "{} imported from {} ({})",
                    i.db.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    files.join(", "),
                    o.format
                ));
            }
        }
        notes.extend(self.warnings.iter().cloned());
        notes.extend(self.notes.iter().cloned());
        notes
    }

    /// Rows skipped as bad with [`OpenOptions::skip_bad_rows`].
    pub fn skipped_rows(&self) -> u64 {
        self.skipped_rows
    }

    /// What a result computed from the inputs must say of them (`what`: "the summary",
    /// "the query"): the import notes, and the rows skipped as bad, which it did not see.
    pub(crate) fn input_notes(&self, what: &str) -> Vec<String> {
        let mut notes = self.import_notes();
        if self.skipped_rows > 0 {
            notes.push(format!(
                "{} input rows were skipped as bad (--skip-bad-rows); {what} did not see them",
                self.skipped_rows
            ));
        }
        notes
    }

    /// The dimension data of every input, sources numbered in input order.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// One dimension table of the catalog as an Arrow batch, with the columns of the
    /// Parquet dataset's `<name>.parquet` (`formats/parquet/README.md`): one of
    /// [`crate::CATALOG_TABLES`] (`processes`, `threads`, `agents`, `kernel_symbols`, ...).
    ///
    /// ```
    /// # fn main() -> rocpd::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let cfg = rocpd_gen::GenConfig { processes: 2, iterations: 2, ..Default::default() };
    /// # rocpd_gen::generate(&cfg, &dir.path().join("run")).unwrap();
    /// let inputs = rocpd::Inputs::open(&[dir.path().join("run")], &Default::default())?;
    /// let processes = inputs.catalog_table("processes")?;
    /// assert_eq!(processes.num_rows(), 2);
    /// assert!(inputs.catalog_table("widgets").is_err());
    /// # Ok(()) }
    /// ```
    pub fn catalog_table(&self, name: &str) -> Result<arrow_array::RecordBatch> {
        rocpd_parquet::dimension_table(&self.catalog, name).unwrap_or_else(|| {
            Err(Error::Usage(format!(
                "no catalog table {name:?}; the tables are {}",
                rocpd_parquet::DIMENSION_TABLES.join(", ")
            )))
        })
    }

    /// Earliest start and latest end over every event of every input.
    pub fn span(&self) -> Option<Span> {
        self.span
    }

    /// The RocPD databases read (imported inputs are temporary databases).
    pub fn databases(&self) -> Vec<PathBuf> {
        self.inputs.iter().map(|i| i.db.clone()).collect()
    }

    /// The files each input came from: the database itself, or what it was imported from.
    pub fn input_files(&self) -> Vec<PathBuf> {
        self.inputs
            .iter()
            .flat_map(|i| match &i.origin {
                Some(o) => o.files.clone(),
                None => vec![i.db.clone()],
            })
            .collect()
    }

    /// How many inputs (databases, imported or not).
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// Whether there are no inputs (never, once opened).
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// Rows per canonical table over every input.
    pub fn count_rows(&mut self) -> Result<BTreeMap<&'static str, u64>> {
        let mut counts: BTreeMap<&'static str, u64> =
            Table::ALL.iter().map(|t| (t.name(), 0)).collect();
        for k in 0..self.inputs.len() {
            self.with_sources(k..k + 1, false, |s| {
                for (_, src) in s.iter() {
                    for (t, n) in src.count_rows()? {
                        *counts.entry(t.name()).or_default() += n;
                    }
                }
                Ok(())
            })?;
        }
        Ok(counts)
    }

    /// `(start, end)` of every marker carrying `text`, with the file it is in.
    pub fn find_marker(&mut self, text: &str) -> Result<Vec<(PathBuf, Span)>> {
        let mut found = Vec::new();
        for k in 0..self.inputs.len() {
            // An imported input names the file it came from, not the temporary database:
            // for a CSV run, its marker API trace.
            let origin = self.inputs[k].origin.as_ref().and_then(|o| {
                let marker = o.files.iter().find(|p| rocpd_rocprofv3::is_marker_trace(p));
                marker.or(o.files.first()).cloned()
            });
            self.with_sources(k..k + 1, false, |s| {
                for (_, src) in s.iter() {
                    for m in src.find_marker(text)? {
                        let file = origin.clone();
                        found.push((file.unwrap_or_else(|| src.marker_path().to_path_buf()), m));
                    }
                }
                Ok(())
            })?;
        }
        Ok(found)
    }

    /// Runs the inputs through `selection`'s stages into `sinks`, decoding on `threads`
    /// threads; returns the run report. The sinks' outputs exist only if this returns
    /// `Ok`. Sinks that do not need one global time order get the inputs a few at a time
    /// (each in its own time order), so memory stays that of a few inputs.
    pub fn run(
        &mut self,
        selection: &Selection,
        sinks: Vec<Box<dyn Sink>>,
        threads: usize,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunReport> {
        let window = selection.resolve(self)?;
        self.run_window(selection, window, sinks, threads, on_progress)
    }

    /// [`Inputs::run`] with the window already resolved.
    pub(crate) fn run_window(
        &mut self,
        selection: &Selection,
        window: Option<Span>,
        sinks: Vec<Box<dyn Sink>>,
        threads: usize,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunReport> {
        let stages = selection.stages(window);
        let projection = run_projection(&stages, &sinks);
        let independent = self.inputs.len() > 1 && sinks.iter().all(|s| !s.needs_time_order());
        let threads = threads.max(1);
        let options = ProduceOptions {
            projection,
            threads,
            tables: run_tables(&stages, &sinks),
            ..Default::default()
        };
        let catalog = self.catalog.clone();
        let n = self.inputs.len();
        let run_options = RunOptions {
            decode_thread: threads > 1,
            ..Default::default()
        };
        let this = &mut *self;
        rocpd_pipeline::run(
            move |emit| {
                emit(rocpd_pipeline::Message::Catalog(catalog))?;
                let group = if independent { INDEPENDENT_GROUP } else { n };
                let mut k = 0;
                while k < n {
                    let end = (k + group).min(n);
                    // A group's connections are closed once read: later groups (and passes)
                    // must not pay for them.
                    this.with_sources(k..end, independent, |s| {
                        rocpd_pipeline::produce_events(s, &options, emit)
                    })?;
                    k = end;
                }
                Ok(())
            },
            stages,
            sinks,
            &run_options,
            on_progress,
        )
    }

    /// A handle that keeps the imported databases alive (for event streams that outlive
    /// a borrow of `self`).
    pub(crate) fn keepalive(&self) -> Keepalive {
        Keepalive {
            _imports: self.imports.clone(),
            dbs: self
                .inputs
                .iter()
                .enumerate()
                .map(|(k, i)| {
                    (
                        i.first_source,
                        i.db.clone(),
                        self.described.get(&k).cloned(),
                    )
                })
                .collect(),
            cache_kib: self.cache_kib,
        }
    }
}

/// What an event stream needs to open the inputs again on its own thread.
pub(crate) struct Keepalive {
    _imports: Option<Arc<ImportDir>>,
    /// Per input: first source number, file, and the description of an input read
    /// directly.
    pub(crate) dbs: Vec<(u32, PathBuf, Option<Arc<Direct>>)>,
    pub(crate) cache_kib: usize,
}

impl Keepalive {
    pub(crate) fn open(&self, k: usize) -> Result<Numbered> {
        let (first, path, direct) = &self.dbs[k];
        open_source(path, direct.as_ref(), *first, self.cache_kib)
    }
}

/// A new private directory (`$TMPDIR/<prefix>*`) for `what`, registered at once so that
/// an interrupted run leaves nothing behind; removed when both are dropped.
pub(crate) fn private_tempdir(prefix: &str, what: &str) -> Result<(tempfile::TempDir, Registered)> {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| {
            Error::output(
                std::env::temp_dir(),
                format!("cannot create a temporary directory for {what}: {e}"),
            )
        })?;
    let registered = Registered::new(dir.path());
    Ok((dir, registered))
}

/// Opens the database at `path` (or, given its description, the input read directly) as a
/// source numbered from `first`, with its share of the cache budget: the one way inputs
/// are opened, for runs and for event streams alike.
fn open_source(
    path: &Path,
    direct: Option<&Arc<Direct>>,
    first: u32,
    cache_kib: usize,
) -> Result<Numbered> {
    if let Some(described) = direct {
        return Ok((first, described.source()));
    }
    let db = Database::open_with(path, &rocpd_db::OpenOptions { cache_kib })?;
    Ok((first, Box::new(db)))
}

/// The tables a run reads: those some sink reads (`None`: every table), or every table
/// when a stage's decisions on one table depend on the others.
fn run_tables(stages: &[Box<dyn Stage>], sinks: &[Box<dyn Sink>]) -> Option<Vec<Table>> {
    if stages.iter().any(|s| s.needs_every_table()) {
        return None;
    }
    let read: Vec<Table> = Table::ALL
        .iter()
        .copied()
        .filter(|t| sinks.iter().any(|s| s.reads_table(*t)))
        .collect();
    (read.len() < Table::ALL.len()).then_some(read)
}

/// The columns a run reads: what any of its stages or sinks reads.
fn run_projection(stages: &[Box<dyn Stage>], sinks: &[Box<dyn Sink>]) -> Projection {
    let mut p: Option<Projection> = None;
    let all = stages
        .iter()
        .map(|s| s.projection())
        .chain(sinks.iter().map(|s| s.projection()));
    for q in all {
        p = Some(match p {
            Some(p) => p.union(&q),
            None => q,
        });
    }
    p.unwrap_or_default()
}
