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
/// A pattern with `**` goes through [`deep_matches`]: the glob crate follows links back
/// to a directory it is in, and two `a -> .` links made its walk endless (2^40 paths
/// before the system's link limit), with memory growing.
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

/// Times one directory is walked through different paths (links) below a `**`, at most:
/// links that are not loops but lead to the same directories from many places would
/// otherwise multiply the walk.
const MAX_VISITS: usize = 8;

/// [`matches`] for a pattern with `**`. The part before the first `**` is expanded by the
/// glob crate (it has no `**`, so that walk is bounded by the pattern); below each
/// directory it gives, the rest is matched on a walk that never enters a directory it is
/// already inside (a link back to it), with the glob crate's rules: `*` within one
/// component, `**` across any number of them (none included), dot files included, and a
/// pattern ending in `**` or `/` matching directories only.
fn deep_matches(
    pattern: &str,
    warnings: &mut Vec<String>,
) -> std::result::Result<Vec<PathBuf>, glob::PatternError> {
    glob::Pattern::new(pattern)?;
    let sep = std::path::MAIN_SEPARATOR;
    let at = pattern
        .match_indices("**")
        .map(|(i, _)| i)
        .find(|&i| i == 0 || pattern[..i].ends_with(['/', sep]))
        .unwrap_or(0);
    let (head, tail) = pattern.split_at(at);
    let dirs_only = tail.ends_with("**") || tail.ends_with(['/', sep]);
    let tail = glob::Pattern::new(tail.trim_end_matches(['/', sep]))?;
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let bases: Vec<PathBuf> = if head.is_empty() {
        vec![PathBuf::new()]
    } else if has_glob(head) {
        matches(head.trim_end_matches(['/', sep]), warnings)?
            .into_iter()
            .filter(|p| p.is_dir())
            .collect()
    } else {
        // A literal part naming a file or nothing has nothing below it, and the glob
        // crate says nothing of it either.
        let base = PathBuf::from(head);
        if base.is_dir() {
            vec![base]
        } else {
            Vec::new()
        }
    };
    let mut found = Vec::new();
    let mut visits: std::collections::HashMap<PathBuf, usize> = Default::default();
    for base in bases {
        // (the path below `base`, the real directories it lies in)
        let mut todo: Vec<(PathBuf, Vec<PathBuf>)> = vec![(PathBuf::new(), Vec::new())];
        while let Some((rel, mut inside)) = todo.pop() {
            let dir = base.join(&rel);
            let read_at = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir.as_path()
            };
            let Ok(real) = std::fs::canonicalize(read_at) else {
                continue;
            };
            if inside.contains(&real) {
                continue;
            }
            let n = visits.entry(real.clone()).or_default();
            *n += 1;
            if *n > MAX_VISITS {
                if *n == MAX_VISITS + 1 {
                    warnings.push(format!(
                        "{}: skipped: reached through links more than {MAX_VISITS} times by {pattern:?}",
                        read_at.display()
                    ));
                }
                continue;
            }
            inside.push(real);
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
            let names: Vec<OsString> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name())
                .collect();
            for name in names {
                let below = rel.join(&name);
                let path = base.join(&below);
                let is_dir = path.is_dir();
                if (is_dir || !dirs_only) && tail.matches_path_with(&below, options) {
                    found.push(path);
                }
                if is_dir {
                    todo.push((below, inside.clone()));
                }
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

/// The last of the warnings given after the first `warned`: why an argument that
/// failed may have found nothing.
fn last_since(out: &Expanded, warned: usize) -> Option<&String> {
    out.warnings.get(warned..).and_then(<[String]>::last)
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
        // Warnings given before this argument: a failing argument names only its own.
        let warned = out.warnings.len();
        if p.is_dir() {
            let before = out.files.len();
            add(p, &mut out)?;
            if out.files.len() == before {
                return Err(Error::Usage(match last_since(&out, warned) {
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
                // A directory the pattern could not read may be why: the error says so,
                // as the warning is never printed once the run stops here.
                return Err(Error::Usage(match last_since(&out, warned) {
                    Some(w) => format!("{a}: no file matches this pattern ({w})"),
                    None => format!("{a}: no file matches this pattern"),
                }));
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
            // Literal parts naming a file or nothing: no match and no warning.
            "a.db/**",
            "a.db/**/*.db",
            "missing/**/*.db",
            "*.db/**",
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

    /// A `**` pattern that matches nothing says why when its walk left something out
    /// (here a directory reached through more links than allowed).
    #[cfg(unix)]
    #[test]
    fn a_deep_pattern_matching_nothing_gives_its_warning_in_the_error() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("d");
        touch(&d.join("shared/notes.txt"));
        for i in 0..12 {
            std::os::unix::fs::symlink("shared", d.join(format!("l{i}"))).unwrap();
        }
        let pattern = format!("{}/**/*.db", d.display());
        let e = expand(&[pattern.as_str()]).unwrap_err().to_string();
        assert!(
            e.contains("no file matches this pattern (")
                && e.contains("through links more than 8 times"),
            "{e}"
        );
        // Without a warning, the error is as it was.
        let plain = format!("{}/shared/*.db", d.display());
        let e = expand(&[plain.as_str()]).unwrap_err().to_string();
        assert!(e.ends_with("no file matches this pattern"), "{e}");
        // A warning an earlier argument gave is not put on a later one's error.
        touch(&d.join("shared/x.db"));
        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let e = expand(&[pattern.as_str(), empty.to_str().unwrap()])
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("directory holds no profiling database"), "{e}");
    }

    /// A link to a directory beside it (`current -> run_5`, no loop) is walked as well as
    /// the directory itself, as the glob crate does: the pattern may match one spelling
    /// only.
    #[cfg(unix)]
    #[test]
    fn a_deep_pattern_walks_a_directory_and_a_link_to_it() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("runs");
        touch(&d.join("run_4/a.db"));
        touch(&d.join("run_5/b.db"));
        std::os::unix::fs::symlink("run_5", d.join("current")).unwrap();
        let pattern = format!("{}/**/run_*/*.db", d.display());
        let mut warnings = Vec::new();
        assert_eq!(
            matches(&pattern, &mut warnings).unwrap(),
            glob_crate(&pattern)
        );
        assert_eq!(matches(&pattern, &mut warnings).unwrap().len(), 2);
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
