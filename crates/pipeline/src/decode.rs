//! Parallel decode: the streams of many sources decoded on a pool of worker threads.
//!
//! Each source is owned by one worker (a SQLite connection must stay on one thread at a
//! time, and its statements with it), sources are dealt to workers in turn, and every
//! stream feeds a queue of at most [`QueueLimits::batches`] batches. All queues together
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

/// What a source gives once it is opened: the rows it cannot place in time and its
/// streams (or their slots).
type Opened<S> = (Vec<StageDrop>, Vec<S>);

#[derive(Default)]
struct Inner {
    slots: Vec<Slot>,
    /// Per source, once prepared: the rows it cannot place in time and the slots of its
    /// streams, or why it could not be prepared.
    prepared: Vec<Option<Result<Opened<usize>>>>,
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

/// Decodes the streams of `sources` on `threads` workers and calls `consume` with the
/// rows every source cannot place in time ([`Source::dropped`], in source order) and every
/// stream, in source order and, within a source, in the order its `prepare` gives them.
/// The sources are given back, in their order, when `consume` returns.
///
/// `dropped` runs on the workers too: for a database it builds the helper tables the
/// streams join, the costliest part of opening one, so sources dealt to different workers
/// build theirs at the same time.
pub fn decode_parallel<R>(
    sources: &mut Vec<Numbered>,
    options: &StreamOptions,
    threads: usize,
    limits: QueueLimits,
    consume: impl FnOnce(Vec<StageDrop>, Vec<Box<dyn BatchStream>>) -> Result<R>,
) -> Result<R> {
    let n = sources.len();
    let threads = threads.clamp(1, n.max(1));
    let shared = Arc::new(Shared {
        inner: Mutex::new(Inner {
            prepared: (0..n).map(|_| None).collect(),
            ..Default::default()
        }),
        data: Condvar::new(),
        room: Condvar::new(),
        limits: QueueLimits {
            batches: limits.batches.max(1),
            bytes: limits.bytes,
        },
    });
    // Deal the sources to the workers in turn, remembering each one's place.
    let mut dealt: Vec<Vec<(usize, Numbered)>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, s) in sources.drain(..).enumerate() {
        dealt[i % threads].push((i, s));
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
                Ok(back) => returned.extend(back),
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
    returned.sort_by_key(|(i, _)| *i);
    sources.extend(returned.into_iter().map(|(_, s)| s));
    result
}

/// Waits until every source is prepared, then lists their dropped rows and their streams
/// in source order. The error of the first source (in order) that failed wins, whatever
/// the timing.
fn gather(shared: &Arc<Shared>, n: usize) -> Result<Opened<Box<dyn BatchStream>>> {
    let mut inner = shared.lock();
    while inner.prepared.iter().any(|p| p.is_none()) {
        if inner.panicked {
            return Err(panicked());
        }
        inner = wait(&shared.data, inner);
    }
    let mut streams: Vec<Box<dyn BatchStream>> = Vec::new();
    let mut drops = Vec::new();
    for i in 0..n {
        match inner.prepared[i].take().expect("every source prepared") {
            Ok((dropped, slots)) => {
                drops.extend(dropped);
                for slot in slots {
                    streams.push(Box::new(QueuedStream {
                        shared: shared.clone(),
                        slot,
                        table: inner.slots[slot].table,
                    }));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok((drops, streams))
}

/// One worker: asks each of its sources what it drops and prepares its streams, then
/// decodes batches into their queues until every stream ended or the consumer stopped.
/// Gives its sources back.
fn work(
    shared: &Shared,
    mine: Vec<(usize, Numbered)>,
    options: &StreamOptions,
) -> Vec<(usize, Numbered)> {
    let _flag = PanicFlag(shared);
    {
        let mut prepared = Vec::with_capacity(mine.len());
        for (i, (first, source)) in &mine {
            let p = source
                .dropped()
                .and_then(|d| Ok((d, source.prepare(*first, options)?)));
            prepared.push((*i, p));
        }
        // (slot, stream) of every stream this worker runs.
        let mut streams: Vec<(usize, Box<dyn BatchStream + '_>)> = Vec::new();
        for (i, p) in &mut prepared {
            let opened: Result<Opened<Box<dyn BatchStream + '_>>> = match p {
                Ok((dropped, list)) => list
                    .iter_mut()
                    .filter(|q| options.wants(q.table()))
                    .map(|q| q.open())
                    .collect::<Result<Vec<_>>>()
                    .map(|list| (std::mem::take(dropped), list)),
                Err(e) => Err(std::mem::replace(e, Error::Usage(String::new()))),
            };
            let mut inner = shared.lock();
            let outcome = opened.map(|(dropped, list)| {
                let mut slots = Vec::with_capacity(list.len());
                for s in list {
                    let slot = inner.slots.len();
                    inner.slots.push(Slot {
                        table: s.table(),
                        queue: VecDeque::new(),
                        state: State::Running,
                    });
                    slots.push(slot);
                    streams.push((slot, s));
                }
                (dropped, slots)
            });
            inner.prepared[*i] = Some(outcome);
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

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use rocpd_model::{col, Catalog, Table};

    use super::*;
    use crate::merge::tests::{lcg, VecStream};
    use crate::{PreparedStream, Source, StageDrop, TimeMerge};

    /// An input of a few tables of random sorted rows, in small batches.
    struct FakeSource {
        path: PathBuf,
        tables: Vec<(Table, Vec<(i64, i64)>)>,
        /// Rows this source reports as dropped (its number plus one).
        drops: u64,
    }

    struct FakePrepared(Table, Vec<(i64, i64)>);

    impl PreparedStream for FakePrepared {
        fn table(&self) -> Table {
            self.0
        }
        fn open(&mut self) -> Result<Box<dyn BatchStream + '_>> {
            Ok(Box::new(VecStream {
                table: self.0,
                rows: std::mem::take(&mut self.1),
                per: 37,
            }))
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
                    Box::new(FakePrepared(*t, rows.clone())) as Box<dyn PreparedStream>
                })
                .collect())
        }
    }

    fn sources(seed: &mut u64) -> Vec<Numbered> {
        (0..5u32)
            .map(|i| {
                let tables = [Table::KernelDispatch, Table::Region, Table::MemoryCopy]
                    .into_iter()
                    .map(|t| {
                        let mut rows: Vec<(i64, i64)> = (0..400)
                            .map(|_| {
                                let s = lcg(seed) % 50_000;
                                (s, s + lcg(seed) % 40)
                            })
                            .collect();
                        rows.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
                        (t, rows)
                    })
                    .collect();
                let source = FakeSource {
                    path: PathBuf::from(format!("fake-{i}")),
                    tables,
                    drops: u64::from(i) + 1,
                };
                (i, Box::new(source) as Box<dyn Source>)
            })
            .collect()
    }

    /// Every (table, start, end) the merge yields, in its order.
    fn merged(
        sources: &mut Vec<Numbered>,
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
                    (0..5u64).map(|i| (format!("fake-{i}"), i + 1)).collect();
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
        assert_eq!(expected.len(), 5 * 3 * 400);
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
