//! Tests of the Responses event handling.

use super::super::tests::*;
use super::*;

/// pi's s1 capture: reasoning summary, text, a streamed tool call, usage with cached and
/// reasoning tokens.
#[test]
fn reasoning_text_and_tool_call() {
    let m = model();
    let events = [
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "rs_0", "type": "reasoning", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": 0,
            "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Let m"}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "e think."}),
        json!({"type": "response.reasoning_summary_part.done", "output_index": 0,
            "part": {"type": "summary_text", "text": "Let me think."}}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": "rs_0", "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Let me think."}],
                "encrypted_content": "ENC"}}),
        json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 1, "delta": "Runn"}),
        json!({"type": "response.output_text.delta", "output_index": 1, "delta": "ing it."}),
        json!({"type": "response.output_item.done", "output_index": 1,
            "item": {"id": "msg_1", "type": "message", "status": "completed",
                "content": [{"type": "output_text", "text": "Running it.", "annotations": []}]}}),
        json!({"type": "response.output_item.added", "output_index": 2,
            "item": {"id": "fc_2", "type": "function_call", "call_id": "call_1",
                "name": "bash", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2,
            "delta": "{\"command\": \"e"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2,
            "delta": "cho hi\""}),
        json!({"type": "response.function_call_arguments.done", "output_index": 2,
            "arguments": "{\"command\": \"echo hi\"}"}),
        json!({"type": "response.output_item.done", "output_index": 2,
            "item": {"id": "fc_2", "type": "function_call", "status": "completed",
                "call_id": "call_1", "name": "bash", "arguments": "{\"command\": \"echo hi\"}"}}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
            "usage": {"input_tokens": 130, "input_tokens_details": {"cached_tokens": 30},
                "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 5},
                "total_tokens": 150}}}),
    ];
    let (msg, evs, result) = run_sse(&m, &sse(&events));
    assert_eq!(result, Ok(()));
    assert_eq!(
        Value::Array(evs),
        json!([
            {"type": "start"},
            {"type": "thinking_start", "contentIndex": 0},
            {"type": "thinking_delta", "contentIndex": 0, "delta": "Let m"},
            {"type": "thinking_delta", "contentIndex": 0, "delta": "e think."},
            {"type": "thinking_delta", "contentIndex": 0, "delta": "\n\n"},
            {"type": "thinking_end", "contentIndex": 0, "content": "Let me think."},
            {"type": "text_start", "contentIndex": 1},
            {"type": "text_delta", "contentIndex": 1, "delta": "Runn"},
            {"type": "text_delta", "contentIndex": 1, "delta": "ing it."},
            {"type": "text_end", "contentIndex": 1, "content": "Running it."},
            {"type": "toolcall_start", "contentIndex": 2, "id": "call_1|fc_2", "toolName": "bash"},
            {"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"command\": \"e"},
            {"type": "toolcall_delta", "contentIndex": 2, "delta": "cho hi\""},
            {"type": "toolcall_delta", "contentIndex": 2, "delta": "}"},
            {"type": "toolcall_end", "contentIndex": 2, "toolCall": {"type": "toolCall",
                "id": "call_1|fc_2", "name": "bash", "arguments": {"command": "echo hi"}}}
        ])
    );
    let mut want = AssistantMessage::new(&m, msg.timestamp);
    want.content = vec![
        ContentBlock::Thinking {
            thinking: "Let me think.".into(),
            thinking_signature: Some(
                r#"{"id":"rs_0","type":"reasoning","summary":[{"type":"summary_text","text":"Let me think."}],"encrypted_content":"ENC"}"#.into(),
            ),
            redacted: false,
        },
        ContentBlock::Text {
            text: "Running it.".into(),
            text_signature: Some(r#"{"v":1,"id":"msg_1"}"#.into()),
        },
        ContentBlock::ToolCall {
            id: "call_1|fc_2".into(),
            name: "bash".into(),
            arguments: json!({"command": "echo hi"}),
            arguments_error: None,
            thought_signature: None,
        },
    ];
    want.stop_reason = StopReason::ToolUse;
    want.response_id = Some("resp_1".into());
    want.raw_stop_reason = Some("completed".into());
    assert_eq!(
        msg.to_value()["usage"],
        json!({"input": 100, "output": 20, "cacheRead": 30,
        "cacheWrite": 0, "reasoning": 5, "totalTokens": 150,
        "cost": {"input": 0.00019999999999999998, "output": 0.00015999999999999999,
            "cacheRead": 0.000014999999999999999, "cacheWrite": 0,
            "total": 0.00037499999999999995, "totalFromProvider": false}})
    );
    want.usage = msg.usage.clone();
    assert_eq!(msg, want);
}

#[test]
fn refusal_reasoning_text_and_items_without_added_events() {
    let m = model();
    let events = [
        // An item that only arrives as `output_item.done` still becomes a block.
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": "rs_0", "type": "reasoning", "summary": [],
                "content": [{"type": "reasoning_text", "text": "a"},
                    {"type": "reasoning_text", "text": "b"}]}}),
        json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"id": "msg_1", "type": "message", "phase": "final_answer"}}),
        json!({"type": "response.refusal.delta", "output_index": 1, "delta": "No."}),
        json!({"type": "response.output_text.delta", "output_index": 7, "delta": "ignored"}),
        json!({"type": "response.output_item.done", "output_index": 1,
            "item": {"id": "msg_1", "type": "message", "phase": "final_answer",
                "content": [{"type": "refusal", "refusal": "No."}]}}),
        json!({"type": "response.incomplete", "response": {"id": "resp_2",
            "status": "incomplete", "incomplete_details": {"reason": "content_filter"}}}),
    ];
    let (msg, evs, result) = run_sse(&m, &sse(&events));
    assert_eq!(result, Err("Response incomplete: content_filter".into()));
    assert_eq!(evs.len(), 6, "{evs:?}");
    assert_eq!(msg.content[0], ContentBlock::Thinking {
        thinking: "a\n\nb".into(),
        thinking_signature: Some(r#"{"id":"rs_0","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"a"},{"type":"reasoning_text","text":"b"}]}"#.into()),
        redacted: false,
    });
    assert_eq!(
        msg.content[1],
        ContentBlock::Text {
            text: "No.".into(),
            text_signature: Some(r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#.into()),
        }
    );
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.raw_stop_reason.as_deref(),
        Some("incomplete.content_filter")
    );
    // Empty usage is still priced (all zero).
    assert_eq!(msg.usage.cost.total_from_provider, Some(false));
}

#[test]
fn length_and_service_tier() {
    let m = model();
    let events = [
        json!({"type": "response.incomplete", "response": {"id": "r",
        "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
        "service_tier": "flex",
        "usage": {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}}}),
    ];
    let (msg, _, result) = run_sse(&m, &sse(&events));
    assert_eq!(result, Ok(()));
    assert_eq!(msg.stop_reason, StopReason::Length);
    assert_eq!(
        msg.raw_stop_reason.as_deref(),
        Some("incomplete.max_output_tokens")
    );
    assert_eq!(msg.usage.reasoning, Some(0));
    assert_eq!(msg.usage.cost.input, 2.0 / 1e6 * 10.0 * 0.5);
}

#[test]
fn encrypted_content_backfilled_from_the_terminal_response() {
    let m = model();
    let events = [
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "rs_0", "type": "reasoning"}}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": "rs_0", "type": "reasoning", "summary": [], "encrypted_content": null}}),
        json!({"type": "response.completed", "response": {"status": "completed",
            "output": [{"id": "rs_0", "type": "reasoning", "encrypted_content": "LATE"}]}}),
    ];
    let (msg, _, result) = run_sse(&m, &sse(&events));
    assert_eq!(result, Ok(()));
    assert_eq!(
        msg.content[0],
        ContentBlock::Thinking {
            thinking: String::new(),
            thinking_signature: Some(
                r#"{"id":"rs_0","type":"reasoning","summary":[],"encrypted_content":"LATE"}"#
                    .into()
            ),
            redacted: false,
        }
    );
    assert_eq!(msg.stop_reason, StopReason::Stop);
}

#[test]
fn arguments_replaced_when_done_differs() {
    let m = model();
    let events = [
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "fc_0", "type": "function_call", "call_id": "c", "name": "t",
                "arguments": "{\"a\":"}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "1"}),
        json!({"type": "response.function_call_arguments.done", "output_index": 0,
            "arguments": "{\"b\":2}"}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": "fc_0", "type": "function_call", "call_id": "c", "name": "t",
                "arguments": "{\"b\":2}"}}),
        json!({"type": "response.completed", "response": {"status": "completed"}}),
    ];
    let (msg, evs, result) = run_sse(&m, &sse(&events));
    assert_eq!(result, Ok(()));
    // No delta for a replacement that does not continue the streamed text.
    assert_eq!(
        evs.iter().filter(|e| e["type"] == "toolcall_delta").count(),
        1
    );
    assert_eq!(
        msg.content[0],
        ContentBlock::ToolCall {
            id: "c|fc_0".into(),
            name: "t".into(),
            arguments: json!({"b": 2}),
            arguments_error: None,
            thought_signature: None,
        }
    );
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
}

#[test]
fn stream_errors() {
    let m = model();
    let run = |events: &str| run_sse(&m, events).2;
    // No terminal event.
    assert_eq!(
        run(&sse(&[
            json!({"type": "response.created", "response": {"id": "r"}})
        ])),
        Err(NO_TERMINAL_EVENT.into())
    );
    // An unfinished tool call in a toolUse response.
    assert_eq!(
        run(&sse(&[
            json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"id": "fc_0", "type": "function_call", "call_id": "c", "name": "t"}}),
            json!({"type": "response.completed", "response": {"status": "completed"}}),
        ])),
        Err("OpenAI Responses stream completed with an unfinished tool call: t (c|fc_0)".into())
    );
    // `event: error` is raised by the SDK with the payload's message.
    assert_eq!(
        run("event: error\ndata: {\"type\":\"error\",\"code\":\"overloaded_error\",\"message\":\"Overloaded\",\"param\":null}\n\n"),
        Err("Overloaded".into())
    );
    // An unnamed error payload reaches pi's own handler.
    assert_eq!(
        run("data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\"}\n\n"),
        Err("Error Code rate_limit_exceeded: slow down".into())
    );
    assert_eq!(
        run("data: {\"type\":\"x\",\"error\":{\"code\":\"c\"}}\n\n"),
        Err("{\"code\":\"c\"}".into())
    );
    // response.failed variants.
    let failed = |response: Value| {
        run(&sse(&[
            json!({"type": "response.failed", "response": response}),
        ]))
    };
    assert_eq!(
        failed(json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}})),
        Err("server_error: boom".into())
    );
    assert_eq!(
        failed(json!({"status": "failed", "error": {"message": ""}})),
        Err("unknown: no message".into())
    );
    assert_eq!(
        failed(json!({"status": "failed", "incomplete_details": {"reason": "x"}})),
        Err("incomplete: x".into())
    );
    assert_eq!(
        failed(json!({"status": "failed"})),
        Err("Unknown error (no error details in response)".into())
    );
    // A completed event with a failed status.
    assert_eq!(
        run(&sse(&[
            json!({"type": "response.completed", "response": {"status": "cancelled"}})
        ])),
        Err("An unknown error occurred".into())
    );
    assert_eq!(
        run(&sse(&[
            json!({"type": "response.completed", "response": {"status": "weird"}})
        ])),
        Err("Unhandled stop reason: weird".into())
    );
    assert_eq!(
        run("data: {nope\n\n"),
        Err("Error reading response: malformed server-sent event JSON.".into())
    );
}
