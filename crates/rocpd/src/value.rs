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
        ValueRef::Real(f) if f.is_finite() => Ok(Some(f as i64)),
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

/// Appends `v` to `b`; `Err` says why it does not fit.
pub(crate) fn append(b: &mut ColumnBuilder, v: ValueRef<'_>, nullable: bool) -> Result<(), String> {
    if matches!(v, ValueRef::Null) && !nullable {
        return Err("is NULL but the model requires a value".into());
    }
    match b {
        ColumnBuilder::I64(b) => b.append_option(to_i64(v)?),
        ColumnBuilder::U32(b) => match to_i64(v)? {
            Some(i) => b.append_value(
                u32::try_from(i).map_err(|_| format!("value {i} does not fit 32 bits"))?,
            ),
            None => b.append_null(),
        },
        ColumnBuilder::F64(b) => b.append_option(to_f64(v)?),
        ColumnBuilder::Bool(b) => b.append_option(to_i64(v)?.map(|i| i != 0)),
        ColumnBuilder::Str(b) => match v {
            ValueRef::Text(t) => match std::str::from_utf8(t) {
                Ok(s) => b.append_value(s),
                Err(_) => b.append_value(String::from_utf8_lossy(t)),
            },
            other => b.append_option(to_text(other)),
        },
    }
    Ok(())
}
