//! `rocpd_rs._native`: the [`rocpd`] facade as a Python extension module.
//!
//! This crate owns only the crossing into Python: turning keyword arguments into the
//! facade's option structs, Arrow streams into C-stream capsules (`__arrow_c_stream__`),
//! facade errors into Python exceptions, and long calls into ones that release the GIL
//! and stop on Ctrl-C. Everything a conversion does is the facade's, as for the CLI. The
//! Python-facing API (names, docstrings, pyarrow objects) is `python/rocpd_rs/__init__.py`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// How often a long call wakes up to look for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// SIGINT's number, recorded as the cause of a cancel (POSIX fixes it at 2).
const SIGINT: i32 = 2;

/// A facade error as the Python exception the package documents: `rocpd_rs.UsageError`
/// (also a `ValueError`) for a request that is wrong, `KeyboardInterrupt` for a cancelled
/// run, `rocpd_rs.Error` for the rest. The message is the CLI's, without `rocpd: error: `.
fn to_py(py: Python<'_>, e: rocpd::Error) -> PyErr {
    let message = chain(&e);
    let class = match e {
        rocpd::Error::Interrupted { .. } => return PyKeyboardInterrupt::new_err(message),
        rocpd::Error::Usage(_) => "UsageError",
        _ => "Error",
    };
    match py
        .import("rocpd_rs._errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1((message.clone(),)))
    {
        Ok(instance) => PyErr::from_value(instance),
        Err(import_failed) => import_failed,
    }
}

/// `error: cause: cause ...`, as the CLI prints an error (anyhow's `{:#}`).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let s = c.to_string();
        if !text.ends_with(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        cause = c.source();
    }
    text
}

/// How long a run may take to stop after Ctrl-C before its temporaries are removed
/// under it and the call returns anyway (the CLI's grace period).
const GRACE: Duration = Duration::from_secs(3);

/// Calls running now. The cancel flag is process-wide, so it is cleared only when the
/// first call starts and when the last one ends: one call's start never clears a cancel
/// another call has not seen yet.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// One call counted in [`IN_FLIGHT`] while it lives (moved into the worker thread, so an
/// abandoned run counts until it has really stopped).
struct InFlight;

impl InFlight {
    fn enter() -> InFlight {
        if IN_FLIGHT.fetch_add(1, Ordering::SeqCst) == 0 {
            rocpd::cleanup::reset_cancel();
        }
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if IN_FLIGHT.fetch_sub(1, Ordering::SeqCst) == 1 {
            rocpd::cleanup::reset_cancel();
        }
    }
}

/// Runs `work` on a thread of its own while the caller waits with the GIL released,
/// waking every [`SIGNAL_POLL`] to let Python run its signal handlers. When one raises
/// (Ctrl-C's `KeyboardInterrupt`), the run is asked to stop at its next check and the
/// caller waits for it to unwind (which removes its temporaries and unfinished outputs),
/// then raises that exception. A second signal, or a run still going after [`GRACE`],
/// removes every registered temporary and raises at once, as the CLI exits; the
/// abandoned run stops at its next check.
fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce() -> rocpd::Result<T> + Send + 'static,
) -> PyResult<T> {
    let in_flight = InFlight::enter();
    let (done_tx, done_rx) = sync_channel(1);
    std::thread::Builder::new()
        .name("rocpd-call".into())
        .spawn(move || {
            let _counted = in_flight;
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            let _ = done_tx.send(r);
        })
        .map_err(|e| PyRuntimeError::new_err(format!("rocpd: cannot start a thread: {e}")))?;
    let done_rx = Mutex::new(done_rx);
    let mut interrupted: Option<(PyErr, Instant)> = None;
    loop {
        let wait = py.detach(|| match done_rx.lock() {
            Ok(rx) => rx.recv_timeout(SIGNAL_POLL),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        });
        match wait {
            Ok(result) => {
                if let Some((signalled, _)) = interrupted {
                    return Err(signalled);
                }
                return match result {
                    Ok(r) => r.map_err(|e| to_py(py, e)),
                    Err(_) => Err(PyRuntimeError::new_err(
                        "rocpd: internal error: the run panicked",
                    )),
                };
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "rocpd: internal error: the run ended without a result",
                ))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Err(signalled) = py.check_signals() {
            if interrupted.is_some() {
                rocpd::cleanup::remove_registered();
                return Err(signalled);
            }
            rocpd::cleanup::request_cancel(SIGINT);
            interrupted = Some((signalled, Instant::now()));
        }
        if interrupted
            .as_ref()
            .is_some_and(|(_, at)| at.elapsed() > GRACE)
        {
            rocpd::cleanup::remove_registered();
            if let Some((signalled, _)) = interrupted {
                return Err(signalled);
            }
        }
    }
}

/// One Arrow C stream (`__arrow_c_stream__`), consumable once: what pyarrow, polars and
/// DuckDB import without copying.
#[pyclass(module = "rocpd_rs._native")]
struct ArrowStream {
    reader: Mutex<Option<Box<dyn RecordBatchReader + Send>>>,
}

impl ArrowStream {
    fn new(reader: Box<dyn RecordBatchReader + Send>) -> Self {
        ArrowStream {
            reader: Mutex::new(Some(reader)),
        }
    }

    /// A stream of one batch already in memory.
    fn of_batch(batch: RecordBatch) -> Self {
        let schema = batch.schema();
        ArrowStream::new(Box::new(RecordBatchIterator::new([Ok(batch)], schema)))
    }
}

#[pymethods]
impl ArrowStream {
    /// Exports the stream as a PyCapsule named `arrow_array_stream`. The consumer moves
    /// the stream out of the capsule; a capsule never consumed releases it when dropped.
    /// `requested_schema` is accepted and not applied (the protocol allows that).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = self
            .reader
            .lock()
            .ok()
            .and_then(|mut r| r.take())
            .ok_or_else(|| {
                PyRuntimeError::new_err("this event stream was already consumed; ask for a new one")
            })?;
        let stream = FFI_ArrowArrayStream::new(reader);
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }
}

/// What `--include/--exclude` and the time window say: a dict with every key (the
/// Python layer fills in the defaults, so they are written once, beside the docstrings).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct SelectionArgs {
    include: Vec<String>,
    exclude: Vec<String>,
    start: Option<String>,
    end: Option<String>,
    start_marker: Option<String>,
    end_marker: Option<String>,
    inclusive: bool,
    keep_launches: bool,
}

impl SelectionArgs {
    fn selection(&self) -> rocpd::Result<rocpd::Selection> {
        rocpd::Selection {
            rules: Vec::new(),
            window: rocpd::WindowRequest {
                start: self.start.clone(),
                end: self.end.clone(),
                start_marker: self.start_marker.clone(),
                end_marker: self.end_marker.clone(),
                fully_inside: self.inclusive,
                keep_groups: self.keep_launches,
            },
        }
        .with_rules(&self.include, &self.exclude)
    }
}

/// The options of `rocpd convert`, by the CLI's long names (`--split-by` is `split_by`):
/// a dict with every key, as [`SelectionArgs`].
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct ConvertArgs {
    group_by_queue: bool,
    kernel_rename: bool,
    agent_index_value: Option<String>,
    annotations: bool,
    annotate_args: bool,
    stats: bool,
    split_by: Option<String>,
    split_count: Option<usize>,
    split_duration: Option<String>,
    max_file_size: Option<String>,
    row_group_rows: Option<usize>,
    max_rows_per_file: Option<u64>,
    partition_by: Option<String>,
    append: bool,
    table_format: Option<String>,
    max_open: Option<usize>,
    threads: Option<usize>,
    report: Option<PathBuf>,
}

fn agent_index(name: Option<&str>) -> rocpd::Result<rocpd::AgentIndexMode> {
    match name {
        None => Ok(rocpd::AgentIndexMode::default()),
        Some(n) => rocpd::AgentIndexMode::from_name(n).ok_or_else(|| {
            rocpd::Error::Usage(format!(
                "agent_index_value {n:?} is not absolute, relative or type-relative"
            ))
        }),
    }
}

fn threads(n: Option<usize>) -> usize {
    n.unwrap_or_else(rocpd::default_threads).max(1)
}

impl ConvertArgs {
    fn conversion(
        &self,
        formats: &[String],
        dir: PathBuf,
        name: String,
        selection: rocpd::Selection,
    ) -> rocpd::Result<rocpd::Conversion> {
        let formats = formats
            .iter()
            .map(|f| rocpd::Format::from_name(f))
            .collect::<rocpd::Result<Vec<_>>>()?;
        let agent_index = agent_index(self.agent_index_value.as_deref())?;
        let by = self
            .split_by
            .as_deref()
            .map(rocpd::SplitBy::from_name)
            .transpose()?;
        let parquet_default = rocpd::ParquetOptions::default();
        let defaults = rocpd::Conversion::default();
        Ok(rocpd::Conversion {
            formats,
            dir,
            name,
            merge_naming: false,
            perfetto: rocpd::PerfettoOptions {
                group_by_queue: self.group_by_queue,
                kernel_rename: self.kernel_rename,
                agent_index,
                annotations: self.annotations,
                annotate_args: self.annotate_args,
                ..Default::default()
            },
            parquet: rocpd::ParquetOptions {
                row_group_rows: self
                    .row_group_rows
                    .unwrap_or(parquet_default.row_group_rows),
                max_rows_per_file: self
                    .max_rows_per_file
                    .unwrap_or(parquet_default.max_rows_per_file),
                partition_by: match &self.partition_by {
                    Some(s) => rocpd::PartitionKey::parse_list(s)?,
                    None => Vec::new(),
                },
                append: self.append,
                table_format: match self.table_format.as_deref() {
                    None => rocpd::TableFormat::default(),
                    Some(n) => rocpd::TableFormat::from_name(n).ok_or_else(|| {
                        rocpd::Error::Usage(format!("table_format {n:?} is not parquet or delta"))
                    })?,
                },
                ..parquet_default
            },
            csv: rocpd::CsvOptions {
                agent_index,
                kernel_rename: self.kernel_rename,
                stats: self.stats,
            },
            selection,
            split: rocpd::Split::from_options(
                by,
                self.split_count,
                self.split_duration.as_deref(),
                self.max_file_size.as_deref(),
            )?,
            max_open: self.max_open.unwrap_or(defaults.max_open),
            threads: threads(self.threads),
            report: self.report.clone(),
        })
    }
}

/// Where an `Inputs` is: ready, or lent to a call's worker thread.
enum Slot {
    Ready(Box<rocpd::Inputs>),
    Lent,
    /// A call panicked with the inputs: they are not given back half-used.
    Broken,
}

/// Opened inputs (`rocpd_rs.Inputs` wraps this).
#[pyclass(module = "rocpd_rs._native")]
struct Inputs {
    slot: Arc<Mutex<Slot>>,
}

/// Marks the slot [`Slot::Broken`] when dropped while still armed (by a panic's unwinding).
struct BrokenOnPanic(Option<Arc<Mutex<Slot>>>);

impl Drop for BrokenOnPanic {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Slot::Broken;
        }
    }
}

const BROKEN: &str =
    "these inputs are unusable after an internal error in an earlier call; open them again";

const BUSY: &str = "these inputs are busy with another call (from another thread, or one interrupted and still stopping); open them again for a second thread";

impl Inputs {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A quick call on the inputs, on this thread.
    fn with<T>(&self, f: impl FnOnce(&mut rocpd::Inputs) -> PyResult<T>) -> PyResult<T> {
        match &mut *self.lock() {
            Slot::Ready(i) => f(i),
            Slot::Lent => Err(PyRuntimeError::new_err(BUSY)),
            Slot::Broken => Err(PyRuntimeError::new_err(BROKEN)),
        }
    }

    /// A long call: the inputs are lent to [`interruptible`]'s worker, which gives them
    /// back when it ends. A second call meanwhile is refused at once rather than left
    /// waiting while it holds the GIL.
    fn call<T: Send + 'static>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut rocpd::Inputs) -> rocpd::Result<T> + Send + 'static,
    ) -> PyResult<T> {
        let mut inputs = match std::mem::replace(&mut *self.lock(), Slot::Lent) {
            Slot::Ready(i) => i,
            Slot::Lent => return Err(PyRuntimeError::new_err(BUSY)),
            Slot::Broken => {
                *self.lock() = Slot::Broken;
                return Err(PyRuntimeError::new_err(BROKEN));
            }
        };
        let slot = self.slot.clone();
        interruptible(py, move || {
            // A panic still ends in a state every later call reports, not "busy" forever.
            let mut broken = BrokenOnPanic(Some(slot.clone()));
            let r = f(&mut inputs);
            broken.0 = None;
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Slot::Ready(inputs);
            r
        })
    }
}

#[pymethods]
impl Inputs {
    #[new]
    #[pyo3(signature = (paths, skip_bad_rows=false, threads=None))]
    fn new(
        py: Python<'_>,
        paths: Vec<PathBuf>,
        skip_bad_rows: bool,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        let options = rocpd::OpenOptions {
            skip_bad_rows,
            threads: self::threads(threads),
        };
        let inputs = interruptible(py, move || rocpd::Inputs::open(&paths, &options))?;
        Ok(Inputs {
            slot: Arc::new(Mutex::new(Slot::Ready(Box::new(inputs)))),
        })
    }

    /// Files directory walks left out, one message each.
    fn warnings(&self) -> PyResult<Vec<String>> {
        self.with(|i| Ok(i.warnings().to_vec()))
    }

    /// What `rocpd info --json` prints, as JSON text.
    fn info_json(&self, py: Python<'_>) -> PyResult<String> {
        let info = self.call(py, |i| i.info())?;
        serde_json::to_string_pretty(&info)
            .map_err(|e| PyRuntimeError::new_err(format!("rocpd: info as JSON: {e}")))
    }

    /// One dimension table of the catalog.
    fn catalog(&self, py: Python<'_>, name: &str) -> PyResult<ArrowStream> {
        self.with(|i| {
            let batch = i.catalog_table(name).map_err(|e| to_py(py, e))?;
            Ok(ArrowStream::of_batch(batch))
        })
    }

    /// The events of one table, in time order.
    #[pyo3(signature = (table, columns, threads, selection))]
    fn events(
        &self,
        py: Python<'_>,
        table: &str,
        columns: Option<Vec<String>>,
        threads: Option<usize>,
        selection: SelectionArgs,
    ) -> PyResult<ArrowStream> {
        let table = table.to_string();
        let reader = self.call(py, move |i| {
            let table = table_named(&table)?;
            let projection = match &columns {
                Some(c) => rocpd::Projection::only(table, c)?,
                None => rocpd::Projection::all(),
            };
            let options = rocpd::EventOptions {
                selection: selection.selection()?,
                projection,
                threads: self::threads(threads),
                tables: None,
            };
            let reader = i.events(table, &options)?;
            match &columns {
                Some(c) => reader.with_columns(c),
                None => Ok(reader),
            }
        })?;
        Ok(ArrowStream::new(Box::new(reader)))
    }

    /// A conversion; returns the run report as JSON text.
    #[pyo3(signature = (formats, output_dir, name, selection, options))]
    fn convert(
        &self,
        py: Python<'_>,
        formats: Vec<String>,
        output_dir: PathBuf,
        name: String,
        selection: SelectionArgs,
        options: ConvertArgs,
    ) -> PyResult<String> {
        let conversion = selection
            .selection()
            .and_then(|s| options.conversion(&formats, output_dir, name, s))
            .and_then(|c| c.validate().map(|()| c))
            .map_err(|e| to_py(py, e))?;
        let report = self.call(py, move |i| i.convert(&conversion, &mut |_| {}))?;
        serde_json::to_string_pretty(&report)
            .map_err(|e| PyRuntimeError::new_err(format!("rocpd: report as JSON: {e}")))
    }

    /// The flat profile: `(AMD's view title, rows)` per view, in the CLI's order.
    #[pyo3(signature = (by_rank, domain_summary, region_categories, threads, selection))]
    fn summary(
        &self,
        py: Python<'_>,
        by_rank: bool,
        domain_summary: bool,
        region_categories: Vec<String>,
        threads: Option<usize>,
        selection: SelectionArgs,
    ) -> PyResult<Vec<(String, ArrowStream)>> {
        let views = self.call(py, move |i| {
            let options = rocpd::SummaryOptions {
                by_rank,
                domain_summary,
                region_categories: rocpd::RegionCategories::from_args(&region_categories)?,
                selection: selection.selection()?,
                utilisation_bins: None,
                threads: self::threads(threads),
            };
            let run = i.summary(&options, &mut |_| {})?;
            run.summary
                .views
                .iter()
                .map(|v| Ok((v.title(), rocpd::view_batch(v)?)))
                .collect::<rocpd::Result<Vec<_>>>()
        })?;
        Ok(views
            .into_iter()
            .map(|(title, batch)| (title, ArrowStream::of_batch(batch)))
            .collect())
    }
}

fn table_named(name: &str) -> rocpd::Result<rocpd::Table> {
    rocpd::Table::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = rocpd::Table::ALL.iter().map(|t| t.name()).collect();
        rocpd::Error::Usage(format!(
            "no event table {name:?}; the tables are {}",
            names.join(", ")
        ))
    })
}

/// An empty stream with the model's schema of `table`.
#[pyfunction]
fn table_schema(py: Python<'_>, table: &str) -> PyResult<ArrowStream> {
    let table = table_named(table).map_err(|e| to_py(py, e))?;
    let schema = table.schema();
    let none: Vec<Result<RecordBatch, arrow_schema::ArrowError>> = Vec::new();
    Ok(ArrowStream::new(Box::new(RecordBatchIterator::new(
        none, schema,
    ))))
}

/// The event tables' names, in the model's order.
#[pyfunction]
fn event_tables() -> Vec<&'static str> {
    rocpd::Table::ALL.iter().map(|t| t.name()).collect()
}

/// The catalog's dimension tables' names.
#[pyfunction]
fn catalog_tables() -> Vec<&'static str> {
    rocpd::CATALOG_TABLES.to_vec()
}

/// The version of the Rust library this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Inputs>()?;
    m.add_class::<ArrowStream>()?;
    m.add_function(wrap_pyfunction!(table_schema, m)?)?;
    m.add_function(wrap_pyfunction!(event_tables, m)?)?;
    m.add_function(wrap_pyfunction!(catalog_tables, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
