//! `pi-rpc login` / `pi-rpc logout` through the real binary, against scripted OAuth endpoints
//! on 127.0.0.1 (`PI_RPC_OAUTH_ORIGIN`): what is sent, what lands in auth.json.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::outside::pi_rpc_bin;
use crate::support::raw_server::{RawServer, Reply};
use crate::support::TempDir;

struct Login {
    child: Child,
    /// Everything printed on stdout so far (prompts end without a newline).
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

fn collect(mut r: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let buf = Arc::new(Mutex::new(String::new()));
    let out = Arc::clone(&buf);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            out.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    buf
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
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        Login {
            child,
            stdout,
            stderr,
        }
    }

    /// The first stdout line containing `needle` (waiting for it).
    fn wait_line(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = self.stdout.lock().unwrap().clone();
            if let Some(line) = text.lines().find(|l| l.contains(needle)) {
                return line.to_string();
            }
            assert!(
                Instant::now() < deadline,
                "no stdout line with {needle:?}; stdout {text:?}, stderr {:?}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn type_line(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Exit code, stdout, stderr.
    fn finish(mut self) -> (i32, String, String) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        // The reader threads end at EOF, right after the exit.
        std::thread::sleep(Duration::from_millis(100));
        let out = self.stdout.lock().unwrap().clone();
        let err = self.stderr.lock().unwrap().clone();
        (status.code().unwrap_or(-1), out, err)
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
    let mut login = Login::spawn(&dir, &server.base_url(), &["auth", "login", "xai"]);
    let line = login.wait_line("ABCD-1234");
    assert_eq!(
        line,
        "Open https://accounts.x.ai/device and enter code: ABCD-1234"
    );
    let (code, out, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    let path = dir.path().join("agent/auth.json");
    assert!(
        out.ends_with(&format!(
            "Waiting for authentication...\nLogged in to xai. Credentials saved to {}\n",
            path.display()
        )),
        "{out}"
    );
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
    let url = url.trim_start();
    let state = query_param(url, "state");
    let redirect = query_param(url, "redirect_uri");
    assert_eq!(query_param(url, "code_challenge_method"), "S256");
    assert_eq!(
        query_param(url, "client_id"),
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
    let (code, _, err) = login.finish();
    assert_eq!(code, 0, "{err}");
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
    let (code, _, err) = login.finish();
    assert_eq!(code, 1);
    assert_eq!(err, "Failed to log in to anthropic: OAuth state mismatch\n");
    assert!(server.requests().is_empty());
}

#[test]
fn anthropic_copy_code_login_without_a_browser() {
    let server = RawServer::start(vec![json_reply(
        200,
        json!({"access_token": "sk-ant-oat01-c", "refresh_token": "rc", "expires_in": 28800}),
    )]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(
        &dir,
        &server.base_url(),
        &["login", "anthropic", "--no-browser"],
    );
    let url = login.wait_line("https://claude.ai/oauth/authorize?");
    let url = url.trim_start();
    assert_eq!(
        query_param(url, "redirect_uri"),
        "https://platform.claude.com/oauth/code/callback"
    );
    let state = query_param(url, "state");
    login.wait_line("Paste the code Anthropic shows after you sign in (code#state): ");
    login.type_line(&format!("pasted-code#{state}"));
    let (code, _, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    let body: Value =
        serde_json::from_slice(server.requests()[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(body["code"], "pasted-code");
    assert_eq!(
        body["redirect_uri"],
        "https://platform.claude.com/oauth/code/callback"
    );
    assert_eq!(auth_json(&dir)["anthropic"]["refresh"], "rc");
}

#[test]
fn api_key_login_and_logout() {
    let server = RawServer::start(vec![]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "groq"]);
    login.wait_line("Enter the API key for groq: ");
    login.type_line("  gsk-123  ");
    let (code, out, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Saved API key for groq. Credentials saved to "),
        "{out}"
    );
    let mut login = Login::spawn(
        &dir,
        &server.base_url(),
        &["auth", "login", "anthropic", "--api-key"],
    );
    login.type_line("sk-ant-api");
    assert_eq!(login.finish().0, 0);
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "openrouter"]);
    login.wait_line("https://openrouter.ai/auth?");
    drop(login.child.stdin.take());
    let (code, _, err) = login.finish();
    assert_eq!((code, err.as_str()), (1, "Login cancelled.\n"));
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

    let logout = |args: &[&str]| Login::spawn(&dir, &server.base_url(), args).finish();
    let (code, out, _) = logout(&["logout", "groq"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "Removed stored API key for groq. Environment variables and models.json config are unchanged.\n"
    );
    assert_eq!(
        auth_json(&dir),
        json!({"anthropic": {"type": "api_key", "key": "sk-ant-api"}})
    );
    let (code, out, _) = logout(&["auth", "logout", "groq"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "No stored credentials for groq. Environment variables and models.json config are unchanged.\n"
    );
    let (code, _, err) = logout(&["auth", "login"]);
    assert_eq!(
        (code, err.as_str()),
        (
            1,
            "Usage: pi-rpc auth login <provider> [--api-key] [--no-browser]\n"
        )
    );
    let (code, _, err) = logout(&["login", "openai-codex", "--api-key"]);
    assert_eq!(
        (code, err.as_str()),
        (
            1,
            "openai-codex has no API key login. Omit --api-key to sign in.\n"
        )
    );
}

#[test]
fn logging_out_of_an_oauth_provider() {
    let dir = TempDir::new("login");
    dir.write(
        "agent/auth.json",
        r#"{"xai": {"type": "oauth", "access": "a", "refresh": "r", "expires": 1}}"#,
    );
    let (code, out, _) = Login::spawn(&dir, "http://127.0.0.1:9", &["logout", "xai"]).finish();
    assert_eq!((code, out.as_str()), (0, "Logged out of xai.\n"));
    assert_eq!(auth_json(&dir), json!({}));
}

/// base64url without padding (a test JWT's payload).
fn b64url(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..=c.len() {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[test]
fn openai_codex_device_login_without_a_browser() {
    let access = format!(
        "h.{}.s",
        b64url(
            json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-9"}})
                .to_string()
                .as_bytes()
        )
    );
    let server = RawServer::start(vec![
        json_reply(
            200,
            json!({"device_auth_id": "da-1", "user_code": "UC-1", "interval": "0"}),
        ),
        json_reply(403, json!({})),
        json_reply(
            200,
            json!({"authorization_code": "ac-1", "code_verifier": "cv-1"}),
        ),
        json_reply(
            200,
            json!({"access_token": access, "refresh_token": "or", "expires_in": 864000}),
        ),
    ]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(
        &dir,
        &server.base_url(),
        &["auth", "login", "openai-codex", "--no-browser"],
    );
    assert_eq!(
        login.wait_line("UC-1"),
        "Open https://auth.openai.com/codex/device and enter code: UC-1"
    );
    let (code, _, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "{reqs:#?}");
    assert!(reqs[0]
        .head
        .starts_with("POST /api/accounts/deviceauth/usercode "));
    assert_eq!(
        serde_json::from_slice::<Value>(reqs[0].body.as_deref().unwrap()).unwrap(),
        json!({"client_id": "app_EMoamEEZ73f0CkXaXp7hrann"})
    );
    assert!(reqs[1]
        .head
        .starts_with("POST /api/accounts/deviceauth/token "));
    assert_eq!(
        serde_json::from_slice::<Value>(reqs[1].body.as_deref().unwrap()).unwrap(),
        json!({"device_auth_id": "da-1", "user_code": "UC-1"})
    );
    assert!(reqs[3].head.starts_with("POST /oauth/token "));
    assert_eq!(
        form(&reqs[3]),
        "grant_type=authorization_code&client_id=app_EMoamEEZ73f0CkXaXp7hrann&code=ac-1&code_verifier=cv-1&redirect_uri=https%3A%2F%2Fauth.openai.com%2Fdeviceauth%2Fcallback"
    );
    let entry = &auth_json(&dir)["openai-codex"];
    assert_eq!(entry["accountId"], "acct-9");
    assert_eq!(entry["refresh"], "or");
    assert_eq!(entry["access"], json!(access));
}

#[test]
fn sign_in_with_chatgpt_registers_this_installation_and_stores_the_issued_client() {
    let server = RawServer::start(vec![json_reply(
        200,
        json!({"access_token": "oa", "refresh_token": "orf", "id_token": "idt", "expires_in": 3600,
               "scope": "openid chatgpt.tokens.use.direct"}),
    )]);
    let dir = TempDir::new("login");
    dir.write("agent/settings.json", r#"{"theme": "dark"}"#);
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "openai"]);
    let url = login.wait_line("https://auth.openai.com/api/accounts/authorize?");
    let url = url.trim_start();
    // The installation id pi would use, created in settings.json.
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("agent/settings.json")).unwrap(),
    )
    .unwrap();
    let device = settings["deviceId"].as_str().unwrap().to_string();
    assert_eq!(settings["theme"], "dark");
    assert_eq!(
        query_param(url, "ext_agent_host_id"),
        format!("urn:uuid:{device}")
    );
    assert_eq!(query_param(url, "client_id"), "dynamic_agent_client");
    let state = query_param(url, "state");
    let mut s = TcpStream::connect(("127.0.0.1", 1455)).unwrap();
    write!(
        s,
        "GET /auth/callback?code=cc&state={state}&client_id=issued-1 HTTP/1.1\r\nhost: x\r\n\r\n"
    )
    .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let (code, _, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    let req = &server.requests()[0];
    assert!(req.head.starts_with("POST /api/accounts/oauth/token "));
    let body = form(req);
    let fields: Vec<&str> = body.split('&').collect();
    assert_eq!(fields.len(), 6, "{body}");
    assert_eq!(
        fields[..3],
        [
            "grant_type=authorization_code",
            "client_id=issued-1",
            "code=cc"
        ]
    );
    assert_eq!(fields[3].len(), "code_verifier=".len() + 43, "{body}");
    assert_eq!(
        fields[4..],
        [
            "redirect_uri=http%3A%2F%2F127.0.0.1%3A1455%2Fauth%2Fcallback",
            "resource=https%3A%2F%2Fapi.openai.com%2Fv1"
        ]
    );
    let entry = &auth_json(&dir)["openai"];
    assert_eq!(entry["clientId"], "issued-1");
    assert_eq!(
        entry["scopes"],
        json!(["openid", "chatgpt.tokens.use.direct"])
    );
    assert_eq!(entry["access"], "oa");
}

#[test]
fn radius_browser_login_uses_the_discovered_authorization_endpoint() {
    let server = RawServer::start(vec![
        json_reply(
            200,
            json!({"authorizationEndpoint": "https://login.radius.example/authorize"}),
        ),
        json_reply(
            200,
            json!({"access_token": "ra", "refresh_token": "rr", "expires_in": 600, "scope": "gateway offline_access"}),
        ),
    ]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "radius"]);
    let url = login.wait_line("https://login.radius.example/authorize?");
    let url = url.trim_start();
    assert_eq!(query_param(url, "handoff"), "url");
    assert_eq!(
        query_param(url, "redirect_uri"),
        "http://127.0.0.1:1456/oauth/callback"
    );
    let state = query_param(url, "state");
    let mut s = TcpStream::connect(("127.0.0.1", 1456)).unwrap();
    write!(
        s,
        "GET /oauth/callback?code=rc&state={state} HTTP/1.1\r\nhost: x\r\n\r\n"
    )
    .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let (code, _, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    let reqs = server.requests();
    assert!(
        reqs[0].head.starts_with("GET /v1/oauth "),
        "{}",
        reqs[0].head
    );
    assert!(reqs[1].head.starts_with("POST /v1/oauth/token "));
    assert!(form(&reqs[1]).starts_with(
        "grant_type=authorization_code&client_id=pi-gateway&redirect_uri=http%3A%2F%2F127.0.0.1%3A1456%2Foauth%2Fcallback&code=rc&code_verifier="
    ));
    let entry = &auth_json(&dir)["radius"];
    assert_eq!(entry["access"], "ra");
    assert_eq!(entry["scope"], "gateway offline_access");
}

#[test]
fn radius_device_login_without_a_browser() {
    let server = RawServer::start(vec![
        json_reply(
            200,
            json!({"device_code": "rd", "user_code": "RU-1", "verification_uri": "https://radius.example/device",
                   "expires_in": 60, "interval": 1}),
        ),
        json_reply(400, json!({"error": "authorization_pending"})),
        json_reply(
            200,
            json!({"access_token": "ra", "refresh_token": "rr", "expires_in": 600}),
        ),
        // pi's catalog refresh after the login.
        json_reply(
            200,
            json!({"baseUrl": "https://radius.pi.dev/v1", "models": [gateway_model("fast")]}),
        ),
    ]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(
        &dir,
        &server.base_url(),
        &["login", "radius", "--no-browser"],
    );
    assert_eq!(
        login.wait_line("RU-1"),
        "Open https://radius.example/device and enter code: RU-1"
    );
    let (code, _, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    let reqs = server.requests();
    assert_eq!(
        form(&reqs[0]),
        "client_id=pi-gateway&scope=gateway+offline_access"
    );
    assert_eq!(
        form(&reqs[2]),
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&client_id=pi-gateway&device_code=rd"
    );
    assert_eq!(auth_json(&dir)["radius"]["refresh"], "rr");
    assert!(reqs[3].head.starts_with("GET /v1/config "));
    let head = reqs[3].head.to_ascii_lowercase();
    assert!(head.contains("authorization: bearer ra"), "{head}");
    assert!(head.contains("accept: application/json"), "{head}");
    let store = models_store(&dir);
    let mut model = gateway_model("fast");
    model["api"] = json!("pi-messages");
    model["provider"] = json!("radius");
    model["baseUrl"] = json!("https://radius.pi.dev/v1");
    assert_eq!(
        store,
        json!({"radius": {"models": [model], "checkedAt": store["radius"]["checkedAt"]}})
    );
    assert!(store["radius"]["checkedAt"].as_u64().unwrap() > 1_700_000_000_000);
}

fn models_store(dir: &TempDir) -> Value {
    let text = std::fs::read_to_string(dir.path().join("agent/models-store.json")).unwrap();
    assert!(
        text.starts_with("{\n  \""),
        "pi's JSON.stringify layout: {text}"
    );
    serde_json::from_str(&text).unwrap()
}

/// A gateway model as `/v1/config` lists it.
fn gateway_model(id: &str) -> Value {
    json!({"id": id, "name": id.to_uppercase(), "reasoning": true, "input": ["text"],
           "contextWindow": 100000, "maxTokens": 8000, "lab": "L",
           "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}, "enabled": true})
}

/// `pi-rpc auth login <id>` for a models.json provider with `"oauth": "radius"`: the Radius
/// flows run against the gateway its `baseUrl` names (pi's `configureRadiusProviders`: `/v1`
/// removed; every URL an absolute path on the gateway's origin), the entry is stored under the
/// provider id, and the gateway's model list lands in models-store.json under that id.
#[test]
fn a_custom_radius_gateway_login_uses_its_gateway_and_saves_its_models() {
    let server = RawServer::start(vec![
        json_reply(
            200,
            json!({"device_code": "cd", "user_code": "CORP-1", "verification_uri": "https://corp.example/device",
                   "expires_in": 60, "interval": 1}),
        ),
        json_reply(
            200,
            json!({"access_token": "ca", "refresh_token": "cr", "expires_in": 600, "scope": "gateway offline_access"}),
        ),
        json_reply(
            200,
            json!({"baseUrl": "https://corp.example/api/v1", "models": [gateway_model("m1"), {"id": "broken"}]}),
        ),
    ]);
    let dir = TempDir::new("login");
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/models.json"),
        json!({"providers": {"corp": {"baseUrl": "https://corp.example/gw/v1", "oauth": "radius", "name": "Corp"}}})
            .to_string(),
    )
    .unwrap();
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "corp", "--no-browser"]);
    assert_eq!(
        login.wait_line("CORP-1"),
        "Open https://corp.example/device and enter code: CORP-1"
    );
    let (code, out, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Logged in to corp. Credentials saved to "),
        "{out}"
    );
    let reqs = server.requests();
    let heads: Vec<&str> = reqs
        .iter()
        .map(|r| r.head.lines().next().unwrap())
        .collect();
    assert_eq!(
        heads,
        [
            "POST /v1/oauth/device HTTP/1.1",
            "POST /v1/oauth/token HTTP/1.1",
            "GET /v1/config HTTP/1.1"
        ]
    );
    assert_eq!(
        form(&reqs[1]),
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&client_id=pi-gateway&device_code=cd"
    );
    let auth = auth_json(&dir);
    let expires = auth["corp"]["expires"].as_u64().unwrap();
    assert_eq!(
        auth,
        json!({"corp": {"type": "oauth", "access": "ca", "refresh": "cr", "expires": expires,
                        "scope": "gateway offline_access"}})
    );
    let store = models_store(&dir);
    let mut model = gateway_model("m1");
    model["api"] = json!("pi-messages");
    model["provider"] = json!("corp");
    model["baseUrl"] = json!("https://corp.example/api/v1");
    assert_eq!(
        store,
        json!({"corp": {"models": [model], "checkedAt": store["corp"]["checkedAt"]}})
    );
}

#[test]
fn github_copilot_device_login_exchanges_and_lists_models() {
    let server = RawServer::start(vec![
        json_reply(
            200,
            json!({"device_code": "gd", "user_code": "GH-12", "verification_uri": "https://github.com/login/device",
                   "expires_in": 60, "interval": 1}),
        ),
        json_reply(200, json!({"error": "authorization_pending"})),
        json_reply(
            200,
            json!({"access_token": "gho_x", "token_type": "bearer"}),
        ),
        json_reply(
            200,
            json!({"token": "tid=1;proxy-ep=proxy.individual.githubcopilot.com", "expires_at": 4_000_000_000u64}),
        ),
        json_reply(
            200,
            json!({"data": [{"id": "m-a", "model_picker_enabled": true}]}),
        ),
    ]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "github-copilot"]);
    login.wait_line("GitHub Enterprise URL/domain");
    login.type_line("");
    // The prompt's line: stdin is a pipe, so the answer is not echoed after it.
    assert!(login
        .wait_line("GH-12")
        .ends_with("Open https://github.com/login/device and enter code: GH-12"));
    let (code, _, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "{reqs:#?}");
    assert!(reqs[0].head.starts_with("POST /login/device/code "));
    assert_eq!(
        form(&reqs[0]),
        "client_id=Iv1.b507a08c87ecfe98&scope=read%3Auser"
    );
    assert!(reqs[2].head.starts_with("POST /login/oauth/access_token "));
    assert!(reqs[3].head.starts_with("GET /copilot_internal/v2/token "));
    assert!(reqs[4].head.starts_with("GET /models "));
    assert_eq!(
        auth_json(&dir)["github-copilot"],
        json!({"type": "oauth", "refresh": "gho_x",
               "access": "tid=1;proxy-ep=proxy.individual.githubcopilot.com",
               "expires": 4_000_000_000_000u64 - 300_000, "availableModelIds": ["m-a"]})
    );
}

fn rate_limited(retry_after: &str) -> Reply {
    Reply::http(
        429,
        &[("Content-Type", "text/plain"), ("Retry-After", retry_after)],
        b"slow down",
        crate::support::raw_server::Framing::Length,
    )
}

/// pi's `loginGitHubCopilot`: after the token exchange, every `unconfigured` model pi ships is
/// enabled one after the other (`POST <base>/models/<id>/policy`); a failure skips the model,
/// a 429 left after the retries stops the batch; the enabled ids join `availableModelIds`.
#[test]
fn github_copilot_login_enables_unconfigured_models() {
    let model = |id: &str, state: &str| json!({"id": id, "model_picker_enabled": false, "policy": {"state": state}});
    let server = RawServer::start(vec![
        json_reply(
            200,
            json!({"device_code": "gd", "user_code": "GH-12", "verification_uri": "https://github.com/login/device",
                   "expires_in": 60, "interval": 1}),
        ),
        json_reply(200, json!({"access_token": "gho_x"})),
        json_reply(
            200,
            json!({"token": "tid=1;proxy-ep=proxy.individual.githubcopilot.com", "expires_at": 4_000_000_000u64}),
        ),
        // The model list is retried after a 429.
        rate_limited("0"),
        json_reply(
            200,
            json!({"data": [
                model("m-a", "enabled"),
                model("claude-fable-5", "unconfigured"),
                model("not-shipped-by-pi", "unconfigured"),
                model("claude-fable-5.1", "unconfigured"),
                model("claude-fable-5.2", "unconfigured"),
                model("claude-haiku-4.5", "unconfigured"),
                model("claude-opus-5", "disabled"),
            ]}),
        ),
        json_reply(200, json!({})),
        rate_limited("0"),
        json_reply(500, json!({"error": "boom"})),
        // Too long to wait within the 5 s budget: the batch stops here.
        rate_limited("60"),
    ]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "github-copilot"]);
    login.wait_line("GitHub Enterprise URL/domain");
    login.type_line("");
    let (code, out, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\nEnabling models...\n"), "{out}");
    let reqs = server.requests();
    let heads: Vec<&str> = reqs
        .iter()
        .map(|r| r.head.lines().next().unwrap())
        .collect();
    assert_eq!(
        heads[3..],
        [
            "GET /models HTTP/1.1",
            "GET /models HTTP/1.1",
            "POST /models/claude-fable-5/policy HTTP/1.1",
            "POST /models/claude-fable-5.1/policy HTTP/1.1",
            "POST /models/claude-fable-5.1/policy HTTP/1.1",
            "POST /models/claude-fable-5.2/policy HTTP/1.1",
        ]
    );
    let post = &reqs[5];
    let head = post.head.to_ascii_lowercase();
    for header in [
        "authorization: bearer tid=1;proxy-ep=proxy.individual.githubcopilot.com",
        "content-type: application/json",
        "user-agent: githubcopilotchat/0.35.0",
        "editor-version: vscode/1.107.0",
        "editor-plugin-version: copilot-chat/0.35.0",
        "copilot-integration-id: vscode-chat",
        "openai-intent: chat-policy",
        "x-interaction-type: chat-policy",
    ] {
        assert!(head.contains(header), "{header} missing in {head}");
    }
    assert_eq!(form(post), r#"{"state":"enabled"}"#);
    assert_eq!(
        auth_json(&dir)["github-copilot"],
        json!({"type": "oauth", "refresh": "gho_x",
               "access": "tid=1;proxy-ep=proxy.individual.githubcopilot.com",
               "expires": 4_000_000_000_000u64 - 300_000,
               "availableModelIds": ["m-a", "claude-fable-5"]})
    );
}

#[test]
fn meta_device_login_mints_a_model_api_key() {
    let server = RawServer::start(vec![
        json_reply(
            200,
            json!({"device_code": "md", "user_code": "MU-1", "verification_uri": "https://auth.meta.com/device",
                   "expires_in": 60, "interval": 1}),
        ),
        json_reply(200, json!({"access_token": "identity"})),
        json_reply(200, json!({"api_key": "meta-key"})),
    ]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "meta"]);
    login.wait_line("MU-1");
    let (code, _, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    let reqs = server.requests();
    assert!(reqs[0]
        .head
        .starts_with("POST /oidc/device/authorization/ "));
    assert!(reqs[1].head.starts_with("POST /oidc/device/token/ "));
    let mint = reqs[2].head.to_ascii_lowercase();
    assert!(mint.starts_with("post /muse-code/key "), "{mint}");
    assert!(mint.contains("authorization: bearer identity"));
    assert!(mint.contains("x-api-version: 1.0.0"));
    let entry = &auth_json(&dir)["meta"];
    assert_eq!(
        (&entry["access"], &entry["refresh"]),
        (&json!("meta-key"), &json!("identity"))
    );
}

#[test]
fn kimi_device_login_shows_the_complete_verification_uri() {
    let server = RawServer::start(vec![
        json_reply(
            200,
            json!({"device_code": "kd", "user_code": "KU-1", "verification_uri": "https://www.kimi.com/device",
                   "verification_uri_complete": "https://www.kimi.com/device?code=KU-1",
                   "expires_in": 60, "interval": 1}),
        ),
        json_reply(400, json!({"error": "authorization_pending"})),
        json_reply(
            200,
            json!({"access_token": "ka", "refresh_token": "kr", "expires_in": 900}),
        ),
    ]);
    let dir = TempDir::new("login");
    let mut login = Login::spawn(&dir, &server.base_url(), &["login", "kimi-coding"]);
    assert_eq!(
        login.wait_line("KU-1"),
        "Open https://www.kimi.com/device?code=KU-1 and enter code: KU-1"
    );
    let (code, _, err) = login.finish();
    assert_eq!(code, 0, "{err}");
    let reqs = server.requests();
    assert!(reqs[0]
        .head
        .starts_with("POST /api/oauth/device_authorization "));
    assert_eq!(
        form(&reqs[0]),
        "client_id=17e5f671-d194-4dfb-9706-5516cb48c098"
    );
    assert_eq!(
        form(&reqs[2]),
        "client_id=17e5f671-d194-4dfb-9706-5516cb48c098&device_code=kd&grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code"
    );
    let entry = &auth_json(&dir)["kimi-coding"];
    assert_eq!(
        (&entry["access"], &entry["refresh"]),
        (&json!("ka"), &json!("kr"))
    );
}
