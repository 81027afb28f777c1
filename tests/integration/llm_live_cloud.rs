//! Live calls to Amazon Bedrock and Google Vertex AI, like `llm_live` for the key-based APIs.
//! Each runs only when credentials are in the environment and otherwise returns at once,
//! saying on stderr that it was skipped:
//!
//! - Bedrock: `AWS_BEARER_TOKEN_BEDROCK`, `AWS_ACCESS_KEY_ID`+`AWS_SECRET_ACCESS_KEY`, or
//!   `AWS_PROFILE` (any profile the chain resolves: static keys, `role_arn`, SSO,
//!   `credential_process`); model `PI_LIVE_AMAZON-BEDROCK_MODEL` or Claude
//!   Haiku 4.5 (`us.` inference profile); region from `AWS_REGION` as pi resolves it.
//! - Vertex: `GOOGLE_CLOUD_API_KEY` (express mode), or `GOOGLE_CLOUD_PROJECT` and
//!   `GOOGLE_CLOUD_LOCATION` with Application Default Credentials; model
//!   `PI_LIVE_GOOGLE-VERTEX_MODEL` or `gemini-2.5-flash`.

use std::time::Duration;

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::auth::AuthStore;
use pi_rpc::llm::stream::StreamUpdate;
use pi_rpc::llm::types::{
    AssistantEvent, ContentBlock, LlmContext, LlmMessage, StopReason, StreamOptions,
};
use pi_rpc::llm::wire::stream_assistant;
use pi_rpc::llm::{ModelRegistry, ThinkingLevel};

fn set(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| !v.trim().is_empty())
}

fn ask(provider: &str, default_id: &str) {
    let id = std::env::var(format!("PI_LIVE_{}_MODEL", provider.to_ascii_uppercase()))
        .unwrap_or_else(|_| default_id.to_string());
    let mut diags = Vec::new();
    let registry = ModelRegistry::from_parts(None, AuthStore::empty(), &mut diags);
    let model = registry
        .find(provider, &id)
        .cloned()
        .unwrap_or_else(|| panic!("{provider}/{id} is not in the built-in catalog ({diags:?})"));
    let auth = registry
        .request_auth(&model)
        .unwrap_or_else(|e| panic!("credentials for {provider}: {e}"));
    let opts = StreamOptions {
        api_key: auth.api_key,
        headers: auth.headers,
        env: auth.env,
        thinking_level: ThinkingLevel::Off,
        max_tokens: Some(256),
        idle_timeout: Duration::from_secs(60),
        ..StreamOptions::default()
    };
    let ctx = LlmContext {
        system_prompt: "You are a terse assistant. Answer in a few words.".into(),
        messages: vec![LlmMessage::User {
            content: vec![ContentBlock::text("Say hello.")],
            timestamp: pi_rpc::util::now_ms(),
            as_string: false,
        }],
        tools: Vec::new(),
        transcript: None,
        leading_system: None,
    };
    let mut streamed = String::new();
    let msg = stream_assistant(&model, &ctx, &opts, &CancelToken::new(), &mut |u| {
        if let StreamUpdate::Event(_, AssistantEvent::TextDelta { delta, .. }) = u {
            streamed.push_str(delta);
        }
    });
    let value = msg.to_value();
    assert_eq!(
        msg.stop_reason,
        StopReason::Stop,
        "{provider}/{id}: {value}"
    );
    let text: String = msg
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(!text.trim().is_empty(), "empty reply: {value}");
    assert_eq!(streamed, text);
    assert!(msg.usage.input > 0 && msg.usage.output > 0, "{value}");
    assert_eq!(value["api"], model.api.as_str());
    eprintln!("live {provider} {id}: {text:?}");
}

#[test]
fn live_bedrock_converse_stream() {
    let configured = set("AWS_BEARER_TOKEN_BEDROCK")
        || (set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY"))
        || set("AWS_PROFILE");
    if !configured {
        eprintln!("skipped: no AWS credentials in the environment (live amazon-bedrock test)");
        return;
    }
    ask(
        "amazon-bedrock",
        "us.anthropic.claude-haiku-4-5-20251001-v1:0",
    );
}

#[test]
fn live_google_vertex() {
    let configured = set("GOOGLE_CLOUD_API_KEY")
        || ((set("GOOGLE_CLOUD_PROJECT") || set("GCLOUD_PROJECT")) && set("GOOGLE_CLOUD_LOCATION"));
    if !configured {
        eprintln!("skipped: no Vertex AI credentials in the environment (live google-vertex test)");
        return;
    }
    ask("google-vertex", "gemini-2.5-flash");
}
