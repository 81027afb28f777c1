//! `pi-rpc login` / `pi-rpc logout` through the real binary, against scripted OAuth endpoints
//! on 127.0.0.1 (`PI_RPC_OAUTH_ORIGIN`): what is sent, what lands in auth.json.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crossbeam_channel::{unbounded, Receiver};
use serde_json::{json, Value};

use crate::support::outside::pi_rpc_bin;
use crate::support::raw_server::{RawServer, Reply};
use crate::support::TempDir;

struct Login {
    child: Child,
    stderr: Receiver<String>,
    seen: Vec<String>,
}

impl Login {
    fn spawn(dir: &TempDir, origin: &str, args: &[&str]) -> Login {
        let mut child = Command::new(pi_rpc_bin())
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("PI_CODING_AGENT_DIR", dir.path().join("agent"))
            .env("PI_RPC_OAUTH_ORIGIN", origin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        Login {
            child,
            stderr: rx,
            seen: Vec::new(),
        }
    }

    /// The first stderr line containing `needle`.
    fn wait_line(&mut self, needle: &str) -> String {
        loop {
            match self.stderr.recv_timeout(Duration::from_secs(20)) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(needle) {
                        return l;
                    }
                }
                Err(_) => panic!("no stderr line with {needle:?}; saw {:#?}", self.seen),
            }
        }
    }

    fn type_line(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn finish(mut self) -> (i32, String) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        let mut rest: Vec<String> = self.seen;
        while let Ok(l) = self.stderr.recv_timeout(Duration::from_millis(500)) {
            rest.push(l);
        }
        let mut out = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        assert_eq!(out, "", "nothing on stdout");
        (status.code().unwrap_or(-1), rest.join("\n"))
    }
}

fn auth_json(dir: &TempDir) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.path().join("agent/auth.json")).unwrap())
        .unwrap()
}

fn json_reply(status: u16, body: Value) -> Reply {
    Reply::status(status, "application/json", body.to_string().as_bytes())
}

fn form(logged: &crate::support::raw_server::Logged) -> String {
    String::from_utf8(logged.body.clone().unwrap()).unwrap()
}

/// Decodes one percent-encoded query value.
fn decode(s: &str) -> String {
    let b = s.replace('+', " ");
    let b = b.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap(), 16).unwrap(),
            );
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn query_param(url: &str, name: &str) -> String {
    let q = url.split_once('?').unwrap().1;
    q.split('&')
        .find_map(|p| p.strip_prefix(&format!("{name}=")))
        .map(decode)
        .unwrap_or_else(|| panic!("{name} not in {url}"))
}

#[test]
fn xai_device_login_polls_and_stores_the_entry() {
    let server = RawServer::start(vec![
        json_reply(
            200,
            json!({"device_code": "dev-1", "user_code": "ABCD-1234",
                   "verification_uri": "https://accounts.x.ai/device", "expires_in": 60, "interval": 1}),
        ),
        json_reply(400, json!({"error": "authorization_pending"})),
        json_reply(
            200,
            json!({"access_token": "xa", "refresh_token": "xr", "expires_in": 3600}),
        ),
    ]);
    let dir = TempDir::new("login");
    // An existing entry of another provider stays.
    dir.write(
        "agent/auth.json",
        r#"{"openai": {"type": "api_key", "key": "k"}}"#,
    );
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "xai"]);
    let line = login.wait_line("ABCD-1234");
    assert!(line.contains("https://accounts.x.ai/device"), "{line}");
    let (code, stderr) = login.finish();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("Logged in to xai"), "{stderr}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[0].head.starts_with("POST /oauth2/device/code "));
    assert_eq!(
        form(&reqs[0]),
        "client_id=b1a00492-073a-47ea-816f-4c329264a828&scope=openid+profile+email+offline_access+grok-cli%3Aaccess+api%3Aaccess&referrer=pi"
    );
    assert!(reqs[1].head.starts_with("POST /oauth2/token "));
    assert_eq!(
        form(&reqs[1]),
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&client_id=b1a00492-073a-47ea-816f-4c329264a828&device_code=dev-1"
    );
    let stored = auth_json(&dir);
    assert_eq!(stored["openai"], json!({"type": "api_key", "key": "k"}));
    let xai = &stored["xai"];
    assert_eq!(
        (&xai["type"], &xai["access"], &xai["refresh"]),
        (&json!("oauth"), &json!("xa"), &json!("xr"))
    );
    assert!(xai["expires"].as_u64().is_some());
}

#[test]
fn anthropic_browser_login_takes_the_loopback_callback() {
    let server = RawServer::start(vec![json_reply(
        200,
        json!({"access_token": "sk-ant-oat01-a", "refresh_token": "ra", "expires_in": 28800}),
    )]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "anthropic"]);
    let url = login.wait_line("https://claude.ai/oauth/authorize?");
    let state = query_param(&url, "state");
    let redirect = query_param(&url, "redirect_uri");
    assert_eq!(query_param(&url, "code_challenge_method"), "S256");
    assert_eq!(
        query_param(&url, "client_id"),
        "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
    );
    assert_eq!(state.len(), 43, "the PKCE verifier is the state");
    // The browser follows the redirect to the loopback server.
    let port_path = redirect.strip_prefix("http://localhost:").unwrap();
    let (port, path) = port_path.split_once('/').unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
    write!(
        s,
        "GET /{path}?code=the-code&state={state} HTTP/1.1\r\nhost: localhost\r\n\r\n"
    )
    .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let (code, stderr) = login.finish();
    assert_eq!(code, 0, "{stderr}");
    let reqs = server.requests();
    assert!(reqs[0].head.starts_with("POST /v1/oauth/token "));
    let body: Value = serde_json::from_slice(reqs[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"grant_type": "authorization_code", "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
               "code": "the-code", "state": state, "redirect_uri": redirect, "code_verifier": state})
    );
    let entry = &auth_json(&dir)["anthropic"];
    assert_eq!(entry["access"], "sk-ant-oat01-a");
    assert_eq!(entry["refresh"], "ra");
}

#[test]
fn a_pasted_code_with_the_wrong_state_is_refused() {
    let server = RawServer::start(vec![]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "anthropic"]);
    login.wait_line("https://claude.ai/oauth/authorize?");
    login.type_line("the-code#not-the-state");
    let (code, stderr) = login.finish();
    assert_eq!(code, 1);
    assert!(
        stderr.contains("Login failed: OAuth state mismatch"),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn api_key_login_and_logout() {
    let server = RawServer::start(vec![]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "groq"]);
    login.wait_line("Enter the API key for groq");
    login.type_line("  gsk-123  ");
    let (code, stderr) = login.finish();
    assert_eq!(code, 0, "{stderr}");
    let mut login = Login::spawn(
        &dir,
        &server.base_url(),
        &["login", "anthropic", "--api-key"],
    );
    login.type_line("sk-ant-api");
    assert_eq!(login.finish().0, 0);
    assert_eq!(
        auth_json(&dir),
        json!({"groq": {"type": "api_key", "key": "gsk-123"},
               "anthropic": {"type": "api_key", "key": "sk-ant-api"}})
    );
    let text = std::fs::read_to_string(dir.path().join("agent/auth.json")).unwrap();
    assert!(text.starts_with("{\n  \"groq\": {\n"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| {
        std::fs::metadata(dir.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("agent/auth.json"), 0o600);
    assert_eq!(mode("agent"), 0o700);

    let (code, stderr) = Login::spawn(&dir, &server.base_url(), &["logout", "groq"]).finish();
    assert_eq!(code, 0);
    assert!(stderr.contains("Logged out of groq"), "{stderr}");
    assert_eq!(
        auth_json(&dir),
        json!({"anthropic": {"type": "api_key", "key": "sk-ant-api"}})
    );
    let (code, stderr) = Login::spawn(&dir, &server.base_url(), &["logout", "groq"]).finish();
    assert_eq!(code, 0);
    assert!(
        stderr.contains("No credentials stored for groq"),
        "{stderr}"
    );
    let (code, stderr) = Login::spawn(&dir, &server.base_url(), &["login"]).finish();
    assert_eq!(code, 2);
    assert!(stderr.starts_with("Usage: pi-rpc login"), "{stderr}");
}
