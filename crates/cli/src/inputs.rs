//! Expanding `-i` arguments (files, globs, directories) into input files; directories
//! contribute the files whose content is recognised (see `sources`), not their names.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The input files of the `-i` arguments, and warnings about files left out of
/// directory walks although their names look like a profiler's output.
#[derive(Debug, Default)]
pub struct Expanded {
    /// Input files, in order, each once.
    pub files: Vec<PathBuf>,
    /// One line per file left out, naming it and saying why.
    pub warnings: Vec<String>,
}

/// Walks `dir` (sorted, recursively) collecting files whose content we recognise.
fn walk(dir: &Path, out: &mut Expanded) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot read directory", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.is_file() {
            match crate::sources::unrecognised(&p)? {
                None => out.files.push(p),
                // A rank's output that cannot be read must not vanish without a word.
                Some(Some(why)) => out
                    .warnings
                    .push(format!("{}: skipped: {why}", p.display())),
                Some(None) => {}
            }
        }
    }
    Ok(())
}

/// Expands the `-i` arguments. Files named explicitly are kept whatever their content
/// (the reader explains what is wrong with them); directories contribute the files whose
/// content is recognised. The same file named twice is read once.
pub fn expand(args: &[std::ffi::OsString]) -> Result<Expanded> {
    let mut out = Expanded::default();
    for arg in args {
        let p = Path::new(arg);
        // Messages and glob patterns need text; a path that is not UTF-8 is never a pattern.
        let a = &arg.to_string_lossy();
        if p.is_dir() {
            let before = out.files.len();
            walk(p, &mut out)?;
            if out.files.len() == before {
                match out.warnings.last() {
                    Some(w) => bail!("{a}: directory holds no readable profiling data ({w})"),
                    None => bail!("{a}: directory holds no profiling database"),
                }
            }
        } else if p.exists() {
            // A FIFO or device would block or never end: refuse it before opening it.
            rocpd_pipeline::check_regular(p)?;
            out.files.push(p.to_path_buf());
        } else if arg.to_str().is_some() && has_glob(a) {
            let mut matched: Vec<PathBuf> = glob::glob(a)
                .with_context(|| format!("{a}: bad pattern"))?
                .filter_map(|r| r.ok())
                .collect();
            if matched.is_empty() {
                bail!("{a}: no file matches this pattern");
            }
            matched.sort();
            for m in matched {
                if m.is_dir() {
                    walk(&m, &mut out)?;
                } else {
                    rocpd_pipeline::check_regular(&m)?;
                    out.files.push(m);
                }
            }
        } else {
            bail!("{a}: no such file or directory");
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.files
        .retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    for w in &out.warnings {
        crate::out::stderr_line(&format!("rocpd: warning: {w}"));
    }
    Ok(out)
}
