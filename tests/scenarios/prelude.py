#!/usr/bin/env python3
"""Conformance twin of extensions/NAME/index.ts as a pi-rpc process extension (protocol 1)."""
# --- pi-rpc extension protocol 1: a minimal runtime (stdlib only) ----------------
# The host writes JSON lines to our stdin; we answer on stdout. Every host request
# ("initialize", "event", "command", "tool") gets exactly one "result". Our own
# requests are "call"s; a call with an "id" is answered by a "result" from the host,
# a call without one is fire-and-forget. Anything else from the host is ignored.
import json
import sys
import threading

_lock = threading.Lock()
_waiting = {}   # id of one of our awaited calls -> [threading.Event, result message]
_counter = [0]
EXT = None      # this unit's path, as the host named it in "initialize"


def _send(msg):
    line = json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n"
    with _lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def call(scope, method, **params):
    """Awaited call: blocks this handler until the host's result arrives."""
    with _lock:
        _counter[0] += 1
        cid = "x%d" % _counter[0]
        slot = _waiting[cid] = [threading.Event(), None]
    _send({"type": "call", "id": cid, "ext": EXT, "scope": scope, "method": method, "params": params})
    slot[0].wait()
    reply = slot[1]
    if not reply.get("ok"):
        raise RuntimeError((reply.get("error") or {}).get("message", "call failed"))
    return reply.get("value")


def fire(scope, method, **params):
    """Fire-and-forget call (no id, no result). The host acts on it before it acts
    on anything we send later, so it lands on the wire before our result's effects."""
    _send({"type": "call", "ext": EXT, "scope": scope, "method": method, "params": params})


class Reply:
    """A handler's return value plus payload fields it changed in place (pi lets
    handlers mutate e.g. tool_call's event.input); sent as the result's "mutated"."""

    def __init__(self, value=None, mutated=None):
        self.value = value
        self.mutated = mutated


def _answer(msg, fn, *args):
    try:
        value = fn(*args) if fn else None
    except Exception as exc:  # a throwing handler: the host treats it as pi treats a throw
        _send({"type": "result", "id": msg["id"], "ok": False, "error": {"message": str(exc)}})
        return
    result = {"type": "result", "id": msg["id"], "ok": True}
    if isinstance(value, Reply):
        result["value"] = value.value
        if value.mutated:
            result["mutated"] = value.mutated
    else:
        result["value"] = value
    _send(result)


def serve(initialize, on_event=None, on_command=None, on_tool=None):
    """Read host messages until EOF. Each request runs on its own thread, so a handler
    waiting for a dialog's result never blocks the reading of that result."""
    global EXT
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "result":
            with _lock:
                slot = _waiting.pop(msg.get("id"), None)
            if slot:
                slot[1] = msg
                slot[0].set()
        elif kind == "initialize":  # at startup and again for every new session runtime
            EXT = msg["units"][0]["ext"]
            unit = dict(ext=EXT, **initialize(msg))
            _send({"type": "result", "id": msg["id"], "ok": True, "value": {"protocol": 1, "units": [unit]}})
        elif kind == "event" and "id" in msg:
            threading.Thread(target=_answer, args=(msg, on_event, msg["event"], msg["id"]), daemon=True).start()
        elif kind == "command":
            threading.Thread(target=_answer, args=(msg, on_command, msg["name"], msg["args"], msg["id"]),
                             daemon=True).start()
        elif kind == "tool":
            threading.Thread(target=_answer, args=(msg, on_tool, msg["name"], msg["params"], msg["id"]),
                             daemon=True).start()
# --- end of runtime ------------------------------------------------------------------
