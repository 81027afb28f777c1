#!/usr/bin/env node
// Generates `catalog.jsonl`, pi-rpc's built-in model catalog, from the model data of pi's
// `@earendil-works/pi-ai` npm package (the facts: ids, names, APIs, base URLs, context
// windows, costs, thinking maps, compat, headers, input limits). The format is pi-rpc's own,
// laid out so that start-up parses only a small index and each provider's models are parsed
// the first time that provider is needed (see `src/llm/registry/catalog.rs`).
//
//   node generate.mjs <pi-ai package dir>           rewrite catalog.jsonl next to this script
//   node generate.mjs <pi-ai package dir> --check   exit 1 when catalog.jsonl is stale
//
// For a new pi version: `npm install @earendil-works/pi-ai@<version>` somewhere, run this
// script on `node_modules/@earendil-works/pi-ai`, then `cargo test` (the registry tests check
// the hand-written provider table in `src/llm/registry/providers.rs` against the generated
// index: a new provider or API needs code, not only data).
//
// Layout (one JSON value per line):
//   line 1  index: {"package", "version", "generatedAt", "providers": [{"id", "name",
//           "baseUrl"?, "apis": [[api, baseUrl], …], "count", "at": [offset, length]}, …]} in
//           pi's registration order; `at` locates the provider's line, as a byte offset from the
//           start of line 2 (so start-up reads the index and that one line, nothing else)
//   line 2+ one line per provider of the index, in the same order:
//           {"tables": {"cost": […], "compat": […], "thinkingLevelMap": […],
//           "inputLimits": […], "headers": […], "promptCache": […], "input": […]},
//           "models": [row, …]}; the tables hold the values this provider's models use.
// A row holds `id`, `name` (absent when equal to `id`), `a` (index into the provider's `apis`,
// absent for 0), `u` (base URL, absent when equal to that API's), `r` (reasoning, absent when
// false), `w` (contextWindow), `m` (maxTokens), indexes into the provider's tables `i` (input),
// `c` (cost), `t` (thinkingLevelMap), `x` (compat), `l` (inputLimits), `h` (headers),
// `p` (promptCache), and `e`: any other field, passed through as is (radius' gateway metadata).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const check = args.includes("--check");
const pkgDir = args.find((a) => !a.startsWith("--"));
if (!pkgDir) {
  console.error("usage: node generate.mjs <path to node_modules/@earendil-works/pi-ai> [--check]");
  process.exit(2);
}
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const manifest = JSON.parse(readFileSync(join(pkgDir, "dist/providers/data/.manifest.json"), "utf8"));
const all = await import(pathToFileURL(resolve(pkgDir, "dist/providers/all.js")).href);

const KNOWN = new Set([
  "id", "name", "api", "provider", "baseUrl", "reasoning", "input", "cost", "contextWindow",
  "maxTokens", "thinkingLevelMap", "compat", "inputLimits", "headers", "promptCache", "type",
]);
const TABLES = ["cost", "compat", "thinkingLevelMap", "inputLimits", "headers", "promptCache", "input"];
function newTables() {
  const tables = Object.fromEntries(TABLES.map((k) => [k, []]));
  const seen = Object.fromEntries(TABLES.map((k) => [k, new Map()]));
  const intern = (table, value) => {
    const key = JSON.stringify(value);
    let i = seen[table].get(key);
    if (i === undefined) {
      i = tables[table].length;
      tables[table].push(value);
      seen[table].set(key, i);
    }
    return i;
  };
  return { tables, intern };
}

const index = [];
const blocks = [];
for (const provider of all.builtinProviders()) {
  const models = all.getBuiltinModels(provider.id);
  const apis = [];
  for (const m of models) {
    if (m.provider !== provider.id) throw new Error(`${provider.id}/${m.id}: provider is ${m.provider}`);
    if (m.type !== "chat") throw new Error(`${provider.id}/${m.id}: type ${m.type}`);
    if (!apis.some(([api]) => api === m.api)) apis.push([m.api, m.baseUrl ?? ""]);
  }
  const entry = { id: provider.id, name: provider.name };
  if (typeof provider.baseUrl === "string") entry.baseUrl = provider.baseUrl;
  entry.apis = apis;
  entry.count = models.length;
  index.push(entry);
  const { tables, intern } = newTables();
  const rows = models.map((m) => {
    const a = apis.findIndex(([api]) => api === m.api);
    const row = { id: m.id };
    if (m.name !== m.id) row.name = m.name;
    if (a !== 0) row.a = a;
    if ((m.baseUrl ?? "") !== apis[a][1]) row.u = m.baseUrl;
    if (m.reasoning) row.r = true;
    row.w = m.contextWindow;
    row.m = m.maxTokens;
    row.i = intern("input", m.input);
    row.c = intern("cost", m.cost);
    if (m.thinkingLevelMap !== undefined) row.t = intern("thinkingLevelMap", m.thinkingLevelMap);
    if (m.compat !== undefined) row.x = intern("compat", m.compat);
    if (m.inputLimits !== undefined) row.l = intern("inputLimits", m.inputLimits);
    if (m.headers !== undefined) row.h = intern("headers", m.headers);
    if (m.promptCache !== undefined) row.p = intern("promptCache", m.promptCache);
    const extra = Object.fromEntries(Object.entries(m).filter(([k]) => !KNOWN.has(k)));
    if (Object.keys(extra).length > 0) row.e = extra;
    return row;
  });
  blocks.push({ tables, models: rows });
}

const lines = blocks.map((b) => JSON.stringify(b));
let offset = 0;
lines.forEach((line, n) => {
  index[n].at = [offset, Buffer.byteLength(line)];
  offset += Buffer.byteLength(line) + 1;
});
const head = { package: pkg.name, version: pkg.version, generatedAt: manifest.generatedAt, providers: index };
const text = [JSON.stringify(head), ...lines].join("\n") + "\n";
const out = join(dirname(fileURLToPath(import.meta.url)), "catalog.jsonl");
if (check) {
  let current = "";
  try { current = readFileSync(out, "utf8"); } catch {}
  if (current !== text) {
    console.error(`${out} is stale: regenerate it with node ${process.argv[1]} ${pkgDir}`);
    process.exit(1);
  }
  console.log(`${out} is up to date (${pkg.name} ${pkg.version})`);
} else {
  writeFileSync(out, text);
  const n = index.reduce((s, p) => s + p.count, 0);
  console.log(`wrote ${out}: ${index.length} providers, ${n} models, ${text.length} bytes`);
}
