//! The run report: events in, dropped by stages, and written, per table and per output.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rocpd_model::Table;
use serde::Serialize;

/// Row counts per table name.
pub type TableCounts = BTreeMap<&'static str, u64>;

/// The reader stage named in the report for PMC rows without a time (their event is
/// neither a kernel dispatch nor a sample), whichever reader dropped them.
pub const UNTIMED_PMC: &str =
    "reader (PMC values whose event is neither a kernel dispatch nor a sample have no time)";

/// Rows a stage removed on purpose (filter, window, ...).
#[derive(Debug, Clone, Serialize)]
pub struct StageDrop {
    /// The stage.
    pub stage: String,
    /// Rows removed, per table.
    pub rows: TableCounts,
}

/// A path as a JSON string: JSON strings are UTF-8, so a name that is not gets
/// replacement characters instead of failing the report.
fn lossy_path<S: serde::Serializer>(p: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

/// What one output file received.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OutputReport {
    /// The file (or directory) written (in JSON lossily as UTF-8).
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    /// The split key of this output (`part-001_of_004`, `pid-4711`, ...), if split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Earliest start and latest end of the events written, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_range: Option<[i64; 2]>,
    /// Its size in bytes.
    pub bytes: u64,
    /// Rows written, per table.
    pub rows: TableCounts,
    /// Rows the writer could not represent, per reason; each is also explained in `notes`.
    pub skipped: BTreeMap<String, u64>,
    /// Things the user should know about this output (e.g. slices moved to extra lanes).
    pub notes: Vec<String>,
    /// Whether the output is shared with other runs (a dataset this run appended to):
    /// once committed it is never removed, even if the run fails later
    /// ([`crate::remove_output`]).
    #[serde(skip)]
    pub shared: bool,
}

impl OutputReport {
    /// Counts `n` rows of `table` as written.
    pub fn add(&mut self, table: Table, n: u64) {
        *self.rows.entry(table.name()).or_default() += n;
    }
}

/// The report of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunReport {
    /// Rows read, per table.
    pub rows_in: TableCounts,
    /// Rows removed by stages.
    pub dropped: Vec<StageDrop>,
    /// Every output written.
    pub outputs: Vec<OutputReport>,
    /// Things the user should know about the inputs (imports, rows left out on purpose).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Wall time of the run in seconds.
    pub seconds: f64,
}

impl RunReport {
    /// A short human-readable summary.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let total: u64 = self.rows_in.values().sum();
        s.push_str(&format!("read {total} events in {:.2} s", self.seconds));
        for (t, n) in &self.rows_in {
            s.push_str(&format!("\n  {t:<18} {n:>12}"));
        }
        for d in &self.dropped {
            for (t, n) in &d.rows {
                s.push_str(&format!("\n  dropped by {}: {t} {n}", d.stage));
            }
        }
        for n in &self.notes {
            s.push_str(&format!("\n  note: {n}"));
        }
        for o in &self.outputs {
            let written: u64 = o.rows.values().sum();
            s.push_str(&format!(
                "\nwrote {} ({} bytes, {written} events)",
                o.path.display(),
                o.bytes
            ));
            for (reason, n) in &o.skipped {
                s.push_str(&format!("\n  not written: {n} ({reason})"));
            }
            for note in &o.notes {
                s.push_str(&format!("\n  note: {note}"));
            }
        }
        s
    }
}
