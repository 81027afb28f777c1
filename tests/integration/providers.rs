//! Every built-in provider on the wire APIs pi-rpc speaks answers a prompt through the
//! binary (issue 14): the provider's own environment variable (and settings) make it available,
//! a models.json `baseUrl` reroutes it to the scripted server, and the request goes out on the
//! right path with the provider's key header. Request shapes field by field are pinned by the
//! conformance goldens (`prov_*`) and the adapters' own tests; this test covers the breadth.

use serde_json::{json, Value};

use crate::support::mock_llm::MockLlm;
use crate::support::run::{run_prompt, LONG};
use crate::support::Agent;

/// (provider, env vars that make it available). openai-codex (OAuth only: no env key; its
/// adapter has its own tests), Bedrock (its binary event stream has its own scripted server in
/// `llm_bedrock`) and typesafe (no chat model) are not here.
const PROVIDERS: &[(&str, &[(&str, &str)])] = &[
    ("ant-ling", &[("ANT_LING_API_KEY", "k-ant-ling")]),
    ("anthropic", &[("ANTHROPIC_API_KEY", "k-anthropic")]),
    ("azure", &[("AZURE_OPENAI_API_KEY", "k-azure")]),
    ("baseten", &[("BASETEN_API_KEY", "k-baseten")]),
    ("cerebras", &[("CEREBRAS_API_KEY", "k-cerebras")]),
    (
        "cloudflare-ai-gateway",
        &[
            ("CLOUDFLARE_API_KEY", "k-cf"),
            ("CLOUDFLARE_ACCOUNT_ID", "acc"),
            ("CLOUDFLARE_GATEWAY_ID", "gw"),
        ],
    ),
    (
        "cloudflare-workers-ai",
        &[
            ("CLOUDFLARE_API_KEY", "k-cf"),
            ("CLOUDFLARE_ACCOUNT_ID", "acc"),
        ],
    ),
    ("deepseek", &[("DEEPSEEK_API_KEY", "k-deepseek")]),
    ("fireworks", &[("FIREWORKS_API_KEY", "k-fireworks")]),
    ("github-copilot", &[("COPILOT_GITHUB_TOKEN", "k-copilot")]),
    ("google", &[("GEMINI_API_KEY", "k-google")]),
    ("google-vertex", &[("GOOGLE_CLOUD_API_KEY", "k-vertex")]),
    ("groq", &[("GROQ_API_KEY", "k-groq")]),
    ("huggingface", &[("HF_TOKEN", "k-hf")]),
    ("kimi-coding", &[("KIMI_API_KEY", "k-kimi")]),
    ("meta", &[("META_API_KEY", "k-meta")]),
    ("minimax", &[("MINIMAX_API_KEY", "k-minimax")]),
    ("minimax-cn", &[("MINIMAX_CN_API_KEY", "k-minimax-cn")]),
    ("mistral", &[("MISTRAL_API_KEY", "k-mistral")]),
    ("moonshotai", &[("MOONSHOT_API_KEY", "k-moonshot")]),
    ("moonshotai-cn", &[("MOONSHOT_API_KEY", "k-moonshot")]),
    ("nvidia", &[("NVIDIA_API_KEY", "k-nvidia")]),
    ("openai", &[("OPENAI_API_KEY", "sk-openai")]),
    ("opencode", &[("OPENCODE_API_KEY", "k-opencode")]),
    ("opencode-go", &[("OPENCODE_API_KEY", "k-opencode")]),
    ("openrouter", &[("OPENROUTER_API_KEY", "k-openrouter")]),
    ("qwen-token-plan", &[("QWEN_TOKEN_PLAN_API_KEY", "k-qwen")]),
    ("radius", &[("RADIUS_API_KEY", "k-radius")]),
    (
        "qwen-token-plan-cn",
        &[("QWEN_TOKEN_PLAN_CN_API_KEY", "k-qwen")],
    ),
    (
        "qwen-token-plan-individual",
        &[("QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY", "k-qwen")],
    ),
    (
        "qwen-token-plan-individual-cn",
        &[("QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY", "k-qwen")],
    ),
    ("together", &[("TOGETHER_API_KEY", "k-together")]),
    ("vercel-ai-gateway", &[("AI_GATEWAY_API_KEY", "k-vercel")]),
    ("xai", &[("XAI_API_KEY", "k-xai")]),
    ("xiaomi", &[("XIAOMI_API_KEY", "k-xiaomi")]),
    (
        "xiaomi-token-plan-ams",
        &[("XIAOMI_TOKEN_PLAN_AMS_API_KEY", "k-x")],
    ),
    (
        "xiaomi-token-plan-cn",
        &[("XIAOMI_TOKEN_PLAN_CN_API_KEY", "k-x")],
    ),
    (
        "xiaomi-token-plan-sgp",
        &[("XIAOMI_TOKEN_PLAN_SGP_API_KEY", "k-x")],
    ),
    ("zai", &[("ZAI_API_KEY", "k-zai")]),
    ("zai-coding-cn", &[("ZAI_CODING_CN_API_KEY", "k-zai")]),
];

const APIS: &[&str] = &[
    "anthropic-messages",
    "openai-completions",
    "openai-responses",
    "google-generative-ai",
    "mistral-conversations",
    "azure-openai-responses",
    "pi-messages",
    "openai-codex-responses",
    "google-vertex",
];

/// The header that carries the key, as the scripted server logs it (presence only).
fn key_header(provider: &str, api: &str) -> &'static str {
    match (provider, api) {
        ("cloudflare-ai-gateway", _) => "cf-aig-authorization",
        ("github-copilot", _) => "authorization",
        (_, "anthropic-messages") => "x-api-key",
        (_, "google-generative-ai" | "google-vertex") => "x-goog-api-key",
        (_, "azure-openai-responses") => "api-key",
        _ => "authorization",
    }
}

fn path_for(api: &str, id: &str) -> String {
    match api {
        "anthropic-messages" => "/v1/messages?beta=true".into(),
        "openai-completions" => "/chat/completions".into(),
        "openai-responses" => "/responses".into(),
        "mistral-conversations" => "/v1/chat/completions".into(),
        "azure-openai-responses" => "/responses?api-version=v1".into(),
        "pi-messages" => "/messages".into(),
        "openai-codex-responses" => "/codex/responses".into(),
        // Express mode on a custom baseUrl: the version and the publisher path.
        "google-vertex" => {
            format!("/v1/publishers/google/models/{id}:streamGenerateContent?alt=sse")
        }
        _ => format!("/models/{id}:streamGenerateContent?alt=sse"),
    }
}

#[test]
fn every_provider_on_the_four_apis_answers_a_prompt() {
    let mut covered = 0;
    let mut vertex_covered = false;
    for (provider, env) in PROVIDERS {
        let mock = MockLlm::start(json!({"replies": []}));
        let models = json!({"providers": {*provider: {"baseUrl": mock.base_url()}}});
        let mut builder = Agent::builder()
            .no_default_args()
            .args(["--no-session"])
            .models(Some(models));
        for (k, v) in *env {
            builder = builder.env(k, v);
        }
        let mut agent = builder.spawn();
        let listed = agent.request("m", json!({"type": "get_available_models"}));
        // Providers sharing a variable (moonshotai, opencode, cloudflare) are listed together.
        let listed: Vec<Value> = listed["data"]["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["provider"] == *provider)
            .cloned()
            .collect();
        assert!(!listed.is_empty(), "{provider}: not available");
        for api in APIS {
            let Some(model) = listed.iter().find(|m| m["api"] == *api) else {
                continue;
            };
            let id = model["id"].as_str().unwrap_or_default().to_string();
            let set = agent.request(
                "s",
                json!({"type": "set_model", "provider": provider, "modelId": id}),
            );
            assert_eq!(set["success"], true, "{provider}/{id}: {set}");
            let before = mock.requests().len();
            mock.push_reply(json!({"blocks": [{"type": "text", "text": "hello"}]}));
            let records = run_prompt(&mut agent, "p", "hi");
            let end = records
                .iter()
                .find(|r| r["type"] == "agent_end")
                .unwrap_or_else(|| panic!("{provider}/{id}: no agent_end"));
            let last = end["messages"]
                .as_array()
                .and_then(|m| m.last())
                .cloned()
                .unwrap_or_default();
            assert_eq!(
                (last["stopReason"].clone(), last["provider"].clone()),
                (json!("stop"), json!(provider)),
                "{provider}/{id}: {last}"
            );
            let requests = mock.wait_requests(before + 1, LONG);
            let request = &requests[before];
            assert_eq!(request["path"], path_for(api, &id), "{provider}/{id}");
            let auth: Vec<&str> = request["auth_headers_present"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match key_header(provider, api) {
                // Not a header the scripted server redacts: its value is logged.
                "cf-aig-authorization" => {
                    assert!(auth.is_empty(), "{provider}/{id}: {request}");
                    assert_eq!(
                        request["headers"]["cf-aig-authorization"], "Bearer k-cf",
                        "{provider}/{id}"
                    );
                }
                header => assert_eq!(auth, vec![header], "{provider}/{id}: {request}"),
            }
            covered += 1;
            vertex_covered |= *provider == "google-vertex";
        }
        agent.close_stdin();
    }
    // Several providers have more than one API.
    assert!(covered >= 47, "covered {covered}");
    assert!(vertex_covered, "google-vertex (express key) not covered");
}

#[test]
fn cloudflare_needs_its_account_id_and_fills_the_base_url() {
    let mock = MockLlm::start(json!({"replies": [{"blocks": [{"type": "text", "text": "ok"}]}]}));
    let base = format!("{}/{{CLOUDFLARE_ACCOUNT_ID}}/ai/v1", mock.base_url());
    let models = json!({"providers": {"cloudflare-workers-ai": {"baseUrl": base}}});
    // The key alone does not make the provider available.
    let mut agent = Agent::builder()
        .no_default_args()
        .args(["--no-session"])
        .models(Some(models.clone()))
        .env("CLOUDFLARE_API_KEY", "k")
        .spawn();
    let listed = agent.request("m", json!({"type": "get_available_models"}));
    assert_eq!(listed["data"]["models"], json!([]));
    agent.close_stdin();
    // With the account id it is, and the id fills the URL.
    let mut agent = Agent::builder()
        .no_default_args()
        .args([
            "--no-session",
            "--provider",
            "cloudflare-workers-ai",
            "--model",
            "@cf/moonshotai/kimi-k2.7-code",
        ])
        .models(Some(models))
        .env("CLOUDFLARE_API_KEY", "k")
        .env("CLOUDFLARE_ACCOUNT_ID", "acct-7")
        .spawn();
    run_prompt(&mut agent, "p", "hi");
    let requests = mock.wait_requests(1, LONG);
    assert_eq!(requests[0]["path"], "/acct-7/ai/v1/chat/completions");
}

#[test]
fn copilot_sends_its_per_request_headers() {
    let mock = MockLlm::start(json!({"replies": [{"blocks": [{"type": "text", "text": "ok"}]}]}));
    let models = json!({"providers": {"github-copilot": {"baseUrl": mock.base_url()}}});
    let mut agent = Agent::builder()
        .no_default_args()
        .args([
            "--no-session",
            "--provider",
            "github-copilot",
            "--model",
            "gpt-6.1-sol",
        ])
        .models(Some(models))
        .env("COPILOT_GITHUB_TOKEN", "gho_x")
        .spawn();
    run_prompt(&mut agent, "p", "hi");
    let requests = mock.wait_requests(1, LONG);
    let h = &requests[0]["headers"];
    assert_eq!(
        (
            h["x-initiator"].clone(),
            h["openai-intent"].clone(),
            h["copilot-integration-id"].clone(),
            h["editor-version"].clone()
        ),
        (
            json!("user"),
            json!("conversation-edits"),
            json!("vscode-chat"),
            json!("vscode/1.107.0")
        ),
        "{h}"
    );
}

/// Every credential source at once lists every chat model but openai-codex's (OAuth only):
/// 1,688 models, the number pi 1.6.0 lists with the same environment (checked against it, and
/// the objects were identical).
#[test]
fn all_credentials_list_the_whole_catalog() {
    let dir = crate::support::tempdir::TempDir::new("adc");
    dir.write("adc.json", "{}");
    let adc = dir.path().join("adc.json").to_string_lossy().to_string();
    let mut builder = Agent::builder()
        .no_default_args()
        .args(["--no-session"])
        .models(None)
        .env("GOOGLE_APPLICATION_CREDENTIALS", &adc)
        .env("GOOGLE_CLOUD_PROJECT", "p")
        .env("GOOGLE_CLOUD_LOCATION", "us-central1")
        .env("AWS_PROFILE", "dev")
        .env("MISTRAL_API_KEY", "k")
        .env("RADIUS_API_KEY", "k")
        .env("TYPESAFE_API_KEY", "k");
    for (_, env) in PROVIDERS {
        for (k, v) in *env {
            builder = builder.env(k, v);
        }
    }
    let mut agent = builder.spawn();
    let listed = agent.request("m", json!({"type": "get_available_models"}));
    let models = listed["data"]["models"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(models.len(), 1688);
    let providers: std::collections::BTreeSet<&str> = models
        .iter()
        .filter_map(|m| m["provider"].as_str())
        .collect();
    assert_eq!(providers.len(), 41, "{providers:?}");
    assert!(!providers.contains("openai-codex") && !providers.contains("typesafe"));
}

/// models-store.json (pi's saved pi.dev catalog refresh) overlays the built-in models when it
/// is newer than the bundled catalog, as pi's RPC mode applies it (checked against pi 1.6.0);
/// an entry older than the catalog is ignored.
#[test]
fn models_store_entries_newer_than_the_catalog_apply() {
    let store = json!({
        "deepseek": {"lastModified": 1_900_000_000_000u64, "checkedAt": 1_900_000_000_000u64, "models": [
            {"id": "deepseek-v4-pro", "name": "Renamed Pro", "api": "openai-completions", "provider": "deepseek",
             "baseUrl": "https://api.deepseek.com", "reasoning": true, "input": ["text"],
             "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
             "contextWindow": 1000, "maxTokens": 100, "type": "chat"},
            {"id": "brand-new", "name": "Brand New", "api": "openai-completions", "provider": "deepseek",
             "baseUrl": "https://api.deepseek.com", "reasoning": false, "input": ["text"],
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
             "contextWindow": 5000, "maxTokens": 500, "type": "chat"}]},
        "groq": {"lastModified": 1000, "models": [{"id": "old-groq", "provider": "groq", "type": "chat"}]}
    });
    let mut agent = Agent::builder()
        .no_default_args()
        .args(["--no-session"])
        .models(None)
        .agent_file("models-store.json", &store.to_string())
        .env("DEEPSEEK_API_KEY", "k")
        .env("GROQ_API_KEY", "k")
        .spawn();
    let listed = agent.request("m", json!({"type": "get_available_models"}));
    let models = listed["data"]["models"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let deepseek: Vec<Value> = models
        .iter()
        .filter(|m| m["provider"] == "deepseek")
        .cloned()
        .collect();
    assert_eq!(
        deepseek.iter().map(|m| m["id"].clone()).collect::<Vec<_>>(),
        [
            json!("deepseek-flash"),
            json!("deepseek-v4-pro"),
            json!("brand-new")
        ]
    );
    assert_eq!(deepseek[1], store["deepseek"]["models"][0]);
    assert!(models.iter().all(|m| m["id"] != "old-groq"));
    assert_eq!(models.iter().filter(|m| m["provider"] == "groq").count(), 7);
}

/// `--list-models <search>` prints what pi 1.6.0 prints for the same credentials and search
/// (captured from it): pi-tui's fuzzy token match on "<provider> <id>", localeCompare order
/// ("~moonshotai/…" first, "k3:batch" before "k3.1"), "1.0M" for 1,048,576.
#[test]
fn list_models_search_matches_pi() {
    let expected = include_str!("../fixtures/pi160_list_models_k3.txt");
    let root = crate::support::tempdir::TempDir::new("list-models");
    std::fs::create_dir_all(root.path().join("agent")).expect("agent dir");
    let out = std::process::Command::new(crate::support::outside::pi_rpc_bin())
        .args(["--list-models", "k3"])
        .env_clear()
        .env("HOME", root.path())
        .env("PI_CODING_AGENT_DIR", root.path().join("agent"))
        .env("OPENROUTER_API_KEY", "k")
        .env("CLOUDFLARE_API_KEY", "k")
        .env("CLOUDFLARE_ACCOUNT_ID", "a")
        .env("HF_TOKEN", "k")
        .output()
        .expect("run pi-rpc");
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

/// A Radius gateway model as `/v1/config` lists it (no `type`; `lab`, `enabled`, `providers`
/// are gateway metadata).
fn gateway_model(id: &str) -> Value {
    json!({"id": id, "name": id.to_uppercase(), "reasoning": true,
           "thinkingLevelMap": {"off": null, "high": "high"}, "input": ["text", "image"],
           "contextWindow": 200000, "maxTokens": 32000, "lab": "Lab X",
           "cost": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 0}, "enabled": true,
           "providers": [{"id": "openrouter", "name": "OpenRouter", "credential": "radius", "source": "radius"}]})
}

fn as_radius_model(mut m: Value, provider: &str, base_url: &str) -> Value {
    m["api"] = json!("pi-messages");
    m["provider"] = json!(provider);
    m["baseUrl"] = json!(base_url);
    m
}

/// models-store.json lists that replace a catalog, as pi 1.6.0's RPC mode reads them
/// (`withPersonalizedCatalog`, `radiusProvider.refreshModels`; the same agent dir is the
/// differential scenario `prov_x_store_lists`, identical with pi): OpenRouter's per-key list,
/// Radius' gateway list, a models.json Radius gateway with its stored list (compat merged,
/// the gateway's base URL kept) and one listed from a legacy `gatewayConfig` in auth.json.
/// Custom gateways come right after the built-ins; the file is not written.
#[test]
fn models_store_lists_replace_the_openrouter_and_radius_catalogs() {
    let openrouter = json!([
        {"id": "anthropic/claude-fable-5", "name": "Anthropic: Claude Fable 5", "api": "openai-completions",
         "provider": "openrouter", "baseUrl": "https://openrouter.ai/api/v1", "reasoning": true,
         "input": ["text", "image"], "cost": {"input": 9, "output": 45, "cacheRead": 0.9, "cacheWrite": 11},
         "contextWindow": 500000, "maxTokens": 64000, "compat": {"supportsStrictMode": true}, "type": "chat"},
        {"id": "x/custom-only", "name": "X Custom", "api": "openai-completions", "provider": "openrouter",
         "baseUrl": "https://openrouter.ai/api/v1", "reasoning": false, "input": ["text"],
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 1000,
         "maxTokens": 100, "type": "chat", "weird": {"a": 1}},
        {"id": "img/one", "name": "Img", "api": "openrouter-images", "provider": "openrouter",
         "baseUrl": "https://openrouter.ai/api/v1", "type": "image"},
        {"id": "other/prov", "provider": "groq", "type": "chat"}
    ]);
    let radius_base = "https://radius.pi.dev/v1";
    let mut slow = gateway_model("slow");
    slow["free"] = json!(true);
    let radius = json!([
        as_radius_model(gateway_model("fast"), "radius", radius_base),
        as_radius_model(slow, "radius", radius_base),
        as_radius_model(gateway_model("zzz"), "other", "https://x/v1")
    ]);
    let custom = as_radius_model(
        gateway_model("gwmodel"),
        "myrad",
        "https://gw.example/api/v1",
    );
    let store = json!({
        "openrouter": {"models": openrouter, "checkedAt": 1_764_000_000_000u64},
        "radius": {"models": radius, "checkedAt": 1_764_000_000_000u64},
        "myrad": {"models": [custom], "checkedAt": 1_764_000_000_000u64}
    });
    let auth = json!({"legacyrad": {"type": "oauth", "access": "la", "refresh": "lr",
        "expires": 9_999_999_999_999u64, "gatewayConfig": {"baseUrl": "https://legacy.example/v1",
        "models": [gateway_model("leg1"), {"id": "bad"}]}}});
    let models_json = json!({"providers": {
        "legacyrad": {"baseUrl": "https://legacy.example/v1", "oauth": "radius", "name": "Legacy GW"},
        "plain": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k",
                  "models": [{"id": "p1"}]},
        "myrad": {"baseUrl": "https://gw.example/v1", "oauth": "radius", "compat": {"foo": true}}
    }});
    let store_text = serde_json::to_string_pretty(&store).unwrap();
    let mut agent = Agent::builder()
        .no_default_args()
        .args(["--no-session"])
        .models(Some(models_json))
        .agent_file("models-store.json", &store_text)
        .agent_file("auth.json", &auth.to_string())
        .env("OPENROUTER_API_KEY", "or-key")
        .env("RADIUS_API_KEY", "radius-key")
        .spawn();
    let listed = agent.request("m", json!({"type": "get_available_models"}));
    let mut expected_custom = store["myrad"]["models"][0].clone();
    expected_custom["compat"] = json!({"foo": true});
    let plain = json!({"id": "p1", "name": "p1", "api": "openai-completions", "provider": "plain",
        "baseUrl": "http://127.0.0.1:9/v1", "reasoning": false, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000, "maxTokens": 16384});
    assert_eq!(
        listed["data"]["models"],
        json!([
            store["openrouter"]["models"][0],
            store["openrouter"]["models"][1],
            store["radius"]["models"][0],
            store["radius"]["models"][1],
            as_radius_model(
                gateway_model("leg1"),
                "legacyrad",
                "https://legacy.example/v1"
            ),
            expected_custom,
            plain
        ])
    );
    agent.close_stdin();
    agent.wait_exit(crate::support::agent::DEFAULT_TIMEOUT);
    assert_eq!(
        std::fs::read_to_string(agent.agent_dir.join("models-store.json")).unwrap(),
        store_text
    );
}
