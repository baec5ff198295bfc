//! Writing one RocPD v3 database: the file with bulk-load pragmas, one transaction, cached
//! prepared statements, and the small dimension sets (processes, threads, agents, queues,
//! streams, kernel symbols, counters) collected while events stream through and written
//! at the end.
//!
//! Ids follow RocPD conventions: region id = internal correlation id, dispatch row id =
//! dispatch id, agent id = node id, queue/stream ids = handles, thread id = tid, process id
//! = pid. When an id is taken already (two API rows with one correlation id, ...), the row
//! gets the next free id instead and keeps its own ids in the other columns.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use rocpd_dbwrite::insert_sql;
use rocpd_model::hash::{fnv1a64, FastMap, FNV_OFFSET};
use rocpd_model::{Error, Result};
use rocpd_schema::table_name;
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};

use crate::sink::{Deferred, Texts};

fn out_err(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| Error::output(path, e.to_string())
}

/// Creates the database file and its schema-v3 tables, views and metadata rows.
pub(crate) fn create(path: &Path, guid: &str) -> Result<Connection> {
    rocpd_dbwrite::create(path, guid, rocpd_dbwrite::DEFAULT_CACHE_KIB).map_err(out_err(path))
}

pub(crate) fn begin(conn: &Connection, path: &Path) -> Result<()> {
    conn.execute_batch("BEGIN").map_err(out_err(path))
}

pub(crate) fn commit(conn: &Connection, path: &Path) -> Result<()> {
    conn.execute_batch("COMMIT").map_err(out_err(path))
}

/// Rows per table base name, in schema order.
pub(crate) fn table_counts(
    conn: &Connection,
    path: &Path,
    guid: &str,
) -> Result<Vec<(String, u64)>> {
    rocpd_dbwrite::row_counts(conn, guid).map_err(out_err(path))
}

struct Sql {
    event: String,
    region: String,
    dispatch: String,
    dispatch_find: String,
    event_stack: String,
    dispatch_update: String,
    copy: String,
    alloc: String,
    pmc: String,
    pmc_event: String,
    kernel_symbol: String,
    code_object: String,
    agent: String,
    node: String,
    process: String,
    thread: String,
    queue: String,
    stream: String,
}

impl Sql {
    fn new(guid: &str) -> Sql {
        let t = |b: &str| format!("\"{}\"", table_name(b, guid));
        Sql {
            event: insert_sql(
                "rocpd_event",
                guid,
                &["id", "category_id", "stack_id", "parent_stack_id", "correlation_id", "extdata"],
            ),
            region: insert_sql("rocpd_region", guid, &rocpd_schema::data_columns("rocpd_region")),
            dispatch: insert_sql("rocpd_kernel_dispatch", guid, &rocpd_schema::data_columns("rocpd_kernel_dispatch")),
            // Two lookups, not a join: rusqlite's statement cache clears the bindings of a
            // statement it takes back, and the bundled SQLite (built with STAT4) compiles a
            // join on a bound id again after every new binding. As one statement this
            // lookup re-parsed its SQL on every counter row: 30% of a CSV import's time.
            dispatch_find: format!(
                "SELECT event_id, tid FROM {} WHERE id = ?",
                t("rocpd_kernel_dispatch")
            ),
            event_stack: format!("SELECT stack_id FROM {} WHERE id = ?", t("rocpd_event")),
            dispatch_update: format!(
                "UPDATE {} SET tid = ?2, agent_id = ?3, kernel_id = ?4, queue_id = ?5, stream_id = ?6, \
                 start = ?7, \"end\" = ?8, private_segment_size = ?9, group_segment_size = ?10, \
                 workgroup_size_x = ?11, workgroup_size_y = ?12, workgroup_size_z = ?13, grid_size_x = ?14, \
                 grid_size_y = ?15, grid_size_z = ?16, region_name_id = COALESCE(?17, region_name_id), \
                 extdata = ?18 WHERE id = ?1",
                t("rocpd_kernel_dispatch")
            ),
            copy: insert_sql("rocpd_memory_copy", guid, &rocpd_schema::data_columns("rocpd_memory_copy")),
            alloc: insert_sql("rocpd_memory_allocate", guid, &rocpd_schema::data_columns("rocpd_memory_allocate")),
            pmc: insert_sql("rocpd_info_pmc", guid, &rocpd_schema::data_columns("rocpd_info_pmc")),
            pmc_event: insert_sql("rocpd_pmc_event", guid, &rocpd_schema::data_columns("rocpd_pmc_event")),
            kernel_symbol: insert_sql("rocpd_info_kernel_symbol", guid, &rocpd_schema::data_columns("rocpd_info_kernel_symbol")),
            code_object: insert_sql("rocpd_info_code_object", guid, &rocpd_schema::data_columns("rocpd_info_code_object")),
            agent: insert_sql("rocpd_info_agent", guid, &rocpd_schema::data_columns("rocpd_info_agent")),
            node: insert_sql("rocpd_info_node", guid, &rocpd_schema::data_columns("rocpd_info_node")),
            process: insert_sql("rocpd_info_process", guid, &rocpd_schema::data_columns("rocpd_info_process")),
            thread: insert_sql("rocpd_info_thread", guid, &rocpd_schema::data_columns("rocpd_info_thread")),
            queue: insert_sql("rocpd_info_queue", guid, &rocpd_schema::data_columns("rocpd_info_queue")),
            stream: insert_sql("rocpd_info_stream", guid, &rocpd_schema::data_columns("rocpd_info_stream")),
        }
    }
}

/// The machine.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NodeRow {
    pub id: i64,
    pub hash: i64,
    pub machine_id: String,
    pub system_name: Option<String>,
    pub hostname: Option<String>,
    pub release: Option<String>,
    pub version: Option<String>,
    pub hardware_name: Option<String>,
    pub domain_name: Option<String>,
}

impl NodeRow {
    /// A node known only by host name (or not at all): ids hashed from the name.
    pub fn from_hostname(hostname: Option<&str>) -> NodeRow {
        let name = hostname.unwrap_or("unknown");
        let h = fnv1a64(name.as_bytes(), FNV_OFFSET);
        let hash = (h % i64::MAX as u64) as i64;
        NodeRow {
            id: hash % u32::MAX as i64,
            hash,
            machine_id: name.to_string(),
            hostname: Some(name.to_string()),
            ..Default::default()
        }
    }
}

/// What is known about a process beyond its pid.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProcessRow {
    pub ppid: Option<i64>,
    pub init: Option<i64>,
    pub fini: Option<i64>,
    pub command: Option<String>,
    pub environment: Option<String>,
    pub extdata: Option<String>,
}

/// One agent (written at the end).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct AgentRow {
    pub id: i64,
    pub agent_type: Option<&'static str>,
    pub absolute_index: Option<i64>,
    pub logical_index: Option<i64>,
    pub type_index: Option<i64>,
    pub uuid: Option<i64>,
    pub name: Option<String>,
    pub model_name: Option<String>,
    pub vendor_name: Option<String>,
    pub product_name: Option<String>,
    pub user_name: Option<String>,
    pub extdata: Option<String>,
}

/// How an input names an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentRef {
    /// `"Agent N"`: the logical node id (rocprofv3's default).
    Logical(i64),
    /// A bare number (early rocprofv3): the node id.
    Bare(i64),
    /// `"GPU N"` / `"CPU N"`: the index among agents of that type.
    Typed(&'static str, i64),
}

impl AgentRef {
    /// Parses an agent column value; `Ok(None)` for an empty value.
    pub fn parse(s: &str) -> std::result::Result<Option<AgentRef>, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        let num = |t: &str| {
            t.trim().parse::<i64>().map_err(|_| {
                format!("expected an agent (\"Agent N\", \"GPU N\" or a number), found {s:?}")
            })
        };
        // Compared without case in place: this runs for every kernel and counter row.
        if let Some(rest) = strip_prefix_ignoring_case(s, "agent") {
            return Ok(Some(AgentRef::Logical(num(rest)?)));
        }
        if let Some(rest) = strip_prefix_ignoring_case(s, "gpu") {
            return Ok(Some(AgentRef::Typed("GPU", num(rest)?)));
        }
        if let Some(rest) = strip_prefix_ignoring_case(s, "cpu") {
            return Ok(Some(AgentRef::Typed("CPU", num(rest)?)));
        }
        Ok(Some(AgentRef::Bare(num(s)?)))
    }
}

/// `s` after `prefix` (lower-case ASCII), if `s` starts with it in any case.
pub(crate) fn strip_prefix_ignoring_case<'s>(s: &'s str, prefix: &str) -> Option<&'s str> {
    let head = s.as_bytes().get(..prefix.len())?;
    // An ASCII prefix matched byte for byte ends on a character boundary.
    head.eq_ignore_ascii_case(prefix.as_bytes())
        .then(|| &s[prefix.len()..])
}

/// The agents of a run: from `agent_info.csv` / the JSON `agents` array, or synthesized
/// from the ids seen.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Agents {
    /// By agent id (node id).
    rows: BTreeMap<i64, AgentRow>,
    /// Whether the rows came from an agent table (otherwise they are synthesized).
    from_table: bool,
    /// JSON agent handles → agent id (looked up for every kernel and counter record).
    handles: FastMap<i64, i64>,
    /// The agent each typed reference resolved to first (synthesized, or found).
    typed: FastMap<(&'static str, i64), i64>,
    /// The rows by (logical index, id) and by (type, type index, id), so that a
    /// reference is resolved without a scan of every agent: an input naming a new agent
    /// on every row made the scans quadratic (70,000 rows took 17 s).
    by_logical: BTreeSet<(i64, i64)>,
    by_type: BTreeSet<(&'static str, i64, i64)>,
    /// No id below this one is free (ids are only ever added).
    free_from: i64,
}

impl Agents {
    /// Adds an agent read from an agent table.
    pub fn add(&mut self, row: AgentRow, handle: Option<i64>) {
        self.from_table = true;
        if let Some(h) = handle {
            self.handles.insert(h, row.id);
        }
        let id = row.id;
        self.unindex(id);
        self.rows.insert(id, row);
        self.index(id);
    }

    /// Takes row `id`'s keys out of the indexes (before the row changes).
    fn unindex(&mut self, id: i64) {
        if let Some(a) = self.rows.get(&id) {
            if let Some(l) = a.logical_index {
                self.by_logical.remove(&(l, id));
            }
            if let (Some(t), Some(n)) = (a.agent_type, a.type_index) {
                self.by_type.remove(&(t, n, id));
            }
        }
    }

    /// Puts row `id`'s keys in the indexes (after it changed).
    fn index(&mut self, id: i64) {
        if let Some(a) = self.rows.get(&id) {
            if let Some(l) = a.logical_index {
                self.by_logical.insert((l, id));
            }
            if let (Some(t), Some(n)) = (a.agent_type, a.type_index) {
                self.by_type.insert((t, n, id));
            }
        }
    }

    pub fn agent_type(&self, id: i64) -> Option<&'static str> {
        self.rows.get(&id).and_then(|a| a.agent_type)
    }

    /// The agent id of a JSON handle (unknown handles are taken as ids).
    pub fn by_handle(&mut self, handle: i64, evidence: Option<&'static str>) -> i64 {
        let id = self.handles.get(&handle).copied().unwrap_or(handle);
        self.note(id, evidence, None);
        id
    }

    /// The agent id of a reference; `evidence` is the agent type the context implies.
    pub fn resolve(&mut self, r: AgentRef, evidence: Option<&'static str>) -> i64 {
        let found = match r {
            // The lowest id with the index, as a scan in id order finds it.
            AgentRef::Logical(n) => self
                .by_logical
                .range((n, i64::MIN)..)
                .next()
                .filter(|(l, _)| *l == n)
                .map(|(_, id)| *id),
            AgentRef::Bare(n) => self.rows.contains_key(&n).then_some(n),
            // A typed reference keeps the agent it first resolved to: agents synthesized
            // later can change type (GPU evidence over CPU) and take the type index
            // first, and a stream that resolves against the run's final agents must give
            // what the import gave as the agents grew.
            AgentRef::Typed(t, n) => self.typed.get(&(t, n)).copied().or_else(|| {
                let id = self
                    .by_type
                    .range((t, n, i64::MIN)..)
                    .next()
                    .filter(|(tt, nn, _)| *tt == t && *nn == n)
                    .map(|(_, _, id)| *id)?;
                self.typed.insert((t, n), id);
                Some(id)
            }),
        };
        let (id, logical) = match (found, r) {
            (Some(id), _) => (id, None),
            (None, AgentRef::Logical(n)) | (None, AgentRef::Bare(n)) => (n, Some(n)),
            (None, AgentRef::Typed(t, n)) => {
                let id = (self.free_from..)
                    .find(|i| !self.rows.contains_key(i))
                    .expect("a free agent id");
                self.free_from = id;
                self.typed.insert((t, n), id);
                self.note(id, Some(t), None);
                self.unindex(id);
                if let Some(a) = self.rows.get_mut(&id) {
                    a.type_index = Some(n);
                }
                self.index(id);
                return id;
            }
        };
        self.note(id, evidence, logical);
        id
    }

    /// Makes sure agent `id` exists; records type evidence for synthesized agents.
    fn note(&mut self, id: i64, evidence: Option<&'static str>, logical: Option<i64>) {
        let from_table = self.from_table;
        let new = !self.rows.contains_key(&id);
        let a = self.rows.entry(id).or_insert_with(|| AgentRow {
            id,
            absolute_index: Some(id),
            logical_index: logical.or(Some(id)),
            extdata: Some(SYNTHESIZED.into()),
            ..Default::default()
        });
        let before = (a.agent_type, a.type_index);
        // Agents from a table keep their declared type; synthesized ones take the first
        // GPU evidence over CPU evidence (a kernel ran there).
        if a.agent_type.is_none() || (!from_table && evidence == Some("GPU")) {
            if let Some(t) = evidence {
                if a.agent_type.is_none() || t == "GPU" {
                    a.agent_type = Some(t);
                }
            }
        }
        // The indexes change only with a new row or a new type (this runs for every row).
        if new || a.agent_type != before.0 {
            if let (Some(t), Some(n)) = before {
                self.by_type.remove(&(t, n, id));
            }
            self.index(id);
        }
    }

    /// The agents, by id.
    pub fn rows(&self) -> impl Iterator<Item = &AgentRow> {
        self.rows.values()
    }

    /// Fills type indexes (order of ids within each type) where unknown.
    pub fn finish(&mut self) {
        let mut counts: HashMap<&'static str, i64> = HashMap::new();
        for a in self.rows.values_mut() {
            if let Some(t) = a.agent_type {
                let n = counts.entry(t).or_insert(0);
                if a.type_index.is_none() {
                    a.type_index = Some(*n);
                }
                *n += 1;
            }
        }
        let typed = self
            .rows
            .values()
            .filter_map(|a| Some((a.agent_type?, a.type_index?, a.id)));
        self.by_type = typed.collect();
    }
}

/// `extdata` of a row made up for an id no table gave (yet).
pub(crate) const SYNTHESIZED: &str = r#"{"synthesized":true}"#;

/// A kernel symbol.
#[derive(Debug, Clone, Default)]
pub(crate) struct KernelSymbolRow {
    pub id: i64,
    pub code_object_id: i64,
    /// Shared with the catalog made from the row (`rocpd_model::KernelSymbol`).
    pub kernel_name: Option<std::sync::Arc<str>>,
    pub display_name: Option<std::sync::Arc<str>>,
    pub kernel_object: Option<i64>,
    pub kernarg_segment_size: Option<i64>,
    pub kernarg_segment_alignment: Option<i64>,
    pub group_segment_size: Option<i64>,
    pub private_segment_size: Option<i64>,
    pub sgpr_count: Option<i64>,
    pub arch_vgpr_count: Option<i64>,
    pub accum_vgpr_count: Option<i64>,
    pub extdata: Option<std::sync::Arc<str>>,
}

impl KernelSymbolRow {
    /// A row made up for a kernel id a record named before any `kernel_symbols` entry
    /// did. A table's row always has its record as `extdata`, never this.
    pub fn is_synthesized(&self) -> bool {
        self.extdata.as_deref() == Some(SYNTHESIZED)
    }
}

/// A code object.
#[derive(Debug, Clone, Default)]
pub(crate) struct CodeObjectRow {
    pub id: i64,
    pub agent_id: Option<i64>,
    pub uri: Option<String>,
    pub load_base: Option<i64>,
    pub load_size: Option<i64>,
    pub load_delta: Option<i64>,
    pub storage_type: Option<&'static str>,
    pub extdata: Option<String>,
}

/// A counter definition.
#[derive(Debug, Clone, Default)]
pub(crate) struct PmcRow {
    pub id: i64,
    pub agent_id: Option<i64>,
    pub target_arch: Option<&'static str>,
    pub name: String,
    pub description: Option<String>,
    pub block: Option<String>,
    pub expression: Option<String>,
    pub is_constant: Option<i64>,
    pub is_derived: Option<i64>,
    pub extdata: Option<String>,
}

/// The shared event metadata of one row.
#[derive(Debug, Clone, Default)]
pub(crate) struct EventRow<'a> {
    pub category: &'a str,
    pub stack_id: Option<i64>,
    pub parent_stack_id: Option<i64>,
    pub correlation_id: Option<i64>,
    pub extdata: Option<String>,
}

/// A kernel dispatch.
#[derive(Debug, Clone, Default, Hash)]
pub(crate) struct DispatchRow {
    pub dispatch_id: i64,
    pub pid: i64,
    pub tid: Option<i64>,
    pub agent_id: i64,
    pub kernel_id: i64,
    pub queue_id: i64,
    pub stream_id: i64,
    pub start: i64,
    pub end: i64,
    pub private_segment_size: Option<i64>,
    pub group_segment_size: Option<i64>,
    pub workgroup: [i64; 3],
    pub grid: [i64; 3],
    pub region_name_id: Option<i64>,
    pub extdata: Option<String>,
}

/// A memory copy.
#[derive(Debug, Clone, Default)]
pub(crate) struct CopyRow {
    pub pid: i64,
    pub tid: Option<i64>,
    pub start: i64,
    pub end: i64,
    pub name_id: i64,
    pub dst_agent_id: Option<i64>,
    pub dst_address: Option<i64>,
    pub src_agent_id: Option<i64>,
    pub src_address: Option<i64>,
    pub size: i64,
    pub queue_id: Option<i64>,
    pub stream_id: Option<i64>,
    pub region_name_id: Option<i64>,
    pub extdata: Option<String>,
}

/// A memory allocation, free or scratch-memory event.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllocRow {
    pub pid: i64,
    pub tid: Option<i64>,
    pub agent_id: Option<i64>,
    pub kind: Option<&'static str>,
    pub level: Option<&'static str>,
    pub start: i64,
    pub end: i64,
    pub address: Option<i64>,
    pub size: i64,
    pub queue_id: Option<i64>,
    pub stream_id: Option<i64>,
    pub extdata: Option<String>,
}

/// A dispatch already in the database.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FoundDispatch {
    /// Its event.
    pub event_id: Option<i64>,
    /// The internal correlation id of its event.
    pub stack_id: Option<i64>,
    /// Its thread.
    pub tid: Option<i64>,
}

/// The name of queue or stream `id` (`word` is `Queue` or `Stream`): handle 0 is the
/// default one.
pub(crate) fn handle_name(word: &str, id: i64) -> String {
    if id == 0 {
        format!("Default {word}")
    } else {
        format!("{word} {id}")
    }
}

/// Whether an error is a PRIMARY KEY (or UNIQUE) conflict.
/// The import's error for a row whose id an earlier row took when no larger id is left;
/// [`placed`] names the file and place of the row.
pub(crate) const NO_ID_LEFT: &str =
    "its id is taken by an earlier row, and no larger id is left to give it (9223372036854775807 is taken)";

/// `e`, named with the file and place of the row whose insertion failed, if it is
/// [`NO_ID_LEFT`] (the other errors of the database are the output's).
pub(crate) fn placed(e: Error, file: &Path, place: impl Into<String>) -> Error {
    match e {
        Error::Usage(m) if m == NO_ID_LEFT => Error::input(file, place, m),
        e => e,
    }
}

fn is_key_conflict(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
            || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE)
}

/// The writer of one database inside its transaction.
pub(crate) struct Out<'c> {
    conn: &'c Connection,
    path: PathBuf,
    guid: String,
    sql: Sql,
    strings: rocpd_dbwrite::Strings,
    next_event: i64,
    next_copy: i64,
    next_alloc: i64,
    next_pmc_event: i64,
    /// Node id of every row.
    pub nid: i64,
    node: Option<NodeRow>,
    processes: BTreeMap<i64, ProcessRow>,
    threads: BTreeSet<(i64, i64)>,
    queues: BTreeSet<i64>,
    streams: BTreeSet<i64>,
    pub agents: Agents,
    kernels: HashSet<i64>,
    /// Kernel ids whose row is made up ([`KernelSymbolRow::is_synthesized`]).
    made_up_kernels: HashSet<i64>,
    code_objects: HashSet<i64>,
    pmcs: HashSet<i64>,
    untimed: bool,
    /// Whether the temporary tables of JSON texts and deferred records exist.
    texts: bool,
    deferred: bool,
}

impl<'c> Out<'c> {
    pub fn new(conn: &'c Connection, path: &Path, guid: &str) -> Result<Out<'c>> {
        Ok(Out {
            conn,
            path: path.to_path_buf(),
            guid: guid.to_string(),
            sql: Sql::new(guid),
            strings: rocpd_dbwrite::Strings::new(guid),
            next_event: 1,
            next_copy: 1,
            next_alloc: 1,
            next_pmc_event: 1,
            nid: 0,
            node: None,
            processes: BTreeMap::new(),
            threads: BTreeSet::new(),
            queues: BTreeSet::new(),
            streams: BTreeSet::new(),
            agents: Agents::default(),
            kernels: HashSet::new(),
            made_up_kernels: HashSet::new(),
            code_objects: HashSet::new(),
            pmcs: HashSet::new(),
            untimed: false,
            texts: false,
            deferred: false,
        })
    }

    fn err(&self, e: rusqlite::Error) -> Error {
        Error::output(&self.path, e.to_string())
    }

    fn exec(&self, sql: &str, p: impl rusqlite::Params) -> Result<usize> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut s| s.execute(p))
            .map_err(|e| self.err(e))
    }

    /// Runs `sql` (a whole script) on the connection.
    pub fn batch(&self, sql: &str) -> Result<()> {
        self.conn.execute_batch(sql).map_err(|e| self.err(e))
    }

    /// The quoted name of table `base`.
    pub fn table(&self, base: &str) -> String {
        format!("\"{}\"", table_name(base, &self.guid))
    }

    /// Inserts with `id` into table `base`; on an id conflict, inserts with the next free
    /// id. When none is left (the largest id is 2^63-1: SQLite would say "database or
    /// disk is full" and roll the transaction back), the error is [`NO_ID_LEFT`], which
    /// the readers place in the input.
    fn insert_with_id(&self, base: &str, sql: &str, mut values: Vec<Value>) -> Result<()> {
        match self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| s.execute(params_from_iter(values.iter())))
        {
            Ok(_) => Ok(()),
            Err(e) if is_key_conflict(&e) => {
                if self.largest_id(base)? == Some(i64::MAX) {
                    return Err(Error::Usage(NO_ID_LEFT.into()));
                }
                values[0] = Value::Null;
                self.exec(sql, params_from_iter(values.iter())).map(|_| ())
            }
            Err(e) => Err(self.err(e)),
        }
    }

    /// The largest id table `base` has had (its `AUTOINCREMENT` sequence), if any.
    fn largest_id(&self, base: &str) -> Result<Option<i64>> {
        let name = table_name(base, &self.guid);
        self.conn
            .query_row(
                "SELECT seq FROM sqlite_sequence WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The id of string `s` in `rocpd_string`, inserting it if new.
    pub fn string(&mut self, s: &str) -> Result<i64> {
        let r = self.strings.id(self.conn, s);
        r.map_err(|e| self.err(e))
    }

    /// Sets the node (otherwise an "unknown" node is written).
    pub fn set_node(&mut self, node: NodeRow) {
        self.nid = node.id;
        self.node = Some(node);
    }

    /// Records what is known about process `pid`.
    pub fn set_process(&mut self, pid: i64, row: ProcessRow) {
        self.processes.insert(pid, row);
    }

    /// Notes that thread `tid` of process `pid` exists.
    pub fn thread(&mut self, pid: i64, tid: Option<i64>) {
        self.processes.entry(pid).or_default();
        if let Some(tid) = tid {
            if !self.threads.contains(&(pid, tid)) {
                self.threads.insert((pid, tid));
            }
        }
    }

    pub fn queue(&mut self, id: i64) {
        self.queues.insert(id);
    }

    pub fn stream(&mut self, id: i64) {
        self.streams.insert(id);
    }

    pub fn has_kernel(&self, id: i64) -> bool {
        self.kernels.contains(&id)
    }

    pub fn has_pmc(&self, id: i64) -> bool {
        self.pmcs.contains(&id)
    }

    /// One `rocpd_event` row; returns its id.
    pub fn event(&mut self, e: &EventRow<'_>) -> Result<i64> {
        let category_id = self.string(e.category)?;
        let id = self.next_event;
        self.next_event += 1;
        self.exec(
            &self.sql.event,
            params![
                id,
                category_id,
                e.stack_id,
                e.parent_stack_id,
                e.correlation_id,
                e.extdata.as_deref().unwrap_or("{}")
            ],
        )?;
        Ok(id)
    }

    /// One `rocpd_region` row (id = `id` unless taken).
    #[allow(clippy::too_many_arguments)]
    pub fn region(
        &mut self,
        id: i64,
        pid: i64,
        tid: i64,
        start: i64,
        end: i64,
        name_id: i64,
        event_id: i64,
    ) -> Result<()> {
        self.thread(pid, Some(tid));
        let values = vec![
            Value::Integer(id),
            Value::Integer(self.nid),
            Value::Integer(pid),
            Value::Integer(tid),
            Value::Integer(start),
            Value::Integer(end),
            Value::Integer(name_id),
            Value::Integer(event_id),
            Value::Text("{}".into()),
        ];
        self.insert_with_id("rocpd_region", &self.sql.region, values)
    }

    fn dispatch_values(&self, d: &DispatchRow) -> Vec<Value> {
        let o = |v: Option<i64>| v.map_or(Value::Null, Value::Integer);
        vec![
            Value::Integer(d.dispatch_id),
            Value::Integer(self.nid),
            Value::Integer(d.pid),
            o(d.tid),
            Value::Integer(d.agent_id),
            Value::Integer(d.kernel_id),
            Value::Integer(d.dispatch_id),
            Value::Integer(d.queue_id),
            Value::Integer(d.stream_id),
            Value::Integer(d.start),
            Value::Integer(d.end),
            o(d.private_segment_size),
            o(d.group_segment_size),
            Value::Integer(d.workgroup[0]),
            Value::Integer(d.workgroup[1]),
            Value::Integer(d.workgroup[2]),
            Value::Integer(d.grid[0]),
            Value::Integer(d.grid[1]),
            Value::Integer(d.grid[2]),
            o(d.region_name_id),
        ]
    }

    /// One `rocpd_kernel_dispatch` row (row id = dispatch id unless taken).
    pub fn dispatch(&mut self, d: &DispatchRow, event_id: i64) -> Result<()> {
        self.thread(d.pid, d.tid);
        self.queue(d.queue_id);
        self.stream(d.stream_id);
        let mut values = self.dispatch_values(d);
        values.push(Value::Integer(event_id));
        values.push(Value::Text(
            d.extdata.clone().unwrap_or_else(|| "{}".into()),
        ));
        self.insert_with_id("rocpd_kernel_dispatch", &self.sql.dispatch, values)
    }

    /// The dispatch stored under row id `dispatch_id`, if any.
    pub fn find_dispatch(&self, dispatch_id: i64) -> Result<Option<FoundDispatch>> {
        let found: Option<(Option<i64>, Option<i64>)> = self
            .conn
            .prepare_cached(&self.sql.dispatch_find)
            .and_then(|mut s| {
                s.query_row([dispatch_id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.err(e))?;
        let Some((event_id, tid)) = found else {
            return Ok(None);
        };
        let stack_id: Option<i64> = match event_id {
            None => None,
            Some(e) => self
                .conn
                .prepare_cached(&self.sql.event_stack)
                .and_then(|mut s| s.query_row([e], |r| r.get(0)).optional())
                .map_err(|e| self.err(e))?
                .flatten(),
        };
        Ok(Some(FoundDispatch {
            event_id,
            stack_id,
            tid,
        }))
    }

    /// Sets the thread of a dispatch that has none.
    pub fn set_dispatch_tid(&mut self, dispatch_id: i64, pid: i64, tid: i64) -> Result<()> {
        self.thread(pid, Some(tid));
        let sql = format!(
            "UPDATE {} SET tid = ? WHERE id = ? AND tid IS NULL",
            self.table("rocpd_kernel_dispatch")
        );
        self.exec(&sql, [tid, dispatch_id]).map(|_| ())
    }

    /// Overwrites the columns of the dispatch with row id `d.dispatch_id` (keeping its event).
    pub fn update_dispatch(&mut self, d: &DispatchRow) -> Result<()> {
        self.thread(d.pid, d.tid);
        self.queue(d.queue_id);
        self.stream(d.stream_id);
        let v = self.dispatch_values(d);
        let mut values = vec![v[0].clone()];
        values.push(v[3].clone());
        values.push(v[4].clone());
        values.push(v[5].clone());
        values.extend(v[7..=19].iter().cloned());
        values.push(Value::Text(
            d.extdata.clone().unwrap_or_else(|| "{}".into()),
        ));
        self.exec(&self.sql.dispatch_update, params_from_iter(values.iter()))
            .map(|_| ())
    }

    /// One `rocpd_memory_copy` row.
    pub fn copy(&mut self, c: &CopyRow, event_id: i64) -> Result<()> {
        self.thread(c.pid, c.tid);
        if let Some(q) = c.queue_id {
            self.queue(q);
        }
        if let Some(s) = c.stream_id {
            self.stream(s);
        }
        let id = self.next_copy;
        self.next_copy += 1;
        self.exec(
            &self.sql.copy,
            params![
                id,
                self.nid,
                c.pid,
                c.tid,
                c.start,
                c.end,
                c.name_id,
                c.dst_agent_id,
                c.dst_address,
                c.src_agent_id,
                c.src_address,
                c.size,
                c.queue_id,
                c.stream_id,
                c.region_name_id,
                event_id,
                c.extdata.as_deref().unwrap_or("{}")
            ],
        )
        .map(|_| ())
    }

    /// One `rocpd_memory_allocate` row.
    pub fn alloc(&mut self, a: &AllocRow, event_id: i64) -> Result<()> {
        self.thread(a.pid, a.tid);
        if let Some(q) = a.queue_id {
            self.queue(q);
        }
        if let Some(s) = a.stream_id {
            self.stream(s);
        }
        let id = self.next_alloc;
        self.next_alloc += 1;
        self.exec(
            &self.sql.alloc,
            params![
                id,
                self.nid,
                a.pid,
                a.tid,
                a.agent_id,
                a.kind,
                a.level,
                a.start,
                a.end,
                a.address,
                a.size,
                a.queue_id,
                a.stream_id,
                event_id,
                a.extdata.as_deref().unwrap_or("{}")
            ],
        )
        .map(|_| ())
    }

    /// One `rocpd_info_pmc` row (once per id).
    pub fn pmc(&mut self, pid: i64, p: &PmcRow) -> Result<()> {
        if !self.pmcs.insert(p.id) {
            return Ok(());
        }
        self.exec(
            &self.sql.pmc,
            params![
                p.id,
                self.nid,
                pid,
                p.agent_id,
                p.target_arch,
                None::<i64>,
                0i64,
                p.name,
                p.name,
                p.description,
                "",
                "rocm",
                "",
                "ABS",
                p.block,
                p.expression,
                p.is_constant,
                p.is_derived,
                p.extdata.as_deref().unwrap_or("{}")
            ],
        )
        .map(|_| ())
    }

    /// One `rocpd_pmc_event` row.
    pub fn pmc_event(&mut self, event_id: i64, pmc_id: i64, value: f64) -> Result<()> {
        let id = self.next_pmc_event;
        self.next_pmc_event += 1;
        self.exec(
            &self.sql.pmc_event,
            params![id, event_id, pmc_id, value, "{}"],
        )
        .map(|_| ())
    }

    /// One `rocpd_info_kernel_symbol` row (once per id).
    pub fn kernel_symbol(&mut self, pid: i64, k: &KernelSymbolRow) -> Result<()> {
        if !self.kernels.insert(k.id) {
            // A `kernel_symbols` table after the records that named its kernels: its row
            // replaces the one made up for them, so the kernels keep their names.
            if k.is_synthesized() || !self.made_up_kernels.remove(&k.id) {
                return Ok(());
            }
            let sql = format!(
                "DELETE FROM {} WHERE id = ?",
                self.table("rocpd_info_kernel_symbol")
            );
            self.exec(&sql, [k.id])?;
        } else if k.is_synthesized() {
            self.made_up_kernels.insert(k.id);
        }
        self.exec(
            &self.sql.kernel_symbol,
            params![
                k.id,
                self.nid,
                pid,
                k.code_object_id,
                k.kernel_name,
                k.display_name,
                k.kernel_object,
                k.kernarg_segment_size,
                k.kernarg_segment_alignment,
                k.group_segment_size,
                k.private_segment_size,
                k.sgpr_count,
                k.arch_vgpr_count,
                k.accum_vgpr_count,
                k.extdata.as_deref().unwrap_or("{}")
            ],
        )
        .map(|_| ())
    }

    /// One `rocpd_info_code_object` row (once per id).
    pub fn code_object(&mut self, pid: i64, c: &CodeObjectRow) -> Result<()> {
        if !self.code_objects.insert(c.id) {
            return Ok(());
        }
        self.exec(
            &self.sql.code_object,
            params![
                c.id,
                self.nid,
                pid,
                c.agent_id,
                c.uri,
                c.load_base,
                c.load_size,
                c.load_delta,
                c.storage_type,
                c.extdata.as_deref().unwrap_or("{}")
            ],
        )
        .map(|_| ())
    }

    /// The event made earlier for counter values of a dispatch that has no time (and so no
    /// `rocpd_kernel_dispatch` row).
    pub fn untimed_event(&self, dispatch_id: i64) -> Result<Option<i64>> {
        if !self.untimed {
            return Ok(None);
        }
        self.conn
            .prepare_cached("SELECT event_id FROM temp.rs_untimed WHERE dispatch_id = ?")
            .and_then(|mut s| s.query_row([dispatch_id], |r| r.get(0)).optional())
            .map_err(|e| self.err(e))
    }

    /// Remembers the event of a dispatch without time (in a temporary table: bounded memory).
    pub fn remember_untimed(&mut self, dispatch_id: i64, event_id: i64) -> Result<()> {
        if !self.untimed {
            self.batch(
                "CREATE TEMP TABLE rs_untimed (dispatch_id INTEGER PRIMARY KEY, event_id INTEGER);",
            )?;
            self.untimed = true;
        }
        self.exec(
            "INSERT OR REPLACE INTO temp.rs_untimed VALUES (?, ?)",
            [dispatch_id, event_id],
        )
        .map(|_| ())
    }

    /// Keeps text `id` of a JSON `strings` table (in a temporary table: bounded memory).
    pub fn put_text(&mut self, which: Texts, id: i64, text: &str) -> Result<()> {
        if !self.texts {
            self.batch(
                "CREATE TEMP TABLE rs_marker_text (id INTEGER PRIMARY KEY, text TEXT);
                 CREATE TEMP TABLE rs_external_text (id INTEGER PRIMARY KEY, text TEXT);",
            )?;
            self.texts = true;
        }
        let sql = match which {
            Texts::Marker => "INSERT OR REPLACE INTO temp.rs_marker_text VALUES (?, ?)",
            Texts::External => "INSERT OR REPLACE INTO temp.rs_external_text VALUES (?, ?)",
        };
        self.exec(sql, params![id, text]).map(|_| ())
    }

    /// Text `id` of a JSON `strings` table, if it was given.
    pub fn text(&self, which: Texts, id: i64) -> Result<Option<String>> {
        if !self.texts {
            return Ok(None);
        }
        let sql = match which {
            Texts::Marker => "SELECT text FROM temp.rs_marker_text WHERE id = ?",
            Texts::External => "SELECT text FROM temp.rs_external_text WHERE id = ?",
        };
        self.conn
            .prepare_cached(sql)
            .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
            .map_err(|e| self.err(e))
    }

    /// Keeps a JSON record that came before the tables it needs.
    pub fn defer(&mut self, section: &str, place: &str, json: &str) -> Result<()> {
        if !self.deferred {
            self.batch(
                "CREATE TEMP TABLE rs_json_pending \
                 (seq INTEGER PRIMARY KEY, section TEXT, place TEXT, json TEXT);",
            )?;
            self.deferred = true;
        }
        self.exec(
            "INSERT INTO temp.rs_json_pending (section, place, json) VALUES (?, ?, ?)",
            [section, place, json],
        )
        .map(|_| ())
    }

    /// Up to `limit` deferred records after sequence number `after`, in their order.
    pub fn deferred(&mut self, after: i64, limit: usize) -> Result<Vec<Deferred>> {
        if !self.deferred {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT seq, section, place, json FROM temp.rs_json_pending \
                 WHERE seq > ? ORDER BY seq LIMIT ?",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([after, limit], |r| {
                Ok(Deferred {
                    seq: r.get(0)?,
                    section: r.get(1)?,
                    place: r.get(2)?,
                    json: r.get(3)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.err(e))
    }

    /// Fills in the thread of rows that have none from the API call with the same internal
    /// correlation id (copies, allocations and dispatches of generations without a
    /// `Thread_Id` column).
    fn fill_threads(&self) -> Result<()> {
        let region = self.table("rocpd_region");
        let event = self.table("rocpd_event");
        for base in [
            "rocpd_memory_copy",
            "rocpd_memory_allocate",
            "rocpd_kernel_dispatch",
        ] {
            let t = self.table(base);
            self.batch(&format!(
                "UPDATE {t} SET tid = (SELECT R.tid FROM {region} R WHERE R.id = \
                 (SELECT E.stack_id FROM {event} E WHERE E.id = {t}.event_id)) WHERE tid IS NULL;"
            ))?;
        }
        Ok(())
    }

    /// Writes the dimension rows collected while importing. Must be called before commit.
    pub fn finish(mut self) -> Result<()> {
        if self.untimed {
            self.batch("DROP TABLE temp.rs_untimed;")?;
        }
        if self.texts {
            self.batch("DROP TABLE temp.rs_marker_text; DROP TABLE temp.rs_external_text;")?;
        }
        if self.deferred {
            self.batch("DROP TABLE temp.rs_json_pending;")?;
        }
        self.fill_threads()?;
        // Threads filled in above, and processes of every row.
        let mut filled: Vec<(i64, i64)> = Vec::new();
        for base in [
            "rocpd_memory_copy",
            "rocpd_memory_allocate",
            "rocpd_kernel_dispatch",
        ] {
            let sql = format!(
                "SELECT DISTINCT pid, tid FROM {} WHERE tid IS NOT NULL",
                self.table(base)
            );
            let mut st = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
            let rows = st
                .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
                .map_err(|e| self.err(e))?;
            for r in rows {
                filled.push(r.map_err(|e| self.err(e))?);
            }
        }
        for (pid, tid) in filled {
            self.thread(pid, Some(tid));
        }

        let node = self
            .node
            .clone()
            .unwrap_or_else(|| NodeRow::from_hostname(None));
        self.exec(
            &self.sql.node,
            params![
                node.id,
                node.hash,
                node.machine_id,
                node.system_name,
                node.hostname,
                node.release,
                node.version,
                node.hardware_name,
                node.domain_name
            ],
        )?;
        let nid = node.id;

        // Process spans from the events.
        for (pid, p) in &self.processes {
            let mut span: (Option<i64>, Option<i64>) = (None, None);
            for base in [
                "rocpd_region",
                "rocpd_kernel_dispatch",
                "rocpd_memory_copy",
                "rocpd_memory_allocate",
            ] {
                let sql = format!(
                    "SELECT MIN(start), MAX(\"end\") FROM {} WHERE pid = ?",
                    self.table(base)
                );
                let (a, b): (Option<i64>, Option<i64>) = self
                    .conn
                    .query_row(&sql, [pid], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(|e| self.err(e))?;
                span.0 = match (span.0, a) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                };
                span.1 = match (span.1, b) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                };
            }
            self.exec(
                &self.sql.process,
                params![
                    pid,
                    nid,
                    p.ppid,
                    pid,
                    p.init,
                    p.fini,
                    p.init.or(span.0),
                    p.fini.or(span.1),
                    p.command,
                    p.environment.as_deref().unwrap_or("{}"),
                    p.extdata.as_deref().unwrap_or("{}")
                ],
            )?;
        }
        for (pid, tid) in &self.threads {
            let r = self
                .conn
                .prepare_cached(&self.sql.thread)
                .and_then(|mut s| {
                    s.execute(params![
                        tid,
                        nid,
                        None::<i64>,
                        pid,
                        tid,
                        None::<String>,
                        None::<i64>,
                        None::<i64>,
                        "{}"
                    ])
                });
            match r {
                Ok(_) => {}
                // The same tid in two processes (thread ids are tids): keep the first.
                Err(e) if is_key_conflict(&e) => {}
                Err(e) => return Err(self.err(e)),
            }
        }
        let main_pid = self.processes.keys().next().copied();
        self.agents.finish();
        for a in self.agents.rows.values() {
            self.exec(
                &self.sql.agent,
                params![
                    a.id,
                    nid,
                    main_pid.unwrap_or(0),
                    a.agent_type,
                    a.absolute_index,
                    a.logical_index,
                    a.type_index,
                    a.uuid,
                    a.name,
                    a.model_name,
                    a.vendor_name,
                    a.product_name,
                    a.user_name,
                    a.extdata.as_deref().unwrap_or("{}")
                ],
            )?;
        }
        for q in &self.queues {
            let name = handle_name("Queue", *q);
            self.exec(&self.sql.queue, params![q, nid, main_pid, name, "{}"])?;
        }
        for s in &self.streams {
            let name = handle_name("Stream", *s);
            self.exec(&self.sql.stream, params![s, nid, main_pid, name, "{}"])?;
        }
        // Code objects the kernel symbols name but the input did not describe.
        let missing: Vec<i64> = {
            let sql = format!(
                "SELECT DISTINCT code_object_id FROM {}",
                self.table("rocpd_info_kernel_symbol")
            );
            let mut st = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
            let rows = st
                .query_map([], |r| r.get::<_, i64>(0))
                .map_err(|e| self.err(e))?;
            let mut v = Vec::new();
            for r in rows {
                let id = r.map_err(|e| self.err(e))?;
                if !self.code_objects.contains(&id) {
                    v.push(id);
                }
            }
            v
        };
        for id in missing {
            let row = CodeObjectRow {
                id,
                extdata: Some(SYNTHESIZED.into()),
                ..Default::default()
            };
            self.code_object(main_pid.unwrap_or(0), &row)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a scan of every agent in id order finds for `r` (how references were
    /// resolved before the indexes), a typed reference resolved before keeping its agent.
    fn scanned(agents: &Agents, r: AgentRef) -> Option<i64> {
        if let AgentRef::Typed(t, n) = r {
            if let Some(&id) = agents.typed.get(&(t, n)) {
                return Some(id);
            }
        }
        match r {
            AgentRef::Logical(n) => agents.rows().find(|a| a.logical_index == Some(n)),
            AgentRef::Bare(n) => agents.rows().find(|a| a.id == n),
            AgentRef::Typed(t, n) => agents
                .rows()
                .find(|a| a.agent_type == Some(t) && a.type_index == Some(n)),
        }
        .map(|a| a.id)
        .or_else(|| match r {
            AgentRef::Typed(t, n) => agents.typed.get(&(t, n)).copied(),
            _ => None,
        })
    }

    /// The indexes as the rows give them.
    fn consistent(agents: &Agents) {
        let logical: BTreeSet<_> = agents
            .rows()
            .filter_map(|a| Some((a.logical_index?, a.id)))
            .collect();
        let typed: BTreeSet<_> = agents
            .rows()
            .filter_map(|a| Some((a.agent_type?, a.type_index?, a.id)))
            .collect();
        assert_eq!(agents.by_logical, logical);
        assert_eq!(agents.by_type, typed);
    }

    /// References resolve through the indexes to what a scan of every agent finds, over
    /// a long mix of table rows (some sharing indexes), references of every kind with and
    /// without type evidence, and the type indexes `finish` fills in.
    #[test]
    fn references_resolve_as_a_scan_finds_them() {
        let mut agents = Agents::default();
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for step in 0..4000 {
            let n = next(40) as i64;
            match next(6) {
                0 => agents.add(
                    AgentRow {
                        id: n,
                        agent_type: [None, Some("GPU"), Some("CPU")][next(3) as usize],
                        logical_index: Some(next(10) as i64),
                        type_index: Some(next(5) as i64).filter(|_| next(2) == 0),
                        ..Default::default()
                    },
                    Some(n + 1000).filter(|_| step % 3 == 0),
                ),
                k => {
                    let r = match k {
                        1 => AgentRef::Logical(n),
                        2 => AgentRef::Bare(n),
                        _ => AgentRef::Typed(["GPU", "CPU"][next(2) as usize], n % 8),
                    };
                    let want = scanned(&agents, r);
                    let evidence = [None, Some("GPU"), Some("CPU")][next(3) as usize];
                    let got = agents.resolve(r, evidence);
                    if let Some(w) = want {
                        assert_eq!(got, w, "step {step}: {r:?}");
                    }
                }
            }
            consistent(&agents);
        }
        agents.finish();
        consistent(&agents);
    }
}
