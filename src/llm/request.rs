//! The request/response plumbing the wire-API adapters share: sending the streaming POST,
//! turning transport failures and non-success statuses into a [`Failure`], and the
//! sampling-parameter merge of the request body. `drive::drive` sends and reads; what differs
//! per API (the request itself, the error-text formatting, the events) stays in each adapter.

use serde_json::{Map, Value};

use super::http::{self, HttpError, HttpRequest, HttpResponse};
use super::model::Model;
use super::stream::{Failure, StreamedMessage};
use super::thinking::ThinkingLevel;
use crate::cancel::CancelToken;

/// The most of a non-success response body pi-rpc reads and keeps, in bytes. pi reads a whole
/// error body into the error message; a server can send megabytes there (a proxy's HTML page,
/// a quoted request), which pi-rpc would then carry through every event, the session file and
/// each retry. 64 KiB keeps any real provider error whole (they are JSON objects of a few
/// hundred bytes) and is cheap to read, format, classify and store.
pub const ERROR_BODY_CAP: usize = 64 * 1024;

/// Marks the request as sent and POSTs it. A success status returns the response whose body
/// is the event stream; a transport abort is [`Failure::Aborted`]; a non-success status reads
/// at most [`ERROR_BODY_CAP`] bytes of the body and becomes [`Failure::Error`] with the text
/// `error_message(status, content_type, body)` formats (each API words it differently; a
/// transport failure is worded by `transport_message`); a
/// body cut at the cap ends with `… [error body cut at 65536 bytes]`.
///
/// The caller checks the cancel token before calling: an abort found there gets the
/// [`AbortTexts`](super::stream::AbortTexts) entry `before_request`, one from here until
/// `Start` the entry `before_response`.
pub fn post_streaming(
    request: HttpRequest,
    cancel: &CancelToken,
    out: &mut StreamedMessage<'_>,
    error_message: impl FnOnce(u16, Option<&str>, &str) -> String,
    transport_message: impl FnOnce(&HttpError) -> String,
) -> Result<HttpResponse, Failure> {
    out.mark_sent();
    let mut response = http::post(request, cancel).map_err(|e| match e {
        HttpError::Aborted => Failure::Aborted,
        other => Failure::Error(transport_message(&other)),
    })?;
    if !response.is_success() {
        let status = response.status();
        let content_type = response.content_type().map(str::to_owned);
        let body = response
            .read_text(ERROR_BODY_CAP)
            .map_err(|e| read_failure(&e, cancel))?;
        let mut text = body.text;
        if body.cut {
            text.push_str(&format!("… [error body cut at {ERROR_BODY_CAP} bytes]"));
        }
        return Err(Failure::Error(error_message(
            status,
            content_type.as_deref(),
            &text,
        )));
    }
    Ok(response)
}

/// The POST of a JSON `body`, serialized as JavaScript's `JSON.stringify` prints it
/// (`js::json::to_js_vec`). A body that cannot be serialized is a [`Failure::Error`], never an empty
/// request.
pub fn json_request(
    url: String,
    headers: Vec<(String, String)>,
    body: &Value,
    idle_timeout: std::time::Duration,
) -> Result<HttpRequest, Failure> {
    let body = crate::js::json::to_js_vec(body).map_err(|e| Failure::Error(e.to_string()))?;
    Ok(HttpRequest {
        url,
        headers,
        body,
        idle_timeout,
    })
}

/// A failed body read: an abort when the token fired, else undici's `terminated: …`.
pub fn read_failure(e: &std::io::Error, cancel: &CancelToken) -> Failure {
    if cancel.is_cancelled() {
        Failure::Aborted
    } else {
        Failure::Error(http::describe_read_error(e))
    }
}

/// `samplingParams` then `samplingParamsByThinkingLevel[level]`, merged last (they override
/// named fields in place).
pub fn merge_sampling_params(model: &Model, level: ThinkingLevel, body: &mut Map<String, Value>) {
    if let Some(p) = &model.sampling_params {
        for (k, v) in p {
            body.insert(k.clone(), v.clone());
        }
    }
    if let Some(Value::Object(p)) = model
        .sampling_params_by_thinking_level
        .as_ref()
        .and_then(|m| m.get(level.as_str()))
    {
        for (k, v) in p {
            body.insert(k.clone(), v.clone());
        }
    }
}
