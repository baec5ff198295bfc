//! Converts RocPD databases to one OTF2 archive, without the CLI:
//!
//!     cargo run -p rocpd-otf2 --example to_otf2 -- OUT.otf2 IN.db...

use std::path::PathBuf;
use std::sync::Arc;

use rocpd_db::Database;
use rocpd_model::Catalog;
use rocpd_otf2::{Otf2Options, Otf2Sink};
use rocpd_pipeline::{BatchStream, Sink, TimeMerge};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let anchor = args.next().ok_or("usage: to_otf2 OUT.otf2 IN.db...")?;
    let dbs: Vec<Database> = args.map(|p| Database::open(&p)).collect::<Result<_, _>>()?;
    let mut cat = Catalog::default();
    for db in &dbs {
        cat.extend(db.catalog(cat.sources.len() as u32)?);
    }
    let mut opts = Otf2Options::default();
    if let Some(b) = std::env::var("OTF2_BUFFER_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        opts.buffer_bytes = b;
    }
    let mut sink = Box::new(Otf2Sink::new(&anchor, opts));
    sink.begin(&Arc::new(cat))?;
    let mut streams = 0;
    for db in &dbs {
        streams += db.queries(0, 1, false)?.len();
    }
    // The CLI's batch size: 64 Ki rows over all streams.
    let rows = (65536 / streams.max(1)).clamp(256, 8192);
    let mut queries = Vec::new();
    let mut first = 0u32;
    for db in &dbs {
        queries.extend(db.queries(first, rows, false)?);
        first += db.table_sets().len() as u32;
    }
    let mut streams: Vec<Box<dyn BatchStream + '_>> = Vec::new();
    for q in &mut queries {
        streams.push(Box::new(q.stream()?));
    }
    let mut merge = TimeMerge::new(streams);
    while let Some(chunk) = merge.next_chunk()? {
        sink.write(&chunk)?;
    }
    for r in sink.finish()? {
        println!("{}", serde_like(&r));
    }
    Ok(())
}

fn serde_like(r: &rocpd_pipeline::OutputReport) -> String {
    format!(
        "wrote {} ({} bytes): {:?}\n  notes: {:?}",
        r.path.display(),
        r.bytes,
        r.rows,
        r.notes
    )
}
