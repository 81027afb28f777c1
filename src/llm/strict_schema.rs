//! Strict JSON-schema tool sampling (pi's `constrained-sampling.js`): tools that ask for it
//! ("prefer", pi's read/bash/edit/write) are sent with `strict: true` and a strict-form schema
//! when the provider supports strict tools and the schema can be made strict; otherwise they
//! fall back to the plain schema.
//!
//! The strict form lists every property in `required`, turns properties that were optional into
//! `{"anyOf":[<schema>,{"type":"null"}]}` (unless they already accept null) and sets
//! `additionalProperties:false` on every object.

use serde_json::{json, Map, Value};

use super::types::ToolSpec;

/// A provider's extra rule rejecting keywords its strict mode does not accept (Anthropic's).
pub(crate) type UnsupportedKeyword = fn(&str, &Value) -> bool;

/// Keywords no strict mode accepts.
const UNSUPPORTED: &[&str] = &[
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
];

/// Whether `tool` goes out strict: `Some(true)` when it asks for strict sampling, the provider
/// supports strict tools and its schema has a strict form; `None` otherwise (pi's
/// `resolveJsonSchemaStrictSampling` for "prefer" tools, the only kind pi's tools declare).
pub(crate) fn strict_sampling(
    tool: &ToolSpec,
    supports_strict: bool,
    unsupported: Option<UnsupportedKeyword>,
) -> Option<bool> {
    if !tool.strict_prefer || !supports_strict {
        return None;
    }
    make_strict(&tool.parameters, unsupported)
        .ok()
        .map(|_| true)
}

/// The parameters to send: the strict form when `strict` is `Some(true)`.
pub(crate) fn parameters(
    tool: &ToolSpec,
    strict: Option<bool>,
    unsupported: Option<UnsupportedKeyword>,
) -> Value {
    if strict == Some(true) {
        if let Ok(v) = make_strict(&tool.parameters, unsupported) {
            return v;
        }
    }
    tool.parameters.clone()
}

/// The strict form of a tool schema, or why it has none.
pub(crate) fn make_strict(
    schema: &Value,
    unsupported: Option<UnsupportedKeyword>,
) -> Result<Value, String> {
    let mut cloned = schema.clone();
    if !cloned.is_object() {
        return Err("root schema must have type object".into());
    }
    strict_node(&mut cloned, unsupported)?;
    if cloned.get("type").and_then(Value::as_str) != Some("object") {
        return Err("root schema must have type object".into());
    }
    Ok(cloned)
}

fn is_structured(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return false;
    };
    let types: Vec<&str> = match o.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    types.contains(&"object")
        || types.contains(&"array")
        || o.contains_key("properties")
        || o.contains_key("items")
}

fn allows_null(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return false;
    };
    match o.get("type") {
        Some(Value::String(t)) if t == "null" => return true,
        Some(Value::Array(a)) if a.iter().any(|t| t == "null") => return true,
        _ => {}
    }
    if o.get("const") == Some(&Value::Null)
        || o.get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
    {
        return true;
    }
    o.get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(allows_null))
}

fn strict_node(schema: &mut Value, unsupported: Option<UnsupportedKeyword>) -> Result<(), String> {
    let Some(o) = schema.as_object_mut() else {
        return Err("boolean schemas are unsupported".into());
    };
    if let Some(k) = UNSUPPORTED.iter().find(|k| o.contains_key(**k)) {
        return Err(format!("{k} schemas are unsupported"));
    }
    if let Some(rule) = unsupported {
        if let Some((k, _)) = o.iter().find(|(k, v)| rule(k, v)) {
            return Err(format!("{k} is unsupported"));
        }
    }
    if !o.contains_key("type") && !o.contains_key("anyOf") && !o.contains_key("enum") {
        return Err("schemas without a type are unsupported".into());
    }
    if let Some(any_of) = o.get_mut("anyOf") {
        let Some(variants) = any_of.as_array_mut().filter(|v| !v.is_empty()) else {
            return Err("anyOf must contain at least one schema".into());
        };
        for v in variants {
            if is_structured(v) {
                return Err("object and array unions are unsupported".into());
            }
            strict_node(v, unsupported)?;
        }
    }
    if let Some(items) = o.get_mut("items") {
        if items.is_array() {
            return Err("tuple schemas are unsupported".into());
        }
        strict_node(items, unsupported)?;
    }
    let is_object = o.get("type").and_then(Value::as_str) == Some("object");
    if o.contains_key("properties") && !is_object {
        return Err("properties require type object".into());
    }
    if !is_object {
        return Ok(());
    }
    if o.get("additionalProperties")
        .is_some_and(|a| *a != Value::Bool(false))
    {
        return Err("schema-valued or true additionalProperties is unsupported".into());
    }
    let required: Vec<String> = match o.get("required") {
        None => Vec::new(),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(_) => return Err("object required must be a string array".into()),
    };
    let mut empty = Map::new();
    let properties = match o.get_mut("properties") {
        None => &mut empty,
        Some(Value::Object(p)) => p,
        Some(_) => return Err("object properties must be a schema map".into()),
    };
    if required.iter().any(|k| !properties.contains_key(k)) {
        return Err("required contains an unknown property".into());
    }
    let names: Vec<String> = properties.keys().cloned().collect();
    // Replaced in place: keys keep their positions, as pi assigns into the same objects.
    for (key, property) in properties.iter_mut() {
        strict_node(property, unsupported)?;
        if !required.contains(key) && !allows_null(property) {
            let inner = property.take();
            *property = json!({"anyOf": [inner, {"type": "null"}]});
        }
    }
    o.insert(
        "required".into(),
        Value::Array(names.into_iter().map(Value::String).collect()),
    );
    o.insert("additionalProperties".into(), Value::Bool(false));
    Ok(())
}

/// Anthropic's extra strict-mode restrictions (`isAnthropicStrictUnsupportedKeyword`).
pub(crate) fn anthropic_unsupported(key: &str, value: &Value) -> bool {
    const KEYWORDS: &[&str] = &[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "maxItems",
        "uniqueItems",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
    ];
    const FORMATS: &[&str] = &[
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    if KEYWORDS.contains(&key) {
        return true;
    }
    match key {
        "minItems" => !(value == &json!(0) || value == &json!(1)),
        "format" => !value.as_str().is_some_and(|f| FORMATS.contains(&f)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(parameters: Value) -> ToolSpec {
        ToolSpec {
            name: "t".into(),
            description: String::new(),
            parameters,
            strict_prefer: true,
        }
    }

    #[test]
    fn optional_properties_become_nullable_and_required() {
        let bash = json!({"type":"object","required":["command"],"properties":{
            "command":{"type":"string","description":"Bash command to execute"},
            "timeout":{"type":"number","description":"Timeout in seconds (optional, no default timeout)"}}});
        let t = tool(bash);
        assert_eq!(strict_sampling(&t, true, None), Some(true));
        assert_eq!(
            parameters(&t, Some(true), None),
            json!({"type":"object","required":["command","timeout"],"properties":{
                "command":{"type":"string","description":"Bash command to execute"},
                "timeout":{"anyOf":[{"type":"number","description":"Timeout in seconds (optional, no default timeout)"},{"type":"null"}]}},
                "additionalProperties":false})
        );
        // Nested objects in arrays get the same treatment.
        let edit = json!({"type":"object","required":["edits"],"properties":{"edits":{"type":"array",
            "items":{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}}}});
        let strict = make_strict(&edit, None).unwrap();
        assert_eq!(
            strict["properties"]["edits"]["items"]["additionalProperties"],
            false
        );
    }

    #[test]
    fn unsupported_schemas_fall_back() {
        for schema in [
            json!({"type":"object","properties":{"a":{"$ref":"#/x"}}}),
            json!({"type":"object","properties":{"a":{"anyOf":[{"type":"object"},{"type":"null"}]}}}),
            json!({"type":"object","additionalProperties":true}),
            json!({"type":"object","properties":{"a":{"description":"untyped"}}}),
            json!({"type":"object","required":["b"],"properties":{"a":{"type":"string"}}}),
            json!({"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}}),
            json!({"type":"string"}),
            json!(true),
        ] {
            let t = tool(schema.clone());
            assert_eq!(strict_sampling(&t, true, None), None, "{schema}");
            assert_eq!(parameters(&t, None, None), schema);
        }
        // Not asked for, or not supported: never strict.
        let plain = json!({"type":"object","properties":{}});
        let mut t = tool(plain.clone());
        assert_eq!(strict_sampling(&t, false, None), None);
        t.strict_prefer = false;
        assert_eq!(strict_sampling(&t, true, None), None);
        // Anthropic rejects numeric bounds.
        let bounded =
            tool(json!({"type":"object","properties":{"n":{"type":"number","minimum":1}}}));
        assert_eq!(strict_sampling(&bounded, true, None), Some(true));
        assert_eq!(
            strict_sampling(&bounded, true, Some(anthropic_unsupported)),
            None
        );
    }
}
