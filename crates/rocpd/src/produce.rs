//! Reading a set of databases as one time-ordered event stream: the producer side of a
//! pipeline run (catalog first, then chunks), used by the CLI, the writers' tests and
//! examples alike.

use std::path::PathBuf;
use std::sync::Arc;

use rocpd_model::{Catalog, Result, Table};
use rocpd_pipeline::{BatchStream, Message, StageDrop, TimeMerge};

use crate::Database;

/// Rows buffered over all input streams at once; each stream's batch size follows from it.
pub const ROW_BUDGET: usize = 1 << 16;

/// Batch size per stream for `streams` concurrent streams.
pub fn batch_rows(streams: usize) -> usize {
    (ROW_BUDGET / streams.max(1)).clamp(256, 8192)
}

/// Opens `paths` and emits their catalog (sources numbered in order, passed through
/// `adjust` first), the PMC rows that cannot be placed in time, then every table of every
/// database merged in time order. `with_args` fills the regions' `args` column.
pub fn produce(
    paths: &[PathBuf],
    with_args: bool,
    adjust: &dyn Fn(&mut Catalog),
    emit: &mut dyn FnMut(Message) -> Result<()>,
) -> Result<()> {
    let dbs: Vec<Database> = paths
        .iter()
        .map(|p| Database::open(p))
        .collect::<Result<_>>()?;
    let mut catalog = Catalog::default();
    for db in &dbs {
        catalog.extend(db.catalog(catalog.sources.len() as u32)?);
    }
    adjust(&mut catalog);
    emit(Message::Catalog(Arc::new(catalog)))?;
    let mut untimed = 0;
    for db in &dbs {
        untimed += db.untimed_pmc_rows()?;
    }
    if untimed > 0 {
        emit(Message::Dropped(StageDrop {
            stage: "reader (PMC values whose event is neither a kernel dispatch nor a sample have no time)".into(),
            rows: [(Table::PmcValue.name(), untimed)].into_iter().collect(),
        }))?;
    }
    let mut n_streams = 0;
    for db in &dbs {
        n_streams += db.queries(0, 1, false)?.len();
    }
    let rows = batch_rows(n_streams);
    let mut queries = Vec::new();
    let mut first_source = 0u32;
    for db in &dbs {
        queries.extend(db.queries(first_source, rows, with_args)?);
        first_source += db.table_sets().len() as u32;
    }
    let mut streams: Vec<Box<dyn BatchStream + '_>> = Vec::with_capacity(queries.len());
    for q in &mut queries {
        streams.push(Box::new(q.stream()?));
    }
    let mut merge = TimeMerge::new(streams);
    while let Some(chunk) = merge.next_chunk()? {
        emit(Message::Chunk(chunk))?;
    }
    Ok(())
}

/// Runs `paths` straight into `sink` (no stages, no thread): for tests and examples.
pub fn convert_into(paths: &[PathBuf], sink: &mut dyn rocpd_pipeline::Sink) -> Result<()> {
    produce(paths, false, &|_| {}, &mut |m| match m {
        Message::Catalog(c) => sink.begin(&c),
        Message::Chunk(c) => sink.write(&c),
        Message::Dropped(_) => Ok(()),
    })
}
