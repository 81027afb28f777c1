"""Deterministic stdio MCP server for pi-rpc's own MCP scenarios (Python stdlib only).

A superset of the conformance kit's fake_mcp.py: the same tools, plus resources, logging,
tools/list_changed, client requests, output-size probes.

Tools (kit): echo, fail, fail_empty, rpc_error, slow, image, structured, mixed, big, crash,
whereami, seen, dup-name, dup.name, untyped, titled, bare.
Tools (added): log (notifications/message), mutate (changes the tool list and sends
notifications/tools/list_changed), links (resource_link blocks), sized (text of an exact size),
ask (requests to the client: ping, roots/list, sampling, elicitation, an unknown method),
noisy (junk lines on stdout before the answer), invalid_result, empty, stderr_crash,
progress_odd (progress notifications with odd values).
Env:
  FAKE_MCP_NAME          serverInfo.name (default fake)
  FAKE_MCP_PAGE=n        tools/list pages of n tools
  FAKE_MCP_INIT_DELAY=s  delay before answering initialize
  FAKE_MCP_INSTRUCTIONS  instructions text ("-" = none)
  FAKE_MCP_CAPS          comma list among tools,resources,logging (default tools)
  FAKE_MCP_RES=full|small  resource set (default full)
  FAKE_MCP_RES_PAGE=n    resources/list pages of n resources
  FAKE_MCP_RES_FAIL=1    resources/list answers a JSON-RPC error
  FAKE_MCP_NO_TEMPLATES=1  resources/templates/list answers -32601
  FAKE_MCP_STDERR        written to stderr at start
  FAKE_MCP_LOG_INIT=1    a notifications/message right after notifications/initialized
  FAKE_MCP_PROTO=v       answer initialize with protocolVersion v
  FAKE_MCP_BAD=...       init_invalid (serverInfo without version), tools_entry (a tool without
                         inputSchema), dup_cursor (tools/list repeats a cursor), tools_error
                         (tools/list answers a JSON-RPC error), null_cursor (pages end with
                         nextCursor null, then "")
  FAKE_MCP_EXIT_STDERR=n write n lines of stderr and exit at start
After notifications/initialized the server asks the client for roots/list.
"""
import base64
import json
import os
import sys
import threading
import time

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==")
NAME = os.environ.get("FAKE_MCP_NAME", "fake")
PAGE = int(os.environ.get("FAKE_MCP_PAGE", "0"))
CAPS = [c for c in os.environ.get("FAKE_MCP_CAPS", "tools").split(",") if c]
RES_PAGE = int(os.environ.get("FAKE_MCP_RES_PAGE", "0"))
INSTRUCTIONS = os.environ.get("FAKE_MCP_INSTRUCTIONS", "Fake server for conformance tests.\nSecond line is not shown.")
out_lock = threading.Lock()
seen = []
cancelled = {}
roots = []
answers = {}
answer_cond = threading.Condition()
tools_listed = threading.Event()

BAD = os.environ.get("FAKE_MCP_BAD", "")

if os.environ.get("FAKE_MCP_EXIT_STDERR"):
    for i in range(int(os.environ["FAKE_MCP_EXIT_STDERR"])):
        sys.stderr.write("boot %03d \u00fc \U0001F4A5 %s\n" % (i, "q" * 20))
    sys.stderr.write("   \n\n")
    sys.stderr.flush()
    sys.exit(5)

if os.environ.get("FAKE_MCP_STDERR"):
    sys.stderr.write(os.environ["FAKE_MCP_STDERR"] + "\n")
    sys.stderr.flush()


def send(obj):
    with out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def send_raw(line):
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def text(s):
    return {"type": "text", "text": s}


OBJ = {"type": "object"}
TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "description": "Text to echo"}},
                     "required": ["text"], "additionalProperties": False},
     "annotations": {"readOnlyHint": True, "title": "Echo"}},
    {"name": "fail", "description": "Return a tool error.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "fail_empty", "description": "Return a tool error without content.", "inputSchema": OBJ},
    {"name": "rpc_error", "description": "Answer with a JSON-RPC error.", "inputSchema": OBJ},
    {"name": "slow", "description": "Sleep, optionally reporting progress.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}, "progress": {"type": "boolean"},
                                                      "message": {"type": "boolean"}},
                     "required": ["seconds"]}},
    {"name": "image", "description": "Return an image.", "inputSchema": OBJ},
    {"name": "structured", "description": "Return only structured content.", "inputSchema": OBJ,
     "outputSchema": {"type": "object", "properties": {"temperature": {"type": "number"}, "unit": {"type": "string"}},
                      "required": ["temperature"]}},
    {"name": "mixed", "description": "Return every kind of content block.", "inputSchema": OBJ},
    {"name": "big", "description": "Return a long text.",
     "inputSchema": {"type": "object", "properties": {"lines": {"type": "integer"}}, "required": ["lines"]}},
    {"name": "crash", "description": "Exit the server.", "inputSchema": OBJ},
    {"name": "whereami", "description": "The server's working directory, arguments and environment.", "inputSchema": OBJ},
    {"name": "seen", "description": "What the server received so far.", "inputSchema": OBJ},
    {"name": "dup-name", "description": "First of two names that sanitize alike.", "inputSchema": OBJ},
    {"name": "dup.name", "description": "Second of two names that sanitize alike.", "inputSchema": OBJ},
    {"name": "untyped", "description": "Input schema without type or properties.", "inputSchema": {}},
    {"name": "titled", "title": "A tool with only a title", "inputSchema": OBJ},
    {"name": "bare", "inputSchema": OBJ},
    # added
    {"name": "log", "description": "Send log messages to the client.", "inputSchema": OBJ},
    {"name": "mutate", "description": "Change the offered tools and notify the client.",
     "inputSchema": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["swap", "restore"]}},
                     "required": ["mode"]}},
    {"name": "links", "description": "Return resource links.", "inputSchema": OBJ},
    {"name": "sized", "description": "Return text of an exact size.",
     "inputSchema": {"type": "object", "properties": {
         "count": {"type": "integer"}, "unit": {"type": "string"}, "split": {"type": "boolean"},
         "image": {"type": "boolean"}, "newline": {"type": "boolean"}}, "required": ["count"]}},
    {"name": "ask", "description": "Send requests to the client and return its answers.", "inputSchema": OBJ},
    {"name": "noisy", "description": "Print junk on stdout before answering.", "inputSchema": OBJ},
    {"name": "invalid_result", "description": "Answer with a malformed result.", "inputSchema": OBJ},
    {"name": "empty", "description": "Answer with an empty result.", "inputSchema": OBJ},
    {"name": "stderr_crash", "description": "Write a long stderr and exit.", "inputSchema": OBJ},
    {"name": "progress_odd", "description": "Report progress with odd values.", "inputSchema": OBJ},
]
FRESH = {"name": "fresh", "description": "A tool that appeared later.",
         "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}
current_tools = list(TOOLS)

RES_FULL = [
    {"uri": "file:///docs/readme.md", "name": "readme", "title": "Read me", "description": "The project readme",
     "mimeType": "text/markdown", "size": 31, "annotations": {"audience": ["user"], "priority": 0.5},
     "_meta": {"secret": 1}, "icons": [{"src": "https://example.invalid/i.png", "mimeType": "image/png"}]},
    {"uri": "file:///docs/logo.png", "name": "logo", "mimeType": "image/png"},
    {"uri": "ui://widget/panel", "name": "panel ui", "mimeType": "text/html"},
    {"uri": "file:///docs/data.bin", "name": "data", "mimeType": "application/octet-stream"},
    {"uri": "file:///docs/app.html", "name": "app", "mimeType": "text/html;profile=mcp-app"},
    {"uri": "file:///docs/config.json", "name": "config", "mimeType": "application/json"},
    {"uri": "file:///docs/multi", "name": "multi"},
    {"uri": "file:///docs/empty", "name": "empty"},
    {"uri": "file:///docs/noname.txt"},
    {"uri": "file:///docs/big.txt", "name": "big", "mimeType": "text/plain"},
    {"uri": "file:///docs/mystery", "name": "mystery"},
]
RES_SMALL = [{"uri": "mem://" + NAME + "/note", "name": "note", "mimeType": "text/plain"}]
RESOURCES = RES_SMALL if os.environ.get("FAKE_MCP_RES") == "small" else RES_FULL
TEMPLATES = [
    {"uriTemplate": "file:///docs/{name}", "name": "doc", "title": "Any doc", "mimeType": "text/plain",
     "_meta": {"a": 1}},
    {"uriTemplate": "file:///logs/{day}.log", "description": "Logs by day"},
    {"uriTemplate": "ui://widget/{id}", "name": "widgets"},
]
BIG_TEXT = "".join("row %05d %s\n" % (i, "y" * 50) for i in range(1, 601))


def read_resource(uri):
    if uri == "file:///docs/readme.md":
        return [{"uri": uri, "mimeType": "text/markdown", "text": "# Read me\nThis is the readme.\n",
                 "_meta": {"x": 1}}]
    if uri == "file:///docs/logo.png":
        return [{"uri": uri, "mimeType": "image/png", "blob": PNG}]
    if uri == "file:///docs/data.bin":
        return [{"uri": uri, "mimeType": "application/octet-stream",
                 "blob": base64.b64encode(bytes(range(256)) + bytes(44)).decode()}]
    if uri == "file:///docs/config.json":
        return [{"uri": uri, "mimeType": "application/json",
                 "blob": base64.b64encode(b'{"debug": true, "name": "caf\xc3\xa9"}').decode()}]
    if uri == "file:///docs/multi":
        return [{"uri": "file:///docs/multi/a.txt", "mimeType": "text/plain", "text": "part a"},
                {"uri": "file:///docs/multi/b.txt", "mimeType": "text/plain", "text": "part b"}]
    if uri == "file:///docs/empty":
        return []
    if uri == "file:///docs/noname.txt":
        return [{"uri": uri, "text": "no name, no mime type"}]
    if uri == "file:///docs/big.txt":
        return [{"uri": uri, "mimeType": "text/plain", "text": BIG_TEXT}]
    if uri == "file:///docs/mystery":
        return [{"uri": uri, "blob": base64.b64encode(b"\x00\x01mystery").decode()}]
    if uri == "ui://widget/panel":
        return [{"uri": uri, "mimeType": "text/html", "text": "<p>panel</p>"}]
    if uri.startswith("mem://"):
        return [{"uri": uri, "mimeType": "text/plain", "text": "note of " + NAME}]
    if uri.startswith("file:///docs/"):
        return [{"uri": uri, "mimeType": "text/plain", "text": "templated " + uri[len("file:///docs/"):]}]
    raise RpcError(-32002, "Resource not found: " + uri)


def record(msg):
    if "method" not in msg:
        return
    entry = {"method": msg.get("method")}
    if "id" in msg:
        entry["id"] = msg["id"]
    params = msg.get("params")
    if params is not None:
        entry["params"] = params
    seen.append(entry)


def ask_client(rid, method, params=None):
    msg = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    send(msg)
    deadline = time.time() + 5
    with answer_cond:
        while rid not in answers and time.time() < deadline:
            answer_cond.wait(0.1)
        return answers.pop(rid, "no answer")


def call_tool(rid, name, args, meta):
    global current_tools
    token = (meta or {}).get("progressToken")
    if name not in [t["name"] for t in current_tools]:
        raise RpcError(-32602, "Unknown tool: " + name)
    if name == "echo":
        return {"content": [text("echo: " + str(args.get("text")))]}
    if name == "fail":
        return {"content": [text("something went wrong")], "isError": True}
    if name == "fail_empty":
        return {"content": [], "isError": True}
    if name == "rpc_error":
        raise RpcError(-32000, "tool exploded")
    if name == "image":
        return {"content": [text("a red square"), {"type": "image", "data": PNG, "mimeType": "image/png"}]}
    if name == "structured":
        return {"structuredContent": {"temperature": 21.5, "unit": "C"}}
    if name == "mixed":
        return {"content": [
            {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "embedded text"}},
            {"type": "resource", "resource": {"uri": "file:///pic.png", "mimeType": "image/png", "blob": PNG}},
            {"type": "resource", "resource": {"uri": "file:///data.json", "mimeType": "application/json",
                                              "blob": "eyJrIjogMX0="}},
            {"type": "resource_link", "uri": "file:///report.csv", "name": "report.csv", "title": "Report",
             "mimeType": "text/csv", "size": 2048, "description": "Monthly numbers"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "weird", "foo": 1},
        ], "_meta": {"hidden": True}}
    if name == "big":
        n = int(args.get("lines", 1000))
        return {"content": [text("".join("line %05d %s\n" % (i, "x" * 40) for i in range(1, n + 1))),
                            text("second block")]}
    if name == "crash":
        sys.stderr.write("fake server: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "stderr_crash":
        # 2600 UTF-16 units of stderr (with non-ASCII and astral characters) before exiting.
        for i in range(100):
            sys.stderr.write("err %03d \u00e9\u00e8 \U0001F600 %s\n" % (i, "z" * 12))
        sys.stderr.write("last words\n")
        sys.stderr.flush()
        os._exit(4)
    if name == "whereami":
        return {"content": [text(json.dumps({"cwd": os.getcwd(), "argv": sys.argv[1:],
                                             "FAKE_MCP_SECRET": os.environ.get("FAKE_MCP_SECRET"),
                                             "FAKE_MCP_GREETING": os.environ.get("FAKE_MCP_GREETING"),
                                             "FAKE_MCP_NAME": os.environ.get("FAKE_MCP_NAME")},
                                            sort_keys=True))]}
    if name == "seen":
        return {"content": [text(json.dumps({"received": seen[:-1], "roots": roots}, sort_keys=True))]}
    if name == "slow":
        seconds = float(args.get("seconds", 1))
        steps = max(1, int(round(seconds / 0.3)))
        for i in range(steps):
            time.sleep(seconds / steps)
            if rid in cancelled:
                return None
            if args.get("progress") and token is not None:
                params = {"progressToken": token, "progress": i + 1, "total": steps}
                if args.get("message"):
                    params["message"] = "step %d of %d" % (i + 1, steps)
                send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
        return {"content": [text("slept %g" % seconds)]}
    if name in ("dup-name", "dup.name", "untyped", "titled", "bare"):
        return {"content": [text("called " + name + " with " + json.dumps(args, sort_keys=True))]}
    if name == "fresh":
        return {"content": [text("fresh " + json.dumps(args, sort_keys=True))]}
    if name == "log":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "plain string message"}})
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "warning", "logger": "db", "data": {"query": "select 1", "ms": 3}}})
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "error", "data": "first line\nsecond line\r\nthird line"}})
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "debug", "logger": "", "data": ["a", 1, None]}})
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "no level"}})
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "notice", "data": 42}})
        time.sleep(0.2)
        return {"content": [text("logged 6 messages")]}
    if name == "mutate":
        tools_listed.clear()
        if args.get("mode") == "swap":
            current_tools = [t for t in TOOLS if t["name"] != "echo"] + [FRESH]
        else:
            current_tools = list(TOOLS)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        tools_listed.wait(5)
        time.sleep(0.3)
        return {"content": [text("tools now: %d" % len(current_tools))]}
    if name == "links":
        return {"content": [
            {"type": "resource_link", "uri": "file:///docs/readme.md", "name": "readme", "title": "Read me",
             "mimeType": "text/markdown", "size": 31, "description": "The project readme"},
            {"type": "resource_link", "uri": "file:///docs/data.bin", "name": "data", "size": 1536000},
            {"type": "resource_link", "uri": "file:///docs/multi", "name": "multi"},
        ]}
    if name == "sized":
        unit = args.get("unit", "x")
        body = unit * int(args["count"])
        if args.get("newline"):
            body += "\n"
        content = [text(body)]
        if args.get("split"):
            half = len(body) // 2
            content = [text(body[:half]), text(body[half:])]
        if args.get("image"):
            content.insert(1, {"type": "image", "data": PNG, "mimeType": "image/png"})
            content.append(text("after image"))
        return {"content": content}
    if name == "ask":
        out = {}
        out["ping"] = ask_client("ask-ping", "ping")
        out["roots"] = ask_client("ask-roots", "roots/list")
        out["sampling"] = ask_client("ask-sampling", "sampling/createMessage",
                                     {"messages": [], "maxTokens": 5})
        out["elicitation"] = ask_client("ask-elicit", "elicitation/create",
                                        {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}})
        out["unknown"] = ask_client(7, "custom/thing", {"x": 1})
        return {"content": [text(json.dumps(out, sort_keys=True))]}
    if name == "noisy":
        send_raw("this is not json")
        send_raw('{"jsonrpc": "2.0"}')
        send_raw("[1, 2, 3]")
        send_raw("")
        send({"jsonrpc": "2.0", "id": 99999, "result": {"content": []}})
        send({"jsonrpc": "2.0", "method": "notifications/unknown", "params": {"x": 1}})
        with out_lock:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid,
                                         "result": {"content": [text("answer after noise")]}}) + "\r\n")
            sys.stdout.flush()
        return None
    if name == "progress_odd":
        for params in ({"progressToken": token, "progress": 0.5},
                       {"progressToken": token, "progress": 1.0, "total": 4.0},
                       {"progressToken": token, "progress": 2, "total": 4, "message": ""},
                       {"progressToken": token, "progress": "3", "total": 4},
                       {"progressToken": "nobody", "progress": 3, "total": 4},
                       {"progressToken": token, "progress": 3.25, "total": 1e21},
                       {"progressToken": token, "progress": -1, "message": "back\nwards"}):
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
            time.sleep(0.15)
        return {"content": [text("odd progress sent")]}
    if name == "invalid_result":
        return {"content": "not a list"}
    if name == "empty":
        return {}
    raise RpcError(-32602, "Unknown tool: " + name)


class RpcError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def run_call(rid, params):
    try:
        result = call_tool(rid, params.get("name"), params.get("arguments") or {}, params.get("_meta"))
        if result is not None:
            send({"jsonrpc": "2.0", "id": rid, "result": result})
    except RpcError as e:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": e.code, "message": e.message, "data": {"why": "test"}}})


def paged(items, cursor, size):
    start = int(cursor) if cursor and str(cursor).isdigit() else 0
    end = start + size if size else len(items)
    page = items[start:end]
    return page, (str(end) if end < len(items) else None)


def handle(msg):
    record(msg)
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params") or {}
    if method == "initialize":
        time.sleep(float(os.environ.get("FAKE_MCP_INIT_DELAY", "0")))
        caps = {}
        if "tools" in CAPS:
            caps["tools"] = {"listChanged": True}
        if "resources" in CAPS:
            caps["resources"] = {}
        if "logging" in CAPS:
            caps["logging"] = {}
        result = {"protocolVersion": os.environ.get("FAKE_MCP_PROTO", params.get("protocolVersion")),
                  "capabilities": caps, "serverInfo": {"name": NAME, "version": "1.0.0"}}
        if BAD == "init_invalid":
            del result["serverInfo"]["version"]
        if INSTRUCTIONS != "-":
            result["instructions"] = INSTRUCTIONS
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "notifications/initialized":
        if os.environ.get("FAKE_MCP_LOG_INIT"):
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "logger": "startup", "data": NAME + " is up"}})
        send({"jsonrpc": "2.0", "id": "roots-1", "method": "roots/list"})
    elif method is None and rid == "roots-1":
        roots.append(msg.get("result"))
    elif method is None and rid is not None:
        with answer_cond:
            answers[rid] = msg.get("result", {"error": msg.get("error")})
            answer_cond.notify_all()
    elif method == "tools/list":
        if BAD == "tools_error":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "tool index unavailable"}})
            return
        page, nxt = paged(current_tools, params.get("cursor"), PAGE)
        if BAD == "tools_entry":
            page = page + [{"name": "broken-entry", "description": "no schema"}]
        result = {"tools": page}
        if nxt:
            result["nextCursor"] = nxt
        if BAD == "dup_cursor":
            result["nextCursor"] = "same"
        if BAD == "null_cursor" and not nxt:
            result["nextCursor"] = None if params.get("cursor") else ""
        send({"jsonrpc": "2.0", "id": rid, "result": result})
        if not nxt:
            tools_listed.set()
    elif method == "resources/list":
        if os.environ.get("FAKE_MCP_RES_FAIL"):
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "resource index is rebuilding"}})
            return
        page, nxt = paged(RESOURCES, params.get("cursor"), RES_PAGE)
        result = {"resources": page}
        if nxt:
            result["nextCursor"] = nxt
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "resources/templates/list":
        if os.environ.get("FAKE_MCP_NO_TEMPLATES"):
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
            return
        send({"jsonrpc": "2.0", "id": rid, "result": {"resourceTemplates": TEMPLATES}})
    elif method == "resources/read":
        try:
            send({"jsonrpc": "2.0", "id": rid, "result": {"contents": read_resource(params.get("uri"))}})
        except RpcError as e:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": e.code, "message": e.message}})
    elif method == "tools/call":
        threading.Thread(target=run_call, args=(rid, params), daemon=True).start()
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "notifications/cancelled":
        cancelled[params.get("requestId")] = params.get("reason")
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})


def main():
    for line in sys.stdin:
        line = line.strip()
        if line:
            handle(json.loads(line))


main()
