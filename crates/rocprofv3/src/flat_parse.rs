//! A parser of the plain JSON that rocprofv3 writes straight into a [`Flat`], tried before
//! serde_json's deserializer (which stays the reference): objects, arrays, strings (with
//! the escapes of the Basic Multilingual Plane outside surrogates), integers of up to 18
//! digits, numbers with a fraction or exponent whose digits make an integer of at most
//! 2^53 and whose power of ten is at most 22 (exact in `f64`, so both parsers agree),
//! `true`, `false` and `null`. Anything else (a surrogate escape, a longer number, `-0`,
//! a control character, text that is not UTF-8, nesting past 100, a value that may go
//! on past the bytes at hand) gives `None`, and the caller parses the value with
//! serde_json, which then also reports any error. Serde's visitor building the flat form
//! was about a third of a direct JSON read (D103).

use std::borrow::Cow;

use crate::json_node::{Flat, Num};

/// Deeper values go to serde_json, whose recursion limit (128) then speaks.
const MAX_DEPTH: usize = 100;

/// The value at the start of `bytes` (after whitespace) and the offset just past it, if
/// this parser takes it. `exhausted`: nothing follows `bytes` in the input; otherwise a
/// value that ends where `bytes` do is left to the caller (a number may go on).
pub(crate) fn parse(bytes: &[u8], exhausted: bool) -> Option<(usize, Flat<'_>)> {
    let mut p = Parser { b: bytes, at: 0 };
    p.space();
    let delimited = matches!(bytes.get(p.at), Some(b'{' | b'[' | b'"'));
    let v = p.value(0)?;
    // serde_json's stream refuses a number or word followed by anything but these.
    let ends = matches!(
        bytes.get(p.at),
        None | Some(b' ' | b'\n' | b'\t' | b'\r' | b'"' | b'[' | b']' | b'{' | b'}' | b',' | b':')
    );
    (ends || delimited).then_some(())?;
    (exhausted || p.at < bytes.len()).then_some((p.at, v))
}

struct Parser<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.at) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.b.get(self.at) == Some(&c)).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<Flat<'a>> {
        match *self.b.get(self.at)? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(Flat::Str),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.word(b"true", Flat::Bool(true)),
            b'f' => self.word(b"false", Flat::Bool(false)),
            b'n' => self.word(b"null", Flat::Null),
            _ => None,
        }
    }

    fn word(&mut self, w: &[u8], v: Flat<'a>) -> Option<Flat<'a>> {
        let end = self.at.checked_add(w.len())?;
        (self.b.get(self.at..end)? == w).then(|| {
            self.at = end;
            v
        })
    }

    fn object(&mut self, depth: usize) -> Option<Flat<'a>> {
        // Records have a dozen members or fewer: one allocation for most.
        let mut out = Vec::with_capacity(12);
        self.items(depth, b'}', |p| {
            if p.b.get(p.at) != Some(&b'"') {
                return None;
            }
            let key = p.string()?;
            p.space();
            p.eat(b':')?;
            p.space();
            out.push((key, p.value(depth)?));
            Some(())
        })?;
        Some(Flat::Object(out))
    }

    fn array(&mut self, depth: usize) -> Option<Flat<'a>> {
        let mut out = Vec::new();
        self.items(depth, b']', |p| {
            out.push(p.value(depth)?);
            Some(())
        })?;
        Some(Flat::Array(out))
    }

    /// The items of the object or array opening at the cursor, each read by `item`, up to
    /// `close`, separated by commas.
    fn items(
        &mut self,
        depth: usize,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.space();
        if self.eat(close).is_some() {
            return Some(());
        }
        loop {
            self.space();
            item(self)?;
            self.space();
            match *self.b.get(self.at)? {
                b',' => self.at += 1,
                c if c == close => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string without control characters: borrowed without escapes, else decoded.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.at += 1;
        let (first, closed) = self.run()?;
        if closed {
            return Some(Cow::Borrowed(first));
        }
        let mut out = String::with_capacity(first.len() + 16);
        out.push_str(first);
        loop {
            // At a backslash.
            let esc = *self.b.get(self.at + 1)?;
            self.at += 2;
            match esc {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => {
                    let hex = std::str::from_utf8(self.b.get(self.at..self.at + 4)?).ok()?;
                    if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                        return None;
                    }
                    // Surrogates (pairs or lone ones) go to serde_json.
                    out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
                    self.at += 4;
                }
                _ => return None,
            }
            let (more, closed) = self.run()?;
            out.push_str(more);
            if closed {
                return Some(Cow::Owned(out));
            }
        }
    }

    /// The text of a string from the cursor to its next quote or backslash, without
    /// control characters and in UTF-8, and whether a quote ended it (then consumed; a
    /// backslash stays under the cursor).
    fn run(&mut self) -> Option<(&'a str, bool)> {
        let b = self.b;
        let rest = b.get(self.at..)?;
        let len = memchr::memchr2(b'"', b'\\', rest)?;
        let raw = &rest[..len];
        if raw.iter().any(|&c| c < 0x20) {
            return None;
        }
        let text = std::str::from_utf8(raw).ok()?;
        self.at += len;
        let closed = b[self.at] == b'"';
        self.at += usize::from(closed);
        Some((text, closed))
    }

    /// A number as serde_json reads it: an integer unsigned when not negative (kept as
    /// `I` when it fits, as the visitor does) and signed when negative; with a fraction or
    /// exponent an `f64`, taken only when its digits make an integer of at most 2^53 and
    /// its power of ten is at most 22: one operation of exact operands, correctly rounded.
    fn number(&mut self) -> Option<Flat<'a>> {
        let negative = self.b[self.at] == b'-';
        let first = self.at + usize::from(negative);
        let digits = self.b.get(first..)?;
        let n = digits.iter().take_while(|c| c.is_ascii_digit()).count();
        // No digits, a leading zero before more digits, or too many for an i64.
        if n == 0 || n > 18 || (digits[0] == b'0' && n > 1) {
            return None;
        }
        let mut m: i64 = 0;
        for &c in &digits[..n] {
            m = m * 10 + i64::from(c - b'0');
        }
        let mut end = first + n;
        let mut scale = 0i32;
        let float = matches!(self.b.get(end), Some(b'.' | b'e' | b'E'));
        if !float {
            // `-0` is a float for serde_json.
            if negative && m == 0 {
                return None;
            }
            self.at = end;
            return Some(Flat::Number(Num::I(if negative { -m } else { m })));
        }
        if self.b.get(end) == Some(&b'.') {
            let frac = self.b.get(end + 1..)?;
            let k = frac.iter().take_while(|c| c.is_ascii_digit()).count();
            if k == 0 || n + k > 18 {
                return None;
            }
            for &c in &frac[..k] {
                m = m * 10 + i64::from(c - b'0');
            }
            scale -= i32::try_from(k).ok()?;
            end += 1 + k;
        }
        if let Some(b'e' | b'E') = self.b.get(end) {
            let mut at = end + 1;
            let sign = match self.b.get(at) {
                Some(b'-') => {
                    at += 1;
                    -1
                }
                Some(b'+') => {
                    at += 1;
                    1
                }
                _ => 1,
            };
            let exp = self.b.get(at..)?;
            let k = exp.iter().take_while(|c| c.is_ascii_digit()).count();
            if k == 0 || k > 3 {
                return None;
            }
            let e: i32 = std::str::from_utf8(&exp[..k]).ok()?.parse().ok()?;
            scale += sign * e;
            end = at + k;
        }
        // Digits within f64's integers and an exact power of ten: the quotient or product
        // is the correctly rounded value, whichever way serde_json is built to parse.
        if m > 1 << 53 || scale.unsigned_abs() > 22 {
            return None;
        }
        let p = POW10[scale.unsigned_abs() as usize];
        let mut f = m as f64;
        f = if scale < 0 { f / p } else { f * p };
        self.at = end;
        Some(Flat::Number(Num::F(if negative { -f } else { f })))
    }
}

/// The powers of ten exact in `f64`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A xorshift generator of indices below `n`, for the randomised tests.
    pub(crate) fn below(mut seed: u64) -> impl FnMut(usize) -> usize {
        move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        }
    }

    /// What serde_json's deserializer makes of `text`, as `parse_step` calls it.
    fn serde(text: &[u8]) -> Option<(usize, Flat<'_>)> {
        let mut values = serde_json::Deserializer::from_slice(text).into_iter::<Flat>();
        let v = values.next()?.ok()?;
        Some((values.byte_offset(), v))
    }

    /// Every value this parser takes is the one serde_json gives, with the same end;
    /// what it leaves, serde_json parses or refuses.
    #[test]
    fn takes_plain_json_as_serde_json_does_and_leaves_the_rest() {
        let taken: &[&[u8]] = &[
            br#"{"a":1,"b":-2,"c":"x","d":[1,2,{"e":null}],"f":true,"g":false} tail"#,
            b"  [ 0 , -1 ,123456789012345678, \"\xc2\xb5s\" ]x",
            b"{\"a\" : {\"b\" : [ ] , \"c\" : { } } , \"a\" : 2 }\n",
            b"\"plain\" ",
            b"-123456789012345678,",
            b"null]",
            b"[1.5, -2.25e3, 8192.0, 0.000123, 1E-2, -0.0, 12e+5] ",
            br#"{"a\"b": "x\\y\/z\n\t\u00b5\u6838 end"} "#,
        ];
        for text in taken {
            let fast = parse(text, false).unwrap_or_else(|| panic!("{text:?}"));
            assert_eq!(Some(fast.clone()), serde(text), "{text:?}");
            assert_eq!(parse(text, true), Some(fast));
        }
        let left: &[&[u8]] = &[
            br#""\ud83d\ude00""#,
            br#""\ud83d""#,
            br#""\x""#,
            br#""\u12g4""#,
            b"1.5e24 ",
            b"12345678901234567.5 ",
            b"1. ",
            b"1e ",
            b"-0 ",
            b"01 ",
            b"1234567890123456789 ",
            b"\"\x01\" ",
            b"\"\xff\" ",
            b"{\"a\":1,} ",
            b"[1 2] ",
            b"tru ",
            b"{\"a\" 1} ",
            b"[1, {\"a\": [2, 3]",
            b"{1:2} ",
            b"",
            b"- ",
            b"123abc",
            b"nullx",
        ];
        for text in left {
            assert!(parse(text, true).is_none(), "{text:?}");
        }
        // A value that ends where the bytes do is left unless nothing follows.
        assert!(parse(b"123", false).is_none() && parse(b"{}", false).is_none());
        assert_eq!(parse(b"123", true), Some((3, Flat::Number(Num::I(123)))));
        // Nesting past the limit goes to serde_json.
        let deep = format!(
            "{}{} ",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        assert!(parse(deep.as_bytes(), true).is_none());
        let ok = format!("{}{} ", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(ok.as_bytes(), true).is_some());
    }

    /// Random values of the tokens where the two parsers could part (numbers near the
    /// limits, escapes, nesting, whitespace): each one this parser takes is serde_json's.
    #[test]
    fn random_values_are_taken_as_serde_json_takes_them() {
        const TOKENS: &[&str] = &[
            "0",
            "-1",
            "7",
            "123456789012345678",
            "-123456789012345678",
            "9007199254740993.5",
            "9007199254740992e-22",
            "4.35",
            "0.1",
            "0.30000000000000004",
            "1e22",
            "1e23",
            "-2.5E-22",
            "123.456e7",
            "1.7976931348623157e308",
            "5e-324",
            "0.0",
            "-0.0",
            "3.14159265358979",
            "2.718281828459045",
            "1e-7",
            "100e-2",
            r#""""#,
            r#""plain""#,
            r#""a\"b""#,
            r#""\u00e9\u0041""#,
            r#""tab\there""#,
            r#""\\\/\b\f\n\r""#,
            r#""\u00b5_\u6838""#,
            "true",
            "false",
            "null",
        ];
        let mut next = below(0x2545_f491_4f6c_dd1d);
        fn value(next: &mut dyn FnMut(usize) -> usize, depth: usize, out: &mut String) {
            let spaces = [" ", "", "\n ", "\t"];
            match if depth > 3 { 2 } else { next(4) } {
                0 => {
                    out.push('[');
                    for i in 0..next(4) {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(spaces[next(4)]);
                        value(next, depth + 1, out);
                    }
                    out.push(']');
                }
                1 => {
                    out.push('{');
                    for i in 0..next(4) {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(&format!("\"k{}\":", next(3)));
                        out.push_str(spaces[next(4)]);
                        value(next, depth + 1, out);
                    }
                    out.push('}');
                }
                _ => out.push_str(TOKENS[next(TOKENS.len())]),
            }
        }
        let mut taken = 0;
        for _ in 0..20_000 {
            let mut text = String::new();
            value(&mut next, 0, &mut text);
            text.push(' ');
            if let Some(fast) = parse(text.as_bytes(), true) {
                taken += 1;
                assert_eq!(Some(fast), serde(text.as_bytes()), "{text}");
            }
        }
        assert!(taken > 10_000, "{taken}");
    }
}
