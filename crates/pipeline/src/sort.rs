//! Sorting one table's rows by (`start`, `end` descending, `id`) in bounded memory, for readers
//! whose input is not in time order (rocprofv3 CSV and JSON files write a row when an
//! event ends; Proton traces are in the order the profiler flushed them). PMC values
//! break ties by (`event_id`, `pmc_id`, `id`), as the RocPD reader orders them.
//!
//! A reader pushes its batches in input order into a [`RunSorter`]. Each batch is sorted
//! on its own, stably, unless it is in order already, and held in memory. When the held
//! batches pass [`SortOptions::memory_bytes`], they are merged into one sorted run and
//! written to an Arrow IPC stream file (LZ4-compressed in chunks, D105) in a private temporary
//! directory. A run that starts where the previous one ended is appended to its file, so
//! input already in order stays in memory while it fits and otherwise becomes one file,
//! with no merging at all.
//!
//! [`RunSorter::finish`] gives a [`SortedRuns`], a [`BatchStream`] that merges the run
//! files, or, when nothing passed the budget, the batches in memory (once a run went to
//! disk, the batches still held follow it there, D102; [`RunSorter::settle`] does the
//! same earlier, when the reader's input for the table pauses, D162). Rows with the same key come out
//! in input order (runs stay in input order and each keeps it), so a reader's output
//! does not depend on the budget. More than [`MAX_MERGE`] files are first merged,
//! consecutive files into one, until `MAX_MERGE` are left, so the files open at once are
//! bounded; a run file is read back in batches of at most 1,024 rows and about 64 KiB, so
//! the merge of spilled runs holds at most `MAX_MERGE` such batches. The temporary directory is
//! removed when the sorter or the stream is dropped, and is registered with
//! [`crate::cleanup`] meanwhile so that a signal handler can remove it.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{RecordBatch, UInt32Array};
use arrow_buffer::ScalarBuffer;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_select::interleave::interleave_record_batch;
use arrow_select::take::take_record_batch;
use rocpd_model::{col, Error, Result, Table, BATCH_BYTES};

use crate::chunk::start_end as keys;
use crate::cleanup::{self, Registered};
use crate::long_text::LongTexts;
use crate::lz4_chunks::{ChunkReader, ChunkWriter};
use crate::BatchStream;

/// The most run files merged at once; with more, consecutive files are first merged into
/// one until this many are left.
pub const MAX_MERGE: usize = 32;

/// Default bytes of sorted batches held in memory before they are merged into a run file.
pub const SORT_MEMORY: usize = 16 << 20;

/// Rows per batch in a spilled run's file, at most: the merge holds one such batch per
/// run it reads, so this and [`MAX_MERGE`] bound its memory whatever the readers pushed.
const SPILL_BATCH_ROWS: usize = 1024;

/// Bytes per batch in a spilled run's file, about: wide rows (API calls with their names
/// and arguments) make batches of fewer rows. Each stream being merged holds up to
/// [`MAX_MERGE`] of them, and a conversion merges every table's stream at once.
const SPILL_BATCH_BYTES: usize = 64 << 10;

/// The rows of the batches `batch` is written to a run file in.
fn spill_batch_rows(batch: &RecordBatch) -> usize {
    let row_bytes = batch.get_array_memory_size() / batch.num_rows().max(1);
    (SPILL_BATCH_BYTES / row_bytes.max(1)).clamp(64, SPILL_BATCH_ROWS)
}

/// How a [`RunSorter`] sorts.
#[derive(Debug, Clone)]
pub struct SortOptions {
    /// Bytes of runs kept in memory (Arrow buffer sizes); past it runs are spilled.
    pub memory_bytes: usize,
    /// Rows per batch of the merged output (batches are also cut near
    /// [`BATCH_BYTES`]).
    pub batch_rows: usize,
    /// Where the temporary directory of spilled runs goes; `None` for the system's
    /// temporary directory (`TMPDIR`).
    pub spill_dir: Option<PathBuf>,
}

impl Default for SortOptions {
    fn default() -> Self {
        SortOptions {
            memory_bytes: SORT_MEMORY,
            batch_rows: 8192,
            spill_dir: None,
        }
    }
}

/// What a sort did, for reports and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SortStats {
    /// Rows pushed.
    pub rows: u64,
    /// Times the rows held in memory passed the budget and were written to disk.
    pub spills: u64,
    /// Run files written, including those of merge passes (input in order spills to
    /// one file however often it spills).
    pub spilled_runs: u64,
    /// Merges of run files into one, needed when there were more than [`MAX_MERGE`].
    pub merges: u64,
    /// Bytes written to disk.
    pub spilled_bytes: u64,
}

/// A sort key: start ascending, then end descending, then the ties: id ascending (the
/// RocPD reader's order: a reader whose input numbers rows in another order than it writes
/// them, like a Proton tree written as its nodes end, gives the same order as its
/// imported database), or for PMC values event id, counter id, then id (the RocPD
/// reader's order of values, which take their times from their dispatch).
type Key = (i64, Reverse<i64>, i64, i64, i64);

/// The key columns of a batch.
#[derive(Clone)]
struct KeyColumns {
    starts: ScalarBuffer<i64>,
    ends: ScalarBuffer<i64>,
    /// The id, or a PMC value's event id.
    first_tie: ScalarBuffer<i64>,
    /// A PMC value's counter id and id.
    more_ties: Option<[ScalarBuffer<i64>; 2]>,
}

impl KeyColumns {
    /// The key columns of `batch`, a batch of `table`'s rows.
    fn of(table: Table, batch: &RecordBatch) -> Self {
        let (starts, ends) = keys(batch);
        let int = |i: usize| batch.column(i).as_primitive::<Int64Type>().values().clone();
        let ids = int(col::ID);
        if table == Table::PmcValue {
            KeyColumns {
                starts,
                ends,
                first_tie: int(table.column_index("event_id")),
                more_ties: Some([int(table.column_index("pmc_id")), ids]),
            }
        } else {
            KeyColumns {
                starts,
                ends,
                first_tie: ids,
                more_ties: None,
            }
        }
    }

    fn key(&self, row: usize) -> Key {
        let (a, b) = self
            .more_ties
            .as_ref()
            .map_or((0, 0), |[a, b]| (a[row], b[row]));
        (
            self.starts[row],
            Reverse(self.ends[row]),
            self.first_tie[row],
            a,
            b,
        )
    }

    fn empty() -> Self {
        KeyColumns {
            starts: ScalarBuffer::from(Vec::new()),
            ends: ScalarBuffer::from(Vec::new()),
            first_tie: ScalarBuffer::from(Vec::new()),
            more_ties: None,
        }
    }
}

fn key_at(table: Table, batch: &RecordBatch, row: usize) -> Key {
    KeyColumns::of(table, batch).key(row)
}

/// `batch` in key order; rows with the same key keep their order.
fn sort_batch(table: Table, batch: RecordBatch) -> Result<RecordBatch> {
    let columns = KeyColumns::of(table, &batch);
    let key = |i: usize| columns.key(i);
    let n = batch.num_rows();
    let sorted = (1..n).all(|i| key(i - 1) <= key(i));
    if sorted {
        return Ok(batch);
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    // `sort_by_key` is stable: equal keys keep their input order.
    order.sort_by_key(|&i| key(i as usize));
    Ok(take_record_batch(&batch, &UInt32Array::from(order))?)
}

/// The private directory of spilled runs.
struct SpillDir {
    dir: tempfile::TempDir,
    _registered: Registered,
    next: u64,
}

impl SpillDir {
    fn create(parent: Option<&Path>) -> Result<Self> {
        let parent = parent
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir);
        let dir = tempfile::Builder::new()
            .prefix("rocpd-sort-")
            .tempdir_in(&parent)
            .map_err(|e| {
                Error::output(
                    &parent,
                    format!("cannot create a directory for sort runs: {e}"),
                )
            })?;
        let registered = Registered::new(dir.path());
        Ok(SpillDir {
            dir,
            _registered: registered,
            next: 0,
        })
    }

    fn new_file(&mut self, table: Table) -> Result<RunWriter> {
        let path = self.dir.path().join(format!("run-{:06}.arrows", self.next));
        self.next += 1;
        RunWriter::create(path, table)
    }
}

/// A run being written to its file.
struct RunWriter {
    path: PathBuf,
    writer: StreamWriter<ChunkWriter<File>>,
}

impl RunWriter {
    fn create(path: PathBuf, table: Table) -> Result<Self> {
        let fail = |e: &dyn std::fmt::Display| {
            Error::output(&path, format!("cannot write a sort run: {e}"))
        };
        let file = File::create(&path).map_err(|e| fail(&e))?;
        // LZ4: the runs are read once, and the disk they take counts; zstd took a fifth
        // of a direct JSON read to save 0.1x the input in disk (D95). In chunks of the
        // stream, not Arrow's frame per buffer (D105).
        let writer =
            StreamWriter::try_new(ChunkWriter::new(file), &table.schema()).map_err(|e| fail(&e))?;
        Ok(RunWriter { path, writer })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let rows = spill_batch_rows(batch);
        let mut offset = 0;
        while offset < batch.num_rows() {
            let len = rows.min(batch.num_rows() - offset);
            self.writer
                .write(&batch.slice(offset, len))
                .map_err(|e| Error::output(&self.path, format!("cannot write a sort run: {e}")))?;
            offset += len;
        }
        Ok(())
    }

    /// Closes the file; returns its path and size.
    fn close(mut self) -> Result<(PathBuf, u64)> {
        let fail = |e: &dyn std::fmt::Display| {
            Error::output(&self.path, format!("cannot write a sort run: {e}"))
        };
        self.writer.finish().map_err(|e| fail(&e))?;
        let chunks = self.writer.into_inner().map_err(|e| fail(&e))?;
        drop(chunks.finish().map_err(|e| fail(&e))?);
        let size = std::fs::metadata(&self.path)
            .map(|m| m.len())
            .map_err(|e| fail(&e))?;
        Ok((self.path, size))
    }
}

/// A sorted run, as the merge reads it.
enum Run {
    Memory(Vec<RecordBatch>),
    Spilled(PathBuf),
}

/// The last spilled run, still open so that a next spill that continues it is appended.
struct OpenRun {
    writer: RunWriter,
    last: Key,
}

/// Sorts the rows of one table pushed to it, in bounded memory. See the module docs.
pub struct RunSorter {
    table: Table,
    options: SortOptions,
    /// Sorted batches held in memory, in input order.
    pool: Vec<RecordBatch>,
    pool_bytes: usize,
    /// Whether the pool's batches follow each other in key order (one run).
    pool_in_order: bool,
    /// Closed run files, in input order.
    spilled: Vec<PathBuf>,
    open: Option<OpenRun>,
    dir: Option<SpillDir>,
    stats: SortStats,
    /// Text values too long to carry through the sort, kept once (D155).
    texts: LongTexts,
}

impl RunSorter {
    /// A sorter of `table` rows.
    pub fn new(table: Table, options: SortOptions) -> Self {
        RunSorter {
            table,
            pool: Vec::new(),
            pool_bytes: 0,
            pool_in_order: true,
            spilled: Vec::new(),
            open: None,
            dir: None,
            stats: SortStats::default(),
            texts: LongTexts::new(options.spill_dir.as_deref()),
            options,
        }
    }

    /// The table it sorts.
    pub fn table(&self) -> Table {
        self.table
    }

    /// What it did so far.
    pub fn stats(&self) -> SortStats {
        self.stats
    }

    /// Bytes of sorted batches held in memory now (Arrow buffer sizes).
    pub fn held_bytes(&self) -> usize {
        self.pool_bytes
    }

    /// Adds a batch of the table's rows, in any order.
    pub fn push(&mut self, batch: RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let table = self.table;
        let batch = sort_batch(table, self.texts.encode(batch)?)?;
        self.stats.rows += n as u64;
        if let Some(prev) = self.pool.last() {
            self.pool_in_order &=
                key_at(table, prev, prev.num_rows() - 1) <= key_at(table, &batch, 0);
        }
        let size = batch.get_array_memory_size();
        self.pool_bytes += size;
        self.pool.push(batch);
        if self.pool_bytes > self.options.memory_bytes {
            self.spill_pool()?;
        }
        Ok(())
    }

    /// Says that the rows pushed so far end a stretch of input (a file or a section of
    /// one): when some rows already went to disk, the batches held go there now, as
    /// [`RunSorter::finish`] would write them anyway. A reader filling several tables
    /// one after the other then holds, once a table's input ends, only the tables that
    /// never passed the budget, not a share of the budget for each table whatever it
    /// held last: what was held depended on where each table's length fell (D162).
    /// Rows pushed afterwards are sorted as before.
    pub fn settle(&mut self) -> Result<()> {
        if !self.spilled.is_empty() || self.open.is_some() {
            self.spill_pool()?;
        }
        Ok(())
    }

    /// The directory of spilled runs, created on first use.
    fn spill_dir(&mut self) -> Result<&mut SpillDir> {
        if self.dir.is_none() {
            self.dir = Some(SpillDir::create(self.options.spill_dir.as_deref())?);
        }
        self.dir
            .as_mut()
            .ok_or_else(|| Error::Usage("internal: no directory for sort runs".into()))
    }

    /// Finishes the open run's file.
    fn close_open(&mut self) -> Result<()> {
        if let Some(open) = self.open.take() {
            let (path, size) = open.writer.close()?;
            self.stats.spilled_bytes += size;
            self.spilled.push(path);
        }
        Ok(())
    }

    /// Writes the pool, merged into one run, to disk: appended to the open run when it
    /// continues it (input in order spills to one file), else to a new file.
    fn spill_pool(&mut self) -> Result<()> {
        if self.pool.is_empty() {
            return Ok(());
        }
        let pool = std::mem::take(&mut self.pool);
        let in_order = std::mem::replace(&mut self.pool_in_order, true);
        self.pool_bytes = 0;
        let table = self.table;
        let first = pool.iter().map(|b| key_at(table, b, 0)).min();
        let last = pool
            .iter()
            .map(|b| key_at(table, b, b.num_rows() - 1))
            .max();
        let (Some(first), Some(last)) = (first, last) else {
            return Ok(());
        };
        if self.open.as_ref().is_some_and(|o| o.last > first) {
            self.close_open()?;
        }
        if self.open.is_none() {
            let table = self.table;
            let writer = self.spill_dir()?.new_file(table)?;
            self.stats.spilled_runs += 1;
            self.open = Some(OpenRun { writer, last });
        }
        let Some(open) = self.open.as_mut() else {
            return Ok(());
        };
        open.last = last;
        if in_order {
            for b in &pool {
                open.writer.write(b)?;
            }
        } else {
            let runs = pool.into_iter().map(|b| Run::Memory(vec![b])).collect();
            let mut merge = Merge::new(self.table, runs, SPILL_BATCH_ROWS)?;
            while let Some(b) = merge.next()? {
                open.writer.write(&b)?;
            }
        }
        self.stats.spills += 1;
        Ok(())
    }

    /// Every row pushed, in (`start`, `end` descending, `id`, input) order.
    pub fn finish(mut self) -> Result<SortedRuns> {
        // Once anything went to disk, the batches still held go too: the merge then holds
        // one small batch per file, not up to `memory_bytes` of them beside, while every
        // other stream of the run is merged as well. Which share of the budget was held
        // at the end depended on where the input's length fell, and so did the peak of
        // the merge (D102). Input that never passed the budget stays in memory.
        let files = self.spilled.len() + usize::from(self.open.is_some());
        if files > 0 {
            self.spill_pool()?;
        }
        self.close_open()?;
        // Consecutive runs merged into one file in their place keep the runs in input
        // order (ties stay in input order). Each merge takes just enough runs to come down
        // to MAX_MERGE, or MAX_MERGE if that is not enough, and the next merge starts
        // after the file just written, so no row is merged twice while fresh runs remain.
        let mut at = 0;
        while self.spilled.len() > MAX_MERGE {
            cleanup::check_cancelled()?;
            let take = (self.spilled.len() - MAX_MERGE + 1).min(MAX_MERGE);
            if at + take > self.spilled.len() {
                at = 0;
            }
            let group: Vec<PathBuf> = self.spilled.drain(at..at + take).collect();
            let table = self.table;
            let mut writer = self.spill_dir()?.new_file(table)?;
            let mut merge = Merge::new(
                table,
                group.iter().cloned().map(Run::Spilled).collect(),
                SPILL_BATCH_ROWS,
            )?;
            while let Some(b) = merge.next()? {
                writer.write(&b)?;
            }
            drop(merge);
            // The group is read; its files may go before the next one is written.
            for path in &group {
                let _ = std::fs::remove_file(path);
            }
            let (path, size) = writer.close()?;
            self.stats.spilled_runs += 1;
            self.stats.spilled_bytes += size;
            self.stats.merges += 1;
            self.spilled.insert(at, path);
            at += 1;
        }
        let mut runs: Vec<Run> = std::mem::take(&mut self.spilled)
            .into_iter()
            .map(Run::Spilled)
            .collect();
        let pool = std::mem::take(&mut self.pool);
        if self.pool_in_order {
            if !pool.is_empty() {
                runs.push(Run::Memory(pool));
            }
        } else {
            runs.extend(pool.into_iter().map(|b| Run::Memory(vec![b])));
        }
        Ok(SortedRuns {
            table: self.table,
            merge: Merge::new(self.table, runs, self.options.batch_rows)?,
            stats: self.stats,
            texts: std::mem::replace(&mut self.texts, LongTexts::new(None)),
            rest: None,
            _dir: self.dir.take(),
        })
    }
}

/// The merged runs of a [`RunSorter`]: one table's rows in time order.
pub struct SortedRuns {
    table: Table,
    merge: Merge,
    stats: SortStats,
    texts: LongTexts,
    /// Rows of a merged batch not yet given, when its long texts made it too large.
    rest: Option<RecordBatch>,
    // Dropped after `merge`, whose readers hold files inside it.
    _dir: Option<SpillDir>,
}

impl SortedRuns {
    /// How many of the runs being merged are held in memory (for tests).
    #[cfg(test)]
    fn runs_in_memory(&self) -> usize {
        let cursors = self.merge.cursors.iter();
        cursors
            .filter(|c| matches!(c.batches, Batches::Memory(_)))
            .count()
    }

    /// What the sort did.
    pub fn stats(&self) -> SortStats {
        self.stats
    }
}

impl BatchStream for SortedRuns {
    fn table(&self) -> Table {
        self.table
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let next = match self.rest.take() {
            Some(rest) => Some(rest),
            None => self.merge.next()?,
        };
        let Some(batch) = next else {
            return Ok(None);
        };
        let (head, rest) = self.texts.decode(batch)?;
        self.rest = rest;
        Ok(Some(head))
    }
}

/// Where a run's batches come from while merging.
enum Batches {
    Memory(std::vec::IntoIter<RecordBatch>),
    File(PathBuf, StreamReader<ChunkReader<File>>),
}

impl Batches {
    fn open(run: Run) -> Result<Self> {
        match run {
            Run::Memory(b) => Ok(Batches::Memory(b.into_iter())),
            Run::Spilled(path) => {
                let file = File::open(&path)
                    .map_err(|e| Error::output(&path, format!("cannot read a sort run: {e}")))?;
                let reader = StreamReader::try_new(ChunkReader::new(file), None)
                    .map_err(|e| Error::output(&path, format!("cannot read a sort run: {e}")))?;
                Ok(Batches::File(path, reader))
            }
        }
    }

    fn next(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let next = match self {
                Batches::Memory(it) => it.next(),
                Batches::File(path, reader) => match reader.next() {
                    None => None,
                    Some(Ok(b)) => Some(b),
                    Some(Err(e)) => {
                        return Err(Error::output(
                            path.as_path(),
                            format!("cannot read a sort run: {e}"),
                        ))
                    }
                },
            };
            match next {
                Some(b) if b.num_rows() == 0 => continue,
                other => return Ok(other),
            }
        }
    }
}

/// One run's position in the merge.
struct Cursor {
    table: Table,
    batches: Batches,
    batch: RecordBatch,
    keys: KeyColumns,
    row: usize,
    /// Index of `batch` among the batches of the output being built.
    slot: Option<usize>,
    /// Estimated bytes a row of `batch` adds to an output batch.
    row_bytes: usize,
}

impl Cursor {
    fn key(&self) -> Key {
        self.keys.key(self.row)
    }

    fn load(&mut self, batch: RecordBatch) {
        self.keys = KeyColumns::of(self.table, &batch);
        self.row_bytes = batch.get_array_memory_size() / batch.num_rows().max(1);
        self.batch = batch;
        self.row = 0;
        self.slot = None;
    }
}

/// The k-way merge of sorted runs.
struct Merge {
    table: Table,
    batch_rows: usize,
    cursors: Vec<Cursor>,
    /// Heads of the runs not yet exhausted: (key, run), smallest first.
    heap: BinaryHeap<Reverse<(Key, usize)>>,
}

impl Merge {
    fn new(table: Table, runs: Vec<Run>, batch_rows: usize) -> Result<Self> {
        let mut cursors = Vec::with_capacity(runs.len());
        let mut heap = BinaryHeap::with_capacity(runs.len());
        for run in runs {
            let mut batches = Batches::open(run)?;
            let Some(first) = batches.next()? else {
                continue;
            };
            let mut cursor = Cursor {
                table,
                batches,
                batch: RecordBatch::new_empty(table.schema()),
                keys: KeyColumns::empty(),
                row: 0,
                slot: None,
                row_bytes: 0,
            };
            cursor.load(first);
            heap.push(Reverse((cursor.key(), cursors.len())));
            cursors.push(cursor);
        }
        Ok(Merge {
            table,
            batch_rows: batch_rows.max(1),
            cursors,
            heap,
        })
    }

    fn next(&mut self) -> Result<Option<RecordBatch>> {
        // One run left: its batches are already in order and bounded; pass them on.
        if self.heap.len() == 1 {
            let Some(Reverse((_, r))) = self.heap.pop() else {
                return Ok(None);
            };
            let c = &mut self.cursors[r];
            let out = if c.row == 0 {
                c.batch.clone()
            } else {
                c.batch.slice(c.row, c.batch.num_rows() - c.row)
            };
            if let Some(b) = c.batches.next()? {
                c.load(b);
                self.heap.push(Reverse((c.key(), r)));
            }
            return Ok(Some(out));
        }
        let mut held: Vec<RecordBatch> = Vec::new();
        let mut indices: Vec<(usize, usize)> = Vec::new();
        let mut bytes = 0usize;
        while indices.len() < self.batch_rows && bytes < BATCH_BYTES {
            let Some(Reverse((_, r))) = self.heap.pop() else {
                break;
            };
            // Everything this run has up to the next run's head goes in one stretch.
            let bound = self.heap.peek().map(|Reverse(h)| *h);
            let c = &mut self.cursors[r];
            let slot = *c.slot.get_or_insert_with(|| {
                held.push(c.batch.clone());
                held.len() - 1
            });
            loop {
                indices.push((slot, c.row));
                bytes += c.row_bytes;
                c.row += 1;
                if c.row == c.batch.num_rows()
                    || indices.len() >= self.batch_rows
                    || bytes >= BATCH_BYTES
                {
                    break;
                }
                let here = (c.key(), r);
                if bound.is_some_and(|b| here.cmp(&b) == Ordering::Greater) {
                    break;
                }
            }
            if c.row == c.batch.num_rows() {
                match c.batches.next()? {
                    Some(b) => c.load(b),
                    None => continue,
                }
            }
            self.heap.push(Reverse((c.key(), r)));
        }
        for c in &mut self.cursors {
            c.slot = None;
        }
        if indices.is_empty() {
            return Ok(None);
        }
        let refs: Vec<&RecordBatch> = held.iter().collect();
        let out = interleave_record_batch(&refs, &indices)?;
        debug_assert_eq!(out.schema(), self.table.schema());
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::tests::lcg;
    use rocpd_model::{BatchBuilder, ColumnBuilder};

    /// A batch of Region rows: (start, end, input sequence number as `id`), with a name
    /// that repeats the sequence number so string columns move with their rows.
    fn batch(rows: &[(i64, i64, i64)]) -> RecordBatch {
        let table = Table::Region;
        let mut b = BatchBuilder::new(table, rows.len());
        for &(s, e, seq) in rows {
            for (c, spec) in table.columns().iter().enumerate() {
                match (b.column(c), spec.name) {
                    (ColumnBuilder::I64(x), "start") => x.append_value(s),
                    (ColumnBuilder::I64(x), "end") => x.append_value(e),
                    (ColumnBuilder::I64(x), "id") => x.append_value(seq),
                    (ColumnBuilder::Str(x), "name") => x.append_value(format!("call {seq}")),
                    (ColumnBuilder::U32(x), _) => x.append_value(0),
                    (ColumnBuilder::I64(x), _) if !spec.nullable => x.append_value(0),
                    (ColumnBuilder::Str(x), _) if !spec.nullable => x.append_value("x"),
                    (other, _) => other.push_null(),
                }
            }
            b.end_row();
        }
        b.finish().unwrap()
    }

    /// (start, end, id, name) of every row the stream yields, checking each batch's size.
    fn drain(mut s: SortedRuns, batch_rows: usize) -> Vec<(i64, i64, i64, String)> {
        let mut out = Vec::new();
        while let Some(b) = s.next_batch().unwrap() {
            assert!(b.num_rows() > 0 && b.num_rows() <= batch_rows.max(8192));
            assert_eq!(b.schema(), Table::Region.schema());
            let (st, en) = keys(&b);
            let ids = b.column(col::ID).as_primitive::<Int64Type>();
            let name_col = Table::Region
                .columns()
                .iter()
                .position(|c| c.name == "name")
                .unwrap();
            let names = b.column(name_col).as_string::<i32>();
            for i in 0..b.num_rows() {
                out.push((st[i], en[i], ids.value(i), names.value(i).to_string()));
            }
        }
        out
    }

    /// The oracle: a stable sort of all rows by (start, end desc, id).
    fn expected(rows: &[(i64, i64, i64)]) -> Vec<(i64, i64, i64, String)> {
        let mut v: Vec<_> = rows
            .iter()
            .map(|&(s, e, id)| (s, e, id, format!("call {id}")))
            .collect();
        v.sort_by_key(|r| (r.0, Reverse(r.1), r.2));
        v
    }

    fn options(memory: usize, dir: &Path) -> SortOptions {
        SortOptions {
            memory_bytes: memory,
            batch_rows: 100,
            spill_dir: Some(dir.to_path_buf()),
        }
    }

    fn entries(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    #[test]
    fn any_budget_gives_the_stable_sort() {
        let tmp = tempfile::tempdir().unwrap();
        let mut seed = 11u64;
        for round in 0..40 {
            // Rows in batches of random sizes, with many equal keys and some order.
            let mut rows = Vec::new();
            let mut pushes = Vec::new();
            let mut t = 0i64;
            for _ in 0..lcg(&mut seed).rem_euclid(30) {
                let len = lcg(&mut seed).rem_euclid(40) as usize;
                let start = rows.len();
                for _ in 0..len {
                    t += lcg(&mut seed).rem_euclid(5) - 1;
                    let s = t + lcg(&mut seed).rem_euclid(3);
                    let e = s + lcg(&mut seed).rem_euclid(4);
                    rows.push((s, e, rows.len() as i64));
                }
                pushes.push(start..rows.len());
            }
            let want = expected(&rows);
            for memory in [0, 2_000, 40_000, usize::MAX] {
                let mut sorter = RunSorter::new(Table::Region, options(memory, tmp.path()));
                for p in &pushes {
                    sorter.push(batch(&rows[p.clone()])).unwrap();
                }
                let stats = sorter.stats();
                assert_eq!(stats.rows, rows.len() as u64);
                let got = drain(sorter.finish().unwrap(), 100);
                assert_eq!(got, want, "round {round}, memory {memory}");
                if memory == usize::MAX {
                    assert_eq!(stats.spilled_runs, 0);
                }
            }
            assert_eq!(entries(tmp.path()), 0, "every run directory removed");
        }
    }

    #[test]
    fn ties_of_start_and_end_come_in_id_order_whatever_the_input_order() {
        // A Proton tree writes a node when it ends, after its children, but numbers it
        // when it begins: a parent with one child of its width ties with it on both
        // times and must come first, as the RocPD reader orders it.
        let tmp = tempfile::tempdir().unwrap();
        let rows: Vec<_> = (0..3_000i64)
            .map(|i| (i / 100, i / 100 + 5, 10_000 - i))
            .collect();
        let mut want = rows.clone();
        want.sort_by_key(|r| (r.0, Reverse(r.1), r.2));
        assert_ne!(want, rows, "the input is not in id order");
        for memory in [1, 20_000, usize::MAX] {
            let mut sorter = RunSorter::new(Table::Region, options(memory, tmp.path()));
            for c in rows.chunks(64) {
                sorter.push(batch(c)).unwrap();
            }
            let got: Vec<_> = drain(sorter.finish().unwrap(), 100)
                .into_iter()
                .map(|(s, e, id, _)| (s, e, id))
                .collect();
            assert_eq!(got, want, "memory {memory}");
        }
    }

    /// Long names (a kernel's name of megabytes on every dispatch) go through the sort
    /// once each, not once per row: the runs stay small and the rows come out whole, in
    /// order, in batches whose texts stay near the batch bytes (D155).
    #[test]
    fn long_texts_are_sorted_by_reference_and_come_out_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let mut seed = 7u64;
        // Three distinct names of 1 MiB of letters LZ4 cannot shrink.
        let names: Vec<String> = (0..3)
            .map(|_| {
                (0..1 << 20)
                    .map(|_| (b'a' + (lcg(&mut seed) % 26) as u8) as char)
                    .collect()
            })
            .collect();
        let name_col = Table::Region.column_index("name");
        let rows: Vec<(i64, i64, i64)> = (0..300)
            .map(|i| {
                let s = lcg(&mut seed) % 1000;
                (s, s + 5, i)
            })
            .collect();
        let with_names = |chunk: &[(i64, i64, i64)]| {
            let b = batch(chunk);
            let mut columns = b.columns().to_vec();
            let named: Vec<&str> = chunk
                .iter()
                .map(|&(_, _, id)| names[id as usize % 3].as_str())
                .collect();
            columns[name_col] = std::sync::Arc::new(arrow_array::StringArray::from(named));
            RecordBatch::try_new(b.schema(), columns).unwrap()
        };
        // A budget of one such row held in memory: every push spills a run of its own.
        let mut sorter = RunSorter::new(Table::Region, options(1 << 20, tmp.path()));
        for c in rows.chunks(10) {
            sorter.push(with_names(c)).unwrap();
        }
        let mut s = sorter.finish().unwrap();
        assert!(
            s.stats().spilled_bytes < 4 << 20,
            "the names went through the runs: {:?}",
            s.stats()
        );
        let mut want: Vec<(i64, i64, i64)> = rows.clone();
        want.sort_by_key(|r| (r.0, Reverse(r.1), r.2));
        let mut got = Vec::new();
        while let Some(b) = s.next_batch().unwrap() {
            let texts = b.column(name_col).as_string::<i32>();
            let bytes: usize = texts.iter().flatten().map(str::len).sum();
            assert!(bytes <= BATCH_BYTES, "{bytes} bytes of names in one batch");
            let (st, en) = keys(&b);
            let ids = b.column(col::ID).as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                let id = ids.value(i);
                assert_eq!(texts.value(i), names[id as usize % 3], "row {id}");
                got.push((st[i], en[i], id));
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn input_in_order_is_one_run_and_spills_to_one_file() {
        let tmp = tempfile::tempdir().unwrap();
        let rows: Vec<_> = (0..5_000).map(|i| (i / 3, i / 3 + 10 - i % 3, i)).collect();
        // Fits: held in memory, nothing on disk.
        let mut sorter = RunSorter::new(Table::Region, options(usize::MAX, tmp.path()));
        for c in rows.chunks(128) {
            sorter.push(batch(c)).unwrap();
        }
        let s = sorter.finish().unwrap();
        assert_eq!((s.stats().spills, s.stats().spilled_runs), (0, 0));
        assert_eq!(entries(tmp.path()), 0);
        assert_eq!(drain(s, 100), expected(&rows));
        // Past the budget at every push: every spill is appended to one file.
        let mut sorter = RunSorter::new(Table::Region, options(1, tmp.path()));
        for c in rows.chunks(128) {
            sorter.push(batch(c)).unwrap();
            assert_eq!(sorter.pool_bytes, 0, "nothing held past the budget");
        }
        let s = sorter.finish().unwrap();
        assert_eq!((s.stats().spills, s.stats().spilled_runs), (40, 1));
        assert!(s.stats().spilled_bytes > 0);
        assert_eq!(entries(tmp.path()), 1);
        assert_eq!(drain(s, 100), expected(&rows));
        assert_eq!(entries(tmp.path()), 0);
    }

    /// Once a run went to disk, the rows still held at the end follow it: the merge holds
    /// no run in memory. Input that never passed the budget stays in memory.
    #[test]
    fn the_rows_held_at_the_end_follow_a_spilled_run_to_disk() {
        let tmp = tempfile::tempdir().unwrap();
        // Out of order, so that every spill is a run of its own.
        let rows: Vec<_> = (0..2_800).map(|i| ((i * 7919) % 2_800, 5_000, i)).collect();
        let one = batch(&rows[..100]).get_array_memory_size();
        let mut sorter = RunSorter::new(Table::Region, options(one * 5 / 2, tmp.path()));
        for c in rows.chunks(100) {
            sorter.push(batch(c)).unwrap();
        }
        let spills = sorter.stats.spills;
        assert!(
            spills >= 2 && sorter.pool_bytes > 0,
            "{spills} spills, a tail held"
        );
        let s = sorter.finish().unwrap();
        assert_eq!(s.stats().spills, spills + 1);
        assert_eq!(s.runs_in_memory(), 0);
        assert_eq!(drain(s, 100), expected(&rows));
        // Nothing spilled: the batches stay in memory.
        let mut sorter = RunSorter::new(Table::Region, options(usize::MAX, tmp.path()));
        for c in rows.chunks(100) {
            sorter.push(batch(c)).unwrap();
        }
        let s = sorter.finish().unwrap();
        assert_eq!((s.stats().spills, s.runs_in_memory()), (0, 28));
        assert_eq!(drain(s, 100), expected(&rows));
    }

    /// `settle` writes what is held once something went to disk, and keeps in memory
    /// what never passed the budget; the rows come out the same either way (D162).
    #[test]
    fn settling_writes_the_held_rows_only_once_a_run_went_to_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let rows: Vec<_> = (0..2_800).map(|i| ((i * 7919) % 2_800, 5_000, i)).collect();
        let one = batch(&rows[..100]).get_array_memory_size();
        // Under the budget: settling keeps the batches held, and no file is made.
        let mut sorter = RunSorter::new(Table::Region, options(usize::MAX, tmp.path()));
        for c in rows.chunks(100) {
            sorter.push(batch(c)).unwrap();
            sorter.settle().unwrap();
        }
        assert_eq!((sorter.stats.spills, entries(tmp.path())), (0, 0));
        let s = sorter.finish().unwrap();
        assert_eq!(s.runs_in_memory(), 28);
        assert_eq!(drain(s, 100), expected(&rows));
        // Past the budget: a tail is held until settled, then nothing is.
        let mut sorter = RunSorter::new(Table::Region, options(one, tmp.path()));
        let mut chunks = rows.chunks(100);
        while sorter.stats.spills == 0 || sorter.pool_bytes == 0 {
            sorter.push(batch(chunks.next().unwrap())).unwrap();
        }
        let spills = sorter.stats.spills;
        sorter.settle().unwrap();
        assert_eq!((sorter.stats.spills, sorter.pool_bytes), (spills + 1, 0));
        sorter.settle().unwrap();
        assert_eq!(
            sorter.stats.spills,
            spills + 1,
            "nothing held, nothing written"
        );
        for c in chunks {
            sorter.push(batch(c)).unwrap();
        }
        let s = sorter.finish().unwrap();
        assert_eq!(s.runs_in_memory(), 0);
        assert_eq!(drain(s, 100), expected(&rows));
    }

    #[test]
    fn many_runs_merge_down_to_the_fan_in_and_keep_ties_in_input_order() {
        let tmp = tempfile::tempdir().unwrap();
        // 100 batches, each starting before the previous one ended: 100 run files.
        // Every key repeats across runs, so input order decides among them.
        let mut rows = Vec::new();
        let mut sorter = RunSorter::new(Table::Region, options(1, tmp.path()));
        for r in 0..100i64 {
            let chunk: Vec<_> = (0..10)
                .map(|k| (100 - r % 7 - k, 200 - k, rows.len() as i64 + k))
                .collect();
            rows.extend(chunk.iter().copied());
            sorter.push(batch(&chunk)).unwrap();
        }
        let s = sorter.finish().unwrap();
        // Three merges of fresh runs (32, 32, then 7) leave 32 files: 100 -> 69 -> 38 -> 32.
        assert_eq!(s.stats().spills, 100);
        assert_eq!(s.stats().merges, 3);
        assert_eq!(s.stats().spilled_runs, 103);
        assert_eq!(entries(tmp.path()), 1, "one run directory");
        let run_dir = std::fs::read_dir(tmp.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(
            entries(&run_dir.path()),
            32,
            "the merged files replaced theirs"
        );
        assert_eq!(drain(s, 100), expected(&rows));
        assert_eq!(entries(tmp.path()), 0);
    }

    #[test]
    fn dropped_sorter_leaves_nothing_and_empty_input_streams_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let mut sorter = RunSorter::new(Table::Region, options(1, tmp.path()));
        sorter.push(batch(&[(5, 6, 0), (1, 2, 1)])).unwrap();
        sorter.push(batch(&[(0, 2, 2)])).unwrap();
        assert_eq!(entries(tmp.path()), 1);
        let registered = cleanup::registered();
        assert!(registered.iter().any(|p| p.starts_with(tmp.path())));
        drop(sorter);
        assert_eq!(entries(tmp.path()), 0);
        assert!(!cleanup::registered()
            .iter()
            .any(|p| p.starts_with(tmp.path())));

        let mut empty = RunSorter::new(Table::Region, options(1, tmp.path()));
        empty.push(batch(&[])).unwrap();
        let mut s = empty.finish().unwrap();
        assert!(s.next_batch().unwrap().is_none());
        assert_eq!(entries(tmp.path()), 0, "no directory for nothing spilled");
    }

    #[test]
    fn a_run_file_cut_short_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let rows: Vec<_> = (0..2_000).map(|i| ((i * 7919) % 2_000, 5_000, i)).collect();
        let one = batch(&rows[..100]).get_array_memory_size();
        let mut sorter = RunSorter::new(Table::Region, options(one * 3, tmp.path()));
        for c in rows.chunks(100) {
            sorter.push(batch(c)).unwrap();
        }
        let mut s = sorter.finish().unwrap();
        assert!(s.stats().spills >= 2);
        // Every run file loses its second half while the merge has them open.
        let mut cut = Vec::new();
        for dir in std::fs::read_dir(tmp.path()).unwrap() {
            for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
                let path = f.unwrap().path();
                let len = std::fs::metadata(&path).unwrap().len();
                let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                file.set_len(len / 2).unwrap();
                cut.push(path);
            }
        }
        assert!(!cut.is_empty());
        let err = loop {
            match s.next_batch() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("a cut run read to its end"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(err.contains("cannot read a sort run"), "{err}");
        assert!(
            cut.iter().any(|p| err.contains(&p.display().to_string())),
            "{err}"
        );
    }

    #[test]
    fn an_unwritable_spill_directory_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("missing");
        let mut sorter = RunSorter::new(Table::Region, options(1, &missing));
        let err = sorter.push(batch(&[(1, 2, 0)])).unwrap_err().to_string();
        assert!(
            err.contains("missing") && err.contains("sort runs"),
            "{err}"
        );
    }
}
