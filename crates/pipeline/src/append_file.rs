//! An append-only anonymous temporary file: bytes written once, read back by their place.
//!
//! Readers and the sorter keep here what they must not hold in memory: the long texts of a
//! sort (D155), a JSON stream's texts past its memory and its held records (D125, D126).
//! The file has no name (the system removes it when it is closed, by a signal too), is
//! created only when the first bytes reach it, and takes writes in blocks of
//! [`PENDING_BYTES`]: bytes appended since the last block are read back from memory.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rocpd_model::{Error, Result};

/// Bytes gathered in memory before they are written as one block.
pub(crate) const PENDING_BYTES: usize = 256 << 10;

/// An append-only anonymous temporary file (see the module documentation).
pub struct AppendFile {
    /// Where the file goes (`None`: the system's temporary directory).
    dir: Option<PathBuf>,
    /// What the file keeps, for errors ("long texts of a sort").
    what: &'static str,
    file: Option<File>,
    /// Bytes in the file.
    written: u64,
    /// Bytes appended since, not yet written.
    pending: Vec<u8>,
}

impl AppendFile {
    /// A file for `what` (named in errors), in `dir` or the system's temporary directory.
    pub fn new(dir: Option<&Path>, what: &'static str) -> Self {
        AppendFile {
            dir: dir.map(Path::to_path_buf),
            what,
            file: None,
            written: 0,
            pending: Vec::new(),
        }
    }

    /// Bytes appended, written or not: the place the next append gets.
    pub fn len(&self) -> u64 {
        self.written + self.pending.len() as u64
    }

    /// Whether nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes written to the file so far (the rest waits in memory).
    pub fn on_disk(&self) -> u64 {
        self.written
    }

    fn fail(&self, e: std::io::Error) -> Error {
        let dir = self.dir.clone().unwrap_or_else(std::env::temp_dir);
        Error::output(
            dir,
            format!("cannot keep {} in a temporary file: {e}", self.what),
        )
    }

    /// Appends `bytes` and gives their place.
    pub fn append(&mut self, bytes: &[u8]) -> Result<u64> {
        let offset = self.len();
        offset
            .checked_add(bytes.len() as u64)
            .ok_or_else(|| Error::Usage(format!("internal: {} past 2^64 bytes", self.what)))?;
        if bytes.len() >= PENDING_BYTES {
            // A block on its own is written as it is, not copied to wait first.
            self.flush()?;
            self.write(bytes)?;
            return Ok(offset);
        }
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= PENDING_BYTES {
            self.flush()?;
        }
        Ok(offset)
    }

    /// Writes the bytes waiting in memory.
    pub fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        self.write(&pending)?;
        // The buffer is kept for the next block (at most twice the block: one append
        // below the block's size on top of an almost full one).
        self.pending = pending;
        self.pending.clear();
        Ok(())
    }

    /// Writes `bytes` at the end of the file, creating it first if need be.
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        if self.file.is_none() {
            let created = match &self.dir {
                Some(d) => tempfile::tempfile_in(d),
                None => tempfile::tempfile(),
            };
            self.file = Some(created.map_err(|e| self.fail(e))?);
        }
        if let Some(file) = &self.file {
            file.write_all_at(bytes, self.written)
                .map_err(|e| self.fail(e))?;
        }
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// The `len` bytes at `offset`, which an append gave.
    pub fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let bad = || Error::Usage(format!("internal: a place past the {} kept", self.what));
        let end = offset.checked_add(len).filter(|&e| e <= self.len());
        let n = usize::try_from(len).ok().filter(|_| end.is_some());
        let n = n.ok_or_else(bad)?;
        if offset >= self.written {
            // usize: the pending bytes are in memory.
            let from = (offset - self.written) as usize;
            return Ok(self.pending[from..from + n].to_vec());
        }
        let mut buf = vec![0u8; n];
        let on_disk = usize::try_from(self.written - offset).map_or(n, |d| d.min(n));
        let file = self.file.as_ref().ok_or_else(bad)?;
        file.read_exact_at(&mut buf[..on_disk], offset)
            .map_err(|e| self.fail(e))?;
        // A place given before a flush may run on into the bytes still pending.
        buf[on_disk..].copy_from_slice(&self.pending[..n - on_disk]);
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_back_from_memory_the_file_and_across_the_two() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = AppendFile::new(Some(dir.path()), "test bytes");
        assert_eq!(f.append(b"abc").unwrap(), 0);
        assert_eq!(f.read(1, 2).unwrap(), b"bc");
        assert_eq!(f.on_disk(), 0);
        // A block of the pending bound or more is written at once, after what waited
        // before it.
        let big = vec![7u8; PENDING_BYTES];
        assert_eq!(f.append(&big).unwrap(), 3);
        assert_eq!(f.on_disk(), 3 + PENDING_BYTES as u64);
        assert!(
            f.pending.capacity() < PENDING_BYTES,
            "the block was not copied"
        );
        assert_eq!(f.append(b"tail").unwrap(), f.on_disk());
        assert_eq!(f.read(0, 4).unwrap(), [b'a', b'b', b'c', 7]);
        // The last byte of the file and the first still pending, in one read.
        let last = f.on_disk() - 1;
        assert_eq!(f.read(last, 3).unwrap(), [7, b't', b'a']);
        assert_eq!(f.len(), f.on_disk() + 4);
        // Nothing past the end, and no offset arithmetic that wraps.
        for (offset, len) in [(f.len(), 1), (f.len() - 1, 2), (u64::MAX, 2)] {
            let e = f.read(offset, len).unwrap_err().to_string();
            assert!(e.contains("past the test bytes kept"), "{e}");
        }
        assert!(f.read(f.len(), 0).unwrap().is_empty());
        // The file is anonymous: nothing is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_directory_that_cannot_take_the_file_is_named() {
        let mut f = AppendFile::new(Some(Path::new("/no/such/dir")), "test bytes");
        let e = f.append(&vec![0; PENDING_BYTES]).unwrap_err().to_string();
        assert!(
            e.contains("/no/such/dir") && e.contains("cannot keep test bytes"),
            "{e}"
        );
    }
}
