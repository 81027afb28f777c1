#!/usr/bin/env python3
"""permission_gate: a pi-rpc process extension (protocol 1), Python 3 standard library only.

What it shows
  * subscribing to the `tool_call` event, which pi-rpc awaits before a tool runs;
  * an awaited UI call from inside a handler: `ui.confirm` with a `timeout`, which pi-rpc turns
    into an `extension_ui_request` (method "confirm") for the RPC client to answer;
  * blocking the tool call (`{"block": true, "reason": ...}`) when the user says no or does not
    answer in time (an unanswered confirm resolves to false);
  * a fire-and-forget call (`ui.notify`) telling the user what was blocked.

How to run it
  pi-rpc -e examples/extensions/permission_gate
  (or copy the folder to <agentDir>/extensions/); examples/extensions/README.md has an offline
  run against the scripted LLM. GATE_TIMEOUT_MS (from pi-rpc's environment, or the manifest's
  "env") sets the confirm timeout, default 30000.
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

import os
import re

TIMEOUT_MS = int(os.environ.get("GATE_TIMEOUT_MS", "30000"))

# Patterns worth a question. Deliberately simple: a gate like this is a seat belt against a
# model's mistakes, not a sandbox (it only reads the bash tool's command text).
DANGEROUS = [
    (re.compile(r"\brm\s+(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\b"), "recursive delete"),
    (re.compile(r"\bsudo\b"), "runs as root"),
    (re.compile(r"\bmkfs(\.\w+)?\b"), "formats a file system"),
    (re.compile(r"\bdd\b.*\bof=/dev/"), "writes to a device"),
    (re.compile(r"\bchmod\s+(-R\s+)?[0-7]*777\b"), "world-writable permissions"),
    (re.compile(r"\bgit\s+push\b.*(--force|-f)\b"), "force push"),
    (re.compile(r"\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z)?sh\b"), "pipes a download to a shell"),
]


def initialize(msg):
    return {"subscriptions": [{"event": "tool_call"}]}


def on_event(event, scope):
    if event["type"] != "tool_call" or event["toolName"] != "bash":
        return None
    command = str(event["input"].get("command", ""))
    reasons = [why for pattern, why in DANGEROUS if pattern.search(command)]
    if not reasons:
        return None
    allowed = call(scope, "ui.confirm", title="Allow a dangerous command? (%s)" % ", ".join(reasons),
                   message=command, timeout=TIMEOUT_MS)
    if allowed:
        return None
    fire(scope, "ui.notify", message="Blocked: %s" % command, type="warning")
    return {"block": True, "reason": "Blocked: not allowed by the user (%s)" % ", ".join(reasons)}


if __name__ == "__main__":
    serve(initialize, on_event=on_event)
