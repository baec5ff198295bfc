//! The pipeline core: how batches flow from readers through stages into writers.
//!
//! * [`BatchStream`]: what a reader yields, one canonical table sorted by start time.
//! * [`TimeMerge`]: merges any number of streams (all tables of all inputs) into
//!   [`Chunk`]s: time slabs in which every row starts no later than any row of a later
//!   chunk. Writers that need a global time order walk a chunk with [`Chunk::time_order`].
//! * [`Stage`] and [`Sink`]: what the driver pushes chunks through.
//! * [`run`]: the driver, optionally with the decoding on its own thread behind a bounded
//!   channel, producing a [`RunReport`].
//! * [`OutputFile`]: whole-or-absent output files (temporary name, renamed on success).
//! * [`PathGuard`]: refuses outputs that would replace an input or each other.
//! * [`cleanup`]: cancellation between chunks and the list of temporary paths.
//! * [`Source`]: what every reader implements (describe an input, prepare its streams).
//! * [`decode_parallel`]: the streams of many sources decoded on a pool of threads.
//! * [`in_parallel`]: independent jobs on a few threads, results in job order.
//! * [`RunSorter`]: one table's rows sorted by time in bounded memory, spilling sorted
//!   runs to Arrow IPC files, for readers of input that is not in time order.

#![warn(missing_docs)]

mod append_file;
mod chunk;
pub mod cleanup;
mod decode;
mod driver;
mod guard;
mod input;
mod long_text;
mod lz4_chunks;
mod merge;
mod output;
mod parallel;
mod produce;
mod report;
mod sort;
mod source;

pub use append_file::AppendFile;
pub use chunk::{Chunk, TimeOrder};
pub use decode::{decode_parallel, Numbered, QueueLimits};
pub use driver::{run, Message, Progress, RunOptions, Sink, Stage};
pub use guard::{within, PathGuard};
pub use input::{check_regular, open_regular, FileStamp, FileStamps};
pub use merge::{BatchStream, TimeMerge};
pub use output::{
    refuse_special, remove_output, remove_output_path, temp_sibling, NewDirs, OutputFile,
};
pub use parallel::in_parallel;
pub use produce::{batch_rows, produce, produce_events, ProduceOptions, QUEUE_BYTES, ROW_BUDGET};
pub use report::{OutputReport, RunReport, StageDrop, TableCounts, UNTIMED_PMC};
pub use sort::{RunSorter, SortOptions, SortStats, SortedRuns, MAX_MERGE, SORT_MEMORY};
pub use source::{PreparedStream, Source, StreamOptions};
