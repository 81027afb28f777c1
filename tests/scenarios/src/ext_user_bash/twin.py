# The user_bash handler of index.ts.
import os


def initialize(msg):
    state["cwd"] = msg["cwd"]
    return {"subscriptions": [{"event": "user_bash"}]}


state = {}


def on_event(event, scope):
    if event["type"] != "user_bash":
        return None
    cmd = event["command"]
    if cmd.startswith("fake "):
        fire(scope, "ui.notify", message="user_bash %s exclude=%s cwdOk=%s" % (
            cmd, "true" if event["excludeFromContext"] else "false", "true" if event["cwd"] == state["cwd"] else "false"))
        return {"result": {"output": "faked: %s\n" % cmd[5:], "exitCode": 3, "cancelled": False, "truncated": False}}
    if cmd.startswith("extra "):
        return {"result": {"output": "with extras", "exitCode": 0, "cancelled": False, "truncated": True,
                           "fullOutputPath": "/tmp/full.log", "note": "x"}}
    if cmd.startswith("badshape"):
        return {"result": {"output": 42, "exitCode": 0, "cancelled": False, "truncated": False}}
    if cmd.startswith("missingexit"):
        return {"result": {"output": "no exit", "cancelled": False, "truncated": False}}
    if cmd.startswith("empty"):
        return {}
    if cmd.startswith("nullexit"):
        return {"result": {"output": "null exit", "exitCode": None, "cancelled": False, "truncated": False}}
    if cmd.startswith("throw"):
        raise RuntimeError("user_bash exploded")
    return None


if __name__ == "__main__":
    serve(initialize, on_event=on_event)
