#!/usr/bin/env python3
"""A scripted streamable-HTTP MCP server for pi-rpc's HTTP transport tests (Python stdlib only).

Usage: mcp_http_server.py [CONFIG_JSON]

Listens on 127.0.0.1 (a free port), prints the port as the first line of stdout, and serves until
killed or until its stdin closes. Every request except /_control/* is recorded; GET
/_control/requests returns them as a JSON array of {"method", "path", "headers": [[name, value],
...] (as received, in order), "body": parsed JSON, text or null}.

CONFIG (all optional):
  "session":      session id sent as Mcp-Session-Id with the answer to `initialize`; a list gives
                  the n-th `initialize` the n-th id (the last one repeats)
  "methods":      {"<JSON-RPC method>": REPLY} for requests; a list of REPLYs answers the n-th
                  request of that method with the n-th REPLY (the last one repeats)
  "default":      REPLY for other requests (default {"mode": "json"})
  "notification": REPLY for notifications and answers (default {"status": 202})
  "get":          REPLY for a GET without Last-Event-ID (default {"status": 405})
  "resume":       REPLY for a GET with Last-Event-ID (default {"mode": "resume"})
  "delete":       status for DELETE (default 200)

REPLY:
  "status"        HTTP status (default 200); a status >= 300 (or 202/204) answers with "body" only
  "body"          body text for such statuses
  "content_type"  overrides the Content-Type (null: none at all)
  "headers"       extra response headers {name: value}
  "mode"          "json" (one message), "json_array" ("before" + answer in an array), "sse"
                  ("before" as events, then the answer), "raw" ("body" as it is),
                  "resume" (the rest of a cut SSE stream), "get_sse" (the GET stream)
  "result"        the answer's result (default {"method": <method>, "params": <params>})
  "error"         a JSON-RPC error object to answer with instead
  "before"        messages sent ahead of the answer
  "ids"           SSE: events get ids "<stream>-<n>" and the stream can be resumed
  "prime"         SSE: an event with only an id first (as SDK servers send)
  "retry"         SSE: a `retry: <ms>` line first
  "other_event"   SSE: an event named `other` (not JSON) first
  "cut_after"     SSE: close the connection after this many events (resume sends the rest);
                  in a "resume" reply, cut the resumed stream again after that many
  "hold"          SSE: send "before", then keep the stream open (comments every 100 ms)
                  without ever answering
  "messages"      get_sse: messages sent on each connection (default one
                  notifications/message with params {"n": <connection number>})
  "hold"          get_sse: keep the stream open instead of closing it
  "delay"         get_sse: seconds to wait (the stream open, nothing sent) before the messages
  "max"           get_sse: connections after this many are answered 405
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONFIG = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
LOCK = threading.Lock()
REQUESTS = []
# stream id -> list of event data (strings) of SSE answers with ids.
STREAMS = {}
COUNTERS = {"stream": 0, "get": 0}


def next_count(name):
    with LOCK:
        COUNTERS[name] = COUNTERS.get(name, 0) + 1
        return COUNTERS[name]


def nth(value, n):
    """The n-th (1-based) item of a list, the last one for later n; anything else as it is."""
    if isinstance(value, list):
        return value[min(n, len(value)) - 1] if value else {}
    return value


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    # Recording

    def read_body(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        text = raw.decode("utf-8", "replace")
        try:
            return json.loads(text)
        except ValueError:
            return text

    def record(self, body):
        with LOCK:
            REQUESTS.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "headers": [[k, v] for k, v in self.headers.items()],
                    "body": body,
                }
            )

    # Writing

    def send_plain(self, status, body="", content_type="text/plain", headers=None):
        data = body.encode()
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def start_sse(self, reply, headers=None):
        self.send_response(reply.get("status", 200))
        ct = reply.get("content_type", "text/event-stream")
        if ct is not None:
            self.send_header("Content-Type", ct)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        if "retry" in reply:
            self.write(f"retry: {reply['retry']}\n\n")

    def write(self, text):
        self.wfile.write(text.encode())
        self.wfile.flush()

    def write_event(self, data, event_id=None, event=None):
        lines = []
        if event is not None:
            lines.append(f"event: {event}")
        if event_id is not None:
            lines.append(f"id: {event_id}")
        # Multi-line data exercises the client's joining of data lines.
        for line in data.split("\n"):
            lines.append(f"data: {line}")
        self.write("\n".join(lines) + "\n\n")

    def send_events(self, stream_id, events, start, cut_after):
        sent = 0
        for index in range(start, len(events)):
            if cut_after is not None and sent >= cut_after:
                return
            event_id = f"{stream_id}-{index + 1}" if stream_id else None
            self.write_event(events[index], event_id)
            sent += 1

    # Dispatch

    def do_POST(self):
        body = self.read_body()
        self.record(body)
        is_request = isinstance(body, dict) and "id" in body and "method" in body
        if not is_request:
            reply = CONFIG.get("notification", {"status": 202})
            return self.answer_status(reply)
        method = body["method"]
        n = next_count("method:" + str(method))
        reply = nth(CONFIG.get("methods", {}).get(method, CONFIG.get("default", {"mode": "json"})), n)
        headers = dict(reply.get("headers", {}))
        if method == "initialize" and CONFIG.get("session"):
            headers["Mcp-Session-Id"] = nth(CONFIG["session"], n)
        status = reply.get("status", 200)
        if status >= 300 or status in (202, 204) or reply.get("mode") == "raw":
            return self.answer_status(reply, headers)
        answer = {"jsonrpc": "2.0", "id": body["id"]}
        if "error" in reply:
            answer["error"] = reply["error"]
        else:
            answer["result"] = reply.get("result", {"method": method, "params": body.get("params")})
        messages = list(reply.get("before", [])) + [answer]
        mode = reply.get("mode", "json")
        if mode in ("json", "json_array"):
            payload = messages if mode == "json_array" else answer
            ct = reply.get("content_type", "application/json; charset=utf-8")
            return self.send_plain(status, json.dumps(payload), ct, headers)
        # SSE
        self.start_sse(reply, headers)
        if reply.get("other_event"):
            self.write_event("not json", event="other")
        events = [json.dumps(m) for m in messages]
        stream_id = None
        if reply.get("ids"):
            stream_id = f"s{next_count('stream')}"
            with LOCK:
                STREAMS[stream_id] = events
        if reply.get("prime"):
            self.write(f"id: {stream_id}-0\ndata:\n\n" if stream_id else "data:\n\n")
        if reply.get("hold"):
            self.send_events(stream_id, events[:-1], 0, None)
            return self.hold()
        self.send_events(stream_id, events, 0, reply.get("cut_after"))

    def hold(self):
        try:
            while True:
                time.sleep(0.1)
                self.write(": keep-alive\n\n")
        except OSError:
            return

    def do_GET(self):
        if self.path == "/_control/requests":
            with LOCK:
                data = json.dumps(REQUESTS)
            return self.send_plain(200, data, "application/json")
        self.record(None)
        last = self.headers.get("last-event-id")
        if last is not None:
            return self.resume(last)
        reply = CONFIG.get("get", {"status": 405})
        if reply.get("mode") != "get_sse":
            return self.answer_status(reply)
        n = next_count("get")
        if "max" in reply and n > reply["max"]:
            return self.send_plain(405, "")
        self.start_sse(reply)
        if reply.get("delay"):
            time.sleep(reply["delay"])
        messages = reply.get(
            "messages",
            [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}],
        )
        for m in messages:
            self.write_event(json.dumps(m))
        if reply.get("hold"):
            self.hold()

    def resume(self, last):
        reply = CONFIG.get("resume", {"mode": "resume"})
        if reply.get("mode") != "resume":
            return self.answer_status(reply)
        stream_id, _, index = last.rpartition("-")
        with LOCK:
            events = STREAMS.get(stream_id)
        if events is None:
            return self.send_plain(404, "unknown stream")
        self.start_sse(reply)
        self.send_events(stream_id, events, int(index), reply.get("cut_after"))

    def do_DELETE(self):
        self.record(None)
        self.send_plain(CONFIG.get("delete", 200), "")

    def answer_status(self, reply, headers=None):
        headers = dict(headers or {}, **reply.get("headers", {}))
        status = reply.get("status", 200)
        ct = reply.get("content_type", "text/plain")
        self.send_plain(status, reply.get("body", ""), ct, headers)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)

    def watch_stdin():
        sys.stdin.read()
        server.shutdown()

    threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
