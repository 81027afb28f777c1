//! Amazon Bedrock's ConverseStream (`bedrock-converse-stream`, providers-catalog.md §4.1), done
//! by hand where pi uses the AWS SDK: the request body (`request`), SigV4 signing (`sigv4`) or
//! a bearer token, the region/endpoint/credential resolution (`credentials`, over the SDK's
//! credential sources: the shared files in `profiles`, `role_arn` profiles in `assume_role`,
//! STS in `sts`, SSO in `sso`, processes and metadata endpoints in `sources`, and the
//! process-wide `cache` of temporary credentials), and the binary
//! `application/vnd.amazon.eventstream` body (`eventstream`) fed to the event state machine
//! (`events`).
//!
//! The body is not server-sent events, so this adapter runs its own exchange (the same steps
//! as `drive::drive`: abort check, request, POST, error wording, events, final message).

use std::io::BufReader;

use super::http::{self, HttpError, HttpRequest};
use super::model::Model;
use super::request::{read_failure, ERROR_BODY_CAP};
use super::stream::{AbortTexts, Failure, StreamUpdate, StreamedMessage};
use super::types::{AssistantMessage, LlmContext, StreamOptions};
use crate::cancel::CancelToken;

mod assume_role;
mod cache;
pub mod credentials;
mod events;
pub mod eventstream;
mod profiles;
mod request;
pub mod sigv4;
mod sources;
mod sso;
mod sts;

#[cfg(test)]
pub use self::events::http_error_message;
pub use self::events::{format_error, http_error_parts, BedrockStream};
pub use self::request::build_body_with;

use self::credentials::{Auth, AwsEnv, Env};
use self::eventstream::{FrameError, FrameReader};

/// The service name in the signing scope (not `bedrock-runtime`).
const SERVICE: &str = "bedrock";

/// The abort texts: the SDK's `Request aborted` until the response, pi's own check after the
/// stream loop once it streamed.
pub const ABORT_TEXTS: AbortTexts = AbortTexts {
    before_request: "Request aborted",
    before_response: "Request aborted",
    streaming: "Request was aborted",
};

/// Lenient standard base64 (padding optional, as `atob` takes it).
pub(crate) fn b64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    use base64::Engine as _;
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let cleaned: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    LENIENT.decode(cleaned).ok()
}

/// Standard base64 with padding.
pub(crate) fn b64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The process environment.
fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Streams one response (see `wire::stream_assistant`).
pub fn stream(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(StreamUpdate<'_>),
) -> AssistantMessage {
    let home = std::env::var("HOME").ok();
    stream_with_env(
        model,
        ctx,
        opts,
        cancel,
        on_event,
        &process_env,
        home.as_deref(),
        now_secs(),
    )
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// [`stream`] with the environment, home directory and clock given.
#[allow(clippy::too_many_arguments)]
pub fn stream_with_env(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(StreamUpdate<'_>),
    env: Env<'_>,
    home: Option<&str>,
    now: u64,
) -> AssistantMessage {
    let mut out = StreamedMessage::new(model, on_event);
    let mut state = BedrockStream::new();
    let result = exchange(
        model, ctx, opts, cancel, &mut out, &mut state, env, home, now,
    );
    if result.is_err() {
        state.flush(&mut out);
    }
    out.finish(result, cancel, &ABORT_TEXTS)
}

/// The signed (or bearer) request (tests; the exchange uses [`build_request_with`]).
#[cfg(test)]
pub fn build_request(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    env: Env<'_>,
    home: Option<&str>,
    now: u64,
) -> Result<HttpRequest, String> {
    build_request_with(model, ctx, opts, env, home, now, false, &CancelToken::new()).map(|(r, _)| r)
}

/// Bedrock's texts of a refused strict-tool set (pi's `STRICT_TOOL_LIMIT_ERROR_MESSAGES`).
const STRICT_TOOL_LIMIT_MESSAGES: &[&str] = &[
    "The compiled grammar is too large",
    "Too many strict tools (",
    "Schemas contains too many parameters with union types (",
];

/// Sessions whose strict tools Bedrock refused: their requests go out without strict tools
/// (pi's `sessionsOverStrictToolLimits`, at most 10,000, oldest dropped first).
static OVER_STRICT_LIMITS: parking_lot::Mutex<Vec<String>> = parking_lot::Mutex::new(Vec::new());
const MAX_OVER_STRICT_LIMITS: usize = 10_000;

fn over_strict_limits(session: Option<&str>) -> bool {
    session.is_some_and(|s| OVER_STRICT_LIMITS.lock().iter().any(|x| x == s))
}

fn mark_over_strict_limits(session: Option<&str>) {
    if let Some(s) = session {
        let mut set = OVER_STRICT_LIMITS.lock();
        if !set.iter().any(|x| x == s) {
            set.push(s.to_string());
            if set.len() > MAX_OVER_STRICT_LIMITS {
                set.remove(0);
            }
        }
    }
}

/// [`build_request`] with pi's strict-tool fallback flag; also says whether a tool that
/// prefers strict sampling went out strict.
#[allow(clippy::too_many_arguments)]
pub fn build_request_with(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    env: Env<'_>,
    home: Option<&str>,
    now: u64,
    disable_preferred_strict: bool,
    cancel: &CancelToken,
) -> Result<(HttpRequest, bool), String> {
    // pi's `options.env`: the stored `env` of the provider's auth.json entry.
    let aws_env = AwsEnv {
        stored: &opts.env,
        process: env,
    };
    let provider_env = |name: &str| aws_env.provider(name);
    let target = credentials::target_in(model, &aws_env, home)?;
    let auth = credentials::auth_in(
        opts.api_key.as_deref(),
        &aws_env,
        home,
        &target.region,
        now,
        cancel,
    )?;
    let (body, has_preferred_strict) =
        build_body_with(model, ctx, opts, &provider_env, disable_preferred_strict)?;
    let body = crate::js::json::to_js_vec(&body).map_err(|e| e.to_string())?;
    let path_suffix = format!("/model/{}/converse-stream", sigv4::uri_escape(&model.id));
    let url = format!("{}{path_suffix}", target.endpoint);
    let (host, path) = host_and_path(&url).ok_or_else(|| format!("Invalid URL: {url}"))?;
    let mut headers: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        (
            "amz-sdk-invocation-id".into(),
            uuid::Uuid::new_v4().to_string(),
        ),
        ("amz-sdk-request".into(), "attempt=1; max=3".into()),
    ];
    // Caller headers never replace the signing and auth headers.
    for (name, value) in &opts.headers {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("x-amz-") || lower == "authorization" || lower == "host" {
            continue;
        }
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((lower, value.clone()));
    }
    match auth {
        Auth::Bearer(token) => {
            headers.push(("authorization".into(), format!("Bearer {token}")));
        }
        Auth::SigV4(creds) => {
            let date = sigv4::amz_date(now);
            let payload_hash = sigv4::sha256_hex(&body);
            headers.push(("x-amz-date".into(), date.clone()));
            headers.push(("x-amz-content-sha256".into(), payload_hash.clone()));
            if let Some(token) = &creds.session_token {
                headers.push(("x-amz-security-token".into(), token.clone()));
            }
            let mut signed = headers.clone();
            signed.push(("host".into(), host));
            let sig = sigv4::sign(
                &sigv4::SigningInput {
                    method: "POST",
                    path: &path,
                    query: "",
                    headers: &signed,
                    payload_hash: &payload_hash,
                    amz_date: &date,
                    region: &target.region,
                    service: SERVICE,
                },
                &creds,
            );
            headers.push(("authorization".into(), sig.authorization));
        }
    }
    Ok((
        HttpRequest {
            url,
            headers,
            body,
            idle_timeout: opts.idle_timeout,
        },
        has_preferred_strict,
    ))
}

/// The `Host` header ureq sends (the port only when not the scheme's default) and the path.
pub(crate) fn host_and_path(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = path.split(['?', '#']).next().unwrap_or("/").to_string();
    let default_port = if scheme.eq_ignore_ascii_case("https") {
        ":443"
    } else {
        ":80"
    };
    let host = authority.strip_suffix(default_port).unwrap_or(authority);
    Some((host.to_ascii_lowercase(), path))
}

#[allow(clippy::too_many_arguments)]
fn exchange(
    model: &Model,
    ctx: &LlmContext,
    opts: &StreamOptions,
    cancel: &CancelToken,
    out: &mut StreamedMessage<'_>,
    state: &mut BedrockStream,
    env: Env<'_>,
    home: Option<&str>,
    now: u64,
) -> Result<(), Failure> {
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    let session = opts.session_id.as_deref();
    let mut disable_strict = over_strict_limits(session);
    let response = loop {
        let (request, has_preferred_strict) =
            build_request_with(model, ctx, opts, env, home, now, disable_strict, cancel).map_err(
                |e| {
                    if cancel.is_cancelled() {
                        Failure::Aborted
                    } else {
                        Failure::Error(e)
                    }
                },
            )?;
        out.mark_sent();
        let mut response = http::post(request, cancel).map_err(|e| match e {
            HttpError::Aborted => Failure::Aborted,
            other => Failure::Error(other.to_string()),
        })?;
        if response.is_success() {
            break response;
        }
        let status = response.status();
        let error_type = response.error_type().map(str::to_owned);
        let body = response
            .read_text(ERROR_BODY_CAP)
            .map_err(|e| read_failure(&e, cancel))?;
        let (name, core) = http_error_parts(status, error_type.as_deref(), &body.text);
        // Bedrock checks the tool schemas before it streams: one retry without strict tools.
        let strict_refused = name.as_deref() == Some("ValidationException")
            && STRICT_TOOL_LIMIT_MESSAGES.iter().any(|m| core.contains(m));
        if strict_refused && has_preferred_strict && !disable_strict && !cancel.is_cancelled() {
            disable_strict = true;
            mark_over_strict_limits(session);
            continue;
        }
        return Err(Failure::Error(format_error(name.as_deref(), &core)));
    };
    let reader = BufReader::with_capacity(16 * 1024, response);
    for frame in FrameReader::new(reader) {
        if cancel.is_cancelled() {
            return Err(Failure::Aborted);
        }
        let frame = match frame {
            Ok(f) => f,
            Err(FrameError::Io(e)) => return Err(read_failure(&e, cancel)),
            Err(FrameError::Invalid(text)) => {
                return Err(Failure::Error(format_error(None, &text)))
            }
        };
        state.handle(&frame, model, out).map_err(Failure::Error)?;
    }
    if cancel.is_cancelled() {
        return Err(Failure::Aborted);
    }
    out.start();
    state.finish(out).map_err(Failure::Error)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
