//! rocpd-rs as a library: open ROCm profiling outputs, describe them, stream their events
//! as Arrow record batches, and convert them.
//!
//! This crate is the one front door. The `rocpd` command and the Python package are thin
//! layers over it; everything they do, a Rust program can do with these calls:
//!
//! * [`Inputs::open`]: files, globs or directories, detected by content (RocPD
//!   databases read in place; rocprofv3 CSV and JSON and Triton Proton files read
//!   directly, a rocprofv3 run the direct reader cannot take imported on the fly), with
//!   a process given twice refused.
//! * [`Inputs::info`], [`Inputs::catalog`], [`Inputs::span`]: what they hold.
//! * [`Inputs::chunks`] and [`Inputs::events`]: their events in time order, as owned
//!   iterators (chunks of all tables, or one table as an Arrow `RecordBatchReader`).
//! * [`Inputs::convert`]: a whole conversion ([`Conversion`]: formats, filters, window,
//!   split), returning the run report; [`Inputs::summary`]: the flat profile;
//!   [`Inputs::query`]: SQL over the views of a merged database of the inputs;
//!   [`Inputs::run`]: any [`Sink`] of your own.
//!
//! ```
//! # fn main() -> rocpd::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! # let cfg = rocpd_gen::GenConfig { processes: 2, iterations: 2, ..Default::default() };
//! # rocpd_gen::generate(&cfg, &dir.path().join("run")).unwrap();
//! let mut inputs = rocpd::Inputs::open(&[dir.path().join("run")], &Default::default())?;
//! let kernels = inputs.events(rocpd::Table::KernelDispatch, &Default::default())?;
//! let mut n = 0;
//! for batch in kernels {
//!     n += batch?.num_rows();
//! }
//! assert_eq!(n as u64, inputs.info()?.rows["kernel_dispatch"]);
//! # Ok(()) }
//! ```
//!
//! Runs decode on [`Conversion::threads`] threads (default: the machine's available
//! parallelism); the output is the same, byte for byte, whatever the number.

#![warn(missing_docs)]

mod convert;
mod events;
mod expand;
mod info;
mod open;
mod package;
mod query;
mod summary;
mod window;
mod yaml;

/// Whether `c` changes how a terminal shows what follows it: a control character (an
/// escape sequence's start, a line break, a carriage return) or a Unicode line or
/// paragraph separator or bidirectional override, which can make one text read as
/// another.
fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` as it is safe to print on a terminal: names from the inputs (a process's command
/// line, a hostname, a file name) may hold escape sequences or line breaks, which would
/// retitle or clear the terminal or forge output lines. Such characters are written as
/// escapes (`\n`, `\r`, `\t`, `\u{1b}`); everything else is kept.
///
/// ```
/// assert_eq!(rocpd::printable("a\u{1b}]0;x\u{7}b\n"), "a\\u{1b}]0;x\\u{7}b\\n");
/// assert_eq!(rocpd::printable("plain é"), "plain é");
/// ```
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(unprintable) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unprintable(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

pub use convert::{output_path, Conversion, Format, Split, SplitBy};
pub use events::{Chunks, EventOptions, TableReader};
pub use expand::{expand, unrecognised, Expanded};
pub use info::{span_len, AgentInfo, Info, ProcessInfo, TimeSpan};
pub use open::{Inputs, OpenOptions, Origin, CACHE_BUDGET_KIB, INDEPENDENT_GROUP, KEEP_OPEN};
pub use query::{query_output_path, Query, QueryFormat, QueryResult};
pub use summary::{SummaryFormat, SummaryOptions, SummaryRun, MAX_UTILISATION_BINS};
pub use window::{Selection, Span, WindowRequest};

pub use rocpd_csv::CsvOptions;
/// The analysis and summary views of a merged database (and of `rocpd query`), in
/// the order AMD's schema lists them; their columns are in `formats/rocpd/README.md`.
pub use rocpd_db::ANALYSIS_VIEW_NAMES as ANALYSIS_VIEWS;
pub use rocpd_model::AgentIndexMode;
pub use rocpd_model::{Catalog, Error, Projection, Result, Table};
pub use rocpd_otf2::Otf2Options;
/// The dimension tables [`Inputs::catalog_table`] gives (those of the Parquet dataset).
pub use rocpd_parquet::DIMENSION_TABLES as CATALOG_TABLES;
pub use rocpd_parquet::{ParquetOptions, PartitionKey, TableFormat};
pub use rocpd_perfetto::PerfettoOptions;
pub use rocpd_pipeline::{
    cleanup, Chunk, OutputReport, Progress, RunReport, Sink, Source, Stage, StageDrop,
};
pub use rocpd_stages::{FilterRule, SplitMode};
pub use rocpd_summary::{view_batch, RegionCategories, Summary, View};

/// The default number of decode threads: the machine's available parallelism.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
pub use rocpd_stages::time;
