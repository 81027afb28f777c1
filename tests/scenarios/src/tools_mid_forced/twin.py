# The extension of index.ts.


def initialize(msg):
    return {"subscriptions": [{"event": "before_agent_start"}], "commands": [{"name": "readonly"}]}


def on_command(name, args, scope):
    fire(scope, "pi.setActiveTools", toolNames=["read"])
    fire(scope, "ui.notify", message="tools=%s" % ",".join(call(scope, "pi.getActiveTools")))


def on_event(event, scope):
    if event["type"] == "before_agent_start" and "TERSE" in (event.get("prompt") or ""):
        return {"systemPrompt": "You are a terse test bot."}
    return None


if __name__ == "__main__":
    serve(initialize, on_event=on_event, on_command=on_command)
