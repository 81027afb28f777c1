# The session hooks of index.ts.

state = {"n": 0}


def tag():
    state["n"] += 1
    return "#%d" % state["n"]


def yn(v):
    return "yes" if v else "no"


def initialize(msg):
    state["n"] = 0  # a fresh runtime per session, as pi re-runs the factory
    events = ["session_start", "session_shutdown", "session_before_switch", "model_select",
              "thinking_level_select", "session_info_changed"]
    return {"subscriptions": [{"event": e} for e in events]}


def on_event(event, scope):
    kind = event["type"]
    if kind == "session_start":
        fire(scope, "ui.notify", message="start %s prev=%s %s" % (event["reason"], yn(event.get("previousSessionFile")), tag()))
    elif kind == "session_shutdown":
        fire(scope, "ui.notify", message="shutdown %s target=%s %s" % (event["reason"], yn(event.get("targetSessionFile")), tag()))
    elif kind == "session_before_switch":
        ok = call(scope, "ui.confirm", title="Switch session?",
                  message="reason=%s target=%s" % (event["reason"], yn(event.get("targetSessionFile"))))
        if not ok:
            return {"cancel": True}
    elif kind == "model_select":
        prev = event.get("previousModel")
        fire(scope, "ui.notify", message="model %s -> %s/%s (%s) %s" % (
            prev["id"] if prev else "-", event["model"]["provider"], event["model"]["id"], event["source"], tag()))
    elif kind == "thinking_level_select":
        fire(scope, "ui.notify", message="thinking %s -> %s %s" % (event["previousLevel"], event["level"], tag()))
    elif kind == "session_info_changed":
        name = event.get("name")
        fire(scope, "ui.setTitle", title="session: %s %s" % (name if name is not None else "-", tag()))
    return None


if __name__ == "__main__":
    serve(initialize, on_event=on_event)
