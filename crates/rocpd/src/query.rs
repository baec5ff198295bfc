//! One streaming query per (table set, canonical table), turned into Arrow batches.

use std::path::{Path, PathBuf};

use rocpd_model::{BatchBuilder, ColumnSpec, Error, Result, Table};
use rusqlite::{Connection, Rows, Statement};

use crate::value::append;
use crate::TableSet;

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

fn build(set: &TableSet, table: Table) -> Option<Sql> {
    let t = |base: &str| set.table(base);
    let base = match table {
        Table::Region | Table::Marker => "rocpd_region",
        Table::Sample => "rocpd_sample",
        Table::KernelDispatch => "rocpd_kernel_dispatch",
        Table::MemoryCopy => "rocpd_memory_copy",
        Table::MemoryAllocation => "rocpd_memory_allocate",
        Table::PmcValue => "rocpd_pmc_event",
    };
    let main = t(base)?;
    let strings = t("rocpd_string");
    let events = t("rocpd_event");

    // Joins every table needs for the event columns.
    let mut joins = String::new();
    let str_join = |alias: &str, on: &str| match &strings {
        Some(s) => format!(" LEFT JOIN {s} {alias} ON {alias}.id = {on}"),
        None => format!(" LEFT JOIN (SELECT NULL AS id, NULL AS string) {alias} ON 0"),
    };
    match &events {
        Some(e) => joins.push_str(&format!(" LEFT JOIN {e} E ON E.id = X.event_id")),
        None => joins.push_str(
            " LEFT JOIN (SELECT NULL AS id, NULL AS category_id, NULL AS stack_id, NULL AS parent_stack_id, \
             NULL AS correlation_id, NULL AS call_stack, NULL AS line_info, NULL AS extdata) E ON 0",
        ),
    }
    joins.push_str(&str_join("CS", "E.category_id"));
    let tail = "CS.string, X.event_id, E.stack_id, E.parent_stack_id, E.correlation_id, \
                E.call_stack, E.line_info, E.extdata, X.extdata";

    // Number of kernels and copies per internal correlation id (flow targets).
    let launched = |joins: &mut String| -> &'static str {
        let targets: Vec<String> = ["rocpd_kernel_dispatch", "rocpd_memory_copy"]
            .iter()
            .filter_map(|b| t(b))
            .map(|tb| format!("SELECT event_id FROM {tb}"))
            .collect();
        match (&events, targets.is_empty()) {
            (Some(e), false) => {
                joins.push_str(&format!(
                    " LEFT JOIN (SELECT E2.stack_id AS sid, COUNT(*) AS n FROM ({}) T \
                     JOIN {e} E2 ON E2.id = T.event_id GROUP BY E2.stack_id) L ON L.sid = E.stack_id",
                    targets.join(" UNION ALL ")
                ));
                "COALESCE(L.n, 0)"
            }
            (Some(_), true) => "0",
            (None, _) => "NULL",
        }
    };
    // Whether an API call with the same internal correlation id exists (flow source).
    let has_launcher = |joins: &mut String| -> &'static str {
        match (&events, t("rocpd_region")) {
            (Some(e), Some(r)) => {
                joins.push_str(&format!(
                    " LEFT JOIN (SELECT DISTINCT E3.stack_id AS sid FROM {r} R3 \
                     JOIN {e} E3 ON E3.id = R3.event_id) H ON H.sid = E.stack_id"
                ));
                "H.sid IS NOT NULL"
            }
            (Some(_), None) => "0",
            (None, _) => "NULL",
        }
    };

    let common = "X.id, X.nid, X.pid, X.tid, X.start, X.\"end\"";
    let order = "ORDER BY 5, 6 DESC, 1";
    let marker_filter = "COALESCE(CS.string, '') LIKE 'MARKER\\_%' ESCAPE '\\'";
    let (columns, filter, count_joins): (String, Option<String>, String) = match table {
        Table::Region | Table::Marker => {
            let count_joins = joins.clone();
            joins.push_str(&str_join("NS", "X.name_id"));
            let args = match t("rocpd_arg") {
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
                marker_filter.to_string()
            } else {
                format!("NOT ({marker_filter})")
            };
            (
                format!("{common}, COALESCE(NS.string, ''), {MESSAGE}, {args}, {launched}, {tail}"),
                Some(filter),
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
            let (k_cols, s_cols) = (
                t("rocpd_kernel_dispatch").map(|k| {
                    timing.push_str(&format!(" LEFT JOIN {k} K ON K.event_id = X.event_id"));
                }),
                t("rocpd_sample").map(|s| {
                    timing.push_str(&format!(" LEFT JOIN {s} S ON S.event_id = X.event_id"));
                }),
            );
            let k = |c: &str| if k_cols.is_some() { format!("K.{c}") } else { "NULL".into() };
            let ts = match (k_cols.is_some(), s_cols.is_some()) {
                (true, true) => ("COALESCE(K.start, S.timestamp)", "COALESCE(K.\"end\", S.timestamp)"),
                (true, false) => ("K.start", "K.\"end\""),
                (false, true) => ("S.timestamp", "S.timestamp"),
                (false, false) => ("NULL", "NULL"),
            };
            joins.push_str(&timing);
            (
                format!(
                    "X.id, COALESCE({}, PI.nid), COALESCE({}, PI.pid), {}, {}, {}, X.pmc_id, PI.name, X.value, \
                     COALESCE({}, PI.agent_id), {}, {tail}",
                    k("nid"),
                    k("pid"),
                    k("tid"),
                    ts.0,
                    ts.1,
                    k("agent_id"),
                    k("dispatch_id"),
                ),
                Some(format!("{} IS NOT NULL", ts.0)),
                timing,
            )
        }
    };
    let where_ = filter
        .as_deref()
        .map(|f| format!(" WHERE {f}"))
        .unwrap_or_default();
    let order = if table == Table::PmcValue {
        "ORDER BY 5, 6 DESC, X.event_id, X.pmc_id, 1"
    } else {
        order
    };
    let count_from = if filter.is_some() {
        count_joins
    } else {
        String::new()
    };
    let main_name = main.trim_matches('"').replace("\"\"", "\"");
    Some(Sql {
        select: format!("SELECT {columns} FROM {main} X{joins}{where_} {order}"),
        count: format!("SELECT COUNT(*) FROM {main} X{count_from}{where_}"),
        main: main_name,
    })
}

fn query_error(path: &Path, main: &str, e: rusqlite::Error) -> Error {
    Error::input(path, format!("table {main}"), e.to_string())
}

/// Rows of `table` in `set` (the rows the stream will yield).
pub(crate) fn count(conn: &Connection, path: &Path, set: &TableSet, table: Table) -> Result<u64> {
    let Some(sql) = build(set, table) else {
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
    Ok(total as u64 - count(conn, path, set, Table::PmcValue)?)
}

/// A prepared query for one canonical table of one table set.
pub struct TableQuery<'c> {
    stmt: Statement<'c>,
    table: Table,
    source: u32,
    path: PathBuf,
    main: String,
    batch_rows: usize,
}

impl<'c> TableQuery<'c> {
    pub(crate) fn prepare(
        conn: &'c Connection,
        path: &Path,
        set: &TableSet,
        table: Table,
        source: u32,
        batch_rows: usize,
    ) -> Result<Option<Self>> {
        let Some(sql) = build(set, table) else {
            return Ok(None);
        };
        let stmt = conn
            .prepare(&sql.select)
            .map_err(|e| query_error(path, &sql.main, e))?;
        Ok(Some(TableQuery {
            stmt,
            table,
            source,
            path: path.to_path_buf(),
            main: sql.main,
            batch_rows: batch_rows.max(1),
        }))
    }

    /// The canonical table this query yields.
    pub fn table(&self) -> Table {
        self.table
    }

    /// Starts the query.
    pub fn stream(&mut self) -> Result<RowStream<'_>> {
        let rows = self
            .stmt
            .query([])
            .map_err(|e| query_error(&self.path, &self.main, e))?;
        Ok(RowStream {
            rows: Some(rows),
            builder: BatchBuilder::new(self.table, self.batch_rows),
            specs: self.table.columns(),
            source: self.source,
            path: &self.path,
            main: &self.main,
        })
    }
}

/// The running query of a [`TableQuery`]: yields batches of up to `batch_rows` rows.
pub struct RowStream<'s> {
    rows: Option<Rows<'s>>,
    builder: BatchBuilder,
    specs: Vec<ColumnSpec>,
    source: u32,
    path: &'s Path,
    main: &'s str,
}

impl RowStream<'_> {
    fn push_row(&mut self, row: &rusqlite::Row<'_>) -> Result<()> {
        let rocpd_model::ColumnBuilder::U32(src) = self.builder.column(0) else {
            unreachable!("source column is UInt32")
        };
        src.append_value(self.source);
        for (i, spec) in self.specs.iter().enumerate().skip(1) {
            let v = row
                .get_ref(i - 1)
                .map_err(|e| query_error(self.path, self.main, e))?;
            if let Err(msg) = append(self.builder.column(i), v, spec.nullable) {
                let id = row.get_ref(0).ok().and_then(|v| v.as_i64().ok());
                return Err(Error::input(
                    self.path,
                    format!(
                        "table {}, row id {}",
                        self.main,
                        id.map_or("?".into(), |i| i.to_string())
                    ),
                    format!("column {}: {msg}", spec.name),
                ));
            }
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

    #[test]
    fn every_query_selects_one_column_per_model_column_but_source() {
        let set = TableSet {
            suffix: "_x".into(),
            guid: "x".into(),
            uuid: "_x".into(),
            schema_version: "3".into(),
            tables: rocpd_schema::TABLES.iter().map(|s| s.to_string()).collect(),
        };
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&rocpd_schema::create_tables_sql("x"))
            .unwrap();
        for table in Table::ALL {
            let sql = build(&set, table).unwrap();
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
}
