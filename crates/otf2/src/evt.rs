//! One location's event file: a chunked OTF2 buffer kept in memory only up to a bound and
//! appended to `<archive>/<location>.evt` as it fills.
//!
//! A chunk is `chunk_size` bytes: a header (first and last event number, 1-based, counted
//! over the whole location), a timestamp record, event records, and `END_OF_CHUNK` padding.
//! The last chunk is not padded; it ends with `END_OF_FILE`, `END_OF_BUFFER`. A chunk's
//! "last event" is only known when the chunk closes: if its header has already been
//! written to the file by then, the 8 bytes are patched in place at the next spill.

use std::fs::OpenOptions;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::PathBuf;

use crate::encode::{
    put_chunk_header, CHUNK_HEADER_LAST_EVENT, CHUNK_HEADER_SIZE, CHUNK_RESERVE, END_OF_BUFFER,
    END_OF_CHUNK, END_OF_FILE, TIMESTAMP, TIMESTAMP_SIZE,
};

/// The event buffer and file state of one location.
pub(crate) struct EventStream {
    path: PathBuf,
    buf: Vec<u8>,
    /// Bytes already in the file.
    flushed: u64,
    /// Offset of the current chunk in the whole stream.
    chunk_start: u64,
    /// Events written so far (Enter, Leave, Metric; not timestamps or attribute lists).
    events: u64,
    last_time: Option<u64>,
    /// Header patches (stream offset, value) for bytes already in the file.
    patches: Vec<(u64, u64)>,
    file_exists: bool,
}

impl EventStream {
    pub fn new(path: PathBuf) -> Self {
        EventStream {
            path,
            buf: Vec::new(),
            flushed: 0,
            chunk_start: 0,
            events: 0,
            last_time: None,
            patches: Vec::new(),
            file_exists: false,
        }
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Bytes held in memory (allocated).
    pub fn buffered(&self) -> usize {
        self.buf.capacity()
    }

    /// Bytes of records waiting in memory.
    pub fn buffered_len(&self) -> usize {
        self.buf.len()
    }

    /// Bytes produced so far (in the file and in memory).
    fn pos(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    fn set_u64(&mut self, offset: u64, value: u64) {
        if offset >= self.flushed {
            let at = (offset - self.flushed) as usize;
            self.buf[at..at + 8].copy_from_slice(&value.to_le_bytes());
        } else {
            self.patches.push((offset, value));
        }
    }

    fn timestamp(&mut self, ts: u64) {
        self.buf.push(TIMESTAMP);
        self.buf.extend_from_slice(&ts.to_le_bytes());
        self.last_time = Some(ts);
    }

    /// Appends one event record `rec` (attribute list, if any, and the event) at time `ts`,
    /// which must not be earlier than the previous event's.
    pub fn push(&mut self, chunk_size: u64, ts: u64, rec: &[u8]) -> io::Result<()> {
        let len = rec.len() as u64;
        if CHUNK_HEADER_SIZE + TIMESTAMP_SIZE + len + CHUNK_RESERVE > chunk_size {
            return Err(io::Error::other(format!(
                "an event record of {len} bytes does not fit in a chunk"
            )));
        }
        debug_assert!(self.last_time.is_none_or(|t| t <= ts), "time goes back");
        if self.pos() == 0 {
            put_chunk_header(&mut self.buf, 1, 0);
        }
        let need_ts = self.last_time != Some(ts);
        let need = len + if need_ts { TIMESTAMP_SIZE } else { 0 };
        let used = self.pos() - self.chunk_start;
        if used + need + CHUNK_RESERVE > chunk_size {
            // Close the chunk: pad it, record its last event, open the next one, which
            // starts with a timestamp as the reference writer's chunks do.
            let pad = (chunk_size - used) as usize;
            self.buf.resize(self.buf.len() + pad, END_OF_CHUNK);
            self.set_u64(self.chunk_start + CHUNK_HEADER_LAST_EVENT, self.events);
            self.chunk_start = self.pos();
            put_chunk_header(&mut self.buf, self.events + 1, 0);
            self.timestamp(ts);
        } else if need_ts {
            self.timestamp(ts);
        }
        self.buf.extend_from_slice(rec);
        self.events += 1;
        Ok(())
    }

    /// Appends what is in memory to the file (creating it the first time) and applies the
    /// pending header patches; the file is closed again, so open handles stay bounded.
    /// With `release`, the memory is given back too.
    pub fn spill(&mut self, release: bool) -> io::Result<()> {
        if !self.buf.is_empty() || !self.patches.is_empty() {
            let mut f = if self.file_exists {
                OpenOptions::new().write(true).open(&self.path)?
            } else {
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&self.path)?
            };
            self.file_exists = true;
            f.seek(SeekFrom::Start(self.flushed))?;
            f.write_all(&self.buf)?;
            for (offset, value) in self.patches.drain(..) {
                f.seek(SeekFrom::Start(offset))?;
                f.write_all(&value.to_le_bytes())?;
            }
            self.flushed += self.buf.len() as u64;
            self.buf.clear();
        }
        if release {
            self.buf = Vec::new();
        }
        Ok(())
    }

    /// Closes the last chunk and writes everything; returns the file size.
    pub fn finish(&mut self) -> io::Result<u64> {
        if self.pos() == 0 {
            put_chunk_header(&mut self.buf, 1, 0);
        }
        self.buf.extend_from_slice(&[END_OF_FILE, END_OF_BUFFER]);
        self.set_u64(self.chunk_start + CHUNK_HEADER_LAST_EVENT, self.events);
        self.spill(true)?;
        Ok(self.flushed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::event;

    #[test]
    fn chunks_are_padded_numbered_and_patched_across_spills() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.evt");
        let mut s = EventStream::new(path.clone());
        let chunk = 64;
        // 18 header + 9 ts + 2 + 2 = 31 bytes after two events at one time.
        s.push(chunk, 10, &[event::ENTER, 0]).unwrap();
        s.push(chunk, 10, &[event::ENTER, 0]).unwrap();
        s.spill(false).unwrap(); // the first header is now in the file
        s.push(chunk, 20, &[event::LEAVE, 0]).unwrap(); // 31 + 11 = 42
        s.push(chunk, 30, &[event::LEAVE, 0]).unwrap(); // 53
        s.push(chunk, 40, &[event::ENTER, 0]).unwrap(); // 53 + 11 + 2 > 64: new chunk
        s.push(chunk, 40, &[event::LEAVE, 0]).unwrap();
        let size = s.finish().unwrap();
        assert_eq!(s.events(), 6);
        let b = std::fs::read(&path).unwrap();
        assert_eq!(b.len() as u64, size);
        // First chunk: events 1..=4, patched after its header reached the file.
        assert_eq!(&b[0..2], &[3, 0x42]);
        assert_eq!(u64::from_le_bytes(b[2..10].try_into().unwrap()), 1);
        assert_eq!(u64::from_le_bytes(b[10..18].try_into().unwrap()), 4);
        assert!(b[53..64].iter().all(|&x| x == 0));
        // Second chunk: events 5..=6, starts with a timestamp.
        assert_eq!(&b[64..66], &[3, 0x42]);
        assert_eq!(u64::from_le_bytes(b[66..74].try_into().unwrap()), 5);
        assert_eq!(u64::from_le_bytes(b[74..82].try_into().unwrap()), 6);
        assert_eq!(b[82], TIMESTAMP);
        assert_eq!(u64::from_le_bytes(b[83..91].try_into().unwrap()), 40);
        assert_eq!(&b[b.len() - 2..], &[END_OF_FILE, END_OF_BUFFER]);
        assert_eq!(b.len(), 64 + 18 + 9 + 4 + 2);
    }
}
