//! Time-ordered merging of batch streams into chunks.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::RecordBatch;
use rocpd_model::{col, EventBatch, Result, Table};

use crate::Chunk;

/// A stream of batches of one canonical table, sorted by (`start`, `end` descending).
/// Readers implement this; the stream may borrow from its reader (a prepared statement).
pub trait BatchStream {
    /// The table the batches belong to.
    fn table(&self) -> Table;
    /// The next batch, or `None` at the end. Batches may be empty.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>>;
}

struct Cursor<'a> {
    stream: Box<dyn BatchStream + 'a>,
    table: Table,
    batch: Option<RecordBatch>,
    offset: usize,
}

impl Cursor<'_> {
    /// Makes sure the cursor holds unread rows; false once the stream is exhausted.
    fn fill(&mut self) -> Result<bool> {
        loop {
            if let Some(b) = &self.batch {
                if self.offset < b.num_rows() {
                    return Ok(true);
                }
            }
            self.offset = 0;
            self.batch = self.stream.next_batch()?;
            if self.batch.is_none() {
                return Ok(false);
            }
        }
    }

    fn starts(&self) -> &[i64] {
        let b = self.batch.as_ref().expect("filled cursor");
        &b.column(col::START).as_primitive::<Int64Type>().values()[self.offset..]
    }
}

/// Merges streams into [`Chunk`]s in start-time order.
///
/// Each call to [`TimeMerge::next_chunk`] takes, from every stream, the rows that start no
/// later than `cut` = the smallest "last start" among the streams' current batches. So the
/// stream that limits the cut is consumed whole, every chunk makes progress, and memory is
/// one batch per stream.
pub struct TimeMerge<'a> {
    cursors: Vec<Cursor<'a>>,
}

impl<'a> TimeMerge<'a> {
    /// Merges `streams`.
    pub fn new(streams: Vec<Box<dyn BatchStream + 'a>>) -> Self {
        let cursors = streams
            .into_iter()
            .map(|stream| Cursor {
                table: stream.table(),
                stream,
                batch: None,
                offset: 0,
            })
            .collect();
        TimeMerge { cursors }
    }

    /// The next chunk, or `None` when every stream is exhausted.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>> {
        let mut live = Vec::with_capacity(self.cursors.len());
        for c in &mut self.cursors {
            live.push(c.fill()?);
        }
        let mut i = 0;
        self.cursors.retain(|_| {
            i += 1;
            live[i - 1]
        });
        let Some(cut) = self
            .cursors
            .iter()
            .map(|c| *c.starts().last().expect("non-empty"))
            .min()
        else {
            return Ok(None);
        };
        let mut chunk = Chunk::default();
        for c in &mut self.cursors {
            let n = c.starts().partition_point(|&s| s <= cut);
            if n == 0 {
                continue;
            }
            let batch = c.batch.as_ref().expect("filled").slice(c.offset, n);
            c.offset += n;
            chunk.batches.push(EventBatch {
                table: c.table,
                batch,
            });
        }
        Ok(Some(chunk))
    }
}
