//! Whole-or-absent output files.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use rocpd_model::{Error, Result};

use crate::cleanup::Registered;

/// The temporary name of an output while it is written: `.<name>.partial-<pid>` beside
/// `path`, built from the raw file name (never a lossy copy, so names that are not UTF-8
/// keep working).
pub fn temp_sibling(path: &Path) -> Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::output(path, "not a file name"))?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".partial-{}", std::process::id()));
    Ok(path.with_file_name(tmp))
}

/// Removes a finished output of a run that failed later: a file, a dataset directory, or
/// an OTF2 archive (anchor, `.def` and event directory). An output shared with other runs
/// (a dataset appended to) stays: it holds their rows too, and this run's part in it is
/// committed and whole.
pub fn remove_output(output: &crate::OutputReport) {
    if !output.shared {
        remove_output_path(&output.path);
    }
}

/// [`remove_output`] by path, for outputs of this run alone (a split's manifest).
pub fn remove_output_path(path: &Path) {
    if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
    if path.extension().is_some_and(|e| e == "otf2") {
        let _ = std::fs::remove_file(path.with_extension("def"));
        let _ = std::fs::remove_dir_all(path.with_extension(""));
    }
}

/// Refuses an output path where something other than a regular file stands (a device
/// such as `/dev/null`, a pipe, a socket, a symbolic link, a directory): the rename that
/// commits an output would replace it with a plain file.
pub fn refuse_special(path: &Path) -> Result<()> {
    match path.symlink_metadata() {
        Ok(m) if !m.file_type().is_file() => Err(Error::output(
            path,
            if m.file_type().is_dir() {
                "is a directory; give a file name"
            } else {
                "exists and is not a regular file (a device, pipe, socket or link); an output replaces only a regular file"
            },
        )),
        _ => Ok(()),
    }
}

/// The directories a run is about to create for its outputs (`dir` and those above it
/// that do not exist yet), removed again when dropped, deepest first, as far as they are
/// empty, unless [`NewDirs::keep`] says the run succeeded: a failed or interrupted run
/// leaves no empty `-d` behind, whatever its formats (files, OTF2 archives, datasets).
/// Only an empty directory goes: another output, or another run, may have put files there.
#[derive(Debug, Default)]
pub struct NewDirs {
    dirs: Vec<PathBuf>,
    /// Their number in the process-wide list a forced exit empties
    /// ([`crate::cleanup::remove_registered`]).
    registered: Option<u64>,
}

impl NewDirs {
    /// The directories of `dir` and above that do not exist now. None for a `dir` with a
    /// `..` in it: `gone/../kept` does not exist while `gone` does not, yet names `kept`,
    /// which must never be removed.
    pub fn of(dir: &Path) -> Self {
        if dir
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return NewDirs::default();
        }
        let dirs: Vec<PathBuf> = dir
            .ancestors()
            .filter(|d| !d.as_os_str().is_empty())
            .take_while(|d| d.symlink_metadata().is_err())
            .map(Path::to_path_buf)
            .collect();
        let registered = (!dirs.is_empty()).then(|| crate::cleanup::register_new_dirs(&dirs));
        NewDirs { dirs, registered }
    }

    /// The run succeeded: its directories stay.
    pub fn keep(mut self) {
        self.dirs.clear();
    }
}

impl Drop for NewDirs {
    fn drop(&mut self) {
        if let Some(n) = self.registered {
            crate::cleanup::unregister_new_dirs(n);
        }
        crate::cleanup::remove_empty_dirs(&self.dirs);
    }
}

/// A file written under a temporary name in its final directory and renamed into place by
/// [`OutputFile::commit`]. Dropped without a commit, it removes the temporary file, so a
/// failed run leaves nothing that looks complete.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    tmp: PathBuf,
    writer: Option<BufWriter<File>>,
    /// The directories this file's creation made: a file dropped without a commit removes
    /// them again when they are empty, so a failed run leaves no empty `-d` behind either.
    made: NewDirs,
    _registered: Registered,
}

impl OutputFile {
    /// Creates the temporary file for `path` (creating the directory if needed), with a
    /// 1 MiB write buffer.
    pub fn create(path: &Path) -> Result<Self> {
        Self::create_with_buffer(path, 1 << 20)
    }

    /// As [`OutputFile::create`], with a write buffer of `buffer` bytes: for writers that
    /// keep many files open at once (one CSV file per kind of event and split part).
    pub fn create_with_buffer(path: &Path, buffer: usize) -> Result<Self> {
        refuse_special(path)?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let mut made = NewDirs::default();
        if let Some(dir) = dir {
            made = NewDirs::of(dir);
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::output(dir, format!("cannot create directory: {e}")))?;
        }
        let tmp = temp_sibling(path)?;
        let registered = Registered::new(&tmp);
        let file =
            File::create(&tmp).map_err(|e| Error::output(&tmp, format!("cannot create: {e}")))?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            tmp,
            writer: Some(BufWriter::with_capacity(buffer.max(1), file)),
            made,
            _registered: registered,
        })
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The buffered writer.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("not committed")
    }

    /// Turns an I/O error into an output error naming this file.
    pub fn io_error(&self, e: std::io::Error) -> Error {
        Error::output(&self.path, format!("write failed: {e}"))
    }

    /// Flushes, syncs and renames the file into place; returns its size in bytes.
    pub fn commit(mut self) -> Result<u64> {
        let w = self.writer.take().expect("not committed");
        let file = w
            .into_inner()
            .map_err(|e| Error::output(&self.path, format!("write failed: {}", e.error())))?;
        file.sync_all().map_err(|e| self.io_error(e))?;
        let size = file.metadata().map_err(|e| self.io_error(e))?.len();
        drop(file);
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| Error::output(&self.path, format!("cannot rename into place: {e}")))?;
        self.tmp = PathBuf::new();
        std::mem::take(&mut self.made).keep();
        Ok(size)
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.writer.take();
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn uncommitted_output_leaves_nothing_and_committed_output_is_whole() {
        let dir = std::env::temp_dir().join(format!("rocpd-output-test-{}", std::process::id()));
        let path = dir.join("a.bin");
        for p in [&path, &dir.join("x/y/a.bin")] {
            let mut f = OutputFile::create(p).unwrap();
            f.writer().write_all(b"partial").unwrap();
        }
        // The directory the file made goes with it.
        assert!(!dir.exists());
        let mut f = OutputFile::create(&path).unwrap();
        f.writer().write_all(b"whole").unwrap();
        assert_eq!(f.commit().unwrap(), 5);
        assert_eq!(std::fs::read(&path).unwrap(), b"whole");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
