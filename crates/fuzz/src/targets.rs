//! The fuzz targets: what each one does with an input.
//!
//! Every reader call returns `Ok` or `Err`; both are normal outcomes. What the harness
//! looks for (panics, hangs, memory blow-ups) is detected around these calls, in
//! `main.rs` and `watchdog.rs`.

use std::path::{Path, PathBuf};

use rocpd_pipeline::Message;

use crate::input::Input;
use crate::mutate::Flavor;

/// A fuzz target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// RocPD SQLite databases (`rocpd-db`).
    Db,
    /// rocprofv3 CSV files, imported then read.
    Csv,
    /// rocprofv3 JSON files, imported then read.
    Json,
    /// Proton `.hatchet` JSON trees.
    HatchetJson,
    /// Proton `.hatchet_msgpack` trees.
    HatchetMsgpack,
    /// Proton `.chrome_trace` files.
    ChromeTrace,
}

impl Target {
    /// Every target, in the order `--target all` runs them.
    pub const ALL: [Target; 6] = [
        Target::Db,
        Target::Csv,
        Target::Json,
        Target::HatchetJson,
        Target::HatchetMsgpack,
        Target::ChromeTrace,
    ];

    /// The name used on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Target::Db => "rocpd-db",
            Target::Csv => "csv",
            Target::Json => "json",
            Target::HatchetJson => "hatchet-json",
            Target::HatchetMsgpack => "hatchet-msgpack",
            Target::ChromeTrace => "chrome-trace",
        }
    }

    /// The target called `name`.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The mutation family for its inputs.
    pub fn flavor(self) -> Flavor {
        match self {
            Target::Db => Flavor::Sqlite,
            Target::Csv => Flavor::Csv,
            Target::HatchetMsgpack => Flavor::Msgpack,
            Target::Json | Target::HatchetJson | Target::ChromeTrace => Flavor::Json,
        }
    }

    /// The file name a replayed input gets when nothing else names it.
    pub fn default_name(self) -> &'static str {
        match self {
            Target::Db => "input.db",
            Target::Csv => "1234_kernel_trace.csv",
            Target::Json => "1234_results.json",
            Target::HatchetJson => "input.hatchet",
            Target::HatchetMsgpack => "input.hatchet_msgpack",
            Target::ChromeTrace => "input.chrome_trace",
        }
    }

    fn proton_kind(self) -> rocpd_proton::ProtonKind {
        match self {
            Target::HatchetMsgpack => rocpd_proton::ProtonKind::TreeMsgpack,
            Target::ChromeTrace => rocpd_proton::ProtonKind::ChromeTrace,
            _ => rocpd_proton::ProtonKind::Tree,
        }
    }
}

/// What one execution did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The first error a reader returned, with the step that returned it.
    pub error: Option<(&'static str, String)>,
    /// An import succeeded but reading the database it wrote failed: the message.
    pub unreadable: Option<String>,
    /// A direct reader disagreed with the import of the same input (a failure: both must
    /// give the same rows, or the same refusal).
    pub mismatch: Option<String>,
    /// Rows read from databases over the whole execution.
    pub rows: u64,
}

impl Outcome {
    fn err(&mut self, step: &'static str, e: impl std::fmt::Display) {
        if self.error.is_none() {
            self.error = Some((step, e.to_string()));
        }
    }
}

/// Runs inputs of one target in a work directory that it reuses.
pub struct Runner {
    target: Target,
    input_dir: PathBuf,
    output_dir: PathBuf,
    written: Vec<PathBuf>,
}

/// Runs of one rocprofv3 input imported at most (a JSON file can hold many processes).
const MAX_RUNS: usize = 8;

impl Runner {
    /// A runner using `<work>/in` for inputs and `<work>/out` for imported databases.
    pub fn new(target: Target, work: &Path) -> std::io::Result<Runner> {
        let input_dir = work.join("in");
        let output_dir = work.join("out");
        std::fs::create_dir_all(&input_dir)?;
        std::fs::create_dir_all(&output_dir)?;
        Ok(Runner {
            target,
            input_dir,
            output_dir,
            written: Vec::new(),
        })
    }

    /// Where the input file called `name` is written.
    pub fn input_path(&self, name: &str) -> PathBuf {
        self.input_dir.join(name)
    }

    /// Writes the input's files (removing the previous input's), returning their paths.
    pub fn write(&mut self, input: &Input) -> std::io::Result<Vec<PathBuf>> {
        let paths: Vec<PathBuf> = input
            .files
            .iter()
            .map(|f| self.input_dir.join(&f.name))
            .collect();
        for old in self.written.drain(..) {
            if !paths.contains(&old) {
                let _ = std::fs::remove_file(old);
            }
        }
        for (f, p) in input.files.iter().zip(&paths) {
            std::fs::write(p, &f.data)?;
        }
        self.written = paths.clone();
        Ok(paths)
    }

    /// Runs the input, already written to `paths` by [`Runner::write`].
    pub fn run(&mut self, paths: &[PathBuf]) -> Outcome {
        let mut out = Outcome::default();
        match self.target {
            Target::Db => read_db(&paths[0], &mut out),
            Target::Csv | Target::Json => self.rocprofv3(paths, &mut out),
            Target::HatchetJson | Target::HatchetMsgpack | Target::ChromeTrace => {
                self.proton(&paths[0], &mut out)
            }
        }
        out
    }

    fn fresh_output(&self, name: &str) -> PathBuf {
        let p = self.output_dir.join(name);
        let _ = std::fs::remove_file(&p);
        p
    }

    fn rocprofv3(&mut self, paths: &[PathBuf], out: &mut Outcome) {
        let runs = match rocpd_rocprofv3::group_runs(paths) {
            Ok(r) => r,
            Err(e) => return out.err("group_runs", e),
        };
        for (i, run) in runs.iter().take(MAX_RUNS).enumerate() {
            let mut strict_rows = None;
            let mut strict_failed = false;
            for skip in [false, true] {
                let dest = self.fresh_output(&format!("import-{i}-{skip}.db"));
                let opts = rocpd_rocprofv3::ImportOptions {
                    skip_bad_rows: skip,
                };
                let imported = rocpd_rocprofv3::import(run, &dest, &opts);
                strict_failed |= !skip && imported.is_err();
                // Skipping changes the read only of an input the strict import refused.
                if !skip || strict_failed {
                    let direct = read_run_directly(run, &opts);
                    // With one page of each paged map in memory the pages go to their
                    // files and back (D101, D140, D141): the same read, to the row. Only
                    // whether a run is left to the import may differ: the rule for
                    // scattered ids counts the pages in memory at their raw size (D142).
                    let paged = {
                        let _one_page = OnePageInMemory::new();
                        read_run_directly(run, &opts)
                    };
                    if paged != direct
                        && !matches!((&paged, &direct), (Ok(None), _) | (_, Ok(None)))
                    {
                        out.mismatch.get_or_insert(format!(
                            "the direct rocprofv3 reader with one page in memory read {paged:?}, not {direct:?}"
                        ));
                    }
                    // The direct reader reads what the import writes, skipping the same
                    // rows, or leaves the run to it, or fails as it does, word for word
                    // (a CSV run's errors are found without the import, D115).
                    let events = |r: &rocpd_rocprofv3::ImportReport| {
                        [
                            "rocpd_region",
                            "rocpd_kernel_dispatch",
                            "rocpd_memory_copy",
                            "rocpd_memory_allocate",
                            "rocpd_pmc_event",
                        ]
                        .iter()
                        .map(|t| r.count(t))
                        .sum::<u64>()
                    };
                    let agree = match (&direct, &imported) {
                        (Ok(None), _) => true,
                        (Ok(Some((n, skipped, print))), Ok(report)) => {
                            // The same rows and ids as the imported database streams.
                            let same = rocpd_db::Database::open(&dest)
                                .map_err(|e| e.to_string())
                                .and_then(|db| walk_with_print(&db))
                                .is_ok_and(|(_, p)| p == *print);
                            *n == events(report) && *skipped == report.skipped_rows && same
                        }
                        (Err(d), Err(i)) => *d == i.to_string(),
                        _ => false,
                    };
                    if !agree {
                        out.mismatch.get_or_insert(format!(
                            "the direct rocprofv3 reader disagrees with the import: {:?} against {:?}",
                            direct,
                            imported.as_ref().map(events).map_err(|e| e.to_string())
                        ));
                    }
                }
                match imported {
                    Ok(report) => {
                        // A lenient import of an input the strict one accepted writes the
                        // same database: read it once.
                        if strict_rows.as_ref() == Some(&report.rows) {
                            continue;
                        }
                        strict_rows = Some(report.rows);
                        let mut read = Outcome::default();
                        read_db(&dest, &mut read);
                        out.rows += read.rows;
                        if let Some((step, e)) = read.error {
                            out.unreadable.get_or_insert(format!("{step}: {e}"));
                        }
                    }
                    Err(e) => out.err(
                        if skip {
                            "import (skip bad rows)"
                        } else {
                            "import"
                        },
                        e,
                    ),
                }
            }
        }
    }

    fn proton(&mut self, path: &Path, out: &mut Outcome) {
        let head = {
            let mut h = std::fs::read(path).unwrap_or_default();
            h.truncate(rocpd_proton::SNIFF_BYTES);
            h
        };
        // Inputs the sniffer no longer recognises are imported as the target's kind
        // anyway: the importer must refuse them cleanly too.
        let kind = rocpd_proton::sniff(path, &head).unwrap_or(self.target.proton_kind());
        let dest = self.fresh_output("import.db");
        let imported = rocpd_proton::import(path, kind, &dest);
        // The direct reader must agree with the import: the same regions, or the same
        // refusal.
        let direct = read_proton_directly(path, kind);
        let agree = match (&imported, &direct) {
            (Ok(report), Ok(rows)) => report.count("rocpd_region") == *rows,
            (Err(a), Err(b)) => a.to_string() == *b,
            _ => false,
        };
        if !agree {
            let show = |r: std::result::Result<String, String>| match r {
                Ok(s) => s,
                Err(e) => format!("error {e}"),
            };
            out.mismatch.get_or_insert(format!(
                "the direct Proton reader disagrees with the import: {} against {}",
                show(direct.map(|n| format!("{n} regions"))),
                show(
                    imported
                        .as_ref()
                        .map(|r| format!("{} regions", r.count("rocpd_region")))
                        .map_err(|e| e.to_string())
                )
            ));
        }
        match imported {
            Ok(_) => {
                let mut read = Outcome::default();
                read_db(&dest, &mut read);
                out.rows += read.rows;
                if let Some((step, e)) = read.error {
                    out.unreadable.get_or_insert(format!("{step}: {e}"));
                }
            }
            Err(e) => out.err("import", e),
        }
    }
}

/// The sort options of the direct readers under the fuzzer: a one-byte budget, so every
/// batch goes through a run file, in `spill`.
fn spill_everything(spill: &tempfile::TempDir) -> rocpd_pipeline::SortOptions {
    rocpd_pipeline::SortOptions {
        memory_bytes: 1,
        batch_rows: 64,
        spill_dir: Some(spill.path().to_path_buf()),
    }
}

/// Everything a source read directly offers (catalog, span, counts, marker search, every
/// stream walked to its end, forward in time): the rows it streamed, or the first error
/// as text.
fn walk_source(source: &dyn rocpd_pipeline::Source) -> std::result::Result<u64, String> {
    walk_with_print(source).map(|(rows, _)| rows)
}

/// [`walk_source`], with a fingerprint of the rows: the sum, over every row, of a hash of
/// its table, id, thread, start and end. Two sources whose fingerprints differ give
/// other rows (or other ids), in whatever order.
fn walk_with_print(source: &dyn rocpd_pipeline::Source) -> std::result::Result<(u64, u64), String> {
    let text = |e: rocpd_model::Error| e.to_string();
    source.catalog(0).map_err(text)?;
    source.event_span().map_err(text)?;
    source.find_marker("step").map_err(text)?;
    let counted: u64 = source
        .count_rows()
        .map_err(text)?
        .iter()
        .map(|(_, n)| n)
        .sum();
    let options = rocpd_pipeline::StreamOptions {
        batch_rows: 64,
        ..Default::default()
    };
    let mut streamed = 0u64;
    let mut print = 0u64;
    for mut p in source.prepare(0, &options).map_err(text)? {
        let mut s = p.open().map_err(text)?;
        let table = s.table() as u64;
        let mut last = i64::MIN;
        while let Some(b) = s.next_batch().map_err(text)? {
            let int = |c: usize| {
                b.column(c)
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .cloned()
                    .ok_or(format!("column {c} is not Int64"))
            };
            let (ids, tids) = (int(rocpd_model::col::ID)?, int(rocpd_model::col::TID)?);
            let (starts, ends) = (int(rocpd_model::col::START)?, int(rocpd_model::col::END)?);
            for (i, &t) in starts.values().iter().enumerate() {
                if t < last {
                    return Err(format!("the stream goes back in time: {t} after {last}"));
                }
                last = t;
                let tid = if arrow_array::Array::is_null(&tids, i) {
                    -1
                } else {
                    tids.value(i)
                };
                let row = [table as i64, ids.value(i), tid, t, ends.value(i)];
                let hash = row.iter().fold(rocpd_model::hash::FNV_OFFSET, |h, v| {
                    rocpd_model::hash::fnv1a64(&v.to_le_bytes(), h)
                });
                print = print.wrapping_add(hash);
            }
            streamed += b.num_rows() as u64;
        }
    }
    if streamed != counted {
        return Err(format!("streamed {streamed} rows, counted {counted}"));
    }
    Ok((streamed, print))
}

/// One page of each paged map of the direct rocprofv3 reader kept in memory while it
/// lives, the default again when dropped (a panic caught under `--keep-going` too).
struct OnePageInMemory;

impl OnePageInMemory {
    fn new() -> Self {
        rocpd_rocprofv3::set_pages_in_memory(1);
        OnePageInMemory
    }
}

impl Drop for OnePageInMemory {
    fn drop(&mut self) {
        rocpd_rocprofv3::set_pages_in_memory(0);
    }
}

/// The direct rocprofv3 reader (CSV or JSON) on `run`: `None` when it leaves the run to
/// the import, else [`walk_source`]'s rows (with the rows it skipped as bad) or error.
fn read_run_directly(
    run: &rocpd_rocprofv3::Run,
    opts: &rocpd_rocprofv3::ImportOptions,
) -> std::result::Result<Option<(u64, u64, u64)>, String> {
    let spill = tempfile::tempdir().map_err(|e| e.to_string())?;
    let Some(source) =
        rocpd_rocprofv3::DirectRunSource::open(run, opts).map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let skipped = source.skipped_rows();
    let dropped: u64 = rocpd_pipeline::Source::dropped(&source)
        .map_err(|e| e.to_string())?
        .iter()
        .flat_map(|d| d.rows.values())
        .sum();
    let source = source.with_sort_options(spill_everything(&spill));
    let (streamed, print) = walk_with_print(&source)?;
    written_back(Box::new(source), streamed)?;
    // Counter values without time are written by the import and dropped by the reader.
    Ok(Some((streamed + dropped, skipped, print)))
}

/// The direct Proton reader on `path`: [`walk_source`]'s rows or error (also when the
/// file is refused on open).
fn read_proton_directly(
    path: &Path,
    kind: rocpd_proton::ProtonKind,
) -> std::result::Result<u64, String> {
    let spill = tempfile::tempdir().map_err(|e| e.to_string())?;
    let source = rocpd_proton::ProtonSource::open(path, kind)
        .map_err(|e| e.to_string())?
        .with_sort_options(spill_everything(&spill));
    let streamed = walk_source(&source)?;
    written_back(Box::new(source), streamed)?;
    Ok(streamed)
}

/// Writes `source` (read directly) as a RocPD database, as `-f rocpd` does, and checks
/// that the database holds the `streamed` rows.
fn written_back(
    source: Box<dyn rocpd_pipeline::Source>,
    streamed: u64,
) -> std::result::Result<(), String> {
    let text = |e: rocpd_model::Error| e.to_string();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = dir.path().join("written.db");
    let catalog = std::sync::Arc::new(source.catalog(0).map_err(text)?);
    rocpd_db::write_rocpd(&mut vec![(0, source)], catalog, &out).map_err(text)?;
    let db = rocpd_db::Database::open(&out).map_err(text)?;
    let rows: u64 = db.count_rows().map_err(text)?.iter().map(|(_, n)| n).sum();
    if rows != streamed {
        return Err(format!("wrote {rows} rows as RocPD, streamed {streamed}"));
    }
    Ok(())
}

/// Everything the RocPD reader offers, each step on its own so that one failing step
/// does not hide the others: open, catalog, event span, row counts, marker search,
/// untimed PMC rows, then the whole time-ordered stream (with API arguments) walked in
/// time order.
pub fn read_db(path: &Path, out: &mut Outcome) {
    let db = match rocpd_db::Database::open(path) {
        Ok(db) => db,
        Err(e) => return out.err("open", e),
    };
    if let Err(e) = db.catalog(0) {
        out.err("catalog", e);
    }
    if let Err(e) = db.event_span() {
        out.err("event_span", e);
    }
    match db.count_rows() {
        Ok(c) => out.rows += c.iter().map(|(_, n)| n).sum::<u64>(),
        Err(e) => out.err("count_rows", e),
    }
    if let Err(e) = db.find_marker("fuzz") {
        out.err("find_marker", e);
    }
    if let Err(e) = db.untimed_pmc_rows() {
        out.err("untimed_pmc_rows", e);
    }
    drop(db);
    let inline = stream_db(path, 1);
    match &inline {
        Ok((rows, _)) => out.rows += rows,
        Err(e) => out.err("produce", e),
    }
    // On three threads the database is read through forks (D124): the same rows in the
    // same order, or the same error. Not asked of a database whose B-trees are broken:
    // what SQLite reads of one (and whether it notices) depends on the pages it read
    // before, which differ between connections (D124).
    let pooled = stream_db(path, 3);
    if pooled != inline && btrees_intact(path) {
        out.mismatch.get_or_insert(format!(
            "one thread gave {inline:?}, three threads (forks) {pooled:?}"
        ));
    }
}

/// Whether SQLite's `quick_check` finds the database's B-trees sound (values of another
/// type than their column's are fine: the readers take them).
fn btrees_intact(path: &Path) -> bool {
    let uri = rocpd_db::file_uri(path, "mode=ro&immutable=1");
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI;
    let Ok(conn) = rusqlite::Connection::open_with_flags(uri, flags) else {
        return false;
    };
    let Ok(mut st) = conn.prepare("PRAGMA quick_check(1000)") else {
        return false;
    };
    let Ok(rows) = st.query_map([], |r| r.get::<_, String>(0)) else {
        return false;
    };
    let mut intact = true;
    for row in rows {
        match row {
            Ok(m) if m == "ok" || m.contains(" value in ") => {}
            _ => intact = false,
        }
    }
    intact
}

/// Every row of the database at `path` in time order (with API arguments), decoded on
/// `threads` threads: the rows and a hash of every chunk's batches, every column (as
/// Arrow IPC bytes), in the order they came, or the error.
fn stream_db(path: &Path, threads: usize) -> std::result::Result<(u64, u64), String> {
    let db = rocpd_db::Database::open(path).map_err(|e| e.to_string())?;
    let catalog = db.catalog(0).map_err(|e| e.to_string())?;
    let mut sources: Vec<rocpd_pipeline::Numbered> = vec![(0, Box::new(db))];
    let options = rocpd_pipeline::ProduceOptions {
        threads,
        ..Default::default()
    };
    let (mut rows, mut hash) = (0u64, rocpd_model::hash::FNV_OFFSET);
    let mut bytes = Vec::new();
    rocpd_pipeline::produce(
        &mut sources,
        std::sync::Arc::new(catalog),
        &options,
        &mut |m| {
            if let Message::Chunk(c) = m {
                rows += c.rows() as u64;
                let _ = c.max_start();
                let _ = c.time_order().count();
                for b in &c.batches {
                    bytes.clear();
                    let mut w =
                        arrow_ipc::writer::StreamWriter::try_new(&mut bytes, &b.batch.schema())
                            .map_err(|e| rocpd_model::Error::Usage(e.to_string()))?;
                    w.write(&b.batch)
                        .and_then(|_| w.finish())
                        .map_err(|e| rocpd_model::Error::Usage(e.to_string()))?;
                    drop(w);
                    hash = rocpd_model::hash::fnv1a64(&[b.table as u8], hash);
                    hash = rocpd_model::hash::fnv1a64(&bytes, hash);
                }
            }
            Ok(())
        },
    )
    .map_err(|e| e.to_string())?;
    Ok((rows, hash))
}
