//! Pull parsers (one token at a time, no recursion) for JSON and MessagePack.
//!
//! Both yield the same [`Tok`] stream, so the tree builder works on either format and on
//! trees of any depth. Errors carry the byte offset where the input went wrong.
//!
//! Both read through a [`Window`] over any `Read`: only the bytes of the token being read
//! are held, so a tree file is never in memory whole.

use std::io::Read;

use serde_json::{Number, Value};

/// One token of a JSON or MessagePack document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    BeginArr,
    EndArr,
    BeginMap,
    EndMap,
    /// A map key (MessagePack non-string keys are converted to their text form).
    Key(String),
    /// A scalar value (string, number, bool or null).
    Scalar(Value),
    /// End of the document.
    Eof,
}

/// A parse error: byte offset and message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PullError {
    pub offset: usize,
    pub message: String,
}

pub(crate) type PResult<T> = std::result::Result<T, PullError>;

/// How much a [`Window`] reads at a time.
const CHUNK: usize = 64 * 1024;

/// A forward-only view of a reader by absolute byte offset. Bytes before the last
/// [`Window::release`] point may be dropped; everything from there on stays until the next
/// release, so a token's bytes can be sliced while it is being read.
pub(crate) struct Window<R> {
    r: R,
    buf: Vec<u8>,
    /// Input offset of `buf[0]`.
    base: usize,
    eof: bool,
}

impl<R: Read> Window<R> {
    pub fn new(r: R) -> Self {
        Window {
            r,
            buf: Vec::new(),
            base: 0,
            eof: false,
        }
    }

    /// One past the last byte read so far.
    fn end(&self) -> usize {
        self.base + self.buf.len()
    }

    /// Reads until the bytes before `end` are held; `false` when the input ends first.
    fn fill_to(&mut self, end: usize) -> PResult<bool> {
        while self.end() < end && !self.eof {
            let len = self.buf.len();
            self.buf.resize(len + CHUNK, 0);
            match self.r.read(&mut self.buf[len..]) {
                Ok(n) => {
                    self.buf.truncate(len + n);
                    self.eof = n == 0;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => self.buf.truncate(len),
                Err(e) => {
                    self.buf.truncate(len);
                    return perr(self.end(), format!("cannot read: {e}"));
                }
            }
        }
        Ok(self.end() >= end)
    }

    /// The byte at `pos`, or `None` at the end of the input.
    fn byte(&mut self, pos: usize) -> PResult<Option<u8>> {
        if pos >= self.end() && !self.fill_to(pos + 1)? {
            return Ok(None);
        }
        Ok(self.buf.get(pos - self.base).copied())
    }

    /// Bytes `start..end`, all of which must have been read and not released.
    fn slice(&self, start: usize, end: usize) -> &[u8] {
        &self.buf[start - self.base..end - self.base]
    }

    /// `n` bytes from `pos` if the input holds them, else what is left.
    fn ahead(&mut self, pos: usize, n: usize) -> PResult<&[u8]> {
        self.fill_to(pos.saturating_add(n))?;
        let end = self.end().min(pos.saturating_add(n));
        Ok(self.slice(pos.min(end), end))
    }

    /// Bytes before `pos` are no longer needed.
    fn release(&mut self, pos: usize) {
        let k = pos.saturating_sub(self.base).min(self.buf.len());
        // Compacting only once half the buffer is dead keeps the copying linear.
        if k >= CHUNK && 2 * k >= self.buf.len() {
            self.buf.drain(..k);
            self.base += k;
        }
    }
}

/// A source of tokens.
pub(crate) trait Pull {
    fn next_tok(&mut self) -> PResult<Tok>;
    /// The current byte offset (for messages).
    fn offset(&self) -> usize;
}

fn perr<T>(offset: usize, message: impl Into<String>) -> PResult<T> {
    Err(PullError {
        offset,
        message: message.into(),
    })
}

/// Maximum nesting accepted inside one scalar-ish value read by [`read_value`].
const VALUE_DEPTH: usize = 256;

/// Maximum nesting of a whole document: each open array or map costs the parsers a
/// context, so a file of nothing but `[` would otherwise take memory 16 times its size.
/// A tree node takes two levels (its object and its children's array), so trees up to
/// 50,000 nodes deep are read; Proton's call paths are a few hundred at most.
pub(crate) const MAX_NESTING: usize = 100_000;

/// Input bytes one value read whole by [`read_bounded`] may span: a node's frame, name
/// and metrics and the device table are kept, and a `serde_json::Value` takes several
/// times the bytes it was read from.
pub(crate) const VALUE_BYTES: usize = 16 << 20;

/// The longest number text read.
const MAX_NUMBER: usize = 4096;

/// A string (or MessagePack binary) past [`VALUE_BYTES`].
fn too_long<T>(offset: usize) -> PResult<T> {
    perr(
        offset,
        format!("a string larger than {} MiB", VALUE_BYTES >> 20),
    )
}

fn too_deep<T>(offset: usize) -> PResult<T> {
    perr(
        offset,
        format!("nested more than {MAX_NESTING} levels deep"),
    )
}

/// [`read_value`], refused with `what` named once the value spans more than
/// [`VALUE_BYTES`] of input.
pub(crate) fn read_bounded(p: &mut dyn Pull, first: Tok, what: &str) -> PResult<Value> {
    read_within(p, first, VALUE_BYTES, what)
}

/// Reads one whole value whose first token is `first` (used for metric values, frames and
/// the device table, which are shallow). Nesting deeper than 256 is an error.
#[cfg(test)]
pub(crate) fn read_value(p: &mut dyn Pull, first: Tok) -> PResult<Value> {
    read_within(p, first, usize::MAX, "")
}

fn read_within(p: &mut dyn Pull, first: Tok, limit: usize, what: &str) -> PResult<Value> {
    let start = p.offset();
    enum C {
        A(Vec<Value>),
        M(serde_json::Map<String, Value>, Option<String>),
    }
    let mut stack: Vec<C> = Vec::new();
    let mut tok = first;
    loop {
        let done: Value = match tok {
            Tok::BeginArr => {
                stack.push(C::A(Vec::new()));
                if stack.len() > VALUE_DEPTH {
                    return perr(p.offset(), "value nested too deeply");
                }
                tok = p.next_tok()?;
                continue;
            }
            Tok::BeginMap => {
                stack.push(C::M(serde_json::Map::new(), None));
                if stack.len() > VALUE_DEPTH {
                    return perr(p.offset(), "value nested too deeply");
                }
                tok = p.next_tok()?;
                continue;
            }
            Tok::Key(k) => {
                if let Some(C::M(_, key)) = stack.last_mut() {
                    *key = Some(k);
                }
                tok = p.next_tok()?;
                continue;
            }
            Tok::EndArr => match stack.pop() {
                Some(C::A(v)) => Value::Array(v),
                _ => return perr(p.offset(), "unexpected end of array"),
            },
            Tok::EndMap => match stack.pop() {
                Some(C::M(m, _)) => Value::Object(m),
                _ => return perr(p.offset(), "unexpected end of object"),
            },
            Tok::Scalar(v) => v,
            Tok::Eof => return perr(p.offset(), "unexpected end of input"),
        };
        match stack.last_mut() {
            None => return Ok(done),
            Some(C::A(v)) => v.push(done),
            Some(C::M(m, key)) => {
                let k = key.take().unwrap_or_default();
                m.insert(k, done);
            }
        }
        if p.offset().saturating_sub(start) > limit {
            return perr(start, format!("{what} is larger than {} MiB", limit >> 20));
        }
        tok = p.next_tok()?;
    }
}

/// Skips one value whose first token is `first`.
pub(crate) fn skip_value(p: &mut dyn Pull, first: Tok) -> PResult<()> {
    let mut depth = 0usize;
    let mut tok = first;
    loop {
        match tok {
            Tok::BeginArr | Tok::BeginMap => depth += 1,
            Tok::EndArr | Tok::EndMap => depth = depth.saturating_sub(1),
            Tok::Key(_) => {
                tok = p.next_tok()?;
                continue;
            }
            Tok::Scalar(_) => {}
            Tok::Eof => return perr(p.offset(), "unexpected end of input"),
        }
        if depth == 0 {
            return Ok(());
        }
        tok = p.next_tok()?;
    }
}

// ---------------------------------------------------------------------------------------
// JSON

struct JCtx {
    map: bool,
    count: usize,
}

/// A JSON pull parser over a reader.
pub(crate) struct JsonPull<R> {
    b: Window<R>,
    pos: usize,
    stack: Vec<JCtx>,
    after_key: bool,
    done: bool,
}

impl<R: Read> JsonPull<R> {
    pub fn new(r: R) -> Self {
        JsonPull {
            b: Window::new(r),
            pos: 0,
            stack: Vec::new(),
            after_key: false,
            // Not started: the byte-order mark check comes with the first token.
            done: false,
        }
    }

    fn ws(&mut self) -> PResult<()> {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.byte(self.pos)? {
            self.pos += 1;
            // Whitespace is not a token: the window need not hold a long run of it.
            if self.pos.is_multiple_of(CHUNK) {
                self.b.release(self.pos);
            }
        }
        Ok(())
    }

    fn peek(&mut self) -> PResult<u8> {
        match self.b.byte(self.pos)? {
            Some(c) => Ok(c),
            None => perr(self.pos, "unexpected end of input (truncated JSON)"),
        }
    }

    fn expect(&mut self, c: u8) -> PResult<()> {
        let got = self.peek()?;
        if got != c {
            return perr(
                self.pos,
                format!("expected '{}', found '{}'", c as char, got.escape_ascii()),
            );
        }
        self.pos += 1;
        Ok(())
    }

    fn hex4(&mut self) -> PResult<u32> {
        let s = self.b.ahead(self.pos, 4)?;
        if s.len() < 4 {
            return perr(self.pos, "unexpected end of input in \\u escape");
        }
        // `from_str_radix` alone would take a sign ("+04a").
        let hex = s.iter().all(u8::is_ascii_hexdigit);
        let s = std::str::from_utf8(s).ok().filter(|_| hex);
        let v = s.and_then(|s| u32::from_str_radix(s, 16).ok());
        match v {
            Some(v) => {
                self.pos += 4;
                Ok(v)
            }
            None => perr(self.pos, "bad \\u escape"),
        }
    }

    fn string(&mut self) -> PResult<String> {
        let at = self.pos;
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let start = self.pos;
            while let Some(c) = self.b.byte(self.pos)? {
                if matches!(c, b'"' | b'\\') {
                    break;
                }
                if c < 0x20 {
                    return perr(self.pos, "control character in string");
                }
                self.pos += 1;
                // The window holds the string's bytes until they are copied: a giant
                // string is refused as it is read, not once it is whole.
                if self.pos - start + out.len() > VALUE_BYTES {
                    return too_long(at);
                }
            }
            // A run between a quote or backslash and the next is valid UTF-8 on its own
            // in a valid string (no multi-byte character holds an ASCII byte), so the
            // first bad byte is placed exactly.
            let run = self.b.slice(start, self.pos);
            let bad = std::str::from_utf8(run).err();
            out.extend_from_slice(run);
            if let Some(e) = bad {
                // Unless a character is cut by the end of the file: the file is truncated,
                // which the quote looked for next reports.
                if e.error_len().is_some() || self.b.byte(self.pos)?.is_some() {
                    return perr(start + e.valid_up_to(), "string is not valid UTF-8");
                }
            }
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    break;
                }
                _ => {
                    self.pos += 1;
                    let e = self.peek()?;
                    self.pos += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            // A high surrogate pairs only with a low one that follows; an
                            // escape after it that is not one is read on its own.
                            if (0xD800..0xDC00).contains(&cp)
                                && self.b.ahead(self.pos, 2)? == b"\\u"
                            {
                                let save = self.pos;
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                } else {
                                    self.pos = save;
                                }
                            }
                            let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return perr(self.pos - 1, "bad escape in string"),
                    }
                }
            }
        }
        // Every raw run was checked as it was copied and escapes add whole characters.
        String::from_utf8(out).or_else(|_| perr(at, "string is not valid UTF-8"))
    }

    fn number(&mut self) -> PResult<Value> {
        let start = self.pos;
        let mut float = false;
        while let Some(c) = self.b.byte(self.pos)? {
            match c {
                b'0'..=b'9' | b'-' | b'+' => {}
                b'.' | b'e' | b'E' => float = true,
                _ => break,
            }
            self.pos += 1;
            // No number needs more (an f64 is exact to 17 digits); the text would be
            // held whole, and quoted in the error.
            if self.pos - start > MAX_NUMBER {
                return perr(
                    start,
                    format!("a number longer than {MAX_NUMBER} characters"),
                );
            }
        }
        let text = std::str::from_utf8(self.b.slice(start, self.pos)).unwrap_or("");
        if !float {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::Number(i.into()));
            }
            if let Ok(u) = text.parse::<u64>() {
                return Ok(Value::Number(u.into()));
            }
        }
        match text.parse::<f64>() {
            // A finite literal beyond the float range is refused, not turned into null.
            Ok(f) if f.is_infinite() => perr(
                start,
                format!("number '{text}' is out of the range of a 64-bit float"),
            ),
            Ok(f) => Ok(Number::from_f64(f).map_or(Value::Null, Value::Number)),
            Err(_) => perr(start, format!("bad number '{text}'")),
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> PResult<Value> {
        let got = self.b.ahead(self.pos, word.len())?;
        if got == word {
            self.pos += word.len();
            Ok(v)
        } else if got.len() < word.len() && word.starts_with(got) {
            perr(
                self.pos + got.len(),
                "unexpected end of input (truncated JSON)",
            )
        } else {
            perr(self.pos, "invalid literal")
        }
    }

    fn value(&mut self) -> PResult<Tok> {
        self.ws()?;
        match self.peek()? {
            b'{' | b'[' if self.stack.len() >= MAX_NESTING => too_deep(self.pos),
            b'{' => {
                self.pos += 1;
                self.stack.push(JCtx {
                    map: true,
                    count: 0,
                });
                Ok(Tok::BeginMap)
            }
            b'[' => {
                self.pos += 1;
                self.stack.push(JCtx {
                    map: false,
                    count: 0,
                });
                Ok(Tok::BeginArr)
            }
            b'"' => Ok(Tok::Scalar(Value::String(self.string()?))),
            b't' => Ok(Tok::Scalar(self.literal(b"true", Value::Bool(true))?)),
            b'f' => Ok(Tok::Scalar(self.literal(b"false", Value::Bool(false))?)),
            b'n' => Ok(Tok::Scalar(self.literal(b"null", Value::Null)?)),
            b'N' => Ok(Tok::Scalar(self.literal(b"NaN", Value::Null)?)),
            b'-' | b'0'..=b'9' => Ok(Tok::Scalar(self.number()?)),
            c => perr(self.pos, format!("unexpected '{}'", c.escape_ascii())),
        }
    }
}

impl<R: Read> Pull for JsonPull<R> {
    fn offset(&self) -> usize {
        self.pos
    }

    fn next_tok(&mut self) -> PResult<Tok> {
        self.b.release(self.pos);
        self.ws()?;
        let Some(top) = self.stack.last_mut() else {
            if self.done {
                if self.b.byte(self.pos)?.is_some() {
                    return perr(self.pos, "trailing data after the JSON document");
                }
                return Ok(Tok::Eof);
            }
            self.done = true;
            // A UTF-8 byte-order mark is tolerated.
            if self.pos == 0 && self.b.ahead(0, 3)? == [0xEF, 0xBB, 0xBF] {
                self.pos = 3;
            }
            return self.value();
        };
        if top.map {
            if self.after_key {
                self.after_key = false;
                return self.value();
            }
            if self.b.byte(self.pos)? == Some(b'}') {
                self.pos += 1;
                self.stack.pop();
                return Ok(Tok::EndMap);
            }
            if top.count > 0 {
                self.expect(b',')?;
                self.ws()?;
            }
            if let Some(t) = self.stack.last_mut() {
                t.count += 1;
            }
            let k = self.string()?;
            self.ws()?;
            self.expect(b':')?;
            self.after_key = true;
            Ok(Tok::Key(k))
        } else {
            if self.b.byte(self.pos)? == Some(b']') {
                self.pos += 1;
                self.stack.pop();
                return Ok(Tok::EndArr);
            }
            let count = top.count;
            top.count += 1;
            if count > 0 {
                self.expect(b',')?;
            }
            self.value()
        }
    }
}

// ---------------------------------------------------------------------------------------
// MessagePack

struct MCtx {
    map: bool,
    /// Items left (a map of n pairs counts 2n).
    left: usize,
}

/// A MessagePack pull parser over a reader.
pub(crate) struct MsgpackPull<R> {
    b: Window<R>,
    pos: usize,
    stack: Vec<MCtx>,
    done: bool,
}

enum MItem {
    Arr(usize),
    /// A map, with its item count (keys and values: twice the pairs).
    Map(usize),
    Val(Value),
}

impl<R: Read> MsgpackPull<R> {
    pub fn new(r: R) -> Self {
        MsgpackPull {
            b: Window::new(r),
            pos: 0,
            stack: Vec::new(),
            done: false,
        }
    }

    /// The next `n` bytes (read in pieces, so a length field larger than the input costs
    /// no more than the input).
    fn take(&mut self, n: usize) -> PResult<&[u8]> {
        let start = self.pos;
        // A length field may say anything: the window would hold that much of the file.
        if n > VALUE_BYTES {
            return too_long(start);
        }
        match start.checked_add(n) {
            Some(end) if self.b.fill_to(end)? => {
                self.pos = end;
                Ok(self.b.slice(start, end))
            }
            _ => perr(start, "unexpected end of input (truncated MessagePack)"),
        }
    }

    /// A big-endian length field of `n` bytes (at most 4) as `usize`.
    fn len(&mut self, n: usize) -> PResult<usize> {
        let at = self.pos;
        let v = self.uint(n)?;
        usize::try_from(v).or_else(|_| perr(at, "MessagePack length does not fit in memory"))
    }

    fn uint(&mut self, n: usize) -> PResult<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |a, b| (a << 8) | u64::from(*b)))
    }

    fn str_of(&mut self, n: usize) -> PResult<Value> {
        let at = self.pos;
        let s = self.take(n)?;
        match std::str::from_utf8(s) {
            Ok(s) => Ok(Value::String(s.to_owned())),
            Err(e) => perr(at + e.valid_up_to(), "string is not valid UTF-8"),
        }
    }

    fn item(&mut self) -> PResult<MItem> {
        let at = self.pos;
        let c = self.take(1)?[0];
        let v = match c {
            0x00..=0x7f => Value::from(c),
            0x80..=0x8f => return Ok(MItem::Map(2 * (c & 0x0f) as usize)),
            0x90..=0x9f => return Ok(MItem::Arr((c & 0x0f) as usize)),
            0xa0..=0xbf => self.str_of((c & 0x1f) as usize)?,
            0xc0 => Value::Null,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            // Binary data, which Proton never writes as text: read as a string with its
            // bytes that are not UTF-8 replaced, as before D151, so that a file whose
            // binary value is never used still reads.
            0xc4..=0xc6 => {
                let n = self.len(1 << (c - 0xc4))?;
                Value::String(String::from_utf8_lossy(self.take(n)?).into_owned())
            }
            // Proton writes no extension types; read as null, a time given as one
            // would silently become no time.
            0xc7..=0xc9 | 0xd4..=0xd8 => {
                return perr(
                    at,
                    format!("MessagePack extension type (byte 0x{c:02x}) is not supported"),
                )
            }
            0xca => {
                let bits = self.uint(4)? as u32;
                Number::from_f64(f64::from(f32::from_bits(bits))).map_or(Value::Null, Value::Number)
            }
            0xcb => {
                let bits = self.uint(8)?;
                Number::from_f64(f64::from_bits(bits)).map_or(Value::Null, Value::Number)
            }
            0xcc..=0xcf => Value::from(self.uint(1 << (c - 0xcc))?),
            0xd0..=0xd3 => {
                let n = 1usize << (c - 0xd0);
                let u = self.uint(n)?;
                let shift = 64 - 8 * n as u32;
                Value::from(((u << shift) as i64) >> shift)
            }
            0xd9..=0xdb => {
                let n = self.len(1 << (c - 0xd9))?;
                self.str_of(n)?
            }
            0xdc | 0xdd => return Ok(MItem::Arr(self.len(if c == 0xdc { 2 } else { 4 })?)),
            0xde | 0xdf => {
                let n = self.len(if c == 0xde { 2 } else { 4 })?;
                let Some(items) = n.checked_mul(2) else {
                    return perr(at, "MessagePack map length does not fit in memory");
                };
                return Ok(MItem::Map(items));
            }
            0xe0..=0xff => Value::from(c as i8),
            0xc1 => return perr(at, "invalid MessagePack byte 0xc1"),
        };
        Ok(MItem::Val(v))
    }

    fn open(&mut self, it: MItem) -> PResult<Tok> {
        if !matches!(it, MItem::Val(_)) && self.stack.len() >= MAX_NESTING {
            return too_deep(self.pos);
        }
        Ok(match it {
            MItem::Arr(n) => {
                self.stack.push(MCtx {
                    map: false,
                    left: n,
                });
                Tok::BeginArr
            }
            MItem::Map(n) => {
                self.stack.push(MCtx { map: true, left: n });
                Tok::BeginMap
            }
            MItem::Val(v) => Tok::Scalar(v),
        })
    }
}

impl<R: Read> Pull for MsgpackPull<R> {
    fn offset(&self) -> usize {
        self.pos
    }

    fn next_tok(&mut self) -> PResult<Tok> {
        self.b.release(self.pos);
        let Some(top) = self.stack.last_mut() else {
            if self.done {
                if self.b.byte(self.pos)?.is_some() {
                    return perr(self.pos, "trailing data after the MessagePack document");
                }
                return Ok(Tok::Eof);
            }
            self.done = true;
            let it = self.item()?;
            return self.open(it);
        };
        if top.left == 0 {
            let map = top.map;
            self.stack.pop();
            return Ok(if map { Tok::EndMap } else { Tok::EndArr });
        }
        let key_pos = top.map && top.left % 2 == 0;
        top.left -= 1;
        let at = self.pos;
        let it = self.item()?;
        if key_pos {
            return match it {
                MItem::Val(Value::String(s)) => Ok(Tok::Key(s)),
                MItem::Val(v) => Ok(Tok::Key(v.to_string())),
                _ => perr(at, "map key is an array or a map"),
            };
        }
        self.open(it)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &mut dyn Pull) -> PResult<Value> {
        let t = p.next_tok()?;
        let v = read_value(p, t)?;
        assert_eq!(p.next_tok()?, Tok::Eof);
        Ok(v)
    }

    #[test]
    fn json_roundtrip() {
        let text = r#" {"a": [1, -2, 18446744073709551615, 1.5e3, "x\"\u00e9\ud83d\ude00", null, true], "b": {}} "#;
        let v = all(&mut JsonPull::new(text.as_bytes())).unwrap();
        let want: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v, want);
    }

    #[test]
    fn json_errors_have_offsets() {
        let e = all(&mut JsonPull::new(&b"[1, 2"[..])).unwrap_err();
        assert_eq!(e.offset, 5);
        let e = all(&mut JsonPull::new(&b"[1,, 2]"[..])).unwrap_err();
        assert_eq!(e.offset, 3);
        let e = all(&mut JsonPull::new(&b"[1] x"[..])).unwrap_err();
        assert_eq!(e.offset, 4);
    }

    /// Bytes that are not UTF-8 in a string are refused where they lie, in both formats
    /// (they were replaced by U+FFFD without a word); escapes and valid multi-byte
    /// characters around them do not move the place.
    #[test]
    fn strings_that_are_not_utf8_are_refused_at_the_bad_byte() {
        let mut text = b"[\"a\\n\xc3\xa9".to_vec();
        text.extend_from_slice(b"\xff\"]");
        let e = all(&mut JsonPull::new(&text[..])).unwrap_err();
        assert_eq!(
            (e.offset, e.message.as_str()),
            (7, "string is not valid UTF-8")
        );
        // A multi-byte character cut by an escape.
        let e = all(&mut JsonPull::new(&b"[\"x\xc3\\u0041\"]"[..])).unwrap_err();
        assert_eq!(e.offset, 3);
        // Split across reads, the place is the same.
        let e = all(&mut JsonPull::new(Trickle(&text, 3))).unwrap_err();
        assert_eq!(e.offset, 7);
        // MessagePack: ["ab\xfe"] as fixarray, fixstr.
        let b = [0x91, 0xa3, b'a', b'b', 0xfe];
        let e = all(&mut MsgpackPull::new(&b[..])).unwrap_err();
        assert_eq!(
            (e.offset, e.message.as_str()),
            (4, "string is not valid UTF-8")
        );
        // A valid one still reads.
        let b = [0x91, 0xa2, 0xc3, 0xa9];
        assert_eq!(
            all(&mut MsgpackPull::new(&b[..])).unwrap(),
            serde_json::json!(["é"])
        );
        // Binary data is not text: read with its bad bytes replaced, as before.
        let b = [0x91, 0xc4, 0x02, b'a', 0xff];
        assert_eq!(
            all(&mut MsgpackPull::new(&b[..])).unwrap(),
            serde_json::json!(["a\u{fffd}"])
        );
        // A file cut inside a character is truncated, not badly encoded.
        let e = all(&mut JsonPull::new(&b"[\"ab\xc3"[..])).unwrap_err();
        assert!(e.message.contains("truncated"), "{}", e.message);
    }

    #[test]
    fn msgpack_values() {
        // {"a": [1, -1, 300, 1.5], 7: nil}
        let b = [
            0x82, 0xa1, b'a', 0x94, 0x01, 0xff, 0xcd, 0x01, 0x2c, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0,
            0, 0x07, 0xc0,
        ];
        let v = all(&mut MsgpackPull::new(&b[..])).unwrap();
        assert_eq!(v, serde_json::json!({"a": [1, -1, 300, 1.5], "7": null}));
        let e = all(&mut MsgpackPull::new(&b[..5])).unwrap_err();
        assert_eq!(e.offset, 5);
    }

    /// Hands out at most `n` bytes per read, to put token boundaries across reads.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(out.len()).min(self.1);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn tokens_split_across_reads_parse_the_same() {
        let text = r#"{"name": "a\u00e9\ud83d\ude00b", "v": [true, false, null, -12.5e-3, 18446744073709551615], "k": {}}"#;
        let want = all(&mut JsonPull::new(text.as_bytes())).unwrap();
        for n in 1..5 {
            let got = all(&mut JsonPull::new(Trickle(text.as_bytes(), n))).unwrap();
            assert_eq!(got, want, "{n} bytes a read");
        }
        let b = [
            0x82, 0xa1, b'a', 0x92, 0xcd, 0x01, 0x2c, 0xa3, b'x', b'y', b'z', 0x07, 0xc3,
        ];
        let want = all(&mut MsgpackPull::new(&b[..])).unwrap();
        assert_eq!(want, serde_json::json!({"a": [300, "xyz"], "7": true}));
        for n in 1..4 {
            assert_eq!(all(&mut MsgpackPull::new(Trickle(&b, n))).unwrap(), want);
        }
        // A truncated literal at the end of the input still names where the input ended.
        let e = all(&mut JsonPull::new(Trickle(b"[tru", 1))).unwrap_err();
        assert_eq!((e.offset, e.message.contains("truncated")), (4, true));
    }

    /// An endless-looking JSON array `[0,1,2,...]` of `n` numbers, made as it is read.
    struct Numbers {
        next: u64,
        n: u64,
        pending: Vec<u8>,
    }

    impl Read for Numbers {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            while self.pending.len() < out.len() && self.next <= self.n {
                let piece = match self.next {
                    0 => "[0".to_string(),
                    i if i == self.n => "]".to_string(),
                    i => format!(",{i}"),
                };
                self.pending.extend_from_slice(piece.as_bytes());
                self.next += 1;
            }
            let k = self.pending.len().min(out.len());
            out[..k].copy_from_slice(&self.pending[..k]);
            self.pending.drain(..k);
            Ok(k)
        }
    }

    #[test]
    fn the_window_holds_a_token_not_the_input() {
        // About 7 MB of input; the window must stay near its read size.
        let mut p = JsonPull::new(Numbers {
            next: 0,
            n: 1_000_000,
            pending: Vec::new(),
        });
        let mut count = 0u64;
        let mut most = 0usize;
        loop {
            match p.next_tok().unwrap() {
                Tok::Eof => break,
                Tok::Scalar(_) => count += 1,
                _ => {}
            }
            most = most.max(p.b.buf.len());
        }
        assert_eq!(count, 1_000_000);
        assert!(p.offset() > 6_000_000, "read {} bytes", p.offset());
        assert!(most <= 3 * CHUNK, "the window grew to {most} bytes");
    }

    #[test]
    fn a_high_surrogate_without_its_pair_keeps_the_escape_after_it() {
        let v = all(&mut JsonPull::new(&br#""x\ud83d\u0041y""#[..])).unwrap();
        assert_eq!(v, Value::String("x\u{FFFD}Ay".into()));
        // A signed number is not four hex digits.
        let e = all(&mut JsonPull::new(&br#""p\u+04aq""#[..])).unwrap_err();
        assert!(e.message.contains("\\u escape"), "{}", e.message);
    }

    #[test]
    fn nesting_past_the_limit_is_refused_by_both_parsers() {
        let within = "[".repeat(MAX_NESTING) + &"]".repeat(MAX_NESTING);
        let mut p = JsonPull::new(within.as_bytes());
        let t = p.next_tok().unwrap();
        skip_value(&mut p, t).unwrap();
        let past = "[".repeat(MAX_NESTING + 1);
        let mut p = JsonPull::new(past.as_bytes());
        let t = p.next_tok().unwrap();
        let e = skip_value(&mut p, t).unwrap_err();
        assert_eq!(e.offset, MAX_NESTING);
        assert!(e.message.contains("levels deep"), "{}", e.message);
        let past = vec![0x91u8; MAX_NESTING + 1];
        let mut p = MsgpackPull::new(&past[..]);
        let t = p.next_tok().unwrap();
        let e = skip_value(&mut p, t).unwrap_err();
        assert!(e.message.contains("levels deep"), "{}", e.message);
    }

    #[test]
    fn msgpack_extension_values_are_refused_not_read_as_null() {
        // {"time (ns)": timestamp ext -1}
        let b = [
            0x81, 0xa9, b't', b'i', b'm', b'e', b' ', b'(', b'n', b's', b')', 0xd6, 0xff, 0, 0, 0,
            1,
        ];
        let e = all(&mut MsgpackPull::new(&b[..])).unwrap_err();
        assert_eq!(e.offset, 11);
        assert!(e.message.contains("extension"), "{}", e.message);
        let b = [0x91, 0xc7, 0x01, 0x05, 0x00];
        assert!(all(&mut MsgpackPull::new(&b[..])).is_err());
    }

    #[test]
    fn long_numbers_are_refused_and_long_whitespace_is_not_held() {
        let mut text = b"[1".to_vec();
        text.resize(2 + MAX_NUMBER, b'0');
        text.push(b']');
        let e = all(&mut JsonPull::new(&text[..])).unwrap_err();
        assert_eq!(e.offset, 1);
        assert!(e.message.contains("longer than 4096"), "{}", e.message);
        assert!(e.message.len() < 100, "{}", e.message);
        let mut text = b"[1.".to_vec();
        text.resize(1 + MAX_NUMBER, b'0');
        text.push(b']');
        assert!(all(&mut JsonPull::new(&text[..])).is_ok());
        // 8 MiB of spaces between two elements: read, the window stays small.
        let mut text = b"[1,".to_vec();
        text.resize(text.len() + (8 << 20), b' ');
        text.extend(b"2]");
        let mut p = JsonPull::new(&text[..]);
        assert_eq!(p.next_tok().unwrap(), Tok::BeginArr);
        assert_eq!(p.next_tok().unwrap(), Tok::Scalar(1.into()));
        assert_eq!(p.next_tok().unwrap(), Tok::Scalar(2.into()));
        assert!(p.b.buf.len() <= 4 * CHUNK, "{}", p.b.buf.len());
    }

    #[test]
    fn a_string_past_the_value_limit_is_refused_as_it_is_read() {
        // JSON: the string is refused where it starts; a string at the limit is read.
        let mut text = b"[\"".to_vec();
        text.resize(2 + VALUE_BYTES + 1, b's');
        text.extend(b"\"]");
        let e = all(&mut JsonPull::new(&text[..])).unwrap_err();
        assert_eq!(e.offset, 1);
        assert!(e.message.contains("larger than 16 MiB"), "{}", e.message);
        let mut text = b"[\"".to_vec();
        text.resize(2 + VALUE_BYTES, b's');
        text.extend(b"\"]");
        assert!(all(&mut JsonPull::new(&text[..])).is_ok());
        // MessagePack: a str32 whose length says 4 GiB is refused before it is read.
        let b = [0x91, 0xdb, 0xff, 0xff, 0xff, 0xff, b'a', b'b'];
        let e = all(&mut MsgpackPull::new(&b[..])).unwrap_err();
        assert_eq!(e.offset, 6);
        assert!(e.message.contains("larger than 16 MiB"), "{}", e.message);
    }

    #[test]
    fn a_value_read_whole_is_refused_past_its_byte_limit() {
        let text = br#"{"a": [1, 2, 3, 4, 5, 6, 7, 8, 9], "b": 1}"#;
        let mut p = JsonPull::new(&text[..]);
        let t = p.next_tok().unwrap();
        let e = read_within(&mut p, t, 12, "the thing").unwrap_err();
        assert!(
            e.message.contains("the thing is larger than"),
            "{}",
            e.message
        );
        let mut p = JsonPull::new(&text[..]);
        let t = p.next_tok().unwrap();
        assert!(read_within(&mut p, t, text.len(), "the thing").is_ok());
    }
}
