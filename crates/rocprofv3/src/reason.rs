//! Why a file named like a profiler output is not recognised (for directory walks that
//! would otherwise drop it without a word).

use std::path::Path;

use crate::csv_import::{display_column, kind_of_name, missing_columns, CsvKind};
use crate::{json_import, sniff, SNIFF_BYTES};

/// The 16-byte header of every SQLite database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// What the name of a file says it is.
enum Named {
    /// `*_results.db`, `*.rpd`.
    Database,
    /// `*_results.json`.
    Json,
    /// `*_results.json.gz`.
    JsonGz,
    /// `*_<kind>.csv` with a rocprofv3 kind.
    Csv(CsvKind),
}

fn named(path: &Path) -> Option<Named> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    let results =
        |ext: &str| name == format!("results{ext}") || name.ends_with(&format!("_results{ext}"));
    if results(".db") || name.ends_with(".rpd") {
        Some(Named::Database)
    } else if results(".json") {
        Some(Named::Json)
    } else if results(".json.gz") {
        Some(Named::JsonGz)
    } else {
        kind_of_name(path).map(Named::Csv)
    }
}

/// A rough description of the content of `head`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Content {
    Empty,
    Whitespace,
    Gzip,
    Sqlite,
    JsonObject,
    JsonArray,
    Text,
    Binary,
}

fn content(head: &[u8]) -> Content {
    let body = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    if head.is_empty() {
        return Content::Empty;
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return Content::Gzip;
    }
    if head.starts_with(SQLITE_MAGIC) {
        return Content::Sqlite;
    }
    let text = match std::str::from_utf8(body) {
        Ok(_) => true,
        // A head may end inside a multi-byte character.
        Err(e) => e.error_len().is_none() && e.valid_up_to() + 4 > body.len(),
    };
    if !text || body.contains(&0) {
        return Content::Binary;
    }
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        None => Content::Whitespace,
        Some(b'{') => Content::JsonObject,
        Some(b'[') => Content::JsonArray,
        Some(_) => Content::Text,
    }
}

fn generic(c: Content, not: &str) -> String {
    match c {
        Content::Empty => "empty file".into(),
        Content::Whitespace => "only whitespace".into(),
        Content::Gzip => format!("gzip-compressed, not {not}"),
        Content::Sqlite => format!("a SQLite database, not {not}"),
        Content::JsonObject | Content::JsonArray => format!("JSON text, not {not}"),
        Content::Text => format!("text, not {not}"),
        Content::Binary => format!("binary data, not {not}"),
    }
}

/// Whether the name of `path` alone says it is a rocprofv3 output (or a database) that
/// [`unrecognised_reason`] would explain: for entries that cannot be opened, or must not
/// be (a FIFO would block).
pub fn named_as_output(path: &Path) -> bool {
    named(path).is_some()
}

/// Says why a file whose name looks like a rocprofv3 or RocPD output is not recognised,
/// in a few words ("empty file", "gzip-compressed but not JSON", "text, not a SQLite
/// database", "CSV header lacks End_Timestamp", ...), for a directory walk to print as a
/// warning instead of dropping the file silently.
///
/// Names covered: `*_results.db` and `*.rpd` (SQLite expected), `*_results.json`,
/// `*_results.json.gz`, and `*_<kind>.csv` for every kind rocprofv3 writes
/// (`*_kernel_trace.csv`, `*_hip_api_trace.csv`, ..., `*_counter_collection.csv`,
/// `*_agent_info.csv`, `*_stats.csv`, `*_pc_sampling_*.csv`); matching is
/// case-insensitive, and the bare names (`results.db`, `kernel_trace.csv`) count too.
/// Returns `None` for any other name (Proton names are `rocpd_proton::unrecognised_reason`'s)
/// and for content that is recognised: a SQLite header for the database names, [`sniff`]
/// for the others. `head` is the start of the file ([`SNIFF_BYTES`] are enough; `path` is
/// read further only for a CSV header longer than `head`).
pub fn unrecognised_reason(path: &Path, head: &[u8]) -> Option<String> {
    let named = named(path)?;
    let c = content(head);
    match named {
        Named::Database => {
            if head.starts_with(SQLITE_MAGIC) {
                return None;
            }
            Some(match c {
                Content::Sqlite => unreachable!("checked above"),
                Content::Binary if SQLITE_MAGIC.starts_with(head) => {
                    "truncated SQLite header".into()
                }
                Content::Gzip => {
                    "gzip-compressed, not a SQLite database (decompress it first)".into()
                }
                other => generic(other, "a SQLite database"),
            })
        }
        Named::Json | Named::JsonGz => {
            if sniff(path, head).is_some() {
                return None;
            }
            let gz = matches!(named, Named::JsonGz);
            Some(match c {
                Content::Gzip => {
                    let text = json_import::gunzip_prefix(head, SNIFF_BYTES);
                    match content(&text) {
                        Content::Empty => {
                            "gzip-compressed, but the data is corrupt or truncated".into()
                        }
                        Content::JsonObject => no_tool_key("gzip-compressed JSON"),
                        Content::JsonArray => {
                            "gzip-compressed JSON array, not a rocprofiler-sdk-tool object".into()
                        }
                        _ => "gzip-compressed but not JSON".into(),
                    }
                }
                Content::JsonObject => no_tool_key(if gz {
                    "not gzip-compressed; JSON"
                } else {
                    "JSON"
                }),
                Content::JsonArray => "a JSON array, not a rocprofiler-sdk-tool object".into(),
                other if gz && other != Content::Empty => {
                    format!("not gzip-compressed; {}", generic(other, "JSON"))
                }
                other => generic(other, "JSON"),
            })
        }
        Named::Csv(kind) => {
            if sniff(path, head).is_some() {
                return None;
            }
            // A `*.csv.gz` file is judged by its decompressed text.
            let (text, c, gz) = match c {
                Content::Gzip => {
                    let text = json_import::gunzip_prefix(head, SNIFF_BYTES);
                    let c = content(&text);
                    if c == Content::Empty {
                        return Some(
                            "gzip-compressed, but the data is corrupt or truncated".into(),
                        );
                    }
                    (text, c, "gzip-compressed; ")
                }
                c => (head.to_vec(), c, ""),
            };
            match c {
                Content::Empty
                | Content::Whitespace
                | Content::Sqlite
                | Content::Binary
                | Content::Gzip => return Some(format!("{gz}{}", generic(c, "CSV text"))),
                _ => {}
            }
            let Some(line) = crate::header_of(path, &text) else {
                return Some(format!("{gz}no complete header line in the first 64 KiB"));
            };
            let cols = crate::csv_import::header_columns(&line);
            let mut missing = missing_columns(kind, &cols);
            if missing.is_empty() {
                // Kinds that are not imported have no required columns: name the ones that
                // make them recognisable.
                let want: &[&str] = match kind {
                    CsvKind::Stats => &["name", "calls", "totaldurationns"],
                    CsvKind::PcSampling => &["sample_timestamp", "exec_mask", "instruction"],
                    _ => &[],
                };
                missing = want
                    .iter()
                    .filter(|w| !cols.iter().any(|c| c == *w))
                    .map(|w| display_column(w))
                    .collect();
            }
            Some(if missing.is_empty() {
                format!(
                    "{gz}CSV header is not that of a rocprofv3 {} file",
                    kind.name()
                )
            } else {
                format!(
                    "{gz}CSV header lacks {} (not a rocprofv3 {} file)",
                    missing.join(", "),
                    kind.name()
                )
            })
        }
    }
}

fn no_tool_key(what: &str) -> String {
    format!("{what}, but no \"rocprofiler-sdk-tool\" key in the first 4 KiB")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_reasons() {
        let p = |n: &str| Path::new("/x").join(n);
        let r = |n: &str, h: &[u8]| unrecognised_reason(&p(n), h);
        assert_eq!(r("notes.txt", b""), None);
        assert_eq!(r("data.csv", b""), None);
        assert_eq!(r("1_results.db", b""), Some("empty file".into()));
        assert_eq!(r("1_results.db", b"SQLite format 3\0xxxx"), None);
        assert_eq!(
            r("run.rpd", b"hello\n"),
            Some("text, not a SQLite database".into())
        );
        assert_eq!(
            r("1_results.json", b"{\"a\": 1}"),
            Some("JSON, but no \"rocprofiler-sdk-tool\" key in the first 4 KiB".into())
        );
        assert_eq!(r("1_results.json", b"{\"rocprofiler-sdk-tool\": []}"), None);
        assert_eq!(
            r("1_results.json.gz", &[0x1f, 0x8b, 0, 0]),
            Some("gzip-compressed, but the data is corrupt or truncated".into())
        );
        assert_eq!(
            r("1_kernel_trace.csv", b"a,b,c\n1,2,3\n"),
            Some(
                "CSV header lacks Kernel_Name, Agent_Id, Correlation_Id, Start_Timestamp, \
                 End_Timestamp (not a rocprofv3 kernel_trace file)"
                    .into()
            )
        );
        assert_eq!(
            r("1_KERNEL_STATS.csv", b"Foo,Calls\n"),
            Some("CSV header lacks Name, TotalDurationNs (not a rocprofv3 stats file)".into())
        );
    }
}
