//! Google Vertex AI (`google-vertex`, providers-catalog.md §4.2): the Gemini request body,
//! stream handling, finish reasons, usage and error texts of `google` (pi's
//! `google-shared.js`), with Vertex's URL and auth: an express-mode API key
//! (`x-goog-api-key` on the global endpoint) or Application Default Credentials (`adc`: a
//! bearer token on `projects/<project>/locations/<location>`), API version `v1`.

use crate::cancel::CancelToken;
use crate::llm::drive::{Flow, WireApi};
use crate::llm::google::{build_body, http_error_message, GoogleStream, NO_FINISH_REASON};
use crate::llm::http::HttpRequest;
use crate::llm::model::Model;
use crate::llm::request::json_request;
use crate::llm::sse::SseEvent;
use crate::llm::stream::{base_max_tokens, AbortTexts, Failure, StreamedMessage};
use crate::llm::types::{LlmContext, StreamOptions};

pub mod adc;

/// The settings the request reads (resolved into `StreamOptions::env`, a stored auth.json
/// `env` first, by the registry).
pub const SETTINGS: &[&str] = &[
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
];

/// The stream ended without a `finishReason`.
pub const VERTEX_NO_FINISH_REASON: &str = "Google Vertex stream ended without a finish reason";
const NO_PROJECT: &str = "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options.";
const NO_LOCATION: &str =
    "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options.";
/// The marker some callers pass as the key when ADC should be used.
const CREDENTIALS_MARKER: &str = "gcp-vertex-credentials";
const API_VERSION: &str = "v1";

/// How the request authenticates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VertexAuth {
    /// Express mode.
    ApiKey(String),
    /// ADC: project, location and the access token.
    Adc {
        project: String,
        location: String,
        token: adc::AccessToken,
    },
}

/// The express-mode key: `opts.api_key` unless blank, the ADC marker or a `<placeholder>`.
pub fn api_key(opts: &StreamOptions) -> Option<String> {
    let key = opts.api_key.as_deref()?.trim();
    let placeholder = key.len() > 2
        && key.starts_with('<')
        && key.ends_with('>')
        && !key[1..key.len() - 1].contains('>');
    (!key.is_empty() && key != CREDENTIALS_MARKER && !placeholder).then(|| key.to_string())
}

/// The project and location of ADC mode (pi's `resolveProject` / `resolveLocation`).
pub fn project_and_location(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, String), String> {
    let get = |n: &str| env(n).filter(|v| !v.is_empty());
    let project = get("GOOGLE_CLOUD_PROJECT")
        .or_else(|| get("GCLOUD_PROJECT"))
        .ok_or(NO_PROJECT)?;
    let location = get("GOOGLE_CLOUD_LOCATION").ok_or(NO_LOCATION)?;
    Ok((project, location))
}

/// A custom baseUrl (one without `{location}`), which replaces the host part.
fn custom_base_url(model: &Model) -> Option<&str> {
    let b = model.base_url.trim();
    (!b.is_empty() && !b.contains("{location}")).then_some(b)
}

/// Whether a path segment of the URL is an API version (`v1`, `v1beta1`).
fn has_version_segment(base_url: &str) -> bool {
    let path = base_url.split_once("://").map_or(base_url, |(_, r)| r);
    path.split('/').skip(1).any(|seg| {
        let Some(rest) = seg.strip_prefix('v') else {
            return false;
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        let tail = &rest[digits..];
        tail.is_empty()
            || tail
                .strip_prefix("beta")
                .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The request URL.
pub fn endpoint(model: &Model, auth: &VertexAuth) -> String {
    let tail = format!(
        "publishers/google/models/{}:streamGenerateContent?alt=sse",
        model.id
    );
    if let Some(base) = custom_base_url(model) {
        let base = base.trim_end_matches('/');
        return if has_version_segment(base) {
            format!("{base}/{tail}")
        } else {
            format!("{base}/{API_VERSION}/{tail}")
        };
    }
    match auth {
        VertexAuth::ApiKey(_) => format!("https://aiplatform.googleapis.com/{API_VERSION}/{tail}"),
        VertexAuth::Adc {
            project, location, ..
        } => {
            let host = match location.as_str() {
                "global" => "aiplatform.googleapis.com".to_string(),
                "us" | "eu" => format!("aiplatform.{location}.rep.googleapis.com"),
                other => format!("{other}-aiplatform.googleapis.com"),
            };
            format!("https://{host}/{API_VERSION}/projects/{project}/locations/{location}/{tail}")
        }
    }
}

/// Content type, the credential, then the resolved provider/model headers.
pub fn request_headers(auth: &VertexAuth, opts: &StreamOptions) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = vec![("content-type".into(), "application/json".into())];
    match auth {
        VertexAuth::ApiKey(key) => h.push(("x-goog-api-key".into(), key.clone())),
        VertexAuth::Adc { token, .. } => {
            h.push(("authorization".into(), format!("Bearer {}", token.token)));
            if let Some(q) = &token.quota_project {
                h.push(("x-goog-user-project".into(), q.clone()));
            }
        }
    }
    h.extend(opts.headers.iter().cloned());
    h
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The credential of a request: the express key, else ADC from the environment.
pub fn resolve_auth(
    opts: &StreamOptions,
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&str>,
    token_url: &str,
    cancel: &CancelToken,
) -> Result<VertexAuth, Failure> {
    if let Some(key) = api_key(opts) {
        return Ok(VertexAuth::ApiKey(key));
    }
    let (project, location) = project_and_location(env).map_err(Failure::Error)?;
    let path = adc::credentials_path(env, home).ok_or_else(|| Failure::Error(
        "Could not load the default credentials. Browse to https://cloud.google.com/docs/authentication/getting-started for more information.".into(),
    ))?;
    let token = adc::access_token(&path, token_url, now_secs(), cancel)?;
    Ok(VertexAuth::Adc {
        project,
        location,
        token,
    })
}

/// The Vertex stream: Gemini's chunk handler with Vertex's end-of-stream text.
pub struct VertexStream(GoogleStream);

impl<'a> WireApi<'a> for VertexStream {
    const ABORT_TEXTS: AbortTexts = crate::llm::google::ABORT_TEXTS;
    const DISPATCH_TRAILING: bool = false;

    fn request(
        model: &'a Model,
        ctx: &'a LlmContext,
        opts: &StreamOptions,
        cancel: &CancelToken,
    ) -> Result<(HttpRequest, Self), Failure> {
        let home = std::env::var("HOME").ok();
        // pi's `getProviderEnvValue`: the provider's stored `env` first, then the process.
        let env = |n: &str| {
            opts.env_value(n)
                .map(str::to_owned)
                .or_else(|| process_env(n))
        };
        let token_url = crate::llm::oauth::client::endpoint(adc::TOKEN_URL, &process_env);
        let auth = resolve_auth(opts, &env, home.as_deref(), &token_url, cancel)?;
        let max_tokens = base_max_tokens(model, ctx, opts);
        let body = build_body(model, ctx, opts, max_tokens).map_err(Failure::Error)?;
        let request = json_request(
            endpoint(model, &auth),
            request_headers(&auth, opts),
            &body,
            opts.idle_timeout,
        )?;
        Ok((request, VertexStream(GoogleStream::new())))
    }

    fn http_error(_: &Model, status: u16, content_type: Option<&str>, body: &str) -> String {
        http_error_message(status, content_type, body)
    }

    fn on_event(
        &mut self,
        model: &Model,
        event: &SseEvent,
        out: &mut StreamedMessage<'_>,
    ) -> Result<Flow, Failure> {
        self.0
            .handle(&event.data, model, out)
            .map_err(Failure::Error)?;
        Ok(Flow::Continue)
    }

    fn end(
        &mut self,
        read: Result<(), Failure>,
        out: &mut StreamedMessage<'_>,
    ) -> Result<(), Failure> {
        read?;
        self.0.finish(out).map_err(|e| {
            Failure::Error(if e == NO_FINISH_REASON {
                VERTEX_NO_FINISH_REASON.into()
            } else {
                e
            })
        })
    }
}

#[cfg(test)]
mod tests;
