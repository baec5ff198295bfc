//! Writing one process database: the file, its pragmas, tables, views and
//! metadata rows come from `rocpd-dbwrite` (as for the importers), and a
//! [`Writer`] holds one prepared multi-row `INSERT` per table for the whole
//! transaction. Strings are written with the ids the simulation chose, so
//! this writer does not use `rocpd_dbwrite::Strings`.
//!
//! Rows always carry their `id` explicitly (ids are pids, tids, handles,
//! correlation ids… never SQLite's choice); the `guid` column is left to its
//! default.

use anyhow::{Context, Result};
use rocpd_schema::table_name;
use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, Statement};
use std::path::Path;

/// Open a new database file for bulk loading and create the schema.
///
/// Foreign keys are not enforced while loading (rows of one table may be
/// written before the rows they reference, e.g. strings last); the tests
/// check `PRAGMA foreign_key_check` on the result instead.
pub fn create(path: &Path, guid: &str) -> Result<Connection> {
    // A larger cache than the importers': the generator writes 3M-event files for the
    // benchmarks and is not itself measured for memory.
    rocpd_dbwrite::create(path, guid, 32 << 10)
        .with_context(|| format!("creating {}", path.display()))
}

/// Build `INSERT INTO "<table>" ("c1", …) VALUES (?, …), …` for `rows` rows.
fn insert_sql(base: &str, guid: &str, cols: &[&str], rows: usize) -> String {
    let names: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
    let one = format!("({})", vec!["?"; cols.len()].join(", "));
    format!(
        "INSERT INTO \"{}\" ({}) VALUES {}",
        table_name(base, guid),
        names.join(", "),
        vec![one; rows].join(", ")
    )
}

/// One buffered insert per table, valid for the life of the connection's
/// open transaction. Call [`Writer::finish`] before committing.
pub struct Writer<'c> {
    string: Inserter<'c>,
    node: Inserter<'c>,
    process: Inserter<'c>,
    thread: Inserter<'c>,
    agent: Inserter<'c>,
    queue: Inserter<'c>,
    stream: Inserter<'c>,
    pmc: Inserter<'c>,
    code_object: Inserter<'c>,
    kernel_symbol: Inserter<'c>,
    track: Inserter<'c>,
    event: Inserter<'c>,
    arg: Inserter<'c>,
    pmc_event: Inserter<'c>,
    region: Inserter<'c>,
    sample: Inserter<'c>,
    dispatch: Inserter<'c>,
    copy: Inserter<'c>,
    alloc: Inserter<'c>,
    ids: Option<RowIds>,
}

/// Row ids for processes and threads that differ from the OS ids, handed out in order of
/// first use (1, 2, ...). The schema makes every `pid` column but the process table's
/// own a reference to `rocpd_info_process.id` and every `tid` one to
/// `rocpd_info_thread.id`; rocprofv3 happens to use the OS ids as row ids, so only such
/// databases show whether a reader resolves the references.
#[derive(Debug, Default)]
struct RowIds {
    processes: std::collections::HashMap<i64, i64>,
    threads: std::collections::HashMap<i64, i64>,
}

impl RowIds {
    fn next(map: &mut std::collections::HashMap<i64, i64>, os: i64) -> i64 {
        let n = map.len() as i64 + 1;
        *map.entry(os).or_insert(n)
    }
}

/// A nullable integer parameter.
pub type OptI = Option<i64>;

/// Rows per multi-row `INSERT`: amortises statement overhead (including
/// the `sqlite_sequence` update AUTOINCREMENT tables do per statement).
const BATCH: usize = 64;

/// Buffered inserts into one table: rows accumulate and are written
/// `BATCH` at a time by a multi-row statement; [`Inserter::flush`] writes
/// the remainder one row at a time.
struct Inserter<'c> {
    one: Statement<'c>,
    many: Statement<'c>,
    ncols: usize,
    buf: Vec<Value>,
}

impl<'c> Inserter<'c> {
    fn new(conn: &'c Connection, base: &str, guid: &str, cols: &[&str]) -> Result<Self> {
        Ok(Inserter {
            one: conn.prepare(&insert_sql(base, guid, cols, 1))?,
            many: conn.prepare(&insert_sql(base, guid, cols, BATCH))?,
            ncols: cols.len(),
            buf: Vec::with_capacity(cols.len() * BATCH),
        })
    }

    fn maybe_flush(&mut self) -> Result<()> {
        if self.buf.len() >= self.ncols * BATCH {
            self.many.execute(params_from_iter(self.buf.drain(..)))?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        for row in self.buf.chunks(self.ncols) {
            self.one.execute(params_from_iter(row.iter()))?;
        }
        self.buf.clear();
        Ok(())
    }
}

/// Conversion of the generator's column values into SQLite values.
trait IntoValue {
    fn value(self) -> Value;
}

impl IntoValue for &i64 {
    fn value(self) -> Value {
        Value::Integer(*self)
    }
}

impl IntoValue for &f64 {
    fn value(self) -> Value {
        Value::Real(*self)
    }
}

impl IntoValue for &&str {
    fn value(self) -> Value {
        Value::Text((*self).to_string())
    }
}

impl IntoValue for &String {
    fn value(self) -> Value {
        Value::Text(self.clone())
    }
}

impl IntoValue for &Option<i64> {
    fn value(self) -> Value {
        self.map_or(Value::Null, Value::Integer)
    }
}

impl IntoValue for &Option<&str> {
    fn value(self) -> Value {
        self.map_or(Value::Null, |s| Value::Text(s.to_string()))
    }
}

impl IntoValue for &Option<String> {
    fn value(self) -> Value {
        self.as_ref()
            .map_or(Value::Null, |s| Value::Text(s.clone()))
    }
}

macro_rules! ins {
    ($ins:expr, $($v:expr),+ $(,)?) => {{
        let ins = &mut $ins;
        ins.buf.extend([$(IntoValue::value(&$v)),+]);
        ins.maybe_flush()
    }};
}

impl<'c> Writer<'c> {
    /// Write process and thread row ids that differ from the OS ids (see [`RowIds`]).
    pub fn with_row_ids(mut self) -> Self {
        self.ids = Some(RowIds::default());
        self
    }

    /// The value to store in a `pid` column that references a process.
    fn pref(&mut self, pid: i64) -> i64 {
        match &mut self.ids {
            Some(ids) => RowIds::next(&mut ids.processes, pid),
            None => pid,
        }
    }

    /// The value to store in a `tid` column that references a thread.
    fn tref(&mut self, tid: i64) -> i64 {
        match &mut self.ids {
            Some(ids) => RowIds::next(&mut ids.threads, tid),
            None => tid,
        }
    }

    /// Prepare all inserts for the database with this guid.
    pub fn new(conn: &'c Connection, guid: &str) -> Result<Self> {
        let p = |base: &str, cols: &[&str]| Inserter::new(conn, base, guid, cols);
        Ok(Writer {
            string: p("rocpd_string", &["id", "string"])?,
            node: p(
                "rocpd_info_node",
                &rocpd_schema::data_columns("rocpd_info_node"),
            )?,
            process: p(
                "rocpd_info_process",
                &rocpd_schema::data_columns("rocpd_info_process"),
            )?,
            thread: p(
                "rocpd_info_thread",
                &rocpd_schema::data_columns("rocpd_info_thread"),
            )?,
            agent: p(
                "rocpd_info_agent",
                &rocpd_schema::data_columns("rocpd_info_agent"),
            )?,
            queue: p(
                "rocpd_info_queue",
                &rocpd_schema::data_columns("rocpd_info_queue"),
            )?,
            stream: p(
                "rocpd_info_stream",
                &rocpd_schema::data_columns("rocpd_info_stream"),
            )?,
            pmc: p(
                "rocpd_info_pmc",
                &rocpd_schema::data_columns("rocpd_info_pmc"),
            )?,
            code_object: p(
                "rocpd_info_code_object",
                &rocpd_schema::data_columns("rocpd_info_code_object"),
            )?,
            kernel_symbol: p(
                "rocpd_info_kernel_symbol",
                &rocpd_schema::data_columns("rocpd_info_kernel_symbol"),
            )?,
            track: p("rocpd_track", &rocpd_schema::data_columns("rocpd_track"))?,
            event: p("rocpd_event", &rocpd_schema::data_columns("rocpd_event"))?,
            arg: p("rocpd_arg", &rocpd_schema::data_columns("rocpd_arg"))?,
            pmc_event: p(
                "rocpd_pmc_event",
                &rocpd_schema::data_columns("rocpd_pmc_event"),
            )?,
            region: p("rocpd_region", &rocpd_schema::data_columns("rocpd_region"))?,
            sample: p("rocpd_sample", &rocpd_schema::data_columns("rocpd_sample"))?,
            dispatch: p(
                "rocpd_kernel_dispatch",
                &rocpd_schema::data_columns("rocpd_kernel_dispatch"),
            )?,
            copy: p(
                "rocpd_memory_copy",
                &rocpd_schema::data_columns("rocpd_memory_copy"),
            )?,
            alloc: p(
                "rocpd_memory_allocate",
                &rocpd_schema::data_columns("rocpd_memory_allocate"),
            )?,
            ids: None,
        })
    }

    /// Write all buffered rows. Must be called before committing.
    pub fn finish(&mut self) -> Result<()> {
        for ins in [
            &mut self.string,
            &mut self.node,
            &mut self.process,
            &mut self.thread,
            &mut self.agent,
            &mut self.queue,
            &mut self.stream,
            &mut self.pmc,
            &mut self.code_object,
            &mut self.kernel_symbol,
            &mut self.track,
            &mut self.event,
            &mut self.arg,
            &mut self.pmc_event,
            &mut self.region,
            &mut self.sample,
            &mut self.dispatch,
            &mut self.copy,
            &mut self.alloc,
        ] {
            ins.flush()?;
        }
        Ok(())
    }

    /// One `rocpd_string` row.
    pub fn string(&mut self, id: i64, s: &str) -> Result<()> {
        ins!(self.string, id, s)
    }

    /// The `rocpd_info_node` row.
    pub fn node(&mut self, n: &crate::layout::NodeInfo) -> Result<()> {
        ins!(
            self.node,
            n.id,
            n.hash,
            n.machine_id,
            "Linux",
            n.hostname,
            n.release,
            n.version,
            "x86_64",
            "(none)"
        )
    }

    /// The `rocpd_info_process` row.
    #[allow(clippy::too_many_arguments)]
    pub fn process(
        &mut self,
        nid: i64,
        ppid: i64,
        pid: i64,
        times: [i64; 4],
        command: &str,
        environment: &str,
    ) -> Result<()> {
        let [init, fini, start, end] = times;
        let id = self.pref(pid);
        ins!(
            self.process,
            id,
            nid,
            ppid,
            pid,
            init,
            fini,
            start,
            end,
            command,
            environment,
            "{}"
        )
    }

    /// One `rocpd_info_thread` row (name, start and end NULL as rocprofv3
    /// writes them).
    pub fn thread(&mut self, nid: i64, ppid: i64, pid: i64, tid: i64) -> Result<()> {
        let null: OptI = None;
        let (id, pref) = (self.tref(tid), self.pref(pid));
        ins!(
            self.thread,
            id,
            nid,
            ppid,
            pref,
            tid,
            None::<String>,
            null,
            null,
            "{}"
        )
    }

    /// One `rocpd_info_agent` row.
    #[allow(clippy::too_many_arguments)]
    pub fn agent(
        &mut self,
        id: i64,
        nid: i64,
        pid: i64,
        kind: &str,
        indices: [i64; 3],
        uuid: i64,
        names: [&str; 5],
        extdata: &str,
    ) -> Result<()> {
        let [abs, log, typ] = indices;
        let [name, model, vendor, product, user] = names;
        let pid = self.pref(pid);
        ins!(
            self.agent, id, nid, pid, kind, abs, log, typ, uuid, name, model, vendor, product,
            user, extdata
        )
    }

    /// One `rocpd_info_queue` row.
    pub fn queue(&mut self, id: i64, nid: i64, pid: i64, name: &str) -> Result<()> {
        let pid = self.pref(pid);
        ins!(self.queue, id, nid, pid, name, "{}")
    }

    /// One `rocpd_info_stream` row.
    pub fn stream(&mut self, id: i64, nid: i64, pid: i64, name: &str) -> Result<()> {
        let pid = self.pref(pid);
        ins!(self.stream, id, nid, pid, name, "{}")
    }

    /// One `rocpd_info_pmc` row.
    pub fn pmc(&mut self, nid: i64, pid: i64, c: &PmcDef<'_>) -> Result<()> {
        let pid = self.pref(pid);
        ins!(
            self.pmc,
            c.id,
            nid,
            pid,
            c.agent_id,
            c.target_arch,
            c.event_code,
            0i64,
            c.name,
            c.symbol,
            c.description,
            "",
            c.component,
            c.units,
            "ABS",
            c.block,
            c.expression,
            0i64,
            i64::from(c.is_derived),
            "{}"
        )
    }

    /// One `rocpd_info_code_object` row.
    #[allow(clippy::too_many_arguments)]
    pub fn code_object(
        &mut self,
        id: i64,
        nid: i64,
        pid: i64,
        agent_id: i64,
        uri: &str,
        load: [i64; 3],
        storage: &str,
    ) -> Result<()> {
        let [base, size, delta] = load;
        let pid = self.pref(pid);
        ins!(
            self.code_object,
            id,
            nid,
            pid,
            agent_id,
            uri,
            base,
            size,
            delta,
            storage,
            "{}"
        )
    }

    /// One `rocpd_info_kernel_symbol` row.
    #[allow(clippy::too_many_arguments)]
    pub fn kernel_symbol(
        &mut self,
        id: i64,
        nid: i64,
        pid: i64,
        code_object_id: i64,
        t: &crate::names::KernelTemplate,
        kernel_object: i64,
        kernarg_size: i64,
        extdata: &str,
    ) -> Result<()> {
        let pid = self.pref(pid);
        ins!(
            self.kernel_symbol,
            id,
            nid,
            pid,
            code_object_id,
            t.kernel_name,
            t.display_name,
            kernel_object,
            kernarg_size,
            8i64,
            t.group_segment,
            t.private_segment,
            t.sgpr,
            t.vgpr,
            t.accum_vgpr,
            extdata
        )
    }

    /// One `rocpd_track` row.
    pub fn track(&mut self, id: i64, nid: i64, pid: i64, tid: OptI, name_id: i64) -> Result<()> {
        let (pid, tid) = (self.pref(pid), tid.map(|t| self.tref(t)));
        ins!(self.track, id, nid, pid, tid, name_id, "{}")
    }

    /// One `rocpd_event` row.
    pub fn event(&mut self, e: &EventRow<'_>) -> Result<()> {
        ins!(
            self.event,
            e.id,
            e.category_id,
            e.stack_id,
            e.parent_stack_id,
            e.correlation_id,
            e.call_stack,
            e.line_info,
            e.extdata
        )
    }

    /// One `rocpd_arg` row.
    #[allow(clippy::too_many_arguments)]
    pub fn arg(
        &mut self,
        id: i64,
        event_id: i64,
        position: i64,
        ty: &str,
        name: &str,
        value: &str,
        extdata: &str,
    ) -> Result<()> {
        ins!(self.arg, id, event_id, position, ty, name, value, extdata)
    }

    /// One `rocpd_pmc_event` row.
    pub fn pmc_event(&mut self, id: i64, event_id: i64, pmc_id: i64, value: f64) -> Result<()> {
        ins!(self.pmc_event, id, event_id, pmc_id, value, "{}")
    }

    /// One `rocpd_region` row.
    #[allow(clippy::too_many_arguments)]
    pub fn region(
        &mut self,
        id: i64,
        nid: i64,
        pid: i64,
        tid: i64,
        start: i64,
        end: i64,
        name_id: i64,
        event_id: i64,
    ) -> Result<()> {
        let (pid, tid) = (self.pref(pid), self.tref(tid));
        ins!(
            self.region,
            id,
            nid,
            pid,
            tid,
            start,
            end,
            name_id,
            event_id,
            "{}"
        )
    }

    /// One `rocpd_sample` row.
    pub fn sample(&mut self, id: i64, track_id: i64, timestamp: i64, event_id: i64) -> Result<()> {
        ins!(self.sample, id, track_id, timestamp, event_id, "{}")
    }

    /// One `rocpd_kernel_dispatch` row.
    pub fn dispatch(&mut self, d: &DispatchRow) -> Result<()> {
        let (pid, tid) = (self.pref(d.pid), self.tref(d.tid));
        ins!(
            self.dispatch,
            d.dispatch_id,
            d.nid,
            pid,
            tid,
            d.agent_id,
            d.kernel_id,
            d.dispatch_id,
            d.queue_id,
            d.stream_id,
            d.start,
            d.end,
            d.private_segment,
            d.group_segment,
            d.workgroup[0],
            d.workgroup[1],
            d.workgroup[2],
            d.grid[0],
            d.grid[1],
            d.grid[2],
            d.region_name_id,
            d.event_id,
            "{}"
        )
    }

    /// One `rocpd_memory_copy` row.
    pub fn copy(&mut self, c: &CopyRow) -> Result<()> {
        let (pid, tid) = (self.pref(c.pid), self.tref(c.tid));
        ins!(
            self.copy,
            c.id,
            c.nid,
            pid,
            tid,
            c.start,
            c.end,
            c.name_id,
            c.dst_agent,
            c.dst_address,
            c.src_agent,
            c.src_address,
            c.size,
            c.queue_id,
            c.stream_id,
            c.region_name_id,
            c.event_id,
            "{}"
        )
    }

    /// One `rocpd_memory_allocate` row.
    pub fn alloc(&mut self, a: &AllocRow) -> Result<()> {
        let (pid, tid) = (self.pref(a.pid), self.tref(a.tid));
        ins!(
            self.alloc,
            a.id,
            a.nid,
            pid,
            tid,
            a.agent_id,
            a.kind,
            a.level,
            a.start,
            a.end,
            a.address,
            a.size,
            a.queue_id,
            a.stream_id,
            a.event_id,
            a.extdata
        )
    }
}

/// A `rocpd_info_pmc` definition.
#[derive(Debug, Clone)]
pub struct PmcDef<'a> {
    /// Counter handle (row id).
    pub id: i64,
    /// Agent the counter belongs to.
    pub agent_id: i64,
    /// `CPU` or `GPU`.
    pub target_arch: &'a str,
    /// Hardware event code (NULL for derived counters).
    pub event_code: OptI,
    /// Counter name.
    pub name: &'a str,
    /// Counter symbol.
    pub symbol: &'a str,
    /// Description.
    pub description: &'a str,
    /// Source component (`rocm`, …).
    pub component: &'a str,
    /// Units (`""` for rocprofv3 counters).
    pub units: &'a str,
    /// Hardware block.
    pub block: &'a str,
    /// Derived-counter expression (`""` for base counters).
    pub expression: &'a str,
    /// Derived counter?
    pub is_derived: bool,
}

/// A `rocpd_event` row.
#[derive(Debug, Clone)]
pub struct EventRow<'a> {
    /// Row id.
    pub id: i64,
    /// Category string id.
    pub category_id: i64,
    /// Internal correlation id.
    pub stack_id: i64,
    /// Ancestor correlation id.
    pub parent_stack_id: i64,
    /// External correlation id.
    pub correlation_id: i64,
    /// `NULL` or `'{}'`.
    pub call_stack: Option<&'a str>,
    /// `NULL` or `'{}'`.
    pub line_info: Option<&'a str>,
    /// `'{}'` or `{"message": …}`.
    pub extdata: &'a str,
}

/// A `rocpd_kernel_dispatch` row (id = dispatch_id).
#[derive(Debug, Clone)]
pub struct DispatchRow {
    pub nid: i64,
    pub pid: i64,
    pub tid: i64,
    pub agent_id: i64,
    pub kernel_id: i64,
    pub dispatch_id: i64,
    pub queue_id: i64,
    pub stream_id: i64,
    pub start: i64,
    pub end: i64,
    pub private_segment: i64,
    pub group_segment: i64,
    pub workgroup: [i64; 3],
    pub grid: [i64; 3],
    pub region_name_id: OptI,
    pub event_id: i64,
}

/// A `rocpd_memory_copy` row.
#[derive(Debug, Clone)]
pub struct CopyRow {
    pub id: i64,
    pub nid: i64,
    pub pid: i64,
    pub tid: i64,
    pub start: i64,
    pub end: i64,
    pub name_id: i64,
    pub dst_agent: i64,
    pub dst_address: i64,
    pub src_agent: i64,
    pub src_address: i64,
    pub size: i64,
    pub queue_id: OptI,
    pub stream_id: OptI,
    pub region_name_id: OptI,
    pub event_id: i64,
}

/// A `rocpd_memory_allocate` row.
#[derive(Debug, Clone)]
pub struct AllocRow {
    pub id: i64,
    pub nid: i64,
    pub pid: i64,
    pub tid: i64,
    pub agent_id: OptI,
    pub kind: &'static str,
    pub level: &'static str,
    pub start: i64,
    pub end: i64,
    pub address: OptI,
    pub size: i64,
    pub queue_id: OptI,
    pub stream_id: OptI,
    pub event_id: i64,
    pub extdata: &'static str,
}
