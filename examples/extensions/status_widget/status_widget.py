#!/usr/bin/env python3
"""status_widget: a pi-rpc process extension (protocol 1), Python 3 standard library only.

What it shows
  * fire-and-forget UI from event handlers: `ui.setStatus`, `ui.setWidget`, `ui.notify`
    (pi-rpc writes each as an `extension_ui_request` before the event the handler's result
    releases, so a `turn_start` handler's status comes right before `turn_start` on stdout);
  * clearing a status (no `text`) and a widget (no `content`);
  * per-session state, reset by `initialize` (sent again at every session replacement);
  * a command: `/status` notifies a summary (after an awaited `ctx.getState` call),
    `/status clear` clears the status line and the widget.

How to run it
  pi-rpc -e examples/extensions/status_widget
  then send {"id":"1","type":"prompt","message":"/status"}; examples/extensions/README.md has
  an offline run against the scripted LLM.
"""

# ---- a minimal protocol-1 runtime (the same block is in every Python example) ----------------
# pi-rpc writes one JSON object per line to our stdin and reads ours from stdout (stderr goes to
# pi-rpc's stderr, prefixed with the unit path). Host requests ("initialize", "event",
# "command", "tool") carry an "id" and each gets exactly one {"type":"result"} from us. Our own
# requests are {"type":"call"}: with an "id" pi-rpc answers them with a "result", without one
# they are fire-and-forget. Unknown message types are ignored, as the protocol asks.
import json
import sys
import threading

_out_lock = threading.Lock()
_pending = {}  # id of an awaited call -> [threading.Event, result message or None]
_next_id = [0]


def send(msg):
    """Writes one protocol line (whole lines only, even from several handler threads)."""
    line = json.dumps(msg, separators=(",", ":")) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def call(scope, method, **params):
    """An awaited call; returns its value or raises RuntimeError with the host's message.
    `scope` is the id of the host request being handled: it ties dialogs to that request, so
    they are dismissed when the request is cancelled (run aborted, handler timeout)."""
    with _out_lock:
        _next_id[0] += 1
        cid = "c%d" % _next_id[0]
        slot = _pending[cid] = [threading.Event(), None]
    send({"type": "call", "id": cid, "scope": scope, "method": method, "params": params})
    slot[0].wait()
    reply = slot[1]
    if not reply.get("ok"):
        raise RuntimeError((reply.get("error") or {}).get("message", "call failed"))
    return reply.get("value")


def fire(scope, method, **params):
    """A fire-and-forget call (no id, no answer). pi-rpc acts on it before anything we send
    after it, so UI sent before a handler's result is on the wire before the event it releases."""
    send({"type": "call", "scope": scope, "method": method, "params": params})


def _run(msg, handler, *args):
    """Runs one host request on its own thread and answers it. An exception is `ok:false`,
    which pi-rpc treats as pi treats a throwing handler."""
    try:
        value = handler(*args) if handler else None
    except Exception as exc:
        send({"type": "result", "id": msg["id"], "ok": False, "error": {"message": str(exc)}})
    else:
        send({"type": "result", "id": msg["id"], "ok": True, "value": value})


def serve(initialize, on_event=None, on_command=None, on_tool=None):
    """The read loop. initialize(msg) returns the unit's registrations; it runs at start-up and
    again at every session replacement (drop your state there, as pi re-runs a factory)."""
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "result":  # the answer to one of our awaited calls
            slot = _pending.pop(msg.get("id"), None)
            if slot:
                slot[1] = msg
                slot[0].set()
        elif kind == "initialize":
            unit = {"ext": msg["units"][0]["ext"]}
            unit.update(initialize(msg))
            send({"type": "result", "id": msg["id"], "ok": True,
                  "value": {"protocol": 1, "units": [unit]}})
        elif kind == "event" and "id" in msg:
            args = (msg, on_event, msg["event"], msg["id"])
            threading.Thread(target=_run, args=args, daemon=True).start()
        elif kind == "command":
            args = (msg, on_command, msg["name"], msg.get("args", ""), msg["id"])
            threading.Thread(target=_run, args=args, daemon=True).start()
        elif kind == "tool":
            args = (msg, on_tool, msg["name"], msg.get("params") or {}, msg["id"])
            threading.Thread(target=_run, args=args, daemon=True).start()
        # "cancel", "flags", "state", ... are not used here. A pending dialog of a cancelled
        # request is resolved by pi-rpc itself (confirm -> false), so the gate then blocks.
# ---- end of the runtime -----------------------------------------------------------------------

import time

state = {}


def reset(reason):
    state.clear()
    state.update(reason=reason, turns=0, tools=0, errors=0, runs=0, run_started=None)


def widget_lines():
    return ["session (%s): %d run(s), %d turn(s)" % (state["reason"], state["runs"], state["turns"]),
            "tools: %d run, %d failed" % (state["tools"], state["errors"])]


def initialize(msg):
    reset(msg.get("reason", "startup"))  # a fresh runtime per session, as pi re-runs factories
    events = ["session_start", "turn_start", "tool_execution_end", "agent_settled"]
    return {"subscriptions": [{"event": e} for e in events],
            "commands": [{"name": "status", "description": "Show or clear the run statistics"}]}


def on_event(event, scope):
    kind = event["type"]
    if kind == "session_start":
        reset(event["reason"])
        fire(scope, "ui.setWidget", key="stats", content=widget_lines())
        fire(scope, "ui.setStatus", key="stats", text="ready")
    elif kind == "turn_start":
        if event["turnIndex"] == 0:  # turnIndex restarts at 0 with every run
            state["runs"] += 1
            state["run_started"] = time.monotonic()
        state["turns"] += 1
        fire(scope, "ui.setStatus", key="stats", text="turn %d of this run" % (event["turnIndex"] + 1))
    elif kind == "tool_execution_end":
        state["tools"] += 1
        took = " in %d ms" % event["durationMs"] if "durationMs" in event else ""
        if event["isError"]:
            state["errors"] += 1
            fire(scope, "ui.notify", message="%s failed%s" % (event["toolName"], took), type="error")
        else:
            fire(scope, "ui.notify", message="%s finished%s" % (event["toolName"], took), type="info")
        fire(scope, "ui.setWidget", key="stats", content=widget_lines())
    elif kind == "agent_settled":
        took = ""
        if state["run_started"] is not None:
            took = " in %.1f s" % (time.monotonic() - state["run_started"])
            state["run_started"] = None
        word = "aborted" if event["aborted"] else "done"
        fire(scope, "ui.setStatus", key="stats", text="%s%s" % (word, took))
        fire(scope, "ui.setWidget", key="stats", content=widget_lines())
    return None


def on_command(name, args, scope):
    if args.strip() == "clear":
        fire(scope, "ui.setStatus", key="stats")  # no text: clears the status
        fire(scope, "ui.setWidget", key="stats")  # no content: removes the widget
        return None
    try:
        model = (call(scope, "ctx.getState") or {}).get("model") or {}
        model = " Model: %s/%s." % (model.get("provider"), model.get("id"))
    except RuntimeError as exc:  # e.g. a host without ctx.getState
        model = " (state unavailable: %s)" % exc
    summary = "; ".join(widget_lines())
    fire(scope, "ui.notify", message=summary + "." + model, type="info")
    return None


if __name__ == "__main__":
    serve(initialize, on_event=on_event, on_command=on_command)
