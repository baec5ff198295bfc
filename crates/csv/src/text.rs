//! Building CSV lines: quoting as RFC 4180 requires and the number formats rocprofv3 and
//! AMD's `rocpd` print.
//!
//! Every text field is quoted (as AMD's writers quote them), with each `"` inside doubled;
//! commas, line breaks and any other byte stay as they are inside the quotes. Numbers are
//! bare. A missing (null) number is an empty field, a missing text `""`.

use std::io::Write;

/// One line being built; the buffer is reused from line to line.
#[derive(Debug, Default)]
pub(crate) struct Line {
    buf: Vec<u8>,
    fields: usize,
}

impl Line {
    /// Starts a new line.
    pub fn start(&mut self) {
        self.buf.clear();
        self.fields = 0;
    }

    fn sep(&mut self) {
        if self.fields > 0 {
            self.buf.push(b',');
        }
        self.fields += 1;
    }

    /// A quoted text field.
    pub fn text(&mut self, s: &str) {
        self.sep();
        quote_into(&mut self.buf, s);
    }

    /// A quoted `"<label> <index>"` field (agent labels).
    pub fn label(&mut self, label: &str, index: i64) {
        self.sep();
        self.buf.push(b'"');
        escape_into(&mut self.buf, label);
        // Writing into a Vec cannot fail.
        let _ = write!(self.buf, " {index}\"");
    }

    /// A bare integer.
    pub fn int(&mut self, v: impl std::fmt::Display) {
        self.sep();
        let _ = write!(self.buf, "{v}");
    }

    /// A bare integer, or an empty field when missing.
    pub fn opt_int(&mut self, v: Option<i64>) {
        self.sep();
        if let Some(v) = v {
            let _ = write!(self.buf, "{v}");
        }
    }

    /// A field written as given (a number already formatted).
    pub fn raw(&mut self, s: &str) {
        self.sep();
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// An empty field.
    pub fn empty(&mut self) {
        self.sep();
    }

    /// A quoted `0x%016x` address, `""` when missing.
    pub fn address(&mut self, v: Option<i64>) {
        self.sep();
        match v {
            Some(v) => {
                let _ = write!(self.buf, "\"0x{:016x}\"", v as u64);
            }
            None => self.buf.extend_from_slice(b"\"\""),
        }
    }

    /// The finished line, with its line end.
    pub fn finish(&mut self) -> &[u8] {
        self.buf.push(b'\n');
        &self.buf
    }
}

fn escape_into(buf: &mut Vec<u8>, s: &str) {
    for b in s.bytes() {
        if b == b'"' {
            buf.push(b'"');
        }
        buf.push(b);
    }
}

/// `s` as a quoted CSV field (RFC 4180: quotes doubled).
pub(crate) fn quote_into(buf: &mut Vec<u8>, s: &str) {
    buf.push(b'"');
    escape_into(buf, s);
    buf.push(b'"');
}

/// The header line of `columns`, every name quoted.
pub(crate) fn header_line(columns: &[&str]) -> Vec<u8> {
    let mut line = Line::default();
    line.start();
    for c in columns {
        line.text(c);
    }
    line.finish().to_vec()
}

/// C's `%.<digits>e`: a mantissa with `digits` decimals, `e`, a sign and at least two
/// exponent digits (`2.920e-03`, `0.00000000e+00`).
pub(crate) fn c_exponent(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return non_finite(v);
    }
    let s = format!("{v:.digits$e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

fn non_finite(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

/// rocprofv3's floating-point fields of the stats files (`AverageNs`, `StdDev`): six
/// decimals from 1 up, `%.8e` below (`65624351.500000`, `0.00000000e+00`).
pub(crate) fn stats_float(v: f64) -> String {
    if !v.is_finite() {
        non_finite(v)
    } else if v.abs() >= 1.0 {
        format!("{v:.6}")
    } else {
        c_exponent(v, 8)
    }
}

/// rocprofv3's `Percentage`: two decimals from 1 up, four from 0.01, `%.3e` below
/// (`85.15`, `0.0880`, `2.920e-03`), as its sample stats files show.
pub(crate) fn percentage(v: f64) -> String {
    if !v.is_finite() {
        non_finite(v)
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else if v.abs() >= 0.01 {
        format!("{v:.4}")
    } else {
        c_exponent(v, 3)
    }
}

/// A counter value as AMD's writer prints doubles: the shortest text that reads back as
/// the same number (`16384`, `0.25`), with an exponent for very large or small magnitudes
/// (`1e20`, `2.5e-7`), `nan`/`inf` for the non-finite.
pub(crate) fn shortest(v: f64) -> String {
    if !v.is_finite() {
        non_finite(v)
    } else if v != 0.0 && (v.abs() >= 1e16 || v.abs() < 1e-5) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_quoted_with_quotes_doubled() {
        let mut l = Line::default();
        l.start();
        l.text("a \"b\", c\nd");
        l.text("");
        l.int(7);
        l.opt_int(None);
        l.label("Agent", 3);
        l.address(Some(-1));
        l.address(None);
        assert_eq!(
            l.finish(),
            b"\"a \"\"b\"\", c\nd\",\"\",7,,\"Agent 3\",\"0xffffffffffffffff\",\"\"\n"
        );
    }

    #[test]
    fn numbers_print_as_rocprofv3_prints_them() {
        // Values of the real hip_api_stats.csv sample (rocprofiler-sdk docs).
        assert_eq!(stats_float(65624351.5), "65624351.500000");
        assert_eq!(stats_float(22600.166666666668), "22600.166667");
        assert_eq!(stats_float(0.0), "0.00000000e+00");
        assert_eq!(stats_float(0.5), "5.00000000e-01");
        assert_eq!(percentage(85.151874247767), "85.15");
        assert_eq!(percentage(100.0), "100.00");
        assert_eq!(percentage(1.9776220285047499), "1.98");
        assert_eq!(percentage(0.6469728169013057), "0.6470");
        assert_eq!(percentage(0.08797556879378421), "0.0880");
        assert_eq!(percentage(0.002919521681787221), "2.920e-03");
        assert_eq!(percentage(0.0002140982566643962), "2.141e-04");
        assert_eq!(c_exponent(1.5e120, 2), "1.50e+120");
        assert_eq!(shortest(16384.0), "16384");
        assert_eq!(shortest(0.25), "0.25");
        assert_eq!(shortest(1e20), "1e20");
        assert_eq!(shortest(2.5e-7), "2.5e-7");
        assert_eq!(shortest(f64::NAN), "nan");
        assert_eq!(shortest(f64::NEG_INFINITY), "-inf");
        for v in [0.1, 1.0 / 3.0, 123456789.125, 9.87654321e-12, 6.02e23] {
            assert_eq!(shortest(v).parse::<f64>().unwrap(), v);
        }
    }
}
