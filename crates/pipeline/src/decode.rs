//! Parallel decode: the streams of many sources decoded on a pool of worker threads.
//!
//! Each source is owned by one worker (a SQLite connection must stay on one thread at a
//! time, and its statements with it); a source given more threads than one is read
//! through forks too ([`Source::fork`]: another connection), each owned by its own worker
//! and running some of the source's streams. These handles are dealt to workers in turn,
//! and every stream feeds a queue of at most [`QueueLimits::batches`] batches. All queues together
//! hold at most [`QueueLimits::bytes`], except that a stream whose queue is empty may always
//! take one batch: that is the stream the merge may be waiting for. A worker never blocks
//! while one of its streams has room: it decodes the next batch of its emptiest stream, so
//! the stream the merge is waiting for is served next and the pool cannot deadlock. The
//! merge reads the queues in the same order whatever the number of threads, so the output
//! does not depend on it. Memory is the byte budget, plus at most one batch per stream and
//! one being decoded per worker.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use arrow_array::RecordBatch;
use rocpd_model::{Error, Result, Table};

use crate::{BatchStream, Source, StageDrop, StreamOptions};

enum State {
    Running,
    Done,
    Failed(Option<Error>),
}

struct Slot {
    table: Table,
    /// The batches, each with its [`RecordBatch::get_array_memory_size`].
    queue: VecDeque<(RecordBatch, usize)>,
    state: State,
}

/// What one handle of a source gives once it is opened: the rows the source cannot place
/// in time (asked of its first handle only) and its streams (or, for each, the stream's
/// position among the source's streams and its slot).
type Opened<S> = (Vec<StageDrop>, Vec<S>);

/// Per handle of a source, once prepared: its streams' (position, slot), or why it could
/// not be prepared and where: 0 when asking what the source drops or preparing it
/// failed, a stream's position plus one when opening that stream failed.
type Handles = Vec<Option<std::result::Result<Opened<(usize, usize)>, (usize, Error)>>>;

#[derive(Default)]
struct Inner {
    slots: Vec<Slot>,
    /// Per source, its handles.
    prepared: Vec<Handles>,
    /// Set when the consumer is done (or failed): workers stop.
    stop: bool,
    /// Set when a worker panicked: the consumer stops waiting.
    panicked: bool,
    /// Bytes held by every queue together.
    queued_bytes: usize,
}

/// How much the pool may decode ahead of the merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimits {
    /// Batches queued per stream, at most.
    pub batches: usize,
    /// Bytes queued over all streams, at most (a stream with an empty queue may always
    /// take one batch).
    pub bytes: usize,
}

impl QueueLimits {
    /// Whether a stream with `len` queued batches may take one more now.
    fn has_room(&self, len: usize, queued_bytes: usize) -> bool {
        len == 0 || (len < self.batches && queued_bytes < self.bytes)
    }
}

struct Shared {
    inner: Mutex<Inner>,
    /// Signalled when a batch is queued, a stream ends or a source is prepared.
    data: Condvar,
    /// Signalled when the consumer takes a batch, or stops.
    room: Condvar,
    limits: QueueLimits,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock means a worker panicked; its thread's join reports it.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A stream whose batches a worker decodes.
struct QueuedStream {
    shared: Arc<Shared>,
    slot: usize,
    table: Table,
}

impl BatchStream for QueuedStream {
    fn table(&self) -> Table {
        self.table
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let mut inner = self.shared.lock();
        loop {
            let slot = &mut inner.slots[self.slot];
            if let Some((b, bytes)) = slot.queue.pop_front() {
                inner.queued_bytes -= bytes;
                drop(inner);
                self.shared.room.notify_all();
                return Ok(Some(b));
            }
            if inner.panicked {
                return Err(panicked());
            }
            let slot = &mut inner.slots[self.slot];
            match &mut slot.state {
                State::Done => return Ok(None),
                State::Failed(e) => {
                    return Err(e.take().unwrap_or_else(|| {
                        Error::Usage("internal: a decode error was read twice".into())
                    }))
                }
                State::Running => inner = wait(&self.shared.data, inner),
            }
        }
    }
}

fn panicked() -> Error {
    Error::Usage("internal: a decode thread panicked".into())
}

/// Tells the consumer when its worker unwinds, so that it never waits for batches that
/// will not come.
struct PanicFlag<'a>(&'a Shared);

impl Drop for PanicFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().panicked = true;
            self.0.data.notify_all();
        }
    }
}

fn wait<'a>(cv: &Condvar, guard: MutexGuard<'a, Inner>) -> MutexGuard<'a, Inner> {
    cv.wait(guard).unwrap_or_else(|p| p.into_inner())
}

/// A source as the pool receives it: its position in the run and its first source number.
pub type Numbered = (u32, Box<dyn Source>);

/// One handle a worker runs: source `index`'s handle `part` of `parts` (part 0 is the
/// source itself, the others its forks), which opens the streams [`assigned`] to it.
struct Unit {
    index: usize,
    part: usize,
    parts: usize,
    first: u32,
    source: Box<dyn Source>,
}

/// The positions (among `weights`) of the streams handle `part` of `parts` runs: the
/// heaviest stream first, each to the handle with the least weight so far (the first such
/// on ties). Every handle computes the same split from the same weights.
fn assigned(weights: &[u64], parts: usize, part: usize) -> Vec<usize> {
    if parts <= 1 {
        return (0..weights.len()).collect();
    }
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&k| (std::cmp::Reverse(weights[k]), k));
    let mut load = vec![0u64; parts];
    let mut mine = Vec::new();
    for k in order {
        let to = (0..parts).min_by_key(|&p| (load[p], p)).unwrap_or(0);
        load[to] = load[to].saturating_add(weights[k].max(1));
        if to == part {
            mine.push(k);
        }
    }
    mine.sort_unstable();
    mine
}

/// Decodes the streams of `sources` on `threads` workers and calls `consume` with the
/// rows every source cannot place in time ([`Source::dropped`], in source order) and every
/// stream, in source order and, within a source, in the order its `prepare` gives them.
/// The sources are given back, in their order, when `consume` returns.
///
/// With fewer sources than threads, a source that can be forked ([`Source::fork`]) is
/// read through several handles, each on its own worker running some of its streams,
/// balanced by [`PreparedStream::weight`](crate::PreparedStream::weight): one large
/// database then decodes on more than one core. The streams and their order are the
/// same, so the output does not depend on it.
///
/// `dropped` and the opening of streams run on the workers too: for a database they fill
/// the helper tables the streams join, the costliest part of opening one, so sources and
/// handles dealt to different workers fill theirs at the same time.
pub fn decode_parallel<R>(
    sources: &mut Vec<Numbered>,
    options: &StreamOptions,
    threads: usize,
    limits: QueueLimits,
    consume: impl FnOnce(Vec<StageDrop>, Vec<Box<dyn BatchStream>>) -> Result<R>,
) -> Result<R> {
    let n = sources.len();
    let threads = threads.max(1);
    // The threads a source may use: an equal share, the first sources taking the rest;
    // never more than the streams with rows it will run. A fork is only a speed-up: one
    // that cannot be made (no file descriptor left, say) leaves the source with fewer.
    let mut forks: Vec<Vec<Box<dyn Source>>> = Vec::with_capacity(n);
    for (i, (_, source)) in sources.iter().enumerate() {
        let share = (threads / n.max(1) + usize::from(i < threads % n.max(1))).max(1);
        let wanted = if share > 1 {
            share.min(source.busy_streams(options).max(1))
        } else {
            1
        };
        let mut mine = Vec::new();
        while mine.len() + 1 < wanted {
            match source.fork() {
                Ok(Some(f)) => mine.push(f),
                Ok(None) | Err(_) => break,
            }
        }
        forks.push(mine);
    }
    // Each source, then its forks, as handles; and a place for each handle's outcome.
    let mut units = Vec::new();
    let mut prepared: Vec<Handles> = Vec::with_capacity(n);
    for (index, ((first, source), extra)) in sources.drain(..).zip(forks).enumerate() {
        let parts = 1 + extra.len();
        prepared.push((0..parts).map(|_| None).collect());
        for (part, source) in std::iter::once(source).chain(extra).enumerate() {
            units.push(Unit {
                index,
                part,
                parts,
                first,
                source,
            });
        }
    }
    let workers_n = threads.clamp(1, units.len().max(1));
    let shared = Arc::new(Shared {
        inner: Mutex::new(Inner {
            prepared,
            ..Default::default()
        }),
        data: Condvar::new(),
        room: Condvar::new(),
        limits: QueueLimits {
            batches: limits.batches.max(1),
            bytes: limits.bytes,
        },
    });
    // Deal the handles to the workers in turn.
    let mut dealt: Vec<Vec<Unit>> = (0..workers_n).map(|_| Vec::new()).collect();
    for (u, unit) in units.into_iter().enumerate() {
        dealt[u % workers_n].push(unit);
    }
    let (result, returned) = std::thread::scope(|scope| {
        let workers: Vec<_> = dealt
            .into_iter()
            .map(|mine| {
                let shared = shared.clone();
                scope.spawn(move || work(&shared, mine, options))
            })
            .collect();
        let result = gather(&shared, n).and_then(|(drops, streams)| consume(drops, streams));
        shared.lock().stop = true;
        shared.room.notify_all();
        let mut returned = Vec::with_capacity(n);
        let mut panicked = false;
        for w in workers {
            match w.join() {
                // Forks are dropped here; the sources themselves go back.
                Ok(back) => returned.extend(back.into_iter().filter(|u| u.part == 0)),
                Err(_) => panicked = true,
            }
        }
        let result = if panicked {
            Err(self::panicked())
        } else {
            result
        };
        (result, returned)
    });
    let mut returned = returned;
    returned.sort_by_key(|u| u.index);
    sources.extend(returned.into_iter().map(|u| (u.first, u.source)));
    result
}

/// Waits until every handle of every source is prepared, then lists their dropped rows
/// and their streams in source order (each source's in the order its `prepare` gives
/// them). The error of the first source (in order) that failed wins, whatever the timing;
/// within it, the first failure in the order of its streams, whatever the split.
fn gather(shared: &Arc<Shared>, n: usize) -> Result<Opened<Box<dyn BatchStream>>> {
    let mut inner = shared.lock();
    while inner.prepared.iter().flatten().any(|p| p.is_none()) {
        if inner.panicked {
            return Err(panicked());
        }
        inner = wait(&shared.data, inner);
    }
    let mut streams: Vec<Box<dyn BatchStream>> = Vec::new();
    let mut drops = Vec::new();
    for i in 0..n {
        let mut placed: Vec<(usize, usize)> = Vec::new();
        // Of a source's handles that failed, the one whose failure comes first in the
        // order one handle would have met it, so the error does not depend on the split.
        let mut failed: Option<(usize, Error)> = None;
        for part in &mut inner.prepared[i] {
            match part.take() {
                Some(Ok((dropped, slots))) => {
                    drops.extend(dropped);
                    placed.extend(slots);
                }
                Some(Err((place, e))) => {
                    if failed.as_ref().is_none_or(|(first, _)| place < *first) {
                        failed = Some((place, e));
                    }
                }
                None => return Err(Error::Usage("internal: a handle was not prepared".into())),
            }
        }
        if let Some((_, e)) = failed {
            return Err(e);
        }
        placed.sort_unstable();
        for (_, slot) in placed {
            streams.push(Box::new(QueuedStream {
                shared: shared.clone(),
                slot,
                table: inner.slots[slot].table,
            }));
        }
    }
    Ok((drops, streams))
}

/// What a worker opened of one handle: its streams with their positions, or where and
/// why it failed (see [`Handles`]).
type OpenedHere<'a> =
    std::result::Result<Opened<(usize, Box<dyn BatchStream + 'a>)>, (usize, Error)>;

/// One worker: asks each of its handles what its source drops (the first handle only)
/// and prepares its streams, opens those assigned to it, then decodes batches into their
/// queues until every stream ended or the consumer stopped. Gives its handles back.
fn work(shared: &Shared, mine: Vec<Unit>, options: &StreamOptions) -> Vec<Unit> {
    let _flag = PanicFlag(shared);
    {
        let mut prepared = Vec::with_capacity(mine.len());
        for unit in &mine {
            let dropped = if unit.part == 0 {
                unit.source.dropped()
            } else {
                Ok(Vec::new())
            };
            let p = dropped.and_then(|d| Ok((d, unit.source.prepare(unit.first, options)?)));
            prepared.push(p);
        }
        // (slot, stream) of every stream this worker runs.
        let mut streams: Vec<(usize, Box<dyn BatchStream + '_>)> = Vec::new();
        for (unit, p) in mine.iter().zip(&mut prepared) {
            let opened: OpenedHere<'_> = match p {
                Ok((dropped, list)) => {
                    let wanted: Vec<usize> = (0..list.len())
                        .filter(|&k| options.wants(list[k].table()))
                        .collect();
                    let weights: Vec<u64> = wanted.iter().map(|&k| list[k].weight()).collect();
                    let mut chosen = vec![false; list.len()];
                    for j in assigned(&weights, unit.parts, unit.part) {
                        chosen[wanted[j]] = true;
                    }
                    list.iter_mut()
                        .enumerate()
                        .filter(|(k, _)| chosen[*k])
                        .map(|(k, q)| q.open().map(|s| (k, s)).map_err(|e| (k + 1, e)))
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map(|list| (std::mem::take(dropped), list))
                }
                Err(e) => Err((0, std::mem::replace(e, Error::Usage(String::new())))),
            };
            let mut inner = shared.lock();
            let outcome = opened.map(|(dropped, list)| {
                let mut slots = Vec::with_capacity(list.len());
                for (position, s) in list {
                    let slot = inner.slots.len();
                    inner.slots.push(Slot {
                        table: s.table(),
                        queue: VecDeque::new(),
                        state: State::Running,
                    });
                    slots.push((position, slot));
                    streams.push((slot, s));
                }
                (dropped, slots)
            });
            inner.prepared[unit.index][unit.part] = Some(outcome);
            drop(inner);
            shared.data.notify_all();
        }
        serve(shared, &mut streams);
    }
    mine
}

fn serve(shared: &Shared, streams: &mut [(usize, Box<dyn BatchStream + '_>)]) {
    let mut live: Vec<bool> = vec![true; streams.len()];
    loop {
        let mut inner = shared.lock();
        let pick = loop {
            if inner.stop {
                return;
            }
            // The emptiest live stream with room; the first such in order on ties.
            let queued = inner.queued_bytes;
            let pick = (0..streams.len())
                .filter(|&k| live[k])
                .map(|k| (inner.slots[streams[k].0].queue.len(), k))
                .filter(|(len, _)| shared.limits.has_room(*len, queued))
                .min();
            match pick {
                Some((_, k)) => break k,
                None if !live.iter().any(|&l| l) => return,
                None => inner = wait(&shared.room, inner),
            }
        };
        drop(inner);
        let (slot, stream) = &mut streams[pick];
        let next = stream.next_batch();
        let mut inner = shared.lock();
        let s = &mut inner.slots[*slot];
        match next {
            Ok(Some(b)) => {
                let bytes = b.get_array_memory_size();
                s.queue.push_back((b, bytes));
                inner.queued_bytes += bytes;
            }
            Ok(None) => {
                s.state = State::Done;
                live[pick] = false;
            }
            Err(e) => {
                s.state = State::Failed(Some(e));
                live[pick] = false;
            }
        }
        drop(inner);
        shared.data.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use rocpd_model::{col, Catalog, Table};

    use super::*;
    use crate::merge::tests::{lcg, VecStream};
    use crate::{PreparedStream, Source, StageDrop, TimeMerge};

    /// An input of a few tables of random sorted rows, in small batches.
    #[derive(Clone)]
    struct FakeSource {
        path: PathBuf,
        tables: Vec<(Table, Vec<(i64, i64)>)>,
        /// Rows this source reports as dropped (its number plus one).
        drops: u64,
        /// Whether it gives forks, and the handles it and its forks number themselves from.
        forks: Option<Arc<Mutex<usize>>>,
        /// This handle's number (0 for the source itself).
        handle: usize,
        /// Every stream opened: (source path, handle, table).
        opened: Arc<Mutex<Vec<(PathBuf, usize, Table)>>>,
        /// Every `dropped` asked: the handle asked.
        asked: Arc<Mutex<Vec<usize>>>,
        /// Forks made, of every source.
        forked: Arc<Mutex<usize>>,
        /// Tables whose stream fails to open.
        fails: Vec<Table>,
        /// Whether making a fork fails.
        fork_fails: bool,
        /// Whether asking what it drops fails.
        drop_fails: bool,
    }

    impl FakeSource {
        /// A forkable source of `tables` at `path`, logging into `log`, that drops one row
        /// and fails nowhere.
        fn new(path: &str, tables: Vec<(Table, Vec<(i64, i64)>)>, log: &FakeLog) -> Self {
            FakeSource {
                path: PathBuf::from(path),
                tables,
                drops: 1,
                forks: Some(Default::default()),
                handle: 0,
                opened: log.opened.clone(),
                asked: log.asked.clone(),
                forked: log.forked.clone(),
                fails: Vec::new(),
                fork_fails: log.fork_fails,
                drop_fails: false,
            }
        }
    }

    struct FakePrepared<'a> {
        source: &'a FakeSource,
        table: Table,
        rows: Vec<(i64, i64)>,
    }

    impl PreparedStream for FakePrepared<'_> {
        fn table(&self) -> Table {
            self.table
        }
        fn open(&mut self) -> Result<Box<dyn BatchStream + '_>> {
            let s = self.source;
            if s.fails.contains(&self.table) {
                return Err(Error::Usage(format!("cannot open {}", self.table.name())));
            }
            s.opened
                .lock()
                .unwrap()
                .push((s.path.clone(), s.handle, self.table));
            Ok(Box::new(VecStream {
                table: self.table,
                rows: std::mem::take(&mut self.rows),
                per: 37,
            }))
        }
        fn weight(&self) -> u64 {
            self.rows.len() as u64
        }
    }

    impl Source for FakeSource {
        fn path(&self) -> &Path {
            &self.path
        }
        fn source_count(&self) -> usize {
            1
        }
        fn catalog(&self, _: u32) -> Result<Catalog> {
            Ok(Catalog::default())
        }
        fn event_span(&self) -> Result<Option<(i64, i64)>> {
            Ok(None)
        }
        fn find_marker(&self, _: &str) -> Result<Vec<(i64, i64)>> {
            Ok(Vec::new())
        }
        fn count_rows(&self) -> Result<Vec<(Table, u64)>> {
            Ok(Vec::new())
        }
        fn dropped(&self) -> Result<Vec<StageDrop>> {
            self.asked.lock().unwrap().push(self.handle);
            if self.drop_fails {
                return Err(Error::Usage(format!(
                    "{}: cannot count",
                    self.path.display()
                )));
            }
            Ok(vec![StageDrop {
                stage: self.path.display().to_string(),
                rows: [(Table::PmcValue.name(), self.drops)].into_iter().collect(),
            }])
        }
        fn stream_count(&self) -> usize {
            self.tables.len()
        }
        fn prepare(&self, _: u32, _: &StreamOptions) -> Result<Vec<Box<dyn PreparedStream + '_>>> {
            Ok(self
                .tables
                .iter()
                .map(|(t, rows)| {
                    Box::new(FakePrepared {
                        source: self,
                        table: *t,
                        rows: rows.clone(),
                    }) as Box<dyn PreparedStream>
                })
                .collect())
        }
        fn busy_streams(&self, options: &StreamOptions) -> usize {
            self.tables
                .iter()
                .filter(|(t, rows)| options.wants(*t) && !rows.is_empty())
                .count()
        }
        fn fork(&self) -> Result<Option<Box<dyn Source>>> {
            let Some(count) = &self.forks else {
                return Ok(None);
            };
            if self.fork_fails {
                return Err(Error::Usage("no file descriptor left".into()));
            }
            let mut count = count.lock().unwrap();
            *count += 1;
            *self.forked.lock().unwrap() += 1;
            let mut fork = self.clone();
            fork.handle = *count;
            Ok(Some(Box::new(fork)))
        }
    }

    fn sources(seed: &mut u64) -> Vec<Numbered> {
        fake_sources(seed, 5, false, &Default::default())
    }

    /// `n` sources, forkable or not, logging their opens into `log`.
    fn fake_sources(seed: &mut u64, n: u32, forkable: bool, log: &FakeLog) -> Vec<Numbered> {
        (0..n)
            .map(|i| {
                let tables = [Table::KernelDispatch, Table::Region, Table::MemoryCopy]
                    .into_iter()
                    .enumerate()
                    .map(|(k, t)| {
                        // Tables of different sizes, so that the weights matter.
                        let mut rows: Vec<(i64, i64)> = (0..400 * (k + 1))
                            .map(|_| {
                                let s = lcg(seed) % 50_000;
                                (s, s + lcg(seed) % 40)
                            })
                            .collect();
                        rows.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
                        (t, rows)
                    })
                    .collect();
                let mut source = FakeSource::new(&format!("fake-{i}"), tables, log);
                source.drops = u64::from(i) + 1;
                if !forkable {
                    source.forks = None;
                }
                (i, Box::new(source) as Box<dyn Source>)
            })
            .collect()
    }

    /// What fake sources and their forks did.
    #[derive(Default)]
    struct FakeLog {
        opened: Arc<Mutex<Vec<(PathBuf, usize, Table)>>>,
        asked: Arc<Mutex<Vec<usize>>>,
        forked: Arc<Mutex<usize>>,
        /// Whether the sources' forks fail to be made.
        fork_fails: bool,
    }

    /// Every (table, start, end) the merge yields, in its order.
    fn merged(
        sources: &mut Vec<Numbered>,
        threads: usize,
        limits: QueueLimits,
    ) -> Vec<(Table, i64, i64)> {
        merged_n(sources, 5, threads, limits)
    }

    fn merged_n(
        sources: &mut Vec<Numbered>,
        n: u64,
        threads: usize,
        limits: QueueLimits,
    ) -> Vec<(Table, i64, i64)> {
        decode_parallel(
            sources,
            &StreamOptions::default(),
            threads,
            limits,
            |drops, streams| {
                // Each source's drops, in source order, whichever worker asked it.
                let got: Vec<(String, u64)> = drops
                    .iter()
                    .map(|d| (d.stage.clone(), d.rows[Table::PmcValue.name()]))
                    .collect();
                let want: Vec<(String, u64)> =
                    (0..n).map(|i| (format!("fake-{i}"), i + 1)).collect();
                assert_eq!(got, want, "threads {threads}");
                let mut merge = TimeMerge::new(streams);
                let mut rows = Vec::new();
                while let Some(chunk) = merge.next_chunk()? {
                    for b in &chunk.batches {
                        let starts = b.batch.column(col::START).as_primitive::<Int64Type>();
                        let ends = b.batch.column(col::END).as_primitive::<Int64Type>();
                        for r in 0..b.batch.num_rows() {
                            rows.push((b.table, starts.value(r), ends.value(r)));
                        }
                    }
                }
                Ok(rows)
            },
        )
        .expect("decodes")
    }

    #[test]
    fn a_byte_budget_smaller_than_one_batch_still_delivers_every_row_in_the_same_order() {
        let mut seed = 7;
        let mut inputs = sources(&mut seed);
        let roomy = QueueLimits {
            batches: 4,
            bytes: usize::MAX,
        };
        let expected = merged(&mut inputs, 1, roomy);
        assert_eq!(expected.len(), 5 * 6 * 400);
        assert_eq!(inputs.len(), 5, "the sources are given back");
        // One byte: every queue may hold only the batch the merge may be waiting for.
        let starved = QueueLimits {
            batches: 4,
            bytes: 1,
        };
        for threads in [2, 3, 5] {
            let mut inputs = sources(&mut 7);
            assert_eq!(
                merged(&mut inputs, threads, starved),
                expected,
                "threads {threads}"
            );
            assert_eq!(merged(&mut sources(&mut 7), threads, roomy), expected);
        }
    }

    #[test]
    fn fewer_sources_than_threads_spread_their_streams_over_forks_with_the_same_output() {
        let roomy = QueueLimits {
            batches: 4,
            bytes: usize::MAX,
        };
        let log = FakeLog::default();
        let mut inputs = fake_sources(&mut 11, 2, true, &log);
        let expected = merged_n(&mut inputs, 2, 1, roomy);
        assert_eq!(expected.len(), 2 * 6 * 400);
        assert_eq!(
            inputs.len(),
            2,
            "the sources are given back, not their forks"
        );
        for threads in [2, 3, 4, 6, 9] {
            let log = FakeLog::default();
            let mut inputs = fake_sources(&mut 11, 2, true, &log);
            assert_eq!(
                merged_n(&mut inputs, 2, threads, roomy),
                expected,
                "threads {threads}"
            );
            assert_eq!(inputs.len(), 2);
            // A fork that cannot be made leaves the source on the handles it has.
            let unforked = FakeLog {
                fork_fails: true,
                ..Default::default()
            };
            let mut alone = fake_sources(&mut 11, 2, true, &unforked);
            assert_eq!(merged_n(&mut alone, 2, threads, roomy), expected);
            let handles: Vec<usize> = unforked
                .opened
                .lock()
                .unwrap()
                .iter()
                .map(|o| o.1)
                .collect();
            assert_eq!(handles, vec![0; 6]);
            let back: Vec<&Path> = inputs.iter().map(|(_, s)| s.path()).collect();
            assert_eq!(back, [Path::new("fake-0"), Path::new("fake-1")]);
            // Each stream opened once, on one handle; only the sources say what they drop.
            let opened = log.opened.lock().unwrap().clone();
            assert_eq!(opened.len(), 6, "threads {threads}: {opened:?}");
            let mut streams: Vec<(PathBuf, Table)> =
                opened.iter().map(|(p, _, t)| (p.clone(), *t)).collect();
            streams.sort_by_key(|(p, t)| (p.clone(), t.name()));
            streams.dedup();
            assert_eq!(streams.len(), 6);
            assert_eq!(*log.asked.lock().unwrap(), vec![0, 0]);
            // Each source gets half the threads (the first the odd one), at most one a stream.
            for (source, share) in [("fake-0", threads.div_ceil(2)), ("fake-1", threads / 2)] {
                let mut handles: Vec<usize> = opened
                    .iter()
                    .filter(|(p, _, _)| p == Path::new(source))
                    .map(|(_, h, _)| *h)
                    .collect();
                handles.sort_unstable();
                handles.dedup();
                assert_eq!(
                    handles.len(),
                    share.clamp(1, 3),
                    "threads {threads} {source}"
                );
            }
        }
    }

    #[test]
    fn the_first_stream_that_fails_to_open_is_the_error_whatever_the_split() {
        let limits = QueueLimits {
            batches: 4,
            bytes: usize::MAX,
        };
        for threads in [1, 2, 3] {
            let log = FakeLog::default();
            // Dispatch (400 rows), region (800) and copy (1,200): on two handles the copy
            // stream goes to the first and the region stream to the second.
            let tables = [Table::KernelDispatch, Table::Region, Table::MemoryCopy]
                .into_iter()
                .enumerate()
                .map(|(k, t)| (t, (0..400 * (k as i64 + 1)).map(|i| (i, i)).collect()))
                .collect();
            let mut source = FakeSource::new("fake-0", tables, &log);
            source.fails = vec![Table::Region, Table::MemoryCopy];
            let mut inputs: Vec<Numbered> = vec![(0, Box::new(source))];
            let e = decode_parallel(
                &mut inputs,
                &StreamOptions::default(),
                threads,
                limits,
                |_, _| Ok(()),
            )
            .unwrap_err();
            assert_eq!(e.to_string(), "cannot open region", "threads {threads}");
            assert_eq!(inputs.len(), 1);
        }
    }

    /// Of several sources, the first that fails at any step (asking what it drops,
    /// preparing, opening a stream) gives the error, on one thread as in the pool.
    #[test]
    fn the_first_failing_source_is_the_error_on_one_thread_as_on_many() {
        for threads in [1, 2, 3, 6] {
            let log = FakeLog::default();
            let mut failing: Vec<Numbered> = Vec::new();
            for k in 0..2u32 {
                let path = format!("fake-{k}");
                let mut source = FakeSource::new(&path, vec![(Table::Region, vec![(1, 2)])], &log);
                // The first fails to open its stream, the second to say what it drops.
                if k == 0 {
                    source.fails = vec![Table::Region];
                }
                source.drop_fails = k == 1;
                failing.push((k, Box::new(source)));
            }
            let options = crate::ProduceOptions {
                threads,
                ..Default::default()
            };
            let e = crate::produce_events(&mut failing, &options, &mut |_| Ok(())).unwrap_err();
            assert_eq!(e.to_string(), "cannot open region", "threads {threads}");
        }
    }

    #[test]
    fn no_fork_is_made_for_streams_the_run_does_not_read() {
        let log = FakeLog::default();
        let mut inputs = fake_sources(&mut 11, 2, true, &log);
        let options = StreamOptions {
            tables: Some(vec![Table::Region]),
            ..Default::default()
        };
        let limits = QueueLimits {
            batches: 4,
            bytes: usize::MAX,
        };
        let rows = decode_parallel(&mut inputs, &options, 6, limits, |_, streams| {
            Ok(streams.len())
        })
        .unwrap();
        assert_eq!(rows, 2);
        assert_eq!(*log.forked.lock().unwrap(), 0);
        // Two tables: one fork each.
        let log = FakeLog::default();
        let mut inputs = fake_sources(&mut 11, 2, true, &log);
        let options = StreamOptions {
            tables: Some(vec![Table::Region, Table::MemoryCopy]),
            ..Default::default()
        };
        decode_parallel(&mut inputs, &options, 6, limits, |_, _| Ok(())).unwrap();
        assert_eq!(*log.forked.lock().unwrap(), 2);
    }

    #[test]
    fn streams_split_over_handles_by_weight_each_on_one() {
        let weights = [462, 284, 284, 21, 107, 28, 10];
        let a = assigned(&weights, 2, 0);
        let b = assigned(&weights, 2, 1);
        // Heaviest first, each to the lighter handle: 462+107+21+10 against 284+284+28.
        assert_eq!(a, vec![0, 3, 4, 6]);
        assert_eq!(b, vec![1, 2, 5]);
        assert_eq!(assigned(&weights, 1, 0), (0..7).collect::<Vec<_>>());
        for parts in 1..=9 {
            let mut all: Vec<usize> = (0..parts)
                .flat_map(|p| assigned(&weights, parts, p))
                .collect();
            all.sort_unstable();
            assert_eq!(all, (0..7).collect::<Vec<_>>(), "{parts} parts");
        }
        // Weights of zero still spread.
        assert_eq!(assigned(&[0, 0, 0], 3, 2), vec![2]);
    }

    #[test]
    fn room_is_by_batches_and_bytes_but_an_empty_queue_always_has_room() {
        let l = QueueLimits {
            batches: 2,
            bytes: 100,
        };
        assert!(l.has_room(0, 1_000), "the stream the merge waits for");
        assert!(l.has_room(1, 99));
        assert!(!l.has_room(1, 100), "over the byte budget");
        assert!(!l.has_room(2, 0), "over the batch limit");
    }
}
