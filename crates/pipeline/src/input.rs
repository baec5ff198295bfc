//! Opening input files safely: only regular files are opened, so a FIFO, a device or a
//! socket given as an input is refused at once instead of blocking the run forever.

use std::fs::File;
use std::path::Path;

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
