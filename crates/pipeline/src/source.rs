//! What every reader implements: [`Source`], one opened input, and the streams it yields.
//!
//! A source describes itself (catalog, event span, markers, row counts, rows it cannot
//! place in time) and then prepares one sorted stream per canonical table it holds. The
//! preparation is split in two, [`Source::prepare`] then [`PreparedStream::open`], so a
//! stream may borrow from its prepared form (a SQLite statement borrows its connection),
//! and so the decode pool can prepare and run a source's streams on the thread that owns
//! it.

use std::path::Path;

use rocpd_model::{Catalog, Projection, Result, Table};

use crate::{BatchStream, StageDrop};

/// How a source's streams are built.
#[derive(Debug, Clone)]
pub struct StreamOptions {
    /// The columns the run's stages and sinks read; the others stay null.
    pub projection: Projection,
    /// Rows per batch (batches are also cut at [`rocpd_model::BATCH_BYTES`] of strings).
    pub batch_rows: usize,
    /// The tables to stream; `None` for all. A stream of another table is prepared but
    /// never started, so its sort never runs.
    pub tables: Option<Vec<Table>>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            projection: Projection::all(),
            batch_rows: 8192,
            tables: None,
        }
    }
}

impl StreamOptions {
    /// Whether API call arguments are needed (an extra aggregation in some readers).
    pub fn with_args(&self) -> bool {
        self.projection.fills("args")
    }

    /// Whether the run reads `table` at all.
    pub fn wants(&self, table: Table) -> bool {
        self.tables.as_ref().is_none_or(|t| t.contains(&table))
    }
}

/// One opened input: a database, or a profiler's output files read directly.
///
/// Sources are numbered in the run's catalog: an input holding `k` processes (table sets)
/// takes `k` consecutive source numbers, starting at the `first_source` the caller gives.
pub trait Source: Send {
    /// The input file, for messages.
    fn path(&self) -> &Path;
    /// How many catalog sources (processes) the input holds.
    fn source_count(&self) -> usize;
    /// The dimension data; the input's sources are numbered from `first_source`.
    fn catalog(&self, first_source: u32) -> Result<Catalog>;
    /// Earliest start and latest end over the input's events, if it has any.
    fn event_span(&self) -> Result<Option<(i64, i64)>>;
    /// `(start, end)` of every marker or range whose message or name is `text`.
    fn find_marker(&self, text: &str) -> Result<Vec<(i64, i64)>>;
    /// The file the markers [`Source::find_marker`] finds come from, for messages: the
    /// input itself unless it is several files.
    fn marker_path(&self) -> &Path {
        self.path()
    }
    /// Rows per canonical table, as the streams will yield them.
    fn count_rows(&self) -> Result<Vec<(Table, u64)>>;
    /// Rows the input holds but cannot place in the time-ordered stream, with why.
    fn dropped(&self) -> Result<Vec<StageDrop>>;
    /// How many streams [`Source::prepare`] will return (to size batches beforehand).
    fn stream_count(&self) -> usize;
    /// One stream per canonical table with rows, each sorted by (`start`, `end` desc).
    fn prepare(
        &self,
        first_source: u32,
        options: &StreamOptions,
    ) -> Result<Vec<Box<dyn PreparedStream + '_>>>;
    /// Another handle on the same input that can run some of its streams on another
    /// thread at the same time (for a database: a second connection), or `None` when the
    /// input cannot be read that way. Its [`Source::prepare`] must give the same streams,
    /// in the same order, with the same rows; the decode pool opens each stream on one
    /// handle only and asks only the first handle what it drops.
    fn fork(&self) -> Result<Option<Box<dyn Source>>> {
        Ok(None)
    }
    /// How many of the streams a run with `options` opens have rows, at most: the decode
    /// pool makes no more handles of the source than this. By default every stream, and
    /// no more than one per table the run reads and process.
    fn busy_streams(&self, options: &StreamOptions) -> usize {
        let tables = options
            .tables
            .as_ref()
            .map_or(usize::MAX, |t| t.len().saturating_mul(self.source_count()));
        self.stream_count().min(tables)
    }
}

/// A stream ready to run (for SQLite: a prepared statement).
pub trait PreparedStream {
    /// The canonical table it yields.
    fn table(&self) -> Table;
    /// Starts it.
    fn open(&mut self) -> Result<Box<dyn BatchStream + '_>>;
    /// A rough measure of the work of running it (a row count or an estimate of one),
    /// the same on every handle of a source: the decode pool balances a source's
    /// streams over its forks ([`Source::fork`]) by it.
    fn weight(&self) -> u64 {
        1
    }
}
