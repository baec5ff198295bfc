//! `rocpd convert`: inputs → event stream → writers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use rocpd_db::Database;
use rocpd_model::{Catalog, Table};
use rocpd_pipeline::{
    run, BatchStream, Message, RunOptions, RunReport, Sink, StageDrop, TimeMerge,
};

/// Rows buffered over all input streams at once; each stream's batch size follows from it.
const ROW_BUDGET: usize = 1 << 16;

/// Batch size per stream for `streams` concurrent streams.
pub fn batch_rows(streams: usize) -> usize {
    (ROW_BUDGET / streams.max(1)).clamp(256, 8192)
}

/// Opens every input as a RocPD database.
pub fn open_all(inputs: &[PathBuf]) -> Result<Vec<Database>> {
    inputs
        .iter()
        .map(|p| Database::open(p).map_err(anyhow::Error::from))
        .collect()
}

/// Reads the catalogs of `dbs`, numbering sources in order.
pub fn catalog_of(dbs: &[Database]) -> Result<Catalog> {
    let mut cat = Catalog::default();
    let mut seen: std::collections::HashMap<String, PathBuf> = Default::default();
    for db in dbs {
        let c = db.catalog(cat.sources.len() as u32)?;
        for s in &c.sources {
            if let Some(first) = seen.insert(s.guid.clone(), s.path.clone()) {
                anyhow::bail!(
                    "{}: holds the same process (guid {}) as {}; give each database once",
                    s.path.display(),
                    s.guid,
                    first.display()
                );
            }
        }
        cat.extend(c);
    }
    Ok(cat)
}

/// Streams every table of every database, merged in time order, into `emit`.
fn produce(
    dbs: Vec<Database>,
    with_args: bool,
    emit: &mut dyn FnMut(Message) -> rocpd_model::Result<()>,
) -> rocpd_model::Result<()> {
    let catalog = {
        let mut cat = Catalog::default();
        for db in &dbs {
            cat.extend(db.catalog(cat.sources.len() as u32)?);
        }
        cat
    };
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
    // Count the streams first, to size their batches.
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

/// Runs the conversion of `dbs` into `sinks`.
pub fn convert(
    dbs: Vec<Database>,
    with_args: bool,
    sinks: Vec<Box<dyn Sink>>,
    options: &RunOptions,
    on_progress: &mut dyn FnMut(&rocpd_pipeline::Progress),
) -> Result<RunReport> {
    let report = run(
        move |emit| produce(dbs, with_args, emit),
        Vec::new(),
        sinks,
        options,
        on_progress,
    )?;
    Ok(report)
}

/// `<dir>/<name>_results.<ext>`, as rocpd names its outputs.
pub fn output_path(dir: &Path, name: &str, ext: &str) -> PathBuf {
    if name.is_empty() {
        dir.join(format!("results.{ext}"))
    } else {
        dir.join(format!("{name}_results.{ext}"))
    }
}

/// Writes the report as JSON.
pub fn write_report(path: &Path, report: &RunReport) -> Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text).with_context(|| format!("{}: cannot write report", path.display()))
}
