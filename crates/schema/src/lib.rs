//! The RocPD schema version 3 on-disk layout: the SQLite tables that rocprofv3
//! writes, one set per profiled process.
//!
//! This crate owns the *shape* of a RocPD v3 database and nothing else: the
//! table base names in dependency order, their columns (order, declared type,
//! constraints, foreign keys), the uuid table-name suffix convention, the DDL
//! for the suffixed tables and the un-suffixed `rocpd_<name>` views, and the
//! three `rocpd_metadata` rows. It does no I/O and has no dependencies.
//!
//! The DDL is written from the documented column lists (the RocPD README
//! table reference and our notes in `docs/notes/rocpd-reference.md` §3), not
//! copied from AMD's schema files.
//!
//! Conventions (facts about files written by rocprofv3):
//! * every process database has a `guid` (a UUIDv7 string with dashes);
//! * every table is named `<base><suffix>` where the suffix is `_` + the guid
//!   with `-` replaced by `_` (see [`uuid_suffix`]);
//! * every table except `rocpd_metadata` has a `guid` column defaulting to the
//!   database's guid, so that joins over merged databases use `(id, guid)`;
//! * `JSONB` columns hold JSON *text* and default to `'{}'`;
//! * `rocpd_metadata` holds `schema_version`, `uuid` and `guid` tags.

#![warn(missing_docs)]

/// The schema version this crate describes (`rocpd_metadata.schema_version`).
pub const SCHEMA_VERSION: &str = "3";

/// The 20 table base names, in dependency order (a table only references
/// tables listed before it).
pub const TABLES: &[&str] = &[
    "rocpd_metadata",
    "rocpd_string",
    "rocpd_info_node",
    "rocpd_info_process",
    "rocpd_info_thread",
    "rocpd_info_agent",
    "rocpd_info_queue",
    "rocpd_info_stream",
    "rocpd_info_pmc",
    "rocpd_info_code_object",
    "rocpd_info_kernel_symbol",
    "rocpd_track",
    "rocpd_event",
    "rocpd_arg",
    "rocpd_pmc_event",
    "rocpd_region",
    "rocpd_sample",
    "rocpd_kernel_dispatch",
    "rocpd_memory_copy",
    "rocpd_memory_allocate",
];

/// One column of a table: its name and the rest of its declaration (type and
/// column constraints), as it appears after the quoted name in the DDL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// Column name (unquoted).
    pub name: &'static str,
    /// Declared type plus column constraints, e.g. `TEXT NOT NULL`.
    pub decl: &'static str,
}

/// A foreign key from `column` to the `id` of table `references` (a base
/// name; the same uuid suffix applies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignKey {
    /// Referencing column in this table.
    pub column: &'static str,
    /// Referenced table base name; the referenced column is always `id`.
    pub references: &'static str,
}

/// The definition of one RocPD table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table {
    /// Base name, e.g. `rocpd_region`.
    pub name: &'static str,
    /// Whether the table has the `guid` column (all but `rocpd_metadata`).
    pub has_guid: bool,
    /// Columns after `id` (and `guid` when present), in order.
    pub columns: &'static [Column],
    /// Foreign keys, in declaration order.
    pub foreign_keys: &'static [ForeignKey],
}

impl Table {
    /// All column names in table order, including `id` and `guid`.
    pub fn column_names(&self) -> Vec<&'static str> {
        let mut v = vec!["id"];
        if self.has_guid {
            v.push("guid");
        }
        v.extend(self.columns.iter().map(|c| c.name));
        v
    }
}

const fn c(name: &'static str, decl: &'static str) -> Column {
    Column { name, decl }
}

const fn fk(column: &'static str, references: &'static str) -> ForeignKey {
    ForeignKey { column, references }
}

const JSONB: &str = "JSONB DEFAULT '{}'";

/// All table definitions, in the order of [`TABLES`].
pub const TABLE_DEFS: &[Table] = &[
    Table {
        name: "rocpd_metadata",
        has_guid: false,
        columns: &[c("tag", "TEXT NOT NULL"), c("value", "TEXT NOT NULL")],
        foreign_keys: &[],
    },
    Table {
        name: "rocpd_string",
        has_guid: true,
        columns: &[c("string", "TEXT NOT NULL UNIQUE ON CONFLICT ABORT")],
        foreign_keys: &[],
    },
    Table {
        name: "rocpd_info_node",
        has_guid: true,
        columns: &[
            c("hash", "BIGINT NOT NULL UNIQUE"),
            c("machine_id", "TEXT NOT NULL UNIQUE"),
            c("system_name", "TEXT"),
            c("hostname", "TEXT"),
            c("release", "TEXT"),
            c("version", "TEXT"),
            c("hardware_name", "TEXT"),
            c("domain_name", "TEXT"),
        ],
        foreign_keys: &[],
    },
    Table {
        name: "rocpd_info_process",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER NOT NULL"),
            c("ppid", "INTEGER"),
            c("pid", "INTEGER NOT NULL"),
            c("init", "BIGINT"),
            c("fini", "BIGINT"),
            c("start", "BIGINT"),
            c("end", "BIGINT"),
            c("command", "TEXT"),
            c("environment", JSONB),
            c("extdata", JSONB),
        ],
        foreign_keys: &[fk("nid", "rocpd_info_node")],
    },
    Table {
        name: "rocpd_info_thread",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER NOT NULL"),
            c("ppid", "INTEGER"),
            c("pid", "INTEGER NOT NULL"),
            c("tid", "INTEGER NOT NULL"),
            c("name", "TEXT"),
            c("start", "BIGINT"),
            c("end", "BIGINT"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[
            fk("nid", "rocpd_info_node"),
            fk("pid", "rocpd_info_process"),
        ],
    },
    Table {
        name: "rocpd_info_agent",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER NOT NULL"),
            c("pid", "INTEGER NOT NULL"),
            c("type", "TEXT CHECK (\"type\" IN ('CPU', 'GPU'))"),
            c("absolute_index", "INTEGER"),
            c("logical_index", "INTEGER"),
            c("type_index", "INTEGER"),
            c("uuid", "INTEGER"),
            c("name", "TEXT"),
            c("model_name", "TEXT"),
            c("vendor_name", "TEXT"),
            c("product_name", "TEXT"),
            c("user_name", "TEXT"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[],
    },
    Table {
        name: "rocpd_info_queue",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER"),
            c("pid", "INTEGER"),
            c("name", "TEXT"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[],
    },
    Table {
        name: "rocpd_info_stream",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER"),
            c("pid", "INTEGER"),
            c("name", "TEXT"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[],
    },
    Table {
        name: "rocpd_info_pmc",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER"),
            c("pid", "INTEGER"),
            c("agent_id", "INTEGER"),
            c(
                "target_arch",
                "TEXT CHECK (\"target_arch\" IN ('CPU', 'GPU'))",
            ),
            c("event_code", "INTEGER"),
            c("instance_id", "INTEGER"),
            c("name", "TEXT NOT NULL"),
            c("symbol", "TEXT NOT NULL"),
            c("description", "TEXT"),
            c("long_description", "TEXT DEFAULT ''"),
            c("component", "TEXT"),
            c("units", "TEXT DEFAULT ''"),
            c(
                "value_type",
                "TEXT CHECK (\"value_type\" IN ('ABS', 'ACCUM', 'RELATIVE'))",
            ),
            c("block", "TEXT"),
            c("expression", "TEXT"),
            c("is_constant", "INTEGER"),
            c("is_derived", "INTEGER"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[fk("agent_id", "rocpd_info_agent")],
    },
    Table {
        name: "rocpd_info_code_object",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER"),
            c("pid", "INTEGER"),
            c("agent_id", "INTEGER"),
            c("uri", "TEXT"),
            c("load_base", "BIGINT"),
            c("load_size", "BIGINT"),
            c("load_delta", "BIGINT"),
            c(
                "storage_type",
                "TEXT CHECK (\"storage_type\" IN ('FILE', 'MEMORY'))",
            ),
            c("extdata", JSONB),
        ],
        foreign_keys: &[],
    },
    Table {
        name: "rocpd_info_kernel_symbol",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER"),
            c("pid", "INTEGER"),
            c("code_object_id", "INTEGER NOT NULL"),
            c("kernel_name", "TEXT"),
            c("display_name", "TEXT"),
            c("kernel_object", "INTEGER"),
            c("kernarg_segment_size", "INTEGER"),
            c("kernarg_segment_alignment", "INTEGER"),
            c("group_segment_size", "INTEGER"),
            c("private_segment_size", "INTEGER"),
            c("sgpr_count", "INTEGER"),
            c("arch_vgpr_count", "INTEGER"),
            c("accum_vgpr_count", "INTEGER"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[fk("code_object_id", "rocpd_info_code_object")],
    },
    Table {
        name: "rocpd_track",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER NOT NULL"),
            c("pid", "INTEGER"),
            c("tid", "INTEGER"),
            c("name_id", "INTEGER"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[fk("name_id", "rocpd_string")],
    },
    Table {
        name: "rocpd_event",
        has_guid: true,
        columns: &[
            c("category_id", "INTEGER"),
            c("stack_id", "INTEGER"),
            c("parent_stack_id", "INTEGER"),
            c("correlation_id", "INTEGER"),
            c("call_stack", JSONB),
            c("line_info", JSONB),
            c("extdata", JSONB),
        ],
        foreign_keys: &[fk("category_id", "rocpd_string")],
    },
    Table {
        name: "rocpd_arg",
        has_guid: true,
        columns: &[
            c("event_id", "INTEGER NOT NULL"),
            c("position", "INTEGER NOT NULL"),
            c("type", "TEXT NOT NULL"),
            c("name", "TEXT NOT NULL"),
            c("value", "TEXT"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[fk("event_id", "rocpd_event")],
    },
    Table {
        name: "rocpd_pmc_event",
        has_guid: true,
        columns: &[
            c("event_id", "INTEGER"),
            c("pmc_id", "INTEGER NOT NULL"),
            c("value", "REAL DEFAULT 0.0"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[
            fk("pmc_id", "rocpd_info_pmc"),
            fk("event_id", "rocpd_event"),
        ],
    },
    Table {
        name: "rocpd_region",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER"),
            c("pid", "INTEGER"),
            c("tid", "INTEGER NOT NULL"),
            c("start", "BIGINT NOT NULL"),
            c("end", "BIGINT NOT NULL"),
            c("name_id", "INTEGER NOT NULL"),
            c("event_id", "INTEGER"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[],
    },
    Table {
        name: "rocpd_sample",
        has_guid: true,
        columns: &[
            c("track_id", "INTEGER NOT NULL"),
            c("timestamp", "BIGINT NOT NULL"),
            c("event_id", "INTEGER"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[fk("track_id", "rocpd_track"), fk("event_id", "rocpd_event")],
    },
    Table {
        name: "rocpd_kernel_dispatch",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER"),
            c("pid", "INTEGER"),
            c("tid", "INTEGER"),
            c("agent_id", "INTEGER NOT NULL"),
            c("kernel_id", "INTEGER NOT NULL"),
            c("dispatch_id", "INTEGER NOT NULL"),
            c("queue_id", "INTEGER NOT NULL"),
            c("stream_id", "INTEGER NOT NULL"),
            c("start", "BIGINT NOT NULL"),
            c("end", "BIGINT NOT NULL"),
            c("private_segment_size", "INTEGER"),
            c("group_segment_size", "INTEGER"),
            c("workgroup_size_x", "INTEGER NOT NULL"),
            c("workgroup_size_y", "INTEGER NOT NULL"),
            c("workgroup_size_z", "INTEGER NOT NULL"),
            c("grid_size_x", "INTEGER NOT NULL"),
            c("grid_size_y", "INTEGER NOT NULL"),
            c("grid_size_z", "INTEGER NOT NULL"),
            c("region_name_id", "INTEGER"),
            c("event_id", "INTEGER"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[
            fk("agent_id", "rocpd_info_agent"),
            fk("kernel_id", "rocpd_info_kernel_symbol"),
            fk("queue_id", "rocpd_info_queue"),
            fk("stream_id", "rocpd_info_stream"),
            fk("region_name_id", "rocpd_string"),
            fk("event_id", "rocpd_event"),
        ],
    },
    Table {
        name: "rocpd_memory_copy",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER"),
            c("pid", "INTEGER"),
            c("tid", "INTEGER"),
            c("start", "BIGINT NOT NULL"),
            c("end", "BIGINT NOT NULL"),
            c("name_id", "INTEGER NOT NULL"),
            c("dst_agent_id", "INTEGER"),
            c("dst_address", "INTEGER"),
            c("src_agent_id", "INTEGER"),
            c("src_address", "INTEGER"),
            c("size", "INTEGER NOT NULL"),
            c("queue_id", "INTEGER"),
            c("stream_id", "INTEGER"),
            c("region_name_id", "INTEGER"),
            c("event_id", "INTEGER"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[],
    },
    Table {
        name: "rocpd_memory_allocate",
        has_guid: true,
        columns: &[
            c("nid", "INTEGER"),
            c("pid", "INTEGER"),
            c("tid", "INTEGER"),
            c("agent_id", "INTEGER"),
            c(
                "type",
                "TEXT CHECK (\"type\" IN ('ALLOC', 'FREE', 'REALLOC', 'RECLAIM'))",
            ),
            c(
                "level",
                "TEXT CHECK (\"level\" IN ('REAL', 'VIRTUAL', 'SCRATCH'))",
            ),
            c("start", "BIGINT NOT NULL"),
            c("end", "BIGINT NOT NULL"),
            c("address", "INTEGER"),
            c("size", "INTEGER NOT NULL"),
            c("queue_id", "INTEGER"),
            c("stream_id", "INTEGER"),
            c("event_id", "INTEGER"),
            c("extdata", JSONB),
        ],
        foreign_keys: &[],
    },
];

/// The definition of the table with base name `base`, if it is one of
/// [`TABLES`].
pub fn table_def(base: &str) -> Option<&'static Table> {
    TABLE_DEFS.iter().find(|t| t.name == base)
}

/// The table-name suffix for a database guid: `_` + guid with `-` replaced
/// by `_` (`0197c1a2-…` → `_0197c1a2_…`). A guid that already starts with
/// `_` is not prefixed again. This is also the `uuid` metadata value.
pub fn uuid_suffix(guid: &str) -> String {
    let body = guid.replace('-', "_");
    if body.starts_with('_') {
        body
    } else {
        format!("_{body}")
    }
}

/// The on-disk name of table `base` in the database with this guid:
/// `format!("{base}{suffix}")`.
pub fn table_name(base: &str, guid: &str) -> String {
    format!("{base}{}", uuid_suffix(guid))
}

/// The columns of table `base` a writer fills: every column but `guid` (which defaults to
/// the database's guid), in table order. Empty for an unknown table.
pub fn data_columns(base: &str) -> Vec<&'static str> {
    table_def(base)
        .map(|t| {
            t.column_names()
                .into_iter()
                .filter(|c| *c != "guid")
                .collect()
        })
        .unwrap_or_default()
}

/// Quote an SQL identifier with double quotes.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Quote an SQL string literal with single quotes.
fn quote_literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// The `CREATE TABLE` statement of one table for this guid.
pub fn create_table_sql(table: &Table, guid: &str) -> String {
    let suffix = uuid_suffix(guid);
    let mut lines = vec![format!(
        "    {} INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT",
        quote_ident("id")
    )];
    if table.has_guid {
        lines.push(format!(
            "    {} TEXT DEFAULT {} NOT NULL",
            quote_ident("guid"),
            quote_literal(guid)
        ));
    }
    for col in table.columns {
        lines.push(format!("    {} {}", quote_ident(col.name), col.decl));
    }
    for key in table.foreign_keys {
        lines.push(format!(
            "    FOREIGN KEY ({}) REFERENCES {} ({})",
            quote_ident(key.column),
            quote_ident(&format!("{}{suffix}", key.references)),
            quote_ident("id")
        ));
    }
    format!(
        "CREATE TABLE IF NOT EXISTS {} (\n{}\n);\n",
        quote_ident(&format!("{}{suffix}", table.name)),
        lines.join(",\n")
    )
}

/// `CREATE TABLE` statements for all 20 tables with the uuid suffix of
/// `guid`, in dependency order. Foreign keys are declared; enforcing them is
/// up to the connection (`PRAGMA foreign_keys = ON`).
pub fn create_tables_sql(guid: &str) -> String {
    TABLE_DEFS
        .iter()
        .map(|t| create_table_sql(t, guid))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `CREATE VIEW rocpd_<name> AS SELECT * FROM rocpd_<name><suffix>` for each
/// table: the un-suffixed names tools query inside a single database.
pub fn create_views_sql(guid: &str) -> String {
    let suffix = uuid_suffix(guid);
    TABLES
        .iter()
        .map(|base| {
            format!(
                "CREATE VIEW IF NOT EXISTS {} AS SELECT * FROM {};\n",
                quote_ident(base),
                quote_ident(&format!("{base}{suffix}"))
            )
        })
        .collect()
}

/// The three `rocpd_metadata` rows (tag, value) of a database with this guid:
/// `schema_version` = [`SCHEMA_VERSION`], `uuid` = [`uuid_suffix`], `guid`.
pub fn metadata_rows(guid: &str) -> [(&'static str, String); 3] {
    [
        ("schema_version", SCHEMA_VERSION.to_string()),
        ("uuid", uuid_suffix(guid)),
        ("guid", guid.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    const GUID: &str = "0197c1a2-3b4c-7d5e-8f60-0123456789ab";

    /// The documented column lists (RocPD README / rocpd-reference §3.2),
    /// written out independently of `TABLE_DEFS`.
    const DOCUMENTED: &[(&str, &[&str])] = &[
        ("rocpd_metadata", &["id", "tag", "value"]),
        ("rocpd_string", &["id", "guid", "string"]),
        (
            "rocpd_info_node",
            &[
                "id",
                "guid",
                "hash",
                "machine_id",
                "system_name",
                "hostname",
                "release",
                "version",
                "hardware_name",
                "domain_name",
            ],
        ),
        (
            "rocpd_info_process",
            &[
                "id",
                "guid",
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
        ),
        (
            "rocpd_info_thread",
            &[
                "id", "guid", "nid", "ppid", "pid", "tid", "name", "start", "end", "extdata",
            ],
        ),
        (
            "rocpd_info_agent",
            &[
                "id",
                "guid",
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
        ),
        (
            "rocpd_info_queue",
            &["id", "guid", "nid", "pid", "name", "extdata"],
        ),
        (
            "rocpd_info_stream",
            &["id", "guid", "nid", "pid", "name", "extdata"],
        ),
        (
            "rocpd_info_pmc",
            &[
                "id",
                "guid",
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
        ),
        (
            "rocpd_info_code_object",
            &[
                "id",
                "guid",
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
        ),
        (
            "rocpd_info_kernel_symbol",
            &[
                "id",
                "guid",
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
        ),
        (
            "rocpd_track",
            &["id", "guid", "nid", "pid", "tid", "name_id", "extdata"],
        ),
        (
            "rocpd_event",
            &[
                "id",
                "guid",
                "category_id",
                "stack_id",
                "parent_stack_id",
                "correlation_id",
                "call_stack",
                "line_info",
                "extdata",
            ],
        ),
        (
            "rocpd_arg",
            &[
                "id", "guid", "event_id", "position", "type", "name", "value", "extdata",
            ],
        ),
        (
            "rocpd_pmc_event",
            &["id", "guid", "event_id", "pmc_id", "value", "extdata"],
        ),
        (
            "rocpd_region",
            &[
                "id", "guid", "nid", "pid", "tid", "start", "end", "name_id", "event_id", "extdata",
            ],
        ),
        (
            "rocpd_sample",
            &["id", "guid", "track_id", "timestamp", "event_id", "extdata"],
        ),
        (
            "rocpd_kernel_dispatch",
            &[
                "id",
                "guid",
                "nid",
                "pid",
                "tid",
                "agent_id",
                "kernel_id",
                "dispatch_id",
                "queue_id",
                "stream_id",
                "start",
                "end",
                "private_segment_size",
                "group_segment_size",
                "workgroup_size_x",
                "workgroup_size_y",
                "workgroup_size_z",
                "grid_size_x",
                "grid_size_y",
                "grid_size_z",
                "region_name_id",
                "event_id",
                "extdata",
            ],
        ),
        (
            "rocpd_memory_copy",
            &[
                "id",
                "guid",
                "nid",
                "pid",
                "tid",
                "start",
                "end",
                "name_id",
                "dst_agent_id",
                "dst_address",
                "src_agent_id",
                "src_address",
                "size",
                "queue_id",
                "stream_id",
                "region_name_id",
                "event_id",
                "extdata",
            ],
        ),
        (
            "rocpd_memory_allocate",
            &[
                "id",
                "guid",
                "nid",
                "pid",
                "tid",
                "agent_id",
                "type",
                "level",
                "start",
                "end",
                "address",
                "size",
                "queue_id",
                "stream_id",
                "event_id",
                "extdata",
            ],
        ),
    ];

    fn db() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("PRAGMA foreign_keys = ON;").unwrap();
        conn.execute_batch(&create_tables_sql(GUID)).unwrap();
        conn.execute_batch(&create_views_sql(GUID)).unwrap();
        conn
    }

    fn table_info(conn: &Connection, table: &str) -> Vec<(String, String, bool)> {
        let mut stmt = conn
            .prepare(&format!("PRAGMA table_info(\"{table}\")"))
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(1)?, r.get(2)?, r.get::<_, bool>(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn suffix_and_names() {
        assert_eq!(
            uuid_suffix(GUID),
            "_0197c1a2_3b4c_7d5e_8f60_0123456789ab".to_string()
        );
        assert_eq!(uuid_suffix("_ab_cd"), "_ab_cd");
        assert_eq!(
            table_name("rocpd_region", GUID),
            "rocpd_region_0197c1a2_3b4c_7d5e_8f60_0123456789ab"
        );
        let rows = metadata_rows(GUID);
        assert_eq!(rows[0], ("schema_version", "3".to_string()));
        assert_eq!(rows[1], ("uuid", uuid_suffix(GUID)));
        assert_eq!(rows[2], ("guid", GUID.to_string()));
    }

    #[test]
    fn tables_and_defs_agree() {
        assert_eq!(TABLES.len(), 20);
        let names: Vec<_> = TABLE_DEFS.iter().map(|t| t.name).collect();
        assert_eq!(names, TABLES);
        // Dependency order: every foreign key points to an earlier table.
        for (i, t) in TABLE_DEFS.iter().enumerate() {
            for key in t.foreign_keys {
                let j = TABLES.iter().position(|n| *n == key.references).unwrap();
                assert!(
                    j < i,
                    "{} references later table {}",
                    t.name,
                    key.references
                );
                assert!(t.columns.iter().any(|c| c.name == key.column));
            }
        }
    }

    #[test]
    fn ddl_matches_documented_columns() {
        let conn = db();
        assert_eq!(DOCUMENTED.len(), TABLES.len());
        for (base, cols) in DOCUMENTED {
            let info = table_info(&conn, &table_name(base, GUID));
            let names: Vec<_> = info.iter().map(|(n, _, _)| n.as_str()).collect();
            assert_eq!(&names, cols, "columns of {base}");
            assert_eq!(table_def(base).unwrap().column_names(), *cols);
            // The view exposes the same columns.
            let view: Vec<_> = table_info(&conn, base).into_iter().map(|c| c.0).collect();
            assert_eq!(&view, cols, "columns of view {base}");
            // id first, guid second with a NOT NULL default.
            assert_eq!(info[0].1, "INTEGER");
            if base != &"rocpd_metadata" {
                assert_eq!(info[1], ("guid".to_string(), "TEXT".to_string(), true));
            }
        }
    }

    #[test]
    fn defaults_checks_and_uniques() {
        let conn = db();
        let t = |b: &str| table_name(b, GUID);
        conn.execute(
            &format!("INSERT INTO \"{}\" (string) VALUES ('')", t("rocpd_string")),
            [],
        )
        .unwrap();
        let guid: String = conn
            .query_row("SELECT guid FROM rocpd_string", [], |r| r.get(0))
            .unwrap();
        assert_eq!(guid, GUID);
        // UNIQUE string.
        assert!(conn
            .execute(
                &format!("INSERT INTO \"{}\" (string) VALUES ('')", t("rocpd_string")),
                [],
            )
            .is_err());
        // JSONB default.
        conn.execute(
            &format!(
                "INSERT INTO \"{}\" (category_id) VALUES (1)",
                t("rocpd_event")
            ),
            [],
        )
        .unwrap();
        let ext: String = conn
            .query_row("SELECT extdata FROM rocpd_event", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ext, "{}");
        // CHECK constraints.
        let agent = t("rocpd_info_agent");
        assert!(conn
            .execute(
                &format!("INSERT INTO \"{agent}\" (nid, pid, type) VALUES (1, 1, 'GPU')"),
                []
            )
            .is_ok());
        assert!(conn
            .execute(
                &format!("INSERT INTO \"{agent}\" (nid, pid, type) VALUES (1, 1, 'DSP')"),
                []
            )
            .is_err());
        let alloc = t("rocpd_memory_allocate");
        assert!(conn
            .execute(
                &format!(
                    "INSERT INTO \"{alloc}\" (type, level, start, \"end\", size) \
                     VALUES ('ALLOC', 'SCRATCH', 1, 2, 3)"
                ),
                []
            )
            .is_ok());
        assert!(conn
            .execute(
                &format!(
                    "INSERT INTO \"{alloc}\" (type, level, start, \"end\", size) \
                     VALUES ('ALLOC', 'HUGE', 1, 2, 3)"
                ),
                []
            )
            .is_err());
        // Foreign keys are declared (and enforced with foreign_keys = ON).
        assert!(conn
            .execute(
                &format!(
                    "INSERT INTO \"{}\" (event_id, position, type, name) VALUES (999, 0, 't', 'n')",
                    t("rocpd_arg")
                ),
                []
            )
            .is_err());
        let fks: i64 = conn
            .query_row(
                &format!(
                    "SELECT COUNT(*) FROM pragma_foreign_key_list('{}')",
                    t("rocpd_kernel_dispatch")
                ),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(fks, 6);
    }
}
