//! rocprofv3 `*_results.json` (also gzip-compressed): a streaming import of one
//! per-process object of the `rocprofiler-sdk-tool` array.
//!
//! The document is walked with serde visitors over `serde_json::Deserializer::from_reader`:
//! the top-level object, the process array and the sections of the selected process are
//! visited key by key; array elements (agents, kernel symbols, records, ...) are parsed one
//! at a time into a small `serde_json::Value`, written to the database and dropped. Nothing
//! holds the whole document. Other processes' objects and unused sections are skipped with
//! `IgnoredAny`.
//!
//! Records need the `strings` tables (kind/operation names) and the `agents` (handles →
//! node ids). rocprofv3 writes both before the records; if a file puts records first, the
//! sink keeps them raw (the database writer in a temporary table) and they are read once
//! the object has been. Rows go to a [`RowSink`]: the database writer for the import, the
//! direct reader's passes otherwise, which read only some sections ([`Wanted`]) and skip
//! the rest unparsed.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocpd_model::tracked::{ReadLimit, TrackedReader};
use rocpd_model::{Error, Result};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::csv_import::{float_to_i64, parse_bits, parse_int, IntError};
use crate::db::{
    AgentRow, AllocRow, CodeObjectRow, CopyRow, DispatchRow, EventRow, KernelSymbolRow, NodeRow,
    Out, PmcRow, ProcessRow,
};
use crate::json_node::{Node, Shape};
use crate::json_scan::{Scan, ScanError, MAX_VALUE, TOO_LARGE};
use crate::sink::{RowSink, Texts};
use crate::{skip_or_fail, skip_or_fail_at, CsvKind, ImportOptions, ImportReport};

const TOOL_KEY: &str = "rocprofiler-sdk-tool";

/// Whether `bytes` start (after whitespace) with `{` and name the rocprofv3 key early.
pub(crate) fn looks_like_json(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    match start {
        Some(i) if bytes[i] == b'{' => {
            let window = &bytes[i..bytes.len().min(i + 4096)];
            let key = format!("\"{TOOL_KEY}\"");
            window.windows(key.len()).any(|w| w == key.as_bytes())
        }
        _ => false,
    }
}

/// Decompresses as much of a gzip prefix as possible (at most `max` bytes).
pub(crate) fn gunzip_prefix(head: &[u8], max: usize) -> Vec<u8> {
    // Every member, as the reads take them: a first member of a few bytes (or none)
    // must not hide the text after it.
    let mut d = crate::gzip::GzMembers::new(head);
    let mut out = vec![0u8; max];
    let mut n = 0;
    while n < max {
        match d.read(&mut out[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    out.truncate(n);
    out
}

/// An opened JSON file: the (decompressed) text behind a buffer that counts what the
/// parser consumed, and whether it is compressed.
struct Opened {
    reader: TrackedReader<Box<dyn Read>>,
    /// The bound serde's reads keep on each value they build ([`bounded`]).
    limit: ReadLimit,
    gz: bool,
    /// Length of the byte-order mark skipped at the start (0 or 3).
    bom: u64,
}

impl Opened {
    /// Bytes of the (decompressed) text the parser has consumed, the BOM included.
    fn consumed(&self) -> u64 {
        self.bom + self.reader.consumed()
    }
}

/// Opens a JSON file, decompressing gzip input.
fn open(path: &Path) -> Result<Opened> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::input(path, "open", e.to_string()))?;
    let mut magic = [0u8; 2];
    let n = f
        .read(&mut magic)
        .map_err(|e| Error::input(path, "byte 0", e.to_string()))?;
    drop(f);
    let f = std::fs::File::open(path).map_err(|e| Error::input(path, "open", e.to_string()))?;
    let gz = n == 2 && magic == [0x1f, 0x8b];
    let inner: Box<dyn Read> = if gz {
        Box::new(crate::gzip::GzMembers::new(BufReader::with_capacity(
            1 << 16,
            f,
        )))
    } else {
        Box::new(f)
    };
    // A UTF-8 byte-order mark (also inside gzip data) is skipped; byte offsets in messages
    // still count it.
    let mut inner = inner;
    let mut lead = Vec::with_capacity(3);
    (&mut inner).take(3).read_to_end(&mut lead).map_err(|e| {
        let place = if gz {
            "byte offset 0 of the decompressed data"
        } else {
            "byte offset 0"
        };
        Error::input(path, place, read_message(gz, &e))
    })?;
    let bom = if lead == b"\xef\xbb\xbf" {
        lead.clear();
        3
    } else {
        0
    };
    let chained: Box<dyn Read> = Box::new(std::io::Cursor::new(lead).chain(inner));
    let limit = ReadLimit::default();
    Ok(Opened {
        reader: TrackedReader::new(chained).with_limit(limit.clone()),
        limit,
        gz,
        bom,
    })
}

fn read_message(gz: bool, e: &std::io::Error) -> String {
    if gz {
        format!("truncated or corrupt gzip data: {e}")
    } else {
        format!("read error: {e}")
    }
}

/// One value read by serde's reader (a record, a table entry, a key, the metadata),
/// bounded to [`MAX_VALUE`] bytes as the scanner bounds each value it keeps: what it
/// builds costs several times the text, so one giant string must not be read whole.
fn bounded<T>(limit: &ReadLimit, read: impl FnOnce() -> T) -> T {
    // The reader holds the bound give or take one buffer and counts the separator and
    // whitespace before the value: two buffers more, so that nothing the scanner takes
    // is refused here (the scanner's refusal is final, D147).
    limit.bounded(MAX_VALUE as u64 + (128 << 10), read)
}

/// Turns a parser error into an input error at the current byte offset.
fn parse_error(input: &Opened, path: &Path, within: &str, e: &serde_json::Error) -> Error {
    let (gz, offset) = (input.gz, input.consumed());
    let of = if gz { " of the decompressed data" } else { "" };
    // For a syntax error, the offending byte is the last one consumed.
    let offset = if e.is_syntax() {
        offset.saturating_sub(1)
    } else {
        offset
    };
    // An error of the reader, not of the text, has no line (serde says line 0).
    let line = if e.line() > 0 {
        format!(" (line {}, column {})", e.line(), e.column())
    } else {
        String::new()
    };
    let place = format!("byte offset {offset}{of}{line}{within}");
    let (is_io, is_eof) = (e.is_io(), e.is_eof());
    // serde's message ends with the place the message already starts with.
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let e = text.strip_suffix(&suffix).unwrap_or(&text);
    let msg = if is_io && input.limit.tripped() {
        TOO_LARGE.to_string()
    } else if is_io {
        if gz {
            format!("truncated or corrupt gzip data: {e}")
        } else {
            format!("read error: {e}")
        }
    } else if is_eof {
        format!("the JSON document ends early (truncated file?): {e}")
    } else {
        format!("invalid JSON: {e}")
    };
    Error::input(path, place, msg)
}

/// What the pre-scan learns about each per-process object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProcMeta {
    pub pid: Option<i64>,
    pub init_time: Option<i64>,
    /// [`process_identity`] of the object's `metadata`.
    pub identity: Option<[u64; 2]>,
}

impl ProcMeta {
    /// What the pre-scans read of a process object's `metadata` value.
    fn of_metadata(v: &Value) -> Self {
        ProcMeta {
            pid: opt(v, "pid").ok().flatten(),
            init_time: opt(v, "init_time").ok().flatten(),
            identity: process_identity(v),
        }
    }
}

/// Two hashes of a process object's whole `metadata` value (pid, start and end times,
/// node, command line, ...) as serde_json writes it back, keys in order: the same for a
/// copy of the file, gzipped or not, renamed, or reformatted, and so what the run's guid
/// is made of (D167). `None` when the metadata names neither a pid nor a start time:
/// then it does not tell processes apart.
fn process_identity(v: &Value) -> Option<[u64; 2]> {
    use rocpd_model::hash::{fnv1a64, FNV_OFFSET, FNV_OFFSET_2};
    let named = ["pid", "init_time"]
        .iter()
        .any(|k| opt(v, k).ok().flatten().is_some());
    if !named {
        return None;
    }
    let text = v.to_string();
    Some([
        fnv1a64(text.as_bytes(), FNV_OFFSET),
        fnv1a64(text.as_bytes(), FNV_OFFSET_2),
    ])
}

/// What the pre-scan of a JSON file learns: each per-process object's metadata, and
/// where the file's large values lie.
#[derive(Debug, Default)]
pub(crate) struct Prescanned {
    pub procs: Vec<ProcMeta>,
    pub places: crate::JsonPlaces,
}

/// Counts the per-process objects of a JSON file (one streaming pass) and reads each
/// object's `metadata.pid` and `metadata.init_time`: through the byte-level scanner, and
/// again through serde when the scanner finds something wrong, so errors name their place
/// as the import's do.
///
/// The pass has to go over the whole file, so it also notes where the values a later read
/// may jump over lie, as that read would note them ([`JUMP_MIN`]): the document's other
/// members, the process objects, their members and the members of their objects (the
/// record sections, `strings`). The describing pass then jumps over what it does not
/// parse instead of scanning it again (D136).
pub(crate) fn prescan(path: &Path) -> Result<Prescanned> {
    let mut opened = Some(open(path)?);
    // A gzip stream cannot seek: its reads scan, and its pre-scan notes nothing.
    let plain = opened.as_ref().is_some_and(|input| !input.gz);
    for descend in [plain, false] {
        // The pass without the descent, after the descent failed, opens the file again.
        let input = match opened.take() {
            Some(input) => input,
            None => open(path)?,
        };
        let mut scan = Scan::new(input.reader.into_inner());
        let mut spans = Vec::new();
        let noting = Noting {
            spans: &mut spans,
            descend,
        };
        match prescan_fast(&mut scan, noting) {
            Ok(Some(procs)) => {
                let places = if descend {
                    crate::JsonPlaces::of_file(path, spans)
                } else {
                    crate::JsonPlaces::default()
                };
                return Ok(Prescanned { procs, places });
            }
            // What the descent could not read (bad JSON that brace counting passes
            // over) is the strict read's to report: the pass without the descent skips
            // as before, and failing that, serde names the place.
            _ if descend => {}
            Ok(None) | Err(_) => break,
        }
    }
    Ok(Prescanned {
        procs: prescan_strict(path)?,
        places: crate::JsonPlaces::default(),
    })
}

/// Where the pre-scan notes the places of large values, and whether it looks into the
/// objects of a process object.
struct Noting<'a> {
    spans: &'a mut Vec<(u64, u64)>,
    descend: bool,
}

impl Noting<'_> {
    /// Skips the value at the cursor, noting its place when it is large.
    fn skip<R: Read>(&mut self, s: &mut Scan<R>) -> crate::json_scan::ScanResult<()> {
        let at = s.start()?;
        s.skip(false)?;
        self.note(at, s.offset());
        Ok(())
    }

    fn note(&mut self, start: u64, end: u64) {
        note_span(self.spans, start, end);
    }

    /// A process object's member: an object's members one by one, else the whole value.
    fn member<R: Read>(&mut self, s: &mut Scan<R>) -> crate::json_scan::ScanResult<()> {
        if !self.descend || s.peek()? != Some(b'{') {
            return self.skip(s);
        }
        let at = s.start()?;
        if s.open(b'{', b'}')? {
            loop {
                s.key()?;
                self.skip(s)?;
                if !s.more(b'}')? {
                    break;
                }
            }
        }
        self.note(at, s.offset());
        Ok(())
    }
}

/// The scanner's pre-scan; `None` when the document is not what it expects.
fn prescan_fast<R: Read>(
    s: &mut Scan<R>,
    mut noting: Noting<'_>,
) -> crate::json_scan::ScanResult<Option<Vec<ProcMeta>>> {
    let mut raw = Vec::new();
    let mut found = None;
    if !s.open(b'{', b'}')? {
        return Ok(None);
    }
    loop {
        if s.key()? == TOOL_KEY {
            // Given twice, the key is the strict pre-scan's to refuse, with its place.
            if s.peek()? != Some(b'[') || found.is_some() {
                return Ok(None);
            }
            let mut metas = Vec::new();
            if s.open(b'[', b']')? {
                loop {
                    if s.peek()? != Some(b'{') {
                        return Ok(None);
                    }
                    let mut m = ProcMeta::default();
                    let object = s.start()?;
                    if s.open(b'{', b'}')? {
                        loop {
                            if s.key()? == "metadata" {
                                let v: Value = s.parse(&mut raw)?;
                                m = ProcMeta::of_metadata(&v);
                            } else {
                                noting.member(s)?;
                            }
                            if !s.more(b'}')? {
                                break;
                            }
                        }
                    }
                    noting.note(object, s.offset());
                    metas.push(m);
                    if !s.more(b']')? {
                        break;
                    }
                }
            }
            found = Some(metas);
        } else {
            noting.skip(s)?;
        }
        if !s.more(b'}')? {
            break;
        }
    }
    Ok(if s.at_end()? { found } else { None })
}

fn prescan_strict(path: &Path) -> Result<Vec<ProcMeta>> {
    struct Top<'l>(&'l ReadLimit);
    impl<'de> Visitor<'de> for Top<'_> {
        type Value = Option<Vec<ProcMeta>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "a JSON object with a {TOOL_KEY:?} array")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(key) = bounded(self.0, || map.next_key::<String>())? {
                if key == TOOL_KEY {
                    // The readers take object i of every occurrence: two arrays would be
                    // read as one, processes merged or lost.
                    if found.is_some() {
                        return Err(de::Error::custom(format!(
                            "the {TOOL_KEY:?} key is given twice (its arrays of processes \
                             cannot be told apart)"
                        )));
                    }
                    found = Some(map.next_value_seed(ListSeed(self.0))?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    struct ListSeed<'l>(&'l ReadLimit);
    impl<'de> DeserializeSeed<'de> for ListSeed<'_> {
        type Value = Vec<ProcMeta>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de> Visitor<'de> for ListSeed<'_> {
        type Value = Vec<ProcMeta>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "an array of per-process objects")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut v = Vec::new();
            while let Some(m) = seq.next_element_seed(MetaSeed(self.0))? {
                v.push(m);
            }
            Ok(v)
        }
    }
    struct MetaSeed<'l>(&'l ReadLimit);
    impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
        type Value = ProcMeta;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for MetaSeed<'_> {
        type Value = ProcMeta;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "a per-process object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut m = ProcMeta::default();
            while let Some(key) = bounded(self.0, || map.next_key::<String>())? {
                if key == "metadata" {
                    // Only for labels and the guid: the import checks the values.
                    let v: Value = bounded(self.0, || map.next_value())?;
                    m = ProcMeta::of_metadata(&v);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(m)
        }
    }

    let mut input = open(path)?;
    let r = {
        let mut de = serde_json::Deserializer::from_reader(&mut input.reader);
        de.deserialize_map(Top(&input.limit))
            .and_then(|v| de.end().map(|_| v))
    };
    match r {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(Error::input(
            path,
            "top level",
            format!("no {TOOL_KEY:?} key: not a rocprofv3 JSON file"),
        )),
        Err(e) => Err(parse_error(&input, path, "", &e)),
    }
}

/// The range of the column a JSON integer goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    /// Timestamps, ids, sizes, counts: signed 64-bit; anything beyond is refused.
    I64,
    /// Opaque 64-bit patterns (raw handles, addresses, hashes, device uuids): values up to
    /// `u64::MAX` are stored as the two's-complement `i64` of the same bits.
    Bits,
    /// Yes/no flags stored as integers (a counter's `is_constant`, `is_derived`): a
    /// boolean is taken as 1 or 0 here, and nowhere else.
    Flag,
}

use rocpd_model::describe_json as describe;

/// A JSON integer: a number, a `{"handle": n}` object, a decimal / `0x` string, or for a
/// [`Range::Flag`] a bool; `null` and `""` are no value. A value outside `range` is an
/// error (nothing wraps or saturates, except that [`Range::Bits`] takes unsigned 64-bit
/// patterns). A bool where a time, id, size or handle belongs is refused: `true` is no
/// timestamp (D168).
fn int_value<N: Node>(x: &N, range: Range) -> std::result::Result<Option<i64>, String> {
    let out_of_range = |t: String| {
        format!(
            "{t} is out of range ({})",
            match range {
                Range::I64 => "timestamps, ids and sizes are signed 64-bit integers",
                Range::Flag => "the field holds a signed 64-bit integer",
                Range::Bits => "the field holds 64-bit values",
            }
        )
    };
    match x.shape() {
        Shape::Null => Ok(None),
        Shape::Bool(b) if range == Range::Flag => Ok(Some(i64::from(b))),
        Shape::Bool(b) => Err(format!("expected an integer, found {b}")),
        Shape::Number(n) => {
            if let Some(i) = n.as_i64() {
                return Ok(Some(i));
            }
            if let Some(u) = n.as_u64() {
                return match range {
                    Range::Bits => Ok(Some(u as i64)),
                    Range::I64 | Range::Flag => Err(out_of_range(n.to_string())),
                };
            }
            match float_to_i64(n.as_f64()) {
                Ok(i) => Ok(Some(i)),
                Err(IntError::OutOfRange) => Err(out_of_range(n.to_string())),
                Err(IntError::NotInt) => Err(format!("expected an integer, found {n}")),
            }
        }
        Shape::Str(s) => {
            if s.trim().is_empty() {
                return Ok(None);
            }
            let parsed = match range {
                Range::I64 | Range::Flag => parse_int(s),
                Range::Bits => parse_bits(s),
            };
            match parsed {
                Ok(i) => Ok(Some(i)),
                Err(IntError::OutOfRange) => Err(out_of_range(format!("{:?}", s.trim()))),
                Err(IntError::NotInt) => Err(format!(
                    "expected an integer, found {}",
                    describe(&x.to_value())
                )),
            }
        }
        Shape::Object => match x.get("handle") {
            Some(h) => int_value(h, range),
            None => Err(
                "expected an integer or a {\"handle\": n} object, found an object without \"handle\""
                    .into(),
            ),
        },
        Shape::Array(_) => Err("expected an integer, found an array".into()),
    }
}

/// The value at `v[path[0]][path[1]]...`; an absent key or a `null` on the way is `None`,
/// anything else that is not an object on the way is an error.
fn at_checked<'v, N: Node>(v: &'v N, path: &[&str]) -> std::result::Result<Option<&'v N>, String> {
    let mut cur = v;
    for (i, k) in path.iter().enumerate() {
        match cur.shape() {
            Shape::Object => match cur.get(k) {
                Some(x) => cur = x,
                None => return Ok(None),
            },
            Shape::Null if i > 0 => return Ok(None),
            _ => {
                let what = if i == 0 {
                    "the record".to_string()
                } else {
                    format!("field {}", path[..i].join("."))
                };
                return Err(format!(
                    "{what}: expected an object, found {}",
                    describe(&cur.to_value())
                ));
            }
        }
    }
    Ok(Some(cur))
}

/// The integer at `v[path...]` (see [`int_value`]).
fn field_int<N: Node>(
    v: &N,
    path: &[&str],
    range: Range,
) -> std::result::Result<Option<i64>, RecError> {
    match at_checked(v, path).map_err(bad)? {
        None => Ok(None),
        Some(x) => int_value(x, range).map_err(|m| bad(format!("field {}: {m}", path.join(".")))),
    }
}

/// An optional signed 64-bit field.
fn opt<N: Node>(v: &N, key: &str) -> std::result::Result<Option<i64>, RecError> {
    field_int(v, &[key], Range::I64)
}

/// An optional yes/no field stored as an integer ([`Range::Flag`]).
fn opt_flag<N: Node>(v: &N, key: &str) -> std::result::Result<Option<i64>, RecError> {
    field_int(v, &[key], Range::Flag)
}

/// An optional 64-bit pattern field (handle, address, hash).
fn opt_bits<N: Node>(v: &N, key: &str) -> std::result::Result<Option<i64>, RecError> {
    field_int(v, &[key], Range::Bits)
}

/// An object field (`None` when absent or `null`); any other type is an error.
fn opt_object<'v, N: Node>(v: &'v N, key: &str) -> std::result::Result<Option<&'v N>, RecError> {
    match v.get(key) {
        None => Ok(None),
        Some(o) => match o.shape() {
            Shape::Null => Ok(None),
            Shape::Object => Ok(Some(o)),
            _ => Err(bad(format!(
                "field {key}: expected an object, found {}",
                describe(&o.to_value())
            ))),
        },
    }
}

fn text<N: Node>(v: Option<&N>) -> Option<String> {
    let v = v?;
    match v.shape() {
        Shape::Str(s) => Some(s.to_owned()),
        Shape::Null => None,
        _ => Some(v.to_json()),
    }
}

/// The smallest value a later read jumps over instead of scanning it: below it, the
/// reopened file would cost more than the scan.
const JUMP_MIN: u64 = 1 << 20;

/// Notes the value at `start..end` in `spans` if it is large enough to be worth a jump.
fn note_span(spans: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    if end.saturating_sub(start) >= JUMP_MIN {
        spans.push((start, end));
    }
}

/// Kind and operation names from `strings.buffer_records`.
#[derive(Debug, Clone, serde::Deserialize)]
struct KindNames {
    kind: String,
    #[serde(default)]
    operations: Vec<String>,
}

/// What a record section holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Agents,
    Counters,
    CodeObjects,
    KernelSymbols,
    MarkerStrings,
    ExternalStrings,
    /// `buffer_records.kernel_dispatch`
    Dispatch,
    /// API records (`hip_api`, `hsa_api`, `marker_api`, ...)
    Api,
    Copy,
    Alloc,
    Scratch,
    /// `callback_records.counter_collection`
    Counter,
    /// Records with no RocPD v3 table (PC samples, KFD events, ...): counted.
    Ignored,
}

impl Section {
    fn of_record(name: &str) -> Section {
        match name {
            "kernel_dispatch" => Section::Dispatch,
            "hip_api" | "hsa_api" | "marker_api" | "rccl_api" | "rocdecode_api" | "rocjpeg_api"
            | "hipfile_api" | "rocshmem_api" | "ompt" | "openmp" => Section::Api,
            "memory_copy" => Section::Copy,
            "memory_allocation" => Section::Alloc,
            "scratch_memory" => Section::Scratch,
            "counter_collection" => Section::Counter,
            _ => Section::Ignored,
        }
    }

    fn needs_agents(self) -> bool {
        !matches!(
            self,
            Section::Agents
                | Section::KernelSymbols
                | Section::MarkerStrings
                | Section::ExternalStrings
                | Section::Ignored
        )
    }

    fn needs_strings(self) -> bool {
        matches!(
            self,
            Section::Dispatch | Section::Api | Section::Copy | Section::Alloc | Section::Scratch
        )
    }

    /// Rows that carry the process (and node) of `metadata`: all but the agents and texts.
    fn needs_metadata(self) -> bool {
        !matches!(
            self,
            Section::Agents | Section::MarkerStrings | Section::ExternalStrings | Section::Ignored
        )
    }

    /// Counter records name counters of the `counters` table (one they do not find is
    /// made up, "counter N", and the table's row for it would be lost).
    fn needs_counters(self) -> bool {
        self == Section::Counter
    }

    /// A table a record section may wait for (the others never wait).
    fn is_table(self) -> bool {
        matches!(
            self,
            Section::Counters | Section::CodeObjects | Section::KernelSymbols
        )
    }

    fn code(self) -> &'static str {
        match self {
            Section::Agents => "agents",
            Section::Counters => "counters",
            Section::CodeObjects => "code_objects",
            Section::KernelSymbols => "kernel_symbols",
            Section::MarkerStrings => "marker_strings",
            Section::ExternalStrings => "external_strings",
            Section::Dispatch => "dispatch",
            Section::Api => "api",
            Section::Copy => "copy",
            Section::Alloc => "alloc",
            Section::Scratch => "scratch",
            Section::Counter => "counter",
            Section::Ignored => "ignored",
        }
    }

    fn from_code(c: &str) -> Section {
        [
            Section::Agents,
            Section::Counters,
            Section::CodeObjects,
            Section::KernelSymbols,
            Section::MarkerStrings,
            Section::ExternalStrings,
            Section::Dispatch,
            Section::Api,
            Section::Copy,
            Section::Alloc,
            Section::Scratch,
            Section::Counter,
        ]
        .into_iter()
        .find(|s| s.code() == c)
        .unwrap_or(Section::Ignored)
    }
}

impl Section {
    /// The CSV file kind whose rows the section's records make (for [`Wanted`] and
    /// [`RowSink::begin_file`]); sections without rows are `Stats`, not imported.
    fn kind(self) -> CsvKind {
        match self {
            Section::Dispatch => CsvKind::KernelTrace,
            Section::Api => CsvKind::Api,
            Section::Copy => CsvKind::MemoryCopy,
            Section::Alloc => CsvKind::MemoryAllocation,
            Section::Scratch => CsvKind::ScratchMemory,
            Section::Counter => CsvKind::CounterCollection,
            _ => CsvKind::Stats,
        }
    }
}

/// A set of [`CsvKind`]s: the record sections a read takes, made from a list in a
/// constant or as the union of several tables' sections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Kinds(u16);

impl Kinds {
    pub const fn of(kinds: &[CsvKind]) -> Kinds {
        let mut bits = 0u16;
        let mut i = 0;
        while i < kinds.len() {
            bits |= 1 << kinds[i] as u16;
            i += 1;
        }
        Kinds(bits)
    }

    pub fn contains(self, kind: CsvKind) -> bool {
        self.0 & (1 << kind as u16) != 0
    }

    pub fn union(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }
}

/// Which parts of a per-process object a read takes. The rest is skipped without being
/// built into values; `metadata` and the kind and operation names are always read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted {
    /// The record sections whose records make rows of these kinds (sections without
    /// rows are `Stats`); `None` for all.
    pub records: Option<Kinds>,
    /// Agents, counters, code objects and kernel symbols (agents skipped are taken as
    /// known: the sink has them from an earlier read).
    pub catalog: bool,
    /// `strings.marker_api`: marker messages.
    pub marker_texts: bool,
    /// `strings.correlation_id`: region names of kernels and copies.
    pub external_texts: bool,
    /// Record sections of these kinds are parsed, and so checked, by a later read of the
    /// same object: a strict read skips them without checking them.
    pub parsed_later: &'static [CsvKind],
    /// Record sections (bit `n`: the object's `n`th, skipped ones counted) this read
    /// passes over although their kind is wanted: a describing read found that they make
    /// no rows for it. Sections from the 64th on are never passed over this way.
    pub passed: u64,
    /// Counter records this read does not take made dispatches: its kernel records look
    /// for them, as they do after counter records read in the same read.
    pub counters_made: bool,
}

impl Wanted {
    /// Everything: the import.
    pub const ALL: Wanted = Wanted {
        records: None,
        catalog: true,
        marker_texts: true,
        external_texts: true,
        parsed_later: &[],
        passed: 0,
        counters_made: false,
    };

    fn takes(&self, kind: CsvKind) -> bool {
        self.records.is_none_or(|kinds| kinds.contains(kind))
    }

    /// Whether the record section at `ordinal` (of `kind`) is read.
    fn reads(&self, kind: CsvKind, ordinal: usize) -> bool {
        let passed = u32::try_from(ordinal)
            .ok()
            .and_then(|n| self.passed.checked_shr(n))
            .is_some_and(|bits| bits & 1 == 1);
        self.takes(kind) && !passed
    }
}

/// Import state of one process object.
struct Json<'o, 'r> {
    out: &'o mut dyn RowSink,
    path: PathBuf,
    opts: &'r ImportOptions,
    report: &'r mut ImportReport,
    pid: i64,
    /// Shared, so a record's kind and operation names borrow from a handle of their own.
    kinds: Arc<Vec<KindNames>>,
    have_strings: bool,
    have_agents: bool,
    have_metadata: bool,
    have_counters: bool,
    /// What this read takes of the object.
    wanted: Wanted,
    /// The position of the next record section in the object (skipped ones included).
    ordinal: usize,
    /// Whether the scanning walk checks the values it skips.
    strict: bool,
    /// Whether a strict walk also checks the rest of the file (D137).
    check_rest: bool,
    /// Where the large values of the object and the document lie, as (start, end) byte
    /// offsets: a later read of the same plain file jumps over those it skips.
    spans: Vec<(u64, u64)>,
    /// The real error behind a serde custom error.
    error: Option<Error>,
    /// The bound of serde's reads of this object (unbounded for the scanner's, which
    /// keep their own).
    limit: ReadLimit,
    /// Where the parser is, for error messages.
    section: String,
    index: u64,
    ignored: BTreeMap<String, u64>,
    /// Whether counter records made dispatches (kernel dispatch records then look for them).
    counter_dispatches: bool,
    /// The record sections (by ordinal) that came before the tables they need: the
    /// scanning walk passes over them, and reads them in a later walk once the object's
    /// tables are known, where the import holds their records back (D108).
    late: Vec<usize>,
    /// The same of the object's tables (by their place among its members).
    late_tables: Vec<u64>,
    /// Which walk this is: the first, or a later one reading only late tables or only
    /// late record sections.
    replay: Replay,
    /// The byte offset of the element being read (scanning walks only).
    at: u64,
}

/// The walks of a scanning read (D108).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replay {
    /// The first: everything that is ready where it stands.
    No,
    /// The tables that came before `metadata`.
    Tables,
    /// The record sections that came before the tables they need.
    Records,
}

/// A record-level failure: bad input (skippable) or fatal.
enum RecError {
    Bad(String),
    Fatal(Error),
}

impl From<Error> for RecError {
    fn from(e: Error) -> Self {
        RecError::Fatal(e)
    }
}

type RecResult = std::result::Result<(), RecError>;

fn bad(msg: impl Into<String>) -> RecError {
    RecError::Bad(msg.into())
}

fn req<N: Node>(v: &N, path: &[&str]) -> std::result::Result<i64, RecError> {
    field_int(v, path, Range::I64)?.ok_or_else(|| bad(format!("missing field {}", path.join("."))))
}

/// The name of record kind `kind` from `strings.buffer_records`, or `KIND_<n>`.
fn kind_name(kinds: &[KindNames], kind: i64) -> Cow<'_, str> {
    match usize::try_from(kind).ok().and_then(|k| kinds.get(k)) {
        Some(k) => Cow::Borrowed(&k.kind),
        None => Cow::Owned(format!("KIND_{kind}")),
    }
}

/// The name of operation `op` of kind `kind`, or `<kind>_OPERATION_<n>`.
fn op_name(kinds: &[KindNames], kind: i64, op: i64) -> Cow<'_, str> {
    usize::try_from(kind)
        .ok()
        .and_then(|k| kinds.get(k))
        .and_then(|k| usize::try_from(op).ok().and_then(|o| k.operations.get(o)))
        .map_or_else(
            || Cow::Owned(format!("{}_OPERATION_{op}", kind_name(kinds, kind))),
            |o| Cow::Borrowed(o.as_str()),
        )
}

impl Json<'_, '_> {
    /// Notes where a value lay, if it is large enough to be worth a jump.
    fn note(&mut self, start: u64, end: u64) {
        note_span(&mut self.spans, start, end);
    }

    /// After the object's walk: every table it has is read, and what waited for one is
    /// read now.
    fn tables_known(&mut self) {
        self.have_agents = true;
        self.have_strings = true;
        self.have_metadata = true;
        self.have_counters = true;
    }

    fn ready_for(&self, s: Section) -> bool {
        (!s.needs_agents() || self.have_agents)
            && (!s.needs_strings() || self.have_strings)
            && (!s.needs_metadata() || self.have_metadata)
            && (!s.needs_counters() || self.have_counters)
    }

    /// Handles one array element of a section (or defers it).
    fn element<N: Node>(&mut self, s: Section, v: &N) -> Result<()> {
        if !self.ready_for(s) {
            return self.defer(s, v);
        }
        match self.record(s, v) {
            Ok(()) => Ok(()),
            Err(RecError::Fatal(e)) => {
                let place = format!("{}[{}]", self.section, self.index);
                Err(crate::db::placed(e, &self.path, place))
            }
            Err(RecError::Bad(m)) => {
                let place = format!("{}[{}]", self.section, self.index);
                let walk = match self.replay {
                    Replay::No => 0,
                    Replay::Tables => 1,
                    Replay::Records => 2,
                };
                let err = Error::input(&self.path, place, m);
                skip_or_fail_at(self.opts, self.report, err, (walk, self.at))
            }
        }
    }

    fn defer<N: Node>(&mut self, s: Section, v: &N) -> Result<()> {
        let place = format!("{}[{}]", self.section, self.index);
        self.out.defer(s.code(), &place, &v.to_json())
    }

    /// Reads the records that came before the tables they need, in their order: those of
    /// the tables (`tables`), or those of the record sections.
    fn replay(&mut self, tables: bool) -> Result<()> {
        let mut after = 0;
        loop {
            let chunk = self.out.deferred(after, 256)?;
            let Some(last) = chunk.last() else {
                return Ok(());
            };
            after = last.seq;
            for d in chunk {
                if Section::from_code(&d.section).is_table() != tables {
                    continue;
                }
                let v: Value = serde_json::from_str(&d.json)
                    .map_err(|e| Error::output("temporary table", e.to_string()))?;
                match self.record(Section::from_code(&d.section), &v) {
                    Ok(()) => {}
                    Err(RecError::Fatal(e)) => {
                        return Err(crate::db::placed(e, &self.path, d.place))
                    }
                    Err(RecError::Bad(m)) => {
                        skip_or_fail(self.opts, self.report, Error::input(&self.path, d.place, m))?
                    }
                }
            }
        }
    }

    fn record<N: Node>(&mut self, s: Section, v: &N) -> RecResult {
        if s != Section::Ignored && !v.is_object() {
            return Err(bad(format!(
                "expected an object, found {}",
                describe(&v.to_value())
            )));
        }
        match s {
            Section::Agents => self.agent(v),
            Section::Counters => self.counter_info(v),
            Section::CodeObjects => self.code_object(v),
            Section::KernelSymbols => self.kernel_symbol(v),
            Section::MarkerStrings => self.string_entry(Texts::Marker, v),
            Section::ExternalStrings => self.string_entry(Texts::External, v),
            Section::Dispatch => self.dispatch(v),
            Section::Api => self.api(v),
            Section::Copy => self.copy(v),
            Section::Alloc => self.alloc(v, false),
            Section::Scratch => self.alloc(v, true),
            Section::Counter => self.counter(v),
            Section::Ignored => {
                *self.ignored.entry(self.section.clone()).or_insert(0) += 1;
                Ok(())
            }
        }
    }

    fn metadata<N: Node>(&mut self, v: &N) -> RecResult {
        if !v.is_object() {
            return Err(bad(format!(
                "expected an object, found {}",
                describe(&v.to_value())
            )));
        }
        // Every value is checked before any is used.
        let ppid = opt(v, "ppid")?;
        let init = opt(v, "init_time")?;
        let fini = opt(v, "fini_time")?;
        let pid = opt(v, "pid")?;
        if let Some(n) = opt_object(v, "node")? {
            let hostname = text(n.get("hostname"));
            let mut node = NodeRow::from_hostname(hostname.as_deref());
            let in_node = |r: RecError| match r {
                RecError::Bad(m) => bad(format!("node: {m}")),
                f => f,
            };
            if let Some(id) = opt_bits(n, "id").map_err(in_node)? {
                node.id = id;
            }
            if let Some(h) = opt_bits(n, "hash").map_err(in_node)? {
                node.hash = h;
            }
            if let Some(m) = text(n.get("machine_id")).filter(|m| !m.is_empty()) {
                node.machine_id = m;
            }
            node.system_name = text(n.get("system_name"));
            node.release = text(n.get("release"));
            node.version = text(n.get("version"));
            node.hardware_name = text(n.get("hardware_name"));
            node.domain_name = text(n.get("domain_name"));
            self.out.set_node(node);
        }
        if let Some(pid) = pid {
            self.pid = pid;
        }
        let command = match v.get("command").map(|c| (c, c.shape())) {
            Some((_, Shape::Array(a))) => Some(
                a.iter()
                    .map(|x| text(Some(x)).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            other => text(other.map(|(c, _)| c)),
        };
        self.out.set_process(
            self.pid,
            ProcessRow {
                ppid,
                init,
                fini,
                command,
                environment: None,
                extdata: v.get("config").map(|c| c.to_json()),
            },
        );
        Ok(())
    }

    fn agent<N: Node>(&mut self, v: &N) -> RecResult {
        let handle = opt_bits(v, "id")?;
        let id = opt(v, "node_id")?
            .or(handle)
            .ok_or_else(|| bad("agent without node_id or id"))?;
        // A number (1 = CPU, 2 = GPU) or a name; other values leave the type unknown.
        let agent_type = match v.get("type").map(|t| (t, t.shape())) {
            Some((_, Shape::Str(t))) => match t.trim() {
                "CPU" | "1" => Some("CPU"),
                "GPU" | "2" => Some("GPU"),
                _ => None,
            },
            Some((t, _)) => match int_value(t, Range::I64) {
                Ok(Some(1)) => Some("CPU"),
                Ok(Some(2)) => Some("GPU"),
                _ => None,
            },
            None => None,
        };
        let product = text(v.get("product_name"));
        self.out.agents().add(
            AgentRow {
                id,
                agent_type,
                absolute_index: Some(id),
                logical_index: opt(v, "logical_node_id")?,
                type_index: opt(v, "logical_node_type_id")?,
                uuid: opt_bits(v, "device_id")?,
                name: text(v.get("name")),
                model_name: text(v.get("model_name")),
                vendor_name: text(v.get("vendor_name")),
                product_name: product.clone(),
                user_name: product,
                extdata: Some(v.to_json()),
            },
            handle,
        );
        Ok(())
    }

    /// The agent of handle field `key` of `v`.
    fn agent_of<N: Node>(
        &mut self,
        v: &N,
        key: &str,
        evidence: Option<&'static str>,
    ) -> std::result::Result<Option<i64>, RecError> {
        Ok(opt_bits(v, key)?.map(|h| self.out.agents().by_handle(h, evidence)))
    }

    fn counter_info<N: Node>(&mut self, v: &N) -> RecResult {
        let id = req(v, &["id"])?;
        let agent_id = self.agent_of(v, "agent_id", None)?;
        let name = text(v.get("name")).unwrap_or_else(|| format!("counter {id}"));
        let target_arch = agent_id.and_then(|a| self.out.agents().agent_type(a));
        self.out.pmc(
            self.pid,
            &PmcRow {
                id,
                agent_id,
                target_arch,
                name,
                description: text(v.get("description")),
                block: text(v.get("block")),
                expression: text(v.get("expression")),
                is_constant: opt_flag(v, "is_constant")?,
                is_derived: opt_flag(v, "is_derived")?,
                extdata: Some(v.to_json()),
            },
        )?;
        Ok(())
    }

    fn code_object<N: Node>(&mut self, v: &N) -> RecResult {
        let id = req(v, &["code_object_id"])?;
        let agent_id = self.agent_of(v, "agent_id", None)?;
        let storage_type = match opt(v, "storage_type")? {
            Some(1) => Some("FILE"),
            Some(2) => Some("MEMORY"),
            _ => None,
        };
        self.out.code_object(
            self.pid,
            &CodeObjectRow {
                id,
                agent_id,
                uri: text(v.get("uri")),
                load_base: opt_bits(v, "load_base")?,
                load_size: opt(v, "load_size")?,
                load_delta: opt_bits(v, "load_delta")?,
                storage_type,
                extdata: Some(v.to_json()),
            },
        )?;
        Ok(())
    }

    fn kernel_symbol<N: Node>(&mut self, v: &N) -> RecResult {
        let id = req(v, &["kernel_id"])?;
        let kernel_name: Option<std::sync::Arc<str>> = text(v.get("kernel_name")).map(Into::into);
        let display = match text(v.get("formatted_kernel_name"))
            .filter(|s| !s.is_empty())
            .or_else(|| text(v.get("demangled_kernel_name")))
        {
            // The same text once, shared by both names.
            Some(d) if kernel_name.as_deref() != Some(d.as_str()) => Some(d.into()),
            _ => kernel_name.clone(),
        };
        self.out.kernel_symbol(
            self.pid,
            &KernelSymbolRow {
                id,
                code_object_id: opt(v, "code_object_id")?.unwrap_or(0),
                kernel_name,
                display_name: display,
                kernel_object: opt_bits(v, "kernel_object")?,
                kernarg_segment_size: opt(v, "kernarg_segment_size")?,
                kernarg_segment_alignment: opt(v, "kernarg_segment_alignment")?,
                group_segment_size: opt(v, "group_segment_size")?,
                private_segment_size: opt(v, "private_segment_size")?,
                sgpr_count: opt(v, "sgpr_count")?,
                arch_vgpr_count: opt(v, "arch_vgpr_count")?,
                accum_vgpr_count: opt(v, "accum_vgpr_count")?,
                extdata: Some(v.to_json().into()),
            },
        )?;
        Ok(())
    }

    /// One `{"key": id, "value": text}` entry.
    fn string_entry<N: Node>(&mut self, which: Texts, v: &N) -> RecResult {
        let id = req(v, &["key"])?;
        let t = text(v.get("value")).unwrap_or_default();
        self.out.put_text(which, id, &t)?;
        Ok(())
    }

    /// Event ids of a record's `correlation_id` object (or number): (internal, external,
    /// ancestor).
    #[allow(clippy::type_complexity)]
    fn corr<N: Node>(
        v: &N,
    ) -> std::result::Result<(Option<i64>, Option<i64>, Option<i64>), RecError> {
        let c = |k: &str| field_int(v, &["correlation_id", k], Range::I64);
        Ok(match v.get("correlation_id") {
            Some(x) if x.is_object() => (
                c("internal")?.filter(|c| *c != 0),
                c("external")?,
                c("ancestor")?,
            ),
            _ => (opt(v, "correlation_id")?.filter(|c| *c != 0), None, None),
        })
    }

    fn api<N: Node>(&mut self, v: &N) -> RecResult {
        let kind = req(v, &["kind"])?;
        let op = req(v, &["operation"])?;
        let start = req(v, &["start_timestamp"])?;
        let end = req(v, &["end_timestamp"])?;
        let tid = opt(v, "thread_id")?.unwrap_or(self.pid);
        let (internal, external, ancestor) = Self::corr(v)?;
        let internal = internal.ok_or_else(|| bad("missing correlation_id.internal"))?;
        let kinds = Arc::clone(&self.kinds);
        let category = kind_name(&kinds, kind);
        let name = op_name(&kinds, kind, op);
        let mut extdata = None;
        if category.starts_with("MARKER") {
            if let Some(msg) = self.out.text(Texts::Marker, internal)? {
                extdata = Some(crate::csv_import::message_extdata(&msg));
            }
        }
        let name_id = self.out.string(&name)?;
        let event_id = self.out.event(&EventRow {
            category: &category,
            stack_id: Some(internal),
            parent_stack_id: ancestor,
            correlation_id: external,
            extdata,
        })?;
        self.out
            .region(internal, self.pid, tid, start, end, name_id, event_id)?;
        Ok(())
    }

    /// A dispatch row from a `dispatch_info` object and the record around it (all fields
    /// checked before anything is written; the kernel symbol is made if unknown).
    fn dispatch_row<N: Node>(
        &mut self,
        v: &N,
        info: &N,
    ) -> std::result::Result<DispatchRow, RecError> {
        if !info.is_object() {
            return Err(bad(format!(
                "dispatch_info: expected an object, found {}",
                describe(&info.to_value())
            )));
        }
        let in_info = |r: RecError| match r {
            RecError::Bad(m) => bad(format!("dispatch_info: {m}")),
            f => f,
        };
        let xyz = |k: &str| -> std::result::Result<[i64; 3], RecError> {
            let mut out = [0i64; 3];
            for (o, c) in out.iter_mut().zip(["x", "y", "z"]) {
                *o = field_int(info, &[k, c], Range::I64)
                    .map_err(in_info)?
                    .unwrap_or(0);
            }
            Ok(out)
        };
        let workgroup = xyz("workgroup_size")?;
        let grid = xyz("grid_size")?;
        let kernel_id = req(info, &["kernel_id"]).map_err(in_info)?;
        let dispatch_id = req(info, &["dispatch_id"]).map_err(in_info)?;
        let tid = opt(v, "thread_id")?;
        let queue_id = opt_bits(info, "queue_id").map_err(in_info)?.unwrap_or(0);
        let stream_id = opt_bits(v, "stream_id")?.unwrap_or(0);
        let private_segment_size = opt(info, "private_segment_size").map_err(in_info)?;
        let group_segment_size = opt(info, "group_segment_size").map_err(in_info)?;
        let agent_id = self
            .agent_of(info, "agent_id", Some("GPU"))
            .map_err(in_info)?
            .ok_or_else(|| bad("missing dispatch_info.agent_id"))?;
        if !self.out.has_kernel(kernel_id) {
            self.out.kernel_symbol(
                self.pid,
                &KernelSymbolRow {
                    id: kernel_id,
                    extdata: Some(crate::db::SYNTHESIZED.into()),
                    ..Default::default()
                },
            )?;
        }
        Ok(DispatchRow {
            dispatch_id,
            pid: self.pid,
            tid,
            agent_id,
            kernel_id,
            queue_id,
            stream_id,
            start: 0,
            end: 0,
            private_segment_size,
            group_segment_size,
            workgroup,
            grid,
            region_name_id: None,
            extdata: None,
        })
    }

    fn region_name(&mut self, external: Option<i64>) -> Result<Option<i64>> {
        match external {
            Some(e) if e != 0 => match self.out.text(Texts::External, e)? {
                Some(t) => Ok(Some(self.out.string(&t)?)),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn dispatch<N: Node>(&mut self, v: &N) -> RecResult {
        let info = v
            .get("dispatch_info")
            .ok_or_else(|| bad("missing dispatch_info"))?;
        let kind = opt(v, "kind")?;
        let start = req(v, &["start_timestamp"])?;
        let end = req(v, &["end_timestamp"])?;
        let (internal, external, _) = Self::corr(v)?;
        let mut d = self.dispatch_row(v, info)?;
        d.start = start;
        d.end = end;
        d.region_name_id = self.region_name(external)?;
        // A counter record may have made this dispatch already (callback records come
        // before buffer records): complete it instead of adding a second one.
        if self.counter_dispatches {
            if let Some(found) = self.out.find_dispatch(d.dispatch_id)? {
                if self.out.completes(d.dispatch_id, &found, internal) {
                    self.out.update_dispatch(&d, internal, external)?;
                    return Ok(());
                }
            }
        }
        let kinds = Arc::clone(&self.kinds);
        let category = kind.map_or(Cow::Borrowed("KERNEL_DISPATCH"), |k| kind_name(&kinds, k));
        let event_id = self.out.event(&EventRow {
            category: &category,
            stack_id: internal,
            parent_stack_id: internal,
            correlation_id: external,
            extdata: None,
        })?;
        self.out.dispatch(&d, event_id)?;
        Ok(())
    }

    fn copy<N: Node>(&mut self, v: &N) -> RecResult {
        let kind = req(v, &["kind"])?;
        let op = req(v, &["operation"])?;
        let start = req(v, &["start_timestamp"])?;
        let end = req(v, &["end_timestamp"])?;
        let (internal, external, _) = Self::corr(v)?;
        let tid = opt(v, "thread_id")?;
        let dst_address = opt_bits(v, "dst_address")?;
        let src_address = opt_bits(v, "src_address")?;
        let size = opt(v, "bytes")?.unwrap_or(0);
        let stream_id = opt_bits(v, "stream_id")?;
        let kinds = Arc::clone(&self.kinds);
        let op = op_name(&kinds, kind, op);
        let name = crate::csv_import::copy_name(&op);
        let category = kind_name(&kinds, kind);
        let (src_t, dst_t) = crate::csv_import::copy_types(&name);
        // Checked before either agent is noted.
        opt_bits(v, "src_agent_id")?;
        opt_bits(v, "dst_agent_id")?;
        let src_agent_id = self.agent_of(v, "src_agent_id", src_t)?;
        let dst_agent_id = self.agent_of(v, "dst_agent_id", dst_t)?;
        let name_id = self.out.string(&name)?;
        let region_name_id = self.region_name(external)?;
        let event_id = self.out.event(&EventRow {
            category: &category,
            stack_id: internal,
            parent_stack_id: internal,
            correlation_id: external,
            extdata: None,
        })?;
        self.out.copy(
            &CopyRow {
                pid: self.pid,
                tid,
                start,
                end,
                name_id,
                dst_agent_id,
                dst_address,
                src_agent_id,
                src_address,
                size,
                queue_id: None,
                stream_id,
                region_name_id,
                extdata: None,
            },
            event_id,
        )?;
        Ok(())
    }

    fn alloc<N: Node>(&mut self, v: &N, scratch: bool) -> RecResult {
        let kind = req(v, &["kind"])?;
        let op = req(v, &["operation"])?;
        let start = req(v, &["start_timestamp"])?;
        let end = req(v, &["end_timestamp"])?;
        let (internal, external, _) = Self::corr(v)?;
        let tid = opt(v, "thread_id")?;
        let address = opt_bits(v, "address")?;
        let size = opt(v, "allocation_size")?.unwrap_or(0);
        let queue_id = opt_bits(v, "queue_id")?;
        let stream_id = opt_bits(v, "stream_id")?;
        let handle = opt_bits(v, "agent_id")?;
        let kinds = Arc::clone(&self.kinds);
        let op_name = op_name(&kinds, kind, op);
        let category = kind_name(&kinds, kind);
        let (ty, level) = crate::csv_import::alloc_type(&op_name);
        let level = if scratch { "SCRATCH" } else { level };
        // Frees name no agent (handle 0 or absent).
        let agent_id = match handle {
            Some(h) if h != 0 => Some(self.out.agents().by_handle(h, scratch.then_some("GPU"))),
            _ => None,
        };
        let mut ext = serde_json::Map::new();
        if ty.is_none() {
            ext.insert("operation".into(), Value::from(op_name.as_ref()));
        }
        if let Some(f) = v.get("flags") {
            ext.insert("flags".into(), f.to_value().into_owned());
        }
        let event_id = self.out.event(&EventRow {
            category: &category,
            stack_id: internal,
            parent_stack_id: internal,
            correlation_id: external,
            extdata: None,
        })?;
        self.out.alloc(
            &AllocRow {
                pid: self.pid,
                tid,
                agent_id,
                kind: ty,
                level: Some(level),
                start,
                end,
                address,
                size,
                queue_id,
                stream_id,
                extdata: (!ext.is_empty()).then(|| Value::Object(ext).to_string()),
            },
            event_id,
        )?;
        Ok(())
    }

    fn counter<N: Node>(&mut self, v: &N) -> RecResult {
        let dd = v
            .get("dispatch_data")
            .ok_or_else(|| bad("missing dispatch_data"))?;
        if !dd.is_object() {
            return Err(bad(format!(
                "dispatch_data: expected an object, found {}",
                describe(&dd.to_value())
            )));
        }
        let info = dd
            .get("dispatch_info")
            .ok_or_else(|| bad("missing dispatch_data.dispatch_info"))?;
        let in_dd = |r: RecError| match r {
            RecError::Bad(m) => bad(format!("dispatch_data: {m}")),
            f => f,
        };
        let (internal, external, _) = Self::corr(dd).map_err(in_dd)?;
        let start = opt(dd, "start_timestamp").map_err(in_dd)?;
        let end = opt(dd, "end_timestamp").map_err(in_dd)?;
        // The values, all checked before anything is written.
        let records = match v.get("records").map(|r| (r, r.shape())) {
            None | Some((_, Shape::Null)) => &[][..],
            Some((_, Shape::Array(a))) => a,
            Some((other, _)) => {
                return Err(bad(format!(
                    "field records: expected an array, found {}",
                    describe(&other.to_value())
                )))
            }
        };
        let mut values = Vec::with_capacity(records.len());
        for (i, r) in records.iter().enumerate() {
            let in_rec = |e: RecError| match e {
                RecError::Bad(m) => bad(format!("records[{i}]: {m}")),
                f => f,
            };
            if !r.is_object() {
                return Err(bad(format!(
                    "records[{i}]: expected an object, found {}",
                    describe(&r.to_value())
                )));
            }
            let pmc_id = req(r, &["counter_id"]).map_err(in_rec)?;
            let value = r.get("value").and_then(|x| x.as_f64()).ok_or_else(|| {
                bad(format!(
                    "records[{i}]: counter record without a numeric value"
                ))
            })?;
            values.push((pmc_id, value));
        }
        let mut d = self.dispatch_row(v, info)?;
        let event_id = match self.out.find_dispatch(d.dispatch_id)? {
            Some(crate::db::FoundDispatch {
                event_id: Some(e), ..
            }) => e,
            _ => match self.out.untimed_event(d.dispatch_id)? {
                Some(e) => e,
                None => {
                    let event_id = self.out.event(&EventRow {
                        category: "KERNEL_DISPATCH",
                        stack_id: internal,
                        parent_stack_id: internal,
                        correlation_id: external,
                        extdata: None,
                    })?;
                    self.counter_dispatches = true;
                    match (start, end) {
                        (Some(s), Some(e)) => {
                            d.start = s;
                            d.end = e;
                            d.region_name_id = self.region_name(external)?;
                            self.out.dispatch(&d, event_id)?;
                        }
                        _ => {
                            self.out.thread(d.pid, d.tid);
                            self.out.remember_untimed(d.dispatch_id, event_id)?;
                        }
                    }
                    event_id
                }
            },
        };
        for (pmc_id, value) in values {
            if !self.out.has_pmc(pmc_id) {
                self.out.pmc(
                    self.pid,
                    &PmcRow {
                        id: pmc_id,
                        agent_id: Some(d.agent_id),
                        target_arch: Some("GPU"),
                        name: format!("counter {pmc_id}"),
                        extdata: Some(crate::db::SYNTHESIZED.into()),
                        ..Default::default()
                    },
                )?;
            }
            self.out.pmc_event(event_id, pmc_id, value)?;
        }
        Ok(())
    }
}

/// Turns an importer error into a serde error (the real one is kept in the state).
fn stash<E: de::Error>(st: &mut Json<'_, '_>, e: Error) -> E {
    let msg = e.to_string();
    st.error = Some(e);
    E::custom(msg)
}

/// The top-level object: finds the process array.
struct TopSeed<'a, 'o, 'r> {
    st: &'a mut Json<'o, 'r>,
    index: usize,
}

impl<'de> Visitor<'de> for TopSeed<'_, '_, '_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON object with a {TOOL_KEY:?} array")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<bool, A::Error> {
        let st = self.st;
        let mut found = false;
        while let Some(key) = bounded(&st.limit, || map.next_key::<String>())? {
            if key == TOOL_KEY {
                found |= map.next_value_seed(ProcList {
                    st: &mut *st,
                    index: self.index,
                })?;
            } else {
                // An error in another member is placed by its byte offset alone.
                st.section.clear();
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

struct ProcList<'a, 'o, 'r> {
    st: &'a mut Json<'o, 'r>,
    index: usize,
}

impl<'de> DeserializeSeed<'de> for ProcList<'_, '_, '_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<bool, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ProcList<'_, '_, '_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array of per-process objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<bool, A::Error> {
        let st = self.st;
        let mut i = 0;
        let mut found = false;
        loop {
            if i == self.index {
                st.section = format!("{TOOL_KEY}[{i}]");
                match seq.next_element_seed(ProcSeed { st: &mut *st })? {
                    Some(()) => found = true,
                    None => break,
                }
            } else {
                // An error in a process object passed over is placed in that object.
                st.section = TOOL_KEY.into();
                st.index = i as u64;
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    break;
                }
            }
            i += 1;
        }
        Ok(found)
    }
}

/// The selected per-process object.
struct ProcSeed<'a, 'o, 'r> {
    st: &'a mut Json<'o, 'r>,
}

impl<'de> DeserializeSeed<'de> for ProcSeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ProcSeed<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a per-process object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let st = self.st;
        let base = st.section.clone();
        while let Some(key) = bounded(&st.limit, || map.next_key::<String>())? {
            st.section = format!("{base}.{key}");
            st.index = 0;
            match key.as_str() {
                "metadata" => {
                    let v: Value = bounded(&st.limit, || map.next_value())?;
                    let r = match st.metadata(&v) {
                        Ok(()) => Ok(()),
                        Err(RecError::Fatal(e)) => Err(e),
                        Err(RecError::Bad(m)) => {
                            let place = st.section.clone();
                            skip_or_fail(st.opts, st.report, Error::input(&st.path, place, m))
                        }
                    };
                    r.map_err(|e| stash(st, e))?;
                    st.have_metadata = true;
                }
                "agents" => {
                    if st.wanted.catalog {
                        map.next_value_seed(Elements {
                            st: &mut *st,
                            section: Section::Agents,
                        })?;
                    } else {
                        // The reader has them from an earlier read.
                        map.next_value::<IgnoredAny>()?;
                    }
                    st.have_agents = true;
                }
                "counters" => {
                    // Known to counter records only when read where it stands (not held
                    // back for `metadata`): else they wait for it too.
                    let ready = st.ready_for(Section::Counters);
                    if st.wanted.catalog {
                        map.next_value_seed(Elements {
                            st: &mut *st,
                            section: Section::Counters,
                        })?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                    st.have_counters |= ready;
                }
                "code_objects" if st.wanted.catalog => map.next_value_seed(Elements {
                    st: &mut *st,
                    section: Section::CodeObjects,
                })?,
                "kernel_symbols" if st.wanted.catalog => map.next_value_seed(Elements {
                    st: &mut *st,
                    section: Section::KernelSymbols,
                })?,
                "strings" => {
                    map.next_value_seed(Strings { st: &mut *st })?;
                    st.have_strings = true;
                }
                "callback_records" | "buffer_records" => map.next_value_seed(Sections {
                    st: &mut *st,
                    base: format!("{base}.{key}"),
                })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        st.section = base;
        Ok(())
    }
}

/// `strings`: kind/operation names, marker texts, kernel-rename texts.
struct Strings<'a, 'o, 'r> {
    st: &'a mut Json<'o, 'r>,
}

impl<'de> DeserializeSeed<'de> for Strings<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Strings<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "the strings object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let st = self.st;
        let base = st.section.clone();
        while let Some(key) = bounded(&st.limit, || map.next_key::<String>())? {
            st.section = format!("{base}.{key}");
            st.index = 0;
            match key.as_str() {
                "buffer_records" => {
                    let kinds = bounded(&st.limit, || map.next_value::<Vec<KindNames>>())?;
                    st.kinds = Arc::new(kinds);
                }
                "marker_api" if st.wanted.marker_texts => map.next_value_seed(Elements {
                    st: &mut *st,
                    section: Section::MarkerStrings,
                })?,
                "correlation_id" if st.wanted.external_texts => {
                    map.next_value_seed(External { st: &mut *st })?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        st.section = base;
        Ok(())
    }
}

/// `strings.correlation_id`: `{"external": [{"key": id, "value": text}, ...]}`.
struct External<'a, 'o, 'r> {
    st: &'a mut Json<'o, 'r>,
}

impl<'de> DeserializeSeed<'de> for External<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for External<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "the correlation_id strings object")
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let st = self.st;
        while let Some(key) = bounded(&st.limit, || map.next_key::<String>())? {
            if key == "external" {
                map.next_value_seed(Elements {
                    st: &mut *st,
                    section: Section::ExternalStrings,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// `callback_records` / `buffer_records`: one record array per key.
struct Sections<'a, 'o, 'r> {
    st: &'a mut Json<'o, 'r>,
    base: String,
}

impl<'de> DeserializeSeed<'de> for Sections<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Sections<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object of record arrays")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let st = self.st;
        while let Some(key) = bounded(&st.limit, || map.next_key::<String>())? {
            st.section = format!("{}.{key}", self.base);
            st.index = 0;
            let section = Section::of_record(&key);
            let kind = section.kind();
            let ordinal = st.ordinal;
            st.ordinal += 1;
            if !st.wanted.reads(kind, ordinal) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            if let Err(e) = st.out.begin_file(Some(ordinal), kind) {
                return Err(stash(st, e));
            }
            map.next_value_seed(Elements {
                st: &mut *st,
                section,
            })?;
        }
        Ok(())
    }
}

/// An array whose elements are handled one at a time.
struct Elements<'a, 'o, 'r> {
    st: &'a mut Json<'o, 'r>,
    section: Section,
}

impl<'de> DeserializeSeed<'de> for Elements<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Elements<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array")
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let st = self.st;
        if self.section == Section::Ignored {
            // Count without building values.
            while seq.next_element::<IgnoredAny>()?.is_some() {
                *st.ignored.entry(st.section.clone()).or_insert(0) += 1;
                st.index += 1;
            }
            return Ok(());
        }
        while let Some(v) = bounded(&st.limit, || seq.next_element::<Value>())? {
            st.element(self.section, &v).map_err(|e| stash(st, e))?;
            st.index += 1;
        }
        Ok(())
    }
    /// A map of id → text (some writers emit string tables as objects).
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let st = self.st;
        while let Some((k, v)) = bounded(&st.limit, || map.next_entry::<String, Value>())? {
            let entry = serde_json::json!({ "key": k, "value": v });
            st.element(self.section, &entry).map_err(|e| stash(st, e))?;
            st.index += 1;
        }
        Ok(())
    }
}

/// Imports per-process object `index` of the JSON file at `path`.
pub(crate) fn import_process(
    path: &Path,
    index: usize,
    out: &mut Out<'_>,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<()> {
    read_process(path, index, &Wanted::ALL, out, opts, report)
}

/// Reads what `wanted` names of per-process object `index` of the JSON file at `path`
/// into `out`, records in document order. Each record section starts with
/// [`RowSink::begin_file`], its position among the object's record sections as the
/// index (skipped sections count), so a read of some sections can number events as a
/// read of all does.
pub(crate) fn read_process(
    path: &Path,
    index: usize,
    wanted: &Wanted,
    out: &mut dyn RowSink,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<()> {
    let mut input = open(path)?;
    let mut st = Json::new(out, path, opts, report, wanted);
    st.limit = input.limit.clone();
    let parsed = {
        let mut de = serde_json::Deserializer::from_reader(&mut input.reader);
        de.deserialize_map(TopSeed { st: &mut st, index })
            .and_then(|found| de.end().map(|_| found))
    };
    let found = match parsed {
        Ok(f) => f,
        Err(e) => {
            if let Some(real) = st.error.take() {
                return Err(real);
            }
            let within = if st.section.is_empty() {
                String::new()
            } else {
                format!(", in {}[{}]", st.section, st.index)
            };
            return Err(parse_error(&input, path, &within, &e));
        }
    };
    st.finish(found, index)
}

/// [`read_process`] through the byte-level scanner (`crate::json_scan`): several times
/// faster, with errors that name only a byte offset. With `strict`, every value it skips
/// is checked to be well-formed JSON; without, skipped values are not looked into (for
/// reads of a file a strict read has accepted already).
///
/// `spans` says what the read does with the places of the file's large values.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_process(
    path: &Path,
    index: usize,
    wanted: &Wanted,
    strict: bool,
    spans: Spans<'_>,
    out: &mut dyn RowSink,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<()> {
    let (jumps, check_rest) = match &spans {
        Spans::Jump(list) => (*list, true),
        Spans::Note(_, list, check_rest) => (*list, *check_rest),
    };
    let mut st = Json::new(out, path, opts, report, wanted);
    st.strict = strict;
    st.check_rest = check_rest;
    let found = walk(&mut st, path, index, jumps)?;
    let noted = std::mem::take(&mut st.spans);
    if !st.late.is_empty() || !st.late_tables.is_empty() {
        // What came before the tables it needs, now that they are read, as the import
        // replays it: the tables held back, then the record sections, each in file
        // order, after everything else. Only they are parsed; the rest is passed over
        // (jumping where the first walk, or the read before this one, noted large values).
        st.out.late_sections(&st.late);
        st.tables_known();
        let jumps = if noted.is_empty() { jumps } else { &noted };
        for (replay, any) in [
            (Replay::Tables, !st.late_tables.is_empty()),
            (Replay::Records, !st.late.is_empty()),
        ] {
            if any {
                st.replay = replay;
                st.ordinal = 0;
                walk(&mut st, path, index, jumps)?;
            }
        }
        st.spans.clear();
    }
    if let Spans::Note(out, _, _) = spans {
        // `Scan::with_jumps` sorts them where they are used.
        *out = noted;
    }
    st.finish(found, index)
}

/// One scanning walk of the document for `st`, jumping over the values at `jumps` that it
/// skips when the file is plain; whether process object `index` was found.
fn walk(st: &mut Json<'_, '_>, path: &Path, index: usize, jumps: &[(u64, u64)]) -> Result<bool> {
    let input = open(path)?;
    let (gz, bom) = (input.gz, input.bom);
    // Lines are not counted: the scanner's places are byte offsets.
    let mut scan = Scan::new(input.reader.into_inner());
    if !jumps.is_empty() && !gz {
        // The text starts after the byte-order mark.
        let file = path.to_path_buf();
        scan = scan.with_jumps(
            jumps.to_vec(),
            Box::new(move |offset| {
                use std::io::{Seek, SeekFrom};
                let mut f = std::fs::File::open(&file)?;
                f.seek(SeekFrom::Start(bom.saturating_add(offset)))?;
                Ok(Box::new(f) as Box<dyn Read>)
            }),
        );
    }
    match scan_top(st, &mut scan, index) {
        Ok(found) => Ok(found),
        Err(Stop::Input(e)) => Err(e),
        Err(Stop::Scan(e)) => {
            let of = if gz { " of the decompressed data" } else { "" };
            let within = if st.section.is_empty() {
                String::new()
            } else {
                format!(", in {}[{}]", st.section, st.index)
            };
            Err(match e {
                ScanError::Io(e) => Error::input(
                    path,
                    format!("byte offset {}{of}{within}", bom + scan.offset()),
                    read_message(gz, &e),
                ),
                ScanError::Syntax(at, m) => Error::input(
                    path,
                    format!("byte offset {}{of}{within}", bom + at),
                    format!("invalid JSON: {m}"),
                ),
                ScanError::TooLarge(at) => Error::input(
                    path,
                    format!("byte offset {}{of}{within}", bom + at),
                    TOO_LARGE,
                ),
            })
        }
    }
}

/// What a scanning read does with the places of the values of [`JUMP_MIN`] bytes and
/// more that it passes (the document's other members and process objects, the process
/// object's members, each record section and `strings` member).
pub(crate) enum Spans<'a> {
    /// Notes them here: the first read of a file; jumping, as [`Spans::Jump`] does, over
    /// those of the pre-scan that it skips without checking them (D136). The flag: whether
    /// a strict read checks the rest of the file (the other process objects and top-level
    /// members), which the first object's read has done for later objects' (D137).
    Note(&'a mut Vec<(u64, u64)>, &'a [(u64, u64)], bool),
    /// Jumps over those of an earlier read that it skips, when the file is plain (a gzip
    /// stream cannot seek, so it is scanned); an empty list is a read without jumps.
    Jump(&'a [(u64, u64)]),
}

/// Why the scanning walk stopped.
enum Stop {
    Scan(ScanError),
    Input(Error),
}

impl From<ScanError> for Stop {
    fn from(e: ScanError) -> Self {
        Stop::Scan(e)
    }
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Input(e)
    }
}

type Walked<T> = std::result::Result<T, Stop>;

/// The top-level object, reading process object `index` and skipping the rest.
///
/// A strict read checks what it skips unless `st.check_rest` is off: the import of any
/// object of the file fails on bad JSON anywhere in it, and once the first object's read
/// has checked the whole file, later objects' reads pass over the rest unchecked (jumping
/// where the pre-scan noted it), so a file of k objects is not checked k times (D137).
fn scan_top<R: Read>(st: &mut Json<'_, '_>, s: &mut Scan<R>, index: usize) -> Walked<bool> {
    let mut raw = Vec::new();
    let mut found = false;
    let check_rest = st.strict && st.check_rest;
    if s.open(b'{', b'}')? {
        loop {
            if s.key()? == TOOL_KEY {
                if s.open(b'[', b']')? {
                    let mut i = 0;
                    loop {
                        if i == index {
                            st.section = format!("{TOOL_KEY}[{i}]");
                            scan_proc(st, s, &mut raw)?;
                            found = true;
                        } else {
                            // An error in a process object passed over is placed in it.
                            st.section = TOOL_KEY.into();
                            st.index = i as u64;
                            let at = s.start()?;
                            s.skip(check_rest)?;
                            st.note(at, s.offset());
                        }
                        i += 1;
                        if !s.more(b']')? {
                            break;
                        }
                    }
                }
            } else {
                st.section.clear();
                let at = s.start()?;
                s.skip(check_rest)?;
                st.note(at, s.offset());
            }
            if !s.more(b'}')? {
                break;
            }
        }
    }
    if !s.at_end()? {
        return Err(Stop::Scan(ScanError::Syntax(
            s.offset(),
            "text after the document".into(),
        )));
    }
    Ok(found)
}

/// One process object, as [`ProcSeed`] reads it; in a later walk (`st.replay`), only its
/// late tables or late record sections.
fn scan_proc<R: Read>(st: &mut Json<'_, '_>, s: &mut Scan<R>, raw: &mut Vec<u8>) -> Walked<()> {
    let base = st.section.clone();
    if !s.open(b'{', b'}')? {
        return Ok(());
    }
    loop {
        let key = s.key()?;
        st.section = format!("{base}.{key}");
        st.index = 0;
        let at = s.start()?;
        let table = match key.as_str() {
            "counters" => Some(Section::Counters),
            "code_objects" => Some(Section::CodeObjects),
            "kernel_symbols" => Some(Section::KernelSymbols),
            _ => None,
        };
        let records = matches!(key.as_str(), "callback_records" | "buffer_records");
        // The counters are known to counter records only when read where they stand (not
        // held back for `metadata`): else the records wait for them too.
        let counters_ready = table == Some(Section::Counters) && st.ready_for(Section::Counters);
        match st.replay {
            Replay::Tables => match table {
                Some(section) if st.late_tables.contains(&at) => {
                    scan_elements(st, s, raw, section)?
                }
                _ => s.skip(false)?,
            },
            Replay::Records if records => scan_record_sections(st, s, raw)?,
            Replay::Records => s.skip(false)?,
            Replay::No => match (key.as_str(), table) {
                (_, Some(section)) if st.wanted.catalog => {
                    if st.ready_for(section) {
                        scan_elements(st, s, raw, section)?;
                    } else {
                        // Before `metadata`: read in a later walk (and checked there).
                        st.late_tables.push(at);
                        s.skip(false)?;
                    }
                }
                ("metadata", _) => {
                    let v: Value = s.parse(raw)?;
                    match st.metadata(&v) {
                        Ok(()) => {}
                        Err(RecError::Fatal(e)) => return Err(e.into()),
                        Err(RecError::Bad(m)) => {
                            let err = Error::input(&st.path, st.section.clone(), m);
                            // Every read parses it: one that keeps reasons by place counts
                            // it only in the read of the catalog (D111).
                            let counted_by_other_read =
                                st.report.ordered.is_some() && !st.wanted.catalog;
                            if !(counted_by_other_read && st.opts.skip_bad_rows) {
                                skip_or_fail_at(st.opts, st.report, err, (0, at))?
                            }
                        }
                    }
                    st.have_metadata = true;
                }
                ("agents", _) => {
                    if st.wanted.catalog {
                        scan_elements(st, s, raw, Section::Agents)?;
                    } else {
                        s.skip(st.strict)?;
                    }
                    st.have_agents = true;
                }
                ("strings", _) => {
                    scan_strings(st, s, raw)?;
                    st.have_strings = true;
                }
                _ if records => scan_record_sections(st, s, raw)?,
                _ => s.skip(st.strict)?,
            },
        }
        st.have_counters |= counters_ready;
        st.note(at, s.offset());
        if !s.more(b'}')? {
            break;
        }
    }
    st.section = base;
    Ok(())
}

/// `callback_records` or `buffer_records`: each record section is read where it stands
/// if the tables it needs are known, else in the walk of late record sections (D108).
fn scan_record_sections<R: Read>(
    st: &mut Json<'_, '_>,
    s: &mut Scan<R>,
    raw: &mut Vec<u8>,
) -> Walked<()> {
    let base = st.section.clone();
    if s.open(b'{', b'}')? {
        loop {
            let key = s.key()?;
            st.section = format!("{base}.{key}");
            st.index = 0;
            let section = Section::of_record(&key);
            let kind = section.kind();
            let ordinal = st.ordinal;
            st.ordinal += 1;
            let at = s.start()?;
            let later = section != Section::Ignored && st.wanted.parsed_later.contains(&kind);
            let wanted = st.wanted.reads(kind, ordinal);
            if st.replay == Replay::Records {
                if wanted && st.late.contains(&ordinal) {
                    st.out.begin_file(Some(ordinal), kind)?;
                    scan_elements(st, s, raw, section)?;
                } else {
                    s.skip(false)?;
                }
            } else if section != Section::Ignored && !st.ready_for(section) {
                // Read in the walk of late sections (and checked there when parsed).
                st.late.push(ordinal);
                s.skip(st.strict && !later && !wanted)?;
            } else if wanted {
                st.out.begin_file(Some(ordinal), kind)?;
                scan_elements(st, s, raw, section)?;
            } else {
                s.skip(st.strict && !later)?;
            }
            st.note(at, s.offset());
            if !s.more(b'}')? {
                break;
            }
        }
    }
    st.section = base;
    Ok(())
}

/// `strings`, as [`Strings`] reads it.
fn scan_strings<R: Read>(st: &mut Json<'_, '_>, s: &mut Scan<R>, raw: &mut Vec<u8>) -> Walked<()> {
    let base = st.section.clone();
    if !s.open(b'{', b'}')? {
        return Ok(());
    }
    loop {
        let key = s.key()?;
        st.section = format!("{base}.{key}");
        st.index = 0;
        let at = s.start()?;
        match key.as_str() {
            "buffer_records" => st.kinds = Arc::new(s.parse(raw)?),
            "marker_api" if st.wanted.marker_texts => {
                scan_elements(st, s, raw, Section::MarkerStrings)?
            }
            "correlation_id" if st.wanted.external_texts => match s.peek()? {
                Some(b'{') => {
                    if s.open(b'{', b'}')? {
                        loop {
                            if s.key()? == "external" {
                                scan_elements(st, s, raw, Section::ExternalStrings)?;
                            } else {
                                s.skip(st.strict)?;
                            }
                            if !s.more(b'}')? {
                                break;
                            }
                        }
                    }
                }
                Some(b'n') => s.skip(st.strict)?,
                // [`External`] takes only an object or null: anything else is the same
                // error here, or the direct reader would accept what the import refuses.
                _ => {
                    return Err(Stop::Scan(ScanError::Syntax(
                        s.offset(),
                        "expected the correlation_id strings object".into(),
                    )))
                }
            },
            _ => s.skip(st.strict)?,
        }
        st.note(at, s.offset());
        if !s.more(b'}')? {
            break;
        }
    }
    st.section = base;
    Ok(())
}

/// An array whose elements are handled one at a time (or a map of id → text, or
/// `null`), as [`Elements`] reads it.
fn scan_elements<R: Read>(
    st: &mut Json<'_, '_>,
    s: &mut Scan<R>,
    raw: &mut Vec<u8>,
    section: Section,
) -> Walked<()> {
    match s.peek()? {
        Some(b'n') => s.skip(st.strict)?,
        Some(b'[') => {
            if !s.open(b'[', b']')? {
                return Ok(());
            }
            loop {
                if section == Section::Ignored {
                    s.skip(st.strict)?;
                    *st.ignored.entry(st.section.clone()).or_insert(0) += 1;
                } else {
                    st.at = s.offset();
                    s.with_flat(|v| st.element(section, v))??;
                }
                st.index += 1;
                if !s.more(b']')? {
                    break;
                }
            }
        }
        Some(b'{') => {
            s.open(b'{', b'}')?;
            loop {
                st.at = s.offset();
                let key = s.key()?;
                let value: Value = s.parse(raw)?;
                st.element(section, &serde_json::json!({ "key": key, "value": value }))?;
                st.index += 1;
                if !s.more(b'}')? {
                    break;
                }
            }
        }
        _ => {
            return Err(Stop::Scan(ScanError::Syntax(
                s.offset(),
                "expected an array".into(),
            )))
        }
    }
    Ok(())
}

impl<'o, 'r> Json<'o, 'r> {
    fn new(
        out: &'o mut dyn RowSink,
        path: &Path,
        opts: &'r ImportOptions,
        report: &'r mut ImportReport,
        wanted: &Wanted,
    ) -> Self {
        Json {
            out,
            path: path.to_path_buf(),
            opts,
            report,
            pid: 0,
            kinds: Arc::default(),
            have_strings: false,
            have_agents: false,
            have_metadata: false,
            have_counters: false,
            wanted: *wanted,
            ordinal: 0,
            strict: false,
            check_rest: true,
            spans: Vec::new(),
            error: None,
            limit: ReadLimit::default(),
            section: String::new(),
            index: 0,
            ignored: BTreeMap::new(),
            counter_dispatches: wanted.counters_made,
            late: Vec::new(),
            late_tables: Vec::new(),
            replay: Replay::No,
            at: 0,
        }
    }

    /// After the walk: the object must have been found; deferred records are read, the
    /// process noted and ignored sections reported.
    fn finish(mut self, found: bool, index: usize) -> Result<()> {
        let path = self.path.clone();
        if !found {
            return Err(Error::input(
                &path,
                TOOL_KEY,
                format!("no per-process object #{index}"),
            ));
        }
        // Records that came before the tables they need: the tables held back first.
        self.tables_known();
        self.replay(true)?;
        self.replay(false)?;
        self.out.thread(self.pid, None);
        for (section, n) in std::mem::take(&mut self.ignored) {
            self.report.ignored.push(format!(
                "{}: {n} records of {section} not imported (RocPD v3 has no table for them)",
                path.display()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_detection() {
        assert!(looks_like_json(b"  {\"rocprofiler-sdk-tool\": [ ]}"));
        assert!(!looks_like_json(b"[1,2]"));
        assert!(!looks_like_json(b"{\"traceEvents\": []}"));
    }

    #[test]
    fn ints() {
        let v: Value = serde_json::from_str(
            r#"{"a": {"handle": 7}, "b": "0x10", "c": 18446744073709551615,
                "d": 18446744073709551616, "e": 1.5, "f": 3.0, "g": -9223372036854775808,
                "h": -9223372036854775809, "i": [1], "j": null, "k": "0xffffffffffffffff"}"#,
        )
        .unwrap();
        let i = |k: &str| int_value(&v[k], Range::I64);
        let b = |k: &str| int_value(&v[k], Range::Bits);
        assert_eq!(i("a"), Ok(Some(7)));
        assert_eq!(i("b"), Ok(Some(16)));
        assert!(i("c").unwrap_err().contains("out of range"));
        assert_eq!(b("c"), Ok(Some(-1)));
        assert!(i("d").unwrap_err().contains("out of range"));
        assert!(b("d").unwrap_err().contains("out of range"));
        assert!(i("e").unwrap_err().contains("expected an integer"));
        assert_eq!(i("f"), Ok(Some(3)));
        assert_eq!(i("g"), Ok(Some(i64::MIN)));
        assert!(i("h").unwrap_err().contains("out of range"));
        assert!(i("i").unwrap_err().contains("array"));
        assert_eq!(i("j"), Ok(None));
        assert!(i("k").unwrap_err().contains("out of range"));
        assert_eq!(b("k"), Ok(Some(-1)));
        // A bool is a flag's value only (D168).
        let v: Value = serde_json::from_str(r#"{"t": true, "f": false}"#).unwrap();
        for range in [Range::I64, Range::Bits] {
            let e = int_value(&v["t"], range).unwrap_err();
            assert_eq!(e, "expected an integer, found true");
            assert!(int_value(&v["f"], range).is_err());
        }
        assert_eq!(int_value(&v["t"], Range::Flag), Ok(Some(1)));
        assert_eq!(int_value(&v["f"], Range::Flag), Ok(Some(0)));
    }

    /// A document that gives the tool key twice is refused at the key's place: the readers
    /// took object i of every occurrence, so processes were merged or lost (D143 review).
    #[test]
    fn the_tool_key_given_twice_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let text = "{\"rocprofiler-sdk-tool\": [{\"metadata\": {\"pid\": 7}}], \
                    \"rocprofiler-sdk-tool\": [{\"metadata\": {\"pid\": 8}}]}";
        let path = tmp.path().join("t_results.json");
        std::fs::write(&path, text).unwrap();
        let Err(e) = prescan(&path) else {
            panic!("no error");
        };
        let e = e.to_string();
        assert!(
            e.contains("given twice") && e.contains("t_results.json"),
            "{e}"
        );
    }

    /// The pre-scan notes the places a describing read jumps over: the large record
    /// sections inside a process object's members, the process objects and the document's
    /// other large members, and nothing small; a member its descent cannot read leaves the
    /// places out and the process objects as they were; a gzip file has none, and a file
    /// changed since has none either (D136).
    #[test]
    fn the_pre_scan_notes_where_large_values_lie() {
        let tmp = tempfile::tempdir().unwrap();
        let records = format!("[{}{{}}]", "{\"a\":1,\"s\":\"x]}\"},".repeat(80_000));
        let text = format!(
            "{{\"rocprofiler-sdk-tool\": [{{\"metadata\": {{\"pid\": 7, \"init_time\": 5}}, \
             \"buffer_records\": {{\"hip_api\": {records}, \"kernel_dispatch\": []}}, \
             \"strings\": {{\"marker_api\": []}}}}, {{\"metadata\": {{\"pid\": 8}}}}], \
             \"other\": {records}}}"
        );
        let path = tmp.path().join("p_results.json");
        std::fs::write(&path, &text).unwrap();
        let found = prescan(&path).unwrap();
        let pids: Vec<_> = found.procs.iter().map(|m| m.pid).collect();
        assert_eq!(pids, [Some(7), Some(8)]);
        let span_of = |from: usize| {
            let at = from + text[from..].find('[').unwrap();
            let mut values = serde_json::Deserializer::from_str(&text[at..])
                .into_iter::<serde::de::IgnoredAny>();
            values.next().unwrap().unwrap();
            (at as u64, (at + values.byte_offset()) as u64)
        };
        let hip = span_of(text.find("\"hip_api\"").unwrap());
        let other = span_of(text.find("\"other\"").unwrap());
        let object_at = text.find("[{").unwrap() + 1;
        let object_end = text.find(", {\"metadata\": {\"pid\": 8").unwrap();
        let buffers_at = text.find("{\"hip_api\"").unwrap();
        let buffers_end = text.find(", \"strings\"").unwrap();
        let mut expected = vec![
            hip,
            other,
            (object_at as u64, object_end as u64),
            (buffers_at as u64, buffers_end as u64),
        ];
        expected.sort_unstable();
        assert!(hip.1 - hip.0 >= JUMP_MIN);
        assert_eq!(found.places.spans_in(&path), expected);
        // Places are a cache: a run compares equal without them.
        assert_eq!(found.places, crate::JsonPlaces::default());

        // The file changed since (a byte more): its places are not used.
        std::fs::write(&path, format!("{text} ")).unwrap();
        assert!(found.places.spans_in(&path).is_empty());

        // `hip_api` misses a colon: brace counting passes over it, the descent does not,
        // and the pre-scan without it finds the objects as before, noting nothing.
        let broken = text.replace("{\"hip_api\": [", "{\"hip_api\" [");
        std::fs::write(&path, &broken).unwrap();
        let found = prescan(&path).unwrap();
        assert_eq!(found.procs.len(), 2);
        assert!(found.places.spans_in(&path).is_empty());
        // Brackets that do not balance inside a member: the descent ends it elsewhere
        // and finds no process object where brace counting does.
        let unbalanced = r#"{"rocprofiler-sdk-tool": [{"buffer_records": {"a": [{]}},
            "metadata": {"pid": 1}}]}"#;
        std::fs::write(&path, unbalanced).unwrap();
        let found = prescan(&path).unwrap();
        let pids: Vec<_> = found.procs.iter().map(|m| m.pid).collect();
        assert_eq!(pids, [Some(1)]);

        let gz = tmp.path().join("g_results.json.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, text.as_bytes()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        let found = prescan(&gz).unwrap();
        assert_eq!(found.procs.len(), 2);
        assert!(found.places.spans_in(&gz).is_empty());
    }
}
