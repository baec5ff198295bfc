//! Event streams for programs: the inputs' events in time order, as owned iterators of
//! chunks or, per table, as an Arrow [`RecordBatchReader`].
//!
//! The decoding runs on threads of its own, behind a bounded channel, so the consumer
//! holds a few chunks at most; dropping the iterator stops the decoding.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use rocpd_model::{Catalog, Error, Projection, Result, Table};
use rocpd_pipeline::{Chunk, Message, ProduceOptions, StageDrop};

use crate::window::Selection;
use crate::Inputs;

/// Which events a stream yields, and how it decodes them.
#[derive(Debug, Clone)]
pub struct EventOptions {
    /// Which events to keep (filters and time window, as for a conversion).
    pub selection: Selection,
    /// Which columns to fill (the others are null); see [`Projection`]. The columns the
    /// filters and the window read are filled too.
    pub projection: Projection,
    /// Decode threads.
    pub threads: usize,
    /// The tables to read; `None` for all. [`Inputs::events`] reads its table only. A
    /// stage that needs every table ([`rocpd_pipeline::Stage::needs_every_table`]: filter
    /// rules) reads them all anyway, and the others are left out after it.
    pub tables: Option<Vec<Table>>,
}

impl Default for EventOptions {
    fn default() -> Self {
        EventOptions {
            selection: Selection::default(),
            projection: Projection::all(),
            threads: crate::default_threads(),
            tables: None,
        }
    }
}

/// Chunks of events in time order (see [`rocpd_pipeline::Chunk`]): every row of a chunk
/// starts no later than any row of the next.
pub struct Chunks {
    rx: Option<Receiver<Result<Chunk>>>,
    worker: Option<JoinHandle<()>>,
    catalog: Arc<Catalog>,
    dropped: Arc<Mutex<Vec<StageDrop>>>,
}

impl Chunks {
    /// The catalog the rows' `source` and ids refer to.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Rows read but not yielded (removed by the filter or window, or without a time),
    /// complete once the iterator has ended.
    pub fn dropped(&self) -> Vec<StageDrop> {
        self.dropped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Iterator for Chunks {
    type Item = Result<Chunk>;

    fn next(&mut self) -> Option<Result<Chunk>> {
        let r = self.rx.as_ref()?.recv().ok();
        if r.is_none() {
            // The producer ended: wait for it, so dropped counts are complete.
            self.rx = None;
            if let Some(w) = self.worker.take() {
                let _ = w.join();
            }
        }
        r
    }
}

impl Drop for Chunks {
    fn drop(&mut self) {
        // Closing the channel makes the producer stop at its next send.
        self.rx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// The batches of one table, in time order, as an Arrow reader.
pub struct TableReader {
    chunks: Chunks,
    table: Table,
    pending: std::collections::VecDeque<RecordBatch>,
    /// The columns yielded, by index into the table's schema (`None`: all of them).
    columns: Option<Vec<usize>>,
    schema: SchemaRef,
}

impl TableReader {
    /// Rows read but not yielded (see [`Chunks::dropped`]).
    pub fn dropped(&self) -> Vec<StageDrop> {
        self.chunks.dropped()
    }

    /// Yields only these columns of the table, in this order; an unknown or repeated
    /// name is refused, naming the table's columns. Ask the stream for them too
    /// ([`Projection::only`]) so the others are not built at all.
    pub fn with_columns<S: AsRef<str>>(mut self, names: &[S]) -> Result<Self> {
        let schema = self.table.schema();
        let mut indices = Vec::with_capacity(names.len());
        for n in names {
            let n = n.as_ref();
            // The schema's fields are the table's columns, in order.
            let i = self.table.find_column(n)?;
            if indices.contains(&i) {
                return Err(Error::Usage(format!("column {n:?} is asked for twice")));
            }
            indices.push(i);
        }
        self.schema = Arc::new(schema.project(&indices)?);
        self.columns = Some(indices);
        Ok(self)
    }
}

impl Iterator for TableReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Some(Ok(b));
            }
            match self.chunks.next()? {
                Ok(chunk) => {
                    let batch = match (table_rows(&chunk, self.table), &self.columns) {
                        (None, _) => continue,
                        (Some(Ok(b)), Some(c)) => b.project(c),
                        (Some(b), _) => b,
                    };
                    match batch {
                        Ok(b) => self.pending.push_back(b),
                        Err(e) => return Some(Err(e)),
                    }
                }
                Err(e) => return Some(Err(ArrowError::ExternalError(Box::new(e)))),
            }
        }
    }
}

/// The rows of `table` in `chunk` as one batch in time order ([`Chunk::time_order`]), or
/// `None` when it has none. A chunk bounds when its rows start, not how its streams'
/// batches interleave: with several inputs it holds one batch per stream, which overlap.
fn table_rows(chunk: &Chunk, table: Table) -> Option<std::result::Result<RecordBatch, ArrowError>> {
    let mut position = vec![None; chunk.batches.len()];
    let mut mine: Vec<&RecordBatch> = Vec::new();
    for (i, b) in chunk.batches.iter().enumerate() {
        if b.table == table && b.batch.num_rows() > 0 {
            position[i] = Some(mine.len());
            mine.push(&b.batch);
        }
    }
    match mine.len() {
        0 => None,
        1 => Some(Ok(mine[0].clone())),
        _ => {
            let order: Vec<(usize, usize)> = chunk
                .time_order()
                .filter_map(|(b, r)| position[b].map(|p| (p, r)))
                .collect();
            Some(arrow_select::interleave::interleave_record_batch(
                &mine, &order,
            ))
        }
    }
}

impl RecordBatchReader for TableReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Inputs {
    /// Streams the events of every table, in time order.
    ///
    /// ```
    /// # fn main() -> rocpd::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let cfg = rocpd_gen::GenConfig { processes: 1, iterations: 2, ..Default::default() };
    /// # let db = rocpd_gen::generate(&cfg, dir.path()).unwrap().remove(0);
    /// let mut inputs = rocpd::Inputs::open(&[&db], &Default::default())?;
    /// let mut rows = 0;
    /// for chunk in inputs.chunks(&Default::default())? {
    ///     rows += chunk?.rows();
    /// }
    /// assert_eq!(rows as u64, inputs.count_rows()?.values().sum::<u64>());
    /// # Ok(()) }
    /// ```
    pub fn chunks(&mut self, options: &EventOptions) -> Result<Chunks> {
        let window = options.selection.resolve(self)?;
        let mut stages = options.selection.stages(window);
        let catalog = self.catalog().clone();
        let keep = self.keepalive();
        let projection = stages
            .iter()
            .fold(options.projection.clone(), |p, s| p.union(&s.projection()));
        // Read every table for such a stage, and leave the unwanted ones out after it.
        let every_table = stages.iter().any(|s| s.needs_every_table());
        let (tables, wanted) = match options.tables.clone() {
            Some(t) if every_table => (None, Some(t)),
            t => (t, None),
        };
        let produce = ProduceOptions {
            projection,
            threads: options.threads.max(1),
            tables,
            ..Default::default()
        };
        let (tx, rx) = sync_channel::<Result<Chunk>>(2);
        let dropped: Arc<Mutex<Vec<StageDrop>>> = Arc::default();
        let record = dropped.clone();
        let cat = catalog.clone();
        let worker = std::thread::Builder::new()
            .name("rocpd-events".into())
            .spawn(move || {
                let stopped = || Error::Usage("stopped: the reader was dropped".into());
                let mut reader_drops = Vec::new();
                let mut run = || -> Result<()> {
                    for s in &mut stages {
                        s.begin(&cat)?;
                    }
                    let mut sources = (0..keep.dbs.len())
                        .map(|k| keep.open(k))
                        .collect::<Result<Vec<_>>>()?;
                    rocpd_pipeline::produce_events(&mut sources, &produce, &mut |m| match m {
                        Message::Chunk(mut c) => {
                            rocpd_pipeline::cleanup::check_cancelled()?;
                            for s in &mut stages {
                                c = s.apply(c)?;
                            }
                            if let Some(t) = &wanted {
                                c.batches.retain(|b| t.contains(&b.table));
                            }
                            tx.send(Ok(c)).map_err(|_| stopped())
                        }
                        Message::Dropped(d) => {
                            reader_drops.push(d);
                            Ok(())
                        }
                        Message::Catalog(_) => Ok(()),
                    })
                };
                let result = run();
                let mut all = std::mem::take(&mut reader_drops);
                for s in &stages {
                    let rows = s.dropped();
                    if rows.values().any(|&n| n > 0) {
                        all.push(StageDrop {
                            stage: s.name(),
                            rows,
                        });
                    }
                }
                *record.lock().unwrap_or_else(|p| p.into_inner()) = all;
                if let Err(e) = result {
                    let _ = tx.send(Err(e));
                }
            })
            .map_err(|e| Error::Usage(format!("cannot start a decode thread: {e}")))?;
        Ok(Chunks {
            rx: Some(rx),
            worker: Some(worker),
            catalog,
            dropped,
        })
    }

    /// Streams the rows of one table, in time order, as an Arrow reader (every batch
    /// has the table's schema, [`Table::schema`]).
    pub fn events(&mut self, table: Table, options: &EventOptions) -> Result<TableReader> {
        let options = EventOptions {
            tables: Some(vec![table]),
            ..options.clone()
        };
        Ok(TableReader {
            chunks: self.chunks(&options)?,
            table,
            pending: Default::default(),
            columns: None,
            schema: table.schema(),
        })
    }
}
