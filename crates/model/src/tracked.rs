//! A buffered reader for text parsers that read one byte at a time (serde_json's
//! `from_reader`), which knows exactly how many bytes its user has consumed and where the
//! last few lines began, so a parser's error position becomes a byte offset.
//!
//! `std::io::BufReader` behind a counting wrapper costs a full `read` call per byte (the
//! standard library's one-byte fast path only applies to a `BufReader` taken by value, and
//! a wrapper can only count what it pulls into the buffer, not what the parser consumed);
//! this reader serves one-byte reads from its buffer inline.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// How much is read from the inner reader at a time.
const CHUNK: usize = 64 * 1024;

/// Line starts remembered (the newest last): enough for an error on the current line or
/// one just before it.
const LINES_KEPT: usize = 4;

/// A bound on the bytes a [`TrackedReader`] hands out from a point its user marks, shared
/// with code that cannot reach the reader while a parser owns it (the parser's visitors):
/// they mark where a value starts and clear the mark after it, and a read past the bound
/// fails with `InvalidData`, so that one value of a hostile file cannot grow without end.
///
/// The reader looks at the bound, and tells it how far it has read, only when it has
/// handed out what it had decided to (at most one buffer, 64 KiB): a one-byte read stays
/// as cheap as without a bound. So the bound holds give or take one buffer.
#[derive(Clone, Debug)]
pub struct ReadLimit(Arc<LimitState>);

#[derive(Debug)]
struct LimitState {
    /// Bytes the reader has handed out, as of its last read.
    consumed: AtomicU64,
    /// Where reads stop (`u64::MAX`: nowhere).
    until: AtomicU64,
    /// Whether a read stopped there.
    tripped: AtomicBool,
}

impl Default for ReadLimit {
    fn default() -> Self {
        ReadLimit(Arc::new(LimitState {
            consumed: AtomicU64::new(0),
            until: AtomicU64::new(u64::MAX),
            tripped: AtomicBool::new(false),
        }))
    }
}

impl ReadLimit {
    /// Lets the reader hand out about `bytes` more, no more, until [`ReadLimit::clear`].
    /// The bound counts from how far the reader had read at its last buffer's edge (up
    /// to one buffer before here), and the reader sees it at its next edge.
    pub fn start(&self, bytes: u64) {
        let from = self.0.consumed.load(Ordering::Relaxed);
        self.0
            .until
            .store(from.saturating_add(bytes), Ordering::Relaxed);
    }

    /// Lifts the bound.
    pub fn clear(&self) {
        self.0.until.store(u64::MAX, Ordering::Relaxed);
    }

    /// Runs `read` (a parser's read of one value) with the reader bounded to `bytes`
    /// more, lifting the bound after it.
    pub fn bounded<T>(&self, bytes: u64, read: impl FnOnce() -> T) -> T {
        self.start(bytes);
        let value = read();
        self.clear();
        value
    }

    /// Whether a read failed for the bound (so that a parser's I/O error can be told
    /// from one of the input).
    pub fn tripped(&self) -> bool {
        self.0.tripped.load(Ordering::Relaxed)
    }
}

/// See the module documentation.
pub struct TrackedReader<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    filled: usize,
    /// Where one-byte reads stop being served inline: `filled`, or less where the
    /// limit's bound falls inside the buffer.
    stop: usize,
    /// Bytes consumed before `buf[pos]` in earlier buffers and this one.
    consumed: u64,
    /// (1-based line number, offset of its first byte) of the last lines begun.
    line_starts: VecDeque<(u64, u64)>,
    limit: Option<ReadLimit>,
}

impl<R: Read> TrackedReader<R> {
    /// A reader over `inner`, whose first byte is at offset 0 of line 1.
    pub fn new(inner: R) -> Self {
        TrackedReader {
            inner,
            buf: vec![0; CHUNK].into_boxed_slice(),
            pos: 0,
            filled: 0,
            stop: 0,
            consumed: 0,
            line_starts: [(1, 0)].into_iter().collect(),
            limit: None,
        }
    }

    /// The same reader, bounded where `limit` says (see [`ReadLimit`]).
    pub fn with_limit(mut self, limit: ReadLimit) -> Self {
        self.limit = Some(limit);
        self
    }

    /// The inner reader, for a caller that has read nothing through this one yet (what
    /// was buffered would be lost).
    pub fn into_inner(self) -> R {
        debug_assert_eq!(self.filled, 0);
        self.inner
    }

    /// Bytes handed out so far.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The byte offset of 1-based `line` and `column` (as serde_json reports them), if
    /// the line is one of the last few begun.
    pub fn offset_of(&self, line: u64, column: u64) -> Option<u64> {
        let (_, start) = self.line_starts.iter().find(|(l, _)| *l == line)?;
        Some(start + column.saturating_sub(1))
    }

    fn note_newlines(&mut self, from: usize, to: usize) {
        for i in from..to {
            if self.buf[i] == b'\n' {
                let line = self.line_starts.back().map_or(1, |(l, _)| l + 1);
                let start = self.consumed + (i - from) as u64 + 1;
                if self.line_starts.len() == LINES_KEPT {
                    self.line_starts.pop_front();
                }
                self.line_starts.push_back((line, start));
            }
        }
    }

    #[cold]
    fn refill(&mut self) -> io::Result<()> {
        loop {
            match self.inner.read(&mut self.buf) {
                Ok(n) => {
                    self.pos = 0;
                    self.filled = n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl<R: Read> TrackedReader<R> {
    /// Past `stop`: refills the buffer if it is used up, and finds the next stop (the
    /// buffer's end, or the limit's bound); an error when the bound leaves nothing.
    #[cold]
    fn next_stop(&mut self) -> io::Result<()> {
        if self.pos == self.filled {
            self.refill()?;
        }
        self.stop = self.filled;
        if let Some(limit) = &self.limit {
            limit.0.consumed.store(self.consumed, Ordering::Relaxed);
            let left = limit
                .0
                .until
                .load(Ordering::Relaxed)
                .saturating_sub(self.consumed);
            if left == 0 && self.pos < self.filled {
                limit.0.tripped.store(true, Ordering::Relaxed);
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a value longer than the reader's bound",
                ));
            }
            let left = usize::try_from(left).unwrap_or(usize::MAX);
            self.stop = self.filled.min(self.pos.saturating_add(left));
        }
        Ok(())
    }
}

impl<R: Read> Read for TrackedReader<R> {
    #[inline]
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.stop {
            if out.is_empty() {
                return Ok(0);
            }
            self.next_stop()?;
        }
        let n = out.len().min(self.stop - self.pos);
        if n == 1 {
            let b = self.buf[self.pos];
            out[0] = b;
            if b == b'\n' {
                self.note_newlines(self.pos, self.pos + 1);
            }
        } else {
            out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
            self.note_newlines(self.pos, self.pos + n);
        }
        self.pos += n;
        self.consumed += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_was_consumed_and_finds_lines() {
        let text = b"{\"a\": 1,\n \"b\": [\n2, x]}\n";
        let mut r = TrackedReader::new(&text[..]);
        let mut one = [0u8; 1];
        for _ in 0..12 {
            r.read_exact(&mut one).unwrap();
        }
        // Not what was buffered (all of it), what was read.
        assert_eq!(r.consumed(), 12);
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).unwrap();
        assert_eq!(r.consumed(), text.len() as u64);
        // Line 3 starts after the second newline, at byte 17; its column 4 is the 'x'.
        assert_eq!(r.offset_of(3, 4), Some(20));
        assert_eq!(text[20], b'x');
        assert_eq!(r.offset_of(1, 1), Some(0));
    }

    #[test]
    fn serde_errors_map_to_the_byte_they_name() {
        let text = "[1,\n 2,\n 3 x]";
        let mut r = TrackedReader::new(text.as_bytes());
        let e = serde_json::from_reader::<_, serde_json::Value>(&mut r).unwrap_err();
        let at = r.offset_of(e.line() as u64, e.column() as u64).unwrap();
        assert_eq!(&text[at as usize..at as usize + 1], "x", "{e}");
    }

    #[test]
    fn a_limit_stops_reads_past_its_bound_give_or_take_a_buffer() {
        let text = vec![b'x'; 5 * CHUNK];
        let limit = ReadLimit::default();
        let mut r = TrackedReader::new(&text[..]).with_limit(limit.clone());
        let mut one = [0u8; 1];
        r.read_exact(&mut one).unwrap();
        // Armed after one byte: reads go on to at most one buffer past the bound.
        limit.start(2 * CHUNK as u64);
        let mut got = 0;
        let e = loop {
            match r.read(&mut one) {
                Ok(1) => got += 1,
                Ok(_) => panic!("the end before the bound"),
                Err(e) => break e,
            }
        };
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(limit.tripped());
        assert!((2 * CHUNK..=3 * CHUNK).contains(&(got + 1)), "{got}");
        // Cleared: the rest is read.
        limit.clear();
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).unwrap();
        assert_eq!(got + 1 + rest.len(), text.len());
        // Through serde: a string past the bound is an I/O error, not a value.
        let mut text = b"[\"".to_vec();
        text.resize(4 * CHUNK, b's');
        text.extend(b"\"]");
        let limit = ReadLimit::default();
        let mut r = TrackedReader::new(&text[..]).with_limit(limit.clone());
        limit.start(CHUNK as u64);
        let e = serde_json::from_reader::<_, serde_json::Value>(&mut r).unwrap_err();
        assert!(e.is_io() && limit.tripped(), "{e}");
        // Unarmed, the same text is a value.
        let mut r = TrackedReader::new(&text[..]).with_limit(ReadLimit::default());
        assert!(serde_json::from_reader::<_, serde_json::Value>(&mut r).is_ok());
    }

    #[test]
    fn only_the_last_few_lines_are_remembered() {
        let text = "\n".repeat(10);
        let mut r = TrackedReader::new(text.as_bytes());
        std::io::copy(&mut r, &mut std::io::sink()).unwrap();
        assert_eq!(r.offset_of(11, 1), Some(10));
        assert_eq!(r.offset_of(2, 1), None);
    }
}
