//! Keeping a run from writing over its own inputs or over another of its outputs.
//!
//! Before anything is written, every path a run will create (each format's final and
//! temporary names, split parts, the manifest, the report) is checked against the inputs:
//! by canonical path, and by device and inode so that hard links and symlinks count. A
//! directory output (a Parquet dataset, an OTF2 event directory) must not contain an
//! input either. The SQLite side files of a database input (`-wal`, `-shm`, `-journal`)
//! count as inputs too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rocpd_model::{Error, Result};

/// Device and inode of an existing file.
type FileId = (u64, u64);

fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The canonical form of a path that may not exist yet: its parent canonicalised (when it
/// exists) joined with its own name. The last component is not followed, since outputs are
/// renamed into place (a symlink there is replaced, not written through); the inode
/// check catches a path that resolves to an input all the same. A `..` after a directory
/// that does not exist yet goes back up by name: the run creates that directory as a
/// plain one, so `new/..` is where `new` is made (`-d new/.. -o in` is the input's own
/// directory).
fn canonical_of(path: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(path) {
        return c;
    }
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    match (abs.parent(), abs.components().next_back()) {
        (Some(parent), Some(std::path::Component::ParentDir)) => {
            let up = canonical_of(parent);
            up.parent().map(Path::to_path_buf).unwrap_or(up)
        }
        (Some(parent), Some(std::path::Component::Normal(name))) => canonical_of(parent).join(name),
        _ => abs,
    }
}

/// Whether `inner` is `outer` or lies under it, with both resolved as outputs are (the
/// paths may not exist yet): a file output named where the run's output directory goes
/// would be replaced by that directory.
pub fn within(inner: &Path, outer: &Path) -> bool {
    canonical_of(inner).starts_with(canonical_of(outer))
}

#[derive(Clone)]
struct Known {
    given: PathBuf,
    canonical: PathBuf,
    id: Option<FileId>,
}

/// The inputs of a run, and the outputs claimed so far.
#[derive(Default, Clone)]
pub struct PathGuard {
    inputs: Vec<Known>,
    outputs: HashMap<PathBuf, PathBuf>,
}

impl PathGuard {
    /// A guard over `inputs` and their SQLite side files, present or not: an output
    /// created as `x.db-wal` or `x.db-journal` would change how SQLite opens `x.db`.
    pub fn new<P: AsRef<Path>>(inputs: &[P]) -> Self {
        let mut g = PathGuard::default();
        for p in inputs {
            let p = p.as_ref();
            g.add_input(p);
            for side in ["-wal", "-shm", "-journal"] {
                let mut s = p.as_os_str().to_os_string();
                s.push(side);
                g.add_input(Path::new(&s));
            }
        }
        g
    }

    fn add_input(&mut self, p: &Path) {
        self.inputs.push(Known {
            given: p.to_path_buf(),
            canonical: canonical_of(p),
            id: file_id(p),
        });
    }

    /// Claims `output` for this run: refused when it is (or, for a directory output,
    /// contains) an input, or when another output of the run already claimed it.
    pub fn claim(&mut self, output: &Path) -> Result<()> {
        let canonical = canonical_of(output);
        let id = file_id(output);
        for input in &self.inputs {
            let same = input.canonical == canonical || (id.is_some() && id == input.id);
            if same || input.canonical.starts_with(&canonical) {
                return Err(Error::Usage(format!(
                    "the output {} would {} the input {}; choose another output directory (-d) or name (-o)",
                    output.display(),
                    if same { "replace" } else { "contain" },
                    input.given.display()
                )));
            }
        }
        if let Some(first) = self.outputs.get(&canonical) {
            let also = if first != output {
                format!(" (also given as {})", first.display())
            } else {
                String::new()
            };
            return Err(Error::Usage(format!(
                "two outputs of this run have the same path {}{also}; give them different names",
                output.display()
            )));
        }
        self.outputs.insert(canonical, output.to_path_buf());
        Ok(())
    }

    /// Claims an output file and its temporary name; refused here, before the run, where
    /// something other than a regular file stands ([`crate::refuse_special`]).
    pub fn claim_file(&mut self, output: &Path) -> Result<()> {
        crate::refuse_special(output)?;
        self.claim(output)?;
        self.claim(&crate::output::temp_sibling(output)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_links_and_repeats_are_refused() {
        let dir = tempfile_dir("guard");
        let input = dir.join("a.db");
        std::fs::write(&input, b"x").unwrap();
        let hard = dir.join("b.db");
        std::fs::hard_link(&input, &hard).unwrap();
        let soft = dir.join("c.db");
        std::os::unix::fs::symlink(&input, &soft).unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        let mut g = PathGuard::new(&[&input]);
        // `new` does not exist: the run would create it, and `new/..` is `dir`.
        for p in [
            &input,
            &hard,
            &soft,
            &dir.join("sub/../a.db"),
            &dir,
            &dir.join("new/../a.db"),
            &dir.join("new/deeper/../../a.db"),
            &dir.join("new/.."),
        ] {
            let e = g.claim(p).unwrap_err().to_string();
            assert!(e.contains("a.db"), "{e}");
        }
        g.claim_file(&dir.join("out.pftrace")).unwrap();
        let e = g.claim(&dir.join("out.pftrace")).unwrap_err().to_string();
        assert!(e.contains("same path"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rocpd-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
