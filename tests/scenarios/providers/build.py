#!/usr/bin/env python3
"""Writes one differential scenario per built-in provider and wire API pi-rpc speaks
(prov_x_<provider>_<api>.json): the provider rerouted to the mock by a models.json entry
(baseUrl + apiKey, as the kit's prov_* scenarios do), a catalog model of that API (the
provider's default model when it is on that API, else its first reasoning model), a prompt
with a thinking + text + bash tool round trip, then a second prompt at thinking level off.
Two more for the Responses compat of pi's newest OpenAI models: prov_x_openai_resp_switch
(model switches) and prov_x_openai_resp_compact (the kit's compact scenario; needs CONFORMANCE).

The model list comes from pi-rpc's own catalog (src/llm/registry/catalog/catalog.jsonl)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CATALOG = os.path.join(ROOT, "src", "llm", "registry", "catalog", "catalog.jsonl")
APIS = {
    "anthropic-messages": "anth",
    "openai-completions": "chat",
    "openai-responses": "resp",
    "google-generative-ai": "google",
    "mistral-conversations": "mistral",
    "azure-openai-responses": "resp",
}
DEFAULTS = {
    "ant-ling": "Ring-2.6-1T", "anthropic": "claude-opus-5-5", "openai": "gpt-6.2-sol",
    "nvidia": "nvidia/nemotron-3.5-super-vl-120b-a12b", "deepseek": "deepseek-v4-pro",
    "google": "gemini-4-argon", "github-copilot": "gpt-6.1-sol",
    "openrouter": "moonshotai/kimi-k2.7-code", "vercel-ai-gateway": "zai/glm-5.3",
    "xai": "grok-4.7", "groq": "openai/gpt-oss-120b", "cerebras": "gpt-oss-120b",
    "zai": "glm-5.3", "zai-coding-cn": "glm-5.3", "minimax": "MiniMax-M3",
    "minimax-cn": "MiniMax-M3", "moonshotai": "kimi-k2.7-code", "moonshotai-cn": "kimi-k2.7-code",
    "huggingface": "moonshotai/Kimi-K2.7-Code", "fireworks": "accounts/fireworks/models/kimi-k3",
    "together": "moonshotai/Kimi-K3", "baseten": "zai-org/GLM-5.3", "opencode": "kimi-k2.7-code",
    "opencode-go": "kimi-k3.1-pro", "kimi-coding": "kimi-for-coding", "meta": "muse-spark-1.3",
    "cloudflare-workers-ai": "@cf/moonshotai/kimi-k2.7-code",
    "cloudflare-ai-gateway": "workers-ai/@cf/moonshotai/kimi-k2.7-code",
    "qwen-token-plan": "qwen3.8-max", "qwen-token-plan-cn": "qwen3.8-max",
    "qwen-token-plan-individual": "qwen3.8-max", "qwen-token-plan-individual-cn": "qwen3.8-max",
    "xiaomi": "mimo-v2.6-pro", "xiaomi-token-plan-cn": "mimo-v2.6-pro",
    "xiaomi-token-plan-ams": "mimo-v2.6-pro", "xiaomi-token-plan-sgp": "mimo-v2.6-pro",
    "azure": "gpt-6.2-sol", "mistral": "devstral-medium-latest",
}
# More (provider, model) pairs whose compat the per-API picks above do not reach.
EXTRA = [
    ("baseten", "zai-org/GLM-5.2"),                       # thinkingFormat baseten
    ("together", "moonshotai/Kimi-K3"),                   # together
    ("qwen-token-plan", "qwen3.8-max"),                   # qwen
    ("openrouter", "anthropic/claude-fable-5"),            # cache_control anthropic
    ("nvidia", "nvidia/nemotron-3.5-super-vl-120b-a12b"),  # catalog header
    ("kimi-coding", "kimi-for-coding"),
    ("anthropic", "claude-fable-5"),                      # allowedFallbackModels
    ("anthropic", "claude-fable-5-2"),                    # fallbacks + mid-conversation effort
]
# Scenarios with their own steps: (name, provider, model, steps). The effort change: high for
# the tool round trip, then max (earlier replies keep their effort markers), then the
# messages as stored (providerThinkingLevel).
STEPS = {
    "prov_x_anthropic_effort_change": ("anthropic", "claude-opus-5-5", [
        {"send": {"id": "t1", "type": "set_thinking_level", "level": "high"}},
        {"wait": {"type": "response", "id": "t1"}},
        {"send": {"id": "p1", "type": "prompt", "message": "Run echo"}},
        {"wait": {"type": "agent_settled"}, "timeout_ms": 20000},
        {"send": {"id": "t2", "type": "set_thinking_level", "level": "max"}},
        {"wait": {"type": "response", "id": "t2"}},
        {"send": {"id": "p2", "type": "prompt", "message": "Now just answer"}},
        {"wait": {"type": "agent_settled"}, "timeout_ms": 20000},
        {"send": {"id": "m1", "type": "get_messages"}},
        {"wait": {"type": "response", "id": "m1"}},
    ]),
    # Claude rejects the strict tools for its limits: the request is sent again with the
    # preferred-strict tools non-strict (a diagnostic on the reply), and the session's next
    # prompt starts that way.
    "prov_x_anthropic_strict_limits": ("anthropic", "claude-opus-5-5", [
        {"send": {"id": "p1", "type": "prompt", "message": "Run echo"}},
        {"wait": {"type": "agent_settled"}, "timeout_ms": 20000},
        {"send": {"id": "p2", "type": "prompt", "message": "Now just answer"}},
        {"wait": {"type": "agent_settled"}, "timeout_ms": 20000},
        {"send": {"id": "m1", "type": "get_messages"}},
        {"wait": {"type": "response", "id": "m1"}},
    ]),
}
DEFAULT_STEPS = [
    {"send": {"id": "st0", "type": "get_state"}},
    {"wait": {"type": "response", "id": "st0"}},
    {"send": {"id": "p1", "type": "prompt", "message": "Run echo"}},
    {"wait": {"type": "agent_settled"}, "timeout_ms": 20000},
    {"send": {"id": "t0", "type": "set_thinking_level", "level": "off"}},
    {"wait": {"type": "response", "id": "t0"}},
    {"send": {"id": "p2", "type": "prompt", "message": "Now just answer"}},
    {"wait": {"type": "agent_settled"}, "timeout_ms": 20000},
]
# Message threads (a `thread` create, then continues), which pi uses by default only on
# api.anthropic.com: switched on for the mock through a models.json override.
STEPS["prov_x_anthropic_threads"] = ("anthropic", "claude-opus-5-5", DEFAULT_STEPS)
# Thread rejections: the continue of the tool result is answered "thread_not_found" (sent
# again as a new thread), the second prompt's continue is rejected without a code for the
# unknown field (sent again without thread; threads off for the session).
STEPS["prov_x_anthropic_threads_fallback"] = ("anthropic", "claude-opus-5-5", DEFAULT_STEPS)
THREADS_ON = {"modelOverrides": {"claude-opus-5-5": {"compat": {"supportsMessageThreads": True}}}}
PROVIDER_FIELDS = {
    "prov_x_anthropic_threads": THREADS_ON,
    "prov_x_anthropic_threads_fallback": THREADS_ON,
}
THREAD_NOT_FOUND = {"status": 404, "raw_error_body": json.dumps({
    "type": "error", "error": {"type": "not_found_error", "message": "thread not found",
                               "details": {"error_code": "thread_not_found"}}})}
THREAD_UNKNOWN = {"status": 400, "error_type": "invalid_request_error",
                  "error_message": "thread: Extra inputs are not permitted"}
BEFORE_SECOND = {"prov_x_anthropic_threads_fallback": [THREAD_NOT_FOUND]}
BEFORE_THIRD = {"prov_x_anthropic_threads_fallback": [THREAD_UNKNOWN]}
# Replies put before the usual ones, by scenario.
FIRST_REPLIES = {
    "prov_x_anthropic_strict_limits": [
        {"status": 400, "error_type": "invalid_request_error",
         "error_message": "Too many strict tools (21 > 20)"},
    ],
}

ENV = {
    "cloudflare-workers-ai": {"CLOUDFLARE_ACCOUNT_ID": "acct"},
    "cloudflare-ai-gateway": {"CLOUDFLARE_ACCOUNT_ID": "acct", "CLOUDFLARE_GATEWAY_ID": "gw"},
}


def main():
    with open(CATALOG) as f:
        lines = f.read().splitlines()
    index = json.loads(lines[0])
    written = []
    picks = []
    for n, p in enumerate(index["providers"]):
        rows = json.loads(lines[n + 1])["models"]
        for a, (api, _) in enumerate(p["apis"]):
            if api not in APIS:
                continue
            ms = [r for r in rows if r.get("a", 0) == a]
            pick = next((r for r in ms if r["id"] == DEFAULTS.get(p["id"])), None) \
                or next((r for r in ms if r.get("r")), None) or ms[0]
            picks.append((p, api, pick, f"prov_x_{p['id'].replace('-', '_')}_{APIS[api]}"))
        for provider, model in EXTRA:
            if provider != p["id"]:
                continue
            row = next((r for r in rows if r["id"] == model), None)
            if row is None:
                continue
            api = p["apis"][row.get("a", 0)][0]
            slug = model.replace("/", "_").replace("-", "_").replace(".", "_").lower()
            picks.append((p, api, row, f"prov_x_{p['id'].replace('-', '_')}_{slug}"))
        for name, (provider, model, _) in STEPS.items():
            row = next((r for r in rows if r["id"] == model), None)
            if provider == p["id"] and row is not None:
                picks.append((p, p["apis"][row.get("a", 0)][0], row, name))
    for p, api, pick, name in picks:
        sc = {
            "description": f"Built-in provider {p['id']} ({api}) rerouted to the mock; catalog model {pick['id']}.",
            "session": "none",
            "provider": p["id"],
            "model": pick["id"],
            "extra_providers": {p["id"]: {"baseUrl": "{{MOCK_BASE_URL}}", "apiKey": "test-key",
                                          **PROVIDER_FIELDS.get(name, {})}},
            "env": ENV.get(p["id"], {}),
            "mock": {"replies": FIRST_REPLIES.get(name, []) + [
                {"blocks": [
                    {"type": "thinking", "text": "Need to run a command.", "chunk_size": 8},
                    {"type": "text", "text": "Running it.", "chunk_size": 5},
                    {"type": "tool_call", "id": "call_x_01", "name": "bash",
                     "input": {"command": "echo from-provider"}, "chunk_size": 12}],
                 "usage": {"input": 300, "output": 25, "cache_read": 100}},
            ] + BEFORE_SECOND.get(name, []) + [
                {"blocks": [{"type": "text", "text": "It printed from-provider."}],
                 "usage": {"input": 350, "output": 9}},
            ] + BEFORE_THIRD.get(name, []) + [
                {"blocks": [{"type": "text", "text": "Plain answer."}],
                 "usage": {"input": 400, "output": 3}},
            ]},
            "steps": STEPS[name][2] if name in STEPS else [
                {"send": {"id": "st0", "type": "get_state"}},
                {"wait": {"type": "response", "id": "st0"}},
                {"send": {"id": "p1", "type": "prompt", "message": "Run echo"}},
                {"wait": {"type": "agent_settled"}, "timeout_ms": 20000},
                {"send": {"id": "t0", "type": "set_thinking_level", "level": "off"}},
                {"wait": {"type": "response", "id": "t0"}},
                {"send": {"id": "p2", "type": "prompt", "message": "Now just answer"}},
                {"wait": {"type": "agent_settled"}, "timeout_ms": 20000},
            ],
        }
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(sc, f, indent=2)
            f.write("\n")
        written.append(name)
    written += write_switch_scenario()
    written += write_compact_scenario()
    print("\n".join(written))


def write_switch_scenario():
    """prov_x_openai_resp_switch: the Responses compat of pi's newest OpenAI models across model
    switches (additional_tools items, configuration_update items replayed for the same model
    only, top-level tools again on a model without them)."""
    def prompt(i, text):
        return [{"send": {"id": f"p{i}", "type": "prompt", "message": text}},
                {"wait": {"type": "agent_settled"}, "timeout_ms": 20000}]

    def switch(i, model):
        return [{"send": {"id": f"sm{i}", "type": "set_model", "provider": "openai", "modelId": model}},
                {"wait": {"type": "response", "id": f"sm{i}"}}]

    def reply(text):
        return {"blocks": [{"type": "text", "text": text}], "usage": {"input": 400, "output": 3}}

    name = "prov_x_openai_resp_switch"
    sc = {
        "description": "Built-in provider openai (openai-responses) rerouted to the mock: gpt-6.2-sol, "
                       "then gpt-6.1-sol at xhigh, gpt-6-cyber (no additional tools, no mid-conversation "
                       "effort), and gpt-6.2-sol again.",
        "session": "none",
        "provider": "openai",
        "model": "gpt-6.2-sol",
        "extra_providers": {"openai": {"baseUrl": "{{MOCK_BASE_URL}}", "apiKey": "test-key"}},
        "env": {},
        "mock": {"replies": [
            {"blocks": [
                {"type": "thinking", "text": "Need to run a command.", "chunk_size": 8},
                {"type": "text", "text": "Running it.", "chunk_size": 5},
                {"type": "tool_call", "id": "call_x_01", "name": "bash",
                 "input": {"command": "echo from-provider"}, "chunk_size": 12}],
             "usage": {"input": 300, "output": 25, "cache_read": 100}},
            reply("It printed from-provider."),
            reply("Second answer."),
            reply("Third answer."),
            reply("Fourth answer."),
        ]},
        "steps": [{"send": {"id": "st0", "type": "get_state"}},
                  {"wait": {"type": "response", "id": "st0"}}]
        + prompt(1, "Run echo")
        + [{"send": {"id": "t0", "type": "set_thinking_level", "level": "xhigh"}},
           {"wait": {"type": "response", "id": "t0"}}]
        + switch(1, "gpt-6.1-sol") + prompt(2, "Answer again")
        + switch(2, "gpt-6-cyber") + prompt(3, "And again")
        + switch(3, "gpt-6.2-sol") + prompt(4, "Last one"),
    }
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(sc, f, indent=2)
        f.write("\n")
    return [name]



def write_compact_scenario():
    """prov_x_openai_resp_compact: the conformance kit's compact scenario (manual compaction,
    two summarization requests, a prompt after it, the session entries) on gpt-6.2-sol."""
    kit = os.environ.get("CONFORMANCE")
    if not kit:
        print("CONFORMANCE unset: prov_x_openai_resp_compact left as it is", file=sys.stderr)
        return []
    with open(os.path.join(kit, "scenarios", "compact.json")) as f:
        sc = json.load(f)
    sc["description"] = "The conformance kit's compact scenario on openai gpt-6.2-sol (Responses " \
                        "compat: additional_tools, configuration_update items in summarization requests)."
    sc["provider"] = "openai"
    sc["model"] = "gpt-6.2-sol"
    sc["extra_providers"] = {"openai": {"baseUrl": "{{MOCK_BASE_URL}}", "apiKey": "test-key"}}
    name = "prov_x_openai_resp_compact"
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(sc, f, indent=2)
        f.write("\n")
    return [name]

if __name__ == "__main__":
    main()
