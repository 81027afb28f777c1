#!/usr/bin/env python3
"""Compares what compare.py --structural-requests leaves out: every request body field and
header beyond the prose pi-rpc words its own way (system prompt text, tool and tool-parameter
descriptions), field for field. Volatile headers (user agent, lengths, SDK telemetry) are
ignored; header values that are ids (session ids) are compared by presence.

    check_extra.py GOLDEN_DIR CANDIDATE_DIR NAME...
"""
import json
import re
import sys

VOLATILE = {"content-length", "host", "user-agent", "connection", "accept-encoding",
            "accept-language", "sec-fetch-mode", "x-stainless-arch", "x-stainless-lang",
            "x-stainless-os", "x-stainless-package-version", "x-stainless-runtime",
            "x-stainless-runtime-version", "x-stainless-retry-count", "x-stainless-timeout",
            "x-stainless-helper-method", "x-goog-api-client", "x-stainless-async"}
# The output cap pi clamps to the context left after its estimate of the request (chars / 4):
# pi-rpc's own, shorter system prompt and tool descriptions leave a few hundred tokens more.
CLAMPED = {"max_tokens", "max_completion_tokens", "max_output_tokens", "maxOutputTokens"}
ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$|^<.*>$")


def prose_free(v, key=None):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k == "description":
                continue
            out[k] = prose_free(x, k)
        return out
    if isinstance(v, list):
        return [prose_free(x, key) for x in v]
    return v


def body_view(body):
    b = json.loads(json.dumps(body or {}))
    # The system prompt is pi-rpc's own wording.
    b.pop("system", None)
    b.pop("systemInstruction", None)
    b.pop("instructions", None)
    for k in ("messages", "input"):
        items = b.get(k)
        if not isinstance(items, list):
            continue
        # Responses models with additional tools declare them in an item ahead of the prompt.
        i = 1 if items and isinstance(items[0], dict) and items[0].get("type") == "additional_tools" else 0
        if len(items) > i and isinstance(items[i], dict) \
                and items[i].get("role") in ("system", "developer") and "type" not in items[i]:
            b[k] = items[:i] + items[i + 1:]
    return prose_free(b)


def headers_view(h):
    out = {}
    for k, v in (h or {}).items():
        k = k.lower()
        if k in VOLATILE:
            continue
        out[k] = "<id>" if isinstance(v, str) and ID.match(v) else v
    return out


def main():
    gdir, cdir, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    bad = 0
    for name in names:
        g = [json.loads(l) for l in open(f"{gdir}/{name}.requests.jsonl") if l.strip()]
        c = [json.loads(l) for l in open(f"{cdir}/{name}.requests.jsonl") if l.strip()]
        diffs = []
        if len(g) != len(c):
            diffs.append(f"request count {len(g)} vs {len(c)}")
        for i, (a, b) in enumerate(zip(g, c)):
            if a.get("path") != b.get("path"):
                diffs.append(f"#{i} path {a.get('path')} vs {b.get('path')}")
            ba, bb = body_view(a.get("body")), body_view(b.get("body"))
            for k in sorted(set(ba) | set(bb)):
                if k in CLAMPED and isinstance(ba.get(k), int) and isinstance(bb.get(k), int) \
                        and 0 < bb[k] - ba[k] <= 2000:
                    print(f"    ~ #{i} body.{k}: pi {ba[k]} | pi-rpc {bb[k]} (context clamp, prose length)")
                    continue
                if ba.get(k) != bb.get(k):
                    diffs.append(f"#{i} body.{k}: pi {json.dumps(ba.get(k))[:300]} | pi-rpc {json.dumps(bb.get(k))[:300]}")
            ha, hb = headers_view(a.get("headers")), headers_view(b.get("headers"))
            for k in sorted(set(ha) | set(hb)):
                if ha.get(k) != hb.get(k):
                    diffs.append(f"#{i} header {k}: pi {ha.get(k)!r} | pi-rpc {hb.get(k)!r}")
            if sorted(a.get("auth_headers_present") or []) != sorted(b.get("auth_headers_present") or []):
                diffs.append(f"#{i} auth headers {a.get('auth_headers_present')} vs {b.get('auth_headers_present')}")
        print(f"{name:45} {'same' if not diffs else 'DIFFERS'}")
        for d in diffs:
            print("    " + d)
        bad += bool(diffs)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
