#!/usr/bin/env python3
"""Runs pi-rpc with extensions against the scripted LLM (offline) and prints the protocol.

    python3 examples/extensions/try.py EXT_DIR [EXT_DIR...] [--script S.json]
        [--prompt TEXT]... [--answer yes|no|none] [--keep] [-v]

It starts target/release/examples/mock_llm with the script (default: the first EXT_DIR's
demo-llm.json), writes a throwaway agent dir whose models.json points at it, starts
target/release/pi-rpc there with `-e EXT_DIR` for each extension, sends each prompt (default:
the script's "prompts" list, whose objects are sent as other RPC commands) and waits for its
response, and for the run's agent_settled when
the prompt started one. Dialogs (extension_ui_request confirm/select/input/editor) are
answered by --answer: yes (confirm true, the first option, "demo" as input), no (confirm false,
cancelled), none (never answered: the extension's timeout decides). At the end stdin is closed
so session_shutdown runs. message_update lines are only printed with -v.
Python 3 standard library only; build the binaries first (examples/extensions/README.md).
"""
import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def short(line, verbose):
    try:
        msg = json.loads(line)
    except ValueError:
        return line
    kind = msg.get("type")
    if kind == "message_update" and not verbose:
        return None
    if kind in ("message_start", "message_end"):
        m = msg["message"]
        text = json.dumps(m.get("content"))[:120] if m.get("role") != "assistant" else (
            "stopReason=%s" % m.get("stopReason"))
        return "%s %s %s" % (kind, m.get("role"), text)
    if kind in ("agent_end", "turn_end"):
        return kind
    return line if len(line) < 260 else line[:257] + "..."


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("extensions", nargs="+", help="extension folders or manifests (-e paths)")
    ap.add_argument("--script", help="mock LLM script (default: <first extension>/demo-llm.json)")
    ap.add_argument("--prompt", action="append", help="a prompt to send (repeatable)")
    ap.add_argument("--answer", choices=["yes", "no", "none"], default="yes")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/pi-rpc"))
    ap.add_argument("--mock", default=os.path.join(ROOT, "target/release/examples/mock_llm"))
    ap.add_argument("--keep", action="store_true", help="keep the temp folder (prints its path)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    exts = [os.path.abspath(e) for e in args.extensions]
    script = args.script or os.path.join(exts[0], "demo-llm.json")
    with open(script) as f:
        script_json = json.load(f)
    prompts = args.prompt or script_json.get("prompts") or ["Hello"]
    for path in (args.bin, args.mock):
        if not os.path.exists(path):
            sys.exit("%s is missing: see examples/extensions/README.md for the build commands" % path)

    tmp = tempfile.mkdtemp(prefix="pi-rpc-ext-try-")
    agent_dir, cwd = os.path.join(tmp, "agent"), os.path.join(tmp, "project")
    os.makedirs(agent_dir)
    os.makedirs(cwd)
    port_file = os.path.join(tmp, "port")
    mock = subprocess.Popen([args.mock, "--script", script, "--port-file", port_file],
                            stdout=subprocess.DEVNULL)
    try:
        for _ in range(500):
            if os.path.exists(port_file):
                break
            time.sleep(0.01)
        with open(port_file) as f:
            port = f.read().strip()
        models = {"providers": {"demo": {"baseUrl": "http://127.0.0.1:%s" % port,
                                         "api": "anthropic-messages", "apiKey": "demo-key",
                                         "models": [{"id": "scripted-model", "contextWindow": 200000,
                                                     "maxTokens": 8192}]}}}
        with open(os.path.join(agent_dir, "models.json"), "w") as f:
            json.dump(models, f)
        argv = [args.bin, "--mode", "rpc", "--no-session", "--provider", "demo",
                "--model", "scripted-model"]
        for e in exts:
            argv += ["-e", e]
        print("# cwd %s\n# %s" % (cwd, " ".join(argv)))
        env = dict(os.environ, PI_CODING_AGENT_DIR=agent_dir)
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, bufsize=1)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout] + [lines.put(None)],
                         daemon=True).start()

        def send(obj):
            print("> %s" % json.dumps(obj))
            proc.stdin.write(json.dumps(obj) + "\n")
            proc.stdin.flush()

        def pump(until):
            """Prints lines (answering dialogs) until until(msg) is true or stdout closes."""
            while True:
                line = lines.get()
                if line is None:
                    return False
                line = line.rstrip("\n")
                shown = short(line, args.verbose)
                if shown is not None:
                    print("< %s" % shown)
                msg = json.loads(line)
                if msg.get("type") == "extension_ui_request":
                    answer(msg)
                if until(msg):
                    return True

        def answer(req):
            method = req["method"]
            if method not in ("confirm", "select", "input", "editor") or args.answer == "none":
                return
            reply = {"type": "extension_ui_response", "id": req["id"]}
            if args.answer == "no":
                reply["confirmed" if method == "confirm" else "cancelled"] = \
                    False if method == "confirm" else True
            elif method == "confirm":
                reply["confirmed"] = True
            elif method == "select":
                reply["value"] = req["options"][0]
            elif method == "input":
                reply["value"] = "demo"
            else:
                reply["cancelled"] = True
            send(reply)

        for n, item in enumerate(prompts, 1):
            pid = "p%d" % n
            # A string is a prompt; an object is any other RPC command (e.g. new_session).
            if isinstance(item, dict):
                send(dict(item, id=pid))
            else:
                send({"id": pid, "type": "prompt", "message": item})
            started = []

            def done(msg, pid=pid, started=started):
                if msg.get("type") == "response" and msg.get("id") == pid:
                    if (msg.get("data") or {}).get("disposition") == "started":
                        started.append(True)
                        return False
                    return True
                return bool(started) and msg.get("type") == "agent_settled"
            if not pump(done):
                break
        print("# closing stdin (session_shutdown runs)")
        proc.stdin.close()
        pump(lambda msg: False)
        print("# pi-rpc exited with %s" % proc.wait())
        files = sorted(os.listdir(cwd))
        print("# files in the project folder: %s" % (", ".join(files) or "(none)"))
    finally:
        mock.terminate()
        mock.wait()
        if args.keep:
            print("# kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
