//! Expanding input arguments (files, globs, directories, rocpd packages) into input
//! files; directories contribute the files whose content is recognised, not their names;
//! a package (`.rpdb` folder or `index.yaml`) the files its index lists.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

use rocpd_model::{Error, Result};

use crate::package;

/// The input files of some arguments, and warnings about files left out of directory
/// walks although their names look like a profiler's output.
#[derive(Debug, Default, Clone)]
pub struct Expanded {
    /// Input files, in order, each once.
    pub files: Vec<PathBuf>,
    /// One line per file left out, naming it and saying why.
    pub warnings: Vec<String>,
    /// The package indexes read (`index.yaml`): inputs too, which no output may replace.
    pub indexes: Vec<PathBuf>,
}

/// Whether an argument or an index entry is a pattern rather than a path.
pub(crate) fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The paths `pattern` matches, sorted; a directory that cannot be read is named in
/// `warnings` (a match left out without a word was a rank lost silently).
///
/// A pattern with `**` is matched on a walk of the directory before its first wildcard
/// that reads each directory once: the glob crate follows links back to a directory it is
/// in, and two `a -> .` links made its walk endless (2^40 paths before the system's
/// link limit), with memory growing.
fn matches(
    pattern: &str,
    warnings: &mut Vec<String>,
) -> std::result::Result<Vec<PathBuf>, glob::PatternError> {
    let mut found = if pattern.contains("**") {
        deep_matches(pattern, warnings)?
    } else {
        let mut found = Vec::new();
        for r in glob::glob(pattern)? {
            match r {
                Ok(p) => found.push(p),
                Err(e) => warnings.push(format!(
                    "{}: skipped: cannot read directory ({}), so {pattern:?} may match more",
                    e.path().display(),
                    e.error()
                )),
            }
        }
        found
    };
    found.sort();
    Ok(found)
}

/// [`matches`] for a pattern with `**`: every path below the pattern's literal leading
/// directories, each directory read once, matched as the glob crate matches (`*` within a
/// component, `**` across any number of them, dot files included).
fn deep_matches(
    pattern: &str,
    warnings: &mut Vec<String>,
) -> std::result::Result<Vec<PathBuf>, glob::PatternError> {
    let compiled = glob::Pattern::new(pattern)?;
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let mut base = PathBuf::new();
    for c in Path::new(pattern).components() {
        if has_glob(&c.as_os_str().to_string_lossy()) {
            break;
        }
        base.push(c);
    }
    // As in the glob crate, a pattern ending in `**` matches directories only.
    let dirs_only = pattern.ends_with("**");
    let mut found = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut todo = vec![base];
    while let Some(dir) = todo.pop() {
        let read_at = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir.as_path()
        };
        let Ok(real) = std::fs::canonicalize(read_at) else {
            continue;
        };
        if !seen.insert(real) {
            continue;
        }
        let entries = match std::fs::read_dir(read_at) {
            Ok(e) => e,
            Err(e) => {
                warnings.push(format!(
                    "{}: skipped: cannot read directory ({e}), so {pattern:?} may match more",
                    read_at.display()
                ));
                continue;
            }
        };
        let mut names: Vec<OsString> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        names.sort();
        // Depth first, in name order: pushed in reverse.
        for name in names.into_iter().rev() {
            let p = dir.join(&name);
            let is_dir = p.is_dir();
            if (is_dir || !dirs_only) && compiled.matches_path_with(&p, options) {
                found.push(p.clone());
            }
            if is_dir {
                todo.push(p);
            }
        }
    }
    Ok(found)
}

/// The first 8 KiB of `path` (what detection looks at). Refuses a file that is not a
/// regular file before opening it.
pub(crate) fn head(path: &Path) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; 8192];
    let mut f = rocpd_pipeline::open_regular(path)?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::input(path, "byte 0", e.to_string())),
        }
    }
    buf.truncate(n);
    Ok(buf)
}

/// Whether the content of `path` is an input this library reads (for directory walks):
/// `Ok(None)` when it is, otherwise why not when its name says it should be
/// (`Some(Some(reason))`), or `Some(None)` for any other file.
pub fn unrecognised(path: &Path) -> Result<Option<Option<String>>> {
    let h = head(path)?;
    if rocpd_db::looks_like_sqlite(&h)
        || rocpd_rocprofv3::sniff(path, &h).is_some()
        || rocpd_proton::sniff(path, &h).is_some()
    {
        return Ok(None);
    }
    Ok(Some(
        rocpd_rocprofv3::unrecognised_reason(path, &h)
            .or_else(|| rocpd_proton::unrecognised_reason(path, &h)),
    ))
}

fn dir_error(dir: &Path, e: std::io::Error) -> Error {
    Error::Usage(format!("{}: cannot read directory: {e}", dir.display()))
}

/// Walks `dir` (sorted, recursively) collecting files whose content is recognised.
fn walk(dir: &Path, out: &mut Expanded) -> Result<()> {
    walk_once(dir, out, &mut std::collections::HashSet::new())
}

/// [`walk`], reading each directory once: links that lead back to a directory already
/// read (`a -> .`) would otherwise make the walk endless.
fn walk_once(
    dir: &Path,
    out: &mut Expanded,
    seen: &mut std::collections::HashSet<PathBuf>,
) -> Result<()> {
    let real = std::fs::canonicalize(dir).map_err(|e| dir_error(dir, e))?;
    if !seen.insert(real) {
        out.warnings.push(format!(
            "{}: skipped: a directory already read (through a link)",
            dir.display()
        ));
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| dir_error(dir, e))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .map_err(|e| dir_error(dir, e))?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk_once(&p, out, seen)?;
        } else if p.is_file() {
            let looked = match unrecognised(&p) {
                Ok(looked) => looked,
                // A file that cannot be opened: named like a rank's output, it is named in
                // a warning; any other (a colleague's notes) does not stop the walk.
                Err(e) => match unreadable_kind(&p) {
                    Some(_) => Some(Some(format!("cannot be read ({e})"))),
                    None => Some(None),
                },
            };
            match looked {
                None => out.files.push(p),
                // A rank's output that cannot be read must not vanish without a word.
                Some(Some(why)) => out
                    .warnings
                    .push(format!("{}: skipped: {why}", p.display())),
                Some(None) => {}
            }
        } else if let Some(what) = unreadable_kind(&p) {
            out.warnings
                .push(format!("{}: skipped: {what}", p.display()));
        }
    }
    Ok(())
}

/// Why an entry of a walked directory that is neither a directory nor a regular file (a
/// link to nothing, a FIFO, socket or device) is not read, when its name says it would be
/// a rank's output: like an unreadable file, it must not vanish without a word.
fn unreadable_kind(p: &Path) -> Option<&'static str> {
    let ext = p.extension().and_then(|e| e.to_str())?.to_ascii_lowercase();
    // By name only: opening a FIFO would block.
    let named = ["db", "rpd"].contains(&ext.as_str())
        || rocpd_rocprofv3::named_as_output(p)
        || rocpd_proton::named_as_output(p);
    if !named {
        return None;
    }
    Some(match p.metadata() {
        Err(_) if p.symlink_metadata().is_ok() => "a link that leads to no file (dead, or a loop)",
        Err(_) => "cannot be read",
        Ok(_) => "not a regular file (a FIFO, socket or device)",
    })
}

/// Adds one path an argument or a glob named: a package folder by its index (a `.rpdb`
/// folder without one like any directory), another directory by walking it, an index
/// file by its entries, any other file as it is.
fn add(p: &Path, out: &mut Expanded) -> Result<()> {
    if p.is_dir() {
        match package::is_package_dir(p)
            .then(|| package::index_of(p))
            .flatten()
        {
            Some(index) => add_index(&index, out),
            None => walk(p, out),
        }
    } else {
        // A FIFO or device would block or never end: refuse it before opening it.
        rocpd_pipeline::check_regular(p)?;
        if package::is_index_file(p) {
            add_index(p, out)
        } else {
            out.files.push(p.to_path_buf());
            Ok(())
        }
    }
}

/// Adds the files a package index lists, in its order (a pattern's matches sorted).
/// Every entry must name something. Entries are files (kept whatever their content, like
/// files named on the command line) or directories (walked); an index does not lead to
/// further indexes.
fn add_index(index: &Path, out: &mut Expanded) -> Result<()> {
    let ix = package::read_index(index)?;
    out.indexes.push(index.to_path_buf());
    out.warnings.extend(ix.warning);
    // An entry given again adds nothing (its files are read once): expanding it again
    // cost a walk or a directory read each, a million times in a crafted index.
    let mut done = std::collections::HashSet::new();
    for e in &ix.entries {
        if !done.insert((e.path.clone(), e.pattern.clone())) {
            continue;
        }
        let found: Vec<PathBuf> = match &e.pattern {
            Some(pattern) => matches(pattern, &mut out.warnings).map_err(|g| {
                Error::input(
                    index,
                    format!("line {}", e.line),
                    format!("files entry {:?}: bad pattern: {g}", e.text),
                )
            })?,
            None if e.path.exists() => vec![e.path.clone()],
            None => Vec::new(),
        };
        if found.is_empty() {
            return Err(package::missing(index, e));
        }
        for f in found {
            if f.is_dir() {
                let before = out.files.len();
                walk(&f, out)?;
                if out.files.len() == before {
                    return Err(Error::input(
                        index,
                        format!("line {}", e.line),
                        format!(
                            "files entry {:?}: the directory {} holds no profiling data",
                            e.text,
                            f.display()
                        ),
                    ));
                }
            } else {
                rocpd_pipeline::check_regular(&f)?;
                out.files.push(f);
            }
        }
    }
    Ok(())
}

/// Why `p`, which does not exist as far as `Path::exists` can tell, cannot be read.
fn missing_reason(p: &Path) -> String {
    match std::fs::metadata(p) {
        Err(_) if p.symlink_metadata().is_ok() => {
            "a link that leads to no file (dead, or a loop)".into()
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            format!("cannot be read: {e}")
        }
        _ => "no such file or directory".into(),
    }
}

/// Expands input arguments. Files named explicitly are kept whatever their content (the
/// reader explains what is wrong with them); directories contribute the files whose
/// content is recognised; a `.rpdb` package folder or an `index.yaml`/`.yml` given as
/// such contributes the files its index lists; globs are expanded in sorted order. The
/// same file named twice is read once.
pub fn expand<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Result<Expanded> {
    let mut out = Expanded::default();
    for arg in args {
        let arg: OsString = arg.as_ref().to_os_string();
        let p = Path::new(&arg);
        // Messages and glob patterns need text; a path that is not UTF-8 is never a pattern.
        let a = &arg.to_string_lossy();
        if p.is_dir() {
            let before = out.files.len();
            add(p, &mut out)?;
            if out.files.len() == before {
                return Err(Error::Usage(match out.warnings.last() {
                    Some(w) => format!("{a}: directory holds no readable profiling data ({w})"),
                    None => format!("{a}: directory holds no profiling database"),
                }));
            }
        } else if p.exists() {
            add(p, &mut out)?;
        } else if arg.to_str().is_some() && has_glob(a) {
            let matched = matches(a, &mut out.warnings)
                .map_err(|e| Error::Usage(format!("{a}: bad pattern: {e}")))?;
            if matched.is_empty() {
                return Err(Error::Usage(format!("{a}: no file matches this pattern")));
            }
            for m in matched {
                add(&m, &mut out)?;
            }
        } else {
            return Err(Error::Usage(format!("{a}: {}", missing_reason(p))));
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.files
        .retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }

    fn glob_crate(pattern: &str) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = glob::glob(pattern).unwrap().map(|r| r.unwrap()).collect();
        v.sort();
        v
    }

    /// Without links, a `**` pattern matches what the glob crate matches: every depth,
    /// `*` within one component, dot files and directories included.
    #[test]
    fn a_deep_pattern_matches_as_the_glob_crate_does() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("d");
        for f in [
            "a.db",
            "x/b.db",
            "x/y/c.db",
            "x/y/c.txt",
            ".h/e.db",
            "x.db/f.db",
            "z/.g.db",
        ] {
            touch(&d.join(f));
        }
        let base = d.to_str().unwrap();
        for p in [
            "**/*.db",
            "**/c.*",
            "**",
            "x/**/*.db",
            "**/y/*",
            "*/**/*.db",
        ] {
            let pattern = format!("{base}/{p}");
            let mut warnings = Vec::new();
            assert_eq!(
                matches(&pattern, &mut warnings).unwrap(),
                glob_crate(&pattern),
                "{p}"
            );
            assert!(warnings.is_empty(), "{warnings:?}");
        }
        assert!(matches(&format!("{base}/[**"), &mut Vec::new()).is_err());
    }

    /// Links back to a directory being walked (`a -> .`) end the walk: each directory is
    /// read once, and the files are all found.
    #[cfg(unix)]
    #[test]
    fn a_deep_pattern_through_links_to_its_own_directories_ends() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("d");
        touch(&d.join("one.db"));
        touch(&d.join("sub/two.db"));
        std::os::unix::fs::symlink(".", d.join("a")).unwrap();
        std::os::unix::fs::symlink("..", d.join("sub/b")).unwrap();
        let mut warnings = Vec::new();
        let found = matches(&format!("{}/**/*.db", d.display()), &mut warnings).unwrap();
        let real: std::collections::BTreeSet<PathBuf> = found
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap())
            .collect();
        let want: std::collections::BTreeSet<PathBuf> = ["one.db", "sub/two.db"]
            .iter()
            .map(|f| std::fs::canonicalize(d.join(f)).unwrap())
            .collect();
        assert_eq!(real, want);
        assert!(found.len() <= 4, "{found:?}");
    }
}
