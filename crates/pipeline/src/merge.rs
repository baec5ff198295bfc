//! Time-ordered merging of batch streams into chunks.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
    /// The stream's place among the merged streams (stable while others end).
    id: usize,
    /// Counts the stream's batches, so that pieces of one batch can be told apart.
    seq: u64,
    /// The memory of the current batch (counted once, not per piece).
    bytes: usize,
    /// The chunk whose size already counts the current batch in full.
    counted_in: Option<u64>,
    /// The last start of the stream's batches so far.
    last_start: Option<i64>,
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
            self.seq += 1;
            self.counted_in = None;
            self.batch = self.stream.next_batch()?;
            match &self.batch {
                Some(b) => self.bytes = b.get_array_memory_size(),
                None => return Ok(false),
            }
            // The cuts rely on each stream's order: rows out of it would make the merge
            // take nothing, forever. A reader must refuse them itself, naming the row;
            // this stops a reader's bug from hanging the run.
            let starts = self.starts();
            let ordered = starts.windows(2).all(|w| w[0] <= w[1])
                && match (self.last_start, starts.first()) {
                    (Some(last), Some(&first)) => last <= first,
                    _ => true,
                };
            if !ordered {
                return Err(arrow_schema::ArrowError::ComputeError(format!(
                    "the {} stream gave rows out of start order (a reader's bug)",
                    self.table.name()
                ))
                .into());
            }
            if let Some(&last) = starts.last() {
                self.last_start = Some(last);
            }
        }
    }

    /// Starts of the rows not yet taken (empty when the cursor holds none).
    fn starts(&self) -> &[i64] {
        match &self.batch {
            Some(b) => &b.column(col::START).as_primitive::<Int64Type>().values()[self.offset..],
            None => &[],
        }
    }

    /// (first, last) start of the rows not yet taken.
    fn bounds(&self) -> Option<(i64, i64)> {
        let starts = self.starts();
        Some((*starts.first()?, *starts.last()?))
    }
}

/// Rows `offset..offset + len` of a stream's current batch, taken by one cut.
struct Piece {
    id: usize,
    seq: u64,
    table: Table,
    batch: RecordBatch,
    offset: usize,
    len: usize,
    /// The memory of `batch` if this is the chunk's first piece of it, else 0.
    bytes: usize,
}

/// The bytes of the buffers `pieces` keep alive: each batch a chunk takes rows from counts
/// whole, once.
fn pieces_bytes(pieces: &[Piece]) -> usize {
    pieces.iter().map(|p| p.bytes).sum()
}

/// The chunk of joined cuts: the pieces of one batch that follow each other become one
/// slice, and the slices are ordered by stream. A chunk of many small cuts then holds a
/// few slices per stream instead of one per stream and cut (every slice costs each stage
/// and sink a fixed amount), and rows that tie on (`start`, `end`) come in stream order
/// wherever a stream's batches happen to end (D69).
fn coalesce(mut pieces: Vec<Piece>) -> Chunk {
    // Stable: a stream's pieces keep their order.
    pieces.sort_by_key(|p| p.id);
    let mut joined: Vec<Piece> = Vec::with_capacity(pieces.len());
    for p in pieces {
        match joined.last_mut() {
            Some(last)
                if last.id == p.id && last.seq == p.seq && last.offset + last.len == p.offset =>
            {
                last.len += p.len;
            }
            _ => joined.push(p),
        }
    }
    Chunk {
        batches: joined
            .into_iter()
            .map(|p| EventBatch {
                table: p.table,
                batch: p.batch.slice(p.offset, p.len),
            })
            .collect(),
    }
}

/// Merges streams into [`Chunk`]s in start-time order.
///
/// Each call to [`TimeMerge::next_chunk`] takes, from every stream, the rows that start no
/// later than `cut` = the smallest "last start" among the streams' current batches. So the
/// stream that limits the cut is consumed whole, every chunk makes progress, and memory is
/// one batch per stream.
///
/// A cut costs the streams it takes rows from, not all of them: two heaps keep the
/// streams by the first start they have not given yet and by the last start of their
/// batch, so the ranks of a long job that have not begun, or have ended, cost nothing
/// while the others are merged.
pub struct TimeMerge<'a> {
    cursors: Vec<Cursor<'a>>,
    /// (first start not yet taken, cursor): one entry per cursor holding rows.
    heads: BinaryHeap<Reverse<(i64, usize)>>,
    /// (last start of the batch, cursor, batch seq): the smallest valid entry is the cut;
    /// entries of batches since replaced or exhausted are skipped when met.
    lasts: BinaryHeap<Reverse<(i64, usize, u64)>>,
    started: bool,
    min_rows: usize,
    /// Counts chunks, so a batch's memory is counted once per chunk.
    chunk_no: u64,
}

impl<'a> TimeMerge<'a> {
    /// Merges `streams`.
    pub fn new(streams: Vec<Box<dyn BatchStream + 'a>>) -> Self {
        let cursors = streams
            .into_iter()
            .enumerate()
            .map(|(id, stream)| Cursor {
                table: stream.table(),
                stream,
                batch: None,
                offset: 0,
                id,
                seq: 0,
                bytes: 0,
                counted_in: None,
                last_start: None,
            })
            .collect();
        TimeMerge {
            cursors,
            heads: BinaryHeap::new(),
            lasts: BinaryHeap::new(),
            started: false,
            min_rows: 0,
            chunk_no: 0,
        }
    }

    /// Gives cursor `id` rows if its stream has more and enters it in the heaps.
    fn refill(&mut self, id: usize) -> Result<()> {
        let c = &mut self.cursors[id];
        if c.fill()? {
            if let Some((first, last)) = c.bounds() {
                self.heads.push(Reverse((first, id)));
                self.lasts.push(Reverse((last, id, c.seq)));
            }
        }
        Ok(())
    }

    /// Makes chunks of at least `rows` rows (but the last): with many streams of small
    /// batches, a single cut holds few rows, and every chunk costs each stage and sink a
    /// fixed amount. Consecutive cuts joined are still a valid chunk: every row of the
    /// first starts before every row of the second.
    pub fn with_min_rows(mut self, rows: usize) -> Self {
        self.min_rows = rows;
        self
    }

    /// The next chunk, or `None` when every stream is exhausted.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>> {
        self.chunk_no += 1;
        let Some(mut pieces) = self.next_cut()? else {
            return Ok(None);
        };
        // Bounded in bytes too: rows of megabyte strings must not pile up.
        let mut bytes = pieces_bytes(&pieces);
        let mut rows: usize = pieces.iter().map(|p| p.len).sum();
        while rows < self.min_rows && bytes < rocpd_model::BATCH_BYTES {
            match self.next_cut()? {
                Some(more) => {
                    bytes += pieces_bytes(&more);
                    rows += more.iter().map(|p| p.len).sum::<usize>();
                    pieces.extend(more);
                }
                None => break,
            }
        }
        Ok(Some(coalesce(pieces)))
    }

    /// The rows of every stream up to the next cut.
    fn next_cut(&mut self) -> Result<Option<Vec<Piece>>> {
        if !self.started {
            self.started = true;
            for id in 0..self.cursors.len() {
                self.refill(id)?;
            }
        }
        // The smallest last start of a batch still current.
        let cut = loop {
            let Some(&Reverse((last, id, seq))) = self.lasts.peek() else {
                return Ok(None);
            };
            let c = &self.cursors[id];
            if c.seq == seq && c.bounds().is_some() {
                break last;
            }
            self.lasts.pop();
        };
        let mut pieces = Vec::new();
        let mut cut_bytes = 0usize;
        let mut exhausted = Vec::new();
        loop {
            let next = self.heads.peek().map(|&Reverse(h)| h);
            let Some((_, id)) = next.filter(|&(head, _)| head <= cut) else {
                // Every row starting at or before the cut is taken, from every stream:
                // the ones a stream's next batch holds too, so that rows tying with the
                // cut are in one cut and come out in stream order however the batches
                // and chunks fall (D81). Up to a bound: a stream of a million rows with
                // one start (a hostile or broken input) must not come in one cut; past
                // the bound the rest of a tie goes to the next cut, as before.
                if exhausted.is_empty() || cut_bytes >= rocpd_model::BATCH_BYTES {
                    break;
                }
                for id in std::mem::take(&mut exhausted) {
                    self.refill(id)?;
                }
                continue;
            };
            self.heads.pop();
            let c = &mut self.cursors[id];
            let n = c.starts().partition_point(|&s| s <= cut);
            let Some(batch) = c.batch.clone() else {
                continue;
            };
            // What the chunk adds to memory. A batch the piece ends is replaced by the
            // stream's next one while the chunk still holds it: all of it counts, once per
            // chunk however many cuts it gave rows to. A batch the stream still holds costs
            // the chunk only its share of rows (stages copy rows, not batches). Counting whole
            // batches for small pieces ended chunks of many inputs after a few rows per
            // stream (D81).
            let rows = batch.num_rows().max(1);
            let bytes = if c.offset + n >= batch.num_rows() {
                if c.counted_in == Some(self.chunk_no) {
                    0
                } else {
                    c.counted_in = Some(self.chunk_no);
                    c.bytes
                }
            } else {
                (c.bytes / rows).saturating_mul(n)
            };
            cut_bytes = cut_bytes.saturating_add(bytes);
            pieces.push(Piece {
                id: c.id,
                seq: c.seq,
                table: c.table,
                batch,
                offset: c.offset,
                len: n,
                bytes,
            });
            c.offset += n;
            match c.bounds() {
                Some((first, _)) => self.heads.push(Reverse((first, id))),
                None => exhausted.push(id),
            }
        }
        for id in exhausted {
            self.refill(id)?;
        }
        Ok(Some(pieces))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use rocpd_model::BatchBuilder;
    use rocpd_model::ColumnBuilder;

    /// A stream of `table` rows with the given (start, end) pairs, in batches of `per`.
    pub(crate) struct VecStream {
        pub(crate) table: Table,
        pub(crate) rows: Vec<(i64, i64)>,
        pub(crate) per: usize,
    }

    impl BatchStream for VecStream {
        fn table(&self) -> Table {
            self.table
        }
        fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
            if self.rows.is_empty() {
                return Ok(None);
            }
            let take: Vec<_> = self.rows.drain(..self.per.min(self.rows.len())).collect();
            batch_of(self.table, &take, "x").map(Some)
        }
    }

    /// A batch of `table` rows with the given (start, end) pairs; `text` in every
    /// non-nullable string column.
    fn batch_of(table: Table, take: &[(i64, i64)], text: &str) -> Result<RecordBatch> {
        let mut b = BatchBuilder::new(table, take.len());
        for (i, (s, e)) in take.iter().enumerate() {
            for (c, spec) in table.columns().iter().enumerate() {
                let v = match spec.name {
                    "start" => Some(*s),
                    "end" => Some(*e),
                    "id" => Some(i as i64),
                    _ => None,
                };
                match b.column(c) {
                    ColumnBuilder::U32(x) => x.append_value(0),
                    ColumnBuilder::I64(x) => match (v, spec.nullable) {
                        (Some(v), _) => x.append_value(v),
                        (None, false) => x.append_value(0),
                        (None, true) => x.append_null(),
                    },
                    ColumnBuilder::Str(x) if !spec.nullable => x.append_value(text),
                    other => other.push_null(),
                }
            }
            b.end_row();
        }
        b.finish()
    }

    /// A stream whose rows are out of start order, inside a batch or across two, is an
    /// error, not a merge that takes nothing forever (a database's text start sorted
    /// after every number once did that).
    #[test]
    fn rows_out_of_start_order_are_an_error_not_a_hang() {
        for (rows, per) in [(vec![(5, 5), (1, 1)], 2), (vec![(5, 5), (1, 1)], 1)] {
            let streams: Vec<Box<dyn BatchStream>> = vec![
                Box::new(VecStream {
                    table: Table::Region,
                    rows,
                    per,
                }),
                Box::new(VecStream {
                    table: Table::Marker,
                    rows: vec![(3, 3), (4, 4)],
                    per: 1,
                }),
            ];
            let mut merge = TimeMerge::new(streams);
            let e = loop {
                match merge.next_chunk() {
                    Ok(Some(_)) => continue,
                    Ok(None) => panic!("no error for rows out of order"),
                    Err(e) => break e.to_string(),
                }
            };
            assert!(e.contains("out of start order"), "{e}");
        }
    }

    /// One batch of `rows` whose string columns hold `text`.
    struct FatStream {
        rows: Vec<(i64, i64)>,
        text: String,
    }

    impl BatchStream for FatStream {
        fn table(&self) -> Table {
            Table::Region
        }
        fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
            if self.rows.is_empty() {
                return Ok(None);
            }
            let rows = std::mem::take(&mut self.rows);
            batch_of(Table::Region, &rows, &self.text).map(Some)
        }
    }

    /// One dense stream in batches of 100 rows (it sets every cut) beside 100 sparse
    /// streams of one batch each, whose strings are `text_bytes` long.
    fn dense_beside_sparse(text_bytes: usize) -> TimeMerge<'static> {
        let mut streams: Vec<Box<dyn BatchStream>> = vec![Box::new(VecStream {
            table: Table::Region,
            rows: (0..10_000).map(|t| (t, t)).collect(),
            per: 100,
        })];
        for k in 0..100 {
            streams.push(Box::new(FatStream {
                rows: (0..100).map(|i| (k + 100 * i, k + 100 * i)).collect(),
                text: "y".repeat(text_bytes),
            }));
        }
        TimeMerge::new(streams).with_min_rows(4096)
    }

    #[test]
    fn a_chunk_counts_the_rows_it_takes_from_batches_that_stay() {
        // Each cut takes a row from each sparse batch (100 KiB each, 1 KiB a row); counted
        // whole, a hundred of them would end the chunk at its first cut.
        let first = dense_beside_sparse(1024).next_chunk().unwrap().unwrap();
        assert!(first.rows() >= 4096, "{} rows", first.rows());
        // Rows of 100 KiB strings still end a chunk early: a cut's 100 such rows are
        // 10 MiB, over the bound of 8 MiB.
        let first = dense_beside_sparse(100 << 10)
            .next_chunk()
            .unwrap()
            .unwrap();
        assert!(first.rows() < 4096, "{} rows", first.rows());
    }

    pub(crate) fn lcg(seed: &mut u64) -> i64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) as i64
    }

    #[test]
    fn merged_chunks_are_time_ordered_and_complete() {
        let mut seed = 42;
        let mut total = 0;
        let mut streams: Vec<Box<dyn BatchStream>> = Vec::new();
        for (k, table) in [
            Table::Region,
            Table::KernelDispatch,
            Table::Sample,
            Table::Region,
        ]
        .into_iter()
        .enumerate()
        {
            let mut rows: Vec<(i64, i64)> = (0..500 + 300 * k)
                .map(|_| {
                    let s = lcg(&mut seed) % 100_000;
                    (s, s + lcg(&mut seed) % 50)
                })
                .collect();
            rows.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
            total += rows.len();
            streams.push(Box::new(VecStream {
                table,
                rows,
                per: 37 + 50 * k,
            }));
        }
        let mut merge = TimeMerge::new(streams);
        let mut last = i64::MIN;
        let mut seen = 0;
        while let Some(chunk) = merge.next_chunk().unwrap() {
            assert!(chunk.rows() > 0);
            let mut prev = (i64::MIN, i64::MAX);
            for (b, r) in chunk.time_order() {
                let batch = &chunk.batches[b].batch;
                let col = |c: usize| {
                    batch
                        .column(c)
                        .as_any()
                        .downcast_ref::<Int64Array>()
                        .unwrap()
                        .value(r)
                };
                let (s, e) = (col(col::START), col(col::END));
                assert!(s >= last, "chunks overlap in time");
                assert!((s, std::cmp::Reverse(e)) >= (prev.0, std::cmp::Reverse(prev.1)));
                prev = (s, e);
                seen += 1;
            }
            last = chunk.max_start().unwrap();
        }
        assert_eq!(seen, total);
    }

    /// (start, end, table) of every row, in the chunk's time order.
    fn rows_in_order(chunk: &Chunk) -> Vec<(i64, i64, Table)> {
        chunk
            .time_order()
            .map(|(b, r)| {
                let batch = &chunk.batches[b].batch;
                let v = |c: usize| batch.column(c).as_primitive::<Int64Type>().value(r);
                (v(col::START), v(col::END), chunk.batches[b].table)
            })
            .collect()
    }

    /// Streams (of distinct tables, to tell them apart) whose rows tie row for row, so
    /// that only the order of the batches decides which comes first.
    fn tied_streams(n: usize, per: usize) -> Vec<Box<dyn BatchStream>> {
        [
            Table::Sample,
            Table::KernelDispatch,
            Table::Region,
            Table::MemoryCopy,
        ][..n]
            .iter()
            .map(|&table| {
                let rows = (0..200).map(|i| (i / 3, i / 3 + 5)).collect();
                Box::new(VecStream { table, rows, per }) as Box<dyn BatchStream>
            })
            .collect()
    }

    #[test]
    fn joined_cuts_hold_a_slice_per_stream_batch_and_order_ties_by_stream() {
        // Small batches: every cut holds a few rows of each stream.
        let mut joined = TimeMerge::new(tied_streams(4, 10)).with_min_rows(10_000);
        let chunk = joined.next_chunk().unwrap().unwrap();
        assert_eq!(chunk.rows(), 800);
        assert!(joined.next_chunk().unwrap().is_none());
        // One slice per batch of each stream (20 each), not one per stream and cut.
        assert_eq!(chunk.batches.len(), 4 * 20);
        // Ties come in stream order, as with one batch per stream: where a batch ends no
        // longer decides (one slice per cut put the rest of a tie after the other streams).
        let mut whole = TimeMerge::new(tied_streams(4, 1000)).with_min_rows(10_000);
        let expected = rows_in_order(&whole.next_chunk().unwrap().unwrap());
        assert_eq!(rows_in_order(&chunk), expected);
        let first: Vec<Table> = expected[..4].iter().map(|r| r.2).collect();
        assert_eq!(
            first,
            [
                Table::Sample,
                Table::Sample,
                Table::Sample,
                Table::KernelDispatch
            ]
        );
        // Whole batches: a cut takes a batch's rows in one piece when nothing limits it.
        let mut big = TimeMerge::new(tied_streams(3, 1000)).with_min_rows(10_000);
        assert_eq!(big.next_chunk().unwrap().unwrap().batches.len(), 3);
    }

    #[test]
    fn ties_come_in_stream_order_however_batches_and_chunks_fall() {
        // The rows of every chunk in time order, chunk after chunk.
        let order = |per: usize, min_rows: usize| {
            let mut merge = TimeMerge::new(tied_streams(4, per)).with_min_rows(min_rows);
            let mut rows = Vec::new();
            while let Some(chunk) = merge.next_chunk().unwrap() {
                rows.extend(rows_in_order(&chunk));
            }
            rows
        };
        let expected = order(1000, 10_000);
        assert_eq!(expected.len(), 800);
        // Batches of 1, 2 and 4 rows end inside a tie of three rows; with one chunk per
        // cut, a tie split between two cuts came out of stream order.
        for per in [1, 2, 4, 7, 10] {
            for min_rows in [0, 5, 10_000] {
                assert_eq!(
                    order(per, min_rows),
                    expected,
                    "per {per}, min rows {min_rows}"
                );
            }
        }
    }

    #[test]
    fn a_cut_takes_ties_from_next_batches_up_to_the_bound() {
        // One start for 10,000 rows of 1 KiB strings (about 10 MiB), in batches of 100.
        let mut merge = TimeMerge::new(vec![Box::new(FatBatches {
            left: 100,
            text: "z".repeat(1024),
        })]);
        let first: usize = merge
            .next_cut()
            .unwrap()
            .unwrap()
            .iter()
            .map(|p| p.len)
            .sum();
        // Ties from next batches, but not the whole stream in one cut.
        assert!(
            first > 100 && first < 10_000,
            "{first} rows in the first cut"
        );
        let mut total = first;
        while let Some(pieces) = merge.next_cut().unwrap() {
            total += pieces.iter().map(|p| p.len).sum::<usize>();
        }
        assert_eq!(total, 10_000);
    }

    /// `left` batches of 100 rows that all start at 0, with fat strings.
    struct FatBatches {
        left: usize,
        text: String,
    }

    impl BatchStream for FatBatches {
        fn table(&self) -> Table {
            Table::Region
        }
        fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
            if self.left == 0 {
                return Ok(None);
            }
            self.left -= 1;
            batch_of(Table::Region, &[(0, 1); 100], &self.text).map(Some)
        }
    }

    /// Streams of plain starts in batches (a batch may be empty), for the cut oracle.
    struct Starts(Vec<Vec<i64>>);

    impl BatchStream for Starts {
        fn table(&self) -> Table {
            Table::Region
        }
        fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
            if self.0.is_empty() {
                return Ok(None);
            }
            let starts = self.0.remove(0);
            let mut s = VecStream {
                table: Table::Region,
                rows: starts.iter().map(|&s| (s, s + 1)).collect(),
                per: starts.len().max(1),
            };
            Ok(Some(s.next_batch()?.unwrap_or_else(|| {
                RecordBatch::new_empty(Table::Region.schema())
            })))
        }
    }

    /// The cut as first specified: every stream's rows up to the smallest last start of
    /// the current batches, all streams looked at on every cut. Pieces as (stream, batch
    /// number counting empty batches from 1, offset, rows).
    fn oracle_cuts(streams: &[Vec<Vec<i64>>]) -> Vec<Vec<(usize, u64, usize, usize)>> {
        struct Cur {
            id: usize,
            left: Vec<Vec<i64>>,
            batch: Vec<i64>,
            number: u64,
            offset: usize,
        }
        let mut cur: Vec<Cur> = streams
            .iter()
            .enumerate()
            .map(|(id, b)| Cur {
                id,
                left: b.clone(),
                batch: Vec::new(),
                number: 0,
                offset: 0,
            })
            .collect();
        let mut cuts = Vec::new();
        loop {
            cur.retain_mut(|c| {
                while c.offset >= c.batch.len() {
                    if c.left.is_empty() {
                        return false;
                    }
                    c.batch = c.left.remove(0);
                    c.number += 1;
                    c.offset = 0;
                }
                true
            });
            let Some(cut) = cur.iter().map(|c| *c.batch.last().unwrap()).min() else {
                return cuts;
            };
            let mut pieces = Vec::new();
            for c in &mut cur {
                // A stream's next batches give their rows that tie with the cut to this
                // cut too.
                loop {
                    let n = c.batch[c.offset..].partition_point(|&s| s <= cut);
                    if n > 0 {
                        pieces.push((c.id, c.number, c.offset, n));
                        c.offset += n;
                    }
                    if c.offset < c.batch.len() || c.left.is_empty() {
                        break;
                    }
                    c.batch = c.left.remove(0);
                    c.number += 1;
                    c.offset = 0;
                }
            }
            cuts.push(pieces);
        }
    }

    #[test]
    fn cuts_from_the_heaps_are_the_cuts_of_a_full_scan() {
        let mut seed = 7u64;
        for round in 0..200 {
            let n = 1 + (lcg(&mut seed).unsigned_abs() % 12) as usize;
            let streams: Vec<Vec<Vec<i64>>> = (0..n)
                .map(|_| {
                    // Staggered like ranks of a job, with ties and empty batches.
                    let mut t = lcg(&mut seed).rem_euclid(50);
                    let batches = lcg(&mut seed).rem_euclid(6);
                    (0..batches)
                        .map(|_| {
                            let len = lcg(&mut seed).rem_euclid(5);
                            (0..len)
                                .map(|_| {
                                    t += lcg(&mut seed).rem_euclid(3);
                                    t
                                })
                                .collect()
                        })
                        .collect()
                })
                .collect();
            let want = oracle_cuts(&streams);
            let boxed: Vec<Box<dyn BatchStream>> = streams
                .iter()
                .map(|b| Box::new(Starts(b.clone())) as Box<dyn BatchStream>)
                .collect();
            let mut merge = TimeMerge::new(boxed);
            let mut got = Vec::new();
            while let Some(mut pieces) = merge.next_cut().unwrap() {
                pieces.sort_by_key(|p| p.id);
                got.push(
                    pieces
                        .iter()
                        .map(|p| (p.id, p.seq, p.offset, p.len))
                        .collect::<Vec<_>>(),
                );
            }
            assert_eq!(got, want, "round {round}: {streams:?}");
        }
    }
}
