//! `rocpd query`: SQL over the views of a merged RocPD database of the inputs.
//!
//! The inputs (databases, and rocprofv3 or Proton files imported as databases) are first
//! written into one temporary merged database in a private temporary directory, by the
//! same code as `rocpd merge`: copied inside SQLite when every event is kept, or through
//! the ordinary stream, stages and merged-RocPD sink when a filter or a window is given,
//! so the window means exactly what it means for every other output. That database is
//! then opened read-only (`rocpd_db::ReadOnlySql`): a script runs first (it may create
//! TEMP views), then the query, whose rows are rendered one at a time as SQLite gives them.
//!
//! A result is given whole or not at all: a query can fail on a later row (an integer
//! overflow, malformed JSON in `json_extract`), and what a pipe was given cannot be taken
//! back. Rows for a writer are therefore held ([`Spool`]: in memory, then in an anonymous
//! file in the query's temporary directory) until the query has run to its end; rows for a
//! file go to a partial file renamed at the end.

use std::io::Write;
use std::path::{Path, PathBuf};

use rocpd_db::{ReadOnlySql, RocpdSink, SqlValue};
use rocpd_model::{Error, Result};
use rocpd_pipeline::cleanup::Registered;
use rocpd_pipeline::{OutputFile, PathGuard};
use rocpd_summary::csv_field;

use crate::window::Selection;
use crate::Inputs;

/// How a query's result is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryFormat {
    /// An aligned text table, for a terminal.
    Console,
    /// A header line and one line per row, RFC 4180 quoting.
    Csv,
    /// An array of records (`[{"column": value, ...}, ...]`), indented by 2.
    Json,
    /// A Markdown (pipe) table.
    Markdown,
}

impl QueryFormat {
    /// The file extension of an output of this format.
    pub fn ext(self) -> &'static str {
        match self {
            QueryFormat::Console => "txt",
            QueryFormat::Csv => "csv",
            QueryFormat::Json => "json",
            QueryFormat::Markdown => "md",
        }
    }
}

/// A query: SQL over the views of the inputs, after a selection.
#[derive(Debug, Clone)]
pub struct Query {
    /// One read-only statement (`SELECT ...`).
    pub sql: String,
    /// A file of statements run first (e.g. `CREATE TEMP VIEW ...`).
    pub script: Option<PathBuf>,
    /// Which events the views hold: filter rules and a time window, applied first.
    pub selection: Selection,
    /// How the result is written.
    pub format: QueryFormat,
    /// Decode threads of the windowed pass.
    pub threads: usize,
}

impl Default for Query {
    fn default() -> Self {
        Query {
            sql: String::new(),
            script: None,
            selection: Selection::default(),
            format: QueryFormat::Console,
            threads: crate::default_threads(),
        }
    }
}

/// What a query returned.
#[derive(Debug, Clone, Default)]
pub struct QueryResult {
    /// The result's column names (empty when it has no rows).
    pub columns: Vec<String>,
    /// The number of rows written.
    pub rows: u64,
    /// The file written, if any (none when the result is empty).
    pub file: Option<PathBuf>,
    /// What the result does not show of the inputs: rocprofv3 runs imported and why, rows
    /// skipped as bad (`--skip-bad-rows`), which the query did not see.
    pub notes: Vec<String>,
}

/// The longest `--script` read.
const MAX_SCRIPT_BYTES: u64 = 16 << 20;

/// `<dir>/<name>`, with `.<ext>` of `format` appended unless `name` already ends with it;
/// a name that would leave `dir` (`../x`, `/x`, `sub/x`) is refused.
pub fn query_output_path(dir: &Path, name: &str, format: QueryFormat) -> Result<PathBuf> {
    rocpd_model::naming::check_output_name(name)?;
    let ext = format!(".{}", format.ext());
    Ok(if name.to_ascii_lowercase().ends_with(&ext) {
        dir.join(name)
    } else {
        dir.join(format!("{name}{ext}"))
    })
}

/// The temporary merged database a query reads, removed when dropped.
struct Scratch {
    sql: ReadOnlySql,
    /// Holds the merged database, and the result while it is held.
    dir: tempfile::TempDir,
    _registered: Registered,
}

impl Inputs {
    /// Runs `query` and writes its result to `out`; returns the columns and
    /// the number of rows. Nothing is written when the result is empty.
    ///
    /// ```
    /// # fn main() -> rocpd::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let cfg = rocpd_gen::GenConfig { processes: 2, iterations: 2, ..Default::default() };
    /// # rocpd_gen::generate(&cfg, &dir.path().join("run")).unwrap();
    /// let mut inputs = rocpd::Inputs::open(&[dir.path().join("run")], &Default::default())?;
    /// let query = rocpd::Query {
    ///     sql: "SELECT COUNT(*) AS n, SUM(total_calls) AS calls FROM top_kernels".into(),
    ///     format: rocpd::QueryFormat::Csv,
    ///     ..Default::default()
    /// };
    /// let mut out = Vec::new();
    /// let result = inputs.query(&query, &mut out)?;
    /// assert_eq!(result.columns, ["n", "calls"]);
    /// assert_eq!(result.rows, 1);
    /// // Every dispatch is one call of its kernel.
    /// let kernels = inputs.info()?.rows["kernel_dispatch"];
    /// let text = String::from_utf8(out).unwrap();
    /// assert!(text.starts_with("n,calls\n") && text.ends_with(&format!(",{kernels}\n")));
    /// # Ok(()) }
    /// ```
    ///
    /// `out` is given the whole result or nothing: the rows are held until the query has
    /// run to its end (in memory up to a few MiB, then in a temporary file), so a query
    /// that fails on a later row leaves `out` untouched.
    pub fn query(&mut self, query: &Query, out: &mut dyn Write) -> Result<QueryResult> {
        let scratch = self.scratch(query)?;
        let mut spool = Spool::new(scratch.dir.path());
        let held = |e: std::io::Error| {
            Error::output(
                scratch.dir.path(),
                format!("cannot hold the query's result in a temporary file: {e}"),
            )
        };
        let mut result = run(&scratch.sql, query, &mut spool, &held)?;
        let io = |e: std::io::Error| Error::output("(query output)", format!("write failed: {e}"));
        spool.copy_to(out, &held, &io)?;
        result.notes = self.input_notes("the query");
        Ok(result)
    }

    /// Runs `query` and writes its result to `path` (see [`query_output_path`]), whole or
    /// not at all; no file is written when the result is empty. `path` may not be an
    /// input or the script.
    pub fn query_to_file(&mut self, query: &Query, path: &Path) -> Result<QueryResult> {
        let mut protected = self.read_files();
        protected.extend(query.script.iter().cloned());
        PathGuard::new(&protected).claim_file(path)?;
        let scratch = self.scratch(query)?;
        let mut file = OutputFile::create(path)?;
        let io_path = path.to_path_buf();
        let io = move |e: std::io::Error| Error::output(&io_path, format!("write failed: {e}"));
        let mut result = run(&scratch.sql, query, file.writer(), &io)?;
        if result.rows > 0 {
            file.commit()?;
            result.file = Some(path.to_path_buf());
        }
        result.notes = self.input_notes("the query");
        Ok(result)
    }

    /// The inputs, selected, as a temporary merged database opened read-only, with the
    /// script run.
    fn scratch(&mut self, query: &Query) -> Result<Scratch> {
        // The script is read (and checked for UTF-8) before the long part.
        let script = match &query.script {
            Some(p) => {
                // Read with a bound: a pipe (`--script <(...)`, `/dev/stdin`) is fine, a
                // device that never ends (`/dev/zero`) is not.
                use std::io::Read;
                let mut bytes = Vec::new();
                std::fs::File::open(p)
                    .and_then(|f| f.take(MAX_SCRIPT_BYTES + 1).read_to_end(&mut bytes))
                    .map_err(|e| Error::input(p, "read", e.to_string()))?;
                if bytes.len() as u64 > MAX_SCRIPT_BYTES {
                    return Err(Error::input(
                        p,
                        "read",
                        format!(
                            "longer than {} MiB; a script is SQL text",
                            MAX_SCRIPT_BYTES >> 20
                        ),
                    ));
                }
                let text = String::from_utf8(bytes).map_err(|e| {
                    Error::input(
                        p,
                        format!("byte {}", e.utf8_error().valid_up_to()),
                        "not UTF-8 text",
                    )
                })?;
                Some((p.clone(), text))
            }
            None => None,
        };
        // The query runs on a merged database: copied out of databases, or written from
        // the rows of inputs read directly.
        let window = query.selection.resolve(self)?;
        let (dir, registered) = crate::open::private_tempdir("rocpd-query-", "the query")?;
        let db = dir.path().join("merged.db");
        let direct = self.direct_sources();
        if query.selection.keeps_everything() && direct.is_empty() {
            rocpd_db::merge(&self.databases(), &db)?;
        } else {
            let sink = Box::new(RocpdSink::new(&db).with_direct_sources(&direct));
            self.run_window(
                &query.selection,
                window,
                vec![sink],
                query.threads,
                &mut |_| {},
            )?;
        }
        let sql = ReadOnlySql::open(&db)?;
        if let Some((path, text)) = &script {
            sql.run_script(text, path)?;
        }
        Ok(Scratch {
            sql,
            dir,
            _registered: registered,
        })
    }
}

/// Bytes of a result held in memory before the rest goes to a file.
const SPOOL_MEMORY: usize = 4 << 20;

/// A query's rendered result, held until the query has succeeded: in memory up to
/// [`SPOOL_MEMORY`], then in an anonymous file (removed by the system when closed) in the
/// query's private temporary directory, so memory does not grow with the result.
struct Spool<'d> {
    dir: &'d Path,
    memory: Vec<u8>,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl<'d> Spool<'d> {
    fn new(dir: &'d Path) -> Self {
        Spool {
            dir,
            memory: Vec::new(),
            file: None,
        }
    }

    /// Gives `out` everything held, then flushes it. `held` maps an error reading the
    /// held result back, `io` an error writing `out`.
    fn copy_to(
        self,
        out: &mut dyn Write,
        held: &dyn Fn(std::io::Error) -> Error,
        io: &dyn Fn(std::io::Error) -> Error,
    ) -> Result<()> {
        use std::io::{Read, Seek};
        if let Some(file) = self.file {
            let mut file = file.into_inner().map_err(|e| held(e.into_error()))?;
            file.rewind().map_err(held)?;
            let mut buf = vec![0u8; 256 << 10];
            loop {
                let n = match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(held(e)),
                };
                out.write_all(&buf[..n]).map_err(io)?;
            }
        } else {
            out.write_all(&self.memory).map_err(io)?;
        }
        out.flush().map_err(io)
    }
}

impl Write for Spool<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.file.is_none() && self.memory.len() + bytes.len() > SPOOL_MEMORY {
            let mut file =
                std::io::BufWriter::with_capacity(256 << 10, tempfile::tempfile_in(self.dir)?);
            file.write_all(&self.memory)?;
            self.memory = Vec::new();
            self.file = Some(file);
        }
        match &mut self.file {
            Some(file) => file.write(bytes),
            None => {
                self.memory.extend_from_slice(bytes);
                Ok(bytes.len())
            }
        }
    }

    /// Holding is not giving: a flush of the rows waits for [`Spool::copy_to`].
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs the query of `q` on `sql` and renders its rows into `out`.
fn run(
    sql: &ReadOnlySql,
    q: &Query,
    out: &mut dyn Write,
    io: &dyn Fn(std::io::Error) -> Error,
) -> Result<QueryResult> {
    let mut render = Render::new(q.format, out);
    let rows = sql.query(&q.sql, &mut |cols, cells| render.row(cols, cells, io))?;
    render.finish().map_err(io)?;
    Ok(QueryResult {
        columns: render.columns,
        rows,
        file: None,
        notes: Vec::new(),
    })
}

/// The widest console cell, in characters: longer values are cut with `…` (as in the
/// console summary); the other formats hold every value whole.
const CONSOLE_CELL: usize = 60;

/// Rows of the console table used to size its columns; later rows keep those widths
/// (a wider value widens its own line only), so memory does not grow with the result.
const CONSOLE_SAMPLE: usize = 1000;

/// A streaming writer of result rows in one format.
struct Render<'w> {
    format: QueryFormat,
    out: &'w mut dyn Write,
    columns: Vec<String>,
    rows: u64,
    /// Console: the first rows, formatted, until the widths are known.
    sample: Vec<Vec<String>>,
    /// Console: numbers are right-aligned (a column is numeric while its values are).
    numeric: Vec<bool>,
    /// Console: the column widths, once known.
    widths: Option<Vec<usize>>,
}

impl<'w> Render<'w> {
    fn new(format: QueryFormat, out: &'w mut dyn Write) -> Self {
        Render {
            format,
            out,
            columns: Vec::new(),
            rows: 0,
            sample: Vec::new(),
            numeric: Vec::new(),
            widths: None,
        }
    }

    fn row(
        &mut self,
        cols: &[String],
        cells: &[SqlValue<'_>],
        io: &dyn Fn(std::io::Error) -> Error,
    ) -> Result<()> {
        if self.rows == 0 {
            self.columns = cols.to_vec();
            if self.format == QueryFormat::Json {
                let mut seen = std::collections::HashSet::new();
                if let Some(dup) = cols.iter().find(|c| !seen.insert(c.as_str())) {
                    return Err(Error::Usage(format!(
                        "--format json: the query returns two columns named {dup:?}; give them distinct names with AS"
                    )));
                }
            }
            self.begin(cells).map_err(io)?;
        }
        self.rows += 1;
        self.write_row(cells).map_err(io)
    }

    /// Whatever comes before the first row (its values decide the Markdown alignment).
    fn begin(&mut self, first: &[SqlValue<'_>]) -> std::io::Result<()> {
        match self.format {
            QueryFormat::Csv => {
                let line: Vec<String> = self.columns.iter().map(|c| csv_field(c)).collect();
                writeln!(self.out, "{}", line.join(","))
            }
            QueryFormat::Json => self.out.write_all(b"["),
            QueryFormat::Markdown => {
                let head: Vec<String> = self.columns.iter().map(|c| md_cell(c)).collect();
                let align: Vec<&str> = first
                    .iter()
                    .map(|v| if is_number(v) { "---:" } else { ":---" })
                    .collect();
                writeln!(self.out, "| {} |", head.join(" | "))?;
                writeln!(self.out, "| {} |", align.join(" | "))
            }
            QueryFormat::Console => {
                self.numeric = vec![true; self.columns.len()];
                Ok(())
            }
        }
    }

    fn write_row(&mut self, cells: &[SqlValue<'_>]) -> std::io::Result<()> {
        match self.format {
            QueryFormat::Csv => {
                let line: Vec<String> = cells.iter().map(|v| csv_field(&text(v))).collect();
                if line.len() == 1 && line[0].is_empty() {
                    // A lone empty field is quoted, so the line is not blank.
                    return writeln!(self.out, "\"\"");
                }
                writeln!(self.out, "{}", line.join(","))
            }
            QueryFormat::Json => {
                if self.rows > 1 {
                    self.out.write_all(b",")?;
                }
                self.out.write_all(b"\n  {")?;
                for (i, (c, v)) in self.columns.iter().zip(cells).enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    write!(self.out, "{sep}\n    {}:{}", json_string(c), json_value(v))?;
                }
                self.out.write_all(b"\n  }")
            }
            QueryFormat::Markdown => {
                let line: Vec<String> = cells.iter().map(|v| md_cell(&shown(v))).collect();
                writeln!(self.out, "| {} |", line.join(" | "))
            }
            QueryFormat::Console => {
                let line: Vec<String> = cells.iter().map(|v| clip(shown(v))).collect();
                match &self.widths {
                    Some(w) => {
                        let w = w.clone();
                        self.console_line(&line, &w)
                    }
                    None => {
                        for (n, v) in self.numeric.iter_mut().zip(cells) {
                            *n &= is_number(v) || *v == SqlValue::Null;
                        }
                        self.sample.push(line);
                        if self.sample.len() >= CONSOLE_SAMPLE {
                            self.flush_sample()?;
                        }
                        Ok(())
                    }
                }
            }
        }
    }

    /// Console: sizes the columns from the header and the sampled rows, and prints them.
    fn flush_sample(&mut self) -> std::io::Result<()> {
        let mut w: Vec<usize> = self.columns.iter().map(|c| width(c)).collect();
        for row in &self.sample {
            for (k, cell) in row.iter().enumerate() {
                w[k] = w[k].max(width(cell));
            }
        }
        let head: Vec<String> = self
            .columns
            .iter()
            .map(|c| crate::printable(c).into_owned())
            .collect();
        // Headers line up with their column's values.
        self.console_line(&head, &w)?;
        let rule: Vec<String> = w.iter().map(|&n| "-".repeat(n)).collect();
        self.console_line(&rule, &w)?;
        for row in std::mem::take(&mut self.sample) {
            self.console_line(&row, &w)?;
        }
        self.widths = Some(w);
        Ok(())
    }

    fn console_line(&mut self, cells: &[String], widths: &[usize]) -> std::io::Result<()> {
        let mut line = String::new();
        for (k, (cell, &w)) in cells.iter().zip(widths).enumerate() {
            if k > 0 {
                line.push_str("  ");
            }
            let pad = " ".repeat(w.saturating_sub(width(cell)));
            if self.numeric[k] {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        writeln!(self.out, "{}", line.trim_end())
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if self.rows > 0 {
            match self.format {
                QueryFormat::Json => self.out.write_all(b"\n]\n")?,
                QueryFormat::Console if self.widths.is_none() => self.flush_sample()?,
                _ => {}
            }
        }
        self.out.flush()
    }
}

fn is_number(v: &SqlValue<'_>) -> bool {
    matches!(v, SqlValue::Integer(_) | SqlValue::Real(_))
}

/// A real number with every digit needed to read it back exactly, and always with a `.`
/// or an exponent so that it reads as a real (`3.0`, `0.1`, `1e300`, `inf`).
fn real(v: f64) -> String {
    format!("{v:?}")
}

/// `x'0a1b'`, as SQL writes a blob.
fn blob(b: &[u8]) -> String {
    let mut s = String::with_capacity(3 + 2 * b.len());
    s.push_str("x'");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s.push('\'');
    s
}

/// A value as CSV text (NULL is an empty field).
fn text(v: &SqlValue<'_>) -> String {
    match v {
        SqlValue::Null => String::new(),
        SqlValue::Integer(i) => i.to_string(),
        SqlValue::Real(f) => real(*f),
        SqlValue::Text(t) => String::from_utf8_lossy(t).into_owned(),
        SqlValue::Blob(b) => blob(b),
    }
}

/// A value as shown in the console and Markdown tables (NULL is `NULL`, control
/// characters are escaped so a row stays on one line).
fn shown(v: &SqlValue<'_>) -> String {
    match v {
        SqlValue::Null => "NULL".into(),
        v => crate::printable(&text(v)).into_owned(),
    }
}

/// `s` cut to [`CONSOLE_CELL`] characters, the last one `…`.
fn clip(s: String) -> String {
    if width(&s) <= CONSOLE_CELL {
        return s;
    }
    let mut t: String = s.chars().take(CONSOLE_CELL - 1).collect();
    t.push('…');
    t
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn json_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

fn json_value(v: &SqlValue<'_>) -> String {
    match v {
        SqlValue::Null => "null".into(),
        SqlValue::Integer(i) => i.to_string(),
        // The same digits as the other formats (valid JSON numbers); JSON has no
        // infinities: those are null.
        SqlValue::Real(f) if f.is_finite() => real(*f),
        SqlValue::Real(_) => "null".into(),
        SqlValue::Text(t) => json_string(&String::from_utf8_lossy(t)),
        SqlValue::Blob(b) => json_string(&blob(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(format: QueryFormat, cols: &[&str], rows: &[Vec<SqlValue<'_>>]) -> String {
        let cols: Vec<String> = cols.iter().map(|c| c.to_string()).collect();
        let mut out = Vec::new();
        let io = |e: std::io::Error| Error::output("t", e.to_string());
        let mut r = Render::new(format, &mut out);
        for row in rows {
            r.row(&cols, row, &io).unwrap();
        }
        r.finish().unwrap();
        String::from_utf8(out).unwrap()
    }

    fn sample() -> Vec<Vec<SqlValue<'static>>> {
        use SqlValue::*;
        vec![
            vec![Text(b"gemm, \"fast\""), Integer(12), Real(0.1)],
            vec![Text(b"a|b\nc"), Null, Real(3.0)],
            vec![Blob(&[0, 255]), Integer(-7), Real(1e300)],
        ]
    }

    #[test]
    fn csv_quotes_as_rfc_4180_and_keeps_every_digit() {
        assert_eq!(
            render(QueryFormat::Csv, &["name", "n", "x"], &sample()),
            "name,n,x\n\"gemm, \"\"fast\"\"\",12,0.1\n\"a|b\nc\",,3.0\nx'00ff',-7,1e300\n"
        );
        assert_eq!(
            render(QueryFormat::Csv, &["only"], &[vec![SqlValue::Null]]),
            "only\n\"\"\n"
        );
    }

    #[test]
    fn json_is_an_array_of_records_indented_by_two() {
        assert_eq!(
            render(QueryFormat::Json, &["name", "n", "x"], &sample()[..2]),
            "[\n  {\n    \"name\":\"gemm, \\\"fast\\\"\",\n    \"n\":12,\n    \"x\":0.1\n  },\
             \n  {\n    \"name\":\"a|b\\nc\",\n    \"n\":null,\n    \"x\":3.0\n  }\n]\n"
        );
        let v: serde_json::Value =
            serde_json::from_str(&render(QueryFormat::Json, &["a", "b", "c"], &sample())).unwrap();
        assert_eq!(v[2]["c"], serde_json::json!(1e300));
        assert_eq!(v[2]["a"], "x'00ff'");
        let cols: Vec<String> = vec!["id".into(), "id".into()];
        let mut out = Vec::new();
        let mut r = Render::new(QueryFormat::Json, &mut out);
        let io = |e: std::io::Error| Error::output("t", e.to_string());
        let e = r
            .row(&cols, &[SqlValue::Integer(1), SqlValue::Integer(2)], &io)
            .unwrap_err();
        assert!(e.to_string().contains("two columns named \"id\""), "{e}");
    }

    #[test]
    fn markdown_is_a_pipe_table_aligned_by_the_first_row() {
        assert_eq!(
            render(QueryFormat::Markdown, &["name", "n", "x"], &sample()[..2]),
            "| name | n | x |\n| :--- | ---: | ---: |\n| gemm, \"fast\" | 12 | 0.1 |\n\
             | a\\|b\\nc | NULL | 3.0 |\n"
        );
    }

    #[test]
    fn console_aligns_text_left_and_numbers_right() {
        let want = [
            "name             n      x",
            "------------  ----  -----",
            "gemm, \"fast\"    12    0.1",
            "a|b\\nc        NULL    3.0",
            "x'00ff'         -7  1e300",
        ];
        assert_eq!(
            render(QueryFormat::Console, &["name", "n", "x"], &sample()),
            want.join("\n") + "\n"
        );
    }

    #[test]
    fn console_widths_come_from_the_first_rows_and_later_rows_still_print_whole() {
        let rows: Vec<Vec<SqlValue<'_>>> = (0..CONSOLE_SAMPLE + 1)
            .map(|i| {
                let t: &[u8] = if i == CONSOLE_SAMPLE {
                    b"a much longer name"
                } else {
                    b"k"
                };
                vec![SqlValue::Text(t), SqlValue::Integer(i as i64)]
            })
            .collect();
        let out = render(QueryFormat::Console, &["name", "i"], &rows);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), CONSOLE_SAMPLE + 3);
        assert_eq!(lines[0], "name    i");
        assert_eq!(lines[2], "k       0");
        assert_eq!(lines[CONSOLE_SAMPLE + 2], "a much longer name  1000");
    }

    #[test]
    fn console_cuts_long_values_and_the_other_formats_do_not() {
        let long = "x".repeat(CONSOLE_CELL + 5);
        let rows = vec![vec![SqlValue::Text(long.as_bytes())]];
        let out = render(QueryFormat::Console, &["k"], &rows);
        assert_eq!(
            out.lines().nth(2).unwrap(),
            format!("{}…", "x".repeat(CONSOLE_CELL - 1))
        );
        assert!(render(QueryFormat::Csv, &["k"], &rows).contains(&long));
        assert!(render(QueryFormat::Markdown, &["k"], &rows).contains(&long));
    }
}
