#!/usr/bin/env python3
"""Deterministic stdio MCP server for pi-rpc's integration tests (Python 3 stdlib only).

Transport: JSON-RPC 2.0, one JSON message per line on stdin/stdout. Only JSON-RPC lines are
ever written to stdout; diagnostics go to stderr. Each tools/call runs on its own thread, so a
`slow` call does not hold up other requests; stdout writes are serialized by a lock. The server
exits (code 0) when stdin ends.

Protocol
  initialize          -> {"protocolVersion": "2025-11-25",
                          "capabilities": {"tools": {"listChanged": true}[, "resources": {}]},
                          "serverInfo": {"name": "fake", "version": "1.0.0"}[, "instructions": ...]}
  notifications/initialized
                      -> the server sends the client two requests: roots/list (id "r1"), then
                         ping (id "p1"); the answers are kept and shown by the `seen` tool.
  ping                -> {}
  tools/list          -> the tools below, paged when FAKE_MCP_PAGE is set (cursor = index of the
                         first tool of the next page, as a string: "4", "8", ...).
  tools/call          -> see the tools below; an unknown tool -> error -32602 "Unknown tool: <name>".
  notifications/cancelled {requestId}
                      -> a running `slow` call with that id stops and is never answered.
  resources/list, resources/templates/list, resources/read
                      -> only with FAKE_MCP_RESOURCES=1 (else -32601 like any unknown method).
  any other request   -> error -32601 "Method not found: <method>"; other notifications and
                         responses are only recorded.

Tools (result texts are exact)
  echo {text: string, required; additionalProperties false; annotations readOnlyHint/title "Echo"}
        -> text "echo: <text>"
  fail        -> isError, text "something went wrong"
  fail_empty  -> isError, content []
  rpc_error   -> JSON-RPC error {"code": -32000, "message": "tool exploded"}
  slow {seconds: number (required), steps: number, progress: boolean, message: string}
        -> sleeps `seconds` in `steps` equal steps (default round(seconds / 0.3), at least 1), then
           text "slept <seconds as %g>". Progress: after each step it sends notifications/progress
           {progressToken, progress: <step>, total: <steps>[, message]} when the request carries
           _meta.progressToken AND (`steps` is given or progress is true); progress: false
           suppresses it. A notifications/cancelled for the call ends it without an answer.
  image       -> text "a red square", then an image block (4x4 red PNG, image/png)
  structured  -> no content; structuredContent {"temperature": 21.5, "unit": "C"} (has outputSchema)
  mixed       -> content: embedded text resource file:///notes.txt "embedded text";
                 blob image/png file:///pic.png; blob application/json file:///data.json ({"k": 1});
                 blob application/octet-stream file:///data.bin (16 bytes 0x00..0x0f);
                 resource_link file:///report.csv name "report.csv" title "Report" text/csv size 2048
                 description "Monthly numbers"; audio audio/wav "AAAA"; unknown block type "weird";
                 plus result _meta {"hidden": true}
  big {bytes: number, lines: integer}
        -> with `bytes`: one text block of exactly that many bytes (ASCII lines
           "line 00001 xxx...x\\n", 51 bytes each, cut at the byte count);
           else `lines` (default 1000) such lines, then a second text block "second block".
  crash       -> writes "fake server: crashing on purpose" to stderr and exits 3, no answer
  whereami    -> text JSON (sorted keys) {"argv": <argv after the script>, "cwd": <cwd>,
                 "env": {<each name in FAKE_MCP_SHOW_ENV>: <value or null>}}
  seen        -> text JSON (sorted keys) {"received": [every message received before this call,
                 verbatim, in order], "roots": <the client's whole answer to roots/list "r1" or null>,
                 "ping": <the client's whole answer to ping "p1" or null>}
  dup-name, dup.name, untyped (inputSchema {}), titled (title "Titled tool", no description),
  bare (no description, no title), added (listed only after `change`)
        -> text "called <name> with <arguments as sorted JSON>"
  change      -> sends notifications/tools/list_changed, from then on tools/list also lists
                 `added` (last); text "tools changed: added"

Resources (FAKE_MCP_RESOURCES=1)
  resources/list (paged by FAKE_MCP_RESOURCE_PAGE, default 2; cursor = index as a string):
    fake://text/hello  "hello.txt" title "Hello" text/plain (with _meta and icons)
    fake://blob/pixel  "pixel.png" image/png
    fake://empty       "empty"
    ui://fake/app      "app" text/html;profile=mcp-app (an MCP App resource)
  resources/templates/list (one page): fake://text/{name} "text-by-name"; fake://item/{id} (no name)
  resources/read {uri}:
    fake://text/hello  -> [{uri, mimeType text/plain, text "Hello from the fake server."}]
    fake://blob/pixel  -> [{uri, mimeType image/png, blob <the PNG>}]
    fake://empty       -> []
    ui://fake/app      -> [{uri, mimeType text/html;profile=mcp-app, text "<html></html>"}]
    fake://text/<x>    -> [{uri, mimeType text/plain, text "text resource <x>"}]
    anything else      -> error -32002 "Resource not found: <uri>"

Environment
  FAKE_MCP_PAGE=n            tools/list pages of n tools (0/unset: one page)
  FAKE_MCP_RESOURCES=1       declare the resources capability and serve resources/*
  FAKE_MCP_RESOURCE_PAGE=n   resources/list page size (default 2; 0: one page)
  FAKE_MCP_INSTRUCTIONS=s    `instructions` in the initialize result (absent when unset)
  FAKE_MCP_INIT_DELAY=s      sleep s seconds (float) before answering initialize
  FAKE_MCP_BAD_VERSION=v     answer initialize with protocolVersion v
  FAKE_MCP_EXIT_AT_START=c   at start write "fake server: exiting at start with code <c>" to stderr
                             and exit with code c, before reading anything
  FAKE_MCP_LOG=1             right after the initialize answer send notifications/message
                             {"level": "info", "logger": "fake", "data": "fake server started"};
                             FAKE_MCP_LOG=2 also sends {"level": "warning", "data":
                             "first line\\nsecond line"} and {"level": "error", "logger": "fake",
                             "data": {"answer": 42}}
  FAKE_MCP_RECORD=path       append every received message (re-serialized compactly, key order
                             kept; a line that is not a JSON object as {"invalid": <line>}) as one
                             JSON line, flushed at once, before it is handled
  FAKE_MCP_SHOW_ENV=A,B      env vars reported by whereami
  FAKE_MCP_NAME=name         serverInfo.name (default "fake")
"""
import json
import os
import sys
import threading
import time

PROTOCOL_VERSION = "2025-11-25"
# 4x4 red PNG.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg=="
JSON_BLOB = "eyJrIjogMX0="  # {"k": 1}
BIN_BLOB = "AAECAwQFBgcICQoLDA0ODw=="  # bytes 0x00..0x0f

ENV = os.environ
NAME = ENV.get("FAKE_MCP_NAME", "fake")
PAGE = int(ENV.get("FAKE_MCP_PAGE") or "0")
RESOURCES = ENV.get("FAKE_MCP_RESOURCES") == "1"
RESOURCE_PAGE = int(ENV.get("FAKE_MCP_RESOURCE_PAGE") or "2")

out_lock = threading.Lock()
state_lock = threading.Lock()
received = []  # every message, verbatim, in arrival order
answers = {}  # "r1"/"p1" -> the client's whole response
cancel_events = {}  # request id -> threading.Event
changed = [False]
record_file = None


def diag(msg):
    sys.stderr.write("fake server: " + msg + "\n")
    sys.stderr.flush()


def send(obj):
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with out_lock:
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except (BrokenPipeError, OSError):
            os._exit(0)


def result(rid, res):
    send({"jsonrpc": "2.0", "id": rid, "result": res})


def error(rid, code, message):
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def text(s):
    return {"type": "text", "text": s}


OBJ = {"type": "object"}
TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object",
                     "properties": {"text": {"type": "string", "description": "Text to echo"}},
                     "required": ["text"], "additionalProperties": False},
     "annotations": {"readOnlyHint": True, "title": "Echo"}},
    {"name": "fail", "description": "Return a tool error.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "fail_empty", "description": "Return a tool error without content.", "inputSchema": OBJ},
    {"name": "rpc_error", "description": "Answer with a JSON-RPC error.", "inputSchema": OBJ},
    {"name": "slow", "description": "Sleep, optionally reporting progress.",
     "inputSchema": {"type": "object",
                     "properties": {"seconds": {"type": "number"}, "steps": {"type": "number"},
                                    "progress": {"type": "boolean"}, "message": {"type": "string"}},
                     "required": ["seconds"]}},
    {"name": "image", "description": "Return an image.", "inputSchema": OBJ},
    {"name": "structured", "description": "Return only structured content.", "inputSchema": OBJ,
     "outputSchema": {"type": "object",
                      "properties": {"temperature": {"type": "number"}, "unit": {"type": "string"}},
                      "required": ["temperature"]}},
    {"name": "mixed", "description": "Return every kind of content block.", "inputSchema": OBJ},
    {"name": "big", "description": "Return a long text.",
     "inputSchema": {"type": "object",
                     "properties": {"bytes": {"type": "number"}, "lines": {"type": "integer"}}}},
    {"name": "crash", "description": "Exit the server.", "inputSchema": OBJ},
    {"name": "whereami", "description": "The server's working directory, arguments and environment.",
     "inputSchema": OBJ},
    {"name": "seen", "description": "What the server received so far.", "inputSchema": OBJ},
    {"name": "dup-name", "description": "First of two names that sanitize alike.", "inputSchema": OBJ},
    {"name": "dup.name", "description": "Second of two names that sanitize alike.", "inputSchema": OBJ},
    {"name": "untyped", "description": "Input schema without type or properties.", "inputSchema": {}},
    {"name": "titled", "title": "Titled tool", "inputSchema": OBJ},
    {"name": "bare", "inputSchema": OBJ},
    {"name": "change", "description": "Change the tool list (adds the tool 'added').", "inputSchema": OBJ},
]
ADDED = {"name": "added", "description": "Listed once 'change' was called.", "inputSchema": OBJ}

RESOURCE_LIST = [
    {"uri": "fake://text/hello", "name": "hello.txt", "title": "Hello", "mimeType": "text/plain",
     "description": "A text resource", "_meta": {"hidden": True},
     "icons": [{"src": "data:image/png;base64," + PNG, "mimeType": "image/png"}]},
    {"uri": "fake://blob/pixel", "name": "pixel.png", "mimeType": "image/png",
     "description": "A 4x4 red PNG"},
    {"uri": "fake://empty", "name": "empty", "description": "A resource without contents"},
    {"uri": "ui://fake/app", "name": "app", "mimeType": "text/html;profile=mcp-app"},
]
TEMPLATES = [
    {"uriTemplate": "fake://text/{name}", "name": "text-by-name", "mimeType": "text/plain",
     "description": "A text resource per name"},
    {"uriTemplate": "fake://item/{id}"},
]


class RpcError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def page_of(items, params, size):
    cursor = params.get("cursor")
    try:
        start = int(cursor) if cursor is not None else 0
    except (TypeError, ValueError):
        raise RpcError(-32602, "Invalid cursor: " + json.dumps(cursor))
    if start < 0 or start > len(items):
        raise RpcError(-32602, "Invalid cursor: " + json.dumps(cursor))
    end = start + size if size > 0 else len(items)
    return items[start:end], (str(end) if end < len(items) else None)


def current_tools():
    return TOOLS + [ADDED] if changed[0] else list(TOOLS)


def big_text(nbytes):
    chunks = []
    total = 0
    i = 1
    while total < nbytes:
        line = "line %05d %s\n" % (i, "x" * 40)
        chunks.append(line)
        total += len(line)
        i += 1
    return "".join(chunks)[:nbytes]


def run_slow(rid, args, token):
    seconds = float(args.get("seconds", 1))
    if "steps" in args and args.get("steps") is not None:
        steps = max(1, int(args["steps"]))
    else:
        steps = max(1, int(round(seconds / 0.3)))
    report = token is not None and args.get("progress") is not False and \
        ("steps" in args or args.get("progress") is True)
    event = cancel_events.get(rid)
    for i in range(steps):
        if event is not None and event.wait(seconds / steps):
            diag("slow call %s cancelled" % json.dumps(rid))
            return None
        if event is None:
            time.sleep(seconds / steps)
        if report:
            params = {"progressToken": token, "progress": i + 1, "total": steps}
            if isinstance(args.get("message"), str):
                params["message"] = args["message"]
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
    return {"content": [text("slept %g" % seconds)]}


def call_tool(rid, name, args, meta, snapshot):
    if name == "echo":
        return {"content": [text("echo: " + str(args.get("text")))]}
    if name == "fail":
        return {"content": [text("something went wrong")], "isError": True}
    if name == "fail_empty":
        return {"content": [], "isError": True}
    if name == "rpc_error":
        raise RpcError(-32000, "tool exploded")
    if name == "slow":
        return run_slow(rid, args, (meta or {}).get("progressToken"))
    if name == "image":
        return {"content": [text("a red square"), {"type": "image", "data": PNG, "mimeType": "image/png"}]}
    if name == "structured":
        return {"structuredContent": {"temperature": 21.5, "unit": "C"}}
    if name == "mixed":
        return {"content": [
            {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain",
                                              "text": "embedded text"}},
            {"type": "resource", "resource": {"uri": "file:///pic.png", "mimeType": "image/png", "blob": PNG}},
            {"type": "resource", "resource": {"uri": "file:///data.json", "mimeType": "application/json",
                                              "blob": JSON_BLOB}},
            {"type": "resource", "resource": {"uri": "file:///data.bin", "mimeType": "application/octet-stream",
                                              "blob": BIN_BLOB}},
            {"type": "resource_link", "uri": "file:///report.csv", "name": "report.csv", "title": "Report",
             "mimeType": "text/csv", "size": 2048, "description": "Monthly numbers"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "weird", "foo": 1},
        ], "_meta": {"hidden": True}}
    if name == "big":
        if args.get("bytes") is not None:
            return {"content": [text(big_text(int(args["bytes"])))]}
        n = int(args.get("lines", 1000))
        return {"content": [text("".join("line %05d %s\n" % (i, "x" * 40) for i in range(1, n + 1))),
                            text("second block")]}
    if name == "crash":
        diag("crashing on purpose")
        os._exit(3)
    if name == "whereami":
        names = [n.strip() for n in ENV.get("FAKE_MCP_SHOW_ENV", "").split(",") if n.strip()]
        return {"content": [text(json.dumps({"cwd": os.getcwd(), "argv": sys.argv[1:],
                                             "env": {n: ENV.get(n) for n in names}},
                                            sort_keys=True))]}
    if name == "seen":
        return {"content": [text(json.dumps(snapshot, sort_keys=True))]}
    if name == "change":
        changed[0] = True
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return {"content": [text("tools changed: added")]}
    if name in ("dup-name", "dup.name", "untyped", "titled", "bare") or (name == "added" and changed[0]):
        return {"content": [text("called " + name + " with " + json.dumps(args, sort_keys=True))]}
    raise RpcError(-32602, "Unknown tool: " + str(name))


def run_call(rid, params, snapshot):
    try:
        args = params.get("arguments")
        if not isinstance(args, dict):
            args = {}
        res = call_tool(rid, params.get("name"), args, params.get("_meta"), snapshot)
        if res is not None:
            result(rid, res)
    except RpcError as e:
        error(rid, e.code, e.message)
    except Exception as e:  # a bug here must not kill the server silently
        diag("tool %s failed: %r" % (params.get("name"), e))
        error(rid, -32603, "Internal error: %s" % e)
    finally:
        with state_lock:
            cancel_events.pop(rid, None)


def read_resource(uri):
    if uri == "fake://text/hello":
        return [{"uri": uri, "mimeType": "text/plain", "text": "Hello from the fake server."}]
    if uri == "fake://blob/pixel":
        return [{"uri": uri, "mimeType": "image/png", "blob": PNG}]
    if uri == "fake://empty":
        return []
    if uri == "ui://fake/app":
        return [{"uri": uri, "mimeType": "text/html;profile=mcp-app", "text": "<html></html>"}]
    if isinstance(uri, str) and uri.startswith("fake://text/") and len(uri) > len("fake://text/"):
        return [{"uri": uri, "mimeType": "text/plain", "text": "text resource " + uri[len("fake://text/"):]}]
    raise RpcError(-32002, "Resource not found: " + str(uri))


def send_logs():
    level = ENV.get("FAKE_MCP_LOG", "")
    if level not in ("1", "2"):
        return
    send({"jsonrpc": "2.0", "method": "notifications/message",
          "params": {"level": "info", "logger": "fake", "data": "fake server started"}})
    if level == "2":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "warning", "data": "first line\nsecond line"}})
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "error", "logger": "fake", "data": {"answer": 42}}})


def handle_request(msg, method, rid, params):
    if method == "initialize":
        delay = float(ENV.get("FAKE_MCP_INIT_DELAY") or "0")
        if delay > 0:
            time.sleep(delay)
        caps = {"tools": {"listChanged": True}}
        if RESOURCES:
            caps["resources"] = {}
        res = {"protocolVersion": ENV.get("FAKE_MCP_BAD_VERSION") or PROTOCOL_VERSION,
               "capabilities": caps,
               "serverInfo": {"name": NAME, "version": "1.0.0"}}
        if "FAKE_MCP_INSTRUCTIONS" in ENV:
            res["instructions"] = ENV["FAKE_MCP_INSTRUCTIONS"]
        result(rid, res)
        send_logs()
    elif method == "ping":
        result(rid, {})
    elif method == "tools/list":
        tools, nxt = page_of(current_tools(), params, PAGE)
        res = {"tools": tools}
        if nxt is not None:
            res["nextCursor"] = nxt
        result(rid, res)
    elif method == "tools/call":
        with state_lock:
            snapshot = {"received": [m for m in received if m is not msg],
                        "roots": answers.get("r1"), "ping": answers.get("p1")}
            cancel_events[rid] = threading.Event()
        threading.Thread(target=run_call, args=(rid, params, snapshot), daemon=True).start()
    elif RESOURCES and method == "resources/list":
        items, nxt = page_of(RESOURCE_LIST, params, RESOURCE_PAGE)
        res = {"resources": items}
        if nxt is not None:
            res["nextCursor"] = nxt
        result(rid, res)
    elif RESOURCES and method == "resources/templates/list":
        result(rid, {"resourceTemplates": TEMPLATES})
    elif RESOURCES and method == "resources/read":
        result(rid, {"contents": read_resource(params.get("uri"))})
    else:
        raise RpcError(-32601, "Method not found: " + str(method))


def handle(msg):
    with state_lock:
        received.append(msg)
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params")
    if not isinstance(params, dict):
        params = {}
    if method is None:
        # A response to one of our own requests.
        if rid in ("r1", "p1"):
            with state_lock:
                answers[rid] = msg
        return
    if "id" not in msg:
        if method == "notifications/initialized":
            send({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"})
            send({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
        elif method == "notifications/cancelled":
            with state_lock:
                event = cancel_events.get(params.get("requestId"))
            if event is not None:
                event.set()
        return
    try:
        handle_request(msg, method, rid, params)
    except RpcError as e:
        error(rid, e.code, e.message)


def record(entry):
    if record_file is not None:
        record_file.write(json.dumps(entry, separators=(",", ":")) + "\n")
        record_file.flush()


def main():
    global record_file
    code = ENV.get("FAKE_MCP_EXIT_AT_START")
    if code:
        diag("exiting at start with code " + code)
        sys.exit(int(code))
    if ENV.get("FAKE_MCP_RECORD"):
        record_file = open(ENV["FAKE_MCP_RECORD"], "a", encoding="utf-8")
    for raw in sys.stdin.buffer:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if not isinstance(msg, dict):
            record({"invalid": line})
            diag("ignoring a line that is not a JSON object: " + line[:200])
            continue
        record(msg)
        handle(msg)


if __name__ == "__main__":
    main()
