//! One streaming query per (table set, canonical table), turned into Arrow batches.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use rocpd_model::{col, BatchBuilder, ColumnSpec, Error, Projection, Result, Table};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Rows, Statement};

use crate::ids::Ids;
use crate::value::{append, to_i64, to_time};
use crate::TableSet;

/// The flow-group time aggregates, from the links table `F`, for two-ended groups only.
const FLOW_AGGREGATES: &str = "CASE WHEN F.targets > 0 AND F.sources > 0 THEN F.first_start END, \
     CASE WHEN F.targets > 0 AND F.sources > 0 THEN F.last_start END, \
     CASE WHEN F.targets > 0 AND F.sources > 0 THEN F.first_end END, \
     CASE WHEN F.targets > 0 AND F.sources > 0 THEN F.last_end END";

const MESSAGE: &str =
    "CASE WHEN json_valid(E.extdata) THEN json_extract(E.extdata, '$.message') END";

/// The SQL of one canonical table over one table set.
struct Sql {
    /// Full (unquoted) name of the main table, for error messages.
    main: String,
    /// `SELECT <columns> FROM ... [WHERE ...] ORDER BY ...`
    select: String,
    /// `SELECT COUNT(*) FROM ... [WHERE ...]`, the same rows.
    count: String,
}

/// The RocPD table a canonical table is read from.
fn main_base(table: Table) -> &'static str {
    match table {
        Table::Region | Table::Marker => "rocpd_region",
        Table::Sample => "rocpd_sample",
        Table::KernelDispatch => "rocpd_kernel_dispatch",
        Table::MemoryCopy => "rocpd_memory_copy",
        Table::MemoryAllocation => "rocpd_memory_allocate",
        Table::PmcValue => "rocpd_pmc_event",
    }
}

/// Whether `set` has a stream of `table`: it has the table `table` is read from, and for
/// markers, marker categories (`markers`, [`has_marker_categories`]; D129).
pub(crate) fn has_stream(set: &TableSet, table: Table, markers: bool) -> bool {
    (table != Table::Marker || markers) && set.table(main_base(table)).is_some()
}

/// Whether any text of `set`'s strings table is a marker category (`MARKER_...`): when
/// none is, no event is a marker, the marker stream has no rows and the region stream
/// needs no filter (and so no joins before its sort). A failure reads as "maybe": the
/// queries built then filter as always and report it.
pub(crate) fn has_marker_categories(conn: &Connection, set: &TableSet) -> bool {
    let Some(strings) = set.table("rocpd_string") else {
        return false;
    };
    conn.query_row(
        &format!("SELECT EXISTS (SELECT 1 FROM {strings} WHERE {MARKER_TEXT})"),
        [],
        |r| r.get::<_, bool>(0),
    )
    .unwrap_or(true)
}

/// A text that names a marker category, as the marker filter tests `CS.string`.
const MARKER_TEXT: &str = "string LIKE 'MARKER\\_%' ESCAPE '\\'";

/// The SQL of `table` over `set`; `markers` says whether the set has marker categories
/// ([`has_marker_categories`]).
fn build(set: &TableSet, table: Table, projection: &Projection, markers: bool) -> Option<Sql> {
    if !has_stream(set, table, markers) {
        return None;
    }
    let t = |base: &str| set.table(base);
    let with_args = projection.fills_in(table, "args");
    // A column outside the projection is selected as NULL: SQLite neither reads nor copies it.
    let or_null = |column: &str, expr: &str| -> String {
        if projection.fills_in(table, column) {
            expr.to_string()
        } else {
            "NULL".to_string()
        }
    };
    let main = t(main_base(table))?;
    let strings = t("rocpd_string");
    let events = t("rocpd_event");

    // Joins every table needs for the event columns.
    let mut joins = String::new();
    let str_join = |alias: &str, on: &str| match &strings {
        Some(s) => format!(" LEFT JOIN {s} {alias} ON {alias}.id = {on}"),
        None => format!(" LEFT JOIN (SELECT NULL AS id, NULL AS string) {alias} ON 0"),
    };
    // The event row and its category are two lookups a row: a PMC stream for a writer
    // that shows none of the event's columns (Perfetto's counters) skips both. Regions and
    // samples read the message from the event, and tables with flows its stack id.
    const EVENT_JOINED: [&str; 7] = [
        "category",
        "stack_id",
        "parent_stack_id",
        "correlation_id",
        "call_stack",
        "line_info",
        "event_extdata",
    ];
    let needs_event = table.has_flows()
        || matches!(table, Table::Sample)
        || EVENT_JOINED.iter().any(|c| projection.fills_in(table, c));
    if needs_event {
        match &events {
            Some(e) => joins.push_str(&format!(" LEFT JOIN {e} E ON E.id = X.event_id")),
            None => joins.push_str(
                " LEFT JOIN (SELECT NULL AS id, NULL AS category_id, NULL AS stack_id, NULL AS parent_stack_id, \
                 NULL AS correlation_id, NULL AS call_stack, NULL AS line_info, NULL AS extdata) E ON 0",
            ),
        }
    }
    // Tables with flows filter markers on the category. Either way the event is joined
    // too, so a column not joined is one the projection leaves out: `or_null` gives NULL.
    if table.has_flows() || projection.fills_in(table, "category") {
        joins.push_str(&str_join("CS", "E.category_id"));
    }
    let tail = format!(
        "{}, X.event_id, {}, {}, {}, {}, {}, {}, {}",
        or_null("category", "CS.string"),
        or_null("stack_id", "E.stack_id"),
        or_null("parent_stack_id", "E.parent_stack_id"),
        or_null("correlation_id", "E.correlation_id"),
        or_null("call_stack", "E.call_stack"),
        or_null("line_info", "E.line_info"),
        or_null("event_extdata", "E.extdata"),
        or_null("extdata", "X.extdata"),
    );

    // Flow links, precomputed per table set by `build_helpers`.
    let links = |joins: &mut String| -> bool {
        if events.is_none() {
            return false;
        }
        joins.push_str(&format!(
            " LEFT JOIN {} F ON F.stack_id = E.stack_id",
            helper_table(LINKS, &set.suffix)
        ));
        true
    };
    // Both the counts and the group's time aggregates (null outside a two-ended group).
    let launched = |joins: &mut String| {
        if links(joins) {
            format!("COALESCE(F.targets, 0), {FLOW_AGGREGATES}")
        } else {
            "NULL, NULL, NULL, NULL, NULL".to_string()
        }
    };
    let has_launcher = |joins: &mut String| {
        if links(joins) {
            format!("COALESCE(F.sources, 0) > 0, {FLOW_AGGREGATES}")
        } else {
            "NULL, NULL, NULL, NULL, NULL".to_string()
        }
    };

    let common = "X.id, X.nid, X.pid, X.tid, X.start, X.\"end\"";
    let order = "ORDER BY X.start, X.\"end\" DESC, X.id";
    let marker_filter = "COALESCE(CS.string, '') LIKE 'MARKER\\_%' ESCAPE '\\'";
    let (columns, filter, count_joins): (String, Option<String>, String) = match table {
        Table::Region | Table::Marker => {
            let count_joins = joins.clone();
            joins.push_str(&str_join("NS", "X.name_id"));
            let args = match t("rocpd_arg").filter(|_| with_args) {
                Some(a) => {
                    joins.push_str(&format!(
                        " LEFT JOIN (SELECT event_id, json_group_array(json_object('position', position, \
                         'type', type, 'name', name, 'value', value)) AS args FROM \
                         (SELECT * FROM {a} ORDER BY event_id, position) GROUP BY event_id) A \
                         ON A.event_id = X.event_id"
                    ));
                    "A.args"
                }
                None => "NULL",
            };
            let launched = launched(&mut joins);
            let filter = if table == Table::Marker {
                Some(marker_filter.to_string())
            } else if markers {
                Some(format!("NOT ({marker_filter})"))
            } else {
                None
            };
            (
                format!("{common}, COALESCE(NS.string, ''), {MESSAGE}, {args}, {launched}, {tail}"),
                filter,
                count_joins,
            )
        }
        Table::Sample => {
            let count_joins = String::new();
            match t("rocpd_track") {
                Some(tr) => joins.push_str(&format!(" LEFT JOIN {tr} TR ON TR.id = X.track_id")),
                None => joins.push_str(
                    " LEFT JOIN (SELECT NULL AS id, NULL AS nid, NULL AS pid, NULL AS tid, NULL AS name_id) TR ON 0",
                ),
            }
            joins.push_str(&str_join("TN", "TR.name_id"));
            (
                format!(
                    "X.id, TR.nid, TR.pid, TR.tid, X.timestamp, X.timestamp, X.track_id, \
                     COALESCE(TN.string, ''), {MESSAGE}, {tail}"
                ),
                None,
                count_joins,
            )
        }
        Table::KernelDispatch => {
            let name = match t("rocpd_info_kernel_symbol") {
                Some(ks) => {
                    joins.push_str(&format!(" LEFT JOIN {ks} KS ON KS.id = X.kernel_id"));
                    "COALESCE(NULLIF(KS.display_name, ''), KS.kernel_name, '')"
                }
                None => "''",
            };
            joins.push_str(&str_join("RN", "X.region_name_id"));
            let launcher = has_launcher(&mut joins);
            (
                format!(
                    "{common}, X.agent_id, X.kernel_id, X.dispatch_id, X.queue_id, X.stream_id, {name}, \
                     RN.string, X.private_segment_size, X.group_segment_size, X.workgroup_size_x, \
                     X.workgroup_size_y, X.workgroup_size_z, X.grid_size_x, X.grid_size_y, X.grid_size_z, \
                     {launcher}, {tail}"
                ),
                None,
                String::new(),
            )
        }
        Table::MemoryCopy => {
            joins.push_str(&str_join("NS", "X.name_id"));
            joins.push_str(&str_join("RN", "X.region_name_id"));
            let launcher = has_launcher(&mut joins);
            (
                format!(
                    "{common}, COALESCE(NS.string, ''), X.dst_agent_id, X.dst_address, X.src_agent_id, \
                     X.src_address, X.size, X.queue_id, X.stream_id, RN.string, {launcher}, {tail}"
                ),
                None,
                String::new(),
            )
        }
        Table::MemoryAllocation => (
            format!(
                "{common}, COALESCE(X.type, ''), X.level, X.agent_id, X.address, X.size, X.queue_id, \
                 X.stream_id, {tail}"
            ),
            None,
            String::new(),
        ),
        Table::PmcValue => {
            let mut timing = String::new();
            match t("rocpd_info_pmc") {
                Some(p) => timing.push_str(&format!(" LEFT JOIN {p} PI ON PI.id = X.pmc_id")),
                None => timing.push_str(
                    " LEFT JOIN (SELECT NULL AS id, NULL AS nid, NULL AS pid, NULL AS name, NULL AS agent_id) PI ON 0",
                ),
            }
            timing.push_str(&format!(
                " LEFT JOIN {} K ON K.event_id = X.event_id",
                helper_table(EVENT_TIMES, &set.suffix)
            ));
            joins.push_str(&timing);
            (
                "X.id, COALESCE(K.nid, PI.nid), COALESCE(K.pid, PI.pid), K.tid, K.start, K.\"end\", X.pmc_id, \
                 PI.name, X.value, COALESCE(K.agent_id, PI.agent_id), K.dispatch_id, "
                    .to_string()
                    + &tail,
                Some("K.start IS NOT NULL".to_string()),
                timing,
            )
        }
    };
    let where_ = filter
        .as_deref()
        .map(|f| format!(" WHERE {f}"))
        .unwrap_or_default();
    let order = match table {
        Table::PmcValue => "ORDER BY K.start, K.\"end\" DESC, X.event_id, X.pmc_id, X.id",
        Table::Sample => "ORDER BY X.timestamp, X.id",
        _ => order,
    };
    let count_from = if filter.is_some() || table == Table::PmcValue {
        count_joins
    } else {
        String::new()
    };
    let main_name = main.trim_matches('"').replace("\"\"", "\"");
    // SQLite's sorter keeps whole result rows, which with megabyte strings means the whole
    // table in memory: sort only the row ids (with the joins the filter needs), then look
    // each row up in that order. CROSS JOIN keeps the sorted ids as the outer loop; the
    // `LIMIT -1` (no limit) keeps SQLite from dropping the ORDER BY of a subquery in a join.
    // Every stream checks that its rows come in start order all the same.
    let sorted =
        format!("SELECT X.rowid AS rid FROM {main} X{count_from}{where_} {order} LIMIT -1");
    Some(Sql {
        select: format!(
            "SELECT {columns} FROM ({sorted}) O CROSS JOIN {main} X ON X.rowid = O.rid{joins}"
        ),
        count: format!("SELECT COUNT(*) FROM {main} X{count_from}{where_}"),
        main: main_name,
    })
}

const LINKS: &str = "rocpd_rs_links";
const EVENT_TIMES: &str = "rocpd_rs_event_times";

/// The quoted name of a helper table of the table set with `suffix`.
fn helper_table(base: &str, suffix: &str) -> String {
    format!("temp.{}", crate::quote_ident(&format!("{base}{suffix}")))
}

/// Which helper tables to fill ([`build_helpers`] creates both, empty, either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Helpers {
    /// The flow links, which the tables with flows join.
    pub links: bool,
    /// The event times, which PMC values join.
    pub times: bool,
}

impl Helpers {
    #[cfg(test)]
    pub(crate) const ALL: Helpers = Helpers {
        links: true,
        times: true,
    };

    /// What the stream of `table` joins.
    pub(crate) fn of(table: Table) -> Helpers {
        Helpers {
            links: table.has_flows(),
            times: table == Table::PmcValue,
        }
    }
}

/// Creates the set's helper tables in the connection's TEMP database (temporary files,
/// never beside the input): per internal correlation id, how many kernels and copies
/// it launched and how many API calls carry it (flow ends), kept only for ids with both
/// ends (the only ones a query reads anything but zero or null from: half the rows on
/// generated traces, and 13% less time to build); per event, the time and
/// place of the kernel dispatch or sample it belongs to (PMC values). One sorted pass
/// each, instead of a materialisation inside every query that needs them. Both are
/// created (empty) every time; only those of `fill` are filled.
pub(crate) fn build_helpers(
    conn: &Connection,
    path: &Path,
    set: &TableSet,
    fill: Helpers,
) -> Result<()> {
    let t = |base: &str| set.table(base);
    let links = helper_table(LINKS, &set.suffix);
    let times = helper_table(EVENT_TIMES, &set.suffix);
    let mut sql = format!(
        "CREATE TEMP TABLE IF NOT EXISTS {} (stack_id INTEGER PRIMARY KEY, targets INTEGER NOT NULL, sources INTEGER NOT NULL, \
         first_start INTEGER, last_start INTEGER, first_end INTEGER, last_end INTEGER);
         CREATE TEMP TABLE IF NOT EXISTS {} (event_id INTEGER PRIMARY KEY, nid, pid, tid, start, \"end\", agent_id, dispatch_id);",
        crate::quote_ident(&format!("{LINKS}{}", set.suffix)),
        crate::quote_ident(&format!("{EVENT_TIMES}{}", set.suffix)),
    );
    if let Some(e) = t("rocpd_event").filter(|_| fill.links) {
        let mut parts = Vec::new();
        for (base, target, source) in [
            ("rocpd_kernel_dispatch", 1, 0),
            ("rocpd_memory_copy", 1, 0),
            ("rocpd_region", 0, 1),
        ] {
            if let Some(tb) = t(base) {
                parts.push(format!(
                    "SELECT CAST(E.stack_id AS INTEGER) AS sid, {target} AS t, {source} AS s, X.start AS a, X.\"end\" AS b \
                     FROM {tb} X JOIN {e} E ON E.id = X.event_id"
                ));
            }
        }
        if !parts.is_empty() {
            // Each row folded into its group's row as it comes (an upsert on the stack id)
            // rather than grouped after a sort of every row: a quarter less time on
            // generated traces. `COALESCE(MIN(x, y), x, y)` is the aggregate's MIN, which
            // passes over nulls where the two-argument MIN gives null.
            let fold = |f: &str, col: &str| {
                format!("{col} = COALESCE({f}({col}, excluded.{col}), {col}, excluded.{col})")
            };
            sql.push_str(&format!(
                "DELETE FROM {links}; \
                 INSERT INTO {links} SELECT sid, t, s, a, a, b, b FROM ({}) WHERE sid IS NOT NULL \
                 ON CONFLICT (stack_id) DO UPDATE SET targets = targets + excluded.targets, \
                 sources = sources + excluded.sources, {}, {}, {}, {}; \
                 DELETE FROM {links} WHERE targets = 0 OR sources = 0;",
                parts.join(" UNION ALL "),
                fold("MIN", "first_start"),
                fold("MAX", "last_start"),
                fold("MIN", "first_end"),
                fold("MAX", "last_end"),
            ));
        }
    }
    if t("rocpd_pmc_event").is_some() && fill.times {
        if let Some(k) = t("rocpd_kernel_dispatch") {
            sql.push_str(&format!(
                "INSERT OR IGNORE INTO {times} SELECT event_id, nid, pid, tid, start, \"end\", agent_id, dispatch_id \
                 FROM {k} WHERE event_id IS NOT NULL;"
            ));
        }
        if let Some(s) = t("rocpd_sample") {
            let track = match t("rocpd_track") {
                Some(tr) => format!("LEFT JOIN {tr} T ON T.id = S.track_id"),
                None => {
                    "LEFT JOIN (SELECT NULL AS id, NULL AS nid, NULL AS pid, NULL AS tid) T ON 0"
                        .into()
                }
            };
            sql.push_str(&format!(
                "INSERT OR IGNORE INTO {times} SELECT S.event_id, T.nid, T.pid, T.tid, S.timestamp, S.timestamp, NULL, NULL \
                 FROM {s} S {track} WHERE S.event_id IS NOT NULL;"
            ));
        }
    }
    conn.execute_batch(&sql).map_err(|e| {
        if temp_storage_failure(&e) {
            return temp_error(&e);
        }
        Error::input(
            path,
            format!("tables with suffix {}", set.suffix),
            sql_message(&e),
        )
    })
}

/// A short message for an SQLite error: SQLite's own words without the statement text
/// (rusqlite appends the whole, long SQL), and a missing column named as such.
pub(crate) fn sql_message(e: &rusqlite::Error) -> String {
    let msg = match e {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        other => other.to_string(),
    };
    match msg.strip_prefix("no such column: ") {
        Some(col) => {
            let col = col.rsplit('.').next().unwrap_or(col);
            format!("missing column {col:?}")
        }
        None => msg,
    }
}

/// Whether `e` is SQLite failing to write its temporary files (disk full, or no
/// temporary directory): the fault is then in `TMPDIR`, not in the input.
fn temp_storage_failure(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DiskFull | rusqlite::ErrorCode::CannotOpen)
    )
}

fn query_error(path: &Path, main: &str, e: rusqlite::Error) -> Error {
    if temp_storage_failure(&e) {
        return temp_error(&e);
    }
    // A missing column of a joined table: name that table, by the alias the queries use.
    let joined = match &e {
        rusqlite::Error::SqlInputError { msg, .. }
        | rusqlite::Error::SqliteFailure(_, Some(msg)) => msg
            .strip_prefix("no such column: ")
            .and_then(|c| c.split_once('.'))
            .and_then(|(alias, _)| match alias {
                "E" => Some("rocpd_event"),
                "KS" => Some("rocpd_info_kernel_symbol"),
                "TR" => Some("rocpd_track"),
                "PI" => Some("rocpd_info_pmc"),
                "NS" | "CS" | "RN" | "TN" => Some("rocpd_string"),
                _ => None,
            }),
        _ => None,
    };
    let place = match joined {
        Some(base) => format!("table {base} (joined to {main})"),
        None => format!("table {main}"),
    };
    Error::input(path, place, sql_message(&e))
}

/// The error for SQLite failing to write its temporary files, naming the directory.
pub(crate) fn temp_error(e: &rusqlite::Error) -> Error {
    let dir = std::env::var_os("SQLITE_TMPDIR")
        .or_else(|| std::env::var_os("TMPDIR"))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    Error::output(
        dir,
        format!(
            "cannot write SQLite's temporary files for sorting (set TMPDIR to a directory with room): {}",
            sql_message(e)
        ),
    )
}

/// The part of the region table's weight a marker stream takes (see
/// [`TableQuery::weight`]).
const MARKER_SHARE: u64 = 8;

/// Whether `set` has a stream of `table` ([`has_stream`]) and the table it is read from
/// has a row (one index seek); a table whose `rowid` a column of its own hides counts as
/// having rows.
pub(crate) fn has_rows(conn: &Connection, set: &TableSet, table: Table, markers: bool) -> bool {
    has_stream(set, table, markers) && rowid_span(conn, set, table).map_or(true, |span| span > 0)
}

/// The span of the row ids of the table `table` is read from, 0 when it is empty.
fn rowid_span(conn: &Connection, set: &TableSet, table: Table) -> rusqlite::Result<u64> {
    let Some(main) = set.table(main_base(table)) else {
        return Ok(0);
    };
    let (low, high): (Option<i64>, Option<i64>) = conn.query_row(
        &format!("SELECT MIN(rowid), MAX(rowid) FROM {main}"),
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(match (low, high) {
        (Some(low), Some(high)) => {
            u64::try_from(i128::from(high) - i128::from(low) + 1).unwrap_or(u64::MAX)
        }
        _ => 0,
    })
}

/// Rows of `table` in `set` (the rows the stream will yield).
pub(crate) fn count(
    conn: &Connection,
    path: &Path,
    set: &TableSet,
    table: Table,
    markers: bool,
) -> Result<u64> {
    let Some(sql) = build(set, table, &Projection::all(), markers) else {
        return Ok(0);
    };
    conn.query_row(&sql.count, [], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
        .map_err(|e| query_error(path, &sql.main, e))
}

/// PMC rows whose event is neither a kernel dispatch nor a sample.
pub(crate) fn count_untimed_pmc(conn: &Connection, path: &Path, set: &TableSet) -> Result<u64> {
    let Some(pmc) = set.table("rocpd_pmc_event") else {
        return Ok(0);
    };
    let total: i64 = conn
        .query_row(&format!("SELECT COUNT(*) FROM {pmc}"), [], |r| r.get(0))
        .map_err(|e| query_error(path, pmc.trim_matches('"'), e))?;
    let timed = count(conn, path, set, Table::PmcValue, false)?;
    u64::try_from(total)
        .ok()
        .and_then(|t| t.checked_sub(timed))
        .ok_or_else(|| {
            Error::input(
                path,
                format!("table {}", pmc.trim_matches('"')),
                format!(
                    "{timed} PMC values placed in time, of {total} rows: the joins repeat rows"
                ),
            )
        })
}

/// String bytes per batch for a stream of `batch_rows`-row batches: 512 bytes a row on
/// average, so the bytes in flight follow the row budget (which shrinks as streams are
/// added); batches of large values are cut short instead.
fn batch_bytes(batch_rows: usize) -> usize {
    batch_rows
        .saturating_mul(512)
        .clamp(64 << 10, rocpd_model::BATCH_BYTES)
}

/// A prepared query for one canonical table of one table set.
pub struct TableQuery<'c> {
    stmt: Statement<'c>,
    table: Table,
    source: u32,
    /// The set's process and thread references that are not OS ids, if any.
    ids: Option<Arc<Ids>>,
    path: PathBuf,
    main: String,
    batch_rows: usize,
    /// Rows of the main table, about (see [`TableQuery::weight`]).
    weight: u64,
    /// The database and the index of the query's table set in it, which fill the helper
    /// tables the query joins when it starts.
    db: Option<(&'c crate::Database, usize)>,
}

/// Which source a table set's rows become, and how its references resolve.
pub(crate) struct Origin {
    pub source: u32,
    pub ids: Option<Arc<Ids>>,
    /// Whether the set has marker categories ([`has_marker_categories`], asked once when
    /// the database is opened, so that every fork splits the regions alike).
    pub markers: bool,
}

impl<'c> TableQuery<'c> {
    pub(crate) fn prepare(
        conn: &'c Connection,
        path: &Path,
        set: &TableSet,
        table: Table,
        origin: Origin,
        batch_rows: usize,
        projection: &Projection,
    ) -> Result<Option<Self>> {
        let Origin {
            source,
            ids,
            markers,
        } = origin;
        let Some(sql) = build(set, table, projection, markers) else {
            return Ok(None);
        };
        let stmt = conn
            .prepare(&sql.select)
            .map_err(|e| query_error(path, &sql.main, e))?;
        // Only a hint: a table whose `rowid` a column of its own hides (with text in it)
        // still reads.
        let weight = match rowid_span(conn, set, table) {
            Ok(span) if table == Table::Marker => span / MARKER_SHARE,
            Ok(span) => span,
            Err(_) => 1,
        };
        Ok(Some(TableQuery {
            stmt,
            table,
            source,
            ids,
            path: path.to_path_buf(),
            main: sql.main,
            batch_rows: batch_rows.max(1),
            weight,
            db: None,
        }))
    }

    /// Has the helper tables this query joins filled by `db` (for its table set `set`)
    /// when it starts.
    pub(crate) fn with_helpers_of(mut self, db: &'c crate::Database, set: usize) -> Self {
        self.db = Some((db, set));
        self
    }

    /// About how many rows the query reads: the span of the main table's row ids (two
    /// index seeks, where a count would read the table). Regions and markers share their
    /// table, and markers are few among the API calls: they weigh an eighth of it.
    pub fn weight(&self) -> u64 {
        self.weight
    }

    /// The canonical table this query yields.
    pub fn table(&self) -> Table {
        self.table
    }

    /// Starts the query.
    pub fn stream(&mut self) -> Result<RowStream<'_>> {
        // Filled when the first stream joining a helper table starts, not when the
        // queries are prepared: a fork runs some of the streams only (D124), and one
        // fill is never seen half done by a stream that joins it, as that stream's own
        // start comes after it.
        if let Some((db, set)) = self.db {
            db.set_helpers(set, Helpers::of(self.table))?;
        }
        let rows = self
            .stmt
            .query([])
            .map_err(|e| query_error(&self.path, &self.main, e))?;
        Ok(RowStream {
            rows: Some(rows),
            builder: BatchBuilder::new(self.table, self.batch_rows)
                .with_byte_budget(batch_bytes(self.batch_rows)),
            specs: self.table.columns(),
            table: self.table,
            source: self.source,
            ids: self.ids.as_deref(),
            path: &self.path,
            main: &self.main,
            start_col: self
                .table
                .columns()
                .iter()
                .position(|c| c.name == "start")
                .unwrap_or(0),
            last_start: i64::MIN,
        })
    }
}

/// The running query of a [`TableQuery`]: yields batches of up to `batch_rows` rows.
pub struct RowStream<'s> {
    rows: Option<Rows<'s>>,
    builder: BatchBuilder,
    specs: &'static [ColumnSpec],
    table: Table,
    source: u32,
    ids: Option<&'s Ids>,
    path: &'s Path,
    main: &'s str,
    /// Index of the `start` column in the model (the query's column is one less).
    start_col: usize,
    /// Start of the previous row: the merge relies on rows in start order.
    last_start: i64,
}

impl RowStream<'_> {
    fn push_row(&mut self, row: &rusqlite::Row<'_>) -> Result<()> {
        let rocpd_model::ColumnBuilder::U32(src) = self.builder.column(0) else {
            unreachable!("source column is UInt32")
        };
        src.append_value(self.source);
        for (i, spec) in self.specs.iter().enumerate().skip(1) {
            let mut v = row
                .get_ref(i - 1)
                .map_err(|e| query_error(self.path, self.main, e))?;
            if let Some(ids) = self.ids.filter(|_| i == col::PID || i == col::TID) {
                // A malformed value is left to `append`, which names it.
                if let Ok(Some(reference)) = to_i64(v) {
                    v = ValueRef::Integer(if i == col::PID {
                        ids.pid(reference)
                    } else {
                        ids.tid(reference)
                    });
                }
            }
            let appended = if i == col::START || i == col::END {
                to_time(v).and_then(|_| append(self.builder.column(i), v, spec.nullable))
            } else {
                append(self.builder.column(i), v, spec.nullable)
            };
            if let Err(msg) = appended {
                let id = row.get_ref(0).ok().and_then(|v| v.as_i64().ok());
                return Err(Error::input(
                    self.path,
                    format!(
                        "table {}, row id {}",
                        self.main,
                        id.map_or("?".into(), |i| i.to_string())
                    ),
                    match crate::rows::stored_column(self.table, spec.name) {
                        Some(stored) => format!("column {stored} ({}): {msg}", spec.name),
                        None => format!("column {}: {msg}", spec.name),
                    },
                ));
            }
        }
        if let Some(start) = self
            .start_col
            .checked_sub(1)
            .and_then(|c| row.get_ref(c).ok())
            .and_then(|v| to_i64(v).ok().flatten())
        {
            if start < self.last_start {
                let id = row.get_ref(0).ok().and_then(|v| v.as_i64().ok());
                return Err(Error::input(
                    self.path,
                    format!(
                        "table {}, row id {}",
                        self.main,
                        id.map_or("?".into(), |i| i.to_string())
                    ),
                    format!(
                        "internal: SQLite returned rows out of start order ({start} after {})",
                        self.last_start
                    ),
                ));
            }
            self.last_start = start;
        }
        self.builder.end_row();
        Ok(())
    }
}

impl rocpd_pipeline::BatchStream for RowStream<'_> {
    fn table(&self) -> Table {
        self.builder.table()
    }

    fn next_batch(&mut self) -> Result<Option<arrow_array::RecordBatch>> {
        let Some(mut rows) = self.rows.take() else {
            return Ok(None);
        };
        loop {
            match rows.next() {
                Ok(Some(row)) => self.push_row(row)?,
                Ok(None) => break,
                Err(e) => return Err(query_error(self.path, self.main, e)),
            }
            if self.builder.is_full() {
                self.rows = Some(rows);
                return self.builder.finish().map(Some);
            }
        }
        if self.builder.is_empty() {
            Ok(None)
        } else {
            self.builder.finish().map(Some)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table set with every RocPD table.
    fn every_table() -> TableSet {
        TableSet {
            suffix: "_x".into(),
            guid: "x".into(),
            uuid: "_x".into(),
            schema_version: "3".into(),
            tables: rocpd_schema::TABLES.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Without marker categories the marker stream is not built, and the region stream
    /// sorts its rows with no join and no filter; the other tables do not depend on it.
    #[test]
    fn without_marker_categories_regions_sort_without_joins() {
        let set = every_table();
        let all = Projection::all();
        assert!(build(&set, Table::Marker, &all, false).is_none());
        let region = build(&set, Table::Region, &all, false).unwrap();
        let sorted = region.select.split(") O CROSS JOIN").next().unwrap();
        assert!(
            !sorted.contains("JOIN") && !sorted.contains("LIKE"),
            "{sorted}"
        );
        assert!(!region.count.contains("JOIN"), "{}", region.count);
        let filtered = build(&set, Table::Region, &all, true).unwrap();
        assert!(filtered.select.contains("NOT (COALESCE(CS.string"));
        for table in [Table::KernelDispatch, Table::MemoryCopy, Table::PmcValue] {
            assert_eq!(
                build(&set, table, &all, false).unwrap().select,
                build(&set, table, &all, true).unwrap().select
            );
        }
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&rocpd_schema::create_tables_sql("x"))
            .unwrap();
        let strings = set.table("rocpd_string").unwrap();
        let has = |text: &str| {
            conn.execute(&format!("DELETE FROM {strings}"), []).unwrap();
            conn.execute(
                &format!("INSERT INTO {strings} (id, string) VALUES (1, ?1)"),
                [text],
            )
            .unwrap();
            has_marker_categories(&conn, &set)
        };
        assert!(has("MARKER_CORE_API"));
        assert!(
            has("marker_core_api"),
            "LIKE ignores ASCII case, as the filter does"
        );
        assert!(!has("MARKERS"));
        assert!(!has("HIP_RUNTIME_API"));
    }

    #[test]
    fn every_query_selects_one_column_per_model_column_but_source() {
        let set = every_table();
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&rocpd_schema::create_tables_sql("x"))
            .unwrap();
        build_helpers(&conn, Path::new("mem"), &set, Helpers::ALL).unwrap();
        for table in Table::ALL {
            let sql = build(&set, table, &Projection::all(), true).unwrap();
            let stmt = conn.prepare(&sql.select).unwrap();
            assert_eq!(
                stmt.column_count() + 1,
                table.columns().len(),
                "{}",
                table.name()
            );
            conn.prepare(&sql.count).unwrap();
        }
    }

    #[test]
    fn columns_outside_the_projection_are_not_selected() {
        let set = every_table();
        for table in Table::ALL {
            let full = build(&set, table, &Projection::all(), true).unwrap().select;
            let lean = build(&set, table, &Projection::without_json_text(), true)
                .unwrap()
                .select;
            for expr in ["E.call_stack", "E.line_info", "X.extdata"] {
                assert!(full.contains(expr), "{} {expr}", table.name());
                assert!(!lean.contains(expr), "{} {expr}", table.name());
            }
            // The event's extdata is still read for the ROCTx message, not copied whole.
            assert!(full.contains("E.line_info, E.extdata, X.extdata"));
            assert!(lean.contains("E.correlation_id, NULL, NULL, NULL, NULL"));
            // The args aggregation is the costliest of them.
            assert!(!lean.contains("json_group_array"));
        }
    }

    #[test]
    fn a_pmc_stream_without_event_columns_joins_neither_event_nor_category() {
        let set = every_table();
        let joined = |p: &Projection, table: Table| {
            let sql = build(&set, table, p, true).unwrap().select;
            (sql.contains(" E ON "), sql.contains(" CS ON "))
        };
        let counters = Projection::without_json_text().without_event_columns_in(Table::PmcValue);
        assert_eq!(joined(&counters, Table::PmcValue), (false, false));
        // Other tables keep both; so does a PMC stream asked for any of them.
        assert_eq!(joined(&counters, Table::KernelDispatch), (true, true));
        assert_eq!(joined(&counters, Table::MemoryAllocation), (true, true));
        let with_category = counters.clone().with("category");
        assert_eq!(joined(&with_category, Table::PmcValue), (true, true));
        let with_stack = counters.with("stack_id");
        assert_eq!(joined(&with_stack, Table::PmcValue), (true, false));
        // The query without them runs on a real schema.
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&rocpd_schema::create_tables_sql("x"))
            .unwrap();
        build_helpers(&conn, Path::new("mem"), &set, Helpers::ALL).unwrap();
        let lean = Projection::without_json_text().without_in(Table::PmcValue, "category");
        let stmt = conn
            .prepare(&build(&set, Table::PmcValue, &lean, true).unwrap().select)
            .unwrap();
        assert_eq!(stmt.column_count() + 1, Table::PmcValue.columns().len());
    }
}
