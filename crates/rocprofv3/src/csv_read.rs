//! A CSV record reader with bounded memory, physical line numbers and resynchronisation.
//!
//! It splits records the way the `csv` crate does with its default settings (comma,
//! double quote, doubled quotes as escapes, a quote only opens a quoted field at the start
//! of a field, text after a closing quote is kept literally), with three differences that
//! matter for hostile input:
//!
//! * a record may not grow beyond [`MAX_RECORD_BYTES`]: an unterminated quote near the
//!   start of a large file makes one bad record of that size, not a buffer of the file;
//! * every record knows the physical lines it spans (`\n`-terminated; a `\r` before the
//!   `\n` is dropped), so a caller can count lost lines exactly;
//! * after a bad record that spans several lines, [`CsvReader::resync`] drops only the
//!   record's first line and makes the following lines be read again as records.
//!
//! Blank lines between records are skipped (as the `csv` crate does); a UTF-8 byte-order
//! mark at the start of the file is skipped.

use std::io::Read;

use csv::ByteRecord;

/// The largest record accepted, in bytes (1 MiB). A longer record is reported as
/// [`Problem::TooLong`] after reading that many bytes of it.
pub(crate) const MAX_RECORD_BYTES: usize = 1 << 20;

/// How much is read from the input at a time.
const CHUNK: usize = 1 << 16;

/// Bytes that [`CsvReader::resync`] may make be read again, over the whole file. Each
/// resynchronisation reads a bad record's lines after its first again, up to a record's
/// limit: lines that each leave a quote open would make every line cost the rest of the
/// file (or 1 MiB). Past this, a bad record's lines are all dropped with it.
pub(crate) const RESYNC_BYTES: u64 = 64 << 20;

/// Why a record could not be split into fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Problem {
    /// The file ends inside a quoted field.
    Unterminated,
    /// The record is longer than [`MAX_RECORD_BYTES`].
    TooLong,
}

impl Problem {
    /// A short description for messages.
    pub fn message(self) -> String {
        match self {
            Problem::Unterminated => {
                "unterminated quoted field: the file ends inside quotes".to_string()
            }
            Problem::TooLong => format!(
                "record longer than {MAX_RECORD_BYTES} bytes (1 MiB), the limit of one record \
                 (an unterminated quote?)"
            ),
        }
    }
}

/// Where a record was and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawRecord {
    /// The 1-based physical line where the record starts.
    pub line: u64,
    /// How many physical lines it spans (at least 1; for a too-long record, the lines read
    /// before the limit, the partial last one included).
    pub lines: u64,
    /// Set when the fields are not usable.
    pub problem: Option<Problem>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    StartField,
    Unquoted,
    Quoted,
    /// Just after a `"` inside a quoted field: `""` is a quote, anything else ends quoting.
    QuoteInQuoted,
}

/// Reads records from `R` one at a time.
pub(crate) struct CsvReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes of `buf`.
    pos: usize,
    eof: bool,
    started: bool,
    /// Line number of the byte at `pos`.
    line: u64,
    /// Drop bytes up to and including the next `\n` before the next record (the rest of a
    /// too-long line).
    discard: bool,
    /// Where the previous record's second line starts, for [`CsvReader::resync`].
    resync_at: Option<(usize, u64)>,
    /// Bytes read again by resynchronisations so far ([`RESYNC_BYTES`]).
    reread: u64,
    field: Vec<u8>,
    /// Whether one-line records are split straight from the buffer (off only in tests,
    /// which compare both ways).
    fast: bool,
}

impl<R: Read> CsvReader<R> {
    pub fn new(inner: R) -> Self {
        CsvReader {
            inner,
            buf: Vec::with_capacity(CHUNK),
            pos: 0,
            eof: false,
            started: false,
            line: 1,
            discard: false,
            resync_at: None,
            reread: 0,
            field: Vec::new(),
            fast: true,
        }
    }

    /// The line number where reading continues.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Reads up to [`CHUNK`] more bytes into `buf`; false at the end of the input.
    fn fill(&mut self) -> std::io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let old = self.buf.len();
        self.buf.resize(old + CHUNK, 0);
        let n = loop {
            match self.inner.read(&mut self.buf[old..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(old + n);
        if n == 0 {
            self.eof = true;
        }
        if !self.started && self.buf.len() >= 3 || self.eof {
            if !self.started && self.buf.starts_with(b"\xef\xbb\xbf") {
                self.pos = 3;
            }
            self.started = true;
        }
        Ok(n > 0)
    }

    /// Drops consumed bytes from the front of the buffer.
    fn compact(&mut self) {
        if self.pos >= CHUNK || (self.pos > 0 && self.pos == self.buf.len()) {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }

    /// Makes the bytes of the input after the previous record's first line be read again
    /// as records (call it after a bad record that spans several lines). False when that
    /// would pass [`RESYNC_BYTES`]: the record's lines are then all dropped with it.
    #[must_use]
    pub fn resync(&mut self) -> bool {
        let Some((at, line)) = self.resync_at.take() else {
            return false;
        };
        let again = self.pos.saturating_sub(at) as u64;
        if self.reread.saturating_add(again) > RESYNC_BYTES {
            return false;
        }
        self.reread += again;
        self.pos = at;
        self.line = line;
        self.discard = false;
        true
    }

    /// The next record's fields into `rec`; `None` at the end of the input.
    pub fn next_record(&mut self, rec: &mut ByteRecord) -> std::io::Result<Option<RawRecord>> {
        rec.clear();
        self.resync_at = None;
        self.compact();
        while !self.started {
            if !self.fill()? {
                break;
            }
        }
        if self.discard {
            loop {
                if let Some(n) = self.buf[self.pos..].iter().position(|b| *b == b'\n') {
                    self.pos += n + 1;
                    self.line += 1;
                    break;
                }
                self.pos = self.buf.len();
                self.compact();
                if !self.fill()? {
                    break;
                }
            }
            self.discard = false;
            self.compact();
        }
        // Blank lines between records.
        loop {
            if self.pos == self.buf.len() && !self.fill()? {
                return Ok(None);
            }
            match self.buf[self.pos] {
                b'\n' => {
                    self.pos += 1;
                    self.line += 1;
                }
                b'\r' => {
                    if self.pos + 1 == self.buf.len() && !self.eof {
                        self.fill()?;
                    }
                    match self.buf.get(self.pos + 1) {
                        Some(b'\n') => {
                            self.pos += 2;
                            self.line += 1;
                        }
                        None => {
                            self.pos += 1;
                        }
                        Some(_) => break,
                    }
                }
                _ => break,
            }
            self.compact();
        }

        if self.fast {
            if let Some(raw) = self.one_line_record(rec) {
                return Ok(Some(raw));
            }
            rec.clear();
        }
        let start = self.pos;
        let first_line = self.line;
        let mut i = start;
        let mut state = State::StartField;
        let mut newlines = 0u64;
        let mut second_line: Option<usize> = None;
        // Whether the last byte of `field` is a `\r` outside quotes (dropped before `\n`).
        let mut cr_last = false;
        self.field.clear();
        loop {
            if i == self.buf.len() {
                if i - start > MAX_RECORD_BYTES {
                    return Ok(Some(self.too_long(i, first_line, newlines, second_line)));
                }
                if !self.fill()? {
                    // End of input.
                    if i == start {
                        return Ok(None);
                    }
                    self.pos = i;
                    self.line = first_line + newlines;
                    if let Some(s) = second_line {
                        self.resync_at = Some((s, first_line + 1));
                    }
                    // A file that ends with a newline has no line after it.
                    let lines = if newlines > 0 && self.buf[i - 1] == b'\n' {
                        newlines
                    } else {
                        newlines + 1
                    };
                    if state == State::Quoted {
                        return Ok(Some(RawRecord {
                            line: first_line,
                            lines,
                            problem: Some(Problem::Unterminated),
                        }));
                    }
                    if cr_last {
                        self.field.pop();
                    }
                    rec.push_field(&self.field);
                    return Ok(Some(RawRecord {
                        line: first_line,
                        lines,
                        problem: None,
                    }));
                }
                continue;
            }
            if i - start > MAX_RECORD_BYTES {
                return Ok(Some(self.too_long(i, first_line, newlines, second_line)));
            }
            // Runs of ordinary bytes are copied at once (never past the record limit).
            let limit = self.buf.len().min(start + MAX_RECORD_BYTES + 1);
            let seg = &self.buf[i..limit];
            // A field that does not start with a quote is an unquoted one from its first
            // byte: scanned with the rest.
            if state == State::StartField && !matches!(seg[0], b'"' | b',' | b'\n') {
                state = State::Unquoted;
            }
            let n = match state {
                State::Unquoted => seg
                    .iter()
                    .position(|b| *b == b',' || *b == b'\n')
                    .unwrap_or(seg.len()),
                State::Quoted => seg
                    .iter()
                    .position(|b| *b == b'"' || *b == b'\n')
                    .unwrap_or(seg.len()),
                _ => 0,
            };
            if n > 0 {
                self.field.extend_from_slice(&seg[..n]);
                if state == State::Unquoted {
                    cr_last = seg[n - 1] == b'\r';
                }
                i += n;
                continue;
            }
            let b = self.buf[i];
            i += 1;
            match state {
                State::StartField | State::Unquoted => match b {
                    b'"' if state == State::StartField => state = State::Quoted,
                    b',' => {
                        rec.push_field(&self.field);
                        self.field.clear();
                        cr_last = false;
                        state = State::StartField;
                    }
                    b'\n' => {
                        if cr_last {
                            self.field.pop();
                        }
                        rec.push_field(&self.field);
                        return Ok(Some(self.end(i, first_line, newlines, second_line)));
                    }
                    _ => {
                        self.field.push(b);
                        cr_last = b == b'\r';
                        state = State::Unquoted;
                    }
                },
                State::Quoted => match b {
                    b'"' => state = State::QuoteInQuoted,
                    b'\n' => {
                        self.field.push(b);
                        newlines += 1;
                        second_line.get_or_insert(i);
                    }
                    _ => self.field.push(b),
                },
                State::QuoteInQuoted => match b {
                    b'"' => {
                        self.field.push(b'"');
                        state = State::Quoted;
                    }
                    b',' => {
                        rec.push_field(&self.field);
                        self.field.clear();
                        cr_last = false;
                        state = State::StartField;
                    }
                    b'\n' => {
                        rec.push_field(&self.field);
                        return Ok(Some(self.end(i, first_line, newlines, second_line)));
                    }
                    _ => {
                        self.field.push(b);
                        cr_last = b == b'\r';
                        state = State::Unquoted;
                    }
                },
            }
        }
    }

    /// The common record, split without copying it first: one whole line in the buffer,
    /// shorter than [`MAX_RECORD_BYTES`], with no `\r`, whose quoted fields hold no quote
    /// or line end and are followed by a comma or the line end. `None` (with `rec` partly
    /// filled) for any other record, which the byte-by-byte reader then takes.
    fn one_line_record(&mut self, rec: &mut ByteRecord) -> Option<RawRecord> {
        let start = self.pos;
        let rest = &self.buf[start..];
        let len = rest.iter().position(|b| *b == b'\n')?;
        let line = &rest[..len];
        if len >= MAX_RECORD_BYTES || line.contains(&b'\r') {
            return None;
        }
        let mut at = 0;
        loop {
            let end = if line.get(at) == Some(&b'"') {
                let close = at + 1 + line[at + 1..].iter().position(|b| *b == b'"')?;
                rec.push_field(&line[at + 1..close]);
                close + 1
            } else {
                let end = line[at..]
                    .iter()
                    .position(|b| *b == b',')
                    .map_or(len, |n| at + n);
                rec.push_field(&line[at..end]);
                end
            };
            match line.get(end) {
                None => break,
                Some(b',') => at = end + 1,
                Some(_) => return None,
            }
        }
        let first_line = self.line;
        Some(self.end(start + len + 1, first_line, 0, None))
    }

    /// A record that ended with the `\n` before `i`.
    fn end(
        &mut self,
        i: usize,
        first_line: u64,
        newlines: u64,
        second_line: Option<usize>,
    ) -> RawRecord {
        self.pos = i;
        self.line = first_line + newlines + 1;
        if let Some(s) = second_line {
            self.resync_at = Some((s, first_line + 1));
        }
        RawRecord {
            line: first_line,
            lines: newlines + 1,
            problem: None,
        }
    }

    /// A record cut at the size limit: the rest of its current line is dropped unless the
    /// caller resynchronises.
    fn too_long(
        &mut self,
        i: usize,
        first_line: u64,
        newlines: u64,
        second_line: Option<usize>,
    ) -> RawRecord {
        self.pos = i;
        self.line = first_line + newlines;
        self.discard = true;
        if let Some(s) = second_line {
            self.resync_at = Some((s, first_line + 1));
        }
        RawRecord {
            line: first_line,
            lines: newlines + 1,
            problem: Some(Problem::TooLong),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &[u8], resync_bad: bool) -> Vec<(u64, u64, Option<Problem>, Vec<String>)> {
        let mut r = CsvReader::new(text);
        let mut rec = ByteRecord::new();
        let mut out = Vec::new();
        while let Some(raw) = r.next_record(&mut rec).unwrap() {
            let fields: Vec<String> = rec
                .iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect();
            let bad = raw.problem.is_some() || fields.len() != 3;
            out.push((raw.line, raw.lines, raw.problem, fields));
            if bad && resync_bad && raw.lines > 1 {
                assert!(r.resync(), "within the budget");
            }
        }
        out
    }

    fn f(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Every record of `text`, with the one-line path on or off.
    fn records(text: &[u8], fast: bool) -> Vec<(RawRecord, Vec<Vec<u8>>)> {
        let mut r = CsvReader::new(text);
        r.fast = fast;
        let mut rec = ByteRecord::new();
        let mut out = Vec::new();
        while let Some(raw) = r.next_record(&mut rec).unwrap() {
            out.push((raw, rec.iter().map(<[u8]>::to_vec).collect()));
            if raw.problem.is_some() && raw.lines > 1 {
                assert!(r.resync(), "within the budget");
            }
        }
        out
    }

    /// The one-line path splits as the byte-by-byte reader does, on texts made of the
    /// bytes that matter (a small generator: no dependency, the same texts every run).
    #[test]
    fn one_line_records_split_as_byte_by_byte() {
        let alphabet = b"a1,\"\n\r ";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..3_000 {
            let len = (next() % 40) as usize;
            let text: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            assert_eq!(
                records(&text, true),
                records(&text, false),
                "{:?}",
                String::from_utf8_lossy(&text)
            );
        }
        // The rocprofv3 shapes, quoted and not.
        let text =
            b"\"Kind\",\"Agent_Id\"\n\"KERNEL_DISPATCH\",\"Agent 4\",1,,\"f(int, int)\"\n3,x\n";
        let fast = records(text, true);
        assert_eq!(fast, records(text, false));
        assert_eq!(fast[1].1[4], b"f(int, int)");
    }

    #[test]
    fn splits_like_the_csv_crate() {
        let text = b"\xef\xbb\xbfa,b,c\r\n\"x,1\",\"say \"\"hi\"\"\",\"two\nlines\"\n\n1,2,3";
        let got = all(text, false);
        assert_eq!(
            got,
            vec![
                (1, 1, None, f(&["a", "b", "c"])),
                (2, 2, None, f(&["x,1", "say \"hi\"", "two\nlines"])),
                (5, 1, None, f(&["1", "2", "3"])),
            ]
        );
        // Text after a closing quote is literal; a quote inside an unquoted field too.
        let got = all(b"\"a\"b,c\"d,e\r\n", false);
        assert_eq!(got, vec![(1, 1, None, f(&["ab", "c\"d", "e"]))]);
        // Empty fields and a trailing comma.
        let got = all(b",,\n", false);
        assert_eq!(got, vec![(1, 1, None, f(&["", "", ""]))]);
    }

    #[test]
    fn resynchronises_after_an_unterminated_quote() {
        let text = b"1,2,3\n\"4,5,6\n7,8,9\n10,\"11\",12\n";
        // Without resync the bad record swallows lines 2-4.
        let got = all(text, false);
        assert_eq!(got.len(), 2);
        assert_eq!((got[1].0, got[1].1), (2, 3));
        // With resync only line 2 is lost.
        let got = all(text, true);
        let lines: Vec<(u64, u64)> = got.iter().map(|g| (g.0, g.1)).collect();
        assert_eq!(lines, vec![(1, 1), (2, 3), (3, 1), (4, 1)]);
        assert_eq!(got[2].3, f(&["7", "8", "9"]));
        assert_eq!(got[3].3, f(&["10", "11", "12"]));
        // At the end of the file.
        let got = all(b"1,2,3\n\"4,5,6\n7,8,9", true);
        assert_eq!(got[1].2, Some(Problem::Unterminated));
        assert_eq!(got[2].3, f(&["7", "8", "9"]));
    }

    #[test]
    fn records_are_capped() {
        let mut text = b"1,2,3\n\"".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_RECORD_BYTES + 10));
        text.extend(b"\n4,5,6\n");
        let got = all(&text, true);
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].2, Some(Problem::TooLong));
        assert_eq!((got[2].0, got[2].3.clone()), (3, f(&["4", "5", "6"])));
        // Exactly at the limit (terminator excluded) is fine; one byte more is not.
        for (extra, ok) in [(0, true), (1, false)] {
            let mut text = b"1,2,".to_vec();
            text.extend(std::iter::repeat_n(b'x', MAX_RECORD_BYTES - 4 + extra));
            text.extend(b"\n4,5,6\n");
            let got = all(&text, true);
            assert_eq!(got[0].2.is_none(), ok, "{extra}");
            assert_eq!((got[1].0, got[1].3.clone()), (2, f(&["4", "5", "6"])));
        }
        // A long quoted record over many lines: dropped one line at a time.
        let mut text = b"\"".to_vec();
        for _ in 0..(MAX_RECORD_BYTES / 1000 + 5) {
            text.extend(std::iter::repeat_n(b'y', 999));
            text.push(b'\n');
        }
        let got = all(&text, true);
        assert_eq!(got[0].2, Some(Problem::TooLong));
        assert!(got[0].1 > 1000);
        assert_eq!(got[1].0, 2);
    }
}
