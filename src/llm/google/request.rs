//! Request building for Gemini: model families, thinking config, content/tool conversion,
//! the body, endpoint and headers.

use super::*;
use crate::llm::strict_schema;

// ---------------------------------------------------------------------------------------------
// Model families

/// The Gemini major version of ids like `gemini-2.5-pro` / `gemini-live-3-…`.
fn gemini_major_version(id: &str) -> Option<u32> {
    let id = id.to_ascii_lowercase();
    let rest = id
        .strip_prefix("gemini-live-")
        .or_else(|| id.strip_prefix("gemini-"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Models that need explicit tool-call ids in `functionCall` / `functionResponse`.
fn requires_tool_call_id(id: &str) -> bool {
    id.starts_with("claude-")
        || id.starts_with("gpt-oss-")
        || gemini_major_version(id).is_some_and(|v| v >= 3)
}

/// Gemini 3+ takes images inside `functionResponse.parts`.
fn supports_multimodal_function_response(id: &str) -> bool {
    gemini_major_version(id).is_none_or(|v| v >= 3)
}

/// Whether the model uses Gemini's discrete `thinkingLevel` instead of `thinkingBudget`
/// (Gemini 3 Pro/Flash, Gemini 4+, the `-latest` flash aliases, Gemma 4).
pub fn uses_thinking_level(model: &Model) -> bool {
    let id = model.id.to_ascii_lowercase();
    let gemini_3 = id.match_indices("gemini-3").any(|(i, m)| {
        let mut rest = &id[i + m.len()..];
        if let Some(r) = rest.strip_prefix('.') {
            let digits = r.chars().take_while(char::is_ascii_digit).count();
            if digits == 0 {
                return false;
            }
            rest = &r[digits..];
        }
        rest.starts_with("-pro") || rest.starts_with("-flash")
    });
    let gemini_4_plus = id.match_indices("gemini-").any(|(i, m)| {
        let rest = &id[i + m.len()..];
        let mut chars = rest.chars();
        match (chars.next(), chars.next()) {
            (Some(a @ '4'..='9'), _) => a.is_ascii_digit(),
            (Some('1'..='9'), Some(b)) => b.is_ascii_digit(),
            _ => false,
        }
    });
    let gemma_4 = id.contains("gemma4") || id.contains("gemma-4");
    gemini_3
        || gemini_4_plus
        || id == "gemini-flash-latest"
        || id == "gemini-flash-lite-latest"
        || gemma_4
}

/// pi's `resolveGoogleThinkingLevel`: the model's mapping (lowercased) or the level itself, one
/// of minimal/low/medium/high.
fn resolve_google_level(model: &Model, level: ThinkingLevel) -> Result<ThinkingLevel, String> {
    let (resolved, shown) = match level_mapping(model, level) {
        LevelMapping::Value(v) => (v.to_ascii_lowercase(), v.to_owned()),
        LevelMapping::Unsupported => (level.as_str().to_owned(), "null".to_owned()),
        LevelMapping::Unmapped => (level.as_str().to_owned(), "undefined".to_owned()),
    };
    match ThinkingLevel::parse(&resolved) {
        Some(
            l @ (ThinkingLevel::Minimal
            | ThinkingLevel::Low
            | ThinkingLevel::Medium
            | ThinkingLevel::High),
        ) => Ok(l),
        _ => Err(format!(
            "Unsupported Google thinking level mapping for {}/{}: {} -> {shown}",
            model.provider,
            model.id,
            level.as_str()
        )),
    }
}

fn google_level_name(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Minimal => "MINIMAL",
        ThinkingLevel::Low => "LOW",
        ThinkingLevel::Medium => "MEDIUM",
        _ => "HIGH",
    }
}

/// The thinking budget of a level: the user's setting when it differs from pi's default,
/// else the Gemini 2.5 family budgets, else `-1` (dynamic).
fn google_budget(model: &Model, level: ThinkingLevel, custom: &ThinkingBudgets) -> i64 {
    let defaults = ThinkingBudgets::default();
    let (user, default) = match level {
        ThinkingLevel::Minimal => (custom.minimal, defaults.minimal),
        ThinkingLevel::Low => (custom.low, defaults.low),
        ThinkingLevel::Medium => (custom.medium, defaults.medium),
        _ => (custom.high, defaults.high),
    };
    // `ThinkingBudgets` is always filled in; a value other than the default was set by the
    // user (pi applies only user-set budgets here).
    if user != default {
        return i64::try_from(user).unwrap_or(i64::MAX);
    }
    let table: Option<[i64; 4]> = if model.id.contains("2.5-pro") {
        Some([128, 2048, 8192, 32768])
    } else if model.id.contains("2.5-flash-lite") {
        Some([512, 2048, 8192, 24576])
    } else if model.id.contains("2.5-flash") {
        Some([128, 2048, 8192, 24576])
    } else {
        None
    };
    let Some(t) = table else {
        return -1;
    };
    match level {
        ThinkingLevel::Minimal => t[0],
        ThinkingLevel::Low => t[1],
        ThinkingLevel::Medium => t[2],
        _ => t[3],
    }
}

/// `generationConfig.thinkingConfig` for the request (data-model.md §6.1), `None` for
/// non-reasoning models.
pub fn thinking_config(model: &Model, opts: &StreamOptions) -> Result<Option<Value>, String> {
    if !model.reasoning {
        return Ok(None);
    }
    // pi's agent passes no reasoning option at `off` (no clamping then).
    let level = match opts.thinking_level {
        ThinkingLevel::Off => ThinkingLevel::Off,
        requested => effective_thinking_level(model, requested),
    };
    if level == ThinkingLevel::Off {
        if !uses_thinking_level(model) {
            return Ok(Some(json!({"thinkingBudget": 0})));
        }
        let fallback = effective_thinking_level(model, ThinkingLevel::Off);
        if fallback == ThinkingLevel::Off {
            return Ok(Some(json!({"thinkingBudget": 0})));
        }
        let resolved = resolve_google_level(model, fallback)?;
        return Ok(Some(json!({"thinkingLevel": google_level_name(resolved)})));
    }
    let resolved = resolve_google_level(model, level)?;
    Ok(Some(if uses_thinking_level(model) {
        json!({"includeThoughts": true, "thinkingLevel": google_level_name(resolved)})
    } else {
        json!({"includeThoughts": true,
            "thinkingBudget": google_budget(model, resolved, &opts.thinking_budgets)})
    }))
}

// ---------------------------------------------------------------------------------------------
// Request

/// Thought signatures must be base64 (the API's `TYPE_BYTES`).
fn valid_signature(sig: Option<&str>) -> Option<&str> {
    let s = sig.filter(|s| !s.is_empty())?;
    if s.len() % 4 != 0 {
        return None;
    }
    let body = s.trim_end_matches('=');
    let pad = s.len() - body.len();
    let ok = pad <= 2
        && !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    ok.then_some(s)
}

fn inline_data(mime_type: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": mime_type, "data": data}})
}

/// The `contents` array (pi's `convertMessages`).
pub fn convert_contents(model: &Model, ctx: &LlmContext) -> Vec<Value> {
    let mut messages = ctx.messages.clone();
    if requires_tool_call_id(&model.id) {
        normalize_tool_call_ids(&mut messages, model, |id| {
            let mut s: String = id
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c.to_string()
                    } else {
                        "_".repeat(c.len_utf16())
                    }
                })
                .collect();
            s.truncate(64);
            s
        });
    }
    let include_id = requires_tool_call_id(&model.id);
    let mut contents: Vec<Value> = Vec::new();
    for msg in &messages {
        match msg {
            LlmMessage::User { content, .. } => {
                let parts: Vec<Value> = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => Some(json!({"text": text})),
                        ContentBlock::Image { data, mime_type } => {
                            Some(inline_data(mime_type, data))
                        }
                        _ => None,
                    })
                    .collect();
                if parts.is_empty() {
                    continue;
                }
                contents.push(json!({"parts": parts, "role": "user"}));
            }
            // No Gemini model keeps system messages in place.
            LlmMessage::System(_) => {}
            LlmMessage::Assistant(a) => {
                let same = a.provider == model.provider && a.model == model.id;
                let mut parts = Vec::new();
                for block in &a.content {
                    match block {
                        ContentBlock::Text {
                            text,
                            text_signature,
                        } => {
                            let sig = valid_signature(text_signature.as_deref()).filter(|_| same);
                            if text.trim().is_empty() && sig.is_none() {
                                continue;
                            }
                            let mut p = json!({"text": text});
                            if let Some(s) = sig {
                                p["thoughtSignature"] = json!(s);
                            }
                            parts.push(p);
                        }
                        ContentBlock::Thinking {
                            thinking,
                            thinking_signature,
                            ..
                        } => {
                            if same {
                                let sig = valid_signature(thinking_signature.as_deref());
                                if thinking.trim().is_empty() && sig.is_none() {
                                    continue;
                                }
                                let mut p = json!({"text": thinking, "thought": true});
                                if let Some(s) = sig {
                                    p["thoughtSignature"] = json!(s);
                                }
                                parts.push(p);
                            } else if !thinking.trim().is_empty() {
                                parts.push(json!({"text": thinking}));
                            }
                        }
                        ContentBlock::ToolCall {
                            id,
                            name,
                            arguments,
                            thought_signature,
                            ..
                        } => {
                            let sig =
                                valid_signature(thought_signature.as_deref()).filter(|_| same);
                            let mut call = Map::new();
                            call.insert("args".into(), arguments.clone());
                            if include_id {
                                call.insert("id".into(), json!(id));
                            }
                            call.insert("name".into(), json!(name));
                            let mut p = json!({"functionCall": call});
                            if let Some(s) = sig {
                                p["thoughtSignature"] = json!(s);
                            }
                            parts.push(p);
                        }
                        ContentBlock::Image { .. } => {}
                    }
                }
                if parts.is_empty() {
                    continue;
                }
                contents.push(json!({"parts": parts, "role": "model"}));
            }
            LlmMessage::ToolResult {
                tool_call_id,
                tool_name,
                content,
                is_error,
            } => {
                let text: Vec<&str> = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let text = text.join("\n");
                let images: Vec<Value> = if model.supports_images() {
                    content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Image { data, mime_type } => {
                                Some(inline_data(mime_type, data))
                            }
                            _ => None,
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let has_text = !text.trim().is_empty();
                let has_images = !images.is_empty();
                let multimodal = supports_multimodal_function_response(&model.id);
                let value = if has_text {
                    text
                } else if has_images {
                    "(see attached image)".into()
                } else {
                    String::new()
                };
                let mut response = Map::new();
                response.insert("name".into(), json!(tool_name));
                response.insert(
                    "response".into(),
                    if *is_error {
                        json!({"error": value})
                    } else {
                        json!({"output": value})
                    },
                );
                if has_images && multimodal {
                    response.insert("parts".into(), Value::Array(images.clone()));
                }
                if include_id {
                    response.insert("id".into(), json!(tool_call_id));
                }
                let part = json!({"functionResponse": response});
                // All function responses of a turn go in one user message.
                let merged = match contents.last_mut() {
                    Some(last)
                        if last["role"] == "user"
                            && last["parts"].as_array().is_some_and(|ps| {
                                ps.iter().any(|p| p.get("functionResponse").is_some())
                            }) =>
                    {
                        if let Some(ps) = last["parts"].as_array_mut() {
                            ps.push(part.clone());
                        }
                        true
                    }
                    _ => false,
                };
                if !merged {
                    contents.push(json!({"parts": [part], "role": "user"}));
                }
                if has_images && !multimodal {
                    let mut parts = vec![json!({"text": "Tool result image:"})];
                    parts.extend(images);
                    contents.push(json!({"parts": parts, "role": "user"}));
                }
            }
        }
    }
    contents
}

const SCHEMA_NAME_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];
const SCHEMA_SUBSCHEMAS: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// pi's `rewriteConstAsEnum`: Gemini ignores `const` in `parametersJsonSchema` but honours a
/// one-value `enum`, so string and number `const`s become `enum`s.
pub fn rewrite_const_as_enum(schema: &Value, is_name_map: bool) -> Value {
    match schema {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| rewrite_const_as_enum(i, false))
                .collect(),
        ),
        Value::Object(o) => {
            let mut out = Map::new();
            for (k, v) in o {
                let v = if is_name_map || SCHEMA_SUBSCHEMAS.contains(&k.as_str()) {
                    rewrite_const_as_enum(v, false)
                } else if SCHEMA_NAME_MAPS.contains(&k.as_str()) {
                    rewrite_const_as_enum(v, true)
                } else {
                    v.clone()
                };
                out.insert(k.clone(), v);
            }
            if !is_name_map && !out.contains_key("enum") {
                if let Some(c) = out.get("const").cloned() {
                    if c.is_string() || c.is_number() {
                        out.shift_remove("const");
                        out.insert("enum".into(), json!([c]));
                    }
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// `tools: [{functionDeclarations: [...]}]`. With `strict_mode` (Gemini 3 and later) tools
/// that ask for strict sampling send their strict-form schema.
pub fn convert_tools(tools: &[ToolSpec], strict_mode: bool) -> Value {
    let decls: Vec<Value> = tools
        .iter()
        .map(|t| {
            let strict = strict_schema::strict_sampling(t, strict_mode, None);
            let parameters = strict_schema::parameters(t, strict, None);
            json!({"name": t.name, "description": t.description,
                "parametersJsonSchema": rewrite_const_as_enum(&parameters, false)})
        })
        .collect();
    json!([{"functionDeclarations": decls}])
}

/// pi's `supportsGoogleStrictToolSampling`: Gemini 3 and later enforce required parameters in
/// the validated function-calling mode.
fn supports_strict_tool_sampling(model_id: &str) -> bool {
    let id = model_id.to_ascii_lowercase();
    let rest = id
        .strip_prefix("gemini-live-")
        .or_else(|| id.strip_prefix("gemini-"));
    let digits: String = rest
        .unwrap_or_default()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse::<u64>().is_ok_and(|major| major >= 3)
}

/// The request body (pi's `buildParams` as the SDK serializes it). `max_tokens` is the
/// already fitted output cap.
pub fn build_body(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    max_tokens: u64,
) -> Result<Value, String> {
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(convert_contents(model, ctx)),
    );
    if !ctx.system_prompt.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": ctx.system_prompt}], "role": "user"}),
        );
    }
    if !ctx.tools.is_empty() {
        let strict_mode = supports_strict_tool_sampling(&model.id);
        body.insert("tools".into(), convert_tools(&ctx.tools, strict_mode));
        // pi's `resolveGoogleFunctionCallingMode` (pi-rpc sends no tool choice).
        if ctx
            .tools
            .iter()
            .any(|t| strict_schema::strict_sampling(t, strict_mode, None) == Some(true))
        {
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": {"mode": "VALIDATED"}}),
            );
        }
    }
    let mut config = Map::new();
    config.insert("maxOutputTokens".into(), json!(max_tokens));
    if let Some(tc) = thinking_config(model, opts)? {
        config.insert("thinkingConfig".into(), tc);
    }
    body.insert("generationConfig".into(), Value::Object(config));
    Ok(Value::Object(body))
}

/// `{baseUrl}/models/{id}:streamGenerateContent?alt=sse`.
pub fn endpoint(model: &Model) -> String {
    let id = model.id.strip_prefix("models/").unwrap_or(&model.id);
    format!(
        "{}/models/{id}:streamGenerateContent?alt=sse",
        model.base_url.trim_end_matches('/')
    )
}

/// Content type, the API key, then the resolved provider/model headers.
pub fn request_headers(opts: &StreamOptions) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = vec![("content-type".into(), "application/json".into())];
    if let Some(key) = &opts.api_key {
        h.push(("x-goog-api-key".into(), key.clone()));
    }
    h.extend(opts.headers.iter().cloned());
    h
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::llm::types::AssistantMessage;

    #[test]
    fn model_families() {
        // Checked against pi's `usesGoogleThinkingLevel` / `requiresToolCallId`.
        for (id, want) in [
            ("gemini-3-pro-preview", true),
            ("gemini-3.1-flash-lite", true),
            ("gemini-3.10-pro", true),
            ("gemini-3-ultra", false),
            ("gemini-4-argon", true),
            ("gemini-10-x", true),
            ("gemini-2.5-flash", false),
            ("gemini-flash-latest", true),
            ("gemma-4-31b-it", true),
            ("gemma4b", true),
            ("my-gemini-3-flash", true),
            ("gemini-3.-pro", false),
        ] {
            assert_eq!(uses_thinking_level(&model(id)), want, "{id}");
        }
        for (id, want) in [
            ("gemini-3-pro", true),
            ("gemini-live-3-x", true),
            ("gemini-2.5-pro", false),
            ("claude-x", true),
            ("gpt-oss-1", true),
            ("other", false),
        ] {
            assert_eq!(requires_tool_call_id(id), want, "{id}");
        }
        assert!(supports_multimodal_function_response("gemini-3-pro"));
        assert!(!supports_multimodal_function_response("gemini-2.5-pro"));
        assert!(supports_multimodal_function_response("claude-x"));
    }

    #[test]
    fn thinking_configs() {
        let cfg = |m: &Model, level| thinking_config(m, &opts(level));
        assert_eq!(
            cfg(&model("gemini-2.5-flash"), ThinkingLevel::Medium),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingBudget": 8192})
            ))
        );
        assert_eq!(
            cfg(&model("gemini-2.5-pro"), ThinkingLevel::High),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingBudget": 32768})
            ))
        );
        // xhigh clamps to high.
        assert_eq!(
            cfg(&model("gemini-2.5-flash-lite"), ThinkingLevel::Xhigh),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingBudget": 24576})
            ))
        );
        assert_eq!(
            cfg(&model("gemini-2.5-flash-lite"), ThinkingLevel::Minimal),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingBudget": 512})
            ))
        );
        assert_eq!(
            cfg(&model("gemini-2.0-flash"), ThinkingLevel::Low),
            Ok(Some(json!({"includeThoughts": true, "thinkingBudget": -1})))
        );
        assert_eq!(
            cfg(&model("gemini-2.5-flash"), ThinkingLevel::Off),
            Ok(Some(json!({"thinkingBudget": 0})))
        );
        // A user budget overrides the family table.
        let custom = StreamOptions {
            thinking_budgets: ThinkingBudgets {
                medium: 5000,
                ..ThinkingBudgets::default()
            },
            ..opts(ThinkingLevel::Medium)
        };
        assert_eq!(
            thinking_config(&model("gemini-2.5-pro"), &custom),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingBudget": 5000})
            ))
        );
        // Gemini 3: levels; off falls back to the lowest supported level.
        assert_eq!(
            cfg(&gemini3(), ThinkingLevel::Low),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingLevel": "LOW"})
            ))
        );
        assert_eq!(
            cfg(&gemini3(), ThinkingLevel::Off),
            Ok(Some(json!({"thinkingLevel": "MINIMAL"})))
        );
        let mut gemma = model("gemma-4-31b-it");
        gemma.thinking_level_map = json!({"off": null, "minimal": "MINIMAL", "low": null,
            "medium": null, "high": "HIGH"})
        .as_object()
        .cloned();
        assert_eq!(
            cfg(&gemma, ThinkingLevel::Medium),
            Ok(Some(
                json!({"includeThoughts": true, "thinkingLevel": "HIGH"})
            ))
        );
        let mut bad = gemini3();
        if let Some(m) = bad.thinking_level_map.as_mut() {
            m.insert("xhigh".into(), json!("xhigh"));
        }
        assert_eq!(
            cfg(&bad, ThinkingLevel::Xhigh),
            Err("Unsupported Google thinking level mapping for mockg/gemini-3-flash-preview: xhigh -> xhigh".into())
        );
        let mut plain = model("gemini-2.5-flash");
        plain.reasoning = false;
        assert_eq!(cfg(&plain, ThinkingLevel::High), Ok(None));
    }

    #[test]
    fn const_becomes_enum() {
        // pi's convertTools output for the same schema.
        let schema = json!({"type": "object", "properties": {"const": {"const": "x"},
            "a": {"const": 1, "type": "number"}, "b": {"anyOf": [{"const": "p"}, {"const": true}]},
            "c": {"enum": ["z"], "const": "z"}}, "const": "top", "$defs": {"d": {"const": "q"}}});
        let tools = convert_tools(
            &[ToolSpec {
                name: "t".into(),
                description: "d".into(),
                parameters: schema,
                strict_prefer: false,
            }],
            true,
        );
        assert_eq!(
            serde_json::to_string(&tools).unwrap(),
            r#"[{"functionDeclarations":[{"name":"t","description":"d","parametersJsonSchema":{"type":"object","properties":{"const":{"enum":["x"]},"a":{"type":"number","enum":[1]},"b":{"anyOf":[{"enum":["p"]},{"const":true}]},"c":{"enum":["z"],"const":"z"}},"$defs":{"d":{"enum":["q"]}},"enum":["top"]}}]}]"#
        );
    }

    #[test]
    fn signatures_must_be_base64() {
        assert_eq!(valid_signature(Some("U0lH")), Some("U0lH"));
        assert_eq!(valid_signature(Some("VFNJRw==")), Some("VFNJRw=="));
        assert_eq!(valid_signature(Some("not base64!")), None);
        assert_eq!(valid_signature(Some("abc")), None);
        assert_eq!(valid_signature(Some("a===")), None);
        assert_eq!(valid_signature(Some("")), None);
        assert_eq!(valid_signature(None), None);
    }

    /// pi's g2 capture: a Gemini 3 conversation with thought signatures, tool results with
    /// images and a foreign assistant turn.
    #[test]
    fn history_matches_pi() {
        let mut m = gemini3();
        m.provider = "mockg".into();
        let a1 = AssistantMessage {
            content: vec![
                ContentBlock::Thinking {
                    thinking: "Hmm.".into(),
                    thinking_signature: Some("U0lH".into()),
                    redacted: false,
                },
                ContentBlock::Thinking {
                    thinking: String::new(),
                    thinking_signature: Some("not base64!".into()),
                    redacted: false,
                },
                ContentBlock::Text {
                    text: "Listing.".into(),
                    text_signature: Some("VFNJRw==".into()),
                },
                ContentBlock::text("  "),
                ContentBlock::ToolCall {
                    id: "call 1".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "ls"}),
                    arguments_error: None,
                    thought_signature: Some("Q0FMTA==".into()),
                },
                ContentBlock::ToolCall {
                    id: "call_2".into(),
                    name: "read".into(),
                    arguments: json!({"path": "x.png"}),
                    arguments_error: None,
                    thought_signature: None,
                },
            ],
            api: "google-generative-ai".into(),
            provider: "mockg".into(),
            model: "gemini-3-flash-preview".into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        };
        // After transformMessages: the foreign turn lost its thinking and signatures.
        let foreign = AssistantMessage {
            content: vec![
                ContentBlock::text("Checking."),
                ContentBlock::ToolCall {
                    id: "toolu|01".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "pwd"}),
                    arguments_error: None,
                    thought_signature: None,
                },
            ],
            api: "anthropic-messages".into(),
            provider: "anthropic".into(),
            model: "claude".into(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        };
        let ctx = LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: "Be brief.".into(),
            messages: vec![
                LlmMessage::User {
                    content: vec![
                        ContentBlock::text("hi"),
                        ContentBlock::Image {
                            data: "AAAA".into(),
                            mime_type: "image/png".into(),
                        },
                    ],
                    timestamp: 1,
                    as_string: false,
                },
                LlmMessage::Assistant(a1),
                LlmMessage::ToolResult {
                    tool_call_id: "call 1".into(),
                    tool_name: "bash".into(),
                    content: vec![ContentBlock::text("file.txt\n")],
                    is_error: false,
                },
                LlmMessage::ToolResult {
                    tool_call_id: "call_2".into(),
                    tool_name: "read".into(),
                    content: vec![ContentBlock::Image {
                        data: "CCCC".into(),
                        mime_type: "image/png".into(),
                    }],
                    is_error: true,
                },
                LlmMessage::Assistant(foreign),
                LlmMessage::ToolResult {
                    tool_call_id: "toolu|01".into(),
                    tool_name: "bash".into(),
                    content: vec![ContentBlock::text("/")],
                    is_error: false,
                },
                LlmMessage::User {
                    content: vec![ContentBlock::text("next")],
                    timestamp: 9,
                    as_string: false,
                },
            ],
            tools: Vec::new(),
        };
        let body = build_body(&m, &ctx, &opts(ThinkingLevel::High), 16_384).unwrap();
        let want: Value = serde_json::from_str(
            r#"{"contents": [{"parts": [{"text": "hi"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}], "role": "user"}, {"parts": [{"text": "Hmm.", "thought": true, "thoughtSignature": "U0lH"}, {"text": "Listing.", "thoughtSignature": "VFNJRw=="}, {"functionCall": {"args": {"command": "ls"}, "id": "call 1", "name": "bash"}, "thoughtSignature": "Q0FMTA=="}, {"functionCall": {"args": {"path": "x.png"}, "id": "call_2", "name": "read"}}], "role": "model"}, {"parts": [{"functionResponse": {"name": "bash", "response": {"output": "file.txt\n"}, "id": "call 1"}}, {"functionResponse": {"name": "read", "response": {"error": "(see attached image)"}, "parts": [{"inlineData": {"mimeType": "image/png", "data": "CCCC"}}], "id": "call_2"}}], "role": "user"}, {"parts": [{"text": "Checking."}, {"functionCall": {"args": {"command": "pwd"}, "id": "toolu_01", "name": "bash"}}], "role": "model"}, {"parts": [{"functionResponse": {"name": "bash", "response": {"output": "/"}, "id": "toolu_01"}}], "role": "user"}, {"parts": [{"text": "next"}], "role": "user"}], "systemInstruction": {"parts": [{"text": "Be brief."}], "role": "user"}, "generationConfig": {"maxOutputTokens": 16384, "thinkingConfig": {"includeThoughts": true, "thinkingLevel": "HIGH"}}}"#,
        )
        .unwrap();
        assert_eq!(body, want);
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            serde_json::to_string(&want).unwrap(),
            "key order"
        );
    }

    #[test]
    fn older_models_get_tool_images_in_a_user_turn() {
        let m = model("gemini-2.5-flash");
        let ctx = LlmContext {
            transcript: None,
            leading_system: None,
            system_prompt: String::new(),
            messages: vec![LlmMessage::ToolResult {
                tool_call_id: "c1".into(),
                tool_name: "read".into(),
                content: vec![
                    ContentBlock::text("an image"),
                    ContentBlock::Image {
                        data: "CCCC".into(),
                        mime_type: "image/png".into(),
                    },
                ],
                is_error: false,
            }],
            tools: Vec::new(),
        };
        assert_eq!(
            Value::Array(convert_contents(&m, &ctx)),
            json!([
                {"parts": [{"functionResponse": {"name": "read",
                    "response": {"output": "an image"}}}], "role": "user"},
                {"parts": [{"text": "Tool result image:"},
                    {"inlineData": {"mimeType": "image/png", "data": "CCCC"}}], "role": "user"}
            ])
        );
        let body = build_body(&m, &ctx, &opts(ThinkingLevel::Off), 100).unwrap();
        assert!(body.get("systemInstruction").is_none());
        assert_eq!(
            body["generationConfig"],
            json!({"maxOutputTokens": 100, "thinkingConfig": {"thinkingBudget": 0}})
        );
        assert_eq!(
            endpoint(&m),
            "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            request_headers(&StreamOptions {
                api_key: Some("k".into()),
                ..StreamOptions::default()
            }),
            [
                ("content-type".to_string(), "application/json".to_string()),
                ("x-goog-api-key".to_string(), "k".to_string())
            ]
        );
    }
}
