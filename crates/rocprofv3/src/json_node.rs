//! The one view of a parsed JSON record that the JSON reader's record handlers read
//! ([`Node`]), over two representations: serde_json's `Value` (what the strict import's
//! visitors hand over) and [`Flat`], a record parsed from the scanner's bytes with its
//! strings borrowed from them and each object's members in one `Vec`.
//!
//! Building a `Value` per record was about a third of a direct JSON read: a `String` per
//! key and per text, a B-tree per object, and every node freed again. A [`Flat`] record
//! costs one allocation per object or array and none per string without escapes; its
//! objects are a handful of members, found by a linear scan.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A JSON number as serde_json keeps it without arbitrary precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    I(i64),
    U(u64),
    F(f64),
}

impl Num {
    fn of(n: &serde_json::Number) -> Num {
        if let Some(i) = n.as_i64() {
            Num::I(i)
        } else if let Some(u) = n.as_u64() {
            Num::U(u)
        } else {
            Num::F(n.as_f64().unwrap_or(f64::NAN))
        }
    }

    pub fn as_i64(self) -> Option<i64> {
        match self {
            Num::I(i) => Some(i),
            Num::U(u) => i64::try_from(u).ok(),
            Num::F(_) => None,
        }
    }

    pub fn as_u64(self) -> Option<u64> {
        match self {
            Num::I(i) => u64::try_from(i).ok(),
            Num::U(u) => Some(u),
            Num::F(_) => None,
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::U(u) => u as f64,
            Num::F(f) => f,
        }
    }

    fn to_value(self) -> Value {
        match self {
            Num::I(i) => Value::from(i),
            Num::U(u) => Value::from(u),
            // A parsed number is finite; `from_f64` refuses only NaN and infinities.
            Num::F(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        }
    }
}

/// Printed as serde_json prints the same number, so messages name it alike.
impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::I(i) => write!(f, "{i}"),
            Num::U(u) => write!(f, "{u}"),
            Num::F(x) => match serde_json::Number::from_f64(*x) {
                Some(n) => write!(f, "{n}"),
                None => write!(f, "{x}"),
            },
        }
    }
}

/// What a node is, with its scalar or its elements.
pub(crate) enum Shape<'n, N> {
    Null,
    Bool(bool),
    Number(Num),
    Str(&'n str),
    Array(&'n [N]),
    Object,
}

/// A parsed JSON value as the record handlers read it.
pub(crate) trait Node: Sized {
    fn shape(&self) -> Shape<'_, Self>;
    /// The member `key` of an object (the last one, if repeated, as serde_json keeps it);
    /// `None` for an absent key or a node that is not an object.
    fn get(&self, key: &str) -> Option<&Self>;
    /// The same value as serde_json's `Value` (borrowed when it is one).
    fn to_value(&self) -> Cow<'_, Value>;

    fn is_object(&self) -> bool {
        matches!(self.shape(), Shape::Object)
    }

    /// The number as `f64`, as `Value::as_f64` gives it.
    fn as_f64(&self) -> Option<f64> {
        match self.shape() {
            Shape::Number(n) => Some(n.as_f64()),
            _ => None,
        }
    }

    /// Compact JSON text of the value, as `Value`'s `Display` writes it.
    fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

impl Node for Value {
    fn shape(&self) -> Shape<'_, Self> {
        match self {
            Value::Null => Shape::Null,
            Value::Bool(b) => Shape::Bool(*b),
            Value::Number(n) => Shape::Number(Num::of(n)),
            Value::String(s) => Shape::Str(s),
            Value::Array(a) => Shape::Array(a),
            Value::Object(_) => Shape::Object,
        }
    }

    fn get(&self, key: &str) -> Option<&Self> {
        Value::get(self, key)
    }

    fn to_value(&self) -> Cow<'_, Value> {
        Cow::Borrowed(self)
    }
}

/// A JSON value parsed from bytes that outlive it (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Flat<'a> {
    Null,
    Bool(bool),
    Number(Num),
    Str(Cow<'a, str>),
    Array(Vec<Flat<'a>>),
    Object(Vec<(Cow<'a, str>, Flat<'a>)>),
}

impl Node for Flat<'_> {
    fn shape(&self) -> Shape<'_, Self> {
        match self {
            Flat::Null => Shape::Null,
            Flat::Bool(b) => Shape::Bool(*b),
            Flat::Number(n) => Shape::Number(*n),
            Flat::Str(s) => Shape::Str(s),
            Flat::Array(a) => Shape::Array(a),
            Flat::Object(_) => Shape::Object,
        }
    }

    fn get(&self, key: &str) -> Option<&Self> {
        match self {
            Flat::Object(members) => {
                let key = key.as_bytes();
                members
                    .iter()
                    .rev()
                    .find(|(k, _)| same_key(k.as_bytes(), key))
                    .map(|(_, v)| v)
            }
            _ => None,
        }
    }

    fn to_value(&self) -> Cow<'_, Value> {
        Cow::Owned(match self {
            Flat::Null => Value::Null,
            Flat::Bool(b) => Value::Bool(*b),
            Flat::Number(n) => n.to_value(),
            Flat::Str(s) => Value::String(s.to_string()),
            Flat::Array(a) => Value::Array(a.iter().map(|x| x.to_value().into_owned()).collect()),
            Flat::Object(members) => {
                let mut map = serde_json::Map::new();
                // Later members replace earlier ones of the same key, as in a parse.
                for (k, v) in members {
                    map.insert(k.to_string(), v.to_value().into_owned());
                }
                Value::Object(map)
            }
        })
    }
}

/// Whether two member names are equal, ruling most out on their length and first byte:
/// a record's handler looks up a dozen names among a dozen members, and a `memcmp` call
/// for every candidate of the same length was a visible share of a direct JSON read.
#[inline]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.first() == b.first() && a == b
}

/// A string, borrowed from the input when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Flat<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Flat<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Flat<'de>, E> {
                Ok(Flat::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Flat<'de>, E> {
                Ok(Flat::Null)
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Flat<'de>, E> {
                Ok(Flat::Bool(b))
            }
            fn visit_i64<E: de::Error>(self, i: i64) -> Result<Flat<'de>, E> {
                Ok(Flat::Number(Num::I(i)))
            }
            fn visit_u64<E: de::Error>(self, u: u64) -> Result<Flat<'de>, E> {
                // serde_json keeps non-negative integers as unsigned; `Num` compares and
                // prints them alike either way.
                Ok(Flat::Number(match i64::try_from(u) {
                    Ok(i) => Num::I(i),
                    Err(_) => Num::U(u),
                }))
            }
            fn visit_f64<E: de::Error>(self, f: f64) -> Result<Flat<'de>, E> {
                Ok(Flat::Number(Num::F(f)))
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Flat<'de>, E> {
                Ok(Flat::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Flat<'de>, E> {
                Ok(Flat::Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Flat<'de>, E> {
                Ok(Flat::Str(Cow::Owned(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Flat<'de>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(x) = seq.next_element()? {
                    out.push(x);
                }
                Ok(Flat::Array(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Flat<'de>, A::Error> {
                // Records have a dozen members or fewer: one allocation for most.
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(12).min(64));
                while let Some(Text(k)) = map.next_key()? {
                    out.push((k, map.next_value()?));
                }
                Ok(Flat::Object(out))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat parse reads as the `Value` of the same text does, through [`Node`].
    #[test]
    fn flat_reads_as_value_reads() {
        let text = br#"{"a": 1, "b": -2, "c": 18446744073709551615, "d": 2.5e3, "e": "x\"y",
            "f": "plain", "g": [1, {"h": null}], "i": true, "a": 7, "j": {"handle": 9}}"#;
        // Out of f64's range: both parsers refuse it alike.
        assert!(serde_json::from_slice::<Flat>(b"[1e400]").is_err());
        assert!(serde_json::from_slice::<Value>(b"[1e400]").is_err());
        let flat: Flat = serde_json::from_slice(text).unwrap();
        let value: Value = serde_json::from_slice(text).unwrap();
        assert_eq!(*flat.to_value(), value);
        assert_eq!(flat.to_json(), value.to_string());
        for key in ["a", "b", "c", "d", "e", "f", "g", "i", "j", "missing"] {
            let (x, y) = (flat.get(key), value.get(key));
            assert_eq!(x.is_some(), y.is_some(), "{key}");
            let (Some(x), Some(y)) = (x, y) else { continue };
            assert_eq!(*x.to_value(), *y, "{key}");
            assert_eq!(x.as_f64(), Node::as_f64(y), "{key}");
            match (x.shape(), y.shape()) {
                (Shape::Number(a), Shape::Number(b)) => {
                    assert_eq!(a.to_string(), b.to_string(), "{key}");
                    assert_eq!((a.as_i64(), a.as_u64()), (b.as_i64(), b.as_u64()), "{key}");
                }
                (Shape::Str(a), Shape::Str(b)) => assert_eq!(a, b),
                (Shape::Array(a), Shape::Array(b)) => assert_eq!(a.len(), b.len()),
                (Shape::Bool(a), Shape::Bool(b)) => assert_eq!(a, b),
                (Shape::Object, Shape::Object) | (Shape::Null, Shape::Null) => {}
                _ => panic!("{key}: shapes differ"),
            }
        }
        // The repeated key reads as its last value, as in `Value`.
        assert_eq!(flat.get("a").and_then(|a| a.as_f64()), Some(7.0));
        // Strings without escapes are borrowed from the input.
        assert!(matches!(
            flat.get("f"),
            Some(Flat::Str(Cow::Borrowed("plain")))
        ));
        assert!(matches!(flat.get("e"), Some(Flat::Str(Cow::Owned(_)))));
    }
}
