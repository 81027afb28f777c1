#!/usr/bin/env python3
"""Compares the request bodies of a scenario's golden with pi-rpc's output, prose aside.

    check_requests.py GOLDEN_DIR OUT_DIR NAME

compare.py's structural view does not know where the system messages a model keeps in place
land in an Anthropic request, so it reports their prose (the text of the prompt sections and
the tool descriptions, which are pi-rpc's own words) as differences. This check masks every
system/developer instruction text (keeping whether it is a section update, a tools notice or
other prose) and every `description`, then compares `messages` / `input` / `tools` of each
request exactly: order, roles, item types, tool names and schemas, notices, cache markers.
"""
import json, re, sys

STRUCTURAL = ("Updated system prompt section", "Removed system prompt section",
              "The following tools are no longer available", "This is an incremental tools update",
              "Still unavailable:")


def skeleton(text):
    """The lines of an instruction text that are pi's own wording, not prompt prose: section
    update headers, the tools notices and the removed names (`- name`)."""
    return [l for l in text.split("\n") if l.startswith(STRUCTURAL) or re.fullmatch(r"- [\w.-]+", l)]


def mask(v, in_sys=False):
    if isinstance(v, dict):
        out = {}
        sysmsg = v.get("role") == "system" or (v.get("role") == "developer" and "type" not in v)
        for k, x in v.items():
            if k == "description" and isinstance(x, str):
                out[k] = "<prose>"
            elif k in ("content", "text") and isinstance(x, str) and (sysmsg or in_sys):
                out[k] = skeleton(x)
            else:
                out[k] = mask(x, in_sys or (sysmsg and k == "content"))
        return out
    if isinstance(v, list):
        return [mask(x, in_sys) for x in v]
    return v


g,c,n=sys.argv[1:]
G=[json.loads(l) for l in open(f'{g}/{n}.requests.jsonl')]
C=[json.loads(l) for l in open(f'{c}/{n}.requests.jsonl')]
bad=0
for i,(a,b) in enumerate(zip(G,C)):
    ba,bb=mask(a['body']),mask(b['body'])
    for k in ('messages','input','tools'):
        if ba.get(k)!=bb.get(k):
            bad+=1
            print(n,'#%d'%i,k,'DIFF')
            A=ba.get(k) or []; B=bb.get(k) or []
            for j,(x,y) in enumerate(zip(A,B)):
                if x!=y: print('  at',j,'\n   pi    ',json.dumps(x)[:400],'\n   pi-rpc',json.dumps(y)[:400]); break
            if len(A)!=len(B): print('  len',len(A),len(B))
print(n, 'OK' if not bad and len(G)==len(C) else 'DIFFERS')
