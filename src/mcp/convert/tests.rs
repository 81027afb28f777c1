//! Tests of [`super`]: every §7.2 conversion, the §7.3 error text, the §7.4 output limit, and the
//! observed results of pi 1.6.0 (`mcp_results`, `mcp_tool_call`).

use super::*;

use std::os::unix::fs::PermissionsExt;

/// A fresh temp directory for one test, removed when dropped.
struct TempDir(std::path::PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp() -> TempDir {
    let dir = std::env::temp_dir().join(format!("pi-rpc-mcp-conv-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

fn one(block: Value, hint: Option<&str>, dir: &Path) -> Value {
    let out = convert_blocks(&[block], hint, dir);
    assert_eq!(out.len(), 1);
    out.into_iter().next().unwrap()
}

fn text_of(v: &Value) -> &str {
    v["text"].as_str().unwrap()
}

/// The path in `[... saved to <path>]`, checked to be a new 0600 file named as pi names it.
fn saved_file(text: &str, dir: &Path, ext: &str) -> Vec<u8> {
    let path = text
        .rsplit_once(" saved to ")
        .unwrap()
        .1
        .trim_end_matches(']');
    let name = Path::new(path).file_name().unwrap().to_str().unwrap();
    let hex = name
        .strip_prefix("pi-mcp-")
        .unwrap()
        .strip_suffix(ext)
        .unwrap();
    assert_eq!(hex.len(), 16);
    assert!(hex
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(Path::new(path).parent().unwrap(), dir);
    let mode = std::fs::metadata(path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    std::fs::read(path).unwrap()
}

#[test]
fn text_image_audio_and_unsupported_blocks() {
    let d = temp();
    assert_eq!(
        one(
            json!({"type":"text","text":"hi","annotations":{"priority":1}}),
            None,
            &d
        ),
        json!({"type":"text","text":"hi"})
    );
    assert_eq!(
        one(
            json!({"type":"image","data":"AAAA","mimeType":"image/png","annotations":{}}),
            None,
            &d
        ),
        json!({"type":"image","data":"AAAA","mimeType":"image/png"})
    );
    assert_eq!(
        one(
            json!({"type":"audio","data":"AAAA","mimeType":"audio/wav"}),
            None,
            &d
        ),
        json!({"type":"text","text":"[audio audio/wav omitted]"})
    );
    assert_eq!(
        one(json!({"type":"weird","foo":1}), None, &d),
        json!({"type":"text","text":"[unsupported MCP content weird]"})
    );
    assert_eq!(
        text_of(&one(json!({"foo":1}), None, &d)),
        "[unsupported MCP content undefined]"
    );
}

#[test]
fn embedded_resources() {
    let d = temp();
    let res = |r: Value| json!({"type":"resource","resource":r});
    // Text, whatever the type.
    let b =
        res(json!({"uri":"file:///n.txt","mimeType":"application/octet-stream","text":"embedded"}));
    assert_eq!(one(b, None, &d), json!({"type":"text","text":"embedded"}));
    // An image blob is an image block.
    let b = res(json!({"uri":"file:///p.png","mimeType":"image/png","blob":"iVBO"}));
    assert_eq!(
        one(b, None, &d),
        json!({"type":"image","data":"iVBO","mimeType":"image/png"})
    );
    // Text-like blobs are decoded as UTF-8 (`{"k": 1}`, `héllo`).
    for mime in [
        "application/json",
        "text/csv",
        "application/ld+json",
        "application/atom+xml",
        " Text/Plain ; charset=utf-8",
    ] {
        let b = res(json!({"uri":"file:///d","mimeType":mime,"blob":"eyJrIjogMX0="}));
        assert_eq!(text_of(&one(b, None, &d)), "{\"k\": 1}", "{mime}");
    }
    // Every image type is an image, even an XML one.
    let b = res(json!({"uri":"x","mimeType":"image/svg+xml","blob":"PHN2Zy8+"}));
    assert_eq!(
        one(b, None, &d),
        json!({"type":"image","data":"PHN2Zy8+","mimeType":"image/svg+xml"})
    );
    let b = res(json!({"uri":"x","mimeType":"text/plain","blob":"aMOpbGxv/w=="}));
    assert_eq!(text_of(&one(b, None, &d)), "héllo\u{fffd}");
    // Other blobs are saved, with the extension of the URI's path.
    let b = res(
        json!({"uri":"file:///dir/data.tar?x=1#y","mimeType":"application/x-tar","blob":"AAEC"}),
    );
    let t = one(b, None, &d);
    let t = text_of(&t);
    assert!(
        t.starts_with(&format!(
        "[Binary resource file:///dir/data.tar?x=1#y (application/x-tar, 3B) saved to {}/pi-mcp-",
        d.display()
    )),
        "{t}"
    );
    assert_eq!(saved_file(t, &d, ".tar"), [0, 1, 2]);
    let b = res(json!({"uri":"demo://r/blob","blob":"AAEC"}));
    let t = one(b, None, &d);
    let t = text_of(&t);
    assert!(
        t.starts_with("[Binary resource demo://r/blob (unknown type, 3B) saved to "),
        "{t}"
    );
    assert_eq!(saved_file(t, &d, ".bin"), [0, 1, 2]);
    // Saving fails: the reason as Node words it.
    let missing = d.join("missing");
    let b = res(json!({"uri":"file:///a.bin","mimeType":"application/pdf","blob":"AAEC"}));
    let t = one(b, None, &missing);
    let t = text_of(&t);
    let prefix = format!(
        "[Binary resource file:///a.bin (application/pdf, 3B) could not be saved: ENOENT: no such file or directory, open '{}/pi-mcp-",
        missing.display()
    );
    assert!(t.starts_with(&prefix) && t.ends_with(".bin']"), "{t}");
    // Neither text nor blob.
    let b = res(json!({"uri":"u","mimeType":"application/pdf"}));
    assert_eq!(
        text_of(&one(b, None, &d)),
        "[binary resource u (application/pdf) omitted]"
    );
}

#[test]
fn extensions_of_resource_uris() {
    assert_eq!(extension_of("file:///a/b.PNG"), ".PNG");
    assert_eq!(extension_of("https://h/x.tar.gz?q=1"), ".gz");
    assert_eq!(extension_of("demo://resource/x.json#f"), ".json");
    assert_eq!(extension_of("https://host.com"), ".bin");
    assert_eq!(extension_of("data:text/plain,abc.txt"), ".txt");
    assert_eq!(extension_of("x.abcdefghi"), ".bin");
    assert_eq!(extension_of("x.abcdefgh"), ".abcdefgh");
    assert_eq!(extension_of("rel/x.a?b=1"), ".bin");
    assert_eq!(extension_of("noext"), ".bin");
}

#[test]
fn resource_links() {
    let d = temp();
    // Observed (mcp_results, mcp_tool_call).
    let b = json!({"type":"resource_link","uri":"file:///report.csv","name":"report.csv","title":"Report","mimeType":"text/csv","size":2048,"description":"Monthly numbers"});
    assert_eq!(
        text_of(&one(b, None, &d)),
        "[Resource file:///report.csv \"Report\" (text/csv, 2.0KB): Monthly numbers]"
    );
    let b = json!({"name":"Text Resource 2","uri":"demo://resource/dynamic/text/2","description":"Resource 2: plaintext resource","mimeType":"text/plain","type":"resource_link"});
    assert_eq!(
        text_of(&one(b, Some("everything"), &d)),
        "[Resource demo://resource/dynamic/text/2 \"Text Resource 2\" (text/plain): Resource 2: plaintext resource. Read it with read_mcp_resource (server \"everything\")]"
    );
    // Bare: name, no details, no description.
    let b = json!({"type":"resource_link","uri":"u","name":"n","title":null,"mimeType":"","description":""});
    assert_eq!(text_of(&one(b, None, &d)), "[Resource u \"n\"]");
    let b = json!({"type":"resource_link","uri":"u","name":"n","size":10});
    assert_eq!(
        text_of(&one(b, Some("s"), &d)),
        "[Resource u \"n\" (10B). Read it with read_mcp_resource (server \"s\")]"
    );
    let b = json!({"type":"resource_link","uri":"u","size":3_145_728});
    assert_eq!(
        text_of(&one(b, None, &d)),
        "[Resource u \"undefined\" (3.0MB)]"
    );
}

#[test]
fn the_observed_mixed_result() {
    let d = temp();
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==";
    let result = json!({"content":[
        {"type":"resource","resource":{"uri":"file:///notes.txt","mimeType":"text/plain","text":"embedded text"}},
        {"type":"resource","resource":{"uri":"file:///pic.png","mimeType":"image/png","blob":png}},
        {"type":"resource","resource":{"uri":"file:///data.json","mimeType":"application/json","blob":"eyJrIjogMX0="}},
        {"type":"resource_link","uri":"file:///report.csv","name":"report.csv","title":"Report","mimeType":"text/csv","size":2048,"description":"Monthly numbers"},
        {"type":"audio","data":"AAAA","mimeType":"audio/wav"},
        {"type":"weird","foo":1}
    ], "_meta": {"x": 1}});
    let out = call_result(&result, "fake", "mixed", None, &d);
    assert_eq!(
        Value::Array(out.content),
        json!([
            {"type":"text","text":"embedded text"},
            {"type":"image","data":png,"mimeType":"image/png"},
            {"type":"text","text":"{\"k\": 1}"},
            {"type":"text","text":"[Resource file:///report.csv \"Report\" (text/csv, 2.0KB): Monthly numbers]"},
            {"type":"text","text":"[audio audio/wav omitted]"},
            {"type":"text","text":"[unsupported MCP content weird]"}
        ])
    );
    assert_eq!(out.details, json!({"server":"fake","tool":"mixed"}));
    assert_eq!(
        out.structured_content,
        json!({"content": result["content"].clone()})
    );
    assert!(!out.is_error);
}

#[test]
fn structured_content_and_errors() {
    let d = temp();
    // No content: the structured content as indented JSON; `content: []` is appended.
    let r = json!({"structuredContent":{"temperature":21.5,"unit":"C"}});
    let out = call_result(&r, "fake", "structured", None, &d);
    assert_eq!(
        Value::Array(out.content),
        json!([{"type":"text","text":"{\n  \"temperature\": 21.5,\n  \"unit\": \"C\"\n}"}])
    );
    assert_eq!(
        serde_json::to_string(&out.structured_content).unwrap(),
        r#"{"structuredContent":{"temperature":21.5,"unit":"C"},"content":[]}"#
    );
    // With content blocks the structured content is not shown.
    let r = json!({"content":[{"type":"text","text":"t"}],"structuredContent":{"a":1}});
    assert_eq!(call_result(&r, "s", "t", None, &d).content.len(), 1);
    // isError without text: the error text is appended (observed, mcp_results).
    let r = json!({"content":[],"isError":true});
    let out = call_result(&r, "fake", "fail_empty", None, &d);
    assert_eq!(
        Value::Array(out.content),
        json!([{"type":"text","text":"MCP tool fake/fail_empty returned an error"}])
    );
    assert_eq!(out.structured_content, json!({"content":[],"isError":true}));
    assert!(out.is_error);
    let r = json!({"content":[{"type":"image","data":"AA","mimeType":"image/png"}],"isError":1});
    let out = call_result(&r, "s", "raw-name", None, &d);
    assert_eq!(
        out.content[1],
        json!({"type":"text","text":"MCP tool s/raw-name returned an error"})
    );
    assert!(out.is_error);
    // With text, nothing is appended; a false isError is no error.
    let r = json!({"content":[{"type":"text","text":"something went wrong"}],"isError":true});
    assert_eq!(call_result(&r, "fake", "fail", None, &d).content.len(), 1);
    assert!(!call_result(&json!({"content":[],"isError":false}), "s", "t", None, &d).is_error);
    assert!(check_call_result(&json!({"content":[]})).is_ok());
    assert!(check_call_result(&json!({})).is_ok());
    for bad in [json!({"content":null}), json!({"content":{}}), json!([])] {
        assert_eq!(
            check_call_result(&bad).unwrap_err(),
            "Invalid MCP tools/call result"
        );
    }
}

#[test]
fn output_within_the_limit_is_unchanged() {
    let d = temp();
    let content = vec![
        text_block("a".repeat(10_000)),
        text_block("b".repeat(10_479)),
    ];
    // 10000 + 1 + 10479 = 20480 bytes: at the limit.
    let (out, path) = limit_output(content.clone(), &d);
    assert_eq!(out, content);
    assert_eq!(path, None);
}

#[test]
fn long_output_keeps_its_start_and_end() {
    let d = temp();
    let img = json!({"type":"image","data":"AA","mimeType":"image/png"});
    // 8000 three-byte characters: the cuts fall inside characters and move outwards.
    let text = "€".repeat(8000);
    let content = vec![img.clone(), text_block(text.clone())];
    let (out, path) = limit_output(content, &d);
    let path = path.unwrap();
    let expected = format!(
        "Warning: truncated output (original token count: 6000)\nTotal output lines: 1\n\n{}…1174 chars truncated…{}\n\n[Full output: {path} (read it with offset/limit)]",
        "€".repeat(3413),
        "€".repeat(3413)
    );
    assert_eq!(out, vec![text_block(expected), img]);
    assert_eq!(
        saved_file(&format!(" saved to {path}]"), &d, ".txt"),
        text.as_bytes()
    );
}

#[test]
fn long_output_counts_lines_and_joins_text_blocks() {
    let d = temp();
    let a = "x\n".repeat(6000); // 12000 bytes, ends with a newline
    let b = "y".repeat(9000);
    let (out, path) = limit_output(vec![text_block(a.clone()), text_block(b.clone())], &d);
    let combined = format!("{a}\n{b}");
    assert_eq!(combined.len(), 21001);
    let t = text_of(&out[0]).to_string();
    assert!(
        t.starts_with(
            "Warning: truncated output (original token count: 5251)\nTotal output lines: 6002\n\n"
        ),
        "{t}"
    );
    assert!(t.contains(&format!("…{} chars truncated…", 21001 - 20480)));
    assert_eq!(std::fs::read_to_string(path.unwrap()).unwrap(), combined);
    // A final newline does not count as a line.
    let (out, _) = limit_output(vec![text_block("z\n".repeat(11000))], &d);
    assert!(text_of(&out[0]).contains("\nTotal output lines: 11000\n"));
}

#[test]
fn long_output_that_cannot_be_saved() {
    let d = temp().join("missing");
    let r = json!({"content":[{"type":"text","text":"q".repeat(30_000)}]});
    let out = call_result(&r, "s", "t", None, &d);
    let t = text_of(&out.content[0]);
    assert!(t.contains(&format!(
        "{}…9520 chars truncated…{}",
        "q".repeat(10240),
        "q".repeat(10240)
    )));
    let tail = format!(
        "\n\n[Could not save the full output: ENOENT: no such file or directory, open '{}/pi-mcp-",
        d.display()
    );
    assert!(t.contains(&tail) && t.ends_with(".txt']"), "{t}");
    assert_eq!(out.details, json!({"server":"s","tool":"t"}));
    // Saved: details name the file.
    let d = temp();
    let out = call_result(&r, "s", "t", None, &d);
    let path = out.details["fullOutputPath"].as_str().unwrap();
    assert!(text_of(&out.content[0]).ends_with(&format!(
        "[Full output: {path} (read it with offset/limit)]"
    )));
}

#[test]
fn parameters_and_descriptions() {
    assert_eq!(
        parameters_of(&json!({})),
        json!({"type":"object","properties":{}})
    );
    assert_eq!(
        serde_json::to_string(&parameters_of(
            &json!({"$schema":"s","type":null,"required":["a"]})
        ))
        .unwrap(),
        r#"{"$schema":"s","type":"object","required":["a"],"properties":{}}"#
    );
    let kept =
        json!({"properties":{"a":{"type":"string"}},"type":"object","additionalProperties":false});
    assert_eq!(
        serde_json::to_string(&parameters_of(&kept)).unwrap(),
        serde_json::to_string(&kept).unwrap()
    );
    let tool = |v: Value| description_of(&v, "srv");
    assert_eq!(
        tool(json!({"name":"t","description":"  Does X.\n "})),
        "Does X."
    );
    assert_eq!(tool(json!({"name":"t","description":" ","title":"T"})), "T");
    assert_eq!(tool(json!({"name":"t","annotations":{"title":"A"}})), "A");
    assert_eq!(
        tool(json!({"name":"t","title":null,"annotations":{"title":"A"}})),
        "A"
    );
    assert_eq!(
        tool(json!({"name":"t","title":"","annotations":{"title":"A"}})),
        "MCP tool t from server srv"
    );
    assert_eq!(
        tool(json!({"name":"get-sum"})),
        "MCP tool get-sum from server srv"
    );
}

#[test]
fn progress_texts() {
    assert_eq!(
        progress_text(&json!({"progress":1,"message":"Half"})),
        "Half"
    );
    assert_eq!(
        progress_text(&json!({"progress":1,"total":4})),
        "Progress 1/4"
    );
    assert_eq!(progress_text(&json!({"progress":0.5})), "Progress 0.5");
}
