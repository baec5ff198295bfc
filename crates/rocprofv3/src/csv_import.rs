//! rocprofv3 CSV files: recognising their kind from the header, and importing a run's
//! files record by record.
//!
//! Columns are matched by name, case-insensitively, never by position, so every header
//! generation since 2024 reads the same way (see `formats/rocprofv3/README.md`).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use csv::ByteRecord;
use rocpd_model::{Error, Result};

use crate::csv_read::{CsvReader, RawRecord};
use crate::db::{
    AgentRef, AgentRow, AllocRow, CopyRow, DispatchRow, EventRow, KernelSymbolRow, NodeRow, PmcRow,
};
use crate::sink::RowSink;
use crate::{note_skip, ImportOptions, ImportReport, Run, RunSource};

/// The kind of a rocprofv3 CSV file, judged from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CsvKind {
    /// `agent_info.csv`.
    AgentInfo,
    /// API traces: `hip_api_trace.csv`, `hsa_api_trace.csv`, `marker_api_trace.csv`,
    /// `rccl_api_trace.csv`, `rocdecode_api_trace.csv`, `rocjpeg_api_trace.csv`
    /// (`Domain`, `Function`, ... columns).
    Api,
    /// `kernel_trace.csv`.
    KernelTrace,
    /// `memory_copy_trace.csv`.
    MemoryCopy,
    /// `memory_allocation_trace.csv`.
    MemoryAllocation,
    /// `scratch_memory_trace.csv`.
    ScratchMemory,
    /// `counter_collection.csv` (and the older `kernel_names.csv`-style counter files).
    CounterCollection,
    /// `pc_sampling_*.csv`: recognised, not imported (RocPD v3 has no table for it).
    PcSampling,
    /// `*_stats.csv`: recognised, not imported (derived data).
    Stats,
}

impl CsvKind {
    /// Whether the kind's rows are imported (stats and PC samples are not).
    pub fn is_imported(self) -> bool {
        !matches!(self, CsvKind::PcSampling | CsvKind::Stats)
    }

    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            CsvKind::AgentInfo => "agent_info",
            CsvKind::Api => "api_trace",
            CsvKind::KernelTrace => "kernel_trace",
            CsvKind::MemoryCopy => "memory_copy_trace",
            CsvKind::MemoryAllocation => "memory_allocation_trace",
            CsvKind::ScratchMemory => "scratch_memory_trace",
            CsvKind::CounterCollection => "counter_collection",
            CsvKind::PcSampling => "pc_sampling",
            CsvKind::Stats => "stats",
        }
    }
}

/// The first line of `buf` (without BOM and line ending), if `buf` holds a whole line, or
/// all of `buf` when `whole` says it is the whole file.
pub(crate) fn header_line(buf: &[u8], whole: bool) -> Option<String> {
    let buf = buf.strip_prefix(b"\xef\xbb\xbf").unwrap_or(buf);
    let line = match buf.iter().position(|b| *b == b'\n') {
        Some(n) => &buf[..n],
        None if whole => buf,
        None => return None,
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = std::str::from_utf8(line).ok()?;
    Some(text.to_string())
}

/// The first line of `buf` if it is complete.
pub(crate) fn first_line(buf: &[u8]) -> Option<String> {
    header_line(buf, false)
}

/// The header's column names, lower-cased and trimmed.
fn header_fields(line: &str) -> Vec<String> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(line.as_bytes());
    let mut rec = csv::StringRecord::new();
    match rdr.read_record(&mut rec) {
        Ok(true) => rec.iter().map(|f| f.trim().to_ascii_lowercase()).collect(),
        _ => Vec::new(),
    }
}

/// Whether `cols` could name a rocprofv3 file's columns: two names at least, none longer
/// than rocprofv3 writes. Unnamed columns (a trailing comma on every line, as a
/// spreadsheet may save it) are ignored, not a reason to pass the file over.
fn plausible_names(cols: &[String]) -> bool {
    cols.iter().filter(|c| !c.is_empty()).count() >= 2 && cols.iter().all(|c| c.len() <= 64)
}

fn kind_of_fields(cols: &[String]) -> Option<CsvKind> {
    let has = |n: &str| cols.iter().any(|c| c == n);
    if !plausible_names(cols) {
        return None;
    }
    let kind = if has("counter_name") && has("counter_value") && has("dispatch_id") {
        CsvKind::CounterCollection
    } else if has("kernel_name")
        && has("agent_id")
        && has("correlation_id")
        && has("start_timestamp")
        && has("end_timestamp")
    {
        CsvKind::KernelTrace
    } else if has("domain")
        && has("function")
        && has("correlation_id")
        && has("start_timestamp")
        && has("end_timestamp")
    {
        CsvKind::Api
    } else if has("direction")
        && has("source_agent_id")
        && has("destination_agent_id")
        && has("start_timestamp")
    {
        CsvKind::MemoryCopy
    } else if has("operation")
        && has("allocation_size")
        && (has("address") || has("starting_address"))
        && has("start_timestamp")
    {
        CsvKind::MemoryAllocation
    } else if has("operation") && has("alloc_flags") && has("start_timestamp") {
        CsvKind::ScratchMemory
    } else if has("node_id") && has("logical_node_id") && has("agent_type") {
        CsvKind::AgentInfo
    } else if has("sample_timestamp") && has("exec_mask") && has("instruction") {
        CsvKind::PcSampling
    } else if has("name") && has("calls") && has("totaldurationns") {
        CsvKind::Stats
    } else {
        return None;
    };
    Some(kind)
}

/// The kind of a CSV file whose header line is `line`.
#[cfg(test)]
pub(crate) fn kind_of_header(line: &str) -> Option<CsvKind> {
    kind_of_fields(&header_fields(line))
}

/// The kind a rocprofv3 file name announces (`1234_kernel_trace.csv` → `KernelTrace`;
/// also `1234_kernel_trace.csv.gz`).
pub(crate) fn kind_of_name(path: &Path) -> Option<CsvKind> {
    let stem = crate::csv_stem(path)?;
    let (_, part) = crate::walk::split_name(stem);
    let part = part?;
    Some(if part == "agent_info" {
        CsvKind::AgentInfo
    } else if part.ends_with("_stats") {
        CsvKind::Stats
    } else if part.starts_with("pc_sampling") {
        CsvKind::PcSampling
    } else if part == "kernel_trace" {
        CsvKind::KernelTrace
    } else if part.ends_with("_api_trace") {
        CsvKind::Api
    } else if part == "memory_copy_trace" {
        CsvKind::MemoryCopy
    } else if part == "memory_allocation_trace" {
        CsvKind::MemoryAllocation
    } else if part == "scratch_memory_trace" {
        CsvKind::ScratchMemory
    } else if part == "counter_collection" {
        CsvKind::CounterCollection
    } else {
        return None;
    })
}

/// Columns the importer needs for `kind` (each entry: alternative spellings).
pub(crate) fn required_columns(kind: CsvKind) -> &'static [&'static [&'static str]] {
    const TS: [&[&str]; 2] = [&["start_timestamp"], &["end_timestamp"]];
    match kind {
        CsvKind::KernelTrace => &[
            &["kernel_name"],
            &["agent_id"],
            &["correlation_id"],
            TS[0],
            TS[1],
        ],
        CsvKind::Api => &[
            &["domain"],
            &["function"],
            &["correlation_id"],
            TS[0],
            TS[1],
        ],
        CsvKind::MemoryCopy => &[
            &["direction"],
            &["source_agent_id"],
            &["destination_agent_id"],
            TS[0],
            TS[1],
        ],
        CsvKind::MemoryAllocation | CsvKind::ScratchMemory => &[&["operation"], TS[0], TS[1]],
        CsvKind::CounterCollection => &[&["dispatch_id"], &["counter_name"], &["counter_value"]],
        CsvKind::AgentInfo => &[&["node_id"]],
        CsvKind::PcSampling | CsvKind::Stats => &[],
    }
}

/// (columns of which one must be present, other columns of the kind): what makes a header
/// clearly of `kind` when the file name says so too.
fn signature(kind: CsvKind) -> (&'static [&'static str], &'static [&'static str]) {
    match kind {
        CsvKind::KernelTrace => (
            &["kernel_name"],
            &[
                "dispatch_id",
                "agent_id",
                "queue_id",
                "stream_id",
                "thread_id",
                "kernel_id",
                "correlation_id",
                "start_timestamp",
                "end_timestamp",
                "grid_size_x",
                "workgroup_size_x",
                "lds_block_size",
                "scratch_size",
                "vgpr_count",
                "sgpr_count",
            ],
        ),
        CsvKind::Api => (
            &["domain", "function"],
            &[
                "process_id",
                "thread_id",
                "correlation_id",
                "start_timestamp",
                "end_timestamp",
                "operation",
            ],
        ),
        CsvKind::MemoryCopy => (
            &["direction", "source_agent_id", "destination_agent_id"],
            &[
                "correlation_id",
                "start_timestamp",
                "end_timestamp",
                "stream_id",
            ],
        ),
        CsvKind::MemoryAllocation => (
            &[
                "allocation_size",
                "address",
                "starting_address",
                "operation",
            ],
            &[
                "agent_id",
                "correlation_id",
                "start_timestamp",
                "end_timestamp",
            ],
        ),
        CsvKind::ScratchMemory => (
            &["alloc_flags", "operation"],
            &[
                "agent_id",
                "queue_id",
                "thread_id",
                "allocation_size",
                "start_timestamp",
                "end_timestamp",
            ],
        ),
        CsvKind::CounterCollection => (
            &["counter_name", "counter_value"],
            &[
                "dispatch_id",
                "correlation_id",
                "agent_id",
                "kernel_name",
                "grid_size",
                "workgroup_size",
            ],
        ),
        CsvKind::AgentInfo => (
            &["node_id", "logical_node_id", "agent_type"],
            &["name", "product_name", "vendor_name", "model_name"],
        ),
        CsvKind::PcSampling => (
            &["exec_mask", "instruction", "sample_timestamp"],
            &["dispatch_id", "correlation_id", "wave_id"],
        ),
        CsvKind::Stats => (
            &["calls", "totaldurationns"],
            &[
                "name",
                "averagens",
                "percentage",
                "minns",
                "maxns",
                "stddev",
            ],
        ),
    }
}

/// The kind of a file whose header `cols` (lower-cased) is complete for it, or — when the
/// file name announces a kind — shares at least two of that kind's columns, one of them a
/// column only that kind has. The second case lets the importer name the missing columns
/// instead of a directory walk dropping the file.
pub(crate) fn kind_of_named_fields(path: &Path, cols: &[String]) -> Option<CsvKind> {
    if let Some(k) = kind_of_fields(cols) {
        return Some(k);
    }
    let kind = kind_of_name(path)?;
    if !plausible_names(cols) {
        return None;
    }
    let (keys, others) = signature(kind);
    let has = |n: &&str| cols.iter().any(|c| c == n);
    let key = keys.iter().filter(|k| has(k)).count();
    let other = others.iter().filter(|k| has(k)).count();
    (key >= 1 && key + other >= 2).then_some(kind)
}

/// The kind of the file at `path` whose header line is `line` (see [`kind_of_named_fields`]).
pub(crate) fn kind_of_named_header(path: &Path, line: &str) -> Option<CsvKind> {
    kind_of_named_fields(path, &header_fields(line))
}

/// rocprofv3's spelling of a lower-cased column name (`end_timestamp` → `End_Timestamp`).
pub(crate) fn display_column(name: &str) -> String {
    match name {
        "lds_block_size" => return "LDS_Block_Size".into(),
        "totaldurationns" => return "TotalDurationNs".into(),
        _ => {}
    }
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// The required columns of `kind` that `cols` (lower-cased) lacks, in rocprofv3's spelling
/// (alternatives joined with ` or `).
pub(crate) fn missing_columns(kind: CsvKind, cols: &[String]) -> Vec<String> {
    required_columns(kind)
        .iter()
        .filter(|alts| !alts.iter().any(|a| cols.iter().any(|c| c == a)))
        .map(|alts| {
            alts.iter()
                .map(|a| display_column(a))
                .collect::<Vec<_>>()
                .join(" or ")
        })
        .collect()
}

/// The header's column names, lower-cased (for [`missing_columns`]).
pub(crate) fn header_columns(line: &str) -> Vec<String> {
    header_fields(line)
}

/// Column positions by lower-cased name.
struct Header {
    names: Vec<String>,
    index: HashMap<String, usize>,
    /// The `rocpd convert` guid column, if any.
    guid: Option<usize>,
}

impl Header {
    fn new(rec: &ByteRecord) -> Header {
        let names: Vec<String> = rec
            .iter()
            .map(|f| String::from_utf8_lossy(f).trim().to_ascii_lowercase())
            .collect();
        let mut index = HashMap::new();
        for (i, n) in names.iter().enumerate() {
            index.entry(n.clone()).or_insert(i);
        }
        let guid = index.get("guid").copied().or_else(|| {
            // `rocpd convert` writes counter_collection.csv with a first column named "Pid"
            // that holds the guid.
            (names.first().map(String::as_str) == Some("pid") && index.contains_key("process_id"))
                .then_some(0)
        });
        Header { names, index, guid }
    }

    fn col(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// A column name (not empty) that the header gives twice.
    fn repeated(&self) -> Option<&str> {
        self.names
            .iter()
            .enumerate()
            .find(|(i, n)| !n.is_empty() && self.index.get(*n) != Some(i))
            .map(|(_, n)| n.as_str())
    }

    fn any(&self, names: &[&str]) -> Option<usize> {
        names.iter().find_map(|n| self.col(n))
    }

    fn req(&self, name: &str, path: &Path) -> Result<usize> {
        self.col(name).ok_or_else(|| {
            Error::input(
                path,
                "header",
                format!("missing column {}", display_column(name)),
            )
        })
    }
}

/// A record and the header it belongs to; field accessors return row errors as strings.
struct Rec<'a> {
    rec: &'a ByteRecord,
    header: &'a Header,
}

type RowResult<T> = std::result::Result<T, String>;

/// Why a text is not an integer of the column's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntError {
    /// Not an integer at all.
    NotInt,
    /// An integer outside the column's range.
    OutOfRange,
}

/// 2^63: floats must stay strictly inside ±2^63 to convert to `i64`.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// An integral float as `i64`, if it is strictly inside ±2^63 (no saturation; -2^63 itself
/// is refused too, because an integer literal below `i64::MIN` parses to that float).
pub(crate) fn float_to_i64(f: f64) -> Result<i64, IntError> {
    if !f.is_finite() || f.fract() != 0.0 {
        return Err(IntError::NotInt);
    }
    if f > -TWO_63 && f < TWO_63 {
        Ok(f as i64)
    } else {
        Err(IntError::OutOfRange)
    }
}

/// Parses an integer of a column that holds a count, size, id or timestamp: decimal, `0x`
/// hex or an integral float (`3564.000000`), all within `i64` (nothing wraps or
/// saturates: a value beyond is [`IntError::OutOfRange`]).
pub(crate) fn parse_int(s: &str) -> Result<i64, IntError> {
    let s = s.trim();
    if let Ok(v) = s.parse::<i64>() {
        return Ok(v);
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(IntError::OutOfRange);
    }
    // `3564.000000`: the integer part, exactly (a float would round values near 2^63).
    if let Some((int_part, frac)) = s.split_once('.') {
        let d = int_part.strip_prefix(['-', '+']).unwrap_or(int_part);
        if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && frac.bytes().all(|b| b == b'0')
        {
            return int_part.parse::<i64>().map_err(|_| IntError::OutOfRange);
        }
    }
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return match u64::from_str_radix(h, 16) {
            Ok(v) => i64::try_from(v).map_err(|_| IntError::OutOfRange),
            Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Err(IntError::OutOfRange),
            Err(_) => Err(IntError::NotInt),
        };
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_infinite() && !s.to_ascii_lowercase().contains("inf") => {
            Err(IntError::OutOfRange)
        }
        Ok(f) => float_to_i64(f),
        Err(_) => Err(IntError::NotInt),
    }
}

/// Parses an integer of a column that holds an opaque 64-bit pattern (addresses, raw
/// handles, device uuids): as [`parse_int`], but unsigned values up to `u64::MAX` (decimal
/// or hex) are accepted and stored as the two's-complement `i64` of the same bits.
pub(crate) fn parse_bits(s: &str) -> Result<i64, IntError> {
    match parse_int(s) {
        Err(IntError::OutOfRange) => {
            let t = s.trim();
            let t = t.strip_prefix('+').unwrap_or(t);
            let u = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16),
                None => t.parse::<u64>(),
            };
            u.map(|u| u as i64).map_err(|_| IntError::OutOfRange)
        }
        r => r,
    }
}

/// The value of a field of at most 18 ASCII digits, optionally after a `-`: most fields,
/// read without the text checks and trimming of [`parse_int`] (every such number fits
/// `i64`, and both [`parse_int`] and [`parse_bits`] give it as is).
fn plain_decimal(b: &[u8]) -> Option<i64> {
    let (negative, digits) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(d - b'0');
    }
    Some(if negative { -v } else { v })
}

impl<'a> Rec<'a> {
    fn name(&self, i: usize) -> &str {
        self.header.names.get(i).map_or("?", String::as_str)
    }

    fn text(&self, col: Option<usize>) -> Cow<'a, str> {
        match col.and_then(|i| self.rec.get(i)) {
            Some(b) => String::from_utf8_lossy(b),
            None => Cow::Borrowed(""),
        }
    }

    fn parsed(
        &self,
        col: Option<usize>,
        parse: fn(&str) -> Result<i64, IntError>,
        range: &str,
    ) -> RowResult<Option<i64>> {
        let Some(i) = col else { return Ok(None) };
        if let Some(v) = self.rec.get(i).and_then(plain_decimal) {
            return Ok(Some(v));
        }
        let t = self.text(Some(i));
        let t = t.trim();
        if t.is_empty() {
            return Ok(None);
        }
        match parse(t) {
            Ok(v) => Ok(Some(v)),
            Err(IntError::NotInt) => Err(format!(
                "column {}: expected an integer, found {t:?}",
                self.name(i)
            )),
            Err(IntError::OutOfRange) => Err(format!(
                "column {}: {t} is out of range ({range})",
                self.name(i)
            )),
        }
    }

    /// An optional integer that must fit `i64` (timestamps, ids, sizes, counts).
    fn opt_int(&self, col: Option<usize>) -> RowResult<Option<i64>> {
        self.parsed(col, parse_int, "the column holds signed 64-bit integers")
    }

    /// An optional opaque 64-bit value (address, raw handle): up to `u64::MAX`.
    fn opt_bits(&self, col: Option<usize>) -> RowResult<Option<i64>> {
        self.parsed(col, parse_bits, "the column holds 64-bit values")
    }

    fn int(&self, col: usize) -> RowResult<i64> {
        self.opt_int(Some(col))?
            .ok_or_else(|| format!("column {}: empty, expected an integer", self.name(col)))
    }

    fn float(&self, col: usize) -> RowResult<f64> {
        let t = self.text(Some(col));
        let t = t.trim();
        match t.parse::<f64>() {
            Ok(f) if f.is_infinite() && !t.to_ascii_lowercase().contains("inf") => Err(format!(
                "column {}: {t} is out of range of a 64-bit float",
                self.name(col)
            )),
            Ok(f) => Ok(f),
            Err(_) => Err(format!(
                "column {}: expected a number, found {t:?}",
                self.name(col)
            )),
        }
    }

    fn agent(&self, col: Option<usize>) -> RowResult<Option<AgentRef>> {
        let t = self.text(col);
        AgentRef::parse(&t).map_err(|m| format!("column {}: {m}", self.name(col.unwrap_or(0))))
    }
}

/// Import order of the kinds: agents first (they resolve `Agent N`), API calls before the
/// GPU activity they launch, counters last (they attach to kernel dispatches).
fn order(kind: CsvKind) -> u8 {
    match kind {
        CsvKind::AgentInfo => 0,
        CsvKind::Api => 1,
        CsvKind::KernelTrace => 2,
        CsvKind::MemoryCopy => 3,
        CsvKind::MemoryAllocation => 4,
        CsvKind::ScratchMemory => 5,
        CsvKind::CounterCollection => 6,
        CsvKind::PcSampling | CsvKind::Stats => 7,
    }
}

/// Kernel ids synthesized for kernels named without a `Kernel_Id` start here, far above
/// rocprofv3's small sequential ids.
const SYNTH_KERNEL_BASE: i64 = 1 << 32;

/// State of one CSV run import.
pub(crate) struct State<'o> {
    out: &'o mut dyn RowSink,
    pid: i64,
    /// Kernel name → kernel id, for rows without `Kernel_Id`.
    kernel_by_name: HashMap<String, i64>,
    /// Kernel id → the name its first row gave: a later row naming that id otherwise
    /// keeps its own name as the dispatch's region name.
    name_of_kernel: HashMap<i64, String>,
    next_synth_kernel: i64,
    /// (counter name, agent id) → pmc id.
    pmcs: HashMap<i64, HashMap<String, i64>>,
    /// How many pmc ids were given.
    pmc_count: i64,
    /// 1-based number of the current data record in its file.
    ordinal: i64,
}

type FileReader = CsvReader<Box<dyn std::io::Read + Send>>;

/// Opens a CSV file, decompressing a gzip one (`*.csv.gz`) as it is read: line numbers
/// in messages are those of the decompressed text.
fn open_csv(path: &Path) -> Result<FileReader> {
    Ok(CsvReader::new(crate::open_text(path)?))
}

fn read_error(path: &Path, line: u64, e: &std::io::Error) -> Error {
    Error::input(path, format!("line {line}"), format!("read error: {e}"))
}

/// The next record of `rdr` (I/O errors name the file).
fn next_record(
    rdr: &mut FileReader,
    rec: &mut ByteRecord,
    path: &Path,
) -> Result<Option<RawRecord>> {
    let line = rdr.line();
    // A long import stops soon after Ctrl-C, like the streaming stages do.
    if line.is_multiple_of(4096) {
        rocpd_pipeline::cleanup::check_cancelled()?;
    }
    rdr.next_record(rec).map_err(|e| read_error(path, line, &e))
}

/// Opens a CSV file and reads its header (`None` for a file without any record). A header
/// that cannot be split (unterminated quote, longer than the record limit) is an error.
fn open_with_header(path: &Path) -> Result<(FileReader, Option<Header>)> {
    let mut rdr = open_csv(path)?;
    let mut rec = ByteRecord::new();
    match next_record(&mut rdr, &mut rec, path)? {
        None => Ok((rdr, None)),
        Some(raw) => match raw.problem {
            Some(p) => Err(Error::input(
                path,
                format!("line {}", raw.line),
                format!("header: {}", p.message()),
            )),
            None => {
                let header = Header::new(&rec);
                match header.repeated() {
                    // Which of the two holds the values is anyone's guess.
                    Some(name) => Err(Error::input(
                        path,
                        format!("line {}", raw.line),
                        format!("header: column {} appears twice", display_column(name)),
                    )),
                    None => Ok((rdr, Some(header))),
                }
            }
        },
    }
}

/// Whether a record is unusable as a row of `header` (then, when it spans several lines,
/// the readers resynchronise after its first line).
fn unusable(raw: &RawRecord, rec: &ByteRecord, header: &Header) -> bool {
    raw.problem.is_some() || rec.len() != header.names.len()
}

/// The run's pid: a numeric file-name prefix, else the first `Process_Id` value found.
fn run_pid(run: &Run, prefix: &str, guid: Option<&str>) -> Option<i64> {
    if let Some(p) = prefix.strip_suffix('_').and_then(|p| p.parse::<i64>().ok()) {
        return Some(p);
    }
    for path in &run.files {
        let Ok((mut rdr, Some(header))) = open_with_header(path) else {
            continue;
        };
        let Some(col) = header.col("process_id") else {
            continue;
        };
        let mut rec = ByteRecord::new();
        while let Ok(Some(raw)) = rdr.next_record(&mut rec) {
            if unusable(&raw, &rec, &header) {
                if raw.lines > 1 {
                    // As the import reads the file: the lines after its first again.
                    let _ = rdr.resync();
                }
                continue;
            }
            let r = Rec {
                rec: &rec,
                header: &header,
            };
            if let (Some(g), Some(gc)) = (guid, header.guid) {
                if r.text(Some(gc)).trim() != g {
                    continue;
                }
            }
            if let Ok(Some(pid)) = r.opt_int(Some(col)) {
                return Some(pid);
            }
            break;
        }
    }
    None
}

/// The host name when the files sit in rocprofv3's default `<hostname>/<pid>_*.csv` layout:
/// a numeric prefix in a directory whose name is a plausible host name.
pub(crate) fn layout_hostname(dir: &Path, prefix: &str) -> Option<String> {
    let pid = prefix.strip_suffix('_')?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let name = dir.file_name()?.to_str()?;
    let ok = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
        && name
            .as_bytes()
            .first()
            .is_some_and(u8::is_ascii_alphanumeric)
        && !name.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| name.to_string())
}

/// What reading a CSV run needs besides its rows: the node, the pid and the files in
/// import order.
#[derive(Debug, Clone)]
pub(crate) struct CsvPlan {
    pub node: NodeRow,
    pub pid: i64,
    /// The files with their kinds, in import order (kind, then path).
    pub files: Vec<(PathBuf, CsvKind)>,
    /// For `rocpd convert` CSVs: only rows of this guid.
    pub guid: Option<String>,
}

/// The plan of a CSV run (reads the files' heads for the pid when the names lack it).
pub(crate) fn plan(run: &Run) -> CsvPlan {
    let RunSource::Csv {
        dir,
        prefix,
        kinds,
        guid,
    } = &run.source
    else {
        unreachable!("a CSV run")
    };
    let node = NodeRow::from_hostname(layout_hostname(dir, prefix).as_deref());
    let pid = run_pid(run, prefix, guid.as_deref()).unwrap_or(0);
    let mut files: Vec<(PathBuf, CsvKind)> = run
        .files
        .iter()
        .cloned()
        .zip(kinds.iter().copied())
        .collect();
    files.sort_by_key(|(p, k)| (order(*k), p.clone()));
    CsvPlan {
        node,
        pid,
        files,
        guid: guid.clone(),
    }
}

/// Imports every file of a CSV run.
pub(crate) fn import_run(
    run: &Run,
    out: &mut dyn RowSink,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<()> {
    let plan = plan(run);
    read_files(&plan, &plan.files, out, opts, report)
}

/// Where [`read_files`] reports what it skipped and ignored: one report for every file,
/// or one per file (by its index in the plan), for a reader that reads the files in
/// another order than the import and must list skipped rows in the import's.
pub(crate) trait FileReports {
    fn of_file(&mut self, index: Option<usize>) -> &mut ImportReport;
}

impl FileReports for ImportReport {
    fn of_file(&mut self, _: Option<usize>) -> &mut ImportReport {
        self
    }
}

impl FileReports for BTreeMap<usize, ImportReport> {
    fn of_file(&mut self, index: Option<usize>) -> &mut ImportReport {
        // Files outside the plan do not occur (they are the plan's); last if they did.
        self.entry(index.unwrap_or(usize::MAX)).or_default()
    }
}

/// Reads `files` (some or all of `plan`'s, in the order given) into `out`.
pub(crate) fn read_files(
    plan: &CsvPlan,
    files: &[(PathBuf, CsvKind)],
    out: &mut dyn RowSink,
    opts: &ImportOptions,
    reports: &mut dyn FileReports,
) -> Result<()> {
    out.set_node(plan.node.clone());
    out.thread(plan.pid, None);
    let mut st = State {
        out,
        pid: plan.pid,
        kernel_by_name: HashMap::new(),
        name_of_kernel: HashMap::new(),
        next_synth_kernel: SYNTH_KERNEL_BASE,
        pmcs: HashMap::new(),
        pmc_count: 0,
        ordinal: 0,
    };
    for (path, kind) in files {
        let index = plan.files.iter().position(|(p, _)| p == path);
        st.out.begin_file(index, *kind)?;
        let report = reports.of_file(index);
        import_file(&mut st, path, plan.guid.as_deref(), opts, report)?;
    }
    Ok(())
}

/// Column positions of one file kind.
enum Cols {
    Agent,
    Api {
        domain: usize,
        function: usize,
        pid: Option<usize>,
        tid: Option<usize>,
        corr: usize,
        start: usize,
        end: usize,
    },
    Kernel(KernelCols),
    Copy {
        kind: Option<usize>,
        direction: usize,
        stream: Option<usize>,
        src: usize,
        dst: usize,
        corr: Option<usize>,
        start: usize,
        end: usize,
        bytes: Option<usize>,
    },
    Alloc {
        kind: Option<usize>,
        operation: usize,
        agent: Option<usize>,
        size: Option<usize>,
        address: Option<usize>,
        corr: Option<usize>,
        start: usize,
        end: usize,
    },
    Scratch {
        kind: Option<usize>,
        operation: usize,
        agent: Option<usize>,
        queue: Option<usize>,
        tid: Option<usize>,
        flags: Option<usize>,
        start: usize,
        end: usize,
        size: Option<usize>,
        corr: Option<usize>,
    },
    Counter(CounterCols),
    Ignored,
}

struct KernelCols {
    kind: Option<usize>,
    agent: usize,
    queue: Option<usize>,
    stream: Option<usize>,
    tid: Option<usize>,
    dispatch: Option<usize>,
    kernel_id: Option<usize>,
    kernel_name: usize,
    corr: usize,
    start: usize,
    end: usize,
    private: Option<usize>,
    group: Option<usize>,
    vgpr: Option<usize>,
    accum_vgpr: Option<usize>,
    sgpr: Option<usize>,
    wg: [Option<usize>; 3],
    grid: [Option<usize>; 3],
}

struct CounterCols {
    corr: Option<usize>,
    dispatch: usize,
    agent: Option<usize>,
    queue: Option<usize>,
    pid: Option<usize>,
    tid: Option<usize>,
    grid: Option<usize>,
    kernel_id: Option<usize>,
    kernel_name: Option<usize>,
    wg: Option<usize>,
    lds: Option<usize>,
    scratch: Option<usize>,
    vgpr: Option<usize>,
    accum_vgpr: Option<usize>,
    sgpr: Option<usize>,
    name: usize,
    value: usize,
    start: Option<usize>,
    end: Option<usize>,
}

fn columns(kind: CsvKind, h: &Header, path: &Path) -> Result<Cols> {
    Ok(match kind {
        CsvKind::AgentInfo => Cols::Agent,
        CsvKind::Api => Cols::Api {
            domain: h.req("domain", path)?,
            function: h.req("function", path)?,
            pid: h.col("process_id"),
            tid: h.col("thread_id"),
            corr: h.req("correlation_id", path)?,
            start: h.req("start_timestamp", path)?,
            end: h.req("end_timestamp", path)?,
        },
        CsvKind::KernelTrace => Cols::Kernel(KernelCols {
            kind: h.col("kind"),
            agent: h.req("agent_id", path)?,
            queue: h.col("queue_id"),
            stream: h.col("stream_id"),
            tid: h.col("thread_id"),
            dispatch: h.col("dispatch_id"),
            kernel_id: h.col("kernel_id"),
            kernel_name: h.req("kernel_name", path)?,
            corr: h.req("correlation_id", path)?,
            start: h.req("start_timestamp", path)?,
            end: h.req("end_timestamp", path)?,
            private: h.any(&["scratch_size", "private_segment_size"]),
            group: h.any(&["lds_block_size", "group_segment_size"]),
            vgpr: h.any(&["vgpr_count", "arch_vgpr_count"]),
            accum_vgpr: h.col("accum_vgpr_count"),
            sgpr: h.col("sgpr_count"),
            wg: [
                h.col("workgroup_size_x"),
                h.col("workgroup_size_y"),
                h.col("workgroup_size_z"),
            ],
            grid: [
                h.col("grid_size_x"),
                h.col("grid_size_y"),
                h.col("grid_size_z"),
            ],
        }),
        CsvKind::MemoryCopy => Cols::Copy {
            kind: h.col("kind"),
            direction: h.req("direction", path)?,
            stream: h.col("stream_id"),
            src: h.req("source_agent_id", path)?,
            dst: h.req("destination_agent_id", path)?,
            corr: h.col("correlation_id"),
            start: h.req("start_timestamp", path)?,
            end: h.req("end_timestamp", path)?,
            bytes: h.any(&["bytes", "size", "copy_bytes", "copy_size"]),
        },
        CsvKind::MemoryAllocation => Cols::Alloc {
            kind: h.col("kind"),
            operation: h.req("operation", path)?,
            agent: h.col("agent_id"),
            size: h.col("allocation_size"),
            address: h.any(&["address", "starting_address"]),
            corr: h.col("correlation_id"),
            start: h.req("start_timestamp", path)?,
            end: h.req("end_timestamp", path)?,
        },
        CsvKind::ScratchMemory => Cols::Scratch {
            kind: h.col("kind"),
            operation: h.req("operation", path)?,
            agent: h.col("agent_id"),
            queue: h.col("queue_id"),
            tid: h.col("thread_id"),
            flags: h.col("alloc_flags"),
            start: h.req("start_timestamp", path)?,
            end: h.req("end_timestamp", path)?,
            size: h.col("allocation_size"),
            corr: h.col("correlation_id"),
        },
        CsvKind::CounterCollection => Cols::Counter(CounterCols {
            corr: h.col("correlation_id"),
            dispatch: h.req("dispatch_id", path)?,
            agent: h.col("agent_id"),
            queue: h.col("queue_id"),
            pid: h.col("process_id"),
            tid: h.col("thread_id"),
            grid: h.col("grid_size"),
            kernel_id: h.col("kernel_id"),
            kernel_name: h.col("kernel_name"),
            wg: h.col("workgroup_size"),
            lds: h.any(&["lds_block_size", "group_segment_size"]),
            scratch: h.any(&["scratch_size", "private_segment_size"]),
            vgpr: h.any(&["vgpr_count", "arch_vgpr_count"]),
            accum_vgpr: h.col("accum_vgpr_count"),
            sgpr: h.col("sgpr_count"),
            name: h.req("counter_name", path)?,
            value: h.req("counter_value", path)?,
            start: h.col("start_timestamp"),
            end: h.col("end_timestamp"),
        }),
        CsvKind::PcSampling | CsvKind::Stats => Cols::Ignored,
    })
}

/// Why a row failed: bad input (skippable) or a write failure (fatal).
enum RowError {
    Bad(String),
    Fatal(Error),
}

impl From<String> for RowError {
    fn from(m: String) -> Self {
        RowError::Bad(m)
    }
}

impl From<Error> for RowError {
    fn from(e: Error) -> Self {
        RowError::Fatal(e)
    }
}

/// `s` cut to at most `max` bytes (at a char boundary), with `...` when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// A record that is not a valid row: the error (naming the line where it starts), or,
/// with `skip_bad_rows`, one skipped line. A bad record that spans several physical lines
/// loses only its first line: reading resumes at its second line, so that valid lines a
/// stray quote swallowed are read as records again.
fn bad_record(
    rdr: &mut FileReader,
    path: &Path,
    raw: &RawRecord,
    msg: String,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<()> {
    let place = format!("line {}", raw.line);
    let last = raw.line.saturating_add(raw.lines - 1);
    if !opts.skip_bad_rows {
        let msg = if raw.lines > 1 {
            format!("{msg} (the record runs over lines {}-{last})", raw.line)
        } else {
            msg
        };
        return Err(Error::input(path, place, msg));
    }
    let (msg, lost) = if raw.lines > 1 && rdr.resync() {
        let msg = format!(
            "{msg} (the record runs over lines {}-{last}): line {} skipped, reading resumes at line {}",
            raw.line,
            raw.line,
            raw.line.saturating_add(1)
        );
        (msg, 1)
    } else if raw.lines > 1 {
        let msg = format!(
            "{msg}: lines {}-{last} skipped (this file's bad records were read again past {} MiB, \
             so no more are)",
            raw.line,
            crate::csv_read::RESYNC_BYTES >> 20
        );
        (msg, raw.lines)
    } else {
        (msg, 1)
    };
    note_skip(report, lost, Error::input(path, place, msg));
    Ok(())
}

fn import_file(
    st: &mut State<'_>,
    path: &Path,
    guid: Option<&str>,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<()> {
    let (mut rdr, header) = open_with_header(path)?;
    let (kind, problem) = match &header {
        None => (
            None,
            Some(Error::input(
                path,
                "line 1",
                "not a rocprofv3 CSV file: the file is empty",
            )),
        ),
        Some(h) => match kind_of_named_fields(path, &h.names) {
            None => (
                None,
                Some(Error::input(
                    path,
                    "line 1",
                    format!(
                        "not a rocprofv3 CSV file: the header ({}) names no known rocprofv3 columns",
                        shorten(&h.names.join(","), 200)
                    ),
                )),
            ),
            Some(k) => {
                let missing = missing_columns(k, &h.names);
                let err = (!missing.is_empty()).then(|| {
                    let s = if missing.len() > 1 { "s" } else { "" };
                    Error::input(
                        path,
                        "header",
                        format!("missing column{s} {}", missing.join(", ")),
                    )
                });
                (Some(k), err)
            }
        },
    };
    let (Some(kind), None, Some(header)) = (kind, &problem, header) else {
        let err = problem.expect("a problem");
        if !opts.skip_bad_rows {
            return Err(err);
        }
        // The whole file is lost: count its lines after the header.
        let mut rec = ByteRecord::new();
        let mut lines = 0u64;
        while let Some(raw) = next_record(&mut rdr, &mut rec, path)? {
            lines = lines.saturating_add(raw.lines);
        }
        let err = Error::input(
            path,
            match &err {
                Error::Input { place, .. } => place.clone(),
                _ => "line 1".into(),
            },
            format!(
                "{}; file skipped ({lines} lines after the header)",
                match &err {
                    Error::Input { message, .. } => message.clone(),
                    other => other.to_string(),
                }
            ),
        );
        note_skip(report, lines, err);
        return Ok(());
    };
    let cols = columns(kind, &header, path)?;
    st.ordinal = 0;
    let mut rec = ByteRecord::new();
    let mut ignored = 0u64;
    while let Some(raw) = next_record(&mut rdr, &mut rec, path)? {
        if let Some(p) = raw.problem {
            bad_record(&mut rdr, path, &raw, p.message(), opts, report)?;
            continue;
        }
        if rec.len() != header.names.len() {
            let m = format!(
                "expected {} fields as in the header, found {}",
                header.names.len(),
                rec.len()
            );
            bad_record(&mut rdr, path, &raw, m, opts, report)?;
            continue;
        }
        let r = Rec {
            rec: &rec,
            header: &header,
        };
        if let (Some(g), Some(gc)) = (guid, header.guid) {
            let own = r.text(Some(gc));
            // A row of no process would be in no run: said, not dropped without a word.
            if own.trim().is_empty() {
                let m = "an empty guid, in a file whose rows name their process by guid".into();
                bad_record(&mut rdr, path, &raw, m, opts, report)?;
                continue;
            }
            if own.trim() != g {
                continue;
            }
        }
        st.ordinal += 1;
        let result = match &cols {
            Cols::Agent => agent_row(st, &r),
            Cols::Api {
                domain,
                function,
                pid,
                tid,
                corr,
                start,
                end,
            } => api_row(
                st,
                &r,
                [*domain, *function, *corr, *start, *end],
                *pid,
                *tid,
            ),
            Cols::Kernel(c) => kernel_row(st, &r, c),
            Cols::Copy {
                kind,
                direction,
                stream,
                src,
                dst,
                corr,
                start,
                end,
                bytes,
            } => copy_row(
                st,
                &r,
                [*direction, *src, *dst, *start, *end],
                [*kind, *stream, *corr, *bytes],
            ),
            Cols::Alloc {
                kind,
                operation,
                agent,
                size,
                address,
                corr,
                start,
                end,
            } => alloc_row(
                st,
                &r,
                [*operation, *start, *end],
                [*kind, *agent, *size, *address, *corr],
            ),
            Cols::Scratch {
                kind,
                operation,
                agent,
                queue,
                tid,
                flags,
                start,
                end,
                size,
                corr,
            } => scratch_row(
                st,
                &r,
                [*operation, *start, *end],
                [*kind, *agent, *queue, *tid, *flags, *size, *corr],
            ),
            Cols::Counter(c) => counter_row(st, &r, c),
            Cols::Ignored => {
                ignored += 1;
                Ok(())
            }
        };
        match result {
            Ok(()) => {}
            Err(RowError::Fatal(e)) => {
                return Err(crate::db::placed(e, path, format!("line {}", raw.line)))
            }
            Err(RowError::Bad(m)) => bad_record(&mut rdr, path, &raw, m, opts, report)?,
        }
    }
    if !kind.is_imported() {
        report.ignored.push(format!(
            "{}: {ignored} {} rows not imported (RocPD v3 has no table for them)",
            path.display(),
            kind.name()
        ));
    }
    Ok(())
}

fn agent_row(st: &mut State<'_>, r: &Rec<'_>) -> std::result::Result<(), RowError> {
    let h = r.header;
    let id = r.int(h.col("node_id").expect("agent_info has node_id"))?;
    let text = |n: &str| {
        let t = r.text(h.col(n));
        let t = t.trim();
        (!t.is_empty()).then(|| t.to_string())
    };
    let agent_type = match text("agent_type")
        .map(|t| t.to_ascii_uppercase())
        .as_deref()
    {
        Some("GPU") => Some("GPU"),
        Some("CPU") => Some("CPU"),
        _ => None,
    };
    let mut ext = serde_json::Map::new();
    for (i, name) in h.names.iter().enumerate() {
        if Some(i) == h.guid {
            continue;
        }
        let t = r.text(Some(i));
        let t = t.trim();
        let v = match t.parse::<i64>() {
            Ok(n) => serde_json::Value::from(n),
            Err(_) => serde_json::Value::from(t),
        };
        ext.insert(name.clone(), v);
    }
    let product = text("product_name");
    st.out.agents().add(
        AgentRow {
            id,
            agent_type,
            absolute_index: Some(id),
            logical_index: r.opt_int(h.col("logical_node_id"))?,
            type_index: r.opt_int(h.col("logical_node_type_id"))?,
            uuid: r.opt_bits(h.col("device_id"))?,
            name: text("name"),
            model_name: text("model_name"),
            vendor_name: text("vendor_name"),
            product_name: product.clone(),
            user_name: product,
            extdata: Some(serde_json::Value::Object(ext).to_string()),
        },
        None,
    );
    Ok(())
}

/// Correlation id 0 means "none" (rocprofv3's ids start at 1).
fn corr_id(c: i64) -> Option<i64> {
    (c != 0).then_some(c)
}

fn api_row(
    st: &mut State<'_>,
    r: &Rec<'_>,
    [domain, function, corr, start, end]: [usize; 5],
    pid: Option<usize>,
    tid: Option<usize>,
) -> std::result::Result<(), RowError> {
    let domain_v = r.text(Some(domain));
    let domain_v = domain_v.trim();
    let function_v = r.text(Some(function));
    let corr = r.int(corr)?;
    let start = r.int(start)?;
    let end = r.int(end)?;
    let pid = r.opt_int(pid)?.unwrap_or(st.pid);
    let tid = r.opt_int(tid)?.unwrap_or(pid);
    let category = if domain_v.is_empty() {
        "NONE"
    } else {
        domain_v
    };
    let marker = crate::db::strip_prefix_ignoring_case(category, "marker").is_some();
    let extdata = marker.then(|| message_extdata(&function_v));
    let name_id = st.out.string(&function_v)?;
    let event_id = st.out.event(&EventRow {
        category,
        stack_id: corr_id(corr),
        parent_stack_id: None,
        correlation_id: None,
        extdata,
    })?;
    st.out
        .region(corr, pid, tid, start, end, name_id, event_id)?;
    Ok(())
}

/// `{"message":"<text>"}`, as serde_json writes it, in one allocation: a marker's
/// extdata, from a CSV row or a JSON record.
pub(crate) fn message_extdata(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len() + 16);
    out.extend_from_slice(b"{\"message\":");
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, text);
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

impl State<'_> {
    /// The kernel id of a row: its `Kernel_Id`, or one synthesized per distinct name; and
    /// the row's name as a region name (its string id) when it names its `Kernel_Id`
    /// otherwise than the first row of that id did (rocprofv3's `--kernel-rename` writes
    /// the enclosing ROCTx range's name there, D146).
    fn kernel_id(
        &mut self,
        explicit: Option<i64>,
        name: &str,
    ) -> std::result::Result<(i64, Option<i64>), RowError> {
        if let Some(id) = explicit {
            // Looked up before inserting: a name is copied once, not for every row.
            let renamed = match self.name_of_kernel.get(&id) {
                Some(first) => first != name,
                None => {
                    self.name_of_kernel.insert(id, name.to_string());
                    false
                }
            };
            if !self.kernel_by_name.contains_key(name) {
                self.kernel_by_name.insert(name.to_string(), id);
            }
            let region = if renamed {
                Some(self.out.string(name)?)
            } else {
                None
            };
            return Ok((id, region));
        }
        if let Some(id) = self.kernel_by_name.get(name) {
            return Ok((*id, None));
        }
        let id = self.next_synth_kernel;
        self.next_synth_kernel += 1;
        self.kernel_by_name.insert(name.to_string(), id);
        Ok((id, None))
    }
}

fn kernel_row(
    st: &mut State<'_>,
    r: &Rec<'_>,
    c: &KernelCols,
) -> std::result::Result<(), RowError> {
    let agent = r
        .agent(Some(c.agent))?
        .ok_or_else(|| "column agent_id: empty".to_string())?;
    let name = r.text(Some(c.kernel_name));
    let explicit_kernel = r.opt_int(c.kernel_id)?;
    let corr = r.int(c.corr)?;
    let start = r.int(c.start)?;
    let end = r.int(c.end)?;
    // Without a Dispatch_Id column (2024-07), dispatches are numbered by record.
    let dispatch_id = match c.dispatch {
        Some(_) => r.int(c.dispatch.expect("column"))?,
        None => st.ordinal,
    };
    let corr = corr_id(corr);
    let tid = r.opt_int(c.tid)?;
    let queue = r.opt_bits(c.queue)?.unwrap_or(0);
    let stream = r.opt_bits(c.stream)?.unwrap_or(0);
    let private = r.opt_int(c.private)?;
    let group = r.opt_int(c.group)?;
    let vgpr = r.opt_int(c.vgpr)?;
    let accum = r.opt_int(c.accum_vgpr)?;
    let sgpr = r.opt_int(c.sgpr)?;
    let mut wg = [0i64; 3];
    let mut grid = [0i64; 3];
    // 0 where the file's generation has no such column; an empty field in a column it
    // has is an error, as rocprofv3 always writes these (a row cut short ends so, D169).
    let size = |col: Option<usize>| col.map_or(Ok(0), |col| r.int(col));
    for i in 0..3 {
        wg[i] = size(c.wg[i])?;
        grid[i] = size(c.grid[i])?;
    }
    let category = r.text(c.kind);
    let category = match category.trim() {
        "" => "KERNEL_DISPATCH",
        k => k,
    };

    let agent_id = st.out.agents().resolve(agent, Some("GPU"));
    let (kernel_id, region_name_id) = st.kernel_id(explicit_kernel, &name)?;
    if !st.out.has_kernel(kernel_id) {
        // One text for both names.
        let name: std::sync::Arc<str> = name.into();
        st.out.kernel_symbol(
            st.pid,
            &KernelSymbolRow {
                id: kernel_id,
                code_object_id: 0,
                kernel_name: Some(name.clone()),
                display_name: Some(name),
                group_segment_size: group,
                private_segment_size: private,
                sgpr_count: sgpr,
                arch_vgpr_count: vgpr,
                accum_vgpr_count: accum,
                ..Default::default()
            },
        )?;
    }
    let event_id = st.out.event(&EventRow {
        category,
        stack_id: corr,
        parent_stack_id: corr,
        correlation_id: None,
        extdata: None,
    })?;
    st.out.dispatch(
        &DispatchRow {
            dispatch_id,
            pid: st.pid,
            tid,
            agent_id,
            kernel_id,
            queue_id: queue,
            stream_id: stream,
            start,
            end,
            private_segment_size: private,
            group_segment_size: group,
            workgroup: wg,
            grid,
            region_name_id,
            extdata: None,
        },
        event_id,
    )?;
    Ok(())
}

/// Agent types implied by a copy direction: (source, destination).
pub(crate) fn copy_types(direction: &str) -> (Option<&'static str>, Option<&'static str>) {
    let d = direction.trim_start_matches("MEMORY_COPY_");
    match d {
        "HOST_TO_DEVICE" => (Some("CPU"), Some("GPU")),
        "DEVICE_TO_HOST" => (Some("GPU"), Some("CPU")),
        "DEVICE_TO_DEVICE" | "PEER_TO_PEER" => (Some("GPU"), Some("GPU")),
        "HOST_TO_HOST" => (Some("CPU"), Some("CPU")),
        _ => (None, None),
    }
}

/// `HOST_TO_DEVICE` (2024-07) and `MEMORY_COPY_HOST_TO_DEVICE` both become the latter.
pub(crate) fn copy_name(direction: &str) -> Cow<'_, str> {
    let d = direction.trim();
    // rocprofv3 writes the full upper-case name: taken as it is, without a copy.
    if d.starts_with("MEMORY_COPY_") && !d.bytes().any(|b| b.is_ascii_lowercase()) {
        return Cow::Borrowed(d);
    }
    let d = d.to_ascii_uppercase();
    if d.starts_with("MEMORY_COPY_") {
        d.into()
    } else if d.is_empty() {
        "MEMORY_COPY_NONE".into()
    } else {
        format!("MEMORY_COPY_{d}").into()
    }
}

fn copy_row(
    st: &mut State<'_>,
    r: &Rec<'_>,
    [direction, src, dst, start, end]: [usize; 5],
    [kind, stream, corr, bytes]: [Option<usize>; 4],
) -> std::result::Result<(), RowError> {
    let direction = r.text(Some(direction));
    let name = copy_name(&direction);
    let src = r.agent(Some(src))?;
    let dst = r.agent(Some(dst))?;
    let start = r.int(start)?;
    let end = r.int(end)?;
    let stream = r.opt_bits(stream)?;
    let corr = r.opt_int(corr)?.and_then(corr_id);
    let size = r.opt_int(bytes)?.unwrap_or(0);
    let category = r.text(kind);
    let category = match category.trim() {
        "" => "MEMORY_COPY",
        k => k,
    };
    let (src_t, dst_t) = copy_types(&name);
    let src_agent_id = src.map(|a| st.out.agents().resolve(a, src_t));
    let dst_agent_id = dst.map(|a| st.out.agents().resolve(a, dst_t));
    let name_id = st.out.string(&name)?;
    let event_id = st.out.event(&EventRow {
        category,
        stack_id: corr,
        parent_stack_id: corr,
        correlation_id: None,
        extdata: None,
    })?;
    st.out.copy(
        &CopyRow {
            pid: st.pid,
            tid: None,
            start,
            end,
            name_id,
            dst_agent_id,
            src_agent_id,
            size,
            stream_id: stream,
            ..Default::default()
        },
        event_id,
    )?;
    Ok(())
}

/// RocPD `type` and `level` of a memory-allocation operation name.
pub(crate) fn alloc_type(op: &str) -> (Option<&'static str>, &'static str) {
    let op = op.trim().to_ascii_uppercase();
    let level = if op.starts_with("SCRATCH") {
        "SCRATCH"
    } else if op.contains("VMEM") {
        "VIRTUAL"
    } else {
        "REAL"
    };
    let kind = if op.contains("REALLOC") {
        Some("REALLOC")
    } else if op.contains("RECLAIM") {
        Some("RECLAIM")
    } else if op.contains("FREE") {
        Some("FREE")
    } else if op.contains("ALLOC") {
        Some("ALLOC")
    } else {
        None
    };
    (kind, level)
}

fn alloc_row(
    st: &mut State<'_>,
    r: &Rec<'_>,
    [operation, start, end]: [usize; 3],
    [kind, agent, size, address, corr]: [Option<usize>; 5],
) -> std::result::Result<(), RowError> {
    let op = r.text(Some(operation)).trim().to_string();
    let agent = r.agent(agent)?;
    let size = r.opt_int(size)?.unwrap_or(0);
    let address = r.opt_bits(address)?;
    let corr = r.opt_int(corr)?.and_then(corr_id);
    let start = r.int(start)?;
    let end = r.int(end)?;
    let category = r.text(kind);
    let category = match category.trim() {
        "" => "MEMORY_ALLOCATION",
        k => k,
    };
    let (ty, level) = alloc_type(&op);
    let agent_id = agent.map(|a| st.out.agents().resolve(a, None));
    let extdata = ty
        .is_none()
        .then(|| serde_json::json!({ "operation": op }).to_string());
    let event_id = st.out.event(&EventRow {
        category,
        stack_id: corr,
        parent_stack_id: corr,
        correlation_id: None,
        extdata: None,
    })?;
    st.out.alloc(
        &AllocRow {
            pid: st.pid,
            tid: None,
            agent_id,
            kind: ty,
            level: Some(level),
            start,
            end,
            address,
            size,
            extdata,
            ..Default::default()
        },
        event_id,
    )?;
    Ok(())
}

fn scratch_row(
    st: &mut State<'_>,
    r: &Rec<'_>,
    [operation, start, end]: [usize; 3],
    [kind, agent, queue, tid, flags, size, corr]: [Option<usize>; 7],
) -> std::result::Result<(), RowError> {
    let op = r.text(Some(operation)).trim().to_string();
    let agent = r.agent(agent)?;
    let queue = r.opt_bits(queue)?;
    let tid = r.opt_int(tid)?;
    let flags = r.text(flags).trim().to_string();
    let size = r.opt_int(size)?.unwrap_or(0);
    let corr = r.opt_int(corr)?.and_then(corr_id);
    let start = r.int(start)?;
    let end = r.int(end)?;
    let category = r.text(kind);
    let category = match category.trim() {
        "" => "SCRATCH_MEMORY",
        k => k,
    };
    let (ty, _) = alloc_type(&op);
    let agent_id = agent.map(|a| st.out.agents().resolve(a, Some("GPU")));
    let flags_v = match parse_int(&flags) {
        Ok(n) => serde_json::Value::from(n),
        Err(_) => serde_json::Value::from(flags),
    };
    let mut ext = serde_json::json!({ "flags": flags_v });
    if ty.is_none() {
        ext["operation"] = serde_json::Value::from(op);
    }
    let event_id = st.out.event(&EventRow {
        category,
        stack_id: corr,
        parent_stack_id: corr,
        correlation_id: None,
        extdata: None,
    })?;
    st.out.alloc(
        &AllocRow {
            pid: st.pid,
            tid,
            agent_id,
            kind: ty,
            level: Some("SCRATCH"),
            start,
            end,
            size,
            queue_id: queue,
            extdata: Some(ext.to_string()),
            ..Default::default()
        },
        event_id,
    )?;
    Ok(())
}

fn counter_row(
    st: &mut State<'_>,
    r: &Rec<'_>,
    c: &CounterCols,
) -> std::result::Result<(), RowError> {
    let dispatch_id = r.int(c.dispatch)?;
    let corr = r.opt_int(c.corr)?.and_then(corr_id);
    let agent = r.agent(c.agent)?;
    let queue = r.opt_bits(c.queue)?;
    let pid = r.opt_int(c.pid)?.unwrap_or(st.pid);
    let tid = r.opt_int(c.tid)?;
    let grid = r.opt_int(c.grid)?;
    let wg = r.opt_int(c.wg)?;
    let explicit_kernel = r.opt_int(c.kernel_id)?;
    let lds = r.opt_int(c.lds)?;
    let scratch = r.opt_int(c.scratch)?;
    let vgpr = r.opt_int(c.vgpr)?;
    let accum = r.opt_int(c.accum_vgpr)?;
    let sgpr = r.opt_int(c.sgpr)?;
    let counter = r.text(Some(c.name));
    let counter = counter.trim();
    let value = r.float(c.value)?;
    let start = r.opt_int(c.start)?;
    let end = r.opt_int(c.end)?;

    let agent_id = agent.map(|a| st.out.agents().resolve(a, Some("GPU")));
    let agent_key = agent_id.unwrap_or(-1);
    // Looked up by reference: a counter file has a row per (dispatch, counter).
    let known = st
        .pmcs
        .get(&agent_key)
        .and_then(|names| names.get(counter))
        .copied();
    let pmc_id = match known {
        Some(id) => id,
        None => {
            st.pmc_count += 1;
            let id = st.pmc_count;
            st.pmcs
                .entry(agent_key)
                .or_default()
                .insert(counter.to_string(), id);
            st.out.pmc(
                pid,
                &PmcRow {
                    id,
                    agent_id,
                    target_arch: Some("GPU"),
                    name: counter.to_string(),
                    ..Default::default()
                },
            )?;
            id
        }
    };

    let event_id = match st.out.find_dispatch(dispatch_id)? {
        Some(crate::db::FoundDispatch {
            event_id: Some(event_id),
            tid: found_tid,
            ..
        }) => {
            // Kernel traces of 2024-07 have no Thread_Id; the counter rows do.
            if let (None, Some(t)) = (found_tid, tid) {
                st.out.set_dispatch_tid(dispatch_id, pid, t)?;
            }
            event_id
        }
        _ => match st.out.untimed_event(dispatch_id)? {
            Some(e) => e,
            None => {
                // The kernel trace lacks this dispatch: make it from the counter row.
                let kernel_name = r.text(c.kernel_name);
                let (kernel_id, region_name_id) = st.kernel_id(explicit_kernel, &kernel_name)?;
                if !st.out.has_kernel(kernel_id) {
                    let name: std::sync::Arc<str> = kernel_name.into();
                    st.out.kernel_symbol(
                        pid,
                        &KernelSymbolRow {
                            id: kernel_id,
                            code_object_id: 0,
                            kernel_name: Some(name.clone()),
                            display_name: Some(name),
                            group_segment_size: lds,
                            private_segment_size: scratch,
                            sgpr_count: sgpr,
                            arch_vgpr_count: vgpr,
                            accum_vgpr_count: accum,
                            ..Default::default()
                        },
                    )?;
                }
                let event_id = st.out.event(&EventRow {
                    category: "KERNEL_DISPATCH",
                    stack_id: corr,
                    parent_stack_id: corr,
                    correlation_id: None,
                    extdata: None,
                })?;
                match (start, end, agent_id) {
                    (Some(start), Some(end), Some(agent_id)) => st.out.dispatch(
                        &DispatchRow {
                            dispatch_id,
                            pid,
                            tid,
                            agent_id,
                            kernel_id,
                            queue_id: queue.unwrap_or(0),
                            stream_id: 0,
                            start,
                            end,
                            private_segment_size: scratch,
                            group_segment_size: lds,
                            workgroup: [wg.unwrap_or(0), 1, 1],
                            grid: [grid.unwrap_or(0), 1, 1],
                            region_name_id,
                            extdata: Some(r#"{"from":"counter_collection"}"#.into()),
                        },
                        event_id,
                    )?,
                    // Without timestamps (2024 generations) there is no time to place a
                    // dispatch at: the values stay attached to an event only.
                    _ => {
                        st.out.thread(pid, tid);
                        st.out.remember_untimed(dispatch_id, event_id)?
                    }
                }
                event_id
            }
        },
    };
    st.out.pmc_event(event_id, pmc_id, value)?;
    Ok(())
}

/// The distinct values of the guid column of a `rocpd convert` CSV, in first-seen order
/// (empty when the file has no guid column).
pub(crate) fn distinct_guids(path: &Path) -> Result<Vec<String>> {
    let (mut rdr, header) = open_with_header(path)?;
    let Some(gc) = header.as_ref().and_then(|h| h.guid) else {
        return Ok(Vec::new());
    };
    let header = header.expect("a header");
    let mut seen: Vec<String> = Vec::new();
    let mut rec = ByteRecord::new();
    while let Some(raw) = next_record(&mut rdr, &mut rec, path)? {
        if unusable(&raw, &rec, &header) {
            // The import reports it; the lines after its first may hold other guids.
            if raw.lines > 1 {
                let _ = rdr.resync();
            }
            continue;
        }
        if let Some(g) = rec.get(gc) {
            let g = String::from_utf8_lossy(g);
            let g = g.trim();
            if !g.is_empty() && !seen.iter().any(|s| s == g) {
                seen.push(g.to_string());
            }
        }
    }
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A marker row's extdata is what `serde_json::json!` wrote before.
    #[test]
    fn message_extdata_is_what_serde_json_writes() {
        for text in [
            "",
            "plain",
            "quote \" back \\ slash",
            "tab\tnew\nline\u{1}",
            "é ✓ 😀",
        ] {
            assert_eq!(
                message_extdata(text),
                serde_json::json!({ "message": text }).to_string()
            );
        }
    }

    /// The fast path takes plain decimals only, and agrees with `parse_int` on them.
    #[test]
    fn plain_decimals_read_as_parse_int_reads_them() {
        for text in [
            "0",
            "-0",
            "7",
            "-42",
            "123456789012345678",
            "-999999999999999999",
        ] {
            assert_eq!(
                plain_decimal(text.as_bytes()),
                parse_int(text).ok(),
                "{text}"
            );
        }
        for text in [
            "",
            "-",
            "+5",
            " 5",
            "5 ",
            "1234567890123456789",
            "9223372036854775808",
            "3.0",
            "0x10",
            "1e3",
            "٣",
        ] {
            assert_eq!(plain_decimal(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn kinds_by_header() {
        let k = |l: &str| kind_of_header(l);
        assert_eq!(
            k(
                r#""Kind","Agent_Id","Queue_Id","Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp""#
            ),
            Some(CsvKind::KernelTrace)
        );
        assert_eq!(
            k(
                r#""Guid","Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp""#
            ),
            Some(CsvKind::Api)
        );
        assert_eq!(
            k(
                r#""Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev""#
            ),
            Some(CsvKind::Stats)
        );
        // rocprof v1 and rocprof-compute files are not rocprofv3.
        assert_eq!(
            k(
                r#""Index","KernelName","gpu-id","queue-id","queue-index","pid","tid","grd","wgr","lds","scr","arch_vgpr","accum_vgpr","sgpr","wave_size","sig","obj","DispatchNs","BeginNs","EndNs","CompleteNs","DurationNs""#
            ),
            None
        );
        assert_eq!(
            k("Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,Workgroup_Size,Kernel_Name,Start_Timestamp,End_Timestamp,Correlation_ID"),
            None
        );
        assert_eq!(k("a,b,c"), None);
    }

    #[test]
    fn numbers_and_agents() {
        assert_eq!(parse_int("42"), Ok(42));
        assert_eq!(parse_int("0x00007ffb26354000"), Ok(0x7ffb26354000));
        assert_eq!(parse_int("3564.000000"), Ok(3564));
        assert_eq!(parse_int("1.5"), Err(IntError::NotInt));
        assert_eq!(parse_int("x"), Err(IntError::NotInt));
        // Nothing wraps or saturates.
        assert_eq!(parse_int("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(parse_int("-9223372036854775808"), Ok(i64::MIN));
        for t in [
            "9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "-9223372036854775809.0",
            "0x8000000000000000",
            "0x10000000000000000",
            "9.25e18",
            "-9.3e18",
            "1e400",
        ] {
            assert_eq!(parse_int(t), Err(IntError::OutOfRange), "{t}");
        }
        assert_eq!(parse_int("9.2e18"), Ok(9_200_000_000_000_000_000));
        // Opaque 64-bit values keep their bits.
        assert_eq!(parse_bits("18446744073709551615"), Ok(-1));
        assert_eq!(parse_bits("0xffffffffffffffff"), Ok(-1));
        assert_eq!(
            parse_bits("18446744073709551616"),
            Err(IntError::OutOfRange)
        );
        assert_eq!(AgentRef::parse("Agent 4"), Ok(Some(AgentRef::Logical(4))));
        assert_eq!(
            AgentRef::parse("GPU 1"),
            Ok(Some(AgentRef::Typed("GPU", 1)))
        );
        assert_eq!(AgentRef::parse("2"), Ok(Some(AgentRef::Bare(2))));
        assert_eq!(AgentRef::parse(""), Ok(None));
        assert!(AgentRef::parse("Agent x").is_err());
        // Prefixes in any case, the number after spaces; other words are bare numbers.
        assert_eq!(AgentRef::parse(" aGeNt 4 "), Ok(Some(AgentRef::Logical(4))));
        assert_eq!(AgentRef::parse("gpu3"), Ok(Some(AgentRef::Typed("GPU", 3))));
        assert_eq!(
            AgentRef::parse("Cpu 0"),
            Ok(Some(AgentRef::Typed("CPU", 0)))
        );
        assert!(AgentRef::parse("Agen 4").is_err());
        assert!(AgentRef::parse("é4").is_err());
        assert_eq!(copy_name("HOST_TO_DEVICE"), "MEMORY_COPY_HOST_TO_DEVICE");
        assert_eq!(
            copy_name("MEMORY_COPY_DEVICE_TO_HOST"),
            "MEMORY_COPY_DEVICE_TO_HOST"
        );
        assert!(matches!(
            copy_name(" MEMORY_COPY_DEVICE_TO_HOST "),
            Cow::Borrowed("MEMORY_COPY_DEVICE_TO_HOST")
        ));
        assert_eq!(
            copy_name("memory_copy_host_to_host"),
            "MEMORY_COPY_HOST_TO_HOST"
        );
        assert_eq!(copy_name("Memory_Copy_X"), "MEMORY_COPY_X");
        assert_eq!(copy_name("  "), "MEMORY_COPY_NONE");
        assert_eq!(copy_name("peer_to_peer"), "MEMORY_COPY_PEER_TO_PEER");
        assert_eq!(
            alloc_type("MEMORY_ALLOCATION_VMEM_FREE"),
            (Some("FREE"), "VIRTUAL")
        );
        assert_eq!(
            alloc_type("SCRATCH_MEMORY_ASYNC_RECLAIM"),
            (Some("RECLAIM"), "SCRATCH")
        );
    }

    #[test]
    fn hostnames_from_layout() {
        assert_eq!(
            layout_hostname(Path::new("/x/node-01"), "1234_"),
            Some("node-01".into())
        );
        assert_eq!(layout_hostname(Path::new("/x/node-01"), "decode_"), None);
        assert_eq!(layout_hostname(Path::new("/x/123"), "1234_"), None);
    }
}
