//! `tool_search` ranking (`mcp.md` §6.3; pi's `extensions/tool-search/tool.js`, `Bm25Ranker`):
//! Okapi BM25 over a tool's description and schema text, with its name and its server's text as
//! separate fields.
//!
//! * A tool matching more of the query's terms, in any field, ranks above one matching fewer,
//!   whatever their scores.
//! * A query term in the name counts 3 times its IDF (more than any number of mentions in the
//!   description can), in the server text (namespace, server description, instructions) 0.5 times.
//! * A tool whose whole local name (after the last `__`) is in the query gets a bonus worth one
//!   more match of every query term.
//! * A query that is exactly a tool's name, or its suffix after a `__`, ranks that tool first.
//! * Only the description is length-normalized. Ties keep the documents' order.
//!
//! Words are found as pi finds them in Latin and other space-separated scripts. pi segments
//! text that is not plain ASCII with ICU's word segmenter (`Intl.Segmenter`), whose dictionaries
//! for scripts written without spaces are not reproduced here: Han and Hiragana characters
//! become one term each and Katakana runs one term (an approximation that lets such queries match
//! at all; scores differ from pi's), and Thai, Lao, Khmer or Myanmar text splits at spaces only.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::js::string::is_js_whitespace;
use crate::tools::path::nfc;

/// BM25 term-frequency saturation.
const K1: f64 = 1.2;
/// BM25 length normalization.
const B: f64 = 0.75;
/// A query term in the name counts this many times its IDF.
const NAME_WEIGHT: f64 = 3.0;
/// A query term in the server text counts this many times its IDF.
const NAMESPACE_WEIGHT: f64 = 0.5;

const STOP_WORDS: [&str; 21] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of", "on",
    "or", "that", "the", "this", "to", "with",
];

/// What a tool is found by.
pub(crate) struct SearchDoc {
    /// The tool name (`mcp__srv__do_thing`).
    pub name: String,
    /// The tool description.
    pub description: String,
    /// The parameters' descriptions and property names ([`schema_text`]).
    pub schema_text: String,
    /// The server's namespace, description and instructions ([`server_text`]); empty for tools
    /// of no server.
    pub server_text: String,
}

/// Indices into `docs` of the best `limit` matches for `query`, best first. Empty when nothing
/// matches (or the query has no terms).
pub(crate) fn rank(query: &str, docs: &[SearchDoc], limit: usize) -> Vec<usize> {
    if limit == 0 {
        return Vec::new();
    }
    ranked(query, docs)
        .into_iter()
        .take(limit)
        .map(|m| m.index)
        .collect()
}

/// A matching document.
struct Match {
    index: usize,
    score: f64,
    covered: usize,
    exact: bool,
}

/// Every matching document, best first.
fn ranked(query: &str, docs: &[SearchDoc]) -> Vec<Match> {
    let mut query_terms: Vec<String> = Vec::new();
    for term in tokenize(query) {
        if !query_terms.contains(&term) {
            query_terms.push(term);
        }
    }
    if query_terms.is_empty() || docs.is_empty() {
        return Vec::new();
    }
    let query_set: HashSet<&str> = query_terms.iter().map(String::as_str).collect();
    let indexed: Vec<Indexed> = docs.iter().map(Indexed::new).collect();
    let n = indexed.len() as f64;
    let total_length: usize = indexed.iter().map(|d| d.text_length).sum();
    // `sum / n || 1`: an empty description and schema everywhere counts as length 1.
    let average_length = Some(total_length as f64 / n)
        .filter(|a| *a != 0.0)
        .unwrap_or(1.0);
    let idf: Vec<f64> = query_terms
        .iter()
        .map(|term| {
            let frequency = indexed.iter().filter(|d| d.has(term)).count() as f64;
            // libm's, not `f64::ln`: that would load libm.so at every start (Cargo.toml).
            libm::log(1.0 + (n - frequency + 0.5) / (frequency + 0.5))
        })
        .collect();
    let full_name_bonus = idf.iter().fold(0.0, |sum, v| sum + v);
    let exact_query = normalize_name(query);

    let mut matches = Vec::new();
    for (index, (doc, source)) in indexed.iter().zip(docs).enumerate() {
        let norm = K1 * (1.0 - B + (B * doc.text_length as f64) / average_length);
        let mut score = 0.0;
        let mut covered = 0;
        for (term, idf) in query_terms.iter().zip(&idf) {
            let count = doc.text_counts.get(term).copied().unwrap_or(0) as f64;
            let name = if doc.name_terms.contains(term) {
                NAME_WEIGHT
            } else {
                0.0
            };
            let namespace = if doc.namespace_terms.contains(term) {
                NAMESPACE_WEIGHT
            } else {
                0.0
            };
            let weight = name + namespace + (count * (K1 + 1.0)) / (count + norm);
            if weight > 0.0 {
                covered += 1;
            }
            score += idf * weight;
        }
        if score == 0.0 {
            continue;
        }
        let local = &doc.local_name_terms;
        if !local.is_empty() && local.iter().all(|t| query_set.contains(t.as_str())) {
            score += full_name_bonus;
        }
        matches.push(Match {
            index,
            score,
            covered,
            exact: is_exact_name_query(&exact_query, &source.name),
        });
    }
    // Stable: ties keep the documents' order.
    matches.sort_by(|a, b| {
        b.exact.cmp(&a.exact).then(b.covered.cmp(&a.covered)).then(
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(std::cmp::Ordering::Equal),
        )
    });
    matches
}

/// The search text of a parameters schema: descriptions and property names, recursively
/// (`properties`, `items`, `anyOf`/`oneOf`/`allOf`), following local `$ref`s into the schema
/// itself; each subschema reached through a reference is read once, the root never again.
pub(crate) fn schema_text(parameters: &Value) -> String {
    let mut parts = Vec::new();
    let mut seen: HashSet<*const Value> = HashSet::new();
    seen.insert(parameters as *const Value);
    collect_schema_text(parameters, parameters, &mut parts, &mut seen);
    parts
        .into_iter()
        .filter(|p| !p.trim_matches(is_js_whitespace).is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The server text of a tool: its server's namespace (`mcp__srv`), description and
/// instructions, joined with spaces.
pub(crate) fn server_text(
    namespace: &str,
    description: Option<&str>,
    instructions: Option<&str>,
) -> String {
    [
        namespace,
        description.unwrap_or(""),
        instructions.unwrap_or(""),
    ]
    .join(" ")
}

/// One document's terms.
struct Indexed {
    name_terms: HashSet<String>,
    /// Distinct terms of the name after its last `__`.
    local_name_terms: Vec<String>,
    text_counts: HashMap<String, usize>,
    text_length: usize,
    namespace_terms: HashSet<String>,
}

impl Indexed {
    fn new(doc: &SearchDoc) -> Self {
        let mut text_counts: HashMap<String, usize> = HashMap::new();
        for term in tokenize(&format!("{} {}", doc.description, doc.schema_text)) {
            *text_counts.entry(term).or_default() += 1;
        }
        let local = doc.name.rsplit("__").next().unwrap_or("");
        let mut local_name_terms: Vec<String> = Vec::new();
        for term in tokenize(local) {
            if !local_name_terms.contains(&term) {
                local_name_terms.push(term);
            }
        }
        Indexed {
            name_terms: tokenize(&doc.name).into_iter().collect(),
            local_name_terms,
            text_length: text_counts.values().sum(),
            text_counts,
            namespace_terms: tokenize(&doc.server_text).into_iter().collect(),
        }
    }

    fn has(&self, term: &str) -> bool {
        self.name_terms.contains(term)
            || self.text_counts.contains_key(term)
            || self.namespace_terms.contains(term)
    }
}

fn regex(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// Words of `text`: identifier boundaries split (`getHTTPServer` → `get HTTP Server`),
/// lowercased, runs of characters other than letters, marks and digits as separators, English
/// stop words dropped and ASCII words in a naive singular form.
fn tokenize(text: &str) -> Vec<String> {
    static CAMEL: OnceLock<Option<Regex>> = OnceLock::new();
    static ACRONYM: OnceLock<Option<Regex>> = OnceLock::new();
    static SEPARATORS: OnceLock<Option<Regex>> = OnceLock::new();
    let mut s = nfc(text);
    if let Some(re) = regex(&CAMEL, "([a-z0-9])([A-Z])") {
        s = re.replace_all(&s, "${1} ${2}").into_owned();
    }
    if let Some(re) = regex(&ACRONYM, "([A-Z]+)([A-Z][a-z])") {
        s = re.replace_all(&s, "${1} ${2}").into_owned();
    }
    s = s.to_lowercase();
    if let Some(re) = regex(&SEPARATORS, r"[^\p{L}\p{M}\p{N}]+") {
        s = re.replace_all(&s, " ").into_owned();
    }
    let words: Vec<String> = if s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b' ')
    {
        s.split(' ').map(str::to_string).collect()
    } else {
        segment(&s)
    };
    words
        .into_iter()
        .filter(|w| !w.is_empty() && !STOP_WORDS.contains(&w.as_str()))
        .map(|w| {
            if w.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            {
                stem(&w)
            } else {
                w
            }
        })
        .collect()
}

/// Script of a character for word segmentation without spaces (module doc).
#[derive(PartialEq, Clone, Copy)]
enum Script {
    /// One word per character (Han, Hiragana).
    Single,
    Katakana,
    Other,
}

fn script(c: char) -> Script {
    match u32::from(c) {
        0x3040..=0x309f
        | 0x3400..=0x4dbf
        | 0x4e00..=0x9fff
        | 0xf900..=0xfaff
        | 0x20000..=0x3ffff => Script::Single,
        0x30a0..=0x30ff | 0x31f0..=0x31ff | 0xff66..=0xff9f => Script::Katakana,
        _ => Script::Other,
    }
}

/// Words of lowercased text with separators as spaces, when it is not plain ASCII.
fn segment(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    for piece in s.split(' ') {
        let mut word = String::new();
        let mut last = Script::Other;
        for c in piece.chars() {
            let sc = script(c);
            // Combining marks stay with what they follow.
            let mark = !word.is_empty() && is_mark(c);
            if !mark && (sc == Script::Single || sc != last) && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            word.push(c);
            if !mark {
                last = sc;
            }
        }
        words.push(word);
    }
    words
}

fn is_mark(c: char) -> bool {
    static MARK: OnceLock<Option<Regex>> = OnceLock::new();
    let mut buf = [0u8; 4];
    regex(&MARK, r"^\p{M}$").is_some_and(|re| re.is_match(c.encode_utf8(&mut buf)))
}

/// Naive singular form, so `issues` matches `issue` and `searches` matches `search`.
fn stem(term: &str) -> String {
    let n = term.len();
    if n > 4 && term.ends_with("ies") {
        return format!("{}y", &term[..n - 3]);
    }
    if n > 4
        && ["ches", "shes", "sses", "xes", "zes"]
            .iter()
            .any(|e| term.ends_with(e))
    {
        return term[..n - 2].to_string();
    }
    if n > 3 && term.ends_with('s') && !term.ends_with("ss") {
        return term[..n - 1].to_string();
    }
    term.to_string()
}

/// Lowercase with characters invalid in script identifiers as `_` (one per UTF-16 code unit, as
/// JavaScript's regex replaces them), so `dev-radius` matches `dev_radius`.
fn normalize_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim_matches(is_js_whitespace).to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$' {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
        }
    }
    out
}

/// Whether the whole (normalized) query is the tool's name: its full name or a suffix after a
/// `__`, so `thread_read` and `app__thread_read` both name `mcp__app__thread_read`.
fn is_exact_name_query(query: &str, name: &str) -> bool {
    let normalized = normalize_name(name);
    normalized == query || normalized.ends_with(&format!("__{query}"))
}

fn collect_schema_text<'a>(
    schema: &'a Value,
    root: &'a Value,
    parts: &mut Vec<&'a str>,
    seen: &mut HashSet<*const Value>,
) {
    let Some(object) = schema.as_object() else {
        return;
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        if let Some(target) = resolve_ref(reference, root).filter(|t| t.is_object()) {
            if seen.insert(target as *const Value) {
                collect_schema_text(target, root, parts, seen);
            }
        }
    }
    if let Some(description) = object.get("description").and_then(Value::as_str) {
        parts.push(description);
    }
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            parts.push(name);
            collect_schema_text(property, root, parts, seen);
        }
    }
    if let Some(items) = object.get("items") {
        collect_schema_text(items, root, parts, seen);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(variants) = object.get(key).and_then(Value::as_array) {
            for variant in variants {
                collect_schema_text(variant, root, parts, seen);
            }
        }
    }
}

/// The subschema a local `$ref` (`#`, `#/$defs/Item`) names in `root` (pi-codemode's
/// `resolveSchemaRef`): segments URI-decoded, then JSON-Pointer unescaped; only objects are
/// walked into.
fn resolve_ref<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    if reference != "#" && !reference.starts_with("#/") {
        return None;
    }
    let mut current = root;
    for segment in reference.get(2..).unwrap_or("").split('/') {
        if segment.is_empty() {
            continue;
        }
        let key = decode_uri_component(segment)?
            .replace("~1", "/")
            .replace("~0", "~");
        current = current.as_object()?.get(&key)?;
    }
    (current.is_object() || current.is_boolean()).then_some(current)
}

/// `decodeURIComponent`: `%XX` escapes decoded as UTF-8; a malformed escape or invalid UTF-8 is
/// an error (`None`).
fn decode_uri_component(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tools ranked by pi 1.6.0's `Bm25Ranker` for the expectations below (`namespace` as pi's
    /// MCP extension builds it).
    const TOOLS: &str = r##"[
        {"name":"mcp__github__search_issues","description":"Search issues in a GitHub repository.","parameters":{"type":"object","properties":{"query":{"type":"string","description":"Search query"},"repo":{"$ref":"#/$defs/Repo"}},"$defs":{"Repo":{"type":"object","description":"A repository owner/name","properties":{"owner":{"type":"string"},"name":{"type":"string"}}}}},"namespace":{"name":"mcp__github","description":"GitHub API","instructions":"Use for pull requests and issues."}},
        {"name":"mcp__github__create_issue","description":"Create a new issue.","parameters":{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string","description":"Markdown body"}}},"namespace":{"name":"mcp__github","description":"GitHub API","instructions":"Use for pull requests and issues."}},
        {"name":"mcp__github__list_pull_requests","description":"List pull requests of a repository, filtered by state.","parameters":{"type":"object","properties":{"state":{"anyOf":[{"type":"string","description":"open or closed"},{"type":"null"}]},"labels":{"type":"array","items":{"type":"string","description":"label name"}}}},"namespace":{"name":"mcp__github","description":"GitHub API","instructions":"Use for pull requests and issues."}},
        {"name":"mcp__fs__read_file","description":"Read the complete contents of a file from the file system.","parameters":{"type":"object","properties":{"path":{"type":"string"}}},"namespace":{"name":"mcp__fs","description":"Filesystem access"}},
        {"name":"mcp__fs__search_files","description":"Recursively search for files and directories matching a pattern.","parameters":{"type":"object","properties":{"path":{"type":"string"},"pattern":{"type":"string"},"excludePatterns":{"type":"array","items":{"type":"string"}}}},"namespace":{"name":"mcp__fs","description":"Filesystem access"}},
        {"name":"mcp__fs__write_file","description":"Create a new file or overwrite an existing file with new content.","parameters":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}},"namespace":{"name":"mcp__fs","description":"Filesystem access"}},
        {"name":"mcp__peekaboo__app","description":"Launch, quit, focus or list applications.","parameters":{"type":"object","properties":{"action":{"type":"string","enum":["launch","quit"]}}},"namespace":{"name":"mcp__peekaboo","description":"macOS automation: screenshot window and app control"}},
        {"name":"mcp__peekaboo__see","description":"Capture a screenshot of a window and describe its UI elements.","parameters":{"type":"object","properties":{"window":{"type":"string","description":"Window title"}}},"namespace":{"name":"mcp__peekaboo","description":"macOS automation: screenshot window and app control"}},
        {"name":"mcp__dev_radius__thread_read","description":"Read a thread.","parameters":{"type":"object","properties":{"id":{"type":"string"},"node":{"$ref":"#/$defs/Node"}},"$defs":{"Node":{"description":"Tree node","properties":{"child":{"$ref":"#/$defs/Node"},"meta":{"$ref":"#"}}}}},"namespace":{"name":"mcp__dev_radius"}},
        {"name":"mcp__twin__echo","description":"Echo the message back.","parameters":{"type":"object","properties":{"message":{"type":"string"}}}},
        {"name":"mcp__twin2__echo","description":"Echo the message back.","parameters":{"type":"object","properties":{"message":{"type":"string"}}}},
        {"name":"mcp__jp__kensaku","description":"ファイルを検索します。日本語のテキスト","parameters":{"type":"object","properties":{}}}
    ]"##;

    fn docs() -> Vec<SearchDoc> {
        let tools: Vec<Value> = serde_json::from_str(TOOLS).unwrap();
        tools
            .iter()
            .map(|t| {
                let ns = &t["namespace"];
                SearchDoc {
                    name: t["name"].as_str().unwrap().to_string(),
                    description: t["description"].as_str().unwrap().to_string(),
                    schema_text: schema_text(&t["parameters"]),
                    server_text: match ns["name"].as_str() {
                        Some(name) => server_text(
                            name,
                            ns["description"].as_str(),
                            ns["instructions"].as_str(),
                        ),
                        None => String::new(),
                    },
                }
            })
            .collect()
    }

    /// `(query, [(document, score)])` as pi 1.6.0 ranks the first 11 tools (all in Latin script)
    /// with limit 8.
    #[allow(clippy::type_complexity)]
    const EXPECTED: &[(&str, &[(usize, f64)])] = &[
        (
            "search issues",
            &[
                (0, 14.5981536985857),
                (4, 6.1582167463571),
                (1, 5.632703419694297),
                (2, 0.6160718406463161),
            ],
        ),
        (
            "issue",
            &[
                (1, 5.632703419694297),
                (0, 5.278366095576223),
                (2, 0.6160718406463161),
            ],
        ),
        (
            "screenshot window",
            &[(7, 5.386766294924062), (6, 1.5686159179138452)],
        ),
        (
            "peekaboo app",
            &[(6, 14.117543261224608), (7, 6.274463671655381)],
        ),
        (
            "read file",
            &[
                (3, 14.659377993701218),
                (8, 6.302869191295672),
                (5, 5.302264148151103),
                (4, 4.837263070838688),
            ],
        ),
        (
            "thread_read",
            &[(8, 18.306348700657225), (3, 6.3865669797116915)],
        ),
        (
            "dev-radius thread_read",
            &[(8, 37.02132257577574), (3, 6.3865669797116915)],
        ),
        (
            "mcp__fs__write_file",
            &[
                (5, 20.5883388268645),
                (3, 9.93351294977305),
                (4, 9.298724605828687),
                (0, 0.14895865046578566),
                (1, 0.14895865046578566),
                (2, 0.14895865046578566),
                (6, 0.14895865046578566),
                (7, 0.14895865046578566),
            ],
        ),
        ("echo", &[(9, 8.268734160259417), (10, 8.268734160259417)]),
        (
            "echo message",
            &[(9, 12.365119678378374), (10, 12.365119678378374)],
        ),
        (
            "pull request state",
            &[
                (2, 13.26486271215575),
                (0, 1.2321436812926323),
                (1, 1.2321436812926323),
            ],
        ),
        ("nothing-matches-here xyz", &[]),
        ("the of", &[]),
        (
            "GitHub",
            &[
                (0, 3.163870103396651),
                (1, 1.2321436812926323),
                (2, 1.2321436812926323),
            ],
        ),
        (
            "Filesystem",
            &[
                (3, 0.6160718406463161),
                (4, 0.6160718406463161),
                (5, 0.6160718406463161),
            ],
        ),
        (
            "files",
            &[
                (3, 5.47205141478305),
                (5, 5.302264148151103),
                (4, 4.837263070838688),
            ],
        ),
        ("tree node child", &[(8, 7.128823240350805)]),
        ("owner", &[(0, 2.4036491606853154)]),
        ("label", &[(2, 2.547693511113794)]),
        (
            "  Write_File  ",
            &[
                (5, 14.852173996163078),
                (3, 5.47205141478305),
                (4, 4.837263070838688),
            ],
        ),
    ];

    #[test]
    fn rankings_match_pi() {
        let mut docs = docs();
        docs.truncate(11);
        for (query, expected) in EXPECTED {
            let got: Vec<(usize, f64)> = ranked(query, &docs)
                .into_iter()
                .take(8)
                .map(|m| (m.index, m.score))
                .collect();
            assert_eq!(got.len(), expected.len(), "{query}: {got:?}");
            for ((i, score), (j, want)) in got.iter().zip(expected.iter()) {
                assert_eq!(i, j, "{query}: {got:?}");
                assert!((score - want).abs() < 1e-9, "{query}: {got:?}");
            }
            let order: Vec<usize> = expected.iter().map(|(i, _)| *i).collect();
            assert_eq!(rank(query, &docs, 8), order, "{query}");
        }
    }

    #[test]
    fn limits_and_empty_input() {
        let docs = docs();
        assert_eq!(rank("search issues", &docs, 2), [0, 4]);
        assert!(rank("search issues", &docs, 0).is_empty());
        assert!(rank("search", &[], 8).is_empty());
        assert!(rank("", &docs, 8).is_empty());
        // Ties keep the documents' order (the tools matching only `mcp` score alike).
        assert_eq!(
            rank("mcp__fs__write_file", &docs, 20),
            [5, 3, 4, 0, 1, 2, 6, 7, 8, 9, 10, 11]
        );
    }

    #[test]
    fn text_without_spaces_matches_by_character() {
        // pi (ICU word segmentation) ranks only the Japanese tool for these; so does the
        // approximation, with other scores.
        let docs = docs();
        assert_eq!(rank("検索", &docs, 8), [11]);
        assert_eq!(rank("ファイル", &docs, 8), [11]);
        assert_eq!(tokenize("ファイルを検索"), ["ファイル", "を", "検", "索"]);
        assert_eq!(
            tokenize("日本語テキストです"),
            ["日", "本", "語", "テキスト", "で", "す"]
        );
    }

    #[test]
    fn schema_and_server_texts_as_pi_builds_them() {
        let docs = docs();
        // pi's document texts (`createToolSearchDocument`).
        let texts = [
            "Search issues in a GitHub repository. query Search query repo A repository owner/name owner name",
            "List pull requests of a repository, filtered by state. state open or closed labels label name",
            "Recursively search for files and directories matching a pattern. path pattern excludePatterns",
            "Read a thread. id node Tree node child meta",
        ];
        for (doc, text) in [0, 2, 4, 8].iter().map(|&i| &docs[i]).zip(texts) {
            assert_eq!(format!("{} {}", doc.description, doc.schema_text), text);
        }
        assert_eq!(
            docs[0].server_text,
            "mcp__github GitHub API Use for pull requests and issues."
        );
        assert_eq!(docs[3].server_text, "mcp__fs Filesystem access ");
        assert_eq!(
            schema_text(&serde_json::json!({"properties":{"a":{"description":" "}}})),
            "a"
        );
        // References: URI-decoded, JSON-Pointer unescaped, objects only.
        let schema = serde_json::json!({
            "properties": {"p": {"$ref": "#/$defs/a~1b%20c"}, "q": {"$ref": "#/$defs/list/0"}, "r": {"$ref": "#/%E0"}},
            "$defs": {"a/b c": {"description": "found"}, "list": [{"description": "not found"}]}
        });
        assert_eq!(schema_text(&schema), "p found q r");
        assert_eq!(
            decode_uri_component("a%2Fb%C3%A9"),
            Some("a/bé".to_string())
        );
        assert_eq!(decode_uri_component("%+1"), None);
        assert_eq!(decode_uri_component("%C3"), None);
    }

    #[test]
    fn tokens_as_pi_makes_them() {
        // pi 1.6.0's `tokenize`.
        let cases: &[(&str, &[&str])] = &[
            (
                "getHTTPServerURL and parseJSON2Yaml",
                &["get", "http", "server", "url", "parse", "json2", "yaml"],
            ),
            (
                "The issues and searches of boxes, classes, buses, ties, queries",
                &["issue", "search", "box", "class", "buse", "tie", "query"],
            ),
            (
                "Größe ändern: ÉCOLE Straße",
                &["größe", "ändern", "école", "straße"],
            ),
            (
                "dev-radius v2.0_beta __init__",
                &["dev", "radiu", "v2", "0", "beta", "init"],
            ),
            ("e\u{301}cole caf\u{e9}", &["\u{e9}cole", "café"]),
            ("İstanbul ΣΊΣΥΦΟΣ", &["i\u{307}stanbul", "σίσυφος"]),
            ("x1Y2z3 ABCdef ABC", &["x1", "y2z3", "ab", "cdef", "abc"]),
            ("", &[]),
            ("   ", &[]),
            ("a an the of", &[]),
        ];
        for (text, tokens) in cases {
            assert_eq!(tokenize(text), *tokens, "{text}");
        }
        assert_eq!(normalize_name("  Dev-Radius😀 "), "dev_radius__");
        assert!(is_exact_name_query("thread_read", "mcp__app__thread_read"));
        assert!(is_exact_name_query(
            "app__thread_read",
            "mcp__app__thread_read"
        ));
        assert!(!is_exact_name_query("read", "mcp__app__thread_read"));
    }
}
