//! Read-only SQL over a database: a `--script` of statements, then one query whose rows
//! are streamed to a callback (`rocpd query`).
//!
//! The database is opened read-only, and an SQLite authorizer allows reading only: a
//! statement that would write a table, create anything but a TEMP view, attach a file or
//! set a PRAGMA is refused while it is prepared, before it runs, with a message saying
//! what was refused. The script may create and drop TEMP views (they live in the
//! connection's TEMP database, never in a file of the user's); the query must be a
//! read-only statement, and runs with `PRAGMA query_only = ON`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rocpd_model::{Error, Result};
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

/// One value of a result row, borrowed from SQLite for the time of the callback.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SqlValue<'a> {
    /// SQL NULL.
    Null,
    /// An integer.
    Integer(i64),
    /// A floating-point number.
    Real(f64),
    /// Text, as SQLite holds it (UTF-8, unless the database holds invalid text).
    Text(&'a [u8]),
    /// A blob.
    Blob(&'a [u8]),
}

/// What [`ReadOnlySql::query`] calls for each row: the column names and the row's values.
pub type OnRow<'f> = dyn FnMut(&[String], &[SqlValue<'_>]) -> Result<()> + 'f;

/// What the authorizer saw while the current statement was prepared.
#[derive(Debug, Default)]
struct Watch {
    /// Our own statements (pragmas) are not checked.
    trusted: bool,
    /// The first action refused, described.
    refused: Option<String>,
    /// The statement creates or drops a TEMP view.
    temp_view: bool,
}

/// The schema tables, written by every CREATE and DROP.
const SCHEMA_TABLES: [&str; 4] = [
    "sqlite_master",
    "sqlite_schema",
    "sqlite_temp_master",
    "sqlite_temp_schema",
];

/// Pragmas that take an argument and only read.
const READ_PRAGMAS: [&str; 11] = [
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "foreign_key_check",
    "integrity_check",
    "quick_check",
    "collation_list",
];

/// Pragmas that write even without an argument.
const WRITING_PRAGMAS: [&str; 4] = [
    "optimize",
    "incremental_vacuum",
    "wal_checkpoint",
    "analysis_limit",
];

/// Whether `ctx` is allowed; `None` if it is, else what was refused.
fn refusal(ctx: &AuthContext<'_>, watch: &mut Watch) -> Option<String> {
    let temp = ctx.database_name == Some("temp");
    match ctx.action {
        AuthAction::Select
        | AuthAction::Read { .. }
        | AuthAction::Function { .. }
        | AuthAction::Recursive
        | AuthAction::Transaction { .. }
        | AuthAction::Savepoint { .. } => None,
        AuthAction::CreateTempView { .. } | AuthAction::DropTempView { .. } => {
            watch.temp_view = true;
            None
        }
        // Creating or dropping anything writes a schema table first: SQLite refuses direct
        // writes to those itself, and the specific action (CREATE TABLE, ...) that follows
        // is what this decides on, so that the message names it. Nothing else in the TEMP
        // database can be written, since no TEMP table can be created.
        AuthAction::Insert { table_name }
        | AuthAction::Update { table_name, .. }
        | AuthAction::Delete { table_name }
            if temp || SCHEMA_TABLES.contains(&table_name.to_ascii_lowercase().as_str()) =>
        {
            None
        }
        AuthAction::Pragma {
            pragma_name,
            pragma_value,
        } => {
            let name = pragma_name.to_ascii_lowercase();
            let reads = match pragma_value {
                None => !WRITING_PRAGMAS.contains(&name.as_str()),
                Some(_) => READ_PRAGMAS.contains(&name.as_str()),
            };
            (!reads).then(|| match pragma_value {
                Some(v) => format!("PRAGMA {pragma_name} = {v}"),
                None => format!("PRAGMA {pragma_name}"),
            })
        }
        AuthAction::Insert { table_name } => Some(format!("INSERT into {table_name}")),
        AuthAction::Update { table_name, .. } => Some(format!("UPDATE of {table_name}")),
        AuthAction::Delete { table_name } => Some(format!("DELETE from {table_name}")),
        AuthAction::CreateTable { table_name } => Some(format!("CREATE TABLE {table_name}")),
        AuthAction::CreateTempTable { table_name } => {
            Some(format!("CREATE TEMP TABLE {table_name}"))
        }
        AuthAction::CreateView { view_name } => Some(format!(
            "CREATE VIEW {view_name} (a view in the database file; CREATE TEMP VIEW is allowed)"
        )),
        AuthAction::DropTable { table_name } | AuthAction::DropTempTable { table_name } => {
            Some(format!("DROP TABLE {table_name}"))
        }
        AuthAction::DropView { view_name } => Some(format!("DROP VIEW {view_name}")),
        AuthAction::CreateIndex { index_name, .. }
        | AuthAction::CreateTempIndex { index_name, .. } => {
            Some(format!("CREATE INDEX {index_name}"))
        }
        AuthAction::CreateTrigger { trigger_name, .. }
        | AuthAction::CreateTempTrigger { trigger_name, .. } => {
            Some(format!("CREATE TRIGGER {trigger_name}"))
        }
        AuthAction::Attach { filename } => Some(format!("ATTACH of {filename:?}")),
        AuthAction::Detach { database_name } => Some(format!("DETACH of {database_name}")),
        AuthAction::AlterTable { table_name, .. } => Some(format!("ALTER TABLE {table_name}")),
        AuthAction::Analyze { .. } => Some("ANALYZE".into()),
        AuthAction::Reindex { .. } => Some("REINDEX".into()),
        other => Some(format!("{other:?}")),
    }
}

/// A database opened for reading with SQL: see the module documentation.
pub struct ReadOnlySql {
    path: PathBuf,
    conn: Connection,
    watch: Arc<Mutex<Watch>>,
}

/// Why a statement is refused, for the messages.
const READ_ONLY_RULE: &str =
    "queries are read-only (a --script may also create and drop TEMP views)";

impl ReadOnlySql {
    /// Opens `path` read-only, with every write refused.
    pub fn open(path: &Path) -> Result<ReadOnlySql> {
        let err = |e: rusqlite::Error| Error::input(path, "open", e.to_string());
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn =
            Connection::open_with_flags(crate::file_uri(path, "mode=ro"), flags).map_err(err)?;
        // TEMP views, sorts and the automatic indexes of joins go to temporary files.
        conn.execute_batch(
            "PRAGMA temp_store = FILE; PRAGMA cache_size = -16384; PRAGMA temp.cache_size = -16384;",
        )
        .map_err(err)?;
        let watch: Arc<Mutex<Watch>> = Arc::default();
        let hook = watch.clone();
        conn.authorizer(Some(move |ctx: AuthContext<'_>| {
            let mut w = hook.lock().unwrap_or_else(|p| p.into_inner());
            if w.trusted {
                return Authorization::Allow;
            }
            match refusal(&ctx, &mut w) {
                None => Authorization::Allow,
                Some(what) => {
                    w.refused.get_or_insert(what);
                    Authorization::Deny
                }
            }
        }))
        .map_err(err)?;
        Ok(ReadOnlySql {
            path: path.to_path_buf(),
            conn,
            watch,
        })
    }

    fn watch(&self) -> std::sync::MutexGuard<'_, Watch> {
        self.watch.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets what the previous statement did.
    fn reset(&self) {
        let mut w = self.watch();
        w.refused = None;
        w.temp_view = false;
    }

    /// The message for an SQLite error `e`: what the authorizer refused, if it did.
    fn explain(&self, e: rusqlite::Error) -> String {
        match self.watch().refused.take() {
            Some(what) => format!("{what} is refused: {READ_ONLY_RULE}"),
            // SQLite's own word when extension loading is off, which it always is here.
            None if e.to_string() == "not authorized" => {
                format!("not authorized: SQLite extensions are not loaded; {READ_ONLY_RULE}")
            }
            None => e.to_string(),
        }
    }

    /// Runs the statements of `script` (the text of `file`) in order, discarding any rows
    /// they return. Only reads and `CREATE`/`DROP TEMP VIEW` are allowed.
    pub fn run_script(&self, script: &str, file: &Path) -> Result<()> {
        for (n, (line, text)) in split_statements(script).into_iter().enumerate() {
            let place = format!("statement {} (line {line})", n + 1);
            let fail = |m: String| Error::input(file, place.as_str(), m);
            self.reset();
            let mut st = self.conn.prepare(text).map_err(|e| fail(self.explain(e)))?;
            if !st.readonly() && !self.watch().temp_view {
                return Err(fail(format!(
                    "this statement would write: {READ_ONLY_RULE}"
                )));
            }
            let mut rows = st.raw_query();
            loop {
                match rows.next() {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) => return Err(fail(self.explain(e))),
                }
            }
        }
        Ok(())
    }

    /// Runs the read-only statement `sql` and calls `each` with the column names and
    /// the values of every row, one row at a time; returns the number of rows. Errors of
    /// the statement are [`Error::Usage`] starting with `--query:`; errors of `each` are
    /// passed on.
    pub fn query(&self, sql: &str, each: &mut OnRow<'_>) -> Result<u64> {
        self.trusted(|c| c.execute_batch("PRAGMA query_only = ON"))?;
        let fail = |m: String| Error::Usage(format!("--query: {m}"));
        self.reset();
        let mut st = self.conn.prepare(sql).map_err(|e| match e {
            rusqlite::Error::MultipleStatement => {
                fail("holds more than one statement; put the others in a --script file".into())
            }
            e => fail(self.explain(e)),
        })?;
        if !st.readonly() {
            return Err(fail(format!(
                "the query must be a read-only statement (SELECT, WITH, VALUES, PRAGMA reads); {READ_ONLY_RULE}"
            )));
        }
        let names: Vec<String> = st.column_names().map(|s| s.to_string()).collect();
        let mut rows = st.raw_query();
        let mut n: u64 = 0;
        loop {
            let row = match rows.next() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => return Err(fail(self.explain(e))),
            };
            let mut cells = Vec::with_capacity(names.len());
            for i in 0..names.len() {
                cells.push(match row.get_ref(i).map_err(|e| fail(e.to_string()))? {
                    ValueRef::Null => SqlValue::Null,
                    ValueRef::Integer(v) => SqlValue::Integer(v),
                    ValueRef::Real(v) => SqlValue::Real(v),
                    ValueRef::Text(t) => SqlValue::Text(t),
                    ValueRef::Blob(b) => SqlValue::Blob(b),
                });
            }
            each(&names, &cells)?;
            n += 1;
            if n.is_multiple_of(4096) {
                rocpd_pipeline::cleanup::check_cancelled()?;
            }
        }
        Ok(n)
    }

    /// Runs `f` with the authorizer allowing everything (our own pragmas).
    fn trusted(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<()>) -> Result<()> {
        self.watch().trusted = true;
        let r = f(&self.conn);
        self.watch().trusted = false;
        r.map_err(|e| Error::input(&self.path, "open", e.to_string()))
    }
}

/// The statements of a script, each with the line it starts on: split at `;` outside
/// quotes (`'...'`, `"..."`, `` `...` ``, `[...]`) and comments (`-- ...`, `/* ... */`);
/// pieces holding only spaces and comments are left out.
pub fn split_statements(script: &str) -> Vec<(usize, &str)> {
    let b = script.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut first_line, mut line) = (0, None::<usize>, 1);
    let mut i = 0;
    let end_of = |from: usize, close: &[u8]| -> usize {
        // The index just past the first `close` at or after `from` (or the end).
        b[from..]
            .windows(close.len())
            .position(|w| w == close)
            .map_or(b.len(), |p| from + p + close.len())
    };
    while i < b.len() {
        let c = b[i];
        let next = match c {
            b'\'' | b'"' | b'`' => {
                first_line.get_or_insert(line);
                // A doubled quote inside is part of the text, and ends the scan in the
                // same place: the scan restarts after it.
                end_of(i + 1, &[c])
            }
            b'[' => {
                first_line.get_or_insert(line);
                end_of(i + 1, b"]")
            }
            b'-' if b.get(i + 1) == Some(&b'-') => end_of(i + 2, b"\n"),
            b'/' if b.get(i + 1) == Some(&b'*') => end_of(i + 2, b"*/"),
            b';' => {
                if let Some(l) = first_line.take() {
                    out.push((l, &script[start..i]));
                }
                start = i + 1;
                i + 1
            }
            c => {
                if !c.is_ascii_whitespace() {
                    first_line.get_or_insert(line);
                }
                i + 1
            }
        };
        line += b[i..next].iter().filter(|&&x| x == b'\n').count();
        i = next;
    }
    if let Some(l) = first_line {
        out.push((l, &script[start..]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_split_at_semicolons_outside_quotes_and_comments() {
        let s = "CREATE TEMP VIEW a AS SELECT ';' AS x; -- one; two\n\
                 /* a; b */ SELECT \"x;\" FROM [a;b];\n\n  ;  \nSELECT 'it''s; ok'";
        let parts = split_statements(s);
        let texts: Vec<&str> = parts.iter().map(|(_, t)| t.trim()).collect();
        assert_eq!(
            texts,
            [
                "CREATE TEMP VIEW a AS SELECT ';' AS x",
                "-- one; two\n/* a; b */ SELECT \"x;\" FROM [a;b]",
                "SELECT 'it''s; ok'"
            ]
        );
        assert_eq!(parts.iter().map(|p| p.0).collect::<Vec<_>>(), [1, 2, 5]);
        assert!(split_statements(" -- only a comment; here\n /* ; */ ").is_empty());
    }

    fn db() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE t (x INTEGER, y TEXT); INSERT INTO t VALUES (1, 'a'), (2, NULL);",
        )
        .unwrap();
        (dir, path)
    }

    fn rows(q: &ReadOnlySql, sql: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        q.query(sql, &mut |cols, cells| {
            out.push(format!("{cols:?} {cells:?}"));
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn reads_and_temp_views_pass_and_every_write_is_refused_before_it_runs() {
        let (_d, path) = db();
        let before = std::fs::read(&path).unwrap();
        let q = ReadOnlySql::open(&path).unwrap();
        let script = Path::new("s.sql");
        q.run_script(
            "CREATE TEMP VIEW v AS SELECT x * 10 AS z FROM t; SELECT 1",
            script,
        )
        .unwrap();
        assert_eq!(
            rows(&q, "SELECT z FROM v ORDER BY z").unwrap(),
            [r#"["z"] [Integer(10)]"#, r#"["z"] [Integer(20)]"#]
        );
        assert_eq!(rows(&q, "PRAGMA table_info(t)").unwrap().len(), 2);
        for (sql, what) in [
            ("INSERT INTO t VALUES (3, 'c')", "INSERT into t"),
            ("UPDATE t SET x = 0", "UPDATE of t"),
            ("DELETE FROM t", "DELETE from t"),
            ("CREATE TABLE u (a)", "CREATE TABLE u"),
            ("CREATE TEMP TABLE u (a)", "CREATE TEMP TABLE u"),
            ("CREATE VIEW w AS SELECT 1", "CREATE VIEW w"),
            ("DROP TABLE t", "DROP TABLE t"),
            ("ATTACH 'new.db' AS n", "ATTACH of \"new.db\""),
            ("PRAGMA user_version = 7", "PRAGMA user_version = 7"),
            ("PRAGMA query_only = OFF", "PRAGMA query_only = OFF"),
            ("VACUUM INTO 'copy.db'", "would write"),
            ("CREATE INDEX i ON t (x)", "CREATE INDEX i"),
        ] {
            let e = q.run_script(sql, script).unwrap_err().to_string();
            assert!(e.contains(what) && e.contains("read-only"), "{sql}: {e}");
            assert!(e.starts_with("s.sql: statement 1 (line 1)"), "{e}");
            let e = rows(&q, sql).unwrap_err().to_string();
            assert!(
                e.starts_with("--query: ") && e.contains("read-only"),
                "{sql}: {e}"
            );
        }
        assert!(!Path::new("new.db").exists() && !Path::new("copy.db").exists());
        // A TEMP view in --query is refused too: the query only reads.
        let e = rows(&q, "CREATE TEMP VIEW w AS SELECT 1").unwrap_err();
        assert!(
            e.to_string().contains("must be a read-only statement"),
            "{e}"
        );
        let e = rows(&q, "SELECT 1; SELECT 2").unwrap_err();
        assert!(e.to_string().contains("more than one statement"), "{e}");
        let e = rows(&q, "SELECT nope FROM t").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--query: no such column: nope in SELECT nope FROM t at offset 7"
        );
        drop(q);
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
}
