//! Explaining a failed check: the dotted path and pi's message for each problem.

use serde_json::{Map, Value};

use super::*;

fn push(out: &mut Vec<ValidationError>, path: &[String], message: String) {
    let path = if path.is_empty() {
        "root".to_string()
    } else {
        path.join(".")
    };
    out.push(ValidationError { path, message });
}

/// Values of an enum as pi lists them: JSON, at most 20, then how many more.
fn list_values(values: &[Value]) -> String {
    if values.len() <= 20 {
        return js_stringify(&Value::Array(values.to_vec()));
    }
    let listed = js_stringify(&Value::Array(values[..20].to_vec()));
    format!(
        "{}, ... and {} more]",
        &listed[..listed.len() - 1],
        values.len() - 20
    )
}

pub(super) fn walk(
    schema: &Value,
    v: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<ValidationError>,
) {
    let node = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => {
            push(out, path, "no value is allowed here".into());
            return;
        }
        Value::Object(node) => node,
        _ => return,
    };
    if check(schema, v) {
        return;
    }
    if node.contains_key("type") {
        let types = types_of(node);
        if !types.iter().any(|t| matches_type(v, t)) {
            push(
                out,
                path,
                format!("expected {}, got {}", types.join(" or "), type_name(v)),
            );
            return;
        }
    }
    if let Some(Value::Array(values)) = node.get("enum") {
        if !values.iter().any(|m| same(m, v)) {
            push(
                out,
                path,
                format!("expected one of {}", list_values(values)),
            );
        }
    }
    if let Some(c) = node.get("const") {
        if !same(c, v) {
            push(out, path, format!("expected {}", js_stringify(c)));
        }
    }
    if let Value::String(s) = v {
        let n = code_points(s) as f64;
        if bound(node, "minLength").is_some_and(|m| n < m) {
            push(
                out,
                path,
                format!(
                    "expected at least {} characters",
                    number_text(&node["minLength"])
                ),
            );
        }
        if bound(node, "maxLength").is_some_and(|m| n > m) {
            push(
                out,
                path,
                format!(
                    "expected at most {} characters",
                    number_text(&node["maxLength"])
                ),
            );
        }
    }
    if let Some(f) = v.as_f64() {
        for message in number_problems(node, f) {
            push(out, path, message);
        }
    }
    if let Value::Object(obj) = v {
        walk_object(node, obj, path, out);
    }
    if let Value::Array(items) = v {
        walk_array(node, items, path, out);
    }
    if let Some(Value::Array(all)) = node.get("allOf") {
        for s in all {
            walk(s, v, path, out);
        }
    }
    if let Some(Value::Array(any)) = node.get("anyOf") {
        walk_union(any, v, path, out, false);
    }
    if let Some(Value::Array(one)) = node.get("oneOf") {
        walk_union(one, v, path, out, true);
    }
    if let Some(not) = node.get("not") {
        if check(not, v) {
            push(out, path, "must not match the schema in not".into());
        }
    }
}

fn walk_object(
    node: &Map<String, Value>,
    obj: &Map<String, Value>,
    path: &mut Vec<String>,
    out: &mut Vec<ValidationError>,
) {
    for k in required(node) {
        if !obj.contains_key(k) {
            path.push(k.to_string());
            push(out, path, "missing".into());
            path.pop();
        }
    }
    let props = properties(node);
    if let Some(props) = props {
        for (k, s) in props {
            if let Some(v) = obj.get(k) {
                path.push(k.clone());
                walk(s, v, path, out);
                path.pop();
            }
        }
    }
    if let Some(additional) = node.get("additionalProperties") {
        for (k, v) in obj {
            if props.is_some_and(|p| p.contains_key(k)) {
                continue;
            }
            path.push(k.clone());
            if additional == &Value::Bool(false) {
                push(out, path, "unknown field".into());
            } else {
                walk(additional, v, path, out);
            }
            path.pop();
        }
    }
    let n = obj.len() as f64;
    if bound(node, "minProperties").is_some_and(|m| n < m) {
        push(
            out,
            path,
            format!(
                "expected at least {} properties",
                number_text(&node["minProperties"])
            ),
        );
    }
    if bound(node, "maxProperties").is_some_and(|m| n > m) {
        push(
            out,
            path,
            format!(
                "expected at most {} properties",
                number_text(&node["maxProperties"])
            ),
        );
    }
}

fn walk_array(
    node: &Map<String, Value>,
    items: &[Value],
    path: &mut Vec<String>,
    out: &mut Vec<ValidationError>,
) {
    for (i, item) in items.iter().enumerate() {
        if let Some(s) = item_schema(node, i) {
            path.push(i.to_string());
            walk(s, item, path, out);
            path.pop();
        }
    }
    let n = items.len() as f64;
    if bound(node, "minItems").is_some_and(|m| n < m) {
        push(
            out,
            path,
            format!("expected at least {} items", number_text(&node["minItems"])),
        );
    }
    if bound(node, "maxItems").is_some_and(|m| n > m) {
        push(
            out,
            path,
            format!("expected at most {} items", number_text(&node["maxItems"])),
        );
    }
    if node.get("uniqueItems") == Some(&Value::Bool(true)) && !unique(items) {
        push(out, path, "expected unique items".into());
    }
}

fn walk_union(
    branches: &[Value],
    v: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<ValidationError>,
    one: bool,
) {
    let matches = branches.iter().filter(|s| check(s, v)).count();
    if matches == 1 || (!one && matches > 0) {
        return;
    }
    if matches > 1 {
        push(out, path, "matches more than one alternative".into());
        return;
    }
    // A tagged union (every branch has a distinct primitive `const` for one property) reports
    // the branch its tag selects.
    if let (Some((key, tags)), Value::Object(obj)) = (union_tag(branches), v) {
        match tags
            .iter()
            .position(|t| obj.get(&key).is_some_and(|x| same(x, t)))
        {
            Some(i) => walk(&branches[i], v, path, out),
            None => {
                path.push(key);
                push(out, path, format!("expected one of {}", list_values(&tags)));
                path.pop();
            }
        }
        return;
    }
    // Otherwise: the branch declaring most of the object's keys, then the deepest first error.
    let mut best: Option<(Vec<ValidationError>, usize)> = None;
    for s in branches {
        let mut errors = Vec::new();
        walk(s, v, path, &mut errors);
        if errors.is_empty() {
            continue;
        }
        let declared = match (v, s.get("properties").and_then(Value::as_object)) {
            (Value::Object(obj), Some(props)) => {
                obj.keys().filter(|k| props.contains_key(*k)).count()
            }
            _ => 0,
        };
        let better = match &best {
            None => true,
            Some((be, bd)) => {
                declared > *bd || (declared == *bd && errors[0].path.len() > be[0].path.len())
            }
        };
        if better {
            best = Some((errors, declared));
        }
    }
    match best {
        Some((errors, _)) => out.extend(errors),
        None => push(out, path, "matches no alternative".into()),
    }
}

fn union_tag(branches: &[Value]) -> Option<(String, Vec<Value>)> {
    let first = branches.first()?.get("properties")?.as_object()?;
    for key in first.keys() {
        let values: Option<Vec<Value>> = branches
            .iter()
            .map(|b| {
                b.get("properties")
                    .and_then(|p| p.get(key))
                    .and_then(|t| t.get("const"))
                    .filter(|c| !c.is_array() && !c.is_object())
                    .cloned()
            })
            .collect();
        if let Some(values) = values {
            let distinct = values
                .iter()
                .enumerate()
                .all(|(i, a)| values[i + 1..].iter().all(|b| !same(a, b)));
            if distinct {
                return Some((key.clone(), values));
            }
        }
    }
    None
}
