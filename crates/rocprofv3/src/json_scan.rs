//! A byte-level scanner of JSON text for the direct reader's reads of rocprofv3 JSON
//! files: it finds the structure (objects, arrays, keys) itself, skips values without
//! lexing them into tokens, and hands each value it keeps to `serde_json::from_slice`.
//!
//! serde_json's reader-based parser takes its input one byte at a time through `Read`
//! (about half of a direct JSON conversion's time was that, and skipping the sections a
//! read does not want); a slice parses several times faster. Only a value's bytes are
//! held, never the document. The scanner checks structure only as far as it needs to
//! find where a value ends: the values it keeps are parsed strictly, the ones it skips
//! are not validated. That is enough for the direct reader, which leaves any input with
//! an error to the import (serde's visitors, with the exact place of every error).

use std::io::Read;

use crate::json_node::Flat;

/// How much is read from the input at a time.
const CHUNK: usize = 256 * 1024;

/// A value may not grow past this while kept (a record is a few hundred bytes; a kernel
/// symbol with a long templated name a few tens of KiB; a process's `metadata`, which
/// holds its command line, at most a few MiB). One kept value costs several times its
/// size by the time it is a catalog row, so the bound is what keeps a hostile file's
/// one giant string from costing gigabytes. The import's serde reads keep the same bound
/// (`json_import::bounded`, through a `ReadLimit`), with a little slack, so that nothing
/// this scanner takes is refused there.
pub(crate) const MAX_VALUE: usize = 8 << 20;

/// What [`ScanError::TooLarge`] and the import's reads say of a value past [`MAX_VALUE`].
pub(crate) const TOO_LARGE: &str =
    "a single value (record, table entry, key or metadata) larger than 8 MiB, the limit \
     of one value";

/// What an in-place parse of the buffered bytes came to.
enum Step<T> {
    /// A value of this many bytes, and what was made of it.
    Done(usize, T),
    /// The value may go on past the buffer.
    More,
    Fail(String),
}

/// One parse of a `T` at the start of `slice` (`exhausted`: nothing follows it in the
/// input), made into an output by `make` once the value is whole.
fn parse_step<'a, T: serde::Deserialize<'a>, O>(
    slice: &'a [u8],
    exhausted: bool,
    make: &mut Option<impl FnOnce(T) -> O>,
) -> Step<O> {
    let mut values = serde_json::Deserializer::from_slice(slice).into_iter::<T>();
    match values.next() {
        // A value that ends where the buffer does may go on (a number's digits).
        Some(Ok(v)) if exhausted || values.byte_offset() < slice.len() => match make.take() {
            Some(make) => Step::Done(values.byte_offset(), make(v)),
            // `in_place` stops at the first `Done`.
            None => Step::Fail("internal: a value made twice".into()),
        },
        // serde calls a number cut after its `-`, `.` or exponent mark invalid, not cut
        // short, when it only passes over it: an error where the buffer ends may be the
        // buffer's doing while more input follows (D165).
        Some(Err(e)) if exhausted || !(e.is_eof() || at_slice_end(slice, &e)) => {
            Step::Fail(e.to_string())
        }
        None if exhausted => Step::Fail("expected a value, found the end".into()),
        _ => Step::More,
    }
}

/// Whether serde's error `e`, met parsing `slice`, is placed at its end (serde places
/// an error by line and byte column).
fn at_slice_end(slice: &[u8], e: &serde_json::Error) -> bool {
    let line_start = match e.line().checked_sub(2) {
        None => 0,
        Some(newlines) => match memchr::memchr_iter(b'\n', slice).nth(newlines) {
            Some(k) => k + 1,
            None => return false,
        },
    };
    line_start.saturating_add(e.column()) >= slice.len()
}

/// Why a scan stopped.
#[derive(Debug)]
pub(crate) enum ScanError {
    Io(std::io::Error),
    /// The text is not the JSON the scanner expects, at this byte offset.
    Syntax(u64, String),
    /// A value that starts at this byte offset is larger than [`MAX_VALUE`].
    TooLarge(u64),
}

pub(crate) type ScanResult<T> = std::result::Result<T, ScanError>;

/// See the module documentation.
pub(crate) struct Scan<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// Bytes before `buf[0]`.
    base: u64,
    /// Values known to lie at (start, end) byte offsets, sorted by start, that
    /// [`Scan::skip`] jumps over with `reopen` instead of scanning.
    jumps: Vec<(u64, u64)>,
    reopen: Option<Reopen<R>>,
    /// In-place parses tried, for the tests of how often a long value is parsed again.
    #[cfg(test)]
    tries: usize,
}

#[cfg(test)]
thread_local! {
    /// Jumps over noted values made on this thread (and by the helpers it joined, which
    /// add theirs), for the tests of who jumps.
    pub(crate) static JUMPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The jumps counted on this thread, in tests; 0 otherwise.
pub(crate) fn jumps_here() -> usize {
    #[cfg(test)]
    return JUMPS.with(|n| n.get());
    #[cfg(not(test))]
    0
}

/// Adds a joined helper thread's jumps to this thread's, in tests.
pub(crate) fn add_jumps(_n: usize) {
    #[cfg(test)]
    JUMPS.with(|n| n.set(n.get() + _n));
}

/// Opens the input again at a byte offset of the text.
pub(crate) type Reopen<R> = Box<dyn FnMut(u64) -> std::io::Result<R>>;

impl<R: Read> Scan<R> {
    pub fn new(inner: R) -> Self {
        Scan {
            inner,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            base: 0,
            jumps: Vec::new(),
            reopen: None,
            #[cfg(test)]
            tries: 0,
        }
    }

    /// The same scanner, jumping over the values at `jumps` (from an earlier read of
    /// the same text) when it skips them, by opening the input again past them.
    pub fn with_jumps(mut self, mut jumps: Vec<(u64, u64)>, reopen: Reopen<R>) -> Self {
        jumps.sort_unstable();
        self.jumps = jumps;
        self.reopen = Some(reopen);
        self
    }

    /// The offset where the next value starts.
    pub fn start(&mut self) -> ScanResult<u64> {
        self.peek()?;
        Ok(self.offset())
    }

    /// The offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn syntax<T>(&self, what: impl Into<String>) -> ScanResult<T> {
        Err(ScanError::Syntax(self.offset(), what.into()))
    }

    /// Makes a byte available; `false` at the end of the input.
    fn fill(&mut self) -> ScanResult<bool> {
        if self.pos < self.end {
            return Ok(true);
        }
        self.base += self.end as u64;
        self.pos = 0;
        self.end = 0;
        self.end = self.read_at(0)?;
        Ok(self.end > 0)
    }

    /// Reads into the buffer from `from` on, again when interrupted; 0 at the end of the
    /// input.
    fn read_at(&mut self, from: usize) -> ScanResult<usize> {
        loop {
            match self.inner.read(&mut self.buf[from..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                read => return read.map_err(ScanError::Io),
            }
        }
    }

    /// The next byte that is not whitespace, not consumed; `None` at the end.
    pub fn peek(&mut self) -> ScanResult<Option<u8>> {
        loop {
            if !self.fill()? {
                return Ok(None);
            }
            let b = self.buf[self.pos];
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                return Ok(Some(b));
            }
        }
    }

    /// Consumes `b` (after whitespace).
    pub fn expect(&mut self, b: u8) -> ScanResult<()> {
        match self.peek()? {
            Some(c) if c == b => {
                self.pos += 1;
                Ok(())
            }
            Some(c) => self.syntax(format!("expected `{}`, found `{}`", b as char, c as char)),
            None => self.syntax(format!("expected `{}`, found the end", b as char)),
        }
    }

    /// After a member or element: `true` when another follows (a `,` was consumed),
    /// `false` when `close` ended the container.
    pub fn more(&mut self, close: u8) -> ScanResult<bool> {
        match self.peek()? {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => self.syntax(format!("expected `,` or `{}`", close as char)),
        }
    }

    /// Opens a container: `true` when it has a first member or element, `false` when it
    /// is empty (and consumed).
    pub fn open(&mut self, open: u8, close: u8) -> ScanResult<bool> {
        self.expect(open)?;
        if self.peek()? == Some(close) {
            self.pos += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// An object key and its `:`.
    pub fn key(&mut self) -> ScanResult<String> {
        let mut raw = Vec::new();
        if self.peek()? != Some(b'"') {
            return self.syntax("expected a key");
        }
        self.value(Some(&mut raw))?;
        self.expect(b':')?;
        serde_json::from_slice(&raw).or_else(|e| self.syntax(format!("bad key: {e}")))
    }

    /// Skips a value; when `strict`, checks it is well-formed JSON first, one element
    /// or member at a time (never more than one scalar's bytes held).
    pub fn skip(&mut self, strict: bool) -> ScanResult<()> {
        if strict {
            return self.check(0);
        }
        if !self.jumps.is_empty() {
            let at = self.start()?;
            if let Ok(i) = self.jumps.binary_search_by_key(&at, |&(start, _)| start) {
                let end = self.jumps[i].1;
                return self.jump(end);
            }
        }
        self.value(None)
    }

    /// Goes on at byte offset `to` (past the current one): in the buffer if it is
    /// there, else in the input opened again there.
    fn jump(&mut self, to: u64) -> ScanResult<()> {
        #[cfg(test)]
        JUMPS.with(|n| n.set(n.get() + 1));
        if let Some(pos) = to
            .checked_sub(self.base)
            .and_then(|d| usize::try_from(d).ok())
        {
            if pos <= self.end {
                self.pos = pos;
                return Ok(());
            }
        }
        let Some(reopen) = self.reopen.as_mut() else {
            return self.value(None);
        };
        self.inner = reopen(to).map_err(ScanError::Io)?;
        self.base = to;
        self.pos = 0;
        self.end = 0;
        Ok(())
    }

    /// Whether only whitespace is left.
    pub fn at_end(&mut self) -> ScanResult<bool> {
        Ok(self.peek()?.is_none())
    }

    fn check(&mut self, depth: usize) -> ScanResult<()> {
        let mut raw = Vec::new();
        match self.peek()? {
            // A value that fits the buffer (a record, a scalar) is checked whole by
            // serde, where it lies; larger containers are walked, so the buffer does not
            // grow to hold a section.
            Some(_) if self.check_in_place()? => {}
            // As deep as serde_json goes: deeper values are its to refuse.
            Some(b'[' | b'{') if depth >= 100 => {
                self.parse::<serde::de::IgnoredAny>(&mut raw)?;
            }
            Some(b'[') => {
                if self.open(b'[', b']')? {
                    loop {
                        self.check(depth + 1)?;
                        if !self.more(b']')? {
                            break;
                        }
                    }
                }
            }
            Some(b'{') => {
                if self.open(b'{', b'}')? {
                    loop {
                        // A key is a string: checked as it passes, like the values.
                        if self.peek()? != Some(b'"') {
                            return self.syntax("expected a key");
                        }
                        self.check_string()?;
                        self.expect(b':')?;
                        self.check(depth + 1)?;
                        if !self.more(b'}')? {
                            break;
                        }
                    }
                }
            }
            // A string too long for the buffer is checked as it passes, never held: a
            // value a read passes over has no cap (D147).
            Some(b'"') => self.check_string()?,
            Some(b'-' | b'0'..=b'9') => self.check_number()?,
            _ => {
                self.parse::<serde::de::IgnoredAny>(&mut raw)?;
            }
        }
        Ok(())
    }

    /// Consumes a number too long for the buffer, checking it has JSON's form
    /// (`-`, digits without a leading zero, a fraction, an exponent) as it passes.
    fn check_number(&mut self) -> ScanResult<()> {
        if self.peek_byte()? == Some(b'-') {
            self.pos += 1;
        }
        match self.peek_byte()? {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits()?,
            _ => return self.syntax("invalid number"),
        }
        if self.peek_byte()? == Some(b'.') {
            self.pos += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek_byte()? {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek_byte()? {
                self.pos += 1;
            }
            self.some_digits()?;
        }
        Ok(())
    }

    /// At least one digit, and the digits after it.
    fn some_digits(&mut self) -> ScanResult<()> {
        match self.peek_byte()? {
            Some(b'0'..=b'9') => self.digits(),
            _ => self.syntax("invalid number"),
        }
    }

    /// Consumes digits.
    fn digits(&mut self) -> ScanResult<()> {
        while self.fill()? {
            let chunk = &self.buf[self.pos..self.end];
            match chunk.iter().position(|b| !b.is_ascii_digit()) {
                Some(k) => {
                    self.pos += k;
                    return Ok(());
                }
                None => self.pos = self.end,
            }
        }
        Ok(())
    }

    /// The next byte, whitespace included, not consumed; `None` at the end.
    fn peek_byte(&mut self) -> ScanResult<Option<u8>> {
        Ok(if self.fill()? {
            Some(self.buf[self.pos])
        } else {
            None
        })
    }

    /// Consumes a string, checking it as serde_json checks one it passes over: no
    /// control character, only JSON's escapes.
    fn check_string(&mut self) -> ScanResult<()> {
        self.expect(b'"')?;
        loop {
            if !self.fill()? {
                return self.syntax("the document ends inside a string");
            }
            let chunk = &self.buf[self.pos..self.end];
            let Some(k) = chunk
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            else {
                self.pos = self.end;
                continue;
            };
            self.pos += k;
            match self.buf[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => {
                    self.pos += 1;
                    let hex = match self.take_byte()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 0,
                        b'u' => 4,
                        _ => return self.syntax("invalid escape"),
                    };
                    for _ in 0..hex {
                        if !self.take_byte()?.is_ascii_hexdigit() {
                            return self.syntax("invalid escape");
                        }
                    }
                }
                _ => {
                    return self
                        .syntax("control character (\\u0000-\\u001F) found while parsing a string")
                }
            }
        }
    }

    /// The next byte, consumed.
    fn take_byte(&mut self) -> ScanResult<u8> {
        if !self.fill()? {
            return self.syntax("the document ends inside a string");
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(b)
    }

    /// A value's bytes, parsed by serde_json.
    pub fn parse<T: serde::de::DeserializeOwned>(&mut self, raw: &mut Vec<u8>) -> ScanResult<T> {
        raw.clear();
        let at = self.start()?;
        self.value(Some(raw))?;
        serde_json::from_slice(raw).map_err(|e| ScanError::Syntax(at, e.to_string()))
    }

    /// Parses the next value where it lies in the buffer, with its strings borrowed from
    /// it, and hands it to `f`. No copy and no separate scan for the value's end: serde
    /// finds it. A value cut off by the buffer's end is parsed again once more of the
    /// input is in (the buffer grows for a value longer than it, up to [`MAX_VALUE`]).
    pub fn with_flat<T>(&mut self, f: impl FnOnce(&Flat<'_>) -> T) -> ScanResult<T> {
        let mut make = Some(move |v: Flat<'_>| f(&v));
        self.in_place(true, |slice, exhausted| {
            // Plain JSON first (D103); serde_json takes the rest and speaks for errors.
            if let Some((end, v)) = crate::flat_parse::parse(slice, exhausted) {
                if let Some(make) = make.take() {
                    return Step::Done(end, make(v));
                }
            }
            parse_step(slice, exhausted, &mut make)
        })?
        .map_or_else(|| Err(ScanError::TooLarge(self.offset())), Ok)
    }

    /// Checks that the next value is well-formed JSON where it lies in the buffer;
    /// `false` (and nothing consumed) when it does not fit the buffer as it is.
    fn check_in_place(&mut self) -> ScanResult<bool> {
        let mut make = Some(|_: serde::de::IgnoredAny| ());
        let checked = self.in_place(false, |slice, exhausted| {
            parse_step(slice, exhausted, &mut make)
        })?;
        Ok(checked.is_some())
    }

    /// Runs `step` on the buffered bytes from the next value on (and whether the input
    /// is exhausted) until it has a value, refilling the buffer while it asks for more;
    /// `None` when the value would need a larger buffer and `grow` is not set.
    fn in_place<T>(
        &mut self,
        grow: bool,
        mut step: impl FnMut(&[u8], bool) -> Step<T>,
    ) -> ScanResult<Option<T>> {
        if self.peek()?.is_none() {
            return self.syntax("expected a value, found the end");
        }
        let mut exhausted = false;
        loop {
            let at = self.offset();
            #[cfg(test)]
            {
                self.tries += 1;
            }
            match step(&self.buf[self.pos..self.end], exhausted) {
                Step::Done(used, out) => {
                    self.pos += used;
                    return Ok(Some(out));
                }
                Step::Fail(m) => return Err(ScanError::Syntax(at, m)),
                Step::More if !grow && self.end - self.pos >= self.buf.len() => return Ok(None),
                Step::More => exhausted = !self.refill()?,
            }
        }
    }

    /// Moves the unread bytes to the buffer's start and reads after them until the
    /// buffer is full (growing it when they fill it); `false` at the end of the input.
    /// Filling it whole keeps the parses of a long value to one per doubling: a reader
    /// that hands out little at a time (a gzip stream) would otherwise have the value
    /// parsed again after every read.
    fn refill(&mut self) -> ScanResult<bool> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            // The buffer holds the whole pending value: past the cap only when it holds
            // more than the cap. One byte over the cap is room for the byte after a value
            // of exactly the cap, which a parse needs to see it end.
            if self.buf.len() > MAX_VALUE {
                return Err(ScanError::TooLarge(self.offset()));
            }
            let grown = self.buf.len().saturating_mul(2).min(MAX_VALUE + 1);
            self.buf.resize(grown, 0);
        }
        let mut more = false;
        while self.end < self.buf.len() {
            let n = self.read_at(self.end)?;
            if n == 0 {
                break;
            }
            self.end += n;
            more = true;
        }
        Ok(more)
    }

    /// Consumes one value, copying its bytes into `out` if given.
    fn value(&mut self, mut out: Option<&mut Vec<u8>>) -> ScanResult<()> {
        let Some(first) = self.peek()? else {
            return self.syntax("expected a value, found the end");
        };
        let at = self.offset();
        if matches!(first, b'}' | b']' | b',' | b':') {
            return self.syntax(format!("expected a value, found `{}`", first as char));
        }
        // A scalar ends at a delimiter, which is left unconsumed.
        let scalar = !matches!(first, b'"' | b'{' | b'[');
        // Brackets balance apart from braces in well-formed JSON: an array's end is found
        // by counting brackets alone, an object's by braces, so each is a search for one
        // of three bytes.
        let (open, close) = if first == b'[' {
            (b'[', b']')
        } else {
            (b'{', b'}')
        };
        let mut depth = 0u32;
        let mut in_str = false;
        // A backslash ended the last chunk: the first byte of this one is escaped.
        let mut esc = false;
        loop {
            if !self.fill()? {
                if scalar {
                    return Ok(());
                }
                return self.syntax("the document ends inside a value");
            }
            let chunk = &self.buf[self.pos..self.end];
            let mut i = 0;
            let mut done = false;
            if scalar {
                match chunk
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                {
                    Some(k) => (i, done) = (k, true),
                    None => i = chunk.len(),
                }
            }
            // Containers go 64 bytes at a time where they can (strings never end one); a
            // block with a backslash is left to the searches below, and blocks are tried
            // again past it.
            let blocks = !scalar && first != b'"';
            let mut blocks_from = i;
            while !done && !scalar && i < chunk.len() {
                if blocks && !esc && i >= blocks_from {
                    match skip_blocks(chunk, i, open, close, &mut depth, &mut in_str) {
                        Ok(k) => {
                            (i, blocks_from) = (k, k.saturating_add(64));
                            continue;
                        }
                        Err(k) => {
                            (i, done) = (k, true);
                            break;
                        }
                    }
                }
                if esc {
                    esc = false;
                    i += 1;
                    continue;
                }
                if in_str {
                    // Strings are most of the bytes: jump to the next quote or escape.
                    match memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                        None => i = chunk.len(),
                        Some(k) if chunk[i + k] == b'\\' => {
                            esc = true;
                            i += k + 1;
                        }
                        Some(k) => {
                            in_str = false;
                            i += k + 1;
                            if depth == 0 {
                                done = true;
                                break;
                            }
                        }
                    }
                    continue;
                }
                let Some(k) = memchr::memchr3(b'"', open, close, &chunk[i..]) else {
                    i = chunk.len();
                    break;
                };
                i += k;
                match chunk[i] {
                    b'"' => in_str = true,
                    b if b == open => depth += 1,
                    _ => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            i += 1;
                            done = true;
                            break;
                        }
                    }
                }
                i += 1;
            }
            if let Some(o) = out.as_deref_mut() {
                if o.len() + i > MAX_VALUE {
                    return Err(ScanError::TooLarge(at));
                }
                o.extend_from_slice(&chunk[..i]);
            }
            self.pos += i;
            if done {
                return Ok(());
            }
        }
    }
}

/// The bytes of `block` equal to each of `bytes`, one bit each (bit `k` for byte `k`):
/// eight bytes at a time in a `u64`, each word loaded once for all four, so that no
/// target feature is needed.
fn eq_masks(block: &[u8; 64], bytes: [u8; 4]) -> [u64; 4] {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let patterns = bytes.map(|c| u64::from(c) * 0x0101_0101_0101_0101);
    let mut masks = [0u64; 4];
    for (w, word) in block.chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(word);
        let word = u64::from_le_bytes(b);
        for (mask, pattern) in masks.iter_mut().zip(patterns) {
            let x = word ^ pattern;
            // The high bit of each byte that is zero, and of no other (no borrow between
            // bytes, unlike the shorter test).
            let zero = !(((x & LOW7) + LOW7) | x | LOW7);
            // Gathers the eight high bits into the top byte, byte k's at bit 56 + k.
            let bits = (zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
            *mask |= bits << (8 * w);
        }
    }
    masks
}

/// Each bit the parity of the bits at and below it: with quotes as input, the opening
/// quote and the inside of each string.
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// Skips through a container from `chunk[i..]` in blocks of 64 bytes, carrying the
/// scanner's state (`depth` of `open`/`close` outside strings, inside a string), from a
/// byte that is not escaped. `Err(k)`: the container ends just before `k`; `Ok(k)`: go on
/// from `k`, where fewer than 64 bytes are left or a block holds a backslash (an escape
/// could hide a quote; rare in profiler output, and left to the caller's searches). In a
/// block a string is the span between a quote and the next, so brackets inside strings
/// are masked out by the quotes' running parity. On the bench's JSON files this skips at
/// about twice the speed of searching for the next quote or bracket, which stops every
/// ten bytes or so in records.
fn skip_blocks(
    chunk: &[u8],
    mut i: usize,
    open: u8,
    close: u8,
    depth: &mut u32,
    in_str: &mut bool,
) -> std::result::Result<usize, usize> {
    while let Some(block) = chunk.get(i..i.saturating_add(64)) {
        let Ok(block) = <&[u8; 64]>::try_from(block) else {
            break;
        };
        let [backslashes, quotes, opens, closes] = eq_masks(block, [b'\\', b'"', open, close]);
        if backslashes != 0 {
            break;
        }
        let mut inside = prefix_xor(quotes);
        if *in_str {
            inside = !inside;
        }
        let opens = opens & !inside;
        let closes = closes & !inside;
        if closes.count_ones() < *depth {
            // The container cannot end here.
            *depth = *depth + opens.count_ones() - closes.count_ones();
        } else {
            let mut marks = opens | closes;
            while marks != 0 {
                let k = marks.trailing_zeros();
                if opens >> k & 1 == 1 {
                    *depth += 1;
                } else {
                    *depth = depth.saturating_sub(1);
                    if *depth == 0 {
                        return Err(i + k as usize + 1);
                    }
                }
                marks &= marks - 1;
            }
        }
        *in_str = inside >> 63 == 1;
        i += 64;
    }
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_keeps_and_skips() {
        let text = br#" { "a\"b" : [1, {"x": "}]\\"}, -2.5e3, true, null, "s"], "c": {} } "#;
        let mut s = Scan::new(&text[..]);
        assert!(s.open(b'{', b'}').unwrap());
        assert_eq!(s.key().unwrap(), "a\"b");
        assert!(s.open(b'[', b']').unwrap());
        let mut raw = Vec::new();
        let mut seen = Vec::new();
        loop {
            let v: serde_json::Value = s.parse(&mut raw).unwrap();
            seen.push(v);
            if !s.more(b']').unwrap() {
                break;
            }
        }
        assert_eq!(
            serde_json::Value::Array(seen),
            serde_json::json!([1, {"x": "}]\\"}, -2500.0, true, null, "s"])
        );
        assert!(s.more(b'}').unwrap());
        assert_eq!(s.key().unwrap(), "c");
        s.skip(false).unwrap();
        assert!(!s.more(b'}').unwrap());
        assert_eq!(s.peek().unwrap(), None);
        // Strict skipping checks what fast skipping passes over.
        for (text, ok) in [
            (&br#"[1, {"a": [true, null, "x\u0041"]}, -0.5]"#[..], true),
            (&br#"[1, 2x]"#[..], false),
            (&br#"{"a" 1}"#[..], false),
            (&br#"[1,]"#[..], false),
            (&br#"{"a": tru}"#[..], false),
        ] {
            assert!(Scan::new(text).skip(false).is_ok());
            assert_eq!(
                Scan::new(text).skip(true).is_ok(),
                ok,
                "{:?}",
                std::str::from_utf8(text)
            );
        }
    }

    #[test]
    fn long_keys_and_numbers_passed_over_are_checked_as_serde_checks_them() {
        let long = "1".repeat(2 * CHUNK);
        let check = |text: String| {
            let serde = serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
            let ours = Scan::new(text.as_bytes()).skip(true).is_ok();
            assert_eq!(ours, serde, "{}", &text[text.len() - 12..]);
            ours
        };
        for (head, tail, ok) in [
            ("-", ".5e+3", true),
            ("", "E7", true),
            ("", "", true),
            ("0", "", false),
            ("-", ".", false),
            ("", "e", false),
            ("", "e+", false),
            ("--", "", false),
            ("", "x", false),
        ] {
            assert_eq!(
                check(format!("[{{\"n\": {head}{long}{tail}}}]")),
                ok,
                "{head} {tail}"
            );
        }
        let key = "k".repeat(2 * CHUNK);
        assert!(check(format!("{{\"{key}\": 1}}")));
        assert!(!check(format!("{{\"{key}\" 1}}")));
        assert!(!check(format!("{{\"{key}\\q\": 1}}")));
    }

    #[test]
    fn values_across_buffer_ends_and_truncation() {
        let long = format!(
            "[\"{}\", {{\"k\": [{}]}}]",
            "x\\\"".repeat(100_000),
            "7,".repeat(99_999) + "7"
        );
        let mut s = Scan::new(long.as_bytes());
        let mut raw = Vec::new();
        let v: serde_json::Value = s.parse(&mut raw).unwrap();
        assert_eq!(v[1]["k"].as_array().unwrap().len(), 100_000);
        let cut = &long.as_bytes()[..long.len() - 3];
        let mut s = Scan::new(cut);
        assert!(matches!(s.skip(false), Err(ScanError::Syntax(..))));
        let mut s = Scan::new(&b"{\"a\" 1}"[..]);
        s.open(b'{', b'}').unwrap();
        assert!(matches!(s.key(), Err(ScanError::Syntax(5, _))));
    }

    /// The cap is on the value: a string of exactly [`MAX_VALUE`] bytes (its quotes
    /// counted) is read, in place and by serde, followed by more of the input; one byte
    /// more is refused, at the value's start.
    #[test]
    fn a_value_of_exactly_the_cap_is_read_and_one_byte_more_refused() {
        let doc = |value_bytes: usize| format!("[\"{}\", 1]", "v".repeat(value_bytes - 2));
        let exact = doc(MAX_VALUE);
        let mut s = Scan::new(exact.as_bytes());
        assert!(s.open(b'[', b']').unwrap());
        let len = s
            .with_flat(|v| match v {
                Flat::Str(t) => t.len(),
                _ => 0,
            })
            .unwrap();
        assert_eq!(len, MAX_VALUE - 2);
        assert!(s.more(b']').unwrap());
        let mut raw = Vec::new();
        assert_eq!(s.parse::<i64>(&mut raw).unwrap(), 1);
        let mut s = Scan::new(exact.as_bytes());
        s.open(b'[', b']').unwrap();
        let text: String = s.parse(&mut raw).unwrap();
        assert_eq!(text.len(), MAX_VALUE - 2);

        let over = doc(MAX_VALUE + 1);
        let mut s = Scan::new(over.as_bytes());
        s.open(b'[', b']').unwrap();
        assert!(matches!(s.with_flat(|_| ()), Err(ScanError::TooLarge(1))));
        let mut s = Scan::new(over.as_bytes());
        s.open(b'[', b']').unwrap();
        assert!(matches!(
            s.parse::<String>(&mut raw),
            Err(ScanError::TooLarge(1))
        ));
    }

    /// Skipping in blocks ends every container where serde_json ends it, with strings
    /// full of brackets, quotes and backslashes on every side of block and read edges.
    #[test]
    fn block_skips_end_where_serde_ends() {
        let mut next = crate::flat_parse::tests::below(0x9e37_79b9_7f4a_7c15);
        fn value(next: &mut dyn FnMut(usize) -> usize, depth: usize, out: &mut String) {
            const STRS: &[&str] = &[
                "",
                "]",
                "[[",
                "}",
                "{{",
                "\\\"",
                "\\\\",
                "\\\\\\\"]",
                "a\\\\\\\\",
                "\\u005d",
                "x]}y",
                "plain text that is long enough to cross a block",
            ];
            match if depth > 4 { 2 } else { next(5) } {
                0 | 3 => {
                    out.push('[');
                    for i in 0..next(6) {
                        if i > 0 {
                            out.push(',');
                        }
                        value(next, depth + 1, out);
                    }
                    out.push(']');
                }
                1 | 4 => {
                    out.push('{');
                    for i in 0..next(6) {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        out.push_str(&format!("\"{}\":", STRS[next(STRS.len())]));
                        value(next, depth + 1, out);
                    }
                    out.push('}');
                }
                _ => match next(3) {
                    0 => out.push_str(&format!("\"{}\"", STRS[next(STRS.len())])),
                    1 => out.push_str("12345"),
                    _ => out.push_str("null"),
                },
            }
        }
        let mut checked = 0;
        for round in 0..3_000 {
            let mut text = String::new();
            value(&mut next, 0, &mut text);
            if !text.starts_with(['[', '{']) {
                continue;
            }
            let want = text.len();
            text.push_str(" ,\"after\"");
            let mut values =
                serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>();
            assert!(values.next().unwrap().is_ok(), "{text}");
            assert_eq!(values.byte_offset(), want);
            let n = [1, 3, 64, 65, 100, CHUNK][round % 6];
            let mut s = Scan::new(Trickle(text.as_bytes(), n));
            s.skip(false).unwrap();
            assert_eq!(s.offset(), want as u64, "reads of {n}: {text}");
            assert!(s.more(b']').unwrap());
            checked += 1;
        }
        assert!(checked > 1_000, "{checked}");
    }

    /// Hands out at most `n` bytes per read, so values straddle every read.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(out.len()).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn flat_elements<R: Read>(s: &mut Scan<R>) -> ScanResult<Vec<serde_json::Value>> {
        use crate::json_node::Node;
        let mut out = Vec::new();
        if s.open(b'[', b']')? {
            loop {
                out.push(s.with_flat(|v| v.to_value().into_owned())?);
                if !s.more(b']')? {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// A number cut by the buffer after its `-`, `.` or exponent mark is read on, not
    /// refused: strict skipping over values that fit the buffer checks them with serde,
    /// which calls such a number invalid, not cut short (D165; found on a rocprofv3 JSON
    /// file whose counter values end in `.0`, at a buffer boundary that fell just so).
    #[test]
    fn numbers_cut_by_the_buffer_are_read_on() {
        let text = br#"[{"v": 15499264.0, "w": -3, "x": 1e5, "y": 2.5E-3}, [-0.25, 7.0e+1]]"#;
        for n in 1..text.len() {
            let mut s = Scan::new(Trickle(text, n));
            s.skip(true)
                .unwrap_or_else(|e| panic!("reads of {n} bytes: {e:?}"));
            assert!(s.at_end().unwrap());
        }
        // Bad numbers are still refused, wherever the reads end.
        for bad in [
            &br#"[{"v": 1.}]"#[..],
            br#"[-]"#,
            br#"[1e]"#,
            br#"{"a": [2.x]}"#,
        ] {
            for n in 1..bad.len() {
                assert!(
                    Scan::new(Trickle(bad, n)).skip(true).is_err(),
                    "{:?} in reads of {n}",
                    std::str::from_utf8(bad)
                );
            }
        }
    }

    #[test]
    fn flat_values_in_place_across_reads() {
        let text = br#"[12345, {"a": "x\"y", "b": [1, 2.5]}, -7, "s", true, null, 12]"#;
        let whole: serde_json::Value = serde_json::from_slice(text).unwrap();
        for n in [1, 2, 3, 7, 64, CHUNK] {
            let got = flat_elements(&mut Scan::new(Trickle(text, n))).unwrap();
            assert_eq!(serde_json::Value::Array(got), whole, "reads of {n} bytes");
        }
        // A value longer than the buffer grows it, also when the input comes a few bytes
        // at a time; it is parsed again once per doubling of the buffer, not once per read.
        let long = format!("[{{\"k\": \"{}\"}}, 1]", "z".repeat(3 * CHUNK));
        for n in [7, CHUNK] {
            let mut s = Scan::new(Trickle(long.as_bytes(), n));
            let got = flat_elements(&mut s).unwrap();
            assert_eq!(got[0]["k"].as_str().map(str::len), Some(3 * CHUNK));
            assert!(s.tries <= 6, "{} parses with reads of {n} bytes", s.tries);
        }
        // Cut off, or malformed: an error at the value's first byte.
        for (text, at) in [(&b"[1, {\"a\": 1"[..], 4), (&b"[1, {\"a\": tru}]"[..], 4)] {
            for n in [2, CHUNK] {
                match flat_elements(&mut Scan::new(Trickle(text, n))) {
                    Err(ScanError::Syntax(o, _)) => assert_eq!(o, at),
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    /// A skip of a value whose span an earlier read noted jumps: in the buffer when the
    /// end is there, else through the input opened again at the end.
    #[test]
    fn skips_jump_over_noted_values() {
        let big = format!("[{}1]", "1, ".repeat(CHUNK));
        let text = format!("{{\"a\": {big}, \"b\": [2, 3], \"c\": 4}}");
        let bytes = text.as_bytes().to_vec();
        let a = text.find('[').unwrap() as u64;
        let b = text.find("[2").unwrap() as u64;
        let spans = vec![(a, a + big.len() as u64), (b, b + 6)];
        let opened = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let seen = opened.clone();
        let source = bytes.clone();
        let reopen: Reopen<std::io::Cursor<Vec<u8>>> = Box::new(move |at| {
            seen.borrow_mut().push(at);
            let from = usize::try_from(at).unwrap();
            Ok(std::io::Cursor::new(source[from..].to_vec()))
        });
        let mut s = Scan::new(std::io::Cursor::new(bytes)).with_jumps(spans, reopen);
        assert!(s.open(b'{', b'}').unwrap());
        assert_eq!(s.key().unwrap(), "a");
        s.skip(false).unwrap();
        assert!(s.more(b'}').unwrap());
        assert_eq!(s.key().unwrap(), "b");
        s.skip(false).unwrap();
        assert!(s.more(b'}').unwrap());
        assert_eq!(s.key().unwrap(), "c");
        let mut raw = Vec::new();
        assert_eq!(s.parse::<i64>(&mut raw).unwrap(), 4);
        assert!(!s.more(b'}').unwrap());
        assert!(s.at_end().unwrap());
        // The large array's end was past the buffer; the small one's was in it.
        assert_eq!(*opened.borrow(), vec![a + big.len() as u64]);
    }
}
