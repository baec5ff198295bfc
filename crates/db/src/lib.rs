//! Reader of RocPD SQLite databases (schema version 3, as rocprofv3 and
//! rocprofiler-systems write them).
//!
//! A database file holds one or more *table sets*: tables named `rocpd_<name>_<uuid>`,
//! one set per profiled process (a merged database holds several). Each set becomes one
//! source in the [`Catalog`](rocpd_model::Catalog). Databases are opened read-only; each
//! set's own tables are read directly (never through cross-database views), one streaming
//! prepared statement per canonical table, ordered by start time (SQLite sorts with
//! bounded memory, spilling to temporary files).

#![warn(missing_docs)]

mod catalog;
mod detect;
mod ids;
mod merge;
mod produce;
mod query;
mod rows;
mod sql;
mod value;
mod views;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocpd_model::{Catalog, Projection, Result, SourceInfo, Table};
use rocpd_pipeline::{BatchStream, PreparedStream, Source, StageDrop, StreamOptions};
use rusqlite::{Connection, OpenFlags};

pub use detect::looks_like_sqlite;
pub use merge::{merge, RocpdSink};
pub use produce::{convert_into, produce, write_rocpd};
pub use query::{RowStream, TableQuery};
pub use sql::{split_statements, ReadOnlySql, SqlValue};
pub use views::ANALYSIS_VIEW_NAMES;

/// SQLite's soft heap limit for this process (bytes), set by every open: above it SQLite
/// reuses and spills cache pages rather than allocate more. 16 MiB measured: eight
/// databases to Parquet peak at 164 MiB instead of 248, to Perfetto at 59 instead of 79,
/// with no loss of speed (docs/benchmarks.md).
pub const SOFT_HEAP_LIMIT: u64 = 16 << 20;

/// How a database is opened.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// SQLite page cache per connection, KiB, for the database and for its temporary
    /// tables and sorter each (at least 64). A run of many inputs shares one budget.
    pub cache_kib: usize,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { cache_kib: 1024 }
    }
}

/// One set of suffixed tables inside a database.
#[derive(Debug, Clone)]
pub struct TableSet {
    /// The table-name suffix, including its leading `_`.
    pub suffix: String,
    /// `guid` from the metadata table.
    pub guid: String,
    /// `uuid` from the metadata table.
    pub uuid: String,
    /// `schema_version` from the metadata table.
    pub schema_version: String,
    /// Base names (`rocpd_region`, ...) of the tables present in this set.
    pub tables: Vec<String>,
}

impl TableSet {
    /// The quoted full name of base table `base` (`"rocpd_region_<uuid>"`), if present.
    pub fn table(&self, base: &str) -> Option<String> {
        self.tables
            .iter()
            .any(|t| t == base)
            .then(|| quote_ident(&format!("{base}{}", self.suffix)))
    }
}

/// An open RocPD database.
pub struct Database {
    path: PathBuf,
    /// The file SQLite reads: `path`, or its private copy (see [`Database::open`]).
    read_path: PathBuf,
    /// The page cache of each connection, KiB.
    cache_kib: usize,
    conn: Connection,
    sets: Vec<TableSet>,
    /// Per table set, whether its helper tables exist, and which are filled.
    helpers_built: Vec<std::cell::Cell<(bool, query::Helpers)>>,
    /// Per table set, whether it has marker categories (D129): asked once, here, and
    /// shared with forks, so that every handle builds the same streams.
    markers: Vec<bool>,
    /// The private copy of a database with pending journal or WAL content, if any (shared
    /// with the database's forks). Last, so that the connection is closed before the
    /// copy is removed.
    _copy: Option<Arc<(tempfile::TempDir, rocpd_pipeline::cleanup::Registered)>>,
}

/// An SQLite URI for `path` with query `params`: every byte outside the unreserved set
/// is percent-encoded, so any file name works, UTF-8 or not.
pub fn file_uri(path: &Path, params: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut s = String::from("file:");
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s.push('?');
    s.push_str(params);
    s
}

/// `path` with `suffix` appended to its file name (`x.db` → `x.db-wal`).
fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// Whether SQLite would have to write beside `path` to read it: a `-wal` file with
/// content (SQLite then creates `-shm`) or a hot `-journal`.
fn has_pending_side_files(path: &Path) -> bool {
    let nonempty = |p: PathBuf| std::fs::metadata(p).map(|m| m.len() > 0).unwrap_or(false);
    nonempty(side_file(path, "-wal")) || nonempty(side_file(path, "-journal"))
}

/// Copies `path` and its side files into a new private temporary directory.
fn private_copy(
    path: &Path,
) -> Result<(
    PathBuf,
    tempfile::TempDir,
    rocpd_pipeline::cleanup::Registered,
)> {
    let tmp_err = |e: std::io::Error| {
        rocpd_model::Error::output(
            std::env::temp_dir(),
            format!(
                "cannot make a private copy of {} to read its WAL or journal: {e}",
                path.display()
            ),
        )
    };
    let dir = tempfile::Builder::new()
        .prefix("rocpd-wal-")
        .tempdir()
        .map_err(tmp_err)?;
    let registered = rocpd_pipeline::cleanup::Registered::new(dir.path());
    let copy = dir.path().join("input.db");
    std::fs::copy(path, &copy).map_err(tmp_err)?;
    for side in ["-wal", "-journal"] {
        let from = side_file(path, side);
        if from.is_file() {
            std::fs::copy(&from, side_file(&copy, side)).map_err(tmp_err)?;
        }
    }
    Ok((copy, dir, registered))
}

/// A connection to `read_path` (the input `path`, or its private copy when `copy`), with
/// the reader's pragmas and a page cache of `kib`.
fn connect(path: &Path, read_path: &Path, copy: bool, kib: usize) -> Result<Connection> {
    let params = if copy {
        "mode=rw"
    } else {
        "mode=ro&immutable=1"
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let flags = if copy {
        flags
    } else {
        (flags - OpenFlags::SQLITE_OPEN_READ_WRITE) | OpenFlags::SQLITE_OPEN_READ_ONLY
    };
    let conn = Connection::open_with_flags(file_uri(read_path, params), flags)
        .map_err(|e| rocpd_model::Error::input(path, "open", e.to_string()))?;
    // The page cache also bounds SQLite's sorter before it spills to temporary files.
    // The soft heap limit bounds what the page caches do not: the ephemeral tables
    // of a statement (a materialised subquery such as the API-argument aggregation,
    // its automatic index) each get a default 2 MB cache of their own, which made
    // SQLite hold 10 MiB per input with arguments; past the limit SQLite recycles
    // and spills pages to its temporary files instead of growing.
    conn.execute_batch(&format!(
        "PRAGMA temp_store = FILE; PRAGMA cache_size = -{kib}; PRAGMA temp.cache_size = -{kib}; PRAGMA soft_heap_limit = {SOFT_HEAP_LIMIT};"
    ))
    .map_err(|e| rocpd_model::Error::input(path, "open", e.to_string()))?;
    Ok(conn)
}

/// Quotes an SQL identifier taken from `sqlite_master`.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Database {
    /// Opens `path` read-only and checks that it is a RocPD schema-v3 database; anything
    /// else is refused with a message naming what was found.
    ///
    /// Nothing is ever created beside the input: a database without pending side files is
    /// opened `immutable` (no locks, no `-shm`); one with a non-empty `-wal` or `-journal`
    /// is read from a private copy of the database and its side files in the temporary
    /// directory, which SQLite may then recover freely.
    pub fn open(path: &Path) -> Result<Database> {
        Database::open_with(path, &OpenOptions::default())
    }

    /// [`Database::open`] with `options` (the SQLite cache of a run of many inputs).
    pub fn open_with(path: &Path, options: &OpenOptions) -> Result<Database> {
        detect::check_file(path)?;
        // SQLite opens the file a link points to: its side files lie beside the target.
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let (read_path, copy) = if has_pending_side_files(&real) {
            let (copy, dir, reg) = private_copy(&real)?;
            (copy, Some((dir, reg)))
        } else {
            (path.to_path_buf(), None)
        };
        let kib = options.cache_kib.max(64);
        let conn = connect(path, &read_path, copy.is_some(), kib)?;
        let sets = detect::table_sets(&conn, path)?;
        detect::check_table_shapes(&conn, path, &sets)?;
        let markers = sets
            .iter()
            .map(|s| query::has_marker_categories(&conn, s))
            .collect();
        Ok(Database {
            path: path.to_path_buf(),
            read_path,
            _copy: copy.map(Arc::new),
            cache_kib: kib,
            conn,
            helpers_built: sets.iter().map(|_| Default::default()).collect(),
            sets,
            markers,
        })
    }

    /// Whether table set `i` has marker categories (D129); unknown sets read as having
    /// them, the query as it always was.
    fn has_markers(&self, i: usize) -> bool {
        self.markers.get(i).copied().unwrap_or(true)
    }

    /// Another connection to the same file (or private copy), for [`Source::fork`]: its
    /// table sets are this one's, its helper tables its own.
    pub fn fork(&self) -> Result<Database> {
        let conn = connect(
            &self.path,
            &self.read_path,
            self._copy.is_some(),
            self.cache_kib,
        )?;
        Ok(Database {
            path: self.path.clone(),
            read_path: self.read_path.clone(),
            _copy: self._copy.clone(),
            cache_kib: self.cache_kib,
            conn,
            sets: self.sets.clone(),
            helpers_built: self.sets.iter().map(|_| Default::default()).collect(),
            markers: self.markers.clone(),
        })
    }

    /// Creates the per-set helper tables the event queries join (once, empty) and fills
    /// those of `fill` not filled yet, in every table set.
    pub(crate) fn helpers(&self, fill: query::Helpers) -> Result<()> {
        for i in 0..self.sets.len() {
            self.set_helpers(i, fill)?;
        }
        Ok(())
    }

    /// [`Database::helpers`] for the table set `i` alone: a stream fills only its own
    /// set's tables, so a fork running one process's streams of a merged database does
    /// not build the others'.
    pub(crate) fn set_helpers(&self, i: usize, fill: query::Helpers) -> Result<()> {
        let (Some(set), Some(state)) = (self.sets.get(i), self.helpers_built.get(i)) else {
            return Ok(());
        };
        let (created, done) = state.get();
        let todo = query::Helpers {
            links: fill.links && !done.links,
            times: fill.times && !done.times,
        };
        if !created || todo != query::Helpers::default() {
            query::build_helpers(&self.conn, &self.path, set, todo)?;
            state.set((
                true,
                query::Helpers {
                    links: done.links || todo.links,
                    times: done.times || todo.times,
                },
            ));
        }
        Ok(())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A read-only SQLite URI of the file SQLite reads (for `ATTACH`).
    pub(crate) fn uri(&self) -> String {
        let params = if self._copy.is_some() {
            "mode=ro"
        } else {
            "mode=ro&immutable=1"
        };
        file_uri(&self.read_path, params)
    }

    /// The table sets (one per source), in table-name order.
    pub fn table_sets(&self) -> &[TableSet] {
        &self.sets
    }

    /// Reads the dimension data of every table set; set `i` becomes source
    /// `first_source + i`.
    pub fn catalog(&self, first_source: u32) -> Result<Catalog> {
        let mut cat = Catalog::default();
        for (i, set) in self.sets.iter().enumerate() {
            let source = first_source + i as u32;
            cat.sources.push(SourceInfo {
                path: self.path.clone(),
                format: "rocpd".into(),
                guid: set.guid.clone(),
                uuid: set.uuid.clone(),
                schema_version: set.schema_version.clone(),
                imported_from: Vec::new(),
            });
            catalog::read_set(&self.conn, &self.path, set, source, &mut cat)?;
        }
        Ok(cat)
    }

    /// Prepares one query per (table set, canonical table) that has rows to read.
    /// Columns outside `projection` are selected as NULL; filling the regions' `args`
    /// column costs an extra aggregation over `rocpd_arg`.
    pub fn queries(
        &self,
        first_source: u32,
        batch_rows: usize,
        projection: &Projection,
    ) -> Result<Vec<TableQuery<'_>>> {
        self.helpers(query::Helpers::default())?;
        let mut out = Vec::new();
        for (i, set) in self.sets.iter().enumerate() {
            let ids = catalog::read_ids(&self.conn, &self.path, set)?;
            let ids = (!ids.is_identity()).then(|| std::sync::Arc::new(ids));
            for table in Table::ALL {
                if let Some(q) = TableQuery::prepare(
                    &self.conn,
                    &self.path,
                    set,
                    table,
                    query::Origin {
                        source: first_source + i as u32,
                        ids: ids.clone(),
                        markers: self.has_markers(i),
                    },
                    batch_rows,
                    projection,
                )? {
                    out.push(q.with_helpers_of(self, i));
                }
            }
        }
        Ok(out)
    }

    /// Rows per canonical table over all sets (a full count; used by `info` and tests).
    pub fn count_rows(&self) -> Result<Vec<(Table, u64)>> {
        // The counts join the event times (PMC values), never the flow links.
        self.helpers(query::Helpers {
            links: false,
            times: true,
        })?;
        let mut out = Vec::new();
        for table in Table::ALL {
            let mut n = 0;
            for (i, set) in self.sets.iter().enumerate() {
                n += query::count(&self.conn, &self.path, set, table, self.has_markers(i))?;
            }
            out.push((table, n));
        }
        Ok(out)
    }

    /// PMC rows that cannot be placed in time (no kernel dispatch or sample carries their
    /// event): they are not streamed, and the driver reports them.
    pub fn untimed_pmc_rows(&self) -> Result<u64> {
        self.helpers(query::Helpers {
            links: false,
            times: true,
        })?;
        let mut n = 0;
        for set in &self.sets {
            n += query::count_untimed_pmc(&self.conn, &self.path, set)?;
        }
        Ok(n)
    }
}

impl Database {
    /// Earliest start and latest end over every event table, if there are events.
    pub fn event_span(&self) -> Result<Option<(i64, i64)>> {
        let mut span: Option<(i64, i64)> = None;
        for set in &self.sets {
            for (base, lo, hi) in [
                ("rocpd_region", "start", "\"end\""),
                ("rocpd_kernel_dispatch", "start", "\"end\""),
                ("rocpd_memory_copy", "start", "\"end\""),
                ("rocpd_memory_allocate", "start", "\"end\""),
                ("rocpd_sample", "timestamp", "timestamp"),
            ] {
                let Some(t) = set.table(base) else { continue };
                // SQLite orders text and blobs after every number, and MIN and MAX
                // compare across types: the other ends (MAX of the starts, MIN of the
                // ends) bring out a time stored as text, a blob or an out-of-range real
                // here, named by its own row, before a stream (or a helper that
                // aggregates it into another table's rows) meets it.
                let sql = format!("SELECT MIN({lo}), MAX({hi}), MAX({lo}), MIN({hi}) FROM {t}");
                let place = || format!("table {}", t.trim_matches('"'));
                let r = self
                    .conn
                    .query_row(&sql, [], |r| {
                        let (max_lo, min_hi) = (r.get_ref(2)?, r.get_ref(3)?);
                        let other_ends = value::to_i64(max_lo).and_then(|_| value::to_i64(min_hi));
                        Ok((
                            value::to_i64(r.get_ref(0)?),
                            value::to_i64(r.get_ref(1)?),
                            other_ends,
                        ))
                    })
                    .map_err(|e| {
                        rocpd_model::Error::input(&self.path, place(), query::sql_message(&e))
                    })?;
                let r = match r {
                    (Ok(a), Ok(b), Ok(_)) => (a, b),
                    _ => return Err(self.first_non_integer(&t, &[lo, hi])),
                };
                if let (Some(a), Some(b)) = r {
                    span = Some(match span {
                        Some((x, y)) => (x.min(a), y.max(b)),
                        None => (a, b),
                    });
                }
            }
        }
        Ok(span)
    }
}

impl Database {
    /// The error for the first row of table `t` whose `columns` hold a value that is not an
    /// integer: its row id, the column and the value.
    fn first_non_integer(&self, t: &str, columns: &[&str]) -> rocpd_model::Error {
        let table = t.trim_matches('"');
        for c in columns {
            // The first row whose value is refused (a real that is a whole number in
            // range is read as that integer).
            let sql = format!(
                "SELECT id, {c} FROM {t} WHERE typeof({c}) NOT IN ('integer', 'null') ORDER BY rowid"
            );
            let found = self.conn.prepare(&sql).and_then(|mut st| {
                let rows = st.query_map([], |r| {
                    Ok((r.get_ref(0)?.as_i64().ok(), value::to_i64(r.get_ref(1)?)))
                })?;
                for row in rows {
                    if let (id, Err(msg)) = row? {
                        return Ok(Some((id, msg)));
                    }
                }
                Ok(None)
            });
            if let Ok(Some((id, msg))) = found {
                let id = id.map_or("?".to_string(), |i| i.to_string());
                return rocpd_model::Error::input(
                    &self.path,
                    format!("table {table}, row id {id}"),
                    format!("column {}: {msg}", c.trim_matches('"')),
                );
            }
        }
        rocpd_model::Error::input(
            &self.path,
            format!("table {table}"),
            "a time column holds a value that is not an integer",
        )
    }

    /// The `(start, end)` of every ROCTx marker whose message (or, without a message, its
    /// name) is `text`: marker ranges and marker samples.
    pub fn find_marker(&self, text: &str) -> Result<Vec<(i64, i64)>> {
        let mut out = Vec::new();
        for set in &self.sets {
            let (Some(e), Some(s)) = (set.table("rocpd_event"), set.table("rocpd_string")) else {
                continue;
            };
            let msg =
                "CASE WHEN json_valid(E.extdata) THEN json_extract(E.extdata, '$.message') END";
            let marker = "C.string LIKE 'MARKER\\_%' ESCAPE '\\'";
            let mut queries = Vec::new();
            if let Some(r) = set.table("rocpd_region") {
                queries.push((
                    r.clone(),
                    format!(
                        "SELECT X.start, X.\"end\" FROM {r} X JOIN {e} E ON E.id = X.event_id \
                     JOIN {s} C ON C.id = E.category_id LEFT JOIN {s} N ON N.id = X.name_id \
                     WHERE {marker} AND COALESCE({msg}, N.string) = ?1"
                    ),
                ));
            }
            if let (Some(smp), Some(tr)) = (set.table("rocpd_sample"), set.table("rocpd_track")) {
                queries.push((smp.clone(), format!(
                    "SELECT X.timestamp, X.timestamp FROM {smp} X JOIN {e} E ON E.id = X.event_id \
                     JOIN {s} C ON C.id = E.category_id LEFT JOIN {tr} T ON T.id = X.track_id \
                     LEFT JOIN {s} N ON N.id = T.name_id WHERE {marker} AND COALESCE({msg}, N.string) = ?1"
                )));
            }
            for (table, q) in queries {
                let place = format!("marker {text:?} in table {}", table.trim_matches('"'));
                let err = |e: rusqlite::Error| {
                    rocpd_model::Error::input(&self.path, &place, e.to_string())
                };
                let mut st = self.conn.prepare(&q).map_err(err)?;
                // Times converted as the streams convert them, and refused as they are.
                let time = |r: &rusqlite::Row<'_>, i: usize| -> rusqlite::Result<_> {
                    Ok(value::to_time(r.get_ref(i)?)
                        .and_then(|t| t.ok_or_else(|| "a marker without a time".to_string())))
                };
                let rows = st
                    .query_map([text], |r| Ok((time(r, 0)?, time(r, 1)?)))
                    .map_err(err)?;
                for row in rows {
                    match row.map_err(err)? {
                        (Ok(a), Ok(b)) => out.push((a, b)),
                        (Err(m), _) | (_, Err(m)) => {
                            return Err(rocpd_model::Error::input(&self.path, &place, m))
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

impl PreparedStream for TableQuery<'_> {
    fn table(&self) -> Table {
        TableQuery::table(self)
    }

    fn open(&mut self) -> Result<Box<dyn BatchStream + '_>> {
        Ok(Box::new(self.stream()?))
    }

    fn weight(&self) -> u64 {
        TableQuery::weight(self)
    }
}

impl Source for Database {
    fn path(&self) -> &Path {
        &self.path
    }

    fn source_count(&self) -> usize {
        self.sets.len()
    }

    fn catalog(&self, first_source: u32) -> Result<Catalog> {
        Database::catalog(self, first_source)
    }

    fn event_span(&self) -> Result<Option<(i64, i64)>> {
        Database::event_span(self)
    }

    fn find_marker(&self, text: &str) -> Result<Vec<(i64, i64)>> {
        Database::find_marker(self, text)
    }

    fn count_rows(&self) -> Result<Vec<(Table, u64)>> {
        Database::count_rows(self)
    }

    fn dropped(&self) -> Result<Vec<StageDrop>> {
        let untimed = self.untimed_pmc_rows()?;
        Ok(if untimed > 0 {
            vec![StageDrop {
                stage: UNTIMED_PMC.into(),
                rows: [(Table::PmcValue.name(), untimed)].into_iter().collect(),
            }]
        } else {
            Vec::new()
        })
    }

    fn stream_count(&self) -> usize {
        self.sets
            .iter()
            .enumerate()
            .map(|(i, set)| {
                Table::ALL
                    .iter()
                    .filter(|t| query::has_stream(set, **t, self.has_markers(i)))
                    .count()
            })
            .sum()
    }

    fn prepare(
        &self,
        first_source: u32,
        options: &StreamOptions,
    ) -> Result<Vec<Box<dyn PreparedStream + '_>>> {
        Ok(self
            .queries(first_source, options.batch_rows, &options.projection)?
            .into_iter()
            .map(|q| Box::new(q) as Box<dyn PreparedStream + '_>)
            .collect())
    }

    fn fork(&self) -> Result<Option<Box<dyn Source>>> {
        Ok(Some(Box::new(Database::fork(self)?)))
    }

    fn busy_streams(&self, options: &StreamOptions) -> usize {
        self.sets
            .iter()
            .enumerate()
            .map(|(i, set)| {
                let markers = self.has_markers(i);
                Table::ALL
                    .iter()
                    .filter(|t| {
                        options.wants(**t) && query::has_rows(&self.conn, set, **t, markers)
                    })
                    .count()
            })
            .sum()
    }
}

pub use rocpd_pipeline::UNTIMED_PMC;

#[cfg(test)]
pub(crate) mod tests {
    use std::path::{Path, PathBuf};

    use rocpd_model::{Projection, Table};

    use rocpd_pipeline::{BatchStream, Source, StreamOptions};

    use crate::query::{self, Helpers};
    use crate::{quote_ident, Database};

    /// A generated one-process database under `dir`.
    pub(crate) fn one_process(dir: &Path, seed: u64, iterations: u32) -> PathBuf {
        let cfg = rocpd_gen::GenConfig {
            seed,
            processes: 1,
            iterations,
            ..Default::default()
        };
        rocpd_gen::generate(&cfg, &dir.join("gen"))
            .unwrap()
            .remove(0)
    }

    /// Rows in the helper table `base` of the database's one table set.
    fn helper_rows(db: &Database, base: &str) -> i64 {
        let name = crate::quote_ident(&format!("{base}{}", db.sets[0].suffix));
        db.conn
            .query_row(&format!("SELECT COUNT(*) FROM temp.{name}"), [], |r| {
                r.get(0)
            })
            .unwrap()
    }

    /// A stream fills the helper tables it joins when it starts, no others, once: a fork
    /// that runs only some streams (D124) builds only theirs.
    #[test]
    fn helper_tables_are_filled_when_a_stream_joining_them_starts() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Database::open(&one_process(tmp.path(), 5, 4)).unwrap();
        let links = |db: &Database| helper_rows(db, "rocpd_rs_links");
        let times = |db: &Database| helper_rows(db, "rocpd_rs_event_times");
        let mut queries = db.queries(0, 100, &Projection::all()).unwrap();
        assert_eq!((links(&db), times(&db)), (0, 0), "prepared, nothing filled");
        let at = |qs: &[crate::TableQuery<'_>], t: Table| {
            qs.iter().position(|q| q.table() == t).unwrap()
        };
        let sample = at(&queries, Table::Sample);
        drop(queries[sample].stream().unwrap());
        assert_eq!((links(&db), times(&db)), (0, 0), "samples join neither");
        let pmc = at(&queries, Table::PmcValue);
        drop(queries[pmc].stream().unwrap());
        let filled_times = times(&db);
        assert!(filled_times > 0);
        assert_eq!(links(&db), 0, "PMC values join the event times only");
        let region = at(&queries, Table::Region);
        drop(queries[region].stream().unwrap());
        let filled_links = links(&db);
        assert!(filled_links > 0);
        // Once each: a second start, or a count of every table, writes nothing again.
        let changes = db.conn.total_changes();
        let kernels = at(&queries, Table::KernelDispatch);
        drop(queries[kernels].stream().unwrap());
        db.helpers(Helpers::ALL).unwrap();
        Source::count_rows(&db).unwrap();
        assert_eq!(db.conn.total_changes(), changes);
        assert_eq!((links(&db), times(&db)), (filled_links, filled_times));
        // A fork has tables of its own, filled as its streams start.
        let fork = db.fork().unwrap();
        let mut forked = fork.queries(0, 100, &Projection::all()).unwrap();
        assert_eq!((links(&fork), times(&fork)), (0, 0));
        let copies = at(&forked, Table::MemoryCopy);
        drop(forked[copies].stream().unwrap());
        assert_eq!((links(&fork), times(&fork)), (filled_links, 0));
    }

    /// The ids of the rows of `table`'s stream, if the database has one.
    fn stream_ids(db: &Database, table: Table) -> Option<Vec<i64>> {
        use arrow_array::cast::AsArray;
        let mut queries = db.queries(0, 100, &Projection::all()).unwrap();
        let q = queries.iter_mut().find(|q| q.table() == table)?;
        let mut stream = q.stream().unwrap();
        let mut ids = Vec::new();
        while let Some(b) = stream.next_batch().unwrap() {
            let column = b.column(rocpd_model::col::ID);
            ids.extend(
                column
                    .as_primitive::<arrow_array::types::Int64Type>()
                    .values(),
            );
        }
        Some(ids)
    }

    /// A database without marker categories has no marker stream, and its region stream
    /// (which then needs no filter) gives every region: those the marker stream gave
    /// before the categories were renamed too.
    #[test]
    fn without_marker_categories_every_region_is_a_region() {
        let tmp = tempfile::tempdir().unwrap();
        let path = one_process(tmp.path(), 6, 4);
        let renamed = tmp.path().join("renamed.db");
        std::fs::copy(&path, &renamed).unwrap();
        let before = Database::open(&path).unwrap();
        let suffix = before.sets[0].suffix.clone();
        let mut regions = stream_ids(&before, Table::Region).unwrap();
        let markers = stream_ids(&before, Table::Marker).unwrap();
        assert!(!markers.is_empty() && !regions.is_empty());
        let conn = rusqlite::Connection::open(&renamed).unwrap();
        let strings = quote_ident(&format!("rocpd_string{suffix}"));
        let n = conn
            .execute(
                &format!(
                    "UPDATE {strings} SET string = 'ROCTX_' || string WHERE string LIKE 'MARKER%'"
                ),
                [],
            )
            .unwrap();
        assert!(n > 0);
        drop(conn);
        let after = Database::open(&renamed).unwrap();
        assert!(query::has_marker_categories(&before.conn, &before.sets[0]));
        assert!(!query::has_marker_categories(&after.conn, &after.sets[0]));
        assert_eq!(stream_ids(&after, Table::Marker), None);
        let mut all = stream_ids(&after, Table::Region).unwrap();
        regions.extend(markers);
        regions.sort_unstable();
        all.sort_unstable();
        assert_eq!(all, regions);
        let counts = |db: &Database| Source::count_rows(db).unwrap();
        let (b, a) = (counts(&before), counts(&after));
        let n = |c: &[(Table, u64)], t: Table| c.iter().find(|(x, _)| *x == t).unwrap().1;
        assert_eq!(n(&a, Table::Marker), 0);
        assert_eq!(
            n(&a, Table::Region),
            n(&b, Table::Region) + n(&b, Table::Marker)
        );
        let options = StreamOptions {
            projection: Projection::all(),
            batch_rows: 100,
            tables: None,
        };
        assert_eq!(
            after.busy_streams(&options) + 1,
            before.busy_streams(&options)
        );
    }
}
