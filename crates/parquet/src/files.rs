//! The part files of the event tables: at most `max_open_files` open writers (least
//! recently used closed first), rolled over after `max_rows_per_file` rows.
//!
//! Rows wait as Arrow batches until a whole row group of them is there, and are then
//! encoded in one go. The Parquet encoder's state (a compression context, a dictionary
//! and page buffers per column, about 200 KiB a column) then exists for one table at a
//! time instead of for every column of every open file at once, which is what made
//! memory grow with the trace. The waiting rows are bounded in bytes over all files
//! ([`FileSet::new`]'s `buffer_bytes`): past it, the file with the most waiting rows
//! writes them as a shorter row group.

use rocpd_model::hash::FastMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use rocpd_model::{Error, Result, Table};

use crate::schema::table_dir;

/// The name of part `n` of a run: `part-<run>-<n>.parquet`. The run id makes the names
/// of concurrent writers distinct; the number orders one run's parts of a directory.
pub(crate) fn part_name(run: &str, n: u32) -> String {
    format!("part-{run}-{n:05}.parquet")
}

/// Creates a file that must not exist yet: a run never replaces a file, its own or
/// another writer's.
pub(crate) fn create_new(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::output(path, format!("cannot create: {e}")))
}

/// How one table's files are written.
pub(crate) struct TableFiles {
    /// Schema of the files.
    pub schema: SchemaRef,
    /// Columns of the table's full layout that go into the files, in file order.
    pub projection: Vec<usize>,
    pub props: WriterProperties,
    /// Positions of `start_ns` and `end_ns` in the file schema.
    pub start: usize,
    pub end: usize,
}

/// The bounds a [`FileSet`] keeps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub row_group_rows: usize,
    pub max_rows_per_file: u64,
    pub max_open_files: usize,
    pub buffer_bytes: usize,
}

/// The bytes the rows of `batch` occupy (its slice of each buffer, not the buffer), and
/// the bytes of the buffers it keeps alive. A dictionary column counts its keys' slice
/// and the values of its dictionary its rows use: the name columns are
/// dictionaries built per batch (their distinct names), which every slice of the batch
/// keeps whole. Counted by keys alone, one name of megabytes on every row let thousands
/// of one-row batches wait, each with its own copy of it (24 GB for a 7 MiB kernel name
/// on 5,450 dispatches); counted whole in every slice, the partitions of one batch
/// counted it once each and wrote row groups of three rows (D156).
fn batch_bytes(batch: &RecordBatch) -> (usize, usize) {
    use arrow_array::Array;
    let mut rows = 0usize;
    let mut held = 0usize;
    for c in batch.columns() {
        let (c, values, share): (&dyn Array, usize, usize) = match c.as_any_dictionary_opt() {
            Some(d) => {
                let values = d.values().get_array_memory_size();
                let used = c
                    .as_dictionary_opt::<arrow_array::types::Int32Type>()
                    .and_then(used_text_bytes)
                    .unwrap_or(values);
                (d.keys(), values, used)
            }
            None => (c.as_ref(), 0, 0),
        };
        rows = rows
            .saturating_add(c.to_data().get_slice_memory_size().unwrap_or(0))
            .saturating_add(share);
        held = held
            .saturating_add(c.get_array_memory_size())
            .saturating_add(values);
    }
    (rows, held)
}

/// The bytes of the dictionary values `d`'s keys use (each once), when they are text.
fn used_text_bytes(
    d: &arrow_array::DictionaryArray<arrow_array::types::Int32Type>,
) -> Option<usize> {
    use arrow_array::Array;
    let values = d.values().as_string_opt::<i32>()?;
    let mut seen = vec![false; values.len()];
    let mut bytes = 0usize;
    for k in d.keys().iter().flatten() {
        let Some(k) = usize::try_from(k).ok().filter(|k| *k < values.len()) else {
            continue;
        };
        if !seen[k] {
            seen[k] = true;
            // The text and its offset.
            let len = usize::try_from(values.value_length(k)).unwrap_or(0);
            bytes = bytes.saturating_add(len + 4);
        }
    }
    Some(bytes)
}

/// `a` with a dictionary of only the values its keys use, when it is a dictionary of
/// strings (a slice of a batch keeps the batch's whole dictionary otherwise); `None` for
/// any other array.
fn own_dictionary(a: &arrow_array::ArrayRef) -> Option<arrow_array::ArrayRef> {
    use arrow_array::builder::StringDictionaryBuilder;
    use arrow_array::types::Int32Type;
    use arrow_array::Array;
    let d = a.as_dictionary_opt::<Int32Type>()?;
    let values = d.values().as_string_opt::<i32>()?;
    let mut b = StringDictionaryBuilder::<Int32Type>::with_capacity(d.len(), 16, 1024);
    for k in d.keys().iter() {
        match k.and_then(|k| usize::try_from(k).ok()) {
            Some(k) if k < values.len() && values.is_valid(k) => b.append_value(values.value(k)),
            _ => b.append_null(),
        }
    }
    Some(std::sync::Arc::new(b.finish()))
}

/// `batch` in buffers of its own when it is a small slice of larger ones (a chunk's
/// rows are slices of the reader's batches): waiting, it would otherwise keep the whole
/// of those alive, and the bound on waiting bytes would count them all.
fn compact(batch: RecordBatch) -> Result<(RecordBatch, usize)> {
    let (rows, held) = batch_bytes(&batch);
    if held <= 2 * rows + (64 << 10) {
        return Ok((batch, rows));
    }
    // Dictionaries of strings are rebuilt from the slice's keys; the rest copied.
    let all = arrow_array::UInt32Array::from_iter_values(0..batch.num_rows() as u32);
    let columns = batch
        .columns()
        .iter()
        .map(|c| match own_dictionary(c) {
            Some(own) => Ok(own),
            None => arrow_select::take::take(c, &all, None),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let own = RecordBatch::try_new(batch.schema(), columns)?;
    let (rows, _) = batch_bytes(&own);
    Ok((own, rows))
}

/// A finished part file.
#[derive(Debug, Clone)]
pub(crate) struct PartFile {
    pub table: Table,
    /// Path relative to the dataset directory, `/`-separated.
    pub rel: String,
    /// The hive partition directory inside the table (`node=a/pid=1`, or `""`).
    pub partition: String,
    pub rows: u64,
    pub bytes: u64,
    pub row_groups: usize,
    /// Earliest start and latest end in the file.
    pub span: (i64, i64),
    /// Latest start and earliest end in the file (with `span`: the min/max statistics
    /// of a Delta `add` action).
    pub inner: (i64, i64),
}

struct OpenPart {
    writer: ArrowWriter<BufWriter<File>>,
    rel: String,
    path: PathBuf,
    /// Rows taken, waiting ones included.
    rows: u64,
    /// Rows of the next row group, not encoded yet.
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    pending_bytes: usize,
    last_used: u64,
    span: (i64, i64),
    inner: (i64, i64),
}

/// Where the next rows of a (table, partition) go, and what it has written so far.
#[derive(Default)]
struct KeyState {
    next_part: u32,
    /// Start time of the last row written, to keep every file sorted.
    last_start: Option<i64>,
}

type Key = (Table, String);

pub(crate) struct FileSet {
    root: PathBuf,
    /// The run id, part of every file name so that concurrent writers never collide.
    run: String,
    tables: Vec<TableFiles>,
    max_rows_per_file: u64,
    max_open_files: usize,
    row_group_rows: usize,
    /// Bound on the waiting rows of all open files, in bytes.
    buffer_bytes: usize,
    pending_total: usize,
    open: FastMap<Key, OpenPart>,
    keys: FastMap<Key, KeyState>,
    tick: u64,
    pub done: Vec<PartFile>,
    /// Part files finished early because too many were open.
    pub evictions: u64,
    /// Part files started because rows arrived out of start order.
    pub order_breaks: u64,
}

impl FileSet {
    /// `tables[t as usize]` says how the files of table `t` are written. Rows are
    /// encoded a row group (`row_group_rows`) at a time; at most `buffer_bytes` of rows
    /// wait over all files.
    pub(crate) fn new(root: &Path, run: &str, tables: Vec<TableFiles>, limits: Limits) -> Self {
        FileSet {
            root: root.to_path_buf(),
            run: run.to_string(),
            tables,
            max_rows_per_file: limits.max_rows_per_file.max(1),
            max_open_files: limits.max_open_files.max(1),
            row_group_rows: limits.row_group_rows.max(1),
            buffer_bytes: limits.buffer_bytes,
            pending_total: 0,
            open: FastMap::default(),
            keys: FastMap::default(),
            tick: 0,
            done: Vec::new(),
            evictions: 0,
            order_breaks: 0,
        }
    }

    /// Appends rows (full dataset layout of `table`, sorted by `start_ns`) to the
    /// partition directory `dir` (`""` without partitioning).
    pub(crate) fn append(&mut self, table: Table, dir: &str, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let tf = &self.tables[table as usize];
        let (start_col, end_col) = (tf.start, tf.end);
        let batch = if tf.projection.len() == batch.num_columns() {
            batch
        } else {
            batch.project(&tf.projection)?
        };
        let key: Key = (table, dir.to_string());
        let starts = batch
            .column(start_col)
            .as_primitive::<Int64Type>()
            .values()
            .clone();
        let last = self.keys.entry(key.clone()).or_default().last_start;
        if last.is_some_and(|last| starts[0] < last) && self.open.contains_key(&key) {
            // Never write a file out of order: start a new part instead.
            self.order_breaks += 1;
            self.close(&key)?;
        }
        self.keys.get_mut(&key).expect("inserted").last_start = Some(starts[starts.len() - 1]);
        let mut rest = batch;
        let mut offset = 0;
        while rest.num_rows() > 0 {
            if !self.open.contains_key(&key) {
                self.open_part(&key)?;
            }
            self.tick += 1;
            let part = self.open.get_mut(&key).expect("opened");
            let room = (self.max_rows_per_file - part.rows).min(rest.num_rows() as u64) as usize;
            let head = rest.slice(0, room);
            let ends = head.column(end_col).as_primitive::<Int64Type>().values();
            let max_end = ends.iter().copied().max().expect("rows");
            let min_end = ends.iter().copied().min().expect("rows");
            part.span = (part.span.0.min(starts[offset]), part.span.1.max(max_end));
            part.inner = (
                part.inner.0.max(starts[offset + room - 1]),
                part.inner.1.min(min_end),
            );
            part.rows += room as u64;
            part.last_used = self.tick;
            let (head, bytes) = compact(head)?;
            part.pending_rows += head.num_rows();
            part.pending_bytes += bytes;
            part.pending.push(head);
            self.pending_total += bytes;
            let full = part.rows >= self.max_rows_per_file;
            let group = part.pending_rows >= self.row_group_rows;
            rest = rest.slice(room, rest.num_rows() - room);
            offset += room;
            if full {
                self.close(&key)?;
            } else if group {
                self.encode(&key, false)?;
            }
        }
        while self.pending_total > self.buffer_bytes {
            let Some(largest) = self
                .open
                .iter()
                .filter(|(_, p)| p.pending_bytes > 0)
                .max_by_key(|(_, p)| p.pending_bytes)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.encode(&largest, true)?;
        }
        Ok(())
    }

    /// Encodes waiting rows of `key`'s open file as row groups and drops the encoder
    /// state: all of them (`whole`: the file ends, or the waiting rows are over their
    /// bound; the last row group may be short), or else only whole row groups
    /// (`row_group_rows` each), the rest waiting on.
    fn encode(&mut self, key: &Key, whole: bool) -> Result<()> {
        let group = self.row_group_rows;
        let Some(part) = self.open.get_mut(key) else {
            return Ok(());
        };
        let mut todo = if whole {
            part.pending_rows
        } else {
            part.pending_rows / group * group
        };
        if todo == 0 {
            return Ok(());
        }
        let failed =
            |e: &dyn std::fmt::Display| Error::output(&part.path, format!("write failed: {e}"));
        let mut rest = Vec::new();
        for b in std::mem::take(&mut part.pending) {
            if todo == 0 {
                rest.push(b);
                continue;
            }
            let n = b.num_rows().min(todo);
            part.writer.write(&b.slice(0, n)).map_err(|e| failed(&e))?;
            todo -= n;
            if n < b.num_rows() {
                rest.push(b.slice(n, b.num_rows() - n));
            }
        }
        part.writer.flush().map_err(|e| failed(&e))?;
        let (rows, bytes) = rest.iter().fold((0, 0), |(r, by), b| {
            (r + b.num_rows(), by + batch_bytes(b).0)
        });
        self.pending_total = self.pending_total - part.pending_bytes + bytes;
        part.pending = rest;
        part.pending_rows = rows;
        part.pending_bytes = bytes;
        Ok(())
    }

    fn open_part(&mut self, key: &Key) -> Result<()> {
        if self.open.len() >= self.max_open_files {
            let lru = self
                .open
                .iter()
                .min_by_key(|(_, p)| p.last_used)
                .map(|(k, _)| k.clone())
                .expect("some file is open");
            self.evictions += 1;
            self.close(&lru)?;
        }
        let state = self.keys.entry(key.clone()).or_default();
        let n = state.next_part;
        state.next_part += 1;
        let (table, dir) = key;
        let mut rel = table_dir(*table).to_string();
        if !dir.is_empty() {
            rel.push('/');
            rel.push_str(dir);
        }
        let dir_path = self.root.join(&rel);
        std::fs::create_dir_all(&dir_path)
            .map_err(|e| Error::output(&dir_path, format!("cannot create directory: {e}")))?;
        rel.push_str(&format!("/{}", part_name(&self.run, n)));
        let path = self.root.join(&rel);
        let file = create_new(&path)?;
        let writer = ArrowWriter::try_new(
            BufWriter::with_capacity(1 << 16, file),
            self.tables[*table as usize].schema.clone(),
            Some(self.tables[*table as usize].props.clone()),
        )
        .map_err(|e| Error::output(&path, e))?;
        self.open.insert(
            key.clone(),
            OpenPart {
                writer,
                rel,
                path,
                rows: 0,
                pending: Vec::new(),
                pending_rows: 0,
                pending_bytes: 0,
                last_used: self.tick,
                span: (i64::MAX, i64::MIN),
                inner: (i64::MIN, i64::MAX),
            },
        );
        Ok(())
    }

    fn close(&mut self, key: &Key) -> Result<()> {
        self.encode(key, true)?;
        let Some(mut part) = self.open.remove(key) else {
            return Ok(());
        };
        let failed =
            |e: &dyn std::fmt::Display| Error::output(&part.path, format!("write failed: {e}"));
        // `into_inner` flushes the last row group and writes the footer (page indexes,
        // metadata); calling `finish` first would write the footer twice.
        part.writer.flush().map_err(|e| failed(&e))?;
        let row_groups = part.writer.flushed_row_groups().len();
        let file = part
            .writer
            .into_inner()
            .map_err(|e| failed(&e))?
            .into_inner()
            .map_err(|e| failed(e.error()))?;
        file.sync_all().map_err(|e| failed(&e))?;
        let bytes = file.metadata().map_err(|e| failed(&e))?.len();
        self.done.push(PartFile {
            table: key.0,
            rel: part.rel,
            partition: key.1.clone(),
            rows: part.rows,
            bytes,
            row_groups,
            span: part.span,
            inner: part.inner,
        });
        Ok(())
    }

    /// Finishes every open file.
    pub(crate) fn close_all(&mut self) -> Result<()> {
        let mut keys: Vec<Key> = self.open.keys().cloned().collect();
        keys.sort();
        for k in keys {
            self.close(&k)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn a_small_slice_waits_in_buffers_of_its_own_and_counts_its_rows_only() {
        let n = 100_000;
        let big = RecordBatch::try_from_iter([
            (
                "start_ns",
                Arc::new(Int64Array::from_iter_values(0..n)) as arrow_array::ArrayRef,
            ),
            (
                "args",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("{{\"arg\": {i}}}")),
                )),
            ),
        ])
        .unwrap();
        let slice = big.slice(500, 10);
        let (rows, held) = batch_bytes(&slice);
        assert!(rows < 1000, "{rows} bytes for 10 rows");
        assert!(held > 1_000_000, "the slice keeps the big buffers: {held}");
        let (own, counted) = compact(slice.clone()).unwrap();
        assert_eq!(counted, batch_bytes(&own).0);
        assert!(counted <= rows, "{counted} > {rows}");
        assert_eq!(own, slice, "same rows");
        assert!(batch_bytes(&own).1 < 64 << 10, "{:?}", batch_bytes(&own));
        // A batch that is (most of) its buffers is kept as it is.
        let (same, _) = compact(big.clone()).unwrap();
        assert!(same.column(0).to_data().ptr_eq(&big.column(0).to_data()));
    }

    /// A dictionary column counts its dictionary: a batch's names of megabytes are
    /// waiting bytes, not just its keys (D156).
    #[test]
    fn a_dictionary_column_counts_its_values() {
        use arrow_array::builder::StringDictionaryBuilder;
        use arrow_array::types::Int32Type;
        let long = "k".repeat(7 << 20);
        let mut b = StringDictionaryBuilder::<Int32Type>::new();
        for _ in 0..3 {
            b.append_value(&long);
        }
        let batch =
            RecordBatch::try_from_iter([("name", Arc::new(b.finish()) as arrow_array::ArrayRef)])
                .unwrap();
        let (rows, held) = batch_bytes(&batch);
        assert!(rows >= 7 << 20, "{rows}");
        assert!(held >= rows);
        // One batch of a 7 MiB name on every row, the name once.
        let one = RecordBatch::try_from_iter([(
            "name",
            Arc::new({
                let mut b = StringDictionaryBuilder::<Int32Type>::new();
                b.append_value(&long);
                b.finish()
            }) as arrow_array::ArrayRef,
        )])
        .unwrap();
        assert!(batch_bytes(&one).0 >= 7 << 20);
        // Slices of a batch share its dictionary: each counts its share, and once
        // compacted owns a dictionary of its own names only.
        let mut b = StringDictionaryBuilder::<Int32Type>::new();
        for i in 0..4096 {
            b.append_value(format!("{i:>2048}"));
        }
        let wide =
            RecordBatch::try_from_iter([("name", Arc::new(b.finish()) as arrow_array::ArrayRef)])
                .unwrap();
        let whole = batch_bytes(&wide).0;
        let parts: usize = (0..4096)
            .step_by(4)
            .map(|i| compact(wide.slice(i, 4)).unwrap().1)
            .sum();
        assert!(parts <= whole + (whole / 4), "{parts} against {whole}");
        let (small, counted) = compact(wide.slice(8, 4)).unwrap();
        assert!(counted < 64 << 10, "{counted}");
        assert_eq!(small.column(0).as_any_dictionary().values().len(), 4);
        // A partition taken out of a batch (every 64th row of 300 names repeating): it
        // counts the names it uses, not the batch's dictionary.
        let mut b = StringDictionaryBuilder::<Int32Type>::new();
        for i in 0..8192 {
            b.append_value(format!("{:>2048}", i % 300));
        }
        let names =
            RecordBatch::try_from_iter([("name", Arc::new(b.finish()) as arrow_array::ArrayRef)])
                .unwrap();
        let rows = arrow_array::UInt32Array::from_iter_values((0..8192).step_by(64));
        let part = arrow_select::take::take_record_batch(&names, &rows).unwrap();
        let (rows, held) = batch_bytes(&part);
        assert!(rows < 128 * 2100, "{rows}: more than the part's 128 names");
        assert!(held > 300 * 2048, "{held}: the batch's dictionary is kept");
        let (own, counted) = compact(part).unwrap();
        assert!(counted <= rows);
        assert!(own.column(0).as_any_dictionary().values().len() <= 128);
    }
}
