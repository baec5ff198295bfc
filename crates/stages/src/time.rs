//! Parsing time values (`1500`, `1.5s`, `200ms`, `300us`, `40%`) and sizes (`1GiB`).

use rocpd_model::{Error, Result};

/// A time given on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeSpec {
    /// Absolute timestamp in ns (a bare integer, as AMD's rocpd takes it).
    Absolute(i64),
    /// Offset from the start of the inputs' time span, in ns (a number with a unit).
    Offset(i64),
    /// Percentage of the inputs' time span.
    Percent(f64),
}

impl TimeSpec {
    /// Resolves against the span `[lo, hi]`.
    pub fn resolve(self, lo: i64, hi: i64) -> i64 {
        match self {
            TimeSpec::Absolute(t) => t,
            TimeSpec::Offset(d) => lo.saturating_add(d),
            // Widened: the span of [i64::MIN, i64::MAX] does not fit in an i64.
            TimeSpec::Percent(p) => {
                let len = (hi as i128 - lo as i128) as f64;
                let t = lo as i128 + (len * p / 100.0).round() as i128;
                t.clamp(i64::MIN as i128, i64::MAX as i128) as i64
            }
        }
    }
}

fn unit_factor(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return None,
    })
}

/// Splits `12.5ms` into (`12.5`, `ms`).
fn number_and_unit(s: &str) -> (&str, &str) {
    let at = s
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
        })
        .unwrap_or(s.len());
    // `1e3` is a number, but the `e` of a unit cannot start it; no unit starts with `e`.
    (&s[..at], s[at..].trim())
}

/// Parses a duration with a unit (`1.5s`, `200ms`, `300us`, `10ns`) into ns.
pub fn parse_duration(s: &str) -> Result<i64> {
    let bad = |why: &str| {
        Error::Usage(format!(
            "{s:?} is not a duration ({why}); use e.g. 1.5s, 200ms, 300us, 10ns"
        ))
    };
    let (num, unit) = number_and_unit(s.trim());
    let factor = unit_factor(unit).ok_or_else(|| bad("unknown or missing unit"))?;
    let out_of_range = || bad("out of range: at most 9223372036854775807 ns, about 292 years");
    // A whole number is exact: a double holds integers only up to 2^53 (104 days in ns).
    let digits = num.strip_prefix('+').unwrap_or(num);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        let n: u128 = digits.parse().map_err(|_| out_of_range())?;
        let ns = n
            .checked_mul(factor as u128)
            .filter(|&ns| ns <= i64::MAX as u128)
            .ok_or_else(out_of_range)?;
        return Ok(ns as i64);
    }
    let v: f64 = num.parse().map_err(|_| bad("not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(bad("must be a finite, non-negative number"));
    }
    let ns = (v * factor).round();
    if ns >= i64::MAX as f64 {
        return Err(out_of_range());
    }
    Ok(ns as i64)
}

/// Parses a `--start`/`--end` value.
pub fn parse_time(s: &str) -> Result<TimeSpec> {
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p
            .trim()
            .parse()
            .map_err(|_| Error::Usage(format!("{s:?} is not a percentage")))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(Error::Usage(format!(
                "{s:?}: a percentage must be between 0% and 100%"
            )));
        }
        return Ok(TimeSpec::Percent(v));
    }
    if let Ok(ns) = t.parse::<i64>() {
        return Ok(TimeSpec::Absolute(ns));
    }
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::Usage(format!(
            "{s:?} is out of range: an absolute time in ns must lie between {} and {}",
            i64::MIN,
            i64::MAX
        )));
    }
    parse_duration(t).map(TimeSpec::Offset)
}

/// Parses a size (`500MB`, `1GiB`, `4096`) into bytes.
pub fn parse_size(s: &str) -> Result<u64> {
    let (num, unit) = number_and_unit(s.trim());
    let factor: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1048576.0,
        "g" | "gb" => 1e9,
        "gib" => 1073741824.0,
        "t" | "tb" => 1e12,
        "tib" => 1099511627776.0,
        _ => {
            return Err(Error::Usage(format!(
                "{s:?}: unknown size unit; use e.g. 500MB or 1GiB"
            )))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| Error::Usage(format!("{s:?} is not a size")))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(Error::Usage(format!("{s:?}: a size must be positive")));
    }
    let bytes = v * factor;
    if bytes >= u64::MAX as f64 {
        return Err(Error::Usage(format!("{s:?}: the size is out of range")));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_out_of_range_are_refused_and_wide_spans_resolve() {
        let e = parse_time("99999999999999999999").unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = parse_time("99999999999h").unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        assert!(parse_size("1e30TiB").is_err());
        let (lo, hi) = (i64::MIN, i64::MAX);
        assert_eq!(TimeSpec::Percent(50.0).resolve(lo, hi), 0);
        assert_eq!(TimeSpec::Percent(100.0).resolve(lo, hi), hi);
        assert_eq!(TimeSpec::Percent(0.0).resolve(lo, hi), lo);
    }

    #[test]
    fn times_sizes_and_durations_parse() {
        assert_eq!(parse_time("1500").unwrap(), TimeSpec::Absolute(1500));
        assert_eq!(parse_time("1.5s").unwrap(), TimeSpec::Offset(1_500_000_000));
        assert_eq!(parse_time("200ms").unwrap(), TimeSpec::Offset(200_000_000));
        assert_eq!(parse_time("300us").unwrap(), TimeSpec::Offset(300_000));
        assert_eq!(parse_time("25%").unwrap(), TimeSpec::Percent(25.0));
        assert!(parse_time("150%").is_err());
        assert!(parse_time("5 parsecs").is_err());
        assert_eq!(TimeSpec::Percent(50.0).resolve(100, 300), 200);
        assert_eq!(TimeSpec::Offset(5).resolve(100, 300), 105);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("500MB").unwrap(), 500_000_000);
        assert!(parse_size("0").is_err());
        assert_eq!(parse_duration("2ms").unwrap(), 2_000_000);
    }

    #[test]
    fn whole_numbers_with_a_unit_are_exact_to_the_last_nanosecond() {
        assert_eq!(parse_duration("9223372036854775807ns").unwrap(), i64::MAX);
        assert_eq!(
            parse_duration("9007199254740993ns").unwrap(),
            9_007_199_254_740_993
        );
        assert_eq!(parse_duration("+3s").unwrap(), 3_000_000_000);
        assert_eq!(
            parse_duration("9223372036s").unwrap(),
            9_223_372_036_000_000_000
        );
        for big in [
            "9223372036854775808ns",
            "9223372037s",
            "99999999999999999999999999999999999999999h",
        ] {
            let e = parse_duration(big).unwrap_err().to_string();
            assert!(e.contains("out of range"), "{big}: {e}");
        }
    }
}
