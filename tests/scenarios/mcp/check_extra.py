#!/usr/bin/env python3
"""What compare.py leaves out but the mcp_x_* scenarios pin (run.sh calls this after compare.py).

  check_extra.py GOLDEN_DIR CANDIDATE_DIR NAME...

* The server lines of the mcp_servers section (every line but the intro sentence, whose wording is
  the implementation's own): in each request's system prompt and in each system message's
  sections.mcp_servers. compare.py --structural-requests compares sections by name only.
* The texts of tool_execution_update partial results, per tool call (compare.py treats partial
  results as volatile; MCP progress texts are exact, mcp.md §4.5).
Deliberate deviations: pi-rpc lists codemode servers as "(tool_search)" (no codemode sandbox), so
golden "(codemode)" labels are read as "(tool_search)" in the scenarios of CODEMODE_AS_SEARCH; and
the closing "- … <n> more servers; find their tools with …" line is prose (pi names codemode's
searchTools(), pi-rpc tool_search), so only its count is compared.
Prints one line per scenario, then the differences. Exit status 1 when any differ.
"""
import json
import re
import sys

CODEMODE_AS_SEARCH = {"mcp_x_codemode"}
SECTION_RE = re.compile(r"<mcp_servers>\n(.*?)\n</mcp_servers>", re.S)


OMITTED_RE = re.compile(r"^(- … \d+ more servers?); .*$")


def server_lines(text):
    m = SECTION_RE.search(text or "")
    if not m:
        return None
    return [OMITTED_RE.sub(r"\1", l) for l in m.group(1).split("\n")[1:]]


def sections(d, name):
    out = []
    try:
        with open("%s/%s.requests.jsonl" % (d, name), encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                body = json.loads(line).get("body", {})
                system = body.get("system")
                if isinstance(system, list):
                    system = "\n".join(part.get("text", "") for part in system)
                out.append(("request#%d" % i, server_lines(system)))
    except FileNotFoundError:
        pass
    n = 0
    with open("%s/%s.jsonl" % (d, name), encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line).get("record") or {}
            if rec.get("type") == "message_end" and (rec.get("message") or {}).get("role") == "system":
                secs = rec["message"].get("sections") or {}
                if "mcp_servers" in secs:
                    n += 1
                    value = secs["mcp_servers"]
                    out.append(("system message #%d" % n, server_lines(value) if value else value))
    return out


def updates(d, name):
    out = {}
    with open("%s/%s.jsonl" % (d, name), encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line).get("record") or {}
            if rec.get("type") == "tool_execution_update":
                partial = rec.get("partialResult") or {}
                texts = [b.get("text") for b in partial.get("content") or [] if b.get("type") == "text"]
                if rec.get("toolName") != "bash":
                    out.setdefault(rec.get("toolCallId"), []).append(texts)
    return out


def main():
    golden, cand, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    bad = 0
    for name in names:
        diffs = []
        a, b = sections(golden, name), sections(cand, name)
        if name in CODEMODE_AS_SEARCH:
            a = [(where, [l.replace(" (codemode)", " (tool_search)") for l in lines] if lines else lines)
                 for where, lines in a]
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else None
            y = b[i] if i < len(b) else None
            if x != y:
                diffs.append("  section %s\n    golden: %s\n    cand:   %s" % (
                    (x or y)[0], json.dumps(x and x[1], ensure_ascii=False),
                    json.dumps(y and y[1], ensure_ascii=False)))
        ua, ub = updates(golden, name), updates(cand, name)
        for call in sorted(set(ua) | set(ub)):
            if ua.get(call) != ub.get(call):
                diffs.append("  updates of %s\n    golden: %s\n    cand:   %s" % (
                    call, json.dumps(ua.get(call), ensure_ascii=False), json.dumps(ub.get(call), ensure_ascii=False)))
        print("%-28s %s" % (name, "DIFFERENT" if diffs else "same"))
        for d in diffs:
            print(d)
        bad += bool(diffs)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
