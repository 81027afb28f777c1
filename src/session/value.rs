//! Parsing JSON into `serde_json::Value`s whose containers are allocated at their exact size.
//!
//! `serde_json`'s own `Value` parser grows every object and array by doubling, so a parsed
//! message keeps up to half of each container's slots unused; the agent's context (every
//! message of the active branch, as `Value`s) is dominated by such small objects (`usage`,
//! `cost`, content blocks). Here the items of a container are first collected on a scratch stack
//! shared by the whole parse, then moved into a container of exactly their number. The result
//! is equal (`==`, key order included) to what `serde_json::from_str::<Value>` returns.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The scratch stacks of one parse (reusable across parses).
#[derive(Default)]
pub struct Scratch {
    entries: Vec<(String, Value)>,
    items: Vec<Value>,
}

/// Parses one JSON value with exact-size containers.
pub struct CompactSeed<'s>(pub &'s mut Scratch);

/// `s` parsed with exact-size containers (same result as `serde_json::from_str::<Value>`).
pub fn from_str(s: &str) -> Result<Value, serde_json::Error> {
    let mut scratch = Scratch::default();
    let mut de = serde_json::Deserializer::from_str(s);
    let v = CompactSeed(&mut scratch).deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

impl<'de> DeserializeSeed<'de> for CompactSeed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CompactSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, mut v: String) -> Result<Value, E> {
        v.shrink_to_fit();
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let scratch = self.0;
        let start = scratch.items.len();
        while let Some(v) = seq.next_element_seed(CompactSeed(&mut *scratch))? {
            scratch.items.push(v);
        }
        // `Drain` knows its length: the vector is allocated once, at its exact size.
        let items: Vec<Value> = scratch.items.drain(start..).collect();
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let scratch = self.0;
        let start = scratch.entries.len();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(CompactSeed(&mut *scratch))?;
            scratch.entries.push((k, v));
        }
        let mut m = Map::with_capacity(scratch.entries.len() - start);
        // `insert` keeps the first position of a repeated key and its last value, like
        // `JSON.parse` and serde_json.
        for (k, v) in scratch.entries.drain(start..) {
            m.insert(k, v);
        }
        Ok(Value::Object(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_value_as_serde_json() {
        for text in [
            r#"{"role":"assistant","content":[{"type":"text","text":"a\"b\u00e9\ud83d\ude00"},{"type":"toolCall","id":"t","arguments":{}}],"usage":{"input":1,"cost":{"total":1.5e-7,"neg":-3,"big":18446744073709551615}},"x":null,"y":[true,false,[],[[1]]]}"#,
            r#"{"a":1,"b":2,"a":3}"#,
            r#"[]"#,
            r#""s""#,
            r#"0.1"#,
            r#"-0"#,
            r#"1e400"#,
        ] {
            let ours = from_str(text);
            let theirs = serde_json::from_str::<Value>(text);
            match (ours, theirs) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{text}");
                    assert_eq!(a.to_string(), b.to_string(), "{text}");
                }
                (Err(_), Err(_)) => {}
                (a, b) => panic!("{text}: {a:?} vs {b:?}"),
            }
        }
        assert!(from_str("{} x").is_err());
        assert!(from_str(r#"{"a":[1,}"#).is_err());
    }

    #[test]
    fn containers_are_exact() {
        let v = from_str(r#"{"a":[1,2,3,4,5],"b":{"c":1,"d":2,"e":3,"f":4,"g":5}}"#).unwrap();
        let Value::Array(a) = &v["a"] else { panic!() };
        assert_eq!(a.capacity(), 5);
    }
}
