//! The driver: runs a producer (readers + merge) into stages and sinks.

use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::time::Instant;

use rocpd_model::{Catalog, Error, Projection, Result, Table};

use crate::{Chunk, OutputReport, RunReport, StageDrop, TableCounts};

/// What a producer emits: the catalog once, first, then chunks in time order.
#[derive(Debug)]
pub enum Message {
    /// Dimension data of all inputs.
    Catalog(Arc<Catalog>),
    /// The next time slab of events.
    Chunk(Chunk),
    /// Rows a reader read but cannot place in the stream (e.g. counter values without a
    /// timestamp): counted as read and as dropped by the reader in the report.
    Dropped(StageDrop),
}

/// A transformation of chunks (filter, window, ...). Rows it removes must be counted and
/// returned by [`Stage::dropped`]: nothing is lost silently.
pub trait Stage: Send {
    /// Name shown in the report.
    fn name(&self) -> String;
    /// Called once with the catalog, before any chunk.
    fn begin(&mut self, _catalog: &Arc<Catalog>) -> Result<()> {
        Ok(())
    }
    /// Transforms one chunk; chunks must stay in time order.
    fn apply(&mut self, chunk: Chunk) -> Result<Chunk>;
    /// Rows removed so far, per table.
    fn dropped(&self) -> TableCounts;
    /// The columns this stage reads (see [`Sink::projection`]); all unless it says otherwise.
    fn projection(&self) -> Projection {
        Projection::all()
    }
    /// Whether what it does to one table's rows depends on the rows of others (the filter
    /// clears the launch marks of kernels whose API calls it removed), so a run that
    /// wants one table must still read every table through it.
    fn needs_every_table(&self) -> bool {
        false
    }
}

/// A writer. The driver calls `begin` once, `write` for every chunk, then `finish`, which
/// must be called for the output to exist: dropping a sink abandons its output.
pub trait Sink {
    /// Receives the catalog before any event.
    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()>;
    /// Receives one chunk.
    fn write(&mut self, chunk: &Chunk) -> Result<()>;
    /// Completes every output and reports what was written.
    fn finish(self: Box<Self>) -> Result<Vec<OutputReport>>;
    /// The columns this sink reads; readers leave the others null. All, unless a sink
    /// says otherwise.
    fn projection(&self) -> Projection {
        Projection::all()
    }
    /// Whether the sink needs the rows of all inputs in one global time order (a
    /// timeline), or can take the inputs one after another, each in its own time order
    /// (statistics, tables): then a run needs only a few inputs open at a time.
    fn needs_time_order(&self) -> bool {
        true
    }
    /// Whether the sink reads the rows of `table` at all; a run whose sinks all pass
    /// over a table does not read it (unless a stage needs every table). All, unless a
    /// sink says otherwise.
    fn reads_table(&self, _table: Table) -> bool {
        true
    }
    /// Whether `finish` commits into something other runs share (a dataset appended
    /// to), which cannot be taken back: the driver finishes such sinks after the others,
    /// so that a failure of another output leaves them uncommitted.
    fn commits_shared(&self) -> bool {
        false
    }
    /// Completes the writing but not the commit: files closed, buffers freed; `finish`
    /// then only commits. A split seals a part it is done with when the part commits into
    /// a shared dataset, and commits every part at its own end, so that a run that fails
    /// (or is interrupted) before then has committed nothing.
    fn seal(&mut self) -> Result<()> {
        Ok(())
    }
    /// After [`Sink::seal`]: what `finish` checks before its commit's first step (the
    /// places it writes, the dataset's state), so that a split can check every part
    /// before it commits any.
    fn check_commit(&self) -> Result<()> {
        Ok(())
    }
}

/// How the driver runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Decode on a thread of its own, behind a bounded channel.
    pub decode_thread: bool,
    /// Chunks in flight between the decode thread and the writers.
    pub channel_capacity: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            decode_thread: true,
            channel_capacity: 2,
        }
    }
}

/// Progress information passed to the caller's callback after every chunk.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Rows read so far.
    pub rows: u64,
    /// Start time of the latest row read.
    pub time: Option<i64>,
    /// Time span of the inputs, from the catalog.
    pub span: Option<(i64, i64)>,
}

struct Consumer<'s> {
    stages: Vec<Box<dyn Stage>>,
    sinks: Vec<Box<dyn Sink>>,
    report: RunReport,
    progress: Progress,
    on_progress: &'s mut dyn FnMut(&Progress),
    begun: bool,
}

impl Consumer<'_> {
    fn accept(&mut self, msg: Message) -> Result<()> {
        crate::cleanup::check_cancelled()?;
        match msg {
            Message::Catalog(catalog) => {
                self.progress.span = catalog.time_span();
                for s in &mut self.stages {
                    s.begin(&catalog)?;
                }
                for s in &mut self.sinks {
                    s.begin(&catalog)?;
                }
                self.begun = true;
            }
            Message::Chunk(mut chunk) => {
                if !self.begun {
                    return Err(Error::Usage("internal: events before the catalog".into()));
                }
                for (t, n) in chunk.rows_per_table() {
                    *self.report.rows_in.entry(t.name()).or_default() += n as u64;
                }
                self.progress.rows += chunk.rows() as u64;
                self.progress.time = chunk.max_start().or(self.progress.time);
                for s in &mut self.stages {
                    chunk = s.apply(chunk)?;
                }
                for s in &mut self.sinks {
                    s.write(&chunk)?;
                }
                (self.on_progress)(&self.progress);
            }
            Message::Dropped(d) => {
                // Read but not streamed: counted as read so that reads equal writes plus drops.
                for (t, n) in &d.rows {
                    *self.report.rows_in.entry(t).or_default() += n;
                }
                self.report.dropped.push(d);
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<RunReport> {
        let mut report = self.report;
        for s in &self.stages {
            let rows = s.dropped();
            if rows.values().any(|&n| n > 0) {
                report.dropped.push(StageDrop {
                    stage: s.name(),
                    rows,
                });
            }
        }
        crate::cleanup::check_cancelled()?;
        // Outputs of this run alone first: if one fails, those finished before it are
        // removed, and a shared dataset, finished last, has not been committed.
        let mut sinks = self.sinks;
        sinks.sort_by_key(|s| s.commits_shared());
        for s in sinks {
            match s.finish() {
                Ok(outputs) => report.outputs.extend(outputs),
                Err(e) => {
                    for o in &report.outputs {
                        crate::remove_output(o);
                    }
                    return Err(e);
                }
            }
        }
        Ok(report)
    }
}

/// Runs `produce` (which emits the catalog, then chunks) through `stages` into `sinks`.
///
/// On any error the sinks are dropped unfinished, so their outputs are abandoned.
pub fn run<P>(
    produce: P,
    stages: Vec<Box<dyn Stage>>,
    sinks: Vec<Box<dyn Sink>>,
    options: &RunOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunReport>
where
    P: FnOnce(&mut dyn FnMut(Message) -> Result<()>) -> Result<()> + Send,
{
    let started = Instant::now();
    let mut consumer = Consumer {
        stages,
        sinks,
        report: RunReport::default(),
        progress: Progress::default(),
        on_progress,
        begun: false,
    };
    if options.decode_thread {
        let (tx, rx) = sync_channel::<Message>(options.channel_capacity.max(1));
        std::thread::scope(|scope| {
            let producer = scope.spawn(move || {
                produce(&mut |m| {
                    tx.send(m)
                        .map_err(|_| Error::Usage("stopped: the writers failed".into()))
                })
            });
            let mut consumed = Ok(());
            for msg in rx.iter() {
                consumed = consumer.accept(msg);
                if consumed.is_err() {
                    break;
                }
            }
            drop(rx);
            let produced = producer.join().unwrap_or_else(|_| {
                Err(Error::Usage("internal: the decode thread panicked".into()))
            });
            consumed?;
            produced
        })?;
    } else {
        produce(&mut |m| consumer.accept(m))?;
    }
    let mut report = consumer.finish()?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
