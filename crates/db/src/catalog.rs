//! Reading a table set's `rocpd_info_*` tables into the catalog.

use std::path::Path;

use rocpd_model::{
    Agent, Catalog, CodeObject, Error, KernelSymbol, Node, Pmc, Process, Queue, Result, Thread,
};
use rusqlite::{Connection, Row};

use crate::ids::Ids;
use crate::value::{to_i64, to_text};
use crate::{quote_ident, TableSet};

/// Columns of `table` (unquoted full name) as stored.
pub(crate) fn table_columns(conn: &Connection, path: &Path, full: &str) -> Result<Vec<String>> {
    let place = format!("table {full}");
    let mut stmt = conn
        .prepare(&format!("PRAGMA table_info({})", quote_ident(full)))
        .map_err(|e| Error::input(path, &place, e.to_string()))?;
    let cols = stmt
        .query_map([], |r| r.get::<_, String>(1))
        .and_then(|rows| rows.collect())
        .map_err(|e| Error::input(path, &place, e.to_string()));
    cols
}

/// Reads `cols` from info table `base` of `set`; a column the table lacks reads as NULL,
/// an absent table as no rows.
fn read_info<T>(
    conn: &Connection,
    path: &Path,
    set: &TableSet,
    base: &str,
    cols: &[&str],
    mut f: impl FnMut(&Fields<'_, '_>) -> Result<T, String>,
) -> Result<Vec<T>> {
    if set.table(base).is_none() {
        return Ok(Vec::new());
    }
    let full = format!("{base}{}", set.suffix);
    let present = table_columns(conn, path, &full)?;
    let list: Vec<String> = cols
        .iter()
        .map(|c| {
            if present.iter().any(|p| p.eq_ignore_ascii_case(c)) {
                quote_ident(c)
            } else {
                "NULL".to_string()
            }
        })
        .collect();
    let sql = format!(
        "SELECT {} FROM {} ORDER BY 1",
        list.join(", "),
        quote_ident(&full)
    );
    let place = format!("table {full}");
    let mut stmt = conn
        .prepare(&sql)
        .map_err(|e| Error::input(path, &place, e.to_string()))?;
    let mut rows = stmt
        .query([])
        .map_err(|e| Error::input(path, &place, e.to_string()))?;
    let mut out = Vec::new();
    while let Some(row) = rows
        .next()
        .map_err(|e| Error::input(path, &place, e.to_string()))?
    {
        let fields = Fields { row, cols };
        let id = fields.i64("id").ok().flatten().unwrap_or_default();
        out.push(f(&fields).map_err(|m| Error::input(path, format!("{place}, row id {id}"), m))?);
    }
    Ok(out)
}

struct Fields<'r, 's> {
    row: &'r Row<'s>,
    cols: &'r [&'r str],
}

impl Fields<'_, '_> {
    fn at(&self, name: &str) -> usize {
        self.cols
            .iter()
            .position(|c| *c == name)
            .expect("listed column")
    }
    fn i64(&self, name: &str) -> Result<Option<i64>, String> {
        let v = self.row.get_ref(self.at(name)).map_err(|e| e.to_string())?;
        to_i64(v).map_err(|m| format!("column {name}: {m}"))
    }
    fn req(&self, name: &str) -> Result<i64, String> {
        self.i64(name)?
            .ok_or_else(|| format!("column {name} is NULL"))
    }
    fn text(&self, name: &str) -> Result<Option<String>, String> {
        let v = self.row.get_ref(self.at(name)).map_err(|e| e.to_string())?;
        Ok(to_text(v))
    }
}

/// The set's process and thread row ids with their OS ids (a NULL OS id reads as the
/// row id, as the catalog reads it).
pub(crate) fn read_ids(conn: &Connection, path: &Path, set: &TableSet) -> Result<Ids> {
    let pairs = |base: &str, os: &'static str| {
        read_info(conn, path, set, base, &["id", os], |f| {
            let id = f.req("id")?;
            Ok((id, f.i64(os)?.unwrap_or(id)))
        })
    };
    Ok(Ids::new(
        pairs("rocpd_info_process", "pid")?,
        pairs("rocpd_info_thread", "tid")?,
    ))
}

/// Reads every info table of `set` into `cat` as source `source`; every `pid` reference
/// is resolved to the process's OS pid (see [`crate::ids`]).
pub(crate) fn read_set(
    conn: &Connection,
    path: &Path,
    set: &TableSet,
    source: u32,
    cat: &mut Catalog,
) -> Result<()> {
    // Read into a catalog of the set's own, so the references resolve over its records
    // only, then append.
    let mut own = Catalog::default();
    read_records(conn, path, set, source, &mut own)?;
    let ids = Ids::new(
        own.processes.iter().map(|p| (p.id, p.pid)),
        own.threads.iter().map(|t| (t.id, t.tid)),
    );
    if !ids.is_identity() {
        let resolve = |pid: &mut Option<i64>| *pid = pid.map(|p| ids.pid(p));
        for t in &mut own.threads {
            t.pid = ids.pid(t.pid);
        }
        own.agents.iter_mut().for_each(|x| resolve(&mut x.pid));
        own.queues
            .iter_mut()
            .chain(&mut own.streams)
            .for_each(|x| resolve(&mut x.pid));
        own.kernel_symbols
            .iter_mut()
            .for_each(|x| resolve(&mut x.pid));
        own.code_objects
            .iter_mut()
            .for_each(|x| resolve(&mut x.pid));
        own.pmcs.iter_mut().for_each(|x| resolve(&mut x.pid));
    }
    cat.extend(own);
    Ok(())
}

/// The info tables' records as stored (references unresolved).
fn read_records(
    conn: &Connection,
    path: &Path,
    set: &TableSet,
    source: u32,
    cat: &mut Catalog,
) -> Result<()> {
    cat.nodes.extend(read_info(
        conn,
        path,
        set,
        "rocpd_info_node",
        &[
            "id",
            "hash",
            "machine_id",
            "system_name",
            "hostname",
            "release",
            "version",
            "hardware_name",
            "domain_name",
        ],
        |f| {
            Ok(Node {
                source,
                id: f.req("id")?,
                hash: f.i64("hash")?,
                machine_id: f.text("machine_id")?,
                hostname: f.text("hostname")?,
                system_name: f.text("system_name")?,
                release: f.text("release")?,
                version: f.text("version")?,
                hardware_name: f.text("hardware_name")?,
                domain_name: f.text("domain_name")?,
            })
        },
    )?);
    cat.processes.extend(read_info(
        conn,
        path,
        set,
        "rocpd_info_process",
        &[
            "id",
            "nid",
            "ppid",
            "pid",
            "init",
            "fini",
            "start",
            "end",
            "command",
            "environment",
            "extdata",
        ],
        |f| {
            let id = f.req("id")?;
            Ok(Process {
                source,
                id,
                nid: f.i64("nid")?.unwrap_or_default(),
                ppid: f.i64("ppid")?,
                pid: f.i64("pid")?.unwrap_or(id),
                init: f.i64("init")?,
                fini: f.i64("fini")?,
                start: f.i64("start")?,
                end: f.i64("end")?,
                command: f.text("command")?,
                environment: f.text("environment")?,
                extdata: f.text("extdata")?,
            })
        },
    )?);
    cat.threads.extend(read_info(
        conn,
        path,
        set,
        "rocpd_info_thread",
        &[
            "id", "nid", "ppid", "pid", "tid", "name", "start", "end", "extdata",
        ],
        |f| {
            let id = f.req("id")?;
            Ok(Thread {
                source,
                id,
                nid: f.i64("nid")?.unwrap_or_default(),
                ppid: f.i64("ppid")?,
                pid: f.req("pid")?,
                tid: f.i64("tid")?.unwrap_or(id),
                name: f.text("name")?,
                start: f.i64("start")?,
                end: f.i64("end")?,
                extdata: f.text("extdata")?,
            })
        },
    )?);
    cat.agents.extend(read_info(
        conn,
        path,
        set,
        "rocpd_info_agent",
        &[
            "id",
            "nid",
            "pid",
            "type",
            "absolute_index",
            "logical_index",
            "type_index",
            "uuid",
            "name",
            "model_name",
            "vendor_name",
            "product_name",
            "user_name",
            "extdata",
        ],
        |f| {
            Ok(Agent {
                source,
                id: f.req("id")?,
                nid: f.i64("nid")?.unwrap_or_default(),
                pid: f.i64("pid")?,
                agent_type: f.text("type")?.unwrap_or_else(|| "UNK".into()),
                absolute_index: f.i64("absolute_index")?,
                logical_index: f.i64("logical_index")?,
                type_index: f.i64("type_index")?,
                uuid: f.i64("uuid").unwrap_or(None),
                name: f.text("name")?,
                model_name: f.text("model_name")?,
                vendor_name: f.text("vendor_name")?,
                product_name: f.text("product_name")?,
                user_name: f.text("user_name")?,
                extdata: f.text("extdata")?,
            })
        },
    )?);
    for (base, dest) in [
        ("rocpd_info_queue", &mut cat.queues),
        ("rocpd_info_stream", &mut cat.streams),
    ] {
        dest.extend(read_info(
            conn,
            path,
            set,
            base,
            &["id", "nid", "pid", "name", "extdata"],
            |f| {
                Ok(Queue {
                    source,
                    id: f.req("id")?,
                    nid: f.i64("nid")?.unwrap_or_default(),
                    pid: f.i64("pid")?,
                    name: f.text("name")?,
                    extdata: f.text("extdata")?,
                })
            },
        )?);
    }
    cat.kernel_symbols.extend(read_info(
        conn,
        path,
        set,
        "rocpd_info_kernel_symbol",
        &[
            "id",
            "nid",
            "pid",
            "code_object_id",
            "kernel_name",
            "display_name",
            "kernel_object",
            "kernarg_segment_size",
            "kernarg_segment_alignment",
            "group_segment_size",
            "private_segment_size",
            "sgpr_count",
            "arch_vgpr_count",
            "accum_vgpr_count",
            "extdata",
        ],
        |f| {
            Ok(KernelSymbol {
                source,
                id: f.req("id")?,
                nid: f.i64("nid")?.unwrap_or_default(),
                pid: f.i64("pid")?,
                code_object_id: f.i64("code_object_id")?,
                kernel_name: f.text("kernel_name")?.map(Into::into),
                display_name: f.text("display_name")?.map(Into::into),
                kernel_object: f.i64("kernel_object")?,
                kernarg_segment_size: f.i64("kernarg_segment_size")?,
                kernarg_segment_alignment: f.i64("kernarg_segment_alignment")?,
                group_segment_size: f.i64("group_segment_size")?,
                private_segment_size: f.i64("private_segment_size")?,
                sgpr_count: f.i64("sgpr_count")?,
                arch_vgpr_count: f.i64("arch_vgpr_count")?,
                accum_vgpr_count: f.i64("accum_vgpr_count")?,
                extdata: f.text("extdata")?.map(Into::into),
            })
        },
    )?);
    cat.code_objects.extend(read_info(
        conn,
        path,
        set,
        "rocpd_info_code_object",
        &[
            "id",
            "nid",
            "pid",
            "agent_id",
            "uri",
            "load_base",
            "load_size",
            "load_delta",
            "storage_type",
            "extdata",
        ],
        |f| {
            Ok(CodeObject {
                source,
                id: f.req("id")?,
                nid: f.i64("nid")?.unwrap_or_default(),
                pid: f.i64("pid")?,
                agent_id: f.i64("agent_id")?,
                uri: f.text("uri")?,
                load_base: f.i64("load_base")?,
                load_size: f.i64("load_size")?,
                load_delta: f.i64("load_delta")?,
                storage_type: f.text("storage_type")?,
                extdata: f.text("extdata")?,
            })
        },
    )?);
    cat.pmcs.extend(read_info(
        conn,
        path,
        set,
        "rocpd_info_pmc",
        &[
            "id",
            "nid",
            "pid",
            "agent_id",
            "target_arch",
            "event_code",
            "instance_id",
            "name",
            "symbol",
            "description",
            "long_description",
            "component",
            "units",
            "value_type",
            "block",
            "expression",
            "is_constant",
            "is_derived",
            "extdata",
        ],
        |f| {
            Ok(Pmc {
                source,
                id: f.req("id")?,
                nid: f.i64("nid")?.unwrap_or_default(),
                pid: f.i64("pid")?,
                agent_id: f.i64("agent_id")?,
                target_arch: f.text("target_arch")?,
                event_code: f.i64("event_code")?,
                instance_id: f.i64("instance_id")?,
                name: f.text("name")?.unwrap_or_default(),
                symbol: f.text("symbol")?,
                description: f.text("description")?,
                long_description: f.text("long_description")?,
                component: f.text("component")?,
                units: f.text("units")?,
                value_type: f.text("value_type")?,
                block: f.text("block")?,
                expression: f.text("expression")?,
                is_constant: f.i64("is_constant")?,
                is_derived: f.i64("is_derived")?,
                extdata: f.text("extdata")?,
            })
        },
    )?);
    Ok(())
}
