//! Planning time cuts so that every part of a split Perfetto trace stays under a size cap.
//!
//! [`SizePlanner`] is a dry run: it encodes the trace into a byte counter exactly as the
//! split writers will (a fresh writer per part, rows routed by start time) and cuts before
//! the first row that would take the part over the cap. A second pass then splits by time
//! at those cuts; its parts hold the same rows and so have the same sizes, or smaller (flow
//! markers cut apart by a split are dropped).

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use rocpd_model::{Catalog, Error, Result};
use rocpd_pipeline::{Chunk, OutputReport, Sink};

use crate::writer::Writer;
use crate::PerfettoOptions;
use rocpd_model::view::Cols;

/// Bytes kept free in each part for the next row and what a cut still writes (pending
/// ends and counter points are estimated separately): 64 KiB, or an eighth of the cap.
const SLACK: u64 = 65536;
/// The smallest cap accepted.
const MIN_CAP: u64 = 8192;
/// Upper estimate of the bytes one pending end or counter point takes.
const PENDING_BYTES: u64 = 48;

#[derive(Default)]
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The dry run of a size-capped split. Its result is in the handle given to [`new`].
///
/// [`new`]: SizePlanner::new
pub struct SizePlanner {
    cap: u64,
    opts: PerfettoOptions,
    catalog: Option<Arc<Catalog>>,
    writer: Option<Writer>,
    bytes: Counter,
    last_start: i64,
    rows_in_part: u64,
    cuts: Arc<Mutex<Vec<i64>>>,
}

impl SizePlanner {
    /// A planner for parts of at most `cap` bytes; the cut times are stored in `cuts`.
    pub fn new(cap: u64, opts: PerfettoOptions, cuts: Arc<Mutex<Vec<i64>>>) -> Self {
        SizePlanner {
            cap,
            opts,
            catalog: None,
            writer: None,
            bytes: Counter::default(),
            last_start: i64::MIN,
            rows_in_part: 0,
            cuts,
        }
    }

    fn fresh_writer(&self) -> Writer {
        Writer::new(
            self.catalog.clone().expect("begin first"),
            self.opts.clone(),
        )
    }

    /// Completes the current part; errors if it is over the cap.
    fn close_part(&mut self) -> Result<()> {
        let mut w = self.writer.take().expect("open part");
        w.finish(&mut self.bytes)
            .map_err(|e| Error::Usage(e.to_string()))?;
        if self.bytes.0 > self.cap {
            return Err(Error::Usage(format!(
                "--max-file-size {} bytes is too small: the events starting at {} ns alone take {} bytes in one part",
                self.cap, self.last_start, self.bytes.0
            )));
        }
        Ok(())
    }
}

impl Sink for SizePlanner {
    fn projection(&self) -> rocpd_model::Projection {
        // The dry run must see what the real writer sees, to measure the same bytes.
        crate::projection(&self.opts)
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        self.catalog = Some(catalog.clone());
        self.writer = Some(self.fresh_writer());
        if self.cap < MIN_CAP {
            return Err(Error::Usage(format!(
                "--max-file-size {} bytes is too small for a trace part (at least {MIN_CAP} bytes)",
                self.cap
            )));
        }
        Ok(())
    }

    fn write(&mut self, chunk: &Chunk) -> Result<()> {
        let cols: Vec<Cols<'_>> = chunk
            .batches
            .iter()
            .map(|b| Cols::new(&b.batch, b.table))
            .collect();
        for (b, r) in chunk.time_order() {
            let start = cols[b].start.value(r);
            let w = self.writer.as_ref().expect("open part");
            let projected =
                self.bytes.0 + w.pending() as u64 * PENDING_BYTES + SLACK.min(self.cap / 8);
            if projected > self.cap && start > self.last_start && self.rows_in_part > 0 {
                self.close_part()?;
                self.cuts.lock().expect("not poisoned").push(start);
                self.bytes = Counter::default();
                self.rows_in_part = 0;
                self.writer = Some(self.fresh_writer());
            }
            let w = self.writer.as_mut().expect("open part");
            w.row(&mut self.bytes, chunk.batches[b].table, &cols[b], r)
                .map_err(|e| Error::Usage(e.to_string()))?;
            self.rows_in_part += 1;
            self.last_start = start;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<Vec<OutputReport>> {
        self.close_part()?;
        Ok(Vec::new())
    }
}
