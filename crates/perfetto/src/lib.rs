//! Streaming Perfetto (`.pftrace`) writer.
//!
//! Packets are written as they are produced, on one trusted packet sequence with interned
//! names, categories and annotation names. The track layout follows AMD's `rocpd convert`
//! (process and thread tracks, `STREAM [id]` or `COMPUTE Agent [i] QUEUE [k] GPU` tracks,
//! `COPY BYTES`, `ALLOCATE BYTES` and `PMC` counter tracks, flows from API calls to the
//! kernels and copies they launched); see `formats/perfetto/README.md`.

#![warn(missing_docs)]

mod encoder;
mod plan;
pub mod proto;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocpd_model::{Catalog, Result};
use rocpd_pipeline::{Chunk, OutputFile, OutputReport, Sink};

pub use plan::SizePlanner;
pub use writer::PerfettoOptions;

/// A [`Sink`] writing one `.pftrace` file.
pub struct PerfettoSink {
    path: PathBuf,
    opts: PerfettoOptions,
    state: Option<(OutputFile, writer::Writer)>,
}

impl PerfettoSink {
    /// A sink that will write `path` (created at `begin`, renamed into place at `finish`).
    pub fn new(path: &Path, opts: PerfettoOptions) -> Self {
        PerfettoSink {
            path: path.to_path_buf(),
            opts,
            state: None,
        }
    }
}

/// The columns a trace written with `opts` shows: no JSON text, but the API arguments
/// when they are annotated; counter values become counter tracks, which show none of
/// their event's columns (the reader then skips two lookups per value).
pub fn projection(opts: &PerfettoOptions) -> rocpd_model::Projection {
    let p = rocpd_model::Projection::without_json_text()
        .without_event_columns_in(rocpd_model::Table::PmcValue);
    if opts.annotations && opts.annotate_args {
        p.with("args")
    } else {
        p
    }
}

impl Sink for PerfettoSink {
    fn projection(&self) -> rocpd_model::Projection {
        projection(&self.opts)
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        let file = OutputFile::create(&self.path)?;
        self.state = Some((
            file,
            writer::Writer::new(catalog.clone(), self.opts.clone()),
        ));
        Ok(())
    }

    fn write(&mut self, chunk: &Chunk) -> Result<()> {
        let (file, w) = self.state.as_mut().expect("begin before write");
        w.write_chunk(file.writer(), chunk)
            .map_err(|e| file.io_error(e))
    }

    fn finish(self: Box<Self>) -> Result<Vec<OutputReport>> {
        let (mut file, mut w) = self.state.expect("begin before finish");
        w.finish(file.writer()).map_err(|e| file.io_error(e))?;
        let mut report = std::mem::take(&mut w.report);
        report.path = file.path().to_path_buf();
        report.bytes = file.commit()?;
        Ok(vec![report])
    }
}
