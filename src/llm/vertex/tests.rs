//! Vertex URLs, credentials and headers, pinned from pi 1.6.0's `google-vertex.js` and the
//! `@google/genai` / google-auth-library code under it.

use std::io::{Read, Write};
use std::net::TcpListener;

use serde_json::json;

use super::*;

fn model(base_url: &str) -> Model {
    Model {
        id: "gemini-2.5-pro".into(),
        api: "google-vertex".into(),
        provider: "google-vertex".into(),
        base_url: base_url.into(),
        ..Model::default()
    }
}

const CATALOG: &str = "https://{location}-aiplatform.googleapis.com";

fn adc(location: &str) -> VertexAuth {
    VertexAuth::Adc {
        project: "proj".into(),
        location: location.into(),
        token: adc::AccessToken {
            token: "ya29.tok".into(),
            quota_project: Some("billing".into()),
        },
    }
}

#[test]
fn endpoints_per_mode_and_location() {
    let key = VertexAuth::ApiKey("k".into());
    assert_eq!(
        endpoint(&model(CATALOG), &key),
        "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        endpoint(&model(CATALOG), &adc("us-central1")),
        "https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        endpoint(&model(CATALOG), &adc("global")),
        "https://aiplatform.googleapis.com/v1/projects/proj/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        endpoint(&model(CATALOG), &adc("eu")),
        "https://aiplatform.eu.rep.googleapis.com/v1/projects/proj/locations/eu/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    // A custom baseUrl replaces the host part (no project path); its version segment is kept.
    assert_eq!(
        endpoint(&model("http://127.0.0.1:9/"), &adc("us-central1")),
        "http://127.0.0.1:9/v1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        endpoint(&model("https://proxy.example/vertex/v1beta1"), &key),
        "https://proxy.example/vertex/v1beta1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
}

#[test]
fn express_keys_and_adc_settings() {
    let with_key = |k: &str| StreamOptions {
        api_key: Some(k.into()),
        ..StreamOptions::default()
    };
    assert_eq!(api_key(&with_key(" AIza ")), Some("AIza".into()));
    assert_eq!(api_key(&with_key("<authenticated>")), None);
    assert_eq!(api_key(&with_key("gcp-vertex-credentials")), None);
    assert_eq!(api_key(&StreamOptions::default()), None);
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |n: &str| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    };
    assert_eq!(project_and_location(&env(&[])).unwrap_err(), NO_PROJECT);
    assert_eq!(
        project_and_location(&env(&[("GCLOUD_PROJECT", "p")])).unwrap_err(),
        NO_LOCATION
    );
    assert_eq!(
        project_and_location(&env(&[
            ("GCLOUD_PROJECT", "p"),
            ("GOOGLE_CLOUD_LOCATION", "l")
        ])),
        Ok(("p".into(), "l".into()))
    );
    let e = env(&[("GOOGLE_CLOUD_PROJECT", "p")]);
    assert_eq!(
        resolve_auth(
            &StreamOptions::default(),
            &e,
            None,
            adc::TOKEN_URL,
            &CancelToken::new()
        )
        .unwrap_err(),
        Failure::Error(NO_LOCATION.into())
    );
    let opts = StreamOptions {
        headers: vec![("X-Extra".into(), "1".into())],
        ..StreamOptions::default()
    };
    assert_eq!(
        request_headers(&adc("global"), &opts),
        vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("authorization".into(), "Bearer ya29.tok".into()),
            ("x-goog-user-project".into(), "billing".into()),
            ("X-Extra".into(), "1".into()),
        ]
    );
}

/// Serves one HTTP response and returns the request it got.
fn one_shot(response: &'static str) -> (String, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = s.read(&mut chunk).unwrap();
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(i) = text.find("\r\n\r\n") {
                let len: usize = text
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if buf.len() >= i + 4 + len {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        s.write_all(response.as_bytes()).unwrap();
        String::from_utf8_lossy(&buf).to_string()
    });
    (url, handle)
}

#[test]
fn authorized_user_tokens_are_refreshed_and_cached() {
    let dir = std::env::temp_dir().join(format!("pi-rpc-adc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("adc.json");
    std::fs::write(
        &path,
        json!({"type": "authorized_user", "client_id": "cid", "client_secret": "cs",
            "refresh_token": "rt", "quota_project_id": "qp"})
        .to_string(),
    )
    .unwrap();
    let path = path.to_string_lossy().into_owned();
    let body = r#"{"access_token":"ya29.fresh","expires_in":3599,"token_type":"Bearer"}"#;
    let response: &'static str = Box::leak(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_boxed_str(),
    );
    let (url, server) = one_shot(response);
    let t = adc::access_token(&path, &url, 1_000, &CancelToken::new()).unwrap();
    assert_eq!(
        t,
        adc::AccessToken {
            token: "ya29.fresh".into(),
            quota_project: Some("qp".into()),
        }
    );
    let request = server.join().unwrap();
    assert!(request.starts_with("POST /token HTTP/1.1\r\n"), "{request}");
    assert!(request
        .to_ascii_lowercase()
        .contains("content-type: application/x-www-form-urlencoded"));
    assert!(request
        .ends_with("refresh_token=rt&client_id=cid&client_secret=cs&grant_type=refresh_token"));
    // Cached: no second request (the server is gone).
    assert_eq!(
        adc::access_token(&path, &url, 2_000, &CancelToken::new())
            .unwrap()
            .token,
        "ya29.fresh"
    );
    // Within 5 minutes of expiry it is refreshed (and fails here: nothing listens).
    assert!(adc::access_token(&path, &url, 1_000 + 3599 - 200, &CancelToken::new()).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn token_errors_are_worded_as_google_auth_words_them() {
    let dir = std::env::temp_dir().join(format!("pi-rpc-adc-err-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("adc.json");
    std::fs::write(
        &path,
        r#"{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r"}"#,
    )
    .unwrap();
    let (url, server) = one_shot("HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 69\r\nconnection: close\r\n\r\n{\"error\":\"invalid_grant\",\"error_description\":\"Bad Request\",\"x\":\"yyy\"}");
    let err = adc::access_token(&path.to_string_lossy(), &url, 1, &CancelToken::new()).unwrap_err();
    assert_eq!(err, Failure::Error("invalid_grant: Bad Request".into()));
    server.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
