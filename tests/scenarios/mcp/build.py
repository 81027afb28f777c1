#!/usr/bin/env python3
"""Writes the mcp_x_*.json scenarios of this folder from the definitions below.

Every scenario embeds src/fake_mcp_x.py (a stdlib-Python MCP server, a superset of the
conformance kit's fake_mcp.py) as agent_files["fake_mcp_x.py"] and starts it with {{PYTHON}};
third-party servers are reached through the kit's {{NODE}} / {{PI_PKG_DIR}} placeholders.
  python3 build.py            # rewrite every scenario
  python3 build.py NAME...    # only these
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "src", "fake_mcp_x.py"), encoding="utf-8") as f:
    FAKE = f.read()

NPM = "{{PI_PKG_DIR}}/../../../../mcp/node_modules/@modelcontextprotocol"
FAKE_NOTE = (" The stdio server fake_mcp_x.py (Python stdlib; a superset of the kit's fake_mcp.py, "
             "identical in every mcp_x_* scenario) is written into the agent dir and run with {{PYTHON}}.")


def fake(exposure="direct", env=None, **extra):
    entry = {"command": "{{PYTHON}}", "args": ["{{AGENT_DIR}}/fake_mcp_x.py"]}
    if exposure is not None:
        entry["exposure"] = exposure
    if env:
        entry["env"] = env
    entry.update(extra)
    return entry


def everything(exposure="direct"):
    return {"command": "{{NODE}}", "args": [NPM + "/server-everything/dist/index.js", "stdio"], "exposure": exposure}


def tc(i, name, inp=None):
    return {"type": "tool_call", "id": "toolu_%02d" % i, "name": name, "input": inp or {}}


def calls(*blocks):
    return {"blocks": list(blocks), "stop_reason": "tool_use", "usage": {"input": 50, "output": 10}}


def say(text):
    return {"blocks": [{"type": "text", "text": text}], "usage": {"input": 60, "output": 5}}


def prompt(pid, message):
    return {"send": {"id": pid, "type": "prompt", "message": message}}


def settled(timeout_ms=30000):
    return {"wait": {"type": "agent_settled"}, "timeout_ms": timeout_ms}


def resp(rid, timeout_ms=30000):
    return {"wait": {"type": "response", "id": rid}, "timeout_ms": timeout_ms}


def cmd(rid, message):
    """A /mcp command prompt and its response."""
    return [prompt(rid, message), resp(rid)]


def run(pid, message, timeout_ms=30000):
    return [prompt(pid, message), settled(timeout_ms)]


S = {}

# ---------------------------------------------------------------------------------------------
S["mcp_x_resources"] = {
    "description": "The three resource tools against fake servers (all direct): docs (tools + resources, "
    "resources/list paged 4 at a time, templates), alpha (resources only, no tools capability, no "
    "templates: -32601) and broken (resources/list answers a JSON-RPC error; its tools hidden by "
    "toolExposure '*'). alpha and broken answer initialize 0.5 s late so docs registers first. Turn 1: "
    "listings without server (every page of every server, sorted by name, errors[] for broken; "
    "templates: alpha has none). Turn 2: one page per server, cursors, trimmed server, cursor without "
    "server, unknown server, a number for server (coerced). Turn 3: reads (text with _meta, image blob, "
    "binary blob saved to a temp file, JSON blob as text, several contents labelled by uri, empty, "
    "no mime type, unknown-type blob, ui:// read directly, unknown uri -> server error). Turn 4: "
    "argument errors, alpha's read, a big resource (20 KiB truncation) and resource links with the "
    "read hint." + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "docs": fake(env={"FAKE_MCP_NAME": "docs", "FAKE_MCP_CAPS": "tools,resources", "FAKE_MCP_RES_PAGE": "4"}),
            "alpha": fake(env={"FAKE_MCP_NAME": "alpha", "FAKE_MCP_CAPS": "resources", "FAKE_MCP_RES": "small",
                               "FAKE_MCP_NO_TEMPLATES": "1", "FAKE_MCP_INIT_DELAY": "0.5"}),
            "broken": fake(env={"FAKE_MCP_NAME": "broken", "FAKE_MCP_CAPS": "tools,resources",
                                "FAKE_MCP_RES_FAIL": "1", "FAKE_MCP_INIT_DELAY": "0.5"},
                           toolExposure={"*": "hidden"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "list_mcp_resources"), tc(2, "list_mcp_resource_templates")),
        calls(tc(3, "list_mcp_resources", {"server": "docs"}),
              tc(4, "list_mcp_resources", {"server": "docs", "cursor": "4"}),
              tc(5, "list_mcp_resources", {"server": " docs ", "cursor": "8"}),
              tc(6, "list_mcp_resources", {"cursor": "4"}),
              tc(7, "list_mcp_resource_templates", {"server": "alpha"}),
              tc(8, "list_mcp_resource_templates", {"server": "docs", "cursor": ""}),
              tc(9, "list_mcp_resources", {"server": "broken"}),
              tc(10, "list_mcp_resources", {"server": "nosuch"}),
              tc(11, "list_mcp_resources", {"server": 5})),
        calls(tc(12, "read_mcp_resource", {"server": "docs", "uri": "file:///docs/readme.md"}),
              tc(13, "read_mcp_resource", {"server": "docs", "uri": "file:///docs/logo.png"}),
              tc(14, "read_mcp_resource", {"server": "docs", "uri": "file:///docs/data.bin"}),
              tc(15, "read_mcp_resource", {"server": "docs", "uri": "file:///docs/config.json"}),
              tc(16, "read_mcp_resource", {"server": "docs", "uri": "file:///docs/multi"}),
              tc(17, "read_mcp_resource", {"server": "docs", "uri": "file:///docs/empty"}),
              tc(18, "read_mcp_resource", {"server": "docs", "uri": "file:///docs/noname.txt"}),
              tc(19, "read_mcp_resource", {"server": "docs", "uri": "file:///docs/mystery"}),
              tc(20, "read_mcp_resource", {"server": "docs", "uri": "ui://widget/panel"}),
              tc(21, "read_mcp_resource", {"server": "docs", "uri": "file:///nope"})),
        calls(tc(22, "read_mcp_resource", {"server": "docs"}),
              tc(23, "read_mcp_resource", {"server": "docs", "uri": "   "}),
              tc(24, "read_mcp_resource", {"server": "", "uri": "x"}),
              tc(25, "read_mcp_resource", {"server": "nosuch", "uri": "x"}),
              tc(26, "read_mcp_resource", {"server": "alpha", "uri": "mem://alpha/note"}),
              tc(27, "read_mcp_resource", {"server": "broken", "uri": "file:///docs/readme.md"}),
              tc(28, "read_mcp_resource", {"server": "docs", "uri": "file:///docs/big.txt"}),
              tc(29, "read_mcp_resource", {"server": "docs", "uri": "file:///docs/x", "extra": 1}),
              tc(30, "mcp__docs__links")),
        say("Resources explored."),
    ]},
    "steps": run("p1", "Explore the MCP resources.", 60000),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_resources_everything"] = {
    "description": "The resource tools against @modelcontextprotocol/server-everything (direct): "
    "list_mcp_resources with and without server, list_mcp_resource_templates, read_mcp_resource of "
    "static documents (markdown text), of a template URI with a bad id and of an unknown URI (server "
    "errors), and /mcp reconnect everything (' · resources' in the message).",
    "agent_files": {"mcp.json": {"mcpServers": {"everything": everything()}}},
    "mock": {"replies": [
        calls(tc(1, "list_mcp_resources", {"server": "everything"}), tc(2, "list_mcp_resources"),
              tc(3, "list_mcp_resource_templates")),
        calls(tc(4, "read_mcp_resource", {"server": "everything",
                                           "uri": "demo://resource/static/document/architecture.md"}),
              tc(5, "read_mcp_resource", {"server": "everything",
                                           "uri": "demo://resource/static/document/extension.md"}),
              tc(6, "read_mcp_resource", {"server": "everything", "uri": "demo://resource/dynamic/text/0"}),
              tc(7, "read_mcp_resource", {"server": "everything", "uri": "demo://nothing/here"})),
        say("Everything's resources read."),
    ]},
    "steps": run("p1", "Read the everything server's resources.") + cmd("m1", "/mcp reconnect everything")
    + cmd("m2", "/mcp"),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_filesystem"] = {
    "description": "@modelcontextprotocol/server-filesystem (direct) started without directory "
    "arguments, so its allowed directories come from pi's roots/list answer (the session cwd). The "
    "model lists the allowed directories, writes notes/hello.txt by a relative path, reads it back, "
    "tries a path outside the roots (a server isError result), lists the directory, then reads the "
    "written file with pi's own read tool.",
    "files": {"notes/.keep": "", "notes/todo.md": "- one\n- two\n"},
    "agent_files": {"mcp.json": {"mcpServers": {"fs": {
        "command": "{{NODE}}", "args": [NPM + "/server-filesystem/dist/index.js"], "exposure": "direct"}}}},
    "mock": {"replies": [
        calls(tc(1, "mcp__fs__list_allowed_directories")),
        calls(tc(2, "mcp__fs__write_file", {"path": "notes/hello.txt", "content": "hi from mcp\n"})),
        calls(tc(3, "mcp__fs__read_text_file", {"path": "notes/hello.txt"}),
              tc(4, "mcp__fs__read_text_file", {"path": "/etc/hostname"}),
              tc(5, "mcp__fs__list_directory", {"path": "notes"}),
              tc(6, "mcp__fs__read_text_file", {"path": "notes/todo.md", "head": 1})),
        calls(tc(7, "read", {"path": "notes/hello.txt"})),
        say("Filesystem done."),
    ]},
    "steps": run("p1", "Use the filesystem server."),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_timeout_progress"] = {
    "description": "Per-request timeouts and progress (fake direct, timeout 1 s, answering initialize 0.4 s late so "
    "'half' registers first; 'half' has timeout 0.5 and slow as its only declared tool). Turn 1: slow 2.5 s without progress -> "
    "'MCP request timed out after 1000ms' and notifications/cancelled 'Request timed out'. Turn 2: slow "
    "2.4 s with progress every 0.3 s -> each notification re-arms the timer, the call succeeds, "
    "tool_execution_update events. Turn 3: progress with messages; half's slow 1.2 s -> 'timed out after "
    "500ms'. Turn 4: seen shows the cancellation and the progress tokens." + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "fake": fake(timeout=1, env={"FAKE_MCP_INIT_DELAY": "0.4"}),
            "half": fake(exposure="hidden", timeout=0.5, toolExposure={"slow": "direct"},
                         env={"FAKE_MCP_NAME": "half"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "mcp__fake__slow", {"seconds": 2.5})),
        calls(tc(2, "mcp__fake__slow", {"seconds": 2.4, "progress": True})),
        calls(tc(3, "mcp__fake__slow", {"seconds": 1.5, "progress": True, "message": True}),
              tc(4, "mcp__half__slow", {"seconds": 1.2})),
        calls(tc(5, "mcp__fake__seen")),
        say("Timeouts explored."),
    ]},
    "steps": run("p1", "Try slow calls.", 60000),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_crash_reconnect"] = {
    "description": "A server that drops after connecting (fake direct, writes a startup line to stderr; "
    "res: resources only, connects 0.5 s later). crash -> 'MCP connection closed'; /mcp shows "
    "'disconnected, reconnects on next call' with 'Connection closed' and the stderr tail; seen reconnects "
    "lazily (fresh process: initialize id 1); /mcp; '/mcp reconnect fake' and '/mcp reconnect res' "
    "(' · resources'); stderr_crash writes ~2600 UTF-16 units of stderr (accents, emoji) -> the /mcp tail "
    "keeps the last 2000; '/mcp reconnect' without a name picks the one disconnected server; seen again."
    + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "fake": fake(env={"FAKE_MCP_STDERR": "fake starting up"}),
            "res": fake(env={"FAKE_MCP_NAME": "res", "FAKE_MCP_CAPS": "resources", "FAKE_MCP_RES": "small",
                             "FAKE_MCP_INIT_DELAY": "0.5"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "mcp__fake__crash")),
        say("It crashed."),
        calls(tc(2, "mcp__fake__seen")),
        say("Reconnected lazily."),
        calls(tc(3, "mcp__fake__stderr_crash")),
        say("Crashed loudly."),
        calls(tc(4, "mcp__fake__seen"), tc(5, "read_mcp_resource", {"server": "res", "uri": "mem://res/note"})),
        say("Back again."),
    ]},
    "steps": run("p1", "Crash the server.") + cmd("m1", "/mcp") + run("p2", "What does it see now?")
    + cmd("m2", "/mcp") + cmd("m3", "/mcp reconnect fake") + cmd("m4", "/mcp reconnect res")
    + run("p3", "Crash it loudly.") + cmd("m5", "/mcp") + cmd("m6", "/mcp reconnect") + cmd("m7", "/mcp")
    + run("p4", "And now?"),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_project_trusted"] = {
    "description": "--approve trusts <cwd>/.pi/mcp.json: 'fake' is replaced by the project entry (hidden, "
    "only whereami direct, FAKE_MCP_NAME=replaced), 'over' gets a project override (exposure hidden + "
    "toolExposure whereami direct, keeping its user env: whereami shows FAKE_MCP_SECRET=over-secret), 'dis' is disabled by an override, 'proj' is "
    "project-only; errors: an override without a user entry, an override with other keys, auth in the "
    "project file, a bad exposure. User servers 'over' and project 'proj' connect 0.4 / 0.8 s late so "
    "the declared order is fixed. /mcp shows the merged list and the config errors; the model calls the "
    "declared tools and the unreachable ones." + FAKE_NOTE,
    "args": ["--approve"],
    "files": {".pi/mcp.json": {"mcpServers": {
        "proj": fake(env={"FAKE_MCP_NAME": "proj", "FAKE_MCP_INIT_DELAY": "0.8"}, exposure="hidden",
                     toolExposure={"echo": "direct"}),
        "fake": fake(exposure="hidden", toolExposure={"whereami": "direct"}, env={"FAKE_MCP_NAME": "replaced"}),
        "over": {"exposure": "hidden", "toolExposure": {"whereami": "direct"}},
        "dis": {"enabled": False},
        "orphan": {"exposure": "direct"},
        "keep": {"exposure": "direct", "timeout": 5},
        "remote": {"url": "https://example.invalid/mcp", "auth": {"provider": "anthropic"}},
        "weird": fake(exposure="sometimes"),
    }}},
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "fake": fake(env={"FAKE_MCP_SECRET": "user-secret"}),
            "over": fake(env={"FAKE_MCP_NAME": "over", "FAKE_MCP_SECRET": "over-secret", "FAKE_MCP_INIT_DELAY": "0.4"}),
            "dis": fake(env={"FAKE_MCP_NAME": "dis"}),
            "keep": fake(exposure="hidden", env={"FAKE_MCP_NAME": "keep"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "mcp__fake__whereami"), tc(2, "mcp__over__whereami"),
              tc(3, "mcp__proj__echo", {"text": "proj"}), tc(4, "mcp__fake__echo", {"text": "hidden"}),
              tc(5, "mcp__dis__echo", {"text": "disabled"}), tc(6, "mcp__keep__echo", {"text": "keep"})),
        say("Project servers used."),
    ]},
    "steps": cmd("m0", "/mcp") + run("p1", "Which servers?"),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_exposure"] = {
    "description": "deferred + tool_search and hidden + toolExposure. 'def' is deferred (with resources, "
    "a description); 'hid' is hidden except echo (direct). The first request declares "
    "read/bash/edit/write, tool_search and mcp__hid__echo, with the mcp_servers section listing "
    "'mcp__def (tool_search): ...'. The model calls a deferred tool before loading it (not found), then "
    "tool_search: 'echo' (one tool), empty query, limit 0, no match, 'return' with limit 3 (BM25 "
    "ranking), an exact tool name, 'resources' (the resource tools share def's deferred exposure), then "
    "the loaded tools; hid's hidden tool stays unreachable. A second prompt keeps the loaded tools." + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "def": fake(exposure="deferred", description="Deferred fake server\nwith a second line",
                        env={"FAKE_MCP_NAME": "def", "FAKE_MCP_CAPS": "tools,resources", "FAKE_MCP_RES": "small"}),
            "hid": fake(exposure="hidden", toolExposure={"echo": "direct"}, env={"FAKE_MCP_NAME": "hid"}),
            "pat": fake(exposure="hidden", toolExposure={"s*": "direct", "slow": "hidden", "*e*": "deferred",
                                                          "seen": "hidden", "*": "direct"},
                        env={"FAKE_MCP_NAME": "pat", "FAKE_MCP_INIT_DELAY": "0.4"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "mcp__def__whereami"), tc(2, "mcp__hid__seen"), tc(31, "mcp__pat__slow", {"seconds": 0.1}),
              tc(32, "mcp__pat__sized", {"count": 3})),
        calls(tc(3, "tool_search", {"query": "echo"})),
        calls(tc(4, "mcp__def__echo", {"text": "loaded"}), tc(5, "tool_search", {"query": "   "}),
              tc(6, "tool_search", {"query": "text", "limit": 0})),
        calls(tc(7, "tool_search", {"query": "zzzz qqqq"}), tc(8, "tool_search", {"query": "return", "limit": 3})),
        calls(tc(9, "tool_search", {"query": "mcp__def__seen"}), tc(10, "tool_search", {"query": "resources"})),
        calls(tc(11, "list_mcp_resources")),
        calls(tc(12, "mcp__def__seen"), tc(13, "mcp__hid__echo", {"text": "direct"})),
        say("Exposure explored."),
        calls(tc(14, "mcp__def__echo", {"text": "still loaded"})),
        say("Second prompt done."),
    ]},
    "steps": run("p1", "Find and use the tools.") + run("p2", "Again."),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_codemode"] = {
    "description": "Documents the codemode deviation: 'cm' has the default exposure (codemode) and 'cm2' is "
    "codemode with echo direct (cm answers initialize 1.5 s late, so the first prompt lists it without "
    "a summary). pi activates its codemode tool and lists both servers '(codemode)' in "
    "mcp_servers; pi-rpc serves them as deferred via tool_search. /mcp shows '(codemode)' for both." + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "cm": fake(exposure=None, env={"FAKE_MCP_NAME": "cm", "FAKE_MCP_INIT_DELAY": "1.5"}),
            "cm2": fake(exposure="codemode", toolExposure={"echo": "direct"}, env={"FAKE_MCP_NAME": "cm2"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "mcp__cm2__echo", {"text": "direct in codemode server"})),
        say("Codemode servers listed."),
    ]},
    "steps": run("p1", "What MCP servers are there?") + cmd("m1", "/mcp"),
}

# ---------------------------------------------------------------------------------------------
LONG_DESC = ("A server, whose description is longer than the section allows: " + "lorem ipsum " * 15
             + "caf\u00e9 \U0001F600 " * 4 + "tail that is cut\nsecond line never shown")
S["mcp_x_section_update"] = {
    "description": "The mcp_servers section over a session (all deferred, so prompts never wait): 'late' "
    "answers initialize after 2 s and has no description, so the first prompt lists it without a summary; "
    "'long' has a description over 250 characters (cut with an ellipsis, emoji near the cut); 'mute' sends "
    "no instructions. After 3 s the second prompt appends a patch system message with late's instructions "
    "as its summary; the third prompt changes nothing and adds no patch. /mcp in between." + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "late": fake(exposure="deferred", env={"FAKE_MCP_NAME": "late", "FAKE_MCP_INIT_DELAY": "2"}),
            "long": fake(exposure="deferred", description=LONG_DESC, env={"FAKE_MCP_NAME": "long"}),
            "mute": fake(exposure="deferred", env={"FAKE_MCP_NAME": "mute", "FAKE_MCP_INSTRUCTIONS": "-"}),
        }},
    },
    "mock": {"replies": [say("First."), say("Second."), say("Third.")]},
    "steps": run("p1", "First prompt.") + [{"sleep_ms": 3000}] + cmd("m1", "/mcp") + run("p2", "Second prompt.")
    + run("p3", "Third prompt."),
}

# ---------------------------------------------------------------------------------------------
MANY = {}
for i in range(40):
    MANY["srv-%02d-%s" % (i, "x" * 30)] = {"command": "/nonexistent/mcp-%02d" % i, "exposure": "deferred",
                                          "description": "Server number %d. " % i + "word " * 60}
S["mcp_x_section_limits"] = {
    "description": "The 4096-character limit of the mcp_servers section: 40 deferred servers with long names "
    "and descriptions (their executables do not exist, so they all fail, but enabled servers are listed "
    "anyway). Summaries shrink first; the servers that do not fit are replaced by '- … <n> more servers; "
    "find their tools with searchTools()'. The startup report lists every failure; tool_search finds "
    "nothing.",
    "agent_files": {"mcp.json": {"mcpServers": MANY}},
    "mock": {"replies": [calls(tc(1, "tool_search", {"query": "server"})), say("Many servers.")]},
    "steps": cmd("m0", "/mcp") + run("p1", "How many servers?"),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_no_codemode"] = {
    "description": "autoEnableCodemode:false with a codemode server ('cm', default exposure) next to a "
    "direct one: pi warns at session start 'MCP tools are only reachable from the codemode or tool_search "
    "tool, but neither is active (autoEnableCodemode is false); they cannot be called.', activates "
    "neither tool, still lists cm '(codemode)' in mcp_servers; the direct server works; a cm tool is "
    "not found." + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"autoEnableCodemode": False, "mcpServers": {
            "cm": fake(exposure=None, env={"FAKE_MCP_NAME": "cm"}),
            "d": fake(env={"FAKE_MCP_NAME": "d"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "mcp__d__echo", {"text": "direct"}), tc(2, "mcp__cm__echo", {"text": "codemode"})),
        say("Only direct tools."),
    ]},
    "steps": cmd("m0", "/mcp") + run("p1", "Use the tools."),
}

S["mcp_x_no_codemode_deferred"] = {
    "description": "autoEnableCodemode:false (set in the trusted project file, overriding the user's true) "
    "with a codemode server and a deferred one (0.5 s late, so cm registers first and wins tool_search "
    "ties): tool_search is active, so no warning; the codemode "
    "server's tools are found by tool_search too." + FAKE_NOTE,
    "args": ["--approve"],
    "files": {".pi/mcp.json": {"autoEnableCodemode": False, "mcpServers": {}}},
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"autoEnableCodemode": True, "mcpServers": {
            "cm": fake(exposure=None, env={"FAKE_MCP_NAME": "cm"}),
            "def": fake(exposure="deferred", env={"FAKE_MCP_NAME": "def", "FAKE_MCP_INIT_DELAY": "0.5"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "tool_search", {"query": "echo", "limit": 5})),
        calls(tc(2, "mcp__cm__echo", {"text": "via search"})),
        say("Found through search."),
    ]},
    "steps": cmd("m0", "/mcp") + run("p1", "Find echo."),
}

S["mcp_x_bad_codemode_flag"] = {
    "description": "A non-boolean autoEnableCodemode is a config error (reported at startup and by /mcp); the "
    "servers of that file are still read." + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"autoEnableCodemode": "yes", "mcpServers": {"d": fake(env={"FAKE_MCP_NAME": "d"})}},
    },
    "mock": {"replies": [calls(tc(1, "mcp__d__echo", {"text": "still read"})), say("ok")]},
    "steps": cmd("m0", "/mcp") + run("p1", "Echo."),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_truncation"] = {
    "description": "The 20 KiB limit on model-facing MCP text (fake direct). Turn 1: exactly 20480 bytes "
    "(kept) and 20481 (cut: warning header, token count, line count, head…N chars truncated…tail, full "
    "output path). Turn 2: 8000 x 'é€' (5 bytes each; cuts at character boundaries, N counts characters), "
    "text split over two blocks with an image between (joined with '\\n', the image after the text), "
    "big (two blocks, trailing newline), 20479 + '\\n' (kept), 25000 + '\\n' (cut; the final newline "
    "does not count as a line). Turn 3: bash lists the saved files' modes and sizes." + FAKE_NOTE,
    "agent_files": {"fake_mcp_x.py": FAKE, "mcp.json": {"mcpServers": {"fake": fake()}}},
    "mock": {"replies": [
        calls(tc(1, "mcp__fake__sized", {"count": 20480}), tc(2, "mcp__fake__sized", {"count": 20481})),
        calls(tc(3, "mcp__fake__sized", {"count": 8000, "unit": "\u00e9\u20ac"}),
              tc(4, "mcp__fake__sized", {"count": 8000, "unit": "ab\n", "split": True, "image": True}),
              tc(5, "mcp__fake__big", {"lines": 600}),
              tc(6, "mcp__fake__sized", {"count": 20479, "newline": True}),
              tc(8, "mcp__fake__sized", {"count": 25000, "newline": True})),
        calls(tc(7, "bash", {"command": "stat -c '%a %s' \"$TMPDIR\"/pi-mcp-*.txt | sort -k2 -n"})),
        say("Truncation seen."),
    ]},
    "steps": run("p1", "Produce big outputs."),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_logging"] = {
    "description": "Server log messages (notifications/message) go to <agentDir>/mcp.log, never to the "
    "client: 'fake' logs at startup (logger 'startup') and from its log tool (string, object with logger, "
    "multi-line with CRLF, empty logger with array data, no level, a number); 'other' (hidden, 0.4 s "
    "late) logs at startup. bash prints the log (timestamps normalized); seen shows whether the client "
    "sent logging/setLevel." + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "fake": fake(env={"FAKE_MCP_CAPS": "tools,logging", "FAKE_MCP_LOG_INIT": "1"}),
            "other": fake(exposure="hidden", env={"FAKE_MCP_NAME": "other", "FAKE_MCP_LOG_INIT": "1",
                                                  "FAKE_MCP_INIT_DELAY": "0.4"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "mcp__fake__log")),
        calls(tc(2, "bash", {"command": "sleep 0.5; cat ../agent/mcp.log; ls ../agent | grep mcp"})),
        calls(tc(3, "mcp__fake__seen")),
        say("Logs read."),
    ]},
    "steps": run("p1", "Log something."),
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_list_changed"] = {
    "description": "notifications/tools/list_changed (fake direct): mutate swap removes echo and adds fresh, "
    "then notifies; the server answers the client's tools/list before returning the call. The next request "
    "declares fresh (toolsAdded) and no longer echo; echo is unreachable, fresh works. mutate restore "
    "brings echo back and withdraws fresh. /mcp shows the tool count." + FAKE_NOTE,
    "agent_files": {"fake_mcp_x.py": FAKE, "mcp.json": {"mcpServers": {"fake": fake()}}},
    "mock": {"replies": [
        calls(tc(1, "mcp__fake__mutate", {"mode": "swap"})),
        calls(tc(2, "mcp__fake__fresh", {"n": 1}), tc(3, "mcp__fake__echo", {"text": "gone?"})),
        say("Swapped."),
        calls(tc(4, "mcp__fake__mutate", {"mode": "restore"})),
        calls(tc(5, "mcp__fake__echo", {"text": "back"}), tc(6, "mcp__fake__fresh", {"n": 2})),
        say("Restored."),
    ]},
    "steps": run("p1", "Change the tools.") + cmd("m1", "/mcp") + run("p2", "Restore them.") + cmd("m2", "/mcp"),
}

# ---------------------------------------------------------------------------------------------
LONG_SERVER = "protocol-conformance-test-server-with-long-nm"


def tool_name(server, tool):
    """pi's createMcpToolName for a name that is too long (no collision)."""
    import hashlib
    import re as _re
    name = _re.sub(r"[^A-Za-z0-9_]", "_", "mcp__%s__%s" % (server, tool))
    if len(name) <= 64:
        return name
    h = hashlib.sha256(("%s\0%s" % (server, tool)).encode()).hexdigest()[:8]
    return name[:55] + "_" + h


def lt(tool):
    return tool_name(LONG_SERVER, tool)


S["mcp_x_client_protocol"] = {
    "description": "Client side of the protocol, one call per turn, against a fake server with a 44-character "
    "name (tool names over 64 characters get the 8-hex sha256 suffix: invalid_result, progress_odd; "
    "stderr_crash stays at 63). ask makes the server send requests to the client mid-call (ping, "
    "roots/list, sampling/createMessage, elicitation/create, custom/thing with a numeric id) and returns "
    "the answers; noisy prints junk lines (non-JSON, an incomplete JSON-RPC object, an array, a blank "
    "line, a response for an unknown id, an unknown notification) and a CRLF-terminated answer; "
    "invalid_result answers content:'not a list'; empty answers {}; progress_odd sends progress with "
    "fractions, float totals, an empty message, a string progress (ignored), an unknown token (ignored), "
    "1e21 and a negative value (tool_execution_update texts; compare.py does not compare them, check by "
    "hand). seen shows what the client sent." + FAKE_NOTE,
    "agent_files": {"fake_mcp_x.py": FAKE, "mcp.json": {"mcpServers": {LONG_SERVER: fake()}}},
    "mock": {"replies": [
        calls(tc(1, lt("ask"))),
        calls(tc(2, lt("noisy"))),
        calls(tc(3, lt("invalid_result"))),
        calls(tc(4, lt("empty"))),
        calls(tc(5, lt("progress_odd"))),
        calls(tc(6, lt("seen"))),
        say("Protocol explored."),
    ]},
    "steps": run("p1", "Talk protocol."),
}

# ---------------------------------------------------------------------------------------------
JSON_SERVERS = {"mcpServers": {
    "fake": fake(),
    "missing": {"command": "/nonexistent/bin/mcp-server", "exposure": "direct"},
    "def": fake(exposure="deferred", env={"FAKE_MCP_NAME": "def"}, description="Deferred in json mode"),
}}
S["mcp_x_json_mode"] = {
    "description": "--mode json -p with MCP: same servers, waits, tools and section as RPC (fake direct, def "
    "deferred, a missing executable), but no startup report and no extension_ui_request records; the "
    "model calls echo and a tool of the failed server." + FAKE_NOTE,
    "default_args": False,
    "args": ["--mode", "json", "--provider", "mock", "--model", "mock-sonnet", "--no-session", "-p",
             "Use echo in json mode."],
    "agent_files": {"fake_mcp_x.py": FAKE, "mcp.json": JSON_SERVERS},
    "mock": {"replies": [
        calls(tc(1, "mcp__fake__echo", {"text": "json"}), tc(2, "mcp__missing__anything")),
        say("Json mode done."),
    ]},
    "steps": [],
    "exit_timeout_s": 30,
}
S["mcp_x_print_mode"] = {
    "description": "-p (text print mode) with MCP (fake direct, def deferred, a missing executable): the tool "
    "call works, only the final text is printed, no startup report." + FAKE_NOTE,
    "default_args": False,
    "args": ["--mode", "text", "--provider", "mock", "--model", "mock-sonnet", "--no-session", "-p",
             "Use echo in print mode."],
    "agent_files": {"fake_mcp_x.py": FAKE, "mcp.json": JSON_SERVERS},
    "mock": {"replies": [
        calls(tc(1, "mcp__fake__echo", {"text": "print"})),
        say("Print mode done."),
    ]},
    "steps": [],
    "exit_timeout_s": 30,
}
S["mcp_x_print_mcp"] = {
    "description": "'/mcp' as the -p message in text print mode: handled by the command, whose output is "
    "dropped without a UI; nothing is printed and the model is not called." + FAKE_NOTE,
    "default_args": False,
    "args": ["--mode", "text", "--provider", "mock", "--model", "mock-sonnet", "--no-session", "-p", "/mcp"],
    "agent_files": {"fake_mcp_x.py": FAKE, "mcp.json": JSON_SERVERS},
    "mock": {"replies": [say("Should not be asked.")]},
    "steps": [],
    "exit_timeout_s": 30,
}

# ---------------------------------------------------------------------------------------------
S["mcp_x_env_and_failures"] = {
    "description": "Value expansion and connect failures not in the kit's mcp_server_fails (all direct). "
    "'shellenv': FAKE_MCP_SECRET from a shell command that counts its runs (pi resolves MCP env values "
    "uncached, so '/mcp reconnect' runs it again), FAKE_MCP_GREETING with $$, $!, '${not a name}', an "
    "unclosed '${', '$5' and a trailing '$'; its tools/list ends with nextCursor ''. 'oldproto' answers "
    "protocol 2024-11-05 (accepted), pages tools 10 at a time ending with nextCursor null, connects 0.5 s "
    "late. Failures: two unset variables (plural message, each named once), an empty variable, a failing "
    "and an empty shell command, a tool without inputSchema, a repeated cursor, an initialize result "
    "without serverInfo.version, a tools/list JSON-RPC error, initialize slower than a 0.25 s timeout, a "
    "process that exits after ~2000+ UTF-16 units of stderr (tail trimmed and cut). /mcp, whereami, "
    "/mcp reconnect shellenv, whereami again; /mcp reconnect of a failed server and of a disabled one; /mcp "
    "login of a disabled server." + FAKE_NOTE,
    "env": {"MCP_EMPTY": ""},
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "shellenv": fake(exposure="hidden", toolExposure={"whereami": "direct"}, env={
                "FAKE_MCP_NAME": "shellenv", "FAKE_MCP_BAD": "null_cursor",
                "FAKE_MCP_SECRET": "!echo x >> {{TMP}}/count; wc -l < {{TMP}}/count | tr -d ' '",
                "FAKE_MCP_GREETING": "a $$ b $! c ${not a name} d ${UNCLOSED e $5 f $"}),
            "oldproto": fake(exposure="hidden", toolExposure={"echo": "direct"}, env={
                "FAKE_MCP_NAME": "oldproto", "FAKE_MCP_PROTO": "2024-11-05", "FAKE_MCP_BAD": "null_cursor",
                "FAKE_MCP_PAGE": "10", "FAKE_MCP_INIT_DELAY": "0.5"}),
            "multi": fake(env={"T": "${MCP_UNSET_A}:${MCP_UNSET_B}:$MCP_UNSET_A"}),
            "emptyvar": fake(env={"T": "${MCP_EMPTY}"}),
            "shellfail": fake(env={"T": "!exit 3"}),
            "shellempty": fake(env={"T": "!true"}),
            "badtools": fake(env={"FAKE_MCP_BAD": "tools_entry"}),
            "dupcursor": fake(env={"FAKE_MCP_BAD": "dup_cursor"}),
            "badinit": fake(env={"FAKE_MCP_BAD": "init_invalid"}),
            "toolserr": fake(env={"FAKE_MCP_BAD": "tools_error"}),
            "quick": fake(timeout=0.25, env={"FAKE_MCP_INIT_DELAY": "1"}),
            "loud": fake(env={"FAKE_MCP_EXIT_STDERR": "80"}),
            "off": fake(enabled=False),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "mcp__shellenv__whereami"), tc(2, "mcp__oldproto__echo", {"text": "old"})),
        say("First look."),
        calls(tc(3, "mcp__shellenv__whereami")),
        say("Second look."),
    ]},
    "steps": cmd("m0", "/mcp") + run("p1", "Look around.") + cmd("m1", "/mcp reconnect shellenv")
    + run("p2", "Look again.") + cmd("m2", "/mcp reconnect badinit") + cmd("m3", "/mcp reconnect off")
    + cmd("m4", "/mcp login off"),
}

S["mcp_x_search_waits"] = {
    "description": "tool_search and the resource tools wait for servers that are still connecting (prompts do "
    "not wait for deferred servers): 'fastres' (deferred, resources) answers initialize after 0.5 s, 'slowres' "
    "(deferred, resources) after 1.5 s. The section is computed once per prompt: it keeps both servers "
    "without summaries for every turn of the prompt. The first prompt is sent at once; its first request lists "
    "both in mcp_servers; the model's tool_search 'resources' waits for both, loads the resource tools; "
    "list_mcp_resources then lists both servers; tool_search 'echo' finds both servers' echo." + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "fastres": fake(exposure="deferred", env={"FAKE_MCP_NAME": "fastres", "FAKE_MCP_CAPS": "tools,resources",
                                                      "FAKE_MCP_RES": "small", "FAKE_MCP_INIT_DELAY": "0.5"}),
            "slowres": fake(exposure="deferred", env={"FAKE_MCP_NAME": "slowres", "FAKE_MCP_CAPS": "tools,resources",
                                                      "FAKE_MCP_RES": "small", "FAKE_MCP_INIT_DELAY": "1.5"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "tool_search", {"query": "resources"})),
        calls(tc(2, "list_mcp_resources")),
        calls(tc(3, "tool_search", {"query": "echo", "limit": 2})),
        calls(tc(4, "mcp__slowres__echo", {"text": "slow"})),
        say("Waited."),
    ]},
    "steps": run("p1", "Search right away."),
}

S["mcp_x_direct_wait_timeout"] = {
    "description": "The first prompt waits at most 10 s for direct servers: 'late' (direct) answers initialize "
    "after 11 s, so pi notifies 'MCP servers are still connecting; their tools become available once "
    "connected.' and sends the first request without late's tools; the model runs bash 'sleep 3', and the "
    "next request of the same prompt declares late's tools (toolsAdded); the model calls one." + FAKE_NOTE,
    "agent_files": {
        "fake_mcp_x.py": FAKE,
        "mcp.json": {"mcpServers": {
            "late": fake(exposure="hidden", toolExposure={"echo": "direct", "seen": "direct"},
                         env={"FAKE_MCP_NAME": "late", "FAKE_MCP_INIT_DELAY": "11"}),
        }},
    },
    "mock": {"replies": [
        calls(tc(1, "bash", {"command": "sleep 3; echo waited"})),
        calls(tc(2, "mcp__late__echo", {"text": "finally"})),
        say("Late tools used."),
    ]},
    "steps": run("p1", "Start before the server is ready.", 40000),
    "timeout_s": 90,
}

OVERFLOW = {}
for i in range(70):
    OVERFLOW["srv-%02d-%s" % (i, "y" * 40)] = {"command": "/nonexistent/mcp-%02d" % i, "exposure": "deferred",
                                              "description": "Overflow server %d" % i}
S["mcp_x_section_overflow"] = {
    "description": "More deferred servers (70, long names; their executables do not exist) than the 4096 "
    "characters of mcp_servers hold: the summaries are dropped and the last servers are replaced by "
    "'- … <n> more servers; find their tools with searchTools()'. How many fit depends on the length of the "
    "intro sentence, which is the implementation's own wording.",
    "agent_files": {"mcp.json": {"mcpServers": OVERFLOW}},
    "mock": {"replies": [say("Too many servers.")]},
    "steps": cmd("m0", "/mcp") + run("p1", "How many servers?"),
}

S["mcp_x_new_session_deferred"] = {
    "description": "new_session after tool_search loaded deferred tools: the new session starts with only "
    "read/bash/edit/write/tool_search declared again (the loaded tools belong to the old session), a fresh "
    "system message with the mcp_servers section, and tool_search can load the tool again." + FAKE_NOTE,
    "agent_files": {"fake_mcp_x.py": FAKE, "mcp.json": {"mcpServers": {
        "def": fake(exposure="deferred", description="Deferred server", env={"FAKE_MCP_NAME": "def"})}}},
    "mock": {"replies": [
        calls(tc(1, "tool_search", {"query": "echo"})),
        calls(tc(2, "mcp__def__echo", {"text": "first session"})),
        say("First session."),
        calls(tc(3, "mcp__def__echo", {"text": "not loaded"})),
        calls(tc(4, "tool_search", {"query": "mcp__def__echo"})),
        calls(tc(5, "mcp__def__echo", {"text": "second session"})),
        say("Second session."),
    ]},
    "steps": run("p1", "Load echo.") + [{"send": {"id": "n1", "type": "new_session"}}, resp("n1")]
    + run("p2", "Echo again."),
}

S["mcp_x_abort_wait"] = {
    "description": "abort while tool_search waits for a deferred server that answers initialize after 4 s: the "
    "wait ends with the abort (the run ends aborted well before the server connects); a later prompt's "
    "tool_search finds the server's tools." + FAKE_NOTE,
    "agent_files": {"fake_mcp_x.py": FAKE, "mcp.json": {"mcpServers": {
        "slowdef": fake(exposure="deferred", env={"FAKE_MCP_NAME": "slowdef", "FAKE_MCP_INIT_DELAY": "4"})}}},
    "mock": {"replies": [
        calls(tc(1, "tool_search", {"query": "echo"})),
        calls(tc(2, "tool_search", {"query": "echo"})),
        say("Found after waiting."),
    ]},
    "steps": [prompt("p1", "Search a slow server."),
              {"wait": {"type": "tool_execution_start", "toolName": "tool_search"}, "timeout_ms": 15000},
              {"sleep_ms": 500}, {"send": {"id": "a1", "type": "abort"}}, settled(), resp("a1"),
              {"sleep_ms": 4500}] + run("p2", "Search again."),
}


def main(names):
    for name in names or sorted(S):
        sc = dict(S[name])
        sc.setdefault("session", "none")
        with open(os.path.join(HERE, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(sc, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(name)


if __name__ == "__main__":
    main(sys.argv[1:])
