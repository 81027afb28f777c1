# The extension of index.ts.


def initialize(msg):
    events = ["before_agent_start", "context", "tool_call", "tool_result", "message_end", "session_before_compact"]
    return {
        "subscriptions": [{"event": e} for e in events],
        "tools": [{"name": "lookup", "label": "Lookup", "description": "Look up a stored record by key",
                   "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}],
    }


def on_tool(name, params, scope):
    key = params["key"]
    return {"content": [{"type": "text", "text": "record %s" % key}], "details": {"key": key},
            "structuredContent": {"key": key, "n": 1}}


def on_event(event, scope):
    kind = event["type"]
    if kind == "before_agent_start":
        if "TERSE" in (event.get("prompt") or ""):
            return {"systemPrompt": "You are a terse test bot."}
        return None
    if kind == "context":
        out = []
        for m in event["messages"]:
            if m.get("role") == "user" and isinstance(m.get("content"), list):
                m = dict(m, content=[dict(b, text=b["text"].replace("PRIVATE", "[private]")) if b.get("type") == "text" else b
                                     for b in m["content"]])
            out.append(m)
        return {"messages": out}
    if kind == "tool_call":
        if event["toolName"] == "bash" and "forbidden" in str(event["input"].get("command")):
            raise RuntimeError("gate crashed")
        return None
    if kind == "tool_result":
        if event["toolName"] != "lookup":
            return None
        if event["input"]["key"] == "keep":
            return {"details": {"key": "keep", "patched": True}}
        if event["input"]["key"] == "err":
            return {"isError": True}
        return None
    if kind == "message_end":
        m = event["message"]
        if m["role"] == "toolResult" and m.get("toolName") == "lookup" and (m.get("details") or {}).get("patched"):
            return {"message": dict(m, content=[{"type": "text", "text": "[tool output hidden]"}])}
        return None
    if kind == "session_before_compact":
        ci = event.get("customInstructions")
        fire(scope, "ui.notify", message="compact reason=%s custom=%s" % (event["reason"], ci if ci is not None else "-"))
        return {"cancel": True}
    return None


if __name__ == "__main__":
    serve(initialize, on_event=on_event, on_tool=on_tool)
