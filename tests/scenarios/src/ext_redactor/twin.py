# The redactor of index.ts.


def initialize(msg):
    events = ["input", "before_agent_start", "turn_start", "tool_result", "message_end"]
    return {
        "subscriptions": [{"event": e} for e in events],
        "tools": [{"name": "lookup", "label": "Lookup", "description": "Look up a stored record by key",
                   "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}],
    }


def on_tool(name, params, scope):
    key = params["key"]
    return {"content": [{"type": "text", "text": "record %s: password=hunter2" % key}],
            "details": {"key": key},
            "structuredContent": {"key": key, "password": "hunter2"}}


def on_event(event, scope):
    kind = event["type"]
    if kind == "input":
        text = event["text"]
        if text.startswith("!skip"):
            fire(scope, "ui.notify", message="skipped (%s): %s" % (event["source"], text), type="info")
            return {"action": "handled"}
        if "SECRET" in text:
            return {"action": "transform", "text": text.replace("SECRET", "[redacted]")}
        return {"action": "continue"}
    if kind == "before_agent_start":
        fire(scope, "ui.notify", message="starting (%s): %s" % (event["messageType"], event.get("prompt")), type="info")
        return {"message": {"customType": "redactor", "content": "Note: secrets are redacted.", "display": True,
                            "details": {"rule": 1}}}
    if kind == "turn_start":
        if event["turnIndex"] == 0:
            raise RuntimeError("turn_start failed on purpose")
        return None
    if kind == "tool_result":
        if event["toolName"] != "lookup":
            return None
        text = event["content"][0]["text"].replace("hunter2", "******")
        return {"content": [{"type": "text", "text": text}]}
    if kind == "message_end":
        m = event["message"]
        if m["role"] != "assistant":
            return None
        text = "".join(b["text"] for b in m["content"] if b["type"] == "text")
        if "WRONGROLE" in text:
            return {"message": {"role": "user", "content": [{"type": "text", "text": "not allowed"}],
                                "timestamp": m["timestamp"]}}
        if "hunter2" not in text:
            return None
        content = [dict(b, text=b["text"].replace("hunter2", "******")) if b["type"] == "text" else b
                   for b in m["content"]]
        return {"message": dict(m, content=content)}
    return None


if __name__ == "__main__":
    serve(initialize, on_event=on_event, on_tool=on_tool)
