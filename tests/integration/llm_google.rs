//! The `google-generative-ai` adapter against the scripted LLM server: whole final messages,
//! the reported events and the request body, each compared with what pi 1.6.0's own adapter
//! (`@earendil-works/pi-ai` over `@google/genai`) produced for the same script and conversation
//! (captured against this mock; generated tool-call ids compared by shape).

use super::llm_openai_responses::{assert_body, assert_events, assert_final, run};

/// Thought parts, text and a function call with thought signatures; usage with cached and thought tokens; budget thinking config and const-as-enum tools in the request. (pi 1.6.0 capture `g1`)
#[test]
fn thought_text_and_function_call_match_pi() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-flash","provider":"mockg","reasoning":true,"input":["text","image"],"cost":{"input":0.3,"output":2.5,"cacheRead":0.5,"cacheWrite":0}},"systemPrompt":"You are helpful.","tools":[{"name":"bash","description":"Run a command","parameters":{"type":"object","properties":{"command":{"type":"string"},"mode":{"const":"fast"}},"required":["command"]}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium","sessionId":"sess-1"},"mock":{"replies":[{"blocks":[{"type":"thinking","text":"Let me think.","signature":"U0lHMTIz","chunk_size":5},{"type":"text","text":"Running it.","chunk_size":4},{"type":"tool_call","id":"call_1","name":"bash","input":{"command":"echo hi"}}],"usage":{"input":100,"output":20,"cache_read":30,"reasoning":5}}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":"Let me think.","thinkingSignature":"U0lHMTIz"},{"type":"text","text":"Running it."},{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"echo hi"}}],"api":"google-generative-ai","provider":"mockg","model":"gemini-2.5-flash","usage":{"input":100,"output":20,"cacheRead":30,"cacheWrite":0,"reasoning":5,"totalTokens":150,"cost":{"input":0.000029999999999999997,"output":0.00005,"cacheRead":0.000014999999999999999,"cacheWrite":0,"total":0.00009499999999999999,"totalFromProvider":false}},"stopReason":"toolUse","responseId":"resp_mock_0001","rawStopReason":"STOP"}"#,
    );
    assert_body(
        &r,
        r#"{"contents":[{"parts":[{"text":"hi"}],"role":"user"}],"systemInstruction":{"parts":[{"text":"You are helpful."}],"role":"user"},"tools":[{"functionDeclarations":[{"name":"bash","description":"Run a command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"},"mode":{"enum":["fast"]}},"required":["command"]}}]}],"generationConfig":{"maxOutputTokens":16384,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"thinking_start","contentIndex":0},{"type":"thinking_delta","contentIndex":0,"delta":"Let m"},{"type":"thinking_delta","contentIndex":0,"delta":"e thi"},{"type":"thinking_delta","contentIndex":0,"delta":"nk."},{"type":"thinking_end","contentIndex":0,"content":"Let me think."},{"type":"text_start","contentIndex":1},{"type":"text_delta","contentIndex":1,"delta":"Runn"},{"type":"text_delta","contentIndex":1,"delta":"ing "},{"type":"text_delta","contentIndex":1,"delta":"it."},{"type":"text_end","contentIndex":1,"content":"Running it."},{"type":"toolcall_start","contentIndex":2},{"type":"toolcall_delta","contentIndex":2,"delta":"{\"command\":\"echo hi\"}"},{"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"echo hi"}}}]"#,
    );
}

#[test]
fn gemini3_history_request_matches_pi() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-3-flash-preview","provider":"mockg","reasoning":true,"input":["text","image"],"thinkingLevelMap":{"off":null,"minimal":"minimal","low":"low","medium":"medium","high":"high","xhigh":null,"max":null},"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0}},"systemPrompt":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"timestamp":1},{"role":"assistant","content":[{"type":"thinking","thinking":"Hmm.","thinkingSignature":"U0lH"},{"type":"thinking","thinking":"","thinkingSignature":"not base64!"},{"type":"text","text":"Listing.","textSignature":"VFNJRw=="},{"type":"text","text":"  "},{"type":"toolCall","id":"call 1","name":"bash","arguments":{"command":"ls"},"thoughtSignature":"Q0FMTA=="},{"type":"toolCall","id":"call_2","name":"read","arguments":{"path":"x.png"}}],"api":"google-generative-ai","provider":"mockg","model":"gemini-3-flash-preview","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":2},{"role":"toolResult","toolCallId":"call 1","toolName":"bash","content":[{"type":"text","text":"file.txt\n"}],"isError":false,"timestamp":3},{"role":"toolResult","toolCallId":"call_2","toolName":"read","content":[{"type":"image","data":"CCCC","mimeType":"image/png"}],"isError":true,"timestamp":3},{"role":"assistant","content":[{"type":"thinking","thinking":"foreign thought","thinkingSignature":"U0lH"},{"type":"text","text":"Checking.","textSignature":"VFNJRw=="},{"type":"toolCall","id":"toolu|01","name":"bash","arguments":{"command":"pwd"},"thoughtSignature":"Q0FMTA=="}],"api":"anthropic-messages","provider":"anthropic","model":"claude","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":4},{"role":"toolResult","toolCallId":"toolu|01","toolName":"bash","content":[{"type":"text","text":"/"}],"isError":false,"timestamp":5},{"role":"user","content":[{"type":"text","text":"next"}],"timestamp":9}],"options":{"reasoning":"high"},"mock":{"replies":[{"blocks":[{"type":"thinking","text":"A","signature":"U0lH"},{"type":"text","text":"Done."},{"type":"tool_call","id":"fc_1","name":"bash","input":{"command":"x"},"signature":"Q0FMTA=="}],"usage":{"input":50,"output":3}}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":"A","thinkingSignature":"U0lH"},{"type":"text","text":"Done."},{"type":"toolCall","id":"fc_1","name":"bash","arguments":{"command":"x"},"thoughtSignature":"Q0FMTA=="}],"api":"google-generative-ai","provider":"mockg","model":"gemini-3-flash-preview","usage":{"input":50,"output":3,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":53,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}},"stopReason":"toolUse","responseId":"resp_mock_0001","rawStopReason":"STOP"}"#,
    );
    assert_body(
        &r,
        r#"{"contents":[{"parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}}],"role":"user"},{"parts":[{"text":"Hmm.","thought":true,"thoughtSignature":"U0lH"},{"text":"Listing.","thoughtSignature":"VFNJRw=="},{"functionCall":{"args":{"command":"ls"},"id":"call 1","name":"bash"},"thoughtSignature":"Q0FMTA=="},{"functionCall":{"args":{"path":"x.png"},"id":"call_2","name":"read"}}],"role":"model"},{"parts":[{"functionResponse":{"name":"bash","response":{"output":"file.txt\n"},"id":"call 1"}},{"functionResponse":{"name":"read","response":{"error":"(see attached image)"},"parts":[{"inlineData":{"mimeType":"image/png","data":"CCCC"}}],"id":"call_2"}}],"role":"user"},{"parts":[{"text":"Checking."},{"functionCall":{"args":{"command":"pwd"},"id":"toolu_01","name":"bash"}}],"role":"model"},{"parts":[{"functionResponse":{"name":"bash","response":{"output":"/"},"id":"toolu_01"}}],"role":"user"},{"parts":[{"text":"next"}],"role":"user"}],"systemInstruction":{"parts":[{"text":"Be brief."}],"role":"user"},"generationConfig":{"maxOutputTokens":16384,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"HIGH"}}}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"thinking_start","contentIndex":0},{"type":"thinking_delta","contentIndex":0,"delta":"A"},{"type":"thinking_end","contentIndex":0,"content":"A"},{"type":"text_start","contentIndex":1},{"type":"text_delta","contentIndex":1,"delta":"Done."},{"type":"text_end","contentIndex":1,"content":"Done."},{"type":"toolcall_start","contentIndex":2},{"type":"toolcall_delta","contentIndex":2,"delta":"{\"command\":\"x\"}"},{"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"fc_1","name":"bash","arguments":{"command":"x"},"thoughtSignature":"Q0FMTA=="}}]"#,
    );
}

/// HTTP 429 with a JSON body: the SDK's re-serialized body, no start event. (pi 1.6.0 capture `g3`)
#[test]
fn http_error_json_body() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-pro","provider":"mockg","reasoning":true,"cost":{"input":1.25,"output":10,"cacheRead":0.31,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"status":429}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[],"api":"google-generative-ai","provider":"mockg","model":"gemini-2.5-pro","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","errorMessage":"{\"error\":{\"code\":429,\"message\":\"Rate limited\",\"status\":\"RESOURCE_EXHAUSTED\"}}"}"#,
    );
    assert_events(&r, r#"[]"#);
}

/// HTTP 500 with a text body: the SDK's synthesized error object. (pi 1.6.0 capture `g3b`)
#[test]
fn http_error_text_body() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-pro","provider":"mockg","reasoning":true,"cost":{"input":1.25,"output":10,"cacheRead":0.31,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"status":500,"raw_error_body":"upstream exploded","content_type":"text/plain"}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[],"api":"google-generative-ai","provider":"mockg","model":"gemini-2.5-pro","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","errorMessage":"{\"error\":{\"message\":\"upstream exploded\",\"code\":500,\"status\":\"Internal Server Error\"}}"}"#,
    );
    assert_events(&r, r#"[]"#);
}

/// An error chunk after streamed text. (pi 1.6.0 capture `g4`)
#[test]
fn stream_error_chunk() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-pro","provider":"mockg","reasoning":true,"cost":{"input":1.25,"output":10,"cacheRead":0.31,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"blocks":[{"type":"text","text":"Hel"}],"stream_error":{"code":503,"message":"Overloaded"}}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Hel"}],"api":"google-generative-ai","provider":"mockg","model":"gemini-2.5-pro","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","responseId":"resp_mock_0001","errorMessage":"got status: UNAVAILABLE. {\"error\":{\"code\":503,\"message\":\"Overloaded\",\"status\":\"UNAVAILABLE\"}}"}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Hel"}]"#,
    );
}

/// The stream ends without a finish reason. (pi 1.6.0 capture `g5`)
#[test]
fn missing_finish_reason() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-pro","provider":"mockg","reasoning":true,"cost":{"input":1.25,"output":10,"cacheRead":0.31,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"blocks":[{"type":"text","text":"Hel"}],"truncate_without_stop":true}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Hel"}],"api":"google-generative-ai","provider":"mockg","model":"gemini-2.5-pro","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","responseId":"resp_mock_0001","errorMessage":"Google stream ended without a finish reason"}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Hel"},{"type":"text_end","contentIndex":0,"content":"Hel"}]"#,
    );
}

/// A SAFETY finish reason. (pi 1.6.0 capture `g6`)
#[test]
fn safety_finish_is_an_error() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-pro","provider":"mockg","reasoning":true,"cost":{"input":1.25,"output":10,"cacheRead":0.31,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"medium"},"mock":{"replies":[{"blocks":[{"type":"text","text":"Bad"}],"stop_reason":"SAFETY"}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Bad"}],"api":"google-generative-ai","provider":"mockg","model":"gemini-2.5-pro","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":15,"cost":{"input":0.0000125,"output":0.00005,"cacheRead":0,"cacheWrite":0,"total":0.0000625,"totalFromProvider":false}},"stopReason":"error","responseId":"resp_mock_0001","rawStopReason":"SAFETY","errorMessage":"Provider stopped with: SAFETY"}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Bad"},{"type":"text_end","contentIndex":0,"content":"Bad"}]"#,
    );
}

/// Gemini 3 thinking level; MAX_TOKENS is length. (pi 1.6.0 capture `g7`)
#[test]
fn gemini3_thinking_level_and_max_tokens() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-3-pro-preview","provider":"mockg","reasoning":true,"thinkingLevelMap":{"off":null,"minimal":null,"xhigh":null,"max":null},"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{"reasoning":"low"},"mock":{"replies":[{"blocks":[{"type":"text","text":"Long"}],"stop_reason":"max_tokens","usage":{"input":10,"output":4}}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Long"}],"api":"google-generative-ai","provider":"mockg","model":"gemini-3-pro-preview","usage":{"input":10,"output":4,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":14,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}},"stopReason":"length","responseId":"resp_mock_0001","rawStopReason":"MAX_TOKENS"}"#,
    );
    assert_body(
        &r,
        r#"{"contents":[{"parts":[{"text":"hi"}],"role":"user"}],"systemInstruction":{"parts":[{"text":"S."}],"role":"user"},"generationConfig":{"maxOutputTokens":16384,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"LOW"}}}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Long"},{"type":"text_end","contentIndex":0,"content":"Long"}]"#,
    );
}

/// Function calls without ids get generated ones; thinking off on a budget model sends thinkingBudget 0. (pi 1.6.0 capture `g8`)
#[test]
fn generated_tool_call_ids_and_thinking_off() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-flash-lite","provider":"mockg","reasoning":true,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{},"mock":{"replies":[{"blocks":[{"type":"tool_call","name":"bash","input":{"command":"a"}},{"type":"tool_call","name":"bash","input":{"command":"b"}},{"type":"text","text":"after"}]}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"bash_1796001722329_1","name":"bash","arguments":{"command":"a"}},{"type":"toolCall","id":"bash_1796001722330_2","name":"bash","arguments":{"command":"b"}},{"type":"text","text":"after"}],"api":"google-generative-ai","provider":"mockg","model":"gemini-2.5-flash-lite","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}},"stopReason":"toolUse","responseId":"resp_mock_0001","rawStopReason":"STOP"}"#,
    );
    assert_body(
        &r,
        r#"{"contents":[{"parts":[{"text":"hi"}],"role":"user"}],"systemInstruction":{"parts":[{"text":"S."}],"role":"user"},"generationConfig":{"maxOutputTokens":16384,"thinkingConfig":{"thinkingBudget":0}}}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"toolcall_start","contentIndex":0},{"type":"toolcall_delta","contentIndex":0,"delta":"{\"command\":\"a\"}"},{"type":"toolcall_end","contentIndex":0,"toolCall":{"type":"toolCall","id":"bash_1796001722329_1","name":"bash","arguments":{"command":"a"}}},{"type":"toolcall_start","contentIndex":1},{"type":"toolcall_delta","contentIndex":1,"delta":"{\"command\":\"b\"}"},{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"bash_1796001722330_2","name":"bash","arguments":{"command":"b"}}},{"type":"text_start","contentIndex":2},{"type":"text_delta","contentIndex":2,"delta":"after"},{"type":"text_end","contentIndex":2,"content":"after"}]"#,
    );
}

/// Thinking off on a level model whose off level is unsupported: the lowest supported level, without includeThoughts. (pi 1.6.0 capture `g9`)
#[test]
fn off_on_a_level_model_uses_the_lowest_level() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-flash-latest","provider":"mockg","reasoning":true,"thinkingLevelMap":{"off":null,"minimal":"minimal","xhigh":null,"max":null},"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0}},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{},"mock":{"replies":[{"blocks":[{"type":"text","text":"ok"}]}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"google-generative-ai","provider":"mockg","model":"gemini-flash-latest","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}},"stopReason":"stop","responseId":"resp_mock_0001","rawStopReason":"STOP"}"#,
    );
    assert_body(
        &r,
        r#"{"contents":[{"parts":[{"text":"hi"}],"role":"user"}],"systemInstruction":{"parts":[{"text":"S."}],"role":"user"},"generationConfig":{"maxOutputTokens":16384,"thinkingConfig":{"thinkingLevel":"MINIMAL"}}}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"ok"},{"type":"text_end","contentIndex":0,"content":"ok"}]"#,
    );
}

/// Abort while the body streams. (pi 1.6.0 capture `ga1`)
#[test]
fn abort_mid_stream() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-flash","provider":"mockx","reasoning":false},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{},"abortAfterMs":500,"mock":{"replies":[{"blocks":[{"type":"text","text":"Hello"}],"hang":true}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[{"type":"text","text":"Hello"}],"api":"google-generative-ai","provider":"mockx","model":"gemini-2.5-flash","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"aborted","responseId":"resp_mock_0001","errorMessage":"This operation was aborted"}"#,
    );
    assert_events(
        &r,
        r#"[{"type":"start"},{"type":"text_start","contentIndex":0},{"type":"text_delta","contentIndex":0,"delta":"Hello"}]"#,
    );
}

/// Abort while waiting for the response headers. (pi 1.6.0 capture `ga2`)
#[test]
fn abort_before_response() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-flash","provider":"mockx","reasoning":false},"systemPrompt":"S.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{},"abortAfterMs":300,"mock":{"replies":[{"first_delay_ms":2000,"blocks":[{"type":"text","text":"x"}]}]}}"#,
    );
    assert_final(
        &r,
        r#"{"role":"assistant","content":[],"api":"google-generative-ai","provider":"mockx","model":"gemini-2.5-flash","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"aborted","errorMessage":"Request aborted"}"#,
    );
    assert_events(&r, r#"[]"#);
}
/// The request line and headers: the SSE endpoint under the base URL's version path and the
/// key header (redacted by the mock).
#[test]
fn request_path_and_headers() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-flash","provider":"mockg"},"messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{},"mock":{"replies":[{"blocks":[{"type":"text","text":"ok"}]}]}}"#,
    );
    let req = &r.requests[0];
    assert_eq!(
        req["path"],
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(req["api"], "google");
    assert_eq!(
        req["auth_headers_present"],
        serde_json::json!(["x-goog-api-key"])
    );
    assert_eq!(req["headers"]["content-type"], "application/json");
    // No system prompt, no tools: only contents and generationConfig.
    assert_eq!(
        req["body"],
        serde_json::json!({"contents": [{"parts": [{"text": "hi"}], "role": "user"}],
            "generationConfig": {"maxOutputTokens": 16384}})
    );
    assert_eq!(r.msg.text(), "ok");
}

/// A connection dropped mid-body is a retryable error that keeps the streamed content.
#[test]
fn dropped_connection_is_a_retryable_error() {
    let r = run(
        r#"{"api":"google-generative-ai","urlSuffix":"/v1beta","model":{"id":"gemini-2.5-flash","provider":"mockx"},"messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"options":{},"mock":{"replies":[{"blocks":[{"type":"text","text":"Hello"}],"disconnect":true}]}}"#,
    );
    assert_eq!(r.msg.stop_reason, pi_rpc::llm::types::StopReason::Error);
    assert_eq!(r.msg.text(), "Hello");
    assert!(
        pi_rpc::llm::errors::is_retryable(&r.msg, 128_000),
        "{:?}",
        r.msg.error_message
    );
}
