//! Byte-level mutations, deterministic from the [`Rng`]: generic ones for every format,
//! token-aware ones for text (numbers, lines, quotes, CSV fields, JSON values),
//! MessagePack markers and lengths, and SQLite page-aware ones (pages, header fields,
//! b-tree page headers, cell pointers).
//!
//! Mutators never panic, whatever the bytes: they are outside the harness's
//! `catch_unwind`, and a panic here would not be a reader bug.

use crate::rng::Rng;

/// Which family of format-aware mutations applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// rocprofv3 CSV.
    Csv,
    /// JSON (rocprofv3 JSON, hatchet JSON, chrome traces).
    Json,
    /// MessagePack (hatchet msgpack).
    Msgpack,
    /// A SQLite database file.
    Sqlite,
}

/// What a mutation may draw on besides the bytes themselves.
pub struct Ctx<'a> {
    /// Format family.
    pub flavor: Flavor,
    /// Tokens found in the seeds (keys, column names, ...).
    pub dict: &'a [Vec<u8>],
    /// Another seed's bytes, for splicing.
    pub splice: &'a [u8],
    /// Inputs are cut to this many bytes.
    pub max_len: usize,
}

/// Bytes worth writing one at a time.
const BYTES: &[u8] = &[
    0, 0xff, 0x7f, 0x80, 0x01, b'"', b',', b'\n', b'\r', b'{', b'}', b'[', b']', b':', b'0', b'1',
    b'9', b'-', b'+', b'.', b'e', b'E', b' ', b'\\', b'\t', b';', b'\'', b'#', 0xc3, 0xed, 0xc0,
    0xdd, 0xdf,
];

/// Numbers that break parsers: out of range for i64/u64/f64, negative, signed zero.
pub const NUMBERS: &[&[u8]] = &[
    b"99999999999999999999",
    b"-1",
    b"0",
    b"-0",
    b"1",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"9223372036854775807",
    b"9223372036854775808",
    b"18446744073709551615",
    b"18446744073709551616",
    b"4294967295",
    b"4294967296",
    b"2147483647",
    b"-2147483649",
    b"1e308",
    b"-1e308",
    b"1.7976931348623157e309",
    b"1E+400",
    b"1e-400",
    b"0.0000001",
    b"-0.5",
    b"123456789012345678901234567890",
    b"9007199254740993",
    b"NaN",
    b"inf",
    b"-inf",
    b"1.",
    b".5",
    b"0x10",
    b"00012",
    b"1_000",
];

/// Short strings worth inserting anywhere.
const TOKENS: &[&[u8]] = &[
    b"null",
    b"true",
    b"false",
    b"\"\"",
    b"[]",
    b"{}",
    b"[{}]",
    b"{\"\":null}",
    b"\\u0000",
    b"\\ud800",
    b"\\udc00\\ud800",
    b"\\",
    b"\"",
    b",",
    b",,",
    b"\n",
    b"\r\n",
    b"\r",
    b"\"\"\"",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\x00",
    b"\x00\x00\x00\x00",
    b"\xff\xff\xff\xff",
    b" ",
    b"\t",
    b"N/A",
    b"nan",
];

/// CSV field values.
const FIELDS: &[&[u8]] = &[
    b"",
    b"\"\"",
    b"\"a,b\"",
    b"\"a\nb\"",
    b"\"\"\"\"",
    b"\"unterminated",
    b"abc",
    b"N/A",
    b"  1",
    b"1 ",
    b"-",
    b"0x1f",
    b"\"0\"",
    b"[1,2]",
    b"{\"a\":1}",
    b"\xff",
];

/// JSON values to put in place of another.
const VALUES: &[&[u8]] = &[
    b"null",
    b"true",
    b"false",
    b"0",
    b"-1",
    b"99999999999999999999",
    b"-9223372036854775809",
    b"1e308",
    b"1.5",
    b"\"\"",
    b"\"x\"",
    b"\"-1\"",
    b"\"\\u0000\"",
    b"\"\\ud800\"",
    b"[]",
    b"{}",
    b"[null]",
    b"{\"\":{}}",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
];

/// Fragments that are repeated many times (deep nesting, long fields, many lines).
const REPEATS: &[&[u8]] = &[
    b"[",
    b"{\"a\":",
    b"[{\"children\":",
    b"{\"children\":[",
    b"A",
    b"0",
    b"9",
    b",",
    b"\n",
    b"\"",
    b"\\\\",
    b"1,",
    b"{},",
    b"[],",
    b"\x91",
    b"\x81\xa1a",
    b"\xdc\x00\x01",
];

/// MessagePack markers.
const MARKERS: &[u8] = &[
    0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf,
    0xd0, 0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf,
    0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0x00, 0x7f, 0xe0, 0xff,
];

/// MessagePack headers that announce huge or odd lengths.
const MP_HEADERS: &[&[u8]] = &[
    b"\xdd\xff\xff\xff\xff",
    b"\xdf\xff\xff\xff\xff",
    b"\xdb\xff\xff\xff\xff",
    b"\xc6\xff\xff\xff\xff",
    b"\xdc\xff\xff",
    b"\xde\xff\xff",
    b"\xda\xff\xff",
    b"\xdd\x7f\xff\xff\xff",
    b"\xdf\x10\x00\x00\x00",
    b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff",
    b"\xd3\x80\x00\x00\x00\x00\x00\x00\x00",
    b"\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00",
    b"\xcb\x7f\xf0\x00\x00\x00\x00\x00\x00",
    b"\xca\xff\x80\x00\x00",
    b"\xd9\x02\xc3\x28",
    b"\xc7\x01\x05\x00",
    b"\xd4\xff\x00",
];

/// Applies a stack of mutations (one half of the time, two a quarter, rarely up to 16);
/// returns their names.
pub fn mutate(rng: &mut Rng, data: &mut Vec<u8>, ctx: &Ctx<'_>) -> Vec<&'static str> {
    let n = if rng.chance(1, 16) {
        rng.range(4, 16)
    } else {
        let mut n = 1;
        while n < 4 && rng.chance(1, 2) {
            n += 1;
        }
        n
    };
    let mut names = Vec::with_capacity(n);
    for _ in 0..n {
        names.push(mutate_once(rng, data, ctx));
        if data.len() > ctx.max_len {
            data.truncate(ctx.max_len);
        }
    }
    names
}

/// One mutation chosen by the flavor's weights: mostly ones that keep the syntax (so the
/// input gets past the parser), some that break it.
pub fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, ctx: &Ctx<'_>) -> &'static str {
    let r = rng.below(20);
    match ctx.flavor {
        Flavor::Csv => match r {
            0..=9 => csv_op(rng, data),
            10..=14 => text_gentle(rng, data, ctx),
            15..=16 => text_rough(rng, data, ctx),
            _ => generic_op(rng, data, ctx),
        },
        Flavor::Json => match r {
            0..=9 => json_op(rng, data, ctx.max_len),
            10..=16 => text_gentle(rng, data, ctx),
            17 => text_rough(rng, data, ctx),
            _ => generic_op(rng, data, ctx),
        },
        Flavor::Msgpack => match r {
            0..=9 => msgpack_op(rng, data),
            _ => generic_op(rng, data, ctx),
        },
        Flavor::Sqlite => match r {
            0..=15 => sqlite_op(rng, data),
            _ => generic_op(rng, data, ctx),
        },
    }
}

fn pos(rng: &mut Rng, data: &[u8]) -> usize {
    rng.below(data.len())
}

fn token<'a>(rng: &mut Rng, ctx: &'a Ctx<'_>) -> &'a [u8] {
    if !ctx.dict.is_empty() && rng.chance(1, 2) {
        return rng.pick(ctx.dict).as_slice();
    }
    let list: &[&[u8]] = if rng.chance(1, 2) { NUMBERS } else { TOKENS };
    list[rng.below(list.len())]
}

/// How many copies of `unit` bytes fit in what `max_len` leaves of `data` (at least one):
/// mutations never build inputs much larger than the cap, even for a moment.
fn fit(times: usize, unit: usize, data: &[u8], max_len: usize) -> usize {
    let room = max_len.saturating_sub(data.len());
    times.min(room / unit.max(1)).max(1)
}

fn splice_in(data: &mut Vec<u8>, at: usize, len: usize, with: &[u8]) {
    let at = at.min(data.len());
    let end = (at + len).min(data.len());
    data.splice(at..end, with.iter().copied());
}

/// Mutations that know nothing of the format.
pub fn generic_op(rng: &mut Rng, data: &mut Vec<u8>, ctx: &Ctx<'_>) -> &'static str {
    if data.is_empty() {
        let t = token(rng, ctx).to_vec();
        data.extend_from_slice(&t);
        return "insert-into-empty";
    }
    match rng.below(14) {
        0 | 1 => {
            let p = pos(rng, data);
            data[p] ^= 1 << rng.below(8);
            "bit-flip"
        }
        2 => {
            let p = pos(rng, data);
            data[p] = *rng.pick(BYTES);
            "interesting-byte"
        }
        3 => {
            let p = pos(rng, data);
            data[p] = rng.next_u64() as u8;
            "random-byte"
        }
        4 => {
            let p = pos(rng, data);
            let d = rng.range(1, 35) as u8;
            data[p] = if rng.chance(1, 2) {
                data[p].wrapping_add(d)
            } else {
                data[p].wrapping_sub(d)
            };
            "arith-byte"
        }
        5 => {
            let width = *rng.pick(&[2usize, 4, 8]);
            let v: u64 = *rng.pick(&[
                0,
                1,
                u64::MAX,
                0x7f,
                0x80,
                0xff,
                0x7fff,
                0x8000,
                0xffff,
                0x7fff_ffff,
                0x8000_0000,
                0xffff_ffff,
                0x7fff_ffff_ffff_ffff,
                0x8000_0000_0000_0000,
            ]);
            let bytes = if rng.chance(1, 2) {
                v.to_be_bytes()[8 - width..].to_vec()
            } else {
                v.to_le_bytes()[..width].to_vec()
            };
            let p = pos(rng, data);
            splice_in(data, p, width, &bytes);
            "interesting-int"
        }
        6 => {
            let t = token(rng, ctx).to_vec();
            let p = rng.below(data.len() + 1);
            splice_in(data, p, 0, &t);
            "insert-token"
        }
        7 => {
            let t = token(rng, ctx).to_vec();
            let p = pos(rng, data);
            splice_in(data, p, t.len(), &t);
            "overwrite-token"
        }
        8 => {
            let p = pos(rng, data);
            let l = rng.small_len(data.len() - p);
            data.drain(p..p + l);
            "delete-range"
        }
        9 => {
            let a = pos(rng, data);
            let l = rng.small_len((data.len() - a).min(1 << 16));
            let chunk = data[a..a + l].to_vec();
            let times = if rng.chance(1, 8) {
                rng.range(2, 64)
            } else {
                1
            };
            let times = fit(times, l, data, ctx.max_len);
            let p = rng.below(data.len() + 1);
            let rep: Vec<u8> = chunk.iter().copied().cycle().take(l * times).collect();
            splice_in(data, p, 0, &rep);
            "duplicate-range"
        }
        10 => {
            let a = pos(rng, data);
            let l = rng.small_len(data.len() - a);
            let chunk = data[a..a + l].to_vec();
            let p = pos(rng, data);
            splice_in(data, p, chunk.len(), &chunk);
            "copy-range"
        }
        11 => {
            let keep = if rng.chance(1, 2) {
                rng.below(data.len())
            } else {
                data.len() - rng.small_len(data.len())
            };
            data.truncate(keep);
            "truncate"
        }
        12 => {
            if ctx.splice.is_empty() {
                data.truncate(rng.below(data.len()));
                return "truncate";
            }
            let a = rng.below(data.len() + 1);
            let b = rng.below(ctx.splice.len());
            data.truncate(a);
            data.extend_from_slice(&ctx.splice[b..]);
            "splice"
        }
        _ => {
            let unit = *rng.pick(REPEATS);
            let times = *rng.pick(&[16usize, 200, 1000, 5000, 20_000, 100_000]);
            let max = ctx.max_len.saturating_sub(data.len()) / unit.len().max(1);
            let rep: Vec<u8> = unit
                .iter()
                .copied()
                .cycle()
                .take(unit.len() * times.min(max))
                .collect();
            let p = rng.below(data.len() + 1);
            splice_in(data, p, 0, &rep);
            "insert-repeated"
        }
    }
}

fn is_num_byte(c: u8) -> bool {
    c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+' | b'e' | b'E')
}

/// Finds, from a random position onwards (wrapping once), the first byte satisfying `f`.
fn find_from(rng: &mut Rng, data: &[u8], f: impl Fn(u8) -> bool) -> Option<usize> {
    if data.is_empty() {
        return None;
    }
    let start = pos(rng, data);
    (start..data.len()).chain(0..start).find(|&i| f(data[i]))
}

/// The line holding byte `p`: `(start, end)` with `end` after its `\n` (or at the end).
fn line_at(data: &[u8], p: usize) -> (usize, usize) {
    let start = data[..p]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |i| i + 1);
    let end = data[p..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(data.len(), |i| p + i + 1);
    (start, end)
}

/// The quoted string starting at `q` (a `"`): the index of its closing quote.
fn string_end(data: &[u8], q: usize) -> Option<usize> {
    let mut i = q + 1;
    while i < data.len() && i < q + 65536 {
        match data[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Token-aware mutations that keep a text's syntax: numbers and string contents.
fn text_gentle(rng: &mut Rng, data: &mut Vec<u8>, ctx: &Ctx<'_>) -> &'static str {
    if data.is_empty() {
        return generic_op(rng, data, ctx);
    }
    if rng.chance(3, 5) {
        text_op(rng, data, ctx, 0)
    } else {
        text_op(rng, data, ctx, 7)
    }
}

/// Token-aware mutations that may break a text's syntax: lines and quotes.
fn text_rough(rng: &mut Rng, data: &mut Vec<u8>, ctx: &Ctx<'_>) -> &'static str {
    if data.is_empty() {
        return generic_op(rng, data, ctx);
    }
    let op = rng.range(3, 6);
    text_op(rng, data, ctx, op)
}

/// Token-aware mutations for any text format; `op` picks one (0: numbers, 3 and 4:
/// lines, 5 and 6: quotes, 7: string contents).
fn text_op(rng: &mut Rng, data: &mut Vec<u8>, ctx: &Ctx<'_>, op: usize) -> &'static str {
    match op {
        0..=2 => {
            let Some(d) = find_from(rng, data, |c| c.is_ascii_digit()) else {
                return generic_op(rng, data, ctx);
            };
            let mut a = d;
            while a > 0 && is_num_byte(data[a - 1]) {
                a -= 1;
            }
            let mut b = d;
            while b < data.len() && is_num_byte(data[b]) {
                b += 1;
            }
            if rng.chance(3, 4) {
                let n = rng.pick(NUMBERS).to_vec();
                data.splice(a..b, n);
                "replace-number"
            } else {
                // Shift one digit: a nearby, still plausible value.
                let i = rng.range(a, b - 1);
                if data[i].is_ascii_digit() {
                    data[i] = b'0' + (data[i] - b'0' + rng.range(1, 9) as u8) % 10;
                }
                "tweak-digit"
            }
        }
        3 | 4 => {
            let p = pos(rng, data);
            let (a, b) = line_at(data, p);
            match rng.below(3) {
                0 => {
                    let line = data[a..b].to_vec();
                    let times = if rng.chance(1, 10) {
                        rng.range(2, 200)
                    } else {
                        1
                    };
                    let times = fit(times, line.len() + 1, data, ctx.max_len);
                    let mut rep = Vec::with_capacity((line.len() + 1) * times);
                    for _ in 0..times {
                        rep.extend_from_slice(&line);
                        if !line.ends_with(b"\n") {
                            rep.push(b'\n');
                        }
                    }
                    let at = if rng.chance(1, 2) { b } else { a };
                    splice_in(data, at, 0, &rep);
                    "duplicate-line"
                }
                1 => {
                    data.drain(a..b);
                    "delete-line"
                }
                _ => {
                    let q = pos(rng, data);
                    let (c, d) = line_at(data, q);
                    if d <= a || b <= c {
                        let (first, second) = if b <= c {
                            ((a, b), (c, d))
                        } else {
                            ((c, d), (a, b))
                        };
                        let one = data[first.0..first.1].to_vec();
                        let two = data[second.0..second.1].to_vec();
                        data.splice(second.0..second.1, one);
                        data.splice(first.0..first.1, two);
                    }
                    "swap-lines"
                }
            }
        }
        5 => {
            let Some(q) = find_from(rng, data, |c| c == b'"') else {
                let p = rng.below(data.len() + 1);
                data.insert(p, b'"');
                return "insert-quote";
            };
            data.remove(q);
            "drop-quote"
        }
        6 => {
            let p = rng.below(data.len() + 1);
            data.insert(p, b'"');
            "insert-quote"
        }
        _ => {
            let mut q = None;
            for _ in 0..8 {
                let Some(c) = find_from(rng, data, |c| c == b'"') else {
                    return generic_op(rng, data, ctx);
                };
                // An opening quote follows a structural byte (JSON) or a field start (CSV).
                let before = data[..c].iter().rposition(|x| *x != b' ' && *x != b'\t');
                if before.is_none_or(|i| matches!(data[i], b'{' | b'[' | b',' | b':' | b'\n')) {
                    q = Some(c);
                    break;
                }
            }
            let Some(q) = q else {
                return generic_op(rng, data, ctx);
            };
            let Some(e) = string_end(data, q) else {
                return generic_op(rng, data, ctx);
            };
            let with: Vec<u8> = match rng.below(6) {
                0 => Vec::new(),
                1 => "A"
                    .repeat(*rng.pick(&[300usize, 5000, 70_000]))
                    .into_bytes(),
                2 => rng
                    .pick(&[
                        &b"\\u0000"[..],
                        b"\\ud800",
                        b"\\\\",
                        b"\\\"",
                        b"\\x",
                        b"\\",
                        b"\xff\xfe",
                        b"a\nb",
                        b"\xe2\x9c\x93",
                    ])
                    .to_vec(),
                3 => rng.pick(NUMBERS).to_vec(),
                _ if !ctx.dict.is_empty() => {
                    let t = rng.pick(ctx.dict);
                    t.strip_prefix(b"\"")
                        .and_then(|t| t.strip_suffix(b"\""))
                        .unwrap_or(t)
                        .to_vec()
                }
                _ => b"x".to_vec(),
            };
            data.splice(q + 1..e, with);
            "replace-string"
        }
    }
}

/// Splits a CSV line into field ranges (quote-aware, no line end).
fn csv_fields(line: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    let end = line
        .iter()
        .rposition(|&c| c != b'\n' && c != b'\r')
        .map_or(0, |i| i + 1);
    for (i, &c) in line[..end].iter().enumerate() {
        match c {
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                out.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push((start, end));
    out
}

/// CSV-aware mutations: fields of a record (or of the header).
fn csv_op(rng: &mut Rng, data: &mut Vec<u8>) -> &'static str {
    if data.is_empty() {
        data.extend_from_slice(b"Kind,Agent_Id\n");
        return "csv-empty";
    }
    // Mostly records, sometimes the header.
    let p = if rng.chance(1, 10) { 0 } else { pos(rng, data) };
    let (a, b) = line_at(data, p);
    let fields = csv_fields(&data[a..b]);
    let (fa, fb) = *rng.pick(&fields);
    let (fa, fb) = (a + fa, a + fb);
    match rng.below(7) {
        6 if a > 0 => {
            // A record given twice: ids an earlier row took (correlation, dispatch), which
            // the import moves and counter rows then look up (D110, D112, D117).
            let mut line = data[a..b].to_vec();
            if line.last() != Some(&b'\n') {
                line.push(b'\n');
            }
            splice_in(data, a, 0, &line);
            "csv-duplicate-line"
        }
        0 | 1 => {
            let v: Vec<u8> = match rng.below(4) {
                0 => rng.pick(FIELDS).to_vec(),
                1 => "x".repeat(*rng.pick(&[1000usize, 70_000])).into_bytes(),
                _ => rng.pick(NUMBERS).to_vec(),
            };
            data.splice(fa..fb, v);
            "csv-replace-field"
        }
        2 => {
            let f = data[fa..fb].to_vec();
            let mut ins = f;
            ins.push(b',');
            splice_in(data, fa, 0, &ins);
            "csv-duplicate-field"
        }
        3 => {
            let end = if fb < b && data.get(fb) == Some(&b',') {
                fb + 1
            } else {
                fb
            };
            data.drain(fa..end);
            "csv-delete-field"
        }
        4 => {
            let (ga, gb) = *rng.pick(&fields);
            let (ga, gb) = (a + ga, a + gb);
            if gb <= fa || fb <= ga {
                let (first, second) = if fb <= ga {
                    ((fa, fb), (ga, gb))
                } else {
                    ((ga, gb), (fa, fb))
                };
                let one = data[first.0..first.1].to_vec();
                let two = data[second.0..second.1].to_vec();
                data.splice(second.0..second.1, one);
                data.splice(first.0..first.1, two);
            }
            "csv-swap-fields"
        }
        _ => {
            // Quote a field, or unbalance its quotes.
            let f = data[fa..fb].to_vec();
            let mut q = Vec::with_capacity(f.len() + 2);
            q.push(b'"');
            q.extend_from_slice(&f);
            if rng.chance(2, 3) {
                q.push(b'"');
            }
            data.splice(fa..fb, q);
            "csv-quote-field"
        }
    }
}

/// The balanced JSON value starting at `open` (`{` or `[`): index of its close, skipping
/// strings; `None` when it does not close within a bound.
fn value_end(data: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    let limit = (open + (1 << 20)).min(data.len());
    while i < limit {
        match data[i] {
            b'"' => i = string_end(data, i)?,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether a JSON token at `p` starts a value or a key (and is not, say, the closing
/// quote of a string or a word inside one): the byte before it is a structural one.
fn starts_value(data: &[u8], p: usize) -> bool {
    let before = data[..p].iter().rposition(|c| !c.is_ascii_whitespace());
    before.is_none_or(|i| matches!(data[i], b'{' | b'[' | b',' | b':'))
}

/// The JSON value starting at `p` (a balanced `{..}`/`[..]`, a string or a scalar): its
/// end (exclusive).
fn value_at(data: &[u8], p: usize) -> Option<usize> {
    match *data.get(p)? {
        b'{' | b'[' => value_end(data, p).map(|e| e + 1),
        b'"' => string_end(data, p).map(|e| e + 1),
        _ => {
            let mut b = p;
            while b < data.len() && (is_num_byte(data[b]) || data[b].is_ascii_alphabetic()) {
                b += 1;
            }
            (b > p).then_some(b)
        }
    }
}

/// A JSON value or object member near a random position, as `(start, end, value)`:
/// for a member (`"key": value`) `start` is the key and `value` where its value starts;
/// otherwise `value == start`.
fn json_value_at(rng: &mut Rng, data: &[u8]) -> Option<(usize, usize, usize)> {
    let mut a = None;
    for _ in 0..8 {
        let p = find_from(rng, data, |c| {
            matches!(c, b'{' | b'[' | b'"')
                || c.is_ascii_digit()
                || c == b'n'
                || c == b't'
                || c == b'f'
                || c == b'-'
        })?;
        let mut s = p;
        if !matches!(data[p], b'{' | b'[' | b'"') {
            while s > 0 && (is_num_byte(data[s - 1]) || data[s - 1].is_ascii_alphabetic()) {
                s -= 1;
            }
        }
        if starts_value(data, s) {
            a = Some(s);
            break;
        }
    }
    let a = a?;
    let b = value_at(data, a)?;
    if data[a] == b'"' {
        let mut k = b;
        while k < data.len() && data[k].is_ascii_whitespace() {
            k += 1;
        }
        if data.get(k) == Some(&b':') {
            let mut v = k + 1;
            while v < data.len() && data[v].is_ascii_whitespace() {
                v += 1;
            }
            let e = value_at(data, v)?;
            return Some((a, e, v));
        }
    }
    // A value right after `:` is a member's value: only replacing it keeps the syntax.
    let before = data[..a].iter().rposition(|c| !c.is_ascii_whitespace());
    if before.is_some_and(|i| data[i] == b':') {
        return Some((a, b, usize::MAX));
    }
    Some((a, b, a))
}

/// JSON-aware mutations on whole values.
fn json_op(rng: &mut Rng, data: &mut Vec<u8>, max_len: usize) -> &'static str {
    let Some((a, b, v)) = json_value_at(rng, data) else {
        data.extend_from_slice(b"{}");
        return "json-append";
    };
    let (v, op) = if v == usize::MAX {
        (a, 2 + rng.below(3))
    } else {
        (v, rng.below(6))
    };
    match op {
        0 => {
            let v = data[a..b].to_vec();
            let times = if rng.chance(1, 8) {
                rng.range(2, 100)
            } else {
                1
            };
            let times = fit(times, v.len() + 1, data, max_len);
            let mut ins = Vec::with_capacity((v.len() + 1) * times);
            for _ in 0..times {
                ins.push(b',');
                ins.extend_from_slice(&v);
            }
            splice_in(data, b, 0, &ins);
            "json-duplicate-value"
        }
        1 => {
            let (mut a, mut b) = (a, b);
            if data.get(b) == Some(&b',') {
                b += 1;
            } else if a > 0 && data[a - 1] == b',' {
                a -= 1;
            }
            data.drain(a..b);
            "json-delete-value"
        }
        2 | 3 => {
            let with = rng.pick(VALUES).to_vec();
            data.splice(v..b, with);
            "json-replace-value"
        }
        4 => {
            let k = *rng.pick(&[1usize, 2, 50, 3000, 100_000]);
            let mut ins = vec![b'['; k];
            ins.extend_from_slice(&data[v..b]);
            ins.extend(std::iter::repeat_n(b']', k));
            data.splice(v..b, ins);
            "json-nest"
        }
        _ => {
            // Swap with another value.
            let Some((c, d, _)) = json_value_at(rng, data) else {
                return "json-swap-none";
            };
            if d <= a || b <= c {
                let (first, second) = if b <= c {
                    ((a, b), (c, d))
                } else {
                    ((c, d), (a, b))
                };
                let one = data[first.0..first.1].to_vec();
                let two = data[second.0..second.1].to_vec();
                data.splice(second.0..second.1, one);
                data.splice(first.0..first.1, two);
            }
            "json-swap-values"
        }
    }
}

/// MessagePack-aware mutations: markers and length fields.
fn msgpack_op(rng: &mut Rng, data: &mut Vec<u8>) -> &'static str {
    if data.is_empty() {
        data.extend_from_slice(b"\x92\x80\x80");
        return "msgpack-empty";
    }
    match rng.below(4) {
        0 => {
            let p = pos(rng, data);
            data[p] = *rng.pick(MARKERS);
            "msgpack-marker"
        }
        1 => {
            let h = rng.pick(MP_HEADERS).to_vec();
            let p = rng.below(data.len() + 1);
            if rng.chance(1, 2) {
                splice_in(data, p, 0, &h);
            } else {
                splice_in(data, p, h.len(), &h);
            }
            "msgpack-header"
        }
        _ => {
            // Change the length of a container or string header.
            let Some(p) = find_from(rng, data, |c| {
                matches!(
                    c,
                    0x80..=0xbf | 0xd9 | 0xda | 0xdb | 0xdc | 0xdd | 0xde | 0xdf
                )
            }) else {
                return "msgpack-none";
            };
            let c = data[p];
            match c {
                0x80..=0xbf => {
                    let (base, mask) = match c {
                        0x80..=0x8f => (0x80, 0x0f),
                        0x90..=0x9f => (0x90, 0x0f),
                        _ => (0xa0, 0x1f),
                    };
                    let n = (c - base).wrapping_add(*rng.pick(&[1u8, 255, 2, 254, 7])) & mask;
                    data[p] = base + n;
                }
                _ => {
                    let w = match c {
                        0xd9 => 1,
                        0xda | 0xdc | 0xde => 2,
                        _ => 4,
                    };
                    let v: u32 = *rng.pick(&[0u32, 1, 0xffff_ffff, 0x7fff_ffff, 0xffff, 0x100]);
                    let bytes = v.to_be_bytes();
                    splice_in(data, p + 1, w, &bytes[4 - w..]);
                }
            }
            "msgpack-length"
        }
    }
}

/// The page size a SQLite header declares (4096 if it is not a valid one).
pub fn page_size(data: &[u8]) -> usize {
    if data.len() < 18 {
        return 4096;
    }
    match u16::from_be_bytes([data[16], data[17]]) {
        1 => 65536,
        p if p >= 512 && p.is_power_of_two() => p as usize,
        _ => 4096,
    }
}

fn put_be(data: &mut [u8], at: usize, width: usize, v: u64) {
    let bytes = v.to_be_bytes();
    for (i, b) in bytes[8 - width..].iter().enumerate() {
        if let Some(d) = data.get_mut(at + i) {
            *d = *b;
        }
    }
}

fn get_be(data: &[u8], at: usize, width: usize) -> u64 {
    (0..width).fold(0u64, |v, i| {
        (v << 8) | u64::from(*data.get(at + i).unwrap_or(&0))
    })
}

fn interesting_value(rng: &mut Rng, current: u64, width: usize) -> u64 {
    let max = if width >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * width)) - 1
    };
    match rng.below(8) {
        0 => 0,
        1 => 1,
        2 => max,
        3 => max >> 1,
        4 => current.wrapping_add(1) & max,
        5 => current.wrapping_sub(1) & max,
        6 => rng.below(64) as u64,
        _ => rng.next_u64() & max,
    }
}

/// SQLite page-aware mutations.
fn sqlite_op(rng: &mut Rng, data: &mut Vec<u8>) -> &'static str {
    if data.len() < 100 {
        data.truncate(rng.below(data.len() + 1));
        return "sqlite-short";
    }
    let ps = page_size(data);
    let pages = data.len().div_ceil(ps).max(1);
    let page = rng.below(pages);
    let base = page * ps;
    // The b-tree page header starts after the file header on page 1.
    let hdr = if page == 0 { 100 } else { base };
    match rng.below(9) {
        0 | 1 => {
            let end = (base + ps).min(data.len());
            for _ in 0..rng.range(1, 8) {
                let p = rng.range(base, end - 1);
                data[p] = if rng.chance(1, 2) {
                    data[p] ^ (1 << rng.below(8))
                } else {
                    rng.next_u64() as u8
                };
            }
            "sqlite-page-bytes"
        }
        2 => {
            if page == 0 {
                return "sqlite-keep-header-page";
            }
            let end = (base + ps).min(data.len());
            data[base..end].fill(0);
            "sqlite-zero-page"
        }
        3 => {
            let other = rng.below(pages) * ps;
            if other != base && other != 0 && base != 0 {
                let len = ps.min(data.len() - base).min(data.len() - other);
                let src = data[other..other + len].to_vec();
                data[base..base + len].copy_from_slice(&src);
            }
            "sqlite-copy-page"
        }
        4 | 5 => {
            const FIELDS: &[(usize, usize)] = &[
                (16, 2),
                (18, 1),
                (19, 1),
                (20, 1),
                (21, 1),
                (22, 1),
                (23, 1),
                (24, 4),
                (28, 4),
                (32, 4),
                (36, 4),
                (40, 4),
                (44, 4),
                (48, 4),
                (52, 4),
                (56, 4),
                (60, 4),
                (64, 4),
                (68, 4),
                (92, 4),
                (96, 4),
            ];
            let (at, w) = *rng.pick(FIELDS);
            let cur = get_be(data, at, w);
            let v = if at == 16 {
                *rng.pick(&[1u64, 512, 1024, 2048, 8192, 65535, 0, 4097, 32768])
            } else if at == 56 {
                *rng.pick(&[0u64, 1, 2, 3, 4, 0xffff_ffff])
            } else {
                interesting_value(rng, cur, w)
            };
            put_be(data, at, w, v);
            "sqlite-header-field"
        }
        6 => {
            let (off, w) = *rng.pick(&[(0usize, 1usize), (1, 2), (3, 2), (5, 2), (7, 1), (8, 4)]);
            let at = hdr + off;
            if off == 0 {
                let t = *rng.pick(&[0x02u64, 0x05, 0x0a, 0x0d, 0x00, 0xff]);
                put_be(data, at, 1, t);
            } else {
                let cur = get_be(data, at, w);
                let v = interesting_value(rng, cur, w);
                put_be(data, at, w, v);
            }
            "sqlite-btree-header"
        }
        7 => {
            let interior = matches!(data.get(hdr), Some(0x02 | 0x05));
            let cells = get_be(data, hdr + 3, 2) as usize;
            if cells == 0 {
                return "sqlite-no-cells";
            }
            let arr = hdr + if interior { 12 } else { 8 };
            let i = rng.below(cells.min(4096));
            let cur = get_be(data, arr + 2 * i, 2);
            let v = match rng.below(3) {
                0 => get_be(data, arr + 2 * rng.below(cells.min(4096)), 2),
                _ => interesting_value(rng, cur, 2),
            };
            put_be(data, arr + 2 * i, 2, v);
            "sqlite-cell-pointer"
        }
        _ => {
            let keep = if rng.chance(1, 2) {
                rng.range(1, pages) * ps
            } else {
                rng.range(100, data.len())
            };
            data.truncate(keep.min(data.len()));
            "sqlite-truncate"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutators_never_panic_and_respect_the_length_cap() {
        let seeds: [&[u8]; 6] = [
            b"",
            b"a",
            b"Kind,Agent_Id,\"x,y\"\n1,2,3\n\"4\",5,6\n",
            b"{\"a\":[1,2,{\"b\":\"c\\\"\"}],\"d\":-1.5e3}",
            b"\x92\x83\xa5frame\x82\xa4name\xa4ROOT\xa8children\x90\x80",
            b"SQLite format 3\0\x10\x00\x01\x01\x00\x40\x20\x20",
        ];
        let mut sqlite = seeds[5].to_vec();
        sqlite.resize(3 * 4096, 7);
        sqlite[100] = 0x0d;
        let dict = vec![b"\"frame\"".to_vec(), b"Kernel_Name".to_vec()];
        for flavor in [Flavor::Csv, Flavor::Json, Flavor::Msgpack, Flavor::Sqlite] {
            for it in 0..3000u64 {
                let mut rng = Rng::new(7, flavor as u64, it);
                let seed = if it % 7 == 6 {
                    &sqlite[..]
                } else {
                    seeds[it as usize % 6]
                };
                let mut data = seed.to_vec();
                let ctx = Ctx {
                    flavor,
                    dict: &dict,
                    splice: seeds[(it as usize + 1) % 6],
                    max_len: 1 << 20,
                };
                let names = mutate(&mut rng, &mut data, &ctx);
                assert!(!names.is_empty());
                assert!(data.len() <= 1 << 20);
            }
        }
    }

    #[test]
    fn csv_fields_are_quote_aware() {
        assert_eq!(csv_fields(b"a,\"b,c\",d\r\n"), vec![(0, 1), (2, 7), (8, 9)]);
    }

    #[test]
    fn json_values_balance() {
        let d = br#"{"a":"}","b":[1,{"c":2}]}"#;
        assert_eq!(value_end(d, 0), Some(d.len() - 1));
        assert_eq!(value_end(d, 13), Some(d.len() - 2));
    }
}
