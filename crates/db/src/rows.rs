//! Writing model rows as a RocPD table set: how [`crate::RocpdSink`] writes a source that
//! has no database to copy rows out of (a rocprofv3 CSV run or JSON process, or a Proton
//! file, read directly).
//!
//! The set is named by the source's guid and holds the source's catalog records as info
//! rows and each event row as it reaches the sink, ids kept. The model carries OS pids and
//! tids where the schema's columns reference `rocpd_info_process.id` and
//! `rocpd_info_thread.id`, so those are mapped back through the catalog. Texts are interned
//! in the set's `rocpd_string`; an event id gets one `rocpd_event` row (from the first row
//! that names it: a counter value shares its dispatch's event) and its function arguments
//! as `rocpd_arg` rows. Columns the reader derives when it reads the database back (kernel
//! names, counter names, ROCTx messages, launch counts, flow aggregates) are not stored.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt32Type};
use arrow_array::{Array, RecordBatch};
use rocpd_dbwrite::{insert_sql, Strings};
use rocpd_model::{col, Catalog, Table};
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{params_from_iter, Connection};

/// Where a RocPD column's value comes from, for one model table.
#[derive(Clone, Copy)]
enum Fill {
    /// An integer (or text, or real) model column as it is.
    Col(&'static str),
    /// An integer model column; 0 where null (the schema's column is `NOT NULL`).
    OrZero(&'static str),
    /// A text model column as its `rocpd_string` id.
    Str(&'static str),
    /// A text model column; NULL where empty (readers say `''` for a NULL the schema
    /// constrains, such as an allocation's `type`).
    Text(&'static str),
    /// The OS pid mapped to its `rocpd_info_process.id`.
    Pid,
    /// The OS tid mapped to its `rocpd_info_thread.id`.
    Tid,
    /// [`Fill::Tid`], 0 where null (a region's `tid` is `NOT NULL`).
    TidOrZero,
}

use Fill::{Col, OrZero, Pid, Str, Text, Tid, TidOrZero};

/// The RocPD table of a model table, and its columns with where each comes from.
fn layout(t: Table) -> (&'static str, &'static [(&'static str, Fill)]) {
    const TIMES: [(&str, Fill); 6] = [
        ("id", Col("id")),
        ("nid", Col("nid")),
        ("pid", Pid),
        ("tid", Tid),
        ("start", Col("start")),
        ("end", Col("end")),
    ];
    const REGION: &[(&str, Fill)] = &[
        TIMES[0],
        TIMES[1],
        TIMES[2],
        ("tid", TidOrZero),
        TIMES[4],
        TIMES[5],
        ("name_id", Str("name")),
        ("event_id", Col("event_id")),
        ("extdata", Col("extdata")),
    ];
    const SAMPLE: &[(&str, Fill)] = &[
        ("id", Col("id")),
        ("track_id", OrZero("track_id")),
        ("timestamp", Col("start")),
        ("event_id", Col("event_id")),
        ("extdata", Col("extdata")),
    ];
    const DISPATCH: &[(&str, Fill)] = &[
        TIMES[0],
        TIMES[1],
        TIMES[2],
        TIMES[3],
        ("agent_id", Col("agent_id")),
        ("kernel_id", Col("kernel_id")),
        ("dispatch_id", Col("dispatch_id")),
        ("queue_id", OrZero("queue_id")),
        ("stream_id", OrZero("stream_id")),
        TIMES[4],
        TIMES[5],
        ("private_segment_size", Col("private_segment_size")),
        ("group_segment_size", Col("group_segment_size")),
        ("workgroup_size_x", OrZero("workgroup_x")),
        ("workgroup_size_y", OrZero("workgroup_y")),
        ("workgroup_size_z", OrZero("workgroup_z")),
        ("grid_size_x", OrZero("grid_x")),
        ("grid_size_y", OrZero("grid_y")),
        ("grid_size_z", OrZero("grid_z")),
        ("region_name_id", Str("region_name")),
        ("event_id", Col("event_id")),
        ("extdata", Col("extdata")),
    ];
    const COPY: &[(&str, Fill)] = &[
        TIMES[0],
        TIMES[1],
        TIMES[2],
        TIMES[3],
        TIMES[4],
        TIMES[5],
        ("name_id", Str("name")),
        ("dst_agent_id", Col("dst_agent_id")),
        ("dst_address", Col("dst_address")),
        ("src_agent_id", Col("src_agent_id")),
        ("src_address", Col("src_address")),
        ("size", OrZero("size")),
        ("queue_id", Col("queue_id")),
        ("stream_id", Col("stream_id")),
        ("region_name_id", Str("region_name")),
        ("event_id", Col("event_id")),
        ("extdata", Col("extdata")),
    ];
    const ALLOC: &[(&str, Fill)] = &[
        TIMES[0],
        TIMES[1],
        TIMES[2],
        TIMES[3],
        ("agent_id", Col("agent_id")),
        ("type", Text("type")),
        ("level", Col("level")),
        TIMES[4],
        TIMES[5],
        ("address", Col("address")),
        ("size", OrZero("size")),
        ("queue_id", Col("queue_id")),
        ("stream_id", Col("stream_id")),
        ("event_id", Col("event_id")),
        ("extdata", Col("extdata")),
    ];
    const PMC: &[(&str, Fill)] = &[
        ("id", Col("id")),
        ("event_id", Col("event_id")),
        ("pmc_id", Col("pmc_id")),
        ("value", Col("value")),
        ("extdata", Col("extdata")),
    ];
    match t {
        Table::Region | Table::Marker => ("rocpd_region", REGION),
        Table::Sample => ("rocpd_sample", SAMPLE),
        Table::KernelDispatch => ("rocpd_kernel_dispatch", DISPATCH),
        Table::MemoryCopy => ("rocpd_memory_copy", COPY),
        Table::MemoryAllocation => ("rocpd_memory_allocate", ALLOC),
        Table::PmcValue => ("rocpd_pmc_event", PMC),
    }
}

/// The RocPD column that model column `model` of table `t` is read from, where its name
/// there differs (`grid_x` is `grid_size_x`, a sample's `start` is `timestamp`): errors
/// about a value name the column a user finds in the database.
pub(crate) fn stored_column(t: Table, model: &str) -> Option<&'static str> {
    layout(t).1.iter().find_map(|&(stored, from)| match from {
        Col(n) | OrZero(n) | Text(n) if n == model && stored != model => Some(stored),
        _ => None,
    })
}

/// The `rocpd_event` columns and the model columns they come from.
const EVENT: &[(&str, Fill)] = &[
    ("id", Col("event_id")),
    ("category_id", Str("category")),
    ("stack_id", Col("stack_id")),
    ("parent_stack_id", Col("parent_stack_id")),
    ("correlation_id", Col("correlation_id")),
    ("call_stack", Col("call_stack")),
    ("line_info", Col("line_info")),
    ("extdata", Col("event_extdata")),
];

/// The `rocpd_track` columns after its id, and the model columns they come from.
const TRACK: [(&str, Fill); 4] = [
    ("nid", Col("nid")),
    ("pid", Pid),
    ("tid", Tid),
    ("name_id", Str("name")),
];

/// A column's fill with the index in the batch of the model column it reads.
struct Resolved(Fill, usize);

/// The fills of `cols` with their model columns found in table `t`'s layout.
fn resolve(t: Table, cols: &[(&'static str, Fill)]) -> Vec<Resolved> {
    cols.iter()
        .map(|&(_, from)| {
            let name = match from {
                Col(n) | OrZero(n) | Str(n) | Text(n) => n,
                Pid => "pid",
                Tid | TidOrZero => "tid",
            };
            Resolved(from, t.column_index(name))
        })
        .collect()
}

/// The table set of one directly read source in the output being written.
pub(crate) struct SetWriter {
    strings: Strings,
    /// OS pid → `rocpd_info_process.id`, OS tid → `rocpd_info_thread.id`.
    pids: HashMap<i64, i64>,
    tids: HashMap<i64, i64>,
    /// `INSERT` statements per RocPD table base name.
    inserts: HashMap<&'static str, String>,
    event_insert: String,
    arg_insert: String,
    track_insert: String,
}

impl SetWriter {
    /// Creates the tables of source `source` of `catalog` in `conn` and writes its
    /// metadata and info rows. Returns the writer and the names of the tables created.
    pub(crate) fn create(
        conn: &Connection,
        catalog: &Catalog,
        source: u32,
    ) -> rusqlite::Result<(SetWriter, Vec<(&'static str, String)>)> {
        let guid = catalog.sources[source as usize].guid.as_str();
        conn.execute_batch(&rocpd_schema::create_tables_sql(guid))?;
        let tables = rocpd_schema::TABLES
            .iter()
            .map(|b| (*b, rocpd_schema::table_name(b, guid)))
            .collect();
        let sql = insert_sql("rocpd_metadata", guid, &["tag", "value"]);
        for (tag, value) in rocpd_schema::metadata_rows(guid) {
            conn.prepare_cached(&sql)?.execute([tag, value.as_str()])?;
        }
        let mine = |s: u32| s == source;
        let pids: HashMap<i64, i64> = catalog
            .processes
            .iter()
            .filter(|p| mine(p.source))
            .map(|p| (p.pid, p.id))
            .collect();
        let tids: HashMap<i64, i64> = catalog
            .threads
            .iter()
            .filter(|t| mine(t.source))
            .map(|t| (t.tid, t.id))
            .collect();
        let mut inserts = HashMap::new();
        for t in Table::ALL {
            let (base, cols) = layout(t);
            let names: Vec<&str> = cols.iter().map(|(c, _)| *c).collect();
            inserts.insert(base, insert_sql(base, guid, &names));
        }
        let event_cols: Vec<&str> = EVENT.iter().map(|(c, _)| *c).collect();
        let mut w = SetWriter {
            strings: Strings::new(guid),
            pids,
            tids,
            inserts,
            event_insert: insert_sql("rocpd_event", guid, &event_cols).replacen(
                "INSERT",
                "INSERT OR IGNORE",
                1,
            ),
            arg_insert: insert_sql(
                "rocpd_arg",
                guid,
                &["event_id", "position", "type", "name", "value"],
            ),
            track_insert: insert_sql("rocpd_track", guid, &["id", "nid", "pid", "tid", "name_id"])
                .replacen("INSERT", "INSERT OR IGNORE", 1),
        };
        w.write_catalog(conn, catalog, source, guid)?;
        Ok((w, tables))
    }

    fn pid(&self, os: Option<i64>) -> Option<i64> {
        os.map(|p| self.pids.get(&p).copied().unwrap_or(p))
    }

    fn tid(&self, os: Option<i64>) -> Option<i64> {
        os.map(|t| self.tids.get(&t).copied().unwrap_or(t))
    }

    /// The info rows of the source: node, process, threads, agents, queues, streams,
    /// code objects, kernel symbols and counters, in the columns of the schema.
    fn write_catalog(
        &mut self,
        conn: &Connection,
        c: &Catalog,
        source: u32,
        guid: &str,
    ) -> rusqlite::Result<()> {
        use Value::{Integer as I, Null, Text as T};
        let i = |v: Option<i64>| v.map_or(Null, I);
        let t = |v: &Option<String>| v.clone().map_or(Null, T);
        let shared = |v: &Option<std::sync::Arc<str>>| v.as_deref().map_or(Null, |s| T(s.into()));
        let put = |base: &str, values: Vec<Value>| -> rusqlite::Result<()> {
            let cols = rocpd_schema::data_columns(base);
            conn.prepare_cached(&insert_sql(base, guid, &cols))?
                .execute(params_from_iter(values))
                .map(drop)
        };
        for n in c.nodes.iter().filter(|n| n.source == source) {
            put(
                "rocpd_info_node",
                vec![
                    I(n.id),
                    I(n.hash.unwrap_or(n.id)),
                    T(n.machine_id
                        .clone()
                        .unwrap_or_else(|| format!("node {}", n.id))),
                    t(&n.system_name),
                    t(&n.hostname),
                    t(&n.release),
                    t(&n.version),
                    t(&n.hardware_name),
                    t(&n.domain_name),
                ],
            )?;
        }
        for p in c.processes.iter().filter(|p| p.source == source) {
            put(
                "rocpd_info_process",
                vec![
                    I(p.id),
                    I(p.nid),
                    i(p.ppid),
                    I(p.pid),
                    i(p.init),
                    i(p.fini),
                    i(p.start),
                    i(p.end),
                    t(&p.command),
                    t(&p.environment),
                    t(&p.extdata),
                ],
            )?;
        }
        for th in c.threads.iter().filter(|x| x.source == source) {
            put(
                "rocpd_info_thread",
                vec![
                    I(th.id),
                    I(th.nid),
                    i(th.ppid),
                    I(self.pid(Some(th.pid)).unwrap_or(th.pid)),
                    I(th.tid),
                    t(&th.name),
                    i(th.start),
                    i(th.end),
                    t(&th.extdata),
                ],
            )?;
        }
        for a in c.agents.iter().filter(|x| x.source == source) {
            put(
                "rocpd_info_agent",
                vec![
                    I(a.id),
                    I(a.nid),
                    I(self.pid(a.pid).unwrap_or(0)),
                    // Readers say `UNK` for a type the file leaves out (NULL).
                    match a.agent_type.as_str() {
                        "CPU" | "GPU" => T(a.agent_type.clone()),
                        _ => Null,
                    },
                    i(a.absolute_index),
                    i(a.logical_index),
                    i(a.type_index),
                    i(a.uuid),
                    t(&a.name),
                    t(&a.model_name),
                    t(&a.vendor_name),
                    t(&a.product_name),
                    t(&a.user_name),
                    t(&a.extdata),
                ],
            )?;
        }
        for (base, rows) in [
            ("rocpd_info_queue", &c.queues),
            ("rocpd_info_stream", &c.streams),
        ] {
            for q in rows.iter().filter(|x| x.source == source) {
                put(
                    base,
                    vec![
                        I(q.id),
                        I(q.nid),
                        i(self.pid(q.pid)),
                        t(&q.name),
                        t(&q.extdata),
                    ],
                )?;
            }
        }
        for o in c.code_objects.iter().filter(|x| x.source == source) {
            put(
                "rocpd_info_code_object",
                vec![
                    I(o.id),
                    I(o.nid),
                    i(self.pid(o.pid)),
                    i(o.agent_id),
                    t(&o.uri),
                    i(o.load_base),
                    i(o.load_size),
                    i(o.load_delta),
                    t(&o.storage_type),
                    t(&o.extdata),
                ],
            )?;
        }
        for k in c.kernel_symbols.iter().filter(|x| x.source == source) {
            put(
                "rocpd_info_kernel_symbol",
                vec![
                    I(k.id),
                    I(k.nid),
                    i(self.pid(k.pid)),
                    I(k.code_object_id.unwrap_or(0)),
                    shared(&k.kernel_name),
                    shared(&k.display_name),
                    i(k.kernel_object),
                    i(k.kernarg_segment_size),
                    i(k.kernarg_segment_alignment),
                    i(k.group_segment_size),
                    i(k.private_segment_size),
                    i(k.sgpr_count),
                    i(k.arch_vgpr_count),
                    i(k.accum_vgpr_count),
                    shared(&k.extdata),
                ],
            )?;
        }
        for m in c.pmcs.iter().filter(|x| x.source == source) {
            put(
                "rocpd_info_pmc",
                vec![
                    I(m.id),
                    I(m.nid),
                    i(self.pid(m.pid)),
                    i(m.agent_id),
                    t(&m.target_arch),
                    i(m.event_code),
                    i(m.instance_id),
                    T(m.name.clone()),
                    T(m.symbol.clone().unwrap_or_else(|| m.name.clone())),
                    t(&m.description),
                    t(&m.long_description),
                    t(&m.component),
                    t(&m.units),
                    t(&m.value_type),
                    t(&m.block),
                    t(&m.expression),
                    i(m.is_constant),
                    i(m.is_derived),
                    t(&m.extdata),
                ],
            )?;
        }
        Ok(())
    }

    /// The value of a column at row `r` as `from` says, borrowed from the batch where
    /// it is text.
    fn value<'b>(
        &mut self,
        conn: &Connection,
        b: &'b RecordBatch,
        r: usize,
        from: &Resolved,
    ) -> rusqlite::Result<ToSqlOutput<'b>> {
        let int = |i: usize| -> Option<i64> {
            let a = b.column(i).as_primitive::<Int64Type>();
            a.is_valid(r).then(|| a.value(r))
        };
        let text = |i: usize| -> Option<&'b str> {
            let a = b.column(i).as_string::<i32>();
            a.is_valid(r).then(|| a.value(r))
        };
        let integer = |v: i64| ToSqlOutput::Owned(Value::Integer(v));
        let null = ToSqlOutput::Owned(Value::Null);
        Ok(match *from {
            Resolved(Col(_), i) => {
                let a = b.column(i);
                if a.is_null(r) {
                    null
                } else if let Some(s) = a.as_string_opt::<i32>() {
                    ToSqlOutput::Borrowed(ValueRef::Text(s.value(r).as_bytes()))
                } else if let Some(f) = a.as_primitive_opt::<Float64Type>() {
                    ToSqlOutput::Owned(Value::Real(f.value(r)))
                } else {
                    integer(a.as_primitive::<Int64Type>().value(r))
                }
            }
            Resolved(OrZero(_), i) => integer(int(i).unwrap_or(0)),
            Resolved(Text(_), i) => match text(i) {
                Some(v) if !v.is_empty() => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
                _ => null,
            },
            Resolved(Str(_), i) => match text(i) {
                Some(v) => integer(self.strings.id(conn, v)?),
                None => null,
            },
            Resolved(Pid, i) => self.pid(int(i)).map_or(null, integer),
            Resolved(Tid, i) => self.tid(int(i)).map_or(null, integer),
            Resolved(TidOrZero, i) => integer(self.tid(int(i)).unwrap_or(0)),
        })
    }

    /// Writes the rows of source `source` in `b`, a batch of table `t`.
    pub(crate) fn write(
        &mut self,
        conn: &Connection,
        t: Table,
        b: &RecordBatch,
        source: u32,
    ) -> rusqlite::Result<()> {
        let sources = b.column(col::SOURCE).as_primitive::<UInt32Type>();
        let (base, cols) = layout(t);
        // Columns found by name once a batch, statements taken from the cache once a
        // batch, texts bound where they lie: nothing is looked up or copied per row.
        let cols = resolve(t, cols);
        let event_cols = resolve(t, EVENT);
        let mut insert = conn.prepare_cached(&self.inserts[base])?;
        let mut event_insert = conn.prepare_cached(&self.event_insert)?;
        // Only samples have tracks (and a `name` column for theirs): the track ids, the
        // other columns and the statement.
        let mut tracks = if t == Table::Sample {
            let ids = b
                .column(t.column_index("track_id"))
                .as_primitive::<Int64Type>();
            Some((
                ids,
                resolve(t, &TRACK),
                conn.prepare_cached(&self.track_insert)?,
            ))
        } else {
            None
        };
        let event_ids = b
            .column(t.column_index("event_id"))
            .as_primitive::<Int64Type>();
        let args = t
            .column_position("args")
            .map(|i| b.column(i).as_string::<i32>());
        let mut values: Vec<ToSqlOutput<'_>> = Vec::with_capacity(cols.len());
        for r in 0..b.num_rows() {
            if sources.value(r) != source {
                continue;
            }
            for from in &cols {
                values.push(self.value(conn, b, r, from)?);
            }
            insert.execute(params_from_iter(values.drain(..)))?;
            if event_ids.is_valid(r) {
                for from in &event_cols {
                    values.push(self.value(conn, b, r, from)?);
                }
                let new = event_insert.execute(params_from_iter(values.drain(..)))?;
                if new == 1 {
                    if let Some(a) = args.filter(|a| a.is_valid(r)) {
                        self.write_args(conn, event_ids.value(r), a.value(r))?;
                    }
                }
            }
            if let Some((ids, track_cols, track_insert)) =
                tracks.as_mut().filter(|(ids, ..)| ids.is_valid(r))
            {
                values.push(ToSqlOutput::Owned(Value::Integer(ids.value(r))));
                for from in track_cols.iter() {
                    values.push(self.value(conn, b, r, from)?);
                }
                track_insert.execute(params_from_iter(values.drain(..)))?;
            }
        }
        Ok(())
    }

    /// The `rocpd_arg` rows of one event from the model's `args` text (a JSON array of
    /// `{position, type, name, value}`, as the reader builds it).
    fn write_args(&mut self, conn: &Connection, event: i64, text: &str) -> rusqlite::Result<()> {
        // Readers build the text; anything but an array of objects is a source's bug,
        // refused rather than written as an event without its arguments.
        let items = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Array(items)) if items.iter().all(|i| i.is_object()) => items,
            _ => {
                let shown: String = text.chars().take(60).collect();
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    format!(
                        "the args of event {event} are not a JSON array of argument objects: \
                         {shown:?}"
                    )
                    .into(),
                ));
            }
        };
        let mut st = conn.prepare_cached(&self.arg_insert)?;
        for item in items {
            let field = |k: &str| item.get(k).cloned().unwrap_or(serde_json::Value::Null);
            let text = |v: serde_json::Value| match v {
                serde_json::Value::Null => Value::Null,
                serde_json::Value::String(s) => Value::Text(s),
                other => Value::Text(other.to_string()),
            };
            // `type` and `name` are `NOT NULL` in the schema.
            let required = |v| match text(v) {
                Value::Null => Value::Text(String::new()),
                v => v,
            };
            let position = field("position").as_i64().unwrap_or(0);
            st.execute(rusqlite::params![
                event,
                position,
                required(field("type")),
                required(field("name")),
                text(field("value")),
            ])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use arrow_array::RecordBatch;
    use rocpd_model::{Catalog, Projection, Table};
    use rocpd_pipeline::{Numbered, Source, StreamOptions};

    use crate::Database;

    fn rows(source: &dyn Source, table: Table) -> RecordBatch {
        let options = StreamOptions {
            projection: Projection::all(),
            batch_rows: 64,
            tables: None,
        };
        let mut batches = Vec::new();
        for p in source.prepare(0, &options).unwrap().iter_mut() {
            if p.table() == table {
                let mut s = p.open().unwrap();
                while let Some(b) = s.next_batch().unwrap() {
                    batches.push(b);
                }
            }
        }
        arrow_select::concat::concat_batches(&table.schema(), &batches).unwrap()
    }

    /// The OS pids of `d`'s processes.
    fn catalog_pids(d: &Database) -> Vec<i64> {
        d.catalog(0)
            .unwrap()
            .processes
            .iter()
            .map(|p| p.pid)
            .collect()
    }

    fn comparable(mut c: Catalog) -> String {
        for s in &mut c.sources {
            s.path = PathBuf::new();
        }
        serde_json::to_string(&c).unwrap()
    }

    /// A generated database read as if it had no database behind it (every row written
    /// from its batches) reads back the same: function arguments, samples and their
    /// tracks, and process and thread references that are not OS ids included.
    #[test]
    fn rows_written_as_a_table_set_read_back_as_they_were() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = rocpd_gen::GenConfig {
            seed: 21,
            processes: 1,
            iterations: 6,
            odd_names: true,
            row_ids: true,
            ..Default::default()
        };
        let db = rocpd_gen::generate(&cfg, &tmp.path().join("gen"))
            .unwrap()
            .remove(0);
        let original = Database::open(&db).unwrap();
        let catalog = Arc::new(original.catalog(0).unwrap());
        let out = tmp.path().join("written.db");
        let mut sources: Vec<Numbered> = vec![(0, Box::new(Database::open(&db).unwrap()))];
        crate::write_rocpd(&mut sources, catalog, &out).unwrap();
        let written = Database::open(&out).unwrap();
        assert_eq!(
            comparable(original.catalog(0).unwrap()),
            comparable(written.catalog(0).unwrap())
        );
        let counts = Source::count_rows(&original).unwrap();
        assert_eq!(counts, Source::count_rows(&written).unwrap());
        assert!(counts.iter().all(|(_, n)| *n > 0), "{counts:?}");
        for table in Table::ALL {
            let (a, b) = (rows(&original, table), rows(&written, table));
            assert_eq!(a.num_rows(), b.num_rows());
            for (i, col) in table.columns().iter().enumerate() {
                assert!(
                    a.column(i).to_data() == b.column(i).to_data(),
                    "{}.{}: {:?} against {:?}",
                    table.name(),
                    col.name,
                    a.column(i).slice(0, a.num_rows().min(4)),
                    b.column(i).slice(0, b.num_rows().min(4))
                );
            }
        }
        let args = |d: &Database| -> i64 {
            rusqlite::Connection::open(d.path())
                .unwrap()
                .query_row("SELECT COUNT(*) FROM rocpd_arg", [], |r| r.get(0))
                .unwrap()
        };
        assert!(args(&written) > 0);
        assert_eq!(args(&written), args(&original));
        // The references themselves, not only what the reader resolves them to (it keeps
        // an id it cannot resolve).
        let refs = |d: &Database| -> Vec<(i64, i64)> {
            let c = rusqlite::Connection::open(d.path()).unwrap();
            let mut st = c
                .prepare("SELECT pid, tid FROM rocpd_region ORDER BY id")
                .unwrap();
            let v = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
            v.map(|x| x.unwrap()).collect()
        };
        let (a, b) = (refs(&original), refs(&written));
        assert!(a.iter().any(|(p, _)| !catalog_pids(&original).contains(p)));
        assert_eq!(a, b);
    }

    /// Argument text that is not an array of argument objects is refused, naming the
    /// event, instead of leaving the event without its arguments.
    #[test]
    fn args_text_that_is_not_an_array_of_objects_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let db = crate::tests::one_process(tmp.path(), 2, 1);
        let catalog = Database::open(&db).unwrap().catalog(0).unwrap();
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        // As the output database is written: event 7 need not exist.
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        let (mut w, tables) = super::SetWriter::create(&conn, &catalog, 0).unwrap();
        let arg = &tables.iter().find(|(b, _)| *b == "rocpd_arg").unwrap().1;
        let count = || -> i64 {
            conn.query_row(&format!("SELECT COUNT(*) FROM {arg}"), [], |r| r.get(0))
                .unwrap()
        };
        for bad in [
            r#"{"name": "x"}"#,
            "[1, 2]",
            "not json",
            r#"[{"name": "x"}, 3]"#,
        ] {
            let e = w.write_args(&conn, 7, bad).unwrap_err().to_string();
            assert!(e.contains("args of event 7"), "{bad}: {e}");
        }
        assert_eq!(count(), 0);
        w.write_args(&conn, 7, "[]").unwrap();
        let one = r#"[{"position": 0, "type": "int", "name": "n", "value": "3"}]"#;
        w.write_args(&conn, 7, one).unwrap();
        assert_eq!(count(), 1);
    }
}
