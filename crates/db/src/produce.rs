//! Reading a set of databases as one time-ordered event stream, on the caller's thread:
//! for the writers' tests, the fuzzer and small programs. Runs use the facade crate
//! `rocpd`, which also decodes on a pool and resolves windows and markers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocpd_model::{Catalog, Projection, Result};
use rocpd_pipeline::{Message, Numbered, OutputReport, ProduceOptions, Sink};

use crate::Database;

/// Opens `paths` and emits their catalog (sources numbered in order, passed through
/// `adjust` first), the PMC rows that cannot be placed in time, then every table of every
/// database merged in time order. `with_args` fills the regions' `args` column.
pub fn produce(
    paths: &[PathBuf],
    with_args: bool,
    adjust: &dyn Fn(&mut Catalog),
    emit: &mut dyn FnMut(Message) -> Result<()>,
) -> Result<()> {
    let mut sources: Vec<Numbered> = Vec::new();
    let mut catalog = Catalog::default();
    for p in paths {
        let db = Database::open(p)?;
        let first = catalog.sources.len() as u32;
        catalog.extend(db.catalog(first)?);
        sources.push((first, Box::new(db)));
    }
    adjust(&mut catalog);
    let projection = if with_args {
        Projection::all()
    } else {
        Projection::all().without("args")
    };
    let options = ProduceOptions {
        projection,
        ..Default::default()
    };
    rocpd_pipeline::produce(&mut sources, Arc::new(catalog), &options, emit)
}

/// Runs `paths` straight into `sink` (no stages, no thread): for tests and examples.
pub fn convert_into(paths: &[PathBuf], sink: &mut dyn Sink) -> Result<()> {
    produce(paths, false, &|_| {}, &mut feed(sink))
}

/// What hands a run's messages to `sink` on the caller's thread: the catalog to `begin`,
/// chunks to `write` (dropped-row counts are for reports, which these helpers do not make).
fn feed(sink: &mut dyn Sink) -> impl FnMut(Message) -> Result<()> + '_ {
    move |m| match m {
        Message::Catalog(c) => sink.begin(&c),
        Message::Chunk(c) => sink.write(&c),
        Message::Dropped(_) => Ok(()),
    }
}

/// Writes every row of `sources` (numbered as `catalog` numbers them) as one merged RocPD
/// database at `out`, each source's table set written from its rows: how a program, a
/// test or the fuzzer turns inputs read directly (rocprofv3, Proton) into a database
/// without the facade. Runs use the facade, which also copies database inputs.
pub fn write_rocpd(
    sources: &mut Vec<Numbered>,
    catalog: Arc<Catalog>,
    out: &Path,
) -> Result<Vec<OutputReport>> {
    let all: Vec<u32> = (0..catalog.sources.len() as u32).collect();
    let mut sink: Box<dyn Sink> = Box::new(crate::RocpdSink::new(out).with_direct_sources(&all));
    let options = ProduceOptions {
        projection: sink.projection(),
        ..Default::default()
    };
    rocpd_pipeline::produce(sources, catalog, &options, &mut feed(sink.as_mut()))?;
    sink.finish()
}
