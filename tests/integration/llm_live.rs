//! Live calls to the real provider APIs, one per wire API. Each runs only when its key is in the
//! environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`, `RADIUS_API_KEY`,
//! `PI_LIVE_OPENAI_CODEX_TOKEN`: a ChatGPT login's access token) and otherwise returns at
//! once, saying on stderr that it was skipped (CI has no keys and no network). The other wire
//! APIs' live tests use the helpers here: `llm_live_mistral_azure` (`live_mistral_conversations`,
//! `live_azure_openai_responses`) and `llm_live_cloud` (`live_google_vertex`,
//! `live_bedrock_converse_stream`); README's "Live provider tests" lists every variable.
//!
//! Each sends one short prompt through `stream_assistant` with a built-in catalog model and the
//! credentials the registry resolves (as a request from the agent would), and checks a plain
//! text reply: `stopReason:"stop"`, non-empty text, streamed text deltas that add up to it, and
//! non-zero usage. The model can be overridden with `PI_LIVE_<PROVIDER>_MODEL` (e.g.
//! `PI_LIVE_ANTHROPIC_MODEL=claude-sonnet-4-5`) and the endpoint with
//! `PI_LIVE_<PROVIDER>_BASE_URL`.

use std::time::Duration;

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::auth::AuthStore;
use pi_rpc::llm::stream::StreamUpdate;
use pi_rpc::llm::types::{
    AssistantEvent, ContentBlock, LlmContext, LlmMessage, StopReason, StreamOptions,
};
use pi_rpc::llm::wire::stream_assistant;
use pi_rpc::llm::{Model, ModelRegistry, ThinkingLevel};

/// The catalog model for `provider`/`id` (or the `PI_LIVE_<PROVIDER>_MODEL` override), with
/// its wire API replaced by `api` when given. `None` (and a note on stderr) when `key_var` is
/// not set.
pub(crate) fn live_model(
    key_var: &str,
    provider: &str,
    id: &str,
    api: Option<&str>,
) -> Option<(Model, StreamOptions)> {
    if std::env::var(key_var).map_or(true, |k| k.trim().is_empty()) {
        eprintln!("skipped: {key_var} is not set (live {provider} test)");
        return None;
    }
    let override_var = format!("PI_LIVE_{}_MODEL", provider.to_ascii_uppercase());
    let id = std::env::var(&override_var).unwrap_or_else(|_| id.to_string());
    let mut diags = Vec::new();
    let registry = ModelRegistry::from_parts(None, AuthStore::empty(), &mut diags);
    let mut model = registry
        .find(provider, &id)
        .cloned()
        .unwrap_or_else(|| panic!("{provider}/{id} is not in the built-in catalog ({diags:?})"));
    if let Some(api) = api {
        model.api = api.to_string();
    }
    // A gateway or proxy that speaks the same API.
    if let Ok(url) = std::env::var(format!(
        "PI_LIVE_{}_BASE_URL",
        provider.to_ascii_uppercase()
    )) {
        model.base_url = url;
    }
    let auth = registry
        .request_auth(&model)
        .unwrap_or_else(|e| panic!("credentials for {provider}: {e}"));
    let opts = StreamOptions {
        api_key: auth.api_key,
        headers: auth.headers,
        env: auth.env,
        // A plain answer: no reasoning budget where the model lets us turn it off.
        thinking_level: ThinkingLevel::Off,
        max_tokens: Some(256),
        idle_timeout: Duration::from_secs(60),
        ..StreamOptions::default()
    };
    Some((model, opts))
}

pub(crate) fn ask(model: &Model, opts: &StreamOptions) {
    let ctx = LlmContext {
        transcript: None,
        leading_system: None,
        system_prompt: "You are a terse assistant. Answer in a few words.".into(),
        messages: vec![LlmMessage::User {
            content: vec![ContentBlock::text("Say hello.")],
            timestamp: pi_rpc::util::now_ms(),
            as_string: false,
        }],
        tools: Vec::new(),
    };
    let mut started = false;
    let mut streamed = String::new();
    let msg = stream_assistant(model, &ctx, opts, &CancelToken::new(), &mut |u| match u {
        StreamUpdate::Start(_) => started = true,
        StreamUpdate::Event(_, AssistantEvent::TextDelta { delta, .. }) => streamed.push_str(delta),
        StreamUpdate::Event(..) => {}
    });
    let value = msg.to_value();
    assert_eq!(
        msg.stop_reason,
        StopReason::Stop,
        "{}/{} via {}: {value}",
        model.provider,
        model.id,
        model.api
    );
    assert!(started, "no Start update: {value}");
    let text: String = msg
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(!text.trim().is_empty(), "empty reply: {value}");
    assert_eq!(streamed, text, "the text deltas add up to the final text");
    assert!(msg.usage.input > 0, "no input tokens: {value}");
    assert!(msg.usage.output > 0, "no output tokens: {value}");
    assert!(
        msg.usage.total_tokens >= msg.usage.input + msg.usage.output,
        "{value}"
    );
    assert_eq!(value["role"], "assistant");
    assert_eq!(value["api"], model.api.as_str());
    assert_eq!(value["provider"], model.provider.as_str());
    eprintln!(
        "live {} {} ({}): {:?}, usage in {} out {}",
        model.provider, model.id, model.api, text, msg.usage.input, msg.usage.output
    );
}

#[test]
fn live_anthropic_messages() {
    let Some((model, opts)) =
        live_model("ANTHROPIC_API_KEY", "anthropic", "claude-haiku-4-5", None)
    else {
        return;
    };
    assert_eq!(model.api, "anthropic-messages");
    ask(&model, &opts);
}

#[test]
fn live_openai_responses() {
    let Some((model, opts)) = live_model("OPENAI_API_KEY", "openai", "gpt-4.1-mini", None) else {
        return;
    };
    assert_eq!(model.api, "openai-responses");
    ask(&model, &opts);
}

#[test]
fn live_openai_completions() {
    // The same OpenAI model through Chat Completions (same base URL, `/chat/completions`).
    let Some((model, opts)) = live_model(
        "OPENAI_API_KEY",
        "openai",
        "gpt-4.1-mini",
        Some("openai-completions"),
    ) else {
        return;
    };
    ask(&model, &opts);
}

#[test]
fn live_google_generative_ai() {
    let Some((model, opts)) = live_model("GEMINI_API_KEY", "google", "gemini-2.5-flash", None)
    else {
        return;
    };
    assert_eq!(model.api, "google-generative-ai");
    ask(&model, &opts);
}

#[test]
fn live_pi_messages() {
    let Some((model, opts)) = live_model("RADIUS_API_KEY", "radius", "balanced", None) else {
        return;
    };
    assert_eq!(model.api, "pi-messages");
    ask(&model, &opts);
}

#[test]
fn live_openai_codex_responses() {
    // openai-codex has no API key: the access token of a ChatGPT login (auth.json's
    // `openai-codex.access`) is given directly.
    let token = std::env::var("PI_LIVE_OPENAI_CODEX_TOKEN").unwrap_or_default();
    if token.trim().is_empty() {
        eprintln!("skipped: PI_LIVE_OPENAI_CODEX_TOKEN is not set (live openai-codex test)");
        return;
    }
    let id = std::env::var("PI_LIVE_OPENAI_CODEX_MODEL").unwrap_or_else(|_| "gpt-5.6-luna".into());
    let mut diags = Vec::new();
    let registry = ModelRegistry::from_parts(None, AuthStore::empty(), &mut diags);
    let model = registry
        .find("openai-codex", &id)
        .cloned()
        .unwrap_or_else(|| panic!("openai-codex/{id} is not in the built-in catalog"));
    assert_eq!(model.api, "openai-codex-responses");
    let opts = StreamOptions {
        api_key: Some(token.trim().to_string()),
        thinking_level: ThinkingLevel::Off,
        max_tokens: Some(256),
        idle_timeout: Duration::from_secs(60),
        ..StreamOptions::default()
    };
    ask(&model, &opts);
}
