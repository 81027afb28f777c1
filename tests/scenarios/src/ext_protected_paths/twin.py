# The gate of index.ts.


def initialize(msg):
    return {"subscriptions": [{"event": "tool_call"}]}


def on_event(event, scope):
    if event["type"] != "tool_call":
        return None
    name, inp = event["toolName"], event["input"]
    if name in ("write", "edit") and str(inp.get("path")).startswith("protected/"):
        fire(scope, "ui.notify", message="blocked %s %s" % (name, inp.get("path")), type="warning")
        return {"block": True, "reason": "Path %s is protected" % inp.get("path")}
    if name == "bash" and str(inp.get("command")).startswith("halt"):
        return {"block": True, "reason": "Halted by gate", "terminate": True}
    return None


if __name__ == "__main__":
    serve(initialize, on_event=on_event)
