//! A chunk: the unit the driver hands to stages and sinks.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::RecordBatch;
use arrow_buffer::ScalarBuffer;
use rocpd_model::{col, EventBatch, Table};

/// A time slab of events: batches of any tables, each sorted by (`start`, `end` desc),
/// such that no row of a later chunk starts before any row of this one.
#[derive(Debug, Clone, Default)]
pub struct Chunk {
    /// The batches; a table may appear more than once (a slice of each batch of each
    /// input stream the chunk takes rows from, ordered by stream).
    pub batches: Vec<EventBatch>,
}

impl Chunk {
    /// Number of rows over all batches.
    pub fn rows(&self) -> usize {
        self.batches.iter().map(|b| b.batch.num_rows()).sum()
    }

    /// Latest start time in the chunk.
    pub fn max_start(&self) -> Option<i64> {
        self.batches
            .iter()
            .filter(|b| b.batch.num_rows() > 0)
            .map(|b| {
                let starts = b.batch.column(col::START).as_primitive::<Int64Type>();
                starts.value(starts.len() - 1)
            })
            .max()
    }

    /// Rows per table.
    pub fn rows_per_table(&self) -> impl Iterator<Item = (Table, usize)> + '_ {
        self.batches.iter().map(|b| (b.table, b.batch.num_rows()))
    }

    /// Walks every row of the chunk in (`start`, `end` descending, batch order) order,
    /// yielding `(batch index, row index)`.
    pub fn time_order(&self) -> TimeOrder<'_> {
        let mut heap = BinaryHeap::with_capacity(self.batches.len());
        let columns: Vec<_> = self.batches.iter().map(|b| start_end(&b.batch)).collect();
        for (i, (s, e)) in columns.iter().enumerate() {
            if !s.is_empty() {
                heap.push(Reverse((s[0], Reverse(e[0]), i, 0usize)));
            }
        }
        TimeOrder {
            columns,
            heap,
            _chunk: std::marker::PhantomData,
        }
    }
}

/// The `start` and `end` values of an event batch (shared buffers, not copies).
pub(crate) fn start_end(batch: &RecordBatch) -> (ScalarBuffer<i64>, ScalarBuffer<i64>) {
    let column = |c: usize| batch.column(c).as_primitive::<Int64Type>().values().clone();
    (column(col::START), column(col::END))
}

type Key = (i64, Reverse<i64>, usize, usize);

/// Iterator returned by [`Chunk::time_order`].
pub struct TimeOrder<'a> {
    columns: Vec<(ScalarBuffer<i64>, ScalarBuffer<i64>)>,
    heap: BinaryHeap<Reverse<Key>>,
    _chunk: std::marker::PhantomData<&'a Chunk>,
}

impl Iterator for TimeOrder<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let Reverse((_, _, b, r)) = self.heap.pop()?;
        let (s, e) = &self.columns[b];
        if r + 1 < s.len() {
            self.heap
                .push(Reverse((s[r + 1], Reverse(e[r + 1]), b, r + 1)));
        }
        Some((b, r))
    }
}
