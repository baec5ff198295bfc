//! Recognising RocPD v3 databases, and refusing everything else with a useful message.

use std::io::Read;
use std::path::Path;

use rocpd_model::{Error, Result};
use rusqlite::{Connection, OptionalExtension};

use crate::{quote_ident, TableSet};

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
const METADATA_PREFIX: &str = "rocpd_metadata_";

/// Whether the first bytes of a file are the SQLite header.
pub fn looks_like_sqlite(head: &[u8]) -> bool {
    head.len() >= 16 && &head[..16] == SQLITE_MAGIC
}

/// Checks the file exists, is SQLite, and is not shorter than its header says.
pub(crate) fn check_file(path: &Path) -> Result<()> {
    let err = |place: &str, msg: String| Error::input(path, place, msg);
    let mut f = rocpd_pipeline::open_regular(path)?;
    let len = f.metadata().map_err(|e| err("open", e.to_string()))?.len();
    let mut head = [0u8; 100];
    let n = read_up_to(&mut f, &mut head).map_err(|e| err("header", e.to_string()))?;
    let head = &head[..n];
    if !looks_like_sqlite(head) {
        let what = if head.starts_with(&[0x1f, 0x8b]) {
            "a gzip-compressed file (decompress it first)".to_string()
        } else if n == 0 {
            "an empty file".to_string()
        } else {
            format!(
                "a file starting with {:?}",
                String::from_utf8_lossy(&head[..n.min(16)])
            )
        };
        return Err(err(
            "byte 0",
            format!("not a SQLite database: expected the header \"SQLite format 3\", found {what}"),
        ));
    }
    if n < 100 {
        return Err(err(
            "header",
            format!("truncated SQLite header ({n} of 100 bytes)"),
        ));
    }
    // Header fields: page size at 16 (1 means 65536), change counter at 24, page count at
    // 28, valid only if "version-valid-for" at 92 equals the change counter.
    let be32 = |o: usize| u32::from_be_bytes([head[o], head[o + 1], head[o + 2], head[o + 3]]);
    let page_size = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65536u64,
        p => p as u64,
    };
    let pages = be32(28) as u64;
    if be32(92) == be32(24) && pages > 0 && len < page_size * pages {
        return Err(err(
            "header",
            format!(
                "truncated database: the header declares {pages} pages of {page_size} bytes \
                 ({} bytes) but the file has {len} bytes",
                pages * page_size
            ),
        ));
    }
    Ok(())
}

fn read_up_to(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Finds the RocPD v3 table sets, or explains what the database is instead.
pub(crate) fn table_sets(conn: &Connection, path: &Path) -> Result<Vec<TableSet>> {
    let sql_err = |place: &str, e: rusqlite::Error| Error::input(path, place, e.to_string());
    let mut names: Vec<String> = {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .map_err(|e| sql_err("schema", e))?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| sql_err("schema", e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| sql_err("schema", e))?
    };
    names.sort();
    let mut sets = Vec::new();
    for name in &names {
        let Some(rest) = name.strip_prefix(METADATA_PREFIX) else {
            continue;
        };
        if rest.is_empty() || !rest.chars().all(|c| c.is_ascii_hexdigit() || c == '_') {
            continue;
        }
        let suffix = format!("_{rest}");
        let place = format!("table {name}");
        let mut stmt = conn
            .prepare(&format!("SELECT tag, value FROM {}", quote_ident(name)))
            .map_err(|e| sql_err(&place, e))?;
        let tags: Vec<(String, String)> = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, value_text(r.get_ref(1)?)))
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| sql_err(&place, e))?;
        let tag = |k: &str| tags.iter().find(|(t, _)| t == k).map(|(_, v)| v.clone());
        let version = tag("schema_version").ok_or_else(|| {
            Error::input(path, &place, "no schema_version tag: not a RocPD database")
        })?;
        if version.trim() != rocpd_schema::SCHEMA_VERSION {
            return Err(Error::input(
                path,
                &place,
                format!(
                    "RocPD schema_version {version:?} is not supported (this tool reads schema version {})",
                    rocpd_schema::SCHEMA_VERSION
                ),
            ));
        }
        let tables = names
            .iter()
            .filter_map(|t| t.strip_suffix(suffix.as_str()))
            .filter(|base| base.starts_with("rocpd_"))
            .map(str::to_string)
            .collect();
        sets.push(TableSet {
            guid: tag("guid").unwrap_or_else(|| rest.replace('_', "-")),
            uuid: tag("uuid").unwrap_or_else(|| suffix.clone()),
            schema_version: version,
            suffix,
            tables,
        });
    }
    if sets.is_empty() {
        return Err(Error::input(path, "schema", describe_foreign(conn, &names)));
    }
    Ok(sets)
}

/// The event tables a stream sorts by SQLite's row id and looks rows up by it again.
const ROWID_TABLES: [&str; 6] = [
    "rocpd_region",
    "rocpd_kernel_dispatch",
    "rocpd_memory_copy",
    "rocpd_memory_allocate",
    "rocpd_sample",
    "rocpd_pmc_event",
];

/// The tables the streams join by `id`: each row that names an id is read once per row
/// with that id.
const JOINED_BY_ID: [&str; 5] = [
    "rocpd_string",
    "rocpd_event",
    "rocpd_info_kernel_symbol",
    "rocpd_info_pmc",
    "rocpd_track",
];

/// Refuses, naming the table, what the streams' SQL would read wrong without a word: an
/// event table without a usable row id (a `WITHOUT ROWID` table, or a column named
/// `rowid` that hides it, so that rows would be dropped or repeated), and a joined table
/// with an id given twice (its rows would be repeated). An `id` declared `INTEGER PRIMARY
/// KEY`, as in every RocPD file, is unique by construction; others are checked with one
/// grouping query.
pub(crate) fn check_table_shapes(conn: &Connection, path: &Path, sets: &[TableSet]) -> Result<()> {
    let sql_err = |place: &str, e: rusqlite::Error| Error::input(path, place, e.to_string());
    for set in sets {
        for base in ROWID_TABLES.iter().chain(&JOINED_BY_ID) {
            if set.table(base).is_none() {
                continue;
            }
            let name = format!("{base}{}", set.suffix);
            let place = format!("table {name}");
            let columns: Vec<(String, String, i64)> = conn
                .prepare("SELECT name, type, pk FROM pragma_table_info(?1)")
                .and_then(|mut st| {
                    st.query_map([&name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                        .collect()
                })
                .map_err(|e| sql_err(&place, e))?;
            if ROWID_TABLES.contains(base) {
                let without_rowid: bool = conn
                    .query_row(
                        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' \
                         AND name = ?1 AND sql LIKE '%WITHOUT%ROWID%')",
                        [&name],
                        |r| r.get(0),
                    )
                    .map_err(|e| sql_err(&place, e))?;
                if without_rowid || columns.iter().any(|c| c.0.eq_ignore_ascii_case("rowid")) {
                    return Err(Error::input(
                        path,
                        &place,
                        "a WITHOUT ROWID table, or a column named rowid: the events are read \
                         by SQLite's row id, which this table does not have or hides",
                    ));
                }
            }
            if JOINED_BY_ID.contains(base) {
                let pks = columns.iter().filter(|c| c.2 > 0).count();
                let integer_key = columns.iter().any(|(n, t, pk)| {
                    n.eq_ignore_ascii_case("id") && t.eq_ignore_ascii_case("INTEGER") && *pk == 1
                }) && pks == 1;
                if integer_key || !columns.iter().any(|c| c.0.eq_ignore_ascii_case("id")) {
                    continue;
                }
                let twice: Option<String> = conn
                    .query_row(
                        &format!(
                            "SELECT CAST(id AS TEXT) FROM {} WHERE id IS NOT NULL \
                             GROUP BY id HAVING COUNT(*) > 1 LIMIT 1",
                            quote_ident(&name)
                        ),
                        [],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(|e| sql_err(&place, e))?;
                if let Some(id) = twice {
                    return Err(Error::input(
                        path,
                        &place,
                        format!(
                            "id {id} is given more than once: every row that names it would \
                             be read once per copy (ids must be unique)"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn value_text(v: rusqlite::types::ValueRef<'_>) -> String {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => String::new(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
    }
}

/// Names what a SQLite file without RocPD v3 tables looks like.
fn describe_foreign(conn: &Connection, names: &[String]) -> String {
    let has = |t: &str| names.iter().any(|n| n.eq_ignore_ascii_case(t));
    let listed = {
        let mut l: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
        if names.len() > 8 {
            l.push("...");
        }
        if l.is_empty() {
            "no tables".to_string()
        } else {
            format!("tables {}", l.join(", "))
        }
    };
    if has("rocpd_api") || has("rocpd_op") {
        let version: Option<String> = if has("rocpd_metadata") {
            conn.query_row(
                "SELECT value FROM rocpd_metadata WHERE tag = 'schema_version'",
                [],
                |r| r.get::<_, String>(0),
            )
            .ok()
        } else {
            None
        };
        return format!(
            "this is a legacy rocmProfileData (.rpd) database (unsuffixed rocpd_api/rocpd_op tables, schema_version {}), not a RocPD schema-v3 database; convert it with the rocmProfileData tools ({listed})",
            version.as_deref().unwrap_or("unknown")
        );
    }
    if has("KERN") || (has("HIP") && has("OPS")) || has("COPY") {
        return format!(
            "this is a rocprof v1 results.db (HIP/OPS/KERN tables), not a RocPD schema-v3 database ({listed})"
        );
    }
    if names.iter().any(|n| n.starts_with("compute_")) {
        return format!(
            "this is a rocprof-compute analysis database, not a RocPD trace ({listed})"
        );
    }
    if names.iter().any(|n| n.starts_with("rocpd_metadata")) {
        return format!(
            "rocpd_metadata tables without a UUID suffix of the form rocpd_metadata_<uuid> ({listed}): not a RocPD schema-v3 database"
        );
    }
    format!(
        "a SQLite database without RocPD tables (no rocpd_metadata_<uuid> table; found {listed})"
    )
}
