//! Writing a merged RocPD database: every input table set's `rocpd_<name>_<uuid>` tables
//! copied with their ids and guids (never renumbered), `rocpd_<name>` views over their
//! union, and the analysis views AMD's tools query.
//!
//! Two ways in: [`merge`] copies whole databases inside SQLite (the fast path, lossless);
//! [`RocpdSink`] is a pipeline sink for filtered, windowed or split runs and for inputs
//! read directly: for a database source it records the ids of the rows that reach it (in a
//! TEMP table, on disk) and at `finish` copies exactly those rows, the events they
//! reference and the arguments of those events, plus the info rows of the table sets
//! those rows come from (of every input's when no row reached it); a source with no
//! database behind it (rocprofv3 CSV/JSON, Proton) gets its table set written from the
//! rows themselves as they arrive ([`crate::rows`]). Both write to a temporary file that
//! is renamed into place when complete.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use rocpd_model::{col, Catalog, Error, Result, Table};
use rocpd_pipeline::{Chunk, OutputReport, Sink};
use rusqlite::{Connection, OpenFlags};

use crate::rows::SetWriter;
use crate::{quote_ident, Database, TableSet};

/// Which source table a model table's rows come from, and its code in the kept-id table.
fn source_table(t: Table) -> (&'static str, i64) {
    match t {
        Table::Region | Table::Marker => ("rocpd_region", 1),
        Table::Sample => ("rocpd_sample", 2),
        Table::KernelDispatch => ("rocpd_kernel_dispatch", 3),
        Table::MemoryCopy => ("rocpd_memory_copy", 4),
        Table::MemoryAllocation => ("rocpd_memory_allocate", 5),
        Table::PmcValue => ("rocpd_pmc_event", 6),
    }
}

/// Tables whose rows are events (selected by kept ids); every other table is info data,
/// copied whole.
const EVENT_TABLES: [&str; 6] = [
    "rocpd_region",
    "rocpd_sample",
    "rocpd_kernel_dispatch",
    "rocpd_memory_copy",
    "rocpd_memory_allocate",
    "rocpd_pmc_event",
];

/// Percent-encodes a path for an SQLite URI.
/// An output database under construction (temporary name until [`Output::commit`]).
struct Output {
    path: PathBuf,
    tmp: PathBuf,
    conn: Option<Connection>,
    tables: BTreeMap<String, Vec<String>>,
    _registered: rocpd_pipeline::cleanup::Registered,
}

impl Output {
    fn create(path: &Path) -> Result<Output> {
        let err = |e: &dyn std::fmt::Display| Error::output(path, e.to_string());
        rocpd_pipeline::refuse_special(path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| err(&e))?;
        }
        let tmp = rocpd_pipeline::temp_sibling(path)?;
        let registered = rocpd_pipeline::cleanup::Registered::new(&tmp);
        let _ = std::fs::remove_file(&tmp);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&tmp, flags).map_err(|e| err(&e))?;
        // The file is renamed into place only when complete, so no journal is needed.
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF; \
             PRAGMA temp_store = FILE; PRAGMA cache_size = -16384;",
        )
        .map_err(|e| err(&e))?;
        Ok(Output {
            path: path.to_path_buf(),
            tmp,
            conn: Some(conn),
            tables: BTreeMap::new(),
            _registered: registered,
        })
    }

    fn conn(&self) -> &Connection {
        self.conn.as_ref().expect("open")
    }

    /// Registers tables created outside [`Output::copy_set`] (a set written from rows).
    fn add_tables(&mut self, tables: Vec<(&'static str, String)>) -> Result<()> {
        for (base, full) in tables {
            claim_table(&mut self.tables, base, full).map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        Error::output(&self.path, e.to_string())
    }

    /// Copies the table sets of `db` whose guid passes `take`; with `kept`, event rows are
    /// limited to the kept ids of each set's source index.
    fn copy_database(
        &mut self,
        db: &Database,
        sources: &[(u32, String)],
        selective: bool,
    ) -> Result<()> {
        let conn = self.conn.as_ref().expect("open");
        conn.execute("ATTACH DATABASE ?1 AS src", [db.uri()])
            .map_err(|e| Error::input(db.path(), "attach", e.to_string()))?;
        let result = (|| -> Result<()> {
            for set in db.table_sets() {
                let Some((source, _)) = sources.iter().find(|(_, g)| *g == set.guid) else {
                    continue;
                };
                self.copy_set(db.path(), set, selective.then_some(*source))?;
            }
            Ok(())
        })();
        let detach = self.conn().execute_batch("DETACH DATABASE src");
        result?;
        detach.map_err(|e| self.err(e))
    }

    fn copy_set(&mut self, input: &Path, set: &TableSet, kept_source: Option<u32>) -> Result<()> {
        let conn = self.conn.as_ref().expect("open");
        let out_path = self.path.clone();
        // A copy reads the input and writes the output: a full disk or a failed write is
        // the output's (the input is never written).
        let in_err = |place: &str, e: rusqlite::Error| {
            if write_failure(&e) {
                Error::output(&out_path, format!("{place}: {e}"))
            } else {
                Error::input(input, place, e.to_string())
            }
        };
        // Event tables first (selected rows), then the events they reference, then the rest.
        let mut order: Vec<&String> = set.tables.iter().collect();
        order.sort_by_key(|b| match b.as_str() {
            b if EVENT_TABLES.contains(&b) => 0,
            "rocpd_event" => 1,
            "rocpd_arg" => 2,
            _ => 3,
        });
        for base in order {
            let full = format!("{base}{}", set.suffix);
            let q = quote_ident(&full);
            claim_table(&mut self.tables, base, full.clone()).map_err(|e| self.err(e))?;
            let ddl: String = conn
                .query_row(
                    "SELECT sql FROM src.sqlite_master WHERE type = 'table' AND name = ?1",
                    [&full],
                    |r| r.get(0),
                )
                .map_err(|e| in_err(&format!("table {full}"), e))?;
            conn.execute_batch(&ddl)
                .map_err(|e| self.err(format!("creating {full}: {e}")))?;
            let filter = match (kept_source, source_code(base)) {
                (Some(src), Some(code)) => format!(
                    " WHERE id IN (SELECT id FROM temp.kept WHERE src = {src} AND tbl = {code})"
                ),
                (Some(_), None) if base == "rocpd_event" => kept_events(set, "id"),
                // Arguments of the kept events (the event table was copied just before;
                // a set without one keeps the arguments of the kept rows' events).
                (Some(_), None) if base == "rocpd_arg" => {
                    if set.tables.iter().any(|t| t == "rocpd_event") {
                        format!(
                            " WHERE event_id IN (SELECT id FROM main.{})",
                            quote_ident(&format!("rocpd_event{}", set.suffix))
                        )
                    } else {
                        kept_events(set, "event_id")
                    }
                }
                _ => String::new(),
            };
            // Named columns: `SELECT *` also gives generated columns, which an INSERT
            // cannot take (an extra column of the input's own survives as defined).
            let columns: Vec<String> = conn
                .prepare("SELECT name FROM pragma_table_info(?1, 'src') ORDER BY cid")
                .and_then(|mut st| {
                    st.query_map([&full], |r| r.get::<_, String>(0))?
                        .map(|n| n.map(|n| quote_ident(&n)))
                        .collect()
                })
                .map_err(|e| in_err(&format!("table {full}"), e))?;
            let columns = columns.join(", ");
            conn.execute_batch(&format!(
                "INSERT INTO main.{q} ({columns}) SELECT {columns} FROM src.{q}{filter};"
            ))
            .map_err(|e| in_err(&format!("copying table {full}"), e))?;
            // The input's indexes on this table, if it has any.
            let mut st = conn
                .prepare("SELECT sql FROM src.sqlite_master WHERE type = 'index' AND tbl_name = ?1 AND sql IS NOT NULL")
                .map_err(|e| in_err("schema", e))?;
            let indexes: Vec<String> = st
                .query_map([&full], |r| r.get(0))
                .and_then(|r| r.collect())
                .map_err(|e| in_err("schema", e))?;
            drop(st);
            for sql in indexes {
                let sql = sql.replacen("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1);
                let _ = conn.execute_batch(&sql);
            }
        }
        Ok(())
    }

    /// Union views, analysis views; then renames the file into place.
    fn commit(mut self) -> Result<u64> {
        let mut sql = String::new();
        for base in rocpd_schema::TABLES {
            match self.tables.get(*base) {
                Some(tables) => sql.push_str(&crate::views::union_view(base, tables)),
                None => {
                    // No input has it: an empty view with the documented columns.
                    let cols: Vec<String> = rocpd_schema::table_def(base)
                        .map(|t| t.column_names())
                        .unwrap_or_default()
                        .iter()
                        .map(|c| format!("NULL AS {}", quote_ident(c)))
                        .collect();
                    sql.push_str(&format!(
                        "CREATE VIEW {} AS SELECT {} WHERE 0;\n",
                        quote_ident(base),
                        cols.join(", ")
                    ));
                }
            }
        }
        sql.push_str(crate::views::ANALYSIS_VIEWS);
        let conn = self.conn.take().expect("open");
        conn.execute_batch(&sql)
            .map_err(|e| self.err(format!("creating views: {e}")))?;
        conn.close().map_err(|(_, e)| self.err(e))?;
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| self.err(format!("cannot rename into place: {e}")))?;
        self.tmp = PathBuf::new();
        std::fs::metadata(&self.path)
            .map(|m| m.len())
            .map_err(|e| self.err(e))
    }
}

/// Records `full` as one of the tables of base name `base` in the output, refusing a name
/// taken already: two table sets of one guid are the same process given twice.
fn claim_table(
    tables: &mut BTreeMap<String, Vec<String>>,
    base: &str,
    full: String,
) -> std::result::Result<(), String> {
    if tables.values().flatten().any(|t| *t == full) {
        return Err(format!(
            "two inputs hold table {full} (the same process twice); give each database once"
        ));
    }
    tables.entry(base.to_string()).or_default().push(full);
    Ok(())
}

fn source_code(base: &str) -> Option<i64> {
    match base {
        "rocpd_region" => Some(1),
        "rocpd_sample" => Some(2),
        "rocpd_kernel_dispatch" => Some(3),
        "rocpd_memory_copy" => Some(4),
        "rocpd_memory_allocate" => Some(5),
        "rocpd_pmc_event" => Some(6),
        _ => None,
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.conn.take();
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Row counts per base table of a merged database (for reports).
fn counts(out: &Output) -> BTreeMap<&'static str, u64> {
    let mut m = BTreeMap::new();
    for (base, t) in [
        ("region", "rocpd_region"),
        ("sample", "rocpd_sample"),
        ("kernel_dispatch", "rocpd_kernel_dispatch"),
        ("memory_copy", "rocpd_memory_copy"),
        ("memory_allocation", "rocpd_memory_allocate"),
        ("pmc_value", "rocpd_pmc_event"),
    ] {
        let n: i64 = out
            .tables
            .get(t)
            .map(|ts| {
                ts.iter()
                    .map(|x| {
                        out.conn()
                            .query_row(
                                &format!("SELECT COUNT(*) FROM {}", quote_ident(x)),
                                [],
                                |r| r.get::<_, i64>(0),
                            )
                            .unwrap_or(0)
                    })
                    .sum()
            })
            .unwrap_or(0);
        m.insert(base, n as u64);
    }
    m
}

/// Merges whole databases into `out` (the fast path: tables copied inside SQLite).
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<OutputReport> {
    let mut o = Output::create(out)?;
    for path in inputs {
        let db = Database::open(path)?;
        let sources: Vec<(u32, String)> = db
            .table_sets()
            .iter()
            .map(|s| (0, s.guid.clone()))
            .collect();
        o.copy_database(&db, &sources, false)?;
    }
    let rows = counts(&o);
    let bytes = o.commit()?;
    Ok(OutputReport {
        path: out.to_path_buf(),
        bytes,
        rows,
        ..Default::default()
    })
}

/// A sink writing the rows that reach it as a merged RocPD database.
///
/// Rows of database sources are recorded by id and copied out of their databases at
/// `finish`; rows of sources read directly (no database behind them) are written as they
/// arrive, into table sets of their own ([`crate::rows`]).
pub struct RocpdSink {
    path: PathBuf,
    out: Option<Output>,
    catalog: Option<Arc<Catalog>>,
    rows: BTreeMap<&'static str, u64>,
    /// The sources at least one kept row comes from.
    kept_sources: std::collections::BTreeSet<u32>,
    /// The sources with no database behind them (their rows are written from the
    /// batches, which must then carry every column).
    direct_sources: std::collections::BTreeSet<u32>,
    /// The table sets written from rows, by source index.
    writers: BTreeMap<u32, SetWriter>,
}

/// `WHERE <column> IN` the events of the rows copied into the output's event tables of
/// `set` (` WHERE 0` without event tables).
fn kept_events(set: &TableSet, column: &str) -> String {
    let refs: Vec<String> = EVENT_TABLES
        .iter()
        .filter(|t| set.tables.iter().any(|x| x == *t))
        .map(|t| {
            format!(
                "SELECT event_id FROM main.{}",
                quote_ident(&format!("{t}{}", set.suffix))
            )
        })
        .collect();
    if refs.is_empty() {
        " WHERE 0".to_string()
    } else {
        format!(" WHERE {column} IN ({})", refs.join(" UNION "))
    }
}

/// Whether `e` is SQLite failing to write (a full disk, a file size limit, a failed write
/// or sync), which in a copy can only be the output.
fn write_failure(e: &rusqlite::Error) -> bool {
    use rusqlite::ffi;
    match e {
        rusqlite::Error::SqliteFailure(f, _) => {
            f.code == rusqlite::ErrorCode::DiskFull
                || [
                    ffi::SQLITE_IOERR_WRITE,
                    ffi::SQLITE_IOERR_FSYNC,
                    ffi::SQLITE_IOERR_DIR_FSYNC,
                    ffi::SQLITE_IOERR_TRUNCATE,
                ]
                .contains(&f.extended_code)
        }
        _ => false,
    }
}

impl RocpdSink {
    /// A sink that will write `path`.
    pub fn new(path: &Path) -> Self {
        RocpdSink {
            path: path.to_path_buf(),
            out: None,
            catalog: None,
            rows: BTreeMap::new(),
            kept_sources: Default::default(),
            direct_sources: Default::default(),
            writers: BTreeMap::new(),
        }
    }

    /// This sink, told which sources (catalog indices) are read directly, with no
    /// database to copy from: their rows are written from the batches, so the sink then
    /// asks for every column.
    pub fn with_direct_sources(mut self, sources: &[u32]) -> Self {
        self.direct_sources = sources.iter().copied().collect();
        self
    }
}

impl Sink for RocpdSink {
    fn projection(&self) -> rocpd_model::Projection {
        if !self.direct_sources.is_empty() {
            rocpd_model::Projection::all()
        } else {
            // Only the row ids are recorded: the rows themselves are copied inside SQLite.
            rocpd_model::Projection::without_json_text()
        }
    }

    fn needs_time_order(&self) -> bool {
        false
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        let mut out = Output::create(&self.path)?;
        out.conn()
            .execute_batch(
                "CREATE TEMP TABLE kept (src INTEGER NOT NULL, tbl INTEGER NOT NULL, id INTEGER NOT NULL, \
                 PRIMARY KEY (src, tbl, id)) WITHOUT ROWID;",
            )
            .map_err(|e| out.err(e))?;
        for &i in &self.direct_sources {
            if i as usize >= catalog.sources.len() {
                continue;
            }
            let (w, tables) = SetWriter::create(out.conn(), catalog, i).map_err(|e| out.err(e))?;
            out.add_tables(tables)?;
            self.writers.insert(i, w);
        }
        self.out = Some(out);
        self.catalog = Some(catalog.clone());
        Ok(())
    }

    fn write(&mut self, chunk: &Chunk) -> Result<()> {
        let out = self.out.as_ref().expect("begin first");
        let conn = out.conn();
        // One transaction per chunk: bounded in size.
        let tx = conn.unchecked_transaction().map_err(|e| out.err(e))?;
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO temp.kept (src, tbl, id) VALUES (?1, ?2, ?3)",
                )
                .map_err(|e| out.err(e))?;
            for b in &chunk.batches {
                let (_, code) = source_table(b.table);
                let src = b.batch.column(col::SOURCE).as_primitive::<UInt32Type>();
                let ids = b.batch.column(col::ID).as_primitive::<Int64Type>();
                // The sources of this batch whose rows are written (each writer takes all
                // its source's rows of the batch at once; a batch is one stream's rows, so
                // this holds one source at most).
                let mut written: Vec<u32> = Vec::new();
                for r in 0..b.batch.num_rows() {
                    let s = src.value(r);
                    if let Some(w) = self.writers.get_mut(&s) {
                        if !written.contains(&s) {
                            w.write(&tx, b.table, &b.batch, s).map_err(|e| out.err(e))?;
                            written.push(s);
                        }
                    } else {
                        st.execute((s, code, ids.value(r)))
                            .map_err(|e| out.err(e))?;
                    }
                    self.kept_sources.insert(s);
                }
                *self.rows.entry(b.table.name()).or_default() += b.batch.num_rows() as u64;
            }
        }
        tx.commit().map_err(|e| out.err(e))
    }

    fn finish(mut self: Box<Self>) -> Result<Vec<OutputReport>> {
        let mut out = self.out.take().expect("begin first");
        let catalog = self.catalog.take().expect("begin first");
        let mut by_file: BTreeMap<PathBuf, Vec<(u32, String)>> = BTreeMap::new();
        // The sources whose rows reached this output, with their info rows: a part of a
        // split by process holds that process's table set, not every input's (so parts
        // can be read together). An output no row reached still describes every input.
        let kept = &self.kept_sources;
        let wanted = |i: u32| kept.is_empty() || kept.contains(&i);
        for (i, s) in catalog.sources.iter().enumerate() {
            if !wanted(i as u32) || self.direct_sources.contains(&(i as u32)) {
                continue;
            }
            by_file
                .entry(s.path.clone())
                .or_default()
                .push((i as u32, s.guid.clone()));
        }
        for (path, sources) in by_file {
            let db = Database::open(&path)?;
            out.copy_database(&db, &sources, true)?;
        }
        let bytes = out.commit()?;
        Ok(vec![OutputReport {
            path: self.path.clone(),
            bytes,
            rows: std::mem::take(&mut self.rows),
            ..Default::default()
        }])
    }
}
