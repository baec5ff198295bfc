//! SQL-level mutations of a seed database: values out of range or of the wrong type,
//! dangling ids, swapped times, deleted or duplicated rows, dropped, renamed or
//! duplicated tables and columns. They get past SQLite's own integrity checks, which
//! byte-level corruption rarely does, and so reach the reader's own logic.
//!
//! Every statement is deterministic (rows are chosen by `rowid % m = r`, never by
//! `random()`); statements that fail (a dropped table, a constraint) are skipped.

use std::path::Path;

use rusqlite::Connection;

use crate::rng::Rng;

/// One table of a seed database.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// Table name.
    pub name: String,
    /// Column names.
    pub columns: Vec<String>,
}

/// The tables, views and indexes of a seed database, read once when seeds are loaded.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// Tables (not `sqlite_*`).
    pub tables: Vec<TableInfo>,
    /// Views.
    pub views: Vec<String>,
    /// Indexes.
    pub indexes: Vec<String>,
}

fn q(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Reads the schema of `path`.
pub fn schema(path: &Path) -> rusqlite::Result<Schema> {
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut out = Schema::default();
    let mut stmt = conn.prepare(
        "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let rows: Vec<(String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (kind, name) in rows {
        match kind.as_str() {
            "table" => {
                let mut st = conn.prepare(&format!("PRAGMA table_info({})", q(&name)))?;
                let columns = st
                    .query_map([], |r| r.get::<_, String>(1))?
                    .collect::<rusqlite::Result<_>>()?;
                out.tables.push(TableInfo { name, columns });
            }
            "view" => out.views.push(name),
            "index" => out.indexes.push(name),
            _ => {}
        }
    }
    Ok(out)
}

/// Replacement values; `$C` stands for the column itself, `$T` for the table.
const VALUES: &[&str] = &[
    "NULL",
    "0",
    "-1",
    "1",
    "2",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "-1e308",
    "0.5",
    "-0.0",
    "''",
    "'x'",
    "'-1'",
    "'abc def'",
    "'99999999999999999999'",
    "x'00ff'",
    "zeroblob(16)",
    "'{}'",
    "'[]'",
    "'{'",
    "'null'",
    "'{\"message\":\"fuzz\"}'",
    "'{\"message\":5}'",
    "'{\"id\":{\"handle\":\"x\"}}'",
    "'{\"size\":-1,\"args\":[1,2]}'",
    "'MARKER_CORE_API'",
    "'KERNEL_DISPATCH'",
    "'MEMORY_COPY'",
    "'HIP_RUNTIME_API'",
    "'GPU'",
    "'CPU'",
    "replace(hex(zeroblob(3000)), '0', 'A')",
    "$C + 1",
    "$C - 1",
    "-$C",
    "$C * 1000000007",
    "$C + 9223372036854775000",
    "$C + 1000000",
    "CAST($C AS TEXT)",
    "CAST($C AS REAL) + 0.5",
    "$C || ''",
    "hex($C)",
    // Text that the readers take as a number but SQLite keeps as text (and sorts after
    // every number): a time stored so once made the merge spin (D143).
    "'0x' || printf('%x', $C)",
    "(SELECT MAX(rowid) FROM $T) + 1",
    "(SELECT MIN(rowid) FROM $T)",
];

/// Applies 1 to 4 random SQL edits to the database at `path`; returns a description.
pub fn mutate(rng: &mut Rng, path: &Path, schema: &Schema) -> Vec<String> {
    let mut done = Vec::new();
    let Ok(conn) = Connection::open(path) else {
        return done;
    };
    let _ = conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF;",
    );
    let n = rng.range(1, 4);
    for _ in 0..n {
        let Some(sql) = statement(rng, schema) else {
            continue;
        };
        if conn.execute_batch(&sql).is_ok() {
            done.push(sql);
        }
    }
    let _ = conn.close();
    done
}

fn rows_where(rng: &mut Rng) -> String {
    let m = *rng.pick(&[1u64, 1, 2, 3, 5, 17, 101, 1000]);
    if m == 1 {
        "1".into()
    } else {
        format!("rowid % {m} = {}", rng.below(m as usize))
    }
}

fn statement(rng: &mut Rng, schema: &Schema) -> Option<String> {
    if schema.tables.is_empty() {
        return None;
    }
    let t = rng.pick(&schema.tables);
    let tn = q(&t.name);
    let col = |rng: &mut Rng| {
        if t.columns.is_empty() {
            "rowid".to_string()
        } else {
            q(rng.pick(t.columns.as_slice()).as_str())
        }
    };
    Some(match rng.below(22) {
        0..=8 => {
            let c = col(rng);
            let v = rng.pick(VALUES).replace("$C", &c).replace("$T", &tn);
            format!("UPDATE {tn} SET {c} = {v} WHERE {}", rows_where(rng))
        }
        9 => {
            let a = col(rng);
            let b = col(rng);
            format!(
                "UPDATE {tn} SET {a} = {b}, {b} = {a} WHERE {}",
                rows_where(rng)
            )
        }
        10 | 11 => format!("DELETE FROM {tn} WHERE {}", rows_where(rng)),
        12 => {
            let cols: Vec<String> = t
                .columns
                .iter()
                .filter(|c| c.as_str() != "id")
                .map(|c| q(c))
                .collect();
            if cols.is_empty() {
                return None;
            }
            let cols = cols.join(", ");
            format!(
                "INSERT INTO {tn} ({cols}) SELECT {cols} FROM {tn} WHERE {}",
                rows_where(rng)
            )
        }
        13 => match rng.below(3) {
            0 if !schema.views.is_empty() => format!(
                "DROP VIEW {}",
                q(rng.pick(schema.views.as_slice()).as_str())
            ),
            1 if !schema.indexes.is_empty() => {
                format!(
                    "DROP INDEX {}",
                    q(rng.pick(schema.indexes.as_slice()).as_str())
                )
            }
            _ => format!("DROP TABLE {tn}"),
        },
        14 => {
            let new = match rng.below(4) {
                0 => t.name.to_uppercase(),
                1 => t
                    .name
                    .rsplit_once('_')
                    .map_or(t.name.clone(), |(base, _)| base.to_string()),
                2 => format!("{}_0", t.name),
                _ => format!("{}x", t.name),
            };
            format!("ALTER TABLE {tn} RENAME TO {}", q(&new))
        }
        15 => format!("ALTER TABLE {tn} DROP COLUMN {}", col(rng)),
        16 => {
            // A second table set: a copy of this table under another suffix, plus that
            // suffix's metadata table.
            let (base, _) = t.name.rsplit_once('_')?;
            let suffix = *rng.pick(&["0000", "ab_cd", "00000000_0000_0000_0000_000000000001"]);
            let meta = schema
                .tables
                .iter()
                .find(|x| x.name.starts_with("rocpd_metadata_"))
                .map(|m| m.name.clone())?;
            format!(
                "CREATE TABLE {} AS SELECT * FROM {tn}; CREATE TABLE IF NOT EXISTS {} AS SELECT * FROM {};",
                q(&format!("{base}_{suffix}")),
                q(&format!("rocpd_metadata_{suffix}")),
                q(&meta)
            )
        }
        17 => format!(
            "UPDATE {tn} SET {} = NULL WHERE {}",
            col(rng),
            rows_where(rng)
        ),
        18 => {
            let c = col(rng);
            format!("UPDATE {tn} SET {c} = -{c} - 1 WHERE {}", rows_where(rng))
        }
        // The table rebuilt without its declared types and keys, its rows given twice
        // (ids repeated), or with a column named rowid that hides the row id (D143).
        19 => format!(
            "CREATE TABLE fuzz_rows AS SELECT * FROM {tn}; DROP TABLE {tn}; \
             CREATE TABLE {tn} AS SELECT * FROM fuzz_rows UNION ALL SELECT * FROM fuzz_rows \
             WHERE {}; DROP TABLE fuzz_rows;",
            rows_where(rng)
        ),
        20 => format!(
            "CREATE TABLE fuzz_rows AS SELECT * FROM {tn}; DROP TABLE {tn}; \
             CREATE TABLE {tn} AS SELECT *, CASE WHEN {} THEN {} END AS rowid FROM fuzz_rows; \
             DROP TABLE fuzz_rows;",
            rows_where(rng),
            col(rng)
        ),
        _ => format!("ALTER TABLE {tn} ADD COLUMN {} TEXT DEFAULT 'x'", q("fuzz")),
    })
}
