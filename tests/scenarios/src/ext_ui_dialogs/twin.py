# The oracle extension of index.ts (extension_ui.json).
import json as _json


def initialize(msg):
    return {"subscriptions": [{"event": "session_start"}, {"event": "tool_call"}],
            "commands": [{"name": "greet", "description": "Greet through extension UI dialogs"},
                         {"name": "boom", "description": "Command that throws"},
                         {"name": "edge", "description": "Dialog answer edge cases"}]}


def js_str(v):
    return "undefined" if v is None else str(v)


def on_event(event, scope):
    kind = event["type"]
    if kind == "session_start":
        fire(scope, "ui.notify", message="oracle extension loaded", type="info")
    elif kind == "tool_call":
        if event["toolName"] == "bash":
            ok = call(scope, "ui.confirm", title="Allow bash?", message="Run: " + str(event["input"]["command"]))
            if not ok:
                return {"block": True, "reason": "Blocked by user"}
    return None


def on_command(name, args, scope):
    if name == "edge":
        r = {}
        r["a"] = call(scope, "ui.select", title="Pick", options=["A", "B"])
        r["b"] = call(scope, "ui.input", title="Empty?", timeout=0)
        r["c"] = call(scope, "ui.confirm", title="Value yes?", message="answered with value")
        r["d"] = call(scope, "ui.select", title="Confirmed only", options=["X"])
        r["e"] = call(scope, "ui.confirm", title="Cancelled?", message="answered cancelled")
        r["f"] = call(scope, "ui.editor", title="Unicode")
        r["g"] = call(scope, "ui.getEditorText")
        h = call(scope, "ui.custom")
        r["h"] = "undef" if h is None else h
        r["t"] = call(scope, "ui.setTheme", theme="dark")
        fire(scope, "ui.setStatus", key="edge")
        fire(scope, "ui.setWidget", key="edge", content=["w1"], placement="aboveEditor")
        fire(scope, "ui.pasteToEditor", text="pasted")
        # JSON.stringify drops undefined-valued keys
        fire(scope, "ui.notify", message=_json.dumps({k: v for k, v in r.items() if v is not None},
                                                     ensure_ascii=False, separators=(",", ":")))
        return None
    if name == "boom":
        raise RuntimeError("boom from extension command")
    choice = call(scope, "ui.select", title="Pick a greeting", options=["Hello", "Howdy"])
    nm = call(scope, "ui.input", title="Your name?", placeholder="type a name")
    text = call(scope, "ui.editor", title="Edit the message", prefill="Line 1\nLine 2")
    fire(scope, "ui.setStatus", key="oracle", text="greeted")
    fire(scope, "ui.setWidget", key="oracle", content=["--- widget ---", js_str(choice)])
    fire(scope, "ui.setTitle", title="pi - oracle")
    edited = "undefined" if text is None else _json.dumps(text, ensure_ascii=False, separators=(",", ":"))
    # JSON.stringify(undefined) is undefined -> "editor=undefined"
    fire(scope, "ui.notify", message="%s, %s! args=%s editor=%s" % (js_str(choice), js_str(nm), args, edited),
         type="warning")
    return None


if __name__ == "__main__":
    serve(initialize, on_event=on_event, on_command=on_command)
