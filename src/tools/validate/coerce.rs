//! Coercion of tool arguments towards their schema before the check, in pi's three passes:
//! optional `null`s dropped, TypeBox's conversions, then primitive coercion by `type`.

use serde_json::{Map, Value};

use super::*;

/// `value` coerced towards `schema`, in pi's three passes: optional `null`s dropped, TypeBox's
/// conversions, then primitive coercion by `type`. A value that cannot be coerced is kept.
pub fn coerce(schema: &Value, value: &Value) -> Value {
    let without_nulls = drop_optional_nulls(value, schema);
    let converted = convert(schema, &without_nulls);
    coerce_types(&converted, schema)
}

fn drop_optional_nulls(value: &Value, schema: &Value) -> Value {
    let Some(node) = schema.as_object() else {
        return value.clone();
    };
    match value {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| match item_schema(node, i) {
                    Some(s) => drop_optional_nulls(item, s),
                    None => item.clone(),
                })
                .collect(),
        ),
        Value::Object(obj) => {
            let props = properties(node);
            let additional = node.get("additionalProperties").filter(|a| a.is_object());
            if additional.is_none() && props.is_none() {
                return value.clone();
            }
            let req = required(node);
            let mut out = obj.clone();
            if let Some(props) = props {
                for (k, prop) in props {
                    let Some(v) = obj.get(k) else { continue };
                    let is_ref = prop.get("$ref").is_some_and(Value::is_string);
                    if v.is_null()
                        && !req.contains(&k.as_str())
                        && !is_ref
                        && !check(prop, &Value::Null)
                    {
                        out.shift_remove(k);
                        continue;
                    }
                    out.insert(k.clone(), drop_optional_nulls(v, prop));
                }
            }
            if let Some(additional) = additional {
                for (k, v) in obj {
                    if props.is_some_and(|p| p.contains_key(k)) {
                        continue;
                    }
                    out.insert(k.clone(), drop_optional_nulls(v, additional));
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn try_string(v: &Value) -> Option<Value> {
    match v {
        Value::Bool(b) => Some(Value::String(b.to_string())),
        Value::Number(_) => Some(Value::String(number_text(v))),
        Value::Null => Some(Value::String("null".into())),
        Value::String(_) => Some(v.clone()),
        _ => None,
    }
}

const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

fn try_number(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(_) => num(v),
        Value::Null => Some(0.0),
        Value::String(s) => {
            let n = js_string_to_number(s);
            if n.is_finite() {
                return Some(n);
            }
            match s.to_lowercase().as_str() {
                "false" => return Some(0.0),
                "true" => return Some(1.0),
                _ => {}
            }
            // TypeBox's bigint literal `12n`.
            let digits = s.strip_suffix('n')?;
            let body = digits.strip_prefix('-').unwrap_or(digits);
            let canonical = body == "0" || (!body.starts_with('0') && !body.is_empty());
            if canonical && body.bytes().all(|b| b.is_ascii_digit()) {
                let n: f64 = digits.parse().ok()?;
                if n.abs() <= MAX_SAFE {
                    return Some(n);
                }
            }
            None
        }
        _ => None,
    }
}

fn try_boolean(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(_) => match num(v) {
            Some(0.0) => Some(false),
            Some(1.0) => Some(true),
            _ => None,
        },
        Value::Null => Some(false),
        Value::String(s) => {
            let l = s.to_lowercase();
            if l == "false" || s == "0" {
                Some(false)
            } else if l == "true" || s == "1" {
                Some(true)
            } else {
                None
            }
        }
        _ => None,
    }
}

fn try_null(v: &Value) -> Option<Value> {
    let to_null = match v {
        Value::Bool(b) => !*b,
        Value::Number(_) => num(v) == Some(0.0),
        Value::Null => true,
        Value::String(s) => {
            let l = s.to_lowercase();
            l == "undefined" || l == "null" || s.is_empty() || s == "0"
        }
        _ => false,
    };
    to_null.then_some(Value::Null)
}

fn convert_literal(literal: &Value, value: &Value) -> Value {
    if same(literal, value) {
        return value.clone();
    }
    let result = match literal {
        Value::String(_) => try_string(value),
        Value::Number(_) => try_number(value).map(number_value),
        Value::Bool(_) => try_boolean(value).map(Value::Bool),
        _ => None,
    };
    match result {
        Some(r) if same(&r, literal) => r,
        _ => value.clone(),
    }
}

fn convert(schema: &Value, value: &Value) -> Value {
    let Some(node) = schema.as_object() else {
        return value.clone();
    };
    if node.get("$ref").is_some_and(Value::is_string) {
        return value.clone();
    }
    if let Some(c) = node.get("const") {
        return convert_literal(c, value);
    }
    if let Some(Value::Array(values)) = node.get("enum") {
        if values.iter().any(|m| same(m, value)) {
            return value.clone();
        }
        for m in values {
            let candidate = convert_literal(m, value);
            if !same(&candidate, value) && check(schema, &candidate) {
                return candidate;
            }
        }
        return value.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = node.get(key) {
            if branches.iter().any(|b| check(b, value)) {
                return convert_members(node, value);
            }
            for b in branches {
                let candidate = convert_members(node, &convert(b, value));
                if check(schema, &candidate) {
                    return candidate;
                }
            }
            return convert_members(node, value);
        }
    }
    if let Some(Value::Array(all)) = node.get("allOf") {
        let mut next = value.clone();
        for s in all {
            next = convert(s, &next);
        }
        return convert_members(node, &next);
    }
    match node.get("type") {
        Some(Value::String(t)) => match t.as_str() {
            "string" => try_string(value).unwrap_or_else(|| value.clone()),
            "number" => try_number(value).map_or_else(|| value.clone(), number_value),
            "integer" => {
                try_number(value).map_or_else(|| value.clone(), |f| number_value(f.trunc()))
            }
            "boolean" => try_boolean(value).map_or_else(|| value.clone(), Value::Bool),
            "null" => try_null(value).unwrap_or_else(|| value.clone()),
            "array" => convert_array(node, value),
            "object" => convert_object(node, value),
            _ => value.clone(),
        },
        None if node.contains_key("properties") || node.contains_key("patternProperties") => {
            convert_object(node, value)
        }
        None if node.contains_key("items") || node.contains_key("prefixItems") => {
            convert_array(node, value)
        }
        _ => value.clone(),
    }
}

fn convert_members(node: &Map<String, Value>, value: &Value) -> Value {
    let declares = node.contains_key("properties")
        || node.contains_key("patternProperties")
        || node.contains_key("additionalProperties");
    if declares {
        convert_object(node, value)
    } else {
        value.clone()
    }
}

fn convert_array(node: &Map<String, Value>, value: &Value) -> Value {
    let prefix = match (node.get("items"), node.get("prefixItems")) {
        (Some(Value::Array(p)), _) => Some((p, None)),
        (items, Some(Value::Array(p))) => Some((p, items)),
        _ => None,
    };
    if let Some((prefix, rest)) = prefix {
        let Value::Array(items) = value else {
            return value.clone();
        };
        return Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| match prefix.get(i).or(rest) {
                    Some(s) => convert(s, item),
                    None => item.clone(),
                })
                .collect(),
        );
    }
    match (value, node.get("items")) {
        (Value::Array(_), None) => value.clone(),
        (Value::Array(items), Some(s)) => {
            Value::Array(items.iter().map(|i| convert(s, i)).collect())
        }
        (_, Some(s)) if s.is_object() => Value::Array(vec![convert(s, value)]),
        _ => Value::Array(vec![value.clone()]),
    }
}

fn convert_object(node: &Map<String, Value>, value: &Value) -> Value {
    let Value::Object(obj) = value else {
        return value.clone();
    };
    let props = properties(node);
    let additional = node.get("additionalProperties").filter(|a| a.is_object());
    let mut out = Map::new();
    for (k, v) in obj {
        let next = match props.and_then(|p| p.get(k)) {
            Some(s) => convert(s, v),
            None => match additional {
                Some(a) => convert(a, v),
                None => v.clone(),
            },
        };
        out.insert(k.clone(), next);
    }
    Value::Object(out)
}

fn coerce_types(value: &Value, schema: &Value) -> Value {
    let Some(node) = schema.as_object() else {
        return value.clone();
    };
    let mut next = value.clone();
    if let Some(Value::Array(all)) = node.get("allOf") {
        for s in all {
            next = coerce_types(&next, s);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = node.get(key) {
            if !branches.iter().any(|b| check(b, &next)) {
                for b in branches {
                    let coerced = coerce_types(&next, b);
                    if check(b, &coerced) {
                        next = coerced;
                        break;
                    }
                }
            }
        }
    }
    let types = types_of(node);
    let member = types.len() > 1 && types.iter().any(|t| matches_type(&next, t));
    if !types.is_empty() && !member {
        for t in &types {
            let candidate = coerce_primitive(&next, t);
            if candidate != next {
                next = candidate;
                break;
            }
        }
    }
    if types.contains(&"object") {
        if let Value::Object(obj) = &next {
            let props = properties(node);
            let additional = node.get("additionalProperties").filter(|a| a.is_object());
            let mut out = obj.clone();
            for (k, v) in obj {
                match (props.and_then(|p| p.get(k)), additional) {
                    (Some(s), _) => {
                        out.insert(k.clone(), coerce_types(v, s));
                    }
                    (None, Some(a)) => {
                        out.insert(k.clone(), coerce_types(v, a));
                    }
                    _ => {}
                }
            }
            next = Value::Object(out);
        }
    }
    if types.contains(&"array") {
        if let Value::Array(items) = &next {
            next = Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| match item_schema(node, i) {
                        Some(s) if s.is_object() => coerce_types(item, s),
                        _ => item.clone(),
                    })
                    .collect(),
            );
        }
    }
    next
}

fn coerce_primitive(value: &Value, t: &str) -> Value {
    match t {
        "number" | "integer" => match value {
            Value::Null => Value::from(0),
            Value::String(s) if !s.trim_matches(is_js_whitespace).is_empty() => {
                let n = js_string_to_number(s);
                let ok = if t == "number" {
                    n.is_finite()
                } else {
                    n.is_finite() && n.fract() == 0.0
                };
                if ok {
                    number_value(n)
                } else {
                    value.clone()
                }
            }
            Value::Bool(b) => Value::from(i64::from(*b)),
            _ => value.clone(),
        },
        "boolean" => match value {
            Value::Null => Value::Bool(false),
            Value::String(s) if s == "true" => Value::Bool(true),
            Value::String(s) if s == "false" => Value::Bool(false),
            Value::Number(_) if num(value) == Some(1.0) => Value::Bool(true),
            Value::Number(_) if num(value) == Some(0.0) => Value::Bool(false),
            _ => value.clone(),
        },
        "string" => match value {
            Value::Null => Value::String(String::new()),
            Value::Number(_) => Value::String(number_text(value)),
            Value::Bool(b) => Value::String(b.to_string()),
            _ => value.clone(),
        },
        "null" => match value {
            Value::String(s) if s.is_empty() => Value::Null,
            Value::Bool(false) => Value::Null,
            Value::Number(_) if num(value) == Some(0.0) => Value::Null,
            _ => value.clone(),
        },
        _ => value.clone(),
    }
}
