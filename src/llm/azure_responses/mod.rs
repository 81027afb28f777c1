//! Azure OpenAI Responses (`azure-openai-responses`, providers-catalog.md §4.3): the OpenAI
//! Responses API (`openai_responses`: its request body and event state machine) with Azure's
//! endpoint, key header and deployment rules, run by `drive::drive`.
//!
//! pi 1.6.0 (`azure-openai-responses.js`, `azure-openai-config.js`, the `openai` SDK's
//! `AzureOpenAI`): `POST <base>/responses?api-version=<version>` with `api-key: <key>`; the base
//! URL comes from `AZURE_OPENAI_BASE_URL`, else `AZURE_OPENAI_RESOURCE_NAME`, else the model's
//! baseUrl; the body's `model` is the deployment name (`AZURE_OPENAI_DEPLOYMENT_NAME_MAP`, else
//! the model id); tools are strict unless the model's compat says otherwise; `prompt_cache_key`
//! is the session id (no `prompt_cache_retention`, no session-affinity headers).

use serde_json::{json, Map, Value};

use super::drive::{Flow, WireApi};
use super::http::HttpRequest;
use super::model::Model;
use super::openai_responses::{
    abort_texts, build_body, http_error_with_prefix, ResponsesStream, NO_STOP_REASON,
};
use super::request::json_request;
use super::sse::SseEvent;
use super::stream::{base_max_tokens, AbortTexts, Failure, StreamedMessage};
use super::types::{CacheRetention, LlmContext, StreamOptions};
use crate::cancel::CancelToken;

mod chat;
mod config;

pub use self::chat::AzureChat;
pub use self::config::{base_url, deployment_name, endpoint, SETTINGS};

/// The prefix of HTTP error texts.
const ERROR_PREFIX: &str = "Azure OpenAI API error";
/// The stream ended on a terminal event without a status.
pub const NO_STOP_REASON_AZURE: &str = "Azure OpenAI Responses stream ended without a stop reason";

/// The model as the Responses request builder should see it: strict tools by default, and
/// none of the cache fields Azure's builder does not send (`prompt_cache_retention`,
/// `prompt_cache_options`); `max_output_tokens` always allowed.
fn responses_model(model: &Model) -> Model {
    let mut m = model.clone();
    let strict = model.compat_bool("supportsStrictMode").unwrap_or(true);
    let compat = m.compat.get_or_insert_with(Map::new);
    compat.insert("supportsStrictMode".into(), json!(strict));
    compat.insert("supportsLongCacheRetention".into(), json!(false));
    compat.insert("supportsExplicitPromptCacheMode".into(), json!(false));
    compat.insert("supportsMaxOutputTokens".into(), json!(true));
    m
}

/// The request body (pi's `buildParams` of this API). `max_tokens` is the fitted output cap.
pub fn build_azure_body(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    max_tokens: u64,
) -> Value {
    // `prompt_cache_key` is the session id whatever the cache retention.
    let opts = StreamOptions {
        cache_retention: CacheRetention::Short,
        ..opts.clone()
    };
    let mut body = build_body(&responses_model(model), ctx, &opts, max_tokens);
    body["model"] = json!(deployment_name(model, &opts));
    body
}

/// The request headers: content negotiation, `api-key`, then the resolved provider/model
/// headers (last, so they win).
pub fn request_headers(opts: &StreamOptions) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "application/json".into()),
    ];
    if let Some(key) = &opts.api_key {
        h.push(("api-key".into(), key.clone()));
    }
    h.extend(opts.headers.iter().cloned());
    h
}

/// Azure Responses as `drive` runs it: the Responses event machine, Azure's texts.
pub struct AzureStream(ResponsesStream);

impl<'a> WireApi<'a> for AzureStream {
    const ABORT_TEXTS: AbortTexts = abort_texts(false);
    const DISPATCH_TRAILING: bool = false;

    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        _: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure> {
        if opts.api_key.as_deref().is_none_or(str::is_empty) {
            return Err(Failure::Error(format!(
                "No API key for provider: {}",
                model.provider
            )));
        }
        let base = base_url(model, opts).map_err(Failure::Error)?;
        let max_tokens = base_max_tokens(model, ctx, opts);
        let body = build_azure_body(model, ctx, opts, max_tokens);
        let request = json_request(
            endpoint(&base, opts),
            request_headers(opts),
            &body,
            opts.idle_timeout,
        )?;
        Ok((request, AzureStream(ResponsesStream::new())))
    }

    fn http_error(_: &Model, status: u16, _: Option<&str>, body: &str) -> String {
        http_error_with_prefix(ERROR_PREFIX, status, body)
    }

    fn on_event(
        &mut self,
        model: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure> {
        if event.data == "[DONE]" {
            return Ok(Flow::Stop);
        }
        self.0
            .handle(event.event.as_deref(), &event.data, model, out)
            .map_err(Failure::Error)?;
        Ok(Flow::Continue)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        read?;
        self.0.finish(&out.msg).map_err(|e| {
            Failure::Error(if e == NO_STOP_REASON {
                NO_STOP_REASON_AZURE.to_owned()
            } else {
                e
            })
        })
    }

    fn abort_texts(&self) -> AbortTexts {
        abort_texts(self.0.saw_terminal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::{ContentBlock, LlmMessage, ToolSpec};
    use crate::llm::ThinkingLevel;

    fn model() -> Model {
        Model {
            id: "gpt-5.4".into(),
            name: "GPT-5.4".into(),
            api: "azure-openai-responses".into(),
            provider: "azure".into(),
            base_url: String::new(),
            reasoning: true,
            input: vec!["text".into()],
            context_window: 400_000,
            max_tokens: 128_000,
            compat: json!({"supportsOpenAIGrammarTools": true})
                .as_object()
                .cloned(),
            ..Model::default()
        }
    }

    fn ctx() -> LlmContext {
        LlmContext {
            system_prompt: "S.".into(),
            messages: vec![LlmMessage::User {
                content: vec![ContentBlock::text("hi")],
                timestamp: 1,
                as_string: false,
            }],
            tools: vec![ToolSpec {
                name: "bash".into(),
                description: "Run".into(),
                parameters: json!({"type": "object", "required": ["command"],
                    "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}}}),
                strict_prefer: true,
            }],
            transcript: None,
            leading_system: None,
        }
    }

    #[test]
    fn body_has_deployment_strict_tools_and_cache_key() {
        let opts = StreamOptions {
            api_key: Some("k".into()),
            session_id: Some("sess".into()),
            thinking_level: ThinkingLevel::Medium,
            cache_retention: CacheRetention::Long,
            env: vec![(
                "AZURE_OPENAI_DEPLOYMENT_NAME_MAP".into(),
                " other=x , gpt-5.4 = my-deploy ".into(),
            )],
            ..StreamOptions::default()
        };
        let body = build_azure_body(&model(), &ctx(), &opts, 128_000);
        assert_eq!(
            body,
            json!({
                "model": "my-deploy",
                "input": [
                    {"role": "developer", "content": "S."},
                    {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
                ],
                "stream": true,
                "prompt_cache_key": "sess",
                "store": false,
                "max_output_tokens": 128000,
                "tools": [{"type": "function", "name": "bash", "description": "Run",
                    "parameters": {"type": "object", "required": ["command", "timeout"],
                        "properties": {"command": {"type": "string"},
                            "timeout": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
                        "additionalProperties": false},
                    "strict": true}],
                "reasoning": {"effort": "medium", "summary": "auto"},
                "include": ["reasoning.encrypted_content"]
            })
        );
        // Cache retention none still sends the key; compat can turn strict mode off.
        let mut m = model();
        m.compat = json!({"supportsStrictMode": false, "promptCacheKeyMode": "disabled"})
            .as_object()
            .cloned();
        let opts = StreamOptions {
            cache_retention: CacheRetention::None,
            ..opts
        };
        let body = build_azure_body(&m, &ctx(), &opts, 10);
        assert_eq!(body.get("prompt_cache_key"), None);
        assert_eq!(body["max_output_tokens"], 16);
        assert_eq!(body["tools"][0].get("strict"), None);
        let mut m = model();
        m.compat = None;
        let body = build_azure_body(&m, &ctx(), &opts, 10);
        assert_eq!(body["prompt_cache_key"], "sess");
        assert_eq!(body["tools"][0]["strict"], true);
        assert_eq!(body["model"], "my-deploy");
    }

    #[test]
    fn headers_carry_the_key_as_api_key() {
        let opts = StreamOptions {
            api_key: Some("k".into()),
            session_id: Some("s".into()),
            headers: vec![("X-Extra".into(), "1".into())],
            ..StreamOptions::default()
        };
        assert_eq!(
            request_headers(&opts),
            vec![
                ("content-type".to_string(), "application/json".to_string()),
                ("accept".to_string(), "application/json".to_string()),
                ("api-key".to_string(), "k".to_string()),
                ("X-Extra".to_string(), "1".to_string()),
            ]
        );
    }

    #[test]
    fn http_errors_carry_azure_prefix() {
        assert_eq!(
            AzureStream::http_error(&model(), 401, None, r#"{"error":{"message":"bad key"}}"#),
            r#"Azure OpenAI API error (401): {"message":"bad key"}"#
        );
        assert_eq!(
            AzureStream::http_error(&model(), 500, None, "boom"),
            "Azure OpenAI API error (500): 500 boom"
        );
    }
}
