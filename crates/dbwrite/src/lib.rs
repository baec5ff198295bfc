//! Creating a RocPD v3 database file for bulk loading, the one way every writer of ours
//! does it (the rocprofv3 and Proton importers, the generator).
//!
//! * [`create`]: the file, the bulk-load pragmas, the tables and views of one guid and the
//!   three `rocpd_metadata` rows. Nothing is journaled or synced: the file is a private
//!   temporary one or is renamed into place by its caller once complete, so a crash leaves
//!   a file that is thrown away, never one that is read.
//! * [`Strings`]: `rocpd_string` ids for texts, inserting new ones; a bounded cache in
//!   front of the table's UNIQUE index, so memory stays flat however many distinct
//!   strings an input has.
//! * [`row_counts`] and [`insert_sql`]: the rows per table, and the `INSERT` of a table.
//!
//! Errors are rusqlite's; callers name the file in their own error type.

#![warn(missing_docs)]

use std::collections::HashMap;
use std::path::Path;

use rocpd_schema::{create_tables_sql, create_views_sql, metadata_rows, table_name, TABLES};
use rusqlite::{Connection, OptionalExtension};

/// SQLite page cache of a database being written, KiB, unless the caller asks for more.
pub const DEFAULT_CACHE_KIB: usize = 8 << 10;

/// Creates the database file at `path` (which should not exist) for bulk loading, with
/// its tables, views and metadata rows for `guid`, and a page cache of `cache_kib` KiB.
///
/// Foreign keys are not enforced while loading: writers may insert rows before the rows
/// they reference (strings last, dimension tables at the end).
pub fn create(path: &Path, guid: &str, cache_kib: usize) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.execute_batch(&format!(
        "PRAGMA page_size = 4096;
         PRAGMA foreign_keys = OFF;
         PRAGMA journal_mode = OFF;
         PRAGMA synchronous = OFF;
         PRAGMA locking_mode = EXCLUSIVE;
         PRAGMA temp_store = FILE;
         PRAGMA cache_size = -{};",
        cache_kib.max(64)
    ))?;
    conn.set_prepared_statement_cache_capacity(64);
    conn.execute_batch(&create_tables_sql(guid))?;
    conn.execute_batch(&create_views_sql(guid))?;
    let sql = insert_sql("rocpd_metadata", guid, &["tag", "value"]);
    for (tag, value) in metadata_rows(guid) {
        conn.prepare_cached(&sql)?.execute([tag, value.as_str()])?;
    }
    Ok(conn)
}

/// `INSERT INTO "<table>" ("c1", ...) VALUES (?, ...)` for the table `base` of `guid`.
pub fn insert_sql(base: &str, guid: &str, cols: &[&str]) -> String {
    let names: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
    format!(
        "INSERT INTO \"{}\" ({}) VALUES ({})",
        table_name(base, guid),
        names.join(", "),
        vec!["?"; cols.len()].join(", ")
    )
}

/// Rows per table base name, in schema order.
pub fn row_counts(conn: &Connection, guid: &str) -> rusqlite::Result<Vec<(String, u64)>> {
    TABLES
        .iter()
        .map(|t| {
            let n: i64 = conn.query_row(
                &format!("SELECT COUNT(*) FROM \"{}\"", table_name(t, guid)),
                [],
                |r| r.get(0),
            )?;
            Ok((t.to_string(), u64::try_from(n).unwrap_or(0)))
        })
        .collect()
}

/// Distinct strings kept in memory before the cache is cleared (lookups then go through
/// the UNIQUE index of `rocpd_string` until the text is seen again).
pub const STRING_CACHE: usize = 100_000;

/// The `rocpd_string` ids of one database being written.
pub struct Strings {
    ids: HashMap<String, i64>,
    find: String,
    insert: String,
}

impl Strings {
    /// The interner of the database of `guid`.
    pub fn new(guid: &str) -> Strings {
        Strings {
            ids: HashMap::new(),
            find: format!(
                "SELECT id FROM \"{}\" WHERE string = ?",
                table_name("rocpd_string", guid)
            ),
            insert: insert_sql("rocpd_string", guid, &["string"]),
        }
    }

    /// The id of `s`, inserting it if the table does not hold it yet.
    pub fn id(&mut self, conn: &Connection, s: &str) -> rusqlite::Result<i64> {
        if let Some(id) = self.ids.get(s) {
            return Ok(*id);
        }
        let found: Option<i64> = conn
            .prepare_cached(&self.find)?
            .query_row([s], |r| r.get(0))
            .optional()?;
        let id = match found {
            Some(id) => id,
            None => {
                conn.prepare_cached(&self.insert)?.execute([s])?;
                conn.last_insert_rowid()
            }
        };
        if self.ids.len() >= STRING_CACHE {
            self.ids.clear();
        }
        self.ids.insert(s.to_string(), id);
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUID: &str = "0197c1a2-3b4c-7d5e-8f60-0123456789ab";

    #[test]
    fn a_new_database_has_the_schema_the_metadata_and_interned_strings() {
        let dir = tempfile::tempdir().unwrap();
        let conn = create(&dir.path().join("t.db"), GUID, DEFAULT_CACHE_KIB).unwrap();
        let counts = row_counts(&conn, GUID).unwrap();
        assert_eq!(counts.len(), TABLES.len());
        assert_eq!(counts[0], ("rocpd_metadata".to_string(), 3));
        assert!(counts[1..].iter().all(|(_, n)| *n == 0), "{counts:?}");
        let mut s = Strings::new(GUID);
        let a = s.id(&conn, "a").unwrap();
        let b = s.id(&conn, "b").unwrap();
        assert_ne!(a, b);
        assert_eq!(s.id(&conn, "a").unwrap(), a, "from the cache");
        // A fresh interner over the same table finds the rows through the index.
        let mut again = Strings::new(GUID);
        assert_eq!(again.id(&conn, "b").unwrap(), b);
        let strings: i64 = conn
            .query_row(
                &format!(
                    "SELECT COUNT(*) FROM \"{}\"",
                    table_name("rocpd_string", GUID)
                ),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(strings, 2);
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "off");
    }
}
