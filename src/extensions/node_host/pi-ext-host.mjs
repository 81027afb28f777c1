// pi-ext-host.mjs: pi-rpc's Node extension host (spec/extensions.md §B15).
//
// Run by pi-rpc as `node pi-ext-host.mjs <piPackageDir>`. One process hosts every `.ts` / `.js`
// extension unit. It loads them with pi's own loader and runs each in its own pi
// `ExtensionRunner`, both taken from the user's installed pi package (nothing of pi is copied
// here), and speaks pi-rpc's extension protocol 1 (JSONL on stdin/stdout, §B4–§B12), naming the
// unit of every message in `ext`.
//
// pi's synchronous getters (ctx.model, ctx.isIdle(), pi.getActiveTools(), ctx.sessionManager...)
// read a copy of pi-rpc's state that this host refreshes with `ctx.getState` (and, when the
// session moved, `session.getHeader` / `session.getEntries`) before each awaited request.
// Nothing but the protocol is written to stdout: console output of extensions goes to stderr.

import { AsyncLocalStorage } from "node:async_hooks";
import * as fs from "node:fs";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const PROTOCOL = 1;
const packageDir = process.argv[2];
const timings = process.env.PI_RPC_NODE_HOST_TIMINGS === "1";
const started = performance.now();

// ---------------------------------------------------------------------------------- output
const rawWrite = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, encoding, cb) => process.stderr.write(chunk, encoding, cb);
for (const name of ["log", "info", "debug"]) console[name] = console.error.bind(console);

function send(msg) {
    let line;
    try {
        line = JSON.stringify(msg);
    } catch (err) {
        // A value JSON cannot carry (a cycle, a BigInt): answer with the reason instead.
        if (msg.type === "result" && msg.id !== undefined) {
            line = JSON.stringify({
                type: "result",
                id: msg.id,
                ok: false,
                error: { message: `pi-ext-host: cannot encode the result: ${errorText(err)}` },
            });
        } else {
            process.stderr.write(`pi-ext-host: cannot encode a ${msg.type} message: ${errorText(err)}\n`);
            return;
        }
    }
    rawWrite(line + "\n");
}

function errorText(err) {
    return err instanceof Error ? err.message : String(err);
}

// ---------------------------------------------------------------------------- pi's modules
let pi;
async function loadPi() {
    if (pi) return pi;
    const url = (rel) => pathToFileURL(path.join(packageDir, rel)).href;
    // The individual modules cost a quarter of `dist/index.js` to import; the loader is not in
    // the package's export map, so everything is imported by file URL.
    const [loader, runner, bus, sessions, theme] = await Promise.all([
        import(url("dist/core/extensions/loader.js")),
        import(url("dist/core/extensions/runner.js")),
        import(url("dist/core/event-bus.js")),
        import(url("dist/core/session-manager.js")),
        import(url("dist/modes/interactive/theme/theme.js")),
    ]);
    pi = {
        loadExtensions: loader.loadExtensions,
        createExtensionRuntime: loader.createExtensionRuntime,
        ExtensionRunner: runner.ExtensionRunner,
        createEventBus: bus.createEventBus,
        SessionManager: sessions.SessionManager,
        theme,
    };
    return pi;
}

// pi's ModelRegistry for ctx.modelRegistry (it reads models.json and the auth store;
// extensions' own LLM calls run inside Node). Built once, during the first initialize, together
// with loading the extensions: importing pi-ai's provider catalog is a large part of the host's
// start-up, and a registry built later would stall the first event instead.
let modelRegistry;
let modelRegistryPromise;
function loadModelRegistry() {
    const url = (rel) => pathToFileURL(path.join(packageDir, rel)).href;
    modelRegistryPromise ??= Promise.all([
        import(url("dist/core/model-runtime.js")),
        import(url("dist/core/model-registry.js")),
    ])
        .then(async ([rt, reg]) => {
            const runtime = await rt.ModelRuntime.create({ refreshOnCreate: true });
            modelRegistry = new reg.ModelRegistry(runtime);
        })
        .catch((err) => process.stderr.write(`pi-ext-host: ctx.modelRegistry is unavailable: ${errorText(err)}\n`));
    return modelRegistryPromise;
}

// ------------------------------------------------------------------------- calls to pi-rpc
let nextCall = 1;
const pendingCalls = new Map();

/** A call with an id: resolves to the result's value, rejects with its error. */
function call(ext, method, params, scope, signal) {
    const id = `x${nextCall++}`;
    return new Promise((resolve, reject) => {
        const onAbort = () => send({ type: "cancel", id });
        pendingCalls.set(id, {
            resolve: (v) => {
                signal?.removeEventListener("abort", onAbort);
                resolve(v);
            },
            reject: (e) => {
                signal?.removeEventListener("abort", onAbort);
                reject(e);
            },
        });
        signal?.addEventListener("abort", onAbort, { once: true });
        send({ type: "call", id, ext, ...(scope ? { scope } : {}), method, params });
    });
}

/** A fire-and-forget call. */
function notify(ext, method, params, scope) {
    send({ type: "call", ext, ...(scope ? { scope } : {}), method, params });
}

const requestScope = new AsyncLocalStorage();
/** The pending request of pi-rpc the running code belongs to: {id, ext, controller}. */
const current = () => requestScope.getStore();

// ------------------------------------------------------------------------ the state copy
const state = {
    model: undefined,
    thinkingLevel: "off",
    isIdle: true,
    hasPendingMessages: false,
    session: { id: undefined, file: undefined, name: undefined, leafId: undefined },
    activeTools: [],
    allTools: [],
    commands: [],
    systemPrompt: "",
    entriesKey: undefined,
};
let cwd = process.cwd();
let agentDir = "";
let sessionManager;

/** What the system prompt and the tool lists depend on: fetched again only when it changed. */
let stateKey;
/** Counts `register` messages: new commands or tools change pi.getCommands / getAllTools. */
let registrationsSent = 0;

async function refreshState(ext, withEntries) {
    try {
        const s = await call(ext, "ctx.getState", {});
        if (s && typeof s === "object") {
            state.model = s.model ?? undefined;
            state.thinkingLevel = s.thinkingLevel ?? state.thinkingLevel;
            state.isIdle = s.isIdle !== false;
            state.hasPendingMessages = !!s.hasPendingMessages;
            state.session = s.session ?? state.session;
            state.activeTools = Array.isArray(s.activeTools) ? s.activeTools : state.activeTools;
            const key = JSON.stringify([
                s.activeTools,
                s.isIdle,
                s.model?.provider,
                s.model?.id,
                s.session?.id,
                registrationsSent,
            ]);
            if (key !== stateKey) {
                const [prompt, all, commands] = await Promise.all([
                    call(ext, "ctx.getSystemPrompt", {}).catch(() => state.systemPrompt),
                    call(ext, "pi.getAllTools", {}).catch(() => state.allTools),
                    call(ext, "pi.getCommands", {}).catch(() => state.commands),
                ]);
                if (typeof prompt === "string") state.systemPrompt = prompt;
                state.allTools = Array.isArray(all) ? all : state.allTools;
                state.commands = Array.isArray(commands) ? commands : state.commands;
                stateKey = key;
            }
        }
    } catch {
        // Not available yet (start-up): the copy keeps its values.
    }
    if (withEntries) await refreshEntries(ext);
}

async function refreshEntries(ext) {
    const key = `${state.session.id}\u0000${state.session.leafId}`;
    if (sessionManager && key === state.entriesKey) return;
    try {
        const [header, entries] = await Promise.all([
            call(ext, "session.getHeader", {}),
            call(ext, "session.getEntries", {}),
        ]);
        const preloaded = header ? [header, ...(Array.isArray(entries) ? entries : [])] : undefined;
        sessionManager = pi.SessionManager.inMemory(cwd, undefined, preloaded);
        state.entriesKey = key;
    } catch {
        sessionManager ??= pi.SessionManager.inMemory(cwd);
    }
    for (const unit of units.values()) unit.runner.sessionManager = sessionManager;
}

function readSettings() {
    try {
        return JSON.parse(fs.readFileSync(path.join(agentDir, "settings.json"), "utf8"));
    } catch {
        return {};
    }
}

// ------------------------------------------------------------------------------ the units
/** ext path -> {ext, extension, runner, sent: registrations already told to pi-rpc} */
let units = new Map();
let generation = 0;

/** The unit the running code belongs to (the pending request's), else the first. */
function activeExt() {
    return current()?.ext ?? units.keys().next().value;
}

function uiContext() {
    const scope = () => current()?.id;
    const ext = () => activeExt();
    const dialog = async (method, params, fallback, signal) => {
        if (signal?.aborted) return fallback;
        try {
            const v = await call(ext(), method, params, scope(), signal);
            return v === null ? fallback : v;
        } catch {
            return fallback;
        }
    };
    const fire = (method, params) => notify(ext(), method, params, scope());
    const ui = {
        select: (title, options, opts) =>
            dialog("ui.select", { title, options, timeout: opts?.timeout }, undefined, opts?.signal),
        confirm: async (title, message, opts) =>
            (await dialog("ui.confirm", { title, message, timeout: opts?.timeout }, false, opts?.signal)) === true,
        input: (title, placeholder, opts) =>
            dialog("ui.input", { title, placeholder, timeout: opts?.timeout }, undefined, opts?.signal),
        editor: (title, prefill) => dialog("ui.editor", { title, prefill }, undefined, undefined),
        notify: (message, type) => fire("ui.notify", { message, type }),
        onTerminalInput: () => () => {},
        setStatus: (key, text) => fire("ui.setStatus", { key, text }),
        setWorkingMessage: () => {},
        setWorkingVisible: () => {},
        setWorkingIndicator: () => {},
        setHiddenThinkingLabel: () => {},
        setWidget: (key, content, options) => {
            // Only string arrays travel (as in pi's RPC mode); component factories are TUI-only.
            if (content === undefined || Array.isArray(content)) {
                fire("ui.setWidget", { key, content, placement: options?.placement });
            }
        },
        setFooter: () => {},
        setHeader: () => {},
        setTitle: (title) => fire("ui.setTitle", { title }),
        custom: async () => undefined,
        pasteToEditor: (text) => fire("ui.setEditorText", { text }),
        setEditorText: (text) => fire("ui.setEditorText", { text }),
        getEditorText: () => "",
        addAutocompleteProvider: () => {},
        setEditorComponent: () => {},
        getEditorComponent: () => undefined,
        get theme() {
            // pi's global theme, initialised as pi's RPC mode does (a live binding).
            return pi.theme.theme;
        },
        getAllThemes: () => [],
        getTheme: () => undefined,
        setTheme: () => ({ success: false, error: "Theme switching not supported in RPC mode" }),
        getToolsExpanded: () => false,
        setToolsExpanded: () => {},
    };
    return ui;
}

function bindRunner(runner, mode, hasUI) {
    const ext = () => activeExt();
    const scope = () => current()?.id;
    const fire = (method, params) => notify(ext(), method, params, scope());
    runner.bindCore(
        {
            sendMessage: (message, options) => fire("pi.sendMessage", { message, options }),
            sendUserMessage: (content, options) => fire("pi.sendUserMessage", { content, options }),
            appendEntry: (customType, data) => fire("pi.appendEntry", { customType, data }),
            setSessionName: (name) => {
                state.session = { ...state.session, name };
                fire("pi.setSessionName", { name });
            },
            getSessionName: () => state.session?.name ?? undefined,
            setLabel: (entryId, label) => fire("pi.setLabel", { entryId, label }),
            getActiveTools: () => [...state.activeTools],
            getAllTools: () => [...state.allTools],
            getSettings: () => readSettings(),
            setActiveTools: (toolNames) => {
                state.activeTools = [...toolNames];
                fire("pi.setActiveTools", { toolNames });
            },
            refreshTools: () => sendRegistrations(),
            getCommands: () => [...state.commands],
            setModel: async (model) => {
                const ok = await call(ext(), "pi.setModel", { provider: model?.provider, modelId: model?.id }, scope());
                if (ok) state.model = model;
                return ok === true;
            },
            getThinkingLevel: () => state.thinkingLevel,
            setThinkingLevel: (level) => {
                state.thinkingLevel = level;
                fire("pi.setThinkingLevel", { level });
            },
        },
        {
            getModel: () => state.model,
            getScopedModels: () => [],
            isIdle: () => state.isIdle,
            isProjectTrusted: () => true,
            getSignal: () => current()?.controller.signal,
            abort: () => fire("ctx.abort", {}),
            hasPendingMessages: () => state.hasPendingMessages,
            shutdown: () => fire("ctx.shutdown", {}),
            getContextUsage: () => undefined,
            compact: (options) => {
                call(ext(), "ctx.compact", { customInstructions: options?.customInstructions }, scope()).then(
                    (result) => options?.onComplete?.(result),
                    (err) => options?.onError?.(err instanceof Error ? err : new Error(errorText(err))),
                );
            },
            getSystemPrompt: () => state.systemPrompt,
        },
    );
    runner.bindCommandContext({
        waitForIdle: () => call(ext(), "ctx.waitForIdle", {}, scope()),
        newSession: (options) => call(ext(), "ctx.newSession", { parentSession: options?.parentSession }, scope()),
        fork: (entryId) => call(ext(), "ctx.fork", { entryId }, scope()),
        navigateTree: (targetId, options) =>
            call(ext(), "ctx.navigateTree", { targetId, ...stripFunctions(options) }, scope()),
        switchSession: (sessionPath) => call(ext(), "ctx.switchSession", { sessionPath }, scope()),
        reload: () => call(ext(), "ctx.reload", {}, scope()),
    });
    if (hasUI) runner.setUIContext(uiContext(), mode);
    runner.onError((err) => {
        send({ type: "error", ext: err.extensionPath, event: err.event, error: err.error });
    });
}

function stripFunctions(value) {
    if (!value || typeof value !== "object") return value;
    return JSON.parse(JSON.stringify(value));
}

/** What a unit registered, as protocol 1 carries it. */
function registrations(extension) {
    const subscriptions = [...extension.handlers.keys()]
        .filter((event) => (extension.handlers.get(event) ?? []).length > 0)
        .map((event) => (event === "message_update" ? { event, await: false } : { event }));
    const commands = [...extension.commands.values()].map((c) => ({ name: c.name, description: c.description }));
    const tools = [...extension.tools.values()].map(({ definition: d }) => {
        const tool = {
            name: d.name,
            label: d.label,
            description: d.description,
            parameters: stripFunctions(d.parameters),
            promptSnippet: d.promptSnippet,
            promptGuidelines: d.promptGuidelines,
            executionMode: d.executionMode,
            defaultActive: d.defaultActive,
            exposure: d.exposure,
        };
        return stripFunctions(tool);
    });
    const flags = [...extension.flags.values()].map((f) => ({
        name: f.name,
        type: f.type,
        default: f.default,
        description: f.description,
    }));
    return { subscriptions, commands, tools, flags };
}

/** Sends `register` for what units registered since pi-rpc last heard (pi allows `on` and
 * `registerTool` at any time). */
const definitionIds = new WeakMap();
let nextDefinitionId = 1;
/** A cheap fingerprint of what a unit registered: event names, command and tool objects. */
function signature(extension) {
    const id = (o) => {
        if (!definitionIds.has(o)) definitionIds.set(o, nextDefinitionId++);
        return definitionIds.get(o);
    };
    const events = [...extension.handlers.entries()].filter(([, h]) => h.length > 0).map(([e]) => e);
    const commands = [...extension.commands.values()].map(id);
    const tools = [...extension.tools.values()].map((t) => id(t.definition));
    return `${events.join(",")}|${commands.join(",")}|${tools.join(",")}`;
}

function sendRegistrations() {
    for (const unit of units.values()) {
        const sig = signature(unit.extension);
        if (sig === unit.signature) continue;
        unit.signature = sig;
        const now = registrations(unit.extension);
        const sent = unit.sent;
        const fresh = (list, prev) => list.filter((x) => !prev.some((p) => JSON.stringify(p) === JSON.stringify(x)));
        const subscriptions = fresh(now.subscriptions, sent.subscriptions);
        const commands = fresh(now.commands, sent.commands);
        const tools = fresh(now.tools, sent.tools);
        if (subscriptions.length || commands.length || tools.length) {
            send({ type: "register", ext: unit.ext, subscriptions, commands, tools });
            registrationsSent++;
            unit.sent = now;
        }
    }
}

// ----------------------------------------------------------------------------- requests
async function initialize(msg) {
    cwd = msg.cwd || cwd;
    agentDir = msg.agentDir || agentDir;
    if (agentDir && !process.env.PI_CODING_AGENT_DIR) process.env.PI_CODING_AGENT_DIR = agentDir;
    await loadPi();
    if (timings && generation === 0) {
        process.stderr.write(`pi modules ${(performance.now() - started).toFixed(1)} ms after start\n`);
    }
    const settings = readSettings();
    if (generation === 0) {
        try {
            pi.theme.initTheme(typeof settings.theme === "string" ? settings.theme : undefined, false);
        } catch (err) {
            process.stderr.write(`pi-ext-host: theme: ${errorText(err)}\n`);
        }
    }
    generation++;
    // A fresh runtime: the old extensions' captured contexts turn stale, as in pi.
    for (const unit of units.values()) {
        try {
            unit.runner.invalidate();
        } catch {
            // already stale
        }
    }
    units = new Map();
    sessionManager = pi.SessionManager.inMemory(cwd);
    state.entriesKey = undefined;
    stateKey = undefined;
    const paths = (msg.units ?? []).map((u) => u.ext);
    const eventBus = pi.createEventBus();
    const runtime = pi.createExtensionRuntime();
    // pi's loader, one path at a time (as its own loop does, with the shared runtime and event
    // bus), so each unit's load can be timed (PI_RPC_NODE_HOST_TIMINGS=1 prints it to stderr).
    const loadAll = async () => {
        const errors = new Map();
        const byPath = new Map();
        for (const p of paths) {
            const t0 = performance.now();
            const loaded = await pi.loadExtensions([p], cwd, eventBus, runtime);
            for (const e of loaded.errors) errors.set(e.path, e.error);
            for (const e of loaded.extensions) byPath.set(e.path, e);
            if (timings) process.stderr.write(`load ${(performance.now() - t0).toFixed(1)} ms ${p}\n`);
        }
        return { errors, byPath };
    };
    const t0 = performance.now();
    const [{ errors, byPath }] = await Promise.all([loadAll(), loadModelRegistry()]);
    if (timings) process.stderr.write(`initialize ${(performance.now() - t0).toFixed(1)} ms, ${paths.length} units\n`);
    const answers = [];
    for (const p of paths) {
        const extension = byPath.get(p);
        if (!extension) {
            answers.push({ ext: p, error: errors.get(p) ?? "Failed to load extension: not loaded" });
            continue;
        }
        const runner = new pi.ExtensionRunner([extension], runtime, cwd, sessionManager, modelRegistry);
        bindRunner(runner, msg.mode ?? "rpc", msg.hasUI !== false);
        const regs = registrations(extension);
        units.set(p, { ext: p, extension, runner, sent: regs, signature: signature(extension) });
        answers.push({ ext: p, ...regs });
    }
    return { protocol: PROTOCOL, units: answers };
}

function handlers(extension, type) {
    return [...(extension.handlers.get(type) ?? [])];
}

async function dispatchEvent(unit, ev) {
    const runner = unit.runner;
    const ext = unit.extension;
    switch (ev.type) {
        case "tool_call": {
            const before = JSON.stringify(ev.input);
            const value = (await runner.emitToolCall(ev)) ?? null;
            const after = JSON.stringify(ev.input);
            return after !== before ? { value, mutated: { input: ev.input } } : { value };
        }
        case "tool_result":
            return { value: (await runner.emitToolResult(ev)) ?? null };
        case "message_end": {
            const message = await runner.emitMessageEnd(ev);
            return { value: message ? { message } : null };
        }
        case "input": {
            const r = await runner.emitInput(ev.text, ev.images, ev.source, ev.streamingBehavior);
            return { value: r?.action === "continue" ? null : r };
        }
        case "context": {
            const before = JSON.stringify(ev.messages);
            const messages = await runner.emitContext(ev.messages);
            return { value: JSON.stringify(messages) !== before ? { messages } : null };
        }
        case "resources_discover": {
            const r = await runner.emitResourcesDiscover(ev.cwd, ev.reason);
            const paths = (list) => list.map((x) => x.path);
            const any = r.skillPaths.length || r.promptPaths.length || r.themePaths.length;
            return {
                value: any
                    ? { skillPaths: paths(r.skillPaths), promptPaths: paths(r.promptPaths), themePaths: paths(r.themePaths) }
                    : null,
            };
        }
        case "before_agent_start": {
            // The runner's own emitBeforeAgentStart renders the prompt from pi's options; pi-rpc
            // sends the prompt it rendered, so the handlers run here with pi's accumulation.
            let systemPrompt = ev.systemPrompt;
            const results = [];
            const ctx = Object.defineProperties({}, Object.getOwnPropertyDescriptors(runner.createContext()));
            ctx.getSystemPrompt = () => systemPrompt;
            for (const handler of handlers(ext, "before_agent_start")) {
                try {
                    const r = await handler({ ...ev, systemPrompt }, ctx);
                    if (r?.message) results.push({ message: r.message });
                    if (r?.systemPrompt !== undefined) {
                        systemPrompt = r.systemPrompt;
                        results.push({ systemPrompt });
                    }
                } catch (err) {
                    runner.emitError({ extensionPath: ext.path, event: ev.type, error: errorText(err) });
                }
            }
            return { value: results.length ? results : null };
        }
        case "user_bash": {
            // The first handler that answers; a throw fails the `bash` command (pi-rpc reports it).
            const ctx = runner.createContext();
            for (const handler of handlers(ext, "user_bash")) {
                const r = await handler(ev, ctx);
                if (r !== undefined) return { value: r };
            }
            return { value: null };
        }
        default:
            return { value: (await runner.emit(ev)) ?? null };
    }
}

/** Events whose handlers may read ctx.sessionManager in a meaningful state. */
const ENTRY_EVENTS = new Set([
    "session_start",
    "session_before_switch",
    "session_before_fork",
    "session_before_compact",
    "session_compact",
    "session_shutdown",
    "before_agent_start",
    "agent_end",
    "turn_end",
    "input",
]);

async function handleRequest(msg) {
    switch (msg.type) {
        case "initialize":
            return { value: await initialize(msg) };
        case "event": {
            const unit = unitOf(msg);
            await refreshState(unit.ext, ENTRY_EVENTS.has(msg.event?.type));
            return dispatchEvent(unit, msg.event);
        }
        case "command": {
            const unit = unitOf(msg);
            const command = unit.extension.commands.get(msg.name);
            if (!command) throw new Error(`Unknown command: ${msg.name}`);
            await refreshState(unit.ext, true);
            await command.handler(msg.args ?? "", unit.runner.createCommandContext());
            return { value: null };
        }
        case "tool": {
            const unit = unitOf(msg);
            const tool = unit.extension.tools.get(msg.name);
            if (!tool) throw new Error(`Tool ${msg.name} not found`);
            await refreshState(unit.ext, true);
            const signal = current()?.controller.signal;
            const ctx = unit.runner.createToolContext
                ? unit.runner.createToolContext(msg.toolCallId, signal)
                : unit.runner.createContext();
            const onUpdate = (partialResult) => send({ type: "tool_update", id: msg.id, partialResult });
            const result = await tool.definition.execute(msg.toolCallId, msg.params ?? {}, signal, onUpdate, ctx);
            return { value: result ?? null };
        }
        default:
            throw new Error(`Unknown request type: ${msg.type}`);
    }
}

function unitOf(msg) {
    const unit = units.get(msg.ext) ?? (units.size === 1 && msg.ext === undefined ? units.values().next().value : undefined);
    if (!unit) throw new Error(`Unknown extension unit: ${msg.ext}`);
    return unit;
}

const activeRequests = new Map();

function onRequest(msg) {
    const controller = new AbortController();
    const store = { id: msg.id, ext: msg.ext, controller };
    activeRequests.set(msg.id, store);
    requestScope
        .run(store, () => handleRequest(msg))
        .then(
            ({ value, mutated }) => {
                sendRegistrations();
                send({ type: "result", id: msg.id, ok: true, value: value ?? null, ...(mutated ? { mutated } : {}) });
            },
            (err) => {
                const error = { message: errorText(err) };
                if (err instanceof Error && err.stack) error.stack = err.stack;
                send({ type: "result", id: msg.id, ok: false, error });
            },
        )
        .finally(() => activeRequests.delete(msg.id));
}

function onNotification(msg) {
    switch (msg.type) {
        case "cancel": {
            activeRequests.get(msg.id)?.controller.abort();
            return;
        }
        case "flags": {
            const unit = units.get(msg.ext);
            for (const [name, value] of Object.entries(msg.values ?? {})) unit?.runner.setFlagValue(name, value);
            return;
        }
        case "event": {
            // Observation only (await:false): no state refresh, no result.
            const unit = units.get(msg.ext);
            if (!unit || !msg.event) return;
            const store = { id: undefined, ext: msg.ext, controller: new AbortController() };
            requestScope.run(store, () => dispatchEvent(unit, msg.event)).catch((err) => {
                process.stderr.write(`pi-ext-host: ${msg.event.type}: ${errorText(err)}\n`);
            });
            return;
        }
        default:
            return; // unknown types are ignored (§B4)
    }
}

function onResult(msg) {
    const pending = pendingCalls.get(msg.id);
    if (!pending) return;
    pendingCalls.delete(msg.id);
    if (msg.ok) pending.resolve(msg.value);
    else pending.reject(new Error(msg.error?.message ?? "Unknown error"));
}

// ------------------------------------------------------------------------------- main loop
if (!packageDir) {
    process.stderr.write("usage: node pi-ext-host.mjs <piPackageDir>\n");
    process.exit(2);
}
process.on("unhandledRejection", (reason) => {
    // pi logs these instead of dying; a host that died would fail every gate closed.
    process.stderr.write(`pi-ext-host: unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}\n`);
});
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
    if (!line.trim()) return;
    let msg;
    try {
        msg = JSON.parse(line);
    } catch (err) {
        process.stderr.write(`pi-ext-host: invalid JSON from pi-rpc: ${errorText(err)}\n`);
        return;
    }
    if (!msg || typeof msg !== "object" || typeof msg.type !== "string") return;
    if (msg.type === "result") return onResult(msg);
    if (typeof msg.id === "string") return onRequest(msg);
    return onNotification(msg);
});
lines.on("close", () => {
    // pi-rpc closed our input: stop (pending work is abandoned, as at pi's exit).
    process.exit(0);
});
