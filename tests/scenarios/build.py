#!/usr/bin/env python3
"""Assemble scenarios/<name>.json from src/<name>/{meta.json,index.ts,twin.py} + prelude.py."""
import json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
pre = open(os.path.join(HERE, "prelude.py")).read()
os.makedirs(os.path.join(HERE, "scenarios"), exist_ok=True)
names = sys.argv[1:] or sorted(os.listdir(os.path.join(HERE, "src")))
for name in names:
    src = os.path.join(HERE, "src", name)
    meta = json.load(open(os.path.join(src, "meta.json")))
    ext = meta.pop("ext_dir")
    ts = open(os.path.join(src, "index.ts")).read()
    twin = open(os.path.join(src, "twin.py")).read()
    sc = {"description": meta.pop("description"), "session": meta.pop("session", "none")}
    sc["agent_files"] = {"extensions/%s/index.ts" % ext: ts}
    sc["candidate_agent_files"] = {
        "extensions/%s/index.ext.json" % ext: json.dumps(
            {"command": ["{{PYTHON}}", "{{AGENT_DIR}}/extensions/%s/%s.py" % (ext, ext)], "protocol": 1}, indent=2) + "\n",
        "extensions/%s/%s.py" % (ext, ext): pre.replace("NAME", ext) + "\n\n" + twin,
    }
    sc["agent_files"].update(meta.pop("agent_files", {}))
    sc.update(meta)
    with open(os.path.join(HERE, "scenarios", name + ".json"), "w") as f:
        json.dump(sc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote scenarios/%s.json" % name)
