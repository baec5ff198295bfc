//! The timeline writers, the splits, the filter and the window allocate per batch, per
//! track and per distinct string, never per row: a counting allocator counts the heap
//! allocations made while a generated trace's chunks are written (or filtered), once as
//! they are and once with every row four times in the same batches, and the extra rows
//! must cost (almost) no extra allocations.
//!
//! The copies of a row are alike in every column, so what a sink allocates once per new
//! key (a counter sum per dispatch and counter, a "same as the last row" cache) costs
//! the same in both runs and is not seen here; that is output held per key, not work per
//! row.
//!
//! Only allocations made on the test's thread while a chunk is written count: decoding
//! (SQLite, Arrow builders, the merge) happens before, on the reader's own thread.

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::UInt32Array;
use common::counting::{count_this_thread, this_thread_count, Counting};
use rocpd::{EventOptions, Inputs, Projection};
use rocpd_pipeline::{Chunk, Sink};
use rocpd_stages::{SplitMode, SplitSink};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The chunks of a generated trace of `iterations` iterations, decoded up front (the test
/// inputs are small), with the columns `projection` asks for.
fn chunks(
    dir: &Path,
    iterations: u32,
    projection: Projection,
) -> (Arc<rocpd::Catalog>, Vec<Chunk>) {
    let cfg = rocpd_gen::GenConfig {
        seed: 11,
        processes: 2,
        nodes: 2,
        gpus_per_node: 1,
        iterations,
        ..Default::default()
    };
    let dbs = rocpd_gen::generate(&cfg, dir).unwrap();
    let mut inputs = Inputs::open(&dbs, &Default::default()).unwrap();
    let options = EventOptions {
        projection,
        threads: 1,
        ..Default::default()
    };
    let stream = inputs.chunks(&options).unwrap();
    let catalog = stream.catalog().clone();
    let chunks = stream.collect::<rocpd::Result<Vec<_>>>().unwrap();
    (catalog, chunks)
}

/// Rows written and allocations made while `sink` was given `chunks`.
fn allocations_while_writing(
    mut sink: Box<dyn Sink>,
    catalog: &Arc<rocpd::Catalog>,
    chunks: &[Chunk],
) -> (u64, u64) {
    sink.begin(catalog).unwrap();
    let mut rows = 0u64;
    let before = this_thread_count();
    count_this_thread(true);
    for chunk in chunks {
        rows += chunk.rows() as u64;
        sink.write(chunk).unwrap();
    }
    count_this_thread(false);
    let made = this_thread_count() - before;
    sink.finish().unwrap();
    (rows, made)
}

/// The same chunks with every row of each batch given four times over, one copy after
/// the other: as many batches, in the same time order, over the same times, with the same
/// names, tracks and split keys, and four times the rows.
fn repeated(chunks: &[Chunk]) -> Vec<Chunk> {
    chunks
        .iter()
        .map(|c| Chunk {
            batches: c
                .batches
                .iter()
                .map(|b| {
                    let n = b.batch.num_rows() as u32;
                    let rows = UInt32Array::from_iter_values((0..n * 4).map(|i| i / 4));
                    let batch = arrow_select::take::take_record_batch(&b.batch, &rows).unwrap();
                    rocpd_model::EventBatch {
                        table: b.table,
                        batch,
                    }
                })
                .collect(),
        })
        .collect()
}

/// Allocations per extra row between a trace's chunks and the same chunks with every
/// row four times, for the sink `make` builds (given the output directory). Both have the
/// same batches, times, names, tracks and split keys, so what a sink allocates per
/// batch, per track or per output is the same in both, and what is left is what it
/// allocates per row.
fn per_extra_row(name: &str, projection: Projection, make: &dyn Fn(&Path) -> Box<dyn Sink>) -> f64 {
    let tmp = tempfile::tempdir().unwrap();
    let (catalog, once) = chunks(&tmp.path().join("in"), 80, projection);
    let four_times = repeated(&once);
    let mut seen = Vec::new();
    for (k, chunks) in [once, four_times].iter().enumerate() {
        let out = tmp.path().join(format!("out{k}"));
        std::fs::create_dir_all(&out).unwrap();
        let (rows, made) = allocations_while_writing(make(&out), &catalog, chunks);
        eprintln!(
            "{name}: {rows} rows in {} batches, {made} allocations while writing",
            chunks.iter().map(|c| c.batches.len()).sum::<usize>()
        );
        seen.push((rows, made));
    }
    let (small, large) = (seen[0], seen[1]);
    assert_eq!(large.0, small.0 * 4, "every row four times");
    large.1.saturating_sub(small.1) as f64 / (large.0 - small.0) as f64
}

/// Fewer than one allocation per 200 extra rows (what is left, at most 0.003 when this
/// was written, is a few more lanes, as the repeated rows overlap, and buffers growing):
/// one allocation per row of any one kind (memory-allocation rows are about one in a
/// hundred here) is caught.
const AT_MOST_PER_ROW: f64 = 0.005;

#[test]
fn the_perfetto_writer_does_not_allocate_per_row() {
    let opts = rocpd::PerfettoOptions::default();
    let projection = rocpd_perfetto::projection(&opts);
    let per_row = per_extra_row("perfetto", projection, &|out| {
        Box::new(rocpd_perfetto::PerfettoSink::new(
            &out.join("t.pftrace"),
            rocpd::PerfettoOptions::default(),
        ))
    });
    assert!(
        per_row < AT_MOST_PER_ROW,
        "{per_row:.3} allocations per row"
    );
}

#[test]
fn the_otf2_writer_does_not_allocate_per_row() {
    let per_row = per_extra_row("otf2", Projection::all(), &|out| {
        Box::new(rocpd_otf2::Otf2Sink::new(
            &out.join("t.otf2"),
            rocpd::Otf2Options::default(),
        ))
    });
    assert!(
        per_row < AT_MOST_PER_ROW,
        "{per_row:.3} allocations per row"
    );
}

/// The first and last start time of the rows of `chunks`.
fn start_range(chunks: &[Chunk]) -> (i64, i64) {
    let starts = chunks.iter().flat_map(|c| &c.batches).flat_map(|b| {
        let a = b
            .batch
            .column(rocpd_model::col::START)
            .as_primitive::<Int64Type>();
        a.values().to_vec()
    });
    starts.fold((i64::MAX, i64::MIN), |(lo, hi), s| (lo.min(s), hi.max(s)))
}

/// A split into Perfetto files, one per key.
fn split_sink(mode: SplitMode, out: &Path) -> Box<dyn Sink> {
    let out = out.to_path_buf();
    Box::new(SplitSink::new(
        mode,
        Box::new(move |key| {
            let path = out.join(format!("{}.pftrace", key.label));
            let sink = rocpd_perfetto::PerfettoSink::new(&path, Default::default());
            Ok(Box::new(sink) as Box<dyn Sink>)
        }),
        None,
    ))
}

#[test]
fn a_split_does_not_allocate_per_row() {
    let projection = rocpd_perfetto::projection(&Default::default());
    // Eight parts of equal time over the trace.
    let (first, last) = start_range(
        &chunks(
            &tempfile::tempdir().unwrap().path().join("in"),
            80,
            projection.clone(),
        )
        .1,
    );
    let time = SplitMode::Time {
        cuts: (1..8).map(|k| first + (last - first) / 8 * k).collect(),
    };
    for mode in [SplitMode::Process, SplitMode::Node, SplitMode::Agent, time] {
        let name = format!("split {mode:?}");
        let per_row = per_extra_row(&name, projection.clone(), &|out| {
            split_sink(mode.clone(), out)
        });
        assert!(
            per_row < AT_MOST_PER_ROW,
            "{name}: {per_row:.3} allocations per row"
        );
    }
}

/// Stages as a sink: each chunk through them, and every row kept.
struct Staged(Vec<Box<dyn rocpd_pipeline::Stage>>);

impl Sink for Staged {
    fn begin(&mut self, catalog: &Arc<rocpd::Catalog>) -> rocpd::Result<()> {
        self.0.iter_mut().try_for_each(|s| s.begin(catalog))
    }
    fn write(&mut self, chunk: &Chunk) -> rocpd::Result<()> {
        // A copy of the chunk's list of batches: per batch, alike in both runs.
        let mut c = chunk.clone();
        for s in &mut self.0 {
            c = s.apply(c)?;
        }
        assert_eq!(c.rows(), chunk.rows(), "the rules remove nothing");
        Ok(())
    }
    fn finish(self: Box<Self>) -> rocpd::Result<Vec<rocpd_pipeline::OutputReport>> {
        Ok(Vec::new())
    }
}

#[test]
fn filters_and_the_window_do_not_allocate_per_row() {
    let per_row = per_extra_row("filter and window", Projection::all(), &|_| {
        // Rules that look at every row (a name, a node by name and by id, an agent) and
        // remove none, and a window around everything.
        let rules = [
            "name=^no such name$",
            "node=no-such-host,7",
            "agent=999",
            "pid=1",
        ]
        .map(|r| rocpd_stages::FilterRule::parse(r, false).unwrap())
        .to_vec();
        let window = rocpd_stages::Window::new(i64::MIN / 2, i64::MAX / 2, false, true);
        Box::new(Staged(rocpd_stages::Select::stages(rules, Some(window))))
    });
    assert!(
        per_row < AT_MOST_PER_ROW,
        "{per_row:.3} allocations per row"
    );
}

#[test]
fn the_table_writers_and_the_summary_do_not_allocate_per_row() {
    let csv = per_extra_row("csv", Projection::all(), &|out| {
        Box::new(rocpd_csv::CsvSink::new(out, "t", Default::default()))
    });
    let summary = per_extra_row("summary", Projection::all(), &|_| {
        Box::new(rocpd_summary::SummarySink::new(true, Default::default()))
    });
    for (name, per_row) in [("csv", csv), ("summary", summary)] {
        assert!(
            per_row < AT_MOST_PER_ROW,
            "{name}: {per_row:.3} allocations per row"
        );
    }
    // The Parquet encoder (arrow-rs) allocates for every mini batch of 1,024 values and
    // every page of each of about 30 columns: 0.055 per row here. One allocation per row
    // of ours would add at least one more.
    let parquet = per_extra_row("parquet", Projection::all(), &|out| {
        Box::new(rocpd_parquet::ParquetSink::new(
            &out.join("t.parquet"),
            Default::default(),
        ))
    });
    assert!(parquet < 0.1, "parquet: {parquet:.3} allocations per row");
}
