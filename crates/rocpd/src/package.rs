//! rocpd packages as inputs: a `.rpdb` folder, as AMD's `rocpd package` writes it, holds
//! databases and an `index.yaml` naming them:
//!
//! ```yaml
//! rocprofiler-sdk:
//!   rocpd:
//!     rocpd_package_version: '1.0'
//!     path: .
//!     files:
//!     - merged_db_0.db
//!     - 'run-*.db'
//! ```
//!
//! `files` is one path or a list of them, each relative to the index's directory joined
//! with `path` (absolute paths are taken as they are), and may hold wildcards.

use std::path::{Path, PathBuf};

use rocpd_model::{Error, Result};

use crate::yaml::{self, Node, Value};

/// The largest index read (an index lists file names; anything bigger is not one).
const MAX_INDEX_BYTES: u64 = 4 << 20;

/// The index file names looked for in a `.rpdb` folder, in order.
const INDEX_NAMES: [&str; 2] = ["index.yaml", "index.yml"];

/// The package version this reader knows (AMD's `rocpd_package_version`).
const KNOWN_VERSION: &str = "1.0";

/// One `files` entry: its text, the line it is on, and the path or pattern it names.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub text: String,
    pub line: usize,
    pub path: PathBuf,
    /// The entry holds `*`, `?` or `[`: `pattern` is what to expand (the directory part
    /// escaped, so only the entry's own wildcards count).
    pub pattern: Option<String>,
}

/// A read index.
#[derive(Debug, Clone)]
pub(crate) struct Index {
    pub entries: Vec<Entry>,
    /// A note when the package version is not one this reader knows.
    pub warning: Option<String>,
}

/// Whether `p` names a package folder (`*.rpdb`, as AMD's tools decide).
pub(crate) fn is_package_dir(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("rpdb"))
        && p.is_dir()
}

/// Whether `p` names a package index given directly (`*.yaml`, `*.yml`).
pub(crate) fn is_index_file(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}

/// The index of a package folder, if it has one.
pub(crate) fn index_of(dir: &Path) -> Option<PathBuf> {
    INDEX_NAMES
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// The mapping `key` of `node`, naming `what` in the error when `node` is no mapping.
fn field<'a>(file: &Path, node: &'a Node, key: &str, what: &str) -> Result<Option<&'a Node>> {
    match &node.value {
        Value::Map(m) => Ok(m.iter().find(|(k, _)| k == key).map(|(_, v)| v)),
        _ => Err(Error::input(
            file,
            format!("line {}", node.line),
            format!("{what} must be a mapping (`key: value` lines)"),
        )),
    }
}

/// Reads and resolves the index at `file`.
pub(crate) fn read_index(file: &Path) -> Result<Index> {
    let io = |e: std::io::Error| Error::input(file, "byte 0", format!("cannot read: {e}"));
    let f = rocpd_pipeline::open_regular(file)?;
    let size = f.metadata().map_err(io)?.len();
    if size > MAX_INDEX_BYTES {
        return Err(Error::input(
            file,
            "byte 0",
            format!("{size} bytes is too large for a rocpd package index"),
        ));
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_INDEX_BYTES + 1), &mut bytes)
        .map_err(io)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::input(
            file,
            format!("byte {}", e.utf8_error().valid_up_to()),
            "not UTF-8 text, so not a rocpd package index",
        )
    })?;
    let root = yaml::parse(&text)
        .map_err(|e| Error::input(file, format!("line {}", e.line), e.message))?;
    let not_index = |line: usize| {
        Error::input(
            file,
            format!("line {line}"),
            "not a rocpd package index: it has no `rocprofiler-sdk:` mapping with `rocpd:` in it",
        )
    };
    let sdk = field(file, &root, "rocprofiler-sdk", "the document")?.ok_or(not_index(root.line))?;
    let rocpd = field(file, sdk, "rocpd", "`rocprofiler-sdk`")?.ok_or(not_index(sdk.line))?;
    let scalar = |key: &str| -> Result<Option<(String, usize)>> {
        match field(file, rocpd, key, "`rocpd`")? {
            None => Ok(None),
            Some(Node {
                value: Value::Null, ..
            }) => Ok(None),
            Some(Node {
                value: Value::Scalar(s),
                line,
            }) => Ok(Some((s.clone(), *line))),
            Some(n) => Err(Error::input(
                file,
                format!("line {}", n.line),
                format!("`{key}` must be a single value"),
            )),
        }
    };
    let warning = scalar("rocpd_package_version")?.and_then(|(v, line)| {
        (v != "1" && !v.starts_with("1.")).then(|| {
            format!(
                "{}: line {line}: rocpd_package_version {v:?} is not one this reader knows ({KNOWN_VERSION}); read as {KNOWN_VERSION}",
                file.display()
            )
        })
    });
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = match scalar("path")? {
        Some((p, _)) if !p.is_empty() => dir.join(p),
        _ => dir,
    };
    let no_files = |line: usize| {
        Error::input(
            file,
            format!("line {line}"),
            "the index lists no files (`files:` is missing or empty)",
        )
    };
    let files = field(file, rocpd, "files", "`rocpd`")?.ok_or(no_files(rocpd.line))?;
    let items: Vec<(String, usize)> = match &files.value {
        Value::Scalar(s) if !s.is_empty() => vec![(s.clone(), files.line)],
        Value::List(items) if !items.is_empty() => items
            .iter()
            .map(|n| match &n.value {
                Value::Scalar(s) if !s.is_empty() => Ok((s.clone(), n.line)),
                _ => Err(Error::input(
                    file,
                    format!("line {}", n.line),
                    "a `files` entry must be a file name or pattern",
                )),
            })
            .collect::<Result<_>>()?,
        Value::Map(_) => {
            return Err(Error::input(
                file,
                format!("line {}", files.line),
                "`files` must be a file name or a list of them",
            ))
        }
        _ => return Err(no_files(files.line)),
    };
    let entries = items
        .into_iter()
        .map(|(text, line)| {
            let given = Path::new(&text);
            let path = if given.is_absolute() {
                given.to_path_buf()
            } else {
                base.join(given)
            };
            let pattern = match (crate::expand::has_glob(&text), base.to_str()) {
                (false, _) => None,
                (true, _) if given.is_absolute() => Some(text.clone()),
                (true, Some(b)) => {
                    let mut b = glob::Pattern::escape(b);
                    if !b.ends_with(std::path::MAIN_SEPARATOR) {
                        b.push(std::path::MAIN_SEPARATOR);
                    }
                    Some(b + &text)
                }
                // Patterns are text: a directory named otherwise would match nothing.
                (true, None) => {
                    return Err(Error::input(
                        file,
                        format!("line {line}"),
                        format!(
                            "files entry {text:?}: a pattern needs the package's directory \
                             path to be UTF-8, and {} is not; list the files by name",
                            base.display()
                        ),
                    ))
                }
            };
            Ok(Entry {
                text,
                line,
                path,
                pattern,
            })
        })
        .collect::<Result<_>>()?;
    Ok(Index { entries, warning })
}

/// The error for a `files` entry that names nothing.
pub(crate) fn missing(index: &Path, e: &Entry) -> Error {
    let why = if e.pattern.is_some() {
        "no file matches this pattern"
    } else {
        "no such file or directory"
    };
    Error::input(
        index,
        format!("line {}", e.line),
        format!("files entry {:?}: {why} ({})", e.text, e.path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(text: &str) -> (tempfile::TempDir, Result<Index>) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index.yaml");
        std::fs::write(&p, text).unwrap();
        let r = read_index(&p);
        (dir, r)
    }

    #[test]
    fn entries_resolve_against_the_index_and_path() {
        let (dir, r) = index(
            "rocprofiler-sdk:\n  rocpd:\n    rocpd_package_version: '1.0'\n    path: sub\n    files: [a.db, '/abs/b.db', 'r[1]-*.db']\n",
        );
        let ix = r.unwrap();
        assert!(ix.warning.is_none());
        let paths: Vec<PathBuf> = ix.entries.iter().map(|e| e.path.clone()).collect();
        let base = dir.path().join("sub");
        assert_eq!(
            paths,
            [
                base.join("a.db"),
                PathBuf::from("/abs/b.db"),
                base.join("r[1]-*.db")
            ]
        );
        assert_eq!(ix.entries[0].pattern, None);
        let pat = ix.entries[2].pattern.clone().unwrap();
        assert!(pat.ends_with("r[1]-*.db") && pat.len() > "r[1]-*.db".len());
    }

    #[test]
    fn a_single_file_and_an_unknown_version() {
        let (_d, r) = index(
            "rocprofiler-sdk:\n  rocpd:\n    rocpd_package_version: \"2.0\"\n    files: one.db\n",
        );
        let ix = r.unwrap();
        assert_eq!(ix.entries.len(), 1);
        assert_eq!(ix.entries[0].line, 4);
        assert!(ix.warning.unwrap().contains("\"2.0\""));
    }

    #[test]
    fn indexes_without_files_or_the_mapping_are_refused() {
        for (text, words) in [
            (
                "rocprofiler-sdk:\n  rocpd:\n    files: ''\n",
                "lists no files",
            ),
            (
                "rocprofiler-sdk:\n  rocpd:\n    path: .\n",
                "lists no files",
            ),
            (
                "rocprofiler-sdk:\n  rocpd:\n    files:\n    - ''\n",
                "must be a file name",
            ),
            (
                "rocprofiler-sdk:\n  rocpd:\n    files:\n      a: b\n",
                "a list of them",
            ),
            (
                "rocprofiler-sdk:\n  other: 1\n",
                "not a rocpd package index",
            ),
            ("- a.db\n", "must be a mapping"),
            (
                "rocprofiler-sdk:\n  rocpd:\n    path: [a]\n    files: x\n",
                "single value",
            ),
        ] {
            let (_d, r) = index(text);
            let e = r.expect_err(text).to_string();
            assert!(
                e.contains(words) && e.contains("index.yaml: line "),
                "{text:?}: {e}"
            );
        }
    }
}
