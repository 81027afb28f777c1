# The messaging extension of index.ts.


def initialize(msg):
    return {"subscriptions": [{"event": "input"}, {"event": "before_agent_start"}],
            "commands": [{"name": "note"}, {"name": "mark"}, {"name": "name"}, {"name": "kick"}, {"name": "nudge"}]}


def on_event(event, scope):
    kind = event["type"]
    if kind == "input":
        text = event["text"]
        fire(scope, "ui.notify", message="input source=%s sb=%s text=%s" % (
            event["source"], event.get("streamingBehavior") or "-", text))
        if text.startswith("!skip"):
            return {"action": "handled"}
        if "SECRET" in text:
            return {"action": "transform", "text": text.replace("SECRET", "[redacted]")}
        return None
    if kind == "before_agent_start":
        what = event["message"]["customType"] if event["messageType"] == "custom" else event.get("prompt")
        fire(scope, "ui.notify", message="bas %s %s" % (event["messageType"], what))
    return None


def on_command(name, args, scope):
    if name == "note":
        fire(scope, "pi.sendMessage", message={"customType": "note", "content": "note: %s" % args, "display": True,
                                               "details": {"args": args}})
        fire(scope, "ui.notify", message="note sent")
    elif name == "mark":
        fire(scope, "pi.appendEntry", customType="mark", data={"args": args})
        fire(scope, "ui.notify", message="marked")
    elif name == "name":
        fire(scope, "pi.setSessionName", name=args)
        fire(scope, "ui.notify", message="name=%s" % call(scope, "pi.getSessionName"))
    elif name == "kick":
        fire(scope, "pi.sendMessage", message={"customType": "kick", "content": "kick off", "display": False},
             options={"triggerTurn": True})
        fire(scope, "ui.notify", message="kicked")
    elif name == "nudge":
        if args == "follow":
            fire(scope, "pi.sendUserMessage", content="nudge %s" % args, options={"deliverAs": "followUp"})
        else:
            fire(scope, "pi.sendUserMessage", content="nudge %s" % args)
        fire(scope, "ui.notify", message="nudged %s" % args)
    return None


if __name__ == "__main__":
    serve(initialize, on_event=on_event, on_command=on_command)
