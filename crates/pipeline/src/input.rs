//! Opening input files safely: only regular files are opened, so a FIFO, a device or a
//! socket given as an input is refused at once instead of blocking the run forever; and
//! the stamps that tell a reader when a file it reads more than once changed in between.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocpd_model::{Error, Result};

/// Checks that `path` is a regular file (symlinks followed).
pub fn check_regular(path: &Path) -> Result<()> {
    let m = std::fs::metadata(path).map_err(|e| Error::input(path, "open", e.to_string()))?;
    if m.is_file() {
        return Ok(());
    }
    let what = {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else {
            "not a file"
        }
    };
    Err(Error::input(
        path,
        "open",
        format!("not a regular file ({what}); inputs must be files"),
    ))
}

/// Opens `path` for reading after [`check_regular`].
pub fn open_regular(path: &Path) -> Result<File> {
    check_regular(path)?;
    File::open(path).map_err(|e| Error::input(path, "open", e.to_string()))
}

/// A file's length and modification time when a reader first read it. Readers that
/// describe an input in one read and stream it in later ones check the stamp around each
/// later read: a file changed in between (a profiler still writing it, a file replaced)
/// would otherwise give rows the description does not account for, or quietly fewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileStamp {
    /// The stamp of `path` now.
    pub fn of(path: &Path) -> Result<Self> {
        let m = std::fs::metadata(path).map_err(|e| Error::input(path, "open", e.to_string()))?;
        Ok(Self::from_metadata(&m))
    }

    fn from_metadata(m: &std::fs::Metadata) -> Self {
        FileStamp {
            len: m.len(),
            modified: m.modified().ok(),
        }
    }

    /// Fails, naming `path`, unless the file still has this stamp.
    pub fn check(&self, path: &Path) -> Result<()> {
        const AGAIN: &str = "it is read more than once, so it must not change until the \
                             conversion ends: convert it again once whatever writes it has \
                             finished";
        let now = match std::fs::metadata(path) {
            Ok(m) => Self::from_metadata(&m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::input(
                    path,
                    "whole file",
                    format!("removed while being converted; {AGAIN}"),
                ))
            }
            Err(e) => return Err(Error::input(path, "open", e.to_string())),
        };
        if now == *self {
            return Ok(());
        }
        let what = if now.len == self.len {
            format!("written again, {} bytes as before", self.len)
        } else {
            format!("{} bytes when first read, {} bytes now", self.len, now.len)
        };
        Err(Error::input(
            path,
            "whole file",
            format!("changed while being converted ({what}); {AGAIN}"),
        ))
    }

    /// `error`, met reading `path`, unless the file changed since this stamp: then the
    /// change, which explains the error.
    pub fn explain(&self, path: &Path, error: Error) -> Error {
        self.check(path).err().unwrap_or(error)
    }
}

/// The stamps of every file one source reads again, taken together before its first
/// read. A clone shares them.
#[derive(Debug, Clone)]
pub struct FileStamps(Arc<[(PathBuf, FileStamp)]>);

impl FileStamps {
    /// The stamps of `paths` now.
    pub fn of<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Result<Self> {
        paths
            .into_iter()
            .map(|p| Ok((p.to_path_buf(), FileStamp::of(p)?)))
            .collect::<Result<Vec<_>>>()
            .map(|v| FileStamps(v.into()))
    }

    /// Fails, naming the first file that changed since its stamp was taken.
    pub fn check(&self) -> Result<()> {
        self.0.iter().try_for_each(|(path, s)| s.check(path))
    }

    /// `error`, met reading these files, unless one of them changed: then the change,
    /// which explains the error.
    pub fn explain(&self, error: Error) -> Error {
        self.check().err().unwrap_or(error)
    }

    /// Runs `read` between two checks of the stamps, letting a change explain whatever
    /// error it met: what every read after the first one goes through.
    pub fn around<T>(&self, read: impl FnOnce() -> Result<T>) -> Result<T> {
        self.check()?;
        let value = read().map_err(|e| self.explain(e))?;
        self.check()?;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_tells_a_changed_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.csv");
        std::fs::write(&path, "x,y\n1,2\n").unwrap();
        let stamp = FileStamp::of(&path).unwrap();
        stamp.check(&path).unwrap();
        // Cut short: the lengths are named.
        std::fs::write(&path, "x,y\n").unwrap();
        let e = stamp.check(&path).unwrap_err().to_string();
        assert!(e.contains("a.csv: whole file: changed while being converted (8 bytes when first read, 4 bytes now)"), "{e}");
        // The same length written again at another time.
        std::fs::write(&path, "x,y\n1,2\n").unwrap();
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        f.set_modified(later).unwrap();
        let e = stamp.check(&path).unwrap_err().to_string();
        assert!(
            e.contains("changed while being converted (written again, 8 bytes as before)"),
            "{e}"
        );
        // A reader's error is explained by the change, or kept when nothing changed.
        let read_error = || Error::input(&path, "line 2", "expected 2 fields");
        let e = stamp.explain(&path, read_error()).to_string();
        assert!(e.contains("changed while being converted"), "{e}");
        let e = FileStamp::of(&path).unwrap().explain(&path, read_error());
        assert!(
            e.to_string().ends_with("a.csv: line 2: expected 2 fields"),
            "{e}"
        );
        // Gone.
        std::fs::remove_file(&path).unwrap();
        let e = stamp.check(&path).unwrap_err().to_string();
        assert!(
            e.contains("a.csv: whole file: removed while being converted"),
            "{e}"
        );
    }

    #[test]
    fn a_read_between_stamps_fails_when_any_file_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let [a, b] = ["a.csv", "b.csv"].map(|n| tmp.path().join(n));
        std::fs::write(&a, "x\n1\n").unwrap();
        std::fs::write(&b, "y\n2\n").unwrap();
        let stamps = FileStamps::of([a.as_path(), b.as_path()]).unwrap();
        assert_eq!(stamps.around(|| Ok(7)).unwrap(), 7);
        // A read's own error stands while nothing changed.
        let e = stamps
            .around(|| -> Result<()> { Err(Error::input(&a, "line 2", "bad")) })
            .unwrap_err();
        assert!(e.to_string().ends_with("a.csv: line 2: bad"), "{e}");
        // The second file cut under a read that succeeded: the check after it fails.
        let e = stamps
            .around(|| {
                std::fs::write(&b, "y\n").unwrap();
                Ok(())
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("b.csv: whole file: changed while being converted (4 bytes when first read, 2 bytes now)"), "{e}");
        // Changed before the read: it does not start.
        let mut started = false;
        let e = stamps.around(|| {
            started = true;
            Ok(())
        });
        assert!(e.is_err() && !started);
        // A read that failed on the change gives the change, not its own error.
        std::fs::write(&b, "y\n2\n").unwrap();
        let fresh = FileStamps::of([b.as_path()]).unwrap();
        let e = fresh
            .around(|| -> Result<()> {
                std::fs::remove_file(&b).unwrap();
                Err(Error::input(&b, "line 2", "missing"))
            })
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("b.csv: whole file: removed while being converted"),
            "{e}"
        );
    }
}
