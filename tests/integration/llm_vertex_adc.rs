//! Google Vertex with Application Default Credentials through the binary (providers-catalog.md
//! §4.2): a `service_account` key file (an RS256 JWT signed with the test key of
//! `tests/fixtures/vertex/`, which the scripted token endpoint verifies with the public key) and
//! an `authorized_user` file (refreshed with its refresh token).
//!
//! google-auth-library 10.9 sends both grants to `https://oauth2.googleapis.com/token` whatever
//! the file's `token_uri` says (gtoken's `GOOGLE_TOKEN_URL`, `UserRefreshClient`'s
//! `oauth2TokenUrl`), so the token endpoint is reached through pi-rpc's loopback-only test
//! override `PI_RPC_OAUTH_ORIGIN`; the key file's `token_uri` points nowhere to show it is not
//! used. The Vertex host is the models.json `baseUrl`, which (as in pi, `ResourceScope.COLLECTION`)
//! replaces the `<location>-aiplatform.googleapis.com/v1/projects/<p>/locations/<l>` prefix.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use parking_lot::Mutex;
use ring::signature::{UnparsedPublicKey, RSA_PKCS1_2048_8192_SHA256};
use serde_json::{json, Value};

use crate::support::agent::AgentBuilder;
use crate::support::raw_server::{Framing, Logged, RawServer, Reply};
use crate::support::run::run_prompt;
use crate::support::tempdir::TempDir;
use crate::support::Agent;

const PRIVATE_KEY: &str = include_str!("../fixtures/vertex/test_rsa_key.pem");
const PUBLIC_KEY: &str = include_str!("../fixtures/vertex/test_rsa_public.pem");
const GOOGLE_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
const CLIENT_EMAIL: &str = "pi-rpc-test@test-project.iam.gserviceaccount.com";

/// A form-encoded body as pairs (`+` is a space, `%XX` a byte).
fn form(body: &[u8]) -> Form {
    let decode = |s: &str| {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                    out.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 2;
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8(out).unwrap()
    };
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn b64url(s: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|e| format!("bad base64url: {e}"))
}

/// The DER of the PEM `RSA PUBLIC KEY` (PKCS#1, what ring verifies with).
fn public_key_der() -> Vec<u8> {
    let body: String = PUBLIC_KEY
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

/// gtoken's assertion, checked as Google's token endpoint would: the RS256 signature with the
/// public key, then the header and claims.
fn verify_assertion(jwt: &str) -> Result<(), String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err(format!("not a JWS: {jwt}"));
    };
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, public_key_der())
        .verify(format!("{header}.{claims}").as_bytes(), &b64url(signature)?)
        .map_err(|_| "Invalid JWT Signature.".to_string())?;
    let header: Value = serde_json::from_slice(&b64url(header)?).map_err(|e| e.to_string())?;
    if header != json!({"alg": "RS256"}) {
        return Err(format!("unexpected header {header}"));
    }
    let claims: Value = serde_json::from_slice(&b64url(claims)?).map_err(|e| e.to_string())?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let iat = claims["iat"].as_u64().unwrap_or(0);
    let ok = claims["iss"] == CLIENT_EMAIL
        && claims["scope"] == SCOPE
        && claims["aud"] == GOOGLE_TOKEN_URL
        && claims["exp"].as_u64() == Some(iat + 3600)
        && iat.abs_diff(now) < 300;
    if !ok {
        return Err(format!("unexpected claims {claims}"));
    }
    Ok(())
}

/// Form fields in order.
type Form = Vec<(String, String)>;
/// A token request: its request line and form.
type TokenRequest = (String, Form);
/// The endpoint's verdict on a form.
type Verdict = fn(&[(String, String)]) -> Result<(), String>;

/// A token endpoint on 127.0.0.1 that answers each request with `handler`'s verdict (`Ok`:
/// the access token; `Err`: a 400 `invalid_grant` with the reason) and logs the form bodies.
struct TokenEndpoint {
    origin: String,
    log: Arc<Mutex<Vec<TokenRequest>>>,
}

impl TokenEndpoint {
    fn start(handler: Verdict) -> TokenEndpoint {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        let server_log = Arc::clone(&log);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let request_line = line.trim_end().to_string();
                let mut len = 0usize;
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                }
                let mut body = vec![0u8; len];
                reader.read_exact(&mut body).unwrap();
                let fields = form(&body);
                let (status, reply) = match handler(&fields) {
                    Ok(()) => (
                        "200 OK",
                        json!({"access_token": "ya29.test-access", "expires_in": 3599,
                            "token_type": "Bearer"}),
                    ),
                    Err(why) => (
                        "400 Bad Request",
                        json!({"error": "invalid_grant", "error_description": why}),
                    ),
                };
                server_log.lock().push((request_line, fields));
                let reply = reply.to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        TokenEndpoint { origin, log }
    }

    fn requests(&self) -> Vec<TokenRequest> {
        self.log.lock().clone()
    }
}

/// One Gemini SSE chunk with the whole answer.
fn gemini_reply(text: &str) -> Reply {
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 3, "totalTokenCount": 15},
        "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"});
    Reply::sse(&format!("data: {chunk}\r\n\r\n"), Framing::Chunked)
}

fn agent(llm: &RawServer, token: &TokenEndpoint) -> AgentBuilder {
    Agent::builder()
        .no_default_args()
        .args([
            "--provider",
            "google-vertex",
            "--model",
            "gemini-2.5-flash",
            "--no-session",
        ])
        .models(Some(
            json!({"providers": {"google-vertex": {"baseUrl": llm.base_url()}}}),
        ))
        .settings(json!({"retry": {"enabled": false}}))
        .env("PI_RPC_OAUTH_ORIGIN", &token.origin)
}

fn last_assistant(records: &[Value]) -> Value {
    records
        .iter()
        .rev()
        .find(|r| r["type"] == "message_end" && r["message"]["role"] == "assistant")
        .map(|r| r["message"].clone())
        .unwrap_or_else(|| panic!("no assistant message_end in {records:#?}"))
}

/// The request line and the lower-cased headers of a logged request.
fn head(logged: &Logged) -> (String, Vec<(String, String)>) {
    let mut lines = logged.head.lines();
    let request_line = lines.next().unwrap_or_default().to_string();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (request_line, headers)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

const STREAM_PATH: &str =
    "POST /v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse HTTP/1.1";

#[test]
fn service_account_key_signs_a_jwt_the_token_endpoint_verifies() {
    let dir = TempDir::new("vertex-sa");
    let key_file = dir.write(
        "sa.json",
        &json!({"type": "service_account", "project_id": "test-project",
            "private_key_id": "kid-0001", "private_key": PRIVATE_KEY,
            "client_email": CLIENT_EMAIL, "client_id": "1000",
            "token_uri": "http://127.0.0.1:1/not-used"})
        .to_string(),
    );
    let token = TokenEndpoint::start(|f| {
        if field(f, "grant_type") != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
            return Err(format!("unexpected grant {f:?}"));
        }
        verify_assertion(field(f, "assertion").unwrap_or_default())
    });
    let llm = RawServer::start(vec![
        gemini_reply("Hi from Vertex."),
        gemini_reply("Again."),
    ]);
    // Project, location and key file from the stored credential's `env`, as pi's `/login
    // google-vertex` (service-account method) writes them.
    let auth = json!({"google-vertex": {"type": "api_key", "env": {
        "GOOGLE_CLOUD_PROJECT": "test-project", "GOOGLE_CLOUD_LOCATION": "us-central1",
        "GOOGLE_APPLICATION_CREDENTIALS": key_file.to_string_lossy()}}});
    let mut a = agent(&llm, &token)
        .agent_file("auth.json", &auth.to_string())
        .spawn();
    let msg = last_assistant(&run_prompt(&mut a, "p1", "hello"));
    assert_eq!(msg["stopReason"], "stop", "{msg}");
    assert_eq!(
        msg["content"],
        json!([{"type": "text", "text": "Hi from Vertex."}])
    );
    // A second prompt reuses the cached token.
    let msg = last_assistant(&run_prompt(&mut a, "p2", "again"));
    assert_eq!(msg["stopReason"], "stop", "{msg}");

    let tokens = token.requests();
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    assert_eq!(tokens[0].0, "POST /token HTTP/1.1");
    let names: Vec<&str> = tokens[0].1.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["grant_type", "assertion"]);

    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    for req in &reqs {
        let (line, h) = head(req);
        assert_eq!(line, STREAM_PATH);
        assert_eq!(header(&h, "authorization"), Some("Bearer ya29.test-access"));
        assert_eq!(header(&h, "x-goog-api-key"), None);
        assert_eq!(header(&h, "x-goog-user-project"), None);
        assert_eq!(header(&h, "content-type"), Some("application/json"));
    }
    a.close_stdin();
}

#[test]
fn authorized_user_file_is_refreshed_with_its_refresh_token() {
    let dir = TempDir::new("vertex-user");
    let adc = dir.write(
        "adc.json",
        &json!({"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
            "client_secret": "d-secret", "refresh_token": "1//refresh+token/x",
            "quota_project_id": "billing-project"})
        .to_string(),
    );
    let token = TokenEndpoint::start(|f| {
        let expected = [
            ("refresh_token", "1//refresh+token/x"),
            ("client_id", "cid.apps.googleusercontent.com"),
            ("client_secret", "d-secret"),
            ("grant_type", "refresh_token"),
        ];
        let got: Vec<(&str, &str)> = f.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        if got == expected {
            Ok(())
        } else {
            Err(format!("unexpected form {got:?}"))
        }
    });
    let llm = RawServer::start(vec![gemini_reply("Refreshed.")]);
    let mut a = agent(&llm, &token)
        .env("GOOGLE_APPLICATION_CREDENTIALS", &adc.to_string_lossy())
        .env("GOOGLE_CLOUD_PROJECT", "test-project")
        .env("GOOGLE_CLOUD_LOCATION", "europe-west4")
        .spawn();
    let msg = last_assistant(&run_prompt(&mut a, "p1", "hello"));
    assert_eq!(msg["stopReason"], "stop", "{msg}");
    assert_eq!(
        msg["content"],
        json!([{"type": "text", "text": "Refreshed."}])
    );
    assert_eq!(token.requests().len(), 1);
    assert_eq!(token.requests()[0].0, "POST /token HTTP/1.1");
    let reqs = llm.requests();
    let (line, h) = head(&reqs[0]);
    assert_eq!(line, STREAM_PATH);
    assert_eq!(header(&h, "authorization"), Some("Bearer ya29.test-access"));
    assert_eq!(header(&h, "x-goog-user-project"), Some("billing-project"));
    a.close_stdin();
}

#[test]
fn a_rejected_assertion_is_the_replys_error() {
    let dir = TempDir::new("vertex-sa-bad");
    // Signed with the right key but for another account: the endpoint rejects the claims.
    let key_file = dir.write(
        "sa.json",
        &json!({"type": "service_account", "private_key": PRIVATE_KEY,
            "client_email": "someone-else@test-project.iam.gserviceaccount.com"})
        .to_string(),
    );
    let token = TokenEndpoint::start(|f| {
        verify_assertion(field(f, "assertion").unwrap_or_default())
            .map_err(|_| "Invalid grant: account not found".to_string())
    });
    let llm = RawServer::start(Vec::new());
    let mut a = agent(&llm, &token)
        .env(
            "GOOGLE_APPLICATION_CREDENTIALS",
            &key_file.to_string_lossy(),
        )
        .env("GOOGLE_CLOUD_PROJECT", "test-project")
        .env("GOOGLE_CLOUD_LOCATION", "global")
        .spawn();
    let msg = last_assistant(&run_prompt(&mut a, "p1", "hello"));
    assert_eq!(msg["stopReason"], "error");
    assert_eq!(
        msg["errorMessage"],
        "invalid_grant: Invalid grant: account not found"
    );
    assert!(llm.requests().is_empty());
    a.close_stdin();
}
