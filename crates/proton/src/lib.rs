//! Reader of Triton Proton profiles: read directly as a `Source` ([`ProtonSource`], what
//! `rocpd` uses), or imported into a RocPD schema-v3 SQLite database ([`import`], used by
//! the tests and the fuzzer to compare both readings).
//!
//! * `.hatchet` (JSON) and `.hatchet_msgpack` trees, including `.part_N` phase files: an
//!   aggregated calling-context tree without timestamps, written as a **synthetic-time**
//!   flame layout (one region per node, nested by inclusive width) on one thread named
//!   `Proton tree (aggregated, synthetic time)`.
//! * `.chrome_trace` (trace mode): real timeline events; complete (`ph: "X"`) events become
//!   regions on their pid/tid.
//!
//! Read directly, with no database ([`ProtonSource`]), a
//! [`ChromeTraceSource`] reads the file twice (once to describe it, once to stream its
//! events through an external sort); a [`TreeSource`] lays the tree out twice the same way.
//!
//! Each input file becomes its own source (its own guid and process; its own database
//! when imported). The
//! mapping is specified in `formats/proton/README.md`. Parsing is done by small pull
//! parsers (JSON and MessagePack) without recursion, so trees of any depth work, and every
//! parse error names the file and the byte offset.

#![warn(missing_docs)]

mod direct;
mod direct_tree;
mod pull;
mod trace;
mod tree;

use std::path::Path;

use rocpd_model::hash::{fnv1a64, FNV_OFFSET, FNV_OFFSET_2};
use rocpd_model::{Error, Result};

pub use direct::ChromeTraceSource;
pub use direct_tree::TreeSource;

use rocpd_model::{Catalog, Table};
use rocpd_pipeline::{PreparedStream, SortOptions, Source, StageDrop, StreamOptions};

/// Any Proton file read directly, with no database: a chrome trace or a tree.
#[derive(Clone)]
pub enum ProtonSource {
    /// A `.chrome_trace` file.
    Chrome(ChromeTraceSource),
    /// A `.hatchet` or `.hatchet_msgpack` tree.
    Tree(TreeSource),
}

impl ProtonSource {
    /// Reads `path`, a Proton file of `kind`, to describe it: every error of the file is
    /// found here, with the importer's message.
    pub fn open(path: &Path, kind: ProtonKind) -> Result<Self> {
        Ok(match kind {
            ProtonKind::ChromeTrace => ProtonSource::Chrome(ChromeTraceSource::open(path)?),
            ProtonKind::Tree | ProtonKind::TreeMsgpack => {
                ProtonSource::Tree(TreeSource::open(path, kind)?)
            }
        })
    }

    /// The kind of file it reads.
    pub fn kind(&self) -> ProtonKind {
        match self {
            ProtonSource::Chrome(_) => ProtonKind::ChromeTrace,
            ProtonSource::Tree(t) => t.kind(),
        }
    }

    /// The same source with its stream sorted under `options` (memory budget, where run
    /// files go).
    pub fn with_sort_options(self, options: SortOptions) -> Self {
        match self {
            ProtonSource::Chrome(c) => ProtonSource::Chrome(c.with_sort_options(options)),
            ProtonSource::Tree(t) => ProtonSource::Tree(t.with_sort_options(options)),
        }
    }

    /// What the reading left out or made up, as the importer's notes say it.
    pub fn notes(&self) -> &[String] {
        match self {
            ProtonSource::Chrome(c) => c.notes(),
            ProtonSource::Tree(t) => t.notes(),
        }
    }

    /// The guid of the input (the importer's, so a file read both ways is one process).
    pub fn guid(&self) -> &str {
        match self {
            ProtonSource::Chrome(c) => c.guid(),
            ProtonSource::Tree(t) => t.guid(),
        }
    }

    fn inner(&self) -> &dyn Source {
        match self {
            ProtonSource::Chrome(c) => c,
            ProtonSource::Tree(t) => t,
        }
    }
}

impl Source for ProtonSource {
    fn path(&self) -> &Path {
        self.inner().path()
    }
    fn source_count(&self) -> usize {
        self.inner().source_count()
    }
    fn catalog(&self, first_source: u32) -> Result<Catalog> {
        self.inner().catalog(first_source)
    }
    fn event_span(&self) -> Result<Option<(i64, i64)>> {
        self.inner().event_span()
    }
    fn find_marker(&self, text: &str) -> Result<Vec<(i64, i64)>> {
        self.inner().find_marker(text)
    }
    fn count_rows(&self) -> Result<Vec<(Table, u64)>> {
        self.inner().count_rows()
    }
    fn dropped(&self) -> Result<Vec<StageDrop>> {
        self.inner().dropped()
    }
    fn stream_count(&self) -> usize {
        self.inner().stream_count()
    }
    fn prepare(
        &self,
        first_source: u32,
        options: &StreamOptions,
    ) -> Result<Vec<Box<dyn PreparedStream + '_>>> {
        self.inner().prepare(first_source, options)
    }
}

/// What kind of Proton file an input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtonKind {
    /// A `.hatchet` JSON tree (`[root, device_metadata]`).
    Tree,
    /// A `.hatchet_msgpack` tree (same structure, MessagePack).
    TreeMsgpack,
    /// A `.chrome_trace` file (one or several concatenated JSON documents).
    ChromeTrace,
}

/// How many bytes of a file [`sniff`] wants to see.
pub const SNIFF_BYTES: usize = 8192;

/// What an import wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportReport {
    /// Rows per RocPD table base name, in schema order.
    pub rows: Vec<(String, u64)>,
    /// Remarks: what was synthesised, what was left out on purpose.
    pub notes: Vec<String>,
    /// The guid of the written database.
    pub guid: String,
}

impl ImportReport {
    /// Rows written to table `base` (`rocpd_region`, ...).
    pub fn count(&self, base: &str) -> u64 {
        self.rows
            .iter()
            .find(|(t, _)| t == base)
            .map_or(0, |(_, n)| *n)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Recognises a Proton file from its first bytes (`head`).
///
/// * Tree: a JSON array whose first element is an object with a `"frame"` key, or a bare
///   root object with `"frame"` and `"children"`; named `*.hatchet`, also one whose
///   first key is `"children"` (sorted keys, a leftmost path deeper than the head).
/// * MessagePack tree: an array of one or two elements whose first is a map, with a
///   `frame` key in the head; named `*.hatchet_msgpack`, also a longer array or a bare
///   map, and a `children` key instead of `frame` (a deep tree).
/// * Chrome trace: a JSON object naming `"traceEvents"`, or an array of objects with
///   `"ph"`. An empty file named `*.chrome_trace` (what Proton 3.5–3.7 write for a session
///   without events) is a chrome trace too.
pub fn sniff(path: &Path, head: &[u8]) -> Option<ProtonKind> {
    let is_ext = |e: &str| {
        path.extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| x.eq_ignore_ascii_case(e))
    };
    let head = head.strip_prefix(&[0xEF, 0xBB, 0xBF][..]).unwrap_or(head);
    let is_map = |b: &u8| (0x80..=0x8f).contains(b) || *b == 0xde || *b == 0xdf;
    // Beyond the shape Proton writes (an array of two, a `frame` key in the head), only a
    // file named as a Proton tree is taken for one: a bare root, more elements, or only
    // the leftmost path's `children` in the head (a deep tree). Other MessagePack with
    // such keys is not Proton's business (D146).
    let named = is_ext("hatchet_msgpack");
    let node_key =
        || find(head, b"frame").or_else(|| named.then(|| find(head, b"\xa8children")).flatten());
    match head {
        [0x91 | 0x92, m, ..] if is_map(m) => return node_key().map(|_| ProtonKind::TreeMsgpack),
        [0x93..=0x9f | 0xdc | 0xdd, ..] if named => {
            let skip = match head[0] {
                0xdc => 3,
                0xdd => 5,
                _ => 1,
            };
            return match head.get(skip) {
                Some(m) if is_map(m) => node_key().map(|_| ProtonKind::TreeMsgpack),
                _ => None,
            };
        }
        [m, ..] if is_map(m) && named => {
            return node_key().map(|_| ProtonKind::TreeMsgpack);
        }
        [0x90..=0x9f | 0xdc | 0xdd, ..] => return None,
        _ => {}
    }
    let start = head.iter().position(|c| !c.is_ascii_whitespace());
    let Some(start) = start else {
        return (head.iter().all(|c| c.is_ascii_whitespace()) && is_ext("chrome_trace"))
            .then_some(ProtonKind::ChromeTrace);
    };
    let body = &head[start..];
    let frame = find(body, b"\"frame\"");
    let ph = find(body, b"\"ph\"");
    // Proton writes keys sorted: `children` comes before `frame`, and a deep tree's
    // leftmost path can fill the first 8 KiB with nothing but `{"children": [`. Only in a
    // file named as a tree: other JSON has `children` keys too.
    let children_first = is_ext("hatchet") && {
        let after = |b: &[u8], c: u8| -> Option<usize> {
            let i = b.iter().position(|x| !x.is_ascii_whitespace())?;
            (b[i] == c).then_some(i + 1)
        };
        let obj = if body[0] == b'[' {
            after(&body[1..], b'{').map(|i| i + 1)
        } else {
            Some(1)
        };
        obj.and_then(|o| after(&body[o..], b'"').map(|i| o + i - 1))
            .is_some_and(|k| body[k..].starts_with(b"\"children\""))
    };
    match body[0] {
        b'{' => {
            if find(body, b"\"traceEvents\"").is_some() {
                Some(ProtonKind::ChromeTrace)
            } else if (frame.is_some() && find(body, b"\"children\"").is_some()) || children_first {
                Some(ProtonKind::Tree)
            } else if is_ext("chrome_trace") {
                // Named as one: its `traceEvents` may come after long leading keys, and
                // if it has none the reader says so.
                Some(ProtonKind::ChromeTrace)
            } else {
                None
            }
        }
        b'[' => {
            let next = body[1..].iter().find(|c| !c.is_ascii_whitespace());
            if next != Some(&b'{') {
                return None;
            }
            match (frame, ph) {
                (Some(f), Some(p)) if p < f => Some(ProtonKind::ChromeTrace),
                (Some(_), _) => Some(ProtonKind::Tree),
                (None, Some(_)) => Some(ProtonKind::ChromeTrace),
                (None, None) if children_first => Some(ProtonKind::Tree),
                (None, None) => None,
            }
        }
        _ => None,
    }
}

/// The lower-cased extension of a file named like a Proton output, and what it should
/// then hold.
fn named(path: &Path) -> Option<(String, &'static str)> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    let expected = match ext.as_str() {
        "hatchet" => "a Proton tree",
        "hatchet_msgpack" => "a MessagePack Proton tree",
        "chrome_trace" => "a chrome trace",
        _ => return None,
    };
    Some((ext, expected))
}

/// Whether the name of `path` alone says it is a Proton output that
/// [`unrecognised_reason`] would explain: for entries that cannot be opened, or must not
/// be (a FIFO would block).
pub fn named_as_output(path: &Path) -> bool {
    named(path).is_some()
}

/// Says why a file whose name looks like a Proton output (`*.hatchet`, `*.hatchet_msgpack`,
/// `*.chrome_trace`, also `*.part_N.hatchet`; case-insensitive) is not recognised by
/// [`sniff`], in a few words ("empty file", "JSON without a \"frame\" key in the first
/// 8 KiB", "gzip-compressed; Proton writes plain files", ...), for a directory walk to
/// print as a warning instead of dropping the file silently.
///
/// Returns `None` for other names and for content [`sniff`] recognises. `head` is the
/// start of the file ([`SNIFF_BYTES`] of it).
pub fn unrecognised_reason(path: &Path, head: &[u8]) -> Option<String> {
    let (ext, expected) = named(path)?;
    if sniff(path, head).is_some() {
        return None;
    }
    let body = head.strip_prefix(&[0xEF, 0xBB, 0xBF][..]).unwrap_or(head);
    if head.is_empty() {
        return Some("empty file".into());
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return Some("gzip-compressed; Proton writes plain files (gunzip it first)".into());
    }
    if head.starts_with(b"SQLite format 3\0") {
        return Some(format!("a SQLite database, not {expected}"));
    }
    if matches!(body, [0x91 | 0x92, ..])
        || (ext == "hatchet_msgpack" && matches!(body, [0x90..=0x9f | 0xdc | 0xdd, ..]))
    {
        return Some(
            if ext == "hatchet_msgpack" || find(body, b"frame").is_none() {
                "MessagePack without a map of a node with a \"frame\" key in the first 8 KiB".into()
            } else {
                "MessagePack data whose first element is not a node map".into()
            },
        );
    }
    let text = match std::str::from_utf8(body) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    };
    if !text || body.contains(&0) {
        return Some(format!("binary data, not {expected}"));
    }
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    Some(match (ext.as_str(), first) {
        (_, None) => "only whitespace".into(),
        ("hatchet_msgpack", Some(b'{' | b'[')) => "JSON text, not MessagePack".into(),
        ("hatchet_msgpack", _) => format!("text, not {expected}"),
        ("hatchet", Some(b'[' | b'{')) => {
            if find(body, b"\"frame\"").is_none() {
                "JSON without a \"frame\" key in the first 8 KiB (not a Proton tree)".into()
            } else {
                "JSON whose first element is not a node object with \"frame\" and \"children\""
                    .into()
            }
        }
        ("chrome_trace", Some(b'[')) => {
            "a JSON array without event objects with \"ph\" in the first 8 KiB (not a chrome trace)"
                .into()
        }
        _ => format!("text, not JSON ({expected} expected)"),
    })
}

/// Reads the first [`SNIFF_BYTES`] of `path` and calls [`sniff`].
pub fn sniff_file(path: &Path) -> Result<Option<ProtonKind>> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| Error::input(path, "open", e.to_string()))?;
    let mut head = Vec::new();
    f.take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| Error::input(path, "byte 0", e.to_string()))?;
    Ok(sniff(path, &head))
}

/// Bytes of the start of a file that its guid hashes.
const GUID_HEAD: usize = 65536;

/// Imports one Proton file into a new RocPD v3 database at `dest` (which must not exist).
///
/// The guid is derived from the file (same file → same guid). On error the partial
/// database is removed. Parse errors name the file and the byte offset.
pub fn import(path: &Path, kind: ProtonKind, dest: &Path) -> Result<ImportReport> {
    if dest.exists() {
        return Err(Error::output(
            dest,
            "refusing to overwrite an existing file",
        ));
    }
    let result = import_inner(path, kind, dest);
    if result.is_err() {
        let _ = std::fs::remove_file(dest);
    }
    result
}

/// The deterministic guid of `path`: two FNV-1a hashes of the format, file name and size,
/// the first continued over the whole content, the second over the first 64 KiB, laid
/// out as a UUIDv7-shaped string. The whole content counts: two runs' `proton.hatchet`
/// of one size and the same first 64 KiB (a deep tree's leftmost path) are two
/// processes, not one given twice (D146). It costs one read of the file.
fn guid_of(path: &Path, kind: ProtonKind) -> Result<String> {
    use std::io::Read;
    let open = |e: std::io::Error| Error::input(path, "open", e.to_string());
    let mut f = std::fs::File::open(path).map_err(open)?;
    let len = f.metadata().map_err(open)?.len();
    let mut a = FNV_OFFSET;
    let mut b = FNV_OFFSET_2;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let kind_tag = format!("proton:{kind:?}");
    for part in [kind_tag.as_bytes(), name.as_bytes(), &len.to_le_bytes()] {
        a = fnv1a64(part, a);
        b = fnv1a64(part, b);
    }
    let mut chunk = vec![0u8; 1 << 20];
    let mut offset = 0u64;
    loop {
        let n = match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::input(path, format!("byte {offset}"), e.to_string())),
        };
        let head_left = (GUID_HEAD as u64).saturating_sub(offset);
        let head_part = n.min(usize::try_from(head_left).unwrap_or(usize::MAX));
        b = fnv1a64(&chunk[..head_part], b);
        a = fnv1a64(&chunk[..n], a);
        offset = offset.saturating_add(n as u64);
        rocpd_pipeline::cleanup::check_cancelled()?;
    }
    let a = (a & !0xF000) | 0x7000; // version 7 nibble in the third group
    let b = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000; // variant 10
    Ok(format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xFFFF,
        a & 0xFFFF,
        b >> 48,
        b & 0xFFFF_FFFF_FFFF
    ))
}

/// The hash of the synthetic node every Proton input is on (Proton records no host).
fn node_hash() -> i64 {
    (fnv1a64(b"proton", FNV_OFFSET) % i64::MAX as u64) as i64
}

/// The file name of `path`, as notes and process names show it.
fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn import_inner(path: &Path, kind: ProtonKind, dest: &Path) -> Result<ImportReport> {
    // The file read directly, written by the one RocPD writer (`rocpd_db::RocpdSink`).
    let source = ProtonSource::open(path, kind)?;
    let guid = source.guid().to_string();
    let notes = source.notes().to_vec();
    let catalog = std::sync::Arc::new(source.catalog(0)?);
    rocpd_db::write_rocpd(&mut vec![(0, Box::new(source))], catalog, dest)?;
    let out = |e: rusqlite::Error| Error::output(dest, e.to_string());
    let conn = rusqlite::Connection::open_with_flags(
        dest,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(out)?;
    let rows = rocpd_dbwrite::row_counts(&conn, &guid).map_err(out)?;
    Ok(ImportReport { rows, notes, guid })
}

/// The node id of the node with `hash` (32-bit safe).
pub(crate) fn node_id(hash: i64) -> i64 {
    hash % i64::from(u32::MAX)
}

/// A parse error as an input error naming the byte offset.
pub(crate) fn parse_error(path: &Path, e: pull::PullError) -> Error {
    Error::input(path, format!("byte {}", e.offset), e.message)
}
