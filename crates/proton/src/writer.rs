//! A small RocPD v3 writer: one database (created by `rocpd-dbwrite`), one transaction,
//! the rows this importer needs.

use std::path::{Path, PathBuf};

use rocpd_dbwrite::Strings;
use rocpd_model::{Error, Result};
use rocpd_schema::table_name;
use rusqlite::{params, Connection};

pub(crate) struct Writer {
    conn: Connection,
    path: PathBuf,
    guid: String,
    strings: Strings,
    next_event: i64,
    pub nid: i64,
}

/// The node id of the node with `hash` (32-bit safe).
pub(crate) fn node_id(hash: i64) -> i64 {
    hash % i64::from(u32::MAX)
}

impl Writer {
    pub fn create(path: &Path, guid: &str) -> Result<Writer> {
        let err = |e: rusqlite::Error| Error::output(path, e.to_string());
        let conn =
            rocpd_dbwrite::create(path, guid, rocpd_dbwrite::DEFAULT_CACHE_KIB).map_err(err)?;
        conn.execute_batch("BEGIN").map_err(err)?;
        Ok(Writer {
            conn,
            path: path.to_path_buf(),
            guid: guid.to_string(),
            strings: Strings::new(guid),
            next_event: 1,
            nid: 0,
        })
    }

    fn err(&self, e: rusqlite::Error) -> Error {
        Error::output(&self.path, e.to_string())
    }

    fn t(&self, base: &str) -> String {
        format!("\"{}\"", table_name(base, &self.guid))
    }

    fn exec(&self, sql: &str, p: impl rusqlite::Params) -> Result<()> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut s| s.execute(p))
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    pub fn string(&mut self, s: &str) -> Result<i64> {
        let r = self.strings.id(&self.conn, s);
        r.map_err(|e| self.err(e))
    }

    /// The machine row (a synthetic node named `host`).
    pub fn node(&mut self, host: &str, hash: i64) -> Result<()> {
        self.nid = node_id(hash);
        self.exec(
            &format!(
                "INSERT INTO {} (id, hash, machine_id, hostname) VALUES (?, ?, ?, ?)",
                self.t("rocpd_info_node")
            ),
            params![self.nid, hash, host, host],
        )
    }

    pub fn process(&self, pid: i64, command: &str, extdata: &str) -> Result<()> {
        let r = self.t("rocpd_region");
        let (start, end): (Option<i64>, Option<i64>) = self
            .conn
            .query_row(
                &format!("SELECT MIN(start), MAX(\"end\") FROM {r} WHERE pid = ?"),
                [pid],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.err(e))?;
        self.exec(
            &format!(
                "INSERT INTO {} (id, nid, pid, start, \"end\", command, environment, extdata) \
                 VALUES (?, ?, ?, ?, ?, ?, '{{}}', ?)",
                self.t("rocpd_info_process")
            ),
            params![pid, self.nid, pid, start, end, command, extdata],
        )
    }

    pub fn thread(&self, pid: i64, tid: i64, name: Option<&str>) -> Result<()> {
        self.exec(
            &format!(
                "INSERT INTO {} (id, nid, pid, tid, name, extdata) VALUES (?, ?, ?, ?, ?, '{{}}')",
                self.t("rocpd_info_thread")
            ),
            params![tid, self.nid, pid, tid, name],
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub fn agent(
        &self,
        id: i64,
        pid: i64,
        index: Option<i64>,
        type_index: i64,
        name: &str,
        vendor: &str,
        extdata: &str,
    ) -> Result<()> {
        self.exec(
            &format!(
                "INSERT INTO {} (id, nid, pid, type, absolute_index, logical_index, type_index, \
                 name, model_name, vendor_name, product_name, user_name, extdata) \
                 VALUES (?, ?, ?, 'GPU', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self.t("rocpd_info_agent")
            ),
            params![
                id, self.nid, pid, index, index, type_index, name, name, vendor, name, name,
                extdata
            ],
        )
    }

    /// One `rocpd_event` (category, extdata) plus its `rocpd_region`.
    #[allow(clippy::too_many_arguments)]
    pub fn region(
        &mut self,
        pid: i64,
        tid: i64,
        start: i64,
        end: i64,
        name: &str,
        category: &str,
        extdata: &str,
    ) -> Result<()> {
        let id = self.next_event;
        self.region_with_id(id, pid, tid, start, end, name, category, extdata)
    }

    /// [`Writer::region`] with the event id chosen by the caller (a tree writes its nodes
    /// as they end but numbers them as they begin); later ids continue after the largest.
    #[allow(clippy::too_many_arguments)]
    pub fn region_with_id(
        &mut self,
        id: i64,
        pid: i64,
        tid: i64,
        start: i64,
        end: i64,
        name: &str,
        category: &str,
        extdata: &str,
    ) -> Result<()> {
        let cat = self.string(category)?;
        let name_id = self.string(name)?;
        self.next_event = self.next_event.max(id.saturating_add(1));
        self.exec(
            &format!(
                "INSERT INTO {} (id, category_id, stack_id, parent_stack_id, correlation_id, extdata) \
                 VALUES (?, ?, ?, 0, ?, ?)",
                self.t("rocpd_event")
            ),
            params![id, cat, id, id, extdata],
        )?;
        self.exec(
            &format!(
                "INSERT INTO {} (id, nid, pid, tid, start, \"end\", name_id, event_id, extdata) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{{}}')",
                self.t("rocpd_region")
            ),
            params![id, self.nid, pid, tid, start, end, name_id, id],
        )
    }

    /// The id the next event will get (ids count up from 1 in write order).
    pub fn next_event_id(&self) -> i64 {
        self.next_event
    }

    /// Adds `delta` to the start and end of the regions of events `from..to`; `false`
    /// (and nothing changed) when a time would leave the signed 64-bit range.
    pub fn shift_regions(&self, from: i64, to: i64, delta: i64) -> Result<bool> {
        let r = self.t("rocpd_region");
        let (lo, hi): (Option<i64>, Option<i64>) = self
            .conn
            .query_row(
                &format!(
                    "SELECT MIN(MIN(start), MIN(\"end\")), MAX(MAX(start), MAX(\"end\")) \
                     FROM {r} WHERE id >= ? AND id < ?"
                ),
                [from, to],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(|e| self.err(e))?;
        let fits = |t: Option<i64>| t.is_none_or(|t| t.checked_add(delta).is_some());
        if !fits(lo) || !fits(hi) {
            return Ok(false);
        }
        self.exec(
            &format!(
                "UPDATE {r} SET start = start + ?1, \"end\" = \"end\" + ?1 WHERE id >= ?2 AND id < ?3"
            ),
            params![delta, from, to],
        )?;
        Ok(true)
    }

    /// Gives the events with ids below `end` (those of a file's first document) the
    /// extdata field `"document": 0`, once the file turns out to hold several documents.
    pub fn mark_document_zero(&self, end: i64) -> Result<()> {
        self.exec(
            &format!(
                "UPDATE {} SET extdata = json_set(extdata, '$.document', 0) WHERE id < ?",
                self.t("rocpd_event")
            ),
            [end],
        )
    }

    /// Commits and returns the rows per table.
    pub fn finish(self) -> Result<Vec<(String, u64)>> {
        self.conn.execute_batch("COMMIT").map_err(|e| self.err(e))?;
        let rows = rocpd_dbwrite::row_counts(&self.conn, &self.guid).map_err(|e| self.err(e))?;
        self.conn
            .close()
            .map_err(|(_, e)| Error::output(&self.path, e.to_string()))?;
        Ok(rows)
    }
}
