//! Converting SQLite values into model values, tolerating the type looseness of real
//! files (integers stored as text, hex addresses, JSON stored as blobs) and rejecting
//! what cannot be converted with a message naming the column.

use rocpd_model::ColumnBuilder;
use rusqlite::types::ValueRef;

/// Converts to an integer; `Err` names what was found.
pub(crate) fn to_i64(v: ValueRef<'_>) -> Result<Option<i64>, String> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(i) => Ok(Some(i)),
        // A float that is a whole number in range is taken; anything else would change the
        // value silently (a saturating or truncating cast).
        ValueRef::Real(f)
            if f.fract() == 0.0
                && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) =>
        {
            Ok(Some(f as i64))
        }
        ValueRef::Real(f) => Err(format!("expected an integer, found {f}")),
        ValueRef::Text(t) => {
            let s = String::from_utf8_lossy(t);
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16).ok().map(|u| u as i64),
                None => s
                    .parse::<i64>()
                    .ok()
                    .or_else(|| s.parse::<u64>().ok().map(|u| u as i64)),
            };
            parsed
                .map(Some)
                .ok_or_else(|| format!("expected an integer, found text {s:?}"))
        }
        ValueRef::Blob(_) => Err("expected an integer, found a blob".into()),
    }
}

/// Converts a time (`start`, `end`): as [`to_i64`], but text and blobs are refused. SQLite
/// sorts them after every number, so rows holding them would come out of time order (and
/// text past `i64` would read as a negative time).
pub(crate) fn to_time(v: ValueRef<'_>) -> Result<Option<i64>, String> {
    match v {
        ValueRef::Text(_) | ValueRef::Blob(_) => Err(
            "a time stored as text or a blob, which SQLite sorts after every number: \
             times must be integers"
                .into(),
        ),
        v => to_i64(v),
    }
}

/// Converts to a float.
pub(crate) fn to_f64(v: ValueRef<'_>) -> Result<Option<f64>, String> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(i) => Ok(Some(i as f64)),
        ValueRef::Real(f) => Ok(Some(f)),
        ValueRef::Text(t) => {
            let s = String::from_utf8_lossy(t);
            s.trim()
                .parse::<f64>()
                .map(Some)
                .map_err(|_| format!("expected a number, found text {s:?}"))
        }
        ValueRef::Blob(_) => Err("expected a number, found a blob".into()),
    }
}

/// Converts to text (numbers are printed; blobs are read as UTF-8, lossily).
pub(crate) fn to_text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
    }
}

/// Appends `v` to `b`; `Err` says why it does not fit. A value that reads as missing
/// (NULL, or empty text in a numeric column) is refused where the model requires one.
pub(crate) fn append(b: &mut ColumnBuilder, v: ValueRef<'_>, nullable: bool) -> Result<(), String> {
    fn required<T>(x: Option<T>, nullable: bool) -> Result<Option<T>, String> {
        if x.is_none() && !nullable {
            return Err("is missing (NULL or empty) but the model requires a value".into());
        }
        Ok(x)
    }
    match b {
        ColumnBuilder::I64(b) => b.append_option(required(to_i64(v)?, nullable)?),
        ColumnBuilder::U32(b) => match required(to_i64(v)?, nullable)? {
            Some(i) => b.append_value(
                u32::try_from(i).map_err(|_| format!("value {i} does not fit 32 bits"))?,
            ),
            None => b.append_null(),
        },
        ColumnBuilder::F64(b) => b.append_option(required(to_f64(v)?, nullable)?),
        ColumnBuilder::Bool(b) => b.append_option(required(to_i64(v)?, nullable)?.map(|i| i != 0)),
        ColumnBuilder::Str(b) => match v {
            ValueRef::Text(t) => match std::str::from_utf8(t) {
                Ok(s) => b.append_value(s),
                Err(_) => b.append_value(String::from_utf8_lossy(t)),
            },
            other => b.append_option(required(to_text(other), nullable)?),
        },
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::Int64Builder;

    #[test]
    fn loose_integers_convert_and_missing_required_values_are_refused() {
        assert_eq!(to_i64(ValueRef::Text(b"0x10")), Ok(Some(16)));
        assert_eq!(to_i64(ValueRef::Text(b" 42 ")), Ok(Some(42)));
        assert_eq!(
            to_i64(ValueRef::Text(b"18446744073709551615")),
            Ok(Some(-1))
        );
        assert!(to_i64(ValueRef::Text(b"abc")).is_err());
        let mut b = ColumnBuilder::I64(Int64Builder::new());
        assert!(append(&mut b, ValueRef::Text(b""), false).is_err());
        assert!(append(&mut b, ValueRef::Null, false).is_err());
        assert!(append(&mut b, ValueRef::Null, true).is_ok());
    }
}
