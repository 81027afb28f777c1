//! The `azure-openai-responses` adapter against the scripted server: `stream_assistant` end to
//! end (URL, `api-key`, deployment name, strict tools, events, final message, errors, abort).
//! The final message of the first test is pi 1.6.0's for the same script (its `prov_azure`
//! capture).

use pi_rpc::cancel::CancelToken;
use pi_rpc::llm::model::ModelCost;
use pi_rpc::llm::types::{AssistantMessage, CacheRetention, StopReason, StreamOptions, ToolSpec};
use pi_rpc::llm::{Model, ThinkingLevel};
use serde_json::{json, Value};

use crate::support::llm::{ctx, normalized, opts, run, run_cancelled_after, user, zero_usage};
use crate::support::mock_llm::MockLlm;

/// pi's catalog entry of azure's `gpt-5.4` (its baseUrl is empty: resolved per request).
fn model(base_url: &str) -> Model {
    Model {
        id: "gpt-5.4".into(),
        name: "GPT-5.4".into(),
        api: "azure-openai-responses".into(),
        provider: "azure".into(),
        base_url: base_url.into(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        cost: ModelCost {
            input: 2.5,
            output: 15.0,
            cache_read: 0.25,
            cache_write: 0.0,
            tiers: None,
        },
        context_window: 1_050_000,
        max_tokens: 128_000,
        compat: json!({"supportsOpenAIGrammarTools": true})
            .as_object()
            .cloned(),
        ..Model::default()
    }
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn body_of(request: &Value) -> Value {
    match &request["body"] {
        Value::String(s) => serde_json::from_str(s).unwrap(),
        v => v.clone(),
    }
}

fn final_text(msg: &AssistantMessage) -> String {
    let mut v = normalized(msg);
    v["timestamp"] = json!("<TS>");
    v["durationMs"] = json!("<DURATION>");
    v.to_string()
}

/// A tool that prefers strict sampling (as pi's built-in tools do).
fn strict_bash() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "Execute a bash command".into(),
        parameters: json!({"type": "object", "required": ["command"], "properties": {
            "command": {"type": "string"}, "timeout": {"type": "number"}}}),
        strict_prefer: true,
    }
}

#[test]
fn thinking_and_tool_call_match_pi() {
    let mock = MockLlm::start(json!({"replies": [{
        "blocks": [
            {"type": "thinking", "text": "Need to run a command.", "chunk_size": 8, "signature": "enc-azure-1"},
            {"type": "tool_call", "id": "call_az_01", "name": "bash", "input": {"command": "echo from-azure"}, "chunk_size": 12}
        ],
        "usage": {"input": 300, "output": 25, "cache_read": 100}
    }]}));
    let m = model(&format!("{}/openai/v1", mock.base_url()));
    let mut c = ctx(vec![user("Run echo via azure")]);
    c.tools = vec![strict_bash()];
    let o = StreamOptions {
        thinking_level: ThinkingLevel::Medium,
        session_id: Some("sess-1".into()),
        ..opts()
    };
    let (msg, updates) = run(&m, &c, &o, &CancelToken::new());
    // pi 1.6.0's message (prov_azure).
    assert_eq!(
        final_text(&msg),
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":"Need to run a command.","thinkingSignature":"{\"id\":\"rs_mock_0\",\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Need to run a command.\"}],\"encrypted_content\":\"enc-azure-1\"}"},{"type":"toolCall","id":"call_az_01|fc_mock_1","name":"bash","arguments":{"command":"echo from-azure"}}],"api":"azure-openai-responses","provider":"azure","model":"gpt-5.4","usage":{"input":300,"output":25,"cacheRead":100,"cacheWrite":0,"reasoning":0,"totalTokens":425,"cost":{"input":0.00075,"output":0.000375,"cacheRead":0.000024999999999999998,"cacheWrite":0,"total":0.0011500000000000002,"totalFromProvider":false}},"stopReason":"toolUse","timestamp":"<TS>","responseId":"resp_mock_0001","rawStopReason":"completed","durationMs":"<DURATION>","thinkingLevel":"medium"}"#
    );
    let types: Vec<&str> = updates.iter().filter_map(|u| u["type"].as_str()).collect();
    assert_eq!(types.first(), Some(&"thinking_start"));
    assert_eq!(types.last(), Some(&"toolcall_end"));
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r["path"], "/openai/v1/responses?api-version=v1");
    assert_eq!(r["auth_headers_present"], json!(["api-key"]));
    for absent in ["session-id", "x-client-request-id", "authorization"] {
        assert_eq!(r["headers"].get(absent), None, "{absent}");
    }
    assert_eq!(
        body_of(r),
        json!({
            "model": "gpt-5.4",
            "input": [
                {"role": "developer", "content": "You are a test."},
                {"role": "user", "content": [{"type": "input_text", "text": "Run echo via azure"}]}
            ],
            "stream": true,
            "prompt_cache_key": "sess-1",
            "store": false,
            "max_output_tokens": 128000,
            "tools": [{"type": "function", "name": "bash", "description": "Execute a bash command",
                "parameters": {"type": "object", "required": ["command", "timeout"], "properties": {
                    "command": {"type": "string"},
                    "timeout": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
                    "additionalProperties": false},
                "strict": true}],
            "reasoning": {"effort": "medium", "summary": "auto"},
            "include": ["reasoning.encrypted_content"]
        })
    );
}

#[test]
fn endpoint_version_and_deployment_from_settings() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Hi."}]}
    ]}));
    // The model has no base URL: AZURE_OPENAI_BASE_URL gives it.
    let m = model("");
    let o = StreamOptions {
        thinking_level: ThinkingLevel::Off,
        cache_retention: CacheRetention::None,
        session_id: Some("sess-2".into()),
        env: env(&[
            (
                "AZURE_OPENAI_BASE_URL",
                &format!("{}/openai/v1/", mock.base_url()),
            ),
            ("AZURE_OPENAI_API_VERSION", "2025-04-01-preview"),
            (
                "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
                "gpt-4o=a,gpt-5.4=prod-54",
            ),
        ]),
        ..opts()
    };
    let (msg, _) = run(&m, &ctx(vec![user("hi")]), &o, &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(msg.model, "gpt-5.4");
    let r = &mock.requests()[0];
    assert_eq!(
        r["path"],
        "/openai/v1/responses?api-version=2025-04-01-preview"
    );
    let body = body_of(r);
    assert_eq!(body["model"], "prod-54");
    // Cache retention none still sends the session id as the cache key.
    assert_eq!(body["prompt_cache_key"], "sess-2");
    assert_eq!(body["reasoning"], json!({"effort": "none"}));
    assert_eq!(body.get("include"), None);
}

#[test]
fn missing_base_url_and_key_fail_before_sending() {
    let m = model("");
    let (msg, updates) = run(&m, &ctx(vec![user("hi")]), &opts(), &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(
        msg.error_message.as_deref(),
        Some(
            "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or \
             AZURE_OPENAI_RESOURCE_NAME, or pass azureBaseUrl, azureResourceName, or model.baseUrl."
        )
    );
    let no_key = StreamOptions {
        api_key: None,
        ..opts()
    };
    let (msg, _) = run(&m, &ctx(vec![user("hi")]), &no_key, &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("No API key for provider: azure")
    );
}

#[test]
fn http_errors_and_truncated_streams() {
    let mock = MockLlm::start(json!({"replies": [
        {"status": 401, "error_type": "invalid_request_error", "error_message": "Access denied due to invalid subscription key."},
        {"status": 500, "raw_error_body": "upstream exploded"},
        {"blocks": [{"type": "text", "text": "cut"}], "truncate_without_stop": true}
    ]}));
    let m = model(&format!("{}/openai/v1", mock.base_url()));
    let c = ctx(vec![user("hi")]);
    let (msg, updates) = run(&m, &c, &opts(), &CancelToken::new());
    assert!(updates.is_empty());
    assert_eq!(
        normalized(&msg),
        json!({"role":"assistant","content":[],"api":"azure-openai-responses","provider":"azure",
               "model":"gpt-5.4","usage": zero_usage(),"stopReason":"error","timestamp":0,
               "errorMessage":"Azure OpenAI API error (401): {\"message\":\"Access denied due to invalid subscription key.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}",
               "durationMs":0,"thinkingLevel":"medium"})
    );
    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Azure OpenAI API error (500): 500 upstream exploded")
    );
    assert!(pi_rpc::llm::errors::is_retryable(&msg, m.context_window));
    let (msg, _) = run(&m, &c, &opts(), &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("OpenAI Responses stream ended before a terminal response event")
    );
}

#[test]
fn abort_during_a_hang_returns_promptly() {
    let mock = MockLlm::start(json!({"replies": [{
        "blocks": [{"type": "text", "text": "partial"}],
        "hang": true
    }]}));
    let m = model(&format!("{}/openai/v1", mock.base_url()));
    let (msg, took) = run_cancelled_after(&m, &ctx(vec![user("hi")]), &opts(), "text_delta");
    eprintln!("azure-openai-responses: cancel → stream_assistant returned in {took:?}");
    let v = normalized(&msg);
    assert_eq!(v["stopReason"], "aborted");
    assert_eq!(
        v["errorMessage"],
        "OpenAI Responses stream ended before a terminal response event"
    );
    assert_eq!(v["content"][0]["text"], "partial");
}

/// Through the binary: the registry resolves Azure's settings from the environment, a stored
/// auth.json `env` overriding it for the provider.
#[test]
fn the_agent_resolves_azure_settings_from_env_and_auth_json() {
    use crate::support::run::{run_prompt, LONG};
    use crate::support::Agent;
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "ok"}]},
        {"blocks": [{"type": "text", "text": "ok"}]}
    ]}));
    let args = ["--no-session", "--provider", "azure", "--model", "gpt-5.4"];
    let mut agent = Agent::builder()
        .no_default_args()
        .args(args)
        .env("AZURE_OPENAI_API_KEY", "k-azure")
        .env(
            "AZURE_OPENAI_BASE_URL",
            &format!("{}/openai/v1", mock.base_url()),
        )
        .env("AZURE_OPENAI_API_VERSION", "preview")
        .env("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "gpt-5.4=dep-env")
        .spawn();
    run_prompt(&mut agent, "p", "hi");
    agent.close_stdin();
    let auth = json!({"azure": {"type": "api_key", "key": "k-stored",
        "env": {"AZURE_OPENAI_DEPLOYMENT_NAME_MAP": "gpt-5.4=dep-stored"}}});
    let mut agent = Agent::builder()
        .no_default_args()
        .args(args)
        .agent_file("auth.json", &auth.to_string())
        .env(
            "AZURE_OPENAI_BASE_URL",
            &format!("{}/openai/v1", mock.base_url()),
        )
        .env("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "gpt-5.4=dep-env")
        .spawn();
    run_prompt(&mut agent, "p", "hi");
    agent.close_stdin();
    let requests = mock.wait_requests(2, LONG);
    assert_eq!(
        requests[0]["path"],
        "/openai/v1/responses?api-version=preview"
    );
    assert_eq!(body_of(&requests[0])["model"], "dep-env");
    assert_eq!(requests[1]["path"], "/openai/v1/responses?api-version=v1");
    assert_eq!(body_of(&requests[1])["model"], "dep-stored");
}

/// azure's Chat Completions model: the same base-URL and deployment rules, then plain Chat
/// Completions with `Authorization: Bearer`.
#[test]
fn the_chat_completions_model_resolves_like_responses() {
    let mock = MockLlm::start(json!({"replies": [
        {"blocks": [{"type": "text", "text": "Hi."}]}
    ]}));
    let m = Model {
        id: "deepseek-v4-pro".into(),
        api: "openai-completions".into(),
        reasoning: false,
        ..model("")
    };
    let o = StreamOptions {
        env: env(&[
            (
                "AZURE_OPENAI_BASE_URL",
                &format!("{}/openai/v1", mock.base_url()),
            ),
            (
                "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
                "deepseek-v4-pro=ds-prod",
            ),
        ]),
        ..opts()
    };
    let (msg, _) = run(&m, &ctx(vec![user("hi")]), &o, &CancelToken::new());
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.model, "deepseek-v4-pro");
    let r = &mock.requests()[0];
    assert_eq!(r["path"], "/openai/v1/chat/completions");
    assert_eq!(r["auth_headers_present"], json!(["authorization"]));
    assert_eq!(body_of(r)["model"], "ds-prod");
    // Without an endpoint: pi's error, nothing sent.
    let (msg, _) = run(&m, &ctx(vec![user("hi")]), &opts(), &CancelToken::new());
    assert!(msg
        .error_message
        .as_deref()
        .is_some_and(|e| e.starts_with("Azure OpenAI base URL is required.")));
    assert_eq!(mock.requests().len(), 1);
}
