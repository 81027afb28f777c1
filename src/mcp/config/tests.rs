//! Tests of `mcp::config`. Expected error lines, orders and merged entries were taken from
//! pi 1.6.0's `loadMcpConfig` run on the same files.

use super::*;

/// A temporary agent dir, project cwd and home, removed on drop.
struct Fixture {
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let root = std::env::temp_dir().join(format!("pi-rpc-mcp-config-{}", uuid::Uuid::new_v4()));
        for d in ["agent", "project/.pi", "home"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        Fixture { root }
    }
    fn agent(&self) -> PathBuf {
        self.root.join("agent")
    }
    fn cwd(&self) -> PathBuf {
        self.root.join("project")
    }
    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    fn user_path(&self) -> String {
        self.agent().join("mcp.json").display().to_string()
    }
    fn project_path(&self) -> String {
        self.cwd().join(".pi/mcp.json").display().to_string()
    }
    fn user(&self, text: &str) -> &Fixture {
        std::fs::write(self.agent().join("mcp.json"), text).unwrap();
        self
    }
    fn project(&self, text: &str) -> &Fixture {
        std::fs::write(self.cwd().join(".pi/mcp.json"), text).unwrap();
        self
    }
    fn load(&self, trusted: bool) -> McpConfig {
        load(&self.agent(), &self.cwd(), trusted, Some(&self.home()))
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn names(c: &McpConfig) -> Vec<&str> {
    c.servers.iter().map(|s| s.name.as_str()).collect()
}

fn server<'a>(c: &'a McpConfig, name: &str) -> &'a ServerConfig {
    c.servers.iter().find(|s| s.name == name).unwrap()
}

/// `errors` without the `<path>: ` prefix, checking that every line has it.
fn messages(errors: &[String], path: &str) -> Vec<String> {
    errors
        .iter()
        .map(|e| {
            e.strip_prefix(&format!("{path}: "))
                .unwrap_or_else(|| panic!("{e:?} lacks {path}"))
                .to_string()
        })
        .collect()
}

fn stdio(command: &str, cwd: PathBuf) -> TransportConfig {
    TransportConfig::Stdio {
        command: command.into(),
        args: vec![],
        env: vec![],
        cwd,
    }
}

#[test]
fn missing_files_give_the_defaults() {
    let f = Fixture::new();
    assert_eq!(
        f.load(true),
        McpConfig {
            servers: vec![],
            errors: vec![],
            auto_enable_codemode: true
        }
    );
    // A missing agent dir is no error either.
    let c = load(&f.root.join("nope"), &f.root.join("nope2"), true, None);
    assert_eq!(c, McpConfig::default());
}

#[test]
fn a_minimal_entry_and_its_defaults() {
    let f = Fixture::new();
    f.user(r#"{"mcpServers": {"fake": {"command": "python3"}}}"#);
    let c = f.load(false);
    assert_eq!(
        c.servers,
        vec![ServerConfig {
            name: "fake".into(),
            transport: stdio("python3", f.cwd()),
            enabled: true,
            timeout: Duration::from_secs(60),
            description: None,
            exposure: Exposure::Codemode,
            tool_exposure: vec![],
            source: f.agent().join("mcp.json"),
        }]
    );
    assert!(c.errors.is_empty());
    assert!(c.auto_enable_codemode);
}

#[test]
fn file_level_errors() {
    let f = Fixture::new();
    let cases: &[(&[u8], &str)] = &[
        (
            b"{\"mcpServers\": }",
            "Unexpected token '}', \"{\"mcpServers\": }\" is not valid JSON",
        ),
        (b"", "Unexpected end of JSON input"),
        // Only one BOM is stripped.
        (
            b"\xef\xbb\xbf\xef\xbb\xbf{}",
            "Unexpected token '\u{feff}', \"\u{feff}{}\" is not valid JSON",
        ),
        (b"[]", "expected an object with an \"mcpServers\" object"),
        (b"null", "expected an object with an \"mcpServers\" object"),
        (b"\"x\"", "expected an object with an \"mcpServers\" object"),
        (
            b"{\"mcpServers\": []}",
            "expected an object with an \"mcpServers\" object",
        ),
        // The shape error comes first and ends the file.
        (
            b"{\"mcpServers\": null, \"autoEnableCodemode\": 1}",
            "expected an object with an \"mcpServers\" object",
        ),
    ];
    for (text, want) in cases {
        std::fs::write(f.agent().join("mcp.json"), text).unwrap();
        let c = f.load(false);
        assert_eq!(
            c.errors,
            vec![format!("{}: {want}", f.user_path())],
            "{text:?}"
        );
        assert!(c.servers.is_empty());
        assert!(c.auto_enable_codemode);
    }
}

#[test]
fn bom_is_stripped() {
    let f = Fixture::new();
    f.user("\u{feff}{\"mcpServers\": {\"b\": {\"command\": \"x\"}}}");
    let c = f.load(false);
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    assert_eq!(names(&c), ["b"]);
}

#[test]
fn unreadable_file_gives_node_fs_message() {
    let f = Fixture::new();
    std::fs::create_dir(f.agent().join("mcp.json")).unwrap();
    let c = f.load(false);
    assert_eq!(
        c.errors,
        vec![format!(
            "{}: EISDIR: illegal operation on a directory, read",
            f.user_path()
        )]
    );
}

#[test]
fn auto_enable_codemode() {
    let f = Fixture::new();
    // Non-boolean: an error, the servers are still read, the default stays.
    f.user(r#"{"autoEnableCodemode": null, "mcpServers": {"ok": {"command": "x"}}}"#);
    let c = f.load(false);
    assert_eq!(
        c.errors,
        vec![format!(
            "{}: autoEnableCodemode must be a boolean",
            f.user_path()
        )]
    );
    assert_eq!(names(&c), ["ok"]);
    assert!(c.auto_enable_codemode);

    f.user(r#"{"autoEnableCodemode": false}"#);
    assert!(!f.load(true).auto_enable_codemode);
    // The project value wins when both set it; an invalid project value keeps the user's.
    f.project(r#"{"autoEnableCodemode": true}"#);
    assert!(f.load(true).auto_enable_codemode);
    assert!(!f.load(false).auto_enable_codemode);
    f.project(r#"{"autoEnableCodemode": "yes"}"#);
    let c = f.load(true);
    assert!(!c.auto_enable_codemode);
    assert_eq!(
        c.errors,
        vec![format!(
            "{}: autoEnableCodemode must be a boolean",
            f.project_path()
        )]
    );
}

#[test]
fn entry_validation_messages_in_order() {
    let f = Fixture::new();
    f.user(
        r#"{"mcpServers": {
 "bad name": {"command": "x"},
 "": {"command": "x"},
 "arr": [],
 "nul": null,
 "str": "x",
 "en": {"command": "x", "enabled": "yes"},
 "ennull": {"command": "x", "enabled": null},
 "desc": {"command": "x", "description": 5},
 "t0": {"command": "x", "timeout": 0},
 "tneg": {"command": "x", "timeout": -1},
 "tstr": {"command": "x", "timeout": "5"},
 "sse": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
 "sse2": {"type": "sse", "command": "x", "enabled": 3},
 "badurl": {"url": "not a url"},
 "ftp": {"url": "ftp://x"},
 "hdr": {"url": "https://x", "headers": {"a": 1}},
 "hdrarr": {"url": "https://x", "headers": []},
 "args": {"command": "x", "args": "not-a-list"},
 "args2": {"command": "x", "args": ["a", 1]},
 "env": {"command": "x", "env": {"A": true}},
 "cwd": {"command": "x", "cwd": 1},
 "none": {"args": ["x"]},
 "typestdio": {"type": "stdio", "url": "https://x"},
 "typehttp": {"type": "http", "command": "x"},
 "typeweird": {"type": "websocket", "command": "x"},
 "typenull": {"type": null, "command": "x"},
 "urlnum": {"url": 5},
 "exp": {"command": "x", "exposure": "sometimes"},
 "expnull": {"command": "x", "exposure": null},
 "te": {"command": "x", "toolExposure": []},
 "te2": {"command": "x", "toolExposure": {"a": "direct", "b": "nope", "7": "bad"}},
 "auth1": {"url": "https://x", "auth": {"provider": ""}},
 "auth2": {"url": "https://x", "auth": "anthropic"},
 "auth3": {"url": "http://example.com", "auth": {"provider": "p"}},
 "auth4": {"url": "http://127.0.0.1:8080", "auth": {"provider": "p"}},
 "authstdio": {"command": "x", "auth": 5},
 "stdioheaders": {"command": "x", "headers": 5, "url": 7},
 "httpargs": {"url": "https://x", "args": 5, "cwd": 1, "env": 3},
 "my-tools": {"command": "x"},
 "my_tools": {"command": "y"},
 "ok": {"command": "x", "exposure": "codemode-deferred", "toolExposure": {"t": "codemode-deferred"}},
 "bothtimeout": {"url": "https://x", "command": "c", "timeout": 0.5}
}}"#,
    );
    let c = f.load(false);
    let one_of = r#"must be one of "codemode", "deferred", "direct", "hidden""#;
    let needs = r#"needs either "command" (stdio) or "url" (streamable HTTP)"#;
    let want = [
        r#"invalid server name "bad name" (use letters, digits, "_" and "-")"#.to_string(),
        r#"invalid server name "" (use letters, digits, "_" and "-")"#.into(),
        r#"server "arr" must be an object"#.into(),
        r#"server "nul" must be an object"#.into(),
        r#"server "str" must be an object"#.into(),
        r#"server "en": enabled must be a boolean"#.into(),
        r#"server "ennull": enabled must be a boolean"#.into(),
        r#"server "desc": description must be a string"#.into(),
        r#"server "t0": timeout must be a positive number of seconds"#.into(),
        r#"server "tneg": timeout must be a positive number of seconds"#.into(),
        r#"server "tstr": timeout must be a positive number of seconds"#.into(),
        r#"server "sse": legacy SSE transport is not supported; use the streamable HTTP URL"#
            .into(),
        r#"server "sse2": enabled must be a boolean"#.into(),
        r#"server "badurl": url must be an http or https URL"#.into(),
        r#"server "ftp": url must be an http or https URL"#.into(),
        r#"server "hdr": headers must map names to strings"#.into(),
        r#"server "hdrarr": headers must map names to strings"#.into(),
        r#"server "args": args must be an array of strings"#.into(),
        r#"server "args2": args must be an array of strings"#.into(),
        r#"server "env": env must map names to strings"#.into(),
        r#"server "cwd": cwd must be a string"#.into(),
        format!(r#"server "none" {needs}"#),
        format!(r#"server "typestdio" {needs}"#),
        format!(r#"server "typehttp" {needs}"#),
        format!(r#"server "typeweird" {needs}"#),
        format!(r#"server "typenull" {needs}"#),
        format!(r#"server "urlnum" {needs}"#),
        format!(r#"server "exp": exposure {one_of}"#),
        format!(r#"server "expnull": exposure {one_of}"#),
        r#"server "te": toolExposure must map tool names to exposures"#.into(),
        // "7" is listed first: JavaScript's key order.
        format!(r#"server "te2": toolExposure "7" {one_of}"#),
        r#"server "auth1": auth.provider must be a provider name"#.into(),
        r#"server "auth2": auth.provider must be a provider name"#.into(),
        r#"server "auth3": auth requires an https URL, or http on localhost, 127.0.0.1, or [::1]"#
            .into(),
        r#"server "my_tools" conflicts with "my-tools""#.into(),
    ];
    assert_eq!(messages(&c.errors, &f.user_path()), want);
    assert_eq!(
        names(&c),
        [
            "auth4",
            "authstdio",
            "stdioheaders",
            "httpargs",
            "my-tools",
            "ok",
            "bothtimeout"
        ]
    );
    // Fields of the other transport are ignored, not validated.
    assert!(matches!(
        server(&c, "stdioheaders").transport,
        TransportConfig::Stdio { .. }
    ));
    assert!(matches!(
        server(&c, "httpargs").transport,
        TransportConfig::Http { .. }
    ));
    // `url` beats `command` when both are given without `type`.
    let both = server(&c, "bothtimeout");
    assert!(matches!(both.transport, TransportConfig::Http { .. }));
    assert_eq!(both.timeout, Duration::from_millis(500));
    // The alias is resolved everywhere.
    let ok = server(&c, "ok");
    assert_eq!(ok.exposure, Exposure::Codemode);
    assert_eq!(
        ok.tool_exposure,
        vec![("t".to_string(), Exposure::Codemode)]
    );
}

#[test]
fn http_entry_fields() {
    let f = Fixture::new();
    f.user(
        r#"{"mcpServers": {"docs": {"type": "streamable-http", "url": "https://example.com/mcp",
            "headers": {"X-B": "b", "Authorization": "Bearer ${TOKEN}", "9": "n"},
            "auth": {"provider": "anthropic"}, "enabled": false, "timeout": 2.25,
            "description": "Docs", "exposure": "deferred", "extra": 1},
          "plain": {"type": "http", "url": "http://localhost:3000/mcp", "oauth": {"clientSecret": "$S"}}}}"#,
    );
    let c = f.load(false);
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    let d = server(&c, "docs");
    assert_eq!(
        d.transport,
        TransportConfig::Http {
            url: "https://example.com/mcp".into(),
            headers: vec![
                ("9".into(), "n".into()),
                ("X-B".into(), "b".into()),
                ("Authorization".into(), "Bearer ${TOKEN}".into()),
            ],
            auth_provider: Some("anthropic".into()),
            oauth: None,
        }
    );
    assert!(!d.enabled);
    assert_eq!(d.timeout, Duration::from_secs_f64(2.25));
    assert_eq!(d.description.as_deref(), Some("Docs"));
    assert_eq!(d.exposure, Exposure::Deferred);
    let p = server(&c, "plain");
    assert_eq!(
        p.transport,
        TransportConfig::Http {
            url: "http://localhost:3000/mcp".into(),
            headers: vec![],
            auth_provider: None,
            // Kept as written (clientSecret unresolved).
            oauth: Some(serde_json::json!({"clientSecret": "$S"})),
        }
    );
}

#[test]
fn home_and_cwd_expansion() {
    let f = Fixture::new();
    f.user(
        r#"{"mcpServers": {
            "a": {"command": "~/bin/srv", "args": ["~", "~/data", "~/x/../y/", "~user", "x~/y", "~\\z"]},
            "b": {"command": "srv", "cwd": "sub/../x/"},
            "c": {"command": "~", "cwd": "~/work"},
            "d": {"command": "srv", "cwd": "/abs/./p/.."},
            "e": {"command": "srv", "cwd": ""}}}"#,
    );
    let c = f.load(false);
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    let home = f.home().display().to_string();
    let TransportConfig::Stdio {
        command, args, cwd, ..
    } = &server(&c, "a").transport
    else {
        panic!()
    };
    assert_eq!(command, &format!("{home}/bin/srv"));
    assert_eq!(
        args,
        &[
            home.clone(),
            format!("{home}/data"),
            format!("{home}/y/"),
            "~user".into(),
            "x~/y".into(),
            "~\\z".into()
        ]
    );
    assert_eq!(cwd, &f.cwd());
    let cwd_of = |n: &str| match &server(&c, n).transport {
        TransportConfig::Stdio { cwd, .. } => cwd.clone(),
        _ => panic!(),
    };
    assert_eq!(cwd_of("b"), f.cwd().join("x"));
    assert_eq!(cwd_of("c"), f.home().join("work"));
    assert_eq!(cwd_of("d"), PathBuf::from("/abs"));
    assert_eq!(cwd_of("e"), f.cwd());
    let TransportConfig::Stdio { command, .. } = &server(&c, "c").transport else {
        panic!()
    };
    assert_eq!(command, &home);

    // Without a home directory `~` stays.
    let c = load(&f.agent(), &f.cwd(), false, None);
    let TransportConfig::Stdio { command, .. } = &server(&c, "a").transport else {
        panic!()
    };
    assert_eq!(command, "~/bin/srv");
}

#[test]
fn javascript_key_order() {
    let f = Fixture::new();
    f.user(
        r#"{"mcpServers": {"b": {"command": "x"}, "10": {"command": "y"},
            "2": {"command": "z", "env": {"b": "1", "3": "2"}},
            "d": {"command": "q"}, "d": {"url": "http:foo.com"}}}"#,
    );
    let c = f.load(false);
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    // Array-index names first; a duplicate key keeps its first place and its last value.
    assert_eq!(names(&c), ["2", "10", "b", "d"]);
    let TransportConfig::Stdio { env, .. } = &server(&c, "2").transport else {
        panic!()
    };
    assert_eq!(
        env,
        &[("3".to_string(), "2".to_string()), ("b".into(), "1".into())]
    );
    assert!(matches!(
        server(&c, "d").transport,
        TransportConfig::Http { .. }
    ));
}

const USER: &str = r#"{"autoEnableCodemode": false, "mcpServers": {
 "fake": {"command": "fk", "env": {"K": "$V"}, "exposure": "direct", "toolExposure": {"a": "hidden"}},
 "keep": {"command": "k", "exposure": "hidden", "env": {"FAKE_MCP_NAME": "keep"}},
 "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${T}"}, "auth": {"provider": "anthropic"}, "description": "Remote"},
 "ovbad": {"command": "o"},
 "ovbad2": {"command": "o"},
 "my-tools": {"command": "m"}
}}"#;

const PROJECT: &str = r#"{"mcpServers": {
 "proj": {"command": "p", "cwd": "sub/../x/"},
 "fake": {"enabled": false},
 "orphan": {"exposure": "direct"},
 "keep": {"enabled": false, "command": "ignored"},
 "remote2": {"url": "https://example.invalid/mcp", "auth": {"provider": "anthropic"}},
 "remote": {"toolExposure": {"x*": "direct"}, "exposure": "codemode-deferred"},
 "ovbad": {"enabled": false, "description": "nope"},
 "ovbad2": {"exposure": "bad"},
 "my_tools": {"command": "y"},
 "3": {"command": "three"},
 "authstdio": {"command": "x", "auth": {"provider": "p"}},
 "authstdiourl": {"command": "x", "url": 5, "auth": {"provider": "p"}},
 "nullcmd": {"command": null, "enabled": false}
}}"#;

#[test]
fn project_merge_override_and_auth_rules() {
    let f = Fixture::new();
    f.user(USER).project(PROJECT);
    let c = f.load(true);
    let want = [
        r#"server "orphan" needs "command" or "url", or a global server to override"#,
        r#"server "remote2": auth is only allowed in the global mcp.json"#,
        r#"server "ovbad": an override can only set enabled, exposure, toolExposure"#,
        r#"server "ovbad2": exposure must be one of "codemode", "deferred", "direct", "hidden""#,
        r#"server "my_tools" conflicts with "my-tools""#,
        r#"server "authstdiourl": auth is only allowed in the global mcp.json"#,
        r#"server "nullcmd" needs either "command" (stdio) or "url" (streamable HTTP)"#,
    ];
    assert_eq!(messages(&c.errors, &f.project_path()), want);
    // Replaced and overridden entries keep the user entry's place; new ones follow in
    // project-file (JavaScript key) order.
    assert_eq!(
        names(&c),
        [
            "fake",
            "keep",
            "remote",
            "ovbad",
            "ovbad2",
            "my-tools",
            "3",
            "proj",
            "authstdio"
        ]
    );
    let user_file = f.agent().join("mcp.json");
    let project_file = f.cwd().join(".pi/mcp.json");

    // An override changes only `enabled`, keeping env and exposures.
    let fake = server(&c, "fake");
    assert!(!fake.enabled);
    assert_eq!(fake.exposure, Exposure::Direct);
    assert_eq!(
        fake.tool_exposure,
        vec![("a".to_string(), Exposure::Hidden)]
    );
    assert_eq!(
        fake.transport,
        TransportConfig::Stdio {
            command: "fk".into(),
            args: vec![],
            env: vec![("K".into(), "$V".into())],
            cwd: f.cwd(),
        }
    );
    assert_eq!(fake.source, project_file);

    // A project entry with `command` replaces the user entry entirely.
    let keep = server(&c, "keep");
    assert_eq!(keep.transport, stdio("ignored", f.cwd()));
    assert!(!keep.enabled);
    assert_eq!(keep.exposure, Exposure::Codemode);
    assert_eq!(keep.source, project_file);

    // An override keeps headers and auth; its toolExposure replaces the user's whole.
    let remote = server(&c, "remote");
    assert_eq!(
        remote.transport,
        TransportConfig::Http {
            url: "https://example.com/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer ${T}".into())],
            auth_provider: Some("anthropic".into()),
            oauth: None,
        }
    );
    assert_eq!(remote.description.as_deref(), Some("Remote"));
    assert_eq!(remote.exposure, Exposure::Codemode);
    assert_eq!(
        remote.tool_exposure,
        vec![("x*".to_string(), Exposure::Direct)]
    );

    // Failed overrides leave the user entry alone.
    for n in ["ovbad", "ovbad2", "my-tools"] {
        let s = server(&c, n);
        assert!(s.enabled);
        assert_eq!(s.source, user_file);
    }
    let proj = server(&c, "proj");
    assert_eq!(proj.transport, stdio("p", f.cwd().join("x")));
    assert_eq!(proj.source, project_file);
    // `auth` on a stdio entry is ignored, even in the project file.
    assert_eq!(server(&c, "authstdio").transport, stdio("x", f.cwd()));
    // Not set by the project: the user's value stays.
    assert!(!c.auto_enable_codemode);
}

#[test]
fn untrusted_project_is_skipped_silently() {
    let f = Fixture::new();
    f.user(USER).project(PROJECT);
    let c = f.load(false);
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    assert_eq!(
        names(&c),
        ["fake", "keep", "remote", "ovbad", "ovbad2", "my-tools"]
    );
    assert!(server(&c, "fake").enabled);
    // A broken project file is not even read.
    f.project("{");
    assert!(f.load(false).errors.is_empty());
    assert_eq!(
        f.load(true).errors,
        vec![format!(
            "{}: Expected property name or '}}' in JSON at position 1 (line 1 column 2)",
            f.project_path()
        )]
    );
}

#[test]
fn user_file_has_no_overrides_and_errors_keep_file_order() {
    let f = Fixture::new();
    f.user(r#"{"mcpServers": {"a": {"enabled": false}, "b-c": {"command": "x"}}}"#)
        .project(
            r#"{"mcpServers": {"b_c": {"url": "https://x"}, "a": {"enabled": false}, "zz": 1}}"#,
        );
    let c = f.load(true);
    assert_eq!(
        c.errors,
        vec![
            format!(
                r#"{}: server "a" needs either "command" (stdio) or "url" (streamable HTTP)"#,
                f.user_path()
            ),
            format!(r#"{}: server "b_c" conflicts with "b-c""#, f.project_path()),
            format!(
                r#"{}: server "a" needs "command" or "url", or a global server to override"#,
                f.project_path()
            ),
            format!(r#"{}: server "zz" must be an object"#, f.project_path()),
        ]
    );
    assert_eq!(names(&c), ["b-c"]);
}

#[test]
fn override_revalidates_the_merged_entry() {
    let f = Fixture::new();
    f.user(r#"{"mcpServers": {"s": {"command": "x", "exposure": "direct"}}}"#)
        .project(r#"{"mcpServers": {"s": {"enabled": null, "toolExposure": {"t": "direct"}}}}"#);
    let c = f.load(true);
    assert_eq!(
        messages(&c.errors, &f.project_path()),
        [r#"server "s": enabled must be a boolean"#]
    );
    let s = server(&c, "s");
    assert!(s.enabled);
    assert!(s.tool_exposure.is_empty());
    // An empty override is a valid no-op that still names the project file.
    f.project(r#"{"mcpServers": {"s": {}}}"#);
    let c = f.load(true);
    assert!(c.errors.is_empty());
    assert_eq!(server(&c, "s").exposure, Exposure::Direct);
    assert_eq!(server(&c, "s").source, f.cwd().join(".pi/mcp.json"));
}

#[test]
fn exposure_names() {
    for e in [
        Exposure::Codemode,
        Exposure::Deferred,
        Exposure::Direct,
        Exposure::Hidden,
    ] {
        assert_eq!(Exposure::parse(e.as_str()), Some(e));
    }
    assert_eq!(
        Exposure::parse("codemode-deferred"),
        Some(Exposure::Codemode)
    );
    assert_eq!(Exposure::parse("Direct"), None);
    assert_eq!(Exposure::parse(""), None);
    assert_eq!(
        validate::EXPOSURES,
        ["codemode", "deferred", "direct", "hidden"]
    );
}

fn with_exposures(exposure: Exposure, tools: &[(&str, Exposure)]) -> ServerConfig {
    ServerConfig {
        name: "my-srv-x".into(),
        transport: stdio("x", PathBuf::from("/")),
        enabled: true,
        timeout: Duration::from_secs(60),
        description: None,
        exposure,
        tool_exposure: tools.iter().map(|(k, e)| (k.to_string(), *e)).collect(),
        source: PathBuf::from("/mcp.json"),
    }
}

#[test]
fn tool_exposure_lookup() {
    use Exposure::*;
    let s = with_exposures(
        Hidden,
        &[
            ("re*", Deferred),
            ("read_*", Codemode),
            ("read_file", Direct),
            ("*_x*y", Direct),
            ("a.b", Direct),
        ],
    );
    assert_eq!(s.namespace(), "mcp__my_srv_x");
    // Exact beats patterns, wherever it is listed.
    assert_eq!(s.exposure_of("read_file"), Direct);
    // First matching pattern wins.
    assert_eq!(s.exposure_of("read_dir"), Deferred);
    assert_eq!(s.exposure_of("re"), Deferred);
    assert_eq!(s.exposure_of("q_xzzy"), Direct);
    assert_eq!(s.exposure_of("_xy"), Direct);
    assert_eq!(s.exposure_of("q_xzz"), Hidden);
    // Non-`*` characters are literal (`.` is no wildcard); no pattern: the server's exposure.
    assert_eq!(s.exposure_of("a.b"), Direct);
    assert_eq!(s.exposure_of("axb"), Hidden);
    assert_eq!(s.exposure_of("write"), Hidden);
    // `*` does not cross a line break (JavaScript's `.`).
    assert_eq!(s.exposure_of("re\nx"), Hidden);
    assert_eq!(
        s.exposures(),
        vec![Hidden, Deferred, Codemode, Direct, Direct, Direct]
    );
    assert!(s.has_direct());
    assert!(!with_exposures(Codemode, &[("x", Hidden)]).has_direct());
    assert!(with_exposures(Direct, &[]).has_direct());
    assert_eq!(with_exposures(Deferred, &[]).exposures(), vec![Deferred]);
}

#[test]
fn glob_patterns() {
    for (p, t, want) in [
        ("*", "", true),
        ("*", "anything", true),
        ("**", "ab", true),
        ("a*", "a", true),
        ("*a", "ba", true),
        ("*a", "ab", false),
        ("a*b*c", "aXbYc", true),
        ("a*b*c", "aXbY", false),
        ("a*a", "a", false),
        ("x*", "x\u{2028}", false),
        ("x\n*", "x\nyz", true),
        ("[*]", "[1]", true),
        ("é*", "été", true),
    ] {
        assert_eq!(glob_matches(p, t), want, "{p:?} {t:?}");
    }
}

/// The configuration of the `mcp_server_fails` oracle scenario: the config lines of pi's
/// startup warning, in order, and the servers that remain.
#[test]
fn mcp_server_fails_scenario() {
    let f = Fixture::new();
    f.user(
        r#"{"mcpServers": {
 "fake": {"command": "python3", "args": ["fake_mcp.py"], "exposure": "direct"},
 "missing": {"command": "/nonexistent/bin/mcp-server", "exposure": "direct"},
 "silent": {"command": "python3", "exposure": "direct", "timeout": 1, "args": ["-c", "pass"]},
 "noenv": {"command": "python3", "args": ["fake_mcp.py"], "exposure": "direct", "env": {"TOKEN": "${MCP_TEST_UNSET_VAR}"}},
 "bad name": {"command": "x"},
 "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
 "empty": {"args": ["x"]},
 "negative": {"command": "x", "timeout": -1},
 "sometimes": {"command": "x", "exposure": "sometimes"},
 "badargs": {"command": "x", "args": "not-a-list"},
 "my-tools": {"command": "x", "enabled": false},
 "my_tools": {"command": "x"}}}"#,
    );
    let c = f.load(false);
    let want = [
        r#"invalid server name "bad name" (use letters, digits, "_" and "-")"#,
        r#"server "legacy": legacy SSE transport is not supported; use the streamable HTTP URL"#,
        r#"server "empty" needs either "command" (stdio) or "url" (streamable HTTP)"#,
        r#"server "negative": timeout must be a positive number of seconds"#,
        r#"server "sometimes": exposure must be one of "codemode", "deferred", "direct", "hidden""#,
        r#"server "badargs": args must be an array of strings"#,
        r#"server "my_tools" conflicts with "my-tools""#,
    ];
    assert_eq!(messages(&c.errors, &f.user_path()), want);
    assert_eq!(
        names(&c),
        ["fake", "missing", "silent", "noenv", "my-tools"]
    );
    assert_eq!(server(&c, "silent").timeout, Duration::from_secs(1));
    assert!(!server(&c, "my-tools").enabled);
    assert!(c.servers[..4].iter().all(ServerConfig::has_direct));
}
