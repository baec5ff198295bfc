//! The part of YAML that rocpd package indexes (`index.yaml`) use, read without a YAML
//! library: block mappings, block lists (`- item`, also at the indentation of their key,
//! as PyYAML writes them), one-line flow lists (`[a, b]`), plain, single- and
//! double-quoted scalars, comments and a leading `---`. Anything else (anchors, tags,
//! block scalars, flow mappings, multi-line strings, mappings inside list items, tabs in
//! indentation, ...) is refused with the line it is on, never guessed at.

/// Values (lines and flow list items) a document may hold: an index lists file names,
/// and each value costs about 150 bytes parsed, so a crafted document of short lines
/// would cost 100 times its size (400 MB at the 4 MiB an index may have).
pub(crate) const MAX_VALUES: usize = 1 << 18;

/// A parsed value and the line (1-based) it starts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub line: usize,
    pub value: Value,
}

/// A YAML value of the subset.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// Nothing after `key:`, `~` or `null`.
    Null,
    /// A scalar, as text (numbers and booleans are not interpreted).
    Scalar(String),
    /// A block or flow list.
    List(Vec<Node>),
    /// A block mapping, keys in file order (each once).
    Map(Vec<(String, Node)>),
}

/// Why the text is not in the subset, and the line (1-based).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct YamlError {
    pub line: usize,
    pub message: String,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, YamlError> {
    Err(YamlError {
        line,
        message: message.into(),
    })
}

/// One meaningful line: a list item or a mapping entry, and its inline value.
#[derive(Debug)]
struct Record {
    line: usize,
    indent: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// `- value` (value `None` when it is on the following, deeper lines).
    Item(Option<Value>),
    /// `key: value`.
    Entry(String, Option<Value>),
}

/// Parses a whole document.
pub(crate) fn parse(text: &str) -> Result<Node, YamlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut records = Vec::new();
    let mut values = 0;
    for (i, raw) in text.split('\n').enumerate() {
        let line = i + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let indent = raw.len() - raw.trim_start_matches(' ').len();
        let content = raw[indent..].trim_end_matches([' ', '\t']);
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if content.starts_with('\t') {
            return err(line, "a tab in the indentation (YAML indents with spaces)");
        }
        if content == "---" || content.starts_with("--- ") {
            if records.is_empty() && inline(content[3..].trim_start(), line, &mut values)?.is_none()
            {
                continue;
            }
            return err(
                line,
                "only one document is supported (a `---` after content)",
            );
        }
        if content == "..." {
            return err(line, "document end markers (`...`) are not supported");
        }
        if content.starts_with('%') {
            return err(line, "directives (`%...`) are not supported");
        }
        let kind = if content == "-" || content.starts_with("- ") {
            let rest = content[1..].trim_start_matches(' ');
            if rest == "-" || rest.starts_with("- ") {
                return err(
                    line,
                    "a list inside a list item on one line is not supported",
                );
            }
            Kind::Item(inline(rest, line, &mut values)?)
        } else {
            let (key, rest) = key(content, line)?;
            Kind::Entry(key, inline(rest, line, &mut values)?)
        };
        count(&mut values, line)?;
        records.push(Record { line, indent, kind });
    }
    if records.is_empty() {
        return err(1, "the document is empty");
    }
    let mut at = 0;
    let indent = records[0].indent;
    let node = block(&records, &mut at, indent)?;
    if let Some(r) = records.get(at) {
        return err(
            r.line,
            "this line is less indented than the document's first",
        );
    }
    Ok(node)
}

/// The list or mapping whose first line is `records[*at]`, at `indent`.
fn block(records: &[Record], at: &mut usize, indent: usize) -> Result<Node, YamlError> {
    match records[*at].kind {
        Kind::Item(_) => list(records, at, indent),
        Kind::Entry(..) => map(records, at, indent),
    }
}

/// What follows a `key:` or `-` with nothing after it: the deeper lines, a list at the
/// key's own indentation (only after a key), or null.
fn nested(
    records: &[Record],
    at: &mut usize,
    indent: usize,
    after_key: bool,
    line: usize,
) -> Result<Node, YamlError> {
    match records.get(*at) {
        Some(r) if r.indent > indent => {
            let i = r.indent;
            block(records, at, i)
        }
        Some(r) if after_key && r.indent == indent && matches!(r.kind, Kind::Item(_)) => {
            list(records, at, indent)
        }
        _ => Ok(Node {
            line,
            value: Value::Null,
        }),
    }
}

fn map(records: &[Record], at: &mut usize, indent: usize) -> Result<Node, YamlError> {
    let first = records[*at].line;
    let mut entries: Vec<(String, Node)> = Vec::new();
    // Keys seen, looked up by hash: a crafted index of 262,144 keys took minutes when
    // each was compared with every earlier one.
    let mut seen: std::collections::HashSet<&str> = Default::default();
    while let Some(r) = records.get(*at) {
        if r.indent != indent {
            break;
        }
        let Kind::Entry(key, value) = &r.kind else {
            return err(r.line, "a list item where a `key:` was expected");
        };
        if !seen.insert(key.as_str()) {
            return err(r.line, format!("the key {key:?} appears twice"));
        }
        *at += 1;
        let node = match value {
            Some(v) => Node {
                line: r.line,
                value: v.clone(),
            },
            None => nested(records, at, indent, true, r.line)?,
        };
        entries.push((key.clone(), node));
    }
    if let Some(r) = records.get(*at).filter(|r| r.indent > indent) {
        return err(r.line, "unexpected indentation");
    }
    Ok(Node {
        line: first,
        value: Value::Map(entries),
    })
}

fn list(records: &[Record], at: &mut usize, indent: usize) -> Result<Node, YamlError> {
    let first = records[*at].line;
    let mut items = Vec::new();
    while let Some(r) = records.get(*at) {
        let Kind::Item(value) = &r.kind else { break };
        if r.indent != indent {
            break;
        }
        *at += 1;
        items.push(match value {
            Some(v) => Node {
                line: r.line,
                value: v.clone(),
            },
            None => nested(records, at, indent, false, r.line)?,
        });
    }
    if let Some(r) = records.get(*at).filter(|r| r.indent > indent) {
        return err(r.line, "unexpected indentation");
    }
    Ok(Node {
        line: first,
        value: Value::List(items),
    })
}

/// The key of a `key: value` line and the text after its colon.
fn key(content: &str, line: usize) -> Result<(String, &str), YamlError> {
    if content.starts_with(['\'', '"']) {
        let (k, rest) = quoted(content, line)?;
        let rest = rest.trim_start_matches(' ');
        return match rest.strip_prefix(':') {
            Some(v) if v.is_empty() || v.starts_with([' ', '\t']) => Ok((k, v)),
            _ => err(line, "expected `:` after the quoted key"),
        };
    }
    if let Some(c) = content
        .chars()
        .next()
        .filter(|c| "?,[]{}&*!|>%@`".contains(*c))
    {
        return err(line, format!("a line starting with `{c}` is not supported"));
    }
    let bytes = content.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'#' && i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
            break;
        }
        let ends = bytes.get(i + 1).is_none_or(|n| matches!(n, b' ' | b'\t'));
        if b == b':' && ends {
            let k = content[..i].trim_end();
            if k.is_empty() {
                return err(line, "a mapping entry without a key");
            }
            return Ok((k.to_string(), &content[i + 1..]));
        }
    }
    err(
        line,
        "expected `key: value` or `- item` (multi-line values are not supported)",
    )
}

/// Counts one value more against [`MAX_VALUES`].
fn count(values: &mut usize, line: usize) -> Result<(), YamlError> {
    *values += 1;
    if *values > MAX_VALUES {
        return err(
            line,
            format!("more than {MAX_VALUES} values; a package index lists file names"),
        );
    }
    Ok(())
}

/// The value after `key:` or `-` on the same line; `None` when there is none.
fn inline(s: &str, line: usize, values: &mut usize) -> Result<Option<Value>, YamlError> {
    let s = s.trim_start_matches([' ', '\t']);
    let Some(c) = s.chars().next() else {
        return Ok(None);
    };
    match c {
        '#' => Ok(None),
        '\'' | '"' => {
            let (v, rest) = quoted(s, line)?;
            end_of_line(rest, line)?;
            Ok(Some(Value::Scalar(v)))
        }
        '[' => flow_list(s, line, values).map(Some),
        '{' => err(line, "flow mappings (`{...}`) are not supported"),
        '&' | '*' => err(line, "anchors and aliases (`&`, `*`) are not supported"),
        '!' => err(line, "tags (`!...`) are not supported"),
        '|' | '>' => err(line, "block scalars (`|`, `>`) are not supported"),
        '%' | '@' | '`' => err(
            line,
            format!("a value starting with `{c}` is not valid YAML"),
        ),
        _ => {
            let v = plain(s);
            if v.contains(": ") || v.contains(":\t") || v.ends_with(':') {
                return err(
                    line,
                    "a `key: value` inside a value (a nested mapping goes on its own lines; mappings inside list items are not supported)",
                );
            }
            Ok(Some(match v {
                "~" | "null" | "Null" | "NULL" => Value::Null,
                _ => Value::Scalar(v.to_string()),
            }))
        }
    }
}

/// A plain scalar: the text up to a comment (` #`), without trailing blanks.
fn plain(s: &str) -> &str {
    let b = s.as_bytes();
    let end = (1..b.len())
        .find(|&i| b[i] == b'#' && matches!(b[i - 1], b' ' | b'\t'))
        .unwrap_or(b.len());
    s[..end].trim_end_matches([' ', '\t'])
}

/// Only blanks or a comment may follow a complete value.
fn end_of_line(rest: &str, line: usize) -> Result<(), YamlError> {
    let t = rest.trim_start_matches([' ', '\t']);
    if t.is_empty() || (t.starts_with('#') && t.len() < rest.len()) {
        Ok(())
    } else {
        err(line, format!("unexpected text after the value: {t:?}"))
    }
}

/// A quoted scalar at the start of `s` (which starts with `'` or `"`), and the rest of
/// the line after its closing quote.
fn quoted(s: &str, line: usize) -> Result<(String, &str), YamlError> {
    let q = s.as_bytes()[0];
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' if q == b'\'' => {
                if s[1 + i + 1..].starts_with('\'') {
                    out.push('\'');
                    chars.next();
                } else {
                    return Ok((out, &s[1 + i + 1..]));
                }
            }
            '"' if q == b'"' => return Ok((out, &s[1 + i + 1..])),
            '\\' if q == b'"' => {
                let Some((_, e)) = chars.next() else { break };
                let hex =
                    |n: usize, chars: &mut std::str::CharIndices| -> Result<char, YamlError> {
                        let digits: String = chars.by_ref().take(n).map(|(_, c)| c).collect();
                        u32::from_str_radix(&digits, 16)
                            .ok()
                            .filter(|_| digits.len() == n)
                            .and_then(char::from_u32)
                            .map_or_else(
                                || {
                                    err(
                                        line,
                                        format!("a bad escape `\\{e}{digits}` in a quoted string"),
                                    )
                                },
                                Ok,
                            )
                    };
                out.push(match e {
                    '\\' => '\\',
                    '"' => '"',
                    '/' => '/',
                    ' ' => ' ',
                    '0' => '\0',
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    't' | '\t' => '\t',
                    'n' => '\n',
                    'v' => '\u{b}',
                    'f' => '\u{c}',
                    'r' => '\r',
                    'e' => '\u{1b}',
                    'N' => '\u{85}',
                    '_' => '\u{a0}',
                    'L' => '\u{2028}',
                    'P' => '\u{2029}',
                    'x' => hex(2, &mut chars)?,
                    'u' => hex(4, &mut chars)?,
                    'U' => hex(8, &mut chars)?,
                    other => {
                        return err(
                            line,
                            format!("an unknown escape `\\{other}` in a quoted string"),
                        )
                    }
                });
            }
            c => out.push(c),
        }
    }
    err(
        line,
        "a quoted string that does not end on its line (multi-line strings are not supported)",
    )
}

/// A one-line flow list `[a, 'b', "c"]` at the start of `s`.
fn flow_list(s: &str, line: usize, values: &mut usize) -> Result<Value, YamlError> {
    let mut items = Vec::new();
    let mut rest = &s[1..];
    let unterminated = || err(line, "a flow list (`[...]`) must end on its line");
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        let Some(c) = rest.chars().next() else {
            return unterminated();
        };
        if c == ']' {
            rest = &rest[1..];
            break;
        }
        let value = match c {
            '\'' | '"' => {
                let (v, r) = quoted(rest, line)?;
                rest = r;
                v
            }
            '[' | '{' => return err(line, "nested flow collections are not supported"),
            ',' => return err(line, "an empty item in a flow list"),
            _ => {
                let end = rest.find([',', ']']).unwrap_or(rest.len());
                let v = plain(&rest[..end]);
                if v.len() < rest[..end].trim_end_matches([' ', '\t']).len() {
                    // A comment started inside the list.
                    return unterminated();
                }
                if v.contains(": ")
                    || v.ends_with(':')
                    || v.starts_with(['{', '&', '*', '!', '|', '>'])
                {
                    return err(line, format!("the flow list item {v:?} is not supported"));
                }
                rest = &rest[end..];
                v.to_string()
            }
        };
        count(values, line)?;
        items.push(Node {
            line,
            value: Value::Scalar(value),
        });
        rest = rest.trim_start_matches([' ', '\t']);
        match rest.chars().next() {
            Some(',') => rest = &rest[1..],
            Some(']') => {}
            Some(_) => return err(line, "expected `,` or `]` in the flow list"),
            None => return unterminated(),
        }
    }
    end_of_line(rest, line)?;
    Ok(Value::List(items))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(line: usize, s: &str) -> Node {
        Node {
            line,
            value: Value::Scalar(s.into()),
        }
    }

    fn get<'a>(n: &'a Node, key: &str) -> &'a Node {
        match &n.value {
            Value::Map(m) => &m.iter().find(|(k, _)| k == key).expect(key).1,
            v => panic!("not a map: {v:?}"),
        }
    }

    /// A document of many short values is refused at the value past the bound, in block
    /// lists and in flow lists alike; one at the bound is read.
    #[test]
    fn values_past_the_bound_are_refused_at_their_line() {
        let block = |n: usize| format!("files:\n{}", "- a\n".repeat(n));
        // The key's line is a value too.
        let n = parse(&block(MAX_VALUES - 1)).unwrap();
        assert!(matches!(&get(&n, "files").value, Value::List(l) if l.len() == MAX_VALUES - 1));
        let e = parse(&block(MAX_VALUES)).unwrap_err();
        assert_eq!(e.line, MAX_VALUES + 1);
        assert!(
            e.message.contains("more than 262144 values"),
            "{}",
            e.message
        );
        // Distinct keys up to the bound are read (each checked against the others once).
        let keys: String = (2..MAX_VALUES).map(|i| format!("k{i}: x\n")).collect();
        let n = parse(&format!("files: a\n{keys}")).unwrap();
        assert!(matches!(&n.value, Value::Map(m) if m.len() == MAX_VALUES - 1));
        let e = parse(&format!("files: a\n{keys}k7: y\n")).unwrap_err();
        assert!(e.message.contains("\"k7\" appears twice"), "{}", e.message);
        let flow = format!("a: x\nfiles: [{}a]\n", "a,".repeat(MAX_VALUES));
        let e = parse(&flow).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.message.contains("more than 262144 values"),
            "{}",
            e.message
        );
    }

    #[test]
    fn what_pyyaml_writes_for_a_package_reads_back() {
        let doc = "rocprofiler-sdk:\n  rocpd:\n    files:\n    - a.db\n    - 'sub/b c.db'\n    path: .\n    rocpd_package_version: '1.0'\n";
        let n = parse(doc).unwrap();
        let rocpd = get(get(&n, "rocprofiler-sdk"), "rocpd");
        assert_eq!(
            get(rocpd, "files").value,
            Value::List(vec![scalar(4, "a.db"), scalar(5, "sub/b c.db")])
        );
        assert_eq!(get(rocpd, "path"), &scalar(6, "."));
        assert_eq!(get(rocpd, "rocpd_package_version"), &scalar(7, "1.0"));
    }

    #[test]
    fn flow_lists_quotes_comments_and_nesting() {
        let doc = "--- # a package\n\"rocprofiler-sdk\":   # the tool\n    rocpd:\n        files: [ a.db, 'it''s.db' , \"t\\tab\\u00e9.db\", ]  # three\n        path: \"x # not a comment\"\n        empty:\n        list:\n          - one # first\n          -\n            - deep\n";
        let n = parse(doc).unwrap();
        let rocpd = get(get(&n, "rocprofiler-sdk"), "rocpd");
        assert_eq!(
            get(rocpd, "files").value,
            Value::List(vec![
                scalar(4, "a.db"),
                scalar(4, "it's.db"),
                scalar(4, "t\tab\u{e9}.db")
            ])
        );
        assert_eq!(get(rocpd, "path"), &scalar(5, "x # not a comment"));
        assert_eq!(get(rocpd, "empty").value, Value::Null);
        assert_eq!(
            get(rocpd, "list").value,
            Value::List(vec![
                scalar(8, "one"),
                Node {
                    line: 10,
                    value: Value::List(vec![scalar(10, "deep")])
                }
            ])
        );
        assert_eq!(
            parse("a: b:c # plain").unwrap(),
            Node {
                line: 1,
                value: Value::Map(vec![("a".into(), scalar(1, "b:c"))])
            }
        );
    }

    #[test]
    fn everything_outside_the_subset_is_refused_with_its_line() {
        for (doc, line, words) in [
            ("a: &x 1\n", 1, "anchors"),
            ("a: 1\nb: *x\n", 2, "anchors"),
            ("a: !!str 1\n", 1, "tags"),
            ("a: |\n  text\n", 1, "block scalars"),
            ("a: {b: 1}\n", 1, "flow mappings"),
            ("a: [1,\n  2]\n", 1, "must end on its line"),
            ("a: [[1]]\n", 1, "nested flow"),
            ("a:\n\t- x\n", 2, "tab"),
            ("a: 'open\n  close'\n", 1, "does not end on its line"),
            ("a: 1\n  b: 2\n", 2, "unexpected indentation"),
            ("a: 1\na: 2\n", 2, "appears twice"),
            ("files:\n  - name: x\n", 2, "mappings inside list items"),
            ("a: b: c\n", 1, "inside a value"),
            ("just text\n", 1, "expected `key: value`"),
            ("a:\n  - x\n  b: 1\n", 3, "unexpected indentation"),
            ("a: 1\n- x\n", 2, "a list item where"),
            ("? complex\n", 1, "starting with `?`"),
            ("a: \"bad \\q\"\n", 1, "unknown escape"),
            ("a: 'x' y\n", 1, "unexpected text"),
            ("", 1, "empty"),
            ("# only a comment\n", 1, "empty"),
            ("a: 1\n---\nb: 2\n", 2, "one document"),
            ("  a: 1\nb: 2\n", 2, "less indented"),
        ] {
            let e = parse(doc).expect_err(doc);
            assert_eq!(e.line, line, "{doc:?}: {e:?}");
            assert!(e.message.contains(words), "{doc:?}: {}", e.message);
        }
    }
}
