//! The producer side of a run over [`Source`]s: the catalog, the rows the sources cannot
//! place in time, then every stream merged in time order, decoded inline or on a pool.

use std::sync::Arc;

use rocpd_model::{Catalog, Error, Projection, Result, Table};

use crate::{
    decode_parallel, BatchStream, Message, Numbered, PreparedStream, QueueLimits, StageDrop,
    StreamOptions, TimeMerge,
};

/// Rows buffered over all streams at once; each stream's batch size follows from it.
/// Every stream holds a batch in the merge and may queue more, so this also sets
/// what the merge keeps alive: at 65,536 a database of seven streams held 8,192-row
/// batches (about 4 MiB each), and the tables too small to fill them at 1M events filled
/// them at 3M, which is most of why peak memory grew with the trace.
pub const ROW_BUDGET: usize = 1 << 14;

/// Bytes the decode pool may hold ahead of the merge, over all streams (see
/// [`QueueLimits`]): enough for the workers to run ahead, small enough that the queues are
/// full at a million events already, so memory does not grow with the trace.
pub const QUEUE_BYTES: usize = 8 << 20;

/// Batch size per stream for `streams` concurrent streams.
pub fn batch_rows(streams: usize) -> usize {
    (ROW_BUDGET / streams.max(1)).clamp(256, 8192)
}

/// How [`produce`] reads its sources.
#[derive(Debug, Clone)]
pub struct ProduceOptions {
    /// The columns the run reads.
    pub projection: Projection,
    /// Decode threads: 1 decodes inline, on the caller's thread.
    pub threads: usize,
    /// Batches queued per stream when decoding on a pool.
    pub in_flight: usize,
    /// Bytes queued over all streams when decoding on a pool.
    pub queue_bytes: usize,
    /// Smallest chunk (but the last), see [`TimeMerge::with_min_rows`].
    pub min_chunk_rows: usize,
    /// The tables to read; `None` for all (see [`StreamOptions::tables`]).
    pub tables: Option<Vec<Table>>,
}

impl Default for ProduceOptions {
    fn default() -> Self {
        ProduceOptions {
            projection: Projection::all(),
            threads: 1,
            in_flight: 2,
            queue_bytes: QUEUE_BYTES,
            min_chunk_rows: 4096,
            tables: None,
        }
    }
}

/// Emits `catalog` (which must number the sources as `sources` do), the rows the
/// sources cannot place in time, then the events of every source merged in time order.
pub fn produce(
    sources: &mut Vec<Numbered>,
    catalog: Arc<Catalog>,
    options: &ProduceOptions,
    emit: &mut dyn FnMut(Message) -> Result<()>,
) -> Result<()> {
    emit(Message::Catalog(catalog))?;
    produce_events(sources, options, emit)
}

/// [`produce`] without the catalog: the dropped rows and the merged events of `sources`,
/// for a run that reads its inputs a group at a time.
pub fn produce_events(
    sources: &mut Vec<Numbered>,
    options: &ProduceOptions,
    emit: &mut dyn FnMut(Message) -> Result<()>,
) -> Result<()> {
    let streams: usize = sources.iter().map(|(_, s)| s.stream_count()).sum();
    let pooled = options.threads > 1 && !sources.is_empty();
    // Many streams already hold many small batches: queue one each, not more.
    let in_flight = if streams > 64 { 1 } else { options.in_flight };
    let stream_options = StreamOptions {
        projection: options.projection.clone(),
        batch_rows: batch_rows(streams),
        tables: options.tables.clone(),
    };
    let mut merge_all =
        |drops: Vec<StageDrop>, streams: Vec<Box<dyn BatchStream + '_>>| -> Result<()> {
            for d in drops {
                emit(Message::Dropped(d))?;
            }
            let mut merge = TimeMerge::new(streams).with_min_rows(options.min_chunk_rows);
            while let Some(chunk) = merge.next_chunk()? {
                emit(Message::Chunk(chunk))?;
            }
            Ok(())
        };
    if pooled {
        return decode_parallel(
            sources,
            &stream_options,
            options.threads,
            QueueLimits {
                batches: in_flight,
                bytes: options.queue_bytes,
            },
            &mut merge_all,
        );
    }
    // Every source is asked what it drops and prepared, then opened, one source after
    // another: the first source that fails at any step gives the error, as in the pool
    // (a database fills helper tables both when asked and when a stream starts).
    let mut drops = Vec::new();
    let mut prepared: Vec<Result<Vec<Box<dyn PreparedStream + '_>>>> = Vec::new();
    for (first, s) in sources.iter() {
        prepared.push(s.dropped().and_then(|d| {
            drops.extend(d);
            s.prepare(*first, &stream_options)
        }));
    }
    let mut streams = Vec::new();
    for list in &mut prepared {
        let list = list
            .as_mut()
            .map_err(|e| std::mem::replace(e, Error::Usage(String::new())))?;
        for p in list.iter_mut().filter(|p| stream_options.wants(p.table())) {
            streams.push(p.open()?);
        }
    }
    merge_all(drops, streams)
}
